//! LEAF: what a run is asked to do, as plain data: the experiment (time span, steps, output
//! grid) and the master algorithm with exactly its own settings.
//!
//! Every reader fills an [`ExperimentSpec`] (the JSON system file, the SSP annotations, the
//! command line on top of either) and [`ExperimentSpec::build`] turns it into an
//! [`Experiment`] in one place, refusing every combination that would not take effect with a
//! message that names the option as its reader spells it. This module imports nothing of
//! `system` or `master`: both depend on it.

pub mod constraint;
pub mod control;
pub mod implicit;
pub mod overrides;
pub mod results;
pub mod rim;
pub mod scenario;
pub mod study;
pub mod tolerance;

use constraint::ConstraintCoupling;
use control::{ControlLabels, StepControl};
use implicit::{Extension, ImplicitSettings};
pub use overrides::Overrides;
use rim::RimSettings;

/// The longest call timeout cosimo accepts, in seconds: a year. Longer is no timeout at all,
/// and a larger number would not fit a duration.
pub const MAX_CALL_TIMEOUT: f64 = 365.0 * 86_400.0;

/// A call timeout in seconds as a duration, or why it cannot be one (the caller names the
/// option): it must be positive and at most [`MAX_CALL_TIMEOUT`].
pub fn call_timeout(seconds: f64) -> Result<std::time::Duration, String> {
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err("expected a positive number of seconds".into());
    }
    if seconds > MAX_CALL_TIMEOUT {
        return Err(format!(
            "more than the limit of {MAX_CALL_TIMEOUT} s (a year); leave the timeout out for none"
        ));
    }
    std::time::Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string())
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

/// Settings of the explicit sweeps (Jacobi, Gauss-Seidel).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Explicit {
    /// Default extrapolation order of Float inputs: 0 (zero-order hold) to 3.
    pub extrapolation_order: u8,
    /// Macro-step size (and order) control with an explicit estimator; `None`: fixed steps.
    pub control: Option<StepControl>,
}

/// Settings of the implicit predictor / corrector scheme.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Implicit {
    /// Degree k of the predictor's extrapolation and the corrector's interpolation.
    pub extrapolation_order: u8,
    pub corrector: ImplicitSettings,
    /// Macro-step size (and order) control with any estimator; `None`: fixed steps.
    pub control: Option<StepControl>,
}

/// How the master advances the components, each variant with exactly its own settings.
#[derive(Debug, Clone, PartialEq)]
pub enum Algorithm {
    /// All components step from the same exchanged values (in parallel when asked).
    Jacobi(Explicit),
    /// Components step one after the other in graph order, each seeing the outputs its
    /// predecessors just computed.
    GaussSeidel(Explicit),
    /// Predictor / corrector: every macro step is repeated from saved FMU states until the
    /// coupling equations hold at its end (Newton on the coupling variables).
    Implicit(Implicit),
    /// Constraint coupling: algebraic constraints between components with Lagrange
    /// multipliers as coupling inputs.
    Constraint(ConstraintCoupling),
    /// Reduced interface model: a multibody component and fast components coupled through a
    /// model of the multibody interface integrated at the fast rate.
    Rim(RimSettings),
}

impl Default for Algorithm {
    fn default() -> Self {
        Algorithm::Jacobi(Explicit::default())
    }
}

/// The algorithms by name, without their settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AlgorithmKind {
    Jacobi,
    GaussSeidel,
    Implicit,
    Constraint,
    Rim,
}

