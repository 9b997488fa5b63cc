//! The shared memory between the master and one worker process.
//!
//! One anonymous memory file (`memfd_create`) mapped by both processes: a page of group words,
//! then one slot per instance the worker hosts. A slot is a [`Channel`]: a header of atomic
//! words, a request region the master writes and a reply region the worker writes. Calls on a
//! slot alternate strictly: the master owns its regions until it publishes a request (bumping
//! the slot's `request` word and then the group's `doorbell`); the worker owns them until it
//! publishes the reply (bumping `reply`). The worker waits for the doorbell, the master for a
//! slot's reply, each by spinning briefly (a call to a fast FMU answers within microseconds;
//! see [`Patience`]) and then sleeping on the word with a futex, which the other side wakes
//! only when the sleeper said it sleeps; no socket, no serialisation framework, no allocation.
//! Requests on several slots of one worker may be in flight at once (the master starts the
//! steps of all of them before it collects the first): the worker serves them in turn.
//!
//! The memory is sparse: pages are allocated only when a call's data touch them, so the
//! generous region sizes cost nothing for small calls.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes of the group page and of a slot's header (one page each, so that the regions start
/// page-aligned).
const HEADER_SIZE: usize = 4096;
/// Bytes of each of a slot's two regions.
pub const REGION_SIZE: usize = 32 << 20;
/// Bytes of one slot.
const SLOT_SIZE: usize = HEADER_SIZE + 2 * REGION_SIZE;
/// The most instances one worker process hosts (the mapping is sparse, but its address space
/// counts against a worker's memory limit: 64 MiB per slot).
pub const MAX_SLOTS: usize = 256;

/// The words of the whole worker process.
#[repr(C, align(64))]
pub struct GroupHeader {
    /// Bumped by the master after it published a request on any slot (the worker's futex
    /// word).
    pub doorbell: AtomicU32,
    _pad0: [u8; 60],
    /// 1 while the worker sleeps on `doorbell` (the master then wakes it).
    pub worker_sleeping: AtomicU32,
    /// 1 + the slot whose request the worker is running (0: none), for crash reports.
    pub running_slot: AtomicU32,
    /// The raw code of the call the worker is running (see [`super::wire::Code::raw`]).
    pub running_call: AtomicU32,
    /// The most the worker may spin waiting for a request, in nanoseconds (set by the master:
    /// zero when the processes outnumber the cores).
    pub worker_spin_ns: AtomicU64,
}

/// The words of one slot. Each sequence word has its own cache line.
#[repr(C, align(64))]
pub struct Header {
    /// Number of the last request the master published on this slot.
    pub request: AtomicU32,
    _pad0: [u8; 60],
    /// Number of the last request the worker answered (the master's futex word).
    pub reply: AtomicU32,
    _pad1: [u8; 60],
    /// 1 while the master sleeps on `reply` (the worker then wakes it).
    pub master_sleeping: AtomicU32,
    /// Bytes of request records in the request region.
    pub request_len: AtomicU64,
    /// Reply: 0 success, 1 an error (the payload is the error), 2 a malformed request.
    pub reply_kind: AtomicU32,
    /// Reply: the instance's lifecycle state after the call.
    pub reply_state: AtomicU32,
    /// Reply: bytes of the payload at the start of the reply region.
    pub reply_len: AtomicU64,
    /// Reply: bytes of forwarded log messages and traced calls after the payload.
    pub events_len: AtomicU64,
    /// Reply: the instance's FMI call count.
    pub call_count: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_SIZE);
const _: () = assert!(std::mem::size_of::<GroupHeader>() <= HEADER_SIZE);

/// One side's mapping of a worker's shared memory.
pub struct Mapping {
    base: *mut u8,
    slots: usize,
}

// SAFETY: the mapping is plain memory; the call protocol decides which process (and, within the
// master, which single owner of a slot) touches a slot's regions at any time.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

