//! The FMI 2.0 Co-Simulation functions (`fmi2Functions.h`) over [`crate::instance::Instance`].
#![allow(non_snake_case)]

use std::ffi::{c_char, CString};

use cosimo::export::manifest::ImporterExperiment;
use cosimo::fmu::description::{StartValue, VariableType};
use cosimo::fmu::ffi::fmi2::*;

use crate::instance::{Fault, Instance, Stepped};
use crate::logging::{text, Callback, Logger};
use crate::{call, get_into, set_from, slice, slice_mut, Container, STATUS_OK};

fn is_real(t: VariableType) -> bool {
    t.is_float()
}

fn is_integer(t: VariableType) -> bool {
    matches!(
        t,
        VariableType::Int8
            | VariableType::UInt8
            | VariableType::Int16
            | VariableType::UInt16
            | VariableType::Int32
            | VariableType::Enumeration
    )
}

fn is_boolean(t: VariableType) -> bool {
    t == VariableType::Boolean
}

fn is_string(t: VariableType) -> bool {
    t == VariableType::String
}

#[no_mangle]
pub extern "C" fn fmi2GetTypesPlatform() -> *const c_char {
    c"default".as_ptr()
}

#[no_mangle]
pub extern "C" fn fmi2GetVersion() -> *const c_char {
    c"2.0".as_ptr()
}

#[no_mangle]
pub extern "C" fn fmi2SetDebugLogging(
    c: fmi2Component,
    _loggingOn: fmi2Boolean,
    _nCategories: usize,
    _categories: *const fmi2String,
) -> fmi2Status {
    // Inner FMUs log as the export asked (--debug-logging); cosimo's warnings always go out.
    call(c, "fmi2SetDebugLogging", |_| Ok(STATUS_OK))
}

