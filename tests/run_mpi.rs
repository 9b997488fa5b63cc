//! `cosimo run` of one system under `mpirun -n 2` and `-n 3` (feature `mpi`, Open MPI's mpirun
//! on localhost): the components spread over the ranks, rank 0 writes the results, byte for
//! byte those of one process, for Jacobi and Gauss-Seidel and two partitions each, for the
//! implicit algorithm (fixed steps and ImSLocal control), constraint coupling and an
//! algebraic loop (on one rank and split), and as `--partition FILE` and an SSP's annotations
//! split them; the split by measured step cost gives an expensive component a rank of its own
//! and keeps a loop on one rank; what does not run over ranks yet and partitions that do not
//! fit are refused before anything is loaded.

#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::skip::{skipped, Skip};
use common::{cosimo, show, temp_dir};
use serde_json::{json, Value};

/// Whether `mpirun` is on the PATH; else the test reports itself skipped.
fn have_mpirun() -> bool {
    let found = Command::new("mpirun").arg("--version").output().is_ok();
    if !found {
        skipped(
            Skip::NoMpirun,
            "no mpirun on PATH (install openmpi-bin, libopenmpi-dev and libclang-dev)",
        );
    }
    found
}

/// `cosimo ARGS` under `mpirun -n RANKS` on this machine (as in `sweep_mpi.rs`).
fn mpirun(ranks: usize, args: &[&str]) -> Output {
    Command::new("mpirun")
        .args(["--oversubscribe", "-n", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_cosimo"))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env_remove("COSIMO_LOG")
        .output()
        .expect("mpirun runs (install openmpi-bin)")
}

fn example(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `system` written into `dir` (its FMU paths made absolute: the file moves out of fmus/).
fn write_system(dir: &Path, name: &str, mut system: Value) -> PathBuf {
    let fmus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus");
    for component in system["components"].as_array_mut().expect("components") {
        let fmu = component["fmu"].as_str().expect("fmu").to_string();
        component["fmu"] = json!(fmus.join(fmu).display().to_string());
    }
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&system).unwrap()).unwrap();
    path
}

/// The system run in one process, then under mpirun with `ranks` ranks: the same CSV bytes.
fn same_results(system: &Path, ranks: usize, label: &str) {
    same_results_with(system, ranks, label, &[]);
}

/// [`same_results`] with `extra` options under mpirun; what mpirun printed.
fn same_results_with(system: &Path, ranks: usize, label: &str, extra: &[&str]) -> Output {
    let dir = system.parent().expect("folder");
    let one = dir.join(format!("{label}-one.csv"));
    let many = dir.join(format!("{label}-{ranks}.csv"));
    let path = system.display().to_string();
    let alone = cosimo(["run", &path, "-o", &one.display().to_string()]);
    assert!(alone.status.success(), "{label}: {}", show(&alone));
    let many_shown = many.display().to_string();
    let mut args = vec!["run", &path, "-o", &many_shown];
    args.extend_from_slice(extra);
    let spread = mpirun(ranks, &args);
    assert!(
        spread.status.success(),
        "{label} on {ranks} ranks: {}",
        show(&spread)
    );
    let (a, b) = (std::fs::read(&one).unwrap(), std::fs::read(&many).unwrap());
    assert!(a.len() > 100, "{label}: hardly any results");
    assert!(
        a == b,
        "{label}: the results on {ranks} ranks differ from one process'"
    );
    spread
}

/// With every component given a rank (`ranks[k]` for component k).
fn with_ranks(mut system: Value, ranks: &[usize]) -> Value {
    for (component, rank) in system["components"]
        .as_array_mut()
        .expect("components")
        .iter_mut()
        .zip(ranks)
    {
        component["rank"] = json!(rank);
    }
    system
}

fn with_algorithm(mut system: Value, algorithm: &str, order: u8) -> Value {
    system["experiment"]["algorithm"] = json!(algorithm);
    system["experiment"]["extrapolationOrder"] = json!(order);
    system
}

#[test]
fn two_masses_give_the_same_bits_on_two_and_three_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    for (algorithm, order) in [("jacobi", 0), ("gauss-seidel", 0), ("jacobi", 2)] {
        let system = with_algorithm(example("two-mass-force-force.json"), algorithm, order);
        let label = format!("{algorithm}-{order}");
        // Along the coupling order, and as the user splits it.
        let path = write_system(dir.path(), &format!("{label}.json"), system.clone());
        same_results(&path, 2, &label);
        same_results(&path, 3, &label);
        let given = write_system(
            dir.path(),
            &format!("{label}-given.json"),
            with_ranks(system.clone(), &[1, 0, 1]),
        );
        same_results(&given, 2, &format!("{label}-given"));
        let given3 = write_system(
            dir.path(),
            &format!("{label}-given3.json"),
            with_ranks(system, &[2, 0, 1]),
        );
        same_results(&given3, 3, &format!("{label}-given3"));
    }
}

