//! Exactly rounded sums: many floats added without rounding and rounded once at the end, so
//! that any order of the terms and any split of them over ranks (each rank adding its own,
//! then the ranks' sums merged) gives the same bits. The step controller's error norms are
//! such sums: one process and any partition over mpirun ranks take the same decisions.
//!
//! Shewchuk's non-overlapping partials ("Adaptive Precision Floating-Point Arithmetic and Fast
//! Robust Geometric Predicates", 1997) hold the exact sum; the final rounding is the
//! correctly rounded one that also settles a half-way case spread over several partials.
//! Written here rather than taken from a crate because the ranks exchange the partials
//! themselves, which the summation crates keep private.

/// The exact sum of the terms added so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExactSum {
    /// Non-overlapping partials of increasing magnitude whose exact sum is that of the finite
    /// terms.
    partials: Vec<f64>,
    /// The sum of the terms that are not finite (0 while there is none).
    special: f64,
}

/// Bytes of a sum's fixed slot in a collective: its special term, a count of partials and
/// [`SLOT_PARTIALS`] of them.
pub const SLOT_BYTES: usize = 8 + 1 + 8 * SLOT_PARTIALS;

/// Partials a fixed slot holds; a norm's squares rarely need more than two.
pub const SLOT_PARTIALS: usize = 3;

/// The count byte of a slot whose sum has more partials than fit.
const OVERFULL: u8 = u8::MAX;

impl ExactSum {
    /// Add `x` without rounding. Exact as long as no partial sum overflows; for terms of one
    /// sign (the squares a norm adds) an overflow means the exact sum rounds to infinity
    /// anyway, in any order.
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            self.special += x;
            return;
        }
        let mut x = x;
        let mut kept = 0;
        for j in 0..self.partials.len() {
            let mut y = self.partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            if !hi.is_finite() {
                self.special += hi;
                self.partials.clear();
                return;
            }
            let lo = y - (hi - x);
            if lo != 0.0 {
                self.partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        self.partials.truncate(kept);
        self.partials.push(x);
    }

    /// Add every term of `other` (another rank's sum): exact, as the partials are.
    pub fn merge(&mut self, other: &ExactSum) {
        self.special += other.special;
        for &p in &other.partials {
            self.add(p);
        }
    }

    /// The exact sum rounded to the nearest float (ties to even); an infinite or NaN term
    /// makes it infinite or NaN.
    pub fn value(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        let p = &self.partials;
        let Some(mut n) = p.len().checked_sub(1) else {
            return 0.0;
        };
        let mut hi = p[n];
        let mut lo = 0.0;
        while n > 0 {
            let x = hi;
            n -= 1;
            let y = p[n];
            hi = x + y;
            lo = y - (hi - x);
            if lo != 0.0 {
                break;
            }
        }
        // The partials below the one that left `lo` push a half-way case to the side of
        // their sign: round away from `hi` when `lo` is exactly half an ulp and they agree.
        if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
        hi
    }

    /// Write the sum into a fixed slot of [`SLOT_BYTES`]; false when it has more partials
    /// than fit (then [`ExactSum::encode`] carries it whole).
    pub fn encode_slot(&self, slot: &mut [u8]) -> bool {
        slot[..8].copy_from_slice(&self.special.to_le_bytes());
        let fits = self.partials.len() <= SLOT_PARTIALS;
        slot[8] = if fits {
            self.partials.len() as u8
        } else {
            OVERFULL
        };
        if fits {
            for (p, word) in self.partials.iter().zip(slot[9..].chunks_exact_mut(8)) {
                word.copy_from_slice(&p.to_le_bytes());
            }
        }
        fits
    }

    /// The sum in a slot [`ExactSum::encode_slot`] wrote; `None` when it did not fit.
    pub fn decode_slot(slot: &[u8]) -> Option<ExactSum> {
        let count = *slot.get(8)?;
        if count == OVERFULL || usize::from(count) > SLOT_PARTIALS {
            return None;
        }
        let special = f64::from_le_bytes(slot.get(..8)?.try_into().ok()?);
        let words = slot.get(9..9 + 8 * usize::from(count))?;
        Some(ExactSum {
            partials: floats(words).collect(),
            special,
        })
    }

    /// The whole sum as bytes: its special term, then every partial.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.partials.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.special.to_le_bytes());
        for p in &self.partials {
            out.extend_from_slice(&p.to_le_bytes());
        }
    }

    /// A sum [`ExactSum::encode`] wrote at `bytes[*at..]`, moving `at` past it; `None` on
    /// bytes that are not one.
    pub fn decode(bytes: &[u8], at: &mut usize) -> Option<ExactSum> {
        let count = u64::from_le_bytes(bytes.get(*at..*at + 8)?.try_into().ok()?);
        let count = usize::try_from(count).ok()?;
        let end = count.checked_mul(8)?.checked_add(*at + 16)?;
        let special = f64::from_le_bytes(bytes.get(*at + 8..*at + 16)?.try_into().ok()?);
        let partials = floats(bytes.get(*at + 16..end)?).collect();
        *at = end;
        Some(ExactSum { partials, special })
    }
}

