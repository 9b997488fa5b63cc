//! Reading the recorded variables of a slave into result rows, without allocating for the
//! common case of scalar Float64 outputs (one batched get per row).

use crate::fmu::description::{Causality, StartValue, Variability, Variable, VariableType};
use crate::fmu::values::{dimension_size, element_count, get_value};
use crate::fmu::{ModelDescription, Slave, ValueReference};
use crate::Result;

/// The variables of one slave that go into the result file, in column order.
pub struct Recording {
    columns: Vec<Column>,
    /// What each column holds, for writers of typed formats (apart from `columns`, which the
    /// row loop walks).
    described: Vec<ResultColumn>,
    float_vrs: Vec<ValueReference>,
    float_values: Vec<f64>,
}

/// What a result column holds: its name and its variable's declaration, for the result
/// writers that keep types, units and aliases (MAT, Arrow, Parquet).
#[derive(Debug, Clone, PartialEq)]
pub struct ResultColumn {
    /// The column's name (`component.variable` in systems).
    pub name: String,
    /// The variable's type (of its elements, for arrays).
    pub var_type: VariableType,
    pub causality: Causality,
    pub variability: Variability,
    pub unit: Option<String>,
    pub description: Option<String>,
    /// The element count of a whole array column (its cells are `Cell::Floats` for Float
    /// arrays, text for others); `None` for a scalar or one element of an array.
    pub array: Option<usize>,
    /// Columns with equal keys read the same value (one variable under several names): the
    /// component, the value reference, the type and the element.
    pub source: (usize, ValueReference, VariableType, Option<usize>),
}

struct Column {
    /// The variable's name.
    name: String,
    read: Read,
}

/// How a column's value is read.
enum Read {
    /// Index into the batched Float64 values, for scalar Float64 columns.
    Batched(usize),
    /// Read alone: the variable (boxed, as most columns are batched and a variable is some 500
    /// bytes: a copy in every column costs 0.5 MiB at 1000 components) and its element count.
    Alone(Box<Variable>, usize),
    /// One element of an array (`y[2]`): the array, its element count and the 0-based index.
    Element(Box<Variable>, usize, usize),
    /// An FMI 3 clock: its ticks so far, which the master counts (filled after the read).
    Clock(ValueReference),
}

/// One column to record: a variable, or one element of an array variable, under a name.
#[derive(Debug, Clone)]
pub struct RecordedColumn {
    /// The variable (its `name` is ignored: `name` below names the column).
    pub variable: Variable,
    /// The 0-based element of an array variable, or `None` for the whole variable.
    pub element: Option<usize>,
    /// The column's name.
    pub name: String,
}

/// A name given for output resolved against a model description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputName {
    /// Index of the variable in the model description.
    pub variable: usize,
    /// The 0-based (flat, row-major) element of an array variable named as `name[i]` or
    /// `name[i,j]`.
    pub element: Option<usize>,
}

