//! An FMI 3 Scheduled Execution FMU as a co-simulation [`Slave`]: cosimo is the scheduler
//! that activates its model partitions (`fmi3ActivateModelPartition`), one at a time, on the
//! instance's own thread, so a run is deterministic.
//!
//! - `exit_initialization_mode` runs the activations due at the start time; `do_step(t, h)`
//!   runs every activation due in (t, t + h], in time order and at equal times in priority
//!   order ([`schedule`]). The values read at a communication point T are those after every
//!   activation up to T.
//! - Periodic input clocks tick from their interval (the model description's, else the
//!   FMU's at the start); countdown and changing clocks when the FMU reports a new interval:
//!   after an activation in which it called `clockUpdate`, cosimo reads its output clocks
//!   (`fmi3GetClock`) and those intervals (`fmi3GetIntervalDecimal`). An interval of 0
//!   activates the partition at the same time, after the more urgent ones.
//! - Triggered input clocks tick in Event Mode, like a Co-Simulation FMU's
//!   (`crate::master::clocks`): `set_clock` schedules their partition at the current time and
//!   the event iteration runs it. Such a tick at T runs after the partitions of the FMU's own
//!   clocks at T, whatever the priorities.
//! - Output clocks raised in an activation stay raised until `get_clock` reads them.
//! - `lockPreemption` / `unlockPreemption` only check that an activation pairs them: nothing
//!   preempts a partition here.
//! - The FMU's state is not saved (algorithms that roll back refuse such a component).

pub mod schedule;

use std::sync::Arc;

use super::description::{ValueReference, VariableType};
use super::instance::Fmi3Instance;
use super::slave::{
    DiscreteStatesUpdate, IntervalQualifier, PolynomialInputMode, Slave, SlaveState, StateId,
    StepResult,
};
use crate::error::{Error, Result};
use schedule::{Schedule, Timing};

/// A Scheduled Execution instance and its schedule.
pub struct ScheduledSlave {
    inner: Fmi3Instance,
    schedule: Schedule,
    /// Output clocks (value references) and whether each was raised since last read.
    outputs: Vec<(ValueReference, bool)>,
    /// Ticks of each output clock so far.
    output_ticks: Vec<u64>,
    /// The time the instance reached (the last activation or communication point).
    time: f64,
    /// In cosimo's Event Mode (ticks of triggered input clocks).
    event_mode: bool,
    /// Every activation so far, in order, as (time, clock value reference); the first
    /// [`LOG_LIMIT`] are kept.
    log: Vec<(f64, ValueReference)>,
}

/// The most activations kept in [`ScheduledSlave::activations`].
const LOG_LIMIT: usize = 100_000;

impl ScheduledSlave {
    /// Wrap an instance made with `fmi3InstantiateScheduledExecution`.
    pub fn new(inner: Fmi3Instance) -> Result<ScheduledSlave> {
        let description = Arc::clone(inner.description());
        let schedule = Schedule::new(&description).map_err(|message| Error::Unsupported {
            instance: inner.name().to_string(),
            message,
        })?;
        let outputs: Vec<(ValueReference, bool)> = description
            .variables
            .iter()
            .filter(|v| {
                v.var_type == VariableType::Clock
                    && v.causality == crate::fmu::description::Causality::Output
            })
            .map(|v| (v.value_reference, false))
            .collect();
        Ok(ScheduledSlave {
            output_ticks: vec![0; outputs.len()],
            inner,
            schedule,
            outputs,
            time: 0.0,
            event_mode: false,
            log: Vec::new(),
        })
    }

    /// The activations so far, as (time, input clock value reference), in the order they ran.
    pub fn activations(&self) -> &[(f64, ValueReference)] {
        &self.log
    }

    /// Ticks so far of the output clock `vr` (as cosimo read them after `clockUpdate`).
    pub fn output_ticks(&self, vr: ValueReference) -> u64 {
        self.outputs
            .iter()
            .position(|(o, _)| *o == vr)
            .map_or(0, |k| self.output_ticks[k])
    }

    fn tolerance(time: f64) -> f64 {
        1e-9 * (1.0 + time.abs())
    }

    /// Run every activation due by `until`, most urgent first.
    fn run_until(&mut self, until: f64) -> Result<()> {
        let tolerance = Self::tolerance(until);
        while let Some((due, k)) = self.schedule.next_due(until, tolerance) {
            // A countdown reported for a time already passed runs now (never back in time).
            let time = due.max(self.time);
            let vr = self.schedule.partitions[k].vr;
            self.schedule.ran(k);
            let updated = self.inner.activate_model_partition(vr, time)?;
            self.time = time;
            if self.log.len() < LOG_LIMIT {
                self.log.push((time, vr));
            }
            if updated {
                self.read_clocks(time)?;
            }
        }
        Ok(())
    }

