//! `cosimo validate`: each rule on a deliberately broken model description, the project's FMUs
//! without findings, and the exit code.

mod common;

use std::path::Path;
use std::process::Command;

use common::skip::Skip;
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

/// FMI 2.0 defaults an omitted variability to continuous whatever the type, so an Integer
/// without one is continuous, which only Reals may be (FMPy reports it; pythonfmu writes it).
#[test]
fn an_fmi2_integer_without_variability_is_continuous() {
    let f = broken(
        FMI2,
        "causality=\"local\" variability=\"discrete\"><Integer/>",
        "causality=\"local\"><Integer/>",
    );
    assert_eq!(errors_of(&f), ["causality-variability"]);
    assert!(
        f[0].message
            .contains("an Integer variable cannot be continuous (only Float variables are) (FMI 2.0 defaults an omitted variability to continuous: declare it discrete)"),
        "{}",
        f[0]
    );
    // FMI 3 defaults by type: an Int32 without variability is discrete.
    let f = broken(
        FMI3,
        "causality=\"output\" variability=\"discrete\"",
        "causality=\"output\"",
    );
    assert!(errors_of(&f).is_empty(), "{f:?}");
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
    // An FMI 3 String or Binary with a start attribute: the schema has <Start> elements only
    // (FMPy's validation refuses it too; cosimo's exports wrote it for Binary inputs).
    for (element, start) in [("Binary", "0aff"), ("String", "text")] {
        let parameter = format!(
            "<{element} name=\"p\" valueReference=\"7\" causality=\"parameter\" variability=\"fixed\""
        );
        let with_attribute = format!("{parameter} start=\"{start}\"/>\n  </ModelVariables>");
        let f = broken(FMI3, "  </ModelVariables>", &with_attribute);
        assert_eq!(errors_of(&f), ["start"], "{element}");
        let with_element =
            format!("{parameter}><Start value=\"{start}\"/></{element}>\n  </ModelVariables>");
        let f = broken(FMI3, "  </ModelVariables>", &with_element);
        assert_eq!(errors_of(&f), Vec::<&str>::new(), "{element}: {f:?}");
    }
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

/// The one finding of `rule` in `findings`, as (severity, line, message).
fn one_of_rule<'a>(findings: &'a [Finding], rule: &str) -> (Severity, Option<usize>, &'a str) {
    let found = of_rule(findings, rule);
    assert_eq!(found.len(), 1, "{rule}: {findings:#?}");
    found[0]
}

/// Every value of `<DefaultExperiment>` the standard does not allow is an error on its line
/// that says what to write (issue 33: NaN, zero or negative steps, an infinite stop time).
#[test]
fn every_default_experiment_value_the_standard_does_not_allow_is_an_error() {
    let cases = [
        ("stepSize=\"0.01\"", "stepSize=\"NaN\"", "stepSize=\"NaN\" is NaN, not a finite number: write a positive communication step"),
        ("stepSize=\"0.01\"", "stepSize=\"0\"", "stepSize 0 must be positive: write the communication step"),
        ("stepSize=\"0.01\"", "stepSize=\"-0.5\"", "stepSize -0.5 must be positive"),
        ("stepSize=\"0.01\"", "stepSize=\"fast\"", "stepSize=\"fast\" is not a number (e.g. 1.5 or 2e-3); write a positive communication step"),
        ("stopTime=\"1\"", "stopTime=\"INF\"", "stopTime=\"INF\" is inf, not a finite number: write the time the experiment ends"),
        ("stopTime=\"1\"", "stopTime=\"1e400\"", "stopTime=\"1e400\" is beyond the largest Float64"),
        ("stopTime=\"1\"", "stopTime=\"inf\"", "stopTime=\"inf\" is not how XML writes infinity or not-a-number: write INF, -INF or NaN"),
        ("startTime=\"0\"", "startTime=\"-INF\"", "startTime=\"-INF\" is -inf, not a finite number"),
        ("startTime=\"0\"", "startTime=\"2\"", "stopTime 1 is not after startTime 2: write a stopTime larger than the startTime"),
        ("stepSize=\"0.01\"", "stepSize=\"0.01\" tolerance=\"0\"", "tolerance 0 must be positive: write a relative tolerance"),
        ("stepSize=\"0.01\"", "stepSize=\"0.01\" tolerance=\"-1e-6\"", "tolerance -0.000001 must be positive"),
        ("stepSize=\"0.01\"", "stepSize=\"0.01\" tolerance=\"NaN\"", "tolerance=\"NaN\" is NaN, not a finite number"),
    ];
    for (from, to, message) in cases {
        let f = broken(FMI2, from, to);
        let (severity, line, text) = one_of_rule(&f, "default-experiment");
        assert_eq!(severity, Severity::Error, "{to}");
        assert_eq!(line, Some(4), "{to}: the line of <DefaultExperiment>");
        assert!(text.contains(message), "{to}: {text}");
        assert_eq!(errors_of(&f), ["default-experiment"], "{to}: {f:#?}");
    }
    // What the standard allows stays quiet: no stop time, a stop far away, a tiny step.
    for (from, to) in [
        (" stopTime=\"1\"", ""),
        ("stopTime=\"1\"", "stopTime=\"1e300\""),
        (
            "stepSize=\"0.01\"",
            "stepSize=\"1e-300\" tolerance=\"1e-12\"",
        ),
    ] {
        assert_eq!(broken(FMI2, from, to), [], "{to}");
    }
}

