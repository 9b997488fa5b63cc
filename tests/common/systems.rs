//! Systems built in code for the orchestrator's tests, and running them into a table.

#![allow(dead_code)]

use std::path::Path;

use cosimo::master::execution::{Execution, RunOptions};
use cosimo::master::RunStatistics;
use cosimo::observe::run_system;
use cosimo::results::{CsvWriter, Table};
use cosimo::settings::implicit::Extension;
use cosimo::settings::{Algorithm, AlgorithmKind, Experiment};
use cosimo::system::{Component, Connection, Endpoint, System};

pub fn endpoint(text: &str) -> Endpoint {
    Endpoint::parse(text).expect("component.variable")
}

pub fn component(name: &str, model: &str, version: u8, parameters: &[(&str, f64)]) -> Component {
    Component {
        name: name.into(),
        fmu: fmu_pack::fmu_path(model, version),
        start_values: parameters
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        sub_steps: 1,
        isolate: None,
        call_timeout: None,
        worker_group: None,
        interface: None,
        rank: None,
    }
}

pub fn connect(from: &str, to: &str) -> Connection {
    Connection::new(endpoint(from), endpoint(to))
}

/// Run a system and return its results (the recorded variables) and statistics.
pub fn run(system: &System, record: &[&str]) -> (Table, RunStatistics) {
    try_run(system, record).unwrap_or_else(|e| panic!("the system fails: {e}"))
}

/// Run a system; the error as a user would see it.
pub fn try_run(system: &System, record: &[&str]) -> Result<(Table, RunStatistics), String> {
    let mut execution =
        Execution::instantiate(system, &recording(record)).map_err(|e| e.to_string())?;
    let mut writer = CsvWriter::new(
        Vec::new(),
        Path::new("memory.csv"),
        &execution.column_names(),
    )
    .map_err(|e| e.to_string())?;
    let stats = run_system(&mut execution, &mut writer, &mut |_| {}).map_err(|e| e.to_string())?;
    let text = String::from_utf8(writer.into_inner()).map_err(|e| e.to_string())?;
    let table = Table::parse(&text, Path::new("memory.csv")).map_err(|e| e.to_string())?;
    Ok((table, stats))
}

/// The two-mass oscillator of the stability thesis (m1 = m2 = 1, c1 = c2 = cc = 1000,
/// d1 = d2 = dc = 10; mass 1 starts at x = 0.1), as a co-simulation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decomposition {
    /// Both masses force-driven; the coupling spring is its own stateless component.
    ForceForce,
    /// Mass 1 force-driven, mass 2 base-excited by mass 1's position and velocity and
    /// carrying the coupling spring.
    ForceDisplacement,
    /// Both masses base-excited by the other's position and velocity, each carrying its own
    /// copy of the coupling spring.
    DisplacementDisplacement,
}

pub const M: f64 = 1.0;
pub const C: f64 = 1000.0;
pub const D: f64 = 10.0;
pub const X0: f64 = 0.1;

pub fn two_mass(
    decomposition: Decomposition,
    algorithm: AlgorithmKind,
    order: u8,
    step: f64,
    stop: f64,
) -> System {
    let mass = |name: &str, version: u8, x0: f64, coupled: bool| {
        let mut parameters = vec![("m", M), ("c", C), ("d", D), ("x0", x0), ("v0", 0.0)];
        if coupled {
            parameters.extend([("cc", C), ("dc", D)]);
        }
        component(name, "Oscillator", version, &parameters)
    };
    let (components, connections) = match decomposition {
        Decomposition::ForceForce => (
            vec![
                mass("mass1", 2, X0, false),
                component(
                    "spring",
                    "CouplingSpring",
                    2,
                    &[("c1", C), ("d1", D), ("c3", 0.0), ("d3", 0.0)],
                ),
                mass("mass2", 3, 0.0, false),
            ],
            vec![
                connect("mass1.x", "spring.x1"),
                connect("mass1.v", "spring.v1"),
                connect("mass2.x", "spring.x2"),
                connect("mass2.v", "spring.v2"),
                connect("spring.F1", "mass1.F"),
                connect("spring.F2", "mass2.F"),
            ],
        ),
        Decomposition::ForceDisplacement => (
            vec![mass("mass1", 2, X0, false), mass("mass2", 3, 0.0, true)],
            vec![
                connect("mass1.x", "mass2.x_in"),
                connect("mass1.v", "mass2.v_in"),
                connect("mass2.Fc", "mass1.F"),
            ],
        ),
        Decomposition::DisplacementDisplacement => (
            vec![mass("mass1", 2, X0, true), mass("mass2", 3, 0.0, true)],
            vec![
                connect("mass1.x", "mass2.x_in"),
                connect("mass1.v", "mass2.v_in"),
                connect("mass2.x", "mass1.x_in"),
                connect("mass2.v", "mass1.v_in"),
            ],
        ),
    };
    System {
        components,
        connections,
        experiment: Experiment {
            start: 0.0,
            stop,
            step,
            output_interval: Some(stop),
            algorithm: Algorithm::with_order(algorithm, order).expect("an algorithm with an order"),
            ..Experiment::default()
        },
    }
}

