//! A table read from CSV (or a MAT, Arrow or Parquet result file, by its extension: see
//! [`crate::results::read`]): input signals for a run, or results to plot.
//!
//! The first column is time (non-decreasing; a repeated time marks a discontinuity, the later
//! row being the value from then on). Booleans may be written `true` / `false` or `1` / `0`;
//! arrays as space-separated numbers in one cell (as cosimo writes them); any other cell makes
//! its column text (String inputs).

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

/// What the cells of a column hold.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// Numbers and Booleans (as 1 / 0).
    Numbers(Vec<f64>),
    /// Arrays: cells of space-separated numbers (the format cosimo writes FMI 3 arrays in).
    Arrays(Vec<Vec<f64>>),
    /// Text: a column with a cell that is neither a number nor a Boolean nor an array.
    Text(Vec<String>),
}

impl Column {
    /// A word for the kind, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Column::Numbers(_) => "numbers",
            Column::Arrays(_) => "arrays",
            Column::Text(_) => "text",
        }
    }
}

/// A table of signals over time, column-major.
#[derive(Debug, Clone)]
pub struct Table {
    path: PathBuf,
    /// The header of the first column (`time` in result files).
    time_name: String,
    columns: Vec<String>,
    time: Vec<f64>,
    data: Vec<Column>,
    /// Each column's unit where the file gives one (not CSV).
    units: Vec<Option<String>>,
}

impl Table {
    /// Read a result file whose first column is time: MAT, Arrow or Parquet by the extension,
    /// else CSV.
    pub fn read(path: &Path) -> Result<Table> {
        use crate::settings::results::ResultFormat;
        match crate::results::read::format_of(path) {
            ResultFormat::Csv => {
                let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
                Table::parse(&text, path)
            }
            format => Ok(Table::from_data(&crate::results::read::read_typed(
                path, format,
            )?)),
        }
    }

    /// A table of a result file read in another format (numbers, arrays and text as in CSV).
    pub fn from_data(data: &crate::results::read::ResultData) -> Table {
        let (columns, data_columns) = data.table_columns().into_iter().unzip();
        Table {
            path: data.path.clone(),
            time_name: data.time_name.clone(),
            columns,
            time: data.time.clone(),
            data: data_columns,
            units: data.columns.iter().map(|c| c.unit.clone()).collect(),
        }
    }

    /// Parse CSV text; `path` names it in error messages. A column holds numbers when every
    /// cell is a number or Boolean, arrays when some cell holds several space-separated
    /// numbers, and text otherwise.
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
        let mut cells: Vec<Vec<String>> = vec![Vec::new(); columns.len()];
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
            let t = match parse_cell(&record[0]) {
                Some(t) if t.is_finite() => t,
                // NaN would pass the order check below and break the lookup by time.
                Some(_) => {
                    return Err(bad(format!(
                        "line {line}: time \"{}\" is not finite; times are finite numbers",
                        &record[0]
                    )))
                }
                None => {
                    return Err(bad(format!(
                        "line {line}: time \"{}\" is not a number",
                        &record[0]
                    )))
                }
            };
            if let Some(&previous) = time.last() {
                if t < previous {
                    return Err(bad(format!(
                        "line {line}: time {t} is before the previous row's {previous}; rows must be in time order"
                    )));
                }
            }
            time.push(t);
            for (column, cell) in record.iter().skip(1).enumerate() {
                cells[column].push(cell.to_string());
            }
        }
        if time.is_empty() {
            return Err(bad("the table has a header but no rows".into()));
        }
        let data = cells.into_iter().map(classify).collect();
        Ok(Table {
            units: vec![None; columns.len()],
            path: path.to_path_buf(),
            time_name: header.get(0).map(str::trim).unwrap_or_default().to_string(),
            columns,
            time,
            data,
        })
    }

    /// The unit of a column, where the file gives one (Arrow, Parquet, MAT; never CSV).
    pub fn unit(&self, column: usize) -> Option<&str> {
        self.units.get(column).and_then(Option::as_deref)
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

    /// The header of the first column, the one [`Table::time`] reads: `time` in result files,
    /// anything in other tables (`run` in a sweep's summary).
    pub fn time_name(&self) -> &str {
        &self.time_name
    }

    /// The time column.
    pub fn time(&self) -> &[f64] {
        &self.time
    }

    /// The cells of one column.
    pub fn data(&self, column: usize) -> &Column {
        &self.data[column]
    }

    /// All values of a column of numbers (empty for arrays and text: see [`Table::data`]).
    pub fn values(&self, column: usize) -> &[f64] {
        match &self.data[column] {
            Column::Numbers(values) => values,
            _ => &[],
        }
    }

    /// The rows around time `t`: the last row at or before it (`None` before the first row)
    /// and the first row after it (`None` after the last row).
    fn rows_around(&self, t: f64) -> (Option<usize>, Option<usize>) {
        // Index of the first row strictly after t: rows before it are at or before t.
        let after = self.time.partition_point(|&row_time| row_time <= t);
        (
            after.checked_sub(1),
            (after < self.time.len()).then_some(after),
        )
    }

    /// Where `t` falls: the row to take and, for linear interpolation, the next row with the
    /// weight of the next row. Before the first or after the last row the end row is held.
    fn position(&self, t: f64, interpolation: Interpolation) -> (usize, Option<(usize, f64)>) {
        match self.rows_around(t) {
            (None, _) => (0, None),
            (Some(row), None) => (row, None),
            (Some(row), Some(_)) if interpolation == Interpolation::Hold => (row, None),
            (Some(row), Some(next)) => {
                let (t0, t1) = (self.time[row], self.time[next]);
                (row, Some((next, (t - t0) / (t1 - t0))))
            }
        }
    }

    /// The value of a column of numbers at time `t` (NaN for other columns); before the first
    /// or after the last row the end value is held.
    pub fn value_at(&self, column: usize, t: f64, interpolation: Interpolation) -> f64 {
        let Column::Numbers(values) = &self.data[column] else {
            return f64::NAN;
        };
        match self.position(t, interpolation) {
            (row, None) => values[row],
            (row, Some((next, w))) => {
                let (v0, v1) = (values[row], values[next]);
                v0 + (v1 - v0) * w
            }
        }
    }

    /// The array of a column of arrays (or numbers, as one element) at time `t`, into `out`
    /// (cleared first); elementwise interpolation needs equal lengths, else the earlier row
    /// is held.
    pub fn array_at(
        &self,
        column: usize,
        t: f64,
        interpolation: Interpolation,
        out: &mut Vec<f64>,
    ) {
        out.clear();
        match &self.data[column] {
            Column::Numbers(_) => out.push(self.value_at(column, t, interpolation)),
            Column::Arrays(rows) => match self.position(t, interpolation) {
                (row, Some((next, w))) if rows[row].len() == rows[next].len() => out.extend(
                    rows[row]
                        .iter()
                        .zip(&rows[next])
                        .map(|(v0, v1)| v0 + (v1 - v0) * w),
                ),
                (row, _) => out.extend_from_slice(&rows[row]),
            },
            Column::Text(_) => {}
        }
    }

    /// The text of a column at time `t` (held: text does not interpolate).
    pub fn text_at(&self, column: usize, t: f64) -> Option<&str> {
        let (row, _) = self.position(t, Interpolation::Hold);
        match &self.data[column] {
            Column::Text(rows) => rows.get(row).map(String::as_str),
            _ => None,
        }
    }

    /// The position in the file (1 is time) of column `column` of [`Table::columns`].
    pub fn column_number(column: usize) -> usize {
        column + 2
    }

    /// The file line of row `row` (1 is the header).
    pub fn line_of_row(row: usize) -> usize {
        row + 2
    }
}

