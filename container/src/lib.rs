//! The FMI 2 / FMI 3 Co-Simulation API of a system exported by `cosimo export`: the binary of
//! every exported FMU. It translates FMI calls into calls of the library's
//! [`cosimo::master::simulation::Simulation`] and nothing else (the same algorithms, checks and
//! errors as `cosimo run`).
//!
//! One build exports both the `fmi2*` and the `fmi3*` functions. Every entry point checks its
//! instance pointer against the live instances, catches panics (none crosses the C boundary),
//! and turns every misuse into an Error status with a message through the importer's logger.

mod fmi2;
mod fmi3;
mod instance;
mod logging;

use std::ffi::{c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use cosimo::export::manifest::Exposed;
use cosimo::fmu::description::{StartValue, VariableType};
use instance::{Instance, Outcome, SavedState};
use logging::{Current, Logger, DISCARD, ERROR, OK, WARNING};

/// An instance as the importer holds it: the system, its logger, and buffers that keep
/// strings returned by a get call valid until the next call.
pub(crate) struct Container {
    pub instance: Instance,
    pub logger: Arc<Logger>,
    pub strings: Vec<CString>,
    pub binaries: Vec<Vec<u8>>,
    /// The last step ended where an inner FMU asked to terminate.
    pub last_successful_time: f64,
}

/// The instances alive now (their addresses, sorted), so that a freed or foreign pointer is
/// refused instead of followed. A binary search, not a hash: every FMI call asks, and an
/// importer holds few instances.
static LIVE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

fn live(address: usize) -> bool {
    LIVE.lock()
        .map(|l| l.binary_search(&address).is_ok())
        .unwrap_or(false)
}

/// Hand a new instance to the importer.
pub(crate) fn register(container: Container) -> *mut c_void {
    let pointer = Box::into_raw(Box::new(container));
    if let Ok(mut l) = LIVE.lock() {
        let address = pointer as usize;
        if let Err(at) = l.binary_search(&address) {
            l.insert(at, address);
        }
    }
    pointer.cast()
}

/// Take an instance back from the importer (to free it).
pub(crate) fn unregister(pointer: *mut c_void) -> Option<Box<Container>> {
    let address = pointer as usize;
    let removed = LIVE
        .lock()
        .ok()
        .and_then(|mut l| l.binary_search(&address).ok().map(|at| l.remove(at)))
        .is_some();
    // SAFETY: the address was made by `register` and not freed since.
    removed.then(|| unsafe { Box::from_raw(pointer.cast::<Container>()) })
}

/// Run one FMI call on an instance: a null or unknown pointer, a fault or a panic becomes a
/// status (with a message to the logger where there is one).
pub(crate) fn call(
    pointer: *mut c_void,
    name: &str,
    f: impl FnOnce(&mut Container) -> Outcome<c_int>,
) -> c_int {
    if pointer.is_null() || !live(pointer as usize) {
        return ERROR;
    }
    // SAFETY: a live instance made by `register`; FMI forbids concurrent calls on one instance.
    let container = unsafe { &mut *pointer.cast::<Container>() };
    let logger = container.logger.clone();
    let _current = Current::set(&logger);
    match catch_unwind(AssertUnwindSafe(|| f(container))) {
        Ok(Ok(status)) => status,
        Ok(Err(fault)) => {
            let status = if fault.discard { DISCARD } else { ERROR };
            let category = if fault.discard {
                "logStatusDiscard"
            } else {
                "logStatusError"
            };
            logger.log(status, category, &format!("{name}: {}", fault.message));
            status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            logger.error(&format!(
                "{name}: internal error in cosimo ({what}); please report it"
            ));
            ERROR
        }
    }
}

/// A slice from a C array (empty for n = 0; a null pointer with n > 0 is a fault).
pub(crate) fn slice<'a, T>(pointer: *const T, n: usize, what: &str) -> Outcome<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if pointer.is_null() {
        return Err(instance::Fault::error(format!("{what} is a null pointer")));
    }
    // SAFETY: the importer passes n elements (FMI).
    Ok(unsafe { std::slice::from_raw_parts(pointer, n) })
}

