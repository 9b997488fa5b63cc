//! Real-time pacing: an observer that holds every accepted macro step back until the wall clock
//! has caught up with it, and measures how well the run keeps pace.
//!
//! Pacing only sleeps: it never touches the system, so results are bit-identical with and
//! without it. The clock starts when the system is initialised (at the first result row, so
//! loading and initialising the FMUs is not counted as lateness).

use std::time::{Duration, Instant};

use crate::master::record::Row;
use crate::master::run::Observer;
use crate::master::RunStatistics;
use crate::{Error, Result};

/// Wall time over which [`RateMeter::rolling`] measures the rolling real-time factor.
pub const ROLLING_WINDOW: Duration = Duration::from_secs(1);

/// Samples kept by a [`RateMeter`]: one per 1/100 of the window at most, plus headroom.
const SAMPLES: usize = 128;
const SAMPLES_PER_WINDOW: f64 = 100.0;

/// Below this much time left, pacing spins instead of sleeping: a sleep may overshoot by tens
/// to hundreds of microseconds, a spin lands within a microsecond or so.
const SPIN: Duration = Duration::from_millis(1);

/// Measures simulated time against wall time: the total real-time factor since the start and
/// a rolling one over the last [`ROLLING_WINDOW`] of wall time.
///
/// The window is in wall time rather than a number of steps because that is what an operator
/// watching the run perceives, it means the same whatever the step size (or a step-size
/// controller) does, and one slow step among a hundred is averaged over a second instead of
/// dominating a short window. Samples are kept at most every 1/100 of the window in a fixed
/// ring, so recording a step never allocates, whatever the step rate.
#[derive(Clone, Debug)]
pub struct RateMeter {
    window: f64,
    origin: Option<(Instant, f64)>,
    /// (wall seconds since the origin, simulated time), oldest first from `head`.
    samples: [(f64, f64); SAMPLES],
    head: usize,
    len: usize,
    last: (f64, f64),
}

impl Default for RateMeter {
    fn default() -> Self {
        RateMeter::new(ROLLING_WINDOW)
    }
}

impl RateMeter {
    /// A meter whose rolling factor spans `window` of wall time.
    pub fn new(window: Duration) -> RateMeter {
        RateMeter {
            window: window.as_secs_f64(),
            origin: None,
            samples: [(0.0, 0.0); SAMPLES],
            head: 0,
            len: 0,
            last: (0.0, 0.0),
        }
    }

    /// Start measuring: the system is at simulated `time` at wall time `now`.
    pub fn start(&mut self, now: Instant, time: f64) {
        self.origin = Some((now, time));
        self.head = 0;
        self.len = 1;
        self.samples[0] = (0.0, time);
        self.last = (0.0, time);
    }

    /// Whether [`RateMeter::start`] has been called.
    pub fn started(&self) -> bool {
        self.origin.is_some()
    }

    /// The system reached simulated `time` at wall time `now` (starts the meter if needed).
    pub fn record(&mut self, now: Instant, time: f64) {
        let Some((wall0, _)) = self.origin else {
            self.start(now, time);
            return;
        };
        let wall = now.saturating_duration_since(wall0).as_secs_f64();
        self.last = (wall, time);
        let newest = self.samples[(self.head + self.len - 1) % SAMPLES];
        if wall - newest.0 >= self.window / SAMPLES_PER_WINDOW {
            if self.len == SAMPLES {
                self.head = (self.head + 1) % SAMPLES;
                self.len -= 1;
            }
            self.samples[(self.head + self.len) % SAMPLES] = (wall, time);
            self.len += 1;
        }
        // Keep exactly one sample at or before the window's start: it is the rolling base.
        while self.len >= 2 && self.samples[(self.head + 1) % SAMPLES].0 <= wall - self.window {
            self.head = (self.head + 1) % SAMPLES;
            self.len -= 1;
        }
    }

    /// Simulated seconds since the start.
    pub fn simulated(&self) -> f64 {
        self.origin.map_or(0.0, |(_, t0)| self.last.1 - t0)
    }

    /// Wall seconds since the start (up to the last record).
    pub fn wall(&self) -> f64 {
        self.last.0
    }

    /// Simulated seconds per wall second since the start (NaN before any wall time passed).
    pub fn total(&self) -> f64 {
        ratio(self.simulated(), self.wall())
    }

    /// Simulated seconds per wall second over the last window of wall time (the total until a
    /// window has passed; NaN before any wall time passed).
    pub fn rolling(&self) -> f64 {
        if self.len == 0 {
            return f64::NAN;
        }
        let (wall, time) = self.samples[self.head];
        ratio(self.last.1 - time, self.last.0 - wall)
    }
}

fn ratio(simulated: f64, wall: f64) -> f64 {
    if wall > 0.0 {
        simulated / wall
    } else {
        f64::NAN
    }
}

/// How a paced run kept pace, readable from [`RealTime::report`] during and after the run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RealTimeReport {
    /// The factor asked for: 1 is real time, 2 twice as fast.
    pub target_factor: f64,
    /// Simulated seconds per wall second over the whole paced run.
    pub total_factor: f64,
    /// Simulated seconds per wall second over the last [`ROLLING_WINDOW`] of wall time.
    pub rolling_factor: f64,
    /// Accepted macro steps paced.
    pub steps: u64,
    /// Steps that finished later than their due wall time.
    pub overruns: u64,
    /// The latest any step finished after its due wall time [s] (0 without overruns).
    pub worst_lateness: f64,
    /// Simulated time paced [s].
    pub simulated_seconds: f64,
    /// Wall time from the initialised system to the last paced step [s].
    pub wall_seconds: f64,
}

