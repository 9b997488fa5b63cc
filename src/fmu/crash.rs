//! Crash reports for FMU code running in this process.
//!
//! An FMU is foreign code: a segfault, an abort or an arithmetic trap inside one of its calls
//! takes the whole process with it. [`install`] puts a handler on SIGSEGV, SIGBUS, SIGFPE, SIGILL
//! and SIGABRT that writes one line naming the component, the FMI call and the simulation time
//! (and where the results so far are), then ends the process with exit code 1; with
//! `COSIMO_CORE_DUMP=1` in the environment it re-raises the signal instead, for a core dump.
//! Once a run has completed and its results are flushed ([`run_finished`]), a crash while
//! freeing or unloading an FMU (or in an FMU's finaliser at exit) is a warning and the process
//! exits with the run's code.
//!
//! The handler is async-signal-safe: it allocates nothing and takes no lock. Each instance
//! keeps a [`CallRecord`] (its label, pre-formatted, and the FMI call and time, updated with
//! plain atomic stores around every call); each thread that calls FMUs owns a slot of a fixed
//! table naming the record of the call it is in, which the handler finds by thread id. It
//! formats with `core::fmt` into a buffer on its stack and writes with `write(2)`; it runs on an
//! alternate signal stack, so an FMU that overflows its stack is reported too. A crash outside
//! any FMU call goes to the handler that was there before (Rust's stack-overflow report) or
//! kills the process as it would have.

use crate::numbers::Number;
use std::cell::Cell;
use std::ffi::c_void;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

/// The signals the handler reports.
const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
];

/// A time not known (the bits of a NaN no arithmetic produces).
const NO_TIME: u64 = u64::MAX;

/// What one instance (or one library being unloaded) is doing, read by the crash handler.
pub(crate) struct CallRecord {
    /// `component "a"` or `FMU "Model" (/path/lib.so)`: fixed for the record's life.
    label: Box<str>,
    /// The FMI function of the current (or last) call: a `&'static str` as pointer and length.
    call_ptr: AtomicPtr<u8>,
    call_len: AtomicUsize,
    /// The instance's simulation time (bits), [`NO_TIME`] before it has one.
    time: AtomicU64,
}

impl CallRecord {
    /// A record labelled `component "name"`.
    pub(crate) fn component(name: &str) -> Box<CallRecord> {
        Self::labelled(format!("component \"{name}\""))
    }

    /// A record with a label of its own.
    pub(crate) fn labelled(label: String) -> Box<CallRecord> {
        Box::new(CallRecord {
            label: label.into_boxed_str(),
            call_ptr: AtomicPtr::new(std::ptr::null_mut()),
            call_len: AtomicUsize::new(0),
            time: AtomicU64::new(NO_TIME),
        })
    }

    /// The instance's simulation time is now `t` (a step's start, the start time, `fmi*SetTime`).
    #[inline]
    pub(crate) fn set_time(&self, t: f64) {
        self.time.store(t.to_bits(), Ordering::Relaxed);
    }

    /// This thread is about to call `call` of this record's FMU: a crash until [`leave`] is
    /// reported as a crash in it. Two relaxed stores and one release store, no lock.
    #[inline]
    pub(crate) fn enter(&self, call: &'static str) {
        self.call_len.store(call.len(), Ordering::Relaxed);
        self.call_ptr
            .store(call.as_ptr().cast_mut(), Ordering::Relaxed);
        let slot = SLOT.get();
        if let Some(slot) = SLOTS.get(slot) {
            // Release: the handler, on this thread, sees the call before the record.
            slot.current
                .store(std::ptr::from_ref(self).cast_mut(), Ordering::Release);
        } else if slot == UNCLAIMED {
            claim(self);
        }
    }
}