#[test]
fn a_chain_gives_the_same_bits_on_two_and_three_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    for algorithm in ["gauss-seidel", "jacobi"] {
        let system = with_algorithm(example("conformance-chain.json"), algorithm, 0);
        let path = write_system(
            dir.path(),
            &format!("chain-{algorithm}.json"),
            system.clone(),
        );
        same_results(&path, 2, &format!("chain-{algorithm}"));
        same_results(&path, 3, &format!("chain-{algorithm}"));
        let given = write_system(
            dir.path(),
            &format!("chain-{algorithm}-given.json"),
            with_ranks(system, &[0, 1, 0, 2]),
        );
        same_results(&given, 3, &format!("chain-{algorithm}-given"));
    }
}

/// The implicit algorithm under mpirun: fixed steps with the Jacobian from component steps and
/// directional derivatives, and macro-step size and order control with ImSLocal: the owners
/// share the Jacobian's entries, every rank solves the same interface system.
#[test]
fn the_implicit_algorithm_gives_the_same_bits_on_two_and_three_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let mut fixed = with_algorithm(example("two-mass-force-force.json"), "implicit", 2);
    fixed["experiment"]["corrector"] = json!({"jacobian": "components"});
    fixed["experiment"]["stopTime"] = json!(0.3);
    let path = write_system(dir.path(), "implicit.json", fixed.clone());
    same_results(&path, 2, "implicit");
    let given3 = write_system(
        dir.path(),
        "implicit-given3.json",
        with_ranks(fixed, &[2, 0, 1]),
    );
    same_results(&given3, 3, "implicit-given3");
    let mut adaptive = example("two-mass-implicit-adaptive.json");
    adaptive["experiment"]["stopTime"] = json!(0.3);
    let path = write_system(dir.path(), "implicit-adaptive.json", adaptive);
    same_results(&path, 3, "implicit-adaptive");
}

/// An Oscillator whose force comes back from its acceleration through two CubicGains (an
/// algebraic loop of three components), its position through two Gains; `ranks` per component
/// (osc, g1, g2, h, k), or none.
fn loop_system(solver: &str, ranks: Option<&[usize]>) -> Value {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let fmu = |model: &str, version: u8| common::fmu(model, version).display().to_string();
    let system = json!({
        "components": [
            {"name": "osc", "fmu": fmu("Oscillator", 3),
             "parameters": {"m": 1.0, "c": 4.0, "d": 0.5, "x0": 1.0, "v0": 0.0}},
            {"name": "g1", "fmu": fmu("CubicGain", 2),
             "parameters": {"offset": 0.3, "gain": -0.2, "cubic": -0.005}},
            {"name": "g2", "fmu": fmu("CubicGain", 3),
             "parameters": {"offset": 0.1, "gain": 0.9, "cubic": 0.001}},
            {"name": "h", "fmu": fmu("Gain", 2), "parameters": {"k": 2.0}},
            {"name": "k", "fmu": fmu("Gain", 3), "parameters": {"k": -0.5}}
        ],
        "connections": [
            {"from": "osc.a", "to": "g1.u"},
            {"from": "g1.y", "to": "g2.u"},
            {"from": "g2.y", "to": "osc.F"},
            {"from": "osc.x", "to": "h.u"},
            {"from": "h.y", "to": "k.u"}
        ],
        "experiment": {
            "stopTime": 0.5, "stepSize": 0.01, "outputInterval": 0.02,
            "algebraicLoops": {"solver": solver, "maxIterations": 200}
        }
    });
    match ranks {
        Some(ranks) => with_ranks(system, ranks),
        None => system,
    }
}

/// An algebraic loop under mpirun: kept on one rank by the split by cost (its owner solves it
/// and broadcasts the solution) and split over 2 and 3 ranks by the system file (the owners
/// evaluate the loop and its Jacobian, every rank takes the same Newton steps).
#[test]
fn an_algebraic_loop_gives_the_same_bits_on_one_rank_and_split_over_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let path = write_system(dir.path(), "loop.json", loop_system("newton", None));
    let spread = same_results_with(&path, 2, "loop", &[]);
    let line = partition_line(&spread);
    assert!(
        line.contains("osc, g1, g2"),
        "the split by cost keeps the loop on one rank: {line}"
    );
    for (solver, ranks) in [
        ("newton", &[0, 1, 2, 0, 1][..]),
        ("newton-finite-differences", &[0, 1, 0, 1, 1][..]),
    ] {
        let label = format!("loop-{solver}-{}", ranks.len());
        let system = loop_system(solver, Some(ranks));
        let path = write_system(dir.path(), &format!("{label}.json"), system);
        let size = ranks.iter().max().map_or(1, |r| r + 1);
        same_results(&path, size, &label);
    }
}