impl AlgorithmKind {
    /// Every algorithm, in the order the documentation lists them.
    pub const ALL: [AlgorithmKind; 5] = [
        AlgorithmKind::Jacobi,
        AlgorithmKind::GaussSeidel,
        AlgorithmKind::Implicit,
        AlgorithmKind::Constraint,
        AlgorithmKind::Rim,
    ];

    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            AlgorithmKind::Jacobi => "jacobi",
            AlgorithmKind::GaussSeidel => "gauss-seidel",
            AlgorithmKind::Implicit => "implicit",
            AlgorithmKind::Constraint => "constraint",
            AlgorithmKind::Rim => "rim",
        }
    }

    /// The algorithm with this name.
    pub fn parse(name: &str) -> Option<AlgorithmKind> {
        AlgorithmKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for AlgorithmKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Algorithm {
    /// Which algorithm this is.
    pub fn kind(&self) -> AlgorithmKind {
        match self {
            Algorithm::Jacobi(_) => AlgorithmKind::Jacobi,
            Algorithm::GaussSeidel(_) => AlgorithmKind::GaussSeidel,
            Algorithm::Implicit(_) => AlgorithmKind::Implicit,
            Algorithm::Constraint(_) => AlgorithmKind::Constraint,
            Algorithm::Rim(_) => AlgorithmKind::Rim,
        }
    }

    /// The default extrapolation order of Float inputs (0 where the algorithm has none).
    pub fn extrapolation_order(&self) -> u8 {
        match self {
            Algorithm::Jacobi(x) | Algorithm::GaussSeidel(x) => x.extrapolation_order,
            Algorithm::Implicit(x) => x.extrapolation_order,
            Algorithm::Constraint(_) | Algorithm::Rim(_) => 0,
        }
    }

    /// The macro-step control, where the algorithm has one.
    pub fn control(&self) -> Option<&StepControl> {
        match self {
            Algorithm::Jacobi(x) | Algorithm::GaussSeidel(x) => x.control.as_ref(),
            Algorithm::Implicit(x) => x.control.as_ref(),
            Algorithm::Constraint(_) | Algorithm::Rim(_) => None,
        }
    }

    /// The implicit corrector's settings, for the implicit algorithm.
    pub fn corrector(&self) -> Option<&ImplicitSettings> {
        match self {
            Algorithm::Implicit(x) => Some(&x.corrector),
            _ => None,
        }
    }

    /// The extended coupling in use (only the implicit algorithm has one).
    pub fn extension(&self) -> Extension {
        self.corrector().map_or(Extension::None, |c| c.extension)
    }

    /// Jacobi, Gauss-Seidel or implicit with default settings and extrapolation order `k`;
    /// `None` for constraint and rim, which cannot run without their own settings.
    pub fn with_order(kind: AlgorithmKind, k: u8) -> Option<Algorithm> {
        let explicit = Explicit {
            extrapolation_order: k,
            control: None,
        };
        match kind {
            AlgorithmKind::Jacobi => Some(Algorithm::Jacobi(explicit)),
            AlgorithmKind::GaussSeidel => Some(Algorithm::GaussSeidel(explicit)),
            AlgorithmKind::Implicit => Some(Algorithm::Implicit(Implicit {
                extrapolation_order: k,
                ..Implicit::default()
            })),
            AlgorithmKind::Constraint | AlgorithmKind::Rim => None,
        }
    }

    /// The implicit corrector's settings to change, for the implicit algorithm.
    pub fn corrector_mut(&mut self) -> Option<&mut ImplicitSettings> {
        match self {
            Algorithm::Implicit(x) => Some(&mut x.corrector),
            _ => None,
        }
    }
}

/// Most result rows a run writes unless its experiment allows more ([`Experiment::max_rows`],
/// `--max-rows`): 100 million rows are gigabytes of CSV even with one column, and a mistyped
/// output interval (1e-9 for 1e-3) would otherwise fill the disk before anyone noticed.
pub const DEFAULT_MAX_ROWS: u64 = 100_000_000;

/// Most macro steps on a fixed step grid: 10^12 steps take days even at a microsecond each, so
/// more can only be a mistaken step size (step control is not counted: its steps grow).
pub const MAX_FIXED_STEPS: f64 = 1e12;

/// Time span, macro step, output grid and algorithm of a run: checked, consistent settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    pub start: f64,
    pub stop: f64,
    /// Macro (communication) step size; under step control, the first step.
    pub step: f64,
    /// Interval between result rows (`None`: the step size).
    pub output_interval: Option<f64>,
    /// Relative tolerance passed to the FMUs at initialization.
    pub tolerance: Option<f64>,
    pub algorithm: Algorithm,
    /// Keep each component on its own worker thread and step them concurrently.
    pub parallel: bool,
    pub loops: LoopSettings,
    /// Most result rows the output grid may make (default [`DEFAULT_MAX_ROWS`]).
    pub max_rows: u64,
    /// A magnitude that no coupling value (multiplier) and no recorded Float value may exceed:
    /// beyond it the run counts as diverged and stops (`None`, the default: no bound; see
    /// `master::divergence` for why there is no default bound and what detects divergence
    /// without one).
    pub divergence_limit: Option<f64>,
}

