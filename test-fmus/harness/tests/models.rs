//! Model-specific checks through the independent harness, where they add value beyond the
//! generic call sequence: closed-form solutions (Dahlquist, Oscillator), every FMI type passing
//! through Feedthrough, the failures Faulty simulates on request, and OscillatorChain's
//! structural parameter `n` (FMI 3 Configuration Mode; an ordinary parameter in FMI 2).

mod common;

use std::ffi::{c_void, CStr, CString};
use std::fmt::Debug;
use std::os::raw::c_char;

use common::{
    close, expect_ok, experiment, fmi2, fmi3, status_name, Cs, Extracted, LogSink,
    ModelDescription, DISCARD, ERROR, FATAL, OK,
};

fn ok(status: i32, call: &str, log: &LogSink) -> Result<(), String> {
    expect_ok(status, call, log, 0)
}

/// Run `check` for each packed FMU of `model` (both versions) and panic with every failure.
fn for_model(model: &str, check: impl Fn(&Extracted) -> Result<(), String>) {
    let fmus: Vec<_> = common::packed()
        .iter()
        .filter(|p| p.model == model)
        .collect();
    assert!(!fmus.is_empty(), "no {model} FMU was packed");
    common::for_each_fmu(&fmus, check);
}

/// An FMI 2 instance after initialisation.
fn fmi2_initialized<'a>(api: &'a fmi2::Api, fmu: &Extracted) -> Result<fmi2::Instance<'a>, String> {
    let inst = fmi2::Instance::new(api, fmu, "model-check")?;
    ok(
        inst.setup_experiment(experiment(&fmu.md).0),
        "fmi2SetupExperiment",
        &inst.log,
    )?;
    ok(
        inst.enter_initialization_mode(),
        "fmi2EnterInitializationMode",
        &inst.log,
    )?;
    ok(
        inst.exit_initialization_mode(),
        "fmi2ExitInitializationMode",
        &inst.log,
    )?;
    Ok(inst)
}

/// An FMI 3 instance after initialisation.
fn fmi3_initialized<'a>(api: &'a fmi3::Api, fmu: &Extracted) -> Result<fmi3::Instance<'a>, String> {
    let inst = fmi3::Instance::new(api, fmu, "model-check")?;
    ok(
        inst.enter_initialization_mode(experiment(&fmu.md).0),
        "fmi3EnterInitializationMode",
        &inst.log,
    )?;
    ok(
        inst.exit_initialization_mode(),
        "fmi3ExitInitializationMode",
        &inst.log,
    )?;
    Ok(inst)
}
/// Steps an initialised instance to `t_end` with the default step size, inputs left at their
/// start values, and returns the named Float64 values there.
fn values_at(
    inst: &dyn Cs,
    md: &ModelDescription,
    t_end: f64,
    names: &[&str],
) -> Result<Vec<f64>, String> {
    let (t0, h) = experiment(md);
    let n = ((t_end - t0) / h).round() as usize;
    for k in 0..n {
        inst.step(t0 + k as f64 * h, h)?;
    }
    inst.get_f64(&names.iter().map(|n| md.vr(n)).collect::<Vec<_>>())
}

