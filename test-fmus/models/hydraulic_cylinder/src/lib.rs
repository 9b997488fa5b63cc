//! HydraulicCylinder: the hydraulics of one actuator of the planar crane of Peiret et al. (2018),
//! "Multibody system dynamics interface modelling for stable multirate co-simulation of
//! multiphysics systems" (Eqs. 24–30, 35, Tables 2–3), as a force–displacement co-simulation
//! component: inputs actuator length `s` and rate `sd`, output actuator force `f`.
//!
//! Equations: see [`hydraulics`]. States: chamber pressures p1, p2 (outputs) and the held rate
//! `sd_held` (local, see below).
//!
//! **Integrator:** explicit Euler (Eq. 40), `p^{k+1} = p^k + h_S ṗ(p^k, s(t_k), ṡ(t_k), κ(t_k))`.
//! With the parameter `h` = 0 (default) a doStep is one Euler step of the communication step size
//! (h_S = the communication step, as in the paper where the hydraulics is stepped with h_S);
//! with `h` > 0 a doStep of length H takes n = ⌈H/h⌉ equal Euler steps of H/n (= h when H is a
//! multiple of h), the inputs following the importer's input trajectory (held, for a ZOH master).
//!
//! **Initial equilibrium:** with `solve_kappa0` = true (default) the initial spool position κ0
//! solves `(p2 − p1) a_p = f_eq` with the steady pressures of the valve at rest (ṡ = 0, ṗ = 0):
//! `p1 = (κ² p_P + (1−κ)² p_T)/(κ² + (1−κ)²)`, `p2 = ((1−κ)² p_P + κ² p_T)/(κ² + (1−κ)²)`
//! (Newton–Raphson). f_eq = 8829 N gives κ0 = 0.454346, p1 = 3.1708 MPa, p2 = 4.5292 MPa
//! (Table 3, actuator 1); f_eq = 0 gives κ0 = 0.5, p1 = p2 = 3.85 MPa (actuator 2). With
//! `solve_kappa0` = false, κ0 = `kappa0` and p1, p2 are its steady pressures. The κ0 used is the
//! calculated parameter `kappa_init`.
//!
//! **Spool law** (`law`): 1 = Eq. 30 (actuator 1: rest until t_a, extension until t_b, then
//! retraction), 2 = Eq. 35 (actuator 2: κ0 − 0.0025 t until t_a, then κ0 − 0.005), 0 = κ0 held.
//!
//! **Feedthrough of the friction term −c ṡ (notes §4, ambiguity 1), parameter `fresh_damping`:**
//! - false (default, "stale"): `f = (p2 − p1) a_p − c sd_held`, where `sd_held` is the rate the
//!   hydraulics used during its last Euler step of the last doStep (the input value of `sd` at
//!   that step's start; for a ZOH master: the `sd` that was set before the last doStep). At the
//!   start it is the input `sd` at initialization (0 at rest). Setting `sd` after a doStep does
//!   NOT change `f` (∂f/∂sd = 0): at t_n a master reads the force computed with the rate held
//!   over [t_{n−1}, t_n], whatever order it sets inputs and reads outputs in. This is what a
//!   plain Jacobi master (get outputs → set inputs → doStep) sees from an FMU whose output does
//!   not depend on `sd`, and it reproduces the paper's ZOH stability limits.
//! - true ("fresh"): `f = (p2 − p1) a_p − c sd` with the current input `sd` (∂f/∂sd = −c): a
//!   master that sets `sd` before reading `f` at a communication point gets the fresh rate.
//!
//! The model description is static, so `f` declares its dependency on `sd` in both modes (in the
//! stale mode the dependency is vacuous: FMI allows declaring a dependency that is numerically
//! zero, never omitting one that is not). Consequently a dependency-aware master (e.g. cosimo,
//! which then sets `sd` before reading `f`) gets stale damping with `fresh_damping` = false and
//! fresh damping with true; the parameter, not the master's call order, decides.
//!
//! Directional derivatives are analytic for the outputs f, p1, p2, kappa w.r.t. the inputs
//! (∂f/∂sd = −c or 0, everything else 0) and for f w.r.t. p1, p2; the rest (state derivatives,
//! parameters) are left to the kit's finite differences.

// `!(x > y)` is deliberate: NaN must fail every range check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod hydraulics;

use fmu_kit::{Context, Experiment, Inputs, Model, Values, Variable};
use hydraulics::{Cylinder, Spool};

