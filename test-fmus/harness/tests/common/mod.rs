//! The minimal, independent FMU harness shared by the integration tests: unzip an FMU, scan its
//! model description, `dlopen` its binary and call the FMI 2.0 / 3.0 Co-Simulation C API through
//! function types declared here from the standard headers.
//!
//! It shares no code with cosimo's own importer on purpose: these tests vouch for the FMUs that
//! will later test that importer.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod fmi2;
pub mod fmi3;
pub mod md;
pub mod me;

use std::ffi::{c_void, CStr};
use std::fmt::Write as _;
use std::os::raw::c_char;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

pub use md::ModelDescription;

/// `fmi2OK` / `fmi3OK`.
pub const OK: i32 = 0;
/// `fmi2Warning` / `fmi3Warning`.
pub const WARNING: i32 = 1;
/// `fmi2Discard` / `fmi3Discard`.
pub const DISCARD: i32 = 2;
/// `fmi2Error` / `fmi3Error`.
pub const ERROR: i32 = 3;
/// `fmi2Fatal` / `fmi3Fatal`.
pub const FATAL: i32 = 4;

/// Name of a status code.
pub fn status_name(status: i32) -> &'static str {
    match status {
        OK => "OK",
        WARNING => "Warning",
        DISCARD => "Discard",
        ERROR => "Error",
        FATAL => "Fatal",
        5 => "Pending",
        _ => "<invalid status>",
    }
}

/// One packed FMU as the packer reports it.
#[derive(Clone, Debug)]
pub struct Packed {
    /// Model name, e.g. `Oscillator`.
    pub model: String,
    /// 2 or 3.
    pub fmi_version: u8,
    /// Path of the `.fmu`.
    pub path: PathBuf,
}

/// Every packed FMU (packed once per test binary).
pub fn packed() -> &'static [Packed] {
    static PACKED: OnceLock<Vec<Packed>> = OnceLock::new();
    PACKED.get_or_init(|| {
        let fmus =
            fmu_pack::packed_fmus().unwrap_or_else(|e| panic!("packing the FMUs failed: {e}"));
        assert!(!fmus.is_empty(), "fmu_pack::packed_fmus() returned no FMUs");
        fmus.into_iter()
            .map(|f| Packed {
                model: f.model,
                fmi_version: f.fmi_version,
                path: f.path,
            })
            .collect()
    })
}

/// Packed FMUs of one FMI version.
pub fn packed_of_version(version: u8) -> Vec<&'static Packed> {
    // The harness drives the Co-Simulation interface: a Scheduled Execution FMU (no
    // <CoSimulation>) has its own tests (kit tests/scheduled.rs, tests/scheduled_execution.rs).
    let fmus: Vec<_> = packed()
        .iter()
        .filter(|p| p.fmi_version == version)
        .filter(|p| Extracted::new(p).map_or(true, |e| e.md.cs_model_identifier.is_some()))
        .collect();
    assert!(!fmus.is_empty(), "no FMI {version} FMUs were packed");
    fmus
}

/// One message received through the logger callback.
#[derive(Clone, Debug)]
pub struct LogRecord {
    /// Status the FMU attached to the message.
    pub status: i32,
    /// Log category.
    pub category: String,
    /// The message (for FMI 2: the raw format string, see [`fmi2`]).
    pub message: String,
}

/// Collects the log messages of one instance; its address is the instance environment.
#[derive(Debug, Default)]
pub struct LogSink {
    records: Mutex<Vec<LogRecord>>,
}

impl LogSink {
    /// Record one message (called from the C callbacks; never panics).
    ///
    /// # Safety
    /// `category` and `message` are NULL or NUL-terminated strings.
    pub unsafe fn record(&self, status: i32, category: *const c_char, message: *const c_char) {
        let text = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        let record = LogRecord {
            status,
            category: text(category),
            message: text(message),
        };
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
    }

