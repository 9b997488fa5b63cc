//! Many runs of one system: a study ([`crate::settings::study`]) expanded into indexed runs
//! ([`plan`]), each made by [`runner::Runner::run_one`] (on local worker threads here; on shards
//! of a batch engine with `--shard`; on the ranks of `mpirun` with the feature `mpi`) and
//! gathered into one [`table::SummaryTable`] in index order, the same whoever made the runs.
//! A study with a `check` compares each run with its reference ([`check`]).

pub mod check;
pub mod local;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod plan;
pub mod runner;
pub mod table;

pub use check::{RunCheck, Verdict};
pub use local::run_local;
pub use plan::Plan;
pub use runner::{RunRecord, RunStatus, Runner};
pub use table::{Shard, SummaryTable, TableMeta};

/// The number of processes an MPI launcher started this one among, when more than one:
/// `OMPI_COMM_WORLD_SIZE` (Open MPI's `mpirun`) or `PMI_SIZE` (MPICH's `mpiexec`). Read from
/// the environment, so that a run without `mpirun` never initialises MPI.
pub fn mpi_launch_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .filter_map(|name| std::env::var(name).ok()?.trim().parse::<usize>().ok())
        .find(|&size| size > 1)
}
