//! FMI 3 arrays sized by a structural parameter, through the CLI: ResizableGain (`y[i] =
//! k i u[i]`, `u` and `y` of `n` elements, `n` structural with start 3; arrays of other types
//! beside them) runs at its start size
//! and at sizes the user sets (`--start-value`, system-file parameters), with input files,
//! start values and result columns of the configured size; sizes that do not fit (an input
//! file, a start value, the two ends of a connection) and hostile sizes are refused by name.

mod common;

use std::path::Path;

use common::*;

const STEP: f64 = 0.1;

/// Input element `i` (from 1) at time `t`: distinct per element, linear in time.
fn input(i: usize, t: f64) -> f64 {
    i as f64 + 0.5 * t
}

/// An input file for `prefix` + "u" with `n` elements in each cell, rows at t = 0 and 1.
fn input_file(dir: &Path, prefix: &str, n: usize) -> std::path::PathBuf {
    let cell = |t: f64| {
        (1..=n)
            .map(|i| input(i, t).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let path = dir.join(format!("{prefix}u{n}.csv"));
    let text = format!("time,{prefix}u\n0,{}\n1,{}\n", cell(0.0), cell(1.0));
    std::fs::write(&path, text).expect("writes the input file");
    path
}

/// Run cosimo; the exit code and stderr.
fn refused(args: &[String]) -> (Option<i32>, String) {
    let output = cosimo(args);
    assert!(!output.status.success(), "accepted:\n{}", show(&output));
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(ToString::to_string).collect()
}

/// The run's rows hold at time t the output of the inputs set at the step's start (t - h; at
/// t = 0 the inputs at 0): check `column` (element `i` of y) against the model's formula.
fn check_element(table: &cosimo::results::Table, column: &str, i: usize, k: f64) {
    let times = table.time();
    let index = table
        .column(column)
        .unwrap_or_else(|| panic!("no column {column}"));
    let ys = table.values(index);
    assert_eq!(times.len(), 11, "rows at 0, 0.1, ..., 1");
    for (&t, &y) in times.iter().zip(ys) {
        let set_at = (t - STEP).max(0.0);
        let want = k * i as f64 * input(i, set_at);
        assert!(
            (y - want).abs() < 1e-9,
            "{column} at t = {t}: {y}, want k i u[i] = {want}"
        );
    }
}

/// Run ResizableGain at size `n` (`None`: the start value, 3) with an input file of that size
/// and k = 1.5, recording y[1] .. y[n]; check every element, and that y[n + 1] is no column.
fn run_at(n: Option<usize>, extra: &[&str]) {
    let size = n.unwrap_or(3);
    let dir = temp_dir();
    let fmu = fmu("ResizableGain", 3);
    let inputs = input_file(dir.path(), "", size);
    let csv = dir.path().join("out.csv");
    let mut args = strings(&["run", &fmu.display().to_string(), "--quiet"]);
    args.extend(strings(&["--stop-time", "1", "--step-size", "0.1"]));
    args.extend(strings(&["--start-value", "k=1.5"]));
    if let Some(n) = n {
        args.extend(strings(&["--start-value", &format!("n={n}")]));
    }
    args.extend(strings(&["--input-file", &inputs.display().to_string()]));
    args.extend(strings(extra));
    let mut elements = args.clone();
    for i in 1..=size {
        elements.extend(strings(&["--output-variable", &format!("y[{i}]")]));
    }
    elements.extend(strings(&["-o", &csv.display().to_string()]));
    cosimo_ok(&elements);
    let table = read_results(&csv);
    for i in 1..=size {
        check_element(&table, &format!("y[{i}]"), i, 1.5);
    }
    // One element more is out of range, named with the configured size.
    let mut beyond = args.clone();
    beyond.extend(strings(&["--output-variable", &format!("y[{}]", size + 1)]));
    beyond.extend(strings(&["-o", &csv.display().to_string()]));
    let (code, stderr) = refused(&beyond);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("\"y\" has {size} elements")),
        "{stderr}"
    );
    // The whole array: one column "y" whose cells hold n numbers.
    let whole = dir.path().join("whole.csv");
    let mut all = args;
    all.extend(strings(&["-o", &whole.display().to_string()]));
    cosimo_ok(&all);
    let text = std::fs::read_to_string(&whole).expect("results");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    assert_eq!(header.first(), Some(&"\"time\""), "{text}");
    let at = header
        .iter()
        .position(|&h| h == "\"y\"")
        .unwrap_or_else(|| panic!("one column \"y\": {text}"));
    let first = lines.next().expect("a row");
    let cell = first.split(',').nth(at).expect("a y cell");
    let values: Vec<f64> = cell
        .split_whitespace()
        .map(|x| x.parse().expect("a number"))
        .collect();
    let want: Vec<f64> = (1..=size).map(|i| 1.5 * i as f64 * input(i, 0.0)).collect();
    assert_eq!(values.len(), size, "{first}");
    for (got, want) in values.iter().zip(&want) {
        assert!((got - want).abs() < 1e-9, "{first}: want {want:?}");
    }
}

#[test]
fn the_start_size_runs_with_an_input_file_of_three() {
    run_at(None, &[]);
}

#[test]
fn a_configured_size_counts_in_input_files_and_results() {
    run_at(Some(2), &[]);
    run_at(Some(5), &[]);
}

