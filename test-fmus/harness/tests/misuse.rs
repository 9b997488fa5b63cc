//! Misuse: calls the standard says an FMU must refuse return `Error` (3) with a log message,
//! never a crash, and a wrong GUID / instantiation token makes instantiation return NULL.
//!
//! After a function returned `Error` the standard allows only `FreeInstance` (or `Reset`, or
//! restoring an earlier FMU state), so every case runs on a fresh instance that is then freed.
//! Undefined behaviour (a foreign or freed FMU state, NULL pointers, calls after
//! `FreeInstance`) is not exercised.
//!
//! Note: reading values after `Terminate` is *allowed* by both standards (FMI 2 state
//! "terminated", FMI 3 "Terminated": get functions permitted, so that final values can be
//! read); the tests check it returns OK, and that stepping and setting inputs after it are refused.

mod common;

use common::{fmi2, fmi3, for_each_fmu, packed_of_version, status_name, Extracted, LogSink, ERROR};

/// Where in the life cycle a misuse case happens.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    /// Right after instantiation.
    Instantiated,
    /// In Initialization Mode.
    Initialization,
    /// After initialisation (FMI 2 stepComplete, FMI 3 Step Mode), two steps done.
    Step,
    /// After `Terminate`.
    Terminated,
}

/// Check that `status` is Error and that the FMU logged why.
fn refused(case: &str, status: i32, log: &LogSink, before: usize) -> Result<(), String> {
    if status != ERROR {
        return Err(format!(
            "{case}: returned {} ({status}), the standard requires the call to be refused with Error (3); log:\n{}",
            status_name(status),
            log.since(before)
        ));
    }
    if log.len() == before {
        return Err(format!("{case}: returned Error but logged no message"));
    }
    Ok(())
}

fn must_be_ok(what: &str, status: i32, log: &LogSink) -> Result<(), String> {
    common::expect_ok(status, what, log, 0)
}

/// Value references for the cases, taken from the model description.
struct Targets {
    unknown_vr: u32,
    float_output: Option<u32>,
    float_input: Option<u32>,
    fixed_float_parameter: Option<u32>,
    float_constant: Option<u32>,
    /// A scalar FMI 2 Integer / FMI 3 Int32 variable.
    int32: Option<u32>,
    /// Any scalar Float64 variable.
    float: Option<u32>,
}

impl Targets {
    fn new(md: &common::ModelDescription) -> Targets {
        let find = |f: &dyn Fn(&common::md::Variable) -> bool| {
            md.variables
                .iter()
                .find(|v| v.is_scalar() && f(v))
                .map(|v| v.vr)
        };
        Targets {
            unknown_vr: md.unused_vr(),
            float_output: find(&|v| v.ty == "Float64" && v.causality == "output"),
            float_input: find(&|v| v.ty == "Float64" && v.causality == "input"),
            fixed_float_parameter: find(&|v| {
                v.ty == "Float64" && v.causality == "parameter" && v.variability == "fixed"
            }),
            float_constant: find(&|v| v.ty == "Float64" && v.variability == "constant"),
            int32: find(&|v| v.ty == "Int32" && v.causality != "independent"),
            float: find(&|v| v.ty == "Float64" && v.causality != "independent"),
        }
    }
}

type Case2 = (String, Stage, Box<dyn Fn(&fmi2::Instance) -> i32>);

fn fmi2_at<'a>(
    api: &'a fmi2::Api,
    fmu: &Extracted,
    stage: Stage,
) -> Result<fmi2::Instance<'a>, String> {
    let inst = fmi2::Instance::new(api, fmu, "misuse")?;
    let t0 = fmu.md.start_time.unwrap_or(0.0);
    let h = fmu.md.step_size.unwrap_or(0.01);
    if stage == Stage::Instantiated {
        return Ok(inst);
    }
    must_be_ok("fmi2SetupExperiment", inst.setup_experiment(t0), &inst.log)?;
    must_be_ok(
        "fmi2EnterInitializationMode",
        inst.enter_initialization_mode(),
        &inst.log,
    )?;
    if stage == Stage::Initialization {
        return Ok(inst);
    }
    must_be_ok(
        "fmi2ExitInitializationMode",
        inst.exit_initialization_mode(),
        &inst.log,
    )?;
    must_be_ok("fmi2DoStep", inst.do_step(t0, h), &inst.log)?;
    must_be_ok("fmi2DoStep", inst.do_step(t0 + h, h), &inst.log)?;
    if stage == Stage::Step {
        return Ok(inst);
    }
    must_be_ok("fmi2Terminate", inst.terminate(), &inst.log)?;
    Ok(inst)
}

