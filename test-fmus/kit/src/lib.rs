//! fmu-kit: write a model once in Rust and get a shared library that exports both the
//! FMI 2.0 and the FMI 3.0 Co-Simulation C API (and, for models that opt in, the Model
//! Exchange API of both versions), plus both `modelDescription.xml` files generated from the
//! same variable table.
//!
//! ```ignore
//! use fmu_kit::{Model, Values, Variable};
//!
//! #[derive(Default)]
//! pub struct Dahlquist;
//!
//! const X: u32 = 1;
//! const DER_X: u32 = 2;
//! const K: u32 = 3;
//!
//! impl Model for Dahlquist {
//!     const NAME: &'static str = "Dahlquist";
//!     fn variables(&self) -> Vec<Variable> {
//!         vec![
//!             Variable::float64(X, "x").output().start(1.0),
//!             Variable::float64(DER_X, "der(x)").derivative_of(X),
//!             Variable::float64(K, "k").parameter().start(1.0),
//!         ]
//!     }
//!     fn evaluate(&self, v: &mut Values, _t: f64) -> Result<(), String> {
//!         v.set_f64(DER_X, -v.f64(K) * v.f64(X));
//!         Ok(())
//!     }
//! }
//!
//! fmu_kit::export_fmu!(Dahlquist);
//! ```
//!
//! Behaviour shared by every model:
//! - value reference 0 is the independent variable `time`, added by the kit;
//! - FMI 2 shows the scalar Float64 / Int32 / Boolean / String variables (as Real / Integer /
//!   Boolean / String); FMI 3 shows all variables, including arrays and the other types;
//! - FMI 2 input derivatives (`fmi2SetRealInputDerivatives`, orders 1..=3) apply to the next
//!   `fmi2DoStep` only: the inputs follow the Taylor polynomial within the step, the input
//!   variables hold the polynomial's end value afterwards and the derivatives are reset to 0;
//! - FMI 3 inputs declared `intermediateUpdate` are requested through the callback at
//!   t + h/3, t + 2h/3 and t + h and follow the cubic through those samples;
//! - structural parameters ([`Variable::structural_parameter`], fixed scalars) are
//!   `causality="structuralParameter"` in FMI 3, set only in Configuration Mode
//!   (`fmi3EnterConfigurationMode` from Instantiated; [`Model::configure`] runs on
//!   `fmi3ExitConfigurationMode`), and ordinary fixed parameters in FMI 2; a one-dimensional
//!   array may be sized by a UInt64 structural parameter ([`Variable::sized_by`]:
//!   `<Dimension valueReference>`), which resizes it on `fmi3ExitConfigurationMode` (sizes in
//!   1..=[`variable::MAX_CONFIGURED_ELEMENTS`]; get / set then count the configured size), and
//!   which FMI 2 does not show, like every array;
//! - a model may fail a step or request termination ([`Model::step_failure`],
//!   [`StepFailure`]): a request stops the step at its time with FMI 2 Discard and
//!   `fmi2Terminated` true, or FMI 3 OK and `terminateSimulation`; further steps are refused
//!   until `fmi*Terminate`, a reset or restoring an FMU state;
//! - a misused call returns Error with a log message naming the function and leaves the
//!   instance as it was (a failed step moves it to an error state, from which only getters,
//!   restoring an FMU state, reset and free are accepted: no `fmi*Terminate`, FMI 2.0 §4.2.4,
//!   FMI 3.0 §2.2.3);
//! - after a step returned Fatal every call returns Fatal and `fmi*FreeInstance` frees
//!   nothing: FMI allows no further call at all, so each one (free included) is counted as the
//!   importer's misuse, reported on stderr and readable through the exported
//!   `fmu_kit_calls_after_fatal()` (with `FMU_KIT_ABORT_ON_MISUSE=1` in the environment the
//!   process aborts instead).
//!
//! Model Exchange ([`Model::MODEL_EXCHANGE`] = true; a model with event indicators also names
//! the variable holding each one, [`Model::EVENT_INDICATOR_VARIABLES`]):
//! - the same shared library answers `fmi2Instantiate(..., fmi2ModelExchange, ...)` and
//!   `fmi3InstantiateModelExchange`; both model descriptions get a `<ModelExchange>` element
//!   with the same `modelIdentifier` (before `<CoSimulation>`, as the schemas order them), FMI 2
//!   gets `numberOfEventIndicators`, FMI 3 one `<EventIndicator>` per indicator; FMU states
//!   (get / set / serialize) and directional derivatives work as in Co-Simulation
//!   (`completedIntegratorStepNotNeeded = false`, `needsCompletedIntegratorStep = true`);
//! - the importer integrates: the kit's integrators, [`Model::exact_step`],
//!   [`Model::internal_step`] and input derivatives are not used. `fmi*GetDerivatives` /
//!   `fmi3GetContinuousStateDerivatives` run [`Model::evaluate`] at the time, states and inputs
//!   last set (states in table order, as `fmi*GetContinuousStates` returns them; nominals from
//!   the states' `nominal`, else 1); `fmi*GetEventIndicators` run
//!   [`Model::event_indicators`];
//! - state machine (FMI 2.0 §3.2.3, FMI 3.0 §3.2): Instantiated -> Initialization Mode ->
//!   (`fmi*ExitInitializationMode`) Event Mode -> (`fmi*EnterContinuousTimeMode`)
//!   Continuous-Time Mode -> (`fmi*EnterEventMode`) Event Mode ... -> Terminated. States are
//!   set only in Continuous-Time Mode, time in Event and Continuous-Time Mode; in
//!   Continuous-Time Mode only continuous inputs may be set, in Event Mode also discrete
//!   inputs and tunable parameters. Anything else returns Error with a log message, as do
//!   wrong array sizes, NULL arrays, Co-Simulation functions on a Model Exchange instance and
//!   the reverse;
//! - event iteration (`fmi2NewDiscreteStates`, `fmi3UpdateDiscreteStates`, in Event Mode):
//!   one call of [`Model::event`] with the time event due now (from
//!   [`Model::next_time_event`], within 1e-12 s or 8 ulp) and the indicators that crossed
//!   zero. An indicator has crossed when its sign differs from (or it reached zero from) its
//!   reference value: the indicators at the end of the last event iteration, moved on by each
//!   `fmi*CompletedIntegratorStep` at which that indicator had not crossed, so a crossing
//!   survives until the next Event Mode even if the importer stepped past it (the FMI
//!   pseudo-code completes the step before entering Event Mode); a reference of exactly zero
//!   (an indicator reinitialised onto zero) is replaced at the first completed step.
//!   `newDiscreteStatesNeeded` is true when another time event is due at the same time,
//!   `valuesOfContinuousStatesChanged` when the action changed a state, `nextEventTime` is
//!   the model's next time event; more than 10,000 iterations in one Event Mode are an Error;
//! - termination: a [`StepFailure::termination`] request is looked for between the last
//!   completed integrator step (or event iteration) and now, and reported as
//!   `terminateSimulation` by `fmi*CompletedIntegratorStep` and the event iteration; a
//!   request at a later time is announced as `nextEventTime` so the importer stops there.
//!   Other step failures are returned by `fmi*CompletedIntegratorStep` with their status.
//!   `enterEventMode` of `fmi*CompletedIntegratorStep` is always false (no step events).

