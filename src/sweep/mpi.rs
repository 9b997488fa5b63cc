//! The runs of a study over the ranks of `mpirun -n K` (feature `mpi`): rank 0 coordinates,
//! the other ranks make runs. A worker asks rank 0 for an index, makes that run and sends its
//! record back with the next request, so runs of unequal length balance themselves; rank 0
//! gathers the records in index order, and the caller builds the same table a local run gives.
//!
//! Rank 0 makes no runs itself: it stays free to answer at once, and it is the only thread
//! that calls MPI (MPI is initialised with `Threading::Funneled`). It waits for requests by
//! probing and sleeping (20 µs, doubling up to 200 µs while idle), not in a blocking receive,
//! which OpenMPI spins in: with more ranks than cores (`--oversubscribe`) a spinning
//! coordinator would slow the workers.
//!
//! Every rank prepares the study itself (reads it, opens its FMUs); a worker writes the result
//! files of its runs (when the study keeps them) into the output folder, which the ranks must
//! share; only rank 0 writes the table.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Destination, Source};
use mpi::Threading;
use serde::{Deserialize, Serialize};

use super::check::{RunCheck, Verdict};
use super::runner::{RunRecord, RunStatus, Runner};
use crate::{Error, Result};

/// A worker's request for its next run, carrying the record of the run it finished (if any).
const ASK: i32 = 1;
/// Rank 0's answer: the next index, or [`NO_MORE`].
const WORK: i32 = 2;
/// The answer that tells a worker to stop.
const NO_MORE: u64 = u64::MAX;
/// A worker stopped by Ctrl-C or kill: the record of its last run, and no request.
const LEAVE: i32 = 3;

/// How long rank 0 sleeps when no request is waiting: from the shortest, doubling while none
/// comes, up to the longest. A worker's request waits at most the longest sleep (with 1 ms it
/// doubled the time of 2 ms runs), and 5,000 idle wake-ups a second cost rank 0 about 1 % of
/// a core.
const IDLE_SHORTEST: Duration = Duration::from_micros(20);
const IDLE_LONGEST: Duration = Duration::from_micros(200);

/// This process's place among the ranks of an MPI job; MPI is finalised when it is dropped.
pub struct Ranks {
    world: SimpleCommunicator,
    // Declared last: dropped (MPI_Finalize) after the communicator.
    _universe: Universe,
}

impl Ranks {
    /// Initialise MPI (call once, on the main thread) and return the ranks when there are
    /// more than one; `None` when this process runs alone.
    pub fn start() -> Result<Option<Ranks>> {
        let (universe, _) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| Error::Internal("MPI was initialised twice".into()))?;
        let world = universe.world();
        if world.size() < 2 {
            return Ok(None);
        }
        Ok(Some(Ranks {
            world,
            _universe: universe,
        }))
    }

    /// This process's rank (0: the coordinator).
    pub fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.world.size() as usize
    }

    /// Every rank's `code` (0: ready), in rank order; every rank must call this.
    pub fn gather_codes(&self, code: u8) -> Vec<u8> {
        let mut codes = vec![0u8; self.size()];
        self.world.all_gather_into(&code, &mut codes[..]);
        codes
    }

    /// End every rank of the job with `code` (after an error that leaves the others waiting).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    /// Make the runs `indices` over the ranks; every rank must call this. Rank 0 hands out
    /// the indices, calls `finished` with each record as it comes and returns them in index
    /// order (runs cancelled by Ctrl-C left out; once `cancel` is set no run starts); the other
    /// ranks make runs and return `None`.
    pub fn run(
        &self,
        runner: &Runner,
        indices: &[usize],
        cancel: &AtomicBool,
        finished: &mut dyn FnMut(&RunRecord),
    ) -> Result<Option<Vec<RunRecord>>> {
        if self.rank() == 0 {
            self.coordinate(indices, cancel, finished).map(Some)
        } else {
            self.work(runner, cancel)?;
            Ok(None)
        }
    }

    fn coordinate(
        &self,
        indices: &[usize],
        cancel: &AtomicBool,
        finished: &mut dyn FnMut(&RunRecord),
    ) -> Result<Vec<RunRecord>> {
        let mut records = Vec::with_capacity(indices.len());
        let mut next = 0usize;
        let mut working = self.size() - 1;
        let mut idle = IDLE_SHORTEST;
        while working > 0 {
            let Some(status) = self.world.any_process().immediate_probe() else {
                std::thread::sleep(idle);
                idle = (idle * 2).min(IDLE_LONGEST);
                continue;
            };
            idle = IDLE_SHORTEST;
            let worker = self.world.process_at_rank(status.source_rank());
            let (bytes, _) = worker.receive_vec_with_tag::<u8>(status.tag());
            if !bytes.is_empty() {
                let record = decode(&bytes)?;
                if record.status != RunStatus::Cancelled {
                    finished(&record);
                    records.push(record);
                }
            }
            if status.tag() == LEAVE {
                working -= 1;
                continue;
            }
            let answer = match indices.get(next) {
                Some(&index) if !cancel.load(Ordering::Relaxed) => {
                    next += 1;
                    index as u64
                }
                _ => {
                    working -= 1;
                    NO_MORE
                }
            };
            worker.send_with_tag(&answer, WORK);
        }
        records.sort_by_key(|r| r.index);
        Ok(records)
    }

    fn work(&self, runner: &Runner, cancel: &AtomicBool) -> Result<()> {
        let coordinator = self.world.process_at_rank(0);
        let mut done: Vec<u8> = Vec::new();
        loop {
            if cancel.load(Ordering::Relaxed) {
                coordinator.send_with_tag(&done[..], LEAVE);
                return Ok(());
            }
            coordinator.send_with_tag(&done[..], ASK);
            let (index, _) = coordinator.receive_with_tag::<u64>(WORK);
            if index == NO_MORE {
                return Ok(());
            }
            let index = usize::try_from(index)
                .map_err(|_| Error::Internal(format!("MPI: run index {index} out of range")))?;
            done = encode(&runner.run_one(index, cancel))?;
        }
    }
}

