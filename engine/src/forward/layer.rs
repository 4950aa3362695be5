//! One encoder layer (`BertLayer`), post-LN, and the cache its backward reads:
//!
//! q, k = x·W_Qᵀ + b_Q, x·W_Kᵀ + b_K   (rotated per head by RoPE in rotary models)
//! a   = LN(dropout(attention(q, k, x·W_Vᵀ + b_V)·W_Oᵀ + b_O) + x)
//! out = LN(dropout(GELU(a·W_Iᵀ + b_I)·W_2ᵀ + b_2) + a)

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

/// Cross-attention's activations: f = LN(dropout(attention(a·W_Qᵀ, e·W_Kᵀ, e·W_Vᵀ)·W_Oᵀ + b_O) + a),
/// a the self-attention's output, e the encoder's.
pub(crate) struct CrossCache {
    pub(crate) q: Array2<f32>,               // (N, C)
    pub(crate) k: Array2<f32>,               // (B·Ts, C)
    pub(crate) v: Array2<f32>,               // (B·Ts, C)
    pub(crate) attention: AttentionCache,    // weights (B, H, Tt, Ts)
    pub(crate) context: Array2<f32>,         // (N, C)
    pub(crate) dropout: Option<Array2<f32>>, // (N, C)
    pub(crate) sum: Array2<f32>,             // (N, C) LN input
    pub(crate) ln: LayerNormCache,
    pub(crate) out: Array2<f32>, // (N, C) LN output: W_I input, residual
}

