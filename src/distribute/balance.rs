//! The partition of a system over MPI ranks when the user gives none: contiguous runs of the
//! coupling order (the graph's Gauss-Seidel order, so that few connections cross ranks),
//! balanced by the components' measured step cost.
//!
//! The costs come from a short trial, as `--parallel`'s (`master/parallel.rs`): the system runs
//! over the ranks split by component count, each rank timing the step tasks of the components
//! it owns (a warm-up macro step, then at most [`TRIAL_STEPS`] macro steps, a 50th of the run's,
//! or [`TRIAL_TIME`] as rank 0's clock measures it; the median per component). The trial's
//! instances are freed and its rows dropped. The ranks all-gather their components' medians,
//! so every rank holds the same costs and computes the same split: the contiguous split of
//! the coupling order whose most expensive rank is cheapest ([`contiguous`]). The components of
//! an algebraic loop count as one unit of the order (their summed cost, placed where the first
//! of them stands), so that the split keeps each loop on one rank, where its owner solves it
//! alone and sends the solution in one broadcast instead of two all-gathers per Newton
//! iteration (`master/loops.rs`); only a system with fewer units than ranks has a loop split
//! over ranks. A Gauss-Seidel
//! system is timed as Jacobi: a component's step costs the same either way, and the Jacobi
//! step tasks are the ones the trial's clock sees.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::fmu::instance::InstanceOptions;
use crate::fmu::Fmu;
use crate::master::execution::{Execution, RunOptions};
use crate::master::parallel::{TRIAL_STEPS, TRIAL_TIME};
use crate::master::pool::{split, Layout, TrialClock};
use crate::master::run::{run, Observer};
use crate::master::transport::{agree, Ranks, Transport};
use crate::settings::Algorithm;
use crate::system::graph::{self, CouplingGraph};
use crate::system::resolve::{resolve, ResolvedSystem};
use crate::system::System;
use crate::{Error, Result};

/// Split `order` (component indices) into `parts` contiguous runs, every run at least one
/// component, such that the costliest run costs as little as possible; among such splits the
/// one whose earlier runs are as long as they can be. The rank of each component, by index.
///
/// The bound is found by bisection on the greedy test "can `order` be cut into at most `parts`
/// runs of at most this cost" (the answer only grows with the bound), which takes
/// O(N log(sum / precision)) for N components; every rank computes the same from the same costs.
pub fn contiguous(order: &[usize], costs: &[f64], parts: usize) -> Vec<usize> {
    let mut owner = vec![0; costs.len()];
    if parts <= 1 || order.is_empty() {
        return owner;
    }
    // Negative, NaN or infinite costs cannot be balanced: take them as none and as the most.
    let cost = |i: usize| {
        let c = costs[i];
        if c.is_nan() || c < 0.0 {
            0.0
        } else {
            c.min(f64::MAX / (order.len() as f64 + 1.0))
        }
    };
    let runs_within = |bound: f64| {
        let (mut runs, mut sum) = (1, 0.0);
        for &i in order {
            if sum + cost(i) > bound {
                runs += 1;
                sum = 0.0;
            }
            sum += cost(i);
        }
        runs
    };
    let mut low = order.iter().map(|&i| cost(i)).fold(0.0, f64::max);
    let mut high = order.iter().map(|&i| cost(i)).sum::<f64>().max(low);
    if runs_within(low) <= parts {
        high = low;
    }
    // `high` always passes, `low` fails (unless they are one); halve until adjacent floats.
    while high > low {
        let middle = low + (high - low) / 2.0;
        if middle <= low || middle >= high {
            break;
        }
        if runs_within(middle) <= parts {
            high = middle;
        } else {
            low = middle;
        }
    }
    let (mut rank, mut sum) = (0, 0.0);
    for (k, &i) in order.iter().enumerate() {
        let left = order.len() - k;
        // A new run where this one would pass the bound, or where the components left are
        // just enough to give every rank still empty one each.
        if k > 0 && rank + 1 < parts && (sum + cost(i) > high || left < parts - rank) {
            rank += 1;
            sum = 0.0;
        }
        owner[i] = rank;
        sum += cost(i);
    }
    owner
}

/// What the trial found: each component's median step cost (ns per macro step), or why there
/// is none.
pub(crate) type Measured = std::result::Result<Vec<f64>, String>;

