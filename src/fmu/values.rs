//! Typed access to variables by their description: parse a user's text into a value of the
//! variable's type, write it to a slave, read it back. Scalars are one-element vectors; FMI 3
//! arrays hold all their elements, row-major.

use super::description::{
    Causality, ModelDescription, StartValue, Variability, Variable, VariableType,
};
use super::Slave;
use crate::error::{Error, Result};

/// The size a dimension gives: its fixed `start`, or the start value of the structural
/// parameter it references (`None` when neither is usable).
pub fn dimension_size(
    description: &ModelDescription,
    dimension: &super::description::Dimension,
) -> Option<u64> {
    dimension.start.or_else(|| {
        let vr = dimension.value_reference?;
        let parameter = description
            .variables
            .iter()
            .find(|v| v.value_reference == vr)?;
        match parameter.start.as_ref()? {
            StartValue::UInt(values) => values.first().copied(),
            StartValue::Int(values) => values.first().and_then(|&n| u64::try_from(n).ok()),
            _ => None,
        }
    })
}

/// Most elements one array variable may have (16 Mi: 128 MiB as Float64). Sizes come from the
/// model description, so a hostile or broken one could otherwise ask for terabytes.
pub const MAX_ARRAY_ELEMENTS: u64 = 1 << 24;

/// Number of scalar elements of a variable: 1 for scalars, the product of the dimensions for
/// FMI 3 arrays (a dimension given by a structural parameter uses that parameter's start). An
/// array above [`MAX_ARRAY_ELEMENTS`] is an error naming the model, variable and dimension.
pub fn element_count(description: &ModelDescription, variable: &Variable) -> Result<usize> {
    let mut count: u64 = 1;
    for (i, dimension) in variable.dimensions.iter().enumerate() {
        let size = match (dimension_size(description, dimension), dimension.value_reference) {
            (Some(size), _) => size,
            (None, Some(vr)) => {
                return Err(Error::Usage(format!(
                    "{}: the size of array \"{}\" is given by structural parameter with value reference {vr}, which has no usable start value",
                    description.model_name, variable.name
                )))
            }
            (None, None) => {
                return Err(Error::Usage(format!(
                    "{}: a Dimension of array \"{}\" has neither start nor valueReference",
                    description.model_name, variable.name
                )))
            }
        };
        count = grow(description, variable, i, count, size)?;
    }
    // At most MAX_ARRAY_ELEMENTS, which fits every usize of 32 bits or more.
    usize::try_from(count).map_err(|_| too_large(description, variable, 0, count))
}

/// Parse the texts given for variables `(index, text)` as a run sets them: structural
/// parameters first, then the other values against the description they configure (an array
/// a structural parameter sizes takes the configured size, see [`configured_description`]).
/// Returns the configured description (`None`: as given) and the values in the given order.
pub fn parse_start_values(
    description: &ModelDescription,
    given: &[(usize, &str)],
) -> Result<(Option<ModelDescription>, Vec<StartValue>)> {
    let structural =
        |i: usize| description.variables[i].causality == Causality::StructuralParameter;
    let mut values: Vec<Option<StartValue>> = vec![None; given.len()];
    let mut sizes = Vec::new();
    for (k, &(index, text)) in given.iter().enumerate() {
        if structural(index) {
            let value = parse_value(description, &description.variables[index], text)?;
            sizes.push((index, value.clone()));
            values[k] = Some(value);
        }
    }
    let configured = configured_description(description, &sizes)?;
    let counted = configured.as_ref().unwrap_or(description);
    for (k, &(index, text)) in given.iter().enumerate() {
        if values[k].is_none() {
            values[k] = Some(parse_value(counted, &counted.variables[index], text)?);
        }
    }
    Ok((configured, values.into_iter().flatten().collect()))
}

