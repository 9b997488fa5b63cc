//! One instance of an exported system, whatever the FMI version: the life cycle the importer
//! drives (instantiated, initialization, stepping, terminated), values by value reference and
//! FMU states, all over one [`Simulation`]. Every misuse is a [`Fault`] with a message; the
//! FMI layers (`fmi2.rs`, `fmi3.rs`) log it and return its status.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use cosimo::export::manifest::{Exposed, ImporterExperiment, Manifest, Role};
use cosimo::fmu::description::{StartValue, VariableType};
use cosimo::master::run::Observer;
use cosimo::master::simulation::{Advanced, Simulation, Snapshot, VariableId};
use cosimo::request::prepare;
use cosimo::system::ssp::SspPackage;

/// What went wrong in a call, with the status the call returns.
#[derive(Debug)]
pub struct Fault {
    pub discard: bool,
    pub message: String,
}

impl Fault {
    pub fn error(message: impl Into<String>) -> Fault {
        Fault {
            discard: false,
            message: message.into(),
        }
    }
}

impl From<cosimo::Error> for Fault {
    fn from(error: cosimo::Error) -> Fault {
        Fault::error(error.to_string())
    }
}

pub type Outcome<T> = Result<T, Fault>;

/// Where an instance is in the FMI life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Instantiated,
    Initialization,
    Stepping,
    Terminated,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stepped {
    /// At the requested point.
    Reached,
    /// An inner FMU asked to terminate; the system stopped at this time.
    Terminated(f64),
}

/// A saved FMU state of the whole system: a snapshot of this instance, or the bytes of one
/// (deserialised; restored with `restore_bytes`).
pub enum SavedState {
    Live(Snapshot),
    Bytes(Vec<u8>),
}

/// An exported system, instantiated.
pub struct Instance {
    manifest: Manifest,
    resources: PathBuf,
    /// (value reference, index in the manifest's variables), sorted by value reference.
    by_reference: Vec<(u32, usize)>,
    /// Each exposed variable's type (manifest order), read from its name once.
    types: Vec<Option<VariableType>>,
    pub phase: Phase,
    experiment: ImporterExperiment,
    /// Values set before the start, as start values of the run.
    pending: BTreeMap<u32, StartValue>,
    simulation: Option<Simulation>,
    /// Each exposed variable (in manifest order) as the simulation found it, on its first read.
    ids: Vec<Option<VariableId>>,
    _package: Option<SspPackage>,
    /// An inner FMU asked to terminate.
    pub terminated: bool,
    /// Why a step failed (an inner FMU's error, crash or timeout): the system is in an
    /// unknown state and takes no more steps.
    failed: Option<String>,
    /// FMU states handed out and not freed (pointers, to refuse unknown ones).
    pub states: HashSet<usize>,
}

impl Instance {
    /// Read the manifest under `resources` and check the token the importer passes.
    pub fn new(token: Option<&str>, resources: PathBuf) -> Outcome<Instance> {
        let manifest = Manifest::read(&resources)?;
        if let Some(token) = token {
            if token != manifest.token {
                return Err(Fault::error(format!(
                    "the instantiation token {token} is not this FMU's ({}): the model description and the binary come from different exports",
                    manifest.token
                )));
            }
        }
        let mut by_reference: Vec<(u32, usize)> = manifest
            .variables
            .iter()
            .enumerate()
            .map(|(i, v)| (v.value_reference, i))
            .collect();
        by_reference.sort_unstable();
        let types = manifest
            .variables
            .iter()
            .map(Exposed::variable_type)
            .collect();
        Ok(Instance {
            manifest,
            resources,
            by_reference,
            types,
            phase: Phase::Instantiated,
            experiment: ImporterExperiment::default(),
            pending: BTreeMap::new(),
            simulation: None,
            ids: Vec::new(),
            _package: None,
            terminated: false,
            failed: None,
            states: HashSet::new(),
        })
    }

    fn expect(&self, phases: &[Phase], call: &str) -> Outcome<()> {
        if phases.contains(&self.phase) {
            Ok(())
        } else {
            Err(Fault::error(format!(
                "{call} is not allowed in the {:?} state (allowed in: {phases:?})",
                self.phase
            )))
        }
    }

