//! The version-neutral model description: what an FMU says about itself, for FMI 2.0 and 3.0.
//!
//! References between variables (model structure, `derivative`, `previous`, clocks) are stored
//! as indices into [`ModelDescription::variables`], whatever the file used (FMI 2: 1-based
//! indices, FMI 3: value references), so that nothing downstream cares about the version.

use std::fmt;

/// A value reference: the handle by which an FMU's variables are read and written.
pub type ValueReference = u32;

/// The FMI major version a model description (and an instance) speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum FmiVersion {
    /// FMI 2.0
    Fmi2,
    /// FMI 3.0
    Fmi3,
}

impl fmt::Display for FmiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FmiVersion::Fmi2 => write!(f, "2.0"),
            FmiVersion::Fmi3 => write!(f, "3.0"),
        }
    }
}

/// Everything `modelDescription.xml` declares, in one shape for both FMI versions.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelDescription {
    /// The major version the file declares.
    pub fmi_version: FmiVersion,
    /// The `fmiVersion` attribute as written (e.g. "2.0", "3.0").
    pub fmi_version_string: String,
    /// `modelName`.
    pub model_name: String,
    /// FMI 2 `guid` or FMI 3 `instantiationToken`, passed back at instantiation.
    pub instantiation_token: String,
    /// `description`.
    pub description: Option<String>,
    /// `author`.
    pub author: Option<String>,
    /// `version` (of the model, not of FMI).
    pub version: Option<String>,
    /// `copyright`.
    pub copyright: Option<String>,
    /// `license`.
    pub license: Option<String>,
    /// `generationTool`.
    pub generation_tool: Option<String>,
    /// `generationDateAndTime`.
    pub generation_date_and_time: Option<String>,
    /// `variableNamingConvention` ("flat" or "structured").
    pub variable_naming_convention: Option<String>,
    /// The Co-Simulation interface, when the FMU offers one.
    pub co_simulation: Option<CoSimulation>,
    /// Model identifier of the Model Exchange interface, when offered (as written, even empty).
    pub model_exchange_identifier: Option<String>,
    /// The Model Exchange interface, when the FMU offers one with a model identifier.
    pub model_exchange: Option<ModelExchange>,
    /// Number of event indicators (FMI 2 `numberOfEventIndicators`, FMI 3 the
    /// `<EventIndicator>` elements of the model structure).
    pub number_of_event_indicators: usize,
    /// Model identifier of the Scheduled Execution interface (FMI 3), when offered.
    pub scheduled_execution_identifier: Option<String>,
    /// The Scheduled Execution interface (FMI 3), when the FMU offers one with a model
    /// identifier.
    pub scheduled_execution: Option<ScheduledExecution>,
    /// `UnitDefinitions`.
    pub units: Vec<Unit>,
    /// `TypeDefinitions`.
    pub type_definitions: Vec<TypeDefinition>,
    /// `LogCategories`.
    pub log_categories: Vec<LogCategory>,
    /// `DefaultExperiment`.
    pub default_experiment: Option<DefaultExperiment>,
    /// `ModelVariables`, in file order.
    pub variables: Vec<Variable>,
    /// `ModelStructure`.
    pub model_structure: ModelStructure,
}