/// The description as configured: every structural parameter that sizes an array (named by a
/// `<Dimension valueReference>`) and has a value among `values` (variable index, value: what
/// the user gives, set in Configuration Mode) takes that value as its start, so that
/// [`element_count`] and [`dimension_size`] count the size the FMU has after Configuration
/// Mode. `None` when no given value sizes an array. A size outside 1..=[`MAX_ARRAY_ELEMENTS`]
/// (or an array that grows beyond it) is an error naming the parameter, the array and the
/// limit.
pub fn configured_description(
    description: &ModelDescription,
    values: &[(usize, StartValue)],
) -> Result<Option<ModelDescription>> {
    let sizes: Vec<_> = values
        .iter()
        .filter(|(i, _)| {
            let vr = description.variables[*i].value_reference;
            description
                .variables
                .iter()
                .flat_map(|v| &v.dimensions)
                .any(|d| d.start.is_none() && d.value_reference == Some(vr))
        })
        .collect();
    if sizes.is_empty() {
        return Ok(None);
    }
    let mut configured = description.clone();
    for (i, value) in sizes {
        let parameter = &description.variables[*i];
        let size = match value {
            StartValue::UInt(v) if v.len() == 1 => Some(i128::from(v[0])),
            StartValue::Int(v) if v.len() == 1 => Some(i128::from(v[0])),
            _ => None,
        };
        let sized: Vec<String> = description
            .variables
            .iter()
            .filter(|v| {
                v.dimensions.iter().any(|d| {
                    d.start.is_none() && d.value_reference == Some(parameter.value_reference)
                })
            })
            .map(|v| format!("\"{}\"", v.name))
            .collect();
        let limit = i128::from(MAX_ARRAY_ELEMENTS);
        match size {
            Some(n) if (1..=limit).contains(&n) => {}
            _ => {
                return Err(Error::Usage(format!(
                    "{}: structural parameter \"{}\" = {} sizes array {}: give a size in \
                     1..={MAX_ARRAY_ELEMENTS}, the most cosimo allocates for one variable",
                    description.model_name,
                    parameter.name,
                    start_value_text(value),
                    sized.join(", ")
                )))
            }
        }
        configured.variables[*i].start = Some(value.clone());
    }
    for variable in &configured.variables {
        element_count(&configured, variable)?;
    }
    Ok(Some(configured))
}

/// Refuse an array whose declared size exceeds [`MAX_ARRAY_ELEMENTS`] (a dimension without a
/// usable size counts as 1 here: [`element_count`] reports it where the size is needed).
pub fn check_array_size(description: &ModelDescription, variable: &Variable) -> Result<()> {
    let mut count: u64 = 1;
    for (i, dimension) in variable.dimensions.iter().enumerate() {
        let size = dimension_size(description, dimension).unwrap_or(1);
        count = grow(description, variable, i, count, size)?;
    }
    Ok(())
}

/// `count` elements times the `size` of dimension `i`, if that stays within the limit.
fn grow(
    description: &ModelDescription,
    variable: &Variable,
    i: usize,
    count: u64,
    size: u64,
) -> Result<u64> {
    count
        .checked_mul(size)
        .filter(|&n| n <= MAX_ARRAY_ELEMENTS)
        .ok_or_else(|| too_large(description, variable, i, size))
}

fn too_large(description: &ModelDescription, variable: &Variable, i: usize, size: u64) -> Error {
    let given_by = match variable.dimensions.get(i) {
        Some(d) if d.start.is_none() => d
            .value_reference
            .map(|vr| format!(" (the start value of structural parameter {vr})"))
            .unwrap_or_default(),
        _ => String::new(),
    };
    Error::Usage(format!(
        "{}: array \"{}\" is too large: its dimension {} of {} has size {size}{given_by}, which makes more than {MAX_ARRAY_ELEMENTS} elements, the most cosimo allocates for one variable; check the <Dimension> elements of the model description",
        description.model_name,
        variable.name,
        i + 1,
        variable.dimensions.len()
    ))
}

