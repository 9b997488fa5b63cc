//! Crane: the planar crane multibody system of Peiret et al. (2018), "Multibody system dynamics
//! interface modelling for stable multirate co-simulation of multiphysics systems", Sec. 4.1
//! (single-actuated) and 4.1.1 (double-actuated), Table 1, as the mechanical side of a
//! force–displacement co-simulation with hydraulic cylinders (HydraulicCylinder FMUs).
//!
//! Equations: see [`mbs`]. Independent coordinates q = [θ1, θ2], states θ1, θ2, ω1 = θ̇1,
//! ω2 = θ̇2 (outputs `theta1`, `theta2`, `omega1`, `omega2`), starting at rest at
//! (`theta1_0`, `theta2_0`).
//!
//! Inputs: actuator forces `f1`, `f2` (λ_i, positive pushing the actuator's ends apart; `f2` is
//! ignored with `actuators` = 1). The default `f1` = 8829 N is the force that holds the crane at
//! rest in its initial configuration (also given by the calculated parameter `f1_eq`).
//!
//! Outputs per actuator j: length `sj`, rate `sdj`, acceleration `sddj` (direct feedthrough of
//! `f1`, `f2`, declared in the model structure, ∂sdd/∂f = W = A_i M⁻¹ A_iᵀ, analytic directional
//! derivatives); the reduced interface model (option A of the notes): effective mass `M11`,
//! `M12`, `M22` (M̃ = W⁻¹) and effective force `ft1`, `ft2` (f̃ = M̃ (A_i M⁻¹ (f − c) + Ȧ_i v),
//! independent of the forces), so that `sdd = W (f + f̃)`; the point R (`xR`, `yR`) and its
//! velocity (`vxR`, `vyR`). With one actuator, `s2`, `sd2`, `sdd2`, `M12`, `M22` and `ft2` are 0
//! (M̃ is the 1×1 `M11`). M̃ becomes infinite where an actuator loses its leverage (θ1 = 0 or π
//! for actuator 1), far from the paper's motion.
//!
//! **Integrators** (parameter `integrator`):
//! - 0 (default): symplectic Euler, Eq. 38 of the paper: `v⁺ = v + h v̇(q, v, λ)`, `q⁺ = q + h v⁺`.
//!   With `h` = 0 (default) one step per doStep, i.e. the step is the communication step, as the
//!   paper's MBS with h_M; with `h` > 0 a doStep of length H takes n = ⌈H/h⌉ equal steps H/n.
//! - 1: classical RK4 with step `h` (1e-4 s when `h` = 0), equally divided as above, for
//!   accurate references.
//!
//! The forces follow the importer's input trajectory (held over the doStep for a ZOH master),
//! sampled at the start of each internal step.
//!
//! [`reference`] holds a pure-Rust monolithic reference (crane and hydraulics integrated
//! together) for tests; [`hydraulics`] is the HydraulicCylinder crate's equation file, included.

// `!(x > y)` is deliberate: NaN must fail every range check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

#[path = "../../hydraulic_cylinder/src/hydraulics.rs"]
pub mod hydraulics;
pub mod mbs;
pub mod reference;

use fmu_kit::{Context, Experiment, Inputs, Model, Values, Variable};
use mbs::{Crane as CraneData, THETA0};

pub use reference::{monolithic_reference, Sample, Setup};

