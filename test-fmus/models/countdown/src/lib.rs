//! Countdown: a countdown input clock `tick` the FMU schedules itself: the first tick 0.1 s
//! after initialization, and after the k-th tick the next one (k + 1) * 0.1 s later, so the
//! ticks fall at t_k = 0.1 * k (k + 1) / 2 (0.1, 0.3, 0.6, 1.0, ...). It counts them
//! (`ticks`) and keeps the time of the last one (`last`).

use fmu_kit::{Clock, Experiment, Model, Ticks, Values, Variable};

/// Ticks so far.
pub const TICKS: u32 = 1;
/// Time of the last tick.
pub const LAST: u32 = 2;
/// The countdown clock.
pub const TICK: u32 = 10;
/// The first interval and the growth of each next one (s).
pub const BASE: f64 = 0.1;

/// The countdown.
#[derive(Default)]
pub struct Countdown;

impl Model for Countdown {
    const NAME: &'static str = "Countdown";
    const DESCRIPTION: &'static str = "A countdown clock the FMU schedules itself";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 2.0,
        step: 0.05,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::int32(TICKS, "ticks")
                .output()
                .discrete()
                .start(0i32)
                .depends_on(&[]),
            Variable::float64(LAST, "last")
                .output()
                .discrete()
                .start(0.0)
                .depends_on(&[]),
        ]
    }

    fn clocks(&self) -> Vec<Clock> {
        vec![Clock::countdown(TICK, "tick", BASE).description("scheduled by the FMU")]
    }

    fn evaluate(&self, _v: &mut Values, _time: f64) -> Result<(), String> {
        Ok(())
    }

    fn clock_tick(&self, v: &mut Values, time: f64, ticks: &mut Ticks<'_>) -> Result<(), String> {
        if ticks.active(TICK) {
            let k = v.i32(TICKS).saturating_add(1);
            v.set_i32(TICKS, k);
            v.set_f64(LAST, time);
            ticks.schedule(TICK, BASE * f64::from(k + 1))?;
        }
        Ok(())
    }
}

fmu_kit::export_fmu!(Countdown);