#[test]
fn a_worker_process_counts_the_configured_size_too() {
    run_at(Some(4), &["--isolate"]);
}

#[test]
fn start_values_of_an_array_take_the_configured_size() {
    let dir = temp_dir();
    let fmu = fmu("ResizableGain", 3).display().to_string();
    let csv = dir.path().join("out.csv");
    let mut args = strings(&["run", &fmu, "--quiet", "--start-value", "n=4"]);
    args.extend(strings(&["--start-value", "u=1 2 3 4"]));
    for i in 1..=4 {
        args.extend(strings(&["--output-variable", &format!("y[{i}]")]));
    }
    args.extend(strings(&["-o", &csv.display().to_string()]));
    cosimo_ok(&args);
    let table = read_results(&csv);
    for i in 1..=4 {
        let y = table.values(table.column(&format!("y[{i}]")).expect("column"));
        let want = (i * i) as f64;
        assert!(y.iter().all(|&y| (y - want).abs() < 1e-12), "y[{i}]: {y:?}");
    }
    // Three values (the start size) no longer fit.
    let (code, stderr) = refused(&strings(&[
        "run",
        &fmu,
        "--start-value",
        "n=4",
        "--start-value",
        "u=1 2 3",
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("\"u\"") && stderr.contains("expected 4 space-separated values"),
        "{stderr}"
    );
}

/// A system of two ResizableGains (`a`, `b`) with sizes from the system file's parameters.
fn system(dir: &Path, a: usize, b: usize, connect: bool) -> std::path::PathBuf {
    let fmu = fmu("ResizableGain", 3);
    let connections = if connect {
        r#"[{ "from": "a.y", "to": "b.u" }]"#
    } else {
        "[]"
    };
    let text = format!(
        r#"{{ "components": [
            {{ "name": "a", "fmu": {fmu:?}, "parameters": {{ "n": {a} }} }},
            {{ "name": "b", "fmu": {fmu:?}, "parameters": {{ "n": {b}, "k": 2 }} }}
        ], "connections": {connections} }}"#,
        fmu = fmu.display().to_string()
    );
    let path = dir.join("system.json");
    std::fs::write(&path, text).expect("writes the system");
    path
}

#[test]
fn system_file_parameters_size_each_component() {
    let dir = temp_dir();
    let system = system(dir.path(), 2, 6, false);
    // One input file drives both: a.u with 2 elements, b.u with 6.
    let cell = |n: usize, t: f64| {
        (1..=n)
            .map(|i| input(i, t).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let inputs = dir.path().join("inputs.csv");
    std::fs::write(
        &inputs,
        format!(
            "time,a.u,b.u\n0,{},{}\n1,{},{}\n",
            cell(2, 0.0),
            cell(6, 0.0),
            cell(2, 1.0),
            cell(6, 1.0)
        ),
    )
    .expect("writes the inputs");
    let csv = dir.path().join("out.csv");
    let mut args = strings(&["run", &system.display().to_string(), "--quiet"]);
    args.extend(strings(&["--stop-time", "1", "--step-size", "0.1"]));
    args.extend(strings(&["--input-file", &inputs.display().to_string()]));
    for name in ["a.y[1]", "a.y[2]", "b.y[1]", "b.y[6]"] {
        args.extend(strings(&["--output-variable", name]));
    }
    args.extend(strings(&["-o", &csv.display().to_string()]));
    cosimo_ok(&args);
    let table = read_results(&csv);
    check_element(&table, "a.y[1]", 1, 1.0);
    check_element(&table, "a.y[2]", 2, 1.0);
    check_element(&table, "b.y[1]", 1, 2.0);
    check_element(&table, "b.y[6]", 6, 2.0);
}

#[test]
fn an_input_file_of_the_start_size_is_refused_at_another_size() {
    let dir = temp_dir();
    let fmu = fmu("ResizableGain", 3).display().to_string();
    let inputs = input_file(dir.path(), "", 3);
    let (code, stderr) = refused(&strings(&[
        "run",
        &fmu,
        "--start-value",
        "n=2",
        "--input-file",
        &inputs.display().to_string(),
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("u3.csv")
            && stderr.contains("column \"u\"")
            && stderr.contains("3 values, but input \"u\" takes 2"),
        "{stderr}"
    );
}

#[test]
fn a_connection_between_arrays_of_different_configured_sizes_names_both_ends() {
    let dir = temp_dir();
    let system = system(dir.path(), 2, 4, true);
    let (code, stderr) = refused(&strings(&["run", &system.display().to_string()]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("a.y has 2 element(s) and b.u has 4"),
        "{stderr}"
    );
}

#[test]
fn hostile_sizes_are_refused_with_the_parameter_and_the_limit() {
    let fmu = fmu("ResizableGain", 3).display().to_string();
    for (n, why) in [
        ("0", "give a size in 1..=16777216"),
        ("100000000", "give a size in 1..=16777216"),
        ("18446744073709551615", "give a size in 1..=16777216"),
        ("-1", "expected a non-negative integer"),
    ] {
        let (code, stderr) = refused(&strings(&["run", &fmu, "--start-value", &format!("n={n}")]));
        assert_eq!(code, Some(2), "n = {n}: {stderr}");
        assert!(
            stderr.contains("\"n\"") && stderr.contains(why),
            "n = {n}: {stderr}"
        );
    }
}
