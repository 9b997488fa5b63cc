//! Systems through the real master: parallel Jacobi is bit-identical to sequential Jacobi,
//! multirate sub-steps, failing components, connection factor / offset, integer and Boolean
//! connections, unit conversion, and the consistency of recorded rows.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::systems::*;
use cosimo::fmu::instance::InstanceOptions;
use cosimo::fmu::Fmu;
use cosimo::master::execution::{Execution, RunOptions};
use cosimo::results::Table;
use cosimo::settings::{Algorithm, AlgorithmKind, Experiment};
use cosimo::system::System;

/// Every recorded value of two tables is bit-identical (and so are the times and columns).
fn assert_bit_identical(label: &str, a: &Table, b: &Table) {
    assert_eq!(a.columns(), b.columns(), "{label}: columns");
    assert_eq!(a.time().len(), b.time().len(), "{label}: rows");
    for (x, y) in a.time().iter().zip(b.time()) {
        assert_eq!(x.to_bits(), y.to_bits(), "{label}: time {x} vs {y}");
    }
    for (c, name) in a.columns().iter().enumerate() {
        for (row, (x, y)) in a.values(c).iter().zip(b.values(c)).enumerate() {
            assert_eq!(
                x.to_bits(),
                y.to_bits(),
                "{label}: {name} at t = {}: {x:e} vs {y:e}",
                a.time()[row]
            );
        }
    }
}

fn parallel_variants(system: &System, record: &[&str]) {
    let mut sequential = system.clone();
    sequential.experiment.parallel = false;
    let (reference, _) = run(&sequential, record);
    assert!(reference.time().len() > 10);
    for threads in [0, 1, 2, 3] {
        let mut parallel = system.clone();
        parallel.experiment.parallel = true;
        let options = RunOptions {
            threads,
            ..recording(record)
        };
        let (table, _) = try_run_with(&parallel, &options).unwrap_or_else(|e| panic!("{e}"));
        assert_bit_identical(&format!("{threads} threads"), &reference, &table);
    }
}

#[test]
fn parallel_jacobi_is_bit_identical_to_sequential_on_the_two_mass_system() {
    for decomposition in [Decomposition::ForceForce, Decomposition::ForceDisplacement] {
        for order in [0, 2] {
            let mut system = two_mass(decomposition, AlgorithmKind::Jacobi, order, 1e-3, 0.5);
            system.experiment.output_interval = Some(0.01);
            parallel_variants(
                &system,
                &[
                    "mass1.x", "mass1.v", "mass1.a", "mass1.F", "mass2.x", "mass2.v", "mass2.a",
                ],
            );
        }
    }
}

/// A chain of `n` oscillators, each base-excited by its predecessor and pushing it back with
/// the coupling force (force / displacement coupling along the chain), FMI 2 and FMI 3 mixed.
fn oscillator_chain(n: usize, order: u8) -> System {
    let mut components = Vec::new();
    let mut connections = Vec::new();
    for i in 0..n {
        let name = format!("m{i}");
        let x0 = if i == 0 { 0.1 } else { 0.0 };
        let coupled = if i == 0 { 0.0 } else { 500.0 };
        components.push(component(
            &name,
            "Oscillator",
            if i % 2 == 0 { 2 } else { 3 },
            &[
                ("m", 1.0 + 0.1 * i as f64),
                ("c", 1000.0),
                ("d", 5.0),
                ("x0", x0),
                ("cc", coupled),
                ("dc", coupled / 100.0),
            ],
        ));
        if i > 0 {
            let previous = format!("m{}", i - 1);
            connections.push(connect(&format!("{previous}.x"), &format!("{name}.x_in")));
            connections.push(connect(&format!("{previous}.v"), &format!("{name}.v_in")));
            connections.push(connect(&format!("{name}.Fc"), &format!("{previous}.F")));
        }
    }
    System {
        components,
        connections,
        experiment: Experiment {
            stop: 0.3,
            step: 1e-3,
            output_interval: Some(0.01),
            algorithm: Algorithm::with_order(AlgorithmKind::Jacobi, order).expect("jacobi"),
            ..Experiment::default()
        },
    }
}