// `!(x >= m)` is deliberate throughout: NaN must fail every range check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod clock;
pub mod ffi;
pub mod fmi2;
pub mod fmi3;
pub mod instance;
pub mod linear;
mod me;
pub mod model;
pub mod values;
pub mod variable;
pub mod xml;

pub use clock::{Clock, IntervalVariability, Ticks};
pub use instance::Status;
pub use linear::linear_step;
pub use model::{eval_taylor, Context, Event, Experiment, Inputs, Integrator, Model, StepFailure};
pub use nalgebra;
pub use values::{Element, Value, Values};
pub use variable::{
    Causality, EnumerationType, Initial, Start, Table, VarType, Variability, Variable, TIME_VR,
};

/// The model description of `M` for FMI major version 2 or 3.
pub fn model_description<M: Model>(fmi_version: u8) -> Result<String, String> {
    let table = Table::new(M::NAME, M::default().variables())?;
    clock::check_clocks(&table, &M::default().clocks())?;
    if M::MODEL_EXCHANGE {
        check_event_indicator_variables::<M>(&table)?;
    }
    match fmi_version {
        2 => Ok(xml::fmi2::<M>(&table)),
        3 => Ok(xml::fmi3::<M>(&table)),
        v => Err(format!("unsupported FMI version {v}")),
    }
}

