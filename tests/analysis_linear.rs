//! The stability analyser on any system: a JSON system file with a "stability" section, its
//! one-step map built on the real master, against a closed form computed here from the ODE
//! matrices alone (Jacobi with zero-order hold: matrix exponentials, nothing of cosimo) and
//! against the thesis' two-mass analyser (another of cosimo's code paths, for the orders and
//! algorithms the closed form here does not cover); the study reader's and the command's
//! refusals.

mod common;

use std::path::{Path, PathBuf};

use common::{cosimo, show};
use cosimo::analysis::linear::{Axis, LinearAnalyser};
use cosimo::analysis::stability::{Analyser, Decomposition, Scheme, TestFmus, TwoMass};
use cosimo::analysis::study;
use cosimo::settings::implicit::Extension;
use cosimo::settings::{Algorithm, AlgorithmKind};
use cosimo::system::System;
use nalgebra::DMatrix;

/// The hand-written example: force/force two-mass oscillator, mass 2 an FMI 3 FMU.
fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fmus/two-mass-stability.json")
}

fn fmus() -> TestFmus {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    TestFmus::in_folder(&fmu_pack::fmus_dir())
}

/// The example's physical parameters (m = 1 kg, c = cc = 1000 N/m, d = dc = 10 N s/m).
const MODEL: TwoMass = TwoMass {
    m1: 1.0,
    c1: 1000.0,
    d1: 10.0,
    m2: 1.0,
    c2: 1000.0,
    d2: 10.0,
    cc: 1000.0,
    dc: 10.0,
};

/// The one-step map of the force/force two-mass oscillator under Jacobi with zero-order hold,
/// on z = (x1, v1, x2, v2), from the ODEs alone: each mass m x'' + d x' + c x = F with F held
/// over the macro step at the spring-damper's force at its start,
/// F1 = cc (x2 - x1) + dc (v2 - v1) = -F2. The step of one mass is the exponential of its
/// system augmented by the (constant) force: y(H) = Phi y(0) + Gamma F.
fn closed_form_jacobi_zoh(model: &TwoMass, h: f64) -> DMatrix<f64> {
    let mass = |m: f64, c: f64, d: f64| {
        #[rustfmt::skip]
        let augmented = DMatrix::from_row_slice(3, 3, &[
            0.0,    1.0,    0.0,
            -c / m, -d / m, 1.0 / m,
            0.0,    0.0,    0.0,
        ]) * h;
        let e = augmented.exp();
        (
            e.view((0, 0), (2, 2)).into_owned(),
            e.view((0, 2), (2, 1)).into_owned(),
        )
    };
    let (phi1, gamma1) = mass(model.m1, model.c1, model.d1);
    let (phi2, gamma2) = mass(model.m2, model.c2, model.d2);
    // F1 = k z, F2 = -k z.
    let k = DMatrix::from_row_slice(1, 4, &[-model.cc, -model.dc, model.cc, model.dc]);
    let mut map = DMatrix::zeros(4, 4);
    map.view_mut((0, 0), (2, 2)).copy_from(&phi1);
    map.view_mut((2, 2), (2, 2)).copy_from(&phi2);
    let forced1 = &gamma1 * &k;
    let forced2 = -(&gamma2 * &k);
    map.view_mut((0, 0), (2, 4))
        .zip_apply(&forced1, |a, b| *a += b);
    map.view_mut((2, 0), (2, 4))
        .zip_apply(&forced2, |a, b| *a += b);
    map
}

/// The largest modulus of the map's eigenvalues (nalgebra's Schur decomposition).
fn closed_form_radius(map: &DMatrix<f64>) -> f64 {
    map.complex_eigenvalues()
        .iter()
        .map(|l| l.norm())
        .fold(0.0, f64::max)
}

