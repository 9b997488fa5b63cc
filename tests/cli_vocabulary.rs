//! One option vocabulary across the subcommands (docs/vocabulary.md): today's spellings take
//! effect, the old ones still work and say what replaced them, `check` takes `run`'s model
//! options, negative numbers are numbers, every command has `-q`, and messages print numbers
//! as people write them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{cosimo, cosimo_ok, fmu, read_results, show, temp_dir};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// The note an old spelling prints, naming the new one.
fn note(command: &str, old: &str, new: &str) -> String {
    format!("note: `cosimo {command} {old}` is now spelled {new}")
}

fn assert_note(output: &Output, command: &str, old: &str, new: &str) {
    assert!(
        stderr(output).contains(&note(command, old, new)),
        "no deprecation note for {old}:\n{}",
        show(output)
    );
}

fn assert_no_note(output: &Output) {
    assert!(
        !stderr(output).contains("is now spelled"),
        "a note without an old spelling:\n{}",
        show(output)
    );
}

fn dahlquist() -> String {
    path(&fmu("Dahlquist", 2))
}

/// A reference for Dahlquist (its default experiment) 2 % above its own result, so that the
/// comparison's tolerances decide the verdict: the default (1e-3) fails, 5e-2 passes.
fn offset_reference(dir: &Path) -> PathBuf {
    let own = dir.join("own.csv");
    cosimo_ok(["run", &dahlquist(), "-q", "-o", &path(&own)]);
    let table = read_results(&own);
    let x = table.values(table.column("x").unwrap());
    let mut text = String::from("time,x\n");
    for (t, x) in table.time().iter().zip(x) {
        text.push_str(&format!("{t},{}\n", 1.02 * x));
    }
    let reference = dir.join("reference.csv");
    std::fs::write(&reference, text).unwrap();
    reference
}

#[test]
fn run_writes_its_results_to_dash_o_and_the_old_output_file_still_works() {
    let dir = temp_dir();
    let new = dir.path().join("new.csv");
    let output = cosimo_ok(["run", &dahlquist(), "-o", &path(&new)]);
    assert_no_note(&output);
    let long = dir.path().join("long.csv");
    cosimo_ok(["run", &dahlquist(), "--output", &path(&long)]);
    let old = dir.path().join("old.csv");
    let output = cosimo_ok(["run", &dahlquist(), "--output-file", &path(&old)]);
    assert_note(&output, "run", "--output-file", "-o/--output");
    // -q: nothing but errors, the note included.
    let quiet = cosimo_ok(["run", &dahlquist(), "-q", "--output-file", &path(&old)]);
    assert!(quiet.stderr.is_empty(), "{}", show(&quiet));
    let bytes = std::fs::read(&new).unwrap();
    assert!(bytes.len() > 100, "{} bytes", bytes.len());
    assert_eq!(bytes, std::fs::read(&long).unwrap());
    assert_eq!(bytes, std::fs::read(&old).unwrap());
    // Given twice, it writes both files (the extension picks each one's format); the same
    // file twice is refused rather than half obeyed.
    let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
    cosimo_ok(["run", &dahlquist(), "-o", &path(&a), "-o", &path(&b)]);
    assert_eq!(std::fs::read(&a).unwrap(), bytes);
    assert_eq!(std::fs::read(&b).unwrap(), bytes);
    let twice = cosimo(["run", &dahlquist(), "-o", &path(&a), "--output", &path(&a)]);
    assert_eq!(twice.status.code(), Some(2), "{}", show(&twice));
    assert!(
        stderr(&twice).contains(&format!("-o/--output {} is given twice", path(&a))),
        "{}",
        show(&twice)
    );
}

