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
//!
//! Under mpirun every rank walks this loop: owners save, restore and repeat their own
//! components' steps, what they compute for the interface system is shared in one collective
//! per phase (`transport.rs`), and every rank solves the same Newton step.

use nalgebra::{DMatrix, DVector};

use std::sync::Mutex;

use super::control::wrms;
use super::divergence;
use super::execution::{get_scalar, set_scalar, Execution};
use super::polynomial::lagrange_taylor;
use crate::fmu::description::VariableType;
use crate::fmu::ValueReference;
pub use crate::settings::implicit::{Extension, ImplicitSettings, JacobianMethod};
use crate::system::graph;
use crate::{Error, Result};

/// What one implicit macro step did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImplicitStep {
    /// Whether the corrector met its tolerance (if not, the step was rolled back).
    pub converged: bool,
    /// Newton iterations (corrector passes) made.
    pub iterations: u32,
    /// Extra macro steps spent on the interface Jacobian (with `JacobianMethod::Components`:
    /// the component steps divided by the number of components, rounded up).
    pub jacobian_steps: u32,
    /// Extra single-component steps spent on the interface Jacobian.
    pub jacobian_component_steps: u32,
    /// The predicted coupling values u^pre at the new point (per coupled connection).
    pub predicted: Vec<f64>,
    /// The coupling values after the predictor's update step, phi(z^pre).
    pub predictor_update: Vec<f64>,
    /// The probed state variables after the predictor (see `Execution::probes`).
    pub predictor_states: Vec<f64>,
    /// Extended coupling: the values at the step's middle of the half-step connections (in
    /// the order of `coupled_connections`), as the last corrector pass used them.
    pub middle: Vec<f64>,
}

/// The interface Jacobian kept between steps when reuse is on.
#[derive(Debug, Clone, Default)]
pub struct ImplicitState {
    pub(super) jacobian: Option<DMatrix<f64>>,
}

/// [`ImplicitState`] as a snapshot keeps it: the Jacobian's shape and its entries (column-major).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct SavedImplicitState {
    jacobian: Option<(usize, usize, Vec<f64>)>,
}

impl ImplicitState {
    /// The state as a snapshot keeps it.
    pub fn save(&self) -> SavedImplicitState {
        SavedImplicitState {
            jacobian: self
                .jacobian
                .as_ref()
                .map(|j| (j.nrows(), j.ncols(), j.as_slice().to_vec())),
        }
    }

    /// The state saved by `save`.
    pub fn restored(saved: SavedImplicitState) -> ImplicitState {
        ImplicitState {
            jacobian: saved
                .jacobian
                // Square and complete, or dropped (recomputed at the next step): the
                // corrector solves with it.
                .filter(|(rows, columns, entries)| {
                    rows == columns && rows.checked_mul(*columns) == Some(entries.len())
                })
                .map(|(rows, columns, entries)| DMatrix::from_vec(rows, columns, entries)),
        }
    }
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
    /// repeated as four steps of H / 4, as the paper does, at most
    /// [`divergence::MAX_IMPLICIT_SPLITS`] times (and never below 1e-12 s): a corrector that
    /// fails even then means the co-simulation diverged.
    pub fn step_implicit_fixed(&mut self, h: f64) -> Result<()> {
        let settings = self
            .resolved
            .system
            .experiment
            .algorithm
            .corrector()
            .copied()
            .unwrap_or_default();
        let mut state = std::mem::take(&mut self.implicit_state);
        let result = self.step_implicit_or_split(h, 0, &settings, &mut state);
        self.implicit_state = state;
        result
    }

