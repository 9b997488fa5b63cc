//! Constraint coupling: subsystems joined by algebraic constraints on interface positions, with
//! Lagrange multipliers as coupling inputs (Meyer et al. 2018, the index-1 approach; a
//! Baumgarte-stabilised baseline).
//!
//! Each constraint equation j is a linear combination of interface points,
//! `g_j = sum_i c_ji p_i` on position level and, with the same coefficients, on velocity and
//! acceleration level; its multiplier lambda_j drives force inputs, `F = sum_j s_j lambda_j`.
//!
//! Index-1: within a macro step the multipliers follow polynomials with three parameters beta
//! each (k = 2: `lambda = sum beta_i p_i(tau)`; k = 3: `lambda = lambda_N + sum beta_i p_i(tau)`,
//! continuous), tau = (t - T_N) / H, with the paper's optimised bases (Eqs. 23, 24). The
//! predictor continues the last step's polynomial; the parameters are then corrected by Newton
//! on the residuals at T_(N+1) on all three levels, scaled `g / H^2, g' / H, g''` (Eq. 22), with
//! the Jacobian d g / d beta from repeated macro steps off the saved FMU states; the corrector
//! repeats the step with the corrected polynomial. Linear subsystems need one Newton step.
//!
//! Baumgarte: the multipliers solve `g'' + 2 alpha g' + beta^2 g = 0` at each macro point and are
//! held over the step (explicit), or the step is repeated once with the multipliers
//! interpolated linearly to the ones found at its end (one corrector).

use nalgebra::{DMatrix, DVector};

use super::divergence;
use super::execution::Execution;
use super::polynomial::MAX_DEGREE;
use crate::fmu::ValueReference;
pub use crate::settings::constraint::{
    ConstraintCoupling, ConstraintMethod, DrivenForce, InterfacePoint,
};
use crate::{Error, Result};

/// Optimised bases p_1..p_3 in tau, as monomial coefficients [tau^0, tau^1, tau^2, tau^3].
fn basis(order: u8) -> [[f64; 4]; 3] {
    if order == 2 {
        [
            [12.0, -48.0, 36.0, 0.0],
            [-6.0, 30.0, -24.0, 0.0],
            [1.0, -6.0, 6.0, 0.0],
        ]
    } else {
        [
            [0.0, 60.0, -180.0, 120.0],
            [0.0, -24.0, 84.0, -60.0],
            [0.0, 3.0, -12.0, 10.0],
        ]
    }
}

/// How far above the residuals' size a finite-difference column's change must stand: rounding
/// (1e-16 relative) then costs the column at most about 1e-13 of its size. Perturbations that
/// change the residuals by more never grow, so ordinary runs keep their Jacobians.
const RESOLUTION: f64 = 1e-3;

/// What one constraint step measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConstraintStep {
    /// Newton iterations on the multiplier parameters.
    pub iterations: u32,
    /// Largest scaled residual at the step's end after the corrector.
    pub residual: f64,
    /// Where that residual is: `3 * equation + level` (level 0 position, 1 velocity, 2
    /// acceleration).
    pub worst: usize,
    /// Largest interface acceleration at the step's end (the residuals' scale).
    pub acceleration: f64,
    /// Largest interface position at the step's end (the position gaps' scale).
    pub position: f64,
    /// Largest position-level gap |g| of an equation at the step's end, and its equation.
    pub gap: (f64, usize),
}

/// The size of the interface at a step's end: the largest |acceleration| and |position|.
#[derive(Debug, Clone, Copy, Default)]
struct InterfaceSize {
    acceleration: f64,
    position: f64,
}

/// A force input (component, value reference) and its (coefficient, equation) terms.
type Driven = (usize, ValueReference, Vec<(f64, usize)>);

/// Resolved value references of the constraint coupling.
pub struct ResolvedConstraints {
    points: Vec<[(usize, ValueReference); 3]>,
    forces: Vec<Driven>,
}

/// The multipliers' state carried from step to step.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ConstraintState {
    /// Per equation: the multiplier polynomial of the last step in tau-monomials [1, tau, ..].
    last: Vec<[f64; 4]>,
    /// Per equation: lambda at the current macro point.
    lambda: Vec<f64>,
}

