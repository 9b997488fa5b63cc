//! FMI 3 clocks across components (Co-Simulation with Event Mode, FMI 3.0 §4.2.5).
//!
//! cosimo ticks the time-based input clocks (constant, fixed, tunable: periodic from their
//! `intervalDecimal` / `shiftDecimal` or `fmi3GetIntervalDecimal`; changing and countdown: when
//! `fmi3GetIntervalDecimal` says `fmi3IntervalChanged`, that long after the event that said
//! it). The run loop lands a macro step on each tick; at the tick ([`Clocks::tick`]) one
//! event instant runs across the system:
//! 1. each component with a due clock enters Event Mode and gets `fmi3SetClock` for it, then
//!    its clocked inputs (from the values their sources gave in this instant, or read now);
//! 2. its output clocks are read (`fmi3GetClock`); an active one counts a tick, hands the
//!    values it clocks to their connections and ticks every input clock it drives, whose
//!    component then goes through 1 and 2 in the same instant (in the order the ticks spread);
//! 3. every component that took part runs its event iteration (`fmi3UpdateDiscreteStates`)
//!    and returns to Step Mode; countdown and changing clocks are asked for their next
//!    interval.
//!
//! An input file may tick input clocks (fmusim's convention, see `inputs.rs`): a triggered
//! input clock with a column ticks at the rows where the column turns 1, and clocked inputs
//! with a column take the row's value at their clocks' ticks.
//!
//! Clocked variables (FMI 3 `clocks`) move only in step 1 and 2, never in the per-step
//! exchange. Results get a column per recorded clock holding its number of ticks so far.
//! Systems without clocks build no [`Clocks`] and pay nothing.

use std::collections::VecDeque;

use super::execution::{event_iteration, get_scalar, set_scalar};
use super::inputs::TableInputs;
use super::pool::{Placement, Unit};
use crate::fmu::description::{Causality, FmiVersion, VariableType};
use crate::fmu::{IntervalQualifier, ValueReference};
use crate::system::resolve::{ResolvedConnection, ResolvedSystem};
use crate::{Error, Result};

/// How cosimo knows when a time-based input clock ticks next.
#[derive(Debug, Clone, PartialEq)]
enum Timing {
    /// Periodic: `start + shift + n * interval`.
    Periodic { interval: f64, shift: f64, n: u64 },
    /// Changing or countdown: when the FMU says (`fmi3GetIntervalDecimal`).
    Scheduled,
    /// A triggered input clock ticked by an input file at these times; `index`: the next.
    Table { times: Vec<f64>, index: usize },
    /// Triggered input clocks and output clocks: not by time.
    None,
}

/// One clock of one component.
#[derive(Debug, Clone)]
struct ClockVar {
    component: usize,
    /// Index into the component's `description.variables`.
    variable: usize,
    vr: ValueReference,
    output: bool,
    /// `intervalVariability`, for messages and the interval query.
    kind: String,
    timing: Timing,
    /// The next tick of a time-based input clock.
    next: Option<f64>,
    /// Ticks so far (for results).
    ticks: u64,
}

/// The FMI 3 clocks of a system and the connections they drive.
#[derive(Debug, Clone)]
pub struct Clocks {
    clocks: Vec<ClockVar>,
    /// Per component: its clocks (indices into `clocks`).
    of_component: Vec<Vec<usize>>,
    /// Clock connections as (output clock, input clock) indices into `clocks`.
    links: Vec<(usize, usize)>,
    /// Connections from or to clocked variables, and the clocks (indices into `clocks`) that
    /// clock their source and their target.
    clocked: Vec<(ResolvedConnection, Vec<usize>, Vec<usize>)>,
    /// The experiment's start time (periodic ticks count from it).
    start: f64,
    /// Per component: whether it is a Scheduled Execution component, whose output clocks
    /// tick inside its steps (counted after each step, see [`Clocks::tick`]).
    schedules_own: Vec<bool>,
}

