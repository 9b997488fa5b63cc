//! The planar crane multibody system of Peiret et al. (2018), Sec. 4.1 / 4.1.1, Fig. 5 / 7,
//! Table 1, in independent coordinates q = [θ1, θ2] (N = I), as plain functions.
//!
//! Geometry: link 1 (length L, uniform mass m) pivots at the origin; P = (L/2)(cos θ1, sin θ1)
//! is its midpoint and Q = 2P its tip, carrying the point mass m_p. Link 2 (massless, length
//! L_h) hangs from Q; R = Q + L_h (cos θ2, sin θ2) carries the point mass m_h. Gravity g acts
//! along y (g = −9.81 m/s²). Actuator 1 joins B and P (s1 = |P − B|); actuator 2 (double-actuated
//! crane) joins P and the midpoint of link 2 (s2 = |R|/2).
//!
//! Dynamics (2): `M v̇ + c = f + A_iᵀ λ` with
//! `M = [[m L²/3 + (m_p + m_h) L², m_h L L_h cos(θ1 − θ2)], [·, m_h L_h²]]`,
//! `c = m_h L L_h sin(θ1 − θ2) [θ̇2², −θ̇1²]`,
//! `f = g [L cos θ1 (m/2 + m_p + m_h), m_h L_h cos θ2]`, and the interface Jacobian A_i (22), (33)
//! whose row j is `d_jᵀ (∂d_j/∂q) / s_j` for the actuator vector d_j (P − B, resp. R/2).
//!
//! Reduced interface model (12–13): mobility `W = A_i M⁻¹ A_iᵀ`, effective mass `M̃ = W⁻¹`,
//! effective force `f̃ = M̃ (A_i M⁻¹ (f − c) + Ȧ_i v)`, so `s̈ = W (λ + f̃)`. `Ȧ_i v` of actuator j
//! is `(|ḋ_j|² + d_j · d̈_j|_{v̇=0} − ṡ_j²) / s_j`.

/// Table 1 data and the number of actuators.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Crane {
    /// Number of actuators p (1 or 2).
    pub actuators: usize,
    /// Length of link 1, L [m].
    pub l: f64,
    /// Length of link 2, L_h [m].
    pub l_h: f64,
    /// Distributed mass of link 1, m [kg].
    pub m: f64,
    /// Point mass at Q, m_p [kg].
    pub m_p: f64,
    /// Point mass at R, m_h [kg].
    pub m_h: f64,
    /// Actuator 1 base point B [m].
    pub b: [f64; 2],
    /// Gravity along y [m/s²] (negative: downwards).
    pub g: f64,
}

/// Initial angles of Table 1: θ1,0 = π/6, θ2,0 = 3π/2.
pub const THETA0: [f64; 2] = [std::f64::consts::FRAC_PI_6, 1.5 * std::f64::consts::PI];

impl Crane {
    /// Table 1 with `actuators` actuators.
    pub fn paper(actuators: usize) -> Crane {
        Crane {
            actuators,
            l: 1.0,
            l_h: 0.5,
            m: 200.0,
            m_p: 250.0,
            m_h: 100.0,
            b: [0.75_f64.sqrt(), 0.0],
            g: -9.81,
        }
    }

    /// Rejects data the equations cannot use.
    pub fn check(&self) -> Result<(), String> {
        if !(self.actuators == 1 || self.actuators == 2) {
            return Err(format!("actuators = {} must be 1 or 2", self.actuators));
        }
        for (name, x) in [
            ("L", self.l),
            ("L_h", self.l_h),
            ("m", self.m),
            ("m_h", self.m_h),
        ] {
            if !(x > 0.0 && x.is_finite()) {
                return Err(format!("{name} = {x} must be positive"));
            }
        }
        if !(self.m_p >= 0.0 && self.m_p.is_finite()) {
            return Err(format!("m_p = {} must be >= 0", self.m_p));
        }
        if !(self.g.is_finite() && self.b[0].is_finite() && self.b[1].is_finite()) {
            return Err("g and B must be finite".into());
        }
        Ok(())
    }

