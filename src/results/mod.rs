//! Recording results (CSV), reading input and reference tables, comparing with references
//! (`check`: one case of `cosimo check`).

pub mod check;
pub mod compare;
pub mod csv;
pub mod plot;
pub mod reference;
pub mod report;
pub mod table;

pub use self::csv::CsvWriter;
pub use table::{Interpolation, Table};
