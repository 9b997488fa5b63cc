//! FMI 2.0 types and function signatures (`fmi2TypesPlatform.h`, `fmi2FunctionTypes.h`), for
//! the common and the Co-Simulation functions.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;

use super::{missing_capability, require_interface};
use crate::error::Result;
use crate::fmu::description::{Interface, ModelDescription};

pub type fmi2Component = *mut c_void;
pub type fmi2ComponentEnvironment = *mut c_void;
pub type fmi2FMUstate = *mut c_void;
pub type fmi2ValueReference = u32;
pub type fmi2Real = f64;
pub type fmi2Integer = c_int;
pub type fmi2Boolean = c_int;
pub type fmi2Char = c_char;
pub type fmi2String = *const fmi2Char;
pub type fmi2Byte = c_char;

pub const fmi2True: fmi2Boolean = 1;
pub const fmi2False: fmi2Boolean = 0;

/// `fmi2Status`, kept as the raw C enum value (an FMU may return anything).
pub type fmi2Status = c_int;
pub const fmi2OK: fmi2Status = 0;
pub const fmi2Warning: fmi2Status = 1;
pub const fmi2Discard: fmi2Status = 2;
pub const fmi2Error: fmi2Status = 3;
pub const fmi2Fatal: fmi2Status = 4;
pub const fmi2Pending: fmi2Status = 5;

/// `fmi2Type`.
pub type fmi2Type = c_int;
pub const fmi2ModelExchange: fmi2Type = 0;
pub const fmi2CoSimulation: fmi2Type = 1;

/// `fmi2StatusKind`.
pub type fmi2StatusKind = c_int;
pub const fmi2DoStepStatus: fmi2StatusKind = 0;
pub const fmi2PendingStatus: fmi2StatusKind = 1;
pub const fmi2LastSuccessfulTime: fmi2StatusKind = 2;
pub const fmi2Terminated: fmi2StatusKind = 3;

/// `fmi2CallbackLogger`: C-variadic (printf-style `message, ...`).
pub type fmi2CallbackLogger = unsafe extern "C" fn(
    componentEnvironment: fmi2ComponentEnvironment,
    instanceName: fmi2String,
    status: fmi2Status,
    category: fmi2String,
    message: fmi2String,
    ...
);
pub type fmi2CallbackAllocateMemory = unsafe extern "C" fn(nobj: usize, size: usize) -> *mut c_void;
pub type fmi2CallbackFreeMemory = unsafe extern "C" fn(obj: *mut c_void);
pub type fmi2StepFinished =
    unsafe extern "C" fn(componentEnvironment: fmi2ComponentEnvironment, status: fmi2Status);

/// `fmi2CallbackFunctions`; the FMU may keep the pointer to it, so it must outlive the instance.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct fmi2CallbackFunctions {
    pub logger: Option<fmi2CallbackLogger>,
    pub allocateMemory: Option<fmi2CallbackAllocateMemory>,
    pub freeMemory: Option<fmi2CallbackFreeMemory>,
    pub stepFinished: Option<fmi2StepFinished>,
    pub componentEnvironment: fmi2ComponentEnvironment,
}

/// `fmi2EventInfo` (Model Exchange).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct fmi2EventInfo {
    pub newDiscreteStatesNeeded: fmi2Boolean,
    pub terminateSimulation: fmi2Boolean,
    pub nominalsOfContinuousStatesChanged: fmi2Boolean,
    pub valuesOfContinuousStatesChanged: fmi2Boolean,
    pub nextEventTimeDefined: fmi2Boolean,
    pub nextEventTime: fmi2Real,
}

