//! Monolithic reference of the hydraulic crane (MBS + hydraulics integrated together, Eq. 42 of
//! the paper), for tests: classical RK4 with a fixed step on
//! `y = [θ1, θ2, θ̇1, θ̇2, p1, p2 (actuator 1), p1, p2 (actuator 2)]`, the actuator forces
//! `λ_j = (p2 − p1) a_p − c ṡ_j` evaluated with the current rates (no co-simulation delay).
//!
//! The paper integrates Eq. 42 with the implicit trapezoidal rule at 0.5 ms; RK4 is explicit, so
//! its step must resolve the pressure time constant (≈ 0.216 ms at the initial state): 0.05 ms
//! is accurate (RK4 is stable up to about 0.5 ms here; see the tests).
//!
//! Set-up as in the paper: the crane starts at rest at θ0 = (π/6, 3π/2); each cylinder's s0 is
//! its actuator's initial length (0.5 m, 0.4330127 m) and its κ0 holds the actuator force that
//! keeps the crane at rest ([`Crane::equilibrium_forces`]: 8829.0 N and 0 N); actuator 1 follows
//! Eq. 30, actuator 2 Eq. 35.

use crate::hydraulics::{Cylinder, Spool};
use crate::mbs::{Crane, THETA0};

/// One sample of the reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Time [s].
    pub t: f64,
    /// Angles θ1, θ2 [rad].
    pub theta: [f64; 2],
    /// Angular velocities [rad/s].
    pub omega: [f64; 2],
    /// Actuator lengths s1, s2 [m] (s2 = 0 with one actuator).
    pub s: [f64; 2],
    /// Actuator rates [m/s].
    pub sd: [f64; 2],
    /// Actuator forces f_h [N].
    pub f: [f64; 2],
    /// Chamber 1 pressures of the actuators [Pa].
    pub p1: [f64; 2],
    /// Chamber 2 pressures of the actuators [Pa].
    pub p2: [f64; 2],
    /// Spool positions.
    pub kappa: [f64; 2],
    /// Position of R [m].
    pub r: [f64; 2],
    /// Velocity of R [m/s].
    pub r_dot: [f64; 2],
}

/// The coupled problem: crane, one cylinder and spool law per actuator, initial angles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setup {
    /// The multibody system.
    pub crane: Crane,
    /// Cylinder data per actuator.
    pub cylinders: [Cylinder; 2],
    /// Spool law per actuator.
    pub spools: [Spool; 2],
    /// Initial angles.
    pub theta0: [f64; 2],
    /// Initial pressures (p1, p2) per actuator.
    pub p0: [[f64; 2]; 2],
}

impl Setup {
    /// The paper's problem with 1 or 2 actuators, in equilibrium at t = 0.
    pub fn paper(actuators: usize) -> Result<Setup, String> {
        let crane = Crane::paper(actuators);
        crane.check()?;
        let e = crane.eval(THETA0, [0.0; 2], [0.0; 2]);
        let f_eq = crane.equilibrium_forces(THETA0);
        let mut cylinders = [Cylinder::default(); 2];
        let mut spools = [Spool {
            law: 1,
            kappa0: 0.5,
            t_a: 2.0,
            t_b: 6.0,
            t_r: 1e-3,
        }; 2];
        spools[1].law = 2;
        let mut p0 = [[0.0; 2]; 2];
        for j in 0..actuators {
            cylinders[j].s0 = e.s[j];
            let (k0, p1, p2) = cylinders[j].equilibrium(f_eq[j])?;
            spools[j].kappa0 = k0;
            p0[j] = [p1, p2];
        }
        Ok(Setup {
            crane,
            cylinders,
            spools,
            theta0: THETA0,
            p0,
        })
    }

    fn forces(&self, y: &[f64; 8], sd: [f64; 2]) -> [f64; 2] {
        let mut f = [0.0; 2];
        for (j, fj) in f.iter_mut().enumerate().take(self.crane.actuators) {
            *fj = self.cylinders[j].force(y[4 + 2 * j], y[5 + 2 * j], sd[j]);
        }
        f
    }

