//! The version-neutral instance: lifecycle, checked get/set, integration with events,
//! FMU states and their serialisation, Jacobians. The `fmi2` and `fmi3` modules are thin C
//! layers over it.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;

use nalgebra::DMatrix;

use crate::clock::{ClockState, Ticks};
use crate::model::{eval_taylor, Context, Event, Inputs, Integrator, Model, StepFailure};
use crate::values::{to_cstring, Element, Value, Values};
use crate::variable::{fnv1a, Causality, Initial, Table, VarType, Variability, TIME_VR};

/// FMI 2 logger; variadic in C, always called with a "%s" format here.
pub(crate) type Fmi2Logger =
    unsafe extern "C" fn(*mut c_void, *const c_char, c_int, *const c_char, *const c_char, ...);
/// FMI 3 `logMessage` callback.
pub(crate) type Fmi3Log = unsafe extern "C" fn(*mut c_void, c_int, *const c_char, *const c_char);

/// Status codes; FMI 2 and FMI 3 share the numbering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// fmi*OK
    Ok = 0,
    /// fmi*Warning
    Warning = 1,
    /// fmi*Discard
    Discard = 2,
    /// fmi*Error
    Error = 3,
    /// fmi*Fatal
    Fatal = 4,
}

/// FMI major version of an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// FMI 2.0
    V2,
    /// FMI 3.0
    V3,
}

/// The interface an instance was created for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// `fmi2CoSimulation` / `fmi3InstantiateCoSimulation`: the kit integrates.
    CoSimulation,
    /// `fmi2ModelExchange` / `fmi3InstantiateModelExchange`: the importer integrates.
    ModelExchange,
    /// `fmi3InstantiateScheduledExecution`: the importer activates the model partitions
    /// (`fmi3ActivateModelPartition`).
    ScheduledExecution,
}

/// Lifecycle state, the union of the FMI 2 and FMI 3 Co-Simulation and Model Exchange state
/// machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Instantiated,
    /// FMI 3 Configuration Mode: structural parameters may be set.
    Configuration,
    Initialization,
    Step,
    /// FMI 3 Co-Simulation Event Mode, or Model Exchange Event Mode (FMI 2 and 3).
    Event,
    /// Model Exchange Continuous-Time Mode.
    ContinuousTime,
    IntermediateUpdate,
    Terminated,
    /// A step failed; only getters, state restore, reset and free are allowed.
    Failed,
    /// A step ended with the model's termination request (FMI 2 stepFailed with
    /// `fmi2Terminated`, FMI 3 Step Mode after `terminateSimulation`): as `Failed`, but FMI 3
    /// may still set inputs and tunable parameters, as in Step Mode.
    TerminationRequested,
    /// A step returned Fatal; every call returns Fatal and free frees nothing, each counted
    /// as misuse ([`crate::ffi::calls_after_fatal`]).
    Fatal,
}

/// Log categories, in the order of the `LogCategories` element.
pub const CATEGORIES: [&str; 3] = ["logEvents", "logStatusWarning", "logStatusError"];
pub(crate) const LOG_EVENTS: usize = 0;

/// Where log messages go.
pub(crate) enum Sink {
    None,
    V2(Fmi2Logger, *mut c_void),
    V3(Fmi3Log, *mut c_void),
}

/// The logger callback with per-category switches. Errors are always reported; other
/// categories only while switched on by `loggingOn` or `fmi*SetDebugLogging`.
pub(crate) struct Logger {
    pub(crate) sink: Sink,
    pub(crate) name: CString,
    pub(crate) enabled: [bool; 3],
}

impl Logger {
    pub(crate) fn new(sink: Sink, name: &str, on: bool) -> Logger {
        Logger {
            sink,
            name: to_cstring(name),
            enabled: [on; 3],
        }
    }

    pub(crate) fn log(&self, status: Status, category: usize, msg: &str) {
        let category = category.min(CATEGORIES.len() - 1);
        if status < Status::Error && !self.enabled[category] {
            return;
        }
        self.log_always(status, category, msg);
    }

    /// Logs whether or not the category is switched on.
    pub(crate) fn log_always(&self, status: Status, category: usize, msg: &str) {
        let category = category.min(CATEGORIES.len() - 1);
        let cat = to_cstring(CATEGORIES[category]);
        let text = to_cstring(msg);
        // SAFETY: the callbacks were given by the importer for exactly this use; every
        // string passed is NUL-terminated and outlives the call.
        unsafe {
            match self.sink {
                Sink::None => {}
                Sink::V2(f, env) => f(
                    env,
                    self.name.as_ptr(),
                    status as c_int,
                    cat.as_ptr(),
                    c"%s".as_ptr(),
                    text.as_ptr(),
                ),
                Sink::V3(f, env) => f(env, status as c_int, cat.as_ptr(), text.as_ptr()),
            }
        }
    }

    pub(crate) fn set_debug_logging(&mut self, on: bool, cats: &[String]) -> Result<(), String> {
        if cats.is_empty() {
            self.enabled = [on; 3];
            return Ok(());
        }
        for c in cats {
            match CATEGORIES.iter().position(|k| k == c) {
                Some(i) => self.enabled[i] = on,
                None => {
                    return Err(format!(
                        "unknown log category '{c}' (known: {})",
                        CATEGORIES.join(", ")
                    ))
                }
            }
        }
        Ok(())
    }
}

/// Everything an FMU state captures; restoring it continues bit-identically.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SimState {
    pub time: f64,
    pub values: Values,
    /// Orders 1..=3 of the scalar Float64 inputs, aligned with `Table::real_inputs`.
    pub input_derivs: Vec<[f64; 3]>,
    /// An event found by a step and not yet handled (FMI 3 event mode).
    pub pending: Option<Event>,
    /// Calculated variables are stale (something was set).
    pub dirty: bool,
    /// Model Exchange: the event indicators a crossing is measured against (those of the last
    /// event iteration, moved on by each completed integrator step that did not cross).
    pub z_ref: Vec<f64>,
    /// Model Exchange: the time of the last completed integrator step or event iteration
    /// (where the model's termination requests are looked for from).
    pub me_last: f64,
}

/// How a call into the integrator ended.
pub(crate) struct StepEnd {
    pub time: f64,
    pub event: Option<Event>,
}

/// A value a magic-checked instance pointer must carry.
pub(crate) const MAGIC: u64 = 0x464d_554b_4954_0001;

/// One FMU instance.
pub struct Instance<M: Model> {
    magic: u64,
    pub(crate) model: M,
    pub(crate) table: Arc<Table>,
    pub(crate) s: SimState,
    pub(crate) phase: Phase,
    pub(crate) logger: Logger,
    pub(crate) cx: Context,
    pub(crate) version: Version,
    pub(crate) event_mode_used: bool,
    pub(crate) early_return_allowed: bool,
    pub(crate) intermediate: Option<(crate::fmi3::IntermediateUpdate, *mut c_void)>,
    pub(crate) interface: Interface,
    /// Model Exchange: event iterations since Event Mode was entered (a chattering guard).
    pub(crate) event_iterations: usize,
    /// FMI 3 clocks and their activation.
    pub(crate) clocks: ClockState,
    /// Scheduled Execution: the importer's `clockUpdate` callback and its environment.
    pub(crate) clock_update: Option<(crate::fmi3::ClockUpdate, *mut c_void)>,
}

/// Safety limit on events within one step, to stop chattering models.
pub(crate) const MAX_EVENTS_PER_STEP: usize = 10_000;

