//! A binary that cannot be loaded says which symbol or library is missing and what to do:
//! FMUs exported by Python-based tools need the Python runtime's symbols in the process.

mod common;

use std::process::Command;

use common::{cosimo, fmu};

/// An unpacked copy of the Dahlquist FMU whose binary is a library compiled from `c_source`.
fn fmu_with_binary(dir: &std::path::Path, c_source: &str) -> std::path::PathBuf {
    let folder = dir.join("Dahlquist");
    let archive = std::fs::File::open(fmu("Dahlquist", 2)).expect("the FMU opens");
    zip::ZipArchive::new(archive)
        .expect("a zip")
        .extract(&folder)
        .expect("extracts");
    let source = dir.join("lib.c");
    std::fs::write(&source, c_source).expect("writes the source");
    let binary = folder.join("binaries/linux64/Dahlquist.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("cc runs (the machine's C compiler)");
    assert!(status.success(), "cc builds the library");
    folder
}

#[test]
fn a_missing_python_symbol_is_named_with_what_to_do() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    // A data symbol is resolved when the library loads (as _Py_NoneStruct is).
    let folder = fmu_with_binary(
        dir.path(),
        "extern int _Py_NoneStruct;\nint *none(void) { return &_Py_NoneStruct; }\n",
    );
    let output = cosimo(["run", &folder.display().to_string(), "--stop-time", "0.1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("undefined symbol: _Py_NoneStruct"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the FMU needs the Python runtime's symbol _Py_NoneStruct")
            && stderr.contains("LD_PRELOAD="),
        "{stderr}"
    );
}

#[test]
fn another_missing_symbol_points_at_the_libraries() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let folder = fmu_with_binary(
        dir.path(),
        "extern int missing_table;\nint *table(void) { return &missing_table; }\n",
    );
    let output = cosimo(["run", &folder.display().to_string(), "--stop-time", "0.1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the symbol missing_table is provided by none of the libraries"),
        "{stderr}"
    );
}
