//! Macro-step size and order control on the nonlinear contact oscillator of the variable-order
//! paper's Example 1 (ExSLocal, the paper's controller settings): the controller cuts H and k at
//! the contact, and reaches the accuracy of a fixed-step run with fewer macro steps than the best
//! fixed step that is as accurate.
//!
//! The reference is independent of the master: the monolithic model (both masses, the coupling
//! spring and the wall in one ODE) integrated in this test by Runge-Kutta 4 with step doubling,
//! the contact located as an event; the master's errors against it are pinned.

mod common;

use common::systems::*;
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::observe::run_system;
use cosimo::results::{CsvWriter, Table};
use cosimo::settings::control::{Estimator, StepControl};
use cosimo::settings::{Algorithm, Experiment, Explicit};
use cosimo::system::System;

/// One accepted step of the controller's trace: (end time, H, k).
type Step = (f64, f64, usize);

const STOP: f64 = 0.025;
const OUTPUT: f64 = 5e-4;
/// The window of the first contact of mass 1 with the wall (the monolithic reference locates it
/// at 16.783 ms).
const CONTACT: (f64, f64) = (0.0160, 0.0175);

fn example1(step: f64, order: u8, control: Option<StepControl>) -> System {
    System {
        components: vec![
            component(
                "m1",
                "ContactOscillator",
                2,
                &[
                    ("m", 50.0),
                    ("c", 1e5),
                    ("d", 0.0),
                    ("x0", -2.0),
                    ("v0", 100.0),
                ],
            ),
            component(
                "spring",
                "CouplingSpring",
                2,
                &[("c1", 1e5), ("c3", 1e5), ("d1", 0.0), ("d3", 1e-2)],
            ),
            component(
                "m2",
                "Oscillator",
                2,
                &[
                    ("m", 1.0),
                    ("c", 1e3),
                    ("d", 0.0),
                    ("x0", 0.0),
                    ("v0", -200.0),
                ],
            ),
        ],
        connections: vec![
            connect("m1.x", "spring.x1"),
            connect("m1.v", "spring.v1"),
            connect("m2.x", "spring.x2"),
            connect("m2.v", "spring.v2"),
            connect("spring.F1", "m1.F"),
            connect("spring.F2", "m2.F"),
        ],
        experiment: Experiment {
            stop: STOP,
            step,
            output_interval: Some(OUTPUT),
            algorithm: Algorithm::Jacobi(Explicit {
                extrapolation_order: order,
                control,
            }),
            ..Experiment::default()
        },
    }
}

fn simulate(system: &System) -> (Table, cosimo::master::RunStatistics) {
    let options = RunOptions {
        record: vec!["m1.x".into(), "m2.x".into()],
        ..RunOptions::default()
    };
    let mut exec = Execution::instantiate(system, &options).expect("instantiates");
    let mut writer = CsvWriter::new(
        Vec::new(),
        std::path::Path::new("memory.csv"),
        &exec.column_names(),
    )
    .unwrap();
    let stats = run_system(&mut exec, &mut writer, &mut |_| {}).expect("runs");
    let text = String::from_utf8(writer.into_inner()).unwrap();
    (
        Table::parse(&text, std::path::Path::new("memory.csv")).unwrap(),
        stats,
    )
}

/// Largest deviation of both positions (m1.x, m2.x) from the reference over the output grid.
fn error(result: &Table, reference: &[[f64; 4]]) -> f64 {
    assert_eq!(result.time().len(), reference.len());
    for (n, t) in result.time().iter().enumerate() {
        assert!((t - n as f64 * OUTPUT).abs() < 1e-12, "output time {t}");
    }
    [(0, 0), (1, 2)]
        .into_iter()
        .flat_map(|(column, state)| {
            result
                .values(column)
                .iter()
                .zip(reference)
                .map(move |(a, b)| (a - b[state]).abs())
        })
        .fold(0.0, f64::max)
}

/// Output points of the run: 0, OUTPUT, .., STOP.
const OUTPUTS: usize = 50;

/// The independent reference: Example 1 as ONE ODE (both masses, the coupling spring-damper
/// and the contact force in one right-hand side, y = (x1, v1, x2, v2)), integrated here by
/// classical Runge-Kutta 4 with step doubling (error estimate and local extrapolation to order
/// 5) -- not the FMUs' Dormand-Prince, not the master -- with the contact located as an event.
mod monolithic {
    /// Example 1's parameters (the system built by `example1`).
    const M1: f64 = 50.0;
    const C1: f64 = 1e5;
    const M2: f64 = 1.0;
    const C2: f64 = 1e3;
    const CC: f64 = 1e5;
    const CC3: f64 = 1e5;
    const DC3: f64 = 1e-2;
    const WALL_A: f64 = -1e-2;
    const WALL_B: f64 = 1e7;
    pub const START: [f64; 4] = [-2.0, 100.0, 0.0, -200.0];
    /// The contact event: x1 crosses -5 um, where the wall's force is 1e-2 N * e^-50 (2e-24
    /// N), nothing next to the springs; inside, the wall's time scale is nanoseconds.
    const CONTACT_X: f64 = -5e-6;
    /// Largest step inside the contact (it lasts some 1e-7 s).
    const CONTACT_STEP: f64 = 1e-10;