/// The first loss of stability of the closed form over H, found as the analyser documents its
/// search (a grid of 100 points per decade from `low`), then bisected to the last bit.
fn closed_form_max_stable_step(model: &TwoMass, low: f64) -> f64 {
    let rho = |h: f64| closed_form_radius(&closed_form_jacobi_zoh(model, h));
    let mut stable = low;
    let mut unstable = (1..=400)
        .map(|i: i32| low * 10f64.powf(f64::from(i) / 100.0))
        .find(|&h| {
            let found = rho(h) > 1.0;
            if !found {
                stable = h;
            }
            found
        })
        .unwrap();
    while unstable - stable > 1e-15 * unstable {
        let mid = 0.5 * (stable + unstable);
        if rho(mid) > 1.0 {
            unstable = mid;
        } else {
            stable = mid;
        }
    }
    stable
}

fn force_force(algorithm: AlgorithmKind, order: u8) -> Scheme {
    Scheme {
        decomposition: Decomposition::ForceForce,
        algorithm,
        order,
        extension: Extension::None,
    }
}

/// The example with another algorithm and order.
fn example_with(algorithm: AlgorithmKind, order: u8) -> (System, study::Study) {
    let (mut system, study) = study::read(&example()).unwrap();
    system.experiment.algorithm = Algorithm::with_order(algorithm, order).unwrap();
    (system, study)
}

#[test]
fn jacobi_with_zero_order_hold_on_a_system_file_has_the_closed_form_map() {
    // The central claim: the map the analyser measures on the real master (three FMUs, FMI 2
    // and FMI 3) is the one-step map of the ODEs, computed here with matrix exponentials alone,
    // on both sides of the stability limit (about 3.08e-2 s).
    fmus();
    let (system, study) = example_with(AlgorithmKind::Jacobi, 0);
    let mut general = LinearAnalyser::new(&system, &study).unwrap();
    for h in [1e-3, 1e-2, 3e-2, 3.2e-2, 5e-2] {
        general.set_step(h);
        let measured = general.map().unwrap();
        let exact = closed_form_jacobi_zoh(&MODEL, h);
        let worst = (&measured - &exact).abs().max();
        let (rho, rho_exact) = (
            cosimo::analysis::linear::spectral_radius(measured).unwrap(),
            closed_form_radius(&exact),
        );
        eprintln!("H = {h}: rho {rho:.15} vs closed form {rho_exact:.15}, map {worst:e}");
        assert!(worst < 1e-12, "H = {h}: the map differs by {worst:e}");
        assert!(
            (rho - rho_exact).abs() < 1e-12,
            "H = {h}: rho {rho} vs {rho_exact}"
        );
        assert_eq!(rho <= 1.0, rho_exact <= 1.0, "H = {h}: stability");
    }
    // In-phase, the spring is idle and each mass decays alone: |e^(lambda H)| = e^(-d H / 2m).
    let exact = closed_form_radius(&closed_form_jacobi_zoh(&MODEL, 1e-3));
    assert!(
        (exact - f64::exp(-5e-3)).abs() < 1e-12,
        "closed form {exact}"
    );
}

#[test]
fn the_analyser_on_a_system_file_builds_the_thesis_analysers_map() {
    let fmus = fmus();
    for (algorithm, order, h) in [
        (AlgorithmKind::Jacobi, 0, 1e-3),
        (AlgorithmKind::Jacobi, 2, 0.02),
        (AlgorithmKind::GaussSeidel, 1, 0.02),
        (AlgorithmKind::Implicit, 1, 0.05),
    ] {
        let (system, study) = example_with(algorithm, order);
        let mut general = LinearAnalyser::new(&system, &study).unwrap();
        general.set_step(h);
        let mut thesis = Analyser::new(&fmus, &MODEL, force_force(algorithm, order), h).unwrap();
        assert_eq!(general.dimension(), thesis.dimension());
        assert_eq!(general.dimension(), 4 + 6 * usize::from(order));
        let (a, b) = (general.map().unwrap(), thesis.map(&MODEL).unwrap());
        let worst = (&a - &b).abs().max();
        let (rho_a, rho_b) = (
            cosimo::analysis::linear::spectral_radius(a).unwrap(),
            cosimo::analysis::linear::spectral_radius(b).unwrap(),
        );
        eprintln!(
            "{algorithm} k = {order}, H = {h}: rho {rho_a:.12} vs {rho_b:.12}, map {worst:e}"
        );
        // The implicit corrector's finite-difference Jacobian carries rounding (~1e-9) into
        // the map (mass 2 is an FMI 3 FMU here, FMI 2 in the thesis' file).
        let tolerance = if algorithm == AlgorithmKind::Implicit {
            1e-8
        } else {
            1e-9
        };
        assert!(
            worst < tolerance,
            "{algorithm} k = {order}: maps differ by {worst:e}"
        );
        assert!((rho_a - rho_b).abs() < 1e-9, "{algorithm} k = {order}");
    }
    // Jacobi with zero-order hold at 1 ms: the in-phase mode, e^(-d H / 2m).
    let (system, study) = example_with(AlgorithmKind::Jacobi, 0);
    let rho = LinearAnalyser::new(&system, &study)
        .unwrap()
        .spectral_radius()
        .unwrap();
    assert!((rho - f64::exp(-5e-3)).abs() < 1e-9, "rho {rho}");
}

