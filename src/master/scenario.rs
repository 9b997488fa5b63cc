//! Scenario events applied to a running system (libcosim's `--scenario` files, read by
//! [`crate::settings::scenario`]): at the first communication point at or after an event's
//! time, a variable is overridden, biased or reset, before the next macro step.
//!
//! Where an event lands:
//! - a connected input: the connection's transform (override: the value; bias: the source
//!   plus the bias), so the master's own exchange carries it every step;
//! - an output that feeds connections: the transform of each such connection (its inputs
//!   see the overridden or biased output; the output recorded is the FMU's own);
//! - an input no connection drives, or a tunable parameter: set on the FMU (bias: the value it
//!   had before the first event on it, plus the bias).
//!
//! Every target, type and value is checked against the system before the start, with the
//! file and line of the event. As libcosim does, every change is undone at the scenario's
//! `end`, or, without one, at the first communication point after the last event.

use std::sync::Arc;

use super::execution::Execution;
use crate::fmu::description::{Causality, StartValue, Variability, VariableType};
use crate::fmu::values::{element_count, fit_value, get_value, set_value};
use crate::settings::scenario::{Scenario, ScenarioAction, ScenarioEvent, ScenarioValue};
use crate::{Error, Result};

/// Where an event's changes go.
#[derive(Debug, Clone)]
enum Target {
    /// Connections whose transforms carry the change, with their original (scale, shift);
    /// `output`: the variable is their source (a bias is scaled by each transform).
    Connections {
        connections: Vec<(usize, f64, f64)>,
        output: bool,
    },
    /// A variable set on its FMU: (component, variable index).
    Variable { component: usize, variable: usize },
}

/// One event resolved against the system.
#[derive(Debug, Clone)]
struct Planned {
    /// Absolute simulation time.
    time: f64,
    target: usize,
    action: Action,
    /// The event as the file wrote it, for the log.
    event: ScenarioEvent,
}

#[derive(Debug, Clone)]
enum Action {
    Override(StartValue),
    Bias(f64),
    Reset,
}

/// An event that took effect, for the log, the summary and programs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AppliedEvent {
    /// When it took effect (a communication point).
    pub time: f64,
    /// The time the file gives (after the start).
    pub event_time: f64,
    /// `component.variable`.
    pub variable: String,
    /// override, bias, reset, or "end" (the scenario's end undid every change).
    pub action: String,
    /// The value of an override or a bias, as the file writes it.
    pub value: Option<String>,
    /// `FILE:LINE` of the event.
    pub location: String,
}

/// The scenario's progress between macro steps, as a snapshot keeps it.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ScenarioState {
    next: usize,
    ended: bool,
    /// Per target: the value before the first change (variables set on their FMU).
    originals: Vec<Option<StartValue>>,
    /// Per target: whether a change is in force.
    active: Vec<bool>,
    applied: usize,
}

/// A scenario checked against a system, applied as the simulation passes its times.
pub struct ScenarioPlayer {
    scenario: Arc<Scenario>,
    targets: Vec<Target>,
    names: Vec<String>,
    events: Vec<Planned>,
    /// Absolute time of the end (`None`: the first point after the last event).
    end: Option<f64>,
    state: ScenarioState,
    applied: Vec<AppliedEvent>,
}

