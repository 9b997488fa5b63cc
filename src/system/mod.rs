//! MANY FMUs wired together: components, connections, the experiment.
//!
//! A [`System`] is plain data: it names FMU files and variables but loads nothing. It comes from
//! cosimo's JSON system file (`config`), from the command line's short form, or from SSP
//! (`ssp`). `graph` derives the coupling structure; the master runs it. The experiment's
//! settings live in [`crate::settings`].

pub mod config;
pub mod graph;
pub mod load;
pub mod resolve;
pub mod ssp;
pub mod units;

use std::path::PathBuf;

use crate::fmu::Interface;
use crate::settings::Experiment;

/// A co-simulation system: components, how they are connected, and how to run it.
#[derive(Debug, Clone, PartialEq)]
pub struct System {
    /// The components, in declaration order (names are unique).
    pub components: Vec<Component>,
    /// Connections from an output of one component to an input of another.
    pub connections: Vec<Connection>,
    /// Time span, steps and algorithm.
    pub experiment: Experiment,
}

/// One instance of an FMU in a system.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// Unique name; result columns are `name.variable`.
    pub name: String,
    /// The FMU file or unpacked folder.
    pub fmu: PathBuf,
    /// Start values and parameters as `(variable, value as text)`, set before initialization.
    pub start_values: Vec<(String, String)>,
    /// Multirate: the component takes this many equal sub-steps per macro step (1: none).
    pub sub_steps: u32,
    /// Host the FMU in a worker process (`Some(true)`), in cosimo's own (`Some(false)`), or let
    /// cosimo choose (`None`: in-process, unless the run isolates every component or the FMU
    /// can be instantiated only once per process and the system has several instances of it).
    pub isolate: Option<bool>,
    /// Seconds an FMI call of this component may take before its worker is killed (implies a
    /// worker process).
    pub call_timeout: Option<f64>,
    /// Host the FMU in the worker process of this name, shared with the other components that
    /// name it (implies a worker process; `None`: a process of its own, or as `--worker-processes`
    /// spreads the isolated components).
    pub worker_group: Option<String>,
    /// The FMU's interface this component uses (`None`: `--interface`, else Co-Simulation
    /// when the FMU has it, else Model Exchange).
    pub interface: Option<Interface>,
    /// Under `mpirun`: the rank that steps this component (`None`: split along the coupling
    /// order).
    pub rank: Option<usize>,
}

/// One end of a connection: `component.variable`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    pub component: String,
    pub variable: String,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.component, self.variable)
    }
}

impl Endpoint {
    /// Parse `component.variable` (the variable part may itself contain dots).
    pub fn parse(text: &str) -> Option<Endpoint> {
        let (component, variable) = text.split_once('.')?;
        if component.is_empty() || variable.is_empty() {
            return None;
        }
        Some(Endpoint {
            component: component.to_string(),
            variable: variable.to_string(),
        })
    }
}

/// A connection `from -> to`: the input `to` takes `factor * from + offset` (after converting
/// between the two variables' declared units, when they differ).
#[derive(Debug, Clone, PartialEq)]
pub struct Connection {
    pub from: Endpoint,
    pub to: Endpoint,
    /// Linear transformation applied after unit conversion.
    pub factor: f64,
    pub offset: f64,
    /// Extrapolation order for this connection, overriding the experiment's.
    pub extrapolation_order: Option<u8>,
    /// Boolean, integer or enumeration value map `(source value, target value)` as text (SSP's
    /// mapping transformations); values not in the map pass unchanged.
    pub value_map: Vec<(String, String)>,
    /// Extended coupling (implicit algorithm with a corrector extension): the value is
    /// discretised on half steps (the thesis' C / L / Q functions through the values at the
    /// step's start, middle and end) instead of on the macro grid.
    pub half_step: bool,
    /// Integral-extended coupling: an output of the source component that is the running
    /// integral over time of this connection's source (e.g. `x_int` for a position `x`, or
    /// `x` for a velocity `v`), so the master knows the source's integral over a macro step.
    pub source_integral: Option<String>,
    /// Connect even when the two variables' units differ in dimension: the value passes
    /// unchanged and a warning is logged (the file's `ignoreUnits`, SSP's
    /// `suppressUnitConversion`, the CLI's `--ignore-units`). Units of the same dimension are
    /// still converted unless this is set.
    pub ignore_units: bool,
}

