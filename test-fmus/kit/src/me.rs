//! Model Exchange (FMI 2.0 and FMI 3.0), version-neutral: the importer integrates the
//! continuous states; the instance evaluates the model's equations at the time and states it
//! is given, reports event indicators and time events, and runs the event iteration. The
//! `fmi2` and `fmi3` modules are thin C layers over it.
//!
//! State events: an indicator has crossed when its value has changed sign (or reached zero)
//! relative to a reference value. The reference is taken at the end of every event iteration
//! and moved on by every `fmi*CompletedIntegratorStep` whose indicator did not cross it, so a
//! crossing the importer stepped over stays visible until the next Event Mode, where
//! [`Model::event`] gets the crossed indicators. A reference of exactly zero (an indicator
//! reinitialised onto zero by an event) is left at the first completed step away from zero.

use crate::instance::{
    crossed, Instance, Interface, Phase, Status, LOG_EVENTS, MAX_EVENTS_PER_STEP,
};
use crate::model::{Event, Model};

/// What one event iteration (`fmi2NewDiscreteStates`, `fmi3UpdateDiscreteStates`) reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct EventInfo {
    /// Another iteration is needed at the same time (a further time event is due).
    pub need_update: bool,
    /// The model asked to terminate the simulation.
    pub terminate: bool,
    /// The nominals of the continuous states changed (never, in this kit).
    pub nominals_changed: bool,
    /// The event action changed continuous states (the integrator must restart).
    pub values_changed: bool,
    /// The next time event (or time of a termination request), if any.
    pub next_time: Option<f64>,
}

/// The tolerance within which a time event counts as due.
fn time_tol(t: f64) -> f64 {
    1e-12_f64.max(8.0 * f64::EPSILON * t.abs())
}

/// Phases where the Model Exchange getters answer.
const GETTERS: [Phase; 5] = [
    Phase::Initialization,
    Phase::Event,
    Phase::ContinuousTime,
    Phase::Terminated,
    Phase::Failed,
];

impl<M: Model> Instance<M> {
    /// Errors unless the FMU exports Model Exchange and this instance was created for it.
    pub(crate) fn expect_me(&self, func: &str) -> Result<(), Status> {
        if !M::MODEL_EXCHANGE {
            return Err(self.fail(
                func,
                "Model Exchange is not supported by this FMU (its model description has no \
                 <ModelExchange> element)",
            ));
        }
        if self.interface != Interface::ModelExchange {
            return Err(self.fail(
                func,
                "this is a Model Exchange function, but the instance was instantiated for \
                 Co-Simulation",
            ));
        }
        Ok(())
    }

    /// Errors if this instance was created for Model Exchange.
    pub(crate) fn expect_cs(&self, func: &str) -> Result<(), Status> {
        if self.interface != Interface::CoSimulation {
            return Err(self.fail(
                func,
                format!(
                    "this is a Co-Simulation function, but the instance was instantiated for \
                     {:?}",
                    self.interface
                ),
            ));
        }
        Ok(())
    }

    /// Number of continuous states (array states count every element).
    pub(crate) fn n_states(&self) -> usize {
        self.table
            .states
            .iter()
            .map(|&(s, _)| self.table.vars[s].len())
            .sum()
    }

    fn check_nx(&self, func: &str, n: usize) -> Result<(), Status> {
        let nx = self.n_states();
        if n == nx {
            Ok(())
        } else {
            Err(self.fail(
                func,
                format!("nx = {n}, but the FMU has {nx} continuous states"),
            ))
        }
    }

    fn me_checks(&self, func: &str, allowed: &[Phase]) -> Result<(), Status> {
        self.expect_me(func)?;
        self.expect(func, allowed)
    }

    /// `fmi*SetTime`: in Event Mode and Continuous-Time Mode.
    pub(crate) fn me_set_time(&mut self, func: &str, t: f64) -> Status {
        if let Err(s) = self.me_checks(func, &[Phase::Event, Phase::ContinuousTime]) {
            return s;
        }
        if !t.is_finite() {
            return self.fail(func, format!("time {t} is not finite"));
        }
        self.s.time = t;
        self.s.dirty = true;
        Status::Ok
    }