impl Clocks {
    /// The clocks of `resolved`; `None` when no component declares a clock. Refuses what
    /// cannot be honoured: clocks of an FMI 2 or Model Exchange component, clocks under an
    /// algorithm that rolls back or controls the step, clocks spread over MPI ranks.
    pub fn new(
        resolved: &ResolvedSystem,
        distributed: bool,
        table_inputs: &[TableInputs],
    ) -> Result<Option<Clocks>> {
        let mut clocks = Vec::new();
        let mut of_component = vec![Vec::new(); resolved.components.len()];
        let mut schedules_own_of = vec![false; resolved.components.len()];
        for (i, component) in resolved.components.iter().enumerate() {
            let md = &component.description;
            // A Scheduled Execution component activates these partitions itself.
            let schedules_own = md
                .co_simulation
                .as_ref()
                .is_some_and(|cs| cs.schedules_own_clocks);
            schedules_own_of[i] = schedules_own;
            for (j, v) in md.variables.iter().enumerate() {
                if v.var_type != VariableType::Clock || (schedules_own && md.is_scheduled_clock(j))
                {
                    continue;
                }
                let at = || format!("component \"{}\", clock \"{}\"", component.name, v.name);
                let has_event_mode = md
                    .co_simulation
                    .as_ref()
                    .is_some_and(|cs| cs.has_event_mode);
                if md.fmi_version != FmiVersion::Fmi3 || !has_event_mode {
                    return Err(Error::Usage(format!(
                        "{}: clocks tick in FMI 3 Co-Simulation Event Mode, but this FMU does not declare hasEventMode=\"true\"",
                        at()
                    )));
                }
                let attributes = v.clock.clone().unwrap_or_default();
                let kind = attributes
                    .interval_variability
                    .clone()
                    .unwrap_or_else(|| "triggered".into());
                let output = v.causality == Causality::Output;
                if !output && v.causality != Causality::Input {
                    return Err(Error::Usage(format!(
                        "{}: only input and output clocks can run in Co-Simulation",
                        at()
                    )));
                }
                let timing = match (output, kind.as_str()) {
                    (true, _) | (false, "triggered") => Timing::None,
                    (false, "constant" | "fixed" | "tunable") => Timing::Periodic {
                        interval: attributes.interval_decimal.unwrap_or(0.0),
                        shift: attributes.shift_decimal.unwrap_or(0.0),
                        n: 0,
                    },
                    (false, "changing" | "countdown") => Timing::Scheduled,
                    (false, other) => {
                        return Err(Error::Usage(format!(
                            "{}: intervalVariability \"{other}\" is none of constant, fixed, tunable, changing, countdown, triggered",
                            at()
                        )))
                    }
                };
                of_component[i].push(clocks.len());
                clocks.push(ClockVar {
                    component: i,
                    variable: j,
                    vr: v.value_reference,
                    output,
                    kind,
                    timing,
                    next: None,
                    ticks: 0,
                });
            }
        }
        if clocks.is_empty() {
            return Ok(None);
        }
        for (i, inputs) in table_inputs.iter().enumerate() {
            for (variable, times) in inputs.clock_ticks() {
                let description = &resolved.components[i].description;
                let scheduled_by_fmu = description
                    .co_simulation
                    .as_ref()
                    .is_some_and(|cs| cs.schedules_own_clocks)
                    && description
                        .variables
                        .iter()
                        .position(|v| v.value_reference == variable.value_reference)
                        .is_some_and(|j| description.is_scheduled_clock(j));
                if scheduled_by_fmu {
                    return Err(Error::Usage(format!(
                        "the input file ticks the clock \"{}\" of component \"{}\", a Scheduled Execution component whose scheduler in cosimo activates that partition from its interval; only its triggered input clocks take ticks from an input file",
                        variable.name, resolved.components[i].name
                    )));
                }
                let Some(clock) = clocks
                    .iter_mut()
                    .find(|c| c.component == i && c.vr == variable.value_reference)
                else {
                    continue;
                };
                let driven = resolved
                    .clock_connections
                    .iter()
                    .any(|c| c.to_component == i && c.to_variable == clock.variable);
                if clock.kind != "triggered" || driven {
                    return Err(Error::Usage(format!(
                        "the input file ticks the clock \"{}\" of component \"{}\", but {}; only triggered input clocks without a clock connection take their ticks from an input file",
                        variable.name,
                        resolved.components[i].name,
                        if driven {
                            "a clock connection ticks it already".to_string()
                        } else {
                            format!("it is a {} clock that cosimo ticks from its interval", clock.kind)
                        }
                    )));
                }
                clock.timing = Timing::Table { times, index: 0 };
            }
        }
        let first = &clocks[0];
        let named = format!(
            "component \"{}\" has FMI 3 clocks (\"{}\")",
            resolved.components[first.component].name,
            resolved.components[first.component].description.variables[first.variable].name
        );
        if distributed {
            return Err(Error::Usage(format!(
                "{named}: clocks are not supported on MPI ranks yet (a tick spreads through every component in one event instant); run without mpirun"
            )));
        }
        let algorithm = &resolved.system.experiment.algorithm;
        use crate::settings::AlgorithmKind as K;
        if !matches!(algorithm.kind(), K::Jacobi | K::GaussSeidel) || algorithm.control().is_some()
        {
            return Err(Error::Usage(format!(
                "{named}: clocks need an algorithm that moves forward only, step by step; the {} algorithm{} repeats or rolls back steps, which would tick a clock twice: use jacobi or gauss-seidel with a fixed step",
                algorithm.kind().name(),
                if algorithm.control().is_some() { " with step control" } else { "" }
            )));
        }
        let find = |component: usize, variable: usize| {
            clocks
                .iter()
                .position(|c| c.component == component && c.variable == variable)
        };
        let mut links = Vec::new();
        for c in &resolved.clock_connections {
            let (Some(from), Some(to)) = (
                find(c.from_component, c.from_variable),
                find(c.to_component, c.to_variable),
            ) else {
                return Err(Error::Internal(
                    "a clock connection between non-clocks".into(),
                ));
            };
            let name = |k: usize| {
                let clock: &ClockVar = &clocks[k];
                let component = &resolved.components[clock.component];
                format!(
                    "{}.{}",
                    component.name, component.description.variables[clock.variable].name
                )
            };
            let source = &resolved.components[clocks[from].component].description;
            if source
                .co_simulation
                .as_ref()
                .is_some_and(|cs| cs.schedules_own_clocks)
            {
                return Err(Error::Usage(format!(
                    "connection {} -> {}: the source is a Scheduled Execution component, whose output clocks tick inside its steps, between communication points; cosimo does not carry them to other components (connect the variables they clock instead: they are exchanged at communication points)",
                    name(from),
                    name(to)
                )));
            }
            if !clocks[from].output || clocks[to].output || clocks[to].kind != "triggered" {
                return Err(Error::Usage(format!(
                    "connection {} -> {}: a clock connection goes from an output clock to a triggered input clock (the target is {} {})",
                    name(from),
                    name(to),
                    if clocks[to].output { "an output clock" } else { "an input clock of intervalVariability" },
                    if clocks[to].output { String::new() } else { format!("\"{}\"", clocks[to].kind) }
                )));
            }
            links.push((from, to));
        }
        let clocks_of = |component: usize, variable: usize| -> Vec<usize> {
            resolved.components[component].description.variables[variable]
                .clocks
                .iter()
                .filter_map(|&v| find(component, v))
                .collect()
        };
        let clocked = resolved
            .clocked
            .iter()
            .map(|c| {
                (
                    c.clone(),
                    clocks_of(c.from_component, c.from_variable),
                    clocks_of(c.to_component, c.to_variable),
                )
            })
            .collect();
        Ok(Some(Clocks {
            clocks,
            of_component,
            links,
            clocked,
            start: resolved.system.experiment.start,
            schedules_own: schedules_own_of,
        }))
    }

