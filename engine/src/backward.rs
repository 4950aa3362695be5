//! The backward pass of `BertForPreTraining`, by hand: `forward/` read bottom to top.
//! Every step accumulates into `grads` (see `ops`), so the tied decoder's gradient and the
//! word-embedding lookup's gradient add up in `bert.embeddings.word_embeddings`.

use crate::batch::Batch;
use crate::error::{EngineError, Result};
use crate::forward::{
    as_sequences, as_sequences_mut, mlm_targets, position_ids, CrossCache, EmbeddingsCache,
    EncoderStates, ForwardOutput, LayerCache, MlmHeadCache,
};
use crate::model::{
    BertAttention, BertEmbeddings, BertForPreTraining, BertLayer, LayerNorm, Linear,
};
use crate::ops::attention::{self, AttentionOptions, Qkv, QkvGrads};
use crate::ops::layernorm::{self, LayerNormCache};
use crate::ops::linear::Write;
use crate::ops::{dropout, embedding, gelu, linear, loss, reuse, rope, tanh};
use ndarray::{s, Array2, ArrayView2};

/// Backward's temporaries, the gradients of the activations, kept from one call for the next
/// (a training step's for the next step) so that, once they have their sizes, backward
/// allocates none of them. Every layer has the same shapes, so one set serves them all.
#[derive(Default)]
pub struct BackwardScratch {
    hidden: Array2<f32>,          // (N, C) dL/d(last layer output)
    rows: Array2<f32>,            // (N, C) becomes dL/d(a layer's input); the output's comes back
    ffn_input: Array2<f32>,       // (N, C) dL/d(FFN input)
    intermediate: Array2<f32>,    // (N, I)
    context: Array2<f32>,         // (N, H·Dv)
    q: Array2<f32>,               // (N, H·Dk)
    k: Array2<f32>,               // (N, G·Dk)
    v: Array2<f32>,               // (N, G·Dv)
    mlm_logits: Array2<f32>,      // (M, V)
    mlm_transformed: Array2<f32>, // (M, C)
    mlm_input: Array2<f32>,       // (M, C)
}

/// A scratch buffer taken out of `field` (which is left empty until it is put back) and
/// shaped `shape`; its entries are stale (`ops::reuse`).
fn take<S: ndarray::IntoDimension<Dim = ndarray::Ix2>>(
    field: &mut Array2<f32>,
    shape: S,
) -> Array2<f32> {
    reuse(std::mem::take(field), shape)
}

/// Accumulates d(losses.total)/dθ into `grads` (zero it first with `fill_zero`). `out` must
/// come from `forward(model, batch, …)` with the same model and batch.
pub fn backward(
    model: &BertForPreTraining,
    batch: &Batch,
    out: &ForwardOutput,
    grads: &mut BertForPreTraining,
) -> Result<()> {
    backward_reusing(model, batch, out, grads, &mut BackwardScratch::default())
}

/// `backward` with its temporaries in `scratch`, kept from an earlier call.
pub fn backward_reusing(
    model: &BertForPreTraining,
    batch: &Batch,
    out: &ForwardOutput,
    grads: &mut BertForPreTraining,
    scratch: &mut BackwardScratch,
) -> Result<()> {
    run(model, batch, out, grads, None, scratch).map(|_| ())
}

/// `backward` for a decoder with cross-attention: `encoder` is what `forward_with_encoder`
/// read, and the result is dL/d(encoder output) (B·Ts, C), summed over the decoder's layers,
/// for the encoder's own backward (`backward_from_hidden`).
/// Its temporaries in `scratch`, kept from an earlier call.
pub fn backward_with_encoder(
    model: &BertForPreTraining,
    batch: &Batch,
    out: &ForwardOutput,
    grads: &mut BertForPreTraining,
    encoder: Option<&EncoderStates>,
    scratch: &mut BackwardScratch,
) -> Result<Option<Array2<f32>>> {
    run(model, batch, out, grads, encoder, scratch)
}

