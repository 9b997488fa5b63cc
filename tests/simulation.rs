//! The steppable simulation (`master::simulation`): every example in `fmus/`, and the two-mass
//! system under every fixed-step and controlled algorithm, gives the same bits as one run when
//! cut into `advance_to` calls at random communication points, and when saved, run on and
//! restored; bad requests are refused and leave the simulation usable.

mod common;

use std::path::{Path, PathBuf};

use cosimo::fmu::description::StartValue;
use cosimo::master::record::{Cell, Row};
use cosimo::master::run::{run, Observer};
use cosimo::master::simulation::{Advanced, Simulation};
use cosimo::master::RunStatistics;
use cosimo::request::{prepare, PreparedRun, RunRequest};
use cosimo::settings::control::Estimator;
use cosimo::settings::{AlgorithmKind, Overrides};

/// Rows and communication points as they arrive; a restore drops the rows after the snapshot.
#[derive(Default)]
struct Rows {
    rows: Vec<Row>,
    points: Vec<f64>,
}

impl Observer for Rows {
    fn row(&mut self, row: &Row) -> cosimo::Result<()> {
        self.rows.push(row.clone());
        Ok(())
    }
    fn stepped(&mut self, time: f64) {
        self.points.push(time);
    }
    fn restored(&mut self, rows: u64, time: f64) {
        self.rows.truncate(rows as usize);
        self.points.retain(|&t| t <= time);
    }
}

fn examples() -> Vec<PathBuf> {
    common::example_systems()
}

fn prepared(target: &Path, overrides: &Overrides) -> PreparedRun {
    let request = RunRequest {
        targets: vec![target.display().to_string()],
        overrides: overrides.clone(),
        ..RunRequest::default()
    };
    prepare(&request, &mut |_| {}).unwrap_or_else(|e| panic!("{}: {e}", target.display()))
}

/// One batch run: its rows and communication points.
fn whole(target: &Path, overrides: &Overrides) -> Rows {
    let mut run_ = prepared(target, overrides);
    let mut rows = Rows::default();
    run(&mut run_.execution, &mut [&mut rows]).expect("the batch run");
    rows
}

/// The same run advanced to each of `cuts` in turn, then to the stop time.
fn cut(target: &Path, overrides: &Overrides, cuts: &[f64]) -> Rows {
    let run_ = prepared(target, overrides);
    let mut rows = Rows::default();
    let mut simulation = Simulation::start(run_.execution, &mut [&mut rows]).expect("starts");
    for &t in cuts {
        assert_eq!(
            simulation
                .advance_to(t, &mut [&mut rows])
                .expect("advances"),
            Advanced::Reached
        );
        assert_eq!(simulation.time(), t, "lands on the cut point exactly");
    }
    let stop = simulation.grid().stop;
    simulation
        .advance_to(stop, &mut [&mut rows])
        .expect("runs on");
    simulation.finish(&mut [&mut rows]).expect("finishes");
    rows
}

/// Saved at `t1`, run on to `t2`, restored, run on to the stop time.
fn branched(target: &Path, overrides: &Overrides, t1: f64, t2: f64) -> Option<Rows> {
    let run_ = prepared(target, overrides);
    let mut rows = Rows::default();
    let mut simulation = Simulation::start(run_.execution, &mut [&mut rows]).expect("starts");
    simulation
        .advance_to(t1, &mut [&mut rows])
        .expect("advances");
    let snapshot = match simulation.save() {
        Ok(snapshot) => snapshot,
        Err(e) => {
            assert!(
                e.to_string().contains("component"),
                "names the component: {e}"
            );
            return None;
        }
    };
    simulation
        .advance_to(t2, &mut [&mut rows])
        .expect("runs on");
    simulation
        .restore(&snapshot, &mut [&mut rows])
        .expect("restores");
    assert_eq!(simulation.time(), t1);
    let stop = simulation.grid().stop;
    simulation
        .advance_to(stop, &mut [&mut rows])
        .expect("runs on again");
    simulation.finish(&mut [&mut rows]).expect("finishes");
    Some(rows)
}

