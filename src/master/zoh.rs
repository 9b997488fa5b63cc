//! Jacobi and Gauss-Seidel stepping with zero-order hold or polynomial extrapolation of inputs.
//!
//! Float64 inputs follow the Lagrange polynomial of degree k through the last k + 1 coupling
//! values (k = 0: held), handed to the FMU through `Slave::set_input_polynomial`. In
//! Gauss-Seidel, an input whose source has already stepped follows the interpolation through
//! the source's new value instead. A component may take several sub-steps per macro step
//! (multirate); an FMI 3 early return for an event is handled inside the macro step, so the
//! component reaches the communication point having handled its event where it happened.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use super::execution::{
    event_iteration, read_outputs, set_scalar, ComponentPlan, Execution, History,
};
use super::inputs::TableInputs;
use super::polynomial::{lagrange_taylor, shift_taylor, MAX_DEGREE};
use super::pool::{Placement, Unit};
use crate::fmu::slave::StepResult;
use crate::settings::AlgorithmKind;
use crate::system::resolve::ResolvedSystem;
use crate::Result;

/// Everything a step task reads (shared, immutable while components step).
struct StepInputs<'a> {
    resolved: &'a ResolvedSystem,
    plans: &'a [ComponentPlan],
    history: &'a History,
    values: &'a [f64],
    after_step: &'a [AtomicU64],
    /// Gauss-Seidel: components that already reached the new communication point.
    stepped: Option<&'a [bool]>,
    /// Startup corrector: every input follows the interpolation through these values at the
    /// step's end (the coupling values just computed there) and the history.
    corrector: Option<&'a [f64]>,
    /// Extended coupling (with `corrector`): the values at the step's middle of the half-step
    /// connections, whose inputs follow the C / L / Q functions through the values at the
    /// step's start, middle and end (see `half_step_taylor`).
    midpoints: Option<&'a [f64]>,
    /// Step control: this extrapolation order for every Float64 input instead of the
    /// connections' own.
    order_override: Option<u8>,
    /// Inputs from a table, per component.
    table_inputs: &'a [TableInputs],
    terminate: &'a AtomicBool,
    events: &'a AtomicU64,
    early_returns: &'a AtomicU64,
    t_start: f64,
    t_end: f64,
    /// The part of the macro step `[t_start, t_end]` to take now: all of it, except where a
    /// simulation stops inside a macro step ([`Execution::step_part`]).
    from: f64,
    to: f64,
}

impl Execution {
    /// One macro step of size `h` with the system's algorithm, then the exchange at the new
    /// communication point.
    pub fn step(&mut self, h: f64) -> Result<()> {
        let t_start = self.time;
        let t_end = t_start + h;
        let passes = self.startup_passes();
        if passes > 0 {
            self.save_states()?;
        }
        match self.resolved.system.experiment.algorithm.kind() {
            AlgorithmKind::GaussSeidel => self.step_gauss_seidel(t_end)?,
            AlgorithmKind::Implicit => return self.step_implicit_fixed(h),
            _ => self.step_jacobi(t_end, None)?,
        }
        self.time = t_end;
        self.exchange(false)?;
        for _ in 0..passes {
            self.restore_states()?;
            self.time = t_start;
            let at_end = self.values.clone();
            self.step_jacobi(t_end, Some(&at_end))?;
            self.time = t_end;
            self.exchange(false)?;
        }
        self.push_history();
        Ok(())
    }

    /// Corrector passes for a startup step.
    ///
    /// With extrapolation order k, macro step j (counted from 0) can only extrapolate with
    /// degree j while the history is short; its local error O(H^(j+2)) would cap the global
    /// order at j + 2 < k + 1. Repeating such a step from the saved FMU states with the
    /// interpolation through the new coupling values raises each pass's accuracy by one order,
    /// so k - 1 - j passes make the startup as accurate as the steps after it. Without FMU
    /// state get/set the startup stays explicit (documented: the global order is then 2 at most
    /// for k >= 2).
    fn startup_passes(&self) -> usize {
        // Past the startup no order needs passes: spare the per-step scan of every input.
        if self.history.len() >= MAX_DEGREE {
            return 0;
        }
        let k = self.max_extrapolation_order();
        let j = self.history.len().saturating_sub(1);
        if k < 2 || j + 1 >= k || !self.can_roll_back() {
            return 0;
        }
        k - 1 - j
    }