fn run(
    model: &BertForPreTraining,
    batch: &Batch,
    out: &ForwardOutput,
    grads: &mut BertForPreTraining,
    encoder: Option<&EncoderStates>,
    scratch: &mut BackwardScratch,
) -> Result<Option<Array2<f32>>> {
    if out.losses.is_none() {
        return Err(EngineError::Input(
            "nothing to differentiate: the batch has no MLM/NSP labels or the model has no pre-training heads".into(),
        ));
    }
    if out.cache.head_masked {
        return Err(EngineError::Input(
            "a pass under a head mask is an evaluation: it has no backward here".into(),
        ));
    }
    check_shapes(model, batch, out, grads)?;
    let cache = &out.cache;
    let t = batch.seq_len();
    let mut d_hidden = take(&mut scratch.hidden, out.hidden.raw_dim()); // (N, C)
    d_hidden.fill(0.0); // the heads' parts add up in it

    let BertForPreTraining {
        bert: g_bert,
        cls: g_cls,
        ..
    } = grads;
    if let (Some(cls), Some(g_cls)) = (&model.cls, g_cls.as_mut()) {
        if let Some(nsp_lse) = &cache.nsp_log_sum_exp {
            // NSP: logits = pooled·W_sᵀ + b_s, pooled = tanh(h_[CLS]·W_pᵀ + b_p)
            let (Some(pooler), Some(g_pooler), Some(nsp), Some(g_nsp)) = (
                &model.bert.pooler,
                g_bert.pooler.as_mut(),
                &cls.seq_relationship,
                g_cls.seq_relationship.as_mut(),
            ) else {
                unreachable!(
                    "an NSP loss implies a pooler and an NSP head (checked in check_shapes)"
                )
            };
            let (pooled, logits) = (
                out.pooled.as_ref().expect("NSP loss"),
                out.nsp_logits.as_ref().expect("NSP loss"),
            );
            let targets: Vec<i64> = batch
                .nsp_labels
                .as_ref()
                .expect("NSP loss")
                .iter()
                .map(|&l| l as i64)
                .collect();
            let mut d_logits = Array2::zeros(logits.raw_dim()); // (B, 2)
            loss::backward(
                &mut d_logits.view_mut(),
                logits.view(),
                &targets,
                nsp_lse.view(),
                1.0,
                cache.loss_counts.nsp,
            );
            let mut d_pooled = Array2::zeros(pooled.raw_dim()); // (B, C)
            linear_backward(
                Some((&mut d_pooled, Write::Add)),
                g_nsp,
                d_logits.view(),
                pooled.view(),
                nsp,
            );
            let mut d_pre = Array2::zeros(pooled.raw_dim());
            tanh::backward(&mut d_pre.view_mut(), d_pooled.view(), pooled.view());
            let cls_rows = cache.cls_rows.as_ref().expect("pooler ran");
            let mut d_cls = Array2::zeros(cls_rows.raw_dim()); // (B, C)
            linear_backward(
                Some((&mut d_cls, Write::Add)),
                &mut g_pooler.dense,
                d_pre.view(),
                cls_rows.view(),
                &pooler.dense,
            );
            let mut d_cls_rows = d_hidden.slice_mut(s![..;t, ..]);
            d_cls_rows += &d_cls;
        }
        if let Some(mlm_lse) = &cache.mlm_log_sum_exp {
            let head = cache.mlm_head.as_ref().expect("MLM head ran");
            let logits = out.mlm_logits.as_ref().expect("MLM head ran");
            let targets = mlm_targets(batch.mlm_labels.as_ref().expect("MLM loss"), &out.mlm_rows);
            let mut d_logits = take(&mut scratch.mlm_logits, logits.raw_dim()); // (M, V)
            d_logits.fill(0.0);
            loss::backward(
                &mut d_logits.view_mut(),
                logits.view(),
                &targets,
                mlm_lse.view(),
                1.0,
                cache.loss_counts.mlm,
            );
            let d_input = mlm_head_backward(model, g_bert, g_cls, head, d_logits.view(), scratch);
            for (d_row, &n) in d_input.rows().into_iter().zip(&out.mlm_rows) {
                let mut row = d_hidden.row_mut(n);
                row += &d_row;
            }
            (scratch.mlm_logits, scratch.mlm_input) = (d_logits, d_input);
        }
    }

    let d_encoder = from_hidden(model, batch, out, grads, &mut d_hidden, encoder, scratch);
    scratch.hidden = d_hidden;
    d_encoder
}

