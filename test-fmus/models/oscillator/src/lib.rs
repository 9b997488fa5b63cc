//! Oscillator: a single mass driven by a force and, optionally, through a spring-damper by a
//! moving base (another body):
//! `m x'' = F - c x - d v + cc (x_in - x) + dc (v_in - v)`.
//!
//! Defaults: m = 1 kg, c = 1 N/m, d = 0.1 N·s/m, x0 = 1 m, v0 = 0 m/s, cc = 0 N/m,
//! dc = 0 N·s/m (all fixed parameters). With cc = dc = 0 the inputs `x_in`, `v_in` have no
//! effect and the model is the plain force-driven oscillator `m x'' = F - c x - d v`.
//!
//! Coupling (force/displacement decomposition of the two-mass oscillator): `x_in`, `v_in` are
//! the position and velocity of the body at the other end of a coupling spring-damper
//! (stiffness cc, damping dc). The spring-damper exerts `cc (x_in - x) + dc (v_in - v)` on this
//! mass and the opposite force on the other body; the output `Fc = cc (x - x_in) + dc (v - v_in)`
//! is the force on the OTHER body, so it connects straight to that body's force input.
//!
//! Outputs x, v (states, no direct feedthrough), a = der(v) (direct feedthrough of F, x_in and
//! v_in) and Fc (direct feedthrough of x_in and v_in). The model is linear, so each step is
//! exact for inputs that are cubics in time: the matrix exponential of the system augmented
//! with one chain of Taylor coefficients per input (F always; x_in when cc != 0; v_in when
//! dc != 0, so the defaults give exactly the single-input computation).
//!
//! Integral outputs (for the integral-extended coupling, which needs the integral of a coupled
//! output over a macro step): the states `x_int` = integral of x and `Fc_int` = integral of
//! Fc over time since the start, both 0 initially; the integral of v is x itself.
//!
//! Partial derivatives (directional derivatives) are analytic with respect to the states x, v,
//! the inputs F, x_in, v_in and the parameters m, c, d, cc, dc; those with respect to x0 and v0
//! (which act through the initial states in Initialization Mode) are left to the kit's finite
//! differences.
//!
//! Output derivatives (orders 1..=3) are time derivatives along the trajectory with the current
//! input derivatives (each input's own Taylor coefficients; v_in is not assumed to equal
//! x_in'). With k = c + cc and e = d + dc: x' = v, x'' = v' = a and, for j >= 1,
//! `a^(j) = (F^(j) + cc x_in^(j) + dc v_in^(j) - k x^(j) - e v^(j)) / m` where x^(1) = v and
//! x^(j) = a^(j-2), v^(j) = a^(j-1); and `Fc^(j) = cc (x^(j) - x_in^(j)) + dc (v^(j) - v_in^(j))`;
//! `x_int^(j) = x^(j-1)` and `Fc_int^(j) = Fc^(j-1)`.

use fmu_kit::nalgebra::DMatrix;
use fmu_kit::{linear_step, Experiment, Inputs, Model, Values, Variable};

/// Position (state).
pub const X: u32 = 1;
/// Velocity (state).
pub const V: u32 = 2;
/// Acceleration (direct feedthrough of F, x_in, v_in).
pub const A: u32 = 3;
/// der(x).
pub const DER_X: u32 = 4;
/// der(v).
pub const DER_V: u32 = 5;
/// Input force.
pub const F: u32 = 6;
/// Mass.
pub const M: u32 = 7;
/// Stiffness.
pub const C: u32 = 8;
/// Damping.
pub const D: u32 = 9;
/// Initial position.
pub const X0: u32 = 10;
/// Initial velocity.
pub const V0: u32 = 11;
/// Input: position of the body at the other end of the coupling spring-damper.
pub const X_IN: u32 = 12;
/// Input: velocity of the body at the other end of the coupling spring-damper.
pub const V_IN: u32 = 13;
/// Coupling stiffness.
pub const CC: u32 = 14;
/// Coupling damping.
pub const DC: u32 = 15;
/// Output: force of the coupling spring-damper on the other body,
/// `cc (x - x_in) + dc (v - v_in)`.
pub const F_C: u32 = 16;
/// Output (state): the integral of x over time since the start.
pub const X_INT: u32 = 17;
/// der(x_int) = x.
pub const DER_X_INT: u32 = 18;
/// Output (state): the integral of Fc over time since the start.
pub const FC_INT: u32 = 19;
/// der(Fc_int) = Fc.
pub const DER_FC_INT: u32 = 20;

/// The oscillator model.
#[derive(Default)]
pub struct Oscillator;

struct Params {
    m: f64,
    c: f64,
    d: f64,
    cc: f64,
    dc: f64,
}

fn params(v: &Values) -> Params {
    Params {
        m: v.f64(M),
        c: v.f64(C),
        d: v.f64(D),
        cc: v.f64(CC),
        dc: v.f64(DC),
    }
}

