//! One case of `cosimo check`: simulate the model (an FMU, a system file or an SSP) with the
//! case's settings on the one run loop and compare the result with the reference.

use std::path::Path;
use std::sync::Arc;

use super::compare::{
    compare, CompareOptions, Comparison, SignalKind, SignalTable, ToleranceSettings,
};
use super::reference::{ls_reference, Case, ModelKind};
use super::CsvWriter;
use crate::fmu::description::{Causality, VariableType};
use crate::fmu::values::{check_start_value_allowed, find_variable, parse_value};
use crate::fmu::worker::WorkerOptions;
use crate::fmu::Fmu;
use crate::master::execution::{Execution, RunOptions};
use crate::master::run::run;
use crate::settings::{Labels, Overrides};
use crate::system::ssp::SspPackage;
use crate::system::{config, Endpoint, System};
use crate::{Error, Result};

/// What the command line sets for every case, on top of each case's own settings.
#[derive(Debug, Clone, Default)]
pub struct CaseOptions {
    pub start: Option<f64>,
    pub stop: Option<f64>,
    pub step: Option<f64>,
    pub output_interval: Option<f64>,
    /// Tolerances that win over the case's.
    pub tolerance: ToleranceSettings,
    /// Keep the compared traces (for plots).
    pub keep_traces: bool,
    /// Host every FMU in a worker process: a case whose FMU crashes or hangs fails alone.
    pub isolate: bool,
    /// How worker processes are started and watched (a call timeout isolates every FMU).
    pub worker: WorkerOptions,
}

