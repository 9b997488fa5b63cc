//! Macro-step size and order control (the variable-order paper, Sects. 4 and 5): the error
//! constants of the extrapolation / interpolation polynomials, the WRMS error test, the
//! step-size controller and the order controller.
//!
//! Everything here is plain arithmetic on numbers the run loop hands in, so every rule is unit
//! tested on its own; `implicit.rs` and the adaptive run loop use it.

use super::polynomial::MAX_DEGREE;
pub use crate::settings::control::{Estimator, StepControl, StepSizeSettings};

/// Highest order k for which constants are computed (the paper's runs reach k = 5).
pub const MAX_CONSTANT_ORDER: usize = 6;

/// The error constants `(C_pos^k, C_vel^k)` for the step from `t_n` to `t_next` with the past
/// points `past[0] = t_n, past[1] = t_(n-1), ...` (at least k of them):
///
/// `L^k(t) = prod_(j<k) (t - T_(N-j)) / (T_(N+1) - T_(N-j))`,
/// `C_vel^k = 1/H int_(T_N)^(T_(N+1)) L^k`, `C_pos^k = 1/H^2 int int L^k`.
///
/// Valid on non-equidistant grids; on an equidistant grid C_vel^k are the Adams-Bashforth
/// error constants (1, 1/2, 5/12, 3/8, ...) and C_pos^k = 1/2, 1/6, 1/8, 19/180, ...
pub fn error_constants(k: usize, t_next: f64, past: &[f64]) -> (f64, f64) {
    let t_n = past[0];
    let h = t_next - t_n;
    // L^k in s = (t - T_N) / H, as monomial coefficients: prod (s - s_j) / (1 - s_j).
    let mut poly = [0.0; MAX_CONSTANT_ORDER + 2];
    poly[0] = 1.0;
    for &t_j in past.iter().take(k) {
        let s_j = (t_j - t_n) / h;
        let scale = 1.0 / (1.0 - s_j);
        // multiply by (s - s_j) * scale
        for i in (0..poly.len()).rev() {
            let lower = if i > 0 { poly[i - 1] } else { 0.0 };
            poly[i] = (lower - s_j * poly[i]) * scale;
        }
    }
    // C_vel = int_0^1 L(s) ds; C_pos = int_0^1 int_0^sigma L = int_0^1 (1 - s) L(s) ds.
    let mut c_vel = 0.0;
    let mut c_pos = 0.0;
    for (i, a) in poly.iter().enumerate() {
        let n = i as f64;
        c_vel += a / (n + 1.0);
        c_pos += a * (1.0 / (n + 1.0) - 1.0 / (n + 2.0));
    }
    (c_pos, c_vel)
}

/// The Milne factor that turns `|q - q_hat|` into the local error estimate:
/// ExMilne `C^(k+1) / C^k`, ImMilne `1 - C^(k+1) / C^k` (for positions or velocities).
pub fn milne_factor(
    estimator: Estimator,
    k: usize,
    t_next: f64,
    past: &[f64],
    position: bool,
) -> f64 {
    let (p0, v0) = error_constants(k, t_next, past);
    let (p1, v1) = error_constants(k + 1, t_next, past);
    let ratio = if position { p1 / p0 } else { v1 / v0 };
    match estimator {
        Estimator::ImMilne => 1.0 - ratio,
        _ => ratio,
    }
}

/// Weighted root-mean-square norm: `sqrt(1/n sum (e_i / (atol_i + rtol |x_i|))^2)`, the sum
/// exactly rounded ([`add_weighted_squares`]).
pub fn wrms(errors: &[f64], values: &[f64], atol: f64, rtol: f64) -> f64 {
    let mut sum = ExactSum::default();
    add_weighted_squares(&mut sum, errors, values, atol, rtol);
    root_mean(&sum, errors.len())
}

/// Add the weighted squares `(e_i / (atol + rtol |x_i|))^2` to `sum` without rounding, so
/// that a norm is the same bits whatever order, or split over ranks, its terms come in.
pub fn add_weighted_squares(
    sum: &mut ExactSum,
    errors: &[f64],
    values: &[f64],
    atol: f64,
    rtol: f64,
) {
    for (e, x) in errors.iter().zip(values) {
        let w = atol + rtol * x.abs();
        sum.add((e / w) * (e / w));
    }
}

