//! Every packed FMU, loaded through the independent harness, runs its whole FMI call sequence
//! with every call returning OK: instantiate, set-up, initialisation, steps with inputs set and
//! outputs read, FMU state save / restore (bit-identical continuation), serialisation (identical
//! continuation, also in a second instance), directional derivatives against central finite
//! differences, terminate, free. Models added to the packer later are covered automatically.

mod common;

use std::ffi::CStr;
use std::ops::Range;

use common::{
    close, expect_ok, experiment, fmi2, fmi3, for_each_fmu, packed_of_version, Cs, Extracted,
    ModelDescription,
};

/// Steps before the FMU state is saved.
const SAVE_AT: usize = 10;
/// Steps run after the save point (twice: before and after restoring).
const CONTINUE: usize = 20;
/// Relative tolerance of directional derivatives against central finite differences.
const DD_TOLERANCE: f64 = 1e-5;

/// The value of continuous input number `i` during step `k`: smooth, different per input.
fn input_value(k: usize, i: usize) -> f64 {
    0.5 * (0.3 * k as f64 + i as f64).sin() + 0.1 * i as f64
}

type Row = Vec<(String, u64)>;

/// Steps `steps` (time t0 + k h), setting the continuous Float64 inputs before each step and
/// taking a snapshot of every value after it.
fn run(inst: &dyn Cs, md: &ModelDescription, steps: Range<usize>) -> Result<Vec<Row>, String> {
    let (t0, h) = experiment(md);
    let inputs: Vec<u32> = md.continuous_f64_inputs().iter().map(|v| v.vr).collect();
    let mut rows = Vec::new();
    for k in steps {
        if !inputs.is_empty() {
            let u: Vec<f64> = (0..inputs.len()).map(|i| input_value(k, i)).collect();
            inst.set_f64(&inputs, &u)?;
        }
        inst.step(t0 + k as f64 * h, h)?;
        rows.push(inst.snapshot(md)?);
    }
    Ok(rows)
}

/// The first difference between two snapshots, if any.
fn row_difference(a: &Row, b: &Row) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("{} values vs {} values", a.len(), b.len()));
    }
    a.iter()
        .zip(b)
        .find(|(x, y)| x != y)
        .map(|((name, x), (_, y))| {
            format!(
                "{name}: {x:#018x} vs {y:#018x} (as f64: {:e} vs {:e})",
                f64::from_bits(*x),
                f64::from_bits(*y)
            )
        })
}

/// Fail unless two runs are bit-identical.
fn same_runs(first: &[Row], second: &[Row], what: &str) -> Result<(), String> {
    for (k, (a, b)) in first.iter().zip(second).enumerate() {
        if let Some(d) = row_difference(a, b) {
            return Err(format!(
                "{what}: continuation differs after step {}: {d}",
                SAVE_AT + k + 1
            ));
        }
    }
    Ok(())
}

