//! The walker of the option walks (`tests/options_walk_*.rs`): runs cosimo with and without an
//! option (or a file's setting) and records a failure unless the option changed what the run
//! gave, as a comparison of the two: the results' bytes or values, the FMI calls the run made, a
//! file or message only the option makes, or a refusal (exit 2) naming it where the run without
//! it finished. A line every run prints, or a row count, proves nothing and is not used.

#![allow(dead_code)]

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one cosimo command gave.
#[derive(Clone, Debug)]
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The file the command writes: `run` its results, `check` the results of its case,
    /// `plot` the PNG, `stability` its --output, `sweep` the summary table, `export` the
    /// exported FMU's model description and stored run ([`exported_description`]).
    pub results: Option<Vec<u8>>,
    /// `run`: its --summary-json; `check`: its JSON report.
    pub summary: Option<serde_json::Value>,
    /// The command, for messages.
    pub command: String,
}

impl Ran {
    /// Exit 0.
    pub fn finished(&self) -> bool {
        self.code == Some(0)
    }

    /// The results as text.
    pub fn text(&self) -> Option<String> {
        self.results
            .as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// The FMI calls the summary counts.
    pub fn calls(&self) -> Option<u64> {
        self.summary.as_ref()?.get("fmi_calls")?.as_u64()
    }

    fn show(&self) -> String {
        format!(
            "`{}` exited {:?}: {}{}",
            self.command,
            self.code,
            self.stdout.chars().take(400).collect::<String>(),
            self.stderr.chars().take(800).collect::<String>()
        )
    }
}

/// How the option must show that it acted.
pub enum Effect {
    /// Both runs finish and their results differ.
    Results,
    /// Both runs finish with the same results but a different number of FMI calls.
    Calls,
    /// The run without it finishes; with it, exit 2 and a message containing this.
    Refused(&'static str),
    /// This holds for (without, with).
    Holds(fn(&Ran, &Ran) -> Result<(), String>),
    /// This holds for the run with it (the run without it cannot be made).
    Alone(fn(&Ran) -> Result<(), String>),
}

/// A comparison waiting for its runs.
struct Pending {
    label: String,
    without: Option<Vec<String>>,
    with: Vec<String>,
    effect: Effect,
}

/// Runs commands in one temporary folder (their working directory) and collects the failures.
/// Comparisons wait until [`Walker::run_pending`] (or `finish`) makes every run they need, each
/// distinct command once, on all cores.
pub struct Walker {
    pub dir: tempfile::TempDir,
    cache: HashMap<Vec<String>, Ran>,
    pending: Vec<Pending>,
    failures: Vec<String>,
    /// The options walked, by subcommand.
    pub walked: HashMap<String, BTreeSet<String>>,
}

impl Default for Walker {
    fn default() -> Self {
        Walker::new()
    }
}

impl Walker {
    pub fn new() -> Walker {
        Walker {
            dir: tempfile::tempdir().expect("a temporary folder"),
            cache: HashMap::new(),
            pending: Vec::new(),
            failures: Vec::new(),
            walked: HashMap::new(),
        }
    }

    /// A file in the walk's folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Write `text` to a file of the walk's folder; its path.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        std::fs::write(&path, text).expect("writes a file of the walk");
        path.display().to_string()
    }

    /// Walk `option`: `base` without it, `base` + `extra` with it.
    pub fn walk(&mut self, option: &str, base: &[String], extra: &[&str], effect: Effect) {
        let subcommand = base.first().cloned().unwrap_or_default();
        let mut args = base.to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        self.compare(&subcommand, option, base, &args, effect);
    }

    /// Walk the setting `label` of `kind` (a subcommand, or a file such as "system file"):
    /// the command `without` it against the command `with` it.
    pub fn compare(
        &mut self,
        kind: &str,
        label: &str,
        without: &[String],
        with: &[String],
        effect: Effect,
    ) {
        self.note(kind, label);
        self.pending.push(Pending {
            label: label.to_string(),
            without: Some(without.to_vec()),
            with: with.to_vec(),
            effect,
        });
    }