/// A Model Exchange model names one scalar Float64 variable per event indicator (the FMI 3
/// `<EventIndicator>` elements).
fn check_event_indicator_variables<M: Model>(table: &Table) -> Result<(), String> {
    let vrs = M::EVENT_INDICATOR_VARIABLES;
    if vrs.len() != M::NUM_EVENT_INDICATORS {
        return Err(format!(
            "{}: Model Exchange needs one EVENT_INDICATOR_VARIABLES entry per event indicator \
             ({} given, NUM_EVENT_INDICATORS = {})",
            M::NAME,
            vrs.len(),
            M::NUM_EVENT_INDICATORS
        ));
    }
    for &vr in vrs {
        match table.var(vr) {
            Some(v) if v.ty == VarType::Float64 && v.dims.is_empty() => {}
            _ => {
                return Err(format!(
                    "{}: event indicator variable vr {vr} is not a scalar Float64 variable",
                    M::NAME
                ))
            }
        }
    }
    Ok(())
}

/// Backs `fmu_kit_model_description`: the cached XML as a C string, NULL on failure.
#[doc(hidden)]
pub fn model_description_ptr<M: Model>(
    fmi_version: std::ffi::c_int,
    cache: &[std::sync::OnceLock<Option<std::ffi::CString>>; 2],
) -> *const std::ffi::c_char {
    ffi::guard(std::ptr::null(), || {
        let slot = match fmi_version {
            2 => &cache[0],
            3 => &cache[1],
            _ => return std::ptr::null(),
        };
        slot.get_or_init(|| {
            model_description::<M>(fmi_version as u8)
                .ok()
                .and_then(|s| std::ffi::CString::new(s).ok())
        })
        .as_ref()
        .map_or(std::ptr::null(), |c| c.as_ptr())
    })
}

