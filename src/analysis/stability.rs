//! The stability thesis' studies of the two-mass oscillator (and the index-1 paper's rigidly
//! coupled variant): its maps over the dimensionless eigenvalue plane and the largest stable
//! step of a physical system, for every decomposition and scheme.
//!
//! The systems are inputs like any user's: the JSON system files in `fmus/stability/` (one
//! per decomposition and extended variant, and `rigid.json`), built into the library, with
//! their FMUs taken from a folder of packed FMUs. Each file's `"stability"` section names the
//! states and the thesis' parameters m1, c1, d1, m2, c2, d2, cc, dc; this module only turns the
//! thesis' dimensionless parameters into those and runs [`LinearAnalyser`] on the real master.

use std::path::{Path, PathBuf};

use nalgebra::DMatrix;

use super::linear::{grid, LinearAnalyser};
pub use super::linear::{spectral_radius, MapPoint};
use super::study::{self, Study};
use crate::master::implicit::Extension;
use crate::settings::constraint::ConstraintMethod;
use crate::settings::{Algorithm, AlgorithmKind, Labels, Overrides};
use crate::system::System;
use crate::{Error, Result};

/// How the two-mass oscillator is cut into subsystems (the thesis' Eqs. 2.6–2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decomposition {
    /// Both masses force-driven; the coupling spring-damper is evaluated at macro points.
    ForceForce,
    /// Mass 1 force-driven; mass 2 base-excited by mass 1, carrying the coupling element.
    ForceDisplacement,
    /// Both masses base-excited by the other, each carrying a copy of the coupling element.
    DisplacementDisplacement,
}

/// Physical parameters of the two-mass oscillator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwoMass {
    pub m1: f64,
    pub c1: f64,
    pub d1: f64,
    pub m2: f64,
    pub c2: f64,
    pub d2: f64,
    pub cc: f64,
    pub dc: f64,
}

impl TwoMass {
    /// From the thesis' dimensionless parameters (Eq. 2.2) with m1 = 1 and macro step `h`:
    /// c~ = c1 H^2 / m1, d~ = d1 H / m1, alpha = m2/m1, beta = c2/c1, gamma = d2/d1,
    /// eps = cc/c1, eta = dc/d1.
    #[allow(clippy::too_many_arguments)]
    pub fn dimensionless(
        c_tilde: f64,
        d_tilde: f64,
        alpha: f64,
        beta: f64,
        gamma: f64,
        eps: f64,
        eta: f64,
        h: f64,
    ) -> TwoMass {
        let (m1, c1, d1) = (1.0, c_tilde / (h * h), d_tilde / h);
        TwoMass {
            m1,
            c1,
            d1,
            m2: alpha * m1,
            c2: beta * c1,
            d2: gamma * d1,
            cc: eps * c1,
            dc: eta * d1,
        }
    }

    /// The model of the thesis' 2D plots (Eqs. 3.31) at the point (Lambda_r1, Lambda_i1) of
    /// subsystem 1's dimensionless eigenvalue plane, with the ratios `[alpha, a_Re, a_Im,
    /// k_Re, k_Im]`: alpha = m2/m1, a_Re and a_Im the ratios of subsystem 2's eigenvalue parts
    /// to subsystem 1's, k_Re and k_Im those of the free-free coupling mode (with the thesis'
    /// alpha* = 2 alpha / (1 + alpha)). All ratios 1 is the symmetric model.
    pub fn with_ratios(lambda_re: f64, lambda_im: f64, ratios: [f64; 5], h: f64) -> TwoMass {
        let [alpha, a_re, a_im, k_re, k_im] = ratios;
        let d = -2.0 * lambda_re;
        let c = lambda_re * lambda_re + lambda_im * lambda_im;
        let gamma = a_re * alpha;
        let alpha_star = 2.0 * alpha / (1.0 + alpha);
        let eta = k_re * alpha_star;
        // At the origin (c = d = 0) the ratios of stiffnesses are 0 / 0: take their limit along
        // the undamped axis (d = 0), where they do not depend on c.
        let (beta, eps) = if c == 0.0 {
            (a_im * a_im * alpha, k_im * k_im * alpha_star)
        } else {
            (
                (a_im * a_im * alpha * alpha * (4.0 * c - d * d) + gamma * gamma * d * d)
                    / (4.0 * alpha * c),
                (k_im * k_im * alpha_star * alpha_star * (4.0 * c - d * d) + eta * eta * d * d)
                    / (4.0 * alpha_star * c),
            )
        };
        TwoMass::dimensionless(c, d, alpha, beta, gamma, eps, eta, h)
    }

