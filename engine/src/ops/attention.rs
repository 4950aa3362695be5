//! Scaled dot-product attention over already-projected heads, and the choice among its
//! kernels: context = dropout(softmax(Q·Kᵀ·scale + M))·V, per batch row and head.
//!
//! Kept apart from the Q/K/V projections and driven by plain options so that variants slot in
//! here: K and V may come from another sequence (Tk ≠ Tq, cross-attention), the mask (with an
//! optional sliding window) is a parameter, K/V may carry fewer groups than Q has heads (GQA),
//! and the kernel is a choice: `Full` keeps the (B, H, Tq, Tk) weights for backward (this
//! file), `Tiled` keeps only each row's log-sum-exp (`flash`), and linear attention replaces the
//! softmax altogether (`linear_attention`). `forward`/`backward` here dispatch to them.
//!
//! Shapes: B batch rows, Tq queries, Tk keys, H query heads, G K/V groups (H = G·(H/G)),
//! Dk = key width per head, Dv = value width per head.

use crate::batch::MaskMode;
use crate::error::{EngineError, Result};
use crate::ops::math::{self, exp};
use crate::ops::matmul::gemm;
use crate::ops::{dropout, flash, linear_attention};
use crate::rng::Rng;
use crate::trace::{HeadTrace, Matrix};
use ndarray::{s, Array2, Array3, Array4, ArrayView2, ArrayView3, ArrayViewMut3, Ix4, Zip};

/// How softmax attention is computed; both give the same output and gradients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AttentionKernel {
    /// The whole (Tq, Tk) weight matrix per head, kept for backward.
    #[default]
    Full,
    /// FlashAttention-2: query blocks × key blocks of `block` rows, online softmax; keeps only
    /// the output and each row's log-sum-exp.
    Tiled { block: usize },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionOptions {
    /// H: q holds H heads side by side along its feature axis.
    pub num_heads: usize,
    /// G: k and v hold G groups; query head h reads group h ÷ (H/G). G = H is plain multi-head.
    pub num_kv_heads: usize,
    /// Which additive mask M (0 or −∞) goes into the softmax.
    pub mask: MaskMode,
    /// Sliding window W: on top of the mask, query i sees key j only if |i − j| < W
    /// (with the causal mask: 0 ≤ i − j < W, W keys including itself).
    pub window: Option<usize>,
    /// Multiplies Q·Kᵀ; 1/√D for BERT. Unused by linear attention.
    pub scale: f32,
    /// Dropout rate on the attention weights; 0 = none (evaluation). Linear attention has no
    /// weights to drop and ignores it.
    pub dropout: f32,
    /// Linear attention (Katharopoulos et al. 2020) instead of softmax.
    pub linear: bool,
    pub kernel: AttentionKernel,
}

impl AttentionOptions {
    /// Plain multi-head softmax attention, full kernel, no window: today's BERT.
    pub fn softmax(num_heads: usize, mask: MaskMode, scale: f32, dropout: f32) -> Self {
        AttentionOptions {
            num_heads,
            num_kv_heads: num_heads,
            mask,
            window: None,
            scale,
            dropout,
            linear: false,
            kernel: AttentionKernel::Full,
        }
    }

    /// Settings that make no sense are errors, before any work.
    pub fn validate(&self) -> Result<()> {
        let err = |m: String| Err(EngineError::Input(m));
        if self.num_heads == 0
            || self.num_kv_heads == 0
            || !self.num_heads.is_multiple_of(self.num_kv_heads)
        {
            return err(format!(
                "num_key_value_heads ({}) must divide num_attention_heads ({})",
                self.num_kv_heads, self.num_heads
            ));
        }
        if self.window == Some(0) {
            return err("the attention window must be at least 1 (a query sees itself)".into());
        }
        if self.kernel == (AttentionKernel::Tiled { block: 0 }) {
            return err("the tiled attention block must be at least 1".into());
        }
        if self.linear && self.kernel != AttentionKernel::Full {
            return err(
                "linear attention has no softmax to tile: use --attention full with it".into(),
            );
        }
        if self.linear && self.window.is_some() {
            return err("linear attention with a sliding window is not supported: its running sums cover every earlier key".into());
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return err(format!(
                "attention dropout must be in [0, 1), got {}",
                self.dropout
            ));
        }
        Ok(())
    }

