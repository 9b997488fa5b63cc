//! Hostile files cannot crash the master (issue 15): archives that lie about their sizes, pipes
//! given as files, array sizes and output grids that would exhaust memory or disk, and the
//! extracted FMUs that abnormal ends used to leave in the temporary folder.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// cosimo with `args` in `dir`, with its own temporary folder `tmp`.
fn command(dir: &Path, tmp: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cosimo"));
    command
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .env_remove("COSIMO_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Wait for `child`, killing it (and failing) after `limit`: a hang is the bug under test.
fn wait_at_most(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: cosimo still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run cosimo to its end (at most 60 s): exit code and stderr.
fn cosimo_at_most(dir: &Path, tmp: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = command(dir, tmp, args).spawn().expect("cosimo starts");
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).expect("stderr reads");
        text
    });
    let status = wait_at_most(&mut child, Duration::from_secs(60), &args.join(" "));
    (status.code(), reader.join().expect("stderr"))
}

fn assert_refused(dir: &Path, tmp: &Path, args: &[&str], message: &str) {
    let (code, stderr) = cosimo_at_most(dir, tmp, args);
    assert_eq!(code, Some(2), "cosimo {args:?}; stderr:\n{stderr}");
    assert!(
        stderr.lines().any(|l| l == message),
        "cosimo {args:?} should say\n  {message}\nbut said:\n{stderr}"
    );
}

/// The entries of `tmp` that are cosimo's extraction folders.
fn extraction_folders(tmp: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(tmp)
        .expect("the temporary folder reads")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cosimo-"))
        .collect();
    names.sort();
    names
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
}