/// The encoder stack's backward from dL/d(last layer output) (N, C): the layers in reverse,
/// then the embeddings. An encoder–decoder's encoder starts here, from what the decoder's
/// cross-attention sends back. Returns dL/d(encoder output) for a decoder with cross-attention.
/// Its temporaries in `scratch`, kept from an earlier call.
pub fn backward_from_hidden(
    model: &BertForPreTraining,
    batch: &Batch,
    out: &ForwardOutput,
    grads: &mut BertForPreTraining,
    mut d_hidden: Array2<f32>,
    encoder: Option<&EncoderStates>,
    scratch: &mut BackwardScratch,
) -> Result<Option<Array2<f32>>> {
    from_hidden(model, batch, out, grads, &mut d_hidden, encoder, scratch)
}

/// `backward_from_hidden` with its temporaries in `scratch`. `d_hidden`'s buffer is left
/// holding dL/d(embeddings' LN input), and the caller keeps it.
fn from_hidden(
    model: &BertForPreTraining,
    batch: &Batch,
    out: &ForwardOutput,
    grads: &mut BertForPreTraining,
    d_hidden: &mut Array2<f32>,
    encoder: Option<&EncoderStates>,
    scratch: &mut BackwardScratch,
) -> Result<Option<Array2<f32>>> {
    check_shapes(model, batch, out, grads)?;
    if d_hidden.dim() != out.hidden.dim() {
        return Err(EngineError::Input(
            "the gradient of the output does not have the output's shape".into(),
        ));
    }
    let cache = &out.cache;
    let cross = match (encoder, &cache.cross_opts) {
        (Some(e), Some(opts)) => Some((e, opts)),
        (None, None) => None,
        _ => {
            return Err(EngineError::Input(
                "give backward the encoder's output exactly when forward read one".into(),
            ))
        }
    };
    let mut d_encoder = cross.map(|(e, _)| Array2::<f32>::zeros(e.hidden.raw_dim()));
    for ((layer, g_layer), layer_cache) in model
        .bert
        .layers
        .iter()
        .zip(grads.bert.layers.iter_mut())
        .zip(&cache.layers)
        .rev()
    {
        *d_hidden = layer_backward(
            (layer, g_layer),
            layer_cache,
            std::mem::take(d_hidden),
            batch,
            (&cache.attention_opts, cache.rotary),
            cross.zip(d_encoder.as_mut()),
            scratch,
        );
    }
    embeddings_backward(
        &model.bert.embeddings,
        &mut grads.bert.embeddings,
        &cache.embeddings,
        d_hidden,
        batch,
        model.config.pad_token_id,
    );
    Ok(d_encoder)
}

/// The gradient buffer, output and batch must belong together; a mismatch is a caller's
/// mistake that must not turn into an index panic.
fn check_shapes(
    model: &BertForPreTraining,
    batch: &Batch,
    out: &ForwardOutput,
    grads: &BertForPreTraining,
) -> Result<()> {
    let err = |m: &str| Err(EngineError::Input(m.into()));
    if grads.bert.layers.len() != model.bert.layers.len()
        || grads.parts() != model.parts()
        || grads.bert.embeddings.word_embeddings.dim()
            != model.bert.embeddings.word_embeddings.dim()
        || grads.config.hidden_size != model.config.hidden_size
        || grads.config.intermediate_size != model.config.intermediate_size
    {
        return err(
            "the gradient buffer does not have the model's structure (use model.zeros_like())",
        );
    }
    let (b_size, t) = batch.input_ids.dim();
    if out.hidden.nrows() != b_size * t || out.cache.layers.len() != model.bert.layers.len() {
        return err("the forward output does not belong to this batch and model");
    }
    if out.cache.nsp_log_sum_exp.is_some() && !(model.parts().pooler && model.parts().nsp) {
        return err("an NSP loss without a pooler and an NSP head");
    }
    Ok(())
}

fn linear_backward(
    d_inp: Option<(&mut Array2<f32>, Write)>,
    g: &mut Linear,
    d_out: ArrayView2<f32>,
    inp: ArrayView2<f32>,
    l: &Linear,
) {
    let mut d_inp_view = d_inp.map(|(d, write)| (d.view_mut(), write));
    linear::backward(
        d_inp_view.as_mut().map(|(d, write)| (d, *write)),
        &mut g.weight.view_mut(),
        &mut g.bias.view_mut(),
        d_out,
        inp,
        l.weight.view(),
    );
}

/// In place: `d` holds dL/d(LN output) and becomes dL/d(LN input).
fn ln_backward(
    d: &mut Array2<f32>,
    g: &mut LayerNorm,
    inp: ArrayView2<f32>,
    ln: &LayerNorm,
    cache: &LayerNormCache,
) {
    layernorm::backward(
        &mut d.view_mut(),
        &mut g.weight.view_mut(),
        &mut g.bias.view_mut(),
        inp,
        ln.weight.view(),
        cache,
    );
}

