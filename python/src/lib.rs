//! `cosimo._cosimo`: the Rust half of the Python package. It takes a run request as a dict
//! (the Python half, `cosimo/__init__.py`, builds it from FMPy-style keywords), runs it on the
//! library's run loop with the GIL released, and hands back the recorded columns as numpy
//! arrays plus the error, if any, as `(kind, message, time)`; the Python half raises.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use cosimo::fmu::description::{FmiVersion, Interface};
use cosimo::fmu::instance::InstanceOptions;
use cosimo::fmu::model_exchange::{SolverMethod, SolverOptions};
use cosimo::fmu::worker::WorkerOptions;
use cosimo::master::record::{Cell, Row};
use cosimo::master::run::{self as run_loop, Observer};
use cosimo::master::scenario::{AppliedEvent, ScenarioPlayer};
use cosimo::master::RunStatistics;
use cosimo::observe::{RealTime, RealTimeReport, ResultFile};
use cosimo::request::{prepare, worker_options, RunRequest};
use cosimo::results::check::{check_targets, CheckRequest};
use cosimo::results::compare::ToleranceSettings;
use cosimo::settings::control::Estimator;
use cosimo::settings::implicit::{Extension, JacobianMethod};
use cosimo::settings::scenario::Scenario;
use cosimo::settings::study::Study;
use cosimo::settings::AlgorithmKind;
use cosimo::sweep::table::{Shard, SummaryTable, TableMeta, TableWriter};
use cosimo::sweep::{run_local, Plan, Runner};
use cosimo::table::Table;
use cosimo::Error;

mod names;
mod session;

use names::{in_python_terms, Caller};

/// The keyword settings `simulate` takes besides its named arguments.
const SETTINGS: &[&str] = &[
    "algorithm",
    "extrapolation_order",
    "parallel",
    "threads",
    "jacobian",
    "extension",
    "adaptive",
    "estimator",
    "fixed_order",
    "rtol",
    "atol_position",
    "atol_velocity",
    "rtol_coupling",
    "atol_coupling",
    "max_step",
    "safety_factor",
    "tolerance",
    "max_rows",
    "divergence_limit",
    "real_time",
    "scenario",
    "isolate",
    "call_timeout",
    "worker_memory",
    "worker_processes",
    "allow_non_finite",
    "event_mode",
    "interface",
    "solver",
    "solver_rtol",
    "solver_atol",
    "debug_logging",
    "log_fmi_calls",
    "fmi_version",
    "ssd",
    "connections",
    "ignore_units",
    "output_file",
];

/// The request keys the Python half always passes.
const ARGUMENTS: &[&str] = &[
    "targets",
    "start_values",
    "start_time",
    "stop_time",
    "step_size",
    "output_interval",
    "output",
    "input_file",
    "input_text",
    "worker_program",
];

/// The error kinds the Python half maps to exception classes.
pub(crate) fn kind(error: &Error) -> &'static str {
    match error {
        Error::Simulation { source, .. } => kind(source),
        Error::Fmi { .. }
        | Error::Discard { .. }
        | Error::WrongState { .. }
        | Error::Worker { .. } => "FmuError",
        Error::Numerics(_) => "NumericsError",
        Error::Internal(_) => "InternalError",
        _ => "UsageError",
    }
}

fn usage(message: String) -> Error {
    Error::Usage(message)
}

/// A message of the library for a Python caller: the options it names are the caller's
/// arguments (`start_values["mass"]`, not `--start-value mass`).
pub(crate) fn python_message(message: &str, caller: Caller) -> String {
    match caller {
        Caller::Simulate => {
            let known: Vec<&str> = SETTINGS.iter().chain(ARGUMENTS).copied().collect();
            in_python_terms(message, caller, &known)
        }
        Caller::Check => in_python_terms(message, caller, CHECK_KEYS),
    }
}

/// A typed value of the request, or a usage error naming the setting.
fn get<'py, T: FromPyObjectOwned<'py>>(
    request: &Bound<'py, PyDict>,
    key: &str,
    what: &str,
) -> Result<Option<T>, Error> {
    match request.get_item(key) {
        Ok(Some(value)) if !value.is_none() => value
            .extract::<T>()
            .map(Some)
            .map_err(|_| usage(format!("{key}={}: expected {what}", repr(&value)))),
        _ => Ok(None),
    }
}

use pyo3::conversion::FromPyObjectOwned;

fn repr(value: &Bound<'_, PyAny>) -> String {
    value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn flag(request: &Bound<'_, PyDict>, key: &str) -> Result<bool, Error> {
    Ok(get::<bool>(request, key, "True or False")?.unwrap_or(false))
}

fn one_of<'a>(
    request: &Bound<'_, PyDict>,
    key: &str,
    choices: &[&'a str],
) -> Result<Option<&'a str>, Error> {
    let Some(text) = get::<String>(request, key, "a string")? else {
        return Ok(None);
    };
    choices
        .iter()
        .find(|c| **c == text)
        .map(|c| Some(*c))
        .ok_or_else(|| {
            usage(format!(
                "{key}=\"{text}\": expected one of {}",
                choices.join(", ")
            ))
        })
}

