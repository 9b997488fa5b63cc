//! What `cosimo inspect` shows: a model description as a human summary or as JSON (whose schema
//! is `schemas/inspect.schema.json`).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

use super::description::{
    Causality, CoSimulation, ModelDescription, StartValue, Variability, Variable,
};

/// The Co-Simulation capability flags as (FMI attribute name, value), in the standard's order.
pub fn capability_flags(cs: &CoSimulation, fmi3: bool) -> Vec<(&'static str, Value)> {
    let mut flags: Vec<(&'static str, Value)> = vec![
        ("needsExecutionTool", cs.needs_execution_tool.into()),
        (
            "canHandleVariableCommunicationStepSize",
            cs.can_handle_variable_communication_step_size.into(),
        ),
        (
            "canBeInstantiatedOnlyOncePerProcess",
            cs.can_be_instantiated_only_once_per_process.into(),
        ),
        (
            if fmi3 {
                "canGetAndSetFMUState"
            } else {
                "canGetAndSetFMUstate"
            },
            cs.can_get_and_set_fmu_state.into(),
        ),
        (
            if fmi3 {
                "canSerializeFMUState"
            } else {
                "canSerializeFMUstate"
            },
            cs.can_serialize_fmu_state.into(),
        ),
        (
            if fmi3 {
                "providesDirectionalDerivatives"
            } else {
                "providesDirectionalDerivative"
            },
            cs.provides_directional_derivatives.into(),
        ),
        (
            "maxOutputDerivativeOrder",
            cs.max_output_derivative_order.into(),
        ),
    ];
    if fmi3 {
        flags.extend([
            (
                "providesAdjointDerivatives",
                cs.provides_adjoint_derivatives.into(),
            ),
            (
                "providesPerElementDependencies",
                cs.provides_per_element_dependencies.into(),
            ),
            (
                "providesIntermediateUpdate",
                cs.provides_intermediate_update.into(),
            ),
            (
                "mightReturnEarlyFromDoStep",
                cs.might_return_early_from_do_step.into(),
            ),
            (
                "canReturnEarlyAfterIntermediateUpdate",
                cs.can_return_early_after_intermediate_update.into(),
            ),
            ("hasEventMode", cs.has_event_mode.into()),
            (
                "providesEvaluateDiscreteStates",
                cs.provides_evaluate_discrete_states.into(),
            ),
            (
                "recommendedIntermediateInputSmoothness",
                cs.recommended_intermediate_input_smoothness.into(),
            ),
        ]);
        if let Some(h) = cs.fixed_internal_step_size {
            flags.push(("fixedInternalStepSize", h.into()));
        }
    } else {
        flags.extend([
            ("canInterpolateInputs", cs.can_interpolate_inputs.into()),
            ("canRunAsynchronuously", cs.can_run_asynchronuously.into()),
            (
                "canNotUseMemoryManagementFunctions",
                cs.can_not_use_memory_management_functions.into(),
            ),
        ]);
    }
    flags
}

