//! The forward pass of `BertForPreTraining`, with an optional attention trace and the losses.
//! Post-LN BERT as HF `transformers` computes it (eager attention):
//!
//! embeddings: x = dropout(LN(word[ids] + position[t] + token_type[tt]))
//! each layer: a = LN(dropout(attention(x)·W_Oᵀ + b_O) + x)
//!             x = LN(dropout(GELU(a·W_Iᵀ + b_I)·W_2ᵀ + b_2) + a)
//! pooler:     tanh(dense(x[CLS]));  MLM: LN(GELU(dense(x)))·word_embeddingsᵀ + bias;  NSP: dense(pooled)
//!
//! Here: the options, the outputs and `forward`, which calls the parts in that order. The parts,
//! each with the cache its backward reads: `embeddings`, `layer`, `heads` (MLM, and the
//! losses); the checks made before any of them run: `validate`.

mod embeddings;
mod heads;
mod layer;
#[cfg(test)]
mod tests;
mod validate;

pub(crate) use embeddings::{position_ids, EmbeddingsCache};
pub(crate) use heads::{mlm_head_forward, mlm_targets, MlmHeadCache};
pub use layer::EncoderStates;
pub(crate) use layer::{AttentionBlockCache, FfnCache, LayerCache};

use crate::batch::{Batch, MaskMode};
use crate::config::{BertConfig, PositionEmbeddingType};
use crate::error::EngineError;
use crate::error::Result;
use crate::model::{BertForPreTraining, LayerNorm, Linear};
use crate::ops::attention::{Alibi, Attention, AttentionOptions, Heads, Softmax};
use crate::ops::dropout::Noise;
use crate::ops::layernorm::{self, LayerNormCache};
use crate::ops::loss;
use crate::ops::{gelu, linear, reuse, tanh};
use crate::rng::Rng;
use crate::trace::{AttentionTrace, HeadsTrace, LayerTrace, Matrix};
use embeddings::embeddings_forward;
use heads::{losses, mlm_rows};
use layer::{layer_forward, LayerSettings};
use ndarray::{s, Array1, Array2, ArrayView2, ArrayView3, ArrayViewMut3};
use serde::{Deserialize, Serialize};
use validate::{check_model, validate};

/// Where the MLM head runs. Training only needs the labelled positions (same loss and
/// gradients, a fraction of the V-wide decoder's FLOPs); inspection wants every position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MlmScope {
    AllPositions,
    LabelledOnly,
}

/// Plain data (serde), so that a training run's lead can send its options to the workers
/// computing shares of its steps.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForwardOptions {
    pub mask: MaskMode,
    /// Dropout on (rates from the config) when true; off for inspection and fixtures.
    pub train: bool,
    /// Record an `AttentionTrace` for batch row 0. Off in training: costs nothing then.
    pub trace: bool,
    pub mlm_scope: MlmScope,
    /// How softmax attention runs (`--attention full|tiled [--block N]`, `--window W`); a
    /// linear-attention model takes only the default.
    pub softmax: Softmax,
}

impl ForwardOptions {
    /// A training step: dropout on, no trace, MLM head on labelled rows only.
    pub fn training(mask: MaskMode) -> Self {
        ForwardOptions {
            mask,
            train: true,
            trace: false,
            mlm_scope: MlmScope::LabelledOnly,
            softmax: Softmax::default(),
        }
    }

    /// Inspection: no dropout, trace of row 0, MLM logits at every position.
    pub fn inspection(mask: MaskMode) -> Self {
        ForwardOptions {
            mask,
            train: false,
            trace: true,
            mlm_scope: MlmScope::AllPositions,
            softmax: Softmax::default(),
        }
    }
}

/// BertForPreTraining's loss: mean MLM cross-entropy over labelled positions plus mean NSP
/// cross-entropy over the batch. A data-parallel share's are its rows' part of the whole
/// batch's (every mean divided by the whole batch's `LossCounts`), so shares' `Losses` add.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Losses {
    pub total: f32,
    /// 0 when the batch has no MLM labels or none labelled (see `ops::loss::CrossEntropy`).
    pub mlm: f32,
    /// 0 when the batch has no NSP labels: the term is then absent from `total`.
    pub nsp: f32,
    /// Fraction of labelled positions whose argmax equals the label.
    pub mlm_accuracy: f32,
    /// Fraction of examples whose NSP argmax equals the label.
    pub nsp_accuracy: f32,
}

