//! The FMI 2.0 instance: Co-Simulation, or Model Exchange (driven by
//! [`crate::fmu::model_exchange`]).

use std::ffi::{c_char, c_int, c_void};
use std::mem::ManuallyDrop;
use std::path::Path;
use std::sync::Arc;

use super::log::{c_str_lossy, install_fmi2_fallback_sink};
use super::{
    c_string, file_uri, unknown_state, Core, HeldSubSteps, InstanceOptions, Polynomial, StateTable,
    ANY_STATE, GET_STATES, SET_STATES,
};
use crate::error::{Error, FmiStatus, Result};
use crate::fmu::description::{Interface, ModelDescription, ValueReference};
use crate::fmu::ffi::fmi2::*;
use crate::fmu::ffi::{calloc, free, Fmi2Functions};
use crate::fmu::library::{FmiFunctions, FmuLibrary};
use crate::fmu::slave::{
    DiscreteStatesUpdate, PolynomialInputMode, Slave, SlaveState, StateId, StepResult,
};

/// An FMI 2.0 Co-Simulation or Model Exchange instance (as its library was loaded).
pub struct Fmi2Instance {
    core: Core,
    /// Instantiated as `fmi2ModelExchange`.
    model_exchange: bool,
    f: Arc<Fmi2Functions>,
    component: fmi2Component,
    /// The FMU may keep this pointer for its whole life: boxed, freed after fmi2FreeInstance
    /// (never after a Fatal, when the instance is not freed).
    callbacks: ManuallyDrop<Box<fmi2CallbackFunctions>>,
    states: StateTable,
    /// Polynomial inputs sampled at sub-step starts during the next `do_step`.
    sub_step_inputs: Polynomial,
    /// The macro step the next steps are parts of ([`Slave::set_macro_step`]).
    macro_step: Option<(f64, f64)>,
    /// Polynomial inputs handed to the FMU as input derivatives for the next `do_step`.
    derivative_inputs: Polynomial,
    /// Inputs whose derivatives are non-zero inside the FMU, with their order.
    derivatives_in_fmu: Vec<(ValueReference, usize)>,
    /// Every input (and highest order) ever given derivatives: after a state restore any of
    /// them may hold non-zero derivatives again.
    derivatives_ever: Vec<(ValueReference, usize)>,
    sub_step_warned: bool,
    int_scratch: Vec<fmi2Integer>,
    vr_scratch: Vec<ValueReference>,
    real_scratch: Vec<f64>,
}

// SAFETY: the raw pointers (component, FMU states, callback environment) are only used through
// `&mut self` (or `&self` for reads of Rust data), so one thread at a time calls into the FMU;
// FMI allows an instance to be used from different threads as long as calls do not overlap.
unsafe impl Send for Fmi2Instance {}

impl Fmi2Instance {
    /// `fmi2Instantiate` (Co-Simulation, invisible) on `library`.
    pub fn new(
        library: Arc<FmuLibrary>,
        description: Arc<ModelDescription>,
        name: &str,
        resource_dir: Option<&Path>,
        options: InstanceOptions,
    ) -> Result<Fmi2Instance> {
        let FmiFunctions::Fmi2(f) = library.functions().clone() else {
            return Err(Error::Unsupported {
                instance: name.to_string(),
                message: "the library is not an FMI 2 library".into(),
            });
        };
        install_fmi2_fallback_sink();
        let mut core = Core::new(library, description, name, options)?;
        let c_name = c_string(name, "the instance name", name)?;
        let guid = c_string(name, "the GUID", &core.description.instantiation_token)?;
        let uri = resource_dir.map(file_uri);
        let c_uri = uri
            .as_deref()
            .map(|u| c_string(name, "the resource location", u))
            .transpose()?;
        let callbacks = Box::new(fmi2CallbackFunctions {
            logger: Some(cosimo_fmi2_logger),
            allocateMemory: Some(calloc),
            freeMemory: Some(free),
            stepFinished: None,
            componentEnvironment: core.env.as_ptr(),
        });
        let logging_on = core.options.logging_on;
        let model_exchange = core.library().interface() == Interface::ModelExchange;
        let (fmu_type, type_name) = if model_exchange {
            (fmi2ModelExchange, "fmi2ModelExchange")
        } else {
            (fmi2CoSimulation, "fmi2CoSimulation")
        };
        core.enter("fmi2Instantiate");
        // SAFETY: all strings are NUL-terminated and live across the call; the callbacks and
        // the environment they point to outlive the component.
        let component = unsafe {
            (f.instantiate)(
                c_name.as_ptr(),
                fmu_type,
                guid.as_ptr(),
                c_uri.as_ref().map_or(std::ptr::null(), |u| u.as_ptr()),
                &*callbacks,
                fmi2False,
                fmi2_bool(logging_on),
            )
        };
        let description = Arc::clone(&core.description);
        core.trace_plain(|| {
            format!(
                "fmi2Instantiate(instanceName={name:?}, fmuType={type_name}, fmuGUID={:?}, \
                 fmuResourceLocation={uri:?}, visible=false, loggingOn={logging_on}) -> {component:?}",
                description.instantiation_token
            )
        });
        if component.is_null() {
            return Err(Error::Fmi {
                instance: name.to_string(),
                function: "fmi2Instantiate",
                status: FmiStatus::Error,
                log: core.env().messages(),
            });
        }
        let mut instance = Fmi2Instance {
            core,
            model_exchange,
            f,
            component,
            callbacks: ManuallyDrop::new(callbacks),
            states: StateTable::default(),
            sub_step_inputs: Polynomial::default(),
            macro_step: None,
            derivative_inputs: Polynomial::default(),
            derivatives_in_fmu: Vec::new(),
            derivatives_ever: Vec::new(),
            sub_step_warned: false,
            int_scratch: Vec::new(),
            vr_scratch: Vec::new(),
            real_scratch: Vec::new(),
        };
        if !instance.core.options.debug_categories.is_empty() {
            let categories = instance.core.options.debug_categories.clone();
            instance.set_debug_logging(true, &categories)?;
        }
        Ok(instance)
    }

