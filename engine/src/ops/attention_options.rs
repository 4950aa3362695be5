//! What one attention call is, shared by every kernel: what it computes (`Attention`: softmax
//! with its kernel and band, or linear), its options (heads and K/V groups, mask, scale,
//! dropout, ALiBi), its inputs and gradients as named views, its shapes, and the mask M and
//! bias they define.

use crate::batch::MaskMode;
use crate::error::{EngineError, Result};
use crate::trace::Matrix;
use ndarray::{ArrayView2, ArrayView3, ArrayViewMut3};
use serde::{Deserialize, Serialize};

/// How softmax attention is computed; both give the same output and gradients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttentionKernel {
    /// The whole (Tq, Tk) weight matrix per head, kept for backward.
    #[default]
    Full,
    /// FlashAttention-2: query blocks × key blocks of `block` rows, online softmax; keeps only
    /// the output and each row's log-sum-exp.
    Tiled { block: usize },
}

/// How softmax attention runs: its kernel, and the band of keys each query sees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Softmax {
    pub kernel: AttentionKernel,
    /// Sliding window W: on top of the mask, query i sees key j only if |i − j| < W
    /// (with the causal mask: 0 ≤ i − j < W, W keys including itself). None = every key.
    pub window: Option<usize>,
}

/// What an attention call computes. Every place that runs attention matches on this, so a new
/// kind is a compile error wherever it is not yet handled, and no value can say "linear and
/// tiled" or "linear in a window".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attention {
    /// softmax(Q·Kᵀ·scale + M)·V (BERT).
    Softmax(Softmax),
    /// φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1), φ = elu + 1 (Katharopoulos et al. 2020): no weights to
    /// keep, tile, band or drop.
    Linear,
}

impl Default for Attention {
    fn default() -> Self {
        Attention::Softmax(Softmax::default())
    }
}

impl Attention {
    /// The sliding window, if any: only softmax attention has one.
    pub fn window(self) -> Option<usize> {
        match self {
            Attention::Softmax(s) => s.window,
            Attention::Linear => None,
        }
    }
}

/// One attention call's inputs: q (B, Tq, H·Dk), k (B, Tk, G·Dk), v (B, Tk, G·Dv), and
/// key_mask (B, Tk), 1 = a real key.
#[derive(Clone, Copy, Debug)]
pub struct Qkv<'a> {
    pub q: ArrayView3<'a, f32>,
    pub k: ArrayView3<'a, f32>,
    pub v: ArrayView3<'a, f32>,
    pub key_mask: ArrayView2<'a, u8>,
}

/// The gradients backward adds into, shaped as [`Qkv`]'s q, k and v: a query head's dQ is
/// its own, while every head of a K/V group adds into the group's dK and dV.
#[derive(Debug)]
pub struct QkvGrads<'a> {
    pub d_q: ArrayViewMut3<'a, f32>,
    pub d_k: ArrayViewMut3<'a, f32>,
    pub d_v: ArrayViewMut3<'a, f32>,
}

/// H query heads and G K/V groups (grouped-query attention): q holds H heads side by side
/// along its feature axis, k and v hold G groups, and query head h reads group h ÷ (H/G).
/// G = H is plain multi-head, G = 1 multi-query. Made only by [`Heads::new`], so G divides H
/// and neither is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heads {
    query: usize,
    kv_groups: usize,
}

impl Heads {
    pub fn new(query: usize, kv_groups: usize) -> Result<Heads> {
        if query == 0 || kv_groups == 0 || !query.is_multiple_of(kv_groups) {
            return Err(EngineError::Input(format!(
                "num_key_value_heads ({kv_groups}) must divide num_attention_heads ({query})"
            )));
        }
        Ok(Heads { query, kv_groups })
    }

    /// H.
    pub fn query(self) -> usize {
        self.query
    }

    /// G.
    pub fn kv_groups(self) -> usize {
        self.kv_groups
    }

    /// The same H heads, each with K/V of its own (G = H).
    pub fn multi_head(self) -> Heads {
        Heads {
            kv_groups: self.query,
            ..self
        }
    }

    /// The K/V group query head h reads (transformers' `repeat_kv` order).
    pub fn kv_group(self, h: usize) -> usize {
        h / (self.query / self.kv_groups)
    }
}

/// ALiBi's slope m_h for query head h (0-based) of H, as transformers' BLOOM
/// (`_get_alibi_slopes`, which `build_alibi_tensor` reads): with P the largest power of two
/// ≤ H, the first P heads take 2^(−8(h+1)/P), a geometric sequence; the other H − P heads take
/// every other slope of the sequence for 2P heads, 2^(−4(2r+1)/P) for r = 0, 1, ….
pub fn alibi_slope(h: usize, heads: usize) -> f32 {
    let p = 1usize << heads.ilog2();
    let exponent = if h < p {
        -8.0 * (h + 1) as f64 / p as f64
    } else {
        -4.0 * (2 * (h - p) + 1) as f64 / p as f64
    };
    2f64.powf(exponent) as f32
}

/// ALiBi (Press et al. 2022) in one call: each head h adds −m_h·|i − j| to its scaled scores
/// before the mask, m_h = [`alibi_slope`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Alibi {
    /// The position of query row 0 among the keys: 0 when queries and keys are one sequence;
    /// the cached length when one new token's query attends over a KV cache (`generate`), so
    /// its distances are those of its true position.
    pub query_offset: usize,
}

/// One head's ALiBi bias: −slope·|i + query_offset − j| for query row i and key j.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeadBias {
    pub slope: f32,
    pub query_offset: usize,
}

