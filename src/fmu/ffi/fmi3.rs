//! FMI 3.0 types and function signatures (`fmi3PlatformTypes.h`, `fmi3FunctionTypes.h`): the
//! common functions, Co-Simulation, get/set of every type (Binary and Clock too), FMU state,
//! directional and adjoint derivatives, output derivatives, event and configuration mode,
//! clocks and variable dependencies.
#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;

use super::{missing_capability, require_interface};
use crate::error::Result;
use crate::fmu::description::{Interface, ModelDescription};

pub type fmi3Instance = *mut c_void;
pub type fmi3InstanceEnvironment = *mut c_void;
pub type fmi3FMUState = *mut c_void;
pub type fmi3ValueReference = u32;
pub type fmi3Float32 = f32;
pub type fmi3Float64 = f64;
pub type fmi3Int8 = i8;
pub type fmi3UInt8 = u8;
pub type fmi3Int16 = i16;
pub type fmi3UInt16 = u16;
pub type fmi3Int32 = i32;
pub type fmi3UInt32 = u32;
pub type fmi3Int64 = i64;
pub type fmi3UInt64 = u64;
/// C `bool`. Values the FMU writes are read back through `u8` buffers, never as Rust `bool`
/// (an FMU storing anything but 0 or 1 would otherwise be undefined behaviour).
pub type fmi3Boolean = bool;
pub type fmi3Char = c_char;
pub type fmi3String = *const fmi3Char;
pub type fmi3Byte = u8;
pub type fmi3Binary = *const fmi3Byte;
/// C `bool`, read back through `u8` like [`fmi3Boolean`].
pub type fmi3Clock = bool;

pub const fmi3True: fmi3Boolean = true;
pub const fmi3False: fmi3Boolean = false;
pub const fmi3ClockActive: fmi3Clock = true;
pub const fmi3ClockInactive: fmi3Clock = false;

/// `fmi3Status`, kept as the raw C enum value (an FMU may return anything).
pub type fmi3Status = c_int;
pub const fmi3OK: fmi3Status = 0;
pub const fmi3Warning: fmi3Status = 1;
pub const fmi3Discard: fmi3Status = 2;
pub const fmi3Error: fmi3Status = 3;
pub const fmi3Fatal: fmi3Status = 4;

/// `fmi3DependencyKind`.
pub type fmi3DependencyKind = c_int;
pub const fmi3Independent: fmi3DependencyKind = 0;
pub const fmi3Constant: fmi3DependencyKind = 1;
pub const fmi3Fixed: fmi3DependencyKind = 2;
pub const fmi3Tunable: fmi3DependencyKind = 3;
pub const fmi3Discrete: fmi3DependencyKind = 4;
pub const fmi3Dependent: fmi3DependencyKind = 5;

/// `fmi3IntervalQualifier`.
pub type fmi3IntervalQualifier = c_int;
pub const fmi3IntervalNotYetKnown: fmi3IntervalQualifier = 0;
pub const fmi3IntervalUnchanged: fmi3IntervalQualifier = 1;
pub const fmi3IntervalChanged: fmi3IntervalQualifier = 2;

pub type fmi3LogMessageCallback = unsafe extern "C" fn(
    instanceEnvironment: fmi3InstanceEnvironment,
    status: fmi3Status,
    category: fmi3String,
    message: fmi3String,
);
pub type fmi3ClockUpdateCallback =
    unsafe extern "C" fn(instanceEnvironment: fmi3InstanceEnvironment);
pub type fmi3IntermediateUpdateCallback = unsafe extern "C" fn(
    instanceEnvironment: fmi3InstanceEnvironment,
    intermediateUpdateTime: fmi3Float64,
    intermediateVariableSetRequested: fmi3Boolean,
    intermediateVariableGetAllowed: fmi3Boolean,
    intermediateStepFinished: fmi3Boolean,
    canReturnEarly: fmi3Boolean,
    earlyReturnRequested: *mut fmi3Boolean,
    earlyReturnTime: *mut fmi3Float64,
);
pub type fmi3LockPreemptionCallback = unsafe extern "C" fn();
pub type fmi3UnlockPreemptionCallback = unsafe extern "C" fn();