    /// `fmi2SetDebugLogging`.
    pub fn set_debug_logging(&mut self, logging_on: bool, categories: &[String]) -> Result<()> {
        const F: &str = "fmi2SetDebugLogging";
        self.core.require(F, ANY_STATE)?;
        let Some(set) = self.f.set_debug_logging else {
            return Err(self.core.missing_function(F));
        };
        let c_categories = categories
            .iter()
            .map(|c| c_string(&self.core.name, "a log category", c))
            .collect::<Result<Vec<_>>>()?;
        let pointers: Vec<fmi2String> = c_categories.iter().map(|c| c.as_ptr()).collect();
        self.core.enter(F);
        // SAFETY: valid component, pointers live across the call.
        let raw = unsafe {
            (set)(
                self.component,
                fmi2_bool(logging_on),
                pointers.len(),
                pointers.as_ptr(),
            )
        };
        self.core.check(F, raw, || {
            format!("loggingOn={logging_on}, categories={categories:?}")
        })
    }

    /// The FMU's most recent log messages (at most 20), oldest first.
    pub fn recent_log(&self) -> Vec<String> {
        self.core.env().messages()
    }

    /// The shared library this instance runs on.
    pub fn library(&self) -> &Arc<FmuLibrary> {
        self.core.library()
    }

    fn fmi3_only(&self, type_name: &str) -> Error {
        self.core.unsupported(format!(
            "{type_name} variables exist in FMI 3 only; this is an FMI 2 FMU"
        ))
    }

    /// fmi2SetReal without touching the polynomial inputs.
    fn set_real_raw(&mut self, vrs: &[ValueReference], values: &[f64]) -> Result<()> {
        const F: &str = "fmi2SetReal";
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.core.enter(F);
        // SAFETY: valid component, slices of matching length.
        let raw =
            unsafe { (self.f.set_real)(self.component, vrs.as_ptr(), vrs.len(), values.as_ptr()) };
        let result = self
            .core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"));
        self.core.known.note(&result, vrs, values);
        result
    }

    /// fmi2SetRealInputDerivatives for the `order`-th derivative of `vrs`.
    fn set_input_derivatives(
        &mut self,
        vrs: &[ValueReference],
        order: usize,
        values: &[f64],
    ) -> Result<()> {
        const F: &str = "fmi2SetRealInputDerivatives";
        let Some(set) = self.f.set_real_input_derivatives else {
            return Err(self.core.missing_function(F));
        };
        self.int_scratch.clear();
        self.int_scratch
            .resize(vrs.len(), c_int::try_from(order).unwrap_or(c_int::MAX));
        self.core.enter(F);
        // SAFETY: valid component, three slices of the same length.
        let raw = unsafe {
            set(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_ptr(),
                values.as_ptr(),
            )
        };
        let orders = &self.int_scratch;
        self.core.check(F, raw, || {
            format!("vr={vrs:?}, order={orders:?}, value={values:?}")
        })
    }

    /// Before a step: zero the derivatives the FMU still holds for inputs that have no
    /// polynomial for this step, then hand over the new ones.
    fn prepare_input_derivatives(&mut self) -> Result<()> {
        if self.derivatives_in_fmu.is_empty() && self.derivative_inputs.is_empty() {
            return Ok(());
        }
        let stale: Vec<(ValueReference, usize)> = self
            .derivatives_in_fmu
            .iter()
            .copied()
            .filter(|(vr, _)| !self.derivative_inputs.vrs.contains(vr))
            .collect();
        let max_stale = stale.iter().map(|&(_, o)| o).max().unwrap_or(0);
        for k in 1..=max_stale {
            let vrs: Vec<ValueReference> = stale
                .iter()
                .filter(|&&(_, o)| o >= k)
                .map(|&(vr, _)| vr)
                .collect();
            let zeros = vec![0.0; vrs.len()];
            self.set_input_derivatives(&vrs, k, &zeros)?;
        }
        let mut vrs = std::mem::take(&mut self.vr_scratch);
        let mut values = std::mem::take(&mut self.real_scratch);
        let mut result = Ok(());
        for k in 1..=self.derivative_inputs.max_order() {
            self.derivative_inputs.derivatives(k, &mut vrs, &mut values);
            result = self.set_input_derivatives(&vrs, k, &values);
            if result.is_err() {
                break;
            }
        }
        self.vr_scratch = vrs;
        self.real_scratch = values;
        self.derivatives_in_fmu.clear();
        for (i, &vr) in self.derivative_inputs.vrs.iter().enumerate() {
            let order = self.derivative_inputs.orders[i];
            self.derivatives_in_fmu.push((vr, order));
            match self.derivatives_ever.iter_mut().find(|(v, _)| *v == vr) {
                Some(entry) => entry.1 = entry.1.max(order),
                None => self.derivatives_ever.push((vr, order)),
            }
        }
        self.derivative_inputs.clear();
        result
    }

