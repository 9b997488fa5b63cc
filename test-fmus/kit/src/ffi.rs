//! Helpers shared by the FMI 2 and FMI 3 C layers: panic guards and pointer checks.

use std::any::Any;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::instance::{Instance, Interface, Phase, SimState, Status};
use crate::model::Model;

/// Runs `f` without letting a panic unwind into C; a panic yields `fallback`.
pub(crate) fn guard<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

fn panic_text(p: &(dyn Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Calls the importer made to an instance after one of its calls returned Fatal.
static CALLS_AFTER_FATAL: AtomicUsize = AtomicUsize::new(0);

/// How many calls (including `fmi*FreeInstance`) importers made to instances of this FMU
/// after they returned Fatal; exported as `fmu_kit_calls_after_fatal`, so that a test can
/// check an importer against FMI 2.0 §2.1.3 / FMI 3.0 §2.2.3 ("It is not possible to call any
/// other function for any of the FMU instances").
pub fn calls_after_fatal() -> usize {
    CALLS_AFTER_FATAL.load(Ordering::SeqCst)
}

/// Records a call made after Fatal: counts it, says so on stderr (the logger may be gone with
/// the importer's state) and, when the environment variable `FMU_KIT_ABORT_ON_MISUSE` is set
/// (and not "0"), aborts the process, so that a test of an importer's command line sees it in
/// the exit status.
pub(crate) fn called_after_fatal(func: &str, instance: &str) {
    CALLS_AFTER_FATAL.fetch_add(1, Ordering::SeqCst);
    eprintln!(
        "fmu-kit: FMI misuse: {func} called on instance \"{instance}\" after a call returned \
         Fatal (FMI 2.0 §2.1.3, FMI 3.0 §2.2.3: no further call is allowed, not even freeing \
         the instance)"
    );
    if std::env::var_os("FMU_KIT_ABORT_ON_MISUSE").is_some_and(|v| !v.is_empty() && v != "0") {
        std::process::abort();
    }
}

/// Runs `f` on the instance behind `c`: Error for NULL or foreign pointers, Error with a log
/// message if the model panics, Fatal (recorded as misuse) after the instance returned Fatal.
///
/// # Safety
/// `c` must be NULL or an instance pointer of this kit that has not been freed.
pub(crate) unsafe fn with<M: Model>(
    c: *mut c_void,
    func: &str,
    f: impl FnOnce(&mut Instance<M>) -> Status,
) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(|| match Instance::<M>::from_ptr(c) {
        Some(inst) if inst.phase == Phase::Fatal => {
            called_after_fatal(func, &inst.logger.name.to_string_lossy());
            inst.logger.log_always(
                Status::Fatal,
                2,
                &format!("{func}: the FMU is in a fatal error state; FMI allows no further call"),
            );
            Status::Fatal
        }
        Some(inst) => f(inst),
        None => Status::Error,
    }));
    match r {
        Ok(s) => s as c_int,
        Err(p) => {
            if let Some(inst) = Instance::<M>::from_ptr(c) {
                inst.fail(
                    func,
                    format!("internal error in the model: {}", panic_text(&*p)),
                );
            }
            Status::Error as c_int
        }
    }
}

/// A C array as a slice; `None` for a NULL pointer with a non-zero length.
///
/// # Safety
/// A non-NULL `p` must point to `n` valid elements.
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize) -> Option<&'a [T]> {
    if n == 0 {
        Some(&[])
    } else if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts(p, n))
    }
}

/// A writable C array as a slice; `None` for a NULL pointer with a non-zero length.
///
/// # Safety
/// A non-NULL `p` must point to `n` valid, writable elements.
pub(crate) unsafe fn slice_mut<'a, T>(p: *mut T, n: usize) -> Option<&'a mut [T]> {
    if n == 0 {
        Some(&mut [])
    } else if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts_mut(p, n))
    }
}

