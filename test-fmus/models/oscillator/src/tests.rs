//! Tests through the exported C functions (callable from Rust inside this crate).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::Mutex;

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;
const ERROR: c_int = 3;

const PM: f64 = 1.5;
const PC: f64 = 4.0;
const PD: f64 = 0.3;
const PX0: f64 = 0.2;
const PV0: f64 = -0.1;
/// Taylor coefficients of the input at t = 0: F, F', F'', F'''.
const FC: [f64; 4] = [1.0, -2.0, 3.0, 5.0];

fn token() -> CString {
    let table = Table::new(Oscillator::NAME, Oscillator.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

fn force(t: f64) -> f64 {
    fmu_kit::eval_taylor(&FC, t)[0]
}

/// Closed form of m x'' + d x' + c x = F(t), F cubic, underdamped: polynomial particular
/// solution plus the damped harmonic homogeneous solution. Returns (x, v, a) at `t`.
fn closed_form(t: f64) -> (f64, f64, f64) {
    let (m, c, d) = (PM, PC, PD);
    let q = [FC[0], FC[1], FC[2] / 2.0, FC[3] / 6.0];
    let p3 = q[3] / c;
    let p2 = (q[2] - 3.0 * d * p3) / c;
    let p1 = (q[1] - 2.0 * d * p2 - 6.0 * m * p3) / c;
    let p0 = (q[0] - d * p1 - 2.0 * m * p2) / c;
    let sigma = d / (2.0 * m);
    let omega = (c / m - sigma * sigma).sqrt();
    let ca = PX0 - p0;
    let cb = (PV0 - p1 + sigma * ca) / omega;
    let (s, co, e) = ((omega * t).sin(), (omega * t).cos(), (-sigma * t).exp());
    let x = p0 + p1 * t + p2 * t * t + p3 * t.powi(3) + e * (ca * co + cb * s);
    let v = p1
        + 2.0 * p2 * t
        + 3.0 * p3 * t * t
        + e * ((-sigma * ca + omega * cb) * co + (-sigma * cb - omega * ca) * s);
    let a = (force(t) - c * x - d * v) / m;
    (x, v, a)
}

fn assert_rel(got: f64, want: f64, what: &str) {
    let err = (got - want).abs() / want.abs().max(1e-300);
    assert!(
        err < 1e-12,
        "{what}: got {got}, want {want}, relative error {err:e}"
    );
}

fn callbacks() -> CallbackFunctions {
    CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    }
}

unsafe fn fmi2_ready(params: bool) -> *mut c_void {
    let tok = token();
    let cb = callbacks();
    let c = fmi2Instantiate(c"osc".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    if params {
        let vr = [M, C, D, X0, V0];
        let val = [PM, PC, PD, PX0, PV0];
        assert_eq!(fmi2SetReal(c, vr.as_ptr(), 5, val.as_ptr()), OK);
    }
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

unsafe fn get2(c: *mut c_void, vrs: &[u32]) -> Vec<f64> {
    let mut out = vec![0.0; vrs.len()];
    assert_eq!(
        fmi2GetReal(c, vrs.as_ptr(), vrs.len(), out.as_mut_ptr()),
        OK
    );
    out
}

#[test]
fn fmi2_one_step_with_cubic_input_matches_closed_form() {
    unsafe {
        let c = fmi2_ready(true);
        assert_eq!(fmi2SetReal(c, [F].as_ptr(), 1, [FC[0]].as_ptr()), OK);
        let vr = [F, F, F];
        let order = [1, 2, 3];
        assert_eq!(
            fmi2SetRealInputDerivatives(c, vr.as_ptr(), 3, order.as_ptr(), FC[1..].as_ptr()),
            OK
        );
        assert_eq!(fmi2DoStep(c, 0.0, 0.1, 1), OK);
        let got = get2(c, &[X, V, A]);
        let (x, v, a) = closed_form(0.1);
        assert_rel(got[0], x, "x");
        assert_rel(got[1], v, "v");
        assert_rel(got[2], a, "a");
        fmi2FreeInstance(c);
    }
}

struct Env {
    inst: *mut c_void,
    calls: Vec<f64>,
}

unsafe extern "C" fn intermediate(
    env: *mut c_void,
    t: f64,
    set_requested: bool,
    _get: bool,
    _finished: bool,
    _can_return: bool,
    early: *mut bool,
    _early_time: *mut f64,
) {
    let env = &mut *(env as *mut Env);
    env.calls.push(t);
    *early = false;
    if set_requested {
        let f = force(t);
        assert_eq!(
            fmi3SetFloat64(env.inst, [F].as_ptr(), 1, [f].as_ptr(), 1),
            OK
        );
    }
}

static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn log3(
    _env: *mut c_void,
    status: c_int,
    cat: *const c_char,
    msg: *const c_char,
) {
    let text = format!(
        "[{status}] {}: {}",
        CStr::from_ptr(cat).to_string_lossy(),
        CStr::from_ptr(msg).to_string_lossy()
    );
    LOG.lock().map(|mut l| l.push(text)).ok();
}

#[test]
fn fmi3_one_step_with_intermediate_update_matches_closed_form() {
    unsafe {
        let tok = token();
        let mut env = Box::new(Env {
            inst: null_mut(),
            calls: Vec::new(),
        });
        let envp = &mut *env as *mut Env as *mut c_void;
        let c = fmi3InstantiateCoSimulation(
            c"osc3".as_ptr(),
            tok.as_ptr(),
            null(),
            false,
            false,
            false,
            false,
            null(),
            0,
            envp,
            Some(log3),
            Some(intermediate),
        );
        assert!(!c.is_null());
        env.inst = c;
        let vr = [M, C, D, X0, V0, F];
        let val = [PM, PC, PD, PX0, PV0, FC[0]];
        assert_eq!(fmi3SetFloat64(c, vr.as_ptr(), 6, val.as_ptr(), 6), OK);
        assert_eq!(
            fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3ExitInitializationMode(c), OK);
        let (mut ehn, mut term, mut early, mut lst) = (true, true, true, -1.0);
        assert_eq!(
            fmi3DoStep(c, 0.0, 0.1, true, &mut ehn, &mut term, &mut early, &mut lst),
            OK
        );
        assert!(!ehn && !term && !early && lst == 0.1);
        assert_eq!(env.calls.len(), 3);
        let mut got = [0.0; 3];
        assert_eq!(
            fmi3GetFloat64(c, [X, V, A].as_ptr(), 3, got.as_mut_ptr(), 3),
            OK
        );
        let (x, v, a) = closed_form(0.1);
        assert_rel(got[0], x, "x");
        assert_rel(got[1], v, "v");
        assert_rel(got[2], a, "a");
        fmi3FreeInstance(c);
    }
}

#[test]
fn restored_and_deserialized_states_continue_bit_identically() {
    unsafe {
        let c = fmi2_ready(true);
        let run = |c: *mut c_void, t0: f64| -> Vec<u64> {
            let mut bits = Vec::new();
            for k in 0..3 {
                let t = t0 + 0.05 * f64::from(k);
                assert_eq!(fmi2SetReal(c, [F].as_ptr(), 1, [force(t)].as_ptr()), OK);
                assert_eq!(
                    fmi2SetRealInputDerivatives(c, [F].as_ptr(), 1, [1].as_ptr(), [0.7].as_ptr()),
                    OK
                );
                assert_eq!(fmi2DoStep(c, t, 0.05, 0), OK);
                bits.extend(get2(c, &[X, V, A]).iter().map(|x| x.to_bits()));
            }
            bits
        };
        run(c, 0.0);
        let mut state = null_mut();
        assert_eq!(fmi2GetFMUstate(c, &mut state), OK);
        let first = run(c, 0.15);
        assert_eq!(fmi2SetFMUstate(c, state), OK);
        assert_eq!(run(c, 0.15), first);
        let mut size = 0;
        assert_eq!(fmi2SerializedFMUstateSize(c, state, &mut size), OK);
        let mut buf = vec![0 as c_char; size];
        assert_eq!(fmi2SerializeFMUstate(c, state, buf.as_mut_ptr(), size), OK);
        let mut restored = null_mut();
        assert_eq!(
            fmi2DeSerializeFMUstate(c, buf.as_ptr(), size, &mut restored),
            OK
        );
        assert_eq!(fmi2SetFMUstate(c, restored), OK);
        assert_eq!(run(c, 0.15), first);
        // A truncated buffer is refused.
        let mut bad = null_mut();
        assert_eq!(
            fmi2DeSerializeFMUstate(c, buf.as_ptr(), size - 1, &mut bad),
            ERROR
        );
        assert!(bad.is_null());
        assert_eq!(fmi2FreeFMUstate(c, &mut state), OK);
        assert_eq!(fmi2FreeFMUstate(c, &mut restored), OK);
        assert!(state.is_null());
        fmi2FreeInstance(c);
    }
}

#[test]
fn directional_and_output_derivatives_are_analytic() {
    unsafe {
        let c = fmi2_ready(true);
        let mut out = [0.0; 2];
        let status = fmi2GetDirectionalDerivative(
            c,
            [A, DER_V].as_ptr(),
            2,
            [F].as_ptr(),
            1,
            [1.0].as_ptr(),
            out.as_mut_ptr(),
        );
        assert_eq!(status, OK);
        assert_eq!(out, [1.0 / PM, 1.0 / PM]);
        let mut d = [0.0; 3];
        assert_eq!(
            fmi2GetRealOutputDerivatives(
                c,
                [X, X, V].as_ptr(),
                3,
                [1, 2, 1].as_ptr(),
                d.as_mut_ptr()
            ),
            OK
        );
        let now = get2(c, &[V, A]);
        assert_eq!(d, [now[0], now[1], now[1]]);
        assert_eq!(
            fmi2GetRealOutputDerivatives(c, [X].as_ptr(), 1, [4].as_ptr(), d.as_mut_ptr()),
            ERROR
        );
        fmi2FreeInstance(c);
    }
}

#[test]
fn misuse_returns_error_instead_of_crashing() {
    unsafe {
        // Wrong GUID: NULL.
        let cb = callbacks();
        assert!(fmi2Instantiate(c"x".as_ptr(), 1, c"{bad}".as_ptr(), null(), &cb, 0, 0).is_null());
        // An unknown fmuType: NULL (Model Exchange, 0, is exported since the model opted in).
        let tok = token();
        assert!(fmi2Instantiate(c"x".as_ptr(), 2, tok.as_ptr(), null(), &cb, 0, 0).is_null());
        let me = fmi2Instantiate(c"x".as_ptr(), 0, tok.as_ptr(), null(), &cb, 0, 0);
        assert!(!me.is_null());
        fmi2FreeInstance(me);
        // NULL instance.
        assert_eq!(fmi2DoStep(null_mut(), 0.0, 0.1, 0), ERROR);
        assert_eq!(fmi2Terminate(null_mut()), ERROR);
        fmi2FreeInstance(null_mut());

        let c = fmi2Instantiate(c"x".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
        let mut x = [0.0];
        // Get before initialization, step before initialization.
        assert_eq!(fmi2GetReal(c, [X].as_ptr(), 1, x.as_mut_ptr()), ERROR);
        assert_eq!(fmi2DoStep(c, 0.0, 0.1, 0), ERROR);
        // Bound violation, unknown value reference, calculated variable.
        assert_eq!(fmi2SetReal(c, [M].as_ptr(), 1, [-1.0].as_ptr()), ERROR);
        assert_eq!(fmi2SetReal(c, [999].as_ptr(), 1, [1.0].as_ptr()), ERROR);
        assert_eq!(fmi2SetReal(c, [X].as_ptr(), 1, [1.0].as_ptr()), ERROR);
        assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
        assert_eq!(fmi2EnterInitializationMode(c), OK);
        assert_eq!(fmi2ExitInitializationMode(c), OK);
        // Output and fixed parameter after initialization; wrong time; wrong type.
        assert_eq!(fmi2SetReal(c, [A].as_ptr(), 1, [1.0].as_ptr()), ERROR);
        assert_eq!(fmi2SetReal(c, [M].as_ptr(), 1, [2.0].as_ptr()), ERROR);
        assert_eq!(fmi2DoStep(c, 1.0, 0.1, 0), ERROR);
        assert_eq!(fmi2DoStep(c, 0.0, -0.1, 0), ERROR);
        assert_eq!(fmi2GetInteger(c, [X].as_ptr(), 1, [0].as_mut_ptr()), ERROR);
        assert_eq!(fmi2ExitInitializationMode(c), ERROR);
        // Still usable afterwards.
        assert_eq!(fmi2DoStep(c, 0.0, 0.1, 0), OK);
        assert_eq!(fmi2Terminate(c), OK);
        assert_eq!(fmi2DoStep(c, 0.1, 0.1, 0), ERROR);
        assert_eq!(fmi2Reset(c), OK);
        fmi2FreeInstance(c);

        // FMI 3: no event mode for a model without events; errors are logged.
        let c3 = fmi3InstantiateCoSimulation(
            c"y".as_ptr(),
            tok.as_ptr(),
            null(),
            false,
            false,
            true,
            false,
            null(),
            0,
            null_mut(),
            Some(log3),
            None,
        );
        assert!(c3.is_null());
        let logged = LOG.lock().map(|l| l.join("\n")).unwrap_or_default();
        assert!(logged.contains("fmi3InstantiateCoSimulation"), "{logged}");
    }
}

#[test]
fn model_descriptions_are_generated() {
    let p2 = fmu_kit_model_description(2);
    let p3 = fmu_kit_model_description(3);
    assert!(!p2.is_null() && !p3.is_null());
    assert!(fmu_kit_model_description(4).is_null());
    let x2 = unsafe { CStr::from_ptr(p2) }.to_string_lossy();
    let x3 = unsafe { CStr::from_ptr(p3) }.to_string_lossy();
    assert!(x2.contains("fmiVersion=\"2.0\"") && x2.contains("canInterpolateInputs=\"true\""));
    assert!(x3.contains("fmiVersion=\"3.0\"") && x3.contains("intermediateUpdate=\"true\""));
}

// ---- force/displacement coupling ------------------------------------------------------------

const PCC: f64 = 3.0;
const PDC: f64 = 0.4;
/// Taylor coefficients at t = 0 of the other body's position x_in; v_in = x_in'.
const XIC: [f64; 4] = [0.3, -0.5, 2.0, -4.0];
const VIC: [f64; 4] = [XIC[1], XIC[2], XIC[3], 0.0];

fn x_in(t: f64) -> f64 {
    fmu_kit::eval_taylor(&XIC, t)[0]
}

fn v_in(t: f64) -> f64 {
    fmu_kit::eval_taylor(&VIC, t)[0]
}

fn coupled_rhs(t: f64, z: [f64; 2]) -> [f64; 2] {
    let f = force(t) - PC * z[0] - PD * z[1] + PCC * (x_in(t) - z[0]) + PDC * (v_in(t) - z[1]);
    [z[1], f / PM]
}

/// Independent reference: classical RK4 with 20 000 steps from (PX0, PV0) at 0 to `t`.
/// Returns (x, v, a, Fc) at `t`.
fn coupled_reference(t: f64) -> (f64, f64, f64, f64) {
    let n = 20_000;
    let dt = t / f64::from(n);
    let mut z = [PX0, PV0];
    for i in 0..n {
        let s = dt * f64::from(i);
        let k1 = coupled_rhs(s, z);
        let k2 = coupled_rhs(
            s + dt / 2.0,
            [z[0] + dt / 2.0 * k1[0], z[1] + dt / 2.0 * k1[1]],
        );
        let k3 = coupled_rhs(
            s + dt / 2.0,
            [z[0] + dt / 2.0 * k2[0], z[1] + dt / 2.0 * k2[1]],
        );
        let k4 = coupled_rhs(s + dt, [z[0] + dt * k3[0], z[1] + dt * k3[1]]);
        for m in 0..2 {
            z[m] += dt / 6.0 * (k1[m] + 2.0 * k2[m] + 2.0 * k3[m] + k4[m]);
        }
    }
    let a = coupled_rhs(t, z)[1];
    let fc = PCC * (z[0] - x_in(t)) + PDC * (z[1] - v_in(t));
    (z[0], z[1], a, fc)
}

fn assert_close(got: f64, want: f64, tol: f64, what: &str) {
    let err = (got - want).abs() / want.abs().max(1.0);
    assert!(err < tol, "{what}: got {got}, want {want}, error {err:e}");
}

unsafe fn fmi2_coupled() -> *mut c_void {
    let tok = token();
    let cb = callbacks();
    let c = fmi2Instantiate(c"osc".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    let vr = [M, C, D, X0, V0, CC, DC];
    let val = [PM, PC, PD, PX0, PV0, PCC, PDC];
    assert_eq!(fmi2SetReal(c, vr.as_ptr(), 7, val.as_ptr()), OK);
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

/// Sets F, x_in, v_in at t = 0 with all their input derivatives.
unsafe fn fmi2_set_coupled_inputs(c: *mut c_void) {
    let vr = [F, X_IN, V_IN];
    assert_eq!(
        fmi2SetReal(c, vr.as_ptr(), 3, [FC[0], XIC[0], VIC[0]].as_ptr()),
        OK
    );
    let dvr = [F, F, F, X_IN, X_IN, X_IN, V_IN, V_IN, V_IN];
    let order = [1, 2, 3, 1, 2, 3, 1, 2, 3];
    let val = [
        FC[1], FC[2], FC[3], XIC[1], XIC[2], XIC[3], VIC[1], VIC[2], VIC[3],
    ];
    assert_eq!(
        fmi2SetRealInputDerivatives(c, dvr.as_ptr(), 9, order.as_ptr(), val.as_ptr()),
        OK
    );
}

#[test]
fn fmi2_coupled_step_with_polynomial_inputs_matches_fine_rk4() {
    unsafe {
        let c = fmi2_coupled();
        // At t = 0 (inputs at their values, before the step).
        fmi2_set_coupled_inputs(c);
        let got = get2(c, &[A, F_C]);
        let a0 = coupled_rhs(0.0, [PX0, PV0])[1];
        assert_close(got[0], a0, 1e-14, "a(0)");
        assert_close(
            got[1],
            PCC * (PX0 - XIC[0]) + PDC * (PV0 - VIC[0]),
            1e-14,
            "Fc(0)",
        );
        let h = 0.5;
        assert_eq!(fmi2DoStep(c, 0.0, h, 1), OK);
        let got = get2(c, &[X, V, A, F_C, X_IN, V_IN]);
        let (x, v, a, fc) = coupled_reference(h);
        assert_close(got[0], x, 1e-10, "x");
        assert_close(got[1], v, 1e-10, "v");
        assert_close(got[2], a, 1e-10, "a");
        assert_close(got[3], fc, 1e-10, "Fc");
        assert_close(got[4], x_in(h), 1e-14, "x_in at the step end");
        assert_close(got[5], v_in(h), 1e-14, "v_in at the step end");
        // The coupling matters: without it the result would be far off.
        let (x_free, ..) = closed_form(h);
        assert!((got[0] - x_free).abs() > 1e-3);
        fmi2FreeInstance(c);
    }
}

unsafe extern "C" fn intermediate_coupled(
    env: *mut c_void,
    t: f64,
    set_requested: bool,
    _get: bool,
    _finished: bool,
    _can_return: bool,
    early: *mut bool,
    _early_time: *mut f64,
) {
    let env = &mut *(env as *mut Env);
    env.calls.push(t);
    *early = false;
    if set_requested {
        let vr = [F, X_IN, V_IN];
        let val = [force(t), x_in(t), v_in(t)];
        assert_eq!(
            fmi3SetFloat64(env.inst, vr.as_ptr(), 3, val.as_ptr(), 3),
            OK
        );
    }
}

#[test]
fn fmi3_coupled_step_with_intermediate_update_matches_fine_rk4() {
    unsafe {
        let tok = token();
        let mut env = Box::new(Env {
            inst: null_mut(),
            calls: Vec::new(),
        });
        let envp = &mut *env as *mut Env as *mut c_void;
        let c = fmi3InstantiateCoSimulation(
            c"osc3c".as_ptr(),
            tok.as_ptr(),
            null(),
            false,
            false,
            false,
            false,
            null(),
            0,
            envp,
            Some(log3),
            Some(intermediate_coupled),
        );
        assert!(!c.is_null());
        env.inst = c;
        let vr = [M, C, D, X0, V0, CC, DC, F, X_IN, V_IN];
        let val = [PM, PC, PD, PX0, PV0, PCC, PDC, FC[0], XIC[0], VIC[0]];
        assert_eq!(fmi3SetFloat64(c, vr.as_ptr(), 10, val.as_ptr(), 10), OK);
        assert_eq!(
            fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3ExitInitializationMode(c), OK);
        let h = 0.5;
        let (mut ehn, mut term, mut early, mut lst) = (true, true, true, -1.0);
        assert_eq!(
            fmi3DoStep(c, 0.0, h, true, &mut ehn, &mut term, &mut early, &mut lst),
            OK
        );
        assert!(!ehn && !term && !early && lst == h);
        assert_eq!(env.calls.len(), 3);
        let mut got = [0.0; 4];
        assert_eq!(
            fmi3GetFloat64(c, [X, V, A, F_C].as_ptr(), 4, got.as_mut_ptr(), 4),
            OK
        );
        let (x, v, a, fc) = coupled_reference(h);
        assert_close(got[0], x, 1e-10, "x");
        assert_close(got[1], v, 1e-10, "v");
        assert_close(got[2], a, 1e-10, "a");
        assert_close(got[3], fc, 1e-10, "Fc");
        fmi3FreeInstance(c);
    }
}

/// Values of the model at the instance's current point, for finite differences of `evaluate`.
unsafe fn values_like(c: *mut c_void) -> Values {
    let table = Table::new(Oscillator::NAME, Oscillator.variables()).expect("valid table");
    let mut v = Values::new(std::sync::Arc::new(table));
    let vrs = [X, V, F, X_IN, V_IN, M, C, D, CC, DC, X0, V0];
    for (&vr, x) in vrs.iter().zip(get2(c, &vrs)) {
        v.set_f64(vr, x);
    }
    Oscillator.evaluate(&mut v, 0.0).expect("evaluate");
    v
}

#[test]
fn coupled_directional_derivatives_match_finite_differences() {
    unsafe {
        let c = fmi2_coupled();
        fmi2_set_coupled_inputs(c);
        assert_eq!(fmi2DoStep(c, 0.0, 0.3, 1), OK);
        // Move the inputs off the polynomial so every term is non-trivial.
        let vr = [F, X_IN, V_IN];
        assert_eq!(
            fmi2SetReal(c, vr.as_ptr(), 3, [0.7, -0.2, 1.1].as_ptr()),
            OK
        );
        let base = values_like(c);
        let unknowns = [A, DER_V, F_C, DER_X, X, V];
        for known in [X, V, F, X_IN, V_IN, M, C, D, CC, DC] {
            let mut out = [0.0; 6];
            let status = fmi2GetDirectionalDerivative(
                c,
                unknowns.as_ptr(),
                6,
                [known].as_ptr(),
                1,
                [1.0].as_ptr(),
                out.as_mut_ptr(),
            );
            assert_eq!(status, OK);
            let x = base.f64(known);
            let step = 1e-6 * x.abs().max(1.0);
            let side = |delta: f64| {
                let mut v = base.clone();
                v.set_f64(known, x + delta);
                Oscillator.evaluate(&mut v, 0.0).expect("evaluate");
                unknowns.map(|u| v.f64(u))
            };
            let (plus, minus) = (side(step), side(-step));
            for (k, &u) in unknowns.iter().enumerate() {
                let fd = (plus[k] - minus[k]) / (2.0 * step);
                assert_close(out[k], fd, 1e-7, &format!("d[{u}]/d[{known}]"));
            }
        }
        fmi2FreeInstance(c);
    }
}

#[test]
fn coupled_output_derivatives_follow_the_dynamics() {
    unsafe {
        let c = fmi2_coupled();
        fmi2_set_coupled_inputs(c);
        // z = [x, v], z' = Az z + Bz u with u = [F, x_in, v_in]: z^(j+1) = Az z^(j) + Bz u^(j).
        let (m, k, e) = (PM, PC + PCC, PD + PDC);
        let mut z = [PX0, PV0];
        let mut zd = vec![z];
        for j in 0..4 {
            let u = [FC[j], XIC[j], VIC[j]];
            let next = [
                z[1],
                (u[0] + PCC * u[1] + PDC * u[2] - k * z[0] - e * z[1]) / m,
            ];
            zd.push(next);
            z = next;
        }
        let fc = |j: usize| PCC * (zd[j][0] - XIC[j]) + PDC * (zd[j][1] - VIC[j]);
        let vrs = [X, X, X, V, V, V, A, A, A, F_C, F_C, F_C];
        let orders = [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3];
        let mut d = [0.0; 12];
        assert_eq!(
            fmi2GetRealOutputDerivatives(c, vrs.as_ptr(), 12, orders.as_ptr(), d.as_mut_ptr()),
            OK
        );
        let want = [
            zd[1][0],
            zd[2][0],
            zd[3][0],
            zd[1][1],
            zd[2][1],
            zd[3][1],
            zd[2][1],
            zd[3][1],
            zd[4][1],
            fc(1),
            fc(2),
            fc(3),
        ];
        for (i, (&g, &w)) in d.iter().zip(&want).enumerate() {
            assert_close(g, w, 1e-13, &format!("derivative {i}"));
        }
        fmi2FreeInstance(c);
    }
}

#[test]
fn default_coupling_is_inert() {
    unsafe {
        // cc = dc = 0: x_in and v_in have no effect and Fc is 0.
        let c = fmi2_ready(true);
        assert_eq!(
            fmi2SetReal(c, [X_IN, V_IN].as_ptr(), 2, [5.0, -3.0].as_ptr()),
            OK
        );
        assert_eq!(fmi2SetReal(c, [F].as_ptr(), 1, [FC[0]].as_ptr()), OK);
        let vr = [F, F, F, X_IN, V_IN];
        let order = [1, 2, 3, 1, 1];
        let val = [FC[1], FC[2], FC[3], 7.0, 9.0];
        assert_eq!(
            fmi2SetRealInputDerivatives(c, vr.as_ptr(), 5, order.as_ptr(), val.as_ptr()),
            OK
        );
        assert_eq!(fmi2DoStep(c, 0.0, 0.1, 1), OK);
        let got = get2(c, &[X, V, A, F_C]);
        let (x, v, a) = closed_form(0.1);
        assert_rel(got[0], x, "x");
        assert_rel(got[1], v, "v");
        assert_rel(got[2], a, "a");
        assert_eq!(got[3].to_bits(), 0.0f64.to_bits(), "Fc = +0 when uncoupled");
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi2_integral_outputs_match_closed_form() {
    // c = 0, cc = 1, x_in = 0, no damping, m = 1: x'' = -x, so x = cos t from x0 = 1, and
    // Fc = cc (x - x_in) = cos t; both integrals are sin t. Two steps: the integrals carry on.
    unsafe {
        let tok = token();
        let cb = callbacks();
        let c = fmi2Instantiate(c"osc".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
        let vr = [M, C, D, X0, V0, CC, DC];
        let val = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        assert_eq!(fmi2SetReal(c, vr.as_ptr(), 7, val.as_ptr()), OK);
        assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
        assert_eq!(fmi2EnterInitializationMode(c), OK);
        assert_eq!(fmi2ExitInitializationMode(c), OK);
        assert_eq!(get2(c, &[X_INT, FC_INT]), [0.0, 0.0]);
        assert_eq!(fmi2DoStep(c, 0.0, 0.4, 1), OK);
        assert_eq!(fmi2DoStep(c, 0.4, 0.9, 1), OK);
        let got = get2(c, &[X, X_INT, FC_INT]);
        assert_rel(got[0], 1.3f64.cos(), "x");
        assert_rel(got[1], 1.3f64.sin(), "x_int");
        assert_rel(got[2], 1.3f64.sin(), "Fc_int");
        fmi2FreeInstance(c);
    }
}
