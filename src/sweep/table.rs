//! The summary table of a sweep: a row per run in index order, written as `summary.csv` and
//! `summary.parquet`, with `sweep.json` saying which study and which runs it holds (so that
//! partial tables of shards can be checked and merged into the table one machine would give).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use serde::{Deserialize, Serialize};

use super::check::{RunCheck, Verdict};
use super::runner::{value_text, RunRecord, RunStatus};
use crate::settings::study::CHECK_COLUMNS;
use crate::{Error, Result};

/// The summary table's CSV file in an output folder.
pub const CSV_FILE: &str = "summary.csv";
/// The summary table's Parquet file in an output folder.
pub const PARQUET_FILE: &str = "summary.parquet";
/// What the table holds: the study, its columns, the shard.
pub const META_FILE: &str = "sweep.json";

/// Every `count`-th run, starting at `index` (0-based): a batch engine's array task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// `I/N` with 0 <= I < N.
    pub fn parse(text: &str) -> std::result::Result<Shard, String> {
        let parsed = text.split_once('/').and_then(|(i, n)| {
            Some(Shard {
                index: i.trim().parse().ok()?,
                count: n.trim().parse().ok()?,
            })
        });
        match parsed {
            Some(s) if s.count > 0 && s.index < s.count => Ok(s),
            _ => Err(format!(
                "--shard {text}: expected I/N with 0 <= I < N, e.g. --shard 0/4 for the first of four shards (a Slurm array's $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)"
            )),
        }
    }

    /// The run indices of this shard among `runs`.
    pub fn indices(&self, runs: usize) -> Vec<usize> {
        (self.index..runs).step_by(self.count).collect()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `sweep.json`: what a summary table holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableMeta {
    /// The study file, as given.
    pub study: String,
    /// The study's digest: tables of different studies are never merged.
    pub fingerprint: String,
    /// The runs of the whole study.
    pub runs: usize,
    /// The shard this table is (absent: every run).
    pub shard: Option<Shard>,
    pub parameters: Vec<String>,
    pub summaries: Vec<String>,
    /// Whether the runs were checked against references (the table has the check columns).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub check: bool,
    /// Whether every run the table was to hold is in it (false after Ctrl-C).
    pub complete: bool,
}

/// The rows of a sweep, in index order.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryTable {
    pub meta: TableMeta,
    pub records: Vec<RunRecord>,
}

impl SummaryTable {
    /// The CSV header: index, parameters, summaries, status, error and, with a check, check,
    /// check_signal, check_deviation, check_time, check_message.
    pub fn header(&self) -> Vec<String> {
        header(&self.meta)
    }

    /// How many runs' checks passed, failed and could not be made (all 0 without a check).
    pub fn check_counts(&self) -> (usize, usize, usize) {
        let count = |verdict| {
            self.records
                .iter()
                .filter(|r| r.check.as_ref().is_some_and(|c| c.verdict == verdict))
                .count()
        };
        (
            count(Verdict::Pass),
            count(Verdict::Fail),
            count(Verdict::Error),
        )
    }

