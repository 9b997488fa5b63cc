//! The five error estimators of the variable-order paper against the true local error of one
//! macro step from exact data (the linear two-mass oscillator of Example 1): each estimate
//! divided by the error it estimates tends to 1 as H shrinks.

mod common;

use common::example1::*;
use cosimo::master::implicit::{ImplicitSettings, ImplicitState};
use cosimo::settings::control::{Estimator, StepControl};

/// Estimate / true error for the dominant variable, at step h.
fn ratio_at(estimator: Estimator, order: u8, h: f64) -> f64 {
    let mut exec = from_exact_data(order, h, 1);
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
