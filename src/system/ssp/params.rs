//! Parameter sets (`ssv:ParameterSet`, inline or `.ssv`) and parameter mappings
//! (`ssm:ParameterMapping`, inline or `.ssm`) with their transformations.

use std::collections::HashMap;

use super::units::{self, SspUnit};
use super::xml::Element;

/// The type of a parameter value or connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Float,
    Integer,
    Boolean,
    String,
    Enumeration,
    Binary,
    Clock,
}

impl Kind {
    /// The kind of a type element (`ssc:Real`, `ssv:Float64`, ...), SSP 1.0 and 2.0 names.
    pub fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "Real" | "Float64" | "Float32" => Kind::Float,
            "Integer" | "Int8" | "UInt8" | "Int16" | "UInt16" | "Int32" | "UInt32" | "Int64"
            | "UInt64" => Kind::Integer,
            "Boolean" => Kind::Boolean,
            "String" => Kind::String,
            "Enumeration" => Kind::Enumeration,
            "Binary" => Kind::Binary,
            "Clock" => Kind::Clock,
            _ => return None,
        })
    }

    /// Whether values of these kinds can flow into each other.
    pub fn compatible(self, other: Kind) -> bool {
        use Kind::*;
        matches!(
            (self, other),
            (Float, Float)
                | (Integer, Integer)
                | (Integer, Enumeration)
                | (Enumeration, Integer)
                | (Enumeration, Enumeration)
                | (Boolean, Boolean)
                | (String, String)
                | (Binary, Binary)
                | (Clock, Clock)
        )
    }

    /// Float or integer.
    pub fn numeric(self) -> bool {
        matches!(self, Kind::Float | Kind::Integer)
    }

    /// The SSP 1.0 element name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Float => "Real",
            Kind::Integer => "Integer",
            Kind::Boolean => "Boolean",
            Kind::String => "String",
            Kind::Enumeration => "Enumeration",
            Kind::Binary => "Binary",
            Kind::Clock => "Clock",
        }
    }
}

/// One parameter of a set: its name, value as text, type, unit and line.
#[derive(Debug, Clone)]
pub(super) struct Parameter {
    pub name: String,
    pub value: String,
    pub kind: Kind,
    pub unit: Option<String>,
    pub line: usize,
}

/// A failure: line and message (the caller adds the file).
pub(super) type Fail = (usize, String);

/// Read an `ssv:ParameterSet` element; `units` receives its `ssv:Units`.
pub(super) fn read_parameter_set(
    set: &Element,
    units: &mut HashMap<String, SspUnit>,
) -> Result<Vec<Parameter>, Fail> {
    if !set.is("ParameterSet") {
        return Err((
            set.line,
            format!(
                "expected <ssv:ParameterSet>, found {}; a parameter source holds one \
                 ssv:ParameterSet",
                set.show()
            ),
        ));
    }
    if let Some(u) = set.child("Units") {
        units::read_units(u, units)?;
    }
    let mut parameters = Vec::new();
    let Some(list) = set.child("Parameters") else {
        return Ok(parameters);
    };
    for p in list.children_named("Parameter") {
        let name = p.attr("name").ok_or_else(|| {
            (
                p.line,
                "<ssv:Parameter> lacks the attribute \"name\"".to_string(),
            )
        })?;
        let Some((kind, typed)) = p
            .children
            .iter()
            .filter(|c| c.is_ssp())
            .find_map(|c| Kind::of(&c.name).map(|k| (k, c)))
        else {
            return Err((
                p.line,
                format!(
                    "<ssv:Parameter name=\"{name}\"> has no value element; give one of \
                     <ssv:Real value=\"...\"/>, Integer, Boolean, String, Enumeration, Binary"
                ),
            ));
        };
        let value = match typed.attr("value") {
            Some(v) => v.to_string(),
            None => {
                let why = if typed.attr("source").is_some() {
                    "a Binary value from an external source is not supported; give it inline \
                     as value=\"hex digits\""
                } else {
                    "add value=\"...\""
                };
                return Err((
                    typed.line,
                    format!(
                        "<ssv:{}> of parameter \"{name}\" has no attribute \"value\"; {why}",
                        typed.name
                    ),
                ));
            }
        };
        check_value(kind, &value).map_err(|m| {
            (
                typed.line,
                format!("<ssv:{}> of parameter \"{name}\": {m}", typed.name),
            )
        })?;
        parameters.push(Parameter {
            name: name.to_string(),
            value,
            kind,
            unit: typed.attr("unit").map(str::to_string),
            line: typed.line,
        });
    }
    Ok(parameters)
}

/// Check that `value` is a valid literal of `kind` (numbers and Booleans may be
/// space-separated lists, for FMI 3 arrays).
fn check_value(kind: Kind, value: &str) -> Result<(), String> {
    let each = |ok: fn(&str) -> bool| {
        let mut elements = value.split_whitespace().peekable();
        elements.peek().is_some() && elements.all(ok)
    };
    let ok = match kind {
        Kind::Float => each(|v| v.parse::<f64>().is_ok()),
        Kind::Integer => each(|v| v.parse::<i64>().is_ok() || v.parse::<u64>().is_ok()),
        Kind::Boolean => each(|v| matches!(v, "true" | "false" | "1" | "0")),
        Kind::Binary => {
            value.trim().len().is_multiple_of(2)
                && value.trim().chars().all(|c| c.is_ascii_hexdigit())
        }
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "value=\"{value}\" is not a valid {}{}",
            kind.name(),
            match kind {
                Kind::Float => " (expected a number such as 1.5 or 2e-3)",
                Kind::Integer => " (expected an integer)",
                Kind::Boolean => " (expected true or false)",
                Kind::Binary => " (expected hex digits)",
                _ => "",
            }
        ))
    }
}

