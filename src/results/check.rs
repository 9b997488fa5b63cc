//! One case of `cosimo check`: simulate the model (an FMU, a system file or an SSP) with the
//! case's settings on the one run loop and compare the result with the reference.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::baseline::{Baseline, Slower};
use super::compare::{
    compare_at, CompareAt, CompareOptions, Comparison, SignalKind, SignalTable, ToleranceSettings,
};
use super::reference::{checked_ls_reference, covers, Case, ModelKind};
use super::report::{CaseReport, CheckReport, Phase, PhaseReport, PhaseStatus};
use super::CsvWriter;
use crate::fmu::description::StartValue;
use crate::fmu::description::{Causality, VariableType};
use crate::fmu::values::{check_start_value_allowed, find_variable, parse_start_values};
use crate::fmu::Fmu;
use crate::master::execution::{Execution, RunOptions};
use crate::master::record::{Cell, Row};
use crate::master::run::Observer;
use crate::master::simulation::{Advanced, Simulation};
use crate::settings::{Labels, Overrides};
use crate::system::ssp::SspPackage;
use crate::system::{config, Endpoint, System};
use crate::{Error, Result};

/// What the command line sets for every case, on top of each case's own settings.
#[derive(Clone, Default)]
pub struct CaseOptions {
    /// Experiment and algorithm settings that win over the case's (start, stop, step, output
    /// interval, tolerance, algorithm, step control, ...).
    pub overrides: Overrides,
    /// Start values `NAME=VALUE` (`component.NAME=VALUE` in systems) that win over the case's.
    pub start_values: Vec<String>,
    /// How the model runs: instance options, interface, threads, isolation and worker
    /// processes (what to record, the inputs and the opened FMUs are the case's).
    pub run: RunOptions,
    /// Tolerances that win over the case's.
    pub tolerance: ToleranceSettings,
    /// Keep the compared traces (for plots).
    pub keep_traces: bool,
    /// Where to compare (wins over the case's `compareAt`; default: the reference's times).
    pub compare_at: Option<CompareAt>,
    /// The reference `--update-references` writes after the run (None: references are only
    /// read). A case without a reference, or whose reference file does not exist yet, then runs
    /// and compares nothing.
    pub new_reference: Option<PathBuf>,
}

/// Times the phases of one case: the phase entered last is the one running (and, after an
/// error, the one that failed).
#[derive(Debug)]
pub struct PhaseClock {
    phase: Phase,
    entered: std::time::Instant,
    seconds: [f64; 3],
}

impl PhaseClock {
    /// A clock in the load phase, from now.
    pub fn start() -> PhaseClock {
        PhaseClock {
            phase: Phase::Load,
            entered: std::time::Instant::now(),
            seconds: [0.0; 3],
        }
    }

    /// The current phase ends, `phase` begins.
    pub fn enter(&mut self, phase: Phase) {
        self.stop();
        self.phase = phase;
    }

    fn stop(&mut self) {
        let now = std::time::Instant::now();
        self.seconds[self.phase as usize] += (now - self.entered).as_secs_f64();
        self.entered = now;
    }

    /// Every phase: those before the current one passed, the current one ended as `status`,
    /// later ones did not run.
    pub fn finish(mut self, status: PhaseStatus) -> Vec<PhaseReport> {
        self.stop();
        Phase::ALL
            .iter()
            .map(|&phase| PhaseReport {
                phase,
                status: match (phase as usize).cmp(&(self.phase as usize)) {
                    std::cmp::Ordering::Less => PhaseStatus::Passed,
                    std::cmp::Ordering::Equal => status,
                    std::cmp::Ordering::Greater => PhaseStatus::NotRun,
                },
                seconds: self.seconds[phase as usize],
            })
            .collect()
    }
}

