//! The index-1 constraint coupling's stability (Meyer et al. 2018, Appendix A): the spectral
//! radius of the real master's one-step map on two oscillators joined by a rigid link, against
//! the paper's verdicts and against a 40-digit computation independent of cosimo
//! (`tests/data/index1/reference.py`). Where the two disagree (all three ratios at 1e3, k = 2:
//! the paper reports instability near the axis, the computation finds none on these grids)
//! the test follows the computation and says so.

mod common;

use std::path::PathBuf;

use cosimo::analysis::stability::{constraint_map, MapPoint, Plane, PlaneCount, TestFmus};

fn fmus() -> TestFmus {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    TestFmus::in_folder(&fmu_pack::fmus_dir())
}

fn map(
    fmus: &TestFmus,
    order: u8,
    ratios: (f64, f64, f64),
    plane: Plane,
    points: usize,
) -> Vec<MapPoint> {
    let (re, im) = plane.ranges();
    constraint_map(fmus, order, ratios, re, im, points)
        .unwrap_or_else(|e| panic!("k = {order}, ratios {ratios:?}, {plane:?}: {e}"))
}

const SYMMETRIC: (f64, f64, f64) = (1.0, 1.0, 1.0);
const MASSES: (f64, f64, f64) = (1e3, 1.0, 1.0);
const DAMPING: (f64, f64, f64) = (1.0, 1e3, 1.0);
const STIFFNESS: (f64, f64, f64) = (1.0, 1.0, 1e3);
const ALL: (f64, f64, f64) = (1e3, 1e3, 1e3);

/// What Appendix A reports for a case (Meyer et al. 2018; ../shared/notes).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Paper {
    /// Stable at every point of the plotted square.
    StableEverywhere,
    /// An unstable region close to the Lambda_i1 axis (low damping).
    UnstableNearTheAxis,
}

/// The 40-digit reference of tests/data/index1/ for the 21 x 21 grid of a case, if written.
fn reference_21(order: u8, ratios: (f64, f64, f64), plane: Plane) -> Option<&'static str> {
    match (order, ratios, plane) {
        (2, STIFFNESS, Plane::Index1Ten) => Some("rho-k2-10-1,1,1000.csv"),
        (3, STIFFNESS, Plane::Index1Ten) => Some("rho-k3-10-1,1,1000.csv"),
        (2, STIFFNESS, Plane::Index1Thousand) => Some("rho-k2-1000-1,1,1000-21.csv"),
        (2, ALL, Plane::Index1Ten) => Some("rho-k2-10-1000,1000,1000.csv"),
        (2, ALL, Plane::Index1Thousand) => Some("rho-k2-1000-1000,1000,1000-21.csv"),
        _ => None,
    }
}

