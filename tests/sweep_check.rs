//! `cosimo sweep` with a `check`: each run's result compared with a reference the way `cosimo
//! check` compares, the verdict in the summary table beside the run's status. A regression
//! study around the nominal two-mass system passes its nominal run and fails far-off values
//! naming the variable; per-run references come from a file name pattern (a missing one is
//! that run's error, naming the file); the table is the same for 1 and 2 workers and for
//! merged shards; the exit code tells CI that a check did not pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{cosimo, cosimo_ok, fmu, read_results, show, temp_dir};

fn system() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus/two-mass-force-displacement.json")
        .display()
        .to_string()
}

/// The experiment of every run here (and of the references made with `cosimo run`).
const EXPERIMENT: [&str; 6] = [
    "--stop-time",
    "0.2",
    "--step-size",
    "1e-3",
    "--output-interval",
    "1e-2",
];

/// Write a study on the two-mass system (`body`: the fields after "system" and "experiment").
fn study(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!(
        r#"{{"system": {:?}, "experiment": {{"stopTime": 0.2, "stepSize": 1e-3, "outputInterval": 1e-2}}, {body}}}"#,
        system()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A reference: `cosimo run` of the two-mass system with `start_values` (every output).
fn reference(file: &Path, start_values: &[&str]) {
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mut args: Vec<String> = vec!["run".into(), system(), "--quiet".into()];
    args.extend(EXPERIMENT.iter().map(|s| s.to_string()));
    for value in start_values {
        args.extend(["--start-value".to_string(), value.to_string()]);
    }
    args.extend(["-o".to_string(), file.display().to_string()]);
    cosimo_ok(args);
}

fn sweep(study: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sweep".to_string(),
        study.display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    cosimo(args)
}

/// A summary table: its header, and its rows as maps from column to cell.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn read(dir: &Path) -> Table {
        let mut reader = csv::Reader::from_path(dir.join("summary.csv")).unwrap();
        let header = reader.headers().unwrap().iter().map(String::from).collect();
        let rows = reader
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect();
        Table { header, rows }
    }

    fn cell(&self, row: usize, column: &str) -> &str {
        let c = self
            .header
            .iter()
            .position(|h| h == column)
            .unwrap_or_else(|| panic!("no column {column} in {:?}", self.header));
        &self.rows[row][c]
    }
}

const CHECK_COLUMNS: [&str; 7] = [
    "status",
    "error",
    "check",
    "check_signal",
    "check_deviation",
    "check_time",
    "check_message",
];

