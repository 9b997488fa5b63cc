//! The stability analyser: the spectral radius of the real master's one-step map on the
//! two-mass oscillator, against statements of the stability thesis.

use cosimo::analysis::stability::{
    plane_map, symmetric_map, Analyser, Decomposition, MapPoint, Scheme, TestFmus, TwoMass,
};
use cosimo::settings::implicit::Extension;
use cosimo::settings::AlgorithmKind;

/// Points of `map` with a spectral radius above 1 (+ 1e-9 for rounding, as the maps count them),
/// after checking that no point lies within 1e-6 of the limit: the counts below are then exact
/// integers that rounding cannot move (none of the maps pinned here has such a point).
fn unstable_points(map: &[MapPoint]) -> usize {
    let on_limit: Vec<_> = map
        .iter()
        .filter(|p| (p.spectral_radius - 1.0).abs() < 1e-6)
        .collect();
    assert!(
        on_limit.is_empty(),
        "points on the stability limit to rounding: {on_limit:?}"
    );
    map.iter()
        .filter(|p| p.spectral_radius > 1.0 + 1e-9)
        .count()
}

fn fmus() -> TestFmus {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    TestFmus::in_folder(&fmu_pack::fmus_dir())
}

/// The thesis' physical two-mass system: m = 1, c = 1000, d = 10 for both masses and the
/// coupling element.
fn thesis_system() -> TwoMass {
    TwoMass {
        m1: 1.0,
        c1: 1000.0,
        d1: 10.0,
        m2: 1.0,
        c2: 1000.0,
        d2: 10.0,
        cc: 1000.0,
        dc: 10.0,
    }
}

fn scheme(decomposition: Decomposition, algorithm: AlgorithmKind, order: u8) -> Scheme {
    Scheme {
        decomposition,
        algorithm,
        order,
        extension: Extension::None,
    }
}

#[test]
fn every_force_force_scheme_is_at_least_as_damped_as_the_subsystem_and_implicit_k0_equals_it() {
    // Symmetric model: the in-phase mode moves like subsystem 1 alone, so no scheme -- original,
    // D- or I-extended -- can have a spectral radius below e^(Lambda_r1); the implicit k = 0
    // scheme reproduces it exactly.
    let fmus = fmus();
    for (re, im) in [(-0.1, 0.5), (-0.5, 2.0), (-1.0, 5.0), (-0.05, 8.0)] {
        let model = TwoMass::symmetric(re, im, 1.0);
        let floor = f64::exp(re);
        let mut schemes = vec![
            (AlgorithmKind::Implicit, 0, Extension::None),
            (AlgorithmKind::Implicit, 1, Extension::None),
            (AlgorithmKind::Jacobi, 0, Extension::None),
            (AlgorithmKind::Jacobi, 1, Extension::None),
        ];
        for extension in [Extension::Derivative, Extension::Integral] {
            schemes.extend((0..3).map(|k| (AlgorithmKind::Implicit, k, extension)));
        }
        for (algorithm, order, extension) in schemes {
            let mut analyser = Analyser::new(
                &fmus,
                &model,
                Scheme {
                    extension,
                    ..scheme(Decomposition::ForceForce, algorithm, order)
                },
                1.0,
            )
            .unwrap();
            let rho = analyser.spectral_radius(&model).unwrap();
            eprintln!(
                "({re}, {im}) {algorithm:?} {extension:?} k = {order}: rho = {rho:.12}, e^Lr = {floor:.12}"
            );
            // The extended schemes solve for twice the unknowns with a finite-difference
            // Jacobian in one Newton iteration: their map carries its rounding (~1e-9).
            let slack = if extension == Extension::None {
                1e-9
            } else {
                1e-8
            };
            assert!(
                rho >= floor - slack,
                "{algorithm:?} {extension:?} k = {order} at ({re}, {im}): rho {rho} < e^Lr {floor}"
            );
            if algorithm == AlgorithmKind::Implicit && order == 0 && extension == Extension::None {
                assert!(
                    (rho - floor).abs() < 1e-9,
                    "implicit k = 0 at ({re}, {im}): rho {rho} vs {floor}"
                );
            }
        }
    }
}

#[test]
fn implicit_force_force_k0_is_stable_on_the_whole_implicit_plot_range() {
    let map = symmetric_map(
        &fmus(),
        scheme(Decomposition::ForceForce, AlgorithmKind::Implicit, 0),
        (-2.0, -0.02),
        (0.0, 10.0),
        11,
    )
    .unwrap();
    assert_eq!(unstable_points(&map), 0, "{map:?}");
}

