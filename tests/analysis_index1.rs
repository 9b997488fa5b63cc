//! The index-1 constraint coupling's stability (Meyer et al. 2018, Appendix A): the spectral
//! radius of the real master's one-step map on two oscillators joined by a rigid link, against
//! the paper's verdicts and against a 40-digit computation independent of cosimo
//! (`tests/data/index1/reference.py`).

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

#[test]
fn the_five_appendix_a_cases_give_the_papers_verdicts_on_both_planes() {
    // Appendix A: stable everywhere for the symmetric model and for alpha_m or alpha_Lr = 1e3
    // alone, k = 2 and 3, on [-10, 0] x [0, 10] and [-1000, 0] x [0, 1000]; with alpha_Li = 1e3
    // k = 2 has an unstable region close to the Lambda_i1 axis and k = 3 stays stable; with all
    // three at 1e3 k = 3 stays stable. Counted the paper's way: the damped points
    // (Lambda_r1 < 0) of a 21 x 21 grid, 420 of them; on the undamped axis the coupled system
    // itself has spectral radius 1 and is reported apart.
    let fmus = fmus();
    // (ratios, k, plane, stable damped points of 420, largest spectral radius on the axis).
    let cases = [
        (SYMMETRIC, 2, Plane::Index1Ten, 420, 1.0),
        (SYMMETRIC, 3, Plane::Index1Ten, 420, 1.0),
        (SYMMETRIC, 2, Plane::Index1Thousand, 420, 1.0),
        (SYMMETRIC, 3, Plane::Index1Thousand, 420, 1.0),
        (MASSES, 2, Plane::Index1Ten, 420, 1.0),
        (MASSES, 3, Plane::Index1Ten, 420, 1.0),
        (MASSES, 2, Plane::Index1Thousand, 420, 1.0),
        (MASSES, 3, Plane::Index1Thousand, 420, 1.0),
        (DAMPING, 2, Plane::Index1Ten, 420, 1.0),
        (DAMPING, 3, Plane::Index1Ten, 420, 1.0),
        (DAMPING, 2, Plane::Index1Thousand, 420, 1.0),
        (DAMPING, 3, Plane::Index1Thousand, 420, 1.0),
        // The unstable region of k = 2: 19 damped points next to the axis at this scale; on
        // the large plane it is narrower than the grid's spacing of 50 (see the strip test).
        (STIFFNESS, 2, Plane::Index1Ten, 401, 2009.819489721),
        (STIFFNESS, 3, Plane::Index1Ten, 420, 1.0),
        (STIFFNESS, 2, Plane::Index1Thousand, 420, 3222.306463657),
        (STIFFNESS, 3, Plane::Index1Thousand, 420, 1.0),
        // k = 2 with all three at 1e3: the paper's unstable region near the axis is not found
        // off the axis (as an independent re-implementation also found); on the axis itself
        // the radius exceeds 1 by 1e-3.
        (ALL, 2, Plane::Index1Ten, 420, 1.001000003),
        (ALL, 3, Plane::Index1Ten, 420, 1.0),
        (ALL, 2, Plane::Index1Thousand, 420, 1.001000190),
        (ALL, 3, Plane::Index1Thousand, 420, 1.0),
    ];
    for (ratios, order, plane, stable, axis_max) in cases {
        let map = map(&fmus, order, ratios, plane, 21);
        let count = PlaneCount::of(&map);
        let what = format!("k = {order}, ratios {ratios:?}, {plane:?}");
        assert_eq!((count.damped, count.axis), (420, 21), "{what}");
        assert_eq!(count.damped_stable, stable, "{what}");
        assert!(
            (count.axis_range.1 - axis_max).abs() <= 1e-6 * axis_max,
            "{what}: largest radius on the axis {} (pinned {axis_max})",
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
    }
}

#[test]
fn close_to_the_axis_of_the_large_plane_stiffness_asymmetry_destabilises_k2_only() {
    // The strip Lambda_r1 in [-10, 0] of the large plane, which the 21 x 21 grid steps over.
    let fmus = fmus();
    let strip = |order| {
        constraint_map(&fmus, order, STIFFNESS, (-10.0, 0.0), (0.0, 1000.0), 11)
            .expect("the strip maps")
            .into_iter()
            .filter(|p| p.x < 0.0 && !p.stable())
            .count()
    };
    assert_eq!(strip(2), 7, "k = 2: unstable damped points of the strip");
    assert_eq!(strip(3), 0, "k = 3 stays stable wherever there is damping");
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
