//! The FMI 2.0 Co-Simulation C API, generic over the model; `export_fmu!` instantiates it.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;

use crate::ffi::{self, categories, guard, null_arg, slice, slice_mut, text, with};
use crate::instance::{Fmi2Logger, Instance, Interface, Logger, Phase, Sink, Status, Version};
use crate::model::{Context, Model};
use crate::variable::{Table, VarType};

/// `fmi2CallbackFunctions`.
#[repr(C)]
pub struct CallbackFunctions {
    /// Logger (variadic).
    pub logger: Option<Fmi2Logger>,
    /// Unused: the kit allocates with Rust's allocator.
    pub allocate_memory: Option<unsafe extern "C" fn(usize, usize) -> *mut c_void>,
    /// Unused.
    pub free_memory: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Unused: steps are synchronous.
    pub step_finished: Option<unsafe extern "C" fn(*mut c_void, c_int)>,
    /// Importer's environment pointer for the logger.
    pub component_environment: *mut c_void,
}

/// `fmi2Instantiate`.
///
/// # Safety
/// Pointers as in the FMI 2 standard.
pub unsafe fn instantiate<M: Model>(
    name: *const c_char,
    fmu_type: c_int,
    guid: *const c_char,
    resource_location: *const c_char,
    functions: *const CallbackFunctions,
    _visible: c_int,
    logging_on: c_int,
) -> *mut c_void {
    guard(std::ptr::null_mut(), || {
        let name = text(name).unwrap_or_default();
        let sink = match functions.as_ref() {
            Some(CallbackFunctions {
                logger: Some(l),
                component_environment,
                ..
            }) => Sink::V2(*l, *component_environment),
            _ => Sink::None,
        };
        let logger = Logger::new(sink, &name, logging_on != 0);
        let err = |msg: String| {
            logger.log(Status::Error, 2, &format!("fmi2Instantiate: {msg}"));
        };
        let model = M::default();
        let table = match Table::new(M::NAME, model.variables()) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                err(format!("invalid variable table: {e}"));
                return std::ptr::null_mut();
            }
        };
        let interface = match fmu_type {
            1 => Interface::CoSimulation,
            0 if M::MODEL_EXCHANGE => {
                if table.states.iter().any(|&(s, _)| !table.vars[s].in_fmi2()) {
                    err(
                        "Model Exchange in FMI 2 needs scalar continuous states; this model \
                         has array states (use FMI 3)"
                            .into(),
                    );
                    return std::ptr::null_mut();
                }
                Interface::ModelExchange
            }
            0 => {
                err(
                    "only Co-Simulation (fmi2CoSimulation) is supported: this FMU has no \
                     ModelExchange element"
                        .into(),
                );
                return std::ptr::null_mut();
            }
            t => {
                err(format!(
                    "unknown fmuType {t} (fmi2ModelExchange = 0, fmi2CoSimulation = 1)"
                ));
                return std::ptr::null_mut();
            }
        };
        match text(guid) {
            Some(g) if g == table.token => {}
            g => {
                err(format!(
                    "GUID {g:?} does not match this FMU's {}",
                    table.token
                ));
                return std::ptr::null_mut();
            }
        }
        let cx = Context {
            instance_name: name,
            fmi_version: 2,
            resource_dir: text(resource_location).map(|u| ffi::uri_to_path(&u)),
            start_time: 0.0,
        };
        let mut inst = Instance::new(model, table, logger, cx, Version::V2);
        inst.interface = interface;
        Box::into_raw(Box::new(inst)) as *mut c_void
    })
}

/// `fmi2FreeInstance`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn free_instance<M: Model>(c: *mut c_void) {
    free_instance_named::<M>(c, "fmi2FreeInstance")
}

