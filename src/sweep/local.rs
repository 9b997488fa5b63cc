//! The runs of a study on this machine's cores: worker threads take the next index as they
//! become free (runs of unequal length balance themselves), and the records come back to the
//! caller as they finish; the result is in index order whatever the number of workers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use super::runner::{RunRecord, RunStatus, Runner};

/// Make the runs `indices` on `workers` threads (0: one per core), calling `finished` with
/// each record as it comes. Once `cancel` is set no run starts and the running ones stop at
/// their next result row; the records of the runs that ended (ok, terminated or failed) are
/// returned in index order, cancelled runs left out.
pub fn run_local(
    runner: &Runner,
    indices: &[usize],
    workers: usize,
    cancel: &AtomicBool,
    finished: &mut dyn FnMut(&RunRecord),
) -> Vec<RunRecord> {
    let asked = workers;
    let workers = if workers == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        workers
    }
    .clamp(1, indices.len().max(1));
    let next = AtomicUsize::new(0);
    let (send, receive) = mpsc::channel::<RunRecord>();
    let mut records = Vec::with_capacity(indices.len());
    // Take the next run until none is left, the study is cancelled or nobody listens.
    let take_runs = |send: mpsc::Sender<RunRecord>| loop {
        if cancel.load(Ordering::Relaxed) {
            break;
        }
        let Some(&index) = indices.get(next.fetch_add(1, Ordering::Relaxed)) else {
            break;
        };
        if send.send(runner.run_one(index, cancel)).is_err() {
            break;
        }
    };
    std::thread::scope(|scope| {
        let mut started = 0;
        for w in 0..workers {
            let send = send.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("cosimo-sweep-{w}"))
                .spawn_scoped(scope, move || take_runs(send));
            if let Err(error) = spawned {
                // More workers than the system can start (--workers 100000): the study runs
                // on those that started, or on this thread, rather than failing.
                log::warn!(
                    "{} sweep workers asked for, but worker thread {} could not start ({error}); the study runs on {}",
                    if asked == 0 { workers.to_string() } else { asked.to_string() },
                    w + 1,
                    match started {
                        0 => "this thread alone".to_string(),
                        n => format!("the {n} that started"),
                    }
                );
                break;
            }
            started += 1;
        }
        if started == 0 {
            take_runs(send.clone());
        }
        drop(send);
        for record in receive {
            if record.status != RunStatus::Cancelled {
                finished(&record);
                records.push(record);
            }
        }
    });
    records.sort_by_key(|r| r.index);
    records
}