/// Compare the directional derivatives d unknowns / d knowns with central finite differences
/// obtained by setting each known to x ± δ (δ = 1e-6 max(1, |x|)) and reading the unknowns.
fn check_directional_derivatives(
    inst: &dyn Cs,
    md: &ModelDescription,
    unknowns: &[u32],
    knowns: &[u32],
    when: &str,
) -> Result<(), String> {
    let name = |vr: u32| {
        md.by_vr(vr)
            .map_or_else(|| format!("vr {vr}"), |v| v.name.clone())
    };
    let x0 = inst.get_f64(knowns)?;
    let mut problems = Vec::new();
    for (j, &known) in knowns.iter().enumerate() {
        let mut seed = vec![0.0; knowns.len()];
        seed[j] = 1.0;
        let dd = inst.directional_derivative(unknowns, knowns, &seed)?;
        let delta = 1e-6 * x0[j].abs().max(1.0);
        inst.set_f64(&[known], &[x0[j] + delta])?;
        let plus = inst.get_f64(unknowns)?;
        inst.set_f64(&[known], &[x0[j] - delta])?;
        let minus = inst.get_f64(unknowns)?;
        inst.set_f64(&[known], &[x0[j]])?;
        for (i, &unknown) in unknowns.iter().enumerate() {
            let fd = (plus[i] - minus[i]) / (2.0 * delta);
            if !close(dd[i], fd, DD_TOLERANCE) {
                problems.push(format!(
                    "d {} / d {}: {}GetDirectionalDerivative = {:e}, central difference = {:e}",
                    name(unknown),
                    name(known),
                    inst.prefix(),
                    dd[i],
                    fd
                ));
            }
        }
    }
    // The seed is linear: all knowns at once must give the sum of the columns.
    if knowns.len() > 1 {
        let all = inst.directional_derivative(unknowns, knowns, &vec![1.0; knowns.len()])?;
        let mut sum = vec![0.0; unknowns.len()];
        for j in 0..knowns.len() {
            let mut seed = vec![0.0; knowns.len()];
            seed[j] = 1.0;
            for (s, d) in sum
                .iter_mut()
                .zip(inst.directional_derivative(unknowns, knowns, &seed)?)
            {
                *s += d;
            }
        }
        for (i, (a, s)) in all.iter().zip(&sum).enumerate() {
            if !close(*a, *s, 1e-12) {
                problems.push(format!(
                    "d {} with a seed of ones is {a:e}, the sum of the single-seed columns is {s:e}",
                    name(unknowns[i])
                ));
            }
        }
    }
    if problems.is_empty() {
        eprintln!(
            "  {}: directional derivatives {when} of {} w.r.t. {} agree with finite differences",
            md.model_name,
            unknowns
                .iter()
                .map(|&v| name(v))
                .collect::<Vec<_>>()
                .join(", "),
            knowns
                .iter()
                .map(|&v| name(v))
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(())
    } else {
        Err(format!(
            "directional derivatives {when}:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// Without continuous inputs, the directional derivatives are checked in Initialization Mode
/// with respect to the independent Float64 parameters (initial=exact), the continuous Float64
/// initial unknowns being the unknowns.
fn parameter_derivatives_in_initialization(
    inst: &dyn Cs,
    md: &ModelDescription,
) -> Result<(), String> {
    if !md.provides_directional_derivatives || !md.continuous_f64_inputs().is_empty() {
        return Ok(());
    }
    let knowns: Vec<u32> = md
        .variables
        .iter()
        .filter(|v| {
            v.causality == "parameter"
                && v.is_scalar()
                && v.ty == "Float64"
                && matches!(v.variability.as_str(), "fixed" | "tunable")
                && v.initial.as_deref().is_none_or(|i| i == "exact")
        })
        .map(|v| v.vr)
        .collect();
    // In Initialization Mode the unknowns are the initial unknowns (continuous Float64 ones).
    let unknowns: Vec<u32> = md
        .initial_unknowns
        .iter()
        .filter(|u| md.by_vr(u.vr).is_some_and(|v| v.is_continuous_f64()))
        .map(|u| u.vr)
        .collect();
    if knowns.is_empty() || unknowns.is_empty() {
        eprintln!(
            "  {}: no inputs and no Float64 parameters: directional derivatives not checked",
            md.model_name
        );
        return Ok(());
    }
    check_directional_derivatives(inst, md, &unknowns, &knowns, "in Initialization Mode")
}

/// When the FMU provides output derivatives: the first derivative of every output that is a
/// continuous state equals the value of that state's derivative variable (e.g. d x / dt = der(x)).
fn check_output_derivatives(inst: &dyn Cs, md: &ModelDescription) -> Result<(), String> {
    if md.max_output_derivative_order < 1 {
        return Ok(());
    }
    let pairs: Vec<(u32, u32)> = md
        .continuous_f64_outputs()
        .iter()
        .filter_map(|y| {
            md.variables
                .iter()
                .find(|d| d.derivative_of == Some(y.vr) && d.is_scalar())
                .map(|d| (y.vr, d.vr))
        })
        .collect();
    let outputs: Vec<u32> = md.continuous_f64_outputs().iter().map(|v| v.vr).collect();
    if outputs.is_empty() {
        return Ok(());
    }
    let p = inst.prefix();
    // Every order up to the maximum must be available.
    for order in 1..=md.max_output_derivative_order as i32 {
        let values = inst.output_derivatives(&outputs, &vec![order; outputs.len()])?;
        if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(format!(
                "output derivative of order {order} of vr {} is {v}",
                outputs[i]
            ));
        }
    }
    eprintln!(
        "  {}: output derivatives of orders 1..={} available; {} checked against state derivatives",
        md.model_name,
        md.max_output_derivative_order,
        pairs.len()
    );
    for (y, der) in pairs {
        let dy = inst.output_derivatives(&[y], &[1])?[0];
        let value = inst.get_f64(&[der])?[0];
        if !close(dy, value, 1e-12) {
            let name = |vr| md.by_vr(vr).map_or(String::new(), |v| v.name.clone());
            return Err(format!(
                "first output derivative of {} is {dy:e}, but {} = {value:e} ({p} output derivatives)",
                name(y),
                name(der)
            ));
        }
    }
    Ok(())
}

/// Everything after initialisation that both FMI versions share: steps, state round trip,
/// serialisation (also into `fresh()`, a second initialised instance), directional derivatives.
fn after_initialization<'a>(
    inst: &dyn Cs,
    md: &ModelDescription,
    fresh: &dyn Fn() -> Result<Box<dyn Cs + 'a>, String>,
) -> Result<(), String> {
    run(inst, md, 0..SAVE_AT)?;
    let continuation = SAVE_AT..SAVE_AT + CONTINUE;
    if md.can_get_and_set_state {
        let p = inst.prefix();
        let at_save = inst.snapshot(md)?;
        let state = inst.get_state()?;
        let first = run(inst, md, continuation.clone())?;
        inst.set_state(state)?;
        if let Some(d) = row_difference(&at_save, &inst.snapshot(md)?) {
            return Err(format!(
                "after {p}SetFMUState the values differ from the saved ones: {d}"
            ));
        }
        let second = run(inst, md, continuation.clone())?;
        same_runs(
            &first,
            &second,
            &format!("{p}GetFMUState / {p}SetFMUState round trip"),
        )?;
        if md.can_serialize_state {
            let bytes = inst.serialize_state(state)?;
            inst.free_state(state)?;
            let restored = inst.deserialize_state(&bytes)?;
            inst.set_state(restored)?;
            if let Some(d) = row_difference(&at_save, &inst.snapshot(md)?) {
                return Err(format!(
                    "after deserialising and setting the state the values differ: {d}"
                ));
            }
            let third = run(inst, md, continuation.clone())?;
            same_runs(
                &first,
                &third,
                "serialise / deserialise / set state (same instance)",
            )?;
            inst.free_state(restored)?;

            let other = fresh()?;
            let moved = other.deserialize_state(&bytes)?;
            other.set_state(moved)?;
            if let Some(d) = row_difference(&at_save, &other.snapshot(md)?) {
                return Err(format!(
                    "state deserialised into a second instance: values differ: {d}"
                ));
            }
            let fourth = run(&*other, md, continuation.clone())?;
            same_runs(&first, &fourth, "serialised state set in a second instance")?;
            other.free_state(moved)?;
        } else {
            inst.free_state(state)?;
        }
    } else {
        run(inst, md, continuation)?;
    }
    check_output_derivatives(inst, md)?;
    let inputs: Vec<u32> = md.continuous_f64_inputs().iter().map(|v| v.vr).collect();
    let outputs: Vec<u32> = md.continuous_f64_outputs().iter().map(|v| v.vr).collect();
    if md.provides_directional_derivatives && !inputs.is_empty() && !outputs.is_empty() {
        check_directional_derivatives(inst, md, &outputs, &inputs, "in Step Mode")?;
    }
    Ok(())
}

fn ok(status: i32, call: &str, log: &common::LogSink, from: usize) -> Result<(), String> {
    expect_ok(status, call, log, from)
}

/// A second FMI 2 instance, initialised.
fn fresh_fmi2<'a>(
    api: &'a fmi2::Api,
    fmu: &Extracted,
    t0: f64,
) -> Result<Box<dyn Cs + 'a>, String> {
    let other = fmi2::Instance::new(api, fmu, "second")?;
    ok(
        other.setup_experiment(t0),
        "fmi2SetupExperiment (second instance)",
        &other.log,
        0,
    )?;
    ok(
        other.enter_initialization_mode(),
        "fmi2EnterInitializationMode (second instance)",
        &other.log,
        0,
    )?;
    ok(
        other.exit_initialization_mode(),
        "fmi2ExitInitializationMode (second instance)",
        &other.log,
        0,
    )?;
    Ok(Box::new(other))
}

/// A second FMI 3 instance, initialised.
fn fresh_fmi3<'a>(
    api: &'a fmi3::Api,
    fmu: &Extracted,
    t0: f64,
) -> Result<Box<dyn Cs + 'a>, String> {
    let other = fmi3::Instance::new(api, fmu, "second")?;
    ok(
        other.enter_initialization_mode(t0),
        "fmi3EnterInitializationMode (second instance)",
        &other.log,
        0,
    )?;
    ok(
        other.exit_initialization_mode(),
        "fmi3ExitInitializationMode (second instance)",
        &other.log,
        0,
    )?;
    Ok(Box::new(other))
}

