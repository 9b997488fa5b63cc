//! The reduced interface model over ranks (`transport.rs`): the macro step of one process,
//! owner-computes. The multibody component's owner computes the effective mass and force and
//! reads the interface state; one all-gather carries them to every rank, which then integrates
//! the same reduced model. Per fast step each rank sets, reads and steps the fast components
//! it owns, and one all-gather carries the forces read before the step, the sources between
//! fast components read after it, every rank's wish to terminate and its first failure.
//! Where one rank owns every fast component (the multibody component alone elsewhere, the
//! usual split) nothing needs to travel inside the fast loop: it runs on that rank alone, as
//! in one process, and one all-gather after it carries where it
//! ended, the forces' sum and its first failure.
//!
//! A failure is kept with its place in one process' order of FMU calls (its key), and the
//! rank stops calling FMUs; at the next gather every rank ends with the failure one process
//! would have met first, as [`Error::OnRank`].

use std::sync::atomic::Ordering;
use std::time::Instant;

use nalgebra::{DMatrix, DVector};

use super::{advance_reduced_model, inverse_mass, Interface, MultibodyForce, RimSettings};
use crate::master::execution::Execution;
use crate::master::transport::Ranks;
use crate::{Error, Result};

/// The phases of a fast step, in one process' order (part of a failure's key).
const HELD_STEP: u64 = 0;
const LINK_SETS: u64 = 1;
const DRIVEN_SETS: u64 = 2;
const FORCE_READS: u64 = 3;
const FAST_STEPS: u64 = 4;
const LINK_READS: u64 = 5;
/// After the fast loop (fast step `n`), the averaged forces.
const AVERAGED_SET: u64 = 2;
const AVERAGED_STEP: u64 = 3;
const PHASES: u64 = 8;

/// Where a call comes in one process' order: fast step, phase, position in the phase.
fn key(step: u32, phase: u64, position: usize) -> u64 {
    ((u64::from(step) * PHASES + phase) << 32) | position as u64
}

/// This rank's first failure in one process' order.
type Failure = Option<(u64, Error)>;

/// Keep `result`'s failure where it is the first (a rank calls no FMU after its first).
fn keep(failure: &mut Failure, at: u64, result: Result<()>) {
    if let (None, Err(error)) = (&failure, result) {
        *failure = Some((at, error));
    }
}

