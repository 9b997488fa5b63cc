//! Lagrange polynomials through past (or future) coupling values, in the Taylor form that
//! `Slave::set_input_polynomial` takes: the value and the derivatives at the start of a step.
//!
//! Degrees are small (at most 3 for extrapolation, one more for error estimators), so all work
//! happens in fixed-size arrays: no allocation in the stepping loop.

/// Highest polynomial degree supported (extrapolation order 3 plus one for estimators).
pub const MAX_DEGREE: usize = 4;

/// Write into `taylor[0..=n-1]` the value and first `n - 1` derivatives at `at` of the polynomial
/// of degree `n - 1` through the `n` points `(times[i], values[i])` (`n = times.len()`).
///
/// The times must be distinct. `taylor` must hold at least `n` elements; further elements are
/// set to zero.
pub fn lagrange_taylor(times: &[f64], values: &[f64], at: f64, taylor: &mut [f64]) {
    let n = times.len().min(values.len()).min(MAX_DEGREE + 1);
    taylor.iter_mut().for_each(|c| *c = 0.0);
    if n == 0 {
        return;
    }
    // A held value (the commonest case, every step of a zero-order hold): the value itself,
    // as the general expansion below gives it.
    if n == 1 {
        if let Some(first) = taylor.first_mut() {
            *first = values[0];
        }
        return;
    }
    // Newton divided differences, in place.
    let mut dd = [0.0; MAX_DEGREE + 1];
    dd[..n].copy_from_slice(&values[..n]);
    for level in 1..n {
        for i in (level..n).rev() {
            dd[i] = (dd[i] - dd[i - 1]) / (times[i] - times[i - level]);
        }
    }
    // Expand the Newton form in powers of s = t - at (Horner on the nested product).
    let mut monomial = [0.0; MAX_DEGREE + 1];
    monomial[0] = dd[n - 1];
    let mut degree = 0;
    for j in (0..n - 1).rev() {
        // multiply by (t - times[j]) = (s + at - times[j])
        let shift = at - times[j];
        degree += 1;
        for i in (1..=degree).rev() {
            monomial[i] = monomial[i - 1] + shift * monomial[i];
        }
        monomial[0] = dd[j] + shift * monomial[0];
    }
    let mut factorial = 1.0;
    for (i, coefficient) in monomial.iter().take(n).enumerate() {
        if i > 0 {
            factorial *= i as f64;
        }
        if let Some(slot) = taylor.get_mut(i) {
            *slot = coefficient * factorial;
        }
    }
}

/// The value at `t0 + tau` of the polynomial given by its Taylor coefficients at `t0`.
pub fn evaluate_taylor(taylor: &[f64], tau: f64) -> f64 {
    // Horner on sum_j c_j tau^j / j!: value = c_j + value * tau / (j + 1), from the top down.
    let mut value = 0.0;
    for (j, coefficient) in taylor.iter().enumerate().rev() {
        value = coefficient + value * tau / (j as f64 + 1.0);
    }
    value
}

/// Re-expand Taylor coefficients given at `t0` around `t0 + delta`, in place.
pub fn shift_taylor(taylor: &mut [f64], delta: f64) {
    let n = taylor.len().min(MAX_DEGREE + 1);
    let mut shifted = [0.0; MAX_DEGREE + 1];
    for (i, slot) in shifted.iter_mut().enumerate().take(n) {
        // p^(i)(t0 + delta) = sum_{j >= i} p^(j)(t0) delta^(j - i) / (j - i)!
        let mut term_factor = 1.0;
        let mut sum = 0.0;
        for (m, coefficient) in taylor[i..n].iter().enumerate() {
            if m > 0 {
                term_factor *= delta / m as f64;
            }
            sum += coefficient * term_factor;
        }
        *slot = sum;
    }
    taylor[..n].copy_from_slice(&shifted[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cubic(t: f64) -> f64 {
        1.5 - 2.0 * t + 0.75 * t * t - 0.125 * t * t * t
    }

    #[test]
    fn a_cubic_is_reproduced_exactly_with_its_derivatives() {
        let times = [0.3, 0.1, -0.2, -0.6];
        let values = times.map(cubic);
        let at = 0.7;
        let mut taylor = [0.0; 4];
        lagrange_taylor(&times, &values, at, &mut taylor);
        let exact = [
            cubic(at),
            -2.0 + 1.5 * at - 0.375 * at * at,
            1.5 - 0.75 * at,
            -0.75,
        ];
        for (got, want) in taylor.iter().zip(exact) {
            assert!((got - want).abs() < 1e-12, "{taylor:?} vs {exact:?}");
        }
        for tau in [0.0, 0.05, 0.2, -0.3] {
            assert!((evaluate_taylor(&taylor, tau) - cubic(at + tau)).abs() < 1e-12);
        }
    }

    #[test]
    fn lower_degrees_hold_and_line() {
        let mut taylor = [9.0; 4];
        lagrange_taylor(&[2.0], &[5.0], 3.0, &mut taylor);
        assert_eq!(taylor, [5.0, 0.0, 0.0, 0.0]);
        lagrange_taylor(&[2.0, 1.0], &[5.0, 3.0], 2.0, &mut taylor);
        assert_eq!(taylor, [5.0, 2.0, 0.0, 0.0]);
        // Extrapolating a line one step ahead.
        lagrange_taylor(&[2.0, 1.0], &[5.0, 3.0], 3.0, &mut taylor);
        assert_eq!(taylor[0], 7.0);
    }

    #[test]
    fn shifting_moves_the_expansion_point() {
        let times = [0.0, 0.5, 1.0, 1.5];
        let values = times.map(cubic);
        let mut at_zero = [0.0; 4];
        lagrange_taylor(&times, &values, 0.0, &mut at_zero);
        let mut shifted = at_zero;
        shift_taylor(&mut shifted, 0.4);
        let mut direct = [0.0; 4];
        lagrange_taylor(&times, &values, 0.4, &mut direct);
        for (a, b) in shifted.iter().zip(direct) {
            assert!((a - b).abs() < 1e-12, "{shifted:?} vs {direct:?}");
        }
    }
}
