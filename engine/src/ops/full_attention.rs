//! The full softmax attention kernel: per (b, h), W = softmax(Q·Kᵀ·scale + A + M) kept whole
//! for backward, context = W̃·V (W̃ = W ⊙ dropout mask), A the ALiBi bias (0 without). Its
//! row softmax and head trace also serve the tiled kernel (`flash`), whose trace is the full
//! kernel's by construction.

use crate::ops::attention_options::{
    fill_allowed, mask_matrix, AttentionOptions, Dims, HeadBias, Qkv, QkvGrads,
};
use crate::ops::math::{self, exp};
use crate::ops::matmul::gemm;
use crate::ops::{dropout, reuse};
use crate::threads;
use crate::trace::{HeadTrace, Matrix};
use ndarray::{
    s, Array2, Array3, Array4, ArrayView1, ArrayView2, ArrayView3, ArrayViewMut1, ArrayViewMut2,
    ArrayViewMut3, Axis, Ix3, Ix4, Zip,
};

/// What the full kernel's backward needs besides q, k, v.
#[derive(Clone, Debug, Default)]
pub struct FullCache {
    /// softmax(Q·Kᵀ·scale + M) before dropout (B, H, Tq, Tk).
    pub weights: Array4<f32>,
    /// Dropout factors on the weights (B, H, Tq, Tk), None without dropout.
    pub dropout_mask: Option<Array4<f32>>,
}

/// The full kernel: per (b, h), W = softmax(Q·Kᵀ·scale + M) kept whole, context = W̃·V.
/// Batch rows are independent, so they run on the threads (`crate::threads`). With a trace,
/// row 0, the one it reads, runs first on this thread. The last call's context and cache are
/// written over (`ops::reuse`).
pub(crate) fn forward(
    Qkv { q, k, v, key_mask }: Qkv,
    opts: &AttentionOptions,
    dims: Dims,
    noise: &mut dropout::Noise,
    trace: Option<&mut Vec<HeadTrace>>,
    (spare_context, spare_cache): (Array2<f32>, FullCache),
) -> (Array3<f32>, FullCache) {
    let Dims {
        b: b_size,
        tq,
        tk,
        h: h_count,
        dv,
        ..
    } = dims;
    let FullCache {
        weights: spare_weights,
        dropout_mask: spare_mask,
    } = spare_cache;
    // Every entry of each is written below: a head's scores and context by gemm with β = 0.
    let mut weights = reuse(spare_weights, Ix4(b_size, h_count, tq, tk));
    let dropout_mask = dropout::draw_mask(
        Ix4(b_size, h_count, tq, tk),
        opts.dropout,
        noise,
        spare_mask,
    );
    let mut context = reuse(spare_context, Ix3(b_size, tq, h_count * dv));
    let mut rows: Vec<_> = weights
        .outer_iter_mut()
        .zip(context.outer_iter_mut())
        .enumerate()
        .map(|(b, (weights, context))| BatchRow {
            q: q.index_axis(Axis(0), b),
            k: k.index_axis(Axis(0), b),
            v: v.index_axis(Axis(0), b),
            key_mask: key_mask.row(b),
            dropout_mask: dropout_mask.as_ref().map(|m| m.index_axis(Axis(0), b)),
            weights,
            context,
        })
        .collect();
    if let (Some(trace), false) = (trace, rows.is_empty()) {
        attend(rows.remove(0), opts, dims, Some(trace));
    }
    threads::for_each(rows, |row| attend(row, opts, dims, None));
    (
        context,
        FullCache {
            weights,
            dropout_mask,
        },
    )
}

/// One batch row's inputs and the outputs it fills: q (Tq, H·Dk), k (Tk, G·Dk),
/// v (Tk, G·Dv), key_mask (Tk), dropout_mask (H, Tq, Tk), weights (H, Tq, Tk),
/// context (Tq, H·Dv).
struct BatchRow<'a> {
    q: ArrayView2<'a, f32>,
    k: ArrayView2<'a, f32>,
    v: ArrayView2<'a, f32>,
    key_mask: ArrayView1<'a, u8>,
    dropout_mask: Option<ArrayView3<'a, f32>>,
    weights: ArrayViewMut3<'a, f32>,
    context: ArrayViewMut2<'a, f32>,
}

