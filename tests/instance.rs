//! The safe FMI 2 / FMI 3 instance, driven through the project's own FMUs (both versions).

mod common;

use std::sync::{Arc, Mutex, OnceLock};

use common::skip::Skip;
use cosimo::fmu::instance::{FmuLogMessage, InstanceOptions};
use cosimo::fmu::Fmu;
use cosimo::fmu::{FmiVersion, PolynomialInputMode, Slave, SlaveState, ValueReference};
use cosimo::{Error, FmiStatus};

const VERSIONS: [u8; 2] = [2, 3];

/// Opened FMUs by (model, version).
type Cache = Mutex<Vec<(String, u8, Arc<Fmu>)>>;

/// One opened FMU per (model, version), shared by the tests of this binary.
fn fmu(model: &str, version: u8) -> Arc<Fmu> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut cache = cache.lock().unwrap();
    if let Some((_, _, f)) = cache.iter().find(|(m, v, _)| m == model && *v == version) {
        return f.clone();
    }
    let path = fmu_pack::fmu_path(model, version);
    let loaded = Arc::new(Fmu::open(&path).unwrap_or_else(|e| panic!("{e}")));
    cache.push((model.to_string(), version, loaded.clone()));
    loaded
}

fn vr(slave: &dyn Slave, name: &str) -> ValueReference {
    slave
        .description()
        .variable(name)
        .unwrap_or_else(|| panic!("no variable {name}"))
        .value_reference
}

struct Osc {
    x: ValueReference,
    v: ValueReference,
    a: ValueReference,
    f: ValueReference,
}

/// An Oscillator with m = 1, c = 4, d = 0, x0 = 1, v0 = 0 (x = cos 2t), in step mode at t = 0.
fn oscillator(version: u8, name: &str, options: InstanceOptions) -> (Box<dyn Slave>, Osc) {
    let mut s = fmu("Oscillator", version)
        .instantiate(name, options)
        .unwrap_or_else(|e| panic!("{e}"));
    let params: Vec<ValueReference> = ["m", "c", "d", "x0", "v0"]
        .iter()
        .map(|n| vr(&*s, n))
        .collect();
    s.set_float64(&params, &[1.0, 4.0, 0.0, 1.0, 0.0]).unwrap();
    s.enter_initialization_mode(None, 0.0, None).unwrap();
    s.exit_initialization_mode().unwrap();
    if s.state() == SlaveState::EventMode {
        s.update_discrete_states().unwrap();
        s.enter_step_mode().unwrap();
    }
    let o = Osc {
        x: vr(&*s, "x"),
        v: vr(&*s, "v"),
        a: vr(&*s, "a"),
        f: vr(&*s, "F"),
    };
    (s, o)
}

fn get(s: &mut dyn Slave, vrs: &[ValueReference]) -> Vec<f64> {
    let mut values = vec![0.0; vrs.len()];
    s.get_float64(vrs, &mut values).unwrap();
    values
}

#[test]
fn oscillator_follows_the_closed_form_solution() {
    for version in VERSIONS {
        let (mut s, o) = oscillator(
            version,
            &format!("closed_form_{version}"),
            Default::default(),
        );
        assert_eq!(s.state(), SlaveState::StepMode);
        let h = 0.01;
        for i in 0..100 {
            let t = i as f64 * h;
            let r = s.do_step(t, h).unwrap();
            assert_eq!(r.reached_time, t + h);
            assert!(!r.early_return && !r.terminate_simulation);
        }
        let t: f64 = 1.0;
        let xva = get(&mut *s, &[o.x, o.v, o.a]);
        let expected = [
            (2.0 * t).cos(),
            -2.0 * (2.0 * t).sin(),
            -4.0 * (2.0 * t).cos(),
        ];
        for (got, want) in xva.iter().zip(expected) {
            assert!(
                (got - want).abs() < 1e-6,
                "FMI {version}: {xva:?} vs {expected:?}"
            );
        }
        assert!(s.call_count() > 100);
        s.terminate().unwrap();
        assert_eq!(s.state(), SlaveState::Terminated);
        // Values stay readable after terminate.
        get(&mut *s, &[o.x]);
    }
}

