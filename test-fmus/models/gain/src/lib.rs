//! Gain: `y = k u`, one Float64 input and one output with direct feedthrough (default k = 1):
//! the cheapest FMU a coupled chain can be built of, for measuring what a master itself costs
//! per step (`benches/peers/steps.py`). The parameter `cost` makes every step busy for that
//! many seconds (default 0), standing in for an expensive model where a benchmark needs one
//! (parallel stepping).

use std::time::{Duration, Instant};

use fmu_kit::{Experiment, Model, Values, Variable};

/// Input.
pub const U: u32 = 1;
/// Output.
pub const Y: u32 = 2;
/// Gain.
pub const K: u32 = 3;
/// Busy time per step (s).
pub const COST: u32 = 4;

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
        ]
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        v.set_f64(Y, v.f64(K) * v.f64(U));
        Ok(())
    }

    fn step_work(&self, v: &Values) {
        let cost = v.f64(COST);
        if cost > 0.0 && cost.is_finite() {
            // Spin rather than sleep: the step occupies a core, as a model's computation would.
            let until = Instant::now() + Duration::from_secs_f64(cost.min(1.0));
            while Instant::now() < until {
                std::hint::spin_loop();
            }
        }
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        (of == Y && wrt == U).then(|| v.f64(K))
    }
}

fmu_kit::export_fmu!(Gain);
