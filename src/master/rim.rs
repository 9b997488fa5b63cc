//! The reduced interface model (Peiret et al. 2018): multirate coupling of a slow multibody FMU
//! with fast subsystems (hydraulics) through a small model of the multibody system at its
//! interface, `M~ s'' = f~ + lambda`, integrated by the master at the fast rate.
//!
//! Per macro step H1 (the multibody FMU's communication step):
//! 1. At the synchronisation point the effective mass `M~ = W^-1` with `W = d a_i / d lambda_i`
//!    (the interface accelerations' sensitivity to the interface forces) comes from the
//!    multibody FMU's directional derivatives, or from p + 1 evaluations with perturbed forces
//!    at the same communication point, or is read from outputs of the FMU (the paper's own
//!    choice); the effective force is `f~ = M~ a_i - lambda_i` (exact: `a_i` is affine in
//!    `lambda_i` at a fixed state). The RIM state is reset to the FMU's `s`, `s'`.
//! 2. The fast FMUs step H2 = H1 / n at a time, each time receiving the RIM's `s`, `s'` and
//!    handing back their forces; the RIM advances with semi-implicit Euler (the paper's Eq. 39)
//!    or with the exact update for the force held over H2.
//! 3. The multibody FMU steps H1 with the forces of the synchronisation point held (the paper's
//!    parallel scheme) or, optionally, with their average over the fast steps (then it steps
//!    after the fast loop).
//!
//! The plain multirate zero-order hold of the paper ("direct ZOH") is the Jacobi algorithm
//! with the fast components taking `subSteps` = H1 / H2.

mod over_ranks;

use nalgebra::{DMatrix, DVector};

use super::execution::Execution;
use crate::fmu::ValueReference;
pub use crate::settings::rim::{
    EffectiveMass, MultibodyForce, RimIntegrator, RimInterface, RimSettings,
};
use crate::{Error, Result};

/// Resolved value references of the multibody interface.
struct Interface {
    mbs: usize,
    position: Vec<ValueReference>,
    velocity: Vec<ValueReference>,
    acceleration: Vec<ValueReference>,
    force: Vec<ValueReference>,
    /// Connections from the interface position / velocity outputs (driven by the RIM) with the
    /// interface index and whether it is the velocity.
    rim_driven: Vec<(usize, usize, bool)>,
    /// Connections into the interface force inputs, with the interface index.
    forces_in: Vec<(usize, usize)>,
    /// Connections between the fast components.
    fast_links: Vec<usize>,
    fast: Vec<usize>,
}

/// The inverse of the effective mass `m` at time `t`, or why there is none.
fn inverse_mass(m: &DMatrix<f64>, t: f64) -> Result<DMatrix<f64>> {
    m.clone().try_inverse().ok_or_else(|| {
        Error::Numerics(format!(
            "rim: the effective mass at t = {} is singular",
            crate::numbers::number(t)
        ))
    })
}

/// The reduced model's position `s` and velocity `v` one fast step `h2` on under the
/// acceleration `a`: semi-implicit Euler (the paper's Eq. 39) or exact for the force held.
fn advance_reduced_model(
    integrator: RimIntegrator,
    (s, v): (&mut DVector<f64>, &mut DVector<f64>),
    a: &DVector<f64>,
    h2: f64,
) {
    match integrator {
        RimIntegrator::SemiImplicitEuler => {
            *v += a * h2;
            *s += &*v * h2;
        }
        RimIntegrator::HeldForceExact => {
            *s += &*v * h2 + a * (0.5 * h2 * h2);
            *v += a * h2;
        }
    }
}

