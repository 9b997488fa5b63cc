//! The safe FMI 2 / FMI 3 instance behind the [`Slave`] trait.
//!
//! [`instantiate`] picks the FMI version from the library; [`Fmi2Instance`] and
//! [`Fmi3Instance`] can also be created directly (they offer a few extras, such as
//! [`Fmi2Instance::recent_log`]). Every FMI status becomes a `Result`, the lifecycle state is
//! tracked so that calls the standard forbids are refused before they reach the FMU, and the
//! FMU's log messages are captured for error messages.
//!
//! # After `Error` and `Fatal`
//!
//! What the standards allow once a call returned `Error` or `Fatal`:
//!
//! - FMI 2.0.x §2.1.3 (Status Returned by Functions), `fmi2Error`: "The simulation cannot be
//!   continued with this FMU instance. If one of the functions returns fmi2Error, it can be
//!   tried to restart the simulation from a formerly stored FMU state by calling
//!   fmi2SetFMUstate. This can be done if the capability flag canGetAndSetFMUstate is true and
//!   fmi2GetFMUstate was called before in non-erroneous state. If not, the simulation cannot be
//!   continued and fmi2FreeInstance or fmi2Reset must be called afterwards." The table of
//!   §4.2.4 (state machine of Co-Simulation) lists in its column "error" only
//!   `fmi2GetTypesPlatform`, `fmi2GetVersion`, `fmi2SetDebugLogging`, `fmi2FreeInstance`,
//!   `fmi2Reset`, the getters (values "usable for debugging only"), the FMU state functions
//!   and the directional and output derivatives: no `fmi2Terminate`, `fmi2DoStep`, setter or
//!   `fmi2Get*Status` (those are for `stepFailed`, the state after `Discard`).
//! - FMI 2.0.x §2.1.3, `fmi2Fatal`: "the model computations are irreparably corrupted for all
//!   FMU instances. [...] It is not possible to call any other function for any of the FMU
//!   instances." The column "fatal" of the §4.2.4 table is empty: not even `fmi2FreeInstance`.
//! - FMI 3.0 §2.2.3 (Status Returned by Functions), `fmi3Error`: "The call failed. The output
//!   argument values are undefined and the simulation cannot be continued. [...] If a function
//!   returns fmi3Error, it is possible to restore a previously retrieved FMU state by calling
//!   fmi3SetFMUState. Otherwise fmi3FreeInstance or fmi3Reset must be called."
//! - FMI 3.0 §2.2.3, `fmi3Fatal`: "The state of all instances of the model is irreparably
//!   corrupted. [...] It is not allowed to call any other function for any instance of the
//!   FMU."
//! - The standards' own Co-Simulation code example (FMI 2.0 §4.2.5 "Pseudo Code Example", FMI 3.0
//!   `docs/examples/c-code/co_simulation.c`) ends with: terminate only if the last status is
//!   neither Error nor Fatal, free only if it is not Fatal.
//!
//! So an instance here, after any call of it returned `Error` (or a status outside the
//! standard's range), refuses every call with [`Error::WrongState`] except
//! [`FMI2_AFTER_ERROR`] / [`FMI3_AFTER_ERROR`]; a successful reset or restore of an FMU state
//! (saved before the error: saving is refused after it) makes it usable again. Dropping it
//! then frees it without `fmi*Terminate` and without `fmi*FreeFMUState` (`fmi*FreeInstance`
//! "frees all the allocated memory and other resources that have been allocated by the
//! functions of the FMU interface"). After any call of *any* instance of the same loaded
//! library returned `Fatal` ([`FmuLibrary::fatal`]), every call is refused, dropping the
//! instance calls nothing, and the instance is leaked on purpose: its component, the callback
//! environment the FMU holds a pointer to, and a reference to the library, which is therefore
//! never unloaded (unloading code that may still run, e.g. threads an interpreter-based FMU
//! started, is what crashes a process). The memory stays allocated until the process ends.

use std::any::Any;
use std::ffi::{c_int, c_void, CString};
use std::path::Path;
use std::sync::Arc;

use super::crash::{self, CallRecord};
use super::description::{FmiVersion, ModelDescription, ValueReference};
use super::library::FmuLibrary;
use super::slave::{Slave, SlaveState, StateId};
use crate::error::{Error, FmiStatus, Result};

mod fmi2;
mod fmi3;
mod log;
/// Lock a mutex, taking its data even when another thread panicked holding it.
pub(crate) use log::lock;

pub use fmi2::Fmi2Instance;
pub use fmi3::Fmi3Instance;

pub(crate) use self::log::log_fmu_message;
use self::log::{status_from_raw, Environment};

/// Receives every traced FMI call: `(instance name, "fmi2SetReal(vr=[0], value=[1.5]) -> OK")`.
pub type CallSink = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// Receives every log message of the FMU (in addition to the `log` crate, target "fmu").
pub type LogSink = Arc<dyn Fn(&FmuLogMessage) + Send + Sync>;

/// One log message of an FMU.
#[derive(Debug, Clone, PartialEq)]
pub struct FmuLogMessage {
    /// The instance that logged it.
    pub instance: String,
    /// The status the FMU logged with.
    pub status: FmiStatus,
    /// The log category.
    pub category: String,
    /// The message (FMI 2: already printf-formatted).
    pub message: String,
}

