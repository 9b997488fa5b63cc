//! One macro step from exact data on the linear two-mass oscillator of the variable-order
//! paper's Example 1 (no contact, no cubic terms): the local error of positions is O(H^(k+3))
//! and of velocities O(H^(k+2)), for the explicit and the implicit scheme, k = 0, 1, 2 (Eq. 12);
//! the implicit corrector converges in one Newton iteration on this linear model.

mod common;

use common::systems::*;
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
const STEPS: [f64; 4] = [2e-4, 1e-4, 5e-5, 2.5e-5];

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

/// (position error, velocity error) after one step: the largest over both masses.
fn local_errors(exec: &mut Execution, h: f64) -> (f64, f64) {
    let z = exact(h);
    let got = ["mass1.x", "mass1.v", "mass2.x", "mass2.v"]
        .map(|n| exec.float_value(n).expect("readable"));
    let pos = (got[0] - z[0]).abs().max((got[2] - z[2]).abs());
    let vel = (got[1] - z[1]).abs().max((got[3] - z[3]).abs());
    (pos, vel)
}

fn check_orders(implicit: bool) {
    for order in 0..=2u8 {
        let mut pos = Vec::new();
        let mut vel = Vec::new();
        for &h in &STEPS {
            let mut exec = from_exact_data(order, h);
            if implicit {
                let settings = ImplicitSettings {
                    abs_tolerance: 1e-14,
                    rel_tolerance: 1e-12,
                    ..ImplicitSettings::default()
                };
                let step = exec
                    .step_implicit(h, &settings, &mut ImplicitState::default())
                    .expect("steps");
                assert!(step.converged);
            } else {
                exec.step(h).expect("steps");
            }
            let (p, v) = local_errors(&mut exec, h);
            pos.push(p);
            vel.push(v);
        }
        let (sp, sv) = (fitted_order(&STEPS, &pos), fitted_order(&STEPS, &vel));
        let scheme = if implicit { "implicit" } else { "explicit" };
        eprintln!("{scheme} k = {order}: position errors {pos:?} slope {sp:.3}; velocity errors {vel:?} slope {sv:.3}");
        let k = f64::from(order);
        assert!(
            (sp - (k + 3.0)).abs() < 0.2,
            "{scheme} k = {order}: position slope {sp:.3}, expected {}",
            k + 3.0
        );
        assert!(
            (sv - (k + 2.0)).abs() < 0.2,
            "{scheme} k = {order}: velocity slope {sv:.3}, expected {}",
            k + 2.0
        );
    }
}

#[test]
fn explicit_local_errors_have_orders_k_plus_3_and_k_plus_2() {
    check_orders(false);
}

#[test]
fn implicit_local_errors_have_orders_k_plus_3_and_k_plus_2() {
    check_orders(true);
}

#[test]
fn implicit_corrector_converges_in_one_newton_iteration_on_the_linear_model() {
    for order in 0..=2u8 {
        let h = 1e-4;
        let mut exec = from_exact_data(order, h);
        let settings = ImplicitSettings {
            abs_tolerance: 1e-12,
            rel_tolerance: 1e-10,
            ..ImplicitSettings::default()
        };
        let step = exec
            .step_implicit(h, &settings, &mut ImplicitState::default())
            .expect("steps");
        assert!(step.converged, "k = {order}");
        assert_eq!(
            step.iterations, 1,
            "k = {order}: a finite-difference Jacobian is exact for a linear system"
        );
        assert_eq!(
            step.jacobian_steps, 6,
            "one repeated macro step per coupling variable"
        );
    }
}