/// `fmi2FreeInstance` / `fmi3FreeInstance`: frees the instance, except after it returned
/// Fatal, when the call is recorded as misuse ([`crate::ffi::calls_after_fatal`]) and the
/// instance is left alone.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub(crate) unsafe fn free_instance_named<M: Model>(c: *mut c_void, func: &str) {
    guard((), || {
        if let Some(inst) = Instance::<M>::from_ptr(c) {
            if inst.phase == Phase::Fatal {
                ffi::called_after_fatal(func, &inst.logger.name.to_string_lossy());
                return;
            }
            inst.invalidate();
            drop(Box::from_raw(inst as *mut Instance<M>));
        }
    })
}

/// `fmi2SetDebugLogging`.
///
/// # Safety
/// Pointers as in the FMI 2 standard.
pub unsafe fn set_debug_logging<M: Model>(
    c: *mut c_void,
    on: c_int,
    n: usize,
    cats: *const *const c_char,
) -> c_int {
    const F: &str = "fmi2SetDebugLogging";
    with::<M>(c, F, |inst| match categories(cats, n) {
        Some(cats) => match inst.logger.set_debug_logging(on != 0, &cats) {
            Ok(()) => Status::Ok,
            Err(e) => inst.fail(F, e),
        },
        None => null_arg(inst, F),
    })
}

/// `fmi2SetupExperiment`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn setup_experiment<M: Model>(
    c: *mut c_void,
    _tol_defined: c_int,
    _tol: f64,
    start: f64,
    stop_defined: c_int,
    stop: f64,
) -> c_int {
    const F: &str = "fmi2SetupExperiment";
    with::<M>(c, F, |inst| {
        if let Err(s) = inst.expect(F, &[Phase::Instantiated]) {
            return s;
        }
        if !start.is_finite() || (stop_defined != 0 && !(stop >= start)) {
            return inst.fail(F, format!("bad experiment: start {start}, stop {stop}"));
        }
        inst.s.time = start;
        Status::Ok
    })
}

/// `fmi2EnterInitializationMode`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn enter_initialization_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi2EnterInitializationMode";
    with::<M>(c, F, |inst| {
        let t = inst.s.time;
        inst.enter_initialization(F, t, None)
    })
}

/// `fmi2ExitInitializationMode`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn exit_initialization_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi2ExitInitializationMode";
    with::<M>(c, F, |inst| inst.exit_initialization(F))
}

/// `fmi2Terminate`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn terminate<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi2Terminate";
    with::<M>(c, F, |inst| inst.terminate(F))
}

/// `fmi2Reset`.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn reset<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi2Reset";
    with::<M>(c, F, |inst| inst.reset(F))
}

/// `fmi2GetReal`.
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn get_real<M: Model>(c: *mut c_void, vr: *const u32, n: usize, v: *mut f64) -> c_int {
    const F: &str = "fmi2GetReal";
    with::<M>(c, F, |inst| match (slice(vr, n), slice_mut(v, n)) {
        (Some(vr), Some(v)) => inst.get(F, vr, v, &[VarType::Float64]),
        _ => null_arg(inst, F),
    })
}

/// `fmi2GetInteger`.
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn get_integer<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *mut c_int,
) -> c_int {
    const F: &str = "fmi2GetInteger";
    with::<M>(c, F, |inst| match (slice(vr, n), slice_mut(v, n)) {
        (Some(vr), Some(v)) => inst.get_fmi2_integers(F, vr, v),
        _ => null_arg(inst, F),
    })
}

/// `fmi2GetBoolean`.
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn get_boolean<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *mut c_int,
) -> c_int {
    const F: &str = "fmi2GetBoolean";
    with::<M>(c, F, |inst| match (slice(vr, n), slice_mut(v, n)) {
        (Some(vr), Some(v)) => {
            let mut b = vec![false; n];
            let s = inst.get(F, vr, &mut b, &[VarType::Boolean]);
            if s == Status::Ok {
                for (o, x) in v.iter_mut().zip(b) {
                    *o = c_int::from(x);
                }
            }
            s
        }
        _ => null_arg(inst, F),
    })
}

