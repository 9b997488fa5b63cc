//! Recording results (CSV), reading results, input and reference tables of every format
//! (`read`), comparing with references (`check`: one case of `cosimo check`) and reporting the
//! comparison (`report`: text, JSON, JUnit; `html` with `svg` plots; `markdown` for GitHub's job
//! summary; `baseline`: against an earlier report), and rewriting references with their
//! provenance (`provenance`); `plot` draws `cosimo plot`'s charts and `stability_map` the
//! stability maps (a heat map with its `contour`).

pub mod baseline;
pub mod check;
pub mod compare;
pub mod contour;
pub mod html;
pub mod markdown;
pub mod plot;
pub mod provenance;
pub mod read;
pub mod reference;
pub mod report;
pub mod stability_map;
pub mod svg;

pub use crate::observe::csv::CsvWriter;
pub use crate::table::{Interpolation, Table};
