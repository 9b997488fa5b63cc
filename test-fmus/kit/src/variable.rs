//! The variable table: the single description of a model's variables from which both model
//! descriptions, the instantiation token and every runtime check are derived.

use std::collections::{HashMap, HashSet};

/// Value reference of the independent variable `time`, which the kit adds to every model.
pub const TIME_VR: u32 = 0;

/// FMI data type of a variable (FMI 3 names; FMI 2 exposes `Float64` as `Real`, `Int32` as
/// `Integer`, `Boolean` and `String`, and leaves the other types out of its model description).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarType {
    /// 32-bit float.
    Float32,
    /// 64-bit float (FMI 2 `Real`).
    Float64,
    /// 8-bit signed integer.
    Int8,
    /// 8-bit unsigned integer.
    UInt8,
    /// 16-bit signed integer.
    Int16,
    /// 16-bit unsigned integer.
    UInt16,
    /// 32-bit signed integer (FMI 2 `Integer`).
    Int32,
    /// 32-bit unsigned integer.
    UInt32,
    /// 64-bit signed integer.
    Int64,
    /// 64-bit unsigned integer.
    UInt64,
    /// Boolean.
    Boolean,
    /// NUL-terminated string.
    String,
    /// Byte string (FMI 3 only).
    Binary,
    /// Enumeration (FMI 2 `Enumeration`, read and written as Integer; FMI 3 `Enumeration`,
    /// read and written as Int64); the variable names its [`EnumerationType`].
    Enumeration,
}

impl VarType {
    /// Element name in an FMI 3 model description.
    pub fn fmi3_name(self) -> &'static str {
        match self {
            VarType::Float32 => "Float32",
            VarType::Float64 => "Float64",
            VarType::Int8 => "Int8",
            VarType::UInt8 => "UInt8",
            VarType::Int16 => "Int16",
            VarType::UInt16 => "UInt16",
            VarType::Int32 => "Int32",
            VarType::UInt32 => "UInt32",
            VarType::Int64 => "Int64",
            VarType::UInt64 => "UInt64",
            VarType::Boolean => "Boolean",
            VarType::String => "String",
            VarType::Binary => "Binary",
            VarType::Enumeration => "Enumeration",
        }
    }

    /// Element name in an FMI 2 model description, `None` when FMI 2 has no such type.
    pub fn fmi2_name(self) -> Option<&'static str> {
        match self {
            VarType::Float64 => Some("Real"),
            VarType::Int32 => Some("Integer"),
            VarType::Boolean => Some("Boolean"),
            VarType::String => Some("String"),
            VarType::Enumeration => Some("Enumeration"),
            _ => None,
        }
    }

    /// Whether the type is a floating-point type (may be continuous).
    pub fn is_float(self) -> bool {
        matches!(self, VarType::Float32 | VarType::Float64)
    }

    /// Whether the type is an integer type.
    pub fn is_integer(self) -> bool {
        !self.is_float() && !matches!(self, VarType::Boolean | VarType::String | VarType::Binary)
    }

    /// Inclusive value range of an integer type, as i128 so that every type fits.
    pub(crate) fn int_range(self) -> (i128, i128) {
        match self {
            VarType::Int8 => (i8::MIN.into(), i8::MAX.into()),
            VarType::UInt8 => (0, u8::MAX.into()),
            VarType::Int16 => (i16::MIN.into(), i16::MAX.into()),
            VarType::UInt16 => (0, u16::MAX.into()),
            VarType::Int32 => (i32::MIN.into(), i32::MAX.into()),
            VarType::UInt32 => (0, u32::MAX.into()),
            VarType::Int64 | VarType::Enumeration => (i64::MIN.into(), i64::MAX.into()),
            VarType::UInt64 => (0, u64::MAX.into()),
            _ => (0, 0),
        }
    }
}

/// FMI causality.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Causality {
    /// Independent parameter.
    Parameter,
    /// FMI 3 structural parameter: set only in Configuration Mode (FMI 2 has none and shows it
    /// as an ordinary fixed `parameter`, set before initialization).
    StructuralParameter,
    /// Parameter computed from other parameters.
    CalculatedParameter,
    /// Input.
    Input,
    /// Output.
    Output,
    /// Local (not connected).
    Local,
    /// The independent variable (time).
    Independent,
}

