//! `cosimo check`: simulations compared with reference results through the CLI, on the
//! project's FMUs, with case folders built in temporary directories.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cosimo::results::compare::{
    compare, CompareOptions, SignalKind, SignalTable, ToleranceSettings,
};

fn fmu(model: &str, version: u8) -> PathBuf {
    fmu_pack::fmu_path(model, version)
}

fn cosimo<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .env_remove("COSIMO_LOG")
        .output()
        .expect("the cosimo binary runs")
}

fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A case folder `dir/name` with a check.json naming `model` and the given files.
fn case(dir: &Path, name: &str, model: &Path, settings: &str, files: &[(&str, String)]) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let model = serde_json::to_string(&model.display().to_string()).unwrap();
    std::fs::write(
        folder.join("check.json"),
        format!("{{ \"model\": {model}{settings} }}"),
    )
    .unwrap();
    for (file, text) in files {
        std::fs::write(folder.join(file), text).unwrap();
    }
    folder
}

/// The Dahlquist solution exp(-t) at `times`, scaled by `gain`.
fn dahlquist_csv(times: impl Iterator<Item = f64>, gain: f64) -> String {
    let mut text = String::from("\"time\",\"x\"\n");
    for t in times {
        text.push_str(&format!("{t},{}\n", gain * (-t).exp()));
    }
    text
}

fn uniform(n: usize, stop: f64) -> impl Iterator<Item = f64> {
    (0..=n).map(move |k| stop * k as f64 / n as f64)
}

fn json_report(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(out)))
}

