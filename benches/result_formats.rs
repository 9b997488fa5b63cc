//! What each result format costs over CSV, on a chain of 1000 Gain FMUs recording every output
//! (1000 Float64 columns, values that are no short decimals: y = 1.0001^i · 0.1234567):
//!
//! - `result_formats/run/<format>`: the whole run, 200 macro steps with a row after each,
//!   written to a file (`none`: no writer, the run alone);
//! - `result_formats/write/<format>`: the writer alone, the run's 200 rows handed to it
//!   again (row, step, then finished, as the run loop calls it).
//!
//! Run with `cargo bench --bench result_formats`. The target: MAT and Arrow cost at
//! most 5 % more than CSV.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

use cosimo::master::execution::{Execution, RunOptions};
use cosimo::master::record::{ResultColumn, Row};
use cosimo::master::run::{run, Observer};
use cosimo::master::RunStatistics;
use cosimo::observe::ResultFile;
use cosimo::settings::results::ResultFormat;
use cosimo::settings::Experiment;
use cosimo::system::{Component, Connection, Endpoint, System};

const COMPONENTS: usize = 1000;
const STEPS: usize = 200;
const H: f64 = 1e-3;

fn chain() -> System {
    let fmu = fmu_pack::fmu_path("Gain", 2);
    let components = (0..COMPONENTS)
        .map(|i| {
            let mut start_values = vec![("k".to_string(), "1.0001".to_string())];
            if i == 0 {
                start_values.push(("u".into(), "0.1234567".into()));
            }
            Component {
                name: format!("g{i}"),
                fmu: fmu.clone(),
                start_values,
                sub_steps: 1,
                isolate: None,
                call_timeout: None,
                worker_group: None,
                interface: None,
                rank: None,
            }
        })
        .collect();
    let connections = (1..COMPONENTS)
        .map(|i| {
            let end = |c: usize, v: &str| Endpoint {
                component: format!("g{c}"),
                variable: v.into(),
            };
            Connection::new(end(i - 1, "y"), end(i, "u"))
        })
        .collect();
    System {
        components,
        connections,
        experiment: Experiment {
            stop: STEPS as f64 * H,
            step: H,
            ..Experiment::default()
        },
    }
}

/// Collects the rows of a run (to hand them to the writers again).
#[derive(Default)]
struct Rows(Vec<Row>);

impl Observer for Rows {
    fn row(&mut self, row: &Row) -> cosimo::Result<()> {
        self.0.push(row.clone());
        Ok(())
    }
}

fn formats(c: &mut Criterion) {
    let system = chain();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let instantiate =
        || Execution::instantiate(&system, &RunOptions::default()).expect("the chain instantiates");
    let mut exec = instantiate();
    let columns: Vec<ResultColumn> = exec.result_columns();
    assert_eq!(columns.len(), COMPONENTS, "every output is recorded");
    let mut rows = Rows::default();
    run(&mut exec, &mut [&mut rows]).expect("the chain runs");
    let rows = rows.0;
    drop(exec);

    let mut group = c.benchmark_group("result_formats");
    for format in [None]
        .into_iter()
        .chain(ResultFormat::ALL.into_iter().map(Some))
    {
        let name = format.map_or("none", ResultFormat::extension);
        let path = dir.path().join(format!("run.{name}"));
        group.bench_function(format!("run/{name}"), |b| {
            b.iter_batched(
                || {
                    let writer = format.map(|f| create(f, &path, &columns));
                    (instantiate(), writer)
                },
                |(mut exec, mut writer)| {
                    let stats = match &mut writer {
                        Some(writer) => run(&mut exec, &mut [writer]),
                        None => run(&mut exec, &mut []),
                    };
                    black_box(stats.expect("the chain runs"));
                    (exec, writer)
                },
                BatchSize::PerIteration,
            )
        });
    }
    for format in ResultFormat::ALL {
        let path = dir.path().join(format!("write.{}", format.extension()));
        group.bench_function(format!("write/{}", format.extension()), |b| {
            b.iter_batched(
                || create(format, &path, &columns),
                |mut writer| {
                    for row in &rows {
                        writer.row(row).expect("writes");
                        writer.stepped(row.time);
                    }
                    writer.finished(&RunStatistics::default()).expect("closes");
                    writer
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn create(format: ResultFormat, path: &Path, columns: &[ResultColumn]) -> ResultFile {
    ResultFile::create_as(format, path, columns, &mut |w| panic!("{w}")).expect("creates")
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(20)).warm_up_time(Duration::from_secs(2));
    targets = formats
}
criterion_main!(benches);