/// `fmi2GetString`.
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn get_string<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *mut *const c_char,
) -> c_int {
    const F: &str = "fmi2GetString";
    with::<M>(c, F, |inst| match (slice(vr, n), slice_mut(v, n)) {
        (Some(vr), Some(v)) => inst.get_strings(F, vr, v),
        _ => null_arg(inst, F),
    })
}

/// `fmi2SetReal`.
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn set_real<M: Model>(c: *mut c_void, vr: *const u32, n: usize, v: *const f64) -> c_int {
    const F: &str = "fmi2SetReal";
    with::<M>(c, F, |inst| match (slice(vr, n), slice(v, n)) {
        (Some(vr), Some(v)) => inst.set(F, vr, v, &[VarType::Float64]),
        _ => null_arg(inst, F),
    })
}

/// `fmi2SetInteger`.
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn set_integer<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *const c_int,
) -> c_int {
    const F: &str = "fmi2SetInteger";
    with::<M>(c, F, |inst| match (slice(vr, n), slice(v, n)) {
        (Some(vr), Some(v)) => inst.set_fmi2_integers(F, vr, v),
        _ => null_arg(inst, F),
    })
}

/// `fmi2SetBoolean`.
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn set_boolean<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *const c_int,
) -> c_int {
    const F: &str = "fmi2SetBoolean";
    with::<M>(c, F, |inst| match (slice(vr, n), slice(v, n)) {
        (Some(vr), Some(v)) => {
            let b: Vec<bool> = v.iter().map(|&x| x != 0).collect();
            inst.set(F, vr, &b, &[VarType::Boolean])
        }
        _ => null_arg(inst, F),
    })
}

