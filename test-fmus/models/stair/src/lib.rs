//! Stair: the Stair of the Modelica Reference FMUs, an Int32 output `counter` that starts at 1
//! and is incremented by a time event at every full second (t = 1, 2, 3, ...).
//!
//! The next event time comes from the counter (`counter` s), not from the time, so a handled
//! event is never found again; the kit lands steps exactly on the event times.

use fmu_kit::{Event, Experiment, Model, Values, Variable};

/// The counter (discrete output).
pub const COUNTER: u32 = 1;

/// The stair.
#[derive(Default)]
pub struct Stair;

impl Model for Stair {
    const NAME: &'static str = "Stair";
    const MODEL_EXCHANGE: bool = true;
    const DESCRIPTION: &'static str = "A counter incremented by a time event every second";
    const HAS_TIME_EVENTS: bool = true;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 10.0,
        step: 0.2,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![Variable::int32(COUNTER, "counter")
            .output()
            .discrete()
            .start(1i32)
            .description("counts the seconds")
            .depends_on(&[])]
    }

    fn evaluate(&self, _v: &mut Values, _time: f64) -> Result<(), String> {
        Ok(())
    }

    /// Nothing is integrated; one internal step per interval between events.
    fn internal_step(&self, _v: &Values) -> f64 {
        1.0
    }

    fn next_time_event(&self, v: &Values, _time: f64) -> Option<f64> {
        Some(f64::from(v.i32(COUNTER)))
    }

    fn event(&self, v: &mut Values, _time: f64, event: &Event) -> Result<(), String> {
        if event.time_event {
            v.set_i32(COUNTER, v.i32(COUNTER).saturating_add(1));
        }
        Ok(())
    }
}

fmu_kit::export_fmu!(Stair);

#[cfg(test)]
mod tests;