impl ConstraintState {
    /// Multipliers `lambda` at the current point, held constant over the last step (what the
    /// predictor continues): a restart from known multipliers, or a stability study.
    pub fn at(lambda: Vec<f64>) -> ConstraintState {
        ConstraintState {
            last: lambda.iter().map(|&l| [l, 0.0, 0.0, 0.0]).collect(),
            lambda,
        }
    }
}

impl Execution {
    pub fn resolve_constraints(&self, c: &ConstraintCoupling) -> Result<ResolvedConstraints> {
        if c.points.is_empty() || c.equations.is_empty() || c.forces.is_empty() {
            return Err(Error::Usage(format!(
                "constraint coupling needs interface points, equations and driven forces (found {} points, {} equations, {} forces)",
                c.points.len(),
                c.equations.len(),
                c.forces.len()
            )));
        }
        if let Some(j) = c.equations.iter().position(Vec::is_empty) {
            return Err(Error::Usage(format!(
                "constraint equation {j} has no terms"
            )));
        }
        let mut points = Vec::with_capacity(c.points.len());
        for p in &c.points {
            points.push([
                self.locate(&p.position)?,
                self.locate(&p.velocity)?,
                self.locate(&p.acceleration)?,
            ]);
        }
        for (j, equation) in c.equations.iter().enumerate() {
            if let Some((_, i)) = equation.iter().find(|(_, i)| *i >= points.len()) {
                return Err(Error::Usage(format!(
                    "constraint equation {j} refers to interface point {i}, but there are {} points",
                    points.len()
                )));
            }
        }
        let mut forces = Vec::with_capacity(c.forces.len());
        for f in &c.forces {
            let (component, vr) = self.locate(&f.input)?;
            if let Some((_, j)) = f.terms.iter().find(|(_, j)| *j >= c.equations.len()) {
                return Err(Error::Usage(format!(
                    "force {} is driven by multiplier {j}, but there are {} equations",
                    f.input,
                    c.equations.len()
                )));
            }
            forces.push((component, vr, f.terms.clone()));
        }
        if let Some(name) = self.component_without_rollback() {
            return Err(Error::Usage(format!(
                "constraint coupling repeats macro steps from saved FMU states, but component \"{name}\" cannot save its state (canGetAndSetFMUstate is false)"
            )));
        }
        Ok(ResolvedConstraints { points, forces })
    }

    /// Interface outputs [position, velocity, acceleration] per point, now (under mpirun read
    /// by their owners and shared in one collective).
    fn interface_values(&mut self, r: &ResolvedConstraints) -> Result<Vec<[f64; 3]>> {
        let ports: Vec<(usize, ValueReference)> = r.points.iter().flatten().copied().collect();
        let owners: Vec<usize> = ports.iter().map(|&(component, _)| component).collect();
        let mut flat = vec![0.0; ports.len()];
        let mut read = Ok(());
        for (k, &(component, vr)) in ports.iter().enumerate() {
            if !self.steps_here(component) || read.is_err() {
                continue;
            }
            let value = self.placement.run_one(component, move |unit| {
                let mut x = [0.0];
                unit.slave.get_float64(&[vr], &mut x)?;
                Ok(x[0])
            });
            match value {
                Ok(x) => flat[k] = x,
                Err(error) if self.ranks.is_some() => read = Err(error),
                Err(error) => return Err(error),
            }
        }
        self.share_by_owner(&owners, &mut flat, read)?;
        Ok(flat.chunks_exact(3).map(|v| [v[0], v[1], v[2]]).collect())
    }

    /// Residuals per equation and level [g, g', g''] from interface values.
    fn residuals(c: &ConstraintCoupling, values: &[[f64; 3]]) -> Vec<[f64; 3]> {
        c.equations
            .iter()
            .map(|eq| {
                let mut g = [0.0; 3];
                for &(coef, i) in eq {
                    for level in 0..3 {
                        g[level] += coef * values[i][level];
                    }
                }
                g
            })
            .collect()
    }