#[test]
fn a_regression_study_passes_the_nominal_run_and_fails_far_off_values() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    reference(&dir.path().join("nominal.csv"), &[]);
    let file = study(
        dir.path(),
        "regression.json",
        r#""grid": [{"name": "mass1.m", "values": [1, 3, 1]}],
           "keep": {"results": true, "variables": ["mass2.x"],
                    "summaries": [{"variable": "mass2.x", "statistics": ["max"]}]},
           "check": {"reference": "nominal.csv", "tolerance": {"rel": 1e-3, "abs": 1e-6},
                     "signals": {"mass2.Fc": {"ignore": true}}}"#,
    );
    let out = dir.path().join("out");
    let output = sweep(&file, &out, &["--workers", "2"]);
    assert_eq!(output.status.code(), Some(3), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("checks: 2 passed, 1 failed, 0 errors"),
        "{stderr}"
    );
    assert!(stderr.contains("FAIL run 1 (mass1.m=3): mass"), "{stderr}");

    let table = Table::read(&out);
    assert_eq!(
        table.header,
        ["index", "mass1.m", "max(mass2.x)"]
            .into_iter()
            .chain(CHECK_COLUMNS)
            .collect::<Vec<_>>()
    );
    for nominal in [0, 2] {
        assert_eq!(table.cell(nominal, "status"), "ok");
        assert_eq!(table.cell(nominal, "check"), "pass");
        // The same run as the reference's cosimo run, bit for bit.
        assert_eq!(table.cell(nominal, "check_deviation"), "0");
        assert!(table
            .cell(nominal, "check_message")
            .ends_with("signals within tolerance"));
    }
    // The far-off run completed (status) and is out of tolerance (check), naming the variable.
    assert_eq!(table.cell(1, "status"), "ok");
    assert_eq!(table.cell(1, "error"), "");
    assert_eq!(table.cell(1, "check"), "fail");
    let signal = table.cell(1, "check_signal");
    assert!(
        signal.starts_with("mass1.") || signal.starts_with("mass2."),
        "{signal}"
    );
    assert_ne!(signal, "mass2.Fc", "ignored signals are not compared");
    let deviation: f64 = table.cell(1, "check_deviation").parse().unwrap();
    assert!(deviation > 1e-3, "{deviation}");
    let time: f64 = table.cell(1, "check_time").parse().unwrap();
    assert!((0.0..=0.2).contains(&time), "{time}");
    let message = table.cell(1, "check_message");
    assert!(
        message.starts_with(&format!("{signal}: "))
            && message.contains("outside the tolerance (rel 0.001, abs 1.000e-6, range 0.001"),
        "{message}"
    );
    // The run recorded the reference's variables for the check, but its result file holds
    // what the study keeps.
    let kept = read_results(&out.join("runs/run-000001.csv"));
    assert_eq!(kept.columns(), ["mass2.x"]);
    // The Parquet table has the same columns.
    let parquet = std::fs::File::open(out.join("summary.parquet")).unwrap();
    let reader = parquet::file::reader::SerializedFileReader::new(parquet).unwrap();
    use parquet::file::reader::FileReader;
    let schema = reader.metadata().file_metadata().schema_descr();
    let names: Vec<&str> = schema.columns().iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        table.header.iter().map(String::as_str).collect::<Vec<_>>()
    );
}

