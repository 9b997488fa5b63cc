//! One system over ranks that are threads of this process (`distribute::threads`): the rows
//! rank 0 sees equal one process' bit for bit, for Jacobi, Gauss-Seidel and the implicit
//! algorithm (fixed steps and macro-step control with every estimator), constraint coupling,
//! the reduced interface model and algebraic loops (on one rank or split), along the coupling
//! order and as the system file, an SSP's annotations or `--partition FILE` split it; the split
//! by measured step cost gives an expensive component a rank of its own and keeps a loop on
//! one rank; what cannot spread and partitions that do not fit are refused before anything is
//! loaded. The same run under `mpirun` is `tests/run_mpi.rs` (feature `mpi`).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::systems::gain_chain_file;
use common::temp_dir;
use cosimo::distribute::threads::in_process;
use cosimo::distribute::{ChosenBy, Partition};
use cosimo::master::run::{self as run_loop, Observer};
use cosimo::master::transport::Transport;
use cosimo::request::{prepare_on_ranks, RunRequest};
use cosimo::Error;
use serde_json::{json, Value};

/// The example `name` of fmus/ with `edit`, written into `dir` (FMU paths made absolute).
fn system(dir: &Path, name: &str, label: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    // The examples name the packed FMUs in target/fmus.
    fmu_pack::packed_fmus().expect("the test FMUs pack");
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
    run_split(&request(path, None), transport).map(|(rows, _)| rows)
}

/// A request to run `path`, split as the file `partition` says.
fn request(path: &Path, partition: Option<&Path>) -> RunRequest {
    RunRequest {
        targets: vec![path.display().to_string()],
        partition: partition.map(Path::to_path_buf),
        ..RunRequest::default()
    }
}

/// What one rank saw: the rows and the partition.
type Split = Result<(Vec<Vec<String>>, Option<Partition>), Error>;

/// The run of `request` on one rank of `transport`: rank 0's rows and the partition.
fn run_split(request: &RunRequest, transport: Option<Arc<dyn Transport>>) -> Split {
    let mut prepared = prepare_on_ranks(request, transport, &mut |_| {})?;
    let mut rows = common::BitRows::default();
    let mut observers: Vec<&mut dyn Observer> = vec![&mut rows];
    run_loop::run(&mut prepared.execution, &mut observers)?;
    Ok((rows.0, prepared.partition))
}

/// The run of `path` over `size` thread ranks: every rank's outcome, in rank order.
fn run_on_threads(path: &Path, size: usize) -> Vec<Result<Vec<Vec<String>>, Error>> {
    split_on_threads(&request(path, None), size)
        .into_iter()
        .map(|outcome| outcome.map(|(rows, _)| rows))
        .collect()
}

/// The run of `request` over `size` thread ranks: every rank's rows and partition.
fn split_on_threads(request: &RunRequest, size: usize) -> Vec<Split> {
    let ranks = in_process(size);
    std::thread::scope(|scope| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|t| scope.spawn(move || run_split(request, Some(t))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a rank ran"))
            .collect()
    })
}