impl Causality {
    /// The `causality` attribute in the FMI 3 (`fmi2` false) or FMI 2 model description.
    fn xml(self, fmi2: bool) -> &'static str {
        match self {
            Causality::Parameter => "parameter",
            Causality::StructuralParameter if fmi2 => "parameter",
            Causality::StructuralParameter => "structuralParameter",
            Causality::CalculatedParameter => "calculatedParameter",
            Causality::Input => "input",
            Causality::Output => "output",
            Causality::Local => "local",
            Causality::Independent => "independent",
        }
    }
}

/// FMI variability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variability {
    /// Never changes.
    Constant,
    /// Fixed after initialization.
    Fixed,
    /// Changes only at events, set by the importer.
    Tunable,
    /// Changes only at events.
    Discrete,
    /// Changes continuously.
    Continuous,
}

impl Variability {
    fn xml(self) -> &'static str {
        match self {
            Variability::Constant => "constant",
            Variability::Fixed => "fixed",
            Variability::Tunable => "tunable",
            Variability::Discrete => "discrete",
            Variability::Continuous => "continuous",
        }
    }
}

/// FMI `initial` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Initial {
    /// Initialized with the start value.
    Exact,
    /// Start value is a guess the model may change.
    Approx,
    /// Computed during initialization.
    Calculated,
}

impl Initial {
    fn xml(self) -> &'static str {
        match self {
            Initial::Exact => "exact",
            Initial::Approx => "approx",
            Initial::Calculated => "calculated",
        }
    }
}

/// A start value; converted to the variable's type when the table is built.
#[derive(Clone, Debug, PartialEq)]
pub enum Start {
    /// Floating-point start values.
    Float(Vec<f64>),
    /// Integer start values (any integer type).
    Int(Vec<i128>),
    /// Boolean start values.
    Bool(Vec<bool>),
    /// String start values.
    Str(Vec<String>),
    /// Binary start values.
    Binary(Vec<Vec<u8>>),
}

impl Start {
    pub(crate) fn len(&self) -> usize {
        match self {
            Start::Float(v) => v.len(),
            Start::Int(v) => v.len(),
            Start::Bool(v) => v.len(),
            Start::Str(v) => v.len(),
            Start::Binary(v) => v.len(),
        }
    }
}

impl From<f64> for Start {
    fn from(x: f64) -> Self {
        Start::Float(vec![x])
    }
}
impl From<f32> for Start {
    fn from(x: f32) -> Self {
        Start::Float(vec![x.into()])
    }
}
impl From<Vec<f64>> for Start {
    fn from(x: Vec<f64>) -> Self {
        Start::Float(x)
    }
}
impl From<&[f64]> for Start {
    fn from(x: &[f64]) -> Self {
        Start::Float(x.to_vec())
    }
}
macro_rules! start_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Start {
            fn from(x: $t) -> Self { Start::Int(vec![x.into()]) }
        }
        impl From<Vec<$t>> for Start {
            fn from(x: Vec<$t>) -> Self { Start::Int(x.into_iter().map(Into::into).collect()) }
        }
    )*};
}
start_from_int!(i8, u8, i16, u16, i32, u32, i64, u64);
impl From<bool> for Start {
    fn from(x: bool) -> Self {
        Start::Bool(vec![x])
    }
}
impl From<Vec<bool>> for Start {
    fn from(x: Vec<bool>) -> Self {
        Start::Bool(x)
    }
}
impl From<&str> for Start {
    fn from(x: &str) -> Self {
        Start::Str(vec![x.to_owned()])
    }
}
impl From<Vec<&str>> for Start {
    fn from(x: Vec<&str>) -> Self {
        Start::Str(x.into_iter().map(str::to_owned).collect())
    }
}

