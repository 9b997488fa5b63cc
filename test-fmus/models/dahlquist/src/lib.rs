//! Dahlquist: the test equation `x' = -k x` (defaults k = 1 1/s, x0 = 1), integrated exactly
//! (`x(t + h) = x(t) exp(-k h)`); output x with derivatives `x^(n) = (-k)^n x`.

use fmu_kit::{Context, Experiment, Inputs, Model, Values, Variable};

/// State and output.
pub const X: u32 = 1;
/// der(x).
pub const DER_X: u32 = 2;
/// Decay rate.
pub const K: u32 = 3;
/// Initial value.
pub const X0: u32 = 4;

/// The Dahlquist test equation.
#[derive(Default)]
pub struct Dahlquist;

impl Model for Dahlquist {
    const NAME: &'static str = "Dahlquist";
    const MODEL_EXCHANGE: bool = true;
    const DESCRIPTION: &'static str = "Dahlquist test equation x' = -k x";
    const EXACT_STEP: bool = true;
    const MAX_OUTPUT_DERIVATIVE_ORDER: u32 = 3;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 10.0,
        step: 0.1,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(X, "x")
                .output()
                .description("State")
                .depends_on(&[]),
            Variable::float64(DER_X, "der(x)")
                .derivative_of(X)
                .depends_on(&[X]),
            Variable::float64(K, "k")
                .parameter()
                .start(1.0)
                .unit("1/s")
                .description("Decay rate"),
            Variable::float64(X0, "x0")
                .parameter()
                .start(1.0)
                .description("Initial value"),
        ]
    }

    fn initialize(&self, v: &mut Values, _cx: &Context) -> Result<(), String> {
        v.set_f64(X, v.f64(X0));
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        v.set_f64(DER_X, -v.f64(K) * v.f64(X));
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        match (of, wrt) {
            (DER_X, X) => Some(-v.f64(K)),
            (X, X) => Some(1.0),
            _ => None,
        }
    }

    fn output_derivative(
        &self,
        v: &Values,
        _inputs: &Inputs<'_>,
        _time: f64,
        vr: u32,
        order: u32,
    ) -> Option<f64> {
        (vr == X).then(|| (-v.f64(K)).powi(order as i32) * v.f64(X))
    }

    fn exact_step(
        &self,
        v: &Values,
        _inputs: &Inputs<'_>,
        _t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), String> {
        x[0] *= (-v.f64(K) * h).exp();
        Ok(())
    }
}

fmu_kit::export_fmu!(Dahlquist);
