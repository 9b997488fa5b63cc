//! FMI 3.0 Co-Simulation, declared by hand from `fmi3FunctionTypes.h` / `fmi3PlatformTypes.h`.

use std::ffi::{c_void, CString};
use std::os::raw::c_char;

use super::{Extracted, LogSink};

/// `fmi3Instance`.
pub type Instance3 = *mut c_void;
/// `fmi3FMUState`.
pub type FmuState = *mut c_void;
/// `fmi3Status` (a C enum).
pub type Status = i32;
/// `fmi3ValueReference`.
pub type ValueReference = u32;

/// `fmi3LogMessageCallback`.
pub type LogMessage = unsafe extern "C" fn(
    env: *mut c_void,
    status: Status,
    category: *const c_char,
    message: *const c_char,
);

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

/// The log callback handed to every instance: records into the [`LogSink`] at `env`.
///
/// # Safety
/// Called by the FMU with `env` the address of a live `LogSink` and C strings (or NULL).
pub unsafe extern "C" fn log_message(
    env: *mut c_void,
    status: Status,
    category: *const c_char,
    message: *const c_char,
) {
    if let Some(sink) = (env as *const LogSink).as_ref() {
        sink.record(status, category, message);
    }
}

macro_rules! api {
    ($($field:ident: $symbol:literal => fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The FMI 3 functions the harness uses, resolved from one loaded binary.
        pub struct Api {
            $(
                #[doc = $symbol]
                pub $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,
            )*
            _library: libloading::Library,
        }

        impl Api {
            /// Resolve every function from `library` (a missing one is an error naming it).
            pub fn new(library: libloading::Library) -> Result<Self, String> {
                $(
                    // SAFETY: the type is the one of the standard header for this symbol.
                    let $field = unsafe {
                        *library
                            .get::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                                concat!($symbol, "\0").as_bytes(),
                            )
                            .map_err(|e| format!("missing FMI 3 function {}: {e}", $symbol))?
                    };
                )*
                Ok(Api { $($field,)* _library: library })
            }
        }
    };
}

type Vr = *const ValueReference;

