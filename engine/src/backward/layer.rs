//! One layer's backward: `forward/layer.rs`' blocks in reverse, feed-forward, cross-attention
//! (a decoder's), attention, each from dL/d(its output) to dL/d(its input).

use super::{linear_backward, ln_backward, take, BackwardScratch};
use crate::batch::Batch;
use crate::forward::{
    as_sequences, as_sequences_mut, AttentionBlockCache, EncoderStates, FfnCache, LayerCache,
};
use crate::model::{BertAttention, BertLayer};
use crate::ops::attention::{self, AttentionOptions, Qkv, QkvGrads};
use crate::ops::linear::Write;
use crate::ops::{dropout, gelu, rope};
use ndarray::Array2;

/// From dL/d(layer output) (N, C) to dL/d(layer input) (N, C); with cross-attention, also
/// accumulates dL/d(encoder output) into the `cross` buffer. The temporaries are `scratch`'s,
/// and `d_out`'s buffer goes back to it.
/// `layer` and `g`: the layer's weights and the gradients added to; `attention`: the
/// self-attention's options and whether q and k were rotated.
pub(super) fn layer_backward(
    (layer, g): (&BertLayer, &mut BertLayer),
    cache: &LayerCache,
    mut d_out: Array2<f32>,
    batch: &Batch,
    attention: (&AttentionOptions, bool),
    cross: Option<((&EncoderStates, &AttentionOptions), &mut Array2<f32>)>,
    scratch: &mut BackwardScratch,
) -> Array2<f32> {
    let d_ffn_input = ffn_backward(
        (layer, &mut *g),
        &cache.ffn,
        cache.ffn_input(),
        &mut d_out,
        scratch,
    );
    let d_attention_out = match (cross, &cache.cross, &layer.crossattention) {
        (Some(cross), Some(c), Some(weights)) => {
            let g_cross = g.crossattention.as_mut().expect("same structure");
            cross_backward(
                (weights, g_cross),
                c,
                d_ffn_input,
                &cache.attention.out,
                cross,
                batch.input_ids.dim(),
            )
        }
        _ => d_ffn_input,
    };
    let d_x = attention_block_backward(
        (&layer.attention, &mut g.attention),
        &cache.attention,
        (&cache.input, d_attention_out),
        batch,
        attention,
        scratch,
    );
    // The buffer this layer received goes back: the next layer down takes it.
    scratch.rows = d_out;
    d_x
}

/// The feed-forward block's backward: from dL/d(out), in `d_out`, to dL/df (N, C), f the
/// block's input, out = LN(dropout(GELU(f·W_Iᵀ + b_I)·W_2ᵀ + b_2) + f). `d_out` is worked in
/// place (it ends as dL/d(the dropout's input)).
fn ffn_backward(
    (layer, g): (&BertLayer, &mut BertLayer),
    cache: &FfnCache,
    f: &Array2<f32>, // (N, C)
    d_out: &mut Array2<f32>,
    scratch: &mut BackwardScratch,
) -> Array2<f32> {
    let d_sum = d_out; // dL/d(block output), then (in place) of the LN's input
    ln_backward(
        d_sum,
        &mut g.output.layer_norm,
        cache.sum.view(),
        &layer.output.layer_norm,
        &cache.ln,
    );
    let mut d_f = take(&mut scratch.ffn_input, d_sum.raw_dim()); // (N, C)
    d_f.assign(d_sum); // the residual branch
    dropout::backward(&mut d_sum.view_mut(), cache.dropout.as_ref());
    let mut d_intermediate = take(&mut scratch.intermediate, cache.intermediate.raw_dim()); // (N, I)
    linear_backward(
        Some((&mut d_intermediate, Write::Over)),
        &mut g.output.dense,
        d_sum.view(),
        cache.intermediate.view(),
        &layer.output.dense,
    );
    let mut d_pre = d_intermediate; // (N, I) dL/d(GELU output), then (in place) of its input
    gelu::backward(&mut d_pre.view_mut(), cache.intermediate_pre.view());
    linear_backward(
        Some((&mut d_f, Write::Add)),
        &mut g.intermediate.dense,
        d_pre.view(),
        f.view(),
        &layer.intermediate.dense,
    );
    scratch.intermediate = d_pre;
    d_f
}

