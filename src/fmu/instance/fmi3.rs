//! The FMI 3.0 instance: Co-Simulation, or Model Exchange (driven by
//! [`crate::fmu::model_exchange`]).

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::log::{
    c_str_lossy, fmi3_clock_update, fmi3_intermediate_update, fmi3_lock_preemption,
    fmi3_log_message, fmi3_unlock_preemption, lock, take_preemption_balance,
};
use super::{
    c_string, dir_with_separator, unknown_state, Core, HeldSubSteps, InstanceOptions, Polynomial,
    StateTable, ANY_STATE, GET_STATES, SET_STATES,
};
use crate::error::{Error, FmiStatus, Result};
use crate::fmu::description::{
    Causality, Interface, ModelDescription, ValueReference, VariableType,
};
use crate::fmu::ffi::fmi3::*;
use crate::fmu::ffi::Fmi3Functions;
use crate::fmu::library::{FmiFunctions, FmuLibrary};
use crate::fmu::slave::{
    DiscreteStatesUpdate, IntervalQualifier, PolynomialInputMode, Slave, SlaveState, StateId,
    StepResult,
};

/// An FMI 3.0 Co-Simulation or Model Exchange instance (as its library was loaded).
pub struct Fmi3Instance {
    core: Core,
    /// Instantiated with `fmi3InstantiateModelExchange`.
    model_exchange: bool,
    /// Instantiated with `fmi3InstantiateScheduledExecution` (driven by
    /// [`crate::fmu::scheduled`]).
    scheduled: bool,
    f: Arc<Fmi3Functions>,
    instance: fmi3Instance,
    states: StateTable,
    /// `eventModeUsed` as passed to the FMU.
    event_mode_used: bool,
    /// Float64 inputs declared `intermediateUpdate` (sorted), requested at instantiation.
    intermediate_inputs: Vec<ValueReference>,
    /// Element counts of array variables (scalars are absent: one element).
    array_sizes: HashMap<ValueReference, usize>,
    /// Values set in Configuration Mode for the structural parameters that size arrays; they
    /// size the arrays once `fmi3ExitConfigurationMode` succeeds.
    configured_sizes: HashMap<ValueReference, u64>,
    /// Polynomial inputs sampled at sub-step starts during the next `do_step`.
    sub_step_inputs: Polynomial,
    /// The macro step the next steps are parts of ([`Slave::set_macro_step`]).
    macro_step: Option<(f64, f64)>,
    sub_step_warned: bool,
    bool_scratch: Vec<u8>,
    int_scratch: Vec<i32>,
    real_scratch: Vec<f64>,
}

// SAFETY: the raw pointers (instance, FMU states, callback environment) are only used through
// `&mut self` (or `&self` for reads of Rust data), so one thread at a time calls into the FMU;
// FMI allows an instance to be used from different threads as long as calls do not overlap.
unsafe impl Send for Fmi3Instance {}

/// Number of elements of an array variable: the product of its dimensions (fixed sizes, the
/// values `configured` for their structural parameters, else those parameters' start values;
/// an unusable dimension counts as 1 here, the model description's validation reports it).
fn element_count(
    description: &ModelDescription,
    index: usize,
    configured: &HashMap<ValueReference, u64>,
) -> usize {
    description.variables[index]
        .dimensions
        .iter()
        .map(|d| {
            let size = match d.value_reference.and_then(|vr| configured.get(&vr)) {
                Some(&n) if d.start.is_none() => Some(n),
                _ => crate::fmu::values::dimension_size(description, d),
            };
            size.and_then(|n| usize::try_from(n).ok()).unwrap_or(1)
        })
        .fold(1usize, usize::saturating_mul)
}

/// Element counts of every array variable of `description` ([`element_count`]).
fn array_sizes(
    description: &ModelDescription,
    configured: &HashMap<ValueReference, u64>,
) -> HashMap<ValueReference, usize> {
    description
        .variables
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_array())
        .map(|(i, v)| (v.value_reference, element_count(description, i, configured)))
        .collect()
}

/// A value set for a structural parameter, as an array size (`None`: not a size).
trait AsSize: Copy {
    fn as_size(self) -> Option<u64>;
}

macro_rules! as_size {
    ($($t:ty),*) => {$(
        impl AsSize for $t {
            fn as_size(self) -> Option<u64> {
                u64::try_from(self).ok()
            }
        }
    )*};
}
as_size!(i8, u8, i16, u16, i32, u32, i64, u64);

impl AsSize for f32 {
    fn as_size(self) -> Option<u64> {
        None
    }
}

fn flag(b: u8) -> bool {
    b != 0
}

macro_rules! fmi3_numeric {
    ($($get:ident, $set:ident, $ty:ty, $get_name:literal, $set_name:literal;)*) => {
        $(
            fn $get(&mut self, vrs: &[ValueReference], values: &mut [$ty]) -> Result<()> {
                const F: &str = $get_name;
                self.core.require(F, GET_STATES)?;
                let get = self.need(self.f.$get, F)?;
                self.check_values(F, vrs, values.len())?;
                self.core.enter(F);
                // SAFETY: valid instance; nValues is the length of the buffer.
                let raw = unsafe {
                    get(self.instance, vrs.as_ptr(), vrs.len(), values.as_mut_ptr(), values.len())
                };
                self.core.check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
            }
            fn $set(&mut self, vrs: &[ValueReference], values: &[$ty]) -> Result<()> {
                const F: &str = $set_name;
                self.core.require(F, SET_STATES)?;
                let set = self.need(self.f.$set, F)?;
                self.check_values(F, vrs, values.len())?;
                self.core.enter(F);
                // SAFETY: valid instance; nValues is the length of the buffer.
                let raw = unsafe {
                    set(self.instance, vrs.as_ptr(), vrs.len(), values.as_ptr(), values.len())
                };
                self.core.check(F, raw, || format!("vr={vrs:?}, value={values:?}"))?;
                self.note_sizes(vrs, values);
                Ok(())
            }
        )*
    };
}