api! {
    get_version: "fmi3GetVersion" => fn() -> *const c_char;
    set_debug_logging: "fmi3SetDebugLogging" => fn(Instance3, bool, usize, *const *const c_char) -> Status;
    instantiate_co_simulation: "fmi3InstantiateCoSimulation" => fn(*const c_char, *const c_char, *const c_char, bool, bool, bool, bool, Vr, usize, *mut c_void, Option<LogMessage>, Option<IntermediateUpdate>) -> Instance3;
    free_instance: "fmi3FreeInstance" => fn(Instance3);
    enter_initialization_mode: "fmi3EnterInitializationMode" => fn(Instance3, bool, f64, f64, bool, f64) -> Status;
    exit_initialization_mode: "fmi3ExitInitializationMode" => fn(Instance3) -> Status;
    enter_configuration_mode: "fmi3EnterConfigurationMode" => fn(Instance3) -> Status;
    exit_configuration_mode: "fmi3ExitConfigurationMode" => fn(Instance3) -> Status;
    enter_event_mode: "fmi3EnterEventMode" => fn(Instance3) -> Status;
    terminate: "fmi3Terminate" => fn(Instance3) -> Status;
    reset: "fmi3Reset" => fn(Instance3) -> Status;
    get_float32: "fmi3GetFloat32" => fn(Instance3, Vr, usize, *mut f32, usize) -> Status;
    get_float64: "fmi3GetFloat64" => fn(Instance3, Vr, usize, *mut f64, usize) -> Status;
    get_int8: "fmi3GetInt8" => fn(Instance3, Vr, usize, *mut i8, usize) -> Status;
    get_uint8: "fmi3GetUInt8" => fn(Instance3, Vr, usize, *mut u8, usize) -> Status;
    get_int16: "fmi3GetInt16" => fn(Instance3, Vr, usize, *mut i16, usize) -> Status;
    get_uint16: "fmi3GetUInt16" => fn(Instance3, Vr, usize, *mut u16, usize) -> Status;
    get_int32: "fmi3GetInt32" => fn(Instance3, Vr, usize, *mut i32, usize) -> Status;
    get_uint32: "fmi3GetUInt32" => fn(Instance3, Vr, usize, *mut u32, usize) -> Status;
    get_int64: "fmi3GetInt64" => fn(Instance3, Vr, usize, *mut i64, usize) -> Status;
    get_uint64: "fmi3GetUInt64" => fn(Instance3, Vr, usize, *mut u64, usize) -> Status;
    get_boolean: "fmi3GetBoolean" => fn(Instance3, Vr, usize, *mut bool, usize) -> Status;
    get_string: "fmi3GetString" => fn(Instance3, Vr, usize, *mut *const c_char, usize) -> Status;
    get_binary: "fmi3GetBinary" => fn(Instance3, Vr, usize, *mut usize, *mut *const u8, usize) -> Status;
    set_float32: "fmi3SetFloat32" => fn(Instance3, Vr, usize, *const f32, usize) -> Status;
    set_float64: "fmi3SetFloat64" => fn(Instance3, Vr, usize, *const f64, usize) -> Status;
    set_int8: "fmi3SetInt8" => fn(Instance3, Vr, usize, *const i8, usize) -> Status;
    set_uint8: "fmi3SetUInt8" => fn(Instance3, Vr, usize, *const u8, usize) -> Status;
    set_int16: "fmi3SetInt16" => fn(Instance3, Vr, usize, *const i16, usize) -> Status;
    set_uint16: "fmi3SetUInt16" => fn(Instance3, Vr, usize, *const u16, usize) -> Status;
    set_int32: "fmi3SetInt32" => fn(Instance3, Vr, usize, *const i32, usize) -> Status;
    set_uint32: "fmi3SetUInt32" => fn(Instance3, Vr, usize, *const u32, usize) -> Status;
    set_int64: "fmi3SetInt64" => fn(Instance3, Vr, usize, *const i64, usize) -> Status;
    set_uint64: "fmi3SetUInt64" => fn(Instance3, Vr, usize, *const u64, usize) -> Status;
    set_boolean: "fmi3SetBoolean" => fn(Instance3, Vr, usize, *const bool, usize) -> Status;
    set_string: "fmi3SetString" => fn(Instance3, Vr, usize, *const *const c_char, usize) -> Status;
    set_binary: "fmi3SetBinary" => fn(Instance3, Vr, usize, *const usize, *const *const u8, usize) -> Status;
    get_fmu_state: "fmi3GetFMUState" => fn(Instance3, *mut FmuState) -> Status;
    set_fmu_state: "fmi3SetFMUState" => fn(Instance3, FmuState) -> Status;
    free_fmu_state: "fmi3FreeFMUState" => fn(Instance3, *mut FmuState) -> Status;
    serialized_fmu_state_size: "fmi3SerializedFMUStateSize" => fn(Instance3, FmuState, *mut usize) -> Status;
    serialize_fmu_state: "fmi3SerializeFMUState" => fn(Instance3, FmuState, *mut u8, usize) -> Status;
    deserialize_fmu_state: "fmi3DeserializeFMUState" => fn(Instance3, *const u8, usize, *mut FmuState) -> Status;
    get_directional_derivative: "fmi3GetDirectionalDerivative" => fn(Instance3, Vr, usize, Vr, usize, *const f64, usize, *mut f64, usize) -> Status;
    enter_step_mode: "fmi3EnterStepMode" => fn(Instance3) -> Status;
    get_output_derivatives: "fmi3GetOutputDerivatives" => fn(Instance3, Vr, usize, *const i32, *mut f64, usize) -> Status;
    do_step: "fmi3DoStep" => fn(Instance3, f64, f64, bool, *mut bool, *mut bool, *mut bool, *mut f64) -> Status;
}

impl Api {
    /// Load the Co-Simulation binary of an extracted FMI 3 FMU.
    pub fn load(fmu: &Extracted) -> Result<Api, String> {
        Api::new(super::load_library(&fmu.binary()?)?)
    }
}

/// The out-arguments of `fmi3DoStep`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepResult {
    /// `eventHandlingNeeded`.
    pub event_handling_needed: bool,
    /// `terminateSimulation`.
    pub terminate_simulation: bool,
    /// `earlyReturn`.
    pub early_return: bool,
    /// `lastSuccessfulTime`.
    pub last_successful_time: f64,
}

/// One FMI 3 instance; freed on drop unless [`Instance::free`] was called.
pub struct Instance<'a> {
    /// The functions.
    pub api: &'a Api,
    /// The instance.
    pub c: Instance3,
    /// Its log messages.
    pub log: Box<LogSink>,
    freed: bool,
}

impl<'a> Instance<'a> {
    /// `fmi3InstantiateCoSimulation` with the FMU's token and resource path, logging on, no
    /// event mode, no early return, no intermediate update callback.
    pub fn new(api: &'a Api, fmu: &Extracted, name: &str) -> Result<Self, String> {
        let mut resources = fmu.resources().to_string_lossy().into_owned();
        resources.push('/');
        Self::with(api, name, &fmu.md.token, &resources).map_err(|log| {
            format!(
                "fmi3InstantiateCoSimulation returned NULL; log:\n{}",
                log.since(0)
            )
        })
    }

