//! FMI 3 clocks through the whole tool: a controller sampled by a periodic input clock raises
//! a triggered output clock that ticks a consumer's input clock, with a clocked value passed
//! between them (a system file run by the `cosimo` binary, in process and with `--isolate`);
//! a countdown clock the FMU schedules itself; what cannot be honoured is refused by name.
//!
//! The expectations are computed here from the models' documented formulas: the controller
//! samples at t_k = 0.1 k (k = 0, 1, ...) and gives y_k = gain t_k + (k + 1); the consumer
//! counts the ticks, holds the last y and sums them; the countdown ticks at
//! t_k = 0.1 k (k + 1) / 2 (k = 1, 2, ...).

mod common;

use std::path::Path;

use common::{cosimo, cosimo_ok, fmu, read_results, show, temp_dir};

const INTERVAL: f64 = 0.1;
const GAIN: f64 = 3.0;
/// The controller's own gain (an SSP without parameter bindings keeps it).
const DEFAULT_GAIN: f64 = 2.0;

/// The controller -> consumer system file, stepping with `step`, stopping at `stop`.
fn write_system(dir: &Path, step: f64, stop: f64, algorithm: &str) -> std::path::PathBuf {
    let system = serde_json::json!({
        "components": [
            {
                "name": "controller",
                "fmu": fmu("ClockController", 3),
                "parameters": { "gain": GAIN }
            },
            { "name": "consumer", "fmu": fmu("ClockConsumer", 3) }
        ],
        "connections": [
            { "from": "controller.ready", "to": "consumer.trigger" },
            { "from": "controller.y", "to": "consumer.u" }
        ],
        "experiment": {
            "startTime": 0,
            "stopTime": stop,
            "stepSize": step,
            "algorithm": algorithm
        }
    });
    let path = dir.join("clocked.json");
    std::fs::write(&path, serde_json::to_string_pretty(&system).unwrap()).unwrap();
    path
}

/// Samples of the controller up to and including `t` (ticks at 0, 0.1, ...).
fn samples_until(t: f64) -> u64 {
    (t / INTERVAL + 1e-9).floor() as u64 + 1
}

/// The controller's clocked output at its k-th sample (k from 1).
fn y(gain: f64, k: u64) -> f64 {
    gain * INTERVAL * (k - 1) as f64 + k as f64
}

fn check_clocked_run(extra: &[&str], step: f64) {
    let dir = temp_dir();
    let system = write_system(dir.path(), step, 1.0, "jacobi");
    run_and_check(&system, extra, GAIN, &format!("{extra:?}, step {step}"));
}

