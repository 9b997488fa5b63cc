//! The FMI 3.0 Co-Simulation C API, generic over the model; `export_fmu!` instantiates it.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;

use crate::ffi::{self, categories, guard, null_arg, slice, slice_mut, text, with};
use crate::fmi2::check_step_times;
use crate::instance::{Fmi3Log, Instance, Interface, Logger, Phase, Sink, Status, Version};
use crate::model::{Context, Model};
use crate::values::Element;
use crate::variable::{Causality, Table, VarType};

/// `fmi3IntermediateUpdateCallback`.
pub type IntermediateUpdate = unsafe extern "C" fn(
    env: *mut c_void,
    time: f64,
    set_requested: bool,
    get_allowed: bool,
    step_finished: bool,
    can_return_early: bool,
    early_return_requested: *mut bool,
    early_return_time: *mut f64,
);

/// The FMI 3 `clockUpdate` callback type (Scheduled Execution).
pub type ClockUpdate = unsafe extern "C" fn(env: *mut c_void);

/// Whether the model has events, which decides `hasEventMode`.
pub fn has_events<M: Model>() -> bool {
    M::NUM_EVENT_INDICATORS > 0 || M::HAS_TIME_EVENTS || !M::default().clocks().is_empty()
}

/// `fmi3InstantiateCoSimulation`.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
#[allow(clippy::too_many_arguments)]
pub unsafe fn instantiate_co_simulation<M: Model>(
    name: *const c_char,
    token: *const c_char,
    resource_path: *const c_char,
    _visible: bool,
    logging_on: bool,
    event_mode_used: bool,
    early_return_allowed: bool,
    required: *const u32,
    n_required: usize,
    env: *mut c_void,
    log_message: Option<Fmi3Log>,
    intermediate_update: Option<IntermediateUpdate>,
) -> *mut c_void {
    if M::SCHEDULED_EXECUTION {
        return instantiate_unsupported::<M>("fmi3InstantiateCoSimulation", name, env, log_message);
    }
    guard(std::ptr::null_mut(), || {
        const F: &str = "fmi3InstantiateCoSimulation";
        let Some(mut inst) =
            new_instance::<M>(F, name, token, resource_path, logging_on, env, log_message)
        else {
            return std::ptr::null_mut();
        };
        let table = inst.table.clone();
        let err = |msg: String| inst.logger.log(Status::Error, 2, &format!("{F}: {msg}"));
        if event_mode_used && !has_events::<M>() {
            err(
                "eventModeUsed = true, but this FMU has no event mode (hasEventMode = false)"
                    .into(),
            );
            return std::ptr::null_mut();
        }
        let Some(required) = slice(required, n_required) else {
            err("requiredIntermediateVariables is NULL".into());
            return std::ptr::null_mut();
        };
        if let Some(vr) = required.iter().find(|&&vr| table.index_of(vr).is_none()) {
            err(format!(
                "requiredIntermediateVariables: unknown value reference {vr}"
            ));
            return std::ptr::null_mut();
        }
        inst.event_mode_used = event_mode_used;
        inst.early_return_allowed = early_return_allowed;
        inst.intermediate = intermediate_update.map(|f| (f, env));
        Box::into_raw(Box::new(inst)) as *mut c_void
    })
}

/// The instance `fmi3Instantiate*` create, after the checks they share; `None` (logged) when
/// the token does not match.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
unsafe fn new_instance<M: Model>(
    func: &str,
    name: *const c_char,
    token: *const c_char,
    resource_path: *const c_char,
    logging_on: bool,
    env: *mut c_void,
    log_message: Option<Fmi3Log>,
) -> Option<Instance<M>> {
    let name = text(name).unwrap_or_default();
    let sink = log_message.map_or(Sink::None, |l| Sink::V3(l, env));
    let logger = Logger::new(sink, &name, logging_on);
    let err = |msg: String| logger.log(Status::Error, 2, &format!("{func}: {msg}"));
    let model = M::default();
    let table = match Table::new(M::NAME, model.variables()) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            err(format!("invalid variable table: {e}"));
            return None;
        }
    };
    if let Err(e) = crate::clock::check_clocks(&table, &model.clocks()) {
        err(format!("invalid clocks: {e}"));
        return None;
    }
    match text(token) {
        Some(g) if g == table.token => {}
        g => {
            err(format!(
                "instantiationToken {g:?} does not match this FMU's {}",
                table.token
            ));
            return None;
        }
    }
    let cx = Context {
        instance_name: name,
        fmi_version: 3,
        resource_dir: text(resource_path).map(std::path::PathBuf::from),
        start_time: 0.0,
    };
    Some(Instance::new(model, table, logger, cx, Version::V3))
}

/// `fmi3InstantiateModelExchange`: an instance for Model Exchange when the model opted in
/// ([`Model::MODEL_EXCHANGE`]), else NULL with a log message.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn instantiate_model_exchange<M: Model>(
    name: *const c_char,
    token: *const c_char,
    resource_path: *const c_char,
    _visible: bool,
    logging_on: bool,
    env: *mut c_void,
    log_message: Option<Fmi3Log>,
) -> *mut c_void {
    const F: &str = "fmi3InstantiateModelExchange";
    if !M::MODEL_EXCHANGE {
        return instantiate_unsupported::<M>(F, name, env, log_message);
    }
    guard(std::ptr::null_mut(), || {
        match new_instance::<M>(F, name, token, resource_path, logging_on, env, log_message) {
            Some(mut inst) => {
                inst.interface = Interface::ModelExchange;
                Box::into_raw(Box::new(inst)) as *mut c_void
            }
            None => std::ptr::null_mut(),
        }
    })
}