/// The coupling order of `system` (resolved against its FMUs' descriptions) in units that the
/// split keeps on one rank: the components of each algebraic loop (loops that share a
/// component are one unit) moved next to the first of them, every other component alone.
pub(crate) fn coupling_order(system: &System, fmus: &[Arc<Fmu>]) -> Result<Vec<Vec<usize>>> {
    let descriptions = fmus.iter().map(|f| f.description().clone()).collect();
    let resolved = resolve(system, descriptions)?;
    let graph = graph::build(&resolved);
    Ok(loop_units(&resolved, &graph))
}

/// [`coupling_order`] of a system resolved and ordered already.
pub(crate) fn loop_units(resolved: &ResolvedSystem, graph: &CouplingGraph) -> Vec<Vec<usize>> {
    let loops = graph.blocks.iter().filter(|b| b.is_loop).map(|b| {
        b.connections.iter().flat_map(|&c| {
            let conn = &resolved.connections[c];
            [conn.from_component, conn.to_component]
        })
    });
    units(&graph.gauss_seidel_order, loops)
}

/// `order` in units: the components of each of `loops` (and of loops that share one) together,
/// where the first of them stands, every other component alone.
fn units<L: Iterator<Item = usize>>(
    order: &[usize],
    loops: impl Iterator<Item = L>,
) -> Vec<Vec<usize>> {
    // Union-find over component indices, halving paths.
    let mut parent: Vec<usize> = (0..order.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for members in loops {
        let mut first = None;
        for i in members {
            let r = root(&mut parent, i);
            match first {
                None => first = Some(r),
                Some(f) if f != r => parent[r] = f,
                Some(_) => {}
            }
        }
    }
    let mut members_of: Vec<Vec<usize>> = vec![Vec::new(); order.len()];
    for &i in order {
        let r = root(&mut parent, i);
        members_of[r].push(i);
    }
    let mut units = Vec::new();
    for &i in order {
        let r = root(&mut parent, i);
        if !members_of[r].is_empty() {
            units.push(std::mem::take(&mut members_of[r]));
        }
    }
    units
}

/// Components split by count along the units of the coupling order over `ranks` ranks (the
/// trial's split).
pub(crate) fn by_count(units: &[Vec<usize>], ranks: usize) -> Vec<usize> {
    let count = units.iter().map(Vec::len).sum();
    by_units(units, &vec![1.0; count], ranks, split)
}

/// Components split along the units of the coupling order over `ranks` ranks by `costs`, the
/// costliest rank as cheap as a contiguous split allows ([`contiguous`]).
pub(crate) fn by_cost(units: &[Vec<usize>], costs: &[f64], ranks: usize) -> Vec<usize> {
    by_units(units, costs, ranks, contiguous)
}

/// `divide` (order, costs, parts -> rank per index) applied to the units, each unit's
/// components on its rank; with fewer units than ranks, to the components.
fn by_units(
    units: &[Vec<usize>],
    costs: &[f64],
    ranks: usize,
    divide: fn(&[usize], &[f64], usize) -> Vec<usize>,
) -> Vec<usize> {
    if units.len() < ranks {
        return divide(&units.concat(), costs, ranks);
    }
    // Costs that cannot be balanced count as none (as `contiguous` takes them).
    let usable = |c: f64| if c.is_nan() || c < 0.0 { 0.0 } else { c };
    let unit_costs: Vec<f64> = units
        .iter()
        .map(|unit| unit.iter().map(|&i| usable(costs[i])).sum())
        .collect();
    let order: Vec<usize> = (0..units.len()).collect();
    let unit_rank = divide(&order, &unit_costs, ranks);
    let mut owner = vec![0; costs.len()];
    for (unit, &rank) in units.iter().zip(&unit_rank) {
        for &i in unit {
            owner[i] = rank;
        }
    }
    owner
}

/// Time every component's steps in a trial over the ranks of `transport`, split as `owner`
/// (every rank calls this; all return the same). A failure of the trial that the run itself
/// would meet too gives `Ok(Err(why))`, so that the run reports it with its rows; a usage
/// error, or an FMU that failed fatally (FMI allows it no further call), is the run's error.
pub(crate) fn measure(
    system: &System,
    options: &RunOptions,
    fmus: &[Arc<Fmu>],
    transport: &Arc<dyn Transport>,
    owner: Vec<usize>,
) -> Result<Measured> {
    match trial(system, options, fmus, transport, owner.clone()) {
        Ok(Some(local)) => {
            // Each rank's medians of its own components, in component order, to every rank.
            let me = transport.rank();
            let mut bytes = Vec::new();
            for (i, cost) in local.iter().enumerate() {
                if owner[i] == me {
                    bytes.extend_from_slice(&cost.to_le_bytes());
                }
            }
            let all = transport.all_gather(&bytes);
            let mut costs = vec![0.0; owner.len()];
            for (r, bytes) in all.iter().enumerate() {
                let theirs = (0..owner.len()).filter(|&i| owner[i] == r);
                let mut values = bytes
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap_or_default()));
                for i in theirs {
                    costs[i] = values.next().ok_or_else(|| {
                        Error::Internal(format!("the step costs from rank {r} are cut short"))
                    })?;
                }
            }
            Ok(Ok(costs))
        }
        Ok(None) => Ok(Err(
            "the run has too few macro steps to time the components' steps".into(),
        )),
        Err(error) => {
            let fatal = fmus
                .iter()
                .any(|fmu| fmu.library().is_ok_and(|library| library.fatal().is_some()));
            let any_fatal = transport
                .all_gather(&[u8::from(fatal)])
                .iter()
                .any(|b| b.first() == Some(&1));
            if any_fatal || error.exit_code() == 2 {
                if any_fatal {
                    log::warn!(
                        "this failure happened while timing the components' steps to balance the ranks, before the run; --partition FILE (or a \"rank\" per component) places them without timing"
                    );
                }
                return Err(error);
            }
            Ok(Err(format!(
                "timing the components' steps failed ({error})"
            )))
        }
    }
}

