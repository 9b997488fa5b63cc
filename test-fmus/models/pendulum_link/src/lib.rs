//! PendulumLink: one planar rigid link of the double pendulum of Meyer, Li, Lu, Schweizer (2018),
//! "Implicit co-simulation method for constraint coupling with improved stability behavior"
//! (Sect. 4.2), as a force-driven subsystem for constraint (index-1) coupling: the importer
//! applies the joint force at the link's coupling point and reads back the coupling point's
//! position, velocity and acceleration.
//!
//! # The link
//! A uniform rod of mass `m`, length `l` and inertia `J` about its centre (`J` = 0 means
//! m l²/12), gravity `g` along −y. Conventions:
//! - the angle φ (`phi`) is measured from the +x axis, counter-clockwise positive;
//!   e = (cos φ, sin φ) is the link direction, n = (−sin φ, cos φ) its normal;
//! - `grounded` = true: a pendulum about a fixed revolute joint at the origin (one degree of
//!   freedom φ). The centre is (l/2) e and the **coupling point is the far end** Q = l e;
//! - `grounded` = false: a free body (centre (x, y) and φ). The **coupling point is the near
//!   end** P = (x, y) − (l/2) e. The initial state is given through the coupling point so that
//!   it is consistent with a joint there: P(0) = (`attach_x`, `attach_y`),
//!   Ṗ(0) = (`attach_vx`, `attach_vy`), i.e. the initial centre is attach + (l/2) e(φ0) and its
//!   velocity attach_v + (l/2) ω0 n(φ0);
//! - the inputs (`Fx`, `Fy`) are the force that acts **on this link** at its coupling point.
//!   For the double pendulum (link 1 grounded, link 2 free, Q1 = P2) with λ the force link 1
//!   exerts on link 2: link 2 gets F = λ, link 1 gets F = −λ.
//!
//! The defaults are link 1 of the paper (m = 1 kg, l = 1 m, φ0 = π/4, at rest, grounded);
//! `grounded` = false with `phi0` = −π/4 gives link 2, whose default `attach_x`, `attach_y`
//! (cos π/4, sin π/4) is link 1's far end at the start.
//!
//! # Equations
//! With the reference point o (the pivot when grounded, the centre when free), the offset d of
//! the coupling point along e (d = l grounded, d = −l/2 free) and the inertia about o,
//! J_o = J + m l²/4 (grounded) or J (free):
//! - J_o φ̈ = d n·F + G(φ), with the gravity torque G = −m g (l/2) cos φ (grounded) or 0 (free);
//! - free only: m (ẍ, ÿ) = F + (0, −m g);
//! - coupling point p = o + d e, ṗ = ȯ + d ω n, p̈ = ö + d (φ̈ n − ω² e) (o fixed when
//!   grounded).
//!
//! The coupling point's acceleration (`ax`, `ay`) has direct feedthrough from (`Fx`, `Fy`)
//! (declared in the model structure); its mobility is ∂p̈/∂F = d²/J_o n nᵀ (grounded:
//! l²/(J + m l²/4) n nᵀ) plus I/m for the free body (I/m + (l/2)²/J n nᵀ).
//!
//! # States, integrator
//! The continuous states are φ (`phi`), ω (`omega`) and the free body's centre and centre
//! velocity (locals `xc`, `yc`, `vxc`, `vyc`; held at 0 with zero derivatives when grounded;
//! the outputs `x`, `y` are the centre in both cases). They are integrated with the kit's
//! adaptive Dormand–Prince 5(4) at `rtol` (default 1e-12) and `atol` (default 1e-14, in rad,
//! rad/s, m, m/s); each communication step is one adaptive interval ending exactly on the
//! communication point, with the force following its input polynomial within the step (FMI 2
//! input derivatives of orders 1..=3, FMI 3 `intermediateUpdate`).
//!
//! # Derivatives
//! Partial derivatives of every output and state derivative with respect to the states and the
//! inputs are analytic (a tangent-linear evaluation); those with respect to parameters are left
//! to the kit's finite differences. Output derivatives of orders 1 and 2 of every output along
//! the trajectory with the current input derivatives (for `ax`, `ay` they need Ḟ and F̈).
//! The local `E` is the mechanical energy (kinetic + gravity potential, zero at y = 0).