#[test]
fn a_matching_result_passes_with_exit_code_0() {
    let dir = tempfile::tempdir().unwrap();
    let folder = case(
        dir.path(),
        "dahlquist",
        &fmu("Dahlquist", 3),
        "",
        &[("reference.csv", dahlquist_csv(uniform(100, 10.0), 1.0))],
    );
    let out = cosimo([Path::new("check").as_os_str(), folder.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PASS  dahlquist (1 signal"), "{text}");
    assert!(
        text.contains("1 case: 1 passed, 0 failed, 0 errors"),
        "{text}"
    );
}

#[test]
fn an_amplitude_error_fails_with_exit_code_3() {
    let dir = tempfile::tempdir().unwrap();
    let folder = case(
        dir.path(),
        "dahlquist",
        &fmu("Dahlquist", 2),
        ", \"tolerance\": { \"rel\": 0.01 }",
        &[("reference.csv", dahlquist_csv(uniform(100, 10.0), 1.05))],
    );
    let out = cosimo([
        Path::new("check").as_os_str(),
        folder.as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let report = json_report(&out);
    let case = &report["cases"][0];
    assert_eq!(case["status"], "failed");
    assert_eq!(case["worstSignal"], "x");
    assert_eq!(case["firstViolation"], 0.0);
    let deviation = case["maxDeviation"].as_f64().unwrap();
    assert!((deviation - 0.05).abs() < 1e-9, "{deviation}");
    // The summary went to stderr, the JSON to stdout.
    assert!(String::from_utf8_lossy(&out.stderr).contains("FAIL  dahlquist"));
}

/// Feedthrough passes a step of its input (at t = 0.5 s) to its output; the reference has the
/// step at t = 0.56 s on another grid.
fn step_case(dir: &Path, time_tolerance: f64, height: f64) -> PathBuf {
    let input = "time,Float64_continuous_input\n0,0\n0.5,0\n0.5,1\n1,1\n".to_string();
    let reference = format!(
        "time,Float64_continuous_output\n0,0\n0.25,0\n0.56,0\n0.56,{height}\n0.8,{height}\n1,{height}\n"
    );
    case(
        dir,
        &format!("step-{time_tolerance}-{height}"),
        &fmu("Feedthrough", 3),
        &format!(
            ", \"experiment\": {{ \"startTime\": 0, \"stopTime\": 1, \"stepSize\": 0.01 }}, \
             \"tolerance\": {{ \"abs\": 0.01, \"time\": {time_tolerance} }}, \
             \"compareAt\": \"all\""
        ),
        &[("input.csv", input), ("reference.csv", reference)],
    )
}

#[test]
fn a_shifted_step_passes_inside_the_tube_and_fails_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let inside = step_case(dir.path(), 0.1, 1.0);
    let out = cosimo([Path::new("check").as_os_str(), inside.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    let outside = step_case(dir.path(), 0.01, 1.0);
    let out = cosimo([
        Path::new("check").as_os_str(),
        outside.as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let signal = &json_report(&out)["cases"][0]["signals"][0];
    assert_eq!(signal["name"], "Float64_continuous_output");
    let first = signal["firstViolation"].as_f64().unwrap();
    assert!((0.49..0.56).contains(&first), "{first}");

    // The same generous time tolerance does not excuse a wrong height.
    let wrong = step_case(dir.path(), 0.1, 1.2);
    let out = cosimo([Path::new("check").as_os_str(), wrong.as_os_str()]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
}

fn stair_csv(switch_delay: f64, wrong_between: Option<(f64, f64)>) -> String {
    let mut text = String::from("time,counter\n0,1\n");
    for k in 1..=10 {
        let t = k as f64 + switch_delay;
        let mut value = k + 1;
        if wrong_between.is_some_and(|(a, b)| t >= a && t < b) {
            value += 1;
        }
        text.push_str(&format!("{t},{k}\n{t},{value}\n"));
    }
    text
}

#[test]
fn discrete_signals_match_exactly_with_a_time_tolerance_at_switches() {
    let dir = tempfile::tempdir().unwrap();
    let stair = fmu("Stair", 2);
    // The reference switches 0.1 s late; a 0.15 s time tolerance covers it, 0.05 s does not.
    let late = stair_csv(0.1, None);
    // The reference is a polyline of the solution (each switch two rows): compared at every
    // result row too, so that a switch between the reference's rows is seen.
    let settings = |time: f64| {
        format!(", \"signals\": {{ \"counter\": {{ \"time\": {time} }} }}, \"compareAt\": \"all\"")
    };
    let pass = case(
        dir.path(),
        "late-ok",
        &stair,
        &settings(0.15),
        &[("reference.csv", late.clone())],
    );
    let out = cosimo([Path::new("check").as_os_str(), pass.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let fail = case(
        dir.path(),
        "late",
        &stair,
        &settings(0.05),
        &[("reference.csv", late)],
    );
    let out = cosimo([
        Path::new("check").as_os_str(),
        fail.as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let signal = &json_report(&out)["cases"][0]["signals"][0];
    assert_eq!(signal["kind"], "discrete");
    assert_eq!(signal["firstViolation"], 1.0);

    // A wrong value between 3 s and 4 s fails however generous the time tolerance.
    let wrong = stair_csv(0.0, Some((3.0, 4.0)));
    let fail = case(
        dir.path(),
        "wrong",
        &stair,
        &settings(0.3),
        &[("reference.csv", wrong)],
    );
    let out = cosimo([
        Path::new("check").as_os_str(),
        fail.as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let signal = &json_report(&out)["cases"][0]["signals"][0];
    let first = signal["firstViolation"].as_f64().unwrap();
    assert!((first - 3.0).abs() < 1e-9, "{first}");
    assert_eq!(signal["maxDeviation"], 1.0);
}

#[test]
fn a_reference_on_another_time_grid_is_interpolated() {
    let dir = tempfile::tempdir().unwrap();
    // 37 rows, denser at the start, none on the result's 0.1 s grid except the ends.
    let times = (0..=36).map(|k| 10.0 * (k as f64 / 36.0).powf(1.5));
    let folder = case(
        dir.path(),
        "grid",
        &fmu("Dahlquist", 3),
        ", \"tolerance\": { \"rel\": 0.02, \"time\": 0 }",
        &[("reference.csv", dahlquist_csv(times, 1.0))],
    );
    let out = cosimo([
        Path::new("check").as_os_str(),
        folder.as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let case = &json_report(&out)["cases"][0];
    // At the reference's 37 rows: the run took a communication point at each of the 35 that
    // are not on its 0.1 s output grid, so none was interpolated.
    assert_eq!(case["signals"][0]["points"].as_u64(), Some(37));
    assert_eq!(case["compared"]["at"], "reference");
    assert_eq!(case["compared"]["times"], 37);
    assert_eq!(case["compared"]["interpolated"], 0);
    // The earlier default: every result row and every reference row.
    let out = cosimo([
        Path::new("check").as_os_str(),
        folder.as_os_str(),
        "--json".as_ref(),
        "--compare-at".as_ref(),
        "all".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let case = &json_report(&out)["cases"][0];
    assert_eq!(case["signals"][0]["points"].as_u64(), Some(101 + 35));
    assert_eq!(case["compared"]["at"], "all");
}

#[test]
fn missing_reference_columns_fail_and_extra_result_columns_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let reference = "time,x,y\n0,1,0\n10,4.5399929762484854e-05,0\n";
    let folder = case(
        dir.path(),
        "missing",
        &fmu("Oscillator", 3),
        "",
        &[("reference.csv", reference.to_string())],
    );
    let out = cosimo([
        Path::new("check").as_os_str(),
        folder.as_os_str(),
        "--json".as_ref(),
        "--stop-time".as_ref(),
        "10".as_ref(),
        "--time-tol".as_ref(),
        "100".as_ref(),
        "--atol".as_ref(),
        "10".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let case = &json_report(&out)["cases"][0];
    assert_eq!(case["missing"], serde_json::json!(["y"]));
    let extra: Vec<&str> = case["extra"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(extra.contains(&"v") && extra.contains(&"a"), "{extra:?}");
    assert!(!extra.contains(&"x"));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing: the result has no column \"y\"")
    );
}

#[test]
fn an_fmu_is_checked_against_its_own_fmi_ls_ref_reference() {
    let out = cosimo([
        Path::new("check").as_os_str(),
        fmu("Dahlquist", 2).as_os_str(),
        fmu("Stair", 3).as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report = json_report(&out);
    for case in report["cases"].as_array().unwrap() {
        assert!(
            case["reference"].as_str().unwrap().contains("FMI-LS-REF"),
            "{case}"
        );
        assert_eq!(case["status"], "passed");
    }
    // Without any reference the check cannot run: bad input.
    let out = cosimo([
        Path::new("check").as_os_str(),
        fmu("Oscillator", 3).as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FMI-LS-REF"));
}

#[test]
fn the_packed_manifest_follows_fmi_ls_ref() {
    let file = std::fs::File::open(fmu("Dahlquist", 3)).unwrap();
    let mut zip = zip::ZipArchive::new(file).unwrap();
    let mut manifest = String::new();
    std::io::Read::read_to_string(
        &mut zip
            .by_name("extra/org.fmi-standard.fmi-ls-ref/fmi-ls-manifest.xml")
            .unwrap(),
        &mut manifest,
    )
    .unwrap();
    assert!(manifest.contains("fmi-ls:fmi-ls-name=\"org.fmi-standard.fmi-ls-ref\""));
    assert!(manifest.contains("fmi-ls:fmi-ls-version=\"1.0.0-alpha.1\""));
    assert!(manifest.contains("source=\"Dahlquist_ref.csv\" role=\"result\""));
    assert!(zip
        .by_name("extra/org.fmi-standard.fmi-ls-ref/Dahlquist_ref.csv")
        .is_ok());
}

#[test]
fn a_folder_of_cases_reports_mixed_outcomes_as_junit_json_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    case(
        &cases,
        "good",
        &fmu("Dahlquist", 3),
        "",
        &[("reference.csv", dahlquist_csv(uniform(50, 10.0), 1.0))],
    );
    case(
        &cases,
        "bad",
        &fmu("Dahlquist", 2),
        "",
        &[("Dahlquist_ref.csv", dahlquist_csv(uniform(50, 10.0), 1.1))],
    );
    // A case without a check.json: one FMU that carries its own reference.
    let own = cases.join("group").join("stair");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::copy(fmu("Stair", 2), own.join("Stair.fmu")).unwrap();

    let junit = dir.path().join("report.xml");
    let json = dir.path().join("report.json");
    let plots = dir.path().join("plots");
    let out = cosimo([
        Path::new("check").as_os_str(),
        cases.as_os_str(),
        "--junit".as_ref(),
        junit.as_os_str(),
        "--json".as_ref(),
        json.as_os_str(),
        "--plot".as_ref(),
        plots.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("PASS  good"), "{text}");
    assert!(text.contains("FAIL  bad"), "{text}");
    assert!(text.contains("PASS  group/stair"), "{text}");
    assert!(
        text.contains("3 cases: 2 passed, 1 failed, 0 errors"),
        "{text}"
    );

    // JSON against its schema.
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/check-report.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&report)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}\n{report:#}");
    assert_eq!(report["summary"]["failed"], 1);

    // JUnit XML parses back: one suite per case, a test per run and per signal.
    let xml = std::fs::read_to_string(&junit).unwrap();
    let mut reader = quick_xml::Reader::from_str(&xml);
    let (mut suites, mut testcases, mut failures) = (0, 0, 0);
    let mut root = None;
    loop {
        match reader.read_event().unwrap_or_else(|e| panic!("{e}\n{xml}")) {
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if root.is_none() {
                    root = Some(name.clone());
                    let failures_attribute = e
                        .try_get_attribute("failures")
                        .unwrap()
                        .unwrap()
                        .unescape_value()
                        .unwrap()
                        .into_owned();
                    assert_eq!(failures_attribute, "1");
                }
                match name.as_str() {
                    "testsuite" => suites += 1,
                    "testcase" => testcases += 1,
                    "failure" => failures += 1,
                    _ => {}
                }
            }
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(root.as_deref(), Some("testsuites"));
    assert_eq!((suites, testcases, failures), (3, 6, 1), "{xml}");

    // A PNG for the failing signal, none for passing ones.
    let png = plots.join("bad").join("x.png");
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 10_000, "{} bytes", bytes.len());
    assert!(!plots.join("good").exists());
    assert_eq!(
        report["cases"][0]["signals"][0]["plot"].as_str(),
        Some(png.display().to_string().as_str())
    );
}

#[test]
fn strings_and_array_elements_are_compared_by_column() {
    let parse = |text: &str| SignalTable::parse(text, Path::new("t.csv")).unwrap();
    // At the switching instant itself either value is accepted; at 1.5 s "on" is wrong.
    let reference = parse("time,s,a\n0,on,1 2\n1,off,1 2\n1.5,off,1 2\n2,off,1 2\n");
    let result = parse("\"time\",\"s\",\"a\"\n0,on,1 2\n1,on,1 2.5\n1.5,on,1 2.5\n2,off,1 2.5\n");
    let options = CompareOptions {
        tolerance: ToleranceSettings {
            time: Some(0.0),
            ..ToleranceSettings::default()
        },
        ..CompareOptions::default()
    };
    let c = compare(&reference, &result, &options, &|_| None);
    let by_name = |n: &str| c.signals.iter().find(|s| s.name == n).unwrap();
    assert_eq!(by_name("s").kind, SignalKind::Discrete);
    assert!(!by_name("s").passed);
    assert_eq!(by_name("s").first_violation, Some(1.5));
    assert!(by_name("a[1]").passed);
    assert!(!by_name("a[2]").passed);
    assert!(!c.passed());
    // With a time tolerance of one second the late switch of s is accepted.
    let options = CompareOptions {
        tolerance: ToleranceSettings {
            time: Some(1.0),
            ..ToleranceSettings::default()
        },
        ..CompareOptions::default()
    };
    let c = compare(&reference, &result, &options, &|_| None);
    assert!(c.signals.iter().find(|s| s.name == "s").unwrap().passed);
}
