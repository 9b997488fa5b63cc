//! `cosimo sweep`: studies on the two-mass system give the tables that runs made one by one
//! with `cosimo run` give; the table does not depend on the number of workers or on shards;
//! failing runs are rows; invalid studies are refused with messages; `--dry-run` prints the
//! runs; Ctrl-C keeps the finished rows.

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

/// The study's summaries, in the order the table has them.
const SUMMARIES: &str = r#""keep": {"summaries": [
    {"variable": "mass2.x", "statistics": ["max", "min", "final", "mean"]},
    {"variable": "mass1.x", "crossing": {"level": 0.0, "direction": "falling"}}]}"#;

/// Write `body` (the fields after "system") as a study on the two-mass system into `dir`.
fn study(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!(
        r#"{{"system": {:?}, "experiment": {{"stopTime": 0.2, "stepSize": 1e-3, "outputInterval": 1e-2}}, {body}}}"#,
        system()
    );
    std::fs::write(&path, text).unwrap();
    path
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

/// The rows of a summary table as cells.
fn table(dir: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(dir.join("summary.csv")).unwrap();
    let header = reader.headers().unwrap().iter().map(String::from).collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// The summaries of one result file, as the sweep defines them.
fn summaries_of(csv: &Path) -> Vec<Option<f64>> {
    let results = read_results(csv);
    let t = results.time();
    let column = |name: &str| {
        let i = results.column(name).unwrap_or_else(|| panic!("{name}"));
        results.values(i).to_vec()
    };
    let (x2, x1) = (column("mass2.x"), column("mass1.x"));
    let mut integral = 0.0;
    for i in 1..t.len() {
        integral += 0.5 * (x2[i - 1] + x2[i]) * (t[i] - t[i - 1]);
    }
    let crossing = (1..t.len())
        .find(|&i| x1[i - 1] > 0.0 && x1[i] <= 0.0)
        .map(|i| t[i - 1] + (0.0 - x1[i - 1]) / (x1[i] - x1[i - 1]) * (t[i] - t[i - 1]));
    vec![
        Some(x2.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        Some(x2.iter().copied().fold(f64::INFINITY, f64::min)),
        Some(*x2.last().unwrap()),
        Some(integral / (t[t.len() - 1] - t[0])),
        crossing,
    ]
}

/// Every row of the table in `dir` equals a run made alone with `cosimo run` and the same
/// start values and experiment.
fn equals_runs_one_by_one(dir: &Path, parameters: usize) {
    let (header, rows) = table(dir);
    let work = temp_dir();
    let check = |row: &Vec<String>| {
        let out = work.path().join(format!("run-{}.csv", row[0]));
        let mut args = vec![
            "run".to_string(),
            system(),
            "--quiet".into(),
            "--stop-time".into(),
            "0.2".into(),
            "--step-size".into(),
            "1e-3".into(),
            "--output-interval".into(),
            "1e-2".into(),
            "-o".into(),
            out.display().to_string(),
        ];
        for p in 0..parameters {
            args.push("--start-value".into());
            args.push(format!("{}={}", header[1 + p], row[1 + p]));
        }
        cosimo_ok(args);
        let expected = summaries_of(&out);
        let got: Vec<Option<f64>> = row[1 + parameters..1 + parameters + expected.len()]
            .iter()
            .map(|c| (!c.is_empty()).then(|| c.parse().unwrap()))
            .collect();
        assert_eq!(got, expected, "run {} differs from cosimo run", row[0]);
        assert_eq!(row[row.len() - 2], "ok");
    };
    // Two at a time: the runs are short and the processes start slowly.
    let (even, odd): (Vec<_>, Vec<_>) = rows
        .iter()
        .partition(|r| r[0].parse::<usize>().unwrap() % 2 == 0);
    std::thread::scope(|scope| {
        let check = &check;
        scope.spawn(move || even.iter().for_each(|r| check(r)));
        odd.iter().for_each(|r| check(r));
    });
}

#[test]
fn a_grid_gives_the_table_of_runs_made_one_by_one() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let file = study(
        dir.path(),
        "grid.json",
        &format!(
            r#""grid": [{{"name": "mass1.m", "values": [1, 2]}},
                       {{"name": "mass2.c", "range": {{"start": 500, "stop": 1500, "count": 3}}}}], {SUMMARIES}"#
        ),
    );
    let out = dir.path().join("out");
    let output = sweep(&file, &out, &["--workers", "2"]);
    assert!(output.status.success(), "{}", show(&output));
    let (header, rows) = table(&out);
    assert_eq!(
        header,
        [
            "index",
            "mass1.m",
            "mass2.c",
            "max(mass2.x)",
            "min(mass2.x)",
            "final(mass2.x)",
            "mean(mass2.x)",
            "crossing(mass1.x, 0, falling)",
            "status",
            "error"
        ]
    );
    let grid: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[1].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(
        grid,
        [
            ("1", "500"),
            ("1", "1000"),
            ("1", "1500"),
            ("2", "500"),
            ("2", "1000"),
            ("2", "1500")
        ]
    );
    equals_runs_one_by_one(&out, 2);
    assert!(out.join("summary.parquet").is_file());
}

#[test]
fn samples_give_one_table_for_any_workers_and_shards() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let file = study(
        dir.path(),
        "samples.json",
        &format!(
            r#""samples": {{"count": 100, "seed": 11, "parameters": [
                {{"name": "mass1.d", "uniform": {{"min": 5, "max": 15}}}},
                {{"name": "mass2.m", "normal": {{"mean": 1, "std": 0.1}}}}]}}, {SUMMARIES}"#
        ),
    );
    let one = dir.path().join("one");
    let output = sweep(&file, &one, &["--workers", "1"]);
    assert!(output.status.success(), "{}", show(&output));
    let (_, rows) = table(&one);
    assert_eq!(rows.len(), 100);
    let indices: Vec<String> = rows.iter().map(|r| r[0].clone()).collect();
    assert_eq!(indices, (0..100).map(|i| i.to_string()).collect::<Vec<_>>());
    equals_runs_one_by_one(&one, 2);

    let bytes = |dir: &Path, file: &str| std::fs::read(dir.join(file)).unwrap();
    for workers in ["2", "4"] {
        let other = dir.path().join(format!("workers-{workers}"));
        let output = sweep(&file, &other, &["--workers", workers]);
        assert!(output.status.success(), "{}", show(&output));
        for file in ["summary.csv", "summary.parquet", "sweep.json"] {
            assert!(
                bytes(&one, file) == bytes(&other, file),
                "{file} differs with {workers} workers"
            );
        }
    }
    let mut shards = Vec::new();
    for i in 0..3 {
        let shard = dir.path().join(format!("shard-{i}"));
        let output = sweep(
            &file,
            &shard,
            &["--shard", &format!("{i}/3"), "--workers", "1"],
        );
        assert!(output.status.success(), "{}", show(&output));
        let (_, rows) = table(&shard);
        assert!(rows.iter().all(|r| r[0].parse::<usize>().unwrap() % 3 == i));
        shards.push(shard.display().to_string());
    }
    // Two of three shards are not the study: the merge says which runs are missing.
    let merged = dir.path().join("merged");
    let output = cosimo([
        "sweep",
        "--merge",
        &shards[0],
        &shards[2],
        "-o",
        &merged.display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("33 of the study's 100 runs are in none of the tables (runs 1, 4, 7,"),
        "{}",
        show(&output)
    );
    let mut args = vec!["sweep".to_string(), "--merge".into()];
    args.extend(shards.iter().cloned());
    args.extend(["-o".into(), merged.display().to_string()]);
    cosimo_ok(args);
    for file in ["summary.csv", "summary.parquet", "sweep.json"] {
        assert!(
            bytes(&one, file) == bytes(&merged, file),
            "{file} differs after the merge"
        );
    }
}

