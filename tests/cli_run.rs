//! `cosimo inspect` and `cosimo run` on the project's FMUs, FMI 2 and FMI 3, checked against
//! closed-form solutions.

mod common;

use common::*;

#[test]
fn inspect_prints_model_capabilities_and_variables_for_both_versions() {
    for version in [2, 3] {
        let path = fmu("Oscillator", version);
        let out = cosimo_ok([std::ffi::OsStr::new("inspect"), path.as_os_str()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Model name       Oscillator"), "{text}");
        assert!(
            text.contains(&format!("FMI version      {version}.0")),
            "{text}"
        );
        let state_flag = if version == 2 {
            "canGetAndSetFMUstate"
        } else {
            "canGetAndSetFMUState"
        };
        assert!(text.contains(state_flag), "{text}");
        for variable in ["m", "c", "d", "x0", "v0", "F", "x", "v", "a"] {
            assert!(
                text.lines()
                    .any(|l| l.split_whitespace().next() == Some(variable)),
                "variable {variable} missing from:\n{text}"
            );
        }
    }
}

#[test]
fn inspect_json_follows_its_schema_for_every_project_fmu() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/inspect.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    for packed in fmu_pack::packed_fmus().expect("the project's FMUs pack") {
        let out = cosimo_ok([
            std::ffi::OsStr::new("inspect"),
            std::ffi::OsStr::new("--json"),
            packed.path.as_os_str(),
        ]);
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("inspect --json prints JSON");
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", packed.path.display());
        assert_eq!(json["modelName"], packed.model.as_str());
        assert_eq!(
            json["fmiVersion"]
                .as_str()
                .map(|v| v.starts_with(&packed.fmi_version.to_string())),
            Some(true)
        );
    }
}

#[test]
fn oscillator_run_matches_the_closed_form_with_both_versions() {
    let (m, c, d, f, x0, v0) = (2.0, 8.0, 0.4, 1.5, 0.5, -0.25);
    for version in [2, 3] {
        let dir = temp_dir();
        let csv = dir.path().join("out.csv");
        let path = fmu("Oscillator", version);
        let mut args: Vec<String> = vec!["run".into(), path.display().to_string()];
        for (name, value) in [
            ("m", m),
            ("c", c),
            ("d", d),
            ("F", f),
            ("x0", x0),
            ("v0", v0),
        ] {
            args.push("--start-value".into());
            args.push(format!("{name}={value}"));
        }
        args.extend(
            [
                "--stop-time",
                "5",
                "--step-size",
                "0.01",
                "--output-interval",
                "0.05",
                "--quiet",
                "-o",
            ]
            .map(String::from),
        );
        args.push(csv.display().to_string());
        cosimo_ok(&args);

        let table = read_results(&csv);
        assert_eq!(
            table.columns(),
            ["x", "v", "a", "Fc", "x_int", "Fc_int"],
            "default output columns are the outputs"
        );
        assert_eq!(
            table.time().len(),
            101,
            "one row per output point from 0 to 5 every 0.05"
        );
        let x = table.values(table.column("x").unwrap());
        let exact: Vec<f64> = table
            .time()
            .iter()
            .map(|&t| oscillator_position(m, c, d, f, x0, v0, t))
            .collect();
        // The FMU integrates a constant input exactly: only rounding separates it from the formula.
        let deviation = max_relative_deviation(x, &exact, 1e-3);
        assert!(
            deviation < 1e-10,
            "FMI {version}: x deviates by {deviation:e} from the closed form"
        );
        let a = table.values(table.column("a").unwrap());
        let v = table.values(table.column("v").unwrap());
        for i in 0..x.len() {
            let expected = (f - c * x[i] - d * v[i]) / m;
            assert!(
                (a[i] - expected).abs() < 1e-12,
                "a is the direct feedthrough of F at row {i}"
            );
        }
    }
}

#[test]
fn output_variables_select_and_order_the_columns() {
    let dir = temp_dir();
    let csv = dir.path().join("sel.csv");
    let path = fmu("Oscillator", 3);
    cosimo_ok([
        "run",
        path.to_str().unwrap(),
        "--stop-time",
        "1",
        "--step-size",
        "0.1",
        "--output-variable",
        "v",
        "--output-variable",
        "x",
        "-o",
        csv.to_str().unwrap(),
        "--quiet",
    ]);
    let header = std::fs::read_to_string(&csv).unwrap();
    assert!(header.starts_with("\"time\",\"v\",\"x\"\n"), "{header}");
}

#[test]
fn input_file_drives_an_input_linearly_between_rows() {
    // CouplingSpring has no states: its force is an algebraic function of its inputs, so the
    // recorded force shows exactly what input value the FMU saw at every communication point.
    for version in [2, 3] {
        let dir = temp_dir();
        let input = dir.path().join("in.csv");
        std::fs::write(&input, "time,x1,x2\n0,0,0\n1,0,1\n2,0,1\n").unwrap();
        let csv = dir.path().join("out.csv");
        let path = fmu("CouplingSpring", version);
        cosimo_ok([
            "run",
            path.to_str().unwrap(),
            "--input-file",
            input.to_str().unwrap(),
            "--start-value",
            "c1=2",
            "--start-value",
            "c3=0",
            "--start-value",
            "d1=0",
            "--start-value",
            "d3=0",
            "--stop-time",
            "2",
            "--step-size",
            "0.25",
            "-o",
            csv.to_str().unwrap(),
            "--quiet",
        ]);
        let table = read_results(&csv);
        let force = table
            .column("F1")
            .map(|c| table.values(c).to_vec())
            .expect("CouplingSpring records F1");
        // Inputs are set at each communication point before the step, then the outputs read
        // after the step still see them (no dynamics), so F(t) = c1 * x2(t - h) at row t.
        let expected = [0.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.0, 2.0, 2.0];
        assert_eq!(force.len(), expected.len());
        for (i, (&got, &want)) in force.iter().zip(&expected).enumerate() {
            assert!(
                (got.abs() - want).abs() < 1e-12,
                "FMI {version}, row {i}: |F| = {got}, expected {want}"
            );
        }
    }
}
