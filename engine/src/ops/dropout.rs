//! Inverted dropout as torch: keep each entry with probability 1 − p and scale it by 1/(1 − p),
//! so the expected value is unchanged and evaluation needs no rescaling.
//!
//! Both directions work in place: the mask is a per-entry factor (0 or 1/(1 − p)), forward
//! multiplies the activation by it and backward multiplies the incoming gradient by the same
//! factor, which is the whole derivative.

use crate::rng::Rng;
use ndarray::{Array, ArrayViewMut, Dimension, Zip};

/// Draws a mask of `shape` from `rng` in row-major order, into `spare`'s storage when it fits
/// (`ops::reuse`). None when p = 0 (nothing to drop).
pub fn draw_mask<D: Dimension>(
    shape: D,
    p: f32,
    rng: &mut Rng,
    spare: Option<Array<f32, D>>,
) -> Option<Array<f32, D>> {
    if p <= 0.0 {
        return None;
    }
    let keep = 1.0 / (1.0 - p);
    let mut mask = super::reuse(spare.unwrap_or_default(), shape);
    mask.map_inplace(|m| *m = if rng.uniform() < p { 0.0 } else { keep });
    Some(mask)
}

/// The dropout factor (0 or 1/(1 − p)) of entry `index` under `seed`, from a hash instead of a
/// stream: any entry can be drawn again in any order (tiled attention recomputes its mask in
/// backward without storing it). SplitMix64's finaliser over seed + index·golden ratio.
pub fn counter_factor(seed: u64, index: u64, p: f32) -> f32 {
    let mut x = seed.wrapping_add(index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let uniform = (x >> 40) as f32 / (1u64 << 24) as f32;
    if uniform < p {
        0.0
    } else {
        1.0 / (1.0 - p)
    }
}

/// x ⊙= mask; returns the mask for backward (None when p = 0: x untouched), drawn into
/// `spare` when it fits.
pub fn forward<D: Dimension>(
    x: &mut Array<f32, D>,
    p: f32,
    rng: &mut Rng,
    spare: Option<Array<f32, D>>,
) -> Option<Array<f32, D>> {
    let mask = draw_mask(x.raw_dim(), p, rng, spare)?;
    *x *= &mask;
    Some(mask)
}

/// d ⊙= mask: turns dL/d(output) into dL/d(input) in place.
pub fn backward<D: Dimension>(d: &mut ArrayViewMut<f32, D>, mask: Option<&Array<f32, D>>) {
    if let Some(mask) = mask {
        Zip::from(d).and(mask).for_each(|d, &m| *d *= m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project, random};
    use ndarray::Array2;

    #[test]
    fn drops_about_p_and_scales_the_rest() {
        let mut x = Array2::<f32>::ones((100, 100));
        let mask = forward(&mut x, 0.25, &mut Rng::new(6), None).unwrap();
        let dropped = x.iter().filter(|&&v| v == 0.0).count() as f32 / 10_000.0;
        assert!((dropped - 0.25).abs() < 0.02, "dropped {dropped}");
        assert!(x.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
        assert_eq!(x, mask);
        assert!(forward(&mut x, 0.0, &mut Rng::new(6), None).is_none());
    }

    #[test]
    fn same_seed_same_mask() {
        let a = draw_mask(ndarray::Ix2(8, 8), 0.5, &mut Rng::new(9), None).unwrap();
        let b = draw_mask(ndarray::Ix2(8, 8), 0.5, &mut Rng::new(9), None).unwrap();
        let c = draw_mask(ndarray::Ix2(8, 8), 0.5, &mut Rng::new(10), None).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn gradients_match_finite_differences_for_a_fixed_mask() {
        let mut rng = Rng::new(7);
        let x = random(&mut rng, (4, 5));
        let r = random(&mut rng, (4, 5));
        // The same seed gives the same mask on every evaluation: the function is then linear.
        let run = |x: &Array2<f32>| {
            let mut y = x.clone();
            forward(&mut y, 0.4, &mut Rng::new(11), None);
            project(&y, &r)
        };
        let mask = draw_mask(x.raw_dim(), 0.4, &mut Rng::new(11), None).unwrap();
        let mut d = r.clone();
        backward(&mut d.view_mut(), Some(&mask));
        assert!(mask.iter().any(|&m| m == 0.0));
        assert_grads_match("d_inp", &d, &numeric_grad(&x, run));
    }
}