/// The cross-attention's backward: from dL/df (N, C), f = LN(dropout(ctx·W_Oᵀ + b_O) + a),
/// to dL/da (N, C), a = the self-attention's output; dL/d(encoder output) accumulates the
/// keys' and values' parts.
/// `weights` and `g`: the cross-attention's weights and the gradients added to.
fn cross_backward(
    (weights, g): (&BertAttention, &mut BertAttention),
    c: &AttentionBlockCache,
    d_out: Array2<f32>,
    a: &Array2<f32>,
    ((encoder, opts), d_encoder): ((&EncoderStates, &AttentionOptions), &mut Array2<f32>),
    (b_size, t): (usize, usize),
) -> Array2<f32> {
    let ts = encoder.mask.ncols();
    let mut d_sum = d_out; // then (in place) dL/d(the LN's input)
    ln_backward(
        &mut d_sum,
        &mut g.output.layer_norm,
        c.sum.view(),
        &weights.output.layer_norm,
        &c.ln,
    );
    let mut d_a = d_sum.clone(); // the residual branch
    dropout::backward(&mut d_sum.view_mut(), c.dropout.as_ref());
    let mut d_context = Array2::zeros(c.context.raw_dim());
    linear_backward(
        Some((&mut d_context, Write::Add)),
        &mut g.output.dense,
        d_sum.view(),
        c.context.view(),
        &weights.output.dense,
    );
    let (mut d_q, mut d_k, mut d_v) = (
        Array2::zeros(c.q.raw_dim()), // (N, C)
        Array2::zeros(c.k.raw_dim()), // (B·Ts, C)
        Array2::zeros(c.v.raw_dim()), // (B·Ts, C)
    );
    let grads = QkvGrads {
        d_q: as_sequences_mut(&mut d_q, b_size, t),
        d_k: as_sequences_mut(&mut d_k, b_size, ts),
        d_v: as_sequences_mut(&mut d_v, b_size, ts),
    };
    let input = Qkv {
        q: as_sequences(&c.q, b_size, t),
        k: as_sequences(&c.k, b_size, ts),
        v: as_sequences(&c.v, b_size, ts),
        key_mask: encoder.mask,
    };
    let d_context = as_sequences(&d_context, b_size, t);
    let context = as_sequences(&c.context, b_size, t);
    attention::backward(grads, d_context, input, context, &c.kernel, opts);
    let (sa, g_sa) = (&weights.self_attention, &mut g.self_attention);
    linear_backward(
        Some((&mut d_a, Write::Add)),
        &mut g_sa.query,
        d_q.view(),
        a.view(),
        &sa.query,
    );
    let e = encoder.hidden.view();
    linear_backward(
        Some((d_encoder, Write::Add)),
        &mut g_sa.key,
        d_k.view(),
        e,
        &sa.key,
    );
    linear_backward(
        Some((d_encoder, Write::Add)),
        &mut g_sa.value,
        d_v.view(),
        e,
        &sa.value,
    );
    d_a
}