#[test]
fn a_failing_run_is_a_row_with_its_error_and_the_others_complete() {
    let dir = temp_dir();
    let path = dir.path().join("faulty.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"system": {:?}, "grid": [{{"name": "failure", "values": [0, 2, 4, 0]}}],
                "keep": {{"results": true, "summaries": [{{"variable": "x", "statistics": ["final"]}}]}}}}"#,
            fmu("Faulty", 2).display().to_string()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = sweep(&path, &out, &["--workers", "2"]);
    assert!(output.status.success(), "{}", show(&output));
    let (_, rows) = table(&out);
    let cells: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| (r[1].as_str(), r[2].as_str(), r[3].as_str()))
        .collect();
    assert_eq!(cells[0], ("0", "1", "ok"));
    assert_eq!(cells[1].1, "", "a failed run has no summary");
    assert_eq!(cells[1].2, "failed");
    assert!(
        rows[1][4].contains("failed with status Error"),
        "{:?}",
        rows[1]
    );
    assert!(
        rows[1][4].contains("simulated failure"),
        "the FMU's log: {:?}",
        rows[1]
    );
    assert_eq!(cells[2], ("4", "0.5", "terminated"));
    assert_eq!(cells[3], ("0", "1", "ok"));
    // Each run's results: the failed one up to its failure.
    let failed = read_results(&out.join("runs/run-000001.csv"));
    assert_eq!(*failed.time().last().unwrap(), 0.4);
    assert_eq!(
        read_results(&out.join("runs/run-000000.csv")).time().len(),
        11
    );
    // A summary over a parameter (cosimo plot --x): the failed run's empty cell is left out.
    let summary = out.join("summary.csv").display().to_string();
    let png = dir.path().join("final.png").display().to_string();
    let args = |extra: &[&str]| {
        let mut a = vec![
            "plot",
            summary.as_str(),
            "--variable",
            "final(x)",
            "-o",
            &png,
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    cosimo_ok(args(&["--x", "failure", "--by", "failure"]));
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let refused = cosimo(args(&["--by", "failure"]));
    assert_eq!(refused.status.code(), Some(2), "{}", show(&refused));
    assert!(show(&refused).contains("--by splits the points of --x into sets; add --x COLUMN"));
    let refused = cosimo(args(&["--x", "status"]));
    assert_eq!(refused.status.code(), Some(2), "{}", show(&refused));
    assert!(
        show(&refused).contains("no row has numbers in both \"status\" and \"final(x)\""),
        "{}",
        show(&refused)
    );
}

#[test]
fn a_crashing_fmu_fails_its_run_only_when_isolated() {
    let dir = temp_dir();
    let path = dir.path().join("crash.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"system": {:?}, "isolate": true, "grid": [{{"name": "failure", "values": [0, 5, 0]}}],
                "keep": {{"summaries": [{{"variable": "x", "statistics": ["final"]}}]}}}}"#,
            fmu("Faulty", 3).display().to_string()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = sweep(&path, &out, &["--workers", "2"]);
    assert!(output.status.success(), "{}", show(&output));
    let (_, rows) = table(&out);
    let status: Vec<&str> = rows.iter().map(|r| r[3].as_str()).collect();
    assert_eq!(status, ["ok", "failed", "ok"]);
    assert!(
        rows[1][4].contains("SIGSEGV") || rows[1][4].contains("signal"),
        "{:?}",
        rows[1]
    );
}

