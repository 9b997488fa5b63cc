//! A model's termination request ([`StepFailure::termination`]): FMI 2 Discard with
//! `fmi2Terminated`, FMI 3 OK with `terminateSimulation`; what the instance allows afterwards
//! (FMI 2 stepFailed: no set; FMI 3 Step Mode: inputs may still be set) and how a reset ends it.

use std::ffi::{c_int, c_void, CString};
use std::ptr::{null, null_mut};

use fmu_kit::{fmi2, fmi3, Model, Status, StepFailure, Table, Values, Variable};

const OK: c_int = 0;
const DISCARD: c_int = 2;
const ERROR: c_int = 3;

const U: u32 = 1;
const X: u32 = 2;
const DER_X: u32 = 3;
/// When the model asks to terminate.
const STOP: f64 = 0.25;

/// x' = u; asks to terminate at t = 0.25 (with a status the request must ignore).
#[derive(Default)]
struct Stopper;

impl Model for Stopper {
    const NAME: &'static str = "Stopper";

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(U, "u").input().start(1.0),
            Variable::float64(X, "x")
                .output()
                .start(0.0)
                .depends_on(&[]),
            Variable::float64(DER_X, "der(x)").derivative_of(X),
        ]
    }
    fn evaluate(&self, v: &mut Values, _t: f64) -> Result<(), String> {
        v.set_f64(DER_X, v.f64(U));
        Ok(())
    }
    fn step_failure(&self, _v: &Values, t: f64, t_end: f64) -> Option<StepFailure> {
        (t < STOP && STOP <= t_end).then(|| StepFailure {
            status: Status::Warning,
            ..StepFailure::termination(STOP, "stop")
        })
    }
}

fn token() -> CString {
    CString::new(
        Table::new(Stopper::NAME, Stopper.variables())
            .expect("table")
            .token,
    )
    .expect("token")
}

unsafe fn fmi2_ready() -> *mut c_void {
    let cb = fmi2::CallbackFunctions {
        logger: None,
        allocate_memory: None,
        free_memory: None,
        step_finished: None,
        component_environment: null_mut(),
    };
    let tok = token();
    let c = fmi2::instantiate::<Stopper>(c"s2".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
    assert!(!c.is_null());
    assert_eq!(
        fmi2::setup_experiment::<Stopper>(c, 0, 0.0, 0.0, 0, 0.0),
        OK
    );
    assert_eq!(fmi2::enter_initialization_mode::<Stopper>(c), OK);
    assert_eq!(fmi2::exit_initialization_mode::<Stopper>(c), OK);
    c
}

unsafe fn fmi3_ready() -> *mut c_void {
    let tok = token();
    let c = fmi3::instantiate_co_simulation::<Stopper>(
        c"s3".as_ptr(),
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
    assert_eq!(
        fmi3::enter_initialization_mode::<Stopper>(c, false, 0.0, 0.0, false, 0.0),
        OK
    );
    assert_eq!(fmi3::exit_initialization_mode::<Stopper>(c), OK);
    c
}

unsafe fn terminated2(c: *mut c_void) -> bool {
    let mut v = -1;
    assert_eq!(fmi2::get_boolean_status::<Stopper>(c, 3, &mut v), OK);
    v == 1
}

#[test]
fn fmi2_request_is_step_failed_until_terminate_or_reset() {
    unsafe {
        let c = fmi2_ready();
        assert_eq!(fmi2::do_step::<Stopper>(c, 0.0, 0.2, 1), OK);
        assert!(!terminated2(c));
        assert_eq!(
            fmi2::do_step::<Stopper>(c, 0.2, 0.2, 1),
            DISCARD,
            "Warning is ignored"
        );
        assert!(terminated2(c));
        let mut x = [f64::NAN];
        assert_eq!(
            fmi2::get_real::<Stopper>(c, [X].as_ptr(), 1, x.as_mut_ptr()),
            OK
        );
        assert!((x[0] - STOP).abs() < 1e-12, "x = {}", x[0]);
        // stepFailed: inputs and their derivatives may not be set.
        assert_eq!(
            fmi2::set_real::<Stopper>(c, [U].as_ptr(), 1, [2.0].as_ptr()),
            ERROR
        );
        assert_eq!(
            fmi2::set_real_input_derivatives::<Stopper>(
                c,
                [U].as_ptr(),
                1,
                [1].as_ptr(),
                [0.0].as_ptr()
            ),
            ERROR
        );
        assert_eq!(fmi2::do_step::<Stopper>(c, STOP, 0.1, 1), ERROR);
        assert_eq!(fmi2::terminate::<Stopper>(c), OK);
        assert_eq!(fmi2::reset::<Stopper>(c), OK);
        assert!(!terminated2(c));
        assert_eq!(
            fmi2::setup_experiment::<Stopper>(c, 0, 0.0, 0.0, 0, 0.0),
            OK
        );
        assert_eq!(fmi2::enter_initialization_mode::<Stopper>(c), OK);
        assert_eq!(fmi2::exit_initialization_mode::<Stopper>(c), OK);
        assert_eq!(
            fmi2::do_step::<Stopper>(c, 0.0, 0.2, 1),
            OK,
            "steppable after reset"
        );
        fmi2::free_instance::<Stopper>(c);
    }
}

#[test]
fn fmi3_request_stays_in_step_mode_without_steps() {
    unsafe {
        let c = fmi3_ready();
        let (mut ehn, mut term, mut early, mut lst) = (true, true, true, f64::NAN);
        let mut step = |c, t, h| {
            let s =
                fmi3::do_step::<Stopper>(c, t, h, true, &mut ehn, &mut term, &mut early, &mut lst);
            (s, ehn, term, early, lst)
        };
        assert_eq!(step(c, 0.0, 0.2), (OK, false, false, false, 0.2));
        assert_eq!(
            step(c, 0.2, 0.2),
            (OK, false, true, true, STOP),
            "Warning is ignored"
        );
        // Step Mode: inputs may still be set (and outputs read), but no step is taken.
        assert_eq!(
            fmi3::set_float64::<Stopper>(c, [U].as_ptr(), 1, [2.0].as_ptr(), 1),
            OK
        );
        let mut x = [f64::NAN];
        assert_eq!(
            fmi3::get_float64::<Stopper>(c, [X].as_ptr(), 1, x.as_mut_ptr(), 1),
            OK
        );
        assert!((x[0] - STOP).abs() < 1e-12, "x = {}", x[0]);
        assert_eq!(step(c, STOP, 0.1).0, ERROR);
        assert_eq!(fmi3::reset::<Stopper>(c), OK);
        assert_eq!(
            fmi3::enter_initialization_mode::<Stopper>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(fmi3::exit_initialization_mode::<Stopper>(c), OK);
        assert_eq!(
            step(c, 0.0, 0.2),
            (OK, false, false, false, 0.2),
            "steppable after reset"
        );
        assert_eq!(fmi3::terminate::<Stopper>(c), OK);
        fmi3::free_instance::<Stopper>(c);
    }
}
