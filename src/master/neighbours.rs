//! What crosses ranks point to point (DESIGN decision 12), where no rank needs the coupling
//! values of connections into other ranks' components: Jacobi and Gauss-Seidel at fixed
//! steps or under explicit step control. There a connection's value
//! is used only by the rank that owns its target (to set the input and extrapolate it), so
//! each value goes from its source's owner to its target's owner, packed in one message per
//! pair of neighbouring ranks, and one small round of statuses ([`STATUS`] bytes per rank)
//! tells every rank whether any failed or asked to stop, unless every rank heard from every
//! other already. What else needs values over all connections is reduced: the step
//! controller's error norms are exactly rounded sums (`exact_sum.rs`) that each rank adds for
//! the connections into its own components and the ranks merge in one small collective, and
//! a divergence limit is checked by the targets' owners, who agree on the first value beyond
//! it. An algebraic loop in the exchange is solved by every rank together (`loops.rs`, which
//! leaves the loop's values on every rank), after a status round. Under the implicit and
//! constraint algorithms every rank needs every value, and the collectives of `transport.rs`
//! carry them.
//!
//! Three rounds use it: after a Jacobi step (or a read of every source), the sources of each
//! owner; in a Gauss-Seidel sweep, after each stretch of consecutive components of one owner,
//! their sources; in the exchange after a step, after each stretch of the exchange plan that
//! one rank owns, its fresh reads. A rank that fails (or hears of a failure) in a stretch does
//! no more FMU work in that round but still sends what the others wait for, marked failed, so
//! that no rank waits forever; the status round then names the failure one process would have
//! met first.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::exchange::{ExchangePlan, Part};
use super::execution::Execution;
use super::transport::failure_from;
use crate::system::graph::CouplingGraph;
use crate::system::resolve::ResolvedSystem;
use crate::Result;

/// The owner of a stretch of algebraic loops in the exchange, which every rank solves
/// together (`loops::solve`).
const LOOPS: usize = usize::MAX;

/// Bytes of a rank's status: failed, wants to terminate, and where it failed (u32).
pub const STATUS: usize = 6;

/// What this rank sends and receives point to point in each round of a run over ranks.
#[derive(Debug, Clone)]
pub(crate) struct Neighbours {
    /// After the components stepped (Jacobi) or their sources were read.
    pub sources: Round,
    /// A Gauss-Seidel sweep: stretches of the sweep order (indices into it).
    pub sweep: Vec<Stretch>,
    /// The exchange after a step: stretches of the exchange plan's parts.
    pub exchange: Vec<Stretch>,
    /// Every stretch of the exchange reaches every other rank (no status round after it).
    pub exchange_complete: bool,
    /// The same for the sweep.
    pub sweep_complete: bool,
}

/// One round of messages: the connections whose values this rank sends to each other rank,
/// and those each other rank sends it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Round {
    /// (rank, connections), in rank order.
    pub to: Vec<(usize, Vec<usize>)>,
    pub from: Vec<(usize, Vec<usize>)>,
    /// Every rank hears from every other in this round: the statuses ride in the messages.
    pub complete: bool,
    /// The messages of `to` and `from` as (rank, bytes), packed one after the other in
    /// `outgoing` and `incoming`: laid out once, so that a round allocates nothing.
    sends: Vec<(usize, usize)>,
    receives: Vec<(usize, usize)>,
    outgoing: Vec<u8>,
    incoming: Vec<u8>,
    /// The statuses heard in the last round, as (rank, status).
    heard: Vec<(usize, Status)>,
}

/// Consecutive items (sweep positions or exchange parts) of one owner, and the round after
/// them (only the owner sends).
#[derive(Debug, Clone)]
pub(crate) struct Stretch {
    pub owner: usize,
    pub items: Range<usize>,
    pub round: Round,
}

/// A rank's outcome of a round, as the status round carries it.
#[derive(Debug, Clone, Copy, Default)]
struct Status {
    failed: bool,
    terminate: bool,
    /// Where it failed (a stretch's index): the first place one process would have failed.
    at: u32,
}

/// A rank's walk over the stretches of a round: its own status, its first failure, and
/// whether it failed or heard of a failure (then it does no more FMU work in the round, but
/// still sends what the others wait for, marked failed).
struct Walk {
    mine: Status,
    result: Result<()>,
    poisoned: bool,
}

