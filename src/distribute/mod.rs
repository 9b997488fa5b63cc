//! ONE system over the ranks of `mpirun -n K` (feature `mpi` for the MPI transport): which
//! runs can be spread, which rank owns which component, and the transports: MPI (`mpi`) and
//! ranks as threads of one process (`threads`, for tests).
//!
//! The run itself is the one-process run with a transport (`master::transport`): every rank
//! walks the same loop, steps only the components it owns and holds stand-ins for the others.
//! Jacobi, Gauss-Seidel, the implicit algorithm (fixed steps or macro-step control with any
//! estimator, the extended coupling included) and constraint coupling spread: what owners
//! compute for an interface system is gathered and the system solved on every rank. So does
//! the reduced interface model: the multibody component's owner computes the effective mass
//! and force, and the fast components' forces travel once per fast step, or once per macro
//! step where one rank owns every fast component (`master::rim`).
//!
//! The partition, first found wins: `--partition FILE` (`partition_file`), the ranks the
//! system gives its components (`"rank"` in a system file, `rank="N"` in an SSP's
//! `org.cosimo.component` annotation), else contiguous runs of the coupling order balanced by
//! the components' step costs measured in a short trial over the ranks (`balance`), or split
//! by component count where that trial cannot time a step.

pub mod balance;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod partition_file;
pub mod threads;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::master::execution::{Execution, RunOptions};
use crate::master::parallel::{self, ParallelPlacement};
use crate::master::pool::{Layout, TrialClock};
use crate::master::transport::{agree, Ranks, Transport};
use crate::system::System;
use crate::{Error, Result};

/// Which rank steps each component of a run over ranks, and how that was decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// Per component (in system order): the rank that steps it.
    pub owner: Vec<usize>,
    pub chosen_by: ChosenBy,
    /// Per component: its measured step cost (ns per macro step), where it was measured.
    pub costs: Option<Vec<f64>>,
}

/// Where a partition came from.
#[derive(Debug, Clone, PartialEq)]
pub enum ChosenBy {
    /// `--partition FILE`.
    File(PathBuf),
    /// The system's own ranks (system file or SSP annotation).
    System,
    /// Contiguous along the coupling order, balanced by measured step cost.
    Measured,
    /// Contiguous along the coupling order by component count, because the costs could not
    /// be measured (why).
    Count(String),
}

impl Partition {
    /// What each rank steps, for the run's messages: `names` are the components' names.
    pub fn describe(&self, names: &[String]) -> String {
        /// Names shown per rank.
        const SHOWN: usize = 3;
        let ranks = self.owner.iter().max().map_or(0, |r| r + 1);
        let how = match &self.chosen_by {
            ChosenBy::File(path) => format!("as --partition {} gives it", path.display()),
            ChosenBy::System => "as the system gives it (the components' ranks)".into(),
            ChosenBy::Measured => {
                "along the coupling order, balanced by the components' measured step costs".into()
            }
            ChosenBy::Count(why) => {
                format!("along the coupling order by component count ({why})")
            }
        };
        let per_rank: Vec<String> = (0..ranks)
            .map(|rank| {
                let mine: Vec<usize> = (0..self.owner.len())
                    .filter(|&i| self.owner[i] == rank)
                    .collect();
                let mut shown: Vec<&str> = mine
                    .iter()
                    .take(SHOWN)
                    .filter_map(|&i| names.get(i).map(String::as_str))
                    .collect();
                let more = format!("and {} more", mine.len().saturating_sub(SHOWN));
                if mine.len() > SHOWN {
                    shown.push(&more);
                }
                let mut text = format!("rank {rank}: {}", shown.join(", "));
                if let Some(costs) = &self.costs {
                    let micros: f64 = mine.iter().map(|&i| costs[i]).sum::<f64>() / 1e3;
                    text += &format!(" ({micros:.1} µs per macro step)");
                }
                text
            })
            .collect();
        format!("{ranks} MPI ranks, {how}: {}", per_rank.join("; "))
    }
}

