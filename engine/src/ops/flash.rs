//! Tiled softmax attention, FlashAttention-2 style (Dao 2023): the same output and gradients
//! as the full kernel without ever holding a (Tq, Tk) matrix.
//!
//! Forward, per (b, h) and query block Qb (rows i), over the key blocks Kb, Vb the mask and
//! window can reach, with S = Qb·Kbᵀ·scale + A + M (A the ALiBi bias, computed per entry
//! from i − j, never stored):
//!   m' = max(m, rowmax S),  P = exp(S − m'),  l = l·e^{m − m'} + rowsum P,
//!   acc = acc·e^{m − m'} + (P ⊙ Z)·Vb,  m = m'
//! and at the end O = acc / l, L = m + ln l (the row's log-sum-exp). Only O and L are kept.
//!
//! Backward recomputes each block's P = exp(S − L) and, with D_i = rowsum(dO_i ∘ O_i)
//! (= Σ_j P_ij·dP_ij, the softmax Jacobian's row term):
//!   dVb += (P ⊙ Z)ᵀ·dOb,  dP = (dOb·Vbᵀ) ⊙ Z,  dS = P ⊙ (dP − D),
//!   dQb += scale·dS·Kb,  dKb += scale·dSᵀ·Qb.
//!
//! Attention dropout Z: a full (B, H, Tq, Tk) mask would defeat the point, so the tiled kernel
//! takes its call's draw (`dropout::Noise`) and derives each entry's keep/drop from a hash of
//! (seed, index of (b, h, i, j) in the whole batch) (`dropout::counter_factor`), as the full
//! kernel's mask does; backward recomputes the same factors. The same mask as the full kernel
//! would draw in the same call.

use crate::batch::MaskMode;
use crate::ops::attention_options::{
    fill_allowed, AttentionOptions, Dims, HeadBias, Qkv, QkvGrads,
};
use crate::ops::dropout;
use crate::ops::full_attention::{masked_softmax_row, softmax_head_trace, HeadQkv};
use crate::ops::math::{self, exp};
use crate::ops::matmul::gemm;
use crate::trace::{HeadTrace, Matrix, TileStep};
use ndarray::{s, Array2, Array3, ArrayView2, ArrayView3, ArrayViewMut1, ArrayViewMut2};

#[derive(Clone, Debug)]
pub struct TiledCache {
    /// L = log Σ_j exp(S_ij) per query row (B, H, Tq); +∞ for a row with no allowed key, so
    /// that exp(S − L) = 0 there.
    pub log_sum_exp: Array3<f32>,
    /// The call's dropout draw, None without attention dropout.
    pub dropout: Option<dropout::Draw>,
    pub block: usize,
}

/// Dropout factor of entry (b, h, i, j) of this slice (b its local row): 0 or 1/(1 − p), 1
/// without dropout. The same as entry (b, h, i, j) of `dropout::draw_mask`'s (B, H, Tq, Tk).
fn z(
    draw: Option<dropout::Draw>,
    p: f32,
    dims: &Dims,
    b: usize,
    h: usize,
    i: usize,
    j: usize,
) -> f32 {
    match draw {
        None => 1.0,
        Some(draw) => {
            let local = ((b * dims.h + h) * dims.tq + i) * dims.tk + j;
            draw.factor(dims.h * dims.tq * dims.tk, local, p)
        }
    }
}

/// Every (i, j) of the block [q0, q1) × [k0, k1) allowed by mask and window: no per-entry
/// check needed.
fn dense_block(
    opts: &AttentionOptions,
    key_row: &[u8],
    q0: usize,
    q1: usize,
    k0: usize,
    k1: usize,
) -> bool {
    let keys_real = opts.mask == MaskMode::None || key_row[k0..k1].iter().all(|&m| m != 0);
    let causal_ok = opts.mask != MaskMode::Causal || k1 - 1 <= q0;
    // The farthest pairs of the block are corners: (q0, k1 − 1) and (q1 − 1, k0).
    let window_ok = opts
        .attention
        .window()
        .is_none_or(|w| (k1 - 1).abs_diff(q0) < w && (q1 - 1).abs_diff(k0) < w);
    keys_real && causal_ok && window_ok
}

/// Block starts covering [lo, hi) on the grid of `block`.
fn blocks(lo: usize, hi: usize, block: usize) -> impl Iterator<Item = usize> {
    let first = lo / block * block;
    (first..hi).step_by(block)
}