    /// Set the force inputs to the multipliers' polynomials over the next step (Taylor at the
    /// step start: value and derivatives of each force).
    fn set_multipliers(
        &mut self,
        r: &ResolvedConstraints,
        polys: &[[f64; 4]],
        h: f64,
    ) -> Result<()> {
        // Under mpirun each owner sets its own; a failure is told on every rank.
        let mut set = Ok(());
        for (component, vr, terms) in &r.forces {
            let mut taylor = [0.0; MAX_DEGREE + 1];
            for &(coef, j) in terms {
                // d^n/dt^n of sum a_i tau^i at tau = 0 is n! a_n / H^n.
                let mut factorial = 1.0;
                for (n, a) in polys[j].iter().enumerate() {
                    if n > 0 {
                        factorial *= n as f64;
                    }
                    taylor[n] += coef * a * factorial / h.powi(n as i32);
                }
            }
            let (vr, taylor) = (*vr, taylor);
            set = set.and_then(|()| {
                self.placement.run_one(*component, move |unit| {
                    unit.slave
                        .set_input_polynomial(&[vr], 3, &taylor[..4])
                        .map(|_| ())
                })
            });
        }
        self.agree(set)
    }

    /// Set the force inputs to constant values (the multipliers at a point).
    fn set_forces(&mut self, r: &ResolvedConstraints, lambda: &[f64]) -> Result<()> {
        // Under mpirun each owner sets its own; a failure is told on every rank.
        let mut set = Ok(());
        for (component, vr, terms) in &r.forces {
            let value: f64 = terms.iter().map(|&(coef, j)| coef * lambda[j]).sum();
            let vr = *vr;
            set = set.and_then(|()| {
                self.placement.run_one(*component, move |unit| {
                    unit.slave.set_float64(&[vr], &[value])
                })
            });
        }
        self.agree(set)
    }

    /// One macro step with the multipliers following `polys`, from the saved states; returns
    /// the scaled residuals at the end, flattened [g/H^2, g'/H, g''] per equation, and the
    /// interface's size there.
    fn constraint_pass(
        &mut self,
        c: &ConstraintCoupling,
        r: &ResolvedConstraints,
        polys: &[[f64; 4]],
        t: f64,
        h: f64,
    ) -> Result<(Vec<f64>, InterfaceSize)> {
        self.restore_states()?;
        self.time = t;
        self.set_multipliers(r, polys, h)?;
        self.step_jacobi(t + h, None)?;
        self.time = t + h;
        self.exchange(false)?;
        // The accelerations at T_(N+1) must see the multipliers' end values.
        let end: Vec<f64> = polys.iter().map(|p| p.iter().sum()).collect();
        self.set_forces(r, &end)?;
        let values = self.interface_values(r)?;
        let size = InterfaceSize {
            acceleration: values.iter().fold(0.0f64, |m, v| m.max(v[2].abs())),
            position: values.iter().fold(0.0f64, |m, v| m.max(v[0].abs())),
        };
        let residuals = Self::residuals(c, &values)
            .iter()
            .flat_map(|g| [g[0] / (h * h), g[1] / h, g[2]])
            .collect();
        Ok((residuals, size))
    }