    /// The importer's start and stop time and tolerance (FMI 2 setupExperiment, FMI 3
    /// enterInitializationMode).
    pub fn setup(&mut self, experiment: ImporterExperiment, call: &str) -> Outcome<()> {
        self.expect(&[Phase::Instantiated], call)?;
        if !experiment.start.is_finite() {
            return Err(Fault::error(format!(
                "{call}: the start time {} is not a finite number",
                experiment.start
            )));
        }
        if let Some(stop) = experiment.stop {
            if stop.is_nan() || stop <= experiment.start {
                return Err(Fault::error(format!(
                    "{call}: the stop time {stop} is not after the start time {}",
                    experiment.start
                )));
            }
        }
        self.experiment = experiment;
        Ok(())
    }

    pub fn enter_initialization(&mut self, call: &str) -> Outcome<()> {
        self.expect(&[Phase::Instantiated], call)?;
        self.phase = Phase::Initialization;
        Ok(())
    }

    /// Prepare the run with the values set so far as start values, and start it.
    pub fn exit_initialization(&mut self, call: &str, warn: &mut dyn FnMut(&str)) -> Outcome<()> {
        self.expect(&[Phase::Initialization], call)?;
        let mut start_values = Vec::new();
        for (vr, value) in &self.pending {
            let exposed = &self.manifest.variables[self.index(*vr, call)?];
            start_values.push(format!("{}={}", exposed.target, value_text(value)));
        }
        let worker = self.manifest.workers.program_in(&self.resources)?;
        let request = self
            .manifest
            .request(&self.resources, self.experiment, start_values, worker);
        let prepared = prepare(&request, warn)?;
        let simulation =
            Simulation::start(prepared.execution, &mut [] as &mut [&mut dyn Observer])?;
        self.simulation = Some(simulation);
        self.ids = vec![None; self.manifest.variables.len()];
        self._package = prepared.package;
        self.phase = Phase::Stepping;
        Ok(())
    }

    pub fn simulation(&mut self, call: &str) -> Outcome<&mut Simulation> {
        match (self.phase, self.simulation.as_mut()) {
            (Phase::Stepping, Some(simulation)) => Ok(simulation),
            _ => Err(Fault::error(format!(
                "{call} is not allowed in the {:?} state: initialize the FMU first",
                self.phase
            ))),
        }
    }

    /// The current time of the system (the start time before initialization).
    pub fn time(&self) -> f64 {
        self.simulation
            .as_ref()
            .map_or(self.experiment.start, Simulation::time)
    }

    /// Advance from `t` by `h`; `t` must be the current time.
    pub fn do_step(&mut self, t: f64, h: f64, call: &str) -> Outcome<Stepped> {
        if self.terminated {
            return Err(Fault::error(format!(
                "{call}: an inner FMU asked to terminate at t = {}; the simulation cannot go on",
                self.time()
            )));
        }
        if let Some(why) = &self.failed {
            return Err(Fault::error(format!(
                "{call}: an earlier step failed ({why}); the simulation cannot go on: reset or free the instance"
            )));
        }
        let simulation = self.simulation(call)?;
        let now = simulation.time();
        let grid = simulation.grid();
        if !t.is_finite() || (t - now).abs() > grid.tolerance(now) {
            return Err(Fault::error(format!(
                "{call}: the step starts at t = {t}, but the FMU is at t = {now} (a step must start at the current time; restore an FMU state to go back)"
            )));
        }
        if h.is_nan() || h < 0.0 || !h.is_finite() {
            return Err(Fault::error(format!(
                "{call}: the step size {h} is not a non-negative number"
            )));
        }
        if h == 0.0 {
            return Ok(Stepped::Reached);
        }
        let advanced = match simulation.advance_to(t + h, &mut [] as &mut [&mut dyn Observer]) {
            Ok(advanced) => advanced,
            Err(error) => {
                let why = error.to_string();
                self.failed = Some(why.clone());
                return Err(Fault::error(why));
            }
        };
        match advanced {
            Advanced::Reached => Ok(Stepped::Reached),
            Advanced::Ended => {
                let time = simulation.time();
                if time + grid.tolerance(time) >= t + h {
                    return Ok(Stepped::Reached);
                }
                self.terminated = true;
                Ok(Stepped::Terminated(time))
            }
        }
    }

