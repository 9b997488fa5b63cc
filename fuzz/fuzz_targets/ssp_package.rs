//! A whole `.ssp` file: the zip extraction and the import of its `SystemStructure.ssd`. An
//! error is a fine answer; a panic, a hang, a stack overflow or running out of memory is a bug.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use cosimo::system::ssp::SspPackage;
use libfuzzer_sys::fuzz_target;

/// One folder for the whole run, holding the input as `input.ssp`.
fn ssp_path() -> &'static PathBuf {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder for the fuzz input");
        let path = dir.path().join("input.ssp");
        (dir, path)
    })
    .1
}

fuzz_target!(|data: &[u8]| {
    let path = ssp_path();
    if std::fs::write(path, data).is_err() {
        return;
    }
    if let Ok(package) = SspPackage::open(path) {
        let _ = package.import(None);
    }
});
