//! ResizableGain: `y[i] = k i u[i]` for i = 1..n, with the input `u` and the output `y` arrays
//! of `n` elements, `n` a structural parameter (default 3) set in FMI 3 Configuration Mode:
//! the arrays' `<Dimension valueReference>` names `n`, so an importer must size them by the
//! value it configured, not by the start value. The weight i tells elements apart (a master
//! that shifts or drops an element gives other numbers). FMI 2 has no arrays: there the FMU
//! shows `n` and `k` only.

use fmu_kit::{Experiment, Model, Values, Variable};

/// Number of elements of `u` and `y` (structural parameter).
pub const N: u32 = 1;
/// Input array.
pub const U: u32 = 2;
/// Output array.
pub const Y: u32 = 3;
/// Gain.
pub const K: u32 = 4;

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
        Ok(())
    }
}

fmu_kit::export_fmu!(ResizableGain);
