//! `cosimo run` agrees with FMPy, an independent importer, on every FMU of the project's test
//! set, FMI 2 and FMI 3, with the same experiment.
//!
//! FMPy comes from `cargo xtask test` (it installs it into `target/fmpy-venv` and sets
//! `COSIMO_FMPY_PYTHON`). Without it the test logs itself as skipped (tests/common/skip.rs), which
//! `cargo xtask test` counts and fails on; in CI (`CI` set) it fails outright.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::skip::Skip;
use common::*;
use cosimo::fmu::description::{Causality, VariableType};
use cosimo::fmu::Fmu;

fn fmpy_python() -> Option<PathBuf> {
    match std::env::var_os("COSIMO_FMPY_PYTHON") {
        Some(python) => Some(PathBuf::from(python)),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "FMPy is required in CI: run the suite with `cargo xtask test`, which installs it"
            )
        }
        None => {
            common::skip::skipped(
                Skip::Fmpy,
                "COSIMO_FMPY_PYTHON not set; run `cargo xtask test` to compare with FMPy",
            );
            None
        }
    }
}

const FMPY_SCRIPT: &str = r#"
import sys
from fmpy import simulate_fmu
from fmpy.util import write_csv
path, out, stop, step = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
names = sys.argv[5:]
result = simulate_fmu(path, fmi_type='CoSimulation', start_time=0.0, stop_time=stop,
                      step_size=step, output_interval=step, output=names)
write_csv(out, result)
"#;

const FMPY_ME_SCRIPT: &str = r#"
import sys
from fmpy import simulate_fmu
from fmpy.util import write_csv
path, out, stop, step = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
names = sys.argv[5:]
result = simulate_fmu(path, fmi_type='ModelExchange', solver='CVode', relative_tolerance=1e-10,
                      start_time=0.0, stop_time=stop, step_size=step, output_interval=step,
                      output=names)
write_csv(out, result)
"#;

/// Numeric scalar outputs: what both tools write as plain numbers. None for an FMU with
/// clocks: FMPy's `simulate_fmu` never ticks a clock, so there is nothing to agree on
/// (`tests/clocks.rs` checks those FMUs against their models' formulas).
fn numeric_outputs(path: &Path) -> Vec<String> {
    let fmu = Fmu::open(path).unwrap();
    if fmu
        .description()
        .variables
        .iter()
        .any(|v| v.var_type == VariableType::Clock)
    {
        return Vec::new();
    }
    fmu.description()
        .variables
        .iter()
        .filter(|v| v.causality == Causality::Output && !v.is_array())
        .filter(|v| {
            !matches!(
                v.var_type,
                VariableType::String | VariableType::Binary | VariableType::Clock
            )
        })
        .map(|v| v.name.clone())
        .collect()
}

