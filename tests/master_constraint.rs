//! Constraint coupling through the real master (Meyer et al. 2018, Sect. 4.1): two force-driven
//! oscillators joined by a rigid link x2 - x1 = 0, the multiplier as their coupling force. The
//! index-1 approach converges globally with order 5 (k = 2) and 6 (k = 3), locally with 6 and 7,
//! and keeps the residuals on all three levels at round-off at the macro points; Baumgarte
//! stabilisation, the baseline, converges with order 1.

mod common;

use common::oscillator_position;
use common::systems::{component, fitted_order};
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::settings::constraint::{
    ConstraintCoupling, ConstraintMethod, DrivenForce, InterfacePoint,
};
use cosimo::settings::{Algorithm, Experiment};
use cosimo::system::System;

const M1: f64 = 1.0;
const M2: f64 = 2.0;
const C: f64 = 1000.0;
const D: f64 = 10.0;
const V0: f64 = 100.0;

fn coupling(method: ConstraintMethod) -> ConstraintCoupling {
    let point = |m: &str| InterfacePoint {
        position: format!("{m}.x"),
        velocity: format!("{m}.v"),
        acceleration: format!("{m}.a"),
    };
    ConstraintCoupling {
        points: vec![point("mass1"), point("mass2")],
        equations: vec![vec![(-1.0, 0), (1.0, 1)]],
        forces: vec![
            DrivenForce {
                input: "mass1.F".into(),
                terms: vec![(1.0, 0)],
            },
            DrivenForce {
                input: "mass2.F".into(),
                terms: vec![(-1.0, 0)],
            },
        ],
        method,
    }
}

fn system(method: ConstraintMethod, h: f64, stop: f64) -> System {
    system_from(method, h, stop, (0.0, V0))
}

/// The system started from the (consistent) state (x, v) of both masses.
fn system_from(method: ConstraintMethod, h: f64, stop: f64, (x0, v0): (f64, f64)) -> System {
    let mass = |name: &str, version: u8, m: f64| {
        component(
            name,
            "Oscillator",
            version,
            &[("m", m), ("c", C), ("d", D), ("x0", x0), ("v0", v0)],
        )
    };
    System {
        components: vec![mass("mass1", 2, M1), mass("mass2", 3, M2)],
        connections: vec![],
        experiment: Experiment {
            stop,
            step: h,
            output_interval: Some(0.1f64.min(stop)),
            algorithm: Algorithm::Constraint(coupling(method)),
            ..Experiment::default()
        },
    }
}

/// Position and velocity of the monolithic solution at t (matrix exponential).
fn exact_state(t: f64) -> (f64, f64) {
    let a = nalgebra::Matrix2::new(0.0, 1.0, -2.0 * C / (M1 + M2), -2.0 * D / (M1 + M2));
    let z = (a * t).exp() * nalgebra::Vector2::new(0.0, V0);
    (z[0], z[1])
}

/// The monolithic solution: one mass m1 + m2 on both springs and dampers.
fn exact(t: f64) -> f64 {
    oscillator_position(M1 + M2, 2.0 * C, 2.0 * D, 0.0, 0.0, V0, t)
}

fn index1(order: u8) -> ConstraintMethod {
    ConstraintMethod::Index1 {
        order,
        newton_iterations: 1,
    }
}

/// Largest |x1 - x_exact| over the output grid up to 1 s.
fn global_error(method: ConstraintMethod, h: f64) -> f64 {
    let sys = system(method, h, 1.0);
    let (table, _) = common::systems::run(&sys, &["mass1.x"]);
    table
        .time()
        .iter()
        .zip(table.values(0))
        .map(|(&t, x)| (x - exact(t)).abs())
        .fold(0.0, f64::max)
}

#[test]
fn the_initial_multiplier_is_consistent() {
    let sys = system(index1(3), 1e-2, 1.0);
    let mut exec = Execution::instantiate(&sys, &RunOptions::default()).unwrap();
    exec.initialize().unwrap();
    let Algorithm::Constraint(coupling) = sys.experiment.algorithm.clone() else {
        panic!("a constraint system")
    };
    let (state, _) = exec.start_constraints_public(&coupling).unwrap();
    // Eq. 3: lambda_0 = m1 m2 / (m1 + m2) (d1/m1 - d2/m2) v0 = 1000 / 3 N.
    let lambda = Execution::multipliers(&state)[0];
    assert!((lambda - 1000.0 / 3.0).abs() < 1e-6, "{lambda}");
}

