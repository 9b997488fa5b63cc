//! `cosimo._cosimo.Session`: the library's steppable simulation held open for Python. Each
//! call advances, reads, sets, saves or restores it with the GIL released while FMUs run; the
//! rows so far stay in the session's collector (a restore drops the rows after the snapshot).

use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use cosimo::fmu::description::{StartValue, VariableType};
use cosimo::master::run::Observer;
use cosimo::master::scenario::ScenarioPlayer;
use cosimo::master::simulation::{Advanced, Simulation, Snapshot as LibrarySnapshot};
use cosimo::observe::RealTime;
use cosimo::request::prepare;
use cosimo::system::ssp::SspPackage;
use cosimo::Error;

use crate::names::Caller;
use crate::{cell_object, kind, python_message, run_request, Collector};

pyo3::create_exception!(
    _cosimo,
    SessionError,
    PyException,
    "An error of a session call: args are (kind, message, time or None)."
);

/// A Python exception carrying the library error's kind, message and time.
fn raise(error: Error) -> PyErr {
    let time = match &error {
        Error::Simulation { time, .. } => Some(*time),
        _ => None,
    };
    let message = python_message(&error.to_string(), Caller::Simulate);
    SessionError::new_err((kind(&error), message, time))
}

fn usage(message: String) -> PyErr {
    raise(Error::Usage(message))
}

/// A saved whole system, valid in the session that made it.
#[pyclass(module = "cosimo._cosimo")]
pub struct Snapshot {
    inner: LibrarySnapshot,
}

#[pymethods]
impl Snapshot {
    /// The simulation time it was taken at.
    #[getter]
    fn time(&self) -> f64 {
        self.inner.time()
    }
}

/// The observers a session keeps: the row collector and, optionally, real-time pacing.
struct Watchers {
    collector: Collector,
    real_time: Option<RealTime>,
}

impl Watchers {
    /// Run `f` with the observers as the library takes them.
    fn with<R>(&mut self, f: impl FnOnce(&mut [&mut dyn Observer]) -> R) -> R {
        match &mut self.real_time {
            Some(pacing) => f(&mut [&mut self.collector, pacing]),
            None => f(&mut [&mut self.collector]),
        }
    }
}

/// A simulation driven from Python: one call at a time (a second thread's call while one
/// runs is refused rather than waited for: the running call may need the GIL it holds).
#[pyclass(module = "cosimo._cosimo")]
pub struct Session {
    inner: Mutex<Inner>,
}

struct Inner {
    simulation: Option<Simulation>,
    watchers: Watchers,
    warnings: Vec<String>,
    /// An SSP's extracted package: holds its FMUs while the session lives.
    _package: Option<SspPackage>,
}

impl Session {
    fn inner(&self) -> PyResult<MutexGuard<'_, Inner>> {
        match self.inner.try_lock() {
            Ok(inner) => Ok(inner),
            Err(TryLockError::Poisoned(poisoned)) => Ok(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => Err(usage(
                "the session is busy with a call from another thread; make one call at a time"
                    .into(),
            )),
        }
    }
}

impl Inner {
    fn simulation(&mut self) -> PyResult<&mut Simulation> {
        self.simulation
            .as_mut()
            .ok_or_else(|| usage("the session is closed".into()))
    }

