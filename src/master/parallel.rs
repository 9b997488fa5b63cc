//! Whether `--parallel` pays, and which thread each component lives on.
//!
//! Threads pay only where the components' steps cost more than handing work between threads,
//! and an FMU instance cannot move between threads once created (DESIGN.md decision 4), so the
//! choice comes before the real instances, from trial runs whose instances are terminated and
//! freed and whose results are dropped. The first runs the system on the calling thread: after
//! a warm-up macro step, every component's share of the step tasks is timed for some macro
//! steps, then the macro steps alone for as many (each phase at most [`TRIAL_STEPS`] macro
//! steps, a 50th of the run's, or [`TRIAL_TIME`]; medians throughout, so that a preempted
//! step does not count). The components are split into contiguous runs of the coupling order
//! (so that the exchange crosses threads rarely) balanced by measured cost, for every thread
//! count up to the one asked for and the cores there are, and the time of a macro step is
//! predicted for each with the measured cost of a hand-over. Where the best is predicted at
//! least [`PAYS`] times faster than one thread, a second trial runs it on the threads, and the
//! run uses them if that trial's macro steps are at least [`CONFIRMED`] times faster than the
//! first's; otherwise it runs sequentially and says why in its statistics.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::exchange::Part;
use super::execution::{Execution, RunOptions};
use super::pool::{hand_over_cost, split, Layout, TrialClock};
use super::run::{run, Observer};
use crate::fmu::instance::InstanceOptions;
use crate::system::System;
use crate::Result;

/// Most macro steps of a trial's phase (after the warm-up step).
pub const TRIAL_STEPS: u64 = 25;
/// A trial's phase ends after this long, however few steps it took.
pub const TRIAL_TIME: Duration = Duration::from_millis(10);
/// How much faster than one thread a split must be predicted to be for a trial on threads.
pub const PAYS: f64 = 1.15;
/// How much faster than one thread the trial on threads must be for the run to use them (a
/// margin for what a short trial does not show, so that `--parallel` is never noticeably
/// slower than a sequential run).
pub const CONFIRMED: f64 = 1.1;

/// How a `--parallel` run was placed, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelPlacement {
    /// Threads the run was allowed (`--threads`, else one per core).
    pub threads_allowed: usize,
    /// Threads the components live on (1: the run was sequential).
    pub threads: usize,
    /// The components' measured work per macro step, all together (`None`: not measured).
    pub step_work: Option<Duration>,
    /// The measured cost of one hand-over between threads.
    pub hand_over: Option<Duration>,
    /// Predicted speed-up of the best split over one thread.
    pub predicted_speedup: Option<f64>,
    /// Speed-up of that split over one thread in the trial on threads.
    pub measured_speedup: Option<f64>,
    /// Why the run is sequential, where it is.
    pub sequential_because: Option<String>,
}

impl ParallelPlacement {
    /// One thread of `allowed`, nothing measured yet.
    fn sequential(allowed: usize) -> ParallelPlacement {
        ParallelPlacement {
            threads_allowed: allowed,
            threads: 1,
            step_work: None,
            hand_over: None,
            predicted_speedup: None,
            measured_speedup: None,
            sequential_because: None,
        }
    }
}

impl std::fmt::Display for ParallelPlacement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let micros = |d: Duration| d.as_secs_f64() * 1e6;
        let mut measured = match self.step_work {
            Some(work) => format!(
                "the components' steps take {:.2} µs per macro step together",
                micros(work)
            ),
            None => String::new(),
        };
        if let Some(hand_over) = self.hand_over {
            measured += &format!(", a hand-over between threads {:.2} µs", micros(hand_over));
        }
        match &self.sequential_because {
            Some(reason) => {
                write!(f, "--parallel ran sequentially: {reason}")?;
                if !measured.is_empty() {
                    write!(f, " ({measured})")?;
                }
                Ok(())
            }
            None => {
                write!(
                    f,
                    "--parallel: {} threads of {} allowed",
                    self.threads, self.threads_allowed
                )?;
                if let Some(speedup) = self.measured_speedup {
                    write!(f, ", {speedup:.2}x faster than one in a trial")?;
                } else if let Some(speedup) = self.predicted_speedup {
                    write!(f, ", predicted {speedup:.2}x faster than one")?;
                }
                if !measured.is_empty() {
                    write!(f, " ({measured})")?;
                }
                Ok(())
            }
        }
    }
}