impl Losses {
    /// Field-wise sum: the whole batch's losses from its shares'.
    pub fn add(&mut self, other: &Losses) {
        self.total += other.total;
        self.mlm += other.mlm;
        self.nsp += other.nsp;
        self.mlm_accuracy += other.mlm_accuracy;
        self.nsp_accuracy += other.nsp_accuracy;
    }
}

/// The whole batch's loss denominators: its labelled MLM (or next-token) positions and its
/// NSP-labelled rows. Every share of a step divides by these, not by its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossCounts {
    pub mlm: usize,
    pub nsp: usize,
}

impl LossCounts {
    /// `batch`'s own counts.
    pub fn of(batch: &Batch) -> LossCounts {
        LossCounts {
            mlm: batch
                .mlm_labels
                .as_ref()
                .map_or(0, |l| loss::counted_rows(l.iter().copied())),
            nsp: batch.nsp_labels.as_ref().map_or(0, |l| l.len()),
        }
    }
}

/// What one forward draws and divides by: its dropout (`Noise`: which rows of the step's batch
/// it runs on) and the whole batch's loss denominators.
pub(crate) struct ForwardShare<'a> {
    pub(crate) noise: &'a mut Noise,
    pub(crate) counts: LossCounts,
}

impl<'a> ForwardShare<'a> {
    /// A forward over a whole batch (no shares): `batch`'s own counts.
    fn whole(noise: &'a mut Noise, batch: &Batch) -> Self {
        ForwardShare {
            noise,
            counts: LossCounts::of(batch),
        }
    }
}

/// The noise of a forward over a whole batch of `rows`: first row 0, its step seed drawn from
/// `rng` when `opts` trains (the generator untouched otherwise).
pub(crate) fn whole_batch_noise(rng: &mut Rng, opts: &ForwardOptions, rows: usize) -> Noise {
    let seed = if opts.train { rng.next_u64() } else { 0 };
    Noise::new(seed, 0, rows)
}

pub struct ForwardOutput {
    pub hidden: Array2<f32>,             // (N, C) last layer, N = B·T
    pub pooled: Option<Array2<f32>>,     // (B, C) when the model has a pooler
    pub mlm_logits: Option<Array2<f32>>, // (N, V) or (M, V) for MlmScope::LabelledOnly
    pub mlm_rows: Vec<usize>,            // which of the N rows `mlm_logits` holds
    pub nsp_logits: Option<Array2<f32>>, // (B, 2)
    pub losses: Option<Losses>,          // when the batch has labels and the model has heads
    pub trace: Option<AttentionTrace>,
    /// What `backward::backward` reads; opaque to everyone else.
    pub cache: ForwardCache,
}

/// Activations kept for backward, each noted with the op that reads it.
pub struct ForwardCache {
    pub(crate) embeddings: EmbeddingsCache,
    pub(crate) layers: Vec<LayerCache>,
    /// Every layer's attention settings (the dropout masks live in the caches).
    pub(crate) attention_opts: AttentionOptions,
    /// Rotary models: q and k were rotated before attention.
    pub(crate) rotary: bool,
    /// An encoder–decoder's decoder: its cross-attention's settings (every head its own K/V,
    /// the encoder's padding mask).
    pub(crate) cross_opts: Option<AttentionOptions>,
    /// The [CLS] rows (B, C), input of the pooler's dense.
    pub(crate) cls_rows: Option<Array2<f32>>,
    pub(crate) mlm_head: Option<MlmHeadCache>,
    /// logsumexp of each MLM / NSP logits row (M) / (B), present when that loss term is in
    /// `Losses::total`.
    pub(crate) mlm_log_sum_exp: Option<Array1<f32>>,
    pub(crate) nsp_log_sum_exp: Option<Array1<f32>>,
    /// The whole batch's counts the losses were divided by, and so their gradients.
    pub(crate) loss_counts: LossCounts,
    /// The pass ran under a `HeadMask`: an evaluation, which `backward` refuses.
    pub(crate) head_masked: bool,
}

/// The whole batch's pass. With `opts.train`, one step seed is drawn from `rng` for every
/// dropout of the pass (`ops::dropout::Noise`); otherwise `rng` is not drawn from. The losses
/// are means over the batch's own labels.
pub fn forward(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    rng: &mut Rng,
) -> Result<ForwardOutput> {
    forward_with_encoder(model, batch, opts, None, rng)
}