/// The first difference of two row lists, bit for bit.
fn difference(a: &[Row], b: &[Row]) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("{} rows against {}", a.len(), b.len()));
    }
    let bits = |cell: &Cell| match cell {
        Cell::Float(x) => vec![x.to_bits()],
        Cell::Floats(v) => v.iter().map(|x| x.to_bits()).collect(),
        other => vec![format!("{other:?}").len() as u64, {
            let text = format!("{other:?}");
            text.bytes()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        }],
    };
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x.time.to_bits() != y.time.to_bits()
            || x.cells.len() != y.cells.len()
            || x.cells
                .iter()
                .zip(&y.cells)
                .any(|(p, q)| bits(p) != bits(q))
        {
            return Some(format!(
                "row {i} at t = {}: {:?} against {:?}",
                x.time, x, y
            ));
        }
    }
    None
}

/// A few communication points of a run, picked by a fixed pseudo-random sequence.
fn random_points(points: &[f64], count: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    let mut picked: Vec<f64> = (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            points[(state >> 33) as usize % points.len()]
        })
        .collect();
    picked.sort_by(f64::total_cmp);
    picked.dedup();
    picked
}

/// Cut and branched runs of `target` equal its batch run.
fn check_identical(target: &Path, overrides: &Overrides, label: &str, failures: &mut Vec<String>) {
    let reference = whole(target, overrides);
    assert!(
        reference.points.len() >= 3,
        "{label}: a run of several steps"
    );
    let inner = &reference.points[..reference.points.len() - 1];
    let cuts = random_points(inner, 4, reference.points.len() as u64);
    if let Some(d) = difference(&reference.rows, &cut(target, overrides, &cuts).rows) {
        failures.push(format!("{label} cut at {cuts:?}: {d}"));
    }
    let (t1, t2) = (cuts[0], *cuts.last().expect("a cut"));
    let t2 = if t2 > t1 {
        t2
    } else {
        reference.points[reference.points.len() - 1]
    };
    if let Some(branch) = branched(target, overrides, t1, t2) {
        if let Some(d) = difference(&reference.rows, &branch.rows) {
            failures.push(format!("{label} saved at {t1}, restored from {t2}: {d}"));
        }
    }
}

