//! ScheduledCounter: an FMI 3.0 Scheduled Execution FMU with three model partitions, each an
//! input clock that the importer activates (`fmi3ActivateModelPartition`):
//!
//! - `fast`: periodic, every 10 ms from the start, priority 1. It counts its activations
//!   (`counter`), adds the input `u` to `acc`, and raises the output clock `fifth` (reported
//!   through `clockUpdate`) when `counter` is a multiple of 5.
//! - `slow`: periodic, every 20 ms from the start, priority 2 (less urgent than `fast`). It
//!   counts its activations (`slow_count`) and copies `counter` into `y`: at the instants
//!   both partitions are due, `fast` runs first, so `y` includes that instant's tick. Every
//!   third activation it schedules the countdown clock `burst` 5 ms later (through
//!   `clockUpdate`).
//! - `burst`: countdown, priority 3; it counts its activations (`bursts`).
//! - `kick`: triggered, priority 0; ticked by the importer (a clock connection or an input
//!   file), it counts its activations (`kicks`).
//!
//! `slow` and `burst` share `total` (slow adds 1, burst adds 10) and change it between
//! `lockPreemption` and `unlockPreemption`. Every activation appends its partition's id
//! (fast 1, slow 2, burst 3, kick 4) to `trace = (5 trace + id) mod 2^30`.
//!
//! The trace from the start t0 = 0 (time order, then priority order):
//! - fast at t = 0.01 i (i = 0, 1, ...): after it, `counter` = i + 1;
//! - slow at t = 0.02 j (j = 0, 1, ...), after the fast tick at that time: `slow_count` =
//!   j + 1, `y` = 2 j + 1;
//! - burst at t = 0.02 j + 0.005 for j = 2, 5, 8, ... ((j + 1) mod 3 = 0);
//! - `total` = `slow_count` + 10 `bursts`; `fifth` ticks floor(`counter` / 5) times.
//!
//! FMI 2 has no Scheduled Execution: the FMI 2.0 archive has no clocks and never runs a
//! partition.

use fmu_kit::{Clock, Experiment, IntervalVariability, Model, Ticks, Values, Variable};

/// Input sampled by `fast`.
pub const U: u32 = 1;
/// Activations of `fast`.
pub const COUNTER: u32 = 2;
/// Sum of `u` over the activations of `fast`.
pub const ACC: u32 = 3;
/// Activations of `slow`.
pub const SLOW_COUNT: u32 = 4;
/// `counter` as `slow` last saw it.
pub const Y: u32 = 5;
/// Activations of `burst`.
pub const BURSTS: u32 = 6;
/// Shared by `slow` (+1) and `burst` (+10), changed under lockPreemption.
pub const TOTAL: u32 = 7;
/// The partitions' ids in activation order, base 5, mod 2^30.
pub const TRACE: u32 = 8;
/// Activations of `kick`.
pub const KICKS: u32 = 9;
/// The 10 ms partition.
pub const FAST: u32 = 10;
/// The 20 ms partition.
pub const SLOW: u32 = 11;
/// The countdown partition.
pub const BURST: u32 = 12;
/// Output clock raised by `fast` at every fifth count.
pub const FIFTH: u32 = 13;
/// The triggered partition.
pub const KICK: u32 = 14;
/// Interval of `fast` (s).
pub const FAST_INTERVAL: f64 = 0.01;
/// Interval of `slow` (s).
pub const SLOW_INTERVAL: f64 = 0.02;
/// Delay of `burst` after every third `slow` (s).
pub const BURST_DELAY: f64 = 0.005;
/// Priorities (the smaller, the more urgent).
pub const FAST_PRIORITY: u32 = 1;
pub const SLOW_PRIORITY: u32 = 2;
pub const BURST_PRIORITY: u32 = 3;
pub const KICK_PRIORITY: u32 = 0;
/// The modulus of `trace`.
pub const TRACE_MODULUS: i64 = 1 << 30;

/// `trace` after partition `id` ran.
pub fn next_trace(trace: i32, id: i32) -> i32 {
    ((i64::from(trace) * 5 + i64::from(id)) % TRACE_MODULUS) as i32
}

