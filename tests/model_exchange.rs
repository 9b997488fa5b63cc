//! Model Exchange FMUs as components: cosimo integrates the kit's ME FMUs (FMI 2 and 3) with
//! its own solvers, handles their events where they happen, and couples them with
//! Co-Simulation FMUs under Jacobi, Gauss-Seidel and the implicit master.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use cosimo::fmu::instance::InstanceOptions;
use cosimo::fmu::model_exchange::{SolverMethod, SolverOptions};
use cosimo::fmu::{Fmu, Interface, Slave};

const VERSIONS: [u8; 2] = [2, 3];

/// Run one FMU through its Model Exchange interface with the CLI; the result table.
fn run_me(model: &str, version: u8, extra: &[&str]) -> cosimo::results::Table {
    let dir = temp_dir();
    let out = dir.path().join("out.csv");
    let mut args = vec![
        "run".to_string(),
        fmu(model, version).display().to_string(),
        "--interface".into(),
        "me".into(),
        "--quiet".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    cosimo_ok(&args);
    read_results(&out)
}

fn column<'a>(table: &'a cosimo::results::Table, name: &str) -> &'a [f64] {
    table.values(
        table
            .column(name)
            .unwrap_or_else(|| panic!("no column {name}")),
    )
}

/// An ME instance of a kit FMU whose FMI calls are collected, with these solver options.
fn traced_instance(
    model: &str,
    version: u8,
    solver: SolverOptions,
) -> (Box<dyn Slave>, Arc<Mutex<Vec<String>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let sink = calls.clone();
    let fmu = Fmu::open(&fmu(model, version))
        .unwrap()
        .through(Interface::ModelExchange)
        .unwrap();
    let options = InstanceOptions {
        log_fmi_calls: true,
        call_sink: Some(Arc::new(move |_, line| {
            sink.lock().unwrap().push(line.to_string())
        })),
        solver,
        ..InstanceOptions::default()
    };
    (fmu.instantiate("traced", options).unwrap(), calls)
}

/// The times at which the FMU entered event mode during stepping: the `fmi*SetTime` before
/// each `fmi*EnterEventMode`.
fn event_times(calls: &[String]) -> Vec<f64> {
    let mut times = Vec::new();
    let mut last_time = f64::NAN;
    for line in calls {
        if let Some(rest) = line.split("SetTime(time=").nth(1) {
            last_time = rest.split(')').next().unwrap().parse().unwrap();
        }
        if line.contains("EnterEventMode(") {
            times.push(last_time);
        }
    }
    times
}

/// The bouncing ball's bounce times in closed form (h0 = 1 m, g = 9.81 m/s2, e = 0.7, it
/// stops bouncing below 0.1 m/s).
fn bounce_times() -> Vec<f64> {
    let g = 9.81;
    let mut t = (2.0f64 / g).sqrt();
    let mut v = g * t;
    let mut times = vec![t];
    loop {
        v *= 0.7;
        if v < 0.1 {
            return times;
        }
        t += 2.0 * v / g;
        times.push(t);
    }
}

#[test]
fn dahlquist_through_model_exchange_matches_its_closed_form() {
    for version in VERSIONS {
        for solver in ["bdf", "rk45"] {
            let r = run_me(
                "Dahlquist",
                version,
                &["--solver", solver, "--solver-rtol", "1e-8"],
            );
            let x = column(&r, "x");
            let worst = r
                .time()
                .iter()
                .zip(x)
                .map(|(t, x)| (x - (-t).exp()).abs())
                .fold(0.0, f64::max);
            assert!(
                worst < 1e-8,
                "FMI {version} {solver}: worst error {worst:e}"
            );
            assert_eq!(r.time().len(), 101);
        }
    }
}

