//! The `Slave` trait: the only door through which a master algorithm talks to an FMU.
//!
//! FMI 2 and FMI 3 instances implement it (`instance.rs`); later an out-of-process and a remote
//! slave will too. It is object-safe and `Send`, and no method allocates on the hot path
//! (get / set / step take caller-owned slices).

use std::sync::Arc;

use super::description::{ModelDescription, ValueReference};
use crate::error::Result;

/// Opaque handle of a saved FMU state, valid for the slave that produced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateId(pub usize);

/// How `do_step` ended when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepResult {
    /// The time the FMU reached: the end of the step, or earlier after an early return.
    pub reached_time: f64,
    /// FMI 3: the FMU returned early (event or early-return request) before the step's end.
    pub early_return: bool,
    /// FMI 3: the FMU wants event mode (call `update_discrete_states` before stepping on).
    pub event_handling_needed: bool,
    /// The FMU asks to end the simulation.
    pub terminate_simulation: bool,
}

/// Result of an event iteration in event mode (FMI 3 `fmi3UpdateDiscreteStates`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DiscreteStatesUpdate {
    pub discrete_states_need_update: bool,
    pub terminate_simulation: bool,
    pub nominals_of_continuous_states_changed: bool,
    pub values_of_continuous_states_changed: bool,
    /// The next time event, if the FMU knows one.
    pub next_event_time: Option<f64>,
}

/// What `fmi3GetIntervalDecimal` says of a clock's interval (`fmi3IntervalQualifier`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IntervalQualifier {
    /// The FMU does not know the next interval yet.
    #[default]
    NotYetKnown,
    /// The interval is the one reported before.
    Unchanged,
    /// A new interval: the clock ticks that long after the current time.
    Changed,
}

impl IntervalQualifier {
    /// The qualifier of an `fmi3IntervalQualifier` value (`None` for one FMI does not define).
    pub fn from_raw(raw: i32) -> Option<IntervalQualifier> {
        match raw {
            0 => Some(IntervalQualifier::NotYetKnown),
            1 => Some(IntervalQualifier::Unchanged),
            2 => Some(IntervalQualifier::Changed),
            _ => None,
        }
    }

    /// The `fmi3IntervalQualifier` value.
    pub fn raw(self) -> i32 {
        match self {
            IntervalQualifier::NotYetKnown => 0,
            IntervalQualifier::Unchanged => 1,
            IntervalQualifier::Changed => 2,
        }
    }
}

/// How a slave made an input follow a polynomial within the coming step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolynomialInputMode {
    /// FMI 2 `fmi2SetRealInputDerivatives` (the FMU interpolates itself).
    InputDerivatives,
    /// FMI 3 intermediate update: the importer's callback sets the polynomial's value at the
    /// FMU's intermediate times.
    IntermediateUpdate,
    /// The slave splits the step into sub-steps and sets the polynomial's value before each.
    SubSteps,
    /// A Model Exchange component: cosimo's integrator sets the polynomial's value at every
    /// time it evaluates the model (the input follows the polynomial exactly).
    Evaluated,
}

/// The lifecycle state of an instance, as FMI defines it (used to refuse calls early).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlaveState {
    Instantiated,
    /// FMI 3 Configuration Mode: structural parameters may be set.
    ConfigurationMode,
    InitializationMode,
    StepMode,
    EventMode,
    /// Model Exchange: the importer integrates the continuous states.
    ContinuousTimeMode,
    Terminated,
    /// A call returned `Error` (FMI 2 state "error"): the simulation cannot go on with this
    /// instance; only a reset, restoring an FMU state saved before, or freeing it is allowed.
    Error,
    /// A call of this or of another instance of the same FMU returned `Fatal` (FMI 2 state
    /// "fatal"): no FMI function may be called any more, not even to free the instance.
    Fatal,
}

