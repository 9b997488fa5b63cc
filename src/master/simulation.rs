//! THE steppable run: a simulation that is started, advanced to any time, asked and told values
//! by name between calls, saved and restored as a whole, and finished.
//!
//! Everything that drives a system drives this object: the batch run (`run.rs`: start, one
//! `advance_to(stop)`, finish), the Python session, real time and scenarios. The loop of
//! [`Simulation::advance_to`] is the only run loop: it owns the output grid, termination
//! requests, the time of a failure, statistics and the observers' calls. Observers are handed
//! in by the caller on every call (the simulation does not own its watchers), so a batch run
//! borrows them and a session keeps its own.
//!
//! `advance_to(t)` lands on `t` exactly, keeping the step controller's proposal and the
//! extrapolation history, so a run cut at communication points gives the bits of one uncut
//! run. A macro step that would pass `t` is taken whole with every FMU call recorded, replayed
//! up to `t` and on from there (`replay.rs`), and ends with the whole step's states, so the
//! run goes on with the bits of the uncut run also where `t` is inside a macro step. Where an
//! FMU cannot save its state, Jacobi takes the step in parts with the whole step's inputs and
//! the other algorithms shorten it.

use std::borrow::BorrowMut;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::algorithm::{self, MasterAlgorithm, Outcome};
use super::divergence;
use super::execution::Execution;
use super::record::{Cell, Row};
use super::replay::{Recorder, Replay};
use super::run::Observer;
use super::scenario::{AppliedEvent, ScenarioPlayer};
use super::{RunStatistics, TimeGrid};
use crate::fmu::description::{Causality, StartValue, Variability, Variable, VariableType};
use crate::fmu::values::{element_count, fit_value, get_value, set_value};
use crate::fmu::StateId;
use crate::{Error, Result};

/// Where a simulation is in its life.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Status {
    /// Between macro steps, ready to advance.
    Running,
    /// A macro step failed at this time; only a restore (or finish) may follow.
    Failed(f64),
    /// `finish` was called.
    Finished,
}

/// How an `advance_to` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advanced {
    /// The simulation is at the time asked for.
    Reached,
    /// The simulation ended before it: at the stop time, or an FMU or an observer asked to
    /// terminate. No further advance is possible.
    Ended,
}

/// A variable of a simulation's system, found once by name ([`Simulation::variable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariableId {
    component: usize,
    variable: usize,
}

/// A system in time, driven from outside. `E` is the execution it owns (`Execution`) or
/// borrows (`&mut Execution`, the batch run).
pub struct Simulation<E: BorrowMut<Execution> = Execution> {
    exec: E,
    algorithm: Box<dyn MasterAlgorithm + Send>,
    grid: TimeGrid,
    /// The next point of the output grid (a row is delivered on reaching it).
    next_output: f64,
    row: Row,
    columns: Vec<String>,
    stats: RunStatistics,
    started: Instant,
    status: Status,
    /// Tells snapshots apart from those of other simulations (their FMU states are ours).
    identity: u64,
    /// FMU states of snapshots dropped since the last call, to free.
    released: Arc<Mutex<Vec<Vec<StateId>>>>,
    /// Scenario events applied as the simulation passes their times.
    scenario: Option<ScenarioPlayer>,
    /// The macro step under way when an advance stopped inside it.
    within: Option<MacroStep>,
    /// The macro step under way, when it is replayed rather than stepped in parts.
    replay: Option<Replaying>,
}

/// A macro step taken whole and replayed in parts (`replay.rs`): each component's recorded
/// calls; the FMU states and the master's state at the step's end, taken back when the replay
/// reaches it (so the step ends with the bits of the step taken whole, also for FMUs whose
/// results depend on where their steps are cut); and the inputs set from outside on the way,
/// set again there.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Replaying {
    components: Vec<Replay>,
    master_at_end: Vec<u8>,
    /// Saved FMU states: a snapshot carries copies of them ([`Snapshot`]'s `end_states`).
    #[serde(skip)]
    end_states: Vec<StateId>,
    inputs_set: Vec<(usize, usize, StartValue)>,
}

/// A macro step taken in parts ([`Execution::step_part`]): where it starts and ends, and what
/// the whole step would have been on the output grid.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
struct MacroStep {
    start: f64,
    end: f64,
    on_grid: bool,
    to_output: bool,
}

/// A whole system saved: every FMU state and the master's own history. Restored with
/// [`Simulation::restore`]; its FMU states are freed when it is dropped (at the simulation's
/// next call).
pub struct Snapshot {
    identity: u64,
    time: f64,
    states: Vec<StateId>,
    /// Taken inside a replayed macro step: copies of the FMU states at the step's end.
    end_states: Vec<StateId>,
    master: Vec<u8>,
    released: Arc<Mutex<Vec<Vec<StateId>>>>,
}

impl Snapshot {
    /// The simulation time it was taken at.
    pub fn time(&self) -> f64 {
        self.time
    }
}

impl Snapshot {
    /// Its FMU states, to free now rather than when it is dropped.
    fn take_states(mut self) -> Vec<StateId> {
        std::mem::take(&mut self.states)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if let Ok(mut released) = self.released.lock() {
            for states in [&mut self.states, &mut self.end_states] {
                if !states.is_empty() {
                    released.push(std::mem::take(states));
                }
            }
        }
    }
}

/// The master's own state between macro steps (everything a restore needs besides the FMU
/// states), as it is serialised into a snapshot.
#[derive(serde::Serialize, serde::Deserialize)]
struct MasterState {
    time: f64,
    next_output: f64,
    steps: u64,
    rows: u64,
    end_time: f64,
    execution: super::execution::ExecutionState,
    algorithm: Vec<u8>,
    scenario: Option<super::scenario::ScenarioState>,
    within: Option<MacroStep>,
    replay: Option<Replaying>,
}

