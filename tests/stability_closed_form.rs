//! The stability analyser against closed forms: the spectral radius it measures on the real
//! master (one macro step per unit vector, through the FMUs) equals, to 1e-6 relative, that of
//! the amplification matrix built here from the stability thesis' formulas (Sect. 2.1, Eqs.
//! 2.6–2.8: the F/F, F/D and D/D splits of the two-mass oscillator; Sect. 3.1: the explicit
//! scheme). Each subsystem is integrated exactly over H (matrix exponential of the subsystem
//! augmented with the Taylor chain of its polynomial input), its coupling inputs held constant
//! (k = 0) or extrapolated with the Lagrange polynomial through the last k + 1 macro points.
//!
//! The thesis sets Gauss-Seidel aside ("serial integration schemes are not discussed"); its
//! closed form here is the same construction with cosimo's documented serial rule: the
//! components step in the order of the system file (mass 1, [spring,] mass 2), and an input
//! whose source has already stepped follows the interpolation through the source's value at
//! the step's end and its last k values (`master/zoh.rs`, `prepare_taylor`).
//!
//! Nothing here calls cosimo's own linear algebra: the matrix exponential and the eigenvalues
//! are nalgebra's, the maps are built from the formulas.

use cosimo::analysis::stability::{
    plane_map, symmetric_map, Analyser, Decomposition, Scheme, TestFmus, TwoMass,
};
use cosimo::settings::implicit::Extension;
use cosimo::settings::AlgorithmKind;
use nalgebra::{DMatrix, DVector};

fn fmus() -> TestFmus {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    TestFmus::in_folder(&fmu_pack::fmus_dir())
}

/// A split of the two-mass oscillator: z' = A z + B u(t) with z = (x1, v1, x2, v2), A block
/// diagonal (the subsystems touch only through u), and the exchanged values u = C z at the
/// macro points.
struct Split {
    a: DMatrix<f64>,
    b: DMatrix<f64>,
    c: DMatrix<f64>,
    /// F/F under Gauss-Seidel: the spring's force on mass 2 at the step's end uses mass 1's new
    /// state and mass 2's extrapolated one (u = (lambda, x2, v2)).
    spring: bool,
}

fn oscillator(c: f64, d: f64, m: f64) -> [[f64; 2]; 2] {
    [[0.0, 1.0], [-c / m, -d / m]]
}

/// The thesis' Eqs. 2.6 (F/F), 2.7 (F/D), 2.8 (D/D) in physical parameters.
fn split(decomposition: Decomposition, p: &TwoMass) -> Split {
    use Decomposition::*;
    let (s1, s2) = match decomposition {
        ForceForce => (oscillator(p.c1, p.d1, p.m1), oscillator(p.c2, p.d2, p.m2)),
        ForceDisplacement => (
            oscillator(p.c1, p.d1, p.m1),
            oscillator(p.c2 + p.cc, p.d2 + p.dc, p.m2),
        ),
        DisplacementDisplacement => (
            oscillator(p.c1 + p.cc, p.d1 + p.dc, p.m1),
            oscillator(p.c2 + p.cc, p.d2 + p.dc, p.m2),
        ),
    };
    let mut a = DMatrix::zeros(4, 4);
    for r in 0..2 {
        for c in 0..2 {
            a[(r, c)] = s1[r][c];
            a[(2 + r, 2 + c)] = s2[r][c];
        }
    }
    // lambda = cc (x2 - x1) + dc (v2 - v1): the coupling force on mass 1.
    let lambda = [-p.cc, -p.dc, p.cc, p.dc];
    let unit = |i: usize| {
        let mut row = [0.0; 4];
        row[i] = 1.0;
        row
    };
    // (row of C, column of B) per exchanged value.
    let exchanged: Vec<([f64; 4], [f64; 4])> = match decomposition {
        ForceForce => vec![
            (lambda, [0.0, 1.0 / p.m1, 0.0, -1.0 / p.m2]),
            (unit(2), [0.0; 4]),
            (unit(3), [0.0; 4]),
        ],
        ForceDisplacement => vec![
            (lambda, [0.0, 1.0 / p.m1, 0.0, 0.0]),
            (unit(0), [0.0, 0.0, 0.0, p.cc / p.m2]),
            (unit(1), [0.0, 0.0, 0.0, p.dc / p.m2]),
        ],
        DisplacementDisplacement => vec![
            (unit(0), [0.0, 0.0, 0.0, p.cc / p.m2]),
            (unit(1), [0.0, 0.0, 0.0, p.dc / p.m2]),
            (unit(2), [0.0, p.cc / p.m1, 0.0, 0.0]),
            (unit(3), [0.0, p.dc / p.m1, 0.0, 0.0]),
        ],
    };
    let m = exchanged.len();
    let c = DMatrix::from_fn(m, 4, |r, j| exchanged[r].0[j]);
    let b = DMatrix::from_fn(4, m, |r, j| exchanged[j].1[r]);
    Split {
        a,
        b,
        c,
        spring: decomposition == ForceForce,
    }
}