fn fmi2_cases(md: &common::ModelDescription) -> Vec<Case2> {
    let t = Targets::new(md);
    let t0 = md.start_time.unwrap_or(0.0);
    let h = md.step_size.unwrap_or(0.01);
    let mut cases: Vec<Case2> = vec![
        (
            "fmi2DoStep before initialisation".into(),
            Stage::Instantiated,
            Box::new(move |i| i.do_step(t0, h)),
        ),
        (
            "fmi2DoStep in Initialization Mode".into(),
            Stage::Initialization,
            Box::new(move |i| i.do_step(t0, h)),
        ),
        (
            "fmi2ExitInitializationMode twice".into(),
            Stage::Step,
            Box::new(|i| i.exit_initialization_mode()),
        ),
        (
            "fmi2EnterInitializationMode after initialisation".into(),
            Stage::Step,
            Box::new(|i| i.enter_initialization_mode()),
        ),
        (
            "fmi2DoStep after fmi2Terminate".into(),
            Stage::Terminated,
            Box::new(move |i| i.do_step(t0 + 2.0 * h, h)),
        ),
        (
            "fmi2Terminate twice".into(),
            Stage::Terminated,
            Box::new(|i| i.terminate()),
        ),
    ];
    let unknown = t.unknown_vr;
    cases.push((
        format!("fmi2GetReal of unknown vr {unknown}"),
        Stage::Step,
        Box::new(move |i| i.get_real(&[unknown], &mut [0.0])),
    ));
    cases.push((
        format!("fmi2SetReal of unknown vr {unknown}"),
        Stage::Step,
        Box::new(move |i| i.set_real(&[unknown], &[0.0])),
    ));
    cases.push((
        format!("fmi2GetInteger of unknown vr {unknown}"),
        Stage::Step,
        Box::new(move |i| i.get_integer(&[unknown], &mut [0])),
    ));
    cases.push((
        format!("fmi2GetReal of unknown vr {unknown} in Initialization Mode"),
        Stage::Initialization,
        Box::new(move |i| i.get_real(&[unknown], &mut [0.0])),
    ));
    if let Some(vr) = t.float {
        cases.push((
            format!("fmi2GetInteger of Real vr {vr}"),
            Stage::Step,
            Box::new(move |i| i.get_integer(&[vr], &mut [0])),
        ));
        cases.push((
            format!("fmi2GetReal of [vr {vr}, unknown vr {unknown}]"),
            Stage::Step,
            Box::new(move |i| i.get_real(&[vr, unknown], &mut [0.0, 0.0])),
        ));
    }
    if let Some(vr) = t.int32 {
        cases.push((
            format!("fmi2GetReal of Integer vr {vr}"),
            Stage::Step,
            Box::new(move |i| i.get_real(&[vr], &mut [0.0])),
        ));
    }
    if let Some(vr) = t.float_output {
        cases.push((
            format!("fmi2SetReal of output vr {vr}"),
            Stage::Step,
            Box::new(move |i| i.set_real(&[vr], &[1.0])),
        ));
    }
    if let Some(vr) = t.fixed_float_parameter {
        cases.push((
            format!("fmi2SetReal of fixed parameter vr {vr} after initialisation"),
            Stage::Step,
            Box::new(move |i| i.set_real(&[vr], &[1.0])),
        ));
    }
    if let Some(vr) = t.float_constant {
        cases.push((
            format!("fmi2SetReal of constant vr {vr}"),
            Stage::Step,
            Box::new(move |i| i.set_real(&[vr], &[1.0])),
        ));
    }
    if let Some(vr) = t.float_input {
        cases.push((
            format!("fmi2SetReal of input vr {vr} after fmi2Terminate"),
            Stage::Terminated,
            Box::new(move |i| i.set_real(&[vr], &[1.0])),
        ));
    }
    if md.provides_directional_derivatives {
        if let Some(out) = t.float_output {
            cases.push((
                format!("fmi2GetDirectionalDerivative with unknown known vr {unknown}"),
                Stage::Step,
                Box::new(move |i| i.directional_derivative(&[out], &[unknown], &[1.0], &mut [0.0])),
            ));
        }
    }
    cases
}

