//! Macro steps replayed in parts: how a simulation stops inside a macro step of an algorithm
//! that iterates over the whole step (Gauss-Seidel, implicit, step control, constraint
//! coupling, RIM).
//!
//! Those algorithms need every value at the step's end before any component's step is final,
//! so the step cannot simply be cut at an outside target. Instead the simulation takes the
//! whole step as a run without the target would, with every slave's calls recorded
//! ([`Recorder`]); restores the FMU states of the step's start; and replays each slave's
//! recorded calls up to the target ([`Replay::run_to`]), and from there to the next target or
//! the step's end. A recorded step that spans a target is taken in pieces, with the polynomial
//! inputs re-expanded where a piece starts and the slave told the whole step it is part of
//! ([`Slave::set_macro_step`]), as Jacobi's parts are ([`super::execution::Execution`]'s
//! `step_part`). The replay needs no coupling values: the recorded calls carry them. At the
//! step's end the master takes back its state of the whole step.
//!
//! What a slave's state at the step's end came from is the calls after the last restore of
//! its state: a restore to a state saved before the recording (the step's start) empties the
//! log, a restore to one saved during it cuts the log back to where that state was saved.

use std::any::Any;

use serde::{Deserialize, Serialize};

use super::polynomial::shift_taylor;
use crate::fmu::description::ValueReference;
use crate::fmu::slave::{
    forward_slave, DiscreteStatesUpdate, PolynomialInputMode, Slave, StateId, StepResult,
};
use crate::{Error, Result};

/// A slave's call that changes its state, as recorded for a replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Entry {
    Float64(Vec<ValueReference>, Vec<f64>),
    Float32(Vec<ValueReference>, Vec<f32>),
    Int8(Vec<ValueReference>, Vec<i8>),
    UInt8(Vec<ValueReference>, Vec<u8>),
    Int16(Vec<ValueReference>, Vec<i16>),
    UInt16(Vec<ValueReference>, Vec<u16>),
    Int32(Vec<ValueReference>, Vec<i32>),
    UInt32(Vec<ValueReference>, Vec<u32>),
    Int64(Vec<ValueReference>, Vec<i64>),
    UInt64(Vec<ValueReference>, Vec<u64>),
    Boolean(Vec<ValueReference>, Vec<bool>),
    String(Vec<ValueReference>, Vec<String>),
    Binary(Vec<ValueReference>, Vec<Vec<u8>>),
    Clock(Vec<ValueReference>, Vec<bool>),
    Polynomial {
        vrs: Vec<ValueReference>,
        order: usize,
        taylor: Vec<f64>,
    },
    MacroStep(Option<(f64, f64)>),
    Step {
        time: f64,
        size: f64,
    },
    EnterEventMode,
    UpdateDiscreteStates,
    EnterStepMode,
    /// A call that cannot be repeated inside a step (terminate, reset, a mode of the set-up):
    /// the step is not replayed.
    Unreplayable(String),
}

/// What a recording holds: the calls, and where in them each state saved during the recording
/// was taken.
#[derive(Default)]
struct Log {
    entries: Vec<Entry>,
    saved: Vec<(StateId, usize)>,
}

/// A slave whose calls are recorded while a macro step is taken whole for a replay; otherwise
/// it only passes every call on. It wraps a slave the first time a simulation replays a step
/// and stays (a slave cannot be unwrapped from its box), costing one more indirect call.
pub struct Recorder {
    inner: Box<dyn Slave>,
    log: Option<Log>,
}

impl Recorder {
    /// Wrap the slave of `slot` in a recorder, unless it is one already; returns it.
    pub fn of(slot: &mut Box<dyn Slave>) -> Result<&mut Recorder> {
        if slot.call_recorder().is_none() {
            let placeholder = Box::new(super::stand_in::StandIn::new(
                slot.name(),
                slot.description().clone(),
            ));
            let inner = std::mem::replace(slot, placeholder);
            *slot = Box::new(Recorder { inner, log: None });
        }
        let name = slot.name().to_string();
        slot.call_recorder()
            .and_then(|any| any.downcast_mut::<Recorder>())
            .ok_or_else(|| Error::Internal(format!("component \"{name}\": no call recorder")))
    }

