//! Tests through the exported C functions.

use std::ffi::{c_int, c_void, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;

fn token() -> CString {
    let table = Table::new(VanDerPol::NAME, VanDerPol.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

unsafe fn fmi2_ready(mu: f64) -> *mut c_void {
    let tok = token();
    let cb = CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let c = fmi2Instantiate(c"vdp".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(fmi2SetReal(c, [MU].as_ptr(), 1, [mu].as_ptr()), OK);
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

unsafe fn fmi3_ready(mu: f64) -> *mut c_void {
    let tok = token();
    let c = fmi3InstantiateCoSimulation(
        c"vdp3".as_ptr(),
        tok.as_ptr(),
        null(),
        false,
        false,
        false,
        false,
        null(),
        0,
        null_mut(),
        None,
        None,
    );
    assert!(!c.is_null());
    assert_eq!(fmi3SetFloat64(c, [MU].as_ptr(), 1, [mu].as_ptr(), 1), OK);
    assert_eq!(
        fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
        OK
    );
    assert_eq!(fmi3ExitInitializationMode(c), OK);
    c
}

/// An independent reference: classic RK4 with a much smaller step.
fn reference(mu: f64, t_end: f64, h: f64) -> [f64; 2] {
    let f = |x: [f64; 2]| [x[1], mu * (1.0 - x[0] * x[0]) * x[1] - x[0]];
    let n = (t_end / h).round() as usize;
    let mut x = [2.0, 0.0];
    for _ in 0..n {
        let k1 = f(x);
        let k2 = f([x[0] + h / 2.0 * k1[0], x[1] + h / 2.0 * k1[1]]);
        let k3 = f([x[0] + h / 2.0 * k2[0], x[1] + h / 2.0 * k2[1]]);
        let k4 = f([x[0] + h * k3[0], x[1] + h * k3[1]]);
        for i in 0..2 {
            x[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
    x
}

#[test]
fn fmi2_harmonic_case_matches_closed_form() {
    // mu = 0: x0 = 2 cos t, x1 = -2 sin t.
    unsafe {
        let c = fmi2_ready(0.0);
        let h = 1e-2;
        let mut worst: f64 = 0.0;
        for k in 0..500 {
            assert_eq!(fmi2DoStep(c, k as f64 * h, h, 1), OK);
            let t = (k + 1) as f64 * h;
            let mut x = [0.0; 2];
            assert_eq!(fmi2GetReal(c, [X0, X1].as_ptr(), 2, x.as_mut_ptr()), OK);
            worst = worst
                .max((x[0] - 2.0 * t.cos()).abs())
                .max((x[1] + 2.0 * t.sin()).abs());
        }
        assert!(worst < 1e-10, "max error {worst:e}");
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi3_nonlinear_case_matches_fine_reference() {
    unsafe {
        let c = fmi3_ready(1.0);
        let h = 1e-2;
        let mut worst: f64 = 0.0;
        for k in 0..300 {
            let (mut ehn, mut term, mut early, mut lst) = (false, false, false, 0.0);
            assert_eq!(
                fmi3DoStep(
                    c,
                    k as f64 * h,
                    h,
                    true,
                    &mut ehn,
                    &mut term,
                    &mut early,
                    &mut lst
                ),
                OK
            );
            if (k + 1) % 50 == 0 {
                let t = (k + 1) as f64 * h;
                let want = reference(1.0, t, 1e-5);
                let mut x = [0.0; 2];
                assert_eq!(
                    fmi3GetFloat64(c, [X0, X1].as_ptr(), 2, x.as_mut_ptr(), 2),
                    OK
                );
                worst = worst
                    .max((x[0] - want[0]).abs())
                    .max((x[1] - want[1]).abs());
            }
        }
        assert!(
            worst < 1e-9,
            "max error against the fine reference {worst:e}"
        );
        fmi3FreeInstance(c);
    }
}

#[test]
fn directional_derivatives_are_the_analytic_jacobian() {
    unsafe {
        let mu = 1.5;
        let c = fmi2_ready(mu);
        for k in 0..37 {
            assert_eq!(fmi2DoStep(c, k as f64 * 0.01, 0.01, 1), OK);
        }
        let mut x = [0.0; 2];
        assert_eq!(fmi2GetReal(c, [X0, X1].as_ptr(), 2, x.as_mut_ptr()), OK);
        let (x0, x1) = (x[0], x[1]);
        let unknowns = [DER_X0, DER_X1];
        let expected = [
            [0.0, -2.0 * mu * x0 * x1 - 1.0],
            [1.0, mu * (1.0 - x0 * x0)],
            [0.0, (1.0 - x0 * x0) * x1],
        ];
        for (known, want) in [X0, X1, MU].into_iter().zip(expected) {
            let mut out = [0.0; 2];
            assert_eq!(
                fmi2GetDirectionalDerivative(
                    c,
                    unknowns.as_ptr(),
                    2,
                    [known].as_ptr(),
                    1,
                    [1.0].as_ptr(),
                    out.as_mut_ptr()
                ),
                OK
            );
            assert_eq!(out, want, "d der / d vr {known}");
        }
        fmi2FreeInstance(c);
    }
}

#[test]
fn model_descriptions_name_states_and_experiment() {
    let x2 = unsafe { std::ffi::CStr::from_ptr(fmu_kit_model_description(2)) }.to_string_lossy();
    let x3 = unsafe { std::ffi::CStr::from_ptr(fmu_kit_model_description(3)) }.to_string_lossy();
    assert!(x2.contains("stopTime=\"20.0\"") && x2.contains("stepSize=\"0.01\""));
    assert!(x3.contains("<Float64 name=\"x0\" valueReference=\"1\""));
    assert!(x3.contains("ContinuousStateDerivative valueReference=\"4\""));
}