/// Refuse more ranks than components, before anything is loaded; the owner of each
/// component as `file` (`--partition`) or else the system gives it (`None`: to be balanced
/// along the coupling order by [`instantiate`]).
pub fn given(system: &System, ranks: usize, file: Option<&Path>) -> Result<Option<Partition>> {
    let count = system.components.len();
    if ranks > count {
        return Err(Error::Usage(format!(
            "the system has {count} component{} and can use at most {count} MPI rank{}, not {ranks}: \
             run it with mpirun -n {count} or fewer",
            plural(count),
            plural(count),
        )));
    }
    if let Some(path) = file {
        return Ok(Some(Partition {
            owner: partition_file::read(path, system, ranks)?,
            chosen_by: ChosenBy::File(path.to_path_buf()),
            costs: None,
        }));
    }
    let given: Vec<Option<usize>> = system.components.iter().map(|c| c.rank).collect();
    if given.iter().all(Option::is_none) {
        return Ok(None);
    }
    let mut owner = Vec::with_capacity(count);
    for (component, rank) in system.components.iter().zip(&given) {
        match rank {
            None => {
                return Err(Error::Usage(format!(
                    "component \"{}\" has no rank while others have one: give every component a rank (0 to {}; \"rank\" in a system file, rank=\"N\" in an SSP's cosimo:Component), or none to split the system along its coupling order",
                    component.name,
                    ranks - 1
                )))
            }
            Some(r) if *r >= ranks => {
                return Err(Error::Usage(format!(
                    "component \"{}\" asks for rank {r}, but the run has {ranks} MPI ranks (0 to {}): {} its rank",
                    component.name,
                    ranks - 1,
                    more_ranks_or(*r, system.components.len())
                )))
            }
            Some(r) => owner.push(*r),
        }
    }
    if let Some(idle) = (0..ranks).find(|r| !owner.contains(r)) {
        return Err(Error::Usage(format!(
            "no component has rank {idle}, so MPI rank {idle} would have nothing to do: give it a component or run with fewer ranks"
        )));
    }
    Ok(Some(Partition {
        owner,
        chosen_by: ChosenBy::System,
        costs: None,
    }))
}

/// Open the FMUs of `system` and instantiate this rank's components (stand-ins for the
/// others), as `given` splits them or else balanced by a trial; every rank calls this and all
/// leave together: with the same partition, or with the first failing rank's error
/// (`in_file` names the file a usage error concerns, before it travels).
pub fn instantiate(
    system: &System,
    options: &RunOptions,
    transport: &Arc<dyn Transport>,
    given: Option<Partition>,
    in_file: &dyn Fn(Error) -> Error,
) -> Result<(Execution, Partition)> {
    let together = transport.as_ref();
    if options.time_components && system.experiment.parallel {
        return Err(Error::Usage(
            "--partition-out times every component on its rank's own thread, and --parallel puts them on threads of their own: drop one of them".into(),
        ));
    }
    let fmus = all_or_none(together, Execution::open_fmus(system, options), in_file)?;
    // The coupling order costs a resolution and a graph: only where a split or threads need it.
    // In units that keep each algebraic loop on one rank.
    let units = match given.is_none() || system.experiment.parallel {
        true => all_or_none(together, balance::coupling_order(system, &fmus), in_file)?,
        false => Vec::new(),
    };
    let order = units.concat();
    let partition = match given {
        Some(partition) => partition,
        None => {
            let size = transport.size();
            let by_count = balance::by_count(&units, size);
            match balance::measure(system, options, &fmus, transport, by_count.clone())? {
                Ok(costs) => Partition {
                    owner: balance::by_cost(&units, &costs, size),
                    chosen_by: ChosenBy::Measured,
                    costs: Some(costs),
                },
                Err(why) => Partition {
                    owner: by_count,
                    chosen_by: ChosenBy::Count(why),
                    costs: None,
                },
            }
        }
    };
    let (mut layout, placement) = match system.experiment.parallel {
        true => threads_on_rank(system, options, &fmus, transport, &order, &partition)?,
        false => (Layout::Caller, None),
    };
    let mut ranks = Ranks::new(transport.clone(), partition.owner.clone());
    ranks
        .clock
        .set_threads(placement.as_ref().map_or(1, |p| p.threads));
    if options.time_components {
        // Each component's time in the run's steps, on the rank's calling thread.
        let clock = Arc::new(TrialClock::new(system.components.len()));
        clock.timing.store(true, Ordering::Relaxed);
        layout = Layout::Timed(clock.clone());
        ranks.components = Some(clock);
    }
    let options = RunOptions {
        ranks: Some(ranks),
        ..options.clone()
    };
    let execution = Execution::instantiate_on(system, &options, &fmus, &layout);
    let mut execution = all_or_none(together, execution, in_file)?;
    execution.parallel = placement;
    Ok((execution, partition))
}

