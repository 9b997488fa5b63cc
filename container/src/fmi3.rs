//! The FMI 3.0 Co-Simulation functions (`fmi3Functions.h`) over [`crate::instance::Instance`];
//! Model Exchange, Scheduled Execution, clocks and event mode are refused with a message.
#![allow(non_snake_case)]

use std::ffi::{c_char, CString};

use cosimo::export::manifest::ImporterExperiment;
use cosimo::fmu::description::{StartValue, VariableType};
use cosimo::fmu::ffi::fmi3::*;

use crate::instance::{Fault, Instance, SavedState, Stepped};
use crate::logging::{text, Callback, Logger};
use crate::{call, get_into, set_from, slice, slice_mut, Container, STATUS_OK};

#[no_mangle]
pub extern "C" fn fmi3GetVersion() -> *const c_char {
    c"3.0".as_ptr()
}

#[no_mangle]
pub extern "C" fn fmi3SetDebugLogging(
    instance: fmi3Instance,
    _loggingOn: fmi3Boolean,
    _nCategories: usize,
    _categories: *const fmi3String,
) -> fmi3Status {
    call(instance, "fmi3SetDebugLogging", |_| Ok(STATUS_OK))
}

#[no_mangle]
pub extern "C" fn fmi3InstantiateModelExchange(
    _instanceName: fmi3String,
    _instantiationToken: fmi3String,
    _resourcePath: fmi3String,
    _visible: fmi3Boolean,
    _loggingOn: fmi3Boolean,
    instanceEnvironment: fmi3InstanceEnvironment,
    logMessage: Option<fmi3LogMessageCallback>,
) -> fmi3Instance {
    refuse_interface(instanceEnvironment, logMessage, "Model Exchange")
}

#[no_mangle]
pub extern "C" fn fmi3InstantiateScheduledExecution(
    _instanceName: fmi3String,
    _instantiationToken: fmi3String,
    _resourcePath: fmi3String,
    _visible: fmi3Boolean,
    _loggingOn: fmi3Boolean,
    instanceEnvironment: fmi3InstanceEnvironment,
    logMessage: Option<fmi3LogMessageCallback>,
    _clockUpdate: Option<fmi3ClockUpdateCallback>,
    _lockPreemption: Option<fmi3LockPreemptionCallback>,
    _unlockPreemption: Option<fmi3UnlockPreemptionCallback>,
) -> fmi3Instance {
    refuse_interface(instanceEnvironment, logMessage, "Scheduled Execution")
}

fn refuse_interface(
    environment: fmi3InstanceEnvironment,
    log: Option<fmi3LogMessageCallback>,
    interface: &str,
) -> fmi3Instance {
    if let Some(log) = log {
        Logger::new(Callback::Fmi3(log, environment), "").error(&format!(
            "an exported cosimo system is a Co-Simulation FMU; it has no {interface} interface"
        ));
    }
    std::ptr::null_mut()
}

/// # Safety
/// Pointers as FMI 3 defines them.
#[no_mangle]
pub unsafe extern "C" fn fmi3InstantiateCoSimulation(
    instanceName: fmi3String,
    instantiationToken: fmi3String,
    resourcePath: fmi3String,
    _visible: fmi3Boolean,
    _loggingOn: fmi3Boolean,
    eventModeUsed: fmi3Boolean,
    _earlyReturnAllowed: fmi3Boolean,
    _requiredIntermediateVariables: *const fmi3ValueReference,
    _nRequiredIntermediateVariables: usize,
    instanceEnvironment: fmi3InstanceEnvironment,
    logMessage: Option<fmi3LogMessageCallback>,
    _intermediateUpdate: Option<fmi3IntermediateUpdateCallback>,
) -> fmi3Instance {
    let made = std::panic::catch_unwind(|| {
        let name = unsafe { text(instanceName) }
            .map(|s| s.into_owned())
            .unwrap_or_default();
        let logger = Logger::new(
            match logMessage {
                Some(log) => Callback::Fmi3(log, instanceEnvironment),
                None => Callback::None,
            },
            &name,
        );
        let _current = crate::logging::Current::set(&logger);
        let fail = |message: String| {
            logger.error(&format!("fmi3InstantiateCoSimulation: {message}"));
            std::ptr::null_mut()
        };
        if eventModeUsed {
            return fail("an exported system has no event mode (hasEventMode is false): instantiate with eventModeUsed = false".into());
        }
        let Some(path) = (unsafe { text(resourcePath) }) else {
            return fail("resourcePath is null".into());
        };
        let token = unsafe { text(instantiationToken) };
        match Instance::new(token.as_deref(), crate::resource_folder(&path)) {
            Ok(instance) => crate::register(Container {
                instance,
                logger: logger.clone(),
                strings: Vec::new(),
                binaries: Vec::new(),
                last_successful_time: 0.0,
            }),
            Err(fault) => fail(fault.message),
        }
    });
    made.unwrap_or(std::ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn fmi3FreeInstance(instance: fmi3Instance) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(mut container) = crate::unregister(instance) {
            let logger = container.logger.clone();
            let _current = crate::logging::Current::set(&logger);
            crate::free_all_states(&mut container);
            drop(container);
        }
    });
}

