//! ContactOscillator: mass 1 of Example 1 (Sect. 6.1, Eq. 35) of the variable order / step-size
//! co-simulation paper, a single mass on a spring hitting a very stiff exponential wall:
//! `m x'' = -c x - d v + F_C(x) + F` with the contact force `F_C = A·exp(B·x)`.
//!
//! Defaults (the paper's): m = 50 kg, c = 1e5 N/m, d = 0, A = -1e-2 N, B = 1e7 1/m,
//! x0 = -2 m, v0 = 100 m/s (all fixed parameters). With A < 0 the wall pushes the mass back
//! (towards negative x) once x approaches 0: the force grows by a factor e every 1/B = 0.1 µm,
//! so a contact lasts a few nanoseconds and the ODE is extremely stiff there. With F = 0 the
//! first contact is at t ≈ 16.4 ms (|v| ≈ 134 m/s, penetration ≈ 3.4 µm).
//!
//! The states are integrated with the kit's adaptive Dormand–Prince 5(4)
//! ([`fmu_kit::Integrator::DormandPrince`]) with the tolerances `rtol` (default 1e-10) and
//! `atol` (default 1e-12, in m and m/s); each communication step is integrated in one adaptive
//! interval that ends exactly on the communication point. No events: the contact is smooth.
//!
//! Input F (the coupling force, FMI 3 `intermediateUpdate`; FMI 2 input derivatives of orders
//! 1..=3 make it a cubic over the step). Outputs x, v (states, no direct feedthrough), a (direct
//! feedthrough of F) and `F_contact` = F_C(x). The local `E` is the mechanical energy
//! `m v²/2 + c x²/2 - (A/B)·exp(B x)` (conserved for d = 0, F = 0).
//!
//! Partial derivatives are analytic with respect to the states x, v, the input F and the
//! parameters m, c, d, A, B (e.g. da/dF = 1/m, da/dx = (-c + A B e^{Bx})/m, da/dv = -d/m);
//! those with respect to x0 and v0 (which act through the initial states) and those of E are
//! left to the kit's finite differences. Output derivatives of orders 1..=3 of x, v, a and
//! F_contact along the trajectory, with the current input derivatives: with g = F_C,
//! `a' = (F' - c v - d a + B g v)/m`, `a'' = (F'' - c a - d a' + B g (B v² + a))/m`,
//! `a''' = (F''' - c a' - d a'' + B g (B² v³ + 3 B v a + a'))/m`.

use fmu_kit::{Experiment, Inputs, Integrator, Model, Values, Variable};

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
/// Input force (the coupling force).
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
/// Contact force amplitude A (N).
pub const CA: u32 = 12;
/// Contact force exponent B (1/m).
pub const CB: u32 = 13;
/// Relative tolerance of the integrator.
pub const RTOL: u32 = 14;
/// Absolute tolerance of the integrator.
pub const ATOL: u32 = 15;
/// Output: the contact force A·exp(B x).
pub const F_CONTACT: u32 = 16;
/// Local: mechanical energy.
pub const ENERGY: u32 = 17;

/// The contact oscillator model.
#[derive(Default)]
pub struct ContactOscillator;

struct Params {
    m: f64,
    c: f64,
    d: f64,
    ca: f64,
    cb: f64,
}

fn params(v: &Values) -> Params {
    Params {
        m: v.f64(M),
        c: v.f64(C),
        d: v.f64(D),
        ca: v.f64(CA),
        cb: v.f64(CB),
    }
}

/// The contact force at position `x`.
fn contact(p: &Params, x: f64) -> f64 {
    p.ca * (p.cb * x).exp()
}

/// Acceleration from the current values.
fn acceleration(v: &Values, p: &Params) -> f64 {
    let x = v.f64(X);
    (v.f64(F) - p.c * x - p.d * v.f64(V) + contact(p, x)) / p.m
}