/// How an instance is created and observed.
#[derive(Clone)]
pub struct InstanceOptions {
    /// `loggingOn` at instantiation: ask the FMU for debug logging.
    pub logging_on: bool,
    /// Trace every FMI call (function, arguments, status), like fmusim's `--log-fmi-calls`.
    pub log_fmi_calls: bool,
    /// Where traced calls go; `None`: the `log` crate at info level, target "fmi_calls".
    pub call_sink: Option<CallSink>,
    /// An extra receiver of the FMU's log messages (they always go to the `log` crate too).
    pub log_sink: Option<LogSink>,
    /// FMI 3: instantiate with `eventModeUsed` (only honoured when the FMU `hasEventMode`).
    pub event_mode: bool,
    /// FMI 3: instantiate with `earlyReturnAllowed`.
    pub early_return: bool,
    /// Sub-steps per `do_step` when a polynomial input has to be sampled (see
    /// [`crate::fmu::PolynomialInputMode::SubSteps`]).
    pub sub_steps: usize,
    /// Force sub-stepping for polynomial inputs even when the FMU could interpolate itself.
    pub force_sub_steps: bool,
    /// `fmi*SetDebugLogging` categories to enable after instantiation (empty: leave the FMU's
    /// default).
    pub debug_categories: Vec<String>,
    /// Something the instance keeps alive until it is freed (e.g. the extracted FMU folder
    /// holding its resources).
    pub keep_alive: Option<Arc<dyn Any + Send + Sync>>,
    /// How a Model Exchange component is integrated (ignored by Co-Simulation instances,
    /// which integrate themselves).
    pub solver: crate::fmu::model_exchange::SolverOptions,
}

impl Default for InstanceOptions {
    fn default() -> Self {
        InstanceOptions {
            logging_on: false,
            log_fmi_calls: false,
            call_sink: None,
            log_sink: None,
            event_mode: false,
            early_return: false,
            sub_steps: 8,
            force_sub_steps: false,
            debug_categories: Vec::new(),
            keep_alive: None,
            solver: Default::default(),
        }
    }
}

impl std::fmt::Debug for InstanceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceOptions")
            .field("logging_on", &self.logging_on)
            .field("log_fmi_calls", &self.log_fmi_calls)
            .field("call_sink", &self.call_sink.is_some())
            .field("log_sink", &self.log_sink.is_some())
            .field("event_mode", &self.event_mode)
            .field("early_return", &self.early_return)
            .field("sub_steps", &self.sub_steps)
            .field("force_sub_steps", &self.force_sub_steps)
            .field("debug_categories", &self.debug_categories)
            .field("keep_alive", &self.keep_alive.is_some())
            .field("solver", &self.solver)
            .finish()
    }
}

/// Instantiate an FMU from its loaded library as a [`Slave`] of the library's FMI version.
///
/// `resource_dir` is the FMU's unpacked `resources` folder (if it has one).
pub fn instantiate(
    library: Arc<FmuLibrary>,
    description: Arc<ModelDescription>,
    name: &str,
    resource_dir: Option<&Path>,
    options: InstanceOptions,
) -> Result<Box<dyn Slave>> {
    Ok(match library.fmi_version() {
        FmiVersion::Fmi2 => Box::new(Fmi2Instance::new(
            library,
            description,
            name,
            resource_dir,
            options,
        )?),
        FmiVersion::Fmi3 => Box::new(Fmi3Instance::new(
            library,
            description,
            name,
            resource_dir,
            options,
        )?),
    })
}

/// What a Model Exchange instance offers beyond [`Slave`]: the calls an integrator makes.
/// Event mode goes through [`Slave::enter_event_mode`] and [`Slave::update_discrete_states`]
/// (FMI 2 `fmi2EnterEventMode`, `fmi2NewDiscreteStates`).
pub trait ModelExchangeInstance: Slave {
    /// Number of continuous states.
    fn continuous_state_count(&self) -> usize;
    /// Number of event indicators.
    fn event_indicator_count(&self) -> usize;
    /// `fmi*SetTime`.
    fn set_time(&mut self, time: f64) -> Result<()>;
    /// `fmi*SetContinuousStates`.
    fn set_continuous_states(&mut self, x: &[f64]) -> Result<()>;
    /// `fmi*GetContinuousStates`.
    fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()>;
    /// `fmi2GetDerivatives` / `fmi3GetContinuousStateDerivatives`.
    fn get_derivatives(&mut self, dx: &mut [f64]) -> Result<()>;
    /// `fmi*GetEventIndicators`.
    fn get_event_indicators(&mut self, z: &mut [f64]) -> Result<()>;
    /// `fmi*GetNominalsOfContinuousStates`.
    fn get_nominals(&mut self, nominals: &mut [f64]) -> Result<()>;
    /// `fmi*EnterContinuousTimeMode`.
    fn enter_continuous_time_mode(&mut self) -> Result<()>;
    /// `fmi*CompletedIntegratorStep` (with `noSetFMUStatePriorToCurrentPoint` true): whether
    /// the FMU asks for event mode, and whether it asks to terminate.
    fn completed_integrator_step(&mut self) -> Result<(bool, bool)>;
}