/// `fmi3InstantiateScheduledExecution`: an instance whose partitions the importer activates,
/// when the model is a Scheduled Execution model ([`Model::SCHEDULED_EXECUTION`]), else NULL
/// with a log message.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
#[allow(clippy::too_many_arguments)]
pub unsafe fn instantiate_scheduled_execution<M: Model>(
    name: *const c_char,
    token: *const c_char,
    resource_path: *const c_char,
    logging_on: bool,
    env: *mut c_void,
    log_message: Option<Fmi3Log>,
    clock_update: Option<ClockUpdate>,
    lock_preemption: Option<crate::clock::Preemption>,
    unlock_preemption: Option<crate::clock::Preemption>,
) -> *mut c_void {
    const F: &str = "fmi3InstantiateScheduledExecution";
    if !M::SCHEDULED_EXECUTION {
        return instantiate_unsupported::<M>(F, name, env, log_message);
    }
    guard(std::ptr::null_mut(), || {
        let Some(mut inst) =
            new_instance::<M>(F, name, token, resource_path, logging_on, env, log_message)
        else {
            return std::ptr::null_mut();
        };
        let (Some(update), Some(lock), Some(unlock)) =
            (clock_update, lock_preemption, unlock_preemption)
        else {
            inst.logger.log(
                Status::Error,
                2,
                &format!("{F}: clockUpdate, lockPreemption and unlockPreemption must not be NULL"),
            );
            return std::ptr::null_mut();
        };
        inst.interface = Interface::ScheduledExecution;
        inst.clock_update = Some((update, env));
        inst.clocks.preemption = Some((lock, unlock));
        Box::into_raw(Box::new(inst)) as *mut c_void
    })
}

/// `fmi3ActivateModelPartition`: runs the partition of input clock `vr` at `time` (its clock
/// alone active), then calls `clockUpdate` if it raised an output clock or scheduled a
/// countdown.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn activate_model_partition<M: Model>(c: *mut c_void, vr: u32, time: f64) -> c_int {
    const F: &str = "fmi3ActivateModelPartition";
    let mut notify = None;
    let st = with::<M>(c, F, |inst| {
        if inst.interface != Interface::ScheduledExecution {
            return inst.fail(
                F,
                "the instance was not instantiated for Scheduled Execution",
            );
        }
        if let Err(s) = inst.expect(F, &[Phase::Step]) {
            return s;
        }
        let k = match inst.clocks.index(vr) {
            Some(k) if !inst.clocks.clocks[k].output => k,
            Some(_) => return inst.fail(F, format!("clock vr {vr} is an output clock")),
            None => return inst.fail(F, format!("value reference {vr} is not a clock")),
        };
        if !time.is_finite() || time < inst.s.time {
            return inst.fail(
                F,
                format!(
                    "activationTime {time} is before the time of the last activation ({})",
                    inst.s.time
                ),
            );
        }
        if let Err(s) = inst.ensure_fresh(F) {
            return s;
        }
        inst.s.time = time;
        inst.s.values.set_f64(crate::variable::TIME_VR, time);
        let updates = inst.clocks.updates;
        inst.clocks.active[k] = true;
        let mut ticks = crate::clock::Ticks {
            state: &mut inst.clocks,
        };
        let ran = inst.model.clock_tick(&mut inst.s.values, time, &mut ticks);
        inst.clocks.active[k] = false;
        inst.s.dirty = true;
        if let Err(e) = ran {
            return inst.fail(
                F,
                format!("partition '{}': {e}", inst.clocks.clocks[k].name),
            );
        }
        if inst.clocks.updates != updates {
            notify = inst.clock_update;
        }
        Status::Ok
    });
    // Outside the instance's borrow: the importer may call back into the FMU from here.
    if let Some((update, env)) = notify {
        update(env);
    }
    st
}

/// `fmi3InstantiateModelExchange` / `fmi3InstantiateScheduledExecution`: not supported.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn instantiate_unsupported<M: Model>(
    func: &str,
    name: *const c_char,
    env: *mut c_void,
    log: Option<Fmi3Log>,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let logger = Logger::new(
            log.map_or(Sink::None, |l| Sink::V3(l, env)),
            &text(name).unwrap_or_default(),
            true,
        );
        let only = if M::SCHEDULED_EXECUTION {
            "Scheduled Execution"
        } else {
            "Co-Simulation"
        };
        logger.log(
            Status::Error,
            2,
            &format!("{func}: this FMU supports {only} only"),
        );
        std::ptr::null_mut()
    })
}

/// `fmi3FreeInstance`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn free_instance<M: Model>(c: *mut c_void) {
    crate::fmi2::free_instance_named::<M>(c, "fmi3FreeInstance")
}

/// `fmi3SetDebugLogging`.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn set_debug_logging<M: Model>(
    c: *mut c_void,
    on: bool,
    n: usize,
    cats: *const *const c_char,
) -> c_int {
    const F: &str = "fmi3SetDebugLogging";
    with::<M>(c, F, |inst| match categories(cats, n) {
        Some(cats) => match inst.logger.set_debug_logging(on, &cats) {
            Ok(()) => Status::Ok,
            Err(e) => inst.fail(F, e),
        },
        None => null_arg(inst, F),
    })
}

/// `fmi3EnterInitializationMode`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn enter_initialization_mode<M: Model>(
    c: *mut c_void,
    _tol_defined: bool,
    _tol: f64,
    start: f64,
    stop_defined: bool,
    stop: f64,
) -> c_int {
    const F: &str = "fmi3EnterInitializationMode";
    with::<M>(c, F, |inst| {
        inst.enter_initialization(F, start, stop_defined.then_some(stop))
    })
}

/// `fmi3ExitInitializationMode` (enters Event Mode when `eventModeUsed`, else Step Mode).
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn exit_initialization_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi3ExitInitializationMode";
    with::<M>(c, F, |inst| inst.exit_initialization(F))
}

/// `fmi3EnterConfigurationMode`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn enter_configuration_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi3EnterConfigurationMode";
    with::<M>(c, F, |inst| inst.enter_configuration(F))
}

/// `fmi3ExitConfigurationMode`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn exit_configuration_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi3ExitConfigurationMode";
    with::<M>(c, F, |inst| inst.exit_configuration(F))
}