// Common functions.
pub type fmi3GetVersionTYPE = unsafe extern "C" fn() -> *const c_char;
pub type fmi3SetDebugLoggingTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    loggingOn: fmi3Boolean,
    nCategories: usize,
    categories: *const fmi3String,
) -> fmi3Status;
pub type fmi3InstantiateModelExchangeTYPE = unsafe extern "C" fn(
    instanceName: fmi3String,
    instantiationToken: fmi3String,
    resourcePath: fmi3String,
    visible: fmi3Boolean,
    loggingOn: fmi3Boolean,
    instanceEnvironment: fmi3InstanceEnvironment,
    logMessage: Option<fmi3LogMessageCallback>,
) -> fmi3Instance;
pub type fmi3InstantiateCoSimulationTYPE = unsafe extern "C" fn(
    instanceName: fmi3String,
    instantiationToken: fmi3String,
    resourcePath: fmi3String,
    visible: fmi3Boolean,
    loggingOn: fmi3Boolean,
    eventModeUsed: fmi3Boolean,
    earlyReturnAllowed: fmi3Boolean,
    requiredIntermediateVariables: *const fmi3ValueReference,
    nRequiredIntermediateVariables: usize,
    instanceEnvironment: fmi3InstanceEnvironment,
    logMessage: Option<fmi3LogMessageCallback>,
    intermediateUpdate: Option<fmi3IntermediateUpdateCallback>,
) -> fmi3Instance;
pub type fmi3InstantiateScheduledExecutionTYPE = unsafe extern "C" fn(
    instanceName: fmi3String,
    instantiationToken: fmi3String,
    resourcePath: fmi3String,
    visible: fmi3Boolean,
    loggingOn: fmi3Boolean,
    instanceEnvironment: fmi3InstanceEnvironment,
    logMessage: Option<fmi3LogMessageCallback>,
    clockUpdate: Option<fmi3ClockUpdateCallback>,
    lockPreemption: Option<fmi3LockPreemptionCallback>,
    unlockPreemption: Option<fmi3UnlockPreemptionCallback>,
) -> fmi3Instance;
pub type fmi3FreeInstanceTYPE = unsafe extern "C" fn(instance: fmi3Instance);
pub type fmi3EnterInitializationModeTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    toleranceDefined: fmi3Boolean,
    tolerance: fmi3Float64,
    startTime: fmi3Float64,
    stopTimeDefined: fmi3Boolean,
    stopTime: fmi3Float64,
) -> fmi3Status;
pub type fmi3ExitInitializationModeTYPE =
    unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;
pub type fmi3EnterEventModeTYPE = unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;
pub type fmi3TerminateTYPE = unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;
pub type fmi3ResetTYPE = unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;

// Getters and setters.
pub type fmi3GetFloat32TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3Float32,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetFloat64TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3Float64,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetInt8TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3Int8,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetUInt8TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3UInt8,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetInt16TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3Int16,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetUInt16TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3UInt16,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetInt32TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3Int32,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetUInt32TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3UInt32,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetInt64TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3Int64,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetUInt64TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3UInt64,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetBooleanTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3Boolean,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetStringTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3String,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetFloat32TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3Float32,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetFloat64TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3Float64,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetInt8TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3Int8,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetUInt8TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3UInt8,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetInt16TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3Int16,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetUInt16TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3UInt16,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetInt32TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3Int32,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetUInt32TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3UInt32,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetInt64TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3Int64,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetUInt64TYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3UInt64,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetBooleanTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3Boolean,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetStringTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3String,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetBinaryTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    valueSizes: *mut usize,
    values: *mut fmi3Binary,
    nValues: usize,
) -> fmi3Status;
pub type fmi3SetBinaryTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    valueSizes: *const usize,
    values: *const fmi3Binary,
    nValues: usize,
) -> fmi3Status;
pub type fmi3GetClockTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3Clock,
) -> fmi3Status;
pub type fmi3SetClockTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3Clock,
) -> fmi3Status;