/// Parse a user's text (`--start-value NAME=TEXT`, a parameter in a system file) into a value of
/// the variable's type. Arrays take space-separated elements; Booleans `true`/`false`/`1`/`0`;
/// enumerations an integer or an item name; Binary hex digits.
pub fn parse_value(
    description: &ModelDescription,
    variable: &Variable,
    text: &str,
) -> Result<StartValue> {
    let count = element_count(description, variable)?;
    // An enumeration item's name may contain spaces ("Option 2"): a whole-text match wins.
    let whole_item = variable.var_type == VariableType::Enumeration
        && variable
            .declared_type
            .as_deref()
            .and_then(|t| description.type_definitions.iter().find(|d| d.name == t))
            .is_some_and(|d| d.items.iter().any(|i| i.name == text.trim()));
    let elements: Vec<&str> = if variable.var_type == VariableType::String || whole_item {
        vec![text.trim()]
    } else {
        text.split_whitespace().collect()
    };
    let type_name = variable.var_type.fmi_name(description.fmi_version);
    let wrong = |what: &str| {
        Error::Usage(format!(
            "{}: \"{text}\" is not a valid value for {type_name} variable \"{}\" ({what})",
            description.model_name, variable.name
        ))
    };
    if variable.var_type != VariableType::String && elements.len() != count {
        return Err(wrong(&if count == 1 {
            "expected one value".to_string()
        } else {
            format!(
                "expected {count} space-separated values for the array, got {}",
                elements.len()
            )
        }));
    }
    use VariableType::*;
    Ok(match variable.var_type {
        Float32 | Float64 => StartValue::Float(
            elements
                .iter()
                .map(|e| e.parse::<f64>().map_err(|_| wrong("expected a number")))
                .collect::<Result<_>>()?,
        ),
        Int8 | Int16 | Int32 | Int64 => {
            let (min, max) = int_range(variable.var_type);
            StartValue::Int(
                elements
                    .iter()
                    .map(|e| match e.parse::<i64>() {
                        Ok(v) if (min..=max).contains(&v) => Ok(v),
                        Ok(_) => Err(wrong(&format!("out of range {min}..={max}"))),
                        Err(_) => Err(wrong("expected an integer")),
                    })
                    .collect::<Result<_>>()?,
            )
        }
        UInt8 | UInt16 | UInt32 | UInt64 => {
            let max = uint_max(variable.var_type);
            StartValue::UInt(
                elements
                    .iter()
                    .map(|e| match e.parse::<u64>() {
                        Ok(v) if v <= max => Ok(v),
                        Ok(_) => Err(wrong(&format!("out of range 0..={max}"))),
                        Err(_) => Err(wrong("expected a non-negative integer")),
                    })
                    .collect::<Result<_>>()?,
            )
        }
        Boolean => StartValue::Bool(
            elements
                .iter()
                .map(|e| match *e {
                    "true" | "1" => Ok(true),
                    "false" | "0" => Ok(false),
                    _ => Err(wrong("expected true, false, 1 or 0")),
                })
                .collect::<Result<_>>()?,
        ),
        String => StartValue::String(vec![text.to_string()]),
        Binary => StartValue::Binary(
            elements
                .iter()
                .map(|e| parse_hex(e).ok_or_else(|| wrong("expected hexadecimal digits")))
                .collect::<Result<_>>()?,
        ),
        Enumeration => {
            let items = variable
                .declared_type
                .as_deref()
                .and_then(|t| description.type_definitions.iter().find(|d| d.name == t))
                .map(|d| d.items.as_slice())
                .unwrap_or(&[]);
            StartValue::Int(
                elements
                    .iter()
                    .map(|e| {
                        e.parse::<i64>()
                            .ok()
                            .or_else(|| items.iter().find(|i| i.name == *e).map(|i| i.value))
                            .ok_or_else(|| {
                                let names: Vec<&str> =
                                    items.iter().map(|i| i.name.as_str()).collect();
                                wrong(&format!(
                                    "expected an integer or one of the items {names:?}"
                                ))
                            })
                    })
                    .collect::<Result<_>>()?,
            )
        }
        Clock => return Err(wrong("clocks cannot be given values")),
    })
}

/// Number of elements of a typed value.
pub fn start_value_len(value: &StartValue) -> usize {
    match value {
        StartValue::Float(v) => v.len(),
        StartValue::Int(v) => v.len(),
        StartValue::UInt(v) => v.len(),
        StartValue::Bool(v) => v.len(),
        StartValue::String(v) => v.len(),
        StartValue::Binary(v) => v.len(),
    }
}

