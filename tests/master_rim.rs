//! The reduced interface model through the real master on the crane FMUs, against the paper
//! (Peiret et al. 2018): the effective mass, the initial equilibrium, the stability limits of
//! direct ZOH and RIM coupling, and the accuracy at H1 = 10 ms.
//!
//! The monolithic reference integrates the crane and its hydraulics together in this test, from
//! the crane crate's physics sources (compiled in here, independently of any FMU).

#![allow(dead_code)]

mod common;

#[path = "../test-fmus/models/hydraulic_cylinder/src/hydraulics.rs"]
mod hydraulics;
#[path = "../test-fmus/models/crane/src/mbs.rs"]
mod mbs;
#[path = "../test-fmus/models/crane/src/reference.rs"]
mod reference;

use std::path::{Path, PathBuf};

use cosimo::master::execution::{Execution, RunOptions};
use cosimo::settings::rim::EffectiveMass;
use cosimo::settings::{Algorithm, AlgorithmKind};
use cosimo::system::{config, System};
use nalgebra::{Matrix2, Vector2};

fn example(name: &str) -> System {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fmus")
        .join(name);
    config::from_file(&path).expect("the crane example reads")
}

/// The paper's closed form at t = 0: M~ = (A_i M^-1 A_i^T)^-1 with Table 1's data.
fn closed_form_effective_mass(actuators: usize) -> Matrix2<f64> {
    let (l, lh, m, mp, mh) = (1.0f64, 0.5f64, 200.0, 250.0, 100.0);
    let (t1, t2) = (std::f64::consts::FRAC_PI_6, 1.5 * std::f64::consts::PI);
    let (xb, yb) = (3f64.sqrt() / 2.0, 0.0);
    let mass = Matrix2::new(
        m * l * l / 3.0 + (mp + mh) * l * l,
        mh * l * lh * (t1 - t2).cos(),
        mh * l * lh * (t1 - t2).cos(),
        mh * lh * lh,
    );
    let (xp, yp) = (l / 2.0 * t1.cos(), l / 2.0 * t1.sin());
    let s1 = ((xp - xb).powi(2) + (yp - yb).powi(2)).sqrt();
    let row1 = Vector2::new(l * (xb * t1.sin() - yb * t1.cos()) / (2.0 * s1), 0.0);
    let xr = l * t1.cos() + lh * t2.cos();
    let yr = l * t1.sin() + lh * t2.sin();
    let s2 = (xr * xr + yr * yr).sqrt() / 2.0;
    let k = l * lh * (t1 - t2).sin() / (4.0 * s2);
    let row2 = Vector2::new(-k, k);
    let inverse = mass.try_inverse().expect("the mass matrix is regular");
    let w11 = row1.dot(&(inverse * row1));
    if actuators == 1 {
        return Matrix2::new(1.0 / w11, 0.0, 0.0, 0.0);
    }
    let w = Matrix2::new(
        w11,
        row1.dot(&(inverse * row2)),
        row2.dot(&(inverse * row1)),
        row2.dot(&(inverse * row2)),
    );
    w.try_inverse().expect("W is regular")
}

fn initialized(system: &System) -> Execution {
    let mut exec = Execution::instantiate(system, &RunOptions::default()).expect("instantiates");
    exec.initialize().expect("initializes");
    exec
}