impl Drop for CallRecord {
    /// No thread may name a record that is gone (a call left without [`leave`]).
    fn drop(&mut self) {
        let me = std::ptr::from_mut(self);
        // Only slots ever claimed can name it: a system of 100,000 instances would otherwise
        // pay 1024 exchanges per instance at its end.
        let claimed = CLAIMED.load(Ordering::Acquire).min(THREADS);
        for slot in &SLOTS[..claimed] {
            let _ = slot.current.compare_exchange(
                me,
                std::ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
    }
}

/// The FMI call this thread was in has returned.
#[inline]
pub(crate) fn leave() {
    if let Some(slot) = SLOTS.get(SLOT.get()) {
        slot.current.store(std::ptr::null_mut(), Ordering::Relaxed);
    }
}

/// Threads that can be in an FMU call at once with a report (more are not reported).
const THREADS: usize = 1024;
/// [`SLOT`] of a thread that has not claimed a slot yet.
const UNCLAIMED: usize = usize::MAX;
/// [`SLOT`] of a thread that found the table full, or is ending.
const NO_SLOT: usize = usize::MAX - 1;

/// One thread's entry: its id and the record of the FMU call it is in (null: none).
struct ThreadSlot {
    tid: AtomicI32,
    current: AtomicPtr<CallRecord>,
}

/// One past the highest index of [`SLOTS`] a thread has claimed (slots are taken lowest first).
static CLAIMED: AtomicUsize = AtomicUsize::new(0);

static SLOTS: [ThreadSlot; THREADS] = [const {
    ThreadSlot {
        tid: AtomicI32::new(0),
        current: AtomicPtr::new(std::ptr::null_mut()),
    }
}; THREADS];

thread_local! {
    /// This thread's index in [`SLOTS`] (or [`UNCLAIMED`], [`NO_SLOT`]).
    static SLOT: Cell<usize> = const { Cell::new(UNCLAIMED) };
    /// Frees this thread's slot and alternate stack when the thread ends.
    static RELEASE: Release = const { Release { stack: Cell::new(None) } };
}

/// Gives back a thread's slot and unmaps the alternate stack it was given.
struct Release {
    /// The alternate signal stack mapped for this thread (start, length), if one was.
    stack: Cell<Option<(usize, usize)>>,
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(slot) = SLOTS.get(SLOT.replace(NO_SLOT)) {
            slot.current.store(std::ptr::null_mut(), Ordering::Relaxed);
            slot.tid.store(0, Ordering::Release);
        }
        if let Some((start, len)) = self.stack.take() {
            drop_alternate_stack(start, len);
        }
    }
}

/// The calling thread's id.
fn thread_id() -> i32 {
    // SAFETY: gettid takes no argument and cannot fail; it is async-signal-safe.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// First FMU call of this thread: take a free slot (and, with the handler installed, give
/// the thread an alternate signal stack), then record `record` as its current call.
#[cold]
fn claim(record: &CallRecord) {
    let tid = thread_id();
    let index = SLOTS.iter().position(|slot| {
        slot.tid
            .compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    });
    let Some(index) = index else {
        SLOT.set(NO_SLOT);
        return;
    };
    CLAIMED.fetch_max(index + 1, Ordering::AcqRel);
    SLOT.set(index);
    STACK_LOWS[index].store(stack_low(), Ordering::Relaxed);
    // Registers the release at thread exit (a thread past its destructors records nothing).
    let registered = RELEASE.try_with(|release| {
        if INSTALLED.load(Ordering::Acquire) && release.stack.get().is_none() {
            release.stack.set(alternate_stack());
        }
    });
    if registered.is_err() {
        SLOT.set(NO_SLOT);
        SLOTS[index].tid.store(0, Ordering::Release);
        return;
    }
    SLOTS[index]
        .current
        .store(std::ptr::from_ref(record).cast_mut(), Ordering::Release);
}

/// Bytes of the alternate signal stacks this module maps.
const ALTERNATE_STACK: usize = 64 << 10;

/// Give this thread an alternate signal stack large enough for the handler, unless it has
/// one already; returns the mapping made (to unmap at thread exit).
fn alternate_stack() -> Option<(usize, usize)> {
    // SAFETY: sigaltstack with a null new stack only reads the current one into `old`.
    let mut old: libc::stack_t = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigaltstack(std::ptr::null(), &mut old) } != 0 {
        return None;
    }
    if old.ss_flags & libc::SS_DISABLE == 0 && old.ss_size >= ALTERNATE_STACK {
        return None;
    }
    let page = 4096;
    let len = ALTERNATE_STACK + page;
    // SAFETY: a fresh anonymous private mapping; nothing else refers to it.
    let start = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if start == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: the lowest page of the mapping becomes a guard page (the stack grows down).
    unsafe { libc::mprotect(start, page, libc::PROT_NONE) };
    let stack = libc::stack_t {
        // SAFETY: within the mapping, above the guard page.
        ss_sp: unsafe { start.cast::<u8>().add(page) }.cast(),
        ss_flags: 0,
        ss_size: ALTERNATE_STACK,
    };
    // SAFETY: the stack is mapped and stays so until this thread's `Release` disables it.
    if unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) } != 0 {
        // SAFETY: the mapping made above, used by nobody.
        unsafe { libc::munmap(start, len) };
        return None;
    }
    Some((start as usize, len))
}

