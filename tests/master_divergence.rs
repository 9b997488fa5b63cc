//! A diverging co-simulation stops within a bounded number of macro steps with a message that
//! says it diverged, where, which value and what to do, under every algorithm; the rows up to
//! the failure are kept. The divergence limit (`--divergence-limit`,
//! `experiment.divergenceLimit`) is checked and refused when invalid, and without it a
//! legitimate run with large values is not stopped.

mod common;

use std::path::Path;

use common::{cosimo, read_results, show, temp_dir};

/// Run `cosimo run SYSTEM ARGS` into a temporary CSV; the exit code, stderr and the time of
/// the last row written.
fn run(system: &str, args: &[&str]) -> (Option<i32>, String, f64) {
    fmu_pack::packed_fmus().expect("the test FMUs pack");
    let dir = temp_dir();
    let out = dir.path().join("out.csv");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = vec![
        "run".to_string(),
        root.join(system).display().to_string(),
        "-o".into(),
        out.display().to_string(),
    ];
    all.extend(args.iter().map(|s| s.to_string()));
    let output = cosimo(&all);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let last = if out.exists() {
        read_results(&out)
            .time()
            .last()
            .copied()
            .unwrap_or(f64::NAN)
    } else {
        f64::NAN
    };
    eprintln!("{}", show(&output));
    (output.status.code(), stderr, last)
}

/// The run failed (exit 1), said it diverged naming each of `parts`, and stopped before
/// `before` with rows kept up to there.
fn assert_diverged(result: (Option<i32>, String, f64), parts: &[&str], before: f64) {
    let (code, stderr, last) = result;
    assert_eq!(code, Some(1), "{stderr}");
    for part in ["the co-simulation diverged", "smaller macro step"]
        .iter()
        .chain(parts)
    {
        assert!(stderr.contains(part), "{part:?} missing from: {stderr}");
    }
    assert!(last > 0.0 && last < before, "last row at t = {last}");
}

/// A run without a limit that diverged until its values overflowed, before t = `before`.
fn assert_overflows(result: (Option<i32>, String, f64), before: f64) {
    let (code, stderr, last) = result;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("NaN"), "{stderr}");
    assert!(last < before, "{last}");
}

const TWO_MASS: &str = "fmus/two-mass-force-force.json";

#[test]
fn the_double_pendulum_at_h_3_6e_2_stops_where_the_index1_corrector_loses_the_joint() {
    // Meyer et al. (2018): k = 3 diverges for H >= 3.6e-2. Without the detector the run ground
    // on for minutes (the links spinning at 1e3..1e4 rad/s from t = 0.83); the corrector's
    // residual passes 10 % of the interface accelerations at t = 0.684 (it was 5.7e-3 of them
    // at 0.576, and never above 5e-6 at H = 1e-2).
    let result = run(
        "fmus/double-pendulum.json",
        &["--step-size", "3.6e-2", "--output-interval", "3.6e-2"],
    );
    assert!(
        result.1.contains("simulation failed at t = 0.64"),
        "{}",
        result.1
    );
    assert_diverged(
        result,
        &[
            "index-1 corrector",
            "constraint equation 1",
            "link2.py",
            "link1.py",
            "acceleration level",
            "t = 0.68",
        ],
        0.7,
    );
}