impl Connection {
    /// A plain connection (no transformation, the experiment's extrapolation order).
    pub fn new(from: Endpoint, to: Endpoint) -> Connection {
        Connection {
            from,
            to,
            factor: 1.0,
            offset: 0.0,
            extrapolation_order: None,
            value_map: Vec::new(),
            half_step: false,
            source_integral: None,
            ignore_units: false,
        }
    }
}

impl System {
    /// Set (or replace) the start value `text` of `component.variable`; an error names the
    /// components when there is no such component.
    pub fn set_start_value(&mut self, at: &Endpoint, text: String) -> Result<(), String> {
        let known: Vec<&str> = self.components.iter().map(|c| c.name.as_str()).collect();
        let Some(i) = known.iter().position(|&n| n == at.component) else {
            return Err(format!(
                "there is no component \"{}\"; the components are: {}",
                at.component,
                known.join(", ")
            ));
        };
        let values = &mut self.components[i].start_values;
        values.retain(|(n, _)| *n != at.variable);
        values.push((at.variable.clone(), text));
        Ok(())
    }

    /// One FMU alone as a one-component system named after its model, as fmusim runs it: the
    /// times come from `overrides`, else the FMU's `<DefaultExperiment>`, else start 0, stop
    /// start + 1 and the step (stop - start) / 500; `overrides` then apply on top.
    pub fn single_fmu(
        path: &std::path::Path,
        description: &crate::fmu::ModelDescription,
        start_values: Vec<(String, String)>,
        overrides: &crate::settings::Overrides,
    ) -> crate::Result<System> {
        use crate::settings::control::StepControl;
        use crate::settings::{Algorithm, ExperimentSpec, Labels};
        let de = description.default_experiment.clone().unwrap_or_default();
        let start = overrides.start.or(de.start_time).unwrap_or(0.0);
        let stop = overrides.stop.or(de.stop_time).unwrap_or(start + 1.0);
        let step = overrides
            .step
            .or(de.step_size)
            .unwrap_or((stop - start) / 500.0);
        // A refusal names where the value came from: the override or the FMU.
        let (given, fmu) = (Labels::COMMAND_LINE, Labels::DEFAULT_EXPERIMENT);
        let pick = |overridden: bool, cli: &'static str, own: &'static str| {
            if overridden {
                cli
            } else {
                own
            }
        };
        let labels = Labels {
            start: pick(overrides.start.is_some(), given.start, fmu.start),
            stop: pick(overrides.stop.is_some(), given.stop, fmu.stop),
            step: pick(overrides.step.is_some(), given.step, fmu.step),
            output_interval: given.output_interval,
            ..fmu
        };
        // The output interval, row limit and step control asked for decide how many rows and
        // fixed steps the FMU's time span makes.
        let mut defaults = ExperimentSpec {
            start: Some(start),
            stop: Some(stop),
            step: Some(step),
            output_interval: overrides.output_interval,
            tolerance: de.tolerance,
            control: overrides.adaptive.then(StepControl::default),
            max_rows: overrides.max_rows,
            labels,
            ..ExperimentSpec::default()
        }
        .build()
        .map_err(|m| {
            // Name the file where its own default experiment is at fault.
            crate::Error::Usage(if m.starts_with("<DefaultExperiment") {
                format!("{}: {m}", path.display())
            } else {
                m
            })
        })?;
        // The step control above only spared the first step the count of fixed steps: the
        // overrides choose its estimator for the algorithm they choose.
        defaults.algorithm = Algorithm::default();
        let experiment = overrides
            .apply(&defaults, Labels::DEFAULT_EXPERIMENT)
            .map_err(crate::Error::Usage)?;
        Ok(System {
            components: vec![Component {
                name: description.model_name.clone(),
                fmu: path.to_path_buf(),
                start_values,
                sub_steps: 1,
                isolate: None,
                call_timeout: None,
                worker_group: None,
                interface: None,
                rank: None,
            }],
            connections: Vec::new(),
            experiment,
        })
    }

    /// The component with this name.
    pub fn component(&self, name: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.name == name)
    }
}
