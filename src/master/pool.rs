//! Where the slaves live while a system runs: all on the calling thread, or spread over the
//! calling thread and the worker threads of a persistent pool, each slave on one thread for its
//! whole life (DESIGN.md decision 4).
//!
//! Some FMUs insist on being called from the thread that created them, so in the pool a slave is
//! instantiated, stepped, read and freed on the same thread. The calling thread is one of the
//! pool's threads: it steps its own share while the workers step theirs, so on two cores one
//! worker and the caller step side by side. Work is handed to the workers as a borrowed closure
//! and the caller blocks until every worker has answered, which is what makes lending a
//! non-`'static` closure to a long-lived thread sound. Bounded channels of capacity one carry
//! the jobs, so a macro step neither spawns a thread nor allocates; while every thread has a
//! core, both sides spin for the other's message for up to 2 ms before they sleep, as a
//! hand-over to a sleeping thread costs more than many macro steps of cheap FMUs.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::fmu::Slave;
use crate::{Error, Result};

/// A slave and the scratch space the master uses next to it (touched by one thread at a time).
pub struct Unit {
    pub slave: Box<dyn Slave>,
    /// Float scratch (Taylor coefficients, output values), sized by the master once.
    pub floats: Vec<f64>,
}

/// A task run for every unit: `(component index, unit)`.
pub type AllTask<'a> = dyn Fn(usize, &mut Unit) -> Result<()> + Sync + 'a;

/// Creates the slave of a component (called on the thread that will own it).
pub type Factory<'a> = dyn Fn(usize) -> Result<Box<dyn Slave>> + Sync + 'a;

/// Trial timing: while `timing` is on, every component's time in `run_all` tasks is added to
/// its counter (ns).
#[derive(Debug)]
pub struct TrialClock {
    pub timing: AtomicBool,
    pub nanos: Box<[AtomicU64]>,
}

