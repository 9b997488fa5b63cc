//! Developer commands behind `cargo xtask`: the README's two commands.
//!
//! - `cargo xtask demo`: build the project's FMUs and run cosimo on the bundled examples.
//! - `cargo xtask test`: the whole test suite, with the independent importer (FMPy) and the
//!   exporters of the third-party FMU corpus installed into a virtual environment under
//!   `target/` first; then the Python module (python/) is built into that venv and its pytest
//!   suite runs, and the sweep's MPI tests when `mpirun` is on PATH. `.ci/run` calls this.
//!   Tests that cannot run their subject log a skip to `target/test-skips.log`
//!   (tests/common/skip.rs, python/tests/conftest.py); at the end it prints "N skipped: ..." and
//!   fails on skips it should not have had: any FMPy skip, and in CI (CI=true) a missing C math
//!   library or MPI.
//! - `cargo xtask quickstart`: the README's first command and its quickstart block, run in a
//!   fresh copy of the repository (`quickstart.rs`); part of `cargo xtask test`.
//! - `cargo xtask fuzz [SECONDS]`: every fuzz target of `fuzz/` for SECONDS each (default 30),
//!   seeded from the repository's own files; cargo-fuzz is installed into `target/tools` first.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod quickstart;

/// What the test venv holds, pinned so results do not drift under us: FMPy (the independent
/// importer of the cross-checks), the exporters that build the third-party corpus of
/// `tests/corpus.rs` (pythonfmu: FMI 2, pythonfmu3: FMI 3; both pack a prebuilt binary shipped
/// in their wheels, so FMUs are built offline) and what the corpus FMUs import at run time.
const VENV_REQUIREMENTS: &[&str] = &[
    "fmpy==0.3.32",
    "pythonfmu==0.7.0",
    "pythonfmu3==0.3.4",
    "numpy==2.4.6",
    // py-crane's FMUs import scipy and pint from the hosting Python.
    "scipy==1.17.1",
    "pint==0.25.3",
    // Readers of the result files that the Python tests compare with (MAT: scipy above).
    "pyarrow==26.0.1",
    "DyMat==0.7",
    // The Python module (python/): its build backend and its test runner.
    "maturin==1.16.0",
    "pytest==9.2.0",
    // libcosim (its C library in the wheel) as an importer of exported FMI 2 FMUs
    // (tests/export.rs).
    "libcosimpy==0.0.6",
    // The Renault FMU Manipulation Toolbox, whose container FMU benches/peers/export.py times
    // next to cosimo's export (FMPy's container comes with fmpy above).
    "fmu-manipulation-toolbox==2.0",
];

/// Wheels whose ready-made FMUs join the corpus (downloaded, not installed: the FMUs are read
/// from the wheel by `tests/corpus.rs`).
const CORPUS_WHEELS: &[&str] = &["py-crane==0.3.1"];

