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
//! - `tests/model_exchange.rs` (with `tests/common/me.rs`, the FMI 2 and FMI 3 Model Exchange
//!   functions declared by hand): every FMU with a ModelExchange interface runs under an
//!   importer-side RK4 with event location in this harness and agrees with its own
//!   Co-Simulation interface; derivatives are the models' equations, directional derivatives
//!   match finite differences, BouncingBall bounces at the closed-form time, Stair announces
//!   its time events, FMU states round trip, misuse is refused.
//! - `tests/fmpy.rs` (with `fmpy_check.py`): FMPy validates and simulates every FMU (and the
//!   Model Exchange interface with its own CVode where there is one); needs
//!   `COSIMO_FMPY_PYTHON` (set by `cargo xtask test`).