pub(crate) fn forward(
    Qkv { q, k, v, key_mask }: Qkv,
    opts: &AttentionOptions,
    dims: Dims,
    block: usize,
    noise: &mut dropout::Noise,
    mut trace: Option<&mut Vec<HeadTrace>>,
) -> (Array3<f32>, TiledCache) {
    let Dims {
        b: b_size,
        tq,
        tk,
        h: h_count,
        dk,
        dv,
    } = dims;
    let draw = noise.next_call();
    let seed = (opts.dropout > 0.0).then_some(draw);
    let mut context = Array3::zeros((b_size, tq, h_count * dv));
    let mut log_sum_exp = Array3::zeros((b_size, h_count, tq));
    let mut p = Array2::zeros((block, block)); // S, then P ⊙ Z of one block
    let mut acc = Array2::zeros((block, dv)); // running Σ (P ⊙ Z)·V of the query block
    let (mut m, mut l) = (vec![0f32; block], vec![0f32; block]); // running max and sum
    for b in 0..b_size {
        let key_row: Vec<u8> = key_mask.row(b).to_vec();
        for h in 0..h_count {
            let g = opts.kv_group(h);
            let qh = q.slice(s![b, .., h * dk..(h + 1) * dk]);
            let kh = k.slice(s![b, .., g * dk..(g + 1) * dk]);
            let vh = v.slice(s![b, .., g * dv..(g + 1) * dv]);
            let bias = opts.head_bias(h);
            let mut tiles = (trace.is_some() && b == 0).then(Vec::new);
            for q0 in (0..tq).step_by(block) {
                let q1 = (q0 + block).min(tq);
                let br = q1 - q0;
                m[..br].fill(f32::NEG_INFINITY);
                l[..br].fill(0.0);
                let mut acc = acc.slice_mut(s![..br, ..]);
                acc.fill(0.0);
                let (lo, hi) = opts.key_range(q0, q1, tk);
                for k0 in blocks(lo, hi, block) {
                    let k1 = (k0 + block).min(tk);
                    let mut pb = p.slice_mut(s![..br, ..k1 - k0]);
                    gemm(
                        opts.scale,
                        &qh.slice(s![q0..q1, ..]),
                        &kh.slice(s![k0..k1, ..]).t(),
                        0.0,
                        &mut pb,
                    );
                    let dense = dense_block(opts, &key_row, q0, q1, k0, k1);
                    for (r, mut row) in pb.rows_mut().into_iter().enumerate() {
                        let i = q0 + r;
                        let row = row.as_slice_mut().expect("block rows are contiguous");
                        if let Some(bias) = bias {
                            for (c, s) in row.iter_mut().enumerate() {
                                *s += bias.at(i, k0 + c);
                            }
                        }
                        if !dense {
                            for (c, s) in row.iter_mut().enumerate() {
                                if !opts.allows(&key_row, i, k0 + c) {
                                    *s = f32::NEG_INFINITY;
                                }
                            }
                        }
                        let m_new = m[r].max(math::max(row));
                        if m_new == f32::NEG_INFINITY {
                            row.fill(0.0); // nothing allowed yet: m, l, acc stay as they are
                            continue;
                        }
                        let alpha = exp(m[r] - m_new); // 0 when m was −∞
                        for s in row.iter_mut() {
                            *s = exp(*s - m_new); // 0 for masked entries
                        }
                        l[r] = l[r] * alpha + math::sum(row);
                        if let Some(seed) = seed {
                            for (c, s) in row.iter_mut().enumerate() {
                                *s *= z(Some(seed), opts.dropout, &dims, b, h, i, k0 + c);
                            }
                        }
                        if alpha != 1.0 {
                            acc.row_mut(r).mapv_inplace(|a| a * alpha);
                        }
                        m[r] = m_new;
                    }
                    gemm(1.0, &pb, &vh.slice(s![k0..k1, ..]), 1.0, &mut acc);
                    if let Some(tiles) = tiles.as_mut() {
                        tiles.push(TileStep {
                            q_block: q0 / block,
                            k_block: k0 / block,
                            row_max: m[..br].to_vec(),
                            row_sum: l[..br].to_vec(),
                        });
                    }
                }
                finish_block(
                    (acc.view(), &m[..br], &l[..br]),
                    context.slice_mut(s![b, q0..q1, h * dv..(h + 1) * dv]),
                    log_sum_exp.slice_mut(s![b, h, q0..q1]),
                );
            }
            if let (Some(heads), Some(tiles)) = (trace.as_deref_mut(), tiles) {
                let context = context.slice(s![b, .., h * dv..(h + 1) * dv]);
                let head = head_trace((qh, kh, vh, g), opts, (&key_row, bias), context, tiles);
                heads.push(head);
            }
        }
    }
    (
        context,
        TiledCache {
            log_sum_exp,
            dropout: seed,
            block,
        },
    )
}