/// Bump when the venv's layout changes (the stamp then no longer matches and pip runs again).
const VENV_LAYOUT: &str = "corpus-2";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => demo(),
        Some("test") => test(&args[1..]),
        Some("fmpy") => fmpy_python().map(|p| println!("{}", p.display())),
        Some("fuzz") => fuzz(args.get(1).map(String::as_str), &args[2.min(args.len())..]),
        Some("quickstart") => quickstart::quickstart(),
        _ => Err(
            "usage: cargo xtask demo | test [cargo test args] | quickstart | fmpy | fuzz [SECONDS [TARGET...]]"
                .to_string(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

fn run(mut command: Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .map_err(|e| format!("cannot start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed ({status})"))
    }
}

/// Pack the FMUs, then show what cosimo does with the bundled example.
fn demo() -> Result<(), String> {
    let fmus = fmu_pack::packed_fmus()?;
    println!(
        "packed {} FMUs into {}",
        fmus.len(),
        fmu_pack::fmus_dir().display()
    );
    let oscillator = fmu_pack::fmu_path("Oscillator", 3);
    let out_dir = workspace_root().join("target").join("demo");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let csv = out_dir.join("oscillator.csv");

    let mut inspect = cargo();
    inspect.args([
        "run",
        "--release",
        "--quiet",
        "--bin",
        "cosimo",
        "--",
        "inspect",
    ]);
    inspect.arg(&oscillator);
    run(inspect)?;

    let mut simulate = cargo();
    simulate.args([
        "run",
        "--release",
        "--quiet",
        "--bin",
        "cosimo",
        "--",
        "run",
    ]);
    simulate.arg(&oscillator);
    simulate.args(["--stop-time", "10", "--start-value", "F=1", "-o"]);
    simulate.arg(&csv);
    run(simulate)?;
    println!("results written to {}", csv.display());

    let system_csv = out_dir.join("two-mass-force-force.csv");
    let mut system = cargo();
    system.args([
        "run",
        "--release",
        "--quiet",
        "--bin",
        "cosimo",
        "--",
        "run",
    ]);
    system.arg(
        workspace_root()
            .join("fmus")
            .join("two-mass-force-force.json"),
    );
    system.args(["--extrapolation-order", "2", "-o"]);
    system.arg(&system_csv);
    run(system)?;
    println!("results written to {}", system_csv.display());
    Ok(())
}

/// Install FMPy, the corpus exporters and their run-time packages (once) into
/// target/fmpy-venv, download the corpus wheels into target/fmpy-venv/wheels, and return the
/// venv's python. A stamp file lists what was installed; pip runs again when that changes.
fn fmpy_python() -> Result<PathBuf, String> {
    let venv = workspace_root().join("target").join("fmpy-venv");
    let python = venv.join("bin").join("python");
    let stamp = venv.join("installed.txt");
    let wanted = format!(
        "{VENV_LAYOUT}\n{}\n{}\n",
        VENV_REQUIREMENTS.join("\n"),
        CORPUS_WHEELS.join("\n")
    );
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(python);
    }
    if !python.exists() {
        let host_python = ["python3", "python"]
            .into_iter()
            .find(|p| Command::new(p).arg("--version").output().is_ok())
            .ok_or(
                "no python3 on PATH: FMPy (the independent importer the tests compare with) \
                 needs it",
            )?;
        let mut create = Command::new(host_python);
        create.args(["-m", "venv"]).arg(&venv);
        run(create)?;
    }
    let pip = |args: &[&str]| {
        let mut command = Command::new(&python);
        command.args(["-m", "pip", "--quiet", "--disable-pip-version-check"]);
        command.args(args);
        command
    };
    let mut install = pip(&["install"]);
    install.args(VENV_REQUIREMENTS);
    run(install)?;
    let wheels = venv.join("wheels");
    let mut download = pip(&["download", "--no-deps", "--dest"]);
    download.arg(&wheels).args(CORPUS_WHEELS);
    run(download)?;
    std::fs::write(&stamp, wanted).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(python)
}

/// The whole test suite: every crate of the workspace, with FMPy available to the cross-checks,
/// then the Python module's pytest suite (which needs the FMUs and the `cosimo` executable
/// that `cargo test` builds), then (the whole suite only, and when `mpirun` is on PATH) the
/// sweep under `mpirun -n 2` and `-n 3`, with cosimo built with the feature `mpi`.
fn test(extra: &[String]) -> Result<(), String> {
    let python = fmpy_python()?;
    // Tests that cannot run their subject log themselves here (tests/common/skip.rs,
    // python/tests/conftest.py); emptied first, counted at the end.
    let skip_log = target_dir().join("test-skips.log");
    match std::fs::remove_file(&skip_log) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("{}: {e}", skip_log.display()))
        }
        _ => {}
    }
    // tests/export.rs packs the container library that `cosimo export` ships (next to the
    // cosimo executable): a cdylib that `cargo test` does not build by itself.
    let mut container = cargo();
    container.args(["build", "-p", "cosimo-container"]);
    run(container)?;
    let mut tests = cargo();
    // Every test binary runs even after a failure, so one run shows everything that broke.
    tests.args(["test", "--workspace", "--no-fail-fast"]);
    tests.args(extra);
    tests.env("COSIMO_FMPY_PYTHON", &python);
    tests.env("COSIMO_SKIP_LOG", &skip_log);
    let rust = run(tests);
    let python = python_module_tests(&python, extra, &skip_log);
    let mpi = if !extra.is_empty() {
        Ok(())
    } else if on_path("mpirun") {
        let mut tests = cargo();
        // One system over ranks (run_mpi) and many runs over ranks (sweep_mpi).
        tests.args([
            "test",
            "--features",
            "mpi",
            "--test",
            "sweep_mpi",
            "--test",
            "run_mpi",
        ]);
        tests.env("COSIMO_SKIP_LOG", &skip_log);
        run(tests)
    } else {
        log_skip(
            &skip_log,
            "mpi",
            "sweep_mpi, run_mpi (all)",
            "no mpirun on PATH (install openmpi-bin, libopenmpi-dev and libclang-dev; .ci/run \
             does)",
        )
    };
    // The README's quickstart, as a newcomer runs it (the whole suite only: it builds cosimo
    // in release in its own copy of the repository).
    let quickstart = if extra.is_empty() {
        quickstart::quickstart()
    } else {
        Ok(())
    };
    // CI=true on the usual services; the tests' own CI checks take any value but these.
    let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"));
    let skips = skip_report(&skip_log, ci);
    let failures: Vec<String> = [rust, python, mpi, quickstart, skips]
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\nxtask: "))
    }
}