    /// After `clockUpdate`: which output clocks ticked, which countdown clocks are due.
    fn read_clocks(&mut self, time: f64) -> Result<()> {
        if !self.outputs.is_empty() {
            let vrs: Vec<ValueReference> = self.outputs.iter().map(|(vr, _)| *vr).collect();
            let mut active = vec![false; vrs.len()];
            self.inner.get_clock(&vrs, &mut active)?;
            for (k, on) in active.into_iter().enumerate() {
                if on {
                    self.outputs[k].1 = true;
                    self.output_ticks[k] += 1;
                }
            }
        }
        self.read_intervals(time)
    }

    /// The intervals of countdown and changing clocks: a changed one is activated that long
    /// after `time`.
    fn read_intervals(&mut self, time: f64) -> Result<()> {
        let reported = self.schedule.reported();
        if reported.is_empty() {
            return Ok(());
        }
        let vrs: Vec<ValueReference> = reported
            .iter()
            .map(|&k| self.schedule.partitions[k].vr)
            .collect();
        let mut intervals = vec![0.0; vrs.len()];
        let mut qualifiers = vec![IntervalQualifier::NotYetKnown; vrs.len()];
        self.inner
            .get_interval_decimal(&vrs, &mut intervals, &mut qualifiers)?;
        for ((&k, interval), qualifier) in reported.iter().zip(intervals).zip(qualifiers) {
            if qualifier != IntervalQualifier::Changed {
                continue;
            }
            if !(interval.is_finite() && interval >= 0.0) {
                return Err(Error::Unsupported {
                    instance: self.inner.name().to_string(),
                    message: format!(
                        "fmi3GetIntervalDecimal: clock \"{}\" got the interval {interval}, which is not a time >= 0",
                        self.schedule.partitions[k].name
                    ),
                });
            }
            self.schedule.at(k, time + interval);
        }
        Ok(())
    }

    /// At the start: the intervals of periodic clocks the model description leaves open and
    /// the first countdowns, then the activations due at `start`.
    fn start(&mut self, start: f64) -> Result<()> {
        self.time = start;
        self.schedule.restart(start);
        for k in self.schedule.unknown_intervals() {
            let vrs = [self.schedule.partitions[k].vr];
            let mut interval = [0.0];
            let mut qualifier = [IntervalQualifier::NotYetKnown];
            self.inner
                .get_interval_decimal(&vrs, &mut interval, &mut qualifier)?;
            if !(interval[0].is_finite() && interval[0] > 0.0) {
                return Err(Error::Unsupported {
                    instance: self.inner.name().to_string(),
                    message: format!(
                        "the periodic clock \"{}\" has no intervalDecimal and fmi3GetIntervalDecimal gave {}: cosimo cannot schedule its partition",
                        self.schedule.partitions[k].name, interval[0]
                    ),
                });
            }
            self.schedule.set_interval(k, interval[0]);
        }
        self.read_intervals(start)?;
        self.run_until(start)
    }

    fn unsupported(&self, what: &str) -> Error {
        Error::Unsupported {
            instance: self.inner.name().to_string(),
            message: format!(
                "{what}: not available for a Scheduled Execution component (cosimo activates its partitions and keeps no FMU state of it)"
            ),
        }
    }
}

macro_rules! delegate {
    ($($get:ident, $set:ident, $ty:ty;)*) => {
        $(
            fn $get(&mut self, vrs: &[ValueReference], values: &mut [$ty]) -> Result<()> {
                self.inner.$get(vrs, values)
            }
            fn $set(&mut self, vrs: &[ValueReference], values: &[$ty]) -> Result<()> {
                self.inner.$set(vrs, values)
            }
        )*
    };
}

impl Slave for ScheduledSlave {
    crate::fmu::slave::forward_slave!(inner:
        name, description, get_interval_decimal, get_string, get_binary,
    );

