//! The `Model` trait a model crate implements, and what the kit hands to it.

use std::path::{Path, PathBuf};

use crate::clock::{Clock, Ticks};
use crate::instance::Status;
use crate::values::Values;
use crate::variable::{Table, Variable};

/// Why the kit calls [`Model::event`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// A time event from [`Model::next_time_event`] is due.
    pub time_event: bool,
    /// Indices of the event indicators that crossed zero.
    pub state_events: Vec<usize>,
}

impl Event {
    /// Whether nothing happened.
    pub fn is_empty(&self) -> bool {
        !self.time_event && self.state_events.is_empty()
    }
}

/// A failure a model asks for in a communication step ([`Model::step_failure`]), to test how
/// importers handle failing FMUs, or the model's request to terminate the simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct StepFailure {
    /// What the step returns: `Warning` (the step completes), `Discard` (the step stops at
    /// `time`, which becomes the last successful time; the instance may continue from there),
    /// `Error` (the step stops at `time`, the instance is unusable until reset or a state is
    /// restored) or `Fatal` (every later call returns Fatal and free frees nothing: FMI allows
    /// no call after Fatal). `Ok` means no failure.
    /// Ignored when `terminate` is set.
    pub status: Status,
    /// Where the step stops (clamped to the step's interval).
    pub time: f64,
    /// The message logged with the status.
    pub message: String,
    /// Instead of failing, the model requests the end of the simulation at `time`: the step
    /// stops there and FMI 2 returns Discard with `fmi2Terminated` true, FMI 3 returns OK with
    /// `terminateSimulation`; the instance then allows getters, FMU states, terminate, reset,
    /// free (and in FMI 3 the sets of Step Mode), and refuses further steps until a state is
    /// restored or it is reset.
    pub terminate: bool,
}

impl StepFailure {
    /// A failure with `status` at `time`.
    pub fn new(status: Status, time: f64, message: impl Into<String>) -> Self {
        StepFailure {
            status,
            time,
            message: message.into(),
            terminate: false,
        }
    }

    /// A request to terminate the simulation at `time` (see the field `terminate`).
    pub fn termination(time: f64, message: impl Into<String>) -> Self {
        StepFailure {
            status: Status::Ok,
            time,
            message: message.into(),
            terminate: true,
        }
    }
}

/// The `DefaultExperiment` of the model descriptions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Experiment {
    /// Start time.
    pub start: f64,
    /// Stop time.
    pub stop: f64,
    /// Communication step size.
    pub step: f64,
}

/// What an instance knows about its surroundings, given to [`Model::initialize`].
#[derive(Clone, Debug)]
pub struct Context {
    /// Instance name given by the importer.
    pub instance_name: String,
    /// FMI major version the instance was created through (2 or 3).
    pub fmi_version: u8,
    /// The unpacked `resources/` folder, when the importer gave one.
    pub resource_dir: Option<PathBuf>,
    /// Start time of the experiment.
    pub start_time: f64,
}

impl Context {
    /// A file inside the resources folder.
    pub fn resource(&self, name: &str) -> Result<PathBuf, String> {
        match &self.resource_dir {
            Some(d) => Ok(d.join(name)),
            None => Err("the importer gave no resource location".into()),
        }
    }

    /// The resources folder.
    pub fn resource_dir(&self) -> Option<&Path> {
        self.resource_dir.as_deref()
    }
}

/// The trajectories of the scalar Float64 inputs over the current interval, as Taylor
/// coefficients `[u, u', u'', u''']` at time `t0` (FMI 2 input derivatives or the cubic the
/// FMI 3 layer fitted through intermediate-update samples; zeros when inputs are held).
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    pub(crate) table: &'a Table,
    pub(crate) t0: f64,
    pub(crate) coeffs: &'a [[f64; 4]],
}

impl Inputs<'_> {
    /// Reference time of the coefficients.
    pub fn t0(&self) -> f64 {
        self.t0
    }

    /// `[u, u', u'', u''']` of an input at `t0` (zeros for an unknown reference).
    pub fn taylor(&self, vr: u32) -> [f64; 4] {
        self.position(vr).map_or([0.0; 4], |k| self.coeffs[k])
    }

    /// The input's value at time `t`.
    pub fn at(&self, vr: u32, t: f64) -> f64 {
        eval_taylor(&self.taylor(vr), t - self.t0)[0]
    }

    fn position(&self, vr: u32) -> Option<usize> {
        self.table
            .real_inputs
            .iter()
            .position(|&i| self.table.vars[i].vr == vr)
    }
}