/// The WRMS norm of `n` variables whose weighted squares add up to `sum`: `sqrt(sum / n)`, 0
/// for no variable.
pub fn root_mean(sum: &ExactSum, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    (sum.value() / n as f64).sqrt()
}

/// The ratio r from an error norm with exponent `1 / p`: `(SF * ||e||)^(-1/p)`.
pub fn ratio(safety: f64, norm: f64, p: f64) -> f64 {
    if norm <= 0.0 {
        return f64::INFINITY;
    }
    (safety * norm).powf(-1.0 / p)
}

/// Exponent p of the ratio for an estimator at order k: positions k + 3, velocities k + 2,
/// coupling variables k + 1 (Eqs. 32, 34).
pub fn ratio_exponents(k: usize) -> (f64, f64, f64) {
    let k = k as f64;
    (k + 3.0, k + 2.0, k + 1.0)
}

/// What to do after the error test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepDecision {
    /// Accept and continue with this step size.
    Accept { next: f64 },
    /// Reject and repeat the step with this step size.
    Reject { retry: f64 },
}

/// Step-size rules of Fig. 7: `r` from the estimator (or the a-priori estimate after an
/// order change), `failures` the rejections of this step so far (0 when the test passed),
/// `corrector_failed` when the implicit corrector did not converge.
pub fn next_step_size(
    settings: &StepSizeSettings,
    h: f64,
    r: f64,
    accepted: bool,
    failures: u32,
    corrector_failed: bool,
) -> Result<StepDecision, String> {
    let decision = if corrector_failed {
        StepDecision::Reject { retry: 0.25 * h }
    } else if accepted {
        let next = if r >= settings.r_max {
            settings.r_max * h
        } else if r < 1.0 {
            r.max(settings.r_min).min(0.9) * h
        } else {
            h
        };
        StepDecision::Accept { next }
    } else if failures <= 1 {
        StepDecision::Reject {
            retry: (0.9 * if r.is_nan() { 0.0 } else { r }).clamp(0.25, 0.9) * h,
        }
    } else {
        StepDecision::Reject { retry: 0.25 * h }
    };
    let h_new = match decision {
        StepDecision::Accept { next } => next,
        StepDecision::Reject { retry } => retry,
    };
    if h_new <= settings.h_min {
        return Err(format!(
            "the macro step fell to {} (at most {} allowed): the error test cannot be met; loosen the tolerances or check the system",
            crate::numbers::seconds(h_new),
            crate::numbers::seconds(settings.h_min)
        ));
    }
    Ok(decision)
}

/// The order controller of Sect. 5.2.2 (Fig. 6), adapted from IDA.
///
/// `sdn[j]` holds SDN(j) for j = 1..=k+2 where available (`sdn[0]` unused; NaN where the
/// history is too short). `failures` counts consecutive rejections, `successes` consecutive
/// accepted steps at constant k without a step reduction.
pub fn next_order(k: usize, k_max: usize, sdn: &[f64], failures: u32, successes: u32) -> usize {
    let at = |j: usize| sdn.get(j).copied().unwrap_or(f64::NAN);
    // Decrease test.
    let mut k_new = if k == 1 && at(1) <= 0.5 * at(2) {
        0
    } else if k > 1 && at(k).max(at(k - 1)) <= at(k + 1) {
        k - 1
    } else {
        k
    };
    // Failure overrides.
    if failures > 5 {
        return 0;
    } else if failures > 3 {
        k_new = k_new.min(1);
    }
    // Increase / decrease after a stable run.
    if failures == 0 && successes as usize > k && k_new == k {
        if k == 0 && at(2) < 0.5 * at(1) {
            k_new = 1;
        } else if k > 0 && at(k) <= at(k + 1).min(at(k + 2)) {
            k_new = k - 1;
        } else if k > 0 && at(k + 2) < at(k + 1) {
            k_new = k + 1;
        }
    }
    k_new.min(k_max).min(MAX_DEGREE - 1)
}

/// Scaled derivative norm SDN(j) = || H^j * j! * u[T_M, ..., T_(M-j)] || (WRMS over the coupling
/// variables with their weights), from the divided difference of order j of each variable.
pub fn scaled_derivative_norm(
    j: usize,
    h: f64,
    times: &[f64],
    histories: &[&[f64]],
    atol: f64,
    rtol: f64,
) -> f64 {
    if times.len() <= j {
        return f64::NAN;
    }
    let mut sum = ExactSum::default();
    add_scaled_derivative_squares(&mut sum, j, h, times, histories, atol, rtol);
    root_mean(&sum, histories.len())
}