/// The request dict as a library run request; every key is known or refused.
pub(crate) fn run_request(request: &Bound<'_, PyDict>) -> Result<RunRequest, Error> {
    for key in request.keys() {
        let key: String = key.extract().unwrap_or_default();
        if !SETTINGS.contains(&key.as_str()) && !ARGUMENTS.contains(&key.as_str()) {
            return Err(usage(format!(
                "unknown setting {key}; the settings are: {}",
                SETTINGS.join(", ")
            )));
        }
    }
    let positive = |key: &str| get::<f64>(request, key, "a number");
    let names: Vec<&str> = AlgorithmKind::ALL.iter().map(|k| k.name()).collect();
    let algorithm = one_of(request, "algorithm", &names)?;
    let order = get::<u8>(request, "extrapolation_order", "an integer 0 to 3")?;
    if let Some(k) = order.filter(|k| *k > 3) {
        return Err(usage(format!(
            "extrapolation_order={k}: expected an integer 0 to 3"
        )));
    }
    let overrides = cosimo::settings::Overrides {
        start: positive("start_time")?,
        stop: positive("stop_time")?,
        step: positive("step_size")?,
        output_interval: positive("output_interval")?,
        tolerance: positive("tolerance")?,
        algorithm: algorithm.and_then(AlgorithmKind::parse),
        extrapolation_order: order,
        parallel: flag(request, "parallel")?,
        jacobian: one_of(request, "jacobian", &JacobianMethod::NAMES)?
            .and_then(JacobianMethod::parse),
        extension: one_of(request, "extension", &Extension::NAMES)?.and_then(Extension::parse),
        adaptive: flag(request, "adaptive")?,
        estimator: one_of(request, "estimator", &Estimator::NAMES)?.and_then(Estimator::parse),
        fixed_order: flag(request, "fixed_order")?,
        rtol: positive("rtol")?,
        atol_position: positive("atol_position")?,
        atol_velocity: positive("atol_velocity")?,
        rtol_coupling: positive("rtol_coupling")?,
        atol_coupling: positive("atol_coupling")?,
        max_step: positive("max_step")?,
        safety_factor: positive("safety_factor")?,
        max_rows: get::<u64>(request, "max_rows", "a positive integer")?,
        divergence_limit: positive("divergence_limit")?,
    };
    if overrides.max_rows == Some(0) {
        return Err(usage("max_rows=0: expected a positive integer".into()));
    }
    let inputs = match (
        get::<String>(request, "input_file", "a path")?,
        get::<String>(request, "input_text", "CSV text")?,
    ) {
        (Some(path), _) => Some(cosimo::fs_checks::read_table(
            Path::new(&path),
            "the input file (--input-file)",
        )?),
        (None, Some(text)) => Some(Table::parse(&text, Path::new("<input array>"))?),
        (None, None) => None,
    };
    let fmi_version = match get::<String>(request, "fmi_version", "2 or 3")?.as_deref() {
        None => None,
        Some("2") => Some(FmiVersion::Fmi2),
        Some("3") => Some(FmiVersion::Fmi3),
        Some(other) => return Err(usage(format!("fmi_version={other}: expected 2 or 3"))),
    };
    let interface = match get::<String>(request, "interface", "\"cs\" or \"me\"")?.as_deref() {
        None => None,
        Some(text) => Some(Interface::parse(text).ok_or_else(|| {
            usage(format!(
                "interface={text:?}: expected \"cs\" (Co-Simulation) or \"me\" (Model Exchange)"
            ))
        })?),
    };
    let method = match get::<String>(request, "solver", "\"bdf\" or \"rk45\"")?.as_deref() {
        None => None,
        Some(text) => Some(SolverMethod::parse(text).ok_or_else(|| {
            usage(format!(
                "solver={text:?}: expected \"bdf\" (stiff) or \"rk45\" (explicit)"
            ))
        })?),
    };
    let solver = SolverOptions {
        method,
        rtol: get::<f64>(request, "solver_rtol", "a tolerance")?,
        atol: get::<f64>(request, "solver_atol", "a tolerance")?,
    };
    solver.check().map_err(|e| {
        usage(
            e.replace("--solver-rtol", "solver_rtol")
                .replace("--solver-atol", "solver_atol"),
        )
    })?;
    let worker_processes = get::<u64>(request, "worker_processes", "an integer 1 to 4096")?;
    if let Some(n) = worker_processes.filter(|n| !(1..=4096).contains(n)) {
        return Err(usage(format!(
            "worker_processes={n}: expected an integer 1 to 4096"
        )));
    }
    let mut worker: WorkerOptions = worker_options(
        get::<f64>(request, "call_timeout", "a number of seconds")?,
        get::<String>(request, "worker_memory", "a size such as \"512M\"")?.as_deref(),
    )?;
    worker.program = Some(worker_program(request)?);
    let debug_logging = flag(request, "debug_logging")?;
    let log_fmi_calls = flag(request, "log_fmi_calls")?;
    DEBUG_LOGGING.store(debug_logging, Ordering::Relaxed);
    LOG_FMI_CALLS.store(log_fmi_calls, Ordering::Relaxed);
    log::set_max_level(if debug_logging || log_fmi_calls {
        log::LevelFilter::Trace
    } else {
        log::LevelFilter::Warn
    });
    Ok(RunRequest {
        targets: get::<Vec<String>>(request, "targets", "paths")?.unwrap_or_default(),
        connections: get::<Vec<String>>(request, "connections", "a list of \"FROM=TO\"")?
            .unwrap_or_default(),
        ignore_units: get::<Vec<String>>(request, "ignore_units", "a list of \"FROM=TO\"")?
            .unwrap_or_default(),
        ssd: get::<String>(request, "ssd", "a file name")?,
        overrides,
        start_values: get::<Vec<String>>(request, "start_values", "NAME=VALUE texts")?
            .unwrap_or_default(),
        output_variables: get::<Vec<String>>(request, "output", "a list of names")?
            .unwrap_or_default(),
        inputs: inputs.map(Arc::new),
        fmi_version,
        threads: get::<usize>(request, "threads", "a number of threads")?.unwrap_or(0),
        instance: InstanceOptions {
            log_fmi_calls,
            logging_on: debug_logging,
            event_mode: flag(request, "event_mode")?,
            solver,
            ..InstanceOptions::default()
        },
        allow_non_finite: flag(request, "allow_non_finite")?,
        isolate: flag(request, "isolate")?,
        worker,
        worker_processes: worker_processes.map(|n| n as usize),
        interface,
        partition: None,
        partition_out: None,
    })
}

