//! The out-of-process slave: an FMU hosted in a `cosimo worker` process.
//!
//! An FMU is foreign native code: one that segfaults, aborts, calls `exit` or never returns
//! takes its process with it. Hosted in a worker, it takes only the worker: the master reports
//! which component died in which call at which time and of what (signal, exit code, timeout),
//! keeps every result row so far and shuts the other workers down. Two FMUs that cannot share
//! a process (`canBeInstantiatedOnlyOncePerProcess`, clashing runtimes) run side by side.
//!
//! The master and a worker talk over shared memory ([`channel`]) in the encoding of [`wire`];
//! [`WorkerSlave`] is the master's side (a [`crate::fmu::Slave`] like any other, so every
//! algorithm works over it unchanged, FMU states and directional derivatives included) and
//! [`serve`] the worker's.
//!
//! The worker opens the master's unpacked FMU folder (no second extraction), inherits its
//! environment (`LD_PRELOAD` for Python-based FMUs), writes the FMU's console output to the
//! master's stderr, ignores Ctrl-C (the master ends it) and dies with the master
//! (`PR_SET_PDEATHSIG`).

mod channel;
mod host;
mod slave;
mod wire;

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use channel::{Channel, Mapping};
pub use channel::{Patience, MAX_SLOTS, MAX_SPIN};
pub use host::serve;
pub use slave::WorkerSlave;

use crate::error::{Error, Result};
use crate::fmu::instance::{lock, InstanceOptions};
use crate::fmu::Fmu;

/// The descriptor number the channel has in the worker.
const CHANNEL_FD: i32 = 3;

/// How a worker process is started and watched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerOptions {
    /// The `cosimo` executable (`None`: see [`worker_program`]).
    pub program: Option<PathBuf>,
    /// An FMI call that takes longer kills the worker and fails with a message naming it.
    pub call_timeout: Option<Duration>,
    /// The worker's address-space limit in bytes (`RLIMIT_AS`).
    pub memory_limit: Option<u64>,
    /// The most a worker may spin waiting for the master's next call before it sleeps (at
    /// most 50 µs; zero: sleep at once). Spinning answers faster but holds a core: worth it
    /// only while every worker and the master have a core of their own. `None`: a run
    /// decides by that rule ([`crate::master::execution::Execution::instantiate`]); a slave
    /// made directly does not spin.
    pub worker_spin: Option<Duration>,
}

/// The executable that serves `cosimo worker`: `$COSIMO_WORKER`, else this program when it is
/// cosimo, else a `cosimo` next to it or one directory up (a test binary in `target/*/deps`).
pub fn worker_program() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("COSIMO_WORKER") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| {
        Error::Usage(format!(
            "cannot find this program's path to start a worker process ({e}); set COSIMO_WORKER to the cosimo executable"
        ))
    })?;
    if exe.file_stem().is_some_and(|s| s == "cosimo") {
        return Ok(exe);
    }
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    for candidate in [dir.join("cosimo"), dir.join("..").join("cosimo")] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(Error::Usage(format!(
        "no cosimo executable next to {} to start a worker process; set COSIMO_WORKER to the cosimo executable",
        exe.display()
    )))
}

/// Instantiate `fmu` as `name` in a new worker process of its own.
pub fn instantiate(
    fmu: &Fmu,
    name: &str,
    options: InstanceOptions,
    worker: &WorkerOptions,
) -> Result<WorkerSlave> {
    WorkerProcess::spawn(&[name.to_string()], worker)?.instantiate(0, fmu, options, worker)
}

/// A running `cosimo worker` process and the components it hosts, one per slot of its shared
/// memory. Its members share it through an `Arc`; the last one gone reaps the process.
pub struct WorkerProcess {
    child: Mutex<Child>,
    pid: u32,
    mapping: Arc<Mapping>,
    /// The component of each slot (crash reports name the one whose call was running).
    members: Vec<String>,
    /// Why the process is gone, once a member found out: (component, reason).
    ended: Mutex<Option<(String, String)>>,
    memory_limit: Option<u64>,
}

