//! Crashes inside FMU calls in the cosimo process (issue 33): one line naming the component,
//! the call and the time, exit code 1; a crash while freeing or unloading an FMU after a
//! complete run is a warning and the run's exit code stays 0; `COSIMO_CORE_DUMP=1` lets the
//! signal end the process.

mod common;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::ExitStatus;

use common::*;

/// Run `cosimo run FMU --start-value failure=N` in `dir`, with `env`; no core file is written.
fn run_faulty(dir: &Path, version: u8, failure: i32, env: &[(&str, &str)]) -> (ExitStatus, String) {
    let faulty = fmu("Faulty", version);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"));
    command
        .args(["run", faulty.to_str().unwrap(), "--start-value"])
        .arg(format!("failure={failure}"))
        .args(["-o", "f.csv", "--quiet"])
        .current_dir(dir)
        .env_remove("COSIMO_LOG")
        .env_remove("COSIMO_CORE_DUMP")
        .envs(env.iter().copied());
    // SAFETY: setrlimit is async-signal-safe; no core files from the crashes on purpose.
    unsafe {
        command.pre_exec(|| {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    let output = command.output().unwrap();
    (
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The one line of `stderr` that starts with `start`.
fn line_starting<'a>(stderr: &'a str, start: &str) -> &'a str {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(start)).collect();
    assert_eq!(
        lines.len(),
        1,
        "one line should start with\n  {start}\nstderr:\n{stderr}"
    );
    lines[0]
}

#[test]
fn a_segfault_in_do_step_names_the_component_the_call_and_the_time() {
    let dir = temp_dir();
    for version in [2, 3] {
        let (status, stderr) = run_faulty(dir.path(), version, 5, &[]);
        assert_eq!(status.code(), Some(1), "stderr:\n{stderr}");
        let line = line_starting(
            &stderr,
            &format!(
                "error: component \"Faulty\": the FMU crashed with signal 11 (SIGSEGV, a memory \
                 access violation) during fmi{version}DoStep from t = 0.4; "
            ),
        );
        assert!(line.contains(" in f.csv"), "{line}");
        assert!(line.contains("--isolate"), "{line}");
        assert_eq!(stderr.lines().count(), 1, "one line only:\n{stderr}");
    }
}

#[test]
fn an_abort_in_do_step_is_reported_the_same_way() {
    let dir = temp_dir();
    for version in [2, 3] {
        let (status, stderr) = run_faulty(dir.path(), version, 6, &[]);
        assert_eq!(status.code(), Some(1), "stderr:\n{stderr}");
        let line = line_starting(
            &stderr,
            &format!(
                "error: component \"Faulty\": the FMU crashed with signal 6 (SIGABRT, the FMU \
                 aborted) during fmi{version}DoStep from t = 0.4; "
            ),
        );
        assert!(line.contains("--isolate"), "{line}");
    }
}

#[test]
fn a_stack_overflow_in_an_fmu_is_reported_from_the_alternate_stack() {
    let dir = temp_dir();
    let (status, stderr) = run_faulty(dir.path(), 2, 11, &[]);
    assert_eq!(status.code(), Some(1), "stderr:\n{stderr}");
    line_starting(
        &stderr,
        "error: component \"Faulty\": the FMU crashed with signal 11 (SIGSEGV, a memory access \
         violation: the stack overflowed) during fmi2DoStep from t = 0.4; ",
    );
}

#[test]
fn a_crash_freeing_the_instance_after_a_complete_run_is_a_warning() {
    let dir = temp_dir();
    for version in [2, 3] {
        let (status, stderr) = run_faulty(dir.path(), version, 12, &[]);
        assert_eq!(status.code(), Some(0), "stderr:\n{stderr}");
        line_starting(
            &stderr,
            &format!(
                "warning: component \"Faulty\": the FMU crashed with signal 11 (SIGSEGV, a memory \
                 access violation) during fmi{version}FreeInstance at t = 1; the run had \
                 completed and its results in f.csv are complete; exit code 0"
            ),
        );
        let results = read_results(&dir.path().join("f.csv"));
        assert_eq!(results.time().len(), 11, "every row is on disk");
        assert_eq!(results.time().last(), Some(&1.0));
    }
}

#[test]
fn a_crash_unloading_the_library_after_a_complete_run_is_a_warning_naming_the_fmu() {
    let dir = temp_dir();
    let (status, stderr) = run_faulty(dir.path(), 2, 13, &[]);
    assert_eq!(status.code(), Some(0), "stderr:\n{stderr}");
    let line = line_starting(&stderr, "warning: ");
    assert!(line.contains("FMU \"Faulty\""), "{line}");
    assert!(
        line.contains("signal 11 (SIGSEGV, a memory access violation)"),
        "{line}"
    );
    assert!(
        line.ends_with("the run had completed and its results in f.csv are complete; exit code 0"),
        "{line}"
    );
    let results = read_results(&dir.path().join("f.csv"));
    assert_eq!(results.time().len(), 11, "every row is on disk");
}

#[test]
fn a_core_dump_on_request_ends_the_process_by_the_signal() {
    let dir = temp_dir();
    let (status, stderr) = run_faulty(dir.path(), 2, 5, &[("COSIMO_CORE_DUMP", "1")]);
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "stderr:\n{stderr}");
    line_starting(
        &stderr,
        "error: component \"Faulty\": the FMU crashed with signal 11",
    );
    let (status, _) = run_faulty(dir.path(), 2, 6, &[("COSIMO_CORE_DUMP", "1")]);
    assert_eq!(status.signal(), Some(libc::SIGABRT));
}

#[test]
fn a_crash_on_a_pool_thread_names_that_thread_s_component() {
    let dir = temp_dir();
    let faulty = fmu("Faulty", 2);
    let faulty = faulty.to_str().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args([
            "run",
            &format!("a={faulty}"),
            &format!("b={faulty}"),
            &format!("c={faulty}"),
        ])
        .args([
            "--parallel",
            "--threads",
            "3",
            "--start-value",
            "b.failure=5",
        ])
        .args(["-o", "f.csv", "--quiet"])
        .current_dir(dir.path())
        .env_remove("COSIMO_LOG")
        .env_remove("COSIMO_CORE_DUMP")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{stderr}");
    line_starting(
        &stderr,
        "error: component \"b\": the FMU crashed with signal 11 (SIGSEGV, a memory access \
         violation) during fmi2DoStep from t = 0.4",
    );
}