    /// After initialization (every component in Step Mode): the first tick of every
    /// time-based input clock. Periodic clocks without an interval in the model description
    /// and scheduled clocks ask the FMU.
    pub fn start(&mut self, placement: &mut Placement, names: &[String]) -> Result<()> {
        for k in 0..self.clocks.len() {
            self.clocks[k].ticks = 0;
            self.clocks[k].next = None;
            let clock = &self.clocks[k];
            match clock.timing.clone() {
                Timing::Table { times, .. } => {
                    let index = times.partition_point(|&t| t < self.start - 1e-9);
                    self.clocks[k].next = times.get(index).copied();
                    self.clocks[k].timing = Timing::Table { times, index };
                }
                Timing::Periodic {
                    interval, shift, ..
                } => {
                    let interval = if interval > 0.0 {
                        interval
                    } else {
                        match ask_interval(placement, clock)? {
                            (i, IntervalQualifier::Changed | IntervalQualifier::Unchanged)
                                if i > 0.0 =>
                            {
                                i
                            }
                            (i, _) => {
                                return Err(Error::Usage(format!(
                                    "component \"{}\": the periodic clock with value reference {} has no interval (fmi3GetIntervalDecimal gave {i})",
                                    names[clock.component], clock.vr
                                )))
                            }
                        }
                    };
                    self.clocks[k].timing = Timing::Periodic {
                        interval,
                        shift,
                        n: 0,
                    };
                    self.clocks[k].next = Some(self.start + shift);
                }
                Timing::Scheduled => {
                    let (interval, qualifier) = ask_interval(placement, clock)?;
                    self.clocks[k].next =
                        (qualifier == IntervalQualifier::Changed).then_some(self.start + interval);
                }
                Timing::None => {}
            }
        }
        Ok(())
    }