    /// A walk whose run without the option cannot be made (it would never end): `with` alone
    /// must satisfy `holds`.
    pub fn walk_alone(
        &mut self,
        kind: &str,
        option: &str,
        args: &[String],
        holds: fn(&Ran) -> Result<(), String>,
    ) {
        self.note(kind, option);
        self.pending.push(Pending {
            label: option.to_string(),
            without: None,
            with: args.to_vec(),
            effect: Effect::Alone(holds),
        });
    }

    fn note(&mut self, kind: &str, label: &str) {
        self.walked
            .entry(kind.to_string())
            .or_default()
            .insert(label.to_string());
    }

    /// Make every run the waiting comparisons need (in parallel) and judge them.
    pub fn run_pending(&mut self) {
        let mut todo: Vec<Vec<String>> = Vec::new();
        for p in &self.pending {
            for args in p.without.iter().chain([&p.with]) {
                if !self.cache.contains_key(args) && !todo.contains(args) {
                    todo.push(args.clone());
                }
            }
        }
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::Mutex::new(Vec::new());
        let dir = self.dir.path().to_path_buf();
        let first = self.cache.len();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(args) = todo.get(i) else { break };
                    let ran = run(&dir, first + i, args);
                    done.lock().expect("not poisoned").push((args.clone(), ran));
                });
            }
        });
        for (args, ran) in done.into_inner().expect("not poisoned") {
            self.cache.insert(args, ran);
        }
        for p in std::mem::take(&mut self.pending) {
            let with = &self.cache[&p.with];
            let without = p.without.as_ref().map(|a| &self.cache[a]);
            let verdict = match (&p.effect, without) {
                (Effect::Alone(holds), _) => holds(with),
                (effect, Some(without)) => judge(effect, without, with),
                (_, None) => Err("a comparison without its run without the option".into()),
            };
            if let Err(why) = verdict {
                self.failures.push(format!(
                    "{}: {why}\n  without: {}\n  with: {}",
                    p.label,
                    without.map_or("-".into(), Ran::show),
                    with.show()
                ));
            }
        }
    }

    /// The run of `args` (made now unless made before).
    pub fn ran(&mut self, args: &[String]) -> Ran {
        if let Some(ran) = self.cache.get(args) {
            return ran.clone();
        }
        let ran = run(self.dir.path(), self.cache.len(), args);
        self.cache.insert(args.to_vec(), ran.clone());
        ran
    }

    /// Record a walk made by hand (`check` says whether it held).
    pub fn mark(&mut self, subcommand: &str, option: &str, check: Result<(), String>) {
        self.note(subcommand, option);
        if let Err(why) = check {
            self.failures.push(format!("{option}: {why}"));
        }
    }

    /// Run cosimo with exactly `args` in the walk's folder (no files added, no cache).
    pub fn raw(&self, args: &[String]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_cosimo"))
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("COSIMO_LOG")
            .output()
            .expect("the cosimo binary runs")
    }

    /// Record a failure unless every name in `required` was walked as a setting of `kind`.
    pub fn covers(&mut self, kind: &str, required: &[String]) {
        let walked = self.walked.get(kind).cloned().unwrap_or_default();
        let missing: Vec<&String> = required.iter().filter(|o| !walked.contains(*o)).collect();
        if !missing.is_empty() {
            self.failures.push(format!(
                "settings of the {kind} no walk covers: {missing:?}"
            ));
        }
    }

    /// Record a failure unless every option `cosimo SUBCOMMAND --help` lists was walked.
    pub fn covers_help_of(&mut self, subcommand: &str) {
        let listed = options_of(subcommand);
        assert!(
            !listed.is_empty(),
            "cosimo {subcommand} --help lists no option"
        );
        let listed: Vec<String> = listed.into_iter().collect();
        let walked = self.walked.get(subcommand).cloned().unwrap_or_default();
        let missing: Vec<&String> = listed.iter().filter(|o| !walked.contains(*o)).collect();
        if !missing.is_empty() {
            self.failures.push(format!(
                "cosimo {subcommand} lists options no walk covers: {missing:?}"
            ));
        }
    }

    /// Judge what waits, then fail with every failure recorded.
    pub fn finish(mut self, what: &str) {
        self.run_pending();
        assert!(
            self.failures.is_empty(),
            "{} of the {what} walks failed:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

/// The option `check` writes its JSON report to a file with.
pub const CHECK_REPORT: &str = "--json-file";

/// Run cosimo with `args` in `dir`. A `run` writes its results and summary, a `check` its
/// results and report, to files of their own (numbered `n`) unless `args` name them.
fn run(dir: &Path, n: usize, args: &[String]) -> Ran {
    let mut full = args.to_vec();
    let has = |flags: &[&str]| {
        args.iter().any(|a| {
            flags
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
        })
    };
    let value = |flags: &[&str]| {
        args.iter()
            .position(|a| flags.contains(&a.as_str()))
            .and_then(|i| args.get(i + 1))
            .map(|v| dir.join(v))
    };
    let output = ["-o", "--output"];
    let command = args.first().map(String::as_str).unwrap_or_default();
    let mut summary = None;
    let results = match command {
        "run" | "check" => {
            let (report, folder) = if command == "run" {
                ("run", format!("run-{n}.csv"))
            } else {
                ("check", format!("check-{n}"))
            };
            if !has(&["--json-file"]) {
                let file = dir.join(format!("{report}-{n}.json"));
                full.extend(["--json-file".into(), file.display().to_string()]);
                summary = Some(file);
            }
            if has(&output) {
                value(&output)
            } else {
                let file = dir.join(folder);
                full.extend(["--output".into(), file.display().to_string()]);
                Some(file)
            }
        }
        "export" => {
            if has(&output) {
                value(&output)
            } else {
                let file = dir.join(format!("export-{n}.fmu"));
                full.extend(["--output".into(), file.display().to_string()]);
                Some(file)
            }
        }
        "plot" | "stability" | "sweep" => value(&output).map(|f| {
            if command == "sweep" {
                f.join("summary.csv")
            } else {
                f
            }
        }),
        _ => None,
    };
    let output = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(&full)
        .current_dir(dir)
        .env_remove("COSIMO_LOG")
        .output()
        .expect("the cosimo binary runs");
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        results: results.and_then(|f| {
            if command == "export" {
                exported_description(&f)
            } else {
                read_result(&f)
            }
        }),
        summary: summary
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| serde_json::from_str(&t).ok()),
        command: args.join(" "),
    }
}