    pub fn terminate(&mut self, call: &str) -> Outcome<()> {
        self.expect(&[Phase::Stepping, Phase::Initialization], call)?;
        self.phase = Phase::Terminated;
        if let Some(mut simulation) = self.simulation.take() {
            // After a failed step the inner FMUs are in an unknown state (a crashed worker is
            // gone): they are freed, not terminated.
            if self.failed.is_none() {
                simulation.finish(&mut [] as &mut [&mut dyn Observer])?;
            }
        }
        Ok(())
    }

    /// Back to the instantiated state: the system is dropped (FMUs freed), values forgotten.
    pub fn reset(&mut self) {
        self.simulation = None;
        self.ids.clear();
        self._package = None;
        self.pending.clear();
        self.phase = Phase::Instantiated;
        self.terminated = false;
        self.failed = None;
        self.experiment = ImporterExperiment::default();
    }

    /// The index (in the manifest's variables) of a value reference.
    pub fn index(&self, vr: u32, call: &str) -> Outcome<usize> {
        self.by_reference
            .binary_search_by_key(&vr, |&(r, _)| r)
            .map(|at| self.by_reference[at].1)
            .map_err(|_| {
                Fault::error(format!(
                    "{call}: no variable has value reference {vr} (this FMU's are 1 to {})",
                    self.manifest.variables.len()
                ))
            })
    }

    /// The exposed variable of a value reference.
    pub fn variable(&self, vr: u32, call: &str) -> Outcome<&Exposed> {
        Ok(&self.manifest.variables[self.index(vr, call)?])
    }

    /// The exposed variable at `index` and its type.
    pub fn exposed(&self, index: usize) -> (&Exposed, Option<VariableType>) {
        (&self.manifest.variables[index], self.types[index])
    }

    /// The current value of a variable (before the start: what was set, else its start
    /// value, else zero).
    pub fn get(&mut self, vr: u32, call: &str) -> Outcome<StartValue> {
        let index = self.index(vr, call)?;
        if self.phase == Phase::Terminated && self.simulation.is_none() {
            return Err(Fault::error(format!(
                "{call}: the FMU is terminated, its values are gone"
            )));
        }
        if self.simulation.is_some() {
            let id = self.id(index, call)?;
            let exposed = &self.manifest.variables[index];
            if let Some(simulation) = self.simulation.as_mut() {
                return simulation
                    .get_variable(id)
                    .map_err(|e| Fault::error(format!("{call} {}: {e}", exposed.name)));
            }
        }
        let exposed = &self.manifest.variables[index];
        Ok(self
            .pending
            .get(&vr)
            .cloned()
            .or(exposed.start.clone())
            .unwrap_or_else(|| zero(exposed)))
    }

    /// [`get`](Self::get) of a Float64 variable while the system runs, into `out` without
    /// allocating (importers read outputs at every step). `false`: this variable or this phase
    /// takes `get`.
    pub fn get_float64(&mut self, index: usize, out: &mut [f64], call: &str) -> Outcome<bool> {
        if self.types[index] != Some(VariableType::Float64) || self.simulation.is_none() {
            return Ok(false);
        }
        let id = self.id(index, call)?;
        let exposed = &self.manifest.variables[index];
        match self.simulation.as_mut() {
            Some(simulation) => simulation
                .get_float64(id, out)
                .map(|()| true)
                .map_err(|e| Fault::error(format!("{call} {}: {e}", exposed.name))),
            None => Ok(false),
        }
    }