    /// `d g'' / d lambda` at the current point from the FMUs' directional derivatives of the
    /// acceleration outputs with respect to the driven force inputs (their direct feedthrough;
    /// a force acts on its own component's accelerations only). `None` when a component
    /// involved provides no directional derivatives: the caller takes finite differences.
    fn acceleration_jacobian(
        &mut self,
        c: &ConstraintCoupling,
        r: &ResolvedConstraints,
    ) -> Result<Option<DMatrix<f64>>> {
        let m = c.equations.len();
        let mut involved: Vec<usize> = r.points.iter().map(|p| p[2].0).collect();
        involved.extend(r.forces.iter().map(|f| f.0));
        involved.sort_unstable();
        involved.dedup();
        // Asked of each owner (a stand-in provides none), shared in one collective.
        let mut provides: Vec<f64> = involved
            .iter()
            .map(|&component| {
                let here = self.steps_here(component)
                    && self
                        .placement
                        .run_one(component, |unit| {
                            Ok(unit.slave.provides_directional_derivatives())
                        })
                        .unwrap_or(false);
                f64::from(u8::from(here))
            })
            .collect();
        self.share_by_owner(&involved, &mut provides, Ok(()))?;
        if provides.contains(&0.0) {
            return Ok(None);
        }
        // d acceleration_i / d lambda_j through the forces on the point's own component.
        // The partials asked of each owner, shared in one collective.
        let mut wanted = Vec::new();
        let mut owners = Vec::new();
        let mut partials = Vec::new();
        let mut asked = Ok(());
        for (i, point) in r.points.iter().enumerate() {
            let (component, acceleration_vr) = point[2];
            for (f, (force_component, force_vr, _)) in r.forces.iter().enumerate() {
                if *force_component != component {
                    continue;
                }
                wanted.push((i, f));
                owners.push(component);
                if !self.steps_here(component) || asked.is_err() {
                    partials.push(0.0);
                    continue;
                }
                let force_vr = *force_vr;
                let partial = self.placement.run_one(component, move |unit| {
                    let mut sensitivity = [0.0];
                    unit.slave.directional_derivative(
                        &[acceleration_vr],
                        &[force_vr],
                        &[1.0],
                        &mut sensitivity,
                    )?;
                    Ok(sensitivity[0])
                });
                match partial {
                    Ok(partial) => partials.push(partial),
                    Err(error) if self.ranks.is_some() => {
                        asked = Err(error);
                        partials.push(0.0);
                    }
                    Err(error) => return Err(error),
                }
            }
        }
        self.share_by_owner(&owners, &mut partials, asked)?;
        let mut acceleration = DMatrix::<f64>::zeros(r.points.len(), m);
        for (&(i, f), partial) in wanted.iter().zip(partials) {
            for &(coefficient, j) in &r.forces[f].2 {
                acceleration[(i, j)] += coefficient * partial;
            }
        }
        let mut jacobian = DMatrix::zeros(m, m);
        for (e, equation) in c.equations.iter().enumerate() {
            for &(coefficient, i) in equation {
                for j in 0..m {
                    jacobian[(e, j)] += coefficient * acceleration[(i, j)];
                }
            }
        }
        Ok(Some(jacobian))
    }

    /// Consistent multipliers at the current point: the acceleration-level constraints solved
    /// for lambda (they are affine in lambda through the accelerations' direct feedthrough).
    pub(crate) fn consistent_multipliers(
        &mut self,
        c: &ConstraintCoupling,
        r: &ResolvedConstraints,
        lambda_guess: &[f64],
    ) -> Result<Vec<f64>> {
        let m = c.equations.len();
        let acceleration_residual =
            |exec: &mut Execution, lambda: &[f64]| -> Result<DVector<f64>> {
                exec.set_forces(r, lambda)?;
                let values = exec.interface_values(r)?;
                Ok(DVector::from_iterator(
                    m,
                    Self::residuals(c, &values).iter().map(|g| g[2]),
                ))
            };
        let base = acceleration_residual(self, lambda_guess)?;
        let jacobian = match self.acceleration_jacobian(c, r)? {
            Some(jacobian) => jacobian,
            None => {
                let mut jacobian = DMatrix::zeros(m, m);
                for j in 0..m {
                    let mut perturbed = lambda_guess.to_vec();
                    let delta = 1.0f64.max(lambda_guess[j].abs() * 1e-6);
                    perturbed[j] += delta;
                    let column = (acceleration_residual(self, &perturbed)? - &base) / delta;
                    jacobian.set_column(j, &column);
                }
                jacobian
            }
        };
        let step = jacobian.lu().solve(&(-&base)).ok_or_else(|| {
            Error::Numerics(format!(
                "constraint coupling at t = {}: the accelerations do not depend on the multipliers (singular); check the force inputs and the acceleration outputs' feedthrough",
                crate::numbers::number(self.time)
            ))
        })?;
        let lambda: Vec<f64> = lambda_guess
            .iter()
            .zip(step.iter())
            .map(|(l, s)| l + s)
            .collect();
        self.set_forces(r, &lambda)?;
        Ok(lambda)
    }