fn fmi2_sequence(fmu: &Extracted) -> Result<(), String> {
    let md = &fmu.md;
    let api = fmi2::Api::load(fmu)?;
    // SAFETY: both return static C strings.
    let (version, platform) = unsafe {
        (
            CStr::from_ptr((api.get_version)()),
            CStr::from_ptr((api.get_types_platform)()),
        )
    };
    if version.to_bytes() != b"2.0" || platform.to_bytes() != b"default" {
        return Err(format!("fmi2GetVersion = {version:?} (want \"2.0\"), fmi2GetTypesPlatform = {platform:?} (want \"default\")"));
    }
    let (t0, _) = experiment(md);
    let inst = fmi2::Instance::new(&api, fmu, "harness")?;
    let log = &*inst.log;
    ok(
        inst.set_debug_logging(true),
        "fmi2SetDebugLogging(true)",
        log,
        0,
    )?;
    ok(inst.setup_experiment(t0), "fmi2SetupExperiment", log, 0)?;
    ok(
        inst.enter_initialization_mode(),
        "fmi2EnterInitializationMode",
        log,
        0,
    )?;
    parameter_derivatives_in_initialization(&inst, md)?;
    ok(
        inst.exit_initialization_mode(),
        "fmi2ExitInitializationMode",
        log,
        0,
    )?;
    let fresh = || fresh_fmi2(&api, fmu, t0);
    after_initialization(&inst, md, &fresh)?;
    let from = log.len();
    ok(inst.terminate(), "fmi2Terminate", log, from)?;
    inst.free();
    Ok(())
}

