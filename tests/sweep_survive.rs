//! Studies that survive their runs and themselves: by default each run hosts its FMUs in
//! worker processes, so a run whose FMU segfaults, aborts or hangs is a failed row with the
//! crash report while the other rows are those of a study without it; the table is written
//! as runs finish, so a sweep killed half-way keeps its finished rows, and `--resume` makes
//! the missing runs and gives the table of an uninterrupted sweep, byte for byte.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::{cosimo, fmu, show, temp_dir};

fn sweep(study: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["sweep".to_string(), study.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    cosimo(args)
}

/// The rows of a summary table as cells, with its header.
fn table(dir: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(dir.join("summary.csv")).unwrap();
    let header = reader.headers().unwrap().iter().map(String::from).collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// A study of the Faulty FMU over `failure` (what its `doStep` at `fail_at` does) and
/// `fail_at`, with summaries of its output; `extra` adds fields.
fn faulty_study(dir: &Path, name: &str, failures: &[i32], extra: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!(
        r#"{{"system": {:?}, {extra} "grid": [{{"name": "failure", "values": {failures:?}}}, {{"name": "fail_at", "values": [0.25, 0.75]}}],
            "keep": {{"summaries": [{{"variable": "x", "statistics": ["final", "mean", "max"]}},
                                    {{"variable": "x", "crossing": {{"level": 0.5}}}}]}}}}"#,
        fmu("Faulty", 3).display().to_string()
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn crashing_aborting_and_hanging_runs_are_failed_rows_and_the_others_are_unchanged() {
    let dir = temp_dir();
    // Faulty's failure modes: 5 segfault, 6 abort(), 8 an endless loop in doStep. No
    // "isolate" in the study: isolation is the default; the hang limit is made short.
    let hostile = faulty_study(
        dir.path(),
        "hostile.json",
        &[0, 5, 6, 8],
        r#""callTimeout": 2,"#,
    );
    let started = Instant::now();
    let output = sweep(
        &hostile,
        &[
            "-o",
            &dir.path().join("hostile").display().to_string(),
            "--workers",
            "2",
        ],
    );
    assert!(output.status.success(), "{}", show(&output));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the hanging runs end at the call timeout"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("2 ok, 6 failed (FMUs in worker processes)"),
        "{}",
        show(&output)
    );
    // The same good runs, in this process and without the hostile ones.
    let calm = faulty_study(dir.path(), "calm.json", &[0], r#""isolate": false,"#);
    let output = sweep(
        &calm,
        &["-o", &dir.path().join("calm").display().to_string()],
    );
    assert!(output.status.success(), "{}", show(&output));

    let (header, rows) = table(&dir.path().join("hostile"));
    let (calm_header, calm_rows) = table(&dir.path().join("calm"));
    assert_eq!(header, calm_header);
    assert_eq!(
        header,
        [
            "index",
            "failure",
            "fail_at",
            "final(x)",
            "mean(x)",
            "max(x)",
            "crossing(x, 0.5)",
            "status",
            "error"
        ]
    );
    assert_eq!(rows.len(), 8, "{rows:?}");
    let indices: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        indices,
        ["0", "1", "2", "3", "4", "5", "6", "7"],
        "index order"
    );
    // The good runs (failure 0, the first grid value) are the calm study's rows.
    assert_eq!(rows[..2], calm_rows[..], "the good runs");
    assert_eq!(rows[0][3], "1");
    // Each failed row: no summaries, status failed, the crash report.
    let report = [
        ("5", "killed by signal 11 (SIGSEGV"),
        ("6", "killed by signal 6 (SIGABRT"),
        ("8", "did not return within the call timeout of 2 s"),
    ];
    for row in &rows[2..] {
        let (_, wanted) = report.iter().find(|(f, _)| *f == row[1]).unwrap();
        assert!(row[3..7].iter().all(String::is_empty), "{row:?}");
        assert_eq!(row[7], "failed", "{row:?}");
        let error = &row[8];
        assert!(error.contains(wanted), "{row:?} lacks {wanted}");
        assert!(error.contains("component \"Faulty\""), "{row:?}");
        assert!(error.contains("fmi3DoStep"), "{row:?}: the call");
        let at = if row[2] == "0.25" {
            "t = 0.2"
        } else {
            "t = 0.7"
        };
        assert!(error.contains(at), "{row:?}: the time");
    }
    // The table is written whole at the end: Parquet and a complete sweep.json.
    assert!(dir.path().join("hostile/summary.parquet").is_file());
    let meta = std::fs::read_to_string(dir.path().join("hostile/sweep.json")).unwrap();
    assert!(meta.contains("\"complete\": true"), "{meta}");
}

#[test]
fn a_hang_limit_needs_isolation() {
    let dir = temp_dir();
    let study = faulty_study(
        dir.path(),
        "both.json",
        &[0],
        r#""isolate": false, "callTimeout": 2,"#,
    );
    let output = sweep(
        &study,
        &["-o", &dir.path().join("out").display().to_string()],
    );
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(
            "callTimeout is enforced by killing a run's worker process, but isolate is false"
        ),
        "{}",
        show(&output)
    );
    let study = faulty_study(dir.path(), "zero.json", &[0], r#""callTimeout": 0,"#);
    let output = sweep(
        &study,
        &["-o", &dir.path().join("out").display().to_string()],
    );
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("callTimeout 0: expected a positive number of seconds"),
        "{}",
        show(&output)
    );
}

