//! BouncingBall: the bouncing ball of the Modelica Reference FMUs, `h' = v`, `v' = g`, with a
//! state event at `h = 0` where `v := -e v` (and `h := 0`).
//!
//! Defaults: h starts at 1 m, v at 0 m/s, g = -9.81 m/s² (fixed parameter), e = 0.7 (tunable
//! coefficient of restitution), v_min = 0.1 m/s (constant). As in the Reference FMU, a bounce
//! that leaves the ball slower than v_min puts it to rest (h = 0, v = 0, no acceleration);
//! without it the bounces would accumulate (Zeno) at t ≈ 2.56 s. The first bounce is at
//! `sqrt(2 h0 / |g|)` = 0.4515236409857309 s for the defaults; RK4 is exact for the parabolic
//! flight, so the event is located to ~1e-12 s.

use fmu_kit::{Event, Experiment, Model, Values, Variable};

/// Height (state), output.
pub const H: u32 = 1;
/// der(h).
pub const DER_H: u32 = 2;
/// Velocity (state), output; reinitialised at bounces.
pub const V: u32 = 3;
/// der(v).
pub const DER_V: u32 = 4;
/// Gravity acceleration.
pub const G: u32 = 5;
/// Coefficient of restitution.
pub const E: u32 = 6;
/// Velocity below which the ball comes to rest.
pub const V_MIN: u32 = 7;

/// The bouncing ball.
#[derive(Default)]
pub struct BouncingBall;

/// Whether the ball lies on the ground (it was put to rest by a slow bounce).
fn at_rest(v: &Values) -> bool {
    v.f64(H) <= 0.0 && v.f64(V) == 0.0
}

impl Model for BouncingBall {
    const NAME: &'static str = "BouncingBall";
    const MODEL_EXCHANGE: bool = true;
    const EVENT_INDICATOR_VARIABLES: &'static [u32] = &[H];
    const DESCRIPTION: &'static str = "A bouncing ball: h' = v, v' = g, v := -e v at h = 0";
    const NUM_EVENT_INDICATORS: usize = 1;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 3.0,
        step: 0.01,
    };

    fn variables(&self) -> Vec<Variable> {
        vec![
            Variable::float64(H, "h")
                .output()
                .start(1.0)
                .unit("m")
                .description("Position of the ball")
                .depends_on(&[]),
            Variable::float64(DER_H, "der(h)")
                .unit("m/s")
                .description("Derivative of h")
                .derivative_of(H)
                .depends_on(&[V]),
            Variable::float64(V, "v")
                .output()
                .start(0.0)
                .unit("m/s")
                .description("Velocity of the ball")
                .reinit()
                .depends_on(&[]),
            Variable::float64(DER_V, "der(v)")
                .unit("m/s2")
                .description("Derivative of v")
                .derivative_of(V)
                .depends_on(&[H, V]),
            Variable::float64(G, "g")
                .parameter()
                .start(-9.81)
                .unit("m/s2")
                .description("Gravity acting on the ball"),
            Variable::float64(E, "e")
                .tunable()
                .start(0.7)
                .min(0.0)
                .max(1.0)
                .description("Coefficient of restitution"),
            Variable::float64(V_MIN, "v_min")
                .constant()
                .start(0.1)
                .unit("m/s")
                .description("Velocity below which the ball stops bouncing"),
        ]
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        v.set_f64(DER_H, v.f64(V));
        let acc = if at_rest(v) { 0.0 } else { v.f64(G) };
        v.set_f64(DER_V, acc);
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        let identity = |of: u32| f64::from(u8::from(of == wrt));
        match (of, wrt) {
            (H | V | DER_H, H | V | G | E) => Some(identity(if of == DER_H { V } else { of })),
            (DER_V, H | V | E) => Some(0.0),
            (DER_V, G) => Some(if at_rest(v) { 0.0 } else { 1.0 }),
            _ => None,
        }
    }

    fn event_indicators(&self, v: &Values, _time: f64, z: &mut [f64]) {
        z[0] = v.f64(H);
    }

    fn event(&self, v: &mut Values, _time: f64, event: &Event) -> Result<(), String> {
        if event.state_events.contains(&0) && v.f64(V) < 0.0 {
            let up = -v.f64(E) * v.f64(V);
            v.set_f64(H, 0.0);
            v.set_f64(V, if up < v.f64(V_MIN) { 0.0 } else { up });
        }
        Ok(())
    }
}

fmu_kit::export_fmu!(BouncingBall);

#[cfg(test)]
mod tests;