#[test]
fn every_example_cut_or_restored_gives_the_batch_run_bit_for_bit() {
    let mut failures = Vec::new();
    for example in examples() {
        let label = example
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        // The first quarter of each run (the suite runs in debug builds): three runs each.
        let experiment = prepared(&example, &Overrides::default()).system.experiment;
        let overrides = Overrides {
            stop: Some(experiment.start + 0.25 * (experiment.stop - experiment.start)),
            ..Overrides::default()
        };
        let started = std::time::Instant::now();
        check_identical(&example, &overrides, &label, &mut failures);
        eprintln!("{label}: {:.1} s", started.elapsed().as_secs_f64());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_coupling_algorithm_cut_or_restored_gives_the_batch_run_bit_for_bit() {
    let system = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-force.json");
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let short = Overrides {
        stop: Some(0.2),
        ..Overrides::default()
    };
    let variants = [
        ("jacobi k=0", AlgorithmKind::Jacobi, Some(0), false, None),
        ("jacobi k=2", AlgorithmKind::Jacobi, Some(2), false, None),
        (
            "gauss-seidel k=1",
            AlgorithmKind::GaussSeidel,
            Some(1),
            false,
            None,
        ),
        (
            "implicit k=1",
            AlgorithmKind::Implicit,
            Some(1),
            false,
            None,
        ),
        (
            "jacobi adaptive",
            AlgorithmKind::Jacobi,
            Some(3),
            true,
            Some(Estimator::ExSLocal),
        ),
        (
            "jacobi ExMilne",
            AlgorithmKind::Jacobi,
            Some(3),
            true,
            Some(Estimator::ExMilne),
        ),
        (
            "implicit adaptive",
            AlgorithmKind::Implicit,
            Some(2),
            true,
            Some(Estimator::ImSLocal),
        ),
    ];
    let mut failures = Vec::new();
    for (label, algorithm, order, adaptive, estimator) in variants {
        let overrides = Overrides {
            algorithm: Some(algorithm),
            extrapolation_order: order,
            adaptive,
            estimator,
            ..short.clone()
        };
        check_identical(&system, &overrides, label, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn two_mass() -> Simulation {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let system = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-force.json");
    let run_ = prepared(&system, &Overrides::default());
    Simulation::start(run_.execution, &mut [] as &mut [Rows]).expect("starts")
}

#[test]
fn advance_lands_on_any_time_and_refuses_the_past() {
    let mut simulation = two_mass();
    let none: &mut [Rows] = &mut [];
    simulation.advance_to(0.0105, none).expect("off the grid");
    assert_eq!(simulation.time(), 0.0105);
    let error = simulation.advance_to(0.005, none).expect_err("the past");
    assert!(
        error.to_string().contains("before the current time"),
        "{error}"
    );
    let error = simulation
        .advance_to(2.0, none)
        .expect_err("after the stop");
    assert!(error.to_string().contains("after the stop time"), "{error}");
    // Still usable after refusals.
    simulation.step(none).expect("a step");
    assert_eq!(simulation.time(), 0.011, "back on the grid");
    assert_eq!(
        simulation.advance_to(1.0, none).expect("to the end"),
        Advanced::Ended
    );
    assert!(simulation.ended());
}

#[test]
fn values_by_name_between_steps() {
    let mut simulation = two_mass();
    let none: &mut [Rows] = &mut [];
    simulation.advance_to(0.1, none).expect("advances");
    let x = simulation.get("mass1.x").expect("reads an output");
    assert!(
        matches!(x, StartValue::Float(ref v) if v.len() == 1 && v[0].is_finite()),
        "{x:?}"
    );
    for (name, value, needle) in [
        ("mass9.x", StartValue::Float(vec![1.0]), "no component"),
        ("mass1.nope", StartValue::Float(vec![1.0]), "no variable"),
        ("mass1.x", StartValue::Float(vec![1.0]), "output"),
        (
            "mass1.F",
            StartValue::Float(vec![1.0]),
            "driven by the connection spring.F1",
        ),
        ("mass1.m", StartValue::Float(vec![2.0]), "not tunable"),
    ] {
        let error = simulation.set(name, &value).expect_err(name);
        assert!(error.to_string().contains(needle), "{name}: {error}");
    }
    simulation.advance_to(0.2, none).expect("still usable");
}

#[test]
fn snapshots_belong_to_their_simulation_and_travel_as_bytes() {
    let mut first = two_mass();
    let mut second = two_mass();
    let mut rows = Rows::default();
    first.advance_to(0.3, &mut [&mut rows]).expect("advances");
    let snapshot = first.save().expect("saves");
    let error = second
        .restore(&snapshot, &mut [&mut rows])
        .expect_err("another simulation's snapshot");
    assert!(error.to_string().contains("another simulation"), "{error}");
    let bytes = first.to_bytes(&snapshot).expect("serialises");
    let mut from_first = Rows::default();
    let mut from_second = Rows::default();
    first
        .advance_to(0.6, &mut [&mut from_first])
        .expect("runs on");
    second
        .restore_bytes(&bytes, &mut [&mut from_second])
        .expect("restores the bytes");
    assert_eq!(second.time(), 0.3);
    second
        .advance_to(0.6, &mut [&mut from_second])
        .expect("runs on");
    assert_eq!(difference(&from_first.rows, &from_second.rows), None);
    let error = second
        .restore_bytes(b"not a snapshot", &mut [&mut from_second])
        .expect_err("garbage");
    assert!(
        error.to_string().contains("not a cosimo snapshot"),
        "{error}"
    );
    drop(snapshot);
    first
        .advance_to(0.7, &mut [&mut from_first])
        .expect("frees the dropped snapshot's states");
}

#[test]
fn a_scenario_cut_or_restored_gives_the_batch_run_bit_for_bit() {
    use cosimo::master::run::run_with_scenario;
    use cosimo::master::scenario::ScenarioPlayer;
    use cosimo::settings::scenario::Scenario;
    use std::sync::Arc;
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let system = root.join("fmus/two-mass-force-force.json");
    let scenario = Arc::new(
        Scenario::read(&root.join("fmus/scenarios/two-mass-scenario.yaml")).expect("reads"),
    );
    let player = |exec: &cosimo::master::execution::Execution| {
        ScenarioPlayer::new(exec, scenario.clone(), 0.0).expect("the scenario fits")
    };
    let mut batch = prepared(&system, &Overrides::default());
    let mut reference = Rows::default();
    let p = player(&batch.execution);
    let stats = run_with_scenario(&mut batch.execution, Some(p), &mut [&mut reference])
        .expect("the batch run");
    assert_eq!(
        stats.scenario.len(),
        4,
        "three events and the end: {:?}",
        stats.scenario
    );

    // Cut at events, between them and at the end; then saved before the bias, run past the
    // end, restored and run again.
    let run_ = prepared(&system, &Overrides::default());
    let p = player(&run_.execution);
    let mut rows = Rows::default();
    let mut simulation = Simulation::start(run_.execution, &mut [&mut rows]).expect("starts");
    simulation.play(p).expect("plays");
    for t in [0.15, 0.2, 0.4, 0.5] {
        simulation
            .advance_to(t, &mut [&mut rows])
            .expect("advances");
    }
    let snapshot = simulation.save().expect("saves");
    simulation
        .advance_to(0.9, &mut [&mut rows])
        .expect("runs past the end");
    assert_eq!(simulation.scenario_events().len(), 4);
    simulation
        .restore(&snapshot, &mut [&mut rows])
        .expect("restores");
    assert_eq!(
        simulation.scenario_events().len(),
        2,
        "the events after the snapshot are undone"
    );
    simulation
        .advance_to(1.0, &mut [&mut rows])
        .expect("to the end");
    let stats = simulation.finish(&mut [&mut rows]).expect("finishes");
    assert_eq!(difference(&reference.rows, &rows.rows), None);
    assert_eq!(stats.scenario.len(), 4);
}

#[test]
fn a_system_with_an_fmu_that_cannot_save_its_state_refuses_snapshots_naming_it() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let stateless = common::unpacked_with_edit(
        "Oscillator",
        2,
        "canGetAndSetFMUstate=\"true\"",
        "canGetAndSetFMUstate=\"false\"",
    );
    let serialisable = common::unpacked_with_edit(
        "Oscillator",
        2,
        "canSerializeFMUstate=\"true\"",
        "canSerializeFMUstate=\"false\"",
    );
    for (dir, needle) in [
        (&stateless, "canGetAndSetFMUstate"),
        (&serialisable, "canSerializeFMUstate"),
    ] {
        let request = RunRequest {
            targets: vec![format!("osc={}", dir.path().display())],
            overrides: Overrides {
                stop: Some(0.1),
                step: Some(0.01),
                ..Overrides::default()
            },
            ..RunRequest::default()
        };
        let prepared = prepare(&request, &mut |_| {}).expect("prepares");
        let none: &mut [Rows] = &mut [];
        let mut simulation = Simulation::start(prepared.execution, none).expect("starts");
        simulation.advance_to(0.05, none).expect("advances");
        let error = match simulation.save() {
            Err(error) => error,
            Ok(snapshot) => simulation.to_bytes(&snapshot).expect_err("bytes refused"),
        };
        assert!(
            error.to_string().contains("component \"osc\"") && error.to_string().contains(needle),
            "{error}"
        );
        simulation.advance_to(0.1, none).expect("still usable");
    }
}

#[test]
fn snapshot_bytes_of_another_system_are_refused() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus");
    let none: &mut [Rows] = &mut [];
    let mut two_mass = two_mass();
    two_mass.advance_to(0.1, none).expect("advances");
    let snapshot = two_mass.save().expect("saves");
    let bytes = two_mass.to_bytes(&snapshot).expect("serialises");
    let other = prepared(
        &root.join("two-mass-force-displacement.json"),
        &Overrides::default(),
    );
    let mut other = Simulation::start(other.execution, none).expect("starts");
    let error = other
        .restore_bytes(&bytes, none)
        .expect_err("another system");
    assert!(error.to_string().contains("another system"), "{error}");
    other.advance_to(0.1, none).expect("still usable");
}

/// Outer targets inside macro steps (an exported FMU's importer with a step off the inner
/// grid). Where every FMU state can be saved, a macro step that passes a target is taken whole
/// with every FMU call recorded, each FMU's calls are replayed up to the target and on from
/// there, and the step ends with the states of the whole step: the rows on the output grid are
/// the batch run's to the bit, for every algorithm, also with the FMUs in worker processes and
/// with FMUs whose results depend on where a step is cut (the crane's take one Euler step per
/// doStep). The replay itself is checked by how far the values it reaches at each step's end
/// are from the whole step's (`replay_deviation`): round-off where the FMUs integrate a step
/// the same way in parts, the FMU's own cut error for the crane.
#[test]
fn targets_inside_macro_steps_of_every_algorithm_keep_the_batch_run() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let example = |name: &str| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fmus")
            .join(name)
            .display()
            .to_string()
    };
    let two_mass = example("two-mass-force-force.json");
    let fixed = fixed_two_mass;
    let stop = |stop| Overrides {
        stop: Some(stop),
        ..Overrides::default()
    };
    // (label, system, settings, isolated, sub-steps, target spacing, largest deviation)
    let cases: Vec<(&str, String, Overrides, bool, bool, f64, f64)> = vec![
        (
            "Jacobi, held",
            two_mass.clone(),
            fixed(AlgorithmKind::Jacobi, 0),
            false,
            false,
            3.7e-4,
            1e-10,
        ),
        (
            "Jacobi, order 2",
            two_mass.clone(),
            fixed(AlgorithmKind::Jacobi, 2),
            false,
            false,
            3.7e-4,
            1e-10,
        ),
        (
            "Jacobi, order 2 held over sub-steps",
            two_mass.clone(),
            fixed(AlgorithmKind::Jacobi, 2),
            false,
            true,
            3.7e-4,
            1e-10,
        ),
        (
            "Jacobi, order 2 held over sub-steps, isolated",
            two_mass.clone(),
            fixed(AlgorithmKind::Jacobi, 2),
            true,
            true,
            3.7e-4,
            1e-10,
        ),
        (
            "Gauss-Seidel, held",
            two_mass.clone(),
            fixed(AlgorithmKind::GaussSeidel, 0),
            false,
            false,
            3.7e-4,
            1e-10,
        ),
        (
            "Gauss-Seidel, order 2, isolated",
            two_mass.clone(),
            fixed(AlgorithmKind::GaussSeidel, 2),
            true,
            false,
            3.7e-4,
            1e-10,
        ),
        (
            "implicit, fixed step",
            two_mass.clone(),
            fixed(AlgorithmKind::Implicit, 1),
            false,
            false,
            3.7e-4,
            1e-10,
        ),
        (
            "Jacobi, step and order control",
            two_mass.clone(),
            Overrides {
                adaptive: true,
                ..fixed(AlgorithmKind::Jacobi, 2)
            },
            false,
            false,
            3.7e-4,
            1e-10,
        ),
        (
            "implicit, ImSLocal step and order control",
            example("two-mass-implicit-adaptive.json"),
            stop(0.05),
            false,
            false,
            3.7e-5,
            1e-10,
        ),
        (
            "constraint coupling",
            example("rigid-link.json"),
            stop(1.0),
            false,
            false,
            3.7e-3,
            1e-10,
        ),
        (
            "reduced interface model, crane",
            example("crane-single.json"),
            stop(2.5),
            false,
            false,
            3.7e-3,
            1.0,
        ),
    ];
    for (label, target, overrides, isolate, sub_steps, spacing, deviation) in cases {
        let request = || {
            let mut request = RunRequest {
                targets: vec![target.clone()],
                overrides: overrides.clone(),
                isolate,
                ..RunRequest::default()
            };
            request.instance.force_sub_steps = sub_steps;
            request
        };
        let (worst, stats) = targets_inside_steps_against_the_batch_run(label, &request, spacing);
        assert_eq!(worst, 0.0, "{label}: the rows differ from the batch run's");
        assert!(stats.replayed_steps > 0, "{label}: steps were replayed");
        eprintln!(
            "{label}: {} steps replayed, deviation {:e}",
            stats.replayed_steps, stats.replay_deviation
        );
        assert!(
            stats.replay_deviation <= deviation,
            "{label}: the replay reaches the step's end {:e} away from the whole step",
            stats.replay_deviation
        );
    }
}

/// A snapshot taken inside a replayed macro step (Gauss-Seidel, so the step is replayed)
/// carries the replay and the FMU states of the step's end: restored in the same simulation,
/// and as bytes in a fresh one, it goes on with the batch run's rows to the bit.
#[test]
fn a_snapshot_inside_a_replayed_step_restores_and_travels_as_bytes() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let system = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-force-force.json");
    let overrides = fixed_two_mass(AlgorithmKind::GaussSeidel, 2);
    let reference = whole(&system, &overrides);
    let start = |rows: &mut Rows| {
        Simulation::start(prepared(&system, &overrides).execution, &mut [rows]).expect("starts")
    };
    let mut rows = Rows::default();
    let mut first = start(&mut rows);
    first
        .advance_to(0.0504, &mut [&mut rows])
        .expect("advances");
    let snapshot = first.save().expect("saves inside the step");
    let bytes = first.to_bytes(&snapshot).expect("serialises");
    first
        .advance_to(0.0507, &mut [&mut rows])
        .expect("on in the step");
    first.advance_to(0.2, &mut [&mut rows]).expect("runs on");
    assert!(
        first.statistics().replayed_steps >= 1,
        "the step was replayed"
    );
    assert_eq!(difference(&reference.rows, &rows.rows), None, "run on");
    first
        .restore(&snapshot, &mut [&mut rows])
        .expect("restores");
    assert_eq!(first.time(), 0.0504);
    first
        .advance_to(0.2, &mut [&mut rows])
        .expect("runs on again");
    assert_eq!(difference(&reference.rows, &rows.rows), None, "restored");
    let mut from_bytes = Rows::default();
    let mut fresh = start(&mut from_bytes);
    fresh
        .restore_bytes(&bytes, &mut [&mut from_bytes])
        .expect("restores the bytes");
    fresh
        .advance_to(0.2, &mut [&mut from_bytes])
        .expect("runs on");
    // The fresh simulation delivered its start row; the rest follow the snapshot's time.
    let after = reference.rows.len() - (from_bytes.rows.len() - 1);
    assert_eq!(
        difference(&reference.rows[after..], &from_bytes.rows[1..]),
        None,
        "from bytes"
    );
    assert_eq!(reference.rows[after - 1].time, 0.05);
    drop(snapshot);
    first
        .advance_to(0.2, &mut [] as &mut [Rows])
        .expect("frees the dropped snapshot");
}