    /// The Python half raises what a hook raised (the observer, Ctrl-C) before anything else.
    fn take_raised(&mut self) -> PyResult<()> {
        match self.watchers.collector.raised.take() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Advance with the GIL released; `target` `None`: one macro step.
    fn advance(&mut self, py: Python<'_>, target: Option<f64>) -> PyResult<bool> {
        let Inner {
            simulation,
            watchers,
            ..
        } = self;
        let simulation = simulation
            .as_mut()
            .ok_or_else(|| usage("the session is closed".into()))?;
        let result = py.detach(|| {
            watchers.with(|observers| match target {
                Some(t) => simulation.advance_to(t, observers),
                None => simulation.step(observers),
            })
        });
        self.take_raised()?;
        Ok(result.map_err(raise)? == Advanced::Ended)
    }
}

#[pymethods]
impl Session {
    /// Prepare and start the run a request describes (as `simulate` takes it).
    #[new]
    #[pyo3(signature = (request, observer=None))]
    fn new(
        py: Python<'_>,
        request: &Bound<'_, PyDict>,
        observer: Option<Py<PyAny>>,
    ) -> PyResult<Session> {
        let run_request = run_request(request).map_err(raise)?;
        let real_time = crate::real_time(request).map_err(raise)?;
        let scenario = crate::scenario(request).map_err(raise)?;
        if !crate::output_files(request).map_err(raise)?.is_empty() {
            // A session's rows can be taken back (restore): a file would keep them.
            return Err(raise(cosimo::Error::Usage(
                "output_file: a Session writes no result files (restoring a snapshot takes rows \
                 back); simulate(..., output_file=...) writes them"
                    .into(),
            )));
        }
        let mut watchers = Watchers {
            collector: Collector::new(None, observer),
            real_time,
        };
        let mut warnings = Vec::new();
        let started = py.detach(|| -> cosimo::Result<_> {
            let prepared = prepare(&run_request, &mut |w| {
                warnings.push(python_message(w, Caller::Simulate))
            })?;
            watchers.collector.start = prepared.system.experiment.start;
            watchers.collector.stop = prepared.system.experiment.stop;
            let player = scenario
                .map(|s| ScenarioPlayer::new(&prepared.execution, s, watchers.collector.start))
                .transpose()?;
            let mut simulation =
                watchers.with(|observers| Simulation::start(prepared.execution, observers))?;
            if let Some(player) = player {
                simulation.play(player)?;
            }
            Ok((simulation, prepared.package))
        });
        if let Some(error) = watchers.collector.raised.take() {
            return Err(error);
        }
        let (simulation, package) = started.map_err(raise)?;
        Ok(Session {
            inner: Mutex::new(Inner {
                simulation: Some(simulation),
                watchers,
                warnings,
                _package: package,
            }),
        })
    }

    /// The current simulation time.
    #[getter]
    fn time(&self) -> PyResult<f64> {
        self.inner()?.time()
    }

    /// (start, stop, step, output interval).
    #[getter]
    fn grid(&self) -> PyResult<(f64, f64, f64, f64)> {
        self.inner()?.grid()
    }

    /// The warnings of loading the system.
    #[getter]
    fn warnings(&self) -> PyResult<Vec<String>> {
        Ok(self.inner()?.warnings())
    }

    /// One macro step; whether the simulation ended (stop time or a termination request).
    fn step(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner()?.step(py)
    }

    /// Advance to `time` exactly; whether the simulation ended.
    fn step_until(&self, py: Python<'_>, time: f64) -> PyResult<bool> {
        self.inner()?.step_until(py, time)
    }

    /// The current values of variables named as in results.
    fn get<'py>(&self, py: Python<'py>, names: Vec<String>) -> PyResult<Bound<'py, PyList>> {
        self.inner()?.get(py, names)
    }

    /// Set inputs and tunable parameters, `(name, value)` pairs, for the next step.
    fn set(&self, py: Python<'_>, items: Vec<(String, Bound<'_, PyAny>)>) -> PyResult<()> {
        self.inner()?.set(py, items)
    }

    /// Save the whole system.
    fn save(&self, py: Python<'_>) -> PyResult<Snapshot> {
        self.inner()?.save(py)
    }

    /// Back to a snapshot of this session.
    fn restore(&self, py: Python<'_>, snapshot: PyRef<'_, Snapshot>) -> PyResult<()> {
        self.inner()?.restore(py, snapshot)
    }

    /// A snapshot as bytes (every FMU must serialise its state).
    fn to_bytes<'py>(
        &self,
        py: Python<'py>,
        snapshot: PyRef<'_, Snapshot>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.inner()?.snapshot_bytes(py, snapshot)
    }

    /// Restore bytes made by `to_bytes` in a session of the same system.
    fn restore_bytes(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        self.inner()?.restore_bytes(py, data)
    }

    /// The rows so far: a dict of `columns`, `time` and `values`, as `simulate` returns them.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.inner()?.result(py)
    }

    /// The real-time figures when paced: a dict, else None.
    fn real_time<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.inner()?.real_time(py)
    }

    /// The scenario events that took effect so far.
    fn scenario_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let inner = self.inner()?;
        let events = inner
            .simulation
            .as_ref()
            .map_or(&[][..], |s| s.scenario_events());
        crate::scenario_list(py, events)
    }

    /// Terminate the FMUs and free them; the run's statistics (None when closed already).
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.inner()?.close(py)
    }
}

impl Inner {
    /// The current simulation time.
    fn time(&self) -> PyResult<f64> {
        self.simulation
            .as_ref()
            .map(Simulation::time)
            .ok_or_else(|| usage("the session is closed".into()))
    }

