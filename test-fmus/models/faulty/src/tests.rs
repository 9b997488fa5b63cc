//! Tests through the exported C functions: each failure status, in both versions.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::Mutex;

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;
const DISCARD: c_int = 2;
const ERROR: c_int = 3;
const FATAL: c_int = 4;
const LAST_SUCCESSFUL_TIME: c_int = 2;

fn token() -> CString {
    let table = Table::new(Faulty::NAME, Faulty.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn logged() -> String {
    LOG.lock().map(|l| l.join("\n")).unwrap_or_default()
}

unsafe extern "C" fn log3(env: *mut c_void, status: c_int, _c: *const c_char, msg: *const c_char) {
    let tag = CStr::from_ptr(env as *const c_char).to_string_lossy();
    let text = format!("{tag} [{status}] {}", CStr::from_ptr(msg).to_string_lossy());
    LOG.lock().map(|mut l| l.push(text)).ok();
}

unsafe fn fmi2_ready(failure: i32) -> *mut c_void {
    let tok = token();
    let cb = CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let c = fmi2Instantiate(c"faulty".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(
        fmi2SetInteger(c, [FAILURE].as_ptr(), 1, [failure].as_ptr()),
        OK
    );
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

unsafe fn fmi3_ready(failure: i32, tag: &'static CStr) -> *mut c_void {
    let tok = token();
    let c = fmi3InstantiateCoSimulation(
        tag.as_ptr(),
        tok.as_ptr(),
        null(),
        false,
        false,
        false,
        false,
        null(),
        0,
        tag.as_ptr() as *mut c_void,
        Some(log3),
        None,
    );
    assert!(!c.is_null());
    assert_eq!(
        fmi3SetInt32(c, [FAILURE].as_ptr(), 1, [failure].as_ptr(), 1),
        OK
    );
    assert_eq!(
        fmi3SetFloat64(c, [FAIL_AT].as_ptr(), 1, [0.35].as_ptr(), 1),
        OK
    );
    assert_eq!(
        fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
        OK
    );
    assert_eq!(fmi3ExitInitializationMode(c), OK);
    c
}

/// Steps of 0.1 s from 0 until a step does not return OK: (status, its start time).
unsafe fn fmi2_run(c: *mut c_void) -> (c_int, f64) {
    for k in 0..10 {
        let t = k as f64 * 0.1;
        let s = fmi2DoStep(c, t, 0.1, 1);
        if s != OK {
            return (s, t);
        }
    }
    (OK, 1.0)
}

unsafe fn step3(c: *mut c_void, t: f64, h: f64) -> (c_int, f64) {
    let (mut ehn, mut term, mut early, mut lst) = (false, false, false, f64::NAN);
    let s = fmi3DoStep(c, t, h, true, &mut ehn, &mut term, &mut early, &mut lst);
    (s, lst)
}

#[test]
fn fmi2_without_failure_runs_through() {
    unsafe {
        let c = fmi2_ready(0);
        assert_eq!(fmi2_run(c), (OK, 1.0));
        let mut x = [0.0];
        assert_eq!(fmi2GetReal(c, [X].as_ptr(), 1, x.as_mut_ptr()), OK);
        assert!((x[0] - 1.0).abs() < 1e-12);
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi2_discard_reports_the_time_reached_and_may_continue() {
    unsafe {
        let c = fmi2_ready(1);
        let (s, t) = fmi2_run(c);
        assert_eq!(s, DISCARD);
        assert!((t - 0.4).abs() < 1e-12, "the step to 0.5 fails");
        let mut last = 0.0;
        assert_eq!(fmi2GetRealStatus(c, LAST_SUCCESSFUL_TIME, &mut last), OK);
        assert_eq!(last, 0.5);
        let mut x = [0.0];
        assert_eq!(fmi2GetReal(c, [X].as_ptr(), 1, x.as_mut_ptr()), OK);
        assert!((x[0] - 0.5).abs() < 1e-12);
        // Only the first step that reaches fail_at fails.
        assert_eq!(fmi2DoStep(c, 0.5, 0.1, 1), OK);
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi2_error_and_fatal() {
    unsafe {
        let c = fmi2_ready(2);
        assert_eq!(fmi2_run(c).0, ERROR);
        assert_eq!(fmi2DoStep(c, 0.5, 0.1, 1), ERROR, "unusable after Error");
        assert_eq!(fmi2Reset(c), OK, "but it can be reset");
        fmi2FreeInstance(c);

        let c = fmi2_ready(3);
        assert_eq!(fmi2_run(c).0, FATAL);
        let mut x = [0.0];
        assert_eq!(fmi2GetReal(c, [X].as_ptr(), 1, x.as_mut_ptr()), FATAL);
        assert_eq!(fmi2Terminate(c), FATAL);
        assert_eq!(fmi2Reset(c), FATAL);
        let mut last = 0.0;
        assert_eq!(fmi2GetRealStatus(c, LAST_SUCCESSFUL_TIME, &mut last), FATAL);
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi3_each_status_is_returned_and_logged() {
    unsafe {
        // fail_at = 0.35: the step from 0.3 to 0.4 fails.
        let c = fmi3_ready(1, c"discard");
        assert_eq!(step3(c, 0.0, 0.3), (OK, 0.3));
        let (s, lst) = step3(c, 0.3, 0.1);
        assert_eq!(s, DISCARD);
        assert!((lst - 0.35).abs() < 1e-15, "lastSuccessfulTime {lst}");
        assert_eq!(step3(c, lst, 0.05).0, OK, "continues from the time reached");
        fmi3FreeInstance(c);

        let c = fmi3_ready(2, c"error");
        assert_eq!(step3(c, 0.0, 0.5).0, ERROR);
        let mut x = [0.0];
        assert_eq!(fmi3GetFloat64(c, [X].as_ptr(), 1, x.as_mut_ptr(), 1), OK);
        assert_eq!(step3(c, 0.35, 0.1).0, ERROR);
        fmi3FreeInstance(c);

        let c = fmi3_ready(3, c"fatal");
        assert_eq!(step3(c, 0.0, 1.0).0, FATAL);
        assert_eq!(fmi3GetFloat64(c, [X].as_ptr(), 1, x.as_mut_ptr(), 1), FATAL);
        assert_eq!(fmi3Terminate(c), FATAL);
        fmi3FreeInstance(c);

        let log = logged();
        for (tag, status, name) in [
            ("discard", DISCARD, "Discard"),
            ("error", ERROR, "Error"),
            ("fatal", FATAL, "Fatal"),
        ] {
            let want = format!(
                "{tag} [{status}] fmi3DoStep: simulated failure ({name}) requested by parameter failure at t = 0.35"
            );
            assert!(log.contains(&want), "missing {want:?} in\n{log}");
        }
    }
}

#[test]
fn failure_is_range_checked() {
    unsafe {
        let tok = token();
        let cb = CallbackFunctions {
            logger: None,
            allocate_memory: None,
            free_memory: None,
            step_finished: None,
            component_environment: null_mut(),
        };
        let c = fmi2Instantiate(c"f".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
        assert_eq!(
            fmi2SetInteger(c, [FAILURE].as_ptr(), 1, [4].as_ptr()),
            ERROR
        );
        fmi2FreeInstance(c);
    }
}
