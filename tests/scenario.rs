//! `cosimo run --scenario`: libcosim's scenario files (JSON and YAML) override, bias and reset
//! Float, Integer and Boolean variables at their times, the same in one process and with
//! `--isolate`; every event is checked before the start, with the file and line.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Two Feedthrough FMUs, a's outputs into b's inputs (Float64, Int32, Boolean).
fn system(dir: &Path, version: u8) -> PathBuf {
    let fmu = fmu("Feedthrough", version);
    let path = dir.join("system.json");
    let text = format!(
        r#"{{
  "components": [
    {{ "name": "a", "fmu": "{fmu}" }},
    {{ "name": "b", "fmu": "{fmu}" }}
  ],
  "connections": [
    {{ "from": "a.Float64_continuous_output", "to": "b.Float64_continuous_input" }},
    {{ "from": "a.Int32_output", "to": "b.Int32_input" }},
    {{ "from": "a.Boolean_output", "to": "b.Boolean_input" }}
  ],
  "experiment": {{ "startTime": 0, "stopTime": 1, "stepSize": 0.1 }}
}}"#,
        fmu = fmu.display()
    );
    std::fs::write(&path, text).expect("the system is written");
    path
}

const JSON: &str = r#"{
  "description": "override, bias and reset on Float, Integer and Boolean variables",
  "defaults": { "model": "b" },
  "events": [
    { "time": 0.2, "variable": "Float64_continuous_input", "action": "override", "value": 5.0 },
    { "time": 0.3, "model": "a", "variable": "Int32_output", "action": "bias", "value": 3 },
    { "time": 0.4, "variable": "Boolean_input", "action": "override", "value": true },
    { "time": 0.5, "model": "a", "variable": "Float64_continuous_input", "action": "override", "value": 2.5 },
    { "time": 0.5, "model": "a", "variable": "Int32_input", "action": "bias", "value": 4 },
    { "time": 0.6, "variable": "Float64_continuous_input", "action": "reset" }
  ],
  "end": 0.8
}"#;

const YAML: &str = "description: the same scenario in YAML
defaults:
  model: b
events:
  - time: 0.2
    variable: Float64_continuous_input
    action: override
    value: 5.0
  - time: 0.3
    model: a
    variable: Int32_output
    action: bias
    value: 3
  - time: 0.4
    variable: Boolean_input
    action: override
    value: true
  - time: 0.5
    model: a
    variable: Float64_continuous_input
    action: override
    value: 2.5
  - time: 0.5
    model: a
    variable: Int32_input
    action: bias
    value: 4
  - time: 0.6
    variable: Float64_continuous_input
    action: reset
end: 0.8
";

