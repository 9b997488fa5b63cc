//! Reading result files of every format cosimo writes (CSV, MAT, Arrow, Parquet) and the MAT
//! files of Dymola and OpenModelica, into one typed table: the time and named columns.
//! [`Table`](crate::table::Table) (plots, input files) and
//! [`SignalTable`](super::compare::SignalTable) (`cosimo check`) read through it; the format
//! is picked by the extension (anything but `.mat`, `.arrow`, `.parquet` is CSV).

pub mod arrow;
pub mod mat;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::settings::results::ResultFormat;
use crate::table::{Column, Table};

/// The values of one column, typed as the file stores them.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    Float(Vec<f64>),
    Int(Vec<i64>),
    UInt(Vec<u64>),
    Bool(Vec<bool>),
    /// A Float array per row.
    FloatArrays(Vec<Vec<f64>>),
    Text(Vec<String>),
    Bytes(Vec<Vec<u8>>),
}

/// A column of a result file.
#[derive(Debug, Clone, PartialEq)]
pub struct DataColumn {
    pub name: String,
    pub values: Data,
    /// The unit the file gives (Arrow and Parquet schema metadata, the `[unit]` at the end of
    /// a MAT description); None where it gives none (CSV).
    pub unit: Option<String>,
}

/// A result file read whole: the time and the columns after it, one value per row each.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultData {
    pub path: PathBuf,
    /// The time column's name (`time`, Dymola's `Time`, ...).
    pub time_name: String,
    pub time: Vec<f64>,
    pub columns: Vec<DataColumn>,
}

/// The format a result file is read as: by its extension, CSV for any other.
pub fn format_of(path: &Path) -> ResultFormat {
    ResultFormat::of_path(path).unwrap_or(ResultFormat::Csv)
}

/// Read a result file of any format (CSV columns as numbers, arrays or text: a CSV file does
/// not say which numbers are integers).
pub fn read_result(path: &Path) -> Result<ResultData> {
    crate::fs_checks::check_regular(path, "results")?;
    match format_of(path) {
        ResultFormat::Csv => Ok(from_table(&Table::read(path)?)),
        format => read_typed(path, format),
    }
}

/// Read a MAT, Arrow or Parquet file (a CSV path is read as CSV).
pub(crate) fn read_typed(path: &Path, format: ResultFormat) -> Result<ResultData> {
    let data = match format {
        ResultFormat::Csv => return Ok(from_table(&Table::read(path)?)),
        ResultFormat::Mat => mat::parse(&read_bytes(path)?, path)?,
        ResultFormat::Arrow => arrow::parse_ipc(read_bytes(path)?, path)?,
        ResultFormat::Parquet => arrow::read_parquet(path)?,
    };
    data.check()?;
    Ok(data)
}

fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    crate::fs_checks::check_regular(path, "results")?;
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

impl ResultData {
    /// Refuse what no table can hold: no rows, a time that is not finite or goes back, a
    /// column of another length.
    pub fn check(&self) -> Result<()> {
        let bad = |message: String| Error::Usage(format!("{}: {message}", self.path.display()));
        if self.time.is_empty() {
            return Err(bad("the file holds no rows (did the run that wrote it fail or get killed before its first output point?)".into()));
        }
        for (row, pair) in self.time.windows(2).enumerate() {
            if pair[1] < pair[0] {
                return Err(bad(format!(
                    "row {}: time {} is before the previous row's {}; rows must be in time order",
                    row + 2,
                    pair[1],
                    pair[0]
                )));
            }
        }
        if let Some((row, t)) = self.time.iter().enumerate().find(|(_, t)| !t.is_finite()) {
            return Err(bad(format!(
                "row {}: time {t} is not finite; times are finite numbers",
                row + 1
            )));
        }
        for column in &self.columns {
            if column.values.len() != self.time.len() {
                return Err(bad(format!(
                    "column {} has {} values for {} times",
                    column.name,
                    column.values.len(),
                    self.time.len()
                )));
            }
        }
        Ok(())
    }

    /// The columns as a [`Table`]'s: numbers (integers and Booleans as numbers), arrays and
    /// text (Binary as hex).
    pub fn table_columns(&self) -> Vec<(String, Column)> {
        self.columns
            .iter()
            .map(|c| {
                let column = match &c.values {
                    Data::Float(v) => Column::Numbers(v.clone()),
                    Data::Int(v) => Column::Numbers(v.iter().map(|&x| x as f64).collect()),
                    Data::UInt(v) => Column::Numbers(v.iter().map(|&x| x as f64).collect()),
                    Data::Bool(v) => {
                        Column::Numbers(v.iter().map(|&x| f64::from(u8::from(x))).collect())
                    }
                    Data::FloatArrays(v) => Column::Arrays(v.clone()),
                    Data::Text(v) => Column::Text(v.clone()),
                    Data::Bytes(v) => Column::Text(v.iter().map(|b| hex(b)).collect()),
                };
                (c.name.clone(), column)
            })
            .collect()
    }
}

impl Data {
    /// Values (rows) in the column.
    pub fn len(&self) -> usize {
        match self {
            Data::Float(v) => v.len(),
            Data::Int(v) => v.len(),
            Data::UInt(v) => v.len(),
            Data::Bool(v) => v.len(),
            Data::FloatArrays(v) => v.len(),
            Data::Text(v) => v.len(),
            Data::Bytes(v) => v.len(),
        }
    }

    /// True for a column of no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Binary as lowercase hex, as the CSV writer writes it.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

/// A CSV table as typed columns: numbers as Float, arrays, text.
fn from_table(table: &Table) -> ResultData {
    let columns = table
        .columns()
        .iter()
        .enumerate()
        .map(|(i, name)| DataColumn {
            name: name.clone(),
            values: match table.data(i) {
                Column::Numbers(v) => Data::Float(v.clone()),
                Column::Arrays(v) => Data::FloatArrays(v.clone()),
                Column::Text(v) => Data::Text(v.clone()),
            },
            unit: None,
        })
        .collect();
    ResultData {
        path: table.path().to_path_buf(),
        time_name: table.time_name().to_string(),
        time: table.time().to_vec(),
        columns,
    }
}