impl Fmi3Instance {
    /// `fmi3InstantiateCoSimulation` (invisible) on `library`.
    pub fn new(
        library: Arc<FmuLibrary>,
        description: Arc<ModelDescription>,
        name: &str,
        resource_dir: Option<&Path>,
        options: InstanceOptions,
    ) -> Result<Fmi3Instance> {
        let FmiFunctions::Fmi3(f) = library.functions().clone() else {
            return Err(Error::Unsupported {
                instance: name.to_string(),
                message: "the library is not an FMI 3 library".into(),
            });
        };
        let mut core = Core::new(library, description, name, options)?;
        let description = Arc::clone(&core.description);
        let cs = description.co_simulation.clone().unwrap_or_default();
        // FMI 3.0 §4.2.5: clocks tick in Event Mode, so an FMU with clocks always uses it.
        let has_clocks = description
            .variables
            .iter()
            .any(|v| v.var_type == VariableType::Clock);
        let scheduled = core.library().interface() == Interface::ScheduledExecution;
        let event_mode_used =
            (core.options.event_mode || has_clocks) && cs.has_event_mode && !scheduled;
        let early_return = core.options.early_return;
        let logging_on = core.options.logging_on;
        let mut intermediate_inputs: Vec<ValueReference> = if cs.provides_intermediate_update {
            description
                .variables
                .iter()
                .filter(|v| {
                    v.intermediate_update
                        && v.causality == Causality::Input
                        && v.var_type == VariableType::Float64
                })
                .map(|v| v.value_reference)
                .collect()
        } else {
            Vec::new()
        };
        intermediate_inputs.sort_unstable();
        intermediate_inputs.dedup();
        let array_sizes = array_sizes(&description, &HashMap::new());

        let c_name = c_string(name, "the instance name", name)?;
        let token = c_string(
            name,
            "the instantiation token",
            &description.instantiation_token,
        )?;
        let resource_path = resource_dir
            .map(|dir| {
                CString::new(dir_with_separator(dir)).map_err(|_| {
                    Error::Usage(format!(
                        "{name}: the resource path {} contains a NUL character",
                        dir.display()
                    ))
                })
            })
            .transpose()?;
        let model_exchange = core.library().interface() == Interface::ModelExchange;
        let resource_ptr = resource_path
            .as_ref()
            .map_or(std::ptr::null(), |p| p.as_ptr());
        let (instance, function) = if model_exchange {
            let instantiate = f
                .instantiate_model_exchange
                .ok_or_else(|| core.missing_function("fmi3InstantiateModelExchange"))?;
            core.enter("fmi3InstantiateModelExchange");
            // SAFETY: strings live across the call; the environment outlives the instance.
            let instance = unsafe {
                instantiate(
                    c_name.as_ptr(),
                    token.as_ptr(),
                    resource_ptr,
                    false,
                    logging_on,
                    core.env.as_ptr(),
                    Some(fmi3_log_message),
                )
            };
            core.trace_plain(|| {
                format!(
                    "fmi3InstantiateModelExchange(instanceName={name:?}, instantiationToken={:?}, \
                     resourcePath={:?}, visible=false, loggingOn={logging_on}) -> {instance:?}",
                    description.instantiation_token,
                    resource_path.as_ref().map(|p| p.to_string_lossy()),
                )
            });
            (instance, "fmi3InstantiateModelExchange")
        } else if scheduled {
            const F: &str = "fmi3InstantiateScheduledExecution";
            let instantiate = f
                .instantiate_scheduled_execution
                .ok_or_else(|| core.missing_function(F))?;
            core.enter(F);
            // SAFETY: strings live across the call; the environment outlives the instance.
            let instance = unsafe {
                instantiate(
                    c_name.as_ptr(),
                    token.as_ptr(),
                    resource_ptr,
                    false,
                    logging_on,
                    core.env.as_ptr(),
                    Some(fmi3_log_message),
                    Some(fmi3_clock_update),
                    Some(fmi3_lock_preemption),
                    Some(fmi3_unlock_preemption),
                )
            };
            core.trace_plain(|| {
                format!(
                    "{F}(instanceName={name:?}, instantiationToken={:?}, resourcePath={:?}, \
                     visible=false, loggingOn={logging_on}) -> {instance:?}",
                    description.instantiation_token,
                    resource_path.as_ref().map(|p| p.to_string_lossy()),
                )
            });
            (instance, F)
        } else {
            let instantiate = f
                .instantiate_co_simulation
                .ok_or_else(|| core.missing_function("fmi3InstantiateCoSimulation"))?;
            core.enter("fmi3InstantiateCoSimulation");
            // SAFETY: strings live across the call; the environment outlives the instance.
            let instance = unsafe {
                instantiate(
                    c_name.as_ptr(),
                    token.as_ptr(),
                    resource_ptr,
                    false,
                    logging_on,
                    event_mode_used,
                    early_return,
                    if intermediate_inputs.is_empty() {
                        std::ptr::null()
                    } else {
                        intermediate_inputs.as_ptr()
                    },
                    intermediate_inputs.len(),
                    core.env.as_ptr(),
                    Some(fmi3_log_message),
                    Some(fmi3_intermediate_update),
                )
            };
            core.trace_plain(|| {
                format!(
                    "fmi3InstantiateCoSimulation(instanceName={name:?}, instantiationToken={:?}, \
                     resourcePath={:?}, visible=false, loggingOn={logging_on}, \
                     eventModeUsed={event_mode_used}, earlyReturnAllowed={early_return}, \
                     requiredIntermediateVariables={intermediate_inputs:?}) -> {instance:?}",
                    description.instantiation_token,
                    resource_path.as_ref().map(|p| p.to_string_lossy()),
                )
            });
            (instance, "fmi3InstantiateCoSimulation")
        };
        if instance.is_null() {
            return Err(Error::Fmi {
                instance: name.to_string(),
                function,
                status: FmiStatus::Error,
                log: core.env().messages(),
            });
        }
        {
            let mut intermediate = lock(&core.env().intermediate);
            intermediate.instance = instance;
            intermediate.set_float64 = Some(f.set_float64);
        }
        let mut this = Fmi3Instance {
            core,
            model_exchange,
            scheduled,
            f,
            instance,
            states: StateTable::default(),
            event_mode_used,
            intermediate_inputs,
            array_sizes,
            configured_sizes: HashMap::new(),
            sub_step_inputs: Polynomial::default(),
            macro_step: None,
            sub_step_warned: false,
            bool_scratch: Vec::new(),
            int_scratch: Vec::new(),
            real_scratch: Vec::new(),
        };
        if !this.core.options.debug_categories.is_empty() {
            let categories = this.core.options.debug_categories.clone();
            this.set_debug_logging(true, &categories)?;
        }
        Ok(this)
    }