/// The attention block's backward: from dL/da (N, C) to dL/dx (N, C), x the layer's input,
/// a = LN(dropout(context·W_Oᵀ + b_O) + x), context = attention(q, k, v),
/// q = rope(x·W_Qᵀ + b_Q), k = rope(x·W_Kᵀ + b_K) (rope only if rotary), v = x·W_Vᵀ + b_V.
/// `d_out`'s buffer goes back to `scratch`.
fn attention_block_backward(
    (weights, g): (&BertAttention, &mut BertAttention),
    cache: &AttentionBlockCache,
    (x, d_out): (&Array2<f32>, Array2<f32>), // (N, C) each
    batch: &Batch,
    (attention_opts, rotary): (&AttentionOptions, bool),
    scratch: &mut BackwardScratch,
) -> Array2<f32> {
    let (b_size, t) = batch.input_ids.dim();
    let (n, c) = d_out.dim();
    let mut d_sum = d_out; // then (in place) dL/d(the LN's input)
    ln_backward(
        &mut d_sum,
        &mut g.output.layer_norm,
        cache.sum.view(),
        &weights.output.layer_norm,
        &cache.ln,
    );
    let mut d_x = take(&mut scratch.rows, (n, c));
    d_x.assign(&d_sum); // the residual branch
    dropout::backward(&mut d_sum.view_mut(), cache.dropout.as_ref());
    let mut d_context = take(&mut scratch.context, cache.context.raw_dim()); // (N, H·Dv)
    linear_backward(
        Some((&mut d_context, Write::Over)),
        &mut g.output.dense,
        d_sum.view(),
        cache.context.view(),
        &weights.output.dense,
    );
    scratch.ffn_input = d_sum; // the next layer down takes it

    // Each head adds its part to its group's slice of dK and dV: they start at zero.
    let (mut d_q, mut d_k, mut d_v) = (
        take(&mut scratch.q, cache.q.raw_dim()), // (N, H·D)
        take(&mut scratch.k, cache.k.raw_dim()), // (N, G·D)
        take(&mut scratch.v, cache.v.raw_dim()), // (N, G·D)
    );
    for d in [&mut d_q, &mut d_k, &mut d_v] {
        d.fill(0.0);
    }
    {
        let as3 = |a| as_sequences(a, b_size, t);
        let as3_mut = |a| as_sequences_mut(a, b_size, t);
        let grads = QkvGrads {
            d_q: as3_mut(&mut d_q),
            d_k: as3_mut(&mut d_k),
            d_v: as3_mut(&mut d_v),
        };
        let input = Qkv {
            q: as3(&cache.q),
            k: as3(&cache.k),
            v: as3(&cache.v),
            key_mask: batch.attention_mask.view(),
        };
        let (d_context, context) = (as3(&d_context), as3(&cache.context));
        attention::backward(
            grads,
            d_context,
            input,
            context,
            &cache.kernel,
            attention_opts,
        );
    }
    scratch.context = d_context;
    if rotary {
        let head_dim = c / attention_opts.heads.query();
        (d_q, d_k) = (
            unrotate(d_q, (b_size, t), head_dim),
            unrotate(d_k, (b_size, t), head_dim),
        );
    }
    let (sa, g_sa) = (&weights.self_attention, &mut g.self_attention);
    linear_backward(
        Some((&mut d_x, Write::Add)),
        &mut g_sa.query,
        d_q.view(),
        x.view(),
        &sa.query,
    );
    linear_backward(
        Some((&mut d_x, Write::Add)),
        &mut g_sa.key,
        d_k.view(),
        x.view(),
        &sa.key,
    );
    linear_backward(
        Some((&mut d_x, Write::Add)),
        &mut g_sa.value,
        d_v.view(),
        x.view(),
        &sa.value,
    );
    (scratch.q, scratch.k, scratch.v) = (d_q, d_k, d_v);
    d_x
}

/// Rotary positions' backward: from dL/d(q or k rotated) (N, ·) to dL/d(before rotation), per
/// head of `head_dim`.
fn unrotate(d: Array2<f32>, (b_size, t): (usize, usize), head_dim: usize) -> Array2<f32> {
    let mut d_pre = Array2::zeros(d.raw_dim());
    rope::backward(
        &mut as_sequences_mut(&mut d_pre, b_size, t),
        as_sequences(&d, b_size, t),
        head_dim,
    );
    d_pre
}
