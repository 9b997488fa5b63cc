//! One FMU driven alone, as fmusim and FMPy do it: start values, then a fixed communication step
//! that lands on every output point and on the stop time, inputs from a table (Float inputs
//! interpolated linearly, discrete inputs held) set before each step, FMI 3 early returns and
//! event mode handled, outputs recorded on the output grid.

use std::io::Write;
use std::time::Instant;

use super::record::{Cell, Recording, Row};
use super::{RunStatistics, TimeGrid};
use crate::fmu::description::{StartValue, Variable, VariableType};
use crate::fmu::values::{apply_start_values, set_value};
use crate::fmu::{ModelDescription, Slave, SlaveState};
use crate::results::{CsvWriter, Interpolation, Table};
use crate::{Error, Result};

/// Event iterations allowed at one time instant before the FMU is declared stuck.
const MAX_EVENT_ITERATIONS: usize = 1000;

/// Inputs read from a table, matched to the FMU's input variables by column name.
pub struct TableInputs<'a> {
    table: &'a Table,
    /// (table column, variable, interpolation)
    bindings: Vec<(usize, Variable, Interpolation)>,
}

impl<'a> TableInputs<'a> {
    /// Match every column of `table` to an input (or tunable parameter) of the FMU.
    pub fn new(description: &ModelDescription, table: &'a Table) -> Result<TableInputs<'a>> {
        use crate::fmu::description::Causality;
        let mut bindings = Vec::new();
        for (column, name) in table.columns().iter().enumerate() {
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
                        "{}: column \"{name}\" matches no input of {}; its inputs are: {}",
                        table.path().display(),
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
        Ok(TableInputs { table, bindings })
    }

    /// Set every bound input to its value at time `t`.
    pub fn apply(&self, slave: &mut dyn Slave, t: f64) -> Result<()> {
        for (column, variable, interpolation) in &self.bindings {
            let x = self.table.value_at(*column, t, *interpolation);
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

/// Everything a single-FMU run needs besides the slave.
pub struct SingleRun<'a, W: Write> {
    pub grid: TimeGrid,
    pub tolerance: Option<f64>,
    /// Start values set before initialization.
    pub start_values: Vec<(Variable, StartValue)>,
    pub inputs: Option<TableInputs<'a>>,
    pub recording: Recording,
    pub writer: CsvWriter<W>,
}

impl<W: Write> SingleRun<'_, W> {
    /// Initialize the slave and step it to the stop time, writing a row at every output point.
    /// A failure is reported with the time it happened; rows up to it are already on disk.
    pub fn run(mut self, slave: &mut dyn Slave) -> Result<RunStatistics> {
        let started = Instant::now();
        let grid = self.grid;
        let mut row = Row {
            time: grid.start,
            cells: vec![Cell::Float(f64::NAN); self.recording.len()],
        };
        let mut stats = RunStatistics {
            end_time: grid.start,
            ..RunStatistics::default()
        };
        let at = |time: f64| {
            move |e: Error| Error::Simulation {
                time,
                source: Box::new(e),
            }
        };

        // FMI 3 structural parameters first, in configuration mode; then the others.
        apply_start_values(slave, self.start_values.iter().map(|(v, x)| (v, x)))
            .map_err(at(grid.start))?;
        slave
            .enter_initialization_mode(self.tolerance, grid.start, Some(grid.stop))
            .map_err(at(grid.start))?;
        if let Some(inputs) = &self.inputs {
            inputs.apply(slave, grid.start).map_err(at(grid.start))?;
        }
        slave.exit_initialization_mode().map_err(at(grid.start))?;
        if slave.state() == SlaveState::EventMode {
            // FMI 3 with event mode: initialization ends in event mode.
            stats.terminated_early = handle_events(slave, &mut stats).map_err(at(grid.start))?;
            slave.enter_step_mode().map_err(at(grid.start))?;
        }
        self.write_row(&mut row, slave, grid.start, &mut stats)
            .map_err(at(grid.start))?;

        let eps = grid.epsilon();
        let mut t = grid.start;
        let mut next_output = grid.next_point(t, grid.output_interval);
        while t < grid.stop - eps && !stats.terminated_early {
            let target = grid
                .next_point(t, grid.step)
                .min(next_output)
                .min(grid.stop);
            if let Some(inputs) = &self.inputs {
                inputs.apply(slave, t).map_err(at(t))?;
            }
            let step = slave.do_step(t, target - t).map_err(at(t))?;
            stats.steps += 1;
            t = if step.early_return {
                stats.early_returns += 1;
                step.reached_time
            } else {
                target
            };
            if step.event_handling_needed {
                slave.enter_event_mode().map_err(at(t))?;
                if let Some(inputs) = &self.inputs {
                    inputs.apply(slave, t).map_err(at(t))?;
                }
                let terminate = handle_events(slave, &mut stats).map_err(at(t))?;
                slave.enter_step_mode().map_err(at(t))?;
                stats.terminated_early |= terminate;
            }
            stats.terminated_early |= step.terminate_simulation;
            if (t - next_output).abs() <= eps || t >= grid.stop - eps {
                self.write_row(&mut row, slave, t, &mut stats)
                    .map_err(at(t))?;
                next_output = grid.next_point(t, grid.output_interval);
            }
            stats.end_time = t;
        }
        slave.terminate().map_err(at(t))?;
        stats.fmi_calls = slave.call_count();
        stats.wall_seconds = started.elapsed().as_secs_f64();
        Ok(stats)
    }

    fn write_row(
        &mut self,
        row: &mut Row,
        slave: &mut dyn Slave,
        t: f64,
        stats: &mut RunStatistics,
    ) -> Result<()> {
        row.time = t;
        self.recording.read_cells(slave, &mut row.cells)?;
        self.writer.write_row(row)?;
        stats.rows += 1;
        Ok(())
    }
}

/// Event iteration in event mode until the discrete states settle; true if the FMU asks to stop.
fn handle_events(slave: &mut dyn Slave, stats: &mut RunStatistics) -> Result<bool> {
    for _ in 0..MAX_EVENT_ITERATIONS {
        let update = slave.update_discrete_states()?;
        stats.events += 1;
        if update.terminate_simulation {
            return Ok(true);
        }
        if !update.discrete_states_need_update {
            return Ok(false);
        }
    }
    Err(Error::Unsupported {
        instance: slave.name().to_string(),
        message: format!("the event iteration did not settle after {MAX_EVENT_ITERATIONS} calls of fmi3UpdateDiscreteStates"),
    })
}
