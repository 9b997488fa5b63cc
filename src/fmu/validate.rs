//! Static checks of an FMU (`cosimo validate`): is `modelDescription.xml` well-formed and
//! consistent, and does the binary export what the description promises?
//!
//! The checks walk the XML themselves, leniently, so that one run reports every finding
//! (the parser behind `Fmu::open` stops at the first problem it cannot get past).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::archive::FmuArchive;
use super::description::FmiVersion;
use crate::error::Result;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Against the standard or unusable: an importer may refuse or misread the FMU.
    Error,
    /// Suspicious or not checkable.
    Warning,
}

/// One problem found in an FMU.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// The rule that found it (e.g. `unique-names`).
    pub rule: &'static str,
    /// Line in `modelDescription.xml`, when the finding concerns one.
    pub line: Option<usize>,
    /// What is wrong, and where.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match self.line {
            Some(line) => write!(
                f,
                "{severity} [{}] line {line}: {}",
                self.rule, self.message
            ),
            None => write!(f, "{severity} [{}] {}", self.rule, self.message),
        }
    }
}

/// Validate an FMU (`.fmu`, unpacked folder, or a bare `modelDescription.xml`). Err only when
/// the FMU cannot be opened at all.
pub fn validate(path: &Path) -> Result<Vec<Finding>> {
    if path.is_file()
        && path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("xml"))
    {
        let text = std::fs::read_to_string(path).map_err(|e| crate::Error::io(path, e))?;
        let mut findings = validate_xml(&text);
        findings.push(Finding {
            severity: Severity::Warning,
            rule: "exports",
            line: None,
            message:
                "a bare modelDescription.xml: the binary's exported functions were not checked"
                    .into(),
        });
        return Ok(findings);
    }
    let archive = FmuArchive::open(path)?;
    let md_path = archive.model_description_path()?;
    let bytes = std::fs::read(&md_path).map_err(|e| crate::Error::io(&md_path, e))?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            return Ok(vec![Finding {
                severity: Severity::Error,
                rule: "xml",
                line: None,
                message: format!("modelDescription.xml is not valid UTF-8: {e}"),
            }])
        }
    };
    let mut findings = validate_xml(&text);
    if let Some(tree) = parse_tree(&text)
        .ok()
        .filter(|r| r.name == "fmiModelDescription")
    {
        findings.extend(check_exports(&tree, &archive));
    }
    Ok(findings)
}

/// Whether any finding is an error.
pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

// ---------------------------------------------------------------------------------------------
// A lenient element tree

type Node = crate::xml::Element;

/// The one root element of `xml`; on failure `(line, message)`.
fn parse_tree(xml: &str) -> std::result::Result<Node, (usize, String)> {
    let mut roots = crate::xml::parse_roots(xml).map_err(|f| {
        let message = f
            .message
            .strip_prefix("malformed XML: ")
            .unwrap_or(&f.message);
        (f.line, message.to_string())
    })?;
    match roots.len() {
        1 => Ok(roots.remove(0)),
        0 => Err((1, "there is no root element".into())),
        _ => Err((roots[1].line, "expected exactly one root element".into())),
    }
}

// ---------------------------------------------------------------------------------------------
// The rules

/// A variable as the rules see it.
struct Var<'a> {
    node: &'a Node,
    /// The element with type-specific attributes (FMI 2: the Real/Integer/... child).
    typed: &'a Node,
    name: String,
    vr: Option<u32>,
    type_name: String,
    causality: String,
    variability: String,
    initial: Option<String>,
    has_start: bool,
}

const FMI2_TYPES: &[&str] = &["Real", "Integer", "Boolean", "String", "Enumeration"];
const FMI3_TYPES: &[&str] = &[
    "Float32",
    "Float64",
    "Int8",
    "UInt8",
    "Int16",
    "UInt16",
    "Int32",
    "UInt32",
    "Int64",
    "UInt64",
    "Boolean",
    "String",
    "Binary",
    "Enumeration",
    "Clock",
];

/// The most findings kept: checking stops there. A hostile file can have a finding
/// per token of one attribute, each quoting a long name from elsewhere in the file.
const MAX_FINDINGS: usize = 1000;

/// The longest message kept, in characters (names and values in it come from the file).
const MAX_MESSAGE: usize = 1000;

struct Findings {
    list: Vec<Finding>,
}

impl Findings {
    fn new() -> Findings {
        Findings { list: Vec::new() }
    }

    fn error(&mut self, rule: &'static str, line: usize, message: String) {
        self.push(Severity::Error, rule, line, message);
    }

    fn warning(&mut self, rule: &'static str, line: usize, message: String) {
        self.push(Severity::Warning, rule, line, message);
    }

    fn push(&mut self, severity: Severity, rule: &'static str, line: usize, mut message: String) {
        if self.full() {
            return;
        }
        if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE) {
            message.truncate(cut);
            message.push_str("...");
        }
        self.list.push(Finding {
            severity,
            rule,
            line: Some(line),
            message,
        });
    }

    /// Whether no further finding is kept: loops whose findings quote more than their own
    /// element stop here, so that their cost stays bounded too.
    fn full(&self) -> bool {
        self.list.len() >= MAX_FINDINGS
    }

    /// The findings, with a note when some were not kept.
    fn finish(mut self) -> Vec<Finding> {
        if self.full() {
            self.list.push(Finding {
                severity: Severity::Warning,
                rule: "findings",
                line: None,
                message: format!("checking stopped after {MAX_FINDINGS} findings: fix these first"),
            });
        }
        self.list
    }
}

/// Validate the text of a `modelDescription.xml`.
pub fn validate_xml(xml: &str) -> Vec<Finding> {
    let mut f = Findings::new();
    let root = match parse_tree(xml.strip_prefix('\u{feff}').unwrap_or(xml)) {
        Ok(root) => root,
        Err((line, message)) => {
            f.error("xml", line, format!("not well-formed XML: {message}"));
            return f.finish();
        }
    };
    if root.name != "fmiModelDescription" {
        f.error(
            "xml",
            root.line,
            format!(
                "the root element is <{}>, expected <fmiModelDescription>",
                root.name
            ),
        );
        return f.finish();
    }
    let version = match root.attr("fmiVersion") {
        Some(v) if v.starts_with("2.") => FmiVersion::Fmi2,
        Some(v) if v.starts_with("3.") => FmiVersion::Fmi3,
        other => {
            f.error(
                "attributes",
                root.line,
                format!(
                    "fmiVersion {} is not an FMI 2.0 or 3.0 version",
                    other.map_or("(missing)".to_string(), |v| format!("\"{v}\""))
                ),
            );
            return f.finish();
        }
    };
    let token = match version {
        FmiVersion::Fmi2 => "guid",
        FmiVersion::Fmi3 => "instantiationToken",
    };
    for attribute in ["modelName", token] {
        if root.attr(attribute).is_none() {
            f.error(
                "attributes",
                root.line,
                format!("<fmiModelDescription> has no \"{attribute}\""),
            );
        }
    }
    let interfaces: Vec<&Node> = ["CoSimulation", "ModelExchange", "ScheduledExecution"]
        .iter()
        .filter_map(|n| root.child(n))
        .collect();
    if interfaces.is_empty() {
        f.error(
            "interface",
            root.line,
            "no <CoSimulation>, <ModelExchange> or <ScheduledExecution> interface".into(),
        );
    }
    for interface in &interfaces {
        match interface.attr("modelIdentifier") {
            None => f.error(
                "interface",
                interface.line,
                format!("<{}> has no \"modelIdentifier\"", interface.name),
            ),
            Some(m) if m.trim().is_empty() => f.error(
                "interface",
                interface.line,
                format!(
                    "<{}> has an empty \"modelIdentifier\": it must name the interface's \
                     binary (a C identifier){}",
                    interface.name,
                    if interface.name == "CoSimulation" {
                        "; cosimo cannot load the FMU"
                    } else {
                        ""
                    }
                ),
            ),
            Some(_) => {}
        }
    }
    if let Some(de) = root.child("DefaultExperiment") {
        default_experiment(de, &mut f);
    }

    let vars = variables(&root, version, &mut f);
    definition_names(&root, version, &mut f);
    naming_convention(&root, &vars, &mut f);
    units(&root, &vars, version, &mut f);
    unique(&vars, version, &mut f);
    for v in &vars {
        combinations(v, version, &mut f);
    }
    values(&root, &vars, version, &mut f);
    if version == FmiVersion::Fmi3 {
        dimensions(&vars, &mut f);
    }
    references(&root, &vars, version, &mut f);
    f.finish()
}