/// The Taylor coefficients (derivatives 0..n-1) at tau = 0 of the polynomial through the
/// values at `nodes`: row i holds the weights of the values in the i-th derivative.
fn taylor_weights(nodes: &[f64]) -> DMatrix<f64> {
    let n = nodes.len();
    let vandermonde = DMatrix::from_fn(n, n, |j, i| nodes[j].powi(i as i32));
    let inverse = vandermonde.try_inverse().expect("distinct nodes");
    let factorial = |i: usize| (1..=i).map(|f| f as f64).product::<f64>();
    DMatrix::from_fn(n, n, |i, j| inverse[(i, j)] * factorial(i))
}

/// The value at `at` of the polynomial through the values at `nodes`: the weights.
fn lagrange_at(nodes: &[f64], at: f64) -> Vec<f64> {
    (0..nodes.len())
        .map(|j| {
            nodes
                .iter()
                .enumerate()
                .filter(|&(l, _)| l != j)
                .map(|(_, &t)| (at - t) / (nodes[j] - t))
                .product()
        })
        .collect()
}

/// Exact propagation over h of z' = A z + B u(t), u a polynomial of degree `degree` given by its
/// Taylor coefficients u^(i) at the step's start: (Phi, [Gamma_0, .., Gamma_degree]) with
/// z(h) = Phi z(0) + sum_i Gamma_i u^(i)(0). The exponential of the system augmented with the
/// Taylor chain (u^(i))' = u^(i+1).
fn propagator(a: &DMatrix<f64>, b: &DMatrix<f64>, degree: usize, h: f64) -> Vec<DMatrix<f64>> {
    let (n, m) = (a.nrows(), b.ncols());
    let size = n + m * (degree + 1);
    let mut big = DMatrix::zeros(size, size);
    big.view_mut((0, 0), (n, n)).copy_from(a);
    big.view_mut((0, n), (n, m)).copy_from(b);
    for i in 0..degree {
        for r in 0..m {
            big[(n + i * m + r, n + (i + 1) * m + r)] = 1.0;
        }
    }
    let e = (big * h).exp();
    let mut blocks = vec![e.view((0, 0), (n, n)).into_owned()];
    blocks.extend((0..=degree).map(|i| e.view((0, n + i * m), (n, m)).into_owned()));
    blocks
}

/// The amplification matrix of the explicit scheme (Jacobi, or Gauss-Seidel in the order mass
/// 1, mass 2) with order k at macro step h, on s = (z_N, u_(N-1), .., u_(N-k)): the scheme's
/// step applied to each unit vector.
fn amplification(split: &Split, gauss_seidel: bool, k: usize, h: f64) -> DMatrix<f64> {
    let m = split.c.nrows();
    let dim = 4 + k * m;
    let blocks = propagator(&split.a, &split.b, k, h);
    let (phi, gamma) = (&blocks[0], &blocks[1..]);
    // Extrapolation through tau = 0, -h, .., -kh; interpolation through tau = h, 0, .., -(k-1)h.
    let back: Vec<f64> = (0..=k).map(|j| -(j as f64) * h).collect();
    let through_end: Vec<f64> = (0..=k).map(|j| (1.0 - j as f64) * h).collect();
    let (extrapolate, interpolate) = (taylor_weights(&back), taylor_weights(&through_end));
    let end_of_extrapolation = lagrange_at(&back, h);
    let step = |s: &DVector<f64>| -> DVector<f64> {
        let z = s.rows(0, 4).into_owned();
        // u_(N-j), j = 0..=k.
        let mut history = vec![&split.c * &z];
        history.extend((1..=k).map(|j| s.rows(4 + (j - 1) * m, m).into_owned()));
        let advance = |values: &[DVector<f64>], weights: &DMatrix<f64>| {
            let mut next = phi * &z;
            for (i, g) in gamma.iter().enumerate() {
                let mut taylor = DVector::zeros(m);
                for (j, u) in values.iter().enumerate() {
                    taylor += u * weights[(i, j)];
                }
                next += g * taylor;
            }
            next
        };
        let extrapolated = advance(&history, &extrapolate);
        let mut next = extrapolated.clone();
        if gauss_seidel {
            // Mass 1 stepped: mass 2's inputs go through their values at the step's end.
            let mut z_end = extrapolated.clone();
            if split.spring {
                // The spring sees mass 2 where its extrapolated inputs put it at T_N+1.
                for (r, row) in [(2, 1), (3, 2)] {
                    z_end[r] = (0..=k)
                        .map(|j| end_of_extrapolation[j] * history[j][row])
                        .sum();
                }
            }
            let mut values = vec![&split.c * &z_end];
            values.extend(history[..k].iter().cloned());
            let interpolated = advance(&values, &interpolate);
            next.rows_mut(2, 2).copy_from(&interpolated.rows(2, 2));
        }
        let mut out = DVector::zeros(dim);
        out.rows_mut(0, 4).copy_from(&next);
        for j in 1..=k {
            out.rows_mut(4 + (j - 1) * m, m).copy_from(&history[j - 1]);
        }
        out
    };
    let mut map = DMatrix::zeros(dim, dim);
    for column in 0..dim {
        let mut s = DVector::zeros(dim);
        s[column] = 1.0;
        map.set_column(column, &step(&s));
    }
    map
}

