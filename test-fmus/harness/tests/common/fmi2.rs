//! FMI 2.0 Co-Simulation, declared by hand from `fmi2FunctionTypes.h` / `fmi2TypesPlatform.h`.
//!
//! The logger: `fmi2CallbackLogger` is C-variadic (`..., fmi2String message, ...)`), and stable
//! Rust cannot define a C-variadic function. The harness passes [`logger`], declared with the
//! five fixed parameters plus one pointer-sized parameter. On x86_64 System V (the only platform
//! these FMUs are built for here: `binaries/linux64`) a variadic call passes its arguments
//! exactly like a non-variadic one: the fixed ones in rdi, rsi, edx, rcx, r8, the first integer /
//! pointer variadic argument in r9, plus a vector-register count in al that a callee without
//! `va_start` never reads. So the extra parameter *is* the first variadic argument when there is
//! one, and harmless garbage otherwise. The harness reads it only when the format string is
//! exactly `"%s"` (then printf's contract says the first variadic argument is a C string) and
//! records the formatted message; for any other format it records the raw format string, which is
//! enough to check that a message was logged.

use std::ffi::{c_void, CString};
use std::os::raw::{c_char, c_int, c_uint};

use super::{Extracted, LogSink};

/// `fmi2Component`.
pub type Component = *mut c_void;
/// `fmi2FMUstate`.
pub type FmuState = *mut c_void;
/// `fmi2Status` (a C enum).
pub type Status = c_int;
/// `fmi2Boolean`.
pub type Boolean = c_int;
/// `fmi2ValueReference`.
pub type ValueReference = c_uint;

/// `fmi2ModelExchange`.
pub const MODEL_EXCHANGE: c_int = 0;
/// `fmi2CoSimulation`.
pub const CO_SIMULATION: c_int = 1;

/// `fmi2CallbackLogger` with its first variadic argument read as a pointer (see the module
/// documentation).
pub type Logger = unsafe extern "C" fn(
    env: *mut c_void,
    instance_name: *const c_char,
    status: Status,
    category: *const c_char,
    message: *const c_char,
    first_variadic: *const c_char,
);

/// `fmi2CallbackFunctions`.
#[repr(C)]
pub struct CallbackFunctions {
    /// `logger`.
    pub logger: Option<Logger>,
    /// `allocateMemory`.
    pub allocate_memory: Option<unsafe extern "C" fn(usize, usize) -> *mut c_void>,
    /// `freeMemory`.
    pub free_memory: Option<unsafe extern "C" fn(*mut c_void)>,
    /// `stepFinished`.
    pub step_finished: Option<unsafe extern "C" fn(*mut c_void, Status)>,
    /// `componentEnvironment`.
    pub component_environment: *mut c_void,
}

extern "C" {
    fn calloc(nobj: usize, size: usize) -> *mut c_void;
    fn free(obj: *mut c_void);
}

/// The logger handed to every instance: records the message into the [`LogSink`] whose address
/// is the component environment. A `"%s"` message is replaced by its argument; any other format
/// string is recorded as it is.
///
/// # Safety
/// Called by the FMU with `env` the address of a live `LogSink`, C strings (or NULL) and, when
/// `message` is `"%s"`, a C string as first variadic argument (x86_64 System V only).
pub unsafe extern "C" fn logger(
    env: *mut c_void,
    _instance_name: *const c_char,
    status: Status,
    category: *const c_char,
    message: *const c_char,
    first_variadic: *const c_char,
) {
    let Some(sink) = (env as *const LogSink).as_ref() else {
        return;
    };
    let formatted = !message.is_null()
        && std::ffi::CStr::from_ptr(message).to_bytes() == b"%s"
        && !first_variadic.is_null();
    sink.record(
        status,
        category,
        if formatted { first_variadic } else { message },
    );
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
compile_error!("the FMI 2 logger of this harness relies on the x86_64 System V calling convention");

macro_rules! api {
    ($($field:ident: $symbol:literal => fn($($arg:ty),*) $(-> $ret:ty)?;)*) => {
        /// The FMI 2 functions the harness uses, resolved from one loaded binary.
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
                            .map_err(|e| format!("missing FMI 2 function {}: {e}", $symbol))?
                    };
                )*
                Ok(Api { $($field,)* _library: library })
            }
        }
    };
}