/// Value and derivatives of a cubic given by Taylor coefficients, `s` after their time.
pub fn eval_taylor(c: &[f64; 4], s: f64) -> [f64; 4] {
    [
        c[0] + s * (c[1] + s * (c[2] / 2.0 + s * c[3] / 6.0)),
        c[1] + s * (c[2] + s * c[3] / 2.0),
        c[2] + s * c[3],
        c[3],
    ]
}

/// How the kit integrates the continuous states of a model without [`Model::EXACT_STEP`]
/// (chosen per instance by [`Model::integrator`], so tolerances may be parameters).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Integrator {
    /// Classical fixed-step RK4 with the step [`Model::internal_step`] (shortened to land on
    /// communication points and time events). The default.
    Rk4,
    /// Dormand–Prince 5(4), an embedded explicit Runge–Kutta pair with FSAL, local
    /// extrapolation and step-size control, for stiff-ish or strongly varying dynamics
    /// (contacts, impulses). Each component's local error estimate is measured against
    /// `atol + rtol·max(|y|, |y_new|)` in the max norm (so padding states that never change
    /// do not dilute it); rejected steps are retried with a smaller step; the last step of an
    /// interval is stretched by at most 1 % or shortened to land exactly on the communication
    /// point (or time event). Every interval starts from Hairer's starting-step heuristic
    /// evaluated at the current states, never from an earlier interval's step, so a restored
    /// FMU state continues bit-identically. Without event indicators a whole communication
    /// step is one adaptive interval; with them, the intervals are [`Model::internal_step`]
    /// long (the event search grid) and a crossing is bisected as with RK4.
    DormandPrince {
        /// Relative tolerance (> 0).
        rtol: f64,
        /// Absolute tolerance (> 0), in the states' units.
        atol: f64,
        /// Largest step (`f64::INFINITY`: unlimited), e.g. to not step over short input pulses.
        max_step: f64,
    },
}