#[test]
fn bounces_land_on_the_closed_form_times() {
    let exact = bounce_times();
    assert_eq!(exact.len(), 11);
    for version in VERSIONS {
        for (method, rtol) in [(SolverMethod::Bdf, 1e-8), (SolverMethod::Tsit45, 1e-6)] {
            let solver = SolverOptions {
                method: Some(method),
                rtol: Some(rtol),
                atol: None,
            };
            let (mut ball, calls) = traced_instance("BouncingBall", version, solver);
            ball.enter_initialization_mode(None, 0.0, Some(3.0))
                .unwrap();
            ball.exit_initialization_mode().unwrap();
            calls.lock().unwrap().clear();
            let h = 0.01;
            for k in 0..300 {
                let step = ball.do_step(k as f64 * h, h).unwrap();
                assert!(!step.terminate_simulation);
            }
            // Each bounce is an event; the ball leaves the floor right after it (a crossing
            // back to h > 0, on which nothing happens): keep the events where the ball falls.
            let events = event_times(&calls.lock().unwrap());
            let bounces: Vec<f64> = exact
                .iter()
                .map(|&te| {
                    *events
                        .iter()
                        .min_by(|a, b| (*a - te).abs().total_cmp(&(*b - te).abs()))
                        .expect("events happened")
                })
                .collect();
            for (found, want) in bounces.iter().zip(&exact) {
                assert!(
                    (found - want).abs() < 1e-6,
                    "FMI {version} {method:?}: bounce at {found} s, closed form {want} s"
                );
            }
            assert!(
                events.len() <= 2 * exact.len() + 1,
                "FMI {version} {method:?}: {} events for {} bounces",
                events.len(),
                exact.len()
            );
            // At rest from the last bounce on: lying on the floor raises no more events.
            let mut hv = [0.0; 2];
            ball.get_float64(&[1, 3], &mut hv).unwrap();
            assert_eq!(hv, [0.0, 0.0], "FMI {version} {method:?}");
        }
    }
}

#[test]
fn stair_time_events_land_on_the_integer_times() {
    for version in VERSIONS {
        let me = run_me("Stair", version, &[]);
        let counter = column(&me, "counter");
        for (t, c) in me.time().iter().zip(counter) {
            // The counter steps at t = 1, 2, ...: right after a step it shows the new value.
            assert_eq!(*c, t.floor() + 1.0, "FMI {version} at t = {t}");
        }
        let (mut stair, calls) = traced_instance("Stair", version, SolverOptions::default());
        stair
            .enter_initialization_mode(None, 0.0, Some(10.0))
            .unwrap();
        stair.exit_initialization_mode().unwrap();
        calls.lock().unwrap().clear();
        for k in 0..20 {
            stair.do_step(k as f64 * 0.5, 0.5).unwrap();
        }
        let events = event_times(&calls.lock().unwrap());
        let expected: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(
            events, expected,
            "FMI {version}: time events exactly at 1, 2, ..., 10"
        );
    }
}

