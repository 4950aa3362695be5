//! The exact GELU of BERT and torch (approximate="none"): gelu(x) = x·Φ(x) = ½·x·(1 + erf(x/√2)).
//! `erf` and `exp` come from `ops::math` (vectorisable f32; std has no erf).

use crate::ops::math::{erf, exp};
use crate::threads;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, Zip};
use std::f32::consts::FRAC_1_SQRT_2;

/// 1/√(2π), the standard normal density at 0.
const INV_SQRT_2PI: f32 = 0.398_942_3;

#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * FRAC_1_SQRT_2))
}

/// d gelu / dx = Φ(x) + x·φ(x).
#[inline(always)]
pub fn gelu_grad(x: f32) -> f32 {
    let cdf = 0.5 * (1.0 + erf(x * FRAC_1_SQRT_2));
    let pdf = INV_SQRT_2PI * exp(-0.5 * x * x);
    cdf + x * pdf
}

/// Rows per block of work for the threads (`crate::threads`): each entry is computed alone,
/// so the cut changes nothing but who computes it.
const ROWS: usize = 64;

pub fn forward(inp: ArrayView2<f32>) -> Array2<f32> {
    let mut out = Array2::zeros(inp.raw_dim());
    forward_into(inp, &mut out.view_mut());
    out
}

/// `forward` into `out`, every entry written.
pub fn forward_into(inp: ArrayView2<f32>, out: &mut ArrayViewMut2<f32>) {
    let blocks: Vec<_> = out
        .axis_chunks_iter_mut(Axis(0), ROWS)
        .zip(inp.axis_chunks_iter(Axis(0), ROWS))
        .collect();
    threads::for_each(blocks, |(mut y, x)| {
        Zip::from(&mut y).and(&x).for_each(|y, &x| *y = gelu(x))
    });
}

/// In place: `d` holds dL/d(out) and becomes dL/d(inp) = d ⊙ gelu′(inp). Its callers need
/// dL/d(out) for nothing else, so backward zeroes no second buffer of the input's size for it.
pub fn backward(d: &mut ArrayViewMut2<f32>, inp: ArrayView2<f32>) {
    let blocks: Vec<_> = d
        .axis_chunks_iter_mut(Axis(0), ROWS)
        .zip(inp.axis_chunks_iter(Axis(0), ROWS))
        .collect();
    threads::for_each(blocks, |(mut d, x)| {
        Zip::from(&mut d)
            .and(&x)
            .for_each(|d, &x| *d *= gelu_grad(x))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project, random};
    use crate::rng::Rng;

    #[test]
    fn matches_reference_values() {
        // torch.nn.functional.gelu(torch.tensor([-3., -1., 0., 0.5, 2.])) in float64
        let want = [
            -0.004_049_694f32,
            -0.158_655_25,
            0.0,
            0.345_731_23,
            1.954_499_7,
        ];
        for (x, w) in [-3.0f32, -1.0, 0.0, 0.5, 2.0].into_iter().zip(want) {
            assert!(
                (gelu(x) - w).abs() < 1e-6,
                "gelu({x}) = {} want {w}",
                gelu(x)
            );
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        let mut rng = Rng::new(4);
        let x = random(&mut rng, (4, 6)).mapv(|v| 2.0 * v);
        let r = random(&mut rng, (4, 6));
        let mut dx = r.clone();
        backward(&mut dx.view_mut(), x.view());
        assert_grads_match(
            "d_inp",
            &dx,
            &numeric_grad(&x, |x| project(&forward(x.view()), &r)),
        );
    }
}