/// Simulate `case` into `result_file` and compare the result with its reference. When the
/// reference comes from the FMU itself (FMI-LS-REF), `reference_used` says which file it was;
/// `clock` hears when each phase begins.
pub fn simulate_and_compare(
    case: &Case,
    options: &CaseOptions,
    result_file: &Path,
    reference_used: &mut Option<String>,
    clock: &mut PhaseClock,
) -> Result<Comparison> {
    let settings = &case.settings;
    let experiment = &settings.experiment;
    let given = &options.overrides;
    let overrides = Overrides {
        start: given.start.or(experiment.start_time),
        stop: given.stop.or(experiment.stop_time),
        step: given.step.or(experiment.step_size),
        output_interval: given.output_interval.or(experiment.output_interval),
        tolerance: given.tolerance.or(experiment.tolerance),
        ..given.clone()
    };
    let compare_options = CompareOptions {
        tolerance: options.tolerance.over(&settings.tolerance),
        signals: settings.signals.clone(),
        keep_traces: options.keep_traces,
    };
    let at = options
        .compare_at
        .or(settings.compare_at)
        .unwrap_or_default();
    // The run must cover what the reference is compared over; a reference that stops early
    // (or has one row) would leave the rest of the run unchecked and turn CI green.
    let refuse_short = |shown: &str, reference: &SignalTable, start: f64, stop: f64| {
        covers(reference.time(), start, stop).map_err(|message| {
            Error::Usage(format!(
                "{}: {shown}: {message}: the rest of the run would go unchecked; give a \
                 reference that covers the run, or narrow the compared span with --start-time \
                 / --stop-time (or \"experiment\" in {})",
                case.model.display(),
                super::reference::SETTINGS_FILE
            ))
        })
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
            let (reference, shown) = match &case.reference {
                Some(path) if options.new_reference.is_some() && !path.exists() => {
                    (SignalTable::empty(path), path.display().to_string())
                }
                Some(path) => (SignalTable::read(path)?, path.display().to_string()),
                None => {
                    let broken = |e: Error| {
                        Error::Usage(format!(
                            "{}: broken FMI-LS-REF data: {e}",
                            case.model.display()
                        ))
                    };
                    let found = checked_ls_reference(fmu.archive().root(), &md).map_err(broken)?;
                    let mut tables = match found {
                        Some((_, tables)) => tables,
                        None if options.new_reference.is_some() => Vec::new(),
                        None => return Err(no_reference()),
                    };
                    let inputs_at = tables
                        .iter()
                        .position(|(e, _)| e.role.as_deref() == Some("input"));
                    if input.is_none() {
                        input = inputs_at.map(|i| tables[i].0.path.clone());
                    }
                    if tables.is_empty() && options.new_reference.is_some() {
                        (
                            SignalTable::empty(&case.model),
                            "no reference yet".to_string(),
                        )
                    } else {
                        if tables
                            .first()
                            .is_none_or(|(e, _)| e.role.as_deref() != Some("result"))
                        {
                            return Err(broken(Error::Usage(format!(
                                "{}/{}: no <Related> entry with role=\"result\"",
                                super::reference::LS_REF_FOLDER,
                                super::reference::LS_REF_MANIFEST
                            ))));
                        }
                        let (entry, table) = tables.swap_remove(0);
                        *reference_used = Some(format!(
                            "{} (FMI-LS-REF: {})",
                            case.model.display(),
                            entry.source
                        ));
                        let shown = format!("its FMI-LS-REF reference {entry}");
                        (table, shown)
                    }
                }
            };

            let mut start_values = Vec::new();
            for (name, value) in &settings.start_values {
                let variable = find_variable(&md, name, "startValues")?;
                check_start_value_allowed(&md, variable)?;
                let text = json_value_text(value);
                start_values.push((variable.name.clone(), text));
            }
            for assignment in &options.start_values {
                let (name, text) = assignment.split_once('=').ok_or_else(|| {
                    Error::Usage(format!(
                        "--start-value \"{assignment}\": expected NAME=VALUE, e.g. --start-value m=2.5"
                    ))
                })?;
                let variable = find_variable(&md, name.trim(), "--start-value")?;
                check_start_value_allowed(&md, variable)?;
                start_values.retain(|(n, _)| *n != variable.name);
                start_values.push((variable.name.clone(), text.trim().to_string()));
            }
            // Parsed together: an array sized by a structural parameter counts the size given.
            let given = start_values
                .iter()
                .map(|(name, text)| {
                    let index = md
                        .variable_index(name)
                        .ok_or_else(|| Error::Internal(format!("{name}: found but not indexed")))?;
                    Ok((index, text.as_str()))
                })
                .collect::<Result<Vec<_>>>()?;
            parse_start_values(&md, &given)?;
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
            if !reference.is_empty() {
                refuse_short(
                    &shown,
                    &reference,
                    system.experiment.start,
                    system.experiment.stop,
                )?;
            }
            let reference = reference.within(system.experiment.start, system.experiment.stop);
            // An FMU's outputs between its communication points are unknown (a straight line
            // between rows is not the FMU's answer where an output jumps or is sampled): at the
            // reference's times that fall between output points, the run takes a communication
            // point and records a row. Input-driven runs are left on their grid (an input set
            // at a step's start would show in feedthrough outputs read between points).
            let land: Vec<f64> = if at == CompareAt::Reference && input.is_none() {
                reference.time().to_vec()
            } else {
                Vec::new()
            };
            refuse_idle_threads(&system, &options.run)?;
            let run_options = RunOptions {
                record,
                bare_names: true,
                inputs: input
                    .as_deref()
                    .map(|p| crate::fs_checks::read_table(p, "an input file"))
                    .transpose()?
                    .map(Arc::new),
                opened: vec![fmu],
                ..options.run.clone()
            };
            simulate(&system, &run_options, result_file, &land, clock)?;
            clock.enter(Phase::Compare);
            let result = SignalTable::read(result_file)?;
            Ok(compare_at(
                &reference,
                &result,
                &compare_options,
                at,
                &|column| md.variable(column).map(|v| kind_of_type(v.var_type)),
            ))
        }
        ModelKind::System | ModelKind::Ssp => {
            let reference_path = case
                .reference
                .as_ref()
                .or(options.new_reference.as_ref())
                .ok_or_else(no_reference)?;
            let reference = if options.new_reference.is_some() && !reference_path.exists() {
                SignalTable::empty(reference_path)
            } else {
                SignalTable::read(reference_path)?
            };
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
            for assignment in &options.start_values {
                let (name, text) = assignment
                    .split_once('=')
                    .and_then(|(name, text)| Some((Endpoint::parse(name.trim())?, text)))
                    .ok_or_else(|| {
                        Error::Usage(format!(
                            "--start-value \"{assignment}\": in a system, name the component: \
                             component.NAME=VALUE, e.g. --start-value mass1.m=2.5"
                        ))
                    })?;
                system
                    .set_start_value(&name, text.trim().to_string())
                    .map_err(|m| in_model(Error::Usage(format!("--start-value {name}: {m}"))))?;
            }
            refuse_idle_threads(&system, &options.run).map_err(in_model)?;
            if !reference.is_empty() {
                refuse_short(
                    &reference_path.display().to_string(),
                    &reference,
                    system.experiment.start,
                    system.experiment.stop,
                )?;
            }
            let reference = reference.within(system.experiment.start, system.experiment.stop);
            let run_options = RunOptions {
                record: Vec::new(),
                bare_names: false,
                inputs: None,
                opened: Vec::new(),
                ..options.run.clone()
            };
            // A system's communication points stay the system's: extra points would change the
            // coupling's numerics. Reference times between output points are interpolated.
            let descriptions =
                simulate(&system, &run_options, result_file, &[], clock).map_err(in_model)?;
            clock.enter(Phase::Compare);
            let result = SignalTable::read(result_file)?;
            Ok(compare_at(
                &reference,
                &result,
                &compare_options,
                at,
                &|column| {
                    descriptions.iter().find_map(|(prefix, md)| {
                        let name = column.strip_prefix(prefix.as_str())?;
                        md.variable(name).map(|v| kind_of_type(v.var_type))
                    })
                },
            ))
        }
    }
}

