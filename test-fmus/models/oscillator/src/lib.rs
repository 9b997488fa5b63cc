//! Oscillator: a force-driven single mass, `m x'' = F - c x - d v`.
//!
//! Defaults: m = 1 kg, c = 1 N/m, d = 0.1 N·s/m, x0 = 1 m, v0 = 0 m/s (all fixed parameters).
//! Outputs x, v (states, no direct feedthrough) and a = (F - c x - d v) / m (direct feedthrough
//! of F). The model is linear, so each step is exact for inputs that are cubics in time: the
//! matrix exponential of the system augmented with the input's Taylor coefficients.
//! Output derivatives (orders 1..=3) are time derivatives along the trajectory with the
//! current input derivatives: x' = v, x'' = v' = a, and a^(k) = (F^(k) - c v^(k-1)... ) / m,
//! i.e. a' = (F' - c v - d a) / m, a'' = (F'' - c a - d a') / m, a''' = (F''' - c a' - d a'') / m.

use fmu_kit::nalgebra::DMatrix;
use fmu_kit::{linear_step, Experiment, Inputs, Model, Values, Variable};

/// Position (state).
pub const X: u32 = 1;
/// Velocity (state).
pub const V: u32 = 2;
/// Acceleration (direct feedthrough of F).
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

/// The oscillator model.
#[derive(Default)]
pub struct Oscillator;

struct Params {
    m: f64,
    c: f64,
    d: f64,
}

fn params(v: &Values) -> Params {
    Params {
        m: v.f64(M),
        c: v.f64(C),
        d: v.f64(D),
    }
}

impl Model for Oscillator {
    const NAME: &'static str = "Oscillator";
    const DESCRIPTION: &'static str = "Force-driven single-mass oscillator m x'' = F - c x - d v";
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
                .depends_on(&[F]),
            Variable::float64(DER_X, "der(x)")
                .unit("m/s")
                .derivative_of(X)
                .depends_on(&[V]),
            Variable::float64(DER_V, "der(v)")
                .unit("m/s2")
                .derivative_of(V)
                .depends_on(&[X, V, F]),
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
        ]
    }

    fn initialize(&self, v: &mut Values, _cx: &fmu_kit::Context) -> Result<(), String> {
        v.set_f64(X, v.f64(X0));
        v.set_f64(V, v.f64(V0));
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let p = params(v);
        if p.m.is_nan() || p.m <= 0.0 {
            return Err(format!("mass m = {} must be positive", p.m));
        }
        let a = (v.f64(F) - p.c * v.f64(X) - p.d * v.f64(V)) / p.m;
        v.set_f64(DER_X, v.f64(V));
        v.set_f64(DER_V, a);
        v.set_f64(A, a);
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        let p = params(v);
        let d_acc = match wrt {
            F => 1.0 / p.m,
            X => -p.c / p.m,
            V => -p.d / p.m,
            _ => return None,
        };
        Some(match of {
            A | DER_V => d_acc,
            DER_X => f64::from(u8::from(wrt == V)),
            X | V => f64::from(u8::from(wrt == of)),
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
        let f = inputs.taylor(F);
        // Time derivatives of a: a^(0..=3).
        let mut acc = [v.f64(A), 0.0, 0.0, 0.0];
        let vel = v.f64(V);
        acc[1] = (f[1] - p.c * vel - p.d * acc[0]) / p.m;
        acc[2] = (f[2] - p.c * acc[0] - p.d * acc[1]) / p.m;
        acc[3] = (f[3] - p.c * acc[1] - p.d * acc[2]) / p.m;
        let k = order as usize;
        match vr {
            X if k == 1 => Some(vel),
            X => Some(acc[k - 2]),
            V => Some(acc[k - 1]),
            A => Some(acc[k]),
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
        let a = DMatrix::from_row_slice(2, 2, &[0.0, 1.0, -p.c / p.m, -p.d / p.m]);
        let b = DMatrix::from_row_slice(2, 1, &[0.0, 1.0 / p.m]);
        linear_step(&a, &b, x, &[inputs.taylor(F)], h);
        Ok(())
    }
}

fmu_kit::export_fmu!(Oscillator);

#[cfg(test)]
mod tests;