/// Input: actuator length s [m].
pub const S: u32 = 1;
/// Input: actuator rate ṡ [m/s].
pub const SD: u32 = 2;
/// Output: actuator force f [N] (24).
pub const F: u32 = 3;
/// Output / state: pressure p1 [Pa].
pub const P1: u32 = 4;
/// Output / state: pressure p2 [Pa].
pub const P2: u32 = 5;
/// Output: spool position κ(t).
pub const KAPPA: u32 = 6;
/// der(p1).
pub const DER_P1: u32 = 7;
/// der(p2).
pub const DER_P2: u32 = 8;
/// Local state: the rate held over the last Euler step (used by `f` when not fresh).
pub const SD_HELD: u32 = 9;
/// der(sd_held) = 0 (it changes only through the step).
pub const DER_SD_HELD: u32 = 10;
/// Parameter a_p [m²].
pub const A_P: u32 = 11;
/// Parameter l [m].
pub const L: u32 = 12;
/// Parameter c [N s/m].
pub const C: u32 = 13;
/// Parameter c_d.
pub const C_D: u32 = 14;
/// Parameter ρ [kg/m³].
pub const RHO: u32 = 15;
/// Parameter p_P [Pa].
pub const P_P: u32 = 16;
/// Parameter p_T [Pa].
pub const P_T: u32 = 17;
/// Parameter bulk modulus coefficient a [1/Pa].
pub const BULK_A: u32 = 18;
/// Parameter bulk modulus coefficient b [1/Pa²].
pub const BULK_B: u32 = 19;
/// Parameter full valve area [m²].
pub const A_VALVE: u32 = 20;
/// Parameter s0 [m].
pub const S0: u32 = 21;
/// Parameter spool law (Int32: 0, 1, 2).
pub const LAW: u32 = 22;
/// Parameter t_a [s].
pub const T_A: u32 = 23;
/// Parameter t_b [s].
pub const T_B: u32 = 24;
/// Parameter t_r [s].
pub const T_R: u32 = 25;
/// Parameter κ0 (used when `solve_kappa0` is false).
pub const KAPPA0: u32 = 26;
/// Parameter f_eq [N].
pub const F_EQ: u32 = 27;
/// Parameter internal Euler step h [s] (0: one step per doStep).
pub const H: u32 = 28;
/// Parameter fresh_damping (Boolean).
pub const FRESH_DAMPING: u32 = 29;
/// Parameter solve_kappa0 (Boolean).
pub const SOLVE_KAPPA0: u32 = 30;
/// Calculated parameter: the κ0 used.
pub const KAPPA_INIT: u32 = 31;

/// The hydraulic cylinder model.
#[derive(Default)]
pub struct HydraulicCylinder;

/// The cylinder data from the parameters.
pub fn cylinder(v: &Values) -> Cylinder {
    Cylinder {
        a_p: v.f64(A_P),
        l: v.f64(L),
        c: v.f64(C),
        c_d: v.f64(C_D),
        rho: v.f64(RHO),
        p_p: v.f64(P_P),
        p_t: v.f64(P_T),
        bulk_a: v.f64(BULK_A),
        bulk_b: v.f64(BULK_B),
        a_valve: v.f64(A_VALVE),
        s0: v.f64(S0),
    }
}

fn spool(v: &Values) -> Spool {
    Spool {
        law: v.i32(LAW),
        kappa0: v.f64(KAPPA_INIT),
        t_a: v.f64(T_A),
        t_b: v.f64(T_B),
        t_r: v.f64(T_R),
    }
}

fn check(cy: &Cylinder) -> Result<(), String> {
    let positive = [
        ("a_p", cy.a_p),
        ("l", cy.l),
        ("c_d", cy.c_d),
        ("rho", cy.rho),
        ("a", cy.bulk_a),
    ];
    for (name, x) in positive {
        if !(x > 0.0 && x.is_finite()) {
            return Err(format!("{name} = {x} must be positive"));
        }
    }
    if !(cy.p_p > cy.p_t) {
        return Err(format!("p_P = {} must exceed p_T = {}", cy.p_p, cy.p_t));
    }
    Ok(())
}

/// Number of Euler steps for a doStep of `span` with internal step `h` (0: one).
pub fn euler_steps(span: f64, h: f64) -> Result<u64, String> {
    if !(h >= 0.0 && h.is_finite()) {
        return Err(format!("internal step h = {h} must be >= 0"));
    }
    if h == 0.0 {
        return Ok(1);
    }
    Ok((span / h - 1e-9).ceil().clamp(1.0, 1e9) as u64)
}