/// The trial run: this rank's median step cost of every component (those of other ranks are
/// their stand-ins'), or `None` when the run ends before a timed macro step.
fn trial(
    system: &System,
    options: &RunOptions,
    fmus: &[Arc<Fmu>],
    transport: &Arc<dyn Transport>,
    owner: Vec<usize>,
) -> Result<Option<Vec<f64>>> {
    let count = system.components.len();
    let mut timed = system.clone();
    if let Algorithm::GaussSeidel(explicit) = &system.experiment.algorithm {
        timed.experiment.algorithm = Algorithm::Jacobi(explicit.clone());
    }
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
        ranks: Some(Ranks::new(transport.clone(), owner)),
        ..options.clone()
    };
    let clock = Arc::new(TrialClock::new(count));
    let exec = Execution::instantiate_on(&timed, &quiet, fmus, &Layout::Timed(clock.clone()));
    // Each rank instantiated its own components: all go on together, or none.
    let status = exec.as_ref().map(|_| ()).map_err(|e| Error::OnRank {
        rank: transport.rank(),
        code: e.exit_code(),
        message: e.to_string(),
    });
    agree(transport.as_ref(), status)?;
    let mut exec = exec?;
    let experiment = &system.experiment;
    let run_steps = ((experiment.stop - experiment.start) / experiment.step).max(0.0);
    let mut observer = TrialObserver {
        transport: transport.clone(),
        clock,
        limit: TRIAL_STEPS.min((run_steps / 50.0) as u64).max(1),
        steps: 0,
        started: None,
        seen: vec![0; count],
        per_step: vec![Vec::new(); count],
        done: false,
    };
    run(&mut exec, &mut [&mut observer])?;
    if observer.steps < 2 {
        return Ok(None);
    }
    Ok(Some(
        observer
            .per_step
            .iter_mut()
            .map(|samples| median(samples))
            .collect(),
    ))
}

/// The median of `values` (0 for none); sorts them.
fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Times the trial's macro steps after the first and ends the run when rank 0 says so.
struct TrialObserver {
    transport: Arc<dyn Transport>,
    clock: Arc<TrialClock>,
    /// Timed macro steps at most.
    limit: u64,
    /// Macro steps so far (the first is the warm-up).
    steps: u64,
    /// When the timed steps began.
    started: Option<Instant>,
    /// Each component's clock at the end of the last macro step (ns).
    seen: Vec<u64>,
    /// Each component's time in every timed macro step (ns).
    per_step: Vec<Vec<f64>>,
    done: bool,
}

impl Observer for TrialObserver {
    // Called on every rank after the same macro step: the broadcast keeps the ranks together.
    fn stepped(&mut self, _time: f64) {
        let timing = self.steps > 0;
        for (i, nanos) in self.clock.nanos.iter().enumerate() {
            let nanos = nanos.load(Ordering::Relaxed);
            if timing {
                self.per_step[i].push(nanos.saturating_sub(self.seen[i]) as f64);
            }
            self.seen[i] = nanos;
        }
        self.steps += 1;
        self.clock.timing.store(true, Ordering::Relaxed);
        let started = *self.started.get_or_insert_with(Instant::now);
        let over = self.steps > self.limit || started.elapsed() >= TRIAL_TIME;
        // Rank 0's clock decides, so that every rank ends the trial after the same step.
        let decided = self.transport.broadcast(0, vec![u8::from(over)]);
        self.done = decided.first() == Some(&1);
    }