#[test]
fn invalid_studies_are_refused_with_messages() {
    let dir = temp_dir();
    let faulty = fmu("Faulty", 2).display().to_string();
    let cases: [(&str, String, &str); 7] = [
        ("syntax.json", "{\"system\": ".into(), "not valid JSON"),
        (
            "unknown-field.json",
            format!(
                r#"{{"system": {:?}, "grid": [{{"name": "failure", "values": [0]}}], "runs": 3}}"#,
                system()
            ),
            "unknown field `runs`",
        ),
        (
            "no-variable.json",
            format!(
                r#"{{"system": {:?}, "grid": [{{"name": "mass1.mass", "values": [1]}}]}}"#,
                system()
            ),
            "parameter mass1.mass: Oscillator has no variable \"mass\"",
        ),
        (
            "no-component.json",
            format!(
                r#"{{"system": {:?}, "grid": [{{"name": "mass3.m", "values": [1]}}]}}"#,
                system()
            ),
            "the system has no component \"mass3\"; its components are: mass1, mass2",
        ),
        (
            "integer.json",
            format!(
                r#"{{"system": {faulty:?}, "grid": [{{"name": "failure", "values": [0, 2.5]}}]}}"#
            ),
            "run 1: parameter failure = 2.5",
        ),
        (
            "no-system.json",
            r#"{"system": "nowhere.json", "grid": [{"name": "a.b", "values": [0]}]}"#.into(),
            "system",
        ),
        (
            "experiment.json",
            format!(
                r#"{{"system": {:?}, "experiment": {{"stepSize": -1}}, "grid": [{{"name": "mass1.m", "values": [1]}}]}}"#,
                system()
            ),
            "experiment.stepSize",
        ),
    ];
    for (name, text, wanted) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let output = sweep(&path, &dir.path().join("out"), &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {}", show(&output));
        assert!(
            stderr.contains(name),
            "{name}: the message names the file: {stderr}"
        );
        assert!(stderr.contains(wanted), "{name}: {stderr} lacks {wanted}");
    }
    let output = cosimo(["sweep", "x.json", "--shard", "3/3", "-o", "o"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr)
        .contains("--shard 3/3: expected I/N with 0 <= I < N"));
    assert!(
        !dir.path().join("out").exists(),
        "a refused study writes nothing"
    );
}

