//! `cosimo validate`: each rule on a deliberately broken model description, the project's FMUs
//! without findings, and the exit code.

use std::path::Path;
use std::process::Command;

use cosimo::fmu::validate::{validate, validate_xml, Finding, Severity};

const FMI2: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="M" guid="{1}">
  <CoSimulation modelIdentifier="M" canGetAndSetFMUstate="true"/>
  <DefaultExperiment startTime="0" stopTime="1" stepSize="0.01"/>
  <ModelVariables>
    <ScalarVariable name="time" valueReference="0" causality="independent" variability="continuous"><Real/></ScalarVariable>
    <ScalarVariable name="x" valueReference="1" causality="output" variability="continuous" initial="exact"><Real start="1"/></ScalarVariable>
    <ScalarVariable name="der(x)" valueReference="2" causality="local" variability="continuous"><Real derivative="2"/></ScalarVariable>
    <ScalarVariable name="u" valueReference="3" causality="input" variability="continuous"><Real start="0"/></ScalarVariable>
    <ScalarVariable name="k" valueReference="4" causality="parameter" variability="fixed"><Real start="1" min="0"/></ScalarVariable>
    <ScalarVariable name="n" valueReference="1" causality="local" variability="discrete"><Integer/></ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs><Unknown index="2" dependencies=""/></Outputs>
    <Derivatives><Unknown index="3" dependencies="2 4"/></Derivatives>
  </ModelStructure>
</fmiModelDescription>
"#;

const FMI3: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="M" instantiationToken="{1}">
  <CoSimulation modelIdentifier="M" hasEventMode="true"/>
  <ModelVariables>
    <Float64 name="time" valueReference="0" causality="independent" variability="continuous"/>
    <Float64 name="x" valueReference="1" causality="output" initial="exact" start="1"/>
    <Float64 name="der(x)" valueReference="2" derivative="1"/>
    <Float64 name="u" valueReference="3" causality="input" start="0"/>
    <Int32 name="count" valueReference="5" causality="output" variability="discrete"/>
    <Boolean name="b" valueReference="6" causality="parameter" variability="fixed" start="true"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="1" dependencies=""/>
    <Output valueReference="5"/>
    <ContinuousStateDerivative valueReference="2" dependencies="1 3"/>
  </ModelStructure>
</fmiModelDescription>
"#;

/// Findings of `base` with `from` replaced by `to` (which must occur).
fn broken(base: &str, from: &str, to: &str) -> Vec<Finding> {
    assert!(base.contains(from), "{from}");
    validate_xml(&base.replacen(from, to, 1))
}

/// Assert exactly the given rules report errors.
fn errors_of(findings: &[Finding]) -> Vec<&'static str> {
    let mut rules: Vec<&'static str> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.rule)
        .collect();
    rules.dedup();
    rules
}

#[test]
fn the_base_descriptions_are_valid() {
    assert_eq!(validate_xml(FMI2), []);
    assert_eq!(validate_xml(FMI3), []);
}

#[test]
fn not_well_formed_xml() {
    let f = broken(FMI2, "</ModelVariables>", "</ModelVariable>");
    assert_eq!(errors_of(&f), ["xml"]);
    assert!(f[0].line.is_some());
}

#[test]
fn missing_mandatory_attributes() {
    assert_eq!(
        errors_of(&broken(FMI2, " guid=\"{1}\"", "")),
        ["attributes"]
    );
    // (the dependency on u's value reference then names nothing either)
    assert!(errors_of(&broken(
        FMI3,
        "<Float64 name=\"u\" valueReference=\"3\"",
        "<Float64 name=\"u\""
    ))
    .contains(&"attributes"));
    let f = broken(FMI2, " modelIdentifier=\"M\"", "");
    assert_eq!(errors_of(&f), ["interface"]);
}

#[test]
fn duplicate_names() {
    let f = broken(FMI2, "name=\"k\"", "name=\"u\"");
    assert_eq!(errors_of(&f), ["unique-names"]);
    assert!(
        f[0].message.contains("\"u\" is already used on line 9"),
        "{}",
        f[0]
    );
    assert_eq!(f[0].line, Some(10));
}

