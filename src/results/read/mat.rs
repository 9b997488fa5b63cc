//! MAT v4 result files in the "dsres" layout (cosimo's, Dymola's, OpenModelica's), in both of
//! its orientations (`binTrans`: a column per variable and per time point; `binNormal`: rows),
//! and Dymola's older layout of one `data` matrix with its `names` (`Aclass` version 1.0).
//!
//! A variable's `dataInfo` says where its values are: matrix 1 (`data_1`, constant over the run:
//! its first value is taken for every row) or matrix 2 (`data_2`, one value per time point),
//! at a 1-based row whose sign says whether the value is negated; variables on one row are
//! aliases. The time is row 1 of `data_2`.
//!
//! Every size a header declares is checked against the bytes left before anything is
//! allocated, and so is the table the aliases and parameters would spread into (at most
//! [`CELLS_PER_BYTE`] cells per byte of the file): a broken or hostile header is an error that
//! names the file and the matrix. Bytes after a complete `data_2` that form no matrix (a run
//! killed while it appended rows, before it counted them) are left out.

use std::path::Path;

use super::{Data, DataColumn, ResultData};
use crate::error::{Error, Result};

/// The most table cells (rows times columns) read per byte of the file: aliases and
/// parameters repeat values, but a file cannot make cosimo allocate without bound.
pub const CELLS_PER_BYTE: usize = 8;

/// A MAT v4 matrix in the file, its values still bytes.
struct Matrix<'a> {
    name: String,
    /// Element type (the P digit): 0 double, 1 single, 2 Int32, 3 Int16, 4 UInt16, 5 UInt8.
    precision: u8,
    rows: usize,
    columns: usize,
    /// The real part, column by column.
    data: &'a [u8],
}

impl Matrix<'_> {
    /// The element at (row, column), both 0-based and in range.
    fn at(&self, row: usize, column: usize) -> f64 {
        let i = column * self.rows + row;
        let d = self.data;
        match self.precision {
            0 => f64::from_le_bytes(bytes8(d, i * 8)),
            1 => f64::from(f32::from_le_bytes(bytes4(d, i * 4))),
            2 => f64::from(i32::from_le_bytes(bytes4(d, i * 4))),
            3 => f64::from(i16::from_le_bytes([d[i * 2], d[i * 2 + 1]])),
            4 => f64::from(u16::from_le_bytes([d[i * 2], d[i * 2 + 1]])),
            _ => f64::from(d[i]),
        }
    }

    /// The strings of a text matrix: its rows, or its columns (trailing blanks and NULs cut).
    fn strings(&self, by_column: bool) -> Vec<String> {
        let (count, length) = if by_column {
            (self.columns, self.rows)
        } else {
            (self.rows, self.columns)
        };
        (0..count)
            .map(|s| {
                let chars: String = (0..length)
                    .map(|k| {
                        let code = if by_column {
                            self.at(k, s)
                        } else {
                            self.at(s, k)
                        };
                        char::from_u32(code as u32).unwrap_or('?')
                    })
                    .collect();
                chars.trim_end_matches([' ', '\0']).to_string()
            })
            .collect()
    }
}

fn bytes8(d: &[u8], at: usize) -> [u8; 8] {
    let mut b = [0; 8];
    b.copy_from_slice(&d[at..at + 8]);
    b
}

fn bytes4(d: &[u8], at: usize) -> [u8; 4] {
    [d[at], d[at + 1], d[at + 2], d[at + 3]]
}

