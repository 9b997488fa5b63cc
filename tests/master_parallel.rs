//! `--parallel` through the real master: a trial times the components' steps and puts them on
//! threads only where that pays; chosen threads skip the trial; the results are bit-identical
//! to a sequential run either way; a failure while timing is handled as the run's own.

mod common;

use common::skip::Skip;
use common::systems::*;
use common::{cosimo, show, temp_dir};
use cosimo::master::execution::RunOptions;
use cosimo::master::parallel::ParallelPlacement;
use cosimo::results::Table;
use cosimo::settings::Experiment;
use cosimo::system::System;

/// A chain of `n` Gains, each busy `cost` seconds per step, for `steps` macro steps of 1 ms.
fn gains(n: usize, cost: f64, steps: u32, parallel: bool) -> System {
    System {
        components: (0..n)
            .map(|i| component(&format!("g{i}"), "Gain", 2, &[("k", 0.5), ("cost", cost)]))
            .collect(),
        connections: (1..n)
            .map(|i| connect(&format!("g{}.y", i - 1), &format!("g{i}.u")))
            .collect(),
        experiment: Experiment {
            stop: f64::from(steps) * 1e-3,
            step: 1e-3,
            parallel,
            ..Experiment::default()
        },
    }
}

/// The trial times steps and hand-overs: the tests of this file run one at a time, so that
/// they do not take each other's cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn placed(system: &System, threads: usize) -> (Table, ParallelPlacement) {
    let options = RunOptions {
        threads,
        ..recording(&[])
    };
    let (table, stats) = try_run_with(system, &options).unwrap_or_else(|e| panic!("{e}"));
    (
        table,
        stats
            .parallel
            .expect("a parallel run says how it was placed"),
    )
}

/// [`placed`] again (up to three trials in all) while `expected` does not hold: a trial times
/// steps and hand-overs on a machine that other processes share, and one whose second core was
/// taken for its few milliseconds decides otherwise. Every attempt must give `reference`'s bits.
fn placed_as(
    system: &System,
    reference: &Table,
    expected: impl Fn(&ParallelPlacement) -> bool,
) -> ParallelPlacement {
    let mut placement = None;
    for attempt in 1..=3 {
        let (table, this) = placed(system, 0);
        assert_same(&format!("trial {attempt}"), reference, &table);
        let done = expected(&this);
        placement = Some(this);
        if done {
            break;
        }
    }
    placement.expect("three trials")
}

fn assert_same(label: &str, a: &Table, b: &Table) {
    assert_eq!(a.columns(), b.columns(), "{label}");
    assert_eq!(a.time().len(), b.time().len(), "{label}");
    for c in 0..a.columns().len() {
        for (x, y) in a.values(c).iter().zip(b.values(c)) {
            assert_eq!(x.to_bits(), y.to_bits(), "{label}: {}", a.columns()[c]);
        }
    }
}

#[test]
fn expensive_components_step_on_threads_with_the_same_results() {
    let _alone = alone();
    // Two components of 0.5 ms a step: threads halve the macro step, whatever else runs.
    // 250 steps: the trial times 10 (a 25th), whose medians a preempted step cannot move.
    let (reference, _) = run(&gains(2, 5e-4, 250, false), &[]);
    let placement = placed_as(&gains(2, 5e-4, 250, true), &reference, |p| {
        cores() < 2 || p.threads == 2
    });
    if cores() < 2 {
        assert_eq!(placement.threads, 1, "{placement}");
        common::skip::skipped(
            Skip::OneCore,
            "one core: the trial cannot time two threads (only the sequential placement was checked)",
        );
        return;
    }
    assert_eq!(placement.threads, 2, "{placement}");
    assert!(placement.sequential_because.is_none(), "{placement}");
    // Predicted: 1 ms of work over 0.5 ms plus a few hand-overs (under a µs on a quiet
    // machine, tens of µs where another process has the second core); the trial on two
    // threads confirms it.
    let predicted = placement.predicted_speedup.expect("predicted");
    assert!((1.25..2.01).contains(&predicted), "{placement}");
    let measured = placement.measured_speedup.expect("measured");
    assert!((1.25..2.1).contains(&measured), "{placement}");
    let work = placement.step_work.expect("measured").as_secs_f64();
    assert!((work - 1e-3).abs() < 2e-4, "{placement}");
    assert!(placement
        .to_string()
        .starts_with("--parallel: 2 threads of "));
}