/// A named enumeration type (`TypeDefinitions`: FMI 2 `SimpleType` with `Enumeration`,
/// FMI 3 `EnumerationType`), given to [`Variable::enumeration`]. Values are the items' values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EnumerationType {
    /// Type name (the variables' `declaredType`).
    pub name: String,
    /// Items as (name, value), in declaration order.
    pub items: Vec<(String, i64)>,
}

impl EnumerationType {
    /// A type with the given items.
    pub fn new(name: &str, items: &[(&str, i64)]) -> Self {
        EnumerationType {
            name: name.to_owned(),
            items: items.iter().map(|&(n, v)| (n.to_owned(), v)).collect(),
        }
    }

    /// Whether `value` is the value of an item.
    pub fn contains(&self, value: i64) -> bool {
        self.items.iter().any(|&(_, v)| v == value)
    }
}

/// One variable of a model, built with chained setters, e.g.
/// `Variable::float64(1, "m").parameter().start(1.0).unit("kg").min(0.0)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    /// Value reference (0 is reserved for `time`).
    pub vr: u32,
    /// Variable name.
    pub name: String,
    /// Data type.
    pub ty: VarType,
    /// Causality.
    pub causality: Causality,
    /// Variability; `None` picks the default for causality and type.
    pub variability: Option<Variability>,
    /// Initial; `None` picks the standard's default.
    pub initial: Option<Initial>,
    /// Start value.
    pub start: Option<Start>,
    /// Unit name (declared in `UnitDefinitions` automatically).
    pub unit: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Lower bound, checked on set.
    pub min: Option<f64>,
    /// Upper bound, checked on set.
    pub max: Option<f64>,
    /// Nominal value.
    pub nominal: Option<f64>,
    /// FMI 3 array dimensions (fixed sizes); empty for a scalar. Arrays are FMI 3 only.
    pub dims: Vec<usize>,
    /// For a state derivative: value reference of the state it is the derivative of.
    pub derivative_of: Option<u32>,
    /// For an output or state derivative: the inputs and states it depends on
    /// (`None` = depends on all of them).
    pub dependencies: Option<Vec<u32>>,
    /// FMI 3: an input the FMU requests through the intermediate-update callback.
    pub intermediate_update: bool,
    /// For an Enumeration variable: its type (written to `TypeDefinitions`).
    pub declared_type: Option<EnumerationType>,
    /// For a continuous state: the model may reinitialise it at events (`reinit="true"`).
    pub reinit: bool,
    /// FMI 3 `<Alias>` names of this variable (FMI 2 has no such element: left out there).
    pub aliases: Vec<String>,
    /// FMI 3 `clocks`: the value references of the clocks this variable is clocked by (see
    /// [`crate::clock`]); FMI 2 shows it as an ordinary discrete variable.
    pub clocks: Vec<u32>,
    /// FMI 3: the structural parameter (value reference) whose value is the size of this
    /// one-dimensional array (`<Dimension valueReference>`); `dims` holds its start value.
    pub sized_by: Option<u32>,
}

macro_rules! ctor {
    ($($f:ident => $t:ident),*) => {$(
        #[doc = concat!("A new `", stringify!($t), "` variable (local, no start).")]
        pub fn $f(vr: u32, name: &str) -> Self { Self::new(vr, name, VarType::$t) }
    )*};
}

impl Variable {
    /// A new local variable of the given type.
    pub fn new(vr: u32, name: &str, ty: VarType) -> Self {
        Variable {
            vr,
            name: name.to_owned(),
            ty,
            causality: Causality::Local,
            variability: None,
            initial: None,
            start: None,
            unit: None,
            description: None,
            min: None,
            max: None,
            nominal: None,
            dims: Vec::new(),
            derivative_of: None,
            dependencies: None,
            intermediate_update: false,
            declared_type: None,
            reinit: false,
            aliases: Vec::new(),
            clocks: Vec::new(),
            sized_by: None,
        }
    }

    /// A new Enumeration variable of the type `ty` (local, no start).
    pub fn enumeration(vr: u32, name: &str, ty: &EnumerationType) -> Self {
        let mut v = Self::new(vr, name, VarType::Enumeration);
        v.declared_type = Some(ty.clone());
        v
    }