/// The weighted squares of [`scaled_derivative_norm`] added to `sum` (the history holds more
/// than `j` points).
fn add_scaled_derivative_squares(
    sum: &mut ExactSum,
    j: usize,
    h: f64,
    times: &[f64],
    histories: &[&[f64]],
    atol: f64,
    rtol: f64,
) {
    let mut factorial = 1.0;
    for i in 2..=j {
        factorial *= i as f64;
    }
    for values in histories {
        let scaled = h.powi(j as i32) * factorial * divided_difference(&times[..=j], &values[..=j]);
        add_weighted_squares(sum, &[scaled], &values[..1], atol, rtol);
    }
}

/// The divided difference u[t_0, ..., t_n].
pub fn divided_difference(times: &[f64], values: &[f64]) -> f64 {
    let n = times.len().min(values.len());
    let mut dd = [0.0; MAX_CONSTANT_ORDER + 2];
    dd[..n].copy_from_slice(&values[..n]);
    for level in 1..n {
        for i in (level..n).rev() {
            dd[i] = (dd[i] - dd[i - 1]) / (times[i] - times[i - level]);
        }
    }
    dd[n - 1]
}

/// What one controlled attempt of a macro step measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attempt {
    /// The error norm the test compares with 1.
    pub norm: f64,
    /// The step-size ratio the estimate suggests.
    pub ratio: f64,
    /// Per-variable estimates: positions then velocities (state-based), or coupling variables.
    pub estimates: Vec<f64>,
    /// The implicit corrector did not converge (the step is already rolled back).
    pub corrector_failed: bool,
    pub corrector_iterations: u32,
    /// Macro steps computed (predictor, corrector passes, Jacobian, estimator runs).
    pub macro_steps: u32,
}

/// Statistics of a controlled run.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct ControlStatistics {
    pub accepted: u64,
    pub rejected: u64,
    pub corrector_iterations: u64,
    pub macro_steps: u64,
    /// Accepted steps per extrapolation order k.
    pub order_histogram: [u64; MAX_DEGREE],
    pub smallest_step: f64,
    pub largest_step: f64,
    /// (end time, H, k) of every accepted step, when `StepControl::trace` is on.
    pub trace: Vec<(f64, f64, usize)>,
}

use super::exact_sum::ExactSum;
use super::execution::Execution;
use super::implicit::ImplicitState;
use crate::settings::implicit::ImplicitSettings;
use crate::{Error, Result};

impl Execution {
    /// Resolve the estimator's state variables into `probes`; returns how many are positions.
    pub fn set_up_probes(&mut self, control: &StepControl) -> Result<usize> {
        if control.positions.is_empty() && control.velocities.is_empty() {
            self.probes = self.continuous_states();
            if self.probes.is_empty() && control.estimator.is_state_based() {
                // Its error would be 0 at every step: the steps would only grow.
                return Err(Error::Usage(format!(
                    "the estimator {:?} measures continuous states, but no FMU of the system declares one (no derivative in its model description): choose a coupling-based estimator ({}), or name the states it should measure as positions and velocities in the system file's stepControl",
                    control.estimator,
                    if control.estimator.is_implicit() { "ImSLocal" } else { "ExSLocal" }
                )));
            }
            return Ok(0);
        }
        let mut probes = Vec::new();
        for name in control.positions.iter().chain(&control.velocities) {
            probes.push(self.locate(name)?);
        }
        self.probes = probes;
        Ok(control.positions.len())
    }

