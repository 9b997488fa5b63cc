//! Implicit predictor / corrector co-simulation with rollback (the variable-order paper,
//! Sect. 3.2).
//!
//! Predictor: the explicit Jacobi step with extrapolation of degree k. Corrector: the macro step
//! repeated from the saved FMU states with the interpolation of degree k through the unknown new
//! coupling values u* and the last k values; Newton on `G(u*) = u* - phi(z*(u*)) = 0`, where
//! `phi` is the exchange at the new communication point. The interface Jacobian `dG/du*` comes
//! from finite differences: one repeated macro step per coupling variable, perturbed, from the
//! saved states (exact up to rounding for linear subsystems, so a linear system converges in
//! one Newton iteration). It may be reused across iterations and steps.
//!
//! The coupling variables are the connections into Float64 inputs. Other connections are held.

use nalgebra::{DMatrix, DVector};

use super::control::wrms;
use super::execution::Execution;
use super::polynomial::lagrange_taylor;
use crate::{Error, Result};

/// Settings of the corrector.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImplicitSettings {
    /// Newton iterations allowed per macro step before it counts as not converged.
    pub max_iterations: u32,
    /// Converged when WRMS(u* - phi(u*)) <= 1 with weights atol + rtol |u*|.
    pub abs_tolerance: f64,
    pub rel_tolerance: f64,
    /// Keep the interface Jacobian across iterations and steps (recomputed when a step fails).
    pub reuse_jacobian: bool,
}

impl Default for ImplicitSettings {
    fn default() -> Self {
        ImplicitSettings {
            max_iterations: 5,
            abs_tolerance: 1e-8,
            rel_tolerance: 1e-6,
            reuse_jacobian: false,
        }
    }
}

/// What one implicit macro step did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImplicitStep {
    /// Whether the corrector met its tolerance (if not, the step was rolled back).
    pub converged: bool,
    /// Newton iterations (corrector passes) made.
    pub iterations: u32,
    /// Extra macro steps spent on the interface Jacobian.
    pub jacobian_steps: u32,
    /// The predicted coupling values u^pre at the new point (per coupled connection).
    pub predicted: Vec<f64>,
    /// The coupling values after the predictor's update step, phi(z^pre).
    pub predictor_update: Vec<f64>,
    /// The probed state variables after the predictor (see `Execution::probes`).
    pub predictor_states: Vec<f64>,
}

/// The interface Jacobian kept between steps when reuse is on.
#[derive(Debug, Clone, Default)]
pub struct ImplicitState {
    jacobian: Option<DMatrix<f64>>,
}

impl Execution {
    /// The connections whose values are iterated by the corrector (into Float64 inputs).
    pub fn coupled_connections(&self) -> Vec<usize> {
        let mut coupled: Vec<usize> = self
            .plans
            .iter()
            .flat_map(|p| {
                p.float_groups
                    .iter()
                    .flat_map(|(_, _, conns)| conns.iter().copied())
            })
            .collect();
        coupled.sort_unstable();
        coupled
    }

    /// A fixed-step implicit macro step: when the corrector does not converge, the step is
    /// repeated as four steps of H / 4 (recursively, down to 1e-12 s), as the paper does.
    pub fn step_implicit_fixed(&mut self, h: f64) -> Result<()> {
        let settings = self.resolved.system.experiment.corrector;
        let mut state = std::mem::take(&mut self.implicit_state);
        let result = self.step_implicit_or_split(h, &settings, &mut state);
        self.implicit_state = state;
        result
    }

    fn step_implicit_or_split(
        &mut self,
        h: f64,
        settings: &ImplicitSettings,
        state: &mut ImplicitState,
    ) -> Result<()> {
        let step = self.step_implicit(h, settings, state)?;
        self.corrector_iterations += u64::from(step.iterations);
        if step.converged {
            self.push_history();
            return Ok(());
        }
        if h / 4.0 <= 1e-12 {
            return Err(Error::Usage(format!(
                "the implicit corrector does not converge at t = {} even with a macro step of {h:e} s; check the coupling, or raise corrector.maxIterations",
                self.time
            )));
        }
        for _ in 0..4 {
            self.step_implicit_or_split(h / 4.0, settings, state)?;
        }
        Ok(())
    }

