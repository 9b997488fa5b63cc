//! cosimo's own JSON system file, and the command line's short form of a system.
//!
//! The file (schema: `schemas/system.schema.json`) lists components (an FMU each, with start
//! values), connections `component.variable -> component.variable` and the experiment. Keys are
//! camelCase and unknown keys are errors, so that a typo never goes unnoticed. Relative FMU
//! paths are relative to the file's folder. Only what can be checked without the FMUs is
//! checked here; variable names, causalities and types are checked by
//! [`resolve`](super::resolve).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::{Component, Connection, Endpoint, System};
use crate::fmu::Interface;
use crate::settings::implicit::{Extension, JacobianMethod};
use crate::settings::{
    AlgorithmKind, Experiment, ExperimentSpec, Labels, LoopSettings, LoopSolver,
};
use crate::{Error, Result};

/// Read and check a system file.
pub fn from_file(path: &Path) -> Result<System> {
    let text = crate::fs_checks::read_to_string(path, "a system file")?;
    from_str(&text, path)
}

/// Parse and check the text of a system file; `path` names the file in messages, and relative
/// FMU paths are taken relative to its folder.
pub fn from_str(text: &str, path: &Path) -> Result<System> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let file: SystemFile = serde_json::from_str(text).map_err(|e| {
        let location = format!(" at line {} column {}", e.line(), e.column());
        let message = e.to_string();
        let message = message.strip_suffix(&location).unwrap_or(&message);
        // A sweep's study names the system it varies: say which command reads it.
        let hint = if message.starts_with("unknown field `system`") {
            "; this looks like a study file: run it with cosimo sweep"
        } else {
            ""
        };
        Error::Usage(format!(
            "{}:{}:{}: {message}{hint}",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    let folder = path.parent().unwrap_or(Path::new(""));
    let system = file
        .into_system(folder)
        .map_err(|m| Error::Usage(format!("{}: {m}", path.display())))?;
    validate(&system, Source::File)
        .map_err(|m| Error::Usage(format!("{}: {m}", path.display())))?;
    Ok(system)
}

/// The command line's short form: `cosimo run a=A.fmu B.fmu --connect a.y=B.u`.
///
/// Components are `name=path` or a bare path, named after the file stem with '.' and '-'
/// replaced by '_' (`Oscillator-fmi2.fmu` -> `Oscillator_fmi2`); connections are `from=to`.
pub fn from_command_line(
    components: &[String],
    connections: &[String],
    experiment: Experiment,
) -> Result<System> {
    let components = components
        .iter()
        .map(|arg| component_argument(arg))
        .collect::<Result<Vec<_>>>()?;
    let connections = connections
        .iter()
        .map(|arg| {
            let (from, to) = arg.split_once('=').ok_or_else(|| {
                Error::Usage(format!(
                    "--connect {arg}: expected FROM=TO, e.g. --connect mass1.x=spring.x1"
                ))
            })?;
            Ok(Connection::new(
                endpoint_text(from.trim()),
                endpoint_text(to.trim()),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    experiment
        .check(Labels::COMMAND_LINE)
        .map_err(Error::Usage)?;
    let system = System {
        components,
        connections,
        experiment,
    };
    validate(&system, Source::CommandLine).map_err(Error::Usage)?;
    Ok(system)
}

/// One component argument: `name=path` or a bare path.
fn component_argument(arg: &str) -> Result<Component> {
    let (name, path) = match arg.split_once('=') {
        Some((name, path))
            if !name.is_empty() && !name.contains(['/', '\\', '.']) && !path.is_empty() =>
        {
            (name.to_string(), PathBuf::from(path))
        }
        _ => {
            let path = PathBuf::from(arg);
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().replace(['.', '-'], "_"))
                .unwrap_or_default();
            if stem.is_empty() {
                return Err(Error::Usage(format!(
                    "{arg}: cannot name a component after this path; write NAME={arg}"
                )));
            }
            (stem, path)
        }
    };
    Ok(Component {
        name,
        fmu: path,
        start_values: Vec::new(),
        sub_steps: 1,
        isolate: None,
        call_timeout: None,
        worker_group: None,
        interface: None,
        rank: None,
    })
}

/// An endpoint as written; malformed text is kept whole in `component` and reported by
/// [`validate`].
fn endpoint_text(text: &str) -> Endpoint {
    Endpoint::parse(text).unwrap_or_else(|| Endpoint {
        component: text.to_string(),
        variable: String::new(),
    })
}

/// Where a system came from: decides how elements are named in messages.
#[derive(Clone, Copy)]
enum Source {
    File,
    CommandLine,
}

impl Source {
    fn component(self, index: usize, component: &Component) -> String {
        match self {
            Source::File => format!("components[{index}] (\"{}\")", component.name),
            Source::CommandLine => format!("component \"{}\"", component.name),
        }
    }

    fn connection(self, index: usize, connection: &Connection) -> String {
        match self {
            Source::File => format!(
                "connections[{index}] ({} -> {})",
                show_endpoint(&connection.from),
                show_endpoint(&connection.to)
            ),
            Source::CommandLine => format!(
                "--connect {}={}",
                show_endpoint(&connection.from),
                show_endpoint(&connection.to)
            ),
        }
    }
}

fn show_endpoint(e: &Endpoint) -> String {
    if e.variable.is_empty() {
        e.component.clone()
    } else {
        e.to_string()
    }
}

/// Checks that need no FMU: names, endpoints, ranges, the time span. Messages name the element.
fn validate(system: &System, source: Source) -> std::result::Result<(), String> {
    if system.components.is_empty() {
        return Err(match source {
            Source::File => "the system has no components; list at least one in \"components\"",
            Source::CommandLine => "no FMU given; name at least one FMU to run",
        }
        .to_string());
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, c) in system.components.iter().enumerate() {
        let at = source.component(i, c);
        if c.name.is_empty() {
            return Err(format!("{at}: the component name is empty; give it a name"));
        }
        if c.name.contains('.') {
            return Err(format!(
                "{at}: a component name must not contain '.' (connections are written \
                 component.variable); rename it, e.g. \"{}\"",
                c.name.replace('.', "_")
            ));
        }
        if let Some(first) = seen.insert(c.name.as_str(), i) {
            return Err(format!(
                "{at}: the name \"{}\" is already used by {}; give each component its own name",
                c.name,
                source.component(first, &system.components[first])
            ));
        }
        if c.sub_steps < 1 {
            return Err(format!(
                "{at}: subSteps must be at least 1 (1: one step per macro step)"
            ));
        }
        if c.fmu.as_os_str().is_empty() {
            return Err(format!("{at}: the FMU path is empty"));
        }
        if let Some(seconds) = c.call_timeout {
            crate::settings::call_timeout(seconds).map_err(|why| {
                let seconds = crate::settings::short(seconds);
                format!("{at}: callTimeout {seconds}: {why}")
            })?;
        }
    }
    let names = || {
        system
            .components
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
    };
    for (i, c) in system.connections.iter().enumerate() {
        let at = source.connection(i, c);
        for (end, e) in [("from", &c.from), ("to", &c.to)] {
            if e.variable.is_empty() || e.component.is_empty() {
                return Err(format!(
                    "{at}: \"{}\" ({end}) is not of the form component.variable",
                    show_endpoint(e)
                ));
            }
            if !seen.contains_key(e.component.as_str()) {
                let hint = match closest(&e.component, names()) {
                    Some(s) => format!("; did you mean \"{s}\"?"),
                    None => String::new(),
                };
                return Err(format!(
                    "{at}: there is no component \"{}\" (components: {}){hint}",
                    e.component,
                    names().join(", ")
                ));
            }
        }
        if let Some(order) = c.extrapolation_order {
            if order > 3 {
                return Err(format!(
                    "{at}: extrapolationOrder {order} is out of range; use 0 to 3"
                ));
            }
        }
        if !c.factor.is_finite() || !c.offset.is_finite() {
            return Err(format!("{at}: factor and offset must be finite numbers"));
        }
    }
    Ok(())
}

/// Names longer than this get no suggestion: the edit distance costs the product of the two
/// lengths, and a hostile file can make both a megabyte long.
const MAX_SUGGESTED_LENGTH: usize = 256;

/// The candidate closest to `name` by edit distance, if it is close enough to be a likely typo.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let length = name.chars().count();
    if length > MAX_SUGGESTED_LENGTH {
        return None;
    }
    let limit = (length / 3).max(1);
    candidates
        .into_iter()
        // The distance is at least the difference of the lengths: skip the hopeless at once.
        .filter(|c| c.chars().count().abs_diff(length) <= limit)
        .map(|c| {
            let d = if c.to_lowercase() == lower {
                0
            } else {
                edit_distance(&lower, &c.to_lowercase())
            };
            (d, c)
        })
        .filter(|&(d, _)| d <= limit && d < length)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

// ---------------------------------------------------------------------------------------------
// The file format (serde)

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SystemFile {
    #[serde(rename = "$schema")]
    _schema: Option<String>,
    #[serde(rename = "description")]
    _description: Option<String>,
    components: Vec<ComponentEntry>,
    #[serde(default)]
    connections: Vec<ConnectionEntry>,
    #[serde(default)]
    experiment: ExperimentEntry,
    /// The stability study of the system: read by `analysis::study`, not by a run.
    #[serde(rename = "stability")]
    _stability: Option<serde::de::IgnoredAny>,
    /// What `cosimo export` shows: read by `export`, not by a run.
    #[serde(rename = "export")]
    _export: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ComponentEntry {
    name: String,
    fmu: String,
    #[serde(rename = "description")]
    _description: Option<String>,
    #[serde(default)]
    parameters: Parameters,
    #[serde(default = "one")]
    sub_steps: u32,
    isolate: Option<bool>,
    call_timeout: Option<f64>,
    worker_group: Option<String>,
    interface: Option<Interface>,
    /// Under `mpirun`: the rank that steps the component.
    rank: Option<usize>,
}

fn one() -> u32 {
    1
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConnectionEntry {
    from: String,
    to: String,
    #[serde(rename = "description")]
    _description: Option<String>,
    #[serde(default = "unit_factor")]
    factor: f64,
    #[serde(default)]
    offset: f64,
    extrapolation_order: Option<u8>,
    /// Boolean / integer / enumeration value map, as SSP's mapping transformations.
    #[serde(default)]
    value_map: Vec<MapEntry>,
    /// Extended implicit coupling: discretise this value on half steps.
    #[serde(default)]
    half_step: bool,
    /// Integral-extended coupling: the source's output that integrates this source over time.
    source_integral: Option<String>,
    /// Pass the value unchanged even when the units differ in dimension (with a warning).
    #[serde(default)]
    ignore_units: bool,
}

/// One `valueMap` entry: a source value and the target value it becomes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MapEntry {
    from: MapValue,
    to: MapValue,
}

/// A value map side: a Boolean, an integer or an enumeration item name.
#[derive(Deserialize)]
#[serde(untagged)]
enum MapValue {
    Bool(bool),
    Int(i64),
    Text(String),
}

impl MapValue {
    fn text(&self) -> String {
        match self {
            MapValue::Bool(b) => b.to_string(),
            MapValue::Int(i) => i.to_string(),
            MapValue::Text(t) => t.clone(),
        }
    }
}

fn unit_factor() -> f64 {
    1.0
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExperimentEntry {
    start_time: Option<f64>,
    stop_time: Option<f64>,
    step_size: Option<f64>,
    output_interval: Option<f64>,
    algorithm: Option<AlgorithmEntry>,
    extrapolation_order: Option<u8>,
    parallel: Option<bool>,
    tolerance: Option<f64>,
    algebraic_loops: Option<LoopsEntry>,
    corrector: Option<CorrectorEntry>,
    step_control: Option<StepControlEntry>,
    rim: Option<RimEntry>,
    constraints: Option<ConstraintsEntry>,
    divergence_limit: Option<f64>,
}

/// `experiment.constraints`: algebraic constraints between components.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConstraintsEntry {
    /// index1 (default) or baumgarte.
    method: Option<String>,
    order: Option<u8>,
    newton_iterations: Option<u32>,
    alpha: Option<f64>,
    beta: Option<f64>,
    corrector: Option<bool>,
    points: Vec<PointEntry>,
    equations: Vec<std::collections::BTreeMap<String, f64>>,
    forces: Vec<ForceEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PointEntry {
    name: String,
    position: String,
    velocity: String,
    acceleration: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForceEntry {
    input: String,
    /// One coefficient per equation: input = sum coefficient_j * lambda_j.
    coefficients: Vec<f64>,
}

impl ConstraintsEntry {
    fn into_coupling(
        self,
    ) -> std::result::Result<crate::settings::constraint::ConstraintCoupling, String> {
        use crate::settings::constraint::{ConstraintCoupling, DrivenForce, InterfacePoint};
        let method = crate::settings::constraint::MethodSpec {
            method: self.method,
            order: self.order,
            newton_iterations: self.newton_iterations,
            alpha: self.alpha,
            beta: self.beta,
            corrector: self.corrector,
        }
        .build(&|setting| format!("constraints.{setting}"))?;
        let names: Vec<String> = self.points.iter().map(|p| p.name.clone()).collect();
        let mut equations = Vec::with_capacity(self.equations.len());
        for (j, e) in self.equations.iter().enumerate() {
            let mut terms = Vec::with_capacity(e.len());
            for (name, &coef) in e {
                let i = names.iter().position(|n| n == name).ok_or_else(|| {
                    format!(
                        "constraints.equations[{j}] names point \"{name}\"; the points are: {}",
                        names.join(", ")
                    )
                })?;
                terms.push((coef, i));
            }
            equations.push(terms);
        }
        let mut forces = Vec::with_capacity(self.forces.len());
        for f in self.forces {
            if f.coefficients.len() != equations.len() {
                return Err(format!(
                    "constraints.forces: {} has {} coefficients for {} equations",
                    f.input,
                    f.coefficients.len(),
                    equations.len()
                ));
            }
            forces.push(DrivenForce {
                input: f.input,
                terms: f
                    .coefficients
                    .into_iter()
                    .enumerate()
                    .filter(|(_, c)| *c != 0.0)
                    .map(|(j, c)| (c, j))
                    .collect(),
            });
        }
        Ok(ConstraintCoupling {
            points: self
                .points
                .into_iter()
                .map(|p| InterfacePoint {
                    position: p.position,
                    velocity: p.velocity,
                    acceleration: p.acceleration,
                })
                .collect(),
            equations,
            forces,
            method,
        })
    }
}

/// `experiment.rim`: the reduced interface model.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RimEntry {
    multibody: String,
    interfaces: Vec<RimInterfaceEntry>,
    fast_step_size: f64,
    effective_mass: Option<EffectiveMassEntry>,
    #[serde(default)]
    mass_outputs: Vec<String>,
    #[serde(default)]
    force_outputs: Vec<String>,
    integrator: Option<RimIntegratorEntry>,
    multibody_force: Option<MultibodyForceEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RimInterfaceEntry {
    position: String,
    velocity: String,
    acceleration: String,
    force: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum EffectiveMassEntry {
    DirectionalDerivatives,
    Perturbation,
    Outputs,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RimIntegratorEntry {
    SemiImplicitEuler,
    HeldForceExact,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum MultibodyForceEntry {
    Held,
    Averaged,
}

impl RimEntry {
    fn into_settings(self) -> std::result::Result<crate::settings::rim::RimSettings, String> {
        use crate::settings::rim::{
            EffectiveMass, MultibodyForce, RimIntegrator, RimInterface, RimSettings,
        };
        let from_outputs = matches!(self.effective_mass, Some(EffectiveMassEntry::Outputs));
        for (given, setting) in [
            (!self.mass_outputs.is_empty(), "massOutputs"),
            (!self.force_outputs.is_empty(), "forceOutputs"),
        ] {
            if given && !from_outputs {
                return Err(format!(
                    "rim.{setting} is read only with rim.effectiveMass \"outputs\", but the effective mass comes from {}: remove it, or set effectiveMass to \"outputs\"",
                    match self.effective_mass {
                        Some(EffectiveMassEntry::Perturbation) => "perturbed evaluations (\"perturbation\")",
                        _ => "directional derivatives (\"directional-derivatives\", the default)",
                    }
                ));
            }
        }
        Ok(RimSettings {
            multibody: self.multibody,
            interfaces: self
                .interfaces
                .into_iter()
                .map(|i| RimInterface {
                    position: i.position,
                    velocity: i.velocity,
                    acceleration: i.acceleration,
                    force: i.force,
                })
                .collect(),
            fast_step_size: self.fast_step_size,
            effective_mass: match self.effective_mass {
                None | Some(EffectiveMassEntry::DirectionalDerivatives) => {
                    EffectiveMass::DirectionalDerivatives
                }
                Some(EffectiveMassEntry::Perturbation) => EffectiveMass::Perturbation,
                Some(EffectiveMassEntry::Outputs) => EffectiveMass::Outputs {
                    mass: self.mass_outputs,
                    force: self.force_outputs,
                },
            },
            integrator: match self.integrator {
                None | Some(RimIntegratorEntry::SemiImplicitEuler) => {
                    RimIntegrator::SemiImplicitEuler
                }
                Some(RimIntegratorEntry::HeldForceExact) => RimIntegrator::HeldForceExact,
            },
            multibody_force: match self.multibody_force {
                None | Some(MultibodyForceEntry::Held) => MultibodyForce::Held,
                Some(MultibodyForceEntry::Averaged) => MultibodyForce::Averaged,
            },
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum AlgorithmEntry {
    Jacobi,
    GaussSeidel,
    Implicit,
    Rim,
    Constraint,
}

/// `experiment.corrector`: the implicit scheme's Newton iteration.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CorrectorEntry {
    max_iterations: Option<u32>,
    absolute_tolerance: Option<f64>,
    relative_tolerance: Option<f64>,
    reuse_jacobian: Option<bool>,
    jacobian: Option<JacobianEntry>,
    extension: Option<ExtensionEntry>,
}

/// `experiment.corrector.extension`: the extended coupling of the half-step connections.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum ExtensionEntry {
    None,
    Derivative,
    Integral,
}

/// `experiment.corrector.jacobian`: how the interface Jacobian is computed.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum JacobianEntry {
    System,
    Components,
}

/// `experiment.stepControl`: macro-step size and order control.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StepControlEntry {
    estimator: Option<EstimatorEntry>,
    safety_factor: Option<f64>,
    r_min: Option<f64>,
    r_max: Option<f64>,
    max_step_size: Option<f64>,
    relative_tolerance: Option<f64>,
    position_tolerance: Option<f64>,
    velocity_tolerance: Option<f64>,
    coupling_relative_tolerance: Option<f64>,
    coupling_absolute_tolerance: Option<f64>,
    variable_order: Option<bool>,
    max_order: Option<u8>,
    #[serde(default)]
    positions: Vec<String>,
    #[serde(default)]
    velocities: Vec<String>,
}

#[derive(Deserialize)]
enum EstimatorEntry {
    ExLocal,
    ExMilne,
    ExSLocal,
    ImMilne,
    ImSLocal,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LoopsEntry {
    solver: Option<SolverEntry>,
    absolute_tolerance: Option<f64>,
    relative_tolerance: Option<f64>,
    max_iterations: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum SolverEntry {
    Newton,
    NewtonFiniteDifferences,
    FixedPoint,
}

impl SystemFile {
    fn into_system(self, folder: &Path) -> std::result::Result<System, String> {
        let components: Vec<Component> = self
            .components
            .into_iter()
            .map(|c| Component {
                name: c.name,
                fmu: folder.join(c.fmu),
                start_values: c.parameters.0,
                sub_steps: c.sub_steps,
                isolate: c.isolate,
                call_timeout: c.call_timeout,
                worker_group: c.worker_group,
                interface: c.interface,
                rank: c.rank,
            })
            .collect();
        let connections = self
            .connections
            .into_iter()
            .map(|c| Connection {
                from: endpoint_text(&c.from),
                to: endpoint_text(&c.to),
                factor: c.factor,
                offset: c.offset,
                extrapolation_order: c.extrapolation_order,
                value_map: c
                    .value_map
                    .iter()
                    .map(|e| (e.from.text(), e.to.text()))
                    .collect(),
                half_step: c.half_step,
                source_integral: c.source_integral,
                ignore_units: c.ignore_units,
            })
            .collect();
        refuse_some_ranks(&components)?;
        Ok(System {
            components,
            connections,
            experiment: self.experiment.into_experiment()?,
        })
    }
}

/// `"rank"` (the MPI rank of a component under mpirun) is a partition: every component has one
/// or none has. Checked in one process too, so that a file is refused the same way anywhere.
fn refuse_some_ranks(components: &[Component]) -> std::result::Result<(), String> {
    let given = components.iter().filter(|c| c.rank.is_some()).count();
    match components.iter().find(|c| c.rank.is_none()) {
        Some(without) if given > 0 => Err(format!(
            "component \"{}\" has no \"rank\" while {given} {} one: give every component a \"rank\" (the MPI rank that steps it under mpirun), or none to split the system along its coupling order",
            without.name,
            if given == 1 { "other has" } else { "others have" }
        )),
        _ => Ok(()),
    }
}

impl ExperimentEntry {
    /// The settings as written; [`ExperimentSpec::build`] checks them and their combination.
    fn into_experiment(self) -> std::result::Result<Experiment, String> {
        let l = LoopSettings::default();
        let loops = self.algebraic_loops.map(|e| LoopSettings {
            solver: match e.solver {
                None => l.solver,
                Some(SolverEntry::Newton) => LoopSolver::Newton,
                Some(SolverEntry::NewtonFiniteDifferences) => LoopSolver::NewtonFiniteDifferences,
                Some(SolverEntry::FixedPoint) => LoopSolver::FixedPoint,
            },
            abs_tolerance: e.absolute_tolerance.unwrap_or(l.abs_tolerance),
            rel_tolerance: e.relative_tolerance.unwrap_or(l.rel_tolerance),
            max_iterations: e.max_iterations.unwrap_or(l.max_iterations),
        });
        let corrector = self.corrector.map(|c| {
            let base = crate::settings::implicit::ImplicitSettings::default();
            crate::settings::implicit::ImplicitSettings {
                max_iterations: c.max_iterations.unwrap_or(base.max_iterations),
                abs_tolerance: c.absolute_tolerance.unwrap_or(base.abs_tolerance),
                rel_tolerance: c.relative_tolerance.unwrap_or(base.rel_tolerance),
                reuse_jacobian: c.reuse_jacobian.unwrap_or(base.reuse_jacobian),
                jacobian: match c.jacobian {
                    None => base.jacobian,
                    Some(JacobianEntry::System) => JacobianMethod::SystemSteps,
                    Some(JacobianEntry::Components) => JacobianMethod::Components,
                },
                extension: match c.extension {
                    None | Some(ExtensionEntry::None) => base.extension,
                    Some(ExtensionEntry::Derivative) => Extension::Derivative,
                    Some(ExtensionEntry::Integral) => Extension::Integral,
                },
            }
        });
        let implicit = matches!(self.algorithm, Some(AlgorithmEntry::Implicit));
        ExperimentSpec {
            start: self.start_time,
            stop: self.stop_time,
            step: self.step_size,
            output_interval: self.output_interval,
            tolerance: self.tolerance,
            algorithm: self.algorithm.map(|a| match a {
                AlgorithmEntry::Jacobi => AlgorithmKind::Jacobi,
                AlgorithmEntry::GaussSeidel => AlgorithmKind::GaussSeidel,
                AlgorithmEntry::Implicit => AlgorithmKind::Implicit,
                AlgorithmEntry::Rim => AlgorithmKind::Rim,
                AlgorithmEntry::Constraint => AlgorithmKind::Constraint,
            }),
            extrapolation_order: self.extrapolation_order,
            parallel: self.parallel,
            loops,
            corrector,
            control: self.step_control.map(|c| c.into_control(implicit)),
            rim: self.rim.map(RimEntry::into_settings).transpose()?,
            constraints: self
                .constraints
                .map(ConstraintsEntry::into_coupling)
                .transpose()?,
            max_rows: None,
            divergence_limit: self.divergence_limit,
            labels: Labels::SYSTEM_FILE,
        }
        .build()
    }
}

impl StepControlEntry {
    /// The control; without an estimator, the implicit algorithm's default is ImSLocal (as
    /// with `--adaptive`), the others' ExSLocal.
    fn into_control(self, implicit: bool) -> crate::settings::control::StepControl {
        use crate::settings::control::{Estimator, StepControl};
        let d = StepControl::default();
        StepControl {
            estimator: match self.estimator {
                None if implicit => Estimator::ImSLocal,
                None => d.estimator,
                Some(EstimatorEntry::ExLocal) => Estimator::ExLocal,
                Some(EstimatorEntry::ExMilne) => Estimator::ExMilne,
                Some(EstimatorEntry::ExSLocal) => Estimator::ExSLocal,
                Some(EstimatorEntry::ImMilne) => Estimator::ImMilne,
                Some(EstimatorEntry::ImSLocal) => Estimator::ImSLocal,
            },
            step: crate::settings::control::StepSizeSettings {
                safety: self.safety_factor.unwrap_or(d.step.safety),
                r_min: self.r_min.unwrap_or(d.step.r_min),
                r_max: self.r_max.unwrap_or(d.step.r_max),
                h_min: d.step.h_min,
            },
            h_max: self.max_step_size.unwrap_or(d.h_max),
            rtol: self.relative_tolerance,
            atol_position: self.position_tolerance,
            atol_velocity: self.velocity_tolerance,
            rtol_coupling: self.coupling_relative_tolerance,
            atol_coupling: self.coupling_absolute_tolerance,
            variable_order: self.variable_order.unwrap_or(d.variable_order),
            max_order: self.max_order,
            positions: self.positions,
            velocities: self.velocities,
            trace: false,
        }
    }
}

/// `parameters`: an object of name -> value, kept in file order (duplicates are errors), each
/// value turned into the text that `parse_value` reads.
#[derive(Default)]
struct Parameters(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Parameters {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct ParametersVisitor;
        impl<'de> Visitor<'de> for ParametersVisitor {
            type Value = Parameters;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of variable name -> value")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Parameters, A::Error> {
                let mut values: Vec<(String, String)> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    let ParameterValue(value) = map.next_value()?;
                    if values.iter().any(|(n, _)| *n == name) {
                        return Err(de::Error::custom(format!(
                            "parameter \"{name}\" is given twice"
                        )));
                    }
                    values.push((name, value));
                }
                Ok(Parameters(values))
            }
        }
        deserializer.deserialize_map(ParametersVisitor)
    }
}

/// One parameter value as text: numbers as written, booleans `true`/`false`, strings as they
/// are, arrays of numbers or booleans space-separated.
struct ParameterValue(String);

const PARAMETER_EXPECTED: &str =
    "a number, a boolean, a string, or an array of numbers or booleans";

struct ScalarVisitor;

impl Visitor<'_> for ScalarVisitor {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or a boolean")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<String, E> {
        Ok(float_text(v))
    }
}

/// A float as text that reads back exactly; integral values without a fraction, so that `1e3`
/// also suits an integer variable.
fn float_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:?}")
    }
}

struct ScalarText(String);

impl<'de> Deserialize<'de> for ScalarText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor).map(ScalarText)
    }
}

impl<'de> Deserialize<'de> for ParameterValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct ValueVisitor;
        impl<'de> Visitor<'de> for ValueVisitor {
            type Value = String;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(PARAMETER_EXPECTED)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<String, E> {
                ScalarVisitor.visit_bool(v)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<String, E> {
                ScalarVisitor.visit_i64(v)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<String, E> {
                ScalarVisitor.visit_u64(v)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<String, E> {
                ScalarVisitor.visit_f64(v)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<String, E> {
                Ok(v.to_string())
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<String, A::Error> {
                let mut elements = Vec::new();
                while let Some(ScalarText(e)) = seq.next_element()? {
                    elements.push(e);
                }
                Ok(elements.join(" "))
            }
        }
        deserializer
            .deserialize_any(ValueVisitor)
            .map(ParameterValue)
    }
}