/// At thread exit: stop using the alternate stack mapped at `start` (if it is still this
/// thread's) and unmap it.
fn drop_alternate_stack(start: usize, len: usize) {
    // SAFETY: reads the current alternate stack.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::sigaltstack(std::ptr::null(), &mut current) } != 0 {
        return; // keep the mapping: it may still be in use
    }
    let ours = current.ss_flags & libc::SS_DISABLE == 0
        && (current.ss_sp as usize) > start
        && (current.ss_sp as usize) < start + len;
    if ours {
        let disable = libc::stack_t {
            ss_sp: std::ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        // SAFETY: disabling the alternate stack of this thread, which is not on it.
        if unsafe { libc::sigaltstack(&disable, std::ptr::null_mut()) } != 0 {
            return;
        }
    }
    // SAFETY: the mapping made by `alternate_stack`, no longer this thread's signal stack.
    unsafe { libc::munmap(start as *mut c_void, len) };
}

static INSTALLED: AtomicBool = AtomicBool::new(false);
static CORE_DUMP: AtomicBool = AtomicBool::new(false);
/// The hint on isolation (a leaked `&'static str`, set once by [`install`]).
static HINT: AtomicPtr<&'static str> = AtomicPtr::new(std::ptr::null_mut());
/// The exit code of the run once it completed and its results are flushed; -1 before.
static FINISHED: AtomicI32 = AtomicI32::new(-1);
/// The time of the last result row known to be on disk (bits), [`NO_TIME`] if none is known.
static ON_DISK: AtomicU64 = AtomicU64::new(NO_TIME);
/// The results file, as it is to be shown (a leaked `String`; null: unknown).
static RESULTS: AtomicPtr<String> = AtomicPtr::new(std::ptr::null_mut());
/// The FMUs loaded in this process, for a crash at exit that no call can be blamed for (a
/// leaked `String`, set by [`run_finished`]).
static LOADED_TEXT: AtomicPtr<String> = AtomicPtr::new(std::ptr::null_mut());
/// The FMUs loaded so far, as they are to be named.
static LOADED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The dispositions the handler replaced, in the order of [`SIGNALS`] (written once by
/// [`install`] before the handler is in place, only read afterwards).
struct Previous(std::cell::UnsafeCell<[Option<libc::sigaction>; 5]>);
// SAFETY: written once under `INSTALL` before any handler that reads it is installed.
unsafe impl Sync for Previous {}
static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new([None; 5]));
static INSTALL: Once = Once::new();