    /// The first component that cannot save and restore its state, if any.
    pub fn component_without_rollback(&self) -> Option<&str> {
        self.resolved
            .components
            .iter()
            .find(|c| {
                !c.description
                    .co_simulation
                    .as_ref()
                    .is_some_and(|cs| cs.can_get_and_set_fmu_state)
            })
            .map(|c| c.name.as_str())
    }

    /// One implicit macro step of size `h`. When it converges the components are at the new
    /// point and the caller accepts it (`push_history`) or rolls it back (`restore_states`);
    /// when the corrector does not converge, every component is back at the step's start and
    /// `converged` is false, and the caller retries with a smaller step.
    pub fn step_implicit(
        &mut self,
        h: f64,
        settings: &ImplicitSettings,
        state: &mut ImplicitState,
    ) -> Result<ImplicitStep> {
        if let Some(name) = self.component_without_rollback() {
            return Err(Error::Usage(format!(
                "the implicit algorithm repeats macro steps from saved FMU states, but component \"{name}\" cannot save its state (canGetAndSetFMUstate is false); use --algorithm jacobi or gauss-seidel"
            )));
        }
        let t_start = self.time;
        let t_end = t_start + h;
        let coupled = self.coupled_connections();
        if coupled.is_empty() {
            // No coupling variables to iterate: the predictor is the step.
            self.advance(t_start, t_end, None)?;
            return Ok(ImplicitStep {
                converged: true,
                ..ImplicitStep::default()
            });
        }
        let predicted = self.extrapolate_to(t_end, &coupled);
        self.save_states()?;

        // Predictor: the explicit step and its update at the new point.
        self.advance(t_start, t_end, None)?;
        let mut phi =
            DVector::from_iterator(coupled.len(), coupled.iter().map(|&c| self.values[c]));
        let mut report = ImplicitStep {
            predicted: predicted.clone(),
            predictor_update: phi.iter().copied().collect(),
            predictor_states: self.read_probes()?,
            ..ImplicitStep::default()
        };
        let mut u = DVector::from_vec(predicted);

        let mut fresh_jacobian = false;
        let mut jacobian = match (&state.jacobian, settings.reuse_jacobian) {
            (Some(j), true) if j.nrows() == coupled.len() => j.clone(),
            _ => {
                fresh_jacobian = true;
                self.interface_jacobian(t_start, t_end, &coupled, &u, &phi, &mut report)?
            }
        };
        loop {
            for _ in 0..settings.max_iterations.max(1) {
                let residual = &u - &phi;
                let step = jacobian.clone().lu().solve(&(-residual)).ok_or_else(|| {
                    Error::Usage(format!(
                        "the interface Jacobian of the implicit step at t = {t_start} is singular: the coupling equations have no unique solution"
                    ))
                })?;
                u += step;
                phi = self.corrector_pass(t_start, t_end, &coupled, &u)?;
                report.iterations += 1;
                let difference: Vec<f64> = (&u - &phi).iter().copied().collect();
                let values: Vec<f64> = u.iter().copied().collect();
                if wrms(
                    &difference,
                    &values,
                    settings.abs_tolerance,
                    settings.rel_tolerance,
                ) <= 1.0
                {
                    report.converged = true;
                    break;
                }
            }
            if report.converged || fresh_jacobian {
                break;
            }
            // A reused Jacobian may be stale: recompute it once from the predictor's point.
            fresh_jacobian = true;
            u = DVector::from_vec(report.predicted.clone());
            phi = DVector::from_vec(report.predictor_update.clone());
            self.restore_states()?;
            self.time = t_start;
            self.advance(t_start, t_end, None)?;
            jacobian = self.interface_jacobian(t_start, t_end, &coupled, &u, &phi, &mut report)?;
        }
        if settings.reuse_jacobian {
            state.jacobian = Some(jacobian);
        }
        if !report.converged {
            self.roll_back(t_start)?;
        }
        Ok(report)
    }

