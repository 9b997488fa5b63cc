//! Tests through the exported C functions (callable from Rust inside this crate).

use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr::{null, null_mut};
use std::sync::Arc;

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;
const G0: f64 = 9.81;
const Q: f64 = std::f64::consts::FRAC_PI_4;

fn table() -> Table {
    Table::new(PendulumLink::NAME, PendulumLink.variables()).expect("valid table")
}

fn token() -> CString {
    CString::new(table().token).expect("token")
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

/// An FMI 2 instance.
struct Fmu(*mut c_void);

impl Fmu {
    fn instantiate() -> Fmu {
        unsafe {
            let tok = token();
            let cb = callbacks();
            let c = fmi2Instantiate(c"link".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
            assert!(!c.is_null());
            Fmu(c)
        }
    }

    /// Sets the parameters and initialises; the status of fmi2ExitInitializationMode.
    fn try_init(&self, grounded: bool, params: &[(u32, f64)]) -> c_int {
        unsafe {
            let g = c_int::from(grounded);
            assert_eq!(
                fmi2SetBoolean(self.0, [GROUNDED].as_ptr(), 1, [g].as_ptr()),
                OK
            );
            for &(vr, x) in params {
                assert_eq!(fmi2SetReal(self.0, [vr].as_ptr(), 1, [x].as_ptr()), OK);
            }
            assert_eq!(fmi2SetupExperiment(self.0, 0, 0.0, 0.0, 0, 0.0), OK);
            let st = fmi2EnterInitializationMode(self.0);
            if st != OK {
                return st;
            }
            fmi2ExitInitializationMode(self.0)
        }
    }

    /// An initialised instance.
    fn new(grounded: bool, params: &[(u32, f64)]) -> Fmu {
        let f = Fmu::instantiate();
        assert_eq!(f.try_init(grounded, params), OK);
        f
    }

    fn get(&self, vrs: &[u32]) -> Vec<f64> {
        let mut out = vec![0.0; vrs.len()];
        unsafe {
            assert_eq!(
                fmi2GetReal(self.0, vrs.as_ptr(), vrs.len(), out.as_mut_ptr()),
                OK
            );
        }
        out
    }

    fn set(&self, vrs: &[u32], x: &[f64]) {
        unsafe { assert_eq!(fmi2SetReal(self.0, vrs.as_ptr(), vrs.len(), x.as_ptr()), OK) }
    }

    /// Sets the force and its derivatives of orders 1..=3 (Taylor coefficients at the step
    /// start) for the next step.
    fn set_force(&self, fx: [f64; 4], fy: [f64; 4]) {
        self.set(&[FX, FY], &[fx[0], fy[0]]);
        let vrs = [FX, FX, FX, FY, FY, FY];
        let orders = [1, 2, 3, 1, 2, 3];
        let vals = [fx[1], fx[2], fx[3], fy[1], fy[2], fy[3]];
        unsafe {
            assert_eq!(
                fmi2SetRealInputDerivatives(
                    self.0,
                    vrs.as_ptr(),
                    6,
                    orders.as_ptr(),
                    vals.as_ptr()
                ),
                OK
            );
        }
    }

    fn step(&self, t: f64, h: f64) {
        unsafe { assert_eq!(fmi2DoStep(self.0, t, h, 1), OK, "step at t = {t}") }
    }

    fn directional(&self, unknowns: &[u32], knowns: &[u32], seed: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; unknowns.len()];
        unsafe {
            assert_eq!(
                fmi2GetDirectionalDerivative(
                    self.0,
                    unknowns.as_ptr(),
                    unknowns.len(),
                    knowns.as_ptr(),
                    knowns.len(),
                    seed.as_ptr(),
                    out.as_mut_ptr()
                ),
                OK
            );
        }
        out
    }
}

impl Drop for Fmu {
    fn drop(&mut self) {
        unsafe { fmi2FreeInstance(self.0) }
    }
}

/// Classical RK4 of `y' = f(y)` over `n` steps of `h`.
fn rk4<const N: usize>(f: impl Fn(&[f64; N]) -> [f64; N], y: &mut [f64; N], h: f64, n: usize) {
    let add = |a: &[f64; N], s: f64, b: &[f64; N]| -> [f64; N] {
        std::array::from_fn(|i| a[i] + s * b[i])
    };
    for _ in 0..n {
        let k1 = f(y);
        let k2 = f(&add(y, h / 2.0, &k1));
        let k3 = f(&add(y, h / 2.0, &k2));
        let k4 = f(&add(y, h, &k3));
        for i in 0..N {
            y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
    }
}

#[test]
fn grounded_pendulum_matches_the_physical_pendulum_and_conserves_energy() {
    // A non-default inertia as well as the uniform rod.
    for (jc, phi0, omega0) in [(0.0, Q, 0.0), (0.3, -0.2, 3.0)] {
        let (m, l) = (1.0, 1.0);
        let jrod = if jc == 0.0 { m * l * l / 12.0 } else { jc };
        let jp = jrod + m * l * l / 4.0;
        let fmu = Fmu::new(true, &[(J, jc), (PHI0, phi0), (OMEGA0, omega0)]);
        let energy = |phi: f64, w: f64| 0.5 * jp * w * w + m * G0 * 0.5 * l * phi.sin();
        let e0 = energy(phi0, omega0);
        let h = 1e-2;
        let mut reference = [phi0, omega0];
        let (mut worst, mut worst_e): (f64, f64) = (0.0, 0.0);
        for k in 0..100 {
            fmu.step(k as f64 * h, h);
            rk4(
                |y: &[f64; 2]| [y[1], -(m * G0 * l / 2.0) * y[0].cos() / jp],
                &mut reference,
                1e-5,
                1000,
            );
            let got = fmu.get(&[PHI, OMEGA, ENERGY, X, Y, PX, PY, VX, VY]);
            worst = worst
                .max((got[0] - reference[0]).abs())
                .max((got[1] - reference[1]).abs());
            worst_e = worst_e
                .max((got[2] - e0).abs() / e0.abs())
                .max((energy(got[0], got[1]) - e0).abs() / e0.abs());
            // Centre, coupling point and its velocity from φ, ω.
            let (s, c) = got[0].sin_cos();
            let close = |a: f64, b: f64| (a - b).abs() < 1e-15;
            assert!(close(got[3], 0.5 * l * c) && close(got[4], 0.5 * l * s));
            assert!(close(got[5], l * c) && close(got[6], l * s));
            assert!(close(got[7], -l * got[1] * s) && close(got[8], l * got[1] * c));
        }
        eprintln!(
            "grounded (J = {jc}, phi0 = {phi0}, omega0 = {omega0}): worst deviation from RK4 \
             at 1e-5 over 1 s {worst:e}, energy drift {worst_e:e} (relative)"
        );
        assert!(worst < 1e-9, "deviation {worst:e}");
        assert!(worst_e < 1e-10, "energy drift {worst_e:e}");
    }
}

#[test]
fn free_body_falls_freely() {
    let (l, phi0, omega0) = (1.0, 0.3, 2.0);
    let attach = [0.5, -0.25];
    let attach_v = [0.1, 0.2];
    let fmu = Fmu::new(
        false,
        &[
            (PHI0, phi0),
            (OMEGA0, omega0),
            (ATTACH_X, attach[0]),
            (ATTACH_Y, attach[1]),
            (ATTACH_VX, attach_v[0]),
            (ATTACH_VY, attach_v[1]),
        ],
    );
    // Initial coupling point and velocity as given.
    let got = fmu.get(&[PX, PY, VX, VY]);
    for (a, b) in got
        .iter()
        .zip([attach[0], attach[1], attach_v[0], attach_v[1]])
    {
        assert!((a - b).abs() < 1e-15, "{got:?}");
    }
    let (s0, c0) = phi0.sin_cos();
    let x0 = [attach[0] + 0.5 * l * c0, attach[1] + 0.5 * l * s0];
    let v0 = [
        attach_v[0] - 0.5 * l * omega0 * s0,
        attach_v[1] + 0.5 * l * omega0 * c0,
    ];
    let h = 1e-2;
    let mut worst: f64 = 0.0;
    for k in 0..100 {
        fmu.step(k as f64 * h, h);
        let t = (k + 1) as f64 * h;
        let got = fmu.get(&[X, Y, PHI, OMEGA, PX, PY, AX, AY]);
        let phi = phi0 + omega0 * t;
        let want = [
            x0[0] + v0[0] * t,
            x0[1] + v0[1] * t - G0 * t * t / 2.0,
            phi,
            omega0,
        ];
        for i in 0..4 {
            worst = worst.max((got[i] - want[i]).abs());
        }
        // Near end, and its acceleration (gravity plus the centripetal part).
        let (s, c) = got[2].sin_cos();
        assert!((got[4] - (got[0] - 0.5 * l * c)).abs() < 1e-14);
        assert!((got[5] - (got[1] - 0.5 * l * s)).abs() < 1e-14);
        let w2 = omega0 * omega0 * 0.5 * l;
        assert!((got[6] - w2 * c).abs() < 1e-12);
        assert!((got[7] - (-G0 + w2 * s)).abs() < 1e-12);
    }
    eprintln!("free fall: worst deviation over 1 s {worst:e}");
    assert!(worst < 1e-12, "deviation {worst:e}");
}

/// The monolithic double pendulum of Sect. 4.2 (rods, m = l = 1, J = m l²/12) in the angles
/// (Lagrange's equations) with RK4; returns the force link 1 exerts on link 2 at the joint.
mod double_pendulum {
    use super::G0;

    pub const M: f64 = 1.0;
    pub const L: f64 = 1.0;
    const JC: f64 = M * L * L / 12.0;

    /// (α1, α2) for y = (φ1, φ2, ω1, ω2).
    pub fn accelerations(y: &[f64; 4]) -> [f64; 2] {
        let [p1, p2, w1, w2] = *y;
        let k = M * L * (L / 2.0);
        let (s, c) = (p1 - p2).sin_cos();
        let m11 = JC + M * L * L / 4.0 + M * L * L;
        let m12 = k * c;
        let m22 = JC + M * L * L / 4.0;
        let r1 = -k * s * w2 * w2 - (M * G0 * L / 2.0 + M * G0 * L) * p1.cos();
        let r2 = k * s * w1 * w1 - M * G0 * (L / 2.0) * p2.cos();
        let det = m11 * m22 - m12 * m12;
        [(m22 * r1 - m12 * r2) / det, (m11 * r2 - m12 * r1) / det]
    }

    pub fn rhs(y: &[f64; 4]) -> [f64; 4] {
        let a = accelerations(y);
        [y[2], y[3], a[0], a[1]]
    }

    /// The joint force on link 2: m2 (c̈2 − g).
    pub fn joint_force(y: &[f64; 4]) -> [f64; 2] {
        let [p1, p2, w1, w2] = *y;
        let [a1, a2] = accelerations(y);
        let (s1, c1) = p1.sin_cos();
        let (s2, c2) = p2.sin_cos();
        let cdd = [
            L * (-a1 * s1 - w1 * w1 * c1) + L / 2.0 * (-a2 * s2 - w2 * w2 * c2),
            L * (a1 * c1 - w1 * w1 * s1) + L / 2.0 * (a2 * c2 - w2 * w2 * s2),
        ];
        [M * cdd[0], M * (cdd[1] + G0)]
    }
}

/// Taylor coefficients [u, u', u'', u'''] at the first of four equally spaced samples `dt`
/// apart (the cubic through them).
fn cubic_taylor(u: [f64; 4], dt: f64) -> [f64; 4] {
    let d1 = u[1] - u[0];
    let d2 = u[2] - 2.0 * u[1] + u[0];
    let d3 = u[3] - 3.0 * u[2] + 3.0 * u[1] - u[0];
    [
        u[0],
        (d1 - d2 / 2.0 + d3 / 3.0) / dt,
        (d2 - d3) / (dt * dt),
        d3 / dt.powi(3),
    ]
}

/// Both links driven by the monolithic solution's joint force (a cubic per macro step H through
/// samples at T, T + H/3, T + 2H/3, T + H) over 1 s: the worst deviation of (φ, ω) of both
/// links from the monolithic solution and the worst joint residuals |Q1 − P2| on position,
/// velocity and acceleration level at the macro points.
fn double_pendulum_driven(h: f64) -> (f64, [f64; 3]) {
    use double_pendulum::{joint_force, rhs};
    let link1 = Fmu::new(true, &[(PHI0, Q)]);
    let link2 = Fmu::new(false, &[(PHI0, -Q)]);
    // Link 2 starts attached to link 1's far end (the defaults of attach_x, attach_y).
    let (q1, p2) = (link1.get(&[PX, PY]), link2.get(&[PX, PY]));
    assert!((q1[0] - p2[0]).abs() < 1e-15 && (q1[1] - p2[1]).abs() < 1e-15);
    let mut y = [Q, -Q, 0.0, 0.0];
    let steps = (1.0 / h).round() as usize;
    // RK4 steps of about 1.7e-5 s (global error ~1e-13).
    let sub = (h / 3.0 / 1.7e-5).ceil() as usize;
    let fine = h / 3.0 / sub as f64;
    let (mut worst, mut res): (f64, [f64; 3]) = (0.0, [0.0; 3]);
    for k in 0..steps {
        let mut samples = [joint_force(&y); 4];
        for s in samples.iter_mut().skip(1) {
            rk4(rhs, &mut y, fine, sub);
            *s = joint_force(&y);
        }
        let fx = cubic_taylor(samples.map(|s| s[0]), h / 3.0);
        let fy = cubic_taylor(samples.map(|s| s[1]), h / 3.0);
        link2.set_force(fx, fy);
        link1.set_force(fx.map(|c| -c), fy.map(|c| -c));
        let t = k as f64 * h;
        link1.step(t, h);
        link2.step(t, h);
        let a = link1.get(&[PHI, OMEGA, PX, PY, VX, VY, AX, AY]);
        let b = link2.get(&[PHI, OMEGA, PX, PY, VX, VY, AX, AY]);
        worst = [a[0] - y[0], b[0] - y[1], a[1] - y[2], b[1] - y[3]]
            .iter()
            .fold(worst, |w, d| w.max(d.abs()));
        for (lvl, r) in res.iter_mut().enumerate() {
            let i = 2 + 2 * lvl;
            *r = r.max((a[i] - b[i]).hypot(a[i + 1] - b[i + 1]));
        }
        // Link 1's far end accelerates as in the monolithic solution.
        let al = double_pendulum::accelerations(&y);
        let (s1, c1) = y[0].sin_cos();
        let want = [
            -al[0] * s1 - y[2] * y[2] * c1,
            al[0] * c1 - y[2] * y[2] * s1,
        ];
        let da = (a[6] - want[0]).hypot(a[7] - want[1]);
        res[2] = res[2].max(da);
    }
    eprintln!(
        "double pendulum over 1 s, H = {h:e}: worst |phi, omega - monolithic| {worst:e}; \
         joint residuals: position {:e}, velocity {:e}, acceleration {:e} (also vs monolithic)",
        res[0], res[1], res[2]
    );
    (worst, res)
}

/// The links driven by the exact joint force reproduce the monolithic double pendulum; what is
/// left is the error of the force's cubic within a macro step, O(H⁴) (16× smaller when H
/// halves), not a modelling error.
#[test]
fn double_pendulum_links_driven_by_the_exact_joint_force() {
    let (w1, r1) = double_pendulum_driven(1e-3);
    let (w2, r2) = double_pendulum_driven(5e-4);
    assert!(w1 < 1e-8 && w2 < 1e-9, "{w1:e}, {w2:e}");
    assert!(w1 / w2 > 12.0, "not O(H^4): {w1:e}, {w2:e}");
    assert!(r2[0] < 1e-10 && r2[1] < 1e-9 && r2[2] < 1e-8, "{r2:?}");
    for i in 0..3 {
        assert!(
            r1[i] / r2[i] > 10.0,
            "residual {i}: {:e}, {:e}",
            r1[i],
            r2[i]
        );
    }
}

/// d(a_Q)/dF: the grounded link's l²/(J + m l²/4) n nᵀ, the free link's
/// 1/m I + (l/2)²/J n nᵀ, through fmi2GetDirectionalDerivative and finite differences.
#[test]
fn coupling_point_mobility_has_its_closed_form() {
    let (m, l, phi) = (2.0, 1.5, 0.7);
    let jc = m * l * l / 12.0;
    for grounded in [true, false] {
        let fmu = Fmu::new(grounded, &[(M, m), (L, l), (PHI0, phi), (OMEGA0, 1.3)]);
        fmu.step(0.0, 1e-2);
        fmu.set(&[FX, FY], &[3.0, -4.0]);
        let phi_now = fmu.get(&[PHI])[0];
        let (s, c) = phi_now.sin_cos();
        let n_now = [-s, c];
        let (k, free) = if grounded {
            (l * l / (jc + m * l * l / 4.0), 0.0)
        } else {
            (l * l / 4.0 / jc, 1.0 / m)
        };
        let want = |i: usize, j: usize| k * n_now[i] * n_now[j] + if i == j { free } else { 0.0 };
        for (j, f) in [FX, FY].into_iter().enumerate() {
            let mut seed = [0.0; 2];
            seed[j] = 1.0;
            let dd = fmu.directional(&[AX, AY], &[FX, FY], &seed);
            let f0 = fmu.get(&[f])[0];
            fmu.set(&[f], &[f0 + 1e-3]);
            let plus = fmu.get(&[AX, AY]);
            fmu.set(&[f], &[f0 - 1e-3]);
            let minus = fmu.get(&[AX, AY]);
            fmu.set(&[f], &[f0]);
            for i in 0..2 {
                let fd = (plus[i] - minus[i]) / 2e-3;
                assert!(
                    (dd[i] - want(i, j)).abs() < 1e-14,
                    "grounded {grounded}: d a{i}/d F{j} = {} vs {}",
                    dd[i],
                    want(i, j)
                );
                assert!((fd - want(i, j)).abs() < 1e-9, "fd {fd} vs {}", want(i, j));
            }
        }
    }
}

/// Every analytic partial derivative (w.r.t. states and inputs) against central differences
/// of `evaluate`, for both kinds of link.
#[test]
fn partial_derivatives_match_finite_differences() {
    let table = Arc::new(table());
    let model = PendulumLink;
    let unknowns = [
        PX, PY, VX, VY, AX, AY, PHI, OMEGA, X, Y, DER_PHI, DER_OMEGA, XC, YC, VXC, VYC, DER_XC,
        DER_YC, DER_VXC, DER_VYC,
    ];
    let knowns = [PHI, OMEGA, XC, YC, VXC, VYC, FX, FY];
    for grounded in [true, false] {
        let mut v = Values::new(table.clone());
        v.set_bool(GROUNDED, grounded);
        v.set_f64(J, 0.2);
        for (vr, x) in [
            (PHI, 0.4),
            (OMEGA, -1.7),
            (XC, 0.3),
            (YC, -0.8),
            (VXC, 0.9),
            (VYC, 1.1),
            (FX, 2.5),
            (FY, -6.0),
        ] {
            v.set_f64(vr, x);
        }
        model.evaluate(&mut v, 0.0).expect("evaluate");
        for wrt in knowns {
            let x = v.f64(wrt);
            let dh = 1e-5;
            let side = |delta: f64| {
                let mut w = v.clone();
                w.set_f64(wrt, x + delta);
                model.evaluate(&mut w, 0.0).expect("evaluate");
                unknowns.map(|o| w.f64(o))
            };
            let (p, m) = (side(dh), side(-dh));
            for (i, of) in unknowns.into_iter().enumerate() {
                let fd = (p[i] - m[i]) / (2.0 * dh);
                let an = model.partial(&v, 0.0, of, wrt).expect("analytic");
                assert!(
                    (an - fd).abs() <= 1e-8 * an.abs().max(1.0),
                    "grounded {grounded}: d{of}/d{wrt}: analytic {an:e}, finite difference {fd:e}"
                );
            }
        }
        // Parameters are left to the kit's finite differences.
        assert_eq!(model.partial(&v, 0.0, AX, M), None);
    }
}

/// Output derivatives of orders 1, 2: the outputs after a step δ with a cubic force agree with
/// their second-order Taylor polynomials to O(δ³) (the remainder shrinks ~8× when δ halves).
#[test]
fn output_derivatives_are_taylor_coefficients_of_the_trajectory() {
    let outs = [PX, PY, VX, VY, AX, AY, PHI, OMEGA, X, Y];
    for grounded in [true, false] {
        let fx = [3.0, -20.0, 50.0, 400.0];
        let fy = [-2.0, 15.0, -80.0, 300.0];
        let remainder = |dt: f64| -> Vec<f64> {
            let fmu = Fmu::new(grounded, &[(PHI0, 0.3), (OMEGA0, 2.0), (J, 0.2)]);
            fmu.set_force(fx, fy);
            let now = fmu.get(&outs);
            let vrs: Vec<u32> = outs.iter().flat_map(|&o| [o, o]).collect();
            let orders: Vec<c_int> = outs.iter().flat_map(|_| [1, 2]).collect();
            let mut d = vec![0.0; vrs.len()];
            unsafe {
                assert_eq!(
                    fmi2GetRealOutputDerivatives(
                        fmu.0,
                        vrs.as_ptr(),
                        vrs.len(),
                        orders.as_ptr(),
                        d.as_mut_ptr()
                    ),
                    OK
                );
            }
            // First derivatives of positions are the velocity outputs, of φ the rate.
            for (i, j) in [(0, 2), (2, 3), (4, 4), (6, 5)] {
                assert!((d[i] - now[j]).abs() <= 1e-14 * now[j].abs().max(1.0));
            }
            assert_eq!(d[12], now[7]);
            fmu.step(0.0, dt);
            let after = fmu.get(&outs);
            (0..outs.len())
                .map(|i| after[i] - (now[i] + dt * (d[2 * i] + dt * d[2 * i + 1] / 2.0)))
                .collect()
        };
        let (r1, r2) = (remainder(1e-3), remainder(0.5e-3));
        for i in 0..outs.len() {
            let ratio = r1[i] / r2[i];
            assert!(
                (6.0..10.0).contains(&ratio),
                "grounded {grounded}: output {}: remainders {:e}, {:e}, ratio {ratio} \
                 (not O(dt^3))",
                outs[i],
                r1[i],
                r2[i]
            );
        }
    }
}

#[test]
fn state_round_trip_and_serialisation_are_bit_identical() {
    for grounded in [true, false] {
        let h = 1e-2;
        let params = [(PHI0, -0.4), (OMEGA0, 1.0)];
        let fmu = Fmu::new(grounded, &params);
        let force = |k: usize| {
            let t = k as f64 * h;
            (
                [t.sin(), t.cos(), -t.sin(), -t.cos()],
                [2.0 * t, 2.0, 0.0, 0.0],
            )
        };
        for k in 0..10 {
            let (fx, fy) = force(k);
            fmu.set_force(fx, fy);
            fmu.step(k as f64 * h, h);
        }
        let run = |fmu: &Fmu| -> Vec<u64> {
            (10..30)
                .flat_map(|k| {
                    let (fx, fy) = force(k);
                    fmu.set_force(fx, fy);
                    fmu.step(k as f64 * h, h);
                    fmu.get(&[PHI, OMEGA, PX, PY, VX, VY, AX, AY, X, Y])
                        .into_iter()
                        .map(f64::to_bits)
                })
                .collect()
        };
        unsafe {
            let mut state = null_mut();
            assert_eq!(fmi2GetFMUstate(fmu.0, &mut state), OK);
            let first = run(&fmu);
            assert_eq!(fmi2SetFMUstate(fmu.0, state), OK);
            assert_eq!(run(&fmu), first);
            let mut size = 0;
            assert_eq!(fmi2SerializedFMUstateSize(fmu.0, state, &mut size), OK);
            let mut buf = vec![0 as c_char; size];
            assert_eq!(
                fmi2SerializeFMUstate(fmu.0, state, buf.as_mut_ptr(), size),
                OK
            );
            let other = Fmu::new(grounded, &params);
            let mut restored = null_mut();
            assert_eq!(
                fmi2DeSerializeFMUstate(other.0, buf.as_ptr(), size, &mut restored),
                OK
            );
            assert_eq!(fmi2SetFMUstate(other.0, restored), OK);
            assert_eq!(run(&other), first);
            assert_eq!(fmi2FreeFMUstate(fmu.0, &mut state), OK);
            assert_eq!(fmi2FreeFMUstate(other.0, &mut restored), OK);
        }
    }
}

#[test]
fn bad_parameters_are_errors_not_panics() {
    for (vr, x) in [(M, 0.0), (L, 0.0), (RTOL, 0.0), (J, f64::NAN)] {
        let fmu = Fmu::instantiate();
        let st = unsafe {
            let ok = fmi2SetReal(fmu.0, [vr].as_ptr(), 1, [x].as_ptr());
            if ok != OK {
                // Rejected on set (e.g. below min): also fine.
                continue;
            }
            assert_eq!(fmi2SetupExperiment(fmu.0, 0, 0.0, 0.0, 0, 0.0), OK);
            fmi2EnterInitializationMode(fmu.0)
        };
        let st = if st == OK {
            unsafe { fmi2ExitInitializationMode(fmu.0) }
        } else {
            st
        };
        assert!(st >= 3, "vr {vr} = {x}: status {st}");
    }
}

#[test]
fn model_structure_declares_the_feedthrough() {
    for version in [2, 3] {
        let xml = fmu_kit::model_description::<PendulumLink>(version).expect("xml");
        assert!(xml.contains("name=\"ax\""), "{xml}");
        assert!(xml.contains("name=\"grounded\""));
    }
    let t = table();
    for vr in [AX, AY] {
        let i = t.index_of(vr).expect("ax");
        let deps = t.dependencies_of(i);
        assert!(deps.contains(&FX) && deps.contains(&FY));
    }
    for vr in [PX, PY, VX, VY, PHI, OMEGA, X, Y] {
        let i = t.index_of(vr).expect("output");
        let deps = t.dependencies_of(i);
        assert!(!deps.contains(&FX) && !deps.contains(&FY));
    }
}
