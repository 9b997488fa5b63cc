//! Every model of the project's test set, FMI 2 and FMI 3, run from the command line and
//! compared with its closed-form or an independently integrated solution.

mod common;

use common::*;

/// Run one FMU from the CLI and return its results.
fn run_model(model: &str, version: u8, extra: &[&str]) -> cosimo::results::Table {
    let dir = temp_dir();
    let csv = dir.path().join("out.csv");
    let path = fmu(model, version);
    let mut args = vec![
        "run".to_string(),
        path.display().to_string(),
        "--quiet".into(),
        "-o".into(),
    ];
    args.push(csv.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    cosimo_ok(&args);
    read_results(&csv)
}

#[test]
fn dahlquist_decays_exponentially() {
    for version in [2, 3] {
        let t = run_model(
            "Dahlquist",
            version,
            &[
                "--start-value",
                "k=2",
                "--start-value",
                "x0=3",
                "--stop-time",
                "2",
                "--step-size",
                "0.1",
            ],
        );
        let x = t.values(t.column("x").expect("x"));
        for (i, &time) in t.time().iter().enumerate() {
            let exact = 3.0 * (-2.0 * time).exp();
            assert!(
                (x[i] - exact).abs() < 1e-12 * exact.max(1e-3),
                "FMI {version} t = {time}: {} vs {exact}",
                x[i]
            );
        }
    }
}

#[test]
fn bouncing_ball_follows_the_ballistic_solution_and_bounces_where_it_should() {
    let (g, e, h0) = (9.81f64, 0.7, 1.0);
    let t1 = (2.0 * h0 / g).sqrt();
    let v1 = e * g * t1;
    let exact = |t: f64| {
        if t < t1 {
            h0 - 0.5 * g * t * t
        } else {
            v1 * (t - t1) - 0.5 * g * (t - t1) * (t - t1)
        }
    };
    for (version, extra) in [(2, vec![]), (3, vec![]), (3, vec!["--event-mode"])] {
        let mut args = vec!["--stop-time", "1.2", "--step-size", "0.01"];
        args.extend(extra.iter());
        let t = run_model("BouncingBall", version, &args);
        let h = t.values(t.column("h").expect("h"));
        for (i, &time) in t.time().iter().enumerate() {
            assert!(
                h[i] > -1e-9,
                "FMI {version} {extra:?}: h = {} below the floor at t = {time}",
                h[i]
            );
            // Up to the second bounce the ball's flight is known in closed form.
            if time < t1 + 2.0 * v1 / g - 0.01 {
                assert!(
                    (h[i] - exact(time)).abs() < 1e-6,
                    "FMI {version} {extra:?} t = {time}: h = {} vs {}",
                    h[i],
                    exact(time)
                );
            }
        }
    }
}

#[test]
fn stair_counts_whole_seconds() {
    for version in [2, 3] {
        let t = run_model(
            "Stair",
            version,
            &["--stop-time", "5", "--step-size", "0.25"],
        );
        let counter = t.values(t.column("counter").expect("counter"));
        for (i, &time) in t.time().iter().enumerate() {
            // At an integer time the row comes after the event.
            let expected = time.floor() + 1.0;
            assert_eq!(counter[i], expected, "FMI {version} t = {time}");
        }
    }
}

#[test]
fn resource_reads_its_file() {
    for version in [2, 3] {
        let t = run_model(
            "Resource",
            version,
            &["--stop-time", "0.3", "--step-size", "0.1"],
        );
        let y = t.values(t.column("y").expect("y"));
        assert!(y.iter().all(|&v| v == 97.0), "FMI {version}: {y:?}");
    }
}

#[test]
fn van_der_pol_matches_an_independent_integration() {
    // RK4 written here, with a step far below the FMU's communication step.
    let mu = 1.0;
    let f = |x: [f64; 2]| [x[1], mu * (1.0 - x[0] * x[0]) * x[1] - x[0]];
    let reference = |t_end: f64| {
        let h = 1e-5;
        let mut x = [2.0, 0.0];
        let n = (t_end / h).round() as usize;
        for _ in 0..n {
            let k1 = f(x);
            let k2 = f([x[0] + 0.5 * h * k1[0], x[1] + 0.5 * h * k1[1]]);
            let k3 = f([x[0] + 0.5 * h * k2[0], x[1] + 0.5 * h * k2[1]]);
            let k4 = f([x[0] + h * k3[0], x[1] + h * k3[1]]);
            x[0] += h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]);
            x[1] += h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1]);
        }
        x
    };
    for version in [2, 3] {
        let t = run_model(
            "VanDerPol",
            version,
            &[
                "--stop-time",
                "2",
                "--step-size",
                "0.01",
                "--output-interval",
                "1",
            ],
        );
        let x0 = t.values(t.column("x0").expect("x0"));
        for (i, &time) in t.time().iter().enumerate() {
            let exact = reference(time);
            assert!(
                (x0[i] - exact[0]).abs() < 1e-8,
                "FMI {version} t = {time}: {} vs {}",
                x0[i],
                exact[0]
            );
        }
    }
}

#[test]
fn feedthrough_passes_its_start_values_through() {
    for version in [2, 3] {
        let t = run_model(
            "Feedthrough",
            version,
            &[
                "--stop-time",
                "0.2",
                "--step-size",
                "0.1",
                "--start-value",
                "Float64_continuous_input=2.5",
                "--start-value",
                "Int32_input=-7",
                "--start-value",
                "Boolean_input=true",
                "--output-variable",
                "Float64_continuous_output",
                "--output-variable",
                "Int32_output",
                "--output-variable",
                "Boolean_output",
            ],
        );
        for (column, value) in [
            ("Float64_continuous_output", 2.5),
            ("Int32_output", -7.0),
            ("Boolean_output", 1.0),
        ] {
            let values = t.values(t.column(column).unwrap_or_else(|| panic!("{column}")));
            assert!(
                values.iter().all(|&v| v == value),
                "FMI {version} {column}: {values:?}"
            );
        }
    }
}

#[test]
fn faulty_without_a_failure_integrates_x_dot_equals_one() {
    for version in [2, 3] {
        let t = run_model(
            "Faulty",
            version,
            &["--stop-time", "1", "--step-size", "0.1"],
        );
        let x = t.values(t.column("x").expect("x"));
        for (i, &time) in t.time().iter().enumerate() {
            assert!(
                (x[i] - time).abs() < 1e-12,
                "FMI {version} t = {time}: {}",
                x[i]
            );
        }
    }
}
