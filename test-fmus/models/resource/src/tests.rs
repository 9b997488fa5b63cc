//! Tests through the exported C functions, reading this crate's `resources/` folder.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::Mutex;

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;
const ERROR: c_int = 3;

fn token() -> CString {
    let table = Table::new(Resource::NAME, Resource.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

fn resources() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("resources")
}

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn log3(
    _env: *mut c_void,
    status: c_int,
    _cat: *const c_char,
    msg: *const c_char,
) {
    let text = format!("[{status}] {}", CStr::from_ptr(msg).to_string_lossy());
    LOG.lock().map(|mut l| l.push(text)).ok();
}

unsafe fn fmi2_with(location: &str) -> (*mut c_void, c_int) {
    let tok = token();
    let cb = CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let loc = CString::new(location).expect("location");
    let c = fmi2Instantiate(c"res".as_ptr(), 1, tok.as_ptr(), loc.as_ptr(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    (c, fmi2EnterInitializationMode(c))
}

unsafe fn fmi3_with(path: &str) -> (*mut c_void, c_int) {
    let tok = token();
    let p = CString::new(path).expect("path");
    let c = fmi3InstantiateCoSimulation(
        c"res3".as_ptr(),
        tok.as_ptr(),
        p.as_ptr(),
        false,
        false,
        false,
        false,
        null(),
        0,
        null_mut(),
        Some(log3),
        None,
    );
    assert!(!c.is_null());
    (
        c,
        fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
    )
}

#[test]
fn fmi2_reads_y_through_the_resource_uri() {
    unsafe {
        let uri = format!("file://{}/", resources().display());
        let (c, s) = fmi2_with(&uri);
        assert_eq!(s, OK);
        assert_eq!(fmi2ExitInitializationMode(c), OK);
        assert_eq!(fmi2DoStep(c, 0.0, 0.1, 1), OK);
        let mut y = [0];
        assert_eq!(fmi2GetInteger(c, [Y].as_ptr(), 1, y.as_mut_ptr()), OK);
        assert_eq!(y[0], 97);
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi3_reads_y_through_the_resource_path() {
    unsafe {
        let path = format!("{}/", resources().display());
        let (c, s) = fmi3_with(&path);
        assert_eq!(s, OK);
        let mut y = [0];
        assert_eq!(fmi3GetInt32(c, [Y].as_ptr(), 1, y.as_mut_ptr(), 1), OK);
        assert_eq!(y[0], 97);
        assert_eq!(fmi3ExitInitializationMode(c), OK);
        assert_eq!(fmi3GetInt32(c, [Y].as_ptr(), 1, y.as_mut_ptr(), 1), OK);
        assert_eq!(y[0], 97);
        fmi3FreeInstance(c);
    }
}

#[test]
fn a_missing_file_is_an_error_naming_the_path() {
    unsafe {
        let (c, s) = fmi2_with("file:///nonexistent/folder/");
        assert_eq!(s, ERROR);
        fmi2FreeInstance(c);
        let (c, s) = fmi3_with("/nonexistent/other/");
        assert_eq!(s, ERROR);
        fmi3FreeInstance(c);
        let log = LOG.lock().map(|l| l.join("\n")).unwrap_or_default();
        assert!(log.contains("/nonexistent/other/y.txt"), "{log}");
    }
}