impl Walk {
    fn new() -> Walk {
        Walk {
            mine: Status::default(),
            result: Ok(()),
            poisoned: false,
        }
    }

    /// This rank failed in stretch `s`.
    fn failed(&mut self, s: usize, error: crate::Error) {
        self.poisoned = true;
        self.result = Err(error);
        self.mine.failed = true;
        self.mine.at = s as u32;
    }

    /// What this rank tells a stretch's receivers.
    fn sent(&self) -> Status {
        Status {
            failed: self.poisoned,
            ..self.mine
        }
    }
}

impl Neighbours {
    /// The rounds of `resolved` for rank `me` of `size`, component `i` owned by `owner[i]`;
    /// `None` where some rank needs every coupling value (see the module documentation).
    pub fn plan(
        resolved: &ResolvedSystem,
        graph: &CouplingGraph,
        exchange: &ExchangePlan,
        (me, size, owner): (usize, usize, &[usize]),
    ) -> Option<Neighbours> {
        use crate::settings::Algorithm;
        let experiment = &resolved.system.experiment;
        let explicit = match &experiment.algorithm {
            // Explicit step control needs only norms, which the ranks add exactly.
            Algorithm::Jacobi(explicit) | Algorithm::GaussSeidel(explicit) => explicit
                .control
                .as_ref()
                .is_none_or(|control| !control.estimator.is_implicit()),
            _ => false,
        };
        if !explicit {
            return None;
        }
        let from = |c: usize| owner[resolved.connections[c].from_component];
        let to = |c: usize| owner[resolved.connections[c].to_component];
        let crossing = |c: &usize| from(*c) != to(*c);
        let all: Vec<usize> = (0..resolved.connections.len()).filter(crossing).collect();
        let sources = round(
            (me, size),
            0..size,
            all.iter().map(|&c| (c, from(c), to(c))),
        );

        let order = &graph.gauss_seidel_order;
        let sweep: Vec<Stretch> = stretches(order.len(), |k| owner[order[k]])
            .into_iter()
            .map(|(sender, items)| {
                let theirs: HashSet<usize> = items.clone().map(|k| order[k]).collect();
                let sent = all
                    .iter()
                    .filter(|&&c| theirs.contains(&resolved.connections[c].from_component))
                    .map(|&c| (c, sender, to(c)));
                Stretch {
                    owner: sender,
                    round: round((me, size), [sender].into_iter(), sent),
                    items,
                }
            })
            .collect();

        let part_owner = |k: usize| match &exchange.parts[k] {
            Part::Component { component, .. } => owner[*component],
            Part::Loop(_) => LOOPS,
        };
        let exchange: Vec<Stretch> = stretches(exchange.parts.len(), part_owner)
            .into_iter()
            .map(|(sender, items)| {
                let reads = reads(exchange, items.clone());
                let sent = reads
                    .into_iter()
                    .filter(|&c| to(c) != sender)
                    .map(|c| (c, sender, to(c)));
                Stretch {
                    owner: sender,
                    round: round((me, size), [sender].into_iter(), sent),
                    items,
                }
            })
            .collect();
        let complete = |stretches: &[Stretch]| stretches.iter().all(|s| s.round.complete);
        Some(Neighbours {
            sources,
            exchange_complete: size == 1 || complete(&exchange),
            sweep_complete: size == 1 || complete(&sweep),
            sweep,
            exchange,
        })
    }
}

/// The connections read fresh in `parts` of the exchange plan, in order.
fn reads(plan: &ExchangePlan, parts: Range<usize>) -> Vec<usize> {
    plan.parts[parts]
        .iter()
        .flat_map(|part| match part {
            Part::Component { accesses, .. } => accesses.clone(),
            Part::Loop(_) => 0..0,
        })
        .map(|a| plan.accesses[a])
        .filter(|access| access.read)
        .map(|access| access.connection)
        .collect()
}

/// Runs of consecutive indices below `n` with the same `owner_of`.
fn stretches(n: usize, owner_of: impl Fn(usize) -> usize) -> Vec<(usize, Range<usize>)> {
    let mut runs: Vec<(usize, Range<usize>)> = Vec::new();
    for k in 0..n {
        let owner = owner_of(k);
        match runs.last_mut() {
            Some((last, items)) if *last == owner => items.end = k + 1,
            _ => runs.push((owner, k..k + 1)),
        }
    }
    runs
}

