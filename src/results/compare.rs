//! Comparing a result with a reference: signals matched by column name; continuous signals
//! checked against a tolerance tube around the reference, discrete signals (integers, Booleans,
//! strings) compared exactly with a time tolerance around their switching points.
//!
//! # The tube
//!
//! The reference `r(s)` is the polyline through its rows (a repeated time is a jump). Each
//! reference value gets a value tolerance `dy(r) = max(abs, rel |r|, range (r_max - r_min))`
//! and the whole tube a time tolerance `dt`. At time `t` the tube is
//!
//! ```text
//! upper(t) = max { r(s) + dy(r(s)) : s in S(t) }     lower(t) = min { r(s) - dy(r(s)) : s in S(t) }
//! S(t)     = { t - dt, t + dt } ∪ { reference row times in [t - dt, t + dt] }
//! ```
//!
//! which is exactly the band swept by the rectangle `[-dt, dt] x [-dy, dy]` moved along the
//! reference (the csv-compare approach of the FMI cross-check): on each segment `r ± dy(r)` is
//! convex / concave in `s`, so the extremes over the window lie at its ends or at rows. A
//! step that comes up to `dt` earlier or later stays inside; a wrong amplitude does not.
//!
//! # Where
//!
//! By default ([`CompareAt::Reference`]) the result is checked at the reference's own time
//! points: a vendor's reference with 1 s rows says nothing about the values between its rows,
//! so a straight line between them is no yardstick for a result with 0.01 s rows. At each
//! reference time the result's row at that time is taken (`cosimo check` makes the run write
//! one there); a result without such a row is interpolated (linearly; discrete values held),
//! and the comparison counts those points. [`CompareAt::All`] also checks every result row
//! against the reference's polyline (the behaviour before the default changed), for
//! references whose rows are dense enough to be a polyline of the solution.
//!
//! A discrete result value at `t` must equal one of the values the (held) reference takes in
//! `[t - dt, t + dt]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Default relative tolerance (of |reference|).
pub const DEFAULT_REL: f64 = 1e-3;
/// Default absolute tolerance.
pub const DEFAULT_ABS: f64 = 1e-6;
/// Default tolerance relative to the reference's range (max - min).
pub const DEFAULT_RANGE: f64 = 1e-3;
/// Default time tolerance as a fraction of the reference's duration.
pub const DEFAULT_TIME_FRACTION: f64 = 1e-3;

/// The tolerance of one signal, fully resolved.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Tolerance {
    /// Relative to |reference value|.
    pub rel: f64,
    /// Absolute, in the signal's unit.
    pub abs: f64,
    /// Relative to the reference's range (max - min) over the run.
    pub range: f64,
    /// Half-width of the tube in time [s].
    pub time: f64,
}

// The settings types live in settings/ (a study's check names them too); re-exported here,
// where the comparison reads them.
pub use crate::settings::tolerance::{SignalSettings, ToleranceSettings};

/// What to compare and how strictly.
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// Tolerances of every signal.
    pub tolerance: ToleranceSettings,
    /// Per-signal settings by column name (an array element as `name[i]`, or the array's name).
    pub signals: BTreeMap<String, SignalSettings>,
    /// Keep the tube of failing signals for plotting.
    pub keep_traces: bool,
}

/// Where a result is compared with its reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompareAt {
    /// At the reference's time points inside the result (the default).
    #[default]
    Reference,
    /// At every result row against the reference's polyline, and at every reference row.
    All,
}

/// The time points a comparison checked.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComparedPoints {
    /// Where it compared.
    pub at: CompareAt,
    /// Distinct times checked.
    pub times: usize,
    /// Of those, reference times without a result row there (the result interpolated).
    pub interpolated: usize,
    /// The first time checked.
    pub start: f64,
    /// The last time checked.
    pub end: f64,
}

impl std::fmt::Display for ComparedPoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.times == 1 { "" } else { "s" };
        match self.at {
            CompareAt::Reference => write!(
                f,
                "compared at the reference's {} time point{s}",
                self.times
            )?,
            CompareAt::All => write!(
                f,
                "compared at {} time point{s} (every result row and every reference row)",
                self.times
            )?,
        }
        if self.times > 0 {
            write!(
                f,
                ", t = {} to {}",
                super::report::short(self.start),
                super::report::short(self.end)
            )?;
        }
        if self.interpolated > 0 {
            write!(
                f,
                "; {} of them between result rows (the result interpolated)",
                self.interpolated
            )?;
        }
        Ok(())
    }
}

