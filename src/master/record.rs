//! Reading the recorded variables of a slave into result rows, without allocating for the
//! common case of scalar Float64 outputs (one batched get per row).

use crate::fmu::description::{StartValue, Variable, VariableType};
use crate::fmu::values::{element_count, get_value};
use crate::fmu::{ModelDescription, Slave, ValueReference};
use crate::Result;

/// The variables of one slave that go into the result file, in column order.
pub struct Recording {
    columns: Vec<Column>,
    float_vrs: Vec<ValueReference>,
    float_values: Vec<f64>,
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
}

impl Recording {
    /// Record `variables` of an FMU with this description.
    pub fn new(description: &ModelDescription, variables: &[&Variable]) -> Result<Recording> {
        let mut recording = Recording {
            columns: Vec::with_capacity(variables.len()),
            float_vrs: Vec::new(),
            float_values: Vec::new(),
        };
        for variable in variables {
            let count = element_count(description, variable)?;
            let read = if variable.var_type == VariableType::Float64 && !variable.is_array() {
                recording.float_vrs.push(variable.value_reference);
                Read::Batched(recording.float_vrs.len() - 1)
            } else {
                Read::Alone(Box::new((*variable).clone()), count)
            };
            recording.columns.push(Column {
                name: variable.name.clone(),
                read,
            });
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

/// Non-float arrays are rare: one cell of space-separated elements.
fn joined<T: Copy + ToString>(values: &[T], scalar: impl Fn(T) -> Cell) -> Cell {
    if values.len() == 1 {
        scalar(values[0])
    } else {
        let text: Vec<String> = values.iter().map(ToString::to_string).collect();
        Cell::Text(text.join(" "))
    }
}