/// The FMUs' messages and cosimo's warnings go to stderr, as the CLI prints them: warnings
/// always, the FMUs' debug messages with `debug_logging=True`, every FMI call with
/// `log_fmi_calls=True` (the flags of the run under way).
struct StderrLogger;

static DEBUG_LOGGING: AtomicBool = AtomicBool::new(false);
static LOG_FMI_CALLS: AtomicBool = AtomicBool::new(false);

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        let target = metadata.target();
        metadata.level() <= log::Level::Warn
            || (target.starts_with("fmu") && DEBUG_LOGGING.load(Ordering::Relaxed))
            || (target.starts_with("fmi_calls") && LOG_FMI_CALLS.load(Ordering::Relaxed))
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "[{}] {}", record.level(), record.args());
        }
    }

    fn flush(&self) {}
}

static LOGGER: StderrLogger = StderrLogger;

/// This process is Python, not cosimo: worker processes are the program the Python half
/// found (`worker_program`: $COSIMO_WORKER, else the package's `cosimo-worker` script), else
/// `cosimo` on the PATH.
fn worker_program(request: &Bound<'_, PyDict>) -> Result<PathBuf, Error> {
    Ok(get::<String>(request, "worker_program", "a path")?
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("COSIMO_WORKER").map(Into::into))
        .unwrap_or_else(|| "cosimo".into()))
}

/// Collects the rows column by column and calls the Python hooks (with the GIL taken back
/// briefly): the observer at every row, the progress callback and the interrupt check at most
/// every 50 ms of wall time.
pub(crate) struct Collector {
    columns: Vec<String>,
    time: Vec<f64>,
    cells: Vec<Vec<Cell>>,
    observer: Option<Py<PyAny>>,
    progress: Option<Py<PyAny>>,
    /// What a hook raised (KeyboardInterrupt from the signal check included): ends the run.
    pub(crate) raised: Option<PyErr>,
    interrupted: bool,
    checked: Instant,
    pub(crate) start: f64,
    pub(crate) stop: f64,
}

const CHECK_EVERY: Duration = Duration::from_millis(50);

impl Collector {
    pub(crate) fn new(progress: Option<Py<PyAny>>, observer: Option<Py<PyAny>>) -> Collector {
        Collector {
            columns: Vec::new(),
            time: Vec::new(),
            cells: Vec::new(),
            observer,
            progress,
            raised: None,
            interrupted: false,
            checked: Instant::now(),
            start: 0.0,
            stop: 1.0,
        }
    }

    /// `columns`, `time` and `values` of the rows so far into `out`, as `simulate` returns them.
    pub(crate) fn columns_into(&self, py: Python<'_>, out: &Bound<'_, PyDict>) -> PyResult<()> {
        out.set_item("columns", &self.columns)?;
        out.set_item("time", PyArray1::from_slice(py, &self.time))?;
        let values = self
            .cells
            .iter()
            .map(|c| column_object(py, c))
            .collect::<PyResult<Vec<_>>>()?;
        out.set_item("values", values)
    }

