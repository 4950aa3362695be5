//! Inverted dropout as torch: keep each entry with probability 1 − p and scale it by 1/(1 − p),
//! so the expected value is unchanged and evaluation needs no rescaling.
//!
//! Both directions work in place: the mask is a per-entry factor (0 or 1/(1 − p)), forward
//! multiplies the activation by it and backward multiplies the incoming gradient by the same
//! factor, which is the whole derivative.
//!
//! The factors are not drawn from a stream but hashed from (call seed, entry's index in the
//! whole batch) (`counter_factor`), so that a forward over a slice of a step's rows drops
//! exactly the entries the forward over the whole batch drops there (data-parallel shares,
//! `step::Share`). A forward's `Noise` gives each dropout call, in call order, its seed.

use ndarray::{Array, ArrayViewMut, Dimension, Zip};

/// The dropout of one training forward over rows `first_row..first_row + rows` of a step's
/// batch: the step's seed, and how many dropout calls the forward has made so far. Every
/// dropout tensor has the batch rows leading ((B·T, C), (B, H, Tq, Tk), …), so an entry's
/// index in the whole batch's tensor is `first_row · (numel / rows) + local index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Noise {
    pub seed: u64,
    pub first_row: usize,
    /// B of the slice this forward runs on.
    pub rows: usize,
    /// Dropout calls drawn so far: the next call's index in the forward.
    pub calls: u64,
}

/// One dropout call's draw: its seed and where the slice sits in the whole batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    pub seed: u64,
    pub first_row: usize,
    pub rows: usize,
}

impl Noise {
    /// A forward's noise over rows `first_row..first_row + rows` under step seed `seed`.
    pub fn new(seed: u64, first_row: usize, rows: usize) -> Noise {
        Noise {
            seed,
            first_row,
            rows,
            calls: 0,
        }
    }

    /// The next dropout call's draw. The calls come in the same order for any slice, so call
    /// k's seed is the same in every share of a step.
    pub fn next_call(&mut self) -> Draw {
        let seed = mix(self.seed, self.calls);
        self.calls += 1;
        Draw {
            seed,
            first_row: self.first_row,
            rows: self.rows,
        }
    }
}

impl Draw {
    /// The factor of entry `local` of this slice's tensor, each batch row `row_len` entries.
    pub fn factor(&self, row_len: usize, local: usize, p: f32) -> f32 {
        let global = self.first_row as u64 * row_len as u64 + local as u64;
        counter_factor(self.seed, global, p)
    }
}

/// Draws a mask of `shape` (batch rows leading) for the next call of `noise`, into `spare`'s
/// storage when it fits (`ops::reuse`). None when p = 0 (nothing to drop); the call is counted
/// either way.
pub fn draw_mask<D: Dimension>(
    shape: D,
    p: f32,
    noise: &mut Noise,
    spare: Option<Array<f32, D>>,
) -> Option<Array<f32, D>> {
    let draw = noise.next_call();
    if p <= 0.0 {
        return None;
    }
    let mut mask = super::reuse(spare.unwrap_or_default(), shape);
    let row_len = mask.len() / draw.rows.max(1);
    // Logical (row-major) order: entry i is the i-th of the slice's tensor.
    for (i, m) in mask.iter_mut().enumerate() {
        *m = draw.factor(row_len, i, p);
    }
    Some(mask)
}

/// SplitMix64's finaliser over seed + (index + 1)·golden ratio: a well-mixed 64-bit value for
/// every (seed, index).
fn mix(seed: u64, index: u64) -> u64 {
    let mut x = seed.wrapping_add(index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The dropout factor (0 or 1/(1 − p)) of entry `index` under `seed`, from a hash instead of a
/// stream: any entry can be drawn again in any order (tiled attention recomputes its mask in
/// backward without storing it), and by any slice of the batch.
pub fn counter_factor(seed: u64, index: u64, p: f32) -> f32 {
    let uniform = (mix(seed, index) >> 40) as f32 / (1u64 << 24) as f32;
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
    noise: &mut Noise,
    spare: Option<Array<f32, D>>,
) -> Option<Array<f32, D>> {
    let mask = draw_mask(x.raw_dim(), p, noise, spare)?;
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
    use crate::rng::Rng;
    use ndarray::{s, Array2, Ix2};

    #[test]
    fn drops_about_p_and_scales_the_rest() {
        let mut x = Array2::<f32>::ones((100, 100));
        let mask = forward(&mut x, 0.25, &mut Noise::new(6, 0, 100), None).unwrap();
        let dropped = x.iter().filter(|&&v| v == 0.0).count() as f32 / 10_000.0;
        assert!((dropped - 0.25).abs() < 0.02, "dropped {dropped}");
        assert!(x.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.75).abs() < 1e-6));
        assert_eq!(x, mask);
        assert!(forward(&mut x, 0.0, &mut Noise::new(6, 0, 100), None).is_none());
    }

    #[test]
    fn same_seed_same_mask_and_each_call_its_own() {
        let draw = |noise: &mut Noise| draw_mask(Ix2(8, 8), 0.5, noise, None).unwrap();
        let (mut a, mut b) = (Noise::new(9, 0, 8), Noise::new(9, 0, 8));
        let first = draw(&mut a);
        assert_eq!(first, draw(&mut b));
        assert_ne!(first, draw(&mut Noise::new(10, 0, 8)));
        // The forward's second call draws another mask.
        assert_ne!(first, draw(&mut a));
        assert_eq!(a.calls, 2);
    }

    /// Rows 3..7 of a batch of 10, drawn by a forward over just those rows (first_row 3),
    /// get the masks the whole batch's forward gives them, in every call.
    #[test]
    fn a_rows_mask_is_the_same_drawn_in_a_slice_or_in_the_whole_batch() {
        let (b, t, c) = (10, 3, 4);
        let (mut whole, mut slice) = (Noise::new(21, 0, b), Noise::new(21, 3, 4));
        for _call in 0..3 {
            let all = draw_mask(Ix2(b * t, c), 0.3, &mut whole, None).unwrap();
            let part = draw_mask(Ix2(4 * t, c), 0.3, &mut slice, None).unwrap();
            assert_eq!(part, all.slice(s![3 * t..7 * t, ..]));
            assert!(part.iter().any(|&m| m == 0.0) && part.iter().any(|&m| m != 0.0));
        }
        let four = |noise: &mut Noise, rows| {
            draw_mask(ndarray::Ix4(rows, 2, 3, 3), 0.3, noise, None).unwrap()
        };
        let all = four(&mut whole, b);
        assert_eq!(four(&mut slice, 4), all.slice(s![3..7, .., .., ..]));
    }

    #[test]
    fn gradients_match_finite_differences_for_a_fixed_mask() {
        let mut rng = Rng::new(7);
        let x = random(&mut rng, (4, 5));
        let r = random(&mut rng, (4, 5));
        // The same seed gives the same mask on every evaluation: the function is then linear.
        let run = |x: &Array2<f32>| {
            let mut y = x.clone();
            forward(&mut y, 0.4, &mut Noise::new(11, 0, 4), None);
            project(&y, &r)
        };
        let mask = draw_mask(x.raw_dim(), 0.4, &mut Noise::new(11, 0, 4), None).unwrap();
        let mut d = r.clone();
        backward(&mut d.view_mut(), Some(&mask));
        assert!(mask.iter().any(|&m| m == 0.0));
        assert_grads_match("d_inp", &d, &numeric_grad(&x, run));
    }
}
