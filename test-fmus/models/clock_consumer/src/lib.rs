//! ClockConsumer: ticked by a triggered input clock `trigger`; at each tick it takes its
//! clocked input `u` and counts the tick (`count`), holds the value (`held`) and adds it up
//! (`sum`).

use fmu_kit::{Clock, Experiment, Model, Ticks, Values, Variable};

/// The clocked input.
pub const U: u32 = 1;
/// Ticks so far.
pub const COUNT: u32 = 2;
/// `u` at the last tick.
pub const HELD: u32 = 3;
/// Sum of `u` over the ticks.
pub const SUM: u32 = 4;
/// The triggered input clock.
pub const TRIGGER: u32 = 10;

/// The consumer.
#[derive(Default)]
pub struct ClockConsumer;

impl Model for ClockConsumer {
    const NAME: &'static str = "ClockConsumer";
    const DESCRIPTION: &'static str = "A consumer ticked by a triggered input clock";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 1.0,
        step: 0.05,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(U, "u")
                .input()
                .clocked_by(&[TRIGGER])
                .start(0.0),
            Variable::int32(COUNT, "count")
                .output()
                .discrete()
                .start(0i32)
                .depends_on(&[]),
            Variable::float64(HELD, "held")
                .output()
                .discrete()
                .start(0.0)
                .depends_on(&[]),
            Variable::float64(SUM, "sum")
                .output()
                .discrete()
                .start(0.0)
                .depends_on(&[]),
        ]
    }

    fn clocks(&self) -> Vec<Clock> {
        vec![Clock::triggered_input(TRIGGER, "trigger").description("takes u when it ticks")]
    }

    fn evaluate(&self, _v: &mut Values, _time: f64) -> Result<(), String> {
        Ok(())
    }

    fn clock_tick(&self, v: &mut Values, _time: f64, ticks: &mut Ticks<'_>) -> Result<(), String> {
        if ticks.active(TRIGGER) {
            let u = v.f64(U);
            v.set_i32(COUNT, v.i32(COUNT).saturating_add(1));
            v.set_f64(HELD, u);
            v.set_f64(SUM, v.f64(SUM) + u);
        }
        Ok(())
    }
}

fmu_kit::export_fmu!(ClockConsumer);