#[test]
fn state_restore_continues_bit_identically() {
    for version in VERSIONS {
        let (mut s, o) = oscillator(version, &format!("restore_{version}"), Default::default());
        assert!(s.can_save_state());
        for i in 0..10 {
            s.do_step(i as f64 * 0.05, 0.05).unwrap();
        }
        let saved = s.save_state().unwrap();
        let run = |s: &mut dyn Slave| {
            let mut trace = Vec::new();
            for i in 10..20 {
                s.set_float64(&[o.f], &[i as f64 * 0.1]).unwrap();
                s.do_step(i as f64 * 0.05, 0.05).unwrap();
                trace.extend(get(s, &[o.x, o.v, o.a]));
            }
            trace
        };
        let first = run(&mut *s);
        s.restore_state(saved).unwrap();
        s.set_float64(&[o.f], &[0.0]).unwrap();
        let second = run(&mut *s);
        assert_eq!(
            first.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            second.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "FMI {version}"
        );
        // update_state overwrites in place; free releases the slot.
        s.update_state(saved).unwrap();
        let now = get(&mut *s, &[o.x]);
        s.do_step(1.0, 0.1).unwrap();
        s.restore_state(saved).unwrap();
        assert_eq!(get(&mut *s, &[o.x]), now);
        s.free_state(saved).unwrap();
        assert!(matches!(s.restore_state(saved), Err(Error::Internal(_))));
        assert!(matches!(s.free_state(saved), Err(Error::Internal(_))));
    }
}

#[test]
fn serialized_state_round_trips() {
    for version in VERSIONS {
        let (mut s, o) = oscillator(version, &format!("serialize_{version}"), Default::default());
        s.do_step(0.0, 0.3).unwrap();
        let saved = s.save_state().unwrap();
        let at_save = get(&mut *s, &[o.x, o.v]);
        let bytes = s.serialize_state(saved).unwrap();
        assert!(!bytes.is_empty());
        s.free_state(saved).unwrap();
        s.do_step(0.3, 0.3).unwrap();
        assert_ne!(get(&mut *s, &[o.x, o.v]), at_save);
        let restored = s.deserialize_state(&bytes).unwrap();
        s.restore_state(restored).unwrap();
        assert_eq!(get(&mut *s, &[o.x, o.v]), at_save, "FMI {version}");
        // Garbage is the FMU's to reject, with an error rather than a crash.
        assert!(s.deserialize_state(&[1, 2, 3]).is_err());
    }
}

#[test]
fn directional_derivative_matches_finite_difference() {
    for version in VERSIONS {
        let (mut s, o) = oscillator(version, &format!("jacobian_{version}"), Default::default());
        assert!(s.provides_directional_derivatives());
        s.do_step(0.0, 0.2).unwrap();
        let mut sensitivity = [0.0];
        s.directional_derivative(&[o.a], &[o.f], &[1.0], &mut sensitivity)
            .unwrap();
        let delta = 1e-6;
        let a0 = get(&mut *s, &[o.a])[0];
        s.set_float64(&[o.f], &[delta]).unwrap();
        let a1 = get(&mut *s, &[o.a])[0];
        let fd = (a1 - a0) / delta;
        assert!(
            (sensitivity[0] - fd).abs() < 1e-6,
            "FMI {version}: {sensitivity:?} vs {fd}"
        );
        assert!((sensitivity[0] - 1.0).abs() < 1e-9, "da/dF = 1/m");
        // Wrong slice lengths are errors, not panics.
        assert!(matches!(
            s.directional_derivative(&[o.a], &[o.f], &[1.0, 2.0], &mut sensitivity),
            Err(Error::Internal(_))
        ));
    }
}

#[test]
fn output_derivatives_are_the_next_state_derivatives() {
    for version in VERSIONS {
        let (mut s, o) = oscillator(version, &format!("outder_{version}"), Default::default());
        if s.max_output_derivative_order() == 0 {
            assert!(s.get_output_derivatives(&[o.x], 1, &mut [0.0]).is_err());
            continue;
        }
        s.do_step(0.0, 0.25).unwrap();
        let mut dx = [0.0];
        s.get_output_derivatives(&[o.x], 1, &mut dx).unwrap();
        let v = get(&mut *s, &[o.v])[0];
        assert!(
            (dx[0] - v).abs() < 1e-9,
            "FMI {version}: dx/dt {} vs v {v}",
            dx[0]
        );
        let order = s.max_output_derivative_order();
        assert!(matches!(
            s.get_output_derivatives(&[o.x], order + 1, &mut dx),
            Err(Error::Unsupported { .. })
        ));
    }
}

