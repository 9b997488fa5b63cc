//! One `.ssd` file -> a flat [`System`]: systems, components, connectors, connections traced
//! through system boundaries and signal dictionaries, parameter bindings, units, experiment.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::params::{self, Kind, Parameter, Transformation};
use super::units::{self, Conversion, SspUnit};
use super::xml::{self, Element};
use super::{Imported, SspPackage};
use crate::fmu::description::ModelDescription;
use crate::settings::{AlgorithmKind, ExperimentSpec, Labels, LoopSolver};
use crate::system::{Component, Connection, Endpoint, System};
use crate::{Error, Result};

/// Separator of flattened component names (`outer/inner/component`).
const SEPARATOR: char = '/';

/// The most warnings kept, and the longest (in characters): a hostile file can have a warning
/// per element, each quoting a long name from elsewhere in the file.
const MAX_WARNINGS: usize = 1000;
const MAX_WARNING: usize = 1000;

/// The deepest nesting of systems read: the reader recurses once per level, and real
/// hierarchies are a few levels deep.
const MAX_SYSTEM_DEPTH: usize = 100;

/// Import the `.ssd` at `relative` (a '/'-path inside the package).
pub(super) fn import(package: &SspPackage, relative: &str) -> Result<Imported> {
    let file = package.display(Path::new(relative));
    let text = read_text(&package.root.join(relative), &file)?;
    import_text(package, relative, &text)
}

/// Import `text` as the `.ssd` at `relative` (a '/'-path inside the package).
pub(super) fn import_text(package: &SspPackage, relative: &str, text: &str) -> Result<Imported> {
    let relative_path = PathBuf::from(relative);
    let file = package.display(&relative_path);
    let folder = relative_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let root = parse_xml(text, &file)?;
    let importer = Importer {
        package,
        file,
        folder,
        warnings: Vec::new(),
        units: HashMap::new(),
        scopes: Vec::new(),
        nodes: Vec::new(),
        incoming: Vec::new(),
        edges: Vec::new(),
        components: Vec::new(),
        component_scopes: Vec::new(),
        component_lines: Vec::new(),
        values: HashMap::new(),
        value_order: Vec::new(),
        seq: 0,
        descriptions: HashMap::new(),
    };
    importer.document(&root)
}

/// Read and parse an XML file; errors name the file and line.
fn read_xml(disk: &Path, shown: &Path) -> Result<Element> {
    parse_xml(&read_text(disk, shown)?, shown)
}

