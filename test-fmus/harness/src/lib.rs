//! Independent test harness for the project's own FMUs.
//!
//! This crate has no API. Its integration tests load every FMU packed by `fmu-pack` through a
//! minimal `dlopen` harness of their own (`tests/common/`: the FMI 2.0 and FMI 3.0 Co-Simulation
//! functions declared by hand from the standard headers, a tiny `modelDescription.xml` scan, and
//! `zip` extraction into a temporary directory). It deliberately shares no code with cosimo's
//! own importer, which these FMUs are later used to test.
//!
//! - `tests/call_sequence.rs`: every FMU's whole call sequence returns OK; FMU state save /
//!   restore and serialisation give bit-identical continuations; directional derivatives match
//!   central finite differences; output derivatives match the state derivatives; the FMI 2 and
//!   FMI 3 builds of each model agree.
//! - `tests/misuse.rs`: calls the standard says must be refused return Error with a log message;
//!   a wrong GUID / instantiation token gives NULL.
//! - `tests/models.rs`: closed-form solutions (Dahlquist, Oscillator), every type through
//!   Feedthrough, the failures Faulty simulates, OscillatorChain's `n` as an FMI 3 structural
//!   parameter (Configuration Mode only) and an FMI 2 parameter.
//! - `tests/fmpy.rs` (with `fmpy_check.py`): FMPy validates and simulates every FMU; needs
//!   `COSIMO_FMPY_PYTHON` (set by `cargo xtask test`).