/// Start values, minimums and maximums that are not values of their type are errors naming the
/// line, the variable, the attribute and what to write (issue 33).
#[test]
fn values_that_are_not_of_their_type_or_out_of_its_range_are_errors() {
    const INT2: &str = "causality=\"local\" variability=\"discrete\"><Integer/>";
    const COUNT: &str = "<Int32 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\"/>";
    let uint8 = |attributes: &str| {
        format!("<UInt8 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\" initial=\"exact\" {attributes}/>")
    };
    let int2 = |attributes: &str| {
        format!("causality=\"local\" variability=\"discrete\" initial=\"exact\"><Integer {attributes}/>")
    };
    let x3 = |start: &str| format!("initial=\"exact\" start=\"{start}\"");
    const X3: &str = "initial=\"exact\" start=\"1\"";
    let cases: Vec<(&str, &str, String, usize, &str)> = vec![
        // text in a Float64
        (FMI3, X3, x3("one"), 6, "\"x\": start=\"one\" is not a number (e.g. 1.5 or 2e-3)"),
        (FMI2, "<Real start=\"1\"/>", "<Real start=\"1,5\"/>".into(), 7, "\"x\": start=\"1,5\" is not a number"),
        // a number a double cannot hold
        (FMI3, X3, x3("1e400"), 6,
         "\"x\": start=\"1e400\" is beyond the largest Float64 (±1.7976931348623157e308) and would be read as infinity: write a smaller number, or INF if infinity is meant"),
        (FMI3, X3, x3("-Infinity"), 6, "is not how XML writes infinity or not-a-number: write INF, -INF or NaN"),
        // 1.5 in an Integer
        (FMI2, INT2, int2("start=\"1.5\""), 11,
         "\"n\": start=\"1.5\" is not an integer: Integer takes whole numbers (e.g. 1 or 2)"),
        (FMI2, INT2, int2("start=\"2.0\""), 11, "\"n\": start=\"2.0\" is not an integer as XML writes it: write 2"),
        (FMI2, INT2, int2("start=\"3000000000\""), 11,
         "\"n\": start=\"3000000000\" is out of range for Integer (-2147483648 to 2147483647)"),
        // 300 in a UInt8, and its bounds
        (FMI3, COUNT, uint8("start=\"300\""), 9,
         "\"count\": start=\"300\" is out of range for UInt8 (0 to 255): write a value in that range, or declare a wider type"),
        (FMI3, COUNT, uint8("start=\"-1\""), 9, "start=\"-1\" is out of range for UInt8"),
        (FMI3, COUNT, uint8("start=\"1\" max=\"256\""), 9, "\"count\": max=\"256\" is out of range for UInt8"),
        (FMI3, COUNT, uint8("start=\"1\" min=\"low\""), 9, "\"count\": min=\"low\" is not an integer: UInt8 takes whole numbers"),
        (FMI3, COUNT, uint8("start=\"99999999999999999999999999999999999999999\""), 9, "is out of range for UInt8"),
        // a Boolean, a scalar with two values, an empty start
        (FMI3, "start=\"true\"", "start=\"yes\"".into(), 10, "\"b\": start=\"yes\" is not a Boolean: write true or false"),
        (FMI3, X3, x3("1 2"), 6, "\"x\": start=\"1 2\" has 2 values: write one Float64 value"),
        (FMI3, X3, x3(""), 6, "\"x\": start=\"\" is empty: write one Float64 value"),
    ];
    for (base, from, to, line, message) in &cases {
        let f = broken(base, from, to);
        let (severity, at, text) = one_of_rule(&f, "values");
        assert_eq!(severity, Severity::Error, "{to}");
        assert_eq!(at, Some(*line), "{to}: {text}");
        assert!(text.contains(message), "{to}: {text}");
    }
    // A Float32 takes what a float holds.
    let float32 = FMI3.replacen("<Float64 name=\"x\"", "<Float32 name=\"x\"", 1);
    assert_eq!(validate_xml(&float32), []);
    let f = broken(&float32, X3, &x3("1e39"));
    let (_, _, text) = one_of_rule(&f, "values");
    assert!(
        text.contains("start=\"1e39\" is beyond the largest Float32"),
        "{text}"
    );
    // Array elements: each one of the type, the offending one named.
    let array = FMI3.replacen(
        COUNT,
        "<UInt8 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\" initial=\"exact\" start=\"1 2 300\"><Dimension start=\"3\"/></UInt8>",
        1,
    );
    let f = validate_xml(&array);
    let (_, _, text) = one_of_rule(&f, "values");
    assert!(
        text.contains("start=\"1 2 300\" \"300\" is out of range for UInt8"),
        "{text}"
    );
    // What the standard allows stays quiet: infinite bounds, NaN and signed starts.
    for (from, to) in [
        (
            "<Real start=\"1\" min=\"0\"/>",
            "<Real start=\"+1.5E2\" min=\"-INF\" max=\"INF\"/>".to_string(),
        ),
        ("<Real start=\"1\"/>", "<Real start=\"NaN\"/>".to_string()),
        (
            INT2,
            int2("start=\"-2147483648\" min=\"-2147483648\" max=\"+2147483647\""),
        ),
    ] {
        assert_eq!(broken(FMI2, from, &to), [], "{to}");
    }
}