/// The UTF-8 text of a file; errors name it as `shown`.
fn read_text(disk: &Path, shown: &Path) -> Result<String> {
    let bytes = std::fs::read(disk).map_err(|e| Error::io(shown, e))?;
    String::from_utf8(bytes).map_err(|e| {
        Error::Usage(format!(
            "{}: the file is not UTF-8 text (invalid byte at offset {}); save it as UTF-8",
            shown.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Parse XML text; errors name the file `shown` and the line.
fn parse_xml(text: &str, shown: &Path) -> Result<Element> {
    xml::parse_tree(text)
        .map_err(|(line, message)| Error::Usage(format!("{}:{line}: {message}", shown.display())))
}

/// What a connection end does with values, as far as its kind tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Source,
    Sink,
    Unknown,
}

/// The kind of a connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConnectorKind {
    Input,
    Output,
    Parameter,
    CalculatedParameter,
    Other,
}

enum ScopeKind {
    System,
    Component(usize),
    Dictionary,
}

/// A system, component, signal dictionary reference or dictionary: its connectors and (for a
/// system) its elements.
struct Scope {
    kind: ScopeKind,
    /// Flattened name below the root system ("" for the root).
    path: String,
    /// `<ssd:System name="x">` for messages.
    show: String,
    connectors: HashMap<String, usize>,
    connector_names: Vec<String>,
    elements: HashMap<String, usize>,
    depth: usize,
}

/// A connector (or signal dictionary entry): a node of the connection graph.
struct Node {
    scope: usize,
    name: String,
    kind: ConnectorKind,
    ty: Option<Kind>,
    unit: Option<String>,
    line: usize,
    /// A parameter value bound to a system connector.
    value: Option<Assigned>,
}

/// One connection, start -> end, after direction checks.
struct Edge {
    from: usize,
    to: usize,
    transformation: Option<Transformation>,
    suppress_unit_conversion: bool,
    line: usize,
    extrapolation_order: Option<u8>,
    /// `<cosimo:Connection halfStep="true">`: extended implicit coupling.
    half_step: bool,
    /// `<cosimo:Connection sourceIntegral="...">`: the source's running-integral output.
    source_integral: Option<String>,
}

/// A parameter value with its precedence.
#[derive(Clone)]
struct Assigned {
    value: String,
    /// Depth of the element whose binding set it (smaller wins).
    depth: usize,
    /// Processing order (later wins at equal depth).
    seq: usize,
    /// file:line of the value, for messages.
    origin: String,
}

struct Importer<'p> {
    package: &'p SspPackage,
    /// The .ssd as named in messages.
    file: PathBuf,
    /// The .ssd's folder inside the package.
    folder: PathBuf,
    warnings: Vec<String>,
    units: HashMap<String, SspUnit>,
    scopes: Vec<Scope>,
    nodes: Vec<Node>,
    incoming: Vec<Option<usize>>,
    edges: Vec<Edge>,
    components: Vec<Component>,
    /// The scope of each component.
    component_scopes: Vec<usize>,
    /// The line of each component's `<ssd:Component>`, for messages.
    component_lines: Vec<usize>,
    /// (component, variable) -> value.
    values: HashMap<(usize, String), Assigned>,
    value_order: Vec<(usize, String)>,
    seq: usize,
    /// Model descriptions read for unit checks, by FMU path (None: unreadable).
    descriptions: HashMap<PathBuf, Option<Arc<ModelDescription>>>,
}

/// The target of a parameter name in a system.
enum Target {
    Variable(usize, String),
    Connector(usize),
}

impl Importer<'_> {
    /// An error at `line` of the .ssd.
    fn fail(&self, line: usize, message: impl std::fmt::Display) -> Error {
        Error::Usage(format!("{}:{line}: {message}", self.file.display()))
    }

    fn warn(&mut self, line: usize, message: impl std::fmt::Display) {
        if self.warnings.len() > MAX_WARNINGS {
            return;
        }
        let mut text = if self.warnings.len() == MAX_WARNINGS {
            format!(
                "{}:{line}: further warnings are not shown after {MAX_WARNINGS}; fix these first",
                self.file.display()
            )
        } else {
            format!("{}:{line}: {message}", self.file.display())
        };
        if let Some((cut, _)) = text.char_indices().nth(MAX_WARNING) {
            text.truncate(cut);
            text.push_str("...");
        }
        log::warn!("{text}");
        self.warnings.push(text);
    }

    /// Whether warnings are no longer kept (loops that would make many stop formatting them).
    fn quiet(&self) -> bool {
        self.warnings.len() > MAX_WARNINGS && !log::log_enabled!(log::Level::Debug)
    }

    /// A child the importer does not read: vendor extensions, geometry and annotations are
    /// noted at debug level, other SSP elements are warnings.
    fn ignore(&mut self, parent: &Element, child: &Element) {
        const GRAPHICAL: [&str; 7] = [
            "ElementGeometry",
            "ConnectorGeometry",
            "ConnectionGeometry",
            "SystemGeometry",
            "GraphicalElements",
            "Annotations",
            "Note",
        ];
        if self.quiet() {
            return;
        }
        if child.is("Annotations") {
            // This list only: each of the parent's lists comes here once.
            self.annotation_list(parent, child, "", &mut Vec::new());
        } else if !child.is_ssp() || GRAPHICAL.contains(&child.name.as_str()) {
            log::debug!(
                "{}:{}: {} in {} is ignored",
                self.file.display(),
                child.line,
                child.show(),
                parent.show()
            );
        } else {
            self.warn(
                child.line,
                format!(
                    "{} in {} is not supported by cosimo and is ignored",
                    child.show(),
                    parent.show()
                ),
            );
        }
    }

    /// The cosimo annotations of type `kind` among `element`'s `ssc:Annotations`; other
    /// annotations are noted at debug level.
    fn annotations<'e>(&mut self, element: &'e Element, kind: &str) -> Vec<&'e Element> {
        let mut found = Vec::new();
        for list in element.children_named("Annotations") {
            self.annotation_list(element, list, kind, &mut found);
        }
        found
    }

    /// The annotations of type `kind` in one `ssc:Annotations` list of `element`, into `found`.
    fn annotation_list<'e>(
        &mut self,
        element: &Element,
        list: &'e Element,
        kind: &str,
        found: &mut Vec<&'e Element>,
    ) {
        for a in &list.children {
            let ty = a.attr("type").unwrap_or("");
            if a.is("Annotation") && !kind.is_empty() && ty == kind {
                found.extend(a.children.iter());
            } else if self.quiet() {
                continue;
            } else if a.is("Annotation") && ty.starts_with("org.cosimo.") {
                self.warn(
                    a.line,
                    format!(
                        "annotation type \"{ty}\" is not read in {} (cosimo reads \
                         org.cosimo.experiment in ssd:DefaultExperiment, org.cosimo.component \
                         in ssd:Component, org.cosimo.connection in ssd:Connection); it is \
                         ignored",
                        element.show()
                    ),
                );
            } else {
                log::debug!(
                    "{}:{}: annotation type=\"{ty}\" in {} is ignored (not cosimo's)",
                    self.file.display(),
                    a.line,
                    element.show()
                );
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // The document

    fn document(mut self, root: &Element) -> Result<Imported> {
        if !root.is("SystemStructureDescription") {
            return Err(self.fail(
                root.line,
                format!(
                    "the root element is {}, not <ssd:SystemStructureDescription>; is this an \
                     SSP system structure file?",
                    root.show()
                ),
            ));
        }
        match root.attr("version") {
            Some("1.0") | Some("2.0") | None => {}
            Some(v) if v.starts_with("1.") || v.starts_with("2.") => {}
            Some(v) => self.warn(
                root.line,
                format!(
                    "SSP version \"{v}\" is not one cosimo knows (1.0, 2.0); reading it as SSP \
                     1.0"
                ),
            ),
        }
        let name = root.attr("name").unwrap_or_default().to_string();
        let description = root.attr("description").map(str::to_string);
        // Units first: connectors refer to them.
        for u in root.children_named("Units") {
            units::read_units(u, &mut self.units).map_err(|(line, m)| self.fail(line, m))?;
        }
        let Some(system) = root.child("System") else {
            return Err(self.fail(
                root.line,
                "<ssd:SystemStructureDescription> has no <ssd:System>; an SSD describes one \
                 root system",
            ));
        };
        let mut experiment = ExperimentSpec {
            labels: Labels::SSP,
            ..ExperimentSpec::default()
        };
        for child in &root.children {
            match child.name.as_str() {
                "System" | "Units" if child.is_ssp() => {}
                "Enumerations" if child.is_ssp() => {}
                "DefaultExperiment" if child.is_ssp() => {
                    for (key, slot) in [
                        ("startTime", &mut experiment.start),
                        ("stopTime", &mut experiment.stop),
                    ] {
                        if let Some(text) = child.attr(key) {
                            *slot = Some(number(text).ok_or_else(|| {
                                self.fail(
                                    child.line,
                                    format!(
                                        "<ssd:DefaultExperiment>: {key}=\"{text}\" is not a \
                                         number"
                                    ),
                                )
                            })?);
                        }
                    }
                    for e in self.annotations(child, "org.cosimo.experiment") {
                        self.cosimo_experiment(e, &mut experiment)?;
                    }
                }
                "Annotations" if child.is_ssp() => {
                    for e in self.annotations(root, "org.cosimo.experiment") {
                        self.cosimo_experiment(e, &mut experiment)?;
                    }
                }
                _ => self.ignore(root, child),
            }
        }
        let experiment = experiment
            .build()
            .map_err(|m| self.fail(root.line, format!("experiment: {m}")))?;

        let root_scope = self.system(system, None, 0, &HashMap::new())?;
        let connections = self.trace(root_scope)?;

        let mut components = std::mem::take(&mut self.components);
        for key in std::mem::take(&mut self.value_order) {
            if let Some(a) = self.values.get(&key) {
                components[key.0]
                    .start_values
                    .push((key.1, a.value.clone()));
            }
        }
        if components.is_empty() {
            return Err(self.fail(
                system.line,
                "the system has no components; an SSD for cosimo needs at least one \
                 <ssd:Component> referencing an FMU",
            ));
        }
        // The ranks are a partition: every component has one or none has (as in JSON).
        if let Some(with) = components.iter().position(|c| c.rank.is_some()) {
            if let Some(without) = components.iter().position(|c| c.rank.is_none()) {
                return Err(self.fail(
                    self.component_lines[without],
                    format!(
                        "component \"{}\" has no rank while \"{}\" (line {}) has one: give \
                         every component a rank (<cosimo:Component rank=\"N\"/> in an \
                         org.cosimo.component annotation, the MPI rank that steps it under \
                         mpirun), or none to split the system along its coupling order",
                        components[without].name, components[with].name, self.component_lines[with]
                    ),
                ));
            }
        }
        Ok(Imported {
            system: System {
                components,
                connections,
                experiment,
            },
            warnings: self.warnings,
            name,
            description,
        })
    }

    /// `<cosimo:Constraints method="index1" order="3">` with `<cosimo:Point name position
    /// velocity acceleration/>`, `<cosimo:Equation>` holding `<cosimo:Term point coefficient/>`,
    /// and `<cosimo:Force input coefficients="1 0"/>` (one coefficient per equation): the JSON
    /// file's `constraints`.
    fn cosimo_constraints(
        &self,
        e: &Element,
    ) -> Result<crate::settings::constraint::ConstraintCoupling> {
        use crate::settings::constraint::{
            ConstraintCoupling, DrivenForce, InterfacePoint, MethodSpec,
        };
        let fail = |line: usize, m: String| self.fail(line, format!("<cosimo:Constraints>: {m}"));
        let number = |el: &Element, key: &str, default: f64| -> Result<f64> {
            match el.attr(key) {
                None => Ok(default),
                Some(t) => t
                    .trim()
                    .parse()
                    .map_err(|_| fail(el.line, format!("{key}=\"{t}\" is not a number"))),
            }
        };
        // An attribute or element nobody reads would be a setting accepted and ignored.
        let known = |el: &Element, attributes: &[&str], children: &[&str]| -> Result<()> {
            if let Some((key, _)) = el.attrs.iter().find(|(k, _)| {
                !attributes.contains(&k.as_str()) && !k.starts_with("xmlns") && !k.contains(':')
            }) {
                return Err(fail(
                    el.line,
                    format!(
                        "<cosimo:{}> has no attribute \"{key}\"; it takes {}",
                        el.name,
                        attributes.join(", ")
                    ),
                ));
            }
            if let Some(child) = el
                .children
                .iter()
                .find(|c| !children.contains(&c.name.as_str()))
            {
                return Err(fail(
                    child.line,
                    format!(
                        "<cosimo:{}> cannot hold <{}>; it holds {}",
                        el.name,
                        child.name,
                        if children.is_empty() {
                            "nothing".to_string()
                        } else {
                            children
                                .iter()
                                .map(|c| format!("<cosimo:{c}>"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    ),
                ));
            }
            Ok(())
        };
        known(
            e,
            &[
                "method",
                "order",
                "newtonIterations",
                "alpha",
                "beta",
                "corrector",
            ],
            &["Point", "Equation", "Force"],
        )?;
        let integer = |key: &str| -> Result<Option<u32>> {
            e.attr(key)
                .map(|t| {
                    t.trim().parse::<u32>().map_err(|_| {
                        fail(e.line, format!("{key}=\"{t}\" is not a whole number >= 0"))
                    })
                })
                .transpose()
        };
        let real = |key: &str| -> Result<Option<f64>> {
            e.attr(key).map(|_| number(e, key, 0.0)).transpose()
        };
        let corrector = match e.attr("corrector").map(str::trim) {
            None => None,
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(other) => {
                return Err(fail(
                    e.line,
                    format!("corrector=\"{other}\": expected true or false"),
                ))
            }
        };
        let order = integer("order")?.map(|k| u8::try_from(k).unwrap_or(u8::MAX));
        let method = MethodSpec {
            method: e.attr("method").map(str::to_string),
            order,
            newton_iterations: integer("newtonIterations")?,
            alpha: real("alpha")?,
            beta: real("beta")?,
            corrector,
        }
        .build(&|setting| setting.to_string())
        .map_err(|m| fail(e.line, m))?;
        let mut names = Vec::new();
        let mut points = Vec::new();
        for p in e.children.iter().filter(|c| c.name == "Point") {
            known(p, &["name", "position", "velocity", "acceleration"], &[])?;
            let get = |key: &str| {
                p.attr(key)
                    .map(str::to_string)
                    .ok_or_else(|| fail(p.line, format!("<cosimo:Point> needs \"{key}\"")))
            };
            names.push(get("name")?);
            points.push(InterfacePoint {
                position: get("position")?,
                velocity: get("velocity")?,
                acceleration: get("acceleration")?,
            });
        }
        let mut equations = Vec::new();
        for q in e.children.iter().filter(|c| c.name == "Equation") {
            known(q, &[], &["Term"])?;
            let mut terms = Vec::new();
            for t in q.children.iter().filter(|c| c.name == "Term") {
                known(t, &["point", "coefficient"], &[])?;
                let name = t.attr("point").unwrap_or_default();
                let i = names.iter().position(|n| n == name).ok_or_else(|| {
                    fail(
                        t.line,
                        format!("<cosimo:Term point=\"{name}\"> names no <cosimo:Point>"),
                    )
                })?;
                terms.push((number(t, "coefficient", 1.0)?, i));
            }
            equations.push(terms);
        }
        let mut forces = Vec::new();
        for f in e.children.iter().filter(|c| c.name == "Force") {
            known(f, &["input", "coefficients"], &[])?;
            let input = f
                .attr("input")
                .map(str::to_string)
                .ok_or_else(|| fail(f.line, "<cosimo:Force> needs \"input\"".into()))?;
            let coefficients: Vec<f64> = f
                .attr("coefficients")
                .unwrap_or_default()
                .split_whitespace()
                .map(|c| {
                    c.parse()
                        .map_err(|_| fail(f.line, format!("coefficient \"{c}\" is not a number")))
                })
                .collect::<Result<_>>()?;
            if coefficients.len() != equations.len() {
                return Err(fail(
                    f.line,
                    format!(
                        "{input} has {} coefficients for {} equations",
                        coefficients.len(),
                        equations.len()
                    ),
                ));
            }
            let terms = coefficients
                .into_iter()
                .enumerate()
                .filter(|(_, c)| *c != 0.0)
                .map(|(j, c)| (c, j))
                .collect();
            forces.push(DrivenForce { input, terms });
        }
        Ok(ConstraintCoupling {
            points,
            equations,
            forces,
            method,
        })
    }

    /// `<cosimo:StepControl .../>` inside `<cosimo:Experiment>`: the attributes of the JSON
    /// file's `stepControl` (positions / velocities space-separated); `implicit` when the
    /// experiment's algorithm is.
    fn cosimo_step_control(
        &self,
        e: &Element,
        implicit: bool,
    ) -> Result<crate::settings::control::StepControl> {
        use crate::settings::control::{Estimator, StepControl};
        let mut c = StepControl::default();
        // Without an estimator, the algorithm's default (as with --adaptive).
        if implicit {
            c.estimator = Estimator::ImSLocal;
        }
        for (key, text) in &e.attrs {
            let at = |m: &str| {
                self.fail(
                    e.line,
                    format!("<cosimo:StepControl>: {key}=\"{text}\": {m}"),
                )
            };
            let positive = || {
                number(text)
                    .filter(|v| *v > 0.0)
                    .ok_or_else(|| at("expected a positive number"))
            };
            match key.as_str() {
                "estimator" => {
                    c.estimator = match text.trim() {
                        "ExLocal" => Estimator::ExLocal,
                        "ExMilne" => Estimator::ExMilne,
                        "ExSLocal" => Estimator::ExSLocal,
                        "ImMilne" => Estimator::ImMilne,
                        "ImSLocal" => Estimator::ImSLocal,
                        _ => return Err(at("expected ExLocal, ExMilne, ExSLocal, ImMilne or ImSLocal")),
                    }
                }
                "safetyFactor" => c.step.safety = positive()?,
                "rMin" => c.step.r_min = positive()?,
                "rMax" => c.step.r_max = positive()?,
                "maxStepSize" => c.h_max = positive()?,
                "relativeTolerance" => c.rtol = Some(positive()?),
                "positionTolerance" => c.atol_position = Some(positive()?),
                "velocityTolerance" => c.atol_velocity = Some(positive()?),
                "couplingRelativeTolerance" => c.rtol_coupling = Some(positive()?),
                "couplingAbsoluteTolerance" => c.atol_coupling = Some(positive()?),
                "variableOrder" => {
                    c.variable_order = match text.trim() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(at("expected true or false")),
                    }
                }
                "maxOrder" => {
                    c.max_order = Some(text.trim().parse().ok().filter(|o| *o <= 3).ok_or_else(|| at("expected 0 to 3"))?)
                }
                "positions" => c.positions = text.split_whitespace().map(str::to_string).collect(),
                "velocities" => c.velocities = text.split_whitespace().map(str::to_string).collect(),
                _ if key.starts_with("xmlns") || key.contains(':') => {}
                _ => return Err(at("unknown attribute; see the attributes of stepControl in schemas/system.schema.json")),
            }
        }
        Ok(c)
    }

    /// `<cosimo:Experiment .../>`.
    fn cosimo_experiment(&self, e: &Element, x: &mut ExperimentSpec) -> Result<()> {
        if e.name != "Experiment" {
            return Err(self.fail(
                e.line,
                format!(
                    "<{}> in the org.cosimo.experiment annotation: expected <cosimo:Experiment>",
                    e.name
                ),
            ));
        }
        // Attributes may come in any order: fill the spec, `build` checks the combination.
        fn loops(x: &mut ExperimentSpec) -> &mut crate::settings::LoopSettings {
            x.loops.get_or_insert_with(Default::default)
        }
        fn corrector(x: &mut ExperimentSpec) -> &mut crate::settings::implicit::ImplicitSettings {
            x.corrector.get_or_insert_with(Default::default)
        }
        for (key, text) in &e.attrs {
            let at = |m: &str| {
                self.fail(
                    e.line,
                    format!("<cosimo:Experiment>: {key}=\"{text}\": {m}"),
                )
            };
            let positive = || {
                number(text)
                    .filter(|v| *v > 0.0)
                    .ok_or_else(|| at("expected a positive number"))
            };
            match key.as_str() {
                "stepSize" => x.step = Some(positive()?),
                "outputInterval" => x.output_interval = Some(positive()?),
                "tolerance" => x.tolerance = Some(positive()?),
                "divergenceLimit" => x.divergence_limit = Some(positive()?),
                "startTime" => x.start = Some(number(text).ok_or_else(|| at("expected a number"))?),
                "stopTime" => x.stop = Some(number(text).ok_or_else(|| at("expected a number"))?),
                "algorithm" => {
                    x.algorithm = Some(match text.trim() {
                        "jacobi" => AlgorithmKind::Jacobi,
                        "gauss-seidel" => AlgorithmKind::GaussSeidel,
                        "implicit" => AlgorithmKind::Implicit,
                        "constraint" => AlgorithmKind::Constraint,
                        _ => {
                            return Err(at("expected jacobi, gauss-seidel, implicit or constraint"))
                        }
                    })
                }
                "extrapolationOrder" => {
                    x.extrapolation_order = Some(
                        text.trim()
                            .parse()
                            .ok()
                            .filter(|o| *o <= 3)
                            .ok_or_else(|| at("expected 0 to 3"))?,
                    )
                }
                "parallel" => {
                    x.parallel = Some(match text.trim() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(at("expected true or false")),
                    })
                }
                "loopSolver" => {
                    loops(x).solver = match text.trim() {
                        "newton" => LoopSolver::Newton,
                        "newton-finite-differences" => LoopSolver::NewtonFiniteDifferences,
                        "fixed-point" => LoopSolver::FixedPoint,
                        _ => {
                            return Err(at(
                                "expected newton, newton-finite-differences or fixed-point",
                            ))
                        }
                    }
                }
                "loopAbsoluteTolerance" => loops(x).abs_tolerance = positive()?,
                "loopRelativeTolerance" => loops(x).rel_tolerance = positive()?,
                "loopMaxIterations" => {
                    loops(x).max_iterations = text
                        .trim()
                        .parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| at("expected a positive integer"))?
                }
                "correctorMaxIterations" => {
                    corrector(x).max_iterations = text
                        .trim()
                        .parse()
                        .ok()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| at("expected a positive integer"))?
                }
                "correctorAbsoluteTolerance" => corrector(x).abs_tolerance = positive()?,
                "correctorRelativeTolerance" => corrector(x).rel_tolerance = positive()?,
                "reuseJacobian" => {
                    corrector(x).reuse_jacobian = match text.trim() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(at("expected true or false")),
                    }
                }
                "correctorJacobian" => {
                    corrector(x).jacobian = match text.trim() {
                        "system" => crate::settings::implicit::JacobianMethod::SystemSteps,
                        "components" => crate::settings::implicit::JacobianMethod::Components,
                        _ => return Err(at("expected system or components")),
                    }
                }
                "correctorExtension" => {
                    corrector(x).extension = match text.trim() {
                        "none" => crate::settings::implicit::Extension::None,
                        "derivative" => crate::settings::implicit::Extension::Derivative,
                        "integral" => crate::settings::implicit::Extension::Integral,
                        _ => return Err(at("expected none, derivative or integral")),
                    }
                }
                _ if key.starts_with("xmlns") || key.contains(':') => {}
                _ => {
                    return Err(at(
                        "unknown attribute; cosimo:Experiment takes stepSize, outputInterval, \
                         algorithm, extrapolationOrder, parallel, tolerance, startTime, \
                         stopTime, loopSolver, loopAbsoluteTolerance, loopRelativeTolerance, \
                         loopMaxIterations, correctorMaxIterations, correctorAbsoluteTolerance, \
                         correctorRelativeTolerance, reuseJacobian, correctorJacobian, \
                         correctorExtension, divergenceLimit (and a <cosimo:StepControl> \
                         child)",
                    ))
                }
            }
        }
        for child in &e.children {
            if child.name == "StepControl" {
                let implicit = x.algorithm == Some(AlgorithmKind::Implicit);
                x.control = Some(self.cosimo_step_control(child, implicit)?);
            } else if child.name == "Constraints" {
                x.constraints = Some(self.cosimo_constraints(child)?);
            } else {
                return Err(self.fail(
                    child.line,
                    format!(
                        "<cosimo:Experiment> cannot hold <{}>; it holds <cosimo:StepControl> and <cosimo:Constraints>",
                        child.name
                    ),
                ));
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Systems and their elements

    fn new_scope(&mut self, kind: ScopeKind, path: String, show: String, depth: usize) -> usize {
        self.scopes.push(Scope {
            kind,
            path,
            show,
            connectors: HashMap::new(),
            connector_names: Vec::new(),
            elements: HashMap::new(),
            depth,
        });
        self.scopes.len() - 1
    }

    fn new_node(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.incoming.push(None);
        self.nodes.len() - 1
    }

    /// An element's name, checked: not empty, no '.' or '/'.
    fn element_name<'e>(&self, e: &'e Element) -> Result<&'e str> {
        let name = e.attr("name").unwrap_or("");
        if name.is_empty() {
            return Err(self.fail(
                e.line,
                format!("{} has no name; give it name=\"...\"", e.show()),
            ));
        }
        if name.contains(['.', SEPARATOR]) {
            return Err(self.fail(
                e.line,
                format!(
                    "{}: cosimo names components component.variable and nested ones \
                     outer/inner/component, so element names may not contain '.' or '/'; \
                     rename it, e.g. \"{}\"",
                    e.show(),
                    name.replace(['.', SEPARATOR], "_")
                ),
            ));
        }
        Ok(name)
    }

    /// Read `<ssd:Connectors>` of `element` into `scope`.
    fn connectors(&mut self, element: &Element, scope: usize) -> Result<()> {
        let Some(list) = element.child("Connectors") else {
            return Ok(());
        };
        for c in &list.children {
            if !c.is("Connector") {
                self.ignore(list, c);
                continue;
            }
            let Some(name) = c.attr("name").filter(|n| !n.is_empty()) else {
                return Err(self.fail(c.line, "<ssd:Connector> has no name"));
            };
            let kind = match c.attr("kind").unwrap_or("") {
                "input" => ConnectorKind::Input,
                "output" => ConnectorKind::Output,
                "parameter" | "structuralParameter" => ConnectorKind::Parameter,
                "calculatedParameter" => ConnectorKind::CalculatedParameter,
                _ => ConnectorKind::Other,
            };
            let mut ty = None;
            let mut unit = None;
            for t in &c.children {
                if let Some(k) = t.is_ssp().then(|| Kind::of(&t.name)).flatten() {
                    ty = Some(k);
                    unit = t.attr("unit").map(str::to_string);
                } else if !t.is("ConnectorGeometry") && !t.is("Annotations") {
                    self.ignore(c, t);
                }
            }
            self.check_unit(unit.as_deref(), c.line);
            if self.scopes[scope].connectors.contains_key(name) {
                return Err(self.fail(
                    c.line,
                    format!(
                        "{} of {} is declared twice; connector names must be unique",
                        c.show(),
                        self.scopes[scope].show
                    ),
                ));
            }
            let node = self.new_node(Node {
                scope,
                name: name.to_string(),
                kind,
                ty,
                unit,
                line: c.line,
                value: None,
            });
            let s = &mut self.scopes[scope];
            s.connectors.insert(name.to_string(), node);
            s.connector_names.push(name.to_string());
        }
        Ok(())
    }

    /// Warn about a unit that is not defined in `ssd:Units`.
    fn check_unit(&mut self, unit: Option<&str>, line: usize) {
        if let Some(u) = unit {
            if !self.units.contains_key(u) {
                self.warn(
                    line,
                    format!(
                        "unit \"{u}\" is not defined in <ssd:Units>; values in it are only \
                         passed to connectors of the same unit name unchanged"
                    ),
                );
            }
        }
    }

    /// A system: connectors, dictionaries, elements, connections, parameter bindings.
    fn system(
        &mut self,
        e: &Element,
        parent: Option<&str>,
        depth: usize,
        outer_dictionaries: &HashMap<String, usize>,
    ) -> Result<usize> {
        if depth > MAX_SYSTEM_DEPTH {
            return Err(self.fail(
                e.line,
                format!(
                    "{}: systems are nested deeper than {MAX_SYSTEM_DEPTH} levels; cosimo reads \
                     at most {MAX_SYSTEM_DEPTH}: flatten the hierarchy",
                    e.show()
                ),
            ));
        }
        let name = self.element_name(e)?.to_string();
        let path = match parent {
            None => String::new(),
            Some("") => name.clone(),
            Some(p) => format!("{p}{SEPARATOR}{name}"),
        };
        let scope = self.new_scope(ScopeKind::System, path.clone(), e.show(), depth);
        self.connectors(e, scope)?;
        let mut dictionaries = outer_dictionaries.clone();
        if let Some(list) = e.child("SignalDictionaries") {
            for d in &list.children {
                if !d.is("SignalDictionary") {
                    self.ignore(list, d);
                    continue;
                }
                let dname = self.element_name(d)?.to_string();
                let id = self.dictionary(d, &path, depth)?;
                dictionaries.insert(dname, id);
            }
        }
        if let Some(list) = e.child("Elements") {
            for child in &list.children {
                if child.is("Component") {
                    let id = self.component(child, &path, depth + 1)?;
                    self.add_element(scope, child, id)?;
                } else if child.is("System") {
                    let id = self.system(child, Some(&path), depth + 1, &dictionaries)?;
                    self.add_element(scope, child, id)?;
                } else if child.is("SignalDictionaryReference") {
                    let id = self.dictionary_reference(child, &path, depth + 1, &dictionaries)?;
                    self.add_element(scope, child, id)?;
                } else {
                    self.ignore(list, child);
                }
            }
        }
        if let Some(list) = e.child("Connections") {
            for c in &list.children {
                if c.is("Connection") {
                    self.connection(c, scope)?;
                } else {
                    self.ignore(list, c);
                }
            }
        }
        if let Some(list) = e.child("ParameterBindings") {
            self.bindings(list, scope)?;
        }
        for child in &e.children {
            let known = [
                "Connectors",
                "SignalDictionaries",
                "Elements",
                "Connections",
                "ParameterBindings",
            ];
            if !(child.is_ssp() && known.contains(&child.name.as_str())) {
                self.ignore(e, child);
            }
        }
        Ok(scope)
    }

    fn add_element(&mut self, system: usize, e: &Element, id: usize) -> Result<()> {
        let name = e.attr("name").unwrap_or_default().to_string();
        if self.scopes[system]
            .elements
            .insert(name.clone(), id)
            .is_some()
        {
            return Err(self.fail(
                e.line,
                format!(
                    "{}: another element of {} has the name \"{name}\"; element names in a \
                     system must be unique",
                    e.show(),
                    self.scopes[system].show
                ),
            ));
        }
        Ok(())
    }

    /// An `ssd:Component` referencing an FMU.
    fn component(&mut self, e: &Element, parent: &str, depth: usize) -> Result<usize> {
        let name = self.element_name(e)?.to_string();
        let flat = if parent.is_empty() {
            name.clone()
        } else {
            format!("{parent}{SEPARATOR}{name}")
        };
        let ty = e.attr("type").unwrap_or("application/x-fmu-sharedlibrary");
        if ty != "application/x-fmu-sharedlibrary" {
            return Err(self.fail(
                e.line,
                format!(
                    "{}: component type \"{ty}\" is not supported; cosimo runs FMUs \
                     (type=\"application/x-fmu-sharedlibrary\"); import a nested .ssd as an \
                     <ssd:System> instead",
                    e.show()
                ),
            ));
        }
        match e.attr("implementation").unwrap_or("any") {
            "any" | "CoSimulation" => {}
            other => {
                return Err(self.fail(
                    e.line,
                    format!(
                        "{}: implementation=\"{other}\" is not supported; cosimo runs FMUs as \
                         co-simulation (implementation=\"CoSimulation\" or \"any\")",
                        e.show()
                    ),
                ))
            }
        }
        let Some(source) = e.attr("source") else {
            return Err(self.fail(
                e.line,
                format!(
                    "{} has no source; give the FMU, e.g. source=\"resources/{name}.fmu\"",
                    e.show()
                ),
            ));
        };
        let located = self
            .package
            .locate(&self.folder, source)
            .map_err(|m| self.fail(e.line, format!("{}: source {m}", e.show())))?;
        if !located.disk.exists() {
            return Err(self.fail(
                e.line,
                format!(
                    "{}: the FMU \"{source}\" does not exist (looked for {}); put it there or \
                     correct source=\"...\" (relative paths are relative to the .ssd file's \
                     folder)",
                    e.show(),
                    located.shown.display()
                ),
            ));
        }
        let index = self.components.len();
        let mut component = Component {
            name: flat.clone(),
            fmu: located.disk,
            start_values: Vec::new(),
            sub_steps: 1,
            isolate: None,
            call_timeout: None,
            worker_group: None,
            interface: None,
            rank: None,
        };
        for a in self.annotations(e, "org.cosimo.component") {
            for (key, text) in &a.attrs {
                match key.as_str() {
                    "subSteps" if a.name == "Component" => {
                        component.sub_steps = text
                            .trim()
                            .parse()
                            .ok()
                            .filter(|n| *n >= 1)
                            .ok_or_else(|| {
                                self.fail(
                                    a.line,
                                    format!(
                                        "<cosimo:Component>: subSteps=\"{text}\" is not a \
                                         positive integer"
                                    ),
                                )
                            })?
                    }
                    "isolate" if a.name == "Component" => {
                        component.isolate = Some(match text.trim() {
                            "true" | "1" => true,
                            "false" | "0" => false,
                            _ => {
                                return Err(self.fail(
                                    a.line,
                                    format!(
                                        "<cosimo:Component>: isolate=\"{text}\"; expected true \
                                         or false"
                                    ),
                                ))
                            }
                        })
                    }
                    "callTimeout" if a.name == "Component" => {
                        let seconds: f64 = text.trim().parse().map_err(|_| {
                            self.fail(
                                a.line,
                                format!(
                                    "<cosimo:Component>: callTimeout=\"{text}\" is not a number \
                                     of seconds"
                                ),
                            )
                        })?;
                        crate::settings::call_timeout(seconds).map_err(|why| {
                            self.fail(
                                a.line,
                                format!("<cosimo:Component>: callTimeout=\"{text}\": {why}"),
                            )
                        })?;
                        component.call_timeout = Some(seconds);
                    }
                    "workerGroup" if a.name == "Component" => {
                        let group = text.trim();
                        if group.is_empty() {
                            return Err(self.fail(
                                a.line,
                                "<cosimo:Component>: workerGroup=\"\" names no worker process"
                                    .to_string(),
                            ));
                        }
                        component.worker_group = Some(group.to_string());
                    }
                    "rank" if a.name == "Component" => {
                        component.rank = Some(text.trim().parse().map_err(|_| {
                            self.fail(
                                a.line,
                                format!(
                                    "<cosimo:Component>: rank=\"{text}\" is not an MPI rank \
                                     (0, 1, 2, ...)"
                                ),
                            )
                        })?)
                    }
                    "interface" if a.name == "Component" => {
                        component.interface =
                            Some(crate::fmu::Interface::parse(text.trim()).ok_or_else(|| {
                                self.fail(
                                    a.line,
                                    format!(
                                        "<cosimo:Component>: interface=\"{text}\"; expected cs \
                                         (Co-Simulation) or me (Model Exchange)"
                                    ),
                                )
                            })?)
                    }
                    _ if key.starts_with("xmlns") || key.contains(':') => {}
                    _ => {
                        return Err(self.fail(
                            a.line,
                            format!(
                                "<{}> {key}=\"{text}\" in the org.cosimo.component annotation \
                                 is unknown; cosimo reads <cosimo:Component subSteps=\"N\" \
                                 isolate=\"true\" callTimeout=\"SECONDS\" \
                                 workerGroup=\"NAME\" interface=\"cs|me|se\" rank=\"N\"/>",
                                a.name
                            ),
                        ))
                    }
                }
            }
        }
        self.components.push(component);
        self.component_lines.push(e.line);
        let scope = self.new_scope(ScopeKind::Component(index), flat, e.show(), depth);
        self.component_scopes.push(scope);
        self.connectors(e, scope)?;
        if let Some(list) = e.child("ParameterBindings") {
            self.bindings(list, scope)?;
        }
        for child in &e.children {
            if !(child.is_ssp()
                && ["Connectors", "ParameterBindings"].contains(&child.name.as_str()))
            {
                self.ignore(e, child);
            }
        }
        Ok(scope)
    }

    /// A signal dictionary (inline entries or a `.ssb` file): a scope whose connectors are
    /// its entries.
    fn dictionary(&mut self, d: &Element, path: &str, depth: usize) -> Result<usize> {
        let name = d.attr("name").unwrap_or_default();
        let scope = self.new_scope(
            ScopeKind::Dictionary,
            format!("{path}{SEPARATOR}{name}"),
            d.show(),
            depth,
        );
        let loaded;
        let (holder, file): (&Element, PathBuf) = match d.attr("source") {
            Some(source) => {
                let located = self
                    .package
                    .locate(&self.folder, source)
                    .map_err(|m| self.fail(d.line, format!("{}: source {m}", d.show())))?;
                if !located.disk.is_file() {
                    return Err(self.fail(
                        d.line,
                        format!(
                            "{}: the signal dictionary \"{source}\" does not exist (looked for \
                             {})",
                            d.show(),
                            located.shown.display()
                        ),
                    ));
                }
                loaded = read_xml(&located.disk, &located.shown)?;
                (&loaded, located.shown)
            }
            None => match d.child("SignalDictionary") {
                Some(inner) => (inner, self.file.clone()),
                None => (d, self.file.clone()),
            },
        };
        for entry in &holder.children {
            if !entry.is("DictionaryEntry") {
                continue;
            }
            let Some(ename) = entry.attr("name") else {
                return Err(Error::Usage(format!(
                    "{}:{}: <ssb:DictionaryEntry> has no name",
                    file.display(),
                    entry.line
                )));
            };
            let typed = entry
                .children
                .iter()
                .find_map(|t| Kind::of(&t.name).map(|k| (k, t.attr("unit").map(str::to_string))));
            let node = self.new_node(Node {
                scope,
                name: ename.to_string(),
                kind: ConnectorKind::Other,
                ty: typed.as_ref().map(|t| t.0),
                unit: typed.and_then(|t| t.1),
                line: entry.line,
                value: None,
            });
            let s = &mut self.scopes[scope];
            s.connectors.insert(ename.to_string(), node);
            s.connector_names.push(ename.to_string());
        }
        Ok(scope)
    }

    /// A reference to a signal dictionary: its connectors are the dictionary's entries.
    fn dictionary_reference(
        &mut self,
        e: &Element,
        path: &str,
        depth: usize,
        dictionaries: &HashMap<String, usize>,
    ) -> Result<usize> {
        let name = self.element_name(e)?.to_string();
        let Some(&dict) = e.attr("dictionary").and_then(|d| dictionaries.get(d)) else {
            let mut known: Vec<&str> = dictionaries.keys().map(String::as_str).collect();
            known.sort();
            return Err(self.fail(
                e.line,
                format!(
                    "{}: dictionary=\"{}\" names no signal dictionary of this system or an \
                     enclosing one (known: {})",
                    e.show(),
                    e.attr("dictionary").unwrap_or_default(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let scope = self.new_scope(
            ScopeKind::Dictionary,
            format!("{path}{SEPARATOR}{name}"),
            e.show(),
            depth,
        );
        // Declare the reference's connectors, then alias each to its dictionary entry.
        let declared = self.nodes.len();
        self.connectors(e, scope)?;
        let mut aliases = Vec::new();
        for node in declared..self.nodes.len() {
            let cname = self.nodes[node].name.clone();
            let Some(&entry) = self.scopes[dict].connectors.get(&cname) else {
                let hint = hint(&cname, &self.scopes[dict].connector_names);
                return Err(self.fail(
                    self.nodes[node].line,
                    format!(
                        "connector \"{cname}\" of {} is not an entry of signal dictionary \
                         {}{hint}",
                        e.show(),
                        self.scopes[dict].show
                    ),
                ));
            };
            if let (Some(a), Some(b)) = (self.nodes[node].ty, self.nodes[entry].ty) {
                if !a.compatible(b) {
                    return Err(self.fail(
                        self.nodes[node].line,
                        format!(
                            "type mismatch: connector \"{cname}\" of {} is {} but the \
                             dictionary entry is {}",
                            e.show(),
                            a.name(),
                            b.name()
                        ),
                    ));
                }
            }
            aliases.push((cname, entry));
        }
        if e.child("Connectors").is_none() {
            // No connectors declared: every entry is reachable.
            aliases = self.scopes[dict]
                .connector_names
                .iter()
                .map(|n| (n.clone(), self.scopes[dict].connectors[n]))
                .collect();
        }
        let s = &mut self.scopes[scope];
        s.connectors.clear();
        s.connector_names.clear();
        for (n, entry) in aliases {
            s.connectors.insert(n.clone(), entry);
            s.connector_names.push(n);
        }
        Ok(scope)
    }

    // -----------------------------------------------------------------------------------------
    // Connections

    /// The node of `element`.`connector` in `system` (element None: the system itself).
    fn end(
        &self,
        c: &Element,
        system: usize,
        element: Option<&str>,
        connector: Option<&str>,
        which: &str,
    ) -> Result<(usize, Role)> {
        let Some(connector) = connector else {
            return Err(self.fail(
                c.line,
                format!("<ssd:Connection> has no {which}Connector; name the connector"),
            ));
        };
        let (scope, own) = match element {
            None | Some("") => (system, true),
            Some(name) => match self.scopes[system].elements.get(name) {
                Some(&s) => (s, false),
                None => {
                    let mut names: Vec<String> =
                        self.scopes[system].elements.keys().cloned().collect();
                    names.sort();
                    let hint = hint(name, &names);
                    return Err(self.fail(
                        c.line,
                        format!(
                            "<ssd:Connection> {which}Element=\"{name}\": {} has no element \
                             \"{name}\"{hint}",
                            self.scopes[system].show
                        ),
                    ));
                }
            },
        };
        let Some(&node) = self.scopes[scope].connectors.get(connector) else {
            let hint = hint(connector, &self.scopes[scope].connector_names);
            return Err(self.fail(
                c.line,
                format!(
                    "<ssd:Connection> {which}Connector=\"{connector}\": {} declares no \
                     connector \"{connector}\" in its <ssd:Connectors>{hint}",
                    self.scopes[scope].show
                ),
            ));
        };
        let kind = self.nodes[node].kind;
        let role = match (&self.scopes[scope].kind, own) {
            (ScopeKind::Dictionary, _) => Role::Unknown,
            (_, true) => match kind {
                ConnectorKind::Input | ConnectorKind::Parameter => Role::Source,
                ConnectorKind::Output => Role::Sink,
                _ => Role::Unknown,
            },
            (_, false) => match kind {
                ConnectorKind::Input | ConnectorKind::Parameter => Role::Sink,
                ConnectorKind::Output | ConnectorKind::CalculatedParameter => Role::Source,
                _ => Role::Unknown,
            },
        };
        Ok((node, role))
    }

    /// The text of a connection end for messages: `element.connector` or `connector`.
    fn end_text(&self, node: usize) -> String {
        let n = &self.nodes[node];
        let s = &self.scopes[n.scope];
        if s.path.is_empty() {
            n.name.clone()
        } else {
            format!("{}.{}", s.path, n.name)
        }
    }

    fn connection(&mut self, c: &Element, system: usize) -> Result<()> {
        let (mut from, from_role) = self.end(
            c,
            system,
            c.attr("startElement"),
            c.attr("startConnector"),
            "start",
        )?;
        let (mut to, to_role) = self.end(
            c,
            system,
            c.attr("endElement"),
            c.attr("endConnector"),
            "end",
        )?;
        let transformation =
            params::read_transformation(c).map_err(|(line, m)| self.fail(line, m))?;
        let describe = |s: &Self, a: usize, b: usize| {
            format!("<ssd:Connection> {} -> {}", s.end_text(a), s.end_text(b))
        };
        match (from_role, to_role) {
            (Role::Sink, Role::Source) => {
                if transformation.as_ref().is_some_and(|t| !t.is_identity()) {
                    return Err(self.fail(
                        c.line,
                        format!(
                            "{} goes from a connector that receives values to one that \
                             provides them, and has a transformation; swap start and end and \
                             invert the transformation",
                            describe(self, from, to)
                        ),
                    ));
                }
                let text = describe(self, from, to);
                self.warn(
                    c.line,
                    format!(
                        "{text} is written from its target to its source; cosimo reads it as \
                         {} -> {}",
                        self.end_text(to),
                        self.end_text(from)
                    ),
                );
                std::mem::swap(&mut from, &mut to);
            }
            (Role::Sink, Role::Sink) | (Role::Source, Role::Source) => {
                let what = if from_role == Role::Sink {
                    "receive values (inputs)"
                } else {
                    "provide values (outputs)"
                };
                return Err(self.fail(
                    c.line,
                    format!(
                        "{}: both connectors {what}; connect an output to an input",
                        describe(self, from, to)
                    ),
                ));
            }
            _ => {}
        }
        let text = describe(self, from, to);
        if let (Some(a), Some(b)) = (self.nodes[from].ty, self.nodes[to].ty) {
            if !a.compatible(b) {
                return Err(self.fail(
                    c.line,
                    format!(
                        "{text}: type mismatch: {} is {} but {} is {}; connect Real with Real, \
                         Integer and Enumeration with each other, Boolean with Boolean",
                        self.end_text(from),
                        a.name(),
                        self.end_text(to),
                        b.name()
                    ),
                ));
            }
        }
        let suppress = c.attr("suppressUnitConversion") == Some("true");
        if !suppress {
            if let (Some(a), Some(b)) = (&self.nodes[from].unit, &self.nodes[to].unit) {
                if let Err(m) = units::convert(&self.units, a, b) {
                    return Err(self.fail(
                        c.line,
                        format!(
                            "{text}: incompatible units: {m}; connect connectors of compatible \
                             units (or set suppressUnitConversion=\"true\" if the values are \
                             meant to pass unchanged)"
                        ),
                    ));
                }
            }
        }
        let transformation = match transformation {
            Some(Transformation::Linear { factor, offset }) => {
                for end in [from, to] {
                    if let Some(k) = self.nodes[end].ty.filter(|k| !k.numeric()) {
                        return Err(self.fail(
                            c.line,
                            format!(
                                "{text}: a LinearTransformation needs numeric connectors, but \
                                 {} is {}",
                                self.end_text(end),
                                k.name()
                            ),
                        ));
                    }
                }
                Some(Transformation::Linear { factor, offset })
            }
            Some(t @ Transformation::Map { .. }) if t.is_identity() => {
                self.warn(
                    c.line,
                    format!("{text}: its value mapping maps every value onto itself; ignored"),
                );
                None
            }
            Some(map @ Transformation::Map { .. }) => Some(map),
            None => None,
        };
        let mut extrapolation_order = None;
        let mut half_step = false;
        let mut source_integral = None;
        for a in self.annotations(c, "org.cosimo.connection") {
            for (key, value) in &a.attrs {
                match key.as_str() {
                    "halfStep" if a.name == "Connection" => {
                        half_step = match value.trim() {
                            "true" => true,
                            "false" => false,
                            _ => {
                                return Err(self.fail(
                                    a.line,
                                    format!(
                                "<cosimo:Connection>: halfStep=\"{value}\"; expected true or false"
                            ),
                                ))
                            }
                        }
                    }
                    "sourceIntegral" if a.name == "Connection" => {
                        source_integral = Some(value.trim().to_string());
                    }
                    "extrapolationOrder" if a.name == "Connection" => {
                        extrapolation_order =
                            Some(value.trim().parse().ok().filter(|o| *o <= 3).ok_or_else(
                                || {
                                    self.fail(
                                        a.line,
                                        format!(
                                            "<cosimo:Connection>: extrapolationOrder=\"{value}\" \
                                             is out of range; use 0 to 3"
                                        ),
                                    )
                                },
                            )?)
                    }
                    _ if key.starts_with("xmlns") || key.contains(':') => {}
                    _ => {
                        return Err(self.fail(
                            a.line,
                            format!(
                                "<{}> {key}=\"{value}\" in the org.cosimo.connection \
                                 annotation is unknown; cosimo reads <cosimo:Connection \
                                 extrapolationOrder=\"N\" halfStep=\"true\" \
                                 sourceIntegral=\"output\"/>",
                                a.name
                            ),
                        ))
                    }
                }
            }
        }
        for child in &c.children {
            let known = [
                "LinearTransformation",
                "BooleanMappingTransformation",
                "IntegerMappingTransformation",
                "EnumerationMappingTransformation",
                "Annotations",
            ];
            if !(child.is_ssp() && known.contains(&child.name.as_str())) {
                self.ignore(c, child);
            }
        }
        if let Some(first) = self.incoming[to] {
            let other = &self.edges[first];
            return Err(self.fail(
                c.line,
                format!(
                    "{text}: {} already has a source, {} (line {}); an input takes exactly one \
                     source: remove one of the two connections",
                    self.end_text(to),
                    self.end_text(other.from),
                    other.line
                ),
            ));
        }
        self.edges.push(Edge {
            from,
            to,
            transformation,
            suppress_unit_conversion: suppress,
            line: c.line,
            extrapolation_order,
            half_step,
            source_integral,
        });
        self.incoming[to] = Some(self.edges.len() - 1);
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // Tracing connections through systems and dictionaries

    fn component_of(&self, node: usize) -> Option<usize> {
        match self.scopes[self.nodes[node].scope].kind {
            ScopeKind::Component(c) => Some(c),
            _ => None,
        }
    }

    /// One connection per component connector fed through a chain of connections.
    fn trace(&mut self, root: usize) -> Result<Vec<Connection>> {
        let mut connections = Vec::new();
        for e in 0..self.edges.len() {
            let sink = self.edges[e].to;
            let Some(to_component) = self.component_of(sink) else {
                continue;
            };
            let mut chain = vec![e];
            let mut source = self.edges[e].from;
            while self.component_of(source).is_none() {
                match self.incoming[source] {
                    Some(p) => {
                        if chain.len() > self.edges.len() {
                            return Err(self.fail(
                                self.edges[e].line,
                                "the connections through system connectors form a cycle; \
                                 every chain of connections must start at a component output",
                            ));
                        }
                        chain.push(p);
                        source = self.edges[p].from;
                    }
                    None => break,
                }
            }
            chain.reverse();
            let to = Endpoint {
                component: self.components[to_component].name.clone(),
                variable: self.nodes[sink].name.clone(),
            };
            if let Some(from_component) = self.component_of(source) {
                let (mut factor, mut offset, converted) = self.forward(&chain, true)?;
                if converted && self.fmus_convert(from_component, source, to_component, sink) {
                    (factor, offset, _) = self.forward(&chain, false)?;
                }
                let order = chain
                    .iter()
                    .rev()
                    .find_map(|&i| self.edges[i].extrapolation_order);
                let half_step = chain.iter().any(|&i| self.edges[i].half_step);
                let source_integral = chain
                    .iter()
                    .find_map(|&i| self.edges[i].source_integral.clone());
                // SSP's suppressUnitConversion: the values pass unchanged, at the FMUs too.
                let ignore_units = chain
                    .iter()
                    .any(|&i| self.edges[i].suppress_unit_conversion);
                // Value maps along the chain, composed in order (unmapped values pass).
                let mut value_map: Vec<(String, String)> = Vec::new();
                for &i in &chain {
                    if let Some(Transformation::Map { entries, .. }) = &self.edges[i].transformation
                    {
                        if value_map.is_empty() {
                            value_map = entries.clone();
                        } else {
                            for (_, target) in value_map.iter_mut() {
                                if let Some((_, next)) = entries.iter().find(|(s, _)| s == target) {
                                    *target = next.clone();
                                }
                            }
                            for (s, t) in entries {
                                if !value_map.iter().any(|(_, v)| v == s)
                                    && !value_map.iter().any(|(k, _)| k == s)
                                {
                                    value_map.push((s.clone(), t.clone()));
                                }
                            }
                        }
                    }
                }
                connections.push(Connection {
                    from: Endpoint {
                        component: self.components[from_component].name.clone(),
                        variable: self.nodes[source].name.clone(),
                    },
                    to,
                    factor,
                    offset,
                    extrapolation_order: order,
                    value_map,
                    half_step,
                    source_integral,
                    ignore_units,
                });
            } else if let Some(a) = self.nodes[source].value.clone() {
                // A system parameter passed on to a component's connector.
                let (factor, offset, _) = self.forward(&chain, true)?;
                let value = if factor == 1.0 && offset == 0.0 {
                    a.value.clone()
                } else {
                    let v = number(&a.value).ok_or_else(|| {
                        self.fail(
                            self.edges[e].line,
                            format!(
                                "parameter value \"{}\" ({}) reaches {to} through a \
                                 transformation or unit conversion, which needs a number",
                                a.value, a.origin
                            ),
                        )
                    })?;
                    params::number_text(factor * v + offset)
                };
                self.assign(to_component, &to.variable, Assigned { value, ..a });
            } else {
                let s = self.nodes[source].scope;
                let what = match self.scopes[s].kind {
                    ScopeKind::Dictionary => format!(
                        "signal dictionary entry \"{}\" of {} has no writer",
                        self.nodes[source].name, self.scopes[s].show
                    ),
                    _ if s == root => format!(
                        "connector \"{}\" of the root system has no source and no parameter \
                         value",
                        self.nodes[source].name
                    ),
                    _ => format!(
                        "connector \"{}\" of {} is connected to nothing outside",
                        self.nodes[source].name, self.scopes[s].show
                    ),
                };
                let line = self.edges[chain[0]].line;
                self.warn(line, format!("{what}, so {to} keeps its start value"));
            }
        }
        Ok(connections)
    }

    /// The factor and offset along a chain of connections (unit conversions, then each
    /// connection's linear transformation), and whether a unit conversion was applied.
    fn forward(&mut self, chain: &[usize], with_units: bool) -> Result<(f64, f64, bool)> {
        let (mut a, mut b) = (1.0, 0.0);
        let mut converted = false;
        let first = self.edges[chain[0]].from;
        let mut unit = self.nodes[first].unit.clone();
        for &i in chain {
            let edge = &self.edges[i];
            let target = self.nodes[edge.to].unit.clone();
            if let (Some(u), Some(t)) = (&unit, &target) {
                if with_units && !edge.suppress_unit_conversion {
                    match units::convert(&self.units, u, t) {
                        Ok(Conversion::Affine(s, h)) => {
                            if s != 1.0 || h != 0.0 {
                                converted = true;
                            }
                            a *= s;
                            b = s * b + h;
                        }
                        Ok(Conversion::Unknown(_)) => {
                            let line = edge.line;
                            self.warn(
                                line,
                                format!(
                                    "cannot convert unit \"{u}\" to \"{t}\" along the \
                                     connection: a unit without a definition in <ssd:Units> \
                                     is only matched by name; the value is passed unchanged"
                                ),
                            );
                        }
                        Err(m) => {
                            return Err(self.fail(
                                edge.line,
                                format!(
                                    "incompatible units along the connection to {}: {m}; \
                                     connect connectors of compatible units",
                                    self.end_text(edge.to)
                                ),
                            ))
                        }
                    }
                }
            }
            if target.is_some() {
                unit = target;
            }
            if let Some(Transformation::Linear { factor, offset }) = &self.edges[i].transformation {
                a *= factor;
                b = factor * b + offset;
            }
        }
        if !(a.is_finite() && b.is_finite()) {
            // Each factor is finite, their product need not be (1e300 m per unit, then 1e300).
            let last = chain.last().map_or(0, |&i| self.edges[i].line);
            let to = chain.last().map(|&i| self.edges[i].to).unwrap_or(first);
            return Err(self.fail(
                last,
                format!(
                    "the unit conversions and transformations along the connection to {} \
                     multiply to {a} x + {b}, which is not finite; check their factors and \
                     offsets",
                    self.end_text(to)
                ),
            ));
        }
        Ok((a, b, converted))
    }

    /// Whether cosimo's resolver will convert between the FMU variables' own units (both
    /// declared, different, convertible): then the importer must not convert as well.
    fn fmus_convert(&mut self, fc: usize, from: usize, tc: usize, to: usize) -> bool {
        let (Some(fmd), Some(tmd)) = (self.description(fc), self.description(tc)) else {
            return false;
        };
        let (Some(fv), Some(tv)) = (
            fmd.variable(&self.nodes[from].name),
            tmd.variable(&self.nodes[to].name),
        ) else {
            return false;
        };
        let (Some(fu), Some(tu)) = (fv.unit.as_deref(), tv.unit.as_deref()) else {
            return false;
        };
        let base = |md: &ModelDescription, name: &str| {
            md.units
                .iter()
                .find(|u| u.name == name)
                .and_then(|u| u.base_unit.clone())
        };
        if fu == tu {
            return false;
        }
        let convertible = base(&fmd, fu).is_some() && base(&tmd, tu).is_some();
        if convertible {
            let (cf, ct) = (
                self.nodes[from].unit.clone().unwrap_or_default(),
                self.nodes[to].unit.clone().unwrap_or_default(),
            );
            if cf != fu || ct != tu {
                let line = self.nodes[to].line;
                self.warn(
                    line,
                    format!(
                        "the FMUs declare units \"{fu}\" and \"{tu}\" for {} and {}, the \
                         connectors \"{cf}\" and \"{ct}\"; cosimo converts by the FMUs' units",
                        self.end_text(from),
                        self.end_text(to)
                    ),
                );
            }
        }
        convertible
    }

    /// The model description of a component's FMU (read once per file; None when unreadable,
    /// which the run reports later).
    fn description(&mut self, component: usize) -> Option<Arc<ModelDescription>> {
        let path = self.components[component].fmu.clone();
        if let Some(d) = self.descriptions.get(&path) {
            return d.clone();
        }
        let read = || -> Option<ModelDescription> {
            let md = path.join("modelDescription.xml");
            if path.is_dir() {
                return crate::fmu::description::from_file(&md).ok();
            }
            let file = std::fs::File::open(&path).ok()?;
            let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).ok()?;
            let entry = zip.by_name("modelDescription.xml").ok()?;
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::Read::take(entry, 64 << 20), &mut text)
                .ok()?;
            crate::fmu::description::from_str(&text, &md).ok()
        };
        let d = read().map(Arc::new);
        self.descriptions.insert(path, d.clone());
        d
    }

    // -----------------------------------------------------------------------------------------
    // Parameters

    /// Set a component variable's start value, honouring precedence.
    fn assign(&mut self, component: usize, variable: &str, value: Assigned) {
        let key = (component, variable.to_string());
        match self.values.get(&key) {
            Some(old)
                if !(value.depth < old.depth
                    || (value.depth == old.depth && value.seq > old.seq)) => {}
            Some(_) => {
                self.values.insert(key, value);
            }
            None => {
                self.value_order.push(key.clone());
                self.values.insert(key, value);
            }
        }
    }

    /// `<ssd:ParameterBindings>` of the element of `scope`.
    fn bindings(&mut self, list: &Element, scope: usize) -> Result<()> {
        for b in &list.children {
            if !b.is("ParameterBinding") {
                self.ignore(list, b);
                continue;
            }
            self.binding(b, scope)?;
        }
        Ok(())
    }

    /// Load an external file referenced at `e` (`source`).
    fn load(&self, e: &Element, source: &str, what: &str) -> Result<(Element, PathBuf)> {
        let located = self
            .package
            .locate(&self.folder, source)
            .map_err(|m| self.fail(e.line, format!("{}: source {m}", e.show())))?;
        if !located.disk.is_file() {
            return Err(self.fail(
                e.line,
                format!(
                    "{}: the {what} \"{source}\" does not exist (looked for {}); put it there \
                     or correct source=\"...\"",
                    e.show(),
                    located.shown.display()
                ),
            ));
        }
        let root = read_xml(&located.disk, &located.shown).map_err(|err| match err {
            Error::Usage(m) => Error::Usage(format!(
                "{m} (the {what} referenced by {} at {}:{})",
                e.show(),
                self.file.display(),
                e.line
            )),
            other => other,
        })?;
        Ok((root, located.shown))
    }

    fn binding(&mut self, b: &Element, scope: usize) -> Result<()> {
        let ty = b.attr("type").unwrap_or("application/x-ssp-parameter-set");
        if ty != "application/x-ssp-parameter-set" {
            return Err(self.fail(
                b.line,
                format!(
                    "<ssd:ParameterBinding> type=\"{ty}\" is not supported; cosimo reads \
                     parameter sets (application/x-ssp-parameter-set, .ssv); without it the \
                     parameters would be missing"
                ),
            ));
        }
        if b.attr("sourceBase") == Some("component") {
            return Err(self.fail(
                b.line,
                "<ssd:ParameterBinding> sourceBase=\"component\" (a parameter file inside the \
                 FMU) is not supported; copy the file into the SSP and reference it relative \
                 to the .ssd",
            ));
        }
        let mut set_units = self.units.clone();
        let (set, set_file) = match b.attr("source") {
            Some(source) => {
                let (root, file) = self.load(b, source, "parameter set")?;
                (Some(root), file)
            }
            None => (None, self.file.clone()),
        };
        let inline = b
            .child("ParameterValues")
            .and_then(|v| v.children.iter().find(|c| c.is_ssp()));
        let set_element = match (&set, inline) {
            (Some(root), _) => root,
            (None, Some(inner)) => inner,
            (None, None) => {
                return Err(self.fail(
                    b.line,
                    "<ssd:ParameterBinding> has neither source=\"...ssv\" nor inline \
                     <ssd:ParameterValues>; give one of them",
                ))
            }
        };
        let parameters = params::read_parameter_set(set_element, &mut set_units)
            .map_err(|(line, m)| Error::Usage(format!("{}:{line}: {m}", set_file.display())))?;
        // The mapping.
        let mut mapping = None;
        if let Some(m) = b.child("ParameterMapping") {
            let (loaded, file) = match m.attr("source") {
                Some(source) => {
                    let (root, file) = self.load(m, source, "parameter mapping")?;
                    (Some(root), file)
                }
                None => (None, self.file.clone()),
            };
            let element = match (
                &loaded,
                m.children.iter().find(|c| c.is("ParameterMapping")),
            ) {
                (Some(root), _) => root,
                (None, Some(inner)) => inner,
                (None, None) => {
                    return Err(self.fail(
                        m.line,
                        "<ssd:ParameterMapping> has neither source=\"...ssm\" nor an inline \
                         <ssm:ParameterMapping>",
                    ))
                }
            };
            let entries = params::read_mapping(element)
                .map_err(|(line, msg)| Error::Usage(format!("{}:{line}: {msg}", file.display())))?;
            mapping = Some((entries, file));
        }
        for child in &b.children {
            if !(child.is_ssp()
                && ["ParameterValues", "ParameterMapping"].contains(&child.name.as_str()))
            {
                self.ignore(b, child);
            }
        }
        let prefix = b.attr("prefix").unwrap_or("");
        let depth = self.scopes[scope].depth;
        for p in &parameters {
            let origin = format!("{}:{}", set_file.display(), p.line);
            let mut targets: Vec<(String, String, Option<String>)> = Vec::new();
            let mapped = mapping
                .as_ref()
                .map(|(entries, _)| {
                    entries
                        .iter()
                        .filter(|e| e.source == p.name)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            if mapped.is_empty() {
                targets.push((p.name.clone(), p.value.clone(), p.unit.clone()));
            }
            for entry in mapped {
                let value = match &entry.transformation {
                    Some(t) => params::apply(p, t).map_err(|m| {
                        let file = mapping
                            .as_ref()
                            .map(|(_, f)| f.display().to_string())
                            .unwrap_or_default();
                        Error::Usage(format!(
                            "{file}:{}: <ssm:MappingEntry source=\"{}\">: {m}",
                            entry.line, entry.source
                        ))
                    })?,
                    None => p.value.clone(),
                };
                let unit = if entry.suppress_unit_conversion {
                    None
                } else {
                    p.unit.clone()
                };
                targets.push((entry.target.clone(), value, unit));
            }
            for (name, value, unit) in targets {
                let full = format!("{prefix}{name}");
                self.seq += 1;
                let assigned = Assigned {
                    value,
                    depth,
                    seq: self.seq,
                    origin: origin.clone(),
                };
                self.bind(
                    scope,
                    &full,
                    assigned,
                    p,
                    unit.as_deref(),
                    &set_units,
                    b.line,
                )?;
            }
        }
        Ok(())
    }

    /// Bind one (mapped, prefixed) parameter name in `scope`.
    #[allow(clippy::too_many_arguments)]
    fn bind(
        &mut self,
        scope: usize,
        name: &str,
        mut value: Assigned,
        parameter: &Parameter,
        unit: Option<&str>,
        set_units: &HashMap<String, SspUnit>,
        line: usize,
    ) -> Result<()> {
        let target = match self.scopes[scope].kind {
            ScopeKind::Component(c) => Some(Target::Variable(c, name.to_string())),
            ScopeKind::System => self.system_target(scope, name),
            ScopeKind::Dictionary => None,
        };
        let Some(target) = target else {
            self.warn(
                line,
                format!(
                    "parameter \"{name}\" ({}) matches no connector or element of {}; it is \
                     ignored (names in a system's binding are connector or \
                     element.connector)",
                    value.origin, self.scopes[scope].show
                ),
            );
            return Ok(());
        };
        // Convert a Real parameter into its connector's unit.
        let node = match &target {
            Target::Variable(c, v) => self.scopes[self.component_scopes[*c]]
                .connectors
                .get(v)
                .copied(),
            Target::Connector(n) => Some(*n),
        };
        if let (Some(node), Some(pu), Kind::Float) = (node, unit, parameter.kind) {
            if let Some(cu) = self.nodes[node].unit.clone() {
                match units::convert(set_units, pu, &cu) {
                    Ok(Conversion::Affine(s, h)) if s != 1.0 || h != 0.0 => {
                        if let Some(v) = number(&value.value) {
                            value.value = params::number_text(s * v + h);
                        }
                    }
                    Ok(Conversion::Affine(..)) => {}
                    Ok(Conversion::Unknown(_)) => self.warn(
                        line,
                        format!(
                            "parameter \"{name}\" ({}) is in unit \"{pu}\", its connector in \
                             \"{cu}\", and one of them is not defined; the value is used \
                             unchanged",
                            value.origin
                        ),
                    ),
                    Err(m) => {
                        return Err(Error::Usage(format!(
                            "{}: parameter \"{name}\": {m}; give the value in a unit of the \
                             connector's dimension",
                            value.origin
                        )))
                    }
                }
            }
        }
        match target {
            Target::Variable(c, v) => self.assign(c, &v, value),
            Target::Connector(n) => {
                let replace = match &self.nodes[n].value {
                    None => true,
                    Some(old) => {
                        value.depth < old.depth || (value.depth == old.depth && value.seq > old.seq)
                    }
                };
                if replace {
                    self.nodes[n].value = Some(value);
                }
            }
        }
        Ok(())
    }

    /// `connector`, `element.connector` or `system.element.connector` in a system.
    fn system_target(&self, scope: usize, name: &str) -> Option<Target> {
        if let Some(&n) = self.scopes[scope].connectors.get(name) {
            return Some(Target::Connector(n));
        }
        let (element, rest) = name.split_once('.')?;
        let &inner = self.scopes[scope].elements.get(element)?;
        match self.scopes[inner].kind {
            ScopeKind::Component(c) => Some(Target::Variable(c, rest.to_string())),
            ScopeKind::System => self.system_target(inner, rest),
            ScopeKind::Dictionary => None,
        }
    }
}

/// A number, trimmed.
fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// "; did you mean \"x\"?" or "; it has: a, b, c".
fn hint(name: &str, candidates: &[String]) -> String {
    match crate::system::config::closest(name, candidates.iter().map(String::as_str)) {
        Some(s) => format!("; did you mean \"{s}\"?"),
        None if candidates.is_empty() => "; it has none".to_string(),
        None if candidates.len() <= 12 => format!("; it has: {}", candidates.join(", ")),
        None => String::new(),
    }
}
