//! A streaming CSV writer in the convention FMI tools share: a header `"time","name",...`, one
//! row per output point, FMI 3 arrays as space-separated values in one cell, Binary as hex.
//!
//! Rows go through a buffer that is flushed at most every [`FLUSH_INTERVAL`] (a row that comes
//! after a quiet spell is flushed at once, so slow runs write every row as it comes), at the end
//! of a run and when it fails: a run that fails keeps every row up to the failure, without a
//! write call per row. Rows are formatted into a reused buffer: no allocation per row.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The longest rows wait in the buffer while a run goes on.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Writes result rows to a CSV file (or any writer), one cell at a time.
pub struct CsvWriter<W: Write = BufWriter<File>> {
    out: W,
    path: PathBuf,
    line: String,
    cells_in_row: usize,
    columns: usize,
    /// When the writer was last flushed.
    flushed_at: Instant,
    /// Steps since the clock was last read for `flush_if_due` between rows.
    steps_unchecked: u32,
    /// Rows were written since (and may sit in the buffer).
    pending: bool,
}

impl CsvWriter<BufWriter<File>> {
    /// Create `path` and write the header: `time` followed by `columns`.
    pub fn create(path: &Path, columns: &[String]) -> Result<Self> {
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        CsvWriter::new(BufWriter::new(file), path, columns)
    }
}

impl<W: Write> CsvWriter<W> {
    /// Wrap a writer; `path` only names it in error messages.
    pub fn new(out: W, path: &Path, columns: &[String]) -> Result<Self> {
        let mut writer = CsvWriter {
            out,
            path: path.to_path_buf(),
            line: String::with_capacity(64 * (columns.len() + 1)),
            cells_in_row: 0,
            columns: columns.len(),
            flushed_at: Instant::now(),
            steps_unchecked: 0,
            pending: false,
        };
        writer.line.push_str("\"time\"");
        for column in columns {
            writer.line.push(',');
            push_quoted(&mut writer.line, column);
        }
        writer.line.push('\n');
        writer.flush_line()?;
        Ok(writer)
    }

    /// Start a row at `time`.
    pub fn begin_row(&mut self, time: f64) {
        self.line.clear();
        self.cells_in_row = 0;
        push_float(&mut self.line, time);
    }

    /// Append a floating-point cell.
    pub fn push_float(&mut self, value: f64) {
        self.separator();
        push_float(&mut self.line, value);
    }

    /// Append a signed integer cell.
    pub fn push_int(&mut self, value: i64) {
        self.separator();
        self.line.push_str(itoa_buf(value).as_str());
    }

    /// Append an unsigned integer cell.
    pub fn push_uint(&mut self, value: u64) {
        use std::fmt::Write as _;
        self.separator();
        let _ = write!(self.line, "{value}");
    }

    /// Append a Boolean cell (`1` / `0`, which every plotting tool reads as a number).
    pub fn push_bool(&mut self, value: bool) {
        self.separator();
        self.line.push(if value { '1' } else { '0' });
    }

    /// Append a string cell, quoted when it needs to be.
    pub fn push_str(&mut self, value: &str) {
        self.separator();
        if value.contains([',', '"', '\n', '\r']) || value.starts_with(' ') {
            push_quoted(&mut self.line, value);
        } else {
            self.line.push_str(value);
        }
    }

    /// Append a Binary cell as lowercase hex.
    pub fn push_bytes(&mut self, value: &[u8]) {
        use std::fmt::Write as _;
        self.separator();
        for byte in value {
            let _ = write!(self.line, "{byte:02x}");
        }
    }

    /// Append an array of floats as one space-separated cell.
    pub fn push_float_array(&mut self, values: &[f64]) {
        self.separator();
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                self.line.push(' ');
            }
            push_float(&mut self.line, *value);
        }
    }

    /// Finish the row; it reaches the file within [`FLUSH_INTERVAL`] (see [`CsvWriter::flush`]).
    pub fn end_row(&mut self) -> Result<()> {
        if self.cells_in_row != self.columns {
            return Err(Error::Internal(format!(
                "{}: a row has {} cells but the header has {} columns",
                self.path.display(),
                self.cells_in_row,
                self.columns
            )));
        }
        self.line.push('\n');
        self.out
            .write_all(self.line.as_bytes())
            .map_err(|e| Error::io(&self.path, e))?;
        self.pending = true;
        self.flush_if_due()
    }

    /// Flush when rows wait and the last flush is [`FLUSH_INTERVAL`] ago.
    pub fn flush_if_due(&mut self) -> Result<()> {
        if self.pending && self.flushed_at.elapsed() >= FLUSH_INTERVAL {
            self.flush()
        } else {
            Ok(())
        }
    }

    /// After a macro step: flush when due, reading the clock every 64 steps only (rows are
    /// rarer than steps; a clock read per step would cost more than a cheap FMU's step).
    pub fn after_step(&mut self) -> Result<()> {
        if !self.pending {
            return Ok(());
        }
        self.steps_unchecked += 1;
        if self.steps_unchecked < 64 {
            return Ok(());
        }
        self.steps_unchecked = 0;
        self.flush_if_due()
    }

    /// The file written (as named in messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether rows were written since the last flush.
    pub fn pending(&self) -> bool {
        self.pending
    }

    /// Write every row so far to the file.
    pub fn flush(&mut self) -> Result<()> {
        self.pending = false;
        self.flushed_at = Instant::now();
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }

    /// The underlying writer (for tests writing to memory).
    pub fn into_inner(self) -> W {
        self.out
    }

    fn separator(&mut self) {
        self.line.push(',');
        self.cells_in_row += 1;
    }

    fn flush_line(&mut self) -> Result<()> {
        self.out
            .write_all(self.line.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(|e| Error::io(&self.path, e))
    }
}