impl Default for Experiment {
    fn default() -> Self {
        Experiment {
            start: 0.0,
            stop: 1.0,
            step: 1e-3,
            output_interval: None,
            tolerance: None,
            algorithm: Algorithm::default(),
            parallel: false,
            loops: LoopSettings::default(),
            max_rows: DEFAULT_MAX_ROWS,
            divergence_limit: None,
        }
    }
}

impl Experiment {
    /// The interval between result rows.
    pub fn output_interval(&self) -> f64 {
        self.output_interval.unwrap_or(self.step)
    }

    /// Check settings built by hand (the fields are public) as a reader's would be checked;
    /// `labels` name them in the message.
    pub fn check(&self, labels: Labels) -> Result<(), String> {
        self.to_spec(labels).build().map(|_| ())
    }

    /// The same settings as a spec, for a reader that changes some of them (the command line
    /// on top of a file); `labels` name the settings as that file spells them.
    pub fn to_spec(&self, labels: Labels) -> ExperimentSpec {
        let mut spec = ExperimentSpec {
            start: Some(self.start),
            stop: Some(self.stop),
            step: Some(self.step),
            output_interval: self.output_interval,
            tolerance: self.tolerance,
            algorithm: Some(self.algorithm.kind()),
            parallel: self.parallel.then_some(true),
            loops: Some(self.loops),
            max_rows: Some(self.max_rows),
            divergence_limit: self.divergence_limit,
            labels,
            ..ExperimentSpec::default()
        };
        match &self.algorithm {
            Algorithm::Jacobi(x) | Algorithm::GaussSeidel(x) => {
                spec.extrapolation_order = Some(x.extrapolation_order).filter(|&k| k > 0);
                spec.control = x.control.clone();
            }
            Algorithm::Implicit(x) => {
                spec.extrapolation_order = Some(x.extrapolation_order).filter(|&k| k > 0);
                spec.corrector = Some(x.corrector);
                spec.control = x.control.clone();
            }
            Algorithm::Constraint(c) => spec.constraints = Some(c.clone()),
            Algorithm::Rim(r) => spec.rim = Some(r.clone()),
        }
        spec
    }
}

/// How a reader spells each setting, so that a refusal names it as the user wrote it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Labels {
    pub start: &'static str,
    pub stop: &'static str,
    pub step: &'static str,
    pub output_interval: &'static str,
    pub tolerance: &'static str,
    pub algorithm: &'static str,
    pub extrapolation_order: &'static str,
    pub parallel: &'static str,
    pub loops: &'static str,
    pub corrector: &'static str,
    pub control: &'static str,
    /// Each setting of the step control.
    pub control_settings: ControlLabels,
    pub rim: &'static str,
    pub constraints: &'static str,
    pub divergence_limit: &'static str,
}

impl Labels {
    /// cosimo's JSON system file.
    pub const SYSTEM_FILE: Labels = Labels {
        start: "experiment.startTime",
        stop: "experiment.stopTime",
        step: "experiment.stepSize",
        output_interval: "experiment.outputInterval",
        tolerance: "experiment.tolerance",
        algorithm: "experiment.algorithm",
        extrapolation_order: "experiment.extrapolationOrder",
        parallel: "experiment.parallel",
        loops: "experiment.algebraicLoops",
        corrector: "experiment.corrector",
        control: "experiment.stepControl",
        control_settings: ControlLabels {
            estimator: "experiment.stepControl.estimator",
            rtol: "experiment.stepControl.relativeTolerance",
            atol_position: "experiment.stepControl.positionTolerance",
            atol_velocity: "experiment.stepControl.velocityTolerance",
            rtol_coupling: "experiment.stepControl.couplingRelativeTolerance",
            atol_coupling: "experiment.stepControl.couplingAbsoluteTolerance",
            variable_order: "experiment.stepControl.variableOrder",
            max_order: "experiment.stepControl.maxOrder",
            positions: "experiment.stepControl.positions",
            velocities: "experiment.stepControl.velocities",
        },
        rim: "experiment.rim",
        constraints: "experiment.constraints",
        divergence_limit: "experiment.divergenceLimit",
    };