    /// The K/V group query head h reads (transformers' `repeat_kv` order).
    pub fn kv_group(&self, h: usize) -> usize {
        h / (self.num_heads / self.num_kv_heads)
    }

    /// M[i][j] = 0 (not −∞) for one sequence with key padding mask `key_mask`.
    pub fn allows(&self, key_mask: &[u8], i: usize, j: usize) -> bool {
        self.mask.allows(key_mask, i, j) && self.window.is_none_or(|w| i.abs_diff(j) < w)
    }

    /// Keys [lo, hi) that queries [q0, q1) may see at all by mask and window (padding aside),
    /// so kernels can skip whole blocks outside the band.
    pub fn key_range(&self, q0: usize, q1: usize, tk: usize) -> (usize, usize) {
        let causal = self.mask == MaskMode::Causal;
        let lo = self.window.map_or(0, |w| q0.saturating_sub(w - 1));
        let hi = match (causal, self.window) {
            (true, _) => q1,
            (false, Some(w)) => q1 - 1 + w,
            (false, None) => tk,
        };
        (lo.min(tk), hi.min(tk))
    }
}

/// Shapes of one attention call, checked once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub b: usize,
    pub tq: usize,
    pub tk: usize,
    pub h: usize,
    pub dk: usize,
    pub dv: usize,
}

impl Dims {
    /// q (B, Tq, H·Dk), k (B, Tk, G·Dk), v (B, Tk, G·Dv), key_mask (B, Tk).
    pub(crate) fn of(
        q: &ArrayView3<f32>,
        k: &ArrayView3<f32>,
        v: &ArrayView3<f32>,
        key_mask: &ArrayView2<u8>,
        opts: &AttentionOptions,
    ) -> Dims {
        let ((b, tq, qk_width), tk) = (q.dim(), k.dim().1);
        let (h, g) = (opts.num_heads, opts.num_kv_heads);
        let dk = qk_width / h;
        assert_eq!(k.dim(), (b, tk, g * dk), "k shape");
        assert_eq!(
            (v.dim().0, v.dim().1, key_mask.dim()),
            (b, tk, (b, tk)),
            "v / key_mask shape"
        );
        Dims {
            b,
            tq,
            tk,
            h,
            dk,
            dv: v.dim().2 / g,
        }
    }
}

/// What backward needs besides q, k, v and the output, by kernel.
#[derive(Clone, Debug)]
pub enum AttentionCache {
    Full {
        /// softmax(Q·Kᵀ·scale + M) before dropout (B, H, Tq, Tk).
        weights: Array4<f32>,
        /// Dropout factors on the weights (B, H, Tq, Tk), None without dropout.
        dropout_mask: Option<Array4<f32>>,
    },
    Tiled(flash::TiledCache),
    Linear(linear_attention::LinearCache),
}

/// q (B, Tq, H·Dk), k (B, Tk, G·Dk), v (B, Tk, G·Dv), key_mask (B, Tk) 1 = real key.
/// Returns the merged context (B, Tq, H·Dv). With `trace`, pushes every head's
/// intermediates for batch row 0. `opts` must have passed `validate`.
pub fn forward(
    q: ArrayView3<f32>,
    k: ArrayView3<f32>,
    v: ArrayView3<f32>,
    key_mask: ArrayView2<u8>,
    opts: &AttentionOptions,
    rng: &mut Rng,
    trace: Option<&mut Vec<HeadTrace>>,
) -> (Array3<f32>, AttentionCache) {
    let dims = Dims::of(&q, &k, &v, &key_mask, opts);
    if opts.linear {
        let (context, cache) = linear_attention::forward(q, k, v, key_mask, opts, dims, trace);
        return (context, AttentionCache::Linear(cache));
    }
    match opts.kernel {
        AttentionKernel::Full => full_forward(q, k, v, key_mask, opts, dims, rng, trace),
        AttentionKernel::Tiled { block } => {
            let (context, cache) = flash::forward(q, k, v, key_mask, opts, dims, block, rng, trace);
            (context, AttentionCache::Tiled(cache))
        }
    }
}