#[test]
fn index1_global_error_converges_with_order_5_and_6() {
    let steps = [2.5e-2, 1.25e-2, 6.25e-3];
    for (order, expected) in [(2u8, 5.0), (3, 6.0)] {
        let errors: Vec<f64> = steps
            .iter()
            .map(|&h| global_error(index1(order), h))
            .collect();
        let slope = fitted_order(&steps, &errors);
        eprintln!("index-1 k = {order}: global errors {errors:?}, fitted order {slope:.3}");
        assert!(
            (slope - expected).abs() < 0.3,
            "k = {order}: global order {slope:.3}, expected {expected}"
        );
    }
}

#[test]
fn index1_local_error_converges_with_order_6_and_7() {
    // Each order's window above the round-off floor of one step (about 1e-12 here).
    for (order, expected, steps) in [
        (2u8, 6.0, &[1e-2, 5e-3, 2.5e-3][..]),
        (3, 7.0, &[4e-2, 2e-2, 1e-2, 5e-3][..]),
    ] {
        let errors: Vec<f64> = steps
            .iter()
            .map(|&h| {
                // One step from the exact state at a generic time (t = 0 is special: x = 0).
                let t0 = 0.3;
                let sys = system_from(index1(order), h, h, exact_state(t0));
                let (table, _) = common::systems::run(&sys, &["mass1.x"]);
                let last = table.time().len() - 1;
                (table.values(0)[last] - exact_state(t0 + h).0).abs()
            })
            .collect();
        let slope = fitted_order(steps, &errors);
        eprintln!("index-1 k = {order}: local errors {errors:?}, fitted order {slope:.3}");
        assert!(
            (slope - expected).abs() < 0.3,
            "k = {order}: local order {slope:.3}, expected {expected}"
        );
    }
}

#[test]
fn index1_residuals_vanish_at_the_macro_points() {
    for order in [2u8, 3] {
        let sys = system(index1(order), 1e-2, 1.0);
        let (table, _) = common::systems::run(
            &sys,
            &[
                "mass1.x", "mass2.x", "mass1.v", "mass2.v", "mass1.a", "mass2.a",
            ],
        );
        let column = |name: &str| table.values(table.column(name).expect("recorded"));
        for (row, &t) in table.time().iter().enumerate() {
            for (level, (variable, scale)) in [("x", 1.0), ("v", 100.0), ("a", 1e5)]
                .into_iter()
                .enumerate()
            {
                let r = column(&format!("mass2.{variable}"))[row]
                    - column(&format!("mass1.{variable}"))[row];
                assert!(
                    r.abs() < 1e-10 * scale,
                    "k = {order}, t = {t}: residual on level {level} = {r:e}"
                );
            }
        }
    }
}

#[test]
fn baumgarte_converges_and_index1_is_far_more_accurate() {
    let baumgarte = ConstraintMethod::Baumgarte {
        alpha: 50.0,
        beta: 50.0,
        corrector: true,
    };
    let steps = [4e-3, 2e-3, 1e-3];
    let errors: Vec<f64> = steps.iter().map(|&h| global_error(baumgarte, h)).collect();
    let slope = fitted_order(&steps, &errors);
    eprintln!("Baumgarte with corrector: global errors {errors:?}, fitted order {slope:.3}");
    assert!(slope > 0.7, "Baumgarte converges: order {slope:.3}");
    let index1 = global_error(index1(2), 4e-3);
    assert!(
        index1 < 1e-3 * errors[0],
        "index-1 {index1:e} vs Baumgarte {:e} at H = 4e-3",
        errors[0]
    );
}