#[test]
fn parallel_jacobi_is_bit_identical_to_sequential_on_a_chain_of_eight() {
    let names: Vec<String> = (0..8)
        .flat_map(|i| [format!("m{i}.x"), format!("m{i}.v"), format!("m{i}.Fc")])
        .collect();
    let record: Vec<&str> = names.iter().map(String::as_str).collect();
    for order in [0, 2] {
        let system = oscillator_chain(8, order);
        parallel_variants(&system, &record);
        // The motion did travel down the chain (the comparison is not of zeros).
        let (table, _) = run(&system, &["m7.x"]);
        let reached = column(&table, "m7.x")
            .iter()
            .fold(0.0f64, |a, x| a.max(x.abs()));
        assert!(reached > 1e-8, "the last mass moved {reached}");
    }
}

fn do_steps(calls: &[String], instance: &str) -> usize {
    calls
        .iter()
        .filter(|c| c.starts_with(&format!("{instance}: ")) && c.contains("DoStep("))
        .count()
}

#[test]
fn sub_steps_change_nothing_for_exactly_integrated_polynomial_inputs() {
    // The Oscillator integrates a polynomial input exactly, so stepping mass 2 in 4 sub-steps
    // of the same input polynomial gives the same result, with 4 times the doStep calls.
    let record = ["mass1.x", "mass1.v", "mass2.x", "mass2.v", "spring.F1"];
    for order in [0, 2] {
        for algorithm in [AlgorithmKind::Jacobi, AlgorithmKind::GaussSeidel] {
            let label = format!("{algorithm:?} order {order}");
            let mut system = two_mass(Decomposition::ForceForce, algorithm, order, 1e-3, 0.2);
            system.experiment.output_interval = Some(0.01);
            let run_traced = |system: &System| {
                let (sink, calls) = call_trace();
                let options = RunOptions {
                    instance: InstanceOptions {
                        log_fmi_calls: true,
                        call_sink: Some(sink),
                        ..InstanceOptions::default()
                    },
                    ..recording(&record)
                };
                let (table, stats) =
                    try_run_with(system, &options).unwrap_or_else(|e| panic!("{e}"));
                let calls = calls.lock().unwrap().clone();
                (table, stats, calls)
            };
            let (single, single_stats, single_calls) = run_traced(&system);
            system.components[2].sub_steps = 4;
            let (multi, multi_stats, multi_calls) = run_traced(&system);
            for (c, name) in single.columns().iter().enumerate() {
                let scale = single.values(c).iter().fold(1e-3f64, |a, x| a.max(x.abs()));
                for (row, (a, b)) in single.values(c).iter().zip(multi.values(c)).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-10 * scale,
                        "{label}: {name} at t = {}: {a} with 1 sub-step, {b} with 4",
                        single.time()[row]
                    );
                }
            }
            let (one, four) = (
                do_steps(&single_calls, "mass2"),
                do_steps(&multi_calls, "mass2"),
            );
            assert!(one >= 200, "{label}: {one} doStep calls of mass2");
            assert_eq!(four, 4 * one, "{label}: doStep calls of mass2");
            assert_eq!(
                do_steps(&single_calls, "mass1"),
                do_steps(&multi_calls, "mass1"),
                "{label}: mass 1 is not sub-stepped"
            );
            assert!(
                multi_stats.fmi_calls > single_stats.fmi_calls,
                "{label}: FMI calls {} with sub-steps, {} without",
                multi_stats.fmi_calls,
                single_stats.fmi_calls
            );
        }
    }
}

#[test]
fn sub_steps_follow_a_time_varying_input_within_the_macro_step() {
    // Dahlquist x' = -k x has no input; VanDerPol neither: use the Oscillator driven by another
    // oscillator's position with extrapolation order 1. With sub-steps, each sub-step starts
    // from the polynomial's value at its own start, so the result stays that of one step.
    let system = |sub_steps: u32| {
        let mut driver = component("driver", "Oscillator", 3, &[("c", 100.0), ("d", 0.0)]);
        driver.sub_steps = 1;
        let mut driven = component("driven", "Oscillator", 2, &[("x0", 0.0), ("c", 10.0)]);
        driven.sub_steps = sub_steps;
        System {
            components: vec![driver, driven],
            connections: vec![connect("driver.x", "driven.F")],
            experiment: Experiment {
                stop: 1.0,
                step: 0.01,
                output_interval: Some(0.05),
                algorithm: Algorithm::with_order(AlgorithmKind::Jacobi, 1).expect("jacobi"),
                ..Experiment::default()
            },
        }
    };
    let (one, _) = run(&system(1), &["driven.x", "driven.v"]);
    for n in [2, 5] {
        let (many, _) = run(&system(n), &["driven.x", "driven.v"]);
        for c in 0..2 {
            for (row, (a, b)) in one.values(c).iter().zip(many.values(c)).enumerate() {
                assert!(
                    (a - b).abs() < 1e-10,
                    "{n} sub-steps: {} at t = {}: {a} vs {b}",
                    one.columns()[c],
                    one.time()[row]
                );
            }
        }
    }
}