/// A co-simulation slave: one instantiated FMU (or something that behaves like one).
///
/// Every method returns an error that names the instance and the call; `Warning` statuses are
/// logged and treated as success; `Discard` from `do_step` is [`crate::Error::Discard`].
pub trait Slave: Send {
    /// The instance name given at instantiation.
    fn name(&self) -> &str;
    /// The model description of the FMU this slave instantiates.
    fn description(&self) -> &Arc<ModelDescription>;
    /// Current lifecycle state.
    fn state(&self) -> SlaveState;

    /// FMI 3 `fmi3EnterConfigurationMode`: from Instantiated, so that structural parameters can
    /// be set. FMI 2 has no structural parameters (an error).
    fn enter_configuration_mode(&mut self) -> Result<()>;
    /// FMI 3 `fmi3ExitConfigurationMode`: back to Instantiated. FMI 2: an error.
    fn exit_configuration_mode(&mut self) -> Result<()>;

    /// FMI 2 `fmi2SetupExperiment` + `fmi2EnterInitializationMode`, FMI 3
    /// `fmi3EnterInitializationMode`.
    fn enter_initialization_mode(
        &mut self,
        tolerance: Option<f64>,
        start_time: f64,
        stop_time: Option<f64>,
    ) -> Result<()>;
    /// Leave initialization mode; the slave is then in step mode.
    fn exit_initialization_mode(&mut self) -> Result<()>;
    /// Advance from `current_time` by `step_size`.
    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult>;
    /// Whether [`Slave::start_step`] returns before the step ends (a slave in another process:
    /// the caller can start other components' steps meanwhile).
    fn steps_in_background(&self) -> bool {
        false
    }
    /// When [`Slave::steps_in_background`]: start `do_step` and return at once;
    /// [`Slave::finish_step`] waits for it and returns what `do_step` would have. No other
    /// call may come between the two.
    fn start_step(&mut self, _current_time: f64, _step_size: f64) -> Result<()> {
        Err(crate::Error::Internal(format!(
            "{}: start_step on a slave that does not step in the background",
            self.name()
        )))
    }
    /// The result of the step begun by [`Slave::start_step`].
    fn finish_step(&mut self) -> Result<StepResult> {
        Err(crate::Error::Internal(format!(
            "{}: finish_step without a step started in the background",
            self.name()
        )))
    }
    /// FMI 3: enter event mode (after `event_handling_needed`).
    fn enter_event_mode(&mut self) -> Result<()>;
    /// FMI 3: one event iteration in event mode.
    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate>;
    /// FMI 3: leave event mode back to step mode.
    fn enter_step_mode(&mut self) -> Result<()>;
    /// FMI 3 `fmi3GetClock` (Event Mode): which of the clocks `vrs` are active. Slaves
    /// without clocks refuse it.
    fn get_clock(&mut self, _vrs: &[ValueReference], _active: &mut [bool]) -> Result<()> {
        Err(no_clocks(self.name(), "fmi3GetClock"))
    }
    /// FMI 3 `fmi3SetClock` (Event Mode): activate (or deactivate) the input clocks `vrs`.
    fn set_clock(&mut self, _vrs: &[ValueReference], _active: &[bool]) -> Result<()> {
        Err(no_clocks(self.name(), "fmi3SetClock"))
    }
    /// FMI 3 `fmi3GetIntervalDecimal`: the intervals of the time-based input clocks `vrs`
    /// and what each says.
    fn get_interval_decimal(
        &mut self,
        _vrs: &[ValueReference],
        _intervals: &mut [f64],
        _qualifiers: &mut [IntervalQualifier],
    ) -> Result<()> {
        Err(no_clocks(self.name(), "fmi3GetIntervalDecimal"))
    }
    /// `fmi*Terminate`.
    fn terminate(&mut self) -> Result<()>;
    /// `fmi*Reset`: back to the state right after instantiation.
    fn reset(&mut self) -> Result<()>;