    /// All messages so far.
    pub fn records(&self) -> Vec<LogRecord> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Number of messages so far.
    pub fn len(&self) -> usize {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Messages with index >= `from`, formatted one per line.
    pub fn since(&self, from: usize) -> String {
        let records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        for r in records.iter().skip(from) {
            let _ = writeln!(
                out,
                "    [{} {}] {}",
                status_name(r.status),
                r.category,
                r.message
            );
        }
        out
    }

    /// The instance environment pointer handed to the FMU.
    pub fn env(&self) -> *mut c_void {
        self as *const LogSink as *mut c_void
    }
}

/// An FMU extracted into a temporary directory with its model description scanned.
pub struct Extracted {
    /// Keeps the extraction alive.
    pub dir: tempfile::TempDir,
    /// The scanned model description.
    pub md: ModelDescription,
    /// The text of `modelDescription.xml`.
    pub xml: String,
    /// Where the FMU came from.
    pub packed: Packed,
}

impl Extracted {
    /// Unzip `packed` into a fresh temporary directory and scan its model description.
    pub fn new(packed: &Packed) -> Result<Self, String> {
        let file = std::fs::File::open(&packed.path)
            .map_err(|e| format!("{}: {e}", packed.path.display()))?;
        let mut archive =
            zip::ZipArchive::new(file).map_err(|e| format!("{}: {e}", packed.path.display()))?;
        let dir = tempfile::Builder::new()
            .prefix("fmu-harness-")
            .tempdir()
            .map_err(|e| format!("temporary directory: {e}"))?;
        archive
            .extract(dir.path())
            .map_err(|e| format!("{}: unzip: {e}", packed.path.display()))?;
        let xml_path = dir.path().join("modelDescription.xml");
        let xml = std::fs::read_to_string(&xml_path)
            .map_err(|e| format!("{}: modelDescription.xml: {e}", packed.path.display()))?;
        let md = md::parse(&xml)
            .map_err(|e| format!("{}: modelDescription.xml: {e}", packed.path.display()))?;
        if md.fmi_version != packed.fmi_version {
            return Err(format!(
                "{}: packer says FMI {}, modelDescription.xml says FMI {}",
                packed.path.display(),
                packed.fmi_version,
                md.fmi_version
            ));
        }
        Ok(Extracted {
            dir,
            md,
            xml,
            packed: packed.clone(),
        })
    }

    /// Short label for messages, e.g. `Oscillator (FMI 3)`.
    pub fn label(&self) -> String {
        format!("{} (FMI {})", self.packed.model, self.packed.fmi_version)
    }

    /// The `resources/` folder of the extraction.
    pub fn resources(&self) -> PathBuf {
        self.dir.path().join("resources")
    }

    /// The shared library of the Co-Simulation interface for this platform.
    pub fn binary(&self) -> Result<PathBuf, String> {
        let id = self
            .md
            .cs_model_identifier
            .as_deref()
            .ok_or_else(|| format!("{}: no CoSimulation element", self.label()))?;
        self.binary_named(id)
    }

    /// The shared library of the Model Exchange interface for this platform.
    pub fn me_binary(&self) -> Result<PathBuf, String> {
        let id = self
            .md
            .me_model_identifier
            .as_deref()
            .ok_or_else(|| format!("{}: no ModelExchange element", self.label()))?;
        self.binary_named(id)
    }

    fn binary_named(&self, id: &str) -> Result<PathBuf, String> {
        let platform = match self.md.fmi_version {
            2 => "linux64",
            _ => "x86_64-linux",
        };
        let path = self
            .dir
            .path()
            .join("binaries")
            .join(platform)
            .join(format!("{id}.so"));
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{}: binary {} is missing",
                self.label(),
                rel(self.dir.path(), &path)
            ))
        }
    }
}

fn rel(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Load a shared library.
pub fn load_library(path: &Path) -> Result<libloading::Library, String> {
    // SAFETY: loading the FMU's binary runs its initialisers; that is what is under test.
    unsafe { libloading::Library::new(path) }.map_err(|e| format!("dlopen {}: {e}", path.display()))
}

/// Start time and communication step size.
pub fn experiment(md: &ModelDescription) -> (f64, f64) {
    let t0 = md.start_time.unwrap_or(0.0);
    let h = match (md.step_size, md.stop_time) {
        (Some(h), _) if h > 0.0 => h,
        (_, Some(stop)) if stop > t0 => (stop - t0) / 100.0,
        _ => 0.01,
    };
    (t0, h)
}

/// Turn a status into a `Result`, naming the call and quoting the FMU's log since `from`.
pub fn expect_ok(status: i32, call: &str, log: &LogSink, from: usize) -> Result<(), String> {
    if status == OK {
        Ok(())
    } else {
        Err(format!(
            "{call} returned {} ({status}), expected OK; log:\n{}",
            status_name(status),
            log.since(from)
        ))
    }
}

/// Whether `a` and `b` agree: |a - b| <= rel * max(1, |a|, |b|).
pub fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * 1f64.max(a.abs()).max(b.abs())
}