/// The round of `sent` (connection, sending rank, receiving rank) seen from rank `me` of
/// `size`, in which the ranks `senders` send (every rank, or a stretch's owner). On two ranks a
/// sender with no value for the other sends its status alone (6 bytes): then each rank hears
/// the other in every round, which spares the status all-gather after it.
fn round(
    (me, size): (usize, usize),
    senders: impl Iterator<Item = usize>,
    sent: impl Iterator<Item = (usize, usize, usize)>,
) -> Round {
    let mut to: Vec<Option<Vec<usize>>> = vec![None; size];
    let mut from: Vec<Option<Vec<usize>>> = vec![None; size];
    let mut pairs = HashSet::new();
    let mut add = |sender: usize, receiver: usize, c: Option<usize>| {
        pairs.insert((sender, receiver));
        for (end, lists, other) in [(sender, &mut to, receiver), (receiver, &mut from, sender)] {
            if end == me {
                let list = lists[other].get_or_insert_with(Vec::new);
                list.extend(c);
            }
        }
    };
    for (c, sender, receiver) in sent {
        add(sender, receiver, Some(c));
    }
    let mut count = 0;
    for sender in senders.filter(|&r| r < size) {
        count += 1;
        if size == 2 {
            add(sender, 1 - sender, None);
        }
    }
    let keep = |lists: Vec<Option<Vec<usize>>>| -> Vec<(usize, Vec<usize>)> {
        lists
            .into_iter()
            .enumerate()
            .filter_map(|(r, list)| list.map(|list| (r, list)))
            .collect()
    };
    let (to, from) = (keep(to), keep(from));
    let message = |(r, list): &(usize, Vec<usize>)| (*r, STATUS + 8 * list.len());
    let sends: Vec<(usize, usize)> = to.iter().map(message).collect();
    let receives: Vec<(usize, usize)> = from.iter().map(message).collect();
    Round {
        outgoing: vec![0; sends.iter().map(|m| m.1).sum()],
        incoming: vec![0; receives.iter().map(|m| m.1).sum()],
        heard: Vec::with_capacity(from.len()),
        complete: count > 0 && pairs.len() == count * (size - 1),
        to,
        from,
        sends,
        receives,
    }
}

impl Execution {
    /// Send this rank's values of `round` (`value(c)`, as bits) after `status`, and receive
    /// the others' (`store(c, bits)`, only from ranks that did not fail); the statuses heard
    /// are left in `round.heard`.
    fn trade(
        &mut self,
        round: &mut Round,
        status: Status,
        value: impl Fn(&Execution, usize) -> u64,
        mut store: impl FnMut(&mut Execution, usize, u64),
    ) {
        round.heard.clear();
        let Some(ranks) = self.ranks.clone() else {
            return;
        };
        let mut at = 0;
        for (_, list) in &round.to {
            round.outgoing[at..at + STATUS].copy_from_slice(&encode(status));
            at += STATUS;
            for &c in list {
                round.outgoing[at..at + 8].copy_from_slice(&value(self, c).to_le_bytes());
                at += 8;
            }
        }
        ranks.transport.exchange(
            &round.outgoing,
            &round.sends,
            &mut round.incoming,
            &round.receives,
        );
        let mut at = 0;
        for (r, list) in &round.from {
            let bytes = &round.incoming[at..at + STATUS + 8 * list.len()];
            at += bytes.len();
            let theirs = decode(bytes);
            if !theirs.failed {
                for (&c, word) in list.iter().zip(bytes[STATUS..].chunks_exact(8)) {
                    store(
                        self,
                        c,
                        u64::from_le_bytes(word.try_into().unwrap_or_default()),
                    );
                }
            }
            round.heard.push((*r, theirs));
        }
    }