/// A study of the two-mass system with `runs` runs over the mass of body 1.
fn long_study(dir: &Path, name: &str, runs: usize) -> PathBuf {
    let system =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-displacement.json");
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            r#"{{"system": {:?}, "experiment": {{"stopTime": 0.2, "stepSize": 1e-3, "outputInterval": 1e-2}},
                "grid": [{{"name": "mass1.m", "range": {{"start": 1, "stop": 2, "count": {runs}}}}}],
                "samples": {{"count": 1, "seed": 7, "parameters": [{{"name": "mass2.dc", "uniform": {{"min": 2, "max": 20}}}}]}},
                "keep": {{"summaries": [{{"variable": "mass2.x", "statistics": ["max", "final", "mean"]}},
                                        {{"variable": "mass1.x", "crossing": {{"level": 0.0, "direction": "falling"}}}}]}}}}"#,
            system.display().to_string()
        ),
    )
    .unwrap();
    path
}

/// The data rows of a summary.csv on disk now (0 before its header).
fn rows_on_disk(csv: &Path) -> usize {
    std::fs::read_to_string(csv).map_or(0, |text| text.lines().count().saturating_sub(1))
}

#[cfg(unix)]
#[test]
fn a_killed_sweep_resumed_gives_the_table_of_an_uninterrupted_one() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    const RUNS: usize = 120;
    let dir = temp_dir();
    let study = long_study(dir.path(), "long.json", RUNS);
    let killed = dir.path().join("killed");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args([
            "sweep",
            &study.display().to_string(),
            "--workers",
            "2",
            "-o",
        ])
        .arg(&killed)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed (SIGKILL: no handler runs) once some rows are on disk.
    let csv = killed.join("summary.csv");
    let waited = Instant::now();
    while rows_on_disk(&csv) < 10 {
        assert!(
            waited.elapsed() < Duration::from_secs(120),
            "no rows on disk after 2 minutes"
        );
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = rows_on_disk(&csv);
    assert!((10..RUNS).contains(&kept), "{kept} rows kept of {RUNS}");
    assert!(
        !killed.join("summary.parquet").exists(),
        "the Parquet file is written at the end"
    );
    let meta = std::fs::read_to_string(killed.join("sweep.json")).unwrap();
    assert!(meta.contains("\"complete\": false"), "{meta}");
    // A kill in the middle of a row's write leaves part of it: that run is made again.
    let (_, rows) = table(&killed);
    let made: Vec<usize> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    let torn = (0..RUNS).find(|i| !made.contains(i)).unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(&csv).unwrap();
    std::io::Write::write_all(&mut file, format!("{torn},1.5,3.2").as_bytes()).unwrap();
    drop(file);

    // Another study's folder is refused, and nothing in it changes.
    let other = long_study(dir.path(), "other.json", RUNS + 1);
    let before = std::fs::read(&csv).unwrap();
    let refused = sweep(&other, &["--resume", &killed.display().to_string()]);
    assert_eq!(refused.status.code(), Some(2), "{}", show(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("its table is of another study"),
        "{}",
        show(&refused)
    );
    assert_eq!(std::fs::read(&csv).unwrap(), before);

    let resumed = sweep(
        &study,
        &["--resume", &killed.display().to_string(), "--workers", "2"],
    );
    assert!(resumed.status.success(), "{}", show(&resumed));
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        stderr.contains(&format!("resuming: {kept} of {RUNS} runs are in")),
        "{}",
        show(&resumed)
    );
    assert!(
        stderr.contains(&format!("({kept} resumed, {} made)", RUNS - kept)),
        "{}",
        show(&resumed)
    );

    let whole = dir.path().join("whole");
    let output = sweep(
        &study,
        &["-o", &whole.display().to_string(), "--workers", "2"],
    );
    assert!(output.status.success(), "{}", show(&output));
    for file in ["summary.csv", "summary.parquet", "sweep.json"] {
        assert!(
            std::fs::read(killed.join(file)).unwrap() == std::fs::read(whole.join(file)).unwrap(),
            "{file} of the resumed sweep differs from the uninterrupted one's"
        );
    }
    // Resuming a finished sweep makes nothing and leaves the same table.
    let again = sweep(&study, &["--resume", &killed.display().to_string()]);
    assert!(again.status.success(), "{}", show(&again));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains(&format!("({RUNS} resumed, 0 made)")),
        "{}",
        show(&again)
    );
    assert_eq!(
        std::fs::read(killed.join("summary.csv")).unwrap(),
        std::fs::read(whole.join("summary.csv")).unwrap()
    );
}

#[test]
fn resume_needs_a_sweeps_folder() {
    let dir = temp_dir();
    let study = faulty_study(dir.path(), "s.json", &[0], "");
    let output = sweep(
        &study,
        &[
            "--resume",
            &dir.path().join("nowhere").display().to_string(),
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("name an output folder of cosimo sweep"),
        "{}",
        show(&output)
    );
    let output = sweep(&study, &["--resume", "a", "-o", "b"]);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
}
