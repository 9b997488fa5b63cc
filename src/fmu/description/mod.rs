//! `modelDescription.xml` of FMI 2.0 and 3.0 -> one version-neutral [`ModelDescription`].

mod model;

pub use model::*;