    /// cosimo's annotations in an SSP's SystemStructure.ssd.
    pub const SSP: Labels = Labels {
        start: "<ssd:DefaultExperiment startTime>",
        stop: "<ssd:DefaultExperiment stopTime>",
        step: "<cosimo:Experiment stepSize>",
        output_interval: "<cosimo:Experiment outputInterval>",
        tolerance: "<cosimo:Experiment tolerance>",
        algorithm: "<cosimo:Experiment algorithm>",
        extrapolation_order: "<cosimo:Experiment extrapolationOrder>",
        parallel: "<cosimo:Experiment parallel>",
        loops: "<cosimo:Experiment loop...>",
        corrector: "<cosimo:Experiment corrector...>",
        control: "<cosimo:StepControl>",
        control_settings: ControlLabels {
            estimator: "<cosimo:StepControl estimator>",
            rtol: "<cosimo:StepControl relativeTolerance>",
            atol_position: "<cosimo:StepControl positionTolerance>",
            atol_velocity: "<cosimo:StepControl velocityTolerance>",
            rtol_coupling: "<cosimo:StepControl couplingRelativeTolerance>",
            atol_coupling: "<cosimo:StepControl couplingAbsoluteTolerance>",
            variable_order: "<cosimo:StepControl variableOrder>",
            max_order: "<cosimo:StepControl maxOrder>",
            positions: "<cosimo:StepControl positions>",
            velocities: "<cosimo:StepControl velocities>",
        },
        rim: "the rim settings (not available in SSP annotations)",
        constraints: "<cosimo:Constraints>",
        divergence_limit: "<cosimo:Experiment divergenceLimit>",
    };

    /// An FMU's own `<DefaultExperiment>` (one FMU run alone).
    pub const DEFAULT_EXPERIMENT: Labels = Labels {
        start: "<DefaultExperiment startTime>",
        stop: "<DefaultExperiment stopTime>",
        step: "<DefaultExperiment stepSize>",
        output_interval: "the output interval",
        tolerance: "<DefaultExperiment tolerance>",
        algorithm: "the algorithm",
        extrapolation_order: "the extrapolation order",
        parallel: "parallel stepping",
        loops: "the algebraic-loop settings",
        corrector: "the corrector settings",
        control: "step control",
        // Only the command line sets step control for one FMU.
        control_settings: Labels::COMMAND_LINE.control_settings,
        rim: "the rim settings",
        constraints: "the constraint settings",
        divergence_limit: "the divergence limit",
    };

    /// The command line.
    pub const COMMAND_LINE: Labels = Labels {
        start: "--start-time",
        stop: "--stop-time",
        step: "--step-size",
        output_interval: "--output-interval",
        tolerance: "--tolerance",
        algorithm: "--algorithm",
        extrapolation_order: "--extrapolation-order",
        parallel: "--parallel",
        loops: "the algebraic-loop settings",
        corrector: "--jacobian / --extension",
        control: "--adaptive",
        control_settings: ControlLabels {
            estimator: "--estimator",
            rtol: "--rtol",
            atol_position: "--atol-position",
            atol_velocity: "--atol-velocity",
            rtol_coupling: "--rtol-coupling",
            atol_coupling: "--atol-coupling",
            variable_order: "--fixed-order",
            max_order: "--extrapolation-order",
            positions: "a system file's stepControl.positions",
            velocities: "a system file's stepControl.velocities",
        },
        rim: "--algorithm rim",
        constraints: "--algorithm constraint",
        divergence_limit: "--divergence-limit",
    };
}

impl Default for Labels {
    fn default() -> Self {
        Labels::SYSTEM_FILE
    }
}

/// Every setting of an experiment as a reader found it (`None`: not given), before the
/// checks of [`ExperimentSpec::build`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExperimentSpec {
    pub start: Option<f64>,
    pub stop: Option<f64>,
    pub step: Option<f64>,
    pub output_interval: Option<f64>,
    pub tolerance: Option<f64>,
    pub algorithm: Option<AlgorithmKind>,
    pub extrapolation_order: Option<u8>,
    pub parallel: Option<bool>,
    pub loops: Option<LoopSettings>,
    pub corrector: Option<ImplicitSettings>,
    pub control: Option<StepControl>,
    pub rim: Option<RimSettings>,
    pub constraints: Option<ConstraintCoupling>,
    /// Most result rows (`None`: [`DEFAULT_MAX_ROWS`]).
    pub max_rows: Option<u64>,
    /// The divergence limit (`None`: no bound).
    pub divergence_limit: Option<f64>,
    /// How each setting is spelled where it came from.
    pub labels: Labels,
}