    /// Start recording (anything recorded before is dropped).
    pub fn start(&mut self) {
        self.log = Some(Log::default());
    }

    /// Stop recording; the calls that led from the step's start to the slave's state now.
    pub fn stop(&mut self) -> Vec<Entry> {
        self.log.take().map(|log| log.entries).unwrap_or_default()
    }

    /// The slave recorded.
    pub fn inner(&mut self) -> &mut dyn Slave {
        self.inner.as_mut()
    }

    fn record(&mut self, entry: impl FnOnce() -> Entry) {
        if let Some(log) = &mut self.log {
            log.entries.push(entry());
        }
    }

    fn saved(&mut self, id: StateId) {
        if let Some(log) = &mut self.log {
            log.saved.retain(|(saved, _)| *saved != id);
            log.saved.push((id, log.entries.len()));
        }
    }

    fn restored(&mut self, id: StateId) {
        if let Some(log) = &mut self.log {
            let at = log
                .saved
                .iter()
                .find(|(saved, _)| *saved == id)
                .map_or(0, |&(_, at)| at);
            log.entries.truncate(at);
            log.saved.retain(|&(_, s)| s <= at);
        }
    }
}

/// A recorded setter: pass the call on, record its arguments when it succeeded.
macro_rules! recorded_values {
    ($($get:ident, $set:ident, $t:ty, $entry:ident;)*) => {$(
        fn $get(&mut self, vrs: &[ValueReference], values: &mut [$t]) -> Result<()> {
            self.inner.$get(vrs, values)
        }
        fn $set(&mut self, vrs: &[ValueReference], values: &[$t]) -> Result<()> {
            self.inner.$set(vrs, values)?;
            self.record(|| Entry::$entry(vrs.to_vec(), values.to_vec()));
            Ok(())
        }
    )*};
}

