//! cosimo's JSON system file and the command line's short form: the examples follow the schema
//! and parse, every validation error has its exact message.

use std::path::{Path, PathBuf};

use cosimo::settings::{Algorithm, AlgorithmKind, Experiment, LoopSettings, LoopSolver};
use cosimo::system::config::{from_command_line, from_file, from_str};
use cosimo::system::{Component, Connection, Endpoint, System};

/// The example systems: `fmus/*.json` and the stability thesis' systems in `fmus/stability/`.
fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus");
    let mut files: Vec<PathBuf> = [dir.clone(), dir.join("stability")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).expect("the example folder exists"))
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        // Study files of `cosimo sweep` have their own schema (tests/sweep.rs).
        .filter(|p| !p.to_string_lossy().contains("study"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_example_follows_the_schema_and_parses() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/system.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let files = examples();
    assert!(files.len() >= 2, "examples: {files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", file.display());
        let system = from_file(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert!(!system.components.is_empty());
        for c in &system.components {
            assert!(
                c.fmu.starts_with(file.parent().unwrap()),
                "{}: FMU paths are relative to the file's folder",
                c.fmu.display()
            );
        }
    }
}

#[test]
fn the_schema_rejects_what_the_parser_rejects() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/system.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for bad in [
        r#"{"components": []}"#,
        r#"{"components": [{"name": "a.b", "fmu": "x.fmu"}]}"#,
        r#"{"components": [{"name": "a", "fmu": "x.fmu", "subSteps": 0}]}"#,
        r#"{"components": [{"name": "a", "fmu": "x.fmu", "parameter": {}}]}"#,
        r#"{"components": [{"name": "a", "fmu": "x.fmu"}], "connections": [{"from": "a", "to": "a.u"}]}"#,
        r#"{"components": [{"name": "a", "fmu": "x.fmu"}], "experiment": {"algorithm": "euler"}}"#,
        r#"{"components": [{"name": "a", "fmu": "x.fmu"}], "experiment": {"extrapolationOrder": 4}}"#,
        r#"{"components": [{"name": "a", "fmu": "x.fmu"}], "experiment": {"stepSize": 0}}"#,
    ] {
        let json: serde_json::Value = serde_json::from_str(bad).unwrap();
        assert!(!validator.is_valid(&json), "the schema accepts {bad}");
        assert!(
            from_str(bad, Path::new("s.json")).is_err(),
            "the parser accepts {bad}"
        );
    }
}

const FULL: &str = r#"{
  "$schema": "../schemas/system.schema.json",
  "description": "test",
  "components": [
    { "name": "a", "fmu": "fmus/A.fmu", "parameters": { "k": 2, "x0": 0.1, "big": 1e300, "n": -3,
      "on": true, "label": "x y", "mode": "Option 2", "matrix": [1, 2.5, -3], "flags": [true, false],
      "e": 1e3 }, "subSteps": 4 },
    { "name": "b", "fmu": "/abs/B.fmu", "description": "second" }
  ],
  "connections": [
    { "from": "a.y", "to": "b.u" },
    { "from": "b.sub.y", "to": "a.u", "factor": 2, "offset": -1, "extrapolationOrder": 2,
      "description": "feedback", "ignoreUnits": true }
  ],
  "experiment": { "startTime": 1, "stopTime": 3, "stepSize": 0.5, "outputInterval": 1,
    "algorithm": "gauss-seidel", "extrapolationOrder": 1, "parallel": false, "tolerance": 1e-6,
    "algebraicLoops": { "solver": "fixed-point", "absoluteTolerance": 1e-8,
      "relativeTolerance": 1e-6, "maxIterations": 20 } }
}"#;