    pub(crate) fn step_jacobi(&mut self, t_end: f64, corrector: Option<&[f64]>) -> Result<()> {
        self.step_jacobi_with(t_end, corrector, None)
    }

    /// A Jacobi step of the extended coupling: every input follows the interpolation through
    /// `at_end` and the history, except the half-step connections, which follow their C / L / Q
    /// function through the last value, `midpoints` and `at_end`.
    pub(crate) fn step_jacobi_half_steps(
        &mut self,
        t_end: f64,
        at_end: &[f64],
        midpoints: &[f64],
    ) -> Result<()> {
        self.step_jacobi_with(t_end, Some(at_end), Some(midpoints))
    }

    fn step_jacobi_with(
        &mut self,
        t_end: f64,
        corrector: Option<&[f64]>,
        midpoints: Option<&[f64]>,
    ) -> Result<()> {
        let since = self.ranks.as_ref().map(|_| Instant::now());
        let stepped = self.step_jacobi_here((self.time, t_end, t_end), corrector, midpoints);
        self.integrated(since);
        self.share_sources(stepped)
    }

    /// Under mpirun: the components' stepping since `since` on this rank's clock.
    pub(crate) fn integrated(&self, since: Option<Instant>) {
        if let (Some(since), Some(ranks)) = (since, &self.ranks) {
            ranks.clock.integrating(since);
        }
    }

    /// Whether a macro step can be taken in parts ([`Execution::step_part`]): Jacobi (held or
    /// extrapolated inputs), past the startup's corrector passes. Gauss-Seidel needs each
    /// source's value at the step's end, the implicit algorithms iterate over the whole step.
    pub fn steps_in_parts(&self) -> bool {
        self.resolved.system.experiment.algorithm.kind() == AlgorithmKind::Jacobi
    }

    /// Part of the Jacobi macro step `[start, end]` ([`Execution::steps_in_parts`]): every
    /// component steps from the current time to `to` with the inputs of the whole macro step
    /// (held, or following their polynomials from `start`), and nothing is exchanged; the part
    /// that reaches `end` exchanges and keeps the history as [`Execution::step`] does. So a
    /// simulation stopped inside a macro step (an exported FMU's importer asking for a point
    /// off the macro grid) goes on with the coupling of the run that was not stopped.
    ///
    /// A startup step with corrector passes ([`Execution::step`]) takes the predictor and all
    /// passes but the last whole, at its first part; the last pass is taken in parts.
    pub fn step_part(&mut self, (start, end): (f64, f64), to: f64) -> Result<()> {
        if self.time == start {
            self.part_corrector = None;
            let passes = self.startup_passes();
            if passes > 0 {
                self.save_states()?;
                self.step_jacobi(end, None)?;
                self.time = end;
                self.exchange(false)?;
                for _ in 1..passes {
                    self.restore_states()?;
                    self.time = start;
                    let at_end = self.values.clone();
                    self.step_jacobi(end, Some(&at_end))?;
                    self.time = end;
                    self.exchange(false)?;
                }
                self.restore_states()?;
                self.time = start;
                self.part_corrector = Some(self.values.clone());
            }
        }
        let corrector = self.part_corrector.take();
        let since = self.ranks.as_ref().map(|_| Instant::now());
        let stepped = self.step_jacobi_here((start, end, to), corrector.as_deref(), None);
        self.integrated(since);
        self.part_corrector = corrector;
        self.share_sources(stepped)?;
        self.time = to;
        if to == end {
            self.part_corrector = None;
            self.exchange(false)?;
            self.push_history();
        }
        Ok(())
    }