#[test]
fn effective_mass_from_directional_derivatives_equals_the_closed_form() {
    for (file, actuators, version) in [
        ("crane-single.json", 1, 2),
        ("crane-double.json", 2, 2),
        ("crane-single.json", 1, 3),
        ("crane-double.json", 2, 3),
    ] {
        let mut system = example(file);
        for component in &mut system.components {
            let fmu = component
                .fmu
                .display()
                .to_string()
                .replace("-fmi2.fmu", &format!("-fmi{version}.fmu"));
            component.fmu = PathBuf::from(fmu);
        }
        let file = format!("{file} (FMI {version})");
        let file = file.as_str();
        let exact = closed_form_effective_mass(actuators);
        // The paper's numbers: 2088.89 kg, and diag(2088.89, 400) kg.
        assert!((exact[(0, 0)] - 2088.888888).abs() < 1e-3, "{exact}");
        if actuators == 2 {
            assert!(
                (exact[(1, 1)] - 400.0).abs() < 1e-6 && exact[(0, 1)].abs() < 1e-6,
                "{exact}"
            );
        }
        let Algorithm::Rim(mut rim) = system.experiment.algorithm.clone() else {
            panic!("a rim system")
        };
        for mode in [
            EffectiveMass::DirectionalDerivatives,
            EffectiveMass::Perturbation,
        ] {
            rim.effective_mass = mode.clone();
            let mut exec = initialized(&system);
            let (m, f) = exec.effective_mass_and_force(&rim).expect("effective mass");
            for r in 0..actuators {
                for c in 0..actuators {
                    let scale = exact[(r, r)].abs();
                    assert!(
                        (m[(r, c)] - exact[(r, c)]).abs() <= 1e-6 * scale,
                        "{file} {mode:?}: M~[{r},{c}] = {} vs {}",
                        m[(r, c)],
                        exact[(r, c)]
                    );
                }
            }
            // At rest under the equilibrium force, a = 0: f~ = -lambda = -8829 N.
            assert!((f[0] + 8829.0).abs() < 0.1, "{file} {mode:?}: f~ = {f}");
        }
        // The FMU's own M~ outputs (the paper's choice) agree.
        let mut exec = initialized(&system);
        let m11 = exec.float_value("crane.M11").expect("M11");
        assert!((m11 - exact[(0, 0)]).abs() <= 1e-6 * exact[(0, 0)], "{m11}");
    }
}

#[test]
fn the_initial_equilibrium_matches_table_3() {
    let mut exec = initialized(&example("crane-single.json"));
    let kappa = exec.float_value("cyl1.kappa_init").expect("kappa");
    let p1 = exec.float_value("cyl1.p1").expect("p1");
    let p2 = exec.float_value("cyl1.p2").expect("p2");
    assert!((kappa - 0.4543).abs() < 5e-5, "kappa0 = {kappa}");
    assert!((p1 / 1e6 - 3.17).abs() < 5e-3, "p1 = {p1}");
    assert!((p2 / 1e6 - 4.53).abs() < 5e-3, "p2 = {p2}");
}

/// The outcome of a 10 s manoeuvre: the largest actuator force and the largest deviation of s1
/// from the monolithic reference, or the failure.
struct Outcome {
    max_force: f64,
    max_error: f64,
    failed: Option<String>,
}

impl Outcome {
    /// Stable: the run completes, the actuator forces stay bounded (the equilibrium force is
    /// 8.8 kN; unstable runs swing to hundreds of kN) and s1 stays within 20 mm of the reference
    /// over the 10 s manoeuvre (its stroke is 100 mm; the unstable 15 ms ZOH run leaves it by
    /// 58 mm). Accuracy is checked separately.
    fn stable(&self) -> bool {
        self.failed.is_none() && self.max_force < 30e3 && self.max_error < 20e-3
    }

    /// The run completed with its largest force (N) and s1 error (m) within `PINNED` of the
    /// pinned values: a drift of the scheme's accuracy (say 10 % more error) fails here, where
    /// the stability criterion above would not notice it.
    fn assert_pinned(&self, what: &str, max_force: f64, max_error: f64) {
        assert!(self.failed.is_none(), "{what}: {:?}", self.failed);
        for (name, value, pinned) in [
            ("max |f| (N)", self.max_force, max_force),
            ("max s1 error (m)", self.max_error, max_error),
        ] {
            assert!(
                (value / pinned - 1.0).abs() < PINNED,
                "{what}: {name} = {value:.6e}, pinned {pinned:.6e} (within {PINNED})"
            );
        }
    }
}

/// Relative tolerance of the pinned crane figures. They were measured on this master (commit
/// e21d2a3, release build; the runs are deterministic) against this test's monolithic
/// reference; 3 % leaves room for harmless rounding changes and catches a 10 % drift.
const PINNED: f64 = 0.03;