fn fmi3_sequence(fmu: &Extracted) -> Result<(), String> {
    let md = &fmu.md;
    let api = fmi3::Api::load(fmu)?;
    // SAFETY: returns a static C string.
    let version = unsafe { CStr::from_ptr((api.get_version)()) };
    if version.to_bytes() != b"3.0" {
        return Err(format!("fmi3GetVersion = {version:?}, want \"3.0\""));
    }
    let (t0, _) = experiment(md);
    let inst = fmi3::Instance::new(&api, fmu, "harness")?;
    let log = &*inst.log;
    ok(
        inst.set_debug_logging(true),
        "fmi3SetDebugLogging(true)",
        log,
        0,
    )?;
    ok(
        inst.enter_initialization_mode(t0),
        "fmi3EnterInitializationMode",
        log,
        0,
    )?;
    parameter_derivatives_in_initialization(&inst, md)?;
    ok(
        inst.exit_initialization_mode(),
        "fmi3ExitInitializationMode",
        log,
        0,
    )?;
    let fresh = || fresh_fmi3(&api, fmu, t0);
    after_initialization(&inst, md, &fresh)?;
    let from = log.len();
    ok(inst.terminate(), "fmi3Terminate", log, from)?;
    inst.free();
    Ok(())
}

#[test]
fn fmi2_call_sequence_of_every_fmu() {
    for_each_fmu(&packed_of_version(2), fmi2_sequence);
}

#[test]
fn fmi3_call_sequence_of_every_fmu() {
    for_each_fmu(&packed_of_version(3), fmi3_sequence);
}

