//! One run of a study, by its index: [`Runner::prepare`] loads the target and opens its FMUs
//! once (a loaded library and an extracted folder serve every run of the process), and
//! [`Runner::run_one`] makes run `index` on the run loop and returns its [`RunRecord`] (with
//! its check against the reference, when the study has one). The local pool, shards and MPI
//! ranks all call `run_one`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::check::{Checker, RunCheck};
use super::plan::Plan;
use crate::fmu::description::Causality;
use crate::fmu::values::{check_start_value_allowed, find_variable, parse_value};
use crate::fmu::{Fmu, ModelDescription};
use crate::master::execution::{Execution, RunOptions};
use crate::master::record::ResultColumn;
use crate::master::record::{Cell, Row};
use crate::master::run::{self as run_loop, Observer};
use crate::master::RunStatistics;
use crate::observe::{CsvWriter, ResultFile};
use crate::results::check::kind_of_type;
use crate::results::compare::{SignalKind, SignalTable};
use crate::settings::results::ResultFormat;
use crate::settings::study::{in_study_words, Direction, Study, Summary, SummaryKind};
use crate::settings::Overrides;
use crate::system::load::{load, Target};
use crate::system::ssp::SspPackage;
use crate::system::{Endpoint, System};
use crate::{Error, Result};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// It reached the stop time.
    Ok,
    /// An FMU asked to terminate before the stop time (not an error).
    Terminated,
    /// It failed; the record carries the message.
    Failed,
    /// It was stopped (Ctrl-C) before it ended; such runs are not written to the table.
    Cancelled,
}