impl Execution {
    /// Open every FMU once (one unpack and one library per file), resolve the system against
    /// the model descriptions, and instantiate every component: on the calling thread, or with
    /// `parallel` on the threads where the components' measured step costs make it pay (see
    /// the module documentation).
    pub fn instantiate(system: &System, options: &RunOptions) -> Result<Execution> {
        let fmus = Execution::open_fmus(system, options)?;
        let count = system.components.len();
        if !system.experiment.parallel {
            return Execution::instantiate_on(system, options, &fmus, &Layout::Caller);
        }
        let allowed = match options.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let sequential = |reason: &str| ParallelPlacement {
            sequential_because: Some(reason.to_string()),
            ..ParallelPlacement::sequential(allowed)
        };
        let (layout, placement) = if count < 2 {
            (
                Layout::Caller,
                sequential("one component has nothing to step beside it"),
            )
        } else if allowed < 2 {
            (
                Layout::Caller,
                sequential("one thread is allowed (--threads, or the cores there are)"),
            )
        } else if Execution::hosts_any(system, &fmus, options)? {
            (
                Layout::Caller,
                sequential("components in worker processes step side by side already"),
            )
        } else if options.threads > 0 {
            // The user chose the threads: split the coupling order evenly, no trial.
            let threads = allowed.min(count);
            let placement = ParallelPlacement {
                threads,
                ..ParallelPlacement::sequential(allowed)
            };
            (Layout::Spread { threads }, placement)
        } else {
            choose(system, options, &fmus, allowed)?
        };
        let mut execution = Execution::instantiate_on(system, options, &fmus, &layout)?;
        execution.parallel = Some(placement);
        Ok(execution)
    }
}

/// What the trial measured.
struct Trial {
    /// Each component's work in the step tasks per macro step (ns).
    costs: Vec<f64>,
    /// Wall time per macro step (ns), everything included.
    macro_step: f64,
    /// Result rows per macro step.
    rows_per_step: f64,
    /// Components in the order the coupling graph evaluates them.
    order: Vec<usize>,
    /// The exchange's parts as component indices (`None`: an algebraic loop).
    exchange: Vec<Option<usize>>,
}

/// Time the system in a trial and choose its layout.
fn choose(
    system: &System,
    options: &RunOptions,
    fmus: &[Arc<crate::fmu::Fmu>],
    allowed: usize,
) -> Result<(Layout, ParallelPlacement)> {
    let count = system.components.len();
    let mut placement = ParallelPlacement::sequential(allowed);
    let trial = match trial(system, options, fmus) {
        Ok(Some(trial)) => trial,
        Ok(None) => {
            placement.sequential_because =
                Some("the run has too few macro steps to time the components' steps".into());
            return Ok((Layout::Caller, placement));
        }
        Err(error) => {
            // After Fatal FMI allows no further call to any instance of that FMU in this
            // process, so the run itself cannot start: the trial's failure is the run's.
            if fmus
                .iter()
                .any(|fmu| fmu.library().is_ok_and(|library| library.fatal().is_some()))
            {
                log::warn!(
                    "--parallel: this failure happened while timing the components' steps, before the run; --threads N places the components without timing them"
                );
                return Err(error);
            }
            // The real run meets the same failure and reports it with its logs and rows.
            placement.sequential_because =
                Some(format!("timing the components' steps failed ({error})"));
            return Ok((Layout::Caller, placement));
        }
    };
    let work: f64 = trial.costs.iter().sum();
    placement.step_work = Some(Duration::from_nanos(work as u64));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let most = allowed.min(cores).min(count);
    let best = |hand_over: f64| best_split(&trial, most, hand_over);
    // Where free hand-overs would not pay either, timing them is not worth its time.
    let best = match best(0.0) {
        Some((predicted, ..)) if trial.macro_step / predicted < PAYS => best(0.0),
        _ => {
            let hand_over = hand_over_cost();
            placement.hand_over = Some(hand_over);
            best(hand_over.as_secs_f64() * 1e9)
        }
    };
    let Some((predicted, threads, thread_of)) = best else {
        placement.sequential_because = Some(format!(
            "{cores} core(s) and {allowed} thread(s) allowed leave no second thread"
        ));
        return Ok((Layout::Caller, placement));
    };
    let predicted = trial.macro_step / predicted;
    placement.predicted_speedup = Some(predicted);
    if predicted < PAYS {
        placement.sequential_because = Some(format!(
            "the components' steps are too short for threads to pay (predicted {predicted:.2}x)"
        ));
        return Ok((Layout::Caller, placement));
    }
    // The prediction leaves out what threads cost besides hand-overs (caches, memory, a busy
    // core): the split has to show its worth in a trial of its own.
    let layout = Layout::Threads { threads, thread_of };
    let measured = match trial_run(system, options, fmus, &layout, None) {
        Ok(Some((on_threads, _))) => trial.macro_step / on_threads.macro_step,
        Ok(None) | Err(_) => 0.0,
    };
    placement.measured_speedup = Some(measured);
    if measured < CONFIRMED {
        placement.sequential_because = Some(format!(
            "{threads} threads were {measured:.2}x as fast as one in a trial (predicted {predicted:.2}x)"
        ));
        return Ok((Layout::Caller, placement));
    }
    placement.threads = threads;
    Ok((layout, placement))
}

