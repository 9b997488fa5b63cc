//! Messages to the importer: the logger callback of each instance, and a `log` crate logger
//! that hands cosimo's own messages and the inner FMUs' (target "fmu", already prefixed with
//! the component) to the instance whose call is running on this thread.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::sync::{Arc, Mutex, Once, Weak};

use cosimo::fmu::ffi::fmi2::{fmi2CallbackLogger, fmi2ComponentEnvironment};
use cosimo::fmu::ffi::fmi3::{fmi3InstanceEnvironment, fmi3LogMessageCallback};

/// FMI status values, the same numbers in both versions.
pub const OK: c_int = 0;
pub const WARNING: c_int = 1;
pub const DISCARD: c_int = 2;
pub const ERROR: c_int = 3;

/// The importer's logger callback.
pub enum Callback {
    Fmi2(fmi2CallbackLogger, fmi2ComponentEnvironment),
    Fmi3(fmi3LogMessageCallback, fmi3InstanceEnvironment),
    None,
}

/// Where one instance's messages go.
pub struct Logger {
    callback: Callback,
    instance: CString,
}

// SAFETY: FMI lets an FMU call its importer's logger from the threads it calls the FMU on; the
// environment pointer is only passed back to that callback.
unsafe impl Send for Logger {}
unsafe impl Sync for Logger {}

fn c_text(text: &str) -> CString {
    CString::new(text.replace('\0', " ")).unwrap_or_default()
}

impl Logger {
    pub fn new(callback: Callback, instance: &str) -> Arc<Logger> {
        Arc::new(Logger {
            callback,
            instance: c_text(instance),
        })
    }

    /// One message with its status and category.
    pub fn log(&self, status: c_int, category: &str, message: &str) {
        let category = c_text(category);
        let message = c_text(message);
        match self.callback {
            // SAFETY: the importer's callback with pointers valid for the call; the message
            // goes through "%s" so that a '%' in it is never read as a format.
            Callback::Fmi2(callback, environment) => unsafe {
                callback(
                    environment,
                    self.instance.as_ptr(),
                    status,
                    category.as_ptr(),
                    c"%s".as_ptr() as *const c_char,
                    message.as_ptr(),
                )
            },
            Callback::Fmi3(callback, environment) => unsafe {
                callback(environment, status, category.as_ptr(), message.as_ptr())
            },
            Callback::None => {}
        }
    }

    pub fn error(&self, message: &str) {
        self.log(ERROR, "logStatusError", message);
    }
}

thread_local! {
    /// The logger of the instance whose call runs on this thread.
    static CURRENT: RefCell<Option<Arc<Logger>>> = const { RefCell::new(None) };
}

/// The logger of the instance made last: messages from other threads (parallel stepping) go
/// there.
static LAST: Mutex<Option<Weak<Logger>>> = Mutex::new(None);

/// Makes `logger` the current one on this thread while it lives.
pub struct Current(Option<Arc<Logger>>);

impl Current {
    pub fn set(logger: &Arc<Logger>) -> Current {
        install();
        if let Ok(mut last) = LAST.lock() {
            *last = Some(Arc::downgrade(logger));
        }
        Current(CURRENT.with(|c| c.replace(Some(logger.clone()))))
    }
}

impl Drop for Current {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

struct Forward;

impl log::Log for Forward {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        match metadata.target() {
            "fmu" | "fmi_calls" => metadata.level() <= log::Level::Info,
            _ => metadata.level() <= log::Level::Warn,
        }
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let logger = CURRENT.with(|c| c.borrow().clone()).or_else(|| {
            LAST.lock()
                .ok()
                .and_then(|l| l.as_ref().and_then(Weak::upgrade))
        });
        let Some(logger) = logger else {
            return;
        };
        let status = match record.level() {
            log::Level::Error => ERROR,
            log::Level::Warn => WARNING,
            _ => OK,
        };
        let category = match record.target() {
            "fmu" => "fmu",
            "fmi_calls" => "logFmiCalls",
            _ => "cosimo",
        };
        logger.log(status, category, &record.args().to_string());
    }

    fn flush(&self) {}
}

static FORWARD: Forward = Forward;

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if log::set_logger(&FORWARD).is_ok() {
            log::set_max_level(log::LevelFilter::Info);
        }
    });
}

/// A C string argument as text (`None` for a null pointer).
///
/// # Safety
/// `text` is null or a NUL-terminated string valid for the call.
pub unsafe fn text<'a>(text: *const c_char) -> Option<std::borrow::Cow<'a, str>> {
    if text.is_null() {
        None
    } else {
        Some(unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy())
    }
}