/// Run `check` for every FMU in `fmus`, collect the failures and panic with all of them.
pub fn for_each_fmu(fmus: &[&Packed], check: impl Fn(&Extracted) -> Result<(), String>) {
    let mut failures = Vec::new();
    for packed in fmus {
        let result = Extracted::new(packed)
            .and_then(|fmu| check(&fmu).map_err(|e| format!("{}: {e}", fmu.label())));
        match result {
            Ok(()) => eprintln!("ok: {} (FMI {})", packed.model, packed.fmi_version),
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} FMU(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The checked Co-Simulation calls the generic tests need, for both FMI versions. Every method
/// fails (with the call's name, its status and the FMU's log) unless the FMU returns OK.
pub trait Cs {
    /// `fmi2` or `fmi3`.
    fn prefix(&self) -> &'static str;
    /// The instance's log.
    fn log(&self) -> &LogSink;
    /// Get scalar Float64 values.
    fn get_f64(&self, vrs: &[u32]) -> Result<Vec<f64>, String>;
    /// Set scalar Float64 values.
    fn set_f64(&self, vrs: &[u32], values: &[f64]) -> Result<(), String>;
    /// One communication step from `t` of size `h` (FMI 3: also checks the out-arguments).
    fn step(&self, t: f64, h: f64) -> Result<(), String>;
    /// Every readable numeric / Boolean value as raw bits, labelled with its name.
    fn snapshot(&self, md: &ModelDescription) -> Result<Vec<(String, u64)>, String>;
    /// Get the FMU state (new).
    fn get_state(&self) -> Result<*mut c_void, String>;
    /// Set the FMU state.
    fn set_state(&self, state: *mut c_void) -> Result<(), String>;
    /// Free an FMU state.
    fn free_state(&self, state: *mut c_void) -> Result<(), String>;
    /// Serialise an FMU state.
    fn serialize_state(&self, state: *mut c_void) -> Result<Vec<u8>, String>;
    /// Deserialise an FMU state (new).
    fn deserialize_state(&self, bytes: &[u8]) -> Result<*mut c_void, String>;
    /// Output derivatives of the given orders (FMI 2 `GetRealOutputDerivatives`, FMI 3
    /// `GetOutputDerivatives`).
    fn output_derivatives(&self, vrs: &[u32], orders: &[i32]) -> Result<Vec<f64>, String>;
    /// d unknowns / d knowns · seed.
    fn directional_derivative(
        &self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
    ) -> Result<Vec<f64>, String>;
}

/// Check `status` of the call `call` (log quoted from message `from` on).
fn checked(
    log: &LogSink,
    from: usize,
    status: i32,
    call: impl FnOnce() -> String,
) -> Result<(), String> {
    if status == OK {
        Ok(())
    } else {
        expect_ok(status, &call(), log, from)
    }
}

impl Cs for fmi2::Instance<'_> {
    fn output_derivatives(&self, vrs: &[u32], orders: &[i32]) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let mut out = vec![f64::NAN; vrs.len()];
        // SAFETY: arrays of nvr elements.
        let status = unsafe {
            (self.api.get_real_output_derivatives)(
                self.c,
                vrs.as_ptr(),
                vrs.len(),
                orders.as_ptr(),
                out.as_mut_ptr(),
            )
        };
        checked(&self.log, from, status, || {
            format!("fmi2GetRealOutputDerivatives({vrs:?}, orders {orders:?})")
        })?;
        Ok(out)
    }

    fn prefix(&self) -> &'static str {
        "fmi2"
    }

    fn log(&self) -> &LogSink {
        &self.log
    }

    fn get_f64(&self, vrs: &[u32]) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let mut values = vec![f64::NAN; vrs.len()];
        let status = self.get_real(vrs, &mut values);
        checked(&self.log, from, status, || format!("fmi2GetReal({vrs:?})"))?;
        Ok(values)
    }

    fn set_f64(&self, vrs: &[u32], values: &[f64]) -> Result<(), String> {
        let from = self.log.len();
        let status = self.set_real(vrs, values);
        checked(&self.log, from, status, || {
            format!("fmi2SetReal({vrs:?}, {values:?})")
        })
    }

    fn step(&self, t: f64, h: f64) -> Result<(), String> {
        let from = self.log.len();
        let status = self.do_step(t, h);
        checked(&self.log, from, status, || {
            format!("fmi2DoStep(t = {t}, h = {h})")
        })
    }

    fn snapshot(&self, md: &ModelDescription) -> Result<Vec<(String, u64)>, String> {
        let from = self.log.len();
        let mut out = Vec::new();
        let vars = |ty: &[&str]| -> Vec<&md::Variable> {
            md.variables
                .iter()
                .filter(|v| ty.contains(&v.ty.as_str()) && v.causality != "independent")
                .collect()
        };
        let reals = vars(&["Float64"]);
        let vrs: Vec<u32> = reals.iter().map(|v| v.vr).collect();
        let mut values = vec![0.0; vrs.len()];
        let status = self.get_real(&vrs, &mut values);
        checked(&self.log, from, status, || {
            format!("fmi2GetReal of all Real variables {vrs:?}")
        })?;
        out.extend(
            reals
                .iter()
                .zip(&values)
                .map(|(v, x)| (v.name.clone(), x.to_bits())),
        );
        for (types, name) in [
            (&["Int32", "Enumeration"][..], "Integer"),
            (&["Boolean"][..], "Boolean"),
        ] {
            let list = vars(types);
            if list.is_empty() {
                continue;
            }
            let vrs: Vec<u32> = list.iter().map(|v| v.vr).collect();
            let mut values = vec![0; vrs.len()];
            let status = if name == "Integer" {
                self.get_integer(&vrs, &mut values)
            } else {
                self.get_boolean(&vrs, &mut values)
            };
            checked(&self.log, from, status, || {
                format!("fmi2Get{name} of all {name} variables {vrs:?}")
            })?;
            out.extend(
                list.iter()
                    .zip(&values)
                    .map(|(v, x)| (v.name.clone(), *x as u64)),
            );
        }
        Ok(out)
    }

    fn get_state(&self) -> Result<*mut c_void, String> {
        let from = self.log.len();
        let (status, state) = self.get_fmu_state();
        checked(&self.log, from, status, || "fmi2GetFMUstate".into())?;
        if state.is_null() {
            return Err("fmi2GetFMUstate returned OK but a NULL state".into());
        }
        Ok(state)
    }

    fn set_state(&self, state: *mut c_void) -> Result<(), String> {
        let from = self.log.len();
        let status = self.set_fmu_state(state);
        checked(&self.log, from, status, || "fmi2SetFMUstate".into())
    }

    fn free_state(&self, state: *mut c_void) -> Result<(), String> {
        let from = self.log.len();
        let mut state = state;
        let status = self.free_fmu_state(&mut state);
        checked(&self.log, from, status, || "fmi2FreeFMUstate".into())?;
        if !state.is_null() {
            return Err("fmi2FreeFMUstate did not set the state pointer to NULL".into());
        }
        Ok(())
    }

    fn serialize_state(&self, state: *mut c_void) -> Result<Vec<u8>, String> {
        self.serialize(state)
    }

    fn deserialize_state(&self, bytes: &[u8]) -> Result<*mut c_void, String> {
        let from = self.log.len();
        let (status, state) = self.deserialize(bytes);
        checked(&self.log, from, status, || {
            format!("fmi2DeSerializeFMUstate ({} bytes)", bytes.len())
        })?;
        if state.is_null() {
            return Err("fmi2DeSerializeFMUstate returned OK but a NULL state".into());
        }
        Ok(state)
    }

    fn directional_derivative(
        &self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
    ) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let mut out = vec![f64::NAN; unknowns.len()];
        let status = fmi2::Instance::directional_derivative(self, unknowns, knowns, seed, &mut out);
        checked(&self.log, from, status, || {
            format!("fmi2GetDirectionalDerivative(unknowns {unknowns:?}, knowns {knowns:?}, seed {seed:?})")
        })?;
        Ok(out)
    }
}