impl Slave for Recorder {
    forward_slave!(inner:
        name, description, state, steps_in_background, finish_step, get_clock,
        get_interval_decimal, get_string, get_binary, can_save_state, free_state,
        serialize_state, deserialize_state, provides_directional_derivatives,
        directional_derivative, max_output_derivative_order, get_output_derivatives,
        call_count, integrator_statistics,
    );
    fn enter_configuration_mode(&mut self) -> Result<()> {
        self.record(|| Entry::Unreplayable("fmi3EnterConfigurationMode".into()));
        self.inner.enter_configuration_mode()
    }
    fn exit_configuration_mode(&mut self) -> Result<()> {
        self.record(|| Entry::Unreplayable("fmi3ExitConfigurationMode".into()));
        self.inner.exit_configuration_mode()
    }
    fn enter_initialization_mode(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()> {
        self.record(|| Entry::Unreplayable("EnterInitializationMode".into()));
        self.inner
            .enter_initialization_mode(tolerance, start_time, stop_time)
    }
    fn exit_initialization_mode(&mut self) -> Result<()> {
        self.record(|| Entry::Unreplayable("ExitInitializationMode".into()));
        self.inner.exit_initialization_mode()
    }
    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        self.record(|| Entry::Step {
            time: current_time,
            size: step_size,
        });
        self.inner.do_step(current_time, step_size)
    }
    fn start_step(&mut self, current_time: f64, step_size: f64) -> Result<()> {
        self.record(|| Entry::Step {
            time: current_time,
            size: step_size,
        });
        self.inner.start_step(current_time, step_size)
    }
    fn enter_event_mode(&mut self) -> Result<()> {
        self.record(|| Entry::EnterEventMode);
        self.inner.enter_event_mode()
    }
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        self.record(|| Entry::UpdateDiscreteStates);
        self.inner.update_discrete_states()
    }
    fn enter_step_mode(&mut self) -> Result<()> {
        self.record(|| Entry::EnterStepMode);
        self.inner.enter_step_mode()
    }
    fn set_clock(&mut self, vrs: &[ValueReference], active: &[bool]) -> Result<()> {
        self.inner.set_clock(vrs, active)?;
        self.record(|| Entry::Clock(vrs.to_vec(), active.to_vec()));
        Ok(())
    }
    fn terminate(&mut self) -> Result<()> {
        self.record(|| Entry::Unreplayable("Terminate".into()));
        self.inner.terminate()
    }
    fn reset(&mut self) -> Result<()> {
        self.record(|| Entry::Unreplayable("Reset".into()));
        self.inner.reset()
    }

    recorded_values! {
        get_float64, set_float64, f64, Float64;
        get_float32, set_float32, f32, Float32;
        get_int8, set_int8, i8, Int8;
        get_uint8, set_uint8, u8, UInt8;
        get_int16, set_int16, i16, Int16;
        get_uint16, set_uint16, u16, UInt16;
        get_int32, set_int32, i32, Int32;
        get_uint32, set_uint32, u32, UInt32;
        get_int64, set_int64, i64, Int64;
        get_uint64, set_uint64, u64, UInt64;
        get_boolean, set_boolean, bool, Boolean;
    }

    fn set_string(&mut self, vrs: &[ValueReference], values: &[&str]) -> Result<()> {
        self.inner.set_string(vrs, values)?;
        self.record(|| {
            Entry::String(
                vrs.to_vec(),
                values.iter().map(|s| (*s).to_string()).collect(),
            )
        });
        Ok(())
    }
    fn set_binary(&mut self, vrs: &[ValueReference], values: &[&[u8]]) -> Result<()> {
        self.inner.set_binary(vrs, values)?;
        self.record(|| Entry::Binary(vrs.to_vec(), values.iter().map(|b| b.to_vec()).collect()));
        Ok(())
    }
    fn save_state(&mut self) -> Result<StateId> {
        let id = self.inner.save_state()?;
        self.saved(id);
        Ok(id)
    }
    fn update_state(&mut self, state: StateId) -> Result<()> {
        self.inner.update_state(state)?;
        self.saved(state);
        Ok(())
    }
    fn restore_state(&mut self, state: StateId) -> Result<()> {
        self.inner.restore_state(state)?;
        self.restored(state);
        Ok(())
    }
    fn set_input_polynomial(
        &mut self,
        vrs: &[ValueReference],
        order: usize,
        taylor: &[f64],
    ) -> Result<PolynomialInputMode> {
        let mode = self.inner.set_input_polynomial(vrs, order, taylor)?;
        self.record(|| Entry::Polynomial {
            vrs: vrs.to_vec(),
            order,
            taylor: taylor.to_vec(),
        });
        Ok(mode)
    }
    fn set_macro_step(&mut self, span: Option<(f64, f64)>) -> Result<()> {
        self.inner.set_macro_step(span)?;
        self.record(|| Entry::MacroStep(span));
        Ok(())
    }
    fn call_recorder(&mut self) -> Option<&mut dyn Any> {
        Some(self)
    }
}

/// One slave's recorded calls of a macro step, replayed part by part.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Replay {
    entries: Vec<Entry>,
    /// The next call to make.
    next: usize,
    /// Where the recorded step `entries[next]` was cut, when it was.
    reached: Option<f64>,
}

impl Replay {
    /// The replay of `entries`, recorded by a [`Recorder`]; refused where a call cannot be
    /// made again inside a step.
    pub fn new(component: &str, entries: Vec<Entry>) -> Result<Replay> {
        if let Some(Entry::Unreplayable(call)) =
            entries.iter().find(|e| matches!(e, Entry::Unreplayable(_)))
        {
            return Err(Error::Internal(format!(
                "component \"{component}\" was called {call} inside a macro step, which cannot be replayed in parts"
            )));
        }
        Ok(Replay {
            entries,
            next: 0,
            reached: None,
        })
    }