#[test]
fn a_full_file_parses_into_the_system() {
    let system = from_str(FULL, Path::new("/sys/dir/system.json")).unwrap();
    let expected = System {
        components: vec![
            Component {
                name: "a".into(),
                fmu: PathBuf::from("/sys/dir/fmus/A.fmu"),
                start_values: [
                    ("k", "2"),
                    ("x0", "0.1"),
                    ("big", "1e300"),
                    ("n", "-3"),
                    ("on", "true"),
                    ("label", "x y"),
                    ("mode", "Option 2"),
                    ("matrix", "1 2.5 -3"),
                    ("flags", "true false"),
                    ("e", "1000"),
                ]
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
                sub_steps: 4,
                isolate: None,
                call_timeout: None,
                worker_group: None,
                interface: None,
                rank: None,
            },
            Component {
                name: "b".into(),
                fmu: PathBuf::from("/abs/B.fmu"),
                start_values: vec![],
                sub_steps: 1,
                isolate: None,
                call_timeout: None,
                worker_group: None,
                interface: None,
                rank: None,
            },
        ],
        connections: vec![
            Connection::new(
                Endpoint::parse("a.y").unwrap(),
                Endpoint::parse("b.u").unwrap(),
            ),
            Connection {
                from: Endpoint {
                    component: "b".into(),
                    variable: "sub.y".into(),
                },
                to: Endpoint::parse("a.u").unwrap(),
                factor: 2.0,
                offset: -1.0,
                extrapolation_order: Some(2),
                value_map: Vec::new(),
                half_step: false,
                source_integral: None,
                ignore_units: true,
            },
        ],
        experiment: Experiment {
            start: 1.0,
            stop: 3.0,
            step: 0.5,
            output_interval: Some(1.0),
            algorithm: Algorithm::with_order(AlgorithmKind::GaussSeidel, 1)
                .expect("an algorithm with an order"),
            parallel: false,
            loops: LoopSettings {
                solver: LoopSolver::FixedPoint,
                abs_tolerance: 1e-8,
                rel_tolerance: 1e-6,
                max_iterations: 20,
            },
            tolerance: Some(1e-6),
            max_rows: cosimo::settings::DEFAULT_MAX_ROWS,
            divergence_limit: None,
        },
    };
    assert_eq!(system, expected);
}

#[test]
fn a_minimal_file_takes_the_defaults() {
    let system = from_str(
        r#"{"components": [{"name": "a", "fmu": "A.fmu"}]}"#,
        Path::new("system.json"),
    )
    .unwrap();
    assert_eq!(system.experiment, Experiment::default());
    assert_eq!(system.components[0].fmu, PathBuf::from("A.fmu"));
    assert!(system.connections.is_empty());
}

/// The message of parsing `text` as `bad.json`.
fn error(text: &str) -> String {
    match from_str(text, Path::new("dir/bad.json")) {
        Ok(system) => panic!("accepted: {system:?}"),
        Err(e) => e.to_string(),
    }
}

/// A file with components `a` and `b`, the given connections and experiment.
fn with(connections: &str, experiment: &str) -> String {
    format!(
        r#"{{"components": [{{"name": "a", "fmu": "A.fmu"}}, {{"name": "b", "fmu": "B.fmu"}}],
"connections": [{connections}], "experiment": {{{experiment}}}}}"#
    )
}