/// A value transformation of a mapping entry or a connection.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Transformation {
    /// `target = factor * source + offset`.
    Linear { factor: f64, offset: f64 },
    /// Boolean, integer or enumeration value map (element name, source -> target).
    Map {
        element: &'static str,
        entries: Vec<(String, String)>,
    },
}

impl Transformation {
    /// A value map that maps every entry onto itself.
    pub fn is_identity(&self) -> bool {
        match self {
            Transformation::Linear { factor, offset } => *factor == 1.0 && *offset == 0.0,
            Transformation::Map { entries, .. } => entries.iter().all(|(s, t)| s == t),
        }
    }
}

/// The transformation among the children of `element`, if any.
pub(super) fn read_transformation(element: &Element) -> Result<Option<Transformation>, Fail> {
    for c in element.children.iter().filter(|c| c.is_ssp()) {
        let map = match c.name.as_str() {
            "LinearTransformation" => {
                let number = |key: &str, default: f64| -> Result<f64, Fail> {
                    match c.attr(key) {
                        None => Ok(default),
                        Some(text) => text
                            .trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|v| v.is_finite())
                            .ok_or_else(|| {
                                (
                                    c.line,
                                    format!(
                                        "<ssc:LinearTransformation>: {key}=\"{text}\" is not a \
                                         finite number"
                                    ),
                                )
                            }),
                    }
                };
                return Ok(Some(Transformation::Linear {
                    factor: number("factor", 1.0)?,
                    offset: number("offset", 0.0)?,
                }));
            }
            "BooleanMappingTransformation" => "BooleanMappingTransformation",
            "IntegerMappingTransformation" => "IntegerMappingTransformation",
            "EnumerationMappingTransformation" => "EnumerationMappingTransformation",
            _ => continue,
        };
        let mut entries = Vec::new();
        for e in c.children_named("MapEntry") {
            match (e.attr("source"), e.attr("target")) {
                (Some(s), Some(t)) => entries.push((s.trim().to_string(), t.trim().to_string())),
                _ => {
                    return Err((
                        e.line,
                        format!(
                            "<ssc:MapEntry> of <ssc:{map}> needs both \"source\" and \"target\""
                        ),
                    ))
                }
            }
        }
        return Ok(Some(Transformation::Map {
            element: map,
            entries,
        }));
    }
    Ok(None)
}

/// One entry of a parameter mapping.
#[derive(Debug, Clone)]
pub(super) struct MappingEntry {
    pub source: String,
    pub target: String,
    pub transformation: Option<Transformation>,
    pub suppress_unit_conversion: bool,
    pub line: usize,
}

/// Read an `ssm:ParameterMapping` element.
pub(super) fn read_mapping(mapping: &Element) -> Result<Vec<MappingEntry>, Fail> {
    if !mapping.is("ParameterMapping") {
        return Err((
            mapping.line,
            format!(
                "expected <ssm:ParameterMapping>, found {}; a mapping source holds one \
                 ssm:ParameterMapping",
                mapping.show()
            ),
        ));
    }
    let mut entries = Vec::new();
    for e in mapping.children_named("MappingEntry") {
        let (Some(source), Some(target)) = (e.attr("source"), e.attr("target")) else {
            return Err((
                e.line,
                "<ssm:MappingEntry> needs both \"source\" (name in the parameter set) and \
                 \"target\" (name of the parameter it sets)"
                    .to_string(),
            ));
        };
        entries.push(MappingEntry {
            source: source.to_string(),
            target: target.to_string(),
            transformation: read_transformation(e)?,
            suppress_unit_conversion: e.attr("suppressUnitConversion") == Some("true"),
            line: e.line,
        });
    }
    Ok(entries)
}

/// Apply a mapping entry's transformation to a parameter value.
pub(super) fn apply(
    parameter: &Parameter,
    transformation: &Transformation,
) -> Result<String, String> {
    match transformation {
        Transformation::Linear { factor, offset } => {
            if !parameter.kind.numeric() {
                return Err(format!(
                    "a LinearTransformation needs a numeric parameter, but \"{}\" is {}",
                    parameter.name,
                    parameter.kind.name()
                ));
            }
            let v: f64 = parameter.value.trim().parse().map_err(|_| {
                format!(
                    "\"{}\" is not a number (parameter \"{}\")",
                    parameter.value, parameter.name
                )
            })?;
            Ok(number_text(factor * v + offset))
        }
        Transformation::Map { element, entries } => {
            let value = normalise(parameter.kind, parameter.value.trim());
            entries
                .iter()
                .find(|(s, _)| normalise(parameter.kind, s) == value)
                .map(|(_, t)| t.clone())
                .ok_or_else(|| {
                    format!(
                        "<ssc:{element}> has no MapEntry for value \"{}\" of parameter \"{}\"; \
                         add <ssc:MapEntry source=\"{}\" target=\"...\"/>",
                        parameter.value, parameter.name, parameter.value
                    )
                })
        }
    }
}

/// Booleans `1`/`0` read as `true`/`false`; other values as written.
fn normalise(kind: Kind, value: &str) -> String {
    match (kind, value) {
        (Kind::Boolean, "1") => "true".to_string(),
        (Kind::Boolean, "0") => "false".to_string(),
        _ => value.to_string(),
    }
}

/// A float as text that reads back exactly; integral values without a fraction.
pub(super) fn number_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    }
}
