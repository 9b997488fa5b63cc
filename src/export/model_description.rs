//! The exported FMU's `modelDescription.xml` (FMI 2 or FMI 3 Co-Simulation), generated from
//! the variables it shows and the inner FMUs' descriptions they come from (units and declared
//! types carried over).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::manifest::{Exposed, Role};
use crate::fmu::description::{
    FmiVersion, ModelDescription, StartValue, TypeDefinition, Unit, Variability, Variable,
    VariableType,
};

/// The FMU as a whole: names, capabilities, default experiment.
pub struct Header {
    pub version: FmiVersion,
    pub model_name: String,
    pub model_identifier: String,
    pub token: String,
    pub description: String,
    pub can_get_and_set_state: bool,
    pub can_serialize_state: bool,
    pub start: f64,
    pub stop: f64,
    pub step: f64,
    pub tolerance: Option<f64>,
}

/// One shown variable with the inner variable and description it stands for.
pub struct Shown<'a> {
    pub exposed: &'a Exposed,
    pub variable: &'a Variable,
    pub description: &'a ModelDescription,
    /// Sizes of its dimensions (FMI 3 arrays), fixed at export.
    pub dimensions: Vec<u64>,
}

/// Units and declared types gathered from the inner FMUs; a declared type whose name another
/// FMU uses for a different definition is renamed `component.Type`.
#[derive(Default)]
struct Definitions {
    units: BTreeMap<String, Unit>,
    types: BTreeMap<String, TypeDefinition>,
}

impl Definitions {
    /// Record what `shown` refers to; returns the declared type's name in the export.
    fn add(&mut self, shown: &Shown<'_>) -> Option<String> {
        let description = shown.description;
        let mut unit_names: Vec<String> = shown.variable.unit.iter().cloned().collect();
        let declared = shown.variable.declared_type.as_ref().and_then(|name| {
            description
                .type_definitions
                .iter()
                .find(|t| &t.name == name)
        });
        let mut type_name = None;
        if let Some(definition) = declared {
            unit_names.extend(definition.unit.iter().cloned());
            let mut name = definition.name.clone();
            if let Some(known) = self.types.get(&name) {
                if format!("{known:?}") != format!("{definition:?}") {
                    let component = shown.exposed.target.split('.').next().unwrap_or_default();
                    name = format!("{component}.{}", definition.name);
                }
            }
            let mut definition = definition.clone();
            definition.name = name.clone();
            self.types.entry(name.clone()).or_insert(definition);
            type_name = Some(name);
        }
        for unit in unit_names {
            if let Some(found) = description.units.iter().find(|u| u.name == unit) {
                self.units.entry(unit).or_insert_with(|| found.clone());
            }
        }
        type_name
    }
}

/// XML text with the five special characters escaped.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            c if (c as u32) < 0x20 && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// ` name="value"` when there is a value.
fn attr(out: &mut String, name: &str, value: Option<&str>) {
    if let Some(value) = value {
        let _ = write!(out, " {name}=\"{}\"", esc(value));
    }
}

fn number(x: f64) -> String {
    // Rust prints the shortest text that reads back to the same f64.
    format!("{x}")
}

/// The FMI 2 element of a type (`Real`, `Integer`, ...), `None` where FMI 2 has none.
pub fn fmi2_element(var_type: VariableType) -> Option<&'static str> {
    use VariableType::*;
    Some(match var_type {
        Float32 | Float64 => "Real",
        Int8 | UInt8 | Int16 | UInt16 | Int32 => "Integer",
        Boolean => "Boolean",
        String => "String",
        Enumeration => "Enumeration",
        _ => return None,
    })
}

