//! One system over several ranks: the transport a distributed run talks through, and what
//! travels at each point of the run loop (`distribute/` implements the transport and decides
//! the partition; a single process is the run without ranks).
//!
//! Control is replicated: every rank walks the same loop over the same system, owns some of
//! its components (stepped by their FMUs) and holds a stand-in (`stand_in.rs`) for the others.
//! Under Jacobi and Gauss-Seidel (fixed steps or explicit step control, algebraic loops
//! included) only the targets' owners need the coupling values, which go there point to point
//! (`neighbours.rs`); the controller's error norms are exactly rounded sums each rank adds for
//! its own connections and the ranks merge (`merge_exact_sums`). Under the implicit and
//! constraint algorithms every rank needs every value; what travels then, in a fixed order so
//! that every rank ends with the same bits:
//! - after the components step (Jacobi), one all-gather: per rank its status, its components'
//!   wish to terminate and the sources of the connections it owns, in connection order;
//! - in Gauss-Seidel, after each component's step, one broadcast from its owner of the same;
//! - in the exchange after a step, the sources read fresh (outputs that feed through from an
//!   input) of each stretch of the coupling order that one rank owns: one broadcast from that
//!   rank (`exchange.rs`); at initialization, each source: one broadcast from its owner;
//! - messages whose length every rank knows (statuses, sources, fresh reads) go in one
//!   collective (`all_gather_known`, `broadcast_known`); a rank that failed says so in its
//!   status byte, and its text follows in a second round;
//! - values that owners compute for every rank (estimator probes; in the implicit corrector the
//!   component Jacobian's entries, the feedthrough partials, and the extended coupling's output
//!   derivatives and integrals; in constraint coupling the interface values and the
//!   accelerations' partials; in the reduced interface model the effective mass and force
//!   and the interface state; in an algebraic loop split over ranks each evaluation of the
//!   loop's outputs and its Jacobian's entries): one all-gather per phase (`share_by_owner`),
//!   after which every rank solves the same interface system;
//! - in the reduced interface model, per fast step, one all-gather of the fast components'
//!   forces and links, the wish to terminate and each rank's first failure in one process'
//!   order, or, where one rank owns every fast component, one after the fast loop
//!   (`rim/over_ranks.rs`);
//! - an algebraic loop whose components one rank owns: its coupling values and status, one
//!   broadcast from that rank once it solved the loop (`loops.rs`);
//! - at an output point, one all-gather of the recorded cells each rank owns, so that every
//!   rank holds (and checks) the whole row and rank 0 writes it;
//! - after every other phase in which an FMU can fail, one all-gather of the status.
//!
//! A failure on a rank ends every rank with its message and the rank ([`Error::OnRank`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::exact_sum::{self, ExactSum};
use super::execution::Execution;
use super::record::Cell;
use crate::{Error, Result};

/// How the ranks of one run talk: collective operations that every rank calls in the same
/// order.
pub trait Transport: Send + Sync {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// The ranks that share this rank's host (and its cores), itself included.
    fn ranks_on_host(&self) -> usize {
        1
    }
    /// Every rank's `mine`, in rank order.
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>>;
    /// The bytes of rank `root` (the others pass anything, e.g. nothing).
    fn broadcast(&self, root: usize, bytes: Vec<u8>) -> Vec<u8>;
    /// [`Transport::all_gather`] where every rank knows each rank's length (`lengths`, in rank
    /// order): the ranks' bytes concatenated, in one collective rather than two.
    fn all_gather_known(&self, mine: &[u8], lengths: &[usize]) -> Vec<u8> {
        let _ = lengths;
        self.all_gather(mine).concat()
    }
    /// [`Transport::broadcast`] where every rank knows the length: `bytes` (of that length)
    /// becomes rank `root`'s, in one collective rather than two.
    fn broadcast_known(&self, root: usize, bytes: &mut [u8]) {
        let theirs = self.broadcast(root, bytes.to_vec());
        let n = theirs.len().min(bytes.len());
        bytes[..n].copy_from_slice(&theirs[..n]);
    }
    /// Point to point, not collective: send `outgoing`, cut into consecutive messages by
    /// `sends` = (rank, length), and fill `incoming`, cut likewise by `receives`, with each
    /// of those ranks' next message to this one (both sides know its length). Messages
    /// between two ranks arrive in the order they were sent.
    fn exchange(
        &self,
        outgoing: &[u8],
        sends: &[(usize, usize)],
        incoming: &mut [u8],
        receives: &[(usize, usize)],
    );
}