    /// (start, stop, step, output interval).
    fn grid(&self) -> PyResult<(f64, f64, f64, f64)> {
        let grid = self
            .simulation
            .as_ref()
            .ok_or_else(|| usage("the session is closed".into()))?
            .grid();
        Ok((grid.start, grid.stop, grid.step, grid.output_interval))
    }

    /// The warnings of loading the system.
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// One macro step; whether the simulation ended (stop time or a termination request).
    fn step(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.advance(py, None)
    }

    /// Advance to `time` exactly; whether the simulation ended.
    fn step_until(&mut self, py: Python<'_>, time: f64) -> PyResult<bool> {
        self.advance(py, Some(time))
    }

    /// The current values of variables named as in results.
    fn get<'py>(&mut self, py: Python<'py>, names: Vec<String>) -> PyResult<Bound<'py, PyList>> {
        let simulation = self.simulation()?;
        let mut values = Vec::with_capacity(names.len());
        for name in &names {
            let value = py.detach(|| simulation.get(name)).map_err(raise)?;
            values.push(value_object(py, &value)?);
        }
        PyList::new(py, values)
    }

    /// Set inputs and tunable parameters, `(name, value)` pairs, for the next step.
    fn set(&mut self, py: Python<'_>, items: Vec<(String, Bound<'_, PyAny>)>) -> PyResult<()> {
        let simulation = self.simulation()?;
        for (name, value) in &items {
            let (component, variable) =
                simulation.execution().find_variable(name).map_err(raise)?;
            let variable = &simulation.execution().resolved.components[component]
                .description
                .variables[variable];
            let value = start_value(name, variable.var_type, value)?;
            py.detach(|| simulation.set(name, &value)).map_err(raise)?;
        }
        Ok(())
    }

    /// Save the whole system.
    fn save(&mut self, py: Python<'_>) -> PyResult<Snapshot> {
        let simulation = self.simulation()?;
        let inner = py.detach(|| simulation.save()).map_err(raise)?;
        Ok(Snapshot { inner })
    }

    /// Back to a snapshot of this session.
    fn restore(&mut self, py: Python<'_>, snapshot: PyRef<'_, Snapshot>) -> PyResult<()> {
        let Inner {
            simulation,
            watchers,
            ..
        } = self;
        let simulation = simulation
            .as_mut()
            .ok_or_else(|| usage("the session is closed".into()))?;
        let inner = &snapshot.inner;
        py.detach(|| watchers.with(|observers| simulation.restore(inner, observers)))
            .map_err(raise)
    }

    /// A snapshot as bytes (every FMU must serialise its state).
    fn snapshot_bytes<'py>(
        &mut self,
        py: Python<'py>,
        snapshot: PyRef<'_, Snapshot>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let simulation = self.simulation()?;
        let inner = &snapshot.inner;
        let bytes = py.detach(|| simulation.to_bytes(inner)).map_err(raise)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Restore bytes made by `to_bytes` in a session of the same system.
    fn restore_bytes(&mut self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        let Inner {
            simulation,
            watchers,
            ..
        } = self;
        let simulation = simulation
            .as_mut()
            .ok_or_else(|| usage("the session is closed".into()))?;
        py.detach(|| watchers.with(|observers| simulation.restore_bytes(&data, observers)))
            .map_err(raise)
    }

    /// The rows so far: a dict of `columns`, `time` and `values`, as `simulate` returns them.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        self.watchers.collector.columns_into(py, &out)?;
        Ok(out)
    }

    /// The real-time figures when paced: a dict, else None.
    fn real_time<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.watchers
            .real_time
            .as_ref()
            .map(|pacing| crate::real_time_dict(py, &pacing.report()))
            .transpose()
    }

    /// Terminate the FMUs and free them; the run's statistics (None when closed already).
    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(mut simulation) = self.simulation.take() else {
            return Ok(None);
        };
        let watchers = &mut self.watchers;
        let stats = py.detach(|| {
            let stats = watchers.with(|observers| simulation.finish(observers));
            drop(simulation);
            stats
        });
        self._package = None;
        self.take_raised()?;
        match stats {
            Ok(stats) => Ok(Some(crate::statistics_dict(py, &stats)?)),
            // A simulation that failed earlier has reported that failure already.
            Err(Error::Usage(_)) => Ok(None),
            Err(error) => Err(raise(error)),
        }
    }
}