/// `fmi3EnterEventMode`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn enter_event_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi3EnterEventMode";
    with::<M>(c, F, |inst| {
        if inst.interface == Interface::ModelExchange {
            return inst.me_enter_event_mode(F);
        }
        if let Err(s) = inst.expect(F, &[Phase::Step]) {
            return s;
        }
        if !inst.event_mode_used {
            return inst.fail(F, "the instance was created with eventModeUsed = false");
        }
        inst.phase = Phase::Event;
        if let Some(event) = &inst.s.pending {
            for vr in inst
                .model
                .clocks_at_event(&inst.s.values, inst.s.time, event)
            {
                let mut ticks = crate::clock::Ticks {
                    state: &mut inst.clocks,
                };
                if let Err(e) = ticks.raise(vr) {
                    return inst.fail(F, format!("the model raised a clock: {e}"));
                }
            }
        }
        Status::Ok
    })
}

/// `fmi3EnterStepMode`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn enter_step_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi3EnterStepMode";
    with::<M>(c, F, |inst| {
        if let Err(s) = inst
            .expect_cs(F)
            .and_then(|()| inst.expect(F, &[Phase::Event]))
        {
            return s;
        }
        inst.clocks.deactivate();
        inst.phase = Phase::Step;
        Status::Ok
    })
}

/// `fmi3UpdateDiscreteStates`: applies a pending event's action.
///
/// # Safety
/// Output pointers must be NULL or writable.
#[allow(clippy::too_many_arguments)]
pub unsafe fn update_discrete_states<M: Model>(
    c: *mut c_void,
    need_update: *mut bool,
    terminate: *mut bool,
    nominals_changed: *mut bool,
    values_changed: *mut bool,
    next_defined: *mut bool,
    next_time: *mut f64,
) -> c_int {
    const F: &str = "fmi3UpdateDiscreteStates";
    let put = |p: *mut bool, v: bool| {
        if let Some(p) = p.as_mut() {
            *p = v;
        }
    };
    with::<M>(c, F, |inst| {
        if inst.interface == Interface::ModelExchange {
            return match inst.me_update_discrete_states(F) {
                Ok(e) => {
                    put(need_update, e.need_update);
                    put(terminate, e.terminate);
                    put(nominals_changed, e.nominals_changed);
                    put(values_changed, e.values_changed);
                    put(next_defined, e.next_time.is_some());
                    if let (Some(p), Some(t)) = (next_time.as_mut(), e.next_time) {
                        *p = t;
                    }
                    Status::Ok
                }
                Err(s) => s,
            };
        }
        if let Err(s) = inst.expect(F, &[Phase::Event]) {
            return s;
        }
        if let Err(e) = inst.refresh() {
            return inst.fail(F, format!("model evaluation failed: {e}"));
        }
        let before = inst.states();
        if let Some(ev) = inst.s.pending.take() {
            let t = inst.s.time;
            if let Err(e) = inst.apply_event(t, &ev) {
                inst.phase = Phase::Failed;
                return inst.fail(F, format!("event action failed: {e}"));
            }
        }
        let changed = inst.states() != before;
        inst.clocks.deactivate();
        let next = if M::HAS_TIME_EVENTS {
            inst.model.next_time_event(&inst.s.values, inst.s.time)
        } else {
            None
        };
        put(need_update, false);
        put(terminate, false);
        put(nominals_changed, false);
        put(values_changed, changed);
        put(next_defined, next.is_some());
        if let (Some(p), Some(t)) = (next_time.as_mut(), next) {
            *p = t;
        }
        Status::Ok
    })
}

/// Taylor coefficients at the step start of the cubic through samples at 0, h/3, 2h/3, h.
fn cubic_through(u: [f64; 4], h: f64) -> [f64; 4] {
    let d1 = u[1] - u[0];
    let d2 = u[2] - 2.0 * u[1] + u[0];
    let d3 = u[3] - 3.0 * u[2] + 3.0 * u[1] - u[0];
    [
        u[0],
        3.0 / h * (d1 - d2 / 2.0 + d3 / 3.0),
        9.0 / (h * h) * (d2 - d3),
        27.0 * d3 / (h * h * h),
    ]
}