impl Execution {
    fn rim_interface(&self, settings: &RimSettings) -> Result<Interface> {
        if settings.interfaces.is_empty() {
            return Err(Error::Usage(
                "rim.interfaces is empty: name at least one interface of the multibody component"
                    .into(),
            ));
        }
        if settings.fast_step_size.is_nan() || settings.fast_step_size <= 0.0 {
            return Err(Error::Usage(format!(
                "rim.fastStepSize must be positive, not {}",
                settings.fast_step_size
            )));
        }
        let mbs = self
            .resolved
            .components
            .iter()
            .position(|c| c.name == settings.multibody)
            .ok_or_else(|| {
                Error::Usage(format!(
                    "rim.multibody: there is no component \"{}\"",
                    settings.multibody
                ))
            })?;
        let mut interface = Interface {
            mbs,
            position: Vec::new(),
            velocity: Vec::new(),
            acceleration: Vec::new(),
            force: Vec::new(),
            rim_driven: Vec::new(),
            forces_in: Vec::new(),
            fast_links: Vec::new(),
            fast: (0..self.resolved.components.len())
                .filter(|&i| i != mbs)
                .collect(),
        };
        let on_mbs = |name: &str| -> Result<ValueReference> {
            let (component, vr) = self.locate(name)?;
            if component != mbs {
                return Err(Error::Usage(format!(
                    "rim: {name} is not a variable of the multibody component \"{}\"",
                    settings.multibody
                )));
            }
            Ok(vr)
        };
        for i in &settings.interfaces {
            interface.position.push(on_mbs(&i.position)?);
            interface.velocity.push(on_mbs(&i.velocity)?);
            interface.acceleration.push(on_mbs(&i.acceleration)?);
            interface.force.push(on_mbs(&i.force)?);
        }
        // The outputs are read at every synchronisation point: a wrong name must stop the run
        // before it starts, and so must a count that does not fit the interfaces.
        if let EffectiveMass::Outputs { mass, force } = &settings.effective_mass {
            let p = settings.interfaces.len();
            if mass.len() != p * p || force.len() != p {
                return Err(Error::Usage(format!(
                    "rim.massOutputs / rim.forceOutputs: {p} interface(s) need {} mass entries (row-major) and {p} force entries, not {} and {}",
                    p * p,
                    mass.len(),
                    force.len()
                )));
            }
            for name in mass.iter().chain(force) {
                on_mbs(name).map_err(|e| match e {
                    Error::Usage(m) => {
                        Error::Usage(format!("rim.massOutputs / rim.forceOutputs: {m}"))
                    }
                    other => other,
                })?;
            }
        }
        for (c, conn) in self.resolved.connections.iter().enumerate() {
            let md = &self.resolved.components[mbs].description;
            let (from_mbs, to_mbs) = (conn.from_component == mbs, conn.to_component == mbs);
            if from_mbs && !to_mbs {
                let vr = md.variables[conn.from_variable].value_reference;
                let position = interface.position.iter().position(|&v| v == vr);
                let velocity = interface.velocity.iter().position(|&v| v == vr);
                match (position, velocity) {
                    (Some(j), _) => interface.rim_driven.push((c, j, false)),
                    (None, Some(j)) => interface.rim_driven.push((c, j, true)),
                    _ => {
                        let (from, to) = self.connection_names(c);
                        return Err(Error::Usage(format!(
                            "rim: connection {from} -> {to} leaves the multibody component from a variable that is no interface position or velocity; the reduced model can only stand in for those"
                        )));
                    }
                }
            } else if to_mbs && !from_mbs {
                let vr = md.variables[conn.to_variable].value_reference;
                let j = interface.force.iter().position(|&v| v == vr).ok_or_else(|| {
                    let (from, to) = self.connection_names(c);
                    Error::Usage(format!(
                        "rim: connection {from} -> {to} enters the multibody component at an input that is no interface force"
                    ))
                })?;
                interface.forces_in.push((c, j));
            } else if !from_mbs && !to_mbs {
                interface.fast_links.push(c);
            }
        }
        if !self.resolved.components[mbs]
            .description
            .co_simulation
            .as_ref()
            .is_some_and(|cs| cs.provides_directional_derivatives)
            && settings.effective_mass == EffectiveMass::DirectionalDerivatives
        {
            return Err(Error::Usage(format!(
                "rim: the multibody component \"{}\" provides no directional derivatives; use effectiveMass \"perturbation\" or \"outputs\"",
                settings.multibody
            )));
        }
        Ok(interface)
    }

    /// The effective mass M~ and force f~ of the multibody FMU at the current point.
    pub fn effective_mass_and_force(
        &mut self,
        settings: &RimSettings,
    ) -> Result<(DMatrix<f64>, DVector<f64>)> {
        let interface = self.rim_interface(settings)?;
        self.effective(&interface, settings)
    }

