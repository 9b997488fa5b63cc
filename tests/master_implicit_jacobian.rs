//! The interface Jacobian assembled from component steps and directional derivatives
//! (`JacobianMethod::Components`) against the one from repeated system steps: the same
//! converged solution, one Newton iteration per step on the linear two-mass oscillator (so the
//! Jacobian is exact), and fewer FMI calls. The feedthrough partials agree whether they come
//! from the FMU's directional derivatives or from finite differences of set / get.

mod common;

use common::systems::*;
use cosimo::master::implicit::JacobianMethod;
use cosimo::settings::AlgorithmKind;
use cosimo::system::System;

const STOP: f64 = 0.2;
const STEP: f64 = 2e-3;
const RECORD: [&str; 4] = ["mass1.x", "mass1.v", "mass2.x", "mass2.v"];

fn implicit(decomposition: Decomposition, jacobian: JacobianMethod) -> System {
    let mut system = two_mass(decomposition, AlgorithmKind::Implicit, 1, STEP, STOP);
    system.experiment.output_interval = Some(0.02);
    system
        .experiment
        .algorithm
        .corrector_mut()
        .expect("implicit")
        .jacobian = jacobian;
    system
}

fn largest_difference(a: &cosimo::results::Table, b: &cosimo::results::Table) -> f64 {
    (0..RECORD.len())
        .flat_map(|i| {
            a.values(i)
                .iter()
                .zip(b.values(i))
                .map(|(x, y)| (x - y).abs())
                .collect::<Vec<_>>()
        })
        .fold(0.0, f64::max)
}

#[test]
fn component_jacobian_matches_system_steps_and_costs_less() {
    for decomposition in [
        Decomposition::ForceForce,
        Decomposition::ForceDisplacement,
        Decomposition::DisplacementDisplacement,
    ] {
        let (system_table, system_stats) = run(
            &implicit(decomposition, JacobianMethod::SystemSteps),
            &RECORD,
        );
        let (component_table, component_stats) = run(
            &implicit(decomposition, JacobianMethod::Components),
            &RECORD,
        );
        let difference = largest_difference(&system_table, &component_table);
        eprintln!(
            "{decomposition:?}: largest state difference {difference:e}, FMI calls {} (system steps) vs {} (components), corrector iterations {} vs {}",
            system_stats.fmi_calls,
            component_stats.fmi_calls,
            system_stats.corrector_iterations,
            component_stats.corrector_iterations
        );
        assert!(difference < 1e-8 * X0, "{decomposition:?}: {difference:e}");
        // Linear subsystems: an exact Jacobian converges in one Newton iteration per step.
        let steps = (STOP / STEP).round() as u64;
        assert_eq!(
            component_stats.corrector_iterations, steps,
            "{decomposition:?}: one corrector iteration per macro step"
        );
        assert!(
            component_stats.fmi_calls < system_stats.fmi_calls,
            "{decomposition:?}: {} FMI calls with the component Jacobian, {} with system steps",
            component_stats.fmi_calls,
            system_stats.fmi_calls
        );
    }
}

#[test]
fn feedthrough_partials_from_finite_differences_match_directional_derivatives() {
    // An unpacked copy of the Oscillator (which carries the coupling spring in the
    // force/displacement decomposition) that does not claim directional derivatives.
    let dir = common::unpacked_with_edit(
        "Oscillator",
        3,
        "providesDirectionalDerivatives=\"true\"",
        "providesDirectionalDerivatives=\"false\"",
    );

    let with_derivatives = implicit(Decomposition::ForceDisplacement, JacobianMethod::Components);
    let mut without = with_derivatives.clone();
    without.components[1].fmu = dir.path().to_path_buf();
    let (a, a_stats) = run(&with_derivatives, &RECORD);
    let (b, b_stats) = run(&without, &RECORD);
    let difference = largest_difference(&a, &b);
    eprintln!(
        "directional derivatives vs set / get differences: {difference:e}, FMI calls {} vs {}",
        a_stats.fmi_calls, b_stats.fmi_calls
    );
    assert!(difference < 1e-8 * X0, "{difference:e}");
    assert_eq!(a_stats.corrector_iterations, b_stats.corrector_iterations);
    // One directional derivative call replaces get, set, get, set per partial.
    assert!(a_stats.fmi_calls < b_stats.fmi_calls);
}

#[test]
fn controlled_contact_run_takes_the_same_steps_for_less_fmu_work() {
    // The nonlinear contact oscillator under ImSLocal step and order control: the Newton
    // iterations see a different (equally valid) Jacobian, so the runs agree to the
    // controller's tolerance, not bit for bit.
    for model in ["ContactOscillator", "CouplingSpring", "Oscillator"] {
        common::fmu(model, 2);
    }
    let dir = common::temp_dir();
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/contact-oscillator.json");
    let run = |jacobian: &str| {
        let file = dir.path().join(format!("{jacobian}.csv"));
        let mut args: Vec<std::ffi::OsString> = vec!["run".into(), example.clone().into()];
        for arg in [
            "--algorithm",
            "implicit",
            "--adaptive",
            "--estimator",
            "ImSLocal",
            "--jacobian",
            jacobian,
            "-o",
        ] {
            args.push(arg.into());
        }
        args.push(file.clone().into());
        let output = common::cosimo_ok(args);
        let text = String::from_utf8_lossy(&output.stderr).into_owned();
        let number_before = |marker: &str| -> u64 {
            let end = text
                .find(marker)
                .unwrap_or_else(|| panic!("{marker} in {text}"));
            let start = text[..end]
                .rfind(|c: char| !c.is_ascii_digit())
                .map_or(0, |i| i + 1);
            text[start..end].parse().unwrap()
        };
        (
            common::read_results(&file),
            number_before(" accepted"),
            number_before(" FMI calls"),
        )
    };
    let (system, system_steps, system_calls) = run("system");
    let (components, component_steps, component_calls) = run("components");
    eprintln!(
        "contact oscillator: {system_steps} vs {component_steps} accepted steps, {system_calls} vs {component_calls} FMI calls"
    );
    assert!(component_steps.abs_diff(system_steps) * 20 <= system_steps);
    assert!(component_calls * 4 < system_calls * 3);
    let x = |t: &cosimo::results::Table| t.values(t.column("m1.x").unwrap()).to_vec();
    let amplitude = x(&system).iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let difference = x(&system)
        .iter()
        .zip(x(&components))
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        difference < 1e-3 * amplitude,
        "{difference:e} against an amplitude of {amplitude:e}"
    );
}