// `!(x > y)` is deliberate: NaN must fail every range check.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use fmu_kit::{Context, Experiment, Inputs, Integrator, Model, Values, Variable};

/// Output: coupling point x [m].
pub const PX: u32 = 1;
/// Output: coupling point y [m].
pub const PY: u32 = 2;
/// Output: coupling point velocity x [m/s].
pub const VX: u32 = 3;
/// Output: coupling point velocity y [m/s].
pub const VY: u32 = 4;
/// Output: coupling point acceleration x [m/s²] (direct feedthrough of Fx, Fy).
pub const AX: u32 = 5;
/// Output: coupling point acceleration y [m/s²] (direct feedthrough of Fx, Fy).
pub const AY: u32 = 6;
/// Output and state: angle φ [rad] from the +x axis.
pub const PHI: u32 = 7;
/// Output and state: angular velocity ω [rad/s].
pub const OMEGA: u32 = 8;
/// Output: centre of mass x [m].
pub const X: u32 = 9;
/// Output: centre of mass y [m].
pub const Y: u32 = 10;
/// Input: force on the link at its coupling point, x [N].
pub const FX: u32 = 11;
/// Input: force on the link at its coupling point, y [N].
pub const FY: u32 = 12;
/// der(phi).
pub const DER_PHI: u32 = 13;
/// der(omega).
pub const DER_OMEGA: u32 = 14;
/// Local state: free body's centre x (0 when grounded).
pub const XC: u32 = 15;
/// Local state: free body's centre y (0 when grounded).
pub const YC: u32 = 16;
/// Local state: free body's centre velocity x (0 when grounded).
pub const VXC: u32 = 17;
/// Local state: free body's centre velocity y (0 when grounded).
pub const VYC: u32 = 18;
/// der(xc).
pub const DER_XC: u32 = 19;
/// der(yc).
pub const DER_YC: u32 = 20;
/// der(vxc).
pub const DER_VXC: u32 = 21;
/// der(vyc).
pub const DER_VYC: u32 = 22;
/// Local: mechanical energy [J].
pub const ENERGY: u32 = 23;
/// Parameter: mass [kg].
pub const M: u32 = 30;
/// Parameter: length [m].
pub const L: u32 = 31;
/// Parameter: inertia about the centre [kg m²] (0: m l²/12).
pub const J: u32 = 32;
/// Parameter: gravity [m/s²] (along −y).
pub const G: u32 = 33;
/// Parameter: initial angle [rad].
pub const PHI0: u32 = 34;
/// Parameter: initial angular velocity [rad/s].
pub const OMEGA0: u32 = 35;
/// Parameter (Boolean): pendulum about the origin (true) or free body (false).
pub const GROUNDED: u32 = 36;
/// Parameter: free body's initial coupling point x [m].
pub const ATTACH_X: u32 = 37;
/// Parameter: free body's initial coupling point y [m].
pub const ATTACH_Y: u32 = 38;
/// Parameter: free body's initial coupling point velocity x [m/s].
pub const ATTACH_VX: u32 = 39;
/// Parameter: free body's initial coupling point velocity y [m/s].
pub const ATTACH_VY: u32 = 40;
/// Parameter: relative tolerance of the integrator.
pub const RTOL: u32 = 41;
/// Parameter: absolute tolerance of the integrator.
pub const ATOL: u32 = 42;

/// The pendulum link model.
#[derive(Default)]
pub struct PendulumLink;

type V2 = [f64; 2];

fn dot(a: V2, b: V2) -> f64 {
    a[0] * b[0] + a[1] * b[1]
}

