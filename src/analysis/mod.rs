//! Analyses of the master algorithms on any system: stability (spectral radius of the one-step
//! map measured on the real master) and, later, convergence studies.
//!
//! - `study`: the `"stability"` section of a JSON system file (the state vector)
//! - `linear`: the one-step map of a linear system and the studies on it
//! - `stability`: the stability thesis' studies of the two-mass oscillator, on `linear`

pub mod linear;
pub mod stability;
pub mod study;