impl HeadBias {
    pub fn at(self, i: usize, j: usize) -> f32 {
        -self.slope * (i + self.query_offset).abs_diff(j) as f32
    }

    /// The bias of every (i, j) of a Tq × Tk head, for the trace.
    pub fn matrix(self, rows: usize, cols: usize) -> Matrix {
        Matrix {
            rows,
            cols,
            data: (0..rows)
                .flat_map(|i| (0..cols).map(move |j| self.at(i, j)))
                .collect(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionOptions {
    pub heads: Heads,
    /// Which additive mask M (0 or −∞) goes into the softmax; for linear attention, which
    /// keys each query's running sums hold.
    pub mask: MaskMode,
    /// Multiplies Q·Kᵀ; 1/√D for BERT. Unused by linear attention.
    pub scale: f32,
    /// Dropout rate on the attention weights; 0 = none (evaluation). Linear attention has no
    /// weights to drop and ignores it.
    pub dropout: f32,
    pub attention: Attention,
    /// ALiBi positions: a bias on the scaled scores, before M (softmax attention only).
    pub alibi: Option<Alibi>,
}

/// The most bytes of attention weights one forward pass may hold (4 GiB). The full kernel keeps
/// its (B, H, Tq, Tk) weights in every layer for backward (and the trace copies them), so a
/// size past this is refused before anything is allocated: a failed allocation aborts the
/// process, or traps the browser's worker, with no message.
pub const MAX_WEIGHT_BYTES: u64 = 4 << 30;

impl AttentionOptions {
    /// Refuses full attention whose weights over `layers` layers of a batch of `b` rows would
    /// pass [`MAX_WEIGHT_BYTES`]: L·B·H·Tq·Tk floats. `what` names what set the sizes, to
    /// begin the message ("the input", or a command's flags). Tiled and linear attention never
    /// hold Tq×Tk and pass.
    pub fn check_weight_bytes(
        &self,
        (layers, b, tq, tk): (usize, usize, usize, usize),
        what: &str,
    ) -> Result<()> {
        let full = matches!(
            self.attention,
            Attention::Softmax(Softmax {
                kernel: AttentionKernel::Full,
                ..
            })
        );
        if !full {
            return Ok(());
        }
        let h = self.heads.query;
        let bytes = [layers, b, h, tq, tk, 4]
            .iter()
            .fold(1u64, |n, &x| n.saturating_mul(x as u64));
        if bytes <= MAX_WEIGHT_BYTES {
            return Ok(());
        }
        let sides = if tq == tk {
            format!("{tq}²")
        } else {
            format!("{tq} × {tk}")
        };
        Err(EngineError::Input(format!(
            "{what} would need {:.1} GB for full attention's weights ({layers} layers × {b} × {h} heads × {sides} floats); the limit is {} GB (tiled attention holds no T×T)",
            bytes as f64 / 1e9,
            MAX_WEIGHT_BYTES >> 30
        )))
    }

    /// Plain multi-head softmax attention, full kernel, no window: today's BERT.
    pub fn softmax(heads: Heads, mask: MaskMode, scale: f32, dropout: f32) -> Self {
        AttentionOptions {
            heads,
            mask,
            scale,
            dropout,
            attention: Attention::default(),
            alibi: None,
        }
    }

    /// Settings that make no sense are errors, before any work.
    pub fn validate(&self) -> Result<()> {
        let err = |m: String| Err(EngineError::Input(m));
        if let Attention::Softmax(Softmax { kernel, window }) = self.attention {
            if window == Some(0) {
                return err("the attention window must be at least 1 (a query sees itself)".into());
            }
            if kernel == (AttentionKernel::Tiled { block: 0 }) {
                return err("the tiled attention block must be at least 1".into());
            }
        }
        if self.alibi.is_some() && self.attention == Attention::Linear {
            return err(
                "ALiBi adds its bias to the softmax scores, and linear attention has no scores"
                    .into(),
            );
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return err(format!(
                "attention dropout must be in [0, 1), got {}",
                self.dropout
            ));
        }
        Ok(())
    }

    /// The K/V group query head h reads.
    pub fn kv_group(&self, h: usize) -> usize {
        self.heads.kv_group(h)
    }

    /// M[i][j] = 0 (not −∞) for one sequence with key padding mask `key_mask`.
    pub fn allows(&self, key_mask: &[u8], i: usize, j: usize) -> bool {
        self.mask.allows(key_mask, i, j)
            && self.attention.window().is_none_or(|w| i.abs_diff(j) < w)
    }

    /// Head h's ALiBi bias, with ALiBi positions: what every kernel adds to its scaled scores
    /// before M.
    pub fn head_bias(&self, h: usize) -> Option<HeadBias> {
        self.alibi.map(|Alibi { query_offset }| HeadBias {
            slope: alibi_slope(h, self.heads.query),
            query_offset,
        })
    }

    /// Keys [lo, hi) that queries [q0, q1) may see at all by mask and window (padding aside),
    /// so kernels can skip whole blocks outside the band.
    pub fn key_range(&self, q0: usize, q1: usize, tk: usize) -> (usize, usize) {
        let causal = self.mask == MaskMode::Causal;
        let window = self.attention.window();
        let lo = window.map_or(0, |w| q0.saturating_sub(w - 1));
        let hi = match (causal, window) {
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
    pub(crate) fn of(
        Qkv {
            q, k, v, key_mask, ..
        }: &Qkv,
        opts: &AttentionOptions,
    ) -> Dims {
        let ((b, tq, qk_width), tk) = (q.dim(), k.dim().1);
        let (h, g) = (opts.heads.query, opts.heads.kv_groups);
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