fn fmi2_misuse(fmu: &Extracted) -> Result<(), String> {
    let md = &fmu.md;
    let api = fmi2::Api::load(fmu)?;
    let uri = fmi2::file_uri(&fmu.resources());
    let mut problems = Vec::new();
    let instantiate = |guid: &str, fmu_type| {
        fmi2::Instance::with(
            &api,
            &fmi2::InstantiateArgs {
                name: "misuse",
                fmu_type,
                guid,
                resource_uri: &uri,
                logging_on: true,
            },
        )
    };
    if instantiate(
        "{00000000-0000-0000-0000-000000000000}",
        fmi2::CO_SIMULATION,
    )
    .is_ok()
    {
        problems.push(
            "fmi2Instantiate with a wrong GUID returned an instance, the standard requires NULL"
                .to_string(),
        );
    }
    if !md.has_model_exchange && instantiate(&md.token, fmi2::MODEL_EXCHANGE).is_ok() {
        problems.push("fmi2Instantiate as fmi2ModelExchange of a Co-Simulation-only FMU returned an instance, want NULL".into());
    }
    for (case, stage, call) in fmi2_cases(md) {
        let result = fmi2_at(&api, fmu, stage).and_then(|inst| {
            let before = inst.log.len();
            let status = call(&inst);
            let verdict = refused(&case, status, &inst.log, before)
                .map(|()| inst.log.records()[before].message.clone());
            inst.free();
            verdict
        });
        match result {
            Ok(message) => eprintln!("  refused: {case}: {message}"),
            Err(e) => problems.push(e),
        }
    }
    // Allowed: reading after terminate.
    let result = fmi2_at(&api, fmu, Stage::Terminated).and_then(|inst| {
        if let Some(vr) = Targets::new(md).float {
            must_be_ok(
                "fmi2GetReal after fmi2Terminate (allowed)",
                inst.get_real(&[vr], &mut [0.0]),
                &inst.log,
            )?;
        }
        inst.free();
        Ok(())
    });
    if let Err(e) = result {
        problems.push(e);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

type Case3 = (String, Stage, Box<dyn Fn(&fmi3::Instance) -> i32>);

fn fmi3_at<'a>(
    api: &'a fmi3::Api,
    fmu: &Extracted,
    stage: Stage,
) -> Result<fmi3::Instance<'a>, String> {
    let inst = fmi3::Instance::new(api, fmu, "misuse")?;
    let t0 = fmu.md.start_time.unwrap_or(0.0);
    let h = fmu.md.step_size.unwrap_or(0.01);
    if stage == Stage::Instantiated {
        return Ok(inst);
    }
    must_be_ok(
        "fmi3EnterInitializationMode",
        inst.enter_initialization_mode(t0),
        &inst.log,
    )?;
    if stage == Stage::Initialization {
        return Ok(inst);
    }
    must_be_ok(
        "fmi3ExitInitializationMode",
        inst.exit_initialization_mode(),
        &inst.log,
    )?;
    must_be_ok("fmi3DoStep", inst.do_step(t0, h).0, &inst.log)?;
    must_be_ok("fmi3DoStep", inst.do_step(t0 + h, h).0, &inst.log)?;
    if stage == Stage::Step {
        return Ok(inst);
    }
    must_be_ok("fmi3Terminate", inst.terminate(), &inst.log)?;
    Ok(inst)
}