/// Shortest representation that reads back to the same f64 (ryu), `nan` / `inf` spelled out.
fn push_float(line: &mut String, value: f64) {
    if value.is_finite() {
        let mut buffer = ryu::Buffer::new();
        let text = buffer.format_finite(value);
        line.push_str(text.strip_suffix(".0").unwrap_or(text));
    } else if value.is_nan() {
        line.push_str("nan");
    } else if value > 0.0 {
        line.push_str("inf");
    } else {
        line.push_str("-inf");
    }
}

fn push_quoted(line: &mut String, text: &str) {
    line.push('"');
    for c in text.chars() {
        if c == '"' {
            line.push('"');
        }
        line.push(c);
    }
    line.push('"');
}

/// An i64 formatted without allocation.
fn itoa_buf(value: i64) -> IntText {
    let mut text = IntText {
        bytes: [0; 20],
        len: 0,
    };
    let negative = value < 0;
    let mut magnitude = value.unsigned_abs();
    let mut digits = [0u8; 20];
    let mut n = 0;
    loop {
        digits[n] = b'0' + (magnitude % 10) as u8;
        n += 1;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if negative {
        text.bytes[0] = b'-';
        text.len = 1;
    }
    for i in (0..n).rev() {
        text.bytes[text.len] = digits[i];
        text.len += 1;
    }
    text
}

struct IntText {
    bytes: [u8; 20],
    len: usize,
}

impl IntText {
    fn as_str(&self) -> &str {
        // Only ASCII digits and '-' are ever written.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("?")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(columns: &[&str], rows: impl FnOnce(&mut CsvWriter<Vec<u8>>)) -> String {
        let columns: Vec<String> = columns.iter().map(|s| s.to_string()).collect();
        let mut writer = CsvWriter::new(Vec::new(), Path::new("mem.csv"), &columns).unwrap();
        rows(&mut writer);
        String::from_utf8(writer.into_inner()).unwrap()
    }

    /// A writer that counts its flushes.
    #[derive(Default)]
    struct Counting {
        bytes: Vec<u8>,
        flushes: usize,
    }

    impl Write for Counting {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.flushes += 1;
            Ok(())
        }
    }

    #[test]
    fn rows_are_flushed_at_a_bounded_interval_not_one_by_one() {
        let columns = vec!["x".to_string()];
        let mut writer = CsvWriter::new(Counting::default(), Path::new("c.csv"), &columns).unwrap();
        assert_eq!(writer.out.flushes, 1, "the header is flushed at once");
        for k in 0..1000 {
            writer.begin_row(f64::from(k));
            writer.push_float(1.0);
            writer.end_row().unwrap();
        }
        assert!(
            writer.out.flushes <= 2,
            "{} flushes for 1000 rows",
            writer.out.flushes
        );
        assert!(writer.pending());
        let before = writer.out.flushes;
        writer.flush().unwrap();
        assert_eq!(writer.out.flushes, before + 1);
        assert!(!writer.pending());
        // A row after a quiet spell reaches the file at once.
        std::thread::sleep(FLUSH_INTERVAL + Duration::from_millis(10));
        let before = writer.out.flushes;
        writer.begin_row(1000.0);
        writer.push_float(2.0);
        writer.end_row().unwrap();
        assert_eq!(writer.out.flushes, before + 1);
        assert!(!writer.pending());
        let text = String::from_utf8(writer.into_inner().bytes).unwrap();
        assert_eq!(text.lines().count(), 1002);
    }

    #[test]
    fn header_is_quoted_and_cells_follow_the_convention() {
        let text = written(&["x", "say \"hi\"", "n", "b", "s", "bin", "arr"], |w| {
            w.begin_row(0.1);
            w.push_float(1.0);
            w.push_float(1e-20);
            w.push_int(-42);
            w.push_bool(true);
            w.push_str("a,b");
            w.push_bytes(&[0x0f, 0xa0]);
            w.push_float_array(&[1.5, 2.0]);
            w.end_row().unwrap();
        });
        assert_eq!(
            text,
            "\"time\",\"x\",\"say \"\"hi\"\"\",\"n\",\"b\",\"s\",\"bin\",\"arr\"\n\
             0.1,1,1e-20,-42,1,\"a,b\",0fa0,1.5 2\n"
        );
    }

    #[test]
    fn a_short_row_is_an_error_not_a_corrupt_file() {
        let columns = vec!["x".to_string(), "y".to_string()];
        let mut writer = CsvWriter::new(Vec::new(), Path::new("r.csv"), &columns).unwrap();
        writer.begin_row(0.0);
        writer.push_float(1.0);
        let err = writer.end_row().unwrap_err().to_string();
        assert!(
            err.contains("1 cells but the header has 2 columns"),
            "{err}"
        );
    }

    #[test]
    fn floats_read_back_bit_identical() {
        for value in [0.1, 1.0 / 3.0, -2.5e-300, 6.02214076e23, i64::MAX as f64] {
            let mut line = String::new();
            push_float(&mut line, value);
            assert_eq!(
                line.parse::<f64>().unwrap().to_bits(),
                value.to_bits(),
                "{line}"
            );
        }
        let text = written(&["n"], |w| {
            w.begin_row(0.0);
            w.push_int(i64::MIN);
            w.end_row().unwrap();
        });
        assert!(text.ends_with("0,-9223372036854775808\n"), "{text}");
    }
}