/// `fmi3DoStep`. Inputs declared `intermediateUpdate` are requested through the callback at
/// `tc + h/3`, `tc + 2h/3` and `tc + h`, and follow the cubic through those samples and the
/// value at `tc` (held when there is no callback or nothing is set). With `eventModeUsed` the
/// step ends early at an event with `eventHandlingNeeded`; otherwise events are handled inside.
/// A model's termination request stops the step at its time with OK and `terminateSimulation`
/// (`earlyReturn` when that is before `tc + h`); further steps are refused until a state is
/// restored or the instance is reset.
///
/// # Safety
/// `c` must be NULL or an instance of this kit; output pointers NULL or writable.
#[allow(clippy::too_many_arguments)]
pub unsafe fn do_step<M: Model>(
    c: *mut c_void,
    tc: f64,
    h: f64,
    _no_set_prior: bool,
    event_handling_needed: *mut bool,
    terminate: *mut bool,
    early_return: *mut bool,
    last_successful_time: *mut f64,
) -> c_int {
    const F: &str = "fmi3DoStep";
    let put = |p: *mut bool, v: bool| {
        if let Some(p) = p.as_mut() {
            *p = v;
        }
    };
    // Phase 1: checks; the instance borrow ends before the importer is called back.
    let mut callback = None;
    let mut sampled: Vec<usize> = Vec::new();
    let st = with::<M>(c, F, |inst| {
        if let Err(s) = inst.expect_cs(F).and_then(|()| inst.expect_step(F)) {
            return s;
        }
        if let Err(s) = check_step_times(inst, F, tc, h) {
            return s;
        }
        if let Some(ev) = inst.s.pending.take() {
            inst.log(
                Status::Warning,
                1,
                &format!("{F}: an event was not handled in Event Mode; handling it now"),
            );
            let t = inst.s.time;
            if let Err(e) = inst.apply_event(t, &ev) {
                inst.phase = Phase::Failed;
                return inst.fail(F, format!("event action failed: {e}"));
            }
        }
        sampled = inst
            .table
            .real_inputs
            .iter()
            .enumerate()
            .filter(|(_, &i)| inst.table.vars[i].intermediate_update)
            .map(|(k, _)| k)
            .collect();
        if h > 0.0 && !sampled.is_empty() {
            callback = inst.intermediate;
        }
        Status::Ok
    });
    if st != Status::Ok as c_int {
        return st;
    }
    let mut poly = Vec::new();
    with::<M>(c, F, |inst| {
        poly = inst.input_taylor();
        Status::Ok
    });
    // Phase 2: sample the intermediate-update inputs through the callback.
    if let Some((cb, env)) = callback {
        let mut samples: Vec<[f64; 4]> = sampled.iter().map(|&k| [poly[k][0]; 4]).collect();
        for (j, frac) in [1.0 / 3.0, 2.0 / 3.0, 1.0].into_iter().enumerate() {
            with::<M>(c, F, |inst| {
                inst.phase = Phase::IntermediateUpdate;
                Status::Ok
            });
            let t = if j == 2 { tc + h } else { tc + frac * h };
            let (mut early, mut early_time) = (false, t);
            let called = guard(false, || {
                cb(
                    env,
                    t,
                    true,
                    false,
                    false,
                    false,
                    &mut early,
                    &mut early_time,
                );
                true
            });
            let st = with::<M>(c, F, |inst| {
                inst.phase = Phase::Step;
                if !called {
                    return inst.fail(F, "the intermediateUpdate callback panicked");
                }
                for (s, &k) in samples.iter_mut().zip(&sampled) {
                    let i = inst.table.real_inputs[k];
                    s[j + 1] = inst.s.values.data[i].as_f64(0).unwrap_or(0.0);
                }
                Status::Ok
            });
            if st != Status::Ok as c_int {
                return st;
            }
        }
        for (s, &k) in samples.iter().zip(&sampled) {
            poly[k] = cubic_through(*s, h);
        }
        with::<M>(c, F, |inst| {
            // The trajectory starts from the value set before the step.
            for (s, &k) in samples.iter().zip(&sampled) {
                let i = inst.table.real_inputs[k];
                inst.s.values.get_mut::<f64>(inst.table.vars[i].vr)[0] = s[0];
            }
            Status::Ok
        });
    }
    // Phase 3: integrate.
    with::<M>(c, F, |inst| {
        put(terminate, false);
        let failure = inst.planned_failure(tc, tc + h);
        let stop = failure.as_ref().map_or(tc + h, |f| f.1);
        match inst.integrate(tc, stop, &poly, inst.event_mode_used) {
            Ok(end) => {
                inst.s.time = end.time;
                inst.s.dirty = false;
                let early = end.time < tc + h;
                // The failure happens where the step was to stop, unless an event came first.
                if let Some((f, _)) = failure.filter(|_| end.event.is_none() || end.time >= stop) {
                    put(event_handling_needed, false);
                    put(early_return, early);
                    if let Some(p) = last_successful_time.as_mut() {
                        *p = end.time;
                    }
                    if let Some(ev) = end.event {
                        inst.s.pending = Some(ev);
                    }
                    put(terminate, f.terminate);
                    return inst.step_failed(F, &f);
                }
                put(event_handling_needed, end.event.is_some());
                put(early_return, early);
                if let Some(p) = last_successful_time.as_mut() {
                    *p = end.time;
                }
                if let Some(ev) = end.event {
                    inst.log(
                        Status::Ok,
                        0,
                        &format!("{F}: event at t = {}, returning for Event Mode", end.time),
                    );
                    inst.s.pending = Some(ev);
                }
                Status::Ok
            }
            Err(e) => {
                inst.phase = Phase::Failed;
                put(event_handling_needed, false);
                put(early_return, false);
                if let Some(p) = last_successful_time.as_mut() {
                    *p = tc;
                }
                inst.fail(F, format!("step from t = {tc} failed: {e}"))
            }
        }
    })
}

macro_rules! getset {
    ($($get:ident, $set:ident, $t:ty, $vt:ident, $gname:literal, $sname:literal;)*) => {$(
        #[doc = concat!("`", $gname, "`.")]
        ///
        /// # Safety
        /// Arrays must hold their stated lengths.
        pub unsafe fn $get<M: Model>(c: *mut c_void, vr: *const u32, n: usize, v: *mut $t, nv: usize) -> c_int {
            get_typed::<M, $t>(c, $gname, vr, n, v, nv, VarType::$vt)
        }
        #[doc = concat!("`", $sname, "`.")]
        ///
        /// # Safety
        /// Arrays must hold their stated lengths.
        pub unsafe fn $set<M: Model>(c: *mut c_void, vr: *const u32, n: usize, v: *const $t, nv: usize) -> c_int {
            set_typed::<M, $t>(c, $sname, vr, n, v, nv, VarType::$vt)
        }
    )*};
}

getset! {
    get_float32, set_float32, f32, Float32, "fmi3GetFloat32", "fmi3SetFloat32";
    get_float64, set_float64, f64, Float64, "fmi3GetFloat64", "fmi3SetFloat64";
    get_int8, set_int8, i8, Int8, "fmi3GetInt8", "fmi3SetInt8";
    get_uint8, set_uint8, u8, UInt8, "fmi3GetUInt8", "fmi3SetUInt8";
    get_int16, set_int16, i16, Int16, "fmi3GetInt16", "fmi3SetInt16";
    get_uint16, set_uint16, u16, UInt16, "fmi3GetUInt16", "fmi3SetUInt16";
    get_int32, set_int32, i32, Int32, "fmi3GetInt32", "fmi3SetInt32";
    get_uint32, set_uint32, u32, UInt32, "fmi3GetUInt32", "fmi3SetUInt32";
    get_int64, set_int64, i64, Int64, "fmi3GetInt64", "fmi3SetInt64";
    get_uint64, set_uint64, u64, UInt64, "fmi3GetUInt64", "fmi3SetUInt64";
    get_boolean, set_boolean, bool, Boolean, "fmi3GetBoolean", "fmi3SetBoolean";
}

/// The variable types an `fmi3Get/Set<Type>` call reads and writes: Int64 also serves
/// Enumeration variables.
fn accepted(ty: &VarType) -> &[VarType] {
    if *ty == VarType::Int64 {
        &[VarType::Int64, VarType::Enumeration]
    } else {
        std::slice::from_ref(ty)
    }
}

