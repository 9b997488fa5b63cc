//! Many runs of one system: a study ([`crate::settings::study`]) expanded into indexed runs
//! ([`plan`]), each made by [`runner::Runner::run_one`] (on local worker threads here; on shards
//! of a batch engine with `--shard`; MPI ranks can hand out the same indices) and gathered into
//! one [`table::SummaryTable`] in index order, the same whoever made the runs.

pub mod local;
pub mod plan;
pub mod runner;
pub mod table;

pub use local::run_local;
pub use plan::Plan;
pub use runner::{RunRecord, RunStatus, Runner};
pub use table::{Shard, SummaryTable, TableMeta};
