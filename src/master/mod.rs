//! HOW a simulation advances in time.
//!
//! `single` drives one FMU alone (inputs from a table, outputs recorded), as fmusim and FMPy
//! do; `record` turns slave variables into result rows.

pub mod record;
pub mod single;

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
}

impl RunStatistics {
    /// Simulated seconds per wall-clock second.
    pub fn real_time_factor(&self, start: f64) -> f64 {
        (self.end_time - start) / self.wall_seconds.max(1e-12)
    }
}