// Variable dependencies.
pub type fmi3GetNumberOfVariableDependenciesTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReference: fmi3ValueReference,
    nDependencies: *mut usize,
) -> fmi3Status;
pub type fmi3GetVariableDependenciesTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    dependent: fmi3ValueReference,
    elementIndicesOfDependent: *mut usize,
    independents: *mut fmi3ValueReference,
    elementIndicesOfIndependents: *mut usize,
    dependencyKinds: *mut fmi3DependencyKind,
    nDependencies: usize,
) -> fmi3Status;

// FMU state.
pub type fmi3GetFMUStateTYPE =
    unsafe extern "C" fn(instance: fmi3Instance, FMUState: *mut fmi3FMUState) -> fmi3Status;
pub type fmi3SetFMUStateTYPE =
    unsafe extern "C" fn(instance: fmi3Instance, FMUState: fmi3FMUState) -> fmi3Status;
pub type fmi3FreeFMUStateTYPE =
    unsafe extern "C" fn(instance: fmi3Instance, FMUState: *mut fmi3FMUState) -> fmi3Status;
pub type fmi3SerializedFMUStateSizeTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    FMUState: fmi3FMUState,
    size: *mut usize,
) -> fmi3Status;
pub type fmi3SerializeFMUStateTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    FMUState: fmi3FMUState,
    serializedState: *mut fmi3Byte,
    size: usize,
) -> fmi3Status;
pub type fmi3DeserializeFMUStateTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    serializedState: *const fmi3Byte,
    size: usize,
    FMUState: *mut fmi3FMUState,
) -> fmi3Status;

// Partial derivatives.
pub type fmi3GetDirectionalDerivativeTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    unknowns: *const fmi3ValueReference,
    nUnknowns: usize,
    knowns: *const fmi3ValueReference,
    nKnowns: usize,
    seed: *const fmi3Float64,
    nSeed: usize,
    sensitivity: *mut fmi3Float64,
    nSensitivity: usize,
) -> fmi3Status;
pub type fmi3GetAdjointDerivativeTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    unknowns: *const fmi3ValueReference,
    nUnknowns: usize,
    knowns: *const fmi3ValueReference,
    nKnowns: usize,
    seed: *const fmi3Float64,
    nSeed: usize,
    sensitivity: *mut fmi3Float64,
    nSensitivity: usize,
) -> fmi3Status;

// Configuration mode.
pub type fmi3EnterConfigurationModeTYPE =
    unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;
pub type fmi3ExitConfigurationModeTYPE = unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;

// Clocks.
pub type fmi3GetIntervalDecimalTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    intervals: *mut fmi3Float64,
    qualifiers: *mut fmi3IntervalQualifier,
) -> fmi3Status;
pub type fmi3GetIntervalFractionTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    counters: *mut fmi3UInt64,
    resolutions: *mut fmi3UInt64,
    qualifiers: *mut fmi3IntervalQualifier,
) -> fmi3Status;
pub type fmi3GetShiftDecimalTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    shifts: *mut fmi3Float64,
) -> fmi3Status;
pub type fmi3GetShiftFractionTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    counters: *mut fmi3UInt64,
    resolutions: *mut fmi3UInt64,
) -> fmi3Status;
pub type fmi3SetIntervalDecimalTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    intervals: *const fmi3Float64,
) -> fmi3Status;
pub type fmi3SetIntervalFractionTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    counters: *const fmi3UInt64,
    resolutions: *const fmi3UInt64,
) -> fmi3Status;
pub type fmi3SetShiftDecimalTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    shifts: *const fmi3Float64,
) -> fmi3Status;
pub type fmi3SetShiftFractionTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    counters: *const fmi3UInt64,
    resolutions: *const fmi3UInt64,
) -> fmi3Status;

// Event mode.
pub type fmi3EvaluateDiscreteStatesTYPE =
    unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;
pub type fmi3UpdateDiscreteStatesTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    discreteStatesNeedUpdate: *mut fmi3Boolean,
    terminateSimulation: *mut fmi3Boolean,
    nominalsOfContinuousStatesChanged: *mut fmi3Boolean,
    valuesOfContinuousStatesChanged: *mut fmi3Boolean,
    nextEventTimeDefined: *mut fmi3Boolean,
    nextEventTime: *mut fmi3Float64,
) -> fmi3Status;