/// How much of its tolerance a signal used at its closest point to the limit.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToleranceShare {
    /// |result - reference| over the tolerance there (1: on the edge; above 1: outside).
    pub share: f64,
    /// |result - reference| at that point.
    pub deviation: f64,
    /// The tolerance there: the tube's half-width on the result's side of the reference.
    pub tolerance: f64,
    /// When [s].
    pub time: f64,
}

/// How a signal is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignalKind {
    /// Floating point: a tolerance tube.
    Continuous,
    /// Integers, Booleans, strings: exact values, time tolerance at switching points.
    Discrete,
}

/// One cell of a discrete signal.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A number or Boolean (1 / 0).
    Num(f64),
    /// Anything else (strings, binary as hex).
    Text(String),
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cell::Num(x) => write!(f, "{x}"),
            Cell::Text(s) => write!(f, "\"{s}\""),
        }
    }
}

/// The values of one column after reading.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Every cell a number.
    Numbers(Vec<f64>),
    /// Cells with Booleans or text.
    Cells(Vec<Cell>),
}

/// One signal of a table (array columns split into `name[1]`, `name[2]`, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Signal {
    /// Column name (`name[i]` for array elements).
    pub name: String,
    /// The name of the column in the file (the array's name for elements).
    pub column: String,
    /// The values, one per row.
    pub values: Values,
}

/// A CSV table in the common convention, kept as raw cells: `"time","name",...`, FMI 3 arrays
/// space-separated in one cell, Booleans `true` / `false` or `1` / `0`, strings as written.
#[derive(Debug, Clone)]
pub struct SignalTable {
    path: PathBuf,
    time: Vec<f64>,
    signals: Vec<Signal>,
}

impl SignalTable {
    /// A table without rows or signals (a reference not written yet) named after `path`.
    pub fn empty(path: &Path) -> SignalTable {
        SignalTable {
            path: path.to_path_buf(),
            time: Vec::new(),
            signals: Vec::new(),
        }
    }

    /// Whether it has no rows.
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// Read a result file: MAT, Arrow or Parquet by the extension, else CSV.
    pub fn read(path: &Path) -> Result<SignalTable> {
        use crate::settings::results::ResultFormat;
        match super::read::format_of(path) {
            ResultFormat::Csv => {
                let text = crate::fs_checks::read_to_string(path, "results")?;
                SignalTable::parse(&text, path)
            }
            format => {
                crate::fs_checks::check_regular(path, "results")?;
                Ok(SignalTable::from_data(&super::read::read_typed(
                    path, format,
                )?))
            }
        }
    }

    /// The signals of a result file read in another format: numbers (integers and Booleans as
    /// numbers, as CSV holds them), Float arrays split into elements, text as cells.
    pub fn from_data(data: &super::read::ResultData) -> SignalTable {
        use super::read::Data;
        let mut signals = Vec::new();
        for column in &data.columns {
            let numbers = |values: Vec<f64>| Signal {
                name: column.name.clone(),
                column: column.name.clone(),
                values: Values::Numbers(values),
            };
            let text = |cells: Vec<String>| Signal {
                name: column.name.clone(),
                column: column.name.clone(),
                values: Values::Cells(cells.into_iter().map(Cell::Text).collect()),
            };
            match &column.values {
                Data::Float(v) => signals.push(numbers(v.clone())),
                Data::Int(v) => signals.push(numbers(v.iter().map(|&x| x as f64).collect())),
                Data::UInt(v) => signals.push(numbers(v.iter().map(|&x| x as f64).collect())),
                Data::Bool(v) => {
                    signals.push(numbers(v.iter().map(|&x| f64::from(u8::from(x))).collect()))
                }
                Data::Text(v) => signals.push(text(v.clone())),
                Data::Bytes(v) => {
                    signals.push(text(v.iter().map(|b| super::read::hex(b)).collect()))
                }
                Data::FloatArrays(rows) => {
                    let width = rows.first().map_or(0, Vec::len);
                    if width > 0 && rows.iter().all(|r| r.len() == width) {
                        for element in 0..width {
                            signals.push(Signal {
                                name: format!("{}[{}]", column.name, element + 1),
                                column: column.name.clone(),
                                values: Values::Numbers(rows.iter().map(|r| r[element]).collect()),
                            });
                        }
                    } else {
                        let cells = rows
                            .iter()
                            .map(|r| {
                                r.iter()
                                    .map(|x| x.to_string())
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            })
                            .collect();
                        signals.push(text(cells));
                    }
                }
            }
        }
        SignalTable {
            path: data.path.clone(),
            time: data.time.clone(),
            signals,
        }
    }

