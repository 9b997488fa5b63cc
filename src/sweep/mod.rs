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
/// `OMPI_COMM_WORLD_SIZE` (Open MPI's `mpirun`), `PMI_SIZE` (MPICH's `mpiexec`, Slurm's
/// `srun --mpi=pmi2`), or, where a PMIx launcher started it (`PMIX_RANK`: Slurm's
/// `srun --mpi=pmix`), the tasks of its Slurm job step. Read from the environment, so that a
/// run without a launcher never initialises MPI (a batch script's own environment has Slurm's
/// job variables but no PMI ones).
pub fn mpi_launch_size() -> Option<usize> {
    launch_size(&|name| std::env::var(name).ok())
}

fn launch_size(var: &dyn Fn(&str) -> Option<String>) -> Option<usize> {
    let size = |name: &str| var(name)?.trim().parse::<usize>().ok();
    let pmix = var("PMIX_RANK").is_some();
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .into_iter()
        .filter_map(size)
        .chain(pmix.then(|| size("SLURM_STEP_NUM_TASKS")).flatten())
        .find(|&size| size > 1)
}

#[cfg(test)]
mod tests {
    use super::launch_size;

    #[test]
    fn launchers_are_told_apart_by_their_environment() {
        let with = |vars: &'static [(&'static str, &'static str)]| {
            launch_size(&move |name| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            })
        };
        assert_eq!(with(&[("OMPI_COMM_WORLD_SIZE", "3")]), Some(3));
        assert_eq!(with(&[("PMI_SIZE", "4"), ("PMI_RANK", "1")]), Some(4));
        // srun --mpi=pmix: PMIx names the rank, Slurm the step's tasks.
        assert_eq!(
            with(&[("PMIX_RANK", "0"), ("SLURM_STEP_NUM_TASKS", "2")]),
            Some(2)
        );
        // A batch script's own environment (no launcher): not a run over ranks.
        assert_eq!(
            with(&[("SLURM_NTASKS", "8"), ("SLURM_STEP_NUM_TASKS", "8")]),
            None
        );
        // One process is no run over ranks either.
        assert_eq!(with(&[("OMPI_COMM_WORLD_SIZE", "1")]), None);
        assert_eq!(with(&[]), None);
    }
}