    /// Read Float64 (FMI 2 Real) variables.
    fn get_float64(&mut self, vrs: &[ValueReference], values: &mut [f64]) -> Result<()>;
    /// Write Float64 (FMI 2 Real) variables.
    fn set_float64(&mut self, vrs: &[ValueReference], values: &[f64]) -> Result<()>;
    /// Read Float32 variables (FMI 3).
    fn get_float32(&mut self, vrs: &[ValueReference], values: &mut [f32]) -> Result<()>;
    /// Write Float32 variables (FMI 3).
    fn set_float32(&mut self, vrs: &[ValueReference], values: &[f32]) -> Result<()>;
    /// Read Int8 variables (FMI 3).
    fn get_int8(&mut self, vrs: &[ValueReference], values: &mut [i8]) -> Result<()>;
    /// Write Int8 variables (FMI 3).
    fn set_int8(&mut self, vrs: &[ValueReference], values: &[i8]) -> Result<()>;
    /// Read UInt8 variables (FMI 3).
    fn get_uint8(&mut self, vrs: &[ValueReference], values: &mut [u8]) -> Result<()>;
    /// Write UInt8 variables (FMI 3).
    fn set_uint8(&mut self, vrs: &[ValueReference], values: &[u8]) -> Result<()>;
    /// Read Int16 variables (FMI 3).
    fn get_int16(&mut self, vrs: &[ValueReference], values: &mut [i16]) -> Result<()>;
    /// Write Int16 variables (FMI 3).
    fn set_int16(&mut self, vrs: &[ValueReference], values: &[i16]) -> Result<()>;
    /// Read UInt16 variables (FMI 3).
    fn get_uint16(&mut self, vrs: &[ValueReference], values: &mut [u16]) -> Result<()>;
    /// Write UInt16 variables (FMI 3).
    fn set_uint16(&mut self, vrs: &[ValueReference], values: &[u16]) -> Result<()>;
    /// Read Int32 (FMI 2 Integer) variables; FMI 2 enumerations too.
    fn get_int32(&mut self, vrs: &[ValueReference], values: &mut [i32]) -> Result<()>;
    /// Write Int32 (FMI 2 Integer) variables; FMI 2 enumerations too.
    fn set_int32(&mut self, vrs: &[ValueReference], values: &[i32]) -> Result<()>;
    /// Read UInt32 variables (FMI 3).
    fn get_uint32(&mut self, vrs: &[ValueReference], values: &mut [u32]) -> Result<()>;
    /// Write UInt32 variables (FMI 3).
    fn set_uint32(&mut self, vrs: &[ValueReference], values: &[u32]) -> Result<()>;
    /// Read Int64 variables (FMI 3); FMI 3 enumerations too.
    fn get_int64(&mut self, vrs: &[ValueReference], values: &mut [i64]) -> Result<()>;
    /// Write Int64 variables (FMI 3); FMI 3 enumerations too.
    fn set_int64(&mut self, vrs: &[ValueReference], values: &[i64]) -> Result<()>;
    /// Read UInt64 variables (FMI 3).
    fn get_uint64(&mut self, vrs: &[ValueReference], values: &mut [u64]) -> Result<()>;
    /// Write UInt64 variables (FMI 3).
    fn set_uint64(&mut self, vrs: &[ValueReference], values: &[u64]) -> Result<()>;
    /// Read Boolean variables.
    fn get_boolean(&mut self, vrs: &[ValueReference], values: &mut [bool]) -> Result<()>;
    /// Write Boolean variables.
    fn set_boolean(&mut self, vrs: &[ValueReference], values: &[bool]) -> Result<()>;
    /// Read String variables (allocates: strings are not on the hot path).
    fn get_string(&mut self, vrs: &[ValueReference]) -> Result<Vec<String>>;
    /// Write String variables.
    fn set_string(&mut self, vrs: &[ValueReference], values: &[&str]) -> Result<()>;
    /// Read Binary variables (FMI 3).
    fn get_binary(&mut self, vrs: &[ValueReference]) -> Result<Vec<Vec<u8>>>;
    /// Write Binary variables (FMI 3).
    fn set_binary(&mut self, vrs: &[ValueReference], values: &[&[u8]]) -> Result<()>;