#[test]
fn the_unstable_region_of_implicit_force_force_grows_with_k() {
    let fmus = fmus();
    let count = |k: u8| {
        unstable_points(
            &symmetric_map(
                &fmus,
                scheme(Decomposition::ForceForce, AlgorithmKind::Implicit, k),
                (-2.0, -0.02),
                (0.0, 10.0),
                11,
            )
            .unwrap(),
        )
    };
    let (k1, k2) = (count(1), count(2));
    eprintln!("unstable points of 121: k = 1: {k1}, k = 2: {k2}");
    assert!(k1 > 0, "k = 1 has an unstable region");
    assert!(k2 >= k1, "the unstable region grows with k: {k1} -> {k2}");
    // Pinned: measured on this master at commit e21d2a3 (exact: no point on the limit).
    assert_eq!((k1, k2), (3, 12), "unstable points of 121 for k = 1, 2");
}

/// The two models of the thesis' extended-coupling plots (Figs. 3.13–3.18): symmetric (all
/// ratios 1) and unsymmetrical (all ratios 10).
const MODELS: [(&str, [f64; 5]); 2] = [("symmetric", [1.0; 5]), ("unsymmetrical", [10.0; 5])];

/// Unstable points of 121 on the implicit plot range, per model, for the original scheme, the
/// derivative and the integral extension with k = 0, 1, 2: `[model][variant][k]`.
fn extended_counts(decomposition: Decomposition) -> [[[usize; 3]; 3]; 2] {
    let fmus = fmus();
    let mut counts = [[[0; 3]; 3]; 2];
    for (m, (name, ratios)) in MODELS.iter().enumerate() {
        for (e, extension) in [Extension::None, Extension::Derivative, Extension::Integral]
            .into_iter()
            .enumerate()
        {
            for k in 0..3u8 {
                let scheme = Scheme {
                    extension,
                    ..scheme(decomposition, AlgorithmKind::Implicit, k)
                };
                counts[m][e][usize::from(k)] = unstable_points(
                    &plane_map(&fmus, scheme, *ratios, (-2.0, -0.02), (0.0, 10.0), 11).unwrap(),
                );
            }
            eprintln!(
                "{decomposition:?} {name} {extension:?}: unstable points of 121 for k = 0, 1, 2: {:?}",
                counts[m][e]
            );
        }
    }
    counts
}

/// Whether D-extended k = 2 has no more unstable points than any variant, on both models.
fn derivative_k2_is_most_stable(counts: &[[[usize; 3]; 3]; 2]) -> bool {
    counts
        .iter()
        .all(|model| model.iter().flatten().all(|&other| model[1][2] <= other))
}

#[test]
fn derivative_extended_force_force_k2_is_the_most_stable_variant() {
    // Thesis Sect. 3.5.1: for k = 0 the original F/F scheme is stable on the whole range and
    // the D- and I-extensions show unstable points ("not useful for k = 0"); for k = 1, 2 the
    // D-extension raises stability significantly, especially for the unsymmetrical model;
    // D-extended k = 2 is the best of all variants.
    let counts = extended_counts(Decomposition::ForceForce);
    let [symmetric, unsymmetrical] = counts;
    for model in [symmetric, unsymmetrical] {
        assert_eq!(
            model[0][0], 0,
            "original k = 0 is stable everywhere: {model:?}"
        );
    }
    assert!(
        symmetric[1][0] > 0,
        "D-extended k = 0 has unstable points: {symmetric:?}"
    );
    assert!(
        symmetric[2][0] > 0,
        "I-extended k = 0 has unstable points: {symmetric:?}"
    );
    let [original, derivative, _] = unsymmetrical;
    for (k, (d, o)) in derivative.iter().zip(original).enumerate().skip(1) {
        assert!(
            4 * d <= o,
            "unsymmetrical, k = {k}: D-extended {d} vs original {o}"
        );
    }
    assert!(
        symmetric[1][2] < symmetric[0][2],
        "symmetric k = 2: {symmetric:?}"
    );
    assert!(derivative_k2_is_most_stable(&counts), "{counts:?}");
    // Pinned, [model][original, D, I][k]: measured on this master at commit e21d2a3 (exact: no
    // point on the limit).
    assert_eq!(
        counts,
        [
            [[0, 3, 12], [2, 5, 0], [5, 12, 9]],
            [[0, 35, 48], [0, 7, 0], [7, 71, 71]]
        ],
        "unstable points of 121"
    );
}

