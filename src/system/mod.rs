//! MANY FMUs wired together: components, connections, the experiment.
//!
//! A [`System`] is plain data: it names FMU files and variables but loads nothing. It comes from
//! cosimo's JSON system file (`config`), from the command line's short form, or (later) from
//! SSP. `graph` derives the coupling structure; the master runs it.

pub mod config;
pub mod graph;
pub mod resolve;
pub mod ssp;
pub mod units;

use std::path::PathBuf;

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
        }
    }
}

/// How the master advances the components within a macro step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// All components step from the same exchanged values (in parallel when asked).
    Jacobi,
    /// Components step one after the other in graph order, each seeing the outputs its
    /// predecessors just computed.
    GaussSeidel,
    /// Predictor / corrector: every macro step is repeated from saved FMU states until the
    /// coupling equations hold at its end (Newton on the coupling variables).
    Implicit,
    /// Reduced interface model: a multibody component and fast components coupled through a
    /// model of the multibody interface integrated at the fast rate (`Experiment::rim`).
    Rim,
    /// Constraint coupling: algebraic constraints between components with Lagrange multipliers
    /// as coupling inputs (`Experiment::constraints`).
    Constraint,
}

/// How algebraic loops between direct-feedthrough ports are solved at communication points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopSolver {
    /// Newton with the interface Jacobian from directional derivatives where every FMU in the
    /// loop provides them, finite differences otherwise.
    Newton,
    /// Newton with a finite-difference Jacobian even when directional derivatives exist.
    NewtonFiniteDifferences,
    /// Plain fixed-point iteration u := phi(u).
    FixedPoint,
}

/// Settings of the algebraic-loop solver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoopSettings {
    pub solver: LoopSolver,
    /// Converged when every |residual| <= abs_tolerance + rel_tolerance * |u|.
    pub abs_tolerance: f64,
    pub rel_tolerance: f64,
    pub max_iterations: u32,
}

impl Default for LoopSettings {
    fn default() -> Self {
        LoopSettings {
            solver: LoopSolver::Newton,
            abs_tolerance: 1e-10,
            rel_tolerance: 1e-10,
            max_iterations: 50,
        }
    }
}

/// Time span, macro step, output grid and algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    pub start: f64,
    pub stop: f64,
    /// Macro (communication) step size.
    pub step: f64,
    /// Interval between result rows (a multiple of the step, or steps land on it).
    pub output_interval: Option<f64>,
    pub algorithm: Algorithm,
    /// Default extrapolation order of Float inputs: 0 (zero-order hold) to 3.
    pub extrapolation_order: u8,
    /// Step Jacobi components in parallel on a persistent worker pool.
    pub parallel: bool,
    pub loops: LoopSettings,
    /// Relative tolerance passed to the FMUs at initialization.
    pub tolerance: Option<f64>,
    /// Settings of the implicit corrector (used with [`Algorithm::Implicit`]).
    pub corrector: crate::master::implicit::ImplicitSettings,
    /// Macro-step size (and order) control; `None`: the fixed macro step `step`.
    pub control: Option<crate::master::control::StepControl>,
    /// Settings of the reduced-interface-model algorithm ([`Algorithm::Rim`]).
    pub rim: Option<crate::master::rim::RimSettings>,
    /// The constraints and their method ([`Algorithm::Constraint`]).
    pub constraints: Option<crate::master::constraint::ConstraintCoupling>,
}

impl Default for Experiment {
    fn default() -> Self {
        Experiment {
            start: 0.0,
            stop: 1.0,
            step: 1e-3,
            output_interval: None,
            algorithm: Algorithm::Jacobi,
            extrapolation_order: 0,
            parallel: false,
            loops: LoopSettings::default(),
            tolerance: None,
            corrector: crate::master::implicit::ImplicitSettings::default(),
            control: None,
            rim: None,
            constraints: None,
        }
    }
}

impl System {
    /// The component with this name.
    pub fn component(&self, name: &str) -> Option<&Component> {
        self.components.iter().find(|c| c.name == name)
    }
}