/// A typed value made to fit a variable of `count` elements: integers become numbers for a
/// Float variable and signed or unsigned as the type is, every integer within the type's
/// range; the error says what does not fit.
pub fn fit_value(
    variable: &Variable,
    value: &StartValue,
    count: usize,
) -> std::result::Result<StartValue, String> {
    use VariableType::*;
    let len = start_value_len(value);
    if len != count {
        return Err(format!(
            "{len} value(s) for a variable of {count} element(s)"
        ));
    }
    let integers: Option<Vec<i128>> = match value {
        StartValue::Int(v) => Some(v.iter().map(|&x| i128::from(x)).collect()),
        StartValue::UInt(v) => Some(v.iter().map(|&x| i128::from(x)).collect()),
        _ => None,
    };
    let out_of_range = |bad: i128| {
        format!(
            "{bad} is out of the range of the {:?} variable \"{}\"",
            variable.var_type, variable.name
        )
    };
    let fitted = match (variable.var_type, value, integers) {
        (Float32 | Float64, StartValue::Float(_), _) => Some(value.clone()),
        (Float32 | Float64, _, Some(v)) => {
            Some(StartValue::Float(v.into_iter().map(|x| x as f64).collect()))
        }
        (Int8 | Int16 | Int32 | Int64 | Enumeration, _, Some(v)) => {
            let (min, max) = int_range(variable.var_type);
            let range = i128::from(min)..=i128::from(max);
            if let Some(&bad) = v.iter().find(|x| !range.contains(x)) {
                return Err(out_of_range(bad));
            }
            Some(StartValue::Int(v.into_iter().map(|x| x as i64).collect()))
        }
        (UInt8 | UInt16 | UInt32 | UInt64, _, Some(v)) => {
            let range = 0..=i128::from(uint_max(variable.var_type));
            if let Some(&bad) = v.iter().find(|x| !range.contains(x)) {
                return Err(out_of_range(bad));
            }
            Some(StartValue::UInt(v.into_iter().map(|x| x as u64).collect()))
        }
        (Boolean, StartValue::Bool(_), _)
        | (String, StartValue::String(_), _)
        | (Binary, StartValue::Binary(_), _) => Some(value.clone()),
        _ => None,
    };
    fitted.ok_or_else(|| {
        let kind = match value {
            StartValue::Float(_) => "a number",
            StartValue::Int(_) | StartValue::UInt(_) => "an integer",
            StartValue::Bool(_) => "a Boolean",
            StartValue::String(_) => "a string",
            StartValue::Binary(_) => "bytes",
        };
        format!(
            "{kind} does not fit the {:?} variable \"{}\"",
            variable.var_type, variable.name
        )
    })
}

/// Check that a start value may be given to this variable before initialization.
pub fn check_start_value_allowed(
    description: &ModelDescription,
    variable: &Variable,
) -> Result<()> {
    let refuse = |why: &str| {
        Err(Error::Usage(format!(
            "{}: cannot set a start value for \"{}\": {why}",
            description.model_name, variable.name
        )))
    };
    if variable.variability == Variability::Constant {
        return refuse("it is a constant");
    }
    match variable.causality {
        Causality::Independent => refuse("it is the independent variable (time)"),
        Causality::Input | Causality::Parameter | Causality::StructuralParameter => Ok(()),
        _ if variable.start.is_some() => Ok(()),
        Causality::Output | Causality::CalculatedParameter => {
            refuse("it is calculated by the FMU; only parameters, inputs and variables with a start value can be set")
        }
        _ => refuse("it has no start value; only parameters, inputs and variables with a start value can be set"),
    }
}

/// Set start values on a slave that was just instantiated. FMI 3 structural parameters may be
/// set only in configuration mode (FMI 3.0, causality `structuralParameter`): when there are
/// any, the slave enters configuration mode, gets them, and leaves it; then the other values
/// are set (in Instantiated). Without structural parameters nothing changes. Errors name the
/// instance and the structural parameters.
pub fn apply_start_values<'a>(
    slave: &mut dyn Slave,
    values: impl IntoIterator<Item = (&'a Variable, &'a StartValue)>,
) -> Result<()> {
    let fmi3 = slave.description().fmi_version == super::FmiVersion::Fmi3;
    let (structural, others): (Vec<_>, Vec<_>) = values
        .into_iter()
        .partition(|(v, _)| fmi3 && v.causality == Causality::StructuralParameter);
    if !structural.is_empty() {
        let names = structural
            .iter()
            .map(|(v, _)| format!("\"{}\"", v.name))
            .collect::<Vec<_>>()
            .join(", ");
        let instance = slave.name().to_string();
        slave.enter_configuration_mode().map_err(|e| {
            Error::Usage(format!(
                "{instance}: cannot set structural parameter {names}: entering configuration \
                 mode failed ({e}); leave it at its start value"
            ))
        })?;
        for (variable, value) in &structural {
            set_value(slave, variable, value).map_err(|e| {
                Error::Usage(format!(
                    "{instance}: structural parameter \"{}\" = {} was refused in \
                     configuration mode ({e}); check its type, min and max (cosimo inspect)",
                    variable.name,
                    start_value_text(value)
                ))
            })?;
        }
        slave.exit_configuration_mode().map_err(|e| {
            Error::Usage(format!(
                "{instance}: the FMU refused structural parameter {names} on leaving \
                 configuration mode ({e})"
            ))
        })?;
    }
    for (variable, value) in others {
        set_value(slave, variable, value)?;
    }
    Ok(())
}