    /// One index-1 macro step of size `h`.
    pub(crate) fn step_index1(
        &mut self,
        c: &ConstraintCoupling,
        r: &ResolvedConstraints,
        state: &mut ConstraintState,
        order: u8,
        newton_iterations: u32,
        h: f64,
    ) -> Result<ConstraintStep> {
        let t = self.time;
        let m = c.equations.len();
        let basis = basis(order);
        // The predictor: the last polynomial continued into [T_N, T_(N+1)] (tau -> tau + 1).
        let predicted: Vec<[f64; 4]> = state.last.iter().map(shift_by_one).collect();
        // Its parameters in the basis (k = 3: relative to lambda_N, the basis vanishing at 0).
        let beta_p = to_parameters(&predicted, &state.lambda, &basis, order);
        let polys_of = |beta: &DVector<f64>| -> Vec<[f64; 4]> {
            (0..m)
                .map(|j| {
                    let mut p = [0.0; 4];
                    if order == 3 {
                        p[0] = state.lambda[j];
                    }
                    for (i, b) in basis.iter().enumerate() {
                        for n in 0..4 {
                            p[n] += beta[3 * j + i] * b[n];
                        }
                    }
                    p
                })
                .collect()
        };
        self.save_states()?;
        let mut beta = beta_p;
        let (g0, _) = self.constraint_pass(c, r, &polys_of(&beta), t, h)?;
        let mut g = DVector::from_vec(g0);
        let mut report = ConstraintStep::default();
        for _ in 0..newton_iterations.max(1) {
            // d g / d beta by finite differences: one repeated macro step per parameter.
            let mut jacobian = DMatrix::zeros(3 * m, 3 * m);
            for l in 0..3 * m {
                let scale = beta[l]
                    .abs()
                    .max(state.lambda.get(l / 3).map_or(0.0, |x| x.abs()))
                    .max(1.0);
                // The residuals are affine in beta for linear subsystems: a larger perturbation is
                // exact there and keeps rounding out of the Jacobian; nonlinear ones only converge
                // a little slower per Newton iteration.
                let mut delta = 1e-4 * scale;
                let mut attempts = 0;
                let column = loop {
                    let mut perturbed = beta.clone();
                    perturbed[l] += delta;
                    let g_l = DVector::from_vec(
                        self.constraint_pass(c, r, &polys_of(&perturbed), t, h)?.0,
                    );
                    let change = (g_l - &g) / delta;
                    // A change lost in the rounding of large residuals (a stiff subsystem far
                    // from the constraint: g'' carries c x) gives a Jacobian of rounding errors
                    // and a wrong corrector, or a singular one: perturb more until the change
                    // stands well above the residuals' rounding.
                    let resolved = change.amax() * delta;
                    let needed = RESOLUTION * g.amax();
                    attempts += 1;
                    if resolved >= needed || attempts == 4 {
                        break change;
                    }
                    delta *= if resolved > 0.0 {
                        (2.0 * needed / resolved).min(1e8)
                    } else {
                        1e8
                    };
                };
                jacobian.set_column(l, &column);
            }
            let step = jacobian.lu().solve(&(-&g)).ok_or_else(|| {
                Error::Numerics(format!(
                    "constraint coupling at t = {}: the Jacobian of the residuals with respect to the multiplier parameters is singular; check the constraint equations and force inputs",
                    crate::numbers::number(t)
                ))
            })?;
            beta += step;
            report.iterations += 1;
            let (corrected, size) = self.constraint_pass(c, r, &polys_of(&beta), t, h)?;
            g = DVector::from_vec(corrected);
            report.acceleration = size.acceleration;
            report.position = size.position;
        }
        // NaN anywhere is the residual (nalgebra's amax keeps a NaN only when it comes last),
        // so a diverged corrector cannot pass for a converged one.
        report.residual = g.iter().fold(0.0_f64, |m, x| {
            if x.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                m.max(x.abs())
            }
        });
        report.worst = g
            .iter()
            .position(|x| x.is_nan())
            .unwrap_or_else(|| g.iamax());
        report.gap = position_gap(g.as_slice(), h);
        let polys = polys_of(&beta);
        state.lambda = polys.iter().map(|p| p.iter().sum()).collect();
        state.last = polys;
        self.push_history();
        Ok(report)
    }

    /// One Baumgarte macro step: multipliers from `g'' + 2 alpha g' + beta^2 g = 0` at the
    /// macro point, held; with `corrector`, repeated once with them interpolated linearly to
    /// the ones found at the step's end.
    pub(crate) fn step_baumgarte(
        &mut self,
        c: &ConstraintCoupling,
        r: &ResolvedConstraints,
        state: &mut ConstraintState,
        (alpha, beta, corrector): (f64, f64, bool),
        h: f64,
    ) -> Result<ConstraintStep> {
        let t = self.time;
        let lambda_n = self.baumgarte_multipliers(c, r, &state.lambda, alpha, beta)?;
        let held: Vec<[f64; 4]> = lambda_n.iter().map(|&l| [l, 0.0, 0.0, 0.0]).collect();
        self.save_states()?;
        let (mut g, mut size) = self.constraint_pass(c, r, &held, t, h)?;
        if corrector {
            let lambda_end = self.baumgarte_multipliers(c, r, &lambda_n, alpha, beta)?;
            let linear: Vec<[f64; 4]> = lambda_n
                .iter()
                .zip(&lambda_end)
                .map(|(&a, &b)| [a, b - a, 0.0, 0.0])
                .collect();
            (g, size) = self.constraint_pass(c, r, &linear, t, h)?;
        }
        state.lambda = lambda_n;
        self.push_history();
        let worst = (0..g.len())
            .max_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs()))
            .unwrap_or(0);
        Ok(ConstraintStep {
            iterations: u32::from(corrector),
            residual: g.iter().fold(0.0, |m: f64, x| m.max(x.abs())),
            worst,
            acceleration: size.acceleration,
            position: size.position,
            gap: position_gap(&g, h),
        })
    }

    /// Multipliers making `g'' + 2 alpha g' + beta^2 g = 0` at the current point.
    fn baumgarte_multipliers(
        &mut self,
        c: &ConstraintCoupling,
        r: &ResolvedConstraints,
        guess: &[f64],
        alpha: f64,
        beta: f64,
    ) -> Result<Vec<f64>> {
        let m = c.equations.len();
        let residual = |exec: &mut Execution, lambda: &[f64]| -> Result<DVector<f64>> {
            exec.set_forces(r, lambda)?;
            let values = exec.interface_values(r)?;
            Ok(DVector::from_iterator(
                m,
                Self::residuals(c, &values)
                    .iter()
                    .map(|g| g[2] + 2.0 * alpha * g[1] + beta * beta * g[0]),
            ))
        };
        let base = residual(self, guess)?;
        // Only g'' depends on the multipliers at the point itself.
        let jacobian = match self.acceleration_jacobian(c, r)? {
            Some(jacobian) => jacobian,
            None => {
                let mut jacobian = DMatrix::zeros(m, m);
                for j in 0..m {
                    let mut perturbed = guess.to_vec();
                    let delta = 1.0f64.max(guess[j].abs() * 1e-6);
                    perturbed[j] += delta;
                    jacobian.set_column(j, &((residual(self, &perturbed)? - &base) / delta));
                }
                jacobian
            }
        };
        let step = jacobian.lu().solve(&(-&base)).ok_or_else(|| {
            Error::Numerics(format!(
                "Baumgarte coupling at t = {}: the accelerations do not depend on the multipliers",
                crate::numbers::number(self.time)
            ))
        })?;
        let lambda: Vec<f64> = guess.iter().zip(step.iter()).map(|(l, s)| l + s).collect();
        self.set_forces(r, &lambda)?;
        Ok(lambda)
    }

    /// Consistent multipliers at the start and the first polynomial (constant).
    pub fn start_constraints_public(
        &mut self,
        c: &ConstraintCoupling,
    ) -> Result<(ConstraintState, ResolvedConstraints)> {
        let r = self.resolve_constraints(c)?;
        let state = self.start_constraints(c, &r)?;
        Ok((state, r))
    }

    fn start_constraints(
        &mut self,
        c: &ConstraintCoupling,
        r: &ResolvedConstraints,
    ) -> Result<ConstraintState> {
        let m = c.equations.len();
        let lambda = self.consistent_multipliers(c, r, &vec![0.0; m])?;
        let last = lambda.iter().map(|&l| [l, 0.0, 0.0, 0.0]).collect();
        // The polynomial of the "previous step" is constant: shifting it keeps it constant.
        Ok(ConstraintState { last, lambda })
    }

    /// One macro step of the configured method.
    pub fn constraint_step(
        &mut self,
        c: &ConstraintCoupling,
        r: &ResolvedConstraints,
        state: &mut ConstraintState,
        h: f64,
    ) -> Result<ConstraintStep> {
        match c.method {
            ConstraintMethod::Index1 {
                order,
                newton_iterations,
            } => self.step_index1(c, r, state, order, newton_iterations, h),
            ConstraintMethod::Baumgarte {
                alpha,
                beta,
                corrector,
            } => self.step_baumgarte(c, r, state, (alpha, beta, corrector), h),
        }
    }

    /// The multipliers at the current macro point.
    pub fn multipliers(state: &ConstraintState) -> &[f64] {
        &state.lambda
    }
}

