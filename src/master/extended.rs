//! Extended applied-force coupling (the stability thesis, Sect. 3.4): the implicit scheme with
//! coupling values discretised on half steps.
//!
//! A connection marked `half_step` is approximated over `[T_N, T_N+1]` by a function of its
//! values at the step's start, middle and end (C: piecewise constant, L: piecewise linear, Q:
//! quadratic, by the connection's order k = 0, 1, 2), so each step has two unknowns for it: the
//! end value u* and the middle value m. Two conditions at `T_N+1` determine them: the coupling
//! condition `g = u* - y = 0` and either its time derivative (D-extension,
//! `g' = u'(T_N+1) - y'(T_N+1) = 0`) or its integral over the step (I-extension,
//! `G = int u dt - int y dt = 0`). Connections without the mark stay on the macro grid (the
//! corrector's interpolation of degree k through u* and the history), with `g = 0` only.
//!
//! The unknowns `theta = (u*, m)` are solved by Newton with a finite-difference Jacobian from
//! repeated macro steps off the saved FMU states (the thesis' recipe; exact for linear
//! subsystems, so one iteration solves them). The predictor extrapolates the macro-grid
//! history to `T_N+1` and to the middle (the thesis' alternative predictor; it does not enter
//! the result of a linear model).
//!
//! `y'` and `int y` are the true derivative and integral of the source output along the
//! coupled trajectories. The FMU gives its own part: its first output derivative at the
//! communication point (taken with zero input derivatives: FMI 3 has none there and FMI 2
//! sources have theirs zeroed before the call), or the change over the step of the output the
//! connection names as `source_integral` (which the FMU integrates with its inputs as the
//! master interpolated them). Where the output feeds through from coupled inputs, their
//! partials (directional derivatives) times the difference between the true value of each such
//! input's source and what the FMU saw are added, in graph order. So for a spring-damper FMU
//! between two masses, `y' = c (v2 - v1) + d (a2 - a1)` as in the thesis' Eq. 3.36c, and
//! `int y = c (int x2 - int x1) + d (x2 - x1)|_N^N+1` as in Eq. 3.57, whatever the
//! interpolation of the spring's inputs (exact for linear feedthrough).

use nalgebra::{DMatrix, DVector};

use super::execution::{get_scalar, Execution};
use super::implicit::{ImplicitState, ImplicitStep};
use super::polynomial::{lagrange_taylor, MAX_DEGREE};
use crate::fmu::description::VariableType;
use crate::fmu::FmiVersion;
use crate::settings::implicit::{Extension, ImplicitSettings};
use crate::{Error, Result};

/// The unknowns of one extended step and where they come from.
struct Layout {
    /// The coupled connections (end values u*, first in theta).
    coupled: Vec<usize>,
    /// Positions in `coupled` of the half-step connections (middle values m, after u*).
    half: Vec<usize>,
    /// Position in `coupled` of each connection (usize::MAX when not coupled).
    row_of: Vec<usize>,
    /// I-extension: the `source_integral` outputs at the step's start, by position in
    /// `coupled` (NaN where a connection names none).
    integrals_at_start: Vec<f64>,
    extension: Extension,
}

impl Layout {
    fn unknowns(&self) -> usize {
        self.coupled.len() + self.half.len()
    }
}