/// A start value as text for messages (elements separated by spaces).
fn start_value_text(value: &StartValue) -> String {
    fn join<T: std::fmt::Display>(v: &[T]) -> String {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    }
    match value {
        StartValue::Float(v) => join(v),
        StartValue::Int(v) => join(v),
        StartValue::UInt(v) => join(v),
        StartValue::Bool(v) => join(v),
        StartValue::String(v) => v
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(" "),
        StartValue::Binary(v) => format!("{} bytes", v.iter().map(Vec::len).sum::<usize>()),
    }
}

/// Write a typed value to a slave.
pub fn set_value(slave: &mut dyn Slave, variable: &Variable, value: &StartValue) -> Result<()> {
    let vr = variable.value_reference;
    let mismatch = || {
        Error::Usage(format!(
            "{}: a value of the wrong type for {:?} variable \"{}\"",
            slave.name(),
            variable.var_type,
            variable.name
        ))
    };
    // A scalar is one value reference; an FMI 3 array is one value reference with many values.
    let vrs = [vr];
    use VariableType::*;
    match (variable.var_type, value) {
        (Float64, StartValue::Float(v)) => slave.set_float64(&vrs, v),
        (Float32, StartValue::Float(v)) => {
            let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            slave.set_float32(&vrs, &v)
        }
        (Int8, StartValue::Int(v)) => slave.set_int8(&vrs, &narrow(v)),
        (Int16, StartValue::Int(v)) => slave.set_int16(&vrs, &narrow(v)),
        (Int32, StartValue::Int(v)) => slave.set_int32(&vrs, &narrow(v)),
        (Int64, StartValue::Int(v)) => slave.set_int64(&vrs, v),
        (UInt8, StartValue::UInt(v)) => slave.set_uint8(&vrs, &narrow(v)),
        (UInt16, StartValue::UInt(v)) => slave.set_uint16(&vrs, &narrow(v)),
        (UInt32, StartValue::UInt(v)) => slave.set_uint32(&vrs, &narrow(v)),
        (UInt64, StartValue::UInt(v)) => slave.set_uint64(&vrs, v),
        (Enumeration, StartValue::Int(v)) => match slave.description().fmi_version {
            super::FmiVersion::Fmi2 => slave.set_int32(&vrs, &narrow(v)),
            super::FmiVersion::Fmi3 => slave.set_int64(&vrs, v),
        },
        (Boolean, StartValue::Bool(v)) => slave.set_boolean(&vrs, v),
        (String, StartValue::String(v)) => {
            let v: Vec<&str> = v.iter().map(std::string::String::as_str).collect();
            slave.set_string(&vrs, &v)
        }
        (Binary, StartValue::Binary(v)) => {
            let v: Vec<&[u8]> = v.iter().map(Vec::as_slice).collect();
            slave.set_binary(&vrs, &v)
        }
        _ => Err(mismatch()),
    }
}

