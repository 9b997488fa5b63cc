//! Recording results (CSV), reading input and reference tables.

pub mod csv;
pub mod table;

pub use self::csv::CsvWriter;
pub use table::{Interpolation, Table};
