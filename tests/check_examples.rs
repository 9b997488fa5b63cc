//! CI's regression check of the example systems: `cosimo check fmus/references/` runs every
//! example against its committed reference results (closed-form solutions, see
//! `fmus/references/README.md`), and the committed references are checked against the closed
//! forms they came from.
//!
//! Regenerate the references with
//! `cargo test --test check_examples -- --ignored write_references`.

use std::path::{Path, PathBuf};
use std::process::Command;

use nalgebra::{Matrix4, Vector4};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Parameters of `fmus/two-mass-force-force.json`.
const M1: f64 = 1.0;
const M2: f64 = 1.0;
const C1: f64 = 1000.0;
const C2: f64 = 1000.0;
const CC: f64 = 1000.0;
const D1: f64 = 10.0;
const D2: f64 = 10.0;
const DC: f64 = 10.0;
const X10: f64 = 0.1;

/// The monolithic two-mass oscillator `z' = A z`, `z = (x1, v1, x2, v2)`, solved exactly:
/// `z(t) = exp(A t) z0`. Returns (x1, v1, x2, v2, F1) with `F1 = cc (x2 - x1) + dc (v2 - v1)`.
fn two_mass(t: f64) -> [f64; 5] {
    #[rustfmt::skip]
    let a = Matrix4::new(
        0.0, 1.0, 0.0, 0.0,
        -(C1 + CC) / M1, -(D1 + DC) / M1, CC / M1, DC / M1,
        0.0, 0.0, 0.0, 1.0,
        CC / M2, DC / M2, -(C2 + CC) / M2, -(D2 + DC) / M2,
    );
    let z = (a * t).exp() * Vector4::new(X10, 0.0, 0.0, 0.0);
    let f1 = CC * (z[2] - z[0]) + DC * (z[3] - z[1]);
    [z[0], z[1], z[2], z[3], f1]
}

/// The conformance chain: the oscillator with effective stiffness 2, x(t) = cos(sqrt 2 t).
fn chain(t: f64) -> [f64; 2] {
    let w = 2f64.sqrt();
    [(w * t).cos(), -w * (w * t).sin()]
}

fn two_mass_csv() -> String {
    let mut text = String::from(
        "\"time\",\"mass1.x\",\"mass1.v\",\"mass2.x\",\"mass2.v\",\"spring.F1\",\"spring.F2\"\n",
    );
    for n in 0..=100 {
        let t = n as f64 / 100.0;
        let [x1, v1, x2, v2, f1] = two_mass(t);
        text.push_str(&format!(
            "{t},{x1:e},{v1:e},{x2:e},{v2:e},{f1:e},{:e}\n",
            -f1
        ));
    }
    text
}

fn chain_csv() -> String {
    let mut text = String::from(
        "\"time\",\"osc.x\",\"osc.v\",\"last.Int64_output\",\"last.Boolean_output\"\n",
    );
    for n in 0..=20 {
        let t = n as f64 / 10.0;
        let [x, v] = chain(t);
        text.push_str(&format!("{t},{x:e},{v:e},-5,true\n"));
    }
    text
}

fn references() -> [(&'static str, String); 2] {
    [
        (
            "fmus/references/two-mass-force-force/reference.csv",
            two_mass_csv(),
        ),
        (
            "fmus/references/conformance-chain/reference.csv",
            chain_csv(),
        ),
    ]
}

/// Writes the committed reference files from the closed forms.
#[test]
#[ignore = "writes the committed reference files; run once after changing the closed forms"]
fn write_references() {
    for (path, text) in references() {
        std::fs::write(root().join(path), text).unwrap();
    }
}

#[test]
fn committed_references_are_the_closed_form_solutions() {
    for (path, expected) in references() {
        let committed = std::fs::read_to_string(root().join(path)).unwrap();
        let numbers = |text: &str| -> Vec<f64> {
            text.lines()
                .skip(1)
                .flat_map(|l| l.split(',').map(|c| c.parse::<f64>().unwrap_or(f64::NAN)))
                .collect()
        };
        let (a, b) = (numbers(&committed), numbers(&expected));
        assert_eq!(a.len(), b.len(), "{path}");
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 1e-12 * y.abs().max(1.0) || (x.is_nan() && y.is_nan()),
                "{path}: {x} != {y}"
            );
        }
    }
}

#[test]
fn the_exact_solution_satisfies_the_equations_of_motion() {
    // Independent check of the matrix exponential: central differences of the solution meet
    // m1 x1'' = -c1 x1 - d1 v1 + F1 and x1' = v1.
    let h = 1e-5;
    for t in [0.05, 0.3, 0.77] {
        let [x1m, v1m, ..] = two_mass(t - h);
        let [x1, v1, _, _, f1] = two_mass(t);
        let [x1p, v1p, ..] = two_mass(t + h);
        assert!(((x1p - x1m) / (2.0 * h) - v1).abs() < 1e-6);
        let a1 = (v1p - v1m) / (2.0 * h);
        assert!((M1 * a1 - (-C1 * x1 - D1 * v1 + f1)).abs() < 1e-4 * C1 * X10);
    }
}

#[test]
fn the_examples_meet_their_references() {
    // The system files name the FMUs under target/fmus: pack them first.
    for (model, version) in [
        ("Oscillator", 2),
        ("Oscillator", 3),
        ("CouplingSpring", 2),
        ("Feedthrough", 2),
        ("Feedthrough", 3),
    ] {
        fmu_pack::fmu_path(model, version);
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let junit = dir.path().join("report.xml");
    let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .current_dir(root())
        .args(["check", "fmus/references", "--json-file"])
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("PASS  two-mass-force-force"), "{text}");
    assert!(text.contains("PASS  conformance-chain"), "{text}");
    assert!(text.contains("PASS  two-mass-force-force-ssp"), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["summary"]["failed"], 0);
    assert!(Path::new(&junit).is_file());
}

#[test]
fn a_coarser_macro_step_leaves_the_tube() {
    for (model, version) in [
        ("Oscillator", 2),
        ("Oscillator", 3),
        ("CouplingSpring", 2),
        ("Feedthrough", 2),
        ("Feedthrough", 3),
    ] {
        fmu_pack::fmu_path(model, version);
    }
    for (case, step) in [
        ("fmus/references/two-mass-force-force", "0.004"),
        ("fmus/references/conformance-chain", "0.05"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_cosimo"))
            .current_dir(root())
            .args(["check", case, "--step-size", step])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(3),
            "{case} at h = {step}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
