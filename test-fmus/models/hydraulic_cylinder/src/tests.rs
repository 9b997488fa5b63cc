//! Tests of the equations and, through the exported FMI 2 functions, of the FMU.

use std::ffi::{c_int, c_void, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;

fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got}, want {want} (tolerance {tol:e})"
    );
}

#[test]
fn table3_equilibrium_of_both_actuators() {
    let cy = Cylinder::default();
    let (k, p1, p2) = cy.equilibrium(8829.0).expect("actuator 1");
    close(k, 0.454346, 5e-7, "kappa0 (actuator 1)");
    close(p1, 3.1708e6, 50.0, "p1 (actuator 1)");
    close(p2, 4.5292e6, 50.0, "p2 (actuator 1)");
    close((p2 - p1) * cy.a_p, 8829.0, 1e-8, "held force");
    close(p1 + p2, cy.p_p + cy.p_t, 1e-6, "p1 + p2");
    // Table 3 as printed: 0.45435, 3.17 MPa, 4.53 MPa.
    close(k, 0.45435, 5e-6, "kappa0 vs Table 3");
    let (k, p1, p2) = cy.equilibrium(0.0).expect("actuator 2");
    close(k, 0.5, 1e-15, "kappa0 (actuator 2)");
    close(p1, 3.85e6, 1e-6, "p1 (actuator 2)");
    close(p2, 3.85e6, 1e-6, "p2 (actuator 2)");
    assert!(
        cy.equilibrium(5e4).is_err(),
        "beyond the valve's force range"
    );
    assert!(cy.equilibrium(f64::NAN).is_err());
}

#[test]
fn pressures_are_steady_at_the_equilibrium() {
    let cy = Cylinder::default();
    for f_eq in [8829.0, 0.0, -2455.0] {
        let (k, p1, p2) = cy.equilibrium(f_eq).expect("equilibrium");
        let (dp1, dp2) = cy.pressure_rates(p1, p2, cy.s0, 0.0, k);
        assert!(
            dp1.abs() < 1e-3 && dp2.abs() < 1e-3,
            "f_eq = {f_eq}: dp1 = {dp1}, dp2 = {dp2}"
        );
    }
    // Bulk moduli of the notes: 1.5525 and 1.5617 GPa.
    close(cy.bulk_modulus(3.1708e6) / 1e9, 1.5525, 5e-5, "beta(p1)");
    close(cy.bulk_modulus(4.5292e6) / 1e9, 1.5617, 5e-5, "beta(p2)");
}

#[test]
fn spool_laws() {
    let k0 = 0.45;
    let law1 = Spool {
        law: 1,
        kappa0: k0,
        t_a: 2.0,
        t_b: 6.0,
        t_r: 1e-3,
    };
    for (t, want) in [
        (0.0, k0),
        (2.0, k0),
        (2.0005, k0 - 0.005),
        (2.001, k0 - 0.01),
        (4.0, k0 - 0.01),
        (6.0, k0 - 0.01),
        (6.001, k0 + 0.005),
        (6.002, k0 + 0.02),
        (9.0, k0 + 0.02),
    ] {
        close(law1.kappa(t), want, 1e-12, &format!("Eq. 30 at t = {t}"));
    }
    let law2 = Spool {
        law: 2,
        kappa0: 0.5,
        ..law1
    };
    for (t, want) in [(0.0, 0.5), (1.0, 0.4975), (2.0, 0.495), (5.0, 0.495)] {
        close(law2.kappa(t), want, 1e-12, &format!("Eq. 35 at t = {t}"));
    }
    let held = Spool { law: 0, ..law1 };
    close(held.kappa(7.0), k0, 0.0, "law 0");
}

// ---- through the FMI 2 functions ----------------------------------------------------------

fn callbacks() -> CallbackFunctions {
    CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    }
}