fn variables<'a>(root: &'a Node, version: FmiVersion, f: &mut Findings) -> Vec<Var<'a>> {
    let Some(mv) = root.child("ModelVariables") else {
        f.error("attributes", root.line, "no <ModelVariables>".into());
        return Vec::new();
    };
    let mut vars = Vec::new();
    for node in &mv.children {
        let (typed, type_name) = match version {
            FmiVersion::Fmi2 => {
                if node.name != "ScalarVariable" {
                    continue;
                }
                match node
                    .children
                    .iter()
                    .find(|c| FMI2_TYPES.contains(&c.name.as_str()))
                {
                    Some(t) => (t, t.name.clone()),
                    None => {
                        f.error(
                            "attributes",
                            node.line,
                            format!(
                                "ScalarVariable \"{}\" has no type element (Real, Integer, Boolean, String or Enumeration)",
                                node.attr("name").unwrap_or("?")
                            ),
                        );
                        continue;
                    }
                }
            }
            FmiVersion::Fmi3 => {
                if !FMI3_TYPES.contains(&node.name.as_str()) {
                    continue;
                }
                (node, node.name.clone())
            }
        };
        // (an empty name is kept: naming_convention reports it)
        let Some(name) = node.attr("name") else {
            f.error(
                "attributes",
                node.line,
                format!("a <{}> has no \"name\"", node.name),
            );
            continue;
        };
        let vr = node
            .attr("valueReference")
            .and_then(|v| v.trim().parse().ok());
        if vr.is_none() {
            f.error(
                "attributes",
                node.line,
                format!("\"{name}\": \"valueReference\" is missing or not an unsigned integer"),
            );
        }
        let is_float = matches!(type_name.as_str(), "Real" | "Float32" | "Float64");
        let has_start = match version {
            FmiVersion::Fmi2 => typed.attr("start").is_some(),
            FmiVersion::Fmi3 => node.attr("start").is_some() || node.child("Start").is_some(),
        };
        vars.push(Var {
            node,
            typed,
            name: name.to_string(),
            vr,
            // FMI 2's schema defaults variability to "continuous" whatever the type (so an
            // Integer without it is a finding, as FMPy reports); FMI 3 defaults by type.
            variability: node
                .attr("variability")
                .unwrap_or(if is_float || version == FmiVersion::Fmi2 {
                    "continuous"
                } else {
                    "discrete"
                })
                .to_string(),
            causality: node.attr("causality").unwrap_or("local").to_string(),
            initial: node.attr("initial").map(str::to_string),
            type_name,
            has_start,
        });
    }
    vars
}

/// The type definition elements with their names: FMI 2 `SimpleType` (its attributes on the
/// Real/Integer/... child), FMI 3 `Float64Type` and the like.
fn type_definitions(root: &Node, version: FmiVersion) -> Vec<(&Node, &Node)> {
    let Some(td) = root.child("TypeDefinitions") else {
        return Vec::new();
    };
    match version {
        FmiVersion::Fmi2 => td
            .children_named("SimpleType")
            .filter_map(|st| {
                st.children
                    .iter()
                    .find(|c| FMI2_TYPES.contains(&c.name.as_str()))
                    .map(|typed| (st, typed))
            })
            .collect(),
        FmiVersion::Fmi3 => td
            .children
            .iter()
            .filter(|t| {
                t.name
                    .strip_suffix("Type")
                    .is_some_and(|base| FMI3_TYPES.contains(&base))
            })
            .map(|t| (t, t))
            .collect(),
    }
}

/// Names of units, display units, types, enumeration items and log categories: required by the
/// schema, which allows them empty (suspicious: nothing can refer to them by name).
fn definition_names(root: &Node, version: FmiVersion, f: &mut Findings) {
    let mut check = |node: &Node, what: String, consequence: &str| match node.attr("name") {
        None => f.error("attributes", node.line, format!("{what} has no \"name\"")),
        Some(name) if name.trim().is_empty() => f.warning(
            "names",
            node.line,
            format!("{what} has an empty \"name\": {consequence}"),
        ),
        Some(_) => {}
    };
    for unit in root
        .child("UnitDefinitions")
        .into_iter()
        .flat_map(|u| u.children_named("Unit"))
    {
        check(
            unit,
            "a <Unit>".into(),
            "variables can refer to it only with unit=\"\"",
        );
        let of = format!("of unit \"{}\"", unit.attr("name").unwrap_or_default());
        for display in unit.children_named("DisplayUnit") {
            check(
                display,
                format!("a <DisplayUnit> {of}"),
                "variables can select it only with displayUnit=\"\"",
            );
        }
    }
    for (definition, typed) in type_definitions(root, version) {
        check(
            definition,
            format!("a <{}>", definition.name),
            "variables can declare it only with declaredType=\"\"",
        );
        let of = format!(
            "of type \"{}\"",
            definition.attr("name").unwrap_or_default()
        );
        for item in typed.children_named("Item") {
            check(
                item,
                format!("an enumeration <Item> {of}"),
                "its value can be shown and set only by number",
            );
        }
    }
    for category in root
        .child("LogCategories")
        .into_iter()
        .flat_map(|c| c.children_named("Category"))
    {
        check(
            category,
            "a log <Category>".into(),
            "it can be selected for logging only by the empty name",
        );
    }
}