// Co-Simulation.
pub type fmi3EnterStepModeTYPE = unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;
pub type fmi3GetOutputDerivativesTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    orders: *const fmi3Int32,
    values: *mut fmi3Float64,
    nValues: usize,
) -> fmi3Status;
pub type fmi3DoStepTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    currentCommunicationPoint: fmi3Float64,
    communicationStepSize: fmi3Float64,
    noSetFMUStatePriorToCurrentPoint: fmi3Boolean,
    eventHandlingNeeded: *mut fmi3Boolean,
    terminateSimulation: *mut fmi3Boolean,
    earlyReturn: *mut fmi3Boolean,
    lastSuccessfulTime: *mut fmi3Float64,
) -> fmi3Status;

// Scheduled Execution functions.
pub type fmi3ActivateModelPartitionTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    clockReference: fmi3ValueReference,
    activationTime: fmi3Float64,
) -> fmi3Status;

// Model Exchange functions.
pub type fmi3EnterContinuousTimeModeTYPE =
    unsafe extern "C" fn(instance: fmi3Instance) -> fmi3Status;
pub type fmi3CompletedIntegratorStepTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    noSetFMUStatePriorToCurrentPoint: fmi3Boolean,
    enterEventMode: *mut fmi3Boolean,
    terminateSimulation: *mut fmi3Boolean,
) -> fmi3Status;
pub type fmi3SetTimeTYPE =
    unsafe extern "C" fn(instance: fmi3Instance, time: fmi3Float64) -> fmi3Status;
pub type fmi3SetContinuousStatesTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    continuousStates: *const fmi3Float64,
    nContinuousStates: usize,
) -> fmi3Status;
pub type fmi3GetContinuousStateDerivativesTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    derivatives: *mut fmi3Float64,
    nContinuousStates: usize,
) -> fmi3Status;
pub type fmi3GetEventIndicatorsTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    eventIndicators: *mut fmi3Float64,
    nEventIndicators: usize,
) -> fmi3Status;
pub type fmi3GetContinuousStatesTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    continuousStates: *mut fmi3Float64,
    nContinuousStates: usize,
) -> fmi3Status;
pub type fmi3GetNominalsOfContinuousStatesTYPE = unsafe extern "C" fn(
    instance: fmi3Instance,
    nominals: *mut fmi3Float64,
    nContinuousStates: usize,
) -> fmi3Status;
pub type fmi3GetNumberOfEventIndicatorsTYPE =
    unsafe extern "C" fn(instance: fmi3Instance, nEventIndicators: *mut usize) -> fmi3Status;
pub type fmi3GetNumberOfContinuousStatesTYPE =
    unsafe extern "C" fn(instance: fmi3Instance, nContinuousStates: *mut usize) -> fmi3Status;