/// x and v after one step of `big` from t = 0 with F(t) = 1 + 2 t - 3 t^2 (Taylor: 1, 2, -6),
/// with the polynomial given to the slave; and the mode it chose.
fn polynomial_step(
    version: u8,
    name: &str,
    options: InstanceOptions,
) -> (Vec<f64>, PolynomialInputMode, u64) {
    let (mut s, o) = oscillator(version, name, options);
    let before = s.call_count();
    let mode = s
        .set_input_polynomial(&[o.f], 2, &[1.0, 2.0, -6.0])
        .unwrap();
    s.do_step(0.0, 0.5).unwrap();
    let calls = s.call_count() - before;
    (get(&mut *s, &[o.x, o.v]), mode, calls)
}

/// The same step with F sampled at the midpoints of 4000 fine steps (error ~ 1e-8).
fn polynomial_reference(version: u8) -> Vec<f64> {
    let (mut s, o) = oscillator(version, &format!("poly_ref_{version}"), Default::default());
    let n = 4000;
    let h = 0.5 / n as f64;
    for i in 0..n {
        let t = (i as f64 + 0.5) * h;
        s.set_float64(&[o.f], &[1.0 + 2.0 * t - 3.0 * t * t])
            .unwrap();
        s.do_step(i as f64 * h, h).unwrap();
    }
    get(&mut *s, &[o.x, o.v])
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

#[test]
fn polynomial_inputs_in_all_three_modes() {
    for version in VERSIONS {
        let reference = polynomial_reference(version);
        let (held, _, _) = {
            let (mut s, o) =
                oscillator(version, &format!("poly_zoh_{version}"), Default::default());
            s.set_float64(&[o.f], &[1.0]).unwrap();
            s.do_step(0.0, 0.5).unwrap();
            (get(&mut *s, &[o.x, o.v]), (), ())
        };
        let zoh_error = distance(&held, &reference);
        assert!(zoh_error > 1e-3, "the polynomial must matter: {zoh_error}");

        // The FMU's own mechanism: input derivatives (FMI 2) or intermediate update (FMI 3).
        let (native, mode, _) = polynomial_step(
            version,
            &format!("poly_native_{version}"),
            Default::default(),
        );
        let expected_mode = if version == 2 {
            PolynomialInputMode::InputDerivatives
        } else {
            PolynomialInputMode::IntermediateUpdate
        };
        assert_eq!(mode, expected_mode);
        let native_error = distance(&native, &reference);
        assert!(
            native_error < 1e-4,
            "FMI {version} {mode:?}: {native_error}"
        );

        // Sub-steps, forced by the option.
        let options = InstanceOptions {
            force_sub_steps: true,
            sub_steps: 16,
            ..Default::default()
        };
        let (sampled, mode, calls) =
            polynomial_step(version, &format!("poly_sub_{version}"), options);
        assert_eq!(mode, PolynomialInputMode::SubSteps);
        let sampled_error = distance(&sampled, &reference);
        assert!(
            sampled_error < zoh_error / 4.0,
            "FMI {version}: sub-steps {sampled_error} vs held {zoh_error}"
        );
        // 1 set of the start value + 15 sets + 16 steps (+ the reads).
        assert!(calls >= 32, "{calls} calls");

        // The polynomial applies to one step only: the next step holds the input at whatever
        // value the FMU kept (FMUs may advance it to the step's end).
        let (mut s, o) = oscillator(version, &format!("poly_once_{version}"), Default::default());
        s.set_input_polynomial(&[o.f], 1, &[0.0, 10.0]).unwrap();
        s.do_step(0.0, 0.1).unwrap();
        let saved = s.save_state().unwrap();
        s.do_step(0.1, 0.1).unwrap();
        let after_second = get(&mut *s, &[o.x, o.v]);
        s.restore_state(saved).unwrap();
        let held = get(&mut *s, &[o.f]);
        s.set_float64(&[o.f], &held).unwrap();
        s.do_step(0.1, 0.1).unwrap();
        assert_eq!(get(&mut *s, &[o.x, o.v]), after_second, "FMI {version}");
    }
}

#[test]
fn polynomial_length_mismatch_is_an_error() {
    let (mut s, o) = oscillator(2, "poly_len", Default::default());
    assert!(matches!(
        s.set_input_polynomial(&[o.f], 2, &[1.0, 2.0]),
        Err(Error::Internal(_))
    ));
    assert!(matches!(
        s.set_float64(&[o.f, o.x], &[1.0]),
        Err(Error::Internal(_))
    ));
}

#[test]
fn calls_in_the_wrong_state_are_refused_before_the_fmu() {
    for version in VERSIONS {
        let mut s = fmu("Oscillator", version)
            .instantiate(&format!("wrong_state_{version}"), Default::default())
            .unwrap();
        let x = vr(&*s, "x");
        let calls = s.call_count();
        assert!(matches!(
            s.do_step(0.0, 0.1),
            Err(Error::WrongState { function, .. }) if function.ends_with("DoStep")
        ));
        assert!(matches!(
            s.get_float64(&[x], &mut [0.0]),
            Err(Error::WrongState { .. })
        ));
        assert!(matches!(
            s.exit_initialization_mode(),
            Err(Error::WrongState { .. })
        ));
        assert!(matches!(s.terminate(), Err(Error::WrongState { .. })));
        assert_eq!(
            s.call_count(),
            calls,
            "refused calls must not reach the FMU"
        );
        s.enter_initialization_mode(None, 0.0, Some(1.0)).unwrap();
        assert!(matches!(
            s.enter_initialization_mode(None, 0.0, None),
            Err(Error::WrongState { .. })
        ));
        assert!(matches!(s.do_step(0.0, 0.1), Err(Error::WrongState { .. })));
        s.exit_initialization_mode().unwrap();
        if version == 2 {
            assert!(matches!(
                s.enter_event_mode(),
                Err(Error::Unsupported { .. })
            ));
            let e = s.get_int8(&[x], &mut [0]).unwrap_err();
            assert!(e.to_string().contains("Int8"), "{e}");
            assert!(matches!(s.get_binary(&[x]), Err(Error::Unsupported { .. })));
        }
        s.terminate().unwrap();
        assert!(matches!(s.do_step(0.0, 0.1), Err(Error::WrongState { .. })));
        s.reset().unwrap();
        assert_eq!(s.state(), SlaveState::Instantiated);
    }
}

#[test]
fn configuration_mode_sets_fmi3_structural_parameters_and_is_refused_by_fmi2() {
    // FMI 2: no configuration mode; n is an ordinary parameter.
    let mut s = fmu("OscillatorChain", 2)
        .instantiate("config_2", Default::default())
        .unwrap();
    let n = vr(&*s, "n");
    let e = s.enter_configuration_mode().unwrap_err();
    assert!(
        matches!(e, Error::Unsupported { .. }) && e.to_string().contains("FMI 2"),
        "{e}"
    );
    assert!(s.exit_configuration_mode().is_err());
    s.set_int32(&[n], &[3]).unwrap();

    // FMI 3: n only in configuration mode, which starts and ends in Instantiated.
    let mut s = fmu("OscillatorChain", 3)
        .instantiate("config_3", Default::default())
        .unwrap();
    let n = vr(&*s, "n");
    let e = s.set_int32(&[n], &[3]).unwrap_err();
    assert!(
        matches!(e, Error::Fmi { .. }) && e.to_string().contains("'n'"),
        "{e}"
    );
    // After that Error only a reset (or freeing) lets the instance go on (FMI 3.0 §2.2.3).
    assert_eq!(s.state(), SlaveState::Error);
    s.reset().unwrap();
    assert!(matches!(
        s.exit_configuration_mode(),
        Err(Error::WrongState { .. })
    ));
    s.enter_configuration_mode().unwrap();
    assert_eq!(s.state(), SlaveState::ConfigurationMode);
    assert!(matches!(
        s.enter_initialization_mode(None, 0.0, None),
        Err(Error::WrongState { .. })
    ));
    s.set_int32(&[n], &[3]).unwrap();
    s.exit_configuration_mode().unwrap();
    assert_eq!(s.state(), SlaveState::Instantiated);
    s.enter_initialization_mode(None, 0.0, None).unwrap();
    let mut got = [0];
    s.get_int32(&[n], &mut got).unwrap();
    assert_eq!(got, [3]);
    assert!(matches!(
        s.enter_configuration_mode(),
        Err(Error::WrongState { .. })
    ));
}

#[test]
fn unknown_value_references_fail_with_the_fmu_log() {
    for version in VERSIONS {
        let (mut s, _) = oscillator(
            version,
            &format!("unknown_vr_{version}"),
            Default::default(),
        );
        let err = s.get_float64(&[987_654], &mut [0.0]).unwrap_err();
        match &err {
            Error::Fmi {
                instance,
                function,
                status,
                log,
            } => {
                assert_eq!(instance, &format!("unknown_vr_{version}"));
                assert!(function.contains("Get"), "{function}");
                assert_eq!(*status, FmiStatus::Error);
                assert!(!log.is_empty(), "the FMU's message is attached");
                assert!(log.iter().any(|m| m.contains("987654")), "{log:?}");
            }
            other => panic!("expected Error::Fmi, got {other:?}"),
        }
        assert!(err.to_string().contains("987654"), "{err}");
        // After an Error the simulation cannot go on with the instance (FMI 2.0 §2.1.3, FMI
        // 3.0 §2.2.3): the step is refused before it reaches the FMU, a reset recovers it.
        assert_eq!(s.state(), SlaveState::Error);
        match s.do_step(0.0, 0.1) {
            Err(Error::WrongState {
                function, state, ..
            }) => {
                assert!(function.ends_with("DoStep"), "{function}");
                assert!(state.starts_with("Error (fmi"), "{state}");
                assert!(state.contains("returned Error"), "{state}");
            }
            other => panic!("FMI {version}: expected WrongState, got {other:?}"),
        }
        s.reset().unwrap();
        assert_eq!(s.state(), SlaveState::Instantiated);
        s.enter_initialization_mode(None, 0.0, None).unwrap();
    }
}

#[test]
fn fmi_calls_are_traced_with_arguments_and_status() {
    for version in VERSIONS {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink_lines = lines.clone();
        let options = InstanceOptions {
            log_fmi_calls: true,
            call_sink: Some(Arc::new(move |instance: &str, line: &str| {
                sink_lines
                    .lock()
                    .unwrap()
                    .push(format!("{instance}: {line}"));
            })),
            ..Default::default()
        };
        let name = format!("trace_{version}");
        let (mut s, o) = oscillator(version, &name, options);
        s.set_float64(&[o.f], &[1.5]).unwrap();
        s.do_step(0.0, 0.1).unwrap();
        let _ = s.get_float64(&[987_654], &mut [0.0]);
        drop(s);
        let lines = lines.lock().unwrap();
        let p = if version == 2 { "fmi2" } else { "fmi3" };
        let setter = if version == 2 {
            "SetReal"
        } else {
            "SetFloat64"
        };
        let want = format!("{name}: {p}{setter}(vr=[{}], value=[1.5]) -> OK", o.f);
        assert!(lines.contains(&want), "{want} not in {lines:#?}");
        assert!(lines
            .iter()
            .any(|l| l.contains(&format!("{p}DoStep(")) && l.ends_with("-> OK")));
        assert!(lines
            .iter()
            .any(|l| l.contains("vr=[987654]") && l.ends_with("-> Error")));
        assert!(lines.iter().any(|l| l.contains("Instantiate")));
        assert!(
            lines.last().is_some_and(|l| l.contains("FreeInstance")),
            "{lines:#?}"
        );
    }
}

/// Captures `log` records of target "fmu" (installed once for this test binary).
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if record.target() == "fmu" {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", record.level(), record.args()));
        }
    }
    fn flush(&self) {}
}