    fn effective(
        &mut self,
        i: &Interface,
        settings: &RimSettings,
    ) -> Result<(DMatrix<f64>, DVector<f64>)> {
        let p = i.force.len();
        if let EffectiveMass::Outputs { mass, force } = &settings.effective_mass {
            if mass.len() != p * p || force.len() != p {
                return Err(Error::Usage(format!(
                    "rim.effectiveMass: {p} interfaces need {} mass entries and {p} force entries",
                    p * p
                )));
            }
            let mut m = DMatrix::zeros(p, p);
            for (k, name) in mass.iter().enumerate() {
                m[(k / p, k % p)] = self.float_value(name)?;
            }
            let mut f = DVector::zeros(p);
            for (k, name) in force.iter().enumerate() {
                f[k] = self.float_value(name)?;
            }
            return Ok((m, f));
        }
        let (acc, force) = (i.acceleration.clone(), i.force.clone());
        let mode = settings.effective_mass.clone();
        let (w, a, lambda) = self.placement.run_one(i.mbs, move |unit| {
            let slave = unit.slave.as_mut();
            let mut lambda = vec![0.0; p];
            slave.get_float64(&force, &mut lambda)?;
            let mut a = vec![0.0; p];
            slave.get_float64(&acc, &mut a)?;
            let mut w = DMatrix::zeros(p, p);
            let mut column = vec![0.0; p];
            for j in 0..p {
                if mode == EffectiveMass::DirectionalDerivatives {
                    slave.directional_derivative(&acc, &force[j..=j], &[1.0], &mut column)?;
                } else {
                    // a is affine in the forces at a fixed state: one unit perturbation is exact.
                    let delta = 1.0f64.max(lambda[j].abs() * 1e-3);
                    let mut perturbed = lambda.clone();
                    perturbed[j] += delta;
                    slave.set_float64(&force, &perturbed)?;
                    slave.get_float64(&acc, &mut column)?;
                    column
                        .iter_mut()
                        .zip(&a)
                        .for_each(|(c, a0)| *c = (*c - a0) / delta);
                    slave.set_float64(&force, &lambda)?;
                }
                w.set_column(j, &DVector::from_column_slice(&column));
            }
            Ok((w, a, lambda))
        })?;
        let m = w.clone().try_inverse().ok_or_else(|| {
            Error::Numerics(format!(
                "rim: the interface mobility W = d a / d lambda of \"{}\" is singular at t = {}: the interface has no inertia there",
                settings.multibody,
                crate::numbers::number(self.time)
            ))
        })?;
        let f = &m * DVector::from_vec(a) - DVector::from_vec(lambda);
        Ok((m, f))
    }