/// Where an FMU cannot save its state, Jacobi takes a macro step that passes a target in parts
/// itself (`Execution::step_part`): each part with the inputs of the whole step (held, or
/// following their polynomials, also held over sub-steps in this process and in worker
/// processes), so the rows on the output grid equal the batch run's to 1e-12 of each column's
/// range. Not to the bit: each FMU integrates the parts of a step separately.
#[test]
fn targets_inside_jacobi_macro_steps_of_fmus_without_state_keep_the_batch_run() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let stateless = common::unpacked_with_edit(
        "Oscillator",
        2,
        "canGetAndSetFMUstate=\"true\"",
        "canGetAndSetFMUstate=\"false\"",
    );
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("fmus/two-mass-force-force.json"))
        .expect("the example reads")
        .replace(
            "../target/fmus/Oscillator-fmi2.fmu",
            &stateless.path().display().to_string(),
        )
        .replace("../target/", &format!("{}/target/", root.display()))
        .replace("\"$schema\": \"../schemas/system.schema.json\",", "");
    let folder = common::temp_dir();
    let system = folder.path().join("two-mass-stateless.json");
    std::fs::write(&system, text).expect("the system writes");
    for (order, sub_steps, isolate) in [
        (0, false, false),
        (2, false, false),
        (2, true, false),
        (2, true, true),
    ] {
        let label = format!("order {order}, sub-steps {sub_steps}, isolated {isolate}");
        let request = || {
            let mut request = RunRequest {
                targets: vec![system.display().to_string()],
                overrides: fixed_two_mass(AlgorithmKind::Jacobi, order),
                isolate,
                ..RunRequest::default()
            };
            request.instance.force_sub_steps = sub_steps;
            request
        };
        let (worst, stats) = targets_inside_steps_against_the_batch_run(&label, &request, 3.7e-4);
        assert_eq!(
            stats.replayed_steps, 0,
            "{label}: taken in parts, not replayed"
        );
        assert!(
            worst <= 1e-12,
            "{label}: the rows differ from the batch run's by {worst:e}"
        );
    }
}