/// Install the crash handler for this process (once; later calls do nothing). `hint` ends
/// the report of a crash in an FMU call: how to run FMUs so that a crash does not end the
/// process (`--isolate`, `isolate=True`). `COSIMO_CORE_DUMP=1` re-raises the signal after the
/// report, for a core dump.
pub fn install(hint: &'static str) {
    INSTALL.call_once(|| {
        let core = std::env::var_os("COSIMO_CORE_DUMP")
            .is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
        CORE_DUMP.store(core, Ordering::Relaxed);
        HINT.store(Box::into_raw(Box::new(hint)), Ordering::Release);
        // SAFETY: written before the handlers that read it are installed.
        let previous = unsafe { &mut *PREVIOUS.0.get() };
        for (k, &signal) in SIGNALS.iter().enumerate() {
            // SAFETY: a zeroed sigaction is a valid value to fill in.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = handle as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            // SAFETY: an empty mask is valid.
            unsafe { libc::sigemptyset(&mut action.sa_mask) };
            // SAFETY: as above.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: valid pointers; the handler is async-signal-safe (see `handle`).
            if unsafe { libc::sigaction(signal, &action, &mut old) } == 0 {
                previous[k] = Some(old);
            }
        }
        INSTALLED.store(true, Ordering::Release);
    });
    // The installing thread calls FMUs too (`cosimo run` steps them on the main thread).
    if SLOT.get() == UNCLAIMED {
        let _ = RELEASE.try_with(|release| {
            if release.stack.get().is_none() {
                release.stack.set(alternate_stack());
            }
        });
    }
}

/// Put back the dispositions [`install`] replaced: a worker process dies of its FMU's signal,
/// which its master reports.
pub fn uninstall() {
    if !INSTALLED.swap(false, Ordering::AcqRel) {
        return;
    }
    // SAFETY: written once by `install`, which has completed (INSTALLED was true).
    let previous = unsafe { &*PREVIOUS.0.get() };
    for (k, &signal) in SIGNALS.iter().enumerate() {
        if let Some(old) = &previous[k] {
            // SAFETY: restores a disposition the system gave us.
            unsafe { libc::sigaction(signal, old, std::ptr::null_mut()) };
        }
    }
}

/// Name `label` (`FMU "Model" (path)`) among the FMUs loaded in this process.
pub(crate) fn loaded(label: String) {
    if let Ok(mut loaded) = LOADED.lock() {
        if !loaded.contains(&label) && loaded.len() < 64 {
            loaded.push(label);
        }
    }
}

/// Where the results of the run go: named in a crash report.
pub fn results_file(path: &std::path::Path) {
    let shown = Box::into_raw(Box::new(path.display().to_string()));
    // The previous text stays allocated: the handler may be reading it on another thread.
    RESULTS.store(shown, Ordering::Release);
}

/// The result rows up to time `t` are on disk (flushed): named in a crash report.
pub fn row_on_disk(t: f64) {
    ON_DISK.store(t.to_bits(), Ordering::Relaxed);
}

/// A run starts: a crash is an error again, and no row of it is on disk yet.
pub fn run_started() {
    FINISHED.store(-1, Ordering::Release);
    ON_DISK.store(NO_TIME, Ordering::Relaxed);
}

/// The run completed with exit code `code` and its results are flushed: a crash from now on
/// (freeing the instances, unloading the FMUs, an FMU's finaliser at exit) is reported as a
/// warning and the process exits with `code`. What [`tear_down_later`] kept is freed now.
pub fn run_finished(code: u8) {
    let names = LOADED.lock().map(|l| l.join(", ")).unwrap_or_default();
    if !names.is_empty() {
        LOADED_TEXT.store(Box::into_raw(Box::new(names)), Ordering::Release);
    }
    FINISHED.store(i32::from(code), Ordering::Release);
    let kept = DEFERRED
        .lock()
        .map(|mut deferred| deferred.take())
        .unwrap_or_default();
    // Dropped here, one by one in the order they came, not under the lock.
    drop(kept);
}

/// What frees or unloads FMU code, kept by [`tear_down_later`] until [`run_finished`] once
/// [`defer_teardown`] asked for it (`None`: dropped at once).
type Kept = Vec<Box<dyn Send>>;
static DEFERRED: Mutex<Option<Kept>> = Mutex::new(None);

/// A command that makes several runs in this process before it knows its exit code (`cosimo
/// check`) keeps their FMU instances and libraries until it calls [`run_finished`] with that
/// code: an FMU that crashes while it is freed or unloaded then costs a warning, not the
/// command's report.
pub fn defer_teardown() {
    if let Ok(mut deferred) = DEFERRED.lock() {
        deferred.get_or_insert_with(Vec::new);
    }
}

