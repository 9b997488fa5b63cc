//! Algebraic loops through the real master: loops between direct-feedthrough ports are solved
//! at every communication point (and during initialization) with Newton on directional
//! derivatives, Newton on finite differences and fixed-point iteration, FMI 2 and FMI 3; loops
//! that have no unique solution or do not converge fail with a message naming the loop.

mod common;

use common::systems::*;
use cosimo::fmu::instance::InstanceOptions;
use cosimo::master::execution::RunOptions;
use cosimo::settings::{Experiment, LoopSettings, LoopSolver};
use cosimo::system::{Component, System};

/// Parameters (offset, gain, cubic) of one CubicGain: y = offset + gain u + cubic u^3.
type Cubic = (f64, f64, f64);

/// A loop that fixed-point iteration cannot solve (loop gain about 16 at the solution), but
/// Newton can: a.y = 1 + 0.5 u + 0.1 u^3, b.y = 2 - 0.3 u + 0.05 u^3.
const NEWTON_A: Cubic = (1.0, 0.5, 0.1);
const NEWTON_B: Cubic = (2.0, -0.3, 0.05);
/// A contractive loop (loop gain about -0.19 at the solution near u_a = 0).
const CONTRACTIVE_A: Cubic = (1.0, 0.4, 0.02);
const CONTRACTIVE_B: Cubic = (0.5, -0.5, 0.01);

fn cubic((offset, gain, cubic): Cubic, u: f64) -> f64 {
    offset + gain * u + cubic * u * u * u
}

