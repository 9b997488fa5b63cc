//! Names a user can reuse (issue 34): no duplicate columns (`time`, a name given twice, an
//! alias with its variable), FMI 3 array elements as `y[2]` / `y[i,j]` wherever a variable is
//! named for output, an output's aliases recorded by default as FMPy does, and system files
//! described by `inspect` and refused with directions by `validate`.

mod common;

use common::{cosimo, cosimo_ok, fmu, read_results, show, temp_dir, unpacked_with_edit};
use cosimo::table::Column;

fn feedthrough(version: u8) -> String {
    fmu("Feedthrough", version).display().to_string()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn time_is_refused_as_an_output_variable_not_written_twice() {
    for version in [2, 3] {
        let dir = temp_dir();
        let out = dir.path().join("out.csv");
        let output = cosimo([
            "run",
            &feedthrough(version),
            "--stop-time",
            "0.1",
            "--output-variable",
            "time",
            "-o",
            &out.display().to_string(),
        ]);
        assert_eq!(output.status.code(), Some(2), "{}", show(&output));
        assert!(
            stderr(&output).contains("time is always the first column"),
            "{}",
            show(&output)
        );
    }
}

#[test]
fn a_variable_named_twice_or_with_its_alias_is_refused() {
    let output = cosimo([
        "run",
        &feedthrough(2),
        "--stop-time",
        "0.1",
        "--output-variable",
        "Float64_continuous_output",
        "--output-variable",
        "Float64_continuous_output",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(stderr(&output).contains("given twice"), "{}", show(&output));

    // `u` is an FMI 3 alias of Float64_continuous_input: the same values twice.
    let output = cosimo([
        "run",
        &feedthrough(3),
        "--stop-time",
        "0.1",
        "--output-variable",
        "Float64_continuous_input",
        "--output-variable",
        "u",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        stderr(&output).contains("name the same variable"),
        "{}",
        show(&output)
    );

    // The same in a system: a.x twice.
    let dir = temp_dir();
    let system = dir.path().join("system.json");
    std::fs::write(
        &system,
        format!(
            r#"{{"components": [{{"name": "a", "fmu": "{}"}}],
                "experiment": {{"stopTime": 0.1, "stepSize": 0.05}}}}"#,
            feedthrough(2).replace('\\', "/")
        ),
    )
    .expect("writes");
    let output = cosimo([
        "run",
        &system.display().to_string(),
        "--output-variable",
        "a.Float64_continuous_output",
        "--output-variable",
        "a.Float64_continuous_output",
        "-o",
        &dir.path().join("out.csv").display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(stderr(&output).contains("given twice"), "{}", show(&output));
}

/// Feedthrough FMI 3 with its 2×3 array input set to 1..6: the output follows it.
fn run_array(dir: &std::path::Path, names: &[&str]) -> std::process::Output {
    let input = dir.join("in.csv");
    std::fs::write(&input, "time,matrix_input\n0,1 2 3 4 5 6\n").expect("writes");
    let out = dir.join("out.csv");
    let mut args = vec![
        "run".to_string(),
        feedthrough(3),
        "--stop-time".into(),
        "0.2".into(),
        "--input-file".into(),
        input.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    for name in names {
        args.push("--output-variable".into());
        args.push((*name).into());
    }
    cosimo(args)
}

#[test]
fn array_elements_are_named_as_check_prints_them() {
    let dir = temp_dir();
    let output = run_array(
        dir.path(),
        &[
            "Float64_array_output[2]",
            "Float64_array_output[2,1]",
            "Float64_array_output",
        ],
    );
    assert!(output.status.success(), "{}", show(&output));
    let out = dir.path().join("out.csv");
    let table = read_results(&out);
    assert_eq!(
        table.columns(),
        [
            "Float64_array_output[2]",
            "Float64_array_output[2,1]",
            "Float64_array_output"
        ]
    );
    // Row-major: [2] is the second element, [2,1] the first of the second row (4th).
    assert_eq!(table.values(0).last(), Some(&2.0));
    assert_eq!(table.values(1).last(), Some(&4.0));
    let Column::Arrays(rows) = table.data(2) else {
        panic!("the whole array stays one column")
    };
    assert_eq!(rows.last().map(Vec::len), Some(6));

    // `plot --variable` finds element [5] of the array column, as check names it.
    let png = dir.path().join("plot.png");
    cosimo_ok([
        "plot",
        &out.display().to_string(),
        "--variable",
        "Float64_array_output[5]",
        "-o",
        &png.display().to_string(),
    ]);
    assert!(png.exists());
    let output = cosimo([
        "plot",
        &out.display().to_string(),
        "--variable",
        "Float64_array_output[7]",
        "-o",
        &png.display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(stderr(&output).contains("6 elements"), "{}", show(&output));
}

#[test]
fn an_index_outside_the_array_is_refused_with_its_size() {
    for name in [
        "Float64_array_output[7]",
        "Float64_array_output[0]",
        "Float64_array_output[3,1]",
    ] {
        let dir = temp_dir();
        let output = run_array(dir.path(), &[name]);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", show(&output));
        let text = stderr(&output);
        assert!(
            text.contains("has 6 elements (2×3)"),
            "{name}: {}",
            show(&output)
        );
    }
    let dir = temp_dir();
    let output = run_array(dir.path(), &["Float64_continuous_output[1]"]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        stderr(&output).contains("not an array"),
        "{}",
        show(&output)
    );
}

#[test]
fn an_outputs_alias_is_recorded_by_default_as_fmpy_does() {
    // FMPy (simulation.py, `_get_output_variables`) records every variable of causality
    // output, and each FMI 3 <Alias> is a variable of its own appended after the declared ones.
    let from = r#"<Float64 name="Float64_continuous_output" valueReference="8" causality="output" variability="continuous" initial="calculated"/>"#;
    let to = r#"<Float64 name="Float64_continuous_output" valueReference="8" causality="output" variability="continuous" initial="calculated"><Alias name="y_ft"/></Float64>"#;
    let unpacked = unpacked_with_edit("Feedthrough", 3, from, to);
    let dir = temp_dir();
    let out = dir.path().join("out.csv");
    cosimo_ok([
        "run",
        &unpacked.path().display().to_string(),
        "--stop-time",
        "0.1",
        "--start-value",
        "u=1.5",
        "-o",
        &out.display().to_string(),
    ]);
    let table = read_results(&out);
    let columns = table.columns();
    let alias = columns
        .iter()
        .position(|c| c == "y_ft")
        .unwrap_or_else(|| panic!("no alias column in {columns:?}"));
    assert_eq!(alias, columns.len() - 1, "after the declared outputs");
    let output = table
        .column("Float64_continuous_output")
        .expect("the variable too");
    assert_eq!(table.values(alias), table.values(output));
    assert_eq!(table.values(alias).last(), Some(&1.5));
}

fn system_file(dir: &std::path::Path) -> std::path::PathBuf {
    let system = dir.join("system.json");
    std::fs::write(
        &system,
        format!(
            r#"{{"components": [{{"name": "a", "fmu": "{f}", "parameters": {{"Float64_continuous_input": 2.5}}}},
                               {{"name": "b", "fmu": "{f}"}}],
                "connections": [{{"from": "a.Float64_continuous_output", "to": "b.Float64_continuous_input"}}],
                "experiment": {{"stopTime": 0.2, "stepSize": 0.1}}}}"#,
            f = feedthrough(2).replace('\\', "/")
        ),
    )
    .expect("writes");
    system
}

#[test]
fn inspect_describes_a_system_file_and_validate_says_what_to_use() {
    let dir = temp_dir();
    let system = system_file(dir.path());
    let path = system.display().to_string();
    let output = cosimo_ok(["inspect", &path]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Components (2)"), "{text}");
    assert!(text.contains("Feedthrough"), "{text}");
    assert!(
        text.contains("a.Float64_continuous_output -> b.Float64_continuous_input"),
        "{text}"
    );
    assert!(text.contains("stop 0.2"), "{text}");
    assert!(!text.contains("zip"), "{text}");

    let json = cosimo_ok(["inspect", &path, "--json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["components"][1]["name"], "b");
    assert_eq!(value["connections"][0]["to"], "b.Float64_continuous_input");
    assert_eq!(value["experiment"]["stopTime"], 0.2);

    let output = cosimo(["validate", &path]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let text = stderr(&output);
    assert!(text.contains("validate checks one FMU"), "{text}");
    assert!(text.contains("cosimo inspect"), "{text}");
    assert!(!text.contains("zip"), "{text}");
}
