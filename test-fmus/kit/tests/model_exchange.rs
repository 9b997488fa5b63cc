//! Model Exchange through the kit's C layers (FMI 2 and FMI 3): the state machine, derivatives
//! from `Model::evaluate`, state events measured against the indicators of the last event
//! iteration, time events announced through nextEventTime, termination requests, FMU states,
//! and misuse refused with Error and a log message.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr::{null, null_mut};
use std::sync::Mutex;

use fmu_kit::{fmi2, fmi3, Event, Model, StepFailure, Table, Values, Variable};

const OK: c_int = 0;
const ERROR: c_int = 3;

const H: u32 = 1;
const DER_H: u32 = 2;
const V: u32 = 3;
const DER_V: u32 = 4;
const G: u32 = 5;
const COUNT: u32 = 6;
const G_VALUE: f64 = 9.81;
/// Time events every PERIOD seconds (from the counter).
const PERIOD: f64 = 0.5;

/// A ball (h' = v, v' = -g, z = h, v := -v/2 at h = 0) with a counter incremented by time
/// events at t = PERIOD, 2 PERIOD, ...
#[derive(Default)]
struct Ball;

impl Model for Ball {
    const NAME: &'static str = "Ball";
    const MODEL_EXCHANGE: bool = true;
    const NUM_EVENT_INDICATORS: usize = 1;
    const EVENT_INDICATOR_VARIABLES: &'static [u32] = &[H];
    const HAS_TIME_EVENTS: bool = true;

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(H, "h")
                .output()
                .start(1.0)
                .nominal(2.0)
                .depends_on(&[H]),
            Variable::float64(DER_H, "der(h)")
                .derivative_of(H)
                .depends_on(&[V]),
            Variable::float64(V, "v")
                .output()
                .start(0.0)
                .reinit()
                .depends_on(&[V]),
            Variable::float64(DER_V, "der(v)")
                .derivative_of(V)
                .depends_on(&[]),
            Variable::float64(G, "g").input().start(G_VALUE),
            Variable::int32(COUNT, "count")
                .output()
                .discrete()
                .start(0i32)
                .depends_on(&[]),
        ]
    }
    fn evaluate(&self, v: &mut Values, _t: f64) -> Result<(), String> {
        v.set_f64(DER_H, v.f64(V));
        v.set_f64(DER_V, -v.f64(G));
        Ok(())
    }
    fn event_indicators(&self, v: &Values, _t: f64, z: &mut [f64]) {
        z[0] = v.f64(H);
    }
    fn next_time_event(&self, v: &Values, _t: f64) -> Option<f64> {
        Some(f64::from(v.i32(COUNT) + 1) * PERIOD)
    }
    fn event(&self, v: &mut Values, _t: f64, ev: &Event) -> Result<(), String> {
        if ev.time_event {
            v.set_i32(COUNT, v.i32(COUNT) + 1);
        }
        if ev.state_events.contains(&0) && v.f64(V) < 0.0 {
            v.set_f64(H, 0.0);
            v.set_f64(V, -0.5 * v.f64(V));
        }
        Ok(())
    }
}

/// x' = 1; asks to terminate at t = STOP.
#[derive(Default)]
struct Stopper;
const X: u32 = 1;
const DER_X: u32 = 2;
const STOP: f64 = 0.75;

impl Model for Stopper {
    const NAME: &'static str = "MeStopper";
    const MODEL_EXCHANGE: bool = true;
    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(X, "x")
                .output()
                .start(0.0)
                .depends_on(&[X]),
            Variable::float64(DER_X, "der(x)").derivative_of(X),
        ]
    }
    fn evaluate(&self, v: &mut Values, _t: f64) -> Result<(), String> {
        v.set_f64(DER_X, 1.0);
        Ok(())
    }
    fn step_failure(&self, _v: &Values, t: f64, t_end: f64) -> Option<StepFailure> {
        (t < STOP && STOP <= t_end).then(|| StepFailure::termination(STOP, "done"))
    }
}