/// What a worker process started ahead serves: a program with a number of slots, a memory
/// limit and a spin (all fixed when the process starts).
#[derive(Clone, PartialEq)]
struct SpareKind {
    program: PathBuf,
    slots: usize,
    memory_limit: Option<u64>,
    spin: Duration,
}

/// A worker process started ahead, killed if nobody takes it.
struct Spare {
    kind: SpareKind,
    process: Option<Arc<WorkerProcess>>,
}

impl Drop for Spare {
    fn drop(&mut self) {
        if let Some(process) = self.process.take() {
            process.kill();
        }
    }
}

thread_local! {
    /// Whether this thread starts its next worker process ahead ([`start_ahead`]).
    static AHEAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The worker process this thread started ahead.
    static SPARE: std::cell::RefCell<Option<Spare>> = const { std::cell::RefCell::new(None) };
}

/// From now on, each worker process this thread starts is followed at once by a spare one of
/// the same kind, which the thread's next start takes: a thread that makes run after run (a
/// sweep's) finds its next run's worker up, its start overlapped with the run before (a
/// Python worker takes 0.1 s to start, the cosimo executable 0.01 s). The spare is started
/// by this thread (a worker dies with the thread that started it) and killed when the thread
/// ends.
pub fn start_ahead() {
    AHEAD.with(|ahead| ahead.set(true));
}

impl WorkerProcess {
    /// Start a worker process for the components `members` (slot `k` hosts `members[k]`), or
    /// take the one this thread started ahead ([`start_ahead`]). `options` give the program,
    /// the memory limit and how long the worker spins.
    pub fn spawn(members: &[String], options: &WorkerOptions) -> Result<Arc<WorkerProcess>> {
        if !AHEAD.with(std::cell::Cell::get) {
            return WorkerProcess::start(members, options);
        }
        let kind = SpareKind {
            program: match &options.program {
                Some(program) => program.clone(),
                None => worker_program()?,
            },
            slots: members.len(),
            memory_limit: options.memory_limit,
            spin: options.worker_spin.unwrap_or_default().min(MAX_SPIN),
        };
        let spare = SPARE.with(|spare| spare.borrow_mut().take());
        let taken = match spare {
            Some(mut spare) if spare.kind == kind => spare.process.take().and_then(|mut p| {
                // A spare that died meanwhile is not taken; the spare's only owner renames it.
                let alive = p.exited().is_none();
                Arc::get_mut(&mut p)
                    .filter(|_| alive)
                    .map(|process| process.members = members.to_vec())?;
                Some(p)
            }),
            // Another kind (or none): dropped, which kills it.
            _ => None,
        };
        let process = match taken {
            Some(process) => process,
            None => WorkerProcess::start(members, options)?,
        };
        if let Ok(next) = WorkerProcess::start(members, options) {
            SPARE.with(|spare| {
                *spare.borrow_mut() = Some(Spare {
                    kind,
                    process: Some(next),
                })
            });
        }
        Ok(process)
    }