    /// One fmi2DoStep with Discard / terminate handling.
    fn step_once(&mut self, t: f64, h: f64, outer_t: f64, outer_h: f64) -> Result<StepResult> {
        const F: &str = "fmi2DoStep";
        let do_step = self
            .f
            .do_step
            .ok_or_else(|| self.core.missing_function("fmi2DoStep"))?;
        self.core.crash.set_time(t);
        self.core.enter(F);
        // SAFETY: valid component.
        let raw = unsafe { do_step(self.component, t, h, fmi2False) };
        let status = self.core.record(F, raw, || {
            format!(
                "currentCommunicationPoint={t}, communicationStepSize={h}, \
                 noSetFMUStatePriorToCurrentPoint=false"
            )
        });
        match status {
            FmiStatus::Ok | FmiStatus::Warning => Ok(StepResult {
                reached_time: t + h,
                early_return: false,
                event_handling_needed: false,
                terminate_simulation: false,
            }),
            FmiStatus::Discard => {
                // The status getters are allowed after Discard (state stepFailed), not after
                // Error; a getter that fails itself is reported instead of the Discard.
                let log = self.core.call_log();
                let last = self.real_status(fmi2LastSuccessfulTime)?.unwrap_or(t);
                if self.boolean_status(fmi2Terminated)?.unwrap_or(false) {
                    // The FMU ended the simulation: a regular end, not a failure.
                    Ok(StepResult {
                        reached_time: last,
                        early_return: last < t + h,
                        event_handling_needed: false,
                        terminate_simulation: true,
                    })
                } else {
                    Err(Error::Discard {
                        instance: self.core.name.clone(),
                        current_time: outer_t,
                        step_size: outer_h,
                        last_successful_time: last,
                        log,
                    })
                }
            }
            status => Err(self.core.fmi_error(F, status)),
        }
    }

    /// `fmi2GetRealStatus`: `None` when the FMU lacks it or cannot say (Discard).
    fn real_status(&mut self, kind: fmi2StatusKind) -> Result<Option<f64>> {
        const F: &str = "fmi2GetRealStatus";
        let Some(get) = self.f.get_real_status else {
            return Ok(None);
        };
        let mut value = 0.0;
        self.core.enter(F);
        // SAFETY: valid component and out pointer.
        let raw = unsafe { get(self.component, kind, &mut value) };
        let status = self.core.record(F, raw, || {
            format!("s={}, value={value}", status_kind_name(kind))
        });
        match status {
            FmiStatus::Ok | FmiStatus::Warning => Ok(Some(value)),
            FmiStatus::Discard => Ok(None),
            status => Err(self.core.fmi_error(F, status)),
        }
    }

    /// `fmi2GetBooleanStatus`: `None` when the FMU lacks it or cannot say (Discard).
    fn boolean_status(&mut self, kind: fmi2StatusKind) -> Result<Option<bool>> {
        const F: &str = "fmi2GetBooleanStatus";
        let Some(get) = self.f.get_boolean_status else {
            return Ok(None);
        };
        let mut value: fmi2Boolean = fmi2False;
        self.core.enter(F);
        // SAFETY: valid component and out pointer.
        let raw = unsafe { get(self.component, kind, &mut value) };
        let status = self.core.record(F, raw, || {
            format!("s={}, value={value}", status_kind_name(kind))
        });
        match status {
            FmiStatus::Ok | FmiStatus::Warning => Ok(Some(value != fmi2False)),
            FmiStatus::Discard => Ok(None),
            status => Err(self.core.fmi_error(F, status)),
        }
    }

    fn state_functions(
        &self,
        function: &str,
    ) -> Result<(
        fmi2GetFMUstateTYPE,
        fmi2SetFMUstateTYPE,
        fmi2FreeFMUstateTYPE,
    )> {
        let can = self
            .core
            .co_simulation()
            .is_some_and(|cs| cs.can_get_and_set_fmu_state);
        match (
            can,
            self.f.get_fmu_state,
            self.f.set_fmu_state,
            self.f.free_fmu_state,
        ) {
            (true, Some(g), Some(s), Some(fr)) => Ok((g, s, fr)),
            _ => Err(self.core.unsupported(format!(
                "{function}: the FMU cannot get and set its state (canGetAndSetFMUstate is false)"
            ))),
        }
    }

    fn clear_polynomials(&mut self) {
        self.sub_step_inputs.clear();
        self.derivative_inputs.clear();
    }
}

fn fmi2_bool(b: bool) -> fmi2Boolean {
    if b {
        fmi2True
    } else {
        fmi2False
    }
}

#[allow(non_upper_case_globals)]
fn status_kind_name(kind: fmi2StatusKind) -> &'static str {
    match kind {
        fmi2DoStepStatus => "fmi2DoStepStatus",
        fmi2PendingStatus => "fmi2PendingStatus",
        fmi2LastSuccessfulTime => "fmi2LastSuccessfulTime",
        fmi2Terminated => "fmi2Terminated",
        _ => "unknown",
    }
}

macro_rules! fmi3_only {
    ($($get:ident, $set:ident, $ty:ty, $name:literal;)*) => {
        $(
            fn $get(&mut self, _vrs: &[ValueReference], _values: &mut [$ty]) -> Result<()> {
                Err(self.fmi3_only($name))
            }
            fn $set(&mut self, _vrs: &[ValueReference], _values: &[$ty]) -> Result<()> {
                Err(self.fmi3_only($name))
            }
        )*
    };
}

/// Calls `$field` of the function table with the component and `args`, checked as `$name`.
macro_rules! me_call {
    ($self:ident, $name:literal, $field:ident, $allowed:expr, ($($arg:expr),*), $show:expr) => {{
        const F: &str = $name;
        $self.core.require(F, $allowed)?;
        let Some(function) = $self.f.$field.filter(|_| $self.model_exchange) else {
            return Err($self.core.missing_function(F));
        };
        $self.core.enter(F);
        // SAFETY: valid component; the slices' pointers and lengths go together.
        let raw = unsafe { function($self.component, $($arg),*) };
        $self.core.check(F, raw, $show)
    }};
}