/// `fmi2SetString`.
///
/// # Safety
/// Arrays must hold `n` elements, each a NUL-terminated string.
pub unsafe fn set_string<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    v: *const *const c_char,
) -> c_int {
    const F: &str = "fmi2SetString";
    with::<M>(c, F, |inst| match (slice(vr, n), slice(v, n)) {
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

/// `fmi2GetFMUstate`.
///
/// # Safety
/// Pointers as in the FMI 2 standard.
pub unsafe fn get_fmu_state<M: Model>(c: *mut c_void, state: *mut *mut c_void) -> c_int {
    const F: &str = "fmi2GetFMUstate";
    with::<M>(c, F, |inst| ffi::get_state(inst, F, state))
}

/// `fmi2SetFMUstate`.
///
/// # Safety
/// Pointers as in the FMI 2 standard.
pub unsafe fn set_fmu_state<M: Model>(c: *mut c_void, state: *mut c_void) -> c_int {
    const F: &str = "fmi2SetFMUstate";
    with::<M>(c, F, |inst| ffi::set_state(inst, F, state))
}

/// `fmi2FreeFMUstate`.
///
/// # Safety
/// Pointers as in the FMI 2 standard.
pub unsafe fn free_fmu_state<M: Model>(c: *mut c_void, state: *mut *mut c_void) -> c_int {
    const F: &str = "fmi2FreeFMUstate";
    with::<M>(c, F, |inst| ffi::free_state(inst, F, state))
}

/// `fmi2SerializedFMUstateSize`.
///
/// # Safety
/// Pointers as in the FMI 2 standard.
pub unsafe fn serialized_fmu_state_size<M: Model>(
    c: *mut c_void,
    state: *mut c_void,
    size: *mut usize,
) -> c_int {
    const F: &str = "fmi2SerializedFMUstateSize";
    with::<M>(c, F, |inst| ffi::state_size(inst, F, state, size))
}

/// `fmi2SerializeFMUstate`.
///
/// # Safety
/// Pointers as in the FMI 2 standard.
pub unsafe fn serialize_fmu_state<M: Model>(
    c: *mut c_void,
    state: *mut c_void,
    buf: *mut c_char,
    size: usize,
) -> c_int {
    const F: &str = "fmi2SerializeFMUstate";
    with::<M>(c, F, |inst| {
        ffi::serialize(inst, F, state, buf as *mut u8, size)
    })
}

/// `fmi2DeSerializeFMUstate`.
///
/// # Safety
/// Pointers as in the FMI 2 standard.
pub unsafe fn deserialize_fmu_state<M: Model>(
    c: *mut c_void,
    buf: *const c_char,
    size: usize,
    state: *mut *mut c_void,
) -> c_int {
    const F: &str = "fmi2DeSerializeFMUstate";
    with::<M>(c, F, |inst| {
        ffi::deserialize(inst, F, buf as *const u8, size, state)
    })
}

/// `fmi2GetDirectionalDerivative`.
///
/// # Safety
/// Arrays must hold their stated lengths.
pub unsafe fn get_directional_derivative<M: Model>(
    c: *mut c_void,
    unknowns: *const u32,
    n_unknown: usize,
    knowns: *const u32,
    n_known: usize,
    dv_known: *const f64,
    dv_unknown: *mut f64,
) -> c_int {
    const F: &str = "fmi2GetDirectionalDerivative";
    with::<M>(c, F, |inst| {
        match (
            slice(unknowns, n_unknown),
            slice(knowns, n_known),
            slice(dv_known, n_known),
            slice_mut(dv_unknown, n_unknown),
        ) {
            (Some(u), Some(k), Some(dk), Some(du)) => match inst.jacobian(F, u, k) {
                Ok(j) => {
                    let r = j * nalgebra::DVector::from_column_slice(dk);
                    du.copy_from_slice(r.as_slice());
                    Status::Ok
                }
                Err(s) => s,
            },
            _ => null_arg(inst, F),
        }
    })
}

/// `fmi2SetRealInputDerivatives`: derivatives of orders 1..=3 of Real inputs, used as a
/// Taylor polynomial during the next `fmi2DoStep` only (then reset to zero).
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn set_real_input_derivatives<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    order: *const c_int,
    v: *const f64,
) -> c_int {
    const F: &str = "fmi2SetRealInputDerivatives";
    with::<M>(c, F, |inst| {
        if let Err(s) = inst.expect_cs(F) {
            return s;
        }
        let (Some(vr), Some(order), Some(v)) = (slice(vr, n), slice(order, n), slice(v, n)) else {
            return null_arg(inst, F);
        };
        if let Err(s) = inst.expect(
            F,
            &[Phase::Instantiated, Phase::Initialization, Phase::Step],
        ) {
            return s;
        }
        let mut updates = Vec::with_capacity(n);
        for ((&r, &o), &x) in vr.iter().zip(order).zip(v) {
            let i = match inst.lookup(F, r) {
                Ok(i) => i,
                Err(s) => return s,
            };
            let Some(k) = inst.table.real_inputs.iter().position(|&j| j == i) else {
                return inst.fail(
                    F,
                    format!("'{}' is not a Real input", inst.table.vars[i].name),
                );
            };
            if !(1..=3).contains(&o) {
                return inst.fail(F, format!("order {o} is outside 1..=3"));
            }
            if !x.is_finite() {
                return inst.fail(F, format!("derivative value {x} is not finite"));
            }
            updates.push((k, (o - 1) as usize, x));
        }
        for (k, o, x) in updates {
            inst.s.input_derivs[k][o] = x;
        }
        Status::Ok
    })
}

/// `fmi2GetRealOutputDerivatives`.
///
/// # Safety
/// Arrays must hold `n` elements.
pub unsafe fn get_real_output_derivatives<M: Model>(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    order: *const c_int,
    v: *mut f64,
) -> c_int {
    const F: &str = "fmi2GetRealOutputDerivatives";
    with::<M>(c, F, |inst| {
        if let Err(s) = inst.expect_cs(F) {
            return s;
        }
        match (slice(vr, n), slice(order, n), slice_mut(v, n)) {
            (Some(vr), Some(order), Some(v)) => inst.output_derivatives(F, vr, order, v),
            _ => null_arg(inst, F),
        }
    })
}

/// Checks a communication point against the instance's time.
pub(crate) fn check_step_times<M: Model>(
    inst: &Instance<M>,
    func: &str,
    tc: f64,
    h: f64,
) -> Result<(), Status> {
    if !tc.is_finite() || !h.is_finite() || h < 0.0 {
        return Err(inst.fail(
            func,
            format!("bad communication point {tc} or step size {h}"),
        ));
    }
    let tol = 1e-9 * inst.s.time.abs().max(1.0);
    if (tc - inst.s.time).abs() > tol {
        return Err(inst.fail(
            func,
            format!(
                "currentCommunicationPoint {tc} does not match the FMU's time {}",
                inst.s.time
            ),
        ));
    }
    Ok(())
}

/// `fmi2DoStep`: integrates to `tc + h`, handling events inside the step; Real inputs follow
/// the polynomial given by `fmi2SetRealInputDerivatives` and end the step at its end value.
/// A model's termination request stops the step at its time with Discard (`fmi2Terminated`
/// is then true); further steps are refused until a state is restored or the slave is reset.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn do_step<M: Model>(c: *mut c_void, tc: f64, h: f64, _no_set_prior: c_int) -> c_int {
    const F: &str = "fmi2DoStep";
    with::<M>(c, F, |inst| {
        if let Err(s) = inst.expect_cs(F).and_then(|()| inst.expect_step(F)) {
            return s;
        }
        if let Err(s) = check_step_times(inst, F, tc, h) {
            return s;
        }
        let poly = inst.input_taylor();
        let failure = inst.planned_failure(tc, tc + h);
        let stop = failure.as_ref().map_or(tc + h, |f| f.1);
        match inst.integrate(tc, stop, &poly, false) {
            Ok(_) => {
                inst.s.time = stop;
                inst.s.dirty = false;
                for d in &mut inst.s.input_derivs {
                    *d = [0.0; 3];
                }
                match failure {
                    Some((f, _)) => inst.step_failed(F, &f),
                    None => Status::Ok,
                }
            }
            Err(e) => {
                inst.phase = Phase::Failed;
                inst.fail(F, format!("step from t = {tc} failed: {e}"))
            }
        }
    })
}

/// `fmi2CancelStep`: steps are never asynchronous, so there is nothing to cancel.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn cancel_step<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi2CancelStep";
    with::<M>(c, F, |inst| {
        inst.fail(F, "fmi2DoStep never returns fmi2Pending; nothing to cancel")
    })
}

