//! cosimo: an FMI 2.0 / 3.0 co-simulation master.
//!
//! `fmu` opens, describes, loads and instantiates one FMU; everything above it talks to FMUs
//! through the [`fmu::Slave`] trait.

pub mod analysis;
pub mod distribute;
pub mod error;
pub mod export;
pub mod fmu;
pub mod fs_checks;
pub mod master;
pub mod numbers;
pub mod observe;
pub mod request;
pub mod results;
pub mod settings;
pub mod sweep;
pub mod system;
pub mod table;
pub(crate) mod xml;

pub use error::{Error, FmiStatus, Result};
