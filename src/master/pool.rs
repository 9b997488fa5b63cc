//! Where the slaves live while a system runs: all on the calling thread, or each on one worker
//! thread of a persistent pool for its whole life (DESIGN.md decision 4).
//!
//! Some FMUs insist on being called from the thread that created them, so in the pool a slave is
//! instantiated, stepped, read and freed on the same worker. Work is handed to the workers as a
//! borrowed closure and the caller blocks until every worker has answered, which is what makes
//! lending a non-`'static` closure to a long-lived thread sound. Bounded channels of capacity one
//! carry the jobs, so a macro step neither spawns a thread nor allocates.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

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

/// The slaves of a run and the threads they live on.
pub enum Placement {
    /// Every unit on the calling thread, used in component order.
    Local(Vec<Unit>),
    /// Every unit on one worker of a persistent pool.
    Pool(WorkerPool),
}

impl Placement {
    /// Instantiate every component on the calling thread.
    pub fn local(count: usize, factory: &Factory<'_>) -> Result<Placement> {
        let units = (0..count)
            .map(|i| {
                Ok(Unit {
                    slave: factory(i)?,
                    floats: Vec::new(),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Placement::Local(units))
    }

    /// Start `threads` workers and instantiate each component (named by `names`, which
    /// errors use) on its worker.
    pub fn pool(names: &[String], threads: usize, factory: &Factory<'_>) -> Result<Placement> {
        let count = names.len();
        WorkerPool::start(names, threads.clamp(1, count.max(1)), factory).map(Placement::Pool)
    }

    /// Number of units.
    pub fn len(&self) -> usize {
        match self {
            Placement::Local(units) => units.len(),
            Placement::Pool(pool) => pool.owner.len(),
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
            Placement::Local(units) => {
                for (i, unit) in units.iter_mut().enumerate() {
                    task(i, unit)?;
                }
                Ok(())
            }
            Placement::Pool(pool) => pool.run_all(task),
        }
    }

    /// Run `task` on one unit (on its worker) and return its result.
    pub fn run_one<R: Send>(
        &mut self,
        index: usize,
        task: impl FnOnce(&mut Unit) -> Result<R> + Send,
    ) -> Result<R> {
        match self {
            Placement::Local(units) => task(&mut units[index]),
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

/// A borrowed task with its lifetime erased; valid until the worker has answered.
struct AllTaskRef(*const AllTask<'static>);
// SAFETY: the pointee is `Sync`, and the pool waits for every worker's answer before the borrow
// it was made from ends (see `WorkerPool::run_all`).
unsafe impl Send for AllTaskRef {}

type OneTask<'a> = dyn FnMut(&mut Unit) + Send + 'a;
struct OneTaskRef(*mut OneTask<'static>);
// SAFETY: the pointee is `Send`, and `run_one` waits for the worker's answer before returning.
unsafe impl Send for OneTaskRef {}

/// A borrowed factory with its lifetime erased; valid until the worker has answered.
struct FactoryRef(*const Factory<'static>);
// SAFETY: the pointee is `Sync`, and `start` waits for every worker's answer.
unsafe impl Send for FactoryRef {}

enum Job {
    Create(FactoryRef),
    All(AllTaskRef),
    One(usize, OneTaskRef),
}

/// Outcome of a job: Ok, or the failing component and its error.
type Answer = std::result::Result<(), (usize, Error)>;

struct Worker {
    jobs: Option<SyncSender<Job>>,
    answers: Receiver<Answer>,
    thread: Option<JoinHandle<()>>,
}

/// Persistent worker threads, each owning the units of the components assigned to it.
pub struct WorkerPool {
    workers: Vec<Worker>,
    /// For each component: (worker, slot on that worker).
    owner: Vec<(usize, usize)>,
    /// Component names, for errors.
    names: Vec<String>,
    /// Which workers the current broadcast reached (reused: no allocation per job).
    sent: Vec<bool>,
}

impl WorkerPool {
    fn start(names: &[String], threads: usize, factory: &Factory<'_>) -> Result<WorkerPool> {
        let count = names.len();
        // Round-robin keeps neighbours in a chain on different workers.
        let owner: Vec<(usize, usize)> = (0..count).map(|i| (i % threads, i / threads)).collect();
        let mut pool = WorkerPool {
            workers: Vec::with_capacity(threads),
            owner,
            names: names.to_vec(),
            sent: vec![false; threads],
        };
        for w in 0..threads {
            let components: Vec<usize> = (0..count).filter(|i| i % threads == w).collect();
            let all_names = names.to_vec();
            let first_name = components
                .first()
                .map(|&i| names[i].clone())
                .unwrap_or_default();
            let (job_tx, job_rx) = sync_channel::<Job>(1);
            let (answer_tx, answer_rx) = sync_channel::<Answer>(1);
            let thread = std::thread::Builder::new()
                .name(format!("cosimo-worker-{w}"))
                .spawn(move || worker_loop(components, &all_names, job_rx, answer_tx))
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
        // Instantiate on the owning threads, so each slave is created where it will run.
        // SAFETY: as in `run_all`: every worker is waited for before `factory`'s borrow ends.
        let erased: *const Factory<'static> =
            unsafe { std::mem::transmute(factory as *const Factory<'_>) };
        pool.broadcast(|| Job::Create(FactoryRef(erased)))?;
        Ok(pool)
    }

    fn run_all(&mut self, task: &AllTask<'_>) -> Result<()> {
        // SAFETY: the erased borrow is only used by workers until they answer, and every worker
        // that was sent the job is waited for in `broadcast` before this function returns.
        let erased: *const AllTask<'static> =
            unsafe { std::mem::transmute(task as *const AllTask<'_>) };
        self.broadcast(|| Job::All(AllTaskRef(erased)))
    }

    /// Send a job to every worker and wait for the answer of exactly those that were sent it,
    /// so no answer is left behind to be taken for the next job's. A worker that cannot take
    /// the job or dies before answering is an error naming its first component; the error of
    /// the lowest component index wins.
    fn broadcast(&mut self, job: impl Fn() -> Job) -> Result<()> {
        let mut failure: Option<(usize, Error)> = None;
        let mut keep = |component: usize, error: Error| {
            if failure.as_ref().is_none_or(|(c, _)| component < *c) {
                failure = Some((component, error));
            }
        };
        for (w, worker) in self.workers.iter().enumerate() {
            let ok = worker
                .jobs
                .as_ref()
                .is_some_and(|jobs| jobs.send(job()).is_ok());
            self.sent[w] = ok;
            if !ok {
                let first = self.first_component(w);
                keep(first, self.lost(first));
            }
        }
        for (w, worker) in self.workers.iter().enumerate() {
            if !self.sent[w] {
                continue;
            }
            match worker.answers.recv() {
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
        // SAFETY: as in `run_all`: we wait for this worker's answer before returning.
        let erased: *mut OneTask<'static> =
            unsafe { std::mem::transmute(task as *mut OneTask<'_>) };
        let worker = &self.workers[w];
        let sent = worker
            .jobs
            .as_ref()
            .map(|jobs| jobs.send(Job::One(slot, OneTaskRef(erased))).is_ok())
            .unwrap_or(false);
        if !sent {
            return Err(self.lost(component));
        }
        match worker.answers.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err((_, error))) => Err(error),
            Err(_) => Err(self.lost(component)),
        }
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
) {
    // Slots stay empty until the create job fills them on this thread.
    let mut units: Vec<Option<Unit>> = components.iter().map(|_| None).collect();
    while let Ok(job) = jobs.recv() {
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
