//! Stability of the master algorithms on linear test systems, measured on the real master.
//!
//! For a linear system the co-simulation is a linear map from one macro point to the next on
//! the vector `z = (FMU states, past coupling values kept by the master)`. The analyser builds
//! that map column by column: for every unit vector it resets the FMUs, starts them from the
//! vector's states (the test FMUs take their initial states as parameters), seeds the master's
//! history with the vector's past coupling values, runs ONE macro step of the chosen algorithm
//! and reads the new vector. The spectral radius of the map (nalgebra's eigenvalues) decides:
//! stable when it is at most 1. Nothing is re-derived by hand, so what is analysed is exactly
//! what runs.
//!
//! The test system is the two-mass oscillator of the stability thesis (Sect. 2.1) with its
//! force/force, force/displacement and displacement/displacement decompositions, built from the
//! project's `Oscillator` and `CouplingSpring` FMUs.

use std::path::{Path, PathBuf};

use nalgebra::DMatrix;

use crate::fmu::description::StartValue;
use crate::master::execution::{Execution, RunOptions};
use crate::master::implicit::Extension;
use crate::settings::{AlgorithmKind, Experiment, ExperimentSpec};
use crate::system::{Component, Connection, Endpoint, System};
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
        let beta = (a_im * a_im * alpha * alpha * (4.0 * c - d * d) + gamma * gamma * d * d)
            / (4.0 * alpha * c);
        let alpha_star = 2.0 * alpha / (1.0 + alpha);
        let eta = k_re * alpha_star;
        let eps = (k_im * k_im * alpha_star * alpha_star * (4.0 * c - d * d) + eta * eta * d * d)
            / (4.0 * alpha_star * c);
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

/// Where the test FMUs are.
#[derive(Debug, Clone)]
pub struct TestFmus {
    pub oscillator: PathBuf,
    pub spring: PathBuf,
}

impl TestFmus {
    /// The FMI 2 builds in a folder of packed FMUs (e.g. `target/fmus`).
    pub fn in_folder(folder: &Path) -> TestFmus {
        TestFmus {
            oscillator: folder.join("Oscillator-fmi2.fmu"),
            spring: folder.join("CouplingSpring-fmi2.fmu"),
        }
    }
}

/// The one-step map of a scheme on a model, ready to evaluate at many points.
pub struct Analyser {
    exec: Execution,
    scheme: Scheme,
    /// Component indices of mass 1 and mass 2.
    masses: [usize; 2],
    /// Connections the master extrapolates (their past values are part of the state vector).
    coupled: Vec<usize>,
    h: f64,
}

fn end(component: &str, variable: &str) -> Endpoint {
    Endpoint {
        component: component.into(),
        variable: variable.into(),
    }
}