    ctor!(float32 => Float32, float64 => Float64, int8 => Int8, uint8 => UInt8, int16 => Int16,
          uint16 => UInt16, int32 => Int32, uint32 => UInt32, int64 => Int64, uint64 => UInt64,
          boolean => Boolean, string => String, binary => Binary);

    /// FMI 3: clocked by the clocks `vrs` (a discrete variable that changes, or an input that
    /// may be set, only while one of them ticks).
    pub fn clocked_by(mut self, vrs: &[u32]) -> Self {
        self.clocks = vrs.to_vec();
        self.discrete()
    }

    /// Fixed parameter (set before or during initialization only).
    pub fn parameter(mut self) -> Self {
        self.causality = Causality::Parameter;
        self.variability = Some(Variability::Fixed);
        self
    }
    /// Tunable parameter (may also be set after initialization).
    pub fn tunable(mut self) -> Self {
        self.causality = Causality::Parameter;
        self.variability = Some(Variability::Tunable);
        self
    }
    /// FMI 3 structural parameter with variability fixed: set only in Configuration Mode,
    /// before initialization (in FMI 2 an ordinary fixed parameter). Scalars only; the kit has
    /// no Reconfiguration Mode, so it cannot be tunable.
    pub fn structural_parameter(mut self) -> Self {
        self.causality = Causality::StructuralParameter;
        self.variability = Some(Variability::Fixed);
        self
    }
    /// Calculated parameter.
    pub fn calculated_parameter(mut self) -> Self {
        self.causality = Causality::CalculatedParameter;
        self.variability = Some(Variability::Fixed);
        self
    }
    /// Input.
    pub fn input(mut self) -> Self {
        self.causality = Causality::Input;
        self
    }
    /// Output.
    pub fn output(mut self) -> Self {
        self.causality = Causality::Output;
        self
    }
    /// Local variable.
    pub fn local(mut self) -> Self {
        self.causality = Causality::Local;
        self
    }
    /// Sets the variability explicitly.
    pub fn variability(mut self, v: Variability) -> Self {
        self.variability = Some(v);
        self
    }
    /// Discrete variability.
    pub fn discrete(self) -> Self {
        self.variability(Variability::Discrete)
    }
    /// Constant (needs a start value).
    pub fn constant(self) -> Self {
        self.variability(Variability::Constant)
    }
    /// Sets `initial` explicitly.
    pub fn initial(mut self, i: Initial) -> Self {
        self.initial = Some(i);
        self
    }
    /// Start value (a scalar or, for arrays, all elements in row-major order).
    pub fn start(mut self, s: impl Into<Start>) -> Self {
        self.start = Some(s.into());
        self
    }
    /// Start value of a scalar Binary variable.
    pub fn start_binary(mut self, bytes: &[u8]) -> Self {
        self.start = Some(Start::Binary(vec![bytes.to_vec()]));
        self
    }
    /// Unit name.
    pub fn unit(mut self, u: &str) -> Self {
        self.unit = Some(u.to_owned());
        self
    }
    /// Description.
    pub fn description(mut self, d: &str) -> Self {
        self.description = Some(d.to_owned());
        self
    }
    /// Lower bound.
    pub fn min(mut self, m: f64) -> Self {
        self.min = Some(m);
        self
    }
    /// Upper bound.
    pub fn max(mut self, m: f64) -> Self {
        self.max = Some(m);
        self
    }
    /// Nominal value.
    pub fn nominal(mut self, n: f64) -> Self {
        self.nominal = Some(n);
        self
    }
    /// FMI 3 array dimensions.
    pub fn dims(mut self, d: &[usize]) -> Self {
        self.dims = d.to_vec();
        self
    }
    /// FMI 3: a one-dimensional array whose size is the value of the UInt64 structural
    /// parameter `parameter_vr`, set in Configuration Mode (its start value until then). The
    /// array's elements start from its start value where it has them, else from 0; such an
    /// array cannot be a state or a derivative.
    pub fn sized_by(mut self, parameter_vr: u32) -> Self {
        self.sized_by = Some(parameter_vr);
        self
    }
    /// Marks this variable as the derivative of the state `state_vr`.
    pub fn derivative_of(mut self, state_vr: u32) -> Self {
        self.derivative_of = Some(state_vr);
        self
    }
    /// Declares the inputs and states this output or derivative depends on.
    pub fn depends_on(mut self, vrs: &[u32]) -> Self {
        self.dependencies = Some(vrs.to_vec());
        self
    }
    /// FMI 3: the input is refreshed through the intermediate-update callback during a step.
    pub fn intermediate_update(mut self) -> Self {
        self.intermediate_update = true;
        self
    }

