//! OscillatorChain: a chain of n point masses joined by the nonlinear spring-damper law of
//! Example 2 (Sect. 6.2, Eq. 37) of the variable order / step-size co-simulation paper,
//! driven at both ends by applied forces.
//!
//! Mass i (1-based, displacement x_i, velocity v_i) feels from its left neighbour the force
//! `-F_SD(Δx, Δv)` and its left neighbour feels `+F_SD`, with
//! `F_SD = c Δx + d Δv + C Δx³ + D Δv³`, `Δx = x_i - x_{i-1}`, `Δv = v_i - v_{i-1}`.
//! The input `F_left` acts on mass 1 and `F_right` on mass n (with n = 1 both act on the single
//! mass). Defaults (the paper's): m = 0.1 kg, c = 1e7 N/m, d = 1e4 N·s/m, C = 1e14 N/m³,
//! D = 1e2 N·s³/m³, n = 10.
//!
//! Coupling to neighbouring subsystems (force/force): connect `x_last`, `v_last` of one chain
//! and `x_first`, `v_first` of the next to a `CouplingSpring` (c1 = c, d1 = d, c3 = C, d3 = D
//! reproduce Eq. 38), whose `F1` goes to this chain's `F_right` and `F2` to the next chain's
//! `F_left`.
//!
//! Size: `n` (Int32, 1..=1000) is an FMI 3 structural parameter: an FMI 3 importer sets it in
//! Configuration Mode (`fmi3EnterConfigurationMode`, `fmi3SetInt32`, `fmi3ExitConfigurationMode`,
//! right after instantiation); setting it in any other state is an error. FMI 2 has no structural
//! parameters, so there `n` is an ordinary fixed parameter set before initialization. The kit's
//! arrays have fixed sizes (no `<Dimension valueReference>`), so `n` does not size the state
//! arrays: `x`, `v` (and `der(x)`, `der(v)`) are FMI 3 Float64 arrays of the compile-time
//! maximum [`N_MAX`] = 1000 of which only the first n elements move (the rest stay 0). (A
//! structural parameter that sized arrays would have to be UInt64, which FMI 2 lacks.) FMI 2
//! does not show the arrays; the scalar outputs (`x_first` … `a_last`, `x_probe`, `v_probe`)
//! and locals `p`, `E` are in both.
//!
//! Initial states: `x_i = x0 + x0_spread·u_i`, `v_i = v0 + v0_spread·w_i` with u_i, w_i
//! uniform in [-1, 1) from SplitMix64 seeded with `seed` (drawn in the order u_1, w_1, u_2,
//! w_2, …; `r = (next() >> 11)·2⁻⁵³`, `u = 2r - 1`). Defaults: all at rest (x0 = v0 = 0,
//! spreads 0). The paper's random start: x0_spread = 1e-3 m, v0_spread = 10 m/s.
//!
//! Impulse (default off: `impulse_dF` = 0) on mass `impulse_mass`:
//! `F_Imp = ½ ΔF Σ_k [tanh((t - t_k)/δ) - tanh((t - t_k - Δt)/δ)]`, `t_k = impulse_t0 + k·
//! impulse_period` (k ≥ 0; period 0: one impulse), δ = `impulse_delta` (1e-5 s), Δt =
//! `impulse_dt` (2.5e-3 s), period 0.05 s. Each impulse transfers ΔF·Δt of momentum.
//!
//! Contact (default off: `contact_mass` = 0): the force `contact_A·exp(contact_B·x_i)`
//! (defaults -1e-2 N, 5e5 1/m) on masses `contact_mass`, `contact_mass + contact_stride`, …
//! (stride 0: that mass only).
//!
//! Random impulses and contacts (the paper's Example 2; default off: both fractions 0):
//! `impulse_fraction` f_I puts an impulse of the shape above (same δ, Δt, t0, period) on
//! `round(f_I·n)` masses, each with its own amplitude ΔF_j = ±[`impulse_dF_min`,
//! `impulse_dF_max`] (defaults 1e6, 5e6 N); `contact_fraction` f_C puts the contact force above
//! on `round(f_C·n)` masses. Both add to `impulse_mass` and `contact_mass` (a mass with both
//! kinds of contact feels it once). The draws, reproducible from `seed`:
//! - impulses: SplitMix64 seeded with `s + 2³²` (s: `seed` as an unsigned 32-bit number); a
//!   partial Fisher–Yates shuffle of the list 1..=n picks them: for j = 0, 1, …, count - 1,
//!   swap entry j with entry `j + next() mod (n - j)`, the mass now at entry j is chosen, and
//!   the next draw u (uniform in [-1, 1), as above) gives ΔF_j = sign(u)·(min + (max - min)·|u|)
//!   (u < 0: negative);
//! - contacts: SplitMix64 seeded with `s + 2·2³²`, the same shuffle without amplitudes;
//! - a mass with a random contact starts at `-|x_i|`: its wall is at x ≈ 0, and a start inside
//!   it (x = 1e-3 m) would meet a force of 1e-2·e⁵⁰⁰ N.
//!
//! The selection is shown after initialization as the calculated parameters `impulse_count`,
//! `contact_count`, `impulse_dF_sum` (Σ ΔF_j of the random impulses) and, in FMI 3, the arrays
//! `impulse_dF_of` (ΔF on each mass, 0 without a random impulse) and `contact_on` (1 where a
//! random contact acts).
//!
//! Integration: the kit's adaptive Dormand–Prince 5(4) with `rtol` (1e-8) and `atol` (1e-10,
//! in m and m/s), landing exactly on each communication point; with an impulse on, the step is
//! limited to Δt/4 so a pulse cannot be stepped over. Analytic directional derivatives of the
//! outputs with respect to the inputs (a_first/F_left = a_last/F_right = 1/m, the cross terms
//! 1/m for n = 1 and 0 otherwise, positions and velocities 0); the rest by finite differences.
//!
//! Locals: momentum `p = Σ m v_i` and energy `E = Σ ½ m v_i² + Σ_links (½ c Δx² + ¼ C Δx⁴)`
//! (conserved for d = D = 0 without forces, impulses and contacts).