/// Whether a skip of `category` fails `cargo xtask test` (`ci`: the environment has CI=true):
/// FMPy and the corpus' exporters are installed by xtask itself, so their absence is a failure
/// everywhere; a machine without a C math library, a C compiler or MPI is allowed locally and
/// fails CI (.ci/run installs MPI); a one-core machine cannot time threads and is reported only;
/// pytest's own skips of a case that has nothing to compare are reported only.
fn skip_fails(category: &str, ci: bool) -> bool {
    match category {
        "fmpy" => true,
        "no-libm" | "mpi" | "no-chromium" | "no-script" | "no-cc" => ci,
        "one-core" | "pytest" => false,
        // A category this table does not know yet: CI must not let it pass unseen.
        _ => ci,
    }
}

/// Append a skip to the log, in the format of tests/common/skip.rs.
fn log_skip(log: &Path, category: &str, test: &str, why: &str) -> Result<(), String> {
    use std::io::Write as _;
    println!("xtask: skipped {test}: {why}");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut file| writeln!(file, "{category}\t{test}\t{why}"))
        .map_err(|e| format!("{}: {e}", log.display()))
}

/// Print "N skipped: ..." from the skip log, and fail when a skip is one this run (or CI) should
/// not have had (see [`skip_fails`]).
fn skip_report(log: &Path, ci: bool) -> Result<(), String> {
    let text = match std::fs::read_to_string(log) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: {e}", log.display())),
    };
    let skips: Vec<(&str, &str, &str)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let mut fields = line.splitn(3, '\t');
            let category = fields.next().unwrap_or("");
            let test = fields.next().unwrap_or("?");
            let why = fields.next().unwrap_or("");
            (category, test, why)
        })
        .collect();
    if skips.is_empty() {
        println!("xtask: 0 skipped");
        return Ok(());
    }
    println!("xtask: {} skipped:", skips.len());
    let mut failing = Vec::new();
    for &(category, test, why) in &skips {
        let fails = skip_fails(category, ci);
        println!(
            "  {test} [{category}{}]: {why}",
            if fails { ", not allowed" } else { "" }
        );
        if fails {
            failing.push(test);
        }
    }
    if failing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {} skipped tests should have run{}: {}",
            failing.len(),
            skips.len(),
            if ci { " in CI" } else { "" },
            failing.join(", ")
        ))
    }
}

/// Build the Python module into the test venv with pip, as users install it (`pip install
/// ./python`), in the dev profile and the workspace's target folder so that it reuses what
/// `cargo test` compiled (a release build would cost minutes), then run its pytest suite.
fn python_module_tests(python: &Path, extra: &[String], skip_log: &Path) -> Result<(), String> {
    // `cargo xtask test --release`: the module and the executable the tests compare with are
    // release builds too.
    let release = extra.iter().any(|a| a == "--release" || a == "-r");
    let (profile, folder) = if release {
        ("release", "release")
    } else {
        ("dev", "debug")
    };
    // maturin's build backend runs the `maturin` of the venv: put its bin folder first.
    let bin = python.parent().map(Path::to_path_buf).unwrap_or_default();
    let path = std::env::join_paths(
        std::iter::once(bin).chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        ),
    )
    .map_err(|e| format!("PATH: {e}"))?;
    let mut install = Command::new(python);
    install
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-build-isolation",
            "--no-deps",
            "--force-reinstall",
        ])
        .arg(workspace_root().join("python"))
        .env("PATH", &path)
        .env("MATURIN_PEP517_ARGS", format!("--profile {profile}"))
        .env("CARGO_TARGET_DIR", target_dir());
    run(install)?;
    let mut pytest = Command::new(python);
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(workspace_root().join("python").join("tests"))
        .current_dir(workspace_root())
        .env("COSIMO_SKIP_LOG", skip_log)
        .env("COSIMO_BIN", target_dir().join(folder).join("cosimo"));
    run(pytest)
}