/// One model: its variables and equations. All mutable data lives in [`Values`], so methods
/// take `&self`; `Default` creates the model object of an instance.
///
/// Continuous states are the variables other variables declare themselves the derivative of
/// ([`Variable::derivative_of`]): scalar Float64, or Float64 arrays (FMI 3 only) whose
/// derivative has the same dimensions. The kit integrates them with fixed-step RK4
/// ([`Model::internal_step`]), adaptive Dormand–Prince ([`Model::integrator`]) or the model's
/// [`Model::exact_step`] (whose `x` holds array states element by element), handles state events
/// (sign changes of [`Model::event_indicators`], located to ~1e-12 s) and time events
/// ([`Model::next_time_event`], landed on exactly), and calls [`Model::event`] for both.
pub trait Model: Default + 'static {
    /// Model name and `modelIdentifier` (the shared library's file name stem).
    const NAME: &'static str;
    /// One-line description for the model descriptions.
    const DESCRIPTION: &'static str = "";
    /// Number of event indicators (state events).
    const NUM_EVENT_INDICATORS: usize = 0;
    /// Whether [`Model::next_time_event`] may return events.
    const HAS_TIME_EVENTS: bool = false;
    /// Whether [`Model::exact_step`] is implemented (then RK4 is not used).
    const EXACT_STEP: bool = false;
    /// Highest order [`Model::output_derivative`] answers (0 = none).
    const MAX_OUTPUT_DERIVATIVE_ORDER: u32 = 0;
    /// Whether the FMU also exports the FMI 2.0 and FMI 3.0 Model Exchange interface (see the
    /// crate documentation): the importer integrates the continuous states with its own
    /// solver, using [`Model::evaluate`] for the derivatives, [`Model::event_indicators`] and
    /// [`Model::next_time_event`] for events and [`Model::event`] in event iteration. Models
    /// with event indicators must then name their variables in
    /// [`Model::EVENT_INDICATOR_VARIABLES`].
    const MODEL_EXCHANGE: bool = false;
    /// Whether the FMU is an FMI 3.0 Scheduled Execution FMU instead of a Co-Simulation one:
    /// each input clock is a model partition ([`Model::clock_tick`] with that clock alone
    /// active) that the importer activates with `fmi3ActivateModelPartition`; the model
    /// reports raised output clocks and scheduled countdowns through `clockUpdate`. The FMI
    /// 2.0 archive of such a model has no clocks, so its partitions never run.
    const SCHEDULED_EXECUTION: bool = false;
    /// The scalar Float64 variables whose values equal the event indicators, in indicator
    /// order (the FMI 3 `<EventIndicator>` elements of a Model Exchange FMU); one per
    /// [`Model::NUM_EVENT_INDICATORS`].
    const EVENT_INDICATOR_VARIABLES: &'static [u32] = &[];
    /// Default experiment of the model descriptions.
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 10.0,
        step: 0.01,
    };

    /// The variable table (without `time`, which the kit adds as value reference 0).
    fn variables(&self) -> Vec<Variable>;

    /// Called when FMI 3 Configuration Mode ends, with the structural parameters set: check
    /// them and prepare what depends on them. An error makes `fmi3ExitConfigurationMode`
    /// return Error with the message. Arrays declared [`Variable::sized_by`] a structural
    /// parameter take its value as their size right after this returns.
    fn configure(&self, _v: &mut Values) -> Result<(), String> {
        Ok(())
    }

    /// Computes calculated variables from parameters during initialization (e.g. states from
    /// their start parameters, data from a resource file). Called on entering and leaving
    /// Initialization Mode and before a get in it after a set.
    fn initialize(&self, _v: &mut Values, _cx: &Context) -> Result<(), String> {
        Ok(())
    }

    /// Computes state derivatives, outputs and locals from time, states, inputs, parameters.
    fn evaluate(&self, v: &mut Values, time: f64) -> Result<(), String>;

    /// Analytic partial derivative d`of`/d`wrt` at the current values; `None` lets the kit
    /// use central finite differences.
    fn partial(&self, _v: &Values, _time: f64, _of: u32, _wrt: u32) -> Option<f64> {
        None
    }

    /// The `order`-th time derivative of an output at the current time; `inputs` carries the
    /// current input derivatives (set by `fmi2SetRealInputDerivatives`, zero otherwise).
    fn output_derivative(
        &self,
        _v: &Values,
        _inputs: &Inputs<'_>,
        _time: f64,
        _vr: u32,
        _order: u32,
    ) -> Option<f64> {
        None
    }

    /// Advances the continuous states `x` (in table order) exactly from `t` to `t + h`,
    /// with `inputs` given at `t`. Only called when [`Model::EXACT_STEP`] is true.
    fn exact_step(
        &self,
        _v: &Values,
        _inputs: &Inputs<'_>,
        _t: f64,
        _h: f64,
        _x: &mut [f64],
    ) -> Result<(), String> {
        Err("this model has no exact step".into())
    }

    /// Internal RK4 step size (the kit shortens it to land on communication points); with
    /// [`Integrator::DormandPrince`] and event indicators, the event search grid.
    fn internal_step(&self, _v: &Values) -> f64 {
        1e-3
    }

    /// The integrator for the continuous states at the current parameters (ignored when
    /// [`Model::EXACT_STEP`] is true). Default: [`Integrator::Rk4`].
    fn integrator(&self, _v: &Values) -> Integrator {
        Integrator::Rk4
    }

    /// Writes the [`Model::NUM_EVENT_INDICATORS`] event indicators at the current values.
    fn event_indicators(&self, _v: &Values, _time: f64, _z: &mut [f64]) {}

    /// The next time event strictly after `time`, derived from discrete state (not from `time`
    /// alone, so a handled event is not found again).
    fn next_time_event(&self, _v: &Values, _time: f64) -> Option<f64> {
        None
    }

    /// The model's own work in a communication step besides integration (called once per
    /// step, before it): a stand-in for the cost of an expensive model, for benchmarks.
    fn step_work(&self, _v: &Values) {}

    /// A failure to simulate, or a termination request, in the communication step from `t` to
    /// `t_end` (`None`: none). Called before the step is integrated; see [`StepFailure`].
    fn step_failure(&self, _v: &Values, _t: f64, _t_end: f64) -> Option<StepFailure> {
        None
    }

    /// FMI 3 clocks (`<Clock>` variables; see [`crate::clock`]). A model with clocks has
    /// Event Mode (`hasEventMode="true"`).
    fn clocks(&self) -> Vec<Clock> {
        Vec::new()
    }

    /// The clocked partition: runs once per Event Mode instant in which input clocks tick,
    /// after the importer set them and the clocked inputs; reads which clocks are active,
    /// updates clocked variables, raises output clocks and schedules countdown clocks.
    fn clock_tick(
        &self,
        _v: &mut Values,
        _time: f64,
        _ticks: &mut Ticks<'_>,
    ) -> Result<(), String> {
        Ok(())
    }

    /// The output clocks the model raises at a time or state event a Co-Simulation step found
    /// (with `eventModeUsed`: the step returns early there with `eventHandlingNeeded`, and
    /// `fmi3GetClock` reads them active in the Event Mode that follows).
    fn clocks_at_event(&self, _v: &Values, _time: f64, _event: &Event) -> Vec<u32> {
        Vec::new()
    }

    /// Event action: reinitialise states, update discrete variables. After a state event a
    /// reinit should put the indicator exactly on zero or on the side it moves away to.
    fn event(&self, _v: &mut Values, _time: f64, _event: &Event) -> Result<(), String> {
        Ok(())
    }
}
