//! The hydraulics of one actuator of the planar crane (Peiret et al. 2018, Sec. 4.1, Eqs. 24–30
//! and 35, Table 2), as plain functions without any FMI: the HydraulicCylinder FMU uses them,
//! and the crane crate includes this file (`#[path]`) for its monolithic reference solution, so
//! both integrate the same equations.
//!
//! - force `f = (p2 − p1) a_p − c ṡ` (24);
//! - `ṗ1 = β1/(a_p l1) [a_p ṡ + a_i c_d √(2(p_P − p1)/ρ) δ_P1 − a_o c_d √(2(p1 − p_T)/ρ) δ_T1]` (25),
//!   `ṗ2 = β2/(a_p l2) [−a_p ṡ + a_o c_d √(2(p_P − p2)/ρ) δ_P2 − a_i c_d √(2(p2 − p_T)/ρ) δ_T2]`
//!   (26), δ = 0 where the radicand is negative;
//! - `β(p) = (1 + a p + b p²)/(a + 2 b p)` (27); `l1 = l/2 + s0 − s`, `l2 = l/2 + s − s0` (28);
//! - `a_i = a_v κ`, `a_o = a_v (1 − κ)` with `a_v = 5·10⁻⁴ m²` (29).
//!
//! Two guards keep the equations finite far outside the paper's operating range (they never act
//! in it): a chamber length is never taken below [`L_MIN`] (the piston at its end stop), and the
//! bulk modulus is evaluated at the pressure clamped to [0, [`P_BETA_MAX`]] (Eq. 27 turns
//! negative near 274 MPa).

/// Smallest chamber length used in Eqs. 25–26 [m].
pub const L_MIN: f64 = 1e-3;
/// Largest pressure at which the bulk modulus (27) is evaluated [Pa].
pub const P_BETA_MAX: f64 = 1e8;

/// Table 2 data and the geometry of one actuator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cylinder {
    /// Piston area a_p [m²].
    pub a_p: f64,
    /// Cylinder length l [m].
    pub l: f64,
    /// Viscous friction c [N s/m].
    pub c: f64,
    /// Discharge coefficient c_d.
    pub c_d: f64,
    /// Oil density ρ [kg/m³].
    pub rho: f64,
    /// Pump pressure p_P [Pa].
    pub p_p: f64,
    /// Tank pressure p_T [Pa].
    pub p_t: f64,
    /// Bulk modulus coefficient a [1/Pa].
    pub bulk_a: f64,
    /// Bulk modulus coefficient b [1/Pa²].
    pub bulk_b: f64,
    /// Full valve port area a_v [m²] (5·10⁻⁴ in Eq. 29).
    pub a_valve: f64,
    /// Actuator length at which both chambers are l/2 long, s0 [m].
    pub s0: f64,
}

impl Default for Cylinder {
    fn default() -> Self {
        Cylinder {
            a_p: 65e-4,
            l: 0.442,
            c: 1e5,
            c_d: 0.67,
            rho: 850.0,
            p_p: 7.6e6,
            p_t: 0.1e6,
            bulk_a: 6.53e-10,
            bulk_b: -1.19e-18,
            a_valve: 5e-4,
            s0: 0.5,
        }
    }
}

impl Cylinder {
    /// Bulk modulus β(p) (27), at p clamped to [0, `P_BETA_MAX`].
    pub fn bulk_modulus(&self, p: f64) -> f64 {
        let p = p.clamp(0.0, P_BETA_MAX);
        (1.0 + self.bulk_a * p + self.bulk_b * p * p) / (self.bulk_a + 2.0 * self.bulk_b * p)
    }

    /// Chamber lengths (l1, l2) at actuator length `s` (28), each at least `L_MIN`.
    pub fn chamber_lengths(&self, s: f64) -> (f64, f64) {
        let l1 = 0.5 * self.l + self.s0 - s;
        let l2 = 0.5 * self.l + s - self.s0;
        (l1.max(L_MIN), l2.max(L_MIN))
    }

    /// Valve flow `c_d a √(2 Δp / ρ)`, 0 for Δp ≤ 0.
    fn flow(&self, area: f64, dp: f64) -> f64 {
        if dp > 0.0 {
            self.c_d * area * (2.0 * dp / self.rho).sqrt()
        } else {
            0.0
        }
    }

    /// Pressure rates (ṗ1, ṗ2) (25–26) at pressures p1, p2, length s, rate sd and spool κ.
    pub fn pressure_rates(&self, p1: f64, p2: f64, s: f64, sd: f64, kappa: f64) -> (f64, f64) {
        let (l1, l2) = self.chamber_lengths(s);
        let a_in = self.a_valve * kappa;
        let a_out = self.a_valve * (1.0 - kappa);
        let q1 = self.a_p * sd + self.flow(a_in, self.p_p - p1) - self.flow(a_out, p1 - self.p_t);
        let q2 = -self.a_p * sd + self.flow(a_out, self.p_p - p2) - self.flow(a_in, p2 - self.p_t);
        (
            self.bulk_modulus(p1) / (self.a_p * l1) * q1,
            self.bulk_modulus(p2) / (self.a_p * l2) * q2,
        )
    }