impl ExperimentSpec {
    /// Check every setting and every combination, and build the experiment. A setting that
    /// would not take effect with the chosen algorithm is refused, naming it.
    pub fn build(self) -> Result<Experiment, String> {
        let l = self.labels;
        let d = Experiment::default();
        let start = self.start.unwrap_or(d.start);
        let stop = self.stop.unwrap_or(d.stop);
        let step = self.step.unwrap_or(d.step);
        if !start.is_finite() {
            return Err(format!("{}: must be a finite number, not {start}", l.start));
        }
        if !stop.is_finite() || stop <= start {
            return Err(format!(
                "{}: the stop time ({stop}) must be a finite number after the start time ({start})",
                l.stop
            ));
        }
        if !(step > 0.0 && step.is_finite()) {
            return Err(format!(
                "{}: the step size must be positive, not {step}",
                l.step
            ));
        }
        if let Some(dt) = self.output_interval {
            if !(dt > 0.0 && dt.is_finite()) {
                return Err(format!(
                    "{}: the output interval must be positive, not {dt}",
                    l.output_interval
                ));
            }
        }
        check_time_resolution((start, stop), step, l.step, "step size")?;
        if let Some(dt) = self.output_interval {
            check_time_resolution((start, stop), dt, l.output_interval, "output interval")?;
        }
        let max_rows = self.max_rows.unwrap_or(DEFAULT_MAX_ROWS);
        check_grid_size(
            (start, stop),
            step,
            self.output_interval,
            self.control.is_some(),
            max_rows,
            &l,
        )?;
        if let Some(tol) = self.tolerance {
            if !(tol > 0.0 && tol.is_finite()) {
                return Err(format!(
                    "{}: the tolerance must be positive, not {tol}",
                    l.tolerance
                ));
            }
        }
        if let Some(k) = self.extrapolation_order {
            if k > 3 {
                return Err(format!(
                    "{}: {k} is out of range; use 0 to 3",
                    l.extrapolation_order
                ));
            }
        }
        if let Some(limit) = self.divergence_limit {
            if !(limit > 0.0 && limit.is_finite()) {
                return Err(format!(
                    "{}: the divergence limit must be a positive, finite magnitude, not {limit}; leave it out for no bound",
                    l.divergence_limit
                ));
            }
        }
        let loops = self.loops.unwrap_or_default();
        if !(loops.abs_tolerance >= 0.0 && loops.rel_tolerance >= 0.0)
            || !(loops.abs_tolerance > 0.0 || loops.rel_tolerance > 0.0)
        {
            return Err(format!(
                "{}: the absolute and relative tolerances must not be negative, and one of them must be positive",
                l.loops
            ));
        }
        if loops.max_iterations < 1 {
            return Err(format!(
                "{}: the iteration limit must be at least 1",
                l.loops
            ));
        }
        if let Some(control) = &self.control {
            check_control(control, l.control)?;
        }

        let kind = self.algorithm.unwrap_or(AlgorithmKind::Jacobi);
        // A setting that belongs to another algorithm would be ignored: refuse it.
        let refuse = |label: &str, belongs: &str| {
            Err(format!(
                "{label} applies to {belongs} only, but the algorithm is {kind} ({}): remove it or choose that algorithm",
                l.algorithm
            ))
        };
        if self.corrector.is_some() && kind != AlgorithmKind::Implicit {
            return refuse(l.corrector, "the implicit algorithm");
        }
        if self.rim.is_some() && kind != AlgorithmKind::Rim {
            return refuse(l.rim, "the rim algorithm");
        }
        if self.constraints.is_some() && kind != AlgorithmKind::Constraint {
            return refuse(l.constraints, "the constraint algorithm");
        }
        if matches!(kind, AlgorithmKind::Constraint | AlgorithmKind::Rim) {
            if self.control.is_some() {
                return refuse(l.control, "jacobi, gauss-seidel and implicit");
            }
            if self.extrapolation_order.is_some_and(|k| k > 0) {
                return refuse(l.extrapolation_order, "jacobi, gauss-seidel and implicit");
            }
        }
        if self.parallel == Some(true)
            && matches!(kind, AlgorithmKind::GaussSeidel | AlgorithmKind::Rim)
        {
            return Err(format!(
                "{}: the {kind} algorithm steps its components one after the other, so they cannot step in parallel; use jacobi, implicit or constraint, or drop it",
                l.parallel
            ));
        }
        if let Some(control) = &self.control {
            if control.estimator.is_implicit() && kind != AlgorithmKind::Implicit {
                return Err(format!(
                    "{}: the estimator {:?} belongs to the implicit scheme, but the algorithm is {kind} ({}): choose the implicit algorithm or an explicit estimator (ExLocal, ExMilne, ExSLocal)",
                    l.control, control.estimator, l.algorithm
                ));
            }
            // An explicit estimator makes explicit steps: the corrector would never run.
            if !control.estimator.is_implicit() && kind == AlgorithmKind::Implicit {
                return Err(format!(
                    "{}: the estimator {:?} ({}) belongs to the explicit scheme and steps without the corrector, but the algorithm is implicit ({}): choose an implicit estimator (ImMilne, ImSLocal) or the jacobi or gauss-seidel algorithm",
                    l.control, control.estimator, l.control_settings.estimator, l.algorithm
                ));
            }
        }
        let control = self.control;
        if let Some(control) = &control {
            check_control_applies(control, self.extrapolation_order, &l)?;
        }
        let order = self.extrapolation_order.unwrap_or(0);
        let algorithm = match kind {
            AlgorithmKind::Jacobi | AlgorithmKind::GaussSeidel => {
                let explicit = Explicit {
                    extrapolation_order: order,
                    control,
                };
                if kind == AlgorithmKind::Jacobi {
                    Algorithm::Jacobi(explicit)
                } else {
                    Algorithm::GaussSeidel(explicit)
                }
            }
            AlgorithmKind::Implicit => Algorithm::Implicit(Implicit {
                extrapolation_order: order,
                corrector: self.corrector.unwrap_or_default(),
                control,
            }),
            AlgorithmKind::Constraint => Algorithm::Constraint(self.constraints.ok_or_else(|| {
                format!(
                    "the constraint algorithm needs {}: interface points, equations and driven forces",
                    l.constraints
                )
            })?),
            AlgorithmKind::Rim => Algorithm::Rim(self.rim.ok_or_else(|| {
                format!(
                    "the rim algorithm needs {}: the multibody component and its interfaces",
                    l.rim
                )
            })?),
        };
        if let Algorithm::Rim(rim) = &algorithm {
            if rim.interfaces.is_empty() {
                return Err(format!(
                    "{}: the interfaces are empty: name at least one interface of the multibody component",
                    l.rim
                ));
            }
            if !(rim.fast_step_size > 0.0 && rim.fast_step_size.is_finite()) {
                return Err(format!(
                    "{}: the fast step size must be positive, not {}",
                    l.rim, rim.fast_step_size
                ));
            }
        }
        Ok(Experiment {
            start,
            stop,
            step,
            output_interval: self.output_interval,
            tolerance: self.tolerance,
            algorithm,
            parallel: self.parallel.unwrap_or(false),
            loops,
            max_rows,
            divergence_limit: self.divergence_limit,
        })
    }
}

