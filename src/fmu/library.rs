//! One loaded FMU shared library with its resolved FMI function table, shared by every instance
//! of that FMU through `Arc` (one load per FMU file, many instances).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::description::{FmiVersion, Interface, ModelDescription};
use super::ffi::{Fmi2Functions, Fmi3Functions};
use crate::error::{Error, Result};

/// The function table of a loaded library, for the FMI version its model description speaks
/// (shared by the instances: a copy in each would cost 350 to 700 bytes per instance).
#[derive(Debug, Clone)]
pub enum FmiFunctions {
    /// FMI 2.0 Co-Simulation.
    Fmi2(Arc<Fmi2Functions>),
    /// FMI 3.0 Co-Simulation.
    Fmi3(Arc<Fmi3Functions>),
}

/// A loaded FMU binary and its resolved function pointers.
///
/// The function pointers stay valid as long as this value lives; instances keep an
/// `Arc<FmuLibrary>` so the library is unloaded only after the last instance is freed.
///
/// It also remembers the first `Fatal` status any of its instances returned: FMI then allows
/// no further call to *any* instance of the FMU (FMI 2.0 §2.1.3, FMI 3.0 §2.2.3; see
/// [`crate::fmu::instance`]), so every instance refuses its calls from then on, none is freed
/// and the library is never unloaded.
pub struct FmuLibrary {
    path: PathBuf,
    interface: Interface,
    functions: FmiFunctions,
    model_name: String,
    only_once_per_process: bool,
    live_instances: AtomicUsize,
    /// Which instance and call returned Fatal first, e.g. `fmi2DoStep of instance "a"`.
    fatal: OnceLock<String>,
    /// `FMU "Model" (path)`: names the FMU in a report of a crash while it is unloaded.
    label: String,
    // Unloaded last, in `Drop`, after everything else.
    library: std::mem::ManuallyDrop<libloading::Library>,
}

impl Drop for FmuLibrary {
    /// Unload the library (its finalisers run: a crash in them is reported as one of this FMU).
    fn drop(&mut self) {
        let record = super::crash::CallRecord::labelled(std::mem::take(&mut self.label));
        record.enter("the unloading of its library (dlclose)");
        // SAFETY: dropped exactly once, here; the function pointers of the table are not used
        // after this (every instance, which holds an `Arc` of this library, is gone).
        unsafe { std::mem::ManuallyDrop::drop(&mut self.library) };
        super::crash::leave();
    }
}

impl std::fmt::Debug for FmuLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FmuLibrary")
            .field("path", &self.path)
            .field("version", &self.fmi_version())
            .field(
                "live_instances",
                &self.live_instances.load(Ordering::Relaxed),
            )
            .finish()
    }
}

impl FmuLibrary {
    /// Load the shared library at `binary_path` and resolve the FMI functions of the version
    /// `description` declares, checking the functions its capability flags promise.
    ///
    /// `description` is the one for `interface` ([`ModelDescription::for_interface`]): for
    /// Model Exchange its Co-Simulation capabilities are the Model Exchange component's.
    pub fn load(
        binary_path: &Path,
        description: &ModelDescription,
        interface: Interface,
    ) -> Result<Arc<FmuLibrary>> {
        let binary_error = |message: String| Error::Binary {
            path: binary_path.to_path_buf(),
            message,
        };
        let Some(cs) = description.co_simulation.as_ref() else {
            return Err(binary_error(format!(
                "model '{}' has no {interface} interface",
                description.model_name
            )));
        };
        if !binary_path.is_file() {
            return Err(binary_error(
                "the shared library does not exist (does the FMU contain a binary for this platform?)"
                    .into(),
            ));
        }
        // SAFETY: loading a library runs its initialisers; an FMU binary is trusted code by
        // the nature of co-simulation (we are about to call into it anyway).
        let library = unsafe { libloading::Library::new(binary_path) }.map_err(|e| {
            let message = e.to_string();
            binary_error(format!(
                "cannot load the shared library: {message}{}",
                load_hint(&message)
            ))
        })?;
        let functions = match description.fmi_version {
            FmiVersion::Fmi2 => FmiFunctions::Fmi2(Arc::new(Fmi2Functions::load(
                &library,
                binary_path,
                description,
                interface,
            )?)),
            FmiVersion::Fmi3 => FmiFunctions::Fmi3(Arc::new(Fmi3Functions::load(
                &library,
                binary_path,
                description,
                interface,
            )?)),
        };
        let label = format!(
            "FMU \"{}\" ({})",
            description.model_name,
            binary_path.display()
        );
        super::crash::loaded(label.clone());
        Ok(Arc::new(FmuLibrary {
            path: binary_path.to_path_buf(),
            interface,
            functions,
            model_name: description.model_name.clone(),
            only_once_per_process: cs.can_be_instantiated_only_once_per_process,
            live_instances: AtomicUsize::new(0),
            fatal: OnceLock::new(),
            label,
            library: std::mem::ManuallyDrop::new(library),
        }))
    }

