//! The adaptive Dormand–Prince integrator ([`fmu_kit::Integrator::DormandPrince`]) and array
//! continuous states (FMI 3 arrays whose derivative is an array of the same dimensions).

use std::ffi::{c_void, CString};
use std::ptr::{null, null_mut};

use fmu_kit::{fmi2, Event, Integrator, Model, Table, Values, Variable};

const X: u32 = 1;
const DER_X: u32 = 2;
const Y: [u32; 3] = [3, 4, 5];
const RTOL: u32 = 6;
const RATES: [f64; 3] = [1.0, 10.0, 100.0];

/// Three decays x_i' = -k_i x_i in one array state, copied to scalar outputs.
#[derive(Default)]
struct Decay;

impl Model for Decay {
    const NAME: &'static str = "Decay";

    fn variables(&self) -> Vec<Variable> {
        let mut v = vec![
            Variable::float64(X, "x").dims(&[3]).start(vec![1.0; 3]),
            Variable::float64(DER_X, "der(x)")
                .dims(&[3])
                .derivative_of(X),
            Variable::float64(RTOL, "rtol").parameter().start(1e-10),
        ];
        for (i, &vr) in Y.iter().enumerate() {
            v.push(
                Variable::float64(vr, &format!("y{i}"))
                    .output()
                    .depends_on(&[]),
            );
        }
        v
    }
    fn evaluate(&self, v: &mut Values, _t: f64) -> Result<(), String> {
        let x = v.get::<f64>(X).to_vec();
        for i in 0..3 {
            v.get_mut::<f64>(DER_X)[i] = -RATES[i] * x[i];
            v.set_f64(Y[i], x[i]);
        }
        Ok(())
    }
    fn integrator(&self, v: &Values) -> Integrator {
        Integrator::DormandPrince {
            rtol: v.f64(RTOL),
            atol: 1e-12,
            max_step: f64::INFINITY,
        }
    }
}

const H: u32 = 1;
const V: u32 = 2;
const DER_H: u32 = 3;
const DER_V: u32 = 4;
const G: f64 = 9.81;
const E: f64 = 0.7;

/// A bouncing ball integrated adaptively, with a state event.
#[derive(Default)]
struct Ball;

impl Model for Ball {
    const NAME: &'static str = "AdaptiveBall";
    const NUM_EVENT_INDICATORS: usize = 1;

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(H, "h")
                .output()
                .start(1.0)
                .depends_on(&[]),
            Variable::float64(V, "v")
                .output()
                .start(0.0)
                .depends_on(&[]),
            Variable::float64(DER_H, "der(h)").derivative_of(H),
            Variable::float64(DER_V, "der(v)").derivative_of(V),
        ]
    }
    fn evaluate(&self, v: &mut Values, _t: f64) -> Result<(), String> {
        v.set_f64(DER_H, v.f64(V));
        v.set_f64(DER_V, -G);
        Ok(())
    }
    fn event_indicators(&self, v: &Values, _t: f64, z: &mut [f64]) {
        z[0] = v.f64(H);
    }
    fn event(&self, v: &mut Values, _t: f64, ev: &Event) -> Result<(), String> {
        if ev.state_events == [0] && v.f64(V) < 0.0 {
            v.set_f64(H, 0.0);
            v.set_f64(V, -E * v.f64(V));
        }
        Ok(())
    }
    fn internal_step(&self, _v: &Values) -> f64 {
        0.05
    }
    fn integrator(&self, _v: &Values) -> Integrator {
        Integrator::DormandPrince {
            rtol: 1e-10,
            atol: 1e-12,
            max_step: f64::INFINITY,
        }
    }
}

fn token<M: Model>() -> CString {
    CString::new(
        Table::new(M::NAME, M::default().variables())
            .expect("table")
            .token,
    )
    .expect("token")
}

unsafe fn fmi2_ready<M: Model>(reals: &[(u32, f64)]) -> *mut c_void {
    let cb = fmi2::CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let tok = token::<M>();
    let c = fmi2::instantiate::<M>(c"a".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    for &(vr, x) in reals {
        assert_eq!(fmi2::set_real::<M>(c, [vr].as_ptr(), 1, [x].as_ptr()), 0);
    }
    assert_eq!(fmi2::setup_experiment::<M>(c, 0, 0.0, 0.0, 0, 0.0), 0);
    assert_eq!(fmi2::enter_initialization_mode::<M>(c), 0);
    assert_eq!(fmi2::exit_initialization_mode::<M>(c), 0);
    c
}

#[test]
fn array_states_follow_their_exponentials_and_land_on_the_communication_point() {
    unsafe {
        let c = fmi2_ready::<Decay>(&[]);
        // Steps of different sizes; each ends exactly on its communication point.
        let mut t = 0.0;
        for h in [0.013, 0.25, 0.737] {
            assert_eq!(fmi2::do_step::<Decay>(c, t, h, 1), 0);
            t += h;
        }
        let mut y = [0.0; 3];
        assert_eq!(fmi2::get_real::<Decay>(c, Y.as_ptr(), 3, y.as_mut_ptr()), 0);
        for i in 0..3 {
            let want = (-RATES[i] * t).exp();
            assert!(
                (y[i] - want).abs() <= 1e-9 * want + 1e-11,
                "x{i}({t}) = {} vs {want}",
                y[i]
            );
        }
        fmi2::free_instance::<Decay>(c);
    }
}

#[test]
fn bad_tolerances_fail_the_step_without_panicking() {
    unsafe {
        let c = fmi2_ready::<Decay>(&[(RTOL, -1.0)]);
        assert_eq!(fmi2::do_step::<Decay>(c, 0.0, 0.1, 1), 3);
        fmi2::free_instance::<Decay>(c);
    }
}

#[test]
fn array_states_are_fmi3_continuous_states_only() {
    let table = Table::new(Decay::NAME, Decay.variables()).expect("table");
    let x3 = fmu_kit::xml::fmi3::<Decay>(&table);
    let x2 = fmu_kit::xml::fmi2::<Decay>(&table);
    assert!(
        x3.contains("<ContinuousStateDerivative valueReference=\"2\""),
        "{x3}"
    );
    assert!(!x2.contains("<Derivatives>"), "{x2}");
}

#[test]
fn state_events_are_located_with_the_adaptive_integrator() {
    unsafe {
        let c = fmi2_ready::<Ball>(&[]);
        let mut t = 0.0;
        for _ in 0..6 {
            assert_eq!(fmi2::do_step::<Ball>(c, t, 0.1, 0), 0);
            t += 0.1;
        }
        let mut hv = [0.0; 2];
        assert_eq!(
            fmi2::get_real::<Ball>(c, [H, V].as_ptr(), 2, hv.as_mut_ptr()),
            0
        );
        let ti = (2.0 / G).sqrt();
        let (v0, s) = (E * G * ti, t - ti);
        let (h, v) = (v0 * s - G * s * s / 2.0, v0 - G * s);
        assert!(
            (hv[0] - h).abs() < 1e-9 && (hv[1] - v).abs() < 1e-9,
            "{hv:?} vs {h}, {v}"
        );
        fmi2::free_instance::<Ball>(c);
    }
}