fn fmi3_cases(md: &common::ModelDescription) -> Vec<Case3> {
    let t = Targets::new(md);
    let t0 = md.start_time.unwrap_or(0.0);
    let h = md.step_size.unwrap_or(0.01);
    let mut cases: Vec<Case3> = vec![
        (
            "fmi3DoStep before initialisation".into(),
            Stage::Instantiated,
            Box::new(move |i| i.do_step(t0, h).0),
        ),
        (
            "fmi3DoStep in Initialization Mode".into(),
            Stage::Initialization,
            Box::new(move |i| i.do_step(t0, h).0),
        ),
        (
            "fmi3ExitInitializationMode twice".into(),
            Stage::Step,
            Box::new(|i| i.exit_initialization_mode()),
        ),
        (
            "fmi3EnterInitializationMode in Step Mode".into(),
            Stage::Step,
            Box::new(move |i| i.enter_initialization_mode(t0)),
        ),
        (
            "fmi3DoStep after fmi3Terminate".into(),
            Stage::Terminated,
            Box::new(move |i| i.do_step(t0 + 2.0 * h, h).0),
        ),
        (
            "fmi3Terminate twice".into(),
            Stage::Terminated,
            Box::new(|i| i.terminate()),
        ),
    ];
    let unknown = t.unknown_vr;
    cases.push((
        format!("fmi3GetFloat64 of unknown vr {unknown}"),
        Stage::Step,
        Box::new(move |i| i.get_float64(&[unknown], &mut [0.0])),
    ));
    cases.push((
        format!("fmi3SetFloat64 of unknown vr {unknown}"),
        Stage::Step,
        Box::new(move |i| i.set_float64(&[unknown], &[0.0])),
    ));
    cases.push((
        format!("fmi3GetInt32 of unknown vr {unknown}"),
        Stage::Step,
        Box::new(move |i| i.get_int32(&[unknown], &mut [0])),
    ));
    cases.push((
        format!("fmi3GetFloat64 of unknown vr {unknown} in Initialization Mode"),
        Stage::Initialization,
        Box::new(move |i| i.get_float64(&[unknown], &mut [0.0])),
    ));
    if let Some(vr) = t.float {
        cases.push((
            format!("fmi3GetInt32 of Float64 vr {vr}"),
            Stage::Step,
            Box::new(move |i| i.get_int32(&[vr], &mut [0])),
        ));
        cases.push((
            format!("fmi3GetFloat64 of [vr {vr}, unknown vr {unknown}]"),
            Stage::Step,
            Box::new(move |i| i.get_float64(&[vr, unknown], &mut [0.0, 0.0])),
        ));
        cases.push((
            format!("fmi3GetFloat64 of scalar vr {vr} with nValues = 2"),
            Stage::Step,
            Box::new(move |i| i.get_float64(&[vr], &mut [0.0, 0.0])),
        ));
    }
    if let Some(vr) = t.int32 {
        cases.push((
            format!("fmi3GetFloat64 of Int32 vr {vr}"),
            Stage::Step,
            Box::new(move |i| i.get_float64(&[vr], &mut [0.0])),
        ));
    }
    if let Some(vr) = t.float_output {
        cases.push((
            format!("fmi3SetFloat64 of output vr {vr}"),
            Stage::Step,
            Box::new(move |i| i.set_float64(&[vr], &[1.0])),
        ));
    }
    if let Some(vr) = t.fixed_float_parameter {
        cases.push((
            format!("fmi3SetFloat64 of fixed parameter vr {vr} in Step Mode"),
            Stage::Step,
            Box::new(move |i| i.set_float64(&[vr], &[1.0])),
        ));
    }
    if let Some(vr) = t.float_constant {
        cases.push((
            format!("fmi3SetFloat64 of constant vr {vr}"),
            Stage::Step,
            Box::new(move |i| i.set_float64(&[vr], &[1.0])),
        ));
    }
    if let Some(vr) = t.float_input {
        cases.push((
            format!("fmi3SetFloat64 of input vr {vr} after fmi3Terminate"),
            Stage::Terminated,
            Box::new(move |i| i.set_float64(&[vr], &[1.0])),
        ));
    }
    if md.provides_directional_derivatives {
        if let Some(out) = t.float_output {
            cases.push((
                format!("fmi3GetDirectionalDerivative with unknown known vr {unknown}"),
                Stage::Step,
                Box::new(move |i| i.directional_derivative(&[out], &[unknown], &[1.0], &mut [0.0])),
            ));
        }
    }
    cases
}

fn fmi3_misuse(fmu: &Extracted) -> Result<(), String> {
    let md = &fmu.md;
    let api = fmi3::Api::load(fmu)?;
    let mut problems = Vec::new();
    let mut resources = fmu.resources().to_string_lossy().into_owned();
    resources.push('/');
    if fmi3::Instance::with(
        &api,
        "misuse",
        "{00000000-0000-0000-0000-000000000000}",
        &resources,
    )
    .is_ok()
    {
        problems.push(
            "fmi3InstantiateCoSimulation with a wrong instantiationToken returned an instance, want NULL".to_string(),
        );
    }
    for (case, stage, call) in fmi3_cases(md) {
        let result = fmi3_at(&api, fmu, stage).and_then(|inst| {
            let before = inst.log.len();
            let status = call(&inst);
            let verdict = refused(&case, status, &inst.log, before)
                .map(|()| inst.log.records()[before].message.clone());
            inst.free();
            verdict
        });
        match result {
            Ok(message) => eprintln!("  refused: {case}: {message}"),
            Err(e) => problems.push(e),
        }
    }
    let result = fmi3_at(&api, fmu, Stage::Terminated).and_then(|inst| {
        if let Some(vr) = Targets::new(md).float {
            must_be_ok(
                "fmi3GetFloat64 after fmi3Terminate (allowed)",
                inst.get_float64(&[vr], &mut [0.0]),
                &inst.log,
            )?;
        }
        inst.free();
        Ok(())
    });
    if let Err(e) = result {
        problems.push(e);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

#[test]
fn fmi2_misuse_is_refused_by_every_fmu() {
    for_each_fmu(&packed_of_version(2), fmi2_misuse);
}

#[test]
fn fmi3_misuse_is_refused_by_every_fmu() {
    for_each_fmu(&packed_of_version(3), fmi3_misuse);
}
