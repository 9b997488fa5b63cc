//! A Model Exchange FMU as a co-simulation [`Slave`]: cosimo integrates its continuous states
//! over each macro step with a solver of its own ([`integrator`]), and handles its events
//! where they happen inside the step.
//!
//! - `do_step(t, h)` integrates from `t` to `t + h`, stopping at time events (the FMU's
//!   `nextEventTime`), state events (event indicators changing sign, located by root finding)
//!   and step events (`fmi*CompletedIntegratorStep` asking for event mode); at each it runs the
//!   event iteration in event mode and re-reads the states, then goes on. A termination request
//!   ends the step where it was made (`terminate_simulation`).
//! - Inputs given as polynomials ([`Slave::set_input_polynomial`]) are evaluated at every time
//!   the model is evaluated: they follow the polynomial exactly.
//! - A saved state is the FMU's state plus the time, the next time event and the integrator's
//!   last step size, so a restored step repeats bit for bit.
//! - Every other call (variables, directional derivatives, FMU states) goes to the instance.
//!
//! The integrator starts afresh at every macro step and after every event (inputs held over a
//! macro step jump at its start; events are discontinuities), from the last accepted step size.

mod integrator;

use std::collections::HashMap;
use std::sync::Arc;

use super::description::{ModelDescription, ValueReference};
use super::instance::{KnownFloat64, ModelExchangeInstance};
use super::slave::{
    DiscreteStatesUpdate, PolynomialInputMode, Slave, SlaveState, StateId, StepResult,
};
use crate::error::{Error, Result};
use integrator::{integrate, Carry, Integration, Stop};

/// The integration method of Model Exchange components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SolverMethod {
    /// Variable-order BDF with a Newton iteration (stiff models).
    #[serde(rename = "bdf")]
    Bdf,
    /// Tsitouras 5(4), explicit Runge-Kutta with dense output (non-stiff models).
    #[serde(rename = "rk45")]
    Tsit45,
}

impl SolverMethod {
    /// Parse the command line's spelling (`bdf`, `rk45`).
    pub fn parse(text: &str) -> Option<SolverMethod> {
        match text {
            "bdf" => Some(SolverMethod::Bdf),
            "rk45" => Some(SolverMethod::Tsit45),
            _ => None,
        }
    }
}

/// How Model Exchange components are integrated.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct SolverOptions {
    /// `None`: BDF.
    pub method: Option<SolverMethod>,
    /// Relative tolerance; `None`: the FMU's default experiment's tolerance, else 1e-6.
    pub rtol: Option<f64>,
    /// Absolute tolerance, scaled by each state's nominal value; `None`: 1e-3 of the relative
    /// tolerance.
    pub atol: Option<f64>,
}

impl SolverOptions {
    /// Whether any option was given (they must then take effect: a run without Model
    /// Exchange components refuses them).
    pub fn given(&self) -> bool {
        self.method.is_some() || self.rtol.is_some() || self.atol.is_some()
    }