/// Every head of one batch row: W = softmax(Q·Kᵀ·scale + M), context = (W ⊙ dropout)·V.
fn attend(
    BatchRow {
        q,
        k,
        v,
        key_mask,
        dropout_mask,
        mut weights,
        mut context,
    }: BatchRow,
    opts: &AttentionOptions,
    Dims {
        tq,
        tk,
        h: h_count,
        dk,
        dv,
        ..
    }: Dims,
    mut trace: Option<&mut Vec<HeadTrace>>,
) {
    let mut dropped = Array2::zeros((tq, tk)); // scratch: weights ⊙ dropout mask
    let mut allowed = Vec::with_capacity(tq * tk);
    fill_allowed(&mut allowed, opts, &key_mask.to_vec(), tq);
    for h in 0..h_count {
        let g = opts.kv_group(h);
        let qh = q.slice(s![.., h * dk..(h + 1) * dk]);
        let kh = k.slice(s![.., g * dk..(g + 1) * dk]);
        let vh = v.slice(s![.., g * dv..(g + 1) * dv]);
        let mut w = weights.index_axis_mut(Axis(0), h);
        gemm(1.0, &qh, &kh.t(), 0.0, &mut w); // scores = Q·Kᵀ
        let scores = trace.is_some().then(|| Matrix::from_view(w.view()));
        let w_rows = w
            .as_slice_mut()
            .expect("weights are contiguous (B, H, Tq, Tk)");
        let bias = opts.head_bias(h);
        for (i, (row, allowed)) in w_rows
            .chunks_exact_mut(tk)
            .zip(allowed.chunks_exact(tk))
            .enumerate()
        {
            masked_softmax_row(row, allowed, opts.scale, bias.map(|b| (b, i)));
        }
        let mut ctx = context.slice_mut(s![.., h * dv..(h + 1) * dv]);
        match &dropout_mask {
            Some(mask) => {
                Zip::from(&mut dropped)
                    .and(&w)
                    .and(mask.index_axis(Axis(0), h))
                    .for_each(|d, &w, &m| *d = w * m);
                gemm(1.0, &dropped, &vh, 0.0, &mut ctx);
            }
            None => gemm(1.0, &w, &vh, 0.0, &mut ctx),
        }
        if let (Some(heads), Some(scores)) = (trace.as_deref_mut(), scores) {
            let head = HeadQkv {
                q: qh,
                k: kh,
                v: vh,
                kv_group: g,
            };
            heads.push(softmax_head_trace(
                head,
                scores,
                &allowed,
                (opts.scale, bias),
                w.view(),
                ctx.view(),
            ));
        }
    }
}

/// Backward of the full kernel (the ALiBi bias is a constant: it changes P, not how dS
/// reaches Q and K). Per head, with P the weights, P̃ = P ⊙ dropout mask and
/// G = dL/dP: dV += P̃ᵀ·dC,  G = (dC·Vᵀ) ⊙ mask,  dS = P ⊙ (G − rowsum(G ⊙ P)),
/// dQ += scale·dS·K,  dK += scale·dSᵀ·Q. Masked entries have P = 0, so they pass nothing back.
/// Batch rows are independent (each writes only its own rows of dQ, dK, dV), so they run on
/// the threads.
pub(crate) fn backward(
    QkvGrads {
        mut d_q,
        mut d_k,
        mut d_v,
    }: QkvGrads,
    d_context: ArrayView3<f32>,
    Qkv { q, k, v, .. }: Qkv,
    FullCache {
        weights,
        dropout_mask,
    }: &FullCache,
    opts: &AttentionOptions,
    dims: Dims,
) {
    let rows: Vec<_> = d_q
        .outer_iter_mut()
        .zip(d_k.outer_iter_mut())
        .zip(d_v.outer_iter_mut())
        .enumerate()
        .map(|(b, ((d_q, d_k), d_v))| BatchRowGrads {
            d_q,
            d_k,
            d_v,
            d_context: d_context.index_axis(Axis(0), b),
            q: q.index_axis(Axis(0), b),
            k: k.index_axis(Axis(0), b),
            v: v.index_axis(Axis(0), b),
            weights: weights.index_axis(Axis(0), b),
            dropout_mask: dropout_mask.as_ref().map(|m| m.index_axis(Axis(0), b)),
        })
        .collect();
    threads::for_each(rows, |row| attend_backward(row, opts, dims));
}

/// One batch row of backward: d_q (Tq, H·Dk), d_k (Tk, G·Dk), d_v (Tk, G·Dv) to add into,
/// d_context (Tq, H·Dv), q, k, v as in [`BatchRow`], weights and dropout_mask (H, Tq, Tk).
struct BatchRowGrads<'a> {
    d_q: ArrayViewMut2<'a, f32>,
    d_k: ArrayViewMut2<'a, f32>,
    d_v: ArrayViewMut2<'a, f32>,
    d_context: ArrayView2<'a, f32>,
    q: ArrayView2<'a, f32>,
    k: ArrayView2<'a, f32>,
    v: ArrayView2<'a, f32>,
    weights: ArrayView3<'a, f32>,
    dropout_mask: Option<ArrayView3<'a, f32>>,
}

