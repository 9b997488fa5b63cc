//! Ranks as threads of one process: the transport of tests and of trials of a partition, with
//! the collectives' semantics of MPI (every rank calls the same operations in the same order).

use std::sync::{Arc, Barrier, Mutex, PoisonError};

use crate::master::transport::Transport;

/// What the ranks of one process share: one slot per rank and a barrier.
struct Shared {
    slots: Mutex<Vec<Vec<u8>>>,
    barrier: Barrier,
}

/// One rank of [`in_process`].
pub struct ThreadRank {
    rank: usize,
    shared: Arc<Shared>,
}

/// The transports of `size` ranks that run as threads of this process, one per rank.
pub fn in_process(size: usize) -> Vec<Arc<dyn Transport>> {
    let shared = Arc::new(Shared {
        slots: Mutex::new(vec![Vec::new(); size]),
        barrier: Barrier::new(size),
    });
    (0..size)
        .map(|rank| {
            Arc::new(ThreadRank {
                rank,
                shared: shared.clone(),
            }) as Arc<dyn Transport>
        })
        .collect()
}

impl ThreadRank {
    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // A rank that panicked holds nothing the others need: its slot is plain bytes.
        self.shared
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Transport for ThreadRank {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.slots().len()
    }

    fn ranks_on_host(&self) -> usize {
        self.size()
    }

    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        self.slots()[self.rank] = mine.to_vec();
        self.shared.barrier.wait();
        let all = self.slots().clone();
        // Nobody writes the next round's slot before everybody has read this one.
        self.shared.barrier.wait();
        all
    }

    fn broadcast(&self, root: usize, bytes: Vec<u8>) -> Vec<u8> {
        if self.rank == root {
            self.slots()[root] = bytes;
        }
        self.shared.barrier.wait();
        let theirs = self.slots()[root].clone();
        self.shared.barrier.wait();
        theirs
    }
}

#[cfg(test)]
mod tests {
    use super::in_process;

    #[test]
    fn every_rank_gets_every_rank_bytes_in_rank_order() {
        let ranks = in_process(3);
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranks
                .iter()
                .map(|t| {
                    scope.spawn(move || {
                        let me = t.rank() as u8;
                        let all = t.all_gather(&vec![me; usize::from(me) + 1]);
                        let from_two = t.broadcast(2, if me == 2 { vec![42] } else { Vec::new() });
                        (all, from_two)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a rank"))
                .collect()
        });
        for (all, from_two) in results {
            assert_eq!(all, vec![vec![0], vec![1, 1], vec![2, 2, 2]]);
            assert_eq!(from_two, vec![42]);
        }
    }
}
