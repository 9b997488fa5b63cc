//! Analyses of the master algorithms: stability (spectral radius of the one-step map measured
//! on the real master) and, later, convergence studies.

pub mod stability;
