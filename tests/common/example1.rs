//! The linear two-mass oscillator of the variable-order paper's Example 1 (no contact, no
//! cubic terms), force/force, with its exact solution: the setting of the local-error studies.

use cosimo::master::execution::{Execution, RunOptions};
use cosimo::settings::{Algorithm, AlgorithmKind, Experiment};
use cosimo::system::System;
use nalgebra::{Matrix4, Vector4};

use super::systems::{component, connect};

pub const M1: f64 = 50.0;
pub const M2: f64 = 1.0;
pub const C1: f64 = 1e5;
pub const C2: f64 = 1e3;
pub const CC: f64 = 1e5;
pub const Z0: [f64; 4] = [-2.0, 100.0, 0.0, -200.0];

pub fn exact(t: f64) -> [f64; 4] {
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
pub fn coupling(t: f64) -> Vec<f64> {
    let [x1, v1, x2, v2] = exact(t);
    let force = CC * (x2 - x1);
    vec![x1, v1, x2, v2, force, -force]
}

pub fn system(order: u8, h: f64) -> System {
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
            algorithm: Algorithm::with_order(AlgorithmKind::Jacobi, order)
                .expect("an algorithm with an order"),
            ..Experiment::default()
        },
    }
}

/// An execution at t = 0 on exact states, with exact coupling values at -H, ..., -(k + extra)H
/// (ExLocal and ExMilne extrapolate with degree k + 1 and need one point more).
pub fn from_exact_data(order: u8, h: f64, extra: usize) -> Execution {
    let mut exec =
        Execution::instantiate(&system(order, h), &RunOptions::default()).expect("instantiates");
    exec.initialize().expect("initializes");
    let past: Vec<(f64, Vec<f64>)> = (1..=usize::from(order) + extra)
        .rev()
        .map(|j| {
            let t = -(j as f64) * h;
            (t, coupling(t))
        })
        .collect();
    exec.seed_history(&past).expect("history");
    exec
}