#[test]
fn the_appendix_a_cases_against_the_papers_verdicts_and_40_digit_references() {
    // Appendix A: stable everywhere for the symmetric model and for alpha_m or alpha_Lr = 1e3
    // alone, k = 2 and 3, on [-10, 0] x [0, 10] and [-1000, 0] x [0, 1000]; with alpha_Li = 1e3
    // k = 2 has an unstable region close to the Lambda_i1 axis and k = 3 stays stable; with all
    // three at 1e3 k = 3 stays stable and k = 2 is again unstable near the axis. Counted the
    // paper's way: the damped points (Lambda_r1 < 0) of a 21 x 21 grid, 420 of them; on the
    // undamped axis the coupled system itself has spectral radius 1 and is reported apart.
    //
    // Where the paper says "stable everywhere" that is the expectation (420 stable, radius 1
    // on the axis). Where it reports instability, the expected counts and the largest radius
    // on the axis come from the 40-digit computation of tests/data/index1/ (reference.py,
    // independent of cosimo) on the same grid, and cosimo must agree with it point by point:
    // - alpha_Li = 1e3, k = 2, small plane: 19 unstable damped points next to the axis, as the
    //   paper says; on the large plane the region is narrower than the grid's spacing of 50
    //   (the strip test below finds it).
    // - All three at 1e3, k = 2: the paper's unstable region is NOT found. The 40-digit
    //   computation gives all 420 damped points stable on both planes (radius 1.001 on the
    //   axis only), as an independent double-precision re-implementation also found (only
    //   slivers at |Lambda_r1| <= 1e-3, finer than these grids). cosimo agrees with the
    //   computation here, not with the paper's figure.
    let fmus = fmus();
    use Paper::*;
    let cases = [
        (SYMMETRIC, 2, Plane::Index1Ten, StableEverywhere),
        (SYMMETRIC, 3, Plane::Index1Ten, StableEverywhere),
        (SYMMETRIC, 2, Plane::Index1Thousand, StableEverywhere),
        (SYMMETRIC, 3, Plane::Index1Thousand, StableEverywhere),
        (MASSES, 2, Plane::Index1Ten, StableEverywhere),
        (MASSES, 3, Plane::Index1Ten, StableEverywhere),
        (MASSES, 2, Plane::Index1Thousand, StableEverywhere),
        (MASSES, 3, Plane::Index1Thousand, StableEverywhere),
        (DAMPING, 2, Plane::Index1Ten, StableEverywhere),
        (DAMPING, 3, Plane::Index1Ten, StableEverywhere),
        (DAMPING, 2, Plane::Index1Thousand, StableEverywhere),
        (DAMPING, 3, Plane::Index1Thousand, StableEverywhere),
        (STIFFNESS, 2, Plane::Index1Ten, UnstableNearTheAxis),
        (STIFFNESS, 3, Plane::Index1Ten, StableEverywhere),
        (STIFFNESS, 2, Plane::Index1Thousand, UnstableNearTheAxis),
        (STIFFNESS, 3, Plane::Index1Thousand, StableEverywhere),
        (ALL, 2, Plane::Index1Ten, UnstableNearTheAxis),
        (ALL, 3, Plane::Index1Ten, StableEverywhere),
        (ALL, 2, Plane::Index1Thousand, UnstableNearTheAxis),
        (ALL, 3, Plane::Index1Thousand, StableEverywhere),
    ];
    let mut against_the_paper = Vec::new();
    for (ratios, order, plane, paper) in cases {
        let map = map(&fmus, order, ratios, plane, 21);
        let count = PlaneCount::of(&map);
        let what = format!("k = {order}, ratios {ratios:?}, {plane:?}");
        assert_eq!((count.damped, count.axis), (420, 21), "{what}");
        let (stable, axis_max) = match reference_21(order, ratios, plane) {
            Some(file) => {
                let expected = reference(file);
                assert_eq!(map.len(), expected.len(), "{file}");
                let mut stable = 0;
                let mut axis_max = 0.0f64;
                for (p, &(re, im, rho)) in map.iter().zip(&expected) {
                    assert!(
                        (p.x - re).abs() < 1e-9 && (p.y - im).abs() < 1e-9,
                        "{file}: grid"
                    );
                    if re < 0.0 {
                        stable += usize::from(rho <= 1.0);
                        // Away from the boundary the verdict cannot depend on rounding.
                        if (rho - 1.0).abs() > 1e-6 {
                            assert_eq!(
                                p.stable(),
                                rho <= 1.0,
                                "{what} at ({re}, {im}): {} against {rho} ({file})",
                                p.spectral_radius
                            );
                        }
                    } else {
                        axis_max = axis_max.max(rho);
                    }
                }
                (stable, axis_max)
            }
            None => {
                assert_eq!(
                    paper, StableEverywhere,
                    "{what}: no reference to count with"
                );
                (420, 1.0)
            }
        };
        assert_eq!(count.damped_stable, stable, "{what}");
        assert!(
            (count.axis_range.1 - axis_max).abs() <= 1e-6 * axis_max,
            "{what}: largest radius on the axis {} (expected {axis_max})",
            count.axis_range.1
        );
        // The undamped axis is at least marginal: the in-phase motion keeps its amplitude.
        assert!((count.axis_range.0 - 1.0).abs() < 1e-6, "{what}: {count:?}");
        if stable < 420 {
            let unstable: Vec<_> = map.iter().filter(|p| p.x < 0.0 && !p.stable()).collect();
            assert!(
                unstable.iter().all(|p| p.x >= -5.0),
                "{what}: the unstable region lies close to the axis: {unstable:?}"
            );
        }
        if paper == UnstableNearTheAxis && stable == 420 {
            against_the_paper.push((ratios, order, plane));
        }
    }
    // Where the paper's instability does not show on the 21 x 21 grid: the large plane of
    // alpha_Li = 1e3 (finer than the grid; see the strip test) and all three at 1e3, k = 2
    // (not found by the 40-digit computation either).
    assert_eq!(
        against_the_paper,
        [
            (STIFFNESS, 2, Plane::Index1Thousand),
            (ALL, 2, Plane::Index1Ten),
            (ALL, 2, Plane::Index1Thousand),
        ]
    );
}

