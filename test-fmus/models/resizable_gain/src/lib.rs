//! ResizableGain: `y[i] = k i u[i]` for i = 1..n, with the input `u` and the output `y` arrays
//! of `n` elements, `n` a structural parameter (default 3) set in FMI 3 Configuration Mode:
//! the arrays' `<Dimension valueReference>` names `n`, so an importer must size them by the
//! value it configured, not by the start value. The weight i tells elements apart (a master
//! that shifts or drops an element gives other numbers). Arrays of the other FMI 3 types, sized
//! by `n` too, carry the same through connections of their types: `j[i] = i m[i]` (Int32),
//! `q[i] = p[i] xor (i even)` (Boolean), `w[i] = i v[i]` (Float32). FMI 2 has no arrays: there
//! the FMU shows `n` and `k` only.

use fmu_kit::{Experiment, Model, Values, Variable};

/// Number of elements of `u` and `y` (structural parameter).
pub const N: u32 = 1;
/// Input array.
pub const U: u32 = 2;
/// Output array.
pub const Y: u32 = 3;
/// Gain.
pub const K: u32 = 4;
/// Int32 input array.
pub const M: u32 = 5;
/// Int32 output array.
pub const J: u32 = 6;
/// Boolean input array.
pub const P: u32 = 7;
/// Boolean output array.
pub const Q: u32 = 8;
/// Float32 input array.
pub const V: u32 = 9;
/// Float32 output array.
pub const W: u32 = 10;

/// Start value of `n`.
pub const DEFAULT_N: u64 = 3;

/// The element-wise weighted gain.
#[derive(Default)]
pub struct ResizableGain;

impl Model for ResizableGain {
    const NAME: &'static str = "ResizableGain";
    const DESCRIPTION: &'static str = "y[i] = k i u[i] for i = 1..n, n a structural parameter";
    const EXPERIMENT: Experiment = Experiment {
        start: 0.0,
        stop: 1.0,
        step: 0.1,
    };

    fn variables(&self) -> Vec<Variable> {
        let zeros = vec![0.0; DEFAULT_N as usize];
        vec![
            Variable::uint64(N, "n")
                .structural_parameter()
                .start(DEFAULT_N)
                .min(1.0)
                .max(1_000_000.0)
                .description("number of elements of u and y"),
            Variable::float64(U, "u").input().sized_by(N).start(zeros),
            Variable::float64(Y, "y")
                .output()
                .sized_by(N)
                .description("k i u[i]")
                .depends_on(&[U]),
            Variable::float64(K, "k").parameter().start(1.0),
            Variable::int32(M, "m")
                .input()
                .sized_by(N)
                .start(vec![0i32; DEFAULT_N as usize]),
            Variable::int32(J, "j")
                .output()
                .sized_by(N)
                .description("i m[i]")
                .depends_on(&[M]),
            Variable::boolean(P, "p")
                .input()
                .sized_by(N)
                .start(vec![false; DEFAULT_N as usize]),
            Variable::boolean(Q, "q")
                .output()
                .sized_by(N)
                .description("p[i] xor (i even)")
                .depends_on(&[P]),
            Variable::float32(V, "v")
                .input()
                .sized_by(N)
                .start(vec![0.0f64; DEFAULT_N as usize]),
            Variable::float32(W, "w")
                .output()
                .sized_by(N)
                .description("i v[i]")
                .depends_on(&[V]),
        ]
    }

    fn evaluate(&self, v: &mut Values, _time: f64) -> Result<(), String> {
        let k = v.f64(K);
        let weighted: Vec<f64> = v
            .get::<f64>(U)
            .iter()
            .enumerate()
            .map(|(i, u)| k * (i + 1) as f64 * u)
            .collect();
        let y = v.get_mut::<f64>(Y);
        if y.len() != weighted.len() {
            return Err(format!(
                "u has {} elements but y {}: both are sized by n",
                weighted.len(),
                y.len()
            ));
        }
        y.copy_from_slice(&weighted);
        let j: Vec<i32> = v
            .get::<i32>(M)
            .iter()
            .enumerate()
            .map(|(i, m)| (i as i32 + 1).wrapping_mul(*m))
            .collect();
        copy(v.get_mut::<i32>(J), &j, "j")?;
        let q: Vec<bool> = v
            .get::<bool>(P)
            .iter()
            .enumerate()
            .map(|(i, p)| *p != ((i + 1) % 2 == 0))
            .collect();
        copy(v.get_mut::<bool>(Q), &q, "q")?;
        let w: Vec<f32> = v
            .get::<f32>(V)
            .iter()
            .enumerate()
            .map(|(i, x)| (i + 1) as f32 * x)
            .collect();
        copy(v.get_mut::<f32>(W), &w, "w")?;
        Ok(())
    }
}

/// Copy `from` into the output array `to` (both sized by `n`).
fn copy<T: Copy>(to: &mut [T], from: &[T], name: &str) -> Result<(), String> {
    if to.len() != from.len() {
        return Err(format!(
            "{name} has {} elements but its input {}: both are sized by n",
            to.len(),
            from.len()
        ));
    }
    to.copy_from_slice(from);
    Ok(())
}

fmu_kit::export_fmu!(ResizableGain);