    /// Write `summary.csv`, `summary.parquet` and `sweep.json` into `dir` (each through a
    /// temporary file, so a reader never sees half a table).
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        self.write_meta(dir)?;
        replace(&dir.join(CSV_FILE), |path| self.write_csv(path))?;
        replace(&dir.join(PARQUET_FILE), |path| self.write_parquet(path))
    }

    /// Write `sweep.json` into `dir`.
    fn write_meta(&self, dir: &Path) -> Result<()> {
        let meta = serde_json::to_string_pretty(&self.meta)
            .map_err(|e| Error::Internal(format!("the sweep's description: {e}")))?;
        replace(&dir.join(META_FILE), |path| {
            std::fs::write(path, meta.as_bytes()).map_err(|e| Error::io(path, e))
        })
    }

    fn write_csv(&self, path: &Path) -> Result<()> {
        let mut file = File::create(path).map_err(|e| Error::io(path, e))?;
        let mut bytes = csv_line(&header(&self.meta), path)?;
        for r in &self.records {
            bytes.extend(csv_line(&cells(&self.meta, r), path)?);
        }
        file.write_all(&bytes).map_err(|e| Error::io(path, e))?;
        file.flush().map_err(|e| Error::io(path, e))
    }

    fn write_parquet(&self, path: &Path) -> Result<()> {
        let failed = |e: &dyn std::fmt::Display| {
            Error::Internal(format!("{}: writing Parquet: {e}", path.display()))
        };
        let mut fields = vec![Field::new("index", DataType::UInt64, false)];
        let mut columns: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from_iter_values(
            self.records.iter().map(|r| r.index as u64),
        ))];
        for (i, name) in self.meta.parameters.iter().enumerate() {
            fields.push(Field::new(name, DataType::Float64, false));
            columns.push(Arc::new(Float64Array::from_iter_values(
                self.records.iter().map(|r| r.parameters[i]),
            )));
        }
        for (i, name) in self.meta.summaries.iter().enumerate() {
            fields.push(Field::new(name, DataType::Float64, true));
            columns.push(Arc::new(Float64Array::from_iter(
                self.records.iter().map(|r| r.summaries[i]),
            )));
        }
        fields.push(Field::new("status", DataType::Utf8, false));
        columns.push(Arc::new(StringArray::from_iter_values(
            self.records.iter().map(|r| r.status.name()),
        )));
        fields.push(Field::new("error", DataType::Utf8, true));
        columns.push(Arc::new(StringArray::from_iter(
            self.records.iter().map(|r| r.error.as_deref()),
        )));
        if self.meta.check {
            let checks: Vec<Option<&RunCheck>> =
                self.records.iter().map(|r| r.check.as_ref()).collect();
            let [verdict, signal, deviation, time, message] =
                [0, 1, 2, 3, 4].map(|i| CHECK_COLUMNS[i]);
            fields.push(Field::new(verdict, DataType::Utf8, true));
            columns.push(Arc::new(StringArray::from_iter(
                checks.iter().map(|c| c.map(|c| c.verdict.name())),
            )));
            fields.push(Field::new(signal, DataType::Utf8, true));
            columns.push(Arc::new(StringArray::from_iter(
                checks.iter().map(|c| c.and_then(|c| c.signal.as_deref())),
            )));
            fields.push(Field::new(deviation, DataType::Float64, true));
            columns.push(Arc::new(Float64Array::from_iter(
                checks.iter().map(|c| c.and_then(|c| c.deviation)),
            )));
            fields.push(Field::new(time, DataType::Float64, true));
            columns.push(Arc::new(Float64Array::from_iter(
                checks.iter().map(|c| c.and_then(|c| c.time)),
            )));
            fields.push(Field::new(message, DataType::Utf8, true));
            columns.push(Arc::new(StringArray::from_iter(
                checks.iter().map(|c| c.map(|c| c.message.as_str())),
            )));
        }
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), columns).map_err(|e| failed(&e))?;
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(file, schema, None).map_err(|e| failed(&e))?;
        writer.write(&batch).map_err(|e| failed(&e))?;
        writer.close().map_err(|e| failed(&e))?;
        Ok(())
    }

    /// Read the table an output folder holds (its `sweep.json` and `summary.csv`).
    pub fn read(dir: &Path) -> Result<SummaryTable> {
        SummaryTable::read_rows(dir, false)
    }

    /// Read what a stopped or killed sweep left in `dir`: its `sweep.json` and the rows of
    /// `summary.csv` in the order they were written; a last row cut short by the kill is
    /// left out (its run is made again), and a missing `summary.csv` holds no rows.
    pub fn read_partial(dir: &Path) -> Result<SummaryTable> {
        SummaryTable::read_rows(dir, true)
    }

    fn read_rows(dir: &Path, partial: bool) -> Result<SummaryTable> {
        let meta_path = dir.join(META_FILE);
        let text = std::fs::read_to_string(&meta_path).map_err(|e| {
            Error::Usage(format!(
                "{}: {e}; name an output folder of cosimo sweep",
                meta_path.display()
            ))
        })?;
        let meta: TableMeta = serde_json::from_str(&text)
            .map_err(|e| Error::Usage(format!("{}: {e}", meta_path.display())))?;
        let path = dir.join(CSV_FILE);
        let bad = |line: usize, m: String| Error::Usage(format!("{}:{line}: {m}", path.display()));
        let mut table = SummaryTable {
            meta,
            records: Vec::new(),
        };
        let mut bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if partial && e.kind() == std::io::ErrorKind::NotFound => return Ok(table),
            Err(e) => return Err(Error::Usage(format!("{}: {e}", path.display()))),
        };
        if partial {
            // Rows are written whole and end with a line break outside quotes: what follows
            // the last such break is a row the kill cut short.
            bytes.truncate(whole_rows(&bytes));
            if bytes.is_empty() {
                return Ok(table);
            }
        }
        let mut reader = csv::ReaderBuilder::new().from_reader(bytes.as_slice());
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| bad(1, e.to_string()))?
            .iter()
            .map(str::to_string)
            .collect();
        if header != table.header() {
            return Err(bad(
                1,
                format!("the columns do not match {}", meta_path.display()),
            ));
        }
        let (p, s) = (table.meta.parameters.len(), table.meta.summaries.len());
        for (i, row) in reader.records().enumerate() {
            let line = i + 2;
            let row = row.map_err(|e| bad(line, e.to_string()))?;
            let number = |text: &str| -> Result<f64> {
                text.parse::<f64>()
                    .map_err(|_| bad(line, format!("\"{text}\" is not a number")))
            };
            let index = row[0]
                .parse::<usize>()
                .map_err(|_| bad(line, format!("index \"{}\" is not a run index", &row[0])))?;
            let parameters = (1..=p).map(|c| number(&row[c])).collect::<Result<_>>()?;
            let summaries = (p + 1..=p + s)
                .map(|c| (!row[c].is_empty()).then(|| number(&row[c])).transpose())
                .collect::<Result<_>>()?;
            let status = RunStatus::parse(&row[p + s + 1])
                .ok_or_else(|| bad(line, format!("status \"{}\" is not known", &row[p + s + 1])))?;
            let error = Some(row[p + s + 2].to_string()).filter(|e| !e.is_empty());
            let check = if table.meta.check {
                let c = p + s + 3;
                let text = |i: usize| Some(row[c + i].to_string()).filter(|t| !t.is_empty());
                let number = |i: usize| text(i).map(|t| number(&t)).transpose();
                let verdict = Verdict::parse(&row[c]).ok_or_else(|| {
                    bad(
                        line,
                        format!("check \"{}\" is not known (pass, fail or error)", &row[c]),
                    )
                })?;
                Some(RunCheck {
                    verdict,
                    signal: text(1),
                    deviation: number(2)?,
                    time: number(3)?,
                    message: row[c + 4].to_string(),
                })
            } else {
                None
            };
            table.records.push(RunRecord {
                index,
                parameters,
                summaries,
                status,
                error,
                check,
            });
        }
        Ok(table)
    }

    /// Join partial tables (of shards, or of stopped runs and their reruns) of one study into
    /// the table of the whole study; every run must be in one of them.
    pub fn merge(tables: Vec<(PathBuf, SummaryTable)>) -> Result<SummaryTable> {
        let Some((first_dir, first)) = tables.first() else {
            return Err(Error::Usage(
                "--merge: name the output folders to join".into(),
            ));
        };
        let meta = TableMeta {
            shard: None,
            complete: true,
            ..first.meta.clone()
        };
        let mut rows: Vec<Option<RunRecord>> = vec![None; meta.runs];
        for (dir, table) in &tables {
            let m = &table.meta;
            if m.fingerprint != meta.fingerprint
                || m.runs != meta.runs
                || m.parameters != meta.parameters
                || m.summaries != meta.summaries
                || m.check != meta.check
            {
                return Err(Error::Usage(format!(
                    "--merge: {} holds runs of another study than {} ({} and {}): merge the shards of one study",
                    dir.display(),
                    first_dir.display(),
                    m.study,
                    meta.study
                )));
            }
            for record in &table.records {
                let slot = rows.get_mut(record.index).ok_or_else(|| {
                    Error::Usage(format!(
                        "--merge: {} has run {}, but the study has {} runs",
                        dir.display(),
                        record.index,
                        meta.runs
                    ))
                })?;
                match slot {
                    Some(known) if known != record => {
                        return Err(Error::Usage(format!(
                            "--merge: run {} is in two tables with different results ({} is one)",
                            record.index,
                            dir.display()
                        )))
                    }
                    _ => *slot = Some(record.clone()),
                }
            }
        }
        let missing: Vec<usize> = (0..meta.runs).filter(|&i| rows[i].is_none()).collect();
        if !missing.is_empty() {
            let shown: Vec<String> = missing.iter().take(10).map(|i| i.to_string()).collect();
            return Err(Error::Usage(format!(
                "--merge: {} of the study's {} runs are in none of the tables (runs {}{}): add the missing shards' folders, or rerun those shards",
                missing.len(),
                meta.runs,
                shown.join(", "),
                if missing.len() > 10 { ", ..." } else { "" }
            )));
        }
        Ok(SummaryTable {
            meta,
            records: rows.into_iter().flatten().collect(),
        })
    }
}