/// Co-Simulation capabilities: the union of the FMI 2 and FMI 3 flags.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CoSimulation {
    /// `modelIdentifier`: the shared library's file stem and (FMI 2) the function prefix.
    pub model_identifier: String,
    /// `needsExecutionTool`.
    pub needs_execution_tool: bool,
    /// `canHandleVariableCommunicationStepSize`.
    pub can_handle_variable_communication_step_size: bool,
    /// FMI 3 `fixedInternalStepSize`.
    pub fixed_internal_step_size: Option<f64>,
    /// FMI 2 `canInterpolateInputs`.
    pub can_interpolate_inputs: bool,
    /// `maxOutputDerivativeOrder`.
    pub max_output_derivative_order: u32,
    /// FMI 2 `canRunAsynchronuously` (sic).
    pub can_run_asynchronuously: bool,
    /// `canBeInstantiatedOnlyOncePerProcess`.
    pub can_be_instantiated_only_once_per_process: bool,
    /// FMI 2 `canNotUseMemoryManagementFunctions`.
    pub can_not_use_memory_management_functions: bool,
    /// `canGetAndSetFMUstate` (FMI 2) / `canGetAndSetFMUState` (FMI 3).
    pub can_get_and_set_fmu_state: bool,
    /// `canSerializeFMUstate` (FMI 2) / `canSerializeFMUState` (FMI 3).
    pub can_serialize_fmu_state: bool,
    /// FMI 2 `providesDirectionalDerivative` / FMI 3 `providesDirectionalDerivatives`.
    pub provides_directional_derivatives: bool,
    /// FMI 3 `providesAdjointDerivatives`.
    pub provides_adjoint_derivatives: bool,
    /// FMI 3 `providesPerElementDependencies`.
    pub provides_per_element_dependencies: bool,
    /// FMI 3 `providesIntermediateUpdate`.
    pub provides_intermediate_update: bool,
    /// FMI 3 `mightReturnEarlyFromDoStep`.
    pub might_return_early_from_do_step: bool,
    /// FMI 3 `canReturnEarlyAfterIntermediateUpdate`.
    pub can_return_early_after_intermediate_update: bool,
    /// FMI 3 `hasEventMode`.
    pub has_event_mode: bool,
    /// FMI 3 `providesEvaluateDiscreteStates`.
    pub provides_evaluate_discrete_states: bool,
    /// FMI 3 `recommendedIntermediateInputSmoothness`.
    pub recommended_intermediate_input_smoothness: i32,
    /// A Scheduled Execution component's view ([`ModelDescription::for_interface`]): the
    /// instance activates the partitions of its time-based input clocks itself, so the
    /// system's clocks leave them alone.
    pub schedules_own_clocks: bool,
}

/// Scheduled Execution capabilities (FMI 3).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ScheduledExecution {
    /// `modelIdentifier`: the shared library's file stem.
    pub model_identifier: String,
    /// `needsExecutionTool`.
    pub needs_execution_tool: bool,
    /// `canBeInstantiatedOnlyOncePerProcess`.
    pub can_be_instantiated_only_once_per_process: bool,
    /// `canGetAndSetFMUState`.
    pub can_get_and_set_fmu_state: bool,
    /// `canSerializeFMUState`.
    pub can_serialize_fmu_state: bool,
    /// `providesDirectionalDerivatives`.
    pub provides_directional_derivatives: bool,
}

/// Model Exchange capabilities: the union of the FMI 2 and FMI 3 flags.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ModelExchange {
    /// `modelIdentifier`: the shared library's file stem and (FMI 2) the function prefix.
    pub model_identifier: String,
    /// `needsExecutionTool`.
    pub needs_execution_tool: bool,
    /// Whether `fmi*CompletedIntegratorStep` must be called after every integrator step (FMI 2
    /// `completedIntegratorStepNotNeeded` false, FMI 3 `needsCompletedIntegratorStep` true).
    pub needs_completed_integrator_step: bool,
    /// `canBeInstantiatedOnlyOncePerProcess`.
    pub can_be_instantiated_only_once_per_process: bool,
    /// `canGetAndSetFMUstate` (FMI 2) / `canGetAndSetFMUState` (FMI 3).
    pub can_get_and_set_fmu_state: bool,
    /// `canSerializeFMUstate` (FMI 2) / `canSerializeFMUState` (FMI 3).
    pub can_serialize_fmu_state: bool,
    /// FMI 2 `providesDirectionalDerivative` / FMI 3 `providesDirectionalDerivatives`.
    pub provides_directional_derivatives: bool,
}

/// Which of an FMU's interfaces a component uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Interface {
    /// Co-Simulation: the FMU integrates itself (`fmi*DoStep`).
    #[serde(rename = "cs")]
    CoSimulation,
    /// Model Exchange: cosimo integrates the FMU's equations with its own solver.
    #[serde(rename = "me")]
    ModelExchange,
    /// Scheduled Execution (FMI 3): cosimo activates the FMU's model partitions itself.
    #[serde(rename = "se")]
    ScheduledExecution,
}