    /// `fmi3InstantiateCoSimulation` with explicit token and resource path; on NULL returns what
    /// was logged.
    pub fn with(
        api: &'a Api,
        name: &str,
        token: &str,
        resource_path: &str,
    ) -> Result<Self, Box<LogSink>> {
        let log = Box::<LogSink>::default();
        let name = CString::new(name).expect("instance name");
        let token = CString::new(token).expect("token");
        let resources = CString::new(resource_path).expect("resource path");
        // SAFETY: valid C strings; the log outlives the instance (freed first).
        let c = unsafe {
            (api.instantiate_co_simulation)(
                name.as_ptr(),
                token.as_ptr(),
                resources.as_ptr(),
                false,
                true,
                false,
                false,
                std::ptr::null(),
                0,
                log.env(),
                Some(log_message),
                None,
            )
        };
        if c.is_null() {
            return Err(log);
        }
        Ok(Instance {
            api,
            c,
            log,
            freed: false,
        })
    }

    /// `fmi3SetDebugLogging(instance, on, 0, NULL)`.
    pub fn set_debug_logging(&self, on: bool) -> Status {
        // SAFETY: live instance; no categories.
        unsafe { (self.api.set_debug_logging)(self.c, on, 0, std::ptr::null()) }
    }

    /// `fmi3EnterInitializationMode` without tolerance and stop time.
    pub fn enter_initialization_mode(&self, start_time: f64) -> Status {
        // SAFETY: live instance.
        unsafe { (self.api.enter_initialization_mode)(self.c, false, 0.0, start_time, false, 0.0) }
    }

    /// `fmi3ExitInitializationMode`.
    pub fn exit_initialization_mode(&self) -> Status {
        // SAFETY: live instance.
        unsafe { (self.api.exit_initialization_mode)(self.c) }
    }

    /// `fmi3EnterConfigurationMode`.
    pub fn enter_configuration_mode(&self) -> Status {
        // SAFETY: live instance.
        unsafe { (self.api.enter_configuration_mode)(self.c) }
    }

    /// `fmi3ExitConfigurationMode`.
    pub fn exit_configuration_mode(&self) -> Status {
        // SAFETY: live instance.
        unsafe { (self.api.exit_configuration_mode)(self.c) }
    }

    /// `fmi3Terminate`.
    pub fn terminate(&self) -> Status {
        // SAFETY: live instance.
        unsafe { (self.api.terminate)(self.c) }
    }

    /// `fmi3GetFloat64` (nValues = values.len()).
    pub fn get_float64(&self, vrs: &[u32], values: &mut [f64]) -> Status {
        // SAFETY: arrays of the stated lengths.
        unsafe {
            (self.api.get_float64)(
                self.c,
                vrs.as_ptr(),
                vrs.len(),
                values.as_mut_ptr(),
                values.len(),
            )
        }
    }

    /// `fmi3SetFloat64` (nValues = values.len()).
    pub fn set_float64(&self, vrs: &[u32], values: &[f64]) -> Status {
        // SAFETY: arrays of the stated lengths.
        unsafe {
            (self.api.set_float64)(
                self.c,
                vrs.as_ptr(),
                vrs.len(),
                values.as_ptr(),
                values.len(),
            )
        }
    }

    /// `fmi3GetInt32` (nValues = values.len()).
    pub fn get_int32(&self, vrs: &[u32], values: &mut [i32]) -> Status {
        // SAFETY: arrays of the stated lengths.
        unsafe {
            (self.api.get_int32)(
                self.c,
                vrs.as_ptr(),
                vrs.len(),
                values.as_mut_ptr(),
                values.len(),
            )
        }
    }

    /// `fmi3SetInt32` (nValues = values.len()).
    pub fn set_int32(&self, vrs: &[u32], values: &[i32]) -> Status {
        // SAFETY: arrays of the stated lengths.
        unsafe {
            (self.api.set_int32)(
                self.c,
                vrs.as_ptr(),
                vrs.len(),
                values.as_ptr(),
                values.len(),
            )
        }
    }

    /// Read every element of `var` (any numeric or Boolean type) as raw bits, for exact
    /// comparison. Strings, Binaries, Clocks and arrays of unknown size return `None`.
    pub fn get_bits(&self, var: &super::md::Variable, n: usize) -> Option<(Status, Vec<u64>)> {
        let vr = [var.vr];
        macro_rules! read {
            ($f:ident, $t:ty, $bits:expr) => {{
                let mut values: Vec<$t> = vec![Default::default(); n];
                // SAFETY: one value reference, `n` values.
                let status =
                    unsafe { (self.api.$f)(self.c, vr.as_ptr(), 1, values.as_mut_ptr(), n) };
                #[allow(clippy::redundant_closure_call)]
                let bits = values.into_iter().map($bits).collect();
                Some((status, bits))
            }};
        }
        match var.ty.as_str() {
            "Float32" => read!(get_float32, f32, |v: f32| u64::from(v.to_bits())),
            "Float64" => read!(get_float64, f64, |v: f64| v.to_bits()),
            "Int8" => read!(get_int8, i8, |v: i8| v as u64),
            "UInt8" => read!(get_uint8, u8, |v: u8| u64::from(v)),
            "Int16" => read!(get_int16, i16, |v: i16| v as u64),
            "UInt16" => read!(get_uint16, u16, |v: u16| u64::from(v)),
            "Int32" => read!(get_int32, i32, |v: i32| v as u64),
            "UInt32" => read!(get_uint32, u32, |v: u32| u64::from(v)),
            "Int64" | "Enumeration" => read!(get_int64, i64, |v: i64| v as u64),
            "UInt64" => read!(get_uint64, u64, |v: u64| v),
            "Boolean" => read!(get_boolean, bool, |v: bool| u64::from(v)),
            _ => None,
        }
    }