    fn poll(&mut self, time: f64) {
        if self.raised.is_some() {
            return;
        }
        Python::attach(|py| {
            if let Err(e) = py.check_signals() {
                self.interrupted = true;
                self.raised = Some(e);
                return;
            }
            if let Some(progress) = &self.progress {
                let fraction = ((time - self.start) / (self.stop - self.start)).clamp(0.0, 1.0);
                if let Err(e) = progress.call1(py, (time, fraction)) {
                    self.raised = Some(e);
                }
            }
        });
    }
}

impl Observer for Collector {
    fn started(&mut self, columns: &[String]) -> cosimo::Result<()> {
        self.columns = columns.to_vec();
        self.cells = vec![Vec::new(); columns.len()];
        Ok(())
    }

    fn row(&mut self, row: &Row) -> cosimo::Result<()> {
        self.time.push(row.time);
        for (column, cell) in self.cells.iter_mut().zip(&row.cells) {
            column.push(cell.clone());
        }
        if let Some(observer) = &self.observer {
            let raised = Python::attach(|py| -> PyResult<()> {
                let dict = PyDict::new(py);
                dict.set_item("time", row.time)?;
                for (name, cell) in self.columns.iter().zip(&row.cells) {
                    dict.set_item(name, cell_object(py, cell)?)?;
                }
                observer.call1(py, (dict,))?;
                Ok(())
            });
            if let Err(e) = raised {
                self.raised = Some(e);
            }
        }
        Ok(())
    }

    fn stepped(&mut self, time: f64) {
        if self.checked.elapsed() >= CHECK_EVERY {
            self.checked = Instant::now();
            self.poll(time);
        }
    }

    fn stop_requested(&mut self) -> bool {
        self.raised.is_some()
    }

    fn restored(&mut self, rows: u64, _time: f64) {
        let rows = usize::try_from(rows).unwrap_or(usize::MAX);
        self.time.truncate(rows);
        for column in &mut self.cells {
            column.truncate(rows);
        }
    }

    fn finished(&mut self, stats: &RunStatistics) -> cosimo::Result<()> {
        if self.raised.is_none() && self.progress.is_some() {
            self.poll(stats.end_time);
        }
        Ok(())
    }
}

pub(crate) fn cell_object<'py>(py: Python<'py>, cell: &Cell) -> PyResult<Bound<'py, PyAny>> {
    Ok(match cell {
        Cell::Float(x) => x.into_pyobject(py)?.into_any(),
        Cell::Floats(v) => PyArray1::from_slice(py, v).into_any(),
        Cell::Int(x) => x.into_pyobject(py)?.into_any(),
        Cell::UInt(x) => x.into_pyobject(py)?.into_any(),
        Cell::Bool(x) => pyo3::types::PyBool::new(py, *x).to_owned().into_any(),
        Cell::Text(x) => x.into_pyobject(py)?.into_any(),
        Cell::Bytes(x) => PyBytes::new(py, x).into_any(),
    })
}

/// One column as a numpy array of its type (Float arrays as a 2-D array), or a list of Python
/// objects (strings, bytes, and columns whose cells change type).
fn column_object<'py>(py: Python<'py>, cells: &[Cell]) -> PyResult<Bound<'py, PyAny>> {
    macro_rules! all {
        ($variant:ident) => {
            cells
                .iter()
                .map(|c| match c {
                    Cell::$variant(x) => Some(*x),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
        };
    }
    match cells.first() {
        Some(Cell::Float(_)) => {
            if let Some(v) = all!(Float) {
                return Ok(PyArray1::from_vec(py, v).into_any());
            }
        }
        Some(Cell::Int(_)) => {
            if let Some(v) = all!(Int) {
                return Ok(PyArray1::from_vec(py, v).into_any());
            }
        }
        Some(Cell::UInt(_)) => {
            if let Some(v) = all!(UInt) {
                return Ok(PyArray1::from_vec(py, v).into_any());
            }
        }
        Some(Cell::Bool(_)) => {
            if let Some(v) = all!(Bool) {
                return Ok(PyArray1::from_vec(py, v).into_any());
            }
        }
        Some(Cell::Floats(first)) => {
            let width = first.len();
            let mut flat = Vec::with_capacity(width * cells.len());
            let same = cells.iter().all(|c| match c {
                Cell::Floats(v) if v.len() == width => {
                    flat.extend_from_slice(v);
                    true
                }
                _ => false,
            });
            if same {
                return Ok(PyArray1::from_vec(py, flat)
                    .reshape([cells.len(), width])?
                    .into_any());
            }
        }
        _ => {}
    }
    let objects = cells
        .iter()
        .map(|c| cell_object(py, c))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, objects)?.into_any())
}