impl Interface {
    /// Parse the command line's and the system file's spelling (`cs`, `me`).
    pub fn parse(text: &str) -> Option<Interface> {
        match text {
            "cs" => Some(Interface::CoSimulation),
            "me" => Some(Interface::ModelExchange),
            "se" => Some(Interface::ScheduledExecution),
            _ => None,
        }
    }
}

impl fmt::Display for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Interface::CoSimulation => "Co-Simulation",
            Interface::ModelExchange => "Model Exchange",
            Interface::ScheduledExecution => "Scheduled Execution",
        })
    }
}

/// A unit with its SI base-unit exponents and display units.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Unit {
    /// `name`.
    pub name: String,
    /// `BaseUnit`, when given.
    pub base_unit: Option<BaseUnit>,
    /// `DisplayUnit` children.
    pub display_units: Vec<DisplayUnit>,
}

/// SI exponents, factor and offset: value_in_SI = factor * value + offset.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BaseUnit {
    pub kg: i32,
    pub m: i32,
    pub s: i32,
    #[serde(rename = "A")]
    pub a: i32,
    #[serde(rename = "K")]
    pub k: i32,
    pub mol: i32,
    pub cd: i32,
    pub rad: i32,
    pub factor: f64,
    pub offset: f64,
}

impl Default for BaseUnit {
    fn default() -> Self {
        BaseUnit {
            kg: 0,
            m: 0,
            s: 0,
            a: 0,
            k: 0,
            mol: 0,
            cd: 0,
            rad: 0,
            factor: 1.0,
            offset: 0.0,
        }
    }
}

/// A display unit of a unit: display = factor * value + offset (or its inverse).
#[derive(Debug, Clone, serde::Serialize)]
pub struct DisplayUnit {
    pub name: String,
    pub factor: f64,
    pub offset: f64,
    /// FMI 3 `inverse`.
    pub inverse: bool,
}

/// A named type from `TypeDefinitions` (FMI 2 `SimpleType`, FMI 3 `Float64Type` etc.).
#[derive(Debug, Clone, serde::Serialize)]
pub struct TypeDefinition {
    pub name: String,
    pub var_type: VariableType,
    pub description: Option<String>,
    pub quantity: Option<String>,
    pub unit: Option<String>,
    pub display_unit: Option<String>,
    pub min: Option<String>,
    pub max: Option<String>,
    pub nominal: Option<f64>,
    /// Items of an enumeration type.
    pub items: Vec<EnumerationItem>,
    /// Clock attributes of an FMI 3 `ClockType`.
    pub clock: Option<ClockAttributes>,
}

/// One item of an enumeration type.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EnumerationItem {
    pub name: String,
    pub value: i64,
    pub description: Option<String>,
}

/// A log category the FMU can be asked to log.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LogCategory {
    pub name: String,
    pub description: Option<String>,
}

/// `DefaultExperiment`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DefaultExperiment {
    pub start_time: Option<f64>,
    pub stop_time: Option<f64>,
    pub tolerance: Option<f64>,
    pub step_size: Option<f64>,
}

/// The data type of a variable. FMI 2 `Real` is `Float64`, `Integer` is `Int32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum VariableType {
    Float32,
    Float64,
    Int8,
    UInt8,
    Int16,
    UInt16,
    Int32,
    UInt32,
    Int64,
    UInt64,
    Boolean,
    String,
    Binary,
    Enumeration,
    Clock,
}

