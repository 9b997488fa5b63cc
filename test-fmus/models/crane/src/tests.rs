//! Tests of the crane equations, the FMU (through the exported FMI 2 functions) and the
//! monolithic reference.

use std::ffi::{c_int, c_void, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;

fn rel(got: f64, want: f64, tol: f64, what: &str) {
    let err = (got - want).abs() / want.abs().max(1e-300);
    assert!(
        err <= tol,
        "{what}: got {got}, want {want}, relative error {err:e}"
    );
}

fn abs(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: got {got}, want {want} (tolerance {tol:e})"
    );
}

const M0: f64 = 391.666_666_666_666_7 / 0.1875;

#[test]
fn effective_mass_and_force_at_t0() {
    let c1 = CraneData::paper(1);
    let e = c1.eval(THETA0, [0.0; 2], [0.0; 2]);
    rel(e.mass[0][0], 416.666_666_666_666_7, 1e-12, "M11");
    rel(e.mass[0][1], -25.0, 1e-12, "M12");
    rel(e.mass[1][1], 25.0, 1e-12, "M22");
    rel(e.s[0], 0.5, 1e-12, "s1,0");
    rel(e.a[0][0], 0.433_012_7, 1e-7, "A_i,11");
    abs(e.a[0][1], 0.0, 1e-15, "A_i,12");
    rel(e.m_eff[0][0], M0, 1e-6, "M~0 (one actuator)");
    rel(e.m_eff[0][0], 2088.89, 1e-6, "M~0 = 2088.89 kg");
    rel(e.f_eff[0], -8829.0, 1e-9, "f~0 (one actuator)");
    rel(c1.equilibrium_forces(THETA0)[0], 8829.0, 1e-9, "f_s1^eq");
    assert_eq!(e.s[1], 0.0);
    assert_eq!(e.m_eff[1][1], 0.0);

    let c2 = CraneData::paper(2);
    let e = c2.eval(THETA0, [0.0; 2], [0.0; 2]);
    rel(e.s[1], 0.433_012_701_892_219_3, 1e-12, "s2,0");
    rel(e.a[1][0], -0.25, 1e-12, "A_i,21");
    rel(e.a[1][1], 0.25, 1e-12, "A_i,22");
    rel(e.m_eff[0][0], M0, 1e-6, "M~0 11 (two actuators)");
    rel(e.m_eff[1][1], 400.0, 1e-6, "M~0 22 (two actuators)");
    abs(e.m_eff[0][1], 0.0, 1e-9, "M~0 12");
    abs(e.m_eff[1][0], 0.0, 1e-9, "M~0 21");
    rel(e.f_eff[0], -8829.0, 1e-9, "f~0 1 (two actuators)");
    abs(e.f_eff[1], 0.0, 1e-9, "f~0 2 (two actuators)");
    let f = c2.equilibrium_forces(THETA0);
    rel(f[0], 8829.0, 1e-9, "f_s1^eq (two actuators)");
    abs(f[1], 0.0, 1e-9, "f_s2^eq");
}

/// At a moving state: s̈ = W (λ + f̃), ṡ = A_i v, and s̈ is the time derivative of ṡ along the
/// motion (which checks Ȧ_i v), for both cranes.
#[test]
fn interface_kinematics_at_a_moving_state() {
    for p in [1, 2] {
        let c = CraneData::paper(p);
        let q = [0.7, 4.3];
        let v = [0.8, -1.3];
        let lambda = [5000.0, -700.0];
        let e = c.eval(q, v, lambda);
        let lam = if p == 2 { lambda } else { [lambda[0], 0.0] };
        for j in 0..p {
            let want = e.w[j][0] * (lam[0] + e.f_eff[0]) + e.w[j][1] * (lam[1] + e.f_eff[1]);
            rel(e.sdd[j], want, 1e-10, "sdd = W (lambda + f~)");
        }
        // W M~ = I.
        for j in 0..p {
            for k in 0..p {
                let wm: f64 = (0..p).map(|i| e.w[j][i] * e.m_eff[i][k]).sum();
                abs(wm, f64::from(u8::from(j == k)), 1e-12, "W M~");
            }
        }
        // Central differences of s and sd along a fine RK4 motion.
        let dt = 1e-5;
        let at = |h: f64| {
            let (mut qq, mut vv) = (q, v);
            if h != 0.0 {
                c.rk4(&mut qq, &mut vv, lambda, h);
            }
            c.eval(qq, vv, lambda)
        };
        let (plus, minus) = (at(dt), at(-dt));
        for j in 0..p {
            rel(
                (plus.s[j] - minus.s[j]) / (2.0 * dt),
                e.sd[j],
                1e-8,
                "sd = ds/dt",
            );
            rel(
                (plus.sd[j] - minus.sd[j]) / (2.0 * dt),
                e.sdd[j],
                1e-8,
                "sdd = d(sd)/dt",
            );
        }
    }
}