/// Run the controller -> consumer `system` (stopping at 1 s) and check every row.
fn run_and_check(system: &Path, extra: &[&str], gain: f64, label: &str) {
    let dir = temp_dir();
    let stop = 1.0;
    let y = |k: u64| y(gain, k);
    let out = dir.path().join("out.csv");
    let mut args = vec![
        "run".to_string(),
        system.display().to_string(),
        "-q".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    cosimo_ok(&args);
    let table = read_results(&out);
    let col = |name: &str| {
        let i = table
            .column(name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", table.columns()));
        table.values(i).to_vec()
    };
    let (samples, ready, count) = (
        col("controller.samples"),
        col("controller.ready"),
        col("consumer.count"),
    );
    let (held, sum) = (col("consumer.held"), col("consumer.sum"));
    assert!(
        table.time().len() >= 10,
        "{label}: {} rows",
        table.time().len()
    );
    for (row, &t) in table.time().iter().enumerate() {
        let k = samples_until(t);
        let want_sum: f64 = (1..=k).map(y).sum();
        assert_eq!(
            samples[row], k as f64,
            "{label}: controller samples at t = {t}"
        );
        assert_eq!(
            ready[row], k as f64,
            "{label}: ticks of controller.ready at t = {t}"
        );
        assert_eq!(count[row], k as f64, "{label}: consumer ticks at t = {t}");
        assert!(
            (held[row] - y(k)).abs() < 1e-9,
            "{label}: held {} at t = {t}, want {}",
            held[row],
            y(k)
        );
        assert!(
            (sum[row] - want_sum).abs() < 1e-9,
            "{label}: sum {} at t = {t}, want {want_sum}",
            sum[row]
        );
    }
    let last = *table.time().last().unwrap();
    assert!((last - stop).abs() < 1e-12, "{label}: ends at {last}");
    assert_eq!(
        *count.last().unwrap(),
        (stop / INTERVAL).round() + 1.0,
        "{label}"
    );
}

#[test]
fn a_periodic_controller_ticks_a_triggered_consumer_in_process() {
    // A step that divides the interval, and one that does not (steps are cut at the ticks).
    check_clocked_run(&[], 0.05);
    check_clocked_run(&[], 0.07);
}

#[test]
fn a_periodic_controller_ticks_a_triggered_consumer_in_worker_processes() {
    check_clocked_run(&["--isolate"], 0.05);
}

#[test]
fn clock_connections_in_an_ssp_tick_the_same_way() {
    let dir = temp_dir();
    let ssp = dir.path().join("clocked.ssp");
    std::fs::create_dir(&ssp).unwrap();
    let ssd = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<ssd:SystemStructureDescription version="1.0" name="clocked"
    xmlns:ssd="http://ssp-standard.org/SSP1/SystemStructureDescription"
    xmlns:ssc="http://ssp-standard.org/SSP1/SystemStructureCommon">
  <ssd:System name="clocked">
    <ssd:Elements>
      <ssd:Component name="controller" source="{}">
        <ssd:Connectors>
          <ssd:Connector name="ready" kind="output"><ssc:Clock/></ssd:Connector>
          <ssd:Connector name="y" kind="output"><ssc:Real/></ssd:Connector>
        </ssd:Connectors>
      </ssd:Component>
      <ssd:Component name="consumer" source="{}">
        <ssd:Connectors>
          <ssd:Connector name="trigger" kind="input"><ssc:Clock/></ssd:Connector>
          <ssd:Connector name="u" kind="input"><ssc:Real/></ssd:Connector>
        </ssd:Connectors>
      </ssd:Component>
    </ssd:Elements>
    <ssd:Connections>
      <ssd:Connection startElement="controller" startConnector="ready" endElement="consumer" endConnector="trigger"/>
      <ssd:Connection startElement="controller" startConnector="y" endElement="consumer" endConnector="u"/>
    </ssd:Connections>
  </ssd:System>
  <ssd:DefaultExperiment startTime="0" stopTime="1"/>
</ssd:SystemStructureDescription>
"#,
        fmu("ClockController", 3).display(),
        fmu("ClockConsumer", 3).display()
    );
    std::fs::write(ssp.join("SystemStructure.ssd"), ssd).unwrap();
    run_and_check(&ssp, &["--step-size", "0.04"], DEFAULT_GAIN, "SSP");
}

#[test]
fn a_countdown_clock_ticks_when_the_fmu_asks() {
    let dir = temp_dir();
    let out = dir.path().join("out.csv");
    let countdown = fmu("Countdown", 3);
    cosimo_ok([
        "run",
        countdown.to_str().unwrap(),
        "-q",
        "--stop-time",
        "2",
        "--step-size",
        "0.04",
        "-o",
        out.to_str().unwrap(),
    ]);
    let table = read_results(&out);
    let ticks = table.values(table.column("ticks").unwrap()).to_vec();
    let last = table.values(table.column("last").unwrap()).to_vec();
    // t_k = 0.1 k (k + 1) / 2.
    let tick_time = |k: u64| 0.1 * (k * (k + 1)) as f64 / 2.0;
    for (row, &t) in table.time().iter().enumerate() {
        let k = (1..100).take_while(|&k| tick_time(k) <= t + 1e-9).count() as u64;
        assert_eq!(ticks[row], k as f64, "ticks at t = {t}");
        let want_last = if k == 0 { 0.0 } else { tick_time(k) };
        assert!(
            (last[row] - want_last).abs() < 1e-9,
            "last tick at t = {t}: {} want {want_last}",
            last[row]
        );
    }
    assert_eq!(
        *ticks.last().unwrap(),
        5.0,
        "t = 0.1, 0.3, 0.6, 1.0, 1.5 up to 2 s"
    );
}

#[test]
fn clocks_under_an_algorithm_that_repeats_steps_are_refused_by_name() {
    let dir = temp_dir();
    let system = write_system(dir.path(), 0.05, 1.0, "implicit");
    let output = cosimo(["run", system.to_str().unwrap(), "-q"]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("controller") && err.contains("clocks") && err.contains("jacobi"),
        "{}",
        show(&output)
    );
}

#[test]
fn clock_columns_in_an_input_file_tick_the_fmu() {
    let dir = temp_dir();
    let input = dir.path().join("in.csv");
    // fmusim's convention: the clock ticks where its column turns 1; u changes at rows where
    // the clock does not tick too, which a clocked input must not see.
    std::fs::write(
        &input,
        "time,trigger,u\n0,0,0\n0.25,1,5\n0.3,0,100\n0.5,1,7\n0.6,0,100\n0.9,1,-2\n",
    )
    .unwrap();
    let ticks = [(0.25, 5.0), (0.5, 7.0), (0.9, -2.0)];
    let out = dir.path().join("out.csv");
    let consumer = fmu("ClockConsumer", 3);
    cosimo_ok([
        "run",
        consumer.to_str().unwrap(),
        "-q",
        "--input-file",
        input.to_str().unwrap(),
        "--stop-time",
        "1",
        "--step-size",
        "0.1",
        "-o",
        out.to_str().unwrap(),
    ]);
    let table = read_results(&out);
    let col = |name: &str| table.values(table.column(name).unwrap()).to_vec();
    let (count, held, sum) = (col("count"), col("held"), col("sum"));
    for (row, &t) in table.time().iter().enumerate() {
        let seen: Vec<f64> = ticks
            .iter()
            .filter(|(at, _)| *at <= t + 1e-9)
            .map(|(_, u)| *u)
            .collect();
        assert_eq!(count[row], seen.len() as f64, "ticks at t = {t}");
        assert_eq!(
            held[row],
            seen.last().copied().unwrap_or(0.0),
            "held at t = {t}"
        );
        assert_eq!(sum[row], seen.iter().sum::<f64>(), "sum at t = {t}");
    }
    assert_eq!(*count.last().unwrap(), 3.0);
}

#[test]
fn an_input_file_cannot_tick_a_clock_cosimo_ticks_from_its_interval() {
    let dir = temp_dir();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "time,sample\n0,0\n0.5,1\n").unwrap();
    let controller = fmu("ClockController", 3);
    let output = cosimo([
        "run",
        controller.to_str().unwrap(),
        "-q",
        "--input-file",
        input.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("\"sample\"") && err.contains("fixed clock"),
        "{}",
        show(&output)
    );
}

#[test]
fn an_output_clock_raised_inside_a_step_is_refused_by_name() {
    let controller = fmu("ClockController", 3);
    let dir = temp_dir();
    let out = dir.path().join("out.csv");
    let output = cosimo([
        "run",
        controller.to_str().unwrap(),
        "-q",
        "--start-value",
        "alarm_at=0.33",
        "-o",
        out.to_str().unwrap(),
    ]);
    // Not supported (exit code 2), rather than a failed simulation.
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("\"alarm\"") && err.contains("inside a step"),
        "{}",
        show(&output)
    );
    // The rows up to the alarm are kept, with the samples before it.
    let table = read_results(&out);
    let samples = table.values(table.column("samples").unwrap());
    assert_eq!(*samples.last().unwrap(), samples_until(0.3) as f64);
}