api! {
    get_types_platform: "fmi2GetTypesPlatform" => fn() -> *const c_char;
    get_version: "fmi2GetVersion" => fn() -> *const c_char;
    set_debug_logging: "fmi2SetDebugLogging" => fn(Component, Boolean, usize, *const *const c_char) -> Status;
    instantiate: "fmi2Instantiate" => fn(*const c_char, c_int, *const c_char, *const c_char, *const CallbackFunctions, Boolean, Boolean) -> Component;
    free_instance: "fmi2FreeInstance" => fn(Component);
    setup_experiment: "fmi2SetupExperiment" => fn(Component, Boolean, f64, f64, Boolean, f64) -> Status;
    enter_initialization_mode: "fmi2EnterInitializationMode" => fn(Component) -> Status;
    exit_initialization_mode: "fmi2ExitInitializationMode" => fn(Component) -> Status;
    terminate: "fmi2Terminate" => fn(Component) -> Status;
    reset: "fmi2Reset" => fn(Component) -> Status;
    get_real: "fmi2GetReal" => fn(Component, *const ValueReference, usize, *mut f64) -> Status;
    get_integer: "fmi2GetInteger" => fn(Component, *const ValueReference, usize, *mut c_int) -> Status;
    get_boolean: "fmi2GetBoolean" => fn(Component, *const ValueReference, usize, *mut Boolean) -> Status;
    get_string: "fmi2GetString" => fn(Component, *const ValueReference, usize, *mut *const c_char) -> Status;
    set_real: "fmi2SetReal" => fn(Component, *const ValueReference, usize, *const f64) -> Status;
    set_integer: "fmi2SetInteger" => fn(Component, *const ValueReference, usize, *const c_int) -> Status;
    set_boolean: "fmi2SetBoolean" => fn(Component, *const ValueReference, usize, *const Boolean) -> Status;
    set_string: "fmi2SetString" => fn(Component, *const ValueReference, usize, *const *const c_char) -> Status;
    get_fmu_state: "fmi2GetFMUstate" => fn(Component, *mut FmuState) -> Status;
    set_fmu_state: "fmi2SetFMUstate" => fn(Component, FmuState) -> Status;
    free_fmu_state: "fmi2FreeFMUstate" => fn(Component, *mut FmuState) -> Status;
    serialized_fmu_state_size: "fmi2SerializedFMUstateSize" => fn(Component, FmuState, *mut usize) -> Status;
    serialize_fmu_state: "fmi2SerializeFMUstate" => fn(Component, FmuState, *mut c_char, usize) -> Status;
    deserialize_fmu_state: "fmi2DeSerializeFMUstate" => fn(Component, *const c_char, usize, *mut FmuState) -> Status;
    get_directional_derivative: "fmi2GetDirectionalDerivative" => fn(Component, *const ValueReference, usize, *const ValueReference, usize, *const f64, *mut f64) -> Status;
    set_real_input_derivatives: "fmi2SetRealInputDerivatives" => fn(Component, *const ValueReference, usize, *const c_int, *const f64) -> Status;
    get_real_output_derivatives: "fmi2GetRealOutputDerivatives" => fn(Component, *const ValueReference, usize, *const c_int, *mut f64) -> Status;
    do_step: "fmi2DoStep" => fn(Component, f64, f64, Boolean) -> Status;
    cancel_step: "fmi2CancelStep" => fn(Component) -> Status;
    get_status: "fmi2GetStatus" => fn(Component, c_int, *mut Status) -> Status;
    get_real_status: "fmi2GetRealStatus" => fn(Component, c_int, *mut f64) -> Status;
    get_integer_status: "fmi2GetIntegerStatus" => fn(Component, c_int, *mut c_int) -> Status;
    get_boolean_status: "fmi2GetBooleanStatus" => fn(Component, c_int, *mut Boolean) -> Status;
    get_string_status: "fmi2GetStringStatus" => fn(Component, c_int, *mut *const c_char) -> Status;
}

impl Api {
    /// Load the Co-Simulation binary of an extracted FMI 2 FMU.
    pub fn load(fmu: &Extracted) -> Result<Api, String> {
        Api::new(super::load_library(&fmu.binary()?)?)
    }
}

/// The `file://` URI of a directory (FMI 2 `fmuResourceLocation`).
pub fn file_uri(path: &std::path::Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    if !uri.ends_with('/') {
        uri.push('/');
    }
    uri
}

/// One FMI 2 instance; freed on drop unless [`Instance::free`] was called.
pub struct Instance<'a> {
    /// The functions.
    pub api: &'a Api,
    /// The component.
    pub c: Component,
    /// Its log messages.
    pub log: Box<LogSink>,
    _callbacks: Box<CallbackFunctions>,
    freed: bool,
}