/// `--threads` sizes the pool of `--parallel`: without it there is no pool to size.
fn refuse_idle_threads(system: &System, run: &RunOptions) -> Result<()> {
    if run.threads != 0 && !system.experiment.parallel {
        return Err(Error::Usage(
            "--threads sets the worker threads of --parallel: add --parallel or drop --threads"
                .into(),
        ));
    }
    Ok(())
}

type Descriptions = Vec<(String, Arc<crate::fmu::ModelDescription>)>;

/// Run `system` into `result_file`; the column prefix and model description per component.
/// The run also lands on each time of `land` inside it that is not an output point, and
/// records a row there. Loading the FMUs belongs to the load phase; `clock` enters the
/// simulate phase after it.
fn simulate(
    system: &System,
    options: &RunOptions,
    result_file: &Path,
    land: &[f64],
    clock: &mut PhaseClock,
) -> Result<Descriptions> {
    let mut execution = Execution::instantiate(system, options)?;
    clock.enter(Phase::Simulate);
    let columns = execution.column_names();
    let descriptions = execution
        .resolved
        .components
        .iter()
        .map(|c| (format!("{}.", c.name), c.description.clone()))
        .collect();
    let mut writer = CsvWriter::create(result_file, &columns)?;
    let last_row = std::cell::Cell::new(f64::NAN);
    let mut last = LastRow(&last_row);
    let mut observers: [&mut dyn Observer; 2] = [&mut writer, &mut last];
    let outcome = run_to_stop(&mut execution, &mut observers, &columns, land, &last_row);
    // In this process, the FMUs are freed and unloaded once the command's report is out
    // (`crash::defer_teardown`): one that crashes there is a warning, not the lost report.
    if !options.isolate {
        crate::fmu::crash::tear_down_later(Box::new(execution));
    }
    outcome.map(|()| descriptions)
}