/// A Co-Simulation-only model.
#[derive(Default)]
struct CsOnly;

impl Model for CsOnly {
    const NAME: &'static str = "CsOnly";
    fn variables(&self) -> Vec<Variable> {
        vec![Variable::float64(X, "x")
            .output()
            .start(0.0)
            .depends_on(&[])]
    }
    fn evaluate(&self, _v: &mut Values, _t: f64) -> Result<(), String> {
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

/// Messages logged by the instances of a test (FMI 3 logger; the FMI 2 logger is variadic).
static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "C" fn log3(_env: *mut c_void, _st: c_int, _cat: *const c_char, msg: *const c_char) {
    let m = CStr::from_ptr(msg).to_string_lossy().into_owned();
    LOG.lock().unwrap_or_else(|e| e.into_inner()).push(m);
}

fn logged(what: &str) -> bool {
    LOG.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|m| m.contains(what))
}

unsafe fn fmi2_me<M: Model>(fmu_type: c_int) -> *mut c_void {
    let cb = fmi2::CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let tok = token::<M>();
    fmi2::instantiate::<M>(c"me2".as_ptr(), fmu_type, tok.as_ptr(), null(), &cb, 0, 0)
}

unsafe fn fmi3_me<M: Model>() -> *mut c_void {
    let tok = token::<M>();
    fmi3::instantiate_model_exchange::<M>(
        c"me3".as_ptr(),
        tok.as_ptr(),
        null(),
        false,
        false,
        null_mut(),
        Some(log3),
    )
}

/// The ball's state at time t of free flight from (h0, v0) at t0.
fn flight(h0: f64, v0: f64, t: f64) -> (f64, f64) {
    (h0 + v0 * t - 0.5 * G_VALUE * t * t, v0 - G_VALUE * t)
}

/// FMI 2 event iteration until no new discrete states are needed.
unsafe fn iterate2<M: Model>(c: *mut c_void) -> fmi2::EventInfo {
    let mut info = fmi2::EventInfo::default();
    for _ in 0..10 {
        assert_eq!(fmi2::new_discrete_states::<M>(c, &mut info), OK);
        if info.new_discrete_states_needed == 0 {
            return info;
        }
    }
    panic!("event iteration does not settle");
}

unsafe fn states2<M: Model>(c: *mut c_void, n: usize) -> Vec<f64> {
    let mut x = vec![f64::NAN; n];
    assert_eq!(fmi2::get_continuous_states::<M>(c, x.as_mut_ptr(), n), OK);
    x
}

#[test]
fn fmi2_ball_call_sequence_events_and_time_events() {
    unsafe {
        let c = fmi2_me::<Ball>(0);
        assert!(!c.is_null());
        // Before initialization: nominals only.
        let mut d = [0.0; 2];
        assert_eq!(fmi2::get_derivatives::<Ball>(c, d.as_mut_ptr(), 2), ERROR);
        assert_eq!(
            fmi2::get_nominals_of_continuous_states::<Ball>(c, d.as_mut_ptr(), 2),
            OK
        );
        assert_eq!(d, [2.0, 1.0]);
        assert_eq!(fmi2::setup_experiment::<Ball>(c, 0, 0.0, 0.0, 0, 0.0), OK);
        assert_eq!(fmi2::enter_initialization_mode::<Ball>(c), OK);
        assert_eq!(
            fmi2::set_time::<Ball>(c, 0.0),
            ERROR,
            "not in Initialization Mode"
        );
        assert_eq!(fmi2::exit_initialization_mode::<Ball>(c), OK);
        // Event Mode after initialization.
        assert_eq!(
            fmi2::set_continuous_states::<Ball>(c, [1.0, 0.0].as_ptr(), 2),
            ERROR,
            "states are set in Continuous-Time Mode only"
        );
        assert_eq!(
            fmi2::do_step::<Ball>(c, 0.0, 0.1, 1),
            ERROR,
            "a CS function"
        );
        let info = iterate2::<Ball>(c);
        assert_eq!(info.next_event_time_defined, 1);
        assert_eq!(info.next_event_time, PERIOD);
        assert_eq!(info.values_of_continuous_states_changed, 0);
        assert_eq!(info.terminate_simulation, 0);
        assert_eq!(fmi2::enter_continuous_time_mode::<Ball>(c), OK);
        assert_eq!(
            fmi2::new_discrete_states::<Ball>(c, &mut fmi2::EventInfo::default()),
            ERROR
        );

        // Derivatives follow the states and inputs set.
        assert_eq!(
            fmi2::set_continuous_states::<Ball>(c, [2.0, 3.0].as_ptr(), 2),
            OK
        );
        assert_eq!(fmi2::get_derivatives::<Ball>(c, d.as_mut_ptr(), 2), OK);
        assert_eq!(d, [3.0, -G_VALUE]);
        assert_eq!(
            fmi2::set_real::<Ball>(c, [G].as_ptr(), 1, [1.5].as_ptr()),
            OK
        );
        assert_eq!(fmi2::get_derivatives::<Ball>(c, d.as_mut_ptr(), 2), OK);
        assert_eq!(d, [3.0, -1.5]);
        assert_eq!(
            fmi2::set_real::<Ball>(c, [G].as_ptr(), 1, [G_VALUE].as_ptr()),
            OK
        );
        assert_eq!(
            fmi2::get_derivatives::<Ball>(c, d.as_mut_ptr(), 3),
            ERROR,
            "nx"
        );
        assert_eq!(
            fmi2::get_derivatives::<Ball>(c, null_mut(), 2),
            ERROR,
            "NULL"
        );

        // The importer "integrates" exactly: the time event at PERIOD comes first.
        let mut enter = -1;
        let mut term = -1;
        let (h, v) = flight(1.0, 0.0, PERIOD);
        assert!(h < 0.0, "the ball has landed before the time event");
        let landing = (2.0 / G_VALUE).sqrt();
        // A step to just after the landing: the crossing is seen in the next Event Mode.
        let t1 = landing + 1e-9;
        let (h1, v1) = flight(1.0, 0.0, t1);
        assert_eq!(fmi2::set_time::<Ball>(c, t1), OK);
        assert_eq!(
            fmi2::set_continuous_states::<Ball>(c, [h1, v1].as_ptr(), 2),
            OK
        );
        let mut z = [f64::NAN];
        assert_eq!(fmi2::get_event_indicators::<Ball>(c, z.as_mut_ptr(), 1), OK);
        assert_eq!(z[0], h1);
        assert!(z[0] < 0.0);
        assert_eq!(
            fmi2::completed_integrator_step::<Ball>(c, 1, &mut enter, &mut term),
            OK
        );
        assert_eq!((enter, term), (0, 0));
        assert_eq!(fmi2::enter_event_mode::<Ball>(c), OK);
        assert_eq!(
            fmi2::enter_event_mode::<Ball>(c),
            ERROR,
            "already in Event Mode"
        );
        let info = iterate2::<Ball>(c);
        assert_eq!(info.values_of_continuous_states_changed, 1);
        assert_eq!(info.next_event_time, PERIOD, "no time event yet");
        assert_eq!(states2::<Ball>(c, 2), vec![0.0, -0.5 * v1]);
        // A second iteration at the same point finds nothing more.
        let again = iterate2::<Ball>(c);
        assert_eq!(again.values_of_continuous_states_changed, 0);
        assert_eq!(fmi2::enter_continuous_time_mode::<Ball>(c), OK);

        // Up again from h = 0 (the reference leaves zero at the first completed step), then
        // the time event at PERIOD.
        let (h2, v2) = flight(0.0, -0.5 * v1, PERIOD - t1);
        assert!(h2 > 0.0);
        assert_eq!(fmi2::set_time::<Ball>(c, PERIOD), OK);
        assert_eq!(
            fmi2::set_continuous_states::<Ball>(c, [h2, v2].as_ptr(), 2),
            OK
        );
        assert_eq!(
            fmi2::completed_integrator_step::<Ball>(c, 1, &mut enter, &mut term),
            OK
        );
        assert_eq!(fmi2::enter_event_mode::<Ball>(c), OK);
        let info = iterate2::<Ball>(c);
        assert_eq!(info.values_of_continuous_states_changed, 0);
        assert_eq!(info.next_event_time, 2.0 * PERIOD);
        let mut count = [0];
        assert_eq!(
            fmi2::get_integer::<Ball>(c, [COUNT].as_ptr(), 1, count.as_mut_ptr()),
            OK
        );
        assert_eq!(count[0], 1);
        assert_eq!(fmi2::enter_continuous_time_mode::<Ball>(c), OK);

        // The next landing is detected against the positive reference.
        let (h3, v3) = (-1e-12, -3.0);
        assert_eq!(fmi2::set_time::<Ball>(c, 0.6), OK);
        assert_eq!(
            fmi2::set_continuous_states::<Ball>(c, [h3, v3].as_ptr(), 2),
            OK
        );
        assert_eq!(
            fmi2::completed_integrator_step::<Ball>(c, 1, &mut enter, &mut term),
            OK
        );
        assert_eq!(fmi2::enter_event_mode::<Ball>(c), OK);
        let info = iterate2::<Ball>(c);
        assert_eq!(info.values_of_continuous_states_changed, 1);
        assert_eq!(states2::<Ball>(c, 2), vec![0.0, 1.5]);
        let _ = (h, v);
        assert_eq!(fmi2::terminate::<Ball>(c), OK);
        fmi2::free_instance::<Ball>(c);
    }
}

#[test]
fn fmi2_model_exchange_needs_the_opt_in() {
    unsafe {
        assert!(fmi2_me::<CsOnly>(0).is_null());
        assert!(fmi2_me::<Ball>(7).is_null());
        // A Co-Simulation instance refuses the Model Exchange functions.
        let c = fmi2_me::<Ball>(1);
        assert!(!c.is_null());
        assert_eq!(fmi2::setup_experiment::<Ball>(c, 0, 0.0, 0.0, 0, 0.0), OK);
        assert_eq!(fmi2::enter_initialization_mode::<Ball>(c), OK);
        assert_eq!(fmi2::exit_initialization_mode::<Ball>(c), OK);
        let mut d = [0.0; 2];
        assert_eq!(fmi2::get_derivatives::<Ball>(c, d.as_mut_ptr(), 2), ERROR);
        assert_eq!(fmi2::do_step::<Ball>(c, 0.0, 0.1, 1), OK);
        fmi2::free_instance::<Ball>(c);
    }
}

#[test]
fn fmi2_termination_is_announced_and_reported() {
    unsafe {
        let c = fmi2_me::<Stopper>(0);
        assert!(!c.is_null());
        assert_eq!(
            fmi2::setup_experiment::<Stopper>(c, 0, 0.0, 0.0, 0, 0.0),
            OK
        );
        assert_eq!(fmi2::enter_initialization_mode::<Stopper>(c), OK);
        assert_eq!(fmi2::exit_initialization_mode::<Stopper>(c), OK);
        let info = iterate2::<Stopper>(c);
        assert_eq!(info.terminate_simulation, 0);
        assert_eq!(
            info.next_event_time_defined, 1,
            "the request is a time event"
        );
        assert_eq!(info.next_event_time, STOP);
        assert_eq!(fmi2::enter_continuous_time_mode::<Stopper>(c), OK);
        let (mut enter, mut term) = (-1, -1);
        assert_eq!(fmi2::set_time::<Stopper>(c, 0.5), OK);
        assert_eq!(
            fmi2::completed_integrator_step::<Stopper>(c, 1, &mut enter, &mut term),
            OK
        );
        assert_eq!(term, 0);
        assert_eq!(fmi2::set_time::<Stopper>(c, STOP), OK);
        assert_eq!(
            fmi2::set_continuous_states::<Stopper>(c, [STOP].as_ptr(), 1),
            OK
        );
        assert_eq!(
            fmi2::completed_integrator_step::<Stopper>(c, 1, &mut enter, &mut term),
            OK
        );
        assert_eq!((enter, term), (0, 1));
        assert_eq!(fmi2::terminate::<Stopper>(c), OK);
        let mut x = [0.0];
        assert_eq!(
            fmi2::get_continuous_states::<Stopper>(c, x.as_mut_ptr(), 1),
            OK
        );
        assert_eq!(x[0], STOP);
        fmi2::free_instance::<Stopper>(c);
    }
}

/// FMI 3 event iteration until no update is needed; returns (valuesChanged, nextEventTime).
unsafe fn iterate3<M: Model>(c: *mut c_void) -> (bool, Option<f64>, bool) {
    let (mut need, mut term, mut nom, mut vals, mut def, mut next) =
        (true, true, true, false, false, f64::NAN);
    let mut changed = false;
    for _ in 0..10 {
        assert_eq!(
            fmi3::update_discrete_states::<M>(
                c, &mut need, &mut term, &mut nom, &mut vals, &mut def, &mut next
            ),
            OK
        );
        assert!(!nom);
        changed |= vals;
        if !need {
            return (changed, def.then_some(next), term);
        }
    }
    panic!("event iteration does not settle");
}

#[test]
fn fmi3_ball_call_sequence_state_round_trip_and_misuse() {
    unsafe {
        let c = fmi3_me::<Ball>();
        assert!(!c.is_null());
        let (mut nx, mut nz) = (0, 0);
        assert_eq!(
            fmi3::get_number_of_continuous_states::<Ball>(c, &mut nx),
            OK
        );
        assert_eq!(fmi3::get_number_of_event_indicators::<Ball>(c, &mut nz), OK);
        assert_eq!((nx, nz), (2, 1));
        let mut d = [0.0; 2];
        assert_eq!(
            fmi3::get_continuous_state_derivatives::<Ball>(c, d.as_mut_ptr(), 2),
            ERROR
        );
        assert!(logged(
            "fmi3GetContinuousStateDerivatives: not allowed in Instantiated"
        ));
        assert_eq!(
            fmi3::enter_initialization_mode::<Ball>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3::exit_initialization_mode::<Ball>(c), OK);
        assert_eq!(
            fmi3::set_continuous_states::<Ball>(c, [1.0, 0.0].as_ptr(), 2),
            ERROR
        );
        assert!(logged("fmi3SetContinuousStates: not allowed in Event Mode"));
        assert_eq!(fmi3::enter_step_mode::<Ball>(c), ERROR, "a CS function");
        let (changed, next, term) = iterate3::<Ball>(c);
        assert_eq!((changed, next, term), (false, Some(PERIOD), false));
        assert_eq!(fmi3::enter_continuous_time_mode::<Ball>(c), OK);
        assert_eq!(fmi3::enter_continuous_time_mode::<Ball>(c), ERROR);
        assert_eq!(
            fmi3::set_continuous_states::<Ball>(c, [1.0, 0.0].as_ptr(), 1),
            ERROR,
            "nx"
        );

        // Save the state just before the landing.
        let landing = (2.0 / G_VALUE).sqrt();
        let t0 = landing - 1e-3;
        let (h0, v0) = flight(1.0, 0.0, t0);
        assert_eq!(fmi3::set_time::<Ball>(c, t0), OK);
        assert_eq!(
            fmi3::set_continuous_states::<Ball>(c, [h0, v0].as_ptr(), 2),
            OK
        );
        let (mut enter, mut term) = (true, true);
        assert_eq!(
            fmi3::completed_integrator_step::<Ball>(c, false, &mut enter, &mut term),
            OK
        );
        assert_eq!((enter, term), (false, false));
        let mut saved: *mut c_void = null_mut();
        assert_eq!(fmi3::get_fmu_state::<Ball>(c, &mut saved), OK);

        // Through the landing and its event; twice, the second time from the saved state.
        let land = |c: *mut c_void| -> Vec<f64> {
            let t1 = landing + 1e-6;
            let (h1, v1) = flight(1.0, 0.0, t1);
            let (mut e, mut t) = (true, true);
            assert_eq!(fmi3::set_time::<Ball>(c, t1), OK);
            assert_eq!(
                fmi3::set_continuous_states::<Ball>(c, [h1, v1].as_ptr(), 2),
                OK
            );
            assert_eq!(
                fmi3::completed_integrator_step::<Ball>(c, false, &mut e, &mut t),
                OK
            );
            assert_eq!(fmi3::enter_event_mode::<Ball>(c), OK);
            let (changed, next, term) = iterate3::<Ball>(c);
            assert!(changed && !term);
            assert_eq!(next, Some(PERIOD));
            let mut x = vec![0.0; 2];
            assert_eq!(
                fmi3::get_continuous_states::<Ball>(c, x.as_mut_ptr(), 2),
                OK
            );
            assert_eq!(fmi3::enter_continuous_time_mode::<Ball>(c), OK);
            x
        };
        let first = land(c);
        assert_eq!(first[0], 0.0);
        assert!(first[1] > 0.0);
        assert_eq!(fmi3::set_fmu_state::<Ball>(c, saved), OK);
        assert_eq!(land(c), first, "restored state lands the same");

        // Serialised: into the same instance and refused by a Co-Simulation instance.
        let mut size = 0;
        assert_eq!(
            fmi3::serialized_fmu_state_size::<Ball>(c, saved, &mut size),
            OK
        );
        let mut bytes = vec![0u8; size];
        assert_eq!(
            fmi3::serialize_fmu_state::<Ball>(c, saved, bytes.as_mut_ptr(), size),
            OK
        );
        let mut restored: *mut c_void = null_mut();
        assert_eq!(
            fmi3::deserialize_fmu_state::<Ball>(c, bytes.as_ptr(), size, &mut restored),
            OK
        );
        assert_eq!(fmi3::set_fmu_state::<Ball>(c, restored), OK);
        assert_eq!(land(c), first, "deserialised state lands the same");
        let tok = token::<Ball>();
        let cs = fmi3::instantiate_co_simulation::<Ball>(
            c"cs".as_ptr(),
            tok.as_ptr(),
            null(),
            false,
            false,
            false,
            false,
            null(),
            0,
            null_mut(),
            Some(log3),
            None,
        );
        assert!(!cs.is_null());
        let mut foreign: *mut c_void = null_mut();
        assert_eq!(
            fmi3::deserialize_fmu_state::<Ball>(cs, bytes.as_ptr(), size, &mut foreign),
            ERROR
        );
        assert!(logged("belongs to an instance of the other interface"));
        let mut n = 0;
        assert_eq!(
            fmi3::get_number_of_continuous_states::<Ball>(cs, &mut n),
            ERROR
        );
        fmi3::free_instance::<Ball>(cs);

        // Directional derivatives in Continuous-Time Mode (finite differences here).
        let mut dd = [f64::NAN; 2];
        assert_eq!(
            fmi3::derivative::<Ball>(
                c,
                false,
                [DER_H, DER_V].as_ptr(),
                2,
                [V].as_ptr(),
                1,
                [1.0].as_ptr(),
                1,
                dd.as_mut_ptr(),
                2
            ),
            OK
        );
        assert!((dd[0] - 1.0).abs() < 1e-9 && dd[1].abs() < 1e-9, "{dd:?}");

        assert_eq!(fmi3::free_fmu_state::<Ball>(c, &mut saved), OK);
        assert_eq!(fmi3::free_fmu_state::<Ball>(c, &mut restored), OK);
        assert_eq!(fmi3::terminate::<Ball>(c), OK);
        assert_eq!(fmi3::set_time::<Ball>(c, 1.0), ERROR, "Terminated");
        fmi3::free_instance::<Ball>(c);
    }
}

#[test]
fn fmi3_model_exchange_needs_the_opt_in() {
    unsafe {
        assert!(fmi3_me::<CsOnly>().is_null());
        assert!(logged(
            "fmi3InstantiateModelExchange: this FMU supports Co-Simulation only"
        ));
    }
}

#[test]
fn fmi3_termination_is_announced_and_reported() {
    unsafe {
        let c = fmi3_me::<Stopper>();
        assert!(!c.is_null());
        assert_eq!(
            fmi3::enter_initialization_mode::<Stopper>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3::exit_initialization_mode::<Stopper>(c), OK);
        assert_eq!(iterate3::<Stopper>(c), (false, Some(STOP), false));
        assert_eq!(fmi3::enter_continuous_time_mode::<Stopper>(c), OK);
        // The importer lands on the announced time and handles it as a time event.
        assert_eq!(fmi3::set_time::<Stopper>(c, STOP), OK);
        assert_eq!(fmi3::enter_event_mode::<Stopper>(c), OK);
        let (_, _, term) = iterate3::<Stopper>(c);
        assert!(term);
        assert_eq!(fmi3::terminate::<Stopper>(c), OK);
        fmi3::free_instance::<Stopper>(c);
    }
}

#[test]
fn model_descriptions_declare_model_exchange() {
    let xml2 = fmu_kit::model_description::<Ball>(2).expect("FMI 2");
    assert!(xml2.contains(" numberOfEventIndicators=\"1\""), "{xml2}");
    let me = xml2
        .find("<ModelExchange modelIdentifier=\"Ball\"")
        .expect("ME element");
    let cs = xml2
        .find("<CoSimulation modelIdentifier=\"Ball\"")
        .expect("CS element");
    assert!(me < cs, "the FMI 2 schema puts ModelExchange first");
    assert!(xml2.contains("providesDirectionalDerivative=\"true\"/>"));
    let xml3 = fmu_kit::model_description::<Ball>(3).expect("FMI 3");
    assert!(xml3.contains("<ModelExchange modelIdentifier=\"Ball\""));
    assert!(xml3.contains("needsCompletedIntegratorStep=\"true\""));
    assert!(xml3.contains("<EventIndicator valueReference=\"1\"/>"));
    // Without the opt-in nothing changes.
    let cs_only = fmu_kit::model_description::<CsOnly>(2).expect("FMI 2");
    assert!(!cs_only.contains("ModelExchange") && !cs_only.contains("numberOfEventIndicators"));
}

/// A Model Exchange model with an event indicator but no variable for it.
#[derive(Default)]
struct Unnamed;

impl Model for Unnamed {
    const NAME: &'static str = "Unnamed";
    const MODEL_EXCHANGE: bool = true;
    const NUM_EVENT_INDICATORS: usize = 1;
    fn variables(&self) -> Vec<Variable> {
        vec![Variable::float64(X, "x")
            .output()
            .start(0.0)
            .depends_on(&[])]
    }
    fn evaluate(&self, _v: &mut Values, _t: f64) -> Result<(), String> {
        Ok(())
    }
}

#[test]
fn event_indicators_need_their_variables() {
    let e = fmu_kit::model_description::<Unnamed>(3).expect_err("refused");
    assert!(e.contains("EVENT_INDICATOR_VARIABLES"), "{e}");
}
