//! Walks the element tree of `modelDescription.xml` (FMI 2.0 or 3.0) into a [`ModelDescription`].

use std::collections::HashMap;
use std::str::FromStr;

use super::model::*;
use crate::xml::{parse_tree, Element, Fail, R};

const CAUSALITIES: &[(&str, Causality)] = &[
    ("parameter", Causality::Parameter),
    ("calculatedParameter", Causality::CalculatedParameter),
    ("input", Causality::Input),
    ("output", Causality::Output),
    ("local", Causality::Local),
    ("independent", Causality::Independent),
    ("structuralParameter", Causality::StructuralParameter),
];

const VARIABILITIES: &[(&str, Variability)] = &[
    ("constant", Variability::Constant),
    ("fixed", Variability::Fixed),
    ("tunable", Variability::Tunable),
    ("discrete", Variability::Discrete),
    ("continuous", Variability::Continuous),
];

const INITIALS: &[(&str, Initial)] = &[
    ("exact", Initial::Exact),
    ("approx", Initial::Approx),
    ("calculated", Initial::Calculated),
];

const DEPENDENCY_KINDS: &[(&str, DependencyKind)] = &[
    ("dependent", DependencyKind::Dependent),
    ("constant", DependencyKind::Constant),
    ("fixed", DependencyKind::Fixed),
    ("tunable", DependencyKind::Tunable),
    ("discrete", DependencyKind::Discrete),
];

/// FMI 2 type elements (inside `ScalarVariable` and `SimpleType`).
const FMI2_TYPES: &[(&str, VariableType)] = &[
    ("Real", VariableType::Float64),
    ("Integer", VariableType::Int32),
    ("Boolean", VariableType::Boolean),
    ("String", VariableType::String),
    ("Enumeration", VariableType::Enumeration),
];

/// FMI 3 variable elements; the type definitions are the same names with a `Type` suffix.
const FMI3_TYPES: &[(&str, VariableType)] = &[
    ("Float32", VariableType::Float32),
    ("Float64", VariableType::Float64),
    ("Int8", VariableType::Int8),
    ("UInt8", VariableType::UInt8),
    ("Int16", VariableType::Int16),
    ("UInt16", VariableType::UInt16),
    ("Int32", VariableType::Int32),
    ("UInt32", VariableType::UInt32),
    ("Int64", VariableType::Int64),
    ("UInt64", VariableType::UInt64),
    ("Boolean", VariableType::Boolean),
    ("String", VariableType::String),
    ("Binary", VariableType::Binary),
    ("Enumeration", VariableType::Enumeration),
    ("Clock", VariableType::Clock),
];

/// What the schema allows but is questionable, each at its line: the file loads, and these are
/// logged. At most [`MAX_WARNINGS`] are kept, each cut at [`MAX_WARNING`] characters: a hostile
/// file can have one per token of an attribute, each quoting a long name.
pub(super) struct Warnings {
    list: Vec<Fail>,
}

/// The most warnings kept.
const MAX_WARNINGS: usize = 1000;

/// The longest warning kept, in characters.
const MAX_WARNING: usize = 1000;

impl Warnings {
    fn new() -> Warnings {
        Warnings { list: Vec::new() }
    }

    /// Keep `warning` unless there are enough already.
    fn push(&mut self, mut warning: Fail) {
        if self.is_full() {
            return;
        }
        if let Some((cut, _)) = warning.message.char_indices().nth(MAX_WARNING) {
            warning.message.truncate(cut);
            warning.message.push_str("...");
        }
        self.list.push(warning);
    }

    /// Whether no further warning is kept (loops over tokens stop making them).
    fn is_full(&self) -> bool {
        self.list.len() >= MAX_WARNINGS
    }

    /// The warnings, with a note when some were not kept.
    pub(super) fn into_list(mut self) -> Vec<Fail> {
        if let Some(line) = self
            .is_full()
            .then(|| self.list.last().map(|w| w.line))
            .flatten()
        {
            self.list.push(Fail::new(
                line,
                format!("further warnings are not shown after {MAX_WARNINGS}; fix these first"),
            ));
        }
        self.list
    }
}

/// The most event indicators an FMI 2 model description may declare.
const MAX_EVENT_INDICATORS: usize = 10_000_000;