    fn rhs(y: &[f64; 4]) -> [f64; 4] {
        let [x1, v1, x2, v2] = *y;
        let (dx, dv) = (x2 - x1, v2 - v1);
        let spring = CC * dx + CC3 * dx.powi(3) + DC3 * dv.powi(3);
        let wall = WALL_A * (WALL_B * x1).exp();
        [
            v1,
            (-C1 * x1 + wall + spring) / M1,
            v2,
            (-C2 * x2 - spring) / M2,
        ]
    }

    fn rk4(y: &[f64; 4], h: f64) -> [f64; 4] {
        let add = |y: &[f64; 4], k: &[f64; 4], s: f64| std::array::from_fn(|i| y[i] + s * k[i]);
        let k1 = rhs(y);
        let k2 = rhs(&add(y, &k1, h / 2.0));
        let k3 = rhs(&add(y, &k2, h / 2.0));
        let k4 = rhs(&add(y, &k3, h));
        std::array::from_fn(|i| y[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
    }

    /// One step-doubling step: the extrapolated 5th-order state and its weighted error
    /// (tolerance `tol` relative, `tol` m and `tol` m/s absolute); infinite when not finite.
    fn step(y: &[f64; 4], h: f64, tol: f64) -> ([f64; 4], f64) {
        let full = rk4(y, h);
        let half = rk4(&rk4(y, h / 2.0), h / 2.0);
        let mut error: f64 = 0.0;
        let next = std::array::from_fn(|i| {
            let e = (half[i] - full[i]) / 15.0;
            error = error.max(e.abs() / (tol * (1.0 + y[i].abs())));
            half[i] + e
        });
        if !error.is_finite() || next.iter().any(|x: &f64| !x.is_finite()) {
            return (next, f64::INFINITY);
        }
        (next, error)
    }

    /// What a run found: the states at the output times, and the contacts as (entry, exit)
    /// times of x1 > CONTACT_X, each located to 1e-15 s.
    pub struct Reference {
        pub states: Vec<[f64; 4]>,
        pub contacts: Vec<(f64, f64)>,
        pub steps: usize,
    }

    /// Integrate from START over `outputs` times `interval` apart with tolerance `tol`.
    pub fn run(interval: f64, outputs: usize, tol: f64) -> Reference {
        let (mut t, mut y, mut h): (f64, [f64; 4], f64) = (0.0, START, 1e-7);
        let mut states = vec![y];
        let mut contacts: Vec<(f64, f64)> = Vec::new();
        let mut steps = 0;
        let inside = |y: &[f64; 4]| y[0] > CONTACT_X;
        for n in 1..=outputs {
            let target = n as f64 * interval;
            while t < target {
                let in_contact = inside(&y);
                let mut try_h = h.min(target - t);
                if in_contact {
                    try_h = try_h.min(CONTACT_STEP);
                }
                let (next, error) = step(&y, try_h, tol);
                if error > 1.0 {
                    h = try_h * (0.9 * error.powf(-0.2)).max(0.1);
                    continue;
                }
                if inside(&next) != in_contact {
                    // The event in this step: bisect the step length to where x1 = CONTACT_X.
                    let (mut low, mut high) = (0.0, try_h);
                    while high - low > 1e-15 {
                        let mid = 0.5 * (low + high);
                        if inside(&step(&y, mid, tol).0) == in_contact {
                            low = mid;
                        } else {
                            high = mid;
                        }
                    }
                    y = step(&y, high, tol).0;
                    t += high;
                    if in_contact {
                        if let Some(contact) = contacts.last_mut() {
                            contact.1 = t;
                        }
                    } else {
                        contacts.push((t, f64::NAN));
                    }
                    steps += 1;
                    continue;
                }
                y = next;
                t = if try_h == target - t {
                    target
                } else {
                    t + try_h
                };
                steps += 1;
                h = try_h * (0.9 * error.max(1e-10).powf(-0.2)).min(4.0);
            }
            states.push(y);
        }
        Reference {
            states,
            contacts,
            steps,
        }
    }
}

/// The reference at the output grid, with the tolerance the test uses (converged: see
/// `the_monolithic_reference_is_converged_and_meets_the_wall_inside_the_contact_window`).
fn reference() -> monolithic::Reference {
    monolithic::run(OUTPUT, OUTPUTS, 1e-12)
}

#[test]
fn the_monolithic_reference_is_converged_and_meets_the_wall_inside_the_contact_window() {
    let fine = reference();
    let coarse = monolithic::run(OUTPUT, OUTPUTS, 1e-10);
    let difference = fine
        .states
        .iter()
        .zip(&coarse.states)
        .flat_map(|(a, b)| [(a[0] - b[0]).abs(), (a[2] - b[2]).abs()])
        .fold(0.0, f64::max);
    eprintln!(
        "reference: {} steps (tol 1e-12), {} (tol 1e-10); positions differ by {difference:.3e} m; contacts {:?} / {:?}",
        fine.steps, coarse.steps, fine.contacts, coarse.contacts
    );
    assert_eq!(fine.states.len(), OUTPUTS + 1);
    assert_eq!(fine.contacts.len(), 1, "{:?}", fine.contacts);
    assert_eq!(coarse.contacts.len(), 1, "{:?}", coarse.contacts);
    let (entry, exit) = fine.contacts[0];
    assert!(entry > CONTACT.0 && exit < CONTACT.1, "{entry} .. {exit}");
    // Converged: the two tolerances agree to 4e-11 m (measured), four orders of magnitude below
    // the 3 % of the smallest pinned master error (3.3e-5 m) the tests below resolve; the
    // contact is located at the same instant to 1e-15 s.
    assert!(difference < 1e-9, "{difference}");
    assert!((coarse.contacts[0].0 - entry).abs() < 1e-13);
    // Pinned (measured with this reference): mass 1 reaches 5 um from the wall at 16.783 ms and
    // leaves 134 ns later.
    assert!((entry - 1.678_325_435e-2).abs() < 1e-11, "{entry}");
    assert!(
        ((exit - entry) / 1.342_84e-7 - 1.0).abs() < 1e-3,
        "{}",
        exit - entry
    );
}

/// Relative tolerance of the pinned errors of the master against the monolithic reference:
/// measured on this master at commit e21d2a3 (release build); a 10 % drift fails.
const PINNED: f64 = 0.03;

fn assert_pinned(what: &str, error: f64, pinned: f64) {
    assert!(
        (error / pinned - 1.0).abs() < PINNED,
        "{what}: error {error:.4e} m, pinned {pinned:.4e} m (within {PINNED})"
    );
}

#[test]
fn step_control_cuts_h_and_k_at_the_contact_and_beats_the_best_fixed_step() {
    let reference = reference().states;

    let control = StepControl {
        estimator: Estimator::ExSLocal,
        atol_coupling: Some(0.1),
        rtol_coupling: Some(1e-3),
        max_order: Some(3),
        trace: true,
        ..StepControl::default()
    };
    let (controlled, stats) = simulate(&example1(1e-6, 3, Some(control)));
    let control_stats = stats.control.expect("controlled run statistics");
    let controlled_error = error(&controlled, &reference);

    // H and k at the contact against the rest of the run.
    let in_contact = |t: f64| t >= CONTACT.0 && t <= CONTACT.1;
    let (contact, free): (Vec<&Step>, Vec<&Step>) = control_stats
        .trace
        .iter()
        .partition(|(t, _, _)| in_contact(*t));
    let min_h = |steps: &[&Step]| steps.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    let median_h = |steps: &[&Step]| {
        let mut h: Vec<f64> = steps.iter().map(|s| s.1).collect();
        h.sort_by(f64::total_cmp);
        h[h.len() / 2]
    };
    let min_k = |steps: &[&Step]| steps.iter().map(|s| s.2).min().unwrap_or(0);
    let free_late: Vec<&Step> = free.iter().copied().filter(|s| s.0 > 0.005).collect();
    eprintln!(
        "controlled: {} accepted, {} rejected, error {controlled_error:.3e} m; contact: min H {:.3e}, min k {}; free: median H {:.3e}, median k {}",
        control_stats.accepted,
        control_stats.rejected,
        min_h(&contact),
        min_k(&contact),
        median_h(&free_late),
        {
            let mut k: Vec<usize> = free_late.iter().map(|s| s.2).collect();
            k.sort();
            k[k.len() / 2]
        }
    );
    assert!(
        min_h(&contact) < 1e-3 * median_h(&free_late),
        "H drops at the contact"
    );
    assert!(min_k(&contact) < 3, "k drops at the contact");
    assert_pinned("controlled", controlled_error, 4.941e-5);

    // The best fixed step (cubic extrapolation) that is at least as accurate; the errors of
    // the fixed steps tried are pinned (measured, see PINNED; first order in H: the contact).
    let mut best: Option<(f64, f64)> = None;
    for (h, pinned) in [
        (1e-5, 3.075e-4),
        (5e-6, 1.523e-4),
        (2.5e-6, 7.888e-5),
        (1e-6, 3.280e-5),
    ] {
        let (fixed, _) = simulate(&example1(h, 3, None));
        let e = error(&fixed, &reference);
        eprintln!(
            "fixed H = {h:e}: error {e:.3e} m, {} steps",
            (STOP / h).round()
        );
        assert_pinned(&format!("fixed H = {h:e}"), e, pinned);
        if e <= controlled_error {
            best = Some((h, e));
            break;
        }
    }
    let (h, e) = best.expect("some fixed step reaches the controlled accuracy");
    assert_eq!(
        h, 1e-6,
        "the best fixed step as accurate as the controller (measured)"
    );
    let fixed_steps = (STOP / h).round() as u64;
    eprintln!("best fixed step as accurate: H = {h:e} ({fixed_steps} steps, error {e:.3e}) vs {} controlled steps", control_stats.accepted);
    assert!(
        control_stats.accepted + control_stats.rejected < fixed_steps,
        "the controller needs {} steps, the best fixed step {fixed_steps}",
        control_stats.accepted + control_stats.rejected
    );
}