/// Instantiate a Model Exchange FMU (its library loaded for [`Interface::ModelExchange`]).
pub fn instantiate_model_exchange(
    library: Arc<FmuLibrary>,
    description: Arc<ModelDescription>,
    name: &str,
    resource_dir: Option<&Path>,
    options: InstanceOptions,
) -> Result<Box<dyn ModelExchangeInstance>> {
    if library.interface() != super::description::Interface::ModelExchange {
        return Err(Error::Internal(format!(
            "{name}: instantiate_model_exchange on a library loaded for Co-Simulation"
        )));
    }
    Ok(match library.fmi_version() {
        FmiVersion::Fmi2 => Box::new(Fmi2Instance::new(
            library,
            description,
            name,
            resource_dir,
            options,
        )?),
        FmiVersion::Fmi3 => Box::new(Fmi3Instance::new(
            library,
            description,
            name,
            resource_dir,
            options,
        )?),
    })
}

/// States in which variables may be read.
const GET_STATES: &[SlaveState] = &[
    SlaveState::InitializationMode,
    SlaveState::StepMode,
    SlaveState::EventMode,
    SlaveState::ContinuousTimeMode,
    SlaveState::Terminated,
];
/// States in which variables may be written.
const SET_STATES: &[SlaveState] = &[
    SlaveState::Instantiated,
    SlaveState::ConfigurationMode,
    SlaveState::InitializationMode,
    SlaveState::StepMode,
    SlaveState::EventMode,
    SlaveState::ContinuousTimeMode,
];
/// Every state (FMU state get/set, reset).
const ANY_STATE: &[SlaveState] = &[
    SlaveState::Instantiated,
    SlaveState::ConfigurationMode,
    SlaveState::InitializationMode,
    SlaveState::StepMode,
    SlaveState::EventMode,
    SlaveState::ContinuousTimeMode,
    SlaveState::Terminated,
];

/// The FMI 2 functions still called after an `Error` (FMI 2.0 §2.1.3 and the "error" column
/// of the §4.2.4 table): reset, restoring an FMU state saved before the error, freeing saved
/// states, debug logging, and `fmi2FreeInstance` (on drop). The getters the table also allows
/// return values "usable for debugging only" and are refused, so that they are never taken
/// for results; so is `fmi2GetFMUstate` (a restart needs a state got "in non-erroneous
/// state").
pub const FMI2_AFTER_ERROR: &[&str] = &[
    "fmi2Reset",
    "fmi2SetFMUstate",
    "fmi2FreeFMUstate",
    "fmi2SetDebugLogging",
];

/// The FMI 3 functions still called after an `Error` (FMI 3.0 §2.2.3): `fmi3SetFMUState` to a
/// state retrieved before the error, `fmi3Reset`, and `fmi3FreeInstance` (on drop).
pub const FMI3_AFTER_ERROR: &[&str] = &["fmi3Reset", "fmi3SetFMUState"];

/// The owner of the heap-allocated callback environment (freed on drop, which the instance
/// types arrange to happen after `fmi*FreeInstance`, or never once leaked).
struct EnvBox {
    pointer: *mut Environment,
    leaked: bool,
}

impl EnvBox {
    fn new(env: Environment) -> EnvBox {
        EnvBox {
            pointer: Box::into_raw(Box::new(env)),
            leaked: false,
        }
    }
    fn get(&self) -> &Environment {
        // SAFETY: the pointer comes from Box::into_raw and is freed only in Drop.
        unsafe { &*self.pointer }
    }
    fn as_ptr(&self) -> *mut c_void {
        self.pointer.cast()
    }
    /// Never free the environment (the FMU keeps a pointer to it and was not freed).
    fn leak(&mut self) {
        self.leaked = true;
    }
}

impl Drop for EnvBox {
    fn drop(&mut self) {
        if !self.leaked {
            // SAFETY: allocated by Box::into_raw in `new`, freed exactly once here.
            drop(unsafe { Box::from_raw(self.pointer) });
        }
    }
}

/// Counts the instance on its library for as long as it lives.
struct InstanceSlot(Arc<FmuLibrary>);

impl Drop for InstanceSlot {
    fn drop(&mut self) {
        self.0.unregister_instance();
    }
}

/// The Float64 values last set on an instance, so that setting the same bits again costs no FMI
/// call: a master sets a coupled input at the communication point (so that the outputs it
/// feeds through are current) and again before the next step, with the same value when the
/// input is held. An FMU keeps a value set until the next set of that variable; only a state
/// restore or a reset changes it otherwise, and both forget what is known.
#[derive(Debug, Default)]
pub(crate) struct KnownFloat64 {
    /// (value reference, bits of the value), sorted by value reference.
    entries: Vec<(ValueReference, u64)>,
}

impl KnownFloat64 {
    /// Whether the FMU holds exactly these values already (scalars only).
    pub(crate) fn holds(&self, vrs: &[ValueReference], values: &[f64]) -> bool {
        !vrs.is_empty()
            && vrs.len() == values.len()
            && vrs.iter().zip(values).all(|(vr, value)| {
                self.entries
                    .binary_search_by_key(vr, |e| e.0)
                    .is_ok_and(|i| self.entries[i].1 == value.to_bits())
            })
    }