/// min above max, and a start outside [min, max] (its own bounds or its declared type's), are
/// errors: no value fits, or the start value is one the variable must not take.
#[test]
fn min_above_max_and_a_start_outside_min_max_are_errors() {
    let k = "<Real start=\"1\" min=\"0\"/>";
    let cases = [
        (
            "<Real start=\"1\" min=\"2\" max=\"0\"/>",
            "\"k\": min 2 is greater than max 0, so no value fits: write a min at most the max",
        ),
        (
            "<Real start=\"-1\" min=\"0\"/>",
            "\"k\": start -1 is below min 0: write a start value within [min, max], or lower min",
        ),
        (
            "<Real start=\"5\" min=\"0\" max=\"2\"/>",
            "\"k\": start 5 is above max 2: write a start value within [min, max], or raise max",
        ),
    ];
    for (to, message) in cases {
        let f = broken(FMI2, k, to);
        assert_eq!(errors_of(&f), ["bounds"], "{to}: {f:#?}");
        let (_, line, text) = one_of_rule(&f, "bounds");
        assert_eq!(line, Some(10), "{to}");
        assert!(text.contains(message), "{to}: {text}");
    }
    // The declared type's bounds apply; its own min above max is the type's finding.
    let typed = FMI2.replacen(
        "  <ModelVariables>",
        "  <TypeDefinitions>\n    <SimpleType name=\"Positive\"><Real min=\"0\"/></SimpleType>\n    <SimpleType name=\"Empty\"><Real min=\"1\" max=\"0\"/></SimpleType>\n  </TypeDefinitions>\n  <ModelVariables>",
        1,
    );
    let f = broken(&typed, k, "<Real declaredType=\"Positive\" start=\"-1\"/>");
    let found = of_rule(&f, "bounds");
    assert_eq!(found.len(), 2, "{f:#?}");
    assert_eq!(found[0].1, Some(7), "the type's line");
    assert!(
        found[0]
            .2
            .contains("type \"Empty\": min 1 is greater than max 0"),
        "{}",
        found[0].2
    );
    assert_eq!(found[1].1, Some(14));
    assert!(
        found[1]
            .2
            .contains("\"k\": start -1 is below min 0 (of its type \"Positive\")"),
        "{}",
        found[1].2
    );
    // Integers compare exactly; a start on a bound is inside.
    let int = FMI3.replacen(
        "<Int32 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\"/>",
        "<Int64 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\" initial=\"exact\" start=\"9007199254740993\" max=\"9007199254740992\"/>",
        1,
    );
    let f = validate_xml(&int);
    let (_, _, text) = one_of_rule(&f, "bounds");
    assert!(
        text.contains("start 9007199254740993 is above max 9007199254740992"),
        "{text}"
    );
    assert_eq!(
        broken(FMI2, k, "<Real start=\"0\" min=\"0\" max=\"0\"/>"),
        []
    );
}

/// Through the command line: a value finding fails validation (exit 2), with its line.
#[test]
fn the_cli_reports_a_start_value_out_of_its_types_range() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("modelDescription.xml");
    std::fs::write(
        &bad,
        FMI3.replacen(
            "<Int32 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\"/>",
            "<UInt8 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\" initial=\"exact\" start=\"300\"/>",
            1,
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["validate"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "error [values] line 9: \"count\": start=\"300\" is out of range for UInt8 (0 to 255)"
        ),
        "{text}"
    );
    assert!(text.contains("modelDescription.xml: 1 error"), "{text}");
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

/// The findings of `rule` as (severity, line, message).
fn of_rule<'a>(findings: &'a [Finding], rule: &str) -> Vec<(Severity, Option<usize>, &'a str)> {
    findings
        .iter()
        .filter(|f| f.rule == rule)
        .map(|f| (f.severity, f.line, f.message.as_str()))
        .collect()
}