/// Variable names against `variableNamingConvention`: an empty name is an error (both
/// conventions need at least one character, and cosimo names variables in connections, start
/// values and results); other violations are warnings (cosimo does not parse names).
fn naming_convention(root: &Node, vars: &[Var<'_>], f: &mut Findings) {
    let convention = root.attr("variableNamingConvention").unwrap_or("flat");
    for v in vars {
        if v.name.is_empty() {
            f.error(
                "naming-convention",
                v.node.line,
                format!(
                    "a <{}>{} has an empty name: both naming conventions need at least one \
                     character, and connections, start values and results name variables",
                    v.node.name,
                    v.vr.map_or(String::new(), |vr| format!(" (valueReference {vr})"))
                ),
            );
            continue;
        }
        let problem = if convention.trim() == "structured" {
            structured_name(&v.name).err()
        } else {
            v.name
                .chars()
                .find(|c| matches!(c, '\r' | '\n' | '\t'))
                .map(|c| format!("it contains the control character {c:?}"))
        };
        if let Some(problem) = problem {
            f.warning(
                "naming-convention",
                v.node.line,
                format!(
                    "\"{}\" is not a {} name (variableNamingConvention=\"{}\"): {problem}",
                    v.name,
                    if convention.trim() == "structured" {
                        "structured"
                    } else {
                        "flat"
                    },
                    convention
                ),
            );
        }
    }
}

/// Check `name` against the grammar of structured names (FMI 2.0 section 2.2.9, FMI 3.0
/// section 2.4.7.5.1): `identifier | "der(" identifier ["," unsignedInteger] ")"`, an identifier
/// being dot-separated names (letters, digits, `_`, or 'quoted') each with optional array indices.
fn structured_name(name: &str) -> std::result::Result<(), String> {
    let chars: Vec<char> = name.chars().collect();
    let mut at = 0;
    let at_char = |at: usize| -> String {
        match chars.get(at) {
            Some(c) => format!("unexpected {c:?} at character {}", at + 1),
            None => "unexpected end".to_string(),
        }
    };
    let digits = |at: &mut usize| -> bool {
        let start = *at;
        while chars.get(*at).is_some_and(char::is_ascii_digit) {
            *at += 1;
        }
        *at > start
    };
    let identifier = |at: &mut usize| -> std::result::Result<(), String> {
        loop {
            match chars.get(*at) {
                Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
                    while chars
                        .get(*at)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                    {
                        *at += 1;
                    }
                }
                Some('\'') => {
                    *at += 1;
                    let start = *at;
                    loop {
                        match chars.get(*at) {
                            Some('\'') if *at > start => break,
                            Some('\\') => {
                                if !chars.get(*at + 1).is_some_and(|c| {
                                    matches!(c, '\'' | '"' | '?' | '\\' | 'a' | 'b' | 'f')
                                        || matches!(c, 'n' | 'r' | 't' | 'v')
                                }) {
                                    return Err(format!(
                                        "an invalid escape in a quoted name at character {}",
                                        *at + 1
                                    ));
                                }
                                *at += 2;
                            }
                            Some(c)
                                if (c.is_ascii_graphic() || *c == ' ')
                                    && !matches!(c, '\'' | '`') =>
                            {
                                *at += 1
                            }
                            _ => return Err(at_char(*at)),
                        }
                    }
                    *at += 1;
                }
                _ => return Err(at_char(*at)),
            }
            if chars.get(*at) == Some(&'[') {
                loop {
                    *at += 1;
                    if !digits(at) {
                        return Err(at_char(*at));
                    }
                    match chars.get(*at) {
                        Some(',') => continue,
                        Some(']') => {
                            *at += 1;
                            break;
                        }
                        _ => return Err(at_char(*at)),
                    }
                }
            }
            if chars.get(*at) == Some(&'.') {
                *at += 1;
            } else {
                return Ok(());
            }
        }
    };
    if name.starts_with("der(") {
        at = 4;
        identifier(&mut at)?;
        if chars.get(at) == Some(&',') {
            at += 1;
            if !digits(&mut at) {
                return Err(at_char(at));
            }
        }
        if chars.get(at) != Some(&')') {
            return Err(at_char(at));
        }
        at += 1;
    } else {
        identifier(&mut at)?;
    }
    if at < chars.len() {
        return Err(at_char(at));
    }
    Ok(())
}

