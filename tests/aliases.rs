//! FMI 3 `<Alias>` variables: listed by `inspect`, and usable wherever a variable name is:
//! `--output-variable` (the column keeps the alias), connections, start values, input files
//! and `cosimo check`'s reference columns. The Feedthrough FMU names its continuous Float64
//! input also `u` and its array input `matrix_input`.

mod common;

use common::{cosimo, fmu};
use cosimo::table::{Column, Table};

fn feedthrough() -> String {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    fmu("Feedthrough", 3).display().to_string()
}

#[test]
fn inspect_lists_the_alias_under_its_variable() {
    let output = cosimo(["inspect", &feedthrough()]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    let line = text
        .lines()
        .position(|l| l.trim_start().starts_with("Float64_array_input"))
        .expect("the variable is listed");
    assert_eq!(
        text.lines().nth(line + 1).map(str::trim),
        Some("alias matrix_input"),
        "{text}"
    );
    let json = cosimo(["inspect", &feedthrough(), "--json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let variable = value["variables"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["name"] == "Float64_array_input"))
        .expect("listed");
    assert_eq!(variable["aliases"][0]["name"], "matrix_input");
}

#[test]
fn an_alias_names_a_column_an_input_a_connection_a_start_value_and_a_reference_column() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // An input file column and an output column named by aliases.
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "time,matrix_input\n0,1 2 3 4 5 6\n").expect("writes");
    let out = dir.path().join("out.csv");
    let output = cosimo([
        "run",
        &feedthrough(),
        "--stop-time",
        "0.2",
        "--input-file",
        &input.display().to_string(),
        "--output-variable",
        "matrix_input",
        "--output-variable",
        "Float64_array_output",
        "-o",
        &out.display().to_string(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = Table::read(&out).expect("reads");
    assert_eq!(table.columns(), ["matrix_input", "Float64_array_output"]);
    let Column::Arrays(rows) = table.data(1) else {
        panic!("an array column")
    };
    assert_eq!(rows[1], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);

    // A connection into an alias, and a start value through one.
    let system = dir.path().join("system.json");
    std::fs::write(
        &system,
        format!(
            r#"{{"components": [{{"name": "a", "fmu": "{f}", "parameters": {{"u": 2.5}}}},
                               {{"name": "b", "fmu": "{f}"}}],
                "connections": [{{"from": "a.Float64_continuous_output", "to": "b.u"}}],
                "experiment": {{"stopTime": 0.2, "stepSize": 0.1}}}}"#,
            f = feedthrough()
        ),
    )
    .expect("writes");
    let output = cosimo([
        "run",
        &system.display().to_string(),
        "--output-variable",
        "b.Float64_continuous_output",
        "-o",
        &out.display().to_string(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = Table::read(&out).expect("reads");
    assert_eq!(
        table.values(0),
        [2.5, 2.5, 2.5],
        "a.u = 2.5 reaches b through the aliases"
    );

    // cosimo check with a reference column named by the alias.
    let reference = dir.path().join("ref.csv");
    std::fs::write(&reference, "time,u\n0,0\n0.2,0\n").expect("writes");
    let output = cosimo([
        "check",
        &feedthrough(),
        "--reference",
        &reference.display().to_string(),
        "--stop-time",
        "0.2",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}