/// # Safety
/// Pointers as FMI 2 defines them.
#[no_mangle]
pub unsafe extern "C" fn fmi2Instantiate(
    instanceName: fmi2String,
    fmuType: fmi2Type,
    fmuGUID: fmi2String,
    fmuResourceLocation: fmi2String,
    functions: *const fmi2CallbackFunctions,
    _visible: fmi2Boolean,
    _loggingOn: fmi2Boolean,
) -> fmi2Component {
    let made = std::panic::catch_unwind(|| {
        // SAFETY: FMI passes a valid callback structure or null.
        let callbacks = unsafe { functions.as_ref() };
        let name = unsafe { text(instanceName) }
            .map(|s| s.into_owned())
            .unwrap_or_default();
        let logger = Logger::new(
            match callbacks.and_then(|f| f.logger.map(|l| (l, f.componentEnvironment))) {
                Some((logger, environment)) => Callback::Fmi2(logger, environment),
                None => Callback::None,
            },
            &name,
        );
        let _current = crate::logging::Current::set(&logger);
        let fail = |message: String| {
            logger.error(&format!("fmi2Instantiate: {message}"));
            std::ptr::null_mut()
        };
        if fmuType != fmi2CoSimulation {
            return fail(
                "this FMU is Co-Simulation only (fmuType must be fmi2CoSimulation)".into(),
            );
        }
        let Some(location) = (unsafe { text(fmuResourceLocation) }) else {
            return fail("fmuResourceLocation is null".into());
        };
        let token = unsafe { text(fmuGUID) };
        let resources = crate::resource_folder(&location);
        match Instance::new(token.as_deref(), resources) {
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
pub extern "C" fn fmi2FreeInstance(c: fmi2Component) {
    let _ = std::panic::catch_unwind(|| {
        if let Some(mut container) = crate::unregister(c) {
            let logger = container.logger.clone();
            let _current = crate::logging::Current::set(&logger);
            crate::free_all_states(&mut container);
            drop(container);
        }
    });
}

#[no_mangle]
pub extern "C" fn fmi2SetupExperiment(
    c: fmi2Component,
    toleranceDefined: fmi2Boolean,
    tolerance: fmi2Real,
    startTime: fmi2Real,
    stopTimeDefined: fmi2Boolean,
    stopTime: fmi2Real,
) -> fmi2Status {
    call(c, "fmi2SetupExperiment", |c| {
        c.instance.setup(
            ImporterExperiment {
                start: startTime,
                stop: (stopTimeDefined != 0).then_some(stopTime),
                tolerance: (toleranceDefined != 0).then_some(tolerance),
            },
            "fmi2SetupExperiment",
        )?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2EnterInitializationMode(c: fmi2Component) -> fmi2Status {
    call(c, "fmi2EnterInitializationMode", |c| {
        c.instance
            .enter_initialization("fmi2EnterInitializationMode")?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2ExitInitializationMode(c: fmi2Component) -> fmi2Status {
    call(c, "fmi2ExitInitializationMode", |c| {
        let logger = c.logger.clone();
        c.instance
            .exit_initialization("fmi2ExitInitializationMode", &mut |w| {
                logger.log(crate::STATUS_WARNING, "cosimo", w)
            })?;
        c.last_successful_time = c.instance.time();
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2Terminate(c: fmi2Component) -> fmi2Status {
    call(c, "fmi2Terminate", |c| {
        c.instance.terminate("fmi2Terminate")?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2Reset(c: fmi2Component) -> fmi2Status {
    call(c, "fmi2Reset", |c| {
        crate::free_all_states(c);
        c.instance.reset();
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetReal(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *mut fmi2Real,
) -> fmi2Status {
    call(c, "fmi2GetReal", |c| {
        let vrs = slice(vr, nvr, "vr")?;
        let out = slice_mut(value, nvr, "value")?;
        get_into(c, vrs, out, "fmi2GetReal", is_real, crate::float)?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetInteger(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *mut fmi2Integer,
) -> fmi2Status {
    call(c, "fmi2GetInteger", |c| {
        let vrs = slice(vr, nvr, "vr")?;
        let out = slice_mut(value, nvr, "value")?;
        get_into(c, vrs, out, "fmi2GetInteger", is_integer, |v, i| {
            crate::int(v, i).and_then(|x| i32::try_from(x).ok())
        })?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetBoolean(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *mut fmi2Boolean,
) -> fmi2Status {
    call(c, "fmi2GetBoolean", |c| {
        let vrs = slice(vr, nvr, "vr")?;
        let out = slice_mut(value, nvr, "value")?;
        get_into(c, vrs, out, "fmi2GetBoolean", is_boolean, |v, i| {
            crate::boolean(v, i).map(fmi2Boolean::from)
        })?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetString(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *mut fmi2String,
) -> fmi2Status {
    call(c, "fmi2GetString", |c| {
        let vrs = slice(vr, nvr, "vr")?;
        let out = slice_mut(value, nvr, "value")?;
        let mut strings = Vec::with_capacity(nvr);
        for &vr in vrs {
            crate::expect_type(c, vr, "fmi2GetString", is_string)?;
            match c.instance.get(vr, "fmi2GetString")? {
                StartValue::String(s) => strings.push(
                    CString::new(s.into_iter().next().unwrap_or_default().replace('\0', " "))
                        .unwrap_or_default(),
                ),
                _ => return Err(Fault::error("fmi2GetString: not a String")),
            }
        }
        // Valid until the next call of this instance.
        c.strings = strings;
        for (slot, s) in out.iter_mut().zip(&c.strings) {
            *slot = s.as_ptr();
        }
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2SetReal(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *const fmi2Real,
) -> fmi2Status {
    call(c, "fmi2SetReal", |c| {
        let vrs = slice(vr, nvr, "vr")?;
        let values = slice(value, nvr, "value")?;
        set_from(c, vrs, values, "fmi2SetReal", is_real, |v, _| {
            StartValue::Float(v.to_vec())
        })?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2SetInteger(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *const fmi2Integer,
) -> fmi2Status {
    call(c, "fmi2SetInteger", |c| {
        let vrs = slice(vr, nvr, "vr")?;
        let values = slice(value, nvr, "value")?;
        set_from(c, vrs, values, "fmi2SetInteger", is_integer, |v, t| {
            if matches!(t, VariableType::UInt8 | VariableType::UInt16) {
                StartValue::UInt(v.iter().map(|&x| x.max(0) as u64).collect())
            } else {
                StartValue::Int(v.iter().map(|&x| i64::from(x)).collect())
            }
        })?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2SetBoolean(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *const fmi2Boolean,
) -> fmi2Status {
    call(c, "fmi2SetBoolean", |c| {
        let vrs = slice(vr, nvr, "vr")?;
        let values = slice(value, nvr, "value")?;
        set_from(c, vrs, values, "fmi2SetBoolean", is_boolean, |v, _| {
            StartValue::Bool(v.iter().map(|&x| x != 0).collect())
        })?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2SetString(
    c: fmi2Component,
    vr: *const fmi2ValueReference,
    nvr: usize,
    value: *const fmi2String,
) -> fmi2Status {
    call(c, "fmi2SetString", |c| {
        let vrs = slice(vr, nvr, "vr")?;
        let values = slice(value, nvr, "value")?;
        let mut texts = Vec::with_capacity(nvr);
        for &p in values {
            // SAFETY: FMI passes NUL-terminated strings or null.
            let t = unsafe { text(p) }
                .ok_or_else(|| Fault::error("fmi2SetString: a value is a null pointer"))?;
            texts.push(t.into_owned());
        }
        set_from(c, vrs, &texts, "fmi2SetString", is_string, |v, _| {
            StartValue::String(v.to_vec())
        })?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetFMUstate(c: fmi2Component, state: *mut fmi2FMUstate) -> fmi2Status {
    call(c, "fmi2GetFMUstate", |c| {
        if state.is_null() {
            return Err(Fault::error("FMUstate is a null pointer"));
        }
        // SAFETY: checked for null; FMI passes a valid pointer to a state slot.
        let slot = unsafe { &mut *state };
        if !slot.is_null() && c.instance.states.contains(&(*slot as usize)) {
            // FMI 2: a state passed in is overwritten.
            crate::free_state(c, *slot, "fmi2GetFMUstate")?;
        }
        let saved = c.instance.save("fmi2GetFMUstate")?;
        *slot = crate::state_pointer(c, saved);
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2SetFMUstate(c: fmi2Component, state: fmi2FMUstate) -> fmi2Status {
    call(c, "fmi2SetFMUstate", |c| {
        let saved = crate::state_ref(c, state, "fmi2SetFMUstate")?;
        c.instance.restore(saved, "fmi2SetFMUstate")?;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2FreeFMUstate(c: fmi2Component, state: *mut fmi2FMUstate) -> fmi2Status {
    call(c, "fmi2FreeFMUstate", |c| {
        if state.is_null() {
            return Err(Fault::error("FMUstate is a null pointer"));
        }
        // SAFETY: checked for null.
        let slot = unsafe { &mut *state };
        if slot.is_null() {
            return Ok(STATUS_OK);
        }
        crate::free_state(c, *slot, "fmi2FreeFMUstate")?;
        *slot = std::ptr::null_mut();
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2SerializedFMUstateSize(
    c: fmi2Component,
    state: fmi2FMUstate,
    size: *mut usize,
) -> fmi2Status {
    call(c, "fmi2SerializedFMUstateSize", |c| {
        let saved = crate::state_ref(c, state, "fmi2SerializedFMUstateSize")?;
        let bytes = c.instance.serialize(saved, "fmi2SerializedFMUstateSize")?;
        let out = slice_mut(size, 1, "size")?;
        out[0] = bytes.len();
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2SerializeFMUstate(
    c: fmi2Component,
    state: fmi2FMUstate,
    serializedState: *mut fmi2Byte,
    size: usize,
) -> fmi2Status {
    call(c, "fmi2SerializeFMUstate", |c| {
        let saved = crate::state_ref(c, state, "fmi2SerializeFMUstate")?;
        let bytes = c.instance.serialize(saved, "fmi2SerializeFMUstate")?;
        if bytes.len() != size {
            return Err(Fault::error(format!(
                "the state takes {} bytes, but size is {size} (ask fmi2SerializedFMUstateSize)",
                bytes.len()
            )));
        }
        let out = slice_mut(serializedState.cast::<u8>(), size, "serializedState")?;
        out.copy_from_slice(&bytes);
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2DeSerializeFMUstate(
    c: fmi2Component,
    serializedState: *const fmi2Byte,
    size: usize,
    state: *mut fmi2FMUstate,
) -> fmi2Status {
    call(c, "fmi2DeSerializeFMUstate", |c| {
        let bytes = slice(serializedState.cast::<u8>(), size, "serializedState")?.to_vec();
        if state.is_null() {
            return Err(Fault::error("FMUstate is a null pointer"));
        }
        // SAFETY: checked for null.
        let slot = unsafe { &mut *state };
        *slot = crate::state_pointer(c, crate::instance::SavedState::Bytes(bytes));
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetDirectionalDerivative(
    c: fmi2Component,
    _vUnknown_ref: *const fmi2ValueReference,
    _nUnknown: usize,
    _vKnown_ref: *const fmi2ValueReference,
    _nKnown: usize,
    _dvKnown: *const fmi2Real,
    _dvUnknown: *mut fmi2Real,
) -> fmi2Status {
    call(c, "fmi2GetDirectionalDerivative", |_| {
        Err(Fault::error(
            "an exported system provides no directional derivatives (providesDirectionalDerivative is false)",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi2SetRealInputDerivatives(
    c: fmi2Component,
    _vr: *const fmi2ValueReference,
    _nvr: usize,
    _order: *const fmi2Integer,
    _value: *const fmi2Real,
) -> fmi2Status {
    call(c, "fmi2SetRealInputDerivatives", |_| {
        Err(Fault::error(
            "an exported system does not interpolate inputs (canInterpolateInputs is false)",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetRealOutputDerivatives(
    c: fmi2Component,
    _vr: *const fmi2ValueReference,
    _nvr: usize,
    _order: *const fmi2Integer,
    _value: *mut fmi2Real,
) -> fmi2Status {
    call(c, "fmi2GetRealOutputDerivatives", |_| {
        Err(Fault::error(
            "an exported system provides no output derivatives (maxOutputDerivativeOrder is 0)",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi2DoStep(
    c: fmi2Component,
    currentCommunicationPoint: fmi2Real,
    communicationStepSize: fmi2Real,
    _noSetFMUStatePriorToCurrentPoint: fmi2Boolean,
) -> fmi2Status {
    call(c, "fmi2DoStep", |c| {
        match c.instance.do_step(
            currentCommunicationPoint,
            communicationStepSize,
            "fmi2DoStep",
        )? {
            Stepped::Reached => {
                c.last_successful_time = c.instance.time();
                Ok(STATUS_OK)
            }
            Stepped::Terminated(time) => {
                c.last_successful_time = time;
                Err(Fault {
                    discard: true,
                    message: format!(
                        "an inner FMU asked to terminate the simulation at t = {time} (fmi2GetBooleanStatus(fmi2Terminated) is true)"
                    ),
                })
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn fmi2CancelStep(c: fmi2Component) -> fmi2Status {
    call(c, "fmi2CancelStep", |_| {
        Err(Fault::error(
            "fmi2DoStep never returns fmi2Pending here: nothing to cancel",
        ))
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetStatus(
    c: fmi2Component,
    _s: fmi2StatusKind,
    _value: *mut fmi2Status,
) -> fmi2Status {
    call(c, "fmi2GetStatus", |_| {
        Err(Fault::error("fmi2GetStatus: no asynchronous steps here"))
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetRealStatus(
    c: fmi2Component,
    s: fmi2StatusKind,
    value: *mut fmi2Real,
) -> fmi2Status {
    call(c, "fmi2GetRealStatus", |c| {
        if s != fmi2LastSuccessfulTime {
            return Err(Fault::error(format!(
                "fmi2GetRealStatus answers fmi2LastSuccessfulTime only, not status kind {s}"
            )));
        }
        slice_mut(value, 1, "value")?[0] = c.last_successful_time;
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetIntegerStatus(
    c: fmi2Component,
    _s: fmi2StatusKind,
    _value: *mut fmi2Integer,
) -> fmi2Status {
    call(c, "fmi2GetIntegerStatus", |_| {
        Err(Fault::error("fmi2GetIntegerStatus: no integer status here"))
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetBooleanStatus(
    c: fmi2Component,
    s: fmi2StatusKind,
    value: *mut fmi2Boolean,
) -> fmi2Status {
    call(c, "fmi2GetBooleanStatus", |c| {
        if s != fmi2Terminated {
            return Err(Fault::error(format!(
                "fmi2GetBooleanStatus answers fmi2Terminated only, not status kind {s}"
            )));
        }
        slice_mut(value, 1, "value")?[0] = fmi2Boolean::from(c.instance.terminated);
        Ok(STATUS_OK)
    })
}

#[no_mangle]
pub extern "C" fn fmi2GetStringStatus(
    c: fmi2Component,
    _s: fmi2StatusKind,
    _value: *mut fmi2String,
) -> fmi2Status {
    call(c, "fmi2GetStringStatus", |_| {
        Err(Fault::error(
            "fmi2GetStringStatus: no asynchronous steps here",
        ))
    })
}
