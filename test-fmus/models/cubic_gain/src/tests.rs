//! Tests through the exported C functions (callable from Rust inside this crate).

use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;
const ERROR: c_int = 3;

const PG: f64 = 0.8;
const PO: f64 = -0.3;
const PC: f64 = 0.25;

fn token() -> CString {
    let table = Table::new(CubicGain::NAME, CubicGain.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

fn f(u: f64) -> f64 {
    PO + PG * u + PC * u * u * u
}

fn df(u: f64) -> f64 {
    PG + 3.0 * PC * u * u
}

fn assert_close(got: f64, want: f64, tol: f64, what: &str) {
    let err = (got - want).abs() / want.abs().max(1.0);
    assert!(err < tol, "{what}: got {got}, want {want}, error {err:e}");
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

unsafe fn fmi2_ready() -> *mut c_void {
    let tok = token();
    let cb = callbacks();
    let c = fmi2Instantiate(c"cg".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    let vr = [GAIN, OFFSET, CUBIC];
    assert_eq!(fmi2SetReal(c, vr.as_ptr(), 3, [PG, PO, PC].as_ptr()), OK);
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

unsafe fn dydu2(c: *mut c_void, known: u32) -> f64 {
    let mut out = [0.0];
    let status = fmi2GetDirectionalDerivative(
        c,
        [Y].as_ptr(),
        1,
        [known].as_ptr(),
        1,
        [1.0].as_ptr(),
        out.as_mut_ptr(),
    );
    assert_eq!(status, OK);
    out[0]
}

#[test]
fn defaults_are_the_identity() {
    unsafe {
        let tok = token();
        let cb = callbacks();
        let c = fmi2Instantiate(c"cg".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
        assert!(!c.is_null());
        assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
        assert_eq!(fmi2EnterInitializationMode(c), OK);
        assert_eq!(fmi2ExitInitializationMode(c), OK);
        assert_eq!(fmi2SetReal(c, [U].as_ptr(), 1, [1.7].as_ptr()), OK);
        assert_eq!(get2(c, &[Y]), [1.7]);
        assert_eq!(dydu2(c, U), 1.0);
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi2_output_and_directional_derivative() {
    unsafe {
        let c = fmi2_ready();
        for u in [-2.0, -0.5, 0.0, 0.3, 1.5] {
            assert_eq!(fmi2SetReal(c, [U].as_ptr(), 1, [u].as_ptr()), OK);
            assert_close(get2(c, &[Y])[0], f(u), 1e-15, "y");
            let d = dydu2(c, U);
            assert_close(d, df(u), 1e-15, "dy/du");
            let h = 1e-6;
            assert_close(d, (f(u + h) - f(u - h)) / (2.0 * h), 1e-8, "dy/du vs FD");
            assert_close(dydu2(c, GAIN), u, 1e-15, "dy/dgain");
            assert_close(dydu2(c, OFFSET), 1.0, 1e-15, "dy/doffset");
            assert_close(dydu2(c, CUBIC), u * u * u, 1e-15, "dy/dcubic");
        }
        // Direct feedthrough through a step; tunable parameters may change between steps.
        assert_eq!(fmi2SetReal(c, [U].as_ptr(), 1, [0.9].as_ptr()), OK);
        assert_eq!(fmi2DoStep(c, 0.0, 0.1, 1), OK);
        assert_close(get2(c, &[Y])[0], f(0.9), 1e-15, "y after a step");
        assert_eq!(fmi2SetReal(c, [GAIN].as_ptr(), 1, [2.0].as_ptr()), OK);
        assert_close(
            get2(c, &[Y])[0],
            PO + 2.0 * 0.9 + PC * 0.9f64.powi(3),
            1e-15,
            "y after tuning",
        );
        // y is no state: setting it is refused.
        assert_eq!(fmi2SetReal(c, [Y].as_ptr(), 1, [1.0].as_ptr()), ERROR);
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi2_output_derivatives_follow_the_chain_rule() {
    unsafe {
        let c = fmi2_ready();
        // u(s) = sum uc[k] s^k / k!, y(s) = PO + PG u(s) + PC u(s)^3; y^(k)(0) = k! [s^k] y.
        let uc = [0.6, -1.2, 0.7, 2.5];
        assert_eq!(fmi2SetReal(c, [U].as_ptr(), 1, [uc[0]].as_ptr()), OK);
        assert_eq!(
            fmi2SetRealInputDerivatives(
                c,
                [U, U, U].as_ptr(),
                3,
                [1, 2, 3].as_ptr(),
                uc[1..].as_ptr()
            ),
            OK
        );
        let p = [uc[0], uc[1], uc[2] / 2.0, uc[3] / 6.0];
        let mul = |a: &[f64], b: &[f64]| {
            let mut r = vec![0.0; a.len() + b.len() - 1];
            for (i, x) in a.iter().enumerate() {
                for (j, y) in b.iter().enumerate() {
                    r[i + j] += x * y;
                }
            }
            r
        };
        let p3 = mul(&mul(&p, &p), &p);
        let fact = [1.0, 1.0, 2.0, 6.0];
        let mut d = [0.0; 3];
        assert_eq!(
            fmi2GetRealOutputDerivatives(
                c,
                [Y, Y, Y].as_ptr(),
                3,
                [1, 2, 3].as_ptr(),
                d.as_mut_ptr()
            ),
            OK
        );
        for k in 1..4 {
            let want = fact[k] * (PG * p[k] + PC * p3[k]);
            assert_close(d[k - 1], want, 1e-14, &format!("y^({k})"));
        }
        fmi2FreeInstance(c);
    }
}

#[test]
fn fmi3_output_directional_derivative_and_state() {
    unsafe {
        let tok = token();
        let c = fmi3InstantiateCoSimulation(
            c"cg3".as_ptr(),
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
        let vr = [GAIN, OFFSET, CUBIC, U];
        let val = [PG, PO, PC, -1.1];
        assert_eq!(fmi3SetFloat64(c, vr.as_ptr(), 4, val.as_ptr(), 4), OK);
        assert_eq!(
            fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3ExitInitializationMode(c), OK);
        let y = |c: *mut c_void| {
            let mut out = [0.0];
            assert_eq!(fmi3GetFloat64(c, [Y].as_ptr(), 1, out.as_mut_ptr(), 1), OK);
            out[0]
        };
        assert_close(y(c), f(-1.1), 1e-15, "y");
        let mut sens = [0.0];
        assert_eq!(
            fmi3GetDirectionalDerivative(
                c,
                [Y].as_ptr(),
                1,
                [U].as_ptr(),
                1,
                [2.0].as_ptr(),
                1,
                sens.as_mut_ptr(),
                1
            ),
            OK
        );
        assert_close(sens[0], 2.0 * df(-1.1), 1e-15, "seeded dy/du");
        // Step, save the state, change input and gain, restore (directly and serialized).
        let (mut ehn, mut term, mut early, mut lst) = (true, true, true, -1.0);
        assert_eq!(
            fmi3DoStep(c, 0.0, 0.1, true, &mut ehn, &mut term, &mut early, &mut lst),
            OK
        );
        assert!(!ehn && !term && !early && lst == 0.1);
        assert_close(y(c), f(-1.1), 1e-15, "y after a step");
        let mut state = null_mut();
        assert_eq!(fmi3GetFMUState(c, &mut state), OK);
        let mut size = 0;
        assert_eq!(fmi3SerializedFMUStateSize(c, state, &mut size), OK);
        let mut buf = vec![0u8; size];
        assert_eq!(fmi3SerializeFMUState(c, state, buf.as_mut_ptr(), size), OK);
        let want = y(c);
        assert_eq!(
            fmi3SetFloat64(c, [U, GAIN].as_ptr(), 2, [3.0, 5.0].as_ptr(), 2),
            OK
        );
        assert_ne!(y(c), want);
        assert_eq!(fmi3SetFMUState(c, state), OK);
        assert_eq!(y(c).to_bits(), want.to_bits());
        assert_eq!(
            fmi3SetFloat64(c, [U, GAIN].as_ptr(), 2, [3.0, 5.0].as_ptr(), 2),
            OK
        );
        let mut restored = null_mut();
        assert_eq!(
            fmi3DeserializeFMUState(c, buf.as_ptr(), size, &mut restored),
            OK
        );
        assert_eq!(fmi3SetFMUState(c, restored), OK);
        assert_eq!(y(c).to_bits(), want.to_bits());
        assert_eq!(fmi3FreeFMUState(c, &mut state), OK);
        assert_eq!(fmi3FreeFMUState(c, &mut restored), OK);
        fmi3FreeInstance(c);
    }
}

#[test]
fn model_descriptions_are_generated() {
    let p2 = fmu_kit_model_description(2);
    let p3 = fmu_kit_model_description(3);
    assert!(!p2.is_null() && !p3.is_null());
    let x2 = unsafe { CStr::from_ptr(p2) }.to_string_lossy();
    let x3 = unsafe { CStr::from_ptr(p3) }.to_string_lossy();
    assert!(x2.contains("fmiVersion=\"2.0\"") && x2.contains("modelName=\"CubicGain\""));
    assert!(x3.contains("fmiVersion=\"3.0\"") && x3.contains("variability=\"tunable\""));
}