fn captured() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        let _ = log::set_logger(capture);
        log::set_max_level(log::LevelFilter::Trace);
        capture
    })
}

#[test]
fn fmu_log_messages_are_captured_and_forwarded() {
    let capture = captured();
    for version in VERSIONS {
        let messages = Arc::new(Mutex::new(Vec::<FmuLogMessage>::new()));
        let sink = messages.clone();
        let options = InstanceOptions {
            logging_on: true,
            log_sink: Some(Arc::new(move |m: &FmuLogMessage| {
                sink.lock().unwrap().push(m.clone())
            })),
            ..Default::default()
        };
        let name = format!("log_capture_{version}");
        let (mut s, _) = oscillator(version, &name, options);
        let _ = s.get_float64(&[424_242], &mut [0.0]);
        let messages = messages.lock().unwrap();
        let error = messages
            .iter()
            .find(|m| m.status == FmiStatus::Error)
            .unwrap_or_else(|| panic!("no error message in {messages:#?}"));
        assert_eq!(error.instance, name);
        assert!(error.message.contains("424242"), "{error:?}");
        assert!(!error.category.is_empty());
        let forwarded = capture.0.lock().unwrap();
        assert!(
            forwarded
                .iter()
                // Error messages travel inside the returned error, so the log crate gets them at
                // debug level (printing them as errors too would show every failure twice).
                .any(|l| l.starts_with("DEBUG") && l.contains(&name) && l.contains("424242")),
            "{forwarded:#?}"
        );
    }
}