impl RunStatus {
    /// The status as the table spells it.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Terminated => "terminated",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// The status the table spells `name`.
    pub fn parse(name: &str) -> Option<RunStatus> {
        [
            RunStatus::Ok,
            RunStatus::Terminated,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// One row of the summary table: a run's index, parameter values, summaries and outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub index: usize,
    pub parameters: Vec<f64>,
    /// One per summary column; `None` where the run gave none (failed, or never crossed).
    pub summaries: Vec<Option<f64>>,
    pub status: RunStatus,
    /// The error of a failed run.
    pub error: Option<String>,
    /// The run's check against its reference (studies with a `check` only).
    pub check: Option<RunCheck>,
}

enum Prepared {
    Fmu {
        fmu: Arc<Fmu>,
        path: PathBuf,
    },
    System {
        system: Box<System>,
        opened: Vec<Arc<Fmu>>,
        /// An SSP's extracted package: holds its FMUs while runs are made.
        _package: Option<SspPackage>,
    },
}

/// Makes the runs of one study: its target loaded, its FMUs opened, its names checked.
pub struct Runner {
    plan: Plan,
    prepared: Prepared,
    overrides: Overrides,
    /// Where `parameters` go: the FMU's variable name, or a system's component and variable.
    targets: Vec<Endpoint>,
    summaries: Vec<Summary>,
    /// The variables every run records (empty: every output).
    record: Vec<String>,
    /// Compares each run with its reference.
    checker: Option<Checker>,
    isolate: bool,
    /// The call timeout of isolated runs (their hang limit).
    call_timeout: Option<std::time::Duration>,
    /// Per-run result files go here (`run-000042.csv`).
    results: Option<PathBuf>,
    /// The format of the per-run result files.
    format: ResultFormat,
    /// What the format leaves out was said (it is the same in every run).
    warned: AtomicBool,
    study_file: PathBuf,
}

impl Runner {
    /// Load the study's target, open its FMUs and check every name and every value the plan
    /// gives against them; `results` is the folder for per-run result files when the study
    /// keeps them.
    pub fn prepare(study: &Study, plan: Plan, results: Option<PathBuf>) -> Result<Runner> {
        let file = &study.file;
        let at = |m: String| Error::Usage(format!("{}: {m}", file.display()));
        if !study.system.exists() {
            return Err(at(format!(
                "system {}: no such file; the path is relative to the study file",
                study.system.display()
            )));
        }
        let target = load(&[study.system.display().to_string()], &[], None)?;
        let mut isolate = study.isolate;
        let (prepared, bare) = match target {
            Target::Fmu(fmu) => {
                let path = fmu.source().to_path_buf();
                (Prepared::Fmu { fmu, path }, true)
            }
            Target::System(loaded) => {
                let loaded = *loaded;
                let system = Box::new(System {
                    experiment: study
                        .overrides
                        .apply(&loaded.system.experiment, loaded.labels)
                        .map_err(|m| at(in_study_words(&m)))?,
                    ..loaded.system
                });
                let mut opened: Vec<Arc<Fmu>> = Vec::new();
                for component in &system.components {
                    if !opened.iter().any(|f| f.source() == component.fmu) {
                        opened.push(Arc::new(Fmu::open(&component.fmu)?));
                    }
                }
                (
                    Prepared::System {
                        system,
                        opened,
                        _package: loaded.package,
                    },
                    false,
                )
            }
        };
        // Two instances of an FMU that allows one per process must not meet in this process:
        // with runs side by side, each run hosts its FMUs in worker processes.
        let fmus: Vec<&Arc<Fmu>> = match &prepared {
            Prepared::Fmu { fmu, .. } => vec![fmu],
            Prepared::System { opened, .. } => opened.iter().collect(),
        };
        if fmus.iter().any(|f| {
            f.description()
                .co_simulation
                .as_ref()
                .is_some_and(|cs| cs.can_be_instantiated_only_once_per_process)
        }) {
            isolate = true;
        }
        let description = |component: &str| -> Option<Arc<ModelDescription>> {
            match &prepared {
                Prepared::Fmu { fmu, .. } => Some(fmu.description().clone()),
                Prepared::System { system, opened, .. } => {
                    let c = system.components.iter().find(|c| c.name == component)?;
                    let fmu = opened.iter().find(|f| f.source() == c.fmu)?;
                    Some(fmu.description().clone())
                }
            }
        };
        let split = |name: &str, field: &str| -> Result<(Endpoint, Arc<ModelDescription>)> {
            if bare {
                let endpoint = Endpoint {
                    component: String::new(),
                    variable: name.to_string(),
                };
                return Ok((endpoint, description("").expect("one FMU")));
            }
            let endpoint = Endpoint::parse(name).ok_or_else(|| {
                at(format!(
                    "{field} {name}: in a system, name the component: component.NAME"
                ))
            })?;
            let md = description(&endpoint.component).ok_or_else(|| {
                let Prepared::System { system, .. } = &prepared else {
                    unreachable!("a system")
                };
                let known: Vec<&str> = system.components.iter().map(|c| c.name.as_str()).collect();
                at(format!(
                    "{field} {name}: the system has no component \"{}\"; its components are: {}",
                    endpoint.component,
                    known.join(", ")
                ))
            })?;
            Ok((endpoint, md))
        };
        let mut targets = Vec::new();
        let mut checks = Vec::new();
        for name in &plan.parameters {
            let (endpoint, md) = split(name, "parameter")?;
            let variable = find_variable(&md, &endpoint.variable, "parameter")
                .map_err(|e| at(full_name(e, "parameter", &endpoint, name)))?;
            check_start_value_allowed(&md, variable).map_err(|e| at(format!("{name}: {e}")))?;
            checks.push((md.clone(), variable.name.clone()));
            targets.push(endpoint);
        }
        // Every value the plan gives must suit its variable (an Integer parameter takes whole
        // numbers): refused before the first run, not in every run.
        for index in 0..plan.len() {
            for (d, ((md, variable), value)) in checks.iter().zip(plan.values(index)).enumerate() {
                let v = md.variable(variable).expect("found above");
                parse_value(md, v, &value_text(value)).map_err(|e| {
                    at(format!(
                        "run {index}: parameter {} = {}: {e}",
                        plan.parameters[d],
                        value_text(value)
                    ))
                })?;
            }
        }
        let mut record: Vec<String> = Vec::new();
        for name in study
            .keep
            .variables
            .iter()
            .chain(study.keep.summaries.iter().map(|s| &s.variable))
        {
            let (endpoint, md) = split(name, "keep: variable")?;
            find_variable(&md, &endpoint.variable, "keep: variable")
                .map_err(|e| at(full_name(e, "keep: variable", &endpoint, name)))?;
            if !record.contains(name) {
                record.push(name.clone());
            }
        }
        if study.keep.results && study.keep.variables.is_empty() {
            // Every output, as `cosimo run` records them (the summaries' variables must be
            // among them: checked when the first run starts).
            record.clear();
        }
        let overrides = match prepared {
            Prepared::Fmu { .. } => study.overrides.clone(),
            Prepared::System { .. } => Overrides::default(),
        };
        if let Prepared::Fmu { fmu, path } = &prepared {
            // The experiment's settings, checked once.
            System::single_fmu(path, fmu.description(), Vec::new(), &overrides)
                .map_err(|e| at(in_study_words(&e.to_string())))?;
        }
        let checker = study
            .check
            .as_ref()
            .map(|check| Checker::new(check, file))
            .transpose()?;
        let call_timeout = match study.call_timeout {
            Some(seconds) if isolate => Some(
                crate::settings::call_timeout(seconds)
                    .map_err(|m| at(format!("callTimeout {seconds}: {m}")))?,
            ),
            _ => None,
        };
        if isolate {
            // Found before the first run rather than failing every run.
            crate::fmu::worker::worker_program().map_err(|e| {
                at(format!(
                    "the runs are isolated (each hosts its FMUs in worker processes, so that a crash fails one run only), but {e}; or say \"isolate\": false in the study to run the FMUs in this process"
                ))
            })?;
        }
        Ok(Runner {
            plan,
            prepared,
            overrides,
            targets,
            summaries: study.keep.summaries.clone(),
            record,
            checker,
            isolate,
            call_timeout,
            results,
            format: study.keep.format,
            warned: AtomicBool::new(false),
            study_file: study.file.clone(),
        })
    }

    /// The plan of the study.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The summary columns' names.
    pub fn summary_columns(&self) -> Vec<String> {
        self.summaries.iter().map(Summary::column).collect()
    }

    /// The check of the runs against references, when the study has one.
    pub fn checker(&self) -> Option<&Checker> {
        self.checker.as_ref()
    }

    /// Whether runs host their FMUs in worker processes.
    pub fn isolates(&self) -> bool {
        self.isolate
    }

    /// The study file the runs come from.
    pub fn study_file(&self) -> &Path {
        &self.study_file
    }

    /// The result file of run `index` (when the study keeps results).
    pub fn result_file(&self, index: usize) -> Option<PathBuf> {
        let width = (self.plan.len().max(1) - 1).to_string().len().max(6);
        self.results
            .as_ref()
            .map(|dir| dir.join(format!("run-{index:0width$}.{}", self.format.extension())))
    }

    /// Make run `index`: its record, whatever happened. A run stops at its next result row
    /// once `cancel` is set (status `Cancelled`). With a check, the run also records its
    /// reference's variables (in memory) and is compared with the reference.
    pub fn run_one(&self, index: usize, cancel: &AtomicBool) -> RunRecord {
        let parameters = self.plan.values(index);
        let mut record = RunRecord {
            index,
            parameters,
            summaries: vec![None; self.summaries.len()],
            status: RunStatus::Ok,
            error: None,
            check: None,
        };
        let reference = self.checker.as_ref().map(|c| c.reference(index));
        let compared: Option<Vec<String>> = match &reference {
            Some(Ok(table)) => Some(self.recordable(table)),
            _ => None,
        };
        match self.simulate(&record.parameters, index, cancel, compared.as_deref()) {
            Ok(Simulated {
                summaries,
                stats,
                result,
            }) => {
                record.summaries = summaries;
                if stats.terminated_early {
                    record.status = RunStatus::Terminated;
                }
                record.check = match (&self.checker, reference, result) {
                    (Some(checker), Some(Ok(table)), Some(result)) => {
                        Some(checker.check(&table, &result, &|c| self.kind_of(c)))
                    }
                    (_, Some(Err(message)), _) => Some(RunCheck::error(message)),
                    (_, Some(Ok(_)), None) => Some(RunCheck::error(
                        "not compared: the run recorded no result".into(),
                    )),
                    _ => None,
                };
            }
            Err(_) if cancel.load(Ordering::Relaxed) => record.status = RunStatus::Cancelled,
            Err(error) => {
                record.status = RunStatus::Failed;
                record.error = Some(error.to_string());
                record.check = reference.map(|r| {
                    RunCheck::error(match r {
                        Err(message) => message,
                        Ok(_) => "not compared: the run failed (see error)".into(),
                    })
                });
            }
        }
        record
    }

    /// The reference's columns that name variables of the model (the others are missing
    /// from any result: the comparison reports them).
    fn recordable(&self, reference: &SignalTable) -> Vec<String> {
        reference
            .column_names()
            .into_iter()
            .filter(|column| self.variable_type(column).is_some())
            .map(str::to_string)
            .collect()
    }

    /// How the result column `column` is compared, from its variable's type.
    fn kind_of(&self, column: &str) -> Option<SignalKind> {
        self.variable_type(column).map(kind_of_type)
    }

    /// The type of the variable a result column names (`component.NAME` in a system).
    fn variable_type(&self, column: &str) -> Option<crate::fmu::description::VariableType> {
        match &self.prepared {
            Prepared::Fmu { fmu, .. } => fmu.description().variable(column).map(|v| v.var_type),
            Prepared::System { system, opened, .. } => {
                let endpoint = Endpoint::parse(column)?;
                let component = system
                    .components
                    .iter()
                    .find(|c| c.name == endpoint.component)?;
                let fmu = opened.iter().find(|f| f.source() == component.fmu)?;
                fmu.description()
                    .variable(&endpoint.variable)
                    .map(|v| v.var_type)
            }
        }
    }

    /// Every output of the model as a result column names it (what an empty `record` records).
    fn outputs(&self) -> Vec<String> {
        let outputs = |md: &ModelDescription, prefix: &str| -> Vec<String> {
            md.variables
                .iter()
                .filter(|v| v.causality == Causality::Output)
                .map(|v| format!("{prefix}{}", v.name))
                .collect()
        };
        match &self.prepared {
            Prepared::Fmu { fmu, .. } => outputs(fmu.description(), ""),
            Prepared::System { system, opened, .. } => system
                .components
                .iter()
                .flat_map(|c| match opened.iter().find(|f| f.source() == c.fmu) {
                    Some(fmu) => outputs(fmu.description(), &format!("{}.", c.name)),
                    None => Vec::new(),
                })
                .collect(),
        }
    }

    /// What a run records: the study's variables and those of `compared` (the reference's),
    /// and, when the check adds variables, the columns of the run's result file (which holds
    /// what the study asked for, check or not).
    fn recording(&self, compared: Option<&[String]>) -> (Vec<String>, Option<Vec<String>>) {
        let Some(compared) = compared else {
            return (self.record.clone(), None);
        };
        let asked = if self.record.is_empty() {
            self.outputs()
        } else {
            self.record.clone()
        };
        let extra: Vec<&String> = compared.iter().filter(|c| !asked.contains(c)).collect();
        if extra.is_empty() {
            return (self.record.clone(), None);
        }
        let mut record = asked.clone();
        record.extend(extra.into_iter().cloned());
        (record, Some(asked))
    }

    /// Run the model with `values`; its summaries, statistics and, when `compared` names the
    /// reference's columns, the result of those columns as CSV text.
    fn simulate(
        &self,
        values: &[f64],
        index: usize,
        cancel: &AtomicBool,
        compared: Option<&[String]>,
    ) -> Result<Simulated> {
        let (record, file_columns) = self.recording(compared);
        let mut options = RunOptions {
            record,
            isolate: self.isolate,
            ..RunOptions::default()
        };
        if self.isolate {
            // This thread makes run after run: its next run's worker starts during this one.
            crate::fmu::worker::start_ahead();
            // Runs side by side: their workers must not spin for each other's cores.
            options.worker.worker_spin = Some(std::time::Duration::ZERO);
            options.worker.call_timeout = self.call_timeout;
            // One worker process per run (not per component): a crash still fails that run
            // only, and a run starts one process instead of one per component.
            options.worker_processes = Some(1);
        }
        let system = match &self.prepared {
            Prepared::Fmu { fmu, path } => {
                let start_values = self
                    .targets
                    .iter()
                    .zip(values)
                    .map(|(t, v)| (t.variable.clone(), value_text(*v)))
                    .collect();
                options.bare_names = true;
                options.opened = vec![fmu.clone()];
                System::single_fmu(path, fmu.description(), start_values, &self.overrides)?
            }
            Prepared::System { system, opened, .. } => {
                let mut system = (**system).clone();
                for (target, value) in self.targets.iter().zip(values) {
                    system
                        .set_start_value(target, value_text(*value))
                        .map_err(Error::Usage)?;
                }
                options.opened = opened.clone();
                system
            }
        };
        let mut execution = Execution::instantiate(&system, &options)?;
        let columns = execution.column_names();
        let mut summaries = Summaries::new(&self.summaries, &columns)?;
        let mut stop = Cancel(cancel);
        let mut observers: Vec<&mut dyn Observer> = vec![&mut stop, &mut summaries];
        let mut writer = match self.result_file(index) {
            Some(file) => {
                let cells = file_columns.map(|names| selected(&columns, &names));
                let described = execution.result_columns();
                let described: Vec<ResultColumn> = match &cells {
                    Some(cells) => cells.iter().map(|&i| described[i].clone()).collect(),
                    None => described,
                };
                // What a format leaves out is the same in every run: said once.
                let writer = ResultFile::create_as(self.format, &file, &described, &mut |w| {
                    if !self.warned.swap(true, Ordering::Relaxed) {
                        log::warn!("{w} (and in every run's file)");
                    }
                })?;
                Some(Columns::new(writer, cells))
            }
            None => None,
        };
        if let Some(writer) = &mut writer {
            observers.push(writer);
        }
        let mut result = match compared {
            Some(compared) => {
                let cells = selected(&columns, compared);
                let names = pick(&columns, Some(&cells));
                let memory = CsvWriter::new(Vec::new(), Path::new("the run's result"), &names)?;
                Some(Columns::new(memory, Some(cells)))
            }
            None => None,
        };
        if let Some(result) = &mut result {
            observers.push(result);
        }
        let stats = run_loop::run(&mut execution, &mut observers)?;
        drop(observers);
        Ok(Simulated {
            summaries: summaries.values(),
            stats,
            result: result.map(|r| r.writer.into_inner()),
        })
    }
}

/// What a run gives besides its status.
struct Simulated {
    summaries: Vec<Option<f64>>,
    stats: RunStatistics,
    /// The reference's columns of the result, as CSV text (with a check).
    result: Option<Vec<u8>>,
}

/// The positions of the columns named in `names`, in column order.
fn selected(columns: &[String], names: &[String]) -> Vec<usize> {
    (0..columns.len())
        .filter(|&i| names.contains(&columns[i]))
        .collect()
}

/// The names of the columns at `cells` (all of them for `None`).
fn pick(columns: &[String], cells: Option<&[usize]>) -> Vec<String> {
    match cells {
        Some(cells) => cells.iter().map(|&i| columns[i].clone()).collect(),
        None => columns.to_vec(),
    }
}

/// A result writer of some of a run's columns (`None`: all of them).
struct Columns<O: Observer> {
    writer: O,
    cells: Option<Vec<usize>>,
    /// The row of the selected cells, reused.
    row: Row,
}

impl<O: Observer> Columns<O> {
    fn new(writer: O, cells: Option<Vec<usize>>) -> Self {
        Columns {
            writer,
            cells,
            row: Row::default(),
        }
    }
}

impl<O: Observer> Observer for Columns<O> {
    fn row(&mut self, row: &Row) -> Result<()> {
        let Some(cells) = &self.cells else {
            return self.writer.row(row);
        };
        self.row.time = row.time;
        self.row.cells.clear();
        self.row
            .cells
            .extend(cells.iter().map(|&i| row.cells[i].clone()));
        self.writer.row(&self.row)
    }

    fn stepped(&mut self, time: f64) {
        self.writer.stepped(time);
    }

    fn finished(&mut self, stats: &RunStatistics) -> Result<()> {
        self.writer.finished(stats)
    }

    fn failed(&mut self, error: &Error) {
        self.writer.failed(error);
    }
}

/// `find_variable`'s message naming the variable as the study does (`component.NAME`).
fn full_name(error: Error, option: &str, endpoint: &Endpoint, name: &str) -> String {
    error.to_string().replacen(
        &format!("{option} {}:", endpoint.variable),
        &format!("{option} {name}:"),
        1,
    )
}

/// A parameter value as a start value: the shortest text that reads back to it, whole
/// numbers without a fraction (so an Integer parameter takes them).
pub fn value_text(value: f64) -> String {
    if value.is_finite() {
        let mut buffer = ryu::Buffer::new();
        let text = buffer.format_finite(value);
        text.strip_suffix(".0").unwrap_or(text).to_string()
    } else {
        value.to_string()
    }
}

/// Ends a run at its next row once the flag is set.
struct Cancel<'a>(&'a AtomicBool);

impl Observer for Cancel<'_> {
    fn row(&mut self, _row: &Row) -> Result<()> {
        if self.0.load(Ordering::Relaxed) {
            return Err(Error::Usage("the sweep was stopped".into()));
        }
        Ok(())
    }
}

