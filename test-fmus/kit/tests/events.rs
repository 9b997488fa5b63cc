//! State events with reinit and time events, handled inside the step (FMI 2, FMI 3 without
//! event mode) and through Event Mode (FMI 3 with `eventModeUsed`).

use std::ffi::{c_void, CString};
use std::ptr::{null, null_mut};

use fmu_kit::{fmi2, fmi3, Event, Model, Table, Values, Variable};

const H: u32 = 1;
const V: u32 = 2;
const DER_H: u32 = 3;
const DER_V: u32 = 4;
const G: f64 = 9.81;
const E: f64 = 0.7;

/// A bouncing ball: h'' = -g, at h = 0 falling: v := -e v, h := 0.
#[derive(Default)]
struct Ball;

impl Model for Ball {
    const NAME: &'static str = "Ball";
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
}

const COUNT: u32 = 1;

/// A stair: an Int32 counter that increments at t = 1, 2, 3, ...
#[derive(Default)]
struct Stair;

impl Model for Stair {
    const NAME: &'static str = "Stair";
    const HAS_TIME_EVENTS: bool = true;

    fn variables(&self) -> Vec<Variable> {
        vec![Variable::int32(COUNT, "counter")
            .output()
            .discrete()
            .start(0i32)
            .depends_on(&[])]
    }
    fn evaluate(&self, _v: &mut Values, _t: f64) -> Result<(), String> {
        Ok(())
    }
    fn next_time_event(&self, v: &Values, _t: f64) -> Option<f64> {
        Some(f64::from(v.i32(COUNT) + 1))
    }
    fn event(&self, v: &mut Values, _t: f64, ev: &Event) -> Result<(), String> {
        if ev.time_event {
            v.set_i32(COUNT, v.i32(COUNT) + 1);
        }
        Ok(())
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

fn impact_time() -> f64 {
    (2.0 / G).sqrt()
}

/// (h, v) at `t` after the first and before the second impact.
fn ball_after_impact(t: f64) -> (f64, f64) {
    let v0 = E * G * impact_time();
    let s = t - impact_time();
    (v0 * s - G * s * s / 2.0, v0 - G * s)
}

unsafe fn fmi2_ball() -> *mut c_void {
    let cb = fmi2::CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let tok = token::<Ball>();
    let c = fmi2::instantiate::<Ball>(c"b".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(fmi2::setup_experiment::<Ball>(c, 0, 0.0, 0.0, 0, 0.0), 0);
    assert_eq!(fmi2::enter_initialization_mode::<Ball>(c), 0);
    assert_eq!(fmi2::exit_initialization_mode::<Ball>(c), 0);
    c
}

#[test]
fn fmi2_state_event_is_located_and_reinitialised_inside_the_step() {
    unsafe {
        let c = fmi2_ball();
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
        let (h, v) = ball_after_impact(t);
        assert!(
            (hv[0] - h).abs() < 1e-9 && (hv[1] - v).abs() < 1e-9,
            "{hv:?} vs {h}, {v}"
        );
        fmi2::free_instance::<Ball>(c);
    }
}

#[test]
fn fmi3_event_mode_returns_early_at_the_event() {
    unsafe {
        let tok = token::<Ball>();
        let c = fmi3::instantiate_co_simulation::<Ball>(
            c"b3".as_ptr(),
            tok.as_ptr(),
            null(),
            false,
            false,
            true,
            true,
            null(),
            0,
            null_mut(),
            None,
            None,
        );
        assert!(!c.is_null());
        assert_eq!(
            fmi3::enter_initialization_mode::<Ball>(c, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(fmi3::exit_initialization_mode::<Ball>(c), 0);
        // With eventModeUsed the instance is in Event Mode after initialization.
        let (mut a, mut b, mut d, mut e, mut f, mut nt) = (true, true, true, true, true, 0.0);
        assert_eq!(
            fmi3::update_discrete_states::<Ball>(
                c, &mut a, &mut b, &mut d, &mut e, &mut f, &mut nt
            ),
            0
        );
        assert_eq!(fmi3::enter_step_mode::<Ball>(c), 0);
        let (mut ehn, mut term, mut early, mut lst) = (false, false, false, 0.0);
        assert_eq!(
            fmi3::do_step::<Ball>(c, 0.0, 0.6, true, &mut ehn, &mut term, &mut early, &mut lst),
            0
        );
        assert!(ehn && early && !term);
        assert!((lst - impact_time()).abs() < 1e-11, "{lst}");
        assert_eq!(fmi3::enter_event_mode::<Ball>(c), 0);
        assert_eq!(
            fmi3::update_discrete_states::<Ball>(
                c, &mut a, &mut b, &mut d, &mut e, &mut f, &mut nt
            ),
            0
        );
        assert!(e, "valuesOfContinuousStatesChanged");
        assert_eq!(fmi3::enter_step_mode::<Ball>(c), 0);
        assert_eq!(
            fmi3::do_step::<Ball>(
                c,
                lst,
                0.6 - lst,
                true,
                &mut ehn,
                &mut term,
                &mut early,
                &mut lst
            ),
            0
        );
        assert!(!ehn && !early && lst == 0.6);
        let mut hv = [0.0; 2];
        assert_eq!(
            fmi3::get_float64::<Ball>(c, [H, V].as_ptr(), 2, hv.as_mut_ptr(), 2),
            0
        );
        let (h, v) = ball_after_impact(0.6);
        assert!(
            (hv[0] - h).abs() < 1e-9 && (hv[1] - v).abs() < 1e-9,
            "{hv:?} vs {h}, {v}"
        );
        // Event Mode without eventModeUsed is refused.
        fmi3::free_instance::<Ball>(c);
    }
}

#[test]
fn time_events_are_hit_exactly_in_both_versions() {
    unsafe {
        let tok = token::<Stair>();
        // FMI 3 without event mode: handled inside the step.
        let c = fmi3::instantiate_co_simulation::<Stair>(
            c"s".as_ptr(),
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
        assert_eq!(
            fmi3::enter_initialization_mode::<Stair>(c, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(fmi3::exit_initialization_mode::<Stair>(c), 0);
        assert_eq!(fmi3::enter_event_mode::<Stair>(c), 3);
        let (mut ehn, mut term, mut early, mut lst) = (false, false, false, 0.0);
        let mut t = 0.0;
        let mut counts = Vec::new();
        for _ in 0..35 {
            assert_eq!(
                fmi3::do_step::<Stair>(c, t, 0.1, true, &mut ehn, &mut term, &mut early, &mut lst),
                0
            );
            t = lst;
            let mut n = [0i32];
            assert_eq!(
                fmi3::get_int32::<Stair>(c, [COUNT].as_ptr(), 1, n.as_mut_ptr(), 1),
                0
            );
            counts.push(n[0]);
        }
        // Steps end at 0.1, 0.2, ...; the step ending at ~1.0 includes the event at 1.0.
        assert_eq!(counts[8], 0);
        assert_eq!(counts[9], 1);
        assert_eq!(counts[34], 3);
        fmi3::free_instance::<Stair>(c);

        // FMI 3 with event mode: the step stops at t = 1 exactly.
        let c = fmi3::instantiate_co_simulation::<Stair>(
            c"s".as_ptr(),
            tok.as_ptr(),
            null(),
            false,
            false,
            true,
            true,
            null(),
            0,
            null_mut(),
            None,
            None,
        );
        assert_eq!(
            fmi3::enter_initialization_mode::<Stair>(c, false, 0.0, 0.0, false, 0.0),
            0
        );
        assert_eq!(fmi3::exit_initialization_mode::<Stair>(c), 0);
        let (mut a, mut b, mut d, mut e, mut f, mut nt) = (true, true, true, true, false, 0.0);
        assert_eq!(
            fmi3::update_discrete_states::<Stair>(
                c, &mut a, &mut b, &mut d, &mut e, &mut f, &mut nt
            ),
            0
        );
        assert!(f && nt == 1.0);
        assert_eq!(fmi3::enter_step_mode::<Stair>(c), 0);
        assert_eq!(
            fmi3::do_step::<Stair>(c, 0.0, 1.5, true, &mut ehn, &mut term, &mut early, &mut lst),
            0
        );
        assert!(ehn && early && lst == 1.0);
        assert_eq!(fmi3::enter_event_mode::<Stair>(c), 0);
        assert_eq!(
            fmi3::update_discrete_states::<Stair>(
                c, &mut a, &mut b, &mut d, &mut e, &mut f, &mut nt
            ),
            0
        );
        assert!(f && nt == 2.0);
        let mut n = [0i32];
        assert_eq!(
            fmi3::get_int32::<Stair>(c, [COUNT].as_ptr(), 1, n.as_mut_ptr(), 1),
            0
        );
        assert_eq!(n[0], 1);
        fmi3::free_instance::<Stair>(c);
    }
}

#[test]
fn both_descriptions_come_from_one_table() {
    let x2 = fmu_kit::model_description::<Ball>(2).expect("fmi2");
    let x3 = fmu_kit::model_description::<Ball>(3).expect("fmi3");
    assert!(
        x3.contains("hasEventMode=\"true\"") && x3.contains("mightReturnEarlyFromDoStep=\"true\"")
    );
    assert!(x2.contains("<Derivatives>") && x3.contains("<ContinuousStateDerivative"));
    let x3s = fmu_kit::model_description::<Stair>(3).expect("fmi3");
    assert!(x3s.contains("<Int32 name=\"counter\""));
}