/// The ranks of a distributed run and which rank owns each component.
#[derive(Clone)]
pub struct Ranks {
    /// The transport, timed: what this rank spends in it is its communication and waiting.
    pub transport: Arc<dyn Transport>,
    /// Per component (in system order): the rank that steps it.
    pub owner: Vec<usize>,
    /// Where this rank's time goes.
    pub clock: Arc<RankClock>,
    /// Each component's stepping time over the run, on its owner (`--partition-out`).
    pub components: Option<Arc<super::pool::TrialClock>>,
}

/// Where a rank's time goes, as the variable-order paper splits it (nanoseconds, summed).
#[derive(Default)]
pub struct RankClock {
    integration: AtomicU64,
    states: AtomicU64,
    communication: AtomicU64,
    /// The threads this rank's components live on (`--parallel`).
    threads: AtomicU64,
}

impl RankClock {
    /// Time the components of this rank spent stepping.
    pub fn integrating(&self, since: Instant) {
        add(&self.integration, since);
    }

    /// Time spent saving and restoring FMU states.
    pub fn saving_states(&self, since: Instant) {
        add(&self.states, since);
    }

    /// The threads this rank's components live on.
    pub fn set_threads(&self, threads: usize) {
        self.threads.store(threads as u64, Ordering::Relaxed);
    }
}

fn add(counter: &AtomicU64, since: Instant) {
    let nanos = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
    counter.fetch_add(nanos, Ordering::Relaxed);
}

/// A rank's time over a run, in seconds: stepping its components, saving and restoring FMU
/// states, in the transport (communication and waiting for the other ranks), and the rest of
/// the run (interface computations: exchange, extrapolation, control).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RankTimes {
    pub rank: usize,
    pub integration: f64,
    pub states: f64,
    pub interface: f64,
    pub communication: f64,
    /// The threads its components lived on (more than one with `--parallel`).
    pub threads: usize,
}

/// A transport that counts the time spent in it.
struct Timed {
    inner: Arc<dyn Transport>,
    clock: Arc<RankClock>,
}

impl Transport for Timed {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn ranks_on_host(&self) -> usize {
        self.inner.ranks_on_host()
    }
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let since = Instant::now();
        let all = self.inner.all_gather(mine);
        add(&self.clock.communication, since);
        all
    }
    fn broadcast(&self, root: usize, bytes: Vec<u8>) -> Vec<u8> {
        let since = Instant::now();
        let bytes = self.inner.broadcast(root, bytes);
        add(&self.clock.communication, since);
        bytes
    }
    fn all_gather_known(&self, mine: &[u8], lengths: &[usize]) -> Vec<u8> {
        let since = Instant::now();
        let all = self.inner.all_gather_known(mine, lengths);
        add(&self.clock.communication, since);
        all
    }
    fn broadcast_known(&self, root: usize, bytes: &mut [u8]) {
        let since = Instant::now();
        self.inner.broadcast_known(root, bytes);
        add(&self.clock.communication, since);
    }
    fn exchange(
        &self,
        outgoing: &[u8],
        sends: &[(usize, usize)],
        incoming: &mut [u8],
        receives: &[(usize, usize)],
    ) {
        let since = Instant::now();
        self.inner.exchange(outgoing, sends, incoming, receives);
        add(&self.clock.communication, since);
    }
}