#[test]
fn a_map_over_named_and_fmu_parameters_is_the_thesis_analysers() {
    let fmus = fmus();
    let (system, study) = study::read(&example()).unwrap();
    let mut general = LinearAnalyser::new(&system, &study).unwrap();
    general.set_step(0.03);
    // "c" is the file's named parameter for both masses' stiffness.
    let (x, y) = (
        Axis::parse("c=500:2000").unwrap(),
        Axis::parse("spring.d1=0:20").unwrap(),
    );
    let map = general.parameter_map(&x, &y, 3).unwrap();
    assert_eq!(map.len(), 9);
    let mut thesis =
        Analyser::new(&fmus, &MODEL, force_force(AlgorithmKind::Jacobi, 0), 0.03).unwrap();
    for p in &map {
        let model = TwoMass {
            c1: p.x,
            c2: p.x,
            dc: p.y,
            ..MODEL
        };
        let rho = thesis.spectral_radius(&model).unwrap();
        assert!(
            (p.spectral_radius - rho).abs() < 1e-9,
            "c = {}, dc = {}: {} vs {rho}",
            p.x,
            p.y,
            p.spectral_radius
        );
        let exact = closed_form_radius(&closed_form_jacobi_zoh(&model, 0.03));
        assert!(
            (p.spectral_radius - exact).abs() < 1e-9,
            "c = {}, dc = {}: {} vs closed form {exact}",
            p.x,
            p.y,
            p.spectral_radius
        );
        assert_eq!(p.stable(), exact <= 1.0, "c = {}, dc = {}", p.x, p.y);
    }
    // As the closed form says: without coupling damping the scheme is unstable at 30 ms, with
    // 10 or 20 N s/m stable.
    let stable: Vec<bool> = map.iter().map(|p| p.stable()).collect();
    assert_eq!(
        stable,
        [false, true, true, false, true, true, false, true, true],
        "{map:?}"
    );
    // The map leaves the parameters as they were: the file's c = 1000, dc = 10.
    let rho = general.spectral_radius().unwrap();
    let expected = thesis.spectral_radius(&MODEL).unwrap();
    assert!((rho - expected).abs() < 1e-12, "{rho} vs {expected}");
}