/// A start value's elements as the attribute text (space-separated for arrays), `None` for
/// values XML cannot carry (NaN, infinities) and for FMI 3 Strings and Binaries (written as
/// `<Start value=".."/>` elements, [`start_elements`]).
fn start_text(value: &StartValue, version: FmiVersion) -> Option<String> {
    let items: Vec<String> = match value {
        StartValue::Float(v) if v.iter().all(|x| x.is_finite()) => {
            v.iter().map(|&x| number(x)).collect()
        }
        StartValue::Float(_) => return None,
        StartValue::Int(v) => v.iter().map(i64::to_string).collect(),
        StartValue::UInt(v) => v.iter().map(u64::to_string).collect(),
        StartValue::Bool(v) => v
            .iter()
            .map(|&b| if b { "true" } else { "false" }.to_string())
            .collect(),
        StartValue::String(v) if version == FmiVersion::Fmi2 => v.clone(),
        StartValue::String(_) => return None,
        StartValue::Binary(_) if version == FmiVersion::Fmi3 => return None,
        StartValue::Binary(v) => v.iter().map(|bytes| hex(bytes)).collect(),
    };
    Some(items.join(" "))
}

/// The `value` texts of an FMI 3 String's or Binary's `<Start>` elements (none for others).
fn start_elements(value: Option<&StartValue>) -> Vec<String> {
    match value {
        Some(StartValue::String(v)) => v.clone(),
        Some(StartValue::Binary(v)) => v.iter().map(|bytes| hex(bytes)).collect(),
        _ => Vec::new(),
    }
}

/// Bytes as the FMI's hexadecimal text.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The start value an input or parameter declares: the inner one, else zero of its type.
fn start_or_zero(shown: &Shown<'_>) -> StartValue {
    if let Some(start) = &shown.exposed.start {
        return start.clone();
    }
    let n = shown.exposed.count;
    match shown.variable.var_type {
        t if t.is_float() => StartValue::Float(vec![0.0; n]),
        VariableType::UInt8
        | VariableType::UInt16
        | VariableType::UInt32
        | VariableType::UInt64 => StartValue::UInt(vec![0; n]),
        t if t.is_integer() => StartValue::Int(vec![0; n]),
        VariableType::Boolean => StartValue::Bool(vec![false; n]),
        VariableType::Binary => StartValue::Binary(vec![Vec::new(); n]),
        _ => StartValue::String(vec![String::new(); n]),
    }
}

fn causality(role: Role) -> &'static str {
    match role {
        Role::Input => "input",
        Role::Output => "output",
        Role::Parameter | Role::TunableParameter => "parameter",
    }
}