/// The end of a query block: O = acc / l and L = m + ln l for each of its Br rows; a row no
/// key reached (l = 0) gets O = 0 and L = +∞.
fn finish_block(
    (acc, m, l): (ArrayView2<f32>, &[f32], &[f32]), // (Br, Dv), (Br), (Br)
    mut out: ArrayViewMut2<f32>,                    // (Br, Dv) the head's context rows
    mut log_sum_exp: ArrayViewMut1<f32>,            // (Br)
) {
    for (r, (mut out, lse)) in out.rows_mut().into_iter().zip(&mut log_sum_exp).enumerate() {
        let inv = if l[r] > 0.0 { 1.0 / l[r] } else { 0.0 };
        out.assign(&acc.row(r));
        out *= inv;
        *lse = if l[r] > 0.0 {
            m[r] + l[r].ln()
        } else {
            f32::INFINITY
        };
    }
}

/// One head's trace, for display only: the full matrices, as the full kernel would show them,
/// and the tile schedule the kernel ran (`tiles`). q (Tq, Dk), k (Tk, Dk), v (Tk, Dv) and the
/// head's K/V group; `key_row` the sequence's key mask (Tk); `context` (Tq, Dv) its output.
fn head_trace(
    (q, k, v, kv_group): (ArrayView2<f32>, ArrayView2<f32>, ArrayView2<f32>, usize),
    opts: &AttentionOptions,
    (key_row, bias): (&[u8], Option<HeadBias>),
    context: ArrayView2<f32>,
    tiles: Vec<TileStep>,
) -> HeadTrace {
    let (tq, tk) = (q.nrows(), k.nrows());
    let mut allowed = Vec::new();
    fill_allowed(&mut allowed, opts, key_row, tq);
    let mut w = Array2::zeros((tq, tk));
    gemm(1.0, &q, &k.t(), 0.0, &mut w);
    let scores = Matrix::from_view(w.view());
    let w_rows = w.as_slice_mut().expect("contiguous");
    for (i, (row, allowed)) in w_rows
        .chunks_exact_mut(tk)
        .zip(allowed.chunks_exact(tk))
        .enumerate()
    {
        masked_softmax_row(row, allowed, opts.scale, bias.map(|b| (b, i)));
    }
    let head = HeadQkv { q, k, v, kv_group };
    let mut t = softmax_head_trace(
        head,
        scores,
        &allowed,
        (opts.scale, bias),
        w.view(),
        context,
    );
    t.tiles = Some(tiles);
    t
}

/// The weights one head's tiled attention stands for, from its trace alone: with each row's
/// final running max m_i and sum l_i, P_ij = exp(S_ij − m_i) / l_i, S = QKᵀ/√d_k (+ A) + M
/// (the `masked` matrix). The explorer shows that they equal the full kernel's softmax. None
/// without a tile schedule; a row no key reached stays 0, as in the full kernel.
pub fn weights_from_tiles(head: &HeadTrace) -> Option<Matrix> {
    let tiles = head.tiles.as_ref()?;
    let s = &head.masked;
    let block = tiles.iter().map(|t| t.row_max.len()).max()?;
    let (mut m, mut l) = (vec![f32::NEG_INFINITY; s.rows], vec![0f32; s.rows]);
    // Query blocks take their key blocks in order: a row's last step holds its final m and l.
    for step in tiles {
        let first = step.q_block * block;
        for (r, (&row_max, &row_sum)) in step.row_max.iter().zip(&step.row_sum).enumerate() {
            if let (Some(m), Some(l)) = (m.get_mut(first + r), l.get_mut(first + r)) {
                (*m, *l) = (row_max, row_sum);
            }
        }
    }
    let mut weights = Matrix {
        rows: s.rows,
        cols: s.cols,
        data: vec![0.0; s.rows * s.cols],
    };
    for (i, row) in weights.data.chunks_exact_mut(s.cols.max(1)).enumerate() {
        if m[i] == f32::NEG_INFINITY || l[i] <= 0.0 {
            continue;
        }
        for (w, &score) in row.iter_mut().zip(s.row(i)) {
            *w = exp(score - m[i]) / l[i]; // exp(−∞) = 0 at masked keys
        }
    }
    Some(weights)
}