/// Arguments of `fmi2Instantiate` that tests vary.
pub struct InstantiateArgs<'s> {
    /// `instanceName`.
    pub name: &'s str,
    /// `fmuType`.
    pub fmu_type: c_int,
    /// `fmuGUID`.
    pub guid: &'s str,
    /// `fmuResourceLocation`.
    pub resource_uri: &'s str,
    /// `loggingOn`.
    pub logging_on: bool,
}

impl<'a> Instance<'a> {
    /// `fmi2Instantiate` as Co-Simulation with the FMU's own GUID and resource URI, logging on.
    pub fn new(api: &'a Api, fmu: &Extracted, name: &str) -> Result<Self, String> {
        let uri = file_uri(&fmu.resources());
        Self::with(
            api,
            &InstantiateArgs {
                name,
                fmu_type: CO_SIMULATION,
                guid: &fmu.md.token,
                resource_uri: &uri,
                logging_on: true,
            },
        )
        .map_err(|log| format!("fmi2Instantiate returned NULL; log:\n{}", log.since(0)))
    }

    /// `fmi2Instantiate` with explicit arguments; on NULL returns what was logged.
    pub fn with(api: &'a Api, args: &InstantiateArgs) -> Result<Self, Box<LogSink>> {
        let log = Box::<LogSink>::default();
        let callbacks = Box::new(CallbackFunctions {
            logger: Some(logger),
            allocate_memory: Some(calloc),
            free_memory: Some(free),
            step_finished: None,
            component_environment: log.env(),
        });
        let name = CString::new(args.name).expect("instance name");
        let guid = CString::new(args.guid).expect("guid");
        let uri = CString::new(args.resource_uri).expect("resource URI");
        // SAFETY: valid C strings; the callbacks and the log outlive the instance (freed first).
        let c = unsafe {
            (api.instantiate)(
                name.as_ptr(),
                args.fmu_type,
                guid.as_ptr(),
                uri.as_ptr(),
                &*callbacks,
                0,
                Boolean::from(args.logging_on),
            )
        };
        if c.is_null() {
            return Err(log);
        }
        Ok(Instance {
            api,
            c,
            log,
            _callbacks: callbacks,
            freed: false,
        })
    }

    /// `fmi2SetDebugLogging(c, on, 0, NULL)`.
    pub fn set_debug_logging(&self, on: bool) -> Status {
        // SAFETY: live component; no categories.
        unsafe { (self.api.set_debug_logging)(self.c, Boolean::from(on), 0, std::ptr::null()) }
    }

    /// `fmi2SetupExperiment` without tolerance and stop time.
    pub fn setup_experiment(&self, start_time: f64) -> Status {
        // SAFETY: live component.
        unsafe { (self.api.setup_experiment)(self.c, 0, 0.0, start_time, 0, 0.0) }
    }

    /// `fmi2EnterInitializationMode`.
    pub fn enter_initialization_mode(&self) -> Status {
        // SAFETY: live component.
        unsafe { (self.api.enter_initialization_mode)(self.c) }
    }

    /// `fmi2ExitInitializationMode`.
    pub fn exit_initialization_mode(&self) -> Status {
        // SAFETY: live component.
        unsafe { (self.api.exit_initialization_mode)(self.c) }
    }

    /// `fmi2Terminate`.
    pub fn terminate(&self) -> Status {
        // SAFETY: live component.
        unsafe { (self.api.terminate)(self.c) }
    }

    /// `fmi2GetReal`.
    pub fn get_real(&self, vrs: &[u32], values: &mut [f64]) -> Status {
        assert_eq!(vrs.len(), values.len());
        // SAFETY: arrays of nvr elements.
        unsafe { (self.api.get_real)(self.c, vrs.as_ptr(), vrs.len(), values.as_mut_ptr()) }
    }

    /// `fmi2GetInteger`.
    pub fn get_integer(&self, vrs: &[u32], values: &mut [i32]) -> Status {
        assert_eq!(vrs.len(), values.len());
        // SAFETY: arrays of nvr elements.
        unsafe { (self.api.get_integer)(self.c, vrs.as_ptr(), vrs.len(), values.as_mut_ptr()) }
    }

    /// `fmi2GetBoolean`.
    pub fn get_boolean(&self, vrs: &[u32], values: &mut [i32]) -> Status {
        assert_eq!(vrs.len(), values.len());
        // SAFETY: arrays of nvr elements.
        unsafe { (self.api.get_boolean)(self.c, vrs.as_ptr(), vrs.len(), values.as_mut_ptr()) }
    }

