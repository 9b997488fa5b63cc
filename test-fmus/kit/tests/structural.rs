//! Structural parameters: `causality="structuralParameter"` in FMI 3 (set only in Configuration
//! Mode), an ordinary fixed `parameter` in FMI 2; the model's `configure` hook on leaving
//! Configuration Mode.

use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};

mod common;

use common::{fmi3_instance, last_log, token};
use fmu_kit::{fmi2, fmi3, model_description, Model, Table, Values, Variability, Variable};

const K: u32 = 1;
const GAIN: u32 = 2;
const Y: u32 = 3;
const OK: c_int = 0;
const ERROR: c_int = 3;

/// `y = k * gain`, with `k` structural; `configure` refuses k = 7.
#[derive(Default)]
struct Sized;

impl Model for Sized {
    const NAME: &'static str = "Sized";

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::int32(K, "k")
                .structural_parameter()
                .start(2)
                .min(1.0)
                .max(100.0),
            Variable::float64(GAIN, "gain").parameter().start(1.5),
            Variable::float64(Y, "y").output().depends_on(&[]),
        ]
    }
    fn configure(&self, v: &mut Values) -> Result<(), String> {
        match v.i32(K) {
            7 => Err("k = 7 is unlucky".into()),
            _ => Ok(()),
        }
    }
    fn evaluate(&self, v: &mut Values, _t: f64) -> Result<(), String> {
        v.set_f64(Y, f64::from(v.i32(K)) * v.f64(GAIN));
        Ok(())
    }
}

/// A model without structural parameters.
#[derive(Default)]
struct Plain;

impl Model for Plain {
    const NAME: &'static str = "Plain";
    fn variables(&self) -> Vec<Variable> {
        vec![Variable::float64(1, "p").parameter().start(1.0)]
    }
    fn evaluate(&self, _v: &mut Values, _t: f64) -> Result<(), String> {
        Ok(())
    }
}

unsafe fn set_k3(c: *mut c_void, k: i32) -> c_int {
    fmi3::set_int32::<Sized>(c, [K].as_ptr(), 1, [k].as_ptr(), 1)
}

unsafe fn y3(c: *mut c_void) -> f64 {
    let mut y = [0.0];
    assert_eq!(
        fmi3::get_float64::<Sized>(c, [Y].as_ptr(), 1, y.as_mut_ptr(), 1),
        OK
    );
    y[0]
}

#[test]
fn fmi3_says_structural_parameter_and_fmi2_says_parameter() {
    let xml3 = model_description::<Sized>(3).expect("FMI 3 description");
    let xml2 = model_description::<Sized>(2).expect("FMI 2 description");
    let k3 = xml3
        .lines()
        .find(|l| l.contains("name=\"k\""))
        .expect("k in FMI 3");
    assert!(
        k3.contains("causality=\"structuralParameter\"") && k3.contains("variability=\"fixed\""),
        "{k3}"
    );
    assert!(k3.contains("start=\"2\""), "{k3}");
    let k2 = xml2
        .lines()
        .find(|l| l.contains("name=\"k\""))
        .expect("k in FMI 2");
    assert!(k2.contains("causality=\"parameter\""), "{k2}");
    assert!(!xml2.contains("structuralParameter"), "{xml2}");
}

#[test]
fn the_table_refuses_tunable_and_array_structural_parameters() {
    let cases = [
        (
            Variable::int32(1, "k")
                .structural_parameter()
                .variability(Variability::Tunable)
                .start(1),
            "must be fixed",
        ),
        (
            Variable::float64(1, "k")
                .structural_parameter()
                .dims(&[2])
                .start(vec![1.0, 2.0]),
            "must be a scalar",
        ),
        (
            Variable::int32(1, "k").structural_parameter(),
            "start value is required",
        ),
    ];
    for (var, want) in cases {
        match Table::new("T", vec![var]) {
            Ok(_) => panic!("accepted a table that should fail with {want:?}"),
            Err(e) => assert!(e.contains(want), "{e:?} does not mention {want:?}"),
        }
    }
}