// Common functions.
pub type fmi2GetTypesPlatformTYPE = unsafe extern "C" fn() -> *const c_char;
pub type fmi2GetVersionTYPE = unsafe extern "C" fn() -> *const c_char;
pub type fmi2SetDebugLoggingTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    loggingOn: fmi2Boolean,
    nCategories: usize,
    categories: *const fmi2String,
) -> fmi2Status;
pub type fmi2InstantiateTYPE = unsafe extern "C" fn(
    instanceName: fmi2String,
    fmuType: fmi2Type,
    fmuGUID: fmi2String,
    fmuResourceLocation: fmi2String,
    functions: *const fmi2CallbackFunctions,
    visible: fmi2Boolean,
    loggingOn: fmi2Boolean,
) -> fmi2Component;
pub type fmi2FreeInstanceTYPE = unsafe extern "C" fn(c: fmi2Component);
pub type fmi2SetupExperimentTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    toleranceDefined: fmi2Boolean,
    tolerance: fmi2Real,
    startTime: fmi2Real,
    stopTimeDefined: fmi2Boolean,
    stopTime: fmi2Real,
) -> fmi2Status;
pub type fmi2EnterInitializationModeTYPE = unsafe extern "C" fn(c: fmi2Component) -> fmi2Status;
pub type fmi2ExitInitializationModeTYPE = unsafe extern "C" fn(c: fmi2Component) -> fmi2Status;
pub type fmi2TerminateTYPE = unsafe extern "C" fn(c: fmi2Component) -> fmi2Status;
pub type fmi2ResetTYPE = unsafe extern "C" fn(c: fmi2Component) -> fmi2Status;

pub type fmi2GetRealTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *mut fmi2Real,
) -> fmi2Status;
pub type fmi2GetIntegerTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *mut fmi2Integer,
) -> fmi2Status;
pub type fmi2GetBooleanTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *mut fmi2Boolean,
) -> fmi2Status;
pub type fmi2GetStringTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *mut fmi2String,
) -> fmi2Status;
pub type fmi2SetRealTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *const fmi2Real,
) -> fmi2Status;
pub type fmi2SetIntegerTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *const fmi2Integer,
) -> fmi2Status;
pub type fmi2SetBooleanTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *const fmi2Boolean,
) -> fmi2Status;
pub type fmi2SetStringTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *const fmi2String,
) -> fmi2Status;

pub type fmi2GetFMUstateTYPE =
    unsafe extern "C" fn(c: fmi2Component, FMUstate: *mut fmi2FMUstate) -> fmi2Status;
pub type fmi2SetFMUstateTYPE =
    unsafe extern "C" fn(c: fmi2Component, FMUstate: fmi2FMUstate) -> fmi2Status;
pub type fmi2FreeFMUstateTYPE =
    unsafe extern "C" fn(c: fmi2Component, FMUstate: *mut fmi2FMUstate) -> fmi2Status;
pub type fmi2SerializedFMUstateSizeTYPE =
    unsafe extern "C" fn(c: fmi2Component, FMUstate: fmi2FMUstate, size: *mut usize) -> fmi2Status;
pub type fmi2SerializeFMUstateTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    FMUstate: fmi2FMUstate,
    serializedState: *mut fmi2Byte,
    size: usize,
) -> fmi2Status;
pub type fmi2DeSerializeFMUstateTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    serializedState: *const fmi2Byte,
    size: usize,
    FMUstate: *mut fmi2FMUstate,
) -> fmi2Status;
pub type fmi2GetDirectionalDerivativeTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vUnknown_ref: *const fmi2ValueReference,
    nUnknown: usize,
    vKnown_ref: *const fmi2ValueReference,
    nKnown: usize,
    dvKnown: *const fmi2Real,
    dvUnknown: *mut fmi2Real,
) -> fmi2Status;

// Co-Simulation functions.
pub type fmi2SetRealInputDerivativesTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    order: *const fmi2Integer,
    value: *const fmi2Real,
) -> fmi2Status;
pub type fmi2GetRealOutputDerivativesTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    order: *const fmi2Integer,
    value: *mut fmi2Real,
) -> fmi2Status;
pub type fmi2DoStepTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    currentCommunicationPoint: fmi2Real,
    communicationStepSize: fmi2Real,
    noSetFMUStatePriorToCurrentPoint: fmi2Boolean,
) -> fmi2Status;
pub type fmi2CancelStepTYPE = unsafe extern "C" fn(c: fmi2Component) -> fmi2Status;
pub type fmi2GetStatusTYPE =
    unsafe extern "C" fn(c: fmi2Component, s: fmi2StatusKind, value: *mut fmi2Status) -> fmi2Status;