/// `forward` for a decoder with cross-attention (`add_cross_attention`), whose every layer
/// also reads `encoder`'s output; `encoder` must be given exactly for such a model.
pub fn forward_with_encoder(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    encoder: Option<&EncoderStates>,
    rng: &mut Rng,
) -> Result<ForwardOutput> {
    let mut noise = whole_batch_noise(rng, opts, batch.batch_size());
    let share = ForwardShare::whole(&mut noise, batch);
    run(model, batch, opts, encoder, share, Spare::default(), None)
}

/// `forward`, writing its activations and caches into the buffers of `spare`, an earlier
/// output that is done with (a training step's, for the next step): after the first step,
/// no buffer the size of an activation is allocated. The result is the same as `forward`'s.
/// `encoder`: as `forward_with_encoder`.
pub fn forward_reusing(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    encoder: Option<&EncoderStates>,
    rng: &mut Rng,
    spare: Option<ForwardOutput>,
) -> Result<ForwardOutput> {
    let mut noise = whole_batch_noise(rng, opts, batch.batch_size());
    let share = ForwardShare::whole(&mut noise, batch);
    forward_share(model, batch, opts, encoder, share, spare)
}

/// `forward_reusing` as one share of a step: dropout and loss denominators from `share`.
pub(crate) fn forward_share(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    encoder: Option<&EncoderStates>,
    share: ForwardShare,
    spare: Option<ForwardOutput>,
) -> Result<ForwardOutput> {
    let spare = spare.map(Spare::from).unwrap_or_default();
    run(model, batch, opts, encoder, share, spare, None)
}

/// The buffers of an earlier forward pass that the next one writes into (`ops::reuse`). The
/// small ones ((B, C) pooler rows, per-row losses) are not kept.
#[derive(Default)]
struct Spare {
    hidden: Array2<f32>,
    embeddings: EmbeddingsCache,
    layers: Vec<LayerCache>,
    mlm_head: MlmHeadCache,
    mlm_logits: Array2<f32>,
}

impl From<ForwardOutput> for Spare {
    fn from(out: ForwardOutput) -> Self {
        Spare {
            hidden: out.hidden,
            embeddings: out.cache.embeddings,
            layers: out.cache.layers,
            mlm_head: out.cache.mlm_head.unwrap_or_default(),
            mlm_logits: out.mlm_logits.unwrap_or_default(),
        }
    }
}

/// What every layer of one pass shares, from the model's config and the call's options:
/// checked, with the input, before anything of the input's size is allocated.
struct PassSettings {
    attention: AttentionOptions,
    /// q and k are rotated (rotary positions).
    rotary: bool,
    /// A decoder's cross-attention, given an encoder's output.
    cross: Option<AttentionOptions>,
    /// Dropout after each sublayer (0 outside training).
    hidden_dropout: f32,
}

fn pass_settings(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    encoder: Option<&EncoderStates>,
    head_mask: Option<&HeadMask>,
) -> Result<PassSettings> {
    check_model(model)?;
    validate(model, batch)?;
    if let Some(mask) = head_mask {
        mask.check(&model.config)?;
    }
    let cross = cross_options(model, batch, opts, encoder)?;
    let (attention, rotary) = attention_options(&model.config, opts)?;
    let (b_size, t) = (batch.batch_size(), batch.seq_len());
    let layer_count = model.bert.layers.len();
    attention.check_weight_bytes((layer_count, b_size, t, t), "this input")?;
    if let (Some(cross), Some(encoder)) = (&cross, encoder) {
        let source_len = encoder.mask.ncols(); // Ts
        cross.check_weight_bytes(
            (layer_count, b_size, t, source_len),
            "this input and its source",
        )?;
    }
    Ok(PassSettings {
        attention,
        rotary,
        cross,
        hidden_dropout: if opts.train {
            model.config.hidden_dropout_prob
        } else {
            0.0
        },
    })
}

