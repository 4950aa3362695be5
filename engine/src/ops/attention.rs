//! Scaled dot-product attention over already-projected heads, and the choice among its
//! kernels: context = dropout(softmax(Q·Kᵀ·scale + A + M))·V, per batch row and head, A the
//! ALiBi bias of ALiBi models (`AttentionOptions::head_bias`), 0 otherwise.
//!
//! Kept apart from the Q/K/V projections and driven by plain options so that variants slot in
//! here: K and V may come from another sequence (Tk ≠ Tq, cross-attention), the mask (with an
//! optional sliding window) is a parameter, K/V may carry fewer groups than Q has heads (GQA),
//! and what runs is an [`Attention`]: softmax with the `Full` kernel keeps the (B, H, Tq, Tk)
//! weights for backward (`full_attention`), with `Tiled` only each row's log-sum-exp (`flash`),
//! and linear attention replaces the softmax altogether (`linear_attention`). `forward` and
//! `backward` here dispatch to them; the options, inputs and shapes they share are
//! `attention_options`'.
//!
//! Shapes: B batch rows, Tq queries, Tk keys, H query heads, G K/V groups (H = G·(H/G)),
//! Dk = key width per head, Dv = value width per head.

use crate::ops::attention_options::Dims;
pub use crate::ops::attention_options::{
    alibi_slope, Alibi, Attention, AttentionKernel, AttentionOptions, HeadBias, Heads, Qkv,
    QkvGrads, Softmax,
};
use crate::ops::{flash, full_attention, linear_attention};
use crate::trace::HeadTrace;
use ndarray::{Array2, Array3, ArrayView3};

/// What backward needs besides q, k, v and the output, by kernel.
#[derive(Clone, Debug)]
pub enum AttentionCache {
    Full(full_attention::FullCache),
    Tiled(flash::TiledCache),
    Linear(linear_attention::LinearCache),
}

/// An empty full-kernel cache: what a first call has to reuse.
impl Default for AttentionCache {
    fn default() -> Self {
        AttentionCache::Full(full_attention::FullCache::default())
    }
}

/// What an earlier call leaves for the next to write into (`ops::reuse`): its context, as
/// the layer keeps it (B·Tq, H·Dv), and its cache. The full kernel reuses both; the others
/// allocate theirs.
#[derive(Default)]
pub struct Spare {
    pub context: Array2<f32>,
    pub cache: AttentionCache,
}

/// Returns the merged context (B, Tq, H·Dv). With `trace`, pushes every head's
/// intermediates for batch row 0. `opts` must have passed `validate`.
pub fn forward(
    input: Qkv,
    opts: &AttentionOptions,
    noise: &mut crate::ops::dropout::Noise,
    trace: Option<&mut Vec<HeadTrace>>,
    spare: Spare,
) -> (Array3<f32>, AttentionCache) {
    let dims = Dims::of(&input, opts);
    match opts.attention {
        Attention::Linear => {
            let (context, cache) = linear_attention::forward(input, opts, dims, trace);
            (context, AttentionCache::Linear(cache))
        }
        Attention::Softmax(Softmax {
            kernel: AttentionKernel::Full,
            ..
        }) => {
            let spare_cache = match spare.cache {
                AttentionCache::Full(c) => c,
                _ => full_attention::FullCache::default(),
            };
            let spare = (spare.context, spare_cache);
            let (context, cache) = full_attention::forward(input, opts, dims, noise, trace, spare);
            (context, AttentionCache::Full(cache))
        }
        Attention::Softmax(Softmax {
            kernel: AttentionKernel::Tiled { block },
            ..
        }) => {
            let (context, cache) = flash::forward(input, opts, dims, block, noise, trace);
            (context, AttentionCache::Tiled(cache))
        }
    }
}

/// From d_context (B, Tq, H·Dv), accumulates into `grads`: every query head of a group adds
/// its part to the group's dK and dV. `context` is forward's output, `cache` what it kept.
pub fn backward(
    grads: QkvGrads,
    d_context: ArrayView3<f32>,
    input: Qkv,
    context: ArrayView3<f32>,
    cache: &AttentionCache,
    opts: &AttentionOptions,
) {
    let dims = Dims::of(&input, opts);
    match cache {
        AttentionCache::Full(c) => full_attention::backward(grads, d_context, input, c, opts, dims),
        AttentionCache::Tiled(c) => {
            flash::backward(grads, d_context, input, context, c, opts, dims)
        }
        AttentionCache::Linear(c) => {
            linear_attention::backward(grads, d_context, input, context, c, opts, dims)
        }
    }
}

#[cfg(test)]
mod tests;