/// Robertson's chemical kinetics over [0, 1e5] s: the species match a reference computed in
/// the test at a tolerance 1e4 times tighter, to 1e-4 relative, in a few thousand integrator
/// steps (an explicit fixed-step method stable on this model needs a step below ~1e-3 s at
/// the end, about 1e8 steps).
#[test]
fn robertson_is_integrated_stiffly_to_its_stop_time() {
    for version in VERSIONS {
        let run = run_me(
            "Robertson",
            version,
            &["--solver-rtol", "1e-6", "--solver-atol", "1e-10"],
        );
        let reference = run_me(
            "Robertson",
            version,
            &["--solver-rtol", "1e-10", "--solver-atol", "1e-14"],
        );
        assert_eq!(*run.time().last().unwrap(), 1e5);
        for (species, floor) in [("y1", 1e-3), ("y2", 1e-9), ("y3", 1e-3)] {
            let deviation =
                max_relative_deviation(column(&run, species), column(&reference, species), floor);
            assert!(
                deviation < 1e-4,
                "FMI {version} {species}: {deviation:e} relative to the tight reference"
            );
        }
        // The known solution at t = 1e5 s (e.g. SUNDIALS' cvRoberts_dns example).
        let last = |s| *column(&reference, s).last().unwrap();
        assert!((last("y1") - 1.7866e-2).abs() < 1e-5, "y1 = {}", last("y1"));
        assert!(
            (last("y2") - 7.2749e-8).abs() < 1e-11,
            "y2 = {}",
            last("y2")
        );
        assert!((last("y3") - 0.98213).abs() < 1e-5, "y3 = {}", last("y3"));
    }
    // The work: a stiff solver takes few steps.
    let solver = SolverOptions {
        method: Some(SolverMethod::Bdf),
        rtol: Some(1e-6),
        atol: Some(1e-10),
    };
    let fmu = Fmu::open(&fmu("Robertson", 2))
        .unwrap()
        .through(Interface::ModelExchange)
        .unwrap();
    let library = fmu.library().unwrap().clone();
    let inner = cosimo::fmu::instance::instantiate_model_exchange(
        library,
        fmu.description().clone(),
        "robertson",
        None,
        InstanceOptions::default(),
    )
    .unwrap();
    let mut slave = cosimo::fmu::model_exchange::ModelExchangeSlave::new(inner, solver).unwrap();
    slave
        .enter_initialization_mode(None, 0.0, Some(1e5))
        .unwrap();
    slave.exit_initialization_mode().unwrap();
    let h = 10.0;
    for k in 0..10_000 {
        slave.do_step(k as f64 * h, h).unwrap();
    }
    // About two BDF steps per macro step (each ends on the communication point), where an
    // explicit method stable at the end (h < ~1e-3 s) would need about 1e8.
    let stats = slave.statistics();
    assert!(
        (stats.steps as f64 - 21_500.0).abs() < 0.15 * 21_500.0,
        "{} integrator steps for Robertson over 1e5 s (measured: 21,507)",
        stats.steps
    );
    assert_eq!(stats.events, 0);
}

/// A saved state restores the FMU and the integrator: the repeated step is bit-identical.
#[test]
fn a_restored_state_repeats_the_step_bit_for_bit() {
    for version in VERSIONS {
        for method in [SolverMethod::Bdf, SolverMethod::Tsit45] {
            let solver = SolverOptions {
                method: Some(method),
                ..SolverOptions::default()
            };
            let (mut ball, _) = traced_instance("BouncingBall", version, solver);
            ball.enter_initialization_mode(None, 0.0, Some(3.0))
                .unwrap();
            ball.exit_initialization_mode().unwrap();
            for k in 0..40 {
                ball.do_step(k as f64 * 0.01, 0.01).unwrap();
            }
            let saved = ball.save_state().unwrap();
            let mut first = [0.0; 2];
            // Over the first bounce (0.4515 s): an event inside the repeated interval.
            ball.do_step(0.40, 0.1).unwrap();
            ball.get_float64(&[1, 3], &mut first).unwrap();
            ball.restore_state(saved).unwrap();
            let mut again = [0.0; 2];
            ball.do_step(0.40, 0.1).unwrap();
            ball.get_float64(&[1, 3], &mut again).unwrap();
            assert_eq!(
                first.map(f64::to_bits),
                again.map(f64::to_bits),
                "FMI {version} {method:?}"
            );
            assert!(first[1] > 0.0, "the ball bounced: v = {}", first[1]);
        }
    }
}

