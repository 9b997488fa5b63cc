//! Every example in `fmus/` gives bit-identical results to the ones cosimo wrote before its run
//! loop was rebuilt (`tests/data/examples/`, see the README there).

mod common;

use std::path::PathBuf;

use common::cosimo;

#[test]
fn every_example_gives_the_committed_results_bit_for_bit() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let references = root.join("tests/data/examples");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root.join("fmus"))
        .expect("fmus/ lists")
        .map(|e| e.expect("an entry").path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "ssp")))
        // Study files are run by `cosimo sweep` (tests/sweep.rs), not `cosimo run`.
        .filter(|p| !p.to_string_lossy().contains("study"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 16, "the examples are found: {examples:?}");
    let mut different = Vec::new();
    for example in &examples {
        let name = example
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a name");
        let out = dir.path().join(format!("{name}.csv"));
        let output = cosimo([
            "run",
            &example.display().to_string(),
            "--quiet",
            "-o",
            &out.display().to_string(),
        ]);
        assert!(
            output.status.success(),
            "{name} runs: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let reference = references.join(format!("{name}.csv"));
        let expected = std::fs::read(&reference).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (a new example needs its reference)",
                reference.display()
            )
        });
        let actual = std::fs::read(&out).expect("the results read");
        if actual != expected {
            let line = actual
                .split(|&b| b == b'\n')
                .zip(expected.split(|&b| b == b'\n'))
                .position(|(a, e)| a != e)
                .map_or("the length".to_string(), |i| format!("line {}", i + 1));
            different.push(format!("{name}: differs at {line}"));
        }
    }
    assert!(
        different.is_empty(),
        "results changed:\n{}",
        different.join("\n")
    );
}
