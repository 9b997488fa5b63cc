//! The per-instance environment the FMU's callbacks receive: log capture (forwarded to the
//! `log` crate and kept in a ring buffer for error messages), FMI call tracing, and the FMI 3
//! intermediate-update state.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::{CallSink, FmuLogMessage, LogSink, Polynomial};
use crate::error::FmiStatus;
use crate::fmu::description::FmiVersion;
use crate::fmu::ffi::fmi2::{self, Fmi2LogSink};
use crate::fmu::ffi::fmi3;

/// How many of the FMU's log messages an instance keeps for its error messages.
pub(crate) const LOG_RING_SIZE: usize = 20;

/// Map a raw FMI status integer to [`FmiStatus`] (5 is `fmi2Pending` in FMI 2 only).
pub(crate) fn status_from_raw(raw: c_int, version: FmiVersion) -> FmiStatus {
    match (raw, version) {
        (0, _) => FmiStatus::Ok,
        (1, _) => FmiStatus::Warning,
        (2, _) => FmiStatus::Discard,
        (3, _) => FmiStatus::Error,
        (4, _) => FmiStatus::Fatal,
        (5, FmiVersion::Fmi2) => FmiStatus::Pending,
        (other, _) => FmiStatus::Unknown(other),
    }
}

/// Copy a C string from the FMU; NULL becomes "" and invalid UTF-8 is replaced, never fatal.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string.
pub(crate) unsafe fn c_str_lossy(ptr: *const c_char) -> String {
    if ptr.is_null() {
        String::new()
    } else {
        // SAFETY: non-null and NUL-terminated by the caller's guarantee.
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    }
}

/// Lock a mutex, recovering from poisoning (a panic elsewhere must not silence the FMU's log).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The FMI 3 intermediate-update state: the polynomial inputs the callback sets.
pub(crate) struct Intermediate {
    /// True only during `fmi3DoStep`.
    pub active: bool,
    /// The instance handle (set right after instantiation).
    pub instance: fmi3::fmi3Instance,
    /// `fmi3SetFloat64` of the instance's library.
    pub set_float64: Option<fmi3::fmi3SetFloat64TYPE>,
    /// Start of the step the polynomial applies to.
    pub t0: f64,
    /// The polynomial inputs.
    pub polynomial: Polynomial,
}

/// What the FMU's callbacks see through `componentEnvironment` / `instanceEnvironment`.
///
/// Heap-allocated by the instance and freed only after `fmi*FreeInstance`, so the pointer the
/// FMU keeps stays valid for the FMU's whole life.
#[repr(C)]
pub(crate) struct Environment {
    /// MUST stay the first field: the C shim of the FMI 2 logger reads it.
    fmi2_sink: Fmi2LogSink,
    pub name: String,
    version: FmiVersion,
    log_sink: Option<LogSink>,
    ring: Mutex<VecDeque<(u64, String)>>,
    seq: AtomicU64,
    /// Whether FMI calls are traced.
    pub trace: bool,
    call_sink: Option<CallSink>,
    /// FMI calls made by callbacks (counted into `call_count`).
    pub callback_calls: AtomicU64,
    /// The raw status of a call made by a callback that returned `Error`, `Fatal` or a status
    /// outside the standard's range (0: none since [`Environment::take_callback_failure`]);
    /// once set, callbacks make no further call.
    callback_failure: AtomicI32,
    /// FMI 3 intermediate update.
    pub intermediate: Mutex<Intermediate>,
    /// FMI 3 Scheduled Execution: how often the FMU called `clockUpdate` (the scheduler reads
    /// the clocks again when it grew).
    pub clock_updates: AtomicU64,
}

impl Environment {
    pub(crate) fn new(
        name: &str,
        version: FmiVersion,
        log_sink: Option<LogSink>,
        trace: bool,
        call_sink: Option<CallSink>,
    ) -> Environment {
        Environment {
            fmi2_sink: fmi2_log_sink,
            name: name.to_string(),
            version,
            log_sink,
            // Grows with the first messages: most FMUs log nothing (and 1000 empty rings
            // would cost 0.6 MiB).
            ring: Mutex::new(VecDeque::new()),
            seq: AtomicU64::new(0),
            trace,
            call_sink,
            callback_calls: AtomicU64::new(0),
            callback_failure: AtomicI32::new(0),
            clock_updates: AtomicU64::new(0),
            intermediate: Mutex::new(Intermediate {
                active: false,
                instance: std::ptr::null_mut(),
                set_float64: None,
                t0: 0.0,
                polynomial: Polynomial::default(),
            }),
        }
    }

