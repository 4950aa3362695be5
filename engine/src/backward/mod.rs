//! The backward pass of `BertForPreTraining`, by hand: `forward/` read bottom to top.
//! Every step accumulates into `grads` (see `ops`), so the tied decoder's gradient and the
//! word-embedding lookup's gradient add up in `bert.embeddings.word_embeddings`.
//!
//! Here: the entry points, `run` (the heads' losses back to dL/d(hidden)) and `from_hidden`
//! (the layers in reverse, then the embeddings). The parts mirror `forward/`'s: `heads` (NSP,
//! MLM), `layer` (its blocks in reverse), `embeddings`.

mod embeddings;
mod heads;
mod layer;

use crate::batch::Batch;
use crate::error::{EngineError, Result};
use crate::forward::{EncoderStates, ForwardOutput};
use crate::model::{BertForPreTraining, LayerNorm, Linear};
use crate::ops::layernorm::{self, LayerNormCache};
use crate::ops::linear::{self, Write};
use crate::ops::reuse;
use embeddings::embeddings_backward;
use heads::{mlm_backward, nsp_backward};
use layer::layer_backward;
use ndarray::{Array2, ArrayView2};

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
pub(super) fn take<S: ndarray::IntoDimension<Dim = ndarray::Ix2>>(
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
    backward_with_encoder(model, batch, out, grads, None, scratch).map(|_| ())
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
    let mut d_hidden = take(&mut scratch.hidden, out.hidden.raw_dim()); // (N, C)
    d_hidden.fill(0.0); // the heads' parts add up in it

    // The heads in reverse: NSP, then MLM; each adds its part into d_hidden.
    let BertForPreTraining {
        bert: g_bert,
        cls: g_cls,
        ..
    } = grads;
    if let (Some(cls), Some(g_cls)) = (&model.cls, g_cls.as_mut()) {
        if let Some(nsp_lse) = &cache.nsp_log_sum_exp {
            let g = (&mut *g_bert, &mut *g_cls);
            nsp_backward((model, cls), g, batch, out, nsp_lse, &mut d_hidden);
        }
        if let Some(mlm_lse) = &cache.mlm_log_sum_exp {
            let g = (&mut *g_bert, &mut *g_cls);
            mlm_backward(model, g, batch, out, mlm_lse, &mut d_hidden, scratch);
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

pub(super) fn linear_backward(
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
pub(super) fn ln_backward(
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