impl Ranks {
    /// The ranks of `transport`, with the owner of each component (empty: chosen along the
    /// coupling order when the system is instantiated).
    pub fn new(transport: Arc<dyn Transport>, owner: Vec<usize>) -> Ranks {
        let clock = Arc::new(RankClock::default());
        Ranks {
            transport: Arc::new(Timed {
                inner: transport,
                clock: clock.clone(),
            }),
            owner,
            clock,
            components: None,
        }
    }

    /// Every component's stepping time over the run (seconds, on its owner), on every rank
    /// (every rank calls this); empty where the components were not timed.
    pub fn component_seconds(&self) -> Vec<f64> {
        let Some(clock) = &self.components else {
            return Vec::new();
        };
        let me = self.rank();
        let mine: Vec<u8> = (0..self.owner.len())
            .filter(|&i| self.owner[i] == me)
            .flat_map(|i| clock.nanos[i].load(Ordering::Relaxed).to_le_bytes())
            .collect();
        let all = self.transport.all_gather(&mine);
        let mut next = vec![0usize; all.len()];
        (0..self.owner.len())
            .map(|i| {
                let r = self.owner[i];
                let at = next[r];
                next[r] += 8;
                let word = all[r].get(at..at + 8).and_then(|b| b.try_into().ok());
                u64::from_le_bytes(word.unwrap_or_default()) as f64 * 1e-9
            })
            .collect()
    }

    /// Every rank's times over a run that has lasted `total` on this rank (every rank calls
    /// this), in rank order.
    pub fn times(&self, total: Duration) -> Vec<RankTimes> {
        let seconds = |counter: &AtomicU64| counter.load(Ordering::Relaxed) as f64 * 1e-9;
        let mine = [
            seconds(&self.clock.integration),
            seconds(&self.clock.states),
            seconds(&self.clock.communication),
            total.as_secs_f64(),
            self.clock.threads.load(Ordering::Relaxed).max(1) as f64,
        ];
        let bytes: Vec<u8> = mine.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.transport
            .all_gather(&bytes)
            .iter()
            .enumerate()
            .map(|(rank, b)| {
                let x: Vec<f64> = b
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()))
                    .collect();
                let (integration, states, communication, total, threads) = match x[..] {
                    [a, b, c, d, e] => (a, b, c, d, e),
                    _ => (0.0, 0.0, 0.0, 0.0, 1.0),
                };
                RankTimes {
                    rank,
                    integration,
                    states,
                    interface: (total - integration - states - communication).max(0.0),
                    communication,
                    threads: threads as usize,
                }
            })
            .collect()
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    /// Whether this rank steps component `i`.
    pub fn owns(&self, i: usize) -> bool {
        self.owner.get(i) == Some(&self.rank())
    }
}

const OK: u8 = 0;
const FAILED: u8 = 1;

/// A status message: OK, or the failure's text.
fn status_bytes(result: &Result<()>) -> Vec<u8> {
    match result {
        Ok(()) => vec![OK],
        Err(error) => {
            let mut bytes = vec![FAILED, error.exit_code()];
            bytes.extend_from_slice(failure_text(error).as_bytes());
            bytes
        }
    }
}

