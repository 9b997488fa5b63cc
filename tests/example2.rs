//! The variable-order paper's Example 2 as the study ships it: the system that
//! `fmus/oscillator-chain-example2.py` writes runs under step and order control with both
//! estimators (ExSLocal explicit, ImSLocal implicit), and the explicit one over two thread
//! ranks gives one process' bits. Small here (40 masses in 4 subsystems, 0.2 ms: the debug
//! build is slow); `benches/example2.py` runs it at scale, in one process and under `mpirun`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::temp_dir;
use cosimo::distribute::threads::in_process;
use cosimo::master::run::{self as run_loop, Observer};
use cosimo::master::transport::Transport;
use cosimo::master::RunStatistics;
use cosimo::request::{prepare_on_ranks, RunRequest};
use serde_json::Value;

const MASSES: usize = 40;
const SUBSYSTEMS: usize = 4;
const STOP: f64 = 2e-4;
/// Result rows every 20 µs.
const ROWS: usize = 11;

/// The generator's system for `estimator`, written into `dir`.
fn generated(dir: &Path, estimator: &str) -> PathBuf {
    fmu_pack::packed_fmus().expect("the test FMUs pack");
    let folder = fmu_pack::fmus_dir();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/oscillator-chain-example2.py");
    let path = dir.join(format!("example2-{estimator}.json"));
    let done = Command::new("python3")
        .arg(&script)
        .args(["--masses", &MASSES.to_string()])
        .args(["--subsystems", &SUBSYSTEMS.to_string()])
        .args(["--seed", "7", "--estimator", estimator])
        .args(["--stop", &STOP.to_string(), "--output-interval", "2e-5"])
        .arg("--fmus")
        .arg(&folder)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "python3 {} cannot start ({e}): the study's generator needs Python 3 (as \
                 `cargo xtask test` does)",
                script.display()
            )
        });
    assert!(
        done.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&done.stderr)
    );
    path
}

/// Rank 0's rows and statistics of `path`, on one rank of `transport` (`None`: one process).
fn run(path: &Path, transport: Option<Arc<dyn Transport>>) -> (Vec<Vec<String>>, RunStatistics) {
    let request = RunRequest {
        targets: vec![path.display().to_string()],
        ..RunRequest::default()
    };
    let mut prepared = prepare_on_ranks(&request, transport, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut rows = common::BitRows::default();
    let mut observers: Vec<&mut dyn Observer> = vec![&mut rows];
    let stats = run_loop::run(&mut prepared.execution, &mut observers)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (rows.0, stats)
}

#[test]
fn the_generated_system_is_the_papers_chain() {
    let dir = temp_dir();
    let path = generated(dir.path(), "ExSLocal");
    let system: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let components = system["components"].as_array().unwrap();
    let chains: Vec<&Value> = components
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("chain"))
        .collect();
    assert_eq!(chains.len(), SUBSYSTEMS);
    assert_eq!(
        components.len(),
        2 * SUBSYSTEMS - 1,
        "a spring between neighbours"
    );
    assert_eq!(
        system["connections"].as_array().unwrap().len(),
        6 * (SUBSYSTEMS - 1)
    );
    let sizes: Vec<u64> = chains
        .iter()
        .map(|c| c["parameters"]["n"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes.iter().sum::<u64>(), MASSES as u64);
    assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
    let seeds: Vec<i64> = chains
        .iter()
        .map(|c| c["parameters"]["seed"].as_i64().unwrap())
        .collect();
    assert!(
        seeds.windows(2).all(|w| w[0] != w[1]),
        "every subsystem draws its own: {seeds:?}"
    );
    let control = &system["experiment"]["stepControl"];
    assert_eq!(control["estimator"], "ExSLocal");
    assert_eq!(control["safetyFactor"], 6.0);
    assert_eq!(system["experiment"]["stopTime"], STOP);
}

/// Both estimators run the chain to the end under step and order control, and their coupling
/// bodies agree to the coupling tolerances' order (they solve the same physics).
#[test]
fn the_study_runs_with_both_estimators() {
    let dir = temp_dir();
    let mut last_rows = Vec::new();
    for estimator in ["ExSLocal", "ImSLocal"] {
        let path = generated(dir.path(), estimator);
        let (mut rows, stats) = run(&path, None);
        let control = stats
            .control
            .unwrap_or_else(|| panic!("{estimator}: no control statistics"));
        eprintln!(
            "{estimator}: {} accepted, {} rejected macro steps, orders {:?}, H in [{:e}, {:e}], \
             {} corrector iterations, {:.2} s",
            control.accepted,
            control.rejected,
            control.order_histogram,
            control.smallest_step,
            control.largest_step,
            control.corrector_iterations,
            stats.wall_seconds
        );
        assert!(control.accepted > 1, "{estimator}: the step is controlled");
        assert_eq!(rows.len(), ROWS, "{estimator}: a row every 20 µs");
        let end = f64::from_bits(u64::from_str_radix(&rows[ROWS - 1][0], 16).unwrap());
        assert_eq!(end, STOP, "{estimator} reaches the stop time");
        last_rows.push(rows.pop().unwrap());
    }
    // The same chain to the coupling tolerances (rtol_λ = 1e-3 per step): the spring forces
    // (up to MN) within 1 %, the coupling bodies within a micrometre (measured: 3e-4, 2e-8 m).
    let columns = {
        let dir = temp_dir();
        let path = generated(dir.path(), "ExSLocal");
        let request = RunRequest {
            targets: vec![path.display().to_string()],
            ..RunRequest::default()
        };
        let prepared = prepare_on_ranks(&request, None, &mut |_| {}).unwrap();
        prepared.execution.column_names()
    };
    assert_eq!(
        last_rows[0].len(),
        columns.len() + 1,
        "time and the columns"
    );
    let value =
        |row: &[String], c: usize| f64::from_bits(u64::from_str_radix(&row[c + 1], 16).unwrap());
    let mut compared = 0;
    for (c, name) in columns.iter().enumerate() {
        let (ex, im) = (value(&last_rows[0], c), value(&last_rows[1], c));
        let allowed = if name.ends_with(".F1") {
            1e-2 * ex.abs() + 1.0
        } else if name.ends_with(".x_first") || name.ends_with(".x_last") {
            1e-6
        } else {
            continue;
        };
        compared += 1;
        assert!(
            (ex - im).abs() <= allowed,
            "{name} at the end: ExSLocal {ex:e}, ImSLocal {im:e}"
        );
    }
    assert_eq!(
        compared,
        3 * SUBSYSTEMS - 1,
        "every spring force and coupling body"
    );
}

#[test]
fn the_explicit_study_over_two_thread_ranks_gives_one_process_bits() {
    let dir = temp_dir();
    let path = generated(dir.path(), "ExSLocal");
    let (alone, _) = run(&path, None);
    assert!(alone.len() > 10, "hardly any rows");
    let ranks = in_process(2);
    let outcomes: Vec<Vec<Vec<String>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|t| scope.spawn(|| run(&path, Some(t)).0))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a rank ran"))
            .collect()
    });
    for (rank, rows) in outcomes.into_iter().enumerate() {
        assert!(
            rows == alone,
            "rank {rank} of 2 saw other rows than one process"
        );
    }
}