    /// [`Execution::step_jacobi_with`] on the components of this process: the macro step
    /// `span.0 ..= span.1`, from the current time to `span.2`.
    fn step_jacobi_here(
        &mut self,
        span: (f64, f64, f64),
        corrector: Option<&[f64]>,
        midpoints: Option<&[f64]>,
    ) -> Result<()> {
        let inputs = StepInputs {
            corrector,
            midpoints,
            order_override: self.order_override,
            resolved: &self.resolved,
            plans: &self.plans,
            history: &self.history,
            values: &self.values,
            after_step: &self.after_step,
            stepped: None,
            table_inputs: &self.table_inputs,
            terminate: &self.terminate_requested,
            events: &self.events,
            early_returns: &self.early_returns,
            t_start: span.0,
            t_end: span.1,
            from: self.time,
            to: span.2,
        };
        let whole = inputs.from == inputs.t_start && inputs.to == inputs.t_end;
        // Components in worker processes step side by side: start every step, then collect.
        if let (true, true, Placement::Local(units)) =
            (whole, self.all_in_background, &mut self.placement)
        {
            for (i, unit) in units.iter_mut().enumerate() {
                if startable(i, &inputs) {
                    start_component(i, unit, &inputs)?;
                }
            }
            for (i, unit) in units.iter_mut().enumerate() {
                step_component_from(i, unit, &inputs, startable(i, &inputs))?;
            }
            return Ok(());
        }
        self.placement
            .run_all(&|i, unit: &mut Unit| step_component(i, unit, &inputs))
    }