    /// `fmi3SetDebugLogging`.
    pub fn set_debug_logging(&mut self, logging_on: bool, categories: &[String]) -> Result<()> {
        const F: &str = "fmi3SetDebugLogging";
        self.core.require(F, ANY_STATE)?;
        let set = self.need(self.f.set_debug_logging, F)?;
        let c_categories = categories
            .iter()
            .map(|c| c_string(&self.core.name, "a log category", c))
            .collect::<Result<Vec<_>>>()?;
        let pointers: Vec<fmi3String> = c_categories.iter().map(|c| c.as_ptr()).collect();
        self.core.enter(F);
        // SAFETY: valid instance, pointers live across the call.
        let raw = unsafe { set(self.instance, logging_on, pointers.len(), pointers.as_ptr()) };
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

    /// Whether the instance was created with `eventModeUsed`.
    pub fn event_mode_used(&self) -> bool {
        self.event_mode_used
    }

    /// `fmi3ActivateModelPartition` (Scheduled Execution, in Clock Activation Mode, which
    /// cosimo keeps as [`SlaveState::StepMode`]): run the partition of the input clock `vr`
    /// at `time`. Returns whether the FMU called `clockUpdate` meanwhile. An activation that
    /// leaves `lockPreemption` and `unlockPreemption` unbalanced is an error.
    pub fn activate_model_partition(&mut self, vr: ValueReference, time: f64) -> Result<bool> {
        const F: &str = "fmi3ActivateModelPartition";
        self.core.require(F, &[SlaveState::StepMode])?;
        let activate = self.need(self.f.activate_model_partition, F)?;
        let updates = self.core.env().clock_updates.load(Ordering::Acquire);
        take_preemption_balance();
        self.core.enter(F);
        // SAFETY: valid instance.
        let raw = unsafe { activate(self.instance, vr, time) };
        let balance = take_preemption_balance();
        self.core.check(F, raw, || {
            format!("clockReference={vr}, activationTime={time}")
        })?;
        if balance != 0 {
            return Err(Error::Unsupported {
                instance: self.core.name.clone(),
                message: format!(
                    "{F}(clockReference={vr}, activationTime={time}): the partition called \
                     lockPreemption {} unlockPreemption (they must come in pairs within one \
                     activation)",
                    if balance > 0 {
                        format!("{balance} time(s) more often than")
                    } else {
                        format!("{} time(s) less often than", -balance)
                    }
                ),
            });
        }
        Ok(self.core.env().clock_updates.load(Ordering::Acquire) != updates)
    }

    /// `fmi3GetClock`: which of the clocks `vrs` are active.
    pub fn get_clock(&mut self, vrs: &[ValueReference], values: &mut [bool]) -> Result<()> {
        const F: &str = "fmi3GetClock";
        self.core.require(F, GET_STATES)?;
        let get = self.need(self.f.get_clock, F)?;
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.bool_scratch.clear();
        self.bool_scratch.resize(vrs.len(), 0);
        self.core.enter(F);
        // SAFETY: valid instance; the FMU writes one C bool (a byte) per clock.
        let raw = unsafe {
            get(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                self.bool_scratch.as_mut_ptr().cast::<bool>(),
            )
        };
        for (v, &b) in values.iter_mut().zip(&self.bool_scratch) {
            *v = flag(b);
        }
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    /// `fmi3SetClock`.
    pub fn set_clock(&mut self, vrs: &[ValueReference], values: &[bool]) -> Result<()> {
        const F: &str = "fmi3SetClock";
        self.core.require(F, SET_STATES)?;
        let set = self.need(self.f.set_clock, F)?;
        self.core.check_len(F, "values", vrs.len(), values.len())?;
        self.core.enter(F);
        // SAFETY: valid instance; Rust bool has the layout of C bool.
        let raw = unsafe { set(self.instance, vrs.as_ptr(), vrs.len(), values.as_ptr()) };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    /// `fmi3GetIntervalDecimal`.
    pub fn get_interval_decimal(
        &mut self,
        vrs: &[ValueReference],
        intervals: &mut [f64],
        qualifiers: &mut [IntervalQualifier],
    ) -> Result<()> {
        const F: &str = "fmi3GetIntervalDecimal";
        self.core.require(F, GET_STATES)?;
        let get = self.need(self.f.get_interval_decimal, F)?;
        self.core
            .check_len(F, "intervals", vrs.len(), intervals.len())?;
        self.core
            .check_len(F, "qualifiers", vrs.len(), qualifiers.len())?;
        let mut raw_qualifiers = vec![0; vrs.len()];
        self.core.enter(F);
        // SAFETY: valid instance; one interval and one qualifier per clock.
        let raw = unsafe {
            get(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                intervals.as_mut_ptr(),
                raw_qualifiers.as_mut_ptr(),
            )
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, intervals={intervals:?}"))?;
        for ((q, &r), vr) in qualifiers.iter_mut().zip(&raw_qualifiers).zip(vrs) {
            *q = IntervalQualifier::from_raw(r).ok_or_else(|| Error::Unsupported {
                instance: self.core.name.clone(),
                message: format!(
                    "{F}: clock vr {vr}: the qualifier {r} is none of FMI's (0, 1, 2)"
                ),
            })?;
        }
        Ok(())
    }

    fn need<T>(&self, function: Option<T>, name: &str) -> Result<T> {
        function.ok_or_else(|| self.core.missing_function(name))
    }

    /// Remember values set in Configuration Mode for structural parameters that size arrays
    /// (a scalar each), for [`Slave::exit_configuration_mode`].
    fn note_sizes<T: AsSize>(&mut self, vrs: &[ValueReference], values: &[T]) {
        if self.core.state != SlaveState::ConfigurationMode || vrs.len() != values.len() {
            return;
        }
        let description = &self.core.description;
        for (&vr, &value) in vrs.iter().zip(values) {
            let sizes = description
                .variables
                .iter()
                .flat_map(|v| &v.dimensions)
                .any(|d| d.start.is_none() && d.value_reference == Some(vr));
            if let (true, Some(n)) = (sizes, value.as_size()) {
                self.configured_sizes.insert(vr, n);
            }
        }
    }

    /// The number of values `vrs` stand for (arrays count all their elements).
    fn expected_values(&self, vrs: &[ValueReference]) -> usize {
        if self.array_sizes.is_empty() {
            vrs.len()
        } else {
            vrs.iter()
                .map(|vr| self.array_sizes.get(vr).copied().unwrap_or(1))
                .sum()
        }
    }

    fn check_values(&self, function: &str, vrs: &[ValueReference], got: usize) -> Result<()> {
        self.core
            .check_len(function, "values", self.expected_values(vrs), got)
    }

    fn set_float64_raw(&mut self, vrs: &[ValueReference], values: &[f64]) -> Result<()> {
        const F: &str = "fmi3SetFloat64";
        self.check_values(F, vrs, values.len())?;
        self.core.enter(F);
        // SAFETY: valid instance; nValues is the length of the buffer.
        let raw = unsafe {
            (self.f.set_float64)(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                values.as_ptr(),
                values.len(),
            )
        };
        let result = self
            .core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"));
        self.core.known.note(&result, vrs, values);
        result
    }

    /// Forget the polynomial inputs of `vrs` (a plain set overrides them).
    fn forget_polynomials(&mut self, vrs: &[ValueReference]) {
        self.sub_step_inputs.remove_all(vrs);
        if !self.intermediate_inputs.is_empty() {
            lock(&self.core.env().intermediate)
                .polynomial
                .remove_all(vrs);
        }
    }

    fn clear_polynomials(&mut self) {
        self.sub_step_inputs.clear();
        let mut intermediate = lock(&self.core.env().intermediate);
        intermediate.polynomial.clear();
        intermediate.active = false;
    }

    fn step_once(&mut self, t: f64, h: f64, outer_t: f64, outer_h: f64) -> Result<StepResult> {
        const F: &str = "fmi3DoStep";
        let do_step = self.need(self.f.do_step, F)?;
        let (mut event, mut terminate, mut early) = (0u8, 0u8, 0u8);
        let mut last = t;
        self.core.crash.set_time(t);
        self.core.enter(F);
        // SAFETY: valid instance; the out pointers point to bytes (C bool) and a double.
        let raw = unsafe {
            do_step(
                self.instance,
                t,
                h,
                false,
                (&mut event as *mut u8).cast::<bool>(),
                (&mut terminate as *mut u8).cast::<bool>(),
                (&mut early as *mut u8).cast::<bool>(),
                &mut last,
            )
        };
        let (event, terminate, early) = (flag(event), flag(terminate), flag(early));
        let status = self.core.record(F, raw, || {
            format!(
                "currentCommunicationPoint={t}, communicationStepSize={h}, \
                 noSetFMUStatePriorToCurrentPoint=false, eventHandlingNeeded={event}, \
                 terminateSimulation={terminate}, earlyReturn={early}, lastSuccessfulTime={last}"
            )
        });
        // A call the intermediate-update callback made within the step failed: that failure
        // counts as much as the step's own (and is reported when the step itself did not fail).
        if let Some(failure) = self.core.env().take_callback_failure() {
            const SET: &str = "fmi3SetFloat64";
            self.core.note_failure(SET, failure);
            if !matches!(status, FmiStatus::Error | FmiStatus::Fatal) {
                return Err(self.core.fmi_error(SET, failure));
            }
        }
        match status {
            FmiStatus::Ok | FmiStatus::Warning => Ok(StepResult {
                reached_time: if early { last } else { t + h },
                early_return: early,
                event_handling_needed: event,
                terminate_simulation: terminate,
            }),
            FmiStatus::Discard if terminate => Ok(StepResult {
                reached_time: last,
                early_return: last < t + h,
                event_handling_needed: event,
                terminate_simulation: true,
            }),
            FmiStatus::Discard => Err(Error::Discard {
                instance: self.core.name.clone(),
                current_time: outer_t,
                step_size: outer_h,
                last_successful_time: last,
                log: self.core.call_log(),
            }),
            status => Err(self.core.fmi_error(F, status)),
        }
    }

    fn do_step_inner(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        {
            let mut intermediate = lock(&self.core.env().intermediate);
            intermediate.active = !intermediate.polynomial.is_empty();
            intermediate.t0 = current_time;
        }
        if self.sub_step_inputs.is_empty() || self.sub_step_inputs.max_order() == 0 {
            return self.step_once(current_time, step_size, current_time, step_size);
        }
        let n = self.core.sub_step_count(&mut self.sub_step_warned);
        let mut result = StepResult {
            reached_time: current_time + step_size,
            early_return: false,
            event_handling_needed: false,
            terminate_simulation: false,
        };
        for (t, h_i, tau) in HeldSubSteps::new(current_time, step_size, n, self.macro_step) {
            // The polynomial at the sub-step's midpoint: held over the sub-step, its error is
            // O(h^3) per sub-step, so the run keeps global order 2 (the start value: order 1).
            let mut inputs = std::mem::take(&mut self.sub_step_inputs);
            let (vrs, values) = inputs.evaluate(tau);
            let set = self.set_float64_raw(vrs, values);
            self.sub_step_inputs = inputs;
            set?;
            result = self.step_once(t, h_i, current_time, step_size)?;
            if result.early_return || result.event_handling_needed || result.terminate_simulation {
                result.early_return = result.reached_time < current_time + step_size;
                break;
            }
        }
        if !result.early_return {
            result.reached_time = current_time + step_size;
        }
        Ok(result)
    }

    fn state_functions(
        &self,
        function: &str,
    ) -> Result<(
        fmi3GetFMUStateTYPE,
        fmi3SetFMUStateTYPE,
        fmi3FreeFMUStateTYPE,
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
                "{function}: the FMU cannot get and set its state (canGetAndSetFMUState is false)"
            ))),
        }
    }

