//! FMI 3 clocks of a model: their declaration ([`Clock`]), what a model sees and does when
//! clocks tick ([`Ticks`]), and the per-instance activation state.
//!
//! The kit's protocol in Co-Simulation Event Mode (FMI 3.0 §2.2.8, §4.2.5): the importer sets
//! the input clocks that tick (`fmi3SetClock`), then the clocked inputs; the model's clocked
//! partition ([`crate::Model::clock_tick`]) runs once, at the first getter, `fmi3GetClock` or
//! `fmi3UpdateDiscreteStates` after an input clock was set; output clocks it raised read as
//! active through `fmi3GetClock`; `fmi3UpdateDiscreteStates` ends the instant and deactivates
//! every clock. A clocked input may be set only in Event Mode while one of its clocks is active.

use crate::variable::Table;

/// `intervalVariability` of a clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalVariability {
    /// Periodic, interval fixed in the model description.
    Constant,
    /// Periodic, interval fixed after initialization (may be set in Initialization Mode).
    Fixed,
    /// Periodic, interval may be set in Event Mode.
    Tunable,
    /// Aperiodic, the FMU changes the interval (reported by `fmi3GetIntervalDecimal`).
    Changing,
    /// Aperiodic, the FMU schedules the next tick (reported by `fmi3GetIntervalDecimal`).
    Countdown,
    /// Ticks when raised (an output clock) or set by the importer (an input clock).
    Triggered,
}

impl IntervalVariability {
    /// The attribute value.
    pub fn xml(self) -> &'static str {
        match self {
            IntervalVariability::Constant => "constant",
            IntervalVariability::Fixed => "fixed",
            IntervalVariability::Tunable => "tunable",
            IntervalVariability::Changing => "changing",
            IntervalVariability::Countdown => "countdown",
            IntervalVariability::Triggered => "triggered",
        }
    }

    /// Periodic clocks (their interval is known from the model description or a set).
    pub fn is_periodic(self) -> bool {
        matches!(
            self,
            IntervalVariability::Constant
                | IntervalVariability::Fixed
                | IntervalVariability::Tunable
        )
    }
}

/// One FMI 3 `<Clock>` variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Clock {
    /// Value reference (distinct from every variable's).
    pub vr: u32,
    /// Name.
    pub name: String,
    /// An input clock (ticked by the importer) or an output clock (raised by the model).
    pub output: bool,
    /// `intervalVariability`.
    pub variability: IntervalVariability,
    /// `intervalDecimal` of a periodic clock; for a countdown or changing clock, the interval
    /// of its first tick after initialization (not in the model description: reported by
    /// `fmi3GetIntervalDecimal`).
    pub interval: Option<f64>,
    /// `shiftDecimal` (periodic clocks).
    pub shift: f64,
    /// Description.
    pub description: Option<String>,
    /// `priority` of an input clock (Scheduled Execution: the smaller, the more urgent).
    pub priority: Option<u32>,
}

impl Clock {
    fn new(vr: u32, name: &str, output: bool, variability: IntervalVariability) -> Clock {
        Clock {
            vr,
            name: name.to_owned(),
            output,
            variability,
            interval: None,
            shift: 0.0,
            description: None,
            priority: None,
        }
    }

    /// A periodic input clock of the given variability and interval (s).
    pub fn periodic(vr: u32, name: &str, variability: IntervalVariability, interval: f64) -> Clock {
        let mut c = Clock::new(vr, name, false, variability);
        c.interval = Some(interval);
        c
    }

    /// A countdown input clock whose first tick comes `first` s after initialization; the
    /// model schedules each next one ([`Ticks::schedule`]).
    pub fn countdown(vr: u32, name: &str, first: f64) -> Clock {
        let mut c = Clock::new(vr, name, false, IntervalVariability::Countdown);
        c.interval = Some(first);
        c
    }

    /// A countdown input clock that ticks only when the model schedules it
    /// ([`Ticks::schedule`]); `fmi3GetIntervalDecimal` says "not yet known" until then.
    pub fn scheduled_countdown(vr: u32, name: &str) -> Clock {
        Clock::new(vr, name, false, IntervalVariability::Countdown)
    }

    /// A triggered input clock (ticked by the importer, e.g. from another FMU's output clock).
    pub fn triggered_input(vr: u32, name: &str) -> Clock {
        Clock::new(vr, name, false, IntervalVariability::Triggered)
    }

    /// A triggered output clock (raised by the model, [`Ticks::raise`]).
    pub fn triggered_output(vr: u32, name: &str) -> Clock {
        Clock::new(vr, name, true, IntervalVariability::Triggered)
    }

    /// The shift of a periodic clock (s).
    pub fn shift(mut self, s: f64) -> Clock {
        self.shift = s;
        self
    }

    /// The `priority` of an input clock (Scheduled Execution: 0 is the most urgent).
    pub fn priority(mut self, p: u32) -> Clock {
        self.priority = Some(p);
        self
    }

    /// Description.
    pub fn description(mut self, d: &str) -> Clock {
        self.description = Some(d.to_owned());
        self
    }
}