/// The largest position-level gap |g| and its equation, from the scaled residuals
/// [g/H^2, g'/H, g''] per equation.
fn position_gap(scaled: &[f64], h: f64) -> (f64, usize) {
    scaled
        .chunks(3)
        .enumerate()
        .map(|(j, r)| (r[0].abs() * h * h, j))
        .fold(
            (0.0, 0),
            |worst, gap| if gap.0 > worst.0 { gap } else { worst },
        )
}

/// p(tau + 1) for a cubic in tau-monomials.
fn shift_by_one(p: &[f64; 4]) -> [f64; 4] {
    [
        p[0] + p[1] + p[2] + p[3],
        p[1] + 2.0 * p[2] + 3.0 * p[3],
        p[2] + 3.0 * p[3],
        p[3],
    ]
}

/// The basis parameters of polynomials (least squares on the monomials; exact when the
/// polynomial lies in the span, as the predictor's does for k = 2 and, relative to lambda_N,
/// for k = 3 up to its cubic part).
fn to_parameters(
    polys: &[[f64; 4]],
    lambda: &[f64],
    basis: &[[f64; 4]; 3],
    order: u8,
) -> DVector<f64> {
    let m = polys.len();
    let b = DMatrix::from_fn(4, 3, |n, i| basis[i][n]);
    let mut beta = DVector::zeros(3 * m);
    for (j, p) in polys.iter().enumerate() {
        let mut target = DVector::from_column_slice(p);
        if order == 3 {
            target[0] -= lambda.get(j).copied().unwrap_or(0.0);
        }
        let solution = (b.transpose() * &b)
            .lu()
            .solve(&(b.transpose() * target))
            .unwrap_or_else(|| DVector::zeros(3));
        for i in 0..3 {
            beta[3 * j + i] = solution[i];
        }
    }
    beta
}