impl TrialClock {
    pub fn new(components: usize) -> TrialClock {
        TrialClock {
            timing: AtomicBool::new(false),
            nanos: (0..components).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// Where the components of a run go, decided before any is instantiated.
#[derive(Debug, Clone)]
pub enum Layout {
    /// Every component on the calling thread.
    Caller,
    /// Every component on the calling thread, each one's time in `run_all` tasks kept by the
    /// clock while it runs: the trial that measures step costs (`parallel.rs`).
    Timed(Arc<TrialClock>),
    /// The components split evenly over `threads` threads in contiguous runs of the coupling
    /// order (resolved into `Threads` once the order is known).
    Spread { threads: usize },
    /// Component `i` on thread `thread_of[i]` of `threads`: 0 is the calling thread, the
    /// others are workers of a pool.
    Threads {
        threads: usize,
        thread_of: Vec<usize>,
    },
}

/// Split `order` into `threads` contiguous runs of about equal total cost; the thread of each
/// component.
pub fn split(order: &[usize], costs: &[f64], threads: usize) -> Vec<usize> {
    let total: f64 = costs.iter().sum();
    let mut thread_of = vec![0; costs.len()];
    let mut done = 0.0;
    let mut thread = 0;
    for (k, &i) in order.iter().enumerate() {
        // Move on once this thread has its share, keeping one component for each thread left.
        let left = order.len() - k;
        if thread + 1 < threads
            && (done >= total * (thread + 1) as f64 / threads as f64 || left < threads - thread)
        {
            thread += 1;
        }
        thread_of[i] = thread;
        done += costs[i];
    }
    thread_of
}

/// The slaves of a run and the threads they live on.
pub enum Placement {
    /// Every unit on the calling thread, used in component order.
    Local(Vec<Unit>),
    /// Every unit on the calling thread, timed (see [`Layout::Timed`]).
    Timed(Vec<Unit>, Arc<TrialClock>),
    /// Every unit on one thread of a persistent pool (the calling thread among them).
    Pool(WorkerPool),
}

impl Placement {
    /// Instantiate every component where `layout` puts it.
    pub fn new(names: &[String], layout: &Layout, factory: &Factory<'_>) -> Result<Placement> {
        let local = || -> Result<Vec<Unit>> {
            (0..names.len())
                .map(|i| {
                    Ok(Unit {
                        slave: factory(i)?,
                        floats: Vec::new(),
                    })
                })
                .collect()
        };
        match layout {
            Layout::Caller => Ok(Placement::Local(local()?)),
            Layout::Timed(clock) if clock.nanos.len() == names.len() => {
                Ok(Placement::Timed(local()?, clock.clone()))
            }
            Layout::Threads { threads, thread_of }
                if thread_of.len() == names.len() && thread_of.iter().all(|t| t < threads) =>
            {
                WorkerPool::start(names, *threads, thread_of, factory).map(Placement::Pool)
            }
            _ => Err(Error::Internal(format!(
                "a layout for another system ({} components): {layout:?}",
                names.len()
            ))),
        }
    }

    /// Number of units.
    pub fn len(&self) -> usize {
        match self {
            Placement::Local(units) | Placement::Timed(units, _) => units.len(),
            Placement::Pool(pool) => pool.owner.len(),
        }
    }

    /// The thread a component lives on (0: the calling thread).
    pub fn thread_of(&self, component: usize) -> usize {
        match self {
            Placement::Local(_) | Placement::Timed(..) => 0,
            Placement::Pool(pool) => match pool.owner.get(component) {
                Some(&(CALLER, _)) | None => 0,
                Some(&(w, _)) => w + 1,
            },
        }
    }

    /// True when there are no units.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Run `task` for every unit (in parallel on a pool); the error of the lowest component
    /// index wins, so failures are reported the same way however the work was spread.
    pub fn run_all(&mut self, task: &AllTask<'_>) -> Result<()> {
        match self {
            Placement::Timed(units, clock) if clock.timing.load(Ordering::Relaxed) => {
                for (i, unit) in units.iter_mut().enumerate() {
                    let start = Instant::now();
                    let result = task(i, unit);
                    let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    clock.nanos[i].fetch_add(nanos, Ordering::Relaxed);
                    result?;
                }
                Ok(())
            }
            Placement::Local(units) | Placement::Timed(units, _) => {
                for (i, unit) in units.iter_mut().enumerate() {
                    task(i, unit)?;
                }
                Ok(())
            }
            Placement::Pool(pool) => pool.run_all(task),
        }
    }

    /// Run `task` once on `thread`, handing it the units of that thread by component: one
    /// hand-over for consecutive work on several components that live together.
    pub fn run_on_thread(&mut self, thread: usize, task: &mut ThreadTask<'_>) -> Result<()> {
        match self {
            Placement::Local(units) | Placement::Timed(units, _) => task(&mut Units::All(units)),
            Placement::Pool(pool) => pool.run_on_thread(thread, task),
        }
    }

    /// Run `task` on one unit (on its worker) and return its result.
    pub fn run_one<R: Send>(
        &mut self,
        index: usize,
        task: impl FnOnce(&mut Unit) -> Result<R> + Send,
    ) -> Result<R> {
        match self {
            Placement::Local(units) | Placement::Timed(units, _) => task(&mut units[index]),
            Placement::Pool(pool) => {
                let mut task = Some(task);
                let mut answer: Option<Result<R>> = None;
                let mut call = |unit: &mut Unit| {
                    if let Some(task) = task.take() {
                        answer = Some(task(unit));
                    }
                };
                pool.run_one(index, &mut call)?;
                answer.unwrap_or_else(|| Err(pool.lost(index)))
            }
        }
    }
}

/// The units of one thread, found by component index.
pub enum Units<'a> {
    /// Every component's unit, by index (the calling thread holds them all).
    All(&'a mut [Unit]),
    /// Some components' units: `components` (ascending) names the component of each slot.
    Slots {
        units: &'a mut [Option<Unit>],
        components: &'a [usize],
    },
}

impl Units<'_> {
    /// The unit of `component`, if it lives on this thread.
    pub fn get(&mut self, component: usize) -> Option<&mut Unit> {
        match self {
            Units::All(units) => units.get_mut(component),
            Units::Slots { units, components } => {
                let slot = components.binary_search(&component).ok()?;
                units.get_mut(slot).and_then(Option::as_mut)
            }
        }
    }
}

/// A task for several units of one thread ([`Placement::run_on_thread`]).
pub type ThreadTask<'a> = dyn FnMut(&mut Units<'_>) -> Result<()> + Send + 'a;

/// A borrowed task with its lifetime erased; valid until the worker has answered.
struct AllTaskRef(*const AllTask<'static>);
// SAFETY: the pointee is `Sync`, and the pool waits for every worker's answer before the borrow
// it was made from ends (see `WorkerPool::run_all`).
unsafe impl Send for AllTaskRef {}

type OneTask<'a> = dyn FnMut(&mut Unit) + Send + 'a;
struct OneTaskRef(*mut OneTask<'static>);
// SAFETY: the pointee is `Send`, and `run_one` waits for the worker's answer before returning.
unsafe impl Send for OneTaskRef {}

struct ThreadTaskRef(*mut ThreadTask<'static>);
// SAFETY: the pointee is `Send`, and `run_on_thread` waits for the worker's answer.
unsafe impl Send for ThreadTaskRef {}

/// A borrowed factory with its lifetime erased; valid until the worker has answered.
struct FactoryRef(*const Factory<'static>);
// SAFETY: the pointee is `Sync`, and `start` waits for every worker's answer.
unsafe impl Send for FactoryRef {}

enum Job {
    Create(FactoryRef),
    All(AllTaskRef),
    One(usize, OneTaskRef),
    Thread(ThreadTaskRef),
}

/// Outcome of a job: Ok, or the failing component and its error.
type Answer = std::result::Result<(), (usize, Error)>;

struct Worker {
    jobs: Option<SyncSender<Job>>,
    answers: Receiver<Answer>,
    thread: Option<JoinHandle<()>>,
}

/// The "worker" index of the calling thread in [`WorkerPool::owner`].
const CALLER: usize = usize::MAX;

/// Persistent worker threads, each owning the units of the components assigned to it, and the
/// calling thread's own units.
pub struct WorkerPool {
    workers: Vec<Worker>,
    /// The units of the calling thread, by slot.
    local: Vec<Option<Unit>>,
    /// The component of each local slot.
    local_components: Vec<usize>,
    /// For each component: (worker or [`CALLER`], slot on that thread).
    owner: Vec<(usize, usize)>,
    /// How long the caller spins for a worker's answer before it sleeps.
    spin: Duration,
    /// Component names, for errors.
    names: Vec<String>,
    /// Which workers the current broadcast reached (reused: no allocation per job).
    sent: Vec<bool>,
}

impl WorkerPool {
    /// Start `threads - 1` workers and instantiate component `i` on thread `thread_of[i]`
    /// (0: the caller).
    fn start(
        names: &[String],
        threads: usize,
        thread_of: &[usize],
        factory: &Factory<'_>,
    ) -> Result<WorkerPool> {
        let count = names.len();
        let threads = threads.max(1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut filled = vec![0usize; threads];
        let owner: Vec<(usize, usize)> = thread_of
            .iter()
            .map(|&t| {
                let slot = filled[t];
                filled[t] += 1;
                (if t == 0 { CALLER } else { t - 1 }, slot)
            })
            .collect();
        let thread_of = |i: usize| thread_of[i];
        let local_components: Vec<usize> = (0..count).filter(|&i| thread_of(i) == 0).collect();
        let mut pool = WorkerPool {
            workers: Vec::with_capacity(threads.saturating_sub(1)),
            local: local_components.iter().map(|_| None).collect(),
            local_components,
            owner,
            names: names.to_vec(),
            sent: vec![false; threads.saturating_sub(1)],
            spin: Duration::ZERO,
        };
        // Spin only while every thread has a core; then as long as waits are short.
        let spin = spin_while_waiting(threads, cores);
        pool.spin = spin;
        for w in 1..threads {
            let components: Vec<usize> = (0..count).filter(|&i| thread_of(i) == w).collect();
            let all_names = names.to_vec();
            let first_name = components
                .first()
                .map(|&i| names[i].clone())
                .unwrap_or_default();
            let (job_tx, job_rx) = sync_channel::<Job>(1);
            let (answer_tx, answer_rx) = sync_channel::<Answer>(1);
            let thread = std::thread::Builder::new()
                .name(format!("cosimo-worker-{w}"))
                .spawn(move || worker_loop(components, &all_names, job_rx, answer_tx, spin))
                .map_err(|e| Error::Worker {
                    component: first_name,
                    message: format!("cannot start its worker thread: {e}"),
                })?;
            pool.workers.push(Worker {
                jobs: Some(job_tx),
                answers: answer_rx,
                thread: Some(thread),
            });
        }
        // Instantiate on the owning threads, so each slave is created where it will run (the
        // workers' while the caller creates its own).
        // SAFETY: as in `run_all`: every worker is waited for before `factory`'s borrow ends.
        let erased: *const Factory<'static> =
            unsafe { std::mem::transmute(factory as *const Factory<'_>) };
        pool.send(|| Job::Create(FactoryRef(erased)));
        let mut failure = None;
        for (slot, &component) in pool.local_components.iter().enumerate() {
            match catch_unwind(AssertUnwindSafe(|| factory(component))) {
                Ok(Ok(slave)) => {
                    pool.local[slot] = Some(Unit {
                        slave,
                        floats: Vec::new(),
                    })
                }
                Ok(Err(error)) => {
                    failure = Some((component, error));
                    break;
                }
                Err(_) => {
                    failure = Some((component, panicked(names, component)));
                    break;
                }
            }
        }
        pool.collect(failure)?;
        Ok(pool)
    }

    fn run_all(&mut self, task: &AllTask<'_>) -> Result<()> {
        // SAFETY: the erased borrow is only used by workers until they answer, and every worker
        // that was sent the job is waited for in `collect` before this function returns.
        let erased: *const AllTask<'static> =
            unsafe { std::mem::transmute(task as *const AllTask<'_>) };
        self.send(|| Job::All(AllTaskRef(erased)));
        // The caller's share, while the workers do theirs.
        let mut failure = None;
        for (slot, &component) in self.local_components.iter().enumerate() {
            let result = match &mut self.local[slot] {
                Some(unit) => catch_unwind(AssertUnwindSafe(|| task(component, unit)))
                    .unwrap_or_else(|_| Err(panicked(&self.names, component))),
                None => Err(worker_gone(&self.names, component)),
            };
            if let Err(error) = result {
                failure = Some((component, error));
                break;
            }
        }
        self.collect(failure)
    }

    /// Send a job to every worker (noting which took it).
    fn send(&mut self, job: impl Fn() -> Job) {
        for (w, worker) in self.workers.iter().enumerate() {
            self.sent[w] = worker
                .jobs
                .as_ref()
                .is_some_and(|jobs| jobs.send(job()).is_ok());
        }
    }

    /// Wait for the answer of exactly the workers that were sent the job, so no answer is left
    /// behind to be taken for the next job's. A worker that could not take the job or dies
    /// before answering is an error naming its first component; the error of the lowest
    /// component index wins (`failure`: the caller's own, if any).
    fn collect(&mut self, mut failure: Option<(usize, Error)>) -> Result<()> {
        let mut keep = |component: usize, error: Error| {
            if failure.as_ref().is_none_or(|(c, _)| component < *c) {
                failure = Some((component, error));
            }
        };
        for w in 0..self.workers.len() {
            if !self.sent[w] {
                let first = self.first_component(w);
                keep(first, self.lost(first));
                continue;
            }
            match receive(&self.workers[w].answers, self.spin) {
                Ok(Ok(())) => {}
                Ok(Err((component, error))) => keep(component, error),
                Err(_) => {
                    let first = self.first_component(w);
                    keep(first, self.lost(first));
                }
            }
        }
        match failure {
            Some((_, error)) => Err(error),
            None => Ok(()),
        }
    }

    /// The lowest component index on worker `w`.
    fn first_component(&self, w: usize) -> usize {
        self.owner
            .iter()
            .position(|&(owner, _)| owner == w)
            .unwrap_or(usize::MAX)
    }

    /// The error for a component whose worker is gone.
    fn lost(&self, component: usize) -> Error {
        Error::Worker {
            component: self.name(component),
            message: "its worker thread is gone (it panicked or was stopped); the run cannot go on"
                .into(),
        }
    }

    fn name(&self, component: usize) -> String {
        self.names
            .get(component)
            .cloned()
            .unwrap_or_else(|| format!("#{component}"))
    }

    fn run_one(&mut self, component: usize, task: &mut OneTask<'_>) -> Result<()> {
        let (w, slot) = self.owner[component];
        if w == CALLER {
            return match self.local.get_mut(slot).and_then(Option::as_mut) {
                Some(unit) => catch_unwind(AssertUnwindSafe(|| task(unit)))
                    .map_err(|_| panicked(&self.names, component)),
                None => Err(worker_gone(&self.names, component)),
            };
        }
        // SAFETY: as in `run_all`: we wait for this worker's answer before returning.
        let erased: *mut OneTask<'static> =
            unsafe { std::mem::transmute(task as *mut OneTask<'_>) };
        self.hand_over(w, Job::One(slot, OneTaskRef(erased)), component)
    }

    /// Hand `job` to worker `w` and wait for its answer; `component` names the error of a
    /// worker that is gone.
    fn hand_over(&self, w: usize, job: Job, component: usize) -> Result<()> {
        let Some(worker) = self.workers.get(w) else {
            return Err(Error::Internal(format!("no worker thread {}", w + 1)));
        };
        let sent = worker
            .jobs
            .as_ref()
            .is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            return Err(self.lost(component));
        }
        match receive(&worker.answers, self.spin) {
            Ok(Ok(())) => Ok(()),
            Ok(Err((_, error))) => Err(error),
            Err(_) => Err(self.lost(component)),
        }
    }

    fn run_on_thread(&mut self, thread: usize, task: &mut ThreadTask<'_>) -> Result<()> {
        if thread == 0 {
            let mut units = Units::Slots {
                units: &mut self.local,
                components: &self.local_components,
            };
            return catch_unwind(AssertUnwindSafe(|| task(&mut units))).unwrap_or_else(|_| {
                let first = self.local_components.first().copied().unwrap_or(usize::MAX);
                Err(panicked(&self.names, first))
            });
        }
        let w = thread - 1;
        // SAFETY: as in `run_all`: we wait for this worker's answer before returning.
        let erased: *mut ThreadTask<'static> =
            unsafe { std::mem::transmute(task as *mut ThreadTask<'_>) };
        self.hand_over(
            w,
            Job::Thread(ThreadTaskRef(erased)),
            self.first_component(w),
        )
    }
}

/// The median time of a round trip between the calling thread and a worker (a job handed over
/// and its answer back), measured with the pool's own channels and spinning: what every
/// hand-over of a parallel run costs beyond the work it carries.
pub fn hand_over_cost() -> Duration {
    const TRIPS: usize = 201;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spin = spin_while_waiting(2, cores);
    let (ping_tx, ping_rx) = sync_channel::<u64>(1);
    let (pong_tx, pong_rx) = sync_channel::<u64>(1);
    let echo = std::thread::Builder::new()
        .name("cosimo-hand-over".into())
        .spawn(move || {
            while let Ok(n) = receive(&ping_rx, spin) {
                if pong_tx.send(n).is_err() {
                    break;
                }
            }
        });
    let Ok(echo) = echo else {
        // No thread to hand over to: as if it never paid.
        return Duration::MAX;
    };
    let mut trips = Vec::with_capacity(TRIPS);
    // A loaded machine makes every trip slow: a few milliseconds tell enough.
    let started = Instant::now();
    for n in 0..TRIPS as u64 {
        if started.elapsed() > Duration::from_millis(2) && trips.len() >= 11 {
            break;
        }
        let start = Instant::now();
        if ping_tx.send(n).is_err() || receive(&pong_rx, spin).is_err() {
            break;
        }
        trips.push(start.elapsed());
    }
    drop(ping_tx);
    let _ = echo.join();
    if trips.is_empty() {
        return Duration::MAX;
    }
    trips.sort_unstable();
    trips[trips.len() / 2]
}

/// How long a pool thread spins for its next message before it sleeps: while every thread has
/// a core of its own, longer than a macro step's share of sequential work usually lasts (a
/// futex wake-up costs tens of µs on a virtual machine, more than many macro steps of cheap
/// FMUs); with more threads than cores, not at all, so that the threads with work get them.
fn spin_while_waiting(threads: usize, cores: usize) -> Duration {
    if threads <= cores {
        POOL_SPIN
    } else {
        Duration::ZERO
    }
}

/// See [`spin_while_waiting`].
const POOL_SPIN: Duration = Duration::from_millis(2);

/// Receive from `channel`, spinning for up to `spin` first.
fn receive<T>(channel: &Receiver<T>, spin: Duration) -> std::result::Result<T, ()> {
    let start = Instant::now();
    let mut polls = 0u32;
    loop {
        match channel.try_recv() {
            Ok(message) => return Ok(message),
            Err(TryRecvError::Disconnected) => return Err(()),
            Err(TryRecvError::Empty) => {}
        }
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(32) && start.elapsed() >= spin {
            return channel.recv().map_err(|_| ());
        }
        std::hint::spin_loop();
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        // Closing the job channel ends the worker's loop; its units (and so the FMU instances)
        // are dropped on the worker thread that created them.
        for worker in &mut self.workers {
            worker.jobs = None;
        }
        for worker in &mut self.workers {
            if let Some(thread) = worker.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// `components`: the indices of this worker's components; `names`: every component's name.
fn worker_loop(
    components: Vec<usize>,
    names: &[String],
    jobs: Receiver<Job>,
    answers: SyncSender<Answer>,
    spin: Duration,
) {
    // Slots stay empty until the create job fills them on this thread.
    let mut units: Vec<Option<Unit>> = components.iter().map(|_| None).collect();
    while let Ok(job) = receive(&jobs, spin) {
        let answer = match job {
            Job::Create(factory) => {
                // SAFETY: the sender keeps the factory alive until it has our answer.
                let factory = unsafe { &*factory.0 };
                let mut answer = Ok(());
                for (slot, &component) in units.iter_mut().zip(&components) {
                    match catch_unwind(AssertUnwindSafe(|| factory(component))) {
                        Ok(Ok(slave)) => {
                            *slot = Some(Unit {
                                slave,
                                floats: Vec::new(),
                            })
                        }
                        Ok(Err(error)) => {
                            answer = Err((component, error));
                            break;
                        }
                        Err(_) => {
                            answer = Err((component, panicked(names, component)));
                            break;
                        }
                    }
                }
                answer
            }
            Job::All(task) => {
                // SAFETY: the sender keeps the closure alive until it has our answer.
                let task = unsafe { &*task.0 };
                let mut answer = Ok(());
                for (slot, &component) in units.iter_mut().zip(&components) {
                    let result = match slot {
                        Some(unit) => catch_unwind(AssertUnwindSafe(|| task(component, unit)))
                            .unwrap_or_else(|_| Err(panicked(names, component))),
                        None => Err(worker_gone(names, component)),
                    };
                    if let Err(error) = result {
                        answer = Err((component, error));
                        break;
                    }
                }
                answer
            }
            Job::One(slot, task) => {
                // SAFETY: as above; the sender waits for our answer.
                let task = unsafe { &mut *task.0 };
                let component = components.get(slot).copied().unwrap_or(usize::MAX);
                match units.get_mut(slot).and_then(Option::as_mut) {
                    Some(unit) => catch_unwind(AssertUnwindSafe(|| task(unit)))
                        .map_err(|_| (component, panicked(names, component))),
                    None => Err((component, worker_gone(names, component))),
                }
            }
            Job::Thread(task) => {
                // SAFETY: as above; the sender waits for our answer.
                let task = unsafe { &mut *task.0 };
                let first = components.first().copied().unwrap_or(usize::MAX);
                let mut units = Units::Slots {
                    units: &mut units,
                    components: &components,
                };
                catch_unwind(AssertUnwindSafe(|| task(&mut units)))
                    .unwrap_or_else(|_| Err(panicked(names, first)))
                    .map_err(|error| (first, error))
            }
        };
        if answers.send(answer).is_err() {
            break;
        }
    }
}

/// A unit that is missing on its own worker (its creation failed earlier).
fn worker_gone(names: &[String], component: usize) -> Error {
    Error::Worker {
        component: names.get(component).cloned().unwrap_or_default(),
        message: "its FMU instance was never created on its worker thread".into(),
    }
}

fn panicked(names: &[String], component: usize) -> Error {
    Error::Worker {
        component: names.get(component).cloned().unwrap_or_default(),
        message: "a panic occurred while running it (a bug in cosimo or the FMU)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_balances_contiguous_runs_by_cost() {
        // A chain of four, the last two expensive: 1 + 1 + 10 = 12 against 10 is the best
        // contiguous split (two and two would be 2 against 20).
        let order = [0, 1, 2, 3];
        assert_eq!(split(&order, &[1.0, 1.0, 10.0, 10.0], 2), vec![0, 0, 0, 1]);
        assert_eq!(split(&order, &[5.0, 5.0, 5.0, 5.0], 2), vec![0, 0, 1, 1]);
        // Every thread gets at least one component.
        assert_eq!(split(&order, &[100.0, 0.0, 0.0, 0.0], 4), vec![0, 1, 2, 3]);
        // The coupling order, not the index order, decides what is contiguous.
        assert_eq!(split(&[3, 2, 1, 0], &[1.0; 4], 2), vec![1, 1, 0, 0]);
    }
}
