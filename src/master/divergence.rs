//! Noticing that a co-simulation diverged, so that the run stops with a message instead of
//! grinding on while an FMU's integrator chases values that grow without bound.
//!
//! Three detectors, all on values the master has read anyway (no extra FMI call, no
//! allocation in the step loop):
//!
//! - **Non-finite values**: a NaN or infinite coupling value or recorded value ends the run
//!   (`execution::non_finite`, `run::check_finite`), unless the run allows them.
//! - **The divergence limit** (`Experiment::divergence_limit`, `--divergence-limit`,
//!   `experiment.divergenceLimit`): a magnitude no coupling value, constraint multiplier or
//!   recorded Float value may exceed, checked by the run loop after every accepted macro step
//!   and at every output point. There is no default bound: any absolute default breaks some
//!   legitimate model (a power plant's energy in J, a pressure in Pa, an orbit in m), and the
//!   FMUs' `nominal` attributes cannot set one either, since most tools leave them at 1 for
//!   exactly such variables. Without a bound, the detectors below and the non-finite check stop
//!   the diverging runs of the papers' cases (an unstable linear coupling grows geometrically and
//!   overflows within a bounded number of steps).
//! - **Correctors that do not converge**: the index-1 constraint coupling's Newton on the
//!   multiplier parameters (the residual after the corrector compared with the interface
//!   accelerations, [`constraint_diverged`]), the Baumgarte multipliers (the position gap
//!   compared with the mechanism's extent, [`constraint_drifted`]), the implicit
//!   corrector (a macro step whose corrector does not converge even when split
//!   [`MAX_IMPLICIT_SPLITS`] times) and the algebraic-loop solver (a residual that grows
//!   [`LOOP_GROWTH_ITERATIONS`] iterations in a row). Step control stops at its smallest step.

use super::execution::Execution;
use super::record::{Cell, Row};
use crate::{Error, Result};

/// What a user can do about a diverging co-simulation, appended to every message.
pub const REMEDY: &str = "try a smaller macro step (--step-size), a lower extrapolation or \
     multiplier-polynomial order, or another algorithm";

/// How often a fixed-step implicit macro step whose corrector does not converge is split into
/// four: after 5 splits (1024 sub-steps of H / 1024) the co-simulation counts as diverged.
pub const MAX_IMPLICIT_SPLITS: u32 = 5;

/// Newton or fixed-point iterations of an algebraic loop whose largest residual grew every
/// time (each by at least [`LOOP_GROWTH_FACTOR`]): the iteration diverges.
pub const LOOP_GROWTH_ITERATIONS: u32 = 4;

/// The growth per iteration that counts for [`LOOP_GROWTH_ITERATIONS`].
pub const LOOP_GROWTH_FACTOR: f64 = 2.0;

/// The largest constraint residual after the corrector, as a fraction of the interface
/// accelerations, that still counts as a constraint that holds. The residuals are scaled to
/// accelerations (`g / H^2`, `g' / H`, `g''`); where the constraint coupling works they are
/// orders of magnitude below the accelerations (the double pendulum at H = 1e-2 s: at most
/// 5e-6 of them), while a diverging run passes 10 % a few macro steps before the bodies spin
/// out of control (at H = 3.6e-2 s: 5.7e-3, then 0.49 two steps later).
pub const CONSTRAINT_RESIDUAL_FRACTION: f64 = 0.1;

/// A constraint residual (in scaled units, m/s^2 for SI positions) below which a constraint
/// always counts as holding, so that bodies at rest (zero accelerations) never count as
/// diverged for rounding errors.
pub const CONSTRAINT_RESIDUAL_FLOOR: f64 = 1e-6;