/// Safety limit on Dormand–Prince steps within one call of the integrator.
const DP_MAX_STEPS: u64 = 100_000_000;
/// Dormand–Prince 5(4) nodes.
const DP_C: [f64; 7] = [0.0, 0.2, 0.3, 0.8, 8.0 / 9.0, 1.0, 1.0];
/// Dormand–Prince 5(4) coefficients; the last row is the fifth-order solution (FSAL).
const DP_A: [[f64; 6]; 7] = [
    [0.0; 6],
    [0.2, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [
        19372.0 / 6561.0,
        -25360.0 / 2187.0,
        64448.0 / 6561.0,
        -212.0 / 729.0,
        0.0,
        0.0,
    ],
    [
        9017.0 / 3168.0,
        -355.0 / 33.0,
        46732.0 / 5247.0,
        49.0 / 176.0,
        -5103.0 / 18656.0,
        0.0,
    ],
    [
        35.0 / 384.0,
        0.0,
        500.0 / 1113.0,
        125.0 / 192.0,
        -2187.0 / 6784.0,
        11.0 / 84.0,
    ],
];
/// Fifth- minus fourth-order weights (the local error estimate).
const DP_E: [f64; 7] = [
    71.0 / 57600.0,
    0.0,
    -71.0 / 16695.0,
    71.0 / 1920.0,
    -17253.0 / 339200.0,
    22.0 / 525.0,
    -1.0 / 40.0,
];

pub(crate) fn crossed(za: f64, zb: f64) -> bool {
    (za > 0.0 && zb <= 0.0) || (za < 0.0 && zb >= 0.0)
}

impl<M: Model> Instance<M> {
    pub(crate) fn new(
        model: M,
        table: Arc<Table>,
        logger: Logger,
        cx: Context,
        version: Version,
    ) -> Self {
        let s = Self::fresh_state(&table);
        let clocks = ClockState::new(model.clocks());
        Instance {
            clocks,
            magic: MAGIC,
            model,
            table,
            s,
            phase: Phase::Instantiated,
            logger,
            cx,
            version,
            event_mode_used: false,
            early_return_allowed: false,
            intermediate: None,
            interface: Interface::CoSimulation,
            event_iterations: 0,
            clock_update: None,
        }
    }

    fn fresh_state(table: &Arc<Table>) -> SimState {
        SimState {
            time: 0.0,
            values: Values::new(table.clone()),
            input_derivs: vec![[0.0; 3]; table.real_inputs.len()],
            pending: None,
            dirty: true,
            z_ref: vec![0.0; M::NUM_EVENT_INDICATORS],
            me_last: 0.0,
        }
    }

    /// The instance behind a C pointer, `None` for NULL or a pointer that is not ours.
    ///
    /// # Safety
    /// `p` must be NULL or a pointer returned by this kit's instantiate and not yet freed.
    pub(crate) unsafe fn from_ptr<'a>(p: *mut c_void) -> Option<&'a mut Self> {
        let inst = (p as *mut Self).as_mut()?;
        (inst.magic == MAGIC).then_some(inst)
    }

    pub(crate) fn invalidate(&mut self) {
        self.magic = 0;
    }

    pub(crate) fn log(&self, status: Status, category: usize, msg: &str) {
        self.logger.log(status, category, msg);
    }

    /// Logs an error naming the function and returns `Status::Error`.
    pub(crate) fn fail(&self, func: &str, msg: impl AsRef<str>) -> Status {
        self.log(Status::Error, 2, &format!("{func}: {}", msg.as_ref()));
        Status::Error
    }

    pub(crate) fn phase_name(&self) -> &'static str {
        match self.phase {
            Phase::Instantiated => "Instantiated",
            Phase::Configuration => "Configuration Mode",
            Phase::Initialization => "Initialization Mode",
            Phase::Step => match self.version {
                Version::V2 => "stepComplete",
                Version::V3 => "Step Mode",
            },
            Phase::Event => "Event Mode",
            Phase::ContinuousTime => "Continuous-Time Mode",
            Phase::IntermediateUpdate => "Intermediate Update Mode",
            Phase::Terminated => "Terminated",
            Phase::Failed => "an error state (a step failed)",
            Phase::TerminationRequested => match self.version {
                Version::V2 => "stepFailed (the slave asked to terminate the simulation)",
                Version::V3 => "Step Mode after the FMU asked to terminate the simulation",
            },
            Phase::Fatal => "a fatal error state",
        }
    }

    /// Errors unless the instance is in one of `allowed`.
    pub(crate) fn expect(&self, func: &str, allowed: &[Phase]) -> Result<(), Status> {
        if allowed.contains(&self.phase) {
            Ok(())
        } else {
            Err(self.fail(
                func,
                format!(
                    "not allowed in {} (see the FMI state machine)",
                    self.phase_name()
                ),
            ))
        }
    }

    /// Looks up a value reference visible in this instance's FMI version.
    pub(crate) fn lookup(&self, func: &str, vr: u32) -> Result<usize, Status> {
        match self.table.index_of(vr) {
            Some(i) if self.version == Version::V3 || self.table.vars[i].in_fmi2() => Ok(i),
            _ => Err(self.fail(func, format!("unknown value reference {vr}"))),
        }
    }

    // ---- lifecycle ------------------------------------------------------------------------

    pub(crate) fn enter_initialization(
        &mut self,
        func: &str,
        start: f64,
        stop: Option<f64>,
    ) -> Status {
        if let Err(s) = self.expect(func, &[Phase::Instantiated]) {
            return s;
        }
        if !start.is_finite() || stop.is_some_and(|e| !(e >= start)) {
            return self.fail(
                func,
                format!("bad experiment: start {start}, stop {stop:?}"),
            );
        }
        self.s.time = start;
        self.cx.start_time = start;
        self.phase = Phase::Initialization;
        self.s.dirty = true;
        self.refresh_status(func)
    }

    pub(crate) fn exit_initialization(&mut self, func: &str) -> Status {
        if let Err(s) = self.expect(func, &[Phase::Initialization]) {
            return s;
        }
        self.s.dirty = true;
        let st = self.refresh_status(func);
        if st >= Status::Error {
            return st;
        }
        self.s.dirty = false;
        if self.interface == Interface::ModelExchange {
            // FMI 2.0 §3.2.3, FMI 3.0 §3.2: Initialization Mode leaves to Event Mode.
            let t = self.s.time;
            let mut z = vec![0.0; M::NUM_EVENT_INDICATORS];
            self.model.event_indicators(&self.s.values, t, &mut z);
            self.s.z_ref = z;
            self.s.me_last = t;
            self.event_iterations = 0;
            self.phase = Phase::Event;
            return Status::Ok;
        }
        self.phase = if self.version == Version::V3 && self.event_mode_used {
            Phase::Event
        } else {
            Phase::Step
        };
        Status::Ok
    }

    /// FMI 3 `fmi3EnterConfigurationMode`: from Instantiated, when the model has structural
    /// parameters.
    pub(crate) fn enter_configuration(&mut self, func: &str) -> Status {
        if !self.table.has_structural_parameters() {
            return self.fail(func, "this FMU has no structural parameters");
        }
        if self.phase == Phase::Step || self.phase == Phase::Event {
            return self.fail(
                func,
                format!(
                    "not allowed in {}: the FMU has no tunable structural parameters, so there \
                     is no Reconfiguration Mode; set structural parameters after instantiation",
                    self.phase_name()
                ),
            );
        }
        if let Err(s) = self.expect(func, &[Phase::Instantiated]) {
            return s;
        }
        self.phase = Phase::Configuration;
        Status::Ok
    }

    /// FMI 3 `fmi3ExitConfigurationMode`: back to Instantiated after the model accepted its
    /// structural parameters ([`Model::configure`]).
    pub(crate) fn exit_configuration(&mut self, func: &str) -> Status {
        if let Err(s) = self.expect(func, &[Phase::Configuration]) {
            return s;
        }
        if let Err(e) = self.model.configure(&mut self.s.values) {
            return self.fail(func, format!("the structural parameters were refused: {e}"));
        }
        if let Err(e) = self.s.values.resize_arrays() {
            return self.fail(func, format!("the structural parameters were refused: {e}"));
        }
        self.s.dirty = true;
        self.phase = Phase::Instantiated;
        Status::Ok
    }

    /// `fmi*Terminate`; not after an Error (`Failed`): FMI 2.0 §4.2.4 does not list
    /// `fmi2Terminate` for state "error", FMI 3.0 §2.2.3 allows only `fmi3SetFMUState`,
    /// `fmi3Reset` and `fmi3FreeInstance` after `fmi3Error`.
    pub(crate) fn terminate(&mut self, func: &str) -> Status {
        if let Err(s) = self.expect(
            func,
            &[
                Phase::Step,
                Phase::Event,
                Phase::ContinuousTime,
                Phase::TerminationRequested,
                Phase::Initialization,
            ],
        ) {
            return s;
        }
        self.phase = Phase::Terminated;
        Status::Ok
    }

    pub(crate) fn reset(&mut self, func: &str) -> Status {
        if let Err(s) = self.expect(
            func,
            &[
                Phase::Instantiated,
                Phase::Configuration,
                Phase::Initialization,
                Phase::Step,
                Phase::Event,
                Phase::ContinuousTime,
                Phase::Terminated,
                Phase::Failed,
                Phase::TerminationRequested,
            ],
        ) {
            return s;
        }
        self.s = Self::fresh_state(&self.table);
        self.clocks.reset();
        self.phase = Phase::Instantiated;
        Status::Ok
    }

    /// Recomputes calculated variables if something was set since the last evaluation.
    /// In Event Mode, the clocked partition runs first if an input clock was set since it
    /// last ran.
    pub(crate) fn refresh(&mut self) -> Result<(), String> {
        if self.clocks.pending && self.phase == Phase::Event {
            self.clocks.pending = false;
            let t = self.s.time;
            self.s.values.set_f64(TIME_VR, t);
            let mut ticks = Ticks {
                state: &mut self.clocks,
            };
            self.model.clock_tick(&mut self.s.values, t, &mut ticks)?;
            self.s.dirty = true;
        }
        if !self.s.dirty {
            return Ok(());
        }
        let t = self.s.time;
        self.s.values.set_f64(TIME_VR, t);
        if self.phase == Phase::Initialization {
            self.model.initialize(&mut self.s.values, &self.cx)?;
        }
        if !matches!(self.phase, Phase::Instantiated | Phase::Configuration) {
            self.model.evaluate(&mut self.s.values, t)?;
        }
        self.s.dirty = false;
        Ok(())
    }

    fn refresh_status(&mut self, func: &str) -> Status {
        match self.refresh() {
            Ok(()) => Status::Ok,
            Err(e) => self.fail(func, format!("model evaluation failed: {e}")),
        }
    }

    // ---- get / set ------------------------------------------------------------------------

    /// Why variable `i` may not be set now, if it may not.
    fn not_settable(&self, i: usize) -> Option<String> {
        let v = &self.table.vars[i];
        let var = v.variability_resolved();
        let input = v.causality == Causality::Input;
        if v.causality == Causality::Independent {
            return Some("the independent variable cannot be set".into());
        }
        if var == Variability::Constant {
            return Some("it is a constant".into());
        }
        // FMI 3.0: a structural parameter "can only be changed in Configuration Mode or
        // Reconfiguration Mode"; FMI 2 shows it as an ordinary fixed parameter.
        let structural =
            v.causality == Causality::StructuralParameter && self.version == Version::V3;
        if structural && self.phase != Phase::Configuration {
            return Some(format!(
                "variable '{}' is a structural parameter: it may be set only in Configuration \
                 Mode (call fmi3EnterConfigurationMode after instantiation, set it, then \
                 fmi3ExitConfigurationMode), not in {}",
                v.name,
                self.phase_name()
            ));
        }
        if !v.clocks.is_empty()
            && matches!(self.phase, Phase::Step | Phase::Event)
            && !(self.phase == Phase::Event && self.clocks.any_active(&v.clocks))
        {
            return Some(format!(
                "variable '{}' is clocked: it may be set only in Event Mode while one of its \
                 clocks is active (set the clock first with fmi3SetClock)",
                v.name
            ));
        }
        let ok = match self.phase {
            Phase::Configuration => structural,
            Phase::Instantiated | Phase::Initialization => {
                input || matches!(v.initial, Some(Initial::Exact | Initial::Approx))
            }
            Phase::Step | Phase::Event => {
                input || (v.causality == Causality::Parameter && var == Variability::Tunable)
            }
            // FMI 2.0 §3.2.3, FMI 3.0 §3.2.3: only continuous-time inputs.
            Phase::ContinuousTime => input && var == Variability::Continuous,
            // FMI 2 stepFailed allows no set; FMI 3 stays in Step Mode.
            Phase::TerminationRequested => {
                self.version == Version::V3
                    && (input
                        || (v.causality == Causality::Parameter && var == Variability::Tunable))
            }
            Phase::IntermediateUpdate => input && v.intermediate_update,
            Phase::Terminated | Phase::Failed | Phase::Fatal => false,
        };
        (!ok).then(|| {
            format!(
                "variable '{}' (causality {}, variability {}) may not be set in {}",
                v.name,
                v.causality_xml(self.version == Version::V2),
                v.variability_xml(),
                self.phase_name()
            )
        })
    }

    /// Common checks for a set of `vrs` with `n_values` values of type `ty`; returns each
    /// variable's index.
    pub(crate) fn check_set(
        &self,
        func: &str,
        vrs: &[u32],
        n_values: usize,
        types: &[VarType],
    ) -> Result<Vec<usize>, Status> {
        let idx = self.check_types(func, vrs, n_values, types)?;
        for &i in &idx {
            if let Some(why) = self.not_settable(i) {
                return Err(self.fail(func, why));
            }
        }
        Ok(idx)
    }

    /// Checks value references, types and the total element count.
    pub(crate) fn check_types(
        &self,
        func: &str,
        vrs: &[u32],
        n_values: usize,
        types: &[VarType],
    ) -> Result<Vec<usize>, Status> {
        let mut idx = Vec::with_capacity(vrs.len());
        let mut total = 0;
        for &vr in vrs {
            let i = self.lookup(func, vr)?;
            let v = &self.table.vars[i];
            if !types.contains(&v.ty) {
                return Err(self.fail(
                    func,
                    format!(
                        "variable '{}' (vr {vr}) is of type {}",
                        v.name,
                        v.ty.fmi3_name()
                    ),
                ));
            }
            // The stored length: an array sized by a structural parameter has the configured size.
            total += self.s.values.data[i].len();
            idx.push(i);
        }
        if total != n_values {
            return Err(self.fail(
                func,
                format!("{n_values} values given for {total} elements of the value references"),
            ));
        }
        Ok(idx)
    }

    fn check_get_phase(&self, func: &str) -> Result<(), Status> {
        self.expect(
            func,
            &[
                Phase::Initialization,
                Phase::Step,
                Phase::Event,
                Phase::ContinuousTime,
                Phase::IntermediateUpdate,
                Phase::Terminated,
                Phase::Failed,
                Phase::TerminationRequested,
            ],
        )
    }

    pub(crate) fn ensure_fresh(&mut self, func: &str) -> Result<(), Status> {
        match self.refresh() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(func, format!("model evaluation failed: {e}"))),
        }
    }

    /// Sets numeric or boolean elements after checking permissions and bounds.
    pub(crate) fn set<T: Element>(
        &mut self,
        func: &str,
        vrs: &[u32],
        vals: &[T],
        ty: &[VarType],
    ) -> Status {
        let idx = match self.check_set(func, vrs, vals.len(), ty) {
            Ok(i) => i,
            Err(s) => return s,
        };
        let mut k = 0;
        for &i in &idx {
            let v = &self.table.vars[i];
            let n = self.s.values.data[i].len();
            for &x in &vals[k..k + n] {
                let f = x.to_f64();
                if v.min.is_some_and(|m| !(f >= m)) || v.max.is_some_and(|m| !(f <= m)) {
                    return self.fail(
                        func,
                        format!(
                            "value {f} for '{}' violates its bounds [{}, {}]",
                            v.name,
                            v.min.unwrap_or(f64::NEG_INFINITY),
                            v.max.unwrap_or(f64::INFINITY)
                        ),
                    );
                }
                if let Some(t) = &v.declared_type {
                    if !(f.fract() == 0.0 && t.contains(f as i64)) {
                        return self.fail(
                            func,
                            format!(
                                "value {f} for '{}' is not an item of the enumeration '{}'",
                                v.name, t.name
                            ),
                        );
                    }
                }
            }
            k += n;
        }
        let mut k = 0;
        for &i in &idx {
            let n = self.s.values.data[i].len();
            if let Some(dst) = T::slice_mut(&mut self.s.values.data[i]) {
                dst.copy_from_slice(&vals[k..k + n]);
            }
            k += n;
        }
        self.s.dirty = true;
        Status::Ok
    }

    /// Reads numeric or boolean elements.
    pub(crate) fn get<T: Element>(
        &mut self,
        func: &str,
        vrs: &[u32],
        out: &mut [T],
        ty: &[VarType],
    ) -> Status {
        if let Err(s) = self.check_get_phase(func) {
            return s;
        }
        let idx = match self.check_types(func, vrs, out.len(), ty) {
            Ok(i) => i,
            Err(s) => return s,
        };
        if let Err(s) = self.ensure_fresh(func) {
            return s;
        }
        let mut k = 0;
        for &i in &idx {
            if let Some(src) = T::slice(&self.s.values.data[i]) {
                out[k..k + src.len()].copy_from_slice(src);
                k += src.len();
            }
        }
        Status::Ok
    }

    /// FMI 2 `fmi2GetInteger`: Integer (Int32) and Enumeration variables (stored as i64).
    pub(crate) fn get_fmi2_integers(
        &mut self,
        func: &str,
        vrs: &[u32],
        out: &mut [c_int],
    ) -> Status {
        if let Err(s) = self.check_get_phase(func) {
            return s;
        }
        let types = [VarType::Int32, VarType::Enumeration];
        let idx = match self.check_types(func, vrs, out.len(), &types) {
            Ok(i) => i,
            Err(s) => return s,
        };
        if let Err(s) = self.ensure_fresh(func) {
            return s;
        }
        for (o, &i) in out.iter_mut().zip(&idx) {
            *o = match &self.s.values.data[i] {
                Value::I32(x) => x.first().copied().unwrap_or(0),
                Value::I64(x) => {
                    let e = x.first().copied().unwrap_or(0);
                    match c_int::try_from(e) {
                        Ok(e) => e,
                        Err(_) => {
                            let name = &self.table.vars[i].name;
                            return self.fail(
                                func,
                                format!("value {e} of '{name}' does not fit an fmi2Integer"),
                            );
                        }
                    }
                }
                _ => 0,
            };
        }
        Status::Ok
    }

    /// FMI 2 `fmi2SetInteger`: Integer (Int32) and Enumeration variables.
    pub(crate) fn set_fmi2_integers(&mut self, func: &str, vrs: &[u32], vals: &[c_int]) -> Status {
        let types = [VarType::Int32, VarType::Enumeration];
        let idx = match self.check_types(func, vrs, vals.len(), &types) {
            Ok(i) => i,
            Err(s) => return s,
        };
        if idx.iter().all(|&i| self.table.vars[i].ty == VarType::Int32) {
            return self.set(func, vrs, vals, &types[..1]);
        }
        // Mixed or enumeration: widen to i64 and set one variable at a time, all checked first.
        let snapshot = self.s.values.clone();
        for ((&vr, &x), &i) in vrs.iter().zip(vals).zip(&idx) {
            let st = if self.table.vars[i].ty == VarType::Int32 {
                self.set(func, &[vr], &[x], &types[..1])
            } else {
                self.set(func, &[vr], &[i64::from(x)], &types[1..])
            };
            if st != Status::Ok {
                self.s.values = snapshot;
                return st;
            }
        }
        Status::Ok
    }

    /// Sets String elements.
    pub(crate) fn set_strings(&mut self, func: &str, vrs: &[u32], vals: &[CString]) -> Status {
        let idx = match self.check_set(func, vrs, vals.len(), &[VarType::String]) {
            Ok(i) => i,
            Err(s) => return s,
        };
        let mut k = 0;
        for &i in &idx {
            if let Value::Str(dst) = &mut self.s.values.data[i] {
                let n = dst.len();
                dst.clone_from_slice(&vals[k..k + n]);
                k += n;
            }
        }
        self.s.dirty = true;
        Status::Ok
    }

    /// Pointers to String elements, valid until the next set or the instance is freed.
    pub(crate) fn get_strings(
        &mut self,
        func: &str,
        vrs: &[u32],
        out: &mut [*const c_char],
    ) -> Status {
        if let Err(s) = self.check_get_phase(func) {
            return s;
        }
        let idx = match self.check_types(func, vrs, out.len(), &[VarType::String]) {
            Ok(i) => i,
            Err(s) => return s,
        };
        if let Err(s) = self.ensure_fresh(func) {
            return s;
        }
        let mut k = 0;
        for &i in &idx {
            if let Value::Str(src) = &self.s.values.data[i] {
                for c in src {
                    out[k] = c.as_ptr();
                    k += 1;
                }
            }
        }
        Status::Ok
    }

    /// Sets Binary elements.
    pub(crate) fn set_binaries(&mut self, func: &str, vrs: &[u32], vals: &[Vec<u8>]) -> Status {
        let idx = match self.check_set(func, vrs, vals.len(), &[VarType::Binary]) {
            Ok(i) => i,
            Err(s) => return s,
        };
        let mut k = 0;
        for &i in &idx {
            if let Value::Bin(dst) = &mut self.s.values.data[i] {
                let n = dst.len();
                dst.clone_from_slice(&vals[k..k + n]);
                k += n;
            }
        }
        self.s.dirty = true;
        Status::Ok
    }

    /// Pointers and sizes of Binary elements, valid until the next set or free.
    pub(crate) fn get_binaries(
        &mut self,
        func: &str,
        vrs: &[u32],
        sizes: &mut [usize],
        out: &mut [*const u8],
    ) -> Status {
        if let Err(s) = self.check_get_phase(func) {
            return s;
        }
        let idx = match self.check_types(func, vrs, out.len(), &[VarType::Binary]) {
            Ok(i) => i,
            Err(s) => return s,
        };
        if let Err(s) = self.ensure_fresh(func) {
            return s;
        }
        let mut k = 0;
        for &i in &idx {
            if let Value::Bin(src) = &self.s.values.data[i] {
                for b in src {
                    out[k] = b.as_ptr();
                    sizes[k] = b.len();
                    k += 1;
                }
            }
        }
        Status::Ok
    }

    // ---- stepping -------------------------------------------------------------------------

    /// The failure the model asks for in the step from `tc` to `t_end`, if any, with the time
    /// the step must stop at (after the model's own work of the step, `Model::step_work`).
    pub(crate) fn planned_failure(&self, tc: f64, t_end: f64) -> Option<(StepFailure, f64)> {
        self.model.step_work(&self.s.values);
        let f = self.model.step_failure(&self.s.values, tc, t_end)?;
        if f.status == Status::Ok && !f.terminate {
            return None;
        }
        let stop = match f.status {
            Status::Warning if !f.terminate => t_end,
            _ if f.time >= tc => f.time.min(t_end),
            _ => tc,
        };
        Some((f, stop))
    }

    /// Ends a step with the model's requested failure or termination: logs its message
    /// (always) and moves to the phase it implies. A termination request returns Discard in
    /// FMI 2 (with `fmi2Terminated` then true) and OK in FMI 3 (the caller reports
    /// `terminateSimulation`).
    pub(crate) fn step_failed(&mut self, func: &str, f: &StepFailure) -> Status {
        let status = match (f.terminate, self.version) {
            (true, Version::V2) => Status::Discard,
            (true, Version::V3) => Status::Ok,
            (false, _) => f.status,
        };
        let category = if status >= Status::Error { 2 } else { 1 };
        self.logger
            .log_always(status, category, &format!("{func}: {}", f.message));
        if f.terminate {
            self.phase = Phase::TerminationRequested;
        } else if status == Status::Error {
            self.phase = Phase::Failed;
        } else if status == Status::Fatal {
            self.phase = Phase::Fatal;
        }
        status
    }

    /// Errors unless the instance may step: in Step Mode (FMI 2 stepComplete) and not after
    /// the model requested termination.
    pub(crate) fn expect_step(&self, func: &str) -> Result<(), Status> {
        if self.phase == Phase::TerminationRequested {
            let terminate = match self.version {
                Version::V2 => "fmi2Terminate",
                Version::V3 => "fmi3Terminate",
            };
            return Err(self.fail(
                func,
                format!(
                    "the FMU asked to terminate the simulation at t = {}; call {terminate} (or \
                     restore an FMU state, or reset)",
                    self.s.time
                ),
            ));
        }
        self.expect(func, &[Phase::Step])
    }

    /// Whether the last step ended with the model's termination request (FMI 2
    /// `fmi2Terminated`).
    pub(crate) fn termination_requested(&self) -> bool {
        self.phase == Phase::TerminationRequested
    }

    /// Current scalar Float64 input values with the stored input derivatives.
    pub(crate) fn input_taylor(&self) -> Vec<[f64; 4]> {
        self.table
            .real_inputs
            .iter()
            .zip(&self.s.input_derivs)
            .map(|(&i, d)| {
                let u = self.s.values.data[i].as_f64(0).unwrap_or(0.0);
                [u, d[0], d[1], d[2]]
            })
            .collect()
    }

    /// The continuous states in table order (array states contribute all their elements).
    pub(crate) fn states(&self) -> Vec<f64> {
        let mut x = Vec::new();
        for &(s, _) in &self.table.states {
            if let Value::F64(v) = &self.s.values.data[s] {
                x.extend_from_slice(v);
            }
        }
        x
    }

    pub(crate) fn put_states(&mut self, x: &[f64]) {
        let mut k = 0;
        for &(s, _) in &self.table.states {
            if let Value::F64(v) = &mut self.s.values.data[s] {
                let n = v.len().min(x.len().saturating_sub(k));
                v[..n].copy_from_slice(&x[k..k + n]);
                k += v.len();
            }
        }
    }

    pub(crate) fn derivatives(&self, dx: &mut [f64]) {
        let mut k = 0;
        for &(_, d) in &self.table.states {
            if let Value::F64(v) = &self.s.values.data[d] {
                let n = v.len().min(dx.len().saturating_sub(k));
                dx[k..k + n].copy_from_slice(&v[..n]);
                k += v.len();
            }
        }
    }

    /// Sets time, inputs (from the polynomial `poly` given at `t0`) and states, and evaluates.
    fn load(&mut self, t: f64, x: &[f64], t0: f64, poly: &[[f64; 4]]) -> Result<(), String> {
        self.s.values.set_f64(TIME_VR, t);
        for (&i, c) in self.table.real_inputs.iter().zip(poly) {
            if let Value::F64(v) = &mut self.s.values.data[i] {
                v[0] = eval_taylor(c, t - t0)[0];
            }
        }
        self.put_states(x);
        self.model.evaluate(&mut self.s.values, t)
    }

    /// One integration step from `(ta, x)` over `h`: exact if the model has it, else RK4.
    fn single_step(
        &mut self,
        ta: f64,
        x: &[f64],
        h: f64,
        t0: f64,
        poly: &[[f64; 4]],
    ) -> Result<Vec<f64>, String> {
        if M::EXACT_STEP {
            self.load(ta, x, t0, poly)?;
            let shifted: Vec<[f64; 4]> = poly.iter().map(|c| eval_taylor(c, ta - t0)).collect();
            let inputs = Inputs {
                table: &self.table,
                t0: ta,
                coeffs: &shifted,
            };
            let mut xb = x.to_vec();
            self.model
                .exact_step(&self.s.values, &inputs, ta, h, &mut xb)?;
            return Ok(xb);
        }
        if let Integrator::DormandPrince {
            rtol,
            atol,
            max_step,
        } = self.model.integrator(&self.s.values)
        {
            return self.dormand_prince(ta, x, h, t0, poly, (rtol, atol, max_step));
        }
        let n = x.len();
        let mut k = [vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]];
        let mut xs = x.to_vec();
        let stages = [(0.0, 0.0), (0.5, 0.5), (0.5, 0.5), (1.0, 1.0)];
        for (j, &(c, a)) in stages.iter().enumerate() {
            if j > 0 {
                for m in 0..n {
                    xs[m] = x[m] + a * h * k[j - 1][m];
                }
            }
            self.load(ta + c * h, &xs, t0, poly)?;
            self.derivatives(&mut k[j]);
        }
        Ok((0..n)
            .map(|m| x[m] + h / 6.0 * (k[0][m] + 2.0 * k[1][m] + 2.0 * k[2][m] + k[3][m]))
            .collect())
    }

    /// Dormand–Prince 5(4) ([`Integrator::DormandPrince`]) from `(ta, x)` over exactly `h`:
    /// FSAL, error per component against `atol + rtol·max(|y|, |y_new|)` in the max norm,
    /// step factor `0.9·err^(-1/5)` limited to [0.2, 5] (no growth right after a rejection),
    /// a step within 1 % of the end is stretched to land exactly on `ta + h`. The first trial
    /// step comes from the states alone (Hairer's starting-step heuristic), never from an
    /// earlier call, so a restored FMU state continues bit-identically.
    fn dormand_prince(
        &mut self,
        ta: f64,
        x: &[f64],
        h: f64,
        t0: f64,
        poly: &[[f64; 4]],
        (rtol, atol, max_step): (f64, f64, f64),
    ) -> Result<Vec<f64>, String> {
        if !(rtol > 0.0 && rtol.is_finite() && atol > 0.0 && atol.is_finite() && max_step > 0.0) {
            return Err(format!(
                "adaptive integrator: rtol = {rtol}, atol = {atol} and max step = {max_step} \
                 must be positive"
            ));
        }
        let n = x.len();
        if n == 0 || !(h > 0.0) {
            return Ok(x.to_vec());
        }
        let t_end = ta + h;
        let hmax = max_step.min(h);
        let eval = |this: &mut Self, t: f64, y: &[f64], out: &mut [f64]| -> Result<(), String> {
            this.load(t, y, t0, poly)?;
            this.derivatives(out);
            Ok(())
        };
        // Scaled max norm; NaN counts as infinitely large.
        let norm = |e: &[f64], y0: &[f64], y1: &[f64]| -> f64 {
            let mut m = 0.0_f64;
            for ((&ei, &a), &b) in e.iter().zip(y0).zip(y1) {
                let r = (ei / (atol + rtol * a.abs().max(b.abs()))).abs();
                if r.is_nan() {
                    return f64::INFINITY;
                }
                m = m.max(r);
            }
            m
        };
        let mut k: [Vec<f64>; 7] = std::array::from_fn(|_| vec![0.0; n]);
        let mut y = x.to_vec();
        let mut ytmp = vec![0.0; n];
        let mut err = vec![0.0; n];
        let mut t = ta;
        eval(self, t, &y, &mut k[0])?;
        // Starting step (Hairer, Nørsett & Wanner, Solving ODE I, II.4).
        let mut hs = {
            let zeros = vec![0.0; n];
            let d0 = norm(&y, &y, &zeros);
            let d1 = norm(&k[0], &y, &zeros);
            let h0 = if d0 < 1e-5 || d1 < 1e-5 {
                1e-6
            } else {
                0.01 * d0 / d1
            };
            let h0 = h0.min(hmax);
            for i in 0..n {
                ytmp[i] = y[i] + h0 * k[0][i];
            }
            eval(self, t + h0, &ytmp, &mut k[1])?;
            for i in 0..n {
                err[i] = k[1][i] - k[0][i];
            }
            let d2 = norm(&err, &y, &zeros) / h0;
            let h1 = if d1.max(d2) <= 1e-15 {
                (h0 * 1e-3).max(1e-6)
            } else {
                (0.01 / d1.max(d2)).powf(0.2)
            };
            let guess = (100.0 * h0).min(h1);
            // An overflow in the trial evaluation (e.g. an exponential contact law) gives no
            // usable estimate; the controller then starts small and grows the step ×5 per step.
            if guess > 0.0 && guess.is_finite() {
                guess
            } else {
                h0 * 1e-3
            }
        };
        // Strongly nonlinear right-hand sides can make the heuristic absurdly small (1e-58 has
        // been seen): start no smaller than 1024 ulps of the time, from where the controller
        // grows or shrinks the step as the error estimates demand.
        hs = hs
            .max(1e-10 * h)
            .max(1024.0 * f64::EPSILON * ta.abs().max(t_end.abs()))
            .min(hmax);
        let mut rejected = false;
        let mut steps: u64 = 0;
        while t < t_end {
            steps += 1;
            if steps > DP_MAX_STEPS {
                return Err(format!(
                    "adaptive integrator: more than {DP_MAX_STEPS} steps from t = {ta} to {t_end}"
                ));
            }
            let last = t + 1.01 * hs >= t_end;
            if last {
                hs = t_end - t;
            } else if hs <= 16.0 * f64::EPSILON * t.abs().max(t_end.abs()) {
                return Err(format!(
                    "adaptive integrator: step size {hs:e} too small at t = {t} \
                     (rtol = {rtol}, atol = {atol})"
                ));
            }
            let tn = if last { t_end } else { t + hs };
            for s in 1..7 {
                for i in 0..n {
                    let mut acc = 0.0;
                    for (j, kj) in k.iter().enumerate().take(s) {
                        acc += DP_A[s][j] * kj[i];
                    }
                    ytmp[i] = y[i] + hs * acc;
                }
                let ts = if DP_C[s] == 1.0 { tn } else { t + DP_C[s] * hs };
                eval(self, ts, &ytmp, &mut k[s])?;
            }
            // ytmp now holds the fifth-order solution at tn and k[6] = f(tn, ytmp).
            for i in 0..n {
                let mut acc = 0.0;
                for (j, kj) in k.iter().enumerate() {
                    acc += DP_E[j] * kj[i];
                }
                err[i] = hs * acc;
            }
            let e = norm(&err, &y, &ytmp);
            if e <= 1.0 {
                t = tn;
                std::mem::swap(&mut y, &mut ytmp);
                k.swap(0, 6);
                let mut fac = if e == 0.0 {
                    5.0
                } else {
                    (0.9 * e.powf(-0.2)).clamp(0.2, 5.0)
                };
                if rejected {
                    fac = fac.min(1.0);
                }
                if !last {
                    hs = (hs * fac).min(hmax);
                }
                rejected = false;
            } else {
                let fac = if e.is_finite() {
                    (0.9 * e.powf(-0.2)).clamp(0.2, 1.0)
                } else {
                    0.2
                };
                hs *= fac;
                rejected = true;
            }
        }
        Ok(y)
    }

    pub(crate) fn indicators(&self, t: f64, z: &mut [f64]) {
        self.model.event_indicators(&self.s.values, t, z);
    }

    /// Applies an event action at the current values and logs it.
    pub(crate) fn apply_event(&mut self, t: f64, ev: &Event) -> Result<(), String> {
        self.s.values.set_f64(TIME_VR, t);
        self.model.event(&mut self.s.values, t, ev)?;
        self.model.evaluate(&mut self.s.values, t)?;
        self.log(
            Status::Ok,
            LOG_EVENTS,
            &format!(
                "event at t = {t}: time event {}, state events {:?}",
                ev.time_event, ev.state_events
            ),
        );
        Ok(())
    }

    /// Integrates from `t0` to `t_end` with the inputs following `poly` (Taylor coefficients
    /// at `t0`). Events are handled internally, or, with `stop_at_events`, the integration
    /// stops at the first event and returns it unhandled.
    pub(crate) fn integrate(
        &mut self,
        t0: f64,
        t_end: f64,
        poly: &[[f64; 4]],
        stop_at_events: bool,
    ) -> Result<StepEnd, String> {
        let tol = 1e-12_f64.max(8.0 * f64::EPSILON * t_end.abs());
        let nz = M::NUM_EVENT_INDICATORS;
        if self.table.states.is_empty() && nz == 0 && !M::HAS_TIME_EVENTS {
            // Nothing to integrate: just evaluate at the end of the step.
            self.load(t_end, &[], t0, poly)?;
            return Ok(StepEnd {
                time: t_end,
                event: None,
            });
        }
        let mut t = t0;
        let mut x = self.states();
        let (mut za, mut zb) = (vec![0.0; nz], vec![0.0; nz]);
        self.load(t, &x, t0, poly)?;
        self.indicators(t, &mut za);
        let mut events = 0;
        loop {
            let te = if M::HAS_TIME_EVENTS {
                self.model
                    .next_time_event(&self.s.values, t)
                    .filter(|&te| te <= t_end + tol)
            } else {
                None
            };
            if let Some(te) = te.filter(|&te| te - t <= tol) {
                let _ = te;
                let ev = Event {
                    time_event: true,
                    state_events: Vec::new(),
                };
                if stop_at_events {
                    return Ok(StepEnd {
                        time: t,
                        event: Some(ev),
                    });
                }
                self.apply_event(t, &ev)?;
                x = self.states();
                self.indicators(t, &mut za);
                events += 1;
                if events > MAX_EVENTS_PER_STEP {
                    return Err(format!(
                        "more than {MAX_EVENTS_PER_STEP} events in one step"
                    ));
                }
                continue;
            }
            if t_end - t <= tol {
                break;
            }
            let target = te.map_or(t_end, |te| te.min(t_end));
            let span = target - t;
            let adaptive = !M::EXACT_STEP
                && matches!(
                    self.model.integrator(&self.s.values),
                    Integrator::DormandPrince { .. }
                );
            let n = if (M::EXACT_STEP || adaptive) && nz == 0 {
                1
            } else {
                let dt = self.model.internal_step(&self.s.values);
                if !(dt > 0.0) {
                    return Err(format!("internal step size {dt} is not positive"));
                }
                (span / dt - 1e-9).ceil().clamp(1.0, 1e9) as u64
            };
            let ta0 = t;
            let mut crossing = None;
            for i in 1..=n {
                let tb = if i == n {
                    target
                } else {
                    ta0 + span * (i as f64) / (n as f64)
                };
                let xb = self.single_step(t, &x, tb - t, t0, poly)?;
                if nz > 0 {
                    self.load(tb, &xb, t0, poly)?;
                    self.indicators(tb, &mut zb);
                    if za.iter().zip(&zb).any(|(&a, &b)| crossed(a, b)) {
                        let (te, xe, which) = self.locate(t, &x, &za, tb, t0, poly, tol)?;
                        t = te;
                        x = xe;
                        crossing = Some(which);
                        break;
                    }
                    za.copy_from_slice(&zb);
                }
                t = tb;
                x = xb;
            }
            if let Some(which) = crossing {
                self.load(t, &x, t0, poly)?;
                let ev = Event {
                    time_event: false,
                    state_events: which,
                };
                if stop_at_events {
                    return Ok(StepEnd {
                        time: t,
                        event: Some(ev),
                    });
                }
                self.apply_event(t, &ev)?;
                x = self.states();
                self.indicators(t, &mut za);
                events += 1;
                if events > MAX_EVENTS_PER_STEP {
                    return Err(format!(
                        "more than {MAX_EVENTS_PER_STEP} events in one step"
                    ));
                }
            }
        }
        self.load(t_end, &x, t0, poly)?;
        Ok(StepEnd {
            time: t_end,
            event: None,
        })
    }

    /// Bisects a zero crossing inside `[ta, tb]` down to `tol`; returns the time just after
    /// the crossing, the states there and the indicators that crossed.
    #[allow(clippy::too_many_arguments)]
    fn locate(
        &mut self,
        ta: f64,
        xa: &[f64],
        za: &[f64],
        tb: f64,
        t0: f64,
        poly: &[[f64; 4]],
        tol: f64,
    ) -> Result<(f64, Vec<f64>, Vec<usize>), String> {
        let (mut lo, mut hi) = (ta, tb);
        let mut zlo = za.to_vec();
        let mut zm = vec![0.0; za.len()];
        while hi - lo > tol {
            let tm = 0.5 * (lo + hi);
            if tm <= lo || tm >= hi {
                break;
            }
            let xm = self.single_step(ta, xa, tm - ta, t0, poly)?;
            self.load(tm, &xm, t0, poly)?;
            self.indicators(tm, &mut zm);
            if zlo.iter().zip(&zm).any(|(&a, &b)| crossed(a, b)) {
                hi = tm;
            } else {
                lo = tm;
                zlo.copy_from_slice(&zm);
            }
        }
        let xe = self.single_step(ta, xa, hi - ta, t0, poly)?;
        self.load(hi, &xe, t0, poly)?;
        self.indicators(hi, &mut zm);
        let which: Vec<usize> = (0..za.len()).filter(|&k| crossed(zlo[k], zm[k])).collect();
        Ok((hi, xe, which))
    }

    // ---- derivatives ----------------------------------------------------------------------

    /// The Jacobian d`unknowns`/d`knowns` (scalar Float64 variables): analytic where the model
    /// gives partials, central differences otherwise.
    pub(crate) fn jacobian(
        &mut self,
        func: &str,
        unknowns: &[u32],
        knowns: &[u32],
    ) -> Result<DMatrix<f64>, Status> {
        self.expect(
            func,
            &[
                Phase::Initialization,
                Phase::Step,
                Phase::Event,
                Phase::ContinuousTime,
                Phase::Terminated,
                Phase::Failed,
                Phase::TerminationRequested,
            ],
        )?;
        let f64_only = [VarType::Float64];
        let ui = self.check_types(func, unknowns, unknowns.len(), &f64_only)?;
        let ki = self.check_types(func, knowns, knowns.len(), &f64_only)?;
        for &k in &ki {
            let v = &self.table.vars[k];
            if !(v.causality == Causality::Input
                || self.table.is_state(k)
                || matches!(
                    v.causality,
                    Causality::Parameter | Causality::StructuralParameter
                ))
            {
                return Err(self.fail(
                    func,
                    format!("known '{}' is not an input, state or parameter", v.name),
                ));
            }
        }
        self.ensure_fresh(func)?;
        let t = self.s.time;
        let mut jac = DMatrix::zeros(ui.len(), ki.len());
        for (c, (&k, &kvr)) in ki.iter().zip(knowns).enumerate() {
            let mut need_fd = Vec::new();
            for (r, &uvr) in unknowns.iter().enumerate() {
                match self.model.partial(&self.s.values, t, uvr, kvr) {
                    Some(p) => jac[(r, c)] = p,
                    None => need_fd.push(r),
                }
            }
            if need_fd.is_empty() {
                continue;
            }
            let input = self.table.vars[k].causality == Causality::Input;
            let saved = self.s.values.clone();
            let x = saved.data[k].as_f64(0).unwrap_or(0.0);
            let h = 1e-6 * x.abs().max(1.0);
            let side = |delta: f64, this: &mut Self| -> Result<Vec<f64>, String> {
                if let Value::F64(v) = &mut this.s.values.data[k] {
                    v[0] = x + delta;
                }
                // In Initialization Mode a parameter also acts through `initialize`
                // (e.g. a start state computed from it); states and inputs do not.
                if this.phase == Phase::Initialization && !this.table.is_state(k) && !input {
                    this.model.initialize(&mut this.s.values, &this.cx)?;
                }
                this.model.evaluate(&mut this.s.values, t)?;
                Ok(need_fd
                    .iter()
                    .map(|&r| this.s.values.data[ui[r]].as_f64(0).unwrap_or(0.0))
                    .collect())
            };
            let plus = side(h, self);
            let minus = side(-h, self);
            self.s.values = saved;
            match (plus, minus) {
                (Ok(p), Ok(m)) => {
                    for (j, &r) in need_fd.iter().enumerate() {
                        jac[(r, c)] = (p[j] - m[j]) / (2.0 * h);
                    }
                }
                (Err(e), _) | (_, Err(e)) => {
                    return Err(self.fail(func, format!("model evaluation failed: {e}")))
                }
            }
        }
        Ok(jac)
    }

    /// Output derivatives of the given orders at the current time.
    pub(crate) fn output_derivatives(
        &mut self,
        func: &str,
        vrs: &[u32],
        orders: &[i32],
        out: &mut [f64],
    ) -> Status {
        if let Err(s) = self.expect(
            func,
            &[
                Phase::Step,
                Phase::Event,
                Phase::Terminated,
                Phase::Failed,
                Phase::TerminationRequested,
                Phase::Initialization,
            ],
        ) {
            return s;
        }
        if let Err(s) = self.ensure_fresh(func) {
            return s;
        }
        let coeffs = self.input_taylor();
        for ((&vr, &order), o) in vrs.iter().zip(orders).zip(out.iter_mut()) {
            let i = match self.lookup(func, vr) {
                Ok(i) => i,
                Err(s) => return s,
            };
            let v = &self.table.vars[i];
            if v.causality != Causality::Output || v.ty != VarType::Float64 || !v.dims.is_empty() {
                return self.fail(func, format!("'{}' is not a scalar Float64 output", v.name));
            }
            if order < 1 || order as u32 > M::MAX_OUTPUT_DERIVATIVE_ORDER {
                return self.fail(
                    func,
                    format!(
                        "order {order} for '{}' is outside 1..={}",
                        v.name,
                        M::MAX_OUTPUT_DERIVATIVE_ORDER
                    ),
                );
            }
            let inputs = Inputs {
                table: &self.table,
                t0: self.s.time,
                coeffs: &coeffs,
            };
            match self.model.output_derivative(
                &self.s.values,
                &inputs,
                self.s.time,
                vr,
                order as u32,
            ) {
                Some(d) => *o = d,
                None => {
                    return self.fail(
                        func,
                        format!(
                            "the model gives no derivative of order {order} for '{}'",
                            v.name
                        ),
                    )
                }
            }
        }
        Status::Ok
    }

    // ---- FMU states -----------------------------------------------------------------------

    /// A tag identifying this model's table inside serialized states.
    fn state_tag(&self) -> u64 {
        fnv1a(0xcbf2_9ce4_8422_2325, self.table.token.as_bytes())
    }

    /// Serializes a state (little-endian; floats bit-exact).
    pub(crate) fn serialize(&self, st: &SimState) -> Vec<u8> {
        let mut w = Vec::new();
        w.extend_from_slice(self.state_magic());
        w.extend_from_slice(&self.state_tag().to_le_bytes());
        w.extend_from_slice(&st.time.to_le_bytes());
        w.push(u8::from(st.dirty));
        for d in &st.input_derivs {
            for x in d {
                w.extend_from_slice(&x.to_le_bytes());
            }
        }
        match &st.pending {
            None => w.push(0),
            Some(ev) => {
                w.push(1);
                w.push(u8::from(ev.time_event));
                w.extend_from_slice(&(ev.state_events.len() as u64).to_le_bytes());
                for &k in &ev.state_events {
                    w.extend_from_slice(&(k as u64).to_le_bytes());
                }
            }
        }
        for v in &st.values.data {
            macro_rules! num {
                ($x:expr) => {
                    for e in $x {
                        w.extend_from_slice(&e.to_le_bytes());
                    }
                };
            }
            match v {
                Value::F32(x) => num!(x),
                Value::F64(x) => num!(x),
                Value::I8(x) => num!(x),
                Value::U8(x) => num!(x),
                Value::I16(x) => num!(x),
                Value::U16(x) => num!(x),
                Value::I32(x) => num!(x),
                Value::U32(x) => num!(x),
                Value::I64(x) => num!(x),
                Value::U64(x) => num!(x),
                Value::Bool(x) => w.extend(x.iter().map(|&b| u8::from(b))),
                Value::Str(x) => {
                    for s in x {
                        let b = s.as_bytes();
                        w.extend_from_slice(&(b.len() as u64).to_le_bytes());
                        w.extend_from_slice(b);
                    }
                }
                Value::Bin(x) => {
                    for b in x {
                        w.extend_from_slice(&(b.len() as u64).to_le_bytes());
                        w.extend_from_slice(b);
                    }
                }
            }
        }
        if self.interface == Interface::ModelExchange {
            for z in &st.z_ref {
                w.extend_from_slice(&z.to_le_bytes());
            }
            w.extend_from_slice(&st.me_last.to_le_bytes());
        }
        w
    }

    /// The first bytes of a serialized state: Co-Simulation and Model Exchange states differ.
    fn state_magic(&self) -> &'static [u8; 8] {
        match self.interface {
            Interface::CoSimulation => b"FMUKIT01",
            Interface::ModelExchange => b"FMUKITME",
            Interface::ScheduledExecution => b"FMUKITSE",
        }
    }

    /// Reads a state written by [`Instance::serialize`] of the same model.
    pub(crate) fn deserialize(&self, bytes: &[u8]) -> Result<SimState, String> {
        let mut r = Reader { b: bytes, pos: 0 };
        let magic = r.take(8)?;
        if magic != self.state_magic() {
            return Err(match magic {
                b"FMUKIT01" | b"FMUKITME" | b"FMUKITSE" => format!(
                    "the serialized state belongs to an instance of the other interface (this \
                     one is {:?})",
                    self.interface
                ),
                _ => "not a serialized state of this kit".into(),
            });
        }
        if r.u64()? != self.state_tag() {
            return Err("the serialized state belongs to a different model".into());
        }
        let time = f64::from_le_bytes(r.arr()?);
        let dirty = r.take(1)?[0] != 0;
        let mut input_derivs = Vec::with_capacity(self.table.real_inputs.len());
        for _ in 0..self.table.real_inputs.len() {
            let mut d = [0.0; 3];
            for x in &mut d {
                *x = f64::from_le_bytes(r.arr()?);
            }
            input_derivs.push(d);
        }
        let pending = if r.take(1)?[0] != 0 {
            let time_event = r.take(1)?[0] != 0;
            let n = r.len()?;
            let mut state_events = Vec::new();
            for _ in 0..n {
                let k = r.len()?;
                if k >= M::NUM_EVENT_INDICATORS {
                    return Err("bad event indicator index".into());
                }
                state_events.push(k);
            }
            Some(Event {
                time_event,
                state_events,
            })
        } else {
            None
        };
        // The current sizes: a state is restored into an instance of the same configuration.
        let mut values = self.s.values.clone();
        for v in &mut values.data {
            macro_rules! num {
                ($x:expr, $t:ty) => {
                    for e in $x.iter_mut() {
                        *e = <$t>::from_le_bytes(r.arr()?);
                    }
                };
            }
            match v {
                Value::F32(x) => num!(x, f32),
                Value::F64(x) => num!(x, f64),
                Value::I8(x) => num!(x, i8),
                Value::U8(x) => num!(x, u8),
                Value::I16(x) => num!(x, i16),
                Value::U16(x) => num!(x, u16),
                Value::I32(x) => num!(x, i32),
                Value::U32(x) => num!(x, u32),
                Value::I64(x) => num!(x, i64),
                Value::U64(x) => num!(x, u64),
                Value::Bool(x) => {
                    for e in x.iter_mut() {
                        *e = r.take(1)?[0] != 0;
                    }
                }
                Value::Str(x) => {
                    for e in x.iter_mut() {
                        let n = r.len()?;
                        *e = CString::new(r.take(n)?.to_vec())
                            .map_err(|_| "string with NUL byte".to_string())?;
                    }
                }
                Value::Bin(x) => {
                    for e in x.iter_mut() {
                        let n = r.len()?;
                        *e = r.take(n)?.to_vec();
                    }
                }
            }
        }
        let mut z_ref = vec![0.0; M::NUM_EVENT_INDICATORS];
        let mut me_last = time;
        if self.interface == Interface::ModelExchange {
            for z in &mut z_ref {
                *z = f64::from_le_bytes(r.arr()?);
            }
            me_last = f64::from_le_bytes(r.arr()?);
        }
        if r.pos != bytes.len() {
            return Err(format!("{} trailing bytes", bytes.len() - r.pos));
        }
        Ok(SimState {
            time,
            values,
            input_derivs,
            pending,
            dirty,
            z_ref,
            me_last,
        })
    }
}

/// A bounds-checked little-endian reader.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len());
        match end {
            Some(e) => {
                let s = &self.b[self.pos..e];
                self.pos = e;
                Ok(s)
            }
            None => Err("serialized state is truncated".into()),
        }
    }
    fn arr<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.arr()?))
    }
    fn len(&mut self) -> Result<usize, String> {
        usize::try_from(self.u64()?).map_err(|_| "length too large".to_string())
    }
}
