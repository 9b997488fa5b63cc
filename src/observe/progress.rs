//! Machine-readable progress: one JSON object per line, for wrappers (a GUI, a job runner)
//! that show or log how far a run is.
//!
//! A line is written when the system is initialised, then at most ten times a second after
//! accepted macro steps, and a last one when the run finishes or fails:
//!
//! ```text
//! {"status":"running","time":0.25,"fraction":0.25,"steps":25,"wall":0.25,"real_time_factor":1.0,"rolling_factor":1.0}
//! {"status":"finished","time":1.0,"fraction":1.0,"steps":100,"wall":1.0,"real_time_factor":1.0,"rolling_factor":1.0}
//! ```
//!
//! `time` is the simulated time, `fraction` the part of the run done (0..1), `steps` the
//! accepted macro steps, `wall` the wall seconds since the system was initialised, the factors
//! simulated seconds per wall second since then and over the last second of wall time (`null`
//! before any time passed). A failed run's last line has `"status":"failed"` and `"error"`.

use std::io::Write;
use std::time::{Duration, Instant};

use super::realtime::RateMeter;
use crate::master::record::Row;
use crate::master::run::Observer;
use crate::master::RunStatistics;
use crate::{Error, Result};

/// Least wall time between two lines written after steps (the first and last lines are always
/// written).
pub const LINE_INTERVAL: Duration = Duration::from_millis(100);

/// Writes progress as JSON lines to `out` (stderr, a file): see the module documentation.
/// Each line is written with one `write_all` and flushed, so lines are never interleaved with
/// other writers of the same stream.
pub struct JsonProgress<W: Write> {
    out: W,
    start: f64,
    stop: f64,
    meter: RateMeter,
    time: f64,
    steps: u64,
    last_line: Option<Instant>,
    line: Vec<u8>,
    failed_to_write: bool,
}

impl<W: Write> JsonProgress<W> {
    /// Progress of a run from `start` to `stop` (simulated seconds) written to `out`.
    pub fn new(out: W, start: f64, stop: f64) -> JsonProgress<W> {
        JsonProgress {
            out,
            start,
            stop,
            meter: RateMeter::default(),
            time: start,
            steps: 0,
            last_line: None,
            line: Vec::with_capacity(256),
            failed_to_write: false,
        }
    }

    /// The part of the run done at `time`, 0..1.
    fn fraction(&self, time: f64) -> f64 {
        let span = self.stop - self.start;
        if span > 0.0 {
            ((time - self.start) / span).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }

    /// Write one line; a stream that cannot be written to is reported once and then left
    /// alone (progress must not end a run).
    fn write_line(&mut self, status: &str, error: Option<&Error>) {
        self.last_line = Some(Instant::now());
        if self.failed_to_write {
            return;
        }
        self.line.clear();
        self.line.extend_from_slice(b"{\"status\":\"");
        self.line.extend_from_slice(status.as_bytes());
        self.line.extend_from_slice(b"\"");
        let fields = [
            ("time", self.time),
            ("fraction", self.fraction(self.time)),
            ("steps", self.steps as f64),
            ("wall", self.meter.wall()),
            ("real_time_factor", self.meter.total()),
            ("rolling_factor", self.meter.rolling()),
        ];
        let mut number = ryu::Buffer::new();
        for (name, value) in fields {
            self.line.extend_from_slice(b",\"");
            self.line.extend_from_slice(name.as_bytes());
            self.line.extend_from_slice(b"\":");
            if name == "steps" {
                // An integer, not 25.0.
                let _ = write!(self.line, "{}", self.steps);
            } else if value.is_finite() {
                self.line
                    .extend_from_slice(number.format_finite(value).as_bytes());
            } else {
                self.line.extend_from_slice(b"null");
            }
        }
        if let Some(error) = error {
            self.line.extend_from_slice(b",\"error\":");
            let _ = serde_json::to_writer(&mut self.line, &error.to_string());
        }
        self.line.extend_from_slice(b"}\n");
        if let Err(e) = self
            .out
            .write_all(&self.line)
            .and_then(|()| self.out.flush())
        {
            self.failed_to_write = true;
            log::warn!("progress lines are no longer written: {e}");
        }
    }
}

impl<W: Write> Observer for JsonProgress<W> {
    fn started(&mut self, _columns: &[String]) -> Result<()> {
        self.meter = RateMeter::default();
        self.time = self.start;
        self.steps = 0;
        self.last_line = None;
        Ok(())
    }

    fn row(&mut self, row: &Row) -> Result<()> {
        if !self.meter.started() {
            // The system is initialised: the clock starts and the first line says so.
            self.meter.start(Instant::now(), row.time);
            self.time = row.time;
            self.write_line("running", None);
        }
        Ok(())
    }

    fn stepped(&mut self, time: f64) {
        let now = Instant::now();
        self.steps += 1;
        self.time = time;
        self.meter.record(now, time);
        if self
            .last_line
            .is_none_or(|last| now.duration_since(last) >= LINE_INTERVAL)
        {
            self.write_line("running", None);
        }
    }

    fn finished(&mut self, stats: &RunStatistics) -> Result<()> {
        self.time = stats.end_time;
        self.steps = stats.steps;
        self.write_line("finished", None);
        Ok(())
    }

    fn failed(&mut self, error: &Error) {
        if let Error::Simulation { time, .. } = error {
            self.time = *time;
        }
        self.write_line("failed", Some(error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(out: &[u8]) -> Vec<serde_json::Value> {
        std::str::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn writes_the_first_line_bounded_lines_after_steps_and_a_last_line() {
        let mut out = Vec::new();
        {
            let mut progress = JsonProgress::new(&mut out, 0.0, 1.0);
            progress.started(&[]).unwrap();
            progress
                .row(&Row {
                    time: 0.0,
                    cells: Vec::new(),
                })
                .unwrap();
            for k in 1..=1000 {
                progress.stepped(k as f64 / 1000.0);
            }
            let stats = RunStatistics {
                end_time: 1.0,
                steps: 1000,
                ..RunStatistics::default()
            };
            progress.finished(&stats).unwrap();
        }
        let lines = lines(&out);
        // 1000 fast steps: the first line, maybe one after a step, the last.
        assert!(lines.len() >= 2 && lines.len() <= 4, "{lines:?}");
        assert_eq!(lines[0]["status"], "running");
        assert_eq!(lines[0]["fraction"], 0.0);
        let last = lines.last().unwrap();
        assert_eq!(last["status"], "finished");
        assert_eq!(last["fraction"], 1.0);
        assert_eq!(last["steps"], 1000);
    }

    #[test]
    fn a_failure_ends_with_a_line_naming_the_error() {
        let mut out = Vec::new();
        {
            let mut progress = JsonProgress::new(&mut out, 0.0, 2.0);
            progress.started(&[]).unwrap();
            progress.stepped(0.5);
            progress.failed(&Error::Simulation {
                time: 0.5,
                source: Box::new(Error::Numerics("x is \"NaN\"".into())),
            });
        }
        let lines = lines(&out);
        let last = lines.last().unwrap();
        assert_eq!(last["status"], "failed");
        assert_eq!(last["fraction"], 0.25);
        assert!(last["error"].as_str().unwrap().contains("x is \"NaN\""));
    }
}
