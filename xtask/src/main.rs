//! Developer commands behind `cargo xtask`: the README's two commands.
//!
//! - `cargo xtask demo`: build the project's FMUs and run cosimo on the bundled examples.
//! - `cargo xtask test`: the whole test suite, with the independent importer (FMPy) installed
//!   into a virtual environment under `target/` first. `.ci/run` calls this.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// FMPy version the cross-checks are pinned to, so results do not drift under us.
const FMPY_VERSION: &str = "0.3.32";

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

/// Install FMPy (once) into target/fmpy-venv and return its python.
fn fmpy_python() -> Result<PathBuf, String> {
    let venv = workspace_root().join("target").join("fmpy-venv");
    let python = venv.join("bin").join("python");
    let stamp = venv.join(format!("fmpy-{FMPY_VERSION}.installed"));
    if stamp.exists() {
        return Ok(python);
    }
    let host_python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok())
        .ok_or(
            "no python3 on PATH: FMPy (the independent importer the tests compare with) needs it",
        )?;
    let mut create = Command::new(host_python);
    create.args(["-m", "venv"]).arg(&venv);
    run(create)?;
    let mut install = Command::new(&python);
    install.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]);
    install.arg(format!("fmpy=={FMPY_VERSION}"));
    run(install)?;
    std::fs::write(&stamp, "").map_err(|e| format!("{}: {e}", stamp.display()))?;
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
