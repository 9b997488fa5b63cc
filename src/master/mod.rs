//! HOW a simulation advances in time.
//!
//! `single` drives one FMU alone (inputs from a table, outputs recorded), as fmusim and FMPy
//! do. A system runs through [`run_system`]: `execution` holds its slaves and coupling values,
//! `zoh` steps them (Jacobi or Gauss-Seidel, hold or extrapolation), `loops` solves algebraic
//! loops, `pool` keeps each slave on one thread, `record` turns variables into result rows.

pub mod constraint;
pub mod control;
pub mod execution;
pub mod extended;
pub mod implicit;
pub mod loops;
pub mod polynomial;
pub mod pool;
pub mod record;
pub mod rim;
pub mod single;
pub mod zoh;

use std::io::Write;
use std::time::Instant;

use crate::results::CsvWriter;
use crate::{Error, Result};
use execution::Execution;

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

/// Run an instantiated system from its start to its stop time, writing a result row at every
/// output point (flushed as it goes) and calling `progress` with the time after every step.
/// A failure is reported with the time it happened; rows up to it are already written.
pub fn run_system<W: Write + Send>(
    exec: &mut Execution,
    writer: &mut CsvWriter<W>,
    progress: &mut dyn FnMut(f64),
) -> Result<RunStatistics> {
    let started = Instant::now();
    let experiment = exec.resolved.system.experiment.clone();
    if experiment.algorithm == crate::system::Algorithm::Constraint {
        let coupling = experiment.constraints.clone().ok_or_else(|| {
            Error::Usage("the constraint algorithm needs experiment.constraints: interface points, equations and driven forces".into())
        })?;
        return exec.run_constraints(&coupling, writer, progress);
    }
    if experiment.algorithm == crate::system::Algorithm::Rim {
        let settings = experiment.rim.clone().ok_or_else(|| {
            Error::Usage("the rim algorithm needs experiment.rim: the multibody component and its interfaces".into())
        })?;
        return exec.run_rim(&settings, writer, progress);
    }
    if let Some(control) = &experiment.control {
        let implicit = (experiment.algorithm == crate::system::Algorithm::Implicit)
            .then_some(experiment.corrector);
        let (mut stats, control_stats) =
            exec.run_controlled(control, implicit.as_ref(), writer, progress)?;
        stats.corrector_iterations = control_stats.corrector_iterations;
        stats.control = Some(control_stats);
        return Ok(stats);
    }
    let grid = TimeGrid {
        start: experiment.start,
        stop: experiment.stop,
        step: experiment.step,
        output_interval: experiment.output_interval.unwrap_or(experiment.step),
    };
    let at = |time: f64| {
        move |e: Error| Error::Simulation {
            time,
            source: Box::new(e),
        }
    };
    let mut stats = RunStatistics {
        end_time: grid.start,
        ..RunStatistics::default()
    };
    exec.initialize().map_err(at(grid.start))?;
    exec.write_row(writer).map_err(at(grid.start))?;
    stats.rows += 1;

    let eps = grid.epsilon();
    let mut next_output = grid.next_point(grid.start, grid.output_interval);
    while exec.time < grid.stop - eps
        && !exec
            .terminate_requested
            .load(std::sync::atomic::Ordering::Relaxed)
    {
        let t = exec.time;
        let target = grid
            .next_point(t, grid.step)
            .min(next_output)
            .min(grid.stop);
        exec.step(target - t).map_err(at(t))?;
        stats.steps += 1;
        if (exec.time - next_output).abs() <= eps || exec.time >= grid.stop - eps {
            exec.write_row(writer).map_err(at(exec.time))?;
            stats.rows += 1;
            next_output = grid.next_point(exec.time, grid.output_interval);
        }
        stats.end_time = exec.time;
        progress(exec.time);
    }
    stats.terminated_early = exec
        .terminate_requested
        .load(std::sync::atomic::Ordering::Relaxed)
        && exec.time < grid.stop - eps;
    exec.terminate().map_err(at(exec.time))?;
    stats.fmi_calls = exec.fmi_calls();
    stats.corrector_iterations = exec.corrector_iterations;
    stats.events = exec.events.load(std::sync::atomic::Ordering::Relaxed);
    stats.early_returns = exec
        .early_returns
        .load(std::sync::atomic::Ordering::Relaxed);
    stats.wall_seconds = started.elapsed().as_secs_f64();
    Ok(stats)
}