impl Model for ContactOscillator {
    const NAME: &'static str = "ContactOscillator";
    const DESCRIPTION: &'static str =
        "Mass on a spring against a stiff exponential wall: m x'' = -c x - d v + A exp(B x) + F";
    const MAX_OUTPUT_DERIVATIVE_ORDER: u32 = 3;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 0.1,
        step: 1e-4,
    };

    fn variables(&self) -> Vec<Variable> {
        let param = |vr, name: &str, start: f64, unit: &str, what: &str| {
            Variable::float64(vr, name)
                .parameter()
                .start(start)
                .unit(unit)
                .description(what)
        };
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
                .description("Force on the mass (the coupling force)")
                .intermediate_update(),
            param(M, "m", 50.0, "kg", "Mass (> 0)").min(0.0),
            param(C, "c", 1e5, "N/m", "Stiffness"),
            param(D, "d", 0.0, "N.s/m", "Damping"),
            param(X0, "x0", -2.0, "m", "Initial position"),
            param(V0, "v0", 100.0, "m/s", "Initial velocity"),
            param(
                CA,
                "A",
                -1e-2,
                "N",
                "Contact force amplitude A in A exp(B x)",
            ),
            param(
                CB,
                "B",
                1e7,
                "1/m",
                "Contact force exponent B in A exp(B x)",
            ),
            Variable::float64(RTOL, "rtol")
                .parameter()
                .start(1e-10)
                .min(0.0)
                .description("Relative tolerance of the adaptive integrator (> 0)"),
            Variable::float64(ATOL, "atol")
                .parameter()
                .start(1e-12)
                .min(0.0)
                .description("Absolute tolerance of the adaptive integrator (> 0; m and m/s)"),
            Variable::float64(F_CONTACT, "F_contact")
                .output()
                .unit("N")
                .description("Contact force A exp(B x)")
                .depends_on(&[]),
            Variable::float64(ENERGY, "E")
                .unit("J")
                .description("Mechanical energy m v^2/2 + c x^2/2 - (A/B) exp(B x)"),
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
        let (rtol, atol) = (v.f64(RTOL), v.f64(ATOL));
        if !(rtol > 0.0 && atol > 0.0) {
            return Err(format!("rtol = {rtol} and atol = {atol} must be positive"));
        }
        let (x, vel) = (v.f64(X), v.f64(V));
        let g = contact(&p, x);
        let a = acceleration(v, &p);
        let potential = if p.cb == 0.0 { -p.ca * x } else { -g / p.cb };
        v.set_f64(DER_X, vel);
        v.set_f64(DER_V, a);
        v.set_f64(A, a);
        v.set_f64(F_CONTACT, g);
        v.set_f64(
            ENERGY,
            0.5 * p.m * vel * vel + 0.5 * p.c * x * x + potential,
        );
        Ok(())
    }

    fn integrator(&self, v: &Values) -> Integrator {
        Integrator::DormandPrince {
            rtol: v.f64(RTOL),
            atol: v.f64(ATOL),
            max_step: f64::INFINITY,
        }
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        if !matches!(wrt, X | V | F | M | C | D | CA | CB | RTOL | ATOL) {
            return None;
        }
        let p = params(v);
        let x = v.f64(X);
        let e = (p.cb * x).exp();
        let g = p.ca * e;
        let delta = |k: u32| f64::from(u8::from(wrt == k));
        Some(match of {
            X | V => delta(of),
            DER_X => delta(V),
            A | DER_V => match wrt {
                F => 1.0 / p.m,
                X => (-p.c + p.cb * g) / p.m,
                V => -p.d / p.m,
                M => -acceleration(v, &p) / p.m,
                C => -x / p.m,
                D => -v.f64(V) / p.m,
                CA => e / p.m,
                CB => x * g / p.m,
                _ => 0.0, // rtol, atol
            },
            F_CONTACT => match wrt {
                X => p.cb * g,
                CA => e,
                CB => x * g,
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
        let f = inputs.taylor(F);
        let (vel, a0) = (v.f64(V), v.f64(A));
        let g = contact(&p, v.f64(X));
        let bg = p.cb * g;
        // g^(j), a^(j) for j = 0..=3.
        let g1 = bg * vel;
        let a1 = (f[1] - p.c * vel - p.d * a0 + g1) / p.m;
        let g2 = bg * (p.cb * vel * vel + a0);
        let a2 = (f[2] - p.c * a0 - p.d * a1 + g2) / p.m;
        let g3 = bg * (p.cb * p.cb * vel.powi(3) + 3.0 * p.cb * vel * a0 + a1);
        let a3 = (f[3] - p.c * a1 - p.d * a2 + g3) / p.m;
        let k = order as usize;
        if !(1..4).contains(&k) {
            return None;
        }
        let pick = |d: [f64; 3]| d[k - 1];
        match vr {
            X => Some(pick([vel, a0, a1])),
            V => Some(pick([a0, a1, a2])),
            A => Some(pick([a1, a2, a3])),
            F_CONTACT => Some(pick([g1, g2, g3])),
            _ => None,
        }
    }
}

fmu_kit::export_fmu!(ContactOscillator);

#[cfg(test)]
mod tests;