#[test]
fn empty_names_of_units_types_items_and_categories_are_warnings() {
    // The schema types them xs:normalizedString: empty loads, but nothing can refer to it.
    let xml = FMI2.replacen(
        "  <DefaultExperiment",
        r#"  <UnitDefinitions>
    <Unit name=""><DisplayUnit name=""/></Unit>
  </UnitDefinitions>
  <TypeDefinitions>
    <SimpleType name=""><Enumeration><Item name="" value="1"/></Enumeration></SimpleType>
  </TypeDefinitions>
  <LogCategories><Category name=""/></LogCategories>
  <DefaultExperiment"#,
        1,
    );
    let f = validate_xml(&xml);
    assert_eq!(errors_of(&f), Vec::<&str>::new(), "{f:#?}");
    assert_eq!(
        of_rule(&f, "names"),
        [
            (
                Severity::Warning,
                Some(5),
                "a <Unit> has an empty \"name\": variables can refer to it only with unit=\"\""
            ),
            (
                Severity::Warning,
                Some(5),
                "a <DisplayUnit> of unit \"\" has an empty \"name\": variables can select it only with displayUnit=\"\""
            ),
            (
                Severity::Warning,
                Some(8),
                "a <SimpleType> has an empty \"name\": variables can declare it only with declaredType=\"\""
            ),
            (
                Severity::Warning,
                Some(8),
                "an enumeration <Item> of type \"\" has an empty \"name\": its value can be shown and set only by number"
            ),
            (
                Severity::Warning,
                Some(10),
                "a log <Category> has an empty \"name\": it can be selected for logging only by the empty name"
            ),
        ]
    );

    let xml = FMI3.replacen(
        "  <ModelVariables>",
        r#"  <UnitDefinitions><Unit name=" "/></UnitDefinitions>
  <TypeDefinitions>
    <Float64Type name=""/>
    <EnumerationType name="E"><Item name="" value="1"/></EnumerationType>
  </TypeDefinitions>
  <ModelVariables>"#,
        1,
    );
    let f = validate_xml(&xml);
    assert_eq!(errors_of(&f), Vec::<&str>::new(), "{f:#?}");
    let names: Vec<_> = of_rule(&f, "names")
        .into_iter()
        .map(|(s, line, m)| (s, line, m.split(':').next().unwrap_or_default()))
        .collect();
    assert_eq!(
        names,
        [
            (Severity::Warning, Some(4), "a <Unit> has an empty \"name\""),
            (
                Severity::Warning,
                Some(6),
                "a <Float64Type> has an empty \"name\""
            ),
            (
                Severity::Warning,
                Some(7),
                "an enumeration <Item> of type \"E\" has an empty \"name\""
            ),
        ]
    );
    // A missing name is against the schema: an error.
    let f = validate_xml(&xml.replacen("<Float64Type name=\"\"/>", "<Float64Type/>", 1));
    assert_eq!(errors_of(&f), ["attributes"]);
    assert_eq!(
        of_rule(&f, "attributes"),
        [(Severity::Error, Some(6), "a <Float64Type> has no \"name\"")]
    );
}

#[test]
fn an_empty_variable_name_is_an_error_of_the_naming_convention() {
    // Loads (the schema allows it), but both naming conventions need at least one character.
    let f = broken(FMI2, "name=\"n\"", "name=\"\"");
    assert_eq!(errors_of(&f), ["naming-convention"]);
    assert_eq!(f[0].line, Some(11));
    assert_eq!(
        f[0].message,
        "a <ScalarVariable> (valueReference 1) has an empty name: both naming conventions need \
         at least one character, and connections, start values and results name variables"
    );
    // The variable is still checked (its other findings are reported too).
    let f = broken(FMI3, "name=\"b\"", "name=\"\"");
    assert_eq!(errors_of(&f), ["naming-convention"]);
    assert!(f[0]
        .message
        .starts_with("a <Boolean> (valueReference 6) has an empty name"));
    let f = broken(
        FMI3,
        "name=\"b\" valueReference=\"6\" causality=\"parameter\" variability=\"fixed\" start=\"true\"",
        "name=\"\" valueReference=\"6\" causality=\"parameter\" variability=\"fixed\"",
    );
    assert_eq!(errors_of(&f), ["naming-convention", "start"]);
}