#[test]
fn the_stable_double_pendulum_runs_to_its_end() {
    let (code, stderr, last) = run("fmus/double-pendulum.json", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!((last - 2.0).abs() < 1e-12, "{last}");
}

/// The double pendulum under Baumgarte-stabilised constraint coupling (alpha = beta = 10, one
/// corrector), with `limit` as its divergence limit.
fn baumgarte_pendulum(dir: &Path, limit: Option<f64>) -> String {
    let mut system: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/double-pendulum.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for component in system["components"].as_array_mut().unwrap() {
        let fmu = component["fmu"].as_str().unwrap().replace(
            "../target",
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target")
                .display()
                .to_string(),
        );
        component["fmu"] = fmu.into();
    }
    let constraints = &mut system["experiment"]["constraints"];
    constraints["method"] = "baumgarte".into();
    constraints.as_object_mut().unwrap().remove("order");
    constraints["alpha"] = 10.into();
    constraints["beta"] = 10.into();
    constraints["corrector"] = true.into();
    if let Some(limit) = limit {
        system["experiment"]["divergenceLimit"] = limit.into();
    }
    let path = dir.join("baumgarte.json");
    std::fs::write(&path, system.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn baumgarte_stops_at_the_divergence_limit() {
    // At H = 0.1 the joint drifts apart (km by t = 1.5) and the limit stops it.
    let dir = temp_dir();
    let path = baumgarte_pendulum(dir.path(), Some(100.0));
    let result = run(&path, &["--step-size", "0.1", "--output-interval", "0.1"]);
    assert_diverged(result, &["exceeds the divergence limit 1e2"], 1.5);
}

#[test]
fn baumgarte_stops_where_the_joint_comes_apart() {
    // Without a limit the same run went on for minutes (t = 9 after two, the links turning at
    // 1e4..1e6 rad/s): its position gap passes half the mechanism's extent in the step to
    // t = 0.8 (0.68 m of 1.07 m), while at H = 1e-2 it stays below 1e-2 m to t = 10.
    let dir = temp_dir();
    let path = baumgarte_pendulum(dir.path(), None);
    let result = run(
        &path,
        &[
            "--step-size",
            "0.1",
            "--output-interval",
            "0.1",
            "--stop-time",
            "10",
        ],
    );
    assert_diverged(
        result,
        &[
            "in the macro step to t = 0.8, the Baumgarte multipliers let constraint equation 0 (-link1.px + link2.px) drift apart on position level: |g| = 6.806e-1",
            "more than 50 % of the largest interface position so far (1.067e0)",
        ],
        0.75,
    );
    let result = run(
        &path,
        &[
            "--step-size",
            "0.01",
            "--output-interval",
            "0.1",
            "--stop-time",
            "10",
        ],
    );
    assert_eq!(result.0, Some(0), "{}", result.1);
}

#[test]
fn jacobi_stops_at_the_limit_and_at_infinity_without_it() {
    // Force/force Jacobi with zero-order hold is unstable above H = 3.08e-2.
    let h = [
        "--step-size",
        "0.05",
        "--output-interval",
        "0.05",
        "--stop-time",
        "200",
    ];
    let limited = [&h[..], &["--divergence-limit", "1e3"]].concat();
    assert_diverged(
        run(TWO_MASS, &limited),
        &[
            "the coupling value spring.F1 -> mass1.F",
            "exceeds the divergence limit 1e3",
            "--divergence-limit",
        ],
        0.5,
    );
    // Without a limit the values overflow within a bounded number of steps (1063).
    assert_overflows(run(TWO_MASS, &h), 60.0);
}

#[test]
fn gauss_seidel_stops_at_the_limit() {
    let args = [
        "--algorithm",
        "gauss-seidel",
        "--step-size",
        "0.1",
        "--output-interval",
        "0.1",
        "--stop-time",
        "200",
        "--divergence-limit",
        "1e3",
    ];
    assert_diverged(
        run(TWO_MASS, &args),
        &["mass2.a", "exceeds the divergence limit 1e3"],
        0.3,
    );
}

#[test]
fn an_implicit_step_whose_corrector_never_converges_is_split_five_times_then_stops() {
    // A cubic spring on the oscillator, one Newton iteration and a tolerance no residual meets:
    // the corrector fails at every size, and the step from t = 0 is split into four 5 times
    // (1024 sub-steps of H / 1024) before the run stops; it used to split down to 1e-12 s.
    let dir = temp_dir();
    let fmu = |name: &str| fmu_pack::fmu_path(name, 2).display().to_string();
    let system = serde_json::json!({
        "components": [
            { "name": "mass", "fmu": fmu("Oscillator"), "parameters": { "x0": 1 } },
            { "name": "spring", "fmu": fmu("CubicGain"), "parameters": { "gain": -10, "cubic": -100 } }
        ],
        "connections": [
            { "from": "mass.x", "to": "spring.u" },
            { "from": "spring.y", "to": "mass.F" }
        ],
        "experiment": {
            "startTime": 0, "stopTime": 1, "stepSize": 0.1, "algorithm": "implicit",
            "corrector": { "maxIterations": 1, "absoluteTolerance": 1e-300, "relativeTolerance": 0 }
        }
    });
    let path = dir.path().join("cubic.json");
    std::fs::write(&path, system.to_string()).unwrap();
    let (code, stderr, _) = run(path.to_str().unwrap(), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("simulation failed at t = 0: the co-simulation diverged: the implicit corrector does not converge in the macro step from t = 0 even split 5 times into steps of 9.765625e-5 s (at most 1 iterations each; corrector.maxIterations)"),
        "{stderr}"
    );
}

#[test]
fn the_implicit_scheme_stops_at_the_limit_and_at_infinity_without_it() {
    let h = [
        "--algorithm",
        "implicit",
        "--extrapolation-order",
        "3",
        "--step-size",
        "0.1",
        "--output-interval",
        "0.1",
        "--stop-time",
        "200",
    ];
    let limited = [&h[..], &["--divergence-limit", "1e3"]].concat();
    assert_diverged(
        run(TWO_MASS, &limited),
        &["exceeds the divergence limit 1e3"],
        20.0,
    );
    assert_overflows(run(TWO_MASS, &h), 70.0);
}

#[test]
fn step_control_stops_at_the_limit() {
    // Tolerances so loose that the controller keeps the unstable largest step (the default
    // estimator ExSLocal weighs the coupling variables only).
    let args = [
        "--adaptive",
        "--rtol-coupling",
        "1e6",
        "--atol-coupling",
        "1e6",
        "--step-size",
        "0.05",
        "--max-step",
        "0.05",
        "--output-interval",
        "0.05",
        "--stop-time",
        "200",
        "--divergence-limit",
        "1e3",
    ];
    assert_diverged(
        run(TWO_MASS, &args),
        &["spring.F1 -> mass1.F", "exceeds the divergence limit 1e3"],
        0.5,
    );
}

#[test]
fn the_reduced_interface_model_stops_at_the_limit() {
    // The crane at H1 = 0.1 s (stable up to 25 ms): the actuator force passes 1e8 N at t = 6.1
    // (the stable run stays below 4.7e6 in every value) and becomes NaN at 6.7 without a limit.
    let args = [
        "--step-size",
        "0.1",
        "--output-interval",
        "0.1",
        "--divergence-limit",
        "1e8",
    ];
    assert_diverged(
        run("fmus/crane-single.json", &args),
        &["cyl1.f -> crane.f1", "exceeds the divergence limit 1e8"],
        6.5,
    );
}

#[test]
fn invalid_divergence_limits_are_refused() {
    for bad in ["0", "-1", "nan", "inf"] {
        let option = format!("--divergence-limit={bad}");
        let (code, stderr, _) = run(TWO_MASS, &[option.as_str()]);
        assert_eq!(code, Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains("--divergence-limit: the divergence limit must be a positive"),
            "{bad}: {stderr}"
        );
    }
    // In a system file, named as the file spells it.
    let dir = temp_dir();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(TWO_MASS))
        .unwrap()
        .replace("../target", &root.join("target").display().to_string())
        .replace(
            "\"extrapolationOrder\": 0",
            "\"extrapolationOrder\": 0, \"divergenceLimit\": -5",
        );
    let path = dir.path().join("bad.json");
    std::fs::write(&path, text).unwrap();
    let (code, stderr, _) = run(path.to_str().unwrap(), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("experiment.divergenceLimit: the divergence limit must be a positive"),
        "{stderr}"
    );
}

#[test]
fn large_values_of_a_legitimate_run_are_not_stopped_by_default() {
    // Mass 1 starts 1e12 m out: forces of 1e15 N, all finite and stable. No default bound.
    let args = ["--start-value", "mass1.x0=1e12"];
    let (code, stderr, last) = run(TWO_MASS, &args);
    assert_eq!(code, Some(0), "{stderr}");
    assert!((last - 1.0).abs() < 1e-12, "{last}");
    // A limit above them lets the run finish too.
    let args = [
        "--start-value",
        "mass1.x0=1e12",
        "--divergence-limit",
        "1e20",
    ];
    let (code, stderr, _) = run(TWO_MASS, &args);
    assert_eq!(code, Some(0), "{stderr}");
}
