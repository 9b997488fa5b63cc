//! The variable-order paper's chain example at bench scale: 20 `OscillatorChain` components
//! (10 masses each, the paper's element law) joined force/force by `CouplingSpring` elements with
//! the same law. The controlled implicit run (ImSLocal, variable order, coupling tolerances
//! rtol 1e-2 / atol 1 N, so that its error of about 1e-9 m is well above the reference's) against
//! the best fixed-step explicit run of equal accuracy, found once before measuring.
//!
//! Run with `cargo bench --bench controlled_chain`; the macro steps, corrector iterations and
//! errors of both runs are printed before criterion's timings.

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

use cosimo::master::execution::{Execution, RunOptions};
use cosimo::master::RunStatistics;
use cosimo::observe::run_system;
use cosimo::results::{CsvWriter, Table};
use cosimo::settings::control::{Estimator, StepControl};
use cosimo::settings::implicit::{ImplicitSettings, JacobianMethod};
use cosimo::settings::{Algorithm, AlgorithmKind, Experiment, Explicit, Implicit};
use cosimo::system::{Component, Connection, Endpoint, System};

const CHAINS: usize = 20;
const STOP: f64 = 2e-3;
const OUTPUT: f64 = 1e-4;

fn end(component: &str, variable: &str) -> Endpoint {
    Endpoint {
        component: component.into(),
        variable: variable.into(),
    }
}

fn chain_system(
    algorithm: AlgorithmKind,
    step: f64,
    order: u8,
    control: Option<StepControl>,
) -> System {
    let chain_fmu = fmu_pack::fmu_path("OscillatorChain", 2);
    let spring_fmu = fmu_pack::fmu_path("CouplingSpring", 2);
    let mut components = Vec::new();
    let mut connections = Vec::new();
    for i in 0..CHAINS {
        components.push(Component {
            name: format!("chain{i}"),
            fmu: chain_fmu.clone(),
            start_values: vec![
                ("n".into(), "10".into()),
                ("v0_spread".into(), "10".into()),
                ("x0_spread".into(), "1e-4".into()),
                ("seed".into(), (i + 1).to_string()),
            ],
            sub_steps: 1,
            isolate: None,
            call_timeout: None,
            worker_group: None,
            interface: None,
            rank: None,
        });
    }
    for i in 0..CHAINS - 1 {
        let spring = format!("spring{i}");
        components.push(Component {
            name: spring.clone(),
            fmu: spring_fmu.clone(),
            start_values: vec![
                ("c1".into(), "1e7".into()),
                ("d1".into(), "1e4".into()),
                ("c3".into(), "1e14".into()),
                ("d3".into(), "1e2".into()),
            ],
            sub_steps: 1,
            isolate: None,
            call_timeout: None,
            worker_group: None,
            interface: None,
            rank: None,
        });
        let (left, right) = (format!("chain{i}"), format!("chain{}", i + 1));
        for (from, to) in [
            (end(&left, "x_last"), end(&spring, "x1")),
            (end(&left, "v_last"), end(&spring, "v1")),
            (end(&right, "x_first"), end(&spring, "x2")),
            (end(&right, "v_first"), end(&spring, "v2")),
            (end(&spring, "F1"), end(&left, "F_right")),
            (end(&spring, "F2"), end(&right, "F_left")),
        ] {
            connections.push(Connection::new(from, to));
        }
    }
    System {
        components,
        connections,
        experiment: Experiment {
            stop: STOP,
            step,
            output_interval: Some(OUTPUT),
            algorithm: match algorithm {
                AlgorithmKind::Implicit => Algorithm::Implicit(Implicit {
                    extrapolation_order: order,
                    corrector: ImplicitSettings {
                        reuse_jacobian: true,
                        ..ImplicitSettings::default()
                    },
                    control,
                }),
                _ => Algorithm::Jacobi(Explicit {
                    extrapolation_order: order,
                    control,
                }),
            },
            ..Experiment::default()
        },
    }
}