/// The pass in the order of the module's formulas: embeddings, layers, pooler, heads, losses.
fn run(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    encoder: Option<&EncoderStates>,
    ForwardShare { noise, counts }: ForwardShare,
    spare: Spare,
    head_mask: Option<&HeadMask>,
) -> Result<ForwardOutput> {
    let settings = pass_settings(model, batch, opts, encoder, head_mask)?;
    let eps = model.config.layer_norm_eps;
    let t = batch.seq_len();
    let mut trace = opts.trace.then(AttentionTrace::default);

    let (hidden, embeddings) = embeddings_forward(
        &model.bert.embeddings,
        batch,
        eps,
        settings.hidden_dropout,
        noise,
        trace.as_mut(),
        (spare.hidden, spare.embeddings),
    );
    let layer_settings = LayerSettings {
        attention: &settings.attention,
        rotary: settings.rotary,
        cross: encoder.zip(settings.cross.as_ref()),
        eps,
        hidden_dropout: settings.hidden_dropout,
        head_factors: None,
    };
    let (hidden, layers) = layers_forward(
        model,
        (hidden, batch),
        layer_settings,
        head_mask,
        noise,
        trace.as_mut(),
        spare.layers,
    );

    // Pooler: tanh(dense(h_[CLS])), [CLS] = position 0 of each sequence.
    let (cls_rows, pooled) = match &model.bert.pooler {
        Some(pooler) => {
            let cls = hidden.slice(s![..;t, ..]).to_owned(); // (B, C)
            let pooled = tanh::forward(linear_forward(cls.view(), &pooler.dense).view());
            (Some(cls), Some(pooled))
        }
        None => (None, None),
    };
    let mlm_rows = mlm_rows(opts.mlm_scope, batch);
    let (mut mlm_logits, mut mlm_head, mut nsp_logits) = (None, None, None);
    if let Some(cls) = &model.cls {
        let (logits, head) = mlm_head_forward(
            model,
            &hidden,
            &mlm_rows,
            (spare.mlm_logits, spare.mlm_head),
        );
        (mlm_logits, mlm_head) = (Some(logits), Some(head));
        nsp_logits = pooled
            .as_ref()
            .zip(cls.seq_relationship.as_ref())
            .map(|(p, nsp)| linear_forward(p.view(), nsp));
    }
    if let Some(tr) = trace.as_mut() {
        tr.heads = heads_trace(
            pooled.as_ref(),
            nsp_logits.as_ref(),
            mlm_head.as_ref(),
            opts.mlm_scope,
            t,
        );
    }

    let (losses, mlm_log_sum_exp, nsp_log_sum_exp) = losses(
        batch,
        (mlm_logits.as_ref(), &mlm_rows),
        nsp_logits.as_ref(),
        counts,
    );
    let cache = ForwardCache {
        head_masked: head_mask.is_some(),
        embeddings,
        layers,
        attention_opts: settings.attention,
        rotary: settings.rotary,
        cross_opts: settings.cross,
        cls_rows,
        mlm_head,
        mlm_log_sum_exp,
        nsp_log_sum_exp,
        loss_counts: counts,
    };
    Ok(ForwardOutput {
        hidden,
        pooled,
        mlm_logits,
        mlm_rows,
        nsp_logits,
        losses,
        trace,
        cache,
    })
}

/// The layers in order from the embeddings' output `x`, each writing into its cache of `spare`
/// (an earlier pass's), each under its factors of `head_mask`. Returns the last one's output.
fn layers_forward(
    model: &BertForPreTraining,
    (mut x, batch): (Array2<f32>, &Batch), // x (N, C)
    settings: LayerSettings,
    head_mask: Option<&HeadMask>,
    noise: &mut Noise,
    mut trace: Option<&mut AttentionTrace>,
    spare: Vec<LayerCache>,
) -> (Array2<f32>, Vec<LayerCache>) {
    let mut layers = Vec::with_capacity(model.bert.layers.len());
    let mut spare_layers = spare.into_iter();
    for (index, layer) in model.bert.layers.iter().enumerate() {
        let settings = LayerSettings {
            head_factors: head_mask.map(|m| m.layer(index)),
            ..settings
        };
        let layer_trace = trace.as_deref_mut().map(|tr| {
            tr.layers.push(LayerTrace::default());
            tr.layers.last_mut().expect("just pushed")
        });
        let cache;
        (x, cache) = layer_forward(
            layer,
            x,
            batch,
            &settings,
            noise,
            layer_trace,
            spare_layers.next().unwrap_or_default(),
        );
        layers.push(cache);
    }
    (x, layers)
}

