//! A tiny `modelDescription.xml` scan (FMI 2.0 and 3.0): just what the harness needs.
//!
//! Deliberately independent of cosimo's own parser: it reads the attributes the tests use and
//! ignores everything else.

use std::collections::HashMap;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

/// One element of the ModelStructure (an output, a derivative or an initial unknown).
#[derive(Clone, Debug)]
pub struct Unknown {
    /// Value reference of the unknown.
    pub vr: u32,
    /// Value references it depends on; `None` when the attribute is absent (depends on all).
    pub dependencies: Option<Vec<u32>>,
}

/// Array dimension of an FMI 3 variable.
#[derive(Clone, Debug)]
pub enum Dimension {
    /// Fixed size.
    Fixed(u64),
    /// Size given by a structural parameter.
    Parameter(u32),
}

/// One model variable.
#[derive(Clone, Debug)]
pub struct Variable {
    /// Name.
    pub name: String,
    /// Value reference.
    pub vr: u32,
    /// Type in FMI 3 spelling (FMI 2 `Real` -> `Float64`, `Integer` -> `Int32`).
    pub ty: String,
    /// Causality (default `local`).
    pub causality: String,
    /// Variability (default `continuous` for floats, `discrete` otherwise).
    pub variability: String,
    /// `initial`, if given.
    pub initial: Option<String>,
    /// `start`, if given (FMI 3 String/Binary starts are child elements, read too).
    pub start: Option<String>,
    /// Value reference of the state this is the derivative of.
    pub derivative_of: Option<u32>,
    /// FMI 3 array dimensions (empty for scalars).
    pub dimensions: Vec<Dimension>,
}

impl Variable {
    /// Whether this is a scalar (no `Dimension`).
    pub fn is_scalar(&self) -> bool {
        self.dimensions.is_empty()
    }

    /// Whether this is a scalar, continuous `Float64`.
    pub fn is_continuous_f64(&self) -> bool {
        self.is_scalar() && self.ty == "Float64" && self.variability == "continuous"
    }
}

/// What the harness reads from `modelDescription.xml`.
#[derive(Clone, Debug, Default)]
pub struct ModelDescription {
    /// 2 or 3.
    pub fmi_version: u8,
    /// `modelName`.
    pub model_name: String,
    /// FMI 2 `guid` or FMI 3 `instantiationToken`.
    pub token: String,
    /// `modelIdentifier` of the CoSimulation element (None: no Co-Simulation interface).
    pub cs_model_identifier: Option<String>,
    /// Whether a ModelExchange element is present.
    pub has_model_exchange: bool,
    /// `modelIdentifier` of the ModelExchange element.
    pub me_model_identifier: Option<String>,
    /// FMI 2 `numberOfEventIndicators` (root attribute), if given.
    pub number_of_event_indicators: Option<usize>,
    /// FMI 3 `EventIndicator` value references (ModelStructure order).
    pub event_indicators: Vec<u32>,
    /// `canGetAndSetFMUstate` / `canGetAndSetFMUState`.
    pub can_get_and_set_state: bool,
    /// `canSerializeFMUstate` / `canSerializeFMUState`.
    pub can_serialize_state: bool,
    /// `providesDirectionalDerivative` (FMI 2) / `providesDirectionalDerivatives` (FMI 3).
    pub provides_directional_derivatives: bool,
    /// `canHandleVariableCommunicationStepSize`.
    pub can_handle_variable_step: bool,
    /// `canBeInstantiatedOnlyOncePerProcess`.
    pub only_once_per_process: bool,
    /// `maxOutputDerivativeOrder`.
    pub max_output_derivative_order: u32,
    /// DefaultExperiment startTime.
    pub start_time: Option<f64>,
    /// DefaultExperiment stopTime.
    pub stop_time: Option<f64>,
    /// DefaultExperiment stepSize.
    pub step_size: Option<f64>,
    /// The variables, in document order.
    pub variables: Vec<Variable>,
    /// ModelStructure outputs.
    pub outputs: Vec<Unknown>,
    /// ModelStructure (continuous state) derivatives.
    pub derivatives: Vec<Unknown>,
    /// ModelStructure initial unknowns.
    pub initial_unknowns: Vec<Unknown>,
}