/// What a serialised snapshot starts with: a tag and a format version.
const SNAPSHOT_MAGIC: &[u8; 8] = b"cosimo\x00\x03";

impl<E: BorrowMut<Execution>> Simulation<E> {
    /// Start an instantiated system: the observers hear the columns, the algorithm resolves its
    /// names, every FMU is initialized and the first row (at the start time) is delivered.
    pub fn start<O: Observer>(exec: E, observers: &mut [O]) -> Result<Simulation<E>> {
        let mut exec = exec;
        let started = Instant::now();
        let execution: &mut Execution = exec.borrow_mut();
        let experiment = &execution.resolved.system.experiment;
        let grid = TimeGrid {
            start: experiment.start,
            stop: experiment.stop,
            step: experiment.step,
            output_interval: experiment.output_interval(),
        };
        let algorithm = algorithm::for_experiment(&experiment.algorithm);
        let columns = execution.column_names();
        let row = execution.new_row();
        let mut simulation = Simulation {
            exec,
            algorithm,
            grid,
            next_output: grid.next_point(grid.start, grid.output_interval),
            row,
            columns,
            stats: RunStatistics {
                end_time: grid.start,
                ..RunStatistics::default()
            },
            started,
            status: Status::Running,
            identity: next_identity(),
            released: Arc::default(),
            scenario: None,
            within: None,
            replay: None,
        };
        if let Err(error) = simulation.initialize(observers) {
            for observer in observers.iter_mut() {
                observer.failed(&error);
            }
            return Err(error);
        }
        Ok(simulation)
    }

    fn initialize<O: Observer>(&mut self, observers: &mut [O]) -> Result<()> {
        for observer in observers.iter_mut() {
            observer.started(&self.columns)?;
        }
        let start = self.grid.start;
        let exec = self.exec.borrow_mut();
        self.algorithm.prepare(exec).map_err(at(start))?;
        exec.initialize().map_err(at(start))?;
        self.algorithm.start(exec).map_err(at(start))?;
        self.deliver(observers).map_err(at(start))
    }

    /// Play a scenario (checked against the system by [`ScenarioPlayer::new`]) from the
    /// start; refused once the simulation has stepped.
    pub fn play(&mut self, player: ScenarioPlayer) -> Result<()> {
        if self.stats.steps > 0 || self.within.is_some() || self.scenario.is_some() {
            return Err(Error::Usage(
                "a scenario plays from the start of a simulation: give it before the first step"
                    .into(),
            ));
        }
        self.scenario = Some(player);
        Ok(())
    }

    /// The scenario events that took effect so far.
    pub fn scenario_events(&self) -> &[AppliedEvent] {
        self.scenario.as_ref().map_or(&[], ScenarioPlayer::applied)
    }

    /// The current simulation time.
    pub fn time(&self) -> f64 {
        self.exec.borrow().time
    }

    /// Start, stop, step and output interval.
    pub fn grid(&self) -> TimeGrid {
        self.grid
    }

    /// The names of the result columns (after the time).
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The execution (its system, slaves and coupling values).
    pub fn execution(&self) -> &Execution {
        self.exec.borrow()
    }

    /// The figures of the run so far.
    pub fn statistics(&self) -> &RunStatistics {
        &self.stats
    }

    /// Whether no further advance is possible: the stop time is reached, or an FMU or an
    /// observer asked to terminate.
    pub fn ended(&self) -> bool {
        let exec = self.exec.borrow();
        self.grid.at_stop(exec.time) || terminate_requested(exec)
    }

    /// Advance to time `target` (at most the stop time), macro step by macro step, landing on
    /// it exactly; rows at output points go to the observers on the way. A failure is reported
    /// with its time (every row before it delivered); the simulation then takes only a
    /// restore or `finish`.
    pub fn advance_to<O: Observer>(
        &mut self,
        target: f64,
        observers: &mut [O],
    ) -> Result<Advanced> {
        self.check_target(target)?;
        self.release_dropped();
        self.advance(target.min(self.grid.stop), u64::MAX, observers)
    }

    /// Advance by one macro step, as the algorithm proposes it (shortened to land on the
    /// output grid and the stop time, as in a batch run).
    pub fn step<O: Observer>(&mut self, observers: &mut [O]) -> Result<Advanced> {
        self.check_running()?;
        self.release_dropped();
        let stop = self.grid.stop;
        self.advance(stop, 1, observers)
    }

    fn check_running(&self) -> Result<()> {
        match self.status {
            Status::Running => Ok(()),
            Status::Failed(time) => Err(Error::Usage(format!(
                "the simulation failed at t = {}: restore a snapshot taken before, or finish it",
                crate::numbers::number(time)
            ))),
            Status::Finished => Err(Error::Usage("the simulation is finished".into())),
        }
    }

    fn check_target(&self, target: f64) -> Result<()> {
        self.check_running()?;
        let now = self.time();
        if target.is_nan() {
            return Err(Error::Usage(format!(
                "cannot advance to t = NaN (the simulation is at t = {})",
                crate::numbers::number(now)
            )));
        }
        if target < now - self.grid.tolerance(now) {
            return Err(Error::Usage(format!(
                "cannot advance to t = {}: it is before the current time t = {} (restore a snapshot to go back)",
                crate::numbers::number(target),
                crate::numbers::number(now)
            )));
        }
        if target > self.grid.stop + self.grid.tolerance(self.grid.stop) {
            return Err(Error::Usage(format!(
                "cannot advance to t = {}: it is after the stop time {} (set a later stop time)",
                crate::numbers::number(target),
                crate::numbers::seconds(self.grid.stop)
            )));
        }
        Ok(())
    }

