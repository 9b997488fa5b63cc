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

/// Run cosimo with `args` in `dir` without core files; (status, stdout, stderr).
fn cosimo_in(dir: &Path, args: &[&str]) -> (ExitStatus, String, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("COSIMO_LOG")
        .env_remove("COSIMO_CORE_DUMP");
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
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A check case of the Faulty FMU with `failure` set, against the result of a good run.
fn faulty_case(dir: &Path, version: u8, failure: i32) -> std::path::PathBuf {
    let faulty = fmu("Faulty", version);
    let case = dir.join(format!("case-{version}-{failure}"));
    std::fs::create_dir_all(&case).unwrap();
    std::fs::copy(&faulty, case.join("Faulty.fmu")).unwrap();
    let reference = case.join("reference.csv");
    let (status, _, stderr) = cosimo_in(
        dir,
        &[
            "run",
            faulty.to_str().unwrap(),
            "--output-file",
            reference.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(status.success(), "{stderr}");
    std::fs::write(
        case.join("check.json"),
        format!("{{\"startValues\": {{\"failure\": {failure}}}}}"),
    )
    .unwrap();
    case
}

/// `cosimo check` in this process: an FMU that crashes as its instance is freed (12) or its
/// library unloaded (13), after a run that went well, is a warning; the case passes and the
/// report and exit code are the comparison's. With --isolate the worker's crash freeing is a
/// warning.
#[test]
fn check_keeps_a_passing_case_whose_fmu_crashes_at_its_end() {
    let dir = temp_dir();
    for (version, failure, crashed_in) in [
        (2, 12, "fmi2FreeInstance"),
        (3, 12, "fmi3FreeInstance"),
        (2, 13, "the unloading of its library"),
    ] {
        let case = faulty_case(dir.path(), version, failure);
        let (status, stdout, stderr) = cosimo_in(dir.path(), &["check", case.to_str().unwrap()]);
        assert_eq!(status.code(), Some(0), "{failure}:\n{stdout}\n{stderr}");
        assert!(stdout.contains("1 case: 1 passed"), "{stdout}");
        let line = line_starting(&stderr, "warning: ");
        assert!(
            line.contains("the FMU crashed with signal 11 (SIGSEGV, a memory access violation)")
                && line.contains(crashed_in)
                && line
                    .ends_with("the run had completed and its results are complete; exit code 0"),
            "{line}"
        );
        let (status, stdout, stderr) =
            cosimo_in(dir.path(), &["check", case.to_str().unwrap(), "--isolate"]);
        assert_eq!(
            status.code(),
            Some(0),
            "{failure} isolated:\n{stdout}\n{stderr}"
        );
        assert!(stdout.contains("1 case: 1 passed"), "{stdout}");
        // A worker ends without unloading its libraries: only the crash freeing is seen.
        if failure == 12 {
            assert!(
                stderr.contains("WARN") && stderr.contains("signal 11 (SIGSEGV"),
                "the worker's crash is a warning:\n{stderr}"
            );
        }
    }
}

/// A check whose case fails keeps the check's exit code (3) when the FMU then crashes at its
/// end: the warning does not turn the verdict into success.
#[test]
fn check_keeps_its_verdict_when_the_fmu_crashes_at_its_end() {
    let dir = temp_dir();
    let case = faulty_case(dir.path(), 2, 12);
    let reference = case.join("reference.csv");
    let text = std::fs::read_to_string(&reference).unwrap();
    std::fs::write(&reference, text.replace("\n1,1\n", "\n1,2\n")).unwrap();
    let (status, stdout, stderr) = cosimo_in(dir.path(), &["check", case.to_str().unwrap()]);
    assert_eq!(status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 failed"), "{stdout}");
    let line = line_starting(&stderr, "warning: ");
    assert!(line.ends_with("exit code 3"), "{line}");
}

/// `cosimo sweep`: a run whose FMU crashes at its end is an ok row, in worker processes (a
/// warning for the worker's crash freeing the instance) and in this process (the library's
/// crash at unload, after the table is written, is a warning and the exit code stays 0).
#[test]
fn sweep_keeps_a_run_whose_fmu_crashes_at_its_end() {
    let dir = temp_dir();
    let faulty = fmu("Faulty", 2);
    for (isolate, failure) in [(true, 12), (true, 13), (false, 13)] {
        let study = dir.path().join(format!("study-{isolate}-{failure}.json"));
        std::fs::write(
            &study,
            format!(
                "{{\"system\": \"{}\", \"isolate\": {isolate}, \"grid\": [{{\"name\": \"failure\", \"values\": [0, {failure}]}}], \
                 \"keep\": {{\"summaries\": [{{\"variable\": \"x\", \"statistics\": [\"final\"]}}]}}}}",
                faulty.display()
            ),
        )
        .unwrap();
        let out = dir.path().join(format!("out-{isolate}-{failure}"));
        let (status, stdout, stderr) = cosimo_in(
            dir.path(),
            &[
                "sweep",
                study.to_str().unwrap(),
                "--output-dir",
                out.to_str().unwrap(),
                "--workers",
                "1",
            ],
        );
        assert_eq!(
            status.code(),
            Some(0),
            "{isolate} {failure}:\n{stdout}\n{stderr}"
        );
        let table = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        assert_eq!(
            table,
            format!("index,failure,final(x),status,error\n0,0,1,ok,\n1,{failure},1,ok,\n"),
            "{isolate} {failure}: {stderr}"
        );
        // A worker process ends without unloading its libraries: nothing crashes at 13 there.
        let warned = stderr
            .lines()
            .any(|l| (l.starts_with("warning: ") || l.contains("WARN")) && l.contains("signal 11"));
        assert_eq!(
            warned,
            (isolate, failure) != (true, 13),
            "{isolate} {failure}: a warning names the crash:\n{stderr}"
        );
    }
}