/// Refuse a step (a step size or an output interval) that time cannot resolve at the start or
/// the stop time (t + h == t in double precision): the time would not advance, or only by
/// rounding, and the run would never end where it should.
fn check_time_resolution(
    (start, stop): (f64, f64),
    h: f64,
    label: &str,
    what: &str,
) -> Result<(), String> {
    for (t, which) in [(start, "start"), (stop, "stop")] {
        if t + h == t {
            let (t, h) = (short(t), short(h));
            let article = if what.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            return Err(format!(
                "{label}: {article} {what} of {h} s is below the resolution of time at the {which} time {t} s ({t} + {h} == {t} in double precision, so time would not advance); choose a larger {what} or times nearer 0"
            ));
        }
    }
    Ok(())
}

/// A number as a user would write it: 1e17 rather than 100000000000000000 (see
/// [`crate::numbers::number`]).
pub(crate) fn short(x: f64) -> String {
    crate::numbers::number(x)
}

/// Refuse an output grid of more than `max_rows` rows and a fixed step grid of more than
/// [`MAX_FIXED_STEPS`] steps, counted before the run so that it never fills the disk or runs
/// for ever.
fn check_grid_size(
    (start, stop): (f64, f64),
    step: f64,
    output_interval: Option<f64>,
    controlled: bool,
    max_rows: u64,
    l: &Labels,
) -> Result<(), String> {
    let span = stop - start;
    let interval = output_interval.unwrap_or(step);
    // One row at the start, one per interval, and one at the stop time when off the grid.
    let rows = (span / interval).ceil() + 1.0;
    if rows > max_rows as f64 {
        let (label, what) = match output_interval {
            Some(_) => (l.output_interval, "an output interval"),
            None => (l.step, "a step size (and so output interval)"),
        };
        return Err(format!(
            "{label}: {what} of {interval} s from {start} s to {stop} s makes {rows:.0} result rows, more than the limit of {max_rows}; choose a larger {} or a shorter run, or raise the limit (--max-rows)",
            if output_interval.is_some() { "output interval" } else { "step size or an output interval" }
        ));
    }
    let steps = (span / step).ceil();
    if !controlled && steps > MAX_FIXED_STEPS {
        return Err(format!(
            "{}: a step size of {step} s from {start} s to {stop} s makes {steps:.0} macro steps, more than {MAX_FIXED_STEPS:.0} (days of computing even at a microsecond per step); choose a larger step size or a shorter run",
            l.step
        ));
    }
    Ok(())
}