super::function_table! {
    /// The FMI 3 functions of one shared library.
    ///
    /// Only the lifecycle, Float64 get/set and the functions of the interface the library is
    /// loaded for (`fmi3InstantiateCoSimulation` and `fmi3DoStep`, or Model Exchange's) are
    /// required to load ([`Fmi3Functions::load`]); any other
    /// missing function is reported when it is first needed (or at load when the model
    /// description declares the capability that needs it).
    pub struct Fmi3Functions {
        required {
            free_instance: fmi3FreeInstanceTYPE = "fmi3FreeInstance",
            enter_initialization_mode: fmi3EnterInitializationModeTYPE = "fmi3EnterInitializationMode",
            exit_initialization_mode: fmi3ExitInitializationModeTYPE = "fmi3ExitInitializationMode",
            terminate: fmi3TerminateTYPE = "fmi3Terminate",
            reset: fmi3ResetTYPE = "fmi3Reset",
            get_float64: fmi3GetFloat64TYPE = "fmi3GetFloat64",
            set_float64: fmi3SetFloat64TYPE = "fmi3SetFloat64",
        }
        optional {
            get_version: fmi3GetVersionTYPE = "fmi3GetVersion",
            set_debug_logging: fmi3SetDebugLoggingTYPE = "fmi3SetDebugLogging",
            get_float32: fmi3GetFloat32TYPE = "fmi3GetFloat32",
            set_float32: fmi3SetFloat32TYPE = "fmi3SetFloat32",
            get_int8: fmi3GetInt8TYPE = "fmi3GetInt8",
            set_int8: fmi3SetInt8TYPE = "fmi3SetInt8",
            get_uint8: fmi3GetUInt8TYPE = "fmi3GetUInt8",
            set_uint8: fmi3SetUInt8TYPE = "fmi3SetUInt8",
            get_int16: fmi3GetInt16TYPE = "fmi3GetInt16",
            set_int16: fmi3SetInt16TYPE = "fmi3SetInt16",
            get_uint16: fmi3GetUInt16TYPE = "fmi3GetUInt16",
            set_uint16: fmi3SetUInt16TYPE = "fmi3SetUInt16",
            get_int32: fmi3GetInt32TYPE = "fmi3GetInt32",
            set_int32: fmi3SetInt32TYPE = "fmi3SetInt32",
            get_uint32: fmi3GetUInt32TYPE = "fmi3GetUInt32",
            set_uint32: fmi3SetUInt32TYPE = "fmi3SetUInt32",
            get_int64: fmi3GetInt64TYPE = "fmi3GetInt64",
            set_int64: fmi3SetInt64TYPE = "fmi3SetInt64",
            get_uint64: fmi3GetUInt64TYPE = "fmi3GetUInt64",
            set_uint64: fmi3SetUInt64TYPE = "fmi3SetUInt64",
            get_boolean: fmi3GetBooleanTYPE = "fmi3GetBoolean",
            set_boolean: fmi3SetBooleanTYPE = "fmi3SetBoolean",
            get_string: fmi3GetStringTYPE = "fmi3GetString",
            set_string: fmi3SetStringTYPE = "fmi3SetString",
            get_binary: fmi3GetBinaryTYPE = "fmi3GetBinary",
            set_binary: fmi3SetBinaryTYPE = "fmi3SetBinary",
            get_clock: fmi3GetClockTYPE = "fmi3GetClock",
            set_clock: fmi3SetClockTYPE = "fmi3SetClock",
            get_number_of_variable_dependencies: fmi3GetNumberOfVariableDependenciesTYPE = "fmi3GetNumberOfVariableDependencies",
            get_variable_dependencies: fmi3GetVariableDependenciesTYPE = "fmi3GetVariableDependencies",
            get_fmu_state: fmi3GetFMUStateTYPE = "fmi3GetFMUState",
            set_fmu_state: fmi3SetFMUStateTYPE = "fmi3SetFMUState",
            free_fmu_state: fmi3FreeFMUStateTYPE = "fmi3FreeFMUState",
            serialized_fmu_state_size: fmi3SerializedFMUStateSizeTYPE = "fmi3SerializedFMUStateSize",
            serialize_fmu_state: fmi3SerializeFMUStateTYPE = "fmi3SerializeFMUState",
            deserialize_fmu_state: fmi3DeserializeFMUStateTYPE = "fmi3DeserializeFMUState",
            get_directional_derivative: fmi3GetDirectionalDerivativeTYPE = "fmi3GetDirectionalDerivative",
            get_adjoint_derivative: fmi3GetAdjointDerivativeTYPE = "fmi3GetAdjointDerivative",
            enter_configuration_mode: fmi3EnterConfigurationModeTYPE = "fmi3EnterConfigurationMode",
            exit_configuration_mode: fmi3ExitConfigurationModeTYPE = "fmi3ExitConfigurationMode",
            get_interval_decimal: fmi3GetIntervalDecimalTYPE = "fmi3GetIntervalDecimal",
            get_interval_fraction: fmi3GetIntervalFractionTYPE = "fmi3GetIntervalFraction",
            get_shift_decimal: fmi3GetShiftDecimalTYPE = "fmi3GetShiftDecimal",
            get_shift_fraction: fmi3GetShiftFractionTYPE = "fmi3GetShiftFraction",
            set_interval_decimal: fmi3SetIntervalDecimalTYPE = "fmi3SetIntervalDecimal",
            set_interval_fraction: fmi3SetIntervalFractionTYPE = "fmi3SetIntervalFraction",
            set_shift_decimal: fmi3SetShiftDecimalTYPE = "fmi3SetShiftDecimal",
            set_shift_fraction: fmi3SetShiftFractionTYPE = "fmi3SetShiftFraction",
            evaluate_discrete_states: fmi3EvaluateDiscreteStatesTYPE = "fmi3EvaluateDiscreteStates",
            update_discrete_states: fmi3UpdateDiscreteStatesTYPE = "fmi3UpdateDiscreteStates",
            enter_event_mode: fmi3EnterEventModeTYPE = "fmi3EnterEventMode",
            enter_step_mode: fmi3EnterStepModeTYPE = "fmi3EnterStepMode",
            get_output_derivatives: fmi3GetOutputDerivativesTYPE = "fmi3GetOutputDerivatives",
            instantiate_co_simulation: fmi3InstantiateCoSimulationTYPE = "fmi3InstantiateCoSimulation",
            do_step: fmi3DoStepTYPE = "fmi3DoStep",
            instantiate_scheduled_execution: fmi3InstantiateScheduledExecutionTYPE = "fmi3InstantiateScheduledExecution",
            activate_model_partition: fmi3ActivateModelPartitionTYPE = "fmi3ActivateModelPartition",
            instantiate_model_exchange: fmi3InstantiateModelExchangeTYPE = "fmi3InstantiateModelExchange",
            enter_continuous_time_mode: fmi3EnterContinuousTimeModeTYPE = "fmi3EnterContinuousTimeMode",
            completed_integrator_step: fmi3CompletedIntegratorStepTYPE = "fmi3CompletedIntegratorStep",
            set_time: fmi3SetTimeTYPE = "fmi3SetTime",
            set_continuous_states: fmi3SetContinuousStatesTYPE = "fmi3SetContinuousStates",
            get_continuous_state_derivatives: fmi3GetContinuousStateDerivativesTYPE = "fmi3GetContinuousStateDerivatives",
            get_event_indicators: fmi3GetEventIndicatorsTYPE = "fmi3GetEventIndicators",
            get_continuous_states: fmi3GetContinuousStatesTYPE = "fmi3GetContinuousStates",
            get_nominals_of_continuous_states: fmi3GetNominalsOfContinuousStatesTYPE = "fmi3GetNominalsOfContinuousStates",
            get_number_of_event_indicators: fmi3GetNumberOfEventIndicatorsTYPE = "fmi3GetNumberOfEventIndicators",
            get_number_of_continuous_states: fmi3GetNumberOfContinuousStatesTYPE = "fmi3GetNumberOfContinuousStates",
        }
    }
}