/// Drop `item` (an execution with its FMU instances and libraries): now, or after
/// [`defer_teardown`] at [`run_finished`].
pub fn tear_down_later(item: Box<dyn Send>) {
    let item = match DEFERRED.lock() {
        Ok(mut deferred) => match deferred.as_mut() {
            Some(kept) => {
                kept.push(item);
                return;
            }
            None => item,
        },
        Err(_) => item,
    };
    drop(item);
}

/// A fixed buffer on the handler's stack; what does not fit is cut.
struct Line {
    bytes: [u8; 2048],
    len: usize,
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = self.bytes.len() - self.len;
        let n = s.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// "SIGSEGV, a memory access violation": what the signal means, as the worker's reports say it.
pub(crate) fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGSEGV => "SIGSEGV, a memory access violation",
        libc::SIGABRT => "SIGABRT, the FMU aborted",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE, an arithmetic exception",
        libc::SIGILL => "SIGILL, an illegal instruction",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGPIPE => "SIGPIPE",
        _ => "a signal",
    }
}

/// Read a value published through `pointer`.
///
/// # Safety
/// `pointer` holds null or a pointer from `Box::into_raw` that is never freed.
unsafe fn published<T: 'static>(pointer: &AtomicPtr<T>) -> Option<&'static T> {
    let p = pointer.load(Ordering::Acquire);
    // SAFETY: by the caller's promise, null or a leaked, immutable value.
    unsafe { p.as_ref() }
}

/// The crashing thread's slot, and the record of the FMU call it is in, if it is in one.
fn current_record() -> (Option<usize>, Option<&'static CallRecord>) {
    let tid = thread_id();
    let Some(index) = SLOTS
        .iter()
        .position(|slot| slot.tid.load(Ordering::Acquire) == tid)
    else {
        return (None, None);
    };
    let record = SLOTS[index].current.load(Ordering::Acquire);
    // SAFETY: `current` is non-null only while this thread is inside an FMI call of the
    // instance (or the unload of the library) that owns the record, which lives at least as
    // long as that call; the handler runs on this very thread, within that call.
    (Some(index), unsafe { record.as_ref() })
}

/// The signal handler: report, then end the process (see the module documentation).
extern "C" fn handle(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let (index, record) = current_record();
    let finished = FINISHED.load(Ordering::Acquire);
    if record.is_none() && finished < 0 {
        chain(signal, info, context);
        return;
    }
    let mut line = Line {
        bytes: [0; 2048],
        len: 0,
    };
    // The signal's name, and what it likely was.
    let what = match (signal, record) {
        (libc::SIGSEGV, Some(_)) if near_stack(index, info) => ": the stack overflowed",
        _ => "",
    };
    let cause = format_args!("signal {signal} ({}{what})", signal_name(signal));
    let _ = match record {
        Some(record) => {
            // SAFETY: pointer and length of a `&'static str`, stored by `enter` on this thread
            // before the record was published as current.
            let call = unsafe {
                let len = record.call_len.load(Ordering::Relaxed);
                let ptr = record.call_ptr.load(Ordering::Relaxed);
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(ptr, len))
            };
            let severity = if finished >= 0 { "warning" } else { "error" };
            write!(
                line,
                "{severity}: {}: the FMU crashed with {cause} during {call}",
                record.label
            )
            .and_then(|()| {
                let time = record.time.load(Ordering::Relaxed);
                match (time, call.ends_with("DoStep")) {
                    (NO_TIME, _) => Ok(()),
                    (bits, true) => write!(line, " from t = {}", Number(f64::from_bits(bits))),
                    (bits, false) => write!(line, " at t = {}", Number(f64::from_bits(bits))),
                }
            })
        }
        None => write!(
            line,
            "warning: the process crashed with {cause} while ending, after the run had \
             completed (in the finaliser of an FMU{}{})",
            // SAFETY: LOADED_TEXT holds null or a leaked String.
            match unsafe { published(&LOADED_TEXT) } {
                Some(_) => ": ",
                None => "",
            },
            // SAFETY: as above.
            unsafe { published(&LOADED_TEXT) }.map_or("", String::as_str),
        ),
    };
    // SAFETY: RESULTS holds null or a leaked String.
    let results = unsafe { published(&RESULTS) };
    let _ = if finished >= 0 {
        match results {
            Some(file) => write!(
                line,
                "; the run had completed and its results in {file} are complete; exit code {finished}"
            ),
            None => write!(
                line,
                "; the run had completed and its results are complete; exit code {finished}"
            ),
        }
    } else {
        let on_disk = ON_DISK.load(Ordering::Relaxed);
        let kept = match (results, on_disk) {
            (Some(file), NO_TIME) => write!(line, "; no result row is in {file} yet"),
            (Some(file), bits) => write!(
                line,
                "; results up to t = {} are in {file}",
                Number(f64::from_bits(bits))
            ),
            _ => Ok(()),
        };
        // SAFETY: HINT holds null or a leaked `&'static str`.
        kept.and_then(|()| match unsafe { published(&HINT) } {
            Some(hint) if !hint.is_empty() => write!(line, "; {hint}"),
            _ => Ok(()),
        })
    };
    if line.len == line.bytes.len() {
        line.len -= 1;
    }
    line.bytes[line.len] = b'\n';
    line.len += 1;
    // SAFETY: write(2) of bytes on this stack; async-signal-safe.
    let _ = unsafe { libc::write(2, line.bytes.as_ptr().cast(), line.len) };
    if CORE_DUMP.load(Ordering::Relaxed) {
        reraise(signal);
    }
    let code = if finished >= 0 { finished } else { 1 };
    // SAFETY: ends the process at once, without unwinding or running finalisers (which may
    // run the crashed FMU's code again).
    unsafe { libc::_exit(code) };
}

