//! A study's runs: run `index` -> its parameter values, computed on demand from the study, so
//! that any worker, shard or MPI rank knows a run from its index alone.
//!
//! Runs are numbered grid point by grid point (the first grid parameter varies slowest), each
//! grid point with every sample: `index = point * samples + sample`. Sample `j` draws from its
//! own ChaCha12 stream (`j`) of the study's seed, so its values do not depend on which runs
//! are made, in which order, or by how many workers. A Latin hypercube also needs one
//! permutation of the strata per parameter: drawn once, from streams of the seed that no
//! sample uses.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;

use crate::settings::study::{Distribution, SamplingMethod, Study};

/// The runs of a study.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The varied parameters, grid first, then samples: the columns of every run's values.
    pub parameters: Vec<String>,
    grid: Vec<Vec<f64>>,
    samples: Option<SamplePlan>,
    runs: usize,
}

#[derive(Debug, Clone)]
struct SamplePlan {
    count: usize,
    seed: u64,
    distributions: Vec<Distribution>,
    /// Latin hypercube: the stratum of each sample, per parameter.
    strata: Option<Vec<Vec<u32>>>,
}

impl Plan {
    /// The plan of a checked study.
    pub fn new(study: &Study) -> Plan {
        let samples = study.samples.as_ref().map(|s| {
            let count = s.count as usize;
            let strata = (s.method == SamplingMethod::LatinHypercube).then(|| {
                (0..s.parameters.len())
                    .map(|d| permutation(count, s.seed, u64::MAX - d as u64))
                    .collect()
            });
            SamplePlan {
                count,
                seed: s.seed,
                distributions: s.parameters.iter().map(|p| p.distribution).collect(),
                strata,
            }
        });
        Plan {
            parameters: study.parameter_names(),
            grid: study.grid.iter().map(|g| g.values.clone()).collect(),
            runs: study.run_count() as usize,
            samples,
        }
    }

    /// How many runs the study makes.
    pub fn len(&self) -> usize {
        self.runs
    }

    /// Whether the study makes no runs (never, for a checked study).
    pub fn is_empty(&self) -> bool {
        self.runs == 0
    }

    /// The parameter values of run `index` (< `len()`), in the order of `parameters`.
    pub fn values(&self, index: usize) -> Vec<f64> {
        let per_point = self.samples.as_ref().map_or(1, |s| s.count);
        let (mut point, sample) = (index / per_point, index % per_point);
        let mut values = vec![0.0; self.grid.len()];
        for (d, axis) in self.grid.iter().enumerate().rev() {
            values[d] = axis[point % axis.len()];
            point /= axis.len();
        }
        if let Some(s) = &self.samples {
            let mut rng = ChaCha12Rng::seed_from_u64(s.seed);
            rng.set_stream(sample as u64);
            for (d, distribution) in s.distributions.iter().enumerate() {
                let u = open_unit(&mut rng);
                let p = match &s.strata {
                    Some(strata) => (f64::from(strata[d][sample]) + u) / s.count as f64,
                    None => u,
                };
                values.push(quantile(*distribution, p));
            }
        }
        values
    }
}

/// A number in (0, 1) from 53 random bits (never 0 or 1: a normal quantile stays finite).
fn open_unit(rng: &mut ChaCha12Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// A random permutation of 0..n (Fisher-Yates) from stream `stream` of `seed`.
fn permutation(n: usize, seed: u64, stream: u64) -> Vec<u32> {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    let mut p: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        // Unbiased enough for strata: 64 random bits reduced to i + 1 choices.
        let j = ((u128::from(rng.next_u64()) * (i as u128 + 1)) >> 64) as usize;
        p.swap(i, j);
    }
    p
}

/// The value of `distribution` with cumulative probability `p` in (0, 1).
fn quantile(distribution: Distribution, p: f64) -> f64 {
    match distribution {
        Distribution::Uniform { min, max } => min + (max - min) * p,
        Distribution::Normal { mean, std } => mean + std * standard_normal_quantile(p),
    }
}

/// The standard normal distribution's quantile (P. J. Acklam's rational approximation,
/// relative error below 1.2e-9).
fn standard_normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.02425;
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p <= 1.0 - LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(text: &str) -> Plan {
        Plan::new(&Study::parse(text, Path::new("s.json")).unwrap())
    }

    #[test]
    fn grid_runs_vary_the_last_parameter_fastest() {
        let p = plan(
            r#"{"system": "x.json", "grid": [{"name": "a", "values": [1, 2]}, {"name": "b", "values": [10, 20, 30]}]}"#,
        );
        let runs: Vec<Vec<f64>> = (0..p.len()).map(|i| p.values(i)).collect();
        assert_eq!(runs[0], [1.0, 10.0]);
        assert_eq!(runs[2], [1.0, 30.0]);
        assert_eq!(runs[3], [2.0, 10.0]);
        assert_eq!(runs.len(), 6);
    }

    #[test]
    fn samples_depend_on_the_seed_and_index_only() {
        let text = r#"{"system": "x.json", "grid": [{"name": "g", "values": [1, 2]}],
            "samples": {"count": 50, "seed": 7, "parameters": [
              {"name": "u", "uniform": {"min": 2, "max": 3}},
              {"name": "n", "normal": {"mean": 10, "std": 2}}]}}"#;
        let (a, b) = (plan(text), plan(text));
        // Any order gives the same values.
        for i in (0..100).rev() {
            assert_eq!(a.values(i), b.values(i));
        }
        // Each grid point sees the same samples.
        assert_eq!(a.values(3)[1..], a.values(53)[1..]);
        let u: Vec<f64> = (0..50).map(|i| a.values(i)[1]).collect();
        assert!(u.iter().all(|&x| (2.0..3.0).contains(&x)));
        let n: Vec<f64> = (0..50).map(|i| a.values(i)[2]).collect();
        let mean = n.iter().sum::<f64>() / 50.0;
        assert!((mean - 10.0).abs() < 1.0, "{mean}");
        let other = plan(&text.replace("\"seed\": 7", "\"seed\": 8"));
        assert_ne!(other.values(0), a.values(0));
    }

    #[test]
    fn latin_hypercube_puts_one_sample_in_each_stratum() {
        let p = plan(
            r#"{"system": "x.json", "samples": {"count": 20, "seed": 3, "method": "latinHypercube", "parameters": [
              {"name": "u", "uniform": {"min": 0, "max": 1}}, {"name": "v", "uniform": {"min": 0, "max": 1}}]}}"#,
        );
        for d in 0..2 {
            let mut strata: Vec<usize> =
                (0..20).map(|i| (p.values(i)[d] * 20.0) as usize).collect();
            strata.sort_unstable();
            assert_eq!(strata, (0..20).collect::<Vec<_>>());
        }
    }

    #[test]
    fn normal_quantile_matches_known_values() {
        assert!(standard_normal_quantile(0.5).abs() < 1e-12);
        assert!((standard_normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-8);
        assert!((standard_normal_quantile(0.001) + 3.090_232_306_167_813).abs() < 1e-8);
    }
}