#[test]
fn dry_run_prints_the_runs_of_a_shard_and_makes_none() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let file = study(
        dir.path(),
        "grid.json",
        r#""grid": [{"name": "mass1.m", "values": [1, 2]}, {"name": "mass2.d", "range": {"start": 5, "stop": 15, "step": 5}}]"#,
    );
    let file = file.display().to_string();
    let output = cosimo(["sweep", &file, "--dry-run", "--shard", "1/2"]);
    assert!(output.status.success(), "{}", show(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "index,mass1.m,mass2.d\n1,1,10\n3,2,5\n5,2,15\n"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("3 of the study's 6 runs (shard 1/2)"));
    // A dry run writes nothing, so it takes no output folder and no workers.
    for extra in [["--output-dir", "out"], ["--workers", "2"]] {
        let output = cosimo(["sweep", &file, "--dry-run", extra[0], extra[1]]);
        assert_eq!(output.status.code(), Some(2), "{}", show(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("cannot be used with"),
            "{}",
            show(&output)
        );
    }
}

#[test]
fn the_example_study_follows_its_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/study.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus");
    let studies: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("study"))
        .collect();
    assert!(!studies.is_empty());
    for path in studies {
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        cosimo::settings::study::Study::read(&path).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_sweep_and_keeps_the_finished_rows() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let file = study(
        dir.path(),
        "long.json",
        &format!(
            r#""grid": [{{"name": "mass1.m", "range": {{"start": 1, "stop": 2, "count": 100000}}}}], {SUMMARIES}"#
        ),
    );
    let out = dir.path().join("out");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["sweep", &file.display().to_string(), "--workers", "2", "-o"])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough for some runs to finish on a busy machine in debug mode.
    std::thread::sleep(std::time::Duration::from_millis(3000));
    // SAFETY: kill sends a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("stopped: "), "{stderr}");
    assert!(
        stderr.contains(&format!("--resume {}", out.display())),
        "the command that continues it: {stderr}"
    );
    assert!(
        out.join("summary.parquet").is_file(),
        "Ctrl-C writes the Parquet file"
    );
    let (_, rows) = table(&out);
    assert!(
        !rows.is_empty() && rows.len() < 100_000,
        "{} rows",
        rows.len()
    );
    assert!(
        rows.iter().all(|r| r[r.len() - 2] == "ok"),
        "no cancelled run is a row"
    );
    let meta = std::fs::read_to_string(out.join("sweep.json")).unwrap();
    assert!(meta.contains("\"complete\": false"), "{meta}");
}

/// Built without the feature `mpi`, cosimo refuses a sweep that mpirun started as several
/// processes (each would make every run and write the same files), naming the feature.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_sweep_under_mpirun_without_the_mpi_feature_is_refused() {
    let dir = temp_dir();
    let file = study(
        dir.path(),
        "grid.json",
        &format!(r#""grid": [{{"name": "mass1.m", "values": [1, 2]}}], {SUMMARIES}"#),
    );
    let out = dir.path().join("out");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["sweep", &file.display().to_string(), "-o"])
        .arg(&out)
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .env("OMPI_COMM_WORLD_RANK", "0")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("2 MPI processes"), "{}", show(&output));
    assert!(
        stderr.contains("cargo build --release --features mpi"),
        "{}",
        show(&output)
    );
    assert!(!out.exists(), "nothing written");
}