#[test]
fn symplectic_euler_step_by_hand() {
    let c = CraneData::paper(2);
    let (q, v, lambda, h) = ([0.6, 4.6], [0.1, -0.2], [9000.0, 50.0], 0.01);
    let acc = c.eval(q, v, lambda).accel;
    let v1 = [v[0] + h * acc[0], v[1] + h * acc[1]];
    let q1 = [q[0] + h * v1[0], q[1] + h * v1[1]];
    let (mut qq, mut vv) = (q, v);
    c.symplectic_euler(&mut qq, &mut vv, lambda, h);
    assert_eq!((qq, vv), (q1, v1));
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

unsafe fn ready(ints: &[(u32, i32)], reals: &[(u32, f64)]) -> *mut c_void {
    let table = Table::new(Crane::NAME, Crane.variables()).expect("table");
    let tok = CString::new(table.token).expect("token");
    let cb = callbacks();
    let c = fmi2Instantiate(c"crane".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    for &(vr, x) in ints {
        assert_eq!(fmi2SetInteger(c, &vr, 1, &x), OK);
    }
    for &(vr, x) in reals {
        assert_eq!(fmi2SetReal(c, &vr, 1, &x), OK);
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

#[test]
fn fmu_outputs_at_t0_and_directional_derivatives_equal_the_mobility() {
    for p in [1, 2] {
        unsafe {
            let c = ready(&[(ACTUATORS, p)], &[]);
            let v = get(
                c,
                &[S1, SD1, SDD1, M11, M12, M22, FT1, FT2, F1_EQ, F2_EQ, S2],
            );
            rel(v[0], 0.5, 1e-12, "s1");
            abs(v[1], 0.0, 0.0, "sd1");
            abs(v[2], 0.0, 1e-9, "sdd1 with f1 = 8829 N");
            rel(v[3], M0, 1e-6, "M11");
            abs(v[4], 0.0, 1e-9, "M12");
            rel(v[6], -8829.0, 1e-9, "ft1");
            rel(v[8], 8829.0, 1e-9, "f1_eq");
            abs(v[9], 0.0, 1e-9, "f2_eq");
            if p == 2 {
                rel(v[5], 400.0, 1e-6, "M22");
                abs(v[7], 0.0, 1e-9, "ft2");
                rel(v[10], 0.433_012_701_892_219_3, 1e-12, "s2");
            } else {
                assert_eq!((v[5], v[7], v[10]), (0.0, 0.0, 0.0));
            }
            // Move away from t0 so that W is full, then compare the directional derivatives
            // with W = M~^-1 from the outputs.
            let f = [7000.0, 300.0];
            assert_eq!(fmi2SetReal(c, [F1, F2].as_ptr(), 2, f.as_ptr()), OK);
            for k in 0..20 {
                assert_eq!(fmi2DoStep(c, k as f64 * 0.01, 0.01, 1), OK);
            }
            let m = get(c, &[M11, M12, M22]);
            let w = if p == 2 {
                let det = m[0] * m[2] - m[1] * m[1];
                [[m[2] / det, -m[1] / det], [-m[1] / det, m[0] / det]]
            } else {
                [[1.0 / m[0], 0.0], [0.0, 0.0]]
            };
            if p == 2 {
                assert!(m[1].abs() > 1.0, "M12 = {} should be off zero by now", m[1]);
            }
            let unknowns = [SDD1, SDD2];
            let knowns = [F1, F2];
            for (k, kn) in knowns.iter().enumerate() {
                let mut out = [0.0; 2];
                assert_eq!(
                    fmi2GetDirectionalDerivative(
                        c,
                        unknowns.as_ptr(),
                        2,
                        kn,
                        1,
                        &1.0,
                        out.as_mut_ptr()
                    ),
                    OK
                );
                for j in 0..2 {
                    abs(out[j], w[j][k], 1e-12 * w[0][0].abs(), "d sdd / d f = W");
                }
            }
            // And the feedthrough: sdd = W (f + f~).
            let v = get(c, &[SDD1, SDD2, FT1, FT2]);
            let fe = [v[2], v[3]];
            for j in 0..p as usize {
                let want = w[j][0] * (f[0] + fe[0]) + w[j][1] * (f[1] + fe[1]);
                abs(v[j], want, 1e-9 * want.abs().max(1.0), "sdd = W (f + f~)");
            }
            fmi2FreeInstance(c);
        }
    }
}

#[test]
fn fmu_stays_at_rest_with_the_equilibrium_forces() {
    for (p, integrator) in [(1, 0), (2, 0), (1, 1)] {
        unsafe {
            let c = ready(&[(ACTUATORS, p), (INTEGRATOR, integrator)], &[]);
            // The equilibrium force (8829.0 N up to rounding) of the FMU itself. Under a
            // constant force (no hydraulic stiffness) the rest position is a statically unstable
            // equilibrium: rounding errors grow (to ~3e-9 rad in 10 s), so check the 2 s of rest
            // of the paper's manoeuvre.
            let feq = get(c, &[F1_EQ, F2_EQ]);
            rel(feq[0], 8829.0, 1e-12, "f1_eq");
            assert_eq!(fmi2SetReal(c, [F1, F2].as_ptr(), 2, feq.as_ptr()), OK);
            let n = if integrator == 0 { 200 } else { 20 };
            for k in 0..n {
                assert_eq!(fmi2DoStep(c, k as f64 * 0.01, 0.01, 1), OK);
            }
            let v = get(c, &[THETA1, THETA2, OMEGA1, OMEGA2, S1, XR, YR]);
            abs(v[0], THETA0[0], 1e-9, "theta1 at rest");
            abs(v[1], THETA0[1], 1e-9, "theta2 at rest");
            abs(v[2], 0.0, 1e-9, "omega1 at rest");
            abs(v[3], 0.0, 1e-9, "omega2 at rest");
            abs(v[4], 0.5, 1e-9, "s1 at rest");
            abs(v[5], 0.75_f64.sqrt(), 1e-9, "xR at rest");
            abs(v[6], 0.0, 1e-9, "yR at rest");
            fmi2FreeInstance(c);
        }
    }
}

#[test]
fn fmu_integrators_agree_and_substeps_divide_the_step() {
    unsafe {
        // Free fall with a small force: the symplectic Euler solution with h = 1 ms approaches
        // the RK4 solution (first order), and h divides the communication step.
        let run = |integrator: i32, h: f64, steps: usize, dt: f64| {
            let c = ready(&[(INTEGRATOR, integrator)], &[(H, h)]);
            let f = [4000.0, 0.0];
            assert_eq!(fmi2SetReal(c, [F1, F2].as_ptr(), 2, f.as_ptr()), OK);
            for k in 0..steps {
                assert_eq!(fmi2DoStep(c, k as f64 * dt, dt, 1), OK);
            }
            let v = get(c, &[THETA1, THETA2, OMEGA1, OMEGA2]);
            fmi2FreeInstance(c);
            v
        };
        let rk = run(1, 0.0, 20, 0.01);
        let euler_fine = run(0, 1e-3, 20, 0.01);
        let euler_same = run(0, 0.0, 200, 1e-3);
        for i in 0..4 {
            abs(
                euler_fine[i],
                euler_same[i],
                1e-12,
                "h = 1 ms vs 1 ms doSteps",
            );
            abs(
                euler_fine[i],
                rk[i],
                0.05 * rk[i].abs().max(0.1),
                "Euler vs RK4",
            );
        }
        assert!(rk[0] < THETA0[0] - 0.01, "the crane falls: {rk:?}");
    }
}

#[test]
fn reference_rests_until_t_a_and_moves_after() {
    let r = monolithic_reference(1, 2.2, 5e-5).expect("reference");
    let s0 = r[0].s[0];
    rel(s0, 0.5, 1e-12, "s1,0");
    for x in r.iter().filter(|x| x.t <= 2.0) {
        abs(x.s[0], s0, 1e-9, "s1 at rest");
        abs(x.f[0], 8829.0, 1e-4, "f1 at rest");
        abs(x.theta[1], THETA0[1], 1e-9, "theta2 at rest");
    }
    let last = r.last().expect("samples");
    abs(last.t, 2.2, 1e-12, "end time");
    assert!(
        last.s[0] > s0 + 1e-4,
        "the actuator extends after t_a: s1(2.2) = {}",
        last.s[0]
    );
    rel(r[0].kappa[0], 0.454346, 1e-6, "kappa0");
}

#[test]
fn reference_is_step_size_independent_and_finite_for_both_cranes() {
    for p in [1, 2] {
        let t_end = 6.5;
        let fine = Setup::paper(p)
            .and_then(|s| s.run(t_end, 2.5e-5, 1000))
            .expect("fine");
        let coarse = Setup::paper(p)
            .and_then(|s| s.run(t_end, 5e-5, 500))
            .expect("coarse");
        assert_eq!(fine.len(), coarse.len());
        for (a, b) in fine.iter().zip(&coarse) {
            abs(a.t, b.t, 1e-9, "sample times");
            for j in 0..p {
                abs(a.s[j], b.s[j], 1e-6, "s with dt = 0.025 vs 0.05 ms");
                abs(a.f[j], b.f[j], 1.0, "f with dt = 0.025 vs 0.05 ms");
            }
            abs(a.r[0], b.r[0], 1e-6, "xR");
        }
        let last = coarse.last().expect("samples");
        assert!(last.s.iter().chain(&last.f).all(|x| x.is_finite()));
    }
}
