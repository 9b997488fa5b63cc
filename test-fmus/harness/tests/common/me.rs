//! FMI 2.0 and FMI 3.0 Model Exchange, declared by hand from `fmi2FunctionTypes.h` and
//! `fmi3FunctionTypes.h`, behind one version-neutral [`Me`] instance. Every method returns the
//! raw status (the tests check misuse too); [`Me::ok`] turns one into a `Result` quoting the log.

use std::ffi::{c_int, c_void, CString};
use std::os::raw::c_char;

use super::{expect_ok, fmi2, fmi3, Extracted, LogSink};

/// `fmi2EventInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct EventInfo2 {
    /// `newDiscreteStatesNeeded`.
    pub new_discrete_states_needed: c_int,
    /// `terminateSimulation`.
    pub terminate_simulation: c_int,
    /// `nominalsOfContinuousStatesChanged`.
    pub nominals_changed: c_int,
    /// `valuesOfContinuousStatesChanged`.
    pub values_changed: c_int,
    /// `nextEventTimeDefined`.
    pub next_event_time_defined: c_int,
    /// `nextEventTime`.
    pub next_event_time: f64,
}

type C = *mut c_void;

macro_rules! api {
    ($name:ident, $what:literal; $($field:ident: $symbol:literal => fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        #[doc = $what]
        pub struct $name {
            $(
                #[doc = $symbol]
                pub $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,
            )*
            _library: libloading::Library,
        }

        impl $name {
            /// Resolve every function from `library` (a missing one is an error naming it).
            pub fn new(library: libloading::Library) -> Result<Self, String> {
                $(
                    // SAFETY: the type is the one of the standard header for this symbol.
                    let $field = unsafe {
                        *library
                            .get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                                concat!($symbol, "\0").as_bytes(),
                            )
                            .map_err(|e| format!("missing function {}: {e}", $symbol))?
                    };
                )*
                Ok($name { $($field,)* _library: library })
            }
        }
    };
}

api! {
    Api2, "The FMI 2 Model Exchange functions (and the common ones the tests use).";
    instantiate: "fmi2Instantiate" => fn(*const c_char, c_int, *const c_char, *const c_char, *const fmi2::CallbackFunctions, c_int, c_int) -> C;
    free_instance: "fmi2FreeInstance" => fn(C);
    setup_experiment: "fmi2SetupExperiment" => fn(C, c_int, f64, f64, c_int, f64) -> c_int;
    enter_initialization_mode: "fmi2EnterInitializationMode" => fn(C) -> c_int;
    exit_initialization_mode: "fmi2ExitInitializationMode" => fn(C) -> c_int;
    terminate: "fmi2Terminate" => fn(C) -> c_int;
    get_real: "fmi2GetReal" => fn(C, *const u32, usize, *mut f64) -> c_int;
    set_real: "fmi2SetReal" => fn(C, *const u32, usize, *const f64) -> c_int;
    get_integer: "fmi2GetInteger" => fn(C, *const u32, usize, *mut c_int) -> c_int;
    get_fmu_state: "fmi2GetFMUstate" => fn(C, *mut C) -> c_int;
    set_fmu_state: "fmi2SetFMUstate" => fn(C, C) -> c_int;
    free_fmu_state: "fmi2FreeFMUstate" => fn(C, *mut C) -> c_int;
    get_directional_derivative: "fmi2GetDirectionalDerivative" => fn(C, *const u32, usize, *const u32, usize, *const f64, *mut f64) -> c_int;
    do_step: "fmi2DoStep" => fn(C, f64, f64, c_int) -> c_int;
    enter_event_mode: "fmi2EnterEventMode" => fn(C) -> c_int;
    new_discrete_states: "fmi2NewDiscreteStates" => fn(C, *mut EventInfo2) -> c_int;
    enter_continuous_time_mode: "fmi2EnterContinuousTimeMode" => fn(C) -> c_int;
    completed_integrator_step: "fmi2CompletedIntegratorStep" => fn(C, c_int, *mut c_int, *mut c_int) -> c_int;
    set_time: "fmi2SetTime" => fn(C, f64) -> c_int;
    set_continuous_states: "fmi2SetContinuousStates" => fn(C, *const f64, usize) -> c_int;
    get_derivatives: "fmi2GetDerivatives" => fn(C, *mut f64, usize) -> c_int;
    get_event_indicators: "fmi2GetEventIndicators" => fn(C, *mut f64, usize) -> c_int;
    get_continuous_states: "fmi2GetContinuousStates" => fn(C, *mut f64, usize) -> c_int;
    get_nominals: "fmi2GetNominalsOfContinuousStates" => fn(C, *mut f64, usize) -> c_int;
}

