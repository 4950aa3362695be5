//! What one attention call is, shared by every kernel: its options (heads and K/V groups,
//! mask, sliding window, scale, dropout, kernel), its shapes, and the mask M they define.

use crate::batch::MaskMode;
use crate::error::{EngineError, Result};
use crate::trace::Matrix;
use ndarray::{ArrayView2, ArrayView3};

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
        if self.linear || self.kernel != AttentionKernel::Full {
            return Ok(());
        }
        let h = self.num_heads;
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