impl Execution {
    /// [`Execution::rim_macro_step`] over ranks: the same bits on every rank.
    pub(super) fn rim_macro_step_over_ranks(
        &mut self,
        ranks: &Ranks,
        i: &Interface,
        settings: &RimSettings,
        h1: f64,
        n: u32,
        p: usize,
    ) -> Result<()> {
        let t = self.time;
        let h2 = h1 / f64::from(n);
        // 1. Synchronisation: the owner computes the reduced model and reads s, s'.
        let mut flat = vec![0.0; p * p + 3 * p];
        let mut read = Ok(());
        if self.steps_here(i.mbs) {
            read = self.effective(i, settings).and_then(|(m, f)| {
                let (pos, vel) = (i.position.clone(), i.velocity.clone());
                let (s, v) = self.placement.run_one(i.mbs, move |unit| {
                    let mut s = vec![0.0; pos.len()];
                    let mut v = vec![0.0; vel.len()];
                    unit.slave.get_float64(&pos, &mut s)?;
                    unit.slave.get_float64(&vel, &mut v)?;
                    Ok((s, v))
                })?;
                let values = m.iter().chain(f.iter()).chain(&s).chain(&v);
                flat.iter_mut().zip(values).for_each(|(x, y)| *x = *y);
                Ok(())
            });
        }
        self.share_by_owner(&vec![i.mbs; flat.len()], &mut flat, read)?;
        // Column-major, as nalgebra iterates.
        let m = DMatrix::from_column_slice(p, p, &flat[..p * p]);
        let f_tilde = DVector::from_column_slice(&flat[p * p..p * p + p]);
        let mut s = DVector::from_column_slice(&flat[p * p + p..p * p + 2 * p]);
        let mut v = DVector::from_column_slice(&flat[p * p + 2 * p..]);
        let m_inverse = inverse_mass(&m, t)?;
        let mut failure: Failure = None;
        // Where one rank owns every fast component, the fast loop runs there alone and what
        // the others need travels once after it; else the values travel every fast step.
        let me = ranks.rank();
        let fast_rank = i.fast.first().map(|&c| ranks.owner[c]);
        let fast_rank = fast_rank.filter(|&r| i.fast.iter().all(|&c| ranks.owner[c] == r));
        // 3a. Held forces: the multibody's owner steps it now; how that went travels with the
        // first fast step, or before the fast loop where that runs on one rank.
        if settings.multibody_force == MultibodyForce::Held {
            if self.steps_here(i.mbs) {
                let stepped = self.step_timed(ranks, i.mbs, t, h1);
                keep(&mut failure, key(0, HELD_STEP, 0), stepped);
            }
            if fast_rank.is_some() {
                self.gather(ranks, &[], &mut [], failure.take(), u64::MAX)?;
            }
        }
        // 2. The fast loop. Per fast step the values that travel: the forces read before the
        // step, then the links between fast components read after it.
        let owners: Vec<usize> = i
            .forces_in
            .iter()
            .map(|&(c, _)| c)
            .chain(i.fast_links.iter().copied())
            .map(|c| self.resolved.connections[c].from_component)
            .collect();
        let mut travelling = vec![0.0; owners.len()];
        let links_at = i.forces_in.len();
        let mut force_sum = DVector::zeros(p);
        let mut ended_at = None;
        let runs_here = fast_rank.is_none_or(|r| r == me);
        for j in (0..n).filter(|_| runs_here) {
            let tj = t + f64::from(j) * h2;
            // The links of the previous fast step (one process sets them at its end).
            if j > 0 {
                self.set_links(i, &travelling[links_at..], j, &mut failure);
            }
            for (position, &(c, k, is_velocity)) in i.rim_driven.iter().enumerate() {
                let to = self.resolved.connections[c].to_component;
                if failure.is_none() && self.steps_here(to) {
                    let value = self.resolved.connections[c].transform(if is_velocity {
                        v[k]
                    } else {
                        s[k]
                    });
                    let set = self.set_target(c, value);
                    keep(&mut failure, key(j, DRIVEN_SETS, position), set);
                }
            }
            for (position, &(c, _)) in i.forces_in.iter().enumerate() {
                let from = self.resolved.connections[c].from_component;
                if failure.is_none() && self.steps_here(from) {
                    match self.read_source_here(c) {
                        Ok(y) => travelling[position] = y,
                        Err(error) => failure = Some((key(j, FORCE_READS, position), error)),
                    }
                }
            }
            for (position, &fast) in i.fast.iter().enumerate() {
                if failure.is_none() && self.steps_here(fast) {
                    let stepped = self.step_timed(ranks, fast, tj, h2);
                    keep(&mut failure, key(j, FAST_STEPS, position), stepped);
                }
            }
            let terminate = if fast_rank.is_some() {
                // All here: one process' order, and nothing travels.
                if failure.is_some() {
                    break;
                }
                self.terminate_requested.load(Ordering::Relaxed)
            } else {
                self.read_links(i, &mut travelling[links_at..], j, &mut failure);
                // One process reads no link after a fast step in which a component asked to
                // end the run.
                let terminating = key(j, LINK_READS, 0);
                self.gather(ranks, &owners, &mut travelling, failure.take(), terminating)?
            };
            let mut lambda = DVector::zeros(p);
            for (&(_, k), y) in i.forces_in.iter().zip(&travelling) {
                lambda[k] = *y;
            }
            force_sum += &lambda;
            if terminate {
                // A fast FMU asked to end the run: the macro step ends with its fast step.
                ended_at = Some(j);
                break;
            }
            if fast_rank.is_some() {
                self.read_links(i, &mut travelling[links_at..], j, &mut failure);
                if failure.is_some() {
                    break;
                }
            }
            let a = &m_inverse * (&f_tilde + &lambda);
            advance_reduced_model(settings.integrator, (&mut s, &mut v), &a, h2);
        }
        if runs_here && ended_at.is_none() {
            self.set_links(i, &travelling[links_at..], n, &mut failure);
        }
        if let Some(r) = fast_rank {
            // The fast rank's outcome to every rank: where the loop ended, the forces' sum.
            let mut outcome = vec![0.0; 1 + p];
            if r == me {
                outcome[0] = ended_at.map_or(-1.0, f64::from);
                outcome[1..].copy_from_slice(force_sum.as_slice());
            }
            self.gather(
                ranks,
                &vec![i.fast[0]; 1 + p],
                &mut outcome,
                failure.take(),
                u64::MAX,
            )?;
            ended_at = (outcome[0] >= 0.0).then_some(outcome[0] as u32);
            force_sum = DVector::from_column_slice(&outcome[1..]);
        }
        if let Some(j) = ended_at {
            let tj = t + f64::from(j) * h2;
            self.time = tj + h2;
            return self.read_all_values(ranks);
        }
        // 3b. Averaged forces: the multibody FMU steps after the fast loop.
        if settings.multibody_force == MultibodyForce::Averaged
            && failure.is_none()
            && self.steps_here(i.mbs)
        {
            let average = force_sum / f64::from(n);
            let force = i.force.clone();
            let set = self.placement.run_one(i.mbs, move |unit| {
                unit.slave.set_float64(&force, average.as_slice())
            });
            keep(&mut failure, key(n, AVERAGED_SET, 0), set);
            if failure.is_none() {
                let stepped = self.step_timed(ranks, i.mbs, t, h1);
                keep(&mut failure, key(n, AVERAGED_STEP, 0), stepped);
            }
        }
        self.time = t + h1;
        // The forces at the new point, for the multibody FMU's next step: read by the fast
        // components' owners (with how the rest of the macro step went), set by the
        // multibody's.
        let force_owners = &owners[..links_at];
        let mut forces = vec![0.0; links_at];
        for (position, &(c, _)) in i.forces_in.iter().enumerate() {
            if failure.is_none() && self.steps_here(force_owners[position]) {
                match self.read_source_here(c) {
                    Ok(y) => forces[position] = y,
                    Err(error) => failure = Some((key(n, LINK_READS, position), error)),
                }
            }
        }
        self.gather(ranks, force_owners, &mut forces, failure, u64::MAX)?;
        let mut set = Ok(());
        for (&(c, _), &y) in i.forces_in.iter().zip(&forces) {
            if set.is_ok() && self.steps_here(i.mbs) {
                set = self.set_target(c, y);
            }
        }
        self.agree(set)?;
        // The coupling values at the new point (the result row shows what the sources say).
        self.read_all_values(ranks)
    }

