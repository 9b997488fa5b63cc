//! ONE FMU: open -> describe -> load -> instantiate.
//!
//! [`Fmu::open`] extracts and describes without loading any code (so `inspect` works on FMUs
//! built for other platforms); the shared library is loaded once, on the first instantiation,
//! and shared by every instance of the same FMU (DESIGN.md decision 8).

pub mod archive;
pub mod description;
pub mod extract_dir;
pub mod ffi;
pub mod instance;
pub mod library;
pub mod slave;
pub mod summary;
pub mod validate;
pub mod values;
pub mod worker;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub use description::{FmiVersion, ModelDescription, ValueReference};
pub use slave::{
    DiscreteStatesUpdate, PolynomialInputMode, Slave, SlaveState, StateId, StepResult,
};

use crate::{Error, Result};
use archive::FmuArchive;
use instance::InstanceOptions;
use library::FmuLibrary;

/// An opened FMU: its files on disk and its model description; its library once loaded.
pub struct Fmu {
    archive: Arc<FmuArchive>,
    description: Arc<ModelDescription>,
    library: OnceLock<Arc<FmuLibrary>>,
}

impl Fmu {
    /// Open a `.fmu` file or an unpacked FMU folder and parse its model description.
    pub fn open(path: &Path) -> Result<Fmu> {
        let archive = FmuArchive::open(path)?;
        let shown_as = archive.source().join("modelDescription.xml");
        let description = description::from_file_as(&archive.model_description_path()?, &shown_as)
            .map_err(|e| archive.name_by_source(e))?;
        Ok(Fmu {
            archive: Arc::new(archive),
            description: Arc::new(description),
            library: OnceLock::new(),
        })
    }

    /// The path the FMU was opened from.
    pub fn source(&self) -> &Path {
        self.archive.source()
    }

    /// The model description.
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

    /// The Co-Simulation binary for this platform (loaded on first use, then shared).
    pub fn library(&self) -> Result<&Arc<FmuLibrary>> {
        if let Some(library) = self.library.get() {
            return Ok(library);
        }
        let loaded = FmuLibrary::load(&self.binary_path()?, &self.description)
            .map_err(|e| self.archive.name_by_source(e))?;
        Ok(self.library.get_or_init(|| loaded))
    }

    /// Path of the Co-Simulation binary for this platform.
    pub fn binary_path(&self) -> Result<PathBuf> {
        let identifier = self.description.co_simulation_identifier().ok_or_else(|| Error::Binary {
            path: self.archive.source().to_path_buf(),
            message: format!(
                "model \"{}\" has no Co-Simulation interface; cosimo drives Co-Simulation FMUs only",
                self.description.model_name
            ),
        })?;
        self.archive
            .binary_path(self.description.fmi_version, identifier)
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
        instance::instantiate(
            Arc::clone(self.library()?),
            Arc::clone(&self.description),
            name,
            self.archive.resources_dir().as_deref(),
            options,
        )
    }
}
