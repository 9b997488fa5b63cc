//! `cosimo run` on systems: the example system files in `fmus/`, the command line's short form,
//! the master options, a failing component and a bad connection.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use common::systems::{two_mass, two_mass_exact, Decomposition};
use common::*;
use cosimo::results::Table;
use cosimo::settings::AlgorithmKind;

/// Build every FMU the examples use (they refer to `../target/fmus/`).
fn pack_fmus() {
    fmu_pack::packed_fmus().expect("the project's FMUs pack");
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus")
        .join(name)
}

fn args(items: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    items.iter().map(|s| s.as_ref().to_os_string()).collect()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every value of two tables agrees bit for bit.
fn assert_same(label: &str, a: &Table, b: &Table) {
    assert_eq!(a.columns(), b.columns(), "{label}: columns");
    assert_eq!(a.time(), b.time(), "{label}: times");
    for (c, name) in a.columns().iter().enumerate() {
        for (row, (x, y)) in a.values(c).iter().zip(b.values(c)).enumerate() {
            assert_eq!(
                x.to_bits(),
                y.to_bits(),
                "{label}: {name} at t = {}: {x} vs {y}",
                a.time()[row]
            );
        }
    }
}

#[test]
fn every_example_system_runs() {
    pack_fmus();
    let dir = temp_dir();
    let mut examples: Vec<PathBuf> = std::fs::read_dir(example(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        // Study files are for `cosimo sweep` (tests/sweep.rs runs the example study).
        .filter(|p| !p.to_string_lossy().contains("study"))
        .collect();
    examples.sort();
    for name in [
        "two-mass-force-force.json",
        "two-mass-force-displacement.json",
        "bouncing-ball.json",
        "conformance-chain.json",
    ] {
        assert!(examples.contains(&example(name)), "{name} is an example");
    }
    for path in &examples {
        let out = dir
            .path()
            .join(path.file_stem().unwrap())
            .with_extension("csv");
        let output = cosimo_ok(args(&[&"run", path, &"-o", &out, &"--quiet"]));
        assert!(
            stderr(&output).is_empty(),
            "{}: {}",
            path.display(),
            show(&output)
        );
        let text = std::fs::read_to_string(&out).unwrap();
        let header = text.lines().next().unwrap();
        assert!(header.starts_with("\"time\","), "{header}");
        // Columns are component.variable and every row is complete.
        let columns = header.split(',').count();
        for column in header.split(',').skip(1) {
            assert!(
                column.trim_matches('"').contains('.'),
                "{}: column {column}",
                path.display()
            );
        }
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert!(rows.len() > 10, "{}: {} rows", path.display(), rows.len());
        for row in &rows {
            assert_eq!(row.split(',').count(), columns, "{}: {row}", path.display());
        }
    }
}

#[test]
fn the_force_force_file_writes_component_variable_columns() {
    pack_fmus();
    let dir = temp_dir();
    let out = dir.path().join("ff.csv");
    cosimo_ok(args(&[
        &"run",
        &example("two-mass-force-force.json"),
        &"-o",
        &out,
    ]));
    let table = read_results(&out);
    for column in [
        "mass1.x",
        "mass1.v",
        "mass1.a",
        "mass1.Fc",
        "spring.F1",
        "spring.F2",
        "mass2.x",
        "mass2.v",
    ] {
        assert!(
            table.column(column).is_some(),
            "{column} missing from {:?}",
            table.columns()
        );
    }
    assert_eq!(table.time().len(), 101, "outputInterval 1e-2 over 1 s");
    assert_eq!(table.time()[100], 1.0);
    let x1 = table.values(table.column("mass1.x").unwrap());
    assert_eq!(x1[0], 0.1, "mass1.x0 from the file");
    // Zero-order hold with H = 1e-3: close to the monolithic solution.
    for (row, &t) in table.time().iter().enumerate() {
        assert!(
            (x1[row] - two_mass_exact(t)[0]).abs() < 2e-3,
            "t = {t}: x1 = {}",
            x1[row]
        );
    }
}

#[test]
fn the_force_displacement_file_is_the_library_system() {
    pack_fmus();
    let dir = temp_dir();
    let out = dir.path().join("fd.csv");
    cosimo_ok(args(&[
        &"run",
        &example("two-mass-force-displacement.json"),
        &"-o",
        &out,
        &"--output-variable",
        &"mass1.x",
        &"--output-variable",
        &"mass1.v",
        &"--output-variable",
        &"mass2.x",
        &"--output-variable",
        &"mass2.v",
    ]));
    let from_file = read_results(&out);
    let mut system = two_mass(
        Decomposition::ForceDisplacement,
        AlgorithmKind::Jacobi,
        0,
        1e-3,
        1.0,
    );
    system.experiment.output_interval = Some(1e-2);
    let (in_process, _) =
        common::systems::run(&system, &["mass1.x", "mass1.v", "mass2.x", "mass2.v"]);
    assert_same("file vs library", &in_process, &from_file);
}

/// The short form of two-mass-force-force.json.
fn short_form(dir: &Path) -> Vec<OsString> {
    let mut a = args(&[
        &"run",
        &format!("mass1={}", fmu("Oscillator", 2).display()),
        &format!("spring={}", fmu("CouplingSpring", 2).display()),
        &format!("mass2={}", fmu("Oscillator", 3).display()),
    ]);
    for (from, to) in [
        ("mass1.x", "spring.x1"),
        ("mass1.v", "spring.v1"),
        ("mass2.x", "spring.x2"),
        ("mass2.v", "spring.v2"),
        ("spring.F1", "mass1.F"),
        ("spring.F2", "mass2.F"),
    ] {
        a.push("--connect".into());
        a.push(format!("{from}={to}").into());
    }
    for value in [
        "mass1.m=1",
        "mass1.c=1000",
        "mass1.d=10",
        "mass1.x0=0.1",
        "mass1.v0=0",
        "spring.c1=1000",
        "spring.d1=10",
        "spring.c3=0",
        "spring.d3=0",
        "mass2.m=1",
        "mass2.c=1000",
        "mass2.d=10",
        "mass2.x0=0",
        "mass2.v0=0",
    ] {
        a.push("--start-value".into());
        a.push(value.into());
    }
    a.extend(args(&[
        &"--stop-time",
        &"0.5",
        &"--step-size",
        &"1e-3",
        &"--output-interval",
        &"0.01",
        &"-o",
        &dir.join("short.csv"),
    ]));
    a
}

fn file_form(dir: &Path, name: &str, extra: &[&str]) -> Vec<OsString> {
    let mut a = args(&[
        &"run",
        &example("two-mass-force-force.json"),
        &"--stop-time",
        &"0.5",
        &"--step-size",
        &"1e-3",
        &"--output-interval",
        &"0.01",
        &"-o",
        &dir.join(name),
    ]);
    a.extend(extra.iter().map(OsString::from));
    a
}

#[test]
fn the_short_form_gives_the_results_of_the_system_file() {
    pack_fmus();
    let dir = temp_dir();
    cosimo_ok(short_form(dir.path()));
    cosimo_ok(file_form(dir.path(), "file.csv", &[]));
    let short = read_results(&dir.path().join("short.csv"));
    let file = read_results(&dir.path().join("file.csv"));
    assert_eq!(short.time().len(), 51);
    assert_same("short form vs file", &file, &short);
}

#[test]
fn master_options_are_accepted_and_take_effect() {
    pack_fmus();
    let dir = temp_dir();
    let run = |name: &str, extra: &[&str]| {
        cosimo_ok(file_form(dir.path(), name, extra));
        read_results(&dir.path().join(name))
    };
    let jacobi = run("jacobi.csv", &[]);
    let parallel = run("parallel.csv", &["--parallel", "--threads", "2"]);
    assert_same("--parallel vs sequential Jacobi", &jacobi, &parallel);
    let gauss_seidel = run("gs.csv", &["--algorithm", "gauss-seidel"]);
    let order2 = run("k2.csv", &["--extrapolation-order", "2"]);
    let order2_parallel = run("k2p.csv", &["--extrapolation-order", "2", "--parallel"]);
    assert_same("--parallel with order 2", &order2, &order2_parallel);

    // Error against the monolithic solution over the grid, positions of both masses.
    let error = |table: &Table| {
        let (x1, x2) = (
            table.values(table.column("mass1.x").unwrap()),
            table.values(table.column("mass2.x").unwrap()),
        );
        table
            .time()
            .iter()
            .enumerate()
            .map(|(row, &t)| {
                let exact = two_mass_exact(t);
                (x1[row] - exact[0]).abs().max((x2[row] - exact[2]).abs())
            })
            .fold(0.0, f64::max)
    };
    let implicit = run("implicit.csv", &["--algorithm", "implicit"]);
    let implicit_components = run(
        "implicit-components.csv",
        &["--algorithm", "implicit", "--jacobian", "components"],
    );
    let e_implicit = error(&implicit);
    let e_components = error(&implicit_components);
    assert!(e_implicit < error(&jacobi), "implicit is more accurate");
    assert!(
        (e_components - e_implicit).abs() < 1e-9,
        "--jacobian components converges to the same solution ({e_components:e} vs {e_implicit:e})"
    );
    let (e_jacobi, e_gs, e_k2) = (error(&jacobi), error(&gauss_seidel), error(&order2));
    assert!(e_gs != e_jacobi, "Gauss-Seidel is another algorithm");
    assert!(
        e_k2 < e_jacobi / 100.0,
        "extrapolation order 2 ({e_k2:e}) is far more accurate than 0 ({e_jacobi:e})"
    );
}

#[test]
fn the_extended_coupling_example_runs_with_both_extensions() {
    // fmus/two-mass-extended.json: D-extended F/F with Q at H = 2 ms, and the same file with
    // --extension integral (its connections name the sources' running integrals).
    pack_fmus();
    let dir = temp_dir();
    let error = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut a = args(&[
            &"run",
            &example("two-mass-extended.json"),
            &"--stop-time",
            &"0.5",
            &"-o",
            &out,
        ]);
        a.extend(extra.iter().map(OsString::from));
        let output = cosimo_ok(a);
        let summary = stderr(&output);
        // Linear subsystems: one Newton iteration per macro step.
        assert!(
            summary.contains("250 macro steps")
                && summary.contains("corrector: 250 Newton iterations"),
            "{summary}"
        );
        let table = read_results(&out);
        let x1 = table.values(table.column("mass1.x").unwrap());
        table
            .time()
            .iter()
            .enumerate()
            .map(|(row, &t)| (x1[row] - two_mass_exact(t)[0]).abs())
            .fold(0.0, f64::max)
    };
    let derivative = error("derivative.csv", &[]);
    let integral = error("integral.csv", &["--extension", "integral"]);
    eprintln!("max |x1 - exact|: derivative {derivative:e}, integral {integral:e}");
    // Pinned to 2 %, measured on this master (the README quotes them): D-extended Q 5.02e-7 m,
    // I-extended Q 5.00e-9 m at H = 2 ms (x0 = 0.1 m).
    assert!(
        (derivative / 5.0198e-7 - 1.0).abs() < 0.02,
        "derivative: {derivative:e}"
    );
    assert!(
        (integral / 4.9974e-9 - 1.0).abs() < 0.02,
        "integral: {integral:e}"
    );
    // Half-step marks without an extension are refused, not silently ignored.
    let refused = cosimo(args(&[
        &"run",
        &example("two-mass-extended.json"),
        &"--extension",
        &"none",
        &"-o",
        &dir.path().join("none.csv"),
    ]));
    assert_eq!(refused.status.code(), Some(2), "{}", show(&refused));
    assert!(
        stderr(&refused).contains("halfStep needs the extended implicit coupling"),
        "{}",
        show(&refused)
    );
}

#[test]
fn a_failing_system_exits_1_naming_time_and_component_and_keeps_its_rows() {
    pack_fmus();
    let dir = temp_dir();
    let out = dir.path().join("faulty.csv");
    for (version, failure) in [(2, "2"), (3, "2"), (3, "1")] {
        let output = cosimo(args(&[
            &"run",
            &format!("osc={}", fmu("Oscillator", 3).display()),
            &format!("faulty={}", fmu("Faulty", version).display()),
            &"--connect",
            &"faulty.x=osc.F",
            &"--start-value",
            &format!("faulty.failure={failure}"),
            &"--stop-time",
            &"1",
            &"--step-size",
            &"0.01",
            &"-o",
            &out,
        ]));
        let label = format!("FMI {version} failure {failure}");
        assert_eq!(output.status.code(), Some(1), "{label}: {}", show(&output));
        let text = stderr(&output);
        assert!(
            text.contains("simulation failed at t = 0.49") && text.contains("faulty: "),
            "{label}: {text}"
        );
        assert!(
            text.contains(&format!("results up to t = 0.49 are in {}", out.display())),
            "{label}: {text}"
        );
        let table = read_results(&out);
        let last = *table.time().last().unwrap();
        assert!(
            (last - 0.49).abs() < 1e-12,
            "{label}: the last row is at t = {last}"
        );
        assert_eq!(table.time().len(), 50, "{label}: rows 0, 0.01, ..., 0.49");
        let x = table.values(table.column("faulty.x").unwrap());
        assert!(
            (x[49] - 0.49).abs() < 1e-12,
            "{label}: x' = 1 up to the failure"
        );
    }
}

#[test]
fn a_connection_to_a_missing_variable_exits_2_naming_it() {
    pack_fmus();
    let dir = temp_dir();
    let output = cosimo(args(&[
        &"run",
        &format!("a={}", fmu("CubicGain", 3).display()),
        &format!("b={}", fmu("CubicGain", 2).display()),
        &"--connect",
        &"a.nope=b.u",
        &"-o",
        &dir.path().join("never.csv"),
    ]));
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let text = stderr(&output);
    assert!(
        text.contains("component \"a\": variable \"nope\" does not exist in CubicGain"),
        "{text}"
    );
    assert!(!dir.path().join("never.csv").exists(), "nothing ran");
}

#[test]
fn the_bouncing_ball_example_bounces_with_and_without_event_mode() {
    pack_fmus();
    let dir = temp_dir();
    let mut tables = Vec::new();
    for extra in [&[][..], &["--event-mode"][..]] {
        let out = dir.path().join(format!("ball{}.csv", extra.len()));
        let mut a = args(&[
            &"run",
            &example("bouncing-ball.json"),
            &"-o",
            &out,
            &"--output-variable",
            &"ball.h",
            &"--output-variable",
            &"ball.v",
            &"--output-variable",
            &"stair.counter",
        ]);
        a.extend(extra.iter().map(OsString::from));
        cosimo_ok(a);
        tables.push(read_results(&out));
    }
    for table in &tables {
        let (h, v) = (table.values(0), table.values(1));
        assert_eq!(table.time().len(), 301);
        assert!(h.iter().all(|&h| h >= -1e-9), "the ball stays above ground");
        // After the first bounce (0.4515 s): v = e g tb - g (t - tb).
        let tb = 0.4515236409857309;
        let row = table.time().iter().position(|&t| t > 0.5).unwrap();
        let t = table.time()[row];
        let want = 0.7 * 9.81 * tb - 9.81 * (t - tb);
        assert!(
            (v[row] - want).abs() < 1e-6,
            "v({t}) = {}, want {want}",
            v[row]
        );
        assert_eq!(
            table.values(2)[table.time().len() - 2],
            3.0,
            "stair at 2.99"
        );
    }
    // Event mode and events inside the step agree.
    for c in 0..3 {
        for (row, (x, y)) in tables[0]
            .values(c)
            .iter()
            .zip(tables[1].values(c))
            .enumerate()
        {
            assert!(
                (x - y).abs() < 1e-6,
                "{} at t = {}: {x} without, {y} with event mode",
                tables[0].columns()[c],
                tables[0].time()[row]
            );
        }
    }
}

#[test]
fn plot_draws_a_variable_of_several_result_files() {
    let dir = common::temp_dir();
    let csv = dir.path().join("a.csv");
    std::fs::write(&csv, "\"time\",\"x\"\n0,0\n1,1\n2,4\n").unwrap();
    let png = dir.path().join("x.png");
    common::cosimo_ok([
        "plot".as_ref(),
        csv.as_os_str(),
        csv.as_os_str(),
        "--variable".as_ref(),
        "x".as_ref(),
        "-o".as_ref(),
        png.as_os_str(),
    ]);
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG"), "a PNG is written");
    let out = common::cosimo([
        "plot".as_ref(),
        csv.as_os_str(),
        "--variable".as_ref(),
        "y".as_ref(),
        "-o".as_ref(),
        png.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no column \"y\"; the columns are: x"));
}