/// Read a dsres MAT file's bytes; `path` names it in messages.
pub fn parse(bytes: &[u8], path: &Path) -> Result<ResultData> {
    let bad = |message: String| {
        Error::Usage(format!(
            "{}: not a readable MAT result file: {message}",
            path.display()
        ))
    };
    if bytes.starts_with(b"MATLAB") {
        return Err(bad("it is a MAT v5 or later file (the header says MATLAB ...); result files are MAT v4: save it with -v4 in MATLAB, or format='4' in scipy".into()));
    }
    let matrices = matrices(bytes).map_err(&bad)?;
    let find = |name: &str| matrices.iter().find(|m| m.name == name);
    let aclass = find("Aclass")
        .ok_or_else(|| bad("no Aclass matrix: cosimo reads the dsres layout of Dymola and OpenModelica (Aclass, name, dataInfo, data_1, data_2)".into()))?;
    let class = aclass.strings(false);
    let version = class.get(1).map(String::as_str).unwrap_or("");
    let orientation = class.get(3).map(String::as_str).unwrap_or("");
    let budget = bytes.len().saturating_mul(CELLS_PER_BYTE).max(1 << 16);
    match version {
        "1.1" => {}
        "1.0" => return old_layout(&matrices, budget, path).map_err(bad),
        other => {
            return Err(bad(format!(
                "Aclass says version \"{other}\"; cosimo reads versions 1.1 and 1.0"
            )))
        }
    }
    let transposed = match orientation {
        "binTrans" => true,
        "binNormal" | "" => false,
        other => {
            return Err(bad(format!(
                "Aclass says \"{other}\"; cosimo reads binTrans and binNormal"
            )))
        }
    };
    let need = |name: &str| find(name).ok_or_else(|| bad(format!("no {name} matrix")));
    let names = need("name")?.strings(transposed);
    // Optional: the units at the ends of the descriptions ("text [unit]", Dymola's
    // "text [unit|displayUnit]"); a description matrix of another count is not used.
    let descriptions = find("description")
        .map(|m| m.strings(transposed))
        .filter(|d| d.len() == names.len())
        .unwrap_or_default();
    let info = need("dataInfo")?;
    let (info_count, info_width) = if transposed {
        (info.columns, info.rows)
    } else {
        (info.rows, info.columns)
    };
    if info_count != names.len() || info_width < 2 {
        return Err(bad(format!(
            "dataInfo describes {info_count} variables with {info_width} numbers each; the name matrix names {} (expected at least 2 numbers each)",
            names.len()
        )));
    }
    let info_at = |variable: usize, k: usize| {
        if transposed {
            info.at(k, variable)
        } else {
            info.at(variable, k)
        }
    };
    // A data matrix as (values of variable row r at time point t).
    let block = |k: i64| find(&format!("data_{k}"));
    let extent = |m: &Matrix| {
        if transposed {
            (m.rows, m.columns)
        } else {
            (m.columns, m.rows)
        }
    };
    let value = |m: &Matrix, row: usize, point: usize| {
        if transposed {
            m.at(row, point)
        } else {
            m.at(point, row)
        }
    };
    let data_2 = block(2);
    let (time_matrix, points) = match data_2 {
        Some(m) if extent(m).1 > 0 => (m, extent(m).1),
        _ => match block(1) {
            // Only invariant values: the run stopped before its second row, or had none.
            Some(m) if data_2.is_some() && extent(m).1 > 0 => (m, 1),
            _ => return Err(bad("data_2 holds no rows (did the run that wrote it fail or get killed before its first output point?)".into())),
        },
    };
    if extent(time_matrix).0 == 0 {
        return Err(bad(format!("{} has no time row", time_matrix.name)));
    }
    let time: Vec<f64> = (0..points).map(|t| value(time_matrix, 0, t)).collect();
    let variables = names.len().saturating_sub(1);
    if variables.saturating_mul(points) > budget {
        return Err(bad(format!(
            "its {} variables over {points} time points would take more memory than a file of {} bytes may ask for",
            names.len(),
            bytes.len()
        )));
    }
    let mut columns = Vec::new();
    let mut time_name = None;
    for (variable, name) in names.iter().enumerate() {
        let which = info_at(variable, 0);
        let index = info_at(variable, 1);
        if which == 0.0 || (index.abs() == 1.0 && (which == 1.0 || which == 2.0)) {
            // The time axis (dataInfo block 0, or row 1 of a data matrix).
            time_name.get_or_insert_with(|| name.clone());
            continue;
        }
        if !(which.fract() == 0.0 && index.fract() == 0.0 && index != 0.0) {
            return Err(bad(format!(
                "dataInfo of {name}: matrix {which}, row {index} are not whole numbers"
            )));
        }
        let Some(matrix) = block(which as i64).filter(|_| which == 1.0 || which == 2.0) else {
            return Err(bad(format!(
                "dataInfo of {name} points to data_{which}, which cosimo does not read (it reads data_1 and data_2)"
            )));
        };
        let row = index.abs() as usize - 1;
        let (height, width) = extent(matrix);
        if row >= height || width == 0 {
            return Err(bad(format!(
                "dataInfo of {name} points to row {} of {}, which has {height} rows and {width} time points",
                row + 1,
                matrix.name
            )));
        }
        let sign = if index < 0.0 { -1.0 } else { 1.0 };
        let values: Vec<f64> = if which == 1.0 {
            vec![sign * value(matrix, row, 0); points]
        } else {
            (0..points).map(|t| sign * value(matrix, row, t)).collect()
        };
        columns.push(DataColumn {
            name: name.clone(),
            values: Data::Float(values),
            unit: descriptions
                .get(variable)
                .and_then(|d| unit_of_description(d)),
        });
    }
    Ok(ResultData {
        path: path.to_path_buf(),
        time_name: time_name.unwrap_or_else(|| "time".into()),
        time,
        columns,
    })
}