api! {
    Api3, "The FMI 3 Model Exchange functions (and the common ones the tests use).";
    instantiate: "fmi3InstantiateModelExchange" => fn(*const c_char, *const c_char, *const c_char, bool, bool, *mut c_void, Option<fmi3::LogMessage>) -> C;
    free_instance: "fmi3FreeInstance" => fn(C);
    enter_initialization_mode: "fmi3EnterInitializationMode" => fn(C, bool, f64, f64, bool, f64) -> c_int;
    exit_initialization_mode: "fmi3ExitInitializationMode" => fn(C) -> c_int;
    terminate: "fmi3Terminate" => fn(C) -> c_int;
    get_float64: "fmi3GetFloat64" => fn(C, *const u32, usize, *mut f64, usize) -> c_int;
    set_float64: "fmi3SetFloat64" => fn(C, *const u32, usize, *const f64, usize) -> c_int;
    get_int32: "fmi3GetInt32" => fn(C, *const u32, usize, *mut i32, usize) -> c_int;
    get_fmu_state: "fmi3GetFMUState" => fn(C, *mut C) -> c_int;
    set_fmu_state: "fmi3SetFMUState" => fn(C, C) -> c_int;
    free_fmu_state: "fmi3FreeFMUState" => fn(C, *mut C) -> c_int;
    get_directional_derivative: "fmi3GetDirectionalDerivative" => fn(C, *const u32, usize, *const u32, usize, *const f64, usize, *mut f64, usize) -> c_int;
    do_step: "fmi3DoStep" => fn(C, f64, f64, bool, *mut bool, *mut bool, *mut bool, *mut f64) -> c_int;
    enter_event_mode: "fmi3EnterEventMode" => fn(C) -> c_int;
    update_discrete_states: "fmi3UpdateDiscreteStates" => fn(C, *mut bool, *mut bool, *mut bool, *mut bool, *mut bool, *mut f64) -> c_int;
    enter_continuous_time_mode: "fmi3EnterContinuousTimeMode" => fn(C) -> c_int;
    completed_integrator_step: "fmi3CompletedIntegratorStep" => fn(C, bool, *mut bool, *mut bool) -> c_int;
    set_time: "fmi3SetTime" => fn(C, f64) -> c_int;
    set_continuous_states: "fmi3SetContinuousStates" => fn(C, *const f64, usize) -> c_int;
    get_derivatives: "fmi3GetContinuousStateDerivatives" => fn(C, *mut f64, usize) -> c_int;
    get_event_indicators: "fmi3GetEventIndicators" => fn(C, *mut f64, usize) -> c_int;
    get_continuous_states: "fmi3GetContinuousStates" => fn(C, *mut f64, usize) -> c_int;
    get_nominals: "fmi3GetNominalsOfContinuousStates" => fn(C, *mut f64, usize) -> c_int;
    get_number_of_event_indicators: "fmi3GetNumberOfEventIndicators" => fn(C, *mut usize) -> c_int;
    get_number_of_continuous_states: "fmi3GetNumberOfContinuousStates" => fn(C, *mut usize) -> c_int;
}

/// The functions of one version.
pub enum Api {
    /// FMI 2.0.
    V2(Api2),
    /// FMI 3.0.
    V3(Api3),
}

impl Api {
    /// Load the Model Exchange binary of an extracted FMU.
    pub fn load(fmu: &Extracted) -> Result<Api, String> {
        let lib = super::load_library(&fmu.me_binary()?)?;
        match fmu.md.fmi_version {
            2 => Ok(Api::V2(Api2::new(lib)?)),
            _ => Ok(Api::V3(Api3::new(lib)?)),
        }
    }
}

