//! The extended implicit coupling (the stability thesis, Sect. 3.4) through the real master on
//! the two-mass oscillator: the half-step values satisfy the coupling condition and its time
//! derivative (D) or its integral over the step (I) at every communication point; both
//! extensions converge in one Newton iteration per step for all three decompositions, with
//! order k + 1, except the integral-extended force/force scheme, whose orders follow the
//! thesis' pattern (Sect. 3.5.4: one order for k = 0, a common higher one for k = 1 and 2);
//! misuse is refused with messages that say what to change. Also the Newton driver both
//! implicit schemes share: a reused Jacobian is kept while it converges and replaced when stale.

mod common;

use common::systems::*;
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::master::implicit::{Extension, ImplicitState};
use cosimo::settings::AlgorithmKind;
use cosimo::system::System;

const STOP: f64 = 0.5;
const OUTPUT: f64 = 0.02;
const STEPS: [f64; 3] = [2e-3, 1e-3, 5e-4];

/// The thesis' variants (see `thesis_variant`): D with half-step forces (F/F), force and
/// velocity (F/D) or velocities (D/D); I with the forces, force and position, or positions.
fn extended(
    decomposition: Decomposition,
    extension: Extension,
    order: u8,
    step: f64,
    stop: f64,
) -> System {
    let mut system = two_mass(decomposition, AlgorithmKind::Implicit, order, step, stop);
    system
        .experiment
        .algorithm
        .corrector_mut()
        .expect("implicit")
        .extension = extension;
    thesis_variant(&mut system.connections, extension);
    system
}

fn global_error(
    decomposition: Decomposition,
    extension: Extension,
    order: u8,
    step: f64,
) -> (f64, u64) {
    let mut system = extended(decomposition, extension, order, step, STOP);
    system.experiment.output_interval = Some(OUTPUT);
    let (table, stats) = run(&system, &["mass1.x", "mass1.v", "mass2.x", "mass2.v"]);
    (two_mass_error(&table), stats.corrector_iterations)
}

/// The fitted global order for k = 0, 1, 2 matches `expected`, one Newton iteration per step.
fn check_convergence(decomposition: Decomposition, extension: Extension, expected: [f64; 3]) {
    for (order, expected) in (0..=2u8).zip(expected) {
        let runs: Vec<(f64, u64)> = STEPS
            .iter()
            .map(|&h| global_error(decomposition, extension, order, h))
            .collect();
        let errors: Vec<f64> = runs.iter().map(|r| r.0).collect();
        let slope = fitted_order(&STEPS, &errors);
        eprintln!(
            "{extension:?} {decomposition:?} k = {order}: errors {errors:?}, order {slope:.3}"
        );
        assert!(
            (slope - expected).abs() < 0.25,
            "{extension:?} {decomposition:?} k = {order}: fitted order {slope:.3}, expected {expected} ({errors:?})"
        );
        // Linear subsystems and a finite-difference Jacobian that is exact for them.
        for (&h, (_, iterations)) in STEPS.iter().zip(&runs) {
            assert_eq!(
                *iterations,
                (STOP / h).round() as u64,
                "{extension:?} {decomposition:?} k = {order}, H = {h}: one Newton iteration per macro step"
            );
        }
    }
}

#[test]
fn derivative_extended_force_force_converges_with_order_k_plus_one() {
    check_convergence(
        Decomposition::ForceForce,
        Extension::Derivative,
        [1.0, 2.0, 3.0],
    );
}

#[test]
fn derivative_extended_force_displacement_converges_with_order_k_plus_one() {
    check_convergence(
        Decomposition::ForceDisplacement,
        Extension::Derivative,
        [1.0, 2.0, 3.0],
    );
}

#[test]
fn derivative_extended_displacement_displacement_converges_with_order_k_plus_one() {
    check_convergence(
        Decomposition::DisplacementDisplacement,
        Extension::Derivative,
        [1.0, 2.0, 3.0],
    );
}

#[test]
fn integral_extended_force_force_has_one_order_for_k0_and_a_common_one_for_k1_and_k2() {
    // With the forces' integrals matched over every step the position errors cancel to higher
    // order: 2 for C, 4 for both L and Q.
    check_convergence(
        Decomposition::ForceForce,
        Extension::Integral,
        [2.0, 4.0, 4.0],
    );
}