#[test]
fn per_run_references_come_from_a_pattern_and_a_missing_one_is_an_error_row() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    // A baseline sweep keeps every run's result: the references of a later regression sweep.
    let grid = r#""grid": [{"name": "mass1.m", "values": [1, 2, 3]}]"#;
    let baseline = study(
        dir.path(),
        "baseline.json",
        &format!(r#"{grid}, "keep": {{"results": true}}"#),
    );
    let base_out = dir.path().join("baseline");
    let output = sweep(&baseline, &base_out, &["--workers", "2"]);
    assert!(output.status.success(), "{}", show(&output));
    let again = study(
        dir.path(),
        "again.json",
        &format!(r#"{grid}, "check": {{"reference": "baseline/runs/run-{{index:06}}.csv"}}"#),
    );
    let out = dir.path().join("again");
    let output = sweep(&again, &out, &[]);
    assert!(output.status.success(), "{}", show(&output));
    let table = Table::read(&out);
    for row in 0..3 {
        assert_eq!(table.cell(row, "check"), "pass", "{:?}", table.rows[row]);
        assert_eq!(table.cell(row, "check_deviation"), "0");
    }

    // Hand-made references for runs 0 and 1 (run 1's from a cosimo run of its value), none
    // for run 2.
    reference(&dir.path().join("refs/run-0.csv"), &["mass1.m=1"]);
    reference(&dir.path().join("refs/run-1.csv"), &["mass1.m=2"]);
    let file = study(
        dir.path(),
        "per-run.json",
        &format!(r#"{grid}, "check": {{"reference": "refs/run-{{index}}.csv"}}"#),
    );
    // A dry run writes nothing: it takes no output folder.
    let dry = cosimo([
        "sweep".to_string(),
        file.display().to_string(),
        "--dry-run".to_string(),
    ]);
    assert!(dry.status.success(), "{}", show(&dry));
    let refs = dir.path().join("refs");
    assert_eq!(
        String::from_utf8_lossy(&dry.stdout),
        format!(
            "index,mass1.m,check_reference\n0,1,{0}/run-0.csv\n1,2,{0}/run-1.csv\n2,3,{0}/run-2.csv\n",
            refs.display()
        )
    );
    assert!(
        String::from_utf8_lossy(&dry.stderr)
            .contains("1 of these runs have no reference file yet (runs 2)"),
        "{}",
        show(&dry)
    );
    let out = dir.path().join("out");
    let output = sweep(&file, &out, &["--workers", "2"]);
    assert_eq!(output.status.code(), Some(3), "{}", show(&output));
    let table = Table::read(&out);
    assert_eq!(table.cell(0, "check"), "pass");
    assert_eq!(table.cell(1, "check"), "pass");
    // Run 2 ran (its status is ok) but had nothing to be compared with.
    assert_eq!(table.cell(2, "status"), "ok");
    assert_eq!(table.cell(2, "check"), "error");
    assert_eq!(table.cell(2, "check_signal"), "");
    let message = table.cell(2, "check_message");
    assert!(
        message.contains(&format!("{}/run-2.csv does not exist", refs.display())),
        "{message}"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("ERROR run 2 (mass1.m=3): the reference")
    );
}

#[test]
fn the_checked_table_is_the_same_for_any_workers_and_shards() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    reference(&dir.path().join("nominal.csv"), &[]);
    let file = study(
        dir.path(),
        "study.json",
        r#""grid": [{"name": "mass1.m", "values": [1, 1.0001, 1.01, 0.5, 2, 1]}],
           "samples": {"count": 3, "seed": 5, "parameters": [{"name": "mass2.dc", "normal": {"mean": 10, "std": 0.01}}]},
           "keep": {"summaries": [{"variable": "mass1.x", "statistics": ["final"]}]},
           "check": {"reference": "nominal.csv", "tolerance": {"range": 0.01}}"#,
    );
    let one = dir.path().join("one");
    let output = sweep(&file, &one, &["--workers", "1"]);
    assert_eq!(output.status.code(), Some(3), "{}", show(&output));
    let table = Table::read(&one);
    assert_eq!(table.rows.len(), 18);
    let verdicts: Vec<&str> = (0..18).map(|r| table.cell(r, "check")).collect();
    assert!(
        verdicts.contains(&"pass") && verdicts.contains(&"fail"),
        "{verdicts:?}"
    );

    let bytes = |dir: &Path, file: &str| std::fs::read(dir.join(file)).unwrap();
    let two = dir.path().join("two");
    let output = sweep(&file, &two, &["--workers", "2"]);
    assert_eq!(output.status.code(), Some(3), "{}", show(&output));
    let mut shards = Vec::new();
    for i in 0..2 {
        let shard = dir.path().join(format!("shard-{i}"));
        let output = sweep(
            &file,
            &shard,
            &["--shard", &format!("{i}/2"), "--workers", "1"],
        );
        // Each shard has failing runs: its task fails, and its table is written.
        assert_eq!(output.status.code(), Some(3), "{}", show(&output));
        shards.push(shard.display().to_string());
    }
    let merged = dir.path().join("merged");
    let mut args = vec!["sweep".to_string(), "--merge".into()];
    args.extend(shards.iter().cloned());
    args.extend(["-o".into(), merged.display().to_string()]);
    let output = cosimo(args);
    assert_eq!(
        output.status.code(),
        Some(3),
        "the merged table has failed checks: {}",
        show(&output)
    );
    for other in [&two, &merged] {
        for file in ["summary.csv", "summary.parquet", "sweep.json"] {
            assert!(
                bytes(&one, file) == bytes(other, file),
                "{file} differs in {}",
                other.display()
            );
        }
    }
    let meta = std::fs::read_to_string(one.join("sweep.json")).unwrap();
    assert!(meta.contains("\"check\": true"), "{meta}");
}

#[test]
fn a_failed_run_is_a_check_error_and_a_terminated_one_is_compared() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let faulty = fmu("Faulty", 2).display().to_string();
    let nominal = dir.path().join("nominal.csv");
    cosimo_ok([
        "run",
        &faulty,
        "--quiet",
        "-o",
        &nominal.display().to_string(),
    ]);
    let path = dir.path().join("faulty.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"system": {faulty:?}, "grid": [{{"name": "failure", "values": [0, 2, 4]}}],
                "check": {{"reference": "nominal.csv"}}}}"#
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = sweep(&path, &out, &["--workers", "2"]);
    assert_eq!(output.status.code(), Some(3), "{}", show(&output));
    let table = Table::read(&out);
    assert_eq!(
        (table.cell(0, "status"), table.cell(0, "check")),
        ("ok", "pass")
    );
    assert_eq!(
        (table.cell(1, "status"), table.cell(1, "check")),
        ("failed", "error")
    );
    assert!(table.cell(1, "error").contains("simulated failure"));
    assert_eq!(
        table.cell(1, "check_message"),
        "not compared: the run failed (see error)"
    );
    // Terminated at 0.5 s: the result ends before the reference does.
    assert_eq!(
        (table.cell(2, "status"), table.cell(2, "check")),
        ("terminated", "fail")
    );
    assert_eq!(table.cell(2, "check_signal"), "x");
    assert!(
        table
            .cell(2, "check_message")
            .contains("the result covers t = 0 to 0.5"),
        "{:?}",
        table.rows[2]
    );
}

