//! Robertson: the stiff chemical kinetics problem of H. H. Robertson (1966), a classic test
//! of stiff integrators (Hairer & Wanner, Solving ODE II, problem ROBER):
//!
//! ```text
//! y1' = -k1 y1 + k2 y2 y3
//! y2' =  k1 y1 - k2 y2 y3 - k3 y2²
//! y3' =  k3 y2²
//! ```
//!
//! with k1 = 0.04, k2 = 1e4, k3 = 3e7 (fixed parameters) and y(0) = (1, 0, 0) (the start
//! values of the states). y1 + y2 + y3 = 1 for all time. y2 rises to 3.65e-5 within
//! ~0.03 s and then decays slowly while y1 turns into y3 over decades of time; the default
//! experiment runs to 1e5 s.
//!
//! The Jacobian's eigenvalues reach about -1.1e4 (-k2 y3 - 2 k3 y2 - k1), so explicit
//! methods are bound to steps of ~1e-4 s for stability alone, whatever the accuracy needed.
//!
//! - **Model Exchange** (FMI 2 and 3): the importer's integrator solves it; with a stiff
//!   method (BDF) a few hundred steps reach 1e5 s. Partial derivatives are analytic
//!   ([`Model::partial`]), so `fmi*GetDirectionalDerivative` gives the exact Jacobian. The
//!   nominal of y2 is 1e-5 (its scale), those of y1 and y3 are 1.
//! - **Co-Simulation** (FMI 2 and 3): the kit's fixed-step explicit RK4 with an internal step
//!   of [`INTERNAL_STEP`] = 2e-4 s, inside RK4's stability interval (|h λ| <= 2.2 < 2.78) for
//!   the whole trajectory. It is accurate, but reaching the stop time of 1e5 s takes 5e8 RK4
//!   steps (2e9 evaluations of the right-hand side): that is the point of this model, the
//!   contrast with a stiff solver on the Model Exchange interface. Runs of a few seconds of
//!   simulated time are cheap.

use fmu_kit::{Experiment, Model, Values, Variable};

/// Concentration of species 1 (state), output.
pub const Y1: u32 = 1;
/// der(y1).
pub const DER_Y1: u32 = 2;
/// Concentration of species 2 (state), output.
pub const Y2: u32 = 3;
/// der(y2).
pub const DER_Y2: u32 = 4;
/// Concentration of species 3 (state), output.
pub const Y3: u32 = 5;
/// der(y3).
pub const DER_Y3: u32 = 6;
/// Rate constant of y1 -> y2.
pub const K1: u32 = 7;
/// Rate constant of y2 + y3 -> y1 + y3.
pub const K2: u32 = 8;
/// Rate constant of 2 y2 -> y2 + y3.
pub const K3: u32 = 9;

/// Internal RK4 step size of the Co-Simulation interface (stable along the trajectory).
pub const INTERNAL_STEP: f64 = 2e-4;

/// Robertson's chemical kinetics.
#[derive(Default)]
pub struct Robertson;

fn rates(v: &Values) -> (f64, f64, f64) {
    (v.f64(K1), v.f64(K2), v.f64(K3))
}

impl Model for Robertson {
    const NAME: &'static str = "Robertson";
    const DESCRIPTION: &'static str =
        "Robertson's stiff chemical kinetics: y1' = -k1 y1 + k2 y2 y3, y3' = k3 y2^2";
    const MODEL_EXCHANGE: bool = true;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 1e5,
        step: 10.0,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(Y1, "y1")
                .output()
                .start(1.0)
                .nominal(1.0)
                .description("Concentration of species 1")
                .depends_on(&[Y1]),
            Variable::float64(DER_Y1, "der(y1)")
                .derivative_of(Y1)
                .depends_on(&[Y1, Y2, Y3]),
            Variable::float64(Y2, "y2")
                .output()
                .start(0.0)
                .nominal(1e-5)
                .description("Concentration of species 2")
                .depends_on(&[Y2]),
            Variable::float64(DER_Y2, "der(y2)")
                .derivative_of(Y2)
                .depends_on(&[Y1, Y2, Y3]),
            Variable::float64(Y3, "y3")
                .output()
                .start(0.0)
                .nominal(1.0)
                .description("Concentration of species 3")
                .depends_on(&[Y3]),
            Variable::float64(DER_Y3, "der(y3)")
                .derivative_of(Y3)
                .depends_on(&[Y2]),
            Variable::float64(K1, "k1")
                .parameter()
                .start(0.04)
                .unit("1/s")
                .min(0.0)
                .description("Rate constant of y1 -> y2"),
            Variable::float64(K2, "k2")
                .parameter()
                .start(1e4)
                .unit("1/s")
                .min(0.0)
                .description("Rate constant of y2 + y3 -> y1 + y3"),
            Variable::float64(K3, "k3")
                .parameter()
                .start(3e7)
                .unit("1/s")
                .min(0.0)
                .description("Rate constant of 2 y2 -> y2 + y3"),
        ]
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let (k1, k2, k3) = rates(v);
        let (y1, y2, y3) = (v.f64(Y1), v.f64(Y2), v.f64(Y3));
        let r1 = k1 * y1;
        let r2 = k2 * y2 * y3;
        let r3 = k3 * y2 * y2;
        v.set_f64(DER_Y1, -r1 + r2);
        v.set_f64(DER_Y2, r1 - r2 - r3);
        v.set_f64(DER_Y3, r3);
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        let (k1, k2, k3) = rates(v);
        let (y1, y2, y3) = (v.f64(Y1), v.f64(Y2), v.f64(Y3));
        let delta = |k: u32| f64::from(u8::from(wrt == k));
        Some(match (of, wrt) {
            (Y1 | Y2 | Y3, Y1 | Y2 | Y3 | K1 | K2 | K3) => delta(of),
            (DER_Y1, Y1) => -k1,
            (DER_Y1, Y2) => k2 * y3,
            (DER_Y1, Y3) => k2 * y2,
            (DER_Y1, K1) => -y1,
            (DER_Y1, K2) => y2 * y3,
            (DER_Y1, K3) => 0.0,
            (DER_Y2, Y1) => k1,
            (DER_Y2, Y2) => -k2 * y3 - 2.0 * k3 * y2,
            (DER_Y2, Y3) => -k2 * y2,
            (DER_Y2, K1) => y1,
            (DER_Y2, K2) => -y2 * y3,
            (DER_Y2, K3) => -y2 * y2,
            (DER_Y3, Y1 | Y3 | K1 | K2) => 0.0,
            (DER_Y3, Y2) => 2.0 * k3 * y2,
            (DER_Y3, K3) => y2 * y2,
            _ => return None,
        })
    }

    fn internal_step(&self, _v: &Values) -> f64 {
        INTERNAL_STEP
    }
}

fmu_kit::export_fmu!(Robertson);

#[cfg(test)]
mod tests;
