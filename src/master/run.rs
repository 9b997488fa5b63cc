//! THE run loop: every algorithm runs through [`run`], which owns the output grid,
//! termination requests from any component, stop conditions, the time of a failure,
//! statistics and the observers.
//!
//! A row is handed to the observers at every output point as soon as it is reached, so a run
//! that fails at t = 7.3 s has delivered every row up to 7.3 s (and the observers were told, so
//! the CSV observer has flushed them). When an FMU asks to terminate, the macro step that asked is the last: its row is
//! delivered (on the output grid or not) and the run ends there without an error.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::algorithm::{self, Outcome};
use super::divergence;
use super::execution::Execution;
use super::record::{Cell, Row};
use super::{RunStatistics, TimeGrid};
use crate::{Error, Result};

/// Watches a run: result rows, progress, the end. Library users implement it too; the CSV
/// writer is one observer among others.
pub trait Observer {
    /// The run starts; `columns` name the cells of every row (after the time).
    fn started(&mut self, _columns: &[String]) -> Result<()> {
        Ok(())
    }

    /// A result row at an output point (or where an FMU asked to terminate).
    fn row(&mut self, _row: &Row) -> Result<()> {
        Ok(())
    }

    /// A macro step was accepted; the system is at `time`.
    fn stepped(&mut self, _time: f64) {}

    /// Asked after every accepted macro step: `true` ends the run there, as when an FMU asks
    /// to terminate (a user's interrupt; the rows so far stay delivered).
    fn stop_requested(&mut self) -> bool {
        false
    }

    /// The run reached its end (the stop time or a termination request).
    fn finished(&mut self, _stats: &RunStatistics) -> Result<()> {
        Ok(())
    }

    /// The run failed with `error` after the rows delivered so far (a writer flushes them).
    fn failed(&mut self, _error: &Error) {}
}

/// Run an instantiated system from its start to its stop time with the experiment's
/// algorithm, handing every result row to the observers as it is reached. A failure is
/// reported with the time it happened; every row up to it has been delivered.
pub fn run(exec: &mut Execution, observers: &mut [&mut dyn Observer]) -> Result<RunStatistics> {
    let result = run_observed(exec, observers);
    if let Err(error) = &result {
        for observer in observers.iter_mut() {
            observer.failed(error);
        }
    }
    result
}

fn run_observed(
    exec: &mut Execution,
    observers: &mut [&mut dyn Observer],
) -> Result<RunStatistics> {
    let started = Instant::now();
    let experiment = &exec.resolved.system.experiment;
    let grid = TimeGrid {
        start: experiment.start,
        stop: experiment.stop,
        step: experiment.step,
        output_interval: experiment.output_interval(),
    };
    let mut algorithm = algorithm::for_experiment(&experiment.algorithm);
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
    let mut row = exec.new_row();
    let columns = exec.column_names();
    for observer in observers.iter_mut() {
        observer.started(&columns)?;
    }

    algorithm.prepare(exec).map_err(at(grid.start))?;
    exec.initialize().map_err(at(grid.start))?;
    algorithm.start(exec).map_err(at(grid.start))?;
    deliver(exec, &mut row, &columns, observers, &mut stats).map_err(at(grid.start))?;

    let mut next_output = grid.next_point(grid.start, grid.output_interval);
    while !grid.at_stop(exec.time) && !terminate_requested(exec) {
        let t = exec.time;
        let (h, on_grid) = grid.step_from(t, algorithm.proposed_step(exec, &grid), next_output);
        if algorithm.attempt(exec, h).map_err(at(t))? == Outcome::Rejected {
            continue;
        }
        stats.steps += 1;
        stats.end_time = exec.time;
        if let Some(limit) = exec.resolved.system.experiment.divergence_limit {
            divergence::check_coupling_values(exec, limit)
                .and_then(|()| algorithm.check_divergence(limit))
                .map_err(at(exec.time))?;
        }
        if on_grid || terminate_requested(exec) {
            deliver(exec, &mut row, &columns, observers, &mut stats).map_err(at(exec.time))?;
            next_output = grid.next_point(exec.time, grid.output_interval);
        }
        let mut stop = false;
        for observer in observers.iter_mut() {
            observer.stepped(exec.time);
            stop |= observer.stop_requested();
        }
        if stop {
            exec.terminate_requested.store(true, Ordering::Relaxed);
        }
    }
    stats.terminated_early = terminate_requested(exec) && !grid.at_stop(exec.time);
    exec.terminate().map_err(at(exec.time))?;
    stats.fmi_calls = exec.fmi_calls();
    stats.integrator = exec.integrator_statistics();
    stats.parallel = exec.parallel.clone();
    stats.corrector_iterations = exec.corrector_iterations;
    stats.events = exec.events.load(Ordering::Relaxed);
    stats.early_returns = exec.early_returns.load(Ordering::Relaxed);
    algorithm.finish(&mut stats);
    stats.wall_seconds = started.elapsed().as_secs_f64();
    for observer in observers.iter_mut() {
        observer.finished(&stats)?;
    }
    Ok(stats)
}

fn terminate_requested(exec: &Execution) -> bool {
    exec.terminate_requested.load(Ordering::Relaxed)
}

/// Read the row at the current time and hand it to every observer (a NaN or infinite value
/// ends the run first, unless the run allows them).
fn deliver(
    exec: &mut Execution,
    row: &mut Row,
    columns: &[String],
    observers: &mut [&mut dyn Observer],
    stats: &mut RunStatistics,
) -> Result<()> {
    exec.read_row(row)?;
    if !exec.allow_non_finite {
        check_finite(row, columns)?;
    }
    if let Some(limit) = exec.resolved.system.experiment.divergence_limit {
        divergence::check_row(row, columns, limit)?;
    }
    for observer in observers.iter_mut() {
        observer.row(row)?;
    }
    stats.rows += 1;
    Ok(())
}

/// The first recorded value that is NaN or infinite, as an error naming its column.
fn check_finite(row: &Row, columns: &[String]) -> Result<()> {
    for (cell, name) in row.cells.iter().zip(columns) {
        let bad = match cell {
            Cell::Float(x) => (!x.is_finite()).then_some(*x),
            Cell::Floats(v) => v.iter().copied().find(|x| !x.is_finite()),
            _ => None,
        };
        if let Some(x) = bad {
            return Err(Error::Numerics(format!(
                "{name} is {x}: an FMU output is not a finite number; check the model, its \
                 parameters and the step size (--allow-non-finite records such values)"
            )));
        }
    }
    Ok(())
}