    /// Make the recorded calls up to time `to`; a recorded step that spans `to` is taken up
    /// to it and goes on from there at the next call. `eps`: how close two times must be to be
    /// the same point.
    pub fn run_to(&mut self, slave: &mut dyn Slave, to: f64, eps: f64) -> Result<()> {
        while let Some(entry) = self.entries.get(self.next) {
            let Entry::Step { time, size } = *entry else {
                apply(slave, entry)?;
                self.next += 1;
                continue;
            };
            let end = time + size;
            let from = self.reached.unwrap_or(time);
            if from >= to - eps {
                return Ok(());
            }
            if self.reached.is_none() && end <= to + eps {
                slave.do_step(time, size)?;
                self.next += 1;
                continue;
            }
            // A piece of the recorded step: its inputs as they were when it began.
            if from > time {
                self.reexpand_polynomials(slave, from - time)?;
            }
            let stop = if end <= to + eps { end } else { to };
            slave.set_macro_step(Some((time, end)))?;
            let result = slave.do_step(from, stop - from);
            slave.set_macro_step(None)?;
            let result = result?;
            let returned_early = result.early_return && result.reached_time < stop - eps;
            if stop == end || returned_early {
                // The recorded step ended here too (an early return is part of the record:
                // the event calls and the step from there follow it).
                self.next += 1;
                self.reached = None;
            } else {
                self.reached = Some(stop);
                return Ok(());
            }
        }
        Ok(())
    }

    /// Before a piece of a cut step: the polynomial inputs set for that step, re-expanded
    /// `shift` later than they were set.
    fn reexpand_polynomials(&self, slave: &mut dyn Slave, shift: f64) -> Result<()> {
        let since = self.entries[..self.next]
            .iter()
            .rposition(|e| matches!(e, Entry::Step { .. }))
            .map_or(0, |k| k + 1);
        for entry in &self.entries[since..self.next] {
            if let Entry::Polynomial { vrs, order, taylor } = entry {
                let mut shifted = taylor.clone();
                if *order > 0 {
                    for coefficients in shifted.chunks_mut(order + 1) {
                        shift_taylor(coefficients, shift);
                    }
                }
                slave.set_input_polynomial(vrs, *order, &shifted)?;
            }
        }
        Ok(())
    }
}

