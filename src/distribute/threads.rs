//! Ranks as threads of one process: the transport of tests and of trials of a partition, with
//! the collectives' semantics of MPI (every rank calls the same operations in the same order).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Barrier, Condvar, Mutex, PoisonError};

use crate::master::transport::Transport;

/// Messages sent and not yet received, per (sender, receiver), oldest first.
type Mailboxes = HashMap<(usize, usize), VecDeque<Vec<u8>>>;

/// What the ranks of one process share: one slot per rank and a barrier for the
/// collectives; for messages between two ranks, a queue per (sender, receiver).
struct Shared {
    slots: Mutex<Vec<Vec<u8>>>,
    barrier: Barrier,
    mail: Mutex<Mailboxes>,
    delivered: Condvar,
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
        mail: Mutex::new(HashMap::new()),
        delivered: Condvar::new(),
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

    fn exchange(
        &self,
        outgoing: &[u8],
        sends: &[(usize, usize)],
        incoming: &mut [u8],
        receives: &[(usize, usize)],
    ) {
        let lock = || {
            self.shared
                .mail
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        {
            let mut mail = lock();
            let mut rest = outgoing;
            for &(to, length) in sends {
                let (bytes, tail) = rest.split_at(length.min(rest.len()));
                rest = tail;
                let queue = mail.entry((self.rank, to)).or_default();
                queue.push_back(bytes.to_vec());
            }
        }
        self.shared.delivered.notify_all();
        let mut rest = incoming;
        for &(from, length) in receives {
            let (buffer, tail) = rest.split_at_mut(length.min(rest.len()));
            rest = tail;
            let mut mail = lock();
            let message = loop {
                if let Some(message) = mail
                    .get_mut(&(from, self.rank))
                    .and_then(VecDeque::pop_front)
                {
                    break message;
                }
                mail = self
                    .shared
                    .delivered
                    .wait(mail)
                    .unwrap_or_else(PoisonError::into_inner);
            };
            let n = message.len().min(buffer.len());
            buffer[..n].copy_from_slice(&message[..n]);
        }
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

    #[test]
    fn messages_between_two_ranks_arrive_in_the_order_they_were_sent() {
        let ranks = in_process(3);
        let received: Vec<Vec<Vec<u8>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranks
                .iter()
                .map(|t| {
                    scope.spawn(move || match t.rank() {
                        // Two messages to rank 1, none from anybody.
                        0 => {
                            t.exchange(&[1, 2], &[(1, 2)], &mut [], &[]);
                            t.exchange(&[3], &[(1, 1)], &mut [], &[]);
                            Vec::new()
                        }
                        // Both from rank 0 (in order), one from rank 2, packed in one buffer.
                        1 => {
                            let (mut ac, mut b) = ([0u8; 3], [0u8; 1]);
                            t.exchange(&[], &[], &mut ac, &[(0, 2), (2, 1)]);
                            t.exchange(&[], &[], &mut b, &[(0, 1)]);
                            vec![ac[..2].to_vec(), b.to_vec(), ac[2..].to_vec()]
                        }
                        _ => {
                            t.exchange(&[9], &[(1, 1)], &mut [], &[]);
                            Vec::new()
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a rank"))
                .collect()
        });
        assert_eq!(received[1], vec![vec![1, 2], vec![3], vec![9]]);
    }
}