    /// The symmetric model (all ratios 1) at the point (Lambda_r1, Lambda_i1) of subsystem 1's
    /// dimensionless eigenvalue plane (Eqs. 3.31): d~ = -2 Lambda_r, c~ = Lambda_r^2 + Lambda_i^2.
    pub fn symmetric(lambda_re: f64, lambda_im: f64, h: f64) -> TwoMass {
        TwoMass::dimensionless(
            lambda_re * lambda_re + lambda_im * lambda_im,
            -2.0 * lambda_re,
            1.0,
            1.0,
            1.0,
            1.0,
            1.0,
            h,
        )
    }
}

/// A master algorithm to analyse.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scheme {
    pub decomposition: Decomposition,
    pub algorithm: AlgorithmKind,
    /// Extrapolation / interpolation order k.
    pub order: u8,
    /// Implicit only: the thesis' extended coupling (Sect. 3.4), with the half-step variables
    /// of its variants: F/F the forces; F/D the force and mass 1's velocity (D) or position
    /// (I); D/D both velocities (D) or positions (I). The others stay on the macro grid.
    pub extension: Extension,
}

/// Where the FMUs of the thesis' systems are: a folder of packed FMUs (e.g. `target/fmus`),
/// in which each component's FMU is found by the file name its system file gives.
#[derive(Debug, Clone)]
pub struct TestFmus {
    pub folder: PathBuf,
}

impl TestFmus {
    /// The FMUs in `folder`.
    pub fn in_folder(folder: &Path) -> TestFmus {
        TestFmus {
            folder: folder.to_path_buf(),
        }
    }
}

/// The thesis' system files: (name, text).
fn system_file(decomposition: Decomposition, extension: Extension) -> (&'static str, &'static str) {
    use Decomposition::*;
    use Extension::*;
    macro_rules! file {
        ($name:literal) => {
            ($name, include_str!(concat!("../../fmus/stability/", $name)))
        };
    }
    match (decomposition, extension) {
        (ForceForce, None) => file!("ff.json"),
        (ForceForce, Derivative) => file!("ff-derivative.json"),
        (ForceForce, Integral) => file!("ff-integral.json"),
        (ForceDisplacement, None) => file!("fd.json"),
        (ForceDisplacement, Derivative) => file!("fd-derivative.json"),
        (ForceDisplacement, Integral) => file!("fd-integral.json"),
        (DisplacementDisplacement, None) => file!("dd.json"),
        (DisplacementDisplacement, Derivative) => file!("dd-derivative.json"),
        (DisplacementDisplacement, Integral) => file!("dd-integral.json"),
    }
}

/// Read one of the built-in system files, its FMUs taken from `fmus`.
fn load(fmus: &TestFmus, (name, text): (&str, &str)) -> Result<(System, Study)> {
    let (mut system, study) = study::from_str(text, &Path::new("fmus/stability").join(name))?;
    for component in &mut system.components {
        if let Some(file) = component.fmu.file_name() {
            component.fmu = fmus.folder.join(file);
        }
        if !component.fmu.exists() {
            return Err(Error::Usage(format!(
                "{}: not found; the thesis' systems run the project's own FMUs: build them with `cargo run -p fmu-pack` or give their folder (--fmus)",
                component.fmu.display()
            )));
        }
    }
    Ok((system, study))
}

/// The one-step map of a scheme on the two-mass oscillator, ready to evaluate at many points.
pub struct Analyser {
    inner: LinearAnalyser,
}

impl Analyser {
    /// Instantiate the scheme's system once, at macro step `h` (the model's parameters are
    /// set per point).
    pub fn new(fmus: &TestFmus, model: &TwoMass, scheme: Scheme, h: f64) -> Result<Analyser> {
        let (mut system, study) = load(fmus, system_file(scheme.decomposition, scheme.extension))?;
        let implicit = scheme.algorithm == AlgorithmKind::Implicit;
        system.experiment = Overrides {
            step: Some(h),
            stop: Some(1e6 * h),
            algorithm: Some(scheme.algorithm),
            extrapolation_order: Some(scheme.order),
            // Given whenever it matters, so that an extension with another algorithm is refused.
            extension: (implicit || scheme.extension != Extension::None)
                .then_some(scheme.extension),
            // The stop time only keeps the map's steps away from it: no row is ever written.
            max_rows: Some(u64::MAX),
            ..Overrides::default()
        }
        .apply(&system.experiment, Labels::SYSTEM_FILE)
        .map_err(Error::Usage)?;
        Analyser::on(&system, &study, model)
    }

