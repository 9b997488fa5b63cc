//! HOW a simulation advances in time.
//!
//! A system runs through the one loop of `run` (output grid, termination, errors, statistics,
//! observers), which asks an algorithm (`algorithm::MasterAlgorithm`) to advance it macro step
//! by macro step: fixed steps with `zoh` (Jacobi or Gauss-Seidel, hold or extrapolation) or
//! `implicit`, step control (`control`), `constraint` coupling or the reduced interface model
//! (`rim`). `execution` holds the slaves and coupling values, `loops` solves algebraic loops,
//! `pool` keeps each slave on one thread, `record` turns variables into result rows. `single`
//! still drives one FMU alone with inputs from a table, as fmusim and FMPy do.

pub mod algorithm;
pub mod constraint;
pub mod control;
pub mod execution;
pub mod extended;
pub mod implicit;
pub mod inputs;
pub mod loops;
pub mod polynomial;
pub mod pool;
pub mod record;
pub mod rim;
pub mod run;
pub mod zoh;

/// The time grid of a run: start, stop, communication step and output interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeGrid {
    pub start: f64,
    pub stop: f64,
    pub step: f64,
    pub output_interval: f64,
}

impl TimeGrid {
    /// Times closer than this (relative to the step) are the same communication point.
    pub fn epsilon(&self) -> f64 {
        self.step * 1e-9
    }

    /// The next point after `t` on the grid `start + n * interval`, computed from `n` so that
    /// long runs do not drift.
    pub fn next_point(&self, t: f64, interval: f64) -> f64 {
        let n = ((t - self.start + self.epsilon()) / interval).floor() + 1.0;
        self.start + n * interval
    }
}

/// What a run did, for the summary line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStatistics {
    /// Communication steps taken (`do_step` calls that the master scheduled).
    pub steps: u64,
    /// Event iterations handled (FMI 3 event mode).
    pub events: u64,
    /// Early returns from `do_step`.
    pub early_returns: u64,
    /// Result rows written.
    pub rows: u64,
    /// FMI calls made by all slaves.
    pub fmi_calls: u64,
    /// The time the run reached.
    pub end_time: f64,
    /// Whether an FMU asked to terminate before the stop time.
    pub terminated_early: bool,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
    /// Newton iterations of the implicit corrector.
    pub corrector_iterations: u64,
    /// Macro-step control statistics, for controlled runs.
    pub control: Option<control::ControlStatistics>,
}

impl RunStatistics {
    /// Simulated seconds per wall-clock second.
    pub fn real_time_factor(&self, start: f64) -> f64 {
        (self.end_time - start) / self.wall_seconds.max(1e-12)
    }
}