/// The summaries of one run, accumulated row by row.
struct Summaries {
    specs: Vec<(usize, SummaryKind)>,
    /// Per summary: the accumulated value.
    state: Vec<Accumulator>,
    first_time: Option<f64>,
    last_time: f64,
}

#[derive(Clone, Copy, Default)]
struct Accumulator {
    value: Option<f64>,
    /// The previous row's (time, value), for the mean and crossings.
    previous: Option<(f64, f64)>,
    integral: f64,
}

impl Summaries {
    fn new(summaries: &[Summary], columns: &[String]) -> Result<Summaries> {
        let mut specs = Vec::new();
        for s in summaries {
            let column = columns
                .iter()
                .position(|c| *c == s.variable)
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "keep.summaries: {} is not recorded; add it to keep.variables",
                        s.variable
                    ))
                })?;
            specs.push((column, s.kind));
        }
        Ok(Summaries {
            state: vec![Accumulator::default(); specs.len()],
            specs,
            first_time: None,
            last_time: 0.0,
        })
    }

    fn values(&self) -> Vec<Option<f64>> {
        let span = self.first_time.map_or(0.0, |t0| self.last_time - t0);
        self.specs
            .iter()
            .zip(&self.state)
            .map(|((_, kind), acc)| match kind {
                SummaryKind::Mean if span > 0.0 => Some(acc.integral / span),
                SummaryKind::Mean => acc.previous.map(|(_, y)| y),
                _ => acc.value,
            })
            .collect()
    }
}