/// The two-mass example's settings for 0.2 s with a fixed-step algorithm.
fn fixed_two_mass(algorithm: AlgorithmKind, order: u8) -> Overrides {
    Overrides {
        stop: Some(0.2),
        algorithm: Some(algorithm),
        extrapolation_order: Some(order),
        ..Overrides::default()
    }
}

/// Run `request` once as a batch and once advanced to targets `spacing` apart (most inside a
/// macro step, several in the same one); the rows must fall at the same times. Returns the
/// largest difference of a value, relative to the largest magnitude of its column.
fn targets_inside_steps_against_the_batch_run(
    label: &str,
    request: &dyn Fn() -> RunRequest,
    spacing: f64,
) -> (f64, RunStatistics) {
    let prepared = || prepare(&request(), &mut |_| {}).unwrap_or_else(|e| panic!("{label}: {e}"));
    let mut reference = Rows::default();
    run(&mut prepared().execution, &mut [&mut reference]).expect("the batch run");
    let mut parted = Rows::default();
    let mut simulation =
        Simulation::start(prepared().execution, &mut [&mut parted]).expect("starts");
    let stop = simulation.grid().stop;
    for k in 1.. {
        let t = f64::from(k) * spacing;
        if t >= stop {
            break;
        }
        simulation
            .advance_to(t, &mut [&mut parted])
            .unwrap_or_else(|e| panic!("{label}: advancing to {t}: {e}"));
        assert_eq!(simulation.time(), t, "{label}: lands on the target");
    }
    simulation
        .advance_to(stop, &mut [&mut parted])
        .expect("runs on");
    let stats = simulation.finish(&mut [&mut parted]).expect("finishes");
    assert_eq!(reference.rows.len(), parted.rows.len(), "{label}: rows");
    let float = |cell: &Cell| match cell {
        Cell::Float(x) => *x,
        _ => 0.0,
    };
    let mut scale = vec![0.0f64; reference.rows[0].cells.len()];
    for row in &reference.rows {
        for (s, cell) in scale.iter_mut().zip(&row.cells) {
            *s = s.max(float(cell).abs());
        }
    }
    let mut worst: f64 = 0.0;
    for (a, b) in reference.rows.iter().zip(&parted.rows) {
        assert_eq!(a.time.to_bits(), b.time.to_bits(), "{label}: row times");
        for ((x, y), s) in a.cells.iter().zip(&b.cells).zip(&scale) {
            worst = worst.max((float(x) - float(y)).abs() / s.max(f64::MIN_POSITIVE));
        }
    }
    eprintln!("{label}: largest difference {worst:e} of its column's range");
    (worst, stats)
}