use fmu_kit::{Experiment, Integrator, Model, Values, Variable};

/// Largest number of masses (the length of the state arrays).
pub const N_MAX: usize = 1000;

/// Position of mass 1.
pub const X_FIRST: u32 = 1;
/// Velocity of mass 1.
pub const V_FIRST: u32 = 2;
/// Acceleration of mass 1.
pub const A_FIRST: u32 = 3;
/// Position of mass n.
pub const X_LAST: u32 = 4;
/// Velocity of mass n.
pub const V_LAST: u32 = 5;
/// Acceleration of mass n.
pub const A_LAST: u32 = 6;
/// Force on mass 1.
pub const F_LEFT: u32 = 7;
/// Force on mass n.
pub const F_RIGHT: u32 = 8;
/// Number of masses.
pub const N: u32 = 9;
/// Mass of each body.
pub const M: u32 = 10;
/// Linear stiffness.
pub const C_LIN: u32 = 11;
/// Linear damping.
pub const D_LIN: u32 = 12;
/// Cubic stiffness.
pub const C_CUB: u32 = 13;
/// Cubic damping.
pub const D_CUB: u32 = 14;
/// Initial position (uniform part).
pub const X0: u32 = 15;
/// Initial velocity (uniform part).
pub const V0: u32 = 16;
/// Amplitude of the random part of the initial positions.
pub const X0_SPREAD: u32 = 17;
/// Amplitude of the random part of the initial velocities.
pub const V0_SPREAD: u32 = 18;
/// Seed of the initial-state generator.
pub const SEED: u32 = 19;
/// Impulse amplitude ΔF.
pub const IMP_DF: u32 = 20;
/// Impulse ramp time δ.
pub const IMP_DELTA: u32 = 21;
/// Impulse duration Δt.
pub const IMP_DT: u32 = 22;
/// First impulse start.
pub const IMP_T0: u32 = 23;
/// Impulse period.
pub const IMP_PERIOD: u32 = 24;
/// Mass the impulse acts on.
pub const IMP_MASS: u32 = 25;
/// Contact amplitude A.
pub const CON_A: u32 = 26;
/// Contact exponent B.
pub const CON_B: u32 = 27;
/// First mass with contact (0: none).
pub const CON_MASS: u32 = 28;
/// Stride between masses with contact (0: one mass).
pub const CON_STRIDE: u32 = 29;
/// Relative tolerance.
pub const RTOL: u32 = 30;
/// Absolute tolerance.
pub const ATOL: u32 = 31;
/// Mass shown by the probe outputs.
pub const PROBE: u32 = 32;
/// Position of the probed mass.
pub const X_PROBE: u32 = 33;
/// Velocity of the probed mass.
pub const V_PROBE: u32 = 34;
/// Total momentum.
pub const MOMENTUM: u32 = 35;
/// Energy.
pub const ENERGY: u32 = 36;
/// Fraction of the masses with a random impulse.
pub const IMP_FRACTION: u32 = 44;
/// Smallest |ΔF| of a random impulse.
pub const IMP_DF_MIN: u32 = 45;
/// Largest |ΔF| of a random impulse.
pub const IMP_DF_MAX: u32 = 46;
/// Fraction of the masses with a random contact.
pub const CON_FRACTION: u32 = 47;
/// Number of random impulses (calculated).
pub const IMP_COUNT: u32 = 48;
/// Number of random contacts (calculated).
pub const CON_COUNT: u32 = 49;
/// Sum of the random impulses' ΔF (calculated).
pub const IMP_DF_SUM: u32 = 50;
/// ΔF of the random impulse on each mass (calculated array; 0: none).
pub const IMP_DF_OF: u32 = 51;
/// 1 on each mass with a random contact (calculated array).
pub const CON_ON: u32 = 52;
/// Positions (state array).
pub const X: u32 = 40;
/// Velocities (state array).
pub const V: u32 = 41;
/// der(x).
pub const DER_X: u32 = 42;
/// der(v).
pub const DER_V: u32 = 43;

