//! Gain: `y = k u`, one Float64 input and one output with direct feedthrough (default k = 1):
//! the cheapest FMU a coupled chain can be built of, for measuring what a master itself costs
//! per step (`benches/peers/steps.py`). The parameter `cost` makes every step busy for that
//! many seconds (default 0), standing in for an expensive model where a benchmark needs one
//! (parallel stepping). With `slow_every` = N > 0 (default 0: off), every Nth step (the steps
//! from t = (N-1) h, (2N-1) h, ... with h the step's size) is busy for `slow_cost` seconds
//! instead: an occasional slow step, for testing real-time pacing.

use std::time::{Duration, Instant};

use fmu_kit::{Experiment, Model, StepFailure, Values, Variable};

/// Input.
pub const U: u32 = 1;
/// Output.
pub const Y: u32 = 2;
/// Gain.
pub const K: u32 = 3;
/// Busy time per step (s).
pub const COST: u32 = 4;
/// Every how many steps one is slow (0: none).
pub const SLOW_EVERY: u32 = 5;
/// Busy time of a slow step (s).
pub const SLOW_COST: u32 = 6;

/// Spin (rather than sleep: the step occupies a core, as a model's computation would) for
/// `cost` seconds, at most one.
fn busy(cost: f64) {
    if cost > 0.0 && cost.is_finite() {
        let until = Instant::now() + Duration::from_secs_f64(cost.min(1.0));
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// The gain block.
#[derive(Default)]
pub struct Gain;

impl Model for Gain {
    const NAME: &'static str = "Gain";
    const DESCRIPTION: &'static str = "Minimal feedthrough y = k u";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 1.0,
        step: 0.1,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(U, "u").input().start(0.0),
            Variable::float64(Y, "y")
                .output()
                .description("k u")
                .depends_on(&[U]),
            Variable::float64(K, "k").parameter().start(1.0),
            Variable::float64(COST, "cost")
                .parameter()
                .start(0.0)
                .description("busy time per step")
                .unit("s"),
            Variable::int32(SLOW_EVERY, "slow_every")
                .parameter()
                .start(0)
                .description("every how many steps one takes slow_cost instead of cost (0: none)"),
            Variable::float64(SLOW_COST, "slow_cost")
                .parameter()
                .start(0.0)
                .description("busy time of a slow step")
                .unit("s"),
        ]
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        v.set_f64(Y, v.f64(K) * v.f64(U));
        Ok(())
    }

    fn step_work(&self, v: &Values) {
        if v.i32(SLOW_EVERY) <= 0 {
            busy(v.f64(COST));
        }
    }

    // With slow steps the work is done here: this hook, unlike `step_work`, sees the step's
    // times, and a step's index follows from them (the model keeps no counter, which would
    // go wrong when a master repeats a step from a saved state).
    fn step_failure(&self, v: &Values, t: f64, t_end: f64) -> Option<StepFailure> {
        let every = v.i32(SLOW_EVERY);
        let h = t_end - t;
        if every > 0 && h > 0.0 {
            let index = (t / h).round() as i64;
            let slow = (index + 1) % i64::from(every) == 0;
            busy(if slow { v.f64(SLOW_COST) } else { v.f64(COST) });
        }
        None
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        (of == Y && wrt == U).then(|| v.f64(K))
    }
}

fmu_kit::export_fmu!(Gain);