    /// After a successful set: the FMU holds these values (an FMI 3 array set, with more values
    /// than value references, is not tracked: its variables are forgotten).
    pub(crate) fn record(&mut self, vrs: &[ValueReference], values: &[f64]) {
        let scalars = vrs.len() == values.len();
        for (k, &vr) in vrs.iter().enumerate() {
            match (self.entries.binary_search_by_key(&vr, |e| e.0), scalars) {
                (Ok(i), true) => self.entries[i].1 = values[k].to_bits(),
                (Ok(i), false) => {
                    self.entries.remove(i);
                }
                (Err(i), true) => self.entries.insert(i, (vr, values[k].to_bits())),
                (Err(_), false) => {}
            }
        }
    }

    /// After a state restore or a reset: nothing is known.
    pub(crate) fn forget(&mut self) {
        self.entries.clear();
    }

    /// After a set of `vrs` to `values` that ended in `result`: recorded when it succeeded;
    /// after a failed one the FMU's values are unknown.
    fn note(&mut self, result: &Result<()>, vrs: &[ValueReference], values: &[f64]) {
        match result {
            Ok(()) => self.record(vrs, values),
            Err(_) => self.forget(),
        }
    }
}

/// What the FMI 2 and FMI 3 instances share: identity, lifecycle state, call accounting,
/// tracing and status mapping.
struct Core {
    name: String,
    description: Arc<ModelDescription>,
    /// The lifecycle state (kept through an `Error`, for a restore of a deserialised state).
    state: SlaveState,
    /// The call that returned `Error`, while the instance is in FMI's error state (until a
    /// successful reset or restore); `Fatal` is kept on the library, for all its instances.
    error: Option<&'static str>,
    calls: u64,
    trace: bool,
    /// Log sequence number before the most recent FMI call.
    call_log_mark: u64,
    /// Log sequence number after the most recent FMI call.
    log_mark: u64,
    env: EnvBox,
    slot: InstanceSlot,
    /// The Float64 values the FMU holds because cosimo set them.
    known: KnownFloat64,
    /// What the crash handler reports if the FMU crashes in a call.
    crash: Box<CallRecord>,
    /// Last: its `keep_alive` (e.g. the extracted folder) goes after the library reference.
    options: InstanceOptions,
}

impl Core {
    fn new(
        library: Arc<FmuLibrary>,
        description: Arc<ModelDescription>,
        name: &str,
        options: InstanceOptions,
    ) -> Result<Core> {
        if description.fmi_version != library.fmi_version() {
            return Err(Error::Unsupported {
                instance: name.to_string(),
                message: format!(
                    "the model description is FMI {} but the library was loaded as FMI {}",
                    description.fmi_version,
                    library.fmi_version()
                ),
            });
        }
        library.register_instance(name)?;
        let slot = InstanceSlot(library);
        let env = EnvBox::new(Environment::new(
            name,
            description.fmi_version,
            options.log_sink.clone(),
            options.log_fmi_calls,
            options.call_sink.clone(),
        ));
        Ok(Core {
            name: name.to_string(),
            description,
            trace: options.log_fmi_calls,
            options,
            state: SlaveState::Instantiated,
            error: None,
            calls: 0,
            call_log_mark: 0,
            log_mark: 0,
            env,
            slot,
            known: KnownFloat64::default(),
            crash: CallRecord::component(name),
        })
    }

    /// The FMU's `function` is about to be called: a crash until the call is recorded
    /// ([`Core::record`], [`Core::trace_plain`]) is reported as a crash in it.
    #[inline]
    fn enter(&self, function: &'static str) {
        self.crash.enter(function);
    }

    fn env(&self) -> &Environment {
        self.env.get()
    }

    fn library(&self) -> &Arc<FmuLibrary> {
        &self.slot.0
    }

    fn version(&self) -> FmiVersion {
        self.description.fmi_version
    }

    fn co_simulation(&self) -> Option<&super::description::CoSimulation> {
        self.description.co_simulation.as_ref()
    }

    /// The state [`Slave::state`] reports: Fatal, Error, or the lifecycle state.
    fn reported_state(&self) -> SlaveState {
        if self.fatal().is_some() {
            SlaveState::Fatal
        } else if self.error.is_some() {
            SlaveState::Error
        } else {
            self.state
        }
    }

    /// The call that returned `Fatal` on any instance of this instance's library, if one did.
    fn fatal(&self) -> Option<&str> {
        self.library().fatal()
    }