    /// Every rank's status after a round (`heard` from the round itself where it reached
    /// every rank, else one small all-gather); the failure one process would have met first
    /// (the earliest place, then the lowest rank) on every rank, or whether any rank asked to
    /// terminate.
    fn settle(
        &mut self,
        mine: Status,
        heard: Option<&[(usize, Status)]>,
        result: Result<()>,
    ) -> Result<()> {
        let Some(ranks) = self.ranks.clone() else {
            return result;
        };
        let me = ranks.rank();
        let gathered;
        let others: &[(usize, Status)] = match heard {
            Some(heard) => heard,
            None => {
                let size = ranks.transport.size();
                let all = ranks
                    .transport
                    .all_gather_known(&encode(mine), &vec![STATUS; size]);
                gathered = all
                    .chunks_exact(STATUS)
                    .map(decode)
                    .enumerate()
                    .collect::<Vec<_>>();
                &gathered
            }
        };
        let statuses = || others.iter().copied().chain(std::iter::once((me, mine)));
        let culprit = statuses()
            .filter(|(_, s)| s.failed)
            .min_by_key(|(r, s)| (s.at, *r))
            .map(|(r, _)| r);
        if let Some(culprit) = culprit {
            return Err(failure_from(ranks.transport.as_ref(), culprit, result));
        }
        if statuses().any(|(_, s)| s.terminate) {
            self.terminate_requested.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// After a Jacobi step (or a read of every source): the sources of the connections that
    /// cross ranks to their targets' owners (`result`: how this rank's step went).
    pub(crate) fn trade_sources(&mut self, result: Result<()>) -> Result<()> {
        let Some(mut neighbours) = self.neighbours.take() else {
            return result;
        };
        let mine = Status {
            failed: result.is_err(),
            terminate: self.terminate_requested.load(Ordering::Relaxed),
            at: 0,
        };
        self.trade(
            &mut neighbours.sources,
            mine,
            |exec, c| exec.after_step[c].load(Ordering::Relaxed),
            |exec, c, bits| exec.after_step[c].store(bits, Ordering::Relaxed),
        );
        let sources = &neighbours.sources;
        let settled = self.settle(mine, sources.complete.then_some(&sources.heard), result);
        self.neighbours = Some(neighbours);
        settled
    }

    /// A Gauss-Seidel sweep to `t_end` over ranks: each owner steps its stretch of the sweep
    /// order, then sends the stretch's sources to their targets' owners.
    pub(crate) fn sweep_over_neighbours(&mut self, t_end: f64) -> Result<()> {
        let Some(mut neighbours) = self.neighbours.take() else {
            return Ok(());
        };
        let swept = self.sweep(&mut neighbours, t_end);
        self.neighbours = Some(neighbours);
        swept
    }

    fn sweep(&mut self, neighbours: &mut Neighbours, t_end: f64) -> Result<()> {
        let me = self.ranks.as_ref().map_or(0, |r| r.rank());
        let mut walk = Walk::new();
        let mut heard_all = Vec::new();
        for (s, stretch) in neighbours.sweep.iter_mut().enumerate() {
            for k in stretch.items.clone() {
                let i = self.graph.gauss_seidel_order[k];
                if stretch.owner == me && !walk.poisoned {
                    let since = Instant::now();
                    let stepped = self.step_in_sweep(i, t_end);
                    self.integrated(Some(since));
                    if let Err(error) = stepped {
                        walk.failed(s, error);
                    }
                }
                self.stepped[i] = true;
            }
            walk.mine.terminate = self.terminate_requested.load(Ordering::Relaxed);
            self.trade(
                &mut stretch.round,
                walk.sent(),
                |exec, c| exec.after_step[c].load(Ordering::Relaxed),
                |exec, c, bits| exec.after_step[c].store(bits, Ordering::Relaxed),
            );
            for &(r, status) in &stretch.round.heard {
                walk.poisoned |= status.failed;
                if status.failed || status.terminate {
                    // A failure heard here is the sender's in this stretch or an earlier one.
                    let at = s as u32;
                    heard_all.push((r, Status { at, ..status }));
                }
            }
        }
        if neighbours.sweep_complete {
            // Every rank heard every other after each of its stretches: no status round.
            return self.settle(walk.mine, Some(&heard_all), walk.result);
        }
        // The status round carries the wish to terminate and the first failure.
        self.settle(walk.mine, None, walk.result)
    }

    /// The exchange after a step over ranks: each owner walks its stretch of the exchange
    /// plan, then sends the stretch's fresh reads to their targets' owners.
    pub(crate) fn exchange_over_neighbours(&mut self) -> Result<()> {
        let Some(mut neighbours) = self.neighbours.take() else {
            return Ok(());
        };
        let walked = self.walk_exchange(&mut neighbours);
        self.neighbours = Some(neighbours);
        walked
    }

    fn walk_exchange(&mut self, neighbours: &mut Neighbours) -> Result<()> {
        let me = self.ranks.as_ref().map_or(0, |r| r.rank());
        let mut walk = Walk::new();
        let mut heard_all = Vec::new();
        for (s, stretch) in neighbours.exchange.iter_mut().enumerate() {
            if stretch.owner == LOOPS {
                // Every rank takes part in a loop's solve (its collectives): first every rank
                // learns whether any failed before it, as one process would have stopped there.
                let before = std::mem::replace(&mut walk.result, Ok(()));
                self.settle(walk.mine, None, before)?;
                for k in stretch.items.clone() {
                    if let Part::Loop(b) = self.exchange_plan.parts[k] {
                        super::loops::solve(self, b)?;
                    }
                }
                continue;
            }
            if stretch.owner == me && !walk.poisoned {
                if let Err(error) = self.walk_stretch(stretch.items.clone()) {
                    walk.failed(s, error);
                }
            }
            self.trade(
                &mut stretch.round,
                walk.sent(),
                |exec, c| exec.values[c].to_bits(),
                |exec, c, bits| exec.values[c] = f64::from_bits(bits),
            );
            for &(r, status) in &stretch.round.heard {
                walk.poisoned |= status.failed;
                if status.failed {
                    // Only the stretch's owner fails in it: where it failed is this stretch.
                    heard_all.push((
                        r,
                        Status {
                            at: s as u32,
                            ..status
                        },
                    ));
                }
            }
        }
        if neighbours.exchange_complete {
            // Every rank heard every stretch: the failures it heard are all there are.
            heard_all.retain(|(r, _)| *r != me);
            return self.settle(walk.mine, Some(&heard_all), walk.result);
        }
        self.settle(walk.mine, None, walk.result)
    }
}

fn encode(status: Status) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(STATUS);
    bytes.push(u8::from(status.failed));
    bytes.push(u8::from(status.terminate));
    bytes.extend_from_slice(&status.at.to_le_bytes());
    bytes
}

fn decode(bytes: &[u8]) -> Status {
    let at = bytes
        .get(2..STATUS)
        .and_then(|b| b.try_into().ok())
        .map_or(u32::MAX, u32::from_le_bytes);
    Status {
        failed: bytes.first() != Some(&0),
        terminate: bytes.get(1) == Some(&1),
        at,
    }
}

#[cfg(test)]
mod tests {
    use super::{round, stretches};