impl Execution {
    /// One macro step of the D- or I-extended implicit scheme (see the module documentation); the
    /// contract is that of `step_implicit`.
    pub(crate) fn step_extended(
        &mut self,
        h: f64,
        settings: &ImplicitSettings,
        state: &mut ImplicitState,
    ) -> Result<ImplicitStep> {
        let t_start = self.time;
        let t_end = t_start + h;
        let layout = self.layout(settings.extension)?;
        let mut predicted = self.extrapolate_to(t_end, &layout.coupled);
        let half_connections: Vec<usize> = layout.half.iter().map(|&j| layout.coupled[j]).collect();
        predicted.extend(self.extrapolate_to(t_start + 0.5 * h, &half_connections));
        self.save_states()?;

        let theta = DVector::from_vec(predicted);
        let (residual, phi) = self.extended_pass(t_start, t_end, &layout, &theta)?;
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
        let reused = state
            .jacobian
            .take()
            .filter(|j| settings.reuse_jacobian && j.nrows() == layout.unknowns());
        let singular = format!(
            "the Jacobian of the extended coupling conditions at t = {} is singular: the half-step values are not determined; check which connections are marked halfStep",
            crate::numbers::number(t_start)
        );
        let predicted_theta = theta.clone();
        let (theta, jacobian) = self.newton_with_reuse(
            settings,
            reused,
            (theta, residual),
            &mut report,
            &singular,
            &mut |exec, theta| Ok(exec.extended_pass(t_start, t_end, &layout, theta)?.0),
            &mut |exec, theta, residual, report| {
                exec.extended_jacobian(t_start, t_end, &layout, theta, residual, report)
            },
            // The predictor's point again (its pass leaves the components at its end).
            &mut |exec, _| {
                let residual = exec
                    .extended_pass(t_start, t_end, &layout, &predicted_theta)?
                    .0;
                Ok((predicted_theta.clone(), residual))
            },
        )?;
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

    /// The coupled connections, the half-step ones among them, and (I-extension) the source
    /// integrals at the step's start.
    fn layout(&mut self, extension: Extension) -> Result<Layout> {
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
                "the extended coupling needs connections discretised on half steps, but no connection is marked halfStep; mark the force (and velocity or position) connections as in the thesis' variants, or drop corrector.extension".into(),
            ));
        }
        let mut integrals_at_start = vec![f64::NAN; coupled.len()];
        if extension == Extension::Integral {
            // Read by each source's owner; shared in one collective under mpirun.
            let named: Vec<usize> = (0..coupled.len())
                .filter(|&j| {
                    self.resolved.connections[coupled[j]]
                        .source_integral
                        .is_some()
                })
                .collect();
            let sources: Vec<usize> = named
                .iter()
                .map(|&j| self.resolved.connections[coupled[j]].from_component)
                .collect();
            let mut values = vec![0.0; named.len()];
            let mut read = Ok(());
            for (k, &j) in named.iter().enumerate() {
                if !self.steps_here(sources[k]) || read.is_err() {
                    continue;
                }
                match self.source_integral_value(coupled[j]) {
                    Ok(value) => values[k] = value.unwrap_or(f64::NAN),
                    Err(error) if self.ranks.is_some() => read = Err(error),
                    Err(error) => return Err(error),
                }
            }
            self.share_by_owner(&sources, &mut values, read)?;
            for (&j, value) in named.iter().zip(values) {
                integrals_at_start[j] = value;
            }
        }
        Ok(Layout {
            coupled,
            half,
            row_of,
            integrals_at_start,
            extension,
        })
    }

    /// The residuals `(g, H/2 g')` (D) or `(g, G / H)` (I) of the coupling conditions after
    /// the macro step through `theta` from the saved states (the components are left at its
    /// end), and the coupling values there.
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
        let mut residual = DVector::zeros(layout.unknowns());
        for j in 0..nc {
            residual[j] = theta[j] - phi[j];
        }
        // What each coupled input followed over the step: its slope at the end (D) or its
        // integral (I), and the middle value of the half-step ones.
        let mut middle = vec![f64::NAN; nc];
        for (i, &j) in layout.half.iter().enumerate() {
            middle[j] = theta[nc + i];
        }
        let followed = |exec: &Execution, j: usize| {
            let c = layout.coupled[j];
            let start = exec.history.values(c).first().copied().unwrap_or(phi[j]);
            let end = theta[j];
            if exec.resolved.connections[c].half_step {
                half_step_function(
                    layout.extension,
                    exec.half_step_degree(c),
                    h,
                    start,
                    middle[j],
                    end,
                )
            } else {
                exec.grid_integral(c, t_start, t_end, end)
            }
        };
        match layout.extension {
            Extension::Derivative => {
                let rates = self.true_values(
                    layout,
                    |exec, j| exec.own_output_derivative(layout, j),
                    |_, _| 0.0,
                )?;
                for (i, &j) in layout.half.iter().enumerate() {
                    residual[nc + i] = 0.5 * h * (followed(self, j) - rates[j]);
                }
            }
            Extension::Integral => {
                let integrals = self.true_values(
                    layout,
                    |exec, j| exec.own_integral(layout, j, h),
                    |exec, j| followed(exec, j),
                )?;
                for (i, &j) in layout.half.iter().enumerate() {
                    residual[nc + i] = (followed(self, j) - integrals[j]) / h;
                }
            }
            Extension::None => {}
        }
        Ok((residual, phi))
    }

    /// The integral over `[t_start, t_end]` of the corrector's interpolation of macro-grid
    /// connection `c` through `end` and the history (as the step fed it to its target).
    fn grid_integral(&self, c: usize, t_start: f64, t_end: f64, end: f64) -> f64 {
        let order = self
            .order_override
            .unwrap_or(self.resolved.connections[c].extrapolation_order);
        let k = super::zoh::effective_order(order, self.history.len() + 1);
        let mut times = [0.0; MAX_DEGREE + 1];
        let mut values = [0.0; MAX_DEGREE + 1];
        times[0] = t_end;
        values[0] = end;
        times[1..=k].copy_from_slice(&self.history.times()[..k]);
        values[1..=k].copy_from_slice(&self.history.values(c)[..k]);
        let mut taylor = [0.0; MAX_DEGREE + 1];
        lagrange_taylor(&times[..=k], &values[..=k], t_start, &mut taylor);
        // int_0^H sum_j c_j tau^j / j! = sum_j c_j H^(j+1) / (j+1)!
        let h = t_end - t_start;
        let mut power = h;
        let mut integral = 0.0;
        for (j, coefficient) in taylor.iter().take(k + 1).enumerate() {
            integral += coefficient * power;
            power *= h / (j as f64 + 2.0);
        }
        integral
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

    /// The true derivative (D) or integral over the step (I) of every coupled value that a
    /// half-step condition needs (NaN for the others): the source's own part plus, for each
    /// coupled input the source output feeds through from, the partial times (true value of
    /// that input's source - what the FMU saw), composed in graph order.
    fn true_values(
        &mut self,
        layout: &Layout,
        own: impl Fn(&mut Execution, usize) -> Result<f64>,
        seen: impl Fn(&Execution, usize) -> f64,
    ) -> Result<Vec<f64>> {
        let nc = layout.coupled.len();
        let feedthrough = self.feedthrough_partials(&layout.coupled, &layout.row_of)?;
        // Which values are needed: the half-step ones and what feeds through into them.
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
        // Each source's own part from its owner; shared in one collective under mpirun.
        let wanted: Vec<usize> = (0..nc).filter(|&j| needed[j]).collect();
        let sources: Vec<usize> = wanted
            .iter()
            .map(|&j| self.resolved.connections[layout.coupled[j]].from_component)
            .collect();
        let mut parts = vec![0.0; wanted.len()];
        let mut asked = Ok(());
        for (k, &j) in wanted.iter().enumerate() {
            if !self.steps_here(sources[k]) || asked.is_err() {
                continue;
            }
            match own(self, j) {
                Ok(part) => parts[k] = part,
                Err(error) if self.ranks.is_some() => asked = Err(error),
                Err(error) => return Err(error),
            }
        }
        self.share_by_owner(&sources, &mut parts, asked)?;
        let mut own_part = vec![f64::NAN; nc];
        for (&j, part) in wanted.iter().zip(parts) {
            own_part[j] = part;
        }
        let mut truth = vec![f64::NAN; nc];
        for block in &self.graph.blocks {
            for &c in &block.connections {
                let row = layout.row_of[c];
                if row == usize::MAX || !needed[row] {
                    continue;
                }
                let mut value = own_part[row];
                for &(r, p, f) in &feedthrough {
                    if r == row {
                        value += f * (truth[p] - seen(self, p));
                    }
                }
                truth[row] = value;
            }
        }
        Ok(truth)
    }

    /// The change over the step of coupled value `j`'s `source_integral` output, in the
    /// target's units (`scale * change + shift * H`).
    fn own_integral(&mut self, layout: &Layout, j: usize, h: f64) -> Result<f64> {
        let c = layout.coupled[j];
        let conn = self.resolved.connections[c].clone();
        let (scale, shift) = (conn.scale, conn.shift);
        let Some(end) = self.source_integral_value(c)? else {
            let source = &self.resolved.components[conn.from_component];
            let target = &self.resolved.components[conn.to_component];
            return Err(Error::Usage(format!(
                "the integral-extended coupling needs the integral over each macro step of {}.{}, but the connection {}.{} -> {}.{} names no sourceIntegral; give it an output of {} that integrates {}.{} over time (for a velocity, the position)",
                source.name,
                source.description.variables[conn.from_variable].name,
                source.name,
                source.description.variables[conn.from_variable].name,
                target.name,
                target.description.variables[conn.to_variable].name,
                source.name,
                source.name,
                source.description.variables[conn.from_variable].name,
            )));
        };
        Ok(scale * (end - layout.integrals_at_start[j]) + shift * h)
    }

    /// The current value of connection `c`'s `source_integral` output, if it names one.
    fn source_integral_value(&mut self, c: usize) -> Result<Option<f64>> {
        let conn = &self.resolved.connections[c];
        let Some(variable) = conn.source_integral else {
            return Ok(None);
        };
        let source = conn.from_component;
        let description = &self.resolved.components[source].description;
        let vr = description.variables[variable].value_reference;
        let fmi3 = description.fmi_version == FmiVersion::Fmi3;
        let value = self.placement.run_one(source, move |unit| {
            get_scalar(unit.slave.as_mut(), vr, VariableType::Float64, fmi3)
        })?;
        Ok(Some(value))
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

/// What a half-step input followed over a macro step of size `h` with the C / L / Q function
/// of degree `k` through `start`, `middle`, `end`: its slope at the end (D; for C the thesis'
/// approximation 2 (u* - m) / H, which is L's) or its integral over the step (I).
fn half_step_function(
    extension: Extension,
    k: usize,
    h: f64,
    start: f64,
    middle: f64,
    end: f64,
) -> f64 {
    match (extension, k.min(2)) {
        (Extension::Integral, 0) => h * (middle + end) / 2.0,
        (Extension::Integral, 1) => h * (start + 2.0 * middle + end) / 4.0,
        (Extension::Integral, _) => h * (start + 4.0 * middle + end) / 6.0,
        (_, 2) => (start - 4.0 * middle + 3.0 * end) / h,
        _ => 2.0 * (end - middle) / h,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_step_functions_integrate_and_differentiate_their_pieces() {
        // u = 1 + 2 t + 3 t^2 on [0, 2] through (0, 1), (1, 6), (2, 17).
        let (h, start, middle, end) = (2.0, 1.0, 6.0, 17.0);
        let q_integral = 2.0 + 4.0 + 8.0; // int_0^2 u dt
        let q_slope = 2.0 + 6.0 * 2.0;
        let f = |e, k| half_step_function(e, k, h, start, middle, end);
        assert!((f(Extension::Integral, 2) - q_integral).abs() < 1e-14);
        assert!((f(Extension::Derivative, 2) - q_slope).abs() < 1e-14);
        // L: trapezoids on both halves; C: middle then end value.
        assert_eq!(
            f(Extension::Integral, 1),
            (1.0 + 6.0) / 2.0 + (6.0 + 17.0) / 2.0
        );
        assert_eq!(f(Extension::Integral, 0), 6.0 + 17.0);
        assert_eq!(f(Extension::Derivative, 1), 11.0);
        assert_eq!(f(Extension::Derivative, 0), 11.0);
    }
}