    /// Another name of this variable (an FMI 3 `<Alias>`; FMI 2 descriptions leave it out).
    pub fn alias(mut self, name: &str) -> Self {
        self.aliases.push(name.to_owned());
        self
    }

    /// Declares that event actions reinitialise this continuous state (`reinit="true"`).
    pub fn reinit(mut self) -> Self {
        self.reinit = true;
        self
    }

    /// Number of scalar elements (product of the dimensions).
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether the variable has no elements (a zero-sized array).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the variable appears in the FMI 2 model description.
    pub fn in_fmi2(&self) -> bool {
        self.ty.fmi2_name().is_some() && self.dims.is_empty()
    }

    /// Resolved variability.
    pub fn variability_resolved(&self) -> Variability {
        self.variability.unwrap_or(match self.causality {
            Causality::Parameter
            | Causality::StructuralParameter
            | Causality::CalculatedParameter => Variability::Fixed,
            Causality::Independent => Variability::Continuous,
            _ if self.ty.is_float() => Variability::Continuous,
            _ => Variability::Discrete,
        })
    }

    /// The `causality` attribute in the FMI 3 (`fmi2` false) or FMI 2 model description.
    pub(crate) fn causality_xml(&self, fmi2: bool) -> &'static str {
        self.causality.xml(fmi2)
    }
    pub(crate) fn variability_xml(&self) -> &'static str {
        self.variability_resolved().xml()
    }
    pub(crate) fn initial_xml(&self) -> Option<&'static str> {
        self.initial.map(Initial::xml)
    }
}

/// The validated variable table of one model, with the lookups the runtime needs.
#[derive(Debug)]
pub struct Table {
    /// Every variable, `time` first.
    pub vars: Vec<Variable>,
    index: HashMap<u32, usize>,
    /// Continuous states as (state index, derivative index) into `vars`, in declaration order
    /// (array states stand for all their elements, row-major).
    pub states: Vec<(usize, usize)>,
    /// Indices of the scalar Float64 inputs, whose values may follow a polynomial within a step.
    pub real_inputs: Vec<usize>,
    /// Instantiation token / GUID, a hash of the table.
    pub token: String,
}