#[test]
fn derivative_extended_force_displacement_k2_is_very_good_on_both_models() {
    // Thesis Sect. 3.5.2: F/D behaves like F/F; D-extended with k = 2 is very good for both
    // models.
    let counts = extended_counts(Decomposition::ForceDisplacement);
    for model in &counts {
        assert!(model[1][2] <= 1, "D-extended k = 2: {model:?}");
    }
    assert!(derivative_k2_is_most_stable(&counts), "{counts:?}");
    // Pinned, [model][original, D, I][k]: measured on this master at commit e21d2a3 (exact: no
    // point on the limit).
    assert_eq!(
        counts,
        [
            [[7, 1, 7], [20, 7, 1], [15, 4, 6]],
            [[0, 35, 48], [0, 7, 0], [9, 71, 71]]
        ],
        "unstable points of 121"
    );
}

#[test]
fn the_extensions_do_not_help_displacement_displacement() {
    // Thesis Sect. 3.5.3: for D/D the original, D- and I-extended schemes behave quite
    // similarly, so the extensions are not beneficial: never fewer unstable points, and at
    // most a few more.
    let counts = extended_counts(Decomposition::DisplacementDisplacement);
    for model in &counts {
        for extended in &model[1..] {
            for (k, (&e, &o)) in extended.iter().zip(&model[0]).enumerate() {
                assert!(e >= o, "k = {k}: {model:?}");
                assert!(e <= o + 4, "quite similar, k = {k}: {model:?}");
            }
        }
    }
    // Pinned, [model][original, D, I][k]: measured on this master at commit e21d2a3 (exact: no
    // point on the limit).
    assert_eq!(
        counts,
        [
            [[14, 1, 2], [17, 1, 2], [16, 5, 5]],
            [[1, 0, 0], [2, 0, 0], [2, 0, 0]]
        ],
        "unstable points of 121"
    );
}

#[test]
fn displacement_displacement_is_the_most_stable_explicit_decomposition() {
    let fmus = fmus();
    let stable = |d: Decomposition| {
        121 - unstable_points(
            &symmetric_map(
                &fmus,
                scheme(d, AlgorithmKind::Jacobi, 0),
                (-1.0, -0.02),
                (0.0, 2.0),
                11,
            )
            .unwrap(),
        )
    };
    let (ff, fd, dd) = (
        stable(Decomposition::ForceForce),
        stable(Decomposition::ForceDisplacement),
        stable(Decomposition::DisplacementDisplacement),
    );
    eprintln!("stable points of 121 (explicit, k = 0): F/F {ff}, F/D {fd}, D/D {dd}");
    assert!(dd >= ff && dd >= fd, "D/D {dd} vs F/F {ff}, F/D {fd}");
    // Pinned: measured on this master at commit e21d2a3 (exact: no point on the limit).
    assert_eq!(
        (ff, fd, dd),
        (28, 47, 104),
        "stable points of 121: F/F, F/D, D/D"
    );
}

/// Stable damped points of implicit F/F k = 2 on the thesis' implicit plane, 11 x 11 (110 damped
/// points), measured on this master: the thesis' unsymmetrical model (all five ratios 10) is far
/// less stable than the symmetric one.
const STABLE_IMPLICIT_FF_K2_SYMMETRIC: usize = 104;
const STABLE_IMPLICIT_FF_K2_UNSYMMETRICAL: usize = 69;