    fn stop_requested(&mut self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::{by_cost, by_count, contiguous, units};

    #[test]
    fn an_algebraic_loop_stays_on_one_rank_where_the_split_can_keep_it() {
        // Order 0 1 2 3 4 5, a loop through 1 and 4 (and one through 4 and 5): one unit.
        let order: Vec<usize> = (0..6).collect();
        let loops = [vec![1, 4], vec![5, 4]];
        let grouped = units(&order, loops.iter().map(|l| l.iter().copied()));
        assert_eq!(grouped, vec![vec![0], vec![1, 4, 5], vec![2], vec![3]]);
        // By count: 1 + 3 | 1 + 1 rather than 3 | 3, which would cut the loop.
        assert_eq!(by_count(&grouped, 2), vec![0, 0, 1, 1, 0, 0]);
        // By cost, the loop's summed cost decides.
        let costs = [1.0, 1.0, 5.0, 5.0, 1.0, 1.0];
        assert_eq!(by_cost(&grouped, &costs, 3), vec![0, 0, 1, 2, 0, 0]);
        // Fewer units than ranks: the loop is split, every rank has a component.
        let ring = units(&order[..2], [vec![0, 1]].iter().map(|l| l.iter().copied()));
        assert_eq!(ring, vec![vec![0, 1]]);
        assert_eq!(by_count(&ring, 2), vec![0, 1]);
    }

    #[test]
    fn the_costliest_rank_is_as_cheap_as_a_contiguous_split_allows() {
        let order: Vec<usize> = (0..6).collect();
        // One expensive component among cheap ones gets a rank of its own.
        let costs = [1.0, 1.0, 100.0, 1.0, 1.0, 1.0];
        assert_eq!(contiguous(&order, &costs, 3), vec![0, 0, 1, 2, 2, 2]);
        // 1 + 1 + 100 against 3 beats 2 against 103.
        assert_eq!(contiguous(&order, &costs, 2), vec![0, 0, 0, 1, 1, 1]);
        // Equal costs: equal counts.
        assert_eq!(contiguous(&order, &[3.0; 6], 3), vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(contiguous(&order[..5], &[1.0; 5], 2), vec![0, 0, 0, 1, 1]);
        // 4 + 5 | 6 | 7 + 1: the bound is 9, not the 13 of a split by count (4 + 5 | 6 + 7 | 1).
        assert_eq!(
            contiguous(&order[..5], &[4.0, 5.0, 6.0, 7.0, 1.0], 3),
            vec![0, 0, 1, 2, 2]
        );
        // Every rank gets a component, even where the costs would leave one empty.
        assert_eq!(
            contiguous(&order[..4], &[100.0, 0.0, 0.0, 0.0], 4),
            vec![0, 1, 2, 3]
        );
        assert_eq!(contiguous(&order[..3], &[0.0; 3], 2), vec![0, 0, 1]);
        // The coupling order, not the index order, decides what is contiguous.
        assert_eq!(
            contiguous(&[3, 2, 1, 0], &[9.0, 1.0, 1.0, 1.0], 2),
            vec![1, 0, 0, 0]
        );
        // Costs that cannot be balanced are taken as none.
        assert_eq!(
            contiguous(&order[..3], &[f64::NAN, -1.0, 2.0], 2),
            vec![0, 0, 1]
        );
    }

    #[test]
    fn a_large_chain_is_split_in_linear_time() {
        let n = 100_000;
        let order: Vec<usize> = (0..n).collect();
        let costs: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64).collect();
        let owner = contiguous(&order, &costs, 64);
        assert_eq!(owner.first(), Some(&0));
        assert_eq!(owner.last(), Some(&63));
        assert!(owner.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1));
        let mut per_rank = vec![0.0; 64];
        for (i, &r) in owner.iter().enumerate() {
            per_rank[r] += costs[i];
        }
        let total: f64 = costs.iter().sum();
        let most = per_rank.iter().copied().fold(0.0, f64::max);
        // Within one component of the ideal share.
        assert!(
            most <= total / 64.0 + 7.0,
            "{most} against {}",
            total / 64.0
        );
    }
}