/// Make one recorded call that is not a step.
fn apply(slave: &mut dyn Slave, entry: &Entry) -> Result<()> {
    match entry {
        Entry::Float64(vrs, v) => slave.set_float64(vrs, v),
        Entry::Float32(vrs, v) => slave.set_float32(vrs, v),
        Entry::Int8(vrs, v) => slave.set_int8(vrs, v),
        Entry::UInt8(vrs, v) => slave.set_uint8(vrs, v),
        Entry::Int16(vrs, v) => slave.set_int16(vrs, v),
        Entry::UInt16(vrs, v) => slave.set_uint16(vrs, v),
        Entry::Int32(vrs, v) => slave.set_int32(vrs, v),
        Entry::UInt32(vrs, v) => slave.set_uint32(vrs, v),
        Entry::Int64(vrs, v) => slave.set_int64(vrs, v),
        Entry::UInt64(vrs, v) => slave.set_uint64(vrs, v),
        Entry::Boolean(vrs, v) => slave.set_boolean(vrs, v),
        Entry::String(vrs, v) => {
            let values: Vec<&str> = v.iter().map(String::as_str).collect();
            slave.set_string(vrs, &values)
        }
        Entry::Binary(vrs, v) => {
            let values: Vec<&[u8]> = v.iter().map(Vec::as_slice).collect();
            slave.set_binary(vrs, &values)
        }
        Entry::Clock(vrs, active) => slave.set_clock(vrs, active),
        Entry::Polynomial { vrs, order, taylor } => {
            slave.set_input_polynomial(vrs, *order, taylor).map(|_| ())
        }
        Entry::MacroStep(span) => slave.set_macro_step(*span),
        Entry::EnterEventMode => slave.enter_event_mode(),
        Entry::UpdateDiscreteStates => slave.update_discrete_states().map(|_| ()),
        Entry::EnterStepMode => slave.enter_step_mode(),
        Entry::Step { time, size } => slave.do_step(*time, *size).map(|_| ()),
        Entry::Unreplayable(call) => Err(Error::Internal(format!(
            "{}: {call} cannot be replayed",
            slave.name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::master::stand_in::StandIn;

    /// A recorder around a stand-in (which takes every call), recording.
    fn recording() -> Box<dyn Slave> {
        let xml = r#"<fmiModelDescription fmiVersion="2.0" modelName="m" guid="{0}">
            <CoSimulation modelIdentifier="m" canGetAndSetFMUstate="true"/>
            <ModelVariables/><ModelStructure/></fmiModelDescription>"#;
        let description = crate::fmu::description::from_str(xml, std::path::Path::new("m.xml"))
            .expect("the description reads");
        let mut slot: Box<dyn Slave> = Box::new(StandIn::new("m", Arc::new(description)));
        Recorder::of(&mut slot).expect("wraps").start();
        slot
    }

    fn stop(slot: &mut Box<dyn Slave>) -> Vec<Entry> {
        Recorder::of(slot).expect("is a recorder").stop()
    }

    fn step(time: f64, size: f64) -> Entry {
        Entry::Step { time, size }
    }

    #[test]
    fn a_restore_cuts_the_log_back_to_where_its_state_was_saved() {
        let mut slave = recording();
        slave.set_float64(&[1], &[2.0]).expect("sets");
        slave.do_step(0.0, 1.0).expect("steps");
        let middle = slave.save_state().expect("saves");
        slave.set_float64(&[1], &[3.0]).expect("sets");
        slave.do_step(1.0, 1.0).expect("steps");
        slave.restore_state(middle).expect("restores");
        slave.get_float64(&[1], &mut [0.0]).expect("gets");
        assert_eq!(
            stop(&mut slave),
            vec![Entry::Float64(vec![1], vec![2.0]), step(0.0, 1.0)],
            "back to the state saved after the first step; getters are not recorded"
        );
        // A state saved before the recording is the step's start: the log empties.
        let mut slave = recording();
        slave.do_step(0.0, 1.0).expect("steps");
        slave.restore_state(StateId(7)).expect("restores");
        slave.set_boolean(&[4], &[true]).expect("sets");
        assert_eq!(stop(&mut slave), vec![Entry::Boolean(vec![4], vec![true])]);
    }

    #[test]
    fn a_recorded_step_is_replayed_in_pieces_up_to_each_target() {
        let taylor = vec![1.0, 2.0, 4.0];
        let entries = vec![
            Entry::Polynomial {
                vrs: vec![5],
                order: 2,
                taylor: taylor.clone(),
            },
            step(0.0, 1.0),
            Entry::Float64(vec![1], vec![9.0]),
            step(1.0, 1.0),
        ];
        let mut replay = Replay::new("m", entries.clone()).expect("replayable");
        let mut slave = recording();
        replay.run_to(slave.as_mut(), 0.25, 1e-12).expect("to 0.25");
        replay.run_to(slave.as_mut(), 0.5, 1e-12).expect("to 0.5");
        replay
            .run_to(slave.as_mut(), 2.0, 1e-12)
            .expect("to the end");
        // The polynomial re-expanded at 0.25 and 0.5: u = 1 + 2 t + 2 t^2.
        let at = |t: f64| Entry::Polynomial {
            vrs: vec![5],
            order: 2,
            taylor: vec![1.0 + 2.0 * t + 2.0 * t * t, 2.0 + 4.0 * t, 4.0],
        };
        let span = Entry::MacroStep(Some((0.0, 1.0)));
        let none = Entry::MacroStep(None);
        assert_eq!(
            stop(&mut slave),
            vec![
                entries[0].clone(),
                span.clone(),
                step(0.0, 0.25),
                none.clone(),
                at(0.25),
                span.clone(),
                step(0.25, 0.25),
                none.clone(),
                at(0.5),
                span,
                step(0.5, 0.5),
                none,
                entries[2].clone(),
                step(1.0, 1.0),
            ]
        );
    }

    #[test]
    fn a_call_that_cannot_be_repeated_inside_a_step_is_refused() {
        let mut slave = recording();
        slave.do_step(0.0, 1.0).expect("steps");
        slave.terminate().expect("terminates");
        let error = Replay::new("m", stop(&mut slave)).expect_err("refused");
        assert!(error.to_string().contains("Terminate"), "{error}");
    }
}
