//! Extended applied-force coupling (the stability thesis, Sect. 3.4): the implicit scheme with
//! coupling values discretised on half steps.
//!
//! A connection marked `half_step` is approximated over `[T_N, T_N+1]` by a function of its
//! values at the step's start, middle and end (C: piecewise constant, L: piecewise linear, Q:
//! quadratic, by the connection's order k = 0, 1, 2), so each step has two unknowns for it: the
//! end value u* and the middle value m. Two conditions at `T_N+1` determine them: the coupling
//! condition `g = u* - y = 0` and, for the derivative extension (D), its time derivative
//! `g' = u'(T_N+1) - y'(T_N+1) = 0`. Connections without the mark stay on the macro grid (the
//! corrector's interpolation of degree k through u* and the history), with `g = 0` only.
//!
//! The unknowns `theta = (u*, m)` are solved by Newton with a finite-difference Jacobian from
//! repeated macro steps off the saved FMU states (the thesis' recipe; exact for linear
//! subsystems, so one iteration solves them). The predictor extrapolates the macro-grid
//! history to `T_N+1` and to the middle (the thesis' alternative predictor; it does not enter
//! the result of a linear model).
//!
//! `y'` is the true time derivative of the source output along the coupled trajectories: the
//! FMU's first output derivative at the communication point (taken with zero input
//! derivatives: FMI 3 has none there and FMI 2 sources have theirs zeroed before the call),
//! plus, where the output feeds through from coupled inputs, their partials (directional
//! derivatives) times the true derivatives of those inputs' sources, in graph order. So for a
//! spring-damper FMU between two masses, `y' = c (v2 - v1) + d (a2 - a1)` as in the thesis'
//! Eq. 3.36c, whatever the interpolation of the spring's inputs.

use nalgebra::{DMatrix, DVector};

use super::control::wrms;
use super::execution::Execution;
use super::implicit::{ImplicitSettings, ImplicitState, ImplicitStep};
use crate::fmu::FmiVersion;
use crate::{Error, Result};

/// Which condition the extended coupling adds for a half-step value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Extension {
    /// None: the original implicit scheme (half-step marks are not allowed).
    #[default]
    None,
    /// D-extension: the coupling condition's time derivative at the new point.
    Derivative,
}

/// The unknowns of one extended step and where they come from.
struct Layout {
    /// The coupled connections (end values u*, first in theta).
    coupled: Vec<usize>,
    /// Positions in `coupled` of the half-step connections (middle values m, after u*).
    half: Vec<usize>,
    /// Position in `coupled` of each connection (usize::MAX when not coupled).
    row_of: Vec<usize>,
}

impl Layout {
    fn unknowns(&self) -> usize {
        self.coupled.len() + self.half.len()
    }
}