#[test]
fn names_against_the_structured_naming_convention_are_warnings() {
    let structured = |names: &[&str]| -> Vec<Finding> {
        let vars: String = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                format!(
                    "    <Float64 name=\"{n}\" valueReference=\"{}\"/>\n",
                    i + 10
                )
            })
            .collect();
        let xml = FMI3
            .replacen(
                "instantiationToken=\"{1}\"",
                "instantiationToken=\"{1}\" variableNamingConvention=\"structured\"",
                1,
            )
            .replacen(
                "  </ModelVariables>",
                &format!("{vars}  </ModelVariables>"),
                1,
            );
        validate_xml(&xml)
    };
    // Valid structured names (FMI 2.0 section 2.2.9, FMI 3.0 section 2.4.7.5.1).
    let valid = [
        "a",
        "_a1.b_2",
        "a[1]",
        "a[1,2].b[3]",
        "'a b'.c",
        "'#1 \\' x'",
        "der(a.b)",
        "der(a,2)",
        "der('q')",
    ];
    assert_eq!(structured(&valid), [], "{valid:?}");
    let invalid = [
        ("1a", "unexpected '1' at character 1"),
        ("a b", "unexpected ' ' at character 2"),
        ("a..b", "unexpected '.' at character 3"),
        ("a[]", "unexpected ']' at character 3"),
        ("a[1", "unexpected end"),
        ("''", "unexpected '\\'' at character 2"),
        (
            "'a\\q'",
            "an invalid escape in a quoted name at character 3",
        ),
        ("der(a", "unexpected end"),
        ("der(der(a))", "unexpected '(' at character 8"),
        ("a.", "unexpected end"),
        ("ä", "unexpected 'ä' at character 1"),
    ];
    for (name, problem) in invalid {
        let f = structured(&[name]);
        assert_eq!(errors_of(&f), Vec::<&str>::new(), "{name}: {f:?}");
        assert_eq!(f.len(), 1, "{name}: {f:?}");
        assert_eq!(f[0].rule, "naming-convention");
        assert_eq!(f[0].severity, Severity::Warning);
        assert_eq!(f[0].line, Some(11));
        assert_eq!(
            f[0].message,
            format!(
                "\"{name}\" is not a structured name (variableNamingConvention=\"structured\"): \
                 {problem}"
            ),
            "{name}"
        );
    }
    // Flat names: anything but carriage return, line feed and tab.
    let f = broken(FMI2, "name=\"k\"", "name=\"k&#9;1\"");
    assert_eq!(errors_of(&f), Vec::<&str>::new());
    assert_eq!(
        of_rule(&f, "naming-convention"),
        [(
            Severity::Warning,
            Some(10),
            "\"k\t1\" is not a flat name (variableNamingConvention=\"flat\"): it contains the \
             control character '\\t'"
        )]
    );
    assert_eq!(
        validate_xml(&FMI2.replacen("name=\"k\"", "name=\"k 1 ä\"", 1)),
        []
    );
}

#[test]
fn units_and_display_units_must_be_defined() {
    // Not a schema rule (FMPy checks it): a warning, the values cannot be converted.
    let f = broken(
        FMI2,
        "<Real start=\"1\" min=\"0\"/>",
        "<Real start=\"1\" min=\"0\" unit=\"N/m\"/>",
    );
    assert_eq!(errors_of(&f), Vec::<&str>::new());
    assert_eq!(
        of_rule(&f, "units"),
        [(
            Severity::Warning,
            Some(10),
            "\"k\": unit \"N/m\" is not defined in <UnitDefinitions>; connections cannot convert \
             its values to other units"
        )]
    );
    let with_units = FMI2.replacen(
        "  <DefaultExperiment",
        "  <UnitDefinitions><Unit name=\"N/m\"><DisplayUnit name=\"kN/m\" factor=\"0.001\"/></Unit></UnitDefinitions>\n  <DefaultExperiment",
        1,
    );
    let f = broken(
        &with_units,
        "<Real start=\"1\" min=\"0\"/>",
        "<Real start=\"1\" min=\"0\" unit=\"N/m\" displayUnit=\"kN/m\"/>",
    );
    assert_eq!(f, []);
    let f = broken(
        &with_units,
        "<Real start=\"1\" min=\"0\"/>",
        "<Real start=\"1\" min=\"0\" unit=\"N/m\" displayUnit=\"N/mm\"/>",
    );
    assert_eq!(
        of_rule(&f, "units"),
        [(
            Severity::Warning,
            Some(11),
            "\"k\": display unit \"N/mm\" is not a <DisplayUnit> of unit \"N/m\""
        )]
    );
    // FMI 3: a type's unit is checked once, at the type; a variable's own display unit against
    // the unit it inherits.
    let xml = FMI3
        .replacen(
            "  <ModelVariables>",
            "  <UnitDefinitions><Unit name=\"m\"/></UnitDefinitions>\n  <TypeDefinitions>\n    <Float64Type name=\"Force\" unit=\"N\"/>\n    <Float64Type name=\"Length\" unit=\"m\"/>\n  </TypeDefinitions>\n  <ModelVariables>",
            1,
        )
        .replacen(
            "<Float64 name=\"u\" valueReference=\"3\"",
            "<Float64 name=\"u\" valueReference=\"3\" declaredType=\"Force\"",
            1,
        )
        .replacen(
            "<Float64 name=\"x\" valueReference=\"1\"",
            "<Float64 name=\"x\" valueReference=\"1\" declaredType=\"Length\" displayUnit=\"mm\"",
            1,
        );
    let f = validate_xml(&xml);
    assert_eq!(errors_of(&f), Vec::<&str>::new());
    assert_eq!(
        of_rule(&f, "units"),
        [
            (
                Severity::Warning,
                Some(6),
                "type \"Force\": unit \"N\" is not defined in <UnitDefinitions>; connections \
                 cannot convert its values to other units"
            ),
            (
                Severity::Warning,
                Some(11),
                "\"x\": display unit \"mm\" is not a <DisplayUnit> of unit \"m\""
            ),
        ]
    );
}