/// Whether a folder of PATH holds `program`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The fuzz targets of `fuzz/` (its Cargo.toml lists the same).
const FUZZ_TARGETS: &[&str] = &[
    "model_description",
    "ssd",
    "ssp_package",
    "system_json",
    "input_csv",
    "scenario",
    "result_mat",
    "result_arrow",
    "study",
    "results_csv",
    "check_case",
    "baseline",
    "sweep_table",
    "plot",
    "snapshot",
    "build_description",
    "partition_file",
];

/// The cargo-fuzz installed into `target/tools`, pinned like the venv's packages.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// The build's target folder (`CARGO_TARGET_DIR` when set).
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    }
}

/// Run every fuzz target for `seconds` each (default 30). The targets need nightly flags: the
/// stable toolchain takes them with RUSTC_BOOTSTRAP=1. No sanitizer: the readers are safe
/// Rust, where AddressSanitizer finds nothing that a panic would not, at half the speed.
/// Fuzz each target (those named, else all of `FUZZ_TARGETS`) for `seconds`.
fn fuzz(seconds: Option<&str>, only: &[String]) -> Result<(), String> {
    if let Some(unknown) = only.iter().find(|t| !FUZZ_TARGETS.contains(&t.as_str())) {
        return Err(format!(
            "fuzz: no target {unknown}; the targets are {}",
            FUZZ_TARGETS.join(", ")
        ));
    }
    let seconds: u64 =
        match seconds {
            None => 30,
            Some(text) => text.parse().ok().filter(|&s| s > 0).ok_or_else(|| {
                format!("fuzz {text}: expected a number of seconds, e.g. fuzz 30")
            })?,
        };
    let tools = target_dir().join("tools");
    install_cargo_fuzz(&tools)?;
    let seeds = fuzz_seeds()?;
    let path = std::env::join_paths(
        std::iter::once(tools.join("bin")).chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        ),
    )
    .map_err(|e| format!("PATH: {e}"))?;
    let mut failed = Vec::new();
    for target in FUZZ_TARGETS
        .iter()
        .filter(|t| only.is_empty() || only.iter().any(|o| o == *t))
    {
        let corpus = workspace_root().join("fuzz").join("corpus").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let mut command = cargo();
        command
            .args(["fuzz", "run", "--sanitizer", "none", "--target-dir"])
            .arg(target_dir().join("fuzz"))
            .arg(target)
            .arg(&corpus)
            .arg(seeds.join(target))
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            // A single input that takes 10 s is a hang; 2 GB of memory is a leak or a bomb.
            .args(["-timeout=10", "-rss_limit_mb=2048"])
            .env("PATH", &path)
            .env("RUSTC_BOOTSTRAP", "1");
        println!("fuzzing {target} for {seconds} s");
        if let Err(message) = run(command) {
            eprintln!("xtask: {message}");
            failed.push(*target);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "fuzz targets failed: {}; the inputs are in fuzz/artifacts/<target>/ (reproduce one \
             with `cargo fuzz run -s none <target> <file>`)",
            failed.join(", ")
        ))
    }
}

/// Install the pinned cargo-fuzz into `tools` unless it is there.
fn install_cargo_fuzz(tools: &Path) -> Result<(), String> {
    let binary = tools.join("bin").join("cargo-fuzz");
    let installed = Command::new(&binary)
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(CARGO_FUZZ_VERSION));
    if installed {
        return Ok(());
    }
    let mut install = cargo();
    install
        .args([
            "install",
            "--locked",
            "cargo-fuzz",
            "--version",
            CARGO_FUZZ_VERSION,
        ])
        .arg("--root")
        .arg(tools);
    run(install)
}