fn system(fmus: &TestFmus, model: &TwoMass, scheme: &Scheme, h: f64) -> Result<System> {
    let mass = |name: &str, m: f64, c: f64, d: f64, coupled: bool| {
        let mut start_values = vec![
            ("m".to_string(), m.to_string()),
            ("c".to_string(), c.to_string()),
            ("d".to_string(), d.to_string()),
            ("x0".to_string(), "0".to_string()),
            ("v0".to_string(), "0".to_string()),
        ];
        if coupled {
            start_values.push(("cc".into(), model.cc.to_string()));
            start_values.push(("dc".into(), model.dc.to_string()));
        }
        Component {
            name: name.into(),
            fmu: fmus.oscillator.clone(),
            start_values,
            sub_steps: 1,
        }
    };
    let (m1, m2) = (
        mass("mass1", model.m1, model.c1, model.d1, false),
        mass("mass2", model.m2, model.c2, model.d2, false),
    );
    let (components, connections) = match scheme.decomposition {
        Decomposition::ForceForce => (
            vec![
                m1,
                Component {
                    name: "spring".into(),
                    fmu: fmus.spring.clone(),
                    start_values: vec![
                        ("c1".into(), model.cc.to_string()),
                        ("d1".into(), model.dc.to_string()),
                        ("c3".into(), "0".into()),
                        ("d3".into(), "0".into()),
                    ],
                    sub_steps: 1,
                },
                m2,
            ],
            vec![
                Connection::new(end("mass1", "x"), end("spring", "x1")),
                Connection::new(end("mass1", "v"), end("spring", "v1")),
                Connection::new(end("mass2", "x"), end("spring", "x2")),
                Connection::new(end("mass2", "v"), end("spring", "v2")),
                Connection::new(end("spring", "F1"), end("mass1", "F")),
                Connection::new(end("spring", "F2"), end("mass2", "F")),
            ],
        ),
        Decomposition::ForceDisplacement => (
            vec![m1, mass("mass2", model.m2, model.c2, model.d2, true)],
            vec![
                Connection::new(end("mass1", "x"), end("mass2", "x_in")),
                Connection::new(end("mass1", "v"), end("mass2", "v_in")),
                Connection::new(end("mass2", "Fc"), end("mass1", "F")),
            ],
        ),
        Decomposition::DisplacementDisplacement => (
            vec![
                mass("mass1", model.m1, model.c1, model.d1, true),
                mass("mass2", model.m2, model.c2, model.d2, true),
            ],
            vec![
                Connection::new(end("mass1", "x"), end("mass2", "x_in")),
                Connection::new(end("mass1", "v"), end("mass2", "v_in")),
                Connection::new(end("mass2", "x"), end("mass1", "x_in")),
                Connection::new(end("mass2", "v"), end("mass1", "v_in")),
            ],
        ),
    };
    let mut connections = connections;
    thesis_variant(&mut connections, scheme.extension);
    let implicit = scheme.algorithm == AlgorithmKind::Implicit;
    let experiment = ExperimentSpec {
        stop: Some(1e6 * h),
        step: Some(h),
        algorithm: Some(scheme.algorithm),
        extrapolation_order: Some(scheme.order),
        corrector: implicit.then(|| crate::settings::implicit::ImplicitSettings {
            extension: scheme.extension,
            ..Default::default()
        }),
        ..ExperimentSpec::default()
    }
    .build()
    .map_err(Error::Usage)?;
    Ok(System {
        components,
        connections,
        experiment,
    })
}

/// Mark the connections of a two-mass system of the project's Oscillator and CouplingSpring
/// FMUs for the thesis' extended variant (Sects. 3.4.1-3.4.6): the half-step values are the
/// forces, and the velocities (D) or positions (I) of the base excitation; for I, every source
/// names its running integral (a velocity's is the position). No extension clears the marks.
pub fn thesis_variant(connections: &mut [Connection], extension: Extension) {
    for c in connections {
        c.half_step = match extension {
            Extension::None => false,
            Extension::Derivative => matches!(c.to.variable.as_str(), "F" | "v_in"),
            Extension::Integral => matches!(c.to.variable.as_str(), "F" | "x_in"),
        };
        c.source_integral = (extension == Extension::Integral).then(|| {
            match c.from.variable.as_str() {
                "x" => "x_int",
                "v" => "x",
                "F1" => "F1_int",
                "F2" => "F2_int",
                _ => "Fc_int",
            }
            .to_string()
        });
    }
}

impl Analyser {
    /// Instantiate the scheme's system once (the model's parameters are set per point).
    pub fn new(fmus: &TestFmus, model: &TwoMass, scheme: Scheme, h: f64) -> Result<Analyser> {
        let exec =
            Execution::instantiate(&system(fmus, model, &scheme, h)?, &RunOptions::default())?;
        let masses = [
            exec.resolved
                .components
                .iter()
                .position(|c| c.name == "mass1"),
            exec.resolved
                .components
                .iter()
                .position(|c| c.name == "mass2"),
        ];
        let [Some(a), Some(b)] = masses else {
            return Err(Error::Usage("the stability system lacks its masses".into()));
        };
        let coupled = exec.coupled_connections();
        Ok(Analyser {
            exec,
            scheme,
            masses: [a, b],
            coupled,
            h,
        })
    }

    /// Dimension of the state vector: 4 FMU states and k past values per coupled connection.
    pub fn dimension(&self) -> usize {
        4 + usize::from(self.scheme.order) * self.coupled.len()
    }

