//! The progress bar on a terminal (issue 34: "progress appears for a first step that takes
//! long"): a run whose first macro step lasts seconds shows the bar while that step runs, not
//! only after it. The run gets a terminal from util-linux's `script`.

mod common;

use std::process::Command;

use common::skip::{skipped, Skip};

#[test]
fn a_long_first_step_shows_the_progress_bar_while_it_runs() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    if Command::new("script").arg("--version").output().is_err() {
        skipped(
            Skip::NoScript,
            "no `script` (util-linux) to give the run a terminal",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    // Robertson as Co-Simulation takes internal steps of 1 ms: one macro step of 1000 s is
    // a million of them, seconds of work before the first step ends.
    let command = format!(
        "'{}' run '{}' --step-size 1000 --stop-time 1000 -o '{}'",
        env!("CARGO_BIN_EXE_cosimo"),
        fmu_pack::fmu_path("Robertson", 2).display(),
        dir.path().join("out.csv").display()
    );
    let started = std::time::Instant::now();
    let output = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script runs");
    let screen = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{screen}");
    assert!(
        started.elapsed().as_secs_f64() > 1.5,
        "the first step was too short to show anything: {:?}",
        started.elapsed()
    );
    assert!(
        screen.contains("t = 0 s, first step running"),
        "no progress while the first step ran:\n{screen}"
    );
    assert!(
        screen.contains("simulated 0 s to 1000 s in 1 macro steps"),
        "{screen}"
    );
}
