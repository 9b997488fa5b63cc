//! The transport of a run over the ranks of `mpirun -n K`: MPI collectives on the world
//! communicator, called from the main thread only (MPI is initialised `Funneled`).

use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::request::WaitGuard;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Destination, Root, Source};
use mpi::{Count, Threading};

use crate::master::transport::Transport;
use crate::{Error, Result};

/// The MPI world of this process; MPI is finalised when it is dropped.
pub struct MpiTransport {
    world: SimpleCommunicator,
    /// The ranks on this rank's host (those that share its memory).
    on_host: usize,
    // Declared last: dropped (MPI_Finalize) after the communicator.
    _universe: Universe,
}

// SAFETY: MPI is initialised with `Threading::Funneled`, and the run loop calls the transport
// from the thread that created it only (the worker threads step FMUs and never see it); the
// bounds let the execution that holds it move as a whole, as the one-process run does.
unsafe impl Send for MpiTransport {}
unsafe impl Sync for MpiTransport {}

impl MpiTransport {
    /// Initialise MPI (once, on the main thread); `None` when this process runs alone.
    pub fn start() -> Result<Option<MpiTransport>> {
        let (universe, _) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| Error::Internal("MPI was initialised twice".into()))?;
        let world = universe.world();
        if world.size() < 2 {
            return Ok(None);
        }
        let on_host = world.split_shared(world.rank()).size() as usize;
        Ok(Some(MpiTransport {
            world,
            on_host,
            _universe: universe,
        }))
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn ranks_on_host(&self) -> usize {
        self.on_host
    }

    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let mut counts = vec![0 as Count; self.size()];
        self.world
            .all_gather_into(&(mine.len() as Count), &mut counts[..]);
        let lengths: Vec<usize> = counts.iter().map(|&n| n as usize).collect();
        let all = self.all_gather_known(mine, &lengths);
        let mut at = 0;
        lengths
            .iter()
            .map(|&n| {
                at += n;
                all[at - n..at].to_vec()
            })
            .collect()
    }

    fn all_gather_known(&self, mine: &[u8], lengths: &[usize]) -> Vec<u8> {
        let counts: Vec<Count> = lengths.iter().map(|&n| n as Count).collect();
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |at, &n| {
                let start = *at;
                *at += n;
                Some(start)
            })
            .collect();
        let mut all = vec![0u8; lengths.iter().sum()];
        {
            let mut partition = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            self.world.all_gather_varcount_into(mine, &mut partition);
        }
        all
    }

    fn broadcast_known(&self, root: usize, bytes: &mut [u8]) {
        self.world
            .process_at_rank(root as i32)
            .broadcast_into(bytes);
    }

    fn exchange(
        &self,
        outgoing: &[u8],
        sends: &[(usize, usize)],
        incoming: &mut [u8],
        receives: &[(usize, usize)],
    ) {
        mpi::request::scope(|scope| {
            // Receives posted first; every request is waited for when its guard drops.
            let mut pending = Vec::with_capacity(sends.len() + receives.len());
            let mut rest = incoming;
            for &(rank, length) in receives {
                let (buffer, tail) = rest.split_at_mut(length.min(rest.len()));
                rest = tail;
                let from = self.world.process_at_rank(rank as i32);
                pending.push(WaitGuard::from(from.immediate_receive_into(scope, buffer)));
            }
            let mut rest = outgoing;
            for &(rank, length) in sends {
                let (bytes, tail) = rest.split_at(length.min(rest.len()));
                rest = tail;
                let to = self.world.process_at_rank(rank as i32);
                pending.push(WaitGuard::from(to.immediate_send(scope, bytes)));
            }
            drop(pending);
        });
    }

    fn broadcast(&self, root: usize, mut bytes: Vec<u8>) -> Vec<u8> {
        let process = self.world.process_at_rank(root as i32);
        let mut len = bytes.len() as u64;
        process.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        process.broadcast_into(&mut bytes[..]);
        bytes
    }
}