#[test]
fn fmi3_sets_structural_parameters_only_in_configuration_mode() {
    unsafe {
        let c = fmi3_instance::<Sized>(false);
        // Instantiated: refused, with a message that names the variable and the way.
        assert_eq!(set_k3(c, 5), ERROR);
        let msg = last_log();
        assert!(
            msg.contains("'k'") && msg.contains("Configuration Mode"),
            "{msg}"
        );
        // Ordinary parameters are still set in Instantiated.
        assert_eq!(
            fmi3::set_float64::<Sized>(c, [GAIN].as_ptr(), 1, [2.0].as_ptr(), 1),
            OK
        );
        // Configuration Mode: set, then back to Instantiated.
        assert_eq!(fmi3::exit_configuration_mode::<Sized>(c), ERROR);
        assert_eq!(fmi3::enter_configuration_mode::<Sized>(c), OK);
        assert_eq!(
            fmi3::set_float64::<Sized>(c, [GAIN].as_ptr(), 1, [3.0].as_ptr(), 1),
            ERROR,
            "only structural parameters are set in Configuration Mode"
        );
        assert_eq!(set_k3(c, 500), ERROR, "bounds still hold");
        assert_eq!(set_k3(c, 5), OK);
        assert_eq!(fmi3::enter_configuration_mode::<Sized>(c), ERROR);
        assert_eq!(fmi3::exit_configuration_mode::<Sized>(c), OK);
        assert_eq!(
            fmi3::enter_initialization_mode::<Sized>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(y3(c), 10.0, "y = k * gain with k = 5 and gain = 2");
        // Initialization Mode: refused again.
        assert_eq!(set_k3(c, 3), ERROR);
        assert!(last_log().contains("Initialization Mode"), "{}", last_log());
        assert_eq!(fmi3::enter_configuration_mode::<Sized>(c), ERROR);
        assert_eq!(fmi3::exit_initialization_mode::<Sized>(c), OK);
        assert_eq!(set_k3(c, 3), ERROR);
        assert_eq!(y3(c), 10.0);
        fmi3::free_instance::<Sized>(c);
    }
}

#[test]
fn fmi3_configure_may_refuse_and_reset_returns_to_the_start_values() {
    unsafe {
        let c = fmi3_instance::<Sized>(false);
        assert_eq!(fmi3::enter_configuration_mode::<Sized>(c), OK);
        assert_eq!(set_k3(c, 7), OK);
        assert_eq!(fmi3::exit_configuration_mode::<Sized>(c), ERROR);
        assert!(last_log().contains("k = 7 is unlucky"), "{}", last_log());
        // Still in Configuration Mode: a better value is accepted.
        assert_eq!(set_k3(c, 4), OK);
        assert_eq!(fmi3::exit_configuration_mode::<Sized>(c), OK);
        assert_eq!(fmi3::reset::<Sized>(c), OK);
        assert_eq!(
            fmi3::enter_initialization_mode::<Sized>(c, false, 0.0, 0.0, false, 0.0),
            OK
        );
        assert_eq!(y3(c), 3.0, "after reset k is back at its start 2");
        fmi3::free_instance::<Sized>(c);

        let p = fmi3_instance::<Plain>(false);
        assert_eq!(fmi3::enter_configuration_mode::<Plain>(p), ERROR);
        assert!(
            last_log().contains("no structural parameters"),
            "{}",
            last_log()
        );
        fmi3::free_instance::<Plain>(p);
    }
}

#[test]
fn fmi2_sets_the_same_variable_as_an_ordinary_parameter() {
    unsafe {
        let tok = token::<Sized>();
        let cb = fmi2::CallbackFunctions {
            logger: None,
            allocate_memory: None,
            free_memory: None,
            step_finished: None,
            component_environment: null_mut(),
        };
        let c = fmi2::instantiate::<Sized>(c"s2".as_ptr(), 1, tok.as_ptr(), null(), &cb, 0, 0);
        assert!(!c.is_null());
        assert_eq!(
            fmi2::set_integer::<Sized>(c, [K].as_ptr(), 1, [6].as_ptr()),
            OK
        );
        assert_eq!(fmi2::setup_experiment::<Sized>(c, 0, 0.0, 0.0, 0, 0.0), OK);
        assert_eq!(fmi2::enter_initialization_mode::<Sized>(c), OK);
        assert_eq!(
            fmi2::set_integer::<Sized>(c, [K].as_ptr(), 1, [5].as_ptr()),
            OK
        );
        assert_eq!(fmi2::exit_initialization_mode::<Sized>(c), OK);
        let mut y = [0.0];
        assert_eq!(
            fmi2::get_real::<Sized>(c, [Y].as_ptr(), 1, y.as_mut_ptr()),
            OK
        );
        assert_eq!(y[0], 7.5);
        assert_eq!(
            fmi2::set_integer::<Sized>(c, [K].as_ptr(), 1, [4].as_ptr()),
            ERROR,
            "fixed after initialization"
        );
        fmi2::free_instance::<Sized>(c);
    }
}
