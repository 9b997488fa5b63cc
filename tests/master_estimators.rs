//! The five error estimators of the variable-order paper against the true local error of one
//! macro step from exact data (the linear two-mass oscillator of Example 1): each estimate
//! divided by the error it estimates tends to 1 as H shrinks.

mod common;

use common::systems::*;
use cosimo::master::control::{Estimator, StepControl};
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::master::implicit::{ImplicitSettings, ImplicitState};
use cosimo::system::{Algorithm, Experiment, System};
use nalgebra::{Matrix4, Vector4};

const M1: f64 = 50.0;
const M2: f64 = 1.0;
const C1: f64 = 1e5;
const C2: f64 = 1e3;
const CC: f64 = 1e5;
const Z0: [f64; 4] = [-2.0, 100.0, 0.0, -200.0];

fn exact(t: f64) -> [f64; 4] {
    let a = Matrix4::new(
        0.0,
        1.0,
        0.0,
        0.0,
        -(C1 + CC) / M1,
        0.0,
        CC / M1,
        0.0,
        0.0,
        0.0,
        0.0,
        1.0,
        CC / M2,
        0.0,
        -(C2 + CC) / M2,
        0.0,
    );
    let z = (a * t).exp() * Vector4::from(Z0);
    [z[0], z[1], z[2], z[3]]
}

/// Exact coupling values at t, in the system's connection order.
fn coupling(t: f64) -> Vec<f64> {
    let [x1, v1, x2, v2] = exact(t);
    let force = CC * (x2 - x1);
    vec![x1, v1, x2, v2, force, -force]
}

fn system(order: u8, h: f64) -> System {
    System {
        components: vec![
            component(
                "mass1",
                "Oscillator",
                2,
                &[
                    ("m", M1),
                    ("c", C1),
                    ("d", 0.0),
                    ("x0", Z0[0]),
                    ("v0", Z0[1]),
                ],
            ),
            component(
                "spring",
                "CouplingSpring",
                2,
                &[("c1", CC), ("d1", 0.0), ("c3", 0.0), ("d3", 0.0)],
            ),
            component(
                "mass2",
                "Oscillator",
                3,
                &[
                    ("m", M2),
                    ("c", C2),
                    ("d", 0.0),
                    ("x0", Z0[2]),
                    ("v0", Z0[3]),
                ],
            ),
        ],
        connections: vec![
            connect("mass1.x", "spring.x1"),
            connect("mass1.v", "spring.v1"),
            connect("mass2.x", "spring.x2"),
            connect("mass2.v", "spring.v2"),
            connect("spring.F1", "mass1.F"),
            connect("spring.F2", "mass2.F"),
        ],
        experiment: Experiment {
            stop: 1.0,
            step: h,
            algorithm: Algorithm::Jacobi,
            extrapolation_order: order,
            ..Experiment::default()
        },
    }
}

/// An execution at t = 0 on exact states, with exact coupling values at -H, ..., -kH.
fn from_exact_data(order: u8, h: f64) -> Execution {
    let mut exec =
        Execution::instantiate(&system(order, h), &RunOptions::default()).expect("instantiates");
    exec.initialize().expect("initializes");
    let past: Vec<(f64, Vec<f64>)> = (1..=usize::from(order))
        .rev()
        .map(|j| {
            let t = -(j as f64) * h;
            (t, coupling(t))
        })
        .collect();
    exec.seed_history(&past).expect("history");
    exec
}

/// Seed one more past point than the order needs (ExLocal and ExMilne use degree k + 1).
fn with_history(order: u8, h: f64) -> Execution {
    let mut exec =
        Execution::instantiate(&system(order, h), &RunOptions::default()).expect("instantiates");
    exec.initialize().expect("initializes");
    let past: Vec<(f64, Vec<f64>)> = (1..=usize::from(order) + 1)
        .rev()
        .map(|j| {
            let t = -(j as f64) * h;
            (t, coupling(t))
        })
        .collect();
    exec.seed_history(&past).expect("history");
    exec
}

/// Estimate / true error for the dominant variable, at step h.
fn ratio_at(estimator: Estimator, order: u8, h: f64) -> f64 {
    let mut exec = with_history(order, h);
    let control = StepControl {
        estimator,
        positions: vec!["mass1.x".into(), "mass2.x".into()],
        velocities: vec!["mass1.v".into(), "mass2.v".into()],
        ..StepControl::default()
    };
    let positions = exec.set_up_probes(&control).expect("probes");
    let implicit = ImplicitSettings {
        abs_tolerance: 1e-14,
        rel_tolerance: 1e-13,
        max_iterations: 10,
        ..ImplicitSettings::default()
    };
    let coupled = exec.coupled_connections();
    let predicted = exec.extrapolate_to(h, &coupled);
    let attempt = exec
        .attempt(
            &control,
            positions,
            usize::from(order),
            h,
            &implicit,
            &mut ImplicitState::default(),
        )
        .expect("attempt");
    assert!(!attempt.corrector_failed);
    let truth: Vec<f64> = if estimator.is_state_based() {
        // The error of the solution the step keeps (explicit degree k, or the corrected one).
        let z = exact(h);
        let got = ["mass1.x", "mass2.x", "mass1.v", "mass2.v"]
            .map(|n| exec.float_value(n).expect("readable"));
        vec![
            (got[0] - z[0]).abs(),
            (got[1] - z[2]).abs(),
            (got[2] - z[1]).abs(),
            (got[3] - z[3]).abs(),
        ]
    } else {
        // The error of the predicted coupling values.
        let exact_u = coupling(h);
        coupled
            .iter()
            .zip(&predicted)
            .map(|(&c, p)| (p - exact_u[c]).abs())
            .collect()
    };
    // Judge the variable with the largest true error (the others may sit near rounding).
    let dominant = (0..truth.len())
        .max_by(|&a, &b| truth[a].total_cmp(&truth[b]))
        .expect("variables");
    attempt.estimates[dominant] / truth[dominant]
}

fn check(estimator: Estimator) {
    for order in 0..=2u8 {
        let ratios: Vec<f64> = [4e-5, 2e-5, 1e-5]
            .iter()
            .map(|&h| ratio_at(estimator, order, h))
            .collect();
        eprintln!("{estimator:?} k = {order}: estimate / true error = {ratios:?}");
        let last = ratios[ratios.len() - 1];
        assert!(
            (last - 1.0).abs() < 0.05,
            "{estimator:?} k = {order}: ratio {last} at the smallest H (all: {ratios:?})"
        );
        assert!(
            (last - 1.0).abs() <= (ratios[0] - 1.0).abs() + 1e-3,
            "{estimator:?} k = {order}: the ratio should approach 1 as H shrinks: {ratios:?}"
        );
    }
}

#[test]
fn ex_local_estimates_the_local_error() {
    check(Estimator::ExLocal);
}

#[test]
fn ex_milne_estimates_the_local_error() {
    check(Estimator::ExMilne);
}

#[test]
fn ex_s_local_estimates_the_predicted_coupling_error() {
    check(Estimator::ExSLocal);
}

#[test]
fn im_milne_estimates_the_local_error() {
    check(Estimator::ImMilne);
}

#[test]
fn im_s_local_estimates_the_predicted_coupling_error() {
    check(Estimator::ImSLocal);
}
