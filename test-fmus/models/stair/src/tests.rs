//! Tests through the exported C functions.

use std::ffi::{c_int, c_void, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;

fn token() -> CString {
    let table = Table::new(Stair::NAME, Stair.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

unsafe fn fmi2_ready() -> *mut c_void {
    let tok = token();
    let cb = CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let c = fmi2Instantiate(c"stair".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

unsafe fn fmi3_ready(event_mode: bool) -> *mut c_void {
    let tok = token();
    let c = fmi3InstantiateCoSimulation(
        c"stair3".as_ptr(),
        tok.as_ptr(),
        null(),
        false,
        false,
        event_mode,
        event_mode,
        null(),
        0,
        null_mut(),
        None,
        None,
    );
    assert!(!c.is_null());
    assert_eq!(
        fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
        OK
    );
    assert_eq!(fmi3ExitInitializationMode(c), OK);
    if event_mode {
        assert_eq!(update_discrete_states(c), Some(1.0));
        assert_eq!(fmi3EnterStepMode(c), OK);
    }
    c
}

/// `fmi3UpdateDiscreteStates`; returns the next event time.
unsafe fn update_discrete_states(c: *mut c_void) -> Option<f64> {
    let (mut a, mut b, mut d, mut e, mut f, mut nt) = (true, true, true, true, false, 0.0);
    assert_eq!(
        fmi3UpdateDiscreteStates(c, &mut a, &mut b, &mut d, &mut e, &mut f, &mut nt),
        OK
    );
    assert!(!a && !b && !e);
    f.then_some(nt)
}

fn expected(t: f64) -> i32 {
    t.floor() as i32 + 1
}

#[test]
fn fmi2_counter_is_floor_t_plus_one_on_the_output_grid() {
    unsafe {
        let c = fmi2_ready();
        let h = 0.2;
        let mut n = [0];
        assert_eq!(fmi2GetInteger(c, [COUNTER].as_ptr(), 1, n.as_mut_ptr()), OK);
        assert_eq!(n[0], 1);
        for k in 0..50 {
            assert_eq!(fmi2DoStep(c, k as f64 * h, h, 1), OK);
            let t = (k + 1) as f64 * h;
            assert_eq!(fmi2GetInteger(c, [COUNTER].as_ptr(), 1, n.as_mut_ptr()), OK);
            // The grid points 5 k * 0.2 are the integers (up to rounding of k * 0.2).
            assert_eq!(n[0], expected(t + 1e-9), "counter at t = {t}");
        }
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi3_counter_changes_exactly_at_integer_times() {
    unsafe {
        // Without event mode, with steps that straddle the event times: the counter before
        // and after each integer time.
        let c = fmi3_ready(false);
        let eps = 1e-9;
        let mut t = 0.0;
        for k in 1..=9 {
            let tk = f64::from(k);
            for (end, want) in [(tk - eps, k), (tk + eps, k + 1)] {
                let (mut ehn, mut term, mut early, mut lst) = (false, false, false, 0.0);
                let s = fmi3DoStep(
                    c,
                    t,
                    end - t,
                    true,
                    &mut ehn,
                    &mut term,
                    &mut early,
                    &mut lst,
                );
                assert!(s == OK && !ehn && !early && lst == end);
                let mut n = [0];
                assert_eq!(
                    fmi3GetInt32(c, [COUNTER].as_ptr(), 1, n.as_mut_ptr(), 1),
                    OK
                );
                assert_eq!(n[0], want, "counter at t = {end}");
                t = end;
            }
        }
        fmi3FreeInstance(c);

        // With event mode: each step ending on or after an integer time stops there exactly.
        let c = fmi3_ready(true);
        let (mut t, h) = (0.0, 0.3_f64);
        let mut events = Vec::new();
        while t < 10.0 - 1e-12 {
            let (mut ehn, mut term, mut early, mut lst) = (false, false, false, 0.0);
            let step = h.min(10.0 - t);
            let s = fmi3DoStep(c, t, step, true, &mut ehn, &mut term, &mut early, &mut lst);
            assert_eq!(s, OK);
            if ehn {
                events.push(lst);
                assert_eq!(fmi3EnterEventMode(c), OK);
                let next = update_discrete_states(c);
                assert_eq!(fmi3EnterStepMode(c), OK);
                let mut n = [0];
                assert_eq!(
                    fmi3GetInt32(c, [COUNTER].as_ptr(), 1, n.as_mut_ptr(), 1),
                    OK
                );
                assert_eq!(f64::from(n[0] - 1), lst, "counter after the event");
                assert_eq!(next, Some(f64::from(n[0])));
            } else {
                assert!(!early && lst == t + step);
            }
            t = lst;
        }
        let want: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(events, want, "time events exactly at the integers");
        fmi3FreeInstance(c);
    }
}
