//! Macro-step size and order control on the nonlinear contact oscillator of the variable-order
//! paper's Example 1 (ExSLocal, the paper's controller settings): the controller cuts H and k at
//! the contact, and reaches the accuracy of a fixed-step run with fewer macro steps than the best
//! fixed step that is as accurate.

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
/// The first contact of mass 1 with the wall (found by the reference run below).
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

/// Largest deviation of both positions from the reference over the output grid.
fn error(result: &Table, reference: &Table) -> f64 {
    assert_eq!(result.time().len(), reference.time().len());
    (0..2)
        .flat_map(|c| {
            result
                .values(c)
                .iter()
                .zip(reference.values(c))
                .map(|(a, b)| (a - b).abs())
        })
        .fold(0.0, f64::max)
}

#[test]
fn step_control_cuts_h_and_k_at_the_contact_and_beats_the_best_fixed_step() {
    // Reference: a fixed step far below anything compared, cubic extrapolation.
    let (reference, _) = simulate(&example1(1e-7, 3, None));

    let control = StepControl {
        estimator: Estimator::ExSLocal,
        atol_coupling: 0.1,
        rtol_coupling: 1e-3,
        max_order: 3,
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

    // The best fixed step (cubic extrapolation) that is at least as accurate.
    let mut best: Option<(f64, f64)> = None;
    for h in [1e-5, 5e-6, 2.5e-6, 1e-6, 5e-7, 2.5e-7] {
        let (fixed, _) = simulate(&example1(h, 3, None));
        let e = error(&fixed, &reference);
        eprintln!(
            "fixed H = {h:e}: error {e:.3e} m, {} steps",
            (STOP / h).round()
        );
        if e <= controlled_error {
            best = Some((h, e));
            break;
        }
    }
    let (h, e) = best.expect("some fixed step reaches the controlled accuracy");
    let fixed_steps = (STOP / h).round() as u64;
    eprintln!("best fixed step as accurate: H = {h:e} ({fixed_steps} steps, error {e:.3e}) vs {} controlled steps", control_stats.accepted);
    assert!(
        control_stats.accepted + control_stats.rejected < fixed_steps,
        "the controller needs {} steps, the best fixed step {fixed_steps}",
        control_stats.accepted + control_stats.rejected
    );
}
