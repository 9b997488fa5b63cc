//! A [`System`] checked against its FMUs' model descriptions: names become variable indices,
//! start values are parsed, connections get their types, unit conversions and extrapolation
//! orders.
//!
//! Rules for connections:
//! - the source is an output; leniently also a local or a calculated parameter (readable after
//!   every step). An input, parameter or the independent variable as source is an error.
//! - the target is an input (FMI 3 tunable parameters as targets are not supported).
//! - types: Float32/Float64 with each other; the integer types with each other and with
//!   Enumeration; Enumeration with an Enumeration of the same declared type; Boolean with
//!   Boolean. String and Binary connections are not supported yet (the master exchanges
//!   numbers and Booleans): they are refused here, before anything runs. A factor or offset
//!   other than 1 / 0 needs numeric types (Float or integer).
//! - FMI 3 arrays connect to arrays of the same configured size (structural parameters
//!   counted), element by element: an array connection of n elements becomes n scalar
//!   connections between *element variables* appended to the two components' descriptions
//!   ([`ArrayElement`]; named `y[1]` .. `y[n]`, with value references above the FMU's own),
//!   so every algorithm moves scalars as before and only the slave, wrapped in
//!   [`crate::fmu::elements::ArrayElements`], turns them into whole-array FMI calls. An array
//!   to a scalar, an element (`a.y[2]`), clocked arrays and arrays that follow a polynomial
//!   (extrapolation order above 0) are refused.
//! - FMI 3 clocks: an output clock drives an input clock ([`ClockConnection`]); a connection
//!   from or to a clocked variable (FMI 3 `clocks`) is a [`ResolvedSystem::clocked`] one,
//!   transferred by the master's clock handling only while the clocks tick, never by the
//!   per-step exchange.
//! - an input takes exactly one source.
//! - a connection from a component to itself is allowed (with direct feedthrough it forms an
//!   algebraic loop, which the coupling graph reports).

use std::collections::HashMap;
use std::sync::Arc;

use super::config::closest;
use super::{units, System};
use crate::fmu::description::{Causality, ModelDescription, StartValue, Variable, VariableType};
use crate::fmu::values::{check_start_value_allowed, element_count, parse_start_values};
use crate::{Error, Result};

/// A system whose names are resolved against the model descriptions.
#[derive(Debug, Clone)]
pub struct ResolvedSystem {
    /// The system as given.
    pub system: System,
    /// Same order as `system.components`.
    pub components: Vec<ResolvedComponent>,
    /// The value connections of `system.connections`, in their order, less the clocked ones.
    pub connections: Vec<ResolvedConnection>,
    /// Connections from or to clocked variables (FMI 3 `clocks`), in the system's order.
    pub clocked: Vec<ResolvedConnection>,
    /// Connections from output clocks to input clocks, in the system's order.
    pub clock_connections: Vec<ClockConnection>,
}

/// An output clock that drives an input clock (both FMI 3 `Clock` variables).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockConnection {
    /// Index into `components`.
    pub from_component: usize,
    /// Index into the source component's `description.variables`.
    pub from_variable: usize,
    /// Index into `components`.
    pub to_component: usize,
    /// Index into the target component's `description.variables`.
    pub to_variable: usize,
}

/// A component with its model description and parsed start values.
#[derive(Debug, Clone)]
pub struct ResolvedComponent {
    pub name: String,
    pub description: Arc<ModelDescription>,
    /// (variable index, value), parsed and checked with check_start_value_allowed / parse_value
    pub start_values: Vec<(usize, StartValue)>,
    pub sub_steps: u32,
    /// Element variables appended to `description` for array connections, in the order of
    /// their value references (see the module documentation).
    pub elements: Vec<ArrayElement>,
}

/// A scalar variable of a resolved description that stands for one element of an FMI 3 array
/// in connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayElement {
    /// Index of the element variable into the description's `variables`.
    pub variable: usize,
    /// Index of the array it is an element of.
    pub array: usize,
    /// Flat index of the element in the array, from 0.
    pub index: usize,
}