/// `fmi2GetStatus` (fmi2DoStepStatus / fmi2PendingStatus are for asynchronous steps).
///
/// # Safety
/// `value` must be NULL or writable.
pub unsafe fn get_status<M: Model>(c: *mut c_void, kind: c_int, value: *mut c_int) -> c_int {
    const F: &str = "fmi2GetStatus";
    with::<M>(c, F, |inst| {
        let _ = value;
        inst.log(
            Status::Discard,
            1,
            &format!("{F}: status kind {kind} is not available (steps are synchronous)"),
        );
        Status::Discard
    })
}

/// `fmi2GetRealStatus`: `fmi2LastSuccessfulTime` is the current time.
///
/// # Safety
/// `value` must be NULL or writable.
pub unsafe fn get_real_status<M: Model>(c: *mut c_void, kind: c_int, value: *mut f64) -> c_int {
    const F: &str = "fmi2GetRealStatus";
    with::<M>(c, F, |inst| match (kind, value.as_mut()) {
        (2, Some(v)) => {
            *v = inst.s.time;
            Status::Ok
        }
        (_, None) => null_arg(inst, F),
        _ => {
            inst.log(
                Status::Discard,
                1,
                &format!("{F}: status kind {kind} is not available"),
            );
            Status::Discard
        }
    })
}

