//! ONE FMU: open -> describe -> load -> instantiate.

pub mod archive;
pub mod description;
pub mod ffi;
pub mod instance;
pub mod slave;

pub use description::{FmiVersion, ModelDescription, ValueReference};
pub use slave::{
    DiscreteStatesUpdate, PolynomialInputMode, Slave, SlaveState, StateId, StepResult,
};