/// The split of `trial`'s components over 2 to `most` threads whose predicted macro step
/// (`predict`, with a hand-over costing `hand_over` ns) is shortest: its time, its threads
/// and each component's thread.
fn best_split(trial: &Trial, most: usize, hand_over: f64) -> Option<(f64, usize, Vec<usize>)> {
    let mut best: Option<(f64, usize, Vec<usize>)> = None;
    for threads in 2..=most {
        let thread_of = split(&trial.order, &trial.costs, threads);
        let predicted = predict(trial, &thread_of, threads, hand_over);
        if best.as_ref().is_none_or(|(time, ..)| predicted < *time) {
            best = Some((predicted, threads, thread_of));
        }
    }
    best
}

/// Under `mpirun`: the threads of this rank's own components (`owned`; the stand-ins of the
/// others stay on the calling thread), from the step costs the ranks measured together
/// (`costs`: per component, ns per macro step, or why there are none); `ranks_here` ranks
/// share this host's cores. `--threads N` spreads them evenly over N threads without costs.
/// Threads change no bits, so each rank chooses for itself, from the prediction alone: a
/// confirming trial on threads (as one process runs) would be one more run over every rank.
pub fn rank_layout(
    system: &System,
    options: &RunOptions,
    fmus: &[Arc<crate::fmu::Fmu>],
    (order, owned): (&[usize], &[bool]),
    costs: std::result::Result<&[f64], &str>,
    ranks_here: usize,
) -> Result<(Layout, ParallelPlacement)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cores = (cores / ranks_here.max(1)).max(1);
    let allowed = match options.threads {
        0 => cores,
        n => n,
    };
    let mut placement = ParallelPlacement::sequential(allowed);
    let mine: Vec<usize> = order.iter().copied().filter(|&i| owned[i]).collect();
    let why = if mine.len() < 2 {
        Some("this rank steps one component, which has nothing to step beside it".into())
    } else if allowed < 2 {
        Some(format!(
            "one thread is allowed (--threads, or the cores there are: {ranks_here} rank(s) share this host)"
        ))
    } else if Execution::hosts_any(system, fmus, options)? {
        Some("components in worker processes step side by side already".into())
    } else {
        None
    };
    if let Some(why) = why {
        placement.sequential_because = Some(why);
        return Ok((Layout::Caller, placement));
    }
    let own = |cost: &dyn Fn(usize) -> f64| -> Vec<f64> {
        (0..owned.len())
            .map(|i| if owned[i] { cost(i) } else { 0.0 })
            .collect()
    };
    if options.threads > 0 {
        // The user chose the threads: split this rank's coupling order evenly.
        let threads = allowed.min(mine.len());
        let thread_of = split(&mine, &own(&|_| 1.0), threads);
        placement.threads = threads;
        return Ok((Layout::Threads { threads, thread_of }, placement));
    }
    let costs = match costs {
        Ok(costs) if costs.len() == owned.len() => own(&|i| costs[i]),
        Ok(_) => {
            return Err(crate::Error::Internal(
                "step costs of another system".into(),
            ))
        }
        Err(why) => {
            placement.sequential_because = Some(why.to_string());
            return Ok((Layout::Caller, placement));
        }
    };
    let hand_over = hand_over_cost();
    let most = allowed.min(cores).min(mine.len());
    Ok(split_if_it_pays(placement, &mine, costs, most, hand_over))
}