/// The oscillator chain model.
#[derive(Default)]
pub struct OscillatorChain;

struct Params {
    n: usize,
    m: f64,
    c: f64,
    d: f64,
    cc: f64,
    dc: f64,
}

fn index(v: &Values, vr: u32) -> i32 {
    v.i32(vr)
}

fn params(v: &Values) -> Result<Params, String> {
    let n = index(v, N);
    if !(1..=N_MAX as i32).contains(&n) {
        return Err(format!("n = {n} must be in 1..={N_MAX}"));
    }
    let m = v.f64(M);
    if m.is_nan() || m <= 0.0 {
        return Err(format!("mass m = {m} must be positive"));
    }
    Ok(Params {
        n: n as usize,
        m,
        c: v.f64(C_LIN),
        d: v.f64(D_LIN),
        cc: v.f64(C_CUB),
        dc: v.f64(D_CUB),
    })
}

/// SplitMix64 (Steele, Lea & Flood 2014): the documented initial-state generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn symmetric(&mut self) -> f64 {
        2.0 * ((self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)) - 1.0
    }

    /// The generator of stream `stream` (1: impulses, 2: contacts) of `seed`.
    fn stream(seed: i32, stream: u64) -> SplitMix64 {
        SplitMix64((seed as u32 as u64).wrapping_add(stream << 32))
    }

    /// Picks the next of `count` masses out of `order` (0-based) by a partial Fisher–Yates
    /// shuffle: entry `j` is swapped with a random later one and returned.
    fn pick(&mut self, order: &mut [usize], j: usize) -> usize {
        let k = j + (self.next() % (order.len() - j) as u64) as usize;
        order.swap(j, k);
        order[j]
    }
}

/// How many of `n` masses a fraction `f` (checked to lie in [0, 1]) selects: round(f·n).
fn selected(v: &Values, vr: u32, n: usize, name: &str) -> Result<usize, String> {
    let f = v.f64(vr);
    if !(0.0..=1.0).contains(&f) {
        return Err(format!("{name} = {f} must be in [0, 1]"));
    }
    Ok((f * n as f64).round() as usize)
}