/// Emits every FMI 2 and FMI 3 C function (and `fmu_kit_model_description`,
/// `fmu_kit_calls_after_fatal`) for a model type.
#[macro_export]
macro_rules! export_fmu {
    ($model:ty) => {
        #[allow(non_snake_case, clippy::missing_safety_doc, missing_docs)]
        mod __fmu_kit_exports {
            use super::*;
            use ::std::ffi::{c_char, c_int, c_void};
            use $crate::{fmi2, fmi3};
            type M = $model;
            type Comp = *mut c_void;

            static DESCRIPTIONS: [::std::sync::OnceLock<Option<::std::ffi::CString>>; 2] =
                [::std::sync::OnceLock::new(), ::std::sync::OnceLock::new()];

            /// The model description XML for FMI 2 or 3 (static, NUL-terminated), NULL on error.
            #[no_mangle]
            pub extern "C" fn fmu_kit_model_description(fmi_major_version: c_int) -> *const c_char {
                $crate::model_description_ptr::<M>(fmi_major_version, &DESCRIPTIONS)
            }

            /// Calls made to instances of this FMU after they returned Fatal (FMI forbids any).
            #[no_mangle]
            pub extern "C" fn fmu_kit_calls_after_fatal() -> usize {
                $crate::ffi::calls_after_fatal()
            }

            // ---------------- FMI 2.0 ----------------
            #[no_mangle]
            pub extern "C" fn fmi2GetTypesPlatform() -> *const c_char {
                c"default".as_ptr()
            }
            #[no_mangle]
            pub extern "C" fn fmi2GetVersion() -> *const c_char {
                c"2.0".as_ptr()
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetDebugLogging(
                c: Comp,
                on: c_int,
                n: usize,
                cats: *const *const c_char,
            ) -> c_int {
                fmi2::set_debug_logging::<M>(c, on, n, cats)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2Instantiate(
                name: *const c_char,
                ty: c_int,
                guid: *const c_char,
                res: *const c_char,
                f: *const fmi2::CallbackFunctions,
                visible: c_int,
                logging: c_int,
            ) -> Comp {
                fmi2::instantiate::<M>(name, ty, guid, res, f, visible, logging)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2FreeInstance(c: Comp) {
                fmi2::free_instance::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetupExperiment(
                c: Comp,
                td: c_int,
                tol: f64,
                t0: f64,
                sd: c_int,
                t1: f64,
            ) -> c_int {
                fmi2::setup_experiment::<M>(c, td, tol, t0, sd, t1)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2EnterInitializationMode(c: Comp) -> c_int {
                fmi2::enter_initialization_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2ExitInitializationMode(c: Comp) -> c_int {
                fmi2::exit_initialization_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2Terminate(c: Comp) -> c_int {
                fmi2::terminate::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2Reset(c: Comp) -> c_int {
                fmi2::reset::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetReal(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *mut f64,
            ) -> c_int {
                fmi2::get_real::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetInteger(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *mut c_int,
            ) -> c_int {
                fmi2::get_integer::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetBoolean(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *mut c_int,
            ) -> c_int {
                fmi2::get_boolean::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetString(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *mut *const c_char,
            ) -> c_int {
                fmi2::get_string::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetReal(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *const f64,
            ) -> c_int {
                fmi2::set_real::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetInteger(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *const c_int,
            ) -> c_int {
                fmi2::set_integer::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetBoolean(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *const c_int,
            ) -> c_int {
                fmi2::set_boolean::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetString(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *const *const c_char,
            ) -> c_int {
                fmi2::set_string::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetFMUstate(c: Comp, s: *mut *mut c_void) -> c_int {
                fmi2::get_fmu_state::<M>(c, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetFMUstate(c: Comp, s: *mut c_void) -> c_int {
                fmi2::set_fmu_state::<M>(c, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2FreeFMUstate(c: Comp, s: *mut *mut c_void) -> c_int {
                fmi2::free_fmu_state::<M>(c, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SerializedFMUstateSize(
                c: Comp,
                s: *mut c_void,
                size: *mut usize,
            ) -> c_int {
                fmi2::serialized_fmu_state_size::<M>(c, s, size)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SerializeFMUstate(
                c: Comp,
                s: *mut c_void,
                b: *mut c_char,
                size: usize,
            ) -> c_int {
                fmi2::serialize_fmu_state::<M>(c, s, b, size)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2DeSerializeFMUstate(
                c: Comp,
                b: *const c_char,
                size: usize,
                s: *mut *mut c_void,
            ) -> c_int {
                fmi2::deserialize_fmu_state::<M>(c, b, size, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetDirectionalDerivative(
                c: Comp,
                u: *const u32,
                nu: usize,
                k: *const u32,
                nk: usize,
                dk: *const f64,
                du: *mut f64,
            ) -> c_int {
                fmi2::get_directional_derivative::<M>(c, u, nu, k, nk, dk, du)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetRealInputDerivatives(
                c: Comp,
                vr: *const u32,
                n: usize,
                o: *const c_int,
                v: *const f64,
            ) -> c_int {
                fmi2::set_real_input_derivatives::<M>(c, vr, n, o, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetRealOutputDerivatives(
                c: Comp,
                vr: *const u32,
                n: usize,
                o: *const c_int,
                v: *mut f64,
            ) -> c_int {
                fmi2::get_real_output_derivatives::<M>(c, vr, n, o, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2DoStep(c: Comp, t: f64, h: f64, nsp: c_int) -> c_int {
                fmi2::do_step::<M>(c, t, h, nsp)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2CancelStep(c: Comp) -> c_int {
                fmi2::cancel_step::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetStatus(c: Comp, k: c_int, v: *mut c_int) -> c_int {
                fmi2::get_status::<M>(c, k, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetRealStatus(c: Comp, k: c_int, v: *mut f64) -> c_int {
                fmi2::get_real_status::<M>(c, k, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetIntegerStatus(
                c: Comp,
                k: c_int,
                v: *mut c_int,
            ) -> c_int {
                fmi2::get_integer_status::<M>(c, k, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetBooleanStatus(
                c: Comp,
                k: c_int,
                v: *mut c_int,
            ) -> c_int {
                fmi2::get_boolean_status::<M>(c, k, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetStringStatus(
                c: Comp,
                k: c_int,
                v: *mut *const c_char,
            ) -> c_int {
                fmi2::get_string_status::<M>(c, k, v)
            }
            // Model Exchange functions: exported so that loaders resolving every symbol work,
            // always an error.
            #[no_mangle]
            pub unsafe extern "C" fn fmi2EnterEventMode(c: Comp) -> c_int {
                fmi2::enter_event_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2NewDiscreteStates(
                c: Comp,
                e: *mut fmi2::EventInfo,
            ) -> c_int {
                fmi2::new_discrete_states::<M>(c, e)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2EnterContinuousTimeMode(c: Comp) -> c_int {
                fmi2::enter_continuous_time_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2CompletedIntegratorStep(
                c: Comp,
                nsp: c_int,
                e: *mut c_int,
                t: *mut c_int,
            ) -> c_int {
                fmi2::completed_integrator_step::<M>(c, nsp, e, t)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetTime(c: Comp, t: f64) -> c_int {
                fmi2::set_time::<M>(c, t)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2SetContinuousStates(
                c: Comp,
                x: *const f64,
                n: usize,
            ) -> c_int {
                fmi2::set_continuous_states::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetDerivatives(c: Comp, x: *mut f64, n: usize) -> c_int {
                fmi2::get_derivatives::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetEventIndicators(
                c: Comp,
                x: *mut f64,
                n: usize,
            ) -> c_int {
                fmi2::get_event_indicators::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetContinuousStates(
                c: Comp,
                x: *mut f64,
                n: usize,
            ) -> c_int {
                fmi2::get_continuous_states::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi2GetNominalsOfContinuousStates(
                c: Comp,
                x: *mut f64,
                n: usize,
            ) -> c_int {
                fmi2::get_nominals_of_continuous_states::<M>(c, x, n)
            }

            // ---------------- FMI 3.0 ----------------
            type Log =
                Option<unsafe extern "C" fn(*mut c_void, c_int, *const c_char, *const c_char)>;
            #[no_mangle]
            pub extern "C" fn fmi3GetVersion() -> *const c_char {
                c"3.0".as_ptr()
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetDebugLogging(
                c: Comp,
                on: bool,
                n: usize,
                cats: *const *const c_char,
            ) -> c_int {
                fmi3::set_debug_logging::<M>(c, on, n, cats)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3InstantiateModelExchange(
                name: *const c_char,
                tok: *const c_char,
                res: *const c_char,
                vis: bool,
                log_on: bool,
                env: *mut c_void,
                log: Log,
            ) -> Comp {
                fmi3::instantiate_model_exchange::<M>(name, tok, res, vis, log_on, env, log)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3InstantiateCoSimulation(
                name: *const c_char,
                tok: *const c_char,
                res: *const c_char,
                vis: bool,
                log_on: bool,
                event_mode: bool,
                early: bool,
                req: *const u32,
                nreq: usize,
                env: *mut c_void,
                log: Log,
                iu: Option<fmi3::IntermediateUpdate>,
            ) -> Comp {
                fmi3::instantiate_co_simulation::<M>(
                    name, tok, res, vis, log_on, event_mode, early, req, nreq, env, log, iu,
                )
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3InstantiateScheduledExecution(
                name: *const c_char,
                tok: *const c_char,
                res: *const c_char,
                _vis: bool,
                log_on: bool,
                env: *mut c_void,
                log: Log,
                cu: Option<fmi3::ClockUpdate>,
                lp: Option<$crate::clock::Preemption>,
                up: Option<$crate::clock::Preemption>,
            ) -> Comp {
                fmi3::instantiate_scheduled_execution::<M>(
                    name, tok, res, log_on, env, log, cu, lp, up,
                )
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3FreeInstance(c: Comp) {
                fmi3::free_instance::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3EnterInitializationMode(
                c: Comp,
                td: bool,
                tol: f64,
                t0: f64,
                sd: bool,
                t1: f64,
            ) -> c_int {
                fmi3::enter_initialization_mode::<M>(c, td, tol, t0, sd, t1)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3ExitInitializationMode(c: Comp) -> c_int {
                fmi3::exit_initialization_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3EnterEventMode(c: Comp) -> c_int {
                fmi3::enter_event_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3Terminate(c: Comp) -> c_int {
                fmi3::terminate::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3Reset(c: Comp) -> c_int {
                fmi3::reset::<M>(c)
            }
            $crate::__fmi3_getset! {
                fmi3GetFloat32 fmi3SetFloat32 get_float32 set_float32 f32;
                fmi3GetFloat64 fmi3SetFloat64 get_float64 set_float64 f64;
                fmi3GetInt8 fmi3SetInt8 get_int8 set_int8 i8;
                fmi3GetUInt8 fmi3SetUInt8 get_uint8 set_uint8 u8;
                fmi3GetInt16 fmi3SetInt16 get_int16 set_int16 i16;
                fmi3GetUInt16 fmi3SetUInt16 get_uint16 set_uint16 u16;
                fmi3GetInt32 fmi3SetInt32 get_int32 set_int32 i32;
                fmi3GetUInt32 fmi3SetUInt32 get_uint32 set_uint32 u32;
                fmi3GetInt64 fmi3SetInt64 get_int64 set_int64 i64;
                fmi3GetUInt64 fmi3SetUInt64 get_uint64 set_uint64 u64;
                fmi3GetBoolean fmi3SetBoolean get_boolean set_boolean bool;
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetString(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *mut *const c_char,
                nv: usize,
            ) -> c_int {
                fmi3::get_string::<M>(c, vr, n, v, nv)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetString(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *const *const c_char,
                nv: usize,
            ) -> c_int {
                fmi3::set_string::<M>(c, vr, n, v, nv)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetBinary(
                c: Comp,
                vr: *const u32,
                n: usize,
                sizes: *mut usize,
                v: *mut *const u8,
                nv: usize,
            ) -> c_int {
                fmi3::get_binary::<M>(c, vr, n, sizes, v, nv)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetBinary(
                c: Comp,
                vr: *const u32,
                n: usize,
                sizes: *const usize,
                v: *const *const u8,
                nv: usize,
            ) -> c_int {
                fmi3::set_binary::<M>(c, vr, n, sizes, v, nv)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetClock(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *mut bool,
            ) -> c_int {
                fmi3::get_clock::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetClock(
                c: Comp,
                vr: *const u32,
                n: usize,
                v: *const bool,
            ) -> c_int {
                fmi3::set_clock::<M>(c, vr, n, v)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetNumberOfVariableDependencies(
                c: Comp,
                vr: u32,
                n: *mut usize,
            ) -> c_int {
                fmi3::get_number_of_variable_dependencies::<M>(c, vr, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetVariableDependencies(
                c: Comp,
                dep: u32,
                ed: *mut usize,
                ind: *mut u32,
                ei: *mut usize,
                kinds: *mut c_int,
                n: usize,
            ) -> c_int {
                fmi3::get_variable_dependencies::<M>(c, dep, ed, ind, ei, kinds, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetFMUState(c: Comp, s: *mut *mut c_void) -> c_int {
                fmi3::get_fmu_state::<M>(c, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetFMUState(c: Comp, s: *mut c_void) -> c_int {
                fmi3::set_fmu_state::<M>(c, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3FreeFMUState(c: Comp, s: *mut *mut c_void) -> c_int {
                fmi3::free_fmu_state::<M>(c, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SerializedFMUStateSize(
                c: Comp,
                s: *mut c_void,
                size: *mut usize,
            ) -> c_int {
                fmi3::serialized_fmu_state_size::<M>(c, s, size)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SerializeFMUState(
                c: Comp,
                s: *mut c_void,
                b: *mut u8,
                size: usize,
            ) -> c_int {
                fmi3::serialize_fmu_state::<M>(c, s, b, size)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3DeserializeFMUState(
                c: Comp,
                b: *const u8,
                size: usize,
                s: *mut *mut c_void,
            ) -> c_int {
                fmi3::deserialize_fmu_state::<M>(c, b, size, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetDirectionalDerivative(
                c: Comp,
                u: *const u32,
                nu: usize,
                k: *const u32,
                nk: usize,
                seed: *const f64,
                ns: usize,
                sens: *mut f64,
                nsens: usize,
            ) -> c_int {
                fmi3::derivative::<M>(c, false, u, nu, k, nk, seed, ns, sens, nsens)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetAdjointDerivative(
                c: Comp,
                u: *const u32,
                nu: usize,
                k: *const u32,
                nk: usize,
                seed: *const f64,
                ns: usize,
                sens: *mut f64,
                nsens: usize,
            ) -> c_int {
                fmi3::derivative::<M>(c, true, u, nu, k, nk, seed, ns, sens, nsens)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3EnterConfigurationMode(c: Comp) -> c_int {
                fmi3::enter_configuration_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3ExitConfigurationMode(c: Comp) -> c_int {
                fmi3::exit_configuration_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetIntervalDecimal(
                c: Comp,
                vr: *const u32,
                n: usize,
                i: *mut f64,
                q: *mut c_int,
            ) -> c_int {
                fmi3::get_interval_decimal::<M>(c, vr, n, i, q)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetIntervalFraction(
                c: Comp,
                vr: *const u32,
                n: usize,
                _a: *mut u64,
                _b: *mut u64,
                _q: *mut c_int,
            ) -> c_int {
                fmi3::no_clocks::<M>(c, "fmi3GetIntervalFraction", vr, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetShiftDecimal(
                c: Comp,
                vr: *const u32,
                n: usize,
                s: *mut f64,
            ) -> c_int {
                fmi3::get_shift_decimal::<M>(c, vr, n, s)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetShiftFraction(
                c: Comp,
                vr: *const u32,
                n: usize,
                _a: *mut u64,
                _b: *mut u64,
            ) -> c_int {
                fmi3::no_clocks::<M>(c, "fmi3GetShiftFraction", vr, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetIntervalDecimal(
                c: Comp,
                vr: *const u32,
                n: usize,
                i: *const f64,
            ) -> c_int {
                fmi3::set_interval_decimal::<M>(c, vr, n, i)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetIntervalFraction(
                c: Comp,
                vr: *const u32,
                n: usize,
                _a: *const u64,
                _b: *const u64,
            ) -> c_int {
                fmi3::no_clocks::<M>(c, "fmi3SetIntervalFraction", vr, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetShiftDecimal(
                c: Comp,
                vr: *const u32,
                n: usize,
                _s: *const f64,
            ) -> c_int {
                fmi3::no_clocks::<M>(c, "fmi3SetShiftDecimal", vr, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetShiftFraction(
                c: Comp,
                vr: *const u32,
                n: usize,
                _a: *const u64,
                _b: *const u64,
            ) -> c_int {
                fmi3::no_clocks::<M>(c, "fmi3SetShiftFraction", vr, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3EvaluateDiscreteStates(c: Comp) -> c_int {
                fmi3::unsupported::<M>(
                    c,
                    "fmi3EvaluateDiscreteStates",
                    "not provided (providesEvaluateDiscreteStates = false)",
                )
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3UpdateDiscreteStates(
                c: Comp,
                a: *mut bool,
                b: *mut bool,
                d: *mut bool,
                e: *mut bool,
                f: *mut bool,
                t: *mut f64,
            ) -> c_int {
                fmi3::update_discrete_states::<M>(c, a, b, d, e, f, t)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3EnterStepMode(c: Comp) -> c_int {
                fmi3::enter_step_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetOutputDerivatives(
                c: Comp,
                vr: *const u32,
                n: usize,
                o: *const i32,
                v: *mut f64,
                nv: usize,
            ) -> c_int {
                fmi3::get_output_derivatives::<M>(c, vr, n, o, v, nv)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3DoStep(
                c: Comp,
                t: f64,
                h: f64,
                nsp: bool,
                ehn: *mut bool,
                term: *mut bool,
                early: *mut bool,
                lst: *mut f64,
            ) -> c_int {
                fmi3::do_step::<M>(c, t, h, nsp, ehn, term, early, lst)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3ActivateModelPartition(
                c: Comp,
                clock: u32,
                t: f64,
            ) -> c_int {
                fmi3::activate_model_partition::<M>(c, clock, t)
            }
            // Model Exchange (an error unless the model opted in: `Model::MODEL_EXCHANGE`).
            #[no_mangle]
            pub unsafe extern "C" fn fmi3EnterContinuousTimeMode(c: Comp) -> c_int {
                fmi3::enter_continuous_time_mode::<M>(c)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3CompletedIntegratorStep(
                c: Comp,
                nsp: bool,
                e: *mut bool,
                t: *mut bool,
            ) -> c_int {
                fmi3::completed_integrator_step::<M>(c, nsp, e, t)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetTime(c: Comp, t: f64) -> c_int {
                fmi3::set_time::<M>(c, t)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3SetContinuousStates(
                c: Comp,
                x: *const f64,
                n: usize,
            ) -> c_int {
                fmi3::set_continuous_states::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetContinuousStateDerivatives(
                c: Comp,
                x: *mut f64,
                n: usize,
            ) -> c_int {
                fmi3::get_continuous_state_derivatives::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetEventIndicators(
                c: Comp,
                x: *mut f64,
                n: usize,
            ) -> c_int {
                fmi3::get_event_indicators::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetContinuousStates(
                c: Comp,
                x: *mut f64,
                n: usize,
            ) -> c_int {
                fmi3::get_continuous_states::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetNominalsOfContinuousStates(
                c: Comp,
                x: *mut f64,
                n: usize,
            ) -> c_int {
                fmi3::get_nominals_of_continuous_states::<M>(c, x, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetNumberOfEventIndicators(
                c: Comp,
                n: *mut usize,
            ) -> c_int {
                fmi3::get_number_of_event_indicators::<M>(c, n)
            }
            #[no_mangle]
            pub unsafe extern "C" fn fmi3GetNumberOfContinuousStates(
                c: Comp,
                n: *mut usize,
            ) -> c_int {
                fmi3::get_number_of_continuous_states::<M>(c, n)
            }
        }
        pub use __fmu_kit_exports::*;
    };
}

/// Emits the typed FMI 3 getters and setters (internal to `export_fmu!`).
#[doc(hidden)]
#[macro_export]
macro_rules! __fmi3_getset {
    ($($get:ident $set:ident $g:ident $s:ident $t:ty;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $get(c: *mut ::std::ffi::c_void, vr: *const u32, n: usize, v: *mut $t, nv: usize) -> ::std::ffi::c_int { $crate::fmi3::$g::<M>(c, vr, n, v, nv) }
        #[no_mangle]
        pub unsafe extern "C" fn $set(c: *mut ::std::ffi::c_void, vr: *const u32, n: usize, v: *const $t, nv: usize) -> ::std::ffi::c_int { $crate::fmi3::$s::<M>(c, vr, n, v, nv) }
    )*};
}