impl ModelDescription {
    /// The variable with this name.
    pub fn var(&self, name: &str) -> Option<&Variable> {
        self.variables.iter().find(|v| v.name == name)
    }

    /// The variable with this value reference.
    pub fn by_vr(&self, vr: u32) -> Option<&Variable> {
        self.variables.iter().find(|v| v.vr == vr)
    }

    /// Value reference by name, panicking with a clear message.
    pub fn vr(&self, name: &str) -> u32 {
        self.var(name)
            .unwrap_or_else(|| panic!("{}: no variable named {name}", self.model_name))
            .vr
    }

    /// Scalar continuous Float64 inputs.
    pub fn continuous_f64_inputs(&self) -> Vec<&Variable> {
        self.variables
            .iter()
            .filter(|v| v.causality == "input" && v.is_continuous_f64())
            .collect()
    }

    /// Scalar continuous Float64 outputs (ModelStructure order).
    pub fn continuous_f64_outputs(&self) -> Vec<&Variable> {
        self.f64_outputs()
            .into_iter()
            .filter(|v| v.variability == "continuous")
            .collect()
    }

    /// Scalar Float64 outputs (ModelStructure order).
    pub fn f64_outputs(&self) -> Vec<&Variable> {
        self.outputs
            .iter()
            .filter_map(|u| self.by_vr(u.vr))
            .filter(|v| v.is_scalar() && v.ty == "Float64")
            .collect()
    }

    /// Number of elements of a variable (product of its dimensions), if it can be determined.
    pub fn element_count(&self, var: &Variable) -> Option<usize> {
        let mut n = 1usize;
        for d in &var.dimensions {
            let size = match d {
                Dimension::Fixed(s) => *s,
                Dimension::Parameter(vr) => {
                    self.by_vr(*vr)?.start.as_deref()?.trim().parse().ok()?
                }
            };
            n = n.checked_mul(usize::try_from(size).ok()?)?;
        }
        Some(n)
    }

    /// A value reference that no variable uses.
    pub fn unused_vr(&self) -> u32 {
        self.variables.iter().map(|v| v.vr).max().unwrap_or(0) + 1000
    }
}

fn attrs(e: &BytesStart) -> Result<HashMap<String, String>, String> {
    let mut map = HashMap::new();
    for a in e.attributes() {
        let a = a.map_err(|err| format!("bad attribute: {err}"))?;
        let key = String::from_utf8_lossy(a.key.local_name().as_ref()).into_owned();
        let value = a
            .unescape_value()
            .map_err(|err| format!("bad attribute value of {key}: {err}"))?
            .into_owned();
        map.insert(key, value);
    }
    Ok(map)
}

fn flag(a: &HashMap<String, String>, key: &str) -> bool {
    a.get(key).is_some_and(|v| v == "true" || v == "1")
}

fn num(a: &HashMap<String, String>, key: &str) -> Option<f64> {
    a.get(key).and_then(|v| v.trim().parse().ok())
}

fn list(s: &str) -> Result<Vec<u32>, String> {
    s.split_whitespace()
        .map(|t| t.parse().map_err(|_| format!("bad number in list {s:?}")))
        .collect()
}

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