    /// Everything at state (q, v) with actuator forces λ (λ[1] ignored with one actuator).
    pub fn eval(&self, q: [f64; 2], v: [f64; 2], lambda: [f64; 2]) -> Eval {
        let (s1, c1) = q[0].sin_cos();
        let (s2, c2) = q[1].sin_cos();
        let (l, lh) = (self.l, self.l_h);
        let (sd12, cd12) = (q[0] - q[1]).sin_cos();
        let m11 = self.m * l * l / 3.0 + (self.m_p + self.m_h) * l * l;
        let m12 = self.m_h * l * lh * cd12;
        let m22 = self.m_h * lh * lh;
        let det = m11 * m22 - m12 * m12;
        let minv = [[m22 / det, -m12 / det], [-m12 / det, m11 / det]];
        let cor = [
            self.m_h * l * lh * sd12 * v[1] * v[1],
            -self.m_h * l * lh * sd12 * v[0] * v[0],
        ];
        let grav = [
            self.g * l * c1 * (0.5 * self.m + self.m_p + self.m_h),
            self.g * self.m_h * lh * c2,
        ];
        let rhs0 = [grav[0] - cor[0], grav[1] - cor[1]];
        let mul = |a: [[f64; 2]; 2], x: [f64; 2]| {
            [
                a[0][0] * x[0] + a[0][1] * x[1],
                a[1][0] * x[0] + a[1][1] * x[1],
            ]
        };
        let dot = |a: [f64; 2], b: [f64; 2]| a[0] * b[0] + a[1] * b[1];
        let r = [l * c1 + lh * c2, l * s1 + lh * s2];
        let r_dot = [
            -l * s1 * v[0] - lh * s2 * v[1],
            l * c1 * v[0] + lh * c2 * v[1],
        ];
        // Actuator vectors d_j, their Jacobians (columns ∂d/∂θ1, ∂d/∂θ2) and the velocity part
        // of d̈_j.
        let acts: [Actuator; 2] = [
            (
                [0.5 * l * c1 - self.b[0], 0.5 * l * s1 - self.b[1]],
                [[-0.5 * l * s1, 0.0], [0.5 * l * c1, 0.0]],
                [-0.5 * l * c1 * v[0] * v[0], -0.5 * l * s1 * v[0] * v[0]],
            ),
            (
                [0.5 * r[0], 0.5 * r[1]],
                [
                    [-0.5 * l * s1, -0.5 * lh * s2],
                    [0.5 * l * c1, 0.5 * lh * c2],
                ],
                [
                    -0.5 * (l * c1 * v[0] * v[0] + lh * c2 * v[1] * v[1]),
                    -0.5 * (l * s1 * v[0] * v[0] + lh * s2 * v[1] * v[1]),
                ],
            ),
        ];
        let p = self.actuators.clamp(1, 2);
        let mut e = Eval {
            mass: [[m11, m12], [m12, m22]],
            r,
            r_dot,
            ..Eval::default()
        };
        let minv_rhs0 = mul(minv, rhs0);
        for (j, (d, jac, ddv)) in acts.iter().enumerate().take(p) {
            let s = dot(*d, *d).sqrt();
            let a = [
                (d[0] * jac[0][0] + d[1] * jac[1][0]) / s,
                (d[0] * jac[0][1] + d[1] * jac[1][1]) / s,
            ];
            let sd = dot(a, v);
            let d_dot = mul(*jac, v);
            let adot_v = (dot(d_dot, d_dot) + dot(*d, *ddv) - sd * sd) / s;
            e.s[j] = s;
            e.sd[j] = sd;
            e.a[j] = a;
            e.acc_free[j] = dot(a, minv_rhs0) + adot_v;
        }
        for j in 0..p {
            let minv_aj = mul(minv, e.a[j]);
            for k in 0..p {
                e.w[k][j] = dot(e.a[k], minv_aj);
            }
        }
        let lam = if p == 2 { lambda } else { [lambda[0], 0.0] };
        for j in 0..p {
            e.sdd[j] = e.acc_free[j] + e.w[j][0] * lam[0] + e.w[j][1] * lam[1];
        }
        if p == 1 {
            e.m_eff[0][0] = 1.0 / e.w[0][0];
        } else {
            let dw = e.w[0][0] * e.w[1][1] - e.w[0][1] * e.w[1][0];
            e.m_eff = [
                [e.w[1][1] / dw, -e.w[0][1] / dw],
                [-e.w[1][0] / dw, e.w[0][0] / dw],
            ];
        }
        e.f_eff = mul(e.m_eff, e.acc_free);
        let gen = [
            rhs0[0] + e.a[0][0] * lam[0] + e.a[1][0] * lam[1],
            rhs0[1] + e.a[0][1] * lam[0] + e.a[1][1] * lam[1],
        ];
        e.accel = mul(minv, gen);
        e
    }