/// Constraint coupling under mpirun: the rigid link between two masses on two ranks.
#[test]
fn constraint_coupling_gives_the_same_bits_on_two_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let path = write_system(dir.path(), "rigid-link.json", example("rigid-link.json"));
    same_results(&path, 2, "rigid-link");
}

#[test]
fn what_does_not_spread_is_refused_before_loading() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let mut two = example("two-mass-force-force.json");
    // An FMU that does not exist: the refusal comes before anything is loaded.
    two["components"][0]["fmu"] = json!("missing.fmu");
    let path = write_system(dir.path(), "three.json", two);
    let output = mpirun(4, &["run", &path.display().to_string()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    assert!(
        stderr.contains("can use at most 3 MPI ranks, not 4"),
        "{}",
        show(&output)
    );
    assert_eq!(
        stderr.matches("error:").count(),
        1,
        "said once, by rank 0: {}",
        show(&output)
    );
}

/// A system of the Faulty FMU (rank 1) and an oscillator (rank 0), the FMU failing (`failure`
/// as the Faulty model numbers them) in the step that reaches t = 0.05.
fn faulty_system(dir: &Path, failure: i32) -> PathBuf {
    let system = json!({
        "components": [
            {"name": "osc", "fmu": common::fmu("Oscillator", 2).display().to_string(), "rank": 0},
            {"name": "f", "fmu": common::fmu("Faulty", 2).display().to_string(), "rank": 1,
             "parameters": {"failure": failure, "fail_at": 0.05}}
        ],
        "connections": [],
        "experiment": {"stopTime": 0.2, "stepSize": 0.01}
    });
    let path = dir.join(format!("faulty-{failure}.json"));
    std::fs::write(&path, system.to_string()).unwrap();
    path
}

/// The first `error: ` line a run printed.
fn first_error(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default()
        .to_string()
}

/// `system`, whose doStep fails on rank 1 (one process says `failed_at` and fmi2DoStep), under
/// `mpirun -n 2`: exit 1 with one process' message and the rank, said once, and the rows up to
/// the failure as one process keeps them.
fn fails_on_rank_1_as_in_one_process(system: &Path, failed_at: &str) {
    let dir = system.parent().expect("folder");
    let system = system.display().to_string();
    let (one, many) = (dir.join("one.csv"), dir.join("many.csv"));
    let alone = cosimo(["run", &system, "-o", &one.display().to_string()]);
    let spread = mpirun(2, &["run", &system, "-o", &many.display().to_string()]);
    assert_eq!(alone.status.code(), Some(1), "{}", show(&alone));
    assert_eq!(spread.status.code(), Some(1), "{}", show(&spread));
    let (said_alone, said_spread) = (first_error(&alone), first_error(&spread));
    assert!(
        said_alone.contains(failed_at) && said_alone.contains("fmi2DoStep"),
        "{}",
        show(&alone)
    );
    let stderr = String::from_utf8_lossy(&spread.stderr);
    assert!(
        said_spread.starts_with(&said_alone) && stderr.contains("(on MPI rank 1)"),
        "expected one process' message and the rank:\n{said_alone}\n{}",
        show(&spread)
    );
    assert_eq!(stderr.matches("error: ").count(), 1, "{}", show(&spread));
    // The rows up to the failure, as one process keeps them.
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&many).unwrap());
}

#[test]
fn a_failure_on_rank_1_ends_every_rank_with_its_message() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let system = faulty_system(dir.path(), 2);
    fails_on_rank_1_as_in_one_process(&system, "simulation failed at t = 0.04");
}

#[test]
fn a_termination_asked_on_rank_1_ends_every_rank_where_one_process_ends() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let system = faulty_system(dir.path(), 4);
    same_results(&system, 2, "terminate");
}

/// The single crane under the reduced interface model with a Faulty FMU among its fast
/// components, alone on rank 1, failing (`failure` as the Faulty model numbers them) in the
/// fast step that reaches t = 0.3001.
fn crane_with_faulty(dir: &Path, failure: i32) -> PathBuf {
    let mut system = example("crane-single.json");
    system["experiment"]["stopTime"] = json!(0.5);
    let faulty = common::fmu("Faulty", 2).display().to_string();
    system["components"].as_array_mut().unwrap().push(json!({
        "name": "faulty",
        "fmu": faulty,
        "parameters": {"failure": failure, "fail_at": 0.3001}
    }));
    for (c, rank) in [0, 0, 1].iter().enumerate() {
        system["components"][c]["rank"] = json!(rank);
    }
    write_system(dir, &format!("crane-faulty-{failure}.json"), system)
}