#[test]
fn an_empty_model_identifier() {
    // Model Exchange: cosimo loads the file, but the interface's binary cannot be named.
    let xml = FMI2.replacen(
        "  <CoSimulation",
        "  <ModelExchange modelIdentifier=\"\"/>\n  <CoSimulation",
        1,
    );
    let f = validate_xml(&xml);
    assert_eq!(errors_of(&f), ["interface"]);
    assert_eq!(f[0].line, Some(3));
    assert_eq!(
        f[0].message,
        "<ModelExchange> has an empty \"modelIdentifier\": it must name the interface's binary \
         (a C identifier)"
    );
    let f = broken(FMI3, "modelIdentifier=\"M\"", "modelIdentifier=\" \"");
    assert_eq!(errors_of(&f), ["interface"]);
    assert!(
        f[0].message.ends_with("; cosimo cannot load the FMU"),
        "{}",
        f[0]
    );
}

#[test]
fn dependency_kinds_must_match_the_dependencies() {
    // The parser ignores kinds that do not match (with a warning); validate says it is wrong.
    let f = broken(
        FMI2,
        "dependencies=\"2 4\"",
        "dependencies=\"2 4\" dependenciesKind=\"dependent\"",
    );
    assert_eq!(errors_of(&f), ["dependencies"]);
    assert_eq!(
        f[0].message,
        "\"der(x)\": dependenciesKind lists 1 kinds for 2 dependencies"
    );
    let f = broken(
        FMI3,
        "<Output valueReference=\"5\"/>",
        "<Output valueReference=\"5\" dependenciesKind=\"constant\"/>",
    );
    assert_eq!(errors_of(&f), ["dependencies"]);
}

#[test]
fn clocks_must_name_clock_variables() {
    // The parser drops such a reference with a warning; validate says it is wrong.
    let f = broken(
        FMI3,
        "variability=\"discrete\"/>",
        "variability=\"discrete\" clocks=\"1\"/>",
    );
    assert_eq!(errors_of(&f), ["references"]);
    assert_eq!(f[0].line, Some(9));
    assert_eq!(
        f[0].message,
        "\"count\": clocks refers to \"x\", which is not a Clock"
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
    let Some(libm) = common::skip::libm() else {
        common::skip::skipped(Skip::NoLibm, "no libm.so.6 found (dlopen, ldconfig -p)");
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
        text.contains("error [exports] line 4: the binary does not export fmi2DoStep"),
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

// ------------------------------------------------------------------------------------------
// Hostile and large files (issue 15)

/// An FMI 2 description with `n` output variables, one per line.
fn many_variables(n: usize) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\"?>\n<fmiModelDescription fmiVersion=\"2.0\" modelName=\"M\" \
         guid=\"g\">\n<CoSimulation modelIdentifier=\"M\"/>\n<ModelVariables>\n",
    );
    for i in 1..=n {
        xml.push_str(&format!(
            "<ScalarVariable name=\"x{i}\" valueReference=\"{i}\" causality=\"output\" \
             variability=\"continuous\" initial=\"exact\"><Real start=\"1\"/></ScalarVariable>\n"
        ));
    }
    xml.push_str("</ModelVariables>\n<ModelStructure><Outputs>\n");
    for i in 1..=n {
        xml.push_str(&format!("<Unknown index=\"{i}\" dependencies=\"\"/>\n"));
    }
    xml.push_str("</Outputs></ModelStructure>\n</fmiModelDescription>\n");
    xml
}

#[test]
fn twenty_thousand_variables_validate_in_linear_time() {
    // Each element's line used to be counted from the start of the file: minutes for this one.
    let xml = many_variables(20_000);
    let findings = validate_xml(&xml);
    assert_eq!(findings, []);
    let broken = xml.replacen("name=\"x20000\"", "name=\"x1\"", 1);
    let findings = validate_xml(&broken);
    assert_eq!(errors_of(&findings), ["unique-names"]);
    assert_eq!(findings[0].line, Some(20_004));
}

#[test]
fn nesting_deeper_than_the_reader_takes_is_one_xml_error() {
    // 150,000 levels used to overflow the stack.
    let depth = 150_000;
    let xml = FMI2.replacen(
        "<ModelVariables>",
        &format!(
            "<VendorAnnotations><Tool name=\"x\">{}{}</Tool></VendorAnnotations>\n  \
             <ModelVariables>",
            "<a>".repeat(depth),
            "</a>".repeat(depth)
        ),
        1,
    );
    let findings = validate_xml(&xml);
    assert_eq!(errors_of(&findings), ["xml"]);
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].line, Some(5));
    assert!(
        findings[0]
            .message
            .contains("nested deeper than 1000 levels"),
        "{}",
        findings[0].message
    );
}