/// The two-mass example with both masses (or one) as Model Exchange FMUs matches the all-CS
/// result under Jacobi, Gauss-Seidel and the implicit master (which repeats macro steps from
/// saved states, through the ME components too).
#[test]
fn two_masses_as_model_exchange_match_co_simulation_under_every_master() {
    let system = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fmus/two-mass-force-displacement.json"),
    )
    .unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&system).unwrap();
    for c in json["components"].as_array_mut().unwrap() {
        let model = c["fmu"].as_str().unwrap().to_string();
        let version = if model.contains("fmi2") { 2 } else { 3 };
        c["fmu"] = fmu("Oscillator", version).display().to_string().into();
    }
    let dir = temp_dir();
    let cs_file = dir.path().join("cs.json");
    std::fs::write(&cs_file, json.to_string()).unwrap();
    let mut both = json.clone();
    for c in both["components"].as_array_mut().unwrap() {
        c["interface"] = "me".into();
    }
    let me_file = dir.path().join("me.json");
    std::fs::write(&me_file, both.to_string()).unwrap();
    let mut one = json.clone();
    one["components"][1]["interface"] = "me".into();
    let mixed_file = dir.path().join("mixed.json");
    std::fs::write(&mixed_file, one.to_string()).unwrap();

    // Jacobi with first-order extrapolation uses the components' output derivatives (ME:
    // from directional derivatives; CS: the FMU's own).
    for (algorithm, order) in [
        ("jacobi", "0"),
        ("jacobi", "1"),
        ("gauss-seidel", "0"),
        ("implicit", "0"),
    ] {
        let run = |file: &std::path::Path, name: &str| {
            let out = dir.path().join(format!("{name}-{algorithm}-{order}.csv"));
            let mut args = vec![
                "run".to_string(),
                file.display().to_string(),
                "--algorithm".into(),
                algorithm.into(),
                "--extrapolation-order".into(),
                order.into(),
                "--quiet".into(),
                "-o".into(),
                out.display().to_string(),
            ];
            // The solver's tolerance only where there is a Model Exchange component.
            if name != "cs" {
                args.extend(["--solver-rtol".to_string(), "1e-10".to_string()]);
            }
            cosimo_ok(&args);
            read_results(&out)
        };
        let cs = run(&cs_file, "cs");
        for (name, file) in [("me", &me_file), ("mixed", &mixed_file)] {
            let me = run(file, name);
            assert_eq!(me.time().len(), cs.time().len());
            for variable in ["mass1.x", "mass2.x", "mass2.Fc"] {
                let deviation = max_relative_deviation(
                    column(&me, variable),
                    column(&cs, variable),
                    if variable.ends_with("Fc") { 1.0 } else { 1e-3 },
                );
                assert!(
                    deviation < 1e-6,
                    "{algorithm} (order {order}) {name} {variable}: {deviation:e} from the all-CS \
                     result"
                );
            }
        }
    }
}

/// First output derivatives from directional derivatives: Dahlquist's x' = -k x.
#[test]
fn output_derivatives_come_from_directional_derivatives() {
    for version in VERSIONS {
        let (mut d, _) = traced_instance("Dahlquist", version, SolverOptions::default());
        assert_eq!(d.max_output_derivative_order(), 1);
        assert_eq!(
            d.description()
                .co_simulation
                .as_ref()
                .unwrap()
                .max_output_derivative_order,
            1
        );
        d.enter_initialization_mode(None, 0.0, Some(10.0)).unwrap();
        d.exit_initialization_mode().unwrap();
        d.do_step(0.0, 0.5).unwrap();
        let (mut x, mut dx) = ([0.0], [0.0]);
        d.get_float64(&[1], &mut x).unwrap();
        d.get_output_derivatives(&[1], 1, &mut dx).unwrap();
        assert_eq!(dx[0], -x[0], "FMI {version}");
        assert!(d.get_output_derivatives(&[1], 2, &mut dx).is_err());
    }
}