/// `cosimo run FMU --stop-time STOP --step-size STEP` with `extra` options, recording
/// `outputs` into `out`.
fn run_cosimo(
    fmu: &Path,
    extra: &[&str],
    (stop, step): (&str, &str),
    outputs: &[String],
    out: &Path,
) {
    let mut args = vec![
        "run".to_string(),
        fmu.display().to_string(),
        "--stop-time".into(),
        stop.into(),
        "--step-size".into(),
        step.into(),
        "--quiet".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    for name in outputs {
        args.push("--output-variable".into());
        args.push(name.clone());
    }
    cosimo_ok(&args);
}

/// FMPy's `script` on `fmu`, recording `outputs` into `out`.
fn run_fmpy(
    python: &Path,
    script: &str,
    fmu: &Path,
    (stop, step): (&str, &str),
    outputs: &[String],
    out: &Path,
) {
    let status = Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(fmu)
        .arg(out)
        .args([stop, step])
        .args(outputs)
        .output()
        .expect("FMPy's python runs");
    assert!(
        status.status.success(),
        "FMPy failed on {}:\n{}",
        fmu.display(),
        show(&status)
    );
}

#[test]
fn cosimo_and_fmpy_give_the_same_results_for_every_project_fmu() {
    let Some(python) = fmpy_python() else { return };
    let mut compared = 0;
    for packed in fmu_pack::packed_fmus().expect("the project's FMUs pack") {
        let outputs = numeric_outputs(&packed.path);
        if outputs.is_empty() {
            continue;
        }
        let dir = temp_dir();
        let (stop, step) = ("2", "0.01");
        let ours = dir.path().join("cosimo.csv");
        let theirs = dir.path().join("fmpy.csv");
        run_cosimo(&packed.path, &[], (stop, step), &outputs, &ours);
        run_fmpy(
            &python,
            FMPY_SCRIPT,
            &packed.path,
            (stop, step),
            &outputs,
            &theirs,
        );

        let (a, b) = (read_results(&ours), read_results(&theirs));
        assert_eq!(
            a.time().len(),
            b.time().len(),
            "{}: row counts differ",
            packed.path.display()
        );
        for (ta, tb) in a.time().iter().zip(b.time()) {
            assert!(
                (ta - tb).abs() < 1e-9,
                "{}: output times differ ({ta} vs {tb})",
                packed.path.display()
            );
        }
        for name in &outputs {
            let (ca, cb) = (
                a.column(name).unwrap(),
                b.column(name).expect("FMPy records the output"),
            );
            let deviation = max_relative_deviation(a.values(ca), b.values(cb), 1e-6);
            assert!(
                deviation < 1e-9,
                "{} {name}: cosimo and FMPy differ by {deviation:e} (relative)",
                packed.path.display()
            );
        }
        compared += 1;
    }
    assert!(compared >= 6, "only {compared} FMUs compared");
}

/// Model Exchange: cosimo's integrator (BDF and Tsitouras 5(4)) and FMPy's (SUNDIALS CVODE),
/// both at tight tolerances, on every kit FMU with a Model Exchange interface: the models'
/// solutions agree to what the tolerances allow, events included (the bouncing ball's bounces,
/// the stair's time events).
#[test]
fn cosimo_and_fmpy_agree_on_model_exchange_fmus() {
    let Some(python) = fmpy_python() else { return };
    let mut compared = 0;
    for packed in fmu_pack::packed_fmus().expect("the project's FMUs pack") {
        let has_me = Fmu::open(&packed.path)
            .unwrap()
            .file_description()
            .model_exchange
            .is_some();
        let outputs = numeric_outputs(&packed.path);
        if !has_me || outputs.is_empty() {
            continue;
        }
        let dir = temp_dir();
        let (stop, step) = ("2", "0.01");
        let theirs = dir.path().join("fmpy.csv");
        run_fmpy(
            &python,
            FMPY_ME_SCRIPT,
            &packed.path,
            (stop, step),
            &outputs,
            &theirs,
        );
        let b = read_results(&theirs);
        for solver in ["bdf", "rk45"] {
            let ours = dir.path().join(format!("cosimo-{solver}.csv"));
            run_cosimo(
                &packed.path,
                &[
                    "--interface",
                    "me",
                    "--solver",
                    solver,
                    "--solver-rtol",
                    "1e-10",
                ],
                (stop, step),
                &outputs,
                &ours,
            );
            let a = read_results(&ours);
            // FMPy adds a row before and after each event; at each output time take its last.
            let rows: Vec<usize> = a
                .time()
                .iter()
                .map(|t| {
                    b.time()
                        .iter()
                        .rposition(|tb| (tb - t).abs() < 1e-9)
                        .unwrap_or_else(|| {
                            panic!("{}: FMPy has no row at t = {t}", packed.path.display())
                        })
                })
                .collect();
            for name in &outputs {
                let (ca, cb) = (
                    a.column(name).unwrap(),
                    b.column(name).expect("FMPy records the output"),
                );
                let theirs: Vec<f64> = rows.iter().map(|&r| b.values(cb)[r]).collect();
                let deviation = max_relative_deviation(a.values(ca), &theirs, 1e-3);
                assert!(
                    deviation < 1e-6,
                    "{} {name} ({solver}): cosimo and FMPy differ by {deviation:e} (relative)",
                    packed.path.display()
                );
            }
        }
        compared += 1;
    }
    assert!(
        compared >= 10,
        "only {compared} Model Exchange FMUs compared"
    );
}