/// Whether a SIGSEGV's address lies in the guard area just below the stack of the thread
/// in slot `index`: a stack that overflowed.
fn near_stack(index: Option<usize>, info: *mut libc::siginfo_t) -> bool {
    let Some(low) = index.and_then(|k| STACK_LOWS.get(k)) else {
        return false;
    };
    let low = low.load(Ordering::Relaxed);
    if info.is_null() || low == 0 {
        return false;
    }
    // SAFETY: the kernel's siginfo of a SIGSEGV, whose address field is valid.
    let address = unsafe { (*info).si_addr() } as usize;
    address < low.saturating_add(4096) && address.saturating_add(1 << 20) >= low
}

/// The low ends of the stacks of the threads that claimed a slot (index as in [`SLOTS`]).
static STACK_LOWS: [AtomicUsize; THREADS] = [const { AtomicUsize::new(0) }; THREADS];

/// The lowest address of the calling thread's stack, if the system says.
fn stack_low() -> usize {
    // SAFETY: pthread_getattr_np fills `attr` for the calling thread, destroyed after use.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return 0;
        }
        let mut address: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        let ok = libc::pthread_attr_getstack(&attr, &mut address, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if ok {
            address as usize
        } else {
            0
        }
    }
}

/// Hand a crash outside any FMU call to the handler that was there before (Rust's report of
/// a stack overflow), or let it kill the process as it would have.
fn chain(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let k = SIGNALS.iter().position(|&s| s == signal);
    // SAFETY: written once before the handler was installed, read-only since.
    let previous = k.and_then(|k| unsafe { (*PREVIOUS.0.get())[k] });
    match previous {
        Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
            if old.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous handler was installed with SA_SIGINFO: this signature.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut c_void) =
                    unsafe { std::mem::transmute(old.sa_sigaction) };
                f(signal, info, context);
            } else {
                // SAFETY: a plain handler.
                let f: extern "C" fn(libc::c_int) =
                    unsafe { std::mem::transmute(old.sa_sigaction) };
                f(signal);
            }
        }
        _ => reraise(signal),
    }
}

/// Restore the default action of `signal` and deliver it again: the process ends by the
/// signal (with a core dump where the system makes one).
fn reraise(signal: libc::c_int) {
    // SAFETY: async-signal-safe calls on valid arguments.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
        // A fault signal returns here only if blocked elsewhere: end as the signal would.
        libc::_exit(128 + signal);
    }
}