    /// The section of the standard that says what may follow Error and Fatal.
    fn status_section(&self) -> &'static str {
        match self.version() {
            FmiVersion::Fmi2 => "FMI 2.0 §2.1.3",
            FmiVersion::Fmi3 => "FMI 3.0 §2.2.3",
        }
    }

    /// Refuse `function` after a `Fatal` (of any instance of the library), and after an
    /// `Error` unless the standard still allows it (see the module documentation).
    fn callable(&self, function: &'static str) -> Result<()> {
        if let Some(fatal) = self.fatal() {
            return Err(Error::WrongState {
                instance: self.name.clone(),
                function,
                state: format!(
                    "Fatal ({fatal} returned Fatal; {} allows no further call to any instance \
                     of this FMU, not even freeing it)",
                    self.status_section()
                ),
            });
        }
        if let Some(failed) = self.error {
            let (allowed, reset, restore) = match self.version() {
                FmiVersion::Fmi2 => (FMI2_AFTER_ERROR, "fmi2Reset", "fmi2SetFMUstate"),
                FmiVersion::Fmi3 => (FMI3_AFTER_ERROR, "fmi3Reset", "fmi3SetFMUState"),
            };
            if !allowed.contains(&function) {
                return Err(Error::WrongState {
                    instance: self.name.clone(),
                    function,
                    state: format!(
                        "Error ({failed} returned Error; {} then allows only {reset}, \
                         {restore} to a state saved before, or freeing the instance)",
                        self.status_section()
                    ),
                });
            }
        }
        Ok(())
    }

    /// Refuse `function` unless the instance is in one of `allowed` and [`Core::callable`].
    /// Inlined: every FMI call of a step passes here, and the answer is almost always yes.
    #[inline]
    fn require(&self, function: &'static str, allowed: &[SlaveState]) -> Result<()> {
        if self.error.is_none() && allowed.contains(&self.state) && self.fatal().is_none() {
            return Ok(());
        }
        self.refuse(function, allowed)
    }

    /// [`Core::require`]'s error: why `function` may not be called now.
    #[cold]
    fn refuse(&self, function: &'static str, allowed: &[SlaveState]) -> Result<()> {
        self.callable(function)?;
        if allowed.contains(&self.state) {
            Ok(())
        } else {
            Err(Error::WrongState {
                instance: self.name.clone(),
                function,
                state: format!("{:?}", self.state),
            })
        }
    }

    /// Account for one FMI call: count it, trace it (the arguments are formatted only when
    /// tracing is on), note a fatal status, log a warning; returns the decoded status.
    #[inline]
    fn record(
        &mut self,
        function: &'static str,
        raw: c_int,
        args: impl FnOnce() -> String,
    ) -> FmiStatus {
        crash::leave();
        self.calls += 1;
        let status = status_from_raw(raw, self.version());
        let seq = self.env().log_seq();
        self.call_log_mark = std::mem::replace(&mut self.log_mark, seq);
        if self.trace {
            self.env()
                .emit_call(&format!("{function}({}) -> {status}", args()));
        }
        match status {
            FmiStatus::Ok => {}
            FmiStatus::Warning => {
                ::log::warn!("{}: {function} returned Warning", self.name);
            }
            _ => self.note_failure(function, status),
        }
        status
    }

    /// Enter FMI's error state after `Error` (or a status outside the standard's range), or
    /// poison the library after `Fatal`.
    fn note_failure(&mut self, function: &'static str, status: FmiStatus) {
        match status {
            FmiStatus::Fatal => self.library().mark_fatal(&self.name, function),
            FmiStatus::Error | FmiStatus::Unknown(_) => {
                self.error.get_or_insert(function);
            }
            FmiStatus::Ok | FmiStatus::Warning | FmiStatus::Discard | FmiStatus::Pending => {}
        }
    }

    /// A reset or a restored FMU state succeeded: the instance has left the error state.
    fn recovered(&mut self) {
        self.error = None;
    }

    /// Whether `fmi*Terminate` and `fmi*FreeFMUState` may still be called on drop: neither is
    /// allowed after an `Error` or a `Fatal`.
    fn clean_up_allowed(&self) -> bool {
        self.error.is_none() && self.fatal().is_none()
    }

    /// After a `Fatal`, on drop: call nothing and keep everything the FMU may still point to
    /// (the callback environment, and the library, which is never unloaded). `free_instance`
    /// names the call that is not made, for the call trace.
    fn leak(&mut self, free_instance: &str) {
        let fatal = self.fatal().unwrap_or("an earlier call").to_string();
        std::mem::forget(Arc::clone(self.library()));
        self.env.leak();
        let note = format!(
            "{free_instance} not called: {fatal} returned Fatal, after which {} allows no \
             further call; the instance stays allocated until the process ends",
            self.status_section()
        );
        if self.trace {
            self.env().emit_call(&note);
        }
        ::log::debug!("{}: {note}", self.name);
    }

    /// [`Core::record`], then OK and Warning are success and anything else an error.
    #[inline]
    fn check(
        &mut self,
        function: &'static str,
        raw: c_int,
        args: impl FnOnce() -> String,
    ) -> Result<()> {
        match self.record(function, raw, args) {
            FmiStatus::Ok | FmiStatus::Warning => Ok(()),
            status => Err(self.fmi_error(function, status)),
        }
    }

    /// Trace a call that returns no status (instantiate, free).
    fn trace_plain(&mut self, line: impl FnOnce() -> String) {
        crash::leave();
        self.calls += 1;
        if self.trace {
            self.env().emit_call(&line());
        }
    }

    /// The FMU's log messages of the most recent call (or its recent ones if that call logged
    /// nothing).
    fn call_log(&self) -> Vec<String> {
        self.env().messages_since(self.call_log_mark)
    }

    fn fmi_error(&self, function: &'static str, status: FmiStatus) -> Error {
        Error::Fmi {
            instance: self.name.clone(),
            function,
            status,
            log: self.call_log(),
        }
    }

    fn unsupported(&self, message: impl Into<String>) -> Error {
        Error::Unsupported {
            instance: self.name.clone(),
            message: message.into(),
        }
    }

    fn missing_function(&self, function: &str) -> Error {
        self.unsupported(format!("the FMU's binary does not export {function}"))
    }

    fn length_mismatch(&self, function: &str, what: &str, expected: usize, got: usize) -> Error {
        Error::Internal(format!(
            "{}: {function}: expected {expected} {what}, got {got}",
            self.name
        ))
    }

    fn check_len(&self, function: &str, what: &str, expected: usize, got: usize) -> Result<()> {
        if expected == got {
            Ok(())
        } else {
            Err(self.length_mismatch(function, what, expected, got))
        }
    }

    /// Total call count, including calls made by callbacks.
    fn call_count(&self) -> u64 {
        self.calls
            + self
                .env()
                .callback_calls
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Check a polynomial input request: coefficient count and Float64 variables.
    fn check_polynomial(&self, vrs: &[ValueReference], order: usize, taylor: &[f64]) -> Result<()> {
        let expected = vrs.len().saturating_mul(order.saturating_add(1));
        self.check_len(
            "set_input_polynomial",
            "Taylor coefficients",
            expected,
            taylor.len(),
        )?;
        for &vr in vrs {
            let Some(var) = self
                .description
                .variables
                .iter()
                .find(|v| v.value_reference == vr)
            else {
                continue; // unknown references are the FMU's to reject
            };
            if var.var_type != super::description::VariableType::Float64 {
                return Err(Error::Internal(format!(
                    "{}: set_input_polynomial: variable '{}' is not a Float64 variable",
                    self.name, var.name
                )));
            }
        }
        Ok(())
    }

    /// Log (once per instance) that sub-steps degrade to one step because the FMU cannot vary
    /// its communication step size.
    fn sub_step_count(&self, warned: &mut bool) -> usize {
        let variable = self
            .co_simulation()
            .is_some_and(|cs| cs.can_handle_variable_communication_step_size);
        if variable {
            self.options.sub_steps.max(1)
        } else {
            if !*warned {
                *warned = true;
                ::log::warn!(
                    "{}: the FMU cannot handle a variable communication step size; polynomial \
                     inputs are held constant over each step (one sub-step)",
                    self.name
                );
            }
            1
        }
    }
}