/// Largest eigenvalue modulus (nalgebra's eigenvalues, not cosimo's spectral_radius).
fn radius(map: &DMatrix<f64>) -> f64 {
    map.complex_eigenvalues()
        .iter()
        .map(|e| e.norm())
        .fold(0.0, f64::max)
}

fn closed_form(
    decomposition: Decomposition,
    algorithm: AlgorithmKind,
    k: u8,
    model: &TwoMass,
) -> f64 {
    let gauss_seidel = match algorithm {
        AlgorithmKind::Jacobi => false,
        AlgorithmKind::GaussSeidel => true,
        other => panic!("no closed form for {other:?}"),
    };
    radius(&amplification(
        &split(decomposition, model),
        gauss_seidel,
        usize::from(k),
        1.0,
    ))
}

fn scheme(decomposition: Decomposition, algorithm: AlgorithmKind, order: u8) -> Scheme {
    Scheme {
        decomposition,
        algorithm,
        order,
        extension: Extension::None,
    }
}

/// The models: symmetric (all ratios 1), the thesis' unsymmetrical one (all ratios 10) and one
/// with every ratio different (alpha, a_Re, a_Im, k_Re, k_Im; see `TwoMass::with_ratios`).
const MODELS: [[f64; 5]; 3] = [[1.0; 5], [10.0; 5], [2.0, 1.5, 0.7, 3.0, 0.5]];

/// The named points: along three rays of subsystem 1's dimensionless eigenvalue plane, from
/// strongly to lightly damped, (Lambda_r, Lambda_i) = s (dr, di) at eight scales s from 0.01 to
/// 10 (geometric), i.e. from far inside the stable region of every scheme to far beyond the
/// thesis' explicit plot range (Lambda_r in [-1, 0], Lambda_i in [0, 2]).
const RAYS: [(f64, f64); 3] = [(-0.5, 1.0), (-0.1, 1.0), (-0.02, 1.0)];

fn scales() -> impl Iterator<Item = f64> {
    (0..8).map(|i| 10f64.powf(-2.0 + 3.0 * f64::from(i) / 7.0))
}

/// Relative agreement required between the analyser and the closed form (they agree to ~1e-13
/// in practice: the same exact integration, rounded differently).
const AGREE: f64 = 1e-6;

/// Where the spectral radius crosses 1 between scales `low` (stable) and `high` (unstable) on
/// a ray, by bisection on the closed form to 1e-12 relative in s.
fn boundary(rho: impl Fn(f64) -> f64, mut low: f64, mut high: f64) -> f64 {
    while high - low > 1e-12 * high {
        let mid = 0.5 * (low + high);
        if rho(mid) <= 1.0 {
            low = mid;
        } else {
            high = mid;
        }
    }
    0.5 * (low + high)
}

/// The explicit schemes stable at every named point of a model (the closed form and the
/// analyser agree; measured at commit e21d2a3): D/D, the thesis' most stable explicit
/// decomposition, with Gauss-Seidel at k = 0 on all three models and at every k on the third;
/// Jacobi k = 0 on the third. For them there is no unstable point and no boundary to compare.
const STABLE_AT_EVERY_POINT: [&str; 6] = [
    "[1.0, 1.0, 1.0, 1.0, 1.0] DisplacementDisplacement GaussSeidel k = 0",
    "[10.0, 10.0, 10.0, 10.0, 10.0] DisplacementDisplacement GaussSeidel k = 0",
    "[2.0, 1.5, 0.7, 3.0, 0.5] DisplacementDisplacement Jacobi k = 0",
    "[2.0, 1.5, 0.7, 3.0, 0.5] DisplacementDisplacement GaussSeidel k = 0",
    "[2.0, 1.5, 0.7, 3.0, 0.5] DisplacementDisplacement GaussSeidel k = 1",
    "[2.0, 1.5, 0.7, 3.0, 0.5] DisplacementDisplacement GaussSeidel k = 2",
];