    fn set_parameters(&mut self, model: &TwoMass) {
        let values = [
            (
                self.masses[0],
                [
                    ("m", model.m1),
                    ("c", model.c1),
                    ("d", model.d1),
                    ("cc", model.cc),
                    ("dc", model.dc),
                ],
            ),
            (
                self.masses[1],
                [
                    ("m", model.m2),
                    ("c", model.c2),
                    ("d", model.d2),
                    ("cc", model.cc),
                    ("dc", model.dc),
                ],
            ),
        ];
        for (i, list) in values {
            let component = &mut self.exec.resolved.components[i];
            for (name, value) in list {
                if let Some(index) = component.description.variable_index(name) {
                    if let Some(entry) =
                        component.start_values.iter_mut().find(|(v, _)| *v == index)
                    {
                        entry.1 = StartValue::Float(vec![value]);
                    }
                }
            }
        }
        if let Some(spring) = self
            .exec
            .resolved
            .components
            .iter()
            .position(|c| c.name == "spring")
        {
            let component = &mut self.exec.resolved.components[spring];
            for (name, value) in [("c1", model.cc), ("d1", model.dc)] {
                if let Some(index) = component.description.variable_index(name) {
                    if let Some(entry) =
                        component.start_values.iter_mut().find(|(v, _)| *v == index)
                    {
                        entry.1 = StartValue::Float(vec![value]);
                    }
                }
            }
        }
    }

    fn set_states(&mut self, z: &[f64]) {
        for (k, &i) in self.masses.iter().enumerate() {
            let component = &mut self.exec.resolved.components[i];
            for (name, value) in [("x0", z[2 * k]), ("v0", z[2 * k + 1])] {
                if let Some(index) = component.description.variable_index(name) {
                    if let Some(entry) =
                        component.start_values.iter_mut().find(|(v, _)| *v == index)
                    {
                        entry.1 = StartValue::Float(vec![value]);
                    }
                }
            }
        }
    }

    /// The map z_N -> z_(N+1) of one macro step at this model's parameters.
    pub fn map(&mut self, model: &TwoMass) -> Result<DMatrix<f64>> {
        self.set_parameters(model);
        let n = self.dimension();
        let k = usize::from(self.scheme.order);
        let connections = self.exec.values.len();
        let mut map = DMatrix::zeros(n, n);
        for column in 0..n {
            let mut z = vec![0.0; n];
            z[column] = 1.0;
            self.exec.reset()?;
            self.set_states(&z[..4]);
            self.exec.initialize()?;
            // Past coupling values u_(N-1) .. u_(N-k) from the vector, oldest first.
            let past: Vec<(f64, Vec<f64>)> = (1..=k)
                .rev()
                .map(|j| {
                    let mut values = vec![0.0; connections];
                    for (p, &c) in self.coupled.iter().enumerate() {
                        values[c] = z[4 + (j - 1) * self.coupled.len() + p];
                    }
                    (-(j as f64) * self.h, values)
                })
                .collect();
            self.exec.seed_history(&past)?;
            self.exec.step(self.h)?;
            for (row, name) in ["mass1.x", "mass1.v", "mass2.x", "mass2.v"]
                .iter()
                .enumerate()
            {
                map[(row, column)] = self.exec.float_value(name)?;
            }
            // After the step the history holds u_(N+1), u_N, ...: the new past is u_N ...
            for j in 1..=k {
                for (p, &c) in self.coupled.iter().enumerate() {
                    map[(4 + (j - 1) * self.coupled.len() + p, column)] =
                        self.exec.history.values(c)[j];
                }
            }
        }
        Ok(map)
    }

    /// Spectral radius of the one-step map at this model's parameters.
    pub fn spectral_radius(&mut self, model: &TwoMass) -> Result<f64> {
        spectral_radius(self.map(model)?)
    }
}

/// One point of a stability map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MapPoint {
    pub lambda_re: f64,
    pub lambda_im: f64,
    pub spectral_radius: f64,
}