fn faulty_system(version: u8, failure: i32, fail_at: f64, parallel: bool) -> System {
    System {
        components: vec![
            component("osc", "Oscillator", 3, &[]),
            component(
                "faulty",
                "Faulty",
                version,
                &[("failure", f64::from(failure)), ("fail_at", fail_at)],
            ),
            component("decay", "Dahlquist", 2, &[]),
        ],
        connections: vec![connect("faulty.x", "osc.F")],
        experiment: Experiment {
            stop: 1.0,
            step: 0.01,
            parallel,
            ..Experiment::default()
        },
    }
}

/// The time in "simulation failed at t = <time>: ...".
fn failure_time(error: &str) -> f64 {
    let rest = error
        .split("simulation failed at t = ")
        .nth(1)
        .unwrap_or_else(|| panic!("no failure time in: {error}"));
    rest.split(':').next().unwrap().trim().parse().unwrap()
}

#[test]
fn a_failing_component_is_named_with_the_time_it_failed() {
    for version in [2, 3] {
        for parallel in [false, true] {
            for (failure, status) in [(2, "Error"), (3, "Fatal")] {
                let label = format!("FMI {version} parallel {parallel} failure {failure}");
                let error = try_run(&faulty_system(version, failure, 0.5, parallel), &["osc.x"])
                    .expect_err("the run fails");
                let t = failure_time(&error);
                assert!(
                    (0.49 - 1e-9..=0.5).contains(&t),
                    "{label}: failed at {t}: {error}"
                );
                for part in [
                    "faulty: ".to_string(),
                    format!("fmi{version}DoStep failed with status {status}"),
                    format!("simulated failure ({status})"),
                ] {
                    assert!(
                        error.contains(&part),
                        "{label}: {part:?} missing from: {error}"
                    );
                }
            }
            // Discard in the middle of a step: the message says how far the FMU got.
            let error = try_run(&faulty_system(version, 1, 0.505, parallel), &["osc.x"])
                .expect_err("the run fails");
            let t = failure_time(&error);
            assert!((t - 0.5).abs() < 1e-9, "Discard: failed at {t}: {error}");
            for part in ["faulty: ", "discarded", "reached t = 0.505"] {
                assert!(
                    error.contains(part),
                    "Discard: {part:?} missing from: {error}"
                );
            }
        }
    }
    // Without a failure the same system runs to the end.
    let (table, _) = run(&faulty_system(3, 0, 0.5, false), &["faulty.x"]);
    assert!((column(&table, "faulty.x").last().unwrap() - 1.0).abs() < 1e-12);
}

/// How many calls the kit's FMU `fmu` saw after one of its instances returned Fatal.
fn calls_after_fatal(fmu: &Fmu) -> usize {
    let path = fmu.library().unwrap().path().to_path_buf();
    // SAFETY: the kit's library cosimo loaded already (this only adds a reference); every kit
    // FMU exports this function with this signature.
    unsafe {
        let library = libloading::Library::new(&path).unwrap();
        let count: libloading::Symbol<unsafe extern "C" fn() -> usize> =
            library.get(b"fmu_kit_calls_after_fatal").unwrap();
        count()
    }
}

