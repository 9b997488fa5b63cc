//! Tests through the exported C functions: each failure status and the termination request,
//! in both versions.

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
const TERMINATED: c_int = 3;
const REQUEST_TERMINATION: i32 = 4;

fn token() -> CString {
    let table = Table::new(Faulty::NAME, Faulty::default().variables()).expect("valid table");
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

/// Everything `fmi3DoStep` reports (the flags start true so that each must be written).
#[derive(Debug, PartialEq)]
struct Step3 {
    status: c_int,
    event_handling_needed: bool,
    terminate_simulation: bool,
    early_return: bool,
    last_successful_time: f64,
}

unsafe fn step3_all(c: *mut c_void, t: f64, h: f64) -> Step3 {
    let (mut ehn, mut term, mut early, mut lst) = (true, true, true, f64::NAN);
    let status = fmi3DoStep(c, t, h, true, &mut ehn, &mut term, &mut early, &mut lst);
    Step3 {
        status,
        event_handling_needed: ehn,
        terminate_simulation: term,
        early_return: early,
        last_successful_time: lst,
    }
}

/// A step that completed normally to `t_end`.
fn completed(t_end: f64) -> Step3 {
    Step3 {
        status: OK,
        event_handling_needed: false,
        terminate_simulation: false,
        early_return: false,
        last_successful_time: t_end,
    }
}

/// A step that ended with the termination request at `fail_at`.
fn terminated(fail_at: f64, early_return: bool) -> Step3 {
    Step3 {
        status: OK,
        event_handling_needed: false,
        terminate_simulation: true,
        early_return,
        last_successful_time: fail_at,
    }
}

unsafe fn terminated2(c: *mut c_void) -> bool {
    let mut v = -1;
    assert_eq!(fmi2GetBooleanStatus(c, TERMINATED, &mut v), OK);
    assert!(v == 0 || v == 1, "fmi2Terminated = {v}");
    v == 1
}

unsafe fn x2(c: *mut c_void) -> f64 {
    let mut x = [f64::NAN];
    assert_eq!(fmi2GetReal(c, [X].as_ptr(), 1, x.as_mut_ptr()), OK);
    x[0]
}

unsafe fn x3(c: *mut c_void) -> f64 {
    let mut x = [f64::NAN];
    assert_eq!(fmi3GetFloat64(c, [X].as_ptr(), 1, x.as_mut_ptr(), 1), OK);
    x[0]
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
        assert_eq!(
            fmi2Terminate(c),
            ERROR,
            "no fmi2Terminate in state error (FMI 2.0 §4.2.4)"
        );
        assert_eq!(fmi2Reset(c), OK, "but it can be reset");
        fmi2FreeInstance(c);

        // Every call after Fatal is refused and counted as misuse, freeing included (which
        // frees nothing: the instance is leaked, as the standard implies).
        let before = fmu_kit_calls_after_fatal();
        let c = fmi2_ready(3);
        assert_eq!(fmi2_run(c).0, FATAL);
        let mut x = [0.0];
        assert_eq!(fmi2GetReal(c, [X].as_ptr(), 1, x.as_mut_ptr()), FATAL);
        assert_eq!(fmi2Terminate(c), FATAL);
        assert_eq!(fmi2Reset(c), FATAL);
        let mut last = 0.0;
        assert_eq!(fmi2GetRealStatus(c, LAST_SUCCESSFUL_TIME, &mut last), FATAL);
        fmi2FreeInstance(c);
        // `>=`: the FMI 3 test may count its own misuse at the same time.
        assert!(fmu_kit_calls_after_fatal() - before >= 5);
        assert_eq!(
            fmi2GetReal(c, [X].as_ptr(), 1, x.as_mut_ptr()),
            FATAL,
            "still there after fmi2FreeInstance"
        );
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
        assert_eq!(fmi3Terminate(c), ERROR, "no fmi3Terminate after Error");
        fmi3FreeInstance(c);

        let before = fmu_kit_calls_after_fatal();
        let c = fmi3_ready(3, c"fatal");
        assert_eq!(step3(c, 0.0, 1.0).0, FATAL);
        assert_eq!(fmi3GetFloat64(c, [X].as_ptr(), 1, x.as_mut_ptr(), 1), FATAL);
        assert_eq!(fmi3Terminate(c), FATAL);
        fmi3FreeInstance(c);
        assert!(fmu_kit_calls_after_fatal() - before >= 3);

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
fn fmi2_termination_request_discards_with_fmi2_terminated() {
    unsafe {
        let c = fmi2_ready(REQUEST_TERMINATION);
        // The steps before fail_at = 0.5 neither fail nor ask to terminate.
        for k in 0..4 {
            assert_eq!(fmi2DoStep(c, k as f64 * 0.1, 0.1, 1), OK);
            assert!(
                !terminated2(c),
                "no request in the step ending at {}",
                (k + 1) as f64 * 0.1
            );
        }
        // The step from 0.4 reaches fail_at: Discard, the slave wants to terminate.
        assert_eq!(fmi2DoStep(c, 0.4, 0.1, 1), DISCARD);
        assert!(terminated2(c), "fmi2Terminated after the request");
        let mut last = f64::NAN;
        assert_eq!(fmi2GetRealStatus(c, LAST_SUCCESSFUL_TIME, &mut last), OK);
        assert_eq!(last, 0.5);
        // The state is at fail_at and the outputs are readable.
        assert!((x2(c) - 0.5).abs() < 1e-12);
        let mut dx = [f64::NAN];
        assert_eq!(
            fmi2GetDirectionalDerivative(
                c,
                [X].as_ptr(),
                1,
                [X].as_ptr(),
                1,
                [1.0].as_ptr(),
                dx.as_mut_ptr()
            ),
            OK
        );
        assert_eq!(dx[0], 1.0);
        // stepFailed: no further step, no set.
        assert_eq!(
            fmi2DoStep(c, 0.5, 0.1, 1),
            ERROR,
            "no step after the request"
        );
        assert_eq!(
            fmi2SetInteger(c, [FAILURE].as_ptr(), 1, [0].as_ptr()),
            ERROR
        );
        assert!(terminated2(c), "a refused step changes nothing");
        assert!((x2(c) - 0.5).abs() < 1e-12);
        assert_eq!(fmi2Terminate(c), OK);
        assert_eq!(
            fmi2DoStep(c, 0.5, 0.1, 1),
            ERROR,
            "no step after fmi2Terminate"
        );
        assert!(
            (x2(c) - 0.5).abs() < 1e-12,
            "final values readable after fmi2Terminate"
        );
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi2_termination_request_is_undone_by_a_restored_state_and_reset() {
    unsafe {
        let c = fmi2_ready(REQUEST_TERMINATION);
        for k in 0..4 {
            assert_eq!(fmi2DoStep(c, k as f64 * 0.1, 0.1, 1), OK);
        }
        let mut before = null_mut();
        assert_eq!(fmi2GetFMUstate(c, &mut before), OK);
        assert_eq!(fmi2DoStep(c, 0.4, 0.1, 1), DISCARD);
        // FMU states may be taken after the request too.
        let mut after = null_mut();
        assert_eq!(fmi2GetFMUstate(c, &mut after), OK);
        // Rolling back the step makes the slave steppable again; a shorter step does not reach
        // fail_at, the next one does and asks again.
        assert_eq!(fmi2SetFMUstate(c, before), OK);
        assert!(!terminated2(c));
        assert!((x2(c) - 0.4).abs() < 1e-12);
        assert_eq!(fmi2DoStep(c, 0.4, 0.05, 1), OK);
        assert!(!terminated2(c));
        assert_eq!(fmi2DoStep(c, 0.45, 0.05, 1), DISCARD);
        assert!(terminated2(c));
        let mut last = f64::NAN;
        assert_eq!(fmi2GetRealStatus(c, LAST_SUCCESSFUL_TIME, &mut last), OK);
        assert!((last - 0.5).abs() < 1e-12, "last successful time {last}");
        // A state taken at the request continues from fail_at without a new request.
        assert_eq!(fmi2SetFMUstate(c, after), OK);
        assert!(!terminated2(c));
        assert_eq!(fmi2DoStep(c, 0.5, 0.1, 1), OK);
        assert!((x2(c) - 0.6).abs() < 1e-12);
        assert_eq!(fmi2FreeFMUstate(c, &mut before), OK);
        assert_eq!(fmi2FreeFMUstate(c, &mut after), OK);
        fmi2FreeInstance(c);

        // Reset after a request: initialises and steps again.
        let c2 = fmi2_ready(REQUEST_TERMINATION);
        assert_eq!(fmi2_run(c2), (DISCARD, 0.4));
        assert_eq!(fmi2Reset(c2), OK);
        assert!(!terminated2(c2));
        assert_eq!(fmi2SetupExperiment(c2, 0, 0.0, 0.0, 0, 0.0), OK);
        assert_eq!(fmi2EnterInitializationMode(c2), OK);
        assert_eq!(fmi2ExitInitializationMode(c2), OK);
        assert_eq!(fmi2_run(c2), (OK, 1.0), "after reset failure is back at 0");
        fmi2FreeInstance(c2);
    }
}

#[test]
fn fmi3_termination_request_returns_ok_with_terminate_simulation() {
    unsafe {
        // fail_at = 0.35: the step from 0.3 to 0.4 stops there and asks to terminate.
        let c = fmi3_ready(REQUEST_TERMINATION, c"terminate");
        assert_eq!(
            step3_all(c, 0.0, 0.3),
            completed(0.3),
            "does not reach fail_at"
        );
        assert_eq!(step3_all(c, 0.3, 0.1), terminated(0.35, true));
        assert!((x3(c) - 0.35).abs() < 1e-15, "outputs at fail_at");
        let mut dx = [f64::NAN];
        assert_eq!(
            fmi3GetDirectionalDerivative(
                c,
                [X].as_ptr(),
                1,
                [X].as_ptr(),
                1,
                [1.0].as_ptr(),
                1,
                dx.as_mut_ptr(),
                1
            ),
            OK
        );
        assert_eq!(dx[0], 1.0);
        // No further step: Error with a message, and the instance is unchanged.
        assert_eq!(step3(c, 0.35, 0.05).0, ERROR);
        assert!((x3(c) - 0.35).abs() < 1e-15);
        assert_eq!(fmi3Terminate(c), OK);
        assert_eq!(step3(c, 0.35, 0.05).0, ERROR, "no step after fmi3Terminate");
        assert!(
            (x3(c) - 0.35).abs() < 1e-15,
            "final values after fmi3Terminate"
        );
        fmi3FreeInstance(c);

        // A step ending exactly at fail_at asks to terminate without returning early.
        let c = fmi3_ready(REQUEST_TERMINATION, c"terminate-at-end");
        assert_eq!(step3_all(c, 0.0, 0.35), terminated(0.35, false));
        assert!((x3(c) - 0.35).abs() < 1e-15);
        fmi3FreeInstance(c);

        let log = logged();
        for want in [
            "terminate [0] fmi3DoStep: termination requested by parameter failure at t = 0.35",
            "terminate-at-end [0] fmi3DoStep: termination requested by parameter failure at t = 0.35",
            "terminate [3] fmi3DoStep: the FMU asked to terminate the simulation at t = 0.35; call fmi3Terminate",
        ] {
            assert!(log.contains(want), "missing {want:?} in\n{log}");
        }
    }
}

#[test]
fn fmi3_termination_request_is_undone_by_a_restored_state_and_reset() {
    unsafe {
        let c = fmi3_ready(REQUEST_TERMINATION, c"terminate-restore");
        assert_eq!(step3_all(c, 0.0, 0.3), completed(0.3));
        let mut before = null_mut();
        assert_eq!(fmi3GetFMUState(c, &mut before), OK);
        assert_eq!(step3_all(c, 0.3, 0.1), terminated(0.35, true));
        let mut after = null_mut();
        assert_eq!(fmi3GetFMUState(c, &mut after), OK);
        let mut size = 0;
        assert_eq!(fmi3SerializedFMUStateSize(c, after, &mut size), OK);
        assert!(size > 0);
        // Roll back and redo with a step that ends before fail_at, then (rolled back again)
        // with one that ends at fail_at.
        assert_eq!(fmi3SetFMUState(c, before), OK);
        assert!((x3(c) - 0.3).abs() < 1e-15);
        assert_eq!(step3_all(c, 0.3, 0.025), completed(0.3 + 0.025));
        assert_eq!(fmi3SetFMUState(c, before), OK);
        assert_eq!(step3_all(c, 0.3, 0.05), terminated(0.35, false));
        // Restoring the state taken at the request continues past fail_at.
        assert_eq!(fmi3SetFMUState(c, after), OK);
        assert_eq!(step3_all(c, 0.35, 0.05), completed(0.35 + 0.05));
        assert_eq!(fmi3FreeFMUState(c, &mut before), OK);
        assert_eq!(fmi3FreeFMUState(c, &mut after), OK);
        fmi3FreeInstance(c);

        // Reset right after the request.
        let c = fmi3_ready(REQUEST_TERMINATION, c"terminate-reset");
        assert_eq!(step3_all(c, 0.0, 1.0), terminated(0.35, true));
        assert_eq!(fmi3Reset(c), OK);
        assert_eq!(
            fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3ExitInitializationMode(c), OK);
        assert_eq!(
            step3_all(c, 0.0, 1.0),
            completed(1.0),
            "failure is back at 0"
        );
        fmi3FreeInstance(c);
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
            fmi2SetInteger(c, [FAILURE].as_ptr(), 1, [REQUEST_TERMINATION].as_ptr()),
            OK
        );
        assert_eq!(
            fmi2SetInteger(c, [FAILURE].as_ptr(), 1, [mode::STACK_OVERFLOW].as_ptr()),
            OK
        );
        assert_eq!(
            fmi2SetInteger(
                c,
                [FAILURE].as_ptr(),
                1,
                [mode::SEGFAULT_ON_UNLOAD].as_ptr()
            ),
            OK
        );
        assert_eq!(
            fmi2SetInteger(c, [FAILURE].as_ptr(), 1, [14].as_ptr()),
            ERROR
        );
        fmi2FreeInstance(c);
    }
}
