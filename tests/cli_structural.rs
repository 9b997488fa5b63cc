//! FMI 3 structural parameters from the command line and from a system file: OscillatorChain's
//! `n` is a structural parameter in FMI 3 (set in configuration mode) and an ordinary parameter
//! in FMI 2; both ways give the same chain.

mod common;

use common::*;
use cosimo::results::Table;

const OUTPUTS: [&str; 3] = ["x_last", "v_last", "a_first"];

/// Run one OscillatorChain FMU with F_left = 1 N and the given extra arguments.
fn run_chain(version: u8, extra: &[&str]) -> Table {
    let dir = temp_dir();
    let csv = dir.path().join("out.csv");
    let path = fmu("OscillatorChain", version);
    let mut args = vec![
        "run".to_string(),
        path.display().to_string(),
        "--quiet".into(),
        "--stop-time".into(),
        "0.002".into(),
        "--start-value".into(),
        "F_left=1".into(),
        "-o".into(),
        csv.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    cosimo_ok(&args);
    read_results(&csv)
}

fn last(table: &Table, name: &str) -> f64 {
    let column = table
        .column(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    *table.values(column).last().expect("rows")
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

#[test]
fn a_structural_start_value_runs_fmi3_like_the_fmi2_parameter() {
    let fmi3 = run_chain(3, &["--start-value", "n=3"]);
    let fmi2 = run_chain(2, &["--start-value", "n=3"]);
    let default = run_chain(3, &[]);
    for name in OUTPUTS {
        let (a, b) = (last(&fmi3, name), last(&fmi2, name));
        eprintln!("{name}(0.002) with n = 3: FMI 3 {a:e}, FMI 2 {b:e}");
        assert!(relative(a, b) < 1e-12, "{name}: FMI 3 {a:e} vs FMI 2 {b:e}");
    }
    // n = 3 is not the default chain of ten.
    let (three, ten) = (last(&fmi3, "x_last"), last(&default, "x_last"));
    assert!(relative(three, ten) > 0.1, "x_last {three:e} vs {ten:e}");
}

#[test]
fn structural_parameters_are_set_in_configuration_mode_before_the_others() {
    let dir = temp_dir();
    let csv = dir.path().join("out.csv");
    let path = fmu("OscillatorChain", 3);
    let output = cosimo_ok([
        "run",
        &path.display().to_string(),
        "--stop-time",
        "1e-4",
        "--start-value",
        "F_left=1",
        "--start-value",
        "n=3",
        "--log-fmi-calls",
        "-o",
        &csv.display().to_string(),
    ]);
    let log = String::from_utf8_lossy(&output.stderr);
    let position = |call: &str| {
        log.find(call)
            .unwrap_or_else(|| panic!("{call} not called:\n{log}"))
    };
    let order = [
        position("fmi3EnterConfigurationMode()"),
        position("fmi3SetInt32(vr=[9], value=[3])"),
        position("fmi3ExitConfigurationMode()"),
        position("fmi3SetFloat64(vr=[7], value=[1.0])"),
        position("fmi3EnterInitializationMode("),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "call order:\n{log}");
    // Without structural start values there is no configuration mode.
    let output = cosimo_ok([
        "run",
        &path.display().to_string(),
        "--stop-time",
        "1e-4",
        "--start-value",
        "F_left=1",
        "--log-fmi-calls",
        "-o",
        &csv.display().to_string(),
    ]);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(!log.contains("ConfigurationMode"), "{log}");
}

#[test]
fn a_refused_structural_parameter_names_the_component_and_the_variable() {
    let dir = temp_dir();
    let path = fmu("OscillatorChain", 3);
    let output = cosimo([
        "run",
        &path.display().to_string(),
        "--quiet",
        "--start-value",
        "n=5000",
        "-o",
        &dir.path().join("out.csv").display().to_string(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{}", show(&output));
    assert!(
        stderr.contains("OscillatorChain: structural parameter \"n\" = 5000 was refused")
            && stderr.contains("[1, 1000]"),
        "{}",
        show(&output)
    );
}

#[test]
fn a_system_file_sets_n_on_fmi3_and_fmi2_chain_components() {
    let dir = temp_dir();
    let system = dir.path().join("chains.json");
    let csv = dir.path().join("out.csv");
    let component = |name: &str, version: u8, n: u32| {
        serde_json::json!({
            "name": name,
            "fmu": fmu("OscillatorChain", version),
            "parameters": { "n": n, "F_left": 1 }
        })
    };
    let text = serde_json::json!({
        "components": [
            component("short3", 3, 3),
            component("short2", 2, 3),
            component("long3", 3, 10),
        ],
        "connections": [],
        "experiment": { "startTime": 0, "stopTime": 0.002, "stepSize": 1e-4 }
    });
    std::fs::write(&system, text.to_string()).expect("system file written");
    cosimo_ok([
        "run",
        &system.display().to_string(),
        "--quiet",
        "-o",
        &csv.display().to_string(),
    ]);
    let table = read_results(&csv);
    for name in OUTPUTS {
        let (a, b) = (
            last(&table, &format!("short3.{name}")),
            last(&table, &format!("short2.{name}")),
        );
        assert!(relative(a, b) < 1e-12, "{name}: FMI 3 {a:e} vs FMI 2 {b:e}");
    }
    let single = run_chain(3, &["--start-value", "n=3"]);
    assert!(
        relative(last(&table, "short3.x_last"), last(&single, "x_last")) < 1e-12,
        "the system's chain and the single run agree"
    );
    let (three, ten) = (last(&table, "short3.x_last"), last(&table, "long3.x_last"));
    assert!(relative(three, ten) > 0.1, "x_last {three:e} vs {ten:e}");
}
