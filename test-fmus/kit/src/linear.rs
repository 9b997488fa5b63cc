//! Exact integration of linear systems driven by polynomial inputs.

use nalgebra::DMatrix;

/// Advances `x' = A x + B u(t)` exactly over `h`, where input `j` is the cubic with Taylor
/// coefficients `u[j] = [u, u', u'', u''']` at the step start: the matrix exponential of the
/// system augmented with a chain of four integrators per input.
pub fn linear_step(a: &DMatrix<f64>, b: &DMatrix<f64>, x: &mut [f64], u: &[[f64; 4]], h: f64) {
    let n = x.len();
    let m = u.len();
    let size = n + 4 * m;
    let mut aug = DMatrix::<f64>::zeros(size, size);
    aug.view_mut((0, 0), (n, n)).copy_from(a);
    for j in 0..m {
        let base = n + 4 * j;
        for r in 0..n {
            aug[(r, base)] = b[(r, j)];
        }
        for k in 0..3 {
            aug[(base + k, base + k + 1)] = 1.0;
        }
    }
    let phi = (aug * h).exp();
    let mut z0 = nalgebra::DVector::<f64>::zeros(size);
    z0.rows_mut(0, n).copy_from_slice(x);
    for (j, c) in u.iter().enumerate() {
        z0.rows_mut(n + 4 * j, 4).copy_from_slice(c);
    }
    let z = phi * z0;
    x.copy_from_slice(z.rows(0, n).as_slice());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrator_of_a_cubic_is_exact() {
        // x' = u, u = 1 + 2t + 3t^2/2 + 4t^3/6  =>  x(h) = h + h^2 + h^3/2 + h^4/6
        let a = DMatrix::zeros(1, 1);
        let b = DMatrix::from_element(1, 1, 1.0);
        let mut x = [0.0];
        let h = 0.3;
        linear_step(&a, &b, &mut x, &[[1.0, 2.0, 3.0, 4.0]], h);
        let exact = h + h * h + h.powi(3) / 2.0 + h.powi(4) / 6.0;
        assert!((x[0] - exact).abs() < 1e-15, "{} vs {exact}", x[0]);
    }
}
