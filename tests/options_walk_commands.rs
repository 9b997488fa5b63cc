//! Every option of `check`, `sweep`, `plot`, `stability`, `inspect` and `validate` (as their
//! `--help` lists them), and every setting of a study file (as `schemas/study.schema.json`
//! lists them), walked: each changes what the command gives, compared with the same command
//! without it (a report's values, a table, a picture's bytes, what it prints), or is refused
//! with a message naming it.

mod common;
mod walk;

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};
use walk::{example, s, Effect, Ran, Walker, CHECK_REPORT};

use Effect::{Holds, Refused, Results};

fn fmu(model: &str, version: u8) -> String {
    common::fmu(model, version).display().to_string()
}

/// A check's report without what differs from run to run (wall time, the results' folder).
fn report(ran: &Ran) -> Option<Value> {
    let mut report = ran.summary.clone()?;
    for case in report["cases"].as_array_mut()? {
        let case = case.as_object_mut()?;
        case.remove("duration");
        case.remove("resultFile");
        for signal in case.get_mut("signals")?.as_array_mut()? {
            signal.as_object_mut()?.remove("plot");
        }
    }
    Some(report)
}

/// Both checks finished (passed or failed) and their reports differ.
fn report_differs(without: &Ran, with: &Ran) -> Result<(), String> {
    let done = |r: &Ran| matches!(r.code, Some(0 | 3));
    if !(done(without) && done(with)) {
        return Err("expected both checks to finish".into());
    }
    match (report(without), report(with)) {
        (Some(a), Some(b)) if a != b => Ok(()),
        (Some(_), Some(_)) => Err("the same report with and without it".into()),
        _ => Err("a check wrote no report".into()),
    }
}

/// Both finished and printed different things on stdout.
fn stdout_differs(without: &Ran, with: &Ran) -> Result<(), String> {
    if !(without.finished() && with.finished()) {
        return Err("expected both to finish".into());
    }
    if without.stdout != with.stdout {
        Ok(())
    } else {
        Err("the same output with and without it".into())
    }
}

/// Only the one with it says nothing (and both finished).
fn silenced(without: &Ran, with: &Ran) -> Result<(), String> {
    let said = |r: &Ran| format!("{}{}", r.stdout, r.stderr);
    if without.finished() && with.finished() && !said(without).is_empty() && said(with).is_empty() {
        Ok(())
    } else {
        Err("expected a summary without it and nothing with it".into())
    }
}