#[test]
fn instances_share_one_library_and_run_on_other_threads() {
    for version in VERSIONS {
        // A private Fmu, so that other tests' instances do not change the count.
        let loaded = Fmu::open(&fmu_pack::fmu_path("Oscillator", version)).unwrap();
        let new = |name: &str| {
            let mut s = loaded.instantiate(name, Default::default()).unwrap();
            s.enter_initialization_mode(None, 0.0, None).unwrap();
            s.exit_initialization_mode().unwrap();
            s
        };
        let mut a = new("share_a");
        let b = new("share_b");
        assert_eq!(loaded.library().unwrap().live_instances(), 2);
        assert_eq!(
            loaded.library().unwrap().fmi_version(),
            if version == 2 {
                FmiVersion::Fmi2
            } else {
                FmiVersion::Fmi3
            }
        );
        let x = vr(&*a, "x");
        let handle = std::thread::spawn(move || {
            let mut b = b;
            b.do_step(0.0, 0.5).unwrap();
            let mut value = [0.0];
            b.get_float64(&[x], &mut value).unwrap();
            value[0]
        });
        a.do_step(0.0, 0.5).unwrap();
        let xa = get(&mut *a, &[x])[0];
        let xb = handle.join().unwrap();
        assert_eq!(xa, xb);
        // Dropped in step mode: terminated and freed without fuss.
        drop(a);
        assert_eq!(loaded.library().unwrap().live_instances(), 0);
    }
}