/// Polynomial inputs for the next step: per input, the Taylor coefficients
/// `u(t0 + tau) = sum_j c_j tau^j / j!`.
#[derive(Debug, Default)]
pub(crate) struct Polynomial {
    vrs: Vec<ValueReference>,
    starts: Vec<usize>,
    orders: Vec<usize>,
    coefficients: Vec<f64>,
    values: Vec<f64>,
}

/// The sub-steps over which polynomial inputs are held
/// ([`crate::fmu::PolynomialInputMode::SubSteps`]) in
/// a step from `t` by `h`: `(start, length, where to evaluate the polynomial from t)` of the
/// `n` equal sub-steps, each holding the polynomial at its midpoint. A step that is a part of
/// the macro step `span` takes the pieces of the whole step's sub-steps that lie in it, each
/// still holding the value at its whole sub-step's midpoint.
pub(crate) struct HeldSubSteps {
    t: f64,
    h: f64,
    n: usize,
    i: usize,
    span: Option<(f64, f64)>,
}

impl HeldSubSteps {
    pub(crate) fn new(t: f64, h: f64, n: usize, span: Option<(f64, f64)>) -> HeldSubSteps {
        // Only a span the step lies in, and that is not the step itself.
        let tolerance = h.abs() * 1e-9;
        let span = span.filter(|&(start, end)| {
            start <= t + tolerance
                && t + h <= end + tolerance
                && (start != t || end != t + h)
                && end > start
        });
        HeldSubSteps {
            t,
            h,
            n: n.max(1),
            i: 0,
            span,
        }
    }
}

impl Iterator for HeldSubSteps {
    type Item = (f64, f64, f64);

    fn next(&mut self) -> Option<(f64, f64, f64)> {
        let (t, h, n) = (self.t, self.h, self.n);
        let Some((start, end)) = self.span else {
            if self.i >= n {
                return None;
            }
            let i = self.i;
            self.i += 1;
            let sub = h / n as f64;
            let t_i = t + i as f64 * sub;
            let h_i = if i + 1 == n { t + h - t_i } else { sub };
            return Some((t_i, h_i, t_i - t + 0.5 * h_i));
        };
        let sub = (end - start) / n as f64;
        let eps = (end - start) * 1e-12;
        while self.i < n {
            let i = self.i;
            self.i += 1;
            let a = start + i as f64 * sub;
            let b = if i + 1 == n {
                end
            } else {
                start + (i + 1) as f64 * sub
            };
            let from = a.max(t);
            let to = if b >= t + h { t + h } else { b };
            if to - from > eps {
                return Some((from, to - from, a + 0.5 * (b - a) - t));
            }
        }
        None
    }
}

impl Polynomial {
    fn is_empty(&self) -> bool {
        self.vrs.is_empty()
    }

    fn clear(&mut self) {
        self.vrs.clear();
        self.starts.clear();
        self.orders.clear();
        self.coefficients.clear();
        self.values.clear();
    }

    fn max_order(&self) -> usize {
        self.orders.iter().copied().max().unwrap_or(0)
    }