/// The kind of a column from its cells.
fn classify(cells: Vec<String>) -> Column {
    let numbers: Option<Vec<f64>> = cells.iter().map(|c| parse_cell(c)).collect();
    if let Some(numbers) = numbers {
        return Column::Numbers(numbers);
    }
    let arrays: Option<Vec<Vec<f64>>> = cells.iter().map(|c| parse_array(c)).collect();
    if let Some(arrays) = arrays {
        return Column::Arrays(arrays);
    }
    Column::Text(cells)
}

/// Space-separated numbers (or Booleans), at least one.
fn parse_array(cell: &str) -> Option<Vec<f64>> {
    let values: Option<Vec<f64>> = cell.split_whitespace().map(parse_cell).collect();
    values.filter(|v| !v.is_empty())
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
            err("time,u\n1,1\n0,1\n"),
            "in.csv: line 3: time 0 is before the previous row's 1; rows must be in time order"
        );
        assert_eq!(
            err("time,u\n"),
            "in.csv: the table has a header but no rows"
        );
        assert!(err("time,u\n0,1,2\n").contains("line 2 has 3 cells"));
        assert_eq!(
            err("time,u\n0,1\nNaN,2\n"),
            "in.csv: line 3: time \"NaN\" is not finite; times are finite numbers"
        );
        assert!(err("time,u\ninf,1\n").contains("time \"inf\" is not finite"));
    }

    #[test]
    fn columns_of_arrays_and_text_are_kept_whole() {
        let t = table("time,a,s,n\n0,1 2 3,on,1\n1,3 4 5,off,2\n");
        assert_eq!(
            t.data(0),
            &Column::Arrays(vec![vec![1.0, 2.0, 3.0], vec![3.0, 4.0, 5.0]])
        );
        assert_eq!(t.data(1).kind(), "text");
        assert_eq!(t.data(2), &Column::Numbers(vec![1.0, 2.0]));
        let mut a = Vec::new();
        t.array_at(0, 0.5, Interpolation::Linear, &mut a);
        assert_eq!(a, [2.0, 3.0, 4.0]);
        t.array_at(0, 0.5, Interpolation::Hold, &mut a);
        assert_eq!(a, [1.0, 2.0, 3.0]);
        assert_eq!(t.text_at(1, 0.99), Some("on"));
        assert_eq!(t.text_at(1, 1.0), Some("off"));
        assert!(t.value_at(1, 0.5, Interpolation::Hold).is_nan());
        assert!(t.values(1).is_empty());
    }
}
