//! Events inside a system, through the real master: the BouncingBall's state events (FMI 3
//! with event mode and early return, FMI 3 and FMI 2 handling them inside `doStep`) and the
//! Stair's time events, checked against the analytic solutions on the output grid.

mod common;

use common::systems::*;
use cosimo::fmu::instance::InstanceOptions;
use cosimo::master::execution::RunOptions;
use cosimo::results::Table;
use cosimo::settings::Experiment;
use cosimo::system::System;

const G: f64 = 9.81;
const E: f64 = 0.7;
const H0: f64 = 1.0;
/// sqrt(2 h0 / g).
const FIRST_BOUNCE: f64 = 0.4515236409857309;
/// The second bounce: the flight after the first lasts 2 e g tb / g = 2 e tb.
const SECOND_BOUNCE: f64 = FIRST_BOUNCE * (1.0 + 2.0 * E);

/// (h, v) of the ball at t, up to the second bounce.
fn ball(t: f64) -> (f64, f64) {
    if t < FIRST_BOUNCE {
        (H0 - G * t * t / 2.0, -G * t)
    } else {
        let up = E * (2.0 * G * H0).sqrt();
        let s = t - FIRST_BOUNCE;
        (up * s - G * s * s / 2.0, up - G * s)
    }
}

/// The ball in a system: its height drives a Feedthrough and a Dahlquist steps next to it.
fn ball_system(version: u8, step: f64, stop: f64) -> System {
    System {
        components: vec![
            component("ball", "BouncingBall", version, &[]),
            component("ft", "Feedthrough", 3, &[]),
            component("decay", "Dahlquist", 2, &[]),
        ],
        connections: vec![connect("ball.h", "ft.Float64_continuous_input")],
        experiment: Experiment {
            stop,
            step,
            ..Experiment::default()
        },
    }
}

/// Run the ball system with the FMI calls traced: the table and the traced calls.
fn run_ball(version: u8, event_mode: bool, early_return: bool) -> (Table, Vec<String>) {
    let (sink, calls) = call_trace();
    let options = RunOptions {
        instance: InstanceOptions {
            event_mode,
            early_return,
            log_fmi_calls: true,
            call_sink: Some(sink),
            ..InstanceOptions::default()
        },
        ..recording(&["ball.h", "ball.v", "ft.Float64_continuous_output"])
    };
    let (table, _) = try_run_with(&ball_system(version, 0.01, 2.0), &options)
        .unwrap_or_else(|e| panic!("FMI {version}, event mode {event_mode}: {e}"));
    let calls = calls.lock().unwrap().clone();
    (table, calls)
}

fn check_ball(label: &str, table: &Table) {
    let (h, v) = (column(table, "ball.h"), column(table, "ball.v"));
    let time = table.time();
    assert_eq!(time.len(), 201, "{label}: a row every 0.01 s from 0 to 2");
    for (row, &t) in time.iter().enumerate() {
        assert!(h[row] >= -1e-9, "{label}: h = {} < 0 at t = {t}", h[row]);
        assert!(
            column(table, "ft.Float64_continuous_output")[row] >= -1e-9,
            "{label}: the Feedthrough sees the ball below the ground at t = {t}"
        );
        if t < SECOND_BOUNCE - 1e-9 {
            let (hw, vw) = ball(t);
            assert!(
                (h[row] - hw).abs() < 1e-6 && (v[row] - vw).abs() < 1e-6,
                "{label} at t = {t}: (h, v) = ({}, {}), want ({hw}, {vw})",
                h[row],
                v[row]
            );
        }
    }
    // v changes sign between the rows around the first bounce, from -g tb to +e g tb.
    let before = time.iter().rposition(|&t| t < FIRST_BOUNCE).unwrap();
    assert!((time[before] - 0.45).abs() < 1e-12);
    assert!(v[before] < -4.0 && v[before + 1] > 3.0, "{label}: {v:?}");
    // h at t = 0.6 after the first bounce, to the analytic ballistic flight.
    let row = time.iter().position(|&t| (t - 0.6).abs() < 1e-9).unwrap();
    let want = ball(0.6).0;
    assert!(
        (h[row] - want).abs() < 1e-6,
        "{label}: h(0.6) = {}, want {want}",
        h[row]
    );
    // The ball bounced more than once by t = 2 (it is not simply falling through).
    let rises = v.windows(2).filter(|w| w[0] < 0.0 && w[1] > 0.0).count();
    assert!(rises >= 2, "{label}: {rises} bounces by t = 2");
}

