//! Inputs driven from a table (`--input-file`), in the FMPy / fmusim convention: continuous
//! Float inputs interpolated linearly, discrete ones (and every other type) held, arrays as
//! space-separated numbers in one cell, String inputs from text columns; set before every
//! `doStep` at its start time and again at events. FMI 3 clocks as in fmusim: an input clock's
//! column holds 0 / 1 and the clock ticks at each row where it turns 1 (its ticks go to
//! `clocks.rs`); a clocked input takes its row's value only when its clock ticks.

use std::sync::Arc;

use crate::fmu::description::{Causality, StartValue, Variability, Variable, VariableType};
use crate::fmu::values::{element_count, set_value};
use crate::fmu::{ModelDescription, Slave};
use crate::table::{Column, Interpolation, Table};
use crate::{Error, Result};

/// How one column reaches one input.
#[derive(Clone)]
struct Binding {
    column: usize,
    variable: Variable,
    interpolation: Interpolation,
    /// Elements of an array input (0: a scalar).
    elements: usize,
}

/// The table's columns that drive the inputs of one component.
#[derive(Clone, Default)]
pub struct TableInputs {
    table: Option<Arc<Table>>,
    bindings: Vec<Binding>,
    /// Clocked inputs (FMI 3 `clocks`): set at their clocks' ticks only.
    clocked: Vec<Binding>,
    /// Input clocks driven by a column: (column, clock).
    clocks: Vec<(usize, Variable)>,
}

impl TableInputs {
    /// No inputs from a table.
    pub fn none() -> TableInputs {
        TableInputs::default()
    }

    /// Whether a column drives the input with value reference `vr`.
    pub fn drives(&self, vr: crate::fmu::ValueReference) -> bool {
        self.bindings
            .iter()
            .chain(&self.clocked)
            .any(|b| b.variable.value_reference == vr)
    }

    /// The input clocks the table ticks and their tick times: each row where the clock's
    /// column turns from 0 (or from before the first row) to a value other than 0.
    pub fn clock_ticks(&self) -> Vec<(&Variable, Vec<f64>)> {
        let Some(table) = &self.table else {
            return Vec::new();
        };
        self.clocks
            .iter()
            .map(|(column, clock)| {
                let values = table.values(*column);
                let times = table
                    .time()
                    .iter()
                    .zip(values)
                    .enumerate()
                    .filter(|&(row, (_, &v))| v != 0.0 && (row == 0 || values[row - 1] == 0.0))
                    .map(|(_, (&t, _))| t)
                    .collect();
                (clock, times)
            })
            .collect()
    }

    /// Set the clocked inputs clocked by a clock for which `ticks` (a description variable
    /// index) is true to their values at a tick at time `t` (the row at `t`, not the one
    /// before).
    pub fn apply_clocked(
        &self,
        slave: &mut dyn Slave,
        t: f64,
        ticks: impl Fn(usize) -> bool,
    ) -> Result<()> {
        let Some(table) = &self.table else {
            return Ok(());
        };
        // A tick lands on its row's time to rounding: take that row.
        let t = t + 1e-9 * t.abs().max(1.0);
        for b in &self.clocked {
            if !b.variable.clocks.iter().any(|&k| ticks(k)) {
                continue;
            }
            let value = match (b.variable.var_type, b.elements) {
                (_, 0) => scalar_value(
                    b.variable.var_type,
                    table.value_at(b.column, t, Interpolation::Hold),
                ),
                (var_type, _) => {
                    let mut values = Vec::with_capacity(b.elements);
                    table.array_at(b.column, t, Interpolation::Hold, &mut values);
                    array_value(var_type, &values)
                }
            };
            set_value(slave, &b.variable, &value)?;
        }
        Ok(())
    }