/// `fmi2GetIntegerStatus`: no integer status exists.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn get_integer_status<M: Model>(
    c: *mut c_void,
    kind: c_int,
    _value: *mut c_int,
) -> c_int {
    const F: &str = "fmi2GetIntegerStatus";
    with::<M>(c, F, |inst| {
        inst.log(
            Status::Discard,
            1,
            &format!("{F}: status kind {kind} is not available"),
        );
        Status::Discard
    })
}

/// `fmi2GetBooleanStatus`: `fmi2Terminated` is true after a step the model ended with a
/// termination request (until a state is restored, the slave is reset or terminated).
///
/// # Safety
/// `value` must be NULL or writable.
pub unsafe fn get_boolean_status<M: Model>(
    c: *mut c_void,
    kind: c_int,
    value: *mut c_int,
) -> c_int {
    const F: &str = "fmi2GetBooleanStatus";
    with::<M>(c, F, |inst| match (kind, value.as_mut()) {
        (3, Some(v)) => {
            *v = c_int::from(inst.termination_requested());
            Status::Ok
        }
        (_, None) => null_arg(inst, F),
        _ => {
            inst.log(
                Status::Discard,
                1,
                &format!("{F}: status kind {kind} is not available"),
            );
            Status::Discard
        }
    })
}

/// `fmi2GetStringStatus`: no string status exists.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn get_string_status<M: Model>(
    c: *mut c_void,
    kind: c_int,
    _value: *mut *const c_char,
) -> c_int {
    const F: &str = "fmi2GetStringStatus";
    with::<M>(c, F, |inst| {
        inst.log(
            Status::Discard,
            1,
            &format!("{F}: status kind {kind} is not available"),
        );
        Status::Discard
    })
}

/// `fmi2EventInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EventInfo {
    /// `newDiscreteStatesNeeded`.
    pub new_discrete_states_needed: c_int,
    /// `terminateSimulation`.
    pub terminate_simulation: c_int,
    /// `nominalsOfContinuousStatesChanged`.
    pub nominals_of_continuous_states_changed: c_int,
    /// `valuesOfContinuousStatesChanged`.
    pub values_of_continuous_states_changed: c_int,
    /// `nextEventTimeDefined`.
    pub next_event_time_defined: c_int,
    /// `nextEventTime`.
    pub next_event_time: f64,
}

/// `fmi2SetTime` (Model Exchange): in Event Mode and Continuous-Time Mode.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn set_time<M: Model>(c: *mut c_void, t: f64) -> c_int {
    const F: &str = "fmi2SetTime";
    with::<M>(c, F, |inst| inst.me_set_time(F, t))
}

/// `fmi2SetContinuousStates` (Model Exchange): in Continuous-Time Mode only.
///
/// # Safety
/// `x` must hold `nx` elements.
pub unsafe fn set_continuous_states<M: Model>(c: *mut c_void, x: *const f64, nx: usize) -> c_int {
    const F: &str = "fmi2SetContinuousStates";
    with::<M>(c, F, |inst| match slice(x, nx) {
        Some(x) => inst.me_set_states(F, x),
        None => null_arg(inst, F),
    })
}

/// `fmi2GetContinuousStates` (Model Exchange).
///
/// # Safety
/// `x` must hold `nx` writable elements.
pub unsafe fn get_continuous_states<M: Model>(c: *mut c_void, x: *mut f64, nx: usize) -> c_int {
    const F: &str = "fmi2GetContinuousStates";
    with::<M>(c, F, |inst| match slice_mut(x, nx) {
        Some(x) => inst.me_get_states(F, x),
        None => null_arg(inst, F),
    })
}