    fn simple_call(
        &mut self,
        name: &'static str,
        function: Option<unsafe extern "C" fn(fmi3Instance) -> fmi3Status>,
    ) -> Result<()> {
        let call = self.need(function, name)?;
        self.core.enter(name);
        // SAFETY: valid instance.
        let raw = unsafe { call(self.instance) };
        self.core.check(name, raw, String::new)
    }
}

/// Calls `$field` of the function table with the instance and `args`, checked as `$name`.
macro_rules! me_call {
    ($self:ident, $name:literal, $field:ident, $allowed:expr, ($($arg:expr),*), $show:expr) => {{
        const F: &str = $name;
        $self.core.require(F, $allowed)?;
        let Some(function) = $self.f.$field.filter(|_| $self.model_exchange) else {
            return Err($self.core.missing_function(F));
        };
        $self.core.enter(F);
        // SAFETY: valid instance; the slices' pointers and lengths go together.
        let raw = unsafe { function($self.instance, $($arg),*) };
        $self.core.check(F, raw, $show)
    }};
}

const ME_EVALUATE: &[SlaveState] = &[
    SlaveState::InitializationMode,
    SlaveState::EventMode,
    SlaveState::ContinuousTimeMode,
    SlaveState::Terminated,
];

impl super::ModelExchangeInstance for Fmi3Instance {
    fn continuous_state_count(&self) -> usize {
        // Array states count every element.
        let structure = &self.core.description.model_structure;
        structure
            .continuous_state_derivatives
            .iter()
            .map(|u| element_count(&self.core.description, u.variable, &self.configured_sizes))
            .sum()
    }