/// What an event iteration reported.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Update {
    /// newDiscreteStatesNeeded / discreteStatesNeedUpdate.
    pub need_update: bool,
    /// terminateSimulation.
    pub terminate: bool,
    /// valuesOfContinuousStatesChanged.
    pub values_changed: bool,
    /// nextEventTime when defined.
    pub next_time: Option<f64>,
}

/// One Model Exchange instance; freed on drop.
pub struct Me<'a> {
    /// The functions.
    pub api: &'a Api,
    /// The instance.
    pub c: C,
    /// Its log.
    pub log: Box<LogSink>,
    _callbacks: Box<fmi2::CallbackFunctions>,
    /// Number of continuous states.
    pub nx: usize,
    /// Number of event indicators.
    pub nz: usize,
}

extern "C" {
    fn calloc(nobj: usize, size: usize) -> *mut c_void;
    fn free(obj: *mut c_void);
}

impl<'a> Me<'a> {
    /// Instantiate for Model Exchange (logging on) with `nx` states and `nz` indicators.
    pub fn new(api: &'a Api, fmu: &Extracted, nx: usize, nz: usize) -> Result<Self, String> {
        let log = Box::<LogSink>::default();
        let callbacks = Box::new(fmi2::CallbackFunctions {
            logger: Some(fmi2::logger),
            allocate_memory: Some(calloc),
            free_memory: Some(free),
            step_finished: None,
            component_environment: log.env(),
        });
        let name = CString::new("me").expect("name");
        let token = CString::new(fmu.md.token.as_str()).expect("token");
        // SAFETY: valid C strings; the callbacks and the log outlive the instance.
        let c = unsafe {
            match api {
                Api::V2(a) => {
                    let uri = CString::new(fmi2::file_uri(&fmu.resources())).expect("uri");
                    (a.instantiate)(
                        name.as_ptr(),
                        fmi2::MODEL_EXCHANGE,
                        token.as_ptr(),
                        uri.as_ptr(),
                        &*callbacks,
                        0,
                        1,
                    )
                }
                Api::V3(a) => {
                    let mut res = fmu.resources().to_string_lossy().into_owned();
                    res.push('/');
                    let res = CString::new(res).expect("resource path");
                    (a.instantiate)(
                        name.as_ptr(),
                        token.as_ptr(),
                        res.as_ptr(),
                        false,
                        true,
                        log.env(),
                        Some(fmi3::log_message),
                    )
                }
            }
        };
        if c.is_null() {
            return Err(format!(
                "Model Exchange instantiation returned NULL; log:\n{}",
                log.since(0)
            ));
        }
        Ok(Me {
            api,
            c,
            log,
            _callbacks: callbacks,
            nx,
            nz,
        })
    }

    /// `status` as a `Result` naming `call` and quoting the log since `from`.
    pub fn ok(&self, status: c_int, call: &str, from: usize) -> Result<(), String> {
        expect_ok(status, call, &self.log, from)
    }

    /// Initialization at `t0`: set-up (FMI 2), enter and exit Initialization Mode.
    pub fn initialize(&self, t0: f64) -> Result<(), String> {
        // SAFETY: live instance.
        unsafe {
            match self.api {
                Api::V2(a) => {
                    self.ok(
                        (a.setup_experiment)(self.c, 0, 0.0, t0, 0, 0.0),
                        "fmi2SetupExperiment",
                        0,
                    )?;
                    self.ok(
                        (a.enter_initialization_mode)(self.c),
                        "fmi2EnterInitializationMode",
                        0,
                    )?;
                    self.ok(
                        (a.exit_initialization_mode)(self.c),
                        "fmi2ExitInitializationMode",
                        0,
                    )
                }
                Api::V3(a) => {
                    self.ok(
                        (a.enter_initialization_mode)(self.c, false, 0.0, t0, false, 0.0),
                        "fmi3EnterInitializationMode",
                        0,
                    )?;
                    self.ok(
                        (a.exit_initialization_mode)(self.c),
                        "fmi3ExitInitializationMode",
                        0,
                    )
                }
            }
        }
    }

