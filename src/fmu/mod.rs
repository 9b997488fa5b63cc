//! ONE FMU: open -> describe -> load -> instantiate.
//!
//! [`Fmu::open`] extracts and describes without loading any code (so `inspect` works on FMUs
//! built for other platforms); the shared library is loaded once, on the first instantiation,
//! and shared by every instance of the same FMU (DESIGN.md decision 8).

pub mod archive;
pub mod build;
pub mod crash;
pub mod description;
pub mod elements;
pub mod extract_dir;
pub mod ffi;
pub mod instance;
pub mod library;
pub mod model_exchange;
pub mod scheduled;
pub mod slave;
pub mod summary;
pub mod validate;
pub mod values;
pub mod worker;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub use description::{FmiVersion, Interface, ModelDescription, ValueReference};
pub use slave::{
    DiscreteStatesUpdate, IntervalQualifier, PolynomialInputMode, Slave, SlaveState, StateId,
    StepResult,
};

use crate::{Error, Result};
use archive::FmuArchive;
use instance::InstanceOptions;
use library::FmuLibrary;

/// An opened FMU seen through one of its interfaces: its files on disk and its model
/// description; its library once loaded.
pub struct Fmu {
    archive: Arc<FmuArchive>,
    /// The model description as the file says it.
    file_description: Arc<ModelDescription>,
    /// What the masters see: the file's description, or for Model Exchange the view of
    /// [`ModelDescription::for_interface`].
    description: Arc<ModelDescription>,
    /// `None`: the FMU has neither interface (it can be inspected, not instantiated).
    interface: Option<Interface>,
    library: OnceLock<Arc<FmuLibrary>>,
}

impl Fmu {
    /// Open a `.fmu` file or an unpacked FMU folder and parse its model description; the FMU
    /// is seen through its default interface ([`ModelDescription::default_interface`]).
    pub fn open(path: &Path) -> Result<Fmu> {
        let archive = FmuArchive::open(path)?;
        let shown_as = archive.source().join("modelDescription.xml");
        let description = description::from_file_as(&archive.model_description_path()?, &shown_as)
            .map_err(|e| archive.name_by_source(e))?;
        let description = Arc::new(description);
        let interface = description.default_interface();
        let fmu = Fmu {
            archive: Arc::new(archive),
            file_description: description.clone(),
            description,
            interface: None,
            library: OnceLock::new(),
        };
        match interface {
            Some(interface) => fmu.through(interface),
            None => Ok(fmu),
        }
    }

    /// The same FMU (same unpacked files) seen through `interface`; an error names what the
    /// FMU lacks. Its library is loaded apart from this one's.
    pub fn through(&self, interface: Interface) -> Result<Fmu> {
        let view = self
            .file_description
            .for_interface(interface)
            .map_err(|message| Error::Binary {
                path: self.archive.source().to_path_buf(),
                message,
            })?;
        Ok(Fmu {
            archive: self.archive.clone(),
            file_description: self.file_description.clone(),
            description: Arc::new(view),
            interface: Some(interface),
            library: OnceLock::new(),
        })
    }

    /// The interface this FMU is seen through (`None`: it has neither).
    pub fn interface(&self) -> Option<Interface> {
        self.interface
    }

    /// The model description as the file says it (both interfaces; `inspect` shows this).
    pub fn file_description(&self) -> &Arc<ModelDescription> {
        &self.file_description
    }

    /// The path the FMU was opened from.
    pub fn source(&self) -> &Path {
        self.archive.source()
    }

    /// The model description the masters see (see [`Fmu::through`]).
    pub fn description(&self) -> &Arc<ModelDescription> {
        &self.description
    }

    /// The FMU's files on disk.
    pub fn archive(&self) -> &FmuArchive {
        &self.archive
    }

    /// The FMU's files on disk, shared (whoever holds it keeps an extracted folder alive).
    pub fn archive_handle(&self) -> Arc<FmuArchive> {
        self.archive.clone()
    }

    /// The binary of the interface for this platform (loaded on first use, then shared).
    pub fn library(&self) -> Result<&Arc<FmuLibrary>> {
        if let Some(library) = self.library.get() {
            return Ok(library);
        }
        let interface = self.require_interface()?;
        let loaded = FmuLibrary::load(&self.binary_path()?, &self.description, interface)
            .map_err(|e| self.archive.name_by_source(e))?;
        Ok(self.library.get_or_init(|| loaded))
    }

    fn require_interface(&self) -> Result<Interface> {
        self.interface.ok_or_else(|| Error::Binary {
            path: self.archive.source().to_path_buf(),
            message: format!(
                "model \"{}\" has no Co-Simulation, Model Exchange or Scheduled Execution interface",
                self.description.model_name
            ),
        })
    }

    /// Path of the binary of the interface for this platform.
    pub fn binary_path(&self) -> Result<PathBuf> {
        self.require_interface()?;
        let identifier =
            self.description
                .co_simulation_identifier()
                .ok_or_else(|| Error::Binary {
                    path: self.archive.source().to_path_buf(),
                    message: format!(
                        "model \"{}\" has no Co-Simulation interface",
                        self.description.model_name
                    ),
                })?;
        let version = self.description.fmi_version;
        match self.archive.binary_path(version, identifier) {
            // No binary for this platform, but sources: build one (or take it from the cache).
            Err(missing) if build::has_sources(self.archive.root()) => {
                let built = build::binary(&self.archive, version, identifier, &mut |warning| {
                    log::warn!("{warning}")
                })?;
                built.ok_or_else(|| match missing {
                    Error::Binary { path, message } => Error::Binary {
                        path,
                        message: format!("{message}; {}", build::no_description(identifier)),
                    },
                    other => other,
                })
            }
            found => found,
        }
    }

    /// A new instance named `name`; it keeps the extracted files alive as long as it lives.
    pub fn instantiate(&self, name: &str, mut options: InstanceOptions) -> Result<Box<dyn Slave>> {
        if options.keep_alive.is_none() {
            options.keep_alive = Some(self.archive.clone());
        }
        // Array buffers are sized from the model description: refuse sizes no buffer could
        // hold before an instance exists (`inspect` still shows them, with a warning).
        for variable in self.description.variables.iter().filter(|v| v.is_array()) {
            values::check_array_size(&self.description, variable)?;
        }
        let library = Arc::clone(self.library()?);
        let resources = self.archive.resources_dir();
        match self.require_interface()? {
            Interface::CoSimulation => instance::instantiate(
                library,
                Arc::clone(&self.description),
                name,
                resources.as_deref(),
                options,
            ),
            Interface::ModelExchange => {
                let solver = options.solver;
                let inner = instance::instantiate_model_exchange(
                    library,
                    Arc::clone(&self.description),
                    name,
                    resources.as_deref(),
                    options,
                )?;
                Ok(Box::new(model_exchange::ModelExchangeSlave::new(
                    inner, solver,
                )?))
            }
            Interface::ScheduledExecution => {
                let inner = instance::Fmi3Instance::new(
                    library,
                    Arc::clone(&self.description),
                    name,
                    resources.as_deref(),
                    options,
                )?;
                Ok(Box::new(scheduled::ScheduledSlave::new(inner)?))
            }
        }
    }
}