    /// Bind `columns` (table column index, variable name) to inputs of an FMU with this
    /// description. A name that is no input, a type a table cannot drive, or a cell that does
    /// not fit the input (text for a number, an array of the wrong length) is an error naming
    /// the file, the line and the column.
    pub fn new(
        description: &ModelDescription,
        table: &Arc<Table>,
        columns: &[(usize, &str)],
    ) -> Result<TableInputs> {
        let mut bindings: Vec<Binding> = Vec::with_capacity(columns.len());
        let mut clocks = Vec::new();
        for &(column, name) in columns {
            let column_name = &table.columns()[column];
            let variable = description
                .variable(name)
                .filter(|v| v.causality == Causality::Input)
                .ok_or_else(|| {
                    let inputs: Vec<&str> = description
                        .variables
                        .iter()
                        .filter(|v| v.causality == Causality::Input)
                        .map(|v| v.name.as_str())
                        .collect();
                    Error::Usage(format!(
                        "{}: column \"{column_name}\" matches no input of {}; its inputs are: {}",
                        table.path().display(),
                        description.model_name,
                        if inputs.is_empty() {
                            "(none)".to_string()
                        } else {
                            inputs.join(", ")
                        }
                    ))
                })?;
            if variable.var_type == VariableType::Clock {
                if !matches!(table.data(column), Column::Numbers(_)) {
                    return Err(Error::Usage(format!(
                        "{}: column \"{column_name}\" drives the input clock \"{name}\": its cells are 0 (no tick) or 1 (a tick where it turns 1)",
                        table.path().display()
                    )));
                }
                clocks.push((column, variable.clone()));
                continue;
            }
            if variable.var_type == VariableType::Binary {
                return Err(Error::Usage(format!(
                    "{}: input \"{name}\" is of type {:?}, which an input file cannot drive (numbers, Booleans, Strings and their arrays can)",
                    table.path().display(),
                    variable.var_type
                )));
            }
            // Two columns for one input: which would win is anyone's guess.
            if let Some(first) = bindings.iter().find(|b| {
                b.variable.value_reference == variable.value_reference
                    && b.variable.var_type == variable.var_type
            }) {
                let first_name = &table.columns()[first.column];
                return Err(Error::Usage(format!(
                    "{}: line 1: columns {} and {} {}; an input takes one column: remove or rename one",
                    table.path().display(),
                    Table::column_number(first.column),
                    Table::column_number(column),
                    if first_name == column_name {
                        format!("are both named \"{column_name}\"")
                    } else {
                        format!(
                            "(\"{first_name}\" and \"{column_name}\") both drive input \"{}\"",
                            first.variable.name
                        )
                    }
                )));
            }
            let elements = if variable.is_array() {
                element_count(description, variable)?
            } else {
                0
            };
            check_cells(table, column, variable, elements)?;
            // Only continuous Float signals are interpolated; discrete ones change at rows.
            let interpolation = if variable.var_type.is_float()
                && variable.variability == Variability::Continuous
            {
                Interpolation::Linear
            } else {
                Interpolation::Hold
            };
            bindings.push(Binding {
                column,
                variable: variable.clone(),
                interpolation,
                elements,
            });
        }
        let (clocked, bindings): (Vec<Binding>, Vec<Binding>) = bindings
            .into_iter()
            .partition(|b| !b.variable.clocks.is_empty());
        let used = !bindings.is_empty() || !clocked.is_empty() || !clocks.is_empty();
        Ok(TableInputs {
            table: used.then(|| table.clone()),
            bindings,
            clocked,
            clocks,
        })
    }

    /// Whether there are no inputs from a table.
    pub fn is_empty(&self) -> bool {
        self.table.is_none() || self.bindings.is_empty()
    }

    /// Whether the table drives no clock and no clocked input.
    pub fn clocks_idle(&self) -> bool {
        self.clocks.is_empty() && self.clocked.is_empty()
    }

    /// Set every bound input to its value at time `t`.
    pub fn apply(&self, slave: &mut dyn Slave, t: f64) -> Result<()> {
        let Some(table) = &self.table else {
            return Ok(());
        };
        for b in &self.bindings {
            let vr = [b.variable.value_reference];
            let value = match (b.variable.var_type, b.elements) {
                // The common case without allocation.
                (VariableType::Float64, 0) => {
                    let x = table.value_at(b.column, t, b.interpolation);
                    slave.set_float64(&vr, &[x])?;
                    continue;
                }
                (VariableType::String, _) => {
                    let text = match table.data(b.column) {
                        Column::Text(_) => table.text_at(b.column, t).unwrap_or("").to_string(),
                        _ => number_text(table.value_at(b.column, t, Interpolation::Hold)),
                    };
                    StartValue::String(vec![text; b.elements.max(1)])
                }
                (_, 0) => scalar_value(
                    b.variable.var_type,
                    table.value_at(b.column, t, b.interpolation),
                ),
                (var_type, _) => {
                    let mut values = Vec::with_capacity(b.elements);
                    table.array_at(b.column, t, b.interpolation, &mut values);
                    array_value(var_type, &values)
                }
            };
            set_value(slave, &b.variable, &value)?;
        }
        Ok(())
    }
}