/// Resolve `name` for output: a variable or alias name, or an FMI 3 array element written as
/// `check` prints it: `name[i]` (1-based, counting the elements in row-major order) or
/// `name[i,j,...]` (1-based per dimension). A variable whose own name contains brackets (FMI 2
/// `x[1]`) wins. `Ok(None)`: no variable of that name; an index that does not fit the array is
/// an error that gives the array's size.
pub fn resolve_output_name(md: &ModelDescription, name: &str) -> Result<Option<OutputName>> {
    if let Some(variable) = md.variable_index(name) {
        return Ok(Some(OutputName {
            variable,
            element: None,
        }));
    }
    let Some((base, rest)) = name.strip_suffix(']').and_then(|n| n.rsplit_once('[')) else {
        return Ok(None);
    };
    let Some(variable) = md.variable_index(base.trim_end()) else {
        return Ok(None);
    };
    let v = &md.variables[variable];
    let sizes: Vec<u64> = v
        .dimensions
        .iter()
        .map(|d| dimension_size(md, d).unwrap_or(0))
        .collect();
    let shape: Vec<String> = sizes.iter().map(u64::to_string).collect();
    let shape = shape.join("×");
    if sizes.is_empty() {
        return Err(crate::Error::Usage(format!(
            "\"{name}\": \"{base}\" is not an array, so it takes no index; name it as \"{base}\""
        )));
    }
    let mut indices = Vec::new();
    for part in rest.split(',') {
        match part.trim().parse::<u64>() {
            Ok(i) => indices.push(i),
            Err(_) => {
                return Err(crate::Error::Usage(format!(
                    "\"{name}\": an index is a whole number from 1, e.g. {base}[1] (the array is {shape})"
                )))
            }
        }
    }
    let count = element_count(md, v)? as u64;
    let out_of_range = || {
        crate::Error::Usage(format!(
            "\"{name}\": index out of range: \"{base}\" has {count} elements ({shape}); \
             elements are numbered from 1, as `cosimo check` prints them: {base}[1] to {base}[{count}]{}",
            if sizes.len() > 1 {
                format!(", or per dimension {base}[1{}] to {base}[{}]", ",1".repeat(sizes.len() - 1), shape.replace('×', ","))
            } else {
                String::new()
            }
        ))
    };
    let flat = if indices.len() == 1 {
        let i = indices[0];
        if i == 0 || i > count {
            return Err(out_of_range());
        }
        i - 1
    } else if indices.len() == sizes.len() {
        let mut flat = 0u64;
        for (&i, &size) in indices.iter().zip(&sizes) {
            if i == 0 || i > size {
                return Err(out_of_range());
            }
            flat = flat * size + (i - 1);
        }
        flat
    } else {
        return Err(crate::Error::Usage(format!(
            "\"{name}\": \"{base}\" has {} dimensions ({shape}): give one index per dimension, or one index counting all {count} elements",
            sizes.len()
        )));
    };
    Ok(Some(OutputName {
        variable,
        element: usize::try_from(flat).ok(),
    }))
}

impl Recording {
    /// Record `variables` of an FMU with this description.
    pub fn new(description: &ModelDescription, variables: &[&Variable]) -> Result<Recording> {
        let columns: Vec<RecordedColumn> = variables
            .iter()
            .map(|v| RecordedColumn {
                variable: (*v).clone(),
                element: None,
                name: v.name.clone(),
            })
            .collect();
        Recording::columns(description, columns)
    }

    /// Record `columns` (whole variables or array elements) of an FMU with this description.
    pub fn columns(
        description: &ModelDescription,
        columns: Vec<RecordedColumn>,
    ) -> Result<Recording> {
        let mut recording = Recording {
            columns: Vec::with_capacity(columns.len()),
            described: Vec::with_capacity(columns.len()),
            float_vrs: Vec::new(),
            float_values: Vec::new(),
        };
        for RecordedColumn {
            variable,
            element,
            name,
        } in columns
        {
            let count = element_count(description, &variable)?;
            let clock = variable.var_type == VariableType::Clock;
            recording.described.push(ResultColumn {
                name: name.clone(),
                // A clock's column counts its ticks.
                var_type: if clock {
                    VariableType::UInt64
                } else {
                    variable.var_type
                },
                causality: variable.causality,
                variability: variable.variability,
                unit: variable.unit.clone(),
                description: variable.description.clone(),
                array: (variable.is_array() && element.is_none()).then_some(count),
                source: (0, variable.value_reference, variable.var_type, element),
            });
            let read = if clock {
                Read::Clock(variable.value_reference)
            } else if let Some(index) = element {
                Read::Element(Box::new(variable), count, index)
            } else if variable.var_type == VariableType::Float64 && !variable.is_array() {
                recording.float_vrs.push(variable.value_reference);
                Read::Batched(recording.float_vrs.len() - 1)
            } else {
                Read::Alone(Box::new(variable), count)
            };
            recording.columns.push(Column { name, read });
        }
        recording.float_values = vec![0.0; recording.float_vrs.len()];
        Ok(recording)
    }

    /// Column names, with `prefix` (e.g. `"component."`) before each variable name.
    pub fn column_names(&self, prefix: &str) -> Vec<String> {
        self.columns
            .iter()
            .map(|c| format!("{prefix}{}", c.name))
            .collect()
    }