#[derive(Default)]
pub(crate) struct LayerCache {
    pub(crate) input: Array2<f32>,        // (N, C) X: Q/K/V input, residual
    pub(crate) q: Array2<f32>,            // (N, H·D) attention's input (rotated if rotary)
    pub(crate) k: Array2<f32>,            // (N, G·D) attention's input (rotated if rotary)
    pub(crate) v: Array2<f32>,            // (N, G·D)
    pub(crate) attention: AttentionCache, // by kernel: weights (B, H, T, T) or row log-sum-exp
    pub(crate) context: Array2<f32>,      // (N, C) merged heads, W_O input
    pub(crate) attention_dropout: Option<Array2<f32>>, // (N, C)
    pub(crate) attention_sum: Array2<f32>, // (N, C) LN input
    pub(crate) attention_ln: LayerNormCache,
    pub(crate) attention_out: Array2<f32>, // (N, C) LN output: W_I (or cross-attention) input, residual
    pub(crate) cross: Option<CrossCache>,
    pub(crate) intermediate_pre: Array2<f32>, // (N, I) GELU input
    pub(crate) intermediate: Array2<f32>,     // (N, I) GELU output, W_2 input
    pub(crate) output_dropout: Option<Array2<f32>>, // (N, C)
    pub(crate) output_sum: Array2<f32>,       // (N, C) LN input
    pub(crate) output_ln: LayerNormCache,
}
/// The layer's output and cache, written into the buffers of `spare`, this layer's cache from
/// an earlier step (`ops::reuse`; `LayerCache::default()` for none). Its `input` holds the
/// output: the same shape, and this step's input is `x`.
pub(super) fn layer_forward(
    layer: &BertLayer,
    x: Array2<f32>, // (N, C)
    batch: &Batch,
    &LayerSettings {
        attention: attention_opts,
        rotary,
        cross,
        eps,
        hidden_dropout: hidden_p,
        head_factors,
    }: &LayerSettings,
    noise: &mut dropout::Noise,
    mut trace: Option<&mut LayerTrace>,
    spare: LayerCache,
) -> (Array2<f32>, LayerCache) {
    let (b_size, t) = batch.input_ids.dim();
    let c = x.ncols();
    let sa = &layer.attention.self_attention;
    let (mut q, mut k, v) = (
        linear_reusing(x.view(), &sa.query, spare.q),
        linear_reusing(x.view(), &sa.key, spare.k),
        linear_reusing(x.view(), &sa.value, spare.v),
    );
    let head_dim = c / attention_opts.heads.query();
    let unrotated = if rotary {
        let rotate = |a: &Array2<f32>| {
            let r = rope::forward(as_sequences(a, b_size, t), head_dim);
            r.into_shape_with_order((b_size * t, a.ncols()))
                .expect("contiguous (B, T, ·)")
        };
        let (q_rot, k_rot) = (rotate(&q), rotate(&k));
        Some((
            std::mem::replace(&mut q, q_rot),
            std::mem::replace(&mut k, k_rot),
        ))
    } else {
        None
    };
    let as3 = |a| as_sequences(a, b_size, t);
    let input = Qkv {
        q: as3(&q),
        k: as3(&k),
        v: as3(&v),
        key_mask: batch.attention_mask.view(),
    };
    let (mut context, attention) = attention::forward(
        input,
        attention_opts,
        noise,
        trace.as_deref_mut().map(|tr| &mut tr.heads),
        attention::Spare {
            context: spare.context,
            cache: spare.attention,
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

    let mut attention_sum = linear_reusing(
        context.view(),
        &layer.attention.output.dense,
        spare.attention_sum,
    );
    if let Some(tr) = trace.as_deref_mut() {
        tr.input = Matrix::from_view(x.slice(s![..t, ..]));
        tr.context = Matrix::from_view(context.slice(s![..t, ..]));
        tr.attention_output = Matrix::from_view(attention_sum.slice(s![..t, ..]));
    }
    let attention_dropout =
        dropout::forward(&mut attention_sum, hidden_p, noise, spare.attention_dropout);
    attention_sum += &x;
    let (attention_out, attention_ln) = ln_reusing(
        attention_sum.view(),
        &layer.attention.output.layer_norm,
        eps,
        (spare.attention_out, spare.attention_ln),
    );

    let cross = match (cross, &layer.crossattention) {
        (Some(encoder), Some(weights)) => Some(cross_forward(
            weights,
            &attention_out,
            encoder,
            (b_size, t),
            (eps, hidden_p),
            noise,
            trace.as_deref_mut().map(|tr| &mut tr.cross_heads),
        )),
        _ => None,
    };
    let ffn_input = cross.as_ref().map_or(&attention_out, |c| &c.out);
    let intermediate_pre = linear_reusing(
        ffn_input.view(),
        &layer.intermediate.dense,
        spare.intermediate_pre,
    );
    let intermediate = gelu_reusing(intermediate_pre.view(), spare.intermediate);
    let mut output_sum = linear_reusing(intermediate.view(), &layer.output.dense, spare.output_sum);
    if let Some(tr) = trace.as_deref_mut() {
        tr.attention_norm = Matrix::from_view(attention_out.slice(s![..t, ..]));
        tr.intermediate_pre = Matrix::from_view(intermediate_pre.slice(s![..t, ..]));
        tr.intermediate = Matrix::from_view(intermediate.slice(s![..t, ..]));
        tr.ffn_output = Matrix::from_view(output_sum.slice(s![..t, ..]));
    }
    let output_dropout = dropout::forward(&mut output_sum, hidden_p, noise, spare.output_dropout);
    output_sum += ffn_input;
    let (out, output_ln) = ln_reusing(
        output_sum.view(),
        &layer.output.layer_norm,
        eps,
        (spare.input, spare.output_ln),
    );
    if let Some(tr) = trace {
        tr.output = Matrix::from_view(out.slice(s![..t, ..]));
    }
    let cache = LayerCache {
        input: x,
        q,
        k,
        v,
        attention,
        context,
        attention_dropout,
        attention_sum,
        attention_ln,
        attention_out,
        cross,
        intermediate_pre,
        intermediate,
        output_dropout,
        output_sum,
        output_ln,
    };
    (out, cache)
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
) -> CrossCache {
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
    let (context, attention) =
        attention::forward(input, opts, noise, trace, attention::Spare::default());
    let context = context
        .into_shape_with_order((b_size * t, c))
        .expect("contiguous (B, Tt, C)");
    let mut sum = linear_forward(context.view(), &weights.output.dense);
    let dropout = dropout::forward(&mut sum, hidden_p, noise, None);
    sum += a;
    let (out, ln) = ln_forward(sum.view(), &weights.output.layer_norm, eps);
    CrossCache {
        q,
        k,
        v,
        attention,
        context,
        dropout,
        sum,
        ln,
        out,
    }
}
