//! Scaled dot-product attention over already-projected heads, and the choice among its
//! kernels: context = dropout(softmax(Q·Kᵀ·scale + M))·V, per batch row and head.
//!
//! Kept apart from the Q/K/V projections and driven by plain options so that variants slot in
//! here: K and V may come from another sequence (Tk ≠ Tq, cross-attention), the mask (with an
//! optional sliding window) is a parameter, K/V may carry fewer groups than Q has heads (GQA),
//! and the kernel is a choice: `Full` keeps the (B, H, Tq, Tk) weights for backward
//! (`full_attention`), `Tiled` keeps only each row's log-sum-exp (`flash`), and linear attention
//! replaces the softmax altogether (`linear_attention`). `forward`/`backward` here dispatch to
//! them; the options and shapes they share are `attention_options`'.
//!
//! Shapes: B batch rows, Tq queries, Tk keys, H query heads, G K/V groups (H = G·(H/G)),
//! Dk = key width per head, Dv = value width per head.

use crate::ops::attention_options::Dims;
pub use crate::ops::attention_options::{AttentionKernel, AttentionOptions};
use crate::ops::{flash, full_attention, linear_attention};
use crate::rng::Rng;
use crate::trace::HeadTrace;
use ndarray::{Array2, Array3, ArrayView2, ArrayView3, ArrayViewMut3};

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

/// q (B, Tq, H·Dk), k (B, Tk, G·Dk), v (B, Tk, G·Dv), key_mask (B, Tk) 1 = real key.
/// Returns the merged context (B, Tq, H·Dv). With `trace`, pushes every head's
/// intermediates for batch row 0. `opts` must have passed `validate`.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    q: ArrayView3<f32>,
    k: ArrayView3<f32>,
    v: ArrayView3<f32>,
    key_mask: ArrayView2<u8>,
    opts: &AttentionOptions,
    rng: &mut Rng,
    trace: Option<&mut Vec<HeadTrace>>,
    spare: Spare,
) -> (Array3<f32>, AttentionCache) {
    let dims = Dims::of(&q, &k, &v, &key_mask, opts);
    if opts.linear {
        let (context, cache) = linear_attention::forward(q, k, v, key_mask, opts, dims, trace);
        return (context, AttentionCache::Linear(cache));
    }
    match opts.kernel {
        AttentionKernel::Full => {
            let spare_cache = match spare.cache {
                AttentionCache::Full(c) => c,
                _ => full_attention::FullCache::default(),
            };
            let (context, cache) = full_attention::forward(
                q,
                k,
                v,
                key_mask,
                opts,
                dims,
                rng,
                trace,
                (spare.context, spare_cache),
            );
            (context, AttentionCache::Full(cache))
        }
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
        AttentionCache::Full(c) => full_attention::backward(
            d_q,
            d_k,
            d_v,
            d_context,
            q,
            k,
            v,
            &c.weights,
            c.dropout_mask.as_ref(),
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

#[cfg(test)]
mod tests;