#[test]
fn multipliers_from_directional_derivatives_match_finite_differences_with_fewer_calls() {
    // The consistent multipliers (start) and Baumgarte's (every point) solve equations affine in
    // lambda through the accelerations' direct feedthrough: from the FMUs' directional
    // derivatives where they provide them, by finite differences of set / get where not. The
    // Oscillator copies below claim no directional derivatives, so the master must difference.
    let baumgarte = ConstraintMethod::Baumgarte {
        alpha: 50.0,
        beta: 50.0,
        corrector: true,
    };
    let with_derivatives = system(baumgarte, 2e-3, 0.5);
    let without = [
        common::unpacked_with_edit(
            "Oscillator",
            2,
            "providesDirectionalDerivative=\"true\"",
            "providesDirectionalDerivative=\"false\"",
        ),
        common::unpacked_with_edit(
            "Oscillator",
            3,
            "providesDirectionalDerivatives=\"true\"",
            "providesDirectionalDerivatives=\"false\"",
        ),
    ];
    let mut differenced = with_derivatives.clone();
    for (component, dir) in differenced.components.iter_mut().zip(&without) {
        component.fmu = dir.path().to_path_buf();
    }
    let (a, stats_a) = common::systems::run(&with_derivatives, &["mass1.x", "mass2.x"]);
    let (b, stats_b) = common::systems::run(&differenced, &["mass1.x", "mass2.x"]);
    let deviation = (0..2)
        .flat_map(|c| {
            a.values(c)
                .iter()
                .zip(b.values(c))
                .map(|(x, y)| (x - y).abs())
        })
        .fold(0.0, f64::max);
    eprintln!(
        "directional derivatives: {} FMI calls, finite differences: {}, max deviation {deviation:e} m",
        stats_a.fmi_calls, stats_b.fmi_calls
    );
    // Linear accelerations: both Jacobians are exact up to the differences' rounding.
    assert!(deviation < 1e-9, "deviation {deviation:e} m");
    assert!(
        stats_a.fmi_calls < stats_b.fmi_calls,
        "{} vs {} FMI calls",
        stats_a.fmi_calls,
        stats_b.fmi_calls
    );
}