/// Read a variable's current value (all `count` elements of an array).
pub fn get_value(slave: &mut dyn Slave, variable: &Variable, count: usize) -> Result<StartValue> {
    let vrs = [variable.value_reference];
    use VariableType::*;
    Ok(match variable.var_type {
        Float64 => {
            let mut v = vec![0.0; count];
            slave.get_float64(&vrs, &mut v)?;
            StartValue::Float(v)
        }
        Float32 => {
            let mut v = vec![0.0f32; count];
            slave.get_float32(&vrs, &mut v)?;
            StartValue::Float(v.into_iter().map(f64::from).collect())
        }
        Int8 => {
            let mut v = vec![0i8; count];
            slave.get_int8(&vrs, &mut v)?;
            StartValue::Int(v.into_iter().map(i64::from).collect())
        }
        Int16 => {
            let mut v = vec![0i16; count];
            slave.get_int16(&vrs, &mut v)?;
            StartValue::Int(v.into_iter().map(i64::from).collect())
        }
        Int32 => {
            let mut v = vec![0i32; count];
            slave.get_int32(&vrs, &mut v)?;
            StartValue::Int(v.into_iter().map(i64::from).collect())
        }
        Int64 => {
            let mut v = vec![0i64; count];
            slave.get_int64(&vrs, &mut v)?;
            StartValue::Int(v)
        }
        UInt8 => {
            let mut v = vec![0u8; count];
            slave.get_uint8(&vrs, &mut v)?;
            StartValue::UInt(v.into_iter().map(u64::from).collect())
        }
        UInt16 => {
            let mut v = vec![0u16; count];
            slave.get_uint16(&vrs, &mut v)?;
            StartValue::UInt(v.into_iter().map(u64::from).collect())
        }
        UInt32 => {
            let mut v = vec![0u32; count];
            slave.get_uint32(&vrs, &mut v)?;
            StartValue::UInt(v.into_iter().map(u64::from).collect())
        }
        UInt64 => {
            let mut v = vec![0u64; count];
            slave.get_uint64(&vrs, &mut v)?;
            StartValue::UInt(v)
        }
        Enumeration => match slave.description().fmi_version {
            super::FmiVersion::Fmi2 => {
                let mut v = vec![0i32; count];
                slave.get_int32(&vrs, &mut v)?;
                StartValue::Int(v.into_iter().map(i64::from).collect())
            }
            super::FmiVersion::Fmi3 => {
                let mut v = vec![0i64; count];
                slave.get_int64(&vrs, &mut v)?;
                StartValue::Int(v)
            }
        },
        Boolean => {
            let mut v = vec![false; count];
            slave.get_boolean(&vrs, &mut v)?;
            StartValue::Bool(v)
        }
        String => StartValue::String(slave.get_string(&vrs)?),
        Binary => StartValue::Binary(slave.get_binary(&vrs)?),
        Clock => {
            return Err(Error::Unsupported {
                instance: slave.name().to_string(),
                message: format!("clock \"{}\" has no value to read", variable.name),
            })
        }
    })
}

fn int_range(t: VariableType) -> (i64, i64) {
    match t {
        VariableType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        VariableType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        VariableType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN, i64::MAX),
    }
}

fn uint_max(t: VariableType) -> u64 {
    match t {
        VariableType::UInt8 => u8::MAX.into(),
        VariableType::UInt16 => u16::MAX.into(),
        VariableType::UInt32 => u32::MAX.into(),
        _ => u64::MAX,
    }
}

/// Narrow parsed (range-checked) integers to the FMU's integer width.
fn narrow<T: TryFrom<S> + Default + Copy, S: Copy>(values: &[S]) -> Vec<T> {
    values
        .iter()
        .map(|&v| T::try_from(v).unwrap_or_default())
        .collect()
}

/// Hex digits (optionally `0x`-prefixed) to bytes.
pub fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(digits.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The variable `name` of an FMU; an error names `option` (how the user gave the name), the
/// model and the closest names.
pub fn find_variable<'a>(
    md: &'a ModelDescription,
    name: &str,
    option: &str,
) -> Result<&'a Variable> {
    md.variable(name).ok_or_else(|| {
        let mut close: Vec<&str> = md
            .variables
            .iter()
            .map(|v| v.name.as_str())
            .filter(|n| n.to_lowercase().contains(&name.to_lowercase()) || name.to_lowercase().contains(&n.to_lowercase()))
            .take(5)
            .collect();
        if close.is_empty() {
            close = md.variables.iter().map(|v| v.name.as_str()).take(10).collect();
        }
        Error::Usage(format!(
            "{option} {name}: {} has no variable \"{name}\"; did you mean one of: {}? (`cosimo inspect` lists them all)",
            md.model_name,
            close.join(", ")
        ))
    })
}
