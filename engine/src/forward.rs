//! The forward pass of `BertForPreTraining`, with an optional attention trace and the losses.
//! Post-LN BERT as HF `transformers` computes it (eager attention):
//!
//! embeddings: x = dropout(LN(word[ids] + position[t] + token_type[tt]))
//! each layer: a = LN(dropout(attention(x)·W_Oᵀ + b_O) + x)
//!             x = LN(dropout(GELU(a·W_Iᵀ + b_I)·W_2ᵀ + b_2) + a)
//! pooler:     tanh(dense(x[CLS]));  MLM: LN(GELU(dense(x)))·word_embeddingsᵀ + bias;  NSP: dense(pooled)

use crate::batch::{Batch, MaskMode, IGNORE_INDEX};
use crate::error::{EngineError, Result};
use crate::model::{BertEmbeddings, BertForPreTraining, BertLayer, LayerNorm, Linear};
use crate::ops::attention::{self, AttentionCache, AttentionOptions};
use crate::ops::layernorm::{self, LayerNormCache};
use crate::ops::loss;
use crate::ops::{dropout, embedding, gelu, linear, tanh};
use crate::rng::Rng;
use crate::trace::{AttentionTrace, LayerTrace, Matrix};
use ndarray::{s, Array1, Array2, ArrayView2, ArrayView3, ArrayViewMut3, Axis};

/// Where the MLM head runs. Training only needs the labelled positions (same loss and
/// gradients, a fraction of the V-wide decoder's FLOPs); inspection wants every position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlmScope {
    AllPositions,
    LabelledOnly,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForwardOptions {
    pub mask: MaskMode,
    /// Dropout on (rates from the config) when true; off for inspection and fixtures.
    pub train: bool,
    /// Record an `AttentionTrace` for batch row 0. Off in training: costs nothing then.
    pub trace: bool,
    pub mlm_scope: MlmScope,
}

impl ForwardOptions {
    /// A training step: dropout on, no trace, MLM head on labelled rows only.
    pub fn training(mask: MaskMode) -> Self {
        ForwardOptions {
            mask,
            train: true,
            trace: false,
            mlm_scope: MlmScope::LabelledOnly,
        }
    }

    /// Inspection: no dropout, trace of row 0, MLM logits at every position.
    pub fn inspection(mask: MaskMode) -> Self {
        ForwardOptions {
            mask,
            train: false,
            trace: true,
            mlm_scope: MlmScope::AllPositions,
        }
    }
}

/// BertForPreTraining's loss: mean MLM cross-entropy over labelled positions plus mean NSP
/// cross-entropy over the batch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
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
    /// Heads and scale of every layer's attention (mask and dropout live in the caches).
    pub(crate) attention_opts: AttentionOptions,
    /// The [CLS] rows (B, C), input of the pooler's dense.
    pub(crate) cls_rows: Option<Array2<f32>>,
    pub(crate) mlm_head: Option<MlmHeadCache>,
    /// logsumexp of each MLM / NSP logits row (M) / (B), present when that loss term is in
    /// `Losses::total`.
    pub(crate) mlm_log_sum_exp: Option<Array1<f32>>,
    pub(crate) nsp_log_sum_exp: Option<Array1<f32>>,
}

pub(crate) struct EmbeddingsCache {
    pub(crate) sum: Array2<f32>, // (N, C) word + position + token type, LN input
    pub(crate) ln: LayerNormCache,
    pub(crate) dropout: Option<Array2<f32>>, // (N, C)
}

pub(crate) struct LayerCache {
    pub(crate) input: Array2<f32>,        // (N, C) X: Q/K/V input, residual
    pub(crate) q: Array2<f32>,            // (N, C)
    pub(crate) k: Array2<f32>,            // (N, C)
    pub(crate) v: Array2<f32>,            // (N, C)
    pub(crate) attention: AttentionCache, // weights (B, H, T, T), dropout mask
    pub(crate) context: Array2<f32>,      // (N, C) merged heads, W_O input
    pub(crate) attention_dropout: Option<Array2<f32>>, // (N, C)
    pub(crate) attention_sum: Array2<f32>, // (N, C) LN input
    pub(crate) attention_ln: LayerNormCache,
    pub(crate) attention_out: Array2<f32>, // (N, C) LN output: W_I input, residual
    pub(crate) intermediate_pre: Array2<f32>, // (N, I) GELU input
    pub(crate) intermediate: Array2<f32>,  // (N, I) GELU output, W_2 input
    pub(crate) output_dropout: Option<Array2<f32>>, // (N, C)
    pub(crate) output_sum: Array2<f32>,    // (N, C) LN input
    pub(crate) output_ln: LayerNormCache,
}

