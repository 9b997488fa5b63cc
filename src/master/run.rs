//! The batch run and the observers of a run. [`run`] drives the steppable
//! [`Simulation`](super::simulation::Simulation) from start to stop: its loop owns the output
//! grid, termination requests from any component, stop conditions, the time of a failure,
//! statistics and the observers' calls.
//!
//! A row is handed to the observers at every output point as soon as it is reached, so a run
//! that fails at t = 7.3 s has delivered every row up to 7.3 s (and the observers were told, so
//! the CSV observer has flushed them). When an FMU asks to terminate, the macro step that asked is the last: its row is
//! delivered (on the output grid or not) and the run ends there without an error.

use super::execution::Execution;
use super::record::Row;
use super::scenario::ScenarioPlayer;
use super::simulation::Simulation;
use super::RunStatistics;
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

    /// The simulation was restored to a snapshot taken at `time`, after its first `rows` rows:
    /// rows delivered since are no longer part of the run (an in-memory table drops them).
    fn restored(&mut self, _rows: u64, _time: f64) {}
}

/// An observer behind a reference or a box is an observer: the batch run passes
/// `&mut dyn Observer`s, a session keeps boxed ones.
macro_rules! forward_observer {
    ($($holder:ty),*) => {$(
        impl<T: Observer + ?Sized> Observer for $holder {
            fn started(&mut self, columns: &[String]) -> Result<()> {
                (**self).started(columns)
            }
            fn row(&mut self, row: &Row) -> Result<()> {
                (**self).row(row)
            }
            fn stepped(&mut self, time: f64) {
                (**self).stepped(time)
            }
            fn stop_requested(&mut self) -> bool {
                (**self).stop_requested()
            }
            fn finished(&mut self, stats: &RunStatistics) -> Result<()> {
                (**self).finished(stats)
            }
            fn failed(&mut self, error: &Error) {
                (**self).failed(error)
            }
            fn restored(&mut self, rows: u64, time: f64) {
                (**self).restored(rows, time)
            }
        }
    )*};
}

forward_observer!(&mut T, Box<T>);

/// Run an instantiated system from its start to its stop time with the experiment's
/// algorithm, handing every result row to the observers as it is reached: the steppable
/// [`Simulation`] started, advanced to the stop time and finished. A failure is reported with
/// the time it happened; every row up to it has been delivered.
pub fn run(exec: &mut Execution, observers: &mut [&mut dyn Observer]) -> Result<RunStatistics> {
    run_with_scenario(exec, None, observers)
}

/// [`run`] playing a scenario's events (checked against the system by
/// [`ScenarioPlayer::new`]); the events that took effect are in the statistics.
pub fn run_with_scenario(
    exec: &mut Execution,
    scenario: Option<ScenarioPlayer>,
    observers: &mut [&mut dyn Observer],
) -> Result<RunStatistics> {
    let mut simulation = Simulation::start(exec, observers)?;
    if let Some(player) = scenario {
        simulation.play(player)?;
    }
    let stop = simulation.grid().stop;
    simulation.advance_to(stop, observers)?;
    simulation.finish(observers)
}