#[test]
fn the_stability_command_writes_a_map_and_finds_the_largest_stable_step() {
    let fmus = fmus();
    let dir = tempfile::tempdir().unwrap();
    let (csv, png) = (dir.path().join("map.csv"), dir.path().join("map.png"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args([
            "stability",
            "--decomposition",
            "dd",
            "--points",
            "5",
            "--fmus",
        ])
        .arg(&fmus.folder)
        .arg("--output")
        .arg(&csv)
        .arg("--png")
        .arg(&png)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("\"lambda_re\",\"lambda_im\",\"spectral_radius\"\n"));
    assert_eq!(text.lines().count(), 26, "a header and 5 x 5 points");
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    // The thesis' explicit plane, [-1, 0] x [0, 2], the undamped axis and the origin (two free
    // masses) included; counted the paper's way, the axis apart.
    let rows: Vec<Vec<f64>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!((rows[0][0], rows[0][1]), (-1.0, 0.0));
    assert_eq!((rows[24][0], rows[24][1]), (0.0, 2.0));
    assert!(rows.iter().all(|r| r[2].is_finite()), "{text}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("18 of 20 damped grid points stable (Λr1 < 0; spectral radius <= 1) on Λr1 in [-1, 0], Λi1 in [0, 2]\nundamped axis Λr1 = 0 (5 points, not counted: the coupled system itself has spectral radius 1 there): spectral radius from 1.000000000 to"),
        "{stdout}"
    );
    // --ratios reaches the thesis' maps of applied-force coupling: the unsymmetrical model.
    let counts = |ratios: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
            .args(["stability", "--algorithm", "implicit", "--order", "2"])
            .args(["--plane", "implicit", "--points", "11", "--ratios", ratios])
            .arg("--fmus")
            .arg(&fmus.folder)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .split(" of ")
            .next()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap()
    };
    assert_eq!(counts("1,1,1,1,1"), STABLE_IMPLICIT_FF_K2_SYMMETRIC);
    assert_eq!(
        counts("10,10,10,10,10"),
        STABLE_IMPLICIT_FF_K2_UNSYMMETRICAL
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cosimo"))
        .args(["stability", "--max-stable-step", "--fmus"])
        .arg(&fmus.folder)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let h: f64 = stdout
        .trim()
        .strip_prefix("largest stable macro step: ")
        .and_then(|s| s.strip_suffix(" s"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    // Explicit F/F, k = 0, m = 1, c = 1000, d = 10: the spectral radius crosses 1 there.
    let model = thesis_system();
    let rho = |h: f64| {
        Analyser::new(
            &fmus,
            &model,
            scheme(Decomposition::ForceForce, AlgorithmKind::Jacobi, 0),
            h,
        )
        .unwrap()
        .spectral_radius(&model)
        .unwrap()
    };
    assert!(
        rho(h) <= 1.0 + 1e-9 && rho(h * 1.01) > 1.0,
        "H = {h}: rho {} / {}",
        rho(h),
        rho(h * 1.01)
    );
}

#[test]
fn the_thesis_systems_read_from_files_give_the_maps_of_the_systems_built_in_code() {
    // Spectral radii measured when the analyser still built the thesis' systems in code (before
    // they became the system files in fmus/stability/): the same maps, to rounding.
    let fmus = fmus();
    let model = TwoMass::with_ratios(-0.3, 1.7, [2.0, 1.5, 0.7, 3.0, 0.5], 1.0);
    for (decomposition, algorithm, extension, order, expected) in [
        (
            Decomposition::ForceForce,
            AlgorithmKind::Jacobi,
            Extension::None,
            1,
            4.640_032_959_304_901,
        ),
        (
            Decomposition::ForceDisplacement,
            AlgorithmKind::GaussSeidel,
            Extension::None,
            2,
            3.555_170_243_162_634,
        ),
        (
            Decomposition::ForceForce,
            AlgorithmKind::Implicit,
            Extension::Integral,
            2,
            0.645_962_492_868_130_7,
        ),
        (
            Decomposition::DisplacementDisplacement,
            AlgorithmKind::Implicit,
            Extension::Derivative,
            2,
            0.575_313_801_714_155_8,
        ),
    ] {
        let scheme = Scheme {
            extension,
            ..scheme(decomposition, algorithm, order)
        };
        let rho = Analyser::new(&fmus, &model, scheme, 1.0)
            .unwrap()
            .spectral_radius(&model)
            .unwrap();
        // The implicit maps moved by up to 4e-10 when the analyser began to solve the corrector
        // to rounding (these were measured at its default tolerance, 1e-6).
        let tolerance = if algorithm == AlgorithmKind::Implicit {
            1e-9
        } else {
            1e-12
        };
        assert!(
            (rho - expected).abs() < tolerance,
            "{scheme:?}: {rho} vs {expected}"
        );
    }
    let model = cosimo::analysis::stability::rigidly_coupled(-2.0, 3.0, 2.0, 1.5, 10.0);
    for (order, expected, dimension) in [
        (2, 6.001_563_136_295_294e-2, 4),
        (3, 3.922_610_603_470_669e-2, 5),
    ] {
        let mut analyser = Analyser::rigid(&fmus, &model, order, 1.0).unwrap();
        assert_eq!(analyser.dimension(), dimension, "index-1 k = {order}");
        let rho = analyser.spectral_radius(&model).unwrap();
        assert!(
            (rho - expected).abs() < 1e-12,
            "index-1 k = {order}: {rho} vs {expected}"
        );
    }
}

/// Stability need not be monotone in the macro step: D/D Jacobi k = 0 on the thesis' physical
/// system is unstable in a window and stable again at H = 1 s. The largest stable step is the
/// first loss of stability above the lower bound, not the upper bound of the search.
#[test]
fn the_largest_stable_step_is_the_first_crossing_when_stability_returns() {
    let fmus = fmus();
    let model = thesis_system();
    let dd = scheme(
        Decomposition::DisplacementDisplacement,
        AlgorithmKind::Jacobi,
        0,
    );
    let rho = |h: f64| {
        Analyser::new(&fmus, &model, dd, h)
            .unwrap()
            .spectral_radius(&model)
            .unwrap()
    };
    // The window the issue names: stable again at 1 s, unstable at 0.06 s.
    assert!(rho(1.0) <= 1.0, "rho(1 s) = {}", rho(1.0));
    assert!(rho(0.06) > 1.0, "rho(0.06 s) = {}", rho(0.06));
    let h =
        cosimo::analysis::stability::max_stable_step(&fmus, &model, dd, 1e-4, 1.0, 1e-6).unwrap();
    eprintln!("D/D Jacobi k = 0: largest stable step {h:e} s");
    // Measured with this search (scan of 100 points per decade, bisection to 1e-6), inside
    // the window 0.057-0.07 s the issue reports.
    assert!((h - 5.719_430_300_172_02e-2).abs() < 1e-9, "{h}");
    assert!(rho(h) <= 1.0 + 1e-12, "rho({h}) = {}", rho(h));
    assert!(
        rho(h * (1.0 + 2e-6)) > 1.0,
        "rho just above {h} = {}",
        rho(h * (1.0 + 2e-6))
    );
    // Every step below it is stable (a dense independent scan).
    for k in 0..=100 {
        let step = 1e-4 * (h / 1e-4).powf(f64::from(k) / 100.0) * (1.0 - 1e-9);
        assert!(
            rho(step) <= 1.0 + 1e-12,
            "unstable below the answer at H = {step}"
        );
    }
}

/// The largest stable step of every explicit and implicit scheme, decomposition and order
/// k = 0..3 on the thesis' physical system (m = 1, c = 1000, d = 10, coupling 1000 / 10), as
/// the first loss of stability above 1e-4 s: each one checked (stable at it, unstable just
/// above unless the whole range is stable) and pinned to 0.5 %.
#[test]
fn the_largest_stable_steps_of_every_scheme_are_pinned() {
    let fmus = fmus();
    let model = thesis_system();
    use AlgorithmKind::{Implicit, Jacobi};
    use Decomposition::{
        DisplacementDisplacement as Dd, ForceDisplacement as Fd, ForceForce as Ff,
    };
    let mut found = Vec::new();
    for decomposition in [Ff, Fd, Dd] {
        for algorithm in [Jacobi, Implicit] {
            for k in 0..=3u8 {
                let s = scheme(decomposition, algorithm, k);
                let h =
                    cosimo::analysis::stability::max_stable_step(&fmus, &model, s, 1e-4, 1.0, 1e-3)
                        .unwrap();
                let rho = |h: f64| {
                    Analyser::new(&fmus, &model, s, h)
                        .unwrap()
                        .spectral_radius(&model)
                        .unwrap()
                };
                assert!(
                    rho(h) <= 1.0 + 1e-12,
                    "{decomposition:?} {algorithm:?} k = {k}: rho({h})"
                );
                if h < 1.0 {
                    assert!(
                        rho(h * 1.002) > 1.0,
                        "{decomposition:?} {algorithm:?} k = {k}: rho above {h}"
                    );
                }
                eprintln!("{decomposition:?} {algorithm:?} k = {k}: {h:.6e}");
                found.push(h);
            }
        }
    }
    // Measured with this search (2026-11-24), in the order of the loops above: F/F, F/D, D/D;
    // Jacobi k = 0..3, then implicit k = 0..3. 1.0: stable on the whole grid up to 1 s (the
    // implicit k = 0 schemes, as the thesis finds them in the whole range). The ones the issue
    // lists as stable again above a window: D/D Jacobi k = 0, implicit F/F k = 1 and 2, F/D
    // k = 2.
    let pinned = [
        [3.083701e-2, 3.092545e-2, 2.998470e-2, 2.028667e-2],
        [1.0, 6.780515e-2, 5.635693e-2, 5.001177e-2],
        [4.496099e-2, 3.487560e-2, 3.250069e-2, 2.535656e-2],
        [1.0, 1.0, 6.224297e-2, 5.290096e-2],
        [5.717560e-2, 4.862948e-2, 3.972576e-2, 3.072710e-2],
        [2.402325e-2, 1.0, 1.0, 6.012737e-2],
    ];
    for (h, expected) in found.iter().zip(pinned.iter().flatten()) {
        assert!(
            (h / expected - 1.0).abs() < 5e-3,
            "largest stable steps {found:?} differ from the pinned {pinned:?}"
        );
    }
}
