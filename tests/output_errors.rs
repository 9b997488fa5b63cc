//! Output that cannot be written: a full device is an error naming standard output (exit 2),
//! a closed pipe (`| head`) ends the output quietly — never a panic (exit 101).

mod common;

use std::process::{Command, Stdio};

use common::fmu;

fn cosimo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cosimo"))
}

#[test]
fn a_full_stdout_is_an_error_naming_it() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full (Linux)");
    let output = cosimo()
        .args(["inspect", &fmu("Feedthrough", 3).display().to_string()])
        .stdout(full)
        .output()
        .expect("cosimo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: standard output: No space left on device"),
        "{stderr}"
    );
}

#[test]
fn a_closed_pipe_ends_quietly() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    // stdout closed before cosimo writes: inspect's table.
    let mut child = cosimo()
        .args(["inspect", &fmu("Feedthrough", 3).display().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cosimo starts");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("cosimo ends");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // stderr closed while --log-fmi-calls writes to it.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut child = cosimo()
        .args([
            "run",
            &fmu("Dahlquist", 2).display().to_string(),
            "--log-fmi-calls",
            "-o",
            &dir.path().join("out.csv").display().to_string(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("cosimo starts");
    drop(child.stderr.take());
    let status = child.wait().expect("cosimo ends");
    assert_eq!(status.code(), Some(0));
}

/// Run cosimo with `args` and its stdout on /dev/full; returns (exit code, stderr).
fn into_full_device(args: &[&str]) -> (Option<i32>, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full (Linux)");
    let output = cosimo()
        .args(args)
        .env_remove("COSIMO_LOG")
        .stdout(full)
        .output()
        .expect("cosimo runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn validate_and_check_report_a_full_stdout() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let feedthrough = fmu("Feedthrough", 3).display().to_string();
    for args in [
        vec!["validate", "--json", feedthrough.as_str()],
        vec!["validate", feedthrough.as_str()],
    ] {
        let (code, stderr) = into_full_device(&args);
        assert_eq!(code, Some(2), "cosimo {args:?}: {stderr}");
        assert!(
            stderr.contains("error: standard output: No space left on device"),
            "cosimo {args:?}: {stderr}"
        );
    }

    // check: the text summary and the JSON report on stdout.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let case = dir.path().join("dahlquist");
    std::fs::create_dir_all(&case).expect("the case folder");
    let model = serde_json::to_string(&fmu("Dahlquist", 3).display().to_string()).unwrap();
    std::fs::write(case.join("check.json"), format!("{{ \"model\": {model} }}")).unwrap();
    let mut reference = String::from("time,x\n");
    for k in 0..=100 {
        let t = k as f64 / 10.0;
        reference.push_str(&format!("{t},{}\n", (-t).exp()));
    }
    std::fs::write(case.join("reference.csv"), reference).unwrap();
    let case = case.display().to_string();
    for args in [
        vec!["check", case.as_str()],
        vec!["check", case.as_str(), "--json"],
    ] {
        let (code, stderr) = into_full_device(&args);
        assert_eq!(code, Some(2), "cosimo {args:?}: {stderr}");
        assert!(
            stderr.contains("error: standard output: No space left on device"),
            "cosimo {args:?}: {stderr}"
        );
    }
}