fn variability(shown: &Shown<'_>) -> &'static str {
    match shown.exposed.role {
        Role::Parameter => "fixed",
        Role::TunableParameter => "tunable",
        Role::Input | Role::Output => {
            // FMI: only Float variables are continuous.
            if shown.variable.variability == Variability::Continuous
                && shown.variable.var_type.is_float()
            {
                "continuous"
            } else {
                "discrete"
            }
        }
    }
}

/// The whole `modelDescription.xml`.
pub fn write(header: &Header, shown: &[Shown<'_>]) -> String {
    let mut definitions = Definitions::default();
    let declared: Vec<Option<String>> = shown.iter().map(|s| definitions.add(s)).collect();
    let v3 = header.version == FmiVersion::Fmi3;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = write!(
        out,
        "<fmiModelDescription fmiVersion=\"{}\" modelName=\"{}\" {}=\"{}\" description=\"{}\" generationTool=\"cosimo {}\" variableNamingConvention=\"flat\"",
        if v3 { "3.0" } else { "2.0" },
        esc(&header.model_name),
        if v3 { "instantiationToken" } else { "guid" },
        esc(&header.token),
        esc(&header.description),
        env!("CARGO_PKG_VERSION"),
    );
    if !v3 {
        out.push_str(" numberOfEventIndicators=\"0\"");
    }
    out.push_str(">\n");
    let state = if v3 { "FMUState" } else { "FMUstate" };
    let _ = writeln!(
        out,
        "  <CoSimulation modelIdentifier=\"{}\" canHandleVariableCommunicationStepSize=\"true\" canGetAndSet{state}=\"{}\" canSerialize{state}=\"{}\"{}/>",
        esc(&header.model_identifier),
        header.can_get_and_set_state,
        header.can_serialize_state,
        if v3 { " hasEventMode=\"false\"" } else { " canNotUseMemoryManagementFunctions=\"true\"" },
    );
    write_units(&mut out, &definitions, v3);
    write_types(&mut out, &definitions, header.version);
    let _ = write!(
        out,
        "  <DefaultExperiment startTime=\"{}\" stopTime=\"{}\" stepSize=\"{}\"",
        number(header.start),
        number(header.stop),
        number(header.step)
    );
    attr(
        &mut out,
        "tolerance",
        header.tolerance.map(number).as_deref(),
    );
    out.push_str("/>\n  <ModelVariables>\n");
    if v3 {
        out.push_str("    <Float64 name=\"time\" valueReference=\"0\" causality=\"independent\" variability=\"continuous\" description=\"Simulation time\"/>\n");
    }
    for (s, declared) in shown.iter().zip(&declared) {
        if v3 {
            write_variable3(&mut out, s, declared.as_deref());
        } else {
            write_variable2(&mut out, s, declared.as_deref());
        }
    }
    out.push_str("  </ModelVariables>\n  <ModelStructure>\n");
    let outputs: Vec<(usize, &Shown<'_>)> = shown
        .iter()
        .enumerate()
        .filter(|(_, s)| s.exposed.role == Role::Output)
        .collect();
    if v3 {
        for (_, s) in &outputs {
            let _ = writeln!(
                out,
                "    <Output valueReference=\"{}\"/>",
                s.exposed.value_reference
            );
        }
        for (_, s) in &outputs {
            let _ = writeln!(
                out,
                "    <InitialUnknown valueReference=\"{}\"/>",
                s.exposed.value_reference
            );
        }
    } else if !outputs.is_empty() {
        out.push_str("    <Outputs>\n");
        for (i, _) in &outputs {
            let _ = writeln!(out, "      <Unknown index=\"{}\"/>", i + 1);
        }
        out.push_str("    </Outputs>\n    <InitialUnknowns>\n");
        for (i, _) in &outputs {
            let _ = writeln!(out, "      <Unknown index=\"{}\"/>", i + 1);
        }
        out.push_str("    </InitialUnknowns>\n");
    }
    out.push_str("  </ModelStructure>\n</fmiModelDescription>\n");
    out
}

fn write_units(out: &mut String, definitions: &Definitions, v3: bool) {
    if definitions.units.is_empty() {
        return;
    }
    out.push_str("  <UnitDefinitions>\n");
    for unit in definitions.units.values() {
        let _ = write!(out, "    <Unit name=\"{}\">", esc(&unit.name));
        if let Some(b) = &unit.base_unit {
            out.push_str("<BaseUnit");
            for (name, exponent) in [
                ("kg", b.kg),
                ("m", b.m),
                ("s", b.s),
                ("A", b.a),
                ("K", b.k),
                ("mol", b.mol),
                ("cd", b.cd),
                ("rad", b.rad),
            ] {
                if exponent != 0 {
                    let _ = write!(out, " {name}=\"{exponent}\"");
                }
            }
            if b.factor != 1.0 {
                let _ = write!(out, " factor=\"{}\"", number(b.factor));
            }
            if b.offset != 0.0 {
                let _ = write!(out, " offset=\"{}\"", number(b.offset));
            }
            out.push_str("/>");
        }
        for d in &unit.display_units {
            let _ = write!(
                out,
                "<DisplayUnit name=\"{}\" factor=\"{}\" offset=\"{}\"",
                esc(&d.name),
                number(d.factor),
                number(d.offset)
            );
            if v3 && d.inverse {
                out.push_str(" inverse=\"true\"");
            }
            out.push_str("/>");
        }
        out.push_str("</Unit>\n");
    }
    out.push_str("  </UnitDefinitions>\n");
}

fn type_attributes(out: &mut String, t: &TypeDefinition) {
    attr(out, "quantity", t.quantity.as_deref());
    if t.var_type.is_float() {
        attr(out, "unit", t.unit.as_deref());
        attr(out, "displayUnit", t.display_unit.as_deref());
    }
    attr(out, "min", t.min.as_deref());
    attr(out, "max", t.max.as_deref());
    if t.var_type.is_float() {
        attr(out, "nominal", t.nominal.map(number).as_deref());
    }
}

fn write_items(out: &mut String, t: &TypeDefinition) {
    for item in &t.items {
        let _ = write!(
            out,
            "<Item name=\"{}\" value=\"{}\"",
            esc(&item.name),
            item.value
        );
        attr(out, "description", item.description.as_deref());
        out.push_str("/>");
    }
}

fn write_types(out: &mut String, definitions: &Definitions, version: FmiVersion) {
    if definitions.types.is_empty() {
        return;
    }
    out.push_str("  <TypeDefinitions>\n");
    for t in definitions.types.values() {
        if version == FmiVersion::Fmi3 {
            let element = t.var_type.fmi_name(FmiVersion::Fmi3);
            let _ = write!(out, "    <{element}Type name=\"{}\"", esc(&t.name));
            attr(out, "description", t.description.as_deref());
            type_attributes(out, t);
            if t.items.is_empty() {
                out.push_str("/>\n");
            } else {
                out.push('>');
                write_items(out, t);
                let _ = writeln!(out, "</{element}Type>");
            }
        } else {
            let Some(element) = fmi2_element(t.var_type) else {
                continue;
            };
            let _ = write!(out, "    <SimpleType name=\"{}\"", esc(&t.name));
            attr(out, "description", t.description.as_deref());
            let _ = write!(out, "><{element}");
            type_attributes(out, t);
            if t.items.is_empty() {
                out.push_str("/>");
            } else {
                out.push('>');
                write_items(out, t);
                let _ = write!(out, "</{element}>");
            }
            out.push_str("</SimpleType>\n");
        }
    }
    out.push_str("  </TypeDefinitions>\n");
}

/// Attributes shared by both versions: declared type, quantity, unit, min, max, nominal.
fn value_attributes(out: &mut String, s: &Shown<'_>, declared: Option<&str>) {
    let v = s.variable;
    attr(out, "declaredType", declared);
    attr(out, "quantity", v.quantity.as_deref());
    if v.var_type.is_float() {
        attr(out, "unit", v.unit.as_deref());
        attr(out, "displayUnit", v.display_unit.as_deref());
    }
    attr(out, "min", v.min.as_deref());
    attr(out, "max", v.max.as_deref());
    if v.var_type.is_float() {
        attr(out, "nominal", v.nominal.map(number).as_deref());
    }
}

fn head(out: &mut String, s: &Shown<'_>) {
    let e = s.exposed;
    let _ = write!(
        out,
        " name=\"{}\" valueReference=\"{}\" causality=\"{}\" variability=\"{}\"",
        esc(&e.name),
        e.value_reference,
        causality(e.role),
        variability(s)
    );
    match e.role {
        Role::Output => out.push_str(" initial=\"calculated\""),
        Role::Parameter | Role::TunableParameter => out.push_str(" initial=\"exact\""),
        Role::Input => {}
    }
    attr(out, "description", s.variable.description.as_deref());
}

fn write_variable2(out: &mut String, s: &Shown<'_>, declared: Option<&str>) {
    let Some(element) = fmi2_element(s.variable.var_type) else {
        return;
    };
    out.push_str("    <ScalarVariable");
    head(out, s);
    let _ = write!(out, ">\n      <{element}");
    value_attributes(out, s, declared);
    if s.exposed.role != Role::Output {
        attr(
            out,
            "start",
            start_text(&start_or_zero(s), FmiVersion::Fmi2).as_deref(),
        );
    }
    out.push_str("/>\n    </ScalarVariable>\n");
}

fn write_variable3(out: &mut String, s: &Shown<'_>, declared: Option<&str>) {
    let element = s.variable.var_type.fmi_name(FmiVersion::Fmi3);
    let _ = write!(out, "    <{element}");
    head(out, s);
    value_attributes(out, s, declared);
    let start = (s.exposed.role != Role::Output).then(|| start_or_zero(s));
    if let Some(start) = &start {
        attr(out, "start", start_text(start, FmiVersion::Fmi3).as_deref());
    }
    let strings = start_elements(start.as_ref());
    if s.dimensions.is_empty() && strings.is_empty() {
        out.push_str("/>\n");
        return;
    }
    out.push('>');
    for size in &s.dimensions {
        let _ = write!(out, "<Dimension start=\"{size}\"/>");
    }
    for text in &strings {
        let _ = write!(out, "<Start value=\"{}\"/>", esc(text));
    }
    let _ = writeln!(out, "</{element}>");
}