    /// Index-1 constraint coupling of `order` 2 or 3 on the rigidly coupled two-mass system
    /// (x2 - x1 = 0, the multiplier as their coupling force), at macro step `h`; the state
    /// vector carries the multiplier for k = 3 (continuous).
    pub fn rigid(fmus: &TestFmus, model: &TwoMass, order: u8, h: f64) -> Result<Analyser> {
        let (mut system, study) = load(
            fmus,
            (
                "rigid.json",
                include_str!("../../fmus/stability/rigid.json"),
            ),
        )?;
        system.experiment.step = h;
        system.experiment.stop = 1e6 * h;
        // As in `new`: far-away stop, no rows.
        system.experiment.max_rows = u64::MAX;
        if let Algorithm::Constraint(coupling) = &mut system.experiment.algorithm {
            if let ConstraintMethod::Index1 { order: k, .. } = &mut coupling.method {
                *k = order;
            }
        }
        Analyser::on(&system, &study, model)
    }

    fn on(system: &System, study: &Study, model: &TwoMass) -> Result<Analyser> {
        let mut analyser = Analyser {
            inner: LinearAnalyser::new(system, study)?,
        };
        analyser.set(model)?;
        Ok(analyser)
    }

    /// The model's parameters, through the system file's named parameters (the rigidly coupled
    /// model has no coupling spring-damper: no cc, dc).
    fn set(&mut self, model: &TwoMass) -> Result<()> {
        let mut values = vec![
            ("m1", model.m1),
            ("c1", model.c1),
            ("d1", model.d1),
            ("m2", model.m2),
            ("c2", model.c2),
            ("d2", model.d2),
        ];
        if self.inner.study().parameter("cc").is_some() {
            values.extend([("cc", model.cc), ("dc", model.dc)]);
        }
        for (name, value) in values {
            self.inner.set_parameter(name, value)?;
        }
        Ok(())
    }

    /// Dimension of the state vector: 4 FMU states, k past values per coupled connection, and
    /// the multiplier of index-1 k = 3.
    pub fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    /// The map z_N -> z_(N+1) of one macro step at this model's parameters.
    pub fn map(&mut self, model: &TwoMass) -> Result<DMatrix<f64>> {
        self.set(model)?;
        self.inner.map()
    }

    /// Spectral radius of the one-step map at this model's parameters.
    pub fn spectral_radius(&mut self, model: &TwoMass) -> Result<f64> {
        spectral_radius(self.map(model)?)
    }
}

/// The squares of subsystem 1's dimensionless eigenvalue plane (Lambda_r1, Lambda_i1) on which the
/// papers draw their stability maps, the undamped axis Lambda_r1 = 0 included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plane {
    /// The thesis' plots of explicit schemes (Sect. 3.2): [-1, 0] x [0, 2].
    ThesisExplicit,
    /// The thesis' plots of implicit schemes: [-2, 0] x [0, 10].
    ThesisImplicit,
    /// The index-1 paper's Appendix A, small scale: [-10, 0] x [0, 10].
    Index1Ten,
    /// The index-1 paper's Appendix A, large scale: [-1000, 0] x [0, 1000].
    Index1Thousand,
}

impl Plane {
    /// (Lambda_r1 range, Lambda_i1 range).
    pub fn ranges(self) -> ((f64, f64), (f64, f64)) {
        match self {
            Plane::ThesisExplicit => ((-1.0, 0.0), (0.0, 2.0)),
            Plane::ThesisImplicit => ((-2.0, 0.0), (0.0, 10.0)),
            Plane::Index1Ten => ((-10.0, 0.0), (0.0, 10.0)),
            Plane::Index1Thousand => ((-1000.0, 0.0), (0.0, 1000.0)),
        }
    }
}

/// What a map over the eigenvalue plane found, counted the papers' way: the damped points
/// (Lambda_r1 < 0) decide stability; on the undamped axis (Lambda_r1 = 0) the coupled physical
/// system itself has spectral radius 1, so a scheme can at best be marginal there and its
/// points are reported apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaneCount {
    /// Grid points with Lambda_r1 < 0.
    pub damped: usize,
    /// Of those, the stable ones (spectral radius <= 1).
    pub damped_stable: usize,
    /// Grid points on the undamped axis.
    pub axis: usize,
    /// The smallest and largest spectral radius on the axis (NaN without axis points).
    pub axis_range: (f64, f64),
}