#[test]
fn the_largest_stable_step_of_the_file_is_the_closed_forms_and_the_thesis_analysers() {
    let fmus = fmus();
    let (system, study) = study::read(&example()).unwrap();
    let mut general = LinearAnalyser::new(&system, &study).unwrap();
    let h = general.max_stable_step(1e-4, 1.0, 1e-3).unwrap();
    let thesis = cosimo::analysis::stability::max_stable_step(
        &fmus,
        &MODEL,
        force_force(AlgorithmKind::Jacobi, 0),
        1e-4,
        1.0,
        1e-3,
    )
    .unwrap();
    eprintln!("largest stable step: {h:e} (thesis analyser: {thesis:e})");
    assert!((h - thesis).abs() < 1e-12, "{h} vs {thesis}");
    // The first loss of stability on a grid of 100 points per decade from 1e-4 s, then
    // bisection to a relative width 1e-3: the closed form's crossing, bisected to the last bit,
    // lies within that width.
    let exact = closed_form_max_stable_step(&MODEL, 1e-4);
    eprintln!("closed form: {exact:e}");
    assert!(
        (h - exact).abs() <= 1e-3 * exact,
        "{h} vs closed form {exact}"
    );
    assert_eq!(general.step(), 1e-3, "the analyser keeps the file's step");
    // A scan over H agrees: stable below the largest stable step, unstable above it.
    let scan = general.step_scan(0.01, 0.05, 5).unwrap();
    for (step, rho) in &scan {
        assert_eq!(*step < h, *rho <= 1.0, "H = {step}: rho = {rho}");
    }
    assert!((scan[4].0 - 0.05).abs() < 1e-15 && (scan[0].0 - 0.01).abs() < 1e-15);
}

/// The example with its "stability" section replaced by `section` (None: removed).
fn with_section(section: Option<serde_json::Value>) -> String {
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example()).unwrap()).unwrap();
    let object = file.as_object_mut().unwrap();
    match section {
        Some(section) => object.insert("stability".into(), section),
        None => object.remove("stability"),
    };
    file.to_string()
}