/// `a + s b`.
fn axpy(a: V2, s: f64, b: V2) -> V2 {
    [a[0] + s * b[0], a[1] + s * b[1]]
}

fn scale(s: f64, a: V2) -> V2 {
    [s * a[0], s * a[1]]
}

/// `p e + q n`.
fn combo(p: f64, e: V2, q: f64, n: V2) -> V2 {
    [p * e[0] + q * n[0], p * e[1] + q * n[1]]
}

/// Direction e and normal n of the link at angle `phi`.
fn frame(phi: f64) -> (V2, V2) {
    let (s, c) = phi.sin_cos();
    ([c, s], [-s, c])
}

/// The link's parameters, validated.
#[derive(Clone, Copy, Debug)]
struct Link {
    m: f64,
    l: f64,
    g: f64,
    grounded: bool,
    /// Offset of the coupling point from the reference point along e.
    d: f64,
    /// Inertia about the reference point.
    jo: f64,
}

impl Link {
    fn from(v: &Values) -> Result<Link, String> {
        let (m, l, j, g) = (v.f64(M), v.f64(L), v.f64(J), v.f64(G));
        if !(m > 0.0 && m.is_finite()) {
            return Err(format!("mass m = {m} must be positive"));
        }
        if !(l > 0.0 && l.is_finite()) {
            return Err(format!("length l = {l} must be positive"));
        }
        if !(j >= 0.0 && j.is_finite()) {
            return Err(format!("inertia J = {j} must be >= 0 (0: m l^2/12)"));
        }
        if !g.is_finite() {
            return Err(format!("gravity g = {g} must be finite"));
        }
        let j = if j == 0.0 { m * l * l / 12.0 } else { j };
        let grounded = v.bool(GROUNDED);
        let (d, jo) = if grounded {
            (l, j + m * l * l / 4.0)
        } else {
            (-0.5 * l, j)
        };
        Ok(Link {
            m,
            l,
            g,
            grounded,
            d,
            jo,
        })
    }

    /// Gravity torque about the reference point and its derivative with respect to φ.
    fn gravity_torque(&self, e: V2) -> (f64, f64) {
        if self.grounded {
            let k = self.m * self.g * 0.5 * self.l;
            (-k * e[0], k * e[1])
        } else {
            (0.0, 0.0)
        }
    }
}

/// States and inputs (or their tangents).
#[derive(Clone, Copy, Debug, Default)]
struct Point {
    phi: f64,
    omega: f64,
    c: V2,
    cd: V2,
    f: V2,
}

fn point(v: &Values) -> Point {
    Point {
        phi: v.f64(PHI),
        omega: v.f64(OMEGA),
        c: [v.f64(XC), v.f64(YC)],
        cd: [v.f64(VXC), v.f64(VYC)],
        f: [v.f64(FX), v.f64(FY)],
    }
}

/// Everything `evaluate` computes (or its tangent).
#[derive(Clone, Copy, Debug, Default)]
struct Out {
    p: V2,
    vp: V2,
    ap: V2,
    centre: V2,
    alpha: f64,
    /// der(xc, yc).
    dc: V2,
    /// der(vxc, vyc).
    dcd: V2,
}

impl Out {
    /// The value of an output, state derivative or state.
    fn pick(&self, s: &Point, vr: u32) -> Option<f64> {
        Some(match vr {
            PX => self.p[0],
            PY => self.p[1],
            VX => self.vp[0],
            VY => self.vp[1],
            AX => self.ap[0],
            AY => self.ap[1],
            X => self.centre[0],
            Y => self.centre[1],
            PHI => s.phi,
            OMEGA => s.omega,
            XC => s.c[0],
            YC => s.c[1],
            VXC => s.cd[0],
            VYC => s.cd[1],
            DER_PHI => s.omega,
            DER_OMEGA => self.alpha,
            DER_XC => self.dc[0],
            DER_YC => self.dc[1],
            DER_VXC => self.dcd[0],
            DER_VYC => self.dcd[1],
            _ => return None,
        })
    }
}