impl Table {
    /// Validates a model's variables (prepending `time`) and resolves defaults.
    pub fn new(model_name: &str, mut vars: Vec<Variable>) -> Result<Table, String> {
        let time = Variable::float64(TIME_VR, "time")
            .description("Simulation time")
            .unit("s");
        let mut time = time;
        time.causality = Causality::Independent;
        vars.insert(0, time);
        size_by_parameters(&mut vars)?;
        let mut index = HashMap::new();
        let mut names = HashSet::new();
        for (i, v) in vars.iter_mut().enumerate() {
            let what = format!("variable '{}' (vr {})", v.name, v.vr);
            if index.insert(v.vr, i).is_some() {
                return Err(format!("{what}: duplicate value reference"));
            }
            if !names.insert(v.name.clone()) {
                return Err(format!("{what}: duplicate name"));
            }
            if v.dims.is_empty() {
                v.dims = Vec::new();
            }
            resolve_initial(v).map_err(|e| format!("{what}: {e}"))?;
            check_start(v).map_err(|e| format!("{what}: {e}"))?;
            if v.ty == VarType::Binary && !v.dims.is_empty() && v.start.is_none() {
                return Err(format!("{what}: Binary arrays need a start value"));
            }
            if v.intermediate_update && v.causality != Causality::Input {
                return Err(format!("{what}: only inputs may be intermediateUpdate"));
            }
            check_enumeration(v).map_err(|e| format!("{what}: {e}"))?;
            if v.causality == Causality::StructuralParameter {
                if !v.dims.is_empty() {
                    return Err(format!(
                        "{what}: a structural parameter must be a scalar (FMI 3.0: no Dimension)"
                    ));
                }
                if v.variability_resolved() != Variability::Fixed {
                    return Err(format!(
                        "{what}: structural parameters must be fixed (the kit has no \
                         Reconfiguration Mode for tunable ones)"
                    ));
                }
            }
        }
        let mut enum_types: HashMap<&str, &EnumerationType> = HashMap::new();
        for v in &vars {
            if let Some(t) = &v.declared_type {
                if enum_types.insert(&t.name, t).is_some_and(|old| old != t) {
                    return Err(format!(
                        "enumeration type '{}' is declared with different items",
                        t.name
                    ));
                }
            }
        }
        let mut states = Vec::new();
        for (i, v) in vars.iter().enumerate() {
            if let Some(s) = v.derivative_of {
                let &si = index
                    .get(&s)
                    .ok_or_else(|| format!("'{}': derivative of unknown vr {s}", v.name))?;
                let sv = &vars[si];
                if v.sized_by.is_some() || sv.sized_by.is_some() {
                    return Err(format!(
                        "'{}' / '{}': states and derivatives cannot be sized by a structural \
                         parameter (the integrators' state vectors have fixed sizes)",
                        v.name, sv.name
                    ));
                }
                let ok = |x: &Variable| {
                    x.ty == VarType::Float64 && x.variability_resolved() == Variability::Continuous
                };
                if !ok(v) || !ok(sv) || v.dims != sv.dims {
                    return Err(format!(
                        "'{}' / '{}': states and derivatives must be continuous Float64 \
                         scalars or arrays of the same dimensions",
                        v.name, sv.name
                    ));
                }
                states.push((si, i));
            }
        }
        let state_idx: HashSet<usize> = states.iter().map(|s| s.0).collect();
        if let Some((_, v)) = vars
            .iter()
            .enumerate()
            .find(|(i, v)| v.reinit && !state_idx.contains(i))
        {
            return Err(format!(
                "variable '{}' (vr {}): only continuous states may be reinit",
                v.name, v.vr
            ));
        }
        for v in &vars {
            if let Some(deps) = &v.dependencies {
                for d in deps {
                    let ok = index.get(d).is_some_and(|&j| {
                        vars[j].causality == Causality::Input || state_idx.contains(&j)
                    });
                    if !ok {
                        return Err(format!(
                            "'{}': dependency vr {d} is neither an input nor a state",
                            v.name
                        ));
                    }
                }
            }
        }
        let real_inputs = vars
            .iter()
            .enumerate()
            .filter(|(_, v)| {
                v.causality == Causality::Input && v.ty == VarType::Float64 && v.dims.is_empty()
            })
            .map(|(i, _)| i)
            .collect();
        let token = token_of(model_name, &vars);
        Ok(Table {
            vars,
            index,
            states,
            real_inputs,
            token,
        })
    }

    /// Index of a value reference in `vars`.
    pub fn index_of(&self, vr: u32) -> Option<usize> {
        self.index.get(&vr).copied()
    }

    /// The variable with a value reference.
    pub fn var(&self, vr: u32) -> Option<&Variable> {
        self.index_of(vr).map(|i| &self.vars[i])
    }

    /// Whether the model has structural parameters (FMI 3 Configuration Mode is then available).
    pub fn has_structural_parameters(&self) -> bool {
        self.vars
            .iter()
            .any(|v| v.causality == Causality::StructuralParameter)
    }

    /// Whether `vars[i]` is a continuous state.
    pub fn is_state(&self, i: usize) -> bool {
        self.states.iter().any(|s| s.0 == i)
    }