/// Every cell of the column fits the input; else the first line that does not, named.
fn check_cells(table: &Table, column: usize, variable: &Variable, elements: usize) -> Result<()> {
    let fail = |row: usize, what: String| {
        Err(Error::Usage(format!(
            "{}: line {}, column \"{}\": {what}",
            table.path().display(),
            Table::line_of_row(row),
            table.columns()[column]
        )))
    };
    let wanted = if elements == 0 {
        format!("one {:?} value", variable.var_type)
    } else {
        format!("{elements} space-separated values")
    };
    if variable.var_type == VariableType::String {
        // Text, or numbers taken as their text.
        return match table.data(column) {
            Column::Arrays(rows) => match rows.iter().position(|r| r.len() != 1) {
                Some(row) => fail(
                    row,
                    format!(
                        "a String input takes one text, not {} values",
                        rows[row].len()
                    ),
                ),
                None => Ok(()),
            },
            _ => Ok(()),
        };
    }
    match table.data(column) {
        Column::Numbers(values) if elements <= 1 => {
            match values
                .iter()
                .enumerate()
                .find_map(|(row, &x)| misfit(variable.var_type, x).map(|problem| (row, x, problem)))
            {
                Some((row, x, problem)) => fail(
                    row,
                    format!(
                        "{} {problem}: input \"{}\" takes {wanted}",
                        shown(x),
                        variable.name
                    ),
                ),
                None => Ok(()),
            }
        }
        Column::Numbers(_) => fail(0, format!("input \"{}\" takes {wanted}", variable.name)),
        Column::Arrays(rows) => {
            let n = elements.max(1);
            if let Some(row) = rows.iter().position(|r| r.len() != n) {
                return fail(
                    row,
                    format!(
                        "{} values, but input \"{}\" takes {wanted}",
                        rows[row].len(),
                        variable.name
                    ),
                );
            }
            match rows.iter().enumerate().find_map(|(row, values)| {
                values.iter().enumerate().find_map(|(i, &x)| {
                    misfit(variable.var_type, x).map(|problem| (row, i, x, problem))
                })
            }) {
                Some((row, i, x, problem)) => fail(
                    row,
                    format!(
                        "value {} of the cell, {}, {problem}: input \"{}\" takes {wanted}",
                        i + 1,
                        shown(x),
                        variable.name
                    ),
                ),
                None => Ok(()),
            }
        }
        Column::Text(cells) => {
            let row = cells
                .iter()
                .position(|c| c.split_whitespace().any(|x| x.parse::<f64>().is_err()))
                .unwrap_or(0);
            fail(
                row,
                format!(
                    "\"{}\" is not a number, but input \"{}\" takes {wanted}",
                    cells[row], variable.name
                ),
            )
        }
    }
}

/// Why the table value `x` does not fit an input of type `var_type` (`None`: it fits). Float
/// inputs take any number (NaN and infinities are the run's to judge); integer inputs whole
/// numbers in their type's range (not rounded: 1.5 is refused); Booleans true / false or 1 / 0.
fn misfit(var_type: VariableType, x: f64) -> Option<String> {
    use VariableType as T;
    // Every end of an integer range, and one past it, is exact as a double.
    let integer = |lo: i128, hi: i128, name: &str| {
        if !x.is_finite() || x.fract() != 0.0 {
            Some("is not a whole number".to_string())
        } else if x < lo as f64 || x >= (hi + 1) as f64 {
            Some(format!("is out of range for {name} ({lo} to {hi})"))
        } else {
            None
        }
    };
    match var_type {
        T::Float64 => None,
        T::Float32 if x.is_finite() && x.abs() > f64::from(f32::MAX) => {
            Some(format!("is beyond the largest Float32 ({:e})", f32::MAX))
        }
        T::Float32 => None,
        T::Boolean if x == 0.0 || x == 1.0 => None,
        T::Boolean => Some("is not a Boolean (true, false, 1 or 0)".into()),
        T::Int8 => integer(i8::MIN.into(), i8::MAX.into(), "Int8"),
        T::UInt8 => integer(0, u8::MAX.into(), "UInt8"),
        T::Int16 => integer(i16::MIN.into(), i16::MAX.into(), "Int16"),
        T::UInt16 => integer(0, u16::MAX.into(), "UInt16"),
        T::Int32 => integer(i32::MIN.into(), i32::MAX.into(), "Int32"),
        T::UInt32 => integer(0, u32::MAX.into(), "UInt32"),
        T::Int64 => integer(i64::MIN.into(), i64::MAX.into(), "Int64"),
        T::Enumeration => integer(i64::MIN.into(), i64::MAX.into(), "Enumeration"),
        T::UInt64 => integer(0, u64::MAX.into(), "UInt64"),
        T::String | T::Binary | T::Clock => None,
    }
}

/// A table value in a message: large and tiny ones in exponent form.
fn shown(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A number as the text a String input receives (integers without a fraction).
fn number_text(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// A scalar of a numeric or Boolean type from a table value.
fn scalar_value(var_type: VariableType, x: f64) -> StartValue {
    array_value(var_type, &[x])
}

/// Values of a numeric or Boolean type from table values (integers rounded).
fn array_value(var_type: VariableType, xs: &[f64]) -> StartValue {
    match var_type {
        VariableType::Float32 | VariableType::Float64 => StartValue::Float(xs.to_vec()),
        VariableType::Boolean => StartValue::Bool(xs.iter().map(|&x| x != 0.0).collect()),
        VariableType::UInt8
        | VariableType::UInt16
        | VariableType::UInt32
        | VariableType::UInt64 => {
            StartValue::UInt(xs.iter().map(|&x| x.round().max(0.0) as u64).collect())
        }
        _ => StartValue::Int(xs.iter().map(|&x| x.round() as i64).collect()),
    }
}