/// Backward of `attend`, one batch row.
fn attend_backward(
    BatchRowGrads {
        mut d_q,
        mut d_k,
        mut d_v,
        d_context,
        q,
        k,
        v,
        weights,
        dropout_mask,
    }: BatchRowGrads,
    opts: &AttentionOptions,
    Dims {
        tq,
        tk,
        h: h_count,
        dk,
        dv,
        ..
    }: Dims,
) {
    let mut dropped = Array2::zeros((tq, tk)); // P̃
    let mut grad = Array2::zeros((tq, tk)); // G, then dS
    for h in 0..h_count {
        let g = opts.kv_group(h);
        let p = weights.index_axis(Axis(0), h);
        let (qh, kh) = (
            q.slice(s![.., h * dk..(h + 1) * dk]),
            k.slice(s![.., g * dk..(g + 1) * dk]),
        );
        let vh = v.slice(s![.., g * dv..(g + 1) * dv]);
        let dc = d_context.slice(s![.., h * dv..(h + 1) * dv]);
        let mut d_vh = d_v.slice_mut(s![.., g * dv..(g + 1) * dv]);
        gemm(1.0, &dc, &vh.t(), 0.0, &mut grad);
        match dropout_mask {
            Some(mask) => {
                let m = mask.index_axis(Axis(0), h);
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
            .for_each(softmax_row_backward);
        gemm(
            opts.scale,
            &grad,
            &kh,
            1.0,
            &mut d_q.slice_mut(s![.., h * dk..(h + 1) * dk]),
        );
        gemm(
            opts.scale,
            &grad.t(),
            &qh,
            1.0,
            &mut d_k.slice_mut(s![.., g * dk..(g + 1) * dk]),
        );
    }
}

/// In place over query row i's scores: with x_j = s_j·scale + bias(i, j) (ALiBi's, when
/// given as (bias, i)), w_j = exp(x_j − max) / Σ over allowed j, 0 where not allowed. A row
/// with no allowed key becomes all zeros (not NaN from 0/0): such a query attends to nothing
/// and its context is 0.
pub fn masked_softmax_row(
    row: &mut [f32],
    allowed: &[bool],
    scale: f32,
    bias: Option<(HeadBias, usize)>,
) {
    for (j, (s, &a)) in row.iter_mut().zip(allowed).enumerate() {
        *s = match (a, bias) {
            (false, _) => f32::NEG_INFINITY,
            (true, None) => *s * scale,
            (true, Some((bias, i))) => *s * scale + bias.at(i, j),
        };
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

/// In place over one row: the gradient G of softmax's output w becomes the gradient of its
/// input, dS_j = w_j · (G_j − Σ_k G_k w_k).
pub fn softmax_row_backward(mut g: ArrayViewMut1<f32>, w: ArrayView1<f32>) {
    let dot = Zip::from(&g)
        .and(&w)
        .fold(0.0f32, |acc, &g, &w| acc + g * w);
    Zip::from(&mut g)
        .and(&w)
        .for_each(|g, &w| *g = w * (*g - dot));
}

/// One head's views: q (Tq, Dk), and k (Tk, Dk), v (Tk, Dv) of its K/V group `kv_group`.
pub(crate) struct HeadQkv<'a> {
    pub q: ArrayView2<'a, f32>,
    pub k: ArrayView2<'a, f32>,
    pub v: ArrayView2<'a, f32>,
    pub kv_group: usize,
}

/// One softmax head's trace: q, k, v, scores = QKᵀ, scaled, M, the ALiBi bias A (with ALiBi),
/// scaled + A + M, weights, context.
pub(crate) fn softmax_head_trace(
    HeadQkv {
        q: qh,
        k: kh,
        v: vh,
        kv_group,
    }: HeadQkv,
    scores: Matrix,
    allowed: &[bool],
    (scale, bias): (f32, Option<HeadBias>),
    w: ArrayView2<f32>,
    ctx: ArrayView2<f32>,
) -> HeadTrace {
    let (rows, cols) = (scores.rows, scores.cols);
    let scaled: Vec<f32> = scores.data.iter().map(|&s| s * scale).collect();
    let mask = mask_matrix(rows, cols, allowed);
    let alibi_bias = bias.map(|b| b.matrix(rows, cols));
    let masked = match &alibi_bias {
        Some(a) => scaled
            .iter()
            .zip(&a.data)
            .zip(&mask.data)
            .map(|((&s, &a), &m)| s + a + m)
            .collect(),
        None => scaled
            .iter()
            .zip(&mask.data)
            .map(|(&s, &m)| s + m)
            .collect(),
    };
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
        alibi_bias,
        alibi_slope: bias.map(|b| b.slope),
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