impl ScenarioPlayer {
    /// Check every event of `scenario` against the system of `exec` (starting at `start`):
    /// components, variables, what may be changed, value types; an error names the event's
    /// file and line and what to write instead.
    pub fn new(exec: &Execution, scenario: Arc<Scenario>, start: f64) -> Result<ScenarioPlayer> {
        let mut targets: Vec<Target> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut events = Vec::with_capacity(scenario.events.len());
        for event in &scenario.events {
            let at = || scenario.location(event);
            let name = format!("{}.{}", event.model, event.variable);
            let (component, variable) =
                locate(exec, event).map_err(|e| Error::Usage(format!("{}: {name}: {e}", at())))?;
            let target = match names.iter().position(|n| *n == name) {
                Some(k) => k,
                None => {
                    targets.push(target_of(exec, component, variable).map_err(|e| {
                        Error::Usage(format!("{}: {} {name}: {e}", at(), event.action.name()))
                    })?);
                    names.push(name.clone());
                    targets.len() - 1
                }
            };
            let description = &exec.resolved.components[component].description;
            let var = &description.variables[variable];
            let action = match &event.action {
                ScenarioAction::Reset => Action::Reset,
                ScenarioAction::Override(value) => {
                    let count = element_count(description, var)?;
                    let value =
                        typed(value, var.var_type, count).and_then(|v| fit_value(var, &v, count));
                    Action::Override(value.map_err(|e| {
                        Error::Usage(format!(
                            "{}: override {name} with {value}: {e}",
                            at(),
                            value = event
                                .action
                                .value()
                                .map_or(String::new(), ToString::to_string)
                        ))
                    })?)
                }
                ScenarioAction::Bias(value) => {
                    let numeric =
                        matches!(var.var_type, VariableType::Float32 | VariableType::Float64)
                            || (var.var_type.is_integer()
                                && matches!(value, ScenarioValue::Integer(_)));
                    match value.as_real().filter(|_| numeric && !var.is_array()) {
                        Some(b) => Action::Bias(b),
                        None => {
                            return Err(Error::Usage(format!(
                                "{}: bias {name} by {value}: a bias adds a number to a scalar Float or Integer variable ({name} is {:?}); write an override instead",
                                at(),
                                var.var_type
                            )))
                        }
                    }
                }
            };
            let carried = matches!(targets[target], Target::Connections { .. });
            if carried
                && matches!(
                    action,
                    Action::Override(StartValue::String(_) | StartValue::Binary(_))
                )
            {
                return Err(Error::Usage(format!(
                    "{}: override {name}: connections carry numbers, so a connected String variable cannot be overridden; override the unconnected input instead",
                    at()
                )));
            }
            events.push(Planned {
                time: start + event.time,
                target,
                action,
                event: event.clone(),
            });
        }
        let end = scenario.end.map(|e| start + e);
        let count = targets.len();
        Ok(ScenarioPlayer {
            scenario,
            targets,
            names,
            events,
            end,
            state: ScenarioState {
                originals: vec![None; count],
                active: vec![false; count],
                ..ScenarioState::default()
            },
            applied: Vec::new(),
        })
    }

    /// The events that took effect so far.
    pub fn applied(&self) -> &[AppliedEvent] {
        &self.applied[..self.state.applied.min(self.applied.len())]
    }

    /// The scenario it plays.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Apply what is due at the communication point `t` (`tolerance`: how close counts as
    /// at a time). Cheap when nothing is due: one comparison.
    pub(crate) fn apply_due(&mut self, exec: &mut Execution, t: f64, tolerance: f64) -> Result<()> {
        if self.state.ended {
            return Ok(());
        }
        let due = |time: f64| t >= time - tolerance;
        if self.state.next >= self.events.len() {
            // After the last event: the end (or, without one, this first point after it).
            if self.end.is_none_or(due) {
                self.undo_all(exec, t)?;
                self.state.ended = true;
            }
            return Ok(());
        }
        if self.end.is_some_and(due) {
            self.undo_all(exec, t)?;
            self.state.ended = true;
            return Ok(());
        }
        while self.state.next < self.events.len() && due(self.events[self.state.next].time) {
            let planned = self.events[self.state.next].clone();
            self.apply(exec, planned.target, &planned.action)?;
            self.log(AppliedEvent {
                time: t,
                event_time: planned.event.time,
                variable: self.names[planned.target].clone(),
                action: planned.event.action.name().into(),
                value: planned.event.action.value().map(plain),
                location: self.scenario.location(&planned.event),
            });
            self.state.next += 1;
        }
        Ok(())
    }

    fn log(&mut self, event: AppliedEvent) {
        log::info!(
            "scenario: t = {}: {} {}{} ({})",
            crate::numbers::number(event.time),
            event.action,
            event.variable,
            event
                .value
                .as_ref()
                .map_or(String::new(), |v| format!(" {v}")),
            event.location
        );
        self.applied.truncate(self.state.applied);
        self.applied.push(event);
        self.state.applied += 1;
    }

    fn undo_all(&mut self, exec: &mut Execution, t: f64) -> Result<()> {
        for k in 0..self.targets.len() {
            if self.state.active[k] {
                self.apply(exec, k, &Action::Reset)?;
            }
        }
        let location = self.scenario.path.display().to_string();
        self.log(AppliedEvent {
            time: t,
            event_time: t,
            variable: String::new(),
            action: "end".into(),
            value: None,
            location,
        });
        Ok(())
    }