impl VariableType {
    /// The name of the type as the FMI version writes it (`Real` for FMI 2 `Float64`, ...).
    pub fn fmi_name(self, version: FmiVersion) -> &'static str {
        use VariableType::*;
        match (version, self) {
            (FmiVersion::Fmi2, Float64) => "Real",
            (FmiVersion::Fmi2, Int32) => "Integer",
            (_, Float32) => "Float32",
            (_, Float64) => "Float64",
            (_, Int8) => "Int8",
            (_, UInt8) => "UInt8",
            (_, Int16) => "Int16",
            (_, UInt16) => "UInt16",
            (_, Int32) => "Int32",
            (_, UInt32) => "UInt32",
            (_, Int64) => "Int64",
            (_, UInt64) => "UInt64",
            (_, Boolean) => "Boolean",
            (_, String) => "String",
            (_, Binary) => "Binary",
            (_, Enumeration) => "Enumeration",
            (_, Clock) => "Clock",
        }
    }

    /// True for Float32 and Float64: the types that are interpolated rather than held.
    /// Whether the type is one of the integer types (enumerations included).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            VariableType::Int8
                | VariableType::UInt8
                | VariableType::Int16
                | VariableType::UInt16
                | VariableType::Int32
                | VariableType::UInt32
                | VariableType::Int64
                | VariableType::UInt64
                | VariableType::Enumeration
        )
    }

    pub fn is_float(self) -> bool {
        matches!(self, VariableType::Float32 | VariableType::Float64)
    }
}

/// `causality`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Causality {
    Parameter,
    CalculatedParameter,
    Input,
    Output,
    Local,
    Independent,
    StructuralParameter,
}

/// `variability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Variability {
    Constant,
    Fixed,
    Tunable,
    Discrete,
    Continuous,
}

/// `initial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Initial {
    Exact,
    Approx,
    Calculated,
}

/// A start value: scalar variables hold one element, FMI 3 arrays hold many (row-major).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum StartValue {
    Float(Vec<f64>),
    Int(Vec<i64>),
    UInt(Vec<u64>),
    Bool(Vec<bool>),
    String(Vec<String>),
    Binary(Vec<Vec<u8>>),
}

/// One array dimension of an FMI 3 variable: a fixed size or a structural parameter.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Dimension {
    /// `start`: a fixed size.
    pub start: Option<u64>,
    /// `valueReference` of the structural parameter that gives the size.
    pub value_reference: Option<ValueReference>,
}

/// One variable of `ModelVariables`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Variable {
    pub name: String,
    pub value_reference: ValueReference,
    pub description: Option<String>,
    pub var_type: VariableType,
    pub causality: Causality,
    pub variability: Variability,
    /// `initial` as declared (None when the attribute is absent; see [`Variable::effective_initial`]).
    pub initial: Option<Initial>,
    pub start: Option<StartValue>,
    /// `declaredType`.
    pub declared_type: Option<String>,
    pub quantity: Option<String>,
    pub unit: Option<String>,
    pub display_unit: Option<String>,
    /// `min` as written (its meaning depends on the type).
    pub min: Option<String>,
    /// `max` as written.
    pub max: Option<String>,
    pub nominal: Option<f64>,
    /// FMI 3 `Dimension` children; empty for scalars.
    pub dimensions: Vec<Dimension>,
    /// Index of the state this variable is the derivative of (`derivative` attribute).
    pub derivative: Option<usize>,
    /// `reinit`.
    pub reinit: bool,
    /// FMI 3 `intermediateUpdate`.
    pub intermediate_update: bool,
    /// FMI 3 `previous`: index of the variable holding this one's previous value.
    pub previous: Option<usize>,
    /// FMI 3 `clocks`: indices of the clocks this variable is associated with.
    pub clocks: Vec<usize>,
    /// FMI 2 `canHandleMultipleSetPerTimeInstant` / FMI 3 same.
    pub can_handle_multiple_set_per_time_instant: Option<bool>,
    /// FMI 2 alias handling: `alias` of the ScalarVariable, if any ("alias" / "negatedAlias").
    pub alias: Option<String>,
    /// Clock attributes (FMI 3 Clock variables only).
    pub clock: Option<ClockAttributes>,
    /// FMI 3 `<Alias>` children: other names of this variable.
    pub aliases: Vec<Alias>,
}

/// An FMI 3 `<Alias>`: another name of a variable, with its own description and display unit.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Alias {
    pub name: String,
    pub description: Option<String>,
    pub display_unit: Option<String>,
}

impl Variable {
    /// True when the variable is an FMI 3 array.
    pub fn is_array(&self) -> bool {
        !self.dimensions.is_empty()
    }