/// What an exported FMU tells its importer and its container: the model description and the
/// run it stores (`resources/cosimo-export.json`), one after the other.
pub fn exported_description(fmu: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::fs::File::open(fmu).ok()?).ok()?;
    let mut bytes = Vec::new();
    for name in ["modelDescription.xml", "resources/cosimo-export.json"] {
        archive.by_name(name).ok()?.read_to_end(&mut bytes).ok()?;
    }
    Some(bytes)
}

/// A file's bytes, or the first CSV of a folder (a check's results).
fn read_result(path: &Path) -> Option<Vec<u8>> {
    if path.is_dir() {
        let mut csvs: Vec<PathBuf> = std::fs::read_dir(path)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .collect();
        csvs.sort();
        return std::fs::read(csvs.first()?).ok();
    }
    std::fs::read(path).ok()
}

fn judge(effect: &Effect, without: &Ran, with: &Ran) -> Result<(), String> {
    let both = || {
        if without.finished() && with.finished() {
            Ok(())
        } else {
            Err("expected both runs to finish".to_string())
        }
    };
    match effect {
        Effect::Results => {
            both()?;
            match (&without.results, &with.results) {
                (Some(a), Some(b)) if a != b => Ok(()),
                (Some(_), Some(_)) => {
                    Err("the results are the same bytes with and without it".into())
                }
                _ => Err("a run left no results".into()),
            }
        }
        Effect::Calls => {
            both()?;
            if without.results != with.results {
                return Err("expected the same results (it changes how, not what)".into());
            }
            match (without.calls(), with.calls()) {
                (Some(a), Some(b)) if a != b => Ok(()),
                (a, b) => Err(format!("FMI calls {a:?} without and {b:?} with it")),
            }
        }
        Effect::Refused(message) => {
            if !without.finished() {
                return Err("expected the run without it to finish".into());
            }
            if with.code == Some(2) && with.stderr.contains(message) {
                Ok(())
            } else {
                Err(format!("expected exit 2 with \"{message}\""))
            }
        }
        Effect::Holds(holds) => holds(without, with),
        Effect::Alone(holds) => holds(with),
    }
}