    fn apply(&mut self, exec: &mut Execution, k: usize, action: &Action) -> Result<()> {
        match &self.targets[k] {
            Target::Connections {
                connections,
                output,
            } => {
                for &(c, scale, shift) in connections {
                    let (new_scale, new_shift) = match action {
                        Action::Reset => (scale, shift),
                        Action::Bias(b) if *output => (scale, shift + scale * b),
                        Action::Bias(b) => (scale, shift + b),
                        Action::Override(value) => {
                            let v = first_number(value);
                            (0.0, if *output { scale * v + shift } else { v })
                        }
                    };
                    exec.retransform(c, new_scale, new_shift)?;
                }
            }
            Target::Variable {
                component,
                variable,
            } => {
                let (component, variable) = (*component, *variable);
                let description = exec.resolved.components[component].description.clone();
                let var = description.variables[variable].clone();
                let count = element_count(&description, &var)?;
                if self.state.originals[k].is_none() {
                    let read = var.clone();
                    let original = exec.placement.run_one(component, move |unit| {
                        get_value(unit.slave.as_mut(), &read, count)
                    });
                    // Only the owner reads the FMU's (and only the owner sets it back); every
                    // rank learns whether that read failed.
                    if let Some(ranks) = &exec.ranks {
                        let read = original.as_ref().map(|_| ()).map_err(|e| Error::OnRank {
                            rank: ranks.rank(),
                            code: e.exit_code(),
                            message: e.to_string(),
                        });
                        exec.agree(read)?;
                    }
                    self.state.originals[k] = Some(original?);
                }
                let original = self.state.originals[k]
                    .clone()
                    .unwrap_or(StartValue::Float(Vec::new()));
                let value = match action {
                    Action::Reset => original,
                    Action::Override(value) => value.clone(),
                    Action::Bias(b) => match original {
                        StartValue::Float(v) => {
                            StartValue::Float(v.iter().map(|x| x + b).collect())
                        }
                        StartValue::Int(v) => {
                            StartValue::Int(v.iter().map(|x| x + *b as i64).collect())
                        }
                        StartValue::UInt(v) => StartValue::UInt(
                            v.iter()
                                .map(|x| x.saturating_add_signed(*b as i64))
                                .collect(),
                        ),
                        other => other,
                    },
                };
                let set = exec.placement.run_one(component, move |unit| {
                    set_value(unit.slave.as_mut(), &var, &value)
                });
                // Over ranks only the owner sets it (a stand-in takes anything): every rank
                // learns how that went.
                exec.agree(set)?;
            }
        }
        self.state.active[k] = !matches!(action, Action::Reset);
        Ok(())
    }

    /// The progress, for a snapshot.
    pub(crate) fn save(&self) -> ScenarioState {
        self.state.clone()
    }

    /// Back to a progress saved by `save` (the connection transforms and FMU values are
    /// restored with the execution's and the FMUs' states).
    pub(crate) fn restore(&mut self, state: ScenarioState) -> Result<()> {
        if state.originals.len() != self.targets.len() || state.active.len() != self.targets.len() {
            return Err(Error::Usage(
                "a snapshot taken with another scenario (or none): restore it with the scenario it was taken with".into(),
            ));
        }
        self.state = state;
        Ok(())
    }
}

/// Component and variable index of an event's `model.variable`.
fn locate(exec: &Execution, event: &ScenarioEvent) -> std::result::Result<(usize, usize), String> {
    let Some(component) = exec
        .resolved
        .components
        .iter()
        .position(|c| c.name == event.model)
    else {
        let names: Vec<&str> = exec
            .resolved
            .components
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        return Err(format!(
            "no component (model) \"{}\"; the system's components are {}",
            event.model,
            names.join(", ")
        ));
    };
    let description = &exec.resolved.components[component].description;
    crate::fmu::values::find_variable(description, &event.variable, "variable")
        .map_err(|e| e.to_string())
        .and_then(|v| {
            description
                .variables
                .iter()
                .position(|x| std::ptr::eq(x, v))
                .map(|i| (component, i))
                .ok_or_else(|| "the variable is not in its model description".to_string())
        })
}

