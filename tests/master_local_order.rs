//! One macro step from exact data on the linear two-mass oscillator of the variable-order
//! paper's Example 1 (no contact, no cubic terms): the local error of positions is O(H^(k+3))
//! and of velocities O(H^(k+2)), for the explicit and the implicit scheme, k = 0, 1, 2 (Eq. 12);
//! the implicit corrector converges in one Newton iteration on this linear model.

mod common;

use common::example1::*;
use common::systems::fitted_order;
use cosimo::master::execution::Execution;
use cosimo::master::implicit::{ImplicitSettings, ImplicitState};

const STEPS: [f64; 4] = [2e-4, 1e-4, 5e-5, 2.5e-5];

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
            let mut exec = from_exact_data(order, h, 0);
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
        let mut exec = from_exact_data(order, h, 0);
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