/// The position-level gap of a Baumgarte-stabilised constraint, as a fraction of the largest
/// interface position of the run, at which the constrained points count as having come
/// apart. Baumgarte's residual after the step is no corrector residual (the multipliers only
/// damp the drift, and the rigid link's runs that work reach 240 times the accelerations on
/// the scaled levels), but its position gap stays a small fraction of the mechanism where it
/// works (the double pendulum at H = 1e-2 s: below 1e-2 m on 1 m links) and reaches its size
/// where it diverges (at H = 0.1 s: 1.4 m at t = 1 s, 2e4 m at t = 2 s).
pub const CONSTRAINT_DRIFT_FRACTION: f64 = 0.5;

/// Whether a Baumgarte constraint's position gap says the co-simulation diverged, given the
/// largest interface position so far (with the residual floor, so that a mechanism at the
/// origin does not count as diverged for rounding errors).
pub fn constraint_drifted(gap: f64, extent: f64) -> bool {
    gap.is_nan() || gap > CONSTRAINT_DRIFT_FRACTION * extent + CONSTRAINT_RESIDUAL_FLOOR
}

/// Whether a constraint residual after the corrector says the co-simulation diverged, given
/// the largest interface acceleration at the step's end.
pub fn constraint_diverged(residual: f64, acceleration: f64) -> bool {
    let tolerance = CONSTRAINT_RESIDUAL_FRACTION * acceleration + CONSTRAINT_RESIDUAL_FLOOR;
    residual.is_nan() || residual > tolerance
}

/// The error of a diverged co-simulation: `what` happened; the remedy follows.
pub fn diverged(what: impl std::fmt::Display) -> Error {
    Error::Numerics(format!("the co-simulation diverged: {what}; {REMEDY}"))
}

/// A value beyond the divergence limit, named.
fn beyond(name: impl std::fmt::Display, value: f64, limit: f64) -> Error {
    diverged(format_args!(
        "{name} = {value:.6e} exceeds the divergence limit {limit:e} (--divergence-limit, experiment.divergenceLimit)"
    ))
}

/// The first coupling value beyond `limit` (after an accepted macro step), in connection
/// order, on every rank alike.
pub fn check_coupling_values(exec: &Execution, limit: f64) -> Result<()> {
    match exec.first_coupling_value_beyond(limit) {
        None => Ok(()),
        Some((c, value)) => {
            let (from, to) = exec.connection_names(c);
            Err(beyond(
                format_args!("the coupling value {from} -> {to}"),
                value,
                limit,
            ))
        }
    }
}

/// The first named value of `values` beyond `limit` (`name(i)` names value i).
pub fn check_named(values: &[f64], limit: f64, name: impl Fn(usize) -> String) -> Result<()> {
    match values.iter().position(|v| v.abs() > limit) {
        None => Ok(()),
        Some(i) => Err(beyond(name(i), values[i], limit)),
    }
}

/// The first recorded Float value of a result row beyond `limit`.
pub fn check_row(row: &Row, columns: &[String], limit: f64) -> Result<()> {
    for (cell, name) in row.cells.iter().zip(columns) {
        let bad = match cell {
            Cell::Float(x) => (x.abs() > limit).then_some(*x),
            Cell::Floats(v) => v.iter().copied().find(|x| x.abs() > limit),
            _ => None,
        };
        if let Some(x) = bad {
            return Err(beyond(name, x, limit));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constraint_residual_diverges_relative_to_the_accelerations() {
        assert!(!constraint_diverged(1e-12, 10.0));
        assert!(!constraint_diverged(0.9, 10.0));
        assert!(constraint_diverged(1.1, 10.0));
        // At rest: rounding is no divergence, a real residual is.
        assert!(!constraint_diverged(1e-15, 0.0));
        assert!(constraint_diverged(1e-3, 0.0));
        assert!(constraint_diverged(f64::NAN, 1.0));
    }

    #[test]
    fn a_baumgarte_gap_diverges_relative_to_the_mechanism() {
        assert!(!constraint_drifted(1e-2, 1.0));
        assert!(constraint_drifted(0.6, 1.0));
        assert!(!constraint_drifted(1e-12, 0.0));
        assert!(constraint_drifted(f64::NAN, 1.0));
    }
}
