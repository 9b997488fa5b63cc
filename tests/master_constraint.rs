//! Constraint coupling through the real master (Meyer et al. 2018, Sect. 4.1): two force-driven
//! oscillators joined by a rigid link x2 - x1 = 0, the multiplier as their coupling force. The
//! index-1 approach converges globally with order 5 (k = 2) and 6 (k = 3), locally with 6 and 7,
//! and keeps the residuals on all three levels at round-off at the macro points; Baumgarte
//! stabilisation, the baseline, converges with order 1.

mod common;

use common::oscillator_position;
use common::systems::{component, fitted_order};
use cosimo::master::constraint::{
    ConstraintCoupling, ConstraintMethod, DrivenForce, InterfacePoint,
};
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::system::{Algorithm, Experiment, System};

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
            algorithm: Algorithm::Constraint,
            constraints: Some(coupling(method)),
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
    let coupling = sys.experiment.constraints.clone().unwrap();
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
