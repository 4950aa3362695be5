//! Scaled dot-product attention over already-projected heads:
//! context = dropout(softmax(Q·Kᵀ·scale + M))·V, per batch row and head.
//!
//! Kept apart from the Q/K/V projections and driven by plain options so that variants slot
//! in here: K and V may come from another sequence (Tk ≠ Tq, cross-attention), the mask is a
//! parameter, and the per-head loop is the place for tiling or grouped heads.

use crate::batch::MaskMode;
use crate::ops::dropout;
use crate::ops::math::{self, exp};
use crate::ops::matmul::gemm;
use crate::rng::Rng;
use crate::trace::{HeadTrace, Matrix};
use ndarray::{s, Array2, Array3, Array4, ArrayView2, ArrayView3, ArrayViewMut3, Ix4, Zip};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionOptions {
    /// H: q, k and v hold H heads side by side along their feature axis.
    pub num_heads: usize,
    /// Which additive mask M (0 or −∞) goes into the softmax.
    pub mask: MaskMode,
    /// Multiplies Q·Kᵀ; 1/√D for BERT.
    pub scale: f32,
    /// Dropout rate on the attention weights; 0 = none (evaluation).
    pub dropout: f32,
}

/// What backward needs besides q, k and v.
#[derive(Clone, Debug)]
pub struct AttentionCache {
    /// softmax(Q·Kᵀ·scale + M) before dropout (B, H, Tq, Tk).
    pub weights: Array4<f32>,
    /// Dropout factors on the weights (B, H, Tq, Tk), None without dropout.
    pub dropout_mask: Option<Array4<f32>>,
}

/// In place over one row of scores: w_j = exp(s_j·scale − max) / Σ over allowed j, 0 where
/// not allowed. A row with no allowed key becomes all zeros (not NaN from 0/0): such a
/// query attends to nothing and its context is 0.
pub fn masked_softmax_row(row: &mut [f32], allowed: &[bool], scale: f32) {
    for (s, &a) in row.iter_mut().zip(allowed) {
        *s = if a { *s * scale } else { f32::NEG_INFINITY };
    }
    let max = math::max(row);
    if max == f32::NEG_INFINITY {
        row.fill(0.0);
        return;
    }
    for s in row.iter_mut() {
        *s = exp(*s - max); // exp(−∞) = 0 for the masked entries
    }
    let inv_sum = 1.0 / math::sum(row);
    for s in row.iter_mut() {
        *s *= inv_sum;
    }
}

/// allowed[i·Tk + j] = M[i][j] is 0 (not −∞) for one sequence, from its key padding mask.
fn fill_allowed(allowed: &mut Vec<bool>, mode: MaskMode, key_mask: &[u8], tq: usize) {
    allowed.clear();
    allowed.extend(
        (0..tq).flat_map(|i| (0..key_mask.len()).map(move |j| mode.allows(key_mask, i, j))),
    );
}