/// Steps an initialised instance `n` times with the harness inputs and returns every scalar
/// numeric / Boolean value by name, with its type.
fn trajectory(
    inst: &dyn Cs,
    md: &ModelDescription,
    n: usize,
) -> Result<Vec<(String, String, u64)>, String> {
    run(inst, md, 0..n)?;
    Ok(inst
        .snapshot(md)?
        .into_iter()
        .filter_map(|(name, bits)| {
            let var = md.var(&name)?;
            Some((name, var.ty.clone(), bits))
        })
        .collect())
}

/// The FMI 2 and FMI 3 builds of the same model compute the same values (Float64 to 1e-12
/// relative, integers and Booleans exactly) after the same steps with the same inputs.
#[test]
fn fmi2_and_fmi3_builds_agree() {
    const STEPS: usize = 30;
    let fmi3_fmus = packed_of_version(3);
    let pairs: Vec<_> = packed_of_version(2)
        .into_iter()
        .filter_map(|p2| {
            fmi3_fmus
                .iter()
                .find(|p3| p3.model == p2.model)
                .map(|p3| (p2, *p3))
        })
        .collect();
    assert!(
        pairs.iter().any(|(p, _)| p.model == "Oscillator"),
        "no Oscillator in both FMI versions"
    );
    let mut failures = Vec::new();
    for (p2, p3) in pairs {
        let result = (|| -> Result<(), String> {
            let (f2, f3) = (Extracted::new(p2)?, Extracted::new(p3)?);
            let (api2, api3) = (fmi2::Api::load(&f2)?, fmi3::Api::load(&f3)?);
            let (t0, _) = experiment(&f2.md);
            if experiment(&f2.md) != experiment(&f3.md) {
                return Err(format!(
                    "default experiments differ: {:?} vs {:?}",
                    experiment(&f2.md),
                    experiment(&f3.md)
                ));
            }
            let i2 = fmi2::Instance::new(&api2, &f2, "fmi2")?;
            ok(i2.setup_experiment(t0), "fmi2SetupExperiment", &i2.log, 0)?;
            ok(
                i2.enter_initialization_mode(),
                "fmi2EnterInitializationMode",
                &i2.log,
                0,
            )?;
            ok(
                i2.exit_initialization_mode(),
                "fmi2ExitInitializationMode",
                &i2.log,
                0,
            )?;
            let i3 = fmi3::Instance::new(&api3, &f3, "fmi3")?;
            ok(
                i3.enter_initialization_mode(t0),
                "fmi3EnterInitializationMode",
                &i3.log,
                0,
            )?;
            ok(
                i3.exit_initialization_mode(),
                "fmi3ExitInitializationMode",
                &i3.log,
                0,
            )?;
            let a = trajectory(&i2, &f2.md, STEPS)?;
            let b = trajectory(&i3, &f3.md, STEPS)?;
            let mut compared = 0;
            for (name, ty, x2) in &a {
                let Some((_, _, x3)) = b.iter().find(|(n, t, _)| n == name && t == ty) else {
                    continue;
                };
                compared += 1;
                let same = if ty == "Float64" {
                    close(f64::from_bits(*x2), f64::from_bits(*x3), 1e-12)
                } else {
                    x2 == x3
                };
                if !same {
                    let show = |b: u64| {
                        if ty == "Float64" {
                            format!("{:e}", f64::from_bits(b))
                        } else {
                            format!("{}", b as i64)
                        }
                    };
                    return Err(format!(
                        "after {STEPS} steps {name} = {} (FMI 2) vs {} (FMI 3)",
                        show(*x2),
                        show(*x3)
                    ));
                }
            }
            if compared == 0 {
                return Err("no variables in common".into());
            }
            eprintln!(
                "ok: {} FMI 2 and FMI 3 agree on {compared} variables",
                p2.model
            );
            Ok(())
        })();
        if let Err(e) = result {
            failures.push(format!("{}: {e}", p2.model));
        }
    }
    assert!(
        failures.is_empty(),
        "FMI 2 and FMI 3 builds disagree:\n{}",
        failures.join("\n")
    );
}