pub(crate) struct MlmHeadCache {
    pub(crate) input: Array2<f32>, // (M, C) hidden rows `mlm_rows`, dense input
    pub(crate) dense_out: Array2<f32>, // (M, C) GELU input
    pub(crate) activated: Array2<f32>, // (M, C) GELU output, LN input
    pub(crate) ln: LayerNormCache,
    pub(crate) transformed: Array2<f32>, // (M, C) LN output, decoder input
}

pub fn forward(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    rng: &mut Rng,
) -> Result<ForwardOutput> {
    check_model(model)?;
    validate(model, batch)?;
    let config = &model.config;
    let (b_size, t) = (batch.batch_size(), batch.seq_len());
    let hidden_p = if opts.train {
        config.hidden_dropout_prob
    } else {
        0.0
    };
    let mut trace = opts.trace.then(AttentionTrace::default);

    let (mut hidden, embeddings) = embeddings_forward(
        &model.bert.embeddings,
        batch,
        config.layer_norm_eps,
        hidden_p,
        rng,
        trace.as_mut(),
    );
    let attention_opts = AttentionOptions {
        num_heads: config.num_attention_heads,
        mask: opts.mask,
        scale: 1.0 / (config.head_size() as f32).sqrt(),
        dropout: if opts.train {
            config.attention_probs_dropout_prob
        } else {
            0.0
        },
    };
    let mut layers = Vec::with_capacity(model.bert.layers.len());
    for layer in &model.bert.layers {
        let layer_trace = trace.as_mut().map(|tr| {
            tr.layers.push(LayerTrace::default());
            tr.layers.last_mut().expect("just pushed")
        });
        let cache;
        (hidden, cache) = layer_forward(
            layer,
            hidden,
            batch,
            &attention_opts,
            config.layer_norm_eps,
            hidden_p,
            rng,
            layer_trace,
        );
        layers.push(cache);
    }

    // Pooler: tanh(dense(h_[CLS])), [CLS] = position 0 of each sequence.
    let (cls_rows, pooled) = match &model.bert.pooler {
        Some(pooler) => {
            let cls = hidden.slice(s![..;t, ..]).to_owned(); // (B, C)
            let pooled = tanh::forward(linear_forward(cls.view(), &pooler.dense).view());
            (Some(cls), Some(pooled))
        }
        None => (None, None),
    };

    let mlm_rows: Vec<usize> = match (opts.mlm_scope, &batch.mlm_labels) {
        (MlmScope::AllPositions, _) => (0..b_size * t).collect(),
        (MlmScope::LabelledOnly, Some(labels)) => labels
            .iter()
            .enumerate()
            .filter(|(_, &l)| l != IGNORE_INDEX)
            .map(|(n, _)| n)
            .collect(),
        (MlmScope::LabelledOnly, None) => Vec::new(),
    };
    let (mut mlm_logits, mut mlm_head, mut nsp_logits) = (None, None, None);
    if let Some(cls) = &model.cls {
        let (logits, head) = mlm_head_forward(model, &hidden, &mlm_rows);
        (mlm_logits, mlm_head) = (Some(logits), Some(head));
        nsp_logits = pooled
            .as_ref()
            .map(|p| linear_forward(p.view(), &cls.seq_relationship));
    }

    // Losses, from whichever labels the batch has and heads the model has.
    let mlm_ce = mlm_logits
        .as_ref()
        .zip(batch.mlm_labels.as_ref())
        .map(|(logits, labels)| {
            let targets = mlm_targets(labels, &mlm_rows);
            loss::forward(logits.view(), &targets)
        });
    let nsp_ce = nsp_logits
        .as_ref()
        .zip(batch.nsp_labels.as_ref())
        .map(|(logits, labels)| {
            let targets: Vec<i64> = labels.iter().map(|&l| l as i64).collect();
            loss::forward(logits.view(), &targets)
        });
    let losses = (mlm_ce.is_some() || nsp_ce.is_some()).then(|| {
        let mlm = mlm_ce.as_ref().map(|(ce, _)| *ce).unwrap_or_default();
        let nsp = nsp_ce.as_ref().map(|(ce, _)| *ce).unwrap_or_default();
        Losses {
            total: mlm.loss + nsp.loss,
            mlm: mlm.loss,
            nsp: nsp.loss,
            mlm_accuracy: mlm.accuracy(),
            nsp_accuracy: nsp.accuracy(),
        }
    });

    let cache = ForwardCache {
        embeddings,
        layers,
        attention_opts,
        cls_rows,
        mlm_head,
        mlm_log_sum_exp: mlm_ce.map(|(_, lse)| lse),
        nsp_log_sum_exp: nsp_ce.map(|(_, lse)| lse),
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

/// Labels of the rows the MLM head ran on (IGNORE_INDEX where unlabelled).
pub(crate) fn mlm_targets(labels: &Array2<i64>, rows: &[usize]) -> Vec<i64> {
    let t = labels.ncols();
    rows.iter().map(|&n| labels[[n / t, n % t]]).collect()
}

/// Every parameter must have the shape its config implies (a hand-edited config next to
/// other weights would otherwise surface as an ndarray panic deep in a matmul).
fn check_model(model: &BertForPreTraining) -> Result<()> {
    let c = &model.config;
    let (v, h, i) = (c.vocab_size, c.hidden_size, c.intermediate_size);
    if model.bert.layers.len() != c.num_hidden_layers {
        return Err(EngineError::Config(format!(
            "num_hidden_layers is {} but the model has {} layers",
            c.num_hidden_layers,
            model.bert.layers.len()
        )));
    }
    for (name, p) in model.named_params() {
        let is_bias = name.ends_with(".bias");
        let want: Vec<usize> = match name.as_str() {
            "bert.embeddings.word_embeddings.weight" => vec![v, h],
            "bert.embeddings.position_embeddings.weight" => vec![c.max_position_embeddings, h],
            "bert.embeddings.token_type_embeddings.weight" => vec![c.type_vocab_size, h],
            "cls.predictions.bias" => vec![v],
            n if n.contains("LayerNorm") => vec![h],
            n if n.starts_with("cls.seq_relationship") => {
                if is_bias {
                    vec![2]
                } else {
                    vec![2, h]
                }
            }
            n if n.contains(".intermediate.dense") => {
                if is_bias {
                    vec![i]
                } else {
                    vec![i, h]
                }
            }
            n if n.contains(".output.dense") && !n.contains(".attention.") => {
                if is_bias {
                    vec![h]
                } else {
                    vec![h, i]
                }
            }
            _ => {
                if is_bias {
                    vec![h]
                } else {
                    vec![h, h]
                }
            }
        };
        if p.shape() != want.as_slice() {
            return Err(EngineError::Config(format!(
                "{name} has shape {:?} but the config implies {want:?}",
                p.shape()
            )));
        }
    }
    Ok(())
}

/// A batch a user (or a data pipeline) built is checked before any indexing.
fn validate(model: &BertForPreTraining, batch: &Batch) -> Result<()> {
    let config = &model.config;
    let err = |m: String| Err(EngineError::Input(m));
    let (b_size, t) = batch.input_ids.dim();
    if b_size == 0 || t == 0 {
        return err(format!("empty batch ({b_size} sequences of {t} tokens)"));
    }
    if batch.token_type_ids.dim() != (b_size, t) || batch.attention_mask.dim() != (b_size, t) {
        return err(format!(
            "input_ids is {b_size}×{t} but token_type_ids is {:?} and attention_mask {:?}",
            batch.token_type_ids.dim(),
            batch.attention_mask.dim()
        ));
    }
    if let Some(labels) = &batch.mlm_labels {
        if labels.dim() != (b_size, t) {
            return err(format!(
                "input_ids is {b_size}×{t} but mlm_labels is {:?}",
                labels.dim()
            ));
        }
        if let Some(&bad) = labels
            .iter()
            .find(|&&l| l != IGNORE_INDEX && !(0..config.vocab_size as i64).contains(&l))
        {
            return err(format!(
                "MLM label {bad} is neither {IGNORE_INDEX} nor a token id below {}",
                config.vocab_size
            ));
        }
    }
    if let Some(labels) = &batch.nsp_labels {
        if labels.len() != b_size {
            return err(format!(
                "{b_size} sequences but {} NSP labels",
                labels.len()
            ));
        }
        if let Some(&bad) = labels.iter().find(|&&l| l > 1) {
            return err(format!("NSP label {bad} is not 0 (IsNext) or 1 (NotNext)"));
        }
    }
    if t > config.max_position_embeddings {
        return err(format!(
            "sequence length {t} exceeds max_position_embeddings {}",
            config.max_position_embeddings
        ));
    }
    if let Some(&bad) = batch
        .input_ids
        .iter()
        .find(|&&id| id as usize >= config.vocab_size)
    {
        return err(format!(
            "token id {bad} is outside the vocabulary of {}",
            config.vocab_size
        ));
    }
    if let Some(&bad) = batch
        .token_type_ids
        .iter()
        .find(|&&tt| tt as usize >= config.type_vocab_size)
    {
        return err(format!(
            "token type {bad} is not below type_vocab_size {}",
            config.type_vocab_size
        ));
    }
    Ok(())
}

pub(crate) fn linear_forward(x: ArrayView2<f32>, l: &Linear) -> Array2<f32> {
    linear::forward(x, l.weight.view(), l.bias.view())
}

pub(crate) fn ln_forward(
    x: ArrayView2<f32>,
    ln: &LayerNorm,
    eps: f64,
) -> (Array2<f32>, LayerNormCache) {
    layernorm::forward(x, ln.weight.view(), ln.bias.view(), eps)
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

/// Position ids 0..T for each of the B sequences, row-major like the batch.
pub(crate) fn position_ids(b_size: usize, t: usize) -> impl Iterator<Item = usize> {
    (0..b_size).flat_map(move |_| 0..t)
}

fn embeddings_forward(
    emb: &BertEmbeddings,
    batch: &Batch,
    eps: f64,
    hidden_p: f32,
    rng: &mut Rng,
    trace: Option<&mut AttentionTrace>,
) -> (Array2<f32>, EmbeddingsCache) {
    let (b_size, t) = batch.input_ids.dim();
    let mut sum = Array2::zeros((b_size * t, emb.word_embeddings.ncols())); // (N, C)
    embedding::forward_add(
        &mut sum.view_mut(),
        batch.input_ids.iter().map(|&id| id as usize),
        emb.word_embeddings.view(),
    );
    embedding::forward_add(
        &mut sum.view_mut(),
        position_ids(b_size, t),
        emb.position_embeddings.view(),
    );
    embedding::forward_add(
        &mut sum.view_mut(),
        batch.token_type_ids.iter().map(|&tt| tt as usize),
        emb.token_type_embeddings.view(),
    );
    let (mut x, ln) = ln_forward(sum.view(), &emb.layer_norm, eps);
    if let Some(tr) = trace {
        tr.embeddings = Matrix::from_view(x.slice(s![..t, ..]));
    }
    let dropout = dropout::forward(&mut x, hidden_p, rng);
    (x, EmbeddingsCache { sum, ln, dropout })
}

#[allow(clippy::too_many_arguments)]
fn layer_forward(
    layer: &BertLayer,
    x: Array2<f32>, // (N, C)
    batch: &Batch,
    attention_opts: &AttentionOptions,
    eps: f64,
    hidden_p: f32,
    rng: &mut Rng,
    mut trace: Option<&mut LayerTrace>,
) -> (Array2<f32>, LayerCache) {
    let (b_size, t) = batch.input_ids.dim();
    let c = x.ncols();
    let sa = &layer.attention.self_attention;
    let (q, k, v) = (
        linear_forward(x.view(), &sa.query),
        linear_forward(x.view(), &sa.key),
        linear_forward(x.view(), &sa.value),
    );
    let as3 = |a| as_sequences(a, b_size, t);
    let (context, attention) = attention::forward(
        as3(&q),
        as3(&k),
        as3(&v),
        batch.attention_mask.view(),
        attention_opts,
        rng,
        trace.as_deref_mut().map(|tr| &mut tr.heads),
    );
    let context = context
        .into_shape_with_order((b_size * t, c))
        .expect("contiguous (B, T, C)");

    let mut attention_sum = linear_forward(context.view(), &layer.attention.output.dense);
    if let Some(tr) = trace.as_deref_mut() {
        tr.input = Matrix::from_view(x.slice(s![..t, ..]));
        tr.context = Matrix::from_view(context.slice(s![..t, ..]));
        tr.attention_output = Matrix::from_view(attention_sum.slice(s![..t, ..]));
    }
    let attention_dropout = dropout::forward(&mut attention_sum, hidden_p, rng);
    attention_sum += &x;
    let (attention_out, attention_ln) = ln_forward(
        attention_sum.view(),
        &layer.attention.output.layer_norm,
        eps,
    );

    let intermediate_pre = linear_forward(attention_out.view(), &layer.intermediate.dense);
    let intermediate = gelu::forward(intermediate_pre.view());
    let mut output_sum = linear_forward(intermediate.view(), &layer.output.dense);
    let output_dropout = dropout::forward(&mut output_sum, hidden_p, rng);
    output_sum += &attention_out;
    let (out, output_ln) = ln_forward(output_sum.view(), &layer.output.layer_norm, eps);
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
        intermediate_pre,
        intermediate,
        output_dropout,
        output_sum,
        output_ln,
    };
    (out, cache)
}

/// logits (M, V) = LN(GELU(h·W_tᵀ + b_t))·word_embeddingsᵀ + bias over the rows `rows`.
fn mlm_head_forward(
    model: &BertForPreTraining,
    hidden: &Array2<f32>,
    rows: &[usize],
) -> (Array2<f32>, MlmHeadCache) {
    let cls = model.cls.as_ref().expect("called with heads");
    let transform = &cls.predictions.transform;
    let input = hidden.select(Axis(0), rows); // (M, C)
    let dense_out = linear_forward(input.view(), &transform.dense);
    let activated = gelu::forward(dense_out.view());
    let (transformed, ln) = ln_forward(
        activated.view(),
        &transform.layer_norm,
        model.config.layer_norm_eps,
    );
    let logits = linear::forward(
        transformed.view(),
        model.bert.embeddings.word_embeddings.view(),
        cls.predictions.bias.view(),
    );
    (
        logits,
        MlmHeadCache {
            input,
            dense_out,
            activated,
            ln,
            transformed,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BertConfig;
    use ndarray::{array, Array1};

    fn model() -> BertForPreTraining {
        let mut config = BertConfig::new(40, 16, 2, 4, 32);
        config.max_position_embeddings = 12;
        config.initializer_range = 0.4;
        config.hidden_dropout_prob = 0.2;
        config.attention_probs_dropout_prob = 0.2;
        BertForPreTraining::init(&config, &mut Rng::new(5))
    }

    /// Two sequences of 6, the second with 2 pads; MLM labels at 3 positions, NSP labels.
    fn batch() -> Batch {
        let input_ids = array![[2u32, 9, 4, 17, 3, 22], [2, 5, 30, 3, 0, 0]];
        let attention_mask = input_ids.mapv(|id| u8::from(id != 0));
        let i = IGNORE_INDEX;
        Batch {
            token_type_ids: array![[0u32, 0, 0, 0, 0, 1], [0, 0, 1, 1, 0, 0]],
            input_ids,
            attention_mask,
            mlm_labels: Some(array![[i, 12, i, i, i, 7], [i, i, 30, i, i, i]]),
            nsp_labels: Some(Array1::from(vec![1, 0])),
        }
    }

    fn eval(mask: MaskMode) -> ForwardOptions {
        ForwardOptions {
            mask,
            train: false,
            trace: false,
            mlm_scope: MlmScope::AllPositions,
        }
    }

    fn run(
        model: &BertForPreTraining,
        batch: &Batch,
        opts: ForwardOptions,
        seed: u64,
    ) -> ForwardOutput {
        forward(model, batch, &opts, &mut Rng::new(seed)).unwrap()
    }

    #[test]
    fn outputs_have_the_documented_shapes_and_losses() {
        let out = run(&model(), &batch(), eval(MaskMode::Padding), 0);
        assert_eq!(out.hidden.dim(), (12, 16));
        assert_eq!(out.pooled.as_ref().unwrap().dim(), (2, 16));
        assert_eq!(out.mlm_logits.as_ref().unwrap().dim(), (12, 40));
        assert_eq!(out.mlm_rows, (0..12).collect::<Vec<_>>());
        assert_eq!(out.nsp_logits.as_ref().unwrap().dim(), (2, 2));
        let l = out.losses.unwrap();
        assert!(l.mlm > 0.0 && l.nsp > 0.0 && (l.total - l.mlm - l.nsp).abs() < 1e-6);
        assert!(
            out.pooled.unwrap().iter().all(|x| x.abs() < 1.0),
            "tanh range"
        );
        let labelled = run(
            &model(),
            &batch(),
            ForwardOptions {
                mlm_scope: MlmScope::LabelledOnly,
                ..eval(MaskMode::Padding)
            },
            0,
        );
        assert_eq!(labelled.mlm_rows, vec![1, 5, 8]);
        assert_eq!(
            labelled.mlm_logits.unwrap().row(2),
            out.mlm_logits.unwrap().row(8)
        );
    }

    #[test]
    fn trace_matches_the_forward_and_its_own_definitions() {
        let (model, batch) = (model(), batch());
        let traced = run(
            &model,
            &batch,
            ForwardOptions {
                trace: true,
                ..eval(MaskMode::Padding)
            },
            0,
        );
        let tr = traced.trace.as_ref().unwrap();
        assert_eq!((tr.layers.len(), tr.layers[0].heads.len()), (2, 4));
        assert_eq!(
            tr.layers[1].output.data,
            traced
                .hidden
                .slice(s![..6, ..])
                .iter()
                .copied()
                .collect::<Vec<_>>()
        );
        assert_eq!(tr.layers[1].input, tr.layers[0].output);
        assert_eq!(tr.embeddings, tr.layers[0].input);
        let d = 4;
        for layer in &tr.layers {
            for (h, head) in layer.heads.iter().enumerate() {
                assert_eq!(
                    (head.q.rows, head.q.cols, head.scores.rows, head.scores.cols),
                    (6, d, 6, 6)
                );
                for i in 0..6 {
                    assert!((head.weights.row(i).iter().sum::<f32>() - 1.0).abs() < 1e-6);
                    for j in 0..6 {
                        let scaled = head.scores.get(i, j) / (d as f32).sqrt();
                        assert!((head.scaled.get(i, j) - scaled).abs() < 1e-6);
                        assert_eq!(
                            head.masked.get(i, j),
                            head.scaled.get(i, j) + head.mask.get(i, j)
                        );
                    }
                    for c in 0..d {
                        let ctx: f32 = (0..6)
                            .map(|j| head.weights.get(i, j) * head.v.get(j, c))
                            .sum();
                        assert!((head.context.get(i, c) - ctx).abs() < 1e-5);
                        assert_eq!(layer.context.get(i, h * d + c), head.context.get(i, c));
                    }
                }
            }
        }
        // Row 0 has no padding: M is all 0 there.
        assert!(tr.layers[0].heads[0].mask.data.iter().all(|&m| m == 0.0));
        // Trace off changes nothing but the trace.
        let plain = run(&model, &batch, eval(MaskMode::Padding), 0);
        assert!(plain.trace.is_none());
        assert_eq!(plain.hidden, traced.hidden);
        assert_eq!(plain.mlm_logits, traced.mlm_logits);
        assert_eq!(plain.losses, traced.losses);
    }

    #[test]
    fn causal_trace_has_an_exactly_zero_upper_triangle_and_padding_a_minus_infinity_mask() {
        let mut b = batch();
        b.input_ids.swap([0, 0], [1, 0]); // make row 0 the padded one
        b.input_ids.row_mut(0).assign(&array![2, 5, 30, 3, 0, 0]);
        b.attention_mask = b.input_ids.mapv(|id| u8::from(id != 0));
        let out = run(
            &model(),
            &b,
            ForwardOptions {
                trace: true,
                ..eval(MaskMode::Causal)
            },
            0,
        );
        for head in out.trace.unwrap().layers.iter().flat_map(|l| &l.heads) {
            for i in 0..6 {
                for j in 0..6 {
                    let allowed = j <= i && j < 4;
                    assert_eq!(head.weights.get(i, j) == 0.0, !allowed, "i{i} j{j}");
                    assert_eq!(
                        head.mask.get(i, j),
                        if allowed { 0.0 } else { f32::NEG_INFINITY }
                    );
                }
            }
        }
    }

    #[test]
    fn padding_does_not_change_real_positions() {
        let model = model();
        for mode in [MaskMode::Padding, MaskMode::Causal] {
            let short = Batch {
                input_ids: array![[2u32, 9, 4, 17, 3]],
                token_type_ids: array![[0u32, 0, 0, 1, 1]],
                attention_mask: Array2::ones((1, 5)),
                mlm_labels: None,
                nsp_labels: None,
            };
            let mut long = short.clone();
            long.input_ids = array![[2u32, 9, 4, 17, 3, 0, 0, 0]];
            long.token_type_ids = array![[0u32, 0, 0, 1, 1, 0, 0, 0]];
            long.attention_mask = array![[1u8, 1, 1, 1, 1, 0, 0, 0]];
            let (a, b) = (
                run(&model, &short, eval(mode), 0),
                run(&model, &long, eval(mode), 0),
            );
            let diff = (&a.hidden - &b.hidden.slice(s![..5, ..]))
                .mapv(f32::abs)
                .fold(0.0f32, |m, &x| m.max(x));
            assert!(diff < 1e-5, "{mode:?}: {diff}");
            let pooled_diff = (a.pooled.unwrap() - b.pooled.unwrap()).mapv(f32::abs).sum();
            assert!(pooled_diff < 1e-5, "{mode:?}");
        }
        // Without a mask the pads are attended to: the check above is not vacuous.
        let (none, padding) = (
            run(&model, &batch(), eval(MaskMode::None), 0),
            run(&model, &batch(), eval(MaskMode::Padding), 0),
        );
        assert_eq!(none.hidden.row(0), padding.hidden.row(0)); // row 0 has no padding
        assert_ne!(none.hidden.row(6), padding.hidden.row(6));
    }

    #[test]
    fn training_mode_is_deterministic_per_seed_and_drops_out() {
        let (model, batch) = (model(), batch());
        let train = ForwardOptions {
            train: true,
            ..eval(MaskMode::Padding)
        };
        let (a, b, c) = (
            run(&model, &batch, train, 3),
            run(&model, &batch, train, 3),
            run(&model, &batch, train, 4),
        );
        assert_eq!(a.hidden, b.hidden);
        assert_eq!(a.losses, b.losses);
        assert_ne!(a.hidden, c.hidden);
        assert_ne!(
            a.hidden,
            run(&model, &batch, eval(MaskMode::Padding), 3).hidden
        );
        // Evaluation ignores the seed.
        assert_eq!(
            run(&model, &batch, eval(MaskMode::Padding), 1).hidden,
            run(&model, &batch, eval(MaskMode::Padding), 2).hidden
        );
    }

    #[test]
    fn no_labelled_position_gives_zero_mlm_loss_not_nan() {
        let mut b = batch();
        b.mlm_labels.as_mut().unwrap().fill(IGNORE_INDEX);
        let out = run(
            &model(),
            &b,
            ForwardOptions {
                mlm_scope: MlmScope::LabelledOnly,
                ..eval(MaskMode::Padding)
            },
            0,
        );
        let l = out.losses.unwrap();
        assert_eq!((l.mlm, l.mlm_accuracy), (0.0, 0.0));
        assert!(l.nsp > 0.0 && l.total == l.nsp);
        assert_eq!(out.mlm_logits.unwrap().dim(), (0, 40));
    }

    #[test]
    fn a_fully_padded_sequence_gives_finite_outputs() {
        let mut b = batch();
        b.attention_mask.row_mut(1).fill(0);
        let out = run(&model(), &b, eval(MaskMode::Padding), 0);
        assert!(out.hidden.iter().all(|x| x.is_finite()));
        assert!(out.losses.unwrap().total.is_finite());
    }

    #[test]
    fn bad_batches_are_input_errors_not_panics() {
        let model = model();
        let bad = |edit: &dyn Fn(&mut Batch), needle: &str| {
            let mut b = batch();
            edit(&mut b);
            match forward(&model, &b, &eval(MaskMode::Padding), &mut Rng::new(0)) {
                Err(EngineError::Input(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
                Err(e) => panic!("wrong error kind {e}"),
                Ok(_) => panic!("accepted a batch with {needle}"),
            }
        };
        bad(&|b| b.input_ids[[1, 2]] = 40, "token id 40");
        bad(&|b| b.token_type_ids[[0, 1]] = 2, "token type 2");
        bad(
            &|b| b.mlm_labels.as_mut().unwrap()[[0, 0]] = 40,
            "MLM label 40",
        );
        bad(
            &|b| b.mlm_labels.as_mut().unwrap()[[0, 0]] = -1,
            "MLM label -1",
        );
        bad(
            &|b| b.nsp_labels = Some(Array1::from(vec![0, 2])),
            "NSP label 2",
        );
        bad(
            &|b| b.nsp_labels = Some(Array1::from(vec![0])),
            "NSP labels",
        );
        bad(
            &|b| b.attention_mask = Array2::ones((2, 5)),
            "attention_mask",
        );
        bad(
            &|b| b.token_type_ids = Array2::zeros((1, 6)),
            "token_type_ids",
        );
        bad(
            &|b| b.mlm_labels = Some(Array2::zeros((2, 5))),
            "mlm_labels",
        );
        bad(
            &|b| {
                b.input_ids = Array2::zeros((0, 6));
                b.token_type_ids = Array2::zeros((0, 6));
                b.attention_mask = Array2::zeros((0, 6));
                b.mlm_labels = None;
                b.nsp_labels = None;
            },
            "empty batch",
        );
        bad(
            &|b| {
                b.input_ids = Array2::zeros((1, 13));
                b.token_type_ids = Array2::zeros((1, 13));
                b.attention_mask = Array2::ones((1, 13));
                b.mlm_labels = None;
                b.nsp_labels = None;
            },
            "max_position_embeddings 12",
        );
    }

    #[test]
    fn parameters_that_contradict_the_config_are_an_error_not_a_panic() {
        let mut m = model();
        m.bert.layers[1].output.dense.weight = Array2::zeros((16, 31));
        match forward(&m, &batch(), &eval(MaskMode::Padding), &mut Rng::new(0)) {
            Err(EngineError::Config(msg)) => {
                assert!(msg.contains("layer.1.output.dense.weight"), "{msg}")
            }
            other => panic!("expected a config error, got ok = {}", other.is_ok()),
        }
        let mut m = model();
        m.bert.layers.pop();
        assert!(matches!(
            forward(&m, &batch(), &eval(MaskMode::Padding), &mut Rng::new(0)),
            Err(EngineError::Config(_))
        ));
    }

    #[test]
    fn a_bare_bert_model_runs_without_heads_or_losses() {
        let mut m = model();
        m.cls = None;
        m.bert.pooler = None;
        let out = run(&m, &batch(), eval(MaskMode::Padding), 0);
        assert!(
            out.pooled.is_none()
                && out.mlm_logits.is_none()
                && out.nsp_logits.is_none()
                && out.losses.is_none()
        );
        assert_eq!(
            out.hidden,
            run(&model(), &batch(), eval(MaskMode::Padding), 0).hidden
        );
    }
}
