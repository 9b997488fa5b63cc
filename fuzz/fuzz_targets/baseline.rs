//! `cosimo check --baseline REPORT.json`: an earlier report, read and set against this run's
//! cases. An error is a fine answer; a panic, a hang or running out of memory is a bug.
#![no_main]

use std::sync::OnceLock;

use cosimo::results::baseline::{Baseline, Slower};
use libfuzzer_sys::fuzz_target;

fn folder() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary folder"))
}

fuzz_target!(|data: &[u8]| {
    let path = folder().path().join("baseline.json");
    std::fs::write(&path, data).expect("writes the input");
    if let Ok(baseline) = Baseline::read(&path) {
        let _ = baseline.compare(&mut [], &Slower::default());
    }
});