#[test]
fn the_interface_a_component_names_must_be_there() {
    let dir = temp_dir();
    let file = dir.path().join("system.json");
    let system = serde_json::json!({
        "components": [
            {"name": "gain", "fmu": fmu("Gain", 2).display().to_string(), "interface": "me"}
        ],
        "experiment": {"startTime": 0, "stopTime": 1, "stepSize": 0.1}
    });
    std::fs::write(&file, system.to_string()).unwrap();
    let out = cosimo(["run", &file.display().to_string(), "--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let text = show(&out);
    assert!(text.contains("component \"gain\""), "{text}");
    assert!(text.contains("has no Model Exchange interface"), "{text}");
    assert!(text.contains("use interface \"cs\""), "{text}");
    // --interface chooses between two: with no FMU that has both it would do nothing, and
    // the solver options need a Model Exchange component.
    let idle = cosimo([
        "run",
        &fmu("Gain", 2).display().to_string(),
        "--interface",
        "me",
        "--quiet",
    ]);
    assert_eq!(idle.status.code(), Some(2), "{}", show(&idle));
    assert!(
        show(&idle).contains("no component here has both"),
        "{}",
        show(&idle)
    );
    let idle = cosimo([
        "run",
        &fmu("Dahlquist", 2).display().to_string(),
        "--solver",
        "rk45",
        "--quiet",
    ]);
    assert_eq!(idle.status.code(), Some(2), "{}", show(&idle));
    assert!(
        show(&idle).contains("and this run has none (add --interface me"),
        "{}",
        show(&idle)
    );
    let bad = cosimo([
        "run",
        &fmu("Dahlquist", 2).display().to_string(),
        "--interface",
        "me",
        "--solver-rtol",
        "2",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", show(&bad));
    assert!(show(&bad).contains("--solver-rtol 2"), "{}", show(&bad));
}

#[test]
fn inspect_shows_both_interfaces() {
    for version in VERSIONS {
        let out = cosimo_ok([
            "inspect",
            &fmu("BouncingBall", version).display().to_string(),
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Co-Simulation (BouncingBall), Model Exchange (BouncingBall)"),
            "{text}"
        );
        assert!(
            text.contains("Model Exchange   2 continuous states, 1 event indicators"),
            "{text}"
        );
        let json = cosimo_ok([
            "inspect",
            "--json",
            &fmu("BouncingBall", version).display().to_string(),
        ]);
        let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(json["modelExchange"]["continuousStates"], 2);
        assert_eq!(json["modelExchange"]["eventIndicators"], 1);
    }
}

/// An SSP chooses a component's interface with `<cosimo:Component interface="me"/>`.
#[test]
fn an_ssp_annotation_chooses_the_interface() {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let original = root.join("fmus/two-mass-force-force.ssp");
    let ssd = std::fs::read_to_string(original.join("SystemStructure.ssd")).unwrap();
    let ssd = ssd.replace(
        "../../target/fmus",
        &root.join("target/fmus").display().to_string(),
    );
    let dir = temp_dir();
    let with = |attributes: &str, name: &str| {
        let annotation = format!(
            "<ssc:Annotations><ssc:Annotation type=\"org.cosimo.component\"><cosimo:Component \
             {attributes}/></ssc:Annotation></ssc:Annotations>\n      </ssd:Component>"
        );
        let folder = dir.path().join(format!("{name}.ssp"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("SystemStructure.ssd"),
            ssd.replacen("</ssd:Component>", &annotation, 1),
        )
        .unwrap();
        folder
    };
    let plain = dir.path().join("plain.csv");
    cosimo_ok([
        "run",
        &original.display().to_string(),
        "-q",
        "-o",
        &plain.display().to_string(),
    ]);
    let me = dir.path().join("me.csv");
    let out = cosimo_ok([
        "run",
        &with(r#"interface="me""#, "me").display().to_string(),
        "--solver-rtol",
        "1e-10",
        "-o",
        &me.display().to_string(),
    ]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Model Exchange: "),
        "{}",
        show(&out)
    );
    let (a, b) = (read_results(&me), read_results(&plain));
    assert_eq!(a.time().len(), b.time().len());
    let deviation = max_relative_deviation(a.values(1), b.values(1), 1e-3);
    assert!(deviation < 1e-6, "{deviation:e}");
    let bad = cosimo([
        "run",
        &with(r#"interface="fmi""#, "bad").display().to_string(),
        "-q",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", show(&bad));
    assert!(
        show(&bad).contains("interface=\"fmi\"; expected cs (Co-Simulation) or me"),
        "{}",
        show(&bad)
    );
}