    /// Attempt the macro step to `t_end` at order `k` with the estimator's extra runs. Afterwards
    /// the components hold the step's solution (not yet accepted) or, when the corrector
    /// failed, the step's start.
    pub fn attempt(
        &mut self,
        control: &StepControl,
        positions: usize,
        k: usize,
        t_end: f64,
        implicit: &ImplicitSettings,
        implicit_state: &mut ImplicitState,
    ) -> Result<Attempt> {
        let t_start = self.time;
        let coupled = self.coupled_connections();
        let k_order = u8::try_from(k).unwrap_or(u8::MAX);
        let mut attempt = Attempt::default();
        // A higher-degree polynomial needs one more past point than the history may hold yet;
        // until it does, the coupling-based estimate stands in.
        let estimator = match control.estimator {
            Estimator::ExLocal | Estimator::ExMilne if self.history.len() < k + 2 => {
                Estimator::ExSLocal
            }
            e => e,
        };
        let (rtol_coupling, atol_coupling) = control.coupling_tolerances();
        match estimator {
            Estimator::ExSLocal => {
                self.order_override = Some(k_order);
                let here = self.coupled_here(&coupled);
                let predicted = self.extrapolate_to(t_end, &here);
                self.advance(t_start, t_end, None)?;
                attempt.macro_steps = 1;
                let updated: Vec<f64> = here.iter().map(|&c| self.values[c]).collect();
                attempt.estimates = predicted
                    .iter()
                    .zip(&updated)
                    .map(|(p, u)| (p - u).abs())
                    .collect();
                let mut sum = ExactSum::default();
                let (estimates, atol, rtol) = (&attempt.estimates, atol_coupling, rtol_coupling);
                add_weighted_squares(&mut sum, estimates, &updated, atol, rtol);
                self.merge_sums_over_ranks(std::slice::from_mut(&mut sum))?;
                attempt.norm = root_mean(&sum, coupled.len());
                attempt.ratio = ratio(control.step.safety, attempt.norm, ratio_exponents(k).2);
            }
            Estimator::ExLocal | Estimator::ExMilne => {
                self.save_states()?;
                if estimator == Estimator::ExLocal {
                    self.order_override = Some(k_order + 1);
                    self.advance(t_start, t_end, None)?;
                } else {
                    self.order_override = Some(k_order + 1);
                    let here = self.coupled_here(&coupled);
                    let milne = self.extrapolate_to(t_end, &here);
                    self.order_override = Some(k_order);
                    let mut at_end = self.values.clone();
                    for (j, &c) in here.iter().enumerate() {
                        at_end[c] = milne[j];
                    }
                    self.advance(t_start, t_end, Some(&at_end))?;
                }
                let other = self.read_probes()?;
                self.roll_back(t_start)?;
                self.order_override = Some(k_order);
                self.advance(t_start, t_end, None)?;
                attempt.macro_steps = 2;
                let states = self.read_probes()?;
                let past = self.history.times().to_vec();
                attempt.estimates = states
                    .iter()
                    .zip(&other)
                    .enumerate()
                    .map(|(i, (q, q_hat))| {
                        let factor = if estimator == Estimator::ExMilne {
                            milne_factor(Estimator::ExMilne, k, t_end, &past, i < positions)
                        } else {
                            1.0
                        };
                        factor * (q - q_hat).abs()
                    })
                    .collect();
                (attempt.norm, attempt.ratio) =
                    self.state_norm(control, (positions, k), &attempt.estimates, &states)?;
            }
            Estimator::ImMilne | Estimator::ImSLocal => {
                self.order_override = Some(k_order);
                let step = self.step_implicit(t_end - t_start, implicit, implicit_state)?;
                attempt.corrector_iterations = step.iterations;
                attempt.macro_steps = 1 + step.iterations + step.jacobian_steps;
                if !step.converged {
                    attempt.corrector_failed = true;
                    attempt.norm = f64::INFINITY;
                    return Ok(attempt);
                }
                if estimator == Estimator::ImSLocal {
                    let corrected: Vec<f64> = coupled.iter().map(|&c| self.values[c]).collect();
                    attempt.estimates = step
                        .predicted
                        .iter()
                        .zip(&corrected)
                        .map(|(p, u)| (p - u).abs())
                        .collect();
                    attempt.norm =
                        wrms(&attempt.estimates, &corrected, atol_coupling, rtol_coupling);
                    attempt.ratio = ratio(control.step.safety, attempt.norm, ratio_exponents(k).2);
                } else {
                    let states = self.read_probes()?;
                    let past = self.history.times().to_vec();
                    attempt.estimates = states
                        .iter()
                        .zip(&step.predictor_states)
                        .enumerate()
                        .map(|(i, (q, q_pre))| {
                            milne_factor(Estimator::ImMilne, k, t_end, &past, i < positions)
                                * (q - q_pre).abs()
                        })
                        .collect();
                    (attempt.norm, attempt.ratio) =
                        self.state_norm(control, (positions, k), &attempt.estimates, &states)?;
                }
            }
        }
        Ok(attempt)
    }