#[test]
fn run_prints_its_summary_as_json_or_writes_it_with_json_file() {
    let dir = temp_dir();
    let results = path(&dir.path().join("r.csv"));
    let printed = cosimo_ok(["run", &dahlquist(), "-o", &results, "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&printed.stdout)
        .unwrap_or_else(|e| panic!("--json prints JSON: {e}\n{}", show(&printed)));
    assert_eq!(summary["status"], "finished");
    assert_eq!(summary["rows"], 101);
    assert!(!stdout(&cosimo_ok(["run", &dahlquist(), "-o", &results])).contains('{'));

    let file = dir.path().join("summary.json");
    let output = cosimo_ok([
        "run",
        &dahlquist(),
        "-o",
        &results,
        "--json-file",
        &path(&file),
    ]);
    assert_no_note(&output);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["rows"], 101);
    let old = dir.path().join("old.json");
    let output = cosimo_ok([
        "run",
        &dahlquist(),
        "-o",
        &results,
        "--summary-json",
        &path(&old),
    ]);
    assert_note(&output, "run", "--summary-json", "--json-file");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&old).unwrap()).unwrap();
    assert_eq!(written["rows"], 101);
}

#[test]
fn check_tolerances_are_rtol_and_atol_and_the_old_names_still_work() {
    let dir = temp_dir();
    let reference = path(&offset_reference(dir.path()));
    let check = |extra: &[&str]| {
        let mut args = vec!["check", &dahlquist(), "--reference", &reference]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        args.extend(extra.iter().map(|s| s.to_string()));
        cosimo(args)
    };
    let code = |output: &Output| output.status.code();
    // The defaults fail a 2 % offset; a relative or an absolute tolerance lets it pass.
    assert_eq!(code(&check(&[])), Some(3));
    let rtol = check(&["--rtol", "0.05"]);
    assert_eq!(code(&rtol), Some(0), "{}", show(&rtol));
    assert_no_note(&rtol);
    let atol = check(&["--atol", "0.1"]);
    assert_eq!(code(&atol), Some(0), "{}", show(&atol));
    let old = check(&["--rel-tol", "0.05"]);
    assert_eq!(code(&old), Some(0), "{}", show(&old));
    assert_note(&old, "check", "--rel-tol", "--rtol");
    let old = check(&["--abs-tol", "0.1"]);
    assert_eq!(code(&old), Some(0), "{}", show(&old));
    assert_note(&old, "check", "--abs-tol", "--atol");
}

#[test]
fn check_keeps_its_results_in_dash_o_and_the_old_results_still_works() {
    let dir = temp_dir();
    for (option, folder) in [("-o", "new"), ("--output", "long"), ("--results", "old")] {
        let keep = dir.path().join(folder);
        let output = cosimo(["check", &dahlquist(), option, &path(&keep)]);
        assert_eq!(output.status.code(), Some(0), "{}", show(&output));
        let kept: Vec<_> = std::fs::read_dir(&keep).unwrap().collect();
        assert_eq!(kept.len(), 1, "{option}: {kept:?}");
        if option == "--results" {
            assert_note(&output, "check", "--results", "-o/--output");
        } else {
            assert_no_note(&output);
        }
    }
}

#[test]
fn check_json_is_a_flag_and_json_file_takes_the_file() {
    let dir = temp_dir();
    // `--json` before the target no longer takes the target as its file.
    let printed = cosimo(["check", "--json", &dahlquist()]);
    assert_eq!(printed.status.code(), Some(0), "{}", show(&printed));
    let report: serde_json::Value = serde_json::from_slice(&printed.stdout)
        .unwrap_or_else(|e| panic!("--json prints JSON: {e}\n{}", show(&printed)));
    assert_eq!(report["passed"], true);
    assert!(stderr(&printed).contains("PASS"), "{}", show(&printed));
    assert_no_note(&printed);

    let file = dir.path().join("report.json");
    let written = cosimo(["check", &dahlquist(), "-q", "--json-file", &path(&file)]);
    assert_eq!(written.status.code(), Some(0), "{}", show(&written));
    assert!(written.stdout.is_empty(), "{}", show(&written));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(report["passed"], true);

    // The old spellings: `--json FILE` (a new file, or the report of an earlier check) and
    // `--json -`.
    for _ in 0..2 {
        let old = cosimo(["check", "--json", &path(&file), &dahlquist()]);
        assert_eq!(old.status.code(), Some(0), "{}", show(&old));
        assert_note(&old, "check", "--json FILE", "--json-file FILE");
        assert!(stdout(&old).starts_with("PASS"), "{}", show(&old));
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(report["passed"], true);
    }
    std::fs::remove_file(&file).unwrap();
    let old = cosimo(["check", &dahlquist(), &format!("--json={}", path(&file))]);
    assert_eq!(old.status.code(), Some(0), "{}", show(&old));
    assert_note(&old, "check", "--json=FILE", "--json-file FILE");
    assert!(file.exists());
    let old = cosimo(["check", &dahlquist(), "--json", "-"]);
    assert_eq!(old.status.code(), Some(0), "{}", show(&old));
    assert_note(&old, "check", "--json -", "--json");
    let report: serde_json::Value = serde_json::from_slice(&old.stdout).unwrap();
    assert_eq!(report["passed"], true);
}