pub(crate) fn slice_mut<'a, T>(pointer: *mut T, n: usize, what: &str) -> Outcome<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if pointer.is_null() {
        return Err(instance::Fault::error(format!("{what} is a null pointer")));
    }
    // SAFETY: the importer passes room for n elements (FMI).
    Ok(unsafe { std::slice::from_raw_parts_mut(pointer, n) })
}

/// Which FMI types a typed get / set function takes.
pub(crate) type Accepts = fn(VariableType) -> bool;

/// Read the variables `vrs` into `out` (their elements in order), each converted by `convert`
/// from the library's value; the count must match.
pub(crate) fn get_into<T: 'static>(
    c: &mut Container,
    vrs: &[u32],
    out: &mut [T],
    call: &str,
    accepts: Accepts,
    convert: impl Fn(&StartValue, usize) -> Option<T>,
) -> Outcome<()> {
    let mut at = 0;
    for &vr in vrs {
        let index = c.instance.index(vr, call)?;
        let (exposed, var_type) = c.instance.exposed(index);
        check_type(exposed, var_type, accepts, call)?;
        let count = exposed.count;
        if let Some(floats) = out.get_mut(at..).and_then(as_floats) {
            // Float64 read in place, without a value in between (importers read outputs at
            // every step).
            if count <= floats.len() && c.instance.get_float64(index, &mut floats[..count], call)? {
                at += count;
                continue;
            }
        }
        let value = c.instance.get(vr, call)?;
        let count = element_count(&value);
        if at + count > out.len() {
            return Err(instance::Fault::error(format!(
                "{call}: the variables have more elements than nValues = {}",
                out.len()
            )));
        }
        for i in 0..count {
            out[at] = convert(&value, i).ok_or_else(|| {
                instance::Fault::error(format!(
                    "{call}: value reference {vr} does not fit this type"
                ))
            })?;
            at += 1;
        }
    }
    if at != out.len() {
        return Err(instance::Fault::error(format!(
            "{call}: the variables have {at} elements, but nValues is {}",
            out.len()
        )));
    }
    Ok(())
}

/// Set the variables `vrs` from `values` (their elements in order), each value made by `make`
/// from its elements.
pub(crate) fn set_from<T>(
    c: &mut Container,
    vrs: &[u32],
    values: &[T],
    call: &str,
    accepts: Accepts,
    make: impl Fn(&[T], VariableType) -> StartValue,
) -> Outcome<()> {
    let mut at = 0;
    for &vr in vrs {
        let exposed = c.instance.variable(vr, call)?;
        check_type(exposed, exposed.variable_type(), accepts, call)?;
        let count = exposed.count;
        let var_type = exposed.variable_type().unwrap_or(VariableType::Float64);
        if at + count > values.len() {
            return Err(instance::Fault::error(format!(
                "{call}: the variables have more elements than nValues = {}",
                values.len()
            )));
        }
        let value = make(&values[at..at + count], var_type);
        at += count;
        c.instance.set(vr, value, call)?;
    }
    if at != values.len() {
        return Err(instance::Fault::error(format!(
            "{call}: the variables have {at} elements, but nValues is {}",
            values.len()
        )));
    }
    Ok(())
}

/// Refuse a variable whose type the call does not take.
pub(crate) fn expect_type(c: &Container, vr: u32, call: &str, accepts: Accepts) -> Outcome<()> {
    let exposed = c.instance.variable(vr, call)?;
    check_type(exposed, exposed.variable_type(), accepts, call)
}

fn check_type(
    exposed: &Exposed,
    var_type: Option<VariableType>,
    accepts: Accepts,
    call: &str,
) -> Outcome<()> {
    match var_type {
        Some(t) if accepts(t) => Ok(()),
        _ => Err(instance::Fault::error(format!(
            "{call}: {} is of type {}",
            exposed.name, exposed.var_type
        ))),
    }
}

/// `out` as f64s when `T` is f64 (the getters of FMI 2 Real and FMI 3 Float64).
fn as_floats<T: 'static>(out: &mut [T]) -> Option<&mut [f64]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f64>()).then(|| {
        // SAFETY: T is f64, so the slice is one of f64 of the same length.
        unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<f64>(), out.len()) }
    })
}