/// Seed corpora from the repository's own files, one folder per target under
/// `target/fuzz-seeds` (made afresh each run; libFuzzer reads them, its findings go to
/// `fuzz/corpus`).
fn fuzz_seeds() -> Result<PathBuf, String> {
    let root = workspace_root();
    let seeds = target_dir().join("fuzz-seeds");
    if seeds.exists() {
        std::fs::remove_dir_all(&seeds).map_err(|e| format!("{}: {e}", seeds.display()))?;
    }
    let folder = |target: &str| -> Result<PathBuf, String> {
        let dir = seeds.join(target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(dir)
    };
    let write = |dir: &Path, name: String, bytes: &[u8]| -> Result<(), String> {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))
    };
    let read = |path: &Path| std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()));
    let mut files = Vec::new();
    for dir in ["fmus", "tests/data"] {
        walk(&root.join(dir), &mut files);
    }
    let named = |extensions: &[&str]| -> Vec<&PathBuf> {
        files
            .iter()
            .filter(|f| {
                f.extension()
                    .is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
            })
            .collect()
    };
    // A unique file name for a seed: its path below the root, flattened.
    let seed_name = |path: &Path| {
        path.strip_prefix(&root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace(['/', '\\'], "_")
    };

    let descriptions = folder("model_description")?;
    for file in named(&["xml"]) {
        write(&descriptions, seed_name(file), &read(file)?)?;
    }
    // The project's FMUs: their model descriptions are generated, so the FMUs are packed first.
    match fmu_pack::packed_fmus() {
        Ok(fmus) => {
            for fmu in fmus {
                let xml = read_zip_entry(&fmu.path, "modelDescription.xml")?;
                write(&descriptions, seed_name(&fmu.path) + ".xml", &xml)?;
            }
        }
        Err(e) => eprintln!("xtask: the project's FMUs are not seeds ({e})"),
    }
    let ssd = folder("ssd")?;
    for file in named(&["ssd", "ssv", "ssm", "ssb"]) {
        write(&ssd, seed_name(file), &read(file)?)?;
    }
    let packages = folder("ssp_package")?;
    let mut ssp_folders: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| {
            f.ancestors()
                .find(|a| a.extension().is_some_and(|e| e == "ssp"))
        })
        .map(Path::to_path_buf)
        .collect();
    ssp_folders.sort();
    ssp_folders.dedup();
    for dir in ssp_folders {
        write(
            &packages,
            seed_name(&dir) + ".zip",
            &zip_folder(&dir, &files)?,
        )?;
    }
    let systems = folder("system_json")?;
    for file in named(&["json"]) {
        write(&systems, seed_name(file), &read(file)?)?;
    }
    let tables = folder("input_csv")?;
    for file in named(&["csv"]) {
        write(&tables, seed_name(file), &table_head(&read(file)?))?;
    }
    // Result files of every streamed binary format (tests/data/results).
    for (target, extension) in [("result_mat", "mat"), ("result_arrow", "arrow")] {
        let dir = folder(target)?;
        for file in named(&[extension]) {
            write(&dir, seed_name(file), &read(file)?)?;
        }
    }
    let scenarios = folder("scenario")?;
    for file in files.iter().filter(|f| {
        f.parent().is_some_and(|p| p.ends_with("scenarios"))
            && f.extension()
                .is_some_and(|e| ["json", "yaml", "yml"].iter().any(|x| e == *x))
    }) {
        write(&scenarios, seed_name(file), &read(file)?)?;
    }
    let studies = folder("study")?;
    for file in named(&["json"]) {
        if file
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains("study"))
        {
            write(&studies, seed_name(file), &read(file)?)?;
        }
    }
    // Targets that read two tables take them joined by a NUL byte: a table with itself, and
    // the examples' reference with each recorded result.
    let heads: Vec<(String, Vec<u8>)> = named(&["csv"])
        .into_iter()
        .map(|file| Ok((seed_name(file), table_head(&read(file)?))))
        .collect::<Result<_, String>>()?;
    let joined = |a: &[u8], b: &[u8]| [a, b"\0", b].concat();
    for target in ["results_csv", "plot"] {
        let dir = folder(target)?;
        for (i, (name, head)) in heads.iter().enumerate() {
            write(&dir, name.clone(), head)?;
            let (_, next) = &heads[(i + 1) % heads.len()];
            write(&dir, format!("{name}+next"), &joined(head, next))?;
        }
    }
    // check_case: an FMI-LS-REF manifest, NUL, the file it names (ref.csv), NUL, a check.json.
    let cases = folder("check_case")?;
    let manifest = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<fmiReferences>\n  \
         <Related type=\"text/csv\" source=\"ref.csv\" role=\"result\"/>\n</fmiReferences>\n";
    let reference = b"time,u,a,b,y\n0,1,1 2 3,true,0.5\n1,2,4 5 6,false,0.25\n";
    for file in named(&["json"]) {
        if file.file_name().is_some_and(|n| n == "check.json") {
            let bytes = [joined(manifest.as_bytes(), reference), read(file)?].join(&b'\0');
            write(&cases, seed_name(file), &bytes)?;
        }
    }
    // The repository's hand-made seeds (a sweep's output folder, studies): fuzz/seeds/TARGET/.
    for target in FUZZ_TARGETS {
        let mut own = Vec::new();
        walk(&root.join("fuzz").join("seeds").join(target), &mut own);
        if !own.is_empty() {
            let dir = folder(target)?;
            for file in own {
                write(&dir, seed_name(&file), &read(&file)?)?;
            }
        }
    }
    // snapshot: the case and the mode, each with no payload (the genuine snapshot of the case).
    let snapshots = folder("snapshot")?;
    for case in 0..4u8 {
        for mode in 0..5u8 {
            write(&snapshots, format!("case{case}-mode{mode}"), &[case, mode])?;
        }
    }
    Ok(seeds)
}