fn compute(k: &Link, s: &Point) -> Out {
    let (e, n) = frame(s.phi);
    let w = s.omega;
    let alpha = (k.d * dot(n, s.f) + k.gravity_torque(e).0) / k.jo;
    let rot_a = combo(-w * w, e, alpha, n);
    if k.grounded {
        Out {
            p: scale(k.d, e),
            vp: scale(k.d * w, n),
            ap: scale(k.d, rot_a),
            centre: scale(0.5 * k.l, e),
            alpha,
            dc: [0.0; 2],
            dcd: [0.0; 2],
        }
    } else {
        let cdd = [s.f[0] / k.m, s.f[1] / k.m - k.g];
        Out {
            p: axpy(s.c, k.d, e),
            vp: axpy(s.cd, k.d * w, n),
            ap: axpy(cdd, k.d, rot_a),
            centre: s.c,
            alpha,
            dc: s.cd,
            dcd: cdd,
        }
    }
}

/// The tangent of [`compute`] at `s` in the direction `ds`.
fn tangent(k: &Link, s: &Point, ds: &Point) -> Out {
    let (e, n) = frame(s.phi);
    let w = s.omega;
    let (tq, dtq) = k.gravity_torque(e);
    let alpha = (k.d * dot(n, s.f) + tq) / k.jo;
    // δe = δφ n, δn = −δφ e.
    let de = scale(ds.phi, n);
    let dn = scale(-ds.phi, e);
    let dalpha = (k.d * (dot(dn, s.f) + dot(n, ds.f)) + dtq * ds.phi) / k.jo;
    let dvrot = combo(0.0, e, ds.omega, n);
    let dvrot = axpy(dvrot, w, dn);
    // δ(α n − ω² e) = δα n + α δn − 2 ω δω e − ω² δe.
    let mut darot = combo(-2.0 * w * ds.omega, e, dalpha, n);
    darot = axpy(darot, alpha, dn);
    darot = axpy(darot, -w * w, de);
    if k.grounded {
        Out {
            p: scale(k.d, de),
            vp: scale(k.d, dvrot),
            ap: scale(k.d, darot),
            centre: scale(0.5 * k.l, de),
            alpha: dalpha,
            dc: [0.0; 2],
            dcd: [0.0; 2],
        }
    } else {
        let dcdd = scale(1.0 / k.m, ds.f);
        Out {
            p: axpy(ds.c, k.d, de),
            vp: axpy(ds.cd, k.d, dvrot),
            ap: axpy(dcdd, k.d, darot),
            centre: ds.c,
            alpha: dalpha,
            dc: ds.cd,
            dcd: dcdd,
        }
    }
}

fn energy(k: &Link, s: &Point) -> f64 {
    if k.grounded {
        0.5 * k.jo * s.omega * s.omega + k.m * k.g * 0.5 * k.l * s.phi.sin()
    } else {
        0.5 * k.m * dot(s.cd, s.cd) + 0.5 * k.jo * s.omega * s.omega + k.m * k.g * s.c[1]
    }
}

fn check_tolerances(v: &Values) -> Result<(), String> {
    let (rtol, atol) = (v.f64(RTOL), v.f64(ATOL));
    if !(rtol > 0.0 && atol > 0.0 && rtol.is_finite() && atol.is_finite()) {
        return Err(format!("rtol = {rtol} and atol = {atol} must be positive"));
    }
    Ok(())
}