fn study_error(section: Option<serde_json::Value>) -> String {
    match study::from_str(&with_section(section), &example()) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_study_reader_refuses_what_it_cannot_use_and_names_it() {
    use serde_json::json;
    let file = example().display().to_string();
    let cases = [
        (None, "no \"stability\" section: list the FMU states"),
        (
            Some(json!({"states": [{"variable": "mass1.x"}], "stat": 1})),
            "stability: unknown field `stat`",
        ),
        (Some(json!({"states": []})), "stability.states is empty"),
        (
            Some(json!({"states": [{"variable": "x", "start": "mass1.x0"}]})),
            "stability.states[0].variable: \"x\" is not component.variable",
        ),
        (
            Some(json!({"states": [{"variable": "mass1.x"}, {"variable": "mass1.x"}]})),
            "stability.states[1]: mass1.x is already stability.states[0]",
        ),
        (
            Some(json!({"states": [{"variable": "mass1.x"}], "parameters": {"a.b": ["mass1.c"]}})),
            "stability.parameters.a.b: a parameter name must be non-empty and without '.'",
        ),
        (
            Some(json!({"states": [{"variable": "mass1.x"}], "parameters": {"c": "mass1.c"}})),
            "stability.parameters.c: expected a list of component.variable",
        ),
    ];
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/system.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for (section, expected) in cases {
        // The schema refuses the same (it cannot see a missing section or a repeated state).
        let json: serde_json::Value = serde_json::from_str(&with_section(section.clone())).unwrap();
        let schema_can_tell = section.is_some() && !expected.contains("already");
        assert_eq!(
            validator.is_valid(&json),
            !schema_can_tell,
            "the schema on {section:?}"
        );
        let message = study_error(section);
        assert!(
            message.starts_with(&file) && message.contains(expected),
            "{message}\nexpected: {expected}"
        );
    }
}

#[test]
fn the_analyser_refuses_states_and_parameters_it_cannot_set() {
    use serde_json::json;
    fmus();
    let analyser_error = |section: serde_json::Value| {
        let (system, study) = study::from_str(&with_section(Some(section)), &example()).unwrap();
        match LinearAnalyser::new(&system, &study) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    };
    let message = analyser_error(json!({"states": [{"variable": "mass1.q", "start": "mass1.x0"}]}));
    assert!(
        message.contains("stability.states: mass1.q: mass1 has no variable \"q\""),
        "{message}"
    );
    let message = analyser_error(json!({"states": [{"variable": "mass1.x", "start": "mass1.a"}]}));
    assert!(
        message.contains("mass1.a:") && message.contains("cannot set a start value for \"a\""),
        "{message}"
    );
    let message = analyser_error(json!({
        "states": [{"variable": "mass1.x", "start": "mass1.x0"}],
        "parameters": {"k": ["mass3.c"]}
    }));
    assert!(
        message.contains("stability.parameters.k: mass3.c: no component \"mass3\""),
        "{message}"
    );
    let (system, study) = study::read(&example()).unwrap();
    let mut analyser = LinearAnalyser::new(&system, &study).unwrap();
    let message = analyser.set_parameter("k", 1.0).unwrap_err().to_string();
    assert!(
        message.contains("k: neither component.parameter nor a named parameter of the study (stability.parameters: c)"),
        "{message}"
    );
}

fn stability(args: &[&str]) -> std::process::Output {
    let mut all = vec!["stability".to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    cosimo(all)
}

#[test]
fn the_stability_command_studies_a_system_file() {
    fmus();
    let file = example().display().to_string();
    let out = stability(&[
        &file,
        "--max-stable-step",
        "--h-low",
        "1e-3",
        "--h-high",
        "0.1",
    ]);
    assert!(out.status.success(), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let h: f64 = stdout
        .trim()
        .strip_prefix("largest stable macro step: ")
        .and_then(|s| s.strip_suffix(" s"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    // Bisection of [1e-3, 0.1] to 1e-3 relative around the closed form's limit (3.08e-2 s).
    let exact = closed_form_max_stable_step(&MODEL, 1e-3);
    assert!(
        (h - exact).abs() <= 2e-3 * exact,
        "{h} vs closed form {exact}"
    );

    let out = stability(&[&file]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "state vector: 4 = 4 FMU states (mass1.x, mass1.v, mass2.x, mass2.v)\n\
         spectral radius at H = 0.001 s: 0.995012479 (stable)\n"
    );

    let dir = common::temp_dir();
    let (csv, png) = (dir.path().join("map.csv"), dir.path().join("map.png"));
    let out = cosimo([
        "stability".as_ref(),
        file.as_ref(),
        "--map".as_ref(),
        "--x".as_ref(),
        "c=500:2000".as_ref(),
        "--y".as_ref(),
        "spring.d1=0:20".as_ref(),
        "--points".as_ref(),
        "3".as_ref(),
        "--step-size".as_ref(),
        "0.03".as_ref(),
        "--output".as_ref(),
        csv.as_os_str(),
        "--plot".as_ref(),
        png.as_os_str(),
    ] as [&std::ffi::OsStr; 15]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "6 of 9 grid points stable (spectral radius <= 1) at H = 0.03 s\n"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        text.starts_with("\"c\",\"spring.d1\",\"spectral_radius\"\n500,0,"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 10, "a header and 3 x 3 points");
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
}

/// The command fails with exit code 2 and a message containing `expected`.
fn refused(args: &[&str], expected: &str) {
    let out = stability(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
    assert!(
        stderr.contains(expected),
        "{args:?}: {stderr}\nexpected: {expected}"
    );
}

#[test]
fn options_that_do_not_apply_are_refused_and_named() {
    // Some refusals come after the system file is read against its FMUs.
    fmu_pack::packed_fmus().expect("the FMUs pack");
    // The thesis' study (no system file): none of these reaches an FMU.
    refused(
        &["--ratios", "1,1,10"],
        "--ratios: 5 positive numbers, alpha,a_Re,a_Im,k_Re,k_Im",
    );
    refused(
        &[
            "--algorithm",
            "constraint",
            "--order",
            "2",
            "--ratios",
            "1,1,1,1,1",
        ],
        "--ratios: 3 positive numbers, alpha_m,alpha_Lr,alpha_Li",
    );
    refused(
        &["--algorithm", "implicit", "--ratios", "1,-1,1,1,1"],
        "--ratios: 5 positive numbers",
    );
    refused(
        &["--max-stable-step", "--ratios", "1,1,1,1,1"],
        "--ratios belongs to a map",
    );
    refused(
        &["--plane", "1000"],
        "--plane 1000 is a square of the index-1 paper",
    );
    refused(
        &[
            "--algorithm",
            "constraint",
            "--order",
            "3",
            "--plane",
            "implicit",
        ],
        "--algorithm constraint draws the index-1 paper's squares: --plane 10 or 1000",
    );
    refused(
        &["--extension", "derivative"],
        "--extension applies to the implicit algorithm only",
    );
    refused(
        &[
            "--algorithm",
            "constraint",
            "--order",
            "2",
            "--extension",
            "none",
        ],
        "--extension applies to the implicit algorithm only",
    );
    refused(
        &[
            "--algorithm",
            "constraint",
            "--order",
            "2",
            "--decomposition",
            "fd",
        ],
        "--decomposition cuts the two-mass oscillator for applied-force coupling",
    );
    refused(
        &[
            "--algorithm",
            "constraint",
            "--order",
            "2",
            "--max-stable-step",
        ],
        "--max-stable-step analyses applied-force coupling",
    );
    refused(
        &["--m1", "2"],
        "--m1 gives the physical system of --max-stable-step",
    );
    refused(
        &["--h-high", "0.1"],
        "--h-high gives the physical system of --max-stable-step",
    );
    refused(
        &["--max-stable-step", "--plane", "implicit"],
        "--plane belongs to a map",
    );
    refused(
        &["--max-stable-step", "--output", "x.csv"],
        "--output belongs to a map",
    );
    refused(&["--map"], "--map studies a system file");
    refused(&["--step-size", "0.1"], "--step-size studies a system file");
    // A system file: the thesis' options, and study options without their study.
    let file = example().display().to_string();
    let f = file.as_str();
    for option in [
        &["--plane", "implicit"][..],
        &["--decomposition", "fd"],
        &["--ratios", "1,1,1"],
        &["--fmus", "target/fmus"],
        &["--cc", "100"],
    ] {
        let args = [&[f][..], option].concat();
        refused(
            &args,
            &format!(
                "{} belongs to the stability thesis' two-mass study",
                option[0]
            ),
        );
    }
    refused(
        &[f, "--x", "c=1:2"],
        "--x gives an axis of --map; add --map",
    );
    refused(&[f, "--plot", "m.png"], "--plot draws the map of --map");
    refused(&[f, "--points", "3"], "--points applies to --map or --scan");
    refused(
        &[f, "--h-low", "1e-3"],
        "--h-low bounds the macro step of --max-stable-step or --scan",
    );
    refused(
        &[f, "--max-stable-step", "--step-size", "0.1"],
        "--step-size fixes the macro step, which --max-stable-step and --scan vary",
    );
    refused(
        &[f, "--max-stable-step", "--map"],
        "--max-stable-step, --map and --scan are separate studies: choose one",
    );
    refused(
        &[f, "--map", "--x", "c=1:2"],
        "--map needs --y PARAMETER=LOW:HIGH",
    );
    refused(
        &[f, "--map", "--x", "c=2:1", "--y", "spring.d1=0:1"],
        "--x \"c=2:1\": the range must go from a lower to a higher value",
    );
    refused(
        &[f, "--extension", "derivative"],
        "--extension applies to the implicit algorithm only",
    );
    let plain = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fmus/two-mass-force-force.json")
        .display()
        .to_string();
    refused(&[&plain], "no \"stability\" section");
}

#[test]
fn an_implicit_corrector_that_does_not_converge_is_refused_not_split() {
    // A run repeats such a step as four of H / 4; the map of H would silently become the map
    // of the split step (spectral radius 61.9 instead of 0.173 in one case), so the analyser
    // refuses it. Tolerances no residual meets make every step fail.
    fmus();
    let (mut system, study) = example_with(AlgorithmKind::Implicit, 1);
    let corrector = system.experiment.algorithm.corrector_mut().unwrap();
    corrector.abs_tolerance = 1e-300;
    corrector.rel_tolerance = 0.0;
    let mut analyser = LinearAnalyser::new(&system, &study).unwrap();
    let error = analyser.spectral_radius().unwrap_err().to_string();
    assert!(
        error.contains("the implicit corrector does not converge in the macro step from t = 0")
            && error.contains("in 10 iterations"),
        "{error}"
    );
}