    fn step_implicit_or_split(
        &mut self,
        h: f64,
        splits: u32,
        settings: &ImplicitSettings,
        state: &mut ImplicitState,
    ) -> Result<()> {
        let step = self.step_implicit(h, settings, state)?;
        self.corrector_iterations += u64::from(step.iterations);
        if step.converged {
            self.push_history();
            return Ok(());
        }
        if !self.split_unconverged_steps {
            return Err(Error::Numerics(format!(
                "the implicit corrector does not converge in the macro step from t = {} of {} in {} iterations (tolerances {:e} relative, {:e} absolute)",
                crate::numbers::number(self.time), crate::numbers::seconds(h), settings.max_iterations, settings.rel_tolerance, settings.abs_tolerance
            )));
        }
        if splits >= divergence::MAX_IMPLICIT_SPLITS || h / 4.0 <= 1e-12 {
            return Err(divergence::diverged(format_args!(
                "the implicit corrector does not converge in the macro step from t = {} even split {splits} times into steps of {} (at most {} iterations each; corrector.maxIterations)",
                crate::numbers::number(self.time), crate::numbers::seconds(h), settings.max_iterations
            )));
        }
        for _ in 0..4 {
            self.step_implicit_or_split(h / 4.0, splits + 1, settings, state)?;
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
        if settings.extension != Extension::None {
            return self.step_extended(h, settings, state);
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
        let phi = DVector::from_iterator(coupled.len(), coupled.iter().map(|&c| self.values[c]));
        let mut report = ImplicitStep {
            predicted: predicted.clone(),
            predictor_update: phi.iter().copied().collect(),
            predictor_states: self.read_probes()?,
            ..ImplicitStep::default()
        };
        let u = DVector::from_vec(predicted);
        let residual = &u - &phi;
        let reused = state
            .jacobian
            .take()
            .filter(|j| settings.reuse_jacobian && j.nrows() == coupled.len());
        let singular = format!(
            "the interface Jacobian of the implicit step at t = {} is singular: the coupling equations have no unique solution",
            crate::numbers::number(t_start)
        );
        let (_, jacobian) = self.newton_with_reuse(
            settings,
            reused,
            (u, residual),
            &mut report,
            &singular,
            // G(u*) = u* - phi(u*), each evaluation a corrector pass.
            &mut |exec, u| Ok(u - exec.corrector_pass(t_start, t_end, &coupled, u)?),
            &mut |exec, u, residual, report| {
                let phi = u - residual;
                exec.interface_jacobian(t_start, t_end, &coupled, u, &phi, settings, report)
            },
            // The components back at the predictor's end, for a Jacobian from there.
            &mut |exec, report| {
                exec.restore_states()?;
                exec.time = t_start;
                exec.advance(t_start, t_end, None)?;
                let u = DVector::from_vec(report.predicted.clone());
                let phi = DVector::from_vec(report.predictor_update.clone());
                let residual = &u - &phi;
                Ok((u, residual))
            },
        )?;
        if settings.reuse_jacobian {
            state.jacobian = Some(jacobian);
        }
        if !report.converged {
            self.roll_back(t_start)?;
        }
        Ok(report)
    }

    /// Newton on coupling conditions `r(x) = 0` whose every evaluation repeats the macro step
    /// from the saved states: from `x` with residual `r`, at most `max_iterations` passes,
    /// converged when WRMS(r) <= 1 with weights atol + rtol |x|. A `reused` Jacobian that does
    /// not converge is replaced once by a fresh one from the predictor's point (`restart`).
    /// Returns the last `x` (the components are at the end of the step through it) and the
    /// Jacobian used.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    pub(super) fn newton_with_reuse(
        &mut self,
        settings: &ImplicitSettings,
        reused: Option<DMatrix<f64>>,
        (mut x, mut r): (DVector<f64>, DVector<f64>),
        report: &mut ImplicitStep,
        singular: &str,
        evaluate: &mut dyn FnMut(&mut Execution, &DVector<f64>) -> Result<DVector<f64>>,
        jacobian: &mut dyn FnMut(
            &mut Execution,
            &DVector<f64>,
            &DVector<f64>,
            &mut ImplicitStep,
        ) -> Result<DMatrix<f64>>,
        restart: &mut dyn FnMut(
            &mut Execution,
            &ImplicitStep,
        ) -> Result<(DVector<f64>, DVector<f64>)>,
    ) -> Result<(DVector<f64>, DMatrix<f64>)> {
        let mut fresh = reused.is_none();
        let mut current = match reused {
            Some(j) => j,
            None => jacobian(self, &x, &r, report)?,
        };
        loop {
            let mut last = f64::INFINITY;
            for _ in 0..settings.max_iterations.max(1) {
                let step = current
                    .clone()
                    .lu()
                    .solve(&(-&r))
                    .ok_or_else(|| Error::Numerics(singular.to_string()))?;
                x += step;
                r = evaluate(self, &x)?;
                report.iterations += 1;
                let within = wrms(
                    r.as_slice(),
                    x.as_slice(),
                    settings.abs_tolerance,
                    settings.rel_tolerance,
                ) <= 1.0;
                if !within && report.converged {
                    // A pass to rounding left the tolerance (or gave NaN): the FMUs are at
                    // this pass's values, which did not converge; say so, never return them
                    // as converged.
                    report.converged = false;
                    break;
                }
                if within {
                    report.converged = true;
                    // To rounding: on while the residual stands above the values' rounding
                    // and still halves.
                    let size = r.amax();
                    let rounding = 1e-13 * (1.0 + x.amax());
                    if !self.corrector_to_rounding
                        || size <= rounding
                        || size.is_nan()
                        || size >= 0.5 * last
                    {
                        break;
                    }
                    last = size;
                }
            }
            if report.converged || fresh {
                return Ok((x, current));
            }
            fresh = true;
            (x, r) = restart(self, report)?;
            current = jacobian(self, &x, &r, report)?;
        }
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
        match (corrector, &self.resolved.system.experiment.algorithm) {
            (None, crate::settings::Algorithm::GaussSeidel(_)) => self.step_gauss_seidel(t_end)?,
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

    /// `dG/du* = I - dphi/du*` at `u`, where `phi` = phi(u) and the components are at the
    /// end of the step just computed through `u`.
    #[allow(clippy::too_many_arguments)]
    fn interface_jacobian(
        &mut self,
        t_start: f64,
        t_end: f64,
        coupled: &[usize],
        u: &DVector<f64>,
        phi: &DVector<f64>,
        settings: &ImplicitSettings,
        report: &mut ImplicitStep,
    ) -> Result<DMatrix<f64>> {
        let n = coupled.len();
        let has_loop = self.graph.blocks.iter().any(|b| b.is_loop);
        let dphi = match settings.jacobian {
            JacobianMethod::Components if !has_loop => {
                self.component_sensitivities(t_start, t_end, coupled, u, report)?
            }
            _ => self.system_sensitivities(t_start, t_end, coupled, u, phi, report)?,
        };
        Ok(DMatrix::identity(n, n) - dphi)
    }

    /// `dphi/du*` by forward differences: one repeated macro step of the whole system per
    /// coupling variable.
    fn system_sensitivities(
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
            let delta = perturbation(u[l]);
            perturbed[l] = u[l] + delta;
            let phi_l = self.corrector_pass(t_start, t_end, coupled, &perturbed)?;
            perturbed[l] = u[l];
            dphi.set_column(l, &((phi_l - phi) / delta));
            report.jacobian_steps += 1;
        }
        Ok(dphi)
    }

    /// `dphi/du*` by the chain rule along the coupling graph (no algebraic loops). A coupling
    /// value is `phi_c = y_c(z_i(u*_i), v_i)`: the output of its source component i after the
    /// step, which depends on i's own interpolated inputs u*_i through the step and, where it
    /// feeds through, on the values v_i set into i at the communication point (other coupling
    /// values). So `dphi_c = S_c du* + sum_p F_cp dphi_p` with the step sensitivity S (each
    /// component repeats its own step per own input, the fed-through inputs held at their
    /// values) and the feedthrough partials F (directional derivatives), evaluated in the
    /// graph's order.
    fn component_sensitivities(
        &mut self,
        t_start: f64,
        t_end: f64,
        coupled: &[usize],
        u: &DVector<f64>,
        report: &mut ImplicitStep,
    ) -> Result<DMatrix<f64>> {
        let n = coupled.len();
        let mut row_of = vec![usize::MAX; self.values.len()];
        for (j, &c) in coupled.iter().enumerate() {
            row_of[c] = j;
        }
        // F first: the components are still at the end of the step through u.
        let feedthrough = self.feedthrough_partials(coupled, &row_of)?;
        let trials = self.trial_plans(coupled, &row_of);

        let mut at_end = self.values.clone();
        for (j, &c) in coupled.iter().enumerate() {
            at_end[c] = u[j];
        }
        let deltas: Vec<f64> = u.iter().map(|&x| perturbation(x)).collect();
        // Per component (trials run in parallel): its entries, inputs times outputs in order.
        let entries = Mutex::new(Vec::new());
        let names: Vec<String> = self
            .resolved
            .components
            .iter()
            .map(|c| c.name.clone())
            .collect();
        // Under mpirun each rank repeats only its own components' steps (a stand-in has no
        // state to perturb); the entries travel in one collective below.
        let here: Vec<bool> = (0..trials.len()).map(|i| self.steps_here(i)).collect();
        let connections = self.resolved.connections.clone();
        self.time = t_start;
        let tried = self.run_step_trials(t_end, &|i, unit, step| {
            let trial = &trials[i];
            if !here[i] {
                return Ok(());
            }
            let mut perturbed = at_end.clone();
            let mut found = Vec::with_capacity(trial.inputs.len() * trial.outputs.len());
            for &(col, c) in &trial.inputs {
                let state = trial.state.ok_or_else(|| Error::Worker {
                    component: names[i].to_string(),
                    message: "no saved state to restore (restore before save)".into(),
                })?;
                unit.slave.restore_state(state)?;
                perturbed[c] = at_end[c] + deltas[col];
                step(i, unit, &perturbed)?;
                perturbed[c] = at_end[c];
                for held in &trial.held {
                    set_scalar(
                        unit.slave.as_mut(),
                        held.vr,
                        held.var_type,
                        held.fmi3,
                        held.value,
                    )?;
                }
                for out in &trial.outputs {
                    let y = get_scalar(unit.slave.as_mut(), out.vr, out.var_type, out.fmi3)?;
                    let y = connections[out.connection].transform(y);
                    found.push((y - out.value) / deltas[col]);
                }
            }
            entries
                .lock()
                .map_err(|_| {
                    Error::Numerics(
                        "a worker of the component Jacobian panicked while holding its results"
                            .to_string(),
                    )
                })?
                .push((i, found));
            Ok(())
        });
        let tried = match tried {
            // Under mpirun told when every rank has tried its own (see `share_by_owner`).
            Err(error) if self.ranks.is_none() => return Err(error),
            tried => tried,
        };
        let component_steps: usize = trials.iter().map(|t| t.inputs.len()).sum();
        report.jacobian_component_steps += component_steps as u32;
        report.jacobian_steps += component_steps.div_ceil(trials.len().max(1)) as u32;

        let mut found = vec![Vec::new(); trials.len()];
        for (i, values) in entries.into_inner().map_err(|_| {
            Error::Numerics(
                "a worker of the component Jacobian panicked while holding its results".to_string(),
            )
        })? {
            found[i] = values;
        }
        // Every entry's place, component by component, known on every rank.
        let mut owners = Vec::new();
        let mut places = Vec::new();
        let mut values = Vec::new();
        for (i, trial) in trials.iter().enumerate() {
            let mut own = found[i].iter().copied();
            for &(col, _) in &trial.inputs {
                for out in &trial.outputs {
                    owners.push(i);
                    places.push((out.row, col));
                    values.push(own.next().unwrap_or(0.0));
                }
            }
        }
        self.share_by_owner(&owners, &mut values, tried)?;
        let mut step_part = DMatrix::zeros(n, n);
        for (place, value) in places.into_iter().zip(values) {
            step_part[place] = value;
        }
        // Compose in evaluation order: every fed-through value comes before its users.
        let mut dphi = DMatrix::zeros(n, n);
        for block in &self.graph.blocks {
            for &c in &block.connections {
                let row = row_of[c];
                if row == usize::MAX {
                    continue;
                }
                let mut total = step_part.row(row).into_owned();
                for &(r, p, f) in &feedthrough {
                    if r == row {
                        total += dphi.row(p) * f;
                    }
                }
                dphi.set_row(row, &total);
            }
        }
        Ok(dphi)
    }

    /// `(row of c, row of p, d phi_c / d v_p)` for every coupling value c read fresh at the
    /// communication point from an output that feeds through from the coupled input p: the
    /// FMU's directional derivative, or a forward difference of set / get where it has none.
    pub(super) fn feedthrough_partials(
        &mut self,
        coupled: &[usize],
        row_of: &[usize],
    ) -> Result<Vec<(usize, usize, f64)>> {
        // Where each partial goes (rows, scale) and which component gives it; under mpirun
        // each rank asks its own components, and the partials travel in one collective.
        let mut places = Vec::new();
        let mut sources = Vec::new();
        let mut derivatives = Vec::new();
        let mut asked = Ok(());
        for &c in coupled {
            if !self.fresh_read[c] {
                continue;
            }
            let conn = &self.resolved.connections[c];
            let source = conn.from_component;
            let description = &self.resolved.components[source].description;
            let fmi3 = description.fmi_version == crate::fmu::FmiVersion::Fmi3;
            let output = &description.variables[conn.from_variable];
            let (out_vr, out_type, scale) = (output.value_reference, output.var_type, conn.scale);
            for &p in coupled {
                let into = &self.resolved.connections[p];
                if into.to_component != source
                    || !self.graph.propagates[p]
                    || !graph::feeds_through(description, conn.from_variable, into.to_variable)
                {
                    continue;
                }
                let input = &description.variables[into.to_variable];
                let (in_vr, in_type) = (input.value_reference, input.var_type);
                places.push((row_of[c], row_of[p], scale));
                sources.push(source);
                if !self.steps_here(source) || asked.is_err() {
                    derivatives.push(0.0);
                    continue;
                }
                let value = self.values[p];
                let delta = perturbation(value);
                let derivative = self.placement.run_one(source, move |unit| {
                    let slave = unit.slave.as_mut();
                    if slave.provides_directional_derivatives()
                        && out_type == VariableType::Float64
                        && in_type == VariableType::Float64
                    {
                        let mut sensitivity = [0.0];
                        slave.directional_derivative(
                            &[out_vr],
                            &[in_vr],
                            &[1.0],
                            &mut sensitivity,
                        )?;
                        return Ok(sensitivity[0]);
                    }
                    let y0 = get_scalar(slave, out_vr, out_type, fmi3)?;
                    set_scalar(slave, in_vr, in_type, fmi3, value + delta)?;
                    let y1 = get_scalar(slave, out_vr, out_type, fmi3)?;
                    set_scalar(slave, in_vr, in_type, fmi3, value)?;
                    Ok((y1 - y0) / delta)
                });
                match derivative {
                    Ok(derivative) => derivatives.push(derivative),
                    // Told when every rank has asked its own (see `share_by_owner`).
                    Err(error) if self.ranks.is_some() => {
                        asked = Err(error);
                        derivatives.push(0.0);
                    }
                    Err(error) => return Err(error),
                }
            }
        }
        self.share_by_owner(&sources, &mut derivatives, asked)?;
        Ok(places
            .into_iter()
            .zip(derivatives)
            .map(|((row, p, scale), derivative)| (row, p, scale * derivative))
            .collect())
    }

    /// What each component's Jacobian trials perturb, hold and read.
    fn trial_plans(&self, coupled: &[usize], row_of: &[usize]) -> Vec<TrialPlan> {
        let mut plans: Vec<TrialPlan> = (0..self.resolved.components.len())
            .map(|i| TrialPlan {
                state: self.saved_state(i),
                ..TrialPlan::default()
            })
            .collect();
        for (col, &c) in coupled.iter().enumerate() {
            let conn = &self.resolved.connections[c];
            let target = &self.resolved.components[conn.to_component].description;
            let input = &target.variables[conn.to_variable];
            let plan = &mut plans[conn.to_component];
            plan.inputs.push((col, c));
            if self.graph.propagates[c] {
                plan.held.push(Port {
                    connection: c,
                    row: col,
                    vr: input.value_reference,
                    var_type: input.var_type,
                    fmi3: target.fmi_version == crate::fmu::FmiVersion::Fmi3,
                    value: self.values[c],
                });
            }
            let source = &self.resolved.components[conn.from_component].description;
            let output = &source.variables[conn.from_variable];
            plans[conn.from_component].outputs.push(Port {
                connection: c,
                row: row_of[c],
                vr: output.value_reference,
                var_type: output.var_type,
                fmi3: source.fmi_version == crate::fmu::FmiVersion::Fmi3,
                value: self.values[c],
            });
        }
        plans
    }
}

/// The forward-difference step for a value.
fn perturbation(value: f64) -> f64 {
    1e-6 * (1.0 + value.abs())
}

/// One variable a Jacobian trial sets or reads, with its value at the unperturbed point.
#[derive(Debug, Clone, Copy)]
struct Port {
    connection: usize,
    row: usize,
    vr: ValueReference,
    var_type: VariableType,
    fmi3: bool,
    value: f64,
}

/// A component's Jacobian trials: its coupled inputs `(column, connection)` to perturb, the
/// fed-through inputs to hold at their communication-point values, and its coupled outputs.
#[derive(Debug, Clone, Default)]
struct TrialPlan {
    state: Option<crate::fmu::StateId>,
    inputs: Vec<(usize, usize)>,
    held: Vec<Port>,
    outputs: Vec<Port>,
}