    /// Parse CSV text; `path` names it in messages.
    pub fn parse(text: &str, path: &Path) -> Result<SignalTable> {
        let bad = |message: String| Error::Usage(format!("{}: {message}", path.display()));
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(text.as_bytes());
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| bad(format!("cannot read the header: {e}")))?
            .iter()
            .map(|h| h.trim().to_string())
            .collect();
        if header.first().is_none_or(|h| h.is_empty()) {
            return Err(bad(
                "the file is empty; expected a header \"time\",\"name\",...".into(),
            ));
        }
        let columns = &header[1..];
        let mut time = Vec::new();
        let mut cells: Vec<Vec<String>> = vec![Vec::new(); columns.len()];
        for (row, record) in reader.records().enumerate() {
            let line = row + 2;
            let record = record.map_err(|e| bad(format!("line {line}: {e}")))?;
            if record.len() == 1 && record[0].trim().is_empty() {
                continue;
            }
            if record.len() != header.len() {
                return Err(bad(format!(
                    "line {line} has {} cells but the header has {}",
                    record.len(),
                    header.len()
                )));
            }
            let t: f64 = record[0].trim().parse().map_err(|_| {
                bad(format!(
                    "line {line}: time \"{}\" is not a number",
                    &record[0]
                ))
            })?;
            if !t.is_finite() {
                return Err(bad(format!("line {line}: time {t} is not finite")));
            }
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
        let mut signals = Vec::new();
        for (name, column) in columns.iter().zip(cells) {
            split_column(name, column, &mut signals);
        }
        Ok(SignalTable {
            path: path.to_path_buf(),
            time,
            signals,
        })
    }

    /// The file the table came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rows from `start` to `stop` (to a billionth of the span): a reference narrowed to
    /// what a run was asked to cover (`--start-time` / `--stop-time`), so rows past the run's
    /// end are not held against it.
    pub fn within(&self, start: f64, stop: f64) -> SignalTable {
        let slack = 1e-9 * (stop - start).abs().max(start.abs().max(stop.abs()) * 1e-6);
        let keep: Vec<bool> = self
            .time
            .iter()
            .map(|&t| t >= start - slack && t <= stop + slack)
            .collect();
        fn kept<T: Clone>(items: &[T], keep: &[bool]) -> Vec<T> {
            items
                .iter()
                .zip(keep)
                .filter(|(_, &k)| k)
                .map(|(item, _)| item.clone())
                .collect()
        }
        SignalTable {
            path: self.path.clone(),
            time: kept(&self.time, &keep),
            signals: self
                .signals
                .iter()
                .map(|signal| Signal {
                    name: signal.name.clone(),
                    column: signal.column.clone(),
                    values: match &signal.values {
                        Values::Numbers(values) => Values::Numbers(kept(values, &keep)),
                        Values::Cells(cells) => Values::Cells(kept(cells, &keep)),
                    },
                })
                .collect(),
        }
    }

    /// The time column.
    pub fn time(&self) -> &[f64] {
        &self.time
    }

    /// The signals in column order.
    pub fn signals(&self) -> &[Signal] {
        &self.signals
    }

    /// The signal with this name (`name[i]` for an array element).
    pub fn signal(&self, name: &str) -> Option<&Signal> {
        self.signals.iter().find(|s| s.name == name)
    }

    /// The names of the file's columns (arrays once), in order.
    pub fn column_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for s in &self.signals {
            if names.last() != Some(&s.column.as_str()) {
                names.push(&s.column);
            }
        }
        names
    }
}

fn parse_number(token: &str) -> Option<f64> {
    match token {
        "nan" | "NaN" => Some(f64::NAN),
        "inf" | "+inf" | "Infinity" => Some(f64::INFINITY),
        "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
        _ => token.parse().ok(),
    }
}

fn parse_bool(token: &str) -> Option<f64> {
    match token {
        "true" | "True" | "TRUE" => Some(1.0),
        "false" | "False" | "FALSE" => Some(0.0),
        _ => None,
    }
}

/// Split one raw column into signals: numbers, Booleans / text, or array elements.
fn split_column(name: &str, cells: Vec<String>, out: &mut Vec<Signal>) {
    let tokens: Vec<Vec<&str>> = cells
        .iter()
        .map(|c| c.split_whitespace().collect())
        .collect();
    let width = tokens.first().map_or(1, Vec::len);
    let numeric = tokens
        .iter()
        .all(|t| t.len() == width && t.iter().all(|x| parse_number(x).is_some()));
    if numeric && width > 1 {
        for element in 0..width {
            let values = tokens
                .iter()
                .map(|t| parse_number(t[element]).unwrap_or(f64::NAN))
                .collect();
            out.push(Signal {
                name: format!("{name}[{}]", element + 1),
                column: name.to_string(),
                values: Values::Numbers(values),
            });
        }
        return;
    }
    let values = if numeric && width == 1 {
        Values::Numbers(
            tokens
                .iter()
                .map(|t| parse_number(t[0]).unwrap_or(f64::NAN))
                .collect(),
        )
    } else {
        Values::Cells(
            cells
                .iter()
                .map(|c| {
                    let c = c.trim();
                    parse_bool(c)
                        .or_else(|| parse_number(c))
                        .map_or_else(|| Cell::Text(c.to_string()), Cell::Num)
                })
                .collect(),
        )
    };
    out.push(Signal {
        name: name.to_string(),
        column: name.to_string(),
        values,
    });
}