/// The traced sequence's (row 0's) pooled vector, NSP logits and softmax, and MLM transform.
/// The transform's first T rows are row 0's only when the head ran on every position.
fn heads_trace(
    pooled: Option<&Array2<f32>>,     // (B, C)
    nsp_logits: Option<&Array2<f32>>, // (B, 2)
    mlm_head: Option<&MlmHeadCache>,
    scope: MlmScope,
    t: usize,
) -> HeadsTrace {
    let nsp = nsp_logits.map(|l| [l[[0, 0]], l[[0, 1]]]);
    HeadsTrace {
        pooled: pooled.map(|p| Matrix::from_view(p.slice(s![..1, ..]))),
        nsp_logits: nsp,
        // softmax([a, b]) = [1/(1 + e^(b − a)), 1/(1 + e^(a − b))]
        nsp_probabilities: nsp.map(|[a, b]| {
            let p = 1.0 / (1.0 + (b - a).exp());
            [p, 1.0 - p]
        }),
        mlm_transform: mlm_head
            .filter(|_| scope == MlmScope::AllPositions)
            .map(|h| Matrix::from_view(h.transformed.slice(s![..t, ..]))),
    }
}

/// Every layer's attention settings, from the model's config and the call's options, and
/// whether q and k are rotated (rotary positions); errors for settings that make no sense.
pub fn attention_options(
    config: &BertConfig,
    opts: &ForwardOptions,
) -> Result<(AttentionOptions, bool)> {
    let rotary = config.position_embedding_type == PositionEmbeddingType::Rotary;
    let attention_opts = AttentionOptions {
        heads: Heads::new(config.num_attention_heads, config.num_kv_heads())?,
        // A decoder's self-attention is causal whatever the call asks (HF's `is_decoder`).
        mask: if config.is_decoder {
            MaskMode::Causal
        } else {
            opts.mask
        },
        scale: config.attention_scaling.factor(config.head_size()),
        dropout: if opts.train {
            config.attention_probs_dropout_prob
        } else {
            0.0
        },
        attention: config.attention_type.with(opts.softmax)?,
        alibi: (config.position_embedding_type == PositionEmbeddingType::Alibi)
            .then(Alibi::default),
    };
    attention_opts.validate()?;
    if rotary && !config.head_size().is_multiple_of(2) {
        return Err(EngineError::Config(format!(
            "rotary positions turn pairs of features: the head size {} must be even",
            config.head_size()
        )));
    }
    Ok((attention_opts, rotary))
}

/// A decoder's cross-attention settings, when it has cross-attention and an encoder's output
/// of the batch's size to read; an error when one is given without the other.
fn cross_options(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    encoder: Option<&EncoderStates>,
) -> Result<Option<AttentionOptions>> {
    let config = &model.config;
    let bad = |m: String| Err(EngineError::Input(m));
    let Some(encoder) = encoder else {
        return match config.add_cross_attention {
            true => bad("this decoder has cross-attention (add_cross_attention): it needs an encoder's output".into()),
            false => Ok(None),
        };
    };
    if !config.add_cross_attention {
        return bad("an encoder's output was given to a model without cross-attention".into());
    }
    let (b, ts) = encoder.mask.dim();
    if b != batch.batch_size() || encoder.hidden.dim() != (b * ts, config.hidden_size) {
        return bad(format!(
            "the encoder's output is {:?} for {b} × {ts} source tokens; the decoder needs {} rows of {} values",
            encoder.hidden.dim(),
            batch.batch_size() * ts,
            config.hidden_size
        ));
    }
    let (self_opts, _) = attention_options(config, opts)?;
    Ok(Some(cross_attention_options(&self_opts)))
}

/// A decoder layer's cross-attention, from its self-attention's settings: plain multi-head
/// softmax over every real source token (an encoder–decoder's decoder is a BERT), with the
/// same scale and dropout, and no ALiBi (target and source positions are not one sequence).
pub(crate) fn cross_attention_options(self_opts: &AttentionOptions) -> AttentionOptions {
    AttentionOptions {
        heads: self_opts.heads.multi_head(),
        mask: MaskMode::Padding,
        attention: Attention::default(),
        alibi: None,
        ..*self_opts
    }
}

pub(crate) fn linear_forward(x: ArrayView2<f32>, l: &Linear) -> Array2<f32> {
    linear_reusing(x, l, Default::default())
}