/// Dymola's version 1.0: `names` (one per row) and `data` (one row per time point, the time
/// first).
fn old_layout(
    matrices: &[Matrix],
    budget: usize,
    path: &Path,
) -> std::result::Result<ResultData, String> {
    let find = |name: &str| {
        matrices
            .iter()
            .find(|m| m.name == name)
            .ok_or(format!("Aclass version 1.0 without a {name} matrix"))
    };
    let names = find("names")?.strings(false);
    let data = find("data")?;
    if data.columns != names.len() || data.columns == 0 {
        return Err(format!(
            "data has {} columns for {} names",
            data.columns,
            names.len()
        ));
    }
    if data.rows.saturating_mul(data.columns) > budget {
        return Err("the data matrix is larger than the file can hold".into());
    }
    let time = (0..data.rows).map(|t| data.at(t, 0)).collect();
    let columns = names
        .iter()
        .enumerate()
        .skip(1)
        .map(|(k, name)| DataColumn {
            name: name.clone(),
            values: Data::Float((0..data.rows).map(|t| data.at(t, k)).collect()),
            unit: None,
        })
        .collect();
    Ok(ResultData {
        path: path.to_path_buf(),
        time_name: names[0].clone(),
        time,
        columns,
    })
}

/// The unit a dsres description ends with: `[m]`, or Dymola's `[rad|deg]` (the unit, then the
/// display unit); None without brackets at the end.
fn unit_of_description(description: &str) -> Option<String> {
    let inside = description.trim_end().strip_suffix(']')?;
    let (_, unit) = inside.rsplit_once('[')?;
    let unit = unit.split('|').next().unwrap_or("").trim();
    (!unit.is_empty()).then(|| unit.to_string())
}

/// The matrices of a MAT v4 file, each header checked against the bytes left.
fn matrices(bytes: &[u8]) -> std::result::Result<Vec<Matrix<'_>>, String> {
    let mut matrices: Vec<Matrix> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match matrix(bytes, at) {
            Ok((matrix, next)) => {
                matrices.push(matrix);
                at = next;
            }
            // Rows appended after the last count of a killed run.
            Err(_) if matrices.last().is_some_and(|m| m.name == "data_2") => break,
            Err(message) => {
                return Err(match matrices.last() {
                    Some(previous) => format!(
                        "the matrix after {} (at byte {at}): {message}",
                        previous.name
                    ),
                    None => format!("the first matrix: {message}"),
                })
            }
        }
    }
    if matrices.is_empty() {
        return Err("the file is empty".into());
    }
    Ok(matrices)
}