/// Constraint coupling as an algorithm of the run loop.
pub struct ConstraintAlgorithm {
    coupling: ConstraintCoupling,
    resolved: Option<ResolvedConstraints>,
    state: ConstraintState,
    iterations: u64,
    /// The largest interface position of the run so far (Baumgarte's drift is measured
    /// against it).
    extent: f64,
}

/// Constraint equation `j` as its position-level sum, e.g. `link2.px - link1.px`.
fn describe_equation(c: &ConstraintCoupling, j: usize) -> String {
    let mut text = String::new();
    for (k, &(coefficient, point)) in c.equations[j].iter().enumerate() {
        let name = &c.points[point].position;
        let sign = if coefficient < 0.0 { "-" } else { "+" };
        let magnitude = coefficient.abs();
        match (k, magnitude == 1.0) {
            (0, true) if coefficient < 0.0 => text.push_str(&format!("-{name}")),
            (0, true) => text.push_str(name),
            (0, false) => text.push_str(&format!("{coefficient} {name}")),
            (_, true) => text.push_str(&format!(" {sign} {name}")),
            (_, false) => text.push_str(&format!(" {sign} {magnitude} {name}")),
        }
    }
    text
}

impl ConstraintAlgorithm {
    /// The error of a macro step whose corrector left the constraints far from holding.
    fn diverged(&self, exec: &Execution, step: &ConstraintStep) -> Error {
        let (equation, level) = (step.worst / 3, step.worst % 3);
        let (level, scaled) = [
            ("position", "g / H^2"),
            ("velocity", "g' / H"),
            ("acceleration", "g''"),
        ][level];
        let method = match self.coupling.method {
            ConstraintMethod::Index1 { .. } => "the index-1 corrector",
            ConstraintMethod::Baumgarte { .. } => "the Baumgarte multipliers",
        };
        divergence::diverged(format_args!(
            "in the macro step to t = {}, {method} left constraint equation {equation} ({}) violated on {level} level: residual {scaled} = {:.3e}, more than {} % of the largest interface acceleration ({:.3e})",
            crate::numbers::number(exec.time),
            describe_equation(&self.coupling, equation),
            step.residual,
            divergence::CONSTRAINT_RESIDUAL_FRACTION * 100.0,
            step.acceleration
        ))
    }