/// `linear_forward` into `spare`'s storage (`ops::reuse`).
pub(crate) fn linear_reusing(x: ArrayView2<f32>, l: &Linear, spare: Array2<f32>) -> Array2<f32> {
    let mut out = reuse(spare, (x.nrows(), l.weight.nrows()));
    linear::forward_into(x, l.weight.view(), l.bias.view(), &mut out.view_mut());
    out
}

pub(crate) fn ln_forward(
    x: ArrayView2<f32>,
    ln: &LayerNorm,
    eps: f64,
) -> (Array2<f32>, LayerNormCache) {
    ln_reusing(x, ln, eps, Default::default())
}

/// `ln_forward` into the storage of `spare`, an earlier output and cache (`ops::reuse`).
pub(crate) fn ln_reusing(
    x: ArrayView2<f32>,
    ln: &LayerNorm,
    eps: f64,
    (spare, mut cache): (Array2<f32>, LayerNormCache),
) -> (Array2<f32>, LayerNormCache) {
    let mut out = reuse(spare, x.raw_dim());
    let (gamma, beta) = (ln.weight.view(), ln.bias.view());
    layernorm::forward_into(x, gamma, beta, eps, &mut out.view_mut(), &mut cache);
    (out, cache)
}

/// GELU into `spare`'s storage (`ops::reuse`).
pub(crate) fn gelu_reusing(x: ArrayView2<f32>, spare: Array2<f32>) -> Array2<f32> {
    let mut out = reuse(spare, x.raw_dim());
    gelu::forward_into(x, &mut out.view_mut());
    out
}

/// (N, C) rows seen as (B, T, C) sequences.
pub(crate) fn as_sequences(a: &Array2<f32>, b_size: usize, t: usize) -> ArrayView3<'_, f32> {
    a.view()
        .into_shape_with_order((b_size, t, a.ncols()))
        .expect("N = B·T rows")
}

pub(crate) fn as_sequences_mut(
    a: &mut Array2<f32>,
    b_size: usize,
    t: usize,
) -> ArrayViewMut3<'_, f32> {
    let c = a.ncols();
    a.view_mut()
        .into_shape_with_order((b_size, t, c))
        .expect("N = B·T rows")
}

/// HF's `head_mask` (`BertModel.forward(head_mask=…)`): one factor per layer and head, by
/// which that head's attention weights are multiplied. 0 removes the head: its context is
/// zero, and W_O sees only the other heads (Michel et al. 2019's ablation). A pass under a
/// mask is an evaluation: `backward` refuses its output.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadMask {
    heads: usize,
    factors: Vec<f32>, // (L, H)
}

impl HeadMask {
    /// Every head kept (factor 1).
    pub fn keep_all(layers: usize, heads: usize) -> HeadMask {
        HeadMask {
            heads,
            factors: vec![1.0; layers * heads],
        }
    }

    /// Every head kept but `head` of `layer`, whose context is zero.
    pub fn without(layers: usize, heads: usize, layer: usize, head: usize) -> HeadMask {
        let mut mask = HeadMask::keep_all(layers, heads);
        if let Some(f) = mask.factors.get_mut(layer * heads + head) {
            *f = 0.0;
        }
        mask
    }

    /// Layer `layer`'s factors (H).
    pub(crate) fn layer(&self, layer: usize) -> &[f32] {
        &self.factors[layer * self.heads..(layer + 1) * self.heads]
    }

    /// (L, H)
    pub fn shape(&self) -> (usize, usize) {
        (self.factors.len() / self.heads.max(1), self.heads)
    }

    fn check(&self, config: &BertConfig) -> Result<()> {
        let wanted = (config.num_hidden_layers, config.num_attention_heads);
        if self.shape() != wanted || self.heads == 0 {
            return Err(EngineError::Input(format!(
                "the head mask is {:?} (layers, heads); this model has {wanted:?}",
                self.shape()
            )));
        }
        Ok(())
    }
}

/// `forward` with each head's attention weights multiplied by its factor in `head_mask`
/// (HF's `head_mask`): an evaluation pass, whose output `backward` refuses.
pub fn forward_with_head_mask(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    head_mask: &HeadMask,
    rng: &mut Rng,
) -> Result<ForwardOutput> {
    let mut noise = whole_batch_noise(rng, opts, batch.batch_size());
    let share = ForwardShare::whole(&mut noise, batch);
    run(
        model,
        batch,
        opts,
        None,
        share,
        Spare::default(),
        Some(head_mask),
    )
}