/// This rank's components `mine` (in coupling order; `costs` per component, ns per macro
/// step, 0 for the others) on up to `most` threads where the busiest thread and the
/// hand-overs are predicted at least [`PAYS`] times faster than one thread, else on one.
fn split_if_it_pays(
    mut placement: ParallelPlacement,
    mine: &[usize],
    costs: Vec<f64>,
    most: usize,
    hand_over: Duration,
) -> (Layout, ParallelPlacement) {
    let work: f64 = costs.iter().sum();
    placement.step_work = Some(Duration::from_nanos(work as u64));
    placement.hand_over = Some(hand_over);
    let trial = Trial {
        costs,
        macro_step: work,
        rows_per_step: 0.0,
        order: mine.to_vec(),
        exchange: mine.iter().copied().map(Some).collect(),
    };
    let Some((predicted, threads, thread_of)) =
        best_split(&trial, most, hand_over.as_secs_f64() * 1e9)
    else {
        placement.sequential_because = Some(format!(
            "{most} core(s) for this rank leave no second thread"
        ));
        return (Layout::Caller, placement);
    };
    let predicted = work / predicted;
    placement.predicted_speedup = Some(predicted);
    if predicted < PAYS {
        placement.sequential_because = Some(format!(
            "this rank's components' steps are too short for threads to pay (predicted {predicted:.2}x)"
        ));
        return (Layout::Caller, placement);
    }
    placement.threads = threads;
    (Layout::Threads { threads, thread_of }, placement)
}

/// The predicted wall time of a macro step (ns) with component `i` on thread `thread_of[i]`:
/// the trial's macro step, less the step work, plus the busiest thread's share of it and a
/// hand-over for the step tasks, for every stretch of the exchange on a worker and for every
/// row read.
fn predict(trial: &Trial, thread_of: &[usize], threads: usize, hand_over: f64) -> f64 {
    let mut per_thread = vec![0.0; threads];
    for (i, &t) in thread_of.iter().enumerate() {
        per_thread[t] += trial.costs[i];
    }
    let busiest = per_thread.iter().copied().fold(0.0, f64::max);
    let work: f64 = trial.costs.iter().sum();
    // Exchange stretches handed to a worker, as the exchange plan groups them.
    let mut crossings = 0usize;
    let mut last = None;
    for part in &trial.exchange {
        let thread = part.map(|c| thread_of[c]);
        if thread != last {
            if thread.is_some_and(|t| t != 0) {
                crossings += 1;
            }
            last = thread;
        }
    }
    let hand_overs = 1.0 + crossings as f64 + trial.rows_per_step;
    trial.macro_step - work + busiest + hand_overs * hand_over
}

/// What a trial run measured.
struct Timing {
    /// Median wall time of a macro step (ns), not timed per component.
    macro_step: f64,
    /// Per component: the median time of its step tasks per macro step (ns), less the clock's
    /// own cost (empty without a clock).
    costs: Vec<f64>,
    /// Result rows per macro step.
    rows_per_step: f64,
}

/// The first trial, on the calling thread: `None` when the run has too few macro steps to
/// time one after warming up.
fn trial(
    system: &System,
    options: &RunOptions,
    fmus: &[Arc<crate::fmu::Fmu>],
) -> Result<Option<Trial>> {
    let clock = Arc::new(TrialClock::new(system.components.len()));
    let (timing, exec) = match trial_run(
        system,
        options,
        fmus,
        &Layout::Timed(clock.clone()),
        Some(clock),
    )? {
        Some(found) => found,
        None => return Ok(None),
    };
    let exchange = exec
        .exchange_plan
        .parts
        .iter()
        .map(|part| match part {
            Part::Component { component, .. } => Some(*component),
            Part::Loop(_) => None,
        })
        .collect();
    Ok(Some(Trial {
        costs: timing.costs,
        macro_step: timing.macro_step,
        rows_per_step: timing.rows_per_step,
        order: exec.graph.gauss_seidel_order.clone(),
        exchange,
    }))
}