/// An initialised instance with the given real and Boolean parameters.
unsafe fn ready(reals: &[(u32, f64)], bools: &[(u32, bool)]) -> *mut c_void {
    let table = Table::new(HydraulicCylinder::NAME, HydraulicCylinder.variables()).expect("table");
    let tok = CString::new(table.token).expect("token");
    let cb = callbacks();
    let c = fmi2Instantiate(c"cyl".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    for &(vr, x) in reals {
        assert_eq!(fmi2SetReal(c, &vr, 1, &x), OK);
    }
    for &(vr, b) in bools {
        let b = c_int::from(b);
        assert_eq!(fmi2SetBoolean(c, &vr, 1, &b), OK);
    }
    assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
    assert_eq!(fmi2EnterInitializationMode(c), OK);
    assert_eq!(fmi2ExitInitializationMode(c), OK);
    c
}

unsafe fn get(c: *mut c_void, vrs: &[u32]) -> Vec<f64> {
    let mut out = vec![0.0; vrs.len()];
    assert_eq!(
        fmi2GetReal(c, vrs.as_ptr(), vrs.len(), out.as_mut_ptr()),
        OK
    );
    out
}

unsafe fn set(c: *mut c_void, vrs: &[u32], x: &[f64]) {
    assert_eq!(fmi2SetReal(c, vrs.as_ptr(), vrs.len(), x.as_ptr()), OK);
}

unsafe fn dd(c: *mut c_void, of: u32, wrt: u32) -> f64 {
    let mut out = 0.0;
    assert_eq!(
        fmi2GetDirectionalDerivative(c, &of, 1, &wrt, 1, &1.0, &mut out),
        OK
    );
    out
}

#[test]
fn fmu_starts_in_equilibrium_and_rests_until_t_a() {
    unsafe {
        let c = ready(&[], &[]);
        let v = get(c, &[F, P1, P2, KAPPA, DER_P1, DER_P2, KAPPA_INIT]);
        close(v[0], 8829.0, 1e-8, "f at t = 0");
        close(v[1], 3.1708e6, 50.0, "p1");
        close(v[2], 4.5292e6, 50.0, "p2");
        close(v[3], 0.454346, 5e-7, "kappa");
        assert!(v[4].abs() < 1e-3 && v[5].abs() < 1e-3, "pdot = {v:?}");
        close(v[6], v[3], 0.0, "kappa_init");
        // Rest (s = s0, sd = 0 by default) until t_a = 2 s, 10 ms doSteps of 0.2 ms steps.
        let h = 2e-4;
        fmi2FreeInstance(c);
        let c = ready(&[(H, h)], &[]);
        for k in 0..190 {
            assert_eq!(fmi2DoStep(c, k as f64 * 0.01, 0.01, 1), OK);
        }
        let w = get(c, &[F, P1, P2]);
        close(w[0], 8829.0, 1e-6, "f at t = 1.9 s");
        close(w[1], v[1], 1e-6, "p1 at t = 1.9 s");
        close(w[2], v[2], 1e-6, "p2 at t = 1.9 s");
        fmi2FreeInstance(c);
        // Actuator 2.
        let c = ready(&[(F_EQ, 0.0)], &[]);
        let v = get(c, &[F, P1, P2, KAPPA]);
        close(v[0], 0.0, 1e-9, "f (actuator 2)");
        close(v[1], 3.85e6, 1e-6, "p1 (actuator 2)");
        close(v[2], 3.85e6, 1e-6, "p2 (actuator 2)");
        close(v[3], 0.5, 0.0, "kappa (actuator 2)");
        fmi2FreeInstance(c);
        // kappa0 given instead of solved.
        let c = ready(&[(KAPPA0, 0.4)], &[(SOLVE_KAPPA0, false)]);
        let (p1, p2) = Cylinder::default().steady_pressures(0.4);
        let v = get(c, &[KAPPA, P1, P2]);
        assert_eq!(v, vec![0.4, p1, p2]);
        fmi2FreeInstance(c);
    }
}

/// Eqs. 25–29 written out once more, independently of `hydraulics.rs`.
fn pdot_by_hand(p1: f64, p2: f64, s: f64, sd: f64, kappa: f64) -> (f64, f64) {
    let (a_p, l, c_d, rho, pp, pt, a, b) =
        (65e-4, 0.442, 0.67, 850.0, 7.6e6, 0.1e6, 6.53e-10, -1.19e-18);
    let beta = |p: f64| (1.0 + a * p + b * p * p) / (a + 2.0 * b * p);
    let q = |area: f64, dp: f64| {
        if dp < 0.0 {
            0.0
        } else {
            c_d * area * (2.0 * dp / rho).sqrt()
        }
    };
    let (ai, ao) = (5e-4 * kappa, 5e-4 * (1.0 - kappa));
    let l1 = 0.5 * l + 0.5 - s;
    let l2 = 0.5 * l + s - 0.5;
    (
        beta(p1) / (a_p * l1) * (a_p * sd + q(ai, pp - p1) - q(ao, p1 - pt)),
        beta(p2) / (a_p * l2) * (-a_p * sd + q(ao, pp - p2) - q(ai, p2 - pt)),
    )
}

#[test]
fn one_explicit_euler_step_by_hand_and_the_damping_feedthrough() {
    for fresh in [false, true] {
        unsafe {
            let c = ready(&[], &[(FRESH_DAMPING, fresh)]);
            let p = get(c, &[P1, P2, KAPPA]);
            let (s, sd) = (0.503, 0.02);
            set(c, &[S, SD], &[s, sd]);
            let f0 = get(c, &[F])[0];
            if fresh {
                close(f0, 8829.0 - 1e5 * sd, 1e-8, "fresh f after setting sd");
                close(dd(c, F, SD), -1e5, 0.0, "df/dsd (fresh)");
            } else {
                close(f0, 8829.0, 1e-8, "stale f after setting sd");
                close(dd(c, F, SD), 0.0, 0.0, "df/dsd (stale)");
            }
            let h = 2e-4;
            assert_eq!(fmi2DoStep(c, 0.0, h, 1), OK);
            let (dp1, dp2) = pdot_by_hand(p[0], p[1], s, sd, p[2]);
            let (p1, p2) = (p[0] + h * dp1, p[1] + h * dp2);
            let v = get(c, &[P1, P2, F]);
            close(v[0], p1, 1e-9 * p1, "p1 after one Euler step");
            close(v[1], p2, 1e-9 * p2, "p2 after one Euler step");
            // Both modes: the rate held over the step is 0.02.
            close(v[2], (p2 - p1) * 65e-4 - 1e5 * sd, 1e-6, "f after the step");
            // A new rate: only the fresh mode sees it before the next step.
            set(c, &[SD], &[-0.01]);
            let f = get(c, &[F])[0];
            let want = (p2 - p1) * 65e-4 - 1e5 * if fresh { -0.01 } else { sd };
            close(f, want, 1e-6, "f after setting a new sd");
            fmi2FreeInstance(c);
        }
    }
}

#[test]
fn internal_steps_divide_the_communication_step() {
    unsafe {
        let (s, sd) = (0.499, -0.01);
        let one = ready(&[(H, 1e-4)], &[]);
        set(one, &[S, SD], &[s, sd]);
        assert_eq!(fmi2DoStep(one, 0.0, 3e-4, 1), OK);
        let two = ready(&[], &[]);
        for k in 0..3 {
            set(two, &[S, SD], &[s, sd]);
            assert_eq!(fmi2DoStep(two, k as f64 * 1e-4, 1e-4, 1), OK);
        }
        let (a, b) = (get(one, &[P1, P2, F]), get(two, &[P1, P2, F]));
        for i in 0..3 {
            close(
                a[i],
                b[i],
                1e-9 * b[i].abs(),
                "three internal steps vs three doSteps",
            );
        }
        fmi2FreeInstance(one);
        fmi2FreeInstance(two);
    }
}