    /// SDN(j), j = 0..=k+2, of the coupling variables' history (index 0 unused).
    pub(crate) fn scaled_derivative_norms(
        &self,
        control: &StepControl,
        k: usize,
        h: f64,
    ) -> Result<Vec<f64>> {
        let coupled = self.coupled_connections();
        let here = self.coupled_here(&coupled);
        let histories: Vec<&[f64]> = here.iter().map(|&c| self.history.values(c)).collect();
        let (rtol, atol) = control.coupling_tolerances();
        let times = self.history.times();
        let mut sums = vec![ExactSum::default(); k + 2];
        for (j, sum) in (1..).zip(sums.iter_mut()) {
            if times.len() > j {
                add_scaled_derivative_squares(sum, j, h, times, &histories, atol, rtol);
            }
        }
        self.merge_sums_over_ranks(&mut sums)?;
        let norms = (1..).zip(&sums).map(|(j, sum)| {
            if times.len() <= j {
                f64::NAN
            } else {
                root_mean(sum, coupled.len())
            }
        });
        Ok(std::iter::once(f64::NAN).chain(norms).collect())
    }

    /// The norm of the state estimates (the larger of the positions' and the velocities') and
    /// the step-size ratio it suggests at order k; the first `positions` probes are positions.
    /// Where values go point to point each rank adds the terms of its own probes (only their
    /// owners read them) and the ranks merge the sums.
    fn state_norm(
        &self,
        control: &StepControl,
        (positions, k): (usize, usize),
        estimates: &[f64],
        values: &[f64],
    ) -> Result<(f64, f64)> {
        let (rtol, atol_position, atol_velocity) = control.state_tolerances();
        let mut sums = [ExactSum::default(), ExactSum::default()];
        for (j, (e, x)) in estimates.iter().zip(values).enumerate() {
            if !self
                .probes
                .get(j)
                .is_some_and(|&(i, _)| self.holds_values_of(i))
            {
                continue;
            }
            let (sum, atol) = if j < positions {
                (&mut sums[0], atol_position)
            } else {
                (&mut sums[1], atol_velocity)
            };
            add_weighted_squares(sum, &[*e], &[*x], atol, rtol);
        }
        self.merge_sums_over_ranks(&mut sums)?;
        let np = root_mean(&sums[0], positions);
        let nv = root_mean(&sums[1], estimates.len() - positions);
        let (p_pos, p_vel, _) = ratio_exponents(k);
        let r = ratio(control.step.safety, np, p_pos).min(ratio(control.step.safety, nv, p_vel));
        Ok((np.max(nv), r))
    }

    /// The coupled connections whose terms this process adds to a norm over the coupling
    /// values: where values go point to point, those into its own components (only their
    /// owners hold them and their history); elsewhere all of them.
    fn coupled_here(&self, coupled: &[usize]) -> Vec<usize> {
        coupled
            .iter()
            .copied()
            .filter(|&c| self.holds_values_of(self.resolved.connections[c].to_component))
            .collect()
    }

    /// The a-priori estimate after an order change (Eq. 31): P^(k+1)(T) - P^k(T) through the
    /// history, at the trial point T = t + h, as a step-size ratio for the new order k.
    pub(crate) fn a_priori_ratio(&self, control: &StepControl, k: usize, h: f64) -> Result<f64> {
        let t = self.time + h;
        let times = self.history.times();
        if times.len() < k + 2 {
            return Ok(1.0);
        }
        let coupled = self.coupled_connections();
        let here = self.coupled_here(&coupled);
        let mut difference = Vec::with_capacity(here.len());
        let mut current = Vec::with_capacity(here.len());
        for &c in &here {
            let values = self.history.values(c);
            let mut high = [0.0; MAX_DEGREE + 2];
            let mut low = [0.0; MAX_DEGREE + 2];
            super::polynomial::lagrange_taylor(&times[..k + 2], &values[..k + 2], t, &mut high);
            super::polynomial::lagrange_taylor(&times[..k + 1], &values[..k + 1], t, &mut low);
            difference.push(high[0] - low[0]);
            current.push(values[0]);
        }
        let (rtol, atol) = control.coupling_tolerances();
        let mut sum = ExactSum::default();
        add_weighted_squares(&mut sum, &difference, &current, atol, rtol);
        self.merge_sums_over_ranks(std::slice::from_mut(&mut sum))?;
        Ok(ratio(
            control.step.safety,
            root_mean(&sum, coupled.len()),
            ratio_exponents(k).2,
        ))
    }
}