pub(crate) fn backward(
    QkvGrads {
        mut d_q,
        mut d_k,
        mut d_v,
    }: QkvGrads,
    d_context: ArrayView3<f32>,
    Qkv { q, k, v, key_mask }: Qkv,
    context: ArrayView3<f32>,
    cache: &TiledCache,
    opts: &AttentionOptions,
    dims: Dims,
) {
    let Dims {
        b: b_size,
        tq,
        tk,
        h: h_count,
        dk,
        dv,
    } = dims;
    let block = cache.block;
    let mut p = Array2::zeros((block, block)); // P, then P ⊙ Z
    let mut dp = Array2::zeros((block, block)); // dP, then dS
    let mut d_row = vec![0f32; tq]; // D_i = rowsum(dO_i ∘ O_i)
    for b in 0..b_size {
        let key_row: Vec<u8> = key_mask.row(b).to_vec();
        for h in 0..h_count {
            let g = opts.kv_group(h);
            let (hq, hk, hv) = (
                h * dk..(h + 1) * dk,
                g * dk..(g + 1) * dk,
                g * dv..(g + 1) * dv,
            );
            let ho = h * dv..(h + 1) * dv;
            let bias = opts.head_bias(h);
            let dc = d_context.slice(s![b, .., ho.clone()]);
            for (i, d) in d_row.iter_mut().enumerate() {
                *d = dc.row(i).dot(&context.slice(s![b, i, ho.clone()]));
            }
            for q0 in (0..tq).step_by(block) {
                let q1 = (q0 + block).min(tq);
                let br = q1 - q0;
                let qb = q.slice(s![b, q0..q1, hq.clone()]);
                let dob = dc.slice(s![q0..q1, ..]);
                let (lo, hi) = opts.key_range(q0, q1, tk);
                for k0 in blocks(lo, hi, block) {
                    let k1 = (k0 + block).min(tk);
                    let kb = k.slice(s![b, k0..k1, hk.clone()]);
                    let vb = v.slice(s![b, k0..k1, hv.clone()]);
                    let mut pb = p.slice_mut(s![..br, ..k1 - k0]);
                    let mut dpb = dp.slice_mut(s![..br, ..k1 - k0]);
                    gemm(opts.scale, &qb, &kb.t(), 0.0, &mut pb);
                    gemm(1.0, &dob, &vb.t(), 0.0, &mut dpb);
                    let dense = dense_block(opts, &key_row, q0, q1, k0, k1);
                    for (r, (mut p_row, mut dp_row)) in
                        pb.rows_mut().into_iter().zip(dpb.rows_mut()).enumerate()
                    {
                        let i = q0 + r;
                        let (lse, d_i) = (cache.log_sum_exp[[b, h, i]], d_row[i]);
                        let p_row = p_row.as_slice_mut().expect("block rows are contiguous");
                        let dp_row = dp_row.as_slice_mut().expect("block rows are contiguous");
                        for (c, (p, dp)) in p_row.iter_mut().zip(dp_row.iter_mut()).enumerate() {
                            let j = k0 + c;
                            let prob = if dense || opts.allows(&key_row, i, j) {
                                exp(*p + bias.map_or(0.0, |b| b.at(i, j)) - lse)
                            } else {
                                0.0
                            };
                            let zf = z(cache.dropout, opts.dropout, &dims, b, h, i, j);
                            *p = prob * zf; // P ⊙ Z for dV
                            *dp = prob * (*dp * zf - d_i); // dS
                        }
                    }
                    gemm(
                        1.0,
                        &pb.t(),
                        &dob,
                        1.0,
                        &mut d_v.slice_mut(s![b, k0..k1, hv.clone()]),
                    );
                    gemm(
                        opts.scale,
                        &dpb,
                        &kb,
                        1.0,
                        &mut d_q.slice_mut(s![b, q0..q1, hq.clone()]),
                    );
                    gemm(
                        opts.scale,
                        &dpb.t(),
                        &qb,
                        1.0,
                        &mut d_k.slice_mut(s![b, k0..k1, hk.clone()]),
                    );
                }
            }
        }
    }
}