/// `unit` and `displayUnit` of types and variables name units of `UnitDefinitions` (FMPy
/// checks this too). A warning: the file loads, but cosimo cannot convert values of an undefined
/// unit to other units, and display units are not used.
fn units(root: &Node, vars: &[Var<'_>], version: FmiVersion, f: &mut Findings) {
    let defined: HashMap<&str, Vec<&str>> = root
        .child("UnitDefinitions")
        .into_iter()
        .flat_map(|u| u.children_named("Unit"))
        .filter_map(|u| {
            let displays = u
                .children_named("DisplayUnit")
                .filter_map(|d| d.attr("name"))
                .collect();
            u.attr("name").map(|name| (name, displays))
        })
        .collect();
    let mut check = |line: usize, what: &str, unit: Option<&str>, display: Option<&str>| {
        if let Some(unit) = unit.filter(|u| !defined.contains_key(u)) {
            f.warning(
                "units",
                line,
                format!(
                    "{what}: unit \"{unit}\" is not defined in <UnitDefinitions>; connections \
                     cannot convert its values to other units"
                ),
            );
            return;
        }
        if let Some(display) = display {
            let known = unit
                .and_then(|u| defined.get(u))
                .is_some_and(|displays| displays.contains(&display));
            if !known {
                f.warning(
                    "units",
                    line,
                    format!(
                        "{what}: display unit \"{display}\" is not a <DisplayUnit> of {}",
                        unit.map_or("its unit (it has none)".to_string(), |u| format!(
                            "unit \"{u}\""
                        ))
                    ),
                );
            }
        }
    };
    let mut type_units: HashMap<&str, Option<&str>> = HashMap::new();
    for (definition, typed) in type_definitions(root, version) {
        let name = definition.attr("name").unwrap_or_default();
        type_units.insert(name, typed.attr("unit"));
        check(
            definition.line,
            &format!("type \"{name}\""),
            typed.attr("unit"),
            typed.attr("displayUnit"),
        );
    }
    for v in vars {
        let own = v.typed.attr("unit");
        let inherited = v
            .typed
            .attr("declaredType")
            .and_then(|t| type_units.get(t).copied().flatten());
        let display = v.typed.attr("displayUnit");
        match own {
            // A unit of the declared type was checked with the type.
            None if display.is_none() || inherited.is_some_and(|u| !defined.contains_key(u)) => {}
            None => check(v.node.line, &format!("\"{}\"", v.name), inherited, display),
            Some(_) => check(v.node.line, &format!("\"{}\"", v.name), own, display),
        }
    }
}

fn unique(vars: &[Var<'_>], version: FmiVersion, f: &mut Findings) {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut vrs: HashMap<u32, &Var<'_>> = HashMap::new();
    for v in vars {
        if f.full() {
            break;
        }
        if let Some(first) = names.get(v.name.as_str()) {
            f.error(
                "unique-names",
                v.node.line,
                format!(
                    "variable name \"{}\" is already used on line {first}",
                    v.name
                ),
            );
        } else {
            names.insert(&v.name, v.node.line);
        }
        if version == FmiVersion::Fmi3 {
            if let Some(vr) = v.vr {
                if let Some(first) = vrs.get(&vr) {
                    f.error(
                        "unique-value-references",
                        v.node.line,
                        format!(
                            "\"{}\": valueReference {vr} is already used by \"{}\" (line {})",
                            v.name, first.name, first.node.line
                        ),
                    );
                } else {
                    vrs.insert(vr, v);
                }
            }
        } else if let Some(vr) = v.vr {
            // FMI 2: a value reference is unique per type; sharing one makes an alias, which
            // must agree on variability and may set at most one start value.
            let key = vr ^ ((v.type_name.len() as u32) << 28);
            if let Some(first) = vrs.get(&key).filter(|o| o.type_name == v.type_name) {
                if first.variability != v.variability {
                    f.error(
                        "unique-value-references",
                        v.node.line,
                        format!(
                            "\"{}\" is an alias of \"{}\" (valueReference {vr}) with a different variability",
                            v.name, first.name
                        ),
                    );
                }
            } else {
                vrs.insert(key, v);
            }
        }
    }
}

fn combinations(v: &Var<'_>, version: FmiVersion, f: &mut Findings) {
    let line = v.node.line;
    let name = &v.name;
    let (c, va) = (v.causality.as_str(), v.variability.as_str());
    let causalities: &[&str] = match version {
        FmiVersion::Fmi2 => &[
            "parameter",
            "calculatedParameter",
            "input",
            "output",
            "local",
            "independent",
        ],
        FmiVersion::Fmi3 => &[
            "parameter",
            "calculatedParameter",
            "structuralParameter",
            "input",
            "output",
            "local",
            "independent",
        ],
    };
    if !causalities.contains(&c) {
        f.error(
            "causality-variability",
            line,
            format!("\"{name}\": unknown causality \"{c}\""),
        );
        return;
    }
    if !["constant", "fixed", "tunable", "discrete", "continuous"].contains(&va) {
        f.error(
            "causality-variability",
            line,
            format!("\"{name}\": unknown variability \"{va}\""),
        );
        return;
    }
    let allowed: &[&str] = match c {
        "parameter" | "calculatedParameter" | "structuralParameter" => &["fixed", "tunable"],
        "input" => &["discrete", "continuous"],
        "output" => &["constant", "discrete", "continuous"],
        "independent" => &["continuous"],
        _ => &["constant", "fixed", "tunable", "discrete", "continuous"],
    };
    if !allowed.contains(&va) {
        f.error(
            "causality-variability",
            line,
            format!(
                "\"{name}\": causality \"{c}\" with variability \"{va}\" is not allowed (allowed: {})",
                allowed.join(", ")
            ),
        );
        return;
    }
    let is_float = matches!(v.type_name.as_str(), "Real" | "Float32" | "Float64");
    if va == "continuous" && !is_float && v.type_name != "Clock" {
        let omitted = if v.node.attr("variability").is_none() {
            " (FMI 2.0 defaults an omitted variability to continuous: declare it discrete)"
        } else {
            ""
        };
        f.error(
            "causality-variability",
            line,
            format!(
                "\"{name}\": {} {} variable cannot be continuous (only Float variables are){omitted}",
                if v.type_name.starts_with(['I', 'E', 'U']) { "an" } else { "a" },
                v.type_name
            ),
        );
    }
    // Allowed `initial` values and the default, by causality and variability.
    let (allowed_initial, default): (&[&str], Option<&str>) = match (c, va) {
        ("output" | "local", "constant") => (&["exact"], Some("exact")),
        ("parameter" | "structuralParameter", _) => (&["exact"], Some("exact")),
        ("calculatedParameter" | "local", "fixed" | "tunable") => {
            (&["calculated", "approx"], Some("calculated"))
        }
        ("input", _) if version == FmiVersion::Fmi3 => (&["exact"], None),
        ("input", _) | ("independent", _) => (&[], None),
        _ => (&["calculated", "exact", "approx"], Some("calculated")),
    };
    let initial = match &v.initial {
        Some(i) => {
            if !allowed_initial.contains(&i.as_str()) {
                f.error(
                    "initial",
                    line,
                    format!(
                        "\"{name}\": initial=\"{i}\" is not allowed with causality \"{c}\" and variability \"{va}\" ({})",
                        if allowed_initial.is_empty() {
                            "no initial is allowed".to_string()
                        } else {
                            format!("allowed: {}", allowed_initial.join(", "))
                        }
                    ),
                );
                return;
            }
            Some(i.as_str())
        }
        None => default,
    };
    let needs_start = matches!(initial, Some("exact" | "approx")) || c == "input";
    if needs_start && !v.has_start && v.type_name != "Clock" {
        f.error(
            "start",
            line,
            format!(
                "\"{name}\" needs a start value ({})",
                if c == "input" {
                    "an input".to_string()
                } else {
                    format!("initial=\"{}\"", initial.unwrap_or_default())
                }
            ),
        );
    }
    let forbids_start = initial == Some("calculated") || c == "independent";
    if forbids_start && v.has_start {
        f.error(
            "start",
            line,
            format!(
                "\"{name}\" must not have a start value ({})",
                if c == "independent" {
                    "the independent variable".to_string()
                } else {
                    "initial=\"calculated\"".to_string()
                }
            ),
        );
    }
}

/// `<DefaultExperiment>`: every time a finite number, the stop after the start, the step size
/// and the tolerance positive (an importer takes them as they are; `cosimo run` refuses them).
fn default_experiment(de: &Node, f: &mut Findings) {
    let number = |name: &str, f: &mut Findings| -> Option<f64> {
        let text = de.attr(name)?;
        let what = match name {
            "startTime" => "the time the experiment starts, e.g. 0",
            "stopTime" => "the time the experiment ends, e.g. 10",
            "stepSize" => "a positive communication step, e.g. 0.01",
            _ => "a positive relative tolerance, e.g. 1e-6",
        };
        match parse_double(text.trim(), "Float64") {
            Ok(v) if v.is_finite() => Some(v),
            Ok(v) => {
                f.error(
                    "default-experiment",
                    de.line,
                    format!("{name}=\"{text}\" is {v}, not a finite number: write {what}"),
                );
                None
            }
            Err(problem) => {
                f.error(
                    "default-experiment",
                    de.line,
                    format!("{name}=\"{text}\" {problem}; write {what}"),
                );
                None
            }
        }
    };
    let start = number("startTime", f);
    let stop = number("stopTime", f);
    let step = number("stepSize", f);
    let tolerance = number("tolerance", f);
    if let Some(stop) = stop {
        let start = start.unwrap_or(0.0);
        if stop <= start {
            f.error(
                "default-experiment",
                de.line,
                format!(
                    "stopTime {stop} is not after startTime {start}: write a stopTime larger than the startTime"
                ),
            );
        }
    }
    for (name, value) in [("stepSize", step), ("tolerance", tolerance)] {
        if let Some(v) = value.filter(|v| *v <= 0.0) {
            f.error(
                "default-experiment",
                de.line,
                format!(
                    "{name} {v} must be positive: write {}, or leave the attribute out",
                    if name == "stepSize" {
                        "the communication step (e.g. 0.01)"
                    } else {
                        "a relative tolerance (e.g. 1e-6)"
                    }
                ),
            );
        }
    }
}

/// A number of a start value, minimum or maximum: Float types as f64, integer types exactly.
#[derive(Clone, Copy, PartialEq)]
enum Number {
    Float(f64),
    Int(i128),
}

impl PartialOrd for Number {
    /// Numbers of one kind in their order; a Float and an integer (a variable whose declared
    /// type is of another kind, reported elsewhere) are not compared.
    fn partial_cmp(&self, other: &Number) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Number::Float(a), Number::Float(b)) => a.partial_cmp(b),
            (Number::Int(a), Number::Int(b)) => a.partial_cmp(b),
            _ => None,
        }
    }
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Number::Float(x) => write!(f, "{x}"),
            Number::Int(n) => write!(f, "{n}"),
        }
    }
}

/// Parse an `xs:double` (`INF`, `-INF` and `NaN` included) as a value of a Float type; `Err`
/// says what is wrong. Text that Rust would read but XML does not (`inf`, `nan`) and numbers
/// beyond the type's largest value (which would be read as infinity) are refused.
fn parse_double(token: &str, type_name: &str) -> std::result::Result<f64, String> {
    match token {
        "INF" | "+INF" => return Ok(f64::INFINITY),
        "-INF" => return Ok(f64::NEG_INFINITY),
        "NaN" => return Ok(f64::NAN),
        _ => {}
    }
    let x: f64 = token
        .parse()
        .map_err(|_| "is not a number (e.g. 1.5 or 2e-3)".to_string())?;
    if !x.is_finite() {
        let lower = token.to_ascii_lowercase();
        return Err(if lower.contains("inf") || lower.contains("nan") {
            "is not how XML writes infinity or not-a-number: write INF, -INF or NaN".to_string()
        } else {
            format!(
                "is beyond the largest {type_name} (±{:e}) and would be read as infinity: write a \
                 smaller number, or INF if infinity is meant",
                f64::MAX
            )
        });
    }
    if type_name == "Float32" && x.abs() > f64::from(f32::MAX) {
        return Err(format!(
            "is beyond the largest Float32 (±{:e}) and would be infinity as a Float32: write a \
             smaller number, INF if infinity is meant, or declare the variable Float64",
            f32::MAX
        ));
    }
    Ok(x)
}