#[test]
fn close_to_the_axis_of_the_large_plane_stiffness_asymmetry_destabilises_k2_only() {
    // The strip Lambda_r1 in [-10, 0] of the large plane, which the 21 x 21 grid steps over,
    // point by point against the 40-digit computation of the same strip.
    let fmus = fmus();
    for (order, file) in [
        (2, "strip-k2-10x1000-1,1,1000.csv"),
        (3, "strip-k3-10x1000-1,1,1000.csv"),
    ] {
        let expected = reference(file);
        let map = constraint_map(&fmus, order, STIFFNESS, (-10.0, 0.0), (0.0, 1000.0), 11)
            .expect("the strip maps");
        assert_eq!(map.len(), expected.len(), "{file}");
        let mut unstable = 0;
        for (p, &(re, im, rho)) in map.iter().zip(&expected) {
            assert!(
                (p.x - re).abs() < 1e-9 && (p.y - im).abs() < 1e-9,
                "{file}: grid"
            );
            let error = (p.spectral_radius - rho).abs();
            assert!(
                error <= 1e-6 * rho || error <= 1e-10,
                "{file} at ({re}, {im}): {} against {rho}",
                p.spectral_radius
            );
            if re < 0.0 && rho > 1.0 {
                assert!(!p.stable(), "{file} at ({re}, {im})");
                unstable += 1;
            }
        }
        let expected_unstable = if order == 2 { 7 } else { 0 };
        assert_eq!(
            unstable, expected_unstable,
            "k = {order}: unstable damped points of the strip ({file})"
        );
    }
}

/// The rows of a reference file: (Lambda_r1, Lambda_i1, spectral radius).
fn reference(name: &str) -> Vec<(f64, f64, f64)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/index1")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|line| {
            let v: Vec<f64> = line
                .split(',')
                .map(|x| x.parse().expect("a number"))
                .collect();
            (v[0], v[1], v[2])
        })
        .collect()
}

#[test]
fn spectral_radii_agree_with_40_digit_values_to_1e6() {
    // Every grid point of the files written by tests/data/index1/reference.py, including
    // alpha_Li = 1e3, where subsystem 2 turns through up to 1e4 (small plane) and 1e6 (large
    // plane) radians per macro step. Relative 1e-6, or 1e-10 absolute where the radius itself
    // is below the map's rounding (a heavily damped point's radius is 1e-14 or less).
    let fmus = fmus();
    let files = [
        (2, STIFFNESS, Plane::Index1Ten, 21, "rho-k2-10-1,1,1000.csv"),
        (3, STIFFNESS, Plane::Index1Ten, 21, "rho-k3-10-1,1,1000.csv"),
        (
            2,
            STIFFNESS,
            Plane::Index1Thousand,
            11,
            "rho-k2-1000-1,1,1000.csv",
        ),
        (
            3,
            STIFFNESS,
            Plane::Index1Thousand,
            11,
            "rho-k3-1000-1,1,1000.csv",
        ),
        (
            2,
            ALL,
            Plane::Index1Thousand,
            11,
            "rho-k2-1000-1000,1000,1000.csv",
        ),
        (
            3,
            ALL,
            Plane::Index1Thousand,
            11,
            "rho-k3-1000-1000,1000,1000.csv",
        ),
    ];
    let mut worst = 0.0f64;
    for (order, ratios, plane, points, file) in files {
        let expected = reference(file);
        let map = map(&fmus, order, ratios, plane, points);
        assert_eq!(map.len(), expected.len(), "{file}");
        for (p, &(re, im, rho)) in map.iter().zip(&expected) {
            assert!(
                (p.x - re).abs() < 1e-9 && (p.y - im).abs() < 1e-9,
                "{file}: grid"
            );
            let error = (p.spectral_radius - rho).abs();
            assert!(
                error <= 1e-6 * rho || error <= 1e-10,
                "{file} at ({re}, {im}): {} against {rho} (relative {:e})",
                p.spectral_radius,
                error / rho
            );
            if error > 1e-10 {
                worst = worst.max(error / rho);
            }
        }
    }
    eprintln!("largest relative difference: {worst:e}");
}

#[test]
fn the_stability_command_maps_the_large_plane_and_says_what_it_counted() {
    // It stopped with "Schur decomposition did not converge" or "Jacobian singular" here.
    fmus();
    let output = common::cosimo([
        "stability",
        "--algorithm",
        "constraint",
        "--order",
        "3",
        "--ratios",
        "1,1,1000",
        "--plane",
        "1000",
        "--points",
        "11",
    ]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", common::show(&output));
    assert!(
        text.contains(
            "110 of 110 damped grid points stable (Λr1 < 0; spectral radius <= 1) on Λr1 in [-1000, 0], Λi1 in [0, 1000]"
        ),
        "{text}"
    );
    assert!(
        text.contains("undamped axis Λr1 = 0 (11 points, not counted: the coupled system itself has spectral radius 1 there)"),
        "{text}"
    );
}