/// A zip whose `resources/zeros` declares 1 KiB and inflates to 64 MiB (64 KiB on disk).
fn lying_zip(path: &Path) {
    let file = std::fs::File::create(path).expect("create zip");
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("modelDescription.xml", options)
        .expect("start");
    zip.write_all(br#"<fmiModelDescription fmiVersion="2.0" modelName="M" guid="g"/>"#)
        .expect("write");
    zip.start_file("resources/zeros", options).expect("start");
    let chunk = vec![0u8; 1 << 20];
    for _ in 0..64 {
        zip.write_all(&chunk).expect("write");
    }
    zip.finish().expect("finish zip");
    // The uncompressed size in the local header (offset 22) and the central directory (24).
    let mut bytes = std::fs::read(path).expect("read zip");
    let name = b"resources/zeros";
    let mut patched = 0;
    for (signature, name_at, size_at) in [(b"PK\x03\x04", 30, 22), (b"PK\x01\x02", 46, 24)] {
        for i in 0..bytes.len().saturating_sub(name_at + name.len()) {
            if &bytes[i..i + 4] == signature
                && &bytes[i + name_at..i + name_at + name.len()] == name
            {
                bytes[i + size_at..i + size_at + 4].copy_from_slice(&1024u32.to_le_bytes());
                patched += 1;
            }
        }
    }
    assert_eq!(patched, 2);
    std::fs::write(path, bytes).expect("write zip");
}

#[test]
fn an_archive_entry_that_inflates_beyond_its_declared_size_is_refused() {
    let dir = temp_dir();
    let tmp = temp_dir();
    lying_zip(&dir.path().join("bomb.fmu"));
    for command in ["inspect", "run"] {
        assert_refused(
            dir.path(),
            tmp.path(),
            &[command, "bomb.fmu"],
            "error: bomb.fmu: entry \"resources/zeros\" uncompresses to more than the 1024 bytes \
             it declares (a corrupt or hostile archive); refusing to extract it",
        );
    }
    assert_eq!(extraction_folders(tmp.path()), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn pipes_given_as_files_are_refused_instead_of_read() {
    let dir = temp_dir();
    let tmp = temp_dir();
    for name in ["model.fmu", "system.json", "system.ssd", "inputs.csv"] {
        mkfifo(&dir.path().join(name));
    }
    let pipe = |name: &str, what: &str| {
        format!(
            "{name}: is a named pipe (FIFO), not a regular file: cosimo reads {what} only from a \
             file or folder (a pipe or device may block or never end); save it to a file first"
        )
    };
    assert_refused(
        dir.path(),
        tmp.path(),
        &["run", "model.fmu"],
        &format!("error: {}", pipe("model.fmu", "an FMU")),
    );
    assert_refused(
        dir.path(),
        tmp.path(),
        &["inspect", "model.fmu"],
        &format!("error: {}", pipe("model.fmu", "an FMU")),
    );
    assert_refused(
        dir.path(),
        tmp.path(),
        &["run", "system.json"],
        &format!("error: {}", pipe("system.json", "a system file")),
    );
    assert_refused(
        dir.path(),
        tmp.path(),
        &["run", "system.ssd"],
        &format!("error: {}", pipe("system.ssd", "an SSP")),
    );
    assert_refused(
        dir.path(),
        tmp.path(),
        &["inspect", "system.ssd"],
        &format!("error: {}", pipe("system.ssd", "an SSP")),
    );
    let fmu = fmu("Dahlquist", 2).display().to_string();
    assert_refused(
        dir.path(),
        tmp.path(),
        &["run", &fmu, "--input-file", "inputs.csv"],
        &format!(
            "error: {}",
            pipe("inputs.csv", "the input file (--input-file)")
        ),
    );
    assert_refused(
        dir.path(),
        tmp.path(),
        &["plot", "inputs.csv", "--variable", "x", "--output", "x.png"],
        &format!("error: {}", pipe("inputs.csv", "results")),
    );
}

/// Start a run of the Dahlquist FMU that lasts minutes, in `dir` with temporary folder `tmp`,
/// and wait until it writes results (so its FMU is extracted and the handlers installed).
fn start_long_run(dir: &Path, tmp: &Path, prepare: impl FnOnce(&mut Command)) -> Child {
    let fmu = fmu("Dahlquist", 2).display().to_string();
    let out = dir.join("out.csv");
    let _ = std::fs::remove_file(&out);
    let mut command = command(
        dir,
        tmp,
        &[
            "run",
            &fmu,
            "--stop-time",
            "1e6",
            "--step-size",
            "1e-3",
            "--output-interval",
            "1e3",
            "--quiet",
            "-o",
            "out.csv",
        ],
    );
    prepare(&mut command);
    let mut child = command.spawn().expect("cosimo starts");
    let started = Instant::now();
    while std::fs::metadata(&out).map_or(true, |m| m.len() == 0) {
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("the long run ended early: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no results after a minute"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mine = format!("cosimo-{}-fmu-", child.id());
    assert!(
        extraction_folders(tmp).iter().any(|n| n.starts_with(&mine)),
        "the FMU is extracted into {mine}*: {:?}",
        extraction_folders(tmp)
    );
    child
}

#[cfg(unix)]
fn send(child: &Child, signal: i32) {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: kill has no memory preconditions.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

#[cfg(unix)]
#[test]
fn signals_remove_the_extracted_fmus_and_end_the_run_by_the_same_signal() {
    use std::os::unix::process::ExitStatusExt;
    let dir = temp_dir();
    let tmp = temp_dir();
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let mut child = start_long_run(dir.path(), tmp.path(), |_| {});
        send(&child, signal);
        let status = wait_at_most(&mut child, Duration::from_secs(30), "after a signal");
        // A shell reports this as exit status 128 + the signal's number.
        assert_eq!(status.signal(), Some(signal), "{status}");
        assert_eq!(extraction_folders(tmp.path()), Vec::<String>::new());
    }
}

#[cfg(unix)]
#[test]
fn a_signal_ignored_at_start_stays_ignored() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let dir = temp_dir();
    let tmp = temp_dir();
    // As `nohup` starts it.
    let mut child = start_long_run(dir.path(), tmp.path(), |command| {
        // SAFETY: only an async-signal-safe call between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
                Ok(())
            });
        }
    });
    send(&child, libc::SIGHUP);
    std::thread::sleep(Duration::from_millis(500));
    assert!(child.try_wait().expect("wait").is_none(), "SIGHUP ended it");
    send(&child, libc::SIGTERM);
    let status = wait_at_most(&mut child, Duration::from_secs(30), "after SIGTERM");
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    assert_eq!(extraction_folders(tmp.path()), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn the_next_run_sweeps_what_a_killed_one_left() {
    let dir = temp_dir();
    let tmp = temp_dir();
    let mut child = start_long_run(dir.path(), tmp.path(), |_| {});
    let pid = child.id();
    // SIGKILL cannot be handled: the folder stays.
    child.kill().expect("kill");
    child.wait().expect("wait");
    let left = extraction_folders(tmp.path());
    assert!(
        left.iter()
            .any(|n| n.starts_with(&format!("cosimo-{pid}-fmu-"))),
        "{left:?}"
    );
    // A folder of a live process (this test) is left alone.
    let live = tmp
        .path()
        .join(format!("cosimo-{}-fmu-live", std::process::id()));
    std::fs::create_dir(&live).expect("mkdir");
    let fmu = fmu("Dahlquist", 2).display().to_string();
    let (code, stderr) = cosimo_at_most(dir.path(), tmp.path(), &["inspect", &fmu]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        extraction_folders(tmp.path()),
        vec![format!("cosimo-{}-fmu-live", std::process::id())]
    );
}

#[test]
fn huge_array_dimensions_are_refused_before_anything_is_allocated() {
    let tmp = temp_dir();
    let unpacked = unpacked_with_edit(
        "Feedthrough",
        3,
        "<Dimension start=\"3\"/>",
        "<Dimension start=\"1000000000000\"/>",
    );
    let fmu = unpacked.path().display().to_string();
    let dir = temp_dir();
    // inspect shows what the file declares, and warns.
    let (code, stderr) = cosimo_at_most(dir.path(), tmp.path(), &["inspect", &fmu]);
    assert_eq!(code, Some(0), "{stderr}");
    let too_large = |name: &str| {
        format!(
            "Feedthrough: array \"{name}\" is too large: its dimension 2 of 2 has size \
             1000000000000, which makes more than 16777216 elements, the most cosimo allocates \
             for one variable; check the <Dimension> elements of the model description"
        )
    };
    for name in ["Float64_array_input", "Float64_array_output"] {
        let warning = format!("warning: {}", too_large(name));
        assert!(stderr.lines().any(|l| l == warning), "{stderr}");
    }
    let (code, stderr) = cosimo_at_most(dir.path(), tmp.path(), &["run", &fmu]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is too large: its dimension 2 of 2 has size 1000000000000"));
    assert!(stderr.starts_with("error: "), "{stderr}");
    // Not recorded, still refused: the instance sizes every array's buffers.
    let (code, stderr) = cosimo_at_most(
        dir.path(),
        tmp.path(),
        &[
            "run",
            &fmu,
            "--output-variable",
            "Float64_continuous_output",
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is too large"), "{stderr}");

    // Two dimensions whose product overflows 64 bits.
    let unpacked = unpacked_with_edit(
        "Feedthrough",
        3,
        "<Dimension start=\"2\"/>",
        "<Dimension start=\"18446744073709551615\"/>",
    );
    let md = unpacked.path().join("modelDescription.xml");
    let text = std::fs::read_to_string(&md).expect("read");
    std::fs::write(
        &md,
        text.replace(
            "<Dimension start=\"3\"/>",
            "<Dimension start=\"18446744073709551615\"/>",
        ),
    )
    .expect("write");
    let fmu = unpacked.path().display().to_string();
    let (code, stderr) = cosimo_at_most(dir.path(), tmp.path(), &["run", &fmu]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("is too large: its dimension 1 of 2 has size 18446744073709551615"),
        "{stderr}"
    );
}

#[test]
fn output_grids_too_large_to_write_are_refused_before_the_run() {
    let dir = temp_dir();
    let tmp = temp_dir();
    let fmu = fmu("Dahlquist", 2).display().to_string();
    assert_refused(
        dir.path(),
        tmp.path(),
        &[
            "run",
            &fmu,
            "--stop-time",
            "1000",
            "--output-interval",
            "1e-9",
        ],
        "error: --output-interval: an output interval of 0.000000001 s from 0 s to 1000 s makes \
         1000000000001 result rows, more than the limit of 100000000; choose a larger output \
         interval or a shorter run, or raise the limit (--max-rows)",
    );
    assert_refused(
        dir.path(),
        tmp.path(),
        &["run", &fmu, "--stop-time", "1000", "--step-size", "1e-9"],
        "error: --step-size: a step size (and so output interval) of 0.000000001 s from 0 s to \
         1000 s makes 1000000000001 result rows, more than the limit of 100000000; choose a \
         larger step size or an output interval or a shorter run, or raise the limit \
         (--max-rows)",
    );
    // Few rows, but 10^15 fixed steps.
    assert_refused(
        dir.path(),
        tmp.path(),
        &[
            "run",
            &fmu,
            "--stop-time",
            "1e6",
            "--step-size",
            "1e-9",
            "--output-interval",
            "1",
        ],
        "error: --step-size: a step size of 0.000000001 s from 0 s to 1000000 s makes \
         1000000000000000 macro steps, more than 1000000000000 (days of computing even at a \
         microsecond per step); choose a larger step size or a shorter run",
    );
    // --max-rows takes effect both ways.
    let args = |max: &'static str| {
        [
            "run",
            &fmu,
            "--stop-time",
            "1",
            "--step-size",
            "0.01",
            "--max-rows",
            max,
            "-o",
            "out.csv",
            "--quiet",
        ]
        .map(str::to_string)
    };
    let args_10 = args("10");
    let refs: Vec<&str> = args_10.iter().map(String::as_str).collect();
    assert_refused(
        dir.path(),
        tmp.path(),
        &refs,
        "error: --step-size: a step size (and so output interval) of 0.01 s from 0 s to 1 s \
         makes 101 result rows, more than the limit of 10; choose a larger step size or an \
         output interval or a shorter run, or raise the limit (--max-rows)",
    );
    let args_101 = args("101");
    let refs: Vec<&str> = args_101.iter().map(String::as_str).collect();
    let (code, stderr) = cosimo_at_most(dir.path(), tmp.path(), &refs);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(read_results(&dir.path().join("out.csv")).time().len(), 101);
}

#[test]
fn stability_maps_too_large_to_compute_are_refused() {
    let dir = temp_dir();
    let tmp = temp_dir();
    assert_refused(
        dir.path(),
        tmp.path(),
        &["stability", "--points", "100000000"],
        "error: --points: at most 1000 points per axis, not 100000000 (a map of 1000 x 1000 \
         points is already a million one-step maps); choose fewer points",
    );
}

#[test]
fn the_row_and_step_limits_belong_to_the_experiment() {
    use cosimo::settings::control::{Estimator, StepControl};
    use cosimo::settings::{AlgorithmKind, ExperimentSpec, Labels, Overrides, DEFAULT_MAX_ROWS};
    let spec = ExperimentSpec {
        stop: Some(1e3),
        step: Some(1e-3),
        output_interval: Some(1e-9),
        ..ExperimentSpec::default()
    };
    assert_eq!(
        spec.clone().build().expect_err("too many rows"),
        "experiment.outputInterval: an output interval of 0.000000001 s from 0 s to 1000 s \
         makes 1000000000001 result rows, more than the limit of 100000000; choose a larger \
         output interval or a shorter run, or raise the limit (--max-rows)"
    );
    // A raised limit is kept, and holds when the experiment is checked again.
    let allowed = ExperimentSpec {
        max_rows: Some(2_000_000_000_000),
        ..spec
    }
    .build()
    .expect("allowed");
    assert_eq!(allowed.max_rows, 2_000_000_000_000);
    allowed.check(Labels::SYSTEM_FILE).expect("still allowed");
    assert_eq!(
        cosimo::settings::Experiment::default().max_rows,
        DEFAULT_MAX_ROWS
    );

    // Under step control the step size is only the first step: its count is no limit.
    let long = ExperimentSpec {
        stop: Some(1e6),
        step: Some(1e-9),
        output_interval: Some(1.0),
        ..ExperimentSpec::default()
    };
    assert!(long
        .clone()
        .build()
        .expect_err("fixed steps")
        .contains("makes 1000000000000000 macro steps"));
    ExperimentSpec {
        control: Some(StepControl::default()),
        ..long
    }
    .build()
    .expect("controlled");

    // One FMU with --adaptive: the same, and the estimator still follows the algorithm.
    let path = fmu("Dahlquist", 2);
    let opened = cosimo::fmu::Fmu::open(&path).expect("opens");
    let overrides = Overrides {
        stop: Some(1e6),
        step: Some(1e-9),
        output_interval: Some(1.0),
        adaptive: true,
        algorithm: Some(AlgorithmKind::Implicit),
        ..Overrides::default()
    };
    let system =
        cosimo::system::System::single_fmu(&path, opened.description(), vec![], &overrides)
            .expect("a controlled run");
    let control = system.experiment.algorithm.control().expect("step control");
    assert_eq!(control.estimator, Estimator::ImSLocal);
    let fixed = Overrides {
        adaptive: false,
        algorithm: None,
        ..overrides
    };
    assert!(
        cosimo::system::System::single_fmu(&path, opened.description(), vec![], &fixed).is_err()
    );
}
