//! What the kit's FMI 3 tests share: an instance of a model made through the C API, with a
//! logger whose messages the test can read.

#![allow(dead_code)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{null, null_mut};

use fmu_kit::{fmi3, Model, Table};

/// The instantiation token of model `M`.
pub fn token<M: Model>() -> CString {
    let table = Table::new(M::NAME, M::default().variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

thread_local! {
    static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The logger: keeps every message of this thread's instances.
pub unsafe extern "C" fn log3(
    _env: *mut c_void,
    _status: c_int,
    _category: *const c_char,
    message: *const c_char,
) {
    let text = CStr::from_ptr(message).to_string_lossy().into_owned();
    LOG.with(|l| l.borrow_mut().push(text));
}

/// The last message logged on this thread.
pub fn last_log() -> String {
    LOG.with(|l| l.borrow().last().cloned().unwrap_or_default())
}

/// A Co-Simulation instance of `M` (logging on, `event_mode` as eventModeUsed), logging to
/// [`log3`].
pub unsafe fn fmi3_instance<M: Model>(event_mode: bool) -> *mut c_void {
    let token = token::<M>();
    let c = fmi3::instantiate_co_simulation::<M>(
        c"i".as_ptr(),
        token.as_ptr(),
        null(),
        false,
        true,
        event_mode,
        false,
        null(),
        0,
        null_mut(),
        Some(log3),
        None,
    );
    assert!(!c.is_null());
    c
}