/// A fast FMU of the reduced interface model that fails on rank 1 ends every rank with one
/// process' message and the rank, the rows up to the failure kept; one that asks to end the
/// run ends it where one process ends, with one process' bytes.
#[test]
fn a_failure_in_the_fast_loop_on_rank_1_ends_every_rank_with_its_message() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let system = crane_with_faulty(dir.path(), 2);
    fails_on_rank_1_as_in_one_process(&system, "simulation failed at t = 0.3");
    same_results(&crane_with_faulty(dir.path(), 4), 2, "rim-terminate");
}

/// The processes whose command line names `marker`, with their MPI rank.
#[cfg(target_os = "linux")]
fn ranks_running(marker: &str) -> Vec<(i32, Option<String>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(marker)
            || !String::from_utf8_lossy(&cmdline).contains("cosimo")
        {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let rank = environ
            .split(|&b| b == 0)
            .filter_map(|v| std::str::from_utf8(v).ok())
            .find_map(|v| v.strip_prefix("OMPI_COMM_WORLD_RANK="))
            .map(str::to_string);
        found.push((pid, rank));
    }
    found
}

/// A rank killed with SIGKILL in the middle of a long run: mpirun ends the other ranks within
/// seconds, no process of the run is left, and rank 0's rows written so far are whole lines.
#[test]
#[cfg(target_os = "linux")]
fn a_killed_rank_ends_every_rank_within_seconds() {
    use std::time::{Duration, Instant};
    if !have_mpirun() {
        return;
    }
    for victim in ["1", "0"] {
        let dir = temp_dir();
        let mut system = example("two-mass-force-force.json");
        system["experiment"]["stopTime"] = json!(1.0e5);
        let marker = format!("killed-rank-{victim}-{}.json", std::process::id());
        let path = write_system(dir.path(), &marker, system);
        let csv = dir.path().join("rows.csv");
        let mut run = Command::new("mpirun")
            .args(["--oversubscribe", "-n", "2"])
            .arg(env!("CARGO_BIN_EXE_cosimo"))
            .args(["run", &path.display().to_string(), "-q", "-o"])
            .arg(&csv)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mpirun starts");
        // Running: both ranks up and rows on disk.
        let started = Instant::now();
        let target = loop {
            let running = ranks_running(&marker);
            let rows = std::fs::read_to_string(&csv).map_or(0, |t| t.lines().count());
            if let Some(&(pid, _)) = running
                .iter()
                .find(|(_, rank)| rank.as_deref() == Some(victim))
            {
                if running.iter().filter(|(_, r)| r.is_some()).count() == 2 && rows > 10 {
                    break pid;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the run did not start: {running:?}, {rows} rows"
            );
            assert!(
                run.try_wait().expect("waits").is_none(),
                "mpirun ended early"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        // SAFETY: a plain kill(2) of a process this test started (through mpirun).
        assert_eq!(unsafe { libc::kill(target, libc::SIGKILL) }, 0);
        let killed = Instant::now();
        let status = loop {
            if let Some(status) = run.try_wait().expect("waits") {
                break status;
            }
            if killed.elapsed() > Duration::from_secs(20) {
                let _ = run.kill();
                panic!(
                    "rank {victim} killed, mpirun still running after 20 s: {:?}",
                    ranks_running(&marker)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let took = killed.elapsed();
        assert!(!status.success(), "rank {victim} killed: {status:?}");
        // Nothing of the run is left.
        let left = loop {
            let left = ranks_running(&marker);
            if left.is_empty() || killed.elapsed() > Duration::from_secs(25) {
                break left;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(
            left.is_empty(),
            "rank {victim} killed, left behind: {left:?}"
        );
        let text = std::fs::read_to_string(&csv).expect("rank 0's rows");
        assert!(
            text.lines().count() > 10 && text.ends_with('\n'),
            "rows: {}",
            text.len()
        );
        eprintln!("rank {victim} killed: the run ended in {took:.1?} ({status:?})");
    }
}

/// The line rank 0 prints about the partition.
fn partition_line(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .find(|l| l.starts_with("partition over"))
        .unwrap_or_else(|| panic!("no partition line: {}", show(output)))
        .to_string()
}

#[test]
fn a_partition_file_and_an_ssp_annotation_give_the_same_bits() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let file = dir.path().join("split.txt");
    std::fs::write(&file, "# NAME RANK\nmass1 1\nspring 0\nmass2 1\n").unwrap();
    let shown = file.display().to_string();
    for algorithm in ["jacobi", "gauss-seidel"] {
        // The file wins over the system's own ranks.
        let system = with_ranks(
            with_algorithm(example("two-mass-force-force.json"), algorithm, 0),
            &[0, 0, 1],
        );
        let path = write_system(dir.path(), &format!("file-{algorithm}.json"), system);
        let label = format!("file-{algorithm}");
        let spread = same_results_with(&path, 2, &label, &["--partition", &shown]);
        assert!(
            partition_line(&spread).ends_with(&format!(
                "as --partition {shown} gives it: rank 0: spring; rank 1: mass1, mass2"
            )),
            "{}",
            show(&spread)
        );
    }
    // The SSP twin of the two masses, every component given its rank in an annotation.
    common::fmu("Oscillator", 2);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ssd =
        std::fs::read_to_string(root.join("fmus/two-mass-force-force.ssp/SystemStructure.ssd"))
            .unwrap()
            .replace(
                "../../target/fmus",
                &root.join("target/fmus").display().to_string(),
            );
    for (label, ranks, size) in [("ssp-2", [1, 0, 1], 2), ("ssp-3", [2, 0, 1], 3)] {
        let mut text = String::new();
        let mut parts = ssd.split("</ssd:Component>");
        text += parts.next().unwrap_or_default();
        for (rank, rest) in ranks.iter().zip(parts.by_ref()) {
            text += &format!(
                "<ssc:Annotations><ssc:Annotation type=\"org.cosimo.component\"><cosimo:Component rank=\"{rank}\"/></ssc:Annotation></ssc:Annotations></ssd:Component>{rest}"
            );
        }
        let folder = dir.path().join(format!("{label}.ssp"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("SystemStructure.ssd"), text).unwrap();
        let spread = same_results_with(&folder, size, label, &[]);
        assert!(
            partition_line(&spread).contains("as the system gives it"),
            "{}",
            show(&spread)
        );
    }
}

#[test]
fn partitions_that_do_not_fit_are_refused_with_file_and_line() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let mut system = example("two-mass-force-force.json");
    // Refused before anything is loaded.
    system["components"][0]["fmu"] = json!("missing.fmu");
    let path = write_system(dir.path(), "refused.json", system)
        .display()
        .to_string();
    let file = dir.path().join("split.txt");
    let shown = file.display().to_string();
    for (text, expected) in [
        (
            "mass1 0\nspring 1\nmass3 1\n",
            format!("{shown}:3: the system has no component \"mass3\""),
        ),
        (
            "mass1 0\nspring 1\n",
            format!("{shown}: 1 of the system's components has no line"),
        ),
        (
            "mass1 0\nspring 5\nmass2 1\n",
            format!("{shown}:2: component \"spring\" is given rank 5, but the run has 2 MPI ranks"),
        ),
        (
            "mass1 0\nspring 1\nspring 1\n",
            format!("{shown}:3: component \"spring\" is named again (first on line 2)"),
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let output = mpirun(2, &["run", &path, "--partition", &shown]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}", show(&output));
        assert!(
            stderr.contains(&expected),
            "expected {expected:?}: {}",
            show(&output)
        );
        assert_eq!(
            stderr.matches("error:").count(),
            1,
            "said once: {}",
            show(&output)
        );
    }
    // In one process, and packed into an FMU, a partition has nothing to split.
    std::fs::write(&file, "mass1 0\nspring 1\nmass2 1\n").unwrap();
    let alone = cosimo(["run", &path, "--partition", &shown]);
    assert_eq!(alone.status.code(), Some(2), "{}", show(&alone));
    assert!(
        String::from_utf8_lossy(&alone.stderr).contains("but this run is one process"),
        "{}",
        show(&alone)
    );
    let fmu = dir.path().join("packed.fmu").display().to_string();
    // The refusal comes before the container library is looked at.
    let export = cosimo([
        "export",
        &path,
        "-o",
        &fmu,
        "--partition",
        &shown,
        "--container-library",
        &shown,
    ]);
    assert_eq!(export.status.code(), Some(2), "{}", show(&export));
    assert!(
        String::from_utf8_lossy(&export.stderr).contains("cosimo export does not take --partition"),
        "{}",
        show(&export)
    );
}

#[test]
fn the_split_by_measured_cost_gives_an_expensive_component_a_rank_of_its_own() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    // A chain of six Gains, the third spinning 2 ms per step: by count 2 + 2 + 2.
    let path =
        common::systems::gain_chain_file(dir.path(), &["g0", "g1", "busy", "g2", "g3", "g4"]);
    let spread = same_results_with(&path, 3, "gains", &[]);
    let line = partition_line(&spread);
    assert!(
        line.contains("balanced by the components' measured step costs: rank 0: g0, g1 (")
            && line.contains("; rank 1: busy (")
            && line.contains("; rank 2: g2, g3, g4 ("),
        "{}",
        show(&spread)
    );
}

/// `--partition-out FILE` writes the split that the run's own stepping times balance: from a
/// split by count, the Gain that spins 2 ms per step gets a rank of its own, and the next run
/// reads the file with `--partition` and gives one process' bytes.
#[test]
fn partition_out_writes_the_split_the_runs_stepping_times_balance() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let path =
        common::systems::gain_chain_file(dir.path(), &["g0", "g1", "busy", "g2", "g3", "g4"]);
    let by_count = dir.path().join("by-count.txt");
    std::fs::write(&by_count, "g0 0\ng1 0\nbusy 1\ng2 1\ng3 2\ng4 2\n").unwrap();
    let written = dir.path().join("balanced.txt");
    let (by_count, written_text) = (
        by_count.display().to_string(),
        written.display().to_string(),
    );
    let extra = ["--partition", &by_count, "--partition-out", &written_text];
    let spread = same_results_with(&path, 3, "by-count", &extra);
    assert!(
        String::from_utf8_lossy(&spread.stderr).contains("partition for mpirun -n 3"),
        "{}",
        show(&spread)
    );
    let text = std::fs::read_to_string(&written).expect("the partition written");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        lines,
        ["g0 0", "g1 0", "busy 1", "g2 2", "g3 2", "g4 2"],
        "{text}"
    );
    same_results_with(&path, 3, "balanced", &["--partition", &written_text]);
    // One process has no ranks to split for.
    let alone = cosimo([
        "run",
        &path.display().to_string(),
        "--partition-out",
        &written_text,
    ]);
    assert_eq!(alone.status.code(), Some(2), "{}", show(&alone));
}

/// The summary of a run over ranks splits each rank's time as the variable-order paper does:
/// stepping its FMUs, FMU states (saved and restored by the startup corrector of extrapolation
/// order 2), interface computations, communication and waiting; the parts add up to the run.
#[test]
fn the_summary_splits_each_ranks_time() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let system = with_algorithm(example("two-mass-force-force.json"), "jacobi", 2);
    let path = write_system(dir.path(), "times.json", system);
    let summary = dir.path().join("summary.json");
    let output = mpirun(
        3,
        &[
            "run",
            &path.display().to_string(),
            "-o",
            &dir.path().join("rows.csv").display().to_string(),
            "--json-file",
            &summary.display().to_string(),
        ],
    );
    assert!(output.status.success(), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for rank in 0..3 {
        assert!(
            stderr.contains(&format!("MPI rank {rank}: ")),
            "rank {rank}'s line: {}",
            show(&output)
        );
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("the summary")).unwrap();
    let ranks = summary["ranks"].as_array().expect("ranks in the summary");
    assert_eq!(ranks.len(), 3, "{summary}");
    let wall = summary["wall_seconds"].as_f64().expect("wall seconds");
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], json!(i));
        let part = |key: &str| r[key].as_f64().unwrap_or(-1.0);
        let parts = [
            "integration_seconds",
            "state_seconds",
            "interface_seconds",
            "communication_seconds",
        ]
        .map(part);
        assert!(parts.iter().all(|&x| x >= 0.0), "{r}");
        // Every rank owns a component here, steps it, saves its state and talks.
        assert!(parts[0] > 0.0 && parts[1] > 0.0 && parts[3] > 0.0, "{r}");
        // Each rank's parts add up to its run: within a tenth of rank 0's wall time.
        let sum: f64 = parts.iter().sum();
        assert!(
            (sum - wall).abs() <= 0.1 * wall + 0.05,
            "rank {i}: {sum} s against {wall} s: {r}"
        );
    }
}

/// `--parallel --threads 2` under mpirun: each rank's own components on two threads (the
/// summary says so per rank), the same result file as one process.
#[test]
fn parallel_puts_each_ranks_components_on_threads() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let system = with_algorithm(example("conformance-chain.json"), "jacobi", 0);
    // Two components per rank, so that each has something to put beside the other.
    let path = write_system(
        dir.path(),
        "threads.json",
        with_ranks(system, &[0, 0, 1, 1]),
    );
    let summary = dir.path().join("summary.json");
    let shown = summary.display().to_string();
    let extra = ["--parallel", "--threads", "2", "--json-file", &shown];
    let output = same_results_with(&path, 2, "threads", &extra);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for rank in 0..2 {
        let line = stderr
            .lines()
            .find(|l| l.starts_with(&format!("MPI rank {rank}: ")));
        assert!(
            line.is_some_and(|l| l.contains("(its FMUs on 2 threads)")),
            "rank {rank}'s line: {}",
            show(&output)
        );
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("the summary")).unwrap();
    let threads: Vec<&Value> = summary["ranks"]
        .as_array()
        .expect("ranks in the summary")
        .iter()
        .map(|r| &r["threads"])
        .collect();
    assert_eq!(threads, [&json!(2), &json!(2)], "{summary}");
}

/// Worker processes inside a rank (`--isolate`): each rank hosts its own FMUs in workers. The
/// two masses give one process' bytes on 2 ranks; a worker on rank 1 killed by SIGSEGV ends
/// every rank with one process' message (its worker's pid aside) and the rank, and the rows
/// up to the crash.
#[test]
fn worker_processes_inside_a_rank_give_the_same_bytes_and_crash_as_one_process() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let masses = write_system(
        dir.path(),
        "masses.json",
        example("two-mass-force-force.json"),
    );
    same_results_with(&masses, 2, "isolated", &["--isolate"]);
    let crashing = faulty_system(dir.path(), 5);
    let system = crashing.display().to_string();
    let (one, many) = (dir.path().join("one.csv"), dir.path().join("many.csv"));
    let run = |out: &Path| {
        [
            "run",
            &system,
            "--isolate",
            "-o",
            &out.display().to_string(),
        ]
        .map(str::to_string)
    };
    let alone = cosimo(run(&one));
    let spread = mpirun(2, &run(&many).each_ref().map(String::as_str));
    assert_eq!(alone.status.code(), Some(1), "{}", show(&alone));
    assert_eq!(spread.status.code(), Some(1), "{}", show(&spread));
    // The worker's pid is the only difference.
    let without_pid = |said: String| {
        let at = said.find("(pid ").expect("the worker's pid");
        let end = at + said[at..].find(')').expect("a closing parenthesis");
        format!("{}{}", &said[..at], &said[end + 1..])
    };
    let said_alone = without_pid(first_error(&alone));
    let said_spread = without_pid(first_error(&spread));
    assert!(
        said_alone.contains("signal 11 (SIGSEGV"),
        "{}",
        show(&alone)
    );
    assert_eq!(said_spread, format!("{said_alone} (on MPI rank 1)"));
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&many).unwrap());
}

