//! `cosimo plot` and `check --plot` on any table: the input is a table (the one `plot` reads),
//! a NUL byte and a second table (the result compared with the first as its reference; its
//! failing signals are drawn as `check --plot` draws them). An error is a fine answer; a panic,
//! a hang (an axis that never ends), a stack overflow or running out of memory is a bug.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cosimo::results::compare::{compare, CompareOptions, SignalTable};
use cosimo::results::plot::{plot_points, plot_series, plot_signal, Series};
use cosimo::table::{Column, Table};
use libfuzzer_sys::fuzz_target;

/// A PNG in a folder kept for the whole run.
fn picture() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder for the plots");
        let path = dir.path().join("plot.png");
        (dir, path)
    })
    .1
}

fuzz_target!(|data: &[u8]| {
    let (first, second) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], Some(&data[nul + 1..])),
        None => (data, None),
    };
    let Ok(first) = std::str::from_utf8(first) else {
        return;
    };
    let path = picture();
    if let Ok(table) = Table::parse(first, Path::new("fuzz/results.csv")) {
        let series: Vec<Series> = (0..table.columns().len())
            .filter(|&c| matches!(table.data(c), Column::Numbers(_)))
            .take(3)
            .map(|c| Series {
                label: table.columns()[c].clone(),
                points: table
                    .time()
                    .iter()
                    .copied()
                    .zip(table.values(c).iter().copied())
                    .collect(),
            })
            .collect();
        let _ = plot_series(path, "fuzz", ("time", "y"), &series, None);
        let _ = plot_points(path, "fuzz", ("x", "y"), &series, Some((-1.0, 1.0)));
    }
    let Some(Ok(second)) = second.map(std::str::from_utf8) else {
        return;
    };
    let (Ok(reference), Ok(result)) = (
        SignalTable::parse(first, Path::new("fuzz/reference.csv")),
        SignalTable::parse(second, Path::new("fuzz/result.csv")),
    ) else {
        return;
    };
    let options = CompareOptions {
        keep_traces: true,
        ..CompareOptions::default()
    };
    let comparison = compare(&reference, &result, &options, &|_| None);
    for signal in comparison.signals.iter().filter(|s| !s.passed).take(2) {
        let _ = plot_signal(path, &signal.name, signal);
    }
});
