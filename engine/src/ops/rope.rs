//! Rotary position embeddings exactly as transformers' RoFormer applies them
//! (`RoFormerSinusoidalPositionalEmbedding` + `apply_rotary_position_embeddings`):
//!
//! per head of width D and token position t, the pairs (x[2i], x[2i+1]), i < D/2, turn by the
//! angle t·θ_i with θ_i = 10000^(−2i/D):
//!   y[2i]   = x[2i]·cos − x[2i+1]·sin
//!   y[2i+1] = x[2i+1]·cos + x[2i]·sin
//! Positions are 0..T in every sequence. RoFormer builds its table in float64 and stores it
//! as float32; so does `table`. A rotation's inverse is its transpose, which is the backward.

use ndarray::{Array2, Array3, ArrayView3, ArrayViewMut3, Axis};

/// The angle t·θ_i, θ_i = 10000^(−2i/D), by which pair i of a head of width D turns at
/// position t.
pub fn angle(pos: usize, i: usize, head_dim: usize) -> f64 {
    pos as f64 / 10000f64.powf((2 * i) as f64 / head_dim as f64)
}

/// sin and cos of t·θ_i, each (T, D/2). D must be even.
pub fn table(t: usize, head_dim: usize) -> (Array2<f32>, Array2<f32>) {
    let half = head_dim / 2;
    let angle = |pos: usize, i: usize| angle(pos, i, head_dim);
    (
        Array2::from_shape_fn((t, half), |(p, i)| angle(p, i).sin() as f32),
        Array2::from_shape_fn((t, half), |(p, i)| angle(p, i).cos() as f32),
    )
}

/// x (B, T, n·D), n heads of width D side by side. Returns the rotated copy.
pub fn forward(x: ArrayView3<f32>, head_dim: usize) -> Array3<f32> {
    let (sin, cos) = table(x.dim().1, head_dim);
    let mut y = x.to_owned();
    rotate(&mut y.view_mut(), &sin, &cos, head_dim, 1.0);
    y
}

/// Accumulates dL/dx += Rᵀ·dL/dy into `d_x` (B, T, n·D).
pub fn backward(d_x: &mut ArrayViewMut3<f32>, d_y: ArrayView3<f32>, head_dim: usize) {
    let (sin, cos) = table(d_y.dim().1, head_dim);
    let mut d = d_y.to_owned();
    rotate(&mut d.view_mut(), &sin, &cos, head_dim, -1.0);
    *d_x += &d;
}

/// One row of n heads side by side (n·D), in place, at position `pos`: what `forward` does to
/// row `pos` of a sequence, for a KV-cache step that computes one token at a time.
pub fn rotate_row_at(row: &mut [f32], pos: usize, head_dim: usize) {
    let (sin, cos): (Vec<f32>, Vec<f32>) = (0..head_dim / 2)
        .map(|i| {
            let a = angle(pos, i, head_dim);
            (a.sin() as f32, a.cos() as f32)
        })
        .unzip();
    for head in row.chunks_exact_mut(head_dim) {
        for (i, pair) in head.chunks_exact_mut(2).enumerate() {
            let (s, c) = (sin[i], cos[i]);
            let (x0, x1) = (pair[0], pair[1]);
            pair[0] = x0 * c - x1 * s;
            pair[1] = x1 * c + x0 * s;
        }
    }
}

/// In place, by +angle (direction 1) or −angle (direction −1, the transpose).
fn rotate(
    x: &mut ArrayViewMut3<f32>,
    sin: &Array2<f32>,
    cos: &Array2<f32>,
    head_dim: usize,
    direction: f32,
) {
    for mut seq in x.axis_iter_mut(Axis(0)) {
        for (t, mut row) in seq.axis_iter_mut(Axis(0)).enumerate() {
            let (sin, cos) = (sin.row(t), cos.row(t));
            let row = row.as_slice_mut().expect("contiguous rows");
            for head in row.chunks_exact_mut(head_dim) {
                for (i, pair) in head.chunks_exact_mut(2).enumerate() {
                    let (s, c) = (direction * sin[i], cos[i]);
                    let (x0, x1) = (pair[0], pair[1]);
                    pair[0] = x0 * c - x1 * s;
                    pair[1] = x1 * c + x0 * s;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project};
    use crate::rng::Rng;

    fn random3(seed: u64, shape: (usize, usize, usize)) -> Array3<f32> {
        let mut rng = Rng::new(seed);
        Array3::from_shape_simple_fn(shape, || rng.normal(0.0, 1.0))
    }

    #[test]
    fn gradients_match_finite_differences() {
        // Two heads of width 4 over 5 positions (angles up to 4 rad: every quadrant).
        let (x, r) = (random3(1, (2, 5, 8)), random3(2, (2, 5, 8)));
        let mut dx = Array3::zeros(x.dim());
        backward(&mut dx.view_mut(), r.view(), 4);
        assert_grads_match(
            "d_x",
            &dx,
            &numeric_grad(&x, |x| project(&forward(x.view(), 4), &r)),
        );
    }

    #[test]
    fn turns_interleaved_pairs_by_position_times_frequency() {
        let x = random3(3, (1, 6, 4));
        let y = forward(x.view(), 4);
        // Position 0 is the identity; a rotation keeps each pair's length.
        assert_eq!(
            y.slice(ndarray::s![0, 0, ..]),
            x.slice(ndarray::s![0, 0, ..])
        );
        for t in 0..6 {
            for i in 0..2 {
                let (a, b) = (x[[0, t, 2 * i]], x[[0, t, 2 * i + 1]]);
                let (c, d) = (y[[0, t, 2 * i]], y[[0, t, 2 * i + 1]]);
                assert!(((a * a + b * b) - (c * c + d * d)).abs() < 1e-5);
                // The pair turned by t·θ_i, θ_i = 10000^(−2i/4).
                let angle = t as f64 * 10000f64.powf(-((2 * i) as f64) / 4.0);
                let turned = (d as f64).atan2(c as f64) - (b as f64).atan2(a as f64);
                let diff = (turned - angle).rem_euclid(std::f64::consts::TAU);
                assert!(
                    !(1e-4..=std::f64::consts::TAU - 1e-4).contains(&diff),
                    "t{t} i{i}"
                );
            }
        }
    }

    #[test]
    fn scores_depend_only_on_relative_position() {
        // q at m and k at n: q_m·k_n after rotation depends on m − n only.
        let (q, k) = (random3(4, (1, 1, 6)), random3(5, (1, 1, 6)));
        let at = |x: &Array3<f32>, pos: usize| {
            let mut seq = Array3::zeros((1, pos + 1, 6));
            seq.slice_mut(ndarray::s![0, pos, ..])
                .assign(&x.slice(ndarray::s![0, 0, ..]));
            forward(seq.view(), 6)
                .slice(ndarray::s![0, pos, ..])
                .to_owned()
        };
        let s = |m: usize, n: usize| -> f32 {
            at(&q, m)
                .iter()
                .zip(at(&k, n).iter())
                .map(|(a, b)| a * b)
                .sum()
        };
        assert!((s(5, 2) - s(3, 0)).abs() < 1e-5 && (s(7, 4) - s(3, 0)).abs() < 1e-5);
        assert!((s(5, 2) - s(2, 5)).abs() > 1e-3);
    }
}