fn floats(bytes: &[u8]) -> impl Iterator<Item = f64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|w| f64::from_le_bytes(w.try_into().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so the tests need no crate of their own.
    struct Terms(u64);

    impl Terms {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// A float of either sign with a binary exponent in -30..30 and a full significand.
        fn float(&mut self) -> f64 {
            let bits = self.next();
            let significand = (bits >> 11) as f64 / (1u64 << 53) as f64;
            let exponent = (bits % 61) as i32 - 30;
            let sign = if bits & 1 == 0 { 1.0 } else { -1.0 };
            sign * (1.0 + significand) * 2f64.powi(exponent)
        }
    }

    /// The exact sum through integers: every term is a multiple of 2^-82 below 2^31, so the
    /// scaled sum fits an i128, and Rust converts an i128 to the nearest float, ties to even.
    fn through_integers(terms: &[f64]) -> f64 {
        let scale = 2f64.powi(82);
        let total: i128 = terms.iter().map(|&x| (x * scale) as i128).sum();
        total as f64 / scale
    }

    fn sum(terms: &[f64]) -> f64 {
        let mut s = ExactSum::default();
        for &x in terms {
            s.add(x);
        }
        s.value()
    }

    #[test]
    fn sums_equal_the_integers_correctly_rounded_sum() {
        let mut g = Terms(0x2545_f491_4f6c_dd1d);
        let mut naive_differs = 0;
        for n in [2, 3, 10, 100, 1000] {
            for _ in 0..50 {
                let terms: Vec<f64> = (0..n).map(|_| g.float()).collect();
                let exact = through_integers(&terms);
                assert_eq!(sum(&terms).to_bits(), exact.to_bits(), "{terms:?}");
                if terms.iter().sum::<f64>() != exact {
                    naive_differs += 1;
                }
            }
        }
        // The check has teeth: the naive sum differs on about half of these.
        assert!(naive_differs > 100, "{naive_differs}");
    }

    #[test]
    fn half_way_cases_spread_over_partials_round_to_even_correctly() {
        // 1 + 2^-53 is half way between 1 and 1 + 2^-52: ties to even gives 1, but a further
        // tiny positive term tips it up.
        assert_eq!(sum(&[1.0, 2f64.powi(-53)]), 1.0);
        assert_eq!(
            sum(&[1.0, 2f64.powi(-53), 2f64.powi(-80)]),
            1.0 + 2f64.powi(-52)
        );
        assert_eq!(sum(&[1e-16, 1.0, 1e16]), 1.0000000000000002e16);
        assert_eq!(
            sum(&[1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50]),
            1e-100
        );
    }

    #[test]
    fn any_order_and_any_split_over_ranks_give_the_same_bits() {
        let mut g = Terms(0x9e37_79b9_7f4a_7c15);
        let terms: Vec<f64> = (0..500).map(|_| g.float().abs()).collect();
        let whole = sum(&terms);
        for cut in [1, 7, 250, 499] {
            for ranks in [2, 3, 5] {
                let mut parts = vec![ExactSum::default(); ranks];
                for (i, &x) in terms.iter().enumerate() {
                    parts[(i / cut) % ranks].add(x);
                }
                // Merged in reverse, through the bytes the ranks exchange.
                let mut merged = ExactSum::default();
                for part in parts.iter().rev() {
                    let mut bytes = Vec::new();
                    part.encode(&mut bytes);
                    let mut at = 0;
                    let back = ExactSum::decode(&bytes, &mut at).expect("decodes");
                    assert_eq!(at, bytes.len());
                    merged.merge(&back);
                }
                assert_eq!(merged.value().to_bits(), whole.to_bits());
            }
        }
        let mut reversed = terms.clone();
        reversed.reverse();
        assert_eq!(sum(&reversed).to_bits(), whole.to_bits());
    }

    #[test]
    fn non_finite_terms_and_overflow() {
        assert_eq!(sum(&[]), 0.0);
        assert_eq!(sum(&[1.0, f64::INFINITY, 2.0]), f64::INFINITY);
        assert!(sum(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert!(sum(&[1.0, f64::NAN]).is_nan());
        assert_eq!(sum(&[f64::MAX, f64::MAX, 1.0]), f64::INFINITY);
        assert_eq!(sum(&[1.0, f64::MAX, f64::MAX]), f64::INFINITY);
    }

    #[test]
    fn slots_carry_small_sums_and_refuse_large_ones() {
        let mut small = ExactSum::default();
        small.add(1.0);
        small.add(1e-30);
        let mut slot = [0u8; SLOT_BYTES];
        assert!(small.encode_slot(&mut slot));
        assert_eq!(ExactSum::decode_slot(&slot), Some(small));
        let mut large = ExactSum::default();
        for e in [0, 100, 200, 300, -100] {
            large.add(2f64.powi(e));
        }
        assert!(!large.encode_slot(&mut slot));
        assert_eq!(ExactSum::decode_slot(&slot), None);
        let mut at = 0;
        assert_eq!(ExactSum::decode(&[1, 2, 3], &mut at), None);
        let huge = u64::MAX.to_le_bytes();
        assert_eq!(ExactSum::decode(&huge, &mut at), None);
    }
}