fn manoeuvre(
    file: &str,
    algorithm: AlgorithmKind,
    h1: f64,
    reference: &[reference::Sample],
) -> Outcome {
    let mut system = example(file);
    if algorithm != AlgorithmKind::Rim {
        system.experiment.algorithm =
            Algorithm::with_order(algorithm, 0).expect("an algorithm with an order");
    }
    system.experiment.step = h1;
    system.experiment.output_interval = Some(h1);
    let forces: &[&str] = if file.contains("double") {
        &["cyl1.f", "cyl2.f"]
    } else {
        &["cyl1.f"]
    };
    let mut record = vec!["crane.s1"];
    record.extend(forces);
    match common::systems::try_run(&system, &record) {
        Err(failed) => Outcome {
            max_force: f64::INFINITY,
            max_error: f64::INFINITY,
            failed: Some(failed),
        },
        Ok((table, _)) => {
            let mut max_force: f64 = 0.0;
            for c in 1..table.columns().len() {
                max_force = table
                    .values(c)
                    .iter()
                    .fold(max_force, |m, f| m.max(f.abs()));
            }
            let s1 = table.values(0);
            let max_error = table
                .time()
                .iter()
                .zip(s1)
                .map(|(&t, s)| (s - reference_at(reference, t)).abs())
                .fold(0.0, f64::max);
            Outcome {
                max_force: if max_force.is_finite() {
                    max_force
                } else {
                    f64::INFINITY
                },
                max_error,
                failed: None,
            }
        }
    }
}

/// s1 of the reference at t, linear between its samples.
fn reference_at(samples: &[reference::Sample], t: f64) -> f64 {
    let i = samples
        .partition_point(|s| s.t <= t)
        .clamp(1, samples.len() - 1);
    let (a, b) = (&samples[i - 1], &samples[i]);
    a.s[0] + (b.s[0] - a.s[0]) * (t - a.t) / (b.t - a.t)
}

fn reference_run(actuators: usize) -> Vec<reference::Sample> {
    // RK4 at 0.05 ms resolves the pressure time constant (~0.2 ms); a sample every 1 ms.
    reference::Setup::paper(actuators)
        .and_then(|setup| setup.run(10.0, 5e-5, 20))
        .expect("the monolithic reference runs")
}

#[test]
fn single_actuator_stability_limits_and_accuracy_of_the_paper() {
    let reference = reference_run(1);
    let run = |algorithm, h1| {
        let outcome = manoeuvre("crane-single.json", algorithm, h1, &reference);
        eprintln!(
            "single, {algorithm:?}, H1 = {h1}: max |f| {:.6e} N, max s1 error {:.6e} m{}",
            outcome.max_force,
            outcome.max_error,
            outcome
                .failed
                .as_deref()
                .map(|f| format!(", failed: {f}"))
                .unwrap_or_default()
        );
        outcome
    };
    let zoh_10 = run(AlgorithmKind::Jacobi, 0.010);
    let rim_10 = run(AlgorithmKind::Rim, 0.010);
    assert!(zoh_10.stable() && rim_10.stable());
    // Accuracy at H1 = 10 ms: within 2 mm of the monolithic reference for both schemes.
    assert!(zoh_10.max_error < 2e-3 && rim_10.max_error < 2e-3);
    // Pinned (measured, see PINNED): RIM halves the ZOH error at 10 ms.
    zoh_10.assert_pinned("single ZOH 10 ms", 1.079_787e4, 8.098_612e-4);
    rim_10.assert_pinned("single RIM 10 ms", 9.949_788e3, 4.217_144e-4);
    let zoh_15 = run(AlgorithmKind::Jacobi, 0.015);
    assert!(!zoh_15.stable(), "ZOH is unstable at 15 ms");
    // The unstable run still completes the 10 s: its growth is pinned too (force 20x the
    // equilibrium's, s1 58 mm off).
    zoh_15.assert_pinned("single ZOH 15 ms", 1.826_932e5, 5.832_574e-2);
    let rim_25 = run(AlgorithmKind::Rim, 0.025);
    assert!(rim_25.stable(), "RIM is stable at 25 ms");
    rim_25.assert_pinned("single RIM 25 ms", 9.296_840e3, 4.541_683e-3);
}