#[test]
fn after_a_fatal_component_the_master_calls_it_no_more_on_any_thread() {
    for version in [2, 3] {
        for parallel in [false, true] {
            let label = format!("FMI {version} parallel {parallel}");
            let system = faulty_system(version, 3, 0.5, parallel);
            // The test opens the Faulty FMU itself to ask its library afterwards.
            let faulty = Arc::new(Fmu::open(&system.components[1].fmu).unwrap());
            let (sink, calls) = call_trace();
            let options = RunOptions {
                instance: InstanceOptions {
                    log_fmi_calls: true,
                    call_sink: Some(sink),
                    ..InstanceOptions::default()
                },
                opened: vec![faulty.clone()],
                threads: 3,
                ..recording(&["osc.x"])
            };
            let error = try_run_with(&system, &options).expect_err("the run fails");
            assert!(
                error.contains(&format!(
                    "faulty: fmi{version}DoStep failed with status Fatal"
                )),
                "{label}: {error}"
            );
            // The execution, and with it every instance, is dropped (on its worker thread).
            assert_eq!(calls_after_fatal(&faulty), 0, "{label}");
            assert_eq!(
                faulty.library().unwrap().fatal(),
                Some(format!("fmi{version}DoStep of instance \"faulty\"").as_str()),
                "{label}"
            );
            let calls = calls.lock().unwrap();
            let after: Vec<&String> = calls
                .iter()
                .skip_while(|c| !c.ends_with("-> Fatal"))
                .skip(1)
                .filter(|c| c.starts_with("faulty: "))
                .collect();
            assert_eq!(after.len(), 1, "{label}: {after:#?}");
            assert!(
                after[0].contains(&format!("fmi{version}FreeInstance not called")),
                "{label}: {after:#?}"
            );
            // The other components (other FMUs) are terminated and freed.
            for (name, p) in [("osc", "fmi3"), ("decay", "fmi2")] {
                for call in ["Terminate() -> OK", "FreeInstance()"] {
                    let want = format!("{name}: {p}{call}");
                    assert!(calls.contains(&want), "{label}: no {want}");
                }
            }
        }
    }
}

#[test]
fn factor_and_offset_transform_the_connected_value() {
    // x'' = F - 1.5 x with F = -(a.out) + 0.3 and a.in = 2.5 x - 0.5: x'' = -4 x + 0.8,
    // so x(t) = 0.2 + (x0 - 0.2) cos 2t.
    let mut to_gain = connect("osc.x", "a.Float64_continuous_input");
    to_gain.factor = 2.5;
    to_gain.offset = -0.5;
    let mut back = connect("a.Float64_continuous_output", "osc.F");
    back.factor = -1.0;
    back.offset = 0.3;
    let system = System {
        components: vec![
            component(
                "osc",
                "Oscillator",
                2,
                &[("m", 1.0), ("c", 1.5), ("d", 0.0), ("x0", 1.0)],
            ),
            component("a", "Feedthrough", 3, &[]),
        ],
        connections: vec![to_gain, back],
        experiment: Experiment {
            stop: 1.0,
            step: 1e-3,
            output_interval: Some(0.05),
            algorithm: Algorithm::with_order(AlgorithmKind::GaussSeidel, 2)
                .expect("an algorithm with an order"),
            ..Experiment::default()
        },
    };
    let (table, _) = run(
        &system,
        &[
            "osc.x",
            "a.Float64_continuous_input",
            "a.Float64_continuous_output",
        ],
    );
    let (x, input) = (
        column(&table, "osc.x"),
        column(&table, "a.Float64_continuous_input"),
    );
    for (row, &t) in table.time().iter().enumerate() {
        let want = 2.5 * x[row] - 0.5;
        assert!(
            (input[row] - want).abs() <= 1e-14 * want.abs().max(1.0),
            "t = {t}: a.in = {}, 2.5 x - 0.5 = {want}",
            input[row]
        );
        let exact = 0.2 + 0.8 * (2.0 * t).cos();
        assert!(
            (x[row] - exact).abs() < 1e-6,
            "t = {t}: x = {}, want {exact}",
            x[row]
        );
    }
}