/// The outcome of comparing one signal.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalComparison {
    /// Signal name.
    pub name: String,
    /// How it was compared.
    pub kind: SignalKind,
    /// The tolerance used.
    pub tolerance: Tolerance,
    /// Whether every checked point is inside the tube (matches, for discrete signals).
    pub passed: bool,
    /// Points checked.
    pub points: usize,
    /// Points outside the tube.
    pub violations: usize,
    /// Time of the first point outside the tube.
    pub first_violation: Option<f64>,
    /// Largest |result - reference| at the same time (discrete: of mismatching numbers, 1 for
    /// mismatching text).
    pub max_deviation: f64,
    /// When the largest deviation occurred.
    pub max_deviation_time: Option<f64>,
    /// Largest distance outside the tube (0 when inside everywhere).
    pub max_excess: f64,
    /// The point where the signal came closest to (or went furthest beyond) its tolerance, as a
    /// share of it (continuous signals).
    pub tolerance_share: Option<ToleranceShare>,
    /// The signal's value scale `max(abs, rel max|r|, range (r_max - r_min))`, for ranking.
    pub scale: f64,
    /// Why the signal failed besides values (e.g. the result ends early).
    pub message: Option<String>,
    /// Reference, result and tube, kept for plotting a failing signal.
    #[serde(skip)]
    pub trace: Option<Trace>,
}

impl SignalComparison {
    /// How far out of tolerance the signal went, in units of its value scale.
    pub fn severity(&self) -> f64 {
        if self.kind == SignalKind::Discrete {
            return self.violations as f64;
        }
        self.max_excess / self.scale.max(f64::MIN_POSITIVE)
    }
}

/// Reference, result and tube of one signal, for plotting.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Reference rows (time, value); discrete text as its index of first appearance.
    pub reference: Vec<(f64, f64)>,
    /// Result rows (time, value).
    pub result: Vec<(f64, f64)>,
    /// The tube at the checked times: (time, lower, upper).
    pub tube: Vec<(f64, f64, f64)>,
    /// Points outside the tube (time, result value).
    pub violations: Vec<(f64, f64)>,
    /// At the checked times: (time, result - reference) as compared (discrete text: 1 where
    /// the values differ, else 0).
    pub deviation: Vec<(f64, f64)>,
}

/// The comparison of a result table with a reference table.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Comparison {
    /// One entry per compared reference signal, in the reference's order.
    pub signals: Vec<SignalComparison>,
    /// Reference columns the result does not have.
    pub missing: Vec<String>,
    /// Result columns the reference does not have (not compared).
    pub extra: Vec<String>,
    /// The time points checked.
    pub points: Option<ComparedPoints>,
}

impl Comparison {
    /// Whether every reference signal is present and inside its tolerance.
    pub fn passed(&self) -> bool {
        self.missing.is_empty() && self.signals.iter().all(|s| s.passed)
    }

    /// The failing signal furthest out of tolerance, else the signal closest to its limit.
    pub fn worst(&self) -> Option<&SignalComparison> {
        let failing = self.signals.iter().filter(|s| !s.passed);
        let by =
            |a: &&SignalComparison, b: &&SignalComparison| a.severity().total_cmp(&b.severity());
        if let Some(worst) = failing.max_by(by) {
            return Some(worst);
        }
        let used = |s: &SignalComparison| match s.tolerance_share {
            Some(share) => share.share,
            None => s.max_deviation / s.scale.max(f64::MIN_POSITIVE),
        };
        self.signals
            .iter()
            .max_by(|a, b| used(a).total_cmp(&used(b)))
    }

    /// The earliest violation of any signal.
    pub fn first_violation(&self) -> Option<f64> {
        self.signals
            .iter()
            .filter_map(|s| s.first_violation)
            .min_by(f64::total_cmp)
    }
}

/// Compare `result` with `reference` at every result row and every reference row
/// ([`CompareAt::All`]); see [`compare_at`].
pub fn compare(
    reference: &SignalTable,
    result: &SignalTable,
    options: &CompareOptions,
    kind_of: &dyn Fn(&str) -> Option<SignalKind>,
) -> Comparison {
    compare_at(reference, result, options, CompareAt::All, kind_of)
}

