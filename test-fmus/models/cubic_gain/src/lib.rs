//! CubicGain: a static (stateless) algebraic block with direct feedthrough,
//! `y = offset + gain u + cubic u^3`, for testing algebraic-loop solvers.
//!
//! Defaults: gain = 1, offset = 0, cubic = 0 (tunable parameters), so by default y = u.
//! The output y depends on the input u only, with the analytic partial derivative
//! `dy/du = gain + 3 cubic u^2` (and dy/dgain = u, dy/doffset = 1, dy/dcubic = u^3).
//! The output is evaluated at the current input: after a step, at the input's value at the
//! end of the step (FMI 2: the end value of the input-derivative polynomial; FMI 3: the value
//! last set, `u` is not an intermediate-update input).
//! Output derivatives (orders 1..=3) are the chain rule with the current input derivatives:
//! with g = gain + 3 cubic u^2, `y' = g u'`, `y'' = 6 cubic u u'^2 + g u''`,
//! `y''' = 6 cubic u'^3 + 18 cubic u u' u'' + g u'''`.

use fmu_kit::{Experiment, Inputs, Model, Values, Variable};

/// Input.
pub const U: u32 = 1;
/// Output `offset + gain u + cubic u^3`.
pub const Y: u32 = 2;
/// Linear gain.
pub const GAIN: u32 = 3;
/// Offset.
pub const OFFSET: u32 = 4;
/// Cubic coefficient.
pub const CUBIC: u32 = 5;

/// The cubic gain block.
#[derive(Default)]
pub struct CubicGain;

/// `dy/du` at `u`.
fn slope(v: &Values, u: f64) -> f64 {
    v.f64(GAIN) + 3.0 * v.f64(CUBIC) * u * u
}

impl Model for CubicGain {
    const NAME: &'static str = "CubicGain";
    const DESCRIPTION: &'static str =
        "Static block with direct feedthrough y = offset + gain u + cubic u^3";
    const MAX_OUTPUT_DERIVATIVE_ORDER: u32 = 3;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 1.0,
        step: 0.1,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(U, "u")
                .input()
                .start(0.0)
                .description("Input"),
            Variable::float64(Y, "y")
                .output()
                .description("Output offset + gain u + cubic u^3")
                .depends_on(&[U]),
            Variable::float64(GAIN, "gain")
                .tunable()
                .start(1.0)
                .description("Linear gain"),
            Variable::float64(OFFSET, "offset")
                .tunable()
                .start(0.0)
                .description("Offset"),
            Variable::float64(CUBIC, "cubic")
                .tunable()
                .start(0.0)
                .description("Cubic coefficient"),
        ]
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let u = v.f64(U);
        let y = v.f64(OFFSET) + v.f64(GAIN) * u + v.f64(CUBIC) * u * u * u;
        v.set_f64(Y, y);
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        if of != Y {
            return None;
        }
        let u = v.f64(U);
        match wrt {
            U => Some(slope(v, u)),
            GAIN => Some(u),
            OFFSET => Some(1.0),
            CUBIC => Some(u * u * u),
            _ => None,
        }
    }

    fn output_derivative(
        &self,
        v: &Values,
        inputs: &Inputs<'_>,
        _time: f64,
        vr: u32,
        order: u32,
    ) -> Option<f64> {
        if vr != Y {
            return None;
        }
        let d = inputs.taylor(U);
        let u = v.f64(U);
        let (g, c) = (slope(v, u), v.f64(CUBIC));
        match order {
            1 => Some(g * d[1]),
            2 => Some(6.0 * c * u * d[1] * d[1] + g * d[2]),
            3 => Some(6.0 * c * d[1].powi(3) + 18.0 * c * u * d[1] * d[2] + g * d[3]),
            _ => None,
        }
    }
}

fmu_kit::export_fmu!(CubicGain);

#[cfg(test)]
mod tests;