#[test]
fn duplicate_value_references() {
    // FMI 3: unique across all variables.
    let f = broken(
        FMI3,
        "name=\"count\" valueReference=\"5\"",
        "name=\"count\" valueReference=\"3\"",
    );
    assert!(errors_of(&f).contains(&"unique-value-references"), "{f:?}");
    // FMI 2: a shared value reference of the same type is an alias; it must agree on
    // variability ("n" shares 1 with "x", but as an Integer it is no alias).
    assert_eq!(validate_xml(FMI2), []);
    let f = broken(
        FMI2,
        "name=\"k\" valueReference=\"4\"",
        "name=\"k\" valueReference=\"1\"",
    );
    assert_eq!(errors_of(&f), ["unique-value-references"]);
}

#[test]
fn causality_and_variability_combinations() {
    let f = broken(
        FMI2,
        "causality=\"parameter\" variability=\"fixed\"",
        "causality=\"parameter\" variability=\"continuous\"",
    );
    assert_eq!(errors_of(&f), ["causality-variability"]);
    let f = broken(
        FMI3,
        "causality=\"input\" start=\"0\"",
        "causality=\"input\" variability=\"constant\" start=\"0\"",
    );
    assert_eq!(errors_of(&f), ["causality-variability"]);
    let f = broken(
        FMI3,
        "causality=\"output\" variability=\"discrete\"",
        "causality=\"output\" variability=\"continuous\"",
    );
    assert_eq!(errors_of(&f), ["causality-variability"]);
    assert!(
        f[0].message.contains("Int32 variable cannot be continuous"),
        "{}",
        f[0]
    );
}

#[test]
fn initial_combinations() {
    let f = broken(
        FMI2,
        "causality=\"parameter\" variability=\"fixed\"",
        "causality=\"parameter\" variability=\"fixed\" initial=\"calculated\"",
    );
    assert_eq!(errors_of(&f), ["initial"]);
    let f = broken(
        FMI2,
        "causality=\"input\" variability=\"continuous\"",
        "causality=\"input\" variability=\"continuous\" initial=\"approx\"",
    );
    assert_eq!(errors_of(&f), ["initial"]);
}

#[test]
fn start_values_where_required_and_nowhere_else() {
    // An exact output without a start value.
    let f = broken(FMI3, "initial=\"exact\" start=\"1\"", "initial=\"exact\"");
    assert_eq!(errors_of(&f), ["start"]);
    // An input without a start value.
    let f = broken(FMI2, "<Real start=\"0\"/>", "<Real/>");
    assert_eq!(errors_of(&f), ["start"]);
    // A calculated output with one.
    let f = broken(
        FMI3,
        "variability=\"discrete\"/>",
        "variability=\"discrete\" start=\"3\"/>",
    );
    assert_eq!(errors_of(&f), ["start"]);
    // The independent variable with one.
    let f = broken(
        FMI2,
        "variability=\"continuous\"><Real/>",
        "variability=\"continuous\"><Real start=\"0\"/>",
    );
    assert_eq!(errors_of(&f), ["start"]);
}

#[test]
fn dependencies_refer_to_existing_variables() {
    let f = broken(FMI2, "dependencies=\"2 4\"", "dependencies=\"2 9\"");
    assert_eq!(errors_of(&f), ["dependencies"]);
    assert!(f[0].message.contains("depends on \"9\""), "{}", f[0]);
    let f = broken(FMI3, "dependencies=\"1 3\"", "dependencies=\"1 3 77\"");
    assert_eq!(errors_of(&f), ["dependencies"]);
    // A known that is neither input, state nor parameter is suspicious, not wrong.
    let f = broken(FMI3, "dependencies=\"1 3\"", "dependencies=\"1 2\"");
    assert_eq!(errors_of(&f), Vec::<&str>::new());
    assert!(f
        .iter()
        .any(|f| f.rule == "dependencies" && f.severity == Severity::Warning));
    // Unknowns and derivative attributes must name variables too.
    let f = broken(
        FMI3,
        "<Output valueReference=\"5\"/>",
        "<Output valueReference=\"50\"/>",
    );
    assert!(errors_of(&f).contains(&"references"), "{f:?}");
    let f = broken(FMI3, "derivative=\"1\"", "derivative=\"42\"");
    assert!(errors_of(&f).contains(&"references"), "{f:?}");
}

