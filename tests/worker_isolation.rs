//! FMUs in worker processes (`--isolate`, `"isolate": true`, `callTimeout`, and automatically for
//! `canBeInstantiatedOnlyOncePerProcess`): the Faulty FMU's modes that take their process down
//! (segfault, abort, exit, stack overflow), hang (endless loop) or misbehave (NaN, leak) end the
//! run with exit 1 and a message naming the component, the FMI call, the time and the cause,
//! with every result row up to the failure kept and nothing left in the temporary folder; runs
//! of healthy systems give the same bytes isolated as in-process.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{fmu, read_results, show, temp_dir};

const FAIL_AT: f64 = 0.5;

/// A system of an Oscillator and a Faulty FMU in `failure` mode, with per-component extras.
fn system_file(dir: &Path, version: u8, failure: i32, faulty_extra: &str) -> PathBuf {
    let json = format!(
        r#"{{
  "components": [
    {{ "name": "osc", "fmu": "{osc}" }},
    {{ "name": "faulty", "fmu": "{faulty}", "parameters": {{ "failure": {failure}, "fail_at": {FAIL_AT} }}{faulty_extra} }}
  ],
  "experiment": {{ "stopTime": 1.0, "stepSize": 0.1 }}
}}"#,
        osc = fmu("Oscillator", version).display(),
        faulty = fmu("Faulty", version).display(),
    );
    let path = dir.join(format!("faulty-{version}-{failure}.json"));
    std::fs::write(&path, json).expect("the system file is written");
    path
}

/// Run cosimo with its own temporary folder (to see what it leaves there).
fn cosimo_in(tmp: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .env("TMPDIR", tmp)
        .env_remove("COSIMO_LOG")
        .output()
        .expect("the cosimo binary runs")
}

/// Run the faulty system isolated; check exit 1, the message parts, the rows kept, no litter.
fn crashes(version: u8, failure: i32, extra: &[&str], expected: &[&str]) -> String {
    let dir = temp_dir();
    let tmp = temp_dir();
    let system = system_file(dir.path(), version, failure, "");
    let out = dir.path().join("out.csv");
    let mut args = vec![
        "run",
        system.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ];
    args.extend_from_slice(extra);
    let output = cosimo_in(tmp.path(), &args);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    let fmi = if version == 2 {
        "fmi2DoStep"
    } else {
        "fmi3DoStep"
    };
    for part in [
        "component \"faulty\"",
        fmi,
        "from t = 0.4",
        "simulation failed at t = 0.4",
    ]
    .iter()
    .chain(expected)
    {
        assert!(stderr.contains(part), "no {part:?} in:\n{stderr}");
    }
    // Every row before the failing step is kept: 0, 0.1, ..., 0.4.
    let results = read_results(&out);
    let times = results.time();
    assert_eq!(times.len(), 5, "{stderr}");
    assert!((times[4] - 0.4).abs() < 1e-12, "{times:?}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in the temporary folder: {left:?}");
    stderr
}

#[test]
fn a_segfault_in_a_worker_ends_the_run_with_the_signal() {
    for version in [2, 3] {
        crashes(version, 5, &["--isolate"], &["signal 11 (SIGSEGV"]);
    }
}

#[test]
fn an_abort_in_a_worker_ends_the_run_with_the_signal() {
    for version in [2, 3] {
        crashes(version, 6, &["--isolate"], &["signal 6 (SIGABRT"]);
    }
}

#[test]
fn an_exit_in_a_worker_ends_the_run_with_its_code() {
    for version in [2, 3] {
        crashes(version, 7, &["--isolate"], &["exited with code 3"]);
    }
}

#[test]
fn a_stack_overflow_in_a_worker_ends_the_run() {
    for version in [2, 3] {
        // Rust's guard-page handler reports the overflow and aborts; a C FMU dies of SIGSEGV.
        let stderr = crashes(version, 11, &["--isolate"], &["was killed by signal"]);
        assert!(
            stderr.contains("SIGABRT") || stderr.contains("SIGSEGV"),
            "{stderr}"
        );
    }
}

#[test]
fn an_endless_loop_ends_at_the_call_timeout() {
    for version in [2, 3] {
        let started = Instant::now();
        crashes(
            version,
            8,
            &["--call-timeout", "2"],
            &[
                "did not return within the call timeout of 2 s",
                "was killed",
            ],
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the timeout did not end the run"
        );
    }
}