    fn state(&self) -> SlaveState {
        match self.inner.state() {
            SlaveState::StepMode if self.event_mode => SlaveState::EventMode,
            state => state,
        }
    }
    fn enter_configuration_mode(&mut self) -> Result<()> {
        self.inner.enter_configuration_mode()
    }
    fn exit_configuration_mode(&mut self) -> Result<()> {
        self.inner.exit_configuration_mode()
    }
    fn enter_initialization_mode(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        self.time = start_time;
        self.inner
            .enter_initialization_mode(tolerance, start_time, stop_time)
    }
    fn exit_initialization_mode(&mut self) -> Result<()> {
        self.inner.exit_initialization_mode()?;
        self.start(self.time)
    }
    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        if self.event_mode {
            return Err(Error::Usage(format!(
                "{}: do_step in Event Mode (enter_step_mode first)",
                self.name()
            )));
        }
        let end = current_time + step_size;
        self.run_until(end)?;
        self.time = end;
        Ok(StepResult {
            reached_time: end,
            early_return: false,
            event_handling_needed: false,
            terminate_simulation: false,
        })
    }
    fn enter_event_mode(&mut self) -> Result<()> {
        self.event_mode = true;
        Ok(())
    }
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        self.run_until(self.time)?;
        Ok(DiscreteStatesUpdate::default())
    }
    fn enter_step_mode(&mut self) -> Result<()> {
        self.run_until(self.time)?;
        self.event_mode = false;
        Ok(())
    }
    fn get_clock(&mut self, vrs: &[ValueReference], active: &mut [bool]) -> Result<()> {
        // Ticks set in this instant run before their output clocks are read.
        self.run_until(self.time)?;
        for (vr, on) in vrs.iter().zip(active.iter_mut()) {
            match self.outputs.iter_mut().find(|(o, _)| o == vr) {
                Some((_, raised)) => *on = std::mem::take(raised),
                None => {
                    return Err(Error::Usage(format!(
                        "{}: fmi3GetClock: value reference {vr} is not an output clock",
                        self.name()
                    )))
                }
            }
        }
        Ok(())
    }
    fn set_clock(&mut self, vrs: &[ValueReference], active: &[bool]) -> Result<()> {
        if !self.event_mode {
            return Err(Error::Usage(format!(
                "{}: fmi3SetClock outside Event Mode",
                self.name()
            )));
        }
        for (&vr, &on) in vrs.iter().zip(active) {
            let Some(k) = self.schedule.index(vr) else {
                return Err(Error::Usage(format!(
                    "{}: value reference {vr} is not an input clock",
                    self.name()
                )));
            };
            if self.schedule.partitions[k].timing != Timing::Triggered {
                return Err(Error::Usage(format!(
                    "{}: the clock \"{}\" ticks from its interval, which the FMU's scheduler in cosimo follows; only triggered input clocks of a Scheduled Execution component take ticks from outside",
                    self.name(),
                    self.schedule.partitions[k].name
                )));
            }
            if on {
                self.schedule.at(k, self.time);
            }
        }
        Ok(())
    }
    fn terminate(&mut self) -> Result<()> {
        self.inner.terminate()
    }
    fn reset(&mut self) -> Result<()> {
        self.inner.reset()?;
        self.event_mode = false;
        self.log.clear();
        self.outputs
            .iter_mut()
            .for_each(|(_, raised)| *raised = false);
        self.output_ticks.iter_mut().for_each(|t| *t = 0);
        Ok(())
    }

    delegate! {
        get_float64, set_float64, f64;
        get_float32, set_float32, f32;
        get_int8, set_int8, i8;
        get_uint8, set_uint8, u8;
        get_int16, set_int16, i16;
        get_uint16, set_uint16, u16;
        get_int32, set_int32, i32;
        get_uint32, set_uint32, u32;
        get_int64, set_int64, i64;
        get_uint64, set_uint64, u64;
        get_boolean, set_boolean, bool;
    }
    fn set_string(&mut self, vrs: &[ValueReference], values: &[&str]) -> Result<()> {
        self.inner.set_string(vrs, values)
    }
    fn set_binary(&mut self, vrs: &[ValueReference], values: &[&[u8]]) -> Result<()> {
        self.inner.set_binary(vrs, values)
    }

    fn can_save_state(&self) -> bool {
        false
    }
    fn save_state(&mut self) -> Result<StateId> {
        Err(self.unsupported("saving the FMU state"))
    }
    fn update_state(&mut self, _state: StateId) -> Result<()> {
        Err(self.unsupported("saving the FMU state"))
    }
    fn restore_state(&mut self, _state: StateId) -> Result<()> {
        Err(self.unsupported("restoring the FMU state"))
    }
    fn free_state(&mut self, _state: StateId) -> Result<()> {
        Err(self.unsupported("freeing an FMU state"))
    }
    fn serialize_state(&mut self, _state: StateId) -> Result<Vec<u8>> {
        Err(self.unsupported("serialising the FMU state"))
    }
    fn deserialize_state(&mut self, _bytes: &[u8]) -> Result<StateId> {
        Err(self.unsupported("deserialising an FMU state"))
    }
    fn provides_directional_derivatives(&self) -> bool {
        false
    }
    fn directional_derivative(
        &mut self,
        _unknowns: &[ValueReference],
        _knowns: &[ValueReference],
        _seed: &[f64],
        _sensitivity: &mut [f64],
    ) -> Result<()> {
        Err(self.unsupported("directional derivatives"))
    }
    fn max_output_derivative_order(&self) -> u32 {
        0
    }
    fn get_output_derivatives(
        &mut self,
        _vrs: &[ValueReference],
        _order: u32,
        _values: &mut [f64],
    ) -> Result<()> {
        Err(self.unsupported("output derivatives"))
    }
    fn set_input_polynomial(
        &mut self,
        vrs: &[ValueReference],
        order: usize,
        taylor: &[f64],
    ) -> Result<PolynomialInputMode> {
        if order > 0 {
            return Err(Error::Usage(format!(
                "{}: a Scheduled Execution component's partitions sample their inputs at their activations, which cosimo cannot feed a polynomial to: use extrapolation order 0 for its inputs",
                self.name()
            )));
        }
        self.inner.set_float64(vrs, taylor)?;
        // Held over the step: the partitions inside it all read the value set now.
        Ok(PolynomialInputMode::SubSteps)
    }
    fn call_count(&self) -> u64 {
        self.inner.call_count()
    }
}