unsafe fn get_typed<M: Model, T: Element>(
    c: *mut c_void,
    func: &str,
    vr: *const u32,
    n: usize,
    v: *mut T,
    nv: usize,
    ty: VarType,
) -> c_int {
    with::<M>(c, func, |inst| match (slice(vr, n), slice_mut(v, nv)) {
        (Some(vr), Some(v)) => inst.get(func, vr, v, accepted(&ty)),
        _ => null_arg(inst, func),
    })
}

unsafe fn set_typed<M: Model, T: Element>(
    c: *mut c_void,
    func: &str,
    vr: *const u32,
    n: usize,
    v: *const T,
    nv: usize,
    ty: VarType,
) -> c_int {
    with::<M>(c, func, |inst| match (slice(vr, n), slice(v, nv)) {
        (Some(vr), Some(v)) => inst.set(func, vr, v, accepted(&ty)),
        _ => null_arg(inst, func),
    })
}

/// `fmi3GetString`.
///
/// # Safety
/// Arrays must hold their stated lengths.
pub unsafe fn get_string<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *mut *const c_char,
    nv: usize,
) -> c_int {
    const F: &str = "fmi3GetString";
    with::<M>(c, F, |inst| match (slice(vr, n), slice_mut(v, nv)) {
        (Some(vr), Some(v)) => inst.get_strings(F, vr, v),
        _ => null_arg(inst, F),
    })
}

/// `fmi3SetString`.
///
/// # Safety
/// Arrays must hold their stated lengths; strings NUL-terminated.
pub unsafe fn set_string<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *const *const c_char,
    nv: usize,
) -> c_int {
    const F: &str = "fmi3SetString";
    with::<M>(c, F, |inst| match (slice(vr, n), slice(v, nv)) {
        (Some(vr), Some(v)) => {
            let strings: Option<Vec<CString>> = v
                .iter()
                .map(|&p| text(p).map(|s| crate::values::to_cstring(&s)))
                .collect();
            match strings {
                Some(s) => inst.set_strings(F, vr, &s),
                None => inst.fail(F, "a string value is NULL"),
            }
        }
        _ => null_arg(inst, F),
    })
}

/// `fmi3GetBinary`.
///
/// # Safety
/// Arrays must hold their stated lengths.
pub unsafe fn get_binary<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    sizes: *mut usize,
    v: *mut *const u8,
    nv: usize,
) -> c_int {
    const F: &str = "fmi3GetBinary";
    with::<M>(c, F, |inst| {
        match (slice(vr, n), slice_mut(sizes, nv), slice_mut(v, nv)) {
            (Some(vr), Some(sizes), Some(v)) => inst.get_binaries(F, vr, sizes, v),
            _ => null_arg(inst, F),
        }
    })
}

/// `fmi3SetBinary`.
///
/// # Safety
/// Arrays must hold their stated lengths; each value its size in bytes.
pub unsafe fn set_binary<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    sizes: *const usize,
    v: *const *const u8,
    nv: usize,
) -> c_int {
    const F: &str = "fmi3SetBinary";
    with::<M>(c, F, |inst| {
        match (slice(vr, n), slice(sizes, nv), slice(v, nv)) {
            (Some(vr), Some(sizes), Some(v)) => {
                let bins: Option<Vec<Vec<u8>>> = v
                    .iter()
                    .zip(sizes)
                    .map(|(&p, &s)| slice(p, s).map(<[u8]>::to_vec))
                    .collect();
                match bins {
                    Some(b) => inst.set_binaries(F, vr, &b),
                    None => inst.fail(F, "a binary value is NULL"),
                }
            }
            _ => null_arg(inst, F),
        }
    })
}

/// The clock functions the kit does not provide (interval and shift fractions, setting shifts
/// and fractions: its clocks declare no `supportsFraction`, no settable shift): any value
/// reference is an error.
///
/// # Safety
/// `vr` must hold `n` elements.
pub unsafe fn no_clocks<M: Model>(c: *mut c_void, func: &str, vr: *const u32, n: usize) -> c_int {
    with::<M>(c, func, |inst| match slice(vr, n) {
        Some(vrs) => {
            for &r in vrs {
                if let Err(s) = inst.lookup(func, r) {
                    return s;
                }
            }
            if vrs.is_empty() {
                Status::Ok
            } else {
                inst.fail(
                    func,
                    format!(
                        "value reference {}: this FMU does not provide {func}",
                        vrs[0]
                    ),
                )
            }
        }
        None => null_arg(inst, func),
    })
}

/// `fmi3GetClock`: whether each clock is active (Event Mode only; runs the clocked partition
/// first when an input clock was set).
///
/// # Safety
/// `vr` and `v` must hold `n` elements.
pub unsafe fn get_clock<M: Model>(c: *mut c_void, vr: *const u32, n: usize, v: *mut bool) -> c_int {
    const F: &str = "fmi3GetClock";
    with::<M>(c, F, |inst| {
        let (Some(vrs), Some(out)) = (slice(vr, n), slice_mut(v, n)) else {
            return null_arg(inst, F);
        };
        // Scheduled Execution reads output clocks in Clock Activation Mode (Phase::Step),
        // each raise once.
        let scheduled = inst.interface == Interface::ScheduledExecution;
        let phase = if scheduled { Phase::Step } else { Phase::Event };
        if let Err(s) = inst.expect(F, &[phase]) {
            return s;
        }
        if let Err(s) = inst.ensure_fresh(F) {
            return s;
        }
        for (&r, o) in vrs.iter().zip(out.iter_mut()) {
            match inst.clocks.index(r) {
                Some(k) => {
                    *o = inst.clocks.active[k];
                    if scheduled {
                        inst.clocks.active[k] = false;
                    }
                }
                None => return inst.fail(F, format!("value reference {r} is not a clock")),
            }
        }
        Status::Ok
    })
}

