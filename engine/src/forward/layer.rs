//! One encoder layer (`BertLayer`), post-LN, in blocks, each with the cache its backward
//! (`backward/layer.rs`, the blocks in reverse) reads:
//!
//! attention:       q, k = x·W_Qᵀ + b_Q, x·W_Kᵀ + b_K   (rotated per head by RoPE in rotary models)
//!                  a = LN(dropout(attention(q, k, x·W_Vᵀ + b_V)·W_Oᵀ + b_O) + x)
//! cross-attention: f = LN(dropout(attention(a·W_Qᵀ + b_Q, e·W_Kᵀ + b_K, e·W_Vᵀ + b_V)·W_Oᵀ + b_O) + a)
//!                  (a decoder's, e the encoder's output; without it f = a)
//! feed-forward:    out = LN(dropout(GELU(f·W_Iᵀ + b_I)·W_2ᵀ + b_2) + f)

use super::{as_sequences, gelu_reusing, linear_forward, linear_reusing, ln_forward, ln_reusing};
use crate::batch::Batch;
use crate::model::{BertAttention, BertLayer};
use crate::ops::attention::{self, AttentionCache, AttentionOptions, Qkv};
use crate::ops::layernorm::LayerNormCache;
use crate::ops::{dropout, rope};
use crate::trace::{LayerTrace, Matrix};
use ndarray::{s, Array2, ArrayView2};

/// An encoder's output as a decoder layer's cross-attention reads it.
pub struct EncoderStates<'a> {
    pub hidden: &'a Array2<f32>,  // (B·Ts, C)
    pub mask: ArrayView2<'a, u8>, // (B, Ts) 1 = real source token
}

