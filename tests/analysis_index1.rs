//! The index-1 constraint coupling's stability (Meyer et al. 2018, Appendix A): the spectral
//! radius of the real master's one-step map on two oscillators joined by a rigid link.

use cosimo::analysis::stability::TestFmus;

fn fmus() -> TestFmus {
    fmu_pack::packed_fmus().expect("the FMUs pack");
    TestFmus::in_folder(&fmu_pack::fmus_dir())
}

/// Unstable points of an index-1 map over the square [-size, 0] x [0, size].
fn constraint_unstable(
    fmus: &TestFmus,
    order: u8,
    ratios: (f64, f64, f64),
    size: f64,
    points: usize,
) -> Vec<(f64, f64, f64)> {
    cosimo::analysis::stability::constraint_map(
        fmus,
        order,
        ratios,
        (-size, 0.0),
        (0.0, size),
        points,
    )
    .unwrap()
    .into_iter()
    .filter(|p| p.spectral_radius > 1.0 + 1e-8)
    .map(|p| (p.x, p.y, p.spectral_radius))
    .collect()
}

#[test]
fn index1_symmetric_model_is_stable_everywhere_on_both_scales() {
    let fmus = fmus();
    for order in [2u8, 3] {
        for size in [10.0, 1000.0] {
            let unstable = constraint_unstable(&fmus, order, (1.0, 1.0, 1.0), size, 11);
            assert!(
                unstable.is_empty(),
                "k = {order}, [-{size}, 0] x [0, {size}]: {unstable:?}"
            );
        }
    }
}

#[test]
fn index1_asymmetric_masses_or_damping_alone_stay_stable() {
    let fmus = fmus();
    for order in [2u8, 3] {
        for ratios in [(1e3, 1.0, 1.0), (1.0, 1e3, 1.0)] {
            let unstable = constraint_unstable(&fmus, order, ratios, 10.0, 11);
            assert!(
                unstable.is_empty(),
                "k = {order}, ratios {ratios:?}: {unstable:?}"
            );
        }
    }
}

#[test]
fn index1_stiffness_asymmetry_destabilises_k2_near_the_axis_but_not_k3() {
    let fmus = fmus();
    let k2 = constraint_unstable(&fmus, 2, (1.0, 1.0, 1e3), 10.0, 11);
    let k3 = constraint_unstable(&fmus, 3, (1.0, 1.0, 1e3), 10.0, 11);
    eprintln!("alpha_Li = 1e3: k = 2 unstable at {k2:?}; k = 3 at {k3:?}");
    assert!(
        k2.iter().any(|p| p.0 < 0.0),
        "k = 2 has an unstable region off the axis"
    );
    assert!(
        k2.iter().all(|p| p.0 > -5.0),
        "close to the Lambda_i1 axis (low damping): {k2:?}"
    );
    // On the undamped axis itself (Lambda_r1 = 0) the physical system has rho = 1; there k = 3
    // sits within the finite-difference Jacobian's error of 1 (found: 1 + 1.5e-8 at
    // Lambda_i1 = 3). Wherever there is damping it is stable.
    let damped: Vec<_> = k3.iter().filter(|p| p.0 < 0.0).collect();
    assert!(
        damped.is_empty(),
        "k = 3 is stable wherever there is damping: {damped:?}"
    );
    assert!(
        k3.iter().all(|p| p.2 < 1.0 + 1e-6),
        "on the axis k = 3 is marginal: {k3:?}"
    );
}