    /// `fmi*SetContinuousStates`: in Continuous-Time Mode only.
    pub(crate) fn me_set_states(&mut self, func: &str, x: &[f64]) -> Status {
        if let Err(s) = self.me_checks(func, &[Phase::ContinuousTime]) {
            return s;
        }
        if let Err(s) = self.check_nx(func, x.len()) {
            return s;
        }
        self.put_states(x);
        self.s.dirty = true;
        Status::Ok
    }

    /// `fmi*GetContinuousStates`.
    pub(crate) fn me_get_states(&mut self, func: &str, out: &mut [f64]) -> Status {
        if let Err(s) = self
            .me_checks(func, &GETTERS)
            .and_then(|()| self.check_nx(func, out.len()))
            .and_then(|()| self.ensure_fresh(func))
        {
            return s;
        }
        out.copy_from_slice(&self.states());
        Status::Ok
    }

    /// `fmi2GetDerivatives` / `fmi3GetContinuousStateDerivatives`: [`Model::evaluate`] at the
    /// current time, states and inputs.
    pub(crate) fn me_get_derivatives(&mut self, func: &str, out: &mut [f64]) -> Status {
        if let Err(s) = self
            .me_checks(func, &GETTERS)
            .and_then(|()| self.check_nx(func, out.len()))
            .and_then(|()| self.ensure_fresh(func))
        {
            return s;
        }
        self.derivatives(out);
        Status::Ok
    }

    /// `fmi*GetEventIndicators`: [`Model::event_indicators`] at the current values.
    pub(crate) fn me_get_event_indicators(&mut self, func: &str, out: &mut [f64]) -> Status {
        if let Err(s) = self.me_checks(func, &GETTERS) {
            return s;
        }
        if out.len() != M::NUM_EVENT_INDICATORS {
            return self.fail(
                func,
                format!(
                    "ni = {}, but the FMU has {} event indicators",
                    out.len(),
                    M::NUM_EVENT_INDICATORS
                ),
            );
        }
        if let Err(s) = self.ensure_fresh(func) {
            return s;
        }
        let t = self.s.time;
        self.indicators(t, out);
        Status::Ok
    }

    /// `fmi*GetNominalsOfContinuousStates`: the states' `nominal` attributes (1 without one).
    pub(crate) fn me_get_nominals(&mut self, func: &str, out: &mut [f64]) -> Status {
        let allowed = [
            Phase::Instantiated,
            Phase::Configuration,
            Phase::Initialization,
            Phase::Event,
            Phase::ContinuousTime,
            Phase::Terminated,
            Phase::Failed,
        ];
        if let Err(s) = self
            .me_checks(func, &allowed)
            .and_then(|()| self.check_nx(func, out.len()))
        {
            return s;
        }
        let mut k = 0;
        for &(s, _) in &self.table.states {
            let v = &self.table.vars[s];
            for _ in 0..v.len() {
                out[k] = v.nominal.unwrap_or(1.0);
                k += 1;
            }
        }
        Status::Ok
    }

    /// FMI 3 `fmi3GetNumberOfContinuousStates` / `fmi3GetNumberOfEventIndicators`: any time.
    pub(crate) fn me_sizes(&self, func: &str) -> Result<(usize, usize), Status> {
        self.expect_me(func)?;
        Ok((self.n_states(), M::NUM_EVENT_INDICATORS))
    }

    /// `fmi*EnterEventMode`: from Continuous-Time Mode.
    pub(crate) fn me_enter_event_mode(&mut self, func: &str) -> Status {
        if let Err(s) = self.me_checks(func, &[Phase::ContinuousTime]) {
            return s;
        }
        self.phase = Phase::Event;
        self.event_iterations = 0;
        Status::Ok
    }

    /// `fmi*EnterContinuousTimeMode`: from Event Mode.
    pub(crate) fn me_enter_continuous_time_mode(&mut self, func: &str) -> Status {
        if let Err(s) = self.me_checks(func, &[Phase::Event]) {
            return s;
        }
        self.phase = Phase::ContinuousTime;
        Status::Ok
    }