/// Run a request; returns a dict with `columns` (names), `time` (array), `values` (one array
/// or list per column), `error` (`None` or `(kind, message, time or None)`), `raised` (what a
/// hook raised, KeyboardInterrupt included), `interrupted`, `warnings` and `statistics`.
#[pyfunction]
#[pyo3(signature = (request, progress=None, observer=None))]
fn simulate<'py>(
    py: Python<'py>,
    request: &Bound<'py, PyDict>,
    progress: Option<Py<PyAny>>,
    observer: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let mut warnings: Vec<String> = Vec::new();
    let mut collector = Collector::new(progress, observer);
    let mut pacing = None;
    let result = match run_request(request).and_then(|r| {
        Ok((
            r,
            real_time(request)?,
            scenario(request)?,
            output_files(request)?,
        ))
    }) {
        Err(e) => Err(e),
        Ok((run_request, real_time, scenario, output_files)) => py.detach(|| {
            let mut prepared = prepare(&run_request, &mut |w| warnings.push(w.to_string()))?;
            collector.start = prepared.system.experiment.start;
            collector.stop = prepared.system.experiment.stop;
            let player = scenario
                .map(|s| ScenarioPlayer::new(&prepared.execution, s, collector.start))
                .transpose()?;
            pacing = real_time;
            let columns = prepared.execution.result_columns();
            let mut files = Vec::with_capacity(output_files.len());
            for path in &output_files {
                files.push(ResultFile::create(Path::new(path), &columns, &mut |w| {
                    warnings.push(w.to_string())
                })?);
            }
            let execution = &mut prepared.execution;
            let mut observers: Vec<&mut dyn Observer> = vec![&mut collector];
            if let Some(pacing) = &mut pacing {
                observers.push(pacing);
            }
            for file in &mut files {
                observers.push(file);
            }
            let stats = run_loop::run_with_scenario(execution, player, &mut observers);
            drop(observers);
            drop(prepared);
            stats
        }),
    };
    collector.columns_into(py, &out)?;
    let warnings: Vec<String> = warnings
        .iter()
        .map(|w| python_message(w, Caller::Simulate))
        .collect();
    out.set_item("warnings", warnings)?;
    out.set_item("interrupted", collector.interrupted)?;
    out.set_item("raised", collector.raised.map(|e| e.into_value(py)))?;
    out.set_item(
        "real_time",
        pacing
            .map(|p| real_time_dict(py, &p.report()))
            .transpose()?,
    )?;
    match result {
        Ok(stats) => {
            out.set_item("error", py.None())?;
            out.set_item("statistics", statistics_dict(py, &stats)?)?;
        }
        Err(error) => {
            let time = match &error {
                Error::Simulation { time, .. } => Some(*time),
                _ => None,
            };
            let message = python_message(&error.to_string(), Caller::Simulate);
            out.set_item("error", (kind(&error), message, time))?;
            out.set_item("statistics", py.None())?;
        }
    }
    Ok(out)
}

/// `output_file=PATH` or a list of paths (the Python half passes a list): result files
/// written as the run goes, in the format of each one's extension.
pub(crate) fn output_files(request: &Bound<'_, PyDict>) -> Result<Vec<String>, Error> {
    Ok(
        get::<Vec<String>>(request, "output_file", "a path or a list of paths")?
            .unwrap_or_default(),
    )
}

/// The columns read, or the error as `(kind, message)`.
type ReadOutcome<'py> = (Option<Bound<'py, PyDict>>, Option<(String, String)>);

/// Read a result file of any format cosimo writes (or a Dymola / OpenModelica MAT file):
/// `(dict, None)` with `columns`, `time` and `values` as `simulate` returns them, or
/// `(None, (kind, message))`.
#[pyfunction]
fn read_result<'py>(py: Python<'py>, path: String) -> PyResult<ReadOutcome<'py>> {
    use cosimo::results::read::Data;
    let data = match py.detach(|| cosimo::results::read::read_result(Path::new(&path))) {
        Ok(data) => data,
        Err(e) => return Ok((None, Some((kind(&e).into(), e.to_string())))),
    };
    let out = PyDict::new(py);
    let names: Vec<&str> = data.columns.iter().map(|c| c.name.as_str()).collect();
    out.set_item("columns", names)?;
    out.set_item("time", PyArray1::from_slice(py, &data.time))?;
    let mut values = Vec::with_capacity(data.columns.len());
    for column in &data.columns {
        // As cells, so the column becomes what `simulate` makes of the same cells.
        let cells: Vec<Cell> = match &column.values {
            Data::Float(v) => v.iter().map(|&x| Cell::Float(x)).collect(),
            Data::Int(v) => v.iter().map(|&x| Cell::Int(x)).collect(),
            Data::UInt(v) => v.iter().map(|&x| Cell::UInt(x)).collect(),
            Data::Bool(v) => v.iter().map(|&x| Cell::Bool(x)).collect(),
            Data::FloatArrays(v) => v.iter().map(|x| Cell::Floats(x.clone())).collect(),
            Data::Text(v) => v.iter().map(|x| Cell::Text(x.clone())).collect(),
            Data::Bytes(v) => v.iter().map(|x| Cell::Bytes(x.clone())).collect(),
        };
        values.push(column_object(py, &cells)?);
    }
    out.set_item("values", values)?;
    Ok((Some(out), None))
}