    #[test]
    fn a_chain_over_three_ranks_talks_to_its_neighbours_only() {
        // Connections 0: rank 0 -> 1, 1: rank 1 -> 2, 2: rank 1 -> 1 (not crossing: left out
        // by the caller), 3: rank 0 -> 1.
        let sent = [(0, 0, 1), (1, 1, 2), (3, 0, 1)];
        let middle = round((1, 3), 0..3, sent.iter().copied());
        assert_eq!(middle.from, vec![(0, vec![0, 3])]);
        assert_eq!(middle.to, vec![(2, vec![1])]);
        assert!(!middle.complete);
        let first = round((0, 3), 0..3, sent.iter().copied());
        assert_eq!(first.to, vec![(1, vec![0, 3])]);
        assert!(first.from.is_empty());
        // Two ranks coupled both ways: complete, statuses ride in the messages.
        let both = round((0, 2), 0..2, [(0, 0, 1), (1, 1, 0)].into_iter());
        assert!(both.complete);
        assert_eq!(both.to, vec![(1, vec![0])]);
        assert_eq!(both.from, vec![(1, vec![1])]);
        // One way only: on two ranks rank 1 still sends rank 0 its bare status (6 bytes).
        let one_way = round((0, 2), 0..2, [(0, 0, 1)].into_iter());
        assert!(one_way.complete);
        assert_eq!(one_way.from, vec![(1, vec![])]);
        assert_eq!(one_way.receives, vec![(1, 6)]);
        // A stretch's owner that reaches every other rank.
        let stretch = round((2, 3), [0].into_iter(), [(4, 0, 1), (5, 0, 2)].into_iter());
        assert!(stretch.complete);
        assert_eq!(stretch.from, vec![(0, vec![5])]);
        assert!(!round((2, 3), [0].into_iter(), [(4, 0, 1)].into_iter()).complete);
        // A stretch of loops, which no rank owns: never complete.
        assert!(!round((0, 2), [usize::MAX].into_iter(), std::iter::empty()).complete);
        assert_eq!(
            stretches(5, |k| [0, 0, 1, 1, 0][k]),
            vec![(0, 0..2), (1, 2..4), (0, 4..5)]
        );
    }
}