/// `fmi3SetClock`: activates input clocks (Event Mode only).
///
/// # Safety
/// `vr` and `v` must hold `n` elements.
pub unsafe fn set_clock<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *const bool,
) -> c_int {
    const F: &str = "fmi3SetClock";
    with::<M>(c, F, |inst| {
        let (Some(vrs), Some(vals)) = (slice(vr, n), slice(v, n)) else {
            return null_arg(inst, F);
        };
        if let Err(s) = inst.expect(F, &[Phase::Event]) {
            return s;
        }
        for &r in vrs {
            match inst.clocks.index(r) {
                Some(k) if !inst.clocks.clocks[k].output => {}
                Some(_) => return inst.fail(F, format!("clock vr {r} is an output clock")),
                None => return inst.fail(F, format!("value reference {r} is not a clock")),
            }
        }
        for (&r, &on) in vrs.iter().zip(vals) {
            if let Some(k) = inst.clocks.index(r) {
                inst.clocks.active[k] = on;
                inst.clocks.pending |= on;
            }
        }
        Status::Ok
    })
}

/// `fmi3GetIntervalDecimal`: the interval of time-based input clocks, with the qualifier
/// changed once per new interval (periodic: after instantiation or a set; countdown /
/// changing: after each schedule), unchanged afterwards.
///
/// # Safety
/// `vr`, `intervals` and `qualifiers` must hold `n` elements.
pub unsafe fn get_interval_decimal<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    intervals: *mut f64,
    qualifiers: *mut c_int,
) -> c_int {
    const F: &str = "fmi3GetIntervalDecimal";
    with::<M>(c, F, |inst| {
        let (Some(vrs), Some(out), Some(q)) = (
            slice(vr, n),
            slice_mut(intervals, n),
            slice_mut(qualifiers, n),
        ) else {
            return null_arg(inst, F);
        };
        if let Err(s) = inst.expect(F, &[Phase::Initialization, Phase::Event, Phase::Step]) {
            return s;
        }
        if let Err(s) = inst.ensure_fresh(F) {
            return s;
        }
        for (k, &r) in vrs.iter().enumerate() {
            let Some(j) = inst.clocks.index(r) else {
                return inst.fail(F, format!("value reference {r} is not a clock"));
            };
            let clock = &inst.clocks.clocks[j];
            if clock.output || clock.variability == crate::clock::IntervalVariability::Triggered {
                return inst.fail(
                    F,
                    format!("clock '{}' is not a time-based input clock", clock.name),
                );
            }
            out[k] = inst.clocks.interval[j].unwrap_or(0.0);
            q[k] = match (inst.clocks.interval[j], inst.clocks.reported[j]) {
                (None, _) => 0,
                (Some(_), true) => 1,
                (Some(_), false) => 2,
            };
            inst.clocks.reported[j] = true;
        }
        Status::Ok
    })
}

/// `fmi3SetIntervalDecimal`: the interval of tunable (Event Mode, Initialization Mode) or
/// fixed (Initialization Mode) periodic input clocks.
///
/// # Safety
/// `vr` and `intervals` must hold `n` elements.
pub unsafe fn set_interval_decimal<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    intervals: *const f64,
) -> c_int {
    use crate::clock::IntervalVariability as IV;
    const F: &str = "fmi3SetIntervalDecimal";
    with::<M>(c, F, |inst| {
        let (Some(vrs), Some(vals)) = (slice(vr, n), slice(intervals, n)) else {
            return null_arg(inst, F);
        };
        for (&r, &x) in vrs.iter().zip(vals) {
            let Some(j) = inst.clocks.index(r) else {
                return inst.fail(F, format!("value reference {r} is not a clock"));
            };
            let clock = &inst.clocks.clocks[j];
            let ok = match clock.variability {
                IV::Tunable => matches!(inst.phase, Phase::Initialization | Phase::Event),
                IV::Fixed => inst.phase == Phase::Initialization,
                _ => false,
            };
            if !ok || !(x > 0.0) {
                return inst.fail(
                    F,
                    format!(
                        "clock '{}' ({}) takes no interval {x} in {}",
                        clock.name,
                        clock.variability.xml(),
                        inst.phase_name()
                    ),
                );
            }
            inst.clocks.interval[j] = Some(x);
            inst.clocks.reported[j] = false;
        }
        Status::Ok
    })
}

/// `fmi3GetShiftDecimal`: the shift of periodic input clocks.
///
/// # Safety
/// `vr` and `shifts` must hold `n` elements.
pub unsafe fn get_shift_decimal<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    shifts: *mut f64,
) -> c_int {
    const F: &str = "fmi3GetShiftDecimal";
    with::<M>(c, F, |inst| {
        let (Some(vrs), Some(out)) = (slice(vr, n), slice_mut(shifts, n)) else {
            return null_arg(inst, F);
        };
        for (&r, o) in vrs.iter().zip(out.iter_mut()) {
            match inst.clocks.index(r) {
                Some(j) if inst.clocks.clocks[j].variability.is_periodic() => {
                    *o = inst.clocks.clocks[j].shift;
                }
                _ => return inst.fail(F, format!("value reference {r} is not a periodic clock")),
            }
        }
        Status::Ok
    })
}

/// An FMI 3 function this FMU does not provide (and does not claim in its model description).
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn unsupported<M: Model>(c: *mut c_void, func: &str, why: &str) -> c_int {
    with::<M>(c, func, |inst| inst.fail(func, why))
}

fn structure_index<M: Model>(inst: &Instance<M>, func: &str, vr: u32) -> Result<usize, Status> {
    let i = inst.lookup(func, vr)?;
    let v = &inst.table.vars[i];
    if v.causality == Causality::Output || inst.table.is_derivative(i) {
        Ok(i)
    } else {
        Err(inst.fail(
            func,
            format!("'{}' is neither an output nor a state derivative", v.name),
        ))
    }
}

/// `fmi3GetNumberOfVariableDependencies`.
///
/// # Safety
/// `n` must be NULL or writable.
pub unsafe fn get_number_of_variable_dependencies<M: Model>(
    c: *mut c_void,
    vr: u32,
    n: *mut usize,
) -> c_int {
    const F: &str = "fmi3GetNumberOfVariableDependencies";
    with::<M>(c, F, |inst| {
        let i = match structure_index(inst, F, vr) {
            Ok(i) => i,
            Err(s) => return s,
        };
        match n.as_mut() {
            Some(n) => {
                *n = inst.table.dependencies_of(i).len();
                Status::Ok
            }
            None => null_arg(inst, F),
        }
    })
}