impl Cs for fmi3::Instance<'_> {
    fn output_derivatives(&self, vrs: &[u32], orders: &[i32]) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let mut out = vec![f64::NAN; vrs.len()];
        // SAFETY: arrays of the stated lengths.
        let status = unsafe {
            (self.api.get_output_derivatives)(
                self.c,
                vrs.as_ptr(),
                vrs.len(),
                orders.as_ptr(),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        checked(&self.log, from, status, || {
            format!("fmi3GetOutputDerivatives({vrs:?}, orders {orders:?})")
        })?;
        Ok(out)
    }

    fn prefix(&self) -> &'static str {
        "fmi3"
    }

    fn log(&self) -> &LogSink {
        &self.log
    }

    fn get_f64(&self, vrs: &[u32]) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let mut values = vec![f64::NAN; vrs.len()];
        let status = self.get_float64(vrs, &mut values);
        checked(&self.log, from, status, || {
            format!("fmi3GetFloat64({vrs:?})")
        })?;
        Ok(values)
    }

    fn set_f64(&self, vrs: &[u32], values: &[f64]) -> Result<(), String> {
        let from = self.log.len();
        let status = self.set_float64(vrs, values);
        checked(&self.log, from, status, || {
            format!("fmi3SetFloat64({vrs:?}, {values:?})")
        })
    }

    fn step(&self, t: f64, h: f64) -> Result<(), String> {
        let from = self.log.len();
        let (status, r) = self.do_step(t, h);
        checked(&self.log, from, status, || {
            format!("fmi3DoStep(t = {t}, h = {h})")
        })?;
        let end = t + h;
        if r.event_handling_needed || r.terminate_simulation || r.early_return {
            return Err(format!(
                "fmi3DoStep(t = {t}, h = {h}) returned OK with unexpected out-arguments {r:?} \
                 (instantiated with eventModeUsed = false and earlyReturnAllowed = false)"
            ));
        }
        if (r.last_successful_time - end).abs() > 1e-12 * end.abs().max(1.0) {
            return Err(format!(
                "fmi3DoStep(t = {t}, h = {h}): lastSuccessfulTime = {} but the step ended at {end} \
                 (no early return)",
                r.last_successful_time
            ));
        }
        Ok(())
    }

    fn snapshot(&self, md: &ModelDescription) -> Result<Vec<(String, u64)>, String> {
        let from = self.log.len();
        let mut out = Vec::new();
        for var in md.variables.iter().filter(|v| v.causality != "independent") {
            let Some(n) = md.element_count(var) else {
                continue;
            };
            let Some((status, bits)) = self.get_bits(var, n) else {
                continue;
            };
            checked(&self.log, from, status, || {
                format!(
                    "fmi3Get{} of {} (vr {}, {n} values)",
                    var.ty, var.name, var.vr
                )
            })?;
            for (i, b) in bits.into_iter().enumerate() {
                let name = if var.is_scalar() {
                    var.name.clone()
                } else {
                    format!("{}[{i}]", var.name)
                };
                out.push((name, b));
            }
        }
        Ok(out)
    }

    fn get_state(&self) -> Result<*mut c_void, String> {
        let from = self.log.len();
        let (status, state) = self.get_fmu_state();
        checked(&self.log, from, status, || "fmi3GetFMUState".into())?;
        if state.is_null() {
            return Err("fmi3GetFMUState returned OK but a NULL state".into());
        }
        Ok(state)
    }

    fn set_state(&self, state: *mut c_void) -> Result<(), String> {
        let from = self.log.len();
        let status = self.set_fmu_state(state);
        checked(&self.log, from, status, || "fmi3SetFMUState".into())
    }

    fn free_state(&self, state: *mut c_void) -> Result<(), String> {
        let from = self.log.len();
        let mut state = state;
        let status = self.free_fmu_state(&mut state);
        checked(&self.log, from, status, || "fmi3FreeFMUState".into())?;
        if !state.is_null() {
            return Err("fmi3FreeFMUState did not set the state pointer to NULL".into());
        }
        Ok(())
    }

    fn serialize_state(&self, state: *mut c_void) -> Result<Vec<u8>, String> {
        self.serialize(state)
    }

    fn deserialize_state(&self, bytes: &[u8]) -> Result<*mut c_void, String> {
        let from = self.log.len();
        let (status, state) = self.deserialize(bytes);
        checked(&self.log, from, status, || {
            format!("fmi3DeserializeFMUState ({} bytes)", bytes.len())
        })?;
        if state.is_null() {
            return Err("fmi3DeserializeFMUState returned OK but a NULL state".into());
        }
        Ok(state)
    }

    fn directional_derivative(
        &self,
        unknowns: &[u32],
        knowns: &[u32],
        seed: &[f64],
    ) -> Result<Vec<f64>, String> {
        let from = self.log.len();
        let mut out = vec![f64::NAN; unknowns.len()];
        let status = fmi3::Instance::directional_derivative(self, unknowns, knowns, seed, &mut out);
        checked(&self.log, from, status, || {
            format!("fmi3GetDirectionalDerivative(unknowns {unknowns:?}, knowns {knowns:?}, seed {seed:?})")
        })?;
        Ok(out)
    }
}
