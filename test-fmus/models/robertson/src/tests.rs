//! Tests through the exported C functions.

use std::ffi::{c_int, c_void, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::{CallbackFunctions, EventInfo};
use fmu_kit::Table;

const OK: c_int = 0;

fn token() -> CString {
    let table = Table::new(Robertson::NAME, Robertson.variables()).expect("valid table");
    CString::new(table.token).expect("token")
}

/// An FMI 2 instance of `fmu_type` (0 Model Exchange, 1 Co-Simulation) after initialization.
unsafe fn fmi2_ready(fmu_type: c_int) -> *mut c_void {
    let tok = token();
    let cb = CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let c = fmi2Instantiate(c"rober".as_ptr(), fmu_type, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

fn rhs(y: [f64; 3]) -> [f64; 3] {
    let (r1, r2, r3) = (0.04 * y[0], 1e4 * y[1] * y[2], 3e7 * y[1] * y[1]);
    [-r1 + r2, r1 - r2 - r3, r3]
}

#[test]
fn model_exchange_derivatives_and_jacobian_are_the_equations() {
    unsafe {
        let c = fmi2_ready(0);
        let mut info = EventInfo::default();
        assert_eq!(fmi2NewDiscreteStates(c, &mut info), OK);
        assert_eq!(info.new_discrete_states_needed, 0);
        assert_eq!(info.next_event_time_defined, 0);
        assert_eq!(fmi2EnterContinuousTimeMode(c), OK);
        let y = [0.9, 2e-5, 0.09998];
        assert_eq!(fmi2SetContinuousStates(c, y.as_ptr(), 3), OK);
        let mut dx = [0.0; 3];
        assert_eq!(fmi2GetDerivatives(c, dx.as_mut_ptr(), 3), OK);
        assert_eq!(dx, rhs(y));
        let mut nominal = [0.0; 3];
        assert_eq!(
            fmi2GetNominalsOfContinuousStates(c, nominal.as_mut_ptr(), 3),
            OK
        );
        assert_eq!(nominal, [1.0, 1e-5, 1.0]);
        // The Jacobian column by column against central differences of the equations.
        let ders = [DER_Y1, DER_Y2, DER_Y3];
        for (j, wrt) in [Y1, Y2, Y3].into_iter().enumerate() {
            let mut col = [0.0; 3];
            let seed = [1.0];
            let st = fmi2GetDirectionalDerivative(
                c,
                ders.as_ptr(),
                3,
                [wrt].as_ptr(),
                1,
                seed.as_ptr(),
                col.as_mut_ptr(),
            );
            assert_eq!(st, OK);
            let h = 1e-7 * y[j].abs().max(1e-6);
            let (mut yp, mut ym) = (y, y);
            yp[j] += h;
            ym[j] -= h;
            let (fp, fm) = (rhs(yp), rhs(ym));
            for i in 0..3 {
                let fd = (fp[i] - fm[i]) / (2.0 * h);
                assert!(
                    (col[i] - fd).abs() <= 1e-6 * fd.abs().max(1.0),
                    "d der(y{}) / d y{}: {} vs {fd}",
                    i + 1,
                    j + 1,
                    col[i]
                );
            }
        }
        fmi2FreeInstance(c);
    }
}

#[test]
fn co_simulation_is_stable_and_conserves_mass() {
    unsafe {
        let c = fmi2_ready(1);
        let mut t = 0.0;
        for _ in 0..20 {
            assert_eq!(fmi2DoStep(c, t, 0.05, 1), OK);
            t += 0.05;
        }
        let mut y = [0.0; 3];
        assert_eq!(fmi2GetReal(c, [Y1, Y2, Y3].as_ptr(), 3, y.as_mut_ptr()), OK);
        assert!(y.iter().all(|x| x.is_finite() && *x >= 0.0), "{y:?}");
        assert!((y.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{y:?}");
        // Hairer & Wanner's reference at t = 1: y1 = 0.9664597, y2 = 3.074626e-5.
        assert!((y[0] - 0.966_459_7).abs() < 1e-6, "{y:?}");
        assert!((y[1] - 3.074_626e-5).abs() < 1e-10, "{y:?}");
        fmi2FreeInstance(c);
    }
}