    /// `fmi2SetReal`.
    pub fn set_real(&self, vrs: &[u32], values: &[f64]) -> Status {
        assert_eq!(vrs.len(), values.len());
        // SAFETY: arrays of nvr elements.
        unsafe { (self.api.set_real)(self.c, vrs.as_ptr(), vrs.len(), values.as_ptr()) }
    }

    /// `fmi2SetInteger`.
    pub fn set_integer(&self, vrs: &[u32], values: &[i32]) -> Status {
        assert_eq!(vrs.len(), values.len());
        // SAFETY: arrays of nvr elements.
        unsafe { (self.api.set_integer)(self.c, vrs.as_ptr(), vrs.len(), values.as_ptr()) }
    }

    /// `fmi2DoStep` (never promising not to restore an earlier state).
    pub fn do_step(&self, t: f64, h: f64) -> Status {
        // SAFETY: live component.
        unsafe { (self.api.do_step)(self.c, t, h, 0) }
    }

    /// `fmi2GetFMUstate` into a new state.
    pub fn get_fmu_state(&self) -> (Status, FmuState) {
        let mut state: FmuState = std::ptr::null_mut();
        // SAFETY: out-pointer to a NULL state, so the FMU allocates a new one.
        let status = unsafe { (self.api.get_fmu_state)(self.c, &mut state) };
        (status, state)
    }

    /// `fmi2SetFMUstate`.
    pub fn set_fmu_state(&self, state: FmuState) -> Status {
        // SAFETY: `state` came from this FMU.
        unsafe { (self.api.set_fmu_state)(self.c, state) }
    }

    /// `fmi2FreeFMUstate`.
    pub fn free_fmu_state(&self, state: &mut FmuState) -> Status {
        // SAFETY: `state` came from this FMU.
        unsafe { (self.api.free_fmu_state)(self.c, state) }
    }

    /// `fmi2SerializedFMUstateSize` then `fmi2SerializeFMUstate`.
    pub fn serialize(&self, state: FmuState) -> Result<Vec<u8>, String> {
        let mut size = 0usize;
        let from = self.log.len();
        // SAFETY: `state` came from this FMU.
        let status = unsafe { (self.api.serialized_fmu_state_size)(self.c, state, &mut size) };
        super::expect_ok(status, "fmi2SerializedFMUstateSize", &self.log, from)?;
        let mut bytes = vec![0u8; size];
        // SAFETY: buffer of `size` bytes.
        let status = unsafe {
            (self.api.serialize_fmu_state)(self.c, state, bytes.as_mut_ptr().cast(), size)
        };
        super::expect_ok(status, "fmi2SerializeFMUstate", &self.log, from)?;
        Ok(bytes)
    }

    /// `fmi2DeSerializeFMUstate` into a new state.
    pub fn deserialize(&self, bytes: &[u8]) -> (Status, FmuState) {
        let mut state: FmuState = std::ptr::null_mut();
        // SAFETY: buffer of `bytes.len()` bytes; NULL out-state so the FMU allocates.
        let status = unsafe {
            (self.api.deserialize_fmu_state)(self.c, bytes.as_ptr().cast(), bytes.len(), &mut state)
        };
        (status, state)
    }

    /// `fmi2GetDirectionalDerivative`.
    pub fn directional_derivative(
        &self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Status {
        assert_eq!(knowns.len(), seed.len());
        assert_eq!(unknowns.len(), sensitivity.len());
        // SAFETY: arrays of the stated lengths.
        unsafe {
            (self.api.get_directional_derivative)(
                self.c,
                unknowns.as_ptr(),
                unknowns.len(),
                knowns.as_ptr(),
                knowns.len(),
                seed.as_ptr(),
                sensitivity.as_mut_ptr(),
            )
        }
    }

    /// `fmi2FreeInstance` (once).
    pub fn free(mut self) {
        self.free_now();
    }

    /// Leave the instance alone after it returned Fatal: FMI allows no further call, not even
    /// `fmi2FreeInstance`, so it is leaked with the callbacks and log it points to.
    pub fn abandon(self) {
        std::mem::forget(self);
    }

    fn free_now(&mut self) {
        if !self.freed {
            self.freed = true;
            // SAFETY: live component, freed exactly once.
            unsafe { (self.api.free_instance)(self.c) };
        }
    }
}

impl Drop for Instance<'_> {
    fn drop(&mut self) {
        self.free_now();
    }
}
