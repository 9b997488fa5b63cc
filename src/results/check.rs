//! One case of `cosimo check`: simulate the model (an FMU, a system file or an SSP) with the
//! case's settings on the one run loop and compare the result with the reference.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::compare::{
    compare, CompareOptions, Comparison, SignalKind, SignalTable, ToleranceSettings,
};
use super::reference::{ls_reference, Case, ModelKind};
use super::report::{CaseReport, CheckReport};
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

/// How a variable of this type is compared: Float continuously, anything else exactly.
pub(crate) fn kind_of_type(t: VariableType) -> SignalKind {
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

/// What `cosimo check` is asked for: the targets and what applies on top of every case.
#[derive(Debug, Clone, Default)]
pub struct CheckRequest {
    /// Models (FMU, system file, SSP), case folders or folders of case folders.
    pub targets: Vec<PathBuf>,
    /// Reference CSV for one model given directly.
    pub reference: Option<PathBuf>,
    /// Input CSV for one model given directly.
    pub input_file: Option<PathBuf>,
    /// Settings (check.json format) for one model given directly.
    pub settings: Option<PathBuf>,
    /// Tolerances that win over every case's.
    pub tolerance: ToleranceSettings,
    pub start: Option<f64>,
    pub stop: Option<f64>,
    pub step: Option<f64>,
    pub output_interval: Option<f64>,
    /// Write a PNG plot of every failing signal into this folder.
    pub plot: Option<PathBuf>,
    /// Keep the simulation results in this folder (default: a temporary folder).
    pub results: Option<PathBuf>,
    /// Host every FMU in a worker process.
    pub isolate: bool,
    /// How worker processes are started and watched.
    pub worker: WorkerOptions,
}

/// Collect the cases of `request`, run and compare each: the report of all of them (a case
/// that fails to run is a case of the report). `warn` hears what could not be plotted.
pub fn check_targets(request: &CheckRequest, warn: &mut dyn FnMut(&str)) -> Result<CheckReport> {
    let args = request;
    use super::reference::{discover, CheckSettings};

    let mut cases: Vec<Case> = Vec::new();
    for target in &args.targets {
        if target.is_dir() && ModelKind::of(target).is_none() {
            cases.extend(discover(target)?);
        } else {
            if !target.exists() {
                return Err(Error::Usage(format!("{}: no such file", target.display())));
            }
            let mut case = Case::for_model(target)?;
            if let Some(settings) = &args.settings {
                case.settings = CheckSettings::read(settings)?;
                case.reference = case.settings.reference.clone();
                case.input = case.settings.input.clone();
            }
            cases.push(case);
        }
    }
    let direct = args.reference.is_some() || args.input_file.is_some() || args.settings.is_some();
    if direct
        && (cases.len() != 1
            || args
                .targets
                .iter()
                .any(|t| t.is_dir() && ModelKind::of(t).is_none()))
    {
        return Err(Error::Usage(
            "--reference, --input-file and --settings apply to one model given directly, not to \
             case folders (put them in the case folder or its check.json)"
                .into(),
        ));
    }
    if let Some(case) = cases.first_mut().filter(|_| direct) {
        if args.reference.is_some() {
            case.reference = args.reference.clone();
        }
        if args.input_file.is_some() {
            case.input = args.input_file.clone();
        }
    }
    let cli_tolerance = args.tolerance.clone();
    cli_tolerance.validate("the command line")?;

    let temporary;
    let work = match &args.results {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            dir.clone()
        }
        None => {
            temporary =
                tempfile::tempdir().map_err(|e| Error::io(Path::new("temporary folder"), e))?;
            temporary.path().to_path_buf()
        }
    };
    if let Some(dir) = &args.plot {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }

    let worker = args.worker.clone();
    if worker.memory_limit.is_some() && !args.isolate && worker.call_timeout.is_none() {
        return Err(Error::Usage(
            "--worker-memory limits worker processes, but no FMU runs in one: add --isolate".into(),
        ));
    }
    let mut reports = Vec::new();
    for case in &cases {
        let mut report = check_case(case, args, &cli_tolerance, &worker, &work);
        if let Some(dir) = &args.plot {
            plot_failures(dir, &mut report, warn);
        }
        reports.push(report);
    }
    Ok(CheckReport::new(reports))
}

/// Run and compare one case; errors become an `error` case.
fn check_case(
    case: &Case,
    args: &CheckRequest,
    cli_tolerance: &ToleranceSettings,
    worker: &WorkerOptions,
    work: &Path,
) -> CaseReport {
    let started = std::time::Instant::now();
    let mut reference_used = case.reference.as_ref().map(|p| p.display().to_string());
    let result_file = work.join(format!("{}_out.csv", safe_name(&case.name)));
    let options = CaseOptions {
        start: args.start,
        stop: args.stop,
        step: args.step,
        output_interval: args.output_interval,
        tolerance: cli_tolerance.clone(),
        keep_traces: args.plot.is_some(),
        isolate: args.isolate,
        worker: worker.clone(),
    };
    let simulated = simulate_and_compare(case, &options, &result_file, &mut reference_used);
    match simulated {
        Ok(comparison) => {
            let mut report = CaseReport::compared(
                case.name.clone(),
                case.model.display().to_string(),
                reference_used.unwrap_or_default(),
                comparison,
                started.elapsed().as_secs_f64(),
            );
            if args.results.is_some() {
                report.result_file = Some(result_file.display().to_string());
            }
            report
        }
        Err(error) => CaseReport::failed_to_run(
            case.name.clone(),
            case.model.display().to_string(),
            reference_used,
            error.to_string(),
            error.exit_code(),
            started.elapsed().as_secs_f64(),
        ),
    }
}

fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Plot every failing signal of a case that kept its trace; a plot that fails is noted.
fn plot_failures(dir: &Path, report: &mut CaseReport, warn: &mut dyn FnMut(&str)) {
    use super::plot;
    let case_dir = dir.join(safe_name(&report.name));
    let failing: Vec<usize> = (0..report.signals.len())
        .filter(|&i| {
            !report.signals[i].comparison.passed && report.signals[i].comparison.trace.is_some()
        })
        .collect();
    if failing.is_empty() {
        return;
    }
    if let Err(e) = std::fs::create_dir_all(&case_dir) {
        warn(&format!("{}: {e}", case_dir.display()));
        return;
    }
    for i in failing {
        let signal = &mut report.signals[i];
        let path = case_dir.join(plot::file_name(&signal.comparison.name));
        let title = format!("{}: {}", report.name, signal.comparison.name);
        match plot::plot_signal(&path, &title, &signal.comparison) {
            Ok(()) => signal.plot = Some(path.display().to_string()),
            Err(e) => warn(&e.to_string()),
        }
        signal.comparison.trace = None;
    }
}