#[test]
fn check_takes_the_model_options_of_run() {
    let dir = temp_dir();
    // A reference of Dahlquist with k = 2 (its default: 1).
    let own = dir.path().join("k2.csv");
    cosimo_ok([
        "run",
        &dahlquist(),
        "-q",
        "--start-value",
        "k=2",
        "-o",
        &path(&own),
    ]);
    let reference = path(&own);
    let check = |extra: &[&str]| {
        let mut args: Vec<String> = ["check", &dahlquist(), "--reference", &reference, "-q"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        cosimo(args)
    };
    let default = check(&[]);
    assert_eq!(default.status.code(), Some(3), "{}", show(&default));
    let with = check(&["--start-value", "k=2"]);
    assert_eq!(with.status.code(), Some(0), "{}", show(&with));
    // Every option of the shared set is known to check (its effect is run's: see the tests
    // of run), none with clap's advice to pass it as a value.
    for options in [
        &["--algorithm", "jacobi"][..],
        &["--extrapolation-order", "1"],
        &["--tolerance", "1e-6"],
        &["--max-rows", "1000"],
        &["--divergence-limit", "1e6"],
        &["--isolate"],
        &["--event-mode"],
        &["--allow-non-finite"],
    ] {
        let output = check(&[&["--start-value", "k=2"][..], options].concat());
        assert!(
            !stderr(&output).contains("unexpected argument"),
            "{options:?}: {}",
            show(&output)
        );
    }
    let isolated = check(&["--start-value", "k=2", "--isolate"]);
    assert_eq!(isolated.status.code(), Some(0), "{}", show(&isolated));
}

#[test]
fn an_option_of_another_command_is_named_as_such() {
    let output = cosimo(["check", &dahlquist(), "--atol-position", "1e-6"]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let text = stderr(&output);
    assert!(
        text.contains("--atol-position is an option of `cosimo run`"),
        "{text}"
    );
    assert!(!text.contains("-- --atol-position"), "{text}");
    let output = cosimo([
        "plot",
        "r.csv",
        "--variable",
        "x",
        "-o",
        "x.png",
        "--stop-time",
        "1",
    ]);
    let text = stderr(&output);
    assert!(
        text.contains("--stop-time is an option of `cosimo run` and `cosimo check`"),
        "{text}"
    );
    let output = cosimo(["run", &dahlquist(), "--no-such-option"]);
    let text = stderr(&output);
    assert!(text.contains("see `cosimo run --help`"), "{text}");
    assert!(!text.contains("use '--"), "{text}");
}

#[test]
fn a_start_value_split_in_two_words_is_refused_with_the_one_word_form() {
    for command in ["run", "check"] {
        let output = cosimo([command, &dahlquist(), "--start-value", "k", "2"]);
        assert_eq!(output.status.code(), Some(2), "{}", show(&output));
        assert!(
            stderr(&output).contains("write --start-value k=2"),
            "{command}: {}",
            show(&output)
        );
        assert!(!stderr(&output).contains("system"), "{}", show(&output));
    }
}

#[test]
fn negative_numbers_are_numbers_everywhere() {
    let dir = temp_dir();
    let results = dir.path().join("from-minus-one.csv");
    cosimo_ok([
        "run",
        &dahlquist(),
        "-q",
        "--start-time",
        "-1",
        "--stop-time",
        "1",
        "-o",
        &path(&results),
    ]);
    assert_eq!(read_results(&results).time()[0], -1.0);
    let png = path(&dir.path().join("x.png"));
    let output = cosimo_ok([
        "plot",
        &path(&results),
        "--variable",
        "x",
        "-o",
        &png,
        "--y-min",
        "-1",
        "--y-max",
        "2",
    ]);
    assert!(stderr(&output).contains("plot: "), "{}", show(&output));
    // Options that refuse a negative value do so by name, never as an unknown option.
    for args in [
        &["check", &dahlquist(), "--start-time", "-1"][..],
        &["stability", "--h-low", "-1", "--max-stable-step"],
        &["sweep", "study.json", "-o", "out", "--workers", "-1"],
        &["run", &dahlquist(), "--rtol", "-1", "--adaptive"],
    ] {
        let output = cosimo(args);
        let text = stderr(&output);
        assert!(
            !text.contains("unexpected argument '-1'") && !text.contains("-- -1"),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn every_command_has_quiet() {
    let dir = temp_dir();
    let results = dir.path().join("r.csv");
    for command in [
        "run",
        "check",
        "sweep",
        "inspect",
        "validate",
        "plot",
        "stability",
        "build",
    ] {
        let help = cosimo_ok([command, "--help"]);
        assert!(stdout(&help).contains("-q, --quiet"), "{command} --help");
    }
    let loud = cosimo_ok(["run", &dahlquist(), "-o", &path(&results)]);
    assert!(!loud.stderr.is_empty());
    let quiet = cosimo_ok(["run", &dahlquist(), "-q", "-o", &path(&results)]);
    assert!(quiet.stderr.is_empty(), "{}", show(&quiet));
    let png = path(&dir.path().join("x.png"));
    let plot = |extra: &[&str]| {
        let mut args = vec![
            "plot",
            results.to_str().unwrap(),
            "--variable",
            "x",
            "-o",
            &png,
        ];
        args.extend(extra);
        cosimo_ok(args)
    };
    assert!(stderr(&plot(&[])).contains("plot: "));
    assert!(plot(&["-q"]).stderr.is_empty());
    let validate = cosimo_ok(["validate", &dahlquist()]);
    assert!(
        stdout(&validate).contains("0 errors"),
        "{}",
        show(&validate)
    );
    let validate = cosimo_ok(["validate", &dahlquist(), "-q"]);
    assert!(validate.stdout.is_empty(), "{}", show(&validate));
    let inspect = cosimo_ok(["inspect", &dahlquist(), "-q"]);
    assert!(stdout(&inspect).contains("Dahlquist"), "{}", show(&inspect));
}

#[test]
fn stability_knows_extrapolation_order_and_max_stable_step() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let system = Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-stability.json");
    let system = path(&system);
    let radius = |extra: &[&str]| {
        let mut args = vec!["stability", system.as_str()];
        args.extend(extra);
        stdout(&cosimo_ok(args))
    };
    let order1 = radius(&["--extrapolation-order", "1"]);
    assert_eq!(order1, radius(&["--order", "1"]));
    assert_ne!(order1, radius(&["--extrapolation-order", "0"]));
    assert!(order1.contains("spectral radius"), "{order1}");

    let new = cosimo_ok(["stability", &system, "--max-stable-step"]);
    assert_no_note(&new);
    let old = cosimo_ok(["stability", &system, "--max-step"]);
    assert_note(&old, "stability", "--max-step", "--max-stable-step");
    assert!(
        stdout(&new).contains("largest stable macro step"),
        "{}",
        show(&new)
    );
    assert_eq!(new.stdout, old.stdout);
}

#[test]
fn stability_without_a_system_finds_the_fmus_from_any_folder() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let elsewhere = temp_dir();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .current_dir(elsewhere.path())
        .args(["stability", "--points", "3"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", show(&output));
    assert!(
        stdout(&output).contains("grid points stable"),
        "{}",
        show(&output)
    );
    // A folder without them is refused with what to pass.
    let output = cosimo([
        "stability",
        "--points",
        "3",
        "--fmus",
        &path(elsewhere.path()),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(stderr(&output).contains("--fmus"), "{}", show(&output));
}

#[test]
fn sweep_writes_into_dash_o_and_the_old_output_dir_still_works() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let study = dir.path().join("study.json");
    std::fs::write(
        &study,
        format!(
            r#"{{"system": {:?}, "experiment": {{"stopTime": 0.5}},
                "grid": [{{"name": "k", "values": [1, 2]}}],
                "keep": {{"summaries": [{{"variable": "x", "statistics": ["final"]}}]}}}}"#,
            dahlquist()
        ),
    )
    .unwrap();
    let mut tables = Vec::new();
    for (option, folder) in [("-o", "new"), ("--output", "long"), ("--output-dir", "old")] {
        let out = dir.path().join(folder);
        let output = cosimo_ok(["sweep", &path(&study), option, &path(&out)]);
        if option == "--output-dir" {
            assert_note(&output, "sweep", "--output-dir", "-o/--output");
        } else {
            assert_no_note(&output);
        }
        let table = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        assert_eq!(table.lines().count(), 3, "{table}");
        tables.push(table);
    }
    assert_eq!(tables[0], tables[1]);
    assert_eq!(tables[0], tables[2]);
    // Its help says the folder is required.
    let help = stdout(&cosimo_ok(["sweep", "--help"]));
    let line = help.lines().find(|l| l.contains("--output <DIR>")).unwrap();
    assert!(line.contains("Required"), "{line}");
}

#[test]
fn help_texts_describe_each_option() {
    let help = stdout(&cosimo_ok(["check", "--help"]));
    let after = |option: &str| {
        let at = help
            .find(option)
            .unwrap_or_else(|| panic!("{option}: {help}"));
        help[at + option.len()..]
            .lines()
            .nth(1)
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    assert!(after("--isolate").starts_with("Host every FMU"), "{help}");
    assert!(
        after("-q, --quiet").starts_with("Print no report"),
        "{help}"
    );
    assert!(after("--rtol <RTOL>").starts_with("Relative tolerance of the comparison"));
}

#[test]
fn times_print_as_the_grid_writes_them() {
    let dir = temp_dir();
    let results = dir.path().join("faulty.csv");
    // Failing in the step from 0.7 = 7 x 0.1 (0.7000000000000001 in binary arithmetic).
    let output = cosimo([
        "run",
        &path(&fmu("Faulty", 2)),
        "--start-value",
        "failure=2",
        "--start-value",
        "fail_at=0.75",
        "--step-size",
        "0.1",
        "--stop-time",
        "1",
        "-o",
        &path(&results),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    let text = stderr(&output);
    assert!(text.contains("simulation failed at t = 0.7:"), "{text}");
    assert!(text.contains("results up to t = 0.7 are in"), "{text}");
    assert!(!text.contains("0.7000000000000001"), "{text}");
    assert_eq!(
        *read_results(&results).time().last().unwrap(),
        0.7000000000000001
    );
}

#[test]
fn a_failure_before_the_first_row_says_no_rows_were_written() {
    let dir = temp_dir();
    let results = dir.path().join("none.csv");
    let output = cosimo([
        "run",
        &dahlquist(),
        "--divergence-limit",
        "0.5",
        "-o",
        &path(&results),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    let text = stderr(&output);
    assert!(
        text.contains("no result rows were written") && text.contains("header only"),
        "{text}"
    );
    assert!(!text.contains("results up to"), "{text}");
}

#[test]
fn plot_labels_the_first_column_by_its_name_and_names_the_file_it_cannot_write() {
    let dir = temp_dir();
    let table = |name: &str, header: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, format!("{header},y\n1,2\n2,3\n3,1\n")).unwrap();
        path(&file)
    };
    let drawn = |csv: &str, png: &str| {
        let png = dir.path().join(png);
        cosimo_ok([
            "plot",
            csv,
            "--variable",
            "y",
            "-o",
            &path(&png),
            "--title",
            "t",
            "--label",
            "y",
        ]);
        std::fs::read(png).unwrap()
    };
    let over_time = drawn(&table("time.csv", "time"), "time.png");
    let over_run = drawn(&table("run.csv", "run"), "run.png");
    // The same points and labels; only the axis label can differ, and does.
    assert!(
        over_time != over_run,
        "the horizontal axis of \"run\" is labelled as time"
    );
    assert!(over_time == drawn(&table("time2.csv", "time"), "time2.png"));

    let missing = dir.path().join("no-such-folder/x.png");
    let output = cosimo([
        "plot",
        &table("t.csv", "time"),
        "--variable",
        "y",
        "-o",
        &path(&missing),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let text = stderr(&output);
    assert!(
        text.contains(&format!("{}: No such file or directory", path(&missing))),
        "{text}"
    );
    assert!(!text.contains("ImageError"), "{text}");
}