/// From d_context (B, Tq, H·Dv), accumulates into d_q, d_k (B, Tk, G·Dk) and d_v: every query
/// head of a group adds its part to the group's dK and dV. `context` is forward's output.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    d_q: &mut ArrayViewMut3<f32>,
    d_k: &mut ArrayViewMut3<f32>,
    d_v: &mut ArrayViewMut3<f32>,
    d_context: ArrayView3<f32>,
    q: ArrayView3<f32>,
    k: ArrayView3<f32>,
    v: ArrayView3<f32>,
    context: ArrayView3<f32>,
    key_mask: ArrayView2<u8>,
    cache: &AttentionCache,
    opts: &AttentionOptions,
) {
    let dims = Dims::of(&q, &k, &v, &key_mask, opts);
    match cache {
        AttentionCache::Full {
            weights,
            dropout_mask,
        } => full_backward(
            d_q,
            d_k,
            d_v,
            d_context,
            q,
            k,
            v,
            weights,
            dropout_mask.as_ref(),
            opts,
            dims,
        ),
        AttentionCache::Tiled(c) => flash::backward(
            d_q, d_k, d_v, d_context, q, k, v, context, key_mask, c, opts, dims,
        ),
        AttentionCache::Linear(c) => linear_attention::backward(
            d_q, d_k, d_v, d_context, q, k, v, context, key_mask, c, opts, dims,
        ),
    }
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
pub(crate) fn fill_allowed(
    allowed: &mut Vec<bool>,
    opts: &AttentionOptions,
    key_mask: &[u8],
    tq: usize,
) {
    allowed.clear();
    allowed.extend(
        (0..tq).flat_map(|i| (0..key_mask.len()).map(move |j| opts.allows(key_mask, i, j))),
    );
}

/// The full kernel: per (b, h), W = softmax(Q·Kᵀ·scale + M) kept whole, context = W̃·V.
#[allow(clippy::too_many_arguments)]
fn full_forward(
    q: ArrayView3<f32>,
    k: ArrayView3<f32>,
    v: ArrayView3<f32>,
    key_mask: ArrayView2<u8>,
    opts: &AttentionOptions,
    Dims {
        b: b_size,
        tq,
        tk,
        h: h_count,
        dk,
        dv,
    }: Dims,
    rng: &mut Rng,
    mut trace: Option<&mut Vec<HeadTrace>>,
) -> (Array3<f32>, AttentionCache) {
    let mut weights = Array4::zeros((b_size, h_count, tq, tk));
    let dropout_mask = dropout::draw_mask(Ix4(b_size, h_count, tq, tk), opts.dropout, rng);
    let mut context = Array3::zeros((b_size, tq, h_count * dv));
    let mut dropped = Array2::zeros((tq, tk)); // scratch: weights ⊙ dropout mask
    let mut allowed = Vec::with_capacity(tq * tk);
    let mut key_row = Vec::with_capacity(tk);
    for b in 0..b_size {
        key_row.clear();
        key_row.extend(key_mask.row(b).iter().copied());
        fill_allowed(&mut allowed, opts, &key_row, tq);
        for h in 0..h_count {
            let g = opts.kv_group(h);
            let qh = q.slice(s![b, .., h * dk..(h + 1) * dk]);
            let kh = k.slice(s![b, .., g * dk..(g + 1) * dk]);
            let vh = v.slice(s![b, .., g * dv..(g + 1) * dv]);
            let mut w = weights.slice_mut(s![b, h, .., ..]);
            gemm(1.0, &qh, &kh.t(), 0.0, &mut w); // scores = Q·Kᵀ
            let scores = (trace.is_some() && b == 0).then(|| Matrix::from_view(w.view()));
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
            if let (Some(heads), Some(scores)) = (trace.as_deref_mut(), scores) {
                heads.push(softmax_head_trace(
                    qh,
                    kh,
                    vh,
                    g,
                    scores,
                    &allowed,
                    opts.scale,
                    w.view(),
                    ctx.view(),
                ));
            }
        }
    }
    (
        context,
        AttentionCache::Full {
            weights,
            dropout_mask,
        },
    )
}

/// One softmax head's trace: q, k, v, scores = QKᵀ, scaled, M, scaled + M, weights, context.
#[allow(clippy::too_many_arguments)]
pub(crate) fn softmax_head_trace(
    qh: ArrayView2<f32>,
    kh: ArrayView2<f32>,
    vh: ArrayView2<f32>,
    kv_group: usize,
    scores: Matrix,
    allowed: &[bool],
    scale: f32,
    w: ArrayView2<f32>,
    ctx: ArrayView2<f32>,
) -> HeadTrace {
    let (rows, cols) = (scores.rows, scores.cols);
    let scaled: Vec<f32> = scores.data.iter().map(|&s| s * scale).collect();
    let mask = mask_matrix(rows, cols, allowed);
    let masked = scaled
        .iter()
        .zip(&mask.data)
        .map(|(&s, &m)| s + m)
        .collect();
    HeadTrace {
        kv_group,
        q: Matrix::from_view(qh),
        k: Matrix::from_view(kh),
        v: Matrix::from_view(vh),
        scores,
        scaled: Matrix {
            rows,
            cols,
            data: scaled,
        },
        mask,
        masked: Matrix {
            rows,
            cols,
            data: masked,
        },
        weights: Matrix::from_view(w),
        context: Matrix::from_view(ctx),
        ..HeadTrace::default()
    }
}

/// M as a matrix: 0 where allowed, −∞ elsewhere.
pub(crate) fn mask_matrix(rows: usize, cols: usize, allowed: &[bool]) -> Matrix {
    Matrix {
        rows,
        cols,
        data: allowed
            .iter()
            .map(|&a| if a { 0.0 } else { f32::NEG_INFINITY })
            .collect(),
    }
}

/// Backward of the full kernel. Per head, with P the weights, P̃ = P ⊙ dropout mask and
/// G = dL/dP: dV += P̃ᵀ·dC,  G = (dC·Vᵀ) ⊙ mask,  dS = P ⊙ (G − rowsum(G ⊙ P)),
/// dQ += scale·dS·K,  dK += scale·dSᵀ·Q. Masked entries have P = 0, so they pass nothing back.
#[allow(clippy::too_many_arguments)]
fn full_backward(
    d_q: &mut ArrayViewMut3<f32>,
    d_k: &mut ArrayViewMut3<f32>,
    d_v: &mut ArrayViewMut3<f32>,
    d_context: ArrayView3<f32>,
    q: ArrayView3<f32>,
    k: ArrayView3<f32>,
    v: ArrayView3<f32>,
    weights: &Array4<f32>,
    dropout_mask: Option<&Array4<f32>>,
    opts: &AttentionOptions,
    Dims {
        b: b_size,
        tq,
        tk,
        h: h_count,
        dk,
        dv,
    }: Dims,
) {
    let mut dropped = Array2::zeros((tq, tk)); // P̃
    let mut grad = Array2::zeros((tq, tk)); // G, then dS
    for b in 0..b_size {
        for h in 0..h_count {
            let g = opts.kv_group(h);
            let p = weights.slice(s![b, h, .., ..]);
            let (qh, kh) = (
                q.slice(s![b, .., h * dk..(h + 1) * dk]),
                k.slice(s![b, .., g * dk..(g + 1) * dk]),
            );
            let vh = v.slice(s![b, .., g * dv..(g + 1) * dv]);
            let dc = d_context.slice(s![b, .., h * dv..(h + 1) * dv]);
            let mut d_vh = d_v.slice_mut(s![b, .., g * dv..(g + 1) * dv]);
            gemm(1.0, &dc, &vh.t(), 0.0, &mut grad);
            match dropout_mask {
                Some(mask) => {
                    let m = mask.slice(s![b, h, .., ..]);
                    Zip::from(&mut dropped)
                        .and(p)
                        .and(m)
                        .for_each(|d, &p, &m| *d = p * m);
                    grad *= &m;
                    gemm(1.0, &dropped.t(), &dc, 1.0, &mut d_vh);
                }
                None => gemm(1.0, &p.t(), &dc, 1.0, &mut d_vh),
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
                &mut d_k.slice_mut(s![b, .., g * dk..(g + 1) * dk]),
            );
        }
    }
}

#[cfg(test)]
mod tests;