#[test]
fn json_errors_name_the_file_line_and_column() {
    assert_eq!(
        error("{\n  \"components\": [\n    {\"name\": \"a\", \"fmu\": \"A.fmu\", \"subSteps\": \"2\"}]}"),
        "dir/bad.json:3:49: invalid type: string \"2\", expected u32"
    );
    assert_eq!(
        error(r#"{"components": [{"name": "a", "fmu": "A.fmu", "parameter": {}}]}"#),
        "dir/bad.json:1:57: unknown field `parameter`, expected one of `name`, `fmu`, \
         `description`, `parameters`, `subSteps`, `isolate`, `callTimeout`, `workerGroup`, \
         `interface`, `rank`"
    );
    assert_eq!(
        error(r#"{"components": [{"name": "a"}]}"#),
        "dir/bad.json:1:29: missing field `fmu`"
    );
    assert_eq!(
        error(
            r#"{"components": [{"name": "a", "fmu": "A.fmu"}], "experiment": {"algorithm": "euler"}}"#
        ),
        "dir/bad.json:1:83: unknown variant `euler`, expected one of `jacobi`, `gauss-seidel`, `implicit`, `rim`, `constraint`"
    );
    assert_eq!(
        error(r#"{"components": [{"name": "a", "fmu": "A.fmu", "parameters": {"k": 1, "k": 2}}]}"#),
        "dir/bad.json:1:76: parameter \"k\" is given twice"
    );
    assert_eq!(
        error(r#"{"components": [{"name": "a", "fmu": "A.fmu", "parameters": {"k": null}}]}"#),
        "dir/bad.json:1:70: invalid type: null, expected a number, a boolean, a string, or an \
         array of numbers or booleans"
    );
    assert_eq!(
        error(r#"{"components": [{"name": "a", "fmu": "A.fmu", "parameters": {"k": [[1]]}}]}"#),
        "dir/bad.json:1:68: invalid type: sequence, expected a number or a boolean"
    );
    assert_eq!(
        error(
            r#"{"components": [{"name": "a", "fmu": "A.fmu"}], "experiment": {"extrapolationOrder": 300}}"#
        ),
        "dir/bad.json:1:88: invalid value: integer `300`, expected u8"
    );
    assert_eq!(
        error("{\"components\": [}"),
        "dir/bad.json:1:17: expected value"
    );
}

#[test]
fn validation_errors_name_the_file_and_the_element() {
    assert_eq!(
        error(r#"{"components": []}"#),
        "dir/bad.json: the system has no components; list at least one in \"components\""
    );
    assert_eq!(
        error(r#"{"components": [{"name": "a", "fmu": "A.fmu"}, {"name": "a", "fmu": "B.fmu"}]}"#),
        "dir/bad.json: components[1] (\"a\"): the name \"a\" is already used by components[0] \
         (\"a\"); give each component its own name"
    );
    assert_eq!(
        error(r#"{"components": [{"name": "mass.1", "fmu": "A.fmu"}]}"#),
        "dir/bad.json: components[0] (\"mass.1\"): a component name must not contain '.' \
         (connections are written component.variable); rename it, e.g. \"mass_1\""
    );
    assert_eq!(
        error(r#"{"components": [{"name": "", "fmu": "A.fmu"}]}"#),
        "dir/bad.json: components[0] (\"\"): the component name is empty; give it a name"
    );
    assert_eq!(
        error(r#"{"components": [{"name": "a", "fmu": "A.fmu", "subSteps": 0}]}"#),
        "dir/bad.json: components[0] (\"a\"): subSteps must be at least 1 (1: one step per \
         macro step)"
    );
    assert_eq!(
        error(&with(r#"{"from": "a.y", "to": "bu"}"#, "")),
        "dir/bad.json: connections[0] (a.y -> bu): \"bu\" (to) is not of the form \
         component.variable"
    );
    assert_eq!(
        error(&with(
            r#"{"from": "a.y", "to": "b.u"}, {"from": "c.y", "to": "b.v"}"#,
            ""
        )),
        "dir/bad.json: connections[1] (c.y -> b.v): there is no component \"c\" (components: a, \
         b)"
    );
    assert_eq!(
        error(&with(r#"{"from": "A.y", "to": "b.u"}"#, "")),
        "dir/bad.json: connections[0] (A.y -> b.u): there is no component \"A\" (components: a, \
         b); did you mean \"a\"?"
    );
    assert_eq!(
        error(&with(
            r#"{"from": "a.y", "to": "b.u", "extrapolationOrder": 4}"#,
            ""
        )),
        "dir/bad.json: connections[0] (a.y -> b.u): extrapolationOrder 4 is out of range; use \
         0 to 3"
    );
    assert_eq!(
        error(&with("", r#""extrapolationOrder": 5"#)),
        "dir/bad.json: experiment.extrapolationOrder: 5 is out of range; use 0 to 3"
    );
    assert_eq!(
        error(&with("", r#""startTime": 2, "stopTime": 1"#)),
        "dir/bad.json: experiment.stopTime: the stop time (1) must be a finite number after the start time (2)"
    );
    assert_eq!(
        error(&with("", r#""stopTime": 0"#)),
        "dir/bad.json: experiment.stopTime: the stop time (0) must be a finite number after the start time (0)"
    );
    assert_eq!(
        error(&with("", r#""stepSize": 0"#)),
        "dir/bad.json: experiment.stepSize: the step size must be positive, not 0"
    );
    assert_eq!(
        error(&with("", r#""stepSize": -0.1"#)),
        "dir/bad.json: experiment.stepSize: the step size must be positive, not -0.1"
    );
    assert_eq!(
        error(&with("", r#""outputInterval": 0"#)),
        "dir/bad.json: experiment.outputInterval: the output interval must be positive, not 0"
    );
    assert_eq!(
        error(&with("", r#""tolerance": -1"#)),
        "dir/bad.json: experiment.tolerance: the tolerance must be positive, not -1"
    );
    assert_eq!(
        error(&with("", r#""algebraicLoops": {"maxIterations": 0}"#)),
        "dir/bad.json: experiment.algebraicLoops: the iteration limit must be at least 1"
    );
    assert_eq!(
        error(&with("", r#""algebraicLoops": {"absoluteTolerance": -1}"#)),
        "dir/bad.json: experiment.algebraicLoops: the absolute and relative tolerances must \
         not be negative, and one of them must be positive"
    );
    // Settings that would not take effect with the chosen algorithm are refused.
    assert_eq!(
        error(&with(
            "",
            r#""algorithm": "gauss-seidel", "parallel": true"#
        )),
        "dir/bad.json: experiment.parallel: the gauss-seidel algorithm steps its components one \
         after the other, so they cannot step in parallel; use jacobi, implicit or constraint, \
         or drop it"
    );
    assert_eq!(
        error(&with("", r#""corrector": {"maxIterations": 3}"#)),
        "dir/bad.json: experiment.corrector applies to the implicit algorithm only, but the \
         algorithm is jacobi (experiment.algorithm): remove it or choose that algorithm"
    );
    assert_eq!(
        error(&with("", r#""stepControl": {"estimator": "ImSLocal"}"#)),
        "dir/bad.json: experiment.stepControl: the estimator ImSLocal belongs to the implicit \
         scheme, but the algorithm is jacobi (experiment.algorithm): choose the implicit \
         algorithm or an explicit estimator (ExLocal, ExMilne, ExSLocal)"
    );
    assert_eq!(
        error(&with("", r#""algorithm": "rim""#)),
        "dir/bad.json: the rim algorithm needs experiment.rim: the multibody component and its \
         interfaces"
    );
    assert_eq!(
        error(&with(
            "",
            r#""algorithm": "rim", "stepControl": {}, "rim": {"multibody": "a", "interfaces": [], "fastStepSize": 1e-3}"#
        )),
        "dir/bad.json: experiment.stepControl applies to jacobi, gauss-seidel and implicit \
         only, but the algorithm is rim (experiment.algorithm): remove it or choose that \
         algorithm"
    );
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let e = from_file(Path::new("no/such/system.json")).unwrap_err();
    assert!(matches!(e, cosimo::Error::Io { .. }), "{e:?}");
    assert!(e.to_string().starts_with("no/such/system.json: "), "{e}");
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_command_line_names_components_and_connects_them() {
    let experiment = Experiment {
        stop: 5.0,
        ..Experiment::default()
    };
    let system = from_command_line(
        &strings(&[
            "mass1=fmus/Oscillator-fmi2.fmu",
            "target/fmus/CouplingSpring-fmi3.fmu",
            "../models/my.model.v2.fmu",
            "unpacked/Folder",
        ]),
        &strings(&[
            "mass1.x=CouplingSpring_fmi3.x1",
            " CouplingSpring_fmi3.F1 = mass1.F ",
        ]),
        experiment.clone(),
    )
    .unwrap();
    let names: Vec<&str> = system.components.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["mass1", "CouplingSpring_fmi3", "my_model_v2", "Folder"]
    );
    assert_eq!(
        system.components[0].fmu,
        PathBuf::from("fmus/Oscillator-fmi2.fmu")
    );
    assert_eq!(
        system.components[1].fmu,
        PathBuf::from("target/fmus/CouplingSpring-fmi3.fmu")
    );
    assert!(system.components.iter().all(|c| c.sub_steps == 1));
    assert_eq!(
        system.connections,
        vec![
            Connection::new(
                Endpoint::parse("mass1.x").unwrap(),
                Endpoint::parse("CouplingSpring_fmi3.x1").unwrap()
            ),
            Connection::new(
                Endpoint::parse("CouplingSpring_fmi3.F1").unwrap(),
                Endpoint::parse("mass1.F").unwrap()
            ),
        ]
    );
    assert_eq!(system.experiment, experiment);
}

#[test]
fn command_line_errors() {
    let run = |components: &[&str], connections: &[&str]| {
        from_command_line(
            &strings(components),
            &strings(connections),
            Experiment::default(),
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(run(&[], &[]), "no FMU given; name at least one FMU to run");
    assert_eq!(
        run(&["a/X.fmu", "b/X.fmu"], &[]),
        "component \"X\": the name \"X\" is already used by component \"X\"; give each \
         component its own name"
    );
    assert_eq!(
        run(&["a=A.fmu"], &["a.y"]),
        "--connect a.y: expected FROM=TO, e.g. --connect mass1.x=spring.x1"
    );
    assert_eq!(
        run(&["a=A.fmu"], &["a.y=b.u"]),
        "--connect a.y=b.u: there is no component \"b\" (components: a)"
    );
    assert_eq!(
        run(&["a=A.fmu"], &["a.y=u"]),
        "--connect a.y=u: \"u\" (to) is not of the form component.variable"
    );
    let bad_experiment = from_command_line(
        &strings(&["a=A.fmu"]),
        &[],
        Experiment {
            step: 0.0,
            ..Experiment::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        bad_experiment,
        "--step-size: the step size must be positive, not 0"
    );
}

#[test]
fn value_maps_are_read_as_text_pairs() {
    let text = with(
        r#"{"from": "a.flag", "to": "b.flag", "valueMap": [{"from": true, "to": false}, {"from": false, "to": true}]},
           {"from": "a.mode", "to": "b.mode", "valueMap": [{"from": "Option 1", "to": "Option 2"}, {"from": 3, "to": 4}]}"#,
        "",
    );
    let system = from_str(&text, Path::new("dir/maps.json")).unwrap();
    let pairs = |c: usize| system.connections[c].value_map.clone();
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(pairs(0), vec![s("true", "false"), s("false", "true")]);
    assert_eq!(pairs(1), vec![s("Option 1", "Option 2"), s("3", "4")]);
}

#[test]
fn deep_nesting_is_a_json_error_naming_its_place_not_a_stack_overflow() {
    // serde_json refuses more than 128 levels where it builds values (an untagged value-map
    // side); typed fields refuse the wrong type first.
    let deep = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let d = deep(100_000);
    assert_eq!(
        error(&format!("{{\"components\": [{d}]}}")),
        "dir/bad.json:1:17: invalid type: sequence, expected a string"
    );
    // The run's reader skips the stability section without recursing (analysis reads it).
    let text = with("", "").replacen('{', &format!("{{\"stability\": {d}, "), 1);
    let system = from_str(&text, Path::new("dir/ok.json")).expect("the section is skipped");
    assert_eq!(system.components.len(), 2);
    let text = with(
        &format!(r#"{{"from": "a.y", "to": "b.u", "valueMap": [{{"from": {d}, "to": 1}}]}}"#),
        "",
    );
    let message = error(&text);
    assert!(
        message.starts_with("dir/bad.json:2:") && message.ends_with(": recursion limit exceeded"),
        "{message}"
    );
}

#[test]
fn a_misspelt_name_a_megabyte_long_gets_no_suggestion_rather_than_hours_of_search() {
    // The suggestion's edit distance costs the product of the two names' lengths.
    let long = |c: &str| c.repeat(1_000_000);
    let text = format!(
        r#"{{"components": [{{"name": "{}", "fmu": "A.fmu"}}],
"connections": [{{"from": "{}.y", "to": "{}.u"}}]}}"#,
        long("a"),
        long("b"),
        long("a")
    );
    let message = error(&text);
    assert!(
        message.starts_with("dir/bad.json: connections[0] (bbb"),
        "{}",
        &message[..80]
    );
    assert!(!message.contains("did you mean"));
}
