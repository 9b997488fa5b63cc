//! The study file of `cosimo sweep` (`STUDY.json`, schema `schemas/study.schema.json`): what
//! to run, the parameters to vary, the experiment's overrides, what to keep from each run and
//! the reference each run is checked against.
//!
//! Reading a study checks everything a study can say about itself (names, ranges, counts,
//! distributions); an error names the file, the field and what to do. The parameters' and
//! variables' names are checked against the FMUs by the sweep, which opens them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

// The tolerance fields of `cosimo check`'s check.json, read the same way in a study (plain
// data types of the comparison; settings/ still imports nothing of system/ or master/).
pub use super::tolerance::{SignalSettings, ToleranceSettings};

use super::overrides::Overrides;
use super::AlgorithmKind;

/// The most runs one study may make (the plan is kept in memory).
pub const MAX_RUNS: u64 = 10_000_000;

/// The hang limit of an isolated study's runs: seconds an FMI call may take (`callTimeout`).
pub const DEFAULT_CALL_TIMEOUT: f64 = 120.0;

/// A study, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    /// The study file (messages name it).
    pub file: PathBuf,
    /// What to run: a system file, an SSP or an FMU, resolved against the study's folder.
    pub system: PathBuf,
    /// The full-factorial grid, in the file's order (the first parameter varies slowest).
    pub grid: Vec<GridParameter>,
    /// Seeded random samples, combined with every grid point.
    pub samples: Option<Samples>,
    /// Changes to the system's experiment.
    pub overrides: Overrides,
    /// Host every FMU of every run in a worker process, so that a crash, an abort or a hang
    /// fails that run only (the default; `"isolate": false` runs the FMUs in this process).
    pub isolate: bool,
    /// The longest an FMI call of an isolated run may take before its worker is killed and
    /// the run fails (`callTimeout`, default [`DEFAULT_CALL_TIMEOUT`] s; `None` with
    /// `"isolate": false`).
    pub call_timeout: Option<f64>,
    /// What each run leaves behind.
    pub keep: Keep,
    /// The reference every run's result is compared with, and the tolerances.
    pub check: Option<StudyCheck>,
    /// A digest of the study's content: shards of the same study carry the same one.
    pub fingerprint: String,
}

/// The check of each run against a reference result (`check` in the study): `cosimo check`'s
/// comparison with check.json's `tolerance` and `signals`.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyCheck {
    /// Where each run's reference is.
    pub reference: ReferenceFiles,
    /// Tolerances of every signal.
    pub tolerance: ToleranceSettings,
    /// Per-signal tolerances, `discrete` and `ignore`, by column name.
    pub signals: BTreeMap<String, SignalSettings>,
}

/// The reference of each run: one file for all, or a file per run named by its index.
#[derive(Debug, Clone, PartialEq)]
pub enum ReferenceFiles {
    /// One reference for every run (a regression study around a nominal result).
    One(PathBuf),
    /// A reference per run: a file name pattern with the run index.
    PerRun(IndexPattern),
}

impl ReferenceFiles {
    /// The reference file of run `index`.
    pub fn file(&self, index: usize) -> PathBuf {
        match self {
            ReferenceFiles::One(path) => path.clone(),
            ReferenceFiles::PerRun(pattern) => pattern.file(index),
        }
    }
}

/// A file name with the run index in it: `{index}` (42) or `{index:0N}` (zero-padded to N
/// digits: `{index:06}` gives 000042, the numbering of a sweep's `runs/run-000042.csv`).
#[derive(Debug, Clone, PartialEq)]
pub struct IndexPattern {
    /// The folder relative names are resolved against (the study's).
    base: PathBuf,
    /// The pattern as written, for messages.
    text: String,
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// The run index, zero-padded to this many digits.
    Index(usize),
}