#[test]
fn findings_are_bounded_however_many_tokens_quote_a_long_name() {
    // A finding per token, each quoting the long name and the whole attribute: 40 KB of file
    // made 800 MB of findings.
    let name = "n".repeat(100_000);
    let xml = FMI3.replacen(
        "<Float64 name=\"u\" valueReference=\"3\"",
        &format!(
            "<Float64 name=\"{name}\" valueReference=\"9\" clocks=\"{}\"/>\n    \
             <Float64 name=\"u\" valueReference=\"3\"",
            "x ".repeat(20_000)
        ),
        1,
    );
    let findings = validate_xml(&xml);
    assert_eq!(findings.len(), 1001);
    assert!(findings[..1000]
        .iter()
        .all(|f| f.rule == "references" && f.message.chars().count() <= 1003));
    assert_eq!(findings[1000].rule, "findings");
    assert_eq!(
        findings[1000].message,
        "checking stopped after 1000 findings: fix these first"
    );
}

/// The findings of `rule`'s messages.
fn messages_of<'a>(findings: &'a [Finding], rule: &str) -> Vec<&'a str> {
    of_rule(findings, rule)
        .into_iter()
        .map(|(_, _, m)| m)
        .collect()
}

/// An Enumeration's start must be the value of one of its type's items (issue 33).
#[test]
fn an_enumeration_start_outside_its_items_is_an_error() {
    const COUNT: &str = "<Int32 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\"/>";
    let fmi3 = FMI3.replacen(
        "  <ModelVariables>",
        "  <TypeDefinitions><EnumerationType name=\"Mode\"><Item name=\"off\" value=\"1\"/><Item name=\"on\" value=\"2\"/><Item name=\"boost\" value=\"5\"/></EnumerationType></TypeDefinitions>\n  <ModelVariables>",
        1,
    );
    let mode = |start: &str| {
        format!("<Enumeration name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\" declaredType=\"Mode\" initial=\"exact\" start=\"{start}\"/>")
    };
    let f = broken(&fmi3, COUNT, &mode("3"));
    assert_eq!(errors_of(&f), ["values"], "{f:#?}");
    let (_, line, text) = one_of_rule(&f, "values");
    assert_eq!(line, Some(10));
    assert_eq!(
        text,
        "\"count\": start 3 is not the value of an item of its enumeration type \"Mode\" (1, 2, 5): write one of them"
    );
    assert_eq!(broken(&fmi3, COUNT, &mode("5")), []);

    let fmi2 = FMI2.replacen(
        "  <ModelVariables>",
        "  <TypeDefinitions><SimpleType name=\"Gear\"><Enumeration><Item name=\"low\" value=\"1\"/><Item name=\"high\" value=\"2\"/></Enumeration></SimpleType></TypeDefinitions>\n  <ModelVariables>",
        1,
    );
    let int2 = "<Integer/>";
    let f = broken(
        &fmi2,
        int2,
        "<Enumeration declaredType=\"Gear\" start=\"7\"/>",
    );
    assert_eq!(
        messages_of(&f, "values"),
        ["\"n\": start 7 is not the value of an item of its enumeration type \"Gear\" (1, 2): write one of them"],
        "{f:#?}"
    );
    assert_eq!(
        messages_of(
            &broken(
                &fmi2,
                int2,
                "<Enumeration declaredType=\"Gear\" start=\"2\"/>"
            ),
            "values"
        ),
        Vec::<&str>::new()
    );
}