/// `request` over `size` thread ranks gives one process' rows of `path` on every rank, and
/// every rank the same partition, which it returns.
fn same_rows_split(path: &Path, request: &RunRequest, size: usize, label: &str) -> Partition {
    let alone = run(path, None).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(alone.len() > 10, "{label}: hardly any rows");
    let mut partitions = Vec::new();
    for (rank, outcome) in split_on_threads(request, size).into_iter().enumerate() {
        let (rows, partition) =
            outcome.unwrap_or_else(|e| panic!("{label}, rank {rank} of {size}: {e}"));
        assert!(
            rows == alone,
            "{label}: rank {rank} of {size} saw other rows than one process"
        );
        partitions.push(partition.expect("a run over ranks has a partition"));
    }
    assert!(
        partitions.windows(2).all(|w| w[0] == w[1]),
        "{label}: the ranks chose different partitions: {partitions:?}"
    );
    partitions.remove(0)
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

/// Macro-step size and order control with each explicit estimator, under Jacobi and
/// Gauss-Seidel: every rank takes the same decisions (the norms over coupling values are
/// exactly rounded sums of every rank's part; the states the ExLocal / ExMilne estimators
/// measure are read by their owners and shared), so rank 0's rows are one process' bits, on
/// 2 and 3 ranks.
#[test]
fn step_and_order_control_with_the_explicit_estimators_gives_one_process_bits() {
    let dir = temp_dir();
    for algorithm in ["jacobi", "gauss-seidel"] {
        for estimator in ["ExSLocal", "ExLocal", "ExMilne"] {
            let label = format!("two-mass-{algorithm}-{estimator}");
            let path = system(dir.path(), "two-mass-force-force.json", &label, |x| {
                x["experiment"]["algorithm"] = json!(algorithm);
                x["experiment"]["extrapolationOrder"] = json!(2);
                x["experiment"]["stopTime"] = json!(0.3);
                x["experiment"]["stepControl"] = json!({"estimator": estimator});
            });
            same_rows_on(&path, 2, &label);
            same_rows_on(&path, 3, &label);
        }
    }
}

/// The implicit algorithm with each interface Jacobian the kit FMUs support (repeated system
/// steps; component steps with the spring's directional derivatives, fresh or reused): the
/// owners repeat their components' steps and share the Jacobian's entries, every rank solves
/// the same interface system, so rank 0's rows are one process' bits, on 2 and 3 ranks.
#[test]
fn the_implicit_algorithm_gives_one_process_bits() {
    let dir = temp_dir();
    for (jacobian, reuse) in [
        ("system", false),
        ("components", false),
        ("components", true),
    ] {
        let label = format!("two-mass-implicit-{jacobian}-reuse-{reuse}");
        let set = |x: &mut Value| {
            x["experiment"]["algorithm"] = json!("implicit");
            x["experiment"]["extrapolationOrder"] = json!(2);
            x["experiment"]["stopTime"] = json!(0.3);
            x["experiment"]["corrector"] = json!({"jacobian": jacobian, "reuseJacobian": reuse});
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
    // The extended coupling: the source FMUs' output derivatives (D) and integrals (I) are
    // read by their owners and shared.
    for extension in ["derivative", "integral"] {
        let label = format!("two-mass-extended-{extension}");
        let path = system(dir.path(), "two-mass-extended.json", &label, |x| {
            x["experiment"]["stopTime"] = json!(0.3);
            x["experiment"]["corrector"]["extension"] = json!(extension);
        });
        same_rows_on(&path, 2, &label);
        same_rows_on(&path, 3, &label);
    }
}

/// Constraint coupling (the rigid link between two masses, the double pendulum): the
/// interface values and the accelerations' partials are read by their owners and shared, and
/// every rank solves for the same multipliers: one process' bits on 2 ranks (the examples
/// have two components).
#[test]
fn constraint_coupling_gives_one_process_bits() {
    let dir = temp_dir();
    for (name, method) in [
        ("rigid-link.json", "index1"),
        ("rigid-link.json", "baumgarte"),
        ("double-pendulum.json", "index1"),
    ] {
        let label = format!("{name}-{method}");
        let path = system(dir.path(), name, &label, |x| {
            x["experiment"]["stopTime"] = json!(0.2);
            let constraints = &mut x["experiment"]["constraints"];
            constraints["method"] = json!(method);
            if method == "baumgarte" {
                constraints.as_object_mut().map(|c| c.remove("order"));
            }
        });
        same_rows_on(&path, 2, &label);
    }
}

/// The reduced interface model (the cranes of Peiret et al.): the multibody's owner computes
/// the effective mass and force, the fast components' forces travel once per fast step, and
/// every rank integrates the same reduced model: one process' bits on 2 ranks (and 3 for the
/// double crane), split by measured cost and reversed, for each way to get the effective mass,
/// each integrator and either force for the multibody step.
#[test]
fn the_reduced_interface_model_gives_one_process_bits() {
    let dir = temp_dir();
    let variants: [(&str, &str, Value); 5] = [
        ("crane-single.json", "derivatives", json!({})),
        ("crane-double.json", "derivatives", json!({})),
        (
            "crane-double.json",
            "perturbation-averaged",
            json!({"effectiveMass": "perturbation", "multibodyForce": "averaged"}),
        ),
        (
            "crane-single.json",
            "held-force-exact",
            json!({"integrator": "held-force-exact"}),
        ),
        (
            "crane-double.json",
            "averaged-exact",
            json!({"integrator": "held-force-exact", "multibodyForce": "averaged"}),
        ),
    ];
    for (name, variant, settings) in variants {
        let label = format!("{name}-{variant}");
        let path = system(dir.path(), name, &label, |x| {
            x["experiment"]["stopTime"] = json!(0.6);
            for (key, value) in settings.as_object().unwrap() {
                x["experiment"]["rim"][key] = value.clone();
            }
        });
        let components = if name == "crane-double.json" { 3 } else { 2 };
        for size in 2..=components {
            same_rows_on(&path, size, &label);
            let names: Vec<String> = ["crane", "cyl1", "cyl2"][..components]
                .iter()
                .map(|n| n.to_string())
                .collect();
            let reversed = dir.path().join(format!("{label}-{size}.partition"));
            std::fs::write(&reversed, common::reversed_partition(&names, size)).unwrap();
            same_rows_split(
                &path,
                &request(&path, Some(&reversed)),
                size,
                &format!("{label}, reversed"),
            );
        }
    }
}

/// A crane with a Faulty FMU among its fast components, on rank 1, the crane on rank 0 and its
/// cylinder on either (the fast components over two ranks, or all on rank 1: then the fast
/// loop runs there alone): with `failure` 2 its step fails in the fast loop at t = 1.2, and
/// every rank ends with one process' error from rank 1; with `failure` 4 it asks to end the
/// run there, and every rank's rows are one process' bits.
#[test]
fn a_fast_component_that_fails_or_ends_the_run_on_rank_1_ends_every_rank() {
    for cylinder in [0, 1] {
        fast_component_fails_or_ends_the_run(cylinder);
    }
}

fn fast_component_fails_or_ends_the_run(cylinder: usize) {
    let dir = temp_dir();
    let faulty = common::fmu("Faulty", 2).display().to_string();
    let with_faulty = |failure: i32| {
        let label = format!("crane-faulty-{failure}");
        system(dir.path(), "crane-single.json", &label, |x| {
            x["experiment"]["stopTime"] = json!(2.0);
            x["experiment"]["rim"]["multibodyForce"] = json!(["held", "averaged"][cylinder]);
            x["components"].as_array_mut().unwrap().push(json!({
                "name": "faulty",
                "fmu": faulty,
                "parameters": {"failure": failure, "fail_at": 1.2001}
            }));
            for (c, rank) in [0, cylinder, 1].iter().enumerate() {
                x["components"][c]["rank"] = json!(rank);
            }
        })
    };
    let failing = with_faulty(2);
    let alone = fails_from_rank_1_as_in_one_process(&failing, "a failing fast FMU");
    assert!(alone.contains("simulated failure"), "{alone}");
    let ending = with_faulty(4);
    let rows = run(&ending, None).unwrap_or_else(|e| panic!("ending: {e}"));
    let last = rows
        .last()
        .map(|row| f64::from_bits(u64::from_str_radix(&row[0], 16).unwrap()));
    assert!(
        last.is_some_and(|t| t > 1.19 && t < 1.21),
        "the run ends where the Faulty FMU asks: {last:?}"
    );
    same_rows_on(&ending, 2, "ending on rank 1");
}

/// Macro-step size and order control with the implicit estimators (ImSLocal on the coupling
/// values, ImMilne on the states the owners read): one process' bits on 2 and 3 ranks.
#[test]
fn step_and_order_control_with_the_implicit_estimators_gives_one_process_bits() {
    let dir = temp_dir();
    for estimator in ["ImSLocal", "ImMilne"] {
        let label = format!("two-mass-implicit-adaptive-{estimator}");
        let path = system(dir.path(), "two-mass-implicit-adaptive.json", &label, |x| {
            x["experiment"]["stopTime"] = json!(0.3);
            x["experiment"]["stepControl"]["estimator"] = json!(estimator);
        });
        same_rows_on(&path, 2, &label);
        same_rows_on(&path, 3, &label);
    }
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

/// `path` fails in one process, and over 2 thread ranks every rank ends with that error (the
/// simulation's, from rank 1); one process' message.
fn fails_from_rank_1_as_in_one_process(path: &Path, label: &str) -> String {
    let alone = match run(path, None) {
        Err(error) => error.to_string(),
        Ok(_) => panic!("{label}: the run did not fail"),
    };
    for (rank, outcome) in run_on_threads(path, 2).into_iter().enumerate() {
        let error = outcome.err().map(|e| (e.to_string(), e));
        match &error {
            Some((said, Error::Simulation { source, .. }))
                if said.starts_with(&alone)
                    && matches!(**source, Error::OnRank { rank: 1, .. }) => {}
            _ => panic!(
                "{label}, rank {rank}: expected one process' error ({alone}) from rank 1, got {error:?}"
            ),
        }
    }
    alone
}

/// A value that turns infinite in the exchange, read fresh on rank 1 (a Gain of 1e308 whose
/// output feeds through from the time ramp of a Faulty FMU on rank 0, infinite from t = 1.8):
/// every rank ends with the error one process gives, from rank 1, at the same time.
#[test]
fn a_non_finite_value_read_in_the_exchange_on_rank_1_ends_every_rank() {
    let dir = temp_dir();
    let fmu = kit_fmu;
    let system = json!({
        "components": [
            {"name": "f", "fmu": fmu("Faulty"), "rank": 0},
            {"name": "g", "fmu": fmu("Gain"), "rank": 1, "parameters": {"k": 1e308}},
            {"name": "h", "fmu": fmu("Gain"), "rank": 1}
        ],
        "connections": [{"from": "f.x", "to": "g.u"}, {"from": "g.y", "to": "h.u"}],
        "experiment": {"stopTime": 2.0, "stepSize": 0.1}
    });
    let path = written(dir.path(), "infinite.json", &system);
    let alone = fails_from_rank_1_as_in_one_process(&path, "the infinity");
    assert!(alone.contains("g.y is inf"), "{alone}");
}

/// A divergence limit under Jacobi and Gauss-Seidel, whose coupling values only their
/// targets' owners hold: each rank checks the connections into its own components and the
/// ranks agree on the first beyond the limit. A time ramp f.x feeds g (rank 1), whose output
/// feeds h (rank 0) unchanged: both values pass the limit in the same step, and every rank
/// names f.x -> g.u, the first connection, as one process does (rank 0 sees only g.y -> h.u).
#[test]
fn a_divergence_limit_names_one_process_first_value_on_every_rank() {
    let dir = temp_dir();
    let fmu = kit_fmu;
    for algorithm in ["jacobi", "gauss-seidel"] {
        let system = json!({
            "components": [
                {"name": "f", "fmu": fmu("Faulty"), "rank": 1},
                {"name": "g", "fmu": fmu("Gain"), "rank": 1, "parameters": {"k": 1.0}},
                {"name": "h", "fmu": fmu("Gain"), "rank": 0, "parameters": {"k": 0.5}}
            ],
            "connections": [{"from": "f.x", "to": "g.u"}, {"from": "g.y", "to": "h.u"}],
            "experiment": {"stopTime": 1.5, "stepSize": 0.1, "algorithm": algorithm,
                           "divergenceLimit": 0.95}
        });
        let path = written(dir.path(), format!("limited-{algorithm}.json"), &system);
        let alone = match run(&path, None) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("{algorithm}: the limit was not passed"),
        };
        assert!(
            alone.contains("t = 1:") && alone.contains("the coupling value f.x -> g.u"),
            "{algorithm}: {alone}"
        );
        for (rank, outcome) in run_on_threads(&path, 2).into_iter().enumerate() {
            let (said, _) = error_and_rank(outcome);
            assert_eq!(said, alone, "{algorithm}, rank {rank}");
        }
    }
}

/// A test FMU's FMI 2 file, the kit packed first.
fn kit_fmu(model: &str) -> String {
    fmu_pack::packed_fmus().expect("the test FMUs pack");
    common::fmu(model, 2).display().to_string()
}

/// `system` written as `name` in `dir`.
fn written(dir: &Path, name: impl AsRef<Path>, system: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, system.to_string()).unwrap();
    path
}

/// The two masses as a partition file lists them.
const FILE_SPLIT: &str = "# mass 2 and mass 1 on rank 1\nmass2 1\n\nspring\t0\nmass1 1\n";

#[test]
fn a_partition_file_wins_over_the_system_and_gives_one_process_bits() {
    let dir = temp_dir();
    let file = dir.path().join("split.txt");
    std::fs::write(&file, FILE_SPLIT).unwrap();
    for algorithm in ["jacobi", "gauss-seidel"] {
        let label = format!("file-{algorithm}");
        // The system's own ranks, which the file overrides.
        let path = system(dir.path(), "two-mass-force-force.json", &label, |x| {
            x["experiment"]["algorithm"] = json!(algorithm);
            x["experiment"]["stopTime"] = json!(0.3);
            for (c, rank) in [0, 0, 1].iter().enumerate() {
                x["components"][c]["rank"] = json!(rank);
            }
        });
        let partition = same_rows_split(&path, &request(&path, Some(&file)), 2, &label);
        assert_eq!(partition.owner, vec![1, 0, 1], "{label}");
        assert_eq!(partition.chosen_by, ChosenBy::File(file.clone()), "{label}");
        // Without the file, the system's own.
        let own = same_rows_split(&path, &request(&path, None), 2, &label);
        assert_eq!(own.owner, vec![0, 0, 1], "{label}");
        assert_eq!(own.chosen_by, ChosenBy::System, "{label}");
    }
}

/// The SSP twin of the two masses, with `annotate(k)` in the k-th component's annotations
/// (none where it gives `None`), written into `dir` as `name.ssp`.
fn annotated_ssp(dir: &Path, name: &str, annotate: impl Fn(usize) -> Option<String>) -> PathBuf {
    fmu_pack::packed_fmus().expect("the test FMUs pack");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ssd =
        std::fs::read_to_string(root.join("fmus/two-mass-force-force.ssp/SystemStructure.ssd"))
            .unwrap()
            .replace(
                "../../target/fmus",
                &root.join("target/fmus").display().to_string(),
            );
    let mut parts = ssd.split("</ssd:Component>");
    let mut text = parts.next().unwrap_or_default().to_string();
    for (k, rest) in parts.enumerate() {
        if let Some(attributes) = annotate(k) {
            text += &format!(
                "<ssc:Annotations><ssc:Annotation type=\"org.cosimo.component\"><cosimo:Component {attributes}/></ssc:Annotation></ssc:Annotations>"
            );
        }
        text += "</ssd:Component>";
        text += rest;
    }
    let folder = dir.join(format!("{name}.ssp"));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("SystemStructure.ssd"), text).unwrap();
    folder
}

#[test]
fn an_ssp_annotation_gives_each_component_its_rank() {
    let dir = temp_dir();
    let ranks = [1, 0, 1];
    let ssp = annotated_ssp(dir.path(), "ranked", |k| {
        ranks.get(k).map(|r| format!("rank=\"{r}\""))
    });
    let partition = same_rows_split(&ssp, &request(&ssp, None), 2, "ssp");
    assert_eq!(partition.owner, ranks.to_vec());
    assert_eq!(partition.chosen_by, ChosenBy::System);
    // The file still wins.
    let file = dir.path().join("split.txt");
    std::fs::write(&file, "mass1 0\nspring 1\nmass2 1\n").unwrap();
    let partition = same_rows_split(&ssp, &request(&ssp, Some(&file)), 2, "ssp and file");
    assert_eq!(partition.owner, vec![0, 1, 1]);
    // Every component or none, and a rank is a number: refused with the .ssd's line.
    let some = annotated_ssp(dir.path(), "some", |k| {
        (k == 1).then(|| "rank=\"0\"".into())
    });
    let refused = |ssp: &Path, expected: &str| match run(ssp, None) {
        Err(Error::Usage(message)) if message.contains(expected) => {}
        other => panic!(
            "expected a refusal saying {expected:?}, got {:?}",
            other.err()
        ),
    };
    refused(
        &some,
        "SystemStructure.ssd:14: component \"mass1\" has no rank while \"spring\"",
    );
    let word = annotated_ssp(dir.path(), "word", |_| Some("rank=\"first\"".into()));
    refused(&word, "rank=\"first\" is not an MPI rank");
}

#[test]
fn partition_files_that_do_not_fit_are_refused_with_file_and_line() {
    let dir = temp_dir();
    let path = system(dir.path(), "two-mass-force-force.json", "refused", |x| {
        // Refused before anything is loaded.
        x["components"][0]["fmu"] = json!("/nowhere/missing.fmu");
    });
    let refused = |text: &str, size: usize, expected: &str| {
        let file = dir.path().join("partition.txt");
        std::fs::write(&file, text).unwrap();
        let shown = format!("--partition {}", file.display());
        for outcome in split_on_threads(&request(&path, Some(&file)), size) {
            match outcome {
                Err(Error::Usage(message))
                    if message.starts_with(&shown) && message.contains(expected) => {}
                other => panic!(
                    "{text:?}: expected a refusal saying {expected:?}, got {:?}",
                    other.err()
                ),
            }
        }
    };
    refused(
        "mass1 0\nspring 1\nmass3 1\n",
        2,
        ":3: the system has no component \"mass3\"",
    );
    refused("mass1 0\nspring 1\n", 2, "missing: \"mass2\"");
    refused(
        "mass1 0\nspring 2\nmass2 1\n",
        2,
        ":2: component \"spring\" is given rank 2, but the run has 2 MPI ranks",
    );
    refused(
        "mass1 0\nspring 1\nmass2 1\nmass1 1\n",
        2,
        ":4: component \"mass1\" is named again (first on line 1)",
    );
    refused(
        "mass1 0\nspring 0\nmass2 0\n",
        3,
        "MPI rank 1 would have nothing to do",
    );
    refused("mass1 zero\n", 2, ":1: \"zero\" is not an MPI rank");
    // In one process the file would have nothing to split.
    let file = dir.path().join("fine.txt");
    std::fs::write(&file, FILE_SPLIT).unwrap();
    match run_split(&request(&path, Some(&file)), None) {
        Err(Error::Usage(message)) if message.contains("this run is one process") => {}
        other => panic!("expected a refusal in one process, got {:?}", other.err()),
    }
}

#[test]
fn the_split_by_measured_cost_gives_an_expensive_component_a_rank_of_its_own() {
    let dir = temp_dir();
    // By count, 2 + 2 + 2 and 2 + 2; the costs put the busy Gain alone.
    let chain = gain_chain_file(dir.path(), &["g0", "g1", "busy", "g2", "g3", "g4"]);
    let partition = same_rows_split(&chain, &request(&chain, None), 3, "chain of 6");
    assert_eq!(partition.chosen_by, ChosenBy::Measured);
    assert_eq!(partition.owner, vec![0, 0, 1, 2, 2, 2], "{partition:?}");
    let costs = partition.costs.expect("measured costs");
    assert!(costs[2] > 1e6, "the busy Gain spins 2 ms a step: {costs:?}");
    let first = gain_chain_file(dir.path(), &["busy", "g1", "g2", "g3"]);
    let partition = same_rows_split(&first, &request(&first, None), 2, "busy first");
    assert_eq!(partition.owner, vec![0, 1, 1, 1], "{partition:?}");
    // A run too short to time a step is split by count, and says why.
    let short = system(dir.path(), "two-mass-force-force.json", "short", |x| {
        x["experiment"]["stopTime"] = json!(1e-3);
        x["experiment"]["outputInterval"] = json!(1e-3);
    });
    for outcome in split_on_threads(&request(&short, None), 2) {
        let (_, partition) = outcome.unwrap_or_else(|e| panic!("short: {e}"));
        let partition = partition.expect("a partition");
        assert_eq!(partition.owner, vec![0, 0, 1]);
        assert!(
            matches!(&partition.chosen_by, ChosenBy::Count(why) if why.contains("too few macro steps")),
            "{partition:?}"
        );
    }
}

/// Every example of `fmus/` (system files and SSPs) whose algorithm runs over ranks, cut to
/// 200 macro steps: rank 0's rows are one process' bits on 2 and 3 ranks (where it has the
/// components), split along the coupling order by measured cost and by a partition file that
/// deals the components out in reverse (the cranes under the reduced interface model too).
#[test]
fn every_example_gives_one_process_bits_over_ranks_for_two_partitions() {
    let dir = temp_dir();
    let examples = common::example_systems();
    let (mut checked, mut rims) = (0, 0);
    for example in &examples {
        let label = example.file_name().unwrap().to_string_lossy().into_owned();
        let common::ExampleOutline {
            stop,
            names,
            algorithm,
        } = common::example_outline(example, 200.0);
        rims += usize::from(matches!(algorithm, cosimo::settings::Algorithm::Rim(_)));
        let cut = |partition: Option<&Path>| {
            let mut r = request(example, partition);
            r.overrides.stop = Some(stop);
            r
        };
        let alone = run_split(&cut(None), None)
            .unwrap_or_else(|e| panic!("{label}: {e}"))
            .0;
        for size in (2..=3).filter(|&k| k <= names.len()) {
            let reversed = dir.path().join(format!("{label}-{size}.partition"));
            std::fs::write(&reversed, common::reversed_partition(&names, size)).unwrap();
            for partition in [None, Some(reversed.as_path())] {
                for (rank, outcome) in split_on_threads(&cut(partition), size)
                    .into_iter()
                    .enumerate()
                {
                    let rows = outcome.unwrap_or_else(|e| {
                        panic!("{label}, rank {rank} of {size}, {partition:?}: {e}")
                    });
                    assert!(
                        rows.0 == alone,
                        "{label}, rank {rank} of {size}, {partition:?}: other rows than one process"
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} runs over ranks compared");
    assert!(
        rims >= 2,
        "{rims} examples under the reduced interface model"
    );
}

/// Threads inside a rank: `--parallel` places each rank's own components on threads, with
/// `--threads N` evenly and without it by the step costs the balancing trial measured and the
/// cores the rank has to itself, and the rows stay one process' bits.
#[test]
fn parallel_puts_each_ranks_own_components_on_threads() {
    let dir = temp_dir();
    let gain = common::fmu("Gain", 2).display().to_string();
    let chain = |label: &str, cost: f64| -> PathBuf {
        let names = ["g0", "g1", "g2", "g3"];
        // Two Gains per rank, given: a split by measured cost may deal 1 and 3 under load.
        let components: Vec<Value> = names
            .iter()
            .enumerate()
            .map(|(k, name)| {
                json!({"name": name, "fmu": gain, "rank": k / 2,
                       "parameters": {"k": 0.5, "cost": cost}})
            })
            .collect();
        let connections: Vec<Value> = names
            .windows(2)
            .map(|w| json!({"from": format!("{}.y", w[0]), "to": format!("{}.u", w[1])}))
            .collect();
        let system = json!({
            "components": components,
            "connections": connections,
            "experiment": {"stopTime": 0.1, "stepSize": 1e-3, "parallel": true},
        });
        let path = written(dir.path(), format!("{label}.json"), &system);
        path
    };
    // Each rank's threads, after checking its rows against one process'.
    let threads_of = |path: &Path, threads: usize, label: &str| -> Vec<(usize, String)> {
        let request = RunRequest {
            threads,
            ..request(path, None)
        };
        let alone = run_split(&request, None)
            .unwrap_or_else(|e| panic!("{label}: {e}"))
            .0;
        let ranks = in_process(2);
        let outcomes: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = ranks
                .into_iter()
                .map(|t| {
                    let request = &request;
                    scope.spawn(move || -> Result<_, Error> {
                        let mut prepared = prepare_on_ranks(request, Some(t), &mut |_| {})?;
                        let mut rows = common::BitRows::default();
                        run_loop::run(&mut prepared.execution, &mut [&mut rows])?;
                        let placement = prepared.execution.parallel.clone();
                        Ok((rows.0, placement.expect("--parallel places the run")))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        outcomes
            .into_iter()
            .enumerate()
            .map(|(rank, outcome)| {
                let (rows, placement) =
                    outcome.unwrap_or_else(|e| panic!("{label}, rank {rank}: {e}"));
                assert!(rows == alone, "{label}: rank {rank} saw other rows");
                (placement.threads, placement.to_string())
            })
            .collect()
    };
    // --threads 2: each rank's two Gains on two threads, no trial.
    let chain = chain("chain", 3e-4);
    for (threads, said) in threads_of(&chain, 2, "--threads 2") {
        assert_eq!(threads, 2, "{said}");
        assert!(said.contains("2 threads of 2 allowed"), "{said}");
    }
    // Without --threads a rank takes the cores it has to itself: here the two ranks share the
    // host's cores, so on a machine of fewer than 4 each stays on one thread and says why
    // (where the threads pay is `parallel::tests`, the prediction).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for (threads, said) in threads_of(&chain, 0, "measured") {
        if cores < 4 {
            assert_eq!(threads, 1, "{said}");
            assert!(said.contains("2 rank(s) share this host"), "{said}");
        } else {
            assert!(said.contains("predicted"), "{said}");
        }
    }
}

/// A scenario over ranks: every rank plays it, the owners apply its sets (a connected input
/// biased and reset, a parameter overridden and undone at the end), and rank 0's rows are one
/// process' bits on 2 and 3 ranks.
#[test]
fn a_scenario_gives_one_process_bits_over_ranks() {
    use cosimo::master::scenario::ScenarioPlayer;
    use cosimo::settings::scenario::Scenario;
    let dir = temp_dir();
    let path = system(dir.path(), "two-mass-force-force.json", "scenario", |_| {});
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/scenarios/two-mass-scenario.json");
    let scenario = Arc::new(Scenario::read(&file).expect("the example scenario reads"));
    let played = |transport: Option<Arc<dyn Transport>>| -> Result<Vec<Vec<String>>, Error> {
        let mut prepared = prepare_on_ranks(&request(&path, None), transport, &mut |_| {})?;
        let start = prepared.system.experiment.start;
        let player = ScenarioPlayer::new(&prepared.execution, scenario.clone(), start)?;
        let mut rows = common::BitRows::default();
        run_loop::run_with_scenario(&mut prepared.execution, Some(player), &mut [&mut rows])?;
        Ok(rows.0)
    };
    let alone = played(None).expect("one process");
    let plain = run(&path, None).expect("without the scenario");
    assert!(alone != plain, "the scenario changes the run");
    for size in [2, 3] {
        let outcomes: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = in_process(size)
                .into_iter()
                .map(|t| scope.spawn(|| played(Some(t))))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let rows = outcome.unwrap_or_else(|e| panic!("rank {rank} of {size}: {e}"));
            assert!(rows == alone, "rank {rank} of {size} saw other rows");
        }
    }
}

/// A transport that counts what a rank sends: collectives it takes part in, and messages and
/// bytes to each other rank.
struct Counting {
    inner: Arc<dyn Transport>,
    collectives: std::sync::atomic::AtomicUsize,
    sent: std::sync::Mutex<Vec<(usize, usize)>>,
}

impl Counting {
    fn around(inner: Arc<dyn Transport>) -> Arc<Counting> {
        let size = inner.size();
        Arc::new(Counting {
            inner,
            collectives: Default::default(),
            sent: std::sync::Mutex::new(vec![(0, 0); size]),
        })
    }
    fn collective(&self) {
        self.collectives
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Transport for Counting {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        self.collective();
        self.inner.all_gather(mine)
    }
    fn broadcast(&self, root: usize, bytes: Vec<u8>) -> Vec<u8> {
        self.collective();
        self.inner.broadcast(root, bytes)
    }
    fn all_gather_known(&self, mine: &[u8], lengths: &[usize]) -> Vec<u8> {
        self.collective();
        self.inner.all_gather_known(mine, lengths)
    }
    fn broadcast_known(&self, root: usize, bytes: &mut [u8]) {
        self.collective();
        self.inner.broadcast_known(root, bytes)
    }
    fn exchange(
        &self,
        outgoing: &[u8],
        sends: &[(usize, usize)],
        incoming: &mut [u8],
        receives: &[(usize, usize)],
    ) {
        let mut sent = self.sent.lock().unwrap();
        for &(to, length) in sends {
            sent[to].0 += 1;
            sent[to].1 += length;
        }
        drop(sent);
        self.inner.exchange(outgoing, sends, incoming, receives)
    }
}

/// Decision 12: under Jacobi and Gauss-Seidel at fixed steps a coupling value goes from its
/// source's owner to its target's owner only, one message per neighbouring rank and round,
/// and one small status round per round reaches every rank. A chain of six Gains over three
/// ranks: rank 0 sends to rank 1 only, rank 1 to rank 2 only, rank 2 to nobody; the rows stay
/// one process' bits.
#[test]
fn coupling_values_go_to_the_neighbouring_ranks_only() {
    let dir = temp_dir();
    let names = ["g0", "g1", "g2", "g3", "g4", "g5"];
    let chain = gain_chain_file(dir.path(), &names);
    let partition = dir.path().join("pairs.txt");
    let lines: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(k, name)| format!("{name} {}", k / 2))
        .collect();
    std::fs::write(&partition, lines.join("\n")).unwrap();
    use cosimo::settings::AlgorithmKind;
    for (algorithm, kind) in [
        ("jacobi", AlgorithmKind::Jacobi),
        ("gauss-seidel", AlgorithmKind::GaussSeidel),
    ] {
        let mut request = request(&chain, Some(&partition));
        request.overrides.algorithm = Some(kind);
        let counting = counted_run(&request, 3, algorithm);
        let sent: Vec<Vec<(usize, usize)>> = counting
            .iter()
            .map(|c| c.sent.lock().unwrap().clone())
            .collect();
        let steps = 100;
        // Rank 0 sends g1.y to rank 1, rank 1 g3.y to rank 2: after every step (the source)
        // and in every exchange (the Gain feeds through, so it is read fresh); nothing else.
        for (from, to) in [(0, 1), (1, 2)] {
            let (messages, bytes) = sent[from][to];
            assert!(
                (2 * steps..2 * steps + 10).contains(&messages),
                "{algorithm}: rank {from} sent rank {to} {messages} messages"
            );
            // A status and one value each.
            assert_eq!(
                bytes,
                messages * 14,
                "{algorithm}: rank {from} to rank {to}"
            );
        }
        for (from, to) in [(0, 2), (1, 0), (2, 0), (2, 1)] {
            assert_eq!(
                sent[from][to],
                (0, 0),
                "{algorithm}: rank {from} to rank {to}"
            );
        }
        // Per macro step: a status round after the step and one after the exchange, and one
        // all-gather of the output row (a few more at the start; the dense exchange over
        // three ranks takes five per step: the sources, a broadcast per stretch, the row).
        let collectives = counting[0]
            .collectives
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            collectives < 3 * steps + steps / 5 + 60,
            "{algorithm}: {collectives} collectives in {steps} steps"
        );
        // On two ranks each sender also sends its bare status where it has no value for the
        // other (6 bytes), so each rank hears the other in every round and no status round
        // follows: only the row's all-gather per step is left.
        let halves = dir.path().join("halves.txt");
        let lines: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(k, name)| format!("{name} {}", k / 3))
            .collect();
        std::fs::write(&halves, lines.join("\n")).unwrap();
        let mut two = self::request(&chain, Some(&halves));
        two.overrides.algorithm = Some(kind);
        let counting = counted_run(&two, 2, algorithm);
        let back = counting[1].sent.lock().unwrap()[0];
        assert!(
            back.0 >= 2 * steps && back.1 == 6 * back.0,
            "{algorithm}: rank 1 sent rank 0 {back:?}"
        );
        let collectives = counting[0]
            .collectives
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            collectives < steps + steps / 5 + 60,
            "{algorithm}: {collectives} collectives in {steps} steps on two ranks"
        );
    }
}

/// A termination asked by an FMU on rank 1 (the Faulty FMU's terminateSimulation at t = 0.05)
/// under Jacobi and Gauss-Seidel on two ranks, where the wish rides in the point-to-point
/// messages and no status round follows: every rank ends where one process ends.
#[test]
fn a_termination_asked_on_rank_1_ends_two_ranks_where_one_process_ends() {
    let dir = temp_dir();
    let fmu = kit_fmu;
    for algorithm in ["jacobi", "gauss-seidel"] {
        let system = json!({
            "components": [
                {"name": "g", "fmu": fmu("Gain"), "rank": 0},
                {"name": "f", "fmu": fmu("Faulty"), "rank": 1,
                 "parameters": {"failure": 4, "fail_at": 0.05}},
                {"name": "h", "fmu": fmu("Gain"), "rank": 0}
            ],
            "connections": [{"from": "f.x", "to": "h.u"}, {"from": "h.y", "to": "g.u"}],
            "experiment": {"stopTime": 0.2, "stepSize": 0.001, "algorithm": algorithm}
        });
        let path = written(dir.path(), format!("terminate-{algorithm}.json"), &system);
        let alone = run(&path, None).unwrap_or_else(|e| panic!("{algorithm}: {e}"));
        // The rows hold each cell's bits in hex: the last row's time.
        let last = alone
            .last()
            .expect("rows")
            .first()
            .cloned()
            .unwrap_or_default();
        let last = f64::from_bits(u64::from_str_radix(&last, 16).expect("a time's bits"));
        assert!((last - 0.05).abs() < 1e-9, "{algorithm}: ends at {last}");
        same_rows_on(&path, 2, &format!("terminate under {algorithm}"));
    }
}

/// `request` over `size` thread ranks that count what they send: every rank's rows are one
/// process' bits; the counts, in rank order.
fn counted_run(request: &RunRequest, size: usize, label: &str) -> Vec<Arc<Counting>> {
    let alone = run_split(
        &RunRequest {
            partition: None,
            ..request.clone()
        },
        None,
    )
    .unwrap_or_else(|e| panic!("{label}: {e}"))
    .0;
    let counting: Vec<Arc<Counting>> = in_process(size).into_iter().map(Counting::around).collect();
    let outcomes: Vec<Split> = std::thread::scope(|scope| {
        let handles: Vec<_> = counting
            .iter()
            .map(|t| {
                let t = t.clone() as Arc<dyn Transport>;
                scope.spawn(move || run_split(request, Some(t)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        let rows = outcome
            .unwrap_or_else(|e| panic!("{label}, rank {rank}: {e}"))
            .0;
        assert!(rows == alone, "{label}: rank {rank} saw other rows");
    }
    counting
}

/// Macro-step size and order control with the explicit estimators goes point to point too:
/// each rank adds the error terms of the connections into its own components, and the ranks
/// merge their exactly rounded sums in one small collective, so every rank takes one process'
/// decisions without every coupling value. The two masses and the spring on three ranks:
/// values go between the spring's rank and each mass's, never from mass to mass.
#[test]
fn explicit_step_control_sends_coupling_values_to_the_neighbouring_ranks_only() {
    let dir = temp_dir();
    let partition = dir.path().join("one-each.txt");
    std::fs::write(&partition, "mass1 0\nspring 1\nmass2 2\n").unwrap();
    for algorithm in ["jacobi", "gauss-seidel"] {
        for estimator in ["ExSLocal", "ExMilne"] {
            let label = format!("{algorithm}-{estimator}");
            let path = system(dir.path(), "two-mass-force-force.json", &label, |x| {
                x["experiment"]["algorithm"] = json!(algorithm);
                x["experiment"]["extrapolationOrder"] = json!(2);
                x["experiment"]["stopTime"] = json!(0.3);
                x["experiment"]["stepControl"] = json!({"estimator": estimator});
            });
            let counting = counted_run(&request(&path, Some(&partition)), 3, &label);
            let sent: Vec<Vec<(usize, usize)>> = counting
                .iter()
                .map(|c| c.sent.lock().unwrap().clone())
                .collect();
            for (from, to) in [(0, 1), (1, 0), (1, 2), (2, 1)] {
                assert!(
                    sent[from][to].0 > 20,
                    "{label}: rank {from} sent rank {to} {:?}",
                    sent[from][to]
                );
            }
            for (from, to) in [(0, 2), (2, 0)] {
                assert_eq!(sent[from][to], (0, 0), "{label}: rank {from} to rank {to}");
            }
        }
    }
}

/// A step that fails on rank 1 (the Faulty FMU's doStep error at t = 0.05), under Jacobi and
/// Gauss-Seidel, whose values go to the neighbouring ranks only: every rank ends with one
/// process' error, from rank 1, and no rank waits for a message that does not come (rank 0's
/// Gain, after the failing FMU in the sweep, waits for its value).
#[test]
fn a_step_that_fails_on_rank_1_ends_every_rank_under_jacobi_and_gauss_seidel() {
    let dir = temp_dir();
    let fmu = kit_fmu;
    for algorithm in ["jacobi", "gauss-seidel"] {
        let system = json!({
            "components": [
                {"name": "f", "fmu": fmu("Faulty"), "rank": 1,
                 "parameters": {"failure": 2, "fail_at": 0.05}},
                {"name": "g", "fmu": fmu("Gain"), "rank": 0},
                {"name": "h", "fmu": fmu("Gain"), "rank": 1}
            ],
            "connections": [{"from": "f.x", "to": "g.u"}, {"from": "g.y", "to": "h.u"}],
            "experiment": {"stopTime": 0.2, "stepSize": 0.01, "algorithm": algorithm}
        });
        let path = written(dir.path(), format!("{algorithm}.json"), &system);
        let alone = fails_from_rank_1_as_in_one_process(&path, algorithm);
        assert!(alone.contains("fmi2DoStep"), "{alone}");
    }
}

/// Every example of `fmus/` whose own algorithm is Jacobi, Gauss-Seidel or implicit, run under
/// each of the explicit and implicit algorithms over ranks (Jacobi held and with order-2
/// extrapolation, Gauss-Seidel, implicit, Jacobi with ExSLocal step and order control, implicit
/// with ImSLocal control), cut to 100 macro steps: rank 0's rows are one process' bits on 2
/// and 3 ranks, split by measured cost and by the reversed partition. A combination one
/// process refuses (e.g. implicit with an FMU that cannot save its state) is refused over
/// ranks with the same message.
#[test]
fn every_example_under_every_algorithm_that_spreads_gives_one_process_bits() {
    use cosimo::settings::control::Estimator;
    use cosimo::settings::{Algorithm, AlgorithmKind};
    let dir = temp_dir();
    let variants: [(&str, AlgorithmKind, u8, Option<Estimator>); 6] = [
        ("jacobi", AlgorithmKind::Jacobi, 0, None),
        ("jacobi-2", AlgorithmKind::Jacobi, 2, None),
        ("gauss-seidel", AlgorithmKind::GaussSeidel, 0, None),
        ("implicit", AlgorithmKind::Implicit, 1, None),
        (
            "exslocal",
            AlgorithmKind::Jacobi,
            2,
            Some(Estimator::ExSLocal),
        ),
        (
            "imslocal",
            AlgorithmKind::Implicit,
            2,
            Some(Estimator::ImSLocal),
        ),
    ];
    let (mut compared, mut refused) = (0, 0);
    for example in common::example_systems() {
        let label = example.file_name().unwrap().to_string_lossy().into_owned();
        let common::ExampleOutline {
            stop,
            names,
            algorithm,
        } = common::example_outline(&example, 100.0);
        let own = matches!(
            algorithm,
            Algorithm::Jacobi(_) | Algorithm::GaussSeidel(_) | Algorithm::Implicit(_)
        );
        if !own {
            continue;
        }
        for (variant, kind, order, estimator) in variants {
            let label = format!("{label} under {variant}");
            let cut = |partition: Option<&Path>| {
                let mut r = request(&example, partition);
                r.overrides.stop = Some(stop);
                r.overrides.algorithm = Some(kind);
                r.overrides.extrapolation_order = Some(order);
                r.overrides.adaptive = estimator.is_some();
                r.overrides.estimator = estimator;
                r
            };
            let alone = match run_split(&cut(None), None) {
                Ok((rows, _)) => Ok(rows),
                Err(Error::Usage(message)) => Err(message),
                Err(error) => panic!("{label}: {error}"),
            };
            for size in (2..=3).filter(|&k| k <= names.len()) {
                let reversed = dir.path().join(format!("{variant}-{size}.partition"));
                std::fs::write(&reversed, common::reversed_partition(&names, size)).unwrap();
                for partition in [None, Some(reversed.as_path())] {
                    let outcomes = split_on_threads(&cut(partition), size);
                    for (rank, outcome) in outcomes.into_iter().enumerate() {
                        let at = format!("{label}, rank {rank} of {size}, {partition:?}");
                        match (&alone, outcome) {
                            (Ok(alone), Ok((rows, _))) => {
                                assert!(rows == *alone, "{at}: other rows than one process")
                            }
                            (Err(message), Err(Error::Usage(theirs)))
                            | (
                                Err(message),
                                Err(Error::OnRank {
                                    message: theirs, ..
                                }),
                            ) => {
                                assert_eq!(*message, theirs, "{at}")
                            }
                            (alone, theirs) => panic!(
                                "{at}: one process {:?}, over ranks {:?}",
                                alone.as_ref().err(),
                                theirs.err()
                            ),
                        }
                    }
                    match alone {
                        Ok(_) => compared += 1,
                        Err(_) => refused += 1,
                    }
                }
            }
        }
    }
    eprintln!("{compared} runs over ranks compared with one process, {refused} refused alike");
    assert!(
        compared >= 100,
        "{compared} runs over ranks compared ({refused} refused alike)"
    );
}

/// `--partition-out`: each component's stepping time over the whole run, measured on its
/// owner, balances the split for the next run. A chain of six Gains split by count puts the
/// Gain that spins 2 ms per step beside another; the run's times give it a rank of its own,
/// and the run with that file gives one process' bits.
#[test]
fn the_runs_own_stepping_times_write_a_balanced_partition() {
    let dir = temp_dir();
    let names = ["g0", "g1", "busy", "g2", "g3", "g4"];
    let chain = gain_chain_file(dir.path(), &names);
    let by_count = dir.path().join("by-count.txt");
    std::fs::write(&by_count, "g0 0\ng1 0\nbusy 1\ng2 1\ng3 2\ng4 2\n").unwrap();
    let written = dir.path().join("balanced.txt");
    let timed = RunRequest {
        partition_out: Some(written.clone()),
        ..request(&chain, Some(&by_count))
    };
    // Every rank writes the file it would (rank 0's CLI writes it): here each its own.
    let outcomes: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = in_process(3)
            .into_iter()
            .enumerate()
            .map(|(rank, t)| {
                let (timed, written) = (&timed, &written);
                scope.spawn(move || -> Result<_, Error> {
                    let mut prepared = prepare_on_ranks(timed, Some(t), &mut |_| {})?;
                    let stats = run_loop::run(&mut prepared.execution, &mut [])?;
                    let path = written.with_extension(rank.to_string());
                    let seconds = &stats.component_seconds;
                    let owner = cosimo::distribute::write_partition(
                        &path,
                        &prepared.execution,
                        seconds,
                        3,
                    )?;
                    Ok((seconds.clone(), owner, path))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (seconds, owner, path) = outcomes
        .into_iter()
        .next()
        .unwrap()
        .unwrap_or_else(|e| panic!("rank 0: {e}"));
    // 100 steps of 2 ms on the busy Gain's owner; the others a few microseconds a step.
    assert!(seconds[2] > 0.19 && seconds[2] < 1.0, "{seconds:?}");
    assert!(
        seconds.iter().enumerate().all(|(i, &s)| i == 2 || s < 0.05),
        "{seconds:?}"
    );
    assert_eq!(owner, vec![0, 0, 1, 2, 2, 2]);
    std::fs::rename(&path, &written).unwrap();
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(
        text.contains("busy 1\n") && text.contains("g2 2\n"),
        "{text}"
    );
    // The next run reads it as --partition.
    let partition = same_rows_split(&chain, &request(&chain, Some(&written)), 3, "balanced");
    assert_eq!(partition.owner, owner);
    // One process has no ranks to split for.
    let alone = RunRequest {
        partition_out: Some(written.clone()),
        ..request(&chain, None)
    };
    match run_split(&alone, None) {
        Err(Error::Usage(message)) => assert!(message.contains("--partition-out"), "{message}"),
        other => panic!("expected a refusal, got {:?}", other.err()),
    }
}

/// An Oscillator whose force comes back from its own acceleration through two CubicGains (an
/// algebraic loop of three components whose solution moves with the state, as in
/// `master_loops.rs`), its position through a chain of two Gains, under `algorithm` (with
/// macro-step control by `estimator`, if any); `ranks` per component (osc, g1, g2, h, k), or
/// none.
fn loop_system(
    dir: &Path,
    label: &str,
    (solver, algorithm, estimator): (&str, &str, Option<&str>),
    ranks: Option<[usize; 5]>,
) -> PathBuf {
    fmu_pack::packed_fmus().expect("the test FMUs pack");
    let fmu = |model: &str, version: u8| common::fmu(model, version).display().to_string();
    let mut system = json!({
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
            "stopTime": 0.5, "stepSize": 0.01, "outputInterval": 0.02, "algorithm": algorithm,
            "algebraicLoops": {"solver": solver, "maxIterations": 200}
        }
    });
    if let Some(estimator) = estimator {
        system["experiment"]["extrapolationOrder"] = json!(2);
        system["experiment"]["stepControl"] = json!({"estimator": estimator});
    }
    if let Some(ranks) = ranks {
        for (c, rank) in ranks.iter().enumerate() {
            system["components"][c]["rank"] = json!(rank);
        }
    }
    let path = dir.join(format!(
        "{}.json",
        label.replace([' ', ',', '(', ')', '"'], "-")
    ));
    std::fs::write(&path, system.to_string()).unwrap();
    path
}

/// An algebraic loop over ranks, with every loop solver: on the rank that owns all of its
/// components (its owner solves it and sends the solution), and split over 2 and 3 ranks
/// (the owners evaluate the loop and its Jacobian, every rank takes the same Newton steps),
/// under Jacobi and Gauss-Seidel, with fixed steps and with step control on the coupling values
/// (whose norms every rank's part adds to, the loop's values on every rank): rank 0's rows are
/// one process' bits. The
/// split by measured cost keeps the loop on one rank.
#[test]
fn an_algebraic_loop_gives_one_process_bits_on_one_rank_and_split_over_ranks() {
    let dir = temp_dir();
    for solver in ["newton", "newton-finite-differences", "fixed-point"] {
        let measured = loop_system(dir.path(), solver, (solver, "jacobi", None), None);
        for size in [2, 3] {
            let label = format!("loop, {solver}, measured over {size}");
            let partition = same_rows_split(&measured, &request(&measured, None), size, &label);
            let owner = &partition.owner;
            assert!(
                owner[0] == owner[1] && owner[1] == owner[2],
                "{label}: the loop was split: {partition:?}"
            );
        }
        for (size, ranks, how) in [
            (2, [1, 1, 1, 0, 0], "whole on rank 1"),
            (2, [0, 1, 0, 1, 1], "split over 2"),
            (3, [0, 1, 2, 0, 1], "split over 3"),
        ] {
            for (algorithm, estimator) in [
                ("jacobi", None),
                ("gauss-seidel", None),
                ("jacobi", Some("ExSLocal")),
            ] {
                let label = format!("loop, {solver}, {algorithm}, {estimator:?}, {how}");
                let run = (solver, algorithm, estimator);
                let path = loop_system(dir.path(), &label, run, Some(ranks));
                same_rows_on(&path, size, &label);
            }
        }
    }
}

/// The error of `outcome`, and the rank it names if it came from another rank.
fn error_and_rank(outcome: Result<Vec<Vec<String>>, Error>) -> (String, Option<usize>) {
    let error = match outcome {
        Err(error) => error,
        Ok(_) => panic!("the run went through"),
    };
    let rank = match &error {
        Error::OnRank { rank, .. } => Some(*rank),
        Error::Simulation { source, .. } => match **source {
            Error::OnRank { rank, .. } => Some(rank),
            _ => None,
        },
        _ => None,
    };
    (error.to_string(), rank)
}

/// Around an algebraic loop the coupling values still go point to point: every rank takes
/// part in the loop's solve (its owner's broadcast of the solution), and the other values go
/// from their sources' owners to their targets' only. The loop on rank 1, the Gain h it
/// drives on rank 0, h's Gain k on rank 2: rank 1 sends to rank 0, rank 0 to rank 2, and
/// nothing else travels point to point, at fixed steps and under step control.
#[test]
fn values_around_an_algebraic_loop_go_to_the_neighbouring_ranks_only() {
    let dir = temp_dir();
    for estimator in [None, Some("ExSLocal")] {
        let label = format!("loop-between-{estimator:?}");
        let ranks = Some([1, 1, 1, 0, 2]);
        let path = loop_system(dir.path(), &label, ("newton", "jacobi", estimator), ranks);
        let counting = counted_run(&request(&path, None), 3, &label);
        let sent: Vec<Vec<(usize, usize)>> = counting
            .iter()
            .map(|c| c.sent.lock().unwrap().clone())
            .collect();
        for (from, to) in [(1, 0), (0, 2)] {
            assert!(
                sent[from][to].0 > 20,
                "{label}: rank {from} sent rank {to} {:?}",
                sent[from][to]
            );
        }
        for (from, to) in [(0, 1), (1, 2), (2, 0), (2, 1)] {
            assert_eq!(sent[from][to], (0, 0), "{label}: rank {from} to rank {to}");
        }
    }
}

/// A loop with no solution (u = u + 1 through two Feedthrough FMUs): on rank 1 alone, every
/// rank ends with one process' message and rank 1; split over the ranks, every rank ends
/// with one process' message (every rank took the same decision).
#[test]
fn a_loop_that_fails_on_rank_1_ends_every_rank_with_one_process_message() {
    let dir = temp_dir();
    fmu_pack::packed_fmus().expect("the test FMUs pack");
    let fmu = |model: &str, version: u8| common::fmu(model, version).display().to_string();
    let write = |label: &str, ranks: [usize; 3]| {
        let system = json!({
            "components": [
                {"name": "g", "fmu": fmu("Gain", 2), "rank": ranks[0]},
                {"name": "a", "fmu": fmu("Feedthrough", 3), "rank": ranks[1]},
                {"name": "b", "fmu": fmu("Feedthrough", 2), "rank": ranks[2]}
            ],
            "connections": [
                {"from": "a.Float64_continuous_output", "to": "b.Float64_continuous_input"},
                {"from": "b.Float64_continuous_output", "to": "a.Float64_continuous_input",
                 "offset": 1.0},
                {"from": "a.Float64_continuous_output", "to": "g.u"}
            ],
            "experiment": {"stopTime": 0.1, "stepSize": 0.01}
        });
        let path = written(dir.path(), format!("{label}.json"), &system);
        path
    };
    let on_rank_1 = write("on-rank-1", [0, 1, 1]);
    let (alone, _) = error_and_rank(run(&on_rank_1, None));
    assert!(alone.contains("singular"), "{alone}");
    for (rank, outcome) in run_on_threads(&on_rank_1, 2).into_iter().enumerate() {
        let (said, from) = error_and_rank(outcome);
        assert!(
            said.starts_with(&alone) && from == Some(1),
            "rank {rank}: expected one process' error ({alone}) from rank 1, got {said} from {from:?}"
        );
    }
    let split = write("split", [0, 0, 1]);
    for (rank, outcome) in run_on_threads(&split, 2).into_iter().enumerate() {
        let (said, _) = error_and_rank(outcome);
        assert_eq!(said, alone, "rank {rank}, the loop split");
    }
}

/// A divergence limit that only the loop's coupling values pass (the rows record the Gains
/// only): every rank holds the loop's values its owner solved for, so every rank stops at
/// one process' time with one process' message.
#[test]
fn every_rank_holds_the_values_of_a_loop_solved_on_another_rank() {
    let dir = temp_dir();
    let alone_label = "loop-limited";
    let write = |label: &str, ranks: Option<[usize; 5]>| {
        let path = loop_system(dir.path(), label, ("newton", "jacobi", None), ranks);
        let mut system: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // |osc.a| is about 2.8 early on; the Gains stay within 2.
        system["experiment"]["divergenceLimit"] = json!(2.5);
        std::fs::write(&path, system.to_string()).unwrap();
        let mut request = request(&path, None);
        request.output_variables = vec!["h.y".into(), "k.y".into()];
        request
    };
    let alone = match run_split(&write(alone_label, None), None) {
        Err(error) => error.to_string(),
        Ok(_) => panic!("the limit was not passed"),
    };
    assert!(alone.contains("osc.a -> g1.u"), "{alone}");
    let on_rank_1 = write("loop-limited-on-rank-1", Some([1, 1, 1, 0, 0]));
    for (rank, outcome) in split_on_threads(&on_rank_1, 2).into_iter().enumerate() {
        let (said, _) = error_and_rank(outcome.map(|(rows, _)| rows));
        assert_eq!(said, alone, "rank {rank}");
    }
}

/// `--partition-out` keeps an algebraic loop on one rank, however its times would split it:
/// the loop of three equally costly components over three ranks is one unit, beside the two
/// cheap Gains.
#[test]
fn a_written_partition_keeps_each_algebraic_loop_on_one_rank() {
    let dir = temp_dir();
    let path = loop_system(dir.path(), "written", ("newton", "jacobi", None), None);
    let prepared = cosimo::request::prepare(&request(&path, None), &mut |_| {}).unwrap();
    let written = dir.path().join("loops.txt");
    let seconds = [1.0, 1.0, 1.0, 0.0, 0.0];
    let owner =
        cosimo::distribute::write_partition(&written, &prepared.execution, &seconds, 3).unwrap();
    assert_eq!(owner, vec![0, 0, 0, 1, 2]);
    let text = std::fs::read_to_string(&written).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(text.contains("# rank 0: 3.000000 s stepping"), "{text}");
}