    /// Actuator force (24) with the rate `sd` in the friction term.
    pub fn force(&self, p1: f64, p2: f64, sd: f64) -> f64 {
        (p2 - p1) * self.a_p - self.c * sd
    }

    /// Steady pressures (p1, p2) with ṡ = 0 at spool κ (ṗ = 0 in Eqs. 25–26):
    /// `p1 = (κ² p_P + (1−κ)² p_T)/(κ² + (1−κ)²)`, `p2 = ((1−κ)² p_P + κ² p_T)/(κ² + (1−κ)²)`.
    pub fn steady_pressures(&self, kappa: f64) -> (f64, f64) {
        let (k2, j2) = (kappa * kappa, (1.0 - kappa) * (1.0 - kappa));
        let den = k2 + j2;
        (
            (k2 * self.p_p + j2 * self.p_t) / den,
            (j2 * self.p_p + k2 * self.p_t) / den,
        )
    }

    /// The spool position κ0 in [0, 1] whose steady pressures hold the force `f_eq` at rest,
    /// `(p2 − p1) a_p = f_eq`, by Newton–Raphson from κ = 0.5 (safeguarded by bisection; the
    /// force falls monotonically from (p_P − p_T) a_p at κ = 0 to −(p_P − p_T) a_p at κ = 1).
    /// Returns (κ0, p1, p2).
    pub fn equilibrium(&self, f_eq: f64) -> Result<(f64, f64, f64), String> {
        let span = (self.p_p - self.p_t) * self.a_p;
        if !(f_eq.is_finite() && f_eq.abs() < span) {
            return Err(format!(
                "no spool position holds f_eq = {f_eq} N: |f_eq| must be below \
                 (p_P - p_T) a_p = {span} N"
            ));
        }
        // g(κ) = (1 − 2κ) Δ a_p / (κ² + (1−κ)²) − f_eq, decreasing on [0, 1].
        let g = |k: f64| {
            let den = k * k + (1.0 - k) * (1.0 - k);
            let val = (1.0 - 2.0 * k) * span / den - f_eq;
            // d/dκ of (1 − 2κ)/den: (−2 den − (1 − 2κ)(4κ − 2)) / den²
            let dval = (-2.0 * den - (1.0 - 2.0 * k) * (4.0 * k - 2.0)) / (den * den) * span;
            (val, dval)
        };
        let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
        let mut k = 0.5;
        for _ in 0..200 {
            let (val, dval) = g(k);
            if val == 0.0 {
                break;
            }
            if val > 0.0 {
                lo = k;
            } else {
                hi = k;
            }
            let mut next = k - val / dval;
            if !(next > lo && next < hi) {
                next = 0.5 * (lo + hi);
            }
            if (next - k).abs() <= 1e-15 {
                k = next;
                break;
            }
            k = next;
        }
        let (p1, p2) = self.steady_pressures(k);
        Ok((k, p1, p2))
    }
}

/// The spool law: Eq. 30 (actuator 1) or Eq. 35 (actuator 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spool {
    /// 1: Eq. 30, 2: Eq. 35, 0: κ held at κ0.
    pub law: i32,
    /// Initial spool position κ0.
    pub kappa0: f64,
    /// Start of the manoeuvre t_a [s] (2 s).
    pub t_a: f64,
    /// Start of the retraction t_b [s] (6 s, Eq. 30 only).
    pub t_b: f64,
    /// Transition time t_r [s] (1 ms, Eq. 30 only).
    pub t_r: f64,
}

impl Spool {
    /// κ(t).
    ///
    /// Eq. 30: κ0 for t ≤ t_a; κ0 − 0.01 (t − t_a)/t_r up to t_a + t_r; κ0 − 0.01 up to t_b;
    /// κ0 − 0.01 + 0.03 (t − t_b)/(2 t_r) up to t_b + 2 t_r; κ0 + 0.02 after.
    /// Eq. 35 (as printed): κ0 − 0.0025 t for t ≤ t_a, κ0 − 0.005 after.
    pub fn kappa(&self, t: f64) -> f64 {
        let (k0, ta, tb, tr) = (self.kappa0, self.t_a, self.t_b, self.t_r);
        match self.law {
            1 => {
                if t <= ta {
                    k0
                } else if t <= ta + tr {
                    k0 - 0.01 * (t - ta) / tr
                } else if t <= tb {
                    k0 - 0.01
                } else if t <= tb + 2.0 * tr {
                    k0 - 0.01 + 0.03 * (t - tb) / (2.0 * tr)
                } else {
                    k0 + 0.02
                }
            }
            2 => {
                if t <= ta {
                    k0 - 0.0025 * t
                } else {
                    k0 - 0.005
                }
            }
            _ => k0,
        }
    }
}
