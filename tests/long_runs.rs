//! Runs far from t = 0 keep their time grid: where doubles are coarser than a billionth of the
//! step (t >= 1024 s with 1e-4 s steps, 131072 s with 0.01 s), the next grid point used to round
//! back onto the current time, and cosimo then stepped by zero forever.

mod common;

use std::path::PathBuf;

use common::{cosimo, fmu};
use cosimo::table::Table;

fn run(target: &str, start: f64, stop: f64, step: f64, interval: f64) -> Table {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = dir.path().join("out.csv");
    let output = cosimo([
        "run",
        target,
        "--start-time",
        &start.to_string(),
        "--stop-time",
        &stop.to_string(),
        "--step-size",
        &step.to_string(),
        "--output-interval",
        &interval.to_string(),
        "--quiet",
        "-o",
        &out.display().to_string(),
    ]);
    assert!(
        output.status.success(),
        "{target} from {start}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Table::read(&out).expect("the results read")
}

#[test]
fn runs_across_1024_s_and_131072_s_and_from_4096_s_keep_their_grid() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dahlquist = fmu("Dahlquist", 2).display().to_string();
    let two_mass = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fmus/two-mass-force-force.json")
        .display()
        .to_string();
    for (target, start, stop, step, interval) in [
        (&dahlquist, 1023.9, 1024.1, 1e-4, 0.01),
        (&dahlquist, 131071.9, 131072.1, 0.01, 0.01),
        (&dahlquist, 4096.0, 4096.1, 1e-4, 0.01),
        (&two_mass, 4096.0, 4096.05, 1e-4, 0.01),
    ] {
        let table = run(target, start, stop, step, interval);
        let times = table.time();
        let expected = ((stop - start) / interval).round() as usize + 1;
        assert_eq!(times.len(), expected, "{target} from {start}: {times:?}");
        for (k, t) in times.iter().enumerate() {
            let point = start + k as f64 * interval;
            assert!(
                (t - point).abs() <= 1e-9 * interval,
                "{target} from {start}: row {k} at {t}, not {point}"
            );
        }
        assert_eq!(times[times.len() - 1], stop, "{target} from {start}");
    }
}