/// A value read from an FMU as Python shows it: a scalar, or a list of an array's elements.
fn value_object<'py>(py: Python<'py>, value: &StartValue) -> PyResult<Bound<'py, PyAny>> {
    use cosimo::master::record::Cell;
    let cells: Vec<Cell> = match value {
        StartValue::Float(v) => v.iter().map(|&x| Cell::Float(x)).collect(),
        StartValue::Int(v) => v.iter().map(|&x| Cell::Int(x)).collect(),
        StartValue::UInt(v) => v.iter().map(|&x| Cell::UInt(x)).collect(),
        StartValue::Bool(v) => v.iter().map(|&x| Cell::Bool(x)).collect(),
        StartValue::String(v) => v.iter().map(|x| Cell::Text(x.clone())).collect(),
        StartValue::Binary(v) => v.iter().map(|x| Cell::Bytes(x.clone())).collect(),
    };
    if cells.len() == 1 {
        return cell_object(py, &cells[0]);
    }
    let objects = cells
        .iter()
        .map(|c| cell_object(py, c))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, objects)?.into_any())
}

/// A Python value (a scalar, or a sequence for an array) as a value of the variable's type;
/// the error names the variable and what it takes.
fn start_value(
    name: &str,
    var_type: VariableType,
    value: &Bound<'_, PyAny>,
) -> PyResult<StartValue> {
    use VariableType::*;
    let wrong = |what: &str| {
        usage(format!(
            "set(): {} for {name}: expected {what}",
            value
                .repr()
                .map_or_else(|_| "the value".to_string(), |r| r.to_string())
        ))
    };
    let scalar_or_list = |what: &str| -> PyResult<Vec<Bound<'_, PyAny>>> {
        if value.is_instance_of::<pyo3::types::PyString>() || value.is_instance_of::<PyBytes>() {
            return Ok(vec![value.clone()]);
        }
        match value.try_iter() {
            Ok(items) => items.collect::<PyResult<Vec<_>>>().map_err(|_| wrong(what)),
            Err(_) => Ok(vec![value.clone()]),
        }
    };
    Ok(match var_type {
        Float32 | Float64 => {
            let what = "a number (or a sequence of numbers for an array)";
            let items = scalar_or_list(what)?;
            StartValue::Float(
                items
                    .iter()
                    .map(|x| {
                        if x.is_instance_of::<pyo3::types::PyBool>() {
                            return Err(wrong(what));
                        }
                        x.extract::<f64>().map_err(|_| wrong(what))
                    })
                    .collect::<PyResult<_>>()?,
            )
        }
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Enumeration => {
            let what = "an integer (or a sequence of integers for an array)";
            let items = scalar_or_list(what)?;
            let integers = items
                .iter()
                .map(|x| {
                    if x.is_instance_of::<pyo3::types::PyFloat>() {
                        // 1.5 for an Integer is a mistake, not a value to truncate.
                        return Err(wrong(what));
                    }
                    x.extract::<i128>().map_err(|_| wrong(what))
                })
                .collect::<PyResult<Vec<i128>>>()?;
            if integers.iter().all(|&x| x >= 0)
                && matches!(var_type, UInt8 | UInt16 | UInt32 | UInt64)
            {
                StartValue::UInt(
                    integers
                        .iter()
                        .map(|&x| {
                            u64::try_from(x).map_err(|_| wrong("an integer in the type's range"))
                        })
                        .collect::<PyResult<_>>()?,
                )
            } else {
                StartValue::Int(
                    integers
                        .iter()
                        .map(|&x| {
                            i64::try_from(x).map_err(|_| wrong("an integer in the type's range"))
                        })
                        .collect::<PyResult<_>>()?,
                )
            }
        }
        Boolean => {
            let what = "True or False (or a sequence of them for an array)";
            let items = scalar_or_list(what)?;
            StartValue::Bool(
                items
                    .iter()
                    .map(|x| x.extract::<bool>().map_err(|_| wrong(what)))
                    .collect::<PyResult<_>>()?,
            )
        }
        String => {
            let what = "a str (or a sequence of str for an array)";
            let items = scalar_or_list(what)?;
            StartValue::String(
                items
                    .iter()
                    .map(|x| x.extract::<std::string::String>().map_err(|_| wrong(what)))
                    .collect::<PyResult<_>>()?,
            )
        }
        Binary => {
            let what = "bytes (or a sequence of bytes for an array)";
            let items = if value.is_instance_of::<PyBytes>() {
                vec![value.clone()]
            } else {
                scalar_or_list(what)?
            };
            StartValue::Binary(
                items
                    .iter()
                    .map(|x| x.extract::<Vec<u8>>().map_err(|_| wrong(what)))
                    .collect::<PyResult<_>>()?,
            )
        }
        Clock => {
            return Err(usage(format!(
                "set(): {name} is a clock; clocks take no values"
            )))
        }
    })
}