    /// Record one log message of the FMU.
    pub(crate) fn log(&self, status: FmiStatus, category: &str, message: &str) {
        log_fmu_message(&self.name, status, category, message);
        if let Some(sink) = &self.log_sink {
            sink(&FmuLogMessage {
                instance: self.name.clone(),
                status,
                category: category.to_string(),
                message: message.to_string(),
            });
        }
        let mut ring = lock(&self.ring);
        let seq = self.seq.fetch_add(1, Ordering::AcqRel) + 1;
        if ring.len() == LOG_RING_SIZE {
            ring.pop_front();
        }
        ring.push_back((seq, format!("[{status}] {category}: {message}")));
    }

    /// Sequence number of the newest log message (0: none yet).
    pub(crate) fn log_seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// The kept messages newer than `after` (all kept ones when none are).
    pub(crate) fn messages_since(&self, after: u64) -> Vec<String> {
        let ring = lock(&self.ring);
        let recent: Vec<String> = ring
            .iter()
            .filter(|(seq, _)| *seq > after)
            .map(|(_, m)| m.clone())
            .collect();
        if recent.is_empty() {
            ring.iter().map(|(_, m)| m.clone()).collect()
        } else {
            recent
        }
    }

    /// The kept messages, oldest first.
    pub(crate) fn messages(&self) -> Vec<String> {
        lock(&self.ring).iter().map(|(_, m)| m.clone()).collect()
    }

    /// The failure a callback's call returned since the last time this was asked, if any.
    pub(crate) fn take_callback_failure(&self) -> Option<FmiStatus> {
        match self.callback_failure.swap(0, Ordering::AcqRel) {
            0 => None,
            raw => Some(status_from_raw(raw, self.version)),
        }
    }

    /// Emit one traced FMI call.
    pub(crate) fn emit_call(&self, line: &str) {
        match &self.call_sink {
            Some(sink) => sink(&self.name, line),
            None => log::info!(target: "fmi_calls", "{}: {line}", self.name),
        }
    }
}

/// Called by the C shim with the formatted FMI 2 message.
unsafe extern "C" fn fmi2_log_sink(
    env: *mut c_void,
    instance_name: *const c_char,
    status: c_int,
    category: *const c_char,
    message: *const c_char,
) {
    // Unwinding into the FMU would abort; swallow panics of log backends instead.
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the FMU passes NUL-terminated strings or NULL.
        let (category, message) = unsafe { (c_str_lossy(category), c_str_lossy(message)) };
        let status = status_from_raw(status, FmiVersion::Fmi2);
        if env.is_null() {
            // SAFETY: as above.
            let name = unsafe { c_str_lossy(instance_name) };
            log::warn!(target: "fmu", "{name}: [{status}] {category}: {message} (the FMU passed no component environment)");
        } else {
            // SAFETY: a non-null environment is the one we passed at instantiation, alive until
            // after fmi2FreeInstance.
            let env = unsafe { &*(env as *const Environment) };
            env.log(status, &category, &message);
        }
    });
}

/// Register the fallback for FMUs that pass a NULL component environment (once per process).
pub(crate) fn install_fmi2_fallback_sink() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: stores a function pointer in the shim; called once, before any instantiation.
    ONCE.call_once(|| unsafe { fmi2::cosimo_fmi2_set_fallback_sink(Some(fmi2_log_sink)) });
}

/// FMI 3 `logMessage` callback.
pub(crate) unsafe extern "C" fn fmi3_log_message(
    env: fmi3::fmi3InstanceEnvironment,
    status: fmi3::fmi3Status,
    category: fmi3::fmi3String,
    message: fmi3::fmi3String,
) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the FMU passes NUL-terminated strings or NULL.
        let (category, message) = unsafe { (c_str_lossy(category), c_str_lossy(message)) };
        let status = status_from_raw(status, FmiVersion::Fmi3);
        if env.is_null() {
            log::warn!(target: "fmu", "[{status}] {category}: {message} (the FMU passed no instance environment)");
        } else {
            // SAFETY: the environment we passed at instantiation, alive until after
            // fmi3FreeInstance.
            let env = unsafe { &*(env as *const Environment) };
            env.log(status, &category, &message);
        }
    });
}

/// FMI 3 `clockUpdate` callback (Scheduled Execution): an output clock ticked or a countdown
/// clock got a new interval. It only counts: the scheduler asks the FMU which, once the
/// activation returned (no FMI call from inside the FMU's own call).
pub(crate) unsafe extern "C" fn fmi3_clock_update(env: fmi3::fmi3InstanceEnvironment) {
    if env.is_null() {
        return;
    }
    // SAFETY: the environment we passed at instantiation, alive until after fmi3FreeInstance.
    let env = unsafe { &*(env as *const Environment) };
    env.clock_updates.fetch_add(1, Ordering::AcqRel);
}

