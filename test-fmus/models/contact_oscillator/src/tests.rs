//! Tests through the exported C functions (callable from Rust inside this crate).

use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr::{null, null_mut};
use std::sync::Arc;

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;

fn table() -> Table {
    Table::new(ContactOscillator::NAME, ContactOscillator.variables()).expect("valid table")
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

/// An initialised FMI 2 instance with the given parameters set.
struct Fmu(*mut c_void);

impl Fmu {
    fn new(params: &[(u32, f64)]) -> Fmu {
        unsafe {
            let tok = token();
            let cb = callbacks();
            let c = fmi2Instantiate(c"contact".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
            assert!(!c.is_null());
            for &(vr, x) in params {
                assert_eq!(fmi2SetReal(c, [vr].as_ptr(), 1, [x].as_ptr()), OK);
            }
            assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
            assert_eq!(fmi2EnterInitializationMode(c), OK);
            assert_eq!(fmi2ExitInitializationMode(c), OK);
            Fmu(c)
        }
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

    fn set(&self, vr: u32, x: f64) {
        unsafe { assert_eq!(fmi2SetReal(self.0, [vr].as_ptr(), 1, [x].as_ptr()), OK) }
    }

    fn step(&self, t: f64, h: f64) {
        unsafe { assert_eq!(fmi2DoStep(self.0, t, h, 1), OK, "step at t = {t}") }
    }
}

impl Drop for Fmu {
    fn drop(&mut self) {
        unsafe { fmi2FreeInstance(self.0) }
    }
}

/// Runs `n` steps of `h` from t = 0 and returns x after each step.
fn trajectory(params: &[(u32, f64)], h: f64, n: usize) -> Vec<[f64; 3]> {
    let fmu = Fmu::new(params);
    (0..n)
        .map(|k| {
            fmu.step(k as f64 * h, h);
            let g = fmu.get(&[X, V, ENERGY]);
            [g[0], g[1], g[2]]
        })
        .collect()
}

#[test]
fn without_contact_it_follows_the_linear_closed_form() {
    // A constant force pulls the equilibrium to xe = -3 m: x stays in [-4, -2] (amplitude
    // ~1.0000025 m), where the contact force A exp(B x) is exactly 0.
    let (m, c, x0, v0) = (50.0, 1e5, -2.0, 0.1);
    let f = -3.0 * c;
    let fmu = Fmu::new(&[(V0, v0)]);
    fmu.set(F, f);
    let w = (c / m).sqrt();
    let xe = f / c;
    let h = 1e-3;
    let mut worst: f64 = 0.0;
    for k in 0..500 {
        fmu.step(k as f64 * h, h);
        let t = (k + 1) as f64 * h;
        let want_x = xe + (x0 - xe) * (w * t).cos() + v0 / w * (w * t).sin();
        let want_v = -(x0 - xe) * w * (w * t).sin() + v0 * (w * t).cos();
        let got = fmu.get(&[X, V, F_CONTACT]);
        assert_eq!(got[2], 0.0);
        worst = worst
            .max((got[0] - want_x).abs())
            .max((got[1] - want_v).abs() / w);
    }
    eprintln!("no contact: worst deviation from the closed form over 0.5 s: {worst:e} m");
    assert!(worst < 1e-8, "deviation {worst:e}");
}

/// Contacts of a trajectory sampled every `h`: (time, v before, v after) wherever v turns from
/// positive to negative within 1e-2 m of the wall.
fn contacts(traj: &[[f64; 3]], h: f64) -> Vec<(f64, f64, f64)> {
    traj.windows(2)
        .enumerate()
        .filter(|(_, w)| w[0][1] > 0.0 && w[1][1] < 0.0 && w[0][0] > -1e-2)
        .map(|(k, w)| ((k + 1) as f64 * h, w[0][1], w[1][1]))
        .collect()
}

#[test]
fn contact_rebound_is_elastic_and_the_result_converged() {
    let (h, n) = (1e-5, 10_000);
    let m = 50.0;
    let base = trajectory(&[], h, n);
    let tight = trajectory(&[(RTOL, 0.5e-10), (ATOL, 0.5e-12)], h, n);
    let found = contacts(&base, h);
    eprintln!("contacts (t, v before, v after): {found:?}");
    // Free flight to the wall, then a half period (pi sqrt(m/c) = 70.2 ms) on the other side.
    assert_eq!(found.len(), 2, "two contacts in 0.1 s: {found:?}");
    let (tc, vb, va) = found[0];
    assert!((tc - 0.0164).abs() < 2e-4, "first contact at {tc}");
    assert!(
        (found[1].0 - tc - 0.0702).abs() < 2e-4,
        "second contact at {}",
        found[1].0
    );
    // Energy just before and just after (the wall potential is negligible there, so |v| at the
    // wall is sqrt(2E/m)).
    let k = (tc / h).round() as usize;
    let (e_before, e_after) = (base[k - 2][2], base[k + 1][2]);
    let (wb, wa) = ((2.0 * e_before / m).sqrt(), (2.0 * e_after / m).sqrt());
    let rel = (wa - wb).abs() / wb;
    eprintln!(
        "v just before {vb}, just after {va}; |v| at the wall before {wb}, after {wa} \
         (relative change {rel:e}); energy {e_before} -> {e_after} J"
    );
    assert!(rel < 1e-6, "rebound not elastic: {rel:e}");
    assert!(va < 0.0 && (va.abs() - vb).abs() < 2.0 * 1e5 / m * h * 1.5);
    // Energy over the whole run (the wall potential is included in E).
    let (emin, emax) = base
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), r| (a.min(r[2]), b.max(r[2])));
    eprintln!("energy range over 0.1 s: [{emin}, {emax}] J");
    assert!((emax - emin) / emax < 2e-6);
    // Halving both tolerances changes x(t) by less than 1e-8 m.
    let dx = base
        .iter()
        .zip(&tight)
        .map(|(a, b)| (a[0] - b[0]).abs())
        .fold(0.0, f64::max);
    eprintln!("halving rtol and atol changes x by at most {dx:e} m");
    assert!(dx < 1e-8, "not converged: {dx:e}");
}

#[test]
fn state_restore_across_a_contact_is_bit_identical() {
    let h = 1e-5;
    let fmu = Fmu::new(&[]);
    for k in 0..1630 {
        fmu.step(k as f64 * h, h);
    }
    let run = |fmu: &Fmu| -> Vec<u64> {
        (1630..1660)
            .flat_map(|k| {
                fmu.step(k as f64 * h, h);
                fmu.get(&[X, V, A]).into_iter().map(f64::to_bits)
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
        let other = Fmu::new(&[]);
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

#[test]
fn partial_derivatives_match_finite_differences() {
    let table = Arc::new(table());
    let mut v = Values::new(table);
    // Close to the wall, where the contact term dominates da/dx.
    v.set_f64(X, -3e-7);
    v.set_f64(V, 50.0);
    v.set_f64(F, 2.0);
    v.set_f64(D, 3.0);
    let model = ContactOscillator;
    model.evaluate(&mut v, 0.0).expect("evaluate");
    for wrt in [X, V, F, M, C, D, CA, CB] {
        let x = v.f64(wrt);
        let dh = 1e-4 * x.abs().max(1e-6);
        let side = |delta: f64| {
            let mut w = v.clone();
            w.set_f64(wrt, x + delta);
            model.evaluate(&mut w, 0.0).expect("evaluate");
            [A, DER_V, DER_X, F_CONTACT].map(|o| w.f64(o))
        };
        let (p, m) = (side(dh), side(-dh));
        for (j, of) in [A, DER_V, DER_X, F_CONTACT].into_iter().enumerate() {
            let fd = (p[j] - m[j]) / (2.0 * dh);
            let an = model.partial(&v, 0.0, of, wrt).expect("analytic");
            assert!(
                (an - fd).abs() <= 1e-6 * an.abs().max(fd.abs()).max(1e-9),
                "d{of}/d{wrt}: analytic {an:e}, finite difference {fd:e}"
            );
        }
    }
    assert_eq!(model.partial(&v, 0.0, A, F), Some(1.0 / 50.0));
}

/// Output derivatives: x, v, a after a step of δ with a cubic input agree with their Taylor
/// polynomials built from the output derivatives at the step start to O(δ⁴) (the remainder
/// shrinks ~16× when δ halves; a wrong derivative of order ≤ 3 would leave an O(δ^k) error).
#[test]
fn output_derivatives_are_taylor_coefficients_of_the_trajectory() {
    // A soft wall (B = 10 1/m, A = -1e3 N) so the contact terms are smooth but significant.
    let params = [
        (CA, -1e3),
        (CB, 10.0),
        (X0, -0.1),
        (V0, 5.0),
        (D, 20.0),
        (RTOL, 1e-13),
        (ATOL, 1e-15),
    ];
    let fc = [3.0, -200.0, 5e3, 1e5];
    let remainder = |dt: f64| -> [f64; 3] {
        let fmu = Fmu::new(&params);
        fmu.set(F, fc[0]);
        unsafe {
            assert_eq!(
                fmi2SetRealInputDerivatives(
                    fmu.0,
                    [F, F, F].as_ptr(),
                    3,
                    [1, 2, 3].as_ptr(),
                    fc[1..].as_ptr()
                ),
                OK
            );
        }
        let now = fmu.get(&[X, V, A]);
        let mut d = [0.0; 9];
        let vrs = [X, X, X, V, V, V, A, A, A];
        let orders = [1, 2, 3, 1, 2, 3, 1, 2, 3];
        unsafe {
            assert_eq!(
                fmi2GetRealOutputDerivatives(
                    fmu.0,
                    vrs.as_ptr(),
                    9,
                    orders.as_ptr(),
                    d.as_mut_ptr()
                ),
                OK
            );
        }
        assert_eq!((d[0], d[1], d[3]), (now[1], now[2], now[2]));
        fmu.step(0.0, dt);
        let after = fmu.get(&[X, V, A]);
        let mut r = [0.0; 3];
        for i in 0..3 {
            let taylor =
                now[i] + dt * (d[3 * i] + dt * (d[3 * i + 1] / 2.0 + dt * d[3 * i + 2] / 6.0));
            r[i] = after[i] - taylor;
        }
        r
    };
    let (r1, r2) = (remainder(1e-3), remainder(0.5e-3));
    eprintln!("Taylor remainders at dt = 1e-3: {r1:?}, at 5e-4: {r2:?}");
    for i in 0..3 {
        let ratio = r1[i] / r2[i];
        assert!(
            (11.0..24.0).contains(&ratio),
            "output {i}: remainder ratio {ratio} (not O(dt^4))"
        );
    }
}

/// A whole contact inside one short communication step that starts 37 µm from the wall (what
/// an adaptive master with 1 µs macro steps produces): the integrator's starting-step heuristic
/// sees exp(B x) overflow and must still start with a usable step.
#[test]
fn a_contact_within_one_short_step_from_near_the_wall() {
    let v0 = 126.61376480053023;
    let fmu = Fmu::new(&[(X0, -3.7204811761111745e-5), (V0, v0)]);
    fmu.set(F, 4362.991159568444);
    unsafe {
        assert_eq!(
            fmi2SetRealInputDerivatives(
                fmu.0,
                [F, F, F].as_ptr(),
                3,
                [1, 2, 3].as_ptr(),
                [8041894.47339954, -2531983480.435794, 888971604407.4496].as_ptr()
            ),
            OK
        );
    }
    fmu.step(0.0, 1e-6);
    let got = fmu.get(&[X, V]);
    assert!(got[0] < -1e-5, "x = {}", got[0]);
    assert!((got[1] + v0).abs() < 1e-6 * v0, "v = {} after {v0}", got[1]);
}