/// A record as it travels between ranks: the numbers as their bits, so that rank 0 gets back
/// exactly what the worker computed (NaN and infinities included, which JSON cannot carry).
#[derive(Serialize, Deserialize)]
struct Wire {
    index: usize,
    parameters: Vec<u64>,
    summaries: Vec<Option<u64>>,
    status: RunStatus,
    error: Option<String>,
    check: Option<WireCheck>,
}

/// A run's check as it travels: the numbers as their bits.
#[derive(Serialize, Deserialize)]
struct WireCheck {
    verdict: Verdict,
    signal: Option<String>,
    deviation: Option<u64>,
    time: Option<u64>,
    message: String,
}

fn encode(record: &RunRecord) -> Result<Vec<u8>> {
    let wire = Wire {
        index: record.index,
        parameters: record.parameters.iter().map(|v| v.to_bits()).collect(),
        summaries: record
            .summaries
            .iter()
            .map(|s| s.map(f64::to_bits))
            .collect(),
        status: record.status,
        error: record.error.clone(),
        check: record.check.as_ref().map(|c| WireCheck {
            verdict: c.verdict,
            signal: c.signal.clone(),
            deviation: c.deviation.map(f64::to_bits),
            time: c.time.map(f64::to_bits),
            message: c.message.clone(),
        }),
    };
    serde_json::to_vec(&wire).map_err(|e| Error::Internal(format!("MPI: a run's record: {e}")))
}

fn decode(bytes: &[u8]) -> Result<RunRecord> {
    let wire: Wire = serde_json::from_slice(bytes)
        .map_err(|e| Error::Internal(format!("MPI: a run's record from a worker: {e}")))?;
    Ok(RunRecord {
        index: wire.index,
        parameters: wire.parameters.into_iter().map(f64::from_bits).collect(),
        summaries: wire
            .summaries
            .into_iter()
            .map(|s| s.map(f64::from_bits))
            .collect(),
        status: wire.status,
        error: wire.error,
        check: wire.check.map(|c| RunCheck {
            verdict: c.verdict,
            signal: c.signal,
            deviation: c.deviation.map(f64::from_bits),
            time: c.time.map(f64::from_bits),
            message: c.message,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_crosses_between_ranks_bit_for_bit() {
        let record = RunRecord {
            index: 7,
            parameters: vec![0.1 + 0.2, -0.0, 1e-310],
            summaries: vec![
                Some(f64::NAN),
                None,
                Some(f64::NEG_INFINITY),
                Some(1.0 / 3.0),
            ],
            status: RunStatus::Failed,
            error: Some("mass1: fmi3DoStep failed \"quoted\"\n".into()),
            check: Some(RunCheck {
                verdict: Verdict::Fail,
                signal: Some("mass2.x".into()),
                deviation: Some(0.1 + 0.2),
                time: Some(f64::NAN),
                message: "mass2.x: 3 of 51 points outside the tolerance".into(),
            }),
        };
        let back = decode(&encode(&record).unwrap()).unwrap();
        assert_eq!(back.index, record.index);
        assert_eq!(back.status, record.status);
        assert_eq!(back.error, record.error);
        let (a, b) = (back.check.unwrap(), record.check.unwrap());
        assert_eq!(
            (a.verdict, &a.signal, &a.message),
            (b.verdict, &b.signal, &b.message)
        );
        assert_eq!(a.deviation.map(f64::to_bits), b.deviation.map(f64::to_bits));
        assert_eq!(a.time.map(f64::to_bits), b.time.map(f64::to_bits));
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back.parameters), bits(&record.parameters));
        let sbits = |v: &[Option<f64>]| v.iter().map(|x| x.map(f64::to_bits)).collect::<Vec<_>>();
        assert_eq!(sbits(&back.summaries), sbits(&record.summaries));
    }
}