    /// Start a worker process for `members`.
    fn start(members: &[String], options: &WorkerOptions) -> Result<Arc<WorkerProcess>> {
        let who = match members {
            [one] => one.clone(),
            _ => members.join("\", \""),
        };
        let failed = |what: &str, e: std::io::Error| Error::Worker {
            component: who.clone(),
            message: format!("{what}: {e}"),
        };
        let program = match &options.program {
            Some(program) => program.clone(),
            None => worker_program()?,
        };
        let (mapping, fd) = Mapping::create(members.len())
            .map_err(|e| failed("cannot create the worker's shared memory", e))?;
        mapping.group().worker_spin_ns.store(
            options
                .worker_spin
                .unwrap_or_default()
                .min(MAX_SPIN)
                .as_nanos() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        let raw = fd.as_raw_fd();
        let memory = options.memory_limit;
        let mut command = Command::new(&program);
        command
            .arg("worker")
            .arg("--channel-fd")
            .arg(CHANNEL_FD.to_string())
            .stdin(Stdio::null());
        // The FMU's console output must not mix with results written to stdout.
        if let Ok(stderr) = std::io::stderr().as_fd_owned() {
            command.stdout(Stdio::from(stderr));
        }
        // SAFETY: the closure runs between fork and exec and makes only async-signal-safe calls.
        unsafe {
            command.pre_exec(move || {
                if raw == CHANNEL_FD {
                    // dup2 onto itself keeps close-on-exec: clear it.
                    if libc::fcntl(raw, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(raw, CHANNEL_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // Die with the master, whatever kills it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if let Some(bytes) = memory {
                    let limit = libc::rlimit {
                        rlim_cur: bytes as libc::rlim_t,
                        rlim_max: bytes as libc::rlim_t,
                    };
                    if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| {
            failed(
                &format!("cannot start the worker process {}", program.display()),
                e,
            )
        })?;
        drop(fd);
        Ok(Arc::new(WorkerProcess {
            pid: child.id(),
            child: Mutex::new(child),
            mapping,
            members: members.to_vec(),
            ended: Mutex::new(None),
            memory_limit: options.memory_limit,
        }))
    }

    /// Instantiate `fmu` as the component of slot `slot`; `worker` gives its call timeout.
    pub fn instantiate(
        self: &Arc<Self>,
        slot: usize,
        fmu: &Fmu,
        options: InstanceOptions,
        worker: &WorkerOptions,
    ) -> Result<WorkerSlave> {
        let Some(name) = self.members.get(slot) else {
            return Err(Error::Internal(format!(
                "worker slot {slot} of {}",
                self.members.len()
            )));
        };
        let spec = wire::Instantiation {
            fmu: fmu.archive().root().to_path_buf(),
            name: name.clone(),
            logging_on: options.logging_on,
            log_fmi_calls: options.log_fmi_calls,
            event_mode: options.event_mode,
            early_return: options.early_return,
            sub_steps: options.sub_steps,
            force_sub_steps: options.force_sub_steps,
            debug_categories: options.debug_categories.clone(),
            interface: fmu.interface(),
            solver: options.solver,
        };
        let keep_alive = options
            .keep_alive
            .clone()
            .or_else(|| Some(fmu.archive_handle() as Arc<dyn std::any::Any + Send + Sync>));
        WorkerSlave::start(
            name,
            fmu.description().clone(),
            (self.clone(), Channel::new(&self.mapping, slot)),
            worker.call_timeout,
            &spec,
            (options.call_sink.clone(), options.log_sink.clone()),
            keep_alive,
        )
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The components it hosts.
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// The exit status, once the process has ended.
    fn exited(&self) -> Option<std::process::ExitStatus> {
        lock(&self.child).try_wait().ok().flatten()
    }

    fn kill(&self) {
        let mut child = lock(&self.child);
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The component of slot `k` and the call it was running when the process died, from the
    /// words the worker left (`None`: it was between calls).
    fn running(&self) -> Option<(&str, Option<wire::Code>)> {
        use std::sync::atomic::Ordering::Relaxed;
        let group = self.mapping.group();
        let slot = group.running_slot.load(Relaxed).checked_sub(1)? as usize;
        let name = self.members.get(slot)?;
        Some((name, wire::Code::from_raw(group.running_call.load(Relaxed))))
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        // Every member freed its instance: the worker ends by itself, at once. One that does not
        // within two seconds (or a member could not free its instance) is killed.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        let child = self
            .child
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while std::time::Instant::now() < deadline {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Duplicate stderr as an owned descriptor (for the worker's stdout).
trait StderrFd {
    fn as_fd_owned(&self) -> std::io::Result<std::os::fd::OwnedFd>;
}

impl StderrFd for std::io::Stderr {
    fn as_fd_owned(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::AsFd;
        self.as_fd().try_clone_to_owned()
    }
}