#[test]
fn integral_extended_force_displacement_converges_with_order_k_plus_one() {
    check_convergence(
        Decomposition::ForceDisplacement,
        Extension::Integral,
        [1.0, 2.0, 3.0],
    );
}

#[test]
fn integral_extended_displacement_displacement_converges_with_order_k_plus_one() {
    check_convergence(
        Decomposition::DisplacementDisplacement,
        Extension::Integral,
        [1.0, 2.0, 3.0],
    );
}

/// The connection into mass1.F, and its position among the half-step values (`middle`).
fn mass1_force(exec: &Execution, system: &System) -> (usize, usize) {
    let force = system
        .connections
        .iter()
        .position(|c| c.to.to_string() == "mass1.F")
        .expect("mass1.F is connected");
    let half_index = exec
        .coupled_connections()
        .into_iter()
        .filter(|&c| system.connections[c].half_step)
        .position(|c| c == force)
        .expect("mass1.F is a half-step value");
    (force, half_index)
}

#[test]
fn the_half_step_force_meets_the_coupling_condition_and_its_derivative() {
    // F/F with Q (k = 2): after each step the spring force u* equals c (x2 - x1) + d (v2 - v1)
    // and the quadratic's slope at the new point, (u_N - 4 m + 3 u*) / H, equals
    // c (v2 - v1) + d (a2 - a1): the thesis' g = 0 and g' = 0 (Eq. 3.36). Mass 1 is an FMI 2
    // FMU and mass 2 an FMI 3 FMU, so both output-derivative paths are used.
    let h = 2e-3;
    let system = extended(Decomposition::ForceForce, Extension::Derivative, 2, h, 1.0);
    let mut exec = Execution::instantiate(&system, &RunOptions::default()).unwrap();
    exec.initialize().unwrap();
    let settings = *system.experiment.algorithm.corrector().expect("implicit");
    let mut state = ImplicitState::default();
    let (force, half_index) = mass1_force(&exec, &system);
    for step in 0..20 {
        let start = exec.values[force];
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
fn the_half_step_force_meets_the_coupling_condition_and_its_integral() {
    // F/F with Q (k = 2), I-extension: after each step the spring force u* equals
    // c (x2 - x1) + d (v2 - v1), and Simpson's rule on (u_N, m, u*) -- the integral of the
    // quadratic -- equals the impulse c (int x2 - int x1) + d (x2 - x1)|_N^N+1 from the
    // masses' integral outputs: the thesis' g = 0 and G = 0 (Eq. 3.57).
    let h = 2e-3;
    let system = extended(Decomposition::ForceForce, Extension::Integral, 2, h, 1.0);
    let mut exec = Execution::instantiate(&system, &RunOptions::default()).unwrap();
    exec.initialize().unwrap();
    let settings = *system.experiment.algorithm.corrector().expect("implicit");
    let mut state = ImplicitState::default();
    let (force, half_index) = mass1_force(&exec, &system);
    let read = |exec: &mut Execution, names: [&str; 4]| names.map(|n| exec.float_value(n).unwrap());
    let mut before = read(
        &mut exec,
        ["mass1.x", "mass1.x_int", "mass2.x", "mass2.x_int"],
    );
    for step in 0..20 {
        let start = exec.values[force];
        let report = exec.step_implicit(h, &settings, &mut state).unwrap();
        assert!(report.converged, "step {step} converges");
        exec.push_history();
        let after = read(
            &mut exec,
            ["mass1.x", "mass1.x_int", "mass2.x", "mass2.x_int"],
        );
        let [v1, v2, end] = ["mass1.v", "mass2.v", "mass1.F"].map(|n| exec.float_value(n).unwrap());
        let middle = report.middle[half_index];
        let law = C * (after[2] - after[0]) + D * (v2 - v1);
        let impulse = C * ((after[3] - before[3]) - (after[1] - before[1]))
            + D * ((after[2] - before[2]) - (after[0] - before[0]));
        // The first step has one past value only, so it uses L (trapezoids on both halves).
        let integral = if step == 0 {
            h * (start + 2.0 * middle + end) / 4.0
        } else {
            h * (start + 4.0 * middle + end) / 6.0
        };
        assert!(
            (end - law).abs() <= 1e-8 * (1.0 + law.abs()),
            "step {step}: g = {} (force {end}, law {law})",
            end - law
        );
        assert!(
            (integral - impulse).abs() <= 1e-9 * (1.0 + impulse.abs()),
            "step {step}: G = {} (integral {integral}, impulse {impulse})",
            integral - impulse
        );
        before = after;
    }
}

#[test]
fn an_integral_extended_source_without_its_integral_is_named() {
    let mut system = extended(
        Decomposition::ForceForce,
        Extension::Integral,
        1,
        1e-3,
        0.01,
    );
    for c in &mut system.connections {
        if c.from.to_string() == "mass1.x" {
            c.source_integral = None;
        }
    }
    let error = try_run(&system, &[]).unwrap_err();
    assert!(
        error.contains("integral over each macro step of mass1.x")
            && error.contains("mass1.x -> spring.x1 names no sourceIntegral"),
        "{error}"
    );
    let mut system = extended(
        Decomposition::ForceForce,
        Extension::Integral,
        1,
        1e-3,
        0.01,
    );
    system.connections[0].source_integral = Some("x_integral".into());
    let error = try_run(&system, &[]).unwrap_err();
    assert!(error.contains("x_integral"), "{error}");
}

#[test]
fn half_step_values_without_the_extension_are_refused() {
    let mut system = extended(
        Decomposition::ForceForce,
        Extension::Derivative,
        1,
        1e-3,
        0.01,
    );
    system
        .experiment
        .algorithm
        .corrector_mut()
        .expect("implicit")
        .extension = Extension::None;
    let error = try_run(&system, &[]).unwrap_err();
    assert!(
        error.contains("halfStep needs the extended implicit coupling")
            && error.contains("spring.F1 -> mass1.F"),
        "{error}"
    );
}

#[test]
fn the_extension_without_half_step_values_is_refused() {
    let mut system = extended(
        Decomposition::ForceForce,
        Extension::Derivative,
        1,
        1e-3,
        0.01,
    );
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
        AlgorithmKind::Implicit,
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
    system
        .experiment
        .algorithm
        .corrector_mut()
        .expect("implicit")
        .extension = Extension::Derivative;
    let error = try_run(&system, &[]).unwrap_err();
    assert!(
        error.contains("relay.Float64_continuous_output")
            && error.contains("component \"relay\" provides no output derivatives"),
        "{error}"
    );
}

#[test]
fn a_reused_jacobian_is_kept_while_it_converges_and_replaced_when_it_goes_stale() {
    // Linear two-mass oscillator, one Newton iteration allowed: at a fixed H the reused
    // interface Jacobian is exact, so only the first step computes one; after a change of H the
    // stale one misses the tolerance, and the step restarts from the predictor with a fresh
    // Jacobian that meets it -- for the original and for the extended scheme alike.
    for extension in [Extension::None, Extension::Derivative, Extension::Integral] {
        let system = extended(Decomposition::ForceForce, extension, 1, 1e-3, 1.0);
        let mut settings = *system.experiment.algorithm.corrector().expect("implicit");
        settings.reuse_jacobian = true;
        settings.max_iterations = 1;
        let mut exec = Execution::instantiate(&system, &RunOptions::default()).unwrap();
        exec.initialize().unwrap();
        let mut state = ImplicitState::default();
        let mut step = |exec: &mut Execution, h: f64| {
            let report = exec.step_implicit(h, &settings, &mut state).unwrap();
            assert!(report.converged, "{extension:?}, H = {h}");
            exec.push_history();
            (report.iterations, report.jacobian_steps)
        };
        let first = step(&mut exec, 1e-3);
        assert!(
            first.1 > 0,
            "{extension:?}: the first step computes a Jacobian"
        );
        for _ in 0..5 {
            assert_eq!(step(&mut exec, 1e-3), (1, 0), "{extension:?}: reused");
        }
        let changed = step(&mut exec, 5e-4);
        assert_eq!(
            changed,
            (2, first.1),
            "{extension:?}: one stale iteration, then a fresh Jacobian and one more"
        );
        assert_eq!(step(&mut exec, 5e-4), (1, 0), "{extension:?}: reused again");
    }
}