#[test]
fn a_component_timeout_from_the_system_file_isolates_it() {
    let dir = temp_dir();
    let system = system_file(dir.path(), 2, 8, r#", "callTimeout": 1.5"#);
    let out = dir.path().join("out.csv");
    let output = common::cosimo([
        "run",
        system.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    assert!(
        stderr.contains("fmi2DoStep from t = 0.4 did not return within the call timeout of 1.5 s"),
        "{stderr}"
    );
}

#[test]
fn a_component_isolated_in_the_system_file_crashes_alone() {
    let dir = temp_dir();
    let system = system_file(dir.path(), 3, 5, r#", "isolate": true"#);
    let out = dir.path().join("out.csv");
    let output = common::cosimo([
        "run",
        system.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("SIGSEGV"));
    assert_eq!(read_results(&out).time().len(), 5);
}

#[test]
fn nan_from_a_worker_is_reported_like_nan_in_process() {
    for version in [2, 3] {
        let dir = temp_dir();
        let system = system_file(dir.path(), version, 9, "");
        let out = dir.path().join("out.csv");
        let output = common::cosimo([
            "run",
            system.to_str().unwrap(),
            "--isolate",
            "-o",
            out.to_str().unwrap(),
            "-q",
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{}", show(&output));
        assert!(stderr.contains("faulty.x"), "{stderr}");
        assert!(stderr.contains("NaN"), "{stderr}");
    }
}

#[test]
fn a_leaking_worker_dies_at_its_memory_limit() {
    for version in [2, 3] {
        let dir = temp_dir();
        let system = system_file(dir.path(), version, 10, "");
        let out = dir.path().join("out.csv");
        // 64 MiB a step from t = 0.5 on: a few steps reach 256 MiB.
        let output = common::cosimo([
            "run",
            system.to_str().unwrap(),
            "--isolate",
            "--worker-memory",
            "256M",
            "--stop-time",
            "100",
            "-o",
            out.to_str().unwrap(),
            "-q",
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{}", show(&output));
        for part in [
            "component \"faulty\"",
            "was killed by signal",
            "DoStep from t = ",
            "memory limit of 256 MiB (--worker-memory)",
        ] {
            assert!(stderr.contains(part), "no {part:?} in:\n{stderr}");
        }
        // The rows up to the failing step are kept.
        assert!(read_results(&out).time().len() >= 5, "{stderr}");
    }
}

#[test]
fn worker_options_that_cannot_take_effect_are_refused() {
    let dir = temp_dir();
    let healthy = system_file(dir.path(), 2, 0, "");
    let system = healthy.to_str().unwrap();
    for (args, expected) in [
        (
            vec!["run", system, "--worker-memory", "512M"],
            "no component runs in one",
        ),
        (
            vec!["run", system, "--call-timeout", "0"],
            "--call-timeout 0: expected a positive number of seconds",
        ),
        (
            vec!["run", system, "--isolate", "--worker-memory", "lots"],
            "expected a size such as 512M",
        ),
        // Beyond any duration: refused with the limit instead of a panic (exit 101).
        (
            vec!["run", system, "--call-timeout", "1e300"],
            "--call-timeout 1e300: more than the limit of 31536000 s (a year); leave the timeout out for none",
        ),
    ] {
        let output = common::cosimo(&args);
        assert_eq!(output.status.code(), Some(2), "{}", show(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    let huge = system_file(dir.path(), 3, 1, r#", "callTimeout": 1e300"#);
    let output = common::cosimo(["run", huge.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("callTimeout 1e300: more than the limit of 31536000 s (a year)"),
        "{}",
        show(&output)
    );
    let contradiction = system_file(dir.path(), 3, 0, r#", "isolate": false, "callTimeout": 2"#);
    let output = common::cosimo(["run", contradiction.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("isolate is false"));
}

/// Every example system, under each of its algorithms (implicit with FMU states, constraint,
/// RIM, adaptive), gives the same bytes with every FMU in a worker process as in-process.
#[test]
fn isolated_runs_give_the_same_results_as_in_process() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus");
    let dir = temp_dir();
    for example in [
        "two-mass-force-force.json",
        "two-mass-implicit-adaptive.json",
        "rigid-link.json",
        "crane-single.json",
        "conformance-chain.json",
        "bouncing-ball.json",
        "two-mass-force-force.ssp",
    ] {
        let path = examples.join(example);
        let inside = dir.path().join(format!("{example}-in.csv"));
        let outside = dir.path().join(format!("{example}-out.csv"));
        let grouped = dir.path().join(format!("{example}-grouped.csv"));
        for (file, extra) in [
            (&inside, &[][..]),
            (&outside, &["--isolate"][..]),
            (&grouped, &["--isolate", "--worker-processes", "1"][..]),
        ] {
            let mut args = vec![
                "run".to_string(),
                path.display().to_string(),
                "-q".into(),
                "-o".into(),
                file.display().to_string(),
            ];
            args.extend(extra.iter().map(|a| a.to_string()));
            common::cosimo_ok(&args);
        }
        let inside = std::fs::read(&inside).unwrap();
        assert_eq!(
            inside,
            std::fs::read(&outside).unwrap(),
            "{example}: isolated results differ"
        );
        assert_eq!(
            inside,
            std::fs::read(&grouped).unwrap(),
            "{example}: results in one shared worker process differ"
        );
    }
}

/// Two instances of an FMU that can be instantiated only once per process run, each in its own
/// worker; asked to share cosimo's process they are refused with a message.
#[test]
fn once_per_process_fmus_get_a_worker_each() {
    for version in [2, 3] {
        let unpacked = common::unpacked_with_edit(
            "Oscillator",
            version,
            "canBeInstantiatedOnlyOncePerProcess=\"false\"",
            "canBeInstantiatedOnlyOncePerProcess=\"true\"",
        );
        let dir = temp_dir();
        let write = |extra: &str| {
            let json = format!(
                r#"{{
  "components": [
    {{ "name": "a", "fmu": "{fmu}", "parameters": {{ "x0": 1 }}{extra} }},
    {{ "name": "b", "fmu": "{fmu}" }}
  ],
  "connections": [ {{ "from": "a.x", "to": "b.F" }} ],
  "experiment": {{ "stopTime": 1.0, "stepSize": 0.01 }}
}}"#,
                fmu = unpacked.path().display()
            );
            let path = dir.path().join(format!("once{}.json", extra.len()));
            std::fs::write(&path, json).unwrap();
            path
        };
        let out = dir.path().join("out.csv");
        let auto = write("");
        common::cosimo_ok([
            "run",
            auto.to_str().unwrap(),
            "-q",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(read_results(&out).time().len(), 101);
        let refused = write(r#", "isolate": false"#);
        let output = common::cosimo(["run", refused.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(2), "{}", show(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("canBeInstantiatedOnlyOncePerProcess"),
            "{}",
            show(&output)
        );
    }
}

/// A chain of Feedthrough FMUs (outputs depend directly on inputs, so the master sets an input
/// after a step and reads the output again): values read ahead with a step must never stand in
/// for values read after a later input, so the isolated chain matches the in-process one.
#[test]
fn feedthrough_chains_match_in_process_through_the_library() {
    use common::systems::{component, connect};
    use cosimo::fmu::worker::WorkerOptions;
    use cosimo::master::execution::{Execution, RunOptions};
    use cosimo::system::System;

    for version in [2, 3] {
        let mut system = System {
            components: (0..3)
                .map(|i| component(&format!("f{i}"), "Feedthrough", version, &[]))
                .collect(),
            connections: vec![
                connect(
                    "f0.Float64_continuous_output",
                    "f1.Float64_continuous_input",
                ),
                connect(
                    "f1.Float64_continuous_output",
                    "f2.Float64_continuous_input",
                ),
                connect("f0.Int32_output", "f1.Int32_input"),
                connect("f1.Boolean_output", "f2.Boolean_input"),
            ],
            experiment: Default::default(),
        };
        system.experiment.stop = 1.0;
        system.experiment.step = 0.01;
        let run = |isolate: bool, worker_processes: Option<usize>| {
            let options = RunOptions {
                isolate,
                worker: WorkerOptions {
                    program: Some(env!("CARGO_BIN_EXE_cosimo").into()),
                    ..WorkerOptions::default()
                },
                worker_processes,
                ..RunOptions::default()
            };
            let mut exec = Execution::instantiate(&system, &options).expect("instantiates");
            let expected = match (isolate, worker_processes) {
                (false, _) => 0,
                (true, None) => 3,
                (true, Some(n)) => n,
            };
            assert_eq!(
                worker_children(),
                expected,
                "worker processes with {worker_processes:?}"
            );
            exec.initialize().expect("initializes");
            let mut rows = Vec::new();
            for k in 0..100 {
                // Drive the chain's head with a changing input between steps.
                exec.placement
                    .run_one(0, move |unit| {
                        unit.slave
                            .set_float64(&[7], &[(k as f64 * 0.37).sin()])
                            .map(|_| ())
                    })
                    .expect("sets");
                exec.step(0.01).expect("steps");
                rows.push(exec.values.clone());
            }
            rows
        };
        let in_process = run(false, None);
        assert_eq!(in_process, run(true, None), "FMI {version}");
        // Steps of the components one worker hosts are queued behind each other; read-ahead
        // values stay per component.
        assert_eq!(in_process, run(true, Some(1)), "FMI {version}, one worker");
        assert_eq!(in_process, run(true, Some(2)), "FMI {version}, two workers");
    }
}

/// The `cosimo worker` processes this test process started (its children, any thread's).
fn worker_children() -> usize {
    let mut count = 0;
    for task in std::fs::read_dir("/proc/self/task").expect("/proc is mounted") {
        let children = task.expect("a task").path().join("children");
        let Ok(pids) = std::fs::read_to_string(children) else {
            continue;
        };
        for pid in pids.split_whitespace() {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains("--channel-fd") {
                count += 1;
            }
        }
    }
    count
}

/// Components sharing one worker process (`--worker-processes`): a segfault of one ends the
/// run with the signal, the shared process named, the rows kept and no litter; an endless loop
/// of one ends at the timeout and kills the process it shares.
#[test]
fn a_crash_in_a_shared_worker_ends_the_run() {
    for version in [2, 3] {
        crashes(
            version,
            5,
            &["--isolate", "--worker-processes", "1"],
            &["SIGSEGV", "hosting it and \"osc\""],
        );
    }
    let stderr = crashes(
        2,
        8,
        &["--call-timeout", "2", "--worker-processes", "1"],
        &[
            "did not return within the call timeout of 2 s",
            "hosting \"osc\" too",
        ],
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `"workerGroup"` in a system file: components naming one group share its process (same
/// results as in-process); an FMU that may be instantiated only once per process is refused a
/// shared group, and so are groups with `isolate: false` and `--worker-processes` that has
/// nothing to spread.
#[test]
fn worker_groups_from_the_system_file() {
    let dir = temp_dir();
    let write = |name: &str, fmu: &Path, extra_a: &str, extra_b: &str| {
        let json = format!(
            r#"{{
  "components": [
    {{ "name": "a", "fmu": "{fmu}", "parameters": {{ "x0": 1 }}{extra_a} }},
    {{ "name": "b", "fmu": "{fmu}"{extra_b} }}
  ],
  "connections": [ {{ "from": "a.x", "to": "b.F" }} ],
  "experiment": {{ "stopTime": 1.0, "stepSize": 0.01 }}
}}"#,
            fmu = fmu.display()
        );
        let path = dir.path().join(name);
        std::fs::write(&path, json).unwrap();
        path
    };
    let oscillator = fmu("Oscillator", 3);
    let run = |system: &Path, out: &Path, extra: &[&str]| {
        let mut args = vec![
            "run",
            system.to_str().unwrap(),
            "-q",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        common::cosimo(&args)
    };
    let plain = write("plain.json", &oscillator, "", "");
    let grouped = write(
        "grouped.json",
        &oscillator,
        r#", "workerGroup": "g""#,
        r#", "workerGroup": "g""#,
    );
    let (inside, shared) = (dir.path().join("in.csv"), dir.path().join("g.csv"));
    assert!(run(&plain, &inside, &[]).status.success());
    let output = run(&grouped, &shared, &[]);
    assert!(output.status.success(), "{}", show(&output));
    assert_eq!(
        std::fs::read(&inside).unwrap(),
        std::fs::read(&shared).unwrap()
    );
    let once = common::unpacked_with_edit(
        "Oscillator",
        2,
        "canBeInstantiatedOnlyOncePerProcess=\"false\"",
        "canBeInstantiatedOnlyOncePerProcess=\"true\"",
    );
    let clash = write(
        "clash.json",
        once.path(),
        r#", "workerGroup": "g""#,
        r#", "workerGroup": "g""#,
    );
    // Spread over one process, the once-per-process instances still get a process each.
    let spread = dir.path().join("spread.csv");
    let output = run(&clash, &spread, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("cannot share the worker process \"g\""),
        "{}",
        show(&output)
    );
    let apart = write("apart.json", once.path(), "", "");
    let output = run(&apart, &spread, &["--isolate", "--worker-processes", "1"]);
    assert!(output.status.success(), "{}", show(&output));
    for (system, extra, expected) in [
        (
            write("no.json", &oscillator, r#", "workerGroup": "g", "isolate": false"#, ""),
            &[][..],
            "workerGroup names a worker process to host it, but isolate is false",
        ),
        (
            plain.clone(),
            &["--worker-processes", "2"][..],
            "--worker-processes spreads components over worker processes, but no component runs in one",
        ),
        (
            grouped.clone(),
            &["--worker-processes", "2"][..],
            "every one names its workerGroup",
        ),
        (
            plain.clone(),
            &["--isolate", "--worker-processes", "0"][..],
            "--worker-processes",
        ),
    ] {
        let output = run(&system, &spread, extra);
        assert_eq!(output.status.code(), Some(2), "{}", show(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(expected),
            "{extra:?}: {}",
            show(&output)
        );
    }
}

/// `cosimo check --isolate`: a case whose FMU segfaults fails alone with the signal in its
/// report; the next case still runs and passes.
#[test]
fn a_crashing_case_fails_alone_in_an_isolated_check() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    let reference = "\"time\",\"x\"\n0,0\n0.5,0.5\n1,1\n";
    for (name, failure) in [("a-crashes", 5), ("b-passes", 0)] {
        let folder = cases.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("check.json"),
            format!(
                r#"{{ "model": "{}", "startValues": {{ "failure": {failure} }} }}"#,
                fmu("Faulty", 2).display()
            ),
        )
        .unwrap();
        std::fs::write(folder.join("reference.csv"), reference).unwrap();
    }
    let output = common::cosimo([
        "check".as_ref(),
        cases.as_os_str(),
        "--isolate".as_ref(),
        "--json".as_ref(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&output)));
    let text = report.to_string();
    assert!(text.contains("SIGSEGV"), "{text}");
    assert!(text.contains("fmi2DoStep from t = 0.4"), "{text}");
    let cases = report["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2, "{text}");
    assert_eq!(cases[1]["status"], "passed", "{text}");
}

/// The SSP annotation `<cosimo:Component isolate="..." callTimeout="..."/>` is read: an isolated
/// component gives the same bytes, a timeout with `isolate="false"` is refused, and a value that
/// is not a boolean is named with its line.
#[test]
fn ssp_component_annotations_choose_the_worker() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let original = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-force.ssp");
    let ssd = std::fs::read_to_string(original.join("SystemStructure.ssd")).unwrap();
    let fmus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/fmus");
    let ssd = ssd.replace("../../target/fmus", &fmus.display().to_string());
    let dir = temp_dir();
    let with = |attributes: &str| {
        let annotation = format!(
            "<ssc:Annotations><ssc:Annotation type=\"org.cosimo.component\"><cosimo:Component {attributes}/></ssc:Annotation></ssc:Annotations>\n      </ssd:Component>"
        );
        let folder = dir.path().join(format!("s{}.ssp", attributes.len()));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("SystemStructure.ssd"),
            ssd.replacen("</ssd:Component>", &annotation, 1),
        )
        .unwrap();
        folder
    };
    let run = |ssp: &Path, out: &Path| {
        common::cosimo([
            "run".as_ref(),
            ssp.as_os_str(),
            "-q".as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
        ])
    };
    let plain = dir.path().join("plain.csv");
    let isolated = dir.path().join("isolated.csv");
    common::cosimo_ok([
        "run".as_ref(),
        original.as_os_str(),
        "-q".as_ref(),
        "-o".as_ref(),
        plain.as_os_str(),
    ]);
    let output = run(&with(r#"isolate="true" callTimeout="30""#), &isolated);
    assert!(output.status.success(), "{}", show(&output));
    assert_eq!(
        std::fs::read(&plain).unwrap(),
        std::fs::read(&isolated).unwrap()
    );
    let output = run(&with(r#"workerGroup="solvers""#), &isolated);
    assert!(output.status.success(), "{}", show(&output));
    assert_eq!(
        std::fs::read(&plain).unwrap(),
        std::fs::read(&isolated).unwrap()
    );
    let output = run(&with(r#"workerGroup=" ""#), &isolated);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("names no worker process"));
    let output = run(&with(r#"isolate="false" callTimeout="2""#), &isolated);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("isolate is false"));
    let output = run(&with(r#"callTimeout="1e300""#), &isolated);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("callTimeout=\"1e300\": more than the limit of 31536000 s (a year)"),
        "{}",
        show(&output)
    );
    let output = run(&with(r#"isolate="maybe""#), &isolated);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("isolate=\"maybe\"; expected true or false"),
        "{}",
        show(&output)
    );
}

/// Steps of isolated components run side by side; when the first one's worker dies, the steps
/// still running in the other workers end and those workers are freed (no hang, no litter).
#[test]
fn a_crash_while_other_steps_run_ends_cleanly() {
    let dir = temp_dir();
    let tmp = temp_dir();
    let json = format!(
        r#"{{
  "components": [
    {{ "name": "faulty", "fmu": "{faulty}", "parameters": {{ "failure": 6, "fail_at": 0.5 }} }},
    {{ "name": "osc1", "fmu": "{osc}" }},
    {{ "name": "osc2", "fmu": "{osc3}" }}
  ],
  "experiment": {{ "stopTime": 1.0, "stepSize": 0.1 }}
}}"#,
        faulty = fmu("Faulty", 3).display(),
        osc = fmu("Oscillator", 2).display(),
        osc3 = fmu("Oscillator", 3).display(),
    );
    let system = dir.path().join("first.json");
    std::fs::write(&system, json).unwrap();
    let out = dir.path().join("out.csv");
    let output = cosimo_in(
        tmp.path(),
        &[
            "run",
            system.to_str().unwrap(),
            "--isolate",
            "-q",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("SIGABRT"));
    assert_eq!(read_results(&out).time().len(), 5);
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in the temporary folder: {left:?}");
}

/// A thread that starts worker processes ahead (`start_ahead`, as each thread of an isolated
/// sweep does) has its next one started already: the next start takes it (renamed for its
/// components), starts another, and the one left over dies with the thread.
#[test]
fn a_worker_started_ahead_is_taken_by_the_next_start_and_dies_with_its_thread() {
    use cosimo::fmu::worker::{start_ahead, WorkerOptions, WorkerProcess};
    let options = WorkerOptions {
        program: Some(env!("CARGO_BIN_EXE_cosimo").into()),
        ..WorkerOptions::default()
    };
    let left_over = std::thread::spawn(move || {
        // The worker processes this thread started.
        let started = || -> Vec<u32> {
            // SAFETY: gettid takes no argument and cannot fail.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) };
            std::fs::read_to_string(format!("/proc/self/task/{tid}/children"))
                .expect("/proc is mounted")
                .split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect()
        };
        start_ahead();
        let first = WorkerProcess::spawn(&["a".to_string()], &options).expect("starts");
        let ahead: Vec<u32> = started()
            .into_iter()
            .filter(|&p| p != first.pid())
            .collect();
        assert_eq!(ahead.len(), 1, "one started ahead: {ahead:?}");
        let second = WorkerProcess::spawn(&["b".to_string()], &options).expect("takes it");
        assert_eq!(second.pid(), ahead[0]);
        assert_eq!(second.members(), ["b".to_string()]);
        let next: Vec<u32> = started()
            .into_iter()
            .filter(|&p| p != first.pid() && p != second.pid())
            .collect();
        assert_eq!(next.len(), 1, "the next one is started: {next:?}");
        next[0]
    })
    .join()
    .expect("the thread ends");
    // SAFETY: kill with signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(left_over as libc::pid_t, 0) } == 0;
    assert!(!alive, "the worker started ahead is killed with its thread");
}