fn run(system: &Path, scenario: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "run".to_string(),
        system.display().to_string(),
        "--scenario".into(),
        scenario.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let output = cosimo_ok(&args);
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The value of `column` in the row at `t`.
fn at(table: &cosimo::results::Table, column: &str, t: f64) -> f64 {
    let c = table
        .column(column)
        .unwrap_or_else(|| panic!("no column {column}: {:?}", table.columns()));
    let row = table
        .time()
        .iter()
        .position(|&x| (x - t).abs() < 1e-9)
        .unwrap_or_else(|| panic!("no row at t = {t}"));
    table.values(c)[row]
}

#[test]
fn a_scenario_takes_effect_at_its_times_in_json_and_yaml_in_process_and_isolated() {
    for version in [2, 3] {
        let dir = temp_dir();
        let system = system(dir.path(), version);
        let json = dir.path().join("scenario.json");
        let yaml = dir.path().join("scenario.yaml");
        std::fs::write(&json, JSON).expect("written");
        std::fs::write(&yaml, YAML).expect("written");
        let outputs: Vec<PathBuf> = (0..3)
            .map(|i| dir.path().join(format!("out{i}.csv")))
            .collect();
        let summary = run(&system, &json, &outputs[0], &[]);
        run(&system, &yaml, &outputs[1], &[]);
        run(&system, &json, &outputs[2], &["--isolate"]);
        let bytes: Vec<Vec<u8>> = outputs
            .iter()
            .map(|p| std::fs::read(p).expect("results"))
            .collect();
        assert!(
            bytes[0] == bytes[1],
            "FMI {version}: JSON and YAML give the same results"
        );
        assert!(
            bytes[0] == bytes[2],
            "FMI {version}: in process and isolated give the same results"
        );
        assert!(
            summary.contains("scenario: 6 event(s) took effect"),
            "{summary}"
        );
        assert!(
            summary.contains(": bias a.Int32_output with 3 (")
                && summary.contains("scenario.json:6)"),
            "{summary}"
        );
        assert!(summary.contains("t = 0.8: the scenario ended"), "{summary}");

        let table = read_results(&outputs[0]);
        let float = "b.Float64_continuous_output";
        let int = "b.Int32_output";
        let boolean = "b.Boolean_output";
        // Before the first event: b follows a (inputs at their start value 0).
        assert_eq!(at(&table, float, 0.2), 0.0);
        // The override of a connected input holds whatever the source does.
        for t in [0.3, 0.4, 0.5, 0.6] {
            assert_eq!(at(&table, float, t), 5.0, "t = {t}");
        }
        // Reset at 0.6: b follows a again, whose own input is overridden to 2.5 since 0.5.
        assert_eq!(at(&table, "a.Float64_continuous_output", 0.6), 2.5);
        assert_eq!(at(&table, float, 0.7), 2.5);
        // A bias on a connected output (+3) and on an unconnected input (+4 from 0).
        assert_eq!(at(&table, int, 0.3), 0.0);
        assert_eq!(at(&table, int, 0.4), 3.0);
        assert_eq!(at(&table, "a.Int32_output", 0.6), 4.0);
        assert_eq!(at(&table, int, 0.7), 7.0);
        // The Boolean override.
        assert_eq!(at(&table, boolean, 0.4), 0.0);
        assert_eq!(at(&table, boolean, 0.5), 1.0);
        // The end (0.8) undoes everything: b follows a, and a's inputs are back at 0.
        assert_eq!(at(&table, float, 1.0), 0.0);
        assert_eq!(at(&table, int, 1.0), 0.0);
        assert_eq!(at(&table, boolean, 1.0), 0.0);
    }
}

#[test]
fn bad_events_are_refused_before_the_start_with_file_and_line() {
    let dir = temp_dir();
    let system = system(dir.path(), 3);
    let cases = [
        (r#"{"events": [{"time": 0.1, "model": "c", "variable": "x", "action": "override", "value": 1}]}"#,
         "scenario.json:1: c.x: no component (model) \"c\"; the system's components are a, b"),
        ("{\"events\": [\n{\"time\": 0.1, \"model\": \"a\", \"variable\": \"nope\", \"action\": \"override\", \"value\": 1}]}",
         "scenario.json:2: a.nope:"),
        (r#"{"events": [{"time": 0.1, "model": "a", "variable": "Float64_discrete_output", "action": "override", "value": 1.0}]}"#,
         "the output feeds no connection"),
        (r#"{"events": [{"time": 0.1, "model": "a", "variable": "Int32_input", "action": "override", "value": 1.5}]}"#,
         "takes an integer (no fraction)"),
        (r#"{"events": [{"time": 0.1, "model": "b", "variable": "Boolean_input", "action": "bias", "value": 1}]}"#,
         "a bias adds a number to a scalar Float or Integer variable"),
        (r#"{"events": [{"time": 0.1, "model": "a", "variable": "Float64_fixed_parameter", "action": "override", "value": 1.0}]}"#,
         "the parameter is not tunable"),
        (r#"{"events": [{"time": -1, "model": "a", "variable": "Int32_input", "action": "reset"}]}"#,
         "scenario.json:1"),
    ];
    for (text, needle) in cases {
        let scenario = dir.path().join("scenario.json");
        std::fs::write(&scenario, text).expect("written");
        let out = dir.path().join("out.csv");
        let output = cosimo([
            "run",
            &system.display().to_string(),
            "--scenario",
            &scenario.display().to_string(),
            "-o",
            &out.display().to_string(),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{text}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{text}: expected {needle:?} in {stderr}"
        );
        assert!(
            !out.exists(),
            "{text}: refused before the run wrote anything"
        );
    }
}

#[test]
fn the_summary_json_lists_the_events_that_took_effect() {
    let dir = temp_dir();
    let system = system(dir.path(), 3);
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(&scenario, YAML).expect("written");
    let summary = dir.path().join("summary.json");
    let out = dir.path().join("out.csv");
    run(
        &system,
        &scenario,
        &out,
        &["--quiet", "--json-file", &summary.display().to_string()],
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("written")).expect("JSON");
    assert_eq!(json["status"], "finished");
    assert_eq!(json["steps"], 10);
    let events = json["scenario"].as_array().expect("a list");
    let actions: Vec<&str> = events.iter().filter_map(|e| e["action"].as_str()).collect();
    assert_eq!(
        actions,
        ["override", "bias", "override", "override", "bias", "reset", "end"]
    );
    assert_eq!(events[1]["variable"], "a.Int32_output");
    assert_eq!(events[1]["value"], "3");
    assert!(events[1]["location"]
        .as_str()
        .is_some_and(|l| l.ends_with("scenario.yaml:9")));
}
