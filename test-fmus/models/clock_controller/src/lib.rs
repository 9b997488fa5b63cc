//! ClockController: a discrete controller sampled by a periodic input clock `sample` (fixed
//! interval 0.1 s). At each sample at time t it counts the sample (`samples`), computes its
//! clocked output `y = gain * t + samples` and raises its triggered output clock `ready`, which
//! clocks `y`.
//!
//! The importer ticks `sample` at t = 0, 0.1, 0.2, ... ; after k ticks `samples` = k.
//!
//! With `alarm_at` >= 0 it also raises the output clock `alarm` at that time, inside a step
//! (a time event: with Event Mode the step returns early there): an importer that ticks clocks
//! at communication points only has to refuse it.

use fmu_kit::{Clock, Event, Experiment, IntervalVariability, Model, Ticks, Values, Variable};

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
/// When to raise `alarm` (parameter; negative: never).
pub const ALARM_AT: u32 = 4;
/// Whether the alarm went off (discrete local: the time event comes from it, not from time).
pub const ALARMED: u32 = 5;
/// An output clock raised at `alarm_at`, inside a step.
pub const ALARM: u32 = 12;
/// The interval of `sample` (s).
pub const INTERVAL: f64 = 0.1;

/// The controller.
#[derive(Default)]
pub struct ClockController;

impl Model for ClockController {
    const NAME: &'static str = "ClockController";
    const DESCRIPTION: &'static str =
        "A controller sampled by a periodic input clock, with a clocked output";
    const HAS_TIME_EVENTS: bool = true;
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
            Variable::float64(ALARM_AT, "alarm_at")
                .parameter()
                .start(-1.0)
                .description("time of the alarm clock (negative: never)"),
            Variable::boolean(ALARMED, "alarmed")
                .local()
                .discrete()
                .start(false),
        ]
    }

    fn clocks(&self) -> Vec<Clock> {
        vec![
            Clock::periodic(SAMPLE, "sample", IntervalVariability::Fixed, INTERVAL)
                .description("the sampling clock"),
            Clock::triggered_output(READY, "ready").description("raised at each sample"),
            Clock::triggered_output(ALARM, "alarm").description("raised at alarm_at"),
        ]
    }

    fn evaluate(&self, _v: &mut Values, _time: f64) -> Result<(), String> {
        Ok(())
    }

    fn next_time_event(&self, v: &Values, _time: f64) -> Option<f64> {
        let at = v.f64(ALARM_AT);
        (at >= 0.0 && !v.bool(ALARMED)).then_some(at)
    }

    fn event(&self, v: &mut Values, _time: f64, event: &Event) -> Result<(), String> {
        if event.time_event {
            v.set_bool(ALARMED, true);
        }
        Ok(())
    }

    fn clocks_at_event(&self, _v: &Values, _time: f64, event: &Event) -> Vec<u32> {
        if event.time_event {
            vec![ALARM]
        } else {
            Vec::new()
        }
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