fn map_size(slots: usize) -> usize {
    HEADER_SIZE + slots * SLOT_SIZE
}

impl Mapping {
    /// Create the shared memory for `slots` instances (the master's side). The returned
    /// descriptor is close-on-exec; the spawner duplicates it into the worker.
    pub fn create(slots: usize) -> io::Result<(Arc<Mapping>, OwnedFd)> {
        if slots == 0 || slots > MAX_SLOTS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a worker process hosts 1 to {MAX_SLOTS} instances, not {slots}"),
            ));
        }
        // SAFETY: a valid NUL-terminated name; the result is checked.
        let fd = unsafe { libc::memfd_create(c"cosimo-worker".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a valid descriptor; the size fits off_t.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), map_size(slots) as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mapping = Mapping::map(fd.as_raw_fd(), slots)?;
        Ok((Arc::new(mapping), fd))
    }

    /// Map the shared memory handed to a worker as descriptor `fd`.
    pub fn open(fd: RawFd) -> io::Result<Arc<Mapping>> {
        // SAFETY: fstat on a descriptor the caller names; the result is checked.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let size = usize::try_from(stat.st_size).unwrap_or(0);
        let slots = size.saturating_sub(HEADER_SIZE) / SLOT_SIZE;
        if slots == 0 || slots > MAX_SLOTS || map_size(slots) != size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "descriptor {fd} is not a cosimo worker channel ({} bytes)",
                    stat.st_size
                ),
            ));
        }
        Mapping::map(fd, slots).map(Arc::new)
    }

    fn map(fd: RawFd, slots: usize) -> io::Result<Mapping> {
        // SAFETY: a shared mapping of a descriptor of map_size(slots) bytes; checked for
        // MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_size(slots),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            base: base.cast(),
            slots,
        })
    }

    /// How many instances the worker hosts.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The words of the whole worker.
    pub fn group(&self) -> &GroupHeader {
        // SAFETY: the mapping starts with a zero-initialised (memfd) page-aligned GroupHeader,
        // whose fields are atomics; it lives as long as `self`.
        unsafe { &*self.base.cast::<GroupHeader>() }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`.
        unsafe { libc::munmap(self.base.cast(), map_size(self.slots)) };
    }
}

/// One slot of a [`Mapping`]: the channel of one hosted instance.
pub struct Channel {
    mapping: Arc<Mapping>,
    base: *mut u8,
}

// SAFETY: see `Mapping`; a slot has one owner on each side.
unsafe impl Send for Channel {}

impl Channel {
    /// Slot `slot` of `mapping` (`slot < mapping.slots()`).
    pub fn new(mapping: &Arc<Mapping>, slot: usize) -> Channel {
        let slot = slot.min(mapping.slots - 1);
        Channel {
            mapping: mapping.clone(),
            // SAFETY: within the mapping: HEADER_SIZE + slots * SLOT_SIZE bytes.
            base: unsafe { mapping.base.add(HEADER_SIZE + slot * SLOT_SIZE) },
        }
    }

    /// The words of the worker process this slot belongs to.
    pub fn group(&self) -> &GroupHeader {
        self.mapping.group()
    }

    /// The slot's words.
    pub fn header(&self) -> &Header {
        // SAFETY: each slot starts with a zero-initialised (memfd) page-aligned Header, whose
        // fields are atomics; the mapping lives as long as `self`.
        unsafe { &*self.base.cast::<Header>() }
    }

    /// The request region (written by the master, read by the worker).
    ///
    /// # Safety
    /// Only the side that owns the regions in the current turn may hold this slice.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn request_region(&self) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.base.add(HEADER_SIZE), REGION_SIZE)
    }

    /// The reply region (written by the worker, read by the master).
    ///
    /// # Safety
    /// Only the side that owns the regions in the current turn may hold this slice.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn reply_region(&self) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.base.add(HEADER_SIZE + REGION_SIZE), REGION_SIZE)
    }

    /// Publish request `seq` (the master's side): the worker owns the regions from here.
    pub fn publish_request(&self, seq: u32) {
        self.header().request.store(seq, Ordering::SeqCst);
        let group = self.group();
        group.doorbell.fetch_add(1, Ordering::SeqCst);
        if group.worker_sleeping.load(Ordering::SeqCst) != 0 {
            futex_wake(&group.doorbell);
        }
    }
}

/// Publish `value` in `word` and wake the other side if it sleeps on it.
pub fn publish(word: &AtomicU32, sleeping: &AtomicU32, value: u32) {
    word.store(value, Ordering::SeqCst);
    if sleeping.load(Ordering::SeqCst) != 0 {
        futex_wake(word);
    }
}

/// The longest a waiter spins before it sleeps on the futex.
pub const MAX_SPIN: Duration = Duration::from_micros(50);

/// How long one side spins before it sleeps, learned from how long its waits took.
///
/// Spinning answers in well under a microsecond but holds a core; sleeping frees the core but
/// a futex wake-up costs microseconds. A side whose waits are typically short (a fast FMU's
/// step; the master's next call to the only worker) spins a little longer than they take;
/// one whose waits are long (a slow FMU; a worker whose master is busy with other
/// components) sleeps almost at once, so that the processes with work get the cores.
#[derive(Debug, Clone, Copy)]
pub struct Patience {
    /// Exponential moving average of recent waits, in nanoseconds.
    typical_ns: f64,
    /// The most this side may spin.
    limit: Duration,
}

impl Patience {
    /// A side that may spin up to `limit` (zero: always sleep at once).
    pub fn new(limit: Duration) -> Patience {
        Patience {
            typical_ns: 0.0,
            limit: limit.min(MAX_SPIN),
        }
    }

    /// How long to spin in the next wait: the whole limit while waits typically end within it
    /// (a wait that outlasts the spin also pays the other side's wake-up, so spinning less than
    /// the limit would make waits longer, not shorter); a microsecond once they typically take
    /// longer (a reply already on its way).
    pub fn spin(&self) -> Duration {
        if self.typical_ns <= self.limit.as_nanos() as f64 {
            self.limit
        } else {
            Duration::from_micros(1).min(self.limit)
        }
    }

    /// Learn from a wait that took `waited` (capped, so that one long wait, such as the
    /// master writing an output row, does not stop the spinning for long).
    pub fn record(&mut self, waited: Duration) {
        let capped = waited.min(4 * MAX_SPIN).as_nanos() as f64;
        self.typical_ns = 0.875 * self.typical_ns + 0.125 * capped;
    }
}

/// Wait until `word` equals `target`: spin for `spin`, then sleep on the futex in slices of
/// `slice`, calling `between` after every slice (it checks whether the other process lives and
/// whether a deadline passed, and ends the wait with its error). Returns how long it waited.
pub fn wait_for<E>(
    word: &AtomicU32,
    sleeping: &AtomicU32,
    target: u32,
    spin: Duration,
    slice: Duration,
    between: impl FnMut() -> Result<(), E>,
) -> Result<Duration, E> {
    wait_until(word, sleeping, |v| v == target, spin, slice, between)
}

/// Wait until `word` no longer holds `from` (the worker's wait for the doorbell); as
/// [`wait_for`].
pub fn wait_for_change<E>(
    word: &AtomicU32,
    sleeping: &AtomicU32,
    from: u32,
    spin: Duration,
    slice: Duration,
    between: impl FnMut() -> Result<(), E>,
) -> Result<Duration, E> {
    wait_until(word, sleeping, |v| v != from, spin, slice, between)
}

fn wait_until<E>(
    word: &AtomicU32,
    sleeping: &AtomicU32,
    done: impl Fn(u32) -> bool,
    spin: Duration,
    slice: Duration,
    mut between: impl FnMut() -> Result<(), E>,
) -> Result<Duration, E> {
    let start = Instant::now();
    let mut polls = 0u32;
    loop {
        if done(word.load(Ordering::Acquire)) {
            return Ok(start.elapsed());
        }
        polls = polls.wrapping_add(1);
        // Reading the clock costs more than a spin: look at it every 32 spins only.
        if polls.is_multiple_of(32) && start.elapsed() >= spin {
            break;
        }
        std::hint::spin_loop();
    }
    loop {
        sleeping.store(1, Ordering::SeqCst);
        let current = word.load(Ordering::SeqCst);
        if done(current) {
            sleeping.store(0, Ordering::SeqCst);
            return Ok(start.elapsed());
        }
        futex_wait(word, current, slice);
        sleeping.store(0, Ordering::SeqCst);
        if done(word.load(Ordering::Acquire)) {
            return Ok(start.elapsed());
        }
        between()?;
    }
}

/// Sleep while `word` holds `expected`, at most `timeout` (spurious wake-ups are fine: callers
/// loop). A shared (not process-private) futex: the other process wakes it.
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let timeout = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 in shared memory, with a valid timespec.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &timeout as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wake the process sleeping on `word`.
fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32 in shared memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patience_spins_while_waits_are_short_and_backs_off_when_they_are_not() {
        let mut p = Patience::new(MAX_SPIN);
        assert_eq!(p.spin(), MAX_SPIN);
        for _ in 0..20 {
            p.record(Duration::from_micros(3));
        }
        assert_eq!(p.spin(), MAX_SPIN);
        // A slow FMU: every wait outlasts the limit.
        for _ in 0..20 {
            p.record(Duration::from_millis(5));
        }
        assert_eq!(p.spin(), Duration::from_micros(1));
        // Fast again: back to spinning within a few waits.
        for _ in 0..20 {
            p.record(Duration::from_micros(2));
        }
        assert_eq!(p.spin(), MAX_SPIN);
        // A side that may not spin never does.
        assert_eq!(Patience::new(Duration::ZERO).spin(), Duration::ZERO);
    }

    #[test]
    fn a_request_on_any_slot_rings_the_doorbell_of_a_sleeping_worker() {
        let (mapping, _fd) = Mapping::create(3).expect("shared memory");
        let second = Channel::new(&mapping, 1);
        let group = mapping.group();
        let bell = group.doorbell.load(Ordering::SeqCst);
        std::thread::scope(|s| {
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                second.publish_request(1);
            });
            // No spinning: the worker sleeps on the doorbell and must be woken.
            let waited = wait_for_change(
                &group.doorbell,
                &group.worker_sleeping,
                bell,
                Duration::ZERO,
                Duration::from_secs(5),
                || Err::<(), ()>(()),
            );
            assert!(waited.is_ok(), "the doorbell's wake was lost");
        });
        assert_eq!(
            Channel::new(&mapping, 1)
                .header()
                .request
                .load(Ordering::SeqCst),
            1
        );
        assert_eq!(
            Channel::new(&mapping, 0)
                .header()
                .request
                .load(Ordering::SeqCst),
            0
        );
        assert!(Mapping::create(MAX_SLOTS + 1).is_err());
    }

    #[test]
    fn a_wait_ends_when_the_word_is_published_from_another_thread() {
        let (mapping, _fd) = Mapping::create(1).expect("shared memory");
        let channel = Channel::new(&mapping, 0);
        let header = channel.header();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                publish(&header.reply, &header.master_sleeping, 1);
            });
            // No spinning: the waiter sleeps on the futex and must be woken.
            let waited = wait_for(
                &header.reply,
                &header.master_sleeping,
                1,
                Duration::ZERO,
                Duration::from_secs(5),
                || Err::<(), ()>(()),
            );
            assert!(waited.is_ok(), "the futex wake was lost");
        });
    }
}