    /// Run `task` for every component (in parallel on the worker pool), handing it a function
    /// that steps the component over `[self.time, t_end]` with its inputs interpolated through
    /// the given end values of every connection (as the corrector does). The trials of the
    /// component interface Jacobian use it; the task restores the component's state itself.
    pub(crate) fn run_step_trials(
        &mut self,
        t_end: f64,
        task: &(dyn Fn(usize, &mut Unit, &TrialStep<'_>) -> Result<()> + Sync),
    ) -> Result<()> {
        let (t_start, order_override) = (self.time, self.order_override);
        let (resolved, plans, history, values) =
            (&self.resolved, &self.plans, &self.history, &self.values);
        let table_inputs = &self.table_inputs;
        let (after_step, terminate, events, early_returns) = (
            &self.after_step,
            &self.terminate_requested,
            &self.events,
            &self.early_returns,
        );
        let step = |i: usize, unit: &mut Unit, at_end: &[f64]| {
            let inputs = StepInputs {
                corrector: Some(at_end),
                midpoints: None,
                order_override,
                resolved,
                plans,
                history,
                values,
                after_step,
                stepped: None,
                table_inputs,
                terminate,
                events,
                early_returns,
                t_start,
                t_end,
                from: t_start,
                to: t_end,
            };
            step_component(i, unit, &inputs)
        };
        self.placement
            .run_all(&|i, unit: &mut Unit| task(i, unit, &step))
    }

    pub(crate) fn step_gauss_seidel(&mut self, t_end: f64) -> Result<()> {
        self.stepped.iter_mut().for_each(|s| *s = false);
        if self.neighbours.is_some() {
            return self.sweep_over_neighbours(t_end);
        }
        for k in 0..self.graph.gauss_seidel_order.len() {
            let i = self.graph.gauss_seidel_order[k];
            let since = self.ranks.as_ref().map(|_| Instant::now());
            let result = self.step_in_sweep(i, t_end);
            self.integrated(since);
            self.share_component(i, result)?;
            self.stepped[i] = true;
        }
        Ok(())
    }

    /// Component `i`'s step of a Gauss-Seidel sweep to `t_end` (the components before it in
    /// the sweep marked in `stepped`).
    pub(crate) fn step_in_sweep(&mut self, i: usize, t_end: f64) -> Result<()> {
        // `--partition-out`: a step of its own is this component's time (Jacobi's steps are
        // timed by the placement).
        let timed = self.ranks.as_ref().and_then(|r| r.components.clone());
        let since = Instant::now();
        let stepped = self.step_one_in_sweep(i, t_end);
        if let Some(clock) = timed {
            let nanos = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
            clock.nanos[i].fetch_add(nanos, Ordering::Relaxed);
        }
        stepped
    }

    fn step_one_in_sweep(&mut self, i: usize, t_end: f64) -> Result<()> {
        let inputs = StepInputs {
            resolved: &self.resolved,
            plans: &self.plans,
            history: &self.history,
            values: &self.values,
            after_step: &self.after_step,
            stepped: Some(&self.stepped),
            corrector: None,
            midpoints: None,
            order_override: self.order_override,
            table_inputs: &self.table_inputs,
            terminate: &self.terminate_requested,
            events: &self.events,
            early_returns: &self.early_returns,
            t_start: self.time,
            t_end,
            from: self.time,
            to: t_end,
        };
        self.placement
            .run_one(i, |unit| step_component(i, unit, &inputs))
    }
}

/// Steps one component with its inputs interpolated through the given end values.
pub(crate) type TrialStep<'a> = dyn Fn(usize, &mut Unit, &[f64]) -> Result<()> + Sync + 'a;

/// Set a component's inputs for the macro step, step it (sub-steps, events), read its sources.
fn step_component(i: usize, unit: &mut Unit, s: &StepInputs<'_>) -> Result<()> {
    step_component_from(i, unit, s, false)
}

/// Whether a component's step can be started in the background: it takes one step per macro
/// step and no input switches at the half step.
fn startable(i: usize, s: &StepInputs<'_>) -> bool {
    let plan = &s.plans[i];
    plan.sub_steps <= 1 && !has_half_step_inputs(plan, s)
}

/// For a component in a worker process ([`startable`]): set its inputs and start its step in
/// the background; `step_component_from(.., true)` collects it.
fn start_component(i: usize, unit: &mut Unit, s: &StepInputs<'_>) -> Result<()> {
    let plan = &s.plans[i];
    let available = s.history.len() + usize::from(s.corrector.is_some());
    set_step_inputs(i, unit, s, available)?;
    apply_polynomials(
        plan,
        unit,
        (s.t_start, 0.0),
        available,
        s.order_override,
        None,
    )?;
    s.table_inputs[i].apply(unit.slave.as_mut(), s.t_start)?;
    unit.slave.start_step(s.t_start, s.t_end - s.t_start)
}

/// The Taylor coefficients of the Float64 inputs, and the inputs of other types.
fn set_step_inputs(i: usize, unit: &mut Unit, s: &StepInputs<'_>, available: usize) -> Result<()> {
    let plan = &s.plans[i];
    prepare_taylor(plan, unit, s, available);
    set_other_inputs(plan, unit, s)
}

/// Set the inputs of types other than Float64 (held).
fn set_other_inputs(plan: &ComponentPlan, unit: &mut Unit, s: &StepInputs<'_>) -> Result<()> {
    for binding in &plan.other_inputs {
        let conn = &s.resolved.connections[binding.connection];
        let fmi3 = s.resolved.components[conn.to_component]
            .description
            .fmi_version
            == crate::fmu::FmiVersion::Fmi3;
        set_scalar(
            unit.slave.as_mut(),
            binding.vr,
            binding.var_type,
            fmi3,
            s.values[binding.connection],
        )?;
    }
    Ok(())
}

/// Step a component over the macro step; `started`: its (only) step was started in the
/// background by `start_component`, with its inputs set, and is collected here.
fn step_component_from(i: usize, unit: &mut Unit, s: &StepInputs<'_>, started: bool) -> Result<()> {
    if s.from != s.t_start || s.to != s.t_end {
        // A part of the macro step: the slave holds its inputs over the whole step's
        // sub-steps, then forgets the span.
        unit.slave.set_macro_step(Some((s.t_start, s.t_end)))?;
        let stepped = step_component_whole(i, unit, s, started);
        unit.slave.set_macro_step(None)?;
        return stepped;
    }
    step_component_whole(i, unit, s, started)
}

/// [`step_component_from`] once the slave knows the macro step.
fn step_component_whole(
    i: usize,
    unit: &mut Unit,
    s: &StepInputs<'_>,
    mut started: bool,
) -> Result<()> {
    let plan = &s.plans[i];
    if !started && plain(i, s) {
        return step_plain(i, unit, s);
    }
    // The corrector has one point more than extrapolation: the value at the step's end.
    let available = s.history.len() + usize::from(s.corrector.is_some());
    if !started {
        set_step_inputs(i, unit, s, available)?;
    }
    let orders = s.order_override;
    let mut n = plan.sub_steps.max(1);
    // Half-step inputs change their function at the step's middle: step there exactly.
    let switch_at = if has_half_step_inputs(plan, s) {
        if n % 2 == 1 {
            n *= 2;
        }
        Some(n / 2)
    } else {
        None
    };
    let h = (s.t_end - s.t_start) / f64::from(n);
    let eps = (s.t_end - s.t_start) * 1e-9;
    let mut expanded_at = s.t_start;
    for j in 0..n {
        let sub_end = if j + 1 == n {
            s.t_end
        } else {
            s.t_start + f64::from(j + 1) * h
        };
        let mut t = s.t_start + f64::from(j) * h;
        // Taking a part of the macro step: only what of this sub-step lies in it.
        if s.from > t {
            t = s.from;
        }
        let sub_end = if s.to < sub_end { s.to } else { sub_end };
        let mut second_half = (switch_at == Some(j)).then_some(s);
        while t < sub_end - eps {
            let result = if std::mem::take(&mut started) {
                unit.slave.finish_step()?
            } else {
                apply_polynomials(
                    plan,
                    unit,
                    (t, t - expanded_at),
                    available,
                    orders,
                    second_half.take(),
                )?;
                expanded_at = t;
                s.table_inputs[i].apply(unit.slave.as_mut(), t)?;
                unit.slave.do_step(t, sub_end - t)?
            };
            t = after_step(i, unit, s, &result, (t, sub_end, eps))?;
            if s.terminate.load(Ordering::Relaxed) {
                return read_outputs(plan, s.resolved, unit, s.after_step, s.stepped.is_none());
            }
        }
    }
    read_outputs(plan, s.resolved, unit, s.after_step, s.stepped.is_none())
}

/// Whether a component steps the plain way this macro step: one step, every Float64 input held
/// (order 0, no corrector, no half-step function, no Gauss-Seidel interpolation through a
/// source that already stepped), no table inputs. Most components of most runs; the general
/// path below gives the same FMI calls and values, with the polynomial and sub-step machinery.
fn plain(i: usize, s: &StepInputs<'_>) -> bool {
    let plan = &s.plans[i];
    plan.sub_steps <= 1
        && s.corrector.is_none()
        && s.midpoints.is_none()
        && s.stepped.is_none()
        && s.order_override.is_none_or(|k| k == 0)
        && plan.float_groups.iter().all(|g| g.0 == 0)
        && s.table_inputs[i].is_empty()
}

/// A [`plain`] macro step: the held inputs set in one call per group, the step (continued after
/// an early return, as the general path does), the sources read.
fn step_plain(i: usize, unit: &mut Unit, s: &StepInputs<'_>) -> Result<()> {
    let plan = &s.plans[i];
    // In the general path's order: the other types at the inputs' preparation, the Float64
    // inputs right before the step.
    set_other_inputs(plan, unit, s)?;
    set_held_inputs(plan, unit, s)?;
    let eps = (s.t_end - s.t_start) * 1e-9;
    let mut t = s.from;
    while t < s.to - eps {
        if t > s.from {
            // After an early return the general path hands the held inputs over again.
            set_held_inputs(plan, unit, s)?;
        }
        let result = unit.slave.do_step(t, s.to - t)?;
        t = after_step(i, unit, s, &result, (t, s.to, eps))?;
        if s.terminate.load(Ordering::Relaxed) {
            break;
        }
    }
    read_outputs(plan, s.resolved, unit, s.after_step, true)
}

/// What a step from `t` towards `end` asks for: termination, the early-return and event
/// counts, event mode (the table inputs at the event, the event iteration); returns the time
/// the component reached (`end`, or earlier after an early return).
fn after_step(
    i: usize,
    unit: &mut Unit,
    s: &StepInputs<'_>,
    result: &StepResult,
    (t, end, eps): (f64, f64, f64),
) -> Result<f64> {
    if result.terminate_simulation {
        s.terminate.store(true, Ordering::Relaxed);
    }
    if result.early_return {
        s.early_returns.fetch_add(1, Ordering::Relaxed);
    }
    if result.event_handling_needed {
        s.events.fetch_add(1, Ordering::Relaxed);
        unit.slave.enter_event_mode()?;
        refuse_clock_raised_in_step(&s.plans[i], unit, result.reached_time)?;
        let event_time = if result.early_return {
            result.reached_time
        } else {
            end
        };
        s.table_inputs[i].apply(unit.slave.as_mut(), event_time)?;
        if event_iteration(unit.slave.as_mut())? {
            s.terminate.store(true, Ordering::Relaxed);
        }
        unit.slave.enter_step_mode()?;
    }
    Ok(if result.early_return && result.reached_time < end - eps {
        result.reached_time.max(t)
    } else {
        end
    })
}

/// An output clock an FMU raised inside a step (not at a tick cosimo gave it) cannot reach
/// the clocks it drives at that time while the other components step past it: refused,
/// naming the clock, rather than lost.
fn refuse_clock_raised_in_step(plan: &ComponentPlan, unit: &mut Unit, time: f64) -> Result<()> {
    let (vrs, names) = &plan.output_clocks;
    if vrs.is_empty() {
        return Ok(());
    }
    let mut active = vec![false; vrs.len()];
    unit.slave.get_clock(vrs, &mut active)?;
    match active.iter().position(|&a| a) {
        None => Ok(()),
        Some(k) => Err(crate::Error::Unsupported {
            instance: unit.slave.name().to_string(),
            message: format!(
                "the output clock \"{}\" ticked inside a step (at t = {time}); cosimo ticks clocks at communication points only, so clocks an FMU raises between them are not supported yet",
                names[k]
            ),
        }),
    }
}

/// Set every Float64 input of a [`plain`] component to its held value: the last coupling value
/// (the current one before the first step), one call per group.
fn set_held_inputs(plan: &ComponentPlan, unit: &mut Unit, s: &StepInputs<'_>) -> Result<()> {
    let mut offset = 0;
    for (_, vrs, connections) in &plan.float_groups {
        let held = &mut unit.floats[offset..offset + vrs.len()];
        for (x, &c) in held.iter_mut().zip(connections) {
            *x = if s.history.is_empty() {
                s.values[c]
            } else {
                s.history.values(c)[0]
            };
        }
        unit.slave.set_float64(vrs, held)?;
        offset += vrs.len();
    }
    Ok(())
}

/// Fill the Taylor coefficients of every Float64 input at the macro step's start.
fn prepare_taylor(plan: &ComponentPlan, unit: &mut Unit, s: &StepInputs<'_>, available: usize) {
    let mut offset = 0;
    for (order, _, connections) in &plan.float_groups {
        let k = effective_order(s.order_override.unwrap_or(*order), available);
        for &c in connections {
            let slot = &mut unit.floats[offset..offset + k + 1];
            let source_done = s
                .stepped
                .is_some_and(|done| done[s.resolved.connections[c].from_component]);
            let at_end = match s.corrector {
                Some(values) => Some(values[c]),
                None if source_done => {
                    Some(f64::from_bits(s.after_step[c].load(Ordering::Relaxed)))
                }
                None => None,
            };
            let half_step = s.midpoints.filter(|_| s.resolved.connections[c].half_step);
            if let (Some(midpoints), Some(end_value)) = (half_step, at_end) {
                half_step_taylor(s, c, k, end_value, midpoints[c], false, s.t_start, slot);
            } else if let Some(end_value) = at_end {
                // Interpolation through the value at the step's end and the last k values.
                let mut times = [0.0; MAX_DEGREE + 1];
                let mut values = [0.0; MAX_DEGREE + 1];
                times[0] = s.t_end;
                values[0] = end_value;
                times[1..=k].copy_from_slice(&s.history.times()[..k]);
                values[1..=k].copy_from_slice(&s.history.values(c)[..k]);
                lagrange_taylor(&times[..=k], &values[..=k], s.t_start, slot);
            } else if s.history.is_empty() {
                slot.iter_mut().for_each(|x| *x = 0.0);
                slot[0] = s.values[c];
            } else {
                // Extrapolation through the last k + 1 values.
                lagrange_taylor(
                    &s.history.times()[..=k],
                    &s.history.values(c)[..=k],
                    s.t_start,
                    slot,
                );
            }
            offset += k + 1;
        }
    }
}

/// Hand every Float64 input group to the slave at time `at`, re-expanded `shift` later than
/// last time; with `second_half`, the half-step inputs switch to their second-half function.
fn apply_polynomials(
    plan: &ComponentPlan,
    unit: &mut Unit,
    (at, shift): (f64, f64),
    available: usize,
    order_override: Option<u8>,
    second_half: Option<&StepInputs<'_>>,
) -> Result<()> {
    let mut offset = 0;
    for (order, vrs, connections) in &plan.float_groups {
        let k = effective_order(order_override.unwrap_or(*order), available);
        let stride = k + 1;
        let coefficients = &mut unit.floats[offset..offset + vrs.len() * stride];
        if shift != 0.0 && stride > 1 {
            for taylor in coefficients.chunks_mut(stride) {
                shift_taylor(taylor, shift);
            }
        }
        if let Some(s) = second_half {
            if let (Some(midpoints), Some(at_end)) = (s.midpoints, s.corrector) {
                for (taylor, &c) in coefficients.chunks_mut(stride).zip(connections) {
                    if s.resolved.connections[c].half_step {
                        half_step_taylor(s, c, k, at_end[c], midpoints[c], true, at, taylor);
                    }
                }
            }
        }
        if stride == 1 {
            unit.slave.set_float64(vrs, coefficients)?;
        } else {
            unit.slave
                .set_input_polynomial(vrs, stride - 1, coefficients)?;
        }
        offset += vrs.len() * stride;
    }
    Ok(())
}

/// Whether a component has an input that follows a half-step function in this step.
fn has_half_step_inputs(plan: &ComponentPlan, s: &StepInputs<'_>) -> bool {
    s.midpoints.is_some()
        && plan
            .float_groups
            .iter()
            .flat_map(|(_, _, connections)| connections)
            .any(|&c| s.resolved.connections[c].half_step)
}

/// The thesis' approximation functions of a half-step coupling value over one macro step
/// `[T_N, T_N+1]`, by degree k (capped at 2): C (k = 0) is the middle value on the first half
/// and the end value on the second; L (k = 1) is piecewise linear through the values at the
/// start, middle and end; Q (k >= 2) is the quadratic through them. Writes the Taylor
/// coefficients at `at` of the piece for the first or the second half.
#[allow(clippy::too_many_arguments)]
fn half_step_taylor(
    s: &StepInputs<'_>,
    c: usize,
    k: usize,
    at_end: f64,
    middle: f64,
    second_half: bool,
    at: f64,
    taylor: &mut [f64],
) {
    let start = s.history.values(c).first().copied().unwrap_or(s.values[c]);
    let t_mid = 0.5 * (s.t_start + s.t_end);
    let (times, values) = ([s.t_start, t_mid, s.t_end], [start, middle, at_end]);
    match (k.min(2), second_half) {
        (0, false) => lagrange_taylor(&times[1..2], &values[1..2], at, taylor),
        (0, true) => lagrange_taylor(&times[2..3], &values[2..3], at, taylor),
        (1, false) => lagrange_taylor(&times[..2], &values[..2], at, taylor),
        (1, true) => lagrange_taylor(&times[1..], &values[1..], at, taylor),
        _ => lagrange_taylor(&times, &values, at, taylor),
    }
}

/// The degree actually used: the configured order, lowered while the history is shorter
/// (the first steps of a run), so the polynomial always goes through known values.
pub(crate) fn effective_order(order: u8, available: usize) -> usize {
    usize::from(order)
        .min(available.saturating_sub(1))
        .min(MAX_DEGREE - 1)
}