#[test]
fn failed_instantiation_reports_the_fmu_log() {
    for version in VERSIONS {
        let loaded = fmu("Oscillator", version);
        let mut description = (**loaded.description()).clone();
        description.instantiation_token = "{not-the-token}".into();
        let result = cosimo::fmu::instance::instantiate(
            loaded.library().unwrap().clone(),
            Arc::new(description),
            "bad_token",
            None,
            Default::default(),
        );
        match result {
            Err(Error::Fmi { function, log, .. }) => {
                assert!(function.contains("Instantiate"), "{function}");
                assert!(!log.is_empty(), "the FMU's reason is attached");
            }
            Err(other) => panic!("FMI {version}: expected Error::Fmi, got {other}"),
            Ok(_) => panic!("FMI {version}: a wrong token was accepted"),
        }
    }
}

#[test]
fn a_library_without_fmi_functions_is_refused_by_name() {
    let Some(libm) = common::skip::libm() else {
        common::skip::skipped(Skip::NoLibm, "no libm.so.6 found (dlopen, ldconfig -p)");
        return;
    };
    for version in VERSIONS {
        let description = fmu("Oscillator", version).description().clone();
        let err = cosimo::fmu::library::FmuLibrary::load(
            &libm,
            &description,
            cosimo::fmu::Interface::CoSimulation,
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Binary { .. }), "{text}");
        assert!(
            text.contains(&format!("does not export fmi{version}")),
            "{text}"
        );
    }
}