impl Execution {
    /// One macro step of the D-extended implicit scheme (see the module documentation); the
    /// contract is that of `step_implicit`.
    pub(crate) fn step_extended(
        &mut self,
        h: f64,
        settings: &ImplicitSettings,
        state: &mut ImplicitState,
    ) -> Result<ImplicitStep> {
        let t_start = self.time;
        let t_end = t_start + h;
        let layout = self.layout()?;
        let mut predicted = self.extrapolate_to(t_end, &layout.coupled);
        let half_connections: Vec<usize> = layout.half.iter().map(|&j| layout.coupled[j]).collect();
        predicted.extend(self.extrapolate_to(t_start + 0.5 * h, &half_connections));
        self.save_states()?;

        let mut theta = DVector::from_vec(predicted);
        let (mut residual, phi) = self.extended_pass(t_start, t_end, &layout, &theta)?;
        let mut report = ImplicitStep {
            predicted: theta
                .rows(0, layout.coupled.len())
                .iter()
                .copied()
                .collect(),
            predictor_update: phi,
            predictor_states: self.read_probes()?,
            ..ImplicitStep::default()
        };

        let n = layout.unknowns();
        let mut fresh_jacobian = false;
        let mut jacobian = match &state.jacobian {
            Some(j) if settings.reuse_jacobian && j.nrows() == n => j.clone(),
            _ => {
                fresh_jacobian = true;
                self.extended_jacobian(t_start, t_end, &layout, &theta, &residual, &mut report)?
            }
        };
        loop {
            for _ in 0..settings.max_iterations.max(1) {
                let step = jacobian.clone().lu().solve(&(-&residual)).ok_or_else(|| {
                    Error::Usage(format!(
                        "the Jacobian of the extended coupling conditions at t = {t_start} is singular: the half-step values are not determined; check which connections are marked halfStep"
                    ))
                })?;
                theta += step;
                residual = self.extended_pass(t_start, t_end, &layout, &theta)?.0;
                report.iterations += 1;
                let values: Vec<f64> = theta.iter().copied().collect();
                let residuals: Vec<f64> = residual.iter().copied().collect();
                if wrms(
                    &residuals,
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
            theta = DVector::from_vec(report.predicted.clone());
            theta.extend(self.extrapolate_to(t_start + 0.5 * h, &half_connections));
            residual = self.extended_pass(t_start, t_end, &layout, &theta)?.0;
            jacobian =
                self.extended_jacobian(t_start, t_end, &layout, &theta, &residual, &mut report)?;
        }
        report.middle = theta
            .rows(layout.coupled.len(), layout.half.len())
            .iter()
            .copied()
            .collect();
        if settings.reuse_jacobian {
            state.jacobian = Some(jacobian);
        }
        if !report.converged {
            self.roll_back(t_start)?;
        }
        Ok(report)
    }

    /// The coupled connections and the half-step ones among them.
    fn layout(&self) -> Result<Layout> {
        let coupled = self.coupled_connections();
        let mut row_of = vec![usize::MAX; self.values.len()];
        for (j, &c) in coupled.iter().enumerate() {
            row_of[c] = j;
        }
        let half: Vec<usize> = coupled
            .iter()
            .enumerate()
            .filter(|(_, &c)| self.resolved.connections[c].half_step)
            .map(|(j, _)| j)
            .collect();
        if half.is_empty() {
            return Err(Error::Usage(
                "the derivative-extended coupling needs connections discretised on half steps, but no connection is marked halfStep; mark the force (or velocity) connections as in the thesis' variants, or drop corrector.extension".into(),
            ));
        }
        Ok(Layout {
            coupled,
            half,
            row_of,
        })
    }

    /// The residuals `(g, H/2 g')` of the coupling conditions after the macro step through
    /// `theta` from the saved states (the components are left at its end), and the coupling
    /// values there.
    fn extended_pass(
        &mut self,
        t_start: f64,
        t_end: f64,
        layout: &Layout,
        theta: &DVector<f64>,
    ) -> Result<(DVector<f64>, Vec<f64>)> {
        let h = t_end - t_start;
        let nc = layout.coupled.len();
        self.restore_states()?;
        let mut at_end = self.values.clone();
        let mut midpoints = vec![f64::NAN; self.values.len()];
        for (j, &c) in layout.coupled.iter().enumerate() {
            at_end[c] = theta[j];
        }
        for (i, &j) in layout.half.iter().enumerate() {
            midpoints[layout.coupled[j]] = theta[nc + i];
        }
        self.time = t_start;
        self.step_jacobi_half_steps(t_end, &at_end, &midpoints)?;
        self.time = t_end;
        self.exchange(false)?;

        let phi: Vec<f64> = layout.coupled.iter().map(|&c| self.values[c]).collect();
        let slopes = self.output_slopes(layout)?;
        let mut residual = DVector::zeros(layout.unknowns());
        for j in 0..nc {
            residual[j] = theta[j] - phi[j];
        }
        for (i, &j) in layout.half.iter().enumerate() {
            let c = layout.coupled[j];
            let k = self.half_step_degree(c);
            let start = self.history.values(c).first().copied().unwrap_or(phi[j]);
            let (middle, end) = (theta[nc + i], theta[j]);
            // The slope of the C / L / Q function at the step's end (C: the thesis'
            // approximation 2 (u* - m) / H, which is L's).
            let slope = if k >= 2 {
                (start - 4.0 * middle + 3.0 * end) / h
            } else {
                2.0 * (end - middle) / h
            };
            residual[nc + i] = 0.5 * h * (slope - slopes[j]);
        }
        Ok((residual, phi))
    }

    /// The degree of a half-step function in this step (as the step itself uses it).
    fn half_step_degree(&self, c: usize) -> usize {
        let order = self
            .order_override
            .unwrap_or(self.resolved.connections[c].extrapolation_order);
        super::zoh::effective_order(order, self.history.len() + 1).min(2)
    }

    /// `d theta`-columns of the residuals by forward differences, one repeated macro step per
    /// unknown; the components end at the step through `theta` again.
    fn extended_jacobian(
        &mut self,
        t_start: f64,
        t_end: f64,
        layout: &Layout,
        theta: &DVector<f64>,
        residual: &DVector<f64>,
        report: &mut ImplicitStep,
    ) -> Result<DMatrix<f64>> {
        let n = layout.unknowns();
        let mut jacobian = DMatrix::zeros(n, n);
        let mut perturbed = theta.clone();
        for l in 0..n {
            let delta = 1e-6 * (1.0 + theta[l].abs());
            perturbed[l] = theta[l] + delta;
            let (r, _) = self.extended_pass(t_start, t_end, layout, &perturbed)?;
            perturbed[l] = theta[l];
            jacobian.set_column(l, &((r - residual) / delta));
            report.jacobian_steps += 1;
        }
        Ok(jacobian)
    }

    /// The true time derivative at the current communication point of every coupled value
    /// that a half-step condition needs (NaN for the others), in the target's units.
    fn output_slopes(&mut self, layout: &Layout) -> Result<Vec<f64>> {
        let nc = layout.coupled.len();
        let feedthrough = self.feedthrough_partials(&layout.coupled, &layout.row_of)?;
        // Which slopes are needed: the half-step values and what feeds through into them.
        let mut needed = vec![false; nc];
        for &j in &layout.half {
            needed[j] = true;
        }
        loop {
            let mut grew = false;
            for &(row, p, _) in &feedthrough {
                if needed[row] && !needed[p] {
                    needed[p] = true;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        let mut own = vec![f64::NAN; nc];
        for j in (0..nc).filter(|&j| needed[j]) {
            own[j] = self.own_output_derivative(layout, j)?;
        }
        let mut slopes = vec![f64::NAN; nc];
        for block in &self.graph.blocks {
            for &c in &block.connections {
                let row = layout.row_of[c];
                if row == usize::MAX || !needed[row] {
                    continue;
                }
                let mut slope = own[row];
                for &(r, p, f) in &feedthrough {
                    if r == row {
                        slope += f * slopes[p];
                    }
                }
                slopes[row] = slope;
            }
        }
        Ok(slopes)
    }

    /// The source FMU's first output derivative of coupled value `j` (scaled into the target's
    /// units), with the source's fed-through inputs' derivatives at zero.
    fn own_output_derivative(&mut self, layout: &Layout, j: usize) -> Result<f64> {
        let c = layout.coupled[j];
        let conn = &self.resolved.connections[c];
        let (source, scale) = (conn.from_component, conn.scale);
        let component = &self.resolved.components[source];
        let description = component.description.clone();
        let output = &description.variables[conn.from_variable];
        let out_vr = output.value_reference;
        let what = format!("{}.{}", component.name, output.name);
        let name = component.name.clone();
        // FMI 2 keeps input derivatives between calls: zero those of the fed-through inputs.
        let zeroed: Vec<(u32, f64)> = if description.fmi_version == FmiVersion::Fmi2 {
            layout
                .coupled
                .iter()
                .filter(|&&p| {
                    let into = &self.resolved.connections[p];
                    into.to_component == source
                        && crate::system::graph::feeds_through(
                            &description,
                            conn.from_variable,
                            into.to_variable,
                        )
                })
                .map(|&p| {
                    let into = &self.resolved.connections[p];
                    (
                        description.variables[into.to_variable].value_reference,
                        self.values[p],
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        self.placement.run_one(source, move |unit| {
            let slave = unit.slave.as_mut();
            if slave.max_output_derivative_order() < 1 {
                return Err(Error::Usage(format!(
                    "the derivative-extended coupling needs the time derivative of output {what} at communication points, but component \"{name}\" provides no output derivatives (maxOutputDerivativeOrder = 0); remove halfStep from the connections that depend on it, or use the original implicit scheme"
                )));
            }
            for &(vr, value) in &zeroed {
                slave.set_input_polynomial(&[vr], 1, &[value, 0.0])?;
            }
            let mut derivative = [0.0];
            slave.get_output_derivatives(&[out_vr], 1, &mut derivative)?;
            Ok(scale * derivative[0])
        })
    }
}