pub type fmi2GetRealStatusTYPE =
    unsafe extern "C" fn(c: fmi2Component, s: fmi2StatusKind, value: *mut fmi2Real) -> fmi2Status;
pub type fmi2GetIntegerStatusTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    s: fmi2StatusKind,
    value: *mut fmi2Integer,
) -> fmi2Status;
pub type fmi2GetBooleanStatusTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    s: fmi2StatusKind,
    value: *mut fmi2Boolean,
) -> fmi2Status;
pub type fmi2GetStringStatusTYPE =
    unsafe extern "C" fn(c: fmi2Component, s: fmi2StatusKind, value: *mut fmi2String) -> fmi2Status;

// Model Exchange functions.
pub type fmi2EnterEventModeTYPE = unsafe extern "C" fn(c: fmi2Component) -> fmi2Status;
pub type fmi2NewDiscreteStatesTYPE =
    unsafe extern "C" fn(c: fmi2Component, fmi2eventInfo: *mut fmi2EventInfo) -> fmi2Status;
pub type fmi2EnterContinuousTimeModeTYPE = unsafe extern "C" fn(c: fmi2Component) -> fmi2Status;
pub type fmi2CompletedIntegratorStepTYPE = unsafe extern "C" fn(
    c: fmi2Component,
    noSetFMUStatePriorToCurrentPoint: fmi2Boolean,
    enterEventMode: *mut fmi2Boolean,
    terminateSimulation: *mut fmi2Boolean,
) -> fmi2Status;
pub type fmi2SetTimeTYPE = unsafe extern "C" fn(c: fmi2Component, time: fmi2Real) -> fmi2Status;
pub type fmi2SetContinuousStatesTYPE =
    unsafe extern "C" fn(c: fmi2Component, x: *const fmi2Real, nx: usize) -> fmi2Status;
pub type fmi2GetDerivativesTYPE =
    unsafe extern "C" fn(c: fmi2Component, derivatives: *mut fmi2Real, nx: usize) -> fmi2Status;
pub type fmi2GetEventIndicatorsTYPE =
    unsafe extern "C" fn(c: fmi2Component, eventIndicators: *mut fmi2Real, ni: usize) -> fmi2Status;
pub type fmi2GetContinuousStatesTYPE =
    unsafe extern "C" fn(c: fmi2Component, x: *mut fmi2Real, nx: usize) -> fmi2Status;
pub type fmi2GetNominalsOfContinuousStatesTYPE =
    unsafe extern "C" fn(c: fmi2Component, x_nominal: *mut fmi2Real, nx: usize) -> fmi2Status;

extern "C" {
    /// The C shim (`fmi2_logger.c`) that formats FMI 2 log messages and forwards them to the
    /// sink stored at the start of the component environment.
    pub fn cosimo_fmi2_logger(
        componentEnvironment: fmi2ComponentEnvironment,
        instanceName: fmi2String,
        status: fmi2Status,
        category: fmi2String,
        message: fmi2String,
        ...
    );
    /// Registers the sink used when an FMU passes a NULL component environment to the logger.
    pub fn cosimo_fmi2_set_fallback_sink(sink: Option<Fmi2LogSink>);
}

/// The non-variadic sink the C shim calls with the formatted message (`message` may be NULL).
pub type Fmi2LogSink = unsafe extern "C" fn(
    componentEnvironment: fmi2ComponentEnvironment,
    instanceName: fmi2String,
    status: fmi2Status,
    category: fmi2String,
    message: fmi2String,
);

