//! ClockController: a discrete controller sampled by a periodic input clock `sample` (fixed
//! interval 0.1 s). At each sample at time t it counts the sample (`samples`), computes its
//! clocked output `y = gain * t + samples` and raises its triggered output clock `ready`, which
//! clocks `y`.
//!
//! The importer ticks `sample` at t = 0, 0.1, 0.2, ... ; after k ticks `samples` = k.

use fmu_kit::{Clock, Experiment, IntervalVariability, Model, Ticks, Values, Variable};

/// Gain of the output (parameter).
pub const GAIN: u32 = 1;
/// The clocked output.
pub const Y: u32 = 2;
/// Number of samples taken (discrete output).
pub const SAMPLES: u32 = 3;
/// The periodic input clock.
pub const SAMPLE: u32 = 10;
/// The triggered output clock that clocks `y`.
pub const READY: u32 = 11;
/// The interval of `sample` (s).
pub const INTERVAL: f64 = 0.1;

/// The controller.
#[derive(Default)]
pub struct ClockController;

impl Model for ClockController {
    const NAME: &'static str = "ClockController";
    const DESCRIPTION: &'static str =
        "A controller sampled by a periodic input clock, with a clocked output";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 1.0,
        step: 0.05,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(GAIN, "gain").parameter().start(2.0),
            Variable::float64(Y, "y")
                .output()
                .clocked_by(&[READY])
                .start(0.0)
                .description("gain * (time of the last sample) + samples")
                .depends_on(&[]),
            Variable::int32(SAMPLES, "samples")
                .output()
                .discrete()
                .start(0i32)
                .depends_on(&[]),
        ]
    }

    fn clocks(&self) -> Vec<Clock> {
        vec![
            Clock::periodic(SAMPLE, "sample", IntervalVariability::Fixed, INTERVAL)
                .description("the sampling clock"),
            Clock::triggered_output(READY, "ready").description("raised at each sample"),
        ]
    }

    fn evaluate(&self, _v: &mut Values, _time: f64) -> Result<(), String> {
        Ok(())
    }

    fn clock_tick(&self, v: &mut Values, time: f64, ticks: &mut Ticks<'_>) -> Result<(), String> {
        if ticks.active(SAMPLE) {
            let samples = v.i32(SAMPLES).saturating_add(1);
            v.set_i32(SAMPLES, samples);
            v.set_f64(Y, v.f64(GAIN) * time + f64::from(samples));
            ticks.raise(READY)?;
        }
        Ok(())
    }
}

fmu_kit::export_fmu!(ClockController);