impl IndexPattern {
    /// Parse `text`; `None` when it has no placeholder (a plain file name).
    fn parse(text: &str, base: &Path) -> Result<Option<IndexPattern>, String> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_string()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(format!(
                    "\"{text}\" has a {{ without a closing }}; the run index is written {{index}} or {{index:06}}"
                ));
            };
            let inner = &rest[open + 1..open + close];
            let width = match inner.strip_prefix("index") {
                Some("") => 0,
                Some(spec) => spec
                    .strip_prefix(":0")
                    .and_then(|w| w.parse::<usize>().ok())
                    .filter(|w| (1..=20).contains(w))
                    .ok_or_else(|| {
                        format!(
                            "\"{text}\": {{{inner}}} is not a placeholder; write {{index}} or {{index:0N}} (N digits, 1 to 20, e.g. {{index:06}})"
                        )
                    })?,
                None => {
                    return Err(format!(
                        "\"{text}\": {{{inner}}} is not a placeholder; the only one is the run index: {{index}} or {{index:06}} (zero-padded)"
                    ))
                }
            };
            pieces.push(Piece::Index(width));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        if !pieces.iter().any(|p| matches!(p, Piece::Index(_))) {
            return Ok(None);
        }
        Ok(Some(IndexPattern {
            base: base.to_path_buf(),
            text: text.to_string(),
            pieces,
        }))
    }

    /// The file of run `index`.
    pub fn file(&self, index: usize) -> PathBuf {
        let mut name = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => name.push_str(text),
                Piece::Index(width) => name.push_str(&format!("{index:0width$}")),
            }
        }
        self.base.join(name)
    }

    /// The pattern as the study writes it.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// The columns a check adds to the summary table (after `status` and `error`), and the
/// reference column of `--dry-run`: parameters may not have these names.
pub const CHECK_COLUMNS: [&str; 6] = [
    "check",
    "check_signal",
    "check_deviation",
    "check_time",
    "check_message",
    "check_reference",
];

/// One parameter of the grid with its values.
#[derive(Debug, Clone, PartialEq)]
pub struct GridParameter {
    pub name: String,
    pub values: Vec<f64>,
}

/// Random samples of several parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    pub count: u64,
    pub seed: u64,
    pub method: SamplingMethod,
    pub parameters: Vec<SampledParameter>,
}

/// How samples fill the unit cube before each distribution maps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SamplingMethod {
    /// Independent draws.
    Random,
    /// One sample in each of `count` equal-probability strata of every parameter.
    LatinHypercube,
}

/// A sampled parameter and its distribution.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledParameter {
    pub name: String,
    pub distribution: Distribution,
}

/// The distribution of a sampled parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    Uniform { min: f64, max: f64 },
    Normal { mean: f64, std: f64 },
}

/// What each run leaves behind.
#[derive(Debug, Clone, PartialEq)]
pub struct Keep {
    /// Write each run's result file under `DIR/runs/`.
    pub results: bool,
    /// The format of those files (`keep.format`, default CSV).
    pub format: super::results::ResultFormat,
    /// The variables to record (empty: every output, or only the summaries' variables when no
    /// result files are kept).
    pub variables: Vec<String>,
    /// The summary columns of the table.
    pub summaries: Vec<Summary>,
}

/// One summary column of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub variable: String,
    pub kind: SummaryKind,
}

/// What a summary computes over a run's result rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SummaryKind {
    /// The value at the last row.
    Final,
    Min,
    Max,
    /// The time average (trapezoidal rule over the result rows).
    Mean,
    /// The time of the first crossing of `level` (linear between rows); empty when none.
    Crossing {
        level: f64,
        direction: Direction,
    },
}

/// Which crossings count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Direction {
    Rising,
    Falling,
    Either,
}