    /// What the columns hold, named with `prefix` before each variable name, as columns of
    /// component `component`.
    pub fn result_columns(&self, prefix: &str, component: usize) -> Vec<ResultColumn> {
        self.described
            .iter()
            .map(|c| ResultColumn {
                name: format!("{prefix}{}", c.name),
                source: (component, c.source.1, c.source.2, c.source.3),
                ..c.clone()
            })
            .collect()
    }

    /// The clock columns: (cell index, clock value reference), for the master to fill with
    /// the ticks it counted.
    pub fn clock_cells(&self) -> impl Iterator<Item = (usize, ValueReference)> + '_ {
        self.columns
            .iter()
            .enumerate()
            .filter_map(|(k, c)| match c.read {
                Read::Clock(vr) => Some((k, vr)),
                _ => None,
            })
    }

    /// Number of cells this recording fills.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Read the variables from `slave` into `cells` (one per column, overwritten in place, so
    /// scalar numbers allocate nothing).
    pub fn read_cells(&mut self, slave: &mut dyn Slave, cells: &mut [Cell]) -> Result<()> {
        if !self.float_vrs.is_empty() {
            slave.get_float64(&self.float_vrs, &mut self.float_values)?;
        }
        for (column, cell) in self.columns.iter().zip(cells.iter_mut()) {
            let (variable, count) = match &column.read {
                Read::Batched(i) => {
                    *cell = Cell::Float(self.float_values[*i]);
                    continue;
                }
                Read::Alone(variable, count) => (variable, *count),
                Read::Clock(_) => {
                    *cell = Cell::UInt(0);
                    continue;
                }
                Read::Element(variable, count, index) => {
                    *cell = element_cell(get_value(slave, variable, *count)?, *index);
                    continue;
                }
            };
            let value = get_value(slave, variable, count)?;
            *cell = match value {
                StartValue::Float(v) if variable.is_array() => Cell::Floats(v),
                StartValue::Float(v) => Cell::Float(v.first().copied().unwrap_or(f64::NAN)),
                StartValue::Int(v) => joined(&v, Cell::Int),
                StartValue::UInt(v) => joined(&v, Cell::UInt),
                StartValue::Bool(v) => joined(&v, Cell::Bool),
                StartValue::String(mut v) => Cell::Text(if v.is_empty() {
                    String::new()
                } else {
                    v.swap_remove(0)
                }),
                StartValue::Binary(mut v) => Cell::Bytes(if v.is_empty() {
                    Vec::new()
                } else {
                    v.swap_remove(0)
                }),
            };
        }
        Ok(())
    }
}

/// One recorded value at an output point.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Float(f64),
    /// A Float array, all elements.
    Floats(Vec<f64>),
    Int(i64),
    UInt(u64),
    Bool(bool),
    /// A String, or a non-Float array as its space-separated elements.
    Text(String),
    Bytes(Vec<u8>),
}

/// A result row: the time and one cell per recorded column.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    pub time: f64,
    pub cells: Vec<Cell>,
}

/// The cell of element `index` of an array value (NaN or empty when the FMU returned fewer).
fn element_cell(value: StartValue, index: usize) -> Cell {
    match value {
        StartValue::Float(v) => Cell::Float(v.get(index).copied().unwrap_or(f64::NAN)),
        StartValue::Int(v) => v
            .get(index)
            .map_or(Cell::Float(f64::NAN), |&x| Cell::Int(x)),
        StartValue::UInt(v) => v
            .get(index)
            .map_or(Cell::Float(f64::NAN), |&x| Cell::UInt(x)),
        StartValue::Bool(v) => v
            .get(index)
            .map_or(Cell::Float(f64::NAN), |&x| Cell::Bool(x)),
        StartValue::String(mut v) => Cell::Text(if index < v.len() {
            v.swap_remove(index)
        } else {
            String::new()
        }),
        StartValue::Binary(mut v) => Cell::Bytes(if index < v.len() {
            v.swap_remove(index)
        } else {
            Vec::new()
        }),
    }
}

/// Non-float arrays are rare: one cell of space-separated elements.
fn joined<T: Copy + ToString>(values: &[T], scalar: impl Fn(T) -> Cell) -> Cell {
    if values.len() == 1 {
        scalar(values[0])
    } else {
        let text: Vec<String> = values.iter().map(ToString::to_string).collect();
        Cell::Text(text.join(" "))
    }
}