/// The spectral radius over a grid of the (Lambda_r1, Lambda_i1) plane of the symmetric model:
/// `points` per axis, Lambda_r in `re`, Lambda_i in `im` (H = 1, so the dimensionless
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
    let n = points.max(2);
    let mut map = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            let lambda_re = re.0 + (re.1 - re.0) * i as f64 / (n - 1) as f64;
            let lambda_im = im.0 + (im.1 - im.0) * j as f64 / (n - 1) as f64;
            let model = TwoMass::with_ratios(lambda_re, lambda_im, ratios, 1.0);
            let rho = analyser.spectral_radius(&model)?;
            map.push(MapPoint {
                lambda_re,
                lambda_im,
                spectral_radius: rho,
            });
        }
    }
    Ok(map)
}

/// The largest stable macro step of a physical two-mass system by bisection between `low`
/// (stable) and `high` (unstable), to a relative width `tolerance`.
pub fn max_stable_step(
    fmus: &TestFmus,
    model: &TwoMass,
    scheme: Scheme,
    mut low: f64,
    mut high: f64,
    tolerance: f64,
) -> Result<f64> {
    let stable = |h: f64| -> Result<bool> {
        Ok(Analyser::new(fmus, model, scheme, h)?.spectral_radius(model)? <= 1.0 + 1e-12)
    };
    if !stable(low)? {
        return Err(Error::Usage(format!(
            "the scheme is unstable already at the lower bound H = {low}"
        )));
    }
    if stable(high)? {
        return Ok(high);
    }
    while (high - low) > tolerance * high {
        let mid = 0.5 * (low + high);
        if stable(mid)? {
            low = mid;
        } else {
            high = mid;
        }
    }
    Ok(low)
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

/// The one-step map of index-1 constraint coupling (two masses joined rigidly, x2 - x1 = 0,
/// the multiplier as their coupling force) on `z = (x1, v1, x2, v2[, lambda for k = 3])`.
pub struct ConstraintAnalyser {
    exec: Execution,
    coupling: crate::master::constraint::ConstraintCoupling,
    order: u8,
    masses: [usize; 2],
    h: f64,
}

impl ConstraintAnalyser {
    /// Instantiate the rigidly coupled two-mass system once.
    pub fn new(fmus: &TestFmus, model: &TwoMass, order: u8, h: f64) -> Result<ConstraintAnalyser> {
        use crate::master::constraint::{
            ConstraintCoupling, ConstraintMethod, DrivenForce, InterfacePoint,
        };
        let mass = |name: &str, m: f64, c: f64, d: f64| Component {
            name: name.into(),
            fmu: fmus.oscillator.clone(),
            start_values: vec![
                ("m".to_string(), m.to_string()),
                ("c".to_string(), c.to_string()),
                ("d".to_string(), d.to_string()),
                ("x0".to_string(), "0".to_string()),
                ("v0".to_string(), "0".to_string()),
            ],
            sub_steps: 1,
        };
        let point = |m: &str| InterfacePoint {
            position: format!("{m}.x"),
            velocity: format!("{m}.v"),
            acceleration: format!("{m}.a"),
        };
        let coupling = ConstraintCoupling {
            points: vec![point("mass1"), point("mass2")],
            equations: vec![vec![(-1.0, 0), (1.0, 1)]],
            forces: vec![
                DrivenForce {
                    input: "mass1.F".into(),
                    terms: vec![(1.0, 0)],
                },
                DrivenForce {
                    input: "mass2.F".into(),
                    terms: vec![(-1.0, 0)],
                },
            ],
            method: ConstraintMethod::Index1 {
                order,
                newton_iterations: 1,
            },
        };
        let system = System {
            components: vec![
                mass("mass1", model.m1, model.c1, model.d1),
                mass("mass2", model.m2, model.c2, model.d2),
            ],
            connections: vec![],
            experiment: Experiment {
                stop: 1e6 * h,
                step: h,
                algorithm: crate::settings::Algorithm::Constraint(coupling.clone()),
                ..Experiment::default()
            },
        };
        let exec = Execution::instantiate(&system, &RunOptions::default())?;
        Ok(ConstraintAnalyser {
            exec,
            coupling,
            order,
            masses: [0, 1],
            h,
        })
    }

    /// Dimension of the state vector: 4 states, and the multiplier for k = 3 (continuous).
    pub fn dimension(&self) -> usize {
        if self.order == 3 {
            5
        } else {
            4
        }
    }

    fn set(&mut self, model: &TwoMass, z: &[f64]) {
        let values = [
            (
                self.masses[0],
                [
                    ("m", model.m1),
                    ("c", model.c1),
                    ("d", model.d1),
                    ("x0", z[0]),
                    ("v0", z[1]),
                ],
            ),
            (
                self.masses[1],
                [
                    ("m", model.m2),
                    ("c", model.c2),
                    ("d", model.d2),
                    ("x0", z[2]),
                    ("v0", z[3]),
                ],
            ),
        ];
        for (i, list) in values {
            let component = &mut self.exec.resolved.components[i];
            for (name, value) in list {
                if let Some(index) = component.description.variable_index(name) {
                    if let Some(entry) =
                        component.start_values.iter_mut().find(|(v, _)| *v == index)
                    {
                        entry.1 = StartValue::Float(vec![value]);
                    }
                }
            }
        }
    }

    /// The map z_N -> z_(N+1) of one index-1 macro step at this model's parameters.
    pub fn map(&mut self, model: &TwoMass) -> Result<DMatrix<f64>> {
        use crate::master::constraint::ConstraintState;
        let n = self.dimension();
        let mut map = DMatrix::zeros(n, n);
        let r = self.exec.resolve_constraints(&self.coupling)?;
        for column in 0..n {
            let mut z = vec![0.0; n];
            z[column] = 1.0;
            self.exec.reset()?;
            self.set(model, &z);
            self.exec.initialize()?;
            let mut state = ConstraintState::at(vec![if n == 5 { z[4] } else { 0.0 }]);
            self.exec
                .constraint_step(&self.coupling, &r, &mut state, self.h)?;
            for (row, name) in ["mass1.x", "mass1.v", "mass2.x", "mass2.v"]
                .iter()
                .enumerate()
            {
                map[(row, column)] = self.exec.float_value(name)?;
            }
            if n == 5 {
                map[(4, column)] = Execution::multipliers(&state)[0];
            }
        }
        Ok(map)
    }

    /// Spectral radius of the one-step map.
    pub fn spectral_radius(&mut self, model: &TwoMass) -> Result<f64> {
        spectral_radius(self.map(model)?)
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
    let mut analyser = ConstraintAnalyser::new(
        fmus,
        &rigidly_coupled(-1.0, 1.0, alpha_m, alpha_lr, alpha_li),
        order,
        1.0,
    )?;
    let n = points.max(2);
    let mut map = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            let lambda_re = re.0 + (re.1 - re.0) * i as f64 / (n - 1) as f64;
            let lambda_im = im.0 + (im.1 - im.0) * j as f64 / (n - 1) as f64;
            let model = rigidly_coupled(lambda_re, lambda_im, alpha_m, alpha_lr, alpha_li);
            let rho = analyser.spectral_radius(&model)?;
            map.push(MapPoint {
                lambda_re,
                lambda_im,
                spectral_radius: rho,
            });
        }
    }
    Ok(map)
}

/// Spectral radius of a one-step map: the largest eigenvalue modulus (Schur decomposition with
/// a bounded number of iterations). A map that is not finite is unstable; one whose
/// decomposition does not converge is reported as an error rather than looping.
pub fn spectral_radius(map: DMatrix<f64>) -> Result<f64> {
    if map.iter().any(|x| !x.is_finite()) {
        return Ok(f64::INFINITY);
    }
    // rho <= ||A||_inf: a map that has decayed to (nearly) nothing is stable, and the Schur
    // iteration does not converge on a zero matrix.
    let norm = map
        .row_iter()
        .map(|row| row.iter().map(|x| x.abs()).sum::<f64>())
        .fold(0.0, f64::max);
    if norm < 1e-200 {
        return Ok(norm);
    }
    let schur = nalgebra::linalg::Schur::try_new(map, f64::EPSILON, 100_000).ok_or_else(|| {
        Error::Usage(
            "the eigenvalues of the one-step map did not converge (Schur decomposition)".into(),
        )
    })?;
    Ok(schur
        .complex_eigenvalues()
        .iter()
        .map(|e| e.norm())
        .fold(0.0, f64::max))
}