/// Force of the coupling spring-damper on this mass, `cc (x_in - x) + dc (v_in - v)`.
fn coupling_on_self(v: &Values, p: &Params) -> f64 {
    p.cc * (v.f64(X_IN) - v.f64(X)) + p.dc * (v.f64(V_IN) - v.f64(V))
}

/// Acceleration from the current values.
fn acceleration(v: &Values, p: &Params) -> f64 {
    (v.f64(F) - p.c * v.f64(X) - p.d * v.f64(V) + coupling_on_self(v, p)) / p.m
}

impl Model for Oscillator {
    const NAME: &'static str = "Oscillator";
    const MODEL_EXCHANGE: bool = true;
    const DESCRIPTION: &'static str =
        "Single-mass oscillator m x'' = F - c x - d v + cc (x_in - x) + dc (v_in - v)";
    const EXACT_STEP: bool = true;
    const MAX_OUTPUT_DERIVATIVE_ORDER: u32 = 3;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 20.0,
        step: 0.01,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(X, "x")
                .output()
                .unit("m")
                .description("Position")
                .depends_on(&[]),
            Variable::float64(V, "v")
                .output()
                .unit("m/s")
                .description("Velocity")
                .depends_on(&[]),
            Variable::float64(A, "a")
                .output()
                .unit("m/s2")
                .description("Acceleration")
                .depends_on(&[F, X_IN, V_IN]),
            Variable::float64(DER_X, "der(x)")
                .unit("m/s")
                .derivative_of(X)
                .depends_on(&[V]),
            Variable::float64(DER_V, "der(v)")
                .unit("m/s2")
                .derivative_of(V)
                .depends_on(&[X, V, F, X_IN, V_IN]),
            Variable::float64(F, "F")
                .input()
                .start(0.0)
                .unit("N")
                .description("Force on the mass")
                .intermediate_update(),
            Variable::float64(M, "m")
                .parameter()
                .start(1.0)
                .unit("kg")
                .min(0.0)
                .description("Mass (> 0)"),
            Variable::float64(C, "c")
                .parameter()
                .start(1.0)
                .unit("N/m")
                .min(0.0)
                .description("Stiffness"),
            Variable::float64(D, "d")
                .parameter()
                .start(0.1)
                .unit("N.s/m")
                .min(0.0)
                .description("Damping"),
            Variable::float64(X0, "x0")
                .parameter()
                .start(1.0)
                .unit("m")
                .description("Initial position"),
            Variable::float64(V0, "v0")
                .parameter()
                .start(0.0)
                .unit("m/s")
                .description("Initial velocity"),
            Variable::float64(X_IN, "x_in")
                .input()
                .start(0.0)
                .unit("m")
                .description("Position of the body at the other end of the coupling spring-damper")
                .intermediate_update(),
            Variable::float64(V_IN, "v_in")
                .input()
                .start(0.0)
                .unit("m/s")
                .description("Velocity of the body at the other end of the coupling spring-damper")
                .intermediate_update(),
            Variable::float64(CC, "cc")
                .parameter()
                .start(0.0)
                .unit("N/m")
                .min(0.0)
                .description("Coupling stiffness (spring between x and x_in)"),
            Variable::float64(DC, "dc")
                .parameter()
                .start(0.0)
                .unit("N.s/m")
                .min(0.0)
                .description("Coupling damping (damper between v and v_in)"),
            Variable::float64(F_C, "Fc")
                .output()
                .unit("N")
                .description(
                    "Force of the coupling spring-damper on the other body (at x_in): \
                     cc (x - x_in) + dc (v - v_in); this mass feels -Fc",
                )
                .depends_on(&[X_IN, V_IN]),
            Variable::float64(X_INT, "x_int")
                .output()
                .unit("m.s")
                .description("Integral of x over time since the start (0 initially)")
                .depends_on(&[]),
            Variable::float64(DER_X_INT, "der(x_int)")
                .unit("m")
                .derivative_of(X_INT)
                .depends_on(&[X]),
            Variable::float64(FC_INT, "Fc_int")
                .output()
                .unit("N.s")
                .description("Integral of Fc over time since the start (0 initially)")
                .depends_on(&[]),
            Variable::float64(DER_FC_INT, "der(Fc_int)")
                .unit("N")
                .derivative_of(FC_INT)
                .depends_on(&[X, V, X_IN, V_IN]),
        ]
    }

    fn initialize(&self, v: &mut Values, _cx: &fmu_kit::Context) -> Result<(), String> {
        v.set_f64(X, v.f64(X0));
        v.set_f64(V, v.f64(V0));
        v.set_f64(X_INT, 0.0);
        v.set_f64(FC_INT, 0.0);
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let p = params(v);
        if p.m.is_nan() || p.m <= 0.0 {
            return Err(format!("mass m = {} must be positive", p.m));
        }
        let a = acceleration(v, &p);
        // The force on the other body; +0.0 instead of -0.0 when uncoupled.
        let fc = p.cc * (v.f64(X) - v.f64(X_IN)) + p.dc * (v.f64(V) - v.f64(V_IN));
        let fc = if fc == 0.0 { 0.0 } else { fc };
        v.set_f64(DER_X, v.f64(V));
        v.set_f64(DER_V, a);
        v.set_f64(A, a);
        v.set_f64(F_C, fc);
        v.set_f64(DER_X_INT, v.f64(X));
        v.set_f64(DER_FC_INT, fc);
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        // x0 and v0 act through the initial states in Initialization Mode only: leave them to
        // finite differences, which know the phase.
        if !matches!(
            wrt,
            X | V | F | X_IN | V_IN | M | C | D | CC | DC | X_INT | FC_INT
        ) {
            return None;
        }
        let p = params(v);
        let delta = |k: u32| f64::from(u8::from(wrt == k));
        Some(match of {
            X | V | X_INT | FC_INT => delta(of),
            DER_X => delta(V),
            DER_X_INT => delta(X),
            A | DER_V if matches!(wrt, X_INT | FC_INT) => 0.0,
            A | DER_V => match wrt {
                F => 1.0 / p.m,
                X => -(p.c + p.cc) / p.m,
                V => -(p.d + p.dc) / p.m,
                X_IN => p.cc / p.m,
                V_IN => p.dc / p.m,
                M => -acceleration(v, &p) / p.m,
                C => -v.f64(X) / p.m,
                D => -v.f64(V) / p.m,
                CC => (v.f64(X_IN) - v.f64(X)) / p.m,
                _ => (v.f64(V_IN) - v.f64(V)) / p.m, // DC
            },
            F_C | DER_FC_INT => match wrt {
                X => p.cc,
                V => p.dc,
                X_IN => -p.cc,
                V_IN => -p.dc,
                CC => v.f64(X) - v.f64(X_IN),
                DC => v.f64(V) - v.f64(V_IN),
                _ => 0.0,
            },
            _ => return None,
        })
    }

    fn output_derivative(
        &self,
        v: &Values,
        inputs: &Inputs<'_>,
        _time: f64,
        vr: u32,
        order: u32,
    ) -> Option<f64> {
        let p = params(v);
        let (k_tot, e_tot) = (p.c + p.cc, p.d + p.dc);
        let f = inputs.taylor(F);
        let xi = inputs.taylor(X_IN);
        let vi = inputs.taylor(V_IN);
        let vel = v.f64(V);
        // Time derivatives of a: a^(0..=3); of x and v: x^(j), v^(j) for j = 0..=3.
        let mut acc = [v.f64(A), 0.0, 0.0, 0.0];
        let mut xd = [v.f64(X), vel, acc[0], 0.0];
        let mut vd = [vel, acc[0], 0.0, 0.0];
        for j in 1..4 {
            acc[j] = (f[j] + p.cc * xi[j] + p.dc * vi[j] - k_tot * xd[j] - e_tot * vd[j]) / p.m;
            if j + 1 < 4 {
                vd[j + 1] = acc[j];
            }
            if j + 2 < 4 {
                xd[j + 2] = acc[j];
            }
        }
        let k = order as usize;
        if !(1..4).contains(&k) {
            return None;
        }
        let fc = |j: usize| p.cc * (xd[j] - xi[j]) + p.dc * (vd[j] - vi[j]);
        match vr {
            X => Some(xd[k]),
            V => Some(vd[k]),
            A => Some(acc[k]),
            F_C => Some(fc(k)),
            // The integrals' derivatives are one order lower of what they integrate.
            X_INT => Some(xd[k - 1]),
            FC_INT => Some(fc(k - 1)),
            _ => None,
        }
    }

    fn exact_step(
        &self,
        v: &Values,
        inputs: &Inputs<'_>,
        _t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), String> {
        let p = params(v);
        // States x, v, x_int, Fc_int.
        #[rustfmt::skip]
        let a = DMatrix::from_row_slice(4, 4, &[
            0.0, 1.0, 0.0, 0.0,
            -(p.c + p.cc) / p.m, -(p.d + p.dc) / p.m, 0.0, 0.0,
            1.0, 0.0, 0.0, 0.0,
            p.cc, p.dc, 0.0, 0.0,
        ]);
        // One input chain per input that acts: F always, x_in / v_in only when coupled.
        // Columns: d(v)/d(input) and d(Fc_int)/d(input).
        let mut gains = vec![(1.0 / p.m, 0.0)];
        let mut taylor = vec![inputs.taylor(F)];
        for (vr, gain) in [(X_IN, p.cc), (V_IN, p.dc)] {
            if gain != 0.0 {
                gains.push((gain / p.m, -gain));
                taylor.push(inputs.taylor(vr));
            }
        }
        let mut b = DMatrix::zeros(4, gains.len());
        for (j, (on_v, on_fc_int)) in gains.into_iter().enumerate() {
            b[(1, j)] = on_v;
            b[(3, j)] = on_fc_int;
        }
        linear_step(&a, &b, x, &taylor, h);
        Ok(())
    }
}

fmu_kit::export_fmu!(Oscillator);

#[cfg(test)]
mod tests;