/// q (B, Tq, H·Dk), k (B, Tk, H·Dk), v (B, Tk, H·Dv), key_mask (B, Tk) 1 = real key.
/// Returns the merged context (B, Tq, H·Dv). With `trace`, pushes every head's
/// intermediates for batch row 0.
pub fn forward(
    q: ArrayView3<f32>,
    k: ArrayView3<f32>,
    v: ArrayView3<f32>,
    key_mask: ArrayView2<u8>,
    opts: &AttentionOptions,
    rng: &mut Rng,
    mut trace: Option<&mut Vec<HeadTrace>>,
) -> (Array3<f32>, AttentionCache) {
    let ((b_size, tq, qk_width), tk, h_count) = (q.dim(), k.dim().1, opts.num_heads);
    assert_eq!(k.dim(), (b_size, tk, qk_width), "k shape");
    assert_eq!(
        (v.dim().0, v.dim().1, key_mask.dim()),
        (b_size, tk, (b_size, tk)),
        "v / key_mask shape"
    );
    let (dk, dv) = (qk_width / h_count, v.dim().2 / h_count);
    let mut weights = Array4::zeros((b_size, h_count, tq, tk));
    let dropout_mask = dropout::draw_mask(Ix4(b_size, h_count, tq, tk), opts.dropout, rng);
    let mut context = Array3::zeros((b_size, tq, h_count * dv));
    let mut dropped = Array2::zeros((tq, tk)); // scratch: weights ⊙ dropout mask
    let mut allowed = Vec::with_capacity(tq * tk);
    let mut key_row = Vec::with_capacity(tk);
    for b in 0..b_size {
        key_row.clear();
        key_row.extend(key_mask.row(b).iter().copied());
        fill_allowed(&mut allowed, opts.mask, &key_row, tq);
        for h in 0..h_count {
            let qh = q.slice(s![b, .., h * dk..(h + 1) * dk]);
            let kh = k.slice(s![b, .., h * dk..(h + 1) * dk]);
            let vh = v.slice(s![b, .., h * dv..(h + 1) * dv]);
            let mut w = weights.slice_mut(s![b, h, .., ..]);
            gemm(1.0, &qh, &kh.t(), 0.0, &mut w); // scores = Q·Kᵀ
            let head_trace = trace.as_deref_mut().filter(|_| b == 0).map(|heads| {
                heads.push(HeadTrace {
                    q: Matrix::from_view(qh),
                    k: Matrix::from_view(kh),
                    v: Matrix::from_view(vh),
                    scores: Matrix::from_view(w.view()),
                    ..HeadTrace::default()
                });
                heads.last_mut().expect("just pushed")
            });
            let w_rows = w
                .as_slice_mut()
                .expect("weights are contiguous (B, H, Tq, Tk)");
            for (row, allowed) in w_rows.chunks_exact_mut(tk).zip(allowed.chunks_exact(tk)) {
                masked_softmax_row(row, allowed, opts.scale);
            }
            let mut ctx = context.slice_mut(s![b, .., h * dv..(h + 1) * dv]);
            match &dropout_mask {
                Some(mask) => {
                    Zip::from(&mut dropped)
                        .and(&w)
                        .and(mask.slice(s![b, h, .., ..]))
                        .for_each(|d, &w, &m| *d = w * m);
                    gemm(1.0, &dropped, &vh, 0.0, &mut ctx);
                }
                None => gemm(1.0, &w, &vh, 0.0, &mut ctx),
            }
            if let Some(t) = head_trace {
                fill_head_trace(t, &allowed, opts.scale, w.view(), ctx.view());
            }
        }
    }
    (
        context,
        AttentionCache {
            weights,
            dropout_mask,
        },
    )
}

/// The trace's derived matrices: scaled, M, scaled + M, weights and the head's context.
fn fill_head_trace(
    t: &mut HeadTrace,
    allowed: &[bool],
    scale: f32,
    w: ArrayView2<f32>,
    ctx: ArrayView2<f32>,
) {
    let (rows, cols) = (t.scores.rows, t.scores.cols);
    let scaled: Vec<f32> = t.scores.data.iter().map(|&s| s * scale).collect();
    let mask: Vec<f32> = allowed
        .iter()
        .map(|&a| if a { 0.0 } else { f32::NEG_INFINITY })
        .collect();
    let masked = scaled.iter().zip(&mask).map(|(&s, &m)| s + m).collect();
    t.scaled = Matrix {
        rows,
        cols,
        data: scaled,
    };
    t.mask = Matrix {
        rows,
        cols,
        data: mask,
    };
    t.masked = Matrix {
        rows,
        cols,
        data: masked,
    };
    t.weights = Matrix::from_view(w);
    t.context = Matrix::from_view(ctx);
}

