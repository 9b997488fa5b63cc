//! Reading the recorded variables of a slave into CSV rows, without allocating for the common
//! case of scalar Float64 outputs (one batched get per row).

use std::io::Write;

use crate::fmu::description::{StartValue, Variable, VariableType};
use crate::fmu::values::{element_count, get_value};
use crate::fmu::{ModelDescription, Slave, ValueReference};
use crate::results::CsvWriter;
use crate::Result;

/// The variables of one slave that go into the result file, in column order.
pub struct Recording {
    columns: Vec<Column>,
    float_vrs: Vec<ValueReference>,
    float_values: Vec<f64>,
}

struct Column {
    variable: Variable,
    count: usize,
    /// Index into the batched Float64 values, for scalar Float64 columns.
    batched: Option<usize>,
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
            let batched = (variable.var_type == VariableType::Float64 && !variable.is_array())
                .then(|| {
                    recording.float_vrs.push(variable.value_reference);
                    recording.float_vrs.len() - 1
                });
            recording.columns.push(Column {
                variable: (*variable).clone(),
                count,
                batched,
            });
        }
        recording.float_values = vec![0.0; recording.float_vrs.len()];
        Ok(recording)
    }

    /// Column names, with `prefix` (e.g. `"component."`) before each variable name.
    pub fn column_names(&self, prefix: &str) -> Vec<String> {
        self.columns
            .iter()
            .map(|c| format!("{prefix}{}", c.variable.name))
            .collect()
    }

    /// Read the variables from `slave` and append them as cells of the current row.
    pub fn append_cells<W: Write>(
        &mut self,
        slave: &mut dyn Slave,
        row: &mut CsvWriter<W>,
    ) -> Result<()> {
        if !self.float_vrs.is_empty() {
            slave.get_float64(&self.float_vrs, &mut self.float_values)?;
        }
        for column in &self.columns {
            if let Some(i) = column.batched {
                row.push_float(self.float_values[i]);
                continue;
            }
            let value = get_value(slave, &column.variable, column.count)?;
            match &value {
                StartValue::Float(v) if column.variable.is_array() => row.push_float_array(v),
                StartValue::Float(v) => row.push_float(v.first().copied().unwrap_or(f64::NAN)),
                StartValue::Int(v) => push_joined(row, v, |r, x| r.push_int(*x)),
                StartValue::UInt(v) => push_joined(row, v, |r, x| r.push_uint(*x)),
                StartValue::Bool(v) => push_joined(row, v, |r, x| r.push_bool(*x)),
                StartValue::String(v) => row.push_str(v.first().map(String::as_str).unwrap_or("")),
                StartValue::Binary(v) => {
                    row.push_bytes(v.first().map(Vec::as_slice).unwrap_or(&[]))
                }
            }
        }
        Ok(())
    }
}

/// Non-float arrays are rare: format them as one space-separated cell through a string.
fn push_joined<W: Write, T: ToString>(
    row: &mut CsvWriter<W>,
    values: &[T],
    scalar: impl Fn(&mut CsvWriter<W>, &T),
) {
    if values.len() == 1 {
        scalar(row, &values[0]);
    } else {
        let text: Vec<String> = values.iter().map(ToString::to_string).collect();
        row.push_str(&text.join(" "));
    }
}