#[test]
fn integer_and_boolean_connections_carry_values_exactly() {
    // Sources: a Feedthrough whose unconnected inputs hold extreme values; an FMI 3 -> FMI 2 ->
    // FMI 3 path; the Stair's counter through a Feedthrough.
    let system = System {
        components: vec![
            component(
                "src",
                "Feedthrough",
                3,
                &[
                    ("Int32_input", f64::from(i32::MAX)),
                    ("Int16_input", -32768.0),
                    ("Boolean_input", 1.0),
                ],
            ),
            component("mid", "Feedthrough", 2, &[]),
            component("dst", "Feedthrough", 3, &[]),
            component("stair", "Stair", 3, &[]),
            component("count", "Feedthrough", 2, &[]),
            component("sink", "Feedthrough", 3, &[]),
        ],
        connections: vec![
            connect("src.Int32_output", "mid.Int32_input"),
            connect("src.Boolean_output", "mid.Boolean_input"),
            connect("src.Int16_output", "dst.Int64_input"),
            connect("mid.Int32_output", "dst.Int32_input"),
            connect("mid.Boolean_output", "dst.Boolean_input"),
            connect("stair.counter", "count.Int32_input"),
            connect("count.Int32_output", "sink.Int32_input"),
        ],
        experiment: Experiment {
            stop: 3.5,
            step: 0.25,
            ..Experiment::default()
        },
    };
    let record = [
        "mid.Int32_output",
        "mid.Boolean_output",
        "dst.Int32_output",
        "dst.Boolean_output",
        "dst.Int64_output",
        "stair.counter",
        "count.Int32_input",
        "count.Int32_output",
    ];
    let (table, _) = run(&system, &record);
    for (row, &t) in table.time().iter().enumerate() {
        let at = |name: &str| column(&table, name)[row];
        assert_eq!(at("mid.Int32_output"), f64::from(i32::MAX), "t = {t}");
        assert_eq!(at("dst.Int32_output"), f64::from(i32::MAX), "t = {t}");
        assert_eq!(at("dst.Int64_output"), -32768.0, "t = {t}");
        assert_eq!(at("mid.Boolean_output"), 1.0, "t = {t}");
        assert_eq!(at("dst.Boolean_output"), 1.0, "t = {t}");
        // The counter's input feeds through to a connected output, so it is set at every
        // communication point and equals the counter there.
        assert_eq!(at("count.Int32_input"), at("stair.counter"), "t = {t}");
        assert_eq!(at("count.Int32_output"), at("stair.counter"), "t = {t}");
        if (t - t.round()).abs() > 1e-9 {
            assert_eq!(at("stair.counter"), t.floor() + 1.0, "t = {t}");
        }
    }
    // false travels too (a Boolean connection is not stuck at its start value).
    let mut system = system;
    system.components[0].start_values = vec![("Boolean_input".into(), "false".into())];
    let (table, _) = run(&system, &["dst.Boolean_output", "mid.Boolean_input"]);
    assert!(column(&table, "dst.Boolean_output")
        .iter()
        .all(|&b| b == 0.0));
    assert!(column(&table, "mid.Boolean_input")
        .iter()
        .all(|&b| b == 0.0));
}