    fn rhs(&self, t: f64, y: &[f64; 8]) -> [f64; 8] {
        let (q, v) = ([y[0], y[1]], [y[2], y[3]]);
        // The rates do not depend on the forces: evaluate the kinematics first.
        let kin = self.crane.eval(q, v, [0.0; 2]);
        let lambda = self.forces(y, kin.sd);
        let e = self.crane.eval(q, v, lambda);
        let mut dy = [0.0; 8];
        dy[0] = v[0];
        dy[1] = v[1];
        dy[2] = e.accel[0];
        dy[3] = e.accel[1];
        for j in 0..self.crane.actuators {
            let (dp1, dp2) = self.cylinders[j].pressure_rates(
                y[4 + 2 * j],
                y[5 + 2 * j],
                e.s[j],
                e.sd[j],
                self.spools[j].kappa(t),
            );
            dy[4 + 2 * j] = dp1;
            dy[5 + 2 * j] = dp2;
        }
        dy
    }

    fn sample(&self, t: f64, y: &[f64; 8]) -> Sample {
        let (q, v) = ([y[0], y[1]], [y[2], y[3]]);
        let kin = self.crane.eval(q, v, [0.0; 2]);
        let f = self.forces(y, kin.sd);
        let mut kappa = [0.0; 2];
        for (j, k) in kappa.iter_mut().enumerate().take(self.crane.actuators) {
            *k = self.spools[j].kappa(t);
        }
        Sample {
            t,
            theta: q,
            omega: v,
            s: kin.s,
            sd: kin.sd,
            f,
            p1: [y[4], y[6]],
            p2: [y[5], y[7]],
            kappa,
            r: kin.r,
            r_dot: kin.r_dot,
        }
    }

    /// Integrates from 0 to `t_end` with RK4 steps `dt` (the last one shortened to land on
    /// `t_end`), returning the initial sample and every `every`-th step's sample (and the last).
    pub fn run(&self, t_end: f64, dt: f64, every: usize) -> Result<Vec<Sample>, String> {
        if !(dt > 0.0 && t_end >= 0.0 && t_end.is_finite()) {
            return Err(format!(
                "dt = {dt} and t_end = {t_end}: need dt > 0, t_end >= 0"
            ));
        }
        let n = (t_end / dt - 1e-9).ceil().max(0.0) as u64;
        let every = every.max(1) as u64;
        let mut y = [
            self.theta0[0],
            self.theta0[1],
            0.0,
            0.0,
            self.p0[0][0],
            self.p0[0][1],
            self.p0[1][0],
            self.p0[1][1],
        ];
        let mut out = vec![self.sample(0.0, &y)];
        for k in 0..n {
            let t = k as f64 * dt;
            let h = if k + 1 == n { t_end - t } else { dt };
            let add = |a: &[f64; 8], b: &[f64; 8], c: f64| {
                let mut r = *a;
                for i in 0..8 {
                    r[i] += c * b[i];
                }
                r
            };
            let k1 = self.rhs(t, &y);
            let k2 = self.rhs(t + 0.5 * h, &add(&y, &k1, 0.5 * h));
            let k3 = self.rhs(t + 0.5 * h, &add(&y, &k2, 0.5 * h));
            let k4 = self.rhs(t + h, &add(&y, &k3, h));
            for i in 0..8 {
                y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
            }
            if y.iter().any(|x| !x.is_finite()) {
                return Err(format!("the reference diverged at t = {}", t + h));
            }
            if (k + 1) % every == 0 || k + 1 == n {
                out.push(self.sample(t + h, &y));
            }
        }
        Ok(out)
    }
}

/// The paper's monolithic reference with 1 or 2 actuators from 0 to `t_end`, RK4 steps `dt`
/// (0.05 ms recommended), one sample per step (the first at t = 0).
pub fn monolithic_reference(actuators: usize, t_end: f64, dt: f64) -> Result<Vec<Sample>, String> {
    Setup::paper(actuators)?.run(t_end, dt, 1)
}