/// The matrix whose header starts at `at`, and where the next one starts.
fn matrix(bytes: &[u8], at: usize) -> std::result::Result<(Matrix<'_>, usize), String> {
    let header = bytes
        .get(at..at + 20)
        .ok_or("the file ends inside a matrix header")?;
    let field = |k: usize| i32::from_le_bytes(bytes4(header, 4 * k));
    let (kind, rows, columns, imaginary, name_length) =
        (field(0), field(1), field(2), field(3), field(4));
    if !(0..10_000).contains(&kind) {
        let big_endian = i32::from_be_bytes(bytes4(header, 0));
        return Err(if (1000..2000).contains(&big_endian) {
            "it is big-endian, which cosimo does not read; save it on a little-endian machine or with scipy".into()
        } else {
            format!("type code {kind} is not a MAT v4 type (is this a MAT v4 file? MAT v5 and v7.3 files are not read)")
        });
    }
    let (machine, order, precision, class) =
        (kind / 1000, kind / 100 % 10, kind / 10 % 10, kind % 10);
    if machine == 1 {
        return Err("it is big-endian, which cosimo does not read; save it on a little-endian machine or with scipy".into());
    }
    if machine != 0 || order != 0 || precision > 5 || class > 1 {
        return Err(format!(
            "type code {kind} is not a full numeric or text MAT v4 matrix (sparse and VAX formats are not read)"
        ));
    }
    let count =
        |n: i32, what: &str| usize::try_from(n).map_err(|_| format!("the header gives {n} {what}"));
    let (rows, columns) = (count(rows, "rows")?, count(columns, "columns")?);
    let name_length = count(name_length, "as the name's length")?;
    if name_length == 0 {
        return Err("the header gives a name of length 0".into());
    }
    let name_at = at + 20;
    let name = bytes
        .get(name_at..name_at.saturating_add(name_length))
        .ok_or(format!(
            "the header gives a name of {name_length} bytes, more than the file holds"
        ))?;
    let name = String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
    let size = [8u128, 4, 4, 2, 2, 1][precision as usize];
    let parts = if imaginary != 0 { 2 } else { 1 };
    let data_at = name_at + name_length;
    let left = bytes.len() - data_at;
    // In 128 bits: no product of two Int32 and a size overflows.
    let length = rows as u128 * columns as u128 * size;
    if length * parts > left as u128 {
        return Err(format!(
            "matrix {name}: {rows} x {columns} values need {} bytes, but {left} are left in the file (a broken or cut file)",
            length * parts
        ));
    }
    let length = length as usize;
    let end = data_at + length * parts as usize;
    // A matrix without elements has no extent: 0 x 2^31 must not make 2^31 empty names (or
    // rows) of nothing downstream.
    let (rows, columns) = if length == 0 { (0, 0) } else { (rows, columns) };
    Ok((
        Matrix {
            name,
            precision: precision as u8,
            rows,
            columns,
            data: &bytes[data_at..data_at + length],
        },
        end,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix in MAT v4 bytes (column-major values as doubles, or text).
    fn matrix(out: &mut Vec<u8>, name: &str, kind: i32, rows: i32, columns: i32, values: &[f64]) {
        for v in [kind, rows, columns, 0, name.len() as i32 + 1] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        for v in values {
            match kind {
                0 => out.extend_from_slice(&v.to_le_bytes()),
                10 => out.extend_from_slice(&(*v as f32).to_le_bytes()),
                20 => out.extend_from_slice(&(*v as i32).to_le_bytes()),
                _ => out.push(*v as u8),
            }
        }
    }

    /// A text matrix of `strings` as rows (padded with blanks).
    fn text_rows(out: &mut Vec<u8>, name: &str, strings: &[&str]) {
        let width = strings.iter().map(|s| s.len()).max().unwrap_or(1);
        let mut values = Vec::new();
        for k in 0..width {
            for s in strings {
                values.push(f64::from(*s.as_bytes().get(k).unwrap_or(&b' ')));
            }
        }
        matrix(out, name, 51, strings.len() as i32, width as i32, &values);
    }

    /// A Dymola-like binNormal file in single precision: rows are variables' entries.
    #[test]
    fn bin_normal_single_precision_with_a_negated_alias_and_a_parameter() {
        let mut b = Vec::new();
        text_rows(&mut b, "Aclass", &["Atrajectory", "1.1", "", "binNormal"]);
        text_rows(&mut b, "name", &["Time", "x", "minus_x", "k"]);
        text_rows(
            &mut b,
            "description",
            &["Time in [s]", "Position [m]", "[rad|deg]", "Gain"],
        );
        // dataInfo: 4 rows (variables) x 4 columns, column-major.
        let info = [[0, 1, 0, -1], [2, 2, 0, -1], [2, -2, 0, -1], [1, 2, 0, 0]];
        let values: Vec<f64> = (0..4)
            .flat_map(|k| info.iter().map(move |row| f64::from(row[k])))
            .collect();
        matrix(&mut b, "dataInfo", 20, 4, 4, &values);
        // data_1: 2 time points x 2 rows (time, k).
        matrix(&mut b, "data_1", 10, 2, 2, &[0.0, 2.0, 7.5, 7.5]);
        // data_2: 3 time points x 2 rows (time, x), binNormal: a row per time point.
        matrix(
            &mut b,
            "data_2",
            10,
            3,
            2,
            &[0.0, 1.0, 2.0, 0.5, 0.25, -1.0],
        );
        let data = parse(&b, Path::new("dymola.mat")).unwrap();
        assert_eq!(data.time, [0.0, 1.0, 2.0]);
        let column = |name: &str| {
            let c = data.columns.iter().find(|c| c.name == name).unwrap();
            c.values.clone()
        };
        assert_eq!(column("x"), Data::Float(vec![0.5, 0.25, -1.0]));
        assert_eq!(column("minus_x"), Data::Float(vec![-0.5, -0.25, 1.0]));
        assert_eq!(column("k"), Data::Float(vec![7.5; 3]));
        assert_eq!(data.columns.len(), 3);
        // The units at the ends of the descriptions (Dymola's unit|displayUnit: the unit).
        let units: Vec<Option<&str>> = data.columns.iter().map(|c| c.unit.as_deref()).collect();
        assert_eq!(units, [Some("m"), Some("rad"), None]);
    }

    #[test]
    fn hostile_sizes_are_refused_before_allocating() {
        let mut b = Vec::new();
        text_rows(&mut b, "Aclass", &["Atrajectory", "1.1", "", "binTrans"]);
        let mut huge = b.clone();
        for v in [0i32, i32::MAX, i32::MAX, 0, 7] {
            huge.extend_from_slice(&v.to_le_bytes());
        }
        huge.extend_from_slice(b"data_2\0");
        let message = parse(&huge, Path::new("h.mat")).unwrap_err().to_string();
        assert!(
            message.starts_with("h.mat: not a readable MAT result file: the matrix after Aclass"),
            "{message}"
        );
        assert!(message.contains("a broken or cut file"), "{message}");
        let mut negative = b.clone();
        for v in [0i32, -1, 1, 0, 2] {
            negative.extend_from_slice(&v.to_le_bytes());
        }
        let message = parse(&negative, Path::new("n.mat"))
            .unwrap_err()
            .to_string();
        assert!(message.contains("the header gives -1 rows"), "{message}");
        let mut name = b.clone();
        for v in [0i32, 1, 1, 0, i32::MAX] {
            name.extend_from_slice(&v.to_le_bytes());
        }
        let message = parse(&name, Path::new("n.mat")).unwrap_err().to_string();
        assert!(message.contains("more than the file holds"), "{message}");
        assert!(parse(b"MATLAB 5.0 MAT-file", Path::new("v5.mat"))
            .unwrap_err()
            .to_string()
            .contains("it is a MAT v5 or later file"));
        assert!(parse(&[0x55; 64], Path::new("x.mat"))
            .unwrap_err()
            .to_string()
            .contains("is this a MAT v4 file?"));
    }

    /// Found by `cargo xtask fuzz 600 result_mat` (fuzz/seeds/result_mat/): an Aclass text
    /// matrix of 1,291,845,636 rows and no columns, no bytes, made a Vec of that many names
    /// (31 GB) before the fix.
    #[test]
    fn a_matrix_without_elements_has_no_rows_either() {
        let crash = include_bytes!("../../../fuzz/seeds/result_mat/empty-aclass-of-a-billion-rows");
        let message = parse(crash, Path::new("f.mat")).unwrap_err().to_string();
        assert!(message.contains("Aclass says version \"\""), "{message}");
    }
}