impl Observer for Summaries {
    fn row(&mut self, row: &Row) -> Result<()> {
        let t = row.time;
        self.first_time.get_or_insert(t);
        self.last_time = t;
        for ((column, kind), acc) in self.specs.iter().zip(&mut self.state) {
            let y = match &row.cells[*column] {
                Cell::Float(x) => *x,
                Cell::Int(x) => *x as f64,
                Cell::UInt(x) => *x as f64,
                Cell::Bool(x) => f64::from(u8::from(*x)),
                _ => {
                    return Err(Error::Usage(format!(
                        "keep.summaries: column {column} is not a number; summaries take Float, Integer and Boolean scalars"
                    )))
                }
            };
            match kind {
                SummaryKind::Final => acc.value = Some(y),
                SummaryKind::Min => acc.value = Some(acc.value.map_or(y, |m| m.min(y))),
                SummaryKind::Max => acc.value = Some(acc.value.map_or(y, |m| m.max(y))),
                SummaryKind::Mean => {
                    if let Some((t0, y0)) = acc.previous {
                        acc.integral += 0.5 * (y0 + y) * (t - t0);
                    }
                }
                SummaryKind::Crossing { level, direction } => {
                    if acc.value.is_none() {
                        if let Some((t0, y0)) = acc.previous {
                            acc.value = crossing(t0, y0, t, y, *level, *direction);
                        }
                    }
                }
            }
            acc.previous = Some((t, y));
        }
        Ok(())
    }
}

/// The time where the line from (t0, y0) to (t1, y1) reaches `level` in `direction`: a row
/// on one side followed by a row on the level or on the other side.
pub fn crossing(
    t0: f64,
    y0: f64,
    t1: f64,
    y1: f64,
    level: f64,
    direction: Direction,
) -> Option<f64> {
    let rising = y0 < level && y1 >= level;
    let falling = y0 > level && y1 <= level;
    let counts = match direction {
        Direction::Rising => rising,
        Direction::Falling => falling,
        Direction::Either => rising || falling,
    };
    counts.then(|| t0 + (level - y0) / (y1 - y0) * (t1 - t0))
}