/// Macro-step size (and order) control around the explicit or implicit step (Sect. 5): the
/// run loop's algorithm under an estimator and the paper's step-size and order rules.
pub struct Controlled {
    control: StepControl,
    /// The implicit corrector's settings (`None`: explicit steps).
    implicit: Option<ImplicitSettings>,
    implicit_state: ImplicitState,
    /// How many of the probes are positions.
    positions: usize,
    /// The highest order the order controller may choose.
    max_order: usize,
    /// The step the controller proposes next and the order it uses.
    h: f64,
    k: usize,
    failures: u32,
    successes: u32,
    stats: ControlStatistics,
}

impl Controlled {
    /// Control with these settings; `order` is the fixed order when the order is not controlled.
    pub fn new(control: StepControl, implicit: Option<ImplicitSettings>, order: u8) -> Controlled {
        let k = usize::from(if control.variable_order { 0 } else { order });
        let max_order = usize::from(control.highest_order(order));
        Controlled {
            control,
            implicit,
            implicit_state: ImplicitState::default(),
            positions: 0,
            max_order,
            h: f64::NAN,
            k,
            failures: 0,
            successes: 0,
            stats: ControlStatistics {
                smallest_step: f64::INFINITY,
                ..ControlStatistics::default()
            },
        }
    }
}

impl super::algorithm::MasterAlgorithm for Controlled {
    fn prepare(&mut self, exec: &mut Execution) -> Result<()> {
        self.positions = exec.set_up_probes(&self.control)?;
        self.h = exec.resolved.system.experiment.step.min(self.control.h_max);
        Ok(())
    }

    fn proposed_step(&mut self, _exec: &Execution, _grid: &super::TimeGrid) -> f64 {
        self.h
    }

    fn may_reject(&self) -> bool {
        true
    }

    fn attempt(&mut self, exec: &mut Execution, h_try: f64) -> Result<super::algorithm::Outcome> {
        use super::algorithm::Outcome;
        let control = &self.control;
        let t = exec.time;
        let k = self.k;
        let k_eff = k.min(exec.history.len().saturating_sub(1));
        if !control.estimator.is_implicit() {
            exec.save_states()?;
        }
        let implicit = self.implicit.unwrap_or_default();
        let attempt = exec.attempt(
            control,
            self.positions,
            k_eff,
            t + h_try,
            &implicit,
            &mut self.implicit_state,
        )?;
        let stats = &mut self.stats;
        stats.macro_steps += u64::from(attempt.macro_steps);
        stats.corrector_iterations += u64::from(attempt.corrector_iterations);
        let accepted = !attempt.corrector_failed && attempt.norm <= 1.0;
        if !accepted {
            self.failures += 1;
        }
        let decision = next_step_size(
            &control.step,
            h_try,
            attempt.ratio,
            accepted,
            self.failures,
            attempt.corrector_failed,
        )
        .map_err(Error::Numerics)?;
        match decision {
            StepDecision::Accept { next } => {
                exec.push_history();
                stats.accepted += 1;
                stats.order_histogram[k_eff.min(MAX_DEGREE - 1)] += 1;
                stats.smallest_step = stats.smallest_step.min(h_try);
                stats.largest_step = stats.largest_step.max(h_try);
                if control.trace {
                    stats.trace.push((exec.time, h_try, k_eff));
                }
                // A step shortened to land on the output grid says little about the next.
                let mut next = if h_try < self.h {
                    next.max(self.h)
                } else {
                    next
                };
                let reduced = next < h_try;
                if control.variable_order {
                    let sdn = exec.scaled_derivative_norms(control, k, next)?;
                    let k_new = next_order(k, self.max_order, &sdn, 0, self.successes);
                    if k_new != k {
                        let r = exec.a_priori_ratio(control, k_new, next)?;
                        if let Ok(StepDecision::Accept { next: n }) =
                            next_step_size(&control.step, next, r, true, 0, false)
                        {
                            next = n;
                        }
                        self.successes = 0;
                    } else {
                        self.successes = if reduced { 0 } else { self.successes + 1 };
                    }
                    self.k = k_new;
                }
                self.h = next.min(control.h_max);
                self.failures = 0;
                Ok(Outcome::Accepted)
            }
            StepDecision::Reject { retry } => {
                stats.rejected += 1;
                if !attempt.corrector_failed {
                    exec.roll_back(t)?;
                }
                if control.variable_order {
                    let sdn = exec.scaled_derivative_norms(control, k, retry)?;
                    self.k = next_order(k, self.max_order, &sdn, self.failures, 0);
                }
                self.successes = 0;
                self.h = retry;
                Ok(Outcome::Rejected)
            }
        }
    }

