//! `cosimo check --baseline REPORT.json` sets each case against an earlier report (newly
//! failing, fixed, still failing, passing, slower, new, missing) and refuses what is not a
//! report; `--update-references` writes references that then pass, with a provenance file
//! whose SHA-256 is the FMU's, and never rewrites an FMU.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{cosimo, fmu, show};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The Dahlquist solution exp(-t) on 0..10 s in 100 steps, scaled by `gain` (1.1: 10 % off,
/// outside the default tolerances).
fn dahlquist_csv(gain: f64) -> String {
    let mut text = String::from("\"time\",\"x\"\n");
    for k in 0..=100 {
        let t = k as f64 / 10.0;
        text.push_str(&format!("{t},{}\n", gain * (-t).exp()));
    }
    text
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// `cosimo check` with `args` (paths and words).
fn check(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut all: Vec<&std::ffi::OsStr> = vec!["check".as_ref()];
    all.extend(args.iter().map(|a| a.as_ref()));
    cosimo(all)
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The SHA-256 of a file's bytes, in hex, computed here (not by cosimo).
fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reports of the Dahlquist FMU against a good and a 10 % wrong reference, as baselines.
struct Reports {
    dir: tempfile::TempDir,
    model: PathBuf,
    good: PathBuf,
    bad: PathBuf,
    passed: PathBuf,
    failed: PathBuf,
}

fn reports() -> Reports {
    let dir = tempfile::tempdir().unwrap();
    let model = fmu("Dahlquist", 2);
    let good = write(&dir.path().join("good.csv"), &dahlquist_csv(1.0));
    let bad = write(&dir.path().join("bad.csv"), &dahlquist_csv(1.1));
    let passed = dir.path().join("passed.json");
    let failed = dir.path().join("failed.json");
    let out = check(&[&model, &"--reference", &good, &"--json-file", &passed]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = check(&[&model, &"--reference", &bad, &"--json-file", &failed]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    Reports {
        dir,
        model,
        good,
        bad,
        passed,
        failed,
    }
}

/// Check `reference` against `baseline` (and `extra` options): the output and the JSON report.
fn against(r: &Reports, reference: &Path, baseline: &Path, extra: &[&str]) -> (Output, Value) {
    let report = r.dir.path().join("now.json");
    let _ = std::fs::remove_file(&report);
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &r.model,
        &"--reference",
        &reference,
        &"--baseline",
        &baseline,
        &"--json-file",
        &report,
    ];
    for e in extra {
        args.push(e);
    }
    let out = check(&args);
    let value = if report.is_file() {
        json(&report)
    } else {
        Value::Null
    };
    (out, value)
}

#[test]
fn each_case_is_newly_failing_fixed_still_failing_or_passing_against_its_baseline() {
    let r = reports();
    for (reference, baseline, verdict, shown, code) in [
        (&r.bad, &r.passed, "newlyFailing", "[newly failing]", 3),
        (&r.good, &r.failed, "fixed", "[fixed]", 0),
        (&r.bad, &r.failed, "stillFailing", "[still failing]", 3),
        (&r.good, &r.passed, "passing", "[passing]", 0),
    ] {
        let (out, report) = against(&r, reference, baseline, &["--slower-seconds", "1000"]);
        // The exit code stays this check's verdict.
        assert_eq!(out.status.code(), Some(code), "{verdict}: {}", show(&out));
        let case = &report["cases"][0]["baseline"];
        assert_eq!(case["verdict"], verdict, "{report:#}");
        assert_eq!(case["slower"], false, "{report:#}");
        let then = if baseline == &r.passed {
            "passed"
        } else {
            "failed"
        };
        assert_eq!(case["status"], then, "{report:#}");
        let summary = &report["baseline"];
        assert_eq!(summary[verdict], 1, "{report:#}");
        assert_eq!(
            summary["file"],
            baseline.display().to_string(),
            "{report:#}"
        );
        assert_eq!(summary["missing"], Value::Array(vec![]), "{report:#}");
        let printed = text(&out);
        assert!(printed.contains(shown), "{verdict}: {printed}");
        assert!(printed.contains("against the baseline"), "{printed}");
    }
    // Without --baseline the report says nothing of one.
    let plain = r.dir.path().join("plain.json");
    let out = check(&[&r.model, &"--reference", &r.good, &"--json-file", &plain]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let plain = json(&plain);
    assert_eq!(plain["baseline"], Value::Null, "{plain:#}");
    assert_eq!(plain["cases"][0]["baseline"], Value::Null, "{plain:#}");
    assert!(!text(&out).contains("baseline"), "{}", text(&out));
}

#[test]
fn a_case_whose_run_time_grew_past_the_factor_and_the_seconds_is_slower() {
    let r = reports();
    // The baseline as if the case had taken a microsecond.
    let mut quick = json(&r.passed);
    quick["cases"][0]["duration"] = Value::from(1e-6);
    let quick_file = write(&r.dir.path().join("quick.json"), &quick.to_string());
    let (out, report) = against(&r, &r.good, &quick_file, &["--slower-seconds", "0"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let case = &report["cases"][0]["baseline"];
    assert_eq!(case["verdict"], "passing", "{report:#}");
    assert_eq!(case["slower"], true, "{report:#}");
    assert_eq!(case["duration"], 1e-6, "{report:#}");
    assert_eq!(report["baseline"]["slower"], 1, "{report:#}");
    assert_eq!(report["baseline"]["slowerSeconds"], 0.0, "{report:#}");
    assert_eq!(report["baseline"]["slowerFactor"], 1.5, "{report:#}");
    assert!(text(&out).contains("slower: "), "{}", text(&out));
    // Both thresholds must be passed: the factor alone, or the seconds alone, is not slower.
    for args in [
        ["--slower-seconds", "1000", "--slower-factor", "1"],
        ["--slower-seconds", "0", "--slower-factor", "1e12"],
    ] {
        let (out, report) = against(&r, &r.good, &quick_file, &args);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(
            report["cases"][0]["baseline"]["slower"], false,
            "{args:?}: {report:#}"
        );
        assert_eq!(report["baseline"]["slower"], 0, "{report:#}");
    }
}

#[test]
fn a_case_the_baseline_lacks_is_new_and_one_not_checked_now_is_missing() {
    let r = reports();
    let mut renamed = json(&r.passed);
    renamed["cases"][0]["name"] = Value::from("gone.fmu");
    let file = write(&r.dir.path().join("renamed.json"), &renamed.to_string());
    let (out, report) = against(&r, &r.good, &file, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        report["cases"][0]["baseline"]["verdict"], "new",
        "{report:#}"
    );
    assert_eq!(report["cases"][0]["baseline"]["status"], Value::Null);
    assert_eq!(report["baseline"]["new"], 1, "{report:#}");
    assert_eq!(report["baseline"]["missing"][0], "gone.fmu", "{report:#}");
    let printed = text(&out);
    assert!(printed.contains("[new]"), "{printed}");
    assert!(
        printed.contains("\"gone.fmu\", not checked now"),
        "{printed}"
    );
}

#[test]
fn the_baseline_shows_in_junit_the_html_index_and_the_github_summary() {
    let r = reports();
    let junit = r.dir.path().join("junit.xml");
    let html = r.dir.path().join("html");
    let summary = r.dir.path().join("summary.md");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .arg("check")
        .arg(&r.model)
        .arg("--reference")
        .arg(&r.bad)
        .arg("--baseline")
        .arg(&r.passed)
        .arg("--junit")
        .arg(&junit)
        .arg("--html")
        .arg(&html)
        .arg("--github-summary")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let junit = std::fs::read_to_string(junit).unwrap();
    assert!(
        junit.contains("<property name=\"baseline\" value=\"newly failing\"/>"),
        "{junit}"
    );
    let index = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(index.contains("<th>Baseline</th>"), "{index}");
    assert!(index.contains(">newly failing</td>"), "{index}");
    let summary = std::fs::read_to_string(summary).unwrap();
    assert!(summary.contains("1 newly failing"), "{summary}");
    assert!(summary.contains("Newly failing: Dahlquist"), "{summary}");
}

#[test]
fn a_baseline_that_is_not_a_check_report_or_of_a_later_format_is_refused_naming_the_file() {
    let r = reports();
    let mut later = json(&r.passed);
    later["format"] = Value::from(99);
    let files = [
        ("text.json", "this is not JSON".to_string(), "not JSON"),
        (
            "system.json",
            r#"{"components": []}"#.into(),
            "no \"cosimo\" version",
        ),
        (
            "nameless.json",
            r#"{"cosimo": "0.1.0", "cases": [{"status": "passed", "duration": 1}]}"#.into(),
            "case 1: no \"name\"",
        ),
        ("later.json", later.to_string(), "format 99"),
    ];
    for (name, content, expected) in files {
        let file = write(&r.dir.path().join(name), &content);
        let (out, _) = against(&r, &r.good, &file, &[]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&file.display().to_string()), "{stderr}");
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("PASS"),
            "{name}: ran anyway"
        );
    }
    let missing = r.dir.path().join("nowhere.json");
    let (out, _) = against(&r, &r.good, &missing, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(text(&out).contains("nowhere.json"), "{}", text(&out));
    // The thresholds need a baseline, and take numbers that make sense.
    for (args, expected) in [
        (vec!["--slower-factor", "2"], "--slower-factor says when"),
        (vec!["--slower-seconds", "2"], "--slower-seconds says when"),
    ] {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&r.model, &"--reference", &r.good];
        for a in &args {
            all.push(a);
        }
        let out = check(&all);
        assert_eq!(out.status.code(), Some(2), "{}", show(&out));
        assert!(text(&out).contains(expected), "{}", text(&out));
    }
    let (out, _) = against(&r, &r.good, &r.passed, &["--slower-factor", "0.5"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(text(&out).contains("at least 1"), "{}", text(&out));
    let (out, _) = against(&r, &r.good, &r.passed, &["--update-references"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(text(&out).contains("two checks"), "{}", text(&out));
}

#[test]
fn updated_references_pass_and_their_provenance_has_the_fmus_sha256() {
    let r = reports();
    let model_sha = sha256(&r.model);
    // A reference that does not exist yet is written.
    let fresh = r.dir.path().join("fresh").join("ref.csv");
    let out = check(&[&r.model, &"--reference", &fresh, &"--update-references"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(fresh.is_file(), "{}", show(&out));
    assert!(text(&out).contains("reference written"), "{}", text(&out));
    let provenance = json(&fresh.with_file_name("ref.csv.provenance.json"));
    assert_eq!(
        provenance["model"]["sha256"],
        model_sha.as_str(),
        "{provenance:#}"
    );
    assert_eq!(
        provenance["fmus"][0]["sha256"],
        model_sha.as_str(),
        "{provenance:#}"
    );
    assert_eq!(provenance["fmus"][0]["path"], r.model.display().to_string());
    assert_eq!(provenance["platform"]["os"], std::env::consts::OS);
    assert_eq!(provenance["platform"]["arch"], std::env::consts::ARCH);
    assert_eq!(provenance["cosimo"], env!("CARGO_PKG_VERSION"));
    let command: Vec<&str> = provenance["command"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        command[1..],
        [
            "check",
            &r.model.display().to_string(),
            "--reference",
            &fresh.display().to_string(),
            "--update-references"
        ]
    );
    assert!(provenance["commandLine"]
        .as_str()
        .unwrap()
        .contains("--update-references"));
    assert!(provenance["settings"]["commandLine"]["tolerance"].is_object());
    // Now it is the reference, and the run passes against it.
    let out = check(&[&r.model, &"--reference", &fresh]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    // A failing reference is compared (FAIL in the report), then replaced; the exit code does
    // not fail; the next check passes.
    let stale = write(&r.dir.path().join("stale.csv"), &dahlquist_csv(1.1));
    let report = r.dir.path().join("update.json");
    let out = check(&[
        &r.model,
        &"--reference",
        &stale,
        &"--update-references",
        &"--json-file",
        &report,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(text(&out).contains("FAIL"), "{}", text(&out));
    let report = json(&report);
    assert_eq!(report["cases"][0]["status"], "failed", "{report:#}");
    assert_eq!(
        report["cases"][0]["updatedReference"],
        stale.display().to_string()
    );
    let out = check(&[&r.model, &"--reference", &stale]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    // The FMU's own reference is not rewritten: refused before anything runs, FMU unchanged.
    let out = check(&[&r.model, &"--update-references"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        text(&out).contains("--update-references has no file to write"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("PASS"), "{}", text(&out));
    assert_eq!(sha256(&r.model), model_sha);
    // A reference read as another format is not overwritten with CSV.
    let mat = r.dir.path().join("ref.mat");
    let out = check(&[&r.model, &"--reference", &mat, &"--update-references"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(
        text(&out).contains("writes CSV references"),
        "{}",
        text(&out)
    );
    assert!(!mat.exists());
}

#[test]
fn a_case_folder_without_a_reference_gets_reference_csv_and_is_still_one_case() {
    let dir = tempfile::tempdir().unwrap();
    let case = dir.path().join("cases").join("dahlquist");
    std::fs::create_dir_all(&case).unwrap();
    let model = case.join("Dahlquist.fmu");
    std::fs::copy(fmu("Dahlquist", 3), &model).unwrap();
    let cases = dir.path().join("cases");
    // Compared with the FMU's own FMI-LS-REF reference, then written into the folder.
    let out = check(&[&cases, &"--update-references"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let reference = case.join("reference.csv");
    assert!(reference.is_file(), "{}", show(&out));
    let provenance = json(&case.join("reference.csv.provenance.json"));
    assert_eq!(provenance["case"], "dahlquist");
    assert_eq!(provenance["model"]["sha256"], sha256(&model).as_str());
    // The provenance file is not taken for a second model (a system file) of the case.
    let report = dir.path().join("report.json");
    let out = check(&[&cases, &"--json-file", &report]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report = json(&report);
    assert_eq!(report["summary"]["cases"], 1, "{report:#}");
    assert_eq!(
        report["cases"][0]["reference"],
        reference.display().to_string()
    );
}

#[test]
fn an_updated_reference_keeps_its_columns_and_a_reference_two_cases_share_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = fmu("Oscillator", 2);
    // A reference of x alone (values from the closed form); the Oscillator has more outputs.
    let mut vendor = String::from("\"time\",\"x\"\n");
    for k in 0..=10 {
        let t = k as f64 / 10.0;
        let x = common::oscillator_position(1.0, 1.0, 0.1, 0.0, 1.0, 0.0, t);
        vendor.push_str(&format!("{t},{x}\n"));
    }
    let chosen = write(&dir.path().join("x-only.csv"), &vendor);
    let out = check(&[
        &model,
        &"--reference",
        &chosen,
        &"--stop-time",
        &"1",
        &"--update-references",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let written = std::fs::read_to_string(&chosen).unwrap();
    assert_eq!(written.lines().next(), Some("\"time\",\"x\""), "{written}");
    assert_ne!(written, vendor, "the values are the run's");
    // A new reference holds every output.
    let fresh = dir.path().join("all.csv");
    let out = check(&[
        &model,
        &"--reference",
        &fresh,
        &"--stop-time",
        &"1",
        &"--update-references",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let header = std::fs::read_to_string(&fresh).unwrap();
    let header = header.lines().next().unwrap_or_default();
    assert!(
        header.contains("\"x\"") && header.contains("\"v\""),
        "{header}"
    );

    // Two case folders naming one reference: refused before anything runs or is written.
    let shared = write(&dir.path().join("shared.csv"), &dahlquist_csv(1.1));
    let cases = dir.path().join("cases");
    for name in ["a", "b"] {
        let folder = cases.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        let settings = serde_json::json!({
            "model": fmu("Dahlquist", 2).display().to_string(),
            "reference": "../../shared.csv",
        });
        write(&folder.join("check.json"), &settings.to_string());
    }
    let out = check(&[&cases, &"--update-references"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let printed = text(&out);
    assert!(
        printed.contains("\"a\" and \"b\" share the reference"),
        "{printed}"
    );
    assert_eq!(
        std::fs::read_to_string(&shared).unwrap(),
        dahlquist_csv(1.1)
    );
    assert!(!dir.path().join("shared.csv.provenance.json").exists());
}