    /// Set the time.
    pub fn set_time(&self, t: f64) -> c_int {
        // SAFETY: live instance.
        unsafe {
            match self.api {
                Api::V2(a) => (a.set_time)(self.c, t),
                Api::V3(a) => (a.set_time)(self.c, t),
            }
        }
    }

    /// Set the continuous states.
    pub fn set_states(&self, x: &[f64]) -> c_int {
        // SAFETY: an array of x.len() elements.
        unsafe {
            match self.api {
                Api::V2(a) => (a.set_continuous_states)(self.c, x.as_ptr(), x.len()),
                Api::V3(a) => (a.set_continuous_states)(self.c, x.as_ptr(), x.len()),
            }
        }
    }

    fn vector(
        &self,
        f2: impl Fn(&Api2) -> unsafe extern "C" fn(C, *mut f64, usize) -> c_int,
        f3: impl Fn(&Api3) -> unsafe extern "C" fn(C, *mut f64, usize) -> c_int,
        n: usize,
    ) -> (c_int, Vec<f64>) {
        let mut out = vec![f64::NAN; n];
        // SAFETY: an array of n writable elements.
        let status = unsafe {
            match self.api {
                Api::V2(a) => f2(a)(self.c, out.as_mut_ptr(), n),
                Api::V3(a) => f3(a)(self.c, out.as_mut_ptr(), n),
            }
        };
        (status, out)
    }

    /// The continuous states.
    pub fn states(&self) -> (c_int, Vec<f64>) {
        self.vector(
            |a| a.get_continuous_states,
            |a| a.get_continuous_states,
            self.nx,
        )
    }

    /// The state derivatives.
    pub fn derivatives(&self) -> (c_int, Vec<f64>) {
        self.vector(|a| a.get_derivatives, |a| a.get_derivatives, self.nx)
    }

    /// The event indicators.
    pub fn indicators(&self) -> (c_int, Vec<f64>) {
        self.vector(
            |a| a.get_event_indicators,
            |a| a.get_event_indicators,
            self.nz,
        )
    }

    /// The nominals of the continuous states.
    pub fn nominals(&self) -> (c_int, Vec<f64>) {
        self.vector(|a| a.get_nominals, |a| a.get_nominals, self.nx)
    }