#[test]
fn a_study_whose_one_reference_is_missing_is_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let file = study(
        dir.path(),
        "missing.json",
        r#""grid": [{"name": "mass1.m", "values": [1]}], "check": {"reference": "nowhere.csv"}"#,
    );
    let out = dir.path().join("out");
    let output = sweep(&file, &out, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("missing.json: check.reference: the reference"),
        "{stderr}"
    );
    assert!(stderr.contains("nowhere.csv does not exist"), "{stderr}");
    assert!(!out.exists(), "a refused study writes nothing");
}

#[test]
fn studies_with_a_check_follow_the_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/study.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let with = |check: &str| -> serde_json::Value {
        serde_json::from_str(&format!(
            r#"{{"system": "s.json", "grid": [{{"name": "a.x", "values": [1]}}], "check": {check}}}"#
        ))
        .unwrap()
    };
    for good in [
        r#"{"reference": "nominal.csv"}"#,
        r#"{"reference": "refs/run-{index}.csv", "tolerance": {"rel": 1e-3, "abs": 1e-6, "range": 1e-3, "time": 1e-3}}"#,
        r#"{"reference": "runs/run-{index:06}.csv", "signals": {"a.y": {"abs": 1e-4, "discrete": false}, "a.z": {"ignore": true}}}"#,
    ] {
        let value = with(good);
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{good}: {errors:?}");
        cosimo::settings::study::Study::parse(&value.to_string(), Path::new("s/study.json"))
            .unwrap_or_else(|e| panic!("{good}: {e}"));
    }
    for bad in [
        r#"{"tolerance": {"rel": 1e-3}}"#,
        r#"{"reference": ""}"#,
        r#"{"reference": "r.csv", "tolerance": {"rel": -1}}"#,
        r#"{"reference": "r.csv", "tolerance": {"relTol": 1}}"#,
        r#"{"reference": "r.csv", "signals": {"a.y": {"abs": "1"}}}"#,
        r#"{"reference": "r.csv", "stopTime": 1}"#,
    ] {
        let value = with(bad);
        assert!(!validator.is_valid(&value), "the schema takes {bad}");
        assert!(
            cosimo::settings::study::Study::parse(&value.to_string(), Path::new("s/study.json"))
                .is_err(),
            "the study reader takes {bad}"
        );
    }
}