    /// Set the links between fast components to the values read after fast step `j - 1`
    /// (each target's owner sets its own).
    fn set_links(&mut self, i: &Interface, values: &[f64], j: u32, failure: &mut Failure) {
        for (position, (&c, &y)) in i.fast_links.iter().zip(values).enumerate() {
            let to = self.resolved.connections[c].to_component;
            if failure.is_none() && self.steps_here(to) {
                let set = self.set_target(c, y);
                keep(failure, key(j, LINK_SETS, position), set);
            }
        }
    }

    /// Read the links between fast components after fast step `j` (each source's owner).
    fn read_links(&mut self, i: &Interface, values: &mut [f64], j: u32, failure: &mut Failure) {
        for (position, &c) in i.fast_links.iter().enumerate() {
            let from = self.resolved.connections[c].from_component;
            if failure.is_none() && self.steps_here(from) {
                match self.read_source_here(c) {
                    Ok(y) => values[position] = y,
                    Err(error) => *failure = Some((key(j, LINK_READS, position), error)),
                }
            }
        }
    }

    /// Every connection's source now, read by its owner, into `values` on every rank.
    fn read_all_values(&mut self, ranks: &Ranks) -> Result<()> {
        let connections = self.resolved.connections.len();
        let owners: Vec<usize> = (0..connections)
            .map(|c| self.resolved.connections[c].from_component)
            .collect();
        let mut values = vec![0.0; connections];
        let mut failure: Failure = None;
        for c in 0..connections {
            if failure.is_none() && self.steps_here(owners[c]) {
                match self.read_source_here(c) {
                    Ok(y) => values[c] = y,
                    Err(error) => failure = Some((c as u64, error)),
                }
            }
        }
        self.gather(ranks, &owners, &mut values, failure, u64::MAX)?;
        self.values = values;
        Ok(())
    }