    /// Whether `vars[i]` is a state derivative.
    pub fn is_derivative(&self, i: usize) -> bool {
        self.states.iter().any(|s| s.1 == i)
    }

    /// Dependencies of `vars[i]` (explicit, or all inputs and states when undeclared).
    pub fn dependencies_of(&self, i: usize) -> Vec<u32> {
        match &self.vars[i].dependencies {
            Some(d) => d.clone(),
            None => self
                .vars
                .iter()
                .enumerate()
                .filter(|(j, v)| v.causality == Causality::Input || self.is_state(*j))
                .map(|(_, v)| v.vr)
                .collect(),
        }
    }

    /// Indices of the initial unknowns (outputs, calculated parameters, states and derivatives
    /// whose `initial` is approx or calculated), ascending.
    pub fn initial_unknowns(&self) -> Vec<usize> {
        (0..self.vars.len())
            .filter(|&i| {
                let v = &self.vars[i];
                let calc = matches!(v.initial, Some(Initial::Approx | Initial::Calculated));
                (v.causality == Causality::Output && calc)
                    || v.causality == Causality::CalculatedParameter
                    || ((self.is_state(i) || self.is_derivative(i)) && calc)
            })
            .collect()
    }
}

/// Applies the standard's default for `initial` and rejects combinations its tables forbid.
fn resolve_initial(v: &mut Variable) -> Result<(), String> {
    use Causality as C;
    use Variability as V;
    let var = v.variability_resolved();
    if !v.ty.is_float() && var == V::Continuous {
        return Err("only float variables may be continuous".into());
    }
    let allowed: &[Initial] = match (v.causality, var) {
        (C::Independent, _) => {
            if v.ty != VarType::Float64 || v.start.is_some() {
                return Err("the independent variable must be Float64 without start".into());
            }
            &[]
        }
        (C::Input, V::Constant | V::Fixed | V::Tunable) => {
            return Err("inputs must be discrete or continuous".into())
        }
        (C::Input, _) => &[],
        (C::Parameter | C::StructuralParameter, V::Fixed | V::Tunable) => &[Initial::Exact],
        (C::CalculatedParameter, V::Fixed | V::Tunable) => &[Initial::Calculated, Initial::Approx],
        (C::Parameter | C::StructuralParameter | C::CalculatedParameter, _) => {
            return Err("parameters must be fixed or tunable".into())
        }
        (C::Output | C::Local, V::Constant) => &[Initial::Exact],
        (C::Output, V::Fixed | V::Tunable) => {
            return Err("outputs cannot be fixed or tunable".into())
        }
        (C::Local, V::Fixed | V::Tunable) => &[Initial::Calculated, Initial::Approx],
        (C::Output | C::Local, _) => &[Initial::Calculated, Initial::Exact, Initial::Approx],
    };
    match (v.initial, allowed.first()) {
        (None, None) => {}
        (Some(_), None) => return Err("`initial` is not allowed for this causality".into()),
        (None, Some(&first)) => {
            v.initial = Some(if v.start.is_some() && first == Initial::Calculated {
                allowed.get(1).copied().unwrap_or(first)
            } else {
                first
            });
        }
        (Some(i), Some(_)) => {
            if !allowed.contains(&i) {
                return Err(format!("initial=\"{}\" is not allowed here", i.xml()));
            }
        }
    }
    Ok(())
}

/// Most elements an array sized by a structural parameter may take (1 Mi): a larger value is
/// refused on `fmi3ExitConfigurationMode`, as a real FMU refuses what it cannot allocate.
pub const MAX_CONFIGURED_ELEMENTS: u64 = 1 << 20;