impl Model for PendulumLink {
    const NAME: &'static str = "PendulumLink";
    const DESCRIPTION: &'static str = "Planar rigid link (grounded pendulum or free body) driven \
        by the joint force at its coupling point (Meyer et al. 2018, double pendulum)";
    const MAX_OUTPUT_DERIVATIVE_ORDER: u32 = 2;
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 2.0,
        step: 0.01,
    };

    fn variables(&self) -> Vec<Variable> {
        let out = |vr, name: &str, unit: &str, what: &str, deps: &[u32]| {
            Variable::float64(vr, name)
                .output()
                .unit(unit)
                .description(what)
                .depends_on(deps)
        };
        let param = |vr, name: &str, start: f64, unit: &str, what: &str| {
            Variable::float64(vr, name)
                .parameter()
                .start(start)
                .unit(unit)
                .description(what)
        };
        let state = |vr, name: &str, unit: &str, what: &str| {
            Variable::float64(vr, name).unit(unit).description(what)
        };
        let der = |vr, name: &str, of: u32, unit: &str, deps: &[u32]| {
            Variable::float64(vr, name)
                .unit(unit)
                .derivative_of(of)
                .depends_on(deps)
        };
        let quarter = std::f64::consts::FRAC_PI_4;
        let position = [PHI, XC, YC];
        let velocity = [PHI, OMEGA, VXC, VYC];
        let accel = [PHI, OMEGA, FX, FY];
        vec![
            out(
                PX,
                "px",
                "m",
                "Coupling point x (grounded: far end, free: near end)",
                &position,
            ),
            out(PY, "py", "m", "Coupling point y", &position),
            out(VX, "vx", "m/s", "Coupling point velocity x", &velocity),
            out(VY, "vy", "m/s", "Coupling point velocity y", &velocity),
            out(
                AX,
                "ax",
                "m/s2",
                "Coupling point acceleration x (direct feedthrough of Fx, Fy)",
                &accel,
            ),
            out(
                AY,
                "ay",
                "m/s2",
                "Coupling point acceleration y (direct feedthrough of Fx, Fy)",
                &accel,
            ),
            out(
                PHI,
                "phi",
                "rad",
                "Link angle from the +x axis, counter-clockwise (state)",
                &[PHI],
            ),
            out(
                OMEGA,
                "omega",
                "rad/s",
                "Angular velocity (state)",
                &[OMEGA],
            ),
            out(X, "x", "m", "Centre of mass x", &position),
            out(Y, "y", "m", "Centre of mass y", &position),
            Variable::float64(FX, "Fx")
                .input()
                .start(0.0)
                .unit("N")
                .description("Force on this link at its coupling point, x")
                .intermediate_update(),
            Variable::float64(FY, "Fy")
                .input()
                .start(0.0)
                .unit("N")
                .description("Force on this link at its coupling point, y")
                .intermediate_update(),
            der(DER_PHI, "der(phi)", PHI, "rad/s", &[OMEGA]),
            der(DER_OMEGA, "der(omega)", OMEGA, "rad/s2", &[PHI, FX, FY]),
            state(
                XC,
                "xc",
                "m",
                "Free body: centre x (state; 0 and unused when grounded)",
            ),
            state(
                YC,
                "yc",
                "m",
                "Free body: centre y (state; 0 and unused when grounded)",
            ),
            state(
                VXC,
                "vxc",
                "m/s",
                "Free body: centre velocity x (state; 0 and unused when grounded)",
            ),
            state(
                VYC,
                "vyc",
                "m/s",
                "Free body: centre velocity y (state; 0 and unused when grounded)",
            ),
            der(DER_XC, "der(xc)", XC, "m/s", &[VXC]),
            der(DER_YC, "der(yc)", YC, "m/s", &[VYC]),
            der(DER_VXC, "der(vxc)", VXC, "m/s2", &[FX]),
            der(DER_VYC, "der(vyc)", VYC, "m/s2", &[FY]),
            Variable::float64(ENERGY, "E")
                .unit("J")
                .description("Mechanical energy (kinetic + gravity potential, 0 at y = 0)"),
            param(M, "m", 1.0, "kg", "Mass (> 0)").min(0.0),
            param(L, "l", 1.0, "m", "Length (> 0)").min(0.0),
            param(
                J,
                "J",
                0.0,
                "kg.m2",
                "Inertia about the centre of mass (0: m l^2/12, a uniform rod)",
            )
            .min(0.0),
            param(G, "g", 9.81, "m/s2", "Gravity, acting along -y"),
            param(
                PHI0,
                "phi0",
                quarter,
                "rad",
                "Initial angle from the +x axis",
            ),
            param(OMEGA0, "omega0", 0.0, "rad/s", "Initial angular velocity"),
            Variable::boolean(GROUNDED, "grounded")
                .parameter()
                .start(true)
                .description(
                    "true: pendulum about a revolute joint at the origin, coupling point at the \
                     far end l (cos phi, sin phi); false: free body, coupling point at the near \
                     end (x, y) - (l/2)(cos phi, sin phi)",
                ),
            param(
                ATTACH_X,
                "attach_x",
                quarter.cos(),
                "m",
                "Free body: initial coupling point x (the centre starts at attach + (l/2) e(phi0))",
            ),
            param(
                ATTACH_Y,
                "attach_y",
                quarter.sin(),
                "m",
                "Free body: initial coupling point y",
            ),
            param(
                ATTACH_VX,
                "attach_vx",
                0.0,
                "m/s",
                "Free body: initial coupling point velocity x (the centre starts at \
                 attach_v + (l/2) omega0 n(phi0))",
            ),
            param(
                ATTACH_VY,
                "attach_vy",
                0.0,
                "m/s",
                "Free body: initial coupling point velocity y",
            ),
            Variable::float64(RTOL, "rtol")
                .parameter()
                .start(1e-12)
                .min(0.0)
                .description("Relative tolerance of the adaptive integrator (> 0)"),
            Variable::float64(ATOL, "atol")
                .parameter()
                .start(1e-14)
                .min(0.0)
                .description(
                    "Absolute tolerance of the adaptive integrator (> 0; rad, rad/s, m, m/s)",
                ),
        ]
    }

    fn initialize(&self, v: &mut Values, _cx: &Context) -> Result<(), String> {
        let k = Link::from(v)?;
        let (phi0, omega0) = (v.f64(PHI0), v.f64(OMEGA0));
        v.set_f64(PHI, phi0);
        v.set_f64(OMEGA, omega0);
        let (c, cd) = if k.grounded {
            ([0.0; 2], [0.0; 2])
        } else {
            let (e, n) = frame(phi0);
            let attach = [v.f64(ATTACH_X), v.f64(ATTACH_Y)];
            let attach_v = [v.f64(ATTACH_VX), v.f64(ATTACH_VY)];
            (
                axpy(attach, 0.5 * k.l, e),
                axpy(attach_v, 0.5 * k.l * omega0, n),
            )
        };
        v.set_f64(XC, c[0]);
        v.set_f64(YC, c[1]);
        v.set_f64(VXC, cd[0]);
        v.set_f64(VYC, cd[1]);
        Ok(())
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let k = Link::from(v)?;
        check_tolerances(v)?;
        let s = point(v);
        let o = compute(&k, &s);
        for (vr, x) in [
            (PX, o.p[0]),
            (PY, o.p[1]),
            (VX, o.vp[0]),
            (VY, o.vp[1]),
            (AX, o.ap[0]),
            (AY, o.ap[1]),
            (X, o.centre[0]),
            (Y, o.centre[1]),
            (DER_PHI, s.omega),
            (DER_OMEGA, o.alpha),
            (DER_XC, o.dc[0]),
            (DER_YC, o.dc[1]),
            (DER_VXC, o.dcd[0]),
            (DER_VYC, o.dcd[1]),
            (ENERGY, energy(&k, &s)),
        ] {
            v.set_f64(vr, x);
        }
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
        let mut ds = Point::default();
        match wrt {
            PHI => ds.phi = 1.0,
            OMEGA => ds.omega = 1.0,
            XC => ds.c[0] = 1.0,
            YC => ds.c[1] = 1.0,
            VXC => ds.cd[0] = 1.0,
            VYC => ds.cd[1] = 1.0,
            FX => ds.f[0] = 1.0,
            FY => ds.f[1] = 1.0,
            _ => return None,
        }
        let k = Link::from(v).ok()?;
        let s = point(v);
        tangent(&k, &s, &ds).pick(&ds, of)
    }

    fn output_derivative(
        &self,
        v: &Values,
        inputs: &Inputs<'_>,
        _time: f64,
        vr: u32,
        order: u32,
    ) -> Option<f64> {
        if !(1..=2).contains(&order) {
            return None;
        }
        let k = Link::from(v).ok()?;
        let s = point(v);
        let (fx, fy) = (inputs.taylor(FX), inputs.taylor(FY));
        let f = [[fx[0], fy[0]], [fx[1], fy[1]], [fx[2], fy[2]]];
        let (e, n) = frame(s.phi);
        // φ^(j), j = 1..=4 (index j - 1).
        let p1 = s.omega;
        let (tq, tq_phi) = k.gravity_torque(e);
        let p2 = (k.d * dot(n, f[0]) + tq) / k.jo;
        // ṅ = −φ̇ e, n̈ = −φ̈ e − φ̇² n; gravity torque G = −K cos φ: Ġ = K sin φ φ̇,
        // G̈ = K (cos φ φ̇² + sin φ φ̈) = −G φ̇² + G_φ φ̈.
        let n1 = scale(-p1, e);
        let n2 = combo(-p2, e, -p1 * p1, n);
        let p3 = (k.d * (dot(n1, f[0]) + dot(n, f[1])) + tq_phi * p1) / k.jo;
        let p4 = (k.d * (dot(n2, f[0]) + 2.0 * dot(n1, f[1]) + dot(n, f[2])) - tq * p1 * p1
            + tq_phi * p2)
            / k.jo;
        // e^(j), j = 1..=4.
        let e_d = [
            scale(p1, n),
            combo(-p1 * p1, e, p2, n),
            combo(-3.0 * p1 * p2, e, p3 - p1.powi(3), n),
            combo(
                -4.0 * p1 * p3 - 3.0 * p2 * p2 + p1.powi(4),
                e,
                p4 - 6.0 * p1 * p1 * p2,
                n,
            ),
        ];
        // Reference point o^(j), j = 1..=4, and centre^(j), j = 1..=2.
        let (o_d, centre_d) = if k.grounded {
            (
                [[0.0; 2]; 4],
                [scale(0.5 * k.l, e_d[0]), scale(0.5 * k.l, e_d[1])],
            )
        } else {
            let o = [
                s.cd,
                [f[0][0] / k.m, f[0][1] / k.m - k.g],
                scale(1.0 / k.m, f[1]),
                scale(1.0 / k.m, f[2]),
            ];
            (o, [o[0], o[1]])
        };
        // Coupling point p^(j), j = 1..=4.
        let p_d: Vec<V2> = (0..4).map(|j| axpy(o_d[j], k.d, e_d[j])).collect();
        let phi_d = [p1, p2, p3];
        let j = order as usize - 1;
        let c = |a: V2, i: usize| a[i];
        Some(match vr {
            PX => c(p_d[j], 0),
            PY => c(p_d[j], 1),
            VX => c(p_d[j + 1], 0),
            VY => c(p_d[j + 1], 1),
            AX => c(p_d[j + 2], 0),
            AY => c(p_d[j + 2], 1),
            PHI => phi_d[j],
            OMEGA => phi_d[j + 1],
            X => c(centre_d[j], 0),
            Y => c(centre_d[j], 1),
            _ => return None,
        })
    }
}

fmu_kit::export_fmu!(PendulumLink);

#[cfg(test)]
mod tests;