/// Compare `result` with `reference` at the points `at` chooses. `kind_of(column)` says how a
/// result column is to be compared when the caller knows (from the variable's type);
/// otherwise numbers are continuous and Booleans / text discrete; per-signal settings
/// override both.
pub fn compare_at(
    reference: &SignalTable,
    result: &SignalTable,
    options: &CompareOptions,
    at: CompareAt,
    kind_of: &dyn Fn(&str) -> Option<SignalKind>,
) -> Comparison {
    let mut comparison = Comparison {
        points: compared_points(reference.time(), result.time(), at),
        ..Comparison::default()
    };
    for r in reference.signals() {
        let settings = options
            .signals
            .get(&r.name)
            .or_else(|| options.signals.get(&r.column));
        if settings.is_some_and(|s| s.ignore) {
            continue;
        }
        let Some(y) = result.signal(&r.name) else {
            comparison.missing.push(r.name.clone());
            continue;
        };
        let inferred = match (&r.values, &y.values) {
            (Values::Numbers(_), Values::Numbers(_)) => SignalKind::Continuous,
            _ => SignalKind::Discrete,
        };
        let kind = match settings.and_then(|s| s.discrete) {
            Some(true) => SignalKind::Discrete,
            Some(false) => SignalKind::Continuous,
            None => kind_of(&y.column).unwrap_or(inferred),
        };
        let tolerance = settings
            .map(|s| s.tolerance.over(&options.tolerance))
            .unwrap_or_else(|| options.tolerance.clone());
        comparison.signals.push(compare_signal(
            &r.name,
            kind,
            &tolerance,
            (reference.time(), &r.values),
            (result.time(), &y.values),
            at,
            options.keep_traces,
        ));
    }
    for y in result.signals() {
        if reference.signal(&y.name).is_none() && !comparison.extra.contains(&y.column) {
            comparison.extra.push(y.column.clone());
        }
    }
    comparison
}

