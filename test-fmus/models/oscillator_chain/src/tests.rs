//! Tests through the exported C functions (callable from Rust inside this crate).

use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr::{null, null_mut};

use super::*;
use fmu_kit::fmi2::CallbackFunctions;
use fmu_kit::Table;

const OK: c_int = 0;

fn table() -> Table {
    Table::new(OscillatorChain::NAME, OscillatorChain.variables()).expect("valid table")
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
    fn new(params: &[(u32, f64)], ints: &[(u32, c_int)]) -> Fmu {
        unsafe {
            let tok = token();
            let cb = callbacks();
            let c = fmi2Instantiate(c"chain".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
            assert!(!c.is_null());
            for &(vr, x) in params {
                assert_eq!(fmi2SetReal(c, [vr].as_ptr(), 1, [x].as_ptr()), OK);
            }
            for &(vr, k) in ints {
                assert_eq!(fmi2SetInteger(c, [vr].as_ptr(), 1, [k].as_ptr()), OK);
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

/// Steps `count` times by `h` from `t0` with the given constant end forces.
fn run(fmu: &Fmu, t0: f64, h: f64, count: usize) {
    for k in 0..count {
        fmu.step(t0 + k as f64 * h, h);
    }
}

#[test]
fn a_chain_of_one_is_a_single_free_mass() {
    let (m, x0, v0, fl, fr) = (0.1, 0.01, 3.0, 2.0, -0.5);
    let fmu = Fmu::new(&[(X0, x0), (V0, v0)], &[(N, 1)]);
    fmu.set(F_LEFT, fl);
    fmu.set(F_RIGHT, fr);
    let h = 1e-3;
    run(&fmu, 0.0, h, 50);
    let t = 50.0 * h;
    let a = (fl + fr) / m;
    let got = fmu.get(&[X_FIRST, V_FIRST, A_FIRST, X_LAST, V_LAST, A_LAST]);
    let want = [x0 + v0 * t + 0.5 * a * t * t, v0 + a * t, a];
    for i in 0..3 {
        assert!(
            (got[i] - want[i]).abs() < 1e-10 * want[i].abs().max(1.0),
            "{i}: {} vs {}",
            got[i],
            want[i]
        );
        assert_eq!(got[i], got[i + 3], "first and last are the same mass");
    }
}

#[test]
fn a_free_linear_chain_conserves_momentum_and_energy() {
    // d = C = D = 0: a conservative linear chain with the paper's random-looking start.
    let params = [
        (D_LIN, 0.0),
        (C_CUB, 0.0),
        (D_CUB, 0.0),
        (X0_SPREAD, 1e-3),
        (V0_SPREAD, 10.0),
        (RTOL, 1e-10),
        (ATOL, 1e-12),
    ];
    let fmu = Fmu::new(&params, &[(N, 20), (SEED, 7)]);
    let start = fmu.get(&[MOMENTUM, ENERGY, X_FIRST, X_LAST]);
    assert!(start[2] != start[3], "the initial states are spread");
    let (mut dp, mut de): (f64, f64) = (0.0, 0.0);
    for k in 0..100 {
        fmu.step(k as f64 * 1e-4, 1e-4);
        let now = fmu.get(&[MOMENTUM, ENERGY]);
        dp = dp.max((now[0] - start[0]).abs());
        de = de.max((now[1] - start[1]).abs() / start[1]);
    }
    eprintln!(
        "p = {:e} N s, E = {:e} J: over 0.01 s |Δp| <= {dp:e}, |ΔE|/E <= {de:e}",
        start[0], start[1]
    );
    // Momentum: every internal force pair cancels exactly in the stages, so only rounding.
    assert!(dp < 1e-12, "momentum drift {dp:e}");
    assert!(de < 1e-7, "energy drift {de:e}");
}

#[test]
fn damping_and_cubic_terms_still_conserve_momentum() {
    let params = [(X0_SPREAD, 1e-3), (V0_SPREAD, 10.0)];
    let fmu = Fmu::new(&params, &[(N, 8)]);
    let p0 = fmu.get(&[MOMENTUM])[0];
    let e0 = fmu.get(&[ENERGY])[0];
    run(&fmu, 0.0, 1e-4, 20);
    let now = fmu.get(&[MOMENTUM, ENERGY]);
    eprintln!(
        "damped chain: p {p0:e} -> {:e}, E {e0:e} -> {:e}",
        now[0], now[1]
    );
    assert!((now[0] - p0).abs() < 1e-11);
    assert!(now[1] < e0, "damping dissipates energy");
}

#[test]
fn an_impulse_transfers_df_times_dt_of_momentum() {
    let (df, dt, m) = (1.0, 2.5e-3, 0.1);
    let params = [
        (IMP_DF, df),
        (IMP_T0, 1e-3),
        (IMP_PERIOD, 0.0),
        (IMP_DT, dt),
    ];
    let fmu = Fmu::new(&params, &[(N, 1)]);
    run(&fmu, 0.0, 1e-3, 10);
    let v = fmu.get(&[V_FIRST])[0];
    eprintln!("velocity after the impulse: {v} (expected {})", df * dt / m);
    assert!((v - df * dt / m).abs() < 1e-9, "{v}");
    // A three-mass chain with the impulse on the middle mass gains the same momentum.
    let fmu = Fmu::new(&params, &[(N, 3), (IMP_MASS, 2)]);
    run(&fmu, 0.0, 1e-3, 10);
    let p = fmu.get(&[MOMENTUM])[0];
    assert!((p - df * dt).abs() < 1e-9, "{p}");
}

#[test]
fn a_mass_bounces_elastically_off_its_contact() {
    // One free mass moving at 1 m/s towards the wall A exp(B x) (A = -1e-2 N, B = 5e5 1/m).
    let fmu = Fmu::new(&[(X0, -1e-4), (V0, 1.0)], &[(N, 1), (CON_MASS, 1)]);
    run(&fmu, 0.0, 1e-5, 100);
    let got = fmu.get(&[X_FIRST, V_FIRST]);
    eprintln!("after the bounce: x = {}, v = {}", got[0], got[1]);
    assert!((got[1] + 1.0).abs() < 1e-6, "v = {}", got[1]);
    assert!(got[0] < -5e-4);
}

#[test]
fn directional_derivatives_match_finite_differences() {
    let outputs = [X_FIRST, V_FIRST, A_FIRST, X_LAST, V_LAST, A_LAST];
    for n in [1, 5] {
        let fmu = Fmu::new(&[(X0_SPREAD, 1e-4), (V0_SPREAD, 1.0)], &[(N, n)]);
        fmu.set(F_LEFT, 0.3);
        fmu.set(F_RIGHT, -0.2);
        run(&fmu, 0.0, 1e-5, 3);
        for (j, wrt) in [F_LEFT, F_RIGHT].into_iter().enumerate() {
            let mut dd = [0.0; 6];
            unsafe {
                assert_eq!(
                    fmi2GetDirectionalDerivative(
                        fmu.0,
                        outputs.as_ptr(),
                        6,
                        [wrt].as_ptr(),
                        1,
                        [1.0].as_ptr(),
                        dd.as_mut_ptr()
                    ),
                    OK
                );
            }
            let u = [0.3, -0.2][j];
            let h = 1e-3;
            fmu.set(wrt, u + h);
            let plus = fmu.get(&outputs);
            fmu.set(wrt, u - h);
            let minus = fmu.get(&outputs);
            fmu.set(wrt, u);
            for i in 0..6 {
                let fd = (plus[i] - minus[i]) / (2.0 * h);
                assert!(
                    (dd[i] - fd).abs() <= 1e-6 * dd[i].abs().max(1.0),
                    "n = {n}: d out {i} / d in {j}: {} vs {fd}",
                    dd[i]
                );
            }
        }
    }
}

#[test]
fn state_restore_and_serialisation_continue_bit_identically() {
    // Positions in [-2e-3, 0] m keep the contacts (B = 5e5 1/m) at moderate forces.
    let params = [
        (X0, -1e-3),
        (X0_SPREAD, 1e-3),
        (V0_SPREAD, 10.0),
        (IMP_DF, 1e3),
        (IMP_PERIOD, 2e-3),
    ];
    let ints = [(N, 12), (IMP_MASS, 4), (CON_MASS, 2), (CON_STRIDE, 5)];
    let fmu = Fmu::new(&params, &ints);
    run(&fmu, 0.0, 1e-4, 10);
    let cont = |fmu: &Fmu| -> Vec<u64> {
        (10..20)
            .flat_map(|k| {
                fmu.set(F_LEFT, 0.1 * k as f64);
                fmu.step(k as f64 * 1e-4, 1e-4);
                fmu.get(&[X_FIRST, V_LAST, A_LAST, ENERGY])
                    .into_iter()
                    .map(f64::to_bits)
            })
            .collect()
    };
    unsafe {
        let mut state = null_mut();
        assert_eq!(fmi2GetFMUstate(fmu.0, &mut state), OK);
        let first = cont(&fmu);
        assert_eq!(fmi2SetFMUstate(fmu.0, state), OK);
        assert_eq!(cont(&fmu), first);
        let mut size = 0;
        assert_eq!(fmi2SerializedFMUstateSize(fmu.0, state, &mut size), OK);
        let mut buf = vec![0 as c_char; size];
        assert_eq!(
            fmi2SerializeFMUstate(fmu.0, state, buf.as_mut_ptr(), size),
            OK
        );
        let other = Fmu::new(&params, &ints);
        let mut restored = null_mut();
        assert_eq!(
            fmi2DeSerializeFMUstate(other.0, buf.as_ptr(), size, &mut restored),
            OK
        );
        assert_eq!(fmi2SetFMUstate(other.0, restored), OK);
        assert_eq!(cont(&other), first);
        assert_eq!(fmi2FreeFMUstate(fmu.0, &mut state), OK);
        assert_eq!(fmi2FreeFMUstate(other.0, &mut restored), OK);
    }
}

#[test]
fn a_bad_size_is_refused() {
    unsafe {
        let tok = token();
        let cb = callbacks();
        let c = fmi2Instantiate(c"chain".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
        assert_eq!(fmi2SetInteger(c, [N].as_ptr(), 1, [1001].as_ptr()), 3);
        assert_eq!(fmi2SetInteger(c, [N].as_ptr(), 1, [0].as_ptr()), 3);
        // A contact mass beyond n fails initialisation instead of panicking.
        assert_eq!(fmi2SetInteger(c, [CON_MASS].as_ptr(), 1, [11].as_ptr()), OK);
        assert_eq!(fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0), OK);
        assert_eq!(fmi2EnterInitializationMode(c), 3);
        fmi2FreeInstance(c);
    }
}

/// The values after `initialize` of a chain of `n` with the given parameters (set directly).
fn initialized(n: i32, seed: i32, params: &[(u32, f64)]) -> fmu_kit::Values {
    let mut v = fmu_kit::Values::new(std::sync::Arc::new(table()));
    v.set_i32(N, n);
    v.set_i32(SEED, seed);
    for &(vr, x) in params {
        v.set_f64(vr, x);
    }
    let cx = fmu_kit::Context {
        instance_name: "chain".into(),
        fmi_version: 3,
        resource_dir: None,
        start_time: 0.0,
    };
    OscillatorChain
        .initialize(&mut v, &cx)
        .expect("the chain initializes");
    v
}

/// The model documentation's recipe, written out again: (mass, ΔF) of the random impulses and
/// the masses of the random contacts, 0-based.
fn documented_draws(n: usize, seed: i32, fi: f64, fc: f64) -> (Vec<(usize, f64)>, Vec<usize>) {
    let mut state: u64;
    let mut next = |s: &mut u64| {
        *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let s = seed as u32 as u64;
    let shuffle = |state: &mut u64, count: usize, next: &mut dyn FnMut(&mut u64) -> u64| {
        let mut list: Vec<usize> = (0..n).collect();
        let mut out = Vec::new();
        for j in 0..count {
            let k = j + (next(state) % (n - j) as u64) as usize;
            list.swap(j, k);
            let u = 2.0 * ((next(state) >> 11) as f64 / 2f64.powi(53)) - 1.0;
            out.push((list[j], u));
        }
        out
    };
    state = s + (1 << 32);
    let impulses = shuffle(&mut state, (fi * n as f64).round() as usize, &mut next)
        .into_iter()
        .map(|(mass, u)| (mass, (1e6 + 4e6 * u.abs()).copysign(u)))
        .collect();
    // The contact stream draws no amplitudes: one draw per pick.
    state = s + (2 << 32);
    let mut list: Vec<usize> = (0..n).collect();
    let mut contacts = Vec::new();
    for j in 0..(fc * n as f64).round() as usize {
        let k = j + (next(&mut state) % (n - j) as u64) as usize;
        list.swap(j, k);
        contacts.push(list[j]);
    }
    (impulses, contacts)
}

#[test]
fn random_impulses_and_contacts_follow_the_documented_draws() {
    for (n, seed) in [(1, 1), (10, 3), (52, 17), (53, -5), (1000, 2026)] {
        let (fi, fc) = (0.3, 0.1);
        let params = [
            (IMP_FRACTION, fi),
            (CON_FRACTION, fc),
            (X0_SPREAD, 1e-3),
            (V0_SPREAD, 10.0),
        ];
        let v = initialized(n, seed, &params);
        let n = n as usize;
        let (impulses, contacts) = documented_draws(n, seed, fi, fc);
        assert_eq!(v.i32(IMP_COUNT) as usize, (0.3 * n as f64).round() as usize);
        assert_eq!(v.i32(IMP_COUNT) as usize, impulses.len());
        assert_eq!(v.i32(CON_COUNT) as usize, contacts.len());
        let amplitude = v.get::<f64>(IMP_DF_OF);
        let on = v.get::<i32>(CON_ON);
        // Distinct masses, within the chain, with the documented amplitudes.
        assert_eq!(
            amplitude.iter().filter(|a| **a != 0.0).count(),
            impulses.len(),
            "n = {n}: every impulse on a mass of its own"
        );
        for &(mass, df) in &impulses {
            assert_eq!(amplitude[mass], df, "n = {n}, mass {}", mass + 1);
            assert!((1e6..=5e6).contains(&df.abs()), "{df}");
        }
        let sum: f64 = impulses.iter().map(|(_, df)| df).sum();
        assert_eq!(v.f64(IMP_DF_SUM), sum);
        assert_eq!(on.iter().filter(|c| **c == 1).count(), contacts.len());
        let free = initialized(n as i32, seed, &params[2..]);
        let xs = v.get::<f64>(X).iter().zip(free.get::<f64>(X));
        for (i, ((&x, &x_free), &on)) in xs.zip(on).enumerate() {
            if contacts.contains(&i) {
                assert_eq!(on, 1);
                assert_eq!(x, -x_free.abs(), "a contact mass starts out of its wall");
            } else {
                assert_eq!(on, 0);
                assert_eq!(x, x_free, "mass {}", i + 1);
            }
        }
        if n == 1000 {
            let negative = impulses.iter().filter(|(_, df)| *df < 0.0).count();
            assert!(
                (100..200).contains(&negative),
                "{negative} of 300 impulses pull"
            );
        }
    }
}

#[test]
fn the_draws_depend_on_the_seed_alone() {
    let params = [(IMP_FRACTION, 0.3), (CON_FRACTION, 0.1)];
    let a = initialized(200, 11, &params);
    let b = initialized(200, 11, &params);
    let c = initialized(200, 12, &params);
    assert!(a == b, "the same seed draws the same");
    assert!(
        a.get::<f64>(IMP_DF_OF) != c.get::<f64>(IMP_DF_OF),
        "another seed draws other impulses"
    );
    assert!(a.get::<i32>(CON_ON) != c.get::<i32>(CON_ON));
}

#[test]
fn random_impulses_transfer_the_sum_of_df_times_dt() {
    // Amplitudes of ±[1, 5] N keep the chain soft enough for a quick test.
    let dt = 2.5e-3;
    let params = [
        (IMP_FRACTION, 0.3),
        (IMP_DF_MIN, 1.0),
        (IMP_DF_MAX, 5.0),
        (IMP_T0, 1e-3),
        (IMP_PERIOD, 0.0),
        (IMP_DT, dt),
    ];
    let fmu = Fmu::new(&params, &[(N, 10), (SEED, 4)]);
    let mut count = 0;
    unsafe {
        assert_eq!(
            fmi2GetInteger(fmu.0, [IMP_COUNT].as_ptr(), 1, &mut count),
            OK
        );
    }
    assert_eq!(count, 3);
    let sum = fmu.get(&[IMP_DF_SUM])[0];
    assert!(sum != 0.0);
    run(&fmu, 0.0, 1e-3, 10);
    let p = fmu.get(&[MOMENTUM])[0];
    eprintln!(
        "momentum after the impulses: {p} N s (expected {})",
        sum * dt
    );
    assert!((p - sum * dt).abs() < 1e-9, "{p} vs {}", sum * dt);
}

#[test]
fn a_fraction_outside_zero_to_one_is_refused() {
    for vr in [IMP_FRACTION, CON_FRACTION] {
        let mut v = fmu_kit::Values::new(std::sync::Arc::new(table()));
        v.set_f64(vr, 1.5);
        let cx = fmu_kit::Context {
            instance_name: "chain".into(),
            fmi_version: 2,
            resource_dir: None,
            start_time: 0.0,
        };
        let e = OscillatorChain.initialize(&mut v, &cx).unwrap_err();
        assert!(e.contains("must be in [0, 1]"), "{e}");
    }
}