impl PlaneCount {
    /// Count a map whose x is Lambda_r1.
    pub fn of(map: &[MapPoint]) -> PlaneCount {
        let (axis, damped): (Vec<&MapPoint>, Vec<&MapPoint>) = map.iter().partition(|p| p.x >= 0.0);
        let radii = axis.iter().map(|p| p.spectral_radius);
        PlaneCount {
            damped: damped.len(),
            damped_stable: damped.iter().filter(|p| p.stable()).count(),
            axis: axis.len(),
            axis_range: if axis.is_empty() {
                (f64::NAN, f64::NAN)
            } else {
                (
                    radii.clone().fold(f64::INFINITY, f64::min),
                    radii.fold(f64::NEG_INFINITY, f64::max),
                )
            },
        }
    }
}

/// The spectral radius over a grid of the (Lambda_r1, Lambda_i1) plane of the symmetric model:
/// `points` per axis, Lambda_r (x) in `re`, Lambda_i (y) in `im` (H = 1, so the dimensionless
/// parameters are the physical ones).
pub fn symmetric_map(
    fmus: &TestFmus,
    scheme: Scheme,
    re: (f64, f64),
    im: (f64, f64),
    points: usize,
) -> Result<Vec<MapPoint>> {
    plane_map(fmus, scheme, [1.0; 5], re, im, points)
}

/// The stability map of `scheme` over subsystem 1's eigenvalue plane for the model with the
/// given ratios (see [`TwoMass::with_ratios`]), H = 1.
pub fn plane_map(
    fmus: &TestFmus,
    scheme: Scheme,
    ratios: [f64; 5],
    re: (f64, f64),
    im: (f64, f64),
    points: usize,
) -> Result<Vec<MapPoint>> {
    let mut analyser = Analyser::new(fmus, &TwoMass::symmetric(-1.0, 1.0, 1.0), scheme, 1.0)?;
    grid(re, im, points, |lambda_re, lambda_im| {
        analyser.spectral_radius(&TwoMass::with_ratios(lambda_re, lambda_im, ratios, 1.0))
    })
}

/// The largest stable macro step of a physical two-mass system above `low`: the first loss of
/// stability, found on a geometric grid and then by bisection to a relative width `tolerance`
/// (see [`crate::analysis::linear::LinearAnalyser::max_stable_step`]).
pub fn max_stable_step(
    fmus: &TestFmus,
    model: &TwoMass,
    scheme: Scheme,
    low: f64,
    high: f64,
    tolerance: f64,
) -> Result<f64> {
    Analyser::new(fmus, model, scheme, low)?
        .inner
        .max_stable_step(low, high, tolerance)
}

/// Parameters of the index-1 paper's Appendix A (Eq. 41): subsystem 1's dimensionless
/// eigenvalue (Lambda_r1, Lambda_i1) and the ratios alpha_m = m2/m1, alpha_Lr = Lambda_r2 /
/// Lambda_r1, alpha_Li = Lambda_i2 / Lambda_i1; with m1 = 1 and H = 1.
pub fn rigidly_coupled(
    lambda_re: f64,
    lambda_im: f64,
    alpha_m: f64,
    alpha_lr: f64,
    alpha_li: f64,
) -> TwoMass {
    let (re2, im2) = (alpha_lr * lambda_re, alpha_li * lambda_im);
    let m2 = alpha_m;
    TwoMass {
        m1: 1.0,
        c1: lambda_re * lambda_re + lambda_im * lambda_im,
        d1: -2.0 * lambda_re,
        m2,
        c2: m2 * (re2 * re2 + im2 * im2),
        d2: -2.0 * m2 * re2,
        cc: 0.0,
        dc: 0.0,
    }
}

/// The spectral radius of index-1 coupling over a grid of the (Lambda_r1, Lambda_i1) plane with
/// the Appendix A ratios fixed.
pub fn constraint_map(
    fmus: &TestFmus,
    order: u8,
    ratios: (f64, f64, f64),
    re: (f64, f64),
    im: (f64, f64),
    points: usize,
) -> Result<Vec<MapPoint>> {
    let (alpha_m, alpha_lr, alpha_li) = ratios;
    let model = |re: f64, im: f64| rigidly_coupled(re, im, alpha_m, alpha_lr, alpha_li);
    let mut analyser = Analyser::rigid(fmus, &model(-1.0, 1.0), order, 1.0)?;
    grid(re, im, points, |lambda_re, lambda_im| {
        analyser.spectral_radius(&model(lambda_re, lambda_im))
    })
}