    /// Path of the shared library.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The interface the library was loaded for.
    pub fn interface(&self) -> Interface {
        self.interface
    }

    /// The FMI version of the function table.
    pub fn fmi_version(&self) -> FmiVersion {
        match self.functions {
            FmiFunctions::Fmi2(_) => FmiVersion::Fmi2,
            FmiFunctions::Fmi3(_) => FmiVersion::Fmi3,
        }
    }

    /// The resolved function table.
    pub fn functions(&self) -> &FmiFunctions {
        &self.functions
    }

    /// The FMI 2 functions, when this is an FMI 2 library.
    pub fn fmi2(&self) -> Option<&Fmi2Functions> {
        match &self.functions {
            FmiFunctions::Fmi2(f) => Some(&**f),
            FmiFunctions::Fmi3(_) => None,
        }
    }

    /// The FMI 3 functions, when this is an FMI 3 library.
    pub fn fmi3(&self) -> Option<&Fmi3Functions> {
        match &self.functions {
            FmiFunctions::Fmi3(f) => Some(&**f),
            FmiFunctions::Fmi2(_) => None,
        }
    }

    /// Number of instances currently alive on this library.
    pub fn live_instances(&self) -> usize {
        self.live_instances.load(Ordering::Acquire)
    }

    /// The call that returned `Fatal` first (`fmi2DoStep of instance "a"`), if one did: no FMI
    /// function may be called on any instance of this library any more.
    pub fn fatal(&self) -> Option<&str> {
        self.fatal.get().map(String::as_str)
    }

    /// Note that `function` of `instance` returned `Fatal` (the first such call is kept).
    pub(crate) fn mark_fatal(&self, instance: &str, function: &str) {
        let _ = self
            .fatal
            .set(format!("{function} of instance \"{instance}\""));
    }

    /// Count a new instance; refuses a second live one when the FMU says
    /// `canBeInstantiatedOnlyOncePerProcess`, and any after an instance returned `Fatal`.
    pub(crate) fn register_instance(&self, instance: &str) -> Result<()> {
        if let Some(fatal) = self.fatal() {
            return Err(Error::WrongState {
                instance: instance.to_string(),
                function: match self.fmi_version() {
                    FmiVersion::Fmi2 => "fmi2Instantiate",
                    FmiVersion::Fmi3 => "fmi3InstantiateCoSimulation",
                },
                state: format!(
                    "Fatal ({fatal} returned Fatal; FMI allows no further call to any instance \
                     of this FMU)"
                ),
            });
        }
        let previous = self.live_instances.fetch_add(1, Ordering::AcqRel);
        if self.only_once_per_process && previous > 0 {
            self.live_instances.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::Unsupported {
                instance: instance.to_string(),
                message: format!(
                    "model '{}' declares canBeInstantiatedOnlyOncePerProcess and is already \
                     instantiated in this process; run further instances in a worker process",
                    self.model_name
                ),
            });
        }
        Ok(())
    }

    /// Forget an instance counted by [`FmuLibrary::register_instance`].
    pub(crate) fn unregister_instance(&self) {
        self.live_instances.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What to do about a failed load, from the loader's message: the missing symbol or library
/// named, and the usual cause.
pub fn load_hint(message: &str) -> String {
    if let Some(symbol) = message
        .split("undefined symbol: ")
        .nth(1)
        .map(|rest| rest.split_whitespace().next().unwrap_or(rest))
    {
        if symbol.starts_with("_Py") || symbol.starts_with("Py") {
            return format!(
                "; the FMU needs the Python runtime's symbol {symbol}: it was exported by a \
                 Python-based tool and expects libpython in the process. Start cosimo with the \
                 exporter's Python library preloaded, e.g. LD_PRELOAD=$(python3 -c \"import \
                 sysconfig, os; print(os.path.join(sysconfig.get_config_var('LIBDIR'), \
                 sysconfig.get_config_var('LDLIBRARY')))\") cosimo run ..."
            );
        }
        return format!(
            "; the symbol {symbol} is provided by none of the libraries the FMU loads: a \
             library it depends on is missing or of another version (`ldd -r` on the binary \
             lists what is unresolved)"
        );
    }
    if message.contains("cannot open shared object file") {
        return "; a library the FMU depends on is not installed or not on the library path \
                (`ldd` on the binary shows which)"
            .to_string();
    }
    String::new()
}