/// Draws the random impulses and contacts of the model documentation into `impulse_dF_of`,
/// `contact_on` and the counts, and moves the masses with a random contact out of their walls.
fn draw_impulses_and_contacts(v: &mut Values, n: usize) -> Result<(), String> {
    let seed = index(v, SEED);
    let impulses = selected(v, IMP_FRACTION, n, "impulse_fraction")?;
    let contacts = selected(v, CON_FRACTION, n, "contact_fraction")?;
    let (lo, hi) = (v.f64(IMP_DF_MIN), v.f64(IMP_DF_MAX));
    if impulses > 0 && !(lo >= 0.0 && hi >= lo && hi.is_finite()) {
        return Err(format!(
            "impulse_dF_min = {lo} and impulse_dF_max = {hi} must satisfy 0 <= min <= max < inf"
        ));
    }
    let mut amplitude = vec![0.0; N_MAX];
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64::stream(seed, 1);
    let mut sum = 0.0;
    for j in 0..impulses {
        let mass = rng.pick(&mut order, j);
        let u = rng.symmetric();
        let df = (lo + (hi - lo) * u.abs()).copysign(u);
        amplitude[mass] = df;
        sum += df;
    }
    let mut contact = vec![0; N_MAX];
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64::stream(seed, 2);
    for j in 0..contacts {
        contact[rng.pick(&mut order, j)] = 1;
    }
    let x = v.get_mut::<f64>(X);
    for (xi, &on) in x.iter_mut().zip(&contact) {
        if on == 1 {
            *xi = -xi.abs();
        }
    }
    v.get_mut::<f64>(IMP_DF_OF).copy_from_slice(&amplitude);
    v.get_mut::<i32>(CON_ON).copy_from_slice(&contact);
    v.set_i32(IMP_COUNT, impulses as i32);
    v.set_i32(CON_COUNT, contacts as i32);
    v.set_f64(IMP_DF_SUM, sum);
    Ok(())
}

/// The pulse train at time `t` per newton of amplitude: `F_Imp / ΔF`.
fn pulse(v: &Values, t: f64) -> Result<f64, String> {
    let (delta, dt, t0, period) = (
        v.f64(IMP_DELTA),
        v.f64(IMP_DT),
        v.f64(IMP_T0),
        v.f64(IMP_PERIOD),
    );
    if !(delta > 0.0 && dt >= 0.0 && period >= 0.0 && t0.is_finite()) {
        return Err(format!(
            "impulse needs impulse_delta > 0, impulse_dt >= 0, impulse_period >= 0 \
             (got {delta}, {dt}, {period})"
        ));
    }
    // Outside [t_k - 20 δ, t_k + Δt + 20 δ] both tanh are exactly ±1 in f64.
    let (k_lo, k_hi) = if period > 0.0 {
        let lo = ((t - t0 - dt - 20.0 * delta) / period).ceil().max(0.0);
        let hi = ((t - t0 + 20.0 * delta) / period).floor();
        (lo, hi.min(lo + 1e6))
    } else {
        (0.0, 0.0)
    };
    let mut sum = 0.0;
    let mut k = k_lo;
    while k <= k_hi {
        let tk = t0 + k * period;
        sum += ((t - tk) / delta).tanh() - ((t - tk - dt) / delta).tanh();
        k += 1.0;
    }
    // Halving is exact, so ΔF·pulse gives the bits of ½ ΔF Σ.
    Ok(0.5 * sum)
}

/// A 1-based mass index parameter, checked against n (`allow_zero`: 0 means off).
fn mass_index(
    v: &Values,
    vr: u32,
    n: usize,
    name: &str,
    allow_zero: bool,
) -> Result<usize, String> {
    let k = index(v, vr);
    let lo = if allow_zero { 0 } else { 1 };
    if k < lo || k as usize > n {
        return Err(format!("{name} = {k} must be in {lo}..={n}"));
    }
    Ok(k as usize)
}

