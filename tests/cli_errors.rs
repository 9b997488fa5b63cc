//! The table of bad inputs: for each, the exact message a user sees and the exit code.

mod common;

use std::io::Write;
use std::path::Path;

use common::skip::Skip;
use common::*;

/// Write a zip at `path` with `(name, bytes)` entries.
fn zip_file(path: &Path, entries: &[(&str, &[u8])]) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    for (name, bytes) in entries {
        zip.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// The model description of a project FMU.
fn model_description(model: &str, version: u8) -> String {
    let archive = std::fs::File::open(fmu(model, version)).unwrap();
    let mut zip = zip::ZipArchive::new(archive).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("modelDescription.xml").unwrap(), &mut text)
        .unwrap();
    text
}

/// Run cosimo in `dir` (so paths in messages are the short relative ones a user typed).
fn cosimo_in(dir: &Path, args: &[&str]) -> (i32, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .current_dir(dir)
        .env_remove("COSIMO_LOG")
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn assert_error(dir: &Path, args: &[&str], code: i32, message: &str) {
    let (status, stderr) = cosimo_in(dir, args);
    assert_eq!(
        status, code,
        "exit code of cosimo {args:?}; stderr:\n{stderr}"
    );
    assert!(
        stderr.lines().any(|l| l == message),
        "cosimo {args:?} should say\n  {message}\nbut said:\n{stderr}"
    );
}

#[test]
fn archives_that_are_not_fmus() {
    let dir = temp_dir();
    let d = dir.path();
    std::fs::write(d.join("notzip.fmu"), "hello").unwrap();
    assert_error(
        d,
        &["inspect", "notzip.fmu"],
        2,
        "error: notzip.fmu: not a zip archive (an FMU is a zip file with modelDescription.xml at its top level)",
    );

    zip_file(
        &d.join("slip.fmu"),
        &[("modelDescription.xml", b"<x/>"), ("../evil.txt", b"x")],
    );
    assert_error(
        d,
        &["inspect", "slip.fmu"],
        2,
        "error: slip.fmu: entry \"../evil.txt\" has a \"..\" component and would be written outside the FMU folder; refusing to extract the archive (unsafe zip entry)",
    );
    assert!(!d.join("evil.txt").exists() && !d.parent().unwrap().join("evil.txt").exists());

    zip_file(&d.join("nomd.fmu"), &[("binaries/linux64/a.so", b"x")]);
    assert_error(
        d,
        &["run", "nomd.fmu"],
        2,
        "error: nomd.fmu: no modelDescription.xml at the top level of the FMU (an FMU holds modelDescription.xml, binaries/ and resources/ at its root)",
    );

    assert_error(
        d,
        &["run", "missing.fmu"],
        2,
        "error: missing.fmu: no such file or folder (expected a .fmu file or an unpacked FMU folder)",
    );
}

#[test]
fn malformed_model_description_names_the_line() {
    let dir = temp_dir();
    let md = model_description("Dahlquist", 2);
    let line = md
        .lines()
        .position(|l| l.contains("<ModelVariables>"))
        .unwrap()
        + 1;
    let broken = md.replacen("<ModelVariables>", "<ModelVariables><oops>", 1);
    zip_file(
        &dir.path().join("badxml.fmu"),
        &[("modelDescription.xml", broken.as_bytes())],
    );
    let (status, stderr) = cosimo_in(dir.path(), &["inspect", "badxml.fmu"]);
    assert_eq!(status, 2, "{stderr}");
    // quick-xml reports the mismatch where the enclosing element closes.
    let closing = md
        .lines()
        .position(|l| l.contains("</ModelVariables>"))
        .unwrap()
        + 1;
    assert!(closing > line);
    assert_eq!(
        stderr.trim_end(),
        format!("error: badxml.fmu/modelDescription.xml:{closing}: malformed XML: ill-formed document: expected `</oops>`, but `</ModelVariables>` was found")
    );

    let missing = md.replacen("valueReference=\"3\"", "", 1);
    zip_file(
        &dir.path().join("noattr.fmu"),
        &[("modelDescription.xml", missing.as_bytes())],
    );
    let line = md
        .lines()
        .position(|l| l.contains("valueReference=\"3\""))
        .unwrap()
        + 1;
    assert_error(
        dir.path(),
        &["inspect", "noattr.fmu"],
        2,
        &format!("error: noattr.fmu/modelDescription.xml:{line}: ScalarVariable \"k\": missing attribute \"valueReference\""),
    );
}

#[test]
fn missing_binary_lists_the_platforms_the_fmu_ships() {
    let dir = temp_dir();
    let md = model_description("Dahlquist", 2);
    zip_file(
        &dir.path().join("nobin.fmu"),
        &[
            ("modelDescription.xml", md.as_bytes()),
            ("binaries/win64/Dahlquist.dll", b"x"),
            ("binaries/darwin64/Dahlquist.dylib", b"x"),
        ],
    );
    assert_error(
        dir.path(),
        &["run", "nobin.fmu"],
        2,
        "error: nobin.fmu: no binary for this platform (expected binaries/linux64/Dahlquist.so); the FMU ships binaries for darwin64, win64 only: export it for linux64 or run it on one of those platforms",
    );
    // Inspecting needs no binary.
    let (status, _) = cosimo_in(dir.path(), &["inspect", "nobin.fmu"]);
    assert_eq!(status, 0);
}

#[test]
fn binary_without_the_fmi_functions() {
    let dir = temp_dir();
    let md = model_description("Dahlquist", 2);
    // A real shared library that is not an FMU: the C math library.
    let Some(libm) = common::skip::libm() else {
        common::skip::skipped(Skip::NoLibm, "no libm.so.6 found (dlopen, ldconfig -p)");
        return;
    };
    let bytes = std::fs::read(libm).unwrap();
    zip_file(
        &dir.path().join("nofunc.fmu"),
        &[
            ("modelDescription.xml", md.as_bytes()),
            ("binaries/linux64/Dahlquist.so", &bytes),
        ],
    );
    let (status, stderr) = cosimo_in(dir.path(), &["run", "nofunc.fmu"]);
    assert_eq!(status, 2, "{stderr}");
    assert!(
        stderr.starts_with(
            "error: nofunc.fmu/binaries/linux64/Dahlquist.so: does not export fmi2Instantiate"
        ),
        "{stderr}"
    );
}

#[test]
fn start_values_that_do_not_fit() {
    let dir = temp_dir();
    let osc = fmu("Oscillator", 2);
    let osc = osc.to_str().unwrap();
    assert_error(
        dir.path(),
        &["run", osc, "--start-value", "mass=2"],
        2,
        "error: --start-value mass: Oscillator has no variable \"mass\"; did you mean one of: a, m? (`cosimo inspect` lists them all)",
    );
    assert_error(
        dir.path(),
        &["run", osc, "--start-value", "m=abc"],
        2,
        "error: Oscillator: \"abc\" is not a valid value for Real variable \"m\" (expected a number)",
    );
    assert_error(
        dir.path(),
        &["run", osc, "--start-value", "m"],
        2,
        "error: --start-value \"m\": expected NAME=VALUE, e.g. --start-value m=2.5",
    );
    assert_error(
        dir.path(),
        &["run", osc, "--start-value", "x=1"],
        2,
        "error: Oscillator: cannot set a start value for \"x\": it is calculated by the FMU; only parameters, inputs and variables with a start value can be set",
    );
    // The FMU itself refuses a value outside the declared range; its message reaches the user.
    assert_error(
        dir.path(),
        &["run", osc, "--start-value", "m=-1"],
        1,
        "  [Error] logStatusError: fmi2SetReal: value -1 for 'm' violates its bounds [0, inf]",
    );
}

#[test]
fn fmi_version_mismatch_and_bad_times() {
    let dir = temp_dir();
    let osc = fmu("Oscillator", 3);
    let osc = osc.to_str().unwrap();
    assert_error(
        dir.path(),
        &["run", osc, "--fmi-version", "2"],
        2,
        &format!("error: {osc}: this is an FMI 3.0 FMU, but --fmi-version 2 asks for FMI 2.0"),
    );
    assert_error(
        dir.path(),
        &["run", osc, "--start-time", "2", "--stop-time", "1"],
        2,
        "error: --stop-time: the stop time (1) must be a finite number after the start time (2)",
    );
    assert_error(
        dir.path(),
        &["run", osc, "--step-size", "0"],
        2,
        "error: --step-size: the step size must be positive, not 0",
    );
    // Negative numbers reach the options: the option's own message, not clap's
    // "unexpected argument '-1' found".
    assert_error(
        dir.path(),
        &["run", osc, "--output-interval", "-1"],
        2,
        "error: --output-interval: the output interval must be positive, not -1",
    );
    assert_error(
        dir.path(),
        &["run", osc, "--start-time", "-1", "--stop-time", "-2"],
        2,
        "error: --stop-time: the stop time (-2) must be a finite number after the start time (-1)",
    );
    assert_error(
        dir.path(),
        &["run", osc, "--call-timeout", "-1"],
        2,
        "error: --call-timeout -1: expected a positive number of seconds",
    );
    // Time cannot resolve the step (1e17 + 1 == 1e17): refused before ten million steps that
    // do not advance.
    assert_error(
        dir.path(),
        &["run", osc, "--start-time", "1e17", "--stop-time", "1.0000001e17", "--step-size", "1"],
        2,
        "error: --step-size: a step size of 1 s is below the resolution of time at the start time 1e17 s (1e17 + 1 == 1e17 in double precision, so time would not advance); choose a larger step size or times nearer 0",
    );
    assert_error(
        dir.path(),
        &[
            "run",
            osc,
            "--start-time",
            "1e17",
            "--stop-time",
            "1.0000001e17",
            "--step-size",
            "1e5",
            "--output-interval",
            "1",
        ],
        2,
        "error: --output-interval: an output interval of 1 s is below the resolution of time at the start time 1e17 s (1e17 + 1 == 1e17 in double precision, so time would not advance); choose a larger output interval or times nearer 0",
    );
}

#[test]
fn fmus_that_fail_in_do_step() {
    let dir = temp_dir();
    for version in [2, 3] {
        let faulty = fmu("Faulty", version);
        let faulty = faulty.to_str().unwrap();
        let run = |failure: &str| {
            cosimo_in(
                dir.path(),
                &[
                    "run",
                    faulty,
                    "--start-value",
                    &format!("failure={failure}"),
                    "-o",
                    "f.csv",
                    "--quiet",
                ],
            )
        };
        for (failure, first, logged) in [
            (
                "1",
                "error: simulation failed at t = 0.4: Faulty: doStep from t = 0.4 with h = 0.1 s was discarded (the FMU reached t = 0.5); try a smaller step size; the FMU logged:".to_string(),
                format!("  [Discard] logStatusWarning: fmi{version}DoStep: simulated failure (Discard) requested by parameter failure at t = 0.5"),
            ),
            (
                "2",
                format!("error: simulation failed at t = 0.4: Faulty: fmi{version}DoStep failed with status Error; the FMU logged:"),
                format!("  [Error] logStatusError: fmi{version}DoStep: simulated failure (Error) requested by parameter failure at t = 0.5"),
            ),
            (
                "3",
                format!("error: simulation failed at t = 0.4: Faulty: fmi{version}DoStep failed with status Fatal; the FMU logged:"),
                format!("  [Fatal] logStatusError: fmi{version}DoStep: simulated failure (Fatal) requested by parameter failure at t = 0.5"),
            ),
        ] {
            let (status, stderr) = run(failure);
            assert_eq!(status, 1, "FMI {version}, failure {failure}: {stderr}");
            let lines: Vec<&str> = stderr.lines().collect();
            assert!(lines.contains(&"results up to t = 0.4 are in f.csv"), "{stderr}");
            assert!(lines.contains(&first.as_str()), "FMI {version}, failure {failure}: expected\n{first}\nin\n{stderr}");
            assert!(lines.contains(&logged.as_str()), "FMI {version}, failure {failure}: expected\n{logged}\nin\n{stderr}");
            // Every row up to the failure is on disk.
            let rows = std::fs::read_to_string(dir.path().join("f.csv")).unwrap();
            assert_eq!(rows.lines().last().map(|l| l.starts_with("0.4,")), Some(true), "{rows}");
        }
    }
}

/// Run cosimo in `dir` with `--log-fmi-calls --quiet` and `FMU_KIT_ABORT_ON_MISUSE=1`: a call
/// the kit's FMU receives after it returned Fatal (freeing included) aborts the process, so
/// the exit status shows it. Returns the exit code (`None`: killed by a signal) and stderr.
fn cosimo_strict(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .args(["--log-fmi-calls", "--quiet"])
        .current_dir(dir)
        .env_remove("COSIMO_LOG")
        .env("FMU_KIT_ABORT_ON_MISUSE", "1")
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The traced calls of `instance` in cosimo's stderr after the first line containing `from`.
fn calls_after<'a>(stderr: &'a str, instance: &str, from: &str) -> Vec<&'a str> {
    let prefix = format!("] {instance}: fmi");
    stderr
        .lines()
        .skip_while(|l| !l.contains(from))
        .skip(1)
        .filter(|l| l.contains(&prefix))
        .collect()
}