/// From d_context (B, Tq, H·Dv), accumulates into d_q, d_k, d_v. Per head, with P the
/// weights, P̃ = P ⊙ dropout mask and G = dL/dP:
/// dV += P̃ᵀ·dC,  G = (dC·Vᵀ) ⊙ mask,  dS = P ⊙ (G − rowsum(G ⊙ P)),
/// dQ += scale·dS·K,  dK += scale·dSᵀ·Q. Masked entries have P = 0, so they pass nothing back.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    d_q: &mut ArrayViewMut3<f32>,
    d_k: &mut ArrayViewMut3<f32>,
    d_v: &mut ArrayViewMut3<f32>,
    d_context: ArrayView3<f32>,
    q: ArrayView3<f32>,
    k: ArrayView3<f32>,
    v: ArrayView3<f32>,
    cache: &AttentionCache,
    opts: &AttentionOptions,
) {
    let (b_size, h_count, tq, tk) = cache.weights.dim();
    let (dk, dv) = (q.dim().2 / h_count, v.dim().2 / h_count);
    let mut dropped = Array2::zeros((tq, tk)); // P̃
    let mut grad = Array2::zeros((tq, tk)); // G, then dS
    for b in 0..b_size {
        for h in 0..h_count {
            let p = cache.weights.slice(s![b, h, .., ..]);
            let (qh, kh) = (
                q.slice(s![b, .., h * dk..(h + 1) * dk]),
                k.slice(s![b, .., h * dk..(h + 1) * dk]),
            );
            let vh = v.slice(s![b, .., h * dv..(h + 1) * dv]);
            let dc = d_context.slice(s![b, .., h * dv..(h + 1) * dv]);
            gemm(1.0, &dc, &vh.t(), 0.0, &mut grad);
            match &cache.dropout_mask {
                Some(mask) => {
                    let m = mask.slice(s![b, h, .., ..]);
                    Zip::from(&mut dropped)
                        .and(p)
                        .and(m)
                        .for_each(|d, &p, &m| *d = p * m);
                    grad *= &m;
                    gemm(
                        1.0,
                        &dropped.t(),
                        &dc,
                        1.0,
                        &mut d_v.slice_mut(s![b, .., h * dv..(h + 1) * dv]),
                    );
                }
                None => gemm(
                    1.0,
                    &p.t(),
                    &dc,
                    1.0,
                    &mut d_v.slice_mut(s![b, .., h * dv..(h + 1) * dv]),
                ),
            }
            Zip::from(grad.rows_mut())
                .and(p.rows())
                .for_each(|mut g, p| {
                    let dot = Zip::from(&g)
                        .and(&p)
                        .fold(0.0f32, |acc, &g, &p| acc + g * p);
                    Zip::from(&mut g)
                        .and(&p)
                        .for_each(|g, &p| *g = p * (*g - dot));
                });
            gemm(
                opts.scale,
                &grad,
                &kh,
                1.0,
                &mut d_q.slice_mut(s![b, .., h * dk..(h + 1) * dk]),
            );
            gemm(
                opts.scale,
                &grad.t(),
                &qh,
                1.0,
                &mut d_k.slice_mut(s![b, .., h * dk..(h + 1) * dk]),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project};
    use ndarray::Array3;

    fn random3(rng: &mut Rng, shape: (usize, usize, usize)) -> Array3<f32> {
        Array3::from_shape_simple_fn(shape, || rng.normal(0.0, 1.0))
    }

    /// Two sequences of 4, the second with its last key padded; 2 heads of width 3.
    fn setup(seed: u64) -> (Array3<f32>, Array3<f32>, Array3<f32>, Array2<u8>) {
        let mut rng = Rng::new(seed);
        let (q, k, v) = (
            random3(&mut rng, (2, 4, 6)),
            random3(&mut rng, (2, 4, 6)),
            random3(&mut rng, (2, 4, 6)),
        );
        (q, k, v, ndarray::array![[1, 1, 1, 1], [1, 1, 1, 0]])
    }

    fn opts(mask: MaskMode, dropout: f32) -> AttentionOptions {
        AttentionOptions {
            num_heads: 2,
            mask,
            scale: 1.0 / 3f32.sqrt(),
            dropout,
        }
    }

    fn check_gradients(mask: MaskMode, dropout: f32) {
        let (q, k, v, key_mask) = setup(13);
        let o = opts(mask, dropout);
        let r = random3(&mut Rng::new(14), (2, 4, 6));
        // Reseeding per evaluation fixes the dropout mask, so the function is deterministic.
        let run = |q: &Array3<f32>, k: &Array3<f32>, v: &Array3<f32>| {
            forward(
                q.view(),
                k.view(),
                v.view(),
                key_mask.view(),
                &o,
                &mut Rng::new(15),
                None,
            )
        };
        let (_, cache) = run(&q, &k, &v);
        assert_eq!(cache.dropout_mask.is_some(), dropout > 0.0);
        let (mut dq, mut dk, mut dv) = (
            Array3::zeros(q.dim()),
            Array3::zeros(k.dim()),
            Array3::zeros(v.dim()),
        );
        backward(
            &mut dq.view_mut(),
            &mut dk.view_mut(),
            &mut dv.view_mut(),
            r.view(),
            q.view(),
            k.view(),
            v.view(),
            &cache,
            &o,
        );
        assert_grads_match(
            "d_q",
            &dq,
            &numeric_grad(&q, |q| project(&run(q, &k, &v).0, &r)),
        );
        assert_grads_match(
            "d_k",
            &dk,
            &numeric_grad(&k, |k| project(&run(&q, k, &v).0, &r)),
        );
        assert_grads_match(
            "d_v",
            &dv,
            &numeric_grad(&v, |v| project(&run(&q, &k, v).0, &r)),
        );
        // A padded key receives no gradient: nothing attended to it.
        assert!(dk
            .slice(s![1, 3, ..])
            .iter()
            .chain(dv.slice(s![1, 3, ..]).iter())
            .all(|&x| x == 0.0));
    }

    #[test]
    fn gradients_match_finite_differences_with_padding_mask() {
        check_gradients(MaskMode::Padding, 0.0);
    }

    #[test]
    fn gradients_match_finite_differences_with_causal_mask() {
        check_gradients(MaskMode::Causal, 0.0);
    }

    #[test]
    fn gradients_match_finite_differences_with_attention_dropout() {
        check_gradients(MaskMode::Padding, 0.3);
    }

    #[test]
    fn weights_are_a_distribution_over_allowed_keys_only() {
        let (q, k, v, key_mask) = setup(16);
        for mode in [MaskMode::None, MaskMode::Padding, MaskMode::Causal] {
            let (_, cache) = forward(
                q.view(),
                k.view(),
                v.view(),
                key_mask.view(),
                &opts(mode, 0.0),
                &mut Rng::new(0),
                None,
            );
            let (b_size, h_count, tq, tk) = cache.weights.dim();
            for (b, h, i) in (0..b_size)
                .flat_map(|b| (0..h_count).flat_map(move |h| (0..tq).map(move |i| (b, h, i))))
            {
                let row = cache.weights.slice(s![b, h, i, ..]);
                assert!(
                    (row.sum() - 1.0).abs() < 1e-6,
                    "{mode:?} row sum {}",
                    row.sum()
                );
                for j in 0..tk {
                    if !mode.allows(key_mask.row(b).as_slice().unwrap(), i, j) {
                        assert_eq!(row[j], 0.0, "{mode:?} b{b} i{i} j{j}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_query_with_no_allowed_key_gets_zero_weights_not_nan() {
        let mut row = [1.0f32, 2.0, 3.0];
        masked_softmax_row(&mut row, &[false, false, false], 1.0);
        assert_eq!(row, [0.0, 0.0, 0.0]);
        let mut row = [1.0f32, 2.0, 3.0];
        masked_softmax_row(&mut row, &[true, false, true], 0.5);
        let (a, c) = ((0.5f32).exp(), (1.5f32).exp());
        assert!((row[0] - a / (a + c)).abs() < 1e-6 && row[1] == 0.0);
    }

    #[test]
    fn cross_attention_shapes_work() {
        // Tq = 2 queries over Tk = 5 keys, value width differing from key width.
        let mut rng = Rng::new(17);
        let (q, k, v) = (
            random3(&mut rng, (1, 2, 4)),
            random3(&mut rng, (1, 5, 4)),
            random3(&mut rng, (1, 5, 6)),
        );
        let o = AttentionOptions {
            num_heads: 2,
            mask: MaskMode::Padding,
            scale: 0.5,
            dropout: 0.0,
        };
        let (ctx, cache) = forward(
            q.view(),
            k.view(),
            v.view(),
            Array2::ones((1, 5)).view(),
            &o,
            &mut rng,
            None,
        );
        assert_eq!((ctx.dim(), cache.weights.dim()), ((1, 2, 6), (1, 2, 2, 5)));
    }
}