/// Run the system where `layout` puts it for a warm-up macro step, then (with a `clock`) a
/// phase with every component's step tasks timed, then a phase of macro steps alone; `None`
/// when the run ends before a macro step of the last phase.
fn trial_run(
    system: &System,
    options: &RunOptions,
    fmus: &[Arc<crate::fmu::Fmu>],
    layout: &Layout,
    clock: Option<Arc<TrialClock>>,
) -> Result<Option<(Timing, Execution)>> {
    let count = system.components.len();
    // The trial's instances trace nothing and log only what FMUs always log.
    let quiet = RunOptions {
        instance: InstanceOptions {
            logging_on: false,
            log_fmi_calls: false,
            call_sink: None,
            log_sink: None,
            debug_categories: Vec::new(),
            ..options.instance.clone()
        },
        ..options.clone()
    };
    let mut exec = Execution::instantiate_on(system, &quiet, fmus, layout)?;
    let timing = if clock.is_some() { timer_cost() } else { 0.0 };
    // A short run gets a short trial: each phase times at most a 50th of its macro steps.
    let experiment = &system.experiment;
    let run_steps = ((experiment.stop - experiment.start) / experiment.step).max(0.0);
    let limit = TRIAL_STEPS.min((run_steps / 50.0) as u64).max(1);
    let mut observer = TrialObserver {
        limit,
        timed_phase: false,
        clock,
        phase_started: None,
        last: None,
        timed_steps: 0,
        seen: vec![0; count],
        per_step: vec![Vec::with_capacity(limit as usize); count],
        rows: 0,
        durations: Vec::with_capacity(limit as usize),
        done: false,
    };
    run(&mut exec, &mut [&mut observer])?;
    if observer.durations.is_empty() {
        return Ok(None);
    }
    let rows_per_step = observer.rows as f64 / observer.durations.len() as f64;
    let mut durations: Vec<f64> = observer
        .durations
        .iter()
        .map(|d| d.as_secs_f64() * 1e9)
        .collect();
    let found = Timing {
        macro_step: median(&mut durations),
        // Less the clock's own cost, paid once per step task and row read, not by the threads.
        costs: observer
            .per_step
            .iter_mut()
            .map(|d| (median(d) - timing * (1.0 + rows_per_step)).max(0.0))
            .collect(),
        rows_per_step,
    };
    Ok(Some((found, exec)))
}

/// What timing one task costs (ns): the median of reading the clock twice.
fn timer_cost() -> f64 {
    let mut samples: Vec<f64> = (0..101)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(Instant::now());
            start.elapsed().as_secs_f64() * 1e9
        })
        .collect();
    median(&mut samples)
}

/// The median of `values` (0 for none); sorts them.
fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Drives a trial's phases (see [`trial_run`]) and ends its run when they are done.
struct TrialObserver {
    /// Macro steps per phase.
    limit: u64,
    /// The components' clock runs (the first phase).
    timed_phase: bool,
    clock: Option<Arc<TrialClock>>,
    phase_started: Option<Instant>,
    /// The end of the last macro step.
    last: Option<Instant>,
    timed_steps: u64,
    /// Each component's clock at the end of the last timed macro step (ns).
    seen: Vec<u64>,
    /// Each component's time in every timed macro step (ns).
    per_step: Vec<Vec<f64>>,
    /// Rows delivered in the last phase.
    rows: u64,
    /// Wall time of every macro step of the last phase.
    durations: Vec<Duration>,
    done: bool,
}

impl TrialObserver {
    fn phase_over(&self, now: Instant, steps: u64) -> bool {
        steps >= self.limit || self.phase_started.is_some_and(|t| now - t >= TRIAL_TIME)
    }

    /// Note each component's time since the last reading (while the first phase runs).
    fn read_clock(&mut self) {
        let Some(clock) = &self.clock else { return };
        for (i, nanos) in clock.nanos.iter().enumerate() {
            let nanos = nanos.load(Ordering::Relaxed);
            if self.timed_phase {
                self.per_step[i].push(nanos.saturating_sub(self.seen[i]) as f64);
            }
            self.seen[i] = nanos;
        }
    }