    /// The error of a Baumgarte macro step after which the constrained points drifted apart.
    fn drifted(&self, exec: &Execution, step: &ConstraintStep) -> Error {
        divergence::diverged(format_args!(
            "in the macro step to t = {}, the Baumgarte multipliers let constraint equation {} ({}) drift apart on position level: |g| = {:.3e}, more than {} % of the largest interface position so far ({:.3e})",
            crate::numbers::number(exec.time),
            step.gap.1,
            describe_equation(&self.coupling, step.gap.1),
            step.gap.0,
            divergence::CONSTRAINT_DRIFT_FRACTION * 100.0,
            self.extent
        ))
    }

    /// The algorithm for this coupling (resolved against the system in `prepare`).
    pub fn new(coupling: ConstraintCoupling) -> ConstraintAlgorithm {
        ConstraintAlgorithm {
            coupling,
            resolved: None,
            state: ConstraintState::default(),
            iterations: 0,
            extent: 0.0,
        }
    }
}

/// The constraints resolved in `prepare` (the run loop always prepares first).
fn prepared(resolved: &Option<ResolvedConstraints>) -> Result<&ResolvedConstraints> {
    resolved
        .as_ref()
        .ok_or_else(|| Error::Internal("the constraint coupling was not prepared".into()))
}

impl super::algorithm::MasterAlgorithm for ConstraintAlgorithm {
    fn prepare(&mut self, exec: &mut Execution) -> Result<()> {
        self.resolved = Some(exec.resolve_constraints(&self.coupling)?);
        Ok(())
    }

    fn start(&mut self, exec: &mut Execution) -> Result<()> {
        self.state = exec.start_constraints(&self.coupling, prepared(&self.resolved)?)?;
        Ok(())
    }

    fn attempt(&mut self, exec: &mut Execution, h: f64) -> Result<super::algorithm::Outcome> {
        let step = exec.constraint_step(
            &self.coupling,
            prepared(&self.resolved)?,
            &mut self.state,
            h,
        )?;
        self.iterations += u64::from(step.iterations);
        self.extent = self.extent.max(step.position);
        match self.coupling.method {
            ConstraintMethod::Index1 { .. } => {
                if divergence::constraint_diverged(step.residual, step.acceleration) {
                    return Err(self.diverged(exec, &step));
                }
            }
            ConstraintMethod::Baumgarte { .. } => {
                if divergence::constraint_drifted(step.gap.0, self.extent) {
                    return Err(self.drifted(exec, &step));
                }
            }
        }
        Ok(super::algorithm::Outcome::Accepted)
    }

    fn check_divergence(&self, limit: f64) -> Result<()> {
        divergence::check_named(&self.state.lambda, limit, |j| {
            format!(
                "the multiplier of constraint equation {j} ({})",
                describe_equation(&self.coupling, j)
            )
        })
    }

    fn finish(&mut self, stats: &mut super::RunStatistics) {
        stats.corrector_iterations = self.iterations;
    }

    fn save(&self) -> Result<Vec<u8>> {
        super::algorithm::save_state(&(&self.state, self.iterations, self.extent))
    }

    fn restore(&mut self, saved: &[u8]) -> Result<()> {
        let (state, iterations, extent): (ConstraintState, u64, f64) =
            super::algorithm::restore_state(saved)?;
        if state.lambda.len() != self.state.lambda.len() && !self.state.lambda.is_empty() {
            return Err(Error::Usage(format!(
                "a snapshot with {} constraint multipliers for a coupling of {}",
                state.lambda.len(),
                self.state.lambda.len()
            )));
        }
        self.state = state;
        self.iterations = iterations;
        self.extent = extent;
        Ok(())
    }
}