/// A run's figures as the Python half reports them.
pub(crate) fn statistics_dict<'py>(
    py: Python<'py>,
    stats: &RunStatistics,
) -> PyResult<Bound<'py, PyDict>> {
    let s = PyDict::new(py);
    s.set_item("steps", stats.steps)?;
    s.set_item("rows", stats.rows)?;
    s.set_item("fmi_calls", stats.fmi_calls)?;
    s.set_item("end_time", stats.end_time)?;
    s.set_item("terminated_early", stats.terminated_early)?;
    s.set_item("wall_seconds", stats.wall_seconds)?;
    s.set_item("corrector_iterations", stats.corrector_iterations)?;
    s.set_item("events", stats.events)?;
    s.set_item("scenario", scenario_list(py, &stats.scenario)?)?;
    Ok(s)
}

/// Scenario events that took effect, as a list of dicts (time, event_time, variable, action,
/// value, location).
pub(crate) fn scenario_list<'py>(
    py: Python<'py>,
    events: &[AppliedEvent],
) -> PyResult<Bound<'py, PyList>> {
    let items = events
        .iter()
        .map(|e| {
            let d = PyDict::new(py);
            d.set_item("time", e.time)?;
            d.set_item("event_time", e.event_time)?;
            d.set_item("variable", &e.variable)?;
            d.set_item("action", &e.action)?;
            d.set_item("value", &e.value)?;
            d.set_item("location", &e.location)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// `scenario=PATH`: the scenario file, read and checked as a file (its events are checked
/// against the system once it is loaded).
pub(crate) fn scenario(request: &Bound<'_, PyDict>) -> Result<Option<Arc<Scenario>>, Error> {
    let Some(path) = get::<String>(request, "scenario", "the path of a scenario file")? else {
        return Ok(None);
    };
    Scenario::read(Path::new(&path))
        .map(|s| Some(Arc::new(s)))
        .map_err(usage)
}

/// `real_time=FACTOR` (True: 1) as the pacing observer; `None` without it.
pub(crate) fn real_time(request: &Bound<'_, PyDict>) -> Result<Option<RealTime>, Error> {
    let Some(value) = request.get_item("real_time").ok().flatten() else {
        return Ok(None);
    };
    if value.is_none() || value.extract::<bool>().ok() == Some(false) {
        return Ok(None);
    }
    let factor = if value.extract::<bool>().ok() == Some(true) {
        1.0
    } else {
        value.extract::<f64>().map_err(|_| {
            usage(format!(
                "real_time={}: expected a positive number (1: real time, 2: twice as fast) or True",
                repr(&value)
            ))
        })?
    };
    RealTime::new(factor).map(Some).map_err(|e| {
        usage(format!(
            "real_time={factor}: {}",
            e.to_string().replace("--real-time ", "")
        ))
    })
}

/// The pacing's figures as a dict.
pub(crate) fn real_time_dict<'py>(
    py: Python<'py>,
    report: &RealTimeReport,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("target_factor", report.target_factor)?;
    d.set_item("total_factor", report.total_factor)?;
    d.set_item("rolling_factor", report.rolling_factor)?;
    d.set_item("steps", report.steps)?;
    d.set_item("overruns", report.overruns)?;
    d.set_item("worst_lateness", report.worst_lateness)?;
    d.set_item("simulated_seconds", report.simulated_seconds)?;
    d.set_item("wall_seconds", report.wall_seconds)?;
    Ok(d)
}

/// The model description of an FMU (as `cosimo inspect --json` prints it), or an SSP's system;
/// returns `(json, warnings)` or raises through the error tuple `(kind, message)`.
#[pyfunction]
#[pyo3(signature = (path, ssd=None))]
fn inspect(
    py: Python<'_>,
    path: String,
    ssd: Option<String>,
) -> (Option<String>, Vec<String>, Option<(String, String)>) {
    let mut warnings = Vec::new();
    let result = py.detach(|| {
        cosimo::request::inspect_json(Path::new(&path), ssd.as_deref(), &mut |w| {
            warnings.push(python_message(w, Caller::Simulate))
        })
    });
    match result {
        Ok(json) => (
            Some(serde_json::to_string(&json).unwrap_or_default()),
            warnings,
            None,
        ),
        Err(e) => (
            None,
            warnings,
            Some((
                kind(&e).into(),
                python_message(&e.to_string(), Caller::Simulate),
            )),
        ),
    }
}

/// The keys of a check request.
const CHECK_KEYS: &[&str] = &[
    "targets",
    "reference",
    "input_file",
    "settings",
    "rtol",
    "atol",
    "range_tol",
    "time_tol",
    "start_time",
    "stop_time",
    "step_size",
    "output_interval",
    "compare_at",
    "plot",
    "html",
    "results",
    "isolate",
    "call_timeout",
    "worker_memory",
    "worker_program",
];

fn check_request(request: &Bound<'_, PyDict>) -> Result<CheckRequest, Error> {
    for key in request.keys() {
        let key: String = key.extract().unwrap_or_default();
        if !CHECK_KEYS.contains(&key.as_str()) {
            return Err(usage(format!(
                "unknown setting {key}; check takes: {}",
                CHECK_KEYS[1..CHECK_KEYS.len() - 1].join(", ")
            )));
        }
    }
    let number = |key: &str| get::<f64>(request, key, "a number");
    let path = |key: &str| -> Result<Option<PathBuf>, Error> {
        Ok(get::<String>(request, key, "a path")?.map(PathBuf::from))
    };
    let mut worker = worker_options(
        number("call_timeout")?,
        get::<String>(request, "worker_memory", "a size such as \"512M\"")?.as_deref(),
    )?;
    worker.program = Some(worker_program(request)?);
    Ok(CheckRequest {
        targets: get::<Vec<String>>(request, "targets", "paths")?
            .unwrap_or_default()
            .into_iter()
            .map(PathBuf::from)
            .collect(),
        reference: path("reference")?,
        input_file: path("input_file")?,
        settings: path("settings")?,
        tolerance: ToleranceSettings {
            rel: number("rtol")?,
            abs: number("atol")?,
            range: number("range_tol")?,
            time: number("time_tol")?,
        },
        overrides: cosimo::settings::Overrides {
            start: number("start_time")?,
            stop: number("stop_time")?,
            step: number("step_size")?,
            output_interval: number("output_interval")?,
            ..cosimo::settings::Overrides::default()
        },
        start_values: Vec::new(),
        run: cosimo::master::execution::RunOptions {
            isolate: flag(request, "isolate")?,
            worker,
            ..cosimo::master::execution::RunOptions::default()
        },
        plot: path("plot")?,
        html: path("html")?,
        results: path("results")?,
        compare_at: match get::<String>(request, "compare_at", "\"reference\" or \"all\"")?
            .as_deref()
        {
            None => None,
            Some("reference") => Some(cosimo::results::compare::CompareAt::Reference),
            Some("all") => Some(cosimo::results::compare::CompareAt::All),
            Some(other) => {
                return Err(usage(format!(
                    "compare_at must be \"reference\" or \"all\", not {other:?}"
                )))
            }
        },
    })
}

/// Check models against references as `cosimo check` does: `(report json, None)` or
/// `(None, (kind, message))`.
#[pyfunction]
fn check(
    py: Python<'_>,
    request: &Bound<'_, PyDict>,
) -> (Option<String>, Option<(String, String)>, Vec<String>) {
    let mut warnings = Vec::new();
    let result = check_request(request).and_then(|request| {
        py.detach(|| {
            check_targets(&request, &mut |w| {
                warnings.push(python_message(w, Caller::Check))
            })
        })
    });
    match result {
        Ok(report) => (Some(report.json()), None, warnings),
        Err(e) => (
            None,
            Some((
                kind(&e).into(),
                python_message(&e.to_string(), Caller::Check),
            )),
            warnings,
        ),
    }
}

/// Serve one worker process of an isolated run (`cosimo-worker worker --channel-fd FD`); the
/// exit code: 0, or the CLI's for the error it prints.
#[pyfunction]
fn serve_worker(py: Python<'_>, fd: i32) -> u8 {
    match py.detach(|| cosimo::fmu::worker::serve(fd)) {
        Ok(()) => 0,
        Err(error) => {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "error: {error}");
            error.exit_code()
        }
    }
}

