//! The trait every master algorithm implements, and the choice of algorithm for an experiment.
//!
//! An algorithm only advances the system: the run loop (`run.rs`) owns the output grid,
//! termination requests, errors, statistics and the observers.

use super::control::Controlled;
use super::execution::Execution;
use super::{RunStatistics, TimeGrid};
use crate::settings::Algorithm;
use crate::Result;

/// What one attempt of a macro step came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The system is at the step's end, its coupling values consistent.
    Accepted,
    /// The system is back at the step's start; the algorithm proposes another step.
    Rejected,
}

/// A master algorithm: advances an initialized system one macro step at a time.
pub trait MasterAlgorithm {
    /// Before initialization: resolve the algorithm's names against the system.
    fn prepare(&mut self, _exec: &mut Execution) -> Result<()> {
        Ok(())
    }

    /// After initialization: the algorithm's own consistent state at the start time.
    fn start(&mut self, _exec: &mut Execution) -> Result<()> {
        Ok(())
    }

    /// The macro step to try from the current time, before the loop shortens it to land on
    /// the next output point and the stop time. Fixed steps follow the time grid.
    fn proposed_step(&mut self, exec: &Execution, grid: &TimeGrid) -> f64 {
        grid.next_point(exec.time, grid.step) - exec.time
    }

    /// Attempt the macro step of size `h` from `exec.time`.
    fn attempt(&mut self, exec: &mut Execution, h: f64) -> Result<Outcome>;

    /// Whether `attempt` may reject a step (step control): a simulation landing on a time
    /// then tries the step it would take first, so that its rejections are the batch run's.
    fn may_reject(&self) -> bool {
        false
    }

    /// Whether a macro step that passes a simulation's target is taken in parts
    /// ([`Execution::step_part`]) rather than shortened to end there: the coupling then stays
    /// the one of a run without that target.
    fn steps_in_parts(&self, _exec: &Execution) -> bool {
        false
    }

    /// After an accepted macro step: the first of the algorithm's own coupling values (e.g.
    /// constraint multipliers) beyond the divergence `limit`, as an error naming it.
    fn check_divergence(&self, _limit: f64) -> Result<()> {
        Ok(())
    }

    /// Add the algorithm's own figures to the run's statistics.
    fn finish(&mut self, _stats: &mut RunStatistics) {}

    /// The algorithm's own state between macro steps (step controller, multipliers, ...), as
    /// bytes for a snapshot of the whole simulation. Stateless algorithms save nothing.
    fn save(&self) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }

    /// Back to a state made by `save` of the same algorithm on the same system.
    fn restore(&mut self, _saved: &[u8]) -> Result<()> {
        Ok(())
    }
}

/// Serialise an algorithm's state for [`MasterAlgorithm::save`].
pub(crate) fn save_state<T: serde::Serialize>(state: &T) -> Result<Vec<u8>> {
    postcard::to_allocvec(state)
        .map_err(|e| crate::Error::Internal(format!("saving the algorithm's state: {e}")))
}

/// Read an algorithm's state saved by [`save_state`].
pub(crate) fn restore_state<T: serde::de::DeserializeOwned>(saved: &[u8]) -> Result<T> {
    postcard::from_bytes(saved).map_err(|e| {
        crate::Error::Usage(format!(
            "a snapshot whose algorithm state does not fit this simulation's algorithm: {e}"
        ))
    })
}

/// The algorithm the experiment asks for, with its settings.
pub fn for_experiment(algorithm: &Algorithm) -> Box<dyn MasterAlgorithm + Send> {
    match algorithm {
        Algorithm::Constraint(coupling) => Box::new(super::constraint::ConstraintAlgorithm::new(
            coupling.clone(),
        )),
        Algorithm::Rim(settings) => Box::new(super::rim::RimAlgorithm::new(settings.clone())),
        _ => match algorithm.control() {
            Some(control) => Box::new(Controlled::new(
                control.clone(),
                algorithm.corrector().copied(),
                algorithm.extrapolation_order(),
            )),
            None => Box::new(FixedStep),
        },
    }
}

/// Jacobi, Gauss-Seidel or implicit on the fixed time grid (`Execution::step`).
pub struct FixedStep;

impl MasterAlgorithm for FixedStep {
    fn attempt(&mut self, exec: &mut Execution, h: f64) -> Result<Outcome> {
        exec.step(h)?;
        Ok(Outcome::Accepted)
    }

    fn steps_in_parts(&self, exec: &Execution) -> bool {
        exec.steps_in_parts()
    }
}
