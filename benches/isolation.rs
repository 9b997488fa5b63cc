//! What crash isolation costs: a chain of Feedthrough FMUs (each one's continuous output drives
//! the next one's input), 10,000 macro steps through the master with every FMU in cosimo's
//! process, with every FMU in its own worker process (`--isolate`) and with all of them in one
//! shared worker process (`--isolate --worker-processes 1`), sequential Jacobi.
//!
//! Run with `cargo bench --bench isolation`; divide a reported time by COMPONENTS * STEPS for
//! the time per instance-step. The ratio isolated / in-process is the figure issue 15 asks for.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

use cosimo::fmu::worker::WorkerOptions;
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::settings::Experiment;
use cosimo::system::{Component, Connection, Endpoint, System};

const STEPS: usize = 10_000;
const H: f64 = 1e-3;

fn chain(components: usize, version: u8) -> System {
    let fmu = fmu_pack::fmu_path("Feedthrough", version);
    System {
        components: (0..components)
            .map(|i| Component {
                name: format!("f{i}"),
                fmu: fmu.clone(),
                start_values: Vec::new(),
                sub_steps: 1,
                isolate: None,
                call_timeout: None,
                worker_group: None,
                interface: None,
                rank: None,
            })
            .collect(),
        connections: (1..components)
            .map(|i| {
                let end = |c: usize, v: &str| Endpoint {
                    component: format!("f{c}"),
                    variable: v.into(),
                };
                Connection::new(
                    end(i - 1, "Float64_continuous_output"),
                    end(i, "Float64_continuous_input"),
                )
            })
            .collect(),
        experiment: Experiment {
            stop: STEPS as f64 * H * 2.0,
            step: H,
            ..Experiment::default()
        },
    }
}

/// Where the chain's FMUs run.
#[derive(Clone, Copy)]
enum Hosting {
    InProcess,
    /// A worker process each.
    Isolated,
    /// One worker process for all.
    Shared,
}

fn bench(c: &mut Criterion, components: usize, version: u8, hosting: Hosting) {
    let system = chain(components, version);
    let name = format!(
        "isolation/feedthrough_chain_{components}_fmi{version}/{}",
        match hosting {
            Hosting::InProcess => "in_process",
            Hosting::Isolated => "worker_processes",
            Hosting::Shared => "one_shared_worker_process",
        }
    );
    c.bench_function(&name, |b| {
        b.iter_batched(
            || {
                let options = RunOptions {
                    isolate: !matches!(hosting, Hosting::InProcess),
                    worker_processes: matches!(hosting, Hosting::Shared).then_some(1),
                    worker: WorkerOptions {
                        program: Some(env!("CARGO_BIN_EXE_cosimo").into()),
                        ..WorkerOptions::default()
                    },
                    ..RunOptions::default()
                };
                let mut exec =
                    Execution::instantiate(&system, &options).expect("the chain instantiates");
                exec.initialize().expect("the chain initializes");
                exec
            },
            |mut exec| {
                for _ in 0..STEPS {
                    exec.step(H).expect("steps");
                }
                exec
            },
            BatchSize::PerIteration,
        )
    });
}

fn benches(c: &mut Criterion) {
    for version in [2, 3] {
        for hosting in [Hosting::InProcess, Hosting::Isolated, Hosting::Shared] {
            bench(c, 4, version, hosting);
        }
    }
}

criterion_group! {
    name = isolation_benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(10)).warm_up_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(isolation_benches);