/// Parse the text of a `modelDescription.xml`.
pub fn parse(xml: &str) -> Result<ModelDescription, String> {
    let mut md = ModelDescription::default();
    let mut reader = Reader::from_str(xml);
    let mut path: Vec<String> = Vec::new();
    // FMI 2 ModelStructure uses 1-based indices into ModelVariables; resolved at the end.
    let mut fmi2_index_unknowns: Vec<(String, u32, Option<Vec<u32>>)> = Vec::new();
    let mut fmi2_derivative_index: Vec<(usize, u32)> = Vec::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("XML error at byte {}: {e}", reader.buffer_position()))?;
        let (e, empty) = match &event {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(_) => {
                path.pop();
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
        let parent = path.last().map(String::as_str).unwrap_or("");
        let a = attrs(e)?;
        match (parent, name.as_str()) {
            ("", "fmiModelDescription") => {
                let version = a.get("fmiVersion").cloned().unwrap_or_default();
                md.fmi_version = if version.starts_with('2') {
                    2
                } else if version.starts_with('3') {
                    3
                } else {
                    return Err(format!("unknown fmiVersion {version:?}"));
                };
                md.model_name = a.get("modelName").cloned().unwrap_or_default();
                md.token = a
                    .get("guid")
                    .or_else(|| a.get("instantiationToken"))
                    .cloned()
                    .ok_or("fmiModelDescription has no guid / instantiationToken")?;
                md.number_of_event_indicators = a
                    .get("numberOfEventIndicators")
                    .and_then(|v| v.trim().parse().ok());
            }
            ("fmiModelDescription", "CoSimulation") => {
                md.cs_model_identifier = a.get("modelIdentifier").cloned();
                md.can_get_and_set_state =
                    flag(&a, "canGetAndSetFMUstate") || flag(&a, "canGetAndSetFMUState");
                md.can_serialize_state =
                    flag(&a, "canSerializeFMUstate") || flag(&a, "canSerializeFMUState");
                md.provides_directional_derivatives = flag(&a, "providesDirectionalDerivative")
                    || flag(&a, "providesDirectionalDerivatives");
                md.can_handle_variable_step = flag(&a, "canHandleVariableCommunicationStepSize");
                md.only_once_per_process = flag(&a, "canBeInstantiatedOnlyOncePerProcess");
                md.max_output_derivative_order = a
                    .get("maxOutputDerivativeOrder")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
            }
            ("fmiModelDescription", "ModelExchange") => {
                md.has_model_exchange = true;
                md.me_model_identifier = a.get("modelIdentifier").cloned();
            }
            ("ModelStructure", "EventIndicator") => md.event_indicators.push(
                a.get("valueReference")
                    .and_then(|v| v.parse().ok())
                    .ok_or("EventIndicator without a valid valueReference")?,
            ),
            ("fmiModelDescription", "DefaultExperiment") => {
                md.start_time = num(&a, "startTime");
                md.stop_time = num(&a, "stopTime");
                md.step_size = num(&a, "stepSize");
            }
            ("ModelVariables", "ScalarVariable") => md.variables.push(Variable {
                name: a.get("name").cloned().unwrap_or_default(),
                vr: a
                    .get("valueReference")
                    .and_then(|v| v.parse().ok())
                    .ok_or("ScalarVariable without a valid valueReference")?,
                ty: String::new(),
                causality: a
                    .get("causality")
                    .cloned()
                    .unwrap_or_else(|| "local".into()),
                variability: a.get("variability").cloned().unwrap_or_default(),
                initial: a.get("initial").cloned(),
                start: None,
                derivative_of: None,
                dimensions: Vec::new(),
            }),
            (
                "ScalarVariable",
                ty @ ("Real" | "Integer" | "Boolean" | "String" | "Enumeration"),
            ) => {
                let index = md.variables.len() - 1;
                let var = &mut md.variables[index];
                var.ty = match ty {
                    "Real" => "Float64".into(),
                    "Integer" => "Int32".into(),
                    other => other.into(),
                };
                if var.variability.is_empty() {
                    var.variability = if ty == "Real" {
                        "continuous"
                    } else {
                        "discrete"
                    }
                    .into();
                }
                var.start = a.get("start").cloned();
                if let Some(d) = a.get("derivative").and_then(|d| d.parse().ok()) {
                    fmi2_derivative_index.push((index, d));
                }
            }
            ("ModelVariables", ty) if md.fmi_version == 3 && FMI3_TYPES.contains(&ty) => {
                let float = ty.starts_with("Float");
                md.variables.push(Variable {
                    name: a.get("name").cloned().unwrap_or_default(),
                    vr: a
                        .get("valueReference")
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| format!("{ty} without a valid valueReference"))?,
                    ty: ty.into(),
                    causality: a
                        .get("causality")
                        .cloned()
                        .unwrap_or_else(|| "local".into()),
                    variability: a
                        .get("variability")
                        .cloned()
                        .unwrap_or_else(|| if float { "continuous" } else { "discrete" }.into()),
                    initial: a.get("initial").cloned(),
                    start: a.get("start").cloned(),
                    derivative_of: a.get("derivative").and_then(|d| d.parse().ok()),
                    dimensions: Vec::new(),
                });
            }
            (ty, "Dimension") if FMI3_TYPES.contains(&ty) => {
                let dim = if let Some(s) = a.get("start").and_then(|s| s.parse().ok()) {
                    Dimension::Fixed(s)
                } else if let Some(vr) = a.get("valueReference").and_then(|s| s.parse().ok()) {
                    Dimension::Parameter(vr)
                } else {
                    return Err("Dimension without start or valueReference".into());
                };
                if let Some(var) = md.variables.last_mut() {
                    var.dimensions.push(dim);
                }
            }
            (ty, "Start") if FMI3_TYPES.contains(&ty) => {
                if let (Some(var), Some(v)) = (md.variables.last_mut(), a.get("value")) {
                    match &mut var.start {
                        Some(s) => {
                            s.push(' ');
                            s.push_str(v);
                        }
                        None => var.start = Some(v.clone()),
                    }
                }
            }
            (list_name @ ("Outputs" | "Derivatives" | "InitialUnknowns"), "Unknown") => {
                let index = a
                    .get("index")
                    .and_then(|i| i.parse().ok())
                    .ok_or("Unknown without a valid index")?;
                let deps = a.get("dependencies").map(|d| list(d)).transpose()?;
                fmi2_index_unknowns.push((list_name.to_string(), index, deps));
            }
            (
                "ModelStructure",
                kind @ ("Output" | "ContinuousStateDerivative" | "InitialUnknown"),
            ) => {
                let unknown = Unknown {
                    vr: a
                        .get("valueReference")
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| format!("{kind} without a valid valueReference"))?,
                    dependencies: a.get("dependencies").map(|d| list(d)).transpose()?,
                };
                match kind {
                    "Output" => md.outputs.push(unknown),
                    "ContinuousStateDerivative" => md.derivatives.push(unknown),
                    _ => md.initial_unknowns.push(unknown),
                }
            }
            _ => {}
        }
        if !empty {
            path.push(name);
        }
    }
    // Resolve FMI 2 indices (1-based) to value references.
    let vr_of = |index: u32| -> Result<u32, String> {
        md.variables
            .get((index as usize).wrapping_sub(1))
            .map(|v| v.vr)
            .ok_or_else(|| format!("ModelStructure index {index} out of range"))
    };
    let mut resolved = Vec::new();
    for (list_name, index, deps) in &fmi2_index_unknowns {
        let deps = match deps {
            Some(d) => Some(d.iter().map(|&i| vr_of(i)).collect::<Result<Vec<_>, _>>()?),
            None => None,
        };
        resolved.push((
            list_name.clone(),
            Unknown {
                vr: vr_of(*index)?,
                dependencies: deps,
            },
        ));
    }
    let mut derivative_of = Vec::new();
    for &(var_index, state_index) in &fmi2_derivative_index {
        derivative_of.push((var_index, vr_of(state_index)?));
    }
    for (list_name, unknown) in resolved {
        match list_name.as_str() {
            "Outputs" => md.outputs.push(unknown),
            "Derivatives" => md.derivatives.push(unknown),
            _ => md.initial_unknowns.push(unknown),
        }
    }
    for (var_index, state_vr) in derivative_of {
        md.variables[var_index].derivative_of = Some(state_vr);
    }
    if md.fmi_version == 0 {
        return Err("no fmiModelDescription element".into());
    }
    Ok(md)
}