/// Collects traced FMI calls as "instance: call".
fn traced() -> (InstanceOptions, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink_lines = lines.clone();
    let options = InstanceOptions {
        log_fmi_calls: true,
        call_sink: Some(Arc::new(move |instance: &str, line: &str| {
            sink_lines
                .lock()
                .unwrap()
                .push(format!("{instance}: {line}"));
        })),
        ..Default::default()
    };
    (options, lines)
}

/// A Faulty instance with `failure` (fail_at = 0.5 s) in step mode at t = 0.
fn faulty(loaded: &Fmu, name: &str, failure: i32, options: InstanceOptions) -> Box<dyn Slave> {
    let mut s = loaded
        .instantiate(name, options)
        .unwrap_or_else(|e| panic!("{e}"));
    let failure_vr = vr(&*s, "failure");
    s.set_int32(&[failure_vr], &[failure]).unwrap();
    s.enter_initialization_mode(None, 0.0, None).unwrap();
    s.exit_initialization_mode().unwrap();
    s
}

/// How many calls the kit's FMU in `loaded` saw after one of its instances returned Fatal
/// (the kit exports the count; the library is the one cosimo loaded).
fn calls_after_fatal(loaded: &Fmu) -> usize {
    let path = loaded.library().unwrap().path().to_path_buf();
    // SAFETY: the kit's own library, already loaded by cosimo (this only adds a reference);
    // the symbol has this signature in every kit FMU.
    unsafe {
        let library = libloading::Library::new(&path).unwrap();
        let count: libloading::Symbol<unsafe extern "C" fn() -> usize> =
            library.get(b"fmu_kit_calls_after_fatal").unwrap();
        count()
    }
}

/// The WrongState error of a call refused after the Fatal of `fatal_instance`'s doStep.
fn assert_refused_after_fatal<T: std::fmt::Debug>(
    result: cosimo::Result<T>,
    version: u8,
    fatal_instance: &str,
) {
    match result {
        Err(Error::WrongState { state, .. }) => {
            let want = format!(
                "Fatal (fmi{version}DoStep of instance \"{fatal_instance}\" returned Fatal"
            );
            assert!(state.starts_with(&want), "{state}");
            assert!(state.contains("allows no further call"), "{state}");
        }
        other => panic!("FMI {version}: expected WrongState after Fatal, got {other:?}"),
    }
}

#[test]
fn after_fatal_no_call_reaches_any_instance_of_the_fmu() {
    for version in VERSIONS {
        // A private Fmu (its own copy of the library): the Fatal poisons every instance of it.
        let loaded = Fmu::open(&fmu_pack::fmu_path("Faulty", version)).unwrap();
        let (options, lines) = traced();
        let name = format!("fatal_{version}");
        let twin_name = format!("twin_{version}");
        let mut s = faulty(&loaded, &name, 3, options.clone());
        let mut twin = faulty(&loaded, &twin_name, 0, options);
        let x = vr(&*s, "x");
        for k in 0..4 {
            s.do_step(f64::from(k) * 0.1, 0.1).unwrap();
        }
        let p = format!("fmi{version}");
        match s.do_step(0.4, 0.1) {
            Err(Error::Fmi {
                function,
                status,
                log,
                ..
            }) => {
                assert_eq!(function, format!("{p}DoStep"));
                assert_eq!(status, FmiStatus::Fatal);
                assert!(
                    log.iter()
                        .any(|l| l.contains("simulated failure (Fatal) requested by parameter")),
                    "{log:?}"
                );
            }
            other => panic!("FMI {version}: expected the Fatal doStep, got {other:?}"),
        }
        let library = loaded.library().unwrap().clone();
        assert_eq!(
            library.fatal(),
            Some(format!("{p}DoStep of instance \"{name}\"").as_str())
        );
        let calls = lines.lock().unwrap().len();

        // This instance and every other one of the FMU refuse every call before the FMU.
        for slave in [&mut s, &mut twin] {
            assert_eq!(slave.state(), SlaveState::Fatal);
            assert_refused_after_fatal(slave.do_step(0.5, 0.1), version, &name);
            assert_refused_after_fatal(slave.get_float64(&[x], &mut [0.0]), version, &name);
            assert_refused_after_fatal(slave.set_float64(&[x], &[0.0]), version, &name);
            assert_refused_after_fatal(slave.terminate(), version, &name);
            assert_refused_after_fatal(slave.reset(), version, &name);
            assert_refused_after_fatal(slave.save_state(), version, &name);
        }
        // No new instance either (fmi*Instantiate is a call too).
        assert_refused_after_fatal(
            loaded.instantiate("late", Default::default()).map(|_| ()),
            version,
            &name,
        );

        // Dropping calls nothing: no fmi*Terminate, no fmi*FreeInstance (leaked on purpose).
        drop(s);
        drop(twin);
        let lines = lines.lock().unwrap();
        let after: Vec<&String> = lines[calls..].iter().collect();
        assert_eq!(after.len(), 2, "{after:#?}");
        for line in after {
            assert!(
                line.contains(&format!(
                    "{p}FreeInstance not called: {p}DoStep of instance"
                )),
                "{line}"
            );
        }
        assert_eq!(
            calls_after_fatal(&loaded),
            0,
            "the FMU saw calls after Fatal"
        );
        // The library stays loaded: the leaked instances hold it.
        assert!(Arc::strong_count(&library) > 2);
    }
}

