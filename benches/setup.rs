//! Setting up a large system (issue 29, "scale in one process"): a chain of N Gain FMUs
//! (FMI 2) from the `System` to the first step: resolve names, order the coupling graph,
//! instantiate and initialise every FMU. N = 1e3, 1e4, 1e5; the growth must be no worse than
//! N log N (it was quadratic). Before the timings, the resident memory each component adds
//! is printed (measured at N = 1e4 and 1e5 from /proc/self/statm).

use std::hint::black_box;

use cosimo::master::execution::{Execution, RunOptions};
use cosimo::settings::Experiment;
use cosimo::system::{Component, Connection, Endpoint, System};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

fn chain(count: usize) -> System {
    let fmu = fmu_pack::fmu_path("Gain", 2);
    let components = (0..count)
        .map(|i| Component {
            name: format!("g{i}"),
            fmu: fmu.clone(),
            start_values: Vec::new(),
            sub_steps: 1,
            isolate: None,
            call_timeout: None,
            worker_group: None,
            interface: None,
            rank: None,
        })
        .collect();
    let end = |c: usize, v: &str| Endpoint {
        component: format!("g{c}"),
        variable: v.into(),
    };
    let connections = (1..count)
        .map(|i| Connection::new(end(i - 1, "y"), end(i, "u")))
        .collect();
    System {
        components,
        connections,
        experiment: Experiment {
            stop: 1e-3,
            step: 1e-3,
            ..Experiment::default()
        },
    }
}

fn set_up(system: &System) -> Execution {
    let mut exec =
        Execution::instantiate(system, &RunOptions::default()).expect("the chain instantiates");
    exec.initialize().expect("the chain initialises");
    exec
}

/// Resident bytes of this process (Linux).
fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn memory_per_component() {
    for count in [10_000, 100_000] {
        let system = chain(count);
        let before = resident();
        let exec = set_up(&system);
        let after = resident();
        if let (Some(before), Some(after)) = (before, after) {
            println!(
                "setup/memory: {count} components add {:.1} KiB each ({:.0} MiB in all)",
                after.saturating_sub(before) as f64 / count as f64 / 1024.0,
                after.saturating_sub(before) as f64 / (1 << 20) as f64
            );
        }
        drop(black_box(exec));
    }
}

fn setup(c: &mut Criterion) {
    memory_per_component();
    let mut group = c.benchmark_group("setup");
    group.sample_size(10);
    for count in [1_000, 10_000, 100_000] {
        let system = chain(count);
        group.bench_function(format!("gain_chain_{count}"), |b| {
            b.iter_batched(|| (), |()| set_up(&system), BatchSize::PerIteration)
        });
    }
    group.finish();
}

criterion_group!(benches, setup);
criterion_main!(benches);