/// Run a study as `cosimo sweep` does, with the GIL released: every run on `workers` threads
/// (0: one per core), or the runs of `shard` ("I/N"); the table is written to `output_dir`
/// when given. Returns a dict with `columns`, `rows` (tuples: index, parameters, summaries or
/// `None`, status, error or `None`, and with a check: verdict, signal, deviation, time,
/// message), `complete`, `raised` (KeyboardInterrupt from the signal
/// check, looked at as runs finish) and `error` (`None` or `(kind, message)`).
#[pyfunction]
#[pyo3(signature = (study, output_dir=None, workers=0, shard=None))]
fn sweep<'py>(
    py: Python<'py>,
    study: String,
    output_dir: Option<String>,
    workers: usize,
    shard: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let cancel = AtomicBool::new(false);
    let mut raised: Option<PyErr> = None;
    let mut table = || -> Result<SummaryTable, Error> {
        let shard = shard
            .as_deref()
            .map(Shard::parse)
            .transpose()
            .map_err(|e| usage(format!("shard: {e}")))?;
        let parsed = Study::read(Path::new(&study)).map_err(Error::Usage)?;
        let plan = Plan::new(&parsed);
        let indices: Vec<usize> = match shard {
            Some(shard) => shard.indices(plan.len()),
            None => (0..plan.len()).collect(),
        };
        let dir = output_dir.as_ref().map(PathBuf::from);
        let results = match (&dir, parsed.keep.results) {
            (Some(dir), true) => Some(dir.join("runs")),
            _ => None,
        };
        if let Some(runs) = &results {
            std::fs::create_dir_all(runs).map_err(|e| Error::io(runs, e))?;
        }
        let runner = py.detach(|| Runner::prepare(&parsed, plan, results.clone()))?;
        let meta = TableMeta {
            study: study.clone(),
            fingerprint: parsed.fingerprint.clone(),
            runs: runner.plan().len(),
            shard,
            parameters: runner.plan().parameters.clone(),
            summaries: runner.summary_columns(),
            check: runner.checker().is_some(),
            complete: false,
        };
        // As `cosimo sweep`: with an output folder, each row is on disk as its run finishes,
        // so a sweep killed half-way keeps every finished run.
        let mut writer = match &dir {
            Some(dir) => Some(TableWriter::create(dir, meta.clone(), Vec::new())?),
            None => None,
        };
        let mut unwritten: Option<Error> = None;
        let mut checked = Instant::now();
        let records = py.detach(|| {
            run_local(&runner, &indices, workers, &cancel, &mut |record| {
                if let (Some(writer), None) = (&mut writer, &unwritten) {
                    if let Err(error) = writer.add(record.clone()) {
                        // The table cannot grow: stop rather than make runs nobody keeps.
                        unwritten = Some(error);
                        cancel.store(true, Ordering::Relaxed);
                    }
                }
                if checked.elapsed() < CHECK_EVERY {
                    return;
                }
                checked = Instant::now();
                Python::attach(|py| {
                    if let Err(e) = py.check_signals() {
                        raised = Some(e);
                        cancel.store(true, Ordering::Relaxed);
                    }
                });
            })
        });
        if let Some(error) = unwritten {
            return Err(error);
        }
        let complete = !cancel.load(Ordering::Relaxed) && records.len() == indices.len();
        match writer {
            Some(writer) => writer.finish(complete),
            None => Ok(SummaryTable {
                meta: TableMeta { complete, ..meta },
                records,
            }),
        }
    };
    match table() {
        Ok(table) => {
            let rows = table
                .records
                .iter()
                .map(|r| {
                    let mut cells: Vec<Py<PyAny>> = Vec::new();
                    cells.push(r.index.into_pyobject(py)?.into_any().unbind());
                    for &p in &r.parameters {
                        cells.push(p.into_pyobject(py)?.into_any().unbind());
                    }
                    for s in &r.summaries {
                        cells.push(s.into_pyobject(py)?.into_any().unbind());
                    }
                    cells.push(r.status.name().into_pyobject(py)?.into_any().unbind());
                    cells.push(r.error.as_deref().into_pyobject(py)?.into_any().unbind());
                    if let Some(c) = r.check.as_ref().filter(|_| table.meta.check) {
                        cells.push(c.verdict.name().into_pyobject(py)?.into_any().unbind());
                        cells.push(c.signal.as_deref().into_pyobject(py)?.into_any().unbind());
                        cells.push(c.deviation.into_pyobject(py)?.into_any().unbind());
                        cells.push(c.time.into_pyobject(py)?.into_any().unbind());
                        cells.push(c.message.as_str().into_pyobject(py)?.into_any().unbind());
                    }
                    Ok(pyo3::types::PyTuple::new(py, cells)?.into_any())
                })
                .collect::<PyResult<Vec<_>>>()?;
            out.set_item("columns", table.header())?;
            out.set_item("rows", rows)?;
            out.set_item("complete", table.meta.complete)?;
            out.set_item("error", py.None())?;
        }
        Err(error) => {
            out.set_item("columns", Vec::<String>::new())?;
            out.set_item("rows", Vec::<Py<PyAny>>::new())?;
            out.set_item("complete", false)?;
            out.set_item("error", (kind(&error), error.to_string()))?;
        }
    }
    out.set_item("raised", raised.map(|e| e.into_value(py)))?;
    Ok(out)
}

/// The keyword settings of `simulate`.
#[pyfunction]
fn settings() -> Vec<&'static str> {
    SETTINGS.to_vec()
}

#[pymodule]
fn _cosimo(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Another extension may have set a logger first: then it gets the messages.
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
    // A crash inside an FMU call is reported on stderr before the interpreter ends.
    cosimo::fmu::crash::install(
        "pass isolate=True to host each FMU in a worker process, where a crash raises an error instead of ending Python",
    );
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(serve_worker, m)?)?;
    m.add_function(wrap_pyfunction!(settings, m)?)?;
    m.add_function(wrap_pyfunction!(read_result, m)?)?;
    m.add_class::<session::Session>()?;
    m.add_class::<session::Snapshot>()?;
    m.add("SessionError", m.py().get_type::<session::SessionError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