#[test]
fn recorded_inputs_equal_their_sources_at_every_communication_point() {
    // A row is the system's state at a communication point: an input there has the value of
    // its connection (the value the next step starts from), whether or not it feeds through
    // to another connection. The first row (after initialization) has this; every row should.
    let system = System {
        components: vec![
            component("osc", "Oscillator", 3, &[("c", 1.0), ("d", 0.0)]),
            component("ft", "Feedthrough", 2, &[]),
        ],
        connections: vec![connect("osc.x", "ft.Float64_continuous_input")],
        experiment: Experiment {
            stop: 0.1,
            step: 0.01,
            ..Experiment::default()
        },
    };
    let (table, _) = run(
        &system,
        &[
            "osc.x",
            "ft.Float64_continuous_input",
            "ft.Float64_continuous_output",
        ],
    );
    let x = column(&table, "osc.x");
    for name in [
        "ft.Float64_continuous_input",
        "ft.Float64_continuous_output",
    ] {
        for (row, (&got, &want)) in column(&table, name).iter().zip(x).enumerate() {
            assert_eq!(
                got,
                want,
                "{name} at t = {} holds {got}, but its source osc.x is {want} there",
                table.time()[row]
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Unit conversion. The project's FMUs declare unit names without <BaseUnit>, which cosimo
// passes unchanged (only same-named units are known to agree). To test a real conversion,
// the test unpacks two FMUs into a temporary folder and declares base units there.

/// Unpack `fmu` into `folder` and apply `patch` to its modelDescription.xml.
fn unpack_patched(fmu: &Path, folder: &Path, patch: impl Fn(&str) -> String) -> PathBuf {
    let file = std::fs::File::open(fmu).expect("the FMU opens");
    let mut archive = zip::ZipArchive::new(file).expect("the FMU is a zip");
    archive.extract(folder).expect("the FMU unpacks");
    let xml_path = folder.join("modelDescription.xml");
    let xml = std::fs::read_to_string(&xml_path).expect("modelDescription.xml");
    let patched = patch(&xml);
    assert_ne!(patched, xml, "the patch applies");
    std::fs::write(&xml_path, patched).expect("write modelDescription.xml");
    folder.to_path_buf()
}

#[test]
fn connections_convert_between_compatible_units() {
    let dir = common::temp_dir();
    // The oscillator's "m" and "m/s" get base units; the gain's input is declared in mm.
    let oscillator = unpack_patched(
        &fmu_pack::fmu_path("Oscillator", 3),
        &dir.path().join("osc"),
        |xml| {
            xml.replace(
                "<Unit name=\"m\"/>",
                "<Unit name=\"m\"><BaseUnit m=\"1\"/></Unit>",
            )
        },
    );
    let gain = unpack_patched(
        &fmu_pack::fmu_path("CubicGain", 3),
        &dir.path().join("gain"),
        |xml| {
            xml.replace(
            "<UnitDefinitions>",
            "<UnitDefinitions>\n    <Unit name=\"mm\"><BaseUnit m=\"1\" factor=\"0.001\"/></Unit>",
        )
        .replace(
            "name=\"u\" valueReference=\"1\"",
            "name=\"u\" valueReference=\"1\" unit=\"mm\"",
        )
        },
    );
    let mut osc = component(
        "osc",
        "Oscillator",
        3,
        &[("c", 1.0), ("d", 0.0), ("x0", 0.25)],
    );
    osc.fmu = oscillator;
    let mut g = component("g", "CubicGain", 3, &[]);
    g.fmu = gain;
    let system = System {
        components: vec![osc, g, component("ft", "Feedthrough", 3, &[])],
        connections: vec![
            connect("osc.x", "g.u"),
            // g.y is a connection source, so g.u is set at every communication point.
            connect("g.y", "ft.Float64_continuous_input"),
        ],
        experiment: Experiment {
            stop: 0.5,
            step: 0.01,
            output_interval: Some(0.1),
            ..Experiment::default()
        },
    };
    let (table, _) = run(&system, &["osc.x", "g.u", "g.y"]);
    let (x, u) = (column(&table, "osc.x"), column(&table, "g.u"));
    assert!((x[0] - 0.25).abs() < 1e-15);
    for (row, &t) in table.time().iter().enumerate() {
        assert!(
            (u[row] - 1000.0 * x[row]).abs() <= 1e-12 * u[row].abs(),
            "t = {t}: x = {} m arrives as u = {} mm",
            x[row],
            u[row]
        );
    }
}

/// A panic on a worker is an error naming the component, and the pool stays usable: the next
/// jobs get their own answers (none left behind from the failed one).
#[test]
fn a_panicking_worker_task_names_its_component_and_leaves_no_stale_answer() {
    let mut system = two_mass(
        Decomposition::ForceForce,
        AlgorithmKind::Jacobi,
        0,
        1e-3,
        0.01,
    );
    system.experiment.parallel = true;
    let options = RunOptions {
        threads: 2,
        ..RunOptions::default()
    };
    let mut exec = Execution::instantiate(&system, &options).expect("instantiates");
    let error = exec
        .placement
        .run_all(&|i, _| {
            if i == 1 {
                panic!("simulated bug");
            }
            Ok(())
        })
        .expect_err("the panic is an error");
    assert_eq!(
        error.to_string(),
        "component \"spring\": a panic occurred while running it (a bug in cosimo or the FMU)"
    );
    for _ in 0..3 {
        exec.placement
            .run_all(&|_, _| Ok(()))
            .expect("the pool goes on");
        for i in 0..3 {
            let answer = exec.placement.run_one(i, move |_| Ok(i)).expect("answers");
            assert_eq!(answer, i, "component {i} gets its own answer");
        }
    }
}
