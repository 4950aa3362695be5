//! exp and erf for f32, branch-free so loops over slices vectorise (std's `exp` is a libm
//! call per element, and std has no erf). Both are checked against f64 references below.

/// Number of independent accumulators in the reductions below: float addition is not
/// associative, so the compiler only vectorises a reduction written with separate lanes.
const LANES: usize = 8;

/// Largest element (−∞ for an empty slice; NaNs are skipped).
pub fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = if v > *a { v } else { *a };
        }
    }
    acc.iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m })
}

/// Σ e^(x − shift).
pub fn sum_exp(xs: &[f32], shift: f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += exp(v - shift);
        }
    }
    acc.iter().sum::<f32>() + rest.iter().map(|&v| exp(v - shift)).sum::<f32>()
}

/// Σ x.
pub fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// e^x with Cephes' expf polynomial: x = n·ln2 + r, |r| ≤ ln2/2, e^x = 2ⁿ·p(r).
/// Relative error ≲ 2e-7 (2 ulp); returns exactly 0 below −87.3, where e^x is subnormal,
/// and is only meant for x ≤ 88.3 (softmax and loss arguments are ≤ 0, GELU's −x²/2 too).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4; // ln 2 split so n·LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0; // 1.5·2²³: adding it rounds to an integer
                                     // All-ones bits unless x underflows; a mask, not a branch, keeps the loop vectorisable.
    let keep = u32::from(x >= -87.3).wrapping_neg();
    let x = if x < -87.3 { -87.3 } else { x };
    let x = if x > 88.3 { 88.3 } else { x };
    // t = n + ROUND exactly, so n sits in t's low mantissa bits: integer ops get 2ⁿ without
    // a float→int conversion (which would stop the loop from vectorising).
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_2e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    let two_n = f32::from_bits((t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127)) << 23);
    f32::from_bits((y * two_n).to_bits() & keep)
}

/// erf(x) as the rational minimax approximation Eigen and XLA use for f32 (odd degree-13
/// numerator over even degree-8 denominator), exactly ±1 from |x| ≥ 3.92 on, where erf
/// rounds to ±1 in f32. Absolute error < 5e-7 everywhere (tested), so GELU =
/// ½·x·(1 + erf(x/√2)) is off by < 2e-6 absolute (tested): the exact erf GELU to f32 working
/// precision (torch's vectorised CPU erf is a polynomial approximation too), not the tanh
/// approximation (off by up to 1e-3).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    // All-ones bits where erf rounds to ±1; selecting by mask, not branch, keeps loops vectorised.
    let saturated = u32::from(x.abs() >= 3.92).wrapping_neg();
    let one = 1.0f32.copysign(x);
    let x = if x < -3.92 { -3.92 } else { x };
    let x = if x > 3.92 { 3.92 } else { x };
    let x2 = x * x;
    let p = -2.726_142_3e-10;
    let p = p * x2 + 2.770_681_4e-8;
    let p = p * x2 + -2.101_024e-6;
    let p = p * x2 + -5.692_506_4e-5;
    let p = p * x2 + -7.349_906_3e-4;
    let p = p * x2 + -2.954_6e-3;
    let p = p * x2 + -1.609_603_3e-2;
    let q = -1.456_607_2e-5;
    let q = q * x2 + -2.133_740_6e-4;
    let q = q * x2 + -1.682_827e-3;
    let q = q * x2 + -7.373_329_3e-3;
    let q = q * x2 + -1.426_474e-2;
    let r = x * p / q;
    f32::from_bits((one.to_bits() & saturated) | (r.to_bits() & !saturated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
        (0..=n).map(move |i| lo + (hi - lo) * i as f32 / n as f32)
    }

    #[test]
    fn lane_reductions_match_plain_ones() {
        let xs: Vec<f32> = (0..37)
            .map(|i| ((i * 7919) % 23) as f32 / 5.0 - 2.0)
            .collect();
        assert_eq!(
            max(&xs),
            xs.iter().cloned().fold(f32::NEG_INFINITY, f32::max)
        );
        assert_eq!(max(&[]), f32::NEG_INFINITY);
        let plain: f64 = xs.iter().map(|&x| (x as f64 - 1.0).exp()).sum();
        assert!((sum_exp(&xs, 1.0) as f64 - plain).abs() < 1e-5 * plain);
        assert!((sum(&xs) as f64 - xs.iter().map(|&x| x as f64).sum::<f64>()).abs() < 1e-4);
    }

    #[test]
    fn exp_is_within_two_ulp_and_underflows_to_zero() {
        let mut worst = 0.0f64;
        for x in grid(-87.0, 88.0, 400_000) {
            let want = (x as f64).exp();
            worst = worst.max(((exp(x) as f64 - want) / want).abs());
        }
        assert!(worst < 2.5e-7, "worst relative error {worst:e}");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-100.0), 0.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn erf_is_within_5e7_absolute() {
        let mut worst = 0.0f64;
        for x in grid(-6.0, 6.0, 400_000) {
            worst = worst.max((erf(x) as f64 - libm::erf(x as f64)).abs());
        }
        assert!(worst < 5e-7, "worst absolute error {worst:e}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!((erf(10.0), erf(-10.0)), (1.0, -1.0));
    }

    #[test]
    fn gelu_built_on_it_is_within_2e6_absolute() {
        let mut worst = 0.0f64;
        for x in grid(-30.0, 30.0, 400_000) {
            let want = 0.5 * x as f64 * (1.0 + libm::erf(x as f64 / std::f64::consts::SQRT_2));
            worst = worst.max((crate::ops::gelu::gelu(x) as f64 - want).abs());
        }
        assert!(worst < 2e-6, "worst absolute error {worst:e}");
    }
}