fn simulate(system: &System) -> (Table, RunStatistics) {
    let record: Vec<String> = (0..CHAINS)
        .flat_map(|i| [format!("chain{i}.x_first"), format!("chain{i}.x_last")])
        .collect();
    let options = RunOptions {
        record,
        ..RunOptions::default()
    };
    let mut exec = Execution::instantiate(system, &options).expect("the chain instantiates");
    let mut writer =
        CsvWriter::new(Vec::new(), Path::new("memory.csv"), &exec.column_names()).expect("header");
    let stats = run_system(&mut exec, &mut writer, &mut |_| {}).expect("the chain runs");
    let text = String::from_utf8(writer.into_inner()).expect("UTF-8");
    (
        Table::parse(&text, Path::new("memory.csv")).expect("results"),
        stats,
    )
}

fn error(result: &Table, reference: &Table) -> f64 {
    (0..result.columns().len())
        .flat_map(|c| {
            result
                .values(c)
                .iter()
                .zip(reference.values(c))
                .map(|(a, b)| (a - b).abs())
        })
        .fold(0.0, f64::max)
}

fn controlled(jacobian: JacobianMethod) -> System {
    let control = StepControl {
        estimator: Estimator::ImSLocal,
        atol_coupling: Some(1.0),
        rtol_coupling: Some(1e-2),
        max_order: Some(3),
        ..StepControl::default()
    };
    let mut system = chain_system(AlgorithmKind::Implicit, 1e-6, 3, Some(control));
    system
        .experiment
        .algorithm
        .corrector_mut()
        .expect("implicit")
        .jacobian = jacobian;
    system
}

fn benches(c: &mut Criterion) {
    // Reference and the equal-accuracy search, once, outside the measurements.
    let (reference, _) = simulate(&chain_system(AlgorithmKind::Jacobi, 2.5e-8, 3, None));
    let mut target = f64::INFINITY;
    for jacobian in [JacobianMethod::SystemSteps, JacobianMethod::Components] {
        let (result, stats) = simulate(&controlled(jacobian));
        let e = error(&result, &reference);
        target = target.min(e);
        let control = stats.control.clone().unwrap_or_default();
        eprintln!(
            "controlled implicit, {jacobian:?} Jacobian: {} accepted + {} rejected macro steps, {} corrector iterations, {} macro-step computations, {} FMI calls, error {e:.3e} m, {:.3} s",
            control.accepted, control.rejected, control.corrector_iterations, control.macro_steps, stats.fmi_calls, stats.wall_seconds
        );
    }
    let mut fixed_step = 2.5e-8;
    for h in [1e-6, 5e-7, 2.5e-7, 1e-7, 5e-8] {
        let (fixed, stats) = simulate(&chain_system(AlgorithmKind::Jacobi, h, 3, None));
        let e = error(&fixed, &reference);
        eprintln!(
            "fixed explicit k = 3, H = {h:e}: {} macro steps, error {e:.3e} m, {:.3} s",
            stats.steps, stats.wall_seconds
        );
        if e <= target {
            fixed_step = h;
            break;
        }
    }
    let mut group = c.benchmark_group("controlled_chain");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    let system = controlled(JacobianMethod::SystemSteps);
    group.bench_function("implicit_ImSLocal_variable_order", |b| {
        b.iter(|| simulate(&system))
    });
    let system = controlled(JacobianMethod::Components);
    group.bench_function("implicit_ImSLocal_variable_order_component_jacobian", |b| {
        b.iter(|| simulate(&system))
    });
    let system = chain_system(AlgorithmKind::Jacobi, fixed_step, 3, None);
    group.bench_function(format!("explicit_fixed_H_{fixed_step:e}"), |b| {
        b.iter(|| simulate(&system))
    });
    group.finish();
}

criterion_group!(controlled_chain, benches);
criterion_main!(controlled_chain);