/// A C string, `None` for NULL.
///
/// # Safety
/// A non-NULL `p` must be NUL-terminated.
pub(crate) unsafe fn text(p: *const c_char) -> Option<String> {
    (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
}

/// Array arguments NULL where data is required.
pub(crate) fn null_arg<M: Model>(inst: &Instance<M>, func: &str) -> Status {
    inst.fail(func, "a required array argument is NULL")
}

/// A saved FMU state as handed to the importer.
pub(crate) struct StateBox {
    magic: u64,
    pub(crate) st: SimState,
}

const STATE_MAGIC: u64 = 0x464d_554b_4954_5354;

impl StateBox {
    pub(crate) fn new_ptr(st: SimState) -> *mut c_void {
        Box::into_raw(Box::new(StateBox {
            magic: STATE_MAGIC,
            st,
        })) as *mut c_void
    }

    /// # Safety
    /// `p` must be NULL or a pointer from [`StateBox::new_ptr`] not yet freed.
    pub(crate) unsafe fn from_ptr<'a>(p: *mut c_void) -> Option<&'a mut StateBox> {
        let b = (p as *mut StateBox).as_mut()?;
        (b.magic == STATE_MAGIC).then_some(b)
    }
}

/// `fmi*GetFMUstate`: a new state, or the importer's previous one overwritten.
///
/// # Safety
/// `state` must be NULL or point to NULL or to a state of this kit.
pub(crate) unsafe fn get_state<M: Model>(
    inst: &mut Instance<M>,
    func: &str,
    state: *mut *mut c_void,
) -> Status {
    if state.is_null() {
        return null_arg(inst, func);
    }
    if inst.phase == Phase::IntermediateUpdate {
        return inst.fail(func, "not allowed in Intermediate Update Mode");
    }
    if let Some(b) = StateBox::from_ptr(*state) {
        b.st = inst.s.clone();
    } else if (*state).is_null() {
        *state = StateBox::new_ptr(inst.s.clone());
    } else {
        return inst.fail(func, "*FMUstate is neither NULL nor a state of this FMU");
    }
    Status::Ok
}

/// `fmi*SetFMUstate`: restores a saved state (and leaves a failed step's error state or a
/// termination request, so the instance may step again).
///
/// # Safety
/// `state` must be NULL or a state of this kit.
pub(crate) unsafe fn set_state<M: Model>(
    inst: &mut Instance<M>,
    func: &str,
    state: *mut c_void,
) -> Status {
    if inst.phase == Phase::IntermediateUpdate {
        return inst.fail(func, "not allowed in Intermediate Update Mode");
    }
    match StateBox::from_ptr(state) {
        Some(b) if b.st.values.table.token == inst.table.token => {
            inst.s = b.st.clone();
            if matches!(inst.phase, Phase::Failed | Phase::TerminationRequested) {
                // A Model Exchange instance continues integrating from the restored state.
                inst.phase = match inst.interface {
                    Interface::CoSimulation | Interface::ScheduledExecution => Phase::Step,
                    Interface::ModelExchange => Phase::ContinuousTime,
                };
            }
            Status::Ok
        }
        _ => inst.fail(func, "the FMU state is NULL or not a state of this FMU"),
    }
}

/// `fmi*FreeFMUstate`.
///
/// # Safety
/// `state` must be NULL or point to NULL or to a state of this kit.
pub(crate) unsafe fn free_state<M: Model>(
    inst: &mut Instance<M>,
    func: &str,
    state: *mut *mut c_void,
) -> Status {
    if state.is_null() || (*state).is_null() {
        return Status::Ok;
    }
    match StateBox::from_ptr(*state) {
        Some(b) => {
            b.magic = 0;
            drop(Box::from_raw(b as *mut StateBox));
            *state = std::ptr::null_mut();
            Status::Ok
        }
        None => inst.fail(func, "not a state of this FMU"),
    }
}

/// `fmi*SerializedFMUstateSize`.
///
/// # Safety
/// `state` must be NULL or a state of this kit; `size` NULL or writable.
pub(crate) unsafe fn state_size<M: Model>(
    inst: &mut Instance<M>,
    func: &str,
    state: *mut c_void,
    size: *mut usize,
) -> Status {
    match (StateBox::from_ptr(state), size.as_mut()) {
        (Some(b), Some(size)) => {
            *size = inst.serialize(&b.st).len();
            Status::Ok
        }
        _ => inst.fail(func, "NULL or foreign FMU state or size pointer"),
    }
}

/// `fmi*SerializeFMUstate`.
///
/// # Safety
/// `state` must be NULL or a state of this kit; `buf` must hold `size` bytes.
pub(crate) unsafe fn serialize<M: Model>(
    inst: &mut Instance<M>,
    func: &str,
    state: *mut c_void,
    buf: *mut u8,
    size: usize,
) -> Status {
    let Some(b) = StateBox::from_ptr(state) else {
        return inst.fail(func, "NULL or foreign FMU state");
    };
    let bytes = inst.serialize(&b.st);
    if size < bytes.len() {
        return inst.fail(
            func,
            format!("buffer of {size} bytes, {} needed", bytes.len()),
        );
    }
    match slice_mut(buf, bytes.len()) {
        Some(dst) => {
            dst.copy_from_slice(&bytes);
            Status::Ok
        }
        None => null_arg(inst, func),
    }
}

/// `fmi*DeserializeFMUstate`.
///
/// # Safety
/// `buf` must hold `size` bytes; `state` NULL or writable.
pub(crate) unsafe fn deserialize<M: Model>(
    inst: &mut Instance<M>,
    func: &str,
    buf: *const u8,
    size: usize,
    state: *mut *mut c_void,
) -> Status {
    let (Some(bytes), false) = (slice(buf, size), state.is_null()) else {
        return null_arg(inst, func);
    };
    match inst.deserialize(bytes) {
        Ok(st) => {
            if let Some(b) = StateBox::from_ptr(*state) {
                b.st = st;
            } else {
                *state = StateBox::new_ptr(st);
            }
            Status::Ok
        }
        Err(e) => inst.fail(func, e),
    }
}

/// Reads `n` category names for `fmi*SetDebugLogging`.
///
/// # Safety
/// A non-NULL `cats` must hold `n` pointers, each NULL or NUL-terminated.
pub(crate) unsafe fn categories(cats: *const *const c_char, n: usize) -> Option<Vec<String>> {
    slice(cats, n)?.iter().map(|&p| text(p)).collect()
}

/// Parses an FMI 2 `file:` URI (or a plain path) into a folder path.
pub(crate) fn uri_to_path(uri: &str) -> std::path::PathBuf {
    let rest = uri
        .strip_prefix("file://localhost")
        .or_else(|| uri.strip_prefix("file://"))
        .or_else(|| uri.strip_prefix("file:"))
        .unwrap_or(uri);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    std::path::PathBuf::from(String::from_utf8_lossy(&out).into_owned())
}