/// A start value as the text a user would type for `--start-value`.
pub fn start_text(start: &StartValue) -> String {
    fn join<T: ToString>(values: &[T]) -> String {
        values
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    }
    match start {
        StartValue::Float(v) => join(v),
        StartValue::Int(v) => join(v),
        StartValue::UInt(v) => join(v),
        StartValue::Bool(v) => join(v),
        StartValue::String(v) => v.join(" "),
        StartValue::Binary(v) => v
            .iter()
            .map(|bytes| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn causality_name(c: Causality) -> &'static str {
    match c {
        Causality::Parameter => "parameter",
        Causality::CalculatedParameter => "calculatedParameter",
        Causality::Input => "input",
        Causality::Output => "output",
        Causality::Local => "local",
        Causality::Independent => "independent",
        Causality::StructuralParameter => "structuralParameter",
    }
}

fn variability_name(v: Variability) -> &'static str {
    match v {
        Variability::Constant => "constant",
        Variability::Fixed => "fixed",
        Variability::Tunable => "tunable",
        Variability::Discrete => "discrete",
        Variability::Continuous => "continuous",
    }
}

fn type_text(md: &ModelDescription, v: &Variable) -> String {
    let mut text = v.var_type.fmi_name(md.fmi_version).to_string();
    if v.is_array() {
        let dims: Vec<String> = v
            .dimensions
            .iter()
            .map(|d| match (d.start, d.value_reference) {
                (Some(n), _) => n.to_string(),
                (None, Some(vr)) => format!("vr{vr}"),
                _ => "?".into(),
            })
            .collect();
        let _ = write!(text, "[{}]", dims.join(","));
    }
    text
}

/// The Model Exchange flags as the FMU's FMI version spells them.
fn model_exchange_flags(
    me: &super::description::ModelExchange,
    fmi3: bool,
) -> Vec<(&'static str, bool)> {
    if fmi3 {
        vec![
            ("needsExecutionTool", me.needs_execution_tool),
            (
                "needsCompletedIntegratorStep",
                me.needs_completed_integrator_step,
            ),
            (
                "canBeInstantiatedOnlyOncePerProcess",
                me.can_be_instantiated_only_once_per_process,
            ),
            ("canGetAndSetFMUState", me.can_get_and_set_fmu_state),
            ("canSerializeFMUState", me.can_serialize_fmu_state),
            (
                "providesDirectionalDerivatives",
                me.provides_directional_derivatives,
            ),
        ]
    } else {
        vec![
            ("needsExecutionTool", me.needs_execution_tool),
            (
                "completedIntegratorStepNotNeeded",
                !me.needs_completed_integrator_step,
            ),
            (
                "canBeInstantiatedOnlyOncePerProcess",
                me.can_be_instantiated_only_once_per_process,
            ),
            ("canGetAndSetFMUstate", me.can_get_and_set_fmu_state),
            ("canSerializeFMUstate", me.can_serialize_fmu_state),
            (
                "providesDirectionalDerivative",
                me.provides_directional_derivatives,
            ),
        ]
    }
}

/// The human summary printed by `cosimo inspect`, without the platforms line.
pub fn text(md: &ModelDescription, source: &Path) -> String {
    text_with_platforms(md, source, None)
}

/// The human summary printed by `cosimo inspect`; `platforms`: the folders under `binaries/`,
/// and `c-code` for sources ([`super::build::platforms`]).
pub fn text_with_platforms(
    md: &ModelDescription,
    source: &Path,
    platforms: Option<&[String]>,
) -> String {
    let mut out = String::new();
    let fmi3 = md.fmi_version == super::FmiVersion::Fmi3;
    let _ = writeln!(out, "{}", source.display());
    let _ = writeln!(out, "  Model name       {}", md.model_name);
    let _ = writeln!(out, "  FMI version      {}", md.fmi_version_string);
    if let Some(d) = &md.description {
        let _ = writeln!(out, "  Description      {d}");
    }
    let tool = match (&md.generation_tool, &md.generation_date_and_time) {
        (Some(t), Some(d)) => format!("{t} ({d})"),
        (Some(t), None) => t.clone(),
        (None, Some(d)) => format!("unknown ({d})"),
        (None, None) => "unknown".into(),
    };
    let _ = writeln!(out, "  Generation tool  {tool}");
    let mut interfaces = Vec::new();
    if let Some(cs) = &md.co_simulation {
        interfaces.push(format!("Co-Simulation ({})", cs.model_identifier));
    }
    if let Some(id) = &md.model_exchange_identifier {
        interfaces.push(format!("Model Exchange ({id})"));
    }
    if let Some(id) = &md.scheduled_execution_identifier {
        interfaces.push(format!("Scheduled Execution ({id})"));
    }
    let _ = writeln!(
        out,
        "  Interfaces       {}",
        if interfaces.is_empty() {
            "none".to_string()
        } else {
            interfaces.join(", ")
        }
    );
    if let Some(platforms) = platforms {
        let _ = writeln!(
            out,
            "  Platforms        {}",
            if platforms.is_empty() {
                "none (no binaries, no sources)".to_string()
            } else {
                platforms.join(", ")
            }
        );
    }
    if let Some(cs) = &md.co_simulation {
        let on: Vec<String> = capability_flags(cs, fmi3)
            .into_iter()
            .filter_map(|(name, value)| match value {
                Value::Bool(true) => Some(name.to_string()),
                Value::Number(n) if n.as_f64().unwrap_or(0.0) != 0.0 => Some(format!("{name}={n}")),
                _ => None,
            })
            .collect();
        let _ = writeln!(
            out,
            "  Capabilities     {}",
            if on.is_empty() {
                "none".to_string()
            } else {
                on.join(", ")
            }
        );
        let _ = writeln!(out, "  Input polynomials {}", input_polynomials(cs, fmi3));
    }
    if let Some(me) = &md.model_exchange {
        let on: Vec<&str> = model_exchange_flags(me, fmi3)
            .into_iter()
            .filter(|(_, value)| *value)
            .map(|(name, _)| name)
            .collect();
        let _ = writeln!(
            out,
            "  Model Exchange   {} continuous states, {} event indicators; {}",
            md.model_structure.continuous_state_derivatives.len(),
            md.number_of_event_indicators,
            if on.is_empty() {
                "no capabilities".to_string()
            } else {
                on.join(", ")
            }
        );
    }
    let fmt_opt = |x: Option<f64>| x.map_or("-".to_string(), |v| v.to_string());
    match &md.default_experiment {
        Some(de) => {
            let _ = writeln!(
                out,
                "  Default experiment  start {}, stop {}, step {}, tolerance {}",
                fmt_opt(de.start_time),
                fmt_opt(de.stop_time),
                fmt_opt(de.step_size),
                fmt_opt(de.tolerance)
            );
        }
        None => {
            let _ = writeln!(out, "  Default experiment  none");
        }
    }

    let _ = writeln!(out, "\n  Variables ({})", md.variables.len());
    let header = [
        "name",
        "causality",
        "variability",
        "type",
        "start",
        "unit",
        "description",
    ];
    let rows: Vec<[String; 7]> = md
        .variables
        .iter()
        .map(|v| {
            [
                v.name.clone(),
                causality_name(v.causality).into(),
                variability_name(v.variability).into(),
                type_text(md, v),
                v.start.as_ref().map_or(String::new(), start_text),
                v.unit.clone().unwrap_or_default(),
                v.description.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: &[&str]| {
        let mut text = String::from("   ");
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                text.push(' ');
                text.push_str(cell);
            } else {
                // Padded by hand: `{cell:<w$}` panics for widths past 65,535 (a long name).
                text.push(' ');
                text.push_str(cell);
                let padding = w.saturating_sub(cell.chars().count());
                text.extend(std::iter::repeat_n(' ', padding));
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(&header);
    for (row, v) in rows.iter().zip(&md.variables) {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&cells);
        // FMI 3 aliases: other names of the variable above, usable wherever a name is.
        for alias in &v.aliases {
            let described = alias
                .description
                .as_deref()
                .map_or(String::new(), |d| format!(" ({d})"));
            line(&[&format!("  alias {}{described}", alias.name)]);
        }
    }
    out
}

/// The machine-readable summary printed by `cosimo inspect --json`.
pub fn json(md: &ModelDescription, source: &Path) -> Value {
    let fmi3 = md.fmi_version == super::FmiVersion::Fmi3;
    let variables: Vec<Value> = md
        .variables
        .iter()
        .map(|v| {
            let mut entry = json!({
                "name": v.name,
                "valueReference": v.value_reference,
                "type": v.var_type.fmi_name(md.fmi_version),
                "causality": causality_name(v.causality),
                "variability": variability_name(v.variability),
            });
            let fields = [
                ("initial", v.initial.map(|i| json!(i))),
                ("start", v.start.as_ref().map(|s| json!(start_text(s)))),
                ("unit", v.unit.as_ref().map(|u| json!(u))),
                ("declaredType", v.declared_type.as_ref().map(|u| json!(u))),
                ("description", v.description.as_ref().map(|d| json!(d))),
                ("aliases", (!v.aliases.is_empty()).then(|| json!(v.aliases))),
                (
                    "dimensions",
                    v.is_array().then(|| {
                        json!(v
                            .dimensions
                            .iter()
                            .map(|d| json!({"start": d.start, "valueReference": d.value_reference}))
                            .collect::<Vec<_>>())
                    }),
                ),
            ];
            if let Value::Object(map) = &mut entry {
                for (key, value) in fields {
                    if let Some(value) = value {
                        map.insert(key.into(), value);
                    }
                }
            }
            entry
        })
        .collect();
    let capabilities: serde_json::Map<String, Value> = md
        .co_simulation
        .as_ref()
        .map(|cs| {
            capability_flags(cs, fmi3)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "source": source.display().to_string(),
        "fmiVersion": md.fmi_version_string,
        "modelName": md.model_name,
        "instantiationToken": md.instantiation_token,
        "description": md.description,
        "generationTool": md.generation_tool,
        "generationDateAndTime": md.generation_date_and_time,
        "coSimulation": md.co_simulation.as_ref().map(|cs| json!({
            "modelIdentifier": cs.model_identifier,
            "capabilities": capabilities,
        })),
        "modelExchange": md.model_exchange_identifier.as_ref().map(|id| {
            let capabilities: serde_json::Map<String, Value> = md
                .model_exchange
                .as_ref()
                .map(|me| {
                    model_exchange_flags(me, fmi3)
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), Value::Bool(v)))
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "modelIdentifier": id,
                "capabilities": capabilities,
                "continuousStates": md.model_structure.continuous_state_derivatives.len(),
                "eventIndicators": md.number_of_event_indicators,
            })
        }),
        "defaultExperiment": md.default_experiment.as_ref().map(|de| json!({
            "startTime": de.start_time,
            "stopTime": de.stop_time,
            "stepSize": de.step_size,
            "tolerance": de.tolerance,
        })),
        "logCategories": md.log_categories.iter().map(|c| json!({"name": c.name, "description": c.description})).collect::<Vec<_>>(),
        "units": md.units.iter().map(|u| json!(u.name)).collect::<Vec<_>>(),
        "variables": variables,
    })
}

/// How the master hands this FMU an input polynomial of degree k, and the coupling order it
/// can reach with it.
pub fn input_polynomials(cs: &super::description::CoSimulation, fmi3: bool) -> &'static str {
    if !fmi3 && cs.can_interpolate_inputs {
        "input derivatives (fmi2SetRealInputDerivatives): order k + 1"
    } else if fmi3 && cs.provides_intermediate_update {
        "intermediate update: order k + 1"
    } else if cs.can_handle_variable_communication_step_size {
        "sampled at the midpoints of 8 sub-steps: order k + 1 while the sampling error \
         (O(H^2 / 64)) stays below the coupling error, at most 2 for small steps"
    } else {
        "held at the step's midpoint value (no variable step size): order 2 at most"
    }
}