super::function_table! {
    /// The FMI 2 functions of one shared library: the common ones, and those of the interface
    /// it was loaded for (checked by [`Fmi2Functions::load`]).
    pub struct Fmi2Functions {
        required {
            instantiate: fmi2InstantiateTYPE = "fmi2Instantiate",
            free_instance: fmi2FreeInstanceTYPE = "fmi2FreeInstance",
            setup_experiment: fmi2SetupExperimentTYPE = "fmi2SetupExperiment",
            enter_initialization_mode: fmi2EnterInitializationModeTYPE = "fmi2EnterInitializationMode",
            exit_initialization_mode: fmi2ExitInitializationModeTYPE = "fmi2ExitInitializationMode",
            terminate: fmi2TerminateTYPE = "fmi2Terminate",
            reset: fmi2ResetTYPE = "fmi2Reset",
            get_real: fmi2GetRealTYPE = "fmi2GetReal",
            get_integer: fmi2GetIntegerTYPE = "fmi2GetInteger",
            get_boolean: fmi2GetBooleanTYPE = "fmi2GetBoolean",
            get_string: fmi2GetStringTYPE = "fmi2GetString",
            set_real: fmi2SetRealTYPE = "fmi2SetReal",
            set_integer: fmi2SetIntegerTYPE = "fmi2SetInteger",
            set_boolean: fmi2SetBooleanTYPE = "fmi2SetBoolean",
            set_string: fmi2SetStringTYPE = "fmi2SetString",
        }
        optional {
            get_types_platform: fmi2GetTypesPlatformTYPE = "fmi2GetTypesPlatform",
            get_version: fmi2GetVersionTYPE = "fmi2GetVersion",
            set_debug_logging: fmi2SetDebugLoggingTYPE = "fmi2SetDebugLogging",
            get_fmu_state: fmi2GetFMUstateTYPE = "fmi2GetFMUstate",
            set_fmu_state: fmi2SetFMUstateTYPE = "fmi2SetFMUstate",
            free_fmu_state: fmi2FreeFMUstateTYPE = "fmi2FreeFMUstate",
            serialized_fmu_state_size: fmi2SerializedFMUstateSizeTYPE = "fmi2SerializedFMUstateSize",
            serialize_fmu_state: fmi2SerializeFMUstateTYPE = "fmi2SerializeFMUstate",
            deserialize_fmu_state: fmi2DeSerializeFMUstateTYPE = "fmi2DeSerializeFMUstate",
            get_directional_derivative: fmi2GetDirectionalDerivativeTYPE = "fmi2GetDirectionalDerivative",
            set_real_input_derivatives: fmi2SetRealInputDerivativesTYPE = "fmi2SetRealInputDerivatives",
            get_real_output_derivatives: fmi2GetRealOutputDerivativesTYPE = "fmi2GetRealOutputDerivatives",
            cancel_step: fmi2CancelStepTYPE = "fmi2CancelStep",
            get_status: fmi2GetStatusTYPE = "fmi2GetStatus",
            get_real_status: fmi2GetRealStatusTYPE = "fmi2GetRealStatus",
            get_integer_status: fmi2GetIntegerStatusTYPE = "fmi2GetIntegerStatus",
            get_boolean_status: fmi2GetBooleanStatusTYPE = "fmi2GetBooleanStatus",
            get_string_status: fmi2GetStringStatusTYPE = "fmi2GetStringStatus",
            do_step: fmi2DoStepTYPE = "fmi2DoStep",
            enter_event_mode: fmi2EnterEventModeTYPE = "fmi2EnterEventMode",
            new_discrete_states: fmi2NewDiscreteStatesTYPE = "fmi2NewDiscreteStates",
            enter_continuous_time_mode: fmi2EnterContinuousTimeModeTYPE = "fmi2EnterContinuousTimeMode",
            completed_integrator_step: fmi2CompletedIntegratorStepTYPE = "fmi2CompletedIntegratorStep",
            set_time: fmi2SetTimeTYPE = "fmi2SetTime",
            set_continuous_states: fmi2SetContinuousStatesTYPE = "fmi2SetContinuousStates",
            get_derivatives: fmi2GetDerivativesTYPE = "fmi2GetDerivatives",
            get_event_indicators: fmi2GetEventIndicatorsTYPE = "fmi2GetEventIndicators",
            get_continuous_states: fmi2GetContinuousStatesTYPE = "fmi2GetContinuousStates",
            get_nominals_of_continuous_states: fmi2GetNominalsOfContinuousStatesTYPE = "fmi2GetNominalsOfContinuousStates",
        }
    }
}

