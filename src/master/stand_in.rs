//! The stand-in for a component that another rank owns (`transport.rs`): it takes every call
//! of the run loop without an FMU, so that every rank walks the same loop over the whole
//! system. Its outputs are never used: the owner's values arrive through the transport.

use std::sync::Arc;

use crate::fmu::description::{ModelDescription, ValueReference};
use crate::fmu::slave::{
    DiscreteStatesUpdate, PolynomialInputMode, Slave, SlaveState, StateId, StepResult,
};
use crate::Result;

/// A component stepped on another rank.
pub struct StandIn {
    name: String,
    description: Arc<ModelDescription>,
    state: SlaveState,
}

impl StandIn {
    /// The stand-in for component `name` of interface `description`.
    pub fn new(name: &str, description: Arc<ModelDescription>) -> StandIn {
        StandIn {
            name: name.to_string(),
            description,
            state: SlaveState::Instantiated,
        }
    }
}

macro_rules! stand_in_values {
    ($($get:ident, $set:ident, $t:ty;)*) => {$(
        fn $get(&mut self, _vrs: &[ValueReference], values: &mut [$t]) -> Result<()> {
            values.iter_mut().for_each(|v| *v = <$t>::default());
            Ok(())
        }
        fn $set(&mut self, _vrs: &[ValueReference], _values: &[$t]) -> Result<()> {
            Ok(())
        }
    )*};
}

impl Slave for StandIn {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &Arc<ModelDescription> {
        &self.description
    }
    fn state(&self) -> SlaveState {
        self.state
    }
    fn enter_configuration_mode(&mut self) -> Result<()> {
        Ok(())
    }
    fn exit_configuration_mode(&mut self) -> Result<()> {
        Ok(())
    }
    fn enter_initialization_mode(&mut self, _: Option<f64>, _: f64, _: Option<f64>) -> Result<()> {
        self.state = SlaveState::InitializationMode;
        Ok(())
    }
    fn exit_initialization_mode(&mut self) -> Result<()> {
        self.state = SlaveState::StepMode;
        Ok(())
    }
    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        Ok(StepResult {
            reached_time: current_time + step_size,
            early_return: false,
            event_handling_needed: false,
            terminate_simulation: false,
        })
    }
    fn enter_event_mode(&mut self) -> Result<()> {
        Ok(())
    }
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        Ok(DiscreteStatesUpdate::default())
    }
    fn enter_step_mode(&mut self) -> Result<()> {
        self.state = SlaveState::StepMode;
        Ok(())
    }
    fn terminate(&mut self) -> Result<()> {
        self.state = SlaveState::Terminated;
        Ok(())
    }
    fn reset(&mut self) -> Result<()> {
        self.state = SlaveState::Instantiated;
        Ok(())
    }
    stand_in_values! {
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
    fn get_string(&mut self, vrs: &[ValueReference]) -> Result<Vec<String>> {
        Ok(vec![String::new(); vrs.len()])
    }
    fn set_string(&mut self, _: &[ValueReference], _: &[&str]) -> Result<()> {
        Ok(())
    }
    fn get_binary(&mut self, vrs: &[ValueReference]) -> Result<Vec<Vec<u8>>> {
        Ok(vec![Vec::new(); vrs.len()])
    }
    fn set_binary(&mut self, _: &[ValueReference], _: &[&[u8]]) -> Result<()> {
        Ok(())
    }
    // States: the owner saves and restores the real one at the same points of the loop.
    fn can_save_state(&self) -> bool {
        true
    }
    fn save_state(&mut self) -> Result<StateId> {
        Ok(StateId(0))
    }
    fn update_state(&mut self, _: StateId) -> Result<()> {
        Ok(())
    }
    fn restore_state(&mut self, _: StateId) -> Result<()> {
        Ok(())
    }
    fn free_state(&mut self, _: StateId) -> Result<()> {
        Ok(())
    }
    fn serialize_state(&mut self, _: StateId) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }
    fn deserialize_state(&mut self, _: &[u8]) -> Result<StateId> {
        Ok(StateId(0))
    }
    fn provides_directional_derivatives(&self) -> bool {
        false
    }
    fn directional_derivative(
        &mut self,
        _: &[ValueReference],
        _: &[ValueReference],
        _: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        sensitivity.iter_mut().for_each(|s| *s = 0.0);
        Ok(())
    }
    fn max_output_derivative_order(&self) -> u32 {
        0
    }
    fn get_output_derivatives(
        &mut self,
        _: &[ValueReference],
        _: u32,
        values: &mut [f64],
    ) -> Result<()> {
        values.iter_mut().for_each(|v| *v = 0.0);
        Ok(())
    }
    fn set_input_polynomial(
        &mut self,
        _: &[ValueReference],
        _: usize,
        _: &[f64],
    ) -> Result<PolynomialInputMode> {
        Ok(PolynomialInputMode::Evaluated)
    }
    fn call_count(&self) -> u64 {
        0
    }
}