/// Start, land on `land`, advance to the stop time and finish.
fn run_to_stop(
    execution: &mut Execution,
    observers: &mut [&mut dyn Observer; 2],
    columns: &[String],
    land: &[f64],
    last_row: &std::cell::Cell<f64>,
) -> Result<()> {
    let mut simulation = Simulation::start(execution, observers)?;
    let stop = simulation.grid().stop;
    let advanced = land_on(&mut simulation, observers, columns, land, last_row)
        .and_then(|()| simulation.advance_to(stop, observers).map(|_| ()));
    match advanced {
        Ok(()) => simulation.finish(observers).map(|_| ()),
        Err(error) => {
            // The error is the news; finishing a failed simulation only tidies up.
            let _ = simulation.finish(observers);
            Err(error)
        }
    }
}

/// Remembers the time of the last row delivered.
struct LastRow<'a>(&'a std::cell::Cell<f64>);

impl Observer for LastRow<'_> {
    fn row(&mut self, row: &Row) -> Result<()> {
        self.0.set(row.time);
        Ok(())
    }
}

/// Advance through the times of `land` (in order; those outside the run are skipped),
/// recording a row at each one where the output grid did not.
fn land_on(
    simulation: &mut Simulation<&mut Execution>,
    observers: &mut [&mut dyn Observer; 2],
    columns: &[String],
    land: &[f64],
    last_row: &std::cell::Cell<f64>,
) -> Result<()> {
    let grid = simulation.grid();
    let near = |a: f64, b: f64| (a - b).abs() <= grid.tolerance(b);
    for &t in land {
        let now = simulation.time();
        if t <= now || near(t, now) || t >= grid.stop || near(t, grid.stop) {
            continue;
        }
        if simulation.advance_to(t, observers)? == Advanced::Ended {
            return Ok(());
        }
        let now = simulation.time();
        if near(last_row.get(), now) {
            continue;
        }
        let mut cells = Vec::with_capacity(columns.len());
        for column in columns {
            cells.push(cell_of(simulation.get(column)?));
        }
        let row = Row { time: now, cells };
        for observer in observers.iter_mut() {
            observer.row(&row)?;
        }
    }
    Ok(())
}