/// Compare one signal given as (time, values) of reference and result.
pub fn compare_signal(
    name: &str,
    kind: SignalKind,
    settings: &ToleranceSettings,
    reference: (&[f64], &Values),
    result: (&[f64], &Values),
    at: CompareAt,
    keep_trace: bool,
) -> SignalComparison {
    let (rt, rv) = reference;
    let (yt, yv) = result;
    let start = rt.first().copied().unwrap_or(0.0);
    let end = rt.last().copied().unwrap_or(0.0);
    let duration = end - start;
    let tolerance = Tolerance {
        rel: settings.rel.unwrap_or(DEFAULT_REL),
        abs: settings.abs.unwrap_or(DEFAULT_ABS),
        range: settings.range.unwrap_or(DEFAULT_RANGE),
        time: settings.time.unwrap_or(DEFAULT_TIME_FRACTION * duration),
    };
    let eps = 1e-9 * duration.abs().max(1.0);
    let mut out = SignalComparison {
        name: name.to_string(),
        kind,
        tolerance,
        passed: true,
        points: 0,
        violations: 0,
        first_violation: None,
        max_deviation: 0.0,
        max_deviation_time: None,
        max_excess: 0.0,
        tolerance_share: None,
        scale: tolerance.abs,
        message: None,
        trace: None,
    };
    let mut trace = Trace::default();

    // The checked times: result rows inside the reference's span, and reference rows inside
    // the result's span (where the result is interpolated).
    let (Some(&y_first), Some(&y_last)) = (yt.first(), yt.last()) else {
        out.passed = false;
        out.message = Some("the result has no rows".into());
        return out;
    };
    let checks = checked_points(rt, yt, at, eps);

    if y_last < end - tolerance.time - eps || y_first > start + tolerance.time + eps {
        out.passed = false;
        let at = if y_first > start + tolerance.time + eps {
            start
        } else {
            y_last
        };
        out.first_violation = Some(at);
        out.message = Some(format!(
            "the result covers t = {} to {}, the reference t = {} to {}",
            crate::numbers::number(y_first),
            crate::numbers::number(y_last),
            crate::numbers::number(start),
            crate::numbers::number(end)
        ));
    }

    match (kind, rv, yv) {
        (SignalKind::Continuous, Values::Numbers(r), Values::Numbers(y)) => {
            let (lo, hi) = min_max(r);
            // The range's share of the tolerance, finite also when the range itself exceeds
            // the largest double (values from -1e308 to 1e308).
            let range_tolerance = match hi - lo {
                _ if hi < lo => 0.0,
                range if range.is_finite() => tolerance.range * range,
                _ => tolerance.range * hi - tolerance.range * lo,
            };
            let max_abs = lo.abs().max(hi.abs());
            out.scale = tolerance
                .abs
                .max(tolerance.rel * max_abs)
                .max(range_tolerance);
            let dy = |v: f64| {
                tolerance
                    .abs
                    .max(tolerance.rel * v.abs())
                    .max(range_tolerance)
            };
            for (t, probe) in checks {
                let value = match probe {
                    Probe::Row(k) => y[k],
                    Probe::Interpolate => linear(yt, y, t),
                };
                let (lower, upper) = tube(rt, r, t, tolerance.time + eps, &dy);
                let reference = linear(rt, r, t);
                let deviation = (value - reference).abs();
                out.points += 1;
                if deviation > out.max_deviation
                    || (deviation.is_nan() && !out.max_deviation.is_nan())
                {
                    out.max_deviation = deviation;
                    out.max_deviation_time = Some(t);
                }
                let allowed = if value >= reference {
                    upper - reference
                } else {
                    reference - lower
                };
                let share = match deviation {
                    d if d.is_nan() => f64::INFINITY,
                    0.0 => 0.0,
                    d if allowed > 0.0 => d / allowed,
                    _ => f64::INFINITY,
                };
                if out.tolerance_share.is_none_or(|s| share > s.share) {
                    out.tolerance_share = Some(ToleranceShare {
                        share,
                        deviation,
                        tolerance: allowed.max(0.0),
                        time: t,
                    });
                }
                let excess = (value - upper).max(lower - value).max(0.0);
                let outside = !(value >= lower && value <= upper);
                if outside {
                    out.violations += 1;
                    out.max_excess = out.max_excess.max(if excess.is_nan() {
                        f64::INFINITY
                    } else {
                        excess
                    });
                    if out.first_violation.is_none_or(|f| t < f) {
                        out.first_violation = Some(t);
                    }
                }
                if keep_trace {
                    trace.tube.push((t, lower, upper));
                    trace.deviation.push((t, value - reference));
                    if outside {
                        trace.violations.push((t, value));
                    }
                }
            }
            if keep_trace {
                trace.reference = rt.iter().copied().zip(r.iter().copied()).collect();
                trace.result = yt.iter().copied().zip(y.iter().copied()).collect();
            }
        }
        _ => {
            let r = cells(rv);
            let y = cells(yv);
            out.kind = SignalKind::Discrete;
            out.scale = 1.0;
            let mut labels: Vec<Cell> = Vec::new();
            let mut plot_value = |c: &Cell| match c {
                Cell::Num(x) => *x,
                text => {
                    let i = labels.iter().position(|l| l == text).unwrap_or_else(|| {
                        labels.push(text.clone());
                        labels.len() - 1
                    });
                    i as f64
                }
            };
            for (t, probe) in checks {
                let value = match probe {
                    Probe::Row(k) => &y[k],
                    Probe::Interpolate => &y[hold_index(yt, t)],
                };
                out.points += 1;
                let reference = &r[hold_index(rt, t)];
                if value != reference {
                    let deviation = match (value, reference) {
                        (Cell::Num(a), Cell::Num(b)) => (a - b).abs(),
                        _ => 1.0,
                    };
                    if deviation > out.max_deviation {
                        out.max_deviation = deviation;
                        out.max_deviation_time = Some(t);
                    }
                }
                let w = tolerance.time + eps;
                let allowed = |c: &Cell| {
                    let first = rt.partition_point(|&s| s < t - w);
                    let last = rt.partition_point(|&s| s <= t + w);
                    *c == r[hold_index(rt, t - w)]
                        || *c == r[hold_index(rt, t + w)]
                        || r[first..last].contains(c)
                };
                let outside = !allowed(value);
                if outside {
                    out.violations += 1;
                    out.max_excess = out.max_excess.max(match (value, reference) {
                        (Cell::Num(a), Cell::Num(b)) => (a - b).abs(),
                        _ => 1.0,
                    });
                    if out.first_violation.is_none_or(|f| t < f) {
                        out.first_violation = Some(t);
                    }
                }
                if keep_trace {
                    let v = plot_value(reference);
                    trace.tube.push((t, v, v));
                    trace.deviation.push((
                        t,
                        match (value, reference) {
                            (Cell::Num(a), Cell::Num(b)) => a - b,
                            _ => f64::from(u8::from(value != reference)),
                        },
                    ));
                    if outside {
                        let v = plot_value(value);
                        trace.violations.push((t, v));
                    }
                }
            }
            if keep_trace {
                trace.reference = rt
                    .iter()
                    .zip(&r)
                    .map(|(&t, c)| (t, plot_value(c)))
                    .collect();
                trace.result = yt
                    .iter()
                    .zip(&y)
                    .map(|(&t, c)| (t, plot_value(c)))
                    .collect();
            }
        }
    }
    if out.violations > 0 {
        out.passed = false;
    }
    if keep_trace && !out.passed {
        out.trace = Some(trace);
    }
    out
}

