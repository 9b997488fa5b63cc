//! Inputs driven from a table (`--input-file`), as fmusim and FMPy do: Float inputs
//! interpolated linearly, discrete inputs held, set before every `doStep` at its start time and
//! again at events.

use std::sync::Arc;

use crate::fmu::description::{Causality, StartValue, Variable, VariableType};
use crate::fmu::values::set_value;
use crate::fmu::{ModelDescription, Slave};
use crate::table::{Interpolation, Table};
use crate::{Error, Result};

/// The table's columns that drive the inputs of one component.
#[derive(Clone, Default)]
pub struct TableInputs {
    table: Option<Arc<Table>>,
    /// (table column, variable, interpolation)
    bindings: Vec<(usize, Variable, Interpolation)>,
}

impl TableInputs {
    /// No inputs from a table.
    pub fn none() -> TableInputs {
        TableInputs::default()
    }

    /// Bind `columns` (table column index, variable name) to inputs of an FMU with this
    /// description; a name that is no input (or of a type a table cannot drive) is an error
    /// naming the file, the column and the inputs there are.
    pub fn new(
        description: &ModelDescription,
        table: &Arc<Table>,
        columns: &[(usize, &str)],
    ) -> Result<TableInputs> {
        let mut bindings = Vec::with_capacity(columns.len());
        for &(column, name) in columns {
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
                        "{}: column \"{}\" matches no input of {}; its inputs are: {}",
                        table.path().display(),
                        table.columns()[column],
                        description.model_name,
                        if inputs.is_empty() {
                            "(none)".to_string()
                        } else {
                            inputs.join(", ")
                        }
                    ))
                })?;
            if variable.is_array()
                || matches!(
                    variable.var_type,
                    VariableType::String | VariableType::Binary | VariableType::Clock
                )
            {
                return Err(Error::Usage(format!(
                    "{}: input \"{name}\" is of type {:?}, which an input file cannot drive (only scalar numbers and Booleans)",
                    table.path().display(),
                    variable.var_type
                )));
            }
            let interpolation = if variable.var_type.is_float() {
                Interpolation::Linear
            } else {
                Interpolation::Hold
            };
            bindings.push((column, variable.clone(), interpolation));
        }
        Ok(TableInputs {
            table: (!bindings.is_empty()).then(|| table.clone()),
            bindings,
        })
    }

    /// True when no input of the component comes from the table.
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty()
    }

    /// Set every bound input to its value at time `t`.
    pub fn apply(&self, slave: &mut dyn Slave, t: f64) -> Result<()> {
        let Some(table) = &self.table else {
            return Ok(());
        };
        for (column, variable, interpolation) in &self.bindings {
            let x = table.value_at(*column, t, *interpolation);
            let value = match variable.var_type {
                VariableType::Float32 | VariableType::Float64 => StartValue::Float(vec![x]),
                VariableType::Boolean => StartValue::Bool(vec![x != 0.0]),
                VariableType::UInt8
                | VariableType::UInt16
                | VariableType::UInt32
                | VariableType::UInt64 => StartValue::UInt(vec![x.round().max(0.0) as u64]),
                _ => StartValue::Int(vec![x.round() as i64]),
            };
            set_value(slave, variable, &value)?;
        }
        Ok(())
    }
}