/// The range of an integer type (FMI 2 `Integer` and `Enumeration` are 32-bit, FMI 3
/// `Enumeration` 64-bit); `None` for the other types.
fn integer_range(type_name: &str, version: FmiVersion) -> Option<(i128, i128)> {
    Some(match type_name {
        "Int8" => (i8::MIN.into(), i8::MAX.into()),
        "UInt8" => (0, u8::MAX.into()),
        "Int16" => (i16::MIN.into(), i16::MAX.into()),
        "UInt16" => (0, u16::MAX.into()),
        "Integer" | "Int32" => (i32::MIN.into(), i32::MAX.into()),
        "UInt32" => (0, u32::MAX.into()),
        "Int64" => (i64::MIN.into(), i64::MAX.into()),
        "UInt64" => (0, u64::MAX.into()),
        "Enumeration" if version == FmiVersion::Fmi2 => (i32::MIN.into(), i32::MAX.into()),
        "Enumeration" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// One token of a value of `type_name`: `Ok(None)` for types without an order (Boolean,
/// String, Binary, Clock), `Err` saying what is wrong and what to write.
fn parse_token(
    token: &str,
    type_name: &str,
    version: FmiVersion,
) -> std::result::Result<Option<Number>, String> {
    if matches!(type_name, "Real" | "Float64" | "Float32") {
        let name = if type_name == "Real" {
            "Float64"
        } else {
            type_name
        };
        return parse_double(token, name).map(|x| Some(Number::Float(x)));
    }
    if let Some((lo, hi)) = integer_range(type_name, version) {
        return match token.parse::<i128>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(Some(Number::Int(n))),
            Ok(_) => Err(format!(
                "is out of range for {type_name} ({lo} to {hi}): write a value in that range{}",
                if type_name == "Enumeration" {
                    ""
                } else {
                    ", or declare a wider type"
                }
            )),
            Err(_) => match token.parse::<f64>() {
                Ok(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e18 => Err(format!(
                    "is not an integer as XML writes it: write {}",
                    x as i64
                )),
                Ok(x) if x.is_finite() && x.abs() < 1e18 => Err(format!(
                    "is not an integer: {type_name} takes whole numbers (e.g. {} or {})",
                    x.floor() as i64,
                    x.ceil() as i64
                )),
                Ok(_) if token.trim_start_matches(['-', '+']).bytes().all(|b| b.is_ascii_digit()) => {
                    Err(format!(
                        "is out of range for {type_name} ({lo} to {hi}): write a value in that range"
                    ))
                }
                _ => Err(format!("is not an integer: {type_name} takes whole numbers")),
            },
        };
    }
    match type_name {
        "Boolean" if matches!(token, "true" | "false" | "1" | "0") => Ok(None),
        "Boolean" => Err("is not a Boolean: write true or false".into()),
        "Binary" if crate::fmu::values::parse_hex(token).is_some() => Ok(None),
        "Binary" => {
            Err("is not hexadecimal binary data: write pairs of hex digits, e.g. 0a1b".into())
        }
        _ => Ok(None),
    }
}

/// The numbers of attribute `attribute` of `element` for a variable or type of `type_name`,
/// with a finding for each token that is not a value of the type (`None` then, or when the
/// attribute is absent or of a type without an order). `scalar`: exactly one value allowed.
#[allow(clippy::too_many_arguments)]
fn attribute_values(
    element: &Node,
    attribute: &str,
    line: usize,
    owner: &str,
    type_name: &str,
    version: FmiVersion,
    scalar: bool,
    f: &mut Findings,
) -> Option<Vec<Number>> {
    if matches!(type_name, "String" | "Clock") {
        return None;
    }
    let text = element.attr(attribute)?;
    let tokens: Vec<&str> = text.split_whitespace().collect();
    if tokens.is_empty() || (scalar && tokens.len() > 1) {
        f.error(
            "values",
            line,
            format!(
                "{owner}: {attribute}=\"{text}\" {}: write one {type_name} value",
                if tokens.is_empty() {
                    "is empty".to_string()
                } else {
                    format!("has {} values", tokens.len())
                }
            ),
        );
        return None;
    }
    let mut numbers = Vec::with_capacity(tokens.len());
    let mut ok = true;
    for token in tokens {
        if f.full() {
            return None;
        }
        match parse_token(token, type_name, version) {
            Ok(Some(n)) => numbers.push(n),
            Ok(None) => ok = false,
            Err(problem) => {
                ok = false;
                let of = if text.trim() == token {
                    String::new()
                } else {
                    format!(" \"{token}\"")
                };
                f.error(
                    "values",
                    line,
                    format!("{owner}: {attribute}=\"{text}\"{of} {problem}"),
                );
            }
        }
    }
    ok.then_some(numbers)
}

/// Start values, minimums and maximums of variables and types: each a value of its type and
/// in its range, `min` not above `max`, and the start within `[min, max]` (the type's `min` and
/// `max` apply to a variable that declares it and gives none of its own).
fn values(root: &Node, vars: &[Var<'_>], version: FmiVersion, f: &mut Findings) {
    let mut type_bounds: HashMap<&str, (Option<Number>, Option<Number>)> = HashMap::new();
    // The values of each enumeration type's items.
    let mut items: HashMap<&str, Vec<i128>> = HashMap::new();
    for (definition, typed) in type_definitions(root, version) {
        let type_name = match version {
            FmiVersion::Fmi2 => typed.name.as_str(),
            FmiVersion::Fmi3 => definition.name.strip_suffix("Type").unwrap_or_default(),
        };
        let name = definition.attr("name").unwrap_or_default();
        let owner = format!("type \"{name}\"");
        let line = definition.line;
        let bound = |a: &str, f: &mut Findings| {
            attribute_values(typed, a, line, &owner, type_name, version, true, f)
                .and_then(|v| v.first().copied())
        };
        let (min, max) = (bound("min", f), bound("max", f));
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                f.error(
                    "bounds",
                    line,
                    format!("{owner}: min {lo} is greater than max {hi}, so no value fits: write a min at most the max"),
                );
            }
        }
        nominal(typed, line, &owner, type_name, version, f);
        type_bounds.insert(name, (min, max));
        if type_name == "Enumeration" {
            let values: Vec<i128> = typed
                .children_named("Item")
                .filter_map(|item| item.attr("value")?.trim().parse().ok())
                .collect();
            items.insert(name, values);
        }
    }
    for v in vars {
        if f.full() {
            return;
        }
        let line = v.node.line;
        let owner = format!("\"{}\"", v.name);
        let type_name = v.type_name.as_str();
        let is_array = version == FmiVersion::Fmi3 && v.node.child("Dimension").is_some();
        let start_element = match version {
            FmiVersion::Fmi2 => v.typed,
            FmiVersion::Fmi3 => v.node,
        };
        let start = attribute_values(
            start_element,
            "start",
            line,
            &owner,
            type_name,
            version,
            !is_array,
            f,
        );
        if version == FmiVersion::Fmi3
            && matches!(type_name, "String" | "Binary")
            && v.node.attr("start").is_some()
        {
            f.error(
                "start",
                line,
                format!(
                    "{owner}: <{type_name}> has no attribute \"start\" in the FMI 3 schema; its start values are <Start value=\"...\"/> elements"
                ),
            );
        }
        if type_name == "Binary" {
            for s in v.node.children_named("Start") {
                attribute_values(s, "value", s.line, &owner, type_name, version, true, f);
            }
        }
        let own = |a: &str, f: &mut Findings| {
            attribute_values(v.typed, a, line, &owner, type_name, version, true, f)
                .map(|values| values.first().copied())
        };
        let (own_min, own_max) = (own("min", f), own("max", f));
        let inherited = v
            .typed
            .attr("declaredType")
            .and_then(|t| type_bounds.get(t).copied());
        let bound = |a: &str, own: Option<Option<Number>>, from_type: Option<Number>| match (
            v.typed.attr(a),
            own,
        ) {
            (Some(_), Some(value)) => value.map(|n| (n, String::new())),
            (Some(_), None) => None,
            (None, _) => from_type.map(|n| {
                (
                    n,
                    format!(
                        " (of its type \"{}\")",
                        v.typed.attr("declaredType").unwrap_or_default()
                    ),
                )
            }),
        };
        nominal(v.typed, line, &owner, type_name, version, f);
        let min = bound("min", own_min, inherited.and_then(|b| b.0));
        let max = bound("max", own_max, inherited.and_then(|b| b.1));
        if let (Some((lo, lo_from)), Some((hi, hi_from))) = (&min, &max) {
            if lo > hi {
                // (both from the type: reported with the type)
                if lo_from.is_empty() || hi_from.is_empty() {
                    f.error(
                        "bounds",
                        line,
                        format!("{owner}: min {lo}{lo_from} is greater than max {hi}{hi_from}, so no value fits: write a min at most the max"),
                    );
                }
                continue;
            }
        }
        let Some(start) = start else {
            continue;
        };
        if type_name == "Enumeration" {
            enumeration_start(v, &start, &items, f);
        }
        let element = |i: usize| {
            if start.len() > 1 {
                format!(" (element {})", i + 1)
            } else {
                String::new()
            }
        };
        if let Some((lo, from)) = &min {
            if let Some((i, s)) = start.iter().enumerate().find(|(_, s)| *s < lo) {
                f.error(
                    "bounds",
                    line,
                    format!("{owner}: start {s}{} is below min {lo}{from}: write a start value within [min, max], or lower min", element(i)),
                );
            }
        }
        if let Some((hi, from)) = &max {
            if let Some((i, s)) = start.iter().enumerate().find(|(_, s)| *s > hi) {
                f.error(
                    "bounds",
                    line,
                    format!("{owner}: start {s}{} is above max {hi}{from}: write a start value within [min, max], or raise max", element(i)),
                );
            }
        }
    }
}

/// `nominal` of a Float variable or type: a positive, finite number (it scales tolerances, and
/// FMI assumes 1 when it is absent).
fn nominal(
    element: &Node,
    line: usize,
    owner: &str,
    type_name: &str,
    version: FmiVersion,
    f: &mut Findings,
) {
    if !matches!(type_name, "Real" | "Float32" | "Float64") {
        return;
    }
    let Some(values) =
        attribute_values(element, "nominal", line, owner, type_name, version, true, f)
    else {
        return;
    };
    if let Some(Number::Float(x)) = values.first() {
        if !(x.is_finite() && *x > 0.0) {
            f.error(
                "values",
                line,
                format!(
                    "{owner}: nominal {x} is not a positive finite number: the nominal value \
                     scales the variable (e.g. its absolute tolerance); write its typical \
                     magnitude, or leave nominal out (it is 1 then)"
                ),
            );
        }
    }
}

/// The start of an Enumeration variable: each value one of its type's items.
fn enumeration_start(
    v: &Var<'_>,
    start: &[Number],
    items: &HashMap<&str, Vec<i128>>,
    f: &mut Findings,
) {
    let Some(type_name) = v.typed.attr("declaredType") else {
        return;
    };
    let Some(values) = items.get(type_name).filter(|values| !values.is_empty()) else {
        return;
    };
    let outside = start.iter().find_map(|s| match s {
        Number::Int(n) if !values.contains(n) => Some(*n),
        _ => None,
    });
    if let Some(n) = outside {
        let listed: Vec<String> = values.iter().take(10).map(i128::to_string).collect();
        f.error(
            "values",
            v.node.line,
            format!(
                "\"{}\": start {n} is not the value of an item of its enumeration type \"{type_name}\" \
                 ({}{}): write one of them",
                v.name,
                listed.join(", "),
                if values.len() > listed.len() { ", ..." } else { "" }
            ),
        );
    }
}

/// FMI 3 arrays: each `<Dimension>` has either a positive `start` or the `valueReference` of a
/// UInt64 structural parameter or constant (with a positive start), and a start value gives one
/// value for all elements or one for each.
fn dimensions(vars: &[Var<'_>], f: &mut Findings) {
    let by_vr: HashMap<u32, &Var<'_>> = vars.iter().filter_map(|v| Some((v.vr?, v))).collect();
    for v in vars {
        if f.full() {
            return;
        }
        let dims: Vec<&Node> = v.node.children_named("Dimension").collect();
        if dims.is_empty() {
            continue;
        }
        let owner = format!("\"{}\"", v.name);
        if v.causality == "structuralParameter" || v.type_name == "Clock" {
            f.error(
                "dimensions",
                v.node.line,
                format!(
                    "{owner}: a {} cannot be an array: remove its <Dimension> elements",
                    if v.type_name == "Clock" {
                        "Clock"
                    } else {
                        "structural parameter"
                    }
                ),
            );
            continue;
        }
        // The size of each dimension, where the file fixes it.
        let mut sizes: Vec<Option<u64>> = Vec::with_capacity(dims.len());
        for (i, d) in dims.iter().enumerate() {
            let which = format!("{owner}: its Dimension {} of {}", i + 1, dims.len());
            let size = match (d.attr("start"), d.attr("valueReference")) {
                (Some(_), Some(_)) => {
                    f.error(
                        "dimensions",
                        d.line,
                        format!("{which} has both start and valueReference: give one of them"),
                    );
                    None
                }
                (None, None) => {
                    f.error(
                        "dimensions",
                        d.line,
                        format!(
                            "{which} has neither start nor valueReference: give its size as \
                             start, or the value reference of a structural parameter"
                        ),
                    );
                    None
                }
                (Some(start), None) => {
                    match start.trim().parse::<u64>() {
                        Ok(0) => {
                            f.error(
                            "dimensions",
                            d.line,
                            format!("{which} has start 0: an array's initial sizes must be positive"),
                        );
                            None
                        }
                        Ok(n) => Some(n),
                        Err(_) => {
                            f.error(
                                "dimensions",
                                d.line,
                                format!(
                                    "{which}: start=\"{start}\" is not a size (a positive integer)"
                                ),
                            );
                            None
                        }
                    }
                }
                (None, Some(vr)) => {
                    let target = vr.trim().parse::<u32>().ok().and_then(|vr| by_vr.get(&vr));
                    match target {
                        None => {
                            f.error(
                                "dimensions",
                                d.line,
                                format!(
                                    "{which}: valueReference=\"{vr}\" is not the value reference \
                                     of a variable"
                                ),
                            );
                            None
                        }
                        Some(t) => referenced_size(&which, d.line, t, f),
                    }
                }
            };
            sizes.push(size);
        }
        let Some(sizes) = sizes.into_iter().collect::<Option<Vec<u64>>>() else {
            continue;
        };
        let start_count = if matches!(v.type_name.as_str(), "String" | "Binary") {
            v.node.children_named("Start").count()
        } else {
            v.node
                .attr("start")
                .map_or(0, |s| s.split_whitespace().count())
        };
        let elements = sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s));
        if start_count > 1 && elements != Some(start_count as u64) {
            let shape: Vec<String> = sizes.iter().map(u64::to_string).collect();
            f.error(
                "dimensions",
                v.node.line,
                format!(
                    "{owner}: its start has {start_count} values, but its dimensions ({}) make {} \
                     elements: give one value per element, or a single value for all of them",
                    shape.join(" x "),
                    elements.map_or("more than 2^64".to_string(), |n| n.to_string())
                ),
            );
        }
    }
}

/// The size a `<Dimension valueReference>` takes from the variable `t` it refers to, which must
/// be a UInt64 structural parameter or constant with a positive start.
fn referenced_size(which: &str, line: usize, t: &Var<'_>, f: &mut Findings) -> Option<u64> {
    if t.type_name != "UInt64" {
        f.error(
            "dimensions",
            line,
            format!(
                "{which} refers to \"{}\", of type {}: a dimension's size is a UInt64 (declare \
                 \"{}\" as <UInt64>)",
                t.name, t.type_name, t.name
            ),
        );
        return None;
    }
    if t.causality != "structuralParameter" && t.variability != "constant" {
        f.error(
            "dimensions",
            line,
            format!(
                "{which} refers to \"{}\", which is neither a structural parameter nor a constant \
                 (causality \"{}\", variability \"{}\"): a dimension's size can only change in \
                 configuration mode; make \"{}\" causality=\"structuralParameter\"",
                t.name, t.causality, t.variability, t.name
            ),
        );
        return None;
    }
    match t.node.attr("start").map(|s| s.trim().parse::<u64>()) {
        Some(Ok(0)) => {
            f.error(
                "dimensions",
                line,
                format!(
                    "{which} refers to \"{}\", whose start is 0: an array's initial sizes must \
                     be positive",
                    t.name
                ),
            );
            None
        }
        Some(Ok(n)) => Some(n),
        // A missing or unreadable start is the variable's own finding.
        _ => None,
    }
}

fn references(root: &Node, vars: &[Var<'_>], version: FmiVersion, f: &mut Findings) {
    // Resolve a reference token to a variable index (FMI 2: 1-based index, FMI 3: vr).
    let by_vr: HashMap<u32, usize> = vars
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.vr.map(|vr| (vr, i)))
        .collect();
    let resolve = |token: &str| -> Option<usize> {
        let n: u64 = token.trim().parse().ok()?;
        match version {
            FmiVersion::Fmi2 => (1..=vars.len() as u64).contains(&n).then(|| n as usize - 1),
            FmiVersion::Fmi3 => by_vr.get(&u32::try_from(n).ok()?).copied(),
        }
    };
    let what = match version {
        FmiVersion::Fmi2 => "the index of a ScalarVariable",
        FmiVersion::Fmi3 => "the value reference of a variable",
    };
    // derivative / previous / clocks attributes.
    let mut states: HashSet<usize> = HashSet::new();
    let mut derivatives: HashSet<usize> = HashSet::new();
    for (i, v) in vars.iter().enumerate() {
        let mut attributes = vec!["derivative"];
        if version == FmiVersion::Fmi3 {
            attributes.extend(["previous", "clocks"]);
        }
        for attribute in attributes {
            let Some(value) = v.typed.attr(attribute) else {
                continue;
            };
            for token in value.split_whitespace() {
                if f.full() {
                    break;
                }
                match resolve(token) {
                    None => f.error(
                        "references",
                        v.node.line,
                        format!(
                            "\"{}\": {attribute} lists \"{token}\", which is not {what}",
                            v.name
                        ),
                    ),
                    Some(target) if attribute == "derivative" => {
                        states.insert(target);
                        derivatives.insert(i);
                        let t = &vars[target];
                        if !matches!(t.type_name.as_str(), "Real" | "Float32" | "Float64") {
                            f.error(
                                "references",
                                v.node.line,
                                format!("\"{}\" is the derivative of \"{}\", which is not a Float variable", v.name, t.name),
                            );
                        }
                    }
                    Some(target) if attribute == "clocks" && vars[target].type_name != "Clock" => f
                        .error(
                            "references",
                            v.node.line,
                            format!(
                                "\"{}\": clocks refers to \"{}\", which is not a Clock",
                                v.name, vars[target].name
                            ),
                        ),
                    Some(_) => {}
                }
            }
        }
    }
    let Some(ms) = root.child("ModelStructure") else {
        if version == FmiVersion::Fmi2 {
            f.error("attributes", root.line, "no <ModelStructure>".into());
        }
        return;
    };
    let groups: Vec<(&str, Vec<&Node>)> = match version {
        FmiVersion::Fmi2 => ["Outputs", "Derivatives", "InitialUnknowns"]
            .iter()
            .map(|g| {
                (
                    *g,
                    ms.children_named(g)
                        .flat_map(|n| n.children_named("Unknown"))
                        .collect(),
                )
            })
            .collect(),
        FmiVersion::Fmi3 => [
            "Output",
            "ContinuousStateDerivative",
            "ClockedState",
            "InitialUnknown",
            "EventIndicator",
        ]
        .iter()
        .map(|g| (*g, ms.children_named(g).collect()))
        .collect(),
    };
    let key = match version {
        FmiVersion::Fmi2 => "index",
        FmiVersion::Fmi3 => "valueReference",
    };
    let knowns = |j: usize| {
        let v = &vars[j];
        matches!(
            v.causality.as_str(),
            "input" | "independent" | "parameter" | "structuralParameter"
        ) || states.contains(&j)
            || v.variability == "discrete"
            || v.typed.attr("previous").is_some()
    };
    let mut listed_outputs: HashSet<usize> = HashSet::new();
    for (group, unknowns) in &groups {
        let is_outputs = matches!(*group, "Outputs" | "Output");
        let is_derivatives = matches!(*group, "Derivatives" | "ContinuousStateDerivative");
        for u in unknowns {
            if f.full() {
                break;
            }
            let Some(token) = u.attr(key) else {
                f.error(
                    "references",
                    u.line,
                    format!("<{}> in {group} has no \"{key}\"", u.name),
                );
                continue;
            };
            let Some(index) = resolve(token) else {
                f.error(
                    "references",
                    u.line,
                    format!("{group}: {key}=\"{token}\" is not {what}"),
                );
                continue;
            };
            let v = &vars[index];
            if is_outputs {
                listed_outputs.insert(index);
                if v.causality != "output" {
                    f.error(
                        "outputs",
                        u.line,
                        format!(
                            "{group} lists \"{}\", whose causality is \"{}\", not output",
                            v.name, v.causality
                        ),
                    );
                }
            }
            if is_derivatives && !derivatives.contains(&index) {
                f.error(
                    "references",
                    u.line,
                    format!(
                        "{group} lists \"{}\", which has no \"derivative\" attribute",
                        v.name
                    ),
                );
            }
            let dependencies: Vec<&str> = u
                .attr("dependencies")
                .map(|d| d.split_whitespace().collect())
                .unwrap_or_default();
            let kinds = u
                .attr("dependenciesKind")
                .map(|k| k.split_whitespace().count());
            if let Some(kinds) = kinds {
                if kinds != dependencies.len() {
                    f.error(
                        "dependencies",
                        u.line,
                        format!(
                            "\"{}\": dependenciesKind lists {kinds} kinds for {} dependencies",
                            v.name,
                            dependencies.len()
                        ),
                    );
                }
            }
            for token in dependencies {
                if f.full() {
                    break;
                }
                match resolve(token) {
                    None => f.error(
                        "dependencies",
                        u.line,
                        format!("\"{}\" depends on \"{token}\", which is not {what}", v.name),
                    ),
                    Some(j) if !knowns(j) && *group != "InitialUnknowns" && *group != "InitialUnknown" => f.warning(
                        "dependencies",
                        u.line,
                        format!(
                            "\"{}\" depends on \"{}\" (causality {}), which is neither an input, a state nor a parameter",
                            v.name, vars[j].name, vars[j].causality
                        ),
                    ),
                    Some(_) => {}
                }
            }
        }
    }
    for (i, v) in vars.iter().enumerate() {
        if v.causality == "output" && !listed_outputs.contains(&i) {
            f.error(
                "outputs",
                v.node.line,
                format!(
                    "output \"{}\" is not listed in the ModelStructure's outputs",
                    v.name
                ),
            );
        }
    }
}

/// Functions every Co-Simulation FMU of the version exports, and those a flag promises.
fn required_functions(
    cs: &Node,
    version: FmiVersion,
    interface: &'static str,
) -> Vec<(&'static str, &'static str)> {
    let flag = |name: &str| {
        cs.attr(name)
            .is_some_and(|v| v.trim() == "true" || v.trim() == "1")
    };
    let order = cs
        .attr("maxOutputDerivativeOrder")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(0);
    let mut out = Vec::new();
    match version {
        FmiVersion::Fmi2 => {
            for name in [
                "fmi2GetVersion",
                "fmi2GetTypesPlatform",
                "fmi2SetDebugLogging",
                "fmi2Instantiate",
                "fmi2FreeInstance",
                "fmi2SetupExperiment",
                "fmi2EnterInitializationMode",
                "fmi2ExitInitializationMode",
                "fmi2Terminate",
                "fmi2Reset",
                "fmi2GetReal",
                "fmi2GetInteger",
                "fmi2GetBoolean",
                "fmi2GetString",
                "fmi2SetReal",
                "fmi2SetInteger",
                "fmi2SetBoolean",
                "fmi2SetString",
                "fmi2DoStep",
                "fmi2CancelStep",
                "fmi2GetStatus",
                "fmi2GetRealStatus",
                "fmi2GetIntegerStatus",
                "fmi2GetBooleanStatus",
                "fmi2GetStringStatus",
            ] {
                out.push((name, interface));
            }
            if flag("canGetAndSetFMUstate") {
                for name in ["fmi2GetFMUstate", "fmi2SetFMUstate", "fmi2FreeFMUstate"] {
                    out.push((name, "canGetAndSetFMUstate"));
                }
            }
            if flag("canSerializeFMUstate") {
                for name in [
                    "fmi2SerializedFMUstateSize",
                    "fmi2SerializeFMUstate",
                    "fmi2DeSerializeFMUstate",
                ] {
                    out.push((name, "canSerializeFMUstate"));
                }
            }
            if flag("providesDirectionalDerivative") {
                out.push((
                    "fmi2GetDirectionalDerivative",
                    "providesDirectionalDerivative",
                ));
            }
            if flag("canInterpolateInputs") {
                out.push(("fmi2SetRealInputDerivatives", "canInterpolateInputs"));
            }
            if order > 0 {
                out.push(("fmi2GetRealOutputDerivatives", "maxOutputDerivativeOrder"));
            }
        }
        FmiVersion::Fmi3 => {
            let own: &[&'static str] = if interface == SCHEDULED_EXECUTION {
                &[
                    "fmi3InstantiateScheduledExecution",
                    "fmi3ActivateModelPartition",
                    "fmi3GetClock",
                    "fmi3GetIntervalDecimal",
                ]
            } else {
                &["fmi3InstantiateCoSimulation", "fmi3DoStep"]
            };
            for &name in [
                "fmi3GetVersion",
                "fmi3SetDebugLogging",
                "fmi3FreeInstance",
                "fmi3EnterInitializationMode",
                "fmi3ExitInitializationMode",
                "fmi3Terminate",
                "fmi3Reset",
                "fmi3GetFloat64",
                "fmi3SetFloat64",
                "fmi3EnterConfigurationMode",
                "fmi3ExitConfigurationMode",
            ]
            .iter()
            .chain(own)
            {
                out.push((name, interface));
            }
            if flag("canGetAndSetFMUState") {
                for name in ["fmi3GetFMUState", "fmi3SetFMUState", "fmi3FreeFMUState"] {
                    out.push((name, "canGetAndSetFMUState"));
                }
            }
            if flag("canSerializeFMUState") {
                for name in [
                    "fmi3SerializedFMUStateSize",
                    "fmi3SerializeFMUState",
                    "fmi3DeserializeFMUState",
                ] {
                    out.push((name, "canSerializeFMUState"));
                }
            }
            if flag("providesDirectionalDerivatives") {
                out.push((
                    "fmi3GetDirectionalDerivative",
                    "providesDirectionalDerivatives",
                ));
            }
            if flag("providesAdjointDerivatives") {
                out.push(("fmi3GetAdjointDerivative", "providesAdjointDerivatives"));
            }
            if flag("hasEventMode") {
                for name in [
                    "fmi3EnterEventMode",
                    "fmi3UpdateDiscreteStates",
                    "fmi3EnterStepMode",
                ] {
                    out.push((name, "hasEventMode"));
                }
            }
            if flag("providesEvaluateDiscreteStates") {
                out.push((
                    "fmi3EvaluateDiscreteStates",
                    "providesEvaluateDiscreteStates",
                ));
            }
            if order > 0 {
                out.push(("fmi3GetOutputDerivatives", "maxOutputDerivativeOrder"));
            }
        }
    }
    out
}

/// The interfaces whose exports [`check_exports`] checks.
const CO_SIMULATION: &str = "Co-Simulation";
const SCHEDULED_EXECUTION: &str = "Scheduled Execution";

fn check_exports(root: &Node, archive: &FmuArchive) -> Vec<Finding> {
    let mut f = Findings::new();
    let version = match root.attr("fmiVersion") {
        Some(v) if v.starts_with("2.") => FmiVersion::Fmi2,
        Some(v) if v.starts_with("3.") => FmiVersion::Fmi3,
        _ => return f.finish(),
    };
    // The interface cosimo drives: Co-Simulation, else (FMI 3) Scheduled Execution.
    let interface = match (root.child("CoSimulation"), root.child("ScheduledExecution")) {
        (Some(cs), _) => Some((cs, CO_SIMULATION)),
        (None, Some(se)) if version == FmiVersion::Fmi3 => Some((se, SCHEDULED_EXECUTION)),
        _ => None,
    };
    let Some((cs, interface)) = interface else {
        f.warning(
            "exports",
            root.line,
            "no Co-Simulation or Scheduled Execution interface: exported functions were not checked (cosimo checks the exports of those only)".into(),
        );
        return f.finish();
    };
    let Some(identifier) = cs.attr("modelIdentifier").filter(|m| !m.trim().is_empty()) else {
        return f.finish();
    };
    let binary = match archive.binary_path(version, identifier) {
        Ok(path) if path.is_file() => path,
        _ => {
            f.warning(
                "exports",
                cs.line,
                format!("no binary \"{identifier}\" for this platform: exported functions were not checked"),
            );
            return f.finish();
        }
    };
    // SAFETY: loading runs the library's initialisers; an FMU binary is trusted code by the
    // nature of co-simulation (`cosimo run` calls into it). Only symbol addresses are looked up.
    let library = match unsafe { libloading::Library::new(&binary) } {
        Ok(library) => library,
        Err(e) => {
            f.error(
                "exports",
                cs.line,
                format!("{}: cannot load the binary: {e}", binary.display()),
            );
            return f.finish();
        }
    };
    // SAFETY: symbols are only looked up, never called.
    let exports = |name: &str| unsafe { library.get::<*const ()>(name.as_bytes()) }.is_ok();
    for (name, reason) in required_functions(cs, version, interface) {
        if !exports(name) {
            let prefixed = format!("{identifier}_{name}");
            let prefix_note = if exports(&prefixed) {
                format!(
                    " (it exports {prefixed}: a source-code FMU's prefix, which a binary FMU must not carry; build the library with the prefix disabled, e.g. DISABLE_PREFIX for the Reference FMUs' sources)"
                )
            } else {
                String::new()
            };
            f.error(
                "exports",
                cs.line,
                format!(
                    "the binary does not export {name}{}{prefix_note}",
                    if reason == interface {
                        format!(", which every {interface} FMU must")
                    } else {
                        format!(", which {reason}=\"true\" promises")
                    }
                ),
            );
        }
    }
    f.finish()
}