impl Fmi2Functions {
    /// Resolve the FMI 2 functions from `library` (loaded from `path`) and check that the
    /// functions of `interface`, and every optional function the model description's
    /// capability flags promise, are there. `description` is the one for `interface` (see
    /// [`ModelDescription::for_interface`]).
    pub fn load(
        library: &libloading::Library,
        path: &Path,
        description: &ModelDescription,
        interface: Interface,
    ) -> Result<Self> {
        let identifier = description
            .co_simulation
            .as_ref()
            .map_or(description.model_name.as_str(), |cs| {
                cs.model_identifier.as_str()
            });
        let prefix = super::symbol_prefix(library, identifier, "fmi2GetVersion");
        let functions = Self::resolve(library, path, &prefix)?;
        let interface_functions: &[(bool, &str)] = match interface {
            Interface::CoSimulation => &[(functions.do_step.is_some(), "fmi2DoStep")],
            // FMI 2 has no Scheduled Execution (the model description cannot offer it).
            Interface::ScheduledExecution => &[(false, "fmi3ActivateModelPartition")],
            Interface::ModelExchange => &[
                (functions.enter_event_mode.is_some(), "fmi2EnterEventMode"),
                (
                    functions.new_discrete_states.is_some(),
                    "fmi2NewDiscreteStates",
                ),
                (
                    functions.enter_continuous_time_mode.is_some(),
                    "fmi2EnterContinuousTimeMode",
                ),
                (
                    functions.completed_integrator_step.is_some(),
                    "fmi2CompletedIntegratorStep",
                ),
                (functions.set_time.is_some(), "fmi2SetTime"),
                (
                    functions.set_continuous_states.is_some(),
                    "fmi2SetContinuousStates",
                ),
                (functions.get_derivatives.is_some(), "fmi2GetDerivatives"),
                (
                    functions.get_event_indicators.is_some(),
                    "fmi2GetEventIndicators",
                ),
                (
                    functions.get_continuous_states.is_some(),
                    "fmi2GetContinuousStates",
                ),
                (
                    functions.get_nominals_of_continuous_states.is_some(),
                    "fmi2GetNominalsOfContinuousStates",
                ),
            ],
        };
        require_interface(path, interface, interface_functions)?;
        // Co-Simulation's own functions: a Model Exchange component's view claims input
        // interpolation and output derivatives that cosimo's integrator provides.
        let co_simulation = interface == Interface::CoSimulation;
        let Some(cs) = description.co_simulation.as_ref() else {
            return Ok(functions);
        };
        let checks: [(bool, &str, bool, &str); 9] = [
            (
                cs.can_get_and_set_fmu_state,
                "canGetAndSetFMUstate",
                functions.get_fmu_state.is_some(),
                "fmi2GetFMUstate",
            ),
            (
                cs.can_get_and_set_fmu_state,
                "canGetAndSetFMUstate",
                functions.set_fmu_state.is_some(),
                "fmi2SetFMUstate",
            ),
            (
                cs.can_get_and_set_fmu_state,
                "canGetAndSetFMUstate",
                functions.free_fmu_state.is_some(),
                "fmi2FreeFMUstate",
            ),
            (
                cs.can_serialize_fmu_state,
                "canSerializeFMUstate",
                functions.serialized_fmu_state_size.is_some(),
                "fmi2SerializedFMUstateSize",
            ),
            (
                cs.can_serialize_fmu_state,
                "canSerializeFMUstate",
                functions.serialize_fmu_state.is_some(),
                "fmi2SerializeFMUstate",
            ),
            (
                cs.can_serialize_fmu_state,
                "canSerializeFMUstate",
                functions.deserialize_fmu_state.is_some(),
                "fmi2DeSerializeFMUstate",
            ),
            (
                cs.provides_directional_derivatives,
                "providesDirectionalDerivative",
                functions.get_directional_derivative.is_some(),
                "fmi2GetDirectionalDerivative",
            ),
            (
                cs.can_interpolate_inputs && co_simulation,
                "canInterpolateInputs",
                functions.set_real_input_derivatives.is_some(),
                "fmi2SetRealInputDerivatives",
            ),
            (
                cs.max_output_derivative_order > 0 && co_simulation,
                "maxOutputDerivativeOrder > 0",
                functions.get_real_output_derivatives.is_some(),
                "fmi2GetRealOutputDerivatives",
            ),
        ];
        for (claimed, capability, present, function) in checks {
            if claimed && !present {
                return Err(missing_capability(path, capability, function));
            }
        }
        Ok(functions)
    }
}