    fn rim_macro_step(
        &mut self,
        i: &Interface,
        settings: &RimSettings,
        h1: f64,
        n: u32,
        p: usize,
    ) -> Result<()> {
        let t = self.time;
        let h2 = h1 / f64::from(n);
        // 1. Synchronisation: the reduced model from the multibody FMU.
        let (m, f_tilde) = self.effective(i, settings)?;
        let m_inverse = inverse_mass(&m, t)?;
        let (pos, vel) = (i.position.clone(), i.velocity.clone());
        let (mut s, mut v) = self.placement.run_one(i.mbs, move |unit| {
            let mut s = vec![0.0; pos.len()];
            let mut v = vec![0.0; vel.len()];
            unit.slave.get_float64(&pos, &mut s)?;
            unit.slave.get_float64(&vel, &mut v)?;
            Ok((DVector::from_vec(s), DVector::from_vec(v)))
        })?;
        // 3a. Held forces: the multibody FMU steps now (it could run beside the fast loop).
        if settings.multibody_force == MultibodyForce::Held {
            self.step_one(i.mbs, t, h1)?;
        }
        // 2. The fast loop.
        let mut force_sum = DVector::zeros(p);
        for j in 0..n {
            let tj = t + f64::from(j) * h2;
            for &(c, k, is_velocity) in &i.rim_driven {
                let value =
                    self.resolved.connections[c].transform(if is_velocity { v[k] } else { s[k] });
                self.set_target(c, value)?;
            }
            let mut lambda = DVector::zeros(p);
            for &(c, k) in &i.forces_in {
                lambda[k] = self.read_source(c)?;
            }
            force_sum += &lambda;
            for &fast in &i.fast.clone() {
                self.step_one(fast, tj, h2)?;
            }
            if self
                .terminate_requested
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                // A fast FMU asked to end the run: the macro step ends with its fast step.
                self.time = tj + h2;
                for c in 0..self.values.len() {
                    self.values[c] = self.read_source(c)?;
                }
                return Ok(());
            }
            for &c in &i.fast_links.clone() {
                let value = self.read_source(c)?;
                self.set_target(c, value)?;
            }
            let a = &m_inverse * (&f_tilde + &lambda);
            advance_reduced_model(settings.integrator, (&mut s, &mut v), &a, h2);
        }
        // 3b. Averaged forces: the multibody FMU steps after the fast loop.
        if settings.multibody_force == MultibodyForce::Averaged {
            let average = force_sum / f64::from(n);
            let force = i.force.clone();
            self.placement.run_one(i.mbs, move |unit| {
                unit.slave.set_float64(&force, average.as_slice())
            })?;
            self.step_one(i.mbs, t, h1)?;
        }
        self.time = t + h1;
        // The forces at the new point, for the multibody FMU's next step.
        for &(c, _) in &i.forces_in {
            let value = self.read_source(c)?;
            self.set_target(c, value)?;
        }
        // The coupling values at the new point (the result row shows what the sources say).
        for c in 0..self.values.len() {
            self.values[c] = self.read_source(c)?;
        }
        Ok(())
    }

    /// Step one component from `t` by `h` (events handled inside, as the other algorithms do;
    /// a termination request ends the step where the FMU asked).
    fn step_one(&mut self, component: usize, t: f64, h: f64) -> Result<()> {
        let terminate = &self.terminate_requested;
        let inputs = &self.table_inputs[component];
        self.placement.run_one(component, move |unit| {
            let end = t + h;
            let mut now = t;
            while now < end - h * 1e-9 {
                inputs.apply(unit.slave.as_mut(), now)?;
                let result = unit.slave.do_step(now, end - now)?;
                let mut stop = result.terminate_simulation;
                if result.event_handling_needed {
                    unit.slave.enter_event_mode()?;
                    stop |= super::execution::event_iteration(unit.slave.as_mut())?;
                    unit.slave.enter_step_mode()?;
                }
                if stop {
                    terminate.store(true, std::sync::atomic::Ordering::Relaxed);
                    return Ok(());
                }
                now = if result.early_return && result.reached_time < end {
                    result.reached_time.max(now)
                } else {
                    end
                };
            }
            Ok(())
        })
    }
}

/// The reduced interface model as an algorithm of the run loop.
pub struct RimAlgorithm {
    settings: RimSettings,
    interface: Option<Interface>,
}

impl RimAlgorithm {
    /// The algorithm with these settings (resolved against the system in `prepare`).
    pub fn new(settings: RimSettings) -> RimAlgorithm {
        RimAlgorithm {
            settings,
            interface: None,
        }
    }
}

impl super::algorithm::MasterAlgorithm for RimAlgorithm {
    fn prepare(&mut self, exec: &mut Execution) -> Result<()> {
        self.interface = Some(exec.rim_interface(&self.settings)?);
        Ok(())
    }

    fn attempt(&mut self, exec: &mut Execution, h1: f64) -> Result<super::algorithm::Outcome> {
        let interface = self.interface.as_ref().ok_or_else(|| {
            Error::Internal("the reduced interface model was not prepared".into())
        })?;
        // A macro step shortened to land on the output grid takes proportionally fewer.
        let n = ((h1 / self.settings.fast_step_size).round() as u32).max(1);
        let p = interface.force.len();
        match exec.ranks.clone() {
            None => exec.rim_macro_step(interface, &self.settings, h1, n, p)?,
            Some(ranks) => {
                exec.rim_macro_step_over_ranks(&ranks, interface, &self.settings, h1, n, p)?
            }
        }
        Ok(super::algorithm::Outcome::Accepted)
    }
}