    /// `initial` as declared, or the standard's default for the causality and variability
    /// (None where no `initial` applies: inputs, the independent variable, invalid combinations).
    pub fn effective_initial(&self) -> Option<Initial> {
        use Causality as C;
        use Variability as V;
        if self.initial.is_some() {
            return self.initial;
        }
        match (self.causality, self.variability) {
            (C::Parameter | C::StructuralParameter, V::Fixed | V::Tunable) => Some(Initial::Exact),
            (C::Output | C::Local, V::Constant) => Some(Initial::Exact),
            (C::CalculatedParameter | C::Local, V::Fixed | V::Tunable) => Some(Initial::Calculated),
            (C::Output | C::Local, V::Discrete | V::Continuous) => Some(Initial::Calculated),
            _ => None,
        }
    }
}

/// Attributes of an FMI 3 `Clock` variable.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ClockAttributes {
    pub can_be_deactivated: bool,
    pub priority: Option<u32>,
    /// `intervalVariability`: constant, fixed, tunable, changing, countdown, triggered.
    pub interval_variability: Option<String>,
    pub interval_decimal: Option<f64>,
    pub shift_decimal: Option<f64>,
    pub supports_fraction: bool,
    pub resolution: Option<u64>,
    pub interval_counter: Option<u64>,
    pub shift_counter: Option<u64>,
}

/// How an unknown depends on a known (`dependenciesKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DependencyKind {
    Dependent,
    Constant,
    Fixed,
    Tunable,
    Discrete,
}

/// An unknown of the model structure with what it depends on.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Unknown {
    /// Index of the unknown into `ModelDescription::variables`.
    pub variable: usize,
    /// Indices of the knowns it depends on. `None`: the attribute was absent, which by the
    /// standard means it may depend on every known.
    pub dependencies: Option<Vec<usize>>,
    /// `dependenciesKind`, one per dependency, when given.
    pub dependencies_kind: Option<Vec<DependencyKind>>,
}

/// `ModelStructure`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ModelStructure {
    pub outputs: Vec<Unknown>,
    pub continuous_state_derivatives: Vec<Unknown>,
    /// FMI 3 `ClockedState`.
    pub clocked_states: Vec<Unknown>,
    pub initial_unknowns: Vec<Unknown>,
    /// FMI 3 `EventIndicator`.
    pub event_indicators: Vec<Unknown>,
}

impl ModelDescription {
    /// The variable with this name, if any.
    pub fn variable(&self, name: &str) -> Option<&Variable> {
        self.variable_index(name).map(|i| &self.variables[i])
    }

    /// Index of the variable with this name, or with an FMI 3 `<Alias>` of this name.
    pub fn variable_index(&self, name: &str) -> Option<usize> {
        self.variables
            .iter()
            .position(|v| v.name == name)
            .or_else(|| {
                self.variables
                    .iter()
                    .position(|v| v.aliases.iter().any(|a| a.name == name))
            })
    }

    /// Model identifier of the Co-Simulation interface, if the FMU has one.
    pub fn co_simulation_identifier(&self) -> Option<&str> {
        self.co_simulation
            .as_ref()
            .map(|cs| cs.model_identifier.as_str())
    }

    /// The interface a component uses when nothing chooses: Co-Simulation when the FMU has it,
    /// else Model Exchange, else Scheduled Execution (`None`: none of them).
    pub fn default_interface(&self) -> Option<Interface> {
        if self.co_simulation.is_some() {
            Some(Interface::CoSimulation)
        } else if self.model_exchange.is_some() {
            Some(Interface::ModelExchange)
        } else if self.scheduled_execution.is_some() {
            Some(Interface::ScheduledExecution)
        } else {
            None
        }
    }