#[test]
fn the_ball_bounces_where_it_should_with_and_without_event_mode() {
    let (event_mode, calls) = run_ball(3, true, true);
    check_ball("FMI 3 event mode", &event_mode);
    for call in [
        "fmi3EnterEventMode",
        "fmi3UpdateDiscreteStates",
        "earlyReturn=true",
    ] {
        assert!(
            calls
                .iter()
                .any(|c| c.starts_with("ball: ") && c.contains(call)),
            "event mode: no {call} of the ball in the trace"
        );
    }

    let (inside, calls) = run_ball(3, false, false);
    check_ball("FMI 3 without event mode", &inside);
    assert!(
        !calls
            .iter()
            .any(|c| c.starts_with("ball: ") && c.contains("fmi3EnterEventMode(")),
        "without event mode the master does not enter event mode"
    );

    let (fmi2, _) = run_ball(2, false, false);
    check_ball("FMI 2", &fmi2);

    // The three agree on every row, bounces included.
    let reference = &event_mode;
    for (label, other) in [("without event mode", &inside), ("FMI 2", &fmi2)] {
        for name in ["ball.h", "ball.v"] {
            for (row, (&a, &b)) in column(reference, name)
                .iter()
                .zip(column(other, name))
                .enumerate()
            {
                assert!(
                    (a - b).abs() < 1e-6,
                    "{label}: {name} = {b} vs {a} in event mode at t = {}",
                    reference.time()[row]
                );
            }
        }
    }
}

#[test]
fn event_mode_alone_still_finds_the_bounce() {
    // The CLI's --event-mode sets eventModeUsed without earlyReturnAllowed: the FMU then handles
    // the state event at the end of the step (or inside it), never below the ground.
    let (table, _) = run_ball(3, true, false);
    check_ball("FMI 3 event mode without early return", &table);
}

#[test]
fn a_coarse_macro_step_still_bounces_at_the_event() {
    // Macro step 0.1: the bounce at 0.4515 lies inside the step from 0.4 to 0.5.
    for (version, event_mode) in [(3, true), (3, false), (2, false)] {
        let options = RunOptions {
            instance: InstanceOptions {
                event_mode,
                early_return: event_mode,
                ..InstanceOptions::default()
            },
            ..recording(&["ball.h", "ball.v"])
        };
        let (table, _) = try_run_with(&ball_system(version, 0.1, 1.0), &options)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(table.time().len(), 11);
        for (row, &t) in table.time().iter().enumerate() {
            let (hw, vw) = ball(t);
            let (h, v) = (column(&table, "ball.h")[row], column(&table, "ball.v")[row]);
            assert!(
                (h - hw).abs() < 1e-6 && (v - vw).abs() < 1e-6,
                "FMI {version} event mode {event_mode} at t = {t}: ({h}, {v}) vs ({hw}, {vw})"
            );
        }
    }
}

#[test]
fn event_iterations_are_counted_in_the_statistics() {
    // RunStatistics.events: "Event iterations handled (FMI 3 event mode)". The ball bounces
    // three times by t = 2, each handled in event mode.
    let options = RunOptions {
        instance: InstanceOptions {
            event_mode: true,
            early_return: true,
            ..InstanceOptions::default()
        },
        ..recording(&["ball.h"])
    };
    let (_, stats) =
        try_run_with(&ball_system(3, 0.01, 2.0), &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        stats.events >= 3,
        "the bounces were handled in event mode but the statistics count {} events",
        stats.events
    );
}

fn stair_system(version: u8, step: f64, stop: f64) -> System {
    System {
        components: vec![
            component("decay", "Dahlquist", 3, &[]),
            component("stair", "Stair", version, &[]),
            component("ft", "Feedthrough", 2, &[]),
        ],
        connections: vec![connect("decay.x", "ft.Float64_continuous_input")],
        experiment: Experiment {
            stop,
            step,
            ..Experiment::default()
        },
    }
}

#[test]
fn the_stair_counts_the_seconds_on_the_output_grid() {
    for (version, event_mode) in [(2, false), (3, false), (3, true)] {
        for step in [0.1, 0.3, 0.7] {
            let label = format!("FMI {version}, event mode {event_mode}, step {step}");
            let options = RunOptions {
                instance: InstanceOptions {
                    event_mode,
                    early_return: event_mode,
                    ..InstanceOptions::default()
                },
                ..recording(&["stair.counter"])
            };
            let (table, _) = try_run_with(&stair_system(version, step, 4.5), &options)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let counter = column(&table, "stair.counter");
            let mut checked = 0;
            for (row, &t) in table.time().iter().enumerate() {
                // At an integer time the event may count as handled or not yet: skip those.
                if (t - t.round()).abs() < 1e-9 && t > 0.5 {
                    continue;
                }
                let want = t.floor() + 1.0;
                assert_eq!(counter[row], want, "{label}: counter at t = {t}");
                checked += 1;
            }
            assert!(checked >= 6, "{label}: {checked} rows checked");
            assert_eq!(*counter.last().unwrap(), 5.0, "{label}: at t = 4.5");
        }
    }
}