const ME_EVALUATE: &[SlaveState] = &[
    SlaveState::InitializationMode,
    SlaveState::EventMode,
    SlaveState::ContinuousTimeMode,
    SlaveState::Terminated,
];

impl super::ModelExchangeInstance for Fmi2Instance {
    fn continuous_state_count(&self) -> usize {
        self.core
            .description
            .model_structure
            .continuous_state_derivatives
            .len()
    }

    fn event_indicator_count(&self) -> usize {
        self.core.description.number_of_event_indicators
    }

    fn set_time(&mut self, time: f64) -> Result<()> {
        self.core.crash.set_time(time);
        me_call!(
            self,
            "fmi2SetTime",
            set_time,
            &[SlaveState::EventMode, SlaveState::ContinuousTimeMode],
            (time),
            || format!("time={time}")
        )
    }

    fn set_continuous_states(&mut self, x: &[f64]) -> Result<()> {
        me_call!(
            self,
            "fmi2SetContinuousStates",
            set_continuous_states,
            &[SlaveState::EventMode, SlaveState::ContinuousTimeMode],
            (x.as_ptr(), x.len()),
            || format!("x={x:?}")
        )
    }

    fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()> {
        let n = x.len();
        me_call!(
            self,
            "fmi2GetContinuousStates",
            get_continuous_states,
            ME_EVALUATE,
            (x.as_mut_ptr(), n),
            || format!("nx={n}")
        )
    }

    fn get_derivatives(&mut self, dx: &mut [f64]) -> Result<()> {
        let n = dx.len();
        me_call!(
            self,
            "fmi2GetDerivatives",
            get_derivatives,
            ME_EVALUATE,
            (dx.as_mut_ptr(), n),
            || format!("nx={n}")
        )
    }

    fn get_event_indicators(&mut self, z: &mut [f64]) -> Result<()> {
        let n = z.len();
        me_call!(
            self,
            "fmi2GetEventIndicators",
            get_event_indicators,
            ME_EVALUATE,
            (z.as_mut_ptr(), n),
            || format!("ni={n}")
        )
    }

    fn get_nominals(&mut self, nominals: &mut [f64]) -> Result<()> {
        let n = nominals.len();
        me_call!(
            self,
            "fmi2GetNominalsOfContinuousStates",
            get_nominals_of_continuous_states,
            ME_EVALUATE,
            (nominals.as_mut_ptr(), n),
            || format!("nx={n}")
        )
    }

    fn enter_continuous_time_mode(&mut self) -> Result<()> {
        me_call!(
            self,
            "fmi2EnterContinuousTimeMode",
            enter_continuous_time_mode,
            &[SlaveState::EventMode],
            (),
            String::new
        )?;
        self.core.state = SlaveState::ContinuousTimeMode;
        Ok(())
    }

    fn completed_integrator_step(&mut self) -> Result<(bool, bool)> {
        let (mut enter, mut terminate) = (fmi2False, fmi2False);
        me_call!(
            self,
            "fmi2CompletedIntegratorStep",
            completed_integrator_step,
            &[SlaveState::ContinuousTimeMode],
            (fmi2True, &mut enter, &mut terminate),
            || "noSetFMUStatePriorToCurrentPoint=true".to_string()
        )?;
        Ok((enter != fmi2False, terminate != fmi2False))
    }
}

impl Slave for Fmi2Instance {
    fn name(&self) -> &str {
        &self.core.name
    }

    fn description(&self) -> &Arc<ModelDescription> {
        &self.core.description
    }

    fn state(&self) -> SlaveState {
        self.core.reported_state()
    }

    fn enter_configuration_mode(&mut self) -> Result<()> {
        Err(self.core.unsupported(
            "enter_configuration_mode: FMI 2 has no configuration mode (and no structural \
             parameters: set parameters before initialization)",
        ))
    }

    fn exit_configuration_mode(&mut self) -> Result<()> {
        Err(self
            .core
            .unsupported("exit_configuration_mode: FMI 2 has no configuration mode"))
    }

    fn enter_initialization_mode(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        const SETUP: &str = "fmi2SetupExperiment";
        const ENTER: &str = "fmi2EnterInitializationMode";
        self.core.require(SETUP, &[SlaveState::Instantiated])?;
        let (tol_defined, tol) = (tolerance.is_some(), tolerance.unwrap_or(0.0));
        let (stop_defined, stop) = (stop_time.is_some(), stop_time.unwrap_or(0.0));
        self.core.crash.set_time(start_time);
        self.core.enter(SETUP);
        // SAFETY: valid component.
        let raw = unsafe {
            (self.f.setup_experiment)(
                self.component,
                fmi2_bool(tol_defined),
                tol,
                start_time,
                fmi2_bool(stop_defined),
                stop,
            )
        };
        self.core.check(SETUP, raw, || {
            format!(
                "toleranceDefined={tol_defined}, tolerance={tol}, startTime={start_time}, \
                 stopTimeDefined={stop_defined}, stopTime={stop}"
            )
        })?;
        self.core.enter(ENTER);
        // SAFETY: valid component.
        let raw = unsafe { (self.f.enter_initialization_mode)(self.component) };
        self.core.check(ENTER, raw, String::new)?;
        self.core.state = SlaveState::InitializationMode;
        Ok(())
    }