#[test]
fn after_fatal_no_call_reaches_the_fmu_and_after_error_only_free() {
    let dir = temp_dir();
    for version in [2, 3] {
        let faulty = fmu("Faulty", version);
        let faulty = faulty.to_str().unwrap();
        for (failure, status) in [("2", "Error"), ("3", "Fatal")] {
            let label = format!("FMI {version}, failure {failure}");
            let (code, stderr) = cosimo_strict(
                dir.path(),
                &[
                    "run",
                    faulty,
                    "--start-value",
                    &format!("failure={failure}"),
                    "-o",
                    "f.csv",
                ],
            );
            // Exit 1 with the FMU's message: neither a crash nor the kit's abort.
            assert_eq!(code, Some(1), "{label}:\n{stderr}");
            let lines: Vec<&str> = stderr.lines().collect();
            for want in [
                format!("error: simulation failed at t = 0.4: Faulty: fmi{version}DoStep failed with status {status}; the FMU logged:"),
                format!("  [{status}] logStatusError: fmi{version}DoStep: simulated failure ({status}) requested by parameter failure at t = 0.5"),
            ] {
                assert!(lines.contains(&want.as_str()), "{label}: no line\n{want}\nin\n{stderr}");
            }
            assert!(!stderr.contains("FMI misuse"), "{label}:\n{stderr}");
            let after = calls_after(&stderr, "Faulty", "DoStep(currentCommunicationPoint=0.4,");
            match status {
                // Freed without fmi*Terminate (not allowed after Error).
                "Error" => assert_eq!(
                    after,
                    [format!("[INFO ] Faulty: fmi{version}FreeInstance()")],
                    "{label}:\n{stderr}"
                ),
                // Not even freed.
                _ => {
                    assert_eq!(after.len(), 1, "{label}:\n{stderr}");
                    assert!(
                        after[0].contains(&format!(
                            "fmi{version}FreeInstance not called: fmi{version}DoStep of instance \"Faulty\" returned Fatal"
                        )),
                        "{label}:\n{stderr}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_fatal_component_of_a_system_is_never_called_again_nor_its_twin() {
    // `faulty` and `twin` share one FMU file, so one loaded library: Fatal corrupts "all FMU
    // instances" (FMI 2.0 §2.1.3, FMI 3.0 §2.2.3). `osc` is another FMU and is cleaned up.
    let dir = temp_dir();
    let osc = format!("osc={}", fmu("Oscillator", 3).display());
    for version in [2, 3] {
        let faulty_fmu = fmu("Faulty", version);
        let faulty = format!("faulty={}", faulty_fmu.display());
        let twin = format!("twin={}", faulty_fmu.display());
        for parallel in [false, true] {
            let label = format!("FMI {version}, parallel {parallel}");
            let mut args = vec![
                "run",
                &osc,
                &faulty,
                &twin,
                "--connect",
                "faulty.x=osc.F",
                "--start-value",
                "faulty.failure=3",
                "--algorithm",
                "jacobi",
                "--stop-time",
                "1",
                "--step-size",
                "0.01",
                "-o",
                "s.csv",
            ];
            if parallel {
                // Threads chosen, so no timing trial: the components step on the pool at once.
                args.extend(["--parallel", "--threads", "3"]);
            }
            let (code, stderr) = cosimo_strict(dir.path(), &args);
            assert_eq!(code, Some(1), "{label}:\n{stderr}");
            let want = format!(
                "error: simulation failed at t = 0.49: faulty: fmi{version}DoStep failed with status Fatal; the FMU logged:"
            );
            assert!(
                stderr.lines().any(|l| l == want),
                "{label}: no line\n{want}\nin\n{stderr}"
            );
            assert!(!stderr.contains("FMI misuse"), "{label}:\n{stderr}");
            let fatal = "-> Fatal";
            let not_freed = format!("fmi{version}FreeInstance not called: fmi{version}DoStep of instance \"faulty\" returned Fatal");
            assert_eq!(
                calls_after(&stderr, "faulty", fatal),
                [format!("[INFO ] faulty: {not_freed}, after which FMI {version}.0 §{} allows no further call; the instance stays allocated until the process ends", if version == 2 { "2.1.3" } else { "2.2.3" })],
                "{label}:\n{stderr}"
            );
            // The twin: at most its own step of the same macro step, which ran at the same time
            // on another worker; then nothing, not even fmi*Terminate or fmi*FreeInstance.
            let twin_after = calls_after(&stderr, "twin", fatal);
            let (last, steps) = twin_after.split_last().expect("the twin's note");
            assert!(last.contains(&not_freed), "{label}:\n{stderr}");
            assert!(
                steps.len() <= usize::from(parallel)
                    && steps
                        .iter()
                        .all(|l| l.contains("DoStep(currentCommunicationPoint=0.49,")),
                "{label}:\n{stderr}"
            );
            // The oscillator is another FMU: terminated and freed as usual (after the rest of
            // its own task of that macro step when it ran in parallel).
            let osc_after = calls_after(&stderr, "osc", fatal);
            assert!(
                osc_after.ends_with(&[
                    "[INFO ] osc: fmi3Terminate() -> OK",
                    "[INFO ] osc: fmi3FreeInstance()"
                ]) && (parallel || osc_after.len() == 2),
                "{label}:\n{stderr}"
            );
        }
    }
}