/// FMI 3 arrays: the start gives one value or one per element; a dimension's size is a positive
/// start or a UInt64 structural parameter or constant (issue 33).
#[test]
fn array_dimensions_and_their_start_values_must_agree() {
    const COUNT: &str = "<Int32 name=\"count\" valueReference=\"5\" causality=\"output\" variability=\"discrete\"/>";
    let with = |variables: &str| FMI3.replacen(COUNT, &format!("{COUNT}\n    {variables}"), 1);
    let array = |start: &str, dimensions: &str| {
        format!("<Float64 name=\"a\" valueReference=\"7\" causality=\"parameter\" variability=\"fixed\" start=\"{start}\">{dimensions}</Float64>")
    };
    let n = |attributes: &str| format!("<UInt64 name=\"n\" valueReference=\"8\" {attributes}/>");
    let structural = n("causality=\"structuralParameter\" variability=\"fixed\" start=\"2\"");
    // What the standard allows: one value per element, one value for all, a structural
    // parameter's size.
    for variables in [
        array("1 2 3", "<Dimension start=\"3\"/>"),
        array("1", "<Dimension start=\"3\"/>"),
        array(
            "1 2 3 4 5 6",
            "<Dimension start=\"3\"/><Dimension start=\"2\"/>",
        ),
        format!(
            "{structural}\n    {}",
            array("1 2", "<Dimension valueReference=\"8\"/>")
        ),
    ] {
        let f = validate_xml(&with(&variables));
        assert_eq!(
            messages_of(&f, "dimensions"),
            Vec::<&str>::new(),
            "{variables}"
        );
        assert_eq!(errors_of(&f), Vec::<&str>::new(), "{variables}: {f:#?}");
    }
    let cases = [
        (
            array("1 2", "<Dimension start=\"3\"/>"),
            "\"a\": its start has 2 values, but its dimensions (3) make 3 elements: give one value per element, or a single value for all of them",
        ),
        (
            array("1 2 3", "<Dimension start=\"3\"/><Dimension start=\"2\"/>"),
            "\"a\": its start has 3 values, but its dimensions (3 x 2) make 6 elements",
        ),
        (
            format!(
                "{structural}\n    {}",
                array("1 2 3", "<Dimension valueReference=\"8\"/>")
            ),
            "\"a\": its start has 3 values, but its dimensions (2) make 2 elements",
        ),
        (
            array("1", "<Dimension start=\"0\"/>"),
            "\"a\": its Dimension 1 of 1 has start 0: an array's initial sizes must be positive",
        ),
        (
            array("1", "<Dimension start=\"3\" valueReference=\"8\"/>"),
            "\"a\": its Dimension 1 of 1 has both start and valueReference: give one of them",
        ),
        (
            array("1", "<Dimension/>"),
            "\"a\": its Dimension 1 of 1 has neither start nor valueReference",
        ),
        (
            array("1", "<Dimension valueReference=\"99\"/>"),
            "\"a\": its Dimension 1 of 1: valueReference=\"99\" is not the value reference of a variable",
        ),
        (
            array("1", "<Dimension valueReference=\"5\"/>"),
            "\"a\": its Dimension 1 of 1 refers to \"count\", of type Int32: a dimension's size is a UInt64",
        ),
        (
            format!(
                "{}\n    {}",
                n("causality=\"parameter\" variability=\"fixed\" start=\"2\""),
                array("1", "<Dimension valueReference=\"8\"/>")
            ),
            "\"a\": its Dimension 1 of 1 refers to \"n\", which is neither a structural parameter nor a constant (causality \"parameter\", variability \"fixed\")",
        ),
        (
            format!(
                "{}\n    {}",
                n("causality=\"structuralParameter\" variability=\"fixed\" start=\"0\""),
                array("1", "<Dimension valueReference=\"8\"/>")
            ),
            "\"a\": its Dimension 1 of 1 refers to \"n\", whose start is 0",
        ),
        (
            "<UInt64 name=\"n\" valueReference=\"8\" causality=\"structuralParameter\" variability=\"fixed\" start=\"2\"><Dimension start=\"2\"/></UInt64>".to_string(),
            "\"n\": a structural parameter cannot be an array",
        ),
    ];
    for (variables, message) in &cases {
        let f = validate_xml(&with(variables));
        let found = messages_of(&f, "dimensions");
        assert_eq!(found.len(), 1, "{variables}: {f:#?}");
        assert!(found[0].starts_with(message), "{variables}:\n{}", found[0]);
        let (severity, line, _) = one_of_rule(&f, "dimensions");
        assert_eq!(severity, Severity::Error);
        assert!(line.is_some());
    }
}

/// `nominal` is a positive finite number, on a variable and on a type (issue 33).
#[test]
fn a_nominal_that_is_not_positive_and_finite_is_an_error() {
    let k = "<Real start=\"1\" min=\"0\"/>";
    for nominal in ["0", "-2", "INF", "NaN"] {
        let f = broken(
            FMI2,
            k,
            &format!("<Real start=\"1\" min=\"0\" nominal=\"{nominal}\"/>"),
        );
        assert_eq!(errors_of(&f), ["values"], "{nominal}: {f:#?}");
        let (_, line, text) = one_of_rule(&f, "values");
        assert_eq!(line, Some(10));
        assert!(
            text.starts_with(&format!(
                "\"k\": nominal {} is not a positive finite number",
                nominal.replace("INF", "inf")
            )),
            "{text}"
        );
    }
    assert_eq!(
        broken(FMI2, k, "<Real start=\"1\" min=\"0\" nominal=\"1e-3\"/>"),
        []
    );
    let typed = FMI3.replacen(
        "  <ModelVariables>",
        "  <TypeDefinitions><Float64Type name=\"Scaled\" nominal=\"0\"/></TypeDefinitions>\n  <ModelVariables>",
        1,
    );
    let f = validate_xml(&typed);
    assert_eq!(
        messages_of(&f, "values"),
        ["type \"Scaled\": nominal 0 is not a positive finite number: the nominal value scales the variable (e.g. its absolute tolerance); write its typical magnitude, or leave nominal out (it is 1 then)"]
    );
}