/// Returns dL/d(hidden rows the head read) (M, C).
fn mlm_head_backward(
    model: &BertForPreTraining,
    g_bert: &mut crate::model::BertModel,
    g_cls: &mut crate::model::BertPreTrainingHeads,
    head: &MlmHeadCache,
    d_logits: ArrayView2<f32>,
    scratch: &mut BackwardScratch,
) -> Array2<f32> {
    let predictions = &model.cls.as_ref().expect("MLM head ran").predictions;
    let transform = &predictions.transform;
    let g_transform = &mut g_cls.predictions.transform;
    // Tied decoder: logits = transformed·Eᵀ + bias, so dE gets doutᵀ·transformed.
    let mut d_transformed = take(&mut scratch.mlm_transformed, head.transformed.raw_dim());
    linear::backward(
        Some((&mut d_transformed.view_mut(), Write::Over)),
        &mut g_bert.embeddings.word_embeddings.view_mut(),
        &mut g_cls.predictions.bias.view_mut(),
        d_logits,
        head.transformed.view(),
        model.bert.embeddings.word_embeddings.view(),
    );
    // In place, (M, C): dL/d(LN output), of its input (the GELU's output), of the GELU's input.
    let mut d_dense_out = d_transformed;
    ln_backward(
        &mut d_dense_out,
        &mut g_transform.layer_norm,
        head.activated.view(),
        &transform.layer_norm,
        &head.ln,
    );
    gelu::backward(&mut d_dense_out.view_mut(), head.dense_out.view());
    let mut d_input = take(&mut scratch.mlm_input, head.input.raw_dim()); // (M, C)
    linear_backward(
        Some((&mut d_input, Write::Over)),
        &mut g_transform.dense,
        d_dense_out.view(),
        head.input.view(),
        &transform.dense,
    );
    scratch.mlm_transformed = d_dense_out;
    d_input
}