/// The loop's solution u_a = y_b(y_a(u_a)) in [lo, hi], by bisection: independent of the master.
fn cubic_loop_solution(a: Cubic, b: Cubic, (mut lo, mut hi): (f64, f64)) -> f64 {
    let residual = |u: f64| u - cubic(b, cubic(a, u));
    let rising = residual(hi) > 0.0;
    assert!(residual(lo) * residual(hi) < 0.0, "bracket");
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if (residual(mid) < 0.0) == rising {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

fn loop_settings(solver: LoopSolver) -> LoopSettings {
    LoopSettings {
        solver,
        ..LoopSettings::default()
    }
}

/// Two CubicGain components in a loop: a.y -> b.u, b.y -> a.u.
fn cubic_component(name: &str, version: u8, (offset, gain, cubic): Cubic) -> Component {
    component(
        name,
        "CubicGain",
        version,
        &[("gain", gain), ("offset", offset), ("cubic", cubic)],
    )
}

fn cubic_loop(
    (version_a, a): (u8, Cubic),
    (version_b, b): (u8, Cubic),
    solver: LoopSolver,
) -> System {
    System {
        components: vec![
            cubic_component("a", version_a, a),
            cubic_component("b", version_b, b),
        ],
        connections: vec![connect("a.y", "b.u"), connect("b.y", "a.u")],
        experiment: Experiment {
            stop: 0.1,
            step: 0.01,
            loops: loop_settings(solver),
            ..Experiment::default()
        },
    }
}

/// Run with the FMI calls traced; the table and the traced calls.
fn run_traced(system: &System, record: &[&str]) -> (cosimo::results::Table, Vec<String>) {
    let (sink, calls) = call_trace();
    let options = RunOptions {
        instance: InstanceOptions {
            log_fmi_calls: true,
            call_sink: Some(sink),
            ..InstanceOptions::default()
        },
        ..recording(record)
    };
    let (table, _) = try_run_with(system, &options).unwrap_or_else(|e| panic!("{e}"));
    let calls = calls.lock().unwrap().clone();
    (table, calls)
}

/// Converged to the library's default tolerance (1e-10 absolute + 1e-10 relative).
fn assert_converged(what: &str, t: f64, input: f64, source: f64) {
    let tolerance = 1e-10 + 1e-10 * input.abs();
    assert!(
        (input - source).abs() <= tolerance,
        "{what} at t = {t}: input {input} vs its source {source} (difference {:e})",
        (input - source).abs()
    );
}

#[test]
fn a_cubic_loop_is_solved_at_every_communication_point_by_every_newton_variant() {
    let solution = cubic_loop_solution(NEWTON_A, NEWTON_B, (-10.0, 10.0));
    let y_a = cubic(NEWTON_A, solution);
    for (va, vb) in [(2, 2), (3, 3), (2, 3)] {
        for solver in [LoopSolver::Newton, LoopSolver::NewtonFiniteDifferences] {
            let label = format!("FMI {va}/{vb} {solver:?}");
            let system = cubic_loop((va, NEWTON_A), (vb, NEWTON_B), solver);
            let (table, calls) = run_traced(&system, &["a.u", "a.y", "b.u", "b.y"]);
            let (au, ay, bu, by) = (
                column(&table, "a.u"),
                column(&table, "a.y"),
                column(&table, "b.u"),
                column(&table, "b.y"),
            );
            assert_eq!(table.time().len(), 11, "{label}: a row per step and t = 0");
            for (row, &t) in table.time().iter().enumerate() {
                assert_converged(&format!("{label} a.u <- b.y"), t, au[row], by[row]);
                assert_converged(&format!("{label} b.u <- a.y"), t, bu[row], ay[row]);
                // The outputs are the model's at the recorded inputs (nothing stale).
                assert!(
                    (ay[row] - cubic(NEWTON_A, au[row])).abs() < 1e-12,
                    "{label}"
                );
                assert!(
                    (by[row] - cubic(NEWTON_B, bu[row])).abs() < 1e-12,
                    "{label}"
                );
                // And it is the loop's one solution.
                assert!(
                    (au[row] - solution).abs() < 1e-9 && (bu[row] - y_a).abs() < 1e-9,
                    "{label} at t = {t}: u_a = {}, want {solution}; u_b = {}, want {y_a}",
                    au[row],
                    bu[row]
                );
            }
            let directional = calls
                .iter()
                .filter(|c| c.contains("GetDirectionalDerivative"))
                .count();
            match solver {
                LoopSolver::Newton => assert!(
                    directional > 0,
                    "{label}: Newton uses the FMUs' directional derivatives"
                ),
                _ => assert_eq!(
                    directional, 0,
                    "{label}: finite differences ask for no directional derivative"
                ),
            }
        }
    }
}

/// An Oscillator whose force comes back from its own acceleration through a CubicGain:
/// a = (F - c x - d v) / m with F = OFFSET + GAIN a + CUBIC a^3, a loop whose solution changes
/// every step.
const M: f64 = 1.0;
const C: f64 = 4.0;
const D: f64 = 0.5;
/// |dF/da| = |-0.2 - 0.015 a^2| < 0.5 for |a| < 3.6: fixed-point iteration converges too
/// (iterating both coupling values at once, at about sqrt(0.5) per iteration).
const LOOP: Cubic = (0.3, -0.2, -0.005);

fn oscillator_loop(version: u8, solver: LoopSolver) -> System {
    System {
        components: vec![
            component(
                "osc",
                "Oscillator",
                version,
                &[("m", M), ("c", C), ("d", D), ("x0", 1.0), ("v0", 0.0)],
            ),
            cubic_component("g", version, LOOP),
        ],
        connections: vec![connect("osc.a", "g.u"), connect("g.y", "osc.F")],
        experiment: Experiment {
            stop: 1.0,
            step: 0.01,
            output_interval: Some(0.05),
            loops: LoopSettings {
                max_iterations: 200,
                ..loop_settings(solver)
            },
            ..Experiment::default()
        },
    }
}

#[test]
fn a_loop_through_a_state_dependent_output_is_solved_as_the_state_moves() {
    for version in [2, 3] {
        let mut previous: Option<Vec<f64>> = None;
        for solver in [
            LoopSolver::Newton,
            LoopSolver::NewtonFiniteDifferences,
            LoopSolver::FixedPoint,
        ] {
            let label = format!("FMI {version} {solver:?}");
            let system = oscillator_loop(version, solver);
            let (table, _) = run(&system, &["osc.x", "osc.v", "osc.a", "osc.F", "g.u", "g.y"]);
            let (x, v, a, f) = (
                column(&table, "osc.x"),
                column(&table, "osc.v"),
                column(&table, "osc.a"),
                column(&table, "osc.F"),
            );
            let (gu, gy) = (column(&table, "g.u"), column(&table, "g.y"));
            assert_eq!(table.time().len(), 21, "{label}");
            for (row, &t) in table.time().iter().enumerate() {
                assert_converged(&format!("{label} g.u <- osc.a"), t, gu[row], a[row]);
                assert_converged(&format!("{label} osc.F <- g.y"), t, f[row], gy[row]);
                let want_a = (f[row] - C * x[row] - D * v[row]) / M;
                assert!(
                    (a[row] - want_a).abs() < 1e-9,
                    "{label} at t = {t}: a = {}, (F - c x - d v) / m = {want_a}",
                    a[row]
                );
                let want_f = cubic(LOOP, gu[row]);
                assert!((gy[row] - want_f).abs() < 1e-9, "{label} at t = {t}");
            }
            // The state moves, so the loop's solution does: the loop is solved anew each time.
            let spread = a.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                - a.iter().cloned().fold(f64::INFINITY, f64::min);
            assert!(spread > 1.0, "{label}: the acceleration varies ({spread})");
            // Every solver finds the same trajectory (to the loop tolerance, propagated).
            if let Some(reference) = &previous {
                for (row, (&got, &want)) in x.iter().zip(reference).enumerate() {
                    assert!(
                        (got - want).abs() < 1e-8,
                        "{label} at t = {}: x = {got} vs {want} with the first solver",
                        table.time()[row]
                    );
                }
            } else {
                previous = Some(x.to_vec());
            }
        }
    }
}

#[test]
fn fixed_point_iteration_converges_on_a_contractive_loop() {
    let solution = cubic_loop_solution(CONTRACTIVE_A, CONTRACTIVE_B, (-1.0, 1.0));
    for version in [2, 3] {
        let system = cubic_loop(
            (version, CONTRACTIVE_A),
            (version, CONTRACTIVE_B),
            LoopSolver::FixedPoint,
        );
        let (table, _) = run(&system, &["a.u", "a.y", "b.u", "b.y"]);
        let (au, ay, bu, by) = (
            column(&table, "a.u"),
            column(&table, "a.y"),
            column(&table, "b.u"),
            column(&table, "b.y"),
        );
        for (row, &t) in table.time().iter().enumerate() {
            assert_converged("fixed point a.u <- b.y", t, au[row], by[row]);
            assert_converged("fixed point b.u <- a.y", t, bu[row], ay[row]);
            assert!((au[row] - solution).abs() < 1e-9, "u_a = {}", au[row]);
        }
    }
}

fn feedthrough_loop(solver: LoopSolver) -> System {
    System {
        components: vec![
            component("a", "Feedthrough", 3, &[]),
            component("b", "Feedthrough", 2, &[]),
        ],
        connections: vec![
            connect("a.Float64_continuous_output", "b.Float64_continuous_input"),
            connect("b.Float64_continuous_output", "a.Float64_continuous_input"),
        ],
        experiment: Experiment {
            stop: 0.1,
            step: 0.01,
            loops: loop_settings(solver),
            ..Experiment::default()
        },
    }
}

#[test]
fn a_singular_loop_fails_naming_its_variables() {
    // u = u + 1: the identity loop (I - J = 0 exactly, from the directional derivatives)
    // shifted so that no value solves it.
    let mut system = feedthrough_loop(LoopSolver::Newton);
    system.connections[1].offset = 1.0;
    let error = try_run(
        &system,
        &["a.Float64_continuous_input", "b.Float64_continuous_input"],
    )
    .expect_err("u = u + 1 has no solution");
    for part in [
        "algebraic loop",
        "a.Float64_continuous_output -> b.Float64_continuous_input",
        "b.Float64_continuous_output -> a.Float64_continuous_input",
        "singular",
        "t = 0",
    ] {
        assert!(error.contains(part), "{part:?} missing from: {error}");
    }
}

#[test]
fn a_divergent_fixed_point_iteration_fails_naming_the_loop() {
    // y_a = 2 u_a + 1, y_b = -1.5 u_b: the loop gain -3 makes u := phi(u) diverge, although
    // the linear loop has a solution (Newton finds it).
    let mut system = cubic_loop(
        (3, (1.0, 2.0, 0.0)),
        (2, (0.0, -1.5, 0.0)),
        LoopSolver::FixedPoint,
    );
    let error = try_run(&system, &[]).expect_err("the iteration diverges");
    for part in [
        "algebraic loop",
        "a.y -> b.u",
        "b.y -> a.u",
        "did not converge",
        "fixed-point",
        "50",
    ] {
        assert!(error.contains(part), "{part:?} missing from: {error}");
    }

    // The same loop with Newton: u_a = -1.5 (2 u_a + 1) => u_a = -0.375.
    system.experiment.loops.solver = LoopSolver::Newton;
    let (table, _) = run(&system, &["a.u", "b.u"]);
    for (&ua, &ub) in column(&table, "a.u").iter().zip(column(&table, "b.u")) {
        assert!((ua + 0.375).abs() < 1e-12, "u_a = {ua}");
        assert!((ub - 0.25).abs() < 1e-12, "u_b = {ub}");
    }
}

#[test]
fn the_loop_is_consistent_in_the_first_row() {
    // The first row is written right after initialization: the loop must already be solved
    // there (inputs set in initialization mode, outputs read back in step mode).
    let solution = cubic_loop_solution(CONTRACTIVE_A, CONTRACTIVE_B, (-1.0, 1.0));
    for (va, vb) in [(2, 2), (3, 3), (3, 2)] {
        for solver in [
            LoopSolver::Newton,
            LoopSolver::NewtonFiniteDifferences,
            LoopSolver::FixedPoint,
        ] {
            let system = cubic_loop((va, CONTRACTIVE_A), (vb, CONTRACTIVE_B), solver);
            let (table, _) = run(&system, &["a.u", "a.y", "b.u", "b.y"]);
            assert_eq!(table.time()[0], 0.0);
            let first = |name: &str| column(&table, name)[0];
            assert_converged("t = 0: a.u <- b.y", 0.0, first("a.u"), first("b.y"));
            assert_converged("t = 0: b.u <- a.y", 0.0, first("b.u"), first("a.y"));
            assert!(
                (first("a.u") - solution).abs() < 1e-9,
                "FMI {va}/{vb} {solver:?}: u_a(0) = {}, want {solution}",
                first("a.u")
            );
        }
    }
}

#[test]
fn a_fixed_point_iteration_that_overflows_fails_instead_of_accepting_nan() {
    // The Newton loop under fixed-point iteration: the cubic terms blow the iterates up to
    // infinity within a few iterations and the residual becomes NaN. NaN is no convergence.
    for version in [2, 3] {
        let system = cubic_loop(
            (version, NEWTON_A),
            (version, NEWTON_B),
            LoopSolver::FixedPoint,
        );
        match try_run(&system, &["a.u", "b.u"]) {
            Ok((table, _)) => panic!(
                "FMI {version}: the diverging loop was accepted with u_a = {:?}",
                &column(&table, "a.u")[..2]
            ),
            Err(error) => {
                for part in [
                    "algebraic loop",
                    "a.y -> b.u",
                    "b.y -> a.u",
                    "did not converge",
                ] {
                    assert!(error.contains(part), "{part:?} missing from: {error}");
                }
            }
        }
    }
}

#[test]
fn a_nearly_singular_finite_difference_jacobian_is_not_taken_for_a_solution() {
    // The shifted identity loop u = u + 1 again, with finite differences: the computed
    // Jacobian I - dphi/du is singular up to rounding (about 1e-9 instead of 0). Newton's
    // step then jumps to u ~ 1e9 or beyond, where the relative tolerance admits the residual
    // of 1. The loop has no solution, so the run must fail.
    let mut system = feedthrough_loop(LoopSolver::NewtonFiniteDifferences);
    system.connections[1].offset = 1.0;
    let record = ["a.Float64_continuous_input", "b.Float64_continuous_input"];
    match try_run(&system, &record) {
        Ok((table, _)) => panic!(
            "the unsolvable loop was accepted with inputs {} and {}",
            column(&table, record[0])[0],
            column(&table, record[1])[0]
        ),
        Err(error) => {
            for part in [
                "algebraic loop",
                "a.Float64_continuous_output -> b.Float64_continuous_input",
                "b.Float64_continuous_output -> a.Float64_continuous_input",
            ] {
                assert!(error.contains(part), "{part:?} missing from: {error}");
            }
        }
    }
}

/// One Feedthrough whose Float64 output is connected back to its own input with an offset of
/// 1: y = u, u = y + 1 has no solution. Every loop solver refuses it with the loop, the time,
/// the residual and what to try, in FMI 2 and FMI 3 — never a number.
#[test]
fn a_self_loop_without_a_solution_is_an_error_naming_the_loop() {
    for version in [2, 3] {
        for solver in [
            LoopSolver::Newton,
            LoopSolver::NewtonFiniteDifferences,
            LoopSolver::FixedPoint,
        ] {
            let mut connection =
                connect("f.Float64_continuous_output", "f.Float64_continuous_input");
            connection.offset = 1.0;
            let system = System {
                components: vec![component("f", "Feedthrough", version, &[])],
                connections: vec![connection],
                experiment: Experiment {
                    stop: 0.1,
                    step: 0.01,
                    loops: loop_settings(solver),
                    ..Experiment::default()
                },
            };
            let label = format!("FMI {version}, {solver:?}");
            let error = try_run(&system, &["f.Float64_continuous_input"])
                .expect_err(&format!("{label}: u = u + 1 has no solution"));
            for part in [
                "algebraic loop f.Float64_continuous_output -> f.Float64_continuous_input",
                "at t = 0",
                "residual",
                "start value",
                "delay",
                "--algorithm implicit",
            ] {
                assert!(
                    error.contains(part),
                    "{label}: {part:?} missing from: {error}"
                );
            }
        }
    }
}

/// The same self-loop from a system file through the command line: exit code 1, the loop named
/// on stderr; an Int32 self-loop (no directional derivatives for integers) is refused the same
/// way instead of failing in `GetDirectionalDerivative`.
#[test]
fn the_command_line_refuses_a_self_loop_without_a_solution() {
    let dir = common::temp_dir();
    for (variable, version) in [
        ("Float64_continuous", 3),
        ("Float64_continuous", 2),
        ("Int32", 3),
    ] {
        let fmu = serde_json::to_string(&common::fmu("Feedthrough", version).display().to_string())
            .unwrap();
        let file = dir.path().join(format!("{variable}-{version}.json"));
        std::fs::write(
            &file,
            format!(
                r#"{{ "components": [ {{ "name": "f", "fmu": {fmu} }} ],
                     "connections": [ {{ "from": "f.{variable}_output", "to": "f.{variable}_input", "offset": 1 }} ] }}"#
            ),
        )
        .unwrap();
        let output = common::cosimo([
            "run".as_ref(),
            file.as_os_str(),
            "-q".as_ref(),
            "-o".as_ref(),
            dir.path().join("out.csv").as_os_str(),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{}", common::show(&output));
        for part in [
            format!("error: simulation failed at t = 0: algebraic loop f.{variable}_output -> f.{variable}_input at t = 0:"),
            format!("largest residual 1.000e0 at f.{variable}_input"),
            "--algorithm implicit".to_string(),
        ] {
            assert!(stderr.contains(&part), "{variable} FMI {version}: {part:?} missing from: {stderr}");
        }
    }
}