    /// Whether `save_state` / `restore_state` are available (`canGetAndSetFMUstate`).
    fn can_save_state(&self) -> bool;
    /// Save the complete FMU state (`fmi*GetFMUState` into a new state).
    fn save_state(&mut self) -> Result<StateId>;
    /// Overwrite a saved state with the current one (reuses the FMU's allocation).
    fn update_state(&mut self, state: StateId) -> Result<()>;
    /// Restore a saved state (`fmi*SetFMUState`).
    fn restore_state(&mut self, state: StateId) -> Result<()>;
    /// Free a saved state.
    fn free_state(&mut self, state: StateId) -> Result<()>;
    /// Serialise a saved state to bytes.
    fn serialize_state(&mut self, state: StateId) -> Result<Vec<u8>>;
    /// Deserialise bytes into a new saved state.
    fn deserialize_state(&mut self, bytes: &[u8]) -> Result<StateId>;

    /// Whether `directional_derivative` is available.
    fn provides_directional_derivatives(&self) -> bool;
    /// `sensitivity = (d unknowns / d knowns) * seed`.
    fn directional_derivative(
        &mut self,
        unknowns: &[ValueReference],
        knowns: &[ValueReference],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()>;

    /// The highest output derivative order the FMU offers (0: none).
    fn max_output_derivative_order(&self) -> u32;
    /// The `order`-th time derivative of the outputs `vrs` at the current time.
    fn get_output_derivatives(
        &mut self,
        vrs: &[ValueReference],
        order: u32,
        values: &mut [f64],
    ) -> Result<()>;

    /// Make Float64 inputs follow a polynomial during the next `do_step`.
    ///
    /// `taylor` holds, for each input in `vrs` in turn, `order + 1` coefficients: the value and
    /// the first `order` time derivatives at the start of the next step, so that
    /// `u(t0 + tau) = sum_j taylor[j] * tau^j / j!`. The value itself is set too. Returns how the
    /// slave will honour it (see [`PolynomialInputMode`]).
    fn set_input_polynomial(
        &mut self,
        vrs: &[ValueReference],
        order: usize,
        taylor: &[f64],
    ) -> Result<PolynomialInputMode>;

    /// The macro step `[start, end]` that the next steps are parts of (`None`: each step is a
    /// macro step of its own). A slave that holds polynomial inputs over sub-steps
    /// ([`PolynomialInputMode::SubSteps`]) then takes the pieces of the whole step's sub-steps,
    /// so a macro step taken in parts sees the inputs the whole step would.
    fn set_macro_step(&mut self, _span: Option<(f64, f64)>) -> Result<()> {
        Ok(())
    }

    /// Number of FMI calls made so far (for statistics).
    fn call_count(&self) -> u64;

    /// What cosimo's integrator did for a Model Exchange component (`None` for others).
    fn integrator_statistics(&self) -> Option<crate::fmu::model_exchange::Statistics> {
        None
    }

    /// The master's call recorder when it wraps this slave to replay a macro step in parts
    /// (`master/replay.rs`), to reach it through the box; slaves themselves have none.
    fn call_recorder(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
}

/// The error of a clock call on a slave that has no clocks (FMI 2, Model Exchange here).
fn no_clocks(name: &str, call: &str) -> crate::Error {
    crate::Error::Unsupported {
        instance: name.to_string(),
        message: format!("{call}: this slave has no FMI 3 Co-Simulation clocks"),
    }
}

/// Methods of [`Slave`] that a wrapping slave (`self.$inner: Box<dyn Slave>` or any `Slave`)
/// passes on unchanged, by name, inside its `impl Slave`:
/// `forward_slave!(inner: name, description, state, call_count);`. The wrappers (the master's
/// call recorder, array elements, the Scheduled Execution scheduler) then spell out only the
/// calls they change.
macro_rules! forward_slave {
    ($inner:ident: $($method:ident),* $(,)?) => {
        $( $crate::fmu::slave::forward_slave!(@ $inner $method); )*
    };
    (@ $i:ident name) => {
        fn name(&self) -> &str {
            self.$i.name()
        }
    };
    (@ $i:ident description) => {
        fn description(&self) -> &std::sync::Arc<$crate::fmu::description::ModelDescription> {
            self.$i.description()
        }
    };
    (@ $i:ident state) => {
        fn state(&self) -> $crate::fmu::slave::SlaveState {
            self.$i.state()
        }
    };
    (@ $i:ident steps_in_background) => {
        fn steps_in_background(&self) -> bool {
            self.$i.steps_in_background()
        }
    };
    (@ $i:ident finish_step) => {
        fn finish_step(&mut self) -> $crate::Result<$crate::fmu::slave::StepResult> {
            self.$i.finish_step()
        }
    };
    (@ $i:ident get_clock) => {
        fn get_clock(
            &mut self,
            vrs: &[$crate::fmu::description::ValueReference],
            active: &mut [bool],
        ) -> $crate::Result<()> {
            self.$i.get_clock(vrs, active)
        }
    };
    (@ $i:ident get_interval_decimal) => {
        fn get_interval_decimal(
            &mut self,
            vrs: &[$crate::fmu::description::ValueReference],
            intervals: &mut [f64],
            qualifiers: &mut [$crate::fmu::slave::IntervalQualifier],
        ) -> $crate::Result<()> {
            self.$i.get_interval_decimal(vrs, intervals, qualifiers)
        }
    };
    (@ $i:ident get_string) => {
        fn get_string(
            &mut self,
            vrs: &[$crate::fmu::description::ValueReference],
        ) -> $crate::Result<Vec<String>> {
            self.$i.get_string(vrs)
        }
    };
    (@ $i:ident get_binary) => {
        fn get_binary(
            &mut self,
            vrs: &[$crate::fmu::description::ValueReference],
        ) -> $crate::Result<Vec<Vec<u8>>> {
            self.$i.get_binary(vrs)
        }
    };
    (@ $i:ident can_save_state) => {
        fn can_save_state(&self) -> bool {
            self.$i.can_save_state()
        }
    };
    (@ $i:ident free_state) => {
        fn free_state(&mut self, state: $crate::fmu::slave::StateId) -> $crate::Result<()> {
            self.$i.free_state(state)
        }
    };
    (@ $i:ident serialize_state) => {
        fn serialize_state(
            &mut self,
            state: $crate::fmu::slave::StateId,
        ) -> $crate::Result<Vec<u8>> {
            self.$i.serialize_state(state)
        }
    };
    (@ $i:ident deserialize_state) => {
        fn deserialize_state(
            &mut self,
            bytes: &[u8],
        ) -> $crate::Result<$crate::fmu::slave::StateId> {
            self.$i.deserialize_state(bytes)
        }
    };
    (@ $i:ident provides_directional_derivatives) => {
        fn provides_directional_derivatives(&self) -> bool {
            self.$i.provides_directional_derivatives()
        }
    };
    (@ $i:ident directional_derivative) => {
        fn directional_derivative(
            &mut self,
            unknowns: &[$crate::fmu::description::ValueReference],
            knowns: &[$crate::fmu::description::ValueReference],
            seed: &[f64],
            sensitivity: &mut [f64],
        ) -> $crate::Result<()> {
            self.$i.directional_derivative(unknowns, knowns, seed, sensitivity)
        }
    };
    (@ $i:ident max_output_derivative_order) => {
        fn max_output_derivative_order(&self) -> u32 {
            self.$i.max_output_derivative_order()
        }
    };
    (@ $i:ident get_output_derivatives) => {
        fn get_output_derivatives(
            &mut self,
            vrs: &[$crate::fmu::description::ValueReference],
            order: u32,
            values: &mut [f64],
        ) -> $crate::Result<()> {
            self.$i.get_output_derivatives(vrs, order, values)
        }
    };
    (@ $i:ident call_count) => {
        fn call_count(&self) -> u64 {
            self.$i.call_count()
        }
    };
    (@ $i:ident integrator_statistics) => {
        fn integrator_statistics(&self) -> Option<$crate::fmu::model_exchange::Statistics> {
            self.$i.integrator_statistics()
        }
    };
}
pub(crate) use forward_slave;