#[test]
fn cheap_components_run_sequentially_and_say_why() {
    let _alone = alone();
    let (reference, _) = run(&gains(10, 0.0, 200, false), &[]);
    let placement = placed_as(&gains(10, 0.0, 200, true), &reference, |p| p.threads == 1);
    assert_eq!(placement.threads, 1, "{placement}");
    if cores() >= 2 {
        // Ten Gains cost a few µs a macro step; a hand-over is not free. Either the
        // prediction says so, or the trial on threads shows it.
        let reason = placement.sequential_because.clone().expect("a reason");
        let work = placement.step_work.expect("measured").as_secs_f64();
        assert!(work < 50e-6, "{placement}");
        match placement.measured_speedup {
            None => assert!(
                reason.contains("too short for threads to pay")
                    && placement.predicted_speedup.expect("predicted") < 1.15,
                "{placement}"
            ),
            Some(measured) => assert!(
                reason.contains("as fast as one in a trial") && measured < 1.1,
                "{placement}"
            ),
        }
    }
}

#[test]
fn chosen_threads_place_the_components_without_a_trial() {
    let _alone = alone();
    let (reference, _) = run(&gains(5, 0.0, 100, false), &[]);
    for threads in [1, 2, 3, 8] {
        let (table, placement) = placed(&gains(5, 0.0, 100, true), threads);
        assert_same(&format!("{threads} threads"), &reference, &table);
        assert_eq!(placement.threads, threads.min(5), "{placement}");
        assert_eq!(placement.step_work, None, "not timed: {placement}");
    }
}

#[test]
fn one_component_or_a_short_run_is_sequential() {
    let _alone = alone();
    let (_, placement) = placed(&gains(1, 0.0, 10, true), 0);
    assert_eq!(placement.threads, 1);
    assert!(
        placement.to_string().contains("one component"),
        "{placement}"
    );
    if cores() < 2 {
        common::skip::skipped(
            Skip::OneCore,
            "one core: the too-short trial on two threads was not checked",
        );
    } else {
        // One macro step: warmed up, but nothing left to time.
        let (_, placement) = placed(&gains(2, 0.0, 1, true), 0);
        assert!(
            placement.to_string().contains("too few macro steps"),
            "{placement}"
        );
    }
}

fn faulty(failure: i32, fail_at: f64) -> System {
    let mut system = gains(2, 0.0, 100, true);
    system.components.push(component(
        "faulty",
        "Faulty",
        2,
        &[("failure", f64::from(failure)), ("fail_at", fail_at)],
    ));
    system
}

#[test]
fn a_failure_while_timing_is_the_runs_own() {
    let _alone = alone();
    if cores() < 2 {
        common::skip::skipped(
            Skip::OneCore,
            "one core: no trial on two threads to fail in",
        );
        return;
    }
    // fmi2DoStep fails at t = 0.01, inside the trial's steps. After Error the run itself meets
    // the failure (sequential, with its rows); after Fatal FMI allows no further call to the
    // FMU in this process, so the trial's failure is the run's.
    for (failure, status) in [(2, "Error"), (3, "Fatal")] {
        let error = try_run_with(&faulty(failure, 0.01), &recording(&[])).expect_err("fails");
        assert!(
            error.starts_with("simulation failed at t = 0.0")
                && error.contains(&format!("faulty: fmi2DoStep failed with status {status}")),
            "{error}"
        );
    }
}

#[test]
fn the_command_line_says_how_a_parallel_run_was_placed() {
    let _alone = alone();
    let dir = temp_dir();
    let file = dir.path().join("cheap.json");
    let components: Vec<String> = (0..4)
        .map(|i| {
            format!(
                r#"{{"name": "g{i}", "fmu": "{}"}}"#,
                common::fmu("Gain", 2).display()
            )
        })
        .collect();
    std::fs::write(
        &file,
        format!(
            r#"{{"components": [{}], "connections": [{{"from": "g0.y", "to": "g1.u"}}],
                "experiment": {{"stopTime": 0.2, "stepSize": 0.001}}}}"#,
            components.join(", ")
        ),
    )
    .unwrap();
    let out = dir.path().join("out.csv");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run".to_string(),
            file.display().to_string(),
            "-o".into(),
            out.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let output = cosimo(&args);
        assert!(output.status.success(), "{}", show(&output));
        String::from_utf8_lossy(&output.stderr).to_string()
    };
    let stderr = run(&["--parallel", "--threads", "2"]);
    assert!(
        stderr.contains("--parallel: 2 threads of 2 allowed"),
        "{stderr}"
    );
    if cores() >= 2 {
        let stderr = run(&["--parallel"]);
        assert!(
            stderr.contains("--parallel ran sequentially: the components' steps are too short for threads to pay"),
            "{stderr}"
        );
    }
    assert!(!run(&[]).contains("--parallel"));
}
