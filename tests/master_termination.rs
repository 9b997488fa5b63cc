//! An FMU's request to terminate ends the run under every algorithm: the run stops at the
//! macro step in which the FMU asked (t = 0.5 s), with every row up to it kept, and reports
//! that it ended early. The Faulty FMU (failure = 4) asks at `fail_at`; FMI 2 with Discard and
//! fmi2Terminated, FMI 3 with terminateSimulation.

mod common;

use std::path::PathBuf;

use common::systems::{component, try_run};
use cosimo::settings::control::StepControl;
use cosimo::settings::{Algorithm, AlgorithmKind, Explicit, Implicit};
use cosimo::system::{config, System};

const FAIL_AT: f64 = 0.5;

fn example(name: &str) -> System {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fmus")
        .join(name);
    config::from_file(&path).expect("the example reads")
}

/// The example with a Faulty component that asks to terminate at 0.5 s.
fn with_terminating_component(mut system: System, version: u8) -> System {
    system.components.push(component(
        "faulty",
        "Faulty",
        version,
        &[("failure", 4.0), ("fail_at", FAIL_AT)],
    ));
    system.experiment.stop = 1.0;
    system.experiment.step = 0.01;
    system.experiment.output_interval = Some(0.1);
    system
}

fn systems(version: u8) -> Vec<(&'static str, System)> {
    let two_mass = example("two-mass-force-force.json");
    let with = |algorithm: Algorithm| {
        let mut system = two_mass.clone();
        system.experiment.algorithm = algorithm;
        with_terminating_component(system, version)
    };
    vec![
        (
            "jacobi",
            with(Algorithm::with_order(AlgorithmKind::Jacobi, 1).expect("jacobi")),
        ),
        (
            "gauss-seidel",
            with(Algorithm::with_order(AlgorithmKind::GaussSeidel, 1).expect("gauss-seidel")),
        ),
        (
            "implicit",
            with(Algorithm::with_order(AlgorithmKind::Implicit, 1).expect("implicit")),
        ),
        (
            "adaptive",
            with(Algorithm::Jacobi(Explicit {
                extrapolation_order: 1,
                control: Some(StepControl::default()),
            })),
        ),
        (
            "adaptive implicit",
            with(Algorithm::Implicit(Implicit {
                extrapolation_order: 1,
                control: Some(StepControl {
                    estimator: cosimo::settings::control::Estimator::ImSLocal,
                    ..StepControl::default()
                }),
                ..Implicit::default()
            })),
        ),
        (
            "constraint",
            with_terminating_component(example("rigid-link.json"), version),
        ),
        (
            "rim",
            with_terminating_component(example("crane-single.json"), version),
        ),
    ]
}

#[test]
fn a_termination_request_ends_the_run_where_it_was_made_under_every_algorithm() {
    for version in [2u8, 3] {
        for (label, system) in systems(version) {
            let label = format!("FMI {version}, {label}");
            let (table, stats) =
                try_run(&system, &["faulty.x"]).unwrap_or_else(|e| panic!("{label}: {e}"));
            assert!(stats.terminated_early, "{label}: reported as ended early");
            assert!(
                (stats.end_time - FAIL_AT).abs() < 1e-9,
                "{label}: the run ends at {} instead of {FAIL_AT}",
                stats.end_time
            );
            let times = table.time();
            // Rows at 0, 0.1, ..., 0.5: every output point up to the request, none after.
            assert_eq!(times.len(), 6, "{label}: rows at {times:?}");
            for (j, t) in times.iter().enumerate() {
                assert!(
                    (t - 0.1 * j as f64).abs() < 1e-9,
                    "{label}: row {j} at t = {t}"
                );
            }
            let x = table.values(table.column("faulty.x").expect("faulty.x is recorded"));
            assert!(
                (x[x.len() - 1] - FAIL_AT).abs() < 1e-9,
                "{label}: the last row holds the state at the request, x = {}",
                x[x.len() - 1]
            );
        }
    }
}

#[test]
fn without_a_request_the_same_systems_run_to_the_stop_time() {
    for (label, mut system) in systems(2) {
        for c in &mut system.components {
            if c.name == "faulty" {
                c.start_values.retain(|(name, _)| name != "failure");
            }
        }
        let (table, stats) =
            try_run(&system, &["faulty.x"]).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(!stats.terminated_early, "{label}");
        assert!(
            (stats.end_time - 1.0).abs() < 1e-9,
            "{label}: {}",
            stats.end_time
        );
        assert_eq!(table.time().len(), 11, "{label}");
    }
}