    /// The next tick of a time-based input clock, if any.
    pub fn next_tick(&self) -> Option<f64> {
        self.clocks
            .iter()
            .filter_map(|c| c.next)
            .min_by(f64::total_cmp)
    }

    /// Ticks so far of the clock `vr` of `component` (0 for one cosimo does not know).
    pub fn ticks(&self, component: usize, vr: ValueReference) -> u64 {
        self.clocks
            .iter()
            .find(|c| c.component == component && c.vr == vr)
            .map_or(0, |c| c.ticks)
    }

    /// The event instant at `time` when clocks are due (see the module documentation);
    /// `Ok(true)` when one ran, so coupling values must be read again. `tolerance`: how close
    /// to `time` a tick counts as due. A component's request to terminate is stored in
    /// `terminate`.
    pub fn tick(
        &mut self,
        placement: &mut Placement,
        table_inputs: &[TableInputs],
        time: f64,
        tolerance: f64,
        terminate: &std::sync::atomic::AtomicBool,
    ) -> Result<bool> {
        self.count_scheduled_outputs(placement)?;
        let due: Vec<usize> = (0..self.clocks.len())
            .filter(|&k| self.clocks[k].next.is_some_and(|t| t <= time + tolerance))
            .collect();
        if due.is_empty() {
            return Ok(false);
        }
        let n = self.clocks.len();
        let mut active = vec![false; n];
        let mut set = vec![false; n];
        let components = self.of_component.len();
        let mut entered = vec![false; components];
        let mut queue: VecDeque<usize> = VecDeque::new();
        // Values clocked out of their sources in this instant (by clocked connection).
        let mut given: Vec<Option<f64>> = vec![None; self.clocked.len()];
        for &k in &due {
            active[k] = true;
            if !queue.contains(&self.clocks[k].component) {
                queue.push_back(self.clocks[k].component);
            }
        }
        // A guard against clock connections in a cycle that keep re-queuing components.
        let mut rounds = 0;
        while let Some(i) = queue.pop_front() {
            rounds += 1;
            if rounds > 100 * components.max(1) {
                return Err(Error::Usage(format!(
                    "the clock ticks at t = {time} did not settle: clock connections form a cycle"
                )));
            }
            if !entered[i] {
                placement.run_one(i, |unit: &mut Unit| unit.slave.enter_event_mode())?;
                entered[i] = true;
            }
            // 1. The input clocks that tick, then the clocked inputs they let in.
            let inputs: Vec<usize> = self.of_component[i]
                .iter()
                .copied()
                .filter(|&k| !self.clocks[k].output && active[k] && !set[k])
                .collect();
            if !inputs.is_empty() {
                let vrs: Vec<ValueReference> = inputs.iter().map(|&k| self.clocks[k].vr).collect();
                let on = vec![true; vrs.len()];
                placement.run_one(i, |unit: &mut Unit| unit.slave.set_clock(&vrs, &on))?;
                for &k in &inputs {
                    set[k] = true;
                    self.clocks[k].ticks += 1;
                }
            }
            if !table_inputs[i].clocks_idle() {
                let ticking: Vec<usize> = self.of_component[i]
                    .iter()
                    .filter(|&&k| active[k])
                    .map(|&k| self.clocks[k].variable)
                    .collect();
                placement.run_one(i, |unit: &mut Unit| {
                    table_inputs[i]
                        .apply_clocked(unit.slave.as_mut(), time, |v| ticking.contains(&v))
                })?;
            }
            for (c, (connection, _, target_clocks)) in self.clocked.iter().enumerate() {
                if connection.to_component != i
                    || target_clocks.is_empty()
                    || !target_clocks.iter().any(|&k| active[k])
                {
                    continue;
                }
                let value = match given[c] {
                    Some(v) => v,
                    None => read(placement, connection)?,
                };
                write(placement, connection, value)?;
            }
            // 2. The output clocks, the values they clock and the clocks they drive.
            let outputs: Vec<usize> = self.of_component[i]
                .iter()
                .copied()
                .filter(|&k| self.clocks[k].output && !active[k])
                .collect();
            if outputs.is_empty() {
                continue;
            }
            let vrs: Vec<ValueReference> = outputs.iter().map(|&k| self.clocks[k].vr).collect();
            let mut now = vec![false; vrs.len()];
            placement.run_one(i, |unit: &mut Unit| unit.slave.get_clock(&vrs, &mut now))?;
            let raised: Vec<usize> = outputs
                .iter()
                .zip(&now)
                .filter(|(_, &on)| on)
                .map(|(&k, _)| k)
                .collect();
            for &k in &raised {
                active[k] = true;
                self.clocks[k].ticks += 1;
            }
            for (c, (connection, source_clocks, target_clocks)) in self.clocked.iter().enumerate() {
                if connection.from_component != i
                    || given[c].is_some()
                    || !source_clocks.iter().any(|k| raised.contains(k))
                {
                    continue;
                }
                let value = read(placement, connection)?;
                given[c] = Some(value);
                if target_clocks.is_empty() {
                    // An unclocked input takes the value when its source ticks.
                    write(placement, connection, value)?;
                }
            }
            for &(from, to) in &self.links {
                if raised.contains(&from) && !active[to] {
                    active[to] = true;
                    let target = self.clocks[to].component;
                    if !queue.contains(&target) {
                        queue.push_back(target);
                    }
                }
            }
        }
        // 3. The event iteration of every component that took part, back to Step Mode.
        for (i, _) in entered.iter().enumerate().filter(|(_, &e)| e) {
            let ended = placement.run_one(i, |unit: &mut Unit| {
                let ended = event_iteration(unit.slave.as_mut())?;
                unit.slave.enter_step_mode()?;
                Ok(ended)
            })?;
            if ended {
                terminate.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        for k in 0..n {
            let clock = &self.clocks[k];
            match clock.timing.clone() {
                Timing::Table { times, index } if due.contains(&k) => {
                    self.clocks[k].next = times.get(index + 1).copied();
                    self.clocks[k].timing = Timing::Table {
                        times,
                        index: index + 1,
                    };
                }
                Timing::Periodic { interval, shift, n } if due.contains(&k) => {
                    let n = n + 1;
                    self.clocks[k].timing = Timing::Periodic { interval, shift, n };
                    self.clocks[k].next = Some(self.start + shift + n as f64 * interval);
                }
                Timing::Scheduled if entered[clock.component] => {
                    let (interval, qualifier) = ask_interval(placement, clock)?;
                    match qualifier {
                        IntervalQualifier::Changed => self.clocks[k].next = Some(time + interval),
                        // A countdown that ticked is spent until the FMU schedules it again.
                        _ if due.contains(&k) => self.clocks[k].next = None,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        Ok(true)
    }
}

impl Clocks {
    /// The output clocks of Scheduled Execution components that ticked in the step just
    /// taken (their partitions ran inside it): each counts one tick per step in which it
    /// ticked (a clock that ticks twice within one step counts once: steps no longer than
    /// its period count every tick).
    fn count_scheduled_outputs(&mut self, placement: &mut Placement) -> Result<()> {
        for i in 0..self.of_component.len() {
            if !self.schedules_own[i] {
                continue;
            }
            let outputs: Vec<usize> = self.of_component[i]
                .iter()
                .copied()
                .filter(|&k| self.clocks[k].output)
                .collect();
            if outputs.is_empty() {
                continue;
            }
            let vrs: Vec<ValueReference> = outputs.iter().map(|&k| self.clocks[k].vr).collect();
            let mut raised = vec![false; vrs.len()];
            placement.run_one(i, |unit: &mut Unit| unit.slave.get_clock(&vrs, &mut raised))?;
            for (&k, on) in outputs.iter().zip(raised) {
                self.clocks[k].ticks += u64::from(on);
            }
        }
        Ok(())
    }
}

/// `fmi3GetIntervalDecimal` of one clock.
fn ask_interval(placement: &mut Placement, clock: &ClockVar) -> Result<(f64, IntervalQualifier)> {
    let vrs = [clock.vr];
    placement.run_one(clock.component, |unit: &mut Unit| {
        let mut interval = [0.0];
        let mut qualifier = [IntervalQualifier::NotYetKnown];
        unit.slave
            .get_interval_decimal(&vrs, &mut interval, &mut qualifier)?;
        Ok((interval[0], qualifier[0]))
    })
}

/// The source value of a clocked connection, as the target receives it.
fn read(placement: &mut Placement, c: &ResolvedConnection) -> Result<f64> {
    let y = placement.run_one(c.from_component, |unit: &mut Unit| {
        let v = &unit.slave.description().variables[c.from_variable];
        let (vr, ty) = (v.value_reference, v.var_type);
        get_scalar(unit.slave.as_mut(), vr, ty, true)
    })?;
    Ok(c.transform(y))
}

/// Set the target of a clocked connection.
fn write(placement: &mut Placement, c: &ResolvedConnection, value: f64) -> Result<()> {
    placement.run_one(c.to_component, |unit: &mut Unit| {
        let v = &unit.slave.description().variables[c.to_variable];
        let (vr, ty) = (v.value_reference, v.var_type);
        set_scalar(unit.slave.as_mut(), vr, ty, true, value)
    })
}