    fn advance<O: Observer>(
        &mut self,
        target: f64,
        max_steps: u64,
        observers: &mut [O],
    ) -> Result<Advanced> {
        let result = self.advance_observed(target, max_steps, observers);
        if let Err(error) = &result {
            self.status = Status::Failed(self.time());
            for observer in observers.iter_mut() {
                observer.failed(error);
            }
        }
        result
    }

    /// THE loop.
    fn advance_observed<O: Observer>(
        &mut self,
        target: f64,
        max_steps: u64,
        observers: &mut [O],
    ) -> Result<Advanced> {
        let grid = self.grid;
        let mut taken = 0;
        loop {
            let exec = self.exec.borrow_mut();
            if grid.at_stop(exec.time) || terminate_requested(exec) {
                return Ok(Advanced::Ended);
            }
            if taken >= max_steps || reached(&grid, exec.time, target) {
                return Ok(Advanced::Reached);
            }
            let t = exec.time;
            let (on_grid, to_output) = if let Some(part) = self.within {
                // Inside a macro step: the next part, up to the target or the step's end.
                let to = if passes(&grid, t, part.end - t, target) {
                    target
                } else {
                    part.end
                };
                if self.replay.is_some() {
                    self.replay_to(to).map_err(at(t))?;
                } else {
                    exec.step_part((part.start, part.end), to).map_err(at(t))?;
                }
                if to != part.end {
                    continue;
                }
                self.within = None;
                if self.replay.is_some() {
                    self.end_replay().map_err(at(t))?;
                }
                (part.on_grid, part.to_output)
            } else {
                if let Some(player) = &mut self.scenario {
                    player
                        .apply_due(exec, t, grid.tolerance(t))
                        .map_err(at(t))?;
                }
                let proposed = self.algorithm.proposed_step(exec, &grid);
                let (mut h, mut on_grid) = grid.step_from(t, proposed, self.next_output);
                // Land on the next clock tick (only systems with FMI 3 clocks have one).
                let tick = exec
                    .next_clock_tick()
                    .filter(|&tick| tick < t + h - grid.tolerance(tick));
                if let Some(tick) = tick.filter(|&tick| tick > t) {
                    (h, on_grid) = (tick - t, false);
                }
                // Shortened to land on an output point (not on the stop time, not on a target).
                let mut to_output =
                    on_grid && h < proposed - grid.tolerance(t + h) && !grid.at_stop(t + h);
                if passes(&grid, t, h, target) {
                    // The macro step stays as the run without the target takes it; its first
                    // part ends at the target.
                    let whole = MacroStep {
                        start: t,
                        end: t + h,
                        on_grid,
                        to_output,
                    };
                    if self.replays_steps() {
                        if self.take_for_replay(h)? == Outcome::Accepted {
                            self.within = Some(whole);
                        }
                        continue;
                    }
                    if self.scenario.is_none() && self.algorithm.steps_in_parts(self.exec.borrow())
                    {
                        self.within = Some(whole);
                        continue;
                    }
                    if self.algorithm.may_reject() && self.rejects_on_the_way(h)? {
                        continue;
                    }
                    (h, on_grid) = grid.step_from(t, target - t, self.next_output);
                    to_output = false;
                }
                let exec = self.exec.borrow_mut();
                if self.algorithm.attempt(exec, h).map_err(at(t))? == Outcome::Rejected {
                    continue;
                }
                (on_grid, to_output)
            };
            let exec = self.exec.borrow_mut();
            exec.tick_clocks().map_err(at(exec.time))?;
            taken += 1;
            self.stats.steps += 1;
            self.stats.shortened_for_output += u64::from(to_output);
            self.stats.end_time = exec.time;
            if let Some(limit) = exec.resolved.system.experiment.divergence_limit {
                divergence::check_coupling_values(exec, limit)
                    .and_then(|()| self.algorithm.check_divergence(limit))
                    .map_err(at(exec.time))?;
            }
            if on_grid || terminate_requested(exec) {
                let time = exec.time;
                self.deliver(observers).map_err(at(time))?;
                self.next_output = grid.next_point(time, grid.output_interval);
            }
            let exec = self.exec.borrow_mut();
            let mut stop = false;
            for observer in observers.iter_mut() {
                observer.stepped(exec.time);
                stop |= observer.stop_requested();
            }
            if stop {
                exec.terminate_requested.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Before a step controller's step is shortened to land on a target: try the step it
    /// proposes, as a batch run would. A rejection is kept (the batch run makes it too, and
    /// the controller proposes again); an acceptance is undone, the simulation restored to
    /// where it was, and `false` says to land. So a run cut where the batch run has a
    /// communication point takes the batch run's steps.
    fn rejects_on_the_way(&mut self, h: f64) -> Result<bool> {
        let time = self.time();
        let snapshot = self.save().map_err(at(time))?;
        let exec = self.exec.borrow_mut();
        let outcome = self.algorithm.attempt(exec, h).map_err(at(time));
        let result = match outcome {
            Ok(Outcome::Rejected) => Ok(true),
            Ok(Outcome::Accepted) => self
                .restore(&snapshot, &mut [] as &mut [&mut dyn Observer])
                .map(|()| false)
                .map_err(at(time)),
            Err(error) => Err(error),
        };
        let states = snapshot.take_states();
        free_states(self.exec.borrow_mut(), &states);
        result
    }

    /// Whether a macro step that passes a target is taken whole and replayed in parts
    /// (`replay.rs`) rather than shortened: where the algorithm does not step in parts itself
    /// and every FMU state can be saved. Systems with clocks, scenarios or MPI ranks are
    /// shortened (their ticks, events and messages are not part of a replay).
    fn replays_steps(&mut self) -> bool {
        let exec = self.exec.borrow_mut();
        self.scenario.is_none()
            && exec.clocks.is_none()
            && exec.ranks.is_none()
            && (0..exec.resolved.components.len()).all(|i| exec.can_save_state(i))
    }

    /// Take the macro step `h` whole with every slave's calls recorded, as a run without the
    /// target would (a rejection is kept, as [`Simulation::rejects_on_the_way`] keeps it); then
    /// back to the FMU states at its start, ready to replay it part by part.
    fn take_for_replay(&mut self, h: f64) -> Result<Outcome> {
        let time = self.time();
        let start = self.save().map_err(at(time))?;
        let taken = self.take_recorded(h).map_err(at(time));
        let result = match taken {
            Ok(Some(components)) => self
                .save_fmu_states()
                .and_then(|end_states| {
                    let mut replaying = Replaying {
                        components,
                        master_at_end: Vec::new(),
                        end_states,
                        inputs_set: Vec::new(),
                    };
                    let back = self.master_bytes().and_then(|master| {
                        replaying.master_at_end = master;
                        self.restore(&start, &mut [] as &mut [&mut dyn Observer])
                    });
                    if let Err(error) = back {
                        free_states(self.exec.borrow_mut(), &replaying.end_states);
                        return Err(error);
                    }
                    self.replay = Some(replaying);
                    Ok(Outcome::Accepted)
                })
                .map_err(at(time)),
            Ok(None) => Ok(Outcome::Rejected),
            Err(error) => Err(error),
        };
        let states = start.take_states();
        free_states(self.exec.borrow_mut(), &states);
        result
    }

    /// The algorithm's attempt at the macro step `h` with every slave's calls recorded: the
    /// replays, or `None` when the step was rejected.
    fn take_recorded(&mut self, h: f64) -> Result<Option<Vec<Replay>>> {
        let exec = self.exec.borrow_mut();
        let n = exec.resolved.components.len();
        for i in 0..n {
            exec.placement.run_one(i, |unit| {
                Recorder::of(&mut unit.slave)?.start();
                Ok(())
            })?;
        }
        let outcome = self.algorithm.attempt(exec, h);
        let mut replays = Vec::with_capacity(n);
        for i in 0..n {
            let name = exec.component_name(i).to_string();
            let entries = exec
                .placement
                .run_one(i, |unit| Ok(Recorder::of(&mut unit.slave)?.stop()))?;
            replays.push((name, entries));
        }
        if outcome? == Outcome::Rejected {
            return Ok(None);
        }
        replays
            .into_iter()
            .map(|(name, entries)| Replay::new(&name, entries))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// The next part of the replayed macro step: every component to `to`.
    fn replay_to(&mut self, to: f64) -> Result<()> {
        let eps = self.grid.tolerance(to);
        let exec = self.exec.borrow_mut();
        let Some(replaying) = &mut self.replay else {
            return Ok(());
        };
        for (i, replay) in replaying.components.iter_mut().enumerate() {
            exec.placement.run_one(i, |unit| {
                let recorder = Recorder::of(&mut unit.slave)?;
                replay.run_to(recorder.inner(), to, eps)
            })?;
        }
        exec.time = to;
        Ok(())
    }

    /// The replayed macro step is over: the FMUs and the master take back their states of the
    /// whole step, and the inputs set from outside on the way are set again and pass on their
    /// values (for the steps to come, as between macro steps).
    fn end_replay(&mut self) -> Result<()> {
        let Some(replaying) = self.replay.take() else {
            return Ok(());
        };
        // The master's state of the step's end first: the row's inputs are set from its
        // coupling values, for the replayed row as for the whole step's.
        let master = postcard::from_bytes::<MasterState>(&replaying.master_at_end)
            .map_err(|e| Error::Internal(format!("reading the master's state: {e}")));
        let restored = master
            .and_then(|master| self.restore_master(master, &mut [] as &mut [&mut dyn Observer]));
        let exec = self.exec.borrow_mut();
        let mut replayed = self.row.clone();
        let restored = restored
            .and_then(|()| exec.read_row(&mut replayed))
            .and_then(|()| restore_fmu_states(exec, &replaying.end_states));
        free_states(exec, &replaying.end_states);
        restored?;
        exec.read_row(&mut self.row)?;
        self.stats.replayed_steps += 1;
        self.stats.replay_deviation = self
            .stats
            .replay_deviation
            .max(largest_deviation(&replayed, &self.row));
        for (component, variable, value) in replaying.inputs_set {
            let exec = self.exec.borrow_mut();
            let variable_info =
                exec.resolved.components[component].description.variables[variable].clone();
            exec.placement.run_one(component, move |unit| {
                set_value(unit.slave.as_mut(), &variable_info, &value)
            })?;
            exec.refresh_after_input(component, variable)?;
        }
        Ok(())
    }

    /// Save every FMU's state (freed again if one fails).
    fn save_fmu_states(&mut self) -> Result<Vec<StateId>> {
        let exec = self.exec.borrow_mut();
        let mut states = Vec::with_capacity(exec.resolved.components.len());
        for i in 0..exec.resolved.components.len() {
            match exec.placement.run_one(i, |unit| unit.slave.save_state()) {
                Ok(id) => states.push(id),
                Err(error) => {
                    free_states(exec, &states);
                    return Err(error);
                }
            }
        }
        Ok(states)
    }

    /// Copies of the FMU states at the end of the replayed step, for a snapshot taken inside
    /// it (`current`: the states just saved, taken back after each copy).
    fn copy_end_states(&mut self, current: &[StateId]) -> Result<Vec<StateId>> {
        let Some(replaying) = &self.replay else {
            return Ok(Vec::new());
        };
        copy_states(self.exec.borrow_mut(), &replaying.end_states, current)
    }

    /// Read the row at the current time and hand it to every observer (a NaN or infinite value
    /// ends the run first, unless the run allows them).
    fn deliver<O: Observer>(&mut self, observers: &mut [O]) -> Result<()> {
        let exec = self.exec.borrow_mut();
        exec.read_row(&mut self.row)?;
        if !exec.allow_non_finite {
            check_finite(&self.row, &self.columns)?;
        }
        if let Some(limit) = exec.resolved.system.experiment.divergence_limit {
            divergence::check_row(&self.row, &self.columns, limit)?;
        }
        for observer in observers.iter_mut() {
            observer.row(&self.row)?;
        }
        self.stats.rows += 1;
        Ok(())
    }

    /// Terminate every FMU and report the run's figures to the observers. A failed
    /// simulation is finished without telling the observers again.
    pub fn finish<O: Observer>(&mut self, observers: &mut [O]) -> Result<RunStatistics> {
        if self.status == Status::Finished {
            return Err(Error::Usage("the simulation is finished already".into()));
        }
        let failed = matches!(self.status, Status::Failed(_));
        self.status = Status::Finished;
        self.release_dropped();
        self.drop_replay();
        let grid = self.grid;
        let exec = self.exec.borrow_mut();
        let time = exec.time;
        let result = (|| {
            self.stats.terminated_early = terminate_requested(exec) && !grid.at_stop(time);
            exec.terminate().map_err(at(time))?;
            let stats = &mut self.stats;
            stats.fmi_calls = exec.fmi_calls();
            stats.integrator = exec.integrator_statistics();
            stats.parallel = exec.parallel.clone();
            stats.corrector_iterations = exec.corrector_iterations;
            stats.events = exec.sum_over_ranks(exec.events.load(Ordering::Relaxed));
            stats.early_returns = exec.sum_over_ranks(exec.early_returns.load(Ordering::Relaxed));
            self.algorithm.finish(stats);
            if let Some(player) = &self.scenario {
                stats.scenario = player.applied().to_vec();
            }
            stats.wall_seconds = self.started.elapsed().as_secs_f64();
            if let Some(ranks) = &exec.ranks {
                stats.ranks = ranks.times(self.started.elapsed());
                stats.component_seconds = ranks.component_seconds();
            }
            if !failed {
                for observer in observers.iter_mut() {
                    observer.finished(stats)?;
                }
            }
            Ok(stats.clone())
        })();
        if let Err(error) = &result {
            if !failed {
                for observer in observers.iter_mut() {
                    observer.failed(error);
                }
            }
        }
        result
    }

    /// The execution back, e.g. to run it again after a reset.
    pub fn into_execution(self) -> E {
        self.exec
    }

    /// The current value of a variable named as in results (`component.variable`, or the
    /// variable alone when one FMU runs alone); arrays with all their elements.
    pub fn get(&mut self, name: &str) -> Result<StartValue> {
        self.check_not_finished()?;
        let id = self.variable(name)?;
        self.get_variable(id)
    }

    /// A variable found by its name as in results, for [`get_variable`](Self::get_variable):
    /// a caller that reads the same variables at every step (an exported FMU's getters) looks
    /// each up once.
    pub fn variable(&self, name: &str) -> Result<VariableId> {
        let (component, variable) = self.find(name)?;
        Ok(VariableId {
            component,
            variable,
        })
    }

    /// [`get`](Self::get) of a variable found before with [`variable`](Self::variable).
    pub fn get_variable(&mut self, id: VariableId) -> Result<StartValue> {
        self.check_not_finished()?;
        let exec = self.exec.borrow_mut();
        let description = exec
            .resolved
            .components
            .get(id.component)
            .map(|c| Arc::clone(&c.description))
            .filter(|d| id.variable < d.variables.len())
            .ok_or_else(|| Error::Usage(format!("{id:?} is not a variable of this system")))?;
        let count = element_count(&description, &description.variables[id.variable])?;
        exec.settle_inputs(id.component)?;
        exec.placement.run_one(id.component, move |unit| {
            get_value(
                unit.slave.as_mut(),
                &description.variables[id.variable],
                count,
            )
        })
    }

    /// [`get_variable`](Self::get_variable) of a Float64 variable into `out` (all its
    /// elements), without allocating: the getter an exported FMU's importer calls at every
    /// step. A variable of another type or another size is refused.
    pub fn get_float64(&mut self, id: VariableId, out: &mut [f64]) -> Result<()> {
        self.check_not_finished()?;
        let exec = self.exec.borrow_mut();
        let vrs = {
            let description = &exec
                .resolved
                .components
                .get(id.component)
                .filter(|c| id.variable < c.description.variables.len())
                .ok_or_else(|| Error::Usage(format!("{id:?} is not a variable of this system")))?
                .description;
            let variable = &description.variables[id.variable];
            if variable.var_type != VariableType::Float64 {
                return Err(Error::Usage(format!(
                    "{} is a {:?} variable, not Float64",
                    variable.name, variable.var_type
                )));
            }
            let count = element_count(description, variable)?;
            if count != out.len() {
                return Err(Error::Usage(format!(
                    "{} has {count} elements, not {}",
                    variable.name,
                    out.len()
                )));
            }
            [variable.value_reference]
        };
        exec.settle_inputs(id.component)?;
        exec.placement
            .run_one(id.component, move |unit| unit.slave.get_float64(&vrs, out))
    }

    /// Set an input or a tunable parameter between macro steps (it takes effect in the next
    /// step). Inputs driven by a connection or an input file, outputs, and parameters that
    /// are not tunable are refused, naming the variable.
    pub fn set(&mut self, name: &str, value: &StartValue) -> Result<()> {
        self.check_running()?;
        let (component, index) = self.find(name)?;
        let exec = self.exec.borrow_mut();
        let description = exec.resolved.components[component].description.clone();
        let variable = &description.variables[index];
        if let Some(c) = exec
            .resolved
            .connections
            .iter()
            // An array connected element by element: its elements' connections.
            .position(|c| {
                c.to_component == component
                    && exec.resolved.components[component].declared_variable(c.to_variable) == index
            })
        {
            let (from, to) = exec.connection_names(c);
            return Err(Error::Usage(format!(
                "{name} is driven by the connection {from} -> {to}: set {from} instead, or override it with a scenario"
            )));
        }
        if exec.table_inputs[component].drives(variable.value_reference) {
            return Err(Error::Usage(format!(
                "{name} is driven by the input file: drop its column to set it here"
            )));
        }
        settable(name, variable)?;
        let count = element_count(&description, variable)?;
        let value =
            fit_value(variable, value, count).map_err(|e| Error::Usage(format!("{name}: {e}")))?;
        let input = variable.causality == Causality::Input;
        let variable = variable.clone();
        let kept = self.replay.is_some().then(|| value.clone());
        exec.placement.run_one(component, move |unit| {
            set_value(unit.slave.as_mut(), &variable, &value)
        })?;
        if let (Some(replaying), Some(value)) = (&mut self.replay, kept) {
            // Inside a replayed step the value holds for the rest of the replay; the FMU
            // states of the step's end are taken back at its end, and the value set again.
            replaying.inputs_set.push((component, index, value));
        } else if input {
            exec.refresh_after_input(component, index)?;
        }
        Ok(())
    }

    fn check_not_finished(&self) -> Result<()> {
        if self.status == Status::Finished {
            return Err(Error::Usage("the simulation is finished".into()));
        }
        Ok(())
    }

    /// Component and variable index of a name as results name it.
    fn find(&self, name: &str) -> Result<(usize, usize)> {
        let exec = self.exec.borrow();
        exec.find_variable(name)
    }

    /// Save the whole system: every FMU's state and the master's history (extrapolation
    /// points, step controller, corrector, pending output point). Refused, naming the
    /// component, where an FMU cannot get and set its state.
    pub fn save(&mut self) -> Result<Snapshot> {
        self.check_running()?;
        self.release_dropped();
        let exec = self.exec.borrow_mut();
        if exec.clocks.is_some() {
            return Err(Error::Usage(
                "this system has FMI 3 clocks, whose ticks to come are not part of a snapshot yet, so it cannot be saved".into(),
            ));
        }
        if let Some(i) = (0..exec.resolved.components.len()).find(|&i| !exec.can_save_state(i)) {
            return Err(Error::Usage(format!(
                "component \"{}\" ({}) cannot get and set its FMU state (canGetAndSetFMUstate is not true), so the system cannot be saved",
                exec.component_name(i),
                exec.resolved.system.components[i].fmu.display()
            )));
        }
        let states = self.save_fmu_states()?;
        let taken = self
            .copy_end_states(&states)
            .and_then(|end_states| Ok((end_states, self.master_bytes()?)));
        let (end_states, master) = match taken {
            Ok(taken) => taken,
            Err(error) => {
                free_states(self.exec.borrow_mut(), &states);
                return Err(error);
            }
        };
        Ok(Snapshot {
            identity: self.identity,
            time: self.time(),
            states,
            end_states,
            master,
            released: self.released.clone(),
        })
    }

    /// The master's own state, serialised.
    fn master_bytes(&mut self) -> Result<Vec<u8>> {
        let exec = self.exec.borrow();
        let master = MasterState {
            time: exec.time,
            next_output: self.next_output,
            steps: self.stats.steps,
            rows: self.stats.rows,
            end_time: self.stats.end_time,
            execution: exec.save_master_state(),
            algorithm: self.algorithm.save()?,
            scenario: self.scenario.as_ref().map(ScenarioPlayer::save),
            within: self.within,
            replay: self.replay.clone(),
        };
        postcard::to_allocvec(&master)
            .map_err(|e| Error::Internal(format!("saving the master's state: {e}")))
    }

    /// Back to `snapshot`, taken of this simulation; the observers hear how many rows are
    /// kept. Also after a failed step, where the FMUs allow it (FMI: a state set after an
    /// `Error` status restarts from it).
    pub fn restore<O: Observer>(&mut self, snapshot: &Snapshot, observers: &mut [O]) -> Result<()> {
        if snapshot.identity != self.identity {
            return Err(Error::Usage(
                "the snapshot was taken of another simulation: restore it there, or use to_bytes / from_bytes for a simulation of the same system".into(),
            ));
        }
        self.check_not_finished()?;
        let master: MasterState = postcard::from_bytes(&snapshot.master)
            .map_err(|e| Error::Internal(format!("reading a snapshot's master state: {e}")))?;
        self.drop_replay();
        let exec = self.exec.borrow_mut();
        // The snapshot keeps its copies: the replay gets copies of its own.
        let end_states = copy_states(exec, &snapshot.end_states, &snapshot.states)?;
        if let Err(error) = restore_fmu_states(exec, &snapshot.states) {
            free_states(exec, &end_states);
            return Err(error);
        }
        self.restore_master(master, observers)?;
        if let Some(replaying) = &mut self.replay {
            replaying.end_states = end_states;
        }
        Ok(())
    }

    /// Forget a replayed step under way (a restore replaces it, a finish ends it).
    fn drop_replay(&mut self) {
        if let Some(replaying) = self.replay.take() {
            free_states(self.exec.borrow_mut(), &replaying.end_states);
        }
    }

    fn restore_master<O: Observer>(
        &mut self,
        master: MasterState,
        observers: &mut [O],
    ) -> Result<()> {
        let exec = self.exec.borrow_mut();
        match (&mut self.scenario, master.scenario) {
            (Some(player), Some(state)) => player.restore(state)?,
            (None, None) => {}
            _ => return Err(Error::Usage(
                "the snapshot was taken with another scenario (or none) than this simulation plays"
                    .into(),
            )),
        }
        exec.restore_master_state(master.time, master.execution)?;
        self.algorithm.restore(&master.algorithm)?;
        self.next_output = master.next_output;
        self.within = master.within;
        self.replay = master.replay;
        self.stats.steps = master.steps;
        self.stats.rows = master.rows;
        self.stats.end_time = master.end_time;
        self.status = Status::Running;
        for observer in observers.iter_mut() {
            observer.restored(master.rows, master.time);
        }
        Ok(())
    }

    /// A snapshot as bytes that outlive this simulation: every FMU's serialised state and the
    /// master's, for [`Simulation::restore_bytes`] on a simulation of the same system.
    pub fn to_bytes(&mut self, snapshot: &Snapshot) -> Result<Vec<u8>> {
        if snapshot.identity != self.identity {
            return Err(Error::Usage(
                "the snapshot was taken of another simulation".into(),
            ));
        }
        self.check_not_finished()?;
        let exec = self.exec.borrow_mut();
        if let Some(i) = (0..exec.resolved.components.len()).find(|&i| !exec.can_serialize_state(i))
        {
            return Err(Error::Usage(format!(
                "component \"{}\" cannot serialise its FMU state (canSerializeFMUstate is not true), so the snapshot stays in memory",
                exec.component_name(i)
            )));
        }
        let serialise = |exec: &mut Execution, states: &[StateId]| -> Result<Vec<Vec<u8>>> {
            let mut bytes = Vec::with_capacity(states.len());
            for (i, &id) in states.iter().enumerate() {
                bytes.push(
                    exec.placement
                        .run_one(i, move |unit| unit.slave.serialize_state(id))?,
                );
            }
            Ok(bytes)
        };
        let serialised = SerialisedSnapshot {
            system: exec.fingerprint(),
            time: snapshot.time,
            fmu_states: serialise(exec, &snapshot.states)?,
            end_states: serialise(exec, &snapshot.end_states)?,
            master: snapshot.master.clone(),
        };
        let mut bytes = SNAPSHOT_MAGIC.to_vec();
        bytes.extend(
            postcard::to_allocvec(&serialised)
                .map_err(|e| Error::Internal(format!("serialising a snapshot: {e}")))?,
        );
        Ok(bytes)
    }

    /// Restore a snapshot made by [`Simulation::to_bytes`] of a simulation of the same system
    /// (the same components, FMUs and connections).
    pub fn restore_bytes<O: Observer>(&mut self, bytes: &[u8], observers: &mut [O]) -> Result<()> {
        self.check_not_finished()?;
        let body = bytes
            .strip_prefix(SNAPSHOT_MAGIC.as_slice())
            .ok_or_else(|| {
                Error::Usage(
                    "these bytes are not a cosimo snapshot (made by to_bytes of this version)"
                        .into(),
                )
            })?;
        let serialised: SerialisedSnapshot = postcard::from_bytes(body)
            .map_err(|e| Error::Usage(format!("a damaged snapshot: {e}")))?;
        let exec = self.exec.borrow_mut();
        if serialised.system != exec.fingerprint() {
            return Err(Error::Usage(
                "the snapshot was taken of another system (its components, FMUs or connections differ)".into(),
            ));
        }
        let master: MasterState = postcard::from_bytes(&serialised.master)
            .map_err(|e| Error::Usage(format!("a damaged snapshot: {e}")))?;
        if master.replay.is_some() == serialised.end_states.is_empty() {
            return Err(Error::Usage(
                "a damaged snapshot: the FMU states at the end of its macro step are missing"
                    .into(),
            ));
        }
        self.drop_replay();
        let exec = self.exec.borrow_mut();
        let mut end_states = Vec::with_capacity(serialised.end_states.len());
        for (i, state) in serialised.end_states.into_iter().enumerate() {
            match exec
                .placement
                .run_one(i, move |unit| unit.slave.deserialize_state(&state))
            {
                Ok(id) => end_states.push(id),
                Err(error) => {
                    free_states(exec, &end_states);
                    return Err(error);
                }
            }
        }
        for (i, state) in serialised.fmu_states.into_iter().enumerate() {
            let restored = exec.placement.run_one(i, move |unit| {
                let id = unit.slave.deserialize_state(&state)?;
                let restored = unit.slave.restore_state(id);
                let freed = unit.slave.free_state(id);
                restored.and(freed)
            });
            if let Err(error) = restored {
                free_states(exec, &end_states);
                return Err(error);
            }
        }
        self.restore_master(master, observers)?;
        if let Some(replaying) = &mut self.replay {
            replaying.end_states = end_states;
        }
        Ok(())
    }

    /// Free the FMU states of snapshots dropped since the last call (never waits for the
    /// lock: a snapshot being dropped on another thread is freed next time).
    fn release_dropped(&mut self) {
        let states = match self.released.try_lock() {
            Ok(mut released) if !released.is_empty() => std::mem::take(&mut *released),
            _ => return,
        };
        let exec = self.exec.borrow_mut();
        for snapshot in states {
            free_states(exec, &snapshot);
        }
    }
}

/// A snapshot as bytes: the system it belongs to, every FMU's serialised state, the master's.
#[derive(serde::Serialize, serde::Deserialize)]
struct SerialisedSnapshot {
    system: String,
    time: f64,
    fmu_states: Vec<Vec<u8>>,
    /// Inside a replayed macro step: the FMU states at its end.
    end_states: Vec<Vec<u8>>,
    master: Vec<u8>,
}

/// The largest difference of a Float64 cell of `replayed` from the one of `whole`, relative to
/// the larger magnitude of the two.
fn largest_deviation(replayed: &Row, whole: &Row) -> f64 {
    let mut largest: f64 = 0.0;
    for (a, b) in replayed.cells.iter().zip(&whole.cells) {
        let (xs, ys): (&[f64], &[f64]) = match (a, b) {
            (Cell::Float(x), Cell::Float(y)) => (std::slice::from_ref(x), std::slice::from_ref(y)),
            (Cell::Floats(x), Cell::Floats(y)) => (x, y),
            _ => continue,
        };
        for (&x, &y) in xs.iter().zip(ys) {
            let magnitude = x.abs().max(y.abs());
            if magnitude > 0.0 {
                largest = largest.max((x - y).abs() / magnitude);
            }
        }
    }
    largest
}

/// Restore every FMU to `states` (one per component).
fn restore_fmu_states(exec: &mut Execution, states: &[StateId]) -> Result<()> {
    for (i, &id) in states.iter().enumerate() {
        exec.placement
            .run_one(i, move |unit| unit.slave.restore_state(id))?;
    }
    Ok(())
}

/// New saved copies of `states` (one per component; none when empty): each FMU is set to the
/// state, saved, and set back to `current`, its state now.
fn copy_states(
    exec: &mut Execution,
    states: &[StateId],
    current: &[StateId],
) -> Result<Vec<StateId>> {
    let mut copies = Vec::with_capacity(states.len());
    for (i, (&state, &now)) in states.iter().zip(current).enumerate() {
        let copied = exec.placement.run_one(i, move |unit| {
            unit.slave.restore_state(state)?;
            let copy = unit.slave.save_state();
            let back = unit.slave.restore_state(now);
            let copy = copy?;
            if let Err(error) = back {
                let _ = unit.slave.free_state(copy);
                return Err(error);
            }
            Ok(copy)
        });
        match copied {
            Ok(copy) => copies.push(copy),
            Err(error) => {
                free_states(exec, &copies);
                return Err(error);
            }
        }
    }
    Ok(copies)
}

fn free_states(exec: &mut Execution, states: &[StateId]) {
    for (i, &id) in states.iter().enumerate() {
        if let Err(error) = exec
            .placement
            .run_one(i, move |unit| unit.slave.free_state(id))
        {
            log::warn!(
                "freeing a saved state of {}: {error}",
                exec.component_name(i)
            );
        }
    }
}

/// Whether a variable may be set between macro steps (FMI: inputs, and tunable parameters).
fn settable(name: &str, variable: &Variable) -> Result<()> {
    match (variable.causality, variable.variability) {
        (Causality::Input, _) => Ok(()),
        (Causality::Parameter, Variability::Tunable) => Ok(()),
        (Causality::Parameter, _) | (Causality::StructuralParameter, _) => Err(Error::Usage(format!(
            "{name} is a parameter that is not tunable: it can only be set before the start (as a start value)"
        ))),
        (causality, _) => Err(Error::Usage(format!(
            "{name} is {} variable: only inputs and tunable parameters can be set during a simulation",
            match causality {
                Causality::Output => "an output",
                Causality::Local => "a local",
                Causality::CalculatedParameter => "a calculated parameter",
                Causality::Independent => "the independent",
                _ => "a",
            }
        ))),
    }
}

fn next_identity() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Wraps an error with the simulation time it happened at.
fn at(time: f64) -> impl Fn(Error) -> Error {
    move |e: Error| Error::Simulation {
        time,
        source: Box::new(e),
    }
}

fn terminate_requested(exec: &Execution) -> bool {
    exec.terminate_requested.load(Ordering::Relaxed)
}

/// Whether `t` is at the target (within the grid's tolerance).
fn reached(grid: &TimeGrid, t: f64, target: f64) -> bool {
    t >= target - grid.tolerance(target)
}

/// Whether the step `h` from `t` ends after `target` (a step that ends on it to the grid's
/// tolerance is kept as it is, so that a run cut at its own communication points takes the
/// same steps).
fn passes(grid: &TimeGrid, t: f64, h: f64, target: f64) -> bool {
    t + h > target + grid.tolerance(target)
}

/// The first recorded value that is NaN or infinite, as an error naming its column.
fn check_finite(row: &Row, columns: &[String]) -> Result<()> {
    for (cell, name) in row.cells.iter().zip(columns) {
        let bad = match cell {
            Cell::Float(x) => (!x.is_finite()).then_some(*x),
            Cell::Floats(v) => v.iter().copied().find(|x| !x.is_finite()),
            _ => None,
        };
        if let Some(x) = bad {
            return Err(Error::Numerics(format!(
                "{name} is {x}: an FMU output is not a finite number; check the model, its \
                 parameters and the step size (--allow-non-finite records such values)"
            )));
        }
    }
    Ok(())
}