impl Model for OscillatorChain {
    const NAME: &'static str = "OscillatorChain";
    const DESCRIPTION: &'static str =
        "Chain of n masses joined by F = c dx + d dv + C dx^3 + D dv^3, \
         forces F_left on mass 1 and F_right on mass n";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 0.01,
        step: 1e-4,
    };

    fn variables(&self) -> Vec<Variable> {
        let out = |vr, name: &str, unit: &str, what: &str, deps: &[u32]| {
            Variable::float64(vr, name)
                .output()
                .unit(unit)
                .description(what)
                .depends_on(deps)
        };
        let real = |vr, name: &str, start: f64, unit: &str, what: &str| {
            Variable::float64(vr, name)
                .parameter()
                .start(start)
                .unit(unit)
                .description(what)
        };
        let int = |vr, name: &str, start: i32, min: f64, max: f64, what: &str| {
            Variable::int32(vr, name)
                .parameter()
                .start(start)
                .min(min)
                .max(max)
                .description(what)
        };
        let nmax = N_MAX as f64;
        let forces = [F_LEFT, F_RIGHT];
        vec![
            out(X_FIRST, "x_first", "m", "Position of mass 1", &[]),
            out(V_FIRST, "v_first", "m/s", "Velocity of mass 1", &[]),
            out(
                A_FIRST,
                "a_first",
                "m/s2",
                "Acceleration of mass 1",
                &forces,
            ),
            out(X_LAST, "x_last", "m", "Position of mass n", &[]),
            out(V_LAST, "v_last", "m/s", "Velocity of mass n", &[]),
            out(A_LAST, "a_last", "m/s2", "Acceleration of mass n", &forces),
            Variable::float64(F_LEFT, "F_left")
                .input()
                .start(0.0)
                .unit("N")
                .description("Force on mass 1")
                .intermediate_update(),
            Variable::float64(F_RIGHT, "F_right")
                .input()
                .start(0.0)
                .unit("N")
                .description("Force on mass n")
                .intermediate_update(),
            Variable::int32(N, "n")
                .structural_parameter()
                .start(10)
                .min(1.0)
                .max(nmax)
                .description("Number of masses (1..=1000; FMI 3: set in Configuration Mode)"),
            real(M, "m", 0.1, "kg", "Mass of each body (> 0)").min(0.0),
            real(C_LIN, "c", 1e7, "N/m", "Linear stiffness"),
            real(D_LIN, "d", 1e4, "N.s/m", "Linear damping"),
            real(C_CUB, "C", 1e14, "N/m3", "Cubic stiffness"),
            real(D_CUB, "D", 1e2, "N.s3/m3", "Cubic damping"),
            real(
                X0,
                "x0",
                0.0,
                "m",
                "Initial position of every mass (uniform part)",
            ),
            real(
                V0,
                "v0",
                0.0,
                "m/s",
                "Initial velocity of every mass (uniform part)",
            ),
            real(
                X0_SPREAD,
                "x0_spread",
                0.0,
                "m",
                "Amplitude of the pseudo-random part of the initial positions",
            ),
            real(
                V0_SPREAD,
                "v0_spread",
                0.0,
                "m/s",
                "Amplitude of the pseudo-random part of the initial velocities",
            ),
            int(
                SEED,
                "seed",
                1,
                f64::from(i32::MIN),
                f64::from(i32::MAX),
                "Seed of the SplitMix64 initial-state generator",
            ),
            real(IMP_DF, "impulse_dF", 0.0, "N", "Impulse amplitude (0: off)"),
            real(
                IMP_DELTA,
                "impulse_delta",
                1e-5,
                "s",
                "Impulse ramp time (> 0)",
            ),
            real(IMP_DT, "impulse_dt", 2.5e-3, "s", "Impulse duration"),
            real(IMP_T0, "impulse_t0", 0.0, "s", "Start of the first impulse"),
            real(
                IMP_PERIOD,
                "impulse_period",
                0.05,
                "s",
                "Period of the impulses (0: one impulse)",
            ),
            int(
                IMP_MASS,
                "impulse_mass",
                1,
                1.0,
                nmax,
                "Mass the impulse acts on (1..=n)",
            ),
            real(
                CON_A,
                "contact_A",
                -1e-2,
                "N",
                "Contact force amplitude A in A exp(B x)",
            ),
            real(
                CON_B,
                "contact_B",
                5e5,
                "1/m",
                "Contact force exponent B in A exp(B x)",
            ),
            int(
                CON_MASS,
                "contact_mass",
                0,
                0.0,
                nmax,
                "First mass with contact (1..=n; 0: no contact)",
            ),
            int(
                CON_STRIDE,
                "contact_stride",
                0,
                0.0,
                nmax,
                "Stride to the next mass with contact (0: only contact_mass)",
            ),
            Variable::float64(RTOL, "rtol")
                .parameter()
                .start(1e-8)
                .min(0.0)
                .description("Relative tolerance of the adaptive integrator (> 0)"),
            Variable::float64(ATOL, "atol")
                .parameter()
                .start(1e-10)
                .min(0.0)
                .description("Absolute tolerance of the adaptive integrator (> 0; m and m/s)"),
            int(
                PROBE,
                "probe",
                1,
                1.0,
                nmax,
                "Mass shown by x_probe, v_probe (1..=n)",
            ),
            out(X_PROBE, "x_probe", "m", "Position of mass `probe`", &[]),
            out(V_PROBE, "v_probe", "m/s", "Velocity of mass `probe`", &[]),
            Variable::float64(MOMENTUM, "p")
                .unit("N.s")
                .description("Total momentum"),
            Variable::float64(ENERGY, "E")
                .unit("J")
                .description("Kinetic plus elastic energy of the chain"),
            real(
                IMP_FRACTION,
                "impulse_fraction",
                0.0,
                "1",
                "Fraction of the masses with a random impulse (0..=1; seeded by `seed`)",
            )
            .min(0.0)
            .max(1.0),
            real(
                IMP_DF_MIN,
                "impulse_dF_min",
                1e6,
                "N",
                "Smallest |dF| of a random impulse",
            ),
            real(
                IMP_DF_MAX,
                "impulse_dF_max",
                5e6,
                "N",
                "Largest |dF| of a random impulse",
            ),
            real(
                CON_FRACTION,
                "contact_fraction",
                0.0,
                "1",
                "Fraction of the masses with a random contact (0..=1; seeded by `seed`)",
            )
            .min(0.0)
            .max(1.0),
            Variable::int32(IMP_COUNT, "impulse_count")
                .calculated_parameter()
                .description("Number of masses with a random impulse"),
            Variable::int32(CON_COUNT, "contact_count")
                .calculated_parameter()
                .description("Number of masses with a random contact"),
            Variable::float64(IMP_DF_SUM, "impulse_dF_sum")
                .calculated_parameter()
                .unit("N")
                .description("Sum of the random impulses' amplitudes dF"),
            Variable::float64(IMP_DF_OF, "impulse_dF_of")
                .calculated_parameter()
                .dims(&[N_MAX])
                .unit("N")
                .description("Amplitude dF of the random impulse on each mass (0: none)"),
            Variable::int32(CON_ON, "contact_on")
                .calculated_parameter()
                .dims(&[N_MAX])
                .description("1 on each mass with a random contact"),
            Variable::float64(X, "x")
                .dims(&[N_MAX])
                .unit("m")
                .description("Positions (the first n elements are used)"),
            Variable::float64(V, "v")
                .dims(&[N_MAX])
                .unit("m/s")
                .description("Velocities (the first n elements are used)"),
            Variable::float64(DER_X, "der(x)")
                .dims(&[N_MAX])
                .unit("m/s")
                .derivative_of(X)
                .depends_on(&[V]),
            Variable::float64(DER_V, "der(v)")
                .dims(&[N_MAX])
                .unit("m/s2")
                .derivative_of(V)
                .depends_on(&[X, V, F_LEFT, F_RIGHT]),
        ]
    }

    fn configure(&self, v: &mut Values) -> Result<(), String> {
        let n = index(v, N);
        if !(1..=N_MAX as i32).contains(&n) {
            return Err(format!("n = {n} must be in 1..={N_MAX}"));
        }
        Ok(())
    }

    fn initialize(&self, v: &mut Values, _cx: &fmu_kit::Context) -> Result<(), String> {
        let p = params(v)?;
        let (x0, v0, xs, vs) = (v.f64(X0), v.f64(V0), v.f64(X0_SPREAD), v.f64(V0_SPREAD));
        let mut rng = SplitMix64(index(v, SEED) as u32 as u64);
        let mut xi = vec![0.0; N_MAX];
        let mut vi = vec![0.0; N_MAX];
        for i in 0..p.n {
            xi[i] = x0 + xs * rng.symmetric();
            vi[i] = v0 + vs * rng.symmetric();
        }
        v.get_mut::<f64>(X).copy_from_slice(&xi);
        v.get_mut::<f64>(V).copy_from_slice(&vi);
        draw_impulses_and_contacts(v, p.n)
    }

    fn evaluate(&self, v: &mut Values, time: f64) -> Result<(), String> {
        let p = params(v)?;
        let n = p.n;
        let (rtol, atol) = (v.f64(RTOL), v.f64(ATOL));
        if !(rtol > 0.0 && atol > 0.0) {
            return Err(format!("rtol = {rtol} and atol = {atol} must be positive"));
        }
        let imp_mass = mass_index(v, IMP_MASS, n, "impulse_mass", false)?;
        let con_mass = mass_index(v, CON_MASS, n, "contact_mass", true)?;
        let probe = mass_index(v, PROBE, n, "probe", false)?;
        let stride = index(v, CON_STRIDE).max(0) as usize;
        let x = v.get::<f64>(X)[..n].to_vec();
        let vel = v.get::<f64>(V)[..n].to_vec();
        let mut f = vec![0.0; n];
        let mut energy = 0.0;
        for j in 1..n {
            let dx = x[j] - x[j - 1];
            let dv = vel[j] - vel[j - 1];
            let fsd = p.c * dx + p.d * dv + p.cc * dx * dx * dx + p.dc * dv * dv * dv;
            f[j] -= fsd;
            f[j - 1] += fsd;
            energy += 0.5 * p.c * dx * dx + 0.25 * p.cc * dx * dx * dx * dx;
        }
        f[0] += v.f64(F_LEFT);
        f[n - 1] += v.f64(F_RIGHT);
        let df = v.f64(IMP_DF);
        let random_impulses = index(v, IMP_COUNT) > 0;
        if df != 0.0 || random_impulses {
            let shape = pulse(v, time)?;
            if df != 0.0 {
                f[imp_mass - 1] += df * shape;
            }
            if random_impulses {
                for (fi, &dfi) in f.iter_mut().zip(v.get::<f64>(IMP_DF_OF)) {
                    if dfi != 0.0 {
                        *fi += dfi * shape;
                    }
                }
            }
        }
        let (ca, cb) = (v.f64(CON_A), v.f64(CON_B));
        let mut contact = v.get::<i32>(CON_ON)[..n].to_vec();
        if con_mass > 0 {
            let mut i = con_mass - 1;
            while i < n {
                contact[i] = 1;
                if stride == 0 {
                    break;
                }
                i += stride;
            }
        }
        for ((fi, &on), &xi) in f.iter_mut().zip(&contact).zip(&x) {
            if on == 1 {
                *fi += ca * (cb * xi).exp();
            }
        }
        let mut momentum = 0.0;
        for &vi in &vel {
            momentum += p.m * vi;
            energy += 0.5 * p.m * vi * vi;
        }
        let a: Vec<f64> = f.iter().map(|fi| fi / p.m).collect();
        v.get_mut::<f64>(DER_X)[..n].copy_from_slice(&vel);
        v.get_mut::<f64>(DER_V)[..n].copy_from_slice(&a);
        v.set_f64(X_FIRST, x[0]);
        v.set_f64(V_FIRST, vel[0]);
        v.set_f64(A_FIRST, a[0]);
        v.set_f64(X_LAST, x[n - 1]);
        v.set_f64(V_LAST, vel[n - 1]);
        v.set_f64(A_LAST, a[n - 1]);
        v.set_f64(X_PROBE, x[probe - 1]);
        v.set_f64(V_PROBE, vel[probe - 1]);
        v.set_f64(MOMENTUM, momentum);
        v.set_f64(ENERGY, energy);
        Ok(())
    }

    fn integrator(&self, v: &Values) -> Integrator {
        let impulses = v.f64(IMP_DF) != 0.0 || v.i32(IMP_COUNT) > 0;
        let max_step = if impulses && v.f64(IMP_DT) > 0.0 {
            v.f64(IMP_DT) / 4.0
        } else {
            f64::INFINITY
        };
        Integrator::DormandPrince {
            rtol: v.f64(RTOL),
            atol: v.f64(ATOL),
            max_step,
        }
    }

    fn partial(&self, v: &Values, _time: f64, of: u32, wrt: u32) -> Option<f64> {
        if !matches!(wrt, F_LEFT | F_RIGHT) {
            return None;
        }
        let (n, m) = (index(v, N), v.f64(M));
        Some(match (of, wrt) {
            (A_FIRST, F_LEFT) | (A_LAST, F_RIGHT) => 1.0 / m,
            (A_FIRST, F_RIGHT) | (A_LAST, F_LEFT) => {
                if n == 1 {
                    1.0 / m
                } else {
                    0.0
                }
            }
            (X_FIRST | V_FIRST | X_LAST | V_LAST | X_PROBE | V_PROBE, _) => 0.0,
            _ => return None,
        })
    }
}

fmu_kit::export_fmu!(OscillatorChain);

#[cfg(test)]
mod tests;