/// Paces a run to the wall clock: after each accepted macro step to simulated time `t` it
/// sleeps until `start_wall + (t - start) / factor`. Put it before observers that measure
/// progress, so they see the paced time.
#[derive(Clone, Debug)]
pub struct RealTime {
    factor: f64,
    origin: Option<(Instant, f64)>,
    meter: RateMeter,
    report: RealTimeReport,
}

impl RealTime {
    /// Pacing at `factor` times real time; refuses a factor that is not a positive finite
    /// number.
    pub fn new(factor: f64) -> Result<RealTime> {
        check_factor(factor).map_err(Error::Usage)?;
        Ok(RealTime {
            factor,
            origin: None,
            meter: RateMeter::default(),
            report: RealTimeReport {
                target_factor: factor,
                ..RealTimeReport::default()
            },
        })
    }

    /// The factor runs are paced at.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The figures so far (final after the run).
    pub fn report(&self) -> RealTimeReport {
        self.report
    }

    fn anchor(&mut self, now: Instant, time: f64) {
        self.origin = Some((now, time));
        self.meter.start(now, time);
    }
}

/// `Ok` for a usable real-time factor, else why not.
pub fn check_factor(factor: f64) -> std::result::Result<(), String> {
    if factor.is_finite() && factor > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "the real-time factor must be a positive finite number (1 is real time, 2 twice as fast), not {factor}"
        ))
    }
}

/// Wait until `due`: sleep while more than [`SPIN`] is left, then spin.
fn wait_until(due: Instant) {
    let now = Instant::now();
    if due > now + SPIN {
        std::thread::sleep(due - now - SPIN);
    }
    while Instant::now() < due {
        std::hint::spin_loop();
    }
}

impl Observer for RealTime {
    fn started(&mut self, _columns: &[String]) -> Result<()> {
        self.origin = None;
        self.meter = RateMeter::default();
        self.report = RealTimeReport {
            target_factor: self.factor,
            ..RealTimeReport::default()
        };
        Ok(())
    }

    fn row(&mut self, row: &Row) -> Result<()> {
        if self.origin.is_none() {
            self.anchor(Instant::now(), row.time);
        }
        Ok(())
    }

    fn stepped(&mut self, time: f64) {
        let now = Instant::now();
        let Some((wall0, time0)) = self.origin else {
            // No row marked the start: pace from this step on.
            self.anchor(now, time);
            return;
        };
        self.report.steps += 1;
        // A due time beyond what a Duration holds (or before the start) is not paced.
        if let Some(due) = Duration::try_from_secs_f64((time - time0) / self.factor)
            .ok()
            .and_then(|d| wall0.checked_add(d))
        {
            if now > due {
                let late = (now - due).as_secs_f64();
                self.report.overruns += 1;
                self.report.worst_lateness = self.report.worst_lateness.max(late);
            } else {
                wait_until(due);
            }
        }
        self.meter.record(Instant::now(), time);
        self.report.total_factor = self.meter.total();
        self.report.rolling_factor = self.meter.rolling();
        self.report.simulated_seconds = self.meter.simulated();
        self.report.wall_seconds = self.meter.wall();
    }

    fn finished(&mut self, _stats: &RunStatistics) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_factors_that_are_not_positive_finite_numbers() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let e = RealTime::new(bad).expect_err("refused");
            assert!(e.to_string().contains("real-time factor"), "{e}");
        }
        assert!(RealTime::new(0.5).is_ok());
    }

    #[test]
    fn meter_rolls_over_its_window_and_totals_since_the_start() {
        let t0 = Instant::now();
        let mut meter = RateMeter::new(Duration::from_secs(1));
        meter.start(t0, 0.0);
        assert!(meter.total().is_nan());
        // 3 s of wall time: twice real time for 2 s, then real time.
        for ms in 1..=3000u64 {
            let wall = ms as f64 / 1000.0;
            let sim = if wall <= 2.0 { 2.0 * wall } else { wall + 2.0 };
            meter.record(t0 + Duration::from_millis(ms), sim);
        }
        assert!(
            (meter.total() - 5.0 / 3.0).abs() < 1e-9,
            "{}",
            meter.total()
        );
        assert!((meter.rolling() - 1.0).abs() < 0.02, "{}", meter.rolling());
        assert!((meter.wall() - 3.0).abs() < 1e-9);
        assert!((meter.simulated() - 5.0).abs() < 1e-9);
    }

    #[test]
    fn paces_steps_to_the_wall_clock_and_counts_overruns() {
        let mut pacing = RealTime::new(10.0).unwrap();
        let row = Row {
            time: 0.0,
            cells: Vec::new(),
        };
        pacing.started(&[]).unwrap();
        let begin = Instant::now();
        pacing.row(&row).unwrap();
        for k in 1..=10 {
            pacing.stepped(k as f64 * 0.01);
        }
        // 0.1 s simulated at 10x real time: 10 ms of wall time, not less (more on a loaded
        // machine).
        let wall = begin.elapsed().as_secs_f64();
        assert!((0.01..0.5).contains(&wall), "{wall}");
        let before = pacing.report().overruns;
        // A step that took 20 ms of the 1 ms it was given is late by about 19 ms.
        std::thread::sleep(Duration::from_millis(20));
        pacing.stepped(0.11);
        let report = pacing.report();
        assert_eq!(report.steps, 11);
        assert_eq!(report.overruns, before + 1);
        assert!(report.worst_lateness >= 0.018, "{report:?}");
        assert!((report.simulated_seconds - 0.11).abs() < 1e-12);
    }
}
