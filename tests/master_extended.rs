//! The derivative-extended implicit coupling (the stability thesis, Sect. 3.4) through the real
//! master on the two-mass oscillator: the half-step values satisfy the coupling condition and
//! its time derivative at every communication point, the scheme converges with order k + 1 in
//! one Newton iteration per step for all three decompositions, and misuse is refused with
//! messages that say what to change.

mod common;

use common::systems::*;
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::master::implicit::{Extension, ImplicitState};
use cosimo::system::{Algorithm, System};

const STOP: f64 = 0.5;
const OUTPUT: f64 = 0.02;
const STEPS: [f64; 3] = [2e-3, 1e-3, 5e-4];

/// The thesis' variants: half-step forces (F/F), force and velocity (F/D), velocities (D/D).
fn extended(decomposition: Decomposition, order: u8, step: f64, stop: f64) -> System {
    let mut system = two_mass(decomposition, Algorithm::Implicit, order, step, stop);
    system.experiment.corrector.extension = Extension::Derivative;
    for c in &mut system.connections {
        c.half_step = matches!(c.to.variable.as_str(), "F" | "v_in");
    }
    system
}

fn global_error(decomposition: Decomposition, order: u8, step: f64) -> (f64, u64) {
    let mut system = extended(decomposition, order, step, STOP);
    system.experiment.output_interval = Some(OUTPUT);
    let (table, stats) = run(&system, &["mass1.x", "mass1.v", "mass2.x", "mass2.v"]);
    let omega = (C / M).sqrt();
    let mut worst: f64 = 0.0;
    for (row, &t) in table.time().iter().enumerate() {
        let exact = two_mass_exact(t);
        for (i, value) in exact.iter().enumerate() {
            let scale = if i % 2 == 0 { X0 } else { X0 * omega };
            worst = worst.max((table.values(i)[row] - value).abs() / scale);
        }
    }
    (worst, stats.corrector_iterations)
}

fn check_convergence(decomposition: Decomposition) {
    for order in 0..=2u8 {
        let runs: Vec<(f64, u64)> = STEPS
            .iter()
            .map(|&h| global_error(decomposition, order, h))
            .collect();
        let errors: Vec<f64> = runs.iter().map(|r| r.0).collect();
        let slope = fitted_order(&STEPS, &errors);
        eprintln!("D-extended {decomposition:?} k = {order}: errors {errors:?}, order {slope:.3}");
        let expected = f64::from(order) + 1.0;
        assert!(
            (slope - expected).abs() < 0.25,
            "D-extended {decomposition:?} k = {order}: fitted order {slope:.3}, expected {expected} ({errors:?})"
        );
        // Linear subsystems and a finite-difference Jacobian that is exact for them.
        for (&h, (_, iterations)) in STEPS.iter().zip(&runs) {
            assert_eq!(
                *iterations,
                (STOP / h).round() as u64,
                "{decomposition:?} k = {order}, H = {h}: one Newton iteration per macro step"
            );
        }
    }
}

#[test]
fn derivative_extended_force_force_converges_with_order_k_plus_one() {
    check_convergence(Decomposition::ForceForce);
}

#[test]
fn derivative_extended_force_displacement_converges_with_order_k_plus_one() {
    check_convergence(Decomposition::ForceDisplacement);
}

#[test]
fn derivative_extended_displacement_displacement_converges_with_order_k_plus_one() {
    check_convergence(Decomposition::DisplacementDisplacement);
}

