//! HOW a simulation advances in time.
//!
//! A system runs through the one loop of `run` (output grid, termination, errors, statistics,
//! observers), which asks an algorithm (`algorithm::MasterAlgorithm`) to advance it macro step
//! by macro step: fixed steps with `zoh` (Jacobi or Gauss-Seidel, hold or extrapolation) or
//! `implicit`, step control (`control`), `constraint` coupling or the reduced interface model
//! (`rim`). `execution` holds the slaves and coupling values, `loops` solves algebraic loops,
//! `pool` keeps each slave on one thread (`parallel` decides which), `record` turns variables into result rows. `single`
//! still drives one FMU alone with inputs from a table, as fmusim and FMPy do.

pub mod algorithm;
pub mod clocks;
pub mod constraint;
pub mod control;
pub mod divergence;
pub mod exact_sum;
pub mod exchange;
pub mod execution;
pub mod extended;
pub mod implicit;
pub mod inputs;
pub mod loops;
pub mod neighbours;
pub mod parallel;
pub mod polynomial;
pub mod pool;
pub mod record;
pub mod replay;
pub mod rim;
pub mod run;
pub mod scenario;
pub mod simulation;
pub mod stand_in;
pub mod transport;
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
    /// How close two times must be to count as the same point near `t`: a billionth of the
    /// step, or a few units in the last place of `t` where doubles are coarser than that
    /// (long runs: at t = 1024 s a double's spacing already exceeds 1e-13 s).
    pub fn tolerance(&self, t: f64) -> f64 {
        (self.step * 1e-9).max(8.0 * f64::EPSILON * t.abs().max(self.start.abs()))
    }

    /// The next point after `t` on the grid `start + n * interval`, with `n` counted from the
    /// start as an integer (never accumulated), so points stay exact on arbitrarily long runs.
    pub fn next_point(&self, t: f64, interval: f64) -> f64 {
        let x = (t - self.start) / interval;
        // x counts intervals; t itself is only known to a few ulps, which in units of the
        // interval is 8 eps (|t| + |start|) / interval (2e-9 at t = 1024 s with 1e-4 s).
        let slack = 1e-9 + 8.0 * f64::EPSILON * (t.abs() + self.start.abs()) / interval;
        let n = if (x - x.round()).abs() <= slack {
            x.round() + 1.0
        } else {
            x.floor() + 1.0
        };
        self.start + n * interval
    }

    /// The macro step from `t` that would like to take `h`, shortened to the next output point
    /// and the stop time; and whether it ends on the output grid (within the tolerance: a step
    /// point one ulp before an output point is that output point).
    pub fn step_from(&self, t: f64, h: f64, next_output: f64) -> (f64, bool) {
        let h = h.min(next_output - t).min(self.stop - t);
        let end = t + h;
        (
            h,
            (end - next_output).abs() <= self.tolerance(end) || self.at_stop(end),
        )
    }

    /// Whether `t` has reached the stop time.
    pub fn at_stop(&self, t: f64) -> bool {
        t >= self.stop - self.tolerance(self.stop)
    }
}

/// What a run did, for the summary line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStatistics {
    /// Communication steps taken (`do_step` calls that the master scheduled).
    pub steps: u64,
    /// Macro steps that the output grid shortened: the step proposed would have passed an
    /// output point (the stop time's last step and steps cut at an `advance_to` target are not
    /// counted). Non-zero when the output interval is not a multiple of the step.
    pub shortened_for_output: u64,
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
    /// What the integrators of Model Exchange components did (in this process), summed.
    pub integrator: Option<crate::fmu::model_exchange::Statistics>,
    /// Macro-step control statistics, for controlled runs.
    pub control: Option<control::ControlStatistics>,
    /// How a `parallel` run was placed on threads, and why.
    pub parallel: Option<parallel::ParallelPlacement>,
    /// The scenario events that took effect, in order.
    pub scenario: Vec<scenario::AppliedEvent>,
    /// Under mpirun: where each rank's time went (empty in one process).
    pub ranks: Vec<transport::RankTimes>,
    /// Under `mpirun` with `--partition-out`: each component's stepping time over the run
    /// (seconds, on its owner), in system order.
    pub component_seconds: Vec<f64>,
    /// Macro steps taken whole and replayed in parts, because a simulation was advanced to a
    /// point inside them (`replay.rs`).
    pub replayed_steps: u64,
    /// The largest difference of a recorded Float64 value at the end of a replayed step from
    /// the whole step's, relative to its magnitude: how much the FMUs' results depend on where
    /// their steps are cut (round-off for FMUs that integrate a step the same way in parts;
    /// the run goes on from the whole step's states either way).
    pub replay_deviation: f64,
}

impl RunStatistics {
    /// Simulated seconds per wall-clock second.
    pub fn real_time_factor(&self, start: f64) -> f64 {
        (self.end_time - start) / self.wall_seconds.max(1e-12)
    }
}

#[cfg(test)]
mod tests {
    use super::TimeGrid;

    fn grid(start: f64, step: f64) -> TimeGrid {
        TimeGrid {
            start,
            stop: start + 2e6,
            step,
            output_interval: step,
        }
    }

    /// Walk `n` steps from point `k0`, taking each step as the run loop does (t + (next - t)),
    /// and require every point to be exactly start + k h.
    fn walk(g: &TimeGrid, k0: f64, n: u32) {
        let mut t = g.start + k0 * g.step;
        for i in 1..=n {
            let next = g.next_point(t, g.step);
            let h = next - t;
            assert!(h > 0.0, "a zero step at t = {t}");
            t += h;
            let exact = g.start + (k0 + f64::from(i)) * g.step;
            assert_eq!(t, exact, "point {} of the walk from {k0}", i);
        }
    }

    #[test]
    fn long_runs_land_every_point_on_the_grid() {
        // 1e-3 s steps up to 1e6 s (1e9 steps): segments near the start, around the powers of
        // two where doubles coarsen, and at the end; from 0 and from 4096 s.
        for start in [0.0, 4096.0] {
            let g = grid(start, 1e-3);
            for k0 in [0.0, 1_023_990.0, 4_095_990.0, 131_071_990.0, 999_990_000.0] {
                walk(&g, k0, 20_000);
            }
        }
        // The cases: 1e-4 s across 1024 s, 0.01 s across 131072 s.
        walk(&grid(0.0, 1e-4), 10_239_000.0, 2_000);
        walk(&grid(0.0, 1e-2), 13_107_100.0, 200);
    }

    #[test]
    fn a_time_one_ulp_off_a_point_is_that_point() {
        let g = grid(0.0, 1e-4);
        let point: f64 = 10_240_002.0 * 1e-4;
        for t in [point, point.next_up(), point.next_down()] {
            assert_eq!(g.next_point(t, g.step), 10_240_003.0 * 1e-4, "{t}");
        }
    }
}