#[test]
fn after_an_error_only_reset_restore_or_free_reach_the_fmu() {
    for version in VERSIONS {
        let loaded = fmu("Faulty", version);
        let (options, lines) = traced();
        let name = format!("error_{version}");
        let p = format!("fmi{version}");
        let mut s = faulty(&loaded, &name, 2, options);
        let (x, failure) = (vr(&*s, "x"), vr(&*s, "failure"));
        for k in 0..4 {
            s.do_step(f64::from(k) * 0.1, 0.1).unwrap();
        }
        let saved = s.save_state().unwrap();
        let err = s.do_step(0.4, 0.1).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Fmi {
                    status: FmiStatus::Error,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("simulated failure (Error)"),
            "{err}"
        );
        assert_eq!(s.state(), SlaveState::Error);

        // Refused: what the standard does not allow after Error (and what cosimo does not
        // need: getters give values "usable for debugging only", a state saved now could not
        // restart the simulation).
        let refused = |result: cosimo::Result<()>, what: &str| match result {
            Err(Error::WrongState { state, .. }) => {
                let want = format!("Error ({p}DoStep returned Error; ");
                assert!(state.starts_with(&want), "{what}: {state}");
            }
            other => panic!("FMI {version}: {what}: expected WrongState, got {other:?}"),
        };
        refused(s.do_step(0.4, 0.1).map(|_| ()), "doStep");
        refused(s.terminate(), "terminate");
        refused(s.get_float64(&[x], &mut [0.0]), "get");
        refused(s.set_int32(&[failure], &[0]), "set");
        refused(s.save_state().map(|_| ()), "save state");

        // Allowed: restoring a state saved before the error; then the run goes on (up to
        // just before fail_at).
        s.restore_state(saved).unwrap();
        assert_eq!(s.state(), SlaveState::StepMode);
        s.do_step(0.4, 0.05).unwrap();
        assert!((get(&mut *s, &[x])[0] - 0.45).abs() < 1e-12);

        // Allowed: reset (after the same failure again).
        s.do_step(0.45, 0.1).unwrap_err();
        assert_eq!(s.state(), SlaveState::Error);
        s.reset().unwrap();
        assert_eq!(s.state(), SlaveState::Instantiated);

        // On drop after an Error: fmi*FreeInstance only (no Terminate, no FreeFMUState: freeing
        // the instance frees its states, and `saved` is still one).
        s.set_int32(&[failure], &[2]).unwrap();
        s.enter_initialization_mode(None, 0.0, None).unwrap();
        s.exit_initialization_mode().unwrap();
        for k in 0..4 {
            s.do_step(f64::from(k) * 0.1, 0.1).unwrap();
        }
        s.do_step(0.4, 0.1).unwrap_err();
        let calls = lines.lock().unwrap().len();
        drop(s);
        let lines = lines.lock().unwrap();
        assert_eq!(
            lines[calls..],
            [format!("{name}: {p}FreeInstance()")],
            "{:#?}",
            &lines[calls - 1..]
        );
        assert!(
            lines[calls - 1].contains(&format!("{p}DoStep("))
                && lines[calls - 1].ends_with("-> Error"),
            "{}",
            lines[calls - 1]
        );
    }
}