/// Parse the text of a `modelDescription.xml`; also returns the warnings.
pub(super) fn parse(xml: &str) -> R<(ModelDescription, Warnings)> {
    let mut w = Warnings::new();
    let root = parse_tree(xml)?;
    if root.name != "fmiModelDescription" {
        return Err(Fail::new(
            root.line,
            format!(
                "the root element is <{}>, expected <fmiModelDescription>",
                root.name
            ),
        ));
    }
    let label = "fmiModelDescription";
    let version_string = req(&root, label, "fmiVersion")?.to_string();
    let version = fmi_version(&root, &version_string)?;
    let model_name = req(&root, label, "modelName")?;
    let token_attr = match version {
        FmiVersion::Fmi2 => "guid",
        FmiVersion::Fmi3 => "instantiationToken",
    };
    let instantiation_token = req(&root, label, token_attr)?.to_string();

    let co_simulation = root
        .child("CoSimulation")
        .map(|e| co_simulation(e, version))
        .transpose()?;
    let mut identifier = |label: &str, consequence: &str| -> R<Option<String>> {
        let Some(e) = root.child(label) else {
            return Ok(None);
        };
        let id = named(e, label, "modelIdentifier", consequence, &mut w)?;
        Ok(Some(id.to_string()))
    };
    let model_exchange = root
        .child("ModelExchange")
        .map(|e| model_exchange(e, version))
        .transpose()?
        .flatten();
    let model_exchange_identifier = identifier(
        "ModelExchange",
        "it names the Model Exchange binary, so that interface cannot be used",
    )?;
    let scheduled_execution_identifier = identifier(
        "ScheduledExecution",
        "it names the Scheduled Execution binary, so that interface cannot be used",
    )?;
    let scheduled_execution = root
        .child("ScheduledExecution")
        .map(scheduled_execution)
        .transpose()?
        .flatten();

    let units = match root.child("UnitDefinitions") {
        Some(e) => units(e, &mut w)?,
        None => Vec::new(),
    };
    let (type_definitions, type_elements) = match root.child("TypeDefinitions") {
        Some(e) => type_definitions(e, version, &mut w)?,
        None => (Vec::new(), HashMap::new()),
    };
    let log_categories = match root.child("LogCategories") {
        Some(e) => log_categories(e, &mut w)?,
        None => Vec::new(),
    };
    let default_experiment = root
        .child("DefaultExperiment")
        .map(default_experiment)
        .transpose()?;

    let types = Types {
        definitions: type_definitions
            .iter()
            .map(|t| (t.name.as_str(), t))
            .collect(),
        elements: &type_elements,
    };
    let (variables, by_vr) = match root.child("ModelVariables") {
        Some(e) => model_variables(e, version, &types, &mut w)?,
        None => (Vec::new(), HashMap::new()),
    };
    let refs = Refs {
        version,
        count: variables.len(),
        by_vr: &by_vr,
    };
    let model_structure = match root.child("ModelStructure") {
        Some(e) => model_structure(e, &refs, &mut w)?,
        None => ModelStructure::default(),
    };

    let number_of_event_indicators = match version {
        FmiVersion::Fmi2 => {
            let n: usize = opt_parse(
                &root,
                label,
                "numberOfEventIndicators",
                "a non-negative integer",
            )?
            .unwrap_or(0);
            // Buffers of this size are allocated per instance: refuse what no model has.
            if n > MAX_EVENT_INDICATORS {
                return Err(bad(
                    &root,
                    label,
                    "numberOfEventIndicators",
                    &n.to_string(),
                    &format!("is more than {MAX_EVENT_INDICATORS}, which cosimo accepts"),
                ));
            }
            n
        }
        FmiVersion::Fmi3 => model_structure.event_indicators.len(),
    };
    let description = ModelDescription {
        number_of_event_indicators,
        fmi_version: version,
        fmi_version_string: version_string,
        model_name: model_name.to_string(),
        instantiation_token,
        description: opt_string(&root, "description"),
        author: opt_string(&root, "author"),
        version: opt_string(&root, "version"),
        copyright: opt_string(&root, "copyright"),
        license: opt_string(&root, "license"),
        generation_tool: opt_string(&root, "generationTool"),
        generation_date_and_time: opt_string(&root, "generationDateAndTime"),
        variable_naming_convention: opt_string(&root, "variableNamingConvention"),
        co_simulation,
        model_exchange_identifier,
        model_exchange,
        scheduled_execution_identifier,
        scheduled_execution,
        units,
        type_definitions,
        log_categories,
        default_experiment,
        variables,
        model_structure,
    };
    Ok((description, w))
}

fn fmi_version(root: &Element, v: &str) -> R<FmiVersion> {
    let t = v.trim();
    if t == "2.0" || t.starts_with("2.0.") {
        Ok(FmiVersion::Fmi2)
    } else if t == "3" || t.starts_with("3.") {
        Ok(FmiVersion::Fmi3)
    } else if t == "1" || t.starts_with("1.") {
        Err(Fail::new(
            root.line,
            format!(
                "fmiModelDescription: fmiVersion \"{v}\" is FMI 1.0, which is not supported \
                 (cosimo reads FMI 2.0 and 3.0 FMUs)"
            ),
        ))
    } else {
        Err(Fail::new(
            root.line,
            format!(
                "fmiModelDescription: attribute \"fmiVersion\" = \"{v}\" is not a supported FMI \
                 version (expected \"2.0\" or \"3.0\")"
            ),
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Attribute helpers

fn req<'a>(e: &'a Element, label: &str, name: &str) -> R<&'a str> {
    e.attr(name)
        .ok_or_else(|| Fail::new(e.line, format!("{label}: missing attribute \"{name}\"")))
}

/// Attribute `name` of `e`, which the schema requires as an `xs:normalizedString`: an empty value
/// is allowed there, so it is kept, with a warning that says what it costs (`consequence`).
fn named<'a>(
    e: &'a Element,
    label: &str,
    name: &str,
    consequence: &str,
    w: &mut Warnings,
) -> R<&'a str> {
    let v = req(e, label, name)?;
    if v.trim().is_empty() {
        w.push(Fail::new(
            e.line,
            format!(
                "{label}: attribute \"{name}\" is empty (the FMI schema allows it); {consequence}"
            ),
        ));
    }
    Ok(v)
}

fn opt_string(e: &Element, name: &str) -> Option<String> {
    e.attr(name).map(str::to_string)
}

fn bad(e: &Element, label: &str, name: &str, value: &str, tail: &str) -> Fail {
    Fail::new(
        e.line,
        format!("{label}: attribute \"{name}\" = \"{value}\" {tail}"),
    )
}

/// An error about one item of a space-separated list attribute.
fn bad_item(line: usize, label: &str, name: &str, value: &str, item: &str, tail: &str) -> Fail {
    let message = if value.trim() == item {
        format!("{label}: attribute \"{name}\" = \"{value}\" {tail}")
    } else {
        format!("{label}: attribute \"{name}\" = \"{value}\": \"{item}\" {tail}")
    };
    Fail::new(line, message)
}

fn opt_parse<T: FromStr>(e: &Element, label: &str, name: &str, what: &str) -> R<Option<T>> {
    match e.attr(name) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse::<T>()
            .map(Some)
            .map_err(|_| bad(e, label, name, v, &format!("is not {what}"))),
    }
}

fn req_parse<T: FromStr>(e: &Element, label: &str, name: &str, what: &str) -> R<T> {
    let v = req(e, label, name)?;
    v.trim()
        .parse::<T>()
        .map_err(|_| bad(e, label, name, v, &format!("is not {what}")))
}

