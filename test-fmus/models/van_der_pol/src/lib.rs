//! VanDerPol: the Van der Pol oscillator of the Modelica Reference FMUs,
//! `x0' = x1`, `x1' = mu (1 - x0²) x1 - x0`.
//!
//! States and outputs x0 (start 2) and x1 (start 0), fixed parameter mu (1). Directional
//! derivatives are analytic (`partial`); the kit integrates with RK4 at an internal step of
//! 1e-4 s, accurate to ~1e-12 at the default communication step of 1e-2 s.

use fmu_kit::{Context, Experiment, Model, Values, Variable};

/// First state (position), output.
pub const X0: u32 = 1;
/// der(x0).
pub const DER_X0: u32 = 2;
/// Second state (velocity), output.
pub const X1: u32 = 3;
/// der(x1).
pub const DER_X1: u32 = 4;
/// Damping parameter.
pub const MU: u32 = 5;

/// Internal RK4 step size.
pub const INTERNAL_STEP: f64 = 1e-4;

/// The Van der Pol oscillator.
#[derive(Default)]
pub struct VanDerPol;

impl Model for VanDerPol {
    const NAME: &'static str = "VanDerPol";
    const MODEL_EXCHANGE: bool = true;
    const DESCRIPTION: &'static str =
        "Van der Pol oscillator x0' = x1, x1' = mu (1 - x0^2) x1 - x0";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 20.0,
        step: 1e-2,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(X0, "x0")
                .output()
                .start(2.0)
                .description("the first state")
                .depends_on(&[]),
            Variable::float64(DER_X0, "der(x0)")
                .derivative_of(X0)
                .depends_on(&[X1]),
            Variable::float64(X1, "x1")
                .output()
                .start(0.0)
                .description("the second state")
                .depends_on(&[]),
            Variable::float64(DER_X1, "der(x1)")
                .derivative_of(X1)
                .depends_on(&[X0, X1]),
            Variable::float64(MU, "mu")
                .parameter()
                .start(1.0)
                .description("damping parameter"),
        ]
    }

    fn initialize(&self, _v: &mut Values, _cx: &Context) -> Result<(), String> {
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let (x0, x1, mu) = (v.f64(X0), v.f64(X1), v.f64(MU));
        v.set_f64(DER_X0, x1);
        v.set_f64(DER_X1, mu * (1.0 - x0 * x0) * x1 - x0);
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        let (x0, x1, mu) = (v.f64(X0), v.f64(X1), v.f64(MU));
        let identity = |of: u32| f64::from(u8::from(of == wrt));
        match (of, wrt) {
            (X0 | X1, X0 | X1 | MU) => Some(identity(of)),
            (DER_X0, X0 | MU) => Some(0.0),
            (DER_X0, X1) => Some(1.0),
            (DER_X1, X0) => Some(-2.0 * mu * x0 * x1 - 1.0),
            (DER_X1, X1) => Some(mu * (1.0 - x0 * x0)),
            (DER_X1, MU) => Some((1.0 - x0 * x0) * x1),
            _ => None,
        }
    }

    fn internal_step(&self, _v: &Values) -> f64 {
        INTERNAL_STEP
    }
}

fmu_kit::export_fmu!(VanDerPol);

#[cfg(test)]
mod tests;