    fn exit_initialization_mode(&mut self) -> Result<()> {
        const F: &str = "fmi2ExitInitializationMode";
        self.core.require(F, &[SlaveState::InitializationMode])?;
        self.core.enter(F);
        // SAFETY: valid component.
        let raw = unsafe { (self.f.exit_initialization_mode)(self.component) };
        self.core.check(F, raw, String::new)?;
        // Model Exchange continues in event mode (FMI 2.0 §3.2.3).
        self.core.state = if self.model_exchange {
            SlaveState::EventMode
        } else {
            SlaveState::StepMode
        };
        Ok(())
    }

    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        self.core.require("fmi2DoStep", &[SlaveState::StepMode])?;
        // An FMU that extrapolates an input along its derivatives may hold another value after.
        if !(self.derivative_inputs.is_empty() && self.derivatives_in_fmu.is_empty()) {
            self.core.known.forget();
        }
        let result = self.do_step_inner(current_time, step_size);
        if let Ok(step) = &result {
            self.core.crash.set_time(step.reached_time);
        }
        self.sub_step_inputs.clear();
        self.derivative_inputs.clear();
        result
    }

    fn enter_event_mode(&mut self) -> Result<()> {
        const F: &str = "fmi2EnterEventMode";
        let Some(enter) = self.f.enter_event_mode.filter(|_| self.model_exchange) else {
            return Err(self
                .core
                .unsupported("enter_event_mode: FMI 2 Co-Simulation has no event mode"));
        };
        self.core.require(F, &[SlaveState::ContinuousTimeMode])?;
        self.core.enter(F);
        // SAFETY: valid component.
        let raw = unsafe { enter(self.component) };
        self.core.check(F, raw, String::new)?;
        self.core.state = SlaveState::EventMode;
        Ok(())
    }

    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        const F: &str = "fmi2NewDiscreteStates";
        let Some(new_discrete_states) = self.f.new_discrete_states.filter(|_| self.model_exchange)
        else {
            return Err(self
                .core
                .unsupported("update_discrete_states: FMI 2 Co-Simulation has no event mode"));
        };
        self.core.require(F, &[SlaveState::EventMode])?;
        let mut info = fmi2EventInfo::default();
        self.core.enter(F);
        // SAFETY: valid component, a valid fmi2EventInfo to fill.
        let raw = unsafe { new_discrete_states(self.component, &mut info) };
        let update = DiscreteStatesUpdate {
            discrete_states_need_update: info.newDiscreteStatesNeeded != fmi2False,
            terminate_simulation: info.terminateSimulation != fmi2False,
            nominals_of_continuous_states_changed: info.nominalsOfContinuousStatesChanged
                != fmi2False,
            values_of_continuous_states_changed: info.valuesOfContinuousStatesChanged != fmi2False,
            next_event_time: (info.nextEventTimeDefined != fmi2False).then_some(info.nextEventTime),
        };
        self.core.check(F, raw, || format!("{update:?}"))?;
        Ok(update)
    }

    fn enter_step_mode(&mut self) -> Result<()> {
        Err(self
            .core
            .unsupported("enter_step_mode: FMI 2 Co-Simulation has no event mode"))
    }

    fn terminate(&mut self) -> Result<()> {
        const F: &str = "fmi2Terminate";
        self.core.require(
            F,
            &[
                SlaveState::StepMode,
                SlaveState::EventMode,
                SlaveState::ContinuousTimeMode,
            ],
        )?;
        self.core.enter(F);
        // SAFETY: valid component.
        let raw = unsafe { (self.f.terminate)(self.component) };
        self.core.check(F, raw, String::new)?;
        self.core.state = SlaveState::Terminated;
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        const F: &str = "fmi2Reset";
        self.core.require(F, ANY_STATE)?;
        self.core.enter(F);
        // SAFETY: valid component.
        let raw = unsafe { (self.f.reset)(self.component) };
        self.core.known.forget();
        self.core.check(F, raw, String::new)?;
        self.core.state = SlaveState::Instantiated;
        self.core.recovered();
        self.clear_polynomials();
        self.derivatives_in_fmu.clear();
        Ok(())
    }

    fn get_float64(&mut self, vrs: &[ValueReference], values: &mut [f64]) -> Result<()> {
        const F: &str = "fmi2GetReal";
        self.core.require(F, GET_STATES)?;
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.core.enter(F);
        // SAFETY: valid component, slices of matching length.
        let raw = unsafe {
            (self.f.get_real)(self.component, vrs.as_ptr(), vrs.len(), values.as_mut_ptr())
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn set_float64(&mut self, vrs: &[ValueReference], values: &[f64]) -> Result<()> {
        self.core.require("fmi2SetReal", SET_STATES)?;
        self.sub_step_inputs.remove_all(vrs);
        self.derivative_inputs.remove_all(vrs);
        if self.core.known.holds(vrs, values) {
            return Ok(());
        }
        self.set_real_raw(vrs, values)
    }

    fmi3_only! {
        get_float32, set_float32, f32, "Float32";
        get_int8, set_int8, i8, "Int8";
        get_uint8, set_uint8, u8, "UInt8";
        get_int16, set_int16, i16, "Int16";
        get_uint16, set_uint16, u16, "UInt16";
        get_uint32, set_uint32, u32, "UInt32";
        get_int64, set_int64, i64, "Int64";
        get_uint64, set_uint64, u64, "UInt64";
    }

    fn get_int32(&mut self, vrs: &[ValueReference], values: &mut [i32]) -> Result<()> {
        const F: &str = "fmi2GetInteger";
        self.core.require(F, GET_STATES)?;
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.core.enter(F);
        // SAFETY: valid component, slices of matching length (fmi2Integer is i32).
        let raw = unsafe {
            (self.f.get_integer)(self.component, vrs.as_ptr(), vrs.len(), values.as_mut_ptr())
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn set_int32(&mut self, vrs: &[ValueReference], values: &[i32]) -> Result<()> {
        const F: &str = "fmi2SetInteger";
        self.core.require(F, SET_STATES)?;
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.core.enter(F);
        // SAFETY: valid component, slices of matching length.
        let raw = unsafe {
            (self.f.set_integer)(self.component, vrs.as_ptr(), vrs.len(), values.as_ptr())
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn get_boolean(&mut self, vrs: &[ValueReference], values: &mut [bool]) -> Result<()> {
        const F: &str = "fmi2GetBoolean";
        self.core.require(F, GET_STATES)?;
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.int_scratch.clear();
        self.int_scratch.resize(vrs.len(), fmi2False);
        self.core.enter(F);
        // SAFETY: valid component, scratch buffer of the right length.
        let raw = unsafe {
            (self.f.get_boolean)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_mut_ptr(),
            )
        };
        for (v, &b) in values.iter_mut().zip(&self.int_scratch) {
            *v = b != fmi2False;
        }
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn set_boolean(&mut self, vrs: &[ValueReference], values: &[bool]) -> Result<()> {
        const F: &str = "fmi2SetBoolean";
        self.core.require(F, SET_STATES)?;
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.int_scratch.clear();
        self.int_scratch
            .extend(values.iter().map(|&b| fmi2_bool(b)));
        self.core.enter(F);
        // SAFETY: valid component, scratch buffer of the right length.
        let raw = unsafe {
            (self.f.set_boolean)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_ptr(),
            )
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn get_string(&mut self, vrs: &[ValueReference]) -> Result<Vec<String>> {
        const F: &str = "fmi2GetString";
        self.core.require(F, GET_STATES)?;
        let mut pointers: Vec<fmi2String> = vec![std::ptr::null(); vrs.len()];
        self.core.enter(F);
        // SAFETY: valid component, pointer buffer of the right length.
        let raw = unsafe {
            (self.f.get_string)(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                pointers.as_mut_ptr(),
            )
        };
        // SAFETY: the FMU returns NUL-terminated strings (or NULL) valid until its next call.
        let values: Vec<String> = pointers
            .iter()
            .map(|&p| unsafe { c_str_lossy(p) })
            .collect();
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))?;
        Ok(values)
    }

    fn set_string(&mut self, vrs: &[ValueReference], values: &[&str]) -> Result<()> {
        const F: &str = "fmi2SetString";
        self.core.require(F, SET_STATES)?;
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        let strings = values
            .iter()
            .map(|s| c_string(&self.core.name, "a String value", s))
            .collect::<Result<Vec<_>>>()?;
        let pointers: Vec<fmi2String> = strings.iter().map(|s| s.as_ptr()).collect();
        self.core.enter(F);
        // SAFETY: valid component, pointers live across the call.
        let raw = unsafe {
            (self.f.set_string)(self.component, vrs.as_ptr(), vrs.len(), pointers.as_ptr())
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn get_binary(&mut self, _vrs: &[ValueReference]) -> Result<Vec<Vec<u8>>> {
        Err(self.fmi3_only("Binary"))
    }

    fn set_binary(&mut self, _vrs: &[ValueReference], _values: &[&[u8]]) -> Result<()> {
        Err(self.fmi3_only("Binary"))
    }

    fn can_save_state(&self) -> bool {
        self.core
            .co_simulation()
            .is_some_and(|cs| cs.can_get_and_set_fmu_state)
            && self.f.get_fmu_state.is_some()
            && self.f.set_fmu_state.is_some()
            && self.f.free_fmu_state.is_some()
    }

    fn save_state(&mut self) -> Result<StateId> {
        const F: &str = "fmi2GetFMUstate";
        self.core.require(F, ANY_STATE)?;
        let (get, _, _) = self.state_functions(F)?;
        let mut pointer: fmi2FMUstate = std::ptr::null_mut();
        self.core.enter(F);
        // SAFETY: valid component; a null state asks the FMU for a new one.
        let raw = unsafe { get(self.component, &mut pointer) };
        self.core
            .check(F, raw, || format!("FMUstate={pointer:?}"))?;
        if pointer.is_null() {
            return Err(self
                .core
                .unsupported(format!("{F} returned OK but no state")));
        }
        Ok(self.states.insert(pointer, Some(self.core.state)))
    }

    fn update_state(&mut self, state: StateId) -> Result<()> {
        const F: &str = "fmi2GetFMUstate";
        self.core.require(F, ANY_STATE)?;
        let (get, _, _) = self.state_functions(F)?;
        let Some((mut pointer, _)) = self.states.get(state) else {
            return Err(unknown_state(&self.core.name, state));
        };
        self.core.enter(F);
        // SAFETY: valid component; the FMU overwrites the state it allocated.
        let raw = unsafe { get(self.component, &mut pointer) };
        self.states.set(state, pointer, Some(self.core.state));
        self.core.check(F, raw, || format!("FMUstate={pointer:?}"))
    }

    fn restore_state(&mut self, state: StateId) -> Result<()> {
        const F: &str = "fmi2SetFMUstate";
        self.core.require(F, ANY_STATE)?;
        let (_, set, _) = self.state_functions(F)?;
        let Some((pointer, saved_in)) = self.states.get(state) else {
            return Err(unknown_state(&self.core.name, state));
        };
        self.core.known.forget();
        self.core.enter(F);
        // SAFETY: valid component and a state this FMU produced.
        let raw = unsafe { set(self.component, pointer) };
        self.core
            .check(F, raw, || format!("FMUstate={pointer:?}"))?;
        if let Some(saved_in) = saved_in {
            self.core.state = saved_in;
        }
        self.core.recovered();
        self.clear_polynomials();
        // The restored state may hold input derivatives: zero them before the next step
        // unless a new polynomial replaces them.
        self.derivatives_in_fmu.clone_from(&self.derivatives_ever);
        Ok(())
    }

    fn free_state(&mut self, state: StateId) -> Result<()> {
        const F: &str = "fmi2FreeFMUstate";
        self.core.require(F, ANY_STATE)?;
        let (_, _, free_state) = self.state_functions(F)?;
        let Some(mut pointer) = self.states.take(state) else {
            return Err(unknown_state(&self.core.name, state));
        };
        let shown = pointer;
        self.core.enter(F);
        // SAFETY: valid component and a state this FMU produced, freed once (taken out).
        let raw = unsafe { free_state(self.component, &mut pointer) };
        self.core.check(F, raw, || format!("FMUstate={shown:?}"))
    }

    fn serialize_state(&mut self, state: StateId) -> Result<Vec<u8>> {
        const SIZE: &str = "fmi2SerializedFMUstateSize";
        const F: &str = "fmi2SerializeFMUstate";
        self.core.require(F, ANY_STATE)?;
        let can = self
            .core
            .co_simulation()
            .is_some_and(|cs| cs.can_serialize_fmu_state);
        let (true, Some(size_of), Some(serialize)) = (
            can,
            self.f.serialized_fmu_state_size,
            self.f.serialize_fmu_state,
        ) else {
            return Err(self.core.unsupported(
                "serialize_state: the FMU cannot serialise its state (canSerializeFMUstate is false)",
            ));
        };
        let Some((pointer, _)) = self.states.get(state) else {
            return Err(unknown_state(&self.core.name, state));
        };
        let mut size = 0usize;
        self.core.enter(SIZE);
        // SAFETY: valid component, state and out pointer.
        let raw = unsafe { size_of(self.component, pointer, &mut size) };
        self.core
            .check(SIZE, raw, || format!("FMUstate={pointer:?}, size={size}"))?;
        let mut bytes = vec![0u8; size];
        self.core.enter(F);
        // SAFETY: buffer of `size` bytes.
        let raw = unsafe {
            serialize(
                self.component,
                pointer,
                bytes.as_mut_ptr().cast::<c_char>(),
                size,
            )
        };
        self.core
            .check(F, raw, || format!("FMUstate={pointer:?}, size={size}"))?;
        Ok(bytes)
    }

    fn deserialize_state(&mut self, bytes: &[u8]) -> Result<StateId> {
        const F: &str = "fmi2DeSerializeFMUstate";
        self.core.require(F, ANY_STATE)?;
        let can = self
            .core
            .co_simulation()
            .is_some_and(|cs| cs.can_serialize_fmu_state);
        let (true, Some(deserialize)) = (can, self.f.deserialize_fmu_state) else {
            return Err(self.core.unsupported(
                "deserialize_state: the FMU cannot serialise its state (canSerializeFMUstate is false)",
            ));
        };
        let mut pointer: fmi2FMUstate = std::ptr::null_mut();
        self.core.enter(F);
        // SAFETY: valid component, byte buffer of the given size.
        let raw = unsafe {
            deserialize(
                self.component,
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
                &mut pointer,
            )
        };
        let size = bytes.len();
        self.core
            .check(F, raw, || format!("size={size}, FMUstate={pointer:?}"))?;
        if pointer.is_null() {
            return Err(self
                .core
                .unsupported(format!("{F} returned OK but no state")));
        }
        Ok(self.states.insert(pointer, None))
    }

    fn provides_directional_derivatives(&self) -> bool {
        self.core
            .co_simulation()
            .is_some_and(|cs| cs.provides_directional_derivatives)
            && self.f.get_directional_derivative.is_some()
    }

    fn directional_derivative(
        &mut self,
        unknowns: &[ValueReference],
        knowns: &[ValueReference],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        const F: &str = "fmi2GetDirectionalDerivative";
        self.core.require(F, GET_STATES)?;
        let (true, Some(get)) = (
            self.provides_directional_derivatives(),
            self.f.get_directional_derivative,
        ) else {
            return Err(self.core.unsupported(
                "directional_derivative: the FMU does not provide directional derivatives",
            ));
        };
        self.core
            .check_len(F, "seed values", knowns.len(), seed.len())?;
        self.core
            .check_len(F, "sensitivity values", unknowns.len(), sensitivity.len())?;
        self.core.enter(F);
        // SAFETY: valid component, slices of matching lengths.
        let raw = unsafe {
            get(
                self.component,
                unknowns.as_ptr(),
                unknowns.len(),
                knowns.as_ptr(),
                knowns.len(),
                seed.as_ptr(),
                sensitivity.as_mut_ptr(),
            )
        };
        self.core.check(F, raw, || {
            format!(
                "vUnknown_ref={unknowns:?}, vKnown_ref={knowns:?}, dvKnown={seed:?}, \
                 dvUnknown={sensitivity:?}"
            )
        })
    }

    fn max_output_derivative_order(&self) -> u32 {
        if self.f.get_real_output_derivatives.is_some() {
            self.core
                .co_simulation()
                .map_or(0, |cs| cs.max_output_derivative_order)
        } else {
            0
        }
    }

    fn get_output_derivatives(
        &mut self,
        vrs: &[ValueReference],
        order: u32,
        values: &mut [f64],
    ) -> Result<()> {
        const F: &str = "fmi2GetRealOutputDerivatives";
        self.core
            .require(F, &[SlaveState::StepMode, SlaveState::Terminated])?;
        let max = self.max_output_derivative_order();
        let Some(get) = self
            .f
            .get_real_output_derivatives
            .filter(|_| order >= 1 && order <= max)
        else {
            return Err(self.core.unsupported(format!(
                "get_output_derivatives: order {order} is not available (maxOutputDerivativeOrder = {max})"
            )));
        };
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.int_scratch.clear();
        self.int_scratch
            .resize(vrs.len(), c_int::try_from(order).unwrap_or(c_int::MAX));
        self.core.enter(F);
        // SAFETY: valid component, slices of matching length.
        let raw = unsafe {
            get(
                self.component,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_ptr(),
                values.as_mut_ptr(),
            )
        };
        let orders = &self.int_scratch;
        self.core.check(F, raw, || {
            format!("vr={vrs:?}, order={orders:?}, value={values:?}")
        })
    }

    fn set_input_polynomial(
        &mut self,
        vrs: &[ValueReference],
        order: usize,
        taylor: &[f64],
    ) -> Result<PolynomialInputMode> {
        self.core.require(
            "set_input_polynomial",
            &[SlaveState::InitializationMode, SlaveState::StepMode],
        )?;
        self.core.check_polynomial(vrs, order, taylor)?;
        // The value itself, through the scratch buffer (no allocation once warmed up).
        let mut values = std::mem::take(&mut self.real_scratch);
        values.clear();
        values.extend(taylor.iter().step_by(order + 1).copied());
        let result = self.set_real_raw(vrs, &values);
        self.real_scratch = values;
        result?;
        self.sub_step_inputs.remove_all(vrs);
        self.derivative_inputs.remove_all(vrs);
        let interpolates = self
            .core
            .co_simulation()
            .is_some_and(|cs| cs.can_interpolate_inputs)
            && self.f.set_real_input_derivatives.is_some();
        if interpolates && !self.core.options.force_sub_steps {
            self.derivative_inputs.insert(vrs, order, taylor);
            Ok(PolynomialInputMode::InputDerivatives)
        } else {
            self.sub_step_inputs.insert(vrs, order, taylor);
            Ok(PolynomialInputMode::SubSteps)
        }
    }

    fn set_macro_step(&mut self, span: Option<(f64, f64)>) -> Result<()> {
        self.macro_step = span;
        Ok(())
    }

    fn call_count(&self) -> u64 {
        self.core.call_count()
    }
}

impl Fmi2Instance {
    fn do_step_inner(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        self.prepare_input_derivatives()?;
        if self.sub_step_inputs.is_empty() || self.sub_step_inputs.max_order() == 0 {
            return self.step_once(current_time, step_size, current_time, step_size);
        }
        let n = self.core.sub_step_count(&mut self.sub_step_warned);
        let mut result = StepResult {
            reached_time: current_time,
            early_return: false,
            event_handling_needed: false,
            terminate_simulation: false,
        };
        for (t, h_i, tau) in HeldSubSteps::new(current_time, step_size, n, self.macro_step) {
            // The polynomial at the sub-step's midpoint: held over the sub-step, its error is
            // O(h^3) per sub-step, so the run keeps global order 2 (the start value: order 1).
            let mut inputs = std::mem::take(&mut self.sub_step_inputs);
            let (vrs, values) = inputs.evaluate(tau);
            let set = self.set_real_raw(vrs, values);
            self.sub_step_inputs = inputs;
            set?;
            result = self.step_once(t, h_i, current_time, step_size)?;
            if result.terminate_simulation {
                result.early_return = true;
                break;
            }
        }
        if !result.terminate_simulation {
            result.reached_time = current_time + step_size;
        }
        Ok(result)
    }
}

impl Drop for Fmi2Instance {
    /// Terminate (from step mode), free the saved FMU states and the instance; after an
    /// `Error` only `fmi2FreeInstance`, after a `Fatal` nothing (see the module documentation).
    fn drop(&mut self) {
        if self.core.clean_up_allowed() && self.core.state == SlaveState::StepMode {
            if let Err(e) = self.terminate() {
                ::log::warn!("{}: while freeing the instance: {e}", self.core.name);
            }
        }
        if let Some(free_state) = self.f.free_fmu_state {
            for mut pointer in self.states.drain() {
                // After an Error, fmi2FreeInstance frees the states too.
                if !self.core.clean_up_allowed() {
                    break;
                }
                self.core.enter("fmi2FreeFMUstate");
                // SAFETY: a state this FMU produced, freed once (drained).
                let raw = unsafe { free_state(self.component, &mut pointer) };
                if let Err(e) = self.core.check("fmi2FreeFMUstate", raw, String::new) {
                    ::log::warn!("{}: while freeing the instance: {e}", self.core.name);
                }
            }
        }
        if self.core.fatal().is_some() {
            // The callbacks stay allocated (ManuallyDrop): the FMU holds a pointer to them.
            self.core.leak("fmi2FreeInstance");
            return;
        }
        self.core.enter("fmi2FreeInstance");
        // SAFETY: the component is valid and freed exactly once; the callbacks and the
        // environment are freed only after this.
        unsafe { (self.f.free_instance)(self.component) };
        self.core.trace_plain(|| "fmi2FreeInstance()".to_string());
        self.component = std::ptr::null_mut::<c_void>();
        // SAFETY: dropped exactly once, here, after the FMU that points to them was freed.
        unsafe { ManuallyDrop::drop(&mut self.callbacks) };
    }
}