/// The long options `cosimo SUBCOMMAND --help` lists (without --help and --version).
pub fn options_of(subcommand: &str) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args([subcommand, "--help"])
        .output()
        .expect("the cosimo binary runs");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        // Option lines: "  -q, --quiet ..." or "      --json ..."; descriptions are indented more.
        .filter(|l| l.starts_with("  -") || l.starts_with("      --"))
        .filter_map(|l| {
            l.split_whitespace()
                .find(|t| t.starts_with("--"))
                .map(|t| t.trim_end_matches(',').to_string())
        })
        .filter(|o| o != "--help" && o != "--version")
        .collect()
}

/// Strings from string slices.
pub fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// An example of `fmus/` (its FMUs are packed by `fmu_pack::packed_fmus`).
pub fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus")
        .join(name)
        .display()
        .to_string()
}

/// The text of an example system file with its FMU paths made absolute, so that a changed copy
/// can live in any folder.
pub fn example_json(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(example(name)).expect("reads the example");
    let fmus = fmu_pack::fmus_dir().display().to_string();
    serde_json::from_str(&text.replace("../target/fmus", &fmus)).expect("the example is JSON")
}

/// Whether the named column differs between two result texts (same header).
pub fn column(results: &str, name: &str) -> Option<Vec<String>> {
    let mut lines = results.lines();
    let header: Vec<&str> = lines
        .next()?
        .split(',')
        .map(|h| h.trim_matches('"'))
        .collect();
    let i = header.iter().position(|h| *h == name)?;
    Some(
        lines
            .map(|l| l.split(',').nth(i).unwrap_or_default().to_string())
            .collect(),
    )
}

/// The Oscillator FMU (FMI 2) unpacked into the walk's folder, its units given base units, so
/// that a connection of a position to a force joins dimensions that differ (made once).
pub fn oscillator_with_base_units(w: &Walker) -> String {
    let folder = w.path("oscillator-si");
    if folder.exists() {
        return folder.display().to_string();
    }
    let archive = std::fs::File::open(crate::common::fmu("Oscillator", 2)).expect("opens the FMU");
    zip::ZipArchive::new(archive)
        .and_then(|mut z| z.extract(&folder))
        .expect("unpacks the FMU");
    let file = folder.join("modelDescription.xml");
    let text = std::fs::read_to_string(&file).expect("reads the model description");
    let edited = text
        .replace(
            r#"<Unit name="m"/>"#,
            r#"<Unit name="m"><BaseUnit m="1"/></Unit>"#,
        )
        .replace(
            r#"<Unit name="N"/>"#,
            r#"<Unit name="N"><BaseUnit kg="1" m="1" s="-2"/></Unit>"#,
        );
    assert!(
        edited.contains("BaseUnit kg"),
        "the Oscillator defines N and m"
    );
    std::fs::write(&file, edited).expect("writes the model description");
    folder.display().to_string()
}
