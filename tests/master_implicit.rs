//! The implicit predictor / corrector scheme through the real master on the two-mass
//! oscillator, with the force/force, force/displacement and displacement/displacement
//! decompositions of the stability thesis: its global error converges with order k + 1 like the
//! explicit scheme's, its corrector converges, and a component that cannot roll back is named.

mod common;

use common::systems::*;
use cosimo::settings::AlgorithmKind;

const STOP: f64 = 0.5;
const OUTPUT: f64 = 0.02;
const STEPS: [f64; 3] = [4e-3, 2e-3, 1e-3];

fn global_error(decomposition: Decomposition, order: u8, step: f64) -> (f64, u64) {
    let mut system = two_mass(decomposition, AlgorithmKind::Implicit, order, step, STOP);
    system.experiment.output_interval = Some(OUTPUT);
    let (table, stats) = run(&system, &["mass1.x", "mass1.v", "mass2.x", "mass2.v"]);
    (two_mass_error(&table), stats.corrector_iterations)
}

fn check(decomposition: Decomposition) {
    for order in 0..=2u8 {
        let runs: Vec<(f64, u64)> = STEPS
            .iter()
            .map(|&h| global_error(decomposition, order, h))
            .collect();
        let errors: Vec<f64> = runs.iter().map(|r| r.0).collect();
        let slope = fitted_order(&STEPS, &errors);
        eprintln!(
            "implicit {decomposition:?} k = {order}: errors {errors:?}, fitted order {slope:.3}"
        );
        let expected = f64::from(order) + 1.0;
        assert!(
            (slope - expected).abs() < 0.25,
            "implicit {decomposition:?} k = {order}: fitted order {slope:.3}, expected {expected} ({errors:?})"
        );
        // Linear subsystems and an exact (finite-difference) Jacobian: one Newton iteration per step.
        for (&h, (_, iterations)) in STEPS.iter().zip(&runs) {
            let steps = (STOP / h).round() as u64;
            assert_eq!(
                *iterations, steps,
                "{decomposition:?} k = {order}, H = {h}: one corrector iteration per macro step"
            );
        }
    }
}

#[test]
fn implicit_force_force_converges_with_order_k_plus_one() {
    check(Decomposition::ForceForce);
}

#[test]
fn implicit_force_displacement_converges_with_order_k_plus_one() {
    check(Decomposition::ForceDisplacement);
}

#[test]
fn implicit_displacement_displacement_converges_with_order_k_plus_one() {
    check(Decomposition::DisplacementDisplacement);
}

#[test]
fn implicit_is_more_accurate_than_explicit_at_the_same_step() {
    for decomposition in [
        Decomposition::ForceForce,
        Decomposition::DisplacementDisplacement,
    ] {
        let implicit = global_error(decomposition, 1, 2e-3).0;
        let mut system = two_mass(decomposition, AlgorithmKind::Jacobi, 1, 2e-3, STOP);
        system.experiment.output_interval = Some(OUTPUT);
        let (table, _) = run(&system, &["mass1.x"]);
        let explicit = table
            .time()
            .iter()
            .enumerate()
            .map(|(row, &t)| (table.values(0)[row] - two_mass_exact(t)[0]).abs() / X0)
            .fold(0.0, f64::max);
        assert!(
            implicit < explicit,
            "{decomposition:?}: implicit {implicit:e} vs explicit {explicit:e}"
        );
    }
}

#[test]
fn a_component_that_cannot_roll_back_is_named() {
    // An unpacked copy of the Oscillator whose model description denies FMU state get/set.
    let dir = common::unpacked_with_edit(
        "Oscillator",
        2,
        "canGetAndSetFMUstate=\"true\"",
        "canGetAndSetFMUstate=\"false\"",
    );

    let mut system = two_mass(
        Decomposition::ForceDisplacement,
        AlgorithmKind::Implicit,
        0,
        1e-3,
        0.01,
    );
    system.components[1].fmu = dir.path().to_path_buf();
    let error = try_run(&system, &["mass1.x"]).unwrap_err();
    assert!(
        error.contains("component \"mass2\" cannot save its state (canGetAndSetFMUstate is false)"),
        "{error}"
    );
}