/// `--scenario` under mpirun: every rank plays it, the owners apply it, and the result file
/// is one process' on 2 and 3 ranks; rank 0 lists the events that took effect.
#[test]
fn a_scenario_gives_the_same_bits_on_two_and_three_ranks() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let path = write_system(
        dir.path(),
        "scenario.json",
        example("two-mass-force-force.json"),
    );
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus/scenarios/two-mass-scenario.yaml")
        .display()
        .to_string();
    let path = path.display().to_string();
    let one = dir.path().join("one.csv").display().to_string();
    let alone = cosimo(["run", &path, "--scenario", &scenario, "-o", &one]);
    assert!(alone.status.success(), "{}", show(&alone));
    for ranks in [2, 3] {
        let many = dir
            .path()
            .join(format!("{ranks}.csv"))
            .display()
            .to_string();
        let spread = mpirun(ranks, &["run", &path, "--scenario", &scenario, "-o", &many]);
        assert!(spread.status.success(), "{ranks} ranks: {}", show(&spread));
        assert!(
            String::from_utf8_lossy(&spread.stderr).contains("scenario: 3 event(s) took effect"),
            "{}",
            show(&spread)
        );
        assert!(
            std::fs::read(&one).unwrap() == std::fs::read(&many).unwrap(),
            "the results on {ranks} ranks differ from one process'"
        );
    }
}