/// The CSV header of a table described by `meta`: index, parameters, summaries, status,
/// error and, with a check, check, check_signal, check_deviation, check_time, check_message.
fn header(meta: &TableMeta) -> Vec<String> {
    let check = if meta.check { &CHECK_COLUMNS[..5] } else { &[] };
    std::iter::once("index".to_string())
        .chain(meta.parameters.iter().cloned())
        .chain(meta.summaries.iter().cloned())
        .chain(["status".to_string(), "error".to_string()])
        .chain(check.iter().map(|c| c.to_string()))
        .collect()
}

/// The CSV cells of one run's row.
fn cells(meta: &TableMeta, r: &RunRecord) -> Vec<String> {
    let mut cells: Vec<String> = Vec::with_capacity(meta.parameters.len() + 8);
    cells.push(r.index.to_string());
    cells.extend(r.parameters.iter().map(|v| value_text(*v)));
    cells.extend(
        r.summaries
            .iter()
            .map(|v| v.map(value_text).unwrap_or_default()),
    );
    cells.push(r.status.name().to_string());
    cells.push(r.error.clone().unwrap_or_default());
    if meta.check {
        let check = r.check.as_ref();
        cells.push(check.map_or("", |c| c.verdict.name()).to_string());
        cells.push(check.and_then(|c| c.signal.clone()).unwrap_or_default());
        for value in [check.and_then(|c| c.deviation), check.and_then(|c| c.time)] {
            cells.push(value.map(value_text).unwrap_or_default());
        }
        cells.push(check.map(|c| c.message.clone()).unwrap_or_default());
    }
    cells
}