    fn finish(&mut self, stats: &mut super::RunStatistics) {
        stats.corrector_iterations = self.stats.corrector_iterations;
        stats.control = Some(std::mem::take(&mut self.stats));
    }

    fn save(&self) -> Result<Vec<u8>> {
        super::algorithm::save_state(&SavedControl {
            h: self.h,
            k: self.k,
            failures: self.failures,
            successes: self.successes,
            stats: self.stats.clone(),
            implicit_state: self.implicit_state.save(),
        })
    }

    fn restore(&mut self, saved: &[u8]) -> Result<()> {
        let saved: SavedControl = super::algorithm::restore_state(saved)?;
        // Bytes may come from outside (Snapshot.from_bytes): an order or step this
        // controller could not have proposed would index past its tables.
        if saved.k > self.max_order.max(self.k) || !(saved.h.is_finite() && saved.h > 0.0) {
            return Err(Error::Usage(format!(
                "a snapshot whose step controller is at order {} and step {}, which this controller cannot continue (orders up to {})",
                saved.k, saved.h, self.max_order
            )));
        }
        self.h = saved.h;
        self.k = saved.k;
        self.failures = saved.failures;
        self.successes = saved.successes;
        self.stats = saved.stats;
        self.implicit_state = ImplicitState::restored(saved.implicit_state);
        Ok(())
    }
}

