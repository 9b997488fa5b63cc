//! One system over ranks that are threads of this process (`distribute::threads`): the rows
//! rank 0 sees equal one process' bit for bit, for Jacobi and Gauss-Seidel, along the coupling
//! order and as the file splits it; what cannot spread is refused before anything is loaded.
//! The same run under `mpirun` is `tests/run_mpi.rs` (feature `mpi`).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::temp_dir;
use cosimo::distribute::threads::in_process;
use cosimo::master::record::{Cell, Row};
use cosimo::master::run::{self as run_loop, Observer};
use cosimo::master::transport::Transport;
use cosimo::request::{prepare_on_ranks, RunRequest};
use cosimo::Error;
use serde_json::{json, Value};

/// The rows of a run: Floats as their bits, the other cells as written.
#[derive(Default)]
struct Rows(Vec<Vec<String>>);

impl Observer for Rows {
    fn row(&mut self, row: &Row) -> cosimo::Result<()> {
        let mut cells = vec![format!("{:x}", row.time.to_bits())];
        for cell in &row.cells {
            cells.push(match cell {
                Cell::Float(x) => format!("{:x}", x.to_bits()),
                other => format!("{other:?}"),
            });
        }
        self.0.push(cells);
        Ok(())
    }
}

/// The example `name` of fmus/ with `edit`, written into `dir` (FMU paths made absolute).
fn system(dir: &Path, name: &str, label: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let fmus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus");
    let mut value: Value =
        serde_json::from_str(&std::fs::read_to_string(fmus.join(name)).unwrap()).unwrap();
    for component in value["components"].as_array_mut().unwrap() {
        let fmu = component["fmu"].as_str().unwrap().to_string();
        component["fmu"] = json!(fmus.join(fmu).display().to_string());
    }
    edit(&mut value);
    let path = dir.join(format!("{label}.json"));
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

/// The run of `path` on one rank of `transport` (`None`: one process): rank 0's rows.
fn run(path: &Path, transport: Option<Arc<dyn Transport>>) -> Result<Vec<Vec<String>>, Error> {
    let request = RunRequest {
        targets: vec![path.display().to_string()],
        ..RunRequest::default()
    };
    let mut prepared = prepare_on_ranks(&request, transport, &mut |_| {})?;
    let mut rows = Rows::default();
    let mut observers: Vec<&mut dyn Observer> = vec![&mut rows];
    run_loop::run(&mut prepared.execution, &mut observers)?;
    Ok(rows.0)
}

/// The run of `path` over `size` thread ranks: every rank's outcome, in rank order.
fn run_on_threads(path: &Path, size: usize) -> Vec<Result<Vec<Vec<String>>, Error>> {
    let ranks = in_process(size);
    std::thread::scope(|scope| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|t| scope.spawn(move || run(path, Some(t))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a rank ran"))
            .collect()
    })
}

fn same_rows_on(path: &Path, size: usize, label: &str) {
    let alone = run(path, None).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(alone.len() > 10, "{label}: hardly any rows");
    for (rank, outcome) in run_on_threads(path, size).into_iter().enumerate() {
        let rows = outcome.unwrap_or_else(|e| panic!("{label}, rank {rank} of {size}: {e}"));
        // Every rank holds the whole row (rank 0 writes it).
        assert!(
            rows == alone,
            "{label}: rank {rank} of {size} saw other rows than one process"
        );
    }
}

#[test]
fn thread_ranks_give_one_process_bits() {
    let dir = temp_dir();
    for (algorithm, order) in [("jacobi", 0), ("gauss-seidel", 0), ("jacobi", 2)] {
        let label = format!("two-mass-{algorithm}-{order}");
        let set = |x: &mut Value| {
            x["experiment"]["algorithm"] = json!(algorithm);
            x["experiment"]["extrapolationOrder"] = json!(order);
            x["experiment"]["stopTime"] = json!(0.3);
        };
        let path = system(dir.path(), "two-mass-force-force.json", &label, set);
        same_rows_on(&path, 2, &label);
        same_rows_on(&path, 3, &label);
        let given = system(dir.path(), "two-mass-force-force.json", "given", |x| {
            set(x);
            for (c, rank) in [1, 0, 1].iter().enumerate() {
                x["components"][c]["rank"] = json!(rank);
            }
        });
        same_rows_on(&given, 2, &format!("{label}, split by the file"));
    }
    let chain = system(dir.path(), "conformance-chain.json", "chain", |_| {});
    same_rows_on(&chain, 3, "the chain (gauss-seidel)");
}

#[test]
fn what_cannot_spread_is_refused_on_every_rank_before_loading() {
    let dir = temp_dir();
    let missing = |x: &mut Value| x["components"][0]["fmu"] = json!("/nowhere/missing.fmu");
    let refused = |path: &Path, size: usize, expected: &str| {
        for outcome in run_on_threads(path, size) {
            match outcome {
                Err(Error::Usage(message)) if message.contains(expected) => {}
                other => panic!(
                    "expected a refusal saying {expected:?}, got {:?}",
                    other.err()
                ),
            }
        }
    };
    let implicit = system(dir.path(), "two-mass-force-force.json", "implicit", |x| {
        missing(x);
        x["experiment"]["algorithm"] = json!("implicit");
    });
    refused(
        &implicit,
        2,
        "the implicit algorithm does not run over 2 MPI ranks yet",
    );
    let parallel = system(dir.path(), "two-mass-force-force.json", "parallel", |x| {
        missing(x);
        x["experiment"]["parallel"] = json!(true);
    });
    refused(&parallel, 2, "--parallel does not run over 2 MPI ranks");
    let many = system(dir.path(), "two-mass-force-force.json", "many", missing);
    refused(&many, 4, "can use at most 3 MPI ranks, not 4");
    let idle = system(dir.path(), "two-mass-force-force.json", "idle", |x| {
        missing(x);
        for c in 0..3 {
            x["components"][c]["rank"] = json!(0);
        }
    });
    refused(&idle, 2, "MPI rank 1 would have nothing to do");
}

#[test]
fn a_component_that_cannot_be_instantiated_on_rank_1_ends_every_rank() {
    let dir = temp_dir();
    // The library the model description names is not there: opening reads the description,
    // instantiating (on the owner only) fails.
    let broken = common::unpacked_with_edit(
        "Oscillator",
        3,
        "modelIdentifier=\"Oscillator\"",
        "modelIdentifier=\"NotThere\"",
    );
    let path = system(dir.path(), "two-mass-force-force.json", "broken", |x| {
        x["components"][2]["fmu"] = json!(broken.path().display().to_string());
        for (c, rank) in [0, 0, 1].iter().enumerate() {
            x["components"][c]["rank"] = json!(rank);
        }
    });
    let alone = match run(&path, None) {
        Err(error) => error.to_string(),
        Ok(_) => panic!("the broken FMU ran"),
    };
    for (rank, outcome) in run_on_threads(&path, 2).into_iter().enumerate() {
        match outcome {
            Err(Error::OnRank {
                rank: 1, message, ..
            }) if message == alone => {}
            other => panic!(
                "rank {rank}: expected one process' error ({alone}) from rank 1, got {:?}",
                other.err()
            ),
        }
    }
}