/// The first rows of a result table: they show the format as well, and fuzz faster.
fn table_head(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let head: Vec<&str> = text.lines().take(25).collect();
    (head.join("\n") + "\n").into_bytes()
}

/// Every file below `dir`.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

/// One entry of a zip file.
fn read_zip_entry(archive: &Path, name: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", archive.display());
    let file = std::fs::File::open(archive).map_err(|e| fail(&e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| fail(&e))?;
    let mut entry = zip.by_name(name).map_err(|e| fail(&e))?;
    let mut bytes = Vec::new();
    entry.read_to_end(&mut bytes).map_err(|e| fail(&e))?;
    Ok(bytes)
}

/// The files of `files` below `dir`, zipped with paths relative to it (a `.ssp`).
fn zip_folder(dir: &Path, files: &[PathBuf]) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let fail = |e: &dyn std::fmt::Display| format!("zipping {}: {e}", dir.display());
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for file in files {
        let Ok(relative) = file.strip_prefix(dir) else {
            continue;
        };
        let name = relative.to_string_lossy().replace('\\', "/");
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .map_err(|e| fail(&e))?;
        let bytes = std::fs::read(file).map_err(|e| fail(&e))?;
        zip.write_all(&bytes).map_err(|e| fail(&e))?;
    }
    let cursor = zip.finish().map_err(|e| fail(&e))?;
    Ok(cursor.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(lines: &str) -> (tempfile_dir::Dir, PathBuf) {
        let dir = tempfile_dir::Dir::new();
        let path = dir.0.join("test-skips.log");
        std::fs::write(&path, lines).unwrap();
        (dir, path)
    }

    /// A folder under the system's temporary folder, removed when dropped.
    mod tempfile_dir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                let path = std::env::temp_dir().join(format!(
                    "xtask-skips-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                std::fs::create_dir_all(&path).unwrap();
                Dir(path)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn no_log_is_no_skip() {
        let dir = tempfile_dir::Dir::new();
        assert_eq!(skip_report(&dir.0.join("none.log"), true), Ok(()));
    }

    #[test]
    fn an_fmpy_skip_fails_everywhere_and_a_one_core_skip_nowhere() {
        let (_dir, path) = log("one-core\tmaster_parallel::a\tone core\n\
             pytest\tpython::t.py::b[2]\tSkipped: nothing to compare\n");
        assert_eq!(skip_report(&path, true), Ok(()));
        let (_dir, path) = log("fmpy\tcorpus::x\tCOSIMO_FMPY_PYTHON not set\n");
        let error = skip_report(&path, false).unwrap_err();
        assert!(
            error.starts_with("1 of 1 skipped tests should have run: corpus::x"),
            "{error}"
        );
    }

    #[test]
    fn a_missing_libm_or_mpi_fails_ci_only() {
        let (_dir, path) = log("no-libm\tvalidate::y\tno libm.so.6\n\
             mpi\tsweep_mpi (all)\tno mpirun\n\
             one-core\tmaster_parallel::a\tone core\n");
        assert_eq!(skip_report(&path, false), Ok(()));
        let error = skip_report(&path, true).unwrap_err();
        assert_eq!(
            error,
            "2 of 3 skipped tests should have run in CI: validate::y, sweep_mpi (all)"
        );
        // A category not known to xtask does not pass CI unseen.
        assert!(skip_fails("something-new", true));
        assert!(!skip_fails("something-new", false));
    }
}