/// State and output θ1 [rad].
pub const THETA1: u32 = 1;
/// State and output θ2 [rad].
pub const THETA2: u32 = 2;
/// State and output θ̇1 [rad/s].
pub const OMEGA1: u32 = 3;
/// State and output θ̇2 [rad/s].
pub const OMEGA2: u32 = 4;
/// der(theta1).
pub const DER_THETA1: u32 = 5;
/// der(theta2).
pub const DER_THETA2: u32 = 6;
/// der(omega1).
pub const DER_OMEGA1: u32 = 7;
/// der(omega2).
pub const DER_OMEGA2: u32 = 8;
/// Input: force of actuator 1 [N].
pub const F1: u32 = 10;
/// Input: force of actuator 2 [N].
pub const F2: u32 = 11;
/// Output s1 [m].
pub const S1: u32 = 20;
/// Output ṡ1 [m/s].
pub const SD1: u32 = 21;
/// Output s̈1 [m/s²].
pub const SDD1: u32 = 22;
/// Output s2 [m].
pub const S2: u32 = 23;
/// Output ṡ2 [m/s].
pub const SD2: u32 = 24;
/// Output s̈2 [m/s²].
pub const SDD2: u32 = 25;
/// Output M̃11 [kg].
pub const M11: u32 = 26;
/// Output M̃12 [kg].
pub const M12: u32 = 27;
/// Output M̃22 [kg].
pub const M22: u32 = 28;
/// Output f̃1 [N].
pub const FT1: u32 = 29;
/// Output f̃2 [N].
pub const FT2: u32 = 30;
/// Output x_R [m].
pub const XR: u32 = 31;
/// Output y_R [m].
pub const YR: u32 = 32;
/// Output ẋ_R [m/s].
pub const VXR: u32 = 33;
/// Output ẏ_R [m/s].
pub const VYR: u32 = 34;
/// Parameter: number of actuators (Int32, 1 or 2).
pub const ACTUATORS: u32 = 40;
/// Parameter L [m].
pub const L: u32 = 41;
/// Parameter L_h [m].
pub const L_H: u32 = 42;
/// Parameter m [kg].
pub const M: u32 = 43;
/// Parameter m_p [kg].
pub const M_P: u32 = 44;
/// Parameter m_h [kg].
pub const M_H: u32 = 45;
/// Parameter x_B [m].
pub const X_B: u32 = 46;
/// Parameter y_B [m].
pub const Y_B: u32 = 47;
/// Parameter θ1,0 [rad].
pub const THETA1_0: u32 = 48;
/// Parameter θ2,0 [rad].
pub const THETA2_0: u32 = 49;
/// Parameter g [m/s²] (along y).
pub const G: u32 = 50;
/// Parameter internal step h [s].
pub const H: u32 = 51;
/// Parameter integrator (Int32: 0 symplectic Euler, 1 RK4).
pub const INTEGRATOR: u32 = 52;
/// Calculated parameter: force of actuator 1 holding the crane at rest at θ0 [N].
pub const F1_EQ: u32 = 53;
/// Calculated parameter: force of actuator 2 holding the crane at rest at θ0 [N].
pub const F2_EQ: u32 = 54;

/// RK4 step of `integrator` = 1 when `h` = 0 [s].
pub const RK4_DEFAULT_STEP: f64 = 1e-4;

/// The crane model.
#[derive(Default)]
pub struct Crane;

/// The crane data from the parameters.
pub fn crane_data(v: &Values) -> CraneData {
    CraneData {
        actuators: usize::try_from(v.i32(ACTUATORS)).unwrap_or(0),
        l: v.f64(L),
        l_h: v.f64(L_H),
        m: v.f64(M),
        m_p: v.f64(M_P),
        m_h: v.f64(M_H),
        b: [v.f64(X_B), v.f64(Y_B)],
        g: v.f64(G),
    }
}

fn forces(v: &Values) -> [f64; 2] {
    [v.f64(F1), v.f64(F2)]
}

/// Outputs that depend on the states only.
const STATES: [u32; 4] = [THETA1, THETA2, OMEGA1, OMEGA2];