/// `--parallel` under `mpirun`: the threads of this rank's components, from the step costs
/// the balancing trial measured (or a trial over the given partition), or `--threads N`.
fn threads_on_rank(
    system: &System,
    options: &RunOptions,
    fmus: &[Arc<crate::fmu::Fmu>],
    transport: &Arc<dyn Transport>,
    order: &[usize],
    partition: &Partition,
) -> Result<(Layout, Option<ParallelPlacement>)> {
    let measured = match (&partition.costs, options.threads) {
        (_, n) if n > 0 => Ok(Vec::new()),
        (Some(costs), _) => Ok(costs.clone()),
        (None, _) => balance::measure(system, options, fmus, transport, partition.owner.clone())?,
    };
    let me = transport.rank();
    let owned: Vec<bool> = partition.owner.iter().map(|&r| r == me).collect();
    let costs = measured.as_deref().map_err(String::as_str);
    let here = transport.ranks_on_host();
    let chosen = parallel::rank_layout(system, options, fmus, (order, &owned), costs, here);
    let (layout, placement) = all_or_none(transport.as_ref(), chosen, &|e| e)?;
    Ok((layout, Some(placement)))
}

/// Write to `path` the split of `execution`'s components over `ranks` ranks, contiguous along
/// the coupling order (each algebraic loop on one rank) and balanced by `seconds` (each
/// component's stepping time over a run, as `--partition-out` measured it), as
/// `--partition FILE` reads it; the split.
pub fn write_partition(
    path: &Path,
    execution: &Execution,
    seconds: &[f64],
    ranks: usize,
) -> Result<Vec<usize>> {
    let components = &execution.resolved.components;
    if seconds.len() != components.len() {
        return Err(Error::Internal(
            "the components' times do not fit the system".into(),
        ));
    }
    let units = balance::loop_units(&execution.resolved, &execution.graph);
    let owner = balance::by_cost(&units, seconds, ranks);
    let mut per_rank = vec![0.0; ranks];
    for (i, &r) in owner.iter().enumerate() {
        per_rank[r] += seconds[i];
    }
    let mut text = String::from(
        "# written by cosimo run --partition-out: contiguous along the coupling order, balanced by\n\
         # each component's stepping time over the whole run; read it with --partition FILE.\n",
    );
    for (r, total) in per_rank.iter().enumerate() {
        text += &format!("# rank {r}: {total:.6} s stepping\n");
    }
    for &i in units.iter().flatten() {
        text += &format!("{} {}\n", components[i].name, owner[i]);
    }
    std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    Ok(owner)
}

/// `result` where every rank succeeded, else the first failing rank's error on every rank
/// (`in_file` names the file a usage error concerns, before it travels).
fn all_or_none<T>(
    transport: &dyn Transport,
    result: Result<T>,
    in_file: &dyn Fn(Error) -> Error,
) -> Result<T> {
    match result {
        Ok(value) => agree(transport, Ok(())).map(|()| value),
        Err(error) => {
            let failure = match in_file(error) {
                passed @ Error::OnRank { .. } => passed,
                error => Error::OnRank {
                    rank: transport.rank(),
                    code: error.exit_code(),
                    message: error.to_string(),
                },
            };
            agree(transport, Err(failure))?;
            Err(Error::Internal("a failure no rank reported".into()))
        }
    }
}

/// What to do about a component given rank `asked` that the run does not have: run with more
/// ranks where the system has components enough for them, else change it (a rank read from a
/// file may be any number).
pub(crate) fn more_ranks_or(asked: usize, components: usize) -> String {
    if asked < components {
        format!("run with mpirun -n {} or change", asked + 1)
    } else {
        "change".into()
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