/// What every layer of one pass shares (and the layer's own head factors).
#[derive(Clone, Copy)]
pub(super) struct LayerSettings<'a, 'e> {
    pub attention: &'a AttentionOptions,
    /// q and k are rotated per head (rotary positions).
    pub rotary: bool,
    /// The encoder a decoder layer's cross-attention reads, with that attention's options.
    pub cross: Option<(&'a EncoderStates<'e>, &'a AttentionOptions)>,
    /// LayerNorm's ε.
    pub eps: f64,
    /// Dropout rate after each sublayer (0 outside training).
    pub hidden_dropout: f32,
    /// This layer's factor on each head's attention weights (`HeadMask`), None = all 1.
    pub head_factors: Option<&'a [f32]>,
}

/// An attention block's activations, the self-attention's or a decoder's cross-attention's:
/// out = LN(dropout(attention(q, k, v)·W_Oᵀ + b_O) + residual). Tk = T for self-attention,
/// the encoder's Ts for cross-attention.
#[derive(Default)]
pub(crate) struct AttentionBlockCache {
    pub(crate) q: Array2<f32>, // (N, H·D) the attention op's input (rotated if rotary)
    pub(crate) k: Array2<f32>, // (B·Tk, G·D) the attention op's input (rotated if rotary)
    pub(crate) v: Array2<f32>, // (B·Tk, G·D)
    /// The op's own, by kernel: weights (B, H, T, Tk) or each row's log-sum-exp.
    pub(crate) kernel: AttentionCache,
    pub(crate) context: Array2<f32>, // (N, C) merged heads, W_O input
    pub(crate) dropout: Option<Array2<f32>>, // (N, C)
    pub(crate) sum: Array2<f32>,     // (N, C) LN input
    pub(crate) ln: LayerNormCache,
    pub(crate) out: Array2<f32>, // (N, C) LN output: the next block's input, residual
}

/// The feed-forward block's activations: out = LN(dropout(GELU(f·W_Iᵀ + b_I)·W_2ᵀ + b_2) + f).
/// Its output is the layer's, kept as the next layer's `input` (the last layer's is `hidden`).
#[derive(Default)]
pub(crate) struct FfnCache {
    pub(crate) intermediate_pre: Array2<f32>, // (N, I) GELU input
    pub(crate) intermediate: Array2<f32>,     // (N, I) GELU output, W_2 input
    pub(crate) dropout: Option<Array2<f32>>,  // (N, C)
    pub(crate) sum: Array2<f32>,              // (N, C) LN input
    pub(crate) ln: LayerNormCache,
}

/// One layer's activations, block by block.
#[derive(Default)]
pub(crate) struct LayerCache {
    pub(crate) input: Array2<f32>, // (N, C) X: Q/K/V input, residual
    pub(crate) attention: AttentionBlockCache,
    /// A decoder's cross-attention, reading the attention block's output.
    pub(crate) cross: Option<AttentionBlockCache>,
    pub(crate) ffn: FfnCache,
}

impl LayerCache {
    /// f, the feed-forward block's input (N, C): the cross-attention's output if the layer
    /// has one, else the attention block's.
    pub(crate) fn ffn_input(&self) -> &Array2<f32> {
        self.cross.as_ref().map_or(&self.attention.out, |c| &c.out)
    }
}

/// The layer's output and cache, written into the buffers of `spare`, this layer's cache from
/// an earlier step (`ops::reuse`; `LayerCache::default()` for none). Its `input` holds the
/// output: the same shape, and this step's input is `x`. The blocks in order: attention,
/// cross-attention (a decoder's, given an encoder), feed-forward.
pub(super) fn layer_forward(
    layer: &BertLayer,
    x: Array2<f32>, // (N, C)
    batch: &Batch,
    settings: &LayerSettings,
    noise: &mut dropout::Noise,
    mut trace: Option<&mut LayerTrace>,
    spare: LayerCache,
) -> (Array2<f32>, LayerCache) {
    let attention = attention_block_forward(
        &layer.attention,
        &x,
        batch,
        settings,
        noise,
        trace.as_deref_mut(),
        spare.attention,
    );
    let cross = match (settings.cross, &layer.crossattention) {
        (Some(encoder), Some(weights)) => Some(cross_forward(
            weights,
            &attention.out,
            encoder,
            batch.input_ids.dim(),
            (settings.eps, settings.hidden_dropout),
            noise,
            trace.as_deref_mut().map(|tr| &mut tr.cross_heads),
        )),
        _ => None,
    };
    let mut cache = LayerCache {
        input: x,
        attention,
        cross,
        ffn: FfnCache::default(),
    };
    let out;
    (out, cache.ffn) = ffn_forward(
        layer,
        cache.ffn_input(),
        (settings.eps, settings.hidden_dropout),
        noise,
        (trace, batch.seq_len()),
        (spare.input, spare.ffn),
    );
    (out, cache)
}

/// The attention block: a = LN(dropout(attention(q, k, v)·W_Oᵀ + b_O) + x),
/// q, k, v = x·W_Qᵀ + b_Q, x·W_Kᵀ + b_K, x·W_Vᵀ + b_V (q and k rotated per head by RoPE in
/// rotary models), each head's context scaled by its factor (`head_factors`). Written into
/// the buffers of `spare`.
fn attention_block_forward(
    weights: &BertAttention,
    x: &Array2<f32>, // (N, C)
    batch: &Batch,
    &LayerSettings {
        attention: attention_opts,
        rotary,
        eps,
        hidden_dropout: hidden_p,
        head_factors,
        ..
    }: &LayerSettings,
    noise: &mut dropout::Noise,
    mut trace: Option<&mut LayerTrace>,
    spare: AttentionBlockCache,
) -> AttentionBlockCache {
    let (b_size, t) = batch.input_ids.dim();
    let c = x.ncols();
    let sa = &weights.self_attention;
    let (mut q, mut k, v) = (
        linear_reusing(x.view(), &sa.query, spare.q),
        linear_reusing(x.view(), &sa.key, spare.k),
        linear_reusing(x.view(), &sa.value, spare.v),
    );
    let head_dim = c / attention_opts.heads.query();
    let unrotated = rotary.then(|| rotate(&mut q, &mut k, (b_size, t), head_dim));
    let as3 = |a| as_sequences(a, b_size, t);
    let input = Qkv {
        q: as3(&q),
        k: as3(&k),
        v: as3(&v),
        key_mask: batch.attention_mask.view(),
    };
    let (mut context, kernel) = attention::forward(
        input,
        attention_opts,
        noise,
        trace.as_deref_mut().map(|tr| &mut tr.heads),
        attention::Spare {
            context: spare.context,
            cache: spare.kernel,
        },
    );
    if let Some(factors) = head_factors {
        // (m·P)·V = m·(P·V): a factor on head h's weights scales its context (B, T, D).
        for (h, &m) in factors.iter().enumerate().filter(|(_, &m)| m != 1.0) {
            let d = context.dim().2 / factors.len();
            context
                .slice_mut(s![.., .., h * d..(h + 1) * d])
                .mapv_inplace(|x| x * m);
        }
    }
    if let (Some(tr), Some((q0, k0))) = (trace.as_deref_mut(), &unrotated) {
        // The attention op saw rotated q and k; the trace shows both.
        for (h, head) in tr.heads.iter_mut().enumerate() {
            let g = head.kv_group;
            let q_head = Matrix::from_view(q0.slice(s![..t, h * head_dim..(h + 1) * head_dim]));
            let k_head = Matrix::from_view(k0.slice(s![..t, g * head_dim..(g + 1) * head_dim]));
            head.q_rotated = Some(std::mem::replace(&mut head.q, q_head));
            head.k_rotated = Some(std::mem::replace(&mut head.k, k_head));
        }
    }
    let context = context
        .into_shape_with_order((b_size * t, c))
        .expect("contiguous (B, T, C)");

    let mut sum = linear_reusing(context.view(), &weights.output.dense, spare.sum);
    if let Some(tr) = trace.as_deref_mut() {
        tr.input = Matrix::from_view(x.slice(s![..t, ..]));
        tr.context = Matrix::from_view(context.slice(s![..t, ..]));
        tr.attention_output = Matrix::from_view(sum.slice(s![..t, ..]));
    }
    let dropout = dropout::forward(&mut sum, hidden_p, noise, spare.dropout);
    sum += x;
    let (out, ln) = ln_reusing(
        sum.view(),
        &weights.output.layer_norm,
        eps,
        (spare.out, spare.ln),
    );
    if let Some(tr) = trace {
        tr.attention_norm = Matrix::from_view(out.slice(s![..t, ..]));
    }
    AttentionBlockCache {
        q,
        k,
        v,
        kernel,
        context,
        dropout,
        sum,
        ln,
        out,
    }
}

/// Rotary positions: q (N, H·D) and k (N, G·D) rotated per head, in their place. Returns them
/// as they were, for the trace.
fn rotate(
    q: &mut Array2<f32>,
    k: &mut Array2<f32>,
    (b_size, t): (usize, usize),
    head_dim: usize,
) -> (Array2<f32>, Array2<f32>) {
    let rotated = |a: &Array2<f32>| {
        let r = rope::forward(as_sequences(a, b_size, t), head_dim);
        r.into_shape_with_order((b_size * t, a.ncols()))
            .expect("contiguous (B, T, ·)")
    };
    let (q_rot, k_rot) = (rotated(q), rotated(k));
    (std::mem::replace(q, q_rot), std::mem::replace(k, k_rot))
}

/// f = LN(dropout(attention(a·W_Qᵀ + b_Q, e·W_Kᵀ + b_K, e·W_Vᵀ + b_V)·W_Oᵀ + b_O) + a): the
/// decoder's queries against the encoder's keys and values, under the encoder's padding mask.
fn cross_forward(
    weights: &BertAttention,
    a: &Array2<f32>, // (N, C)
    (encoder, opts): (&EncoderStates, &AttentionOptions),
    (b_size, t): (usize, usize),
    (eps, hidden_p): (f64, f32),
    noise: &mut dropout::Noise,
    trace: Option<&mut Vec<crate::trace::HeadTrace>>,
) -> AttentionBlockCache {
    let sa = &weights.self_attention;
    let ts = encoder.mask.ncols();
    let c = a.ncols();
    let q = linear_forward(a.view(), &sa.query);
    let k = linear_forward(encoder.hidden.view(), &sa.key);
    let v = linear_forward(encoder.hidden.view(), &sa.value);
    let input = Qkv {
        q: as_sequences(&q, b_size, t),
        k: as_sequences(&k, b_size, ts),
        v: as_sequences(&v, b_size, ts),
        key_mask: encoder.mask,
    };
    let (context, kernel) =
        attention::forward(input, opts, noise, trace, attention::Spare::default());
    let context = context
        .into_shape_with_order((b_size * t, c))
        .expect("contiguous (B, Tt, C)");
    let mut sum = linear_forward(context.view(), &weights.output.dense);
    let dropout = dropout::forward(&mut sum, hidden_p, noise, None);
    sum += a;
    let (out, ln) = ln_forward(sum.view(), &weights.output.layer_norm, eps);
    AttentionBlockCache {
        q,
        k,
        v,
        kernel,
        context,
        dropout,
        sum,
        ln,
        out,
    }
}

/// The feed-forward block: out = LN(dropout(GELU(f·W_Iᵀ + b_I)·W_2ᵀ + b_2) + f), written into
/// the buffers of `spare_out` and `spare`. The trace shows batch row 0: the first T rows.
fn ffn_forward(
    layer: &BertLayer,
    f: &Array2<f32>, // (N, C)
    (eps, hidden_p): (f64, f32),
    noise: &mut dropout::Noise,
    (mut trace, t): (Option<&mut LayerTrace>, usize),
    (spare_out, spare): (Array2<f32>, FfnCache),
) -> (Array2<f32>, FfnCache) {
    let intermediate_pre =
        linear_reusing(f.view(), &layer.intermediate.dense, spare.intermediate_pre);
    let intermediate = gelu_reusing(intermediate_pre.view(), spare.intermediate);
    let mut sum = linear_reusing(intermediate.view(), &layer.output.dense, spare.sum);
    if let Some(tr) = trace.as_deref_mut() {
        tr.intermediate_pre = Matrix::from_view(intermediate_pre.slice(s![..t, ..]));
        tr.intermediate = Matrix::from_view(intermediate.slice(s![..t, ..]));
        tr.ffn_output = Matrix::from_view(sum.slice(s![..t, ..]));
    }
    let dropout = dropout::forward(&mut sum, hidden_p, noise, spare.dropout);
    sum += f;
    let (out, ln) = ln_reusing(
        sum.view(),
        &layer.output.layer_norm,
        eps,
        (spare_out, spare.ln),
    );
    if let Some(tr) = trace {
        tr.output = Matrix::from_view(out.slice(s![..t, ..]));
    }
    let cache = FfnCache {
        intermediate_pre,
        intermediate,
        dropout,
        sum,
        ln,
    };
    (out, cache)
}
