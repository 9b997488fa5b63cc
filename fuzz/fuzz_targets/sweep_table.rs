//! What `cosimo sweep --resume` and `--merge` read back: an output folder's `sweep.json`, a NUL
//! byte and its `summary.csv` (whole, and as a killed sweep left it). An error is a fine
//! answer; a panic, a hang, a stack overflow or running out of memory is a bug, and so is a
//! partial read that refuses what the whole read takes.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use cosimo::sweep::SummaryTable;
use libfuzzer_sys::fuzz_target;

fn folder() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder for the fuzz input");
        let path = dir.path().to_path_buf();
        (dir, path)
    })
    .1
}

fuzz_target!(|data: &[u8]| {
    let (meta, csv) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (data, &[][..]),
    };
    let dir = folder();
    if std::fs::write(dir.join("sweep.json"), meta).is_err()
        || std::fs::write(dir.join("summary.csv"), csv).is_err()
    {
        return;
    }
    let whole = SummaryTable::read(dir);
    let partial = SummaryTable::read_partial(dir);
    if let Ok(table) = &whole {
        let _ = table.header();
        let _ = table.check_counts();
        if csv.ends_with(b"\n") {
            assert!(partial.is_ok(), "{partial:?}");
        }
        let _ = SummaryTable::merge(vec![(dir.clone(), table.clone())]);
    }
});
