//! `cosimo sweep` under `mpirun -n 2` and `-n 3` (feature `mpi`, Open MPI's mpirun on
//! localhost): the same table, byte for byte, as one local worker gives, failed runs included;
//! a study that cannot be read is refused once, not once per rank; Ctrl-C keeps the finished
//! rows.

#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{cosimo, fmu, show, temp_dir};

/// `cosimo ARGS` under `mpirun -n RANKS` on this machine (more ranks than cores allowed; as
/// root too, which containers often are; no cross-memory attach, which they often forbid).
fn mpirun(ranks: usize, args: &[&str]) -> Output {
    Command::new("mpirun")
        .args(["--oversubscribe", "-n", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Containers often forbid the cross-memory attach of Open MPI's shared-memory
        // transport (it then fails on messages past the eager size); copying always works.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env_remove("COSIMO_LOG")
        .output()
        .expect("mpirun runs (install openmpi-bin)")
}

fn two_mass_study(dir: &Path) -> PathBuf {
    let system =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-displacement.json");
    let path = dir.join("samples.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"system": {:?}, "experiment": {{"stopTime": 0.2, "stepSize": 1e-3, "outputInterval": 1e-2}},
                "samples": {{"count": 40, "seed": 11, "parameters": [
                    {{"name": "mass1.d", "uniform": {{"min": 5, "max": 15}}}},
                    {{"name": "mass2.m", "normal": {{"mean": 1, "std": 0.1}}}}]}},
                "keep": {{"summaries": [
                    {{"variable": "mass2.x", "statistics": ["max", "min", "final", "mean"]}},
                    {{"variable": "mass1.x", "crossing": {{"level": 0.0, "direction": "falling"}}}}]}}}}"#,
            system.display().to_string()
        ),
    )
    .unwrap();
    path
}

/// Runs of unequal length: some fail early, one terminates early, the others run to the end;
/// each run's results are kept (written by the rank that made the run).
fn faulty_study(dir: &Path) -> PathBuf {
    let path = dir.join("faulty.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"system": {:?}, "grid": [{{"name": "failure", "values": [0, 2, 4, 0, 2, 0, 0]}}],
                "keep": {{"results": true, "summaries": [{{"variable": "x", "statistics": ["final"]}}]}}}}"#,
            fmu("Faulty", 2).display().to_string()
        ),
    )
    .unwrap();
    path
}

fn bytes(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
}

/// The study's table (and kept results) under mpirun -n 2 and -n 3 equal one local worker's.
fn same_table_as_one_worker(study: &Path, dir: &Path, files: &[&str]) {
    let study = study.display().to_string();
    let local = dir.join("local");
    let output = cosimo([
        "sweep",
        &study,
        "-o",
        &local.display().to_string(),
        "--workers",
        "1",
    ]);
    assert!(output.status.success(), "{}", show(&output));
    for ranks in [2, 3] {
        let out = dir.join(format!("mpi-{ranks}"));
        let output = mpirun(ranks, &["sweep", &study, "-o", &out.display().to_string()]);
        assert!(output.status.success(), "{}", show(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("on {} MPI ranks", ranks - 1)),
            "rank 0 reports the runs once:\n{}",
            show(&output)
        );
        assert_eq!(stderr.matches(" runs ").count(), 1, "{}", show(&output));
        for file in files {
            assert!(
                bytes(&local, file) == bytes(&out, file),
                "{file} differs under mpirun -n {ranks}"
            );
        }
    }
}

#[test]
fn mpirun_with_2_and_3_ranks_gives_the_table_of_one_local_worker() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let study = two_mass_study(dir.path());
    same_table_as_one_worker(
        &study,
        dir.path(),
        &["summary.csv", "summary.parquet", "sweep.json"],
    );
}

#[test]
fn failed_runs_are_rows_and_results_are_kept_under_mpirun() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let study = faulty_study(dir.path());
    let mut files = vec![
        "summary.csv".to_string(),
        "summary.parquet".to_string(),
        "sweep.json".to_string(),
    ];
    files.extend((0..7).map(|i| format!("runs/run-{i:06}.csv")));
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    same_table_as_one_worker(&study, dir.path(), &files);
    let csv = String::from_utf8(bytes(&dir.path().join("mpi-3"), "summary.csv")).unwrap();
    assert_eq!(csv.matches(",failed,").count(), 2, "{csv}");
}

#[test]
fn an_unreadable_study_is_refused_once_under_mpirun() {
    let dir = temp_dir();
    let out = dir.path().join("out");
    let output = mpirun(
        3,
        &[
            "sweep",
            &dir.path().join("missing.json").display().to_string(),
            "-o",
            &out.display().to_string(),
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.matches("missing.json").count(),
        1,
        "one message, from rank 0:\n{}",
        show(&output)
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn workers_are_refused_under_mpirun_once() {
    // Each rank makes one run at a time: --workers would be ignored, so it is refused.
    let dir = temp_dir();
    let out = dir.path().join("out");
    let output = mpirun(
        2,
        &[
            "sweep",
            &dir.path().join("study.json").display().to_string(),
            "-o",
            &out.display().to_string(),
            "--workers",
            "2",
        ],
    );
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr
            .matches("--workers 2 sets the threads of a sweep on one machine; under mpirun each rank but rank 0 makes one run at a time: start more ranks (mpirun -n K) instead")
            .count(),
        1,
        "one message, from rank 0:\n{}",
        show(&output)
    );
    assert!(!out.exists(), "nothing written");
}

/// Ctrl-C to mpirun reaches every rank: the workers stop, rank 0 writes the finished rows in
/// index order and marks the table incomplete.
#[test]
fn ctrl_c_to_mpirun_keeps_the_finished_rows() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let dir = temp_dir();
    let system =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-displacement.json");
    let study = dir.path().join("long.json");
    std::fs::write(
        &study,
        format!(
            r#"{{"system": {:?}, "experiment": {{"stopTime": 0.2, "stepSize": 1e-3}},
                "grid": [{{"name": "mass1.m", "range": {{"start": 1, "stop": 2, "count": 100000}}}}],
                "keep": {{"summaries": [{{"variable": "mass2.x", "statistics": ["max"]}}]}}}}"#,
            system.display().to_string()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let child = Command::new("mpirun")
        .args(["--oversubscribe", "-n", "3"])
        .arg(env!("CARGO_BIN_EXE_cosimo"))
        .args(["sweep", &study.display().to_string(), "-o"])
        .arg(&out)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Containers often forbid the cross-memory attach of Open MPI's shared-memory
        // transport (it then fails on messages past the eager size); copying always works.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough for some runs to finish on a busy machine in debug mode.
    std::thread::sleep(std::time::Duration::from_millis(4000));
    // SAFETY: kill sends a signal to the mpirun this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("stopped: "),
        "{}",
        show(&output)
    );
    let mut reader = csv::Reader::from_path(out.join("summary.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert!(
        !rows.is_empty() && rows.len() < 100_000,
        "{} rows",
        rows.len()
    );
    let indices: Vec<usize> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(indices.windows(2).all(|w| w[0] < w[1]), "index order");
    assert!(
        rows.iter().all(|r| &r[3] == "ok"),
        "no cancelled run is a row"
    );
    let meta = std::fs::read_to_string(out.join("sweep.json")).unwrap();
    assert!(meta.contains("\"complete\": false"), "{meta}");
}