fn element_count(value: &StartValue) -> usize {
    match value {
        StartValue::Float(v) => v.len(),
        StartValue::Int(v) => v.len(),
        StartValue::UInt(v) => v.len(),
        StartValue::Bool(v) => v.len(),
        StartValue::String(v) => v.len(),
        StartValue::Binary(v) => v.len(),
    }
}

/// Element `i` as a float.
pub(crate) fn float(value: &StartValue, i: usize) -> Option<f64> {
    match value {
        StartValue::Float(v) => v.get(i).copied(),
        _ => None,
    }
}

/// Element `i` as a signed integer.
pub(crate) fn int(value: &StartValue, i: usize) -> Option<i64> {
    match value {
        StartValue::Int(v) => v.get(i).copied(),
        StartValue::UInt(v) => v.get(i).and_then(|&x| i64::try_from(x).ok()),
        _ => None,
    }
}

/// Element `i` as an unsigned integer.
pub(crate) fn uint(value: &StartValue, i: usize) -> Option<u64> {
    match value {
        StartValue::UInt(v) => v.get(i).copied(),
        StartValue::Int(v) => v.get(i).and_then(|&x| u64::try_from(x).ok()),
        _ => None,
    }
}

pub(crate) fn boolean(value: &StartValue, i: usize) -> Option<bool> {
    match value {
        StartValue::Bool(v) => v.get(i).copied(),
        _ => None,
    }
}

/// A saved state handed to the importer as a pointer.
pub(crate) fn state_pointer(c: &mut Container, state: SavedState) -> *mut c_void {
    let pointer = Box::into_raw(Box::new(state)).cast::<c_void>();
    c.instance.states.insert(pointer as usize);
    pointer
}

/// The saved state behind a pointer the importer passes back.
pub(crate) fn state_ref<'a>(
    c: &Container,
    pointer: *mut c_void,
    call: &str,
) -> Outcome<&'a SavedState> {
    if pointer.is_null() || !c.instance.states.contains(&(pointer as usize)) {
        return Err(instance::Fault::error(format!(
            "{call}: not an FMU state of this instance (null, freed, or another instance's)"
        )));
    }
    // SAFETY: made by `state_pointer` of this instance and not freed.
    Ok(unsafe { &*pointer.cast::<SavedState>() })
}

/// Free a saved state.
pub(crate) fn free_state(c: &mut Container, pointer: *mut c_void, call: &str) -> Outcome<()> {
    state_ref(c, pointer, call)?;
    c.instance.states.remove(&(pointer as usize));
    // SAFETY: made by `state_pointer` and now forgotten by the instance.
    drop(unsafe { Box::from_raw(pointer.cast::<SavedState>()) });
    Ok(())
}

/// Free every state an instance still holds (at free instance).
pub(crate) fn free_all_states(c: &mut Container) {
    for address in std::mem::take(&mut c.instance.states) {
        // SAFETY: made by `state_pointer` and not freed.
        drop(unsafe { Box::from_raw(address as *mut SavedState) });
    }
}

/// The folder of a `file:` URI (FMI 2 `fmuResourceLocation`) or a plain path (FMI 3).
pub(crate) fn resource_folder(location: &str) -> std::path::PathBuf {
    let path = match location.strip_prefix("file://") {
        // file:///path, or file://localhost/path
        Some(rest) => rest.strip_prefix("localhost").unwrap_or(rest).to_string(),
        None => location
            .strip_prefix("file:")
            .unwrap_or(location)
            .to_string(),
    };
    let mut bytes = Vec::with_capacity(path.len());
    let raw = path.as_bytes();
    let mut i = 0;
    while i < raw.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if raw[i] == b'%' && i + 2 < raw.len() {
            if let (Some(h), Some(l)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                bytes.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        bytes.push(raw[i]);
        i += 1;
    }
    std::path::PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

pub(crate) const STATUS_OK: c_int = OK;
pub(crate) const STATUS_WARNING: c_int = WARNING;
