//! When a result writer hands its buffered rows to the file: at most [`FLUSH_INTERVAL`] after
//! they were written (a row after a quiet spell at once), so a run that fails or is killed
//! keeps every row but the last fraction of a second, without a write call per row.

use std::time::Instant;

pub use super::csv::FLUSH_INTERVAL;

/// The flush schedule of one writer.
#[derive(Debug)]
pub struct FlushClock {
    /// When the writer last flushed.
    flushed_at: Instant,
    /// Steps since the clock was last read between rows.
    steps_unchecked: u32,
    /// Rows were written since the last flush.
    pending: bool,
}

impl Default for FlushClock {
    fn default() -> Self {
        FlushClock {
            flushed_at: Instant::now(),
            steps_unchecked: 0,
            pending: false,
        }
    }
}

impl FlushClock {
    /// A row was buffered; `true` when the rows are due to be flushed now.
    pub fn wrote(&mut self) -> bool {
        self.pending = true;
        self.flushed_at.elapsed() >= FLUSH_INTERVAL
    }

    /// After a macro step: `true` when buffered rows are due, reading the clock every 64
    /// steps only (a clock read per step would cost more than a cheap FMU's step).
    pub fn stepped(&mut self) -> bool {
        if !self.pending {
            return false;
        }
        self.steps_unchecked += 1;
        if self.steps_unchecked < 64 {
            return false;
        }
        self.steps_unchecked = 0;
        self.flushed_at.elapsed() >= FLUSH_INTERVAL
    }

    /// The buffered rows reached the file.
    pub fn flushed(&mut self) {
        self.pending = false;
        self.flushed_at = Instant::now();
    }

    /// Whether rows wait in the buffer.
    pub fn pending(&self) -> bool {
        self.pending
    }
}
