//! Recording results (CSV), reading results, input and reference tables of every format
//! (`read`), comparing with references (`check`: one case of `cosimo check`) and reporting the
//! comparison (`report`: text, JSON, JUnit; `html` with `svg` plots; `markdown` for GitHub's job
//! summary; `baseline`: against an earlier report), and rewriting references with their
//! provenance (`provenance`).

pub mod baseline;
pub mod check;
pub mod compare;
pub mod html;
pub mod markdown;
pub mod plot;
pub mod provenance;
pub mod read;
pub mod reference;
pub mod report;
pub mod svg;

pub use crate::observe::csv::CsvWriter;
pub use crate::table::{Interpolation, Table};