/// Two rods (m = 1 kg, l = 1 m, J = m l^2 / 12), link 1 about the origin, link 2 pinned to
/// link 1's end; angles from +x, gravity along -y. Lagrange's equations, integrated by RK4.
fn double_pendulum(t_end: f64, dt: f64, every: usize) -> Vec<(f64, f64, f64)> {
    let (m, l, g) = (1.0f64, 1.0f64, 9.81f64);
    let j = m * l * l / 12.0;
    let k = m * l * l / 2.0;
    let f = |y: [f64; 4]| -> [f64; 4] {
        let (p1, p2, w1, w2) = (y[0], y[1], y[2], y[3]);
        let m11 = m * l * l / 4.0 + j + m * l * l;
        let m12 = k * (p1 - p2).cos();
        let m22 = m * l * l / 4.0 + j;
        let r1 = -k * (p1 - p2).sin() * w2 * w2 - (m * l / 2.0 + m * l) * g * p1.cos();
        let r2 = k * (p1 - p2).sin() * w1 * w1 - m * g * l / 2.0 * p2.cos();
        let det = m11 * m22 - m12 * m12;
        [
            w1,
            w2,
            (m22 * r1 - m12 * r2) / det,
            (m11 * r2 - m12 * r1) / det,
        ]
    };
    let mut y = [
        std::f64::consts::FRAC_PI_4,
        -std::f64::consts::FRAC_PI_4,
        0.0,
        0.0,
    ];
    let n = (t_end / dt).round() as usize;
    let mut out = vec![(0.0, y[0], y[1])];
    for step in 1..=n {
        let k1 = f(y);
        let add = |a: [f64; 4], b: [f64; 4], s: f64| {
            [
                a[0] + s * b[0],
                a[1] + s * b[1],
                a[2] + s * b[2],
                a[3] + s * b[3],
            ]
        };
        let k2 = f(add(y, k1, dt / 2.0));
        let k3 = f(add(y, k2, dt / 2.0));
        let k4 = f(add(y, k3, dt));
        for i in 0..4 {
            y[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
        if step % every == 0 {
            out.push((step as f64 * dt, y[0], y[1]));
        }
    }
    out
}

fn pendulum_system(order: u8, h: f64, stop: f64, output: f64) -> System {
    let link = |name: &str, version: u8, grounded: bool, phi0: f64| cosimo::system::Component {
        name: name.into(),
        fmu: fmu_pack::fmu_path("PendulumLink", version),
        start_values: vec![
            ("grounded".into(), grounded.to_string()),
            ("phi0".into(), phi0.to_string()),
        ],
        sub_steps: 1,
        isolate: None,
        call_timeout: None,
        worker_group: None,
        interface: None,
        rank: None,
    };
    let point = |m: &str| InterfacePoint {
        position: format!("{m}.p{{}}"),
        velocity: format!("{m}.v{{}}"),
        acceleration: format!("{m}.a{{}}"),
    };
    let axis = |p: &InterfacePoint, a: &str| InterfacePoint {
        position: p.position.replace("{}", a),
        velocity: p.velocity.replace("{}", a),
        acceleration: p.acceleration.replace("{}", a),
    };
    let (l1, l2) = (point("link1"), point("link2"));
    System {
        components: vec![
            link("link1", 2, true, std::f64::consts::FRAC_PI_4),
            link("link2", 3, false, -std::f64::consts::FRAC_PI_4),
        ],
        connections: vec![],
        experiment: Experiment {
            stop,
            step: h,
            output_interval: Some(output),
            algorithm: Algorithm::Constraint(ConstraintCoupling {
                // Points 0, 1: link 1's end (x, y); 2, 3: link 2's start (x, y).
                points: vec![
                    axis(&l1, "x"),
                    axis(&l1, "y"),
                    axis(&l2, "x"),
                    axis(&l2, "y"),
                ],
                equations: vec![vec![(1.0, 2), (-1.0, 0)], vec![(1.0, 3), (-1.0, 1)]],
                // lambda: the force link 1 exerts on link 2 at the joint.
                forces: vec![
                    DrivenForce {
                        input: "link2.Fx".into(),
                        terms: vec![(1.0, 0)],
                    },
                    DrivenForce {
                        input: "link2.Fy".into(),
                        terms: vec![(1.0, 1)],
                    },
                    DrivenForce {
                        input: "link1.Fx".into(),
                        terms: vec![(-1.0, 0)],
                    },
                    DrivenForce {
                        input: "link1.Fy".into(),
                        terms: vec![(-1.0, 1)],
                    },
                ],
                method: ConstraintMethod::Index1 {
                    order,
                    newton_iterations: 1,
                },
            }),
            ..Experiment::default()
        },
    }
}

/// Largest angle error of both links against the monolithic reference over the output grid.
fn pendulum_error(order: u8, h: f64, stop: f64) -> f64 {
    let output: f64 = 0.1;
    let reference = double_pendulum(stop, 1e-5, (output / 1e-5).round() as usize);
    let (table, _) = common::systems::run(
        &pendulum_system(order, h, stop, output),
        &["link1.phi", "link2.phi"],
    );
    table
        .time()
        .iter()
        .enumerate()
        .map(|(row, &t)| {
            let r = reference[(t / output).round() as usize];
            assert!((r.0 - t).abs() < 1e-9);
            (table.values(0)[row] - r.1)
                .abs()
                .max((table.values(1)[row] - r.2).abs())
        })
        .fold(0.0, f64::max)
}

#[test]
fn the_double_pendulum_agrees_with_the_monolithic_reference_and_converges() {
    // H = 1e-2 (the paper's time plots): the angles within 1e-6 rad over the first second
    // (over 2 s: k = 2 6.6e-6 rad, k = 3 3.2e-8 rad).
    // Pinned to 5 %, measured on this master: 5.56e-7 rad (k = 2) and 1.02e-8 rad (k = 3).
    for (order, pinned) in [(2u8, 5.5625e-7), (3, 1.0189e-8)] {
        let error = pendulum_error(order, 1e-2, 1.0);
        eprintln!("double pendulum, k = {order}, H = 1e-2: angle error {error:e} rad");
        assert!(error < 1e-6, "k = {order}: {error:e}");
        assert!(
            (error / pinned - 1.0).abs() < 0.05,
            "k = {order}: {error:e}, pinned {pinned:e}"
        );
    }
    // Global order 5 for k = 2 above the integrator's floor: fitted 4.78 over these steps.
    let steps = [2e-2, 1e-2, 5e-3];
    let errors: Vec<f64> = steps.iter().map(|&h| pendulum_error(2, h, 1.0)).collect();
    let slope = fitted_order(&steps, &errors);
    eprintln!("double pendulum, k = 2: errors {errors:?}, fitted order {slope:.3}");
    assert!((slope - 5.0).abs() < 0.3, "global order {slope:.3}");
}