impl Model for Crane {
    const NAME: &'static str = "Crane";
    const DESCRIPTION: &'static str =
        "Planar crane multibody system with 1 or 2 actuators (Peiret et al. 2018)";
    const EXACT_STEP: bool = true;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 10.0,
        step: 0.01,
    };

    fn variables(&self) -> Vec<Variable> {
        let d = CraneData::paper(1);
        let all = [THETA1, THETA2, OMEGA1, OMEGA2, F1, F2];
        let out = |vr: u32, name: &str, unit: &str, desc: &str| {
            Variable::float64(vr, name)
                .output()
                .unit(unit)
                .description(desc)
                .depends_on(&STATES)
        };
        let par = |vr: u32, name: &str, start: f64, unit: &str, desc: &str| {
            Variable::float64(vr, name)
                .parameter()
                .start(start)
                .unit(unit)
                .description(desc)
        };
        vec![
            out(THETA1, "theta1", "rad", "Angle of link 1 (state)").depends_on(&[THETA1]),
            out(THETA2, "theta2", "rad", "Angle of link 2 (state)").depends_on(&[THETA2]),
            out(
                OMEGA1,
                "omega1",
                "rad/s",
                "Angular velocity of link 1 (state)",
            )
            .depends_on(&[OMEGA1]),
            out(
                OMEGA2,
                "omega2",
                "rad/s",
                "Angular velocity of link 2 (state)",
            )
            .depends_on(&[OMEGA2]),
            Variable::float64(DER_THETA1, "der(theta1)")
                .unit("rad/s")
                .derivative_of(THETA1)
                .depends_on(&[OMEGA1]),
            Variable::float64(DER_THETA2, "der(theta2)")
                .unit("rad/s")
                .derivative_of(THETA2)
                .depends_on(&[OMEGA2]),
            Variable::float64(DER_OMEGA1, "der(omega1)")
                .unit("rad/s2")
                .derivative_of(OMEGA1)
                .depends_on(&all),
            Variable::float64(DER_OMEGA2, "der(omega2)")
                .unit("rad/s2")
                .derivative_of(OMEGA2)
                .depends_on(&all),
            Variable::float64(F1, "f1")
                .input()
                .start(8829.0)
                .unit("N")
                .description("Force of actuator 1 (lambda_1, > 0 extends)"),
            Variable::float64(F2, "f2")
                .input()
                .start(0.0)
                .unit("N")
                .description("Force of actuator 2 (lambda_2; ignored with one actuator)"),
            out(S1, "s1", "m", "Length of actuator 1"),
            out(SD1, "sd1", "m/s", "Rate of actuator 1"),
            out(
                SDD1,
                "sdd1",
                "m/s2",
                "Acceleration of actuator 1 (feedthrough of f1, f2)",
            )
            .depends_on(&all),
            out(S2, "s2", "m", "Length of actuator 2 (0 with one actuator)"),
            out(
                SD2,
                "sd2",
                "m/s",
                "Rate of actuator 2 (0 with one actuator)",
            ),
            out(
                SDD2,
                "sdd2",
                "m/s2",
                "Acceleration of actuator 2 (feedthrough of f1, f2; 0 with one actuator)",
            )
            .depends_on(&all),
            out(
                M11,
                "M11",
                "kg",
                "Effective mass (inverse mobility) entry 1,1",
            ),
            out(
                M12,
                "M12",
                "kg",
                "Effective mass entry 1,2 (0 with one actuator)",
            ),
            out(
                M22,
                "M22",
                "kg",
                "Effective mass entry 2,2 (0 with one actuator)",
            ),
            out(FT1, "ft1", "N", "Effective force 1 (independent of f1, f2)"),
            out(FT2, "ft2", "N", "Effective force 2 (0 with one actuator)"),
            out(XR, "xR", "m", "x of the point mass R"),
            out(YR, "yR", "m", "y of the point mass R"),
            out(VXR, "vxR", "m/s", "x velocity of R"),
            out(VYR, "vyR", "m/s", "y velocity of R"),
            Variable::int32(ACTUATORS, "actuators")
                .parameter()
                .start(1)
                .min(1.0)
                .max(2.0)
                .description("1: single-actuated crane, 2: double-actuated crane"),
            par(L, "L", d.l, "m", "Length of link 1"),
            par(L_H, "L_h", d.l_h, "m", "Length of link 2 (massless)"),
            par(M, "m", d.m, "kg", "Distributed mass of link 1"),
            par(M_P, "m_p", d.m_p, "kg", "Point mass at Q (tip of link 1)"),
            par(M_H, "m_h", d.m_h, "kg", "Point mass at R (tip of link 2)"),
            par(
                X_B,
                "x_B",
                d.b[0],
                "m",
                "x of the base point B of actuator 1",
            ),
            par(
                Y_B,
                "y_B",
                d.b[1],
                "m",
                "y of the base point B of actuator 1",
            ),
            par(
                THETA1_0,
                "theta1_0",
                THETA0[0],
                "rad",
                "Initial angle of link 1",
            ),
            par(
                THETA2_0,
                "theta2_0",
                THETA0[1],
                "rad",
                "Initial angle of link 2",
            ),
            par(G, "g", d.g, "m/s2", "Gravity along y"),
            par(
                H,
                "h",
                0.0,
                "s",
                "Internal step (0: one symplectic Euler step per doStep; RK4: 1e-4 s)",
            )
            .min(0.0),
            Variable::int32(INTEGRATOR, "integrator")
                .parameter()
                .start(0)
                .min(0.0)
                .max(1.0)
                .description("0: symplectic Euler (Eq. 38), 1: RK4"),
            Variable::float64(F1_EQ, "f1_eq")
                .calculated_parameter()
                .unit("N")
                .description("Force of actuator 1 holding the crane at rest at theta_0"),
            Variable::float64(F2_EQ, "f2_eq")
                .calculated_parameter()
                .unit("N")
                .description("Force of actuator 2 holding the crane at rest at theta_0"),
        ]
    }

    fn initialize(&self, v: &mut Values, _cx: &Context) -> Result<(), String> {
        let c = crane_data(v);
        c.check()?;
        let q0 = [v.f64(THETA1_0), v.f64(THETA2_0)];
        v.set_f64(THETA1, q0[0]);
        v.set_f64(THETA2, q0[1]);
        v.set_f64(OMEGA1, 0.0);
        v.set_f64(OMEGA2, 0.0);
        let feq = c.equilibrium_forces(q0);
        v.set_f64(F1_EQ, feq[0]);
        v.set_f64(F2_EQ, feq[1]);
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let c = crane_data(v);
        c.check()?;
        let q = [v.f64(THETA1), v.f64(THETA2)];
        let w = [v.f64(OMEGA1), v.f64(OMEGA2)];
        let e = c.eval(q, w, forces(v));
        for (vr, x) in [
            (DER_THETA1, w[0]),
            (DER_THETA2, w[1]),
            (DER_OMEGA1, e.accel[0]),
            (DER_OMEGA2, e.accel[1]),
            (S1, e.s[0]),
            (SD1, e.sd[0]),
            (SDD1, e.sdd[0]),
            (S2, e.s[1]),
            (SD2, e.sd[1]),
            (SDD2, e.sdd[1]),
            (M11, e.m_eff[0][0]),
            (M12, e.m_eff[0][1]),
            (M22, e.m_eff[1][1]),
            (FT1, e.f_eff[0]),
            (FT2, e.f_eff[1]),
            (XR, e.r[0]),
            (YR, e.r[1]),
            (VXR, e.r_dot[0]),
            (VYR, e.r_dot[1]),
        ] {
            v.set_f64(vr, x);
        }
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        if !matches!(wrt, F1 | F2) {
            return None;
        }
        let c = crane_data(v);
        if c.check().is_err() {
            return None;
        }
        let k = usize::from(wrt == F2);
        let two = c.actuators == 2;
        let e = || {
            c.eval(
                [v.f64(THETA1), v.f64(THETA2)],
                [v.f64(OMEGA1), v.f64(OMEGA2)],
                forces(v),
            )
        };
        Some(match of {
            SDD1 | SDD2 => {
                let j = usize::from(of == SDD2);
                if k == 1 && !two {
                    0.0
                } else {
                    e().w[j][k]
                }
            }
            DER_OMEGA1 | DER_OMEGA2 => {
                if k == 1 && !two {
                    0.0
                } else {
                    // ∂v̇/∂λ_k = M⁻¹ A_kᵀ
                    let e = e();
                    let m = e.mass;
                    let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
                    let a = e.a[k];
                    if of == DER_OMEGA1 {
                        (m[1][1] * a[0] - m[0][1] * a[1]) / det
                    } else {
                        (-m[1][0] * a[0] + m[0][0] * a[1]) / det
                    }
                }
            }
            _ => 0.0,
        })
    }

    fn exact_step(
        &self,
        v: &Values,
        inputs: &Inputs<'_>,
        t: f64,
        span: f64,
        x: &mut [f64],
    ) -> Result<(), String> {
        let [th1, th2, om1, om2] = x else {
            return Err(format!("expected 4 states, got {}", x.len()));
        };
        let c = crane_data(v);
        c.check()?;
        let h = v.f64(H);
        if !(h >= 0.0 && h.is_finite()) {
            return Err(format!("internal step h = {h} must be >= 0"));
        }
        let rk4 = match v.i32(INTEGRATOR) {
            0 => false,
            1 => true,
            i => return Err(format!("integrator = {i} must be 0 or 1")),
        };
        let step = if h > 0.0 {
            h
        } else if rk4 {
            RK4_DEFAULT_STEP
        } else {
            f64::INFINITY
        };
        let n = if step.is_finite() {
            (span / step - 1e-9).ceil().clamp(1.0, 1e9) as u64
        } else {
            1
        };
        let hs = span / n as f64;
        let (mut q, mut w) = ([*th1, *th2], [*om1, *om2]);
        for k in 0..n {
            let tk = t + span * (k as f64) / (n as f64);
            let lambda = [inputs.at(F1, tk), inputs.at(F2, tk)];
            if rk4 {
                c.rk4(&mut q, &mut w, lambda, hs);
            } else {
                c.symplectic_euler(&mut q, &mut w, lambda, hs);
            }
        }
        if !(q.iter().chain(&w).all(|x| x.is_finite())) {
            return Err(format!("the crane's states diverged at t = {}", t + span));
        }
        [*th1, *th2, *om1, *om2] = [q[0], q[1], w[0], w[1]];
        Ok(())
    }
}

fmu_kit::export_fmu!(Crane);

#[cfg(test)]
mod tests;