#[test]
fn double_actuator_stability_limits_of_the_paper() {
    let reference = reference_run(2);
    let run = |algorithm, h1| {
        let outcome = manoeuvre("crane-double.json", algorithm, h1, &reference);
        eprintln!(
            "double, {algorithm:?}, H1 = {h1}: max |f| {:.6e} N, max s1 error {:.6e} m{}",
            outcome.max_force,
            outcome.max_error,
            outcome
                .failed
                .as_deref()
                .map(|f| format!(", failed: {f}"))
                .unwrap_or_default()
        );
        outcome
    };
    let zoh_3 = run(AlgorithmKind::Jacobi, 0.003);
    assert!(zoh_3.stable(), "ZOH is stable at 3 ms");
    // Pinned (measured, see PINNED).
    zoh_3.assert_pinned("double ZOH 3 ms", 1.076_043e4, 2.316_287e-4);
    let zoh_4 = run(AlgorithmKind::Jacobi, 0.004);
    assert!(!zoh_4.stable(), "ZOH fails above 3 ms");
    // It fails, and where: the crane FMU reports its states diverged in the step from
    // t = 0.644 s (measured, as PINNED; 3 % is +-5 macro steps).
    let failed = zoh_4.failed.as_deref().unwrap_or("");
    let at: f64 = failed
        .strip_prefix("simulation failed at t = ")
        .and_then(|rest| rest.split(':').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("double ZOH 4 ms: {failed}"));
    assert!(
        (at / 0.644 - 1.0).abs() < PINNED,
        "double ZOH 4 ms fails at {at} s"
    );
    let rim_20 = run(AlgorithmKind::Rim, 0.020);
    assert!(rim_20.stable(), "RIM is stable at 20 ms");
    // The figure: the double-crane RIM error at 20 ms, 10.3 mm, half the stability
    // criterion's 20 mm; pinned (measured, see PINNED) so that a 10 % change fails.
    rim_20.assert_pinned("double RIM 20 ms", 9.495_037e3, 1.027_549e-2);
}

#[test]
fn the_crane_examples_run_from_the_command_line() {
    for file in ["crane-single.json", "crane-double.json"] {
        example(file);
        let dir = common::temp_dir();
        let out = dir.path().join("crane.csv");
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fmus")
            .join(file);
        common::cosimo_ok([
            "run".as_ref(),
            path.as_os_str(),
            "--algorithm".as_ref(),
            "rim".as_ref(),
            "--stop-time".as_ref(),
            "3".as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
            "--quiet".as_ref(),
        ]);
        let table = common::read_results(&out);
        assert_eq!(table.time().last().copied(), Some(3.0));
    }
}

/// The output grid does not change a RIM run: the forces the fast components hand back at the
/// end of a macro step reach the multibody FMU for its next (held) step whether or not a result
/// row is written there. Both cranes to 1 s, rows every 10 ms and every 50 ms: the coarse
/// file's lines are the fine file's at the same times, byte for byte.
#[test]
fn the_output_interval_does_not_change_a_rim_run() {
    for file in ["crane-single.json", "crane-double.json"] {
        example(file);
        let dir = common::temp_dir();
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fmus")
            .join(file);
        let run = |interval: &str| -> Vec<String> {
            let out = dir.path().join(format!("crane-{interval}.csv"));
            common::cosimo_ok([
                "run".as_ref(),
                path.as_os_str(),
                "--stop-time".as_ref(),
                "1".as_ref(),
                "--output-interval".as_ref(),
                interval.as_ref(),
                "-o".as_ref(),
                out.as_os_str(),
                "--quiet".as_ref(),
            ]);
            std::fs::read_to_string(&out)
                .expect("the results read")
                .lines()
                .map(str::to_string)
                .collect()
        };
        let fine = run("0.01");
        let coarse = run("0.05");
        assert_eq!(coarse.len(), 22, "{file}: header and 21 rows");
        assert_eq!(coarse[0], fine[0], "{file}: the header");
        for (k, line) in coarse.iter().enumerate().skip(1) {
            assert_eq!(line, &fine[1 + 5 * (k - 1)], "{file}: row {k}");
        }
    }
}