/// The controller between macro steps, as a snapshot keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedControl {
    h: f64,
    k: usize,
    failures: u32,
    successes: u32,
    stats: ControlStatistics,
    implicit_state: super::implicit::SavedImplicitState,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equidistant(k: usize) -> (f64, f64) {
        let past: Vec<f64> = (0..=k).map(|j| -(j as f64)).collect();
        error_constants(k, 1.0, &past)
    }

    #[test]
    fn equidistant_constants_equal_the_paper() {
        let pos = [
            1.0 / 2.0,
            1.0 / 6.0,
            1.0 / 8.0,
            19.0 / 180.0,
            3.0 / 32.0,
            863.0 / 10080.0,
            275.0 / 3456.0,
        ];
        let vel = [
            1.0,
            1.0 / 2.0,
            5.0 / 12.0,
            3.0 / 8.0,
            251.0 / 720.0,
            95.0 / 288.0,
            19087.0 / 60480.0,
        ];
        for k in 0..=6 {
            let (p, v) = equidistant(k);
            assert!(
                (p - pos[k]).abs() < 1e-14,
                "C_pos^{k} = {p}, expected {}",
                pos[k]
            );
            assert!(
                (v - vel[k]).abs() < 1e-14,
                "C_vel^{k} = {v}, expected {}",
                vel[k]
            );
        }
    }

    #[test]
    fn constants_do_not_depend_on_the_scale_of_time() {
        let past = [3.0, 2.9, 2.8];
        let (p, v) = error_constants(2, 3.1, &past);
        assert!((p - 1.0 / 8.0).abs() < 1e-12 && (v - 5.0 / 12.0).abs() < 1e-12);
    }

    #[test]
    fn milne_factors_equal_the_paper() {
        let past: Vec<f64> = (0..=5).map(|j| -(j as f64)).collect();
        let explicit_pos = [1.0 / 3.0, 3.0 / 4.0, 38.0 / 45.0, 135.0 / 152.0];
        let explicit_vel = [1.0 / 2.0, 5.0 / 6.0, 9.0 / 10.0, 251.0 / 270.0];
        let implicit_pos = [2.0 / 3.0, 1.0 / 4.0, 7.0 / 45.0, 17.0 / 152.0];
        let implicit_vel = [1.0 / 2.0, 1.0 / 6.0, 1.0 / 10.0, 19.0 / 270.0];
        for k in 0..4 {
            let f = |e, p| milne_factor(e, k, 1.0, &past, p);
            assert!((f(Estimator::ExMilne, true) - explicit_pos[k]).abs() < 1e-14);
            assert!((f(Estimator::ExMilne, false) - explicit_vel[k]).abs() < 1e-14);
            assert!((f(Estimator::ImMilne, true) - implicit_pos[k]).abs() < 1e-14);
            assert!((f(Estimator::ImMilne, false) - implicit_vel[k]).abs() < 1e-14);
        }
    }

    #[test]
    fn wrms_weights_each_component() {
        assert_eq!(wrms(&[1e-6, 2e-6], &[0.0, 0.0], 1e-6, 0.0), (2.5f64).sqrt());
        assert!((wrms(&[0.1], &[10.0], 0.0, 0.01) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn step_size_rules_of_the_paper() {
        let s = StepSizeSettings::default();
        let accept = |r| next_step_size(&s, 1.0, r, true, 0, false).unwrap();
        assert_eq!(
            accept(3.0),
            StepDecision::Accept { next: 2.0 },
            "growth capped by r_max"
        );
        assert_eq!(
            accept(1.5),
            StepDecision::Accept { next: 1.0 },
            "1 <= r < r_max keeps H"
        );
        assert_eq!(accept(0.7), StepDecision::Accept { next: 0.7 });
        assert_eq!(
            accept(0.95),
            StepDecision::Accept { next: 0.9 },
            "at most 0.9 H when r < 1"
        );
        assert_eq!(
            accept(0.1),
            StepDecision::Accept { next: 0.5 },
            "at least r_min"
        );
        let reject = |r, failures| next_step_size(&s, 1.0, r, false, failures, false).unwrap();
        assert_eq!(reject(0.5, 1), StepDecision::Reject { retry: 0.45 });
        assert_eq!(reject(0.1, 1), StepDecision::Reject { retry: 0.25 });
        assert_eq!(reject(0.99, 1), StepDecision::Reject { retry: 0.891 });
        assert_eq!(reject(0.5, 2), StepDecision::Reject { retry: 0.25 });
        assert_eq!(
            next_step_size(&s, 1.0, 10.0, true, 0, true).unwrap(),
            StepDecision::Reject { retry: 0.25 },
            "a corrector failure quarters H"
        );
        assert!(
            next_step_size(&s, 2e-12, 0.1, false, 3, false).is_err(),
            "abort below 1e-12"
        );
    }

    #[test]
    fn ratios_use_the_order_exponents() {
        let (p, v, u) = ratio_exponents(2);
        assert_eq!((p, v, u), (5.0, 4.0, 3.0));
        assert!((ratio(6.0, 1.0 / 6.0 / 32.0, 5.0) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn order_rules_of_the_paper() {
        let nan = f64::NAN;
        // k = 1 drops to 0 when SDN(1) <= SDN(2) / 2.
        assert_eq!(next_order(1, 5, &[nan, 1.0, 3.0, 4.0], 0, 0), 0);
        // k > 1 drops when max(SDN(k), SDN(k-1)) <= SDN(k+1).
        assert_eq!(next_order(2, 5, &[nan, 1.0, 1.0, 2.0, 3.0], 0, 0), 1);
        // Decreasing norms keep k, and a stable run raises it when SDN(k+2) < SDN(k+1).
        assert_eq!(next_order(2, 5, &[nan, 8.0, 4.0, 2.0, 1.0], 0, 0), 2);
        assert_eq!(next_order(2, 5, &[nan, 8.0, 4.0, 2.0, 1.0], 0, 3), 3);
        assert_eq!(
            next_order(2, 2, &[nan, 8.0, 4.0, 2.0, 1.0], 0, 3),
            2,
            "capped at k_max"
        );
        // k = 0 rises when SDN(2) < SDN(1) / 2 after a stable run.
        assert_eq!(next_order(0, 5, &[nan, 1.0, 0.4], 0, 1), 1);
        // Failure overrides.
        assert_eq!(next_order(3, 5, &[nan, 8.0, 4.0, 2.0, 1.0, 0.5], 4, 0), 1);
        assert_eq!(next_order(3, 5, &[nan, 8.0, 4.0, 2.0, 1.0, 0.5], 6, 0), 0);
    }

    #[test]
    fn divided_differences_give_derivatives_of_polynomials() {
        let t = [0.3, 0.1, -0.4, -0.5];
        let cubic = |x: f64| 2.0 * x * x * x - x + 1.0;
        let v = t.map(cubic);
        assert!(
            (divided_difference(&t, &v) - 2.0).abs() < 1e-12,
            "third divided difference = leading coefficient"
        );
        let sdn = scaled_derivative_norm(3, 0.5, &t, &[&v], 1.0, 0.0);
        assert!((sdn - 0.125 * 6.0 * 2.0).abs() < 1e-12);
    }
}