thread_local! {
    /// `lockPreemption` calls not yet matched by `unlockPreemption` on this thread (the
    /// callbacks carry no environment; cosimo activates partitions one at a time on the
    /// instance's own thread, so nothing can preempt them, and the count only checks balance).
    static PREEMPTION_LOCKS: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// FMI 3 `lockPreemption` callback.
pub(crate) unsafe extern "C" fn fmi3_lock_preemption() {
    PREEMPTION_LOCKS.with(|n| n.set(n.get() + 1));
}

/// FMI 3 `unlockPreemption` callback.
pub(crate) unsafe extern "C" fn fmi3_unlock_preemption() {
    PREEMPTION_LOCKS.with(|n| n.set(n.get() - 1));
}

/// `lockPreemption` minus `unlockPreemption` calls on this thread since the last call (0 when
/// an activation locked and unlocked in pairs); resets the count.
pub(crate) fn take_preemption_balance() -> i64 {
    PREEMPTION_LOCKS.with(|n| n.replace(0))
}

/// FMI 3 `intermediateUpdate` callback: sets the polynomial inputs at the FMU's intermediate
/// time when it asks for them.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn fmi3_intermediate_update(
    env: fmi3::fmi3InstanceEnvironment,
    intermediate_update_time: fmi3::fmi3Float64,
    intermediate_variable_set_requested: fmi3::fmi3Boolean,
    _intermediate_variable_get_allowed: fmi3::fmi3Boolean,
    _intermediate_step_finished: fmi3::fmi3Boolean,
    _can_return_early: fmi3::fmi3Boolean,
    early_return_requested: *mut fmi3::fmi3Boolean,
    _early_return_time: *mut fmi3::fmi3Float64,
) {
    if !early_return_requested.is_null() {
        // SAFETY: the FMU passes a valid pointer or NULL.
        unsafe { *early_return_requested = false };
    }
    if env.is_null() || !intermediate_variable_set_requested {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the environment we passed at instantiation, alive until after
        // fmi3FreeInstance.
        let env = unsafe { &*(env as *const Environment) };
        // try_lock: never block (or deadlock) inside the FMU; skip when busy.
        let Ok(mut guard) = env.intermediate.try_lock() else {
            return;
        };
        let state = &mut *guard;
        let Some(set_float64) = state.set_float64 else {
            return;
        };
        if !state.active || state.polynomial.is_empty() || state.instance.is_null() {
            return;
        }
        // After an Error or Fatal of an earlier call, no further call (see `instance`).
        if env.callback_failure.load(Ordering::Acquire) != 0 {
            return;
        }
        let (vrs, values) = state
            .polynomial
            .evaluate(intermediate_update_time - state.t0);
        // SAFETY: the instance is alive (we are inside its fmi3DoStep), the slices are valid.
        let raw = unsafe {
            set_float64(
                state.instance,
                vrs.as_ptr(),
                vrs.len(),
                values.as_ptr(),
                values.len(),
            )
        };
        env.callback_calls.fetch_add(1, Ordering::Relaxed);
        let status = status_from_raw(raw, FmiVersion::Fmi3);
        if env.trace {
            env.emit_call(&format!(
                "fmi3SetFloat64(vr={vrs:?}, value={values:?}) -> {status} [intermediate update at t = {intermediate_update_time}]"
            ));
        }
        if matches!(
            status,
            FmiStatus::Error | FmiStatus::Fatal | FmiStatus::Unknown(_)
        ) {
            env.callback_failure.store(raw, Ordering::Release);
        }
        if !matches!(status, FmiStatus::Ok | FmiStatus::Warning) {
            env.log(
                status,
                "cosimo",
                &format!(
                    "fmi3SetFloat64 in the intermediate update at t = {intermediate_update_time} returned {status}"
                ),
            );
        }
    });
}

/// Pass one log message of an FMU to the `log` crate (target "fmu").
pub(crate) fn log_fmu_message(instance: &str, status: FmiStatus, category: &str, message: &str) {
    let level = match status {
        FmiStatus::Ok | FmiStatus::Pending => log::Level::Info,
        FmiStatus::Warning | FmiStatus::Discard => log::Level::Warn,
        // Error and Fatal messages travel inside the `Err` the failing call returns (see
        // `recent_log`), so printing them here too would show every failure twice.
        FmiStatus::Error | FmiStatus::Fatal | FmiStatus::Unknown(_) => log::Level::Debug,
    };
    log::log!(target: "fmu", level, "{instance}: [{status}] {category}: {message}");
}