    /// Checked: the derivatives at time `t` and states `x` (in Continuous-Time Mode).
    pub fn rhs(&self, t: f64, x: &[f64]) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        self.ok(self.set_time(t), "SetTime", from)?;
        self.ok(self.set_states(x), "SetContinuousStates", from)?;
        let (st, dx) = self.derivatives();
        self.ok(st, "GetDerivatives", from)?;
        Ok(dx)
    }

    /// Checked: the event indicators at the current values.
    pub fn z(&self) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let (st, z) = self.indicators();
        self.ok(st, "GetEventIndicators", from)?;
        Ok(z)
    }

    /// `fmi*EnterEventMode`.
    pub fn enter_event_mode(&self) -> c_int {
        // SAFETY: live instance.
        unsafe {
            match self.api {
                Api::V2(a) => (a.enter_event_mode)(self.c),
                Api::V3(a) => (a.enter_event_mode)(self.c),
            }
        }
    }

    /// `fmi*EnterContinuousTimeMode`.
    pub fn enter_continuous_time_mode(&self) -> c_int {
        // SAFETY: live instance.
        unsafe {
            match self.api {
                Api::V2(a) => (a.enter_continuous_time_mode)(self.c),
                Api::V3(a) => (a.enter_continuous_time_mode)(self.c),
            }
        }
    }

    /// One event iteration.
    pub fn update(&self) -> (c_int, Update) {
        // SAFETY: live instance, writable out-arguments.
        unsafe {
            match self.api {
                Api::V2(a) => {
                    let mut e = EventInfo2::default();
                    let st = (a.new_discrete_states)(self.c, &mut e);
                    let next = (e.next_event_time_defined != 0).then_some(e.next_event_time);
                    (
                        st,
                        Update {
                            need_update: e.new_discrete_states_needed != 0,
                            terminate: e.terminate_simulation != 0,
                            values_changed: e.values_changed != 0,
                            next_time: next,
                        },
                    )
                }
                Api::V3(a) => {
                    let (mut need, mut term, mut nom, mut vals, mut def) =
                        (false, false, false, false, false);
                    let mut next = f64::NAN;
                    let st = (a.update_discrete_states)(
                        self.c, &mut need, &mut term, &mut nom, &mut vals, &mut def, &mut next,
                    );
                    (
                        st,
                        Update {
                            need_update: need,
                            terminate: term,
                            values_changed: vals,
                            next_time: def.then_some(next),
                        },
                    )
                }
            }
        }
    }

    /// Checked: event iteration until no update is needed (at most 100 iterations).
    pub fn iterate(&self) -> Result<Update, String> {
        let from = self.log.len();
        let mut changed = false;
        for _ in 0..100 {
            let (st, u) = self.update();
            self.ok(st, "event iteration", from)?;
            changed |= u.values_changed;
            if !u.need_update || u.terminate {
                return Ok(Update {
                    values_changed: changed,
                    ..u
                });
            }
        }
        Err("event iteration does not settle in 100 iterations".into())
    }

    /// `fmi*CompletedIntegratorStep` → (status, enterEventMode, terminateSimulation).
    pub fn completed_step(&self) -> (c_int, bool, bool) {
        // SAFETY: live instance, writable out-arguments.
        unsafe {
            match self.api {
                Api::V2(a) => {
                    let (mut e, mut t) = (-1, -1);
                    let st = (a.completed_integrator_step)(self.c, 1, &mut e, &mut t);
                    (st, e != 0, t != 0)
                }
                Api::V3(a) => {
                    let (mut e, mut t) = (true, true);
                    let st = (a.completed_integrator_step)(self.c, true, &mut e, &mut t);
                    (st, e, t)
                }
            }
        }
    }

    /// Get scalar Float64 values.
    pub fn get_f64(&self, vrs: &[u32]) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let mut out = vec![f64::NAN; vrs.len()];
        // SAFETY: arrays of vrs.len() elements.
        let st = unsafe {
            match self.api {
                Api::V2(a) => (a.get_real)(self.c, vrs.as_ptr(), vrs.len(), out.as_mut_ptr()),
                Api::V3(a) => {
                    (a.get_float64)(self.c, vrs.as_ptr(), vrs.len(), out.as_mut_ptr(), out.len())
                }
            }
        };
        self.ok(st, &format!("get Float64 {vrs:?}"), from)?;
        Ok(out)
    }

    /// Set scalar Float64 values (raw status).
    pub fn set_f64(&self, vrs: &[u32], values: &[f64]) -> c_int {
        // SAFETY: arrays of vrs.len() elements.
        unsafe {
            match self.api {
                Api::V2(a) => (a.set_real)(self.c, vrs.as_ptr(), vrs.len(), values.as_ptr()),
                Api::V3(a) => (a.set_float64)(
                    self.c,
                    vrs.as_ptr(),
                    vrs.len(),
                    values.as_ptr(),
                    values.len(),
                ),
            }
        }
    }

    /// Get scalar Int32 values.
    pub fn get_i32(&self, vrs: &[u32]) -> Result<Vec<i32>, String> {
        let from = self.log.len();
        let mut out = vec![0; vrs.len()];
        // SAFETY: arrays of vrs.len() elements.
        let st = unsafe {
            match self.api {
                Api::V2(a) => (a.get_integer)(self.c, vrs.as_ptr(), vrs.len(), out.as_mut_ptr()),
                Api::V3(a) => {
                    (a.get_int32)(self.c, vrs.as_ptr(), vrs.len(), out.as_mut_ptr(), out.len())
                }
            }
        };
        self.ok(st, &format!("get Int32 {vrs:?}"), from)?;
        Ok(out)
    }

    /// d unknowns / d knowns · seed.
    pub fn directional_derivative(
        &self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
    ) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let mut out = vec![f64::NAN; unknowns.len()];
        // SAFETY: arrays of the stated lengths.
        let st = unsafe {
            match self.api {
                Api::V2(a) => (a.get_directional_derivative)(
                    self.c,
                    unknowns.as_ptr(),
                    unknowns.len(),
                    knowns.as_ptr(),
                    knowns.len(),
                    seed.as_ptr(),
                    out.as_mut_ptr(),
                ),
                Api::V3(a) => (a.get_directional_derivative)(
                    self.c,
                    unknowns.as_ptr(),
                    unknowns.len(),
                    knowns.as_ptr(),
                    knowns.len(),
                    seed.as_ptr(),
                    seed.len(),
                    out.as_mut_ptr(),
                    out.len(),
                ),
            }
        };
        self.ok(st, "GetDirectionalDerivative", from)?;
        Ok(out)
    }

    /// Checked: a new FMU state.
    pub fn get_state(&self) -> Result<C, String> {
        let from = self.log.len();
        let mut s: C = std::ptr::null_mut();
        // SAFETY: out-pointer to NULL.
        let st = unsafe {
            match self.api {
                Api::V2(a) => (a.get_fmu_state)(self.c, &mut s),
                Api::V3(a) => (a.get_fmu_state)(self.c, &mut s),
            }
        };
        self.ok(st, "GetFMUState", from)?;
        Ok(s)
    }

    /// Checked: restore an FMU state.
    pub fn set_state(&self, s: C) -> Result<(), String> {
        let from = self.log.len();
        // SAFETY: a state of this FMU.
        let st = unsafe {
            match self.api {
                Api::V2(a) => (a.set_fmu_state)(self.c, s),
                Api::V3(a) => (a.set_fmu_state)(self.c, s),
            }
        };
        self.ok(st, "SetFMUState", from)
    }

    /// Checked: free an FMU state.
    pub fn free_state(&self, mut s: C) -> Result<(), String> {
        let from = self.log.len();
        // SAFETY: a state of this FMU.
        let st = unsafe {
            match self.api {
                Api::V2(a) => (a.free_fmu_state)(self.c, &mut s),
                Api::V3(a) => (a.free_fmu_state)(self.c, &mut s),
            }
        };
        self.ok(st, "FreeFMUState", from)
    }

    /// A Co-Simulation step on this Model Exchange instance (must be refused).
    pub fn do_step(&self, t: f64, h: f64) -> c_int {
        // SAFETY: live instance, writable out-arguments.
        unsafe {
            match self.api {
                Api::V2(a) => (a.do_step)(self.c, t, h, 0),
                Api::V3(a) => {
                    let (mut e, mut te, mut er) = (false, false, false);
                    let mut last = 0.0;
                    (a.do_step)(self.c, t, h, false, &mut e, &mut te, &mut er, &mut last)
                }
            }
        }
    }

    /// FMI 3 `fmi3GetNumberOfContinuousStates` / `...EventIndicators` (FMI 2: the sizes given).
    pub fn sizes(&self) -> Result<(usize, usize), String> {
        match self.api {
            Api::V2(_) => Ok((self.nx, self.nz)),
            Api::V3(a) => {
                let from = self.log.len();
                let (mut nx, mut nz) = (usize::MAX, usize::MAX);
                // SAFETY: live instance, writable out-arguments.
                unsafe {
                    self.ok(
                        (a.get_number_of_continuous_states)(self.c, &mut nx),
                        "fmi3GetNumberOfContinuousStates",
                        from,
                    )?;
                    self.ok(
                        (a.get_number_of_event_indicators)(self.c, &mut nz),
                        "fmi3GetNumberOfEventIndicators",
                        from,
                    )?;
                }
                Ok((nx, nz))
            }
        }
    }

    /// `fmi*Terminate`.
    pub fn terminate(&self) -> c_int {
        // SAFETY: live instance.
        unsafe {
            match self.api {
                Api::V2(a) => (a.terminate)(self.c),
                Api::V3(a) => (a.terminate)(self.c),
            }
        }
    }
}

impl Drop for Me<'_> {
    fn drop(&mut self) {
        // SAFETY: live instance, freed once.
        unsafe {
            match self.api {
                Api::V2(a) => (a.free_instance)(self.c),
                Api::V3(a) => (a.free_instance)(self.c),
            }
        }
    }
}