/// `fmi3GetVariableDependencies` (scalars only, so element indices are 0; kind `dependent`).
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn get_variable_dependencies<M: Model>(
    c: *mut c_void,
    dependent: u32,
    elem_dep: *mut usize,
    independents: *mut u32,
    elem_ind: *mut usize,
    kinds: *mut c_int,
    n: usize,
) -> c_int {
    const F: &str = "fmi3GetVariableDependencies";
    with::<M>(c, F, |inst| {
        let i = match structure_index(inst, F, dependent) {
            Ok(i) => i,
            Err(s) => return s,
        };
        let deps = inst.table.dependencies_of(i);
        if n != deps.len() {
            return inst.fail(
                F,
                format!("nDependencies is {n}, the variable has {}", deps.len()),
            );
        }
        match (
            slice_mut(elem_dep, n),
            slice_mut(independents, n),
            slice_mut(elem_ind, n),
            slice_mut(kinds, n),
        ) {
            (Some(ed), Some(ind), Some(ei), Some(k)) => {
                for j in 0..n {
                    ed[j] = 0;
                    ind[j] = deps[j];
                    ei[j] = 0;
                    k[j] = 5; // fmi3Dependent
                }
                Status::Ok
            }
            _ => null_arg(inst, F),
        }
    })
}

/// `fmi3GetDirectionalDerivative` and (`adjoint`) `fmi3GetAdjointDerivative`.
///
/// # Safety
/// Arrays must hold their stated lengths.
#[allow(clippy::too_many_arguments)]
pub unsafe fn derivative<M: Model>(
    c: *mut c_void,
    adjoint: bool,
    unknowns: *const u32,
    n_unknowns: usize,
    knowns: *const u32,
    n_knowns: usize,
    seed: *const f64,
    n_seed: usize,
    sens: *mut f64,
    n_sens: usize,
) -> c_int {
    let func = if adjoint {
        "fmi3GetAdjointDerivative"
    } else {
        "fmi3GetDirectionalDerivative"
    };
    with::<M>(c, func, |inst| {
        let (n_in, n_out) = if adjoint {
            (n_unknowns, n_knowns)
        } else {
            (n_knowns, n_unknowns)
        };
        if n_seed != n_in || n_sens != n_out {
            return inst.fail(func, format!("nSeed {n_seed} / nSensitivity {n_sens} do not fit the {n_unknowns} unknowns and {n_knowns} knowns (scalars)"));
        }
        match (
            slice(unknowns, n_unknowns),
            slice(knowns, n_knowns),
            slice(seed, n_seed),
            slice_mut(sens, n_sens),
        ) {
            (Some(u), Some(k), Some(s), Some(out)) => match inst.jacobian(func, u, k) {
                Ok(j) => {
                    let seed = nalgebra::DVector::from_column_slice(s);
                    let r = if adjoint {
                        j.transpose() * seed
                    } else {
                        j * seed
                    };
                    out.copy_from_slice(r.as_slice());
                    Status::Ok
                }
                Err(s) => s,
            },
            _ => null_arg(inst, func),
        }
    })
}

/// `fmi3GetOutputDerivatives`.
///
/// # Safety
/// Arrays must hold their stated lengths.
pub unsafe fn get_output_derivatives<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    orders: *const i32,
    v: *mut f64,
    nv: usize,
) -> c_int {
    const F: &str = "fmi3GetOutputDerivatives";
    with::<M>(c, F, |inst| {
        if let Err(s) = inst.expect_cs(F) {
            return s;
        }
        if nv != n {
            return inst.fail(
                F,
                format!("nValues {nv} differs from nValueReferences {n} (scalar outputs)"),
            );
        }
        match (slice(vr, n), slice(orders, n), slice_mut(v, nv)) {
            (Some(vr), Some(o), Some(v)) => inst.output_derivatives(F, vr, o, v),
            _ => null_arg(inst, F),
        }
    })
}

/// `fmi3Terminate`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn terminate<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi3Terminate";
    with::<M>(c, F, |inst| inst.terminate(F))
}

/// `fmi3Reset`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn reset<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi3Reset";
    with::<M>(c, F, |inst| inst.reset(F))
}

/// `fmi3GetFMUState`.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn get_fmu_state<M: Model>(c: *mut c_void, state: *mut *mut c_void) -> c_int {
    const F: &str = "fmi3GetFMUState";
    with::<M>(c, F, |inst| ffi::get_state(inst, F, state))
}

/// `fmi3SetFMUState`.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn set_fmu_state<M: Model>(c: *mut c_void, state: *mut c_void) -> c_int {
    const F: &str = "fmi3SetFMUState";
    with::<M>(c, F, |inst| ffi::set_state(inst, F, state))
}

/// `fmi3FreeFMUState`.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn free_fmu_state<M: Model>(c: *mut c_void, state: *mut *mut c_void) -> c_int {
    const F: &str = "fmi3FreeFMUState";
    with::<M>(c, F, |inst| ffi::free_state(inst, F, state))
}

/// `fmi3SerializedFMUStateSize`.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn serialized_fmu_state_size<M: Model>(
    c: *mut c_void,
    state: *mut c_void,
    size: *mut usize,
) -> c_int {
    const F: &str = "fmi3SerializedFMUStateSize";
    with::<M>(c, F, |inst| ffi::state_size(inst, F, state, size))
}

/// `fmi3SerializeFMUState`.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn serialize_fmu_state<M: Model>(
    c: *mut c_void,
    state: *mut c_void,
    buf: *mut u8,
    size: usize,
) -> c_int {
    const F: &str = "fmi3SerializeFMUState";
    with::<M>(c, F, |inst| ffi::serialize(inst, F, state, buf, size))
}

