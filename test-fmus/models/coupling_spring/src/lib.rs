//! CouplingSpring: a nonlinear spring-damper between two bodies.
//!
//! `F = c1 (x2 - x1) + c3 (x2 - x1)^3 + d1 (v2 - v1) + d3 (v2 - v1)^3`
//! (defaults c1 = 1 N/m, c3 = 0 N/m3, d1 = 0.1 N·s/m, d3 = 0 N·s3/m3).
//! Sign convention: `F1 = F` is the force the element exerts on body 1 and `F2 = -F` the
//! force on body 2, so both outputs connect straight to the bodies' force inputs. Both
//! outputs feed through directly from all four inputs, with analytic partial derivatives; the
//! first time derivative of the outputs follows from the inputs' derivatives (FMI 2 input
//! derivatives; zero otherwise), which the extended implicit coupling asks for.
//!
//! Its one state is the impulse `F1_int`, the integral of F1 over time since the start (with
//! the output `F2_int = -F1_int`), which the integral-extended coupling needs. Each step
//! integrates F exactly for cubic inputs: F is then a polynomial of degree 9 in time, and
//! 5-point Gauss-Legendre quadrature is exact to that degree.

use fmu_kit::{Inputs, Model, Values, Variable};

/// Position of body 1.
pub const X1: u32 = 1;
/// Velocity of body 1.
pub const V1: u32 = 2;
/// Position of body 2.
pub const X2: u32 = 3;
/// Velocity of body 2.
pub const V2: u32 = 4;
/// Force on body 1.
pub const F1: u32 = 5;
/// Force on body 2.
pub const F2: u32 = 6;
/// Linear stiffness.
pub const C1: u32 = 7;
/// Cubic stiffness.
pub const C3: u32 = 8;
/// Linear damping.
pub const D1: u32 = 9;
/// Cubic damping.
pub const D3: u32 = 10;
/// Impulse on body 1 (state): the integral of F1 since the start.
pub const F1_INT: u32 = 11;
/// der(F1_int) = F1.
pub const DER_F1_INT: u32 = 12;
/// Impulse on body 2: -F1_int.
pub const F2_INT: u32 = 13;

/// The spring-damper law.
fn force(v: &Values, dx: f64, dv: f64) -> f64 {
    v.f64(C1) * dx + v.f64(C3) * dx.powi(3) + v.f64(D1) * dv + v.f64(D3) * dv.powi(3)
}

/// 5-point Gauss-Legendre nodes and weights on [-1, 1].
const GAUSS_LEGENDRE_5: [(f64, f64); 5] = [
    (0.0, 0.568_888_888_888_888_9),
    (-0.538_469_310_105_683_1, 0.478_628_670_499_366_5),
    (0.538_469_310_105_683_1, 0.478_628_670_499_366_5),
    (-0.906_179_845_938_664, 0.236_926_885_056_189_1),
    (0.906_179_845_938_664, 0.236_926_885_056_189_1),
];

/// The coupling element.
#[derive(Default)]
pub struct CouplingSpring;

impl Model for CouplingSpring {
    const NAME: &'static str = "CouplingSpring";
    const DESCRIPTION: &'static str =
        "Nonlinear spring-damper coupling two bodies: F1 = F on body 1, F2 = -F on body 2";
    const MAX_OUTPUT_DERIVATIVE_ORDER: u32 = 1;
    const EXACT_STEP: bool = true;