/// Gives each array sized by a structural parameter ([`Variable::sized_by`]) the dimension of
/// that parameter's start value, after checking that the parameter is a scalar UInt64
/// structural parameter whose start lies in 1..=[`MAX_CONFIGURED_ELEMENTS`].
fn size_by_parameters(vars: &mut [Variable]) -> Result<(), String> {
    for i in 0..vars.len() {
        let Some(p) = vars[i].sized_by else { continue };
        let what = format!("variable '{}' (vr {})", vars[i].name, vars[i].vr);
        let parameter = vars
            .iter()
            .find(|v| v.vr == p)
            .ok_or_else(|| format!("{what}: sized by unknown vr {p}"))?;
        let start = match &parameter.start {
            Some(Start::Int(n)) if n.len() == 1 => n[0],
            _ => -1,
        };
        if parameter.causality != Causality::StructuralParameter
            || parameter.ty != VarType::UInt64
            || !parameter.dims.is_empty()
            || !(1..=i128::from(MAX_CONFIGURED_ELEMENTS)).contains(&start)
        {
            return Err(format!(
                "{what}: sized by '{}', which must be a scalar UInt64 structural parameter with a \
                 start value in 1..={MAX_CONFIGURED_ELEMENTS}",
                parameter.name
            ));
        }
        if vars[i].dims.len() > 1 {
            return Err(format!(
                "{what}: only one-dimensional arrays can be sized by a parameter"
            ));
        }
        vars[i].dims = vec![start as usize];
    }
    Ok(())
}

/// Checks presence, length and range of the start value and fills a default where the
/// standard allows none (calculated variables still need storage).
fn check_start(v: &mut Variable) -> Result<(), String> {
    let needs = v.causality == Causality::Input
        || matches!(v.initial, Some(Initial::Exact | Initial::Approx));
    let forbidden = v.causality == Causality::Independent || v.initial == Some(Initial::Calculated);
    match (&v.start, needs, forbidden) {
        (None, true, _) => return Err("a start value is required".into()),
        (Some(_), _, true) => return Err("a start value is not allowed here".into()),
        _ => {}
    }
    if let Some(s) = &v.start {
        if s.len() != v.len() {
            return Err(format!(
                "start has {} elements, expected {}",
                s.len(),
                v.len()
            ));
        }
        let ok = match (s, v.ty) {
            (Start::Float(_), t) => t.is_float(),
            (Start::Int(x), t) if t.is_integer() => {
                let (lo, hi) = t.int_range();
                x.iter().all(|&e| (lo..=hi).contains(&e))
            }
            (Start::Bool(_), VarType::Boolean) => true,
            (Start::Str(_), VarType::String) => true,
            (Start::Binary(_), VarType::Binary) => true,
            _ => false,
        };
        if !ok {
            return Err("start value does not fit the variable's type".into());
        }
    }
    Ok(())
}

/// An Enumeration variable needs a type with items, and its start values must be items;
/// other variables must not have a declared type.
fn check_enumeration(v: &Variable) -> Result<(), String> {
    match (&v.declared_type, v.ty == VarType::Enumeration) {
        (None, false) => Ok(()),
        (Some(_), false) => Err("only Enumeration variables have an enumeration type".into()),
        (None, true) => Err("an Enumeration variable needs its type".into()),
        (Some(t), true) => {
            if t.items.is_empty() {
                return Err(format!("enumeration type '{}' has no items", t.name));
            }
            let mut names = HashSet::new();
            if !t.items.iter().all(|(n, _)| names.insert(n)) {
                return Err(format!(
                    "enumeration type '{}' repeats an item name",
                    t.name
                ));
            }
            match &v.start {
                Some(Start::Int(x)) => match x
                    .iter()
                    .find(|&&e| !i64::try_from(e).is_ok_and(|e| t.contains(e)))
                {
                    Some(e) => Err(format!("start {e} is not an item of '{}'", t.name)),
                    None => Ok(()),
                },
                _ => Ok(()),
            }
        }
    }
}

/// FNV-1a, used for the instantiation token and to tag serialized states.
pub(crate) fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = seed;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A GUID-shaped token that changes whenever anything in the table changes.
fn token_of(model_name: &str, vars: &[Variable]) -> String {
    let text = format!("{model_name}\n{vars:?}");
    let a = fnv1a(0xcbf2_9ce4_8422_2325, text.as_bytes());
    let b = fnv1a(0x6c62_272e_07bb_0142, text.as_bytes());
    format!(
        "{{{:08x}-{:04x}-{:04x}-{:04x}-{:012x}}}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}
