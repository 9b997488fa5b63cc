//! Numbers printed for people: the shortest decimal that reads back as the value, up to the
//! noise arithmetic leaves on it, so that a time on the output grid prints as the grid's decimal
//! (`0.3`, not `0.30000000000000004`), and seconds with their unit.

/// Relative difference a printed number may have from the value: start + k * interval or
/// 0.1 + 0.2 carry errors of a few units in the last place (about 1e-16), which are noise to
/// a reader; 12 significant digits keep every digit a person or a grid put there.
const NOISE: f64 = 1e-12;

/// `x` for a message: the shortest decimal within [`NOISE`] of it, written out between 1e-4
/// and 1e9 and in exponent form outside (`1e-5`, `2.5e12`); NaN and infinity as Rust writes
/// them.
pub fn number(x: f64) -> String {
    Number(x).to_string()
}

/// A duration or a time with its unit: `0.01 s`.
pub fn seconds(x: f64) -> String {
    format!("{} s", Number(x))
}

/// [`number`] as a `Display` that allocates nothing: the crash handler writes it into a
/// buffer on its stack, where allocating is not safe.
#[derive(Clone, Copy, Debug)]
pub struct Number(pub f64);

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        if !x.is_finite() {
            return write!(f, "{x}");
        }
        if x == 0.0 {
            return f.write_str("0");
        }
        let near = shortest_near(x);
        if (1e-4..1e9).contains(&near.abs()) {
            write!(f, "{near}")
        } else {
            write!(f, "{near:e}")
        }
    }
}

/// The value of the fewest significant digits within [`NOISE`] of `x` (finite, not 0).
fn shortest_near(x: f64) -> f64 {
    use std::fmt::Write;
    for digits in 1..=17 {
        let mut text = Digits::default();
        if write!(text, "{:.*e}", digits - 1, x).is_err() {
            break;
        }
        if let Ok(y) = text.as_str().parse::<f64>() {
            if (y - x).abs() <= NOISE * x.abs() {
                return y;
            }
        }
    }
    x
}

/// Room for a float in exponent form with up to 17 digits (`-1.2345678901234567e-308`).
#[derive(Default)]
struct Digits {
    bytes: [u8; 32],
    len: usize,
}

impl Digits {
    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for Digits {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.bytes.len() {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_noise_is_not_printed() {
        assert_eq!(number(0.1 + 0.2), "0.3");
        assert_eq!(number(0.6479999999999999), "0.648");
        assert_eq!(seconds(1.0000000000000009e-2), "0.01 s");
        // A time on a 1 ms grid far from 0, computed as start + k * interval.
        assert_eq!(number(1.0 + 999.0 * 0.001), "1.999");
        assert_eq!(number(-(0.1 + 0.2)), "-0.3");
    }

    #[test]
    fn digits_a_person_wrote_are_kept() {
        assert_eq!(number(0.45152365475), "0.45152365475");
        assert_eq!(number(123456.789), "123456.789");
        assert_eq!(number(1.5), "1.5");
        assert_eq!(number(100.0), "100");
        // Two values 1e-9 apart print apart.
        assert_ne!(number(1.0), number(1.0 + 1e-9));
    }

    #[test]
    fn small_and_large_numbers_use_exponents() {
        assert_eq!(number(1e-5), "1e-5");
        assert_eq!(number(1.5e-7), "1.5e-7");
        assert_eq!(number(1e17), "1e17");
        assert_eq!(number(0.0001), "0.0001");
        assert_eq!(number(1e8), "100000000");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(-0.0), "0");
    }

    #[test]
    fn the_display_writes_what_number_returns() {
        for x in [
            0.1 + 0.2,
            -1.7976931348623157e308,
            5e-324,
            1e-5,
            123456.789,
            f64::NAN,
        ] {
            assert_eq!(format!("{}", Number(x)), number(x));
        }
        assert_eq!(number(-1.7976931348623157e308), "-1.797693134862e308");
        assert_eq!(number(5e-324), "5e-324");
    }

    #[test]
    fn non_finite_numbers_are_named() {
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "inf");
        assert_eq!(number(f64::NEG_INFINITY), "-inf");
    }
}