    fn set_timing(&self, on: bool) {
        if let Some(clock) = &self.clock {
            clock.timing.store(on, Ordering::Relaxed);
        }
    }
}

impl Observer for TrialObserver {
    fn row(&mut self, _row: &super::record::Row) -> Result<()> {
        if self.phase_started.is_some() && !self.timed_phase {
            self.rows += 1;
        }
        Ok(())
    }

    fn stepped(&mut self, _time: f64) {
        let now = Instant::now();
        match self.last {
            // The warm-up step is over: the first phase starts (timed, with a clock).
            None => {
                self.read_clock();
                self.timed_phase = self.clock.is_some();
                self.set_timing(self.timed_phase);
                self.phase_started = Some(now);
            }
            Some(_) if self.timed_phase => {
                self.read_clock();
                self.timed_steps += 1;
                if self.phase_over(now, self.timed_steps) {
                    self.set_timing(false);
                    self.timed_phase = false;
                    self.phase_started = Some(now);
                }
            }
            Some(last) => {
                self.durations.push(now - last);
                self.done = self.phase_over(now, self.durations.len() as u64);
            }
        }
        self.last = Some(now);
    }

    fn stop_requested(&mut self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(costs: Vec<f64>, macro_step: f64, exchange: Vec<Option<usize>>) -> Trial {
        Trial {
            order: (0..costs.len()).collect(),
            costs,
            macro_step,
            rows_per_step: 0.0,
            exchange,
        }
    }

    #[test]
    fn a_rank_takes_threads_where_its_own_components_pay_for_them() {
        let mine = [1, 2, 3];
        // Component 0 is another rank's (cost 0); 1 ms steps, a hand-over of 10 µs.
        let costs = vec![0.0, 1e6, 1e6, 1e6];
        let hand_over = Duration::from_micros(10);
        let sequential = ParallelPlacement::sequential(2);
        let (layout, placed) = split_if_it_pays(sequential.clone(), &mine, costs, 2, hand_over);
        assert_eq!(placed.threads, 2);
        // 3 ms on one thread against 2 ms plus two hand-overs on the busier of two.
        let predicted = placed.predicted_speedup.expect("predicted");
        assert!((predicted - 3.0 / 2.02).abs() < 1e-9, "{predicted}");
        match layout {
            Layout::Threads { threads, thread_of } => {
                assert_eq!(threads, 2);
                assert_eq!(thread_of, vec![0, 0, 0, 1]);
            }
            other => panic!("{other:?}"),
        }
        // 10 µs steps do not pay for 10 µs hand-overs.
        let cheap = vec![0.0, 1e4, 1e4, 1e4];
        let (layout, placed) = split_if_it_pays(sequential.clone(), &mine, cheap, 2, hand_over);
        assert!(matches!(layout, Layout::Caller));
        assert_eq!(placed.threads, 1);
        assert!(placed.to_string().contains("too short"), "{placed}");
        // One core for the rank: nothing to split.
        let costs = vec![0.0, 1e6, 1e6, 1e6];
        let (layout, placed) = split_if_it_pays(sequential, &mine, costs, 1, hand_over);
        assert!(matches!(layout, Layout::Caller));
        assert!(placed.to_string().contains("1 core(s)"), "{placed}");
    }

    #[test]
    fn prediction_counts_the_busiest_thread_and_every_hand_over() {
        // Two components of 20 µs, 1 µs of exchange and loop; a hand-over of 0.5 µs.
        let t = trial(vec![20_000.0, 20_000.0], 41_000.0, vec![Some(0), Some(1)]);
        let predicted = predict(&t, &[0, 1], 2, 500.0);
        // 41 - 40 + 20 µs, plus the step's hand-over and the exchange's stretch on the worker.
        assert!((predicted - 22_000.0).abs() < 1e-6, "{predicted}");
        // Cheap components: the hand-overs outweigh what the threads share.
        let cheap = trial(vec![100.0, 100.0], 300.0, vec![Some(0), Some(1)]);
        assert!(cheap.macro_step / predict(&cheap, &[0, 1], 2, 500.0) < PAYS);
    }
}