#[test]
fn every_check_option_changes_the_check_or_is_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let mut w = Walker::new();
    // The Dahlquist FMU against its own FMI-LS-REF reference.
    let dahlquist = s(&["check", &fmu("Dahlquist", 2)]);
    let with = |extra: &[&str]| {
        let mut args = dahlquist.clone();
        args.extend(s(extra));
        args
    };
    let wrong = w.write("wrong.csv", "time,x\n0,5\n10,5\n");
    w.walk(
        "--reference",
        &dahlquist,
        &["--reference", &wrong],
        Holds(|without, with| {
            report_differs(without, with)?;
            if without.code == Some(0) && with.code == Some(3) {
                Ok(())
            } else {
                Err("expected the check to fail against the wrong reference only".into())
            }
        }),
    );
    // An input: a reference made with it, checked with and without it.
    let osc = fmu("Oscillator", 2);
    let inputs = w.write("inputs.csv", "time,F\n0,0\n1,100\n");
    let made = w.ran(&s(&[
        "run",
        &osc,
        "--stop-time",
        "0.05",
        "--input-file",
        &inputs,
        "--output",
        "driven.csv",
    ]));
    assert!(made.finished(), "the reference run: {}", made.stderr);
    let driven = w.path("driven.csv").display().to_string();
    let oscillator = s(&["check", &osc, "--reference", &driven, "--stop-time", "0.05"]);
    w.walk(
        "--input-file",
        &oscillator,
        &["--input-file", &inputs],
        Holds(report_differs),
    );
    let settings = w.write("settings.json", r#"{"experiment": {"stopTime": 5}}"#);
    w.walk(
        "--settings",
        &dahlquist,
        &["--settings", &settings],
        Holds(report_differs),
    );
    for (option, value) in [
        ("--rtol", "0.5"),
        ("--atol", "0.5"),
        ("--range-tol", "0.5"),
        ("--time-tol", "0.5"),
        ("--start-time", "1"),
        ("--stop-time", "5"),
        ("--step-size", "0.05"),
        ("--output-interval", "0.05"),
        ("--compare-at", "all"),
    ] {
        w.walk(option, &dahlquist, &[option, value], Holds(report_differs));
    }
    w.walk("--quiet", &dahlquist, &["--quiet"], Holds(silenced));
    // Files only the option writes.
    w.walk(
        "--junit",
        &dahlquist,
        &["--junit", "junit.xml"],
        Holds(report_unchanged),
    );
    let zero = [
        "--rtol",
        "0",
        "--atol",
        "0",
        "--range-tol",
        "0",
        "--time-tol",
        "0",
    ];
    let failing = with(&zero);
    w.walk(
        "--plot",
        &failing,
        &["--plot", "plots"],
        Holds(report_unchanged),
    );
    w.run_pending();
    let junit = std::fs::read_to_string(w.path("junit.xml")).unwrap_or_default();
    w.mark(
        "check",
        "--junit",
        written(junit.contains("<testsuite"), "a JUnit report"),
    );
    let pngs = std::fs::read_dir(w.path("plots"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|case| {
            std::fs::read_dir(case.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter(|e| e.path().extension().is_some_and(|x| x == "png"))
        .count();
    w.mark(
        "check",
        "--plot",
        written(pngs > 0, "a plot of the failing signal"),
    );
    // The report and the results, which the walker asks every check for, and the other
    // reports: made by hand.
    let target = fmu("Dahlquist", 2);
    let plain = w.raw(&s(&["check", &target]));
    let kept = w.raw(&s(&["check", &target, "--output", "kept"]));
    let results = std::fs::read_dir(w.path("kept"))
        .map(|d| d.count())
        .unwrap_or(0);
    w.mark(
        "check",
        "--output",
        written(
            kept.status.success() && results > 0,
            "the results kept in the folder named",
        ),
    );
    let filed = w.raw(&s(&["check", &target, CHECK_REPORT, "report.json"]));
    let report_text = std::fs::read_to_string(w.path("report.json")).unwrap_or_default();
    w.mark(
        "check",
        CHECK_REPORT,
        written(
            filed.status.success() && report_text.contains("\"cases\""),
            "the JSON report in the file named",
        ),
    );
    let printed = w.raw(&s(&["check", &target, "--json"]));
    let json: Value = serde_json::from_slice(&printed.stdout).unwrap_or_default();
    let text: Result<Value, _> = serde_json::from_slice(&plain.stdout);
    w.mark(
        "check",
        "--json",
        written(
            json["cases"].is_array() && text.is_err(),
            "the JSON report on stdout only with it",
        ),
    );
    let html = w.raw(&s(&["check", &target, "--html", "html"]));
    w.mark(
        "check",
        "--html",
        written(
            html.status.success() && w.path("html").join("index.html").is_file(),
            "an HTML report in the folder named",
        ),
    );
    let summary = w.path("step-summary.md");
    let github = |extra: &[&str]| {
        std::fs::write(&summary, "").expect("empties the step summary");
        let mut args = s(&["check", &target]);
        args.extend(s(extra));
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
            .args(&args)
            .current_dir(w.dir.path())
            .env("GITHUB_STEP_SUMMARY", &summary)
            .output()
            .expect("the cosimo binary runs");
        (
            output.status.success(),
            std::fs::read_to_string(&summary).unwrap_or_default(),
        )
    };
    let (without, with) = (github(&[]), github(&["--github-summary"]));
    w.mark(
        "check",
        "--github-summary",
        written(
            without.0 && with.0 && without.1.is_empty() && with.1.contains('|'),
            "a Markdown table in $GITHUB_STEP_SUMMARY only with it",
        ),
    );
    // Baselines: a report of the check, as if its case had taken a microsecond.
    let made = w.raw(&s(&["check", &target, CHECK_REPORT, "baseline.json"]));
    let mut quick: Value =
        serde_json::from_str(&std::fs::read_to_string(w.path("baseline.json")).unwrap_or_default())
            .unwrap_or_default();
    assert!(
        made.status.success() && quick["cases"].is_array(),
        "the baseline report"
    );
    quick["cases"][0]["duration"] = json!(1e-6);
    let quick = w.write("quick.json", &quick.to_string());
    w.walk(
        "--baseline",
        &dahlquist,
        &["--baseline", &quick],
        Holds(|without, with| {
            report_differs(without, with)?;
            let verdict = |r: &Ran| report(r).map(|v| v["cases"][0]["baseline"]["verdict"].clone());
            match (verdict(without), verdict(with)) {
                (Some(Value::Null), Some(v)) if v == "passing" => Ok(()),
                _ => {
                    Err("expected the case marked passing against the baseline only with it".into())
                }
            }
        }),
    );
    w.walk(
        "--slower-factor",
        &[
            dahlquist.clone(),
            s(&["--baseline", &quick, "--slower-seconds", "0"]),
        ]
        .concat(),
        &["--slower-factor", "1e12"],
        Holds(|without, with| {
            let slower = |r: &Ran| report(r).map(|v| v["cases"][0]["baseline"]["slower"].clone());
            match (slower(without), slower(with)) {
                (Some(Value::Bool(true)), Some(Value::Bool(false))) => Ok(()),
                _ => Err("expected the case slower only without the huge factor".into()),
            }
        }),
    );
    w.walk(
        "--slower-seconds",
        &[dahlquist.clone(), s(&["--baseline", &quick])].concat(),
        &["--slower-seconds", "0"],
        Holds(|without, with| {
            let slower = |r: &Ran| report(r).map(|v| v["cases"][0]["baseline"]["slower"].clone());
            match (slower(without), slower(with)) {
                (Some(Value::Bool(false)), Some(Value::Bool(true))) => Ok(()),
                _ => Err("expected the case slower only with no seconds to spare".into()),
            }
        }),
    );
    let unwritten = w.raw(&s(&["check", &target, "--reference", "updated.csv"]));
    let updated = w.raw(&s(&[
        "check",
        &target,
        "--reference",
        "updated.csv",
        "--update-references",
    ]));
    w.mark(
        "check",
        "--update-references",
        written(
            unwritten.status.code() == Some(2)
                && updated.status.success()
                && w.path("updated.csv").is_file()
                && w.path("updated.csv.provenance.json").is_file(),
            "the reference and its provenance, where the check without it finds no reference",
        ),
    );
    // Worker processes, on an FMU that fails in its first step.
    let reference = w.write("faulty.csv", "time,x\n0,0\n0.05,0.05\n");
    let dir = w.dir.path().to_path_buf();
    let faulty = |failure: i32| {
        let file = dir.join(format!("faulty-{failure}.json"));
        std::fs::write(
            &file,
            json!({"startValues": {"failure": failure, "fail_at": 0.01}, "experiment": {"stopTime": 0.05, "stepSize": 0.01}}).to_string(),
        )
        .expect("writes the settings");
        let file = file.display().to_string();
        s(&[
            "check",
            &fmu("Faulty", 2),
            "--reference",
            &reference,
            "--settings",
            &file,
        ])
    };
    w.walk(
        "--isolate",
        &faulty(6),
        &["--isolate"],
        Holds(|without, with| {
            let error = |r: &Ran| {
                report(r)
                    .map(|v| v["cases"][0]["error"].to_string())
                    .unwrap_or_default()
            };
            if without.stderr.contains("run with --isolate") && error(with).contains("SIGABRT") {
                Ok(())
            } else {
                Err(
                    "expected the abort to end cosimo without it and fail the case alone with it"
                        .into(),
                )
            }
        }),
    );
    w.walk_alone(
        "check",
        "--call-timeout",
        &{
            let mut args = faulty(8);
            args.extend(s(&["--call-timeout", "0.3"]));
            args
        },
        |with| {
            let error = report(with)
                .map(|v| v["cases"][0]["error"].to_string())
                .unwrap_or_default();
            if error.contains("call timeout of 0.3 s") {
                Ok(())
            } else {
                Err("expected the endless call killed at the timeout".into())
            }
        },
    );
    w.walk(
        "--worker-memory",
        &{
            let mut args = faulty(10);
            args.push("--isolate".into());
            args
        },
        &["--worker-memory", "150M"],
        Holds(|without, with| {
            let error = |r: &Ran| {
                report(r)
                    .map(|v| v["cases"][0]["error"].to_string())
                    .unwrap_or_default()
            };
            if !error(without).contains("memory limit")
                && error(with).contains("memory limit of 150 MiB")
            {
                Ok(())
            } else {
                Err("expected the leaking worker to die at the limit only with it".into())
            }
        }),
    );
    w.walk(
        "--allow-non-finite",
        &faulty(9),
        &["--allow-non-finite"],
        Holds(|without, with| {
            let error = |r: &Ran| {
                report(r)
                    .map(|v| v["cases"][0]["error"].to_string())
                    .unwrap_or_default()
            };
            if error(without).contains("NaN") && error(with) == "null" {
                Ok(())
            } else {
                Err("expected the NaN to stop the case's run only without it".into())
            }
        }),
    );
    model_options_of_check(&mut w);
    w.covers_help_of("check");
    w.finish("check option");
}

/// `check` takes `run`'s options of the model: each changes the report of the two-mass case
/// (checked for 0.05 s) or is refused as `run` refuses it.
fn model_options_of_check(w: &mut Walker) {
    let case = example("references/two-mass-force-force");
    let base = s(&["check", &case, "--stop-time", "0.05"]);
    let with = |extra: &[&str]| [base.clone(), s(extra)].concat();
    let adaptive = with(&["--adaptive"]);
    let implicit = with(&["--algorithm", "implicit"]);
    let me = with(&["--interface", "me"]);
    let cases: Vec<(&str, &Vec<String>, Vec<&str>, Effect)> = vec![
        (
            "--max-rows",
            &base,
            vec!["--max-rows", "3"],
            Holds(refused_case),
        ),
        (
            "--divergence-limit",
            &base,
            vec!["--divergence-limit", "0.01"],
            Holds(failed_case),
        ),
        (
            "--start-value",
            &base,
            vec!["--start-value", "mass1.x0=0.3"],
            Holds(report_differs),
        ),
        (
            "--algorithm",
            &base,
            vec!["--algorithm", "gauss-seidel"],
            Holds(report_differs),
        ),
        (
            "--jacobian",
            &implicit,
            vec!["--jacobian", "components"],
            Holds(report_differs),
        ),
        (
            "--extension",
            &implicit,
            vec!["--extension", "derivative"],
            Holds(refused_case),
        ),
        (
            "--extrapolation-order",
            &base,
            vec!["--extrapolation-order", "2"],
            Holds(report_differs),
        ),
        (
            "--adaptive",
            &base,
            vec!["--adaptive"],
            Holds(report_differs),
        ),
        (
            "--estimator",
            &adaptive,
            vec!["--estimator", "ExMilne"],
            Holds(report_differs),
        ),
        (
            "--fixed-order",
            &adaptive,
            vec!["--fixed-order"],
            Holds(report_differs),
        ),
        (
            "--max-step",
            &adaptive,
            vec!["--max-step", "0.0015"],
            Holds(report_differs),
        ),
        (
            "--safety-factor",
            &adaptive,
            vec!["--safety-factor", "1"],
            Holds(report_differs),
        ),
        (
            "--interface",
            &base,
            vec!["--interface", "me"],
            Holds(report_differs),
        ),
        (
            "--solver",
            &me,
            vec!["--solver", "rk45"],
            Holds(report_differs),
        ),
        (
            "--solver-rtol",
            &me,
            vec!["--solver-rtol", "1e-2"],
            Holds(report_differs),
        ),
        (
            "--solver-atol",
            &me,
            vec!["--solver-atol", "1e-1"],
            Holds(report_differs),
        ),
        (
            "--tolerance",
            &me,
            vec!["--tolerance", "1e-2"],
            Holds(report_differs),
        ),
        (
            "--event-mode",
            &base,
            vec!["--event-mode"],
            Holds(refused_case),
        ),
        (
            "--parallel",
            &base,
            vec!["--parallel", "--algorithm", "gauss-seidel"],
            Holds(refused_case),
        ),
        (
            "--threads",
            &base,
            vec!["--threads", "2"],
            Holds(refused_case),
        ),
        (
            "--worker-processes",
            &base,
            vec!["--worker-processes", "1"],
            Holds(refused_case),
        ),
    ];
    for (option, base, extra, effect) in cases {
        w.walk(option, base, &extra, effect);
    }
}

/// The check without the option finished; with it the case is refused as a usage error (exit
/// 2, or the case's error in the report).
fn refused_case(without: &Ran, with: &Ran) -> Result<(), String> {
    let error = report(with)
        .map(|v| v["cases"][0]["error"].to_string())
        .unwrap_or_default();
    if matches!(without.code, Some(0 | 3)) && (with.code == Some(2) || error.len() > 4) {
        Ok(())
    } else {
        Err("expected the option refused".into())
    }
}

/// The check without the option finished; with it the case failed in its run.
fn failed_case(without: &Ran, with: &Ran) -> Result<(), String> {
    let error = report(with)
        .map(|v| v["cases"][0]["error"].to_string())
        .unwrap_or_default();
    if matches!(without.code, Some(0 | 3)) && error.contains("diverged") {
        Ok(())
    } else {
        Err("expected the case's run to fail".into())
    }
}

/// The same verdict (the option writes something else).
fn report_unchanged(without: &Ran, with: &Ran) -> Result<(), String> {
    if report(without).is_some() && report(with).is_some() && without.code == with.code {
        Ok(())
    } else {
        Err("expected the same check".into())
    }
}

fn written(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("expected {what}"))
    }
}

/// A study file of the walk: `value` with the two-mass example as its system unless it names
/// one.
fn study(w: &Walker, value: Value) -> String {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let mut value = value;
    if value.get("system").is_none() {
        value["system"] = json!(example("two-mass-force-force.json"));
    }
    w.write(
        &format!("study-{}.json", COUNT.fetch_add(1, Ordering::Relaxed)),
        &value.to_string(),
    )
}

/// A small study: two masses, 0.02 s, the final and mean position, in this process (faster).
fn small() -> Value {
    json!({
        "grid": [{"name": "mass1.m", "values": [1, 2]}],
        "experiment": {"stopTime": 0.02},
        "isolate": false,
        "keep": {"summaries": [{"variable": "mass1.x", "statistics": ["final", "mean"]}]}
    })
}

/// `sweep STUDY --output OUT`.
fn sweep(study: &str, out: &str) -> Vec<String> {
    s(&["sweep", study, "--output", out])
}

#[test]
fn every_sweep_option_and_study_setting_changes_the_sweep_or_is_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let mut w = Walker::new();
    let base_study = study(&w, small());
    let base = sweep(&base_study, "base");
    // Options.
    w.walk(
        "--dry-run",
        &s(&["sweep", &base_study]),
        &["--dry-run"],
        Holds(|without, with| {
            if without.code == Some(2)
                && with.finished()
                && with.stdout.starts_with("index,mass1.m\n0,1\n1,2")
            {
                Ok(())
            } else {
                Err("expected the plan printed with it (and --output asked for without it)".into())
            }
        }),
    );
    w.walk(
        "--dry-run",
        &base,
        &["--dry-run"],
        Refused("cannot be used with"),
    );
    w.walk(
        "--output",
        &s(&["sweep", &base_study]),
        &["--output", "out"],
        Holds(|without, with| {
            if without.code == Some(2) && with.finished() && with.results.is_some() {
                Ok(())
            } else {
                Err("expected the table in the folder named".into())
            }
        }),
    );
    w.walk(
        "--shard",
        &sweep(&base_study, "whole"),
        &["--shard", "1/2"],
        Results,
    );
    w.walk(
        "--quiet",
        &sweep(&base_study, "loud"),
        &["--quiet"],
        Holds(silenced),
    );
    w.walk(
        "--workers",
        &s(&["sweep", &base_study, "--dry-run"]),
        &["--workers", "2"],
        Refused("cannot be used with"),
    );
    // --merge: the shards' tables joined are the whole table.
    let shards = [sweep(&base_study, "shard0"), sweep(&base_study, "shard1")];
    let (a, b) = (
        w.ran(&[shards[0].clone(), s(&["--shard", "0/2"])].concat()),
        w.ran(&[shards[1].clone(), s(&["--shard", "1/2"])].concat()),
    );
    assert!(
        a.finished() && b.finished(),
        "the shards: {}{}",
        a.stderr,
        b.stderr
    );
    let whole = w.ran(&sweep(&base_study, "all"));
    let merged = w.ran(&s(&[
        "sweep", "--merge", "shard0", "shard1", "--output", "merged",
    ]));
    w.mark(
        "sweep",
        "--merge",
        written(
            merged.finished() && merged.results.is_some() && merged.results == whole.results,
            "the merged table equal to the whole sweep's",
        ),
    );
    w.walk(
        "--workers",
        &s(&["sweep", "--merge", "shard0", "shard1", "--output", "m2"]),
        &["--workers", "2"],
        Refused("cannot be used with"),
    );
    // --resume: the table of a sweep that stopped after its first run.
    let stopped = w.ran(&sweep(&base_study, "stopped"));
    assert!(stopped.finished(), "{}", stopped.stderr);
    let table = w.path("stopped").join("summary.csv");
    let text = std::fs::read_to_string(&table).expect("the table");
    let first: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&table, first.join("\n") + "\n").expect("cuts the table");
    let resumed = w.ran(&s(&["sweep", &base_study, "--resume", "stopped"]));
    let resumed_table = std::fs::read(&table).ok();
    w.mark(
        "sweep",
        "--resume",
        written(
            resumed.finished()
                && resumed.stderr.contains("resuming: 1 of 2 runs")
                && resumed_table == whole.results,
            "only the missing run made and the whole table written",
        ),
    );
    workers(&mut w);
    w.covers_help_of("sweep");

    // Study settings, each against the small study.
    let setting = |w: &mut Walker, label: &str, edit: &dyn Fn(&mut Value), effect: Effect| {
        let mut value = small();
        edit(&mut value);
        let with = study(w, value);
        let name = label.replace(['.', '[', ']'], "-");
        w.compare(
            "study",
            label,
            &sweep(&base_study, &format!("b-{name}")),
            &sweep(&with, &format!("w-{name}")),
            effect,
        );
    };
    let adaptive = w.write("adaptive.json", &{
        let mut system = walk::example_json("two-mass-force-force.json");
        system["components"][0]["interface"] = json!("me");
        system.to_string()
    });
    setting(
        &mut w,
        "system",
        &|v| v["system"] = json!(adaptive),
        Results,
    );
    setting(
        &mut w,
        "grid.name",
        &|v| v["grid"][0]["name"] = json!("mass2.m"),
        Results,
    );
    setting(
        &mut w,
        "grid.values",
        &|v| v["grid"][0]["values"] = json!([1, 3]),
        Results,
    );
    setting(
        &mut w,
        "grid.range",
        &|v| {
            v["grid"][0] = json!({"name": "mass1.m", "range": {"start": 1, "stop": 3, "count": 2}})
        },
        Results,
    );
    setting(
        &mut w,
        "grid.range.start",
        &|v| {
            v["grid"][0] = json!({"name": "mass1.m", "range": {"start": 2, "stop": 3, "count": 2}})
        },
        Results,
    );
    setting(
        &mut w,
        "grid.range.stop",
        &|v| {
            v["grid"][0] = json!({"name": "mass1.m", "range": {"start": 1, "stop": 4, "count": 2}})
        },
        Results,
    );
    setting(
        &mut w,
        "grid.range.count",
        &|v| {
            v["grid"][0] = json!({"name": "mass1.m", "range": {"start": 1, "stop": 2, "count": 3}})
        },
        Results,
    );
    setting(
        &mut w,
        "grid.range.step",
        &|v| {
            v["grid"][0] = json!({"name": "mass1.m", "range": {"start": 1, "stop": 2, "step": 0.5}})
        },
        Results,
    );
    let samples = |count: u64, seed: u64, method: &str, distribution: Value| json!({"count": count, "seed": seed, "method": method, "parameters": [distribution]});
    let uniform = json!({"name": "mass2.m", "uniform": {"min": 1, "max": 2}});
    let base_samples = samples(2, 1, "random", uniform.clone());
    let sampled = |w: &mut Walker, label: &str, value: Value| {
        let (mut a, mut b) = (small(), small());
        a["samples"] = base_samples.clone();
        b["samples"] = value;
        let (a, b) = (study(w, a), study(w, b));
        w.compare(
            "study",
            label,
            &s(&["sweep", &a, "--dry-run"]),
            &s(&["sweep", &b, "--dry-run"]),
            Holds(stdout_differs),
        );
    };
    sampled(
        &mut w,
        "samples.count",
        samples(3, 1, "random", uniform.clone()),
    );
    sampled(
        &mut w,
        "samples.seed",
        samples(2, 2, "random", uniform.clone()),
    );
    sampled(
        &mut w,
        "samples.method",
        samples(2, 1, "latinHypercube", uniform.clone()),
    );
    sampled(
        &mut w,
        "samples.parameters.name",
        samples(
            2,
            1,
            "random",
            json!({"name": "mass2.c", "uniform": {"min": 1, "max": 2}}),
        ),
    );
    sampled(
        &mut w,
        "samples.parameters.uniform.min",
        samples(
            2,
            1,
            "random",
            json!({"name": "mass2.m", "uniform": {"min": 1.5, "max": 2}}),
        ),
    );
    sampled(
        &mut w,
        "samples.parameters.uniform.max",
        samples(
            2,
            1,
            "random",
            json!({"name": "mass2.m", "uniform": {"min": 1, "max": 3}}),
        ),
    );
    sampled(
        &mut w,
        "samples.parameters.normal.mean",
        samples(
            2,
            1,
            "random",
            json!({"name": "mass2.m", "normal": {"mean": 2, "std": 0.1}}),
        ),
    );
    sampled(
        &mut w,
        "samples.parameters.normal.std",
        samples(
            2,
            1,
            "random",
            json!({"name": "mass2.m", "normal": {"mean": 1.5, "std": 0.3}}),
        ),
    );
    for (label, key, value) in [
        ("experiment.startTime", "startTime", json!(0.01)),
        ("experiment.stopTime", "stopTime", json!(0.01)),
        ("experiment.stepSize", "stepSize", json!(0.002)),
        ("experiment.outputInterval", "outputInterval", json!(0.001)),
        ("experiment.algorithm", "algorithm", json!("gauss-seidel")),
        (
            "experiment.extrapolationOrder",
            "extrapolationOrder",
            json!(2),
        ),
        ("experiment.divergenceLimit", "divergenceLimit", json!(0.01)),
    ] {
        setting(
            &mut w,
            label,
            &|v| v["experiment"][key] = value.clone(),
            Results,
        );
    }
    setting(
        &mut w,
        "experiment.maxRows",
        &|v| v["experiment"]["maxRows"] = json!(2),
        Refused("more than the limit of 2"),
    );
    // The FMUs' tolerance reaches a component integrated by cosimo (Model Exchange).
    let me_study = |tolerance: Option<f64>| {
        let mut value = small();
        value["system"] = json!(adaptive);
        if let Some(t) = tolerance {
            value["experiment"]["tolerance"] = json!(t);
        }
        value
    };
    let (a, b) = (study(&w, me_study(None)), study(&w, me_study(Some(1e-2))));
    w.compare(
        "study",
        "experiment.tolerance",
        &sweep(&a, "me-a"),
        &sweep(&b, "me-b"),
        Results,
    );
    setting(
        &mut w,
        "isolate",
        &|v| v["isolate"] = json!(true),
        Holds(|without, with| {
            let isolated = "(FMUs in worker processes)";
            if without.results.is_some()
                && without.results == with.results
                && !without.stderr.contains(isolated)
                && with.stderr.contains(isolated)
            {
                Ok(())
            } else {
                Err("expected the same table, made in worker processes only with it".into())
            }
        }),
    );
    // An endless loop: the call timeout ends the run that hangs.
    let hang = study(
        &w,
        json!({
            "system": fmu("Faulty", 2),
            "grid": [{"name": "failure", "values": [8]}, {"name": "fail_at", "values": [0.01]}],
            "experiment": {"stopTime": 0.05},
            "callTimeout": 0.3,
            "keep": {"summaries": [{"variable": "x", "statistics": ["final"]}]}
        }),
    );
    w.walk_alone("study", "callTimeout", &sweep(&hang, "hang"), |with| {
        if with
            .text()
            .is_some_and(|t| t.contains("call timeout of 0.3 s"))
        {
            Ok(())
        } else {
            Err("expected the hanging run failed at the timeout in the table".into())
        }
    });
    setting(
        &mut w,
        "keep.summaries.variable",
        &|v| v["keep"]["summaries"][0]["variable"] = json!("mass2.x"),
        Results,
    );
    setting(
        &mut w,
        "keep.summaries.statistics",
        &|v| v["keep"]["summaries"][0]["statistics"] = json!(["max"]),
        Results,
    );
    setting(
        &mut w,
        "keep.summaries.crossing",
        &|v| {
            v["keep"]["summaries"][0] = json!({"variable": "mass1.x", "crossing": {"level": 0.099}})
        },
        Results,
    );
    let crossing = |w: &mut Walker, label: &str, crossing: Value| {
        let (mut a, mut b) = (small(), small());
        a["keep"]["summaries"][0] = json!({"variable": "mass1.x", "crossing": {"level": 0.099}});
        b["keep"]["summaries"][0] = json!({"variable": "mass1.x", "crossing": crossing});
        let (a, b) = (study(w, a), study(w, b));
        let name = label.replace('.', "-");
        w.compare(
            "study",
            label,
            &sweep(&a, &format!("ca-{name}")),
            &sweep(&b, &format!("cb-{name}")),
            Results,
        );
    };
    crossing(
        &mut w,
        "keep.summaries.crossing.level",
        json!({"level": 0.098}),
    );
    crossing(
        &mut w,
        "keep.summaries.crossing.direction",
        json!({"level": 0.099, "direction": "rising"}),
    );
    // Kept results and their variables.
    let kept = |variables: Option<Value>| {
        let mut value = small();
        value["keep"]["results"] = json!(true);
        if let Some(v) = variables {
            value["keep"]["variables"] = v;
        }
        value
    };
    let (plain, keeping, some) = (
        study(&w, small()),
        study(&w, kept(None)),
        study(&w, kept(Some(json!(["mass2.v"])))),
    );
    for (study_file, out) in [(&plain, "k-plain"), (&keeping, "k-all"), (&some, "k-some")] {
        let ran = w.ran(&sweep(study_file, out));
        assert!(ran.finished(), "{}", ran.stderr);
    }
    let dir = w.dir.path().to_path_buf();
    let header = |out: &str| {
        std::fs::read_to_string(dir.join(out).join("runs").join("run-000000.csv"))
            .ok()
            .and_then(|t| t.lines().next().map(str::to_string))
    };
    w.mark(
        "study",
        "keep.results",
        written(
            header("k-plain").is_none() && header("k-all").is_some(),
            "each run's results kept only with it",
        ),
    );
    w.mark(
        "study",
        "keep.variables",
        written(
            header("k-some").is_some_and(|h| h.contains("mass2.v") && !h.contains("mass1.v"))
                && header("k-all").is_some_and(|h| h.contains("mass1.v")),
            "only the variables named in each run's results",
        ),
    );
    let mut mat = kept(None);
    mat["keep"]["format"] = json!("mat");
    let mat = study(&w, mat);
    let made = w.ran(&sweep(&mat, "k-mat"));
    let runs = dir.join("k-mat").join("runs");
    w.mark(
        "study",
        "keep.format",
        written(
            made.finished()
                && runs.join("run-000000.mat").is_file()
                && !runs.join("run-000000.csv").exists(),
            "each run's results in the format named",
        ),
    );
    setting(
        &mut w,
        "keep.format",
        &|v| v["keep"]["format"] = json!("mat"),
        Refused("keep.format applies to the runs' result files"),
    );
    // A check of every run.
    let reference = w.write("nominal.csv", "time,mass1.x\n0,0.1\n0.02,0.1\n");
    let checked = |check: Value| {
        let mut value = small();
        value["check"] = check;
        value
    };
    let base_check = study(&w, checked(json!({"reference": reference})));
    let check_setting = |w: &mut Walker, label: &str, check: Value| {
        let with = study(w, checked(check));
        let name = label.replace('.', "-");
        w.compare(
            "study",
            label,
            &sweep(&base_check, &format!("cb-{name}")),
            &sweep(&with, &format!("cw-{name}")),
            Holds(|without, with| {
                if without.results.is_some()
                    && with.results.is_some()
                    && without.results != with.results
                {
                    Ok(())
                } else {
                    Err("expected the check columns of the table to differ".into())
                }
            }),
        );
    };
    setting(
        &mut w,
        "check",
        &|v| v["check"] = json!({"reference": reference}),
        Holds(|without, with| {
            if with.text().is_some_and(|t| t.contains("check_deviation"))
                && without.text().is_some_and(|t| !t.contains("check"))
            {
                Ok(())
            } else {
                Err("expected the check columns only with it".into())
            }
        }),
    );
    let other = w.write("other.csv", "time,mass1.x\n0,0\n0.02,0\n");
    check_setting(&mut w, "check.reference", json!({"reference": other}));
    check_setting(
        &mut w,
        "check.tolerance.rel",
        json!({"reference": reference, "tolerance": {"rel": 0.5}}),
    );
    check_setting(
        &mut w,
        "check.tolerance.abs",
        json!({"reference": reference, "tolerance": {"abs": 0.5}}),
    );
    check_setting(
        &mut w,
        "check.tolerance.range",
        json!({"reference": reference, "tolerance": {"range": 0.5}}),
    );
    check_setting(
        &mut w,
        "check.tolerance.time",
        json!({"reference": reference, "tolerance": {"time": 0.01}}),
    );
    check_setting(
        &mut w,
        "check.signals",
        json!({"reference": reference, "signals": {"mass1.x": {"abs": 1.0}}}),
    );
    let schema: Value =
        serde_json::from_str(include_str!("../schemas/study.schema.json")).expect("the schema");
    let mut required = study_settings(&schema);
    required.retain(|n| !["$schema", "description"].contains(&n.as_str()));
    w.covers("study", &required);
    w.finish("sweep option and study setting");
}

