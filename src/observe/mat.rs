//! A streaming MAT v4 writer in the "dsres" layout that Dymola and OpenModelica write and
//! OMEdit, DyMat, BuildingsPy, scipy and MATLAB read:
//!
//! - `Aclass`: the text rows `Atrajectory`, `1.1`, ``, `binTrans` (the matrices below are
//!   stored transposed: one column per variable or per time point);
//! - `name`, `description`: one column of characters per variable (blank-padded); the
//!   description ends in `[unit]` when the variable has one;
//! - `dataInfo`: four Int32 per variable: the data matrix (0: the time axis, 1: `data_1`,
//!   2: `data_2`), the 1-based row in it (negative: the value negated; several variables on
//!   one row are aliases), the interpolation (0: linear) and the extrapolation (-1 for time,
//!   0: the first / last value is held);
//! - `data_1`: the time-invariant values (constants and fixed parameters), one row each after
//!   the time, at the first and the last time;
//! - `data_2`: the time and the time-varying values, one column per output point.
//!
//! `data_2` is the last matrix and grows as rows come: they are buffered and appended at most
//! [`FLUSH_INTERVAL`](super::flush::FLUSH_INTERVAL) after they were written, and each flush
//! then patches `data_2`'s column count (and `data_1`'s last time) in place, so a run that
//! fails or is killed leaves a file that every MAT reader opens, with every row flushed.
//! Values are stored as doubles; String and Binary variables (and arrays other than Float
//! arrays, which become one variable per element, `y[1]`, `y[2]`, ...) have no place in the
//! layout and are left out, with one warning naming them.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::flush::FlushClock;
use crate::error::{Error, Result};
use crate::fmu::description::{Variability, VariableType};
use crate::master::record::{Cell, ResultColumn, Row};
use crate::master::run::Observer;
use crate::master::RunStatistics;

/// MAT v4 type codes (little-endian IEEE): full double, Int32 and text matrices.
const DOUBLE: i32 = 0;
const INT32: i32 = 20;
const TEXT: i32 = 51;

/// Writes result rows to a MAT v4 file in the dsres layout.
pub struct MatWriter {
    file: File,
    path: PathBuf,
    /// Where each `data_1` row (after the time) takes its value from.
    parameters: Vec<Source>,
    /// Where each `data_2` row (after the time) takes its value from.
    signals: Vec<Source>,
    /// Where `data_1`'s last time and `data_2`'s column count are, once the first row wrote
    /// the two matrices.
    patches: Option<Patches>,
    /// Rows written (buffered or in the file).
    rows: usize,
    last_time: f64,
    /// Rows not yet in the file, as the doubles of `data_2`'s columns.
    buffer: Vec<u8>,
    clock: FlushClock,
}

/// A value of the row: a cell, or one element of a Float array cell.
#[derive(Debug, Clone, Copy)]
struct Source {
    cell: usize,
    element: Option<usize>,
}

/// File offsets patched at each flush.
#[derive(Debug, Clone, Copy)]
struct Patches {
    /// `data_1`'s time at the last row.
    last_time: u64,
    /// `data_2`'s column count (the header's third Int32).
    columns: u64,
}

/// One variable of the file: its name, description and `dataInfo` column.
struct Entry {
    name: String,
    description: String,
    info: [i32; 4],
}