    fn variables(&self) -> Vec<Variable> {
        let input = |vr, name: &str, unit: &str, what: &str| {
            Variable::float64(vr, name)
                .input()
                .start(0.0)
                .unit(unit)
                .description(what)
                .intermediate_update()
        };
        let all = [X1, V1, X2, V2];
        vec![
            input(X1, "x1", "m", "Position of body 1"),
            input(V1, "v1", "m/s", "Velocity of body 1"),
            input(X2, "x2", "m", "Position of body 2"),
            input(V2, "v2", "m/s", "Velocity of body 2"),
            Variable::float64(F1, "F1")
                .output()
                .unit("N")
                .description("Force on body 1 (+F)")
                .depends_on(&all),
            Variable::float64(F2, "F2")
                .output()
                .unit("N")
                .description("Force on body 2 (-F)")
                .depends_on(&all),
            Variable::float64(C1, "c1")
                .tunable()
                .start(1.0)
                .unit("N/m")
                .description("Linear stiffness"),
            Variable::float64(C3, "c3")
                .tunable()
                .start(0.0)
                .unit("N/m3")
                .description("Cubic stiffness"),
            Variable::float64(D1, "d1")
                .tunable()
                .start(0.1)
                .unit("N.s/m")
                .description("Linear damping"),
            Variable::float64(D3, "d3")
                .tunable()
                .start(0.0)
                .unit("N.s3/m3")
                .description("Cubic damping"),
            Variable::float64(F1_INT, "F1_int")
                .output()
                .unit("N.s")
                .description("Impulse on body 1: integral of F1 since the start (0 initially)")
                .depends_on(&[]),
            Variable::float64(DER_F1_INT, "der(F1_int)")
                .unit("N")
                .derivative_of(F1_INT)
                .depends_on(&all),
            Variable::float64(F2_INT, "F2_int")
                .output()
                .unit("N.s")
                .description("Impulse on body 2: -F1_int")
                .depends_on(&[]),
        ]
    }

    fn initialize(&self, v: &mut Values, _cx: &fmu_kit::Context) -> Result<(), String> {
        v.set_f64(F1_INT, 0.0);
        Ok(())
    }

    fn exact_step(
        &self,
        v: &Values,
        inputs: &Inputs<'_>,
        t: f64,
        h: f64,
        x: &mut [f64],
    ) -> Result<(), String> {
        let mut impulse = 0.0;
        for (node, weight) in GAUSS_LEGENDRE_5 {
            let at = t + 0.5 * h * (1.0 + node);
            let dx = inputs.at(X2, at) - inputs.at(X1, at);
            let dv = inputs.at(V2, at) - inputs.at(V1, at);
            impulse += weight * force(v, dx, dv);
        }
        x[0] += 0.5 * h * impulse;
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let f = force(v, v.f64(X2) - v.f64(X1), v.f64(V2) - v.f64(V1));
        v.set_f64(F1, f);
        v.set_f64(F2, -f);
        v.set_f64(DER_F1_INT, f);
        v.set_f64(F2_INT, -v.f64(F1_INT));
        Ok(())
    }

    fn output_derivative(
        &self,
        v: &Values,
        inputs: &Inputs<'_>,
        _time: f64,
        vr: u32,
        order: u32,
    ) -> Option<f64> {
        if order != 1 {
            return None;
        }
        // The impulses' derivatives are the forces.
        match vr {
            F1_INT => return Some(v.f64(F1)),
            F2_INT => return Some(v.f64(F2)),
            _ => {}
        }
        let dx = v.f64(X2) - v.f64(X1);
        let dv = v.f64(V2) - v.f64(V1);
        let kx = v.f64(C1) + 3.0 * v.f64(C3) * dx * dx;
        let kv = v.f64(D1) + 3.0 * v.f64(D3) * dv * dv;
        let slope = |vr| inputs.taylor(vr)[1];
        let df = kx * (slope(X2) - slope(X1)) + kv * (slope(V2) - slope(V1));
        match vr {
            F1 => Some(df),
            F2 => Some(-df),
            _ => None,
        }
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        let dx = v.f64(X2) - v.f64(X1);
        let dv = v.f64(V2) - v.f64(V1);
        let kx = v.f64(C1) + 3.0 * v.f64(C3) * dx * dx;
        let kv = v.f64(D1) + 3.0 * v.f64(D3) * dv * dv;
        let df = match wrt {
            X1 => -kx,
            X2 => kx,
            V1 => -kv,
            V2 => kv,
            _ => return None,
        };
        match of {
            F1 | DER_F1_INT => Some(df),
            F2 => Some(-df),
            _ => None,
        }
    }
}

fmu_kit::export_fmu!(CouplingSpring);