    /// The actuator forces that hold the crane at rest at q (s̈ = 0 at v = 0: λ = −f̃); with two
    /// actuators (A_i regular) the crane is then in static equilibrium. With the paper's data:
    /// [8829.0, 0.0] N (f_s1^eq = 2 (m/2 + m_p + m_h) |g|).
    pub fn equilibrium_forces(&self, q: [f64; 2]) -> [f64; 2] {
        let e = self.eval(q, [0.0; 2], [0.0; 2]);
        let f = [-e.f_eff[0], -e.f_eff[1]];
        [f[0] + 0.0, f[1] + 0.0]
    }

    /// One symplectic Euler step (38): `v⁺ = v + h v̇(q, v, λ)`, `q⁺ = q + h v⁺`.
    pub fn symplectic_euler(&self, q: &mut [f64; 2], v: &mut [f64; 2], lambda: [f64; 2], h: f64) {
        let acc = self.eval(*q, *v, lambda).accel;
        for i in 0..2 {
            v[i] += h * acc[i];
            q[i] += h * v[i];
        }
    }

    /// One classical RK4 step of `q̇ = v`, `v̇ = v̇(q, v, λ)` with λ held.
    pub fn rk4(&self, q: &mut [f64; 2], v: &mut [f64; 2], lambda: [f64; 2], h: f64) {
        let f = |y: [f64; 4]| {
            let a = self.eval([y[0], y[1]], [y[2], y[3]], lambda).accel;
            [y[2], y[3], a[0], a[1]]
        };
        let y0 = [q[0], q[1], v[0], v[1]];
        let add = |y: [f64; 4], k: [f64; 4], c: f64| {
            [
                y[0] + c * k[0],
                y[1] + c * k[1],
                y[2] + c * k[2],
                y[3] + c * k[3],
            ]
        };
        let k1 = f(y0);
        let k2 = f(add(y0, k1, 0.5 * h));
        let k3 = f(add(y0, k2, 0.5 * h));
        let k4 = f(add(y0, k3, h));
        for i in 0..4 {
            let y = y0[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
            if i < 2 {
                q[i] = y;
            } else {
                v[i - 2] = y;
            }
        }
    }
}

/// An actuator vector d, its Jacobian (columns ∂d/∂θ1, ∂d/∂θ2) and the velocity part of d̈.
type Actuator = ([f64; 2], [[f64; 2]; 2], [f64; 2]);

/// The crane's quantities at one state and force (rows and entries of the second actuator are 0
/// with one actuator).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Eval {
    /// Mass matrix M(q).
    pub mass: [[f64; 2]; 2],
    /// Accelerations v̇ = [θ̈1, θ̈2] with the given forces.
    pub accel: [f64; 2],
    /// Interface Jacobian A_i (row j: actuator j).
    pub a: [[f64; 2]; 2],
    /// Actuator lengths s_j.
    pub s: [f64; 2],
    /// Actuator rates ṡ_j = A_i v.
    pub sd: [f64; 2],
    /// Actuator accelerations s̈_j with the given forces.
    pub sdd: [f64; 2],
    /// s̈ without actuator forces: A_i M⁻¹ (f − c) + Ȧ_i v.
    pub acc_free: [f64; 2],
    /// Mobility W = A_i M⁻¹ A_iᵀ = ∂s̈/∂λ.
    pub w: [[f64; 2]; 2],
    /// Effective mass M̃ = W⁻¹ (12).
    pub m_eff: [[f64; 2]; 2],
    /// Effective force f̃ = M̃ (A_i M⁻¹ (f − c) + Ȧ_i v) (13).
    pub f_eff: [f64; 2],
    /// Position of R.
    pub r: [f64; 2],
    /// Velocity of R.
    pub r_dot: [f64; 2],
}