/// The text of a failure as one process would print it (a failure passed on from another
/// rank keeps its own text).
fn failure_text(error: &Error) -> String {
    match error {
        Error::OnRank { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// The failure in a status message of `rank`, if it is one.
fn failure_in(rank: usize, bytes: &[u8]) -> Option<Error> {
    match bytes.first() {
        Some(&OK) => None,
        _ => Some(Error::OnRank {
            rank,
            code: bytes.get(1).copied().unwrap_or(1),
            message: String::from_utf8_lossy(bytes.get(2..).unwrap_or_default()).into_owned(),
        }),
    }
}

/// Every rank's outcome of a step that may fail on some ranks only: the first failing rank's
/// error on every rank, as [`Error::OnRank`] (every rank must call this).
pub fn agree(transport: &dyn Transport, result: Result<()>) -> Result<()> {
    let all = transport.all_gather(&status_bytes(&result));
    match all.iter().enumerate().find_map(|(r, b)| failure_in(r, b)) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// After a collective of fixed-size messages in which rank `owner` (or any rank) said it
/// failed: every rank's status in full, and the first failure (every rank calls this; `mine`
/// is this rank's outcome).
pub(crate) fn failure_of(transport: &dyn Transport, owner: usize, mine: Result<()>) -> Error {
    match agree(transport, mine) {
        Err(error) => error,
        Ok(()) => Error::Internal(format!("rank {owner} said it failed, then that it did not")),
    }
}

/// After a round in which rank `culprit` failed first (every rank knows which): its failure's
/// text, on every rank (every rank calls this; `mine` is this rank's outcome).
pub(crate) fn failure_from(transport: &dyn Transport, culprit: usize, mine: Result<()>) -> Error {
    let all = transport.all_gather(&status_bytes(&mine));
    all.get(culprit)
        .and_then(|bytes| failure_in(culprit, bytes))
        .unwrap_or_else(|| {
            Error::Internal(format!(
                "rank {culprit} said it failed, then that it did not"
            ))
        })
}

/// The f64 values packed after a status byte.
fn floats(bytes: &[u8]) -> impl Iterator<Item = f64> + '_ {
    bytes[2..]
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap_or_default()))
}

impl Execution {
    /// Every rank's outcome of a phase in which FMUs may fail: the first failing rank's error
    /// on every rank (the same on all, so that all leave the loop at the same point).
    pub(crate) fn agree(&self, result: Result<()>) -> Result<()> {
        match &self.ranks {
            Some(ranks) => agree(ranks.transport.as_ref(), result),
            None => result,
        }
    }

    /// After the components stepped (or their sources were read): the sources each rank owns
    /// to every rank, with the status and the wish to terminate.
    pub(crate) fn share_sources(&mut self, result: Result<()>) -> Result<()> {
        let Some(ranks) = self.ranks.clone() else {
            return result;
        };
        if self.neighbours.is_some() {
            return self.trade_sources(result);
        }
        let me = ranks.rank();
        // Per rank: status, wish to terminate, its sources in connection order. Every rank
        // knows every length, so one collective carries it all (a failure's text follows in a
        // second round).
        let mut lengths = vec![2; ranks.transport.size()];
        for conn in &self.resolved.connections {
            lengths[ranks.owner[conn.from_component]] += 8;
        }
        let mut bytes = vec![0u8; lengths[me]];
        bytes[0] = u8::from(result.is_err());
        if result.is_ok() {
            bytes[1] = u8::from(self.terminate_requested.load(Ordering::Relaxed));
            let owned = self
                .resolved
                .connections
                .iter()
                .enumerate()
                .filter(|(_, conn)| ranks.owner[conn.from_component] == me);
            for ((c, _), word) in owned.zip(bytes[2..].chunks_exact_mut(8)) {
                word.copy_from_slice(&self.after_step[c].load(Ordering::Relaxed).to_le_bytes());
            }
        }
        let all = ranks.transport.all_gather_known(&bytes, &lengths);
        let starts: Vec<usize> = lengths
            .iter()
            .scan(0, |at, &n| {
                *at += n;
                Some(*at - n)
            })
            .collect();
        if starts.iter().any(|&at| all.get(at) != Some(&OK)) {
            return Err(failure_of(ranks.transport.as_ref(), me, result));
        }
        let mut next = starts.clone();
        for (r, &at) in starts.iter().enumerate() {
            if all.get(at + 1) == Some(&1) {
                self.terminate_requested.store(true, Ordering::Relaxed);
            }
            next[r] = at + 2;
        }
        for (c, conn) in self.resolved.connections.iter().enumerate() {
            let at = &mut next[ranks.owner[conn.from_component]];
            let word = all
                .get(*at..*at + 8)
                .and_then(|b| b.try_into().ok())
                .unwrap_or_default();
            self.after_step[c].store(u64::from_le_bytes(word), Ordering::Relaxed);
            *at += 8;
        }
        Ok(())
    }

    /// The estimator's probes (`values`, in probe order, this rank's read by it): each
    /// rank's own to every rank, in one collective.
    pub(crate) fn share_probes(&self, values: &mut [f64], result: Result<()>) -> Result<()> {
        let owners: Vec<usize> = self.probes.iter().map(|&(i, _)| i).collect();
        self.share_by_owner(&owners, values, result)
    }

    /// Values that each component's owner computed (`values[j]` belongs to component
    /// `components[j]`; this rank filled its own, `result` says how that went): every value on
    /// every rank, in one collective whose lengths every rank knows, or the first failure.
    pub(crate) fn share_by_owner(
        &self,
        components: &[usize],
        values: &mut [f64],
        result: Result<()>,
    ) -> Result<()> {
        let Some(ranks) = &self.ranks else {
            return result;
        };
        let me = ranks.rank();
        let mut lengths = vec![1; ranks.transport.size()];
        for &i in components {
            lengths[ranks.owner[i]] += 8;
        }
        let mut bytes = vec![0u8; lengths[me]];
        bytes[0] = u8::from(result.is_err());
        let mine = components.iter().zip(values.iter());
        let mine = mine.filter(|(i, _)| ranks.owner[**i] == me);
        for ((_, x), word) in mine.zip(bytes[1..].chunks_exact_mut(8)) {
            word.copy_from_slice(&x.to_le_bytes());
        }
        let all = ranks.transport.all_gather_known(&bytes, &lengths);
        let mut next: Vec<usize> = lengths
            .iter()
            .scan(0, |at, &n| {
                *at += n;
                Some(*at - n)
            })
            .collect();
        if next.iter().any(|&at| all.get(at) != Some(&OK)) {
            return Err(failure_of(ranks.transport.as_ref(), me, result));
        }
        next.iter_mut().for_each(|at| *at += 1);
        for (&i, x) in components.iter().zip(values.iter_mut()) {
            let at = &mut next[ranks.owner[i]];
            let word = all
                .get(*at..*at + 8)
                .and_then(|b| b.try_into().ok())
                .unwrap_or_default();
            *x = f64::from_le_bytes(word);
            *at += 8;
        }
        Ok(())
    }

    /// Whether this process steps component `i` (every component in one process).
    pub(crate) fn steps_here(&self, i: usize) -> bool {
        self.ranks.as_ref().is_none_or(|ranks| ranks.owns(i))
    }

    /// Gauss-Seidel: after component `i` stepped on its owner, its sources to every rank.
    pub(crate) fn share_component(&mut self, i: usize, result: Result<()>) -> Result<()> {
        let Some(ranks) = self.ranks.clone() else {
            return result;
        };
        let owner = ranks.owner[i];
        let from_i = |c: &usize| self.resolved.connections[*c].from_component == i;
        let sources: Vec<usize> = (0..self.resolved.connections.len())
            .filter(from_i)
            .collect();
        let mut bytes = Vec::new();
        if owner == ranks.rank() {
            bytes = status_bytes(&result);
            if result.is_ok() {
                bytes.push(u8::from(self.terminate_requested.load(Ordering::Relaxed)));
                for &c in &sources {
                    let bits = self.after_step[c].load(Ordering::Relaxed);
                    bytes.extend_from_slice(&bits.to_le_bytes());
                }
            }
        }
        let bytes = ranks.transport.broadcast(owner, bytes);
        if let Some(error) = failure_in(owner, &bytes) {
            return Err(error);
        }
        if bytes.get(1) == Some(&1) {
            self.terminate_requested.store(true, Ordering::Relaxed);
        }
        for (&c, y) in sources.iter().zip(floats(&bytes)) {
            self.after_step[c].store(y.to_bits(), Ordering::Relaxed);
        }
        Ok(())
    }

    /// A value read on the rank that owns `component` (`read` runs there), on every rank.
    pub(crate) fn read_on_owner(
        &mut self,
        component: usize,
        read: impl FnOnce(&mut Execution) -> Result<f64>,
    ) -> Result<f64> {
        let Some(ranks) = self.ranks.clone() else {
            return read(self);
        };
        let owner = ranks.owner[component];
        let mut bytes = Vec::new();
        if owner == ranks.rank() {
            let result = read(self);
            bytes = status_bytes(&result.as_ref().map(|_| ()).map_err(clone_error));
            if let Ok(y) = result {
                bytes.push(0);
                bytes.extend_from_slice(&y.to_le_bytes());
            }
        }
        let bytes = ranks.transport.broadcast(owner, bytes);
        if let Some(error) = failure_in(owner, &bytes) {
            return Err(error);
        }
        let value = floats(&bytes).next();
        value.ok_or_else(|| Error::Internal(format!("no value from rank {owner}")))
    }

    /// At an output point: the cells each rank read for the components it owns, into every
    /// rank's row (`result`: this rank's reading).
    pub(crate) fn share_cells(&self, cells: &mut [Cell], result: Result<()>) -> Result<()> {
        let Some(ranks) = &self.ranks else {
            return result;
        };
        let me = ranks.rank();
        let mut bytes = status_bytes(&result);
        if result.is_ok() {
            bytes.push(0);
            for range in self.owned_cells(ranks, me) {
                for cell in &cells[range] {
                    encode_cell(cell, &mut bytes);
                }
            }
        }
        let all = ranks.transport.all_gather(&bytes);
        if let Some(error) = all.iter().enumerate().find_map(|(r, b)| failure_in(r, b)) {
            return Err(error);
        }
        for (r, bytes) in all.iter().enumerate() {
            if r == me {
                continue;
            }
            let mut at = 2;
            for range in self.owned_cells(ranks, r) {
                for cell in &mut cells[range] {
                    *cell = decode_cell(bytes, &mut at).ok_or_else(|| {
                        Error::Internal(format!("a result row from rank {r} is cut short"))
                    })?;
                }
            }
        }
        Ok(())
    }

    /// The ranges of row cells of the components that rank `r` owns, in component order.
    fn owned_cells(&self, ranks: &Ranks, r: usize) -> Vec<std::ops::Range<usize>> {
        (0..self.resolved.components.len())
            .filter(|&i| ranks.owner[i] == r)
            .filter_map(|i| self.exchange_plan.record_at[i])
            .map(|(k, offset)| offset..offset + self.recordings[k].1.len())
            .collect()
    }

    /// The ranks, where coupling values go point to point (`neighbours.rs`): a value is then
    /// held only by the ranks at its connection's ends, and what is summed or searched over
    /// every connection or probe needs every rank's part.
    pub(crate) fn point_to_point_ranks(&self) -> Option<&Ranks> {
        self.ranks.as_ref().filter(|_| self.neighbours.is_some())
    }

    /// Whether this process holds the values that component `i`'s owner reads or receives
    /// (the inputs into it, its probes): its owner does where values go point to point, every
    /// process elsewhere.
    pub(crate) fn holds_values_of(&self, i: usize) -> bool {
        self.point_to_point_ranks()
            .is_none_or(|ranks| ranks.owns(i))
    }

    /// Under point-to-point values: every rank's part of `sums` merged into each
    /// ([`merge_exact_sums`]); elsewhere every rank added every term already.
    pub(crate) fn merge_sums_over_ranks(&self, sums: &mut [ExactSum]) -> Result<()> {
        match self.point_to_point_ranks() {
            Some(ranks) => merge_exact_sums(ranks.transport.as_ref(), sums),
            None => Ok(()),
        }
    }

    /// The first connection whose coupling value is beyond `limit` in magnitude, and that
    /// value. Where values go point to point each rank looks at the connections into its own
    /// components (only their owners hold them) and one all-gather of 16 bytes per rank finds
    /// the first; elsewhere every rank holds every value.
    pub(crate) fn first_coupling_value_beyond(&self, limit: f64) -> Option<(usize, f64)> {
        let held = |c: &usize| self.holds_values_of(self.resolved.connections[*c].to_component);
        let beyond = |c: &usize| self.values[*c].abs() > limit;
        let mine = (0..self.values.len()).filter(held).find(beyond);
        let Some(ranks) = self.point_to_point_ranks() else {
            return mine.map(|c| (c, self.values[c]));
        };
        let mut bytes = [0u8; 16];
        if let Some(c) = mine {
            bytes[..8].copy_from_slice(&(c as u64).to_le_bytes());
            bytes[8..].copy_from_slice(&self.values[c].to_le_bytes());
        } else {
            bytes[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        }
        let size = ranks.transport.size();
        let all = ranks.transport.all_gather_known(&bytes, &vec![16; size]);
        all.chunks_exact(16)
            .filter_map(|b| {
                let c = u64::from_le_bytes(b[..8].try_into().ok()?);
                let value = f64::from_le_bytes(b[8..].try_into().ok()?);
                Some((usize::try_from(c).ok()?, value))
            })
            .filter(|&(c, _)| c < self.values.len())
            .min_by_key(|&(c, _)| c)
    }

    /// Sum of a count over the ranks.
    pub(crate) fn sum_over_ranks(&self, count: u64) -> u64 {
        match &self.ranks {
            None => count,
            Some(ranks) => ranks
                .transport
                .all_gather(&count.to_le_bytes())
                .iter()
                .map(|b| u64::from_le_bytes(b.as_slice().try_into().unwrap_or_default()))
                .sum(),
        }
    }
}

/// Every rank's part of `sums` merged into each: the same exact sums on every rank whatever
/// the partition. One collective of a few bytes per rank and sum
/// ([`exact_sum::SLOT_BYTES`]); a second carries whole the sums of ranks whose sums did not
/// fit their slots.
pub(crate) fn merge_exact_sums(transport: &dyn Transport, sums: &mut [ExactSum]) -> Result<()> {
    let size = transport.size();
    let mut mine = vec![0u8; sums.len() * exact_sum::SLOT_BYTES];
    let mut fits = true;
    for (sum, slot) in sums
        .iter()
        .zip(mine.chunks_exact_mut(exact_sum::SLOT_BYTES))
    {
        fits &= sum.encode_slot(slot);
    }
    let all = transport.all_gather_known(&mine, &vec![mine.len(); size]);
    let slots: Vec<Option<ExactSum>> = all
        .chunks_exact(exact_sum::SLOT_BYTES)
        .map(ExactSum::decode_slot)
        .collect();
    let whole = if slots.iter().all(Option::is_some) {
        None
    } else {
        let mut bytes = Vec::new();
        if !fits {
            sums.iter().for_each(|s| s.encode(&mut bytes));
        }
        Some(transport.all_gather(&bytes))
    };
    let mut merged = vec![ExactSum::default(); sums.len()];
    for r in 0..size {
        let sent_whole = whole.as_ref().map(|w| &w[r]).filter(|w| !w.is_empty());
        let mut at = 0;
        for (j, total) in merged.iter_mut().enumerate() {
            let part = match sent_whole {
                Some(bytes) => ExactSum::decode(bytes, &mut at),
                None => slots.get(r * sums.len() + j).cloned().flatten(),
            };
            let part = part.ok_or_else(|| {
                Error::Internal(format!(
                    "rank {r} sent an error norm's sum that does not decode"
                ))
            })?;
            total.merge(&part);
        }
    }
    sums.clone_from_slice(&merged);
    Ok(())
}

/// Errors are not `Clone`: the text is what travels.
fn clone_error(error: &Error) -> Error {
    Error::OnRank {
        rank: 0,
        code: error.exit_code(),
        message: failure_text(error),
    }
}

fn encode_cell(cell: &Cell, out: &mut Vec<u8>) {
    let bytes_of = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
    };
    match cell {
        Cell::Float(x) => {
            out.push(0);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Cell::Floats(xs) => {
            out.push(1);
            out.extend_from_slice(&(xs.len() as u64).to_le_bytes());
            xs.iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
        Cell::Int(x) => {
            out.push(2);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Cell::UInt(x) => {
            out.push(3);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Cell::Bool(x) => out.extend_from_slice(&[4, u8::from(*x)]),
        Cell::Text(s) => {
            out.push(5);
            bytes_of(out, s.as_bytes());
        }
        Cell::Bytes(b) => {
            out.push(6);
            bytes_of(out, b);
        }
    }
}

fn decode_cell(bytes: &[u8], at: &mut usize) -> Option<Cell> {
    let mut take = |n: usize| -> Option<&[u8]> {
        let slice = bytes.get(*at..*at + n)?;
        *at += n;
        Some(slice)
    };
    let tag = take(1)?[0];
    let word = |b: &[u8]| -> [u8; 8] { b.try_into().unwrap_or_default() };
    Some(match tag {
        0 => Cell::Float(f64::from_le_bytes(word(take(8)?))),
        1 => {
            let n = u64::from_le_bytes(word(take(8)?)) as usize;
            let mut xs = Vec::with_capacity(n);
            for _ in 0..n {
                xs.push(f64::from_le_bytes(word(take(8)?)));
            }
            Cell::Floats(xs)
        }
        2 => Cell::Int(i64::from_le_bytes(word(take(8)?))),
        3 => Cell::UInt(u64::from_le_bytes(word(take(8)?))),
        4 => Cell::Bool(take(1)?[0] != 0),
        5 | 6 => {
            let n = u64::from_le_bytes(word(take(8)?)) as usize;
            let b = take(n)?.to_vec();
            if tag == 5 {
                Cell::Text(String::from_utf8_lossy(&b).into_owned())
            } else {
                Cell::Bytes(b)
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three ranks add their parts of two sums; rank 1's second sum has more partials than a
    /// slot holds, so it travels whole in a second round. Every rank ends with the exact sums
    /// one process gets.
    #[test]
    fn ranks_merge_exact_sums_also_when_one_does_not_fit_its_slot() {
        let terms: Vec<Vec<f64>> = vec![
            vec![0.1, 0.2, 0.3],
            vec![1e-300, 1e300, 1e-150, 1e150, 1.0],
            vec![0.7, 1e-20],
        ];
        let mut alone = [ExactSum::default(), ExactSum::default()];
        for (r, t) in terms.iter().enumerate() {
            for &x in t {
                alone[0].add(x * (r + 1) as f64);
                alone[1].add(x);
            }
        }
        let merged: Vec<Vec<f64>> = std::thread::scope(|scope| {
            let handles: Vec<_> = crate::distribute::threads::in_process(3)
                .into_iter()
                .map(|transport| {
                    let terms = &terms;
                    scope.spawn(move || {
                        let r = transport.rank();
                        let mut sums = [ExactSum::default(), ExactSum::default()];
                        for &x in &terms[r] {
                            sums[0].add(x * (r + 1) as f64);
                            sums[1].add(x);
                        }
                        let mut slot = [0u8; exact_sum::SLOT_BYTES];
                        assert_eq!(sums[1].encode_slot(&mut slot), r != 1);
                        merge_exact_sums(transport.as_ref(), &mut sums).expect("merges");
                        sums.iter().map(ExactSum::value).collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a rank"))
                .collect()
        });
        for values in merged {
            assert_eq!(values, vec![alone[0].value(), alone[1].value()]);
        }
    }
}