impl Fmi3Functions {
    /// Resolve the FMI 3 functions from `library` (loaded from `path`) and check that the
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
        let prefix = super::symbol_prefix(library, identifier, "fmi3GetVersion");
        let f = Self::resolve(library, path, &prefix)?;
        match interface {
            Interface::CoSimulation => require_interface(
                path,
                interface,
                &[
                    (
                        f.instantiate_co_simulation.is_some(),
                        "fmi3InstantiateCoSimulation",
                    ),
                    (f.do_step.is_some(), "fmi3DoStep"),
                ],
            )?,
            Interface::ScheduledExecution => require_interface(
                path,
                interface,
                &[
                    (
                        f.instantiate_scheduled_execution.is_some(),
                        "fmi3InstantiateScheduledExecution",
                    ),
                    (
                        f.activate_model_partition.is_some(),
                        "fmi3ActivateModelPartition",
                    ),
                    (f.get_clock.is_some(), "fmi3GetClock"),
                    (f.get_interval_decimal.is_some(), "fmi3GetIntervalDecimal"),
                ],
            )?,
            Interface::ModelExchange => require_interface(
                path,
                interface,
                &[
                    (
                        f.instantiate_model_exchange.is_some(),
                        "fmi3InstantiateModelExchange",
                    ),
                    (f.enter_event_mode.is_some(), "fmi3EnterEventMode"),
                    (
                        f.update_discrete_states.is_some(),
                        "fmi3UpdateDiscreteStates",
                    ),
                    (
                        f.enter_continuous_time_mode.is_some(),
                        "fmi3EnterContinuousTimeMode",
                    ),
                    (
                        f.completed_integrator_step.is_some(),
                        "fmi3CompletedIntegratorStep",
                    ),
                    (f.set_time.is_some(), "fmi3SetTime"),
                    (f.set_continuous_states.is_some(), "fmi3SetContinuousStates"),
                    (
                        f.get_continuous_state_derivatives.is_some(),
                        "fmi3GetContinuousStateDerivatives",
                    ),
                    (f.get_event_indicators.is_some(), "fmi3GetEventIndicators"),
                    (f.get_continuous_states.is_some(), "fmi3GetContinuousStates"),
                    (
                        f.get_nominals_of_continuous_states.is_some(),
                        "fmi3GetNominalsOfContinuousStates",
                    ),
                ],
            )?,
        }
        // Co-Simulation's own functions: a Model Exchange component's view claims input
        // interpolation and output derivatives that cosimo's integrator provides.
        let co_simulation = interface == Interface::CoSimulation;
        let Some(cs) = description.co_simulation.as_ref() else {
            return Ok(f);
        };
        let state = "canGetAndSetFMUState";
        let serialize = "canSerializeFMUState";
        let events = "hasEventMode";
        // A Scheduled Execution component's Event Mode is cosimo's bookkeeping, not the FMU's.
        let event_mode = cs.has_event_mode && interface != Interface::ScheduledExecution;
        let checks: [(bool, &str, bool, &str); 15] = [
            (
                cs.can_get_and_set_fmu_state,
                state,
                f.get_fmu_state.is_some(),
                "fmi3GetFMUState",
            ),
            (
                cs.can_get_and_set_fmu_state,
                state,
                f.set_fmu_state.is_some(),
                "fmi3SetFMUState",
            ),
            (
                cs.can_get_and_set_fmu_state,
                state,
                f.free_fmu_state.is_some(),
                "fmi3FreeFMUState",
            ),
            (
                cs.can_serialize_fmu_state,
                serialize,
                f.serialized_fmu_state_size.is_some(),
                "fmi3SerializedFMUStateSize",
            ),
            (
                cs.can_serialize_fmu_state,
                serialize,
                f.serialize_fmu_state.is_some(),
                "fmi3SerializeFMUState",
            ),
            (
                cs.can_serialize_fmu_state,
                serialize,
                f.deserialize_fmu_state.is_some(),
                "fmi3DeserializeFMUState",
            ),
            (
                cs.provides_directional_derivatives,
                "providesDirectionalDerivatives",
                f.get_directional_derivative.is_some(),
                "fmi3GetDirectionalDerivative",
            ),
            (
                cs.provides_adjoint_derivatives,
                "providesAdjointDerivatives",
                f.get_adjoint_derivative.is_some(),
                "fmi3GetAdjointDerivative",
            ),
            (
                cs.max_output_derivative_order > 0 && co_simulation,
                "maxOutputDerivativeOrder > 0",
                f.get_output_derivatives.is_some(),
                "fmi3GetOutputDerivatives",
            ),
            (
                event_mode,
                events,
                f.enter_event_mode.is_some(),
                "fmi3EnterEventMode",
            ),
            (
                event_mode,
                events,
                f.update_discrete_states.is_some(),
                "fmi3UpdateDiscreteStates",
            ),
            (
                event_mode,
                events,
                f.enter_step_mode.is_some(),
                "fmi3EnterStepMode",
            ),
            (
                cs.provides_evaluate_discrete_states,
                "providesEvaluateDiscreteStates",
                f.evaluate_discrete_states.is_some(),
                "fmi3EvaluateDiscreteStates",
            ),
            (
                cs.provides_per_element_dependencies,
                "providesPerElementDependencies",
                f.get_number_of_variable_dependencies.is_some(),
                "fmi3GetNumberOfVariableDependencies",
            ),
            (
                cs.provides_per_element_dependencies,
                "providesPerElementDependencies",
                f.get_variable_dependencies.is_some(),
                "fmi3GetVariableDependencies",
            ),
        ];
        for (claimed, capability, present, function) in checks {
            if claimed && !present {
                return Err(missing_capability(path, capability, function));
            }
        }
        Ok(f)
    }
}