/// Every example of `fmus/` (system files and SSPs), cut to 200 macro steps, under mpirun with
/// K = 2, 3 and 4 ranks (as many as it has components), split by measured cost and by a
/// partition file that deals the components out in reverse: the same result file, byte for
/// byte, as one process (the cranes under the reduced interface model too).
#[test]
fn every_example_gives_one_process_bytes_on_2_3_and_4_ranks_for_two_partitions() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    let examples = common::example_systems();
    let (mut compared, mut rims) = (0, 0);
    for (e, example) in examples.iter().enumerate() {
        let label = example.file_name().unwrap().to_string_lossy().into_owned();
        let outline = common::example_outline(example, 200.0);
        let (stop, names) = (outline.stop.to_string(), outline.names);
        rims += usize::from(matches!(
            outline.algorithm,
            cosimo::settings::Algorithm::Rim(_)
        ));
        let target = example.display().to_string();
        let one = dir.path().join(format!("one-{e}.csv"));
        let alone = cosimo([
            "run",
            &target,
            "--stop-time",
            &stop,
            "-o",
            &one.display().to_string(),
        ]);
        assert!(alone.status.success(), "{label}: {}", show(&alone));
        for size in (2..=4).filter(|&k| k <= names.len()) {
            let reversed = dir.path().join(format!("{e}-{size}.partition"));
            std::fs::write(&reversed, common::reversed_partition(&names, size)).unwrap();
            let reversed = reversed.display().to_string();
            for partition in [None, Some(reversed.as_str())] {
                let many = dir.path().join(format!("many-{e}-{size}.csv"));
                let many_text = many.display().to_string();
                let mut args = vec!["run", &target, "--stop-time", &stop, "-o", &many_text];
                if let Some(file) = partition {
                    args.extend(["--partition", file]);
                }
                let spread = mpirun(size, &args);
                assert!(
                    spread.status.success(),
                    "{label}, {size} ranks, {partition:?}: {}",
                    show(&spread)
                );
                assert!(
                    std::fs::read(&one).unwrap() == std::fs::read(&many).unwrap(),
                    "{label}, {size} ranks, {partition:?}: another result file than one process'"
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 25, "{compared} runs under mpirun compared");
    assert!(
        rims >= 2,
        "{rims} examples under the reduced interface model"
    );
}

/// Every example of `fmus/` whose own algorithm is Jacobi, Gauss-Seidel or implicit, under
/// Gauss-Seidel, Jacobi with ExSLocal control and implicit with ImSLocal control, cut to 100
/// macro steps, under `mpirun -n 3` (2 for two components), split by measured cost and by the
/// reversed partition in turn: the result file is one process', byte for byte; a combination
/// one process refuses is refused under mpirun too. (All six algorithms of the thread-rank
/// test, on 2 and 3 thread ranks with both partitions: `tests/distribute_threads.rs`.)
#[test]
fn every_example_under_every_algorithm_that_spreads_gives_one_process_bytes() {
    if !have_mpirun() {
        return;
    }
    let dir = temp_dir();
    // Three of the thread ranks' six (which run all six with both partitions): the point to
    // point exchange (Gauss-Seidel), step control's exactly rounded norms merged over ranks
    // (Jacobi with ExSLocal), the implicit corrector's collectives.
    let adaptive = |algorithm, estimator| {
        [
            "--algorithm",
            algorithm,
            "--order",
            "2",
            "--adaptive",
            "--estimator",
            estimator,
        ]
    };
    let variants: [Vec<&str>; 3] = [
        vec!["--algorithm", "gauss-seidel", "--order", "0"],
        adaptive("jacobi", "ExSLocal").to_vec(),
        adaptive("implicit", "ImSLocal").to_vec(),
    ];
    let (mut compared, mut refused, mut turn) = (0, 0, 0);
    for (e, example) in common::example_systems().iter().enumerate() {
        let label = example.file_name().unwrap().to_string_lossy().into_owned();
        let outline = common::example_outline(example, 100.0);
        let (stop, names) = (outline.stop.to_string(), outline.names);
        let own = matches!(
            outline.algorithm,
            cosimo::settings::Algorithm::Jacobi(_)
                | cosimo::settings::Algorithm::GaussSeidel(_)
                | cosimo::settings::Algorithm::Implicit(_)
        );
        if !own {
            continue;
        }
        let size = names.len().min(3);
        let reversed = dir.path().join(format!("{e}.partition"));
        std::fs::write(&reversed, common::reversed_partition(&names, size)).unwrap();
        let reversed = reversed.display().to_string();
        let target = example.display().to_string();
        for (v, variant) in variants.iter().enumerate() {
            let at = format!("{label} with {}", variant.join(" "));
            let one = dir
                .path()
                .join(format!("one-{e}-{v}.csv"))
                .display()
                .to_string();
            let many = dir
                .path()
                .join(format!("many-{e}-{v}.csv"))
                .display()
                .to_string();
            let mut args = vec!["run", &target, "--stop-time", &stop];
            args.extend_from_slice(variant);
            let alone = cosimo(args.iter().copied().chain(["-o", one.as_str()]));
            let mut spread_args = args.clone();
            spread_args.extend(["-o", many.as_str()]);
            turn += 1;
            if turn % 2 == 0 {
                spread_args.extend(["--partition", reversed.as_str()]);
            }
            let spread = mpirun(size, &spread_args);
            if alone.status.code() == Some(2) {
                assert_eq!(spread.status.code(), Some(2), "{at}: {}", show(&spread));
                assert!(
                    first_error(&spread).starts_with(&first_error(&alone)),
                    "{at}: refused otherwise under mpirun:\n{}\n{}",
                    show(&alone),
                    show(&spread)
                );
                refused += 1;
                continue;
            }
            assert!(alone.status.success(), "{at}: {}", show(&alone));
            assert!(
                spread.status.success(),
                "{at}, {size} ranks: {}",
                show(&spread)
            );
            assert!(
                std::fs::read(&one).unwrap() == std::fs::read(&many).unwrap(),
                "{at}, {size} ranks: another result file than one process'"
            );
            compared += 1;
        }
    }
    eprintln!("{compared} runs under mpirun compared with one process, {refused} refused alike");
    assert!(compared >= 20, "{compared} runs under mpirun compared");
}