/// The model.
#[derive(Default)]
pub struct ScheduledCounter;

impl Model for ScheduledCounter {
    const NAME: &'static str = "ScheduledCounter";
    const DESCRIPTION: &'static str =
        "Two periodic model partitions of different priority and a countdown partition";
    const SCHEDULED_EXECUTION: bool = true;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 0.2,
        step: 0.01,
    };

    fn variables(&self) -> Vec<Variable> {
        let int = |vr, name: &str, clocks: &[u32]| {
            Variable::int32(vr, name)
                .output()
                .clocked_by(clocks)
                .start(0i32)
                .depends_on(&[])
        };
        vec![
            Variable::float64(U, "u")
                .input()
                .discrete()
                .start(0.0)
                .description("sampled by the fast partition"),
            int(COUNTER, "counter", &[FAST]),
            Variable::float64(ACC, "acc")
                .output()
                .clocked_by(&[FAST])
                .start(0.0)
                .depends_on(&[]),
            int(SLOW_COUNT, "slow_count", &[SLOW]),
            Variable::float64(Y, "y")
                .output()
                .clocked_by(&[SLOW])
                .start(0.0)
                .description("counter as the slow partition saw it")
                .depends_on(&[]),
            int(BURSTS, "bursts", &[BURST]),
            int(TOTAL, "total", &[SLOW, BURST]),
            int(TRACE, "trace", &[FAST, SLOW, BURST, KICK]),
            int(KICKS, "kicks", &[KICK]),
        ]
    }

    fn clocks(&self) -> Vec<Clock> {
        vec![
            Clock::periodic(FAST, "fast", IntervalVariability::Constant, FAST_INTERVAL)
                .priority(FAST_PRIORITY)
                .description("the 10 ms partition"),
            Clock::periodic(SLOW, "slow", IntervalVariability::Constant, SLOW_INTERVAL)
                .priority(SLOW_PRIORITY)
                .description("the 20 ms partition"),
            Clock::scheduled_countdown(BURST, "burst")
                .priority(BURST_PRIORITY)
                .description("5 ms after every third slow activation"),
            Clock::triggered_output(FIFTH, "fifth").description("every fifth fast activation"),
            Clock::triggered_input(KICK, "kick")
                .priority(KICK_PRIORITY)
                .description("ticked by the importer"),
        ]
    }

    fn evaluate(&self, _v: &mut Values, _time: f64) -> Result<(), String> {
        Ok(())
    }

    fn clock_tick(&self, v: &mut Values, _time: f64, ticks: &mut Ticks<'_>) -> Result<(), String> {
        if ticks.active(FAST) {
            let counter = v.i32(COUNTER).saturating_add(1);
            v.set_i32(COUNTER, counter);
            v.set_f64(ACC, v.f64(ACC) + v.f64(U));
            v.set_i32(TRACE, next_trace(v.i32(TRACE), 1));
            if counter % 5 == 0 {
                ticks.raise(FIFTH)?;
            }
        }
        if ticks.active(SLOW) {
            let slow = v.i32(SLOW_COUNT).saturating_add(1);
            v.set_i32(SLOW_COUNT, slow);
            v.set_f64(Y, f64::from(v.i32(COUNTER)));
            v.set_i32(TRACE, next_trace(v.i32(TRACE), 2));
            ticks.lock_preemption();
            v.set_i32(TOTAL, v.i32(TOTAL).saturating_add(1));
            ticks.unlock_preemption();
            if slow % 3 == 0 {
                ticks.schedule(BURST, BURST_DELAY)?;
            }
        }
        if ticks.active(KICK) {
            v.set_i32(KICKS, v.i32(KICKS).saturating_add(1));
            v.set_i32(TRACE, next_trace(v.i32(TRACE), 4));
        }
        if ticks.active(BURST) {
            v.set_i32(BURSTS, v.i32(BURSTS).saturating_add(1));
            v.set_i32(TRACE, next_trace(v.i32(TRACE), 3));
            ticks.lock_preemption();
            v.set_i32(TOTAL, v.i32(TOTAL).saturating_add(10));
            ticks.unlock_preemption();
        }
        Ok(())
    }
}

fmu_kit::export_fmu!(ScheduledCounter);