    /// `fmi*CompletedIntegratorStep`: accepts the current point; returns the status,
    /// `enterEventMode` (never: the kit's models have no step events) and
    /// `terminateSimulation` (a termination request of the model up to now).
    pub(crate) fn me_completed_integrator_step(&mut self, func: &str) -> (Status, bool, bool) {
        if let Err(s) = self
            .me_checks(func, &[Phase::ContinuousTime])
            .and_then(|()| self.ensure_fresh(func))
        {
            return (s, false, false);
        }
        let t = self.s.time;
        let mut z = vec![0.0; M::NUM_EVENT_INDICATORS];
        self.indicators(t, &mut z);
        for (r, &zk) in self.s.z_ref.iter_mut().zip(&z) {
            if !crossed(*r, zk) {
                *r = zk;
            }
        }
        let (status, terminate) = self.me_failure(func, t);
        (status, false, terminate)
    }

    /// One event iteration (`fmi2NewDiscreteStates`, `fmi3UpdateDiscreteStates`): handles
    /// the time event due now and the indicators that crossed since the last iteration with
    /// one call of [`Model::event`], then reports the next time event.
    pub(crate) fn me_update_discrete_states(&mut self, func: &str) -> Result<EventInfo, Status> {
        self.me_checks(func, &[Phase::Event])?;
        self.ensure_fresh(func)?;
        self.event_iterations += 1;
        let t = self.s.time;
        if self.event_iterations > MAX_EVENTS_PER_STEP {
            return Err(self.fail(
                func,
                format!(
                    "more than {MAX_EVENTS_PER_STEP} event iterations at t = {t}: the model \
                     does not settle"
                ),
            ));
        }
        let tol = time_tol(t);
        let due = |te: Option<f64>| te.is_some_and(|te| te <= t + tol);
        let before = self.states();
        let time_event = M::HAS_TIME_EVENTS && due(self.model.next_time_event(&self.s.values, t));
        let mut z = vec![0.0; M::NUM_EVENT_INDICATORS];
        self.indicators(t, &mut z);
        let state_events: Vec<usize> = (0..z.len())
            .filter(|&k| crossed(self.s.z_ref[k], z[k]))
            .collect();
        let ev = Event {
            time_event,
            state_events,
        };
        if !ev.is_empty() {
            if let Err(e) = self.apply_event(t, &ev) {
                self.phase = Phase::Failed;
                return Err(self.fail(func, format!("event action failed: {e}")));
            }
            self.indicators(t, &mut z);
        }
        self.s.z_ref = z;
        let values_changed = self.states() != before;
        let next = if M::HAS_TIME_EVENTS {
            self.model.next_time_event(&self.s.values, t)
        } else {
            None
        };
        let need_update = due(next);
        let (status, terminate) = self.me_failure(func, t);
        if status >= Status::Error {
            return Err(status);
        }
        // A termination request later on is announced as a time event, so that the importer
        // stops there.
        let stop = self
            .model
            .step_failure(&self.s.values, t, f64::INFINITY)
            .filter(|f| f.terminate && f.time > t + tol)
            .map(|f| f.time);
        let next_time = match (next, stop) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(EventInfo {
            need_update: need_update && !terminate,
            terminate,
            nominals_changed: false,
            values_changed,
            next_time,
        })
    }

    /// The model's failure or termination request ([`Model::step_failure`]) between the last
    /// accepted point and `t`, which becomes the last accepted point. A termination request
    /// gives OK and `terminateSimulation`; a failure returns its status with its message.
    fn me_failure(&mut self, func: &str, t: f64) -> (Status, bool) {
        let planned = self.planned_failure(self.s.me_last, t);
        self.s.me_last = t;
        match planned {
            None => (Status::Ok, false),
            Some((f, _)) if f.terminate => {
                self.logger.log_always(
                    Status::Ok,
                    LOG_EVENTS,
                    &format!("{func}: terminateSimulation at t = {t}: {}", f.message),
                );
                (Status::Ok, true)
            }
            Some((f, _)) => {
                let status = self.step_failed(func, &f);
                (status, false)
            }
        }
    }
}
