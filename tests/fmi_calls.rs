//! The stepping loop makes exactly the FMI calls a chain needs, counted through the FMI call
//! log: per macro step, a source with no input steps and is read once; a feedthrough component
//! in the middle gets its input once, steps once and is read once; the end of the chain gets
//! its input and steps. No call whose answer the master drops, no set of a value the FMU holds.

mod common;

use std::collections::BTreeMap;

use common::{cosimo_ok, fmu, temp_dir};

/// FMI calls per component and function over the macro steps strictly inside a run of
/// `steps` steps whose only output points are its start and end.
fn calls_per_step(version: u8, steps: usize) -> BTreeMap<(String, String), usize> {
    let dir = temp_dir();
    let h = 1e-3;
    let json = format!(
        r#"{{
  "components": [
    {{ "name": "osc", "fmu": "{osc}" }},
    {{ "name": "mid", "fmu": "{feed}" }},
    {{ "name": "end", "fmu": "{feed}" }}
  ],
  "connections": [
    {{ "from": "osc.x", "to": "mid.Float64_continuous_input" }},
    {{ "from": "mid.Float64_continuous_output", "to": "end.Float64_continuous_input" }}
  ],
  "experiment": {{ "stopTime": {stop}, "stepSize": {h} }}
}}"#,
        osc = fmu("Oscillator", version).display(),
        feed = fmu("Feedthrough", version).display(),
        stop = steps as f64 * h,
    );
    let system = dir.path().join("chain.json");
    std::fs::write(&system, json).expect("the system file is written");
    let output = cosimo_ok([
        "run",
        system.to_str().unwrap(),
        "-q",
        "--output-interval",
        &format!("{}", steps as f64 * h),
        "-o",
        dir.path().join("out.csv").to_str().unwrap(),
        "--log-fmi-calls",
    ]);
    let log = String::from_utf8_lossy(&output.stderr).to_string();
    // "[INFO ] mid: fmi2SetReal(vr=[7], value=[0.1]) -> OK": (component, function) per line,
    // from the first step of the source to its last.
    let calls: Vec<(String, String)> = log
        .lines()
        .filter_map(|line| {
            let rest = line.split_once("] ")?.1;
            let (component, call) = rest.split_once(": ")?;
            let function = call.split('(').next()?;
            Some((component.to_string(), function.to_string()))
        })
        .collect();
    let step = format!("fmi{version}DoStep");
    let steps_of_osc: Vec<usize> = calls
        .iter()
        .enumerate()
        .filter(|(_, (c, f))| c == "osc" && *f == step)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(steps_of_osc.len(), steps, "{log}");
    // Between the source's second step and its last: whole macro steps, no output point.
    let inside = &calls[steps_of_osc[1]..steps_of_osc[steps - 1]];
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for call in inside {
        *counts.entry(call.clone()).or_default() += 1;
    }
    // Each function's calls spread evenly over the steps: per step.
    for (call, count) in counts.iter_mut() {
        assert_eq!(
            *count % (steps - 2),
            0,
            "{call:?}: {count} calls in {} steps",
            steps - 2
        );
        *count /= steps - 2;
    }
    counts
}

#[test]
fn a_chain_makes_only_the_necessary_fmi_calls() {
    for version in [2, 3] {
        let (set, get) = if version == 2 {
            ("fmi2SetReal", "fmi2GetReal")
        } else {
            ("fmi3SetFloat64", "fmi3GetFloat64")
        };
        let step = format!("fmi{version}DoStep");
        let expected: BTreeMap<(String, String), usize> = [
            ("osc", step.as_str()),
            ("osc", get),
            ("mid", set),
            ("mid", step.as_str()),
            ("mid", get),
            ("end", set),
            ("end", step.as_str()),
        ]
        .iter()
        .map(|(c, f)| ((c.to_string(), f.to_string()), 1))
        .collect();
        let counts = calls_per_step(version, 50);
        assert_eq!(counts, expected, "FMI {version}: calls per macro step");
    }
}