impl Summary {
    /// The column's name in the table, e.g. `max(mass1.x)`, `crossing(mass1.x, 0.05, rising)`.
    pub fn column(&self) -> String {
        let v = &self.variable;
        match self.kind {
            SummaryKind::Final => format!("final({v})"),
            SummaryKind::Min => format!("min({v})"),
            SummaryKind::Max => format!("max({v})"),
            SummaryKind::Mean => format!("mean({v})"),
            SummaryKind::Crossing { level, direction } => match direction {
                Direction::Either => format!("crossing({v}, {level})"),
                Direction::Rising => format!("crossing({v}, {level}, rising)"),
                Direction::Falling => format!("crossing({v}, {level}, falling)"),
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The file as written

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StudyFile {
    #[serde(rename = "$schema")]
    _schema: Option<String>,
    #[serde(rename = "description")]
    _description: Option<String>,
    system: String,
    #[serde(default)]
    grid: Vec<GridFile>,
    samples: Option<SamplesFile>,
    #[serde(default)]
    experiment: ExperimentFile,
    isolate: Option<bool>,
    call_timeout: Option<f64>,
    #[serde(default)]
    keep: KeepFile,
    check: Option<CheckFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CheckFile {
    reference: String,
    #[serde(default)]
    tolerance: ToleranceSettings,
    #[serde(default)]
    signals: BTreeMap<String, SignalSettings>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GridFile {
    name: String,
    values: Option<Vec<f64>>,
    range: Option<RangeFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RangeFile {
    start: f64,
    stop: f64,
    count: Option<u64>,
    step: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SamplesFile {
    count: u64,
    seed: u64,
    #[serde(default = "random")]
    method: SamplingMethod,
    parameters: Vec<SampledFile>,
}

fn random() -> SamplingMethod {
    SamplingMethod::Random
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SampledFile {
    name: String,
    uniform: Option<UniformFile>,
    normal: Option<NormalFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UniformFile {
    min: f64,
    max: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NormalFile {
    mean: f64,
    std: f64,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ExperimentFile {
    start_time: Option<f64>,
    stop_time: Option<f64>,
    step_size: Option<f64>,
    output_interval: Option<f64>,
    tolerance: Option<f64>,
    algorithm: Option<String>,
    extrapolation_order: Option<u8>,
    divergence_limit: Option<f64>,
    max_rows: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KeepFile {
    #[serde(default)]
    results: bool,
    format: Option<String>,
    #[serde(default)]
    variables: Vec<String>,
    #[serde(default)]
    summaries: Vec<SummaryFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SummaryFile {
    variable: String,
    statistics: Option<Vec<Statistic>>,
    crossing: Option<CrossingFile>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "camelCase")]
enum Statistic {
    Final,
    Min,
    Max,
    Mean,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CrossingFile {
    level: f64,
    #[serde(default = "either")]
    direction: Direction,
}

fn either() -> Direction {
    Direction::Either
}

/// The fields of the study's experiment as the command line names them, for messages.
pub const EXPERIMENT_FIELDS: [(&str, &str); 9] = [
    ("--start-time", "experiment.startTime"),
    ("--stop-time", "experiment.stopTime"),
    ("--step-size", "experiment.stepSize"),
    ("--output-interval", "experiment.outputInterval"),
    ("--tolerance", "experiment.tolerance"),
    ("--algorithm", "experiment.algorithm"),
    ("--extrapolation-order", "experiment.extrapolationOrder"),
    ("--divergence-limit", "experiment.divergenceLimit"),
    ("--max-rows", "experiment.maxRows"),
];

/// A message about the experiment that names command-line options, in the study's words.
pub fn in_study_words(message: &str) -> String {
    let mut text = message.to_string();
    for (option, field) in EXPERIMENT_FIELDS {
        text = text.replace(option, field);
    }
    text
}

impl Study {
    /// Read and check the study file `path`.
    pub fn read(path: &Path) -> Result<Study, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the study: {e}", path.display()))?;
        Study::parse(&text, path)
    }

    /// Check the study `text` (read from `path`, which relative paths are resolved against).
    pub fn parse(text: &str, path: &Path) -> Result<Study, String> {
        let at = |m: String| format!("{}: {m}", path.display());
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| at(format!("not valid JSON: {e}")))?;
        let file: StudyFile = serde_json::from_value(value.clone()).map_err(|e| {
            at(format!(
                "{e}; see schemas/study.schema.json for the fields a study has"
            ))
        })?;
        let fingerprint = format!("{:016x}", fnv1a(value.to_string().as_bytes()));
        let base = path.parent().unwrap_or(Path::new(""));
        if file.system.trim().is_empty() {
            return Err(at(
                "system is empty: name the system file, SSP or FMU to run (relative to the study file)".into(),
            ));
        }
        let system = base.join(&file.system);
        let mut names: Vec<String> = Vec::new();
        let mut check_name = |name: &str, field: &str| -> Result<(), String> {
            if name.trim().is_empty() {
                return Err(at(format!(
                    "{field}.name is empty: name the parameter (component.NAME in a system)"
                )));
            }
            if names.iter().any(|n| n == name) {
                return Err(at(format!(
                    "{field}: the parameter {name} is varied twice; vary each parameter in one place"
                )));
            }
            names.push(name.to_string());
            Ok(())
        };
        let mut grid = Vec::new();
        let mut runs: u64 = 1;
        for (i, g) in file.grid.iter().enumerate() {
            let field = format!("grid[{i}]");
            check_name(&g.name, &field)?;
            let values = match (&g.values, &g.range) {
                (Some(values), None) => {
                    if values.is_empty() {
                        return Err(at(format!(
                            "{field} ({}): values is empty; give at least one value",
                            g.name
                        )));
                    }
                    values.clone()
                }
                (None, Some(range)) => range_values(range)
                    .map_err(|m| at(format!("{field}.range ({}): {m}", g.name)))?,
                _ => {
                    return Err(at(format!(
                        "{field} ({}): give either values (a list) or range ({{start, stop, count}} or {{start, stop, step}})",
                        g.name
                    )))
                }
            };
            if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
                return Err(at(format!(
                    "{field} ({}): {bad} is not a finite number",
                    g.name
                )));
            }
            runs = runs.saturating_mul(values.len() as u64);
            grid.push(GridParameter {
                name: g.name.clone(),
                values,
            });
        }
        let samples = match &file.samples {
            None => None,
            Some(s) => {
                if s.count == 0 {
                    return Err(at("samples.count is 0: ask for at least one sample".into()));
                }
                if s.parameters.is_empty() {
                    return Err(at(
                        "samples.parameters is empty: name at least one parameter with its distribution".into(),
                    ));
                }
                let mut parameters = Vec::new();
                for (i, p) in s.parameters.iter().enumerate() {
                    let field = format!("samples.parameters[{i}]");
                    check_name(&p.name, &field)?;
                    let distribution = match (&p.uniform, &p.normal) {
                        (Some(u), None) => {
                            if !(u.min.is_finite() && u.max.is_finite() && u.min <= u.max) {
                                return Err(at(format!(
                                    "{field}.uniform ({}): min {} and max {} must be finite numbers with min <= max",
                                    p.name, u.min, u.max
                                )));
                            }
                            Distribution::Uniform {
                                min: u.min,
                                max: u.max,
                            }
                        }
                        (None, Some(n)) => {
                            if !(n.mean.is_finite() && n.std.is_finite() && n.std >= 0.0) {
                                return Err(at(format!(
                                    "{field}.normal ({}): mean {} and std {} must be finite numbers with std >= 0",
                                    p.name, n.mean, n.std
                                )));
                            }
                            Distribution::Normal {
                                mean: n.mean,
                                std: n.std,
                            }
                        }
                        _ => {
                            return Err(at(format!(
                                "{field} ({}): give exactly one distribution: uniform {{min, max}} or normal {{mean, std}}",
                                p.name
                            )))
                        }
                    };
                    parameters.push(SampledParameter {
                        name: p.name.clone(),
                        distribution,
                    });
                }
                runs = runs.saturating_mul(s.count);
                Some(Samples {
                    count: s.count,
                    seed: s.seed,
                    method: s.method,
                    parameters,
                })
            }
        };
        if grid.is_empty() && samples.is_none() {
            return Err(at(
                "the study varies nothing: add a grid (parameters with values or a range) or samples".into(),
            ));
        }
        if runs > MAX_RUNS {
            return Err(at(format!(
                "the study makes {runs} runs, more than {MAX_RUNS}: split it into several studies"
            )));
        }
        let e = &file.experiment;
        let algorithm = match &e.algorithm {
            None => None,
            Some(name) => Some(AlgorithmKind::parse(name).ok_or_else(|| {
                let known: Vec<&str> = AlgorithmKind::ALL.iter().map(|k| k.name()).collect();
                at(format!(
                    "experiment.algorithm \"{name}\" is not known; choose one of: {}",
                    known.join(", ")
                ))
            })?),
        };
        if e.extrapolation_order.is_some_and(|k| k > 3) {
            return Err(at("experiment.extrapolationOrder: choose 0 to 3".into()));
        }
        if e.max_rows == Some(0) {
            return Err(at("experiment.maxRows: allow at least one row".into()));
        }
        let overrides = Overrides {
            start: e.start_time,
            stop: e.stop_time,
            step: e.step_size,
            output_interval: e.output_interval,
            tolerance: e.tolerance,
            algorithm,
            extrapolation_order: e.extrapolation_order,
            divergence_limit: e.divergence_limit,
            max_rows: e.max_rows,
            ..Overrides::default()
        };
        let format = match &file.keep.format {
            None => super::results::ResultFormat::Csv,
            Some(_) if !file.keep.results => {
                return Err(at(
                    "keep.format applies to the runs' result files: set keep.results to true, or leave keep.format out"
                        .into(),
                ))
            }
            Some(name) => super::results::ResultFormat::parse(name).ok_or_else(|| {
                at(format!(
                    "keep.format \"{name}\" is not a result format; choose csv, mat, arrow or parquet"
                ))
            })?,
        };
        let mut summaries = Vec::new();
        for (i, s) in file.keep.summaries.iter().enumerate() {
            let field = format!("keep.summaries[{i}]");
            if s.variable.trim().is_empty() {
                return Err(at(format!("{field}.variable is empty: name a variable")));
            }
            match (&s.statistics, &s.crossing) {
                (Some(statistics), None) => {
                    if statistics.is_empty() {
                        return Err(at(format!(
                            "{field}.statistics is empty: list some of final, min, max, mean"
                        )));
                    }
                    for statistic in statistics {
                        let kind = match statistic {
                            Statistic::Final => SummaryKind::Final,
                            Statistic::Min => SummaryKind::Min,
                            Statistic::Max => SummaryKind::Max,
                            Statistic::Mean => SummaryKind::Mean,
                        };
                        summaries.push(Summary {
                            variable: s.variable.clone(),
                            kind,
                        });
                    }
                }
                (None, Some(crossing)) => {
                    if !crossing.level.is_finite() {
                        return Err(at(format!("{field}.crossing.level is not a finite number")));
                    }
                    summaries.push(Summary {
                        variable: s.variable.clone(),
                        kind: SummaryKind::Crossing {
                            level: crossing.level,
                            direction: crossing.direction,
                        },
                    });
                }
                _ => {
                    return Err(at(format!(
                        "{field} ({}): give either statistics (final, min, max, mean) or crossing {{level, direction}}, one per entry",
                        s.variable
                    )))
                }
            }
        }
        let mut columns: Vec<String> = names.clone();
        for summary in &summaries {
            let column = summary.column();
            if columns.contains(&column) {
                return Err(at(format!(
                    "keep.summaries: the column {column} is asked for twice; ask once"
                )));
            }
            columns.push(column);
        }
        if let Some(clash) = columns
            .iter()
            .find(|c| ["index", "status", "error"].contains(&c.as_str()))
        {
            return Err(at(format!(
                "the parameter {clash} has the name of a column of the summary table (index, status, error); in a system, name it component.{clash}"
            )));
        }
        let check = match file.check {
            None => None,
            Some(c) => {
                if let Some(clash) = names.iter().find(|n| CHECK_COLUMNS.contains(&n.as_str())) {
                    return Err(at(format!(
                        "the parameter {clash} has the name of a column the check adds to the summary table ({}); in a system, name it component.{clash}",
                        CHECK_COLUMNS.join(", ")
                    )));
                }
                if c.reference.trim().is_empty() {
                    return Err(at(
                        "check.reference is empty: name the reference CSV of every run (e.g. \"nominal.csv\"), or of each run with its index (e.g. \"refs/run-{index}.csv\"), relative to the study file".into(),
                    ));
                }
                let reference = match IndexPattern::parse(&c.reference, base)
                    .map_err(|m| at(format!("check.reference {m}")))?
                {
                    Some(pattern) => ReferenceFiles::PerRun(pattern),
                    None => ReferenceFiles::One(base.join(&c.reference)),
                };
                c.tolerance
                    .validate("check.tolerance")
                    .map_err(|e| at(e.to_string()))?;
                for (name, signal) in &c.signals {
                    if name.trim().is_empty() {
                        return Err(at(
                            "check.signals has an empty name: name the reference's column (component.NAME in a system)".into(),
                        ));
                    }
                    signal
                        .tolerance
                        .validate(&format!("check.signals \"{name}\""))
                        .map_err(|e| at(e.to_string()))?;
                }
                Some(StudyCheck {
                    reference,
                    tolerance: c.tolerance,
                    signals: c.signals,
                })
            }
        };
        let isolate = file.isolate.unwrap_or(true);
        let call_timeout = match (file.call_timeout, isolate) {
            (Some(_), false) => {
                return Err(at(
                    "callTimeout is enforced by killing a run's worker process, but isolate is false: drop one of them".into(),
                ))
            }
            (Some(seconds), true) => {
                super::call_timeout(seconds).map_err(|m| at(format!("callTimeout {seconds}: {m}")))?;
                Some(seconds)
            }
            (None, true) => Some(DEFAULT_CALL_TIMEOUT),
            (None, false) => None,
        };
        Ok(Study {
            file: path.to_path_buf(),
            system,
            grid,
            samples,
            overrides,
            isolate,
            call_timeout,
            keep: Keep {
                results: file.keep.results,
                format,
                variables: file.keep.variables,
                summaries,
            },
            check,
            fingerprint,
        })
    }

    /// The varied parameters' names: the grid's, then the samples'.
    pub fn parameter_names(&self) -> Vec<String> {
        let sampled = self.samples.iter().flat_map(|s| &s.parameters);
        self.grid
            .iter()
            .map(|g| g.name.clone())
            .chain(sampled.map(|p| p.name.clone()))
            .collect()
    }

    /// How many runs the study makes: the grid's points times the samples.
    pub fn run_count(&self) -> u64 {
        let points: u64 = self.grid.iter().map(|g| g.values.len() as u64).product();
        points * self.samples.as_ref().map_or(1, |s| s.count)
    }
}

/// The values of a range: `count` evenly spaced from start to stop (both included), or from
/// start in steps of `step` up to stop (included when reached within rounding).
fn range_values(range: &RangeFile) -> Result<Vec<f64>, String> {
    let (start, stop) = (range.start, range.stop);
    if !(start.is_finite() && stop.is_finite()) {
        return Err("start and stop must be finite numbers".into());
    }
    match (range.count, range.step) {
        (Some(0), None) => Err("count is 0: ask for at least one value".into()),
        (Some(1), None) => Ok(vec![start]),
        (Some(count), None) => {
            if count > MAX_RUNS {
                return Err(format!("count {count} is more than {MAX_RUNS} values"));
            }
            let n = (count - 1) as f64;
            Ok((0..count)
                .map(|i| {
                    if i == count - 1 {
                        stop
                    } else {
                        start + (stop - start) * (i as f64 / n)
                    }
                })
                .collect())
        }
        (None, Some(step)) => {
            if !(step.is_finite() && step > 0.0) || stop < start {
                return Err(format!(
                    "step {step} must be a positive number and stop {stop} at least start {start}"
                ));
            }
            let intervals = ((stop - start) / step * (1.0 + 1e-12)).floor();
            if intervals >= MAX_RUNS as f64 {
                return Err(format!(
                    "step {step} makes more than {MAX_RUNS} values from {start} to {stop}"
                ));
            }
            Ok((0..=intervals as u64)
                .map(|i| start + i as f64 * step)
                .collect())
        }
        _ => Err("give either count or step, not both and not neither".into()),
    }
}

/// FNV-1a, 64 bits: a digest that stays the same across machines and releases.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Study, String> {
        Study::parse(text, Path::new("dir/STUDY.json"))
    }

    #[test]
    fn ranges_include_both_ends() {
        let s = parse(
            r#"{"system": "s.json", "grid": [
                {"name": "a.x", "range": {"start": 0, "stop": 1, "count": 3}},
                {"name": "a.y", "range": {"start": 0, "stop": 0.3, "step": 0.1}}]}"#,
        )
        .unwrap();
        assert_eq!(s.grid[0].values, [0.0, 0.5, 1.0]);
        assert_eq!(s.grid[1].values.len(), 4);
        assert_eq!(s.run_count(), 12);
        assert_eq!(s.system, Path::new("dir/s.json"));
    }

    #[test]
    fn a_check_reference_is_one_file_or_a_pattern_with_the_run_index() {
        let with = |reference: &str| {
            parse(&format!(
                r#"{{"system": "s.json", "grid": [{{"name": "a.x", "values": [1, 2]}}],
                    "check": {{"reference": "{reference}", "tolerance": {{"rel": 0.01}},
                               "signals": {{"a.y": {{"ignore": true}}}}}}}}"#
            ))
            .unwrap()
            .check
            .unwrap()
        };
        let one = with("nominal.csv");
        assert_eq!(one.reference, ReferenceFiles::One("dir/nominal.csv".into()));
        assert_eq!(one.reference.file(7), Path::new("dir/nominal.csv"));
        assert_eq!(one.tolerance.rel, Some(0.01));
        assert!(one.signals["a.y"].ignore);
        let plain = with("refs/run-{index}.csv").reference;
        assert_eq!(plain.file(42), Path::new("dir/refs/run-42.csv"));
        let padded = with("{index:06}/runs/run-{index:06}.csv").reference;
        assert_eq!(padded.file(42), Path::new("dir/000042/runs/run-000042.csv"));
        assert!(
            matches!(padded, ReferenceFiles::PerRun(p) if p.text() == "{index:06}/runs/run-{index:06}.csv")
        );
    }

    #[test]
    fn refusals_name_the_file_and_field() {
        let cases = [
            (r#"{"system": "s.json"}"#, "varies nothing"),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": []}]}"#,
                "grid[0] (a): values is empty",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "range": {"start": 0, "stop": 1}}]}"#,
                "grid[0].range (a): give either count or step",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}, {"name": "a", "values": [2]}]}"#,
                "varied twice",
            ),
            (
                r#"{"system": "s.json", "samples": {"count": 3, "seed": 1, "parameters": [{"name": "a", "normal": {"mean": 0, "std": -1}}]}}"#,
                "samples.parameters[0].normal (a)",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}], "experiment": {"algorithm": "magic"}}"#,
                "experiment.algorithm \"magic\"",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}], "keep": {"summaries": [{"variable": "x"}]}}"#,
                "keep.summaries[0] (x)",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}], "stopTime": 3}"#,
                "unknown field `stopTime`",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}], "check": {"reference": "r-{run}.csv"}}"#,
                "check.reference \"r-{run}.csv\": {run} is not a placeholder",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}], "check": {"reference": "r-{index:6}.csv"}}"#,
                "{index:6} is not a placeholder; write {index} or {index:0N}",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}], "check": {"reference": "r.csv", "tolerance": {"rel": -1}}}"#,
                "check.tolerance: tolerance \"rel\" must be a finite number >= 0",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}], "check": {"reference": "r.csv", "signals": {"a.x": {"absTol": 1}}}}"#,
                "unknown field `absTol`",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "check", "values": [1]}], "check": {"reference": "r.csv"}}"#,
                "the parameter check has the name of a column the check adds",
            ),
            (
                r#"{"system": "s.json", "grid": [{"name": "a", "values": [1]}], "check": {"tolerance": {"rel": 1}}}"#,
                "missing field `reference`",
            ),
        ];
        for (text, wanted) in cases {
            let message = parse(text).unwrap_err();
            assert!(message.starts_with("dir/STUDY.json: "), "{message}");
            assert!(message.contains(wanted), "{message} lacks {wanted}");
        }
    }
}
