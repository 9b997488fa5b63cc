//! Observers of a run: they implement [`Observer`](crate::master::run::Observer), which the run
//! loop defines, and watch it without steering it. The result writers (CSV, MAT, Arrow,
//! Parquet; [`ResultFile`] picks one by the file's extension) are observers among others;
//! `Progress` turns a closure into one, `JsonProgress` writes progress as JSON lines and
//! `RealTime` paces a run to the wall clock.

pub mod arrow;
pub mod csv;
pub mod flush;
pub mod mat;
pub mod progress;
pub mod realtime;
pub mod result_file;

use std::io::Write;

use crate::master::execution::Execution;
use crate::master::record::{Cell, Row};
use crate::master::run::{run, Observer};
use crate::master::RunStatistics;
use crate::Result;
pub use arrow::{ArrowWriter, ParquetWriter};
pub use csv::CsvWriter;
pub use mat::MatWriter;
pub use progress::JsonProgress;
pub use realtime::{RateMeter, RealTime, RealTimeReport};
pub use result_file::ResultFile;

impl<W: Write> CsvWriter<W> {
    /// Write one result row.
    pub fn write_row(&mut self, row: &Row) -> Result<()> {
        self.begin_row(row.time);
        for cell in &row.cells {
            match cell {
                Cell::Float(x) => self.push_float(*x),
                Cell::Floats(v) => self.push_float_array(v),
                Cell::Int(x) => self.push_int(*x),
                Cell::UInt(x) => self.push_uint(*x),
                Cell::Bool(x) => self.push_bool(*x),
                Cell::Text(x) => self.push_str(x),
                Cell::Bytes(x) => self.push_bytes(x),
            }
        }
        self.end_row()
    }
}

impl<W: Write> Observer for CsvWriter<W> {
    fn row(&mut self, row: &Row) -> Result<()> {
        self.write_row(row)
    }

    fn stepped(&mut self, _time: f64) {
        // Rows written during a fast stretch reach the file even when the next row is far off
        // (a write error shows at the next row or the end).
        let _ = self.after_step();
    }

    fn finished(&mut self, _stats: &RunStatistics) -> Result<()> {
        self.flush()
    }

    fn failed(&mut self, _error: &crate::Error) {
        if let Err(e) = self.flush() {
            log::error!("{e}");
        }
    }
}

/// Calls a closure with the time after every accepted macro step (a progress bar, say).
pub struct Progress<F: FnMut(f64)>(pub F);

impl<F: FnMut(f64)> Observer for Progress<F> {
    fn stepped(&mut self, time: f64) {
        (self.0)(time)
    }
}

/// Run an instantiated system on the run loop, writing a result row at every output point
/// (flushed within 100 ms, at the end and on failure) and calling `progress` with the time after every step. A failure is
/// reported with the time it happened; rows up to it are already written.
pub fn run_system<W: Write + Send>(
    exec: &mut Execution,
    writer: &mut CsvWriter<W>,
    progress: &mut dyn FnMut(f64),
) -> Result<RunStatistics> {
    run(exec, &mut [writer, &mut Progress(progress)])
}