/// The length of the whole rows at the start of CSV `bytes`: up to the last line break
/// outside a quoted cell.
fn whole_rows(bytes: &[u8]) -> usize {
    let mut quoted = false;
    let mut end = 0;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => end = i + 1,
            _ => {}
        }
    }
    end
}

/// One CSV record with its line break, quoted where it must be (`path` names the file in an
/// error).
fn csv_line(cells: &[String], path: &Path) -> Result<Vec<u8>> {
    let failed = |e: &dyn std::fmt::Display| Error::Usage(format!("{}: {e}", path.display()));
    let mut out = csv::WriterBuilder::new()
        .quote_style(csv::QuoteStyle::Necessary)
        .from_writer(Vec::new());
    out.write_record(cells).map_err(|e| failed(&e))?;
    out.into_inner().map_err(|e| failed(&e))
}

/// The summary table of a sweep in progress, written as its runs finish: `sweep.json`
/// (incomplete) and the header at once, then `summary.csv` a row per finished run (in the
/// order they finish, each row written whole and flushed), so that a sweep killed at any
/// moment leaves every finished run on disk; [`TableWriter::finish`] writes the table in index
/// order, `summary.parquet` and the final `sweep.json`.
pub struct TableWriter {
    dir: PathBuf,
    table: SummaryTable,
    csv_path: PathBuf,
    csv: File,
}

impl TableWriter {
    /// Start the table of `meta` in `dir` with the `earlier` rows (of the sweep this one
    /// resumes; none for a new sweep). A `summary.parquet` from before is removed: until
    /// the end, the CSV file is the table.
    pub fn create(dir: &Path, meta: TableMeta, earlier: Vec<RunRecord>) -> Result<TableWriter> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut table = SummaryTable {
            meta: TableMeta {
                complete: false,
                ..meta
            },
            records: earlier,
        };
        table.records.sort_by_key(|r| r.index);
        table.write_meta(dir)?;
        let parquet = dir.join(PARQUET_FILE);
        match std::fs::remove_file(&parquet) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(&parquet, e))
            }
            _ => {}
        }
        let csv_path = dir.join(CSV_FILE);
        replace(&csv_path, |path| table.write_csv(path))?;
        let csv = std::fs::OpenOptions::new()
            .append(true)
            .open(&csv_path)
            .map_err(|e| Error::io(&csv_path, e))?;
        Ok(TableWriter {
            dir: dir.to_path_buf(),
            table,
            csv_path,
            csv,
        })
    }

    /// The rows so far.
    pub fn records(&self) -> &[RunRecord] {
        &self.table.records
    }

    /// Append the row of a finished run to `summary.csv`, written whole and flushed.
    pub fn add(&mut self, record: RunRecord) -> Result<()> {
        let line = csv_line(&cells(&self.table.meta, &record), &self.csv_path)?;
        self.csv
            .write_all(&line)
            .and_then(|()| self.csv.flush())
            .map_err(|e| Error::io(&self.csv_path, e))?;
        self.table.records.push(record);
        Ok(())
    }

    /// Write the whole table in index order (`summary.csv`, `summary.parquet`, and
    /// `sweep.json` saying whether it is `complete`) and return it.
    pub fn finish(mut self, complete: bool) -> Result<SummaryTable> {
        self.table.records.sort_by_key(|r| r.index);
        self.table.meta.complete = complete;
        self.table.write(&self.dir)?;
        Ok(self.table)
    }
}

/// Write `path` through a temporary file beside it, renamed into place.
fn replace(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".partial");
    let temporary = PathBuf::from(temporary);
    write(&temporary)?;
    std::fs::rename(&temporary, path).map_err(|e| Error::io(path, e))
}