#[no_mangle]
pub extern "C" fn fmi3EnterInitializationMode(
    instance: fmi3Instance,
    toleranceDefined: fmi3Boolean,
    tolerance: fmi3Float64,
    startTime: fmi3Float64,
    stopTimeDefined: fmi3Boolean,
    stopTime: fmi3Float64,
) -> fmi3Status {
    let name = "fmi3EnterInitializationMode";
    call(instance, name, |c| {
        c.instance.setup(
            ImporterExperiment {
                start: startTime,
                stop: stopTimeDefined.then_some(stopTime),
                tolerance: toleranceDefined.then_some(tolerance),
            },
            name,
        )?;
        c.instance.enter_initialization(name)?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3ExitInitializationMode(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3ExitInitializationMode", |c| {
        let logger = c.logger.clone();
        c.instance
            .exit_initialization("fmi3ExitInitializationMode", &mut |w| {
                logger.log(crate::STATUS_WARNING, "cosimo", w)
            })?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3Terminate(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3Terminate", |c| {
        c.instance.terminate("fmi3Terminate")?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3Reset(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3Reset", |c| {
        crate::free_all_states(c);
        c.instance.reset();
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetString(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut fmi3String,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetString", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        let mut strings = Vec::new();
        for &vr in vrs {
            crate::expect_type(c, vr, "fmi3GetString", |t| t == VariableType::String)?;
            match c.instance.get(vr, "fmi3GetString")? {
                StartValue::String(s) => strings.extend(
                    s.into_iter()
                        .map(|s| CString::new(s.replace('\0', " ")).unwrap_or_default()),
                ),
                _ => return Err(Fault::error("fmi3GetString: not a String")),
            }
        }
        if strings.len() != out.len() {
            return Err(Fault::error(format!(
                "fmi3GetString: the variables have {} elements, but nValues is {}",
                strings.len(),
                out.len()
            )));
        }
        c.strings = strings;
        for (slot, s) in out.iter_mut().zip(&c.strings) {
            *slot = s.as_ptr();
        }
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetString(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const fmi3String,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetString", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        let mut texts = Vec::with_capacity(values.len());
        for &p in values {
            // SAFETY: FMI passes NUL-terminated strings or null.
            let t = unsafe { text(p) }
                .ok_or_else(|| Fault::error("fmi3SetString: a value is a null pointer"))?;
            texts.push(t.into_owned());
        }
        set_from(
            c,
            vrs,
            &texts,
            "fmi3SetString",
            |t| t == VariableType::String,
            |v, _| StartValue::String(v.to_vec()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetBinary(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    valueSizes: *mut usize,
    values: *mut fmi3Binary,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetBinary", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let sizes = slice_mut(valueSizes, nValues, "valueSizes")?;
        let out = slice_mut(values, nValues, "values")?;
        let mut binaries = Vec::new();
        for &vr in vrs {
            crate::expect_type(c, vr, "fmi3GetBinary", |t| t == VariableType::Binary)?;
            match c.instance.get(vr, "fmi3GetBinary")? {
                StartValue::Binary(b) => binaries.extend(b),
                _ => return Err(Fault::error("fmi3GetBinary: not a Binary")),
            }
        }
        if binaries.len() != out.len() {
            return Err(Fault::error(format!(
                "fmi3GetBinary: the variables have {} elements, but nValues is {}",
                binaries.len(),
                out.len()
            )));
        }
        c.binaries = binaries;
        for ((slot, size), b) in out.iter_mut().zip(sizes.iter_mut()).zip(&c.binaries) {
            *slot = b.as_ptr();
            *size = b.len();
        }
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetBinary(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    valueSizes: *const usize,
    values: *const fmi3Binary,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetBinary", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let sizes = slice(valueSizes, nValues, "valueSizes")?;
        let values = slice(values, nValues, "values")?;
        let mut blobs = Vec::with_capacity(nValues);
        for (&p, &n) in values.iter().zip(sizes) {
            blobs.push(slice(p, n, "a Binary value")?.to_vec());
        }
        set_from(
            c,
            vrs,
            &blobs,
            "fmi3SetBinary",
            |t| t == VariableType::Binary,
            |v, _| StartValue::Binary(v.to_vec()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetFMUState(
    instance: fmi3Instance,
    FMUState: *mut fmi3FMUState,
) -> fmi3Status {
    call(instance, "fmi3GetFMUState", |c| {
        if FMUState.is_null() {
            return Err(Fault::error("FMUState is a null pointer"));
        }
        // SAFETY: checked for null.
        let slot = unsafe { &mut *FMUState };
        if !slot.is_null() && c.instance.states.contains(&(*slot as usize)) {
            crate::free_state(c, *slot, "fmi3GetFMUState")?;
        }
        let saved = c.instance.save("fmi3GetFMUState")?;
        *slot = crate::state_pointer(c, saved);
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetFMUState(instance: fmi3Instance, FMUState: fmi3FMUState) -> fmi3Status {
    call(instance, "fmi3SetFMUState", |c| {
        let saved = crate::state_ref(c, FMUState, "fmi3SetFMUState")?;
        c.instance.restore(saved, "fmi3SetFMUState")?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3FreeFMUState(
    instance: fmi3Instance,
    FMUState: *mut fmi3FMUState,
) -> fmi3Status {
    call(instance, "fmi3FreeFMUState", |c| {
        if FMUState.is_null() {
            return Err(Fault::error("FMUState is a null pointer"));
        }
        // SAFETY: checked for null.
        let slot = unsafe { &mut *FMUState };
        if slot.is_null() {
            return Ok(STATUS_OK);
        }
        crate::free_state(c, *slot, "fmi3FreeFMUState")?;
        *slot = std::ptr::null_mut();
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SerializedFMUStateSize(
    instance: fmi3Instance,
    FMUState: fmi3FMUState,
    size: *mut usize,
) -> fmi3Status {
    call(instance, "fmi3SerializedFMUStateSize", |c| {
        let saved = crate::state_ref(c, FMUState, "fmi3SerializedFMUStateSize")?;
        let bytes = c.instance.serialize(saved, "fmi3SerializedFMUStateSize")?;
        slice_mut(size, 1, "size")?[0] = bytes.len();
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SerializeFMUState(
    instance: fmi3Instance,
    FMUState: fmi3FMUState,
    serializedState: *mut fmi3Byte,
    size: usize,
) -> fmi3Status {
    call(instance, "fmi3SerializeFMUState", |c| {
        let saved = crate::state_ref(c, FMUState, "fmi3SerializeFMUState")?;
        let bytes = c.instance.serialize(saved, "fmi3SerializeFMUState")?;
        if bytes.len() != size {
            return Err(Fault::error(format!(
                "the state takes {} bytes, but size is {size} (ask fmi3SerializedFMUStateSize)",
                bytes.len()
            )));
        }
        slice_mut(serializedState, size, "serializedState")?.copy_from_slice(&bytes);
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3DeserializeFMUState(
    instance: fmi3Instance,
    serializedState: *const fmi3Byte,
    size: usize,
    FMUState: *mut fmi3FMUState,
) -> fmi3Status {
    call(instance, "fmi3DeserializeFMUState", |c| {
        let bytes = slice(serializedState, size, "serializedState")?.to_vec();
        if FMUState.is_null() {
            return Err(Fault::error("FMUState is a null pointer"));
        }
        // SAFETY: checked for null.
        let slot = unsafe { &mut *FMUState };
        *slot = crate::state_pointer(c, SavedState::Bytes(bytes));
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3DoStep(
    instance: fmi3Instance,
    currentCommunicationPoint: fmi3Float64,
    communicationStepSize: fmi3Float64,
    _noSetFMUStatePriorToCurrentPoint: fmi3Boolean,
    eventHandlingNeeded: *mut fmi3Boolean,
    terminateSimulation: *mut fmi3Boolean,
    earlyReturn: *mut fmi3Boolean,
    lastSuccessfulTime: *mut fmi3Float64,
) -> fmi3Status {
    call(instance, "fmi3DoStep", |c| {
        let event = slice_mut(eventHandlingNeeded, 1, "eventHandlingNeeded")?;
        let terminate = slice_mut(terminateSimulation, 1, "terminateSimulation")?;
        let early = slice_mut(earlyReturn, 1, "earlyReturn")?;
        let last = slice_mut(lastSuccessfulTime, 1, "lastSuccessfulTime")?;
        event[0] = false;
        early[0] = false;
        terminate[0] = false;
        match c.instance.do_step(
            currentCommunicationPoint,
            communicationStepSize,
            "fmi3DoStep",
        )? {
            Stepped::Reached => {
                last[0] = c.instance.time();
                Ok(STATUS_OK)
            }
            Stepped::Terminated(time) => {
                last[0] = time;
                terminate[0] = true;
                c.logger.log(
                    crate::STATUS_WARNING,
                    "cosimo",
                    &format!("an inner FMU asked to terminate the simulation at t = {time}"),
                );
                Ok(STATUS_OK)
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetFloat32(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut f32,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetFloat32", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetFloat32",
            |t| t == VariableType::Float32,
            |v, i| crate::float(v, i).map(|x| x as f32),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetFloat32(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const f32,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetFloat32", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetFloat32",
            |t| t == VariableType::Float32,
            |v, _| StartValue::Float(v.iter().map(|&x| f64::from(x)).collect()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetFloat64(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut f64,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetFloat64", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetFloat64",
            |t| t == VariableType::Float64,
            crate::float,
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetFloat64(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const f64,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetFloat64", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetFloat64",
            |t| t == VariableType::Float64,
            |v, _| StartValue::Float(v.to_vec()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetInt8(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut i8,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetInt8", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetInt8",
            |t| t == VariableType::Int8,
            |v, i| crate::int(v, i).and_then(|x| i8::try_from(x).ok()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetInt8(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const i8,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetInt8", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetInt8",
            |t| t == VariableType::Int8,
            |v, _| StartValue::Int(v.iter().map(|&x| i64::from(x)).collect()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetUInt8(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut u8,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetUInt8", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetUInt8",
            |t| t == VariableType::UInt8,
            |v, i| crate::uint(v, i).and_then(|x| u8::try_from(x).ok()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetUInt8(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const u8,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetUInt8", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetUInt8",
            |t| t == VariableType::UInt8,
            |v, _| StartValue::UInt(v.iter().map(|&x| u64::from(x)).collect()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetInt16(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut i16,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetInt16", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetInt16",
            |t| t == VariableType::Int16,
            |v, i| crate::int(v, i).and_then(|x| i16::try_from(x).ok()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetInt16(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const i16,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetInt16", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetInt16",
            |t| t == VariableType::Int16,
            |v, _| StartValue::Int(v.iter().map(|&x| i64::from(x)).collect()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetUInt16(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut u16,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetUInt16", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetUInt16",
            |t| t == VariableType::UInt16,
            |v, i| crate::uint(v, i).and_then(|x| u16::try_from(x).ok()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetUInt16(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const u16,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetUInt16", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetUInt16",
            |t| t == VariableType::UInt16,
            |v, _| StartValue::UInt(v.iter().map(|&x| u64::from(x)).collect()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetInt32(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut i32,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetInt32", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetInt32",
            |t| t == VariableType::Int32,
            |v, i| crate::int(v, i).and_then(|x| i32::try_from(x).ok()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetInt32(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const i32,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetInt32", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetInt32",
            |t| t == VariableType::Int32,
            |v, _| StartValue::Int(v.iter().map(|&x| i64::from(x)).collect()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetUInt32(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut u32,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetUInt32", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetUInt32",
            |t| t == VariableType::UInt32,
            |v, i| crate::uint(v, i).and_then(|x| u32::try_from(x).ok()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetUInt32(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const u32,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetUInt32", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetUInt32",
            |t| t == VariableType::UInt32,
            |v, _| StartValue::UInt(v.iter().map(|&x| u64::from(x)).collect()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetInt64(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut i64,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetInt64", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetInt64",
            |t| matches!(t, VariableType::Int64 | VariableType::Enumeration),
            crate::int,
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetInt64(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const i64,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetInt64", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetInt64",
            |t| matches!(t, VariableType::Int64 | VariableType::Enumeration),
            |v, _| StartValue::Int(v.to_vec()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetUInt64(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut u64,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetUInt64", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetUInt64",
            |t| t == VariableType::UInt64,
            crate::uint,
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetUInt64(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const u64,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetUInt64", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetUInt64",
            |t| t == VariableType::UInt64,
            |v, _| StartValue::UInt(v.to_vec()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetBoolean(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *mut bool,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetBoolean", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let out = slice_mut(values, nValues, "values")?;
        get_into(
            c,
            vrs,
            out,
            "fmi3GetBoolean",
            |t| t == VariableType::Boolean,
            crate::boolean,
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetBoolean(
    instance: fmi3Instance,
    valueReferences: *const fmi3ValueReference,
    nValueReferences: usize,
    values: *const bool,
    nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3SetBoolean", |c| {
        let vrs = slice(valueReferences, nValueReferences, "valueReferences")?;
        let values = slice(values, nValues, "values")?;
        set_from(
            c,
            vrs,
            values,
            "fmi3SetBoolean",
            |t| t == VariableType::Boolean,
            |v, _| StartValue::Bool(v.to_vec()),
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi3ActivateModelPartition(
    instance: fmi3Instance,
    _clockReference: fmi3ValueReference,
    _activationTime: fmi3Float64,
) -> fmi3Status {
    call(instance, "fmi3ActivateModelPartition", |_| {
        Err(Fault::error("Scheduled Execution is not supported"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3CompletedIntegratorStep(
    instance: fmi3Instance,
    _noSetFMUStatePriorToCurrentPoint: fmi3Boolean,
    _enterEventMode: *mut fmi3Boolean,
    _terminateSimulation: *mut fmi3Boolean,
) -> fmi3Status {
    call(instance, "fmi3CompletedIntegratorStep", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3EnterConfigurationMode(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3EnterConfigurationMode", |_| {
        Err(Fault::error(
            "an exported system has no structural parameters",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi3ExitConfigurationMode(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3ExitConfigurationMode", |_| {
        Err(Fault::error(
            "an exported system has no structural parameters",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi3EnterContinuousTimeMode(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3EnterContinuousTimeMode", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3EnterEventMode(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3EnterEventMode", |_| {
        Err(Fault::error(
            "an exported system has no event mode (hasEventMode is false)",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi3EnterStepMode(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3EnterStepMode", |_| {
        Err(Fault::error(
            "an exported system has no event mode (hasEventMode is false)",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi3EvaluateDiscreteStates(instance: fmi3Instance) -> fmi3Status {
    call(instance, "fmi3EvaluateDiscreteStates", |_| {
        Err(Fault::error("an exported system has no event mode"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetAdjointDerivative(
    instance: fmi3Instance,
    _unknowns: *const fmi3ValueReference,
    _nUnknowns: usize,
    _knowns: *const fmi3ValueReference,
    _nKnowns: usize,
    _seed: *const fmi3Float64,
    _nSeed: usize,
    _sensitivity: *mut fmi3Float64,
    _nSensitivity: usize,
) -> fmi3Status {
    call(instance, "fmi3GetAdjointDerivative", |_| {
        Err(Fault::error(
            "an exported system provides no adjoint derivatives",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetDirectionalDerivative(
    instance: fmi3Instance,
    _unknowns: *const fmi3ValueReference,
    _nUnknowns: usize,
    _knowns: *const fmi3ValueReference,
    _nKnowns: usize,
    _seed: *const fmi3Float64,
    _nSeed: usize,
    _sensitivity: *mut fmi3Float64,
    _nSensitivity: usize,
) -> fmi3Status {
    call(instance, "fmi3GetDirectionalDerivative", |_| {
        Err(Fault::error(
            "an exported system provides no directional derivatives",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetClock(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _values: *mut fmi3Clock,
) -> fmi3Status {
    call(instance, "fmi3GetClock", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetClock(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _values: *const fmi3Clock,
) -> fmi3Status {
    call(instance, "fmi3SetClock", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetContinuousStateDerivatives(
    instance: fmi3Instance,
    _derivatives: *mut fmi3Float64,
    _nContinuousStates: usize,
) -> fmi3Status {
    call(instance, "fmi3GetContinuousStateDerivatives", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetContinuousStates(
    instance: fmi3Instance,
    _continuousStates: *mut fmi3Float64,
    _nContinuousStates: usize,
) -> fmi3Status {
    call(instance, "fmi3GetContinuousStates", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetContinuousStates(
    instance: fmi3Instance,
    _continuousStates: *const fmi3Float64,
    _nContinuousStates: usize,
) -> fmi3Status {
    call(instance, "fmi3SetContinuousStates", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetNominalsOfContinuousStates(
    instance: fmi3Instance,
    _nominals: *mut fmi3Float64,
    _nContinuousStates: usize,
) -> fmi3Status {
    call(instance, "fmi3GetNominalsOfContinuousStates", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetEventIndicators(
    instance: fmi3Instance,
    _eventIndicators: *mut fmi3Float64,
    _nEventIndicators: usize,
) -> fmi3Status {
    call(instance, "fmi3GetEventIndicators", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetNumberOfContinuousStates(
    instance: fmi3Instance,
    _nContinuousStates: *mut usize,
) -> fmi3Status {
    call(instance, "fmi3GetNumberOfContinuousStates", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetNumberOfEventIndicators(
    instance: fmi3Instance,
    _nEventIndicators: *mut usize,
) -> fmi3Status {
    call(instance, "fmi3GetNumberOfEventIndicators", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetTime(instance: fmi3Instance, _time: fmi3Float64) -> fmi3Status {
    call(instance, "fmi3SetTime", |_| {
        Err(Fault::error("this FMU is Co-Simulation only"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetIntervalDecimal(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _intervals: *mut fmi3Float64,
    _qualifiers: *mut fmi3IntervalQualifier,
) -> fmi3Status {
    call(instance, "fmi3GetIntervalDecimal", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetIntervalFraction(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _counters: *mut fmi3UInt64,
    _resolutions: *mut fmi3UInt64,
    _qualifiers: *mut fmi3IntervalQualifier,
) -> fmi3Status {
    call(instance, "fmi3GetIntervalFraction", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetShiftDecimal(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _shifts: *mut fmi3Float64,
) -> fmi3Status {
    call(instance, "fmi3GetShiftDecimal", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetShiftFraction(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _counters: *mut fmi3UInt64,
    _resolutions: *mut fmi3UInt64,
) -> fmi3Status {
    call(instance, "fmi3GetShiftFraction", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetIntervalDecimal(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _intervals: *const fmi3Float64,
) -> fmi3Status {
    call(instance, "fmi3SetIntervalDecimal", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetIntervalFraction(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _counters: *const fmi3UInt64,
    _resolutions: *const fmi3UInt64,
) -> fmi3Status {
    call(instance, "fmi3SetIntervalFraction", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetShiftDecimal(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _shifts: *const fmi3Float64,
) -> fmi3Status {
    call(instance, "fmi3SetShiftDecimal", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3SetShiftFraction(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _counters: *const fmi3UInt64,
    _resolutions: *const fmi3UInt64,
) -> fmi3Status {
    call(instance, "fmi3SetShiftFraction", |_| {
        Err(Fault::error("an exported system shows no clocks"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3UpdateDiscreteStates(
    instance: fmi3Instance,
    _discreteStatesNeedUpdate: *mut fmi3Boolean,
    _terminateSimulation: *mut fmi3Boolean,
    _nominalsOfContinuousStatesChanged: *mut fmi3Boolean,
    _valuesOfContinuousStatesChanged: *mut fmi3Boolean,
    _nextEventTimeDefined: *mut fmi3Boolean,
    _nextEventTime: *mut fmi3Float64,
) -> fmi3Status {
    call(instance, "fmi3UpdateDiscreteStates", |_| {
        Err(Fault::error("an exported system has no event mode"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetOutputDerivatives(
    instance: fmi3Instance,
    _valueReferences: *const fmi3ValueReference,
    _nValueReferences: usize,
    _orders: *const fmi3Int32,
    _values: *mut fmi3Float64,
    _nValues: usize,
) -> fmi3Status {
    call(instance, "fmi3GetOutputDerivatives", |_| {
        Err(Fault::error(
            "an exported system provides no output derivatives (maxOutputDerivativeOrder is 0)",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetVariableDependencies(
    instance: fmi3Instance,
    _dependent: fmi3ValueReference,
    _elementIndicesOfDependent: *mut usize,
    _independents: *mut fmi3ValueReference,
    _elementIndicesOfIndependents: *mut usize,
    _dependencyKinds: *mut fmi3DependencyKind,
    _nDependencies: usize,
) -> fmi3Status {
    call(instance, "fmi3GetVariableDependencies", |_| {
        Err(Fault::error("an exported system declares no dependencies"))
    })
}

#[no_mangle]
pub extern "C" fn fmi3GetNumberOfVariableDependencies(
    instance: fmi3Instance,
    _valueReference: fmi3ValueReference,
    _nDependencies: *mut usize,
) -> fmi3Status {
    call(instance, "fmi3GetNumberOfVariableDependencies", |_| {
        Err(Fault::error("an exported system declares no dependencies"))
    })
}