/// Where a checked value comes from.
#[derive(Debug, Clone, Copy)]
enum Probe {
    /// A result row.
    Row(usize),
    /// The result interpolated at a reference row's time.
    Interpolate,
}

fn near_any(sorted: &[f64], t: f64, eps: f64) -> bool {
    row_at(sorted, t, eps).is_some()
}

/// The last row within `eps` of `t` (after an event, the row after it).
fn row_at(sorted: &[f64], t: f64, eps: f64) -> Option<usize> {
    let after = sorted.partition_point(|&s| s <= t + eps);
    (after > 0 && sorted[after - 1] >= t - eps).then(|| after - 1)
}

/// The times checked and where each value comes from, in time order.
fn checked_points(rt: &[f64], yt: &[f64], at: CompareAt, eps: f64) -> Vec<(f64, Probe)> {
    let (Some(&start), Some(&end), Some(&y_first), Some(&y_last)) =
        (rt.first(), rt.last(), yt.first(), yt.last())
    else {
        return Vec::new();
    };
    let mut checks: Vec<(f64, Probe)> = Vec::new();
    let inside_result = |t: f64| t >= y_first - eps && t <= y_last + eps;
    match at {
        CompareAt::All => {
            for (k, &t) in yt.iter().enumerate() {
                if t >= start - eps && t <= end + eps {
                    checks.push((t, Probe::Row(k)));
                }
            }
            for &t in rt {
                if inside_result(t) && !near_any(yt, t, eps) {
                    checks.push((t, Probe::Interpolate));
                }
            }
            checks.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        CompareAt::Reference => {
            for (i, &t) in rt.iter().enumerate() {
                // A repeated time (an event) is one point: the tube holds both sides.
                if (i > 0 && rt[i - 1] >= t - eps) || !inside_result(t) {
                    continue;
                }
                let probe = row_at(yt, t, eps).map_or(Probe::Interpolate, Probe::Row);
                checks.push((t, probe));
            }
        }
    }
    checks
}

/// The points a comparison of tables with these time columns checks.
fn compared_points(rt: &[f64], yt: &[f64], at: CompareAt) -> Option<ComparedPoints> {
    let duration = rt.last()? - rt.first()?;
    let eps = 1e-9 * duration.abs().max(1.0);
    let checks = checked_points(rt, yt, at, eps);
    let mut times = 0;
    let mut previous = f64::NEG_INFINITY;
    for &(t, _) in &checks {
        if t > previous + eps {
            times += 1;
            previous = t;
        }
    }
    Some(ComparedPoints {
        at,
        times,
        interpolated: checks
            .iter()
            .filter(|(_, p)| matches!(p, Probe::Interpolate))
            .count(),
        start: checks.first().map_or(f64::NAN, |c| c.0),
        end: checks.last().map_or(f64::NAN, |c| c.0),
    })
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

fn cells(values: &Values) -> Vec<Cell> {
    match values {
        Values::Numbers(v) => v.iter().map(|&x| Cell::Num(x)).collect(),
        Values::Cells(c) => c.clone(),
    }
}

/// Index of the last row at or before `t` (the first row before the table starts).
fn hold_index(time: &[f64], t: f64) -> usize {
    time.partition_point(|&s| s <= t).saturating_sub(1)
}

/// The polyline through (time, values) at `t`: the later row at a repeated time, end values
/// held outside.
pub fn linear(time: &[f64], values: &[f64], t: f64) -> f64 {
    let after = time.partition_point(|&s| s <= t);
    if after == 0 {
        return values.first().copied().unwrap_or(f64::NAN);
    }
    if after == time.len() {
        return values[after - 1];
    }
    let (t0, t1) = (time[after - 1], time[after]);
    let (v0, v1) = (values[after - 1], values[after]);
    let jump = v1 - v0;
    if jump.is_finite() {
        v0 + jump * (t - t0) / (t1 - t0)
    } else {
        // Two finite values farther apart than the largest double (-1e308 to 1e308): their
        // difference overflows, and infinity times a zero weight would be NaN. The weighted
        // mean of the two stays finite.
        let w = (t - t0) / (t1 - t0);
        v0 * (1.0 - w) + v1 * w
    }
}

/// The tube (lower, upper) at `t` with time half-width `dt` and value tolerance `dy(r)`.
pub fn tube(time: &[f64], values: &[f64], t: f64, dt: f64, dy: &dyn Fn(f64) -> f64) -> (f64, f64) {
    let mut lower = f64::INFINITY;
    let mut upper = f64::NEG_INFINITY;
    let mut take = |r: f64| {
        let d = dy(r);
        lower = lower.min(r - d);
        upper = upper.max(r + d);
    };
    let (a, b) = (t - dt, t + dt);
    take(linear(time, values, a));
    take(linear(time, values, b));
    // Just before `a` the polyline may still be on the earlier side of a jump at `a`.
    let first = time.partition_point(|&s| s < a);
    let last = time.partition_point(|&s| s <= b);
    for &v in &values[first..last] {
        take(v);
    }
    (lower, upper)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> SignalTable {
        SignalTable::parse(text, Path::new("t.csv")).unwrap()
    }

    fn tol(rel: f64, abs: f64, time: f64) -> CompareOptions {
        CompareOptions {
            tolerance: ToleranceSettings {
                rel: Some(rel),
                abs: Some(abs),
                range: Some(0.0),
                time: Some(time),
            },
            ..CompareOptions::default()
        }
    }

    #[test]
    fn arrays_booleans_and_strings_are_split_and_typed() {
        let t =
            table("\"time\",\"a\",\"b\",\"s\",\"x\"\n0,1 2,true,hi there,1.5\n1,3 4,false,ho,2\n");
        let names: Vec<&str> = t.signals().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a[1]", "a[2]", "b", "s", "x"]);
        assert_eq!(t.column_names(), ["a", "b", "s", "x"]);
        assert_eq!(
            t.signal("a[2]").unwrap().values,
            Values::Numbers(vec![2.0, 4.0])
        );
        assert_eq!(
            t.signal("b").unwrap().values,
            Values::Cells(vec![Cell::Num(1.0), Cell::Num(0.0)])
        );
        assert_eq!(
            t.signal("s").unwrap().values,
            Values::Cells(vec![Cell::Text("hi there".into()), Cell::Text("ho".into())])
        );
    }

    #[test]
    fn a_signal_spanning_more_than_the_largest_double_compares_without_nan() {
        // -1e308 to 1e308: the difference overflows; interpolation and the range tolerance
        // must stay finite, and equal data must pass with a deviation of 0, not NaN.
        let text = "time,y\n0,-1e308\n1,1e308\n2,-1e308\n";
        assert_eq!(linear(&[0.0, 1.0], &[-1e308, 1e308], 0.0), -1e308);
        assert_eq!(linear(&[0.0, 1.0], &[-1e308, 1e308], 0.5), 0.0);
        let reference = table(text);
        let result = table(text);
        let report = compare(&reference, &result, &CompareOptions::default(), &|_| None);
        let signal = &report.signals[0];
        assert_eq!(signal.max_deviation, 0.0, "{signal:?}");
        assert!(signal.passed, "{signal:?}");
        assert!(signal.scale.is_finite(), "{signal:?}");
    }

    #[test]
    fn tube_is_widened_in_time_around_a_step() {
        let time = [0.0, 1.0, 1.0, 2.0];
        let values = [0.0, 0.0, 1.0, 1.0];
        let dy = |_: f64| 0.01;
        assert_eq!(tube(&time, &values, 0.5, 0.1, &dy), (-0.01, 0.01));
        assert_eq!(tube(&time, &values, 0.95, 0.1, &dy), (-0.01, 1.01));
        assert_eq!(tube(&time, &values, 1.05, 0.1, &dy), (-0.01, 1.01));
        assert_eq!(tube(&time, &values, 1.2, 0.1, &dy), (0.99, 1.01));
    }

    #[test]
    fn amplitude_error_fails_and_time_shift_passes_inside_the_tube() {
        let reference = table("time,y\n0,0\n1,0\n1,1\n2,1\n");
        let shifted = table("time,y\n0,0\n1.05,0\n1.05,1\n2,1\n");
        let c = compare(&reference, &shifted, &tol(0.0, 0.01, 0.1), &|_| None);
        assert!(c.passed(), "{c:?}");
        let c = compare(&reference, &shifted, &tol(0.0, 0.01, 0.01), &|_| None);
        assert!(!c.passed());
        assert_eq!(c.signals[0].first_violation, Some(1.05));
        let wrong = table("time,y\n0,0\n1,0\n1,1.1\n2,1.1\n");
        let c = compare(&reference, &wrong, &tol(0.0, 0.01, 0.1), &|_| None);
        assert!(!c.passed());
        assert!((c.signals[0].max_excess - 0.09).abs() < 1e-12);
    }
}