/// Dahlquist (x' = -k x) and the free Oscillator (m x'' = -c x - d v) follow their closed-form
/// solutions at the default parameters, in both FMI versions (the kit integrates linear models
/// exactly, so to 1e-9).
#[test]
fn dahlquist_and_oscillator_follow_their_closed_form_solutions() {
    const T: f64 = 2.0;
    const TOLERANCE: f64 = 1e-9;
    let mut failures = Vec::new();
    for packed in common::packed()
        .iter()
        .filter(|p| p.model == "Dahlquist" || p.model == "Oscillator")
    {
        let result = (|| -> Result<(), String> {
            let fmu = Extracted::new(packed)?;
            let md = &fmu.md;
            let start = |name: &str| -> Result<f64, String> {
                md.var(name)
                    .and_then(|v| v.start.as_deref())
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| format!("no start value of {name}"))
            };
            let (names, expected): (Vec<&str>, Vec<f64>) = if packed.model == "Dahlquist" {
                let (k, x0) = (start("k")?, start("x0")?);
                (vec!["x"], vec![x0 * (-k * T).exp()])
            } else {
                let (m, c, d, x0, v0) = (
                    start("m")?,
                    start("c")?,
                    start("d")?,
                    start("x0")?,
                    start("v0")?,
                );
                // Underdamped: x = e^(-σt) (x0 cos ωt + (v0 + σ x0)/ω sin ωt).
                let sigma = d / (2.0 * m);
                let omega = (c / m - sigma * sigma).sqrt();
                assert!(
                    omega > 0.0,
                    "default Oscillator parameters are not underdamped"
                );
                let (s, co, e) = ((omega * T).sin(), (omega * T).cos(), (-sigma * T).exp());
                let b = (v0 + sigma * x0) / omega;
                let x = e * (x0 * co + b * s);
                let v = e * (-sigma * (x0 * co + b * s) + (-x0 * omega * s + b * omega * co));
                (vec!["x", "v"], vec![x, v])
            };
            let got = if packed.fmi_version == 2 {
                let api = fmi2::Api::load(&fmu)?;
                let inst = fmi2_initialized(&api, &fmu)?;
                values_at(&inst, md, T, &names)?
            } else {
                let api = fmi3::Api::load(&fmu)?;
                let inst = fmi3_initialized(&api, &fmu)?;
                values_at(&inst, md, T, &names)?
            };
            for ((name, want), have) in names.iter().zip(&expected).zip(&got) {
                eprintln!(
                    "  {}: {name}({T}) = {have:e}, closed form {want:e}, error {:e}",
                    fmu.label(),
                    have - want
                );
                if !close(*have, *want, TOLERANCE) {
                    return Err(format!("{name}({T}) = {have:e}, closed form {want:e}"));
                }
            }
            Ok(())
        })();
        if let Err(e) = result {
            failures.push(format!(
                "{} (FMI {}): {e}",
                packed.model, packed.fmi_version
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Set FMI 3 `input` to `values`, read `output` back, and require equality.
#[allow(clippy::type_complexity)]
fn fmi3_pair<T: Copy + PartialEq + Debug + Default>(
    inst: &fmi3::Instance,
    md: &ModelDescription,
    (input, output): (&str, &str),
    set: unsafe extern "C" fn(*mut c_void, *const u32, usize, *const T, usize) -> i32,
    get: unsafe extern "C" fn(*mut c_void, *const u32, usize, *mut T, usize) -> i32,
    values: &[T],
) -> Result<(), String> {
    let (vin, vout) = ([md.vr(input)], [md.vr(output)]);
    let mut got = vec![T::default(); values.len()];
    // SAFETY: one value reference each, `values.len()` values.
    let status = unsafe { set(inst.c, vin.as_ptr(), 1, values.as_ptr(), values.len()) };
    ok(status, &format!("set {input} = {values:?}"), &inst.log)?;
    // SAFETY: as above.
    let status = unsafe { get(inst.c, vout.as_ptr(), 1, got.as_mut_ptr(), got.len()) };
    ok(status, &format!("get {output}"), &inst.log)?;
    if got != values {
        return Err(format!("{input} = {values:?} but {output} = {got:?}"));
    }
    Ok(())
}

/// Every FMI 3 input type of Feedthrough reaches its output unchanged (extreme values, a 2×3
/// array, a UTF-8 string, a Binary with an inner NUL byte), before and after a step.
fn feedthrough_fmi3(fmu: &Extracted) -> Result<(), String> {
    let md = &fmu.md;
    let api = fmi3::Api::load(fmu)?;
    let inst = fmi3_initialized(&api, fmu)?;
    let text = CString::new("feed → through ✓").expect("no NUL");
    let bytes: [u8; 4] = [0x00, 0x01, 0xfe, 0xff];
    let (t0, h) = experiment(md);
    for pass in 0..2 {
        let a = &api;
        fmi3_pair(
            &inst,
            md,
            ("Float32_continuous_input", "Float32_continuous_output"),
            a.set_float32,
            a.get_float32,
            &[-1.5e38f32],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Float32_discrete_input", "Float32_discrete_output"),
            a.set_float32,
            a.get_float32,
            &[f32::MIN_POSITIVE],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Float64_continuous_input", "Float64_continuous_output"),
            a.set_float64,
            a.get_float64,
            &[std::f64::consts::PI],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Float64_discrete_input", "Float64_discrete_output"),
            a.set_float64,
            a.get_float64,
            &[-1e300],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Int8_input", "Int8_output"),
            a.set_int8,
            a.get_int8,
            &[i8::MIN],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("UInt8_input", "UInt8_output"),
            a.set_uint8,
            a.get_uint8,
            &[u8::MAX],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Int16_input", "Int16_output"),
            a.set_int16,
            a.get_int16,
            &[i16::MIN],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("UInt16_input", "UInt16_output"),
            a.set_uint16,
            a.get_uint16,
            &[u16::MAX],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Int32_input", "Int32_output"),
            a.set_int32,
            a.get_int32,
            &[i32::MIN],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("UInt32_input", "UInt32_output"),
            a.set_uint32,
            a.get_uint32,
            &[u32::MAX],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Int64_input", "Int64_output"),
            a.set_int64,
            a.get_int64,
            &[i64::MIN],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("UInt64_input", "UInt64_output"),
            a.set_uint64,
            a.get_uint64,
            &[u64::MAX],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Boolean_input", "Boolean_output"),
            a.set_boolean,
            a.get_boolean,
            &[pass == 0],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Enumeration_input", "Enumeration_output"),
            a.set_int64,
            a.get_int64,
            &[2],
        )?;
        fmi3_pair(
            &inst,
            md,
            ("Float64_array_input", "Float64_array_output"),
            a.set_float64,
            a.get_float64,
            &[1.0, -2.0, 3.5, 0.0, -0.0, 6e-300],
        )?;

        let (vin, vout) = ([md.vr("String_input")], [md.vr("String_output")]);
        let mut got: [*const c_char; 1] = [std::ptr::null()];
        // SAFETY: one value reference, one C string; the FMU copies it.
        let status = unsafe { (api.set_string)(inst.c, vin.as_ptr(), 1, &text.as_ptr(), 1) };
        ok(status, "fmi3SetString(String_input)", &inst.log)?;
        // SAFETY: one value reference, one out-pointer.
        let status = unsafe { (api.get_string)(inst.c, vout.as_ptr(), 1, got.as_mut_ptr(), 1) };
        ok(status, "fmi3GetString(String_output)", &inst.log)?;
        // SAFETY: the FMU returned OK with a C string, valid until the next call.
        let out = (!got[0].is_null()).then(|| unsafe { CStr::from_ptr(got[0]) }.to_owned());
        if out.as_deref() != Some(text.as_c_str()) {
            return Err(format!(
                "String_input = {text:?} but String_output = {out:?}"
            ));
        }

        let (vin, vout) = ([md.vr("Binary_input")], [md.vr("Binary_output")]);
        let (mut size, mut ptr) = ([0usize], [std::ptr::null::<u8>()]);
        // SAFETY: one value reference, one (size, pointer) pair; the FMU copies the bytes.
        let status =
            unsafe { (api.set_binary)(inst.c, vin.as_ptr(), 1, &bytes.len(), &bytes.as_ptr(), 1) };
        ok(status, "fmi3SetBinary(Binary_input)", &inst.log)?;
        // SAFETY: one value reference, one (size, pointer) out-pair.
        let status = unsafe {
            (api.get_binary)(
                inst.c,
                vout.as_ptr(),
                1,
                size.as_mut_ptr(),
                ptr.as_mut_ptr(),
                1,
            )
        };
        ok(status, "fmi3GetBinary(Binary_output)", &inst.log)?;
        // SAFETY: the FMU returned OK with `size` bytes at `ptr`.
        let out = (!ptr[0].is_null())
            .then(|| unsafe { std::slice::from_raw_parts(ptr[0], size[0]) }.to_vec());
        if out.as_deref() != Some(&bytes[..]) {
            return Err(format!(
                "Binary_input = {bytes:02x?} but Binary_output = {out:02x?}"
            ));
        }
        if pass == 0 {
            inst.step(t0, h)?;
        }
    }
    Ok(())
}

/// Every FMI 2 input type of Feedthrough reaches its output unchanged, before and after a step.
fn feedthrough_fmi2(fmu: &Extracted) -> Result<(), String> {
    let md = &fmu.md;
    let api = fmi2::Api::load(fmu)?;
    let inst = fmi2_initialized(&api, fmu)?;
    let vr = |n: &str| [md.vr(n)];
    let text = CString::new("feed → through ✓").expect("no NUL");
    let (t0, h) = experiment(md);
    for pass in 0..2 {
        for (input, output, value) in [
            (
                "Float64_continuous_input",
                "Float64_continuous_output",
                std::f64::consts::PI,
            ),
            ("Float64_discrete_input", "Float64_discrete_output", -1e300),
        ] {
            ok(
                inst.set_real(&vr(input), &[value]),
                &format!("fmi2SetReal({input})"),
                &inst.log,
            )?;
            let mut got = [0.0];
            ok(
                inst.get_real(&vr(output), &mut got),
                &format!("fmi2GetReal({output})"),
                &inst.log,
            )?;
            if got[0] != value {
                return Err(format!("{input} = {value:e} but {output} = {:e}", got[0]));
            }
        }
        for (input, output, value) in [
            ("Int32_input", "Int32_output", i32::MIN),
            ("Enumeration_input", "Enumeration_output", 2),
        ] {
            ok(
                inst.set_integer(&vr(input), &[value]),
                &format!("fmi2SetInteger({input})"),
                &inst.log,
            )?;
            let mut got = [0];
            ok(
                inst.get_integer(&vr(output), &mut got),
                &format!("fmi2GetInteger({output})"),
                &inst.log,
            )?;
            if got[0] != value {
                return Err(format!("{input} = {value} but {output} = {}", got[0]));
            }
        }
        let b = i32::from(pass == 0);
        // SAFETY: one value reference, one value.
        let status = unsafe { (api.set_boolean)(inst.c, vr("Boolean_input").as_ptr(), 1, &b) };
        ok(status, "fmi2SetBoolean(Boolean_input)", &inst.log)?;
        let mut got = [7];
        ok(
            inst.get_boolean(&vr("Boolean_output"), &mut got),
            "fmi2GetBoolean(Boolean_output)",
            &inst.log,
        )?;
        if got[0] != b {
            return Err(format!(
                "Boolean_input = {b} but Boolean_output = {}",
                got[0]
            ));
        }
        // SAFETY: one value reference, one C string; the FMU copies it.
        let status =
            unsafe { (api.set_string)(inst.c, vr("String_input").as_ptr(), 1, &text.as_ptr()) };
        ok(status, "fmi2SetString(String_input)", &inst.log)?;
        let mut got: *const c_char = std::ptr::null();
        // SAFETY: one value reference, one out-pointer.
        let status = unsafe { (api.get_string)(inst.c, vr("String_output").as_ptr(), 1, &mut got) };
        ok(status, "fmi2GetString(String_output)", &inst.log)?;
        // SAFETY: the FMU returned OK with a C string, valid until the next call.
        let out = (!got.is_null()).then(|| unsafe { CStr::from_ptr(got) }.to_owned());
        if out.as_deref() != Some(text.as_c_str()) {
            return Err(format!(
                "String_input = {text:?} but String_output = {out:?}"
            ));
        }
        if pass == 0 {
            inst.step(t0, h)?;
        }
    }
    Ok(())
}

#[test]
fn feedthrough_passes_every_type_through() {
    for_model("Feedthrough", |fmu| match fmu.md.fmi_version {
        2 => feedthrough_fmi2(fmu),
        _ => feedthrough_fmi3(fmu),
    });
}

/// Faulty with `failure` = 1, 2, 3, 4 and `fail_at` = 0.45 s, stepped by 0.1 s: the step ending
/// at 0.5 s returns Discard (having reached 0.45 s: FMI 2 `fmi2LastSuccessfulTime`, FMI 3
/// `lastSuccessfulTime`, and x = 0.45), Error or Fatal, with a log message; the earlier steps
/// return OK. With 4 the FMU requests termination at 0.45 s: FMI 2 returns Discard with
/// `fmi2Terminated` true, FMI 3 OK with `terminateSimulation` and `earlyReturn`; either way x =
/// 0.45, the message "termination requested by parameter failure at t = 0.45" is logged, a
/// further step is refused with Error and `fmi*Terminate` returns OK.
fn faulty(fmu: &Extracted) -> Result<(), String> {
    const FAIL_AT: f64 = 0.45;
    const H: f64 = 0.1;
    const TERMINATE: i32 = 4;
    let md = &fmu.md;
    let (failure, fail_at, x) = (md.vr("failure"), md.vr("fail_at"), md.vr("x"));
    // (failure, FMI 2 status, FMI 3 status)
    for (mode, want2, want3) in [
        (1, DISCARD, DISCARD),
        (2, ERROR, ERROR),
        (3, FATAL, FATAL),
        (TERMINATE, DISCARD, OK),
    ] {
        let context = |e: String| format!("failure = {mode}: {e}");
        let check_x = |value: f64| -> Result<(), String> {
            if close(value, FAIL_AT, 1e-12) {
                Ok(())
            } else {
                Err(format!("after the step x = {value}, want {FAIL_AT}"))
            }
        };
        let result = (|| -> Result<(), String> {
            let (status, want, messages, log) = if md.fmi_version == 2 {
                let api = fmi2::Api::load(fmu)?;
                let inst = fmi2::Instance::new(&api, fmu, "faulty")?;
                ok(
                    inst.set_integer(&[failure], &[mode]),
                    "fmi2SetInteger(failure)",
                    &inst.log,
                )?;
                ok(
                    inst.set_real(&[fail_at], &[FAIL_AT]),
                    "fmi2SetReal(fail_at)",
                    &inst.log,
                )?;
                ok(inst.setup_experiment(0.0), "fmi2SetupExperiment", &inst.log)?;
                ok(
                    inst.enter_initialization_mode(),
                    "fmi2EnterInitializationMode",
                    &inst.log,
                )?;
                ok(
                    inst.exit_initialization_mode(),
                    "fmi2ExitInitializationMode",
                    &inst.log,
                )?;
                for k in 0..4 {
                    inst.step(k as f64 * H, H)?;
                }
                let before = inst.log.len();
                let status = inst.do_step(0.4, H);
                let messages = inst.log.len() - before;
                if status == DISCARD {
                    let mut last = f64::NAN;
                    // SAFETY: live instance, out-pointer to a local; 2 = fmi2LastSuccessfulTime.
                    let s = unsafe { (api.get_real_status)(inst.c, 2, &mut last) };
                    ok(
                        s,
                        "fmi2GetRealStatus(fmi2LastSuccessfulTime) after Discard",
                        &inst.log,
                    )?;
                    if !close(last, FAIL_AT, 1e-12) {
                        return Err(format!("fmi2LastSuccessfulTime = {last}, want {FAIL_AT}"));
                    }
                    let mut terminated = -1;
                    // SAFETY: live instance, out-pointer to a local; 3 = fmi2Terminated.
                    let s = unsafe { (api.get_boolean_status)(inst.c, 3, &mut terminated) };
                    ok(
                        s,
                        "fmi2GetBooleanStatus(fmi2Terminated) after Discard",
                        &inst.log,
                    )?;
                    if terminated != i32::from(mode == TERMINATE) {
                        return Err(format!("fmi2Terminated = {terminated} after the Discard"));
                    }
                    check_x(inst.get_f64(&[x])?[0])?;
                }
                if mode == TERMINATE && status == DISCARD {
                    let s = inst.do_step(FAIL_AT, H);
                    if s != ERROR {
                        return Err(format!(
                            "fmi2DoStep after the termination request returned {}",
                            status_name(s)
                        ));
                    }
                    ok(
                        inst.terminate(),
                        "fmi2Terminate after the request",
                        &inst.log,
                    )?;
                }
                let outcome = (status, want2, messages, inst.log.since(before));
                if status == FATAL {
                    inst.abandon();
                }
                outcome
            } else {
                let api = fmi3::Api::load(fmu)?;
                let inst = fmi3::Instance::new(&api, fmu, "faulty")?;
                ok(
                    inst.set_int32(&[failure], &[mode]),
                    "fmi3SetInt32(failure)",
                    &inst.log,
                )?;
                ok(
                    inst.set_float64(&[fail_at], &[FAIL_AT]),
                    "fmi3SetFloat64(fail_at)",
                    &inst.log,
                )?;
                ok(
                    inst.enter_initialization_mode(0.0),
                    "fmi3EnterInitializationMode",
                    &inst.log,
                )?;
                ok(
                    inst.exit_initialization_mode(),
                    "fmi3ExitInitializationMode",
                    &inst.log,
                )?;
                for k in 0..4 {
                    inst.step(k as f64 * H, H)?;
                }
                let before = inst.log.len();
                let (status, r) = inst.do_step(0.4, H);
                let messages = inst.log.len() - before;
                if status == DISCARD || status == OK {
                    if !close(r.last_successful_time, FAIL_AT, 1e-12) {
                        return Err(format!(
                            "{} with lastSuccessfulTime = {}, want {FAIL_AT}",
                            status_name(status),
                            r.last_successful_time
                        ));
                    }
                    if r.terminate_simulation != (mode == TERMINATE) || !r.early_return {
                        return Err(format!(
                            "{} with {r:?}: want terminateSimulation = {} and earlyReturn",
                            status_name(status),
                            mode == TERMINATE
                        ));
                    }
                    check_x(inst.get_f64(&[x])?[0])?;
                }
                if mode == TERMINATE && status == OK {
                    let (s, _) = inst.do_step(FAIL_AT, H);
                    if s != ERROR {
                        return Err(format!(
                            "fmi3DoStep after the termination request returned {}",
                            status_name(s)
                        ));
                    }
                    ok(
                        inst.terminate(),
                        "fmi3Terminate after the request",
                        &inst.log,
                    )?;
                }
                let outcome = (status, want3, messages, inst.log.since(before));
                if status == FATAL {
                    inst.abandon();
                }
                outcome
            };
            if status != want {
                return Err(format!(
                    "the step reaching fail_at returned {} ({status}), want {} ({want})",
                    status_name(status),
                    status_name(want)
                ));
            }
            if messages == 0 {
                return Err("the simulated failure logged no message".into());
            }
            let text = "termination requested by parameter failure at t = 0.45";
            if mode == TERMINATE && !log.contains(text) {
                return Err(format!("no message {text:?} in the log:\n{log}"));
            }
            Ok(())
        })();
        result.map_err(context)?;
    }
    Ok(())
}

#[test]
fn faulty_fails_as_requested() {
    for_model("Faulty", faulty);
}

/// OscillatorChain after `steps` default steps with F_left = 1 N and n = `n` set the way the
/// FMI version wants it: FMI 3 in Configuration Mode (n is a structural parameter; setting it
/// in Instantiated must fail with a message naming it), FMI 2 as an ordinary parameter.
/// Returns x_last, v_last, a_first.
fn chain_with_n(fmu: &Extracted, n: i32, steps: usize) -> Result<Vec<f64>, String> {
    let md = &fmu.md;
    let (n_vr, f_left) = (md.vr("n"), md.vr("F_left"));
    let outputs = [md.vr("x_last"), md.vr("v_last"), md.vr("a_first")];
    let (t0, h) = experiment(md);
    let run = |inst: &dyn Cs| -> Result<Vec<f64>, String> {
        for k in 0..steps {
            inst.step(t0 + k as f64 * h, h)?;
        }
        inst.get_f64(&outputs)
    };
    if fmu.packed.fmi_version == 2 {
        let api = fmi2::Api::load(fmu)?;
        let inst = fmi2::Instance::new(&api, fmu, "chain")?;
        ok(
            inst.set_integer(&[n_vr], &[n]),
            "fmi2SetInteger(n)",
            &inst.log,
        )?;
        ok(
            inst.set_real(&[f_left], &[1.0]),
            "fmi2SetReal(F_left)",
            &inst.log,
        )?;
        ok(inst.setup_experiment(t0), "fmi2SetupExperiment", &inst.log)?;
        ok(
            inst.enter_initialization_mode(),
            "fmi2EnterInitializationMode",
            &inst.log,
        )?;
        ok(
            inst.exit_initialization_mode(),
            "fmi2ExitInitializationMode",
            &inst.log,
        )?;
        return run(&inst);
    }
    let api = fmi3::Api::load(fmu)?;
    let inst = fmi3::Instance::new(&api, fmu, "chain")?;
    let from = inst.log.len();
    let status = inst.set_int32(&[n_vr], &[n]);
    let said = inst.log.since(from);
    if status != ERROR || !(said.contains("'n'") && said.contains("Configuration Mode")) {
        return Err(format!(
            "fmi3SetInt32(n) in Instantiated returned {}, want Error with a message naming n \
             and Configuration Mode; log: {said}",
            status_name(status)
        ));
    }
    ok(
        inst.enter_configuration_mode(),
        "fmi3EnterConfigurationMode",
        &inst.log,
    )?;
    ok(
        inst.set_int32(&[n_vr], &[n]),
        "fmi3SetInt32(n) in Configuration Mode",
        &inst.log,
    )?;
    ok(
        inst.exit_configuration_mode(),
        "fmi3ExitConfigurationMode",
        &inst.log,
    )?;
    ok(
        inst.set_float64(&[f_left], &[1.0]),
        "fmi3SetFloat64(F_left)",
        &inst.log,
    )?;
    ok(
        inst.enter_initialization_mode(t0),
        "fmi3EnterInitializationMode",
        &inst.log,
    )?;
    let from = inst.log.len();
    if inst.set_int32(&[n_vr], &[n]) != ERROR {
        return Err(format!(
            "fmi3SetInt32(n) in Initialization Mode was accepted; log: {}",
            inst.log.since(from)
        ));
    }
    ok(
        inst.exit_initialization_mode(),
        "fmi3ExitInitializationMode",
        &inst.log,
    )?;
    run(&inst)
}

#[test]
fn oscillator_chain_n_is_structural_in_fmi3_and_a_parameter_in_fmi2() {
    let steps = 20;
    let mut results = Vec::new();
    for version in [2, 3] {
        let packed = common::packed()
            .iter()
            .find(|p| p.model == "OscillatorChain" && p.fmi_version == version)
            .unwrap_or_else(|| panic!("no OscillatorChain FMU for FMI {version}"));
        let fmu = Extracted::new(packed).unwrap_or_else(|e| panic!("{e}"));
        for n in [3, 10] {
            let got = chain_with_n(&fmu, n, steps)
                .unwrap_or_else(|e| panic!("OscillatorChain FMI {version}, n = {n}: {e}"));
            eprintln!("  FMI {version}, n = {n}: x_last, v_last, a_first = {got:?}");
            results.push(got);
        }
    }
    let (fmi2_3, fmi2_10, fmi3_3, fmi3_10) = (&results[0], &results[1], &results[2], &results[3]);
    let relative = |a: f64, b: f64| (a - b).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE);
    for (a, b) in fmi2_3.iter().zip(fmi3_3).chain(fmi2_10.iter().zip(fmi3_10)) {
        assert!(
            relative(*a, *b) < 1e-12,
            "FMI 2 and FMI 3 differ: {a:e} vs {b:e}"
        );
    }
    // n changes the chain: the force on mass 1 moves the last of three masses more than the
    // last of ten, and accelerates a shorter chain's first mass more.
    assert!(
        relative(fmi3_3[0], fmi3_10[0]) > 0.1 && relative(fmi3_3[2], fmi3_10[2]) > 0.1,
        "x_last with n = 3 ({:e}) and n = 10 ({:e}) should differ",
        fmi3_3[0],
        fmi3_10[0]
    );
}