fn opt_f64(e: &Element, label: &str, name: &str) -> R<Option<f64>> {
    opt_parse(e, label, name, "a number")
}

fn parse_bool(s: &str) -> Option<bool> {
    match s.trim() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

fn opt_bool(e: &Element, label: &str, name: &str) -> R<Option<bool>> {
    match e.attr(name) {
        None => Ok(None),
        Some(v) => parse_bool(v)
            .map(Some)
            .ok_or_else(|| bad(e, label, name, v, "is not a boolean (true or false)")),
    }
}

fn flag(e: &Element, label: &str, name: &str) -> R<bool> {
    Ok(opt_bool(e, label, name)?.unwrap_or(false))
}

/// A flag spelled `primary` in this version and `alternate` in the other one.
fn flag2(e: &Element, label: &str, primary: &str, alternate: &str) -> R<bool> {
    if e.attr(primary).is_some() {
        flag(e, label, primary)
    } else {
        flag(e, label, alternate)
    }
}

fn opt_enum<T: Copy>(e: &Element, label: &str, name: &str, table: &[(&str, T)]) -> R<Option<T>> {
    match e.attr(name) {
        None => Ok(None),
        Some(v) => match table.iter().find(|(k, _)| *k == v.trim()) {
            Some((_, t)) => Ok(Some(*t)),
            None => {
                let names: Vec<&str> = table.iter().map(|(k, _)| *k).collect();
                Err(bad(
                    e,
                    label,
                    name,
                    v,
                    &format!("is not one of {}", names.join(", ")),
                ))
            }
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Values

/// What is wrong with one item of a value list: (the item, "is not ...").
type ValueError = (String, String);

fn int_range(vt: VariableType) -> Option<(i128, i128)> {
    use VariableType::*;
    Some(match vt {
        Int8 => (i8::MIN.into(), i8::MAX.into()),
        UInt8 => (0, u8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        UInt16 => (0, u16::MAX.into()),
        Int32 => (i32::MIN.into(), i32::MAX.into()),
        UInt32 => (0, u32::MAX.into()),
        Int64 | Enumeration => (i64::MIN.into(), i64::MAX.into()),
        UInt64 => (0, u64::MAX.into()),
        _ => return None,
    })
}

fn is_unsigned(vt: VariableType) -> bool {
    use VariableType::*;
    matches!(vt, UInt8 | UInt16 | UInt32 | UInt64)
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// Parse a (space-separated, for arrays) value of type `vt` as written in `start`, `min`, `max`.
/// A String value is the whole text. Clocks have no values: `None`.
fn parse_values(
    vt: VariableType,
    version: FmiVersion,
    text: &str,
) -> Result<Option<StartValue>, ValueError> {
    use VariableType::*;
    let items = text.split_whitespace();
    let value = match vt {
        Float32 | Float64 => StartValue::Float(
            items
                .map(|t| {
                    t.parse::<f64>()
                        .map_err(|_| (t.to_string(), "is not a number".to_string()))
                })
                .collect::<Result<_, _>>()?,
        ),
        Boolean => StartValue::Bool(
            items
                .map(|t| {
                    parse_bool(t).ok_or_else(|| {
                        (
                            t.to_string(),
                            "is not a boolean (true or false)".to_string(),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
        String => StartValue::String(vec![text.to_string()]),
        Binary => StartValue::Binary(
            items
                .map(|t| {
                    parse_hex(t).ok_or_else(|| {
                        (t.to_string(), "is not hexadecimal binary data".to_string())
                    })
                })
                .collect::<Result<_, _>>()?,
        ),
        Clock => return Ok(None),
        _ => {
            let (lo, hi) = int_range(vt).unwrap_or((i64::MIN.into(), i64::MAX.into()));
            let mut ints = Vec::new();
            for t in items {
                let n: i128 = t
                    .parse()
                    .map_err(|_| (t.to_string(), "is not an integer".to_string()))?;
                if n < lo || n > hi {
                    return Err((
                        t.to_string(),
                        format!(
                            "is out of range for {} ({lo} to {hi})",
                            vt.fmi_name(version)
                        ),
                    ));
                }
                ints.push(n);
            }
            if is_unsigned(vt) {
                StartValue::UInt(ints.iter().map(|&n| n as u64).collect())
            } else {
                StartValue::Int(ints.iter().map(|&n| n as i64).collect())
            }
        }
    };
    Ok(Some(value))
}

/// Parse attribute `name` of `e` as values of type `vt`.
fn opt_values(
    e: &Element,
    label: &str,
    name: &str,
    vt: VariableType,
    version: FmiVersion,
) -> R<Option<StartValue>> {
    match e.attr(name) {
        None => Ok(None),
        Some(v) => parse_values(vt, version, v)
            .map_err(|(item, tail)| bad_item(e.line, label, name, v, &item, &tail)),
    }
}

/// `min` / `max`: kept as written, checked to be a value of the type.
fn opt_bound(
    e: &Element,
    label: &str,
    name: &str,
    vt: VariableType,
    version: FmiVersion,
) -> R<Option<String>> {
    if matches!(
        vt,
        VariableType::String | VariableType::Binary | VariableType::Clock
    ) {
        return Ok(opt_string(e, name));
    }
    opt_values(e, label, name, vt, version)?;
    Ok(opt_string(e, name))
}

// ---------------------------------------------------------------------------------------------
// Interfaces, units, types, categories, experiment

fn co_simulation(e: &Element, version: FmiVersion) -> R<CoSimulation> {
    let l = "CoSimulation";
    let (state, serialize, directional) = match version {
        FmiVersion::Fmi2 => (
            ["canGetAndSetFMUstate", "canGetAndSetFMUState"],
            ["canSerializeFMUstate", "canSerializeFMUState"],
            [
                "providesDirectionalDerivative",
                "providesDirectionalDerivatives",
            ],
        ),
        FmiVersion::Fmi3 => (
            ["canGetAndSetFMUState", "canGetAndSetFMUstate"],
            ["canSerializeFMUState", "canSerializeFMUstate"],
            [
                "providesDirectionalDerivatives",
                "providesDirectionalDerivative",
            ],
        ),
    };
    let model_identifier = req(e, l, "modelIdentifier")?;
    if model_identifier.trim().is_empty() {
        // The schema allows it, but the interface cosimo drives is then unusable.
        return Err(Fail::new(
            e.line,
            "CoSimulation: attribute \"modelIdentifier\" is empty; it names the FMU's shared \
             library (binaries/<platform>/<modelIdentifier> with .so, .dll or .dylib), without \
             which the Co-Simulation interface cannot be loaded",
        ));
    }
    Ok(CoSimulation {
        model_identifier: model_identifier.to_string(),
        needs_execution_tool: flag(e, l, "needsExecutionTool")?,
        can_handle_variable_communication_step_size: flag(
            e,
            l,
            "canHandleVariableCommunicationStepSize",
        )?,
        fixed_internal_step_size: opt_f64(e, l, "fixedInternalStepSize")?,
        can_interpolate_inputs: flag(e, l, "canInterpolateInputs")?,
        max_output_derivative_order: opt_parse(
            e,
            l,
            "maxOutputDerivativeOrder",
            "a non-negative integer",
        )?
        .unwrap_or(0),
        can_run_asynchronuously: flag(e, l, "canRunAsynchronuously")?,
        can_be_instantiated_only_once_per_process: flag(
            e,
            l,
            "canBeInstantiatedOnlyOncePerProcess",
        )?,
        can_not_use_memory_management_functions: flag(e, l, "canNotUseMemoryManagementFunctions")?,
        can_get_and_set_fmu_state: flag2(e, l, state[0], state[1])?,
        can_serialize_fmu_state: flag2(e, l, serialize[0], serialize[1])?,
        provides_directional_derivatives: flag2(e, l, directional[0], directional[1])?,
        provides_adjoint_derivatives: flag(e, l, "providesAdjointDerivatives")?,
        provides_per_element_dependencies: flag(e, l, "providesPerElementDependencies")?,
        provides_intermediate_update: flag(e, l, "providesIntermediateUpdate")?,
        might_return_early_from_do_step: flag(e, l, "mightReturnEarlyFromDoStep")?,
        can_return_early_after_intermediate_update: flag(
            e,
            l,
            "canReturnEarlyAfterIntermediateUpdate",
        )?,
        has_event_mode: flag(e, l, "hasEventMode")?,
        provides_evaluate_discrete_states: flag(e, l, "providesEvaluateDiscreteStates")?,
        recommended_intermediate_input_smoothness: opt_parse(
            e,
            l,
            "recommendedIntermediateInputSmoothness",
            "an integer",
        )?
        .unwrap_or(0),
        schedules_own_clocks: false,
    })
}

/// The `<ModelExchange>` element; `None` when its model identifier is empty (warned about
/// with the identifier).
/// The FMI 3 `<ScheduledExecution>` element (`None` when its model identifier is empty).
fn scheduled_execution(e: &Element) -> R<Option<ScheduledExecution>> {
    let l = "ScheduledExecution";
    let model_identifier = req(e, l, "modelIdentifier")?;
    if model_identifier.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(ScheduledExecution {
        model_identifier: model_identifier.to_string(),
        needs_execution_tool: flag(e, l, "needsExecutionTool")?,
        can_be_instantiated_only_once_per_process: flag(
            e,
            l,
            "canBeInstantiatedOnlyOncePerProcess",
        )?,
        can_get_and_set_fmu_state: flag(e, l, "canGetAndSetFMUState")?,
        can_serialize_fmu_state: flag(e, l, "canSerializeFMUState")?,
        provides_directional_derivatives: flag(e, l, "providesDirectionalDerivatives")?,
    }))
}

fn model_exchange(e: &Element, version: FmiVersion) -> R<Option<ModelExchange>> {
    let l = "ModelExchange";
    let model_identifier = req(e, l, "modelIdentifier")?;
    if model_identifier.trim().is_empty() {
        return Ok(None);
    }
    let (state, serialize, directional) = match version {
        FmiVersion::Fmi2 => (
            ["canGetAndSetFMUstate", "canGetAndSetFMUState"],
            ["canSerializeFMUstate", "canSerializeFMUState"],
            [
                "providesDirectionalDerivative",
                "providesDirectionalDerivatives",
            ],
        ),
        FmiVersion::Fmi3 => (
            ["canGetAndSetFMUState", "canGetAndSetFMUstate"],
            ["canSerializeFMUState", "canSerializeFMUstate"],
            [
                "providesDirectionalDerivatives",
                "providesDirectionalDerivative",
            ],
        ),
    };
    let needs_completed_integrator_step = match version {
        FmiVersion::Fmi2 => !flag(e, l, "completedIntegratorStepNotNeeded")?,
        FmiVersion::Fmi3 => flag(e, l, "needsCompletedIntegratorStep")?,
    };
    Ok(Some(ModelExchange {
        model_identifier: model_identifier.to_string(),
        needs_execution_tool: flag(e, l, "needsExecutionTool")?,
        needs_completed_integrator_step,
        can_be_instantiated_only_once_per_process: flag(
            e,
            l,
            "canBeInstantiatedOnlyOncePerProcess",
        )?,
        can_get_and_set_fmu_state: flag2(e, l, state[0], state[1])?,
        can_serialize_fmu_state: flag2(e, l, serialize[0], serialize[1])?,
        provides_directional_derivatives: flag2(e, l, directional[0], directional[1])?,
    }))
}

fn units(e: &Element, w: &mut Warnings) -> R<Vec<Unit>> {
    let mut units = Vec::new();
    for u in e.children_named("Unit") {
        let name = named(
            u,
            "Unit",
            "name",
            "variables can only refer to this unit with unit=\"\"",
            w,
        )?;
        let label = format!("Unit \"{name}\"");
        let base_unit = match u.child("BaseUnit") {
            None => None,
            Some(b) => {
                let bl = format!("BaseUnit of {label}");
                let exp =
                    |a: &str| -> R<i32> { Ok(opt_parse(b, &bl, a, "an integer")?.unwrap_or(0)) };
                Some(BaseUnit {
                    kg: exp("kg")?,
                    m: exp("m")?,
                    s: exp("s")?,
                    a: exp("A")?,
                    k: exp("K")?,
                    mol: exp("mol")?,
                    cd: exp("cd")?,
                    rad: exp("rad")?,
                    factor: opt_f64(b, &bl, "factor")?.unwrap_or(1.0),
                    offset: opt_f64(b, &bl, "offset")?.unwrap_or(0.0),
                })
            }
        };
        let mut display_units = Vec::new();
        for d in u.children_named("DisplayUnit") {
            let dname = named(
                d,
                &format!("DisplayUnit of {label}"),
                "name",
                "variables can only select this display unit with displayUnit=\"\"",
                w,
            )?;
            let dl = format!("DisplayUnit \"{dname}\" of {label}");
            display_units.push(DisplayUnit {
                name: dname.to_string(),
                factor: opt_f64(d, &dl, "factor")?.unwrap_or(1.0),
                offset: opt_f64(d, &dl, "offset")?.unwrap_or(0.0),
                inverse: flag(d, &dl, "inverse")?,
            });
        }
        units.push(Unit {
            name: name.to_string(),
            base_unit,
            display_units,
        });
    }
    Ok(units)
}

/// The type definitions and, by name, the element that carries each one's attributes.
type TypeDefs<'a> = (Vec<TypeDefinition>, HashMap<String, &'a Element>);

fn type_definitions<'a>(e: &'a Element, version: FmiVersion, w: &mut Warnings) -> R<TypeDefs<'a>> {
    let consequence = "variables can only declare this type with declaredType=\"\"";
    let mut defs = Vec::new();
    let mut elements = HashMap::new();
    match version {
        FmiVersion::Fmi2 => {
            for st in e.children_named("SimpleType") {
                let name = named(st, "SimpleType", "name", consequence, w)?;
                let label = format!("SimpleType \"{name}\"");
                let (te, vt) = fmi2_type_child(st).ok_or_else(|| {
                    Fail::new(
                        st.line,
                        format!(
                            "{label}: no type element (Real, Integer, Boolean, String or Enumeration)"
                        ),
                    )
                })?;
                let tlabel = format!("{label} ({})", te.name);
                defs.push(type_definition(
                    name,
                    opt_string(st, "description"),
                    vt,
                    te,
                    &tlabel,
                    version,
                    w,
                )?);
                elements.insert(name.to_string(), te);
            }
        }
        FmiVersion::Fmi3 => {
            for te in &e.children {
                let Some(vt) = te
                    .name
                    .strip_suffix("Type")
                    .and_then(|base| FMI3_TYPES.iter().find(|(n, _)| *n == base))
                    .map(|(_, vt)| *vt)
                else {
                    continue;
                };
                let name = named(te, &te.name, "name", consequence, w)?;
                let label = format!("{} \"{name}\"", te.name);
                defs.push(type_definition(
                    name,
                    opt_string(te, "description"),
                    vt,
                    te,
                    &label,
                    version,
                    w,
                )?);
                elements.insert(name.to_string(), te);
            }
        }
    }
    Ok((defs, elements))
}

fn fmi2_type_child(e: &Element) -> Option<(&Element, VariableType)> {
    e.children.iter().find_map(|c| {
        FMI2_TYPES
            .iter()
            .find(|(n, _)| *n == c.name)
            .map(|(_, vt)| (c, *vt))
    })
}

fn type_definition(
    name: &str,
    description: Option<String>,
    vt: VariableType,
    te: &Element,
    label: &str,
    version: FmiVersion,
    w: &mut Warnings,
) -> R<TypeDefinition> {
    let mut items = Vec::new();
    for item in te.children_named("Item") {
        let iname = named(
            item,
            &format!("Item of {label}"),
            "name",
            "the value is shown by number, and a start value can only name it by number",
            w,
        )?;
        let il = format!("Item \"{iname}\" of {label}");
        items.push(EnumerationItem {
            name: iname.to_string(),
            value: req_parse(item, &il, "value", "an integer")?,
            description: opt_string(item, "description"),
        });
    }
    let clock = if vt == VariableType::Clock {
        Some(clock_attributes(te, label, None)?)
    } else {
        None
    };
    Ok(TypeDefinition {
        name: name.to_string(),
        var_type: vt,
        description,
        quantity: opt_string(te, "quantity"),
        unit: opt_string(te, "unit"),
        display_unit: opt_string(te, "displayUnit"),
        min: opt_bound(te, label, "min", vt, version)?,
        max: opt_bound(te, label, "max", vt, version)?,
        nominal: opt_f64(te, label, "nominal")?,
        items,
        clock,
    })
}

/// Clock attributes of `e`, each taken from `fallback` (the declared type) when `e` lacks it.
fn clock_attributes(e: &Element, label: &str, fallback: Option<&Element>) -> R<ClockAttributes> {
    let mut attrs = fallback.map(|f| f.attrs.clone()).unwrap_or_default();
    attrs.extend(e.attrs.iter().cloned());
    attrs.reverse(); // the variable's own attributes are found first
    let m = Element {
        ns: (),
        name: e.name.clone(),
        attrs,
        line: e.line,
        children: Vec::new(),
    };
    let nn = "a non-negative integer";
    Ok(ClockAttributes {
        can_be_deactivated: flag(&m, label, "canBeDeactivated")?,
        priority: opt_parse(&m, label, "priority", nn)?,
        interval_variability: opt_string(&m, "intervalVariability"),
        interval_decimal: opt_f64(&m, label, "intervalDecimal")?,
        shift_decimal: opt_f64(&m, label, "shiftDecimal")?,
        supports_fraction: flag(&m, label, "supportsFraction")?,
        resolution: opt_parse(&m, label, "resolution", nn)?,
        interval_counter: opt_parse(&m, label, "intervalCounter", nn)?,
        shift_counter: opt_parse(&m, label, "shiftCounter", nn)?,
    })
}

fn log_categories(e: &Element, w: &mut Warnings) -> R<Vec<LogCategory>> {
    e.children_named("Category")
        .map(|c| {
            let consequence = "the category can only be selected for logging by the empty name";
            Ok(LogCategory {
                name: named(c, "Category", "name", consequence, w)?.to_string(),
                description: opt_string(c, "description"),
            })
        })
        .collect()
}

fn default_experiment(e: &Element) -> R<DefaultExperiment> {
    let l = "DefaultExperiment";
    Ok(DefaultExperiment {
        start_time: opt_f64(e, l, "startTime")?,
        stop_time: opt_f64(e, l, "stopTime")?,
        tolerance: opt_f64(e, l, "tolerance")?,
        step_size: opt_f64(e, l, "stepSize")?,
    })
}

// ---------------------------------------------------------------------------------------------
// Variables

/// The type definitions, for `declaredType` lookups.
struct Types<'a> {
    definitions: HashMap<&'a str, &'a TypeDefinition>,
    elements: &'a HashMap<String, &'a Element>,
}

/// What a variable refers to before all variables are known.
struct Pending<'a> {
    /// The element that carries the references (FMI 2: the type child).
    element: &'a Element,
    /// The name of that element in messages.
    label: String,
    /// Line of the variable element (for duplicate messages).
    line: usize,
}

const VR_WHAT: &str = "a value reference (an unsigned 32-bit integer)";

fn model_variables<'a>(
    e: &'a Element,
    version: FmiVersion,
    types: &Types<'_>,
    w: &mut Warnings,
) -> R<(Vec<Variable>, HashMap<ValueReference, usize>)> {
    let mut variables = Vec::new();
    let mut pending: Vec<Pending<'a>> = Vec::new();
    for child in &e.children {
        let parsed = match version {
            FmiVersion::Fmi2 if child.name == "ScalarVariable" => Some(fmi2_variable(child, w)?),
            FmiVersion::Fmi3 => match FMI3_TYPES.iter().find(|(n, _)| *n == child.name) {
                Some((_, vt)) => Some(fmi3_variable(child, *vt, types, w)?),
                None => None,
            },
            _ => None,
        };
        if let Some((mut v, p)) = parsed {
            inherit(&mut v, &p, types)?;
            variables.push(v);
            pending.push(p);
        }
    }

    // Unique names; FMI 3: unique value references.
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    let mut by_vr: HashMap<ValueReference, usize> = HashMap::new();
    for (i, v) in variables.iter().enumerate() {
        if let Some(&first) = by_name.get(v.name.as_str()) {
            return Err(Fail::new(
                pending[i].line,
                format!(
                    "{}: duplicate variable name (first declared on line {})",
                    variable_label(version, v),
                    pending[first].line
                ),
            ));
        }
        by_name.insert(&v.name, i);
        if version == FmiVersion::Fmi3 {
            if let Some(&first) = by_vr.get(&v.value_reference) {
                return Err(Fail::new(
                    pending[i].line,
                    format!(
                        "{}: valueReference {} is already used by \"{}\"",
                        variable_label(version, v),
                        v.value_reference,
                        variables[first].name
                    ),
                ));
            }
            by_vr.insert(v.value_reference, i);
        }
    }

    let refs = Refs {
        version,
        count: variables.len(),
        by_vr: &by_vr,
    };
    let mut resolved = Vec::with_capacity(variables.len());
    for p in &pending {
        let el = p.element;
        let derivative = match el.attr("derivative") {
            Some(v) => Some(refs.one(el.line, &p.label, "derivative", v)?),
            None => None,
        };
        let (previous, clocks) = match version {
            FmiVersion::Fmi2 => (None, Vec::new()),
            FmiVersion::Fmi3 => {
                let previous = match el.attr("previous") {
                    Some(v) => Some(refs.one(el.line, &p.label, "previous", v)?),
                    None => None,
                };
                let clocks = match el.attr("clocks") {
                    Some(v) => refs.list(el.line, &p.label, "clocks", v)?,
                    None => Vec::new(),
                };
                (previous, clocks)
            }
        };
        for d in el.children_named("Dimension") {
            if let Some(v) = d.attr("valueReference") {
                refs.one(
                    d.line,
                    &format!("Dimension of {}", p.label),
                    "valueReference",
                    v,
                )?;
            }
        }
        resolved.push((derivative, previous, clocks));
    }
    for (i, (derivative, previous, mut clocks)) in resolved.into_iter().enumerate() {
        // The schema types `clocks` as value references only: one naming a variable of another
        // type is kept out of the list (cosimo schedules no clocks), with a warning.
        clocks.retain(|&c| {
            let clock = variables[c].var_type == VariableType::Clock;
            if !clock && !w.is_full() {
                let p = &pending[i];
                w.push(Fail::new(
                    p.element.line,
                    format!(
                        "{}: attribute \"clocks\" refers to \"{}\", which is not a Clock; \
                         the reference is ignored",
                        p.label, variables[c].name
                    ),
                ));
            }
            clock
        });
        let v = &mut variables[i];
        v.derivative = derivative;
        v.previous = previous;
        v.clocks = clocks;
    }
    Ok((variables, by_vr))
}

fn variable_label(version: FmiVersion, v: &Variable) -> String {
    match version {
        FmiVersion::Fmi2 => format!("ScalarVariable \"{}\"", v.name),
        FmiVersion::Fmi3 => format!("{} \"{}\"", v.var_type.fmi_name(version), v.name),
    }
}

fn default_variability(vt: VariableType) -> Variability {
    if vt.is_float() {
        Variability::Continuous
    } else {
        Variability::Discrete
    }
}

/// What an empty variable name costs.
const EMPTY_VARIABLE_NAME: &str = "connections, start values, inputs and result columns name \
    variables, and this one has no name to give (both FMI naming conventions need at least one \
    character)";

fn fmi2_variable<'a>(sv: &'a Element, w: &mut Warnings) -> R<(Variable, Pending<'a>)> {
    let version = FmiVersion::Fmi2;
    let name = named(sv, "ScalarVariable", "name", EMPTY_VARIABLE_NAME, w)?;
    let label = format!("ScalarVariable \"{name}\"");
    let value_reference = req_parse(sv, &label, "valueReference", VR_WHAT)?;
    let (te, vt) = fmi2_type_child(sv).ok_or_else(|| {
        Fail::new(
            sv.line,
            format!("{label}: no type element (Real, Integer, Boolean, String or Enumeration)"),
        )
    })?;
    let tl = format!("{label} ({})", te.name);
    let start = match te.attr("start") {
        Some(s) if vt == VariableType::String => Some(StartValue::String(vec![s.to_string()])),
        _ => opt_values(te, &tl, "start", vt, version)?,
    };
    let variable = Variable {
        name: name.to_string(),
        value_reference,
        description: opt_string(sv, "description"),
        var_type: vt,
        causality: opt_enum(sv, &label, "causality", CAUSALITIES)?.unwrap_or(Causality::Local),
        variability: opt_enum(sv, &label, "variability", VARIABILITIES)?
            .unwrap_or_else(|| default_variability(vt)),
        initial: opt_enum(sv, &label, "initial", INITIALS)?,
        start,
        declared_type: opt_string(te, "declaredType"),
        quantity: opt_string(te, "quantity"),
        unit: opt_string(te, "unit"),
        display_unit: opt_string(te, "displayUnit"),
        min: opt_bound(te, &tl, "min", vt, version)?,
        max: opt_bound(te, &tl, "max", vt, version)?,
        nominal: opt_f64(te, &tl, "nominal")?,
        dimensions: Vec::new(),
        derivative: None,
        reinit: flag(te, &tl, "reinit")?,
        intermediate_update: false,
        previous: None,
        clocks: Vec::new(),
        can_handle_multiple_set_per_time_instant: opt_bool(
            sv,
            &label,
            "canHandleMultipleSetPerTimeInstant",
        )?,
        alias: opt_string(sv, "alias"),
        clock: None,
        aliases: Vec::new(),
    };
    Ok((
        variable,
        Pending {
            element: te,
            label: tl,
            line: sv.line,
        },
    ))
}

fn fmi3_variable<'a>(
    e: &'a Element,
    vt: VariableType,
    types: &Types<'_>,
    w: &mut Warnings,
) -> R<(Variable, Pending<'a>)> {
    let version = FmiVersion::Fmi3;
    let name = named(e, &e.name, "name", EMPTY_VARIABLE_NAME, w)?;
    let label = format!("{} \"{name}\"", e.name);
    let value_reference = req_parse(e, &label, "valueReference", VR_WHAT)?;

    let start_children: Vec<&Element> = e.children_named("Start").collect();
    let start = if matches!(vt, VariableType::String | VariableType::Binary)
        && !start_children.is_empty()
    {
        let sl = format!("Start of {label}");
        let mut strings = Vec::new();
        let mut binaries = Vec::new();
        for s in start_children {
            let value = req(s, &sl, "value")?;
            if vt == VariableType::String {
                strings.push(value.to_string());
            } else {
                binaries.push(parse_hex(value.trim()).ok_or_else(|| {
                    bad(s, &sl, "value", value, "is not hexadecimal binary data")
                })?);
            }
        }
        Some(if vt == VariableType::String {
            StartValue::String(strings)
        } else {
            StartValue::Binary(binaries)
        })
    } else {
        opt_values(e, &label, "start", vt, version)?
    };

    let mut dimensions = Vec::new();
    for d in e.children_named("Dimension") {
        let dl = format!("Dimension of {label}");
        let dim = Dimension {
            start: opt_parse(d, &dl, "start", "a non-negative integer")?,
            value_reference: opt_parse(d, &dl, "valueReference", VR_WHAT)?,
        };
        if dim.start.is_none() && dim.value_reference.is_none() {
            return Err(Fail::new(
                d.line,
                format!("{dl}: needs attribute \"start\" or \"valueReference\""),
            ));
        }
        dimensions.push(dim);
    }

    let clock = if vt == VariableType::Clock {
        let fallback = e
            .attr("declaredType")
            .and_then(|t| types.elements.get(t).copied());
        Some(clock_attributes(e, &label, fallback)?)
    } else {
        None
    };

    let variable = Variable {
        name: name.to_string(),
        value_reference,
        description: opt_string(e, "description"),
        var_type: vt,
        causality: opt_enum(e, &label, "causality", CAUSALITIES)?.unwrap_or(Causality::Local),
        variability: opt_enum(e, &label, "variability", VARIABILITIES)?
            .unwrap_or_else(|| default_variability(vt)),
        initial: opt_enum(e, &label, "initial", INITIALS)?,
        start,
        declared_type: opt_string(e, "declaredType"),
        quantity: opt_string(e, "quantity"),
        unit: opt_string(e, "unit"),
        display_unit: opt_string(e, "displayUnit"),
        min: opt_bound(e, &label, "min", vt, version)?,
        max: opt_bound(e, &label, "max", vt, version)?,
        nominal: opt_f64(e, &label, "nominal")?,
        dimensions,
        derivative: None,
        reinit: flag(e, &label, "reinit")?,
        intermediate_update: flag(e, &label, "intermediateUpdate")?,
        previous: None,
        clocks: Vec::new(),
        can_handle_multiple_set_per_time_instant: opt_bool(
            e,
            &label,
            "canHandleMultipleSetPerTimeInstant",
        )?,
        alias: None,
        clock,
        aliases: e
            .children_named("Alias")
            .map(|a| {
                Ok(super::model::Alias {
                    name: a
                        .attr("name")
                        .ok_or_else(|| {
                            Fail::new(
                                a.line,
                                format!("Alias of {label}: missing attribute \"name\""),
                            )
                        })?
                        .to_string(),
                    description: opt_string(a, "description"),
                    display_unit: opt_string(a, "displayUnit"),
                })
            })
            .collect::<std::result::Result<_, Fail>>()?,
    };
    Ok((
        variable,
        Pending {
            element: e,
            label,
            line: e.line,
        },
    ))
}

/// Fill what the variable leaves open from its `declaredType`.
fn inherit(v: &mut Variable, p: &Pending<'_>, types: &Types<'_>) -> R<()> {
    let Some(name) = v.declared_type.as_deref() else {
        return Ok(());
    };
    let Some(t) = types.definitions.get(name) else {
        return Err(bad(
            p.element,
            &p.label,
            "declaredType",
            name,
            "names no type in TypeDefinitions",
        ));
    };
    if v.quantity.is_none() {
        v.quantity = t.quantity.clone();
    }
    if v.unit.is_none() {
        v.unit = t.unit.clone();
    }
    if v.display_unit.is_none() {
        v.display_unit = t.display_unit.clone();
    }
    if v.min.is_none() {
        v.min = t.min.clone();
    }
    if v.max.is_none() {
        v.max = t.max.clone();
    }
    if v.nominal.is_none() {
        v.nominal = t.nominal;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// References and model structure

/// Resolves references to variables (FMI 2: 1-based indices, FMI 3: value references).
struct Refs<'a> {
    version: FmiVersion,
    count: usize,
    by_vr: &'a HashMap<ValueReference, usize>,
}

impl Refs<'_> {
    /// Resolve one reference token; Err carries "is not ..." for messages.
    fn resolve(&self, token: &str) -> Result<usize, String> {
        match self.version {
            FmiVersion::Fmi2 => match token.parse::<usize>() {
                Ok(i) if (1..=self.count).contains(&i) => Ok(i - 1),
                _ => Err(format!(
                    "is not the index of a ScalarVariable (1 to {})",
                    self.count
                )),
            },
            FmiVersion::Fmi3 => match token.parse::<ValueReference>() {
                Ok(vr) => self
                    .by_vr
                    .get(&vr)
                    .copied()
                    .ok_or_else(|| "is not the value reference of any variable".to_string()),
                Err(_) => Err(format!("is not {VR_WHAT}")),
            },
        }
    }

    fn one(&self, line: usize, label: &str, name: &str, value: &str) -> R<usize> {
        self.resolve(value.trim()).map_err(|tail| {
            Fail::new(
                line,
                format!("{label}: attribute \"{name}\" = \"{value}\" {tail}"),
            )
        })
    }

    fn list(&self, line: usize, label: &str, name: &str, value: &str) -> R<Vec<usize>> {
        value
            .split_whitespace()
            .map(|t| {
                self.resolve(t)
                    .map_err(|tail| bad_item(line, label, name, value, t, &tail))
            })
            .collect()
    }
}

fn model_structure(e: &Element, refs: &Refs<'_>, w: &mut Warnings) -> R<ModelStructure> {
    let mut ms = ModelStructure::default();
    match refs.version {
        FmiVersion::Fmi2 => {
            for (group, list) in [
                ("Outputs", &mut ms.outputs),
                ("Derivatives", &mut ms.continuous_state_derivatives),
                ("InitialUnknowns", &mut ms.initial_unknowns),
            ] {
                for g in e.children_named(group) {
                    for u in g.children_named("Unknown") {
                        let label = format!("Unknown in <{group}>");
                        list.push(unknown(u, &label, "index", refs, w)?);
                    }
                }
            }
        }
        FmiVersion::Fmi3 => {
            for u in &e.children {
                let list = match u.name.as_str() {
                    "Output" => &mut ms.outputs,
                    "ContinuousStateDerivative" => &mut ms.continuous_state_derivatives,
                    "ClockedState" => &mut ms.clocked_states,
                    "InitialUnknown" => &mut ms.initial_unknowns,
                    "EventIndicator" => &mut ms.event_indicators,
                    _ => continue,
                };
                list.push(unknown(u, &u.name, "valueReference", refs, w)?);
            }
        }
    }
    Ok(ms)
}

fn unknown(u: &Element, label: &str, key: &str, refs: &Refs<'_>, w: &mut Warnings) -> R<Unknown> {
    let value = req(u, label, key)?;
    let variable = refs.one(u.line, label, key, value)?;
    let label = format!("{label} ({key} {})", value.trim());
    let dependencies = match u.attr("dependencies") {
        Some(v) => Some(refs.list(u.line, &label, "dependencies", v)?),
        None => None,
    };
    let mut dependencies_kind = match u.attr("dependenciesKind") {
        None => None,
        Some(v) => {
            let mut kinds = Vec::new();
            for t in v.split_whitespace() {
                match DEPENDENCY_KINDS.iter().find(|(k, _)| *k == t) {
                    Some((_, kind)) => kinds.push(*kind),
                    None => {
                        let names: Vec<&str> = DEPENDENCY_KINDS.iter().map(|(k, _)| *k).collect();
                        return Err(bad_item(
                            u.line,
                            &label,
                            "dependenciesKind",
                            v,
                            t,
                            &format!("is not one of {}", names.join(", ")),
                        ));
                    }
                }
            }
            Some(kinds)
        }
    };
    if let Some(kinds) = &dependencies_kind {
        let deps = dependencies.as_ref().map_or(0, Vec::len);
        if kinds.len() != deps {
            // The schema cannot tie the two lists together; the dependencies stand without kinds.
            w.push(Fail::new(
                u.line,
                format!(
                    "{label}: attribute \"dependenciesKind\" lists {} kinds for {deps} \
                     dependencies; the kinds are ignored (each dependency counts as \
                     \"dependent\")",
                    kinds.len()
                ),
            ));
            dependencies_kind = None;
        }
    }
    Ok(Unknown {
        variable,
        dependencies,
        dependencies_kind,
    })
}