impl ResolvedComponent {
    /// The array `variable` is an element variable of, else `variable` itself: what a user
    /// named when the connection was written.
    pub fn declared_variable(&self, variable: usize) -> usize {
        // Element variables follow the FMU's own, in the order of `elements`.
        let first = self.elements.first().map_or(usize::MAX, |e| e.variable);
        variable
            .checked_sub(first)
            .and_then(|k| self.elements.get(k))
            .map_or(variable, |e| e.array)
    }
}

/// `slave` of `component`, seen through [`crate::fmu::elements::ArrayElements`] when
/// connections use its array elements.
pub fn with_elements(
    slave: Box<dyn crate::fmu::Slave>,
    component: &ResolvedComponent,
) -> Result<Box<dyn crate::fmu::Slave>> {
    if component.elements.is_empty() {
        return Ok(slave);
    }
    let description = &component.description;
    let elements: Vec<crate::fmu::elements::Element> = component
        .elements
        .iter()
        .map(|e| crate::fmu::elements::Element {
            value_reference: description.variables[e.variable].value_reference,
            array: e.array,
            index: e.index,
        })
        .collect();
    Ok(Box::new(crate::fmu::elements::ArrayElements::new(
        slave,
        description,
        &elements,
    )?))
}

/// Elements in one array connection at most: each becomes a variable and a connection.
pub const MAX_CONNECTED_ELEMENTS: usize = 1 << 20;

/// A connection by indices, with its type and linear transformation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedConnection {
    /// Index into `components`.
    pub from_component: usize,
    /// Index into the source component's `description.variables`.
    pub from_variable: usize,
    /// Index into `components`.
    pub to_component: usize,
    /// Index into the target component's `description.variables`.
    pub to_variable: usize,
    /// Type of the source.
    pub var_type: VariableType,
    /// to = scale * from + shift: unit conversion followed by the connection's factor/offset
    pub scale: f64,
    pub shift: f64,
    /// The connection's order, else the experiment's; 0 for non-Float types.
    pub extrapolation_order: u8,
    /// Boolean / integer / enumeration value map (source, target), numbers as the master
    /// exchanges them (Booleans 0 / 1, enumerations by value).
    pub value_map: Vec<(f64, f64)>,
    /// Discretised on half steps by the extended implicit coupling (Float64 only).
    pub half_step: bool,
    /// Index into the source component's `description.variables` of the output that
    /// integrates the source over time (integral-extended coupling).
    pub source_integral: Option<usize>,
}

impl ResolvedConnection {
    /// The value the target receives for the source's value `y`: the value map, then
    /// `scale * y + shift`.
    pub fn transform(&self, y: f64) -> f64 {
        let y = self
            .value_map
            .iter()
            .find(|(from, _)| *from == y)
            .map_or(y, |(_, to)| *to);
        self.scale * y + self.shift
    }
}