/// A value read by name as the cell a recorded row holds.
fn cell_of(value: StartValue) -> Cell {
    fn one<T: Copy + ToString>(values: &[T], scalar: impl Fn(T) -> Cell) -> Cell {
        match values {
            [x] => scalar(*x),
            _ => Cell::Text(
                values
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        }
    }
    match value {
        StartValue::Float(v) if v.len() == 1 => Cell::Float(v[0]),
        StartValue::Float(v) => Cell::Floats(v),
        StartValue::Int(v) => one(&v, Cell::Int),
        StartValue::UInt(v) => one(&v, Cell::UInt),
        StartValue::Bool(v) => one(&v, Cell::Bool),
        StartValue::String(v) => Cell::Text(v.join(" ")),
        StartValue::Binary(mut v) if v.len() == 1 => Cell::Bytes(v.remove(0)),
        StartValue::Binary(v) => Cell::Text(
            v.iter()
                .map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>())
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
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
#[derive(Clone, Default)]
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
    /// Experiment and algorithm settings that win over every case's.
    pub overrides: Overrides,
    /// Start values `NAME=VALUE` (`component.NAME=VALUE` in systems) over every case's.
    pub start_values: Vec<String>,
    /// How every model runs: instance options, interface, threads, isolation, worker
    /// processes (what to record, inputs and opened FMUs come from each case).
    pub run: RunOptions,
    /// Write a PNG plot of every failing signal into this folder.
    pub plot: Option<PathBuf>,
    /// Write an HTML report (with an SVG plot of every failing signal) into this folder.
    pub html: Option<PathBuf>,
    /// Keep the simulation results in this folder (default: a temporary folder).
    pub results: Option<PathBuf>,
    /// Where to compare, for every case (default: each case's own, else the reference's
    /// time points).
    pub compare_at: Option<CompareAt>,
}

/// What a check sets against what came before and leaves for later: an earlier report of
/// `cosimo check` whose verdicts and run times each case is set against (`--baseline`), and
/// the references rewritten from this run's results (`--update-references`).
#[derive(Clone, Default)]
pub struct CheckHistory {
    /// The earlier report, and when a case counts as slower than in it.
    pub baseline: Option<(Baseline, Slower)>,
    /// Write each case's result as its reference, with a provenance file naming this command
    /// line (None: references are only read).
    pub update_references: Option<Vec<String>>,
}

/// Collect the cases of `request`, run and compare each: the report of all of them (a case
/// that fails to run is a case of the report). `warn` hears what could not be plotted.
pub fn check_targets(request: &CheckRequest, warn: &mut dyn FnMut(&str)) -> Result<CheckReport> {
    check_targets_with(request, &CheckHistory::default(), warn)
}

/// [`check_targets`], each case set against `history`'s baseline and its reference rewritten
/// when `history` says so.
pub fn check_targets_with(
    request: &CheckRequest,
    history: &CheckHistory,
    warn: &mut dyn FnMut(&str),
) -> Result<CheckReport> {
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
        if args.settings.is_some() {
            case.settings_file = args.settings.clone();
        }
        if args.input_file.is_some() {
            case.input = args.input_file.clone();
        }
    }
    let cli_tolerance = args.tolerance.clone();
    cli_tolerance.validate_options()?;
    // Where every reference goes is settled before anything runs: a case that cannot take one
    // stops the command, not a half-updated set of cases.
    let targets: Vec<Option<PathBuf>> = match &history.update_references {
        Some(_) => cases
            .iter()
            .map(|case| super::provenance::reference_target(case).map(Some))
            .collect::<Result<_>>()?,
        None => vec![None; cases.len()],
    };
    super::provenance::refuse_shared(&cases, &targets)?;

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

    let worker = &args.run.worker;
    if worker.memory_limit.is_some() && !args.run.isolate && worker.call_timeout.is_none() {
        return Err(Error::Usage(
            "--worker-memory limits worker processes, but no FMU runs in one: add --isolate".into(),
        ));
    }
    let mut html = args
        .html
        .as_deref()
        .map(super::html::HtmlReport::create)
        .transpose()?;
    let mut reports = Vec::new();
    // Files of a case are named after it; two cases of one name (from two folders checked)
    // get "-2", so that neither overwrites the other's results or plots.
    let mut file_names: Vec<String> = Vec::new();
    for (case, target) in cases.iter().zip(&targets) {
        let file_name = super::html::unique_name(&safe_name(&case.name), &file_names);
        file_names.push(file_name.clone());
        let mut report = check_case(case, args, &cli_tolerance, &work, &file_name, target);
        if let (Some(target), Some(command)) = (target, &history.update_references) {
            if report.status != super::report::Status::Error {
                let result_file = work.join(format!("{file_name}_out.csv"));
                super::provenance::write_reference(
                    case,
                    &result_file,
                    target,
                    command,
                    &command_line_settings(args),
                )?;
                report.updated_reference = Some(target.display().to_string());
            }
        }
        if let Some(dir) = &args.plot {
            plot_failures(&dir.join(&file_name), &mut report, warn);
        }
        if let Some(html) = &mut html {
            html.add_case(&mut report)?;
        }
        // The traces served the plots; a report of many cases does not keep them all.
        for signal in &mut report.signals {
            signal.comparison.trace = None;
        }
        reports.push(report);
    }
    let mut report = CheckReport::new(reports);
    if let Some((baseline, slower)) = &history.baseline {
        report.baseline = Some(baseline.compare(&mut report.cases, slower));
    }
    if let Some(html) = html {
        html.finish(&report)?;
    }
    Ok(report)
}

/// Run and compare one case; errors become an `error` case.
fn check_case(
    case: &Case,
    args: &CheckRequest,
    cli_tolerance: &ToleranceSettings,
    work: &Path,
    file_name: &str,
    new_reference: &Option<PathBuf>,
) -> CaseReport {
    let started = std::time::Instant::now();
    let mut clock = PhaseClock::start();
    let mut reference_used = case.reference.as_ref().map(|p| p.display().to_string());
    let result_file = work.join(format!("{file_name}_out.csv"));
    let options = CaseOptions {
        overrides: args.overrides.clone(),
        start_values: args.start_values.clone(),
        run: args.run.clone(),
        tolerance: cli_tolerance.clone(),
        keep_traces: args.plot.is_some() || args.html.is_some(),
        compare_at: args.compare_at,
        new_reference: new_reference.clone(),
    };
    let simulated = simulate_and_compare(
        case,
        &options,
        &result_file,
        &mut reference_used,
        &mut clock,
    );
    match simulated {
        Ok(comparison) => {
            let phases = clock.finish(if comparison.passed() {
                PhaseStatus::Passed
            } else {
                PhaseStatus::Failed
            });
            let mut report = CaseReport::compared(
                case.name.clone(),
                case.model.display().to_string(),
                reference_used.unwrap_or_default(),
                comparison,
                started.elapsed().as_secs_f64(),
                phases,
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
            clock.finish(PhaseStatus::Failed),
        ),
    }
}

/// What the command line set on top of every case's settings, for the provenance of the
/// references it writes.
fn command_line_settings(args: &CheckRequest) -> serde_json::Value {
    serde_json::json!({
        "experiment": args.overrides,
        "startValues": args.start_values,
        "tolerance": args.tolerance,
        "compareAt": args.compare_at,
    })
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

/// Plot every failing signal of a case that kept its trace into `case_dir`; a plot that fails
/// is noted.
fn plot_failures(case_dir: &Path, report: &mut CaseReport, warn: &mut dyn FnMut(&str)) {
    use super::plot;
    let failing: Vec<usize> = (0..report.signals.len())
        .filter(|&i| {
            !report.signals[i].comparison.passed && report.signals[i].comparison.trace.is_some()
        })
        .collect();
    if failing.is_empty() {
        return;
    }
    if let Err(e) = std::fs::create_dir_all(case_dir) {
        warn(&format!("{}: {e}", case_dir.display()));
        return;
    }
    // Signals whose names differ only in characters a file name cannot hold ("x[1]", "x_1_")
    // get plots of their own.
    let mut stems: Vec<String> = Vec::new();
    for i in failing {
        let signal = &mut report.signals[i];
        let file = plot::file_name(&signal.comparison.name);
        let stem = super::html::unique_name(file.trim_end_matches(".png"), &stems);
        stems.push(stem.clone());
        let path = case_dir.join(format!("{stem}.png"));
        let title = format!("{}: {}", report.name, signal.comparison.name);
        match plot::plot_signal(&path, &title, &signal.comparison) {
            Ok(()) => signal.plot = Some(path.display().to_string()),
            Err(e) => warn(&e.to_string()),
        }
    }
}