#[test]
fn the_analyser_gives_the_spectral_radii_of_the_closed_form_amplification_matrices() {
    let fmus = fmus();
    use AlgorithmKind::{GaussSeidel, Jacobi};
    use Decomposition::*;
    let mut compared = 0;
    let mut everywhere_stable = Vec::new();
    for ratios in MODELS {
        for decomposition in [ForceForce, ForceDisplacement, DisplacementDisplacement] {
            for algorithm in [Jacobi, GaussSeidel] {
                for k in 0..=2u8 {
                    let s = scheme(decomposition, algorithm, k);
                    let what = format!("{ratios:?} {decomposition:?} {algorithm:?} k = {k}");
                    let mut analyser =
                        Analyser::new(&fmus, &TwoMass::symmetric(-1.0, 1.0, 1.0), s, 1.0).unwrap();
                    let on_ray = |(dr, di): (f64, f64), scale: f64| {
                        TwoMass::with_ratios(dr * scale, di * scale, ratios, 1.0)
                    };
                    let mut check = |model: &TwoMass, at: String| {
                        let expected = closed_form(decomposition, algorithm, k, model);
                        let rho = analyser.spectral_radius(model).unwrap();
                        assert!(
                            (rho / expected - 1.0).abs() < AGREE,
                            "{what} at {at}: analyser {rho:.15} vs closed form {expected:.15}"
                        );
                        expected
                    };
                    let (mut stable, mut unstable, mut boundaries) = (0, 0, 0);
                    for ray in RAYS {
                        let mut last: Option<(f64, f64)> = None;
                        for scale in scales() {
                            let rho = check(&on_ray(ray, scale), format!("{scale} * {ray:?}"));
                            if rho <= 1.0 {
                                stable += 1;
                            } else {
                                unstable += 1;
                            }
                            compared += 1;
                            // The first loss of stability on the ray: its boundary point.
                            if let Some((previous, previous_rho)) = last {
                                if previous_rho <= 1.0 && rho > 1.0 && boundaries < RAYS.len() {
                                    let cf = |s: f64| {
                                        closed_form(decomposition, algorithm, k, &on_ray(ray, s))
                                    };
                                    let edge = boundary(cf, previous, scale);
                                    let at_edge =
                                        check(&on_ray(ray, edge), format!("{edge} * {ray:?}"));
                                    assert!((at_edge - 1.0).abs() < 1e-9, "{what}: {at_edge}");
                                    boundaries += 1;
                                    compared += 1;
                                }
                            }
                            last = Some((scale, rho));
                        }
                    }
                    eprintln!(
                        "{what}: {stable} stable, {unstable} unstable, {boundaries} boundary points agree"
                    );
                    assert!(stable >= 3, "{what}: {stable} stable points");
                    if unstable == 0 {
                        everywhere_stable.push(what);
                    } else {
                        assert!(boundaries >= 1, "{what}: no boundary point");
                    }
                }
            }
        }
    }
    eprintln!("{compared} points compared");
    assert_eq!(everywhere_stable, STABLE_AT_EVERY_POINT);
}

/// The stability maps over the grid (`symmetric_map`, `plane_map`) are the analyser's spectral
/// radii point by point: a few grid points of each against the closed form.
#[test]
fn the_stability_maps_give_the_closed_form_spectral_radii() {
    let fmus = fmus();
    for (ratios, decomposition, algorithm, k) in [
        (
            [1.0; 5],
            Decomposition::ForceForce,
            AlgorithmKind::Jacobi,
            0,
        ),
        (
            [1.0; 5],
            Decomposition::DisplacementDisplacement,
            AlgorithmKind::GaussSeidel,
            2,
        ),
        (
            [10.0; 5],
            Decomposition::ForceDisplacement,
            AlgorithmKind::Jacobi,
            1,
        ),
        (
            [2.0, 1.5, 0.7, 3.0, 0.5],
            Decomposition::DisplacementDisplacement,
            AlgorithmKind::Jacobi,
            2,
        ),
    ] {
        let s = scheme(decomposition, algorithm, k);
        // The thesis' explicit plot range, 4 x 4 points (without its undamped edge and the
        // origin, where the model degenerates).
        let (re, im) = ((-1.0, -0.1), (0.1, 2.0));
        let map = if ratios == [1.0; 5] {
            symmetric_map(&fmus, s, re, im, 4).unwrap()
        } else {
            plane_map(&fmus, s, ratios, re, im, 4).unwrap()
        };
        assert_eq!(map.len(), 16);
        for p in &map {
            let expected = closed_form(
                decomposition,
                algorithm,
                k,
                &TwoMass::with_ratios(p.x, p.y, ratios, 1.0),
            );
            assert!(
                (p.spectral_radius / expected - 1.0).abs() < AGREE,
                "{ratios:?} {decomposition:?} {algorithm:?} k = {k} at ({}, {}): map {} vs closed form {expected}",
                p.x,
                p.y,
                p.spectral_radius
            );
        }
    }
}