    /// The description the masters see for a component that uses `interface`: this one for
    /// Co-Simulation; for Model Exchange a copy whose Co-Simulation capabilities are what the
    /// Model Exchange component offers (cosimo's integrator makes the steps: any step size,
    /// inputs that follow polynomials exactly, FMU states and directional derivatives as the
    /// Model Exchange interface declares them). `Err` says what the FMU lacks.
    pub fn for_interface(
        &self,
        interface: Interface,
    ) -> std::result::Result<ModelDescription, String> {
        match interface {
            Interface::CoSimulation => match &self.co_simulation {
                Some(_) => Ok(self.clone()),
                None => Err(format!(
                    "model \"{}\" has no Co-Simulation interface{}",
                    self.model_name,
                    if self.model_exchange.is_some() {
                        " (it has Model Exchange: use interface \"me\")"
                    } else {
                        ""
                    }
                )),
            },
            Interface::ModelExchange => {
                let Some(me) = &self.model_exchange else {
                    return Err(format!(
                        "model \"{}\" has no Model Exchange interface{}",
                        self.model_name,
                        if self.co_simulation.is_some() {
                            " (it has Co-Simulation: use interface \"cs\")"
                        } else {
                            ""
                        }
                    ));
                };
                let mut view = self.clone();
                view.co_simulation = Some(CoSimulation {
                    model_identifier: me.model_identifier.clone(),
                    needs_execution_tool: me.needs_execution_tool,
                    can_handle_variable_communication_step_size: true,
                    can_interpolate_inputs: true,
                    can_be_instantiated_only_once_per_process: me
                        .can_be_instantiated_only_once_per_process,
                    can_get_and_set_fmu_state: me.can_get_and_set_fmu_state,
                    can_serialize_fmu_state: false,
                    provides_directional_derivatives: me.provides_directional_derivatives,
                    // dy/dt = dy/dx x' from directional derivatives (see
                    // crate::fmu::model_exchange).
                    max_output_derivative_order: u32::from(me.provides_directional_derivatives),
                    ..CoSimulation::default()
                });
                Ok(view)
            }
            Interface::ScheduledExecution => self.scheduled_execution_view(),
        }
    }

    /// The view of a Scheduled Execution component ([`crate::fmu::scheduled`]): it steps to
    /// any time (running the partitions due on the way), saves no state, and takes ticks of
    /// its triggered input clocks in Event Mode. Variables clocked only by the clocks it
    /// schedules itself are plain discrete variables to the system: they change at the
    /// partitions' activations and are exchanged at communication points.
    fn scheduled_execution_view(&self) -> std::result::Result<ModelDescription, String> {
        let Some(se) = &self.scheduled_execution else {
            return Err(format!(
                "model \"{}\" has no Scheduled Execution interface",
                self.model_name
            ));
        };
        let mut view = self.clone();
        view.co_simulation = Some(CoSimulation {
            model_identifier: se.model_identifier.clone(),
            needs_execution_tool: se.needs_execution_tool,
            can_handle_variable_communication_step_size: true,
            can_be_instantiated_only_once_per_process: se.can_be_instantiated_only_once_per_process,
            has_event_mode: true,
            schedules_own_clocks: true,
            ..CoSimulation::default()
        });
        let own: Vec<usize> = (0..self.variables.len())
            .filter(|&i| self.is_scheduled_clock(i))
            .collect();
        for v in &mut view.variables {
            if !v.clocks.is_empty() && v.clocks.iter().all(|c| own.contains(c)) {
                v.clocks.clear();
            }
        }
        Ok(view)
    }

    /// Whether variable `index` is an input clock whose ticks come from time (periodic,
    /// changing or countdown): a Scheduled Execution instance activates those partitions.
    pub fn is_scheduled_clock(&self, index: usize) -> bool {
        let v = &self.variables[index];
        v.var_type == VariableType::Clock
            && v.causality == Causality::Input
            && v.clock
                .as_ref()
                .and_then(|c| c.interval_variability.as_deref())
                .is_some_and(|kind| kind != "triggered")
    }

    /// The output's declared dependencies on inputs (direct feedthrough), as variable indices.
    /// `None` when the output is not listed or lists no dependencies attribute (depends on all).
    pub fn output_dependencies(&self, output: usize) -> Option<&[usize]> {
        self.model_structure
            .outputs
            .iter()
            .find(|u| u.variable == output)
            .and_then(|u| u.dependencies.as_deref())
    }
}
