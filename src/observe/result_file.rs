//! A result file of any format, picked by its extension: the one observer a run gives each
//! of its output files.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use super::arrow::{ArrowWriter, ParquetWriter};
use super::csv::CsvWriter;
use super::mat::MatWriter;
use crate::error::{Error, Result};
use crate::master::record::{ResultColumn, Row};
use crate::master::run::Observer;
use crate::master::RunStatistics;
use crate::settings::results::ResultFormat;

/// A result file being written, in the format its extension names.
pub enum ResultFile {
    Csv(CsvWriter<BufWriter<File>>),
    Mat(MatWriter),
    Arrow(ArrowWriter),
    Parquet(ParquetWriter),
}

impl ResultFile {
    /// Create `path` for `columns` in the format of its extension (an unknown one is refused
    /// before anything is written); `warn` hears about columns the format leaves out.
    pub fn create(
        path: &Path,
        columns: &[ResultColumn],
        warn: &mut dyn FnMut(&str),
    ) -> Result<ResultFile> {
        ResultFile::create_as(ResultFile::format_of(path)?, path, columns, warn)
    }

    /// The format `path` is written in: its extension's; CSV for a device without one
    /// (`/dev/null`, `/dev/stdout`), as before formats were picked by extension.
    pub fn format_of(path: &Path) -> Result<ResultFormat> {
        ResultFormat::of_path(path).or_else(|message| {
            let device = std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
            if device && path.extension().is_none() {
                Ok(ResultFormat::Csv)
            } else {
                Err(Error::Usage(message))
            }
        })
    }

    /// Create `path` in `format`, whatever its extension.
    pub fn create_as(
        format: ResultFormat,
        path: &Path,
        columns: &[ResultColumn],
        warn: &mut dyn FnMut(&str),
    ) -> Result<ResultFile> {
        Ok(match format {
            ResultFormat::Csv => {
                let names: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
                ResultFile::Csv(CsvWriter::create(path, &names)?)
            }
            ResultFormat::Mat => ResultFile::Mat(MatWriter::create(path, columns, warn)?),
            ResultFormat::Arrow => ResultFile::Arrow(ArrowWriter::create(path, columns)?),
            ResultFormat::Parquet => ResultFile::Parquet(ParquetWriter::create(path, columns)?),
        })
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        match self {
            ResultFile::Csv(w) => w.path(),
            ResultFile::Mat(w) => w.path(),
            ResultFile::Arrow(w) => w.path(),
            ResultFile::Parquet(w) => w.path(),
        }
    }

    /// Whether rows written so far may not be in the file yet (Parquet's are until the end).
    pub fn pending(&self) -> bool {
        match self {
            ResultFile::Csv(w) => w.pending(),
            ResultFile::Mat(w) => w.pending(),
            ResultFile::Arrow(w) => w.pending(),
            ResultFile::Parquet(_) => false,
        }
    }

    /// Whether a killed run leaves this file readable with its flushed rows.
    pub fn streams(&self) -> bool {
        !matches!(self, ResultFile::Parquet(_))
    }

    fn observer(&mut self) -> &mut dyn Observer {
        match self {
            ResultFile::Csv(w) => w,
            ResultFile::Mat(w) => w,
            ResultFile::Arrow(w) => w,
            ResultFile::Parquet(w) => w,
        }
    }
}

impl Observer for ResultFile {
    fn started(&mut self, columns: &[String]) -> Result<()> {
        self.observer().started(columns)
    }
    fn row(&mut self, row: &Row) -> Result<()> {
        self.observer().row(row)
    }
    fn stepped(&mut self, time: f64) {
        self.observer().stepped(time)
    }
    fn stop_requested(&mut self) -> bool {
        self.observer().stop_requested()
    }
    fn finished(&mut self, stats: &RunStatistics) -> Result<()> {
        self.observer().finished(stats)
    }
    fn failed(&mut self, error: &Error) {
        self.observer().failed(error)
    }
    fn restored(&mut self, rows: u64, time: f64) {
        self.observer().restored(rows, time)
    }
}