impl Model for HydraulicCylinder {
    const NAME: &'static str = "HydraulicCylinder";
    const DESCRIPTION: &'static str =
        "Hydraulic actuator of the planar crane (Peiret et al. 2018): inputs s, sd, output force f";
    const EXACT_STEP: bool = true;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 10.0,
        step: 2e-4,
    };

    fn variables(&self) -> Vec<Variable> {
        let d = Cylinder::default();
        vec![
            Variable::float64(S, "s")
                .input()
                .start(0.5)
                .unit("m")
                .description("Actuator length"),
            Variable::float64(SD, "sd")
                .input()
                .start(0.0)
                .unit("m/s")
                .description("Actuator length rate"),
            Variable::float64(F, "f")
                .output()
                .unit("N")
                .description(
                    "Actuator force (p2 - p1) a_p - c sd_eff (Eq. 24): sd_eff = the rate held \
                     over the last Euler step (fresh_damping = false, df/dsd = 0) or the input sd \
                     (fresh_damping = true)",
                )
                .depends_on(&[SD, P1, P2, SD_HELD]),
            Variable::float64(P1, "p1")
                .output()
                .unit("Pa")
                .description("Pressure in chamber 1 (state)")
                .depends_on(&[P1]),
            Variable::float64(P2, "p2")
                .output()
                .unit("Pa")
                .description("Pressure in chamber 2 (state)")
                .depends_on(&[P2]),
            Variable::float64(KAPPA, "kappa")
                .output()
                .description("Spool position kappa(t) (Eq. 30 or 35)")
                .depends_on(&[]),
            Variable::float64(DER_P1, "der(p1)")
                .unit("Pa/s")
                .derivative_of(P1)
                .depends_on(&[S, SD, P1]),
            Variable::float64(DER_P2, "der(p2)")
                .unit("Pa/s")
                .derivative_of(P2)
                .depends_on(&[S, SD, P2]),
            Variable::float64(SD_HELD, "sd_held")
                .unit("m/s")
                .description(
                    "Rate held over the last Euler step (set by the step, not by integration)",
                ),
            Variable::float64(DER_SD_HELD, "der(sd_held)")
                .unit("m/s2")
                .derivative_of(SD_HELD)
                .depends_on(&[])
                .description("0: sd_held changes only at the end of a doStep"),
            Variable::float64(A_P, "a_p")
                .parameter()
                .start(d.a_p)
                .unit("m2")
                .description("Piston area"),
            Variable::float64(L, "l")
                .parameter()
                .start(d.l)
                .unit("m")
                .description("Cylinder length"),
            Variable::float64(C, "c")
                .parameter()
                .start(d.c)
                .unit("N.s/m")
                .description("Viscous friction coefficient"),
            Variable::float64(C_D, "c_d")
                .parameter()
                .start(d.c_d)
                .description("Valve discharge coefficient"),
            Variable::float64(RHO, "rho")
                .parameter()
                .start(d.rho)
                .unit("kg/m3")
                .description("Oil density"),
            Variable::float64(P_P, "p_P")
                .parameter()
                .start(d.p_p)
                .unit("Pa")
                .description("Pump pressure"),
            Variable::float64(P_T, "p_T")
                .parameter()
                .start(d.p_t)
                .unit("Pa")
                .description("Tank pressure"),
            Variable::float64(BULK_A, "a")
                .parameter()
                .start(d.bulk_a)
                .unit("1/Pa")
                .description("Bulk modulus coefficient a (Eq. 27)"),
            Variable::float64(BULK_B, "b")
                .parameter()
                .start(d.bulk_b)
                .unit("1/Pa2")
                .description("Bulk modulus coefficient b (Eq. 27)"),
            Variable::float64(A_VALVE, "a_valve")
                .parameter()
                .start(d.a_valve)
                .unit("m2")
                .description("Full valve port area (Eq. 29)"),
            Variable::float64(S0, "s0")
                .parameter()
                .start(d.s0)
                .unit("m")
                .description("Initial actuator length (both chambers l/2 long)"),
            Variable::int32(LAW, "law")
                .parameter()
                .start(1)
                .min(0.0)
                .max(2.0)
                .description(
                    "Spool law: 1 = Eq. 30 (actuator 1), 2 = Eq. 35 (actuator 2), 0 = held",
                ),
            Variable::float64(T_A, "t_a")
                .parameter()
                .start(2.0)
                .unit("s")
                .description("Spool law time t_a"),
            Variable::float64(T_B, "t_b")
                .parameter()
                .start(6.0)
                .unit("s")
                .description("Spool law time t_b (Eq. 30)"),
            Variable::float64(T_R, "t_r")
                .parameter()
                .start(1e-3)
                .unit("s")
                .min(0.0)
                .description("Spool transition time t_r (Eq. 30)"),
            Variable::float64(KAPPA0, "kappa0")
                .parameter()
                .start(0.454346)
                .min(0.0)
                .max(1.0)
                .description("Initial spool position, used when solve_kappa0 = false"),
            Variable::float64(F_EQ, "f_eq")
                .parameter()
                .start(8829.0)
                .unit("N")
                .description(
                    "Force held at rest at t = 0 (solve_kappa0 = true): kappa0, p1, p2 from \
                     (p2 - p1) a_p = f_eq with the steady valve pressures",
                ),
            Variable::float64(H, "h")
                .parameter()
                .start(0.0)
                .unit("s")
                .min(0.0)
                .description("Internal explicit Euler step (0: one step per doStep)"),
            Variable::boolean(FRESH_DAMPING, "fresh_damping")
                .parameter()
                .start(false)
                .description(
                    "false: f uses the rate held over the last step (df/dsd = 0); true: f uses \
                     the current input sd",
                ),
            Variable::boolean(SOLVE_KAPPA0, "solve_kappa0")
                .parameter()
                .start(true)
                .description(
                    "true: kappa0 from f_eq (Newton-Raphson); false: the parameter kappa0",
                ),
            Variable::float64(KAPPA_INIT, "kappa_init")
                .calculated_parameter()
                .description("The initial spool position used"),
        ]
    }

    fn initialize(&self, v: &mut Values, _cx: &Context) -> Result<(), String> {
        let cy = cylinder(v);
        check(&cy)?;
        let (k0, p1, p2) = if v.bool(SOLVE_KAPPA0) {
            cy.equilibrium(v.f64(F_EQ))?
        } else {
            let k0 = v.f64(KAPPA0);
            let (p1, p2) = cy.steady_pressures(k0);
            (k0, p1, p2)
        };
        v.set_f64(KAPPA_INIT, k0);
        v.set_f64(P1, p1);
        v.set_f64(P2, p2);
        v.set_f64(SD_HELD, v.f64(SD));
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, time: f64) -> Result<(), String> {
        let cy = cylinder(v);
        check(&cy)?;
        let (p1, p2, s, sd) = (v.f64(P1), v.f64(P2), v.f64(S), v.f64(SD));
        let kappa = spool(v).kappa(time);
        let sd_eff = if v.bool(FRESH_DAMPING) {
            sd
        } else {
            v.f64(SD_HELD)
        };
        let (dp1, dp2) = cy.pressure_rates(p1, p2, s, sd, kappa);
        v.set_f64(KAPPA, kappa);
        v.set_f64(F, cy.force(p1, p2, sd_eff));
        v.set_f64(DER_P1, dp1);
        v.set_f64(DER_P2, dp2);
        v.set_f64(DER_SD_HELD, 0.0);
        Ok(())
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        let cy = cylinder(v);
        match (of, wrt) {
            (F, SD) => Some(if v.bool(FRESH_DAMPING) { -cy.c } else { 0.0 }),
            (F | P1 | P2 | KAPPA, S) | (P1 | P2 | KAPPA, SD) => Some(0.0),
            (F, P1) => Some(-cy.a_p),
            (F, P2) => Some(cy.a_p),
            (F, SD_HELD) => Some(if v.bool(FRESH_DAMPING) { 0.0 } else { -cy.c }),
            _ => None,
        }
    }

    fn exact_step(
        &self,
        v: &Values,
        inputs: &Inputs<'_>,
        t: f64,
        span: f64,
        x: &mut [f64],
    ) -> Result<(), String> {
        let [p1, p2, held] = x else {
            return Err(format!("expected 3 states, got {}", x.len()));
        };
        let cy = cylinder(v);
        check(&cy)?;
        let law = spool(v);
        let n = euler_steps(span, v.f64(H))?;
        let hs = span / n as f64;
        for k in 0..n {
            let tk = t + span * (k as f64) / (n as f64);
            let (s, sd) = (inputs.at(S, tk), inputs.at(SD, tk));
            let (dp1, dp2) = cy.pressure_rates(*p1, *p2, s, sd, law.kappa(tk));
            *p1 += hs * dp1;
            *p2 += hs * dp2;
            *held = sd;
        }
        if !(p1.is_finite() && p2.is_finite()) {
            return Err(format!(
                "the pressures diverged (p1 = {p1}, p2 = {p2}) at t = {}: explicit Euler step \
                 {hs} s is too large",
                t + span
            ));
        }
        Ok(())
    }
}

fmu_kit::export_fmu!(HydraulicCylinder);

#[cfg(test)]
mod tests;