/// `fmi2GetDerivatives` (Model Exchange).
///
/// # Safety
/// `dx` must hold `nx` writable elements.
pub unsafe fn get_derivatives<M: Model>(c: *mut c_void, dx: *mut f64, nx: usize) -> c_int {
    const F: &str = "fmi2GetDerivatives";
    with::<M>(c, F, |inst| match slice_mut(dx, nx) {
        Some(dx) => inst.me_get_derivatives(F, dx),
        None => null_arg(inst, F),
    })
}

/// `fmi2GetEventIndicators` (Model Exchange).
///
/// # Safety
/// `z` must hold `ni` writable elements.
pub unsafe fn get_event_indicators<M: Model>(c: *mut c_void, z: *mut f64, ni: usize) -> c_int {
    const F: &str = "fmi2GetEventIndicators";
    with::<M>(c, F, |inst| match slice_mut(z, ni) {
        Some(z) => inst.me_get_event_indicators(F, z),
        None => null_arg(inst, F),
    })
}

/// `fmi2GetNominalsOfContinuousStates` (Model Exchange).
///
/// # Safety
/// `x` must hold `nx` writable elements.
pub unsafe fn get_nominals_of_continuous_states<M: Model>(
    c: *mut c_void,
    x: *mut f64,
    nx: usize,
) -> c_int {
    const F: &str = "fmi2GetNominalsOfContinuousStates";
    with::<M>(c, F, |inst| match slice_mut(x, nx) {
        Some(x) => inst.me_get_nominals(F, x),
        None => null_arg(inst, F),
    })
}

/// `fmi2EnterEventMode` (Model Exchange): from Continuous-Time Mode.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn enter_event_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi2EnterEventMode";
    with::<M>(c, F, |inst| inst.me_enter_event_mode(F))
}

/// `fmi2EnterContinuousTimeMode` (Model Exchange): from Event Mode.
///
/// # Safety
/// `c` must be NULL or an instance of this kit.
pub unsafe fn enter_continuous_time_mode<M: Model>(c: *mut c_void) -> c_int {
    const F: &str = "fmi2EnterContinuousTimeMode";
    with::<M>(c, F, |inst| inst.me_enter_continuous_time_mode(F))
}

/// `fmi2NewDiscreteStates` (Model Exchange): one event iteration in Event Mode.
///
/// # Safety
/// `info` must be NULL or writable.
pub unsafe fn new_discrete_states<M: Model>(c: *mut c_void, info: *mut EventInfo) -> c_int {
    const F: &str = "fmi2NewDiscreteStates";
    with::<M>(c, F, |inst| {
        let Some(out) = info.as_mut() else {
            return inst.fail(F, "fmi2eventInfo is NULL");
        };
        match inst.me_update_discrete_states(F) {
            Ok(e) => {
                *out = EventInfo {
                    new_discrete_states_needed: c_int::from(e.need_update),
                    terminate_simulation: c_int::from(e.terminate),
                    nominals_of_continuous_states_changed: c_int::from(e.nominals_changed),
                    values_of_continuous_states_changed: c_int::from(e.values_changed),
                    next_event_time_defined: c_int::from(e.next_time.is_some()),
                    next_event_time: e.next_time.unwrap_or(0.0),
                };
                Status::Ok
            }
            Err(s) => s,
        }
    })
}

/// `fmi2CompletedIntegratorStep` (Model Exchange): in Continuous-Time Mode.
///
/// # Safety
/// The out-pointers must be NULL or writable.
pub unsafe fn completed_integrator_step<M: Model>(
    c: *mut c_void,
    _no_set_prior: c_int,
    enter_event_mode: *mut c_int,
    terminate: *mut c_int,
) -> c_int {
    const F: &str = "fmi2CompletedIntegratorStep";
    with::<M>(c, F, |inst| {
        if enter_event_mode.is_null() || terminate.is_null() {
            return inst.fail(F, "enterEventMode or terminateSimulation is NULL");
        }
        let (status, enter, term) = inst.me_completed_integrator_step(F);
        *enter_event_mode = c_int::from(enter);
        *terminate = c_int::from(term);
        status
    })
}