    /// Add (or replace) inputs `vrs`, each with `order + 1` coefficients from `taylor`.
    fn insert(&mut self, vrs: &[ValueReference], order: usize, taylor: &[f64]) {
        let n = order + 1;
        for (i, &vr) in vrs.iter().enumerate() {
            self.remove(vr);
            self.vrs.push(vr);
            self.orders.push(order);
            self.starts.push(self.coefficients.len());
            self.coefficients
                .extend_from_slice(taylor.get(i * n..(i + 1) * n).unwrap_or(&[]));
        }
    }

    /// Forget the polynomial of input `vr`, if any.
    fn remove(&mut self, vr: ValueReference) {
        let Some(i) = self.vrs.iter().position(|&v| v == vr) else {
            return;
        };
        let start = self.starts[i];
        let len = self.orders[i] + 1;
        self.coefficients.drain(start..start + len);
        self.vrs.remove(i);
        self.orders.remove(i);
        self.starts.remove(i);
        for s in &mut self.starts[i..] {
            *s -= len;
        }
    }

    fn remove_all(&mut self, vrs: &[ValueReference]) {
        if !self.is_empty() {
            for &vr in vrs {
                self.remove(vr);
            }
        }
    }

    /// Evaluate every input at `tau` after the step start.
    fn evaluate(&mut self, tau: f64) -> (&[ValueReference], &[f64]) {
        self.values.clear();
        for (i, &start) in self.starts.iter().enumerate() {
            let coefficients = &self.coefficients[start..start + self.orders[i] + 1];
            let mut factor = 1.0;
            let mut value = 0.0;
            for (j, c) in coefficients.iter().enumerate() {
                value += c * factor;
                factor *= tau / (j + 1) as f64;
            }
            self.values.push(value);
        }
        (&self.vrs, &self.values)
    }

    /// The `k`-th Taylor coefficient (`k`-th derivative at the step start) of every input of
    /// order >= `k`, as (value references, values) written into the given buffers.
    fn derivatives(&self, k: usize, vrs: &mut Vec<ValueReference>, values: &mut Vec<f64>) {
        vrs.clear();
        values.clear();
        for (i, &vr) in self.vrs.iter().enumerate() {
            if self.orders[i] >= k {
                vrs.push(vr);
                values.push(self.coefficients[self.starts[i] + k]);
            }
        }
    }
}

/// Saved FMU states, indexed by [`StateId`]; freed slots are reused.
#[derive(Debug, Default)]
struct StateTable {
    /// The FMU's state pointer and the lifecycle state it was saved in (None: deserialised).
    slots: Vec<Option<(*mut c_void, Option<SlaveState>)>>,
}

impl StateTable {
    fn insert(&mut self, pointer: *mut c_void, state: Option<SlaveState>) -> StateId {
        if let Some(i) = self.slots.iter().position(Option::is_none) {
            self.slots[i] = Some((pointer, state));
            StateId(i)
        } else {
            self.slots.push(Some((pointer, state)));
            StateId(self.slots.len() - 1)
        }
    }

    fn get(&self, id: StateId) -> Option<(*mut c_void, Option<SlaveState>)> {
        self.slots.get(id.0).copied().flatten()
    }

    fn set(&mut self, id: StateId, pointer: *mut c_void, state: Option<SlaveState>) {
        if let Some(slot) = self.slots.get_mut(id.0) {
            *slot = Some((pointer, state));
        }
    }

    fn take(&mut self, id: StateId) -> Option<*mut c_void> {
        self.slots
            .get_mut(id.0)
            .and_then(Option::take)
            .map(|(p, _)| p)
    }

    fn drain(&mut self) -> Vec<*mut c_void> {
        self.slots.drain(..).flatten().map(|(p, _)| p).collect()
    }
}

fn unknown_state(instance: &str, id: StateId) -> Error {
    Error::Internal(format!(
        "{instance}: state {} is not a saved state of this instance (never saved or already freed)",
        id.0
    ))
}

/// A C string from a Rust string given by the user (interior NUL is a usage error).
fn c_string(instance: &str, what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::Usage(format!(
            "{instance}: {what} contains a NUL character: {s:?}"
        ))
    })
}

/// `file:///...` URI of a directory, with a trailing slash (FMI 2 `fmuResourceLocation`).
pub(crate) fn file_uri(dir: &Path) -> String {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let bytes = absolute.as_os_str().as_encoded_bytes();
    let mut path = String::with_capacity(bytes.len() + 8);
    for &b in bytes {
        match b {
            b'\\' => path.push('/'),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' | b':' => {
                path.push(b as char)
            }
            _ => path.push_str(&format!("%{b:02X}")),
        }
    }
    if !path.ends_with('/') {
        path.push('/');
    }
    if path.starts_with('/') {
        format!("file://{path}")
    } else {
        format!("file:///{path}")
    }
}

