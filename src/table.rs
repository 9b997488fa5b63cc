//! A numeric table read from CSV: input signals for a run, or reference results for a check.
//!
//! The first column is time (non-decreasing; a repeated time marks a discontinuity, the later
//! row being the value from then on). Booleans may be written `true` / `false` or `1` / `0`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// How values between two rows are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interpolation {
    /// Linear between the surrounding rows (continuous signals).
    Linear,
    /// The value of the last row at or before the time (discrete signals).
    Hold,
}

/// A table of signals over time, column-major.
#[derive(Debug, Clone)]
pub struct Table {
    path: PathBuf,
    columns: Vec<String>,
    time: Vec<f64>,
    values: Vec<Vec<f64>>,
}

impl Table {
    /// Read a CSV file whose first column is time.
    pub fn read(path: &Path) -> Result<Table> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Table::parse(&text, path)
    }

    /// Parse CSV text; `path` names it in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Table> {
        let bad = |message: String| Error::Usage(format!("{}: {message}", path.display()));
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .trim(csv::Trim::All)
            .flexible(true)
            .from_reader(text.as_bytes());
        let header = reader
            .headers()
            .map_err(|e| bad(format!("cannot read the header: {e}")))?
            .clone();
        if header.is_empty() || header.get(0).map(str::trim) == Some("") {
            return Err(bad(
                "the file is empty; expected a header \"time\",\"name\",...".into(),
            ));
        }
        let columns: Vec<String> = header.iter().skip(1).map(str::to_string).collect();
        let mut time = Vec::new();
        let mut values = vec![Vec::new(); columns.len()];
        for (row, record) in reader.records().enumerate() {
            let line = row + 2;
            let record = record.map_err(|e| bad(format!("line {line}: {e}")))?;
            if record.len() != columns.len() + 1 {
                return Err(bad(format!(
                    "line {line} has {} cells but the header has {}",
                    record.len(),
                    columns.len() + 1
                )));
            }
            let t = parse_cell(&record[0]).ok_or_else(|| {
                bad(format!(
                    "line {line}: time \"{}\" is not a number",
                    &record[0]
                ))
            })?;
            if let Some(&previous) = time.last() {
                if t < previous {
                    return Err(bad(format!(
                        "line {line}: time {t} is before the previous row's {previous}; rows must be in time order"
                    )));
                }
            }
            time.push(t);
            for (column, cell) in record.iter().skip(1).enumerate() {
                let value = parse_cell(cell).ok_or_else(|| {
                    bad(format!(
                        "line {line}, column \"{}\": \"{cell}\" is not a number or Boolean",
                        columns[column]
                    ))
                })?;
                values[column].push(value);
            }
        }
        if time.is_empty() {
            return Err(bad("the table has a header but no rows".into()));
        }
        Ok(Table {
            path: path.to_path_buf(),
            columns,
            time,
            values,
        })
    }

    /// The file the table came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Column names after `time`.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Index of a column by name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// The time column.
    pub fn time(&self) -> &[f64] {
        &self.time
    }

    /// All values of one column.
    pub fn values(&self, column: usize) -> &[f64] {
        &self.values[column]
    }

    /// The value of `column` at time `t`; before the first or after the last row the end value
    /// is held.
    pub fn value_at(&self, column: usize, t: f64, interpolation: Interpolation) -> f64 {
        let values = &self.values[column];
        // Index of the first row strictly after t: rows before it are at or before t.
        let after = self.time.partition_point(|&row_time| row_time <= t);
        if after == 0 {
            return values[0];
        }
        if after == self.time.len() || interpolation == Interpolation::Hold {
            return values[after - 1];
        }
        let (t0, t1) = (self.time[after - 1], self.time[after]);
        let (v0, v1) = (values[after - 1], values[after]);
        v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    }
}

fn parse_cell(cell: &str) -> Option<f64> {
    match cell.trim() {
        "true" | "True" | "TRUE" => Some(1.0),
        "false" | "False" | "FALSE" => Some(0.0),
        text => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        Table::parse(text, Path::new("in.csv")).unwrap()
    }

    #[test]
    fn linear_and_hold_between_rows_and_end_values_held() {
        let t = table("\"time\",\"u\",\"k\"\n0,0,1\n1,10,2\n2,0,true\n");
        assert_eq!(t.columns(), ["u", "k"]);
        assert_eq!(t.value_at(0, 0.25, Interpolation::Linear), 2.5);
        assert_eq!(t.value_at(0, 1.5, Interpolation::Linear), 5.0);
        assert_eq!(t.value_at(1, 1.5, Interpolation::Hold), 2.0);
        assert_eq!(t.value_at(1, 2.0, Interpolation::Hold), 1.0);
        assert_eq!(t.value_at(0, -1.0, Interpolation::Linear), 0.0);
        assert_eq!(t.value_at(0, 9.0, Interpolation::Linear), 0.0);
    }

    #[test]
    fn a_repeated_time_is_a_step_taking_the_later_row() {
        let t = table("time,u\n0,0\n1,0\n1,5\n2,5\n");
        assert_eq!(t.value_at(0, 0.999, Interpolation::Linear), 0.0);
        assert_eq!(t.value_at(0, 1.0, Interpolation::Linear), 5.0);
        assert_eq!(t.value_at(0, 1.0, Interpolation::Hold), 5.0);
    }

    #[test]
    fn errors_name_the_file_line_and_column() {
        let err = |text: &str| {
            Table::parse(text, Path::new("in.csv"))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("time,u\n0,1\n1,x\n"),
            "in.csv: line 3, column \"u\": \"x\" is not a number or Boolean"
        );
        assert_eq!(
            err("time,u\n1,1\n0,1\n"),
            "in.csv: line 3: time 0 is before the previous row's 1; rows must be in time order"
        );
        assert_eq!(
            err("time,u\n"),
            "in.csv: the table has a header but no rows"
        );
        assert!(err("time,u\n0,1,2\n").contains("line 2 has 3 cells"));
    }
}