/// `descriptions[i]` is the model description of `system.components[i]`.
pub fn resolve(
    system: &System,
    descriptions: Vec<Arc<ModelDescription>>,
) -> Result<ResolvedSystem> {
    if descriptions.len() != system.components.len() {
        return Err(Error::Usage(format!(
            "internal: {} model descriptions given for {} components",
            descriptions.len(),
            system.components.len()
        )));
    }
    let mut components = Vec::with_capacity(system.components.len());
    for (component, description) in system.components.iter().zip(descriptions) {
        if component.sub_steps > 1
            && system.experiment.algorithm.kind() == crate::settings::AlgorithmKind::Rim
        {
            return Err(Error::Usage(format!(
                "component \"{}\": subSteps {}: the rim algorithm steps the multibody component once per macro step and every other component at the fast step (rim.fastStepSize), so no component takes sub-steps; remove it",
                component.name, component.sub_steps
            )));
        }
        let prefix = |e: Error| match e {
            Error::Usage(m) => Error::Usage(format!("component \"{}\": {m}", component.name)),
            other => other,
        };
        let mut indices = Vec::with_capacity(component.start_values.len());
        for (name, _) in &component.start_values {
            let index = find_variable(
                &component.name,
                &component.fmu,
                &description,
                name,
                "parameter",
            )?;
            check_start_value_allowed(&description, &description.variables[index])
                .map_err(prefix)?;
            indices.push(index);
        }
        // Structural parameters first: an array they size takes the configured size, which
        // the other values (and everything after resolution) count.
        let given: Vec<(usize, &str)> = indices
            .iter()
            .zip(&component.start_values)
            .map(|(&i, (_, text))| (i, text.as_str()))
            .collect();
        let (configured, values) = parse_start_values(&description, &given).map_err(prefix)?;
        let description = configured.map(Arc::new).unwrap_or(description);
        let start_values: Vec<(usize, StartValue)> = indices.into_iter().zip(values).collect();
        components.push(ResolvedComponent {
            name: component.name.clone(),
            description,
            start_values,
            sub_steps: component.sub_steps,
            elements: Vec::new(),
        });
    }

    // Names to indices once: a lookup per connection end stays O(1) for systems of 100,000
    // components.
    let by_name: HashMap<&str, usize> = components
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    let component_index = |name: &str, at: &str| {
        by_name.get(name).copied().ok_or_else(|| {
            Error::Usage(format!(
                "{at}: there is no component \"{name}\" (components: {})",
                components
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    };

    let mut connections: Vec<ResolvedConnection> = Vec::with_capacity(system.connections.len());
    let mut clocked: Vec<ResolvedConnection> = Vec::new();
    let mut clock_connections: Vec<ClockConnection> = Vec::new();
    // (component, variable) of every connected input -> the system connection that feeds it.
    let mut fed_by: HashMap<(usize, usize), usize> = HashMap::with_capacity(connections.capacity());
    // (connection, element index) of each element of an array connection.
    let mut element_ends: Vec<(usize, usize)> = Vec::new();
    for (k, c) in system.connections.iter().enumerate() {
        let at = format!("connection {} -> {}", c.from, c.to);
        let fc = component_index(&c.from.component, &at)?;
        let tc = component_index(&c.to.component, &at)?;
        let (fmd, tmd) = (&components[fc].description, &components[tc].description);
        let in_connection = |e: Error| match e {
            Error::Usage(m) => Error::Usage(format!("{at}: {m}")),
            other => other,
        };
        let fmu_of = |i: usize| system.components[i].fmu.as_path();
        let fv = find_end(&c.from, fmu_of(fc), fmd).map_err(in_connection)?;
        let tv = find_end(&c.to, fmu_of(tc), tmd).map_err(in_connection)?;
        let (from, to) = (&fmd.variables[fv], &tmd.variables[tv]);
        let fail = |m: String| Err(Error::Usage(format!("{at}: {m}")));

        match from.causality {
            Causality::Output | Causality::Local | Causality::CalculatedParameter => {}
            Causality::Input => {
                return fail(format!(
                    "the source {} is an input; a connection goes from an output to an input \
                     (did you swap from and to?)",
                    c.from
                ))
            }
            other => {
                return fail(format!(
                    "the source {} is a {} and cannot be a connection source; connect an output",
                    c.from,
                    causality_name(other)
                ))
            }
        }
        if to.causality != Causality::Input {
            return fail(if to.causality == Causality::Output {
                format!(
                    "the target {} is an output; a connection goes from an output to an input \
                     (did you swap from and to?)",
                    c.to
                )
            } else {
                format!(
                    "the target {} is a {}, not an input; only inputs can be connection targets \
                     (set parameters with \"parameters\")",
                    c.to,
                    causality_name(to.causality)
                )
            });
        }
        // Arrays: the size as configured (a structural parameter may size either end).
        let elements = if from.is_array() || to.is_array() {
            let (n_from, n_to) = (
                element_count(fmd, from).map_err(in_connection)?,
                element_count(tmd, to).map_err(in_connection)?,
            );
            if from.is_array() != to.is_array() {
                let (array, n, scalar) = if from.is_array() {
                    (&c.from, n_from, &c.to)
                } else {
                    (&c.to, n_to, &c.from)
                };
                return fail(format!(
                    "{array} is an array of {n} element(s) and {scalar} is a scalar: a connection \
                     joins an array to an array of the same size (connections address no single \
                     element)"
                ));
            }
            if n_from != n_to {
                return fail(format!(
                    "{} has {n_from} element(s) and {} has {n_to}: an array connection needs \
                     the same size at both ends (check the structural parameters that size them)",
                    c.from, c.to
                ));
            }
            if n_from > MAX_CONNECTED_ELEMENTS {
                return fail(format!(
                    "{} has {n_from} elements; cosimo connects arrays of at most \
                     {MAX_CONNECTED_ELEMENTS} elements",
                    c.from
                ));
            }
            if !from.clocks.is_empty() || !to.clocks.is_empty() {
                return fail(
                    "clocked arrays cannot be connected yet (clocked scalars can)".to_string(),
                );
            }
            if c.source_integral.is_some() {
                return fail(
                    "sourceIntegral names one scalar integral, but this connection joins arrays; remove it"
                        .to_string(),
                );
            }
            Some(n_from)
        } else {
            None
        };
        if from.var_type == VariableType::Clock || to.var_type == VariableType::Clock {
            if from.var_type != to.var_type {
                return fail(format!(
                    "a clock connects to a clock only, but {} is {} and {} is {}",
                    c.from,
                    from.var_type.fmi_name(fmd.fmi_version),
                    c.to,
                    to.var_type.fmi_name(tmd.fmi_version)
                ));
            }
            if c.factor != 1.0 || c.offset != 0.0 || c.extrapolation_order.is_some() || c.half_step
            {
                return fail(
                    "a clock connection carries ticks, not values: remove its factor, offset, extrapolationOrder or halfStep".to_string(),
                );
            }
            if let Some(&first) = fed_by.get(&(tc, tv)) {
                let other = &system.connections[first];
                return fail(format!(
                    "input clock {} is connected twice, from {} and from {}; remove one of the two connections",
                    c.to, other.from, c.from
                ));
            }
            fed_by.insert((tc, tv), k);
            clock_connections.push(ClockConnection {
                from_component: fc,
                from_variable: fv,
                to_component: tc,
                to_variable: tv,
            });
            continue;
        }
        check_types(fmd, from, tmd, to).map_err(|m| Error::Usage(format!("{at}: {m}")))?;
        let numeric = is_numeric(from.var_type) && is_numeric(to.var_type);
        if (c.factor != 1.0 || c.offset != 0.0) && !numeric {
            return fail(format!(
                "factor and offset need numeric variables, but {} is {} and {} is {}",
                c.from,
                from.var_type.fmi_name(fmd.fmi_version),
                c.to,
                to.var_type.fmi_name(tmd.fmi_version)
            ));
        }
        if c.half_step
            && system.experiment.algorithm.extension() == crate::settings::implicit::Extension::None
        {
            return fail(
                "halfStep needs the extended implicit coupling: set the algorithm to implicit and corrector.extension to derivative or integral, or remove halfStep".to_string(),
            );
        }
        if let Some(order) = c.extrapolation_order {
            // A connection's own order that nothing reads would be accepted and ignored.
            let algorithm = &system.experiment.algorithm;
            if !from.var_type.is_float() {
                return fail(format!(
                    "extrapolationOrder {order}: only Float values are extrapolated, but {} is {}; remove it",
                    c.from,
                    from.var_type.fmi_name(fmd.fmi_version)
                ));
            }
            if algorithm.kind() == crate::settings::AlgorithmKind::Rim {
                return fail(format!(
                    "extrapolationOrder {order}: the rim algorithm holds every value it passes over the fast steps (the reduced model stands in for the multibody interface), so no connection extrapolates; remove it"
                ));
            }
            if algorithm.control().is_some() {
                return fail(format!(
                    "extrapolationOrder {order}: under step control one order holds for every connection (chosen by the order controller up to the highest order, or fixed by the experiment's extrapolation order with variable order off); remove it"
                ));
            }
        }
        // (Half-step marks without an extension are refused below, with the clearer message.)
        if c.source_integral.is_some()
            && system.experiment.algorithm.extension() == crate::settings::implicit::Extension::None
            && !system.connections.iter().any(|k| k.half_step)
        {
            return fail(
                "sourceIntegral is read by the integral extension of the implicit algorithm only (corrector.extension integral, --extension integral); choose it, or remove sourceIntegral".to_string(),
            );
        }
        let source_integral = match &c.source_integral {
            None => None,
            Some(name) => {
                let i = find_variable(&c.from.component, fmu_of(fc), fmd, name, "variable")
                    .map_err(in_connection)?;
                let v = &fmd.variables[i];
                if v.var_type != VariableType::Float64
                    || !matches!(v.causality, Causality::Output | Causality::Local)
                    || v.is_array()
                {
                    return fail(format!(
                        "sourceIntegral {}.{name} must be a scalar Float64 output (or local) of {} that integrates {} over time",
                        c.from.component, c.from.component, c.from
                    ));
                }
                Some(i)
            }
        };
        if c.half_step && to.var_type != VariableType::Float64 {
            return fail(format!(
                "halfStep needs a Float64 input, but {} is {}; remove halfStep from this connection",
                c.to,
                to.var_type.fmi_name(tmd.fmi_version)
            ));
        }
        if let Some(&first) = fed_by.get(&(tc, tv)) {
            let other = &system.connections[first];
            return fail(format!(
                "input {} is connected twice, from {} and from {}; an input takes exactly one \
                 source: remove one of the two connections",
                c.to, other.from, c.from
            ));
        }
        let (mut scale, mut shift) = if from.var_type.is_float() && to.var_type.is_float() {
            match units::conversion((fmd, from), (tmd, to)) {
                Ok(conversion) if !c.ignore_units => conversion,
                Ok(_) => (1.0, 0.0),
                Err(m) if c.ignore_units => {
                    log::warn!(
                        "{at}: {m}; the connection ignores units: the value passes unchanged"
                    );
                    (1.0, 0.0)
                }
                Err(m) => {
                    return Err(Error::Usage(format!(
                        "{at}: {m}, or mark the connection \"ignoreUnits\": true (SSP: \
                         suppressUnitConversion=\"true\"; command line: --ignore-units \
                         {}={}) to pass the value unchanged",
                        c.from, c.to
                    )))
                }
            }
        } else {
            (1.0, 0.0)
        };
        scale *= c.factor;
        shift = c.factor * shift + c.offset;
        let value_map =
            value_map(c, fmd, from, tmd, to).map_err(|m| Error::Usage(format!("{at}: {m}")))?;
        let extrapolation_order = if from.var_type.is_float() {
            c.extrapolation_order
                .unwrap_or(system.experiment.algorithm.extrapolation_order())
        } else {
            0
        };
        fed_by.insert((tc, tv), k);
        let is_clocked = !from.clocks.is_empty() || !to.clocks.is_empty();
        if is_clocked && (c.extrapolation_order.is_some() || c.half_step) {
            return fail(
                "a clocked value holds between its ticks: remove extrapolationOrder or halfStep"
                    .to_string(),
            );
        }
        let list = if is_clocked {
            &mut clocked
        } else {
            &mut connections
        };
        if let Some(n) = elements {
            if system
                .experiment
                .algorithm
                .control()
                .is_some_and(|control| control.variable_order)
            {
                return fail(
                    "the order controller may raise every connection's extrapolation order, but \
                     the elements of an FMI 3 array input are held over each step (an array \
                     cannot follow a polynomial); turn variable order off for systems with array \
                     connections"
                        .to_string(),
                );
            }
            if extrapolation_order > 0 {
                return fail(format!(
                    "extrapolation order {extrapolation_order}: the elements of an FMI 3 array input \
                     are held over each step (an array cannot follow a polynomial); give this \
                     connection \"extrapolationOrder\": 0"
                ));
            }
            // Resolved to element variables once the loop has seen every connection.
            for index in 0..n {
                element_ends.push((connections.len(), index));
                connections.push(ResolvedConnection {
                    from_component: fc,
                    from_variable: fv,
                    to_component: tc,
                    to_variable: tv,
                    var_type: from.var_type,
                    scale,
                    shift,
                    extrapolation_order,
                    value_map: value_map.clone(),
                    half_step: c.half_step,
                    source_integral: None,
                });
            }
            continue;
        }
        list.push(ResolvedConnection {
            from_component: fc,
            from_variable: fv,
            to_component: tc,
            to_variable: tv,
            var_type: from.var_type,
            scale,
            shift,
            extrapolation_order: if is_clocked { 0 } else { extrapolation_order },
            value_map,
            half_step: c.half_step,
            source_integral,
        });
    }
    add_element_variables(&mut components, &mut connections, &element_ends)?;
    Ok(ResolvedSystem {
        system: system.clone(),
        components,
        connections,
        clocked,
        clock_connections,
    })
}

/// Give every array end of `element_ends` (connection, element index) its element variables
/// and point the connection at them: arrays of one component that several connections use
/// share their element variables.
fn add_element_variables(
    components: &mut [ResolvedComponent],
    connections: &mut [ResolvedConnection],
    element_ends: &[(usize, usize)],
) -> Result<()> {
    if element_ends.is_empty() {
        return Ok(());
    }
    // (component, array) -> index of its first element variable.
    let mut first: HashMap<(usize, usize), usize> = HashMap::new();
    let mut element_variable =
        |components: &mut [ResolvedComponent], component: usize, array: usize, index: usize| {
            let start = match first.get(&(component, array)) {
                Some(&start) => start,
                None => {
                    let start = append_elements(&mut components[component], array)?;
                    first.insert((component, array), start);
                    start
                }
            };
            Ok::<usize, Error>(start + index)
        };
    for &(c, index) in element_ends {
        let conn = &connections[c];
        let (fc, fv, tc, tv) = (
            conn.from_component,
            conn.from_variable,
            conn.to_component,
            conn.to_variable,
        );
        let from = element_variable(components, fc, fv, index)?;
        let to = element_variable(components, tc, tv, index)?;
        connections[c].from_variable = from;
        connections[c].to_variable = to;
    }
    for component in components.iter_mut() {
        if !component.elements.is_empty() {
            add_element_dependencies(component);
        }
    }
    Ok(())
}

/// Append the element variables of `array` to the component's description; the index of the
/// first.
fn append_elements(component: &mut ResolvedComponent, array: usize) -> Result<usize> {
    let description = Arc::make_mut(&mut component.description);
    let variable = &description.variables[array];
    let n = element_count(description, variable)?;
    // Above every value reference of the FMU (and of elements added before), consecutive.
    let next = description
        .variables
        .iter()
        .map(|v| v.value_reference)
        .max()
        .map_or(Some(0), |vr| vr.checked_add(1));
    let last = next.and_then(|vr| vr.checked_add(u32::try_from(n).ok()?));
    let (Some(next), Some(_)) = (next, last) else {
        return Err(Error::Usage(format!(
            "component \"{}\": array \"{}\" cannot be connected: its {n} elements need value references beyond the FMU's highest, and none are left",
            component.name, variable.name
        )));
    };
    let start = description.variables.len();
    let template = crate::fmu::description::Variable {
        // Connections read and set elements; nothing else lists them (results, the exported
        // FMU and unconnected-input warnings go by the array).
        causality: Causality::Local,
        dimensions: Vec::new(),
        start: None,
        aliases: Vec::new(),
        derivative: None,
        previous: None,
        alias: None,
        ..variable.clone()
    };
    let name = variable.name.clone();
    description.variables.reserve(n);
    for index in 0..n {
        description
            .variables
            .push(crate::fmu::description::Variable {
                name: format!("{name}[{}]", index + 1),
                value_reference: next + index as u32,
                ..template.clone()
            });
        component.elements.push(ArrayElement {
            variable: start + index,
            array,
            index,
        });
    }
    Ok(start)
}

/// Dependencies in the model structure for element variables: an output that depends on a
/// connected array input depends on each of its elements, and an element of a connected array
/// output depends on what the array depends on.
fn add_element_dependencies(component: &mut ResolvedComponent) {
    let mut elements_of: HashMap<usize, Vec<usize>> = HashMap::new();
    for e in &component.elements {
        elements_of.entry(e.array).or_default().push(e.variable);
    }
    let structure = &mut Arc::make_mut(&mut component.description).model_structure;
    for unknown in &mut structure.outputs {
        let Some(deps) = &mut unknown.dependencies else {
            continue;
        };
        let mut added_kinds = Vec::new();
        for (k, d) in deps.clone().into_iter().enumerate() {
            if let Some(elements) = elements_of.get(&d) {
                deps.extend(elements);
                if let Some(kinds) = &unknown.dependencies_kind {
                    if let Some(&kind) = kinds.get(k) {
                        added_kinds.extend(std::iter::repeat_n(kind, elements.len()));
                    }
                }
            }
        }
        if let Some(kinds) = &mut unknown.dependencies_kind {
            kinds.extend(added_kinds);
        }
    }
    let mut added = Vec::new();
    for unknown in &structure.outputs {
        if let Some(elements) = elements_of.get(&unknown.variable) {
            for &e in elements {
                added.push(crate::fmu::description::Unknown {
                    variable: e,
                    ..unknown.clone()
                });
            }
        }
    }
    structure.outputs.extend(added);
}

/// Index of the variable a connection end names; an element of an array (`a.y[2]`) is
/// refused by name (connections join whole arrays).
fn find_end(
    end: &super::Endpoint,
    fmu: &std::path::Path,
    description: &ModelDescription,
) -> Result<usize> {
    let name = &end.variable;
    find_variable(&end.component, fmu, description, name, "variable").map_err(|e| {
        let base = name
            .strip_suffix(']')
            .and_then(|n| n.rsplit_once('['))
            .map(|(base, _)| base);
        match base.and_then(|b| description.variable(b)) {
            Some(array) if array.is_array() => Error::Usage(format!(
                "{end} names an element of array \"{}\": connections join whole arrays \
                 (element by element, to an array of the same size); connect {}.{} instead",
                array.name, end.component, array.name
            )),
            _ => e,
        }
    })
}

/// Index of variable `name` of `component`, or an error that suggests a close name.
fn find_variable(
    component: &str,
    fmu: &std::path::Path,
    description: &ModelDescription,
    name: &str,
    what: &str,
) -> Result<usize> {
    description.variable_index(name).ok_or_else(|| {
        let hint = match closest(name, description.variables.iter().map(|v| v.name.as_str())) {
            Some(s) => format!("; did you mean \"{s}\"?"),
            None => format!(
                "; run `cosimo inspect {}` to list its variables",
                fmu.display()
            ),
        };
        Error::Usage(format!(
            "component \"{component}\": {what} \"{name}\" does not exist in {}{hint}",
            description.model_name
        ))
    })
}

fn causality_name(c: Causality) -> &'static str {
    match c {
        Causality::Parameter => "parameter",
        Causality::CalculatedParameter => "calculated parameter",
        Causality::Input => "input",
        Causality::Output => "output",
        Causality::Local => "local variable",
        Causality::Independent => "independent variable",
        Causality::StructuralParameter => "structural parameter",
    }
}

fn is_integer(t: VariableType) -> bool {
    use VariableType::*;
    matches!(
        t,
        Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64
    )
}

fn is_numeric(t: VariableType) -> bool {
    t.is_float() || is_integer(t)
}

/// The connection's value map with each side parsed as its variable's type (Booleans, integers,
/// enumeration items by name or value).
fn value_map(
    c: &super::Connection,
    fmd: &ModelDescription,
    from: &Variable,
    tmd: &ModelDescription,
    to: &Variable,
) -> std::result::Result<Vec<(f64, f64)>, String> {
    if c.value_map.is_empty() {
        return Ok(Vec::new());
    }
    let mappable = |t: VariableType| {
        t == VariableType::Boolean || t == VariableType::Enumeration || is_integer(t)
    };
    if !mappable(from.var_type) || !mappable(to.var_type) {
        return Err(format!(
            "a value map needs Boolean, integer or enumeration variables, but {} is {} and {} is {}",
            c.from,
            from.var_type.fmi_name(fmd.fmi_version),
            c.to,
            to.var_type.fmi_name(tmd.fmi_version)
        ));
    }
    let number =
        |md: &ModelDescription, v: &Variable, text: &str| -> std::result::Result<f64, String> {
            match crate::fmu::values::parse_value(md, v, text).map_err(|e| e.to_string())? {
                StartValue::Bool(b) => Ok(if b.first() == Some(&true) { 1.0 } else { 0.0 }),
                StartValue::Int(i) => Ok(i.first().copied().unwrap_or(0) as f64),
                StartValue::UInt(u) => Ok(u.first().copied().unwrap_or(0) as f64),
                other => Err(format!(
                    "value map entry \"{text}\" of {} is {other:?}",
                    v.name
                )),
            }
        };
    c.value_map
        .iter()
        .map(|(s, t)| Ok((number(fmd, from, s)?, number(tmd, to, t)?)))
        .collect()
}

/// Whether a value of `from`'s type can be given to `to`.
fn check_types(
    fmd: &ModelDescription,
    from: &Variable,
    tmd: &ModelDescription,
    to: &Variable,
) -> std::result::Result<(), String> {
    use VariableType::*;
    let (a, b) = (from.var_type, to.var_type);
    if matches!(a, String | Binary) || matches!(b, String | Binary) {
        return Err(format!(
            "{} is {} and {} is {}: String and Binary connections are not supported yet \
             (cosimo exchanges numbers and Booleans between FMUs); set such inputs with a start value",
            from.name,
            a.fmi_name(fmd.fmi_version),
            to.name,
            b.fmi_name(tmd.fmi_version)
        ));
    }
    let ok = match (a, b) {
        _ if a.is_float() && b.is_float() => true,
        _ if is_integer(a) && is_integer(b) => true,
        (Enumeration, Enumeration) => {
            if from.declared_type != to.declared_type {
                return Err(format!(
                    "enumeration types differ: {} has type {} and {} has type {}",
                    from.name,
                    from.declared_type.as_deref().unwrap_or("(none)"),
                    to.name,
                    to.declared_type.as_deref().unwrap_or("(none)")
                ));
            }
            true
        }
        (Enumeration, t) | (t, Enumeration) => is_integer(t),
        (Boolean, Boolean) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "types do not match: {} is {} but {} is {}; connect Float with Float, integers and \
             enumerations with each other, Boolean with Boolean",
            from.name,
            a.fmi_name(fmd.fmi_version),
            to.name,
            b.fmi_name(tmd.fmi_version)
        ))
    }
}