#[test]
fn the_half_step_force_meets_the_coupling_condition_and_its_derivative() {
    // F/F with Q (k = 2): after each step the spring force u* equals c (x2 - x1) + d (v2 - v1)
    // and the quadratic's slope at the new point, (u_N - 4 m + 3 u*) / H, equals
    // c (v2 - v1) + d (a2 - a1): the thesis' g = 0 and g' = 0 (Eq. 3.36). Mass 1 is an FMI 2
    // FMU and mass 2 an FMI 3 FMU, so both output-derivative paths are used.
    let h = 2e-3;
    let system = extended(Decomposition::ForceForce, 2, h, 1.0);
    let mut exec = Execution::instantiate(&system, &RunOptions::default()).unwrap();
    exec.initialize().unwrap();
    let settings = system.experiment.corrector;
    let mut state = ImplicitState::default();
    let coupled = exec.coupled_connections();
    let force = coupled
        .iter()
        .position(|&c| {
            let conn = &system.connections[c];
            conn.to.to_string() == "mass1.F"
        })
        .expect("mass1.F is coupled");
    let half_index = coupled
        .iter()
        .filter(|&&c| system.connections[c].half_step)
        .position(|&c| c == coupled[force])
        .expect("mass1.F is a half-step value");
    for step in 0..20 {
        let start = exec.values[coupled[force]];
        let report = exec.step_implicit(h, &settings, &mut state).unwrap();
        assert!(report.converged, "step {step} converges");
        exec.push_history();
        let mut read = |name: &str| exec.float_value(name).unwrap();
        let (x1, v1, a1) = (read("mass1.x"), read("mass1.v"), read("mass1.a"));
        let (x2, v2, a2) = (read("mass2.x"), read("mass2.v"), read("mass2.a"));
        let end = read("mass1.F");
        let middle = report.middle[half_index];
        let law = C * (x2 - x1) + D * (v2 - v1);
        let law_rate = C * (v2 - v1) + D * (a2 - a1);
        // The first step has one past value only, so it uses L: slope 2 (u* - m) / H.
        let slope = if step == 0 {
            2.0 * (end - middle) / h
        } else {
            (start - 4.0 * middle + 3.0 * end) / h
        };
        assert!(
            (end - law).abs() <= 1e-8 * (1.0 + law.abs()),
            "step {step}: g = {} (force {end}, law {law})",
            end - law
        );
        assert!(
            (slope - law_rate).abs() <= 1e-6 * (1.0 + law_rate.abs()),
            "step {step}: g' = {} (slope {slope}, law rate {law_rate})",
            slope - law_rate
        );
    }
}

#[test]
fn half_step_values_without_the_extension_are_refused() {
    let mut system = extended(Decomposition::ForceForce, 1, 1e-3, 0.01);
    system.experiment.corrector.extension = Extension::None;
    let error = try_run(&system, &[]).unwrap_err();
    assert!(
        error.contains("halfStep needs the extended implicit coupling")
            && error.contains("spring.F1 -> mass1.F"),
        "{error}"
    );
}

#[test]
fn the_extension_without_half_step_values_is_refused() {
    let mut system = extended(Decomposition::ForceForce, 1, 1e-3, 0.01);
    for c in &mut system.connections {
        c.half_step = false;
    }
    let error = try_run(&system, &[]).unwrap_err();
    assert!(
        error.contains("no connection is marked halfStep"),
        "{error}"
    );
}

#[test]
fn a_half_step_source_without_output_derivatives_is_named() {
    // The Feedthrough FMU passes a value on but offers no output derivatives, so the derivative
    // condition cannot be formed for a half-step value it drives.
    let mut system = two_mass(
        Decomposition::ForceForce,
        Algorithm::Implicit,
        1,
        1e-3,
        0.01,
    );
    system
        .components
        .push(component("relay", "Feedthrough", 2, &[]));
    system.connections.retain(|c| c.to.to_string() != "mass1.F");
    system
        .connections
        .push(connect("spring.F1", "relay.Float64_continuous_input"));
    let mut relayed = connect("relay.Float64_continuous_output", "mass1.F");
    relayed.half_step = true;
    system.connections.push(relayed);
    system.experiment.corrector.extension = Extension::Derivative;
    let error = try_run(&system, &[]).unwrap_err();
    assert!(
        error.contains("relay.Float64_continuous_output")
            && error.contains("component \"relay\" provides no output derivatives"),
        "{error}"
    );
}