/// From dL/d(layer output) (N, C) to dL/d(layer input) (N, C); with cross-attention, also
/// accumulates dL/d(encoder output) into the `cross` buffer. The temporaries are `scratch`'s,
/// and `d_out`'s buffer goes back to it.
/// `layer` and `g`: the layer's weights and the gradients added to; `rotary`: q and k were
/// rotated.
fn layer_backward(
    (layer, g): (&BertLayer, &mut BertLayer),
    cache: &LayerCache,
    d_out: Array2<f32>,
    batch: &Batch,
    (attention_opts, rotary): (&AttentionOptions, bool),
    cross: Option<((&EncoderStates, &AttentionOptions), &mut Array2<f32>)>,
    scratch: &mut BackwardScratch,
) -> Array2<f32> {
    let (b_size, t) = batch.input_ids.dim();
    let (n, c) = d_out.dim();
    // out = LN(dropout(intermediate·W_2ᵀ + b_2) + f), f = attention_out or cross-attention's
    let ffn_input = cache
        .cross
        .as_ref()
        .map_or(&cache.attention_out, |c| &c.out);
    let mut d_sum = d_out; // dL/d(layer output), then (in place) of the LN's input
    ln_backward(
        &mut d_sum,
        &mut g.output.layer_norm,
        cache.output_sum.view(),
        &layer.output.layer_norm,
        &cache.output_ln,
    );
    let mut d_ffn_input = take(&mut scratch.ffn_input, (n, c));
    d_ffn_input.assign(&d_sum); // the residual branch
    dropout::backward(&mut d_sum.view_mut(), cache.output_dropout.as_ref());
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
        Some((&mut d_ffn_input, Write::Add)),
        &mut g.intermediate.dense,
        d_pre.view(),
        ffn_input.view(),
        &layer.intermediate.dense,
    );
    scratch.intermediate = d_pre;
    let d_attention_out = match (cross, &cache.cross, &layer.crossattention) {
        (Some(cross), Some(c), Some(weights)) => {
            let g_cross = g.crossattention.as_mut().expect("same structure");
            cross_backward(
                (weights, g_cross),
                c,
                d_ffn_input,
                &cache.attention_out,
                cross,
                batch.input_ids.dim(),
            )
        }
        _ => d_ffn_input,
    };

    // attention_out = LN(dropout(context·W_Oᵀ + b_O) + x)
    let mut d_attention_sum = d_attention_out; // then (in place) dL/d(the LN's input)
    let (sa, g_sa) = (
        &layer.attention.self_attention,
        &mut g.attention.self_attention,
    );
    ln_backward(
        &mut d_attention_sum,
        &mut g.attention.output.layer_norm,
        cache.attention_sum.view(),
        &layer.attention.output.layer_norm,
        &cache.attention_ln,
    );
    let mut d_x = take(&mut scratch.rows, (n, c));
    d_x.assign(&d_attention_sum); // the residual branch
    dropout::backward(
        &mut d_attention_sum.view_mut(),
        cache.attention_dropout.as_ref(),
    );
    let mut d_context = take(&mut scratch.context, cache.context.raw_dim()); // (N, H·Dv)
    linear_backward(
        Some((&mut d_context, Write::Over)),
        &mut g.attention.output.dense,
        d_attention_sum.view(),
        cache.context.view(),
        &layer.attention.output.dense,
    );
    // Both (N, C) buffers this layer received go back: the next layer down takes them.
    (scratch.ffn_input, scratch.rows) = (d_attention_sum, d_sum);

    // context = attention(q, k, v), q = rope(x·W_Qᵀ + b_Q) (rope only if rotary), …
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
            &cache.attention,
            attention_opts,
        );
    }
    scratch.context = d_context;
    if rotary {
        let head_dim = c / attention_opts.heads.query();
        let unrotate = |d: Array2<f32>| {
            let mut d_pre = Array2::zeros(d.raw_dim());
            rope::backward(
                &mut as_sequences_mut(&mut d_pre, b_size, t),
                as_sequences(&d, b_size, t),
                head_dim,
            );
            d_pre
        };
        (d_q, d_k) = (unrotate(d_q), unrotate(d_k));
    }
    linear_backward(
        Some((&mut d_x, Write::Add)),
        &mut g_sa.query,
        d_q.view(),
        cache.input.view(),
        &sa.query,
    );
    linear_backward(
        Some((&mut d_x, Write::Add)),
        &mut g_sa.key,
        d_k.view(),
        cache.input.view(),
        &sa.key,
    );
    linear_backward(
        Some((&mut d_x, Write::Add)),
        &mut g_sa.value,
        d_v.view(),
        cache.input.view(),
        &sa.value,
    );
    (scratch.q, scratch.k, scratch.v) = (d_q, d_k, d_v);
    d_x
}

fn embeddings_backward(
    emb: &BertEmbeddings,
    g: &mut BertEmbeddings,
    cache: &EmbeddingsCache,
    d_out: &mut Array2<f32>, // (N, C), then (in place) dL/d(the LN's input)
    batch: &Batch,
    pad_token_id: usize,
) {
    let (b_size, t) = batch.input_ids.dim();
    dropout::backward(&mut d_out.view_mut(), cache.dropout.as_ref());
    let d_sum = d_out;
    ln_backward(
        d_sum,
        &mut g.layer_norm,
        cache.sum.view(),
        &emb.layer_norm,
        &cache.ln,
    );
    let d_sum = d_sum.view();
    // nn.Embedding(padding_idx=pad_token_id): the [PAD] row gets no gradient from the lookup
    // (the tied decoder still adds its part).
    embedding::backward(
        &mut g.word_embeddings.view_mut(),
        d_sum,
        batch.input_ids.iter().map(|&id| id as usize),
        Some(pad_token_id),
    );
    if let Some(g_positions) = &mut g.position_embeddings {
        embedding::backward(
            &mut g_positions.view_mut(),
            d_sum,
            position_ids(b_size, t),
            None,
        );
    }
    embedding::backward(
        &mut g.token_type_embeddings.view_mut(),
        d_sum,
        batch.token_type_ids.iter().map(|&tt| tt as usize),
        None,
    );
}

/// The cross-attention's backward: from dL/df (N, C), f = LN(dropout(ctx·W_Oᵀ + b_O) + a),
/// to dL/da (N, C), a = the self-attention's output; dL/d(encoder output) accumulates the
/// keys' and values' parts.
/// `weights` and `g`: the cross-attention's weights and the gradients added to.
fn cross_backward(
    (weights, g): (&BertAttention, &mut BertAttention),
    c: &CrossCache,
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
    attention::backward(grads, d_context, input, context, &c.attention, opts);
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