/// Native path of a directory with a trailing separator (FMI 3 `resourcePath`).
pub(crate) fn dir_with_separator(dir: &Path) -> Vec<u8> {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut bytes = absolute.as_os_str().as_encoded_bytes().to_vec();
    let separator = std::path::MAIN_SEPARATOR as u8;
    if bytes.last() != Some(&separator) && bytes.last() != Some(&b'/') {
        bytes.push(separator);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Absolute (start, end, midpoint where the polynomial is held) of each sub-step.
    fn held(t: f64, h: f64, span: Option<(f64, f64)>) -> Vec<(f64, f64, f64)> {
        HeldSubSteps::new(t, h, 8, span)
            .map(|(start, length, tau)| (start, start + length, t + tau))
            .collect()
    }

    #[test]
    fn a_whole_step_takes_eight_sub_steps_held_at_their_midpoints() {
        let steps = held(1.0, 0.5, None);
        assert_eq!(steps.len(), 8);
        assert_eq!(steps[0], (1.0, 1.0625, 1.03125));
        assert_eq!(steps[7].1, 1.5);
        // A span that is the step itself changes nothing.
        assert_eq!(held(1.0, 0.5, Some((1.0, 1.5))), steps);
        // Nor does a span the step does not lie in (a stale one).
        assert_eq!(held(1.0, 0.5, Some((0.0, 0.5))), steps);
    }

    #[test]
    fn the_parts_of_a_macro_step_hold_the_whole_steps_sub_step_values() {
        let whole = held(1.0, 0.5, None);
        let span = Some((1.0, 1.5));
        // Three parts, cut inside the second and the sixth sub-step.
        let cuts = [1.0, 1.1, 1.35, 1.5];
        let mut parts = Vec::new();
        for w in cuts.windows(2) {
            parts.extend(held(w[0], w[1] - w[0], span));
        }
        assert_eq!(parts.len(), 10, "{parts:?}");
        for &(start, end, midpoint) in &parts {
            let i = whole
                .iter()
                .position(|&(a, b, _)| a <= start + 1e-15 && end <= b + 1e-15)
                .unwrap_or_else(|| panic!("{start}..{end} lies in a whole sub-step"));
            assert!((midpoint - whole[i].2).abs() < 1e-15, "{parts:?}");
        }
        // Together they cover the step without gaps.
        for pair in parts.windows(2) {
            assert_eq!(pair[0].1, pair[1].0);
        }
        assert_eq!((parts[0].0, parts[9].1), (1.0, 1.5));
    }

    #[test]
    fn known_values_are_the_bits_last_set() {
        let mut known = KnownFloat64::default();
        assert!(!known.holds(&[3], &[1.0]));
        known.record(&[9, 3], &[2.0, 1.0]);
        assert!(known.holds(&[3, 9], &[1.0, 2.0]));
        // Equal as numbers is not enough: the bits must be the ones set.
        known.record(&[4], &[0.0]);
        assert!(!known.holds(&[4], &[-0.0]));
        assert!(!known.holds(&[3, 5], &[1.0, 0.0]));
        known.record(&[3], &[1.5]);
        assert!(!known.holds(&[3], &[1.0]));
        // An array set (more values than references) forgets its variables.
        known.record(&[9], &[1.0, 2.0]);
        assert!(!known.holds(&[9], &[2.0]));
        assert!(!known.holds(&[], &[]));
        known.forget();
        assert!(!known.holds(&[3], &[1.5]));
    }

    #[test]
    fn polynomial_evaluates_taylor_series_and_forgets_inputs() {
        let mut p = Polynomial::default();
        // u0 = 1 + 2 tau + 3 tau^2 / 2 ; u1 = 5 - tau
        p.insert(&[7, 9], 2, &[1.0, 2.0, 3.0, 5.0, -1.0, 0.0]);
        let (vrs, values) = p.evaluate(2.0);
        assert_eq!(vrs, &[7, 9]);
        assert_eq!(values, &[1.0 + 4.0 + 6.0, 3.0]);
        p.insert(&[7], 0, &[4.0]);
        let (vrs, values) = p.evaluate(2.0);
        assert_eq!(vrs, &[9, 7]);
        assert_eq!(values, &[3.0, 4.0]);
        assert_eq!(p.max_order(), 2);
        p.remove_all(&[9]);
        assert_eq!(p.max_order(), 0);
        let (mut dv, mut dval) = (Vec::new(), Vec::new());
        p.derivatives(0, &mut dv, &mut dval);
        assert_eq!((dv.as_slice(), dval.as_slice()), (&[7u32][..], &[4.0][..]));
        p.clear();
        assert!(p.is_empty());
    }

    #[test]
    fn state_table_reuses_slots() {
        let memory = [0u8; 3];
        let p = |i: usize| memory[i..].as_ptr().cast_mut().cast::<c_void>();
        let mut t = StateTable::default();
        let a = t.insert(p(0), None);
        let b = t.insert(p(1), Some(SlaveState::StepMode));
        assert_eq!((a, b), (StateId(0), StateId(1)));
        assert_eq!(t.take(a), Some(p(0)));
        assert_eq!(t.take(a), None);
        assert_eq!(t.insert(p(2), None), StateId(0));
        assert_eq!(t.drain().len(), 2);
    }

    #[test]
    fn resource_locations() {
        let uri = file_uri(Path::new("/tmp/my fmu/resources"));
        assert_eq!(uri, "file:///tmp/my%20fmu/resources/");
        let path = dir_with_separator(Path::new("/tmp/x/resources"));
        assert_eq!(path, b"/tmp/x/resources/");
    }

    #[test]
    fn statuses_decode_per_version() {
        assert_eq!(status_from_raw(5, FmiVersion::Fmi2), FmiStatus::Pending);
        assert_eq!(status_from_raw(5, FmiVersion::Fmi3), FmiStatus::Unknown(5));
        assert_eq!(
            status_from_raw(-1, FmiVersion::Fmi2),
            FmiStatus::Unknown(-1)
        );
    }
}