/// The settings of a study, as its schema lists them (references followed, arrays' items
/// named like their array): `grid.range.start`, `samples.parameters.uniform.min`, ...
fn study_settings(schema: &Value) -> Vec<String> {
    let definitions = schema
        .get("definitions")
        .or_else(|| schema.get("$defs"))
        .cloned()
        .unwrap_or_default();
    fn walk(node: &Value, path: &str, definitions: &Value, out: &mut Vec<String>) {
        if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
            let name = reference.rsplit('/').next().unwrap_or_default();
            if let Some(target) = definitions.get(name) {
                walk(target, path, definitions, out);
            }
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            for choice in node
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                walk(choice, path, definitions, out);
            }
        }
        if let Some(items) = node.get("items") {
            walk(items, path, definitions, out);
        }
        if let Some(properties) = node.get("properties").and_then(Value::as_object) {
            for (key, child) in properties {
                let name = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if !out.contains(&name) {
                    out.push(name.clone());
                }
                walk(child, &name, definitions, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(schema, "", &definitions, &mut out);
    // An object walked through its own settings counts through them.
    let parents: Vec<String> = out
        .iter()
        .filter(|n| out.iter().any(|m| m.starts_with(&format!("{n}."))))
        .cloned()
        .collect();
    out.retain(|n| {
        !parents.contains(n)
            || ["grid.range", "keep.summaries.crossing", "check"].contains(&n.as_str())
    });
    out
}

/// `--workers`: two runs that hang until their call timeout take one timeout side by side and
/// two one after the other.
fn workers(w: &mut Walker) {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        common::skip::skipped(
            common::skip::Skip::OneCore,
            "sweep --workers: one core makes one run at a time either way",
        );
        w.mark("sweep", "--workers", Ok(()));
        return;
    }
    let hang = study(
        w,
        json!({
            "system": fmu("Faulty", 2),
            "grid": [{"name": "failure", "values": [8, 8]}, {"name": "fail_at", "values": [0.01]}],
            "experiment": {"stopTime": 0.05},
            "callTimeout": 0.5,
            "keep": {"summaries": [{"variable": "x", "statistics": ["final"]}]}
        }),
    );
    w.walk("--workers", &sweep(&hang, "two-at-once"), &["--workers", "1"], Holds(|without, with| {
        let seconds = |r: &Ran| {
            r.stderr
                .split(" runs in ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|t| t.parse::<f64>().ok())
        };
        match (seconds(without), seconds(with)) {
            (Some(a), Some(b)) if b >= 1.0 && a < b - 0.25 => Ok(()),
            (a, b) => Err(format!("expected the hanging runs side by side without it and one after the other with it: {a:?} s and {b:?} s")),
        }
    }));
}

#[test]
fn every_option_of_plot_stability_inspect_and_validate_changes_the_output_or_is_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let mut w = Walker::new();
    // plot: two result files, and a table of parameters.
    let a = w.write("a.csv", "time,x,v\n0,0,1\n1,1,0.5\n2,0.5,0\n");
    let b = w.write("b.csv", "time,x,v\n0,0.2,1\n1,0.8,0.5\n2,0.4,0\n");
    let table = w.write(
        "table.csv",
        "index,m,c,max\n0,1,1,0.5\n1,2,1,0.7\n2,1,2,0.4\n3,2,2,0.6\n",
    );
    let plot = |name: &str, extra: &[&str]| {
        let mut args = s(&["plot", &a, &b, "--variable", "x", "-o", name]);
        args.extend(s(extra));
        args
    };
    let (x, v) = (
        plot("x.png", &[]),
        s(&["plot", &a, &b, "--variable", "v", "-o", "v.png"]),
    );
    w.compare("plot", "--variable", &x, &v, Results);
    // Several variables into one figure: the variables' lines are added.
    w.compare(
        "plot",
        "--variable",
        &x,
        &plot("xv.png", &["--variable", "v"]),
        Results,
    );
    // The output's extension picks the image format; any other is refused.
    w.compare(
        "plot",
        "--output",
        &x,
        &s(&["plot", &a, &b, "--variable", "x", "-o", "x.svg"]),
        Holds(|without, with| {
            let starts = |r: &Ran, magic: &[u8]| {
                r.results
                    .as_ref()
                    .is_some_and(|bytes| bytes.trim_ascii_start().starts_with(magic))
            };
            if starts(without, b"\x89PNG") && starts(with, b"<svg") {
                Ok(())
            } else {
                Err("expected a PNG for .png and an SVG for .svg".into())
            }
        }),
    );
    w.compare(
        "plot",
        "--output",
        &x,
        &s(&["plot", &a, &b, "--variable", "x", "-o", "x.jpg"]),
        Refused("end the file name in .png or .svg"),
    );
    w.compare(
        "plot",
        "--output",
        &s(&["plot", &a, &b, "--variable", "x"]),
        &x,
        Holds(|without, with| {
            if with.results.is_some() && without.code == Some(2) {
                Ok(())
            } else {
                Err("expected the PNG written where named, and asked for without it".into())
            }
        }),
    );
    w.compare(
        "plot",
        "--label",
        &x,
        &plot("label.png", &["--label", "first", "--label", "second"]),
        Results,
    );
    w.compare(
        "plot",
        "--title",
        &x,
        &plot("title.png", &["--title", "positions"]),
        Results,
    );
    w.compare(
        "plot",
        "--y-min",
        &x,
        &plot("range.png", &["--y-min", "-1", "--y-max", "2"]),
        Results,
    );
    w.compare(
        "plot",
        "--y-max",
        &x,
        &plot("range2.png", &["--y-min", "-1", "--y-max", "3"]),
        Results,
    );
    w.compare(
        "plot",
        "--y-max",
        &x,
        &plot("range3.png", &["--y-min", "2", "--y-max", "1"]),
        Refused("--y-min"),
    );
    let points = |name: &str, extra: &[&str]| {
        let mut args = s(&["plot", &table, "--variable", "max", "-o", name]);
        args.extend(s(extra));
        args
    };
    w.compare(
        "plot",
        "--x",
        &points("px.png", &["--x", "m"]),
        &points("pc.png", &["--x", "c"]),
        Results,
    );
    w.compare(
        "plot",
        "--by",
        &points("pby0.png", &["--x", "m"]),
        &points("pby.png", &["--x", "m", "--by", "c"]),
        Results,
    );
    w.compare(
        "plot",
        "--by",
        &x,
        &plot("by.png", &["--by", "c"]),
        Refused("--by"),
    );
    w.walk("--quiet", &x, &["--quiet"], Holds(silenced));
    w.covers_help_of("plot");

    // stability: the thesis' two-mass oscillator and a system file.
    let fmus = fmu_pack::fmus_dir().display().to_string();
    let thesis = |name: &str, extra: &[&str]| {
        let mut args = s(&[
            "stability",
            "--fmus",
            &fmus,
            "--points",
            "3",
            "--output",
            name,
        ]);
        args.extend(s(extra));
        args
    };
    let map = thesis("map.csv", &[]);
    // Without --fmus the FMUs beside the build; an empty folder has none.
    let empty = w.path("no-fmus");
    std::fs::create_dir_all(&empty).expect("creates a folder");
    w.walk(
        "--fmus",
        &s(&["stability", "--points", "3"]),
        &["--fmus", &empty.display().to_string()],
        Holds(|without, with| {
            if without.finished() && !with.finished() && with.stderr.contains("no-fmus") {
                Ok(())
            } else {
                Err("expected the FMUs looked for in the folder named".into())
            }
        }),
    );
    for (option, value) in [
        ("--decomposition", "fd"),
        ("--algorithm", "gauss-seidel"),
        ("--ratios", "2,1,1,1,1"),
        ("--extrapolation-order", "1"),
        ("--plane", "implicit"),
        ("--points", "4"),
    ] {
        let name = format!("map{option}.csv");
        let mut with = thesis(&name, &[]);
        let i = with.iter().position(|a| a == "--points").expect("points");
        if option == "--points" {
            with[i + 1] = value.into();
        } else {
            with.extend(s(&[option, value]));
        }
        w.compare("stability", option, &map, &with, Results);
    }
    let implicit = thesis(
        "implicit.csv",
        &["--algorithm", "implicit", "--plane", "implicit"],
    );
    w.compare(
        "stability",
        "--extension",
        &implicit,
        &thesis(
            "derivative.csv",
            &[
                "--algorithm",
                "implicit",
                "--plane",
                "implicit",
                "--extension",
                "derivative",
            ],
        ),
        Results,
    );
    w.compare(
        "stability",
        "--output",
        &s(&["stability", "--fmus", &fmus, "--points", "3"]),
        &map,
        Holds(|without, with| {
            if without.finished() && with.results.is_some() {
                Ok(())
            } else {
                Err("expected the map's CSV written only with it".into())
            }
        }),
    );
    let png = thesis("png.csv", &["--plot", "map.png"]);
    w.compare(
        "stability",
        "--plot",
        &map,
        &png,
        Holds(|without, with| {
            let drawn = |r: &Ran| r.stderr.contains("map: ");
            if without.finished() && with.finished() && !drawn(without) && drawn(with) {
                Ok(())
            } else {
                Err("expected the PNG drawn only with it".into())
            }
        }),
    );
    w.compare(
        "stability",
        "--plot",
        &map,
        &thesis("svg.csv", &["--plot", "map.svg"]),
        Holds(|without, with| {
            let drawn = |r: &Ran| r.stderr.contains("map: ") && r.stderr.contains("map.svg");
            if without.finished() && with.finished() && !drawn(without) && drawn(with) {
                Ok(())
            } else {
                Err("expected the SVG drawn only with it".into())
            }
        }),
    );
    w.compare(
        "stability",
        "--plot",
        &map,
        &thesis("gif.csv", &["--plot", "map.gif"]),
        Refused("end the file name in .png or .svg"),
    );
    let max = s(&["stability", "--fmus", &fmus, "--max-stable-step"]);
    w.compare(
        "stability",
        "--max-stable-step",
        &s(&["stability", "--fmus", &fmus, "--points", "3"]),
        &max,
        Holds(stdout_differs),
    );
    for (option, value) in [
        ("--m1", "2"),
        ("--c1", "2000"),
        ("--d1", "20"),
        ("--m2", "2"),
        ("--c2", "2000"),
        ("--d2", "20"),
        ("--cc", "2000"),
        ("--dc", "20"),
        ("--h-low", "0.02"),
        ("--h-high", "0.02"),
    ] {
        w.walk(option, &max, &[option, value], Holds(stdout_differs));
    }
    let system = example("two-mass-stability.json");
    let radius = s(&["stability", &system]);
    w.walk(
        "--step-size",
        &radius,
        &["--step-size", "0.01"],
        Holds(stdout_differs),
    );
    w.walk(
        "--scan",
        &radius,
        &["--scan", "--points", "3"],
        Holds(stdout_differs),
    );
    let file_map = s(&[
        "stability",
        &system,
        "--map",
        "--points",
        "3",
        "--x",
        "c=500:2000",
        "--y",
        "spring.d1=0:20",
        "--output",
        "fm.csv",
    ]);
    w.compare(
        "stability",
        "--map",
        &radius,
        &file_map,
        Holds(stdout_differs),
    );
    w.compare(
        "stability",
        "--x",
        &file_map,
        &s(&[
            "stability",
            &system,
            "--map",
            "--points",
            "3",
            "--x",
            "c=100:200",
            "--y",
            "spring.d1=0:20",
            "--output",
            "fmx.csv",
        ]),
        Results,
    );
    w.compare(
        "stability",
        "--y",
        &file_map,
        &s(&[
            "stability",
            &system,
            "--map",
            "--points",
            "3",
            "--x",
            "c=500:2000",
            "--y",
            "spring.d1=100:200",
            "--output",
            "fmy.csv",
        ]),
        Results,
    );
    w.walk(
        "--decomposition",
        &radius,
        &["--decomposition", "fd"],
        Refused("belongs to the stability thesis' two-mass study"),
    );
    w.walk(
        "--extrapolation-order",
        &radius,
        &["--extrapolation-order", "1"],
        Holds(stdout_differs),
    );
    w.walk(
        "--algorithm",
        &radius,
        &["--algorithm", "gauss-seidel"],
        Holds(stdout_differs),
    );
    w.walk(
        "--points",
        &radius,
        &["--points", "4"],
        Refused("applies to --map or --scan"),
    );
    w.walk("--points", &map, &["--points", "0"], Refused("--points"));
    w.walk(
        "--quiet",
        &png,
        &["--quiet"],
        Holds(|without, with| {
            if without.finished()
                && with.finished()
                && without.stdout == with.stdout
                && without.stderr.contains("map: ")
                && with.stderr.is_empty()
            {
                Ok(())
            } else {
                Err("expected the same figures, without the note of the map drawn".into())
            }
        }),
    );
    w.covers_help_of("stability");

    // inspect and validate.
    let osc = fmu("Oscillator", 2);
    w.walk(
        "--json",
        &s(&["inspect", &osc]),
        &["--json"],
        Holds(|without, with| {
            stdout_differs(without, with)?;
            serde_json::from_str::<Value>(&with.stdout)
                .map(|_| ())
                .map_err(|e| format!("expected JSON: {e}"))
        }),
    );
    let ssp = example("two-mass-force-force.ssp");
    let folder = w.path("inspect.ssp");
    std::fs::create_dir_all(&folder).expect("creates the SSP folder");
    let ssd = std::fs::read_to_string(format!("{ssp}/SystemStructure.ssd"))
        .expect("reads the SSD")
        .replace("../../target/fmus", &fmus);
    std::fs::write(folder.join("SystemStructure.ssd"), &ssd).expect("writes the SSD");
    std::fs::write(
        folder.join("Other.ssd"),
        ssd.replacen(r#"<ssv:Real value="0.1""#, r#"<ssv:Real value="0.3""#, 1),
    )
    .expect("writes the SSD");
    let inspect_ssp = s(&["inspect", &folder.display().to_string()]);
    w.walk(
        "--ssd",
        &inspect_ssp,
        &["--ssd", "Other.ssd"],
        Holds(stdout_differs),
    );
    w.walk(
        "--ssd",
        &s(&["inspect", &osc]),
        &["--ssd", "Other.ssd"],
        Refused("--ssd chooses the .ssd file of an SSP"),
    );
    // An SSP element cosimo does not read: a warning, unless quiet.
    let warned = w.path("warned.ssp");
    std::fs::create_dir_all(&warned).expect("creates the SSP folder");
    std::fs::write(
        warned.join("SystemStructure.ssd"),
        ssd.replacen(
            "<ssd:System ",
            r#"<ssd:SignalDictionaries><ssd:SignalDictionary name="d"/></ssd:SignalDictionaries><ssd:System "#,
            1,
        ),
    )
    .expect("writes the SSD");
    w.walk(
        "--quiet",
        &s(&["inspect", &warned.display().to_string()]),
        &["--quiet"],
        Holds(|without, with| {
            let warning = "is not supported by cosimo";
            if without.finished()
                && with.finished()
                && without.stdout == with.stdout
                && without.stderr.contains(warning)
                && !with.stderr.contains(warning)
            {
                Ok(())
            } else {
                Err("expected the same description, the warning only without it".into())
            }
        }),
    );
    w.covers_help_of("inspect");
    w.walk(
        "--json",
        &s(&["validate", &osc]),
        &["--json"],
        Holds(|without, with| {
            stdout_differs(without, with)?;
            serde_json::from_str::<Value>(&with.stdout)
                .map(|_| ())
                .map_err(|e| format!("expected JSON: {e}"))
        }),
    );
    // An FMU whose unit "m" is not defined: warnings, which --quiet leaves out.
    let undefined = w.path("undefined-unit");
    let archive = std::fs::File::open(common::fmu("Oscillator", 2)).expect("opens the FMU");
    zip::ZipArchive::new(archive)
        .and_then(|mut z| z.extract(&undefined))
        .expect("unpacks the FMU");
    let md = undefined.join("modelDescription.xml");
    let text = std::fs::read_to_string(&md).expect("reads the model description");
    std::fs::write(&md, text.replace(r#"<Unit name="m"/>"#, "")).expect("writes it");
    w.walk(
        "--quiet",
        &s(&["validate", &undefined.display().to_string()]),
        &["--quiet"],
        Holds(|without, with| {
            let warning = "is not defined in <UnitDefinitions>";
            if without.stdout.contains(warning) && !with.stdout.contains(warning) {
                Ok(())
            } else {
                Err("expected the warnings only without it".into())
            }
        }),
    );
    w.covers_help_of("validate");
    w.finish("plot, stability, inspect and validate option");
}