/// Mark the connections of a [`two_mass`] system for the stability thesis' extended variant
/// (Sects. 3.4.1-3.4.6): the half-step values are the forces, and the velocities (D) or
/// positions (I) of the base excitation; for I, every source names its running integral (a
/// velocity's is the position). No extension clears the marks. (The analyser's systems in
/// `fmus/stability/` carry the same marks.)
pub fn thesis_variant(connections: &mut [Connection], extension: Extension) {
    for c in connections {
        c.half_step = match extension {
            Extension::None => false,
            Extension::Derivative => matches!(c.to.variable.as_str(), "F" | "v_in"),
            Extension::Integral => matches!(c.to.variable.as_str(), "F" | "x_in"),
        };
        c.source_integral = (extension == Extension::Integral).then(|| {
            match c.from.variable.as_str() {
                "x" => "x_int",
                "v" => "x",
                "F1" => "F1_int",
                "F2" => "F2_int",
                "Fc" => "Fc_int",
                other => panic!("no running integral known for {other}"),
            }
            .to_string()
        });
    }
}

/// The monolithic solution [x1, v1, x2, v2] at time t, by matrix exponential.
pub fn two_mass_exact(t: f64) -> [f64; 4] {
    use nalgebra::{Matrix4, Vector4};
    let a = Matrix4::new(
        0.0,
        1.0,
        0.0,
        0.0,
        -(C + C) / M,
        -(D + D) / M,
        C / M,
        D / M,
        0.0,
        0.0,
        0.0,
        1.0,
        C / M,
        D / M,
        -(C + C) / M,
        -(D + D) / M,
    );
    let z = (a * t).exp() * Vector4::new(X0, 0.0, 0.0, 0.0);
    [z[0], z[1], z[2], z[3]]
}

/// The largest deviation from the monolithic solution over a table recording mass1.x,
/// mass1.v, mass2.x, mass2.v (in that order): positions relative to X0, velocities to
/// X0 * omega.
pub fn two_mass_error(table: &Table) -> f64 {
    let omega = (C / M).sqrt();
    let mut worst: f64 = 0.0;
    for (row, &t) in table.time().iter().enumerate() {
        let exact = two_mass_exact(t);
        for (i, value) in exact.iter().enumerate() {
            let scale = if i % 2 == 0 { X0 } else { X0 * omega };
            worst = worst.max((table.values(i)[row] - value).abs() / scale);
        }
    }
    worst
}

/// Least-squares slope of log(error) over log(step).
pub fn fitted_order(steps: &[f64], errors: &[f64]) -> f64 {
    let xs: Vec<f64> = steps.iter().map(|h| h.ln()).collect();
    let ys: Vec<f64> = errors.iter().map(|e| e.ln()).collect();
    let n = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let num: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let den: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    num / den
}

/// Run a system with explicit run options (instance options, threads, recorded variables);
/// the error as a user would see it.
pub fn try_run_with(
    system: &System,
    options: &RunOptions,
) -> Result<(Table, RunStatistics), String> {
    let mut execution = Execution::instantiate(system, options).map_err(|e| e.to_string())?;
    let mut writer = CsvWriter::new(
        Vec::new(),
        Path::new("memory.csv"),
        &execution.column_names(),
    )
    .map_err(|e| e.to_string())?;
    let stats = run_system(&mut execution, &mut writer, &mut |_| {}).map_err(|e| e.to_string())?;
    let text = String::from_utf8(writer.into_inner()).map_err(|e| e.to_string())?;
    let table = Table::parse(&text, Path::new("memory.csv")).map_err(|e| e.to_string())?;
    Ok((table, stats))
}

/// Run options that record `record` (and nothing else changed).
pub fn recording(record: &[&str]) -> RunOptions {
    RunOptions {
        record: record.iter().map(|s| s.to_string()).collect(),
        ..RunOptions::default()
    }
}

/// A call sink that collects every traced FMI call as "instance: call", and the collected calls.
pub fn call_trace() -> (
    cosimo::fmu::instance::CallSink,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) {
    let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_calls = calls.clone();
    let sink: cosimo::fmu::instance::CallSink = std::sync::Arc::new(move |instance, call| {
        sink_calls
            .lock()
            .expect("the trace lock")
            .push(format!("{instance}: {call}"));
    });
    (sink, calls)
}

/// The values of column `name` of a result table.
pub fn column<'a>(table: &'a Table, name: &str) -> &'a [f64] {
    let index = table
        .column(name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", table.columns()));
    table.values(index)
}

/// A system file in `dir`: a chain of Gains (`u` of each from `y` of the one before, k = 0.5),
/// those named `busy` spinning 2 ms per step, for 100 steps of 1 ms (the balanced partition's
/// tests over ranks).
pub fn gain_chain_file(dir: &Path, names: &[&str]) -> std::path::PathBuf {
    let gain = super::fmu("Gain", 2).display().to_string();
    let components: Vec<serde_json::Value> = names
        .iter()
        .map(|&name| {
            let cost = if name == "busy" { 2e-3 } else { 0.0 };
            serde_json::json!({"name": name, "fmu": gain, "parameters": {"k": 0.5, "cost": cost}})
        })
        .collect();
    let connections: Vec<serde_json::Value> = names
        .windows(2)
        .map(|w| serde_json::json!({"from": format!("{}.y", w[0]), "to": format!("{}.u", w[1])}))
        .collect();
    let system = serde_json::json!({
        "components": components,
        "connections": connections,
        "experiment": {"stopTime": 0.1, "stepSize": 1e-3},
    });
    let path = dir.join(format!("{}.json", names.join("-")));
    std::fs::write(&path, system.to_string()).expect("writes the system file");
    path
}