#[test]
fn outputs_are_listed_in_the_model_structure() {
    let f = broken(FMI3, "    <Output valueReference=\"5\"/>\n", "");
    assert_eq!(errors_of(&f), ["outputs"]);
    assert!(f[0].message.contains("\"count\""), "{}", f[0]);
    let f = broken(
        FMI2,
        "<Unknown index=\"2\" dependencies=\"\"/>",
        "<Unknown index=\"2\" dependencies=\"\"/><Unknown index=\"5\"/>",
    );
    assert_eq!(errors_of(&f), ["outputs"]);
}

#[test]
fn default_experiment() {
    let f = broken(FMI2, "stopTime=\"1\"", "stopTime=\"0\"");
    assert_eq!(errors_of(&f), ["default-experiment"]);
    let f = broken(FMI2, "stepSize=\"0.01\"", "stepSize=\"-1\"");
    assert_eq!(errors_of(&f), ["default-experiment"]);
}

#[test]
fn a_start_value_outside_its_bounds_is_a_warning() {
    let f = broken(
        FMI2,
        "<Real start=\"1\" min=\"0\"/>",
        "<Real start=\"-1\" min=\"0\"/>",
    );
    assert_eq!(errors_of(&f), Vec::<&str>::new());
    assert_eq!(f[0].rule, "bounds");
}

#[test]
fn every_finding_is_reported_not_just_the_first() {
    let xml = FMI2
        .replacen("name=\"k\"", "name=\"u\"", 1)
        .replacen("stopTime=\"1\"", "stopTime=\"0\"", 1)
        .replacen("dependencies=\"2 4\"", "dependencies=\"2 9\"", 1);
    let f = validate_xml(&xml);
    let mut rules = errors_of(&f);
    rules.sort_unstable();
    assert_eq!(
        rules,
        ["default-experiment", "dependencies", "unique-names"]
    );
}

#[test]
fn the_project_fmus_are_valid_and_export_what_they_declare() {
    for packed in fmu_pack::packed_fmus().unwrap() {
        let findings = validate(&packed.path).unwrap();
        assert_eq!(findings, [], "{}", packed.path.display());
    }
}

/// Unpack an FMU into `dir`.
fn unpack(fmu: &Path, dir: &Path) {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(fmu).unwrap()).unwrap();
    zip.extract(dir).unwrap();
}

#[test]
fn declared_capabilities_need_exported_functions() {
    let dir = tempfile::tempdir().unwrap();
    unpack(&fmu_pack::fmu_path("Dahlquist", 2), dir.path());
    // A binary that exports no FMI function at all: the C math library.
    let libm = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6",
    ]
    .into_iter()
    .map(Path::new)
    .find(|p| p.is_file());
    let Some(libm) = libm else {
        eprintln!("no libm.so.6 found; skipping");
        return;
    };
    let binary = dir.path().join("binaries/linux64/Dahlquist.so");
    std::fs::copy(libm, &binary).unwrap();
    let findings = validate(dir.path()).unwrap();
    let missing: Vec<&str> = findings
        .iter()
        .filter(|f| f.rule == "exports" && f.severity == Severity::Error)
        .map(|f| f.message.as_str())
        .collect();
    assert!(
        missing
            .iter()
            .any(|m| m.contains("fmi2DoStep") && m.contains("every Co-Simulation FMU")),
        "{missing:?}"
    );
    assert!(
        missing
            .iter()
            .any(|m| m.contains("fmi2GetFMUstate") && m.contains("canGetAndSetFMUstate")),
        "{missing:?}"
    );
    assert!(
        missing
            .iter()
            .any(|m| m.contains("fmi2GetRealOutputDerivatives")),
        "{missing:?}"
    );

    // Through the CLI: one line per finding, exit code 2.
    let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["validate"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("error [exports] line 3: the binary does not export fmi2DoStep"),
        "{text}"
    );
}

#[test]
fn the_cli_exit_code_is_2_with_errors_and_0_with_warnings_only() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.xml");
    std::fs::write(&bad, FMI3.replacen("name=\"x\"", "name=\"u\"", 1)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["validate", "--json"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["valid"], false);
    assert_eq!(json["findings"][0]["rule"], "unique-names");
    assert_eq!(json["findings"][0]["severity"], "error");

    let good = dir.path().join("good.xml");
    std::fs::write(&good, FMI3).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["validate"])
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 errors, 1 warning"));
}