    /// `fmi3DoStep` (never promising not to restore an earlier state).
    pub fn do_step(&self, t: f64, h: f64) -> (Status, StepResult) {
        let mut r = StepResult {
            last_successful_time: f64::NAN,
            ..StepResult::default()
        };
        // SAFETY: out-pointers to locals.
        let status = unsafe {
            (self.api.do_step)(
                self.c,
                t,
                h,
                false,
                &mut r.event_handling_needed,
                &mut r.terminate_simulation,
                &mut r.early_return,
                &mut r.last_successful_time,
            )
        };
        (status, r)
    }

    /// `fmi3GetFMUState` into a new state.
    pub fn get_fmu_state(&self) -> (Status, FmuState) {
        let mut state: FmuState = std::ptr::null_mut();
        // SAFETY: out-pointer to a NULL state, so the FMU allocates a new one.
        let status = unsafe { (self.api.get_fmu_state)(self.c, &mut state) };
        (status, state)
    }

    /// `fmi3SetFMUState`.
    pub fn set_fmu_state(&self, state: FmuState) -> Status {
        // SAFETY: `state` came from this FMU.
        unsafe { (self.api.set_fmu_state)(self.c, state) }
    }

    /// `fmi3FreeFMUState`.
    pub fn free_fmu_state(&self, state: &mut FmuState) -> Status {
        // SAFETY: `state` came from this FMU.
        unsafe { (self.api.free_fmu_state)(self.c, state) }
    }

    /// `fmi3SerializedFMUStateSize` then `fmi3SerializeFMUState`.
    pub fn serialize(&self, state: FmuState) -> Result<Vec<u8>, String> {
        let mut size = 0usize;
        let from = self.log.len();
        // SAFETY: `state` came from this FMU.
        let status = unsafe { (self.api.serialized_fmu_state_size)(self.c, state, &mut size) };
        super::expect_ok(status, "fmi3SerializedFMUStateSize", &self.log, from)?;
        let mut bytes = vec![0u8; size];
        // SAFETY: buffer of `size` bytes.
        let status =
            unsafe { (self.api.serialize_fmu_state)(self.c, state, bytes.as_mut_ptr(), size) };
        super::expect_ok(status, "fmi3SerializeFMUState", &self.log, from)?;
        Ok(bytes)
    }

    /// `fmi3DeserializeFMUState` into a new state.
    pub fn deserialize(&self, bytes: &[u8]) -> (Status, FmuState) {
        let mut state: FmuState = std::ptr::null_mut();
        // SAFETY: buffer of `bytes.len()` bytes; NULL out-state so the FMU allocates.
        let status = unsafe {
            (self.api.deserialize_fmu_state)(self.c, bytes.as_ptr(), bytes.len(), &mut state)
        };
        (status, state)
    }

    /// `fmi3GetDirectionalDerivative` (scalar unknowns and knowns).
    pub fn directional_derivative(
        &self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Status {
        // SAFETY: arrays of the stated lengths.
        unsafe {
            (self.api.get_directional_derivative)(
                self.c,
                unknowns.as_ptr(),
                unknowns.len(),
                knowns.as_ptr(),
                knowns.len(),
                seed.as_ptr(),
                seed.len(),
                sensitivity.as_mut_ptr(),
                sensitivity.len(),
            )
        }
    }

    /// `fmi3FreeInstance` (once).
    pub fn free(mut self) {
        self.free_now();
    }

    /// Leave the instance alone after it returned Fatal: FMI allows no further call, not even
    /// `fmi3FreeInstance`, so it is leaked with the callbacks and log it points to.
    pub fn abandon(self) {
        std::mem::forget(self);
    }

    fn free_now(&mut self) {
        if !self.freed {
            self.freed = true;
            // SAFETY: live instance, freed exactly once.
            unsafe { (self.api.free_instance)(self.c) };
        }
    }
}

impl Drop for Instance<'_> {
    fn drop(&mut self) {
        self.free_now();
    }
}