/// Checks a model's clocks against its variable table: unique value references and names,
/// input clocks that are not triggered have an interval, clocked variables name clocks.
pub fn check_clocks(table: &Table, clocks: &[Clock]) -> Result<(), String> {
    for (k, c) in clocks.iter().enumerate() {
        let what = format!("clock '{}' (vr {})", c.name, c.vr);
        if table.index_of(c.vr).is_some() || clocks[..k].iter().any(|o| o.vr == c.vr) {
            return Err(format!("{what}: duplicate value reference"));
        }
        if table.vars.iter().any(|v| v.name == c.name)
            || clocks[..k].iter().any(|o| o.name == c.name)
        {
            return Err(format!("{what}: duplicate name"));
        }
        if c.output && c.variability != IntervalVariability::Triggered {
            return Err(format!("{what}: output clocks are triggered in the kit"));
        }
        // Countdown and changing clocks may wait for the model to schedule them.
        let needs_interval = !c.output && c.variability.is_periodic();
        if needs_interval && !c.interval.is_some_and(|i| i > 0.0) {
            return Err(format!("{what}: a time-based clock needs an interval > 0"));
        }
    }
    for v in &table.vars {
        for vr in &v.clocks {
            if !clocks.iter().any(|c| c.vr == *vr) {
                return Err(format!(
                    "variable '{}': clocks names vr {vr}, which is not a clock",
                    v.name
                ));
            }
        }
    }
    Ok(())
}

/// What a model sees and does in its clocked partition ([`crate::Model::clock_tick`]).
pub struct Ticks<'a> {
    pub(crate) state: &'a mut ClockState,
}

impl Ticks<'_> {
    /// Whether the clock `vr` is active in this instant.
    pub fn active(&self, vr: u32) -> bool {
        self.state.index(vr).is_some_and(|k| self.state.active[k])
    }

    /// Raise the output clock `vr` (the importer reads it active with `fmi3GetClock`).
    pub fn raise(&mut self, vr: u32) -> Result<(), String> {
        match self.state.index(vr) {
            Some(k) if self.state.clocks[k].output => {
                self.state.active[k] = true;
                self.state.updates += 1;
                Ok(())
            }
            _ => Err(format!("vr {vr} is not an output clock")),
        }
    }

    /// Scheduled Execution: ask the importer not to preempt this partition until
    /// [`Ticks::unlock_preemption`] (the FMU's `lockPreemption` callback; nothing otherwise).
    pub fn lock_preemption(&mut self) {
        if let Some((lock, _)) = self.state.preemption {
            // SAFETY: the importer's callback, given at instantiation.
            unsafe { lock() }
        }
    }

    /// Scheduled Execution: the end of what [`Ticks::lock_preemption`] protected.
    pub fn unlock_preemption(&mut self) {
        if let Some((_, unlock)) = self.state.preemption {
            // SAFETY: the importer's callback, given at instantiation.
            unsafe { unlock() }
        }
    }

    /// Schedule the next tick of the countdown or changing input clock `vr`, `interval` s
    /// from now (reported by the next `fmi3GetIntervalDecimal` as changed).
    pub fn schedule(&mut self, vr: u32, interval: f64) -> Result<(), String> {
        match self.state.index(vr) {
            Some(k)
                if matches!(
                    self.state.clocks[k].variability,
                    IntervalVariability::Countdown | IntervalVariability::Changing
                ) && interval > 0.0 =>
            {
                self.state.interval[k] = Some(interval);
                self.state.reported[k] = false;
                self.state.updates += 1;
                Ok(())
            }
            _ => Err(format!(
                "vr {vr} is not a countdown or changing clock, or the interval {interval} is not > 0"
            )),
        }
    }
}

/// The clocks of one instance and their activation.
#[derive(Clone, Debug)]
pub(crate) struct ClockState {
    pub clocks: Vec<Clock>,
    pub active: Vec<bool>,
    /// The interval `fmi3GetIntervalDecimal` reports (periodic: the declared or set one;
    /// countdown / changing: the last scheduled one).
    pub interval: Vec<Option<f64>>,
    /// Whether the interval was reported since it last changed.
    pub reported: Vec<bool>,
    /// An input clock was set since the clocked partition last ran.
    pub pending: bool,
    /// Scheduled Execution: the importer's `lockPreemption` and `unlockPreemption`.
    pub preemption: Option<(Preemption, Preemption)>,
    /// Output clocks raised and countdowns scheduled so far (Scheduled Execution: a change
    /// during an activation calls the importer's `clockUpdate`).
    pub updates: u64,
}

/// The FMI 3 `lockPreemption` / `unlockPreemption` callback type.
pub type Preemption = unsafe extern "C" fn();

impl ClockState {
    pub fn new(clocks: Vec<Clock>) -> ClockState {
        let n = clocks.len();
        ClockState {
            interval: clocks.iter().map(|c| c.interval).collect(),
            clocks,
            active: vec![false; n],
            reported: vec![false; n],
            pending: false,
            preemption: None,
            updates: 0,
        }
    }

    pub fn index(&self, vr: u32) -> Option<usize> {
        self.clocks.iter().position(|c| c.vr == vr)
    }

    /// Back to the state after instantiation.
    pub fn reset(&mut self) {
        let preemption = self.preemption;
        *self = ClockState::new(std::mem::take(&mut self.clocks));
        self.preemption = preemption;
    }

    /// The end of an Event Mode instant: every clock inactive.
    pub fn deactivate(&mut self) {
        self.active.iter_mut().for_each(|a| *a = false);
        self.pending = false;
    }

    /// Whether any of `vrs` is active.
    pub fn any_active(&self, vrs: &[u32]) -> bool {
        vrs.iter()
            .any(|&vr| self.index(vr).is_some_and(|k| self.active[k]))
    }
}
