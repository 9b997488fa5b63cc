//! Tests through the exported C functions.

use std::ffi::{c_int, c_void, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;
const ERROR: c_int = 3;
const GRAVITY: f64 = 9.81;
const RESTITUTION: f64 = 0.7;
/// sqrt(2 h0 / |g|) for h0 = 1 m, g = -9.81 m/s².
const FIRST_BOUNCE: f64 = 0.4515236409857309;

fn token() -> CString {
    let table = Table::new(BouncingBall::NAME, BouncingBall.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

/// (h, v) at `t` after the first and before the second bounce.
fn after_first_bounce(t: f64) -> (f64, f64) {
    let v0 = RESTITUTION * GRAVITY * FIRST_BOUNCE;
    let s = t - FIRST_BOUNCE;
    (v0 * s - GRAVITY * s * s / 2.0, v0 - GRAVITY * s)
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
    let c = fmi2Instantiate(c"ball".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

unsafe fn fmi3_ready(event_mode: bool) -> *mut c_void {
    let tok = token();
    let c = fmi3InstantiateCoSimulation(
        c"ball3".as_ptr(),
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
        update_discrete_states(c);
        assert_eq!(fmi3EnterStepMode(c), OK);
    }
    c
}

/// `fmi3UpdateDiscreteStates`; returns valuesOfContinuousStatesChanged.
unsafe fn update_discrete_states(c: *mut c_void) -> bool {
    let (mut a, mut b, mut d, mut e, mut f, mut nt) = (true, true, true, false, true, 0.0);
    assert_eq!(
        fmi3UpdateDiscreteStates(c, &mut a, &mut b, &mut d, &mut e, &mut f, &mut nt),
        OK
    );
    assert!(
        !a && !b && !f,
        "no further iteration, no termination, no time event"
    );
    e
}

/// One FMI 3 step: (status, eventHandlingNeeded, earlyReturn, lastSuccessfulTime).
unsafe fn step3(c: *mut c_void, t: f64, h: f64) -> (c_int, bool, bool, f64) {
    let (mut ehn, mut term, mut early, mut lst) = (false, false, false, f64::NAN);
    let s = fmi3DoStep(c, t, h, true, &mut ehn, &mut term, &mut early, &mut lst);
    assert!(!term);
    (s, ehn, early, lst)
}

unsafe fn hv3(c: *mut c_void) -> [f64; 2] {
    let mut hv = [0.0; 2];
    assert_eq!(
        fmi3GetFloat64(c, [H, V].as_ptr(), 2, hv.as_mut_ptr(), 2),
        OK
    );
    hv
}

#[test]
fn fmi3_event_mode_returns_at_the_first_bounce() {
    unsafe {
        let c = fmi3_ready(true);
        let h = 0.01;
        let mut t = 0.0;
        let bounce = loop {
            let (s, ehn, early, lst) = step3(c, t, h);
            assert_eq!(s, OK);
            if ehn {
                assert!(early && lst < t + h, "early return inside the step");
                break lst;
            }
            assert!(!early && lst == t + h);
            t = lst;
            assert!(t < 1.0, "no bounce found");
        };
        assert!(
            (bounce - FIRST_BOUNCE).abs() < 1e-9,
            "first bounce at {bounce}, want {FIRST_BOUNCE}"
        );
        // Before the event action the ball is at the ground, falling.
        let [h0, v0] = hv3(c);
        assert!(h0.abs() < 1e-9 && (v0 + GRAVITY * FIRST_BOUNCE).abs() < 1e-9);
        assert_eq!(fmi3EnterEventMode(c), OK);
        assert!(update_discrete_states(c), "the velocity was reinitialised");
        assert_eq!(fmi3EnterStepMode(c), OK);
        let [h1, v1] = hv3(c);
        assert_eq!(h1, 0.0);
        assert!(
            (v1 - RESTITUTION * GRAVITY * FIRST_BOUNCE).abs() < 1e-9,
            "{v1}"
        );
        // Continue to the next grid point.
        let next = t + h;
        let (s, ehn, early, lst) = step3(c, bounce, next - bounce);
        assert!(s == OK && !ehn && !early && lst == next);
        let (hw, vw) = after_first_bounce(next);
        let [h2, v2] = hv3(c);
        assert!((h2 - hw).abs() < 1e-9 && (v2 - vw).abs() < 1e-9);
        fmi3FreeInstance(c);
    }
}

#[test]
fn bounces_are_handled_inside_the_step_without_event_mode() {
    unsafe {
        let c2 = fmi2_ready();
        let c3 = fmi3_ready(false);
        let h = 0.01;
        for k in 0..60 {
            let t = k as f64 * h;
            assert_eq!(fmi2DoStep(c2, t, h, 1), OK);
            let (s, ehn, early, lst) = step3(c3, t, h);
            assert!(s == OK && !ehn && !early && lst == t + h);
        }
        let t = 60.0 * h;
        let (hw, vw) = after_first_bounce(t);
        let mut hv2 = [0.0; 2];
        assert_eq!(fmi2GetReal(c2, [H, V].as_ptr(), 2, hv2.as_mut_ptr()), OK);
        for hv in [hv2, hv3(c3)] {
            assert!(
                (hv[0] - hw).abs() < 1e-9 && (hv[1] - vw).abs() < 1e-9,
                "{hv:?} vs ({hw}, {vw})"
            );
            // v(t) = e g tb - g (t - tb) gives the bounce time tb.
            let tb = (hv[1] + GRAVITY * t) / (GRAVITY * (1.0 + RESTITUTION));
            assert!((tb - FIRST_BOUNCE).abs() < 1e-9, "bounce time {tb}");
        }
        fmi2FreeInstance(c2);
        fmi3FreeInstance(c3);
    }
}

#[test]
fn the_ball_comes_to_rest_before_the_stop_time() {
    unsafe {
        let c = fmi2_ready();
        let h = 0.01;
        let mut lowest: f64 = 0.0;
        for k in 0..300 {
            assert_eq!(fmi2DoStep(c, k as f64 * h, h, 1), OK);
            let mut hv = [0.0; 2];
            assert_eq!(fmi2GetReal(c, [H, V].as_ptr(), 2, hv.as_mut_ptr()), OK);
            lowest = lowest.min(hv[0]);
        }
        let mut hv = [0.0; 2];
        assert_eq!(fmi2GetReal(c, [H, V].as_ptr(), 2, hv.as_mut_ptr()), OK);
        assert_eq!(hv, [0.0, 0.0], "at rest at t = 3 s");
        assert!(lowest > -1e-9, "the ball went below the ground: {lowest}");
        fmi2FreeInstance(c);
    }
}

#[test]
fn restitution_is_tunable_and_v_min_constant() {
    unsafe {
        let c = fmi2_ready();
        assert_eq!(fmi2SetReal(c, [E].as_ptr(), 1, [0.5].as_ptr()), OK);
        assert_eq!(fmi2SetReal(c, [E].as_ptr(), 1, [1.5].as_ptr()), ERROR);
        assert_eq!(fmi2SetReal(c, [V_MIN].as_ptr(), 1, [0.2].as_ptr()), ERROR);
        assert_eq!(fmi2SetReal(c, [G].as_ptr(), 1, [-1.0].as_ptr()), ERROR);
        for k in 0..50 {
            assert_eq!(fmi2DoStep(c, k as f64 * 0.01, 0.01, 1), OK);
        }
        let mut v = [0.0];
        assert_eq!(fmi2GetReal(c, [V].as_ptr(), 1, v.as_mut_ptr()), OK);
        let v0 = 0.5 * GRAVITY * FIRST_BOUNCE;
        assert!((v[0] - (v0 - GRAVITY * (0.5 - FIRST_BOUNCE))).abs() < 1e-9);
        fmi2FreeInstance(c);
    }
}

#[test]
fn model_descriptions_declare_reinit() {
    let x2 = unsafe { std::ffi::CStr::from_ptr(fmu_kit_model_description(2)) }.to_string_lossy();
    let x3 = unsafe { std::ffi::CStr::from_ptr(fmu_kit_model_description(3)) }.to_string_lossy();
    assert!(x2.contains("reinit=\"true\"") && x3.contains("reinit=\"true\""));
    assert!(x3.contains("hasEventMode=\"true\""));
}