/// `fmi3DeserializeFMUState`.
///
/// # Safety
/// Pointers as in the FMI 3 standard.
pub unsafe fn deserialize_fmu_state<M: Model>(
    c: *mut c_void,
    buf: *const u8,
    size: usize,
    state: *mut *mut c_void,
) -> c_int {
    const F: &str = "fmi3DeserializeFMUState";
    with::<M>(c, F, |inst| ffi::deserialize(inst, F, buf, size, state))
}

/// `fmi3EnterContinuousTimeMode` (Model Exchange): from Event Mode.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn enter_continuous_time_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi3EnterContinuousTimeMode";
    with::<M>(c, F, |inst| inst.me_enter_continuous_time_mode(F))
}

/// `fmi3CompletedIntegratorStep` (Model Exchange): in Continuous-Time Mode.
///
/// # Safety
/// The out-pointers must be NULL or writable.
pub unsafe fn completed_integrator_step<M: Model>(
    c: *mut c_void,
    _no_set_prior: bool,
    enter_event_mode: *mut bool,
    terminate: *mut bool,
) -> c_int {
    const F: &str = "fmi3CompletedIntegratorStep";
    with::<M>(c, F, |inst| {
        if enter_event_mode.is_null() || terminate.is_null() {
            return inst.fail(F, "enterEventMode or terminateSimulation is NULL");
        }
        let (status, enter, term) = inst.me_completed_integrator_step(F);
        *enter_event_mode = enter;
        *terminate = term;
        status
    })
}

/// `fmi3SetTime` (Model Exchange): in Event Mode and Continuous-Time Mode.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn set_time<M: Model>(c: *mut c_void, t: f64) -> c_int {
    const F: &str = "fmi3SetTime";
    with::<M>(c, F, |inst| inst.me_set_time(F, t))
}

/// `fmi3SetContinuousStates` (Model Exchange): in Continuous-Time Mode only.
///
/// # Safety
/// `x` must hold `nx` elements.
pub unsafe fn set_continuous_states<M: Model>(c: *mut c_void, x: *const f64, nx: usize) -> c_int {
    const F: &str = "fmi3SetContinuousStates";
    with::<M>(c, F, |inst| match slice(x, nx) {
        Some(x) => inst.me_set_states(F, x),
        None => null_arg(inst, F),
    })
}

/// `fmi3GetContinuousStateDerivatives` (Model Exchange).
///
/// # Safety
/// `dx` must hold `nx` writable elements.
pub unsafe fn get_continuous_state_derivatives<M: Model>(
    c: *mut c_void,
    dx: *mut f64,
    nx: usize,
) -> c_int {
    const F: &str = "fmi3GetContinuousStateDerivatives";
    with::<M>(c, F, |inst| match slice_mut(dx, nx) {
        Some(dx) => inst.me_get_derivatives(F, dx),
        None => null_arg(inst, F),
    })
}

/// `fmi3GetEventIndicators` (Model Exchange).
///
/// # Safety
/// `z` must hold `ni` writable elements.
pub unsafe fn get_event_indicators<M: Model>(c: *mut c_void, z: *mut f64, ni: usize) -> c_int {
    const F: &str = "fmi3GetEventIndicators";
    with::<M>(c, F, |inst| match slice_mut(z, ni) {
        Some(z) => inst.me_get_event_indicators(F, z),
        None => null_arg(inst, F),
    })
}

/// `fmi3GetContinuousStates` (Model Exchange).
///
/// # Safety
/// `x` must hold `nx` writable elements.
pub unsafe fn get_continuous_states<M: Model>(c: *mut c_void, x: *mut f64, nx: usize) -> c_int {
    const F: &str = "fmi3GetContinuousStates";
    with::<M>(c, F, |inst| match slice_mut(x, nx) {
        Some(x) => inst.me_get_states(F, x),
        None => null_arg(inst, F),
    })
}

/// `fmi3GetNominalsOfContinuousStates` (Model Exchange).
///
/// # Safety
/// `x` must hold `nx` writable elements.
pub unsafe fn get_nominals_of_continuous_states<M: Model>(
    c: *mut c_void,
    x: *mut f64,
    nx: usize,
) -> c_int {
    const F: &str = "fmi3GetNominalsOfContinuousStates";
    with::<M>(c, F, |inst| match slice_mut(x, nx) {
        Some(x) => inst.me_get_nominals(F, x),
        None => null_arg(inst, F),
    })
}

/// `fmi3GetNumberOfEventIndicators` (Model Exchange).
///
/// # Safety
/// `n` must be NULL or writable.
pub unsafe fn get_number_of_event_indicators<M: Model>(c: *mut c_void, n: *mut usize) -> c_int {
    const F: &str = "fmi3GetNumberOfEventIndicators";
    with::<M>(c, F, |inst| match (inst.me_sizes(F), n.as_mut()) {
        (Err(s), _) => s,
        (Ok((_, nz)), Some(n)) => {
            *n = nz;
            Status::Ok
        }
        (Ok(_), None) => inst.fail(F, "nEventIndicators is NULL"),
    })
}

/// `fmi3GetNumberOfContinuousStates` (Model Exchange).
///
/// # Safety
/// `n` must be NULL or writable.
pub unsafe fn get_number_of_continuous_states<M: Model>(c: *mut c_void, n: *mut usize) -> c_int {
    const F: &str = "fmi3GetNumberOfContinuousStates";
    with::<M>(c, F, |inst| match (inst.me_sizes(F), n.as_mut()) {
        (Err(s), _) => s,
        (Ok((nx, _)), Some(n)) => {
            *n = nx;
            Status::Ok
        }
        (Ok(_), None) => inst.fail(F, "nContinuousStates is NULL"),
    })
}

#[cfg(test)]
mod tests {
    use super::cubic_through;
    use crate::model::eval_taylor;

    #[test]
    fn cubic_fit_recovers_taylor_coefficients() {
        let c = [1.5, -2.0, 3.0, 7.0];
        let h = 0.1;
        let u = [0.0, h / 3.0, 2.0 * h / 3.0, h].map(|s| eval_taylor(&c, s)[0]);
        let fit = cubic_through(u, h);
        for k in 0..4 {
            assert!((fit[k] - c[k]).abs() < 1e-9 * (1.0 + c[k].abs()), "{fit:?}");
        }
    }
}