    fn event_indicator_count(&self) -> usize {
        let structure = &self.core.description.model_structure;
        structure
            .event_indicators
            .iter()
            .map(|u| element_count(&self.core.description, u.variable, &self.configured_sizes))
            .sum()
    }

    fn set_time(&mut self, time: f64) -> Result<()> {
        self.core.crash.set_time(time);
        me_call!(
            self,
            "fmi3SetTime",
            set_time,
            &[SlaveState::EventMode, SlaveState::ContinuousTimeMode],
            (time),
            || format!("time={time}")
        )
    }

    fn set_continuous_states(&mut self, x: &[f64]) -> Result<()> {
        me_call!(
            self,
            "fmi3SetContinuousStates",
            set_continuous_states,
            &[SlaveState::EventMode, SlaveState::ContinuousTimeMode],
            (x.as_ptr(), x.len()),
            || format!("continuousStates={x:?}")
        )
    }

    fn get_continuous_states(&mut self, x: &mut [f64]) -> Result<()> {
        let n = x.len();
        me_call!(
            self,
            "fmi3GetContinuousStates",
            get_continuous_states,
            ME_EVALUATE,
            (x.as_mut_ptr(), n),
            || format!("nContinuousStates={n}")
        )
    }

    fn get_derivatives(&mut self, dx: &mut [f64]) -> Result<()> {
        let n = dx.len();
        me_call!(
            self,
            "fmi3GetContinuousStateDerivatives",
            get_continuous_state_derivatives,
            ME_EVALUATE,
            (dx.as_mut_ptr(), n),
            || format!("nContinuousStates={n}")
        )
    }

    fn get_event_indicators(&mut self, z: &mut [f64]) -> Result<()> {
        let n = z.len();
        me_call!(
            self,
            "fmi3GetEventIndicators",
            get_event_indicators,
            ME_EVALUATE,
            (z.as_mut_ptr(), n),
            || format!("nEventIndicators={n}")
        )
    }

    fn get_nominals(&mut self, nominals: &mut [f64]) -> Result<()> {
        let n = nominals.len();
        me_call!(
            self,
            "fmi3GetNominalsOfContinuousStates",
            get_nominals_of_continuous_states,
            ME_EVALUATE,
            (nominals.as_mut_ptr(), n),
            || format!("nContinuousStates={n}")
        )
    }

    fn enter_continuous_time_mode(&mut self) -> Result<()> {
        me_call!(
            self,
            "fmi3EnterContinuousTimeMode",
            enter_continuous_time_mode,
            &[SlaveState::EventMode],
            (),
            String::new
        )?;
        self.core.state = SlaveState::ContinuousTimeMode;
        Ok(())
    }

    fn completed_integrator_step(&mut self) -> Result<(bool, bool)> {
        // Bytes, not Rust bools: the FMU may write any value into a C bool.
        let (mut enter, mut terminate) = (0u8, 0u8);
        me_call!(
            self,
            "fmi3CompletedIntegratorStep",
            completed_integrator_step,
            &[SlaveState::ContinuousTimeMode],
            (
                true,
                (&mut enter as *mut u8).cast::<bool>(),
                (&mut terminate as *mut u8).cast::<bool>()
            ),
            || "noSetFMUStatePriorToCurrentPoint=true".to_string()
        )?;
        Ok((flag(enter), flag(terminate)))
    }
}