/// The controller's own numbers must make sense whatever the algorithm.
fn check_control(control: &StepControl, label: &str) -> Result<(), String> {
    let (rtol, atol_position, atol_velocity) = control.state_tolerances();
    let (rtol_coupling, atol_coupling) = control.coupling_tolerances();
    let positive = [
        ("relative tolerance", rtol),
        ("position tolerance", atol_position),
        ("velocity tolerance", atol_velocity),
        ("coupling relative tolerance", rtol_coupling),
        ("coupling absolute tolerance", atol_coupling),
        ("safety factor", control.step.safety),
    ];
    for (name, value) in positive {
        if !(value > 0.0 && value.is_finite()) {
            return Err(format!("{label}: the {name} must be positive, not {value}"));
        }
    }
    if control.h_max.is_nan() || control.h_max <= 0.0 {
        return Err(format!(
            "{label}: the largest step must be positive, not {}",
            control.h_max
        ));
    }
    if let Some(highest) = control.max_order.filter(|&k| k > 3) {
        return Err(format!(
            "{label}: the highest order {highest} is out of range; use 0 to 3"
        ));
    }
    if !(control.step.r_min > 0.0 && control.step.r_min <= 1.0 && control.step.r_max >= 1.0) {
        return Err(format!(
            "{label}: the step-size ratio limits must satisfy 0 < rMin <= 1 <= rMax (got {} and {})",
            control.step.r_min, control.step.r_max
        ));
    }
    Ok(())
}

/// Every setting of the step control must be read by its estimator and order control. Under
/// variable order the controller starts at order 0, and an extrapolation order given with it
/// is the highest order it may choose (as `--extrapolation-order` with `--adaptive`): it must
/// not contradict the control's own highest order.
fn check_control_applies(
    control: &StepControl,
    extrapolation_order: Option<u8>,
    l: &Labels,
) -> Result<(), String> {
    if let (true, Some(k), Some(highest)) = (
        control.variable_order,
        extrapolation_order.filter(|&k| k > 0),
        control.max_order,
    ) {
        if highest != k {
            return Err(format!(
                "{} ({k}) and {} ({highest}) disagree: under step control with variable order the controller starts at order 0 and chooses up to the highest order; give one of them, or fix the order ({})",
                l.extrapolation_order,
                l.control_settings.max_order,
                l.control_settings.variable_order
            ));
        }
    }
    match control.unused_setting(&l.control_settings) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}