    /// [`super::Execution::step_one`] on this rank, its time counted as integration.
    fn step_timed(&mut self, ranks: &Ranks, component: usize, t: f64, h: f64) -> Result<()> {
        let since = Instant::now();
        let stepped = self.step_one(component, t, h);
        ranks.clock.integrating(since);
        stepped
    }

    /// One all-gather: the values each rank read for its components (`values[k]` belongs to
    /// component `owners[k]`), every rank's wish to terminate and its first failure. Returns
    /// whether any rank's components asked to end the run (then failures from `terminating`
    /// on are ones one process would not have met), or the first failure in one process'
    /// order, from its rank, on every rank.
    fn gather(
        &self,
        ranks: &Ranks,
        owners: &[usize],
        values: &mut [f64],
        failure: Failure,
        terminating: u64,
    ) -> Result<bool> {
        /// Status, wish to terminate, key of the first failure.
        const HEAD: usize = 10;
        let transport = ranks.transport.as_ref();
        let me = ranks.rank();
        let mut lengths = vec![HEAD; transport.size()];
        for &o in owners {
            lengths[ranks.owner[o]] += 8;
        }
        let mut bytes = vec![0u8; lengths[me]];
        bytes[0] = u8::from(failure.is_some());
        bytes[1] = u8::from(self.terminate_requested.load(Ordering::Relaxed));
        let at = failure.as_ref().map_or(u64::MAX, |(at, _)| *at);
        bytes[2..HEAD].copy_from_slice(&at.to_le_bytes());
        let mine = owners.iter().zip(values.iter());
        let mine = mine.filter(|(o, _)| ranks.owner[**o] == me);
        for ((_, x), word) in mine.zip(bytes[HEAD..].chunks_exact_mut(8)) {
            word.copy_from_slice(&x.to_le_bytes());
        }
        let all = transport.all_gather_known(&bytes, &lengths);
        let mut next: Vec<usize> = lengths
            .iter()
            .scan(0, |at, &n| {
                *at += n;
                Some(*at - n)
            })
            .collect();
        let word = |at: usize| -> [u8; 8] {
            all.get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .unwrap_or_default()
        };
        let terminate = next.iter().any(|&at| all.get(at + 1) == Some(&1));
        if terminate {
            self.terminate_requested.store(true, Ordering::Relaxed);
        }
        let cutoff = if terminate { terminating } else { u64::MAX };
        let first = (0..next.len())
            .filter(|&r| all.get(next[r]) != Some(&0))
            .map(|r| (u64::from_le_bytes(word(next[r] + 2)), r))
            .filter(|&(at, _)| at < cutoff)
            .min();
        if let Some((_, rank)) = first {
            // Its text, from its rank.
            let mut text = Vec::new();
            if let (true, Some((_, error))) = (rank == me, &failure) {
                text.push(error.exit_code());
                let message = match error {
                    Error::OnRank { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                text.extend_from_slice(message.as_bytes());
            }
            let text = transport.broadcast(rank, text);
            return Err(Error::OnRank {
                rank,
                code: text.first().copied().unwrap_or(1),
                message: String::from_utf8_lossy(text.get(1..).unwrap_or_default()).into_owned(),
            });
        }
        next.iter_mut().for_each(|at| *at += HEAD);
        for (&o, x) in owners.iter().zip(values.iter_mut()) {
            let at = &mut next[ranks.owner[o]];
            *x = f64::from_le_bytes(word(*at));
            *at += 8;
        }
        Ok(terminate)
    }
}