    /// Refuse tolerances no solver can use, naming the option.
    pub fn check(&self) -> std::result::Result<(), String> {
        for (name, value) in [("--solver-rtol", self.rtol), ("--solver-atol", self.atol)] {
            if let Some(v) = value {
                if !(v.is_finite() && v > 0.0 && v < 1.0) {
                    return Err(format!(
                        "{name} {v}: a tolerance must be a number between 0 and 1 (exclusive)"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// What the integrator did, for the statistics of a run and the benchmark.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Accepted and rejected integrator steps reported by the solver.
    pub steps: u64,
    /// Evaluations of the derivatives (including those of Jacobians).
    pub rhs_evaluations: u64,
    /// Events handled (time, state and step events).
    pub events: u64,
}

/// Float64 inputs that follow polynomials during the current step.
#[derive(Debug, Default, Clone)]
pub(crate) struct InputPolynomials {
    /// Start of the polynomials.
    t0: f64,
    vrs: Vec<ValueReference>,
    /// Taylor coefficients, `order + 1` per input.
    taylor: Vec<f64>,
    order: usize,
    /// The inputs' values at the last evaluation (scratch: no allocation per evaluation).
    values: std::cell::RefCell<Vec<f64>>,
}

impl InputPolynomials {
    /// Set the inputs to their polynomials' values at `t`.
    fn apply(&self, fmu: &mut dyn ModelExchangeInstance, t: f64) -> Result<()> {
        if self.vrs.is_empty() {
            return Ok(());
        }
        let s = t - self.t0;
        let stride = self.order + 1;
        let mut values = self.values.borrow_mut();
        for (k, value) in values.iter_mut().enumerate() {
            let c = &self.taylor[k * stride..(k + 1) * stride];
            // Horner on sum_j c_j s^j / j!.
            let mut acc = 0.0;
            for j in (0..stride).rev() {
                acc = c[j] + acc * s / (j as f64 + 1.0);
            }
            *value = acc;
        }
        fmu.set_float64(&self.vrs, &values)
    }
}

/// The extras a saved state carries besides the FMU's own state.
#[derive(Clone)]
struct Saved {
    time: f64,
    next_time_event: Option<f64>,
    last_step: Option<f64>,
    carry: Option<Carry>,
}

/// The value references of the `count` continuous states in the order of the model
/// structure's derivatives, when each is a scalar variable named by its derivative.
fn state_value_references(
    description: &ModelDescription,
    count: usize,
) -> Option<Vec<ValueReference>> {
    let vrs: Vec<ValueReference> = description
        .model_structure
        .continuous_state_derivatives
        .iter()
        .map(|u| {
            let derivative = description.variables.get(u.variable)?;
            let state = description.variables.get(derivative.derivative?)?;
            (!state.is_array()).then_some(state.value_reference)
        })
        .collect::<Option<_>>()?;
    (vrs.len() == count).then_some(vrs)
}

/// A Model Exchange instance driven as a co-simulation slave.
pub struct ModelExchangeSlave {
    inner: Box<dyn ModelExchangeInstance>,
    solver: SolverOptions,
    rtol: f64,
    atol: Vec<f64>,
    x: Vec<f64>,
    time: f64,
    next_time_event: Option<f64>,
    last_step: Option<f64>,
    inputs: InputPolynomials,
    /// The solver's state at `time`, valid while nothing changed the model since.
    carry: Option<Carry>,
    /// The Float64 values set: setting them again changes nothing.
    held: KnownFloat64,
    needs_completed_integrator_step: bool,
    saved: HashMap<StateId, Saved>,
    statistics: Statistics,
    /// Value references of the continuous states, in the order of the derivatives (`None`:
    /// not all are scalar variables with a value reference, so no output derivatives).
    state_vrs: Option<Vec<ValueReference>>,
    /// Scratch for the state derivatives of an output derivative.
    derivatives: Vec<f64>,
}

impl ModelExchangeSlave {
    /// Wrap a freshly instantiated Model Exchange instance.
    pub fn new(
        inner: Box<dyn ModelExchangeInstance>,
        solver: SolverOptions,
    ) -> Result<ModelExchangeSlave> {
        solver.check().map_err(Error::Usage)?;
        let description = inner.description().clone();
        let rtol = solver
            .rtol
            .or_else(|| {
                description
                    .default_experiment
                    .as_ref()
                    .and_then(|e| e.tolerance)
            })
            .filter(|t| t.is_finite() && *t > 0.0 && *t < 1.0)
            .unwrap_or(1e-6);
        let nx = inner.continuous_state_count();
        let needs_completed_integrator_step = description
            .model_exchange
            .as_ref()
            .is_none_or(|me| me.needs_completed_integrator_step);
        Ok(ModelExchangeSlave {
            inner,
            solver,
            rtol,
            atol: vec![solver.atol.unwrap_or(rtol * 1e-3); nx],
            x: vec![0.0; nx],
            time: 0.0,
            next_time_event: None,
            last_step: None,
            inputs: InputPolynomials::default(),
            carry: None,
            held: KnownFloat64::default(),
            needs_completed_integrator_step,
            saved: HashMap::new(),
            statistics: Statistics::default(),
            state_vrs: state_value_references(&description, nx),
            derivatives: vec![0.0; nx],
        })
    }

    /// What the integrator did so far.
    pub fn statistics(&self) -> Statistics {
        self.statistics
    }

    /// Read the states and their nominals (after initialization and events that change them).
    fn read_states(&mut self) -> Result<()> {
        self.inner.get_continuous_states(&mut self.x)?;
        if self.x.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerics(format!(
                "{}: the FMU's continuous states are not finite at t = {}: {:?}",
                self.inner.name(),
                crate::numbers::number(self.time),
                self.x
            )));
        }
        let mut nominals = vec![1.0; self.x.len()];
        self.inner.get_nominals(&mut nominals)?;
        let atol = self.solver.atol.unwrap_or(self.rtol * 1e-3);
        for (a, n) in self.atol.iter_mut().zip(&nominals) {
            // A nominal that is zero, negative or not finite is the FMU's mistake: use 1.
            let n = if n.is_finite() && *n > 0.0 { *n } else { 1.0 };
            *a = atol * n;
        }
        Ok(())
    }

    /// The event iteration in event mode, then continuous-time mode; returns whether the FMU
    /// asks to terminate.
    fn handle_event(&mut self) -> Result<bool> {
        let mut terminate = false;
        let mut values_changed = false;
        // FMI bounds nothing here; an FMU that never settles is refused after this many.
        const MAX_ITERATIONS: usize = 1000;
        let mut settled = false;
        for _ in 0..MAX_ITERATIONS {
            let update: DiscreteStatesUpdate = self.inner.update_discrete_states()?;
            terminate |= update.terminate_simulation;
            values_changed |= update.values_of_continuous_states_changed
                || update.nominals_of_continuous_states_changed;
            self.next_time_event = update.next_event_time;
            if !update.discrete_states_need_update || update.terminate_simulation {
                settled = true;
                break;
            }
        }
        if !settled {
            return Err(Error::Numerics(format!(
                "{}: the event iteration at t = {} did not settle after {MAX_ITERATIONS} \
                 iterations (the FMU keeps asking for new discrete states)",
                self.inner.name(),
                crate::numbers::number(self.time)
            )));
        }
        if terminate {
            return Ok(true);
        }
        self.inner.enter_continuous_time_mode()?;
        if values_changed {
            self.read_states()?;
        }
        // An event is a discontinuity: the next integration starts afresh, with a small step.
        self.last_step = None;
        self.carry = None;
        Ok(false)
    }

    /// Leave the FMU at `self.time` with the states, so that outputs are current.
    fn settle_at(&mut self, t: f64) -> Result<()> {
        self.time = t;
        self.inner.set_time(t)?;
        self.inputs.apply(&mut *self.inner, t)?;
        self.inner.set_continuous_states(&self.x)
    }

    fn step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        let end = current_time + step_size;
        self.time = current_time;
        if self.inner.state() != SlaveState::ContinuousTimeMode {
            return Err(Error::WrongState {
                instance: self.inner.name().to_string(),
                function: "do_step (Model Exchange)",
                state: format!("{:?}", self.inner.state()),
            });
        }
        // Close to the end counts as the end: no step of a rounding error's length.
        let tiny = 1e-13 * end.abs().max(step_size.abs()).max(1.0);
        while self.time < end - tiny {
            let time_event = self
                .next_time_event
                .filter(|te| *te <= end + tiny && *te >= self.time);
            let t_stop = time_event.map_or(end, |te| te.min(end));
            let mut stop = Stop::Reached;
            let mut reached = t_stop;
            if t_stop > self.time + tiny {
                let event_indicators = self.inner.event_indicator_count();
                let (why, t, h) = integrate(Integration {
                    fmu: &mut *self.inner,
                    inputs: &self.inputs,
                    method: self.solver.method.unwrap_or(SolverMethod::Bdf),
                    rtol: self.rtol,
                    atol: &self.atol,
                    x: &mut self.x,
                    t0: self.time,
                    t_stop,
                    h0: self.last_step,
                    event_indicators,
                    completed_integrator_step: self.needs_completed_integrator_step,
                    statistics: &mut self.statistics,
                    carry: &mut self.carry,
                })?;
                stop = why;
                reached = t;
                if h.is_finite() && h > 0.0 {
                    self.last_step = Some(h);
                }
            }
            self.settle_at(reached)?;
            let at_time_event =
                stop == Stop::Reached && time_event.is_some_and(|te| (te - reached).abs() <= tiny);
            match stop {
                Stop::Terminate => return Ok(self.terminated_at(reached)),
                Stop::StateEvent | Stop::StepEvent => {}
                Stop::Reached if at_time_event => {}
                Stop::Reached => continue,
            }
            self.statistics.events += 1;
            self.inner.enter_event_mode()?;
            if self.handle_event()? {
                return Ok(self.terminated_at(reached));
            }
            // FMI: the next time event lies after the current time; one that does not would
            // stop the integration here for ever.
            if let Some(te) = self.next_time_event.filter(|te| *te <= self.time) {
                return Err(Error::Numerics(format!(
                    "{}: after the event at t = {}, the FMU announced its next time event at \
                     t = {te}, which is not later (FMI requires nextEventTime > time)",
                    self.inner.name(),
                    self.time
                )));
            }
        }
        if self.time != end {
            self.settle_at(end)?;
        }
        Ok(StepResult {
            reached_time: end,
            early_return: false,
            event_handling_needed: false,
            terminate_simulation: false,
        })
    }

    fn terminated_at(&mut self, time: f64) -> StepResult {
        self.time = time;
        StepResult {
            reached_time: time,
            early_return: false,
            event_handling_needed: false,
            terminate_simulation: true,
        }
    }
}

macro_rules! delegate {
    ($($get:ident, $set:ident, $ty:ty;)*) => {
        $(
            fn $get(&mut self, vrs: &[ValueReference], values: &mut [$ty]) -> Result<()> {
                self.inner.$get(vrs, values)
            }
            /// A set may change the model: the solver starts afresh.
            fn $set(&mut self, vrs: &[ValueReference], values: &[$ty]) -> Result<()> {
                self.carry = None;
                self.inner.$set(vrs, values)
            }
        )*
    };
}

impl Slave for ModelExchangeSlave {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &Arc<ModelDescription> {
        self.inner.description()
    }

    /// Continuous-time and event mode are the step mode of a co-simulation slave.
    fn state(&self) -> SlaveState {
        match self.inner.state() {
            SlaveState::ContinuousTimeMode | SlaveState::EventMode => SlaveState::StepMode,
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
        // The experiment's tolerance is the integrator's, unless the solver options set one.
        if let Some(t) = tolerance.filter(|t| self.solver.rtol.is_none() && *t > 0.0 && *t < 1.0) {
            self.rtol = t;
        }
        self.inner
            .enter_initialization_mode(tolerance.or(Some(self.rtol)), start_time, stop_time)
    }

    /// Initialization ends in event mode: the event iteration runs, then the FMU enters
    /// continuous-time mode and its states are read.
    fn exit_initialization_mode(&mut self) -> Result<()> {
        self.inner.exit_initialization_mode()?;
        self.next_time_event = None;
        let terminate = self.handle_event()?;
        if terminate {
            return Err(Error::Unsupported {
                instance: self.inner.name().to_string(),
                message: "the FMU asked to terminate during initialization".into(),
            });
        }
        self.read_states()
    }

    fn do_step(&mut self, current_time: f64, step_size: f64) -> Result<StepResult> {
        let result = self.step(current_time, step_size);
        self.inputs = InputPolynomials::default();
        result
    }

    fn enter_event_mode(&mut self) -> Result<()> {
        Err(Error::Unsupported {
            instance: self.inner.name().to_string(),
            message: "enter_event_mode: a Model Exchange component handles its events inside \
                      its steps"
                .into(),
        })
    }

    fn update_discrete_states(&mut self) -> Result<DiscreteStatesUpdate> {
        Err(Error::Unsupported {
            instance: self.inner.name().to_string(),
            message: "update_discrete_states: a Model Exchange component handles its events \
                      inside its steps"
                .into(),
        })
    }

    fn enter_step_mode(&mut self) -> Result<()> {
        Err(Error::Unsupported {
            instance: self.inner.name().to_string(),
            message: "enter_step_mode: a Model Exchange component has no step mode".into(),
        })
    }

    fn terminate(&mut self) -> Result<()> {
        self.inner.terminate()
    }

    fn reset(&mut self) -> Result<()> {
        self.inputs = InputPolynomials::default();
        self.carry = None;
        self.held.forget();
        self.next_time_event = None;
        self.last_step = None;
        self.inner.reset()
    }

    delegate! {
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

    fn get_float64(&mut self, vrs: &[ValueReference], values: &mut [f64]) -> Result<()> {
        self.inner.get_float64(vrs, values)
    }

    /// Setting the values the inputs hold already (a held input set again at every macro
    /// step) changes nothing: the solver goes on. Any other value starts it afresh.
    fn set_float64(&mut self, vrs: &[ValueReference], values: &[f64]) -> Result<()> {
        if !self.held.holds(vrs, values) {
            self.carry = None;
        }
        let result = self.inner.set_float64(vrs, values);
        match result {
            Ok(()) => self.held.record(vrs, values),
            Err(_) => self.held.forget(),
        }
        result
    }

    fn get_string(&mut self, vrs: &[ValueReference]) -> Result<Vec<String>> {
        self.inner.get_string(vrs)
    }

    fn set_string(&mut self, vrs: &[ValueReference], values: &[&str]) -> Result<()> {
        self.carry = None;
        self.inner.set_string(vrs, values)
    }

    fn get_binary(&mut self, vrs: &[ValueReference]) -> Result<Vec<Vec<u8>>> {
        self.inner.get_binary(vrs)
    }

    fn set_binary(&mut self, vrs: &[ValueReference], values: &[&[u8]]) -> Result<()> {
        self.carry = None;
        self.inner.set_binary(vrs, values)
    }

    fn can_save_state(&self) -> bool {
        self.inner.can_save_state()
    }

    fn save_state(&mut self) -> Result<StateId> {
        let id = self.inner.save_state()?;
        self.saved.insert(id, self.extras());
        Ok(id)
    }

    fn update_state(&mut self, state: StateId) -> Result<()> {
        self.inner.update_state(state)?;
        self.saved.insert(state, self.extras());
        Ok(())
    }

    fn restore_state(&mut self, state: StateId) -> Result<()> {
        let Some(saved) = self.saved.get(&state).cloned() else {
            return Err(Error::Usage(format!(
                "{}: restore_state: no saved state {state:?}",
                self.inner.name()
            )));
        };
        self.inner.restore_state(state)?;
        self.time = saved.time;
        self.next_time_event = saved.next_time_event;
        self.last_step = saved.last_step;
        self.carry = saved.carry;
        self.held.forget();
        self.inputs = InputPolynomials::default();
        self.read_states()
    }

    fn free_state(&mut self, state: StateId) -> Result<()> {
        self.saved.remove(&state);
        self.inner.free_state(state)
    }

    fn serialize_state(&mut self, state: StateId) -> Result<Vec<u8>> {
        Err(Error::Unsupported {
            instance: self.inner.name().to_string(),
            message: format!(
                "serialize_state({state:?}): the state of a Model Exchange component includes \
                 the integrator's, which is not serialised"
            ),
        })
    }

    fn deserialize_state(&mut self, _bytes: &[u8]) -> Result<StateId> {
        Err(Error::Unsupported {
            instance: self.inner.name().to_string(),
            message: "deserialize_state: the state of a Model Exchange component includes the \
                      integrator's, which is not serialised"
                .into(),
        })
    }

    fn provides_directional_derivatives(&self) -> bool {
        self.inner.provides_directional_derivatives()
    }

    fn directional_derivative(
        &mut self,
        unknowns: &[ValueReference],
        knowns: &[ValueReference],
        seed: &[f64],
        sensitivity: &mut [f64],
    ) -> Result<()> {
        self.inner
            .directional_derivative(unknowns, knowns, seed, sensitivity)
    }

    /// First derivatives of the outputs, from directional derivatives: `dy/dt = dy/dx x'`
    /// (inputs are held between communication points, so `dy/du u'` is zero).
    fn max_output_derivative_order(&self) -> u32 {
        u32::from(self.output_derivatives_available())
    }

    fn get_output_derivatives(
        &mut self,
        vrs: &[ValueReference],
        order: u32,
        values: &mut [f64],
    ) -> Result<()> {
        let available = order == 1 && self.output_derivatives_available();
        // Disjoint fields: the value references are borrowed, not copied, on every call.
        let state_vrs = match &self.state_vrs {
            Some(state_vrs) if available => state_vrs,
            _ => {
                return Err(Error::Unsupported {
                    instance: self.inner.name().to_string(),
                    message: format!(
                        "get_output_derivatives(order {order}): a Model Exchange component \
                         offers first derivatives only, and only when it provides directional \
                         derivatives of scalar states"
                    ),
                })
            }
        };
        self.inner.get_derivatives(&mut self.derivatives)?;
        self.inner
            .directional_derivative(vrs, state_vrs, &self.derivatives, values)
    }

    fn set_input_polynomial(
        &mut self,
        vrs: &[ValueReference],
        order: usize,
        taylor: &[f64],
    ) -> Result<PolynomialInputMode> {
        if taylor.len() != vrs.len() * (order + 1) {
            return Err(Error::Internal(format!(
                "{}: set_input_polynomial: {} coefficients for {} inputs of order {order}",
                self.inner.name(),
                taylor.len(),
                vrs.len()
            )));
        }
        let values: Vec<f64> = (0..vrs.len()).map(|k| taylor[k * (order + 1)]).collect();
        self.set_float64(vrs, &values)?;
        if order > 0 {
            self.carry = None;
            self.inputs = InputPolynomials {
                t0: self.time,
                vrs: vrs.to_vec(),
                taylor: taylor.to_vec(),
                order,
                values: std::cell::RefCell::new(values),
            };
        }
        Ok(PolynomialInputMode::Evaluated)
    }

    fn call_count(&self) -> u64 {
        self.inner.call_count()
    }

    fn integrator_statistics(&self) -> Option<Statistics> {
        Some(self.statistics)
    }
}

impl ModelExchangeSlave {
    fn output_derivatives_available(&self) -> bool {
        self.state_vrs.is_some()
            && !self.x.is_empty()
            && self.inner.provides_directional_derivatives()
    }

    fn extras(&self) -> Saved {
        Saved {
            time: self.time,
            next_time_event: self.next_time_event,
            last_step: self.last_step,
            carry: self.carry.clone(),
        }
    }
}