/// Where changes to a variable go, or why it cannot be changed.
fn target_of(
    exec: &Execution,
    component: usize,
    variable: usize,
) -> std::result::Result<Target, String> {
    let connections = &exec.resolved.connections;
    let var = &exec.resolved.components[component].description.variables[variable];
    // Connected element by element (resolve.rs): the connections name element variables.
    if var.is_array() {
        let resolved = &exec.resolved;
        let declared = |c: usize, v: usize| resolved.components[c].declared_variable(v);
        if connections.iter().any(|c| {
            (c.to_component == component && declared(c.to_component, c.to_variable) == variable)
                || (c.from_component == component
                    && declared(c.from_component, c.from_variable) == variable)
        }) {
            return Err(
                "a connected array cannot be changed by a scenario (its connection sets it at every step)"
                    .into(),
            );
        }
    }
    let into: Vec<(usize, f64, f64)> = connections
        .iter()
        .enumerate()
        .filter(|(_, c)| c.to_component == component && c.to_variable == variable)
        .map(|(i, c)| (i, c.scale, c.shift))
        .collect();
    if !into.is_empty() {
        return Ok(Target::Connections {
            connections: into,
            output: false,
        });
    }
    let from: Vec<(usize, f64, f64)> = connections
        .iter()
        .enumerate()
        .filter(|(_, c)| c.from_component == component && c.from_variable == variable)
        .map(|(i, c)| (i, c.scale, c.shift))
        .collect();
    if !from.is_empty() {
        if var.is_array() {
            return Err("an array output cannot be changed by a scenario".into());
        }
        return Ok(Target::Connections {
            connections: from,
            output: true,
        });
    }
    if exec.table_inputs[component].drives(var.value_reference) {
        return Err("the input file drives this input; drop its column, or change it there".into());
    }
    match (var.causality, var.variability) {
        (Causality::Input, _) | (Causality::Parameter, Variability::Tunable) => Ok(Target::Variable {
            component,
            variable,
        }),
        (Causality::Output, _) => Err(
            "the output feeds no connection, so nothing would see the change (cosimo records the FMU's own outputs); change an input or a connected output"
                .into(),
        ),
        (Causality::Parameter, _) | (Causality::StructuralParameter, _) => Err(
            "the parameter is not tunable: only inputs and tunable parameters change during a run (set it as a start value instead)"
                .into(),
        ),
        _ => Err("only inputs, tunable parameters and connected outputs can be changed".into()),
    }
}

/// The file's value as a value of the variable's kind (numbers as the type needs them).
fn typed(
    value: &ScenarioValue,
    var_type: VariableType,
    count: usize,
) -> std::result::Result<StartValue, String> {
    let repeat = |v: StartValue| match v {
        StartValue::Float(x) => StartValue::Float(vec![x[0]; count]),
        StartValue::Int(x) => StartValue::Int(vec![x[0]; count]),
        StartValue::Bool(x) => StartValue::Bool(vec![x[0]; count]),
        StartValue::String(x) => StartValue::String(vec![x[0].clone(); count]),
        other => other,
    };
    use VariableType::*;
    let single = match (var_type, value) {
        (Float32 | Float64, ScenarioValue::Float(x)) => StartValue::Float(vec![*x]),
        (Float32 | Float64, ScenarioValue::Integer(i)) => StartValue::Float(vec![*i as f64]),
        (_, ScenarioValue::Integer(i)) if var_type.is_integer() => StartValue::Int(vec![*i]),
        (Boolean, ScenarioValue::Boolean(b)) => StartValue::Bool(vec![*b]),
        (String, ScenarioValue::String(s)) => StartValue::String(vec![s.clone()]),
        _ => {
            return Err(format!(
                "a {:?} variable takes {}",
                var_type,
                match var_type {
                    Float32 | Float64 => "a number",
                    Boolean => "true or false",
                    String => "a string",
                    t if t.is_integer() => "an integer (no fraction)",
                    _ => "no scenario value",
                }
            ))
        }
    };
    Ok(repeat(single))
}

/// A value as the file writes it (`50.0`, `3`, `true`, `text`).
fn plain(value: &ScenarioValue) -> String {
    match value {
        ScenarioValue::Float(x) => format!("{x:?}"),
        ScenarioValue::Integer(i) => i.to_string(),
        ScenarioValue::Boolean(b) => b.to_string(),
        ScenarioValue::String(s) => s.clone(),
    }
}

/// An override's value as the master's coupling number (Booleans 0 / 1).
fn first_number(value: &StartValue) -> f64 {
    match value {
        StartValue::Float(v) => v.first().copied().unwrap_or(0.0),
        StartValue::Int(v) => v.first().map_or(0.0, |&x| x as f64),
        StartValue::UInt(v) => v.first().map_or(0.0, |&x| x as f64),
        StartValue::Bool(v) => v.first().map_or(0.0, |&x| f64::from(u8::from(x))),
        _ => 0.0,
    }
}
