//! Recording results (CSV), reading input and reference tables, comparing with references
//! (`check`: one case of `cosimo check`).

pub mod check;
pub mod compare;
pub mod plot;
pub mod reference;
pub mod report;

pub use crate::observe::csv::CsvWriter;
pub use crate::table::{Interpolation, Table};