impl Slave for Fmi3Instance {
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
        const F: &str = "fmi3EnterConfigurationMode";
        self.core.require(F, &[SlaveState::Instantiated])?;
        self.simple_call(F, self.f.enter_configuration_mode)?;
        self.core.state = SlaveState::ConfigurationMode;
        Ok(())
    }

    fn exit_configuration_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3ExitConfigurationMode";
        self.core.require(F, &[SlaveState::ConfigurationMode])?;
        self.simple_call(F, self.f.exit_configuration_mode)?;
        self.core.state = SlaveState::Instantiated;
        // The FMU accepted the structural parameters: its arrays now have their sizes.
        self.array_sizes = array_sizes(&self.core.description, &self.configured_sizes);
        Ok(())
    }

    fn enter_initialization_mode(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        const F: &str = "fmi3EnterInitializationMode";
        self.core.require(F, &[SlaveState::Instantiated])?;
        let (tol_defined, tol) = (tolerance.is_some(), tolerance.unwrap_or(0.0));
        let (stop_defined, stop) = (stop_time.is_some(), stop_time.unwrap_or(0.0));
        self.core.crash.set_time(start_time);
        self.core.enter(F);
        // SAFETY: valid instance.
        let raw = unsafe {
            (self.f.enter_initialization_mode)(
                self.instance,
                tol_defined,
                tol,
                start_time,
                stop_defined,
                stop,
            )
        };
        self.core.check(F, raw, || {
            format!(
                "toleranceDefined={tol_defined}, tolerance={tol}, startTime={start_time}, \
                 stopTimeDefined={stop_defined}, stopTime={stop}"
            )
        })?;
        self.core.state = SlaveState::InitializationMode;
        Ok(())
    }

    fn exit_initialization_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3ExitInitializationMode";
        self.core.require(F, &[SlaveState::InitializationMode])?;
        self.core.enter(F);
        // SAFETY: valid instance.
        let raw = unsafe { (self.f.exit_initialization_mode)(self.instance) };
        self.core.check(F, raw, String::new)?;
        // With eventModeUsed the FMU continues in event mode (FMI 3.0, Co-Simulation); Model
        // Exchange always does.
        // Scheduled Execution goes on in Clock Activation Mode (kept as StepMode).
        self.core.state = if (self.event_mode_used || self.model_exchange) && !self.scheduled {
            SlaveState::EventMode
        } else {
            SlaveState::StepMode
        };
        Ok(())
    }

    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        self.core.require("fmi3DoStep", &[SlaveState::StepMode])?;
        // Intermediate updates set inputs from inside the step.
        if !self.intermediate_inputs.is_empty() {
            self.core.known.forget();
        }
        let result = self.do_step_inner(current_time, step_size);
        if let Ok(step) = &result {
            self.core.crash.set_time(step.reached_time);
        }
        self.clear_polynomials();
        result
    }

    fn get_clock(&mut self, vrs: &[ValueReference], active: &mut [bool]) -> Result<()> {
        Fmi3Instance::get_clock(self, vrs, active)
    }

    fn set_clock(&mut self, vrs: &[ValueReference], active: &[bool]) -> Result<()> {
        Fmi3Instance::set_clock(self, vrs, active)
    }

    fn get_interval_decimal(
        &mut self,
        vrs: &[ValueReference],
        intervals: &mut [f64],
        qualifiers: &mut [IntervalQualifier],
    ) -> Result<()> {
        Fmi3Instance::get_interval_decimal(self, vrs, intervals, qualifiers)
    }

    fn enter_event_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3EnterEventMode";
        if self.model_exchange {
            self.core.require(F, &[SlaveState::ContinuousTimeMode])?;
            self.simple_call(F, self.f.enter_event_mode)?;
            self.core.state = SlaveState::EventMode;
            return Ok(());
        }
        self.core.require(F, &[SlaveState::StepMode])?;
        if !self.event_mode_used {
            return Err(self.core.unsupported(
                "enter_event_mode: the instance does not use event mode (the FMU lacks \
                 hasEventMode or the event_mode option is off)",
            ));
        }
        self.simple_call(F, self.f.enter_event_mode)?;
        self.core.state = SlaveState::EventMode;
        Ok(())
    }

    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        const F: &str = "fmi3UpdateDiscreteStates";
        self.core.require(F, &[SlaveState::EventMode])?;
        let update = self.need(self.f.update_discrete_states, F)?;
        let mut flags = [0u8; 5];
        let mut next_event_time = 0.0;
        let p = flags.as_mut_ptr().cast::<bool>();
        self.core.enter(F);
        // SAFETY: valid instance; five distinct byte-sized out flags and a double.
        let raw = unsafe {
            update(
                self.instance,
                p,
                p.add(1),
                p.add(2),
                p.add(3),
                p.add(4),
                &mut next_event_time,
            )
        };
        let result = DiscreteStatesUpdate {
            discrete_states_need_update: flag(flags[0]),
            terminate_simulation: flag(flags[1]),
            nominals_of_continuous_states_changed: flag(flags[2]),
            values_of_continuous_states_changed: flag(flags[3]),
            next_event_time: flag(flags[4]).then_some(next_event_time),
        };
        self.core.check(F, raw, || format!("{result:?}"))?;
        Ok(result)
    }

    fn enter_step_mode(&mut self) -> Result<()> {
        const F: &str = "fmi3EnterStepMode";
        if self.model_exchange {
            return Err(self.core.unsupported(
                "fmi3EnterStepMode is Co-Simulation's; this is a Model Exchange instance",
            ));
        }
        self.core.require(F, &[SlaveState::EventMode])?;
        self.simple_call(F, self.f.enter_step_mode)?;
        self.core.state = SlaveState::StepMode;
        Ok(())
    }

    fn terminate(&mut self) -> Result<()> {
        const F: &str = "fmi3Terminate";
        self.core.require(
            F,
            &[
                SlaveState::StepMode,
                SlaveState::EventMode,
                SlaveState::ContinuousTimeMode,
            ],
        )?;
        self.simple_call(F, Some(self.f.terminate))?;
        self.core.state = SlaveState::Terminated;
        Ok(())
    }

    fn reset(&mut self) -> Result<()> {
        const F: &str = "fmi3Reset";
        self.core.require(F, ANY_STATE)?;
        self.core.known.forget();
        self.simple_call(F, Some(self.f.reset))?;
        self.core.state = SlaveState::Instantiated;
        // Back to the start values, structural parameters included.
        self.configured_sizes.clear();
        self.array_sizes = array_sizes(&self.core.description, &self.configured_sizes);
        self.core.recovered();
        self.clear_polynomials();
        Ok(())
    }

    fn get_float64(&mut self, vrs: &[ValueReference], values: &mut [f64]) -> Result<()> {
        const F: &str = "fmi3GetFloat64";
        self.core.require(F, GET_STATES)?;
        self.check_values(F, vrs, values.len())?;
        self.core.enter(F);
        // SAFETY: valid instance; nValues is the length of the buffer.
        let raw = unsafe {
            (self.f.get_float64)(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                values.as_mut_ptr(),
                values.len(),
            )
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn set_float64(&mut self, vrs: &[ValueReference], values: &[f64]) -> Result<()> {
        self.core.require("fmi3SetFloat64", SET_STATES)?;
        self.forget_polynomials(vrs);
        if self.core.known.holds(vrs, values) {
            return Ok(());
        }
        self.set_float64_raw(vrs, values)
    }

    fmi3_numeric! {
        get_float32, set_float32, f32, "fmi3GetFloat32", "fmi3SetFloat32";
        get_int8, set_int8, i8, "fmi3GetInt8", "fmi3SetInt8";
        get_uint8, set_uint8, u8, "fmi3GetUInt8", "fmi3SetUInt8";
        get_int16, set_int16, i16, "fmi3GetInt16", "fmi3SetInt16";
        get_uint16, set_uint16, u16, "fmi3GetUInt16", "fmi3SetUInt16";
        get_int32, set_int32, i32, "fmi3GetInt32", "fmi3SetInt32";
        get_uint32, set_uint32, u32, "fmi3GetUInt32", "fmi3SetUInt32";
        get_int64, set_int64, i64, "fmi3GetInt64", "fmi3SetInt64";
        get_uint64, set_uint64, u64, "fmi3GetUInt64", "fmi3SetUInt64";
    }

    fn get_boolean(&mut self, vrs: &[ValueReference], values: &mut [bool]) -> Result<()> {
        const F: &str = "fmi3GetBoolean";
        self.core.require(F, GET_STATES)?;
        let get = self.need(self.f.get_boolean, F)?;
        self.check_values(F, vrs, values.len())?;
        self.bool_scratch.clear();
        self.bool_scratch.resize(values.len(), 0);
        self.core.enter(F);
        // SAFETY: valid instance; the FMU writes one C bool (a byte) per value into the
        // scratch buffer, read back as bytes.
        let raw = unsafe {
            get(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                self.bool_scratch.as_mut_ptr().cast::<bool>(),
                values.len(),
            )
        };
        for (v, &b) in values.iter_mut().zip(&self.bool_scratch) {
            *v = flag(b);
        }
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn set_boolean(&mut self, vrs: &[ValueReference], values: &[bool]) -> Result<()> {
        const F: &str = "fmi3SetBoolean";
        self.core.require(F, SET_STATES)?;
        let set = self.need(self.f.set_boolean, F)?;
        self.check_values(F, vrs, values.len())?;
        self.core.enter(F);
        // SAFETY: valid instance; Rust bool has the layout of C bool.
        let raw = unsafe {
            set(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                values.as_ptr(),
                values.len(),
            )
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn get_string(&mut self, vrs: &[ValueReference]) -> Result<Vec<String>> {
        const F: &str = "fmi3GetString";
        self.core.require(F, GET_STATES)?;
        let get = self.need(self.f.get_string, F)?;
        let n = self.expected_values(vrs);
        let mut pointers: Vec<fmi3String> = vec![std::ptr::null(); n];
        self.core.enter(F);
        // SAFETY: valid instance; pointer buffer of nValues entries.
        let raw = unsafe {
            get(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                pointers.as_mut_ptr(),
                n,
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
        const F: &str = "fmi3SetString";
        self.core.require(F, SET_STATES)?;
        let set = self.need(self.f.set_string, F)?;
        self.check_values(F, vrs, values.len())?;
        let strings = values
            .iter()
            .map(|s| c_string(&self.core.name, "a String value", s))
            .collect::<Result<Vec<_>>>()?;
        let pointers: Vec<fmi3String> = strings.iter().map(|s| s.as_ptr()).collect();
        self.core.enter(F);
        // SAFETY: valid instance; pointers live across the call.
        let raw = unsafe {
            set(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                pointers.as_ptr(),
                pointers.len(),
            )
        };
        self.core
            .check(F, raw, || format!("vr={vrs:?}, value={values:?}"))
    }

    fn get_binary(&mut self, vrs: &[ValueReference]) -> Result<Vec<Vec<u8>>> {
        const F: &str = "fmi3GetBinary";
        self.core.require(F, GET_STATES)?;
        let get = self.need(self.f.get_binary, F)?;
        let n = self.expected_values(vrs);
        let mut sizes = vec![0usize; n];
        let mut pointers: Vec<fmi3Binary> = vec![std::ptr::null(); n];
        self.core.enter(F);
        // SAFETY: valid instance; size and pointer buffers of nValues entries.
        let raw = unsafe {
            get(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                sizes.as_mut_ptr(),
                pointers.as_mut_ptr(),
                n,
            )
        };
        let values: Vec<Vec<u8>> = pointers
            .iter()
            .zip(&sizes)
            .map(|(&p, &size)| {
                if p.is_null() || size == 0 {
                    Vec::new()
                } else {
                    // SAFETY: the FMU returns `size` readable bytes at `p`, valid until its
                    // next call.
                    unsafe { std::slice::from_raw_parts(p, size) }.to_vec()
                }
            })
            .collect();
        self.core.check(F, raw, || {
            format!("vr={vrs:?}, valueSizes={sizes:?}, value={values:?}")
        })?;
        if pointers
            .iter()
            .zip(&sizes)
            .any(|(p, &s)| p.is_null() && s > 0)
        {
            ::log::warn!(
                "{}: {F} returned a NULL value with a non-zero size; read as empty",
                self.core.name
            );
        }
        Ok(values)
    }

    fn set_binary(&mut self, vrs: &[ValueReference], values: &[&[u8]]) -> Result<()> {
        const F: &str = "fmi3SetBinary";
        self.core.require(F, SET_STATES)?;
        let set = self.need(self.f.set_binary, F)?;
        self.check_values(F, vrs, values.len())?;
        let sizes: Vec<usize> = values.iter().map(|v| v.len()).collect();
        let pointers: Vec<fmi3Binary> = values.iter().map(|v| v.as_ptr()).collect();
        self.core.enter(F);
        // SAFETY: valid instance; sizes and pointers describe live slices.
        let raw = unsafe {
            set(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                sizes.as_ptr(),
                pointers.as_ptr(),
                values.len(),
            )
        };
        self.core.check(F, raw, || {
            format!("vr={vrs:?}, valueSizes={sizes:?}, value={values:?}")
        })
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
        const F: &str = "fmi3GetFMUState";
        self.core.require(F, ANY_STATE)?;
        let (get, _, _) = self.state_functions(F)?;
        let mut pointer: fmi3FMUState = std::ptr::null_mut();
        self.core.enter(F);
        // SAFETY: valid instance; a null state asks the FMU for a new one.
        let raw = unsafe { get(self.instance, &mut pointer) };
        self.core
            .check(F, raw, || format!("FMUState={pointer:?}"))?;
        if pointer.is_null() {
            return Err(self
                .core
                .unsupported(format!("{F} returned OK but no state")));
        }
        Ok(self.states.insert(pointer, Some(self.core.state)))
    }

    fn update_state(&mut self, state: StateId) -> Result<()> {
        const F: &str = "fmi3GetFMUState";
        self.core.require(F, ANY_STATE)?;
        let (get, _, _) = self.state_functions(F)?;
        let Some((mut pointer, _)) = self.states.get(state) else {
            return Err(unknown_state(&self.core.name, state));
        };
        self.core.enter(F);
        // SAFETY: valid instance; the FMU overwrites the state it allocated.
        let raw = unsafe { get(self.instance, &mut pointer) };
        self.states.set(state, pointer, Some(self.core.state));
        self.core.check(F, raw, || format!("FMUState={pointer:?}"))
    }

    fn restore_state(&mut self, state: StateId) -> Result<()> {
        const F: &str = "fmi3SetFMUState";
        self.core.require(F, ANY_STATE)?;
        let (_, set, _) = self.state_functions(F)?;
        let Some((pointer, saved_in)) = self.states.get(state) else {
            return Err(unknown_state(&self.core.name, state));
        };
        self.core.known.forget();
        self.core.enter(F);
        // SAFETY: valid instance and a state this FMU produced.
        let raw = unsafe { set(self.instance, pointer) };
        self.core
            .check(F, raw, || format!("FMUState={pointer:?}"))?;
        if let Some(saved_in) = saved_in {
            self.core.state = saved_in;
        }
        self.core.recovered();
        self.clear_polynomials();
        Ok(())
    }

    fn free_state(&mut self, state: StateId) -> Result<()> {
        const F: &str = "fmi3FreeFMUState";
        self.core.require(F, ANY_STATE)?;
        let (_, _, free_state) = self.state_functions(F)?;
        let Some(mut pointer) = self.states.take(state) else {
            return Err(unknown_state(&self.core.name, state));
        };
        let shown = pointer;
        self.core.enter(F);
        // SAFETY: valid instance and a state this FMU produced, freed once (taken out).
        let raw = unsafe { free_state(self.instance, &mut pointer) };
        self.core.check(F, raw, || format!("FMUState={shown:?}"))
    }

    fn serialize_state(&mut self, state: StateId) -> Result<Vec<u8>> {
        const SIZE: &str = "fmi3SerializedFMUStateSize";
        const F: &str = "fmi3SerializeFMUState";
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
                "serialize_state: the FMU cannot serialise its state (canSerializeFMUState is false)",
            ));
        };
        let Some((pointer, _)) = self.states.get(state) else {
            return Err(unknown_state(&self.core.name, state));
        };
        let mut size = 0usize;
        self.core.enter(SIZE);
        // SAFETY: valid instance, state and out pointer.
        let raw = unsafe { size_of(self.instance, pointer, &mut size) };
        self.core
            .check(SIZE, raw, || format!("FMUState={pointer:?}, size={size}"))?;
        let mut bytes = vec![0u8; size];
        self.core.enter(F);
        // SAFETY: buffer of `size` bytes.
        let raw = unsafe { serialize(self.instance, pointer, bytes.as_mut_ptr(), size) };
        self.core
            .check(F, raw, || format!("FMUState={pointer:?}, size={size}"))?;
        Ok(bytes)
    }

    fn deserialize_state(&mut self, bytes: &[u8]) -> Result<StateId> {
        const F: &str = "fmi3DeserializeFMUState";
        self.core.require(F, ANY_STATE)?;
        let can = self
            .core
            .co_simulation()
            .is_some_and(|cs| cs.can_serialize_fmu_state);
        let (true, Some(deserialize)) = (can, self.f.deserialize_fmu_state) else {
            return Err(self.core.unsupported(
                "deserialize_state: the FMU cannot serialise its state (canSerializeFMUState is false)",
            ));
        };
        let mut pointer: fmi3FMUState = std::ptr::null_mut();
        self.core.enter(F);
        // SAFETY: valid instance, byte buffer of the given size.
        let raw = unsafe { deserialize(self.instance, bytes.as_ptr(), bytes.len(), &mut pointer) };
        let size = bytes.len();
        self.core
            .check(F, raw, || format!("size={size}, FMUState={pointer:?}"))?;
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
        const F: &str = "fmi3GetDirectionalDerivative";
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
            .check_len(F, "seed values", self.expected_values(knowns), seed.len())?;
        self.core.check_len(
            F,
            "sensitivity values",
            self.expected_values(unknowns),
            sensitivity.len(),
        )?;
        self.core.enter(F);
        // SAFETY: valid instance; every count is the length of its buffer.
        let raw = unsafe {
            get(
                self.instance,
                unknowns.as_ptr(),
                unknowns.len(),
                knowns.as_ptr(),
                knowns.len(),
                seed.as_ptr(),
                seed.len(),
                sensitivity.as_mut_ptr(),
                sensitivity.len(),
            )
        };
        self.core.check(F, raw, || {
            format!(
                "unknowns={unknowns:?}, knowns={knowns:?}, seed={seed:?}, \
                 sensitivity={sensitivity:?}"
            )
        })
    }

    fn max_output_derivative_order(&self) -> u32 {
        if self.f.get_output_derivatives.is_some() {
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
        const F: &str = "fmi3GetOutputDerivatives";
        self.core
            .require(F, &[SlaveState::StepMode, SlaveState::Terminated])?;
        let max = self.max_output_derivative_order();
        let Some(get) = self
            .f
            .get_output_derivatives
            .filter(|_| order >= 1 && order <= max)
        else {
            return Err(self.core.unsupported(format!(
                "get_output_derivatives: order {order} is not available (maxOutputDerivativeOrder = {max})"
            )));
        };
        self.check_values(F, vrs, values.len())?;
        self.int_scratch.clear();
        self.int_scratch
            .resize(vrs.len(), i32::try_from(order).unwrap_or(i32::MAX));
        self.core.enter(F);
        // SAFETY: valid instance; one order per value reference, nValues is the buffer length.
        let raw = unsafe {
            get(
                self.instance,
                vrs.as_ptr(),
                vrs.len(),
                self.int_scratch.as_ptr(),
                values.as_mut_ptr(),
                values.len(),
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
            &[
                SlaveState::InitializationMode,
                SlaveState::StepMode,
                SlaveState::EventMode,
            ],
        )?;
        self.core.check_polynomial(vrs, order, taylor)?;
        if !self.array_sizes.is_empty() && self.expected_values(vrs) != vrs.len() {
            return Err(Error::Internal(format!(
                "{}: set_input_polynomial: array variables cannot follow a polynomial",
                self.core.name
            )));
        }
        let mut values = std::mem::take(&mut self.real_scratch);
        values.clear();
        values.extend(taylor.iter().step_by(order + 1).copied());
        let result = self.set_float64_raw(vrs, &values);
        self.real_scratch = values;
        result?;
        self.forget_polynomials(vrs);
        let intermediate = !self.core.options.force_sub_steps
            && !vrs.is_empty()
            && vrs
                .iter()
                .all(|vr| self.intermediate_inputs.binary_search(vr).is_ok());
        if intermediate {
            lock(&self.core.env().intermediate)
                .polynomial
                .insert(vrs, order, taylor);
            Ok(PolynomialInputMode::IntermediateUpdate)
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

impl Drop for Fmi3Instance {
    /// Terminate (from step or event mode), free the saved FMU states and the instance; after
    /// an `Error` only `fmi3FreeInstance`, after a `Fatal` nothing (see the module
    /// documentation).
    fn drop(&mut self) {
        {
            let mut intermediate = lock(&self.core.env().intermediate);
            intermediate.active = false;
        }
        if self.core.clean_up_allowed()
            && matches!(
                self.core.state,
                SlaveState::StepMode | SlaveState::EventMode
            )
        {
            if let Err(e) = self.terminate() {
                ::log::warn!("{}: while freeing the instance: {e}", self.core.name);
            }
        }
        if let Some(free_state) = self.f.free_fmu_state {
            for mut pointer in self.states.drain() {
                // After an Error, fmi3FreeInstance frees the states too.
                if !self.core.clean_up_allowed() {
                    break;
                }
                self.core.enter("fmi3FreeFMUState");
                // SAFETY: a state this FMU produced, freed once (drained).
                let raw = unsafe { free_state(self.instance, &mut pointer) };
                if let Err(e) = self.core.check("fmi3FreeFMUState", raw, String::new) {
                    ::log::warn!("{}: while freeing the instance: {e}", self.core.name);
                }
            }
        }
        if self.core.fatal().is_some() {
            self.core.leak("fmi3FreeInstance");
            return;
        }
        self.core.enter("fmi3FreeInstance");
        // SAFETY: the instance is valid and freed exactly once; the environment is dropped only
        // after this (a field, dropped after Drop::drop).
        unsafe { (self.f.free_instance)(self.instance) };
        self.core.trace_plain(|| "fmi3FreeInstance()".to_string());
        {
            let mut intermediate = lock(&self.core.env().intermediate);
            intermediate.instance = std::ptr::null_mut::<c_void>();
        }
        self.instance = std::ptr::null_mut();
    }
}