    /// The simulation's handle of the exposed variable at `index`: found by name on the first
    /// read, then kept (getters run at every step).
    fn id(&mut self, index: usize, call: &str) -> Outcome<VariableId> {
        if let Some(id) = self.ids.get(index).copied().flatten() {
            return Ok(id);
        }
        let exposed = &self.manifest.variables[index];
        let simulation = self
            .simulation
            .as_ref()
            .ok_or_else(|| Fault::error(format!("{call}: initialize the FMU first")))?;
        let id = simulation
            .variable(&exposed.target)
            .map_err(|e| Fault::error(format!("{call} {}: {e}", exposed.name)))?;
        if let Some(slot) = self.ids.get_mut(index) {
            *slot = Some(id);
        }
        Ok(id)
    }

    /// Set a variable: before the start as a start value, afterwards inputs and tunable
    /// parameters between steps.
    pub fn set(&mut self, vr: u32, value: StartValue, call: &str) -> Outcome<()> {
        let exposed = self.variable(vr, call)?.clone();
        if exposed.role == Role::Output {
            return Err(Fault::error(format!(
                "{call}: {} is an output; only inputs and parameters can be set",
                exposed.name
            )));
        }
        match self.phase {
            Phase::Instantiated | Phase::Initialization => {
                self.pending.insert(vr, value);
                Ok(())
            }
            Phase::Stepping => {
                if exposed.role == Role::Parameter {
                    return Err(Fault::error(format!(
                        "{call}: {} is a fixed parameter: set it before exitInitializationMode",
                        exposed.name
                    )));
                }
                let simulation = self.simulation(call)?;
                simulation
                    .set(&exposed.target, &value)
                    .map_err(|e| Fault::error(format!("{call} {}: {e}", exposed.name)))
            }
            Phase::Terminated => Err(Fault::error(format!("{call}: the FMU is terminated"))),
        }
    }

    /// Save the whole system.
    pub fn save(&mut self, call: &str) -> Outcome<SavedState> {
        let simulation = self.simulation(call)?;
        Ok(SavedState::Live(simulation.save()?))
    }

    /// Back to a saved state.
    pub fn restore(&mut self, state: &SavedState, call: &str) -> Outcome<()> {
        let simulation = self.simulation(call)?;
        match state {
            SavedState::Live(snapshot) => {
                simulation.restore(snapshot, &mut [] as &mut [&mut dyn Observer])?
            }
            SavedState::Bytes(bytes) => {
                simulation.restore_bytes(bytes, &mut [] as &mut [&mut dyn Observer])?
            }
        }
        self.terminated = false;
        Ok(())
    }

    /// A saved state as bytes that a fresh instance restores.
    pub fn serialize(&mut self, state: &SavedState, call: &str) -> Outcome<Vec<u8>> {
        match state {
            SavedState::Bytes(bytes) => Ok(bytes.clone()),
            SavedState::Live(snapshot) => {
                let simulation = self.simulation(call)?;
                Ok(simulation.to_bytes(snapshot)?)
            }
        }
    }
}

/// A value as `--start-value` text.
fn value_text(value: &StartValue) -> String {
    let items: Vec<String> = match value {
        StartValue::Float(v) => v.iter().map(|x| format!("{x}")).collect(),
        StartValue::Int(v) => v.iter().map(i64::to_string).collect(),
        StartValue::UInt(v) => v.iter().map(u64::to_string).collect(),
        StartValue::Bool(v) => v.iter().map(bool::to_string).collect(),
        StartValue::String(v) => v.clone(),
        StartValue::Binary(v) => v
            .iter()
            .map(|b| b.iter().map(|x| format!("{x:02x}")).collect())
            .collect(),
    };
    items.join(" ")
}

/// Zero of a variable's type.
fn zero(exposed: &Exposed) -> StartValue {
    use cosimo::fmu::description::VariableType as T;
    let n = exposed.count;
    match exposed.variable_type() {
        Some(T::Float32 | T::Float64) => StartValue::Float(vec![0.0; n]),
        Some(T::UInt8 | T::UInt16 | T::UInt32 | T::UInt64) => StartValue::UInt(vec![0; n]),
        Some(T::Boolean) => StartValue::Bool(vec![false; n]),
        Some(T::String) => StartValue::String(vec![String::new(); n]),
        Some(T::Binary) => StartValue::Binary(vec![Vec::new(); n]),
        _ => StartValue::Int(vec![0; n]),
    }
}