impl MatWriter {
    /// Create `path` and write the variables' names, descriptions and `dataInfo`; `warn` is
    /// told once about the columns the layout cannot hold.
    pub fn create(
        path: &Path,
        columns: &[ResultColumn],
        warn: &mut dyn FnMut(&str),
    ) -> Result<MatWriter> {
        let mut entries = vec![Entry {
            name: "time".into(),
            description: "time [s]".into(),
            info: [0, 1, 0, -1],
        }];
        let mut parameters = Vec::new();
        let mut signals = Vec::new();
        // Columns reading the same value share a row of their data matrix: aliases.
        let mut rows: HashMap<(usize, u32, VariableType, Option<usize>), [i32; 2]> = HashMap::new();
        let mut left_out = Vec::new();
        let too_many = || {
            Error::Usage(format!(
                "{}: more variables than a MAT v4 file can index; record fewer \
                 (--output-variable) or write another format",
                path.display()
            ))
        };
        for (cell, column) in columns.iter().enumerate() {
            let text = matches!(column.var_type, VariableType::String | VariableType::Binary);
            if text || (column.array.is_some() && !column.var_type.is_float()) {
                left_out.push(column.name.as_str());
                continue;
            }
            let elements: Vec<(String, Option<usize>)> = match column.array {
                Some(n) => (0..n)
                    .map(|k| (format!("{}[{}]", column.name, k + 1), Some(k)))
                    .collect(),
                None => vec![(column.name.clone(), None)],
            };
            let invariant = matches!(
                column.variability,
                Variability::Constant | Variability::Fixed
            );
            let description = describe(column);
            for (name, element) in elements {
                let (component, vr, var_type, own) = column.source;
                let key = (component, vr, var_type, element.or(own));
                let place = match rows.get(&key) {
                    Some(&place) => place,
                    None => {
                        let source = Source { cell, element };
                        let (block, list) = if invariant {
                            (1, &mut parameters)
                        } else {
                            (2, &mut signals)
                        };
                        list.push(source);
                        let row = i32::try_from(list.len() + 1).map_err(|_| too_many())?;
                        rows.insert(key, [block, row]);
                        [block, row]
                    }
                };
                entries.push(Entry {
                    name,
                    description: description.clone(),
                    info: [place[0], place[1], 0, 0],
                });
            }
        }
        if !left_out.is_empty() {
            warn(&format!(
                "{}: MAT files hold numbers only: {} left out (write .csv, .arrow or .parquet \
                 for them)",
                path.display(),
                name_list(&left_out)
            ));
        }
        i32::try_from(entries.len()).map_err(|_| too_many())?;
        let mut header = Vec::new();
        let aclass = ["Atrajectory", "1.1", "", "binTrans"];
        text_matrix(&mut header, "Aclass", &aclass, Layout::Rows)?;
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        text_matrix(&mut header, "name", &names, Layout::Columns)?;
        let descriptions: Vec<&str> = entries.iter().map(|e| e.description.as_str()).collect();
        text_matrix(&mut header, "description", &descriptions, Layout::Columns)?;
        matrix_header(&mut header, "dataInfo", INT32, 4, entries.len())?;
        for entry in &entries {
            for value in entry.info {
                header.extend_from_slice(&value.to_le_bytes());
            }
        }
        let mut file = File::create(path).map_err(|e| Error::io(path, e))?;
        file.write_all(&header).map_err(|e| Error::io(path, e))?;
        Ok(MatWriter {
            file,
            path: path.to_path_buf(),
            parameters,
            signals,
            patches: None,
            rows: 0,
            last_time: f64::NAN,
            buffer: Vec::new(),
            clock: FlushClock::default(),
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether rows wait in the buffer.
    pub fn pending(&self) -> bool {
        self.clock.pending()
    }

    /// Write one row (the first also writes `data_1` from its values, and `data_2`'s header).
    pub fn write_row(&mut self, row: &Row) -> Result<()> {
        if self.patches.is_none() {
            self.start_data(row)?;
        }
        if self.rows >= i32::MAX as usize {
            return Err(Error::Usage(format!(
                "{}: a MAT v4 file holds at most {} rows; write .arrow or .parquet for longer runs, or a longer --output-interval",
                self.path.display(),
                i32::MAX
            )));
        }
        self.buffer.extend_from_slice(&row.time.to_le_bytes());
        for source in &self.signals {
            let value = value(&row.cells, *source);
            self.buffer.extend_from_slice(&value.to_le_bytes());
        }
        self.rows += 1;
        self.last_time = row.time;
        if self.clock.wrote() {
            self.flush()?;
        }
        Ok(())
    }

    /// `data_1` (the invariant values at this first row, at the first and the last time) and
    /// `data_2`'s header with no columns yet.
    fn start_data(&mut self, row: &Row) -> Result<()> {
        let mut bytes = Vec::new();
        let height = self.parameters.len() + 1;
        matrix_header(&mut bytes, "data_1", DOUBLE, height, 2)?;
        let data_1 = self.position()? + bytes.len() as u64;
        for _ in 0..2 {
            bytes.extend_from_slice(&row.time.to_le_bytes());
            for source in &self.parameters {
                bytes.extend_from_slice(&value(&row.cells, *source).to_le_bytes());
            }
        }
        let data_2 = self.position()? + bytes.len() as u64;
        matrix_header(&mut bytes, "data_2", DOUBLE, self.signals.len() + 1, 0)?;
        self.file
            .write_all(&bytes)
            .map_err(|e| Error::io(&self.path, e))?;
        self.patches = Some(Patches {
            last_time: data_1 + 8 * height as u64,
            columns: data_2 + 8,
        });
        Ok(())
    }

    fn position(&mut self) -> Result<u64> {
        self.file
            .stream_position()
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Append the buffered rows, then count them in `data_2`'s header: a reader never sees a
    /// column count beyond the rows in the file.
    pub fn flush(&mut self) -> Result<()> {
        self.clock.flushed();
        let Some(patches) = self.patches else {
            return Ok(());
        };
        let failed = |e| Error::io(&self.path, e);
        if !self.buffer.is_empty() {
            self.file.write_all(&self.buffer).map_err(failed)?;
            self.buffer.clear();
        }
        let columns = i32::try_from(self.rows).unwrap_or(i32::MAX);
        let end = self.file.stream_position().map_err(failed)?;
        for (at, bytes) in [
            (patches.columns, &columns.to_le_bytes()[..]),
            (patches.last_time, &self.last_time.to_le_bytes()[..]),
        ] {
            self.file.seek(SeekFrom::Start(at)).map_err(failed)?;
            self.file.write_all(bytes).map_err(failed)?;
        }
        self.file.seek(SeekFrom::Start(end)).map_err(failed)?;
        Ok(())
    }
}

impl Observer for MatWriter {
    fn row(&mut self, row: &Row) -> Result<()> {
        self.write_row(row)
    }

    fn stepped(&mut self, _time: f64) {
        if self.clock.stepped() {
            // A write error shows at the next row or the end.
            let _ = self.flush();
        }
    }

    fn finished(&mut self, _stats: &RunStatistics) -> Result<()> {
        self.flush()
    }

    fn failed(&mut self, _error: &Error) {
        if let Err(e) = self.flush() {
            log::error!("{e}");
        }
    }
}

/// A row's value at `source` as a double (NaN where the cell holds none).
fn value(cells: &[Cell], source: Source) -> f64 {
    match (cells.get(source.cell), source.element) {
        (Some(Cell::Float(x)), _) => *x,
        (Some(Cell::Floats(v)), Some(k)) => v.get(k).copied().unwrap_or(f64::NAN),
        (Some(Cell::Int(x)), _) => *x as f64,
        (Some(Cell::UInt(x)), _) => *x as f64,
        (Some(Cell::Bool(x)), _) => f64::from(u8::from(*x)),
        _ => f64::NAN,
    }
}

/// The description as dsres files carry it: the text, then the unit in brackets.
fn describe(column: &ResultColumn) -> String {
    let text = column.description.as_deref().unwrap_or("");
    match column.unit.as_deref().filter(|u| !u.is_empty()) {
        Some(unit) if text.is_empty() => format!("[{unit}]"),
        Some(unit) => format!("{text} [{unit}]"),
        None => text.to_string(),
    }
}

/// Names for a message: the first ten, then how many more.
fn name_list(names: &[&str]) -> String {
    const SHOWN: usize = 10;
    let mut text = names
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// How the strings of a text matrix lie: one per row (`Aclass`) or one per column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    Rows,
    Columns,
}

/// A text matrix of `strings`, blank-padded to the longest (MAT stores column by column).
fn text_matrix(out: &mut Vec<u8>, name: &str, strings: &[&str], layout: Layout) -> Result<()> {
    let width = strings.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
    let padded = |s: &str, i: usize| s.as_bytes().get(i).copied().unwrap_or(b' ');
    match layout {
        Layout::Columns => {
            matrix_header(out, name, TEXT, width, strings.len())?;
            for s in strings {
                out.extend((0..width).map(|i| padded(s, i)));
            }
        }
        Layout::Rows => {
            matrix_header(out, name, TEXT, strings.len(), width)?;
            for i in 0..width {
                out.extend(strings.iter().map(|s| padded(s, i)));
            }
        }
    }
    Ok(())
}

/// A MAT v4 matrix header: type, rows, columns, no imaginary part, the name with its NUL.
fn matrix_header(
    out: &mut Vec<u8>,
    name: &str,
    kind: i32,
    rows: usize,
    columns: usize,
) -> Result<()> {
    let dimension = |n: usize| {
        i32::try_from(n).map_err(|_| {
            Error::Usage(format!(
                "MAT v4 matrix {name} would have {n} rows or columns, more than the format holds; write another format"
            ))
        })
    };
    for value in [
        kind,
        dimension(rows)?,
        dimension(columns)?,
        0,
        name.len() as i32 + 1,
    ] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fmu::description::Causality;
    use crate::results::read::{mat::parse, Data};

    fn column(
        name: &str,
        vr: u32,
        var_type: VariableType,
        variability: Variability,
    ) -> ResultColumn {
        ResultColumn {
            name: name.into(),
            var_type,
            causality: Causality::Output,
            variability,
            unit: Some("m".into()),
            description: Some("a length".into()),
            array: None,
            source: (0, vr, var_type, None),
        }
    }

    #[test]
    fn aliases_share_a_row_parameters_go_to_data_1_and_text_is_left_out_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.mat");
        let x = column("x", 1, VariableType::Float64, Variability::Continuous);
        let alias = ResultColumn {
            name: "x_alias".into(),
            ..x.clone()
        };
        let p = column("p", 2, VariableType::Float64, Variability::Fixed);
        let n = column("n", 3, VariableType::Int32, Variability::Discrete);
        let s = column("s", 4, VariableType::String, Variability::Discrete);
        let a = ResultColumn {
            array: Some(2),
            ..column("a", 5, VariableType::Float64, Variability::Continuous)
        };
        let mut warnings = Vec::new();
        let mut writer = MatWriter::create(&path, &[x, alias, p, n, s, a], &mut |w| {
            warnings.push(w.to_string())
        })
        .unwrap();
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].ends_with(
                "MAT files hold numbers only: s left out (write .csv, .arrow or .parquet for them)"
            ),
            "{warnings:?}"
        );
        for k in 0..3 {
            let t = f64::from(k) * 0.1;
            writer
                .write_row(&Row {
                    time: t,
                    cells: vec![
                        Cell::Float(t * t),
                        Cell::Float(t * t),
                        Cell::Float(7.0),
                        Cell::Int(-k as i64),
                        Cell::Text("hi".into()),
                        Cell::Floats(vec![t, -t]),
                    ],
                })
                .unwrap();
        }
        writer.flush().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let data = parse(&bytes, &path).unwrap();
        assert_eq!(data.time, [0.0, 0.1, 0.2]);
        let names: Vec<&str> = data.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["x", "x_alias", "p", "n", "a[1]", "a[2]"]);
        assert_eq!(data.columns[0].values, data.columns[1].values);
        assert_eq!(data.columns[2].values, Data::Float(vec![7.0; 3]));
        assert_eq!(data.columns[3].values, Data::Float(vec![0.0, -1.0, -2.0]));
        assert_eq!(data.columns[5].values, Data::Float(vec![0.0, -0.1, -0.2]));
        // data_2 holds time, x, n, a[1], a[2]: the alias adds no row.
        let header = bytes.windows(7).position(|w| w == b"data_2\0").unwrap() - 20;
        let field = |k: usize| {
            i32::from_le_bytes(
                bytes[header + 4 * k..header + 4 * k + 4]
                    .try_into()
                    .unwrap(),
            )
        };
        assert_eq!((field(1), field(2)), (5, 3));
        // The description carries the unit as dsres files do.
        assert!(bytes.windows(12).any(|w| w == b"a length [m]"));
    }

    #[test]
    fn a_file_read_between_flushes_holds_the_flushed_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.mat");
        let x = column("x", 1, VariableType::Float64, Variability::Continuous);
        let mut writer = MatWriter::create(&path, &[x], &mut |_| {}).unwrap();
        let row = |t: f64| Row {
            time: t,
            cells: vec![Cell::Float(2.0 * t)],
        };
        writer.write_row(&row(0.0)).unwrap();
        writer.flush().unwrap();
        writer.write_row(&row(1.0)).unwrap();
        // The second row is buffered: the file holds one.
        let data = parse(&std::fs::read(&path).unwrap(), &path).unwrap();
        assert_eq!(data.time, [0.0]);
        writer.flush().unwrap();
        let data = parse(&std::fs::read(&path).unwrap(), &path).unwrap();
        assert_eq!(data.time, [0.0, 1.0]);
        // Bytes after data_2 that its header does not count (killed between the two writes).
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&2.0f64.to_le_bytes());
        assert_eq!(parse(&bytes, &path).unwrap().time, [0.0, 1.0]);
    }
}