/// Simulate `case` into `result_file` and compare the result with its reference. When the
/// reference comes from the FMU itself (FMI-LS-REF), `reference_used` says which file it was.
pub fn simulate_and_compare(
    case: &Case,
    options: &CaseOptions,
    result_file: &Path,
    reference_used: &mut Option<String>,
) -> Result<Comparison> {
    let settings = &case.settings;
    let experiment = &settings.experiment;
    let overrides = Overrides {
        start: options.start.or(experiment.start_time),
        stop: options.stop.or(experiment.stop_time),
        step: options.step.or(experiment.step_size),
        output_interval: options.output_interval.or(experiment.output_interval),
        tolerance: experiment.tolerance,
        ..Overrides::default()
    };
    let compare_options = CompareOptions {
        tolerance: options.tolerance.over(&settings.tolerance),
        signals: settings.signals.clone(),
        keep_traces: options.keep_traces,
    };
    let no_reference = || {
        Error::Usage(format!(
            "{}: no reference results; give --reference, put reference.csv (or *_ref.csv) in \
             the case folder, or ship them in the FMU (FMI-LS-REF)",
            case.model.display()
        ))
    };

    match case.kind {
        ModelKind::Fmu => {
            let fmu = Arc::new(Fmu::open(&case.model)?);
            let md = fmu.description().clone();
            let mut input = case.input.clone();
            let reference_path = match &case.reference {
                Some(path) => path.clone(),
                None => {
                    let own = ls_reference(fmu.archive().root())?.ok_or_else(no_reference)?;
                    if input.is_none() {
                        input = own.inputs.first().cloned();
                    }
                    let path = own.results.first().cloned().ok_or_else(|| {
                        Error::Usage(format!(
                            "{}: the FMU's FMI-LS-REF manifest lists no file with role=\"result\"",
                            case.model.display()
                        ))
                    })?;
                    *reference_used = Some(format!(
                        "{} (FMI-LS-REF: {})",
                        case.model.display(),
                        path.strip_prefix(fmu.archive().root())
                            .unwrap_or(&path)
                            .display()
                    ));
                    path
                }
            };
            let reference = SignalTable::read(&reference_path)?;

            let mut start_values = Vec::new();
            for (name, value) in &settings.start_values {
                let variable = find_variable(&md, name, "startValues")?;
                check_start_value_allowed(&md, variable)?;
                let text = json_value_text(value);
                parse_value(&md, variable, &text)?;
                start_values.push((variable.name.clone(), text));
            }
            // Every output, and whatever else the reference names.
            let mut record: Vec<String> = md
                .variables
                .iter()
                .filter(|v| v.causality == Causality::Output)
                .map(|v| v.name.clone())
                .collect();
            for column in reference.column_names() {
                if md.variable(column).is_some() && !record.iter().any(|r| r == column) {
                    record.push(column.to_string());
                }
            }
            let system = System::single_fmu(&case.model, &md, start_values, &overrides)?;
            let run_options = RunOptions {
                record,
                bare_names: true,
                inputs: input
                    .as_deref()
                    .map(|p| crate::fs_checks::read_table(p, "an input file"))
                    .transpose()?
                    .map(Arc::new),
                opened: vec![fmu],
                isolate: options.isolate,
                worker: options.worker.clone(),
                ..RunOptions::default()
            };
            simulate(&system, &run_options, result_file)?;
            let result = SignalTable::read(result_file)?;
            Ok(compare(&reference, &result, &compare_options, &|column| {
                md.variable(column).map(|v| kind_of_type(v.var_type))
            }))
        }
        ModelKind::System | ModelKind::Ssp => {
            let reference = SignalTable::read(case.reference.as_ref().ok_or_else(no_reference)?)?;
            if case.input.is_some() {
                return Err(Error::Usage(format!(
                    "{}: input files drive single FMUs; a system's inputs come from its \
                     connections and parameters",
                    case.model.display()
                )));
            }
            // An SSP's package holds its extracted FMUs: keep it until the run ends.
            let mut _package = None;
            let (mut system, labels) = if case.kind == ModelKind::Ssp {
                crate::fs_checks::check_regular(&case.model, "an SSP")?;
                let package = SspPackage::open(&case.model)?;
                let imported = package.import(None)?;
                _package = Some(package);
                (imported.system, Labels::SSP)
            } else {
                (config::from_file(&case.model)?, Labels::SYSTEM_FILE)
            };
            let model = case.model.display().to_string();
            let in_model = |e: Error| match e {
                Error::Usage(message) => Error::Usage(format!("{model}: {message}")),
                other => other,
            };
            system.experiment = overrides
                .apply(&system.experiment, labels)
                .map_err(|m| in_model(Error::Usage(m)))?;
            set_start_values(&mut system, &settings.start_values)?;
            let run_options = RunOptions {
                isolate: options.isolate,
                worker: options.worker.clone(),
                ..RunOptions::default()
            };
            let descriptions = simulate(&system, &run_options, result_file).map_err(in_model)?;
            let result = SignalTable::read(result_file)?;
            Ok(compare(&reference, &result, &compare_options, &|column| {
                descriptions.iter().find_map(|(prefix, md)| {
                    let name = column.strip_prefix(prefix.as_str())?;
                    md.variable(name).map(|v| kind_of_type(v.var_type))
                })
            }))
        }
    }
}

type Descriptions = Vec<(String, Arc<crate::fmu::ModelDescription>)>;

/// Run `system` into `result_file`; the column prefix and model description per component.
fn simulate(system: &System, options: &RunOptions, result_file: &Path) -> Result<Descriptions> {
    let mut execution = Execution::instantiate(system, options)?;
    let mut writer = CsvWriter::create(result_file, &execution.column_names())?;
    run(&mut execution, &mut [&mut writer])?;
    Ok(execution
        .resolved
        .components
        .iter()
        .map(|c| (format!("{}.", c.name), c.description.clone()))
        .collect())
}

/// The case's `startValues` (`component.NAME`) on top of the system's.
fn set_start_values(
    system: &mut System,
    values: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<()> {
    for (name, value) in values {
        let endpoint = Endpoint::parse(name).ok_or_else(|| {
            Error::Usage(format!(
                "startValues \"{name}\": in a system, name the component: component.NAME"
            ))
        })?;
        system
            .set_start_value(&endpoint, json_value_text(value))
            .map_err(|m| Error::Usage(format!("startValues \"{name}\": {m}")))?;
    }
    Ok(())
}

fn kind_of_type(t: VariableType) -> SignalKind {
    if t.is_float() {
        SignalKind::Continuous
    } else {
        SignalKind::Discrete
    }
}

/// A JSON start value as the text `parse_value` reads (arrays: space-separated elements).
pub fn json_value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(json_value_text)
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}