    /// Back to the saved states at `t_start`, with the coupling values of the last history point.
    pub fn roll_back(&mut self, t_start: f64) -> Result<()> {
        self.restore_states()?;
        self.time = t_start;
        for (c, value) in self.values.iter_mut().enumerate() {
            *value = self.history.values(c).first().copied().unwrap_or(*value);
        }
        Ok(())
    }

    /// The extrapolation of the coupled connections' history to `t` (the predictor's values).
    pub fn extrapolate_to(&self, t: f64, coupled: &[usize]) -> Vec<f64> {
        let available = self.history.len();
        coupled
            .iter()
            .map(|&c| {
                if available == 0 {
                    return self.values[c];
                }
                // The same degree the predictor's step uses for this connection.
                let order = self
                    .order_override
                    .unwrap_or(self.resolved.connections[c].extrapolation_order);
                let k = super::zoh::effective_order(order, available);
                let mut taylor = [0.0; super::polynomial::MAX_DEGREE + 1];
                lagrange_taylor(
                    &self.history.times()[..=k],
                    &self.history.values(c)[..=k],
                    t,
                    &mut taylor,
                );
                taylor[0]
            })
            .collect()
    }

    /// Step every component from `t_start` to `t_end` (explicit with `corrector` None, with the
    /// experiment's algorithm; else Jacobi through the given end values) and update the
    /// coupling values at `t_end`. The history is left alone.
    pub fn advance(&mut self, t_start: f64, t_end: f64, corrector: Option<&[f64]>) -> Result<()> {
        self.time = t_start;
        match (corrector, self.resolved.system.experiment.algorithm) {
            (None, crate::system::Algorithm::GaussSeidel) => self.step_gauss_seidel(t_end)?,
            _ => self.step_jacobi(t_end, corrector)?,
        }
        self.time = t_end;
        self.exchange(false)
    }

    /// Restore the saved states and repeat the step with the interpolation through `u`.
    fn corrector_pass(
        &mut self,
        t_start: f64,
        t_end: f64,
        coupled: &[usize],
        u: &DVector<f64>,
    ) -> Result<DVector<f64>> {
        self.restore_states()?;
        let mut at_end = self.values.clone();
        for (j, &c) in coupled.iter().enumerate() {
            at_end[c] = u[j];
        }
        self.advance(t_start, t_end, Some(&at_end))?;
        Ok(DVector::from_iterator(
            coupled.len(),
            coupled.iter().map(|&c| self.values[c]),
        ))
    }

    /// `dG/du* = I - dphi/du*` by forward differences: one repeated macro step per coupling
    /// variable. `phi` is phi(u) at the unperturbed `u`.
    fn interface_jacobian(
        &mut self,
        t_start: f64,
        t_end: f64,
        coupled: &[usize],
        u: &DVector<f64>,
        phi: &DVector<f64>,
        report: &mut ImplicitStep,
    ) -> Result<DMatrix<f64>> {
        let n = coupled.len();
        let mut dphi = DMatrix::zeros(n, n);
        let mut perturbed = u.clone();
        for l in 0..n {
            let delta = 1e-6 * (1.0 + u[l].abs());
            perturbed[l] = u[l] + delta;
            let phi_l = self.corrector_pass(t_start, t_end, coupled, &perturbed)?;
            perturbed[l] = u[l];
            dphi.set_column(l, &((phi_l - phi) / delta));
            report.jacobian_steps += 1;
        }
        Ok(DMatrix::identity(n, n) - dphi)
    }
}
