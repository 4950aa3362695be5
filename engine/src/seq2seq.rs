//! An encoder–decoder, as `transformers.EncoderDecoderModel` builds one from two BERTs: the
//! encoder a `BertModel`, the decoder a `BertLMHeadModel` with `is_decoder` and
//! `add_cross_attention`. The source runs through the encoder once; every decoder layer's
//! cross-attention reads its output (queries from the decoder, keys and values from the
//! encoder, under the source's padding mask). Decoder inputs are the labels shifted right,
//! starting with `decoder_start_token_id` ([CLS]), and the loss is the mean cross-entropy of
//! the logits at t against labels[t] (no further shift: the shift is in the inputs).
//!
//! Checkpoints: one `model.safetensors` with `encoder.*` and `decoder.*` names and a
//! config.json with `model_type: "encoder-decoder"` and the two BERT configs inside; each half
//! reads and writes through the one-BERT checkpoint code.

use crate::backward::{backward_from_hidden, backward_with_encoder, BackwardScratch};
use crate::batch::{Batch, MaskMode, IGNORE_INDEX};
use crate::checkpoint::{self, Checkpoint, CheckpointFiles, TensorNaming, WEIGHTS_FILE};
use crate::config::BertConfig;
use crate::data::{BatchConfig, Corpus};
use crate::error::{EngineError, Result};
use crate::forward::Losses;
use crate::forward::{forward, forward_reusing, EncoderStates, ForwardOptions, ForwardOutput};
use crate::generate::{GenerateOptions, GeneratedToken, Generator, Source};
use crate::inspect::Inspection;
use crate::model::{BertForPreTraining, Params, Parts};
use crate::optim::{Optimizer, OptimizerConfig};
use crate::rng::Rng;
use crate::step::{diverged_loss, train_step, StepBuffers, Trainable};
use crate::tokenizer::build_word_vocab_with_limit;
use crate::tokenizer::Tokenizer;
use crate::trace::{AttentionTrace, Matrix};
use ndarray::Array2;
use safetensors::tensor::{SafeTensors, TensorView};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq)]
pub struct EncoderDecoder {
    /// A `BertModel`: no pre-training heads.
    pub encoder: BertForPreTraining,
    /// A `BertLMHeadModel` with cross-attention in every layer.
    pub decoder: BertForPreTraining,
    pub decoder_start_token_id: u32,
    pub pad_token_id: u32,
    /// The top-level config.json's other keys, kept so a saved config round-trips.
    pub extra: Map<String, Value>,
}

/// A source batch for the encoder and a target batch for the decoder.
#[derive(Clone, Debug, PartialEq)]
pub struct Seq2SeqBatch {
    /// Source ids and padding mask (B, Ts); no labels.
    pub source: Batch,
    /// Decoder inputs (the labels shifted right) and their mask (B, Tt), the labels (unshifted:
    /// position t predicts labels[t]) in `mlm_labels`.
    pub target: Batch,
}

/// HF's `shift_tokens_right`: [start, labels[0], …, labels[T−2]], −100 read as [PAD].
pub fn shift_tokens_right(labels: &Array2<i64>, start: u32, pad: u32) -> Array2<u32> {
    let (b, t) = labels.dim();
    Array2::from_shape_fn((b, t), |(r, p)| match p {
        0 => start,
        _ => match labels[[r, p - 1]] {
            IGNORE_INDEX => pad,
            id => id as u32,
        },
    })
}

impl Seq2SeqBatch {
    /// From source ids with their mask and the target's labels (−100 where none), with the
    /// decoder's inputs shifted right and its mask 1 where they are not [PAD].
    pub fn new(
        source_ids: Array2<u32>,
        source_mask: Array2<u8>,
        labels: Array2<i64>,
        start: u32,
        pad: u32,
    ) -> Self {
        let decoder_input_ids = shift_tokens_right(&labels, start, pad);
        let decoder_mask = decoder_input_ids.mapv(|id| u8::from(id != pad));
        Seq2SeqBatch {
            source: Batch {
                token_type_ids: Array2::zeros(source_ids.raw_dim()),
                input_ids: source_ids,
                attention_mask: source_mask,
                mlm_labels: None,
                nsp_labels: None,
            },
            target: Batch {
                token_type_ids: Array2::zeros(decoder_input_ids.raw_dim()),
                input_ids: decoder_input_ids,
                attention_mask: decoder_mask,
                mlm_labels: Some(labels),
                nsp_labels: None,
            },
        }
    }
}

pub struct Seq2SeqOutput {
    pub encoder: ForwardOutput,
    /// Its `mlm_logits` are the decoder's (Tt rows per example), `losses.total` the loss.
    pub decoder: ForwardOutput,
}

impl EncoderDecoder {
    /// A gradient buffer of the same structure, all zeros.
    pub fn zeros_like(&self) -> Self {
        EncoderDecoder {
            encoder: self.encoder.zeros_like(),
            decoder: self.decoder.zeros_like(),
            ..self.clone()
        }
    }

    /// Every parameter under its checkpoint name (`encoder.…`, `decoder.…`).
    pub fn named_params(&self) -> Vec<(String, ndarray::ArrayViewD<'_, f32>)> {
        let encoder = self.encoder.named_params().into_iter().map(|(n, p)| {
            let n = n.strip_prefix("bert.").unwrap_or(&n).to_string();
            (format!("encoder.{n}"), p)
        });
        let decoder = self
            .decoder
            .named_params()
            .into_iter()
            .map(|(n, p)| (format!("decoder.{n}"), p));
        encoder.chain(decoder).collect()
    }

    fn check(&self) -> Result<()> {
        let bad = |m: String| Err(EngineError::Config(m));
        let (e, d) = (&self.encoder.config, &self.decoder.config);
        if !(d.is_decoder && d.add_cross_attention) {
            return bad(
                "an encoder–decoder's decoder needs is_decoder and add_cross_attention".into(),
            );
        }
        if e.vocab_size != d.vocab_size {
            return bad(format!(
                "the encoder's vocabulary has {} tokens and the decoder's {}: one tokenizer serves both, so they must be equal",
                e.vocab_size, d.vocab_size
            ));
        }
        if e.hidden_size != d.hidden_size {
            return bad(format!(
                "the encoder's hidden size {} differs from the decoder's {}",
                e.hidden_size, d.hidden_size
            ));
        }
        // Every use of an encoder–decoder (inspect's logits, generation, training) reads the
        // decoder's next-token head.
        if self.decoder.cls.is_none() {
            return bad(
                "the decoder has no LM head (decoder.cls.predictions.* in model.safetensors): an encoder–decoder predicts its next token with it".into(),
            );
        }
        Ok(())
    }
}

/// Both halves' parameters, each under its half's prefix and the one-BERT name
/// (`encoder.bert.…`, `decoder.…`): one optimiser updates them all, so gradient clipping sees
/// the norm over both, and a kept training state names them as it always has.
impl Params for EncoderDecoder {
    fn params(&self) -> Vec<(String, ndarray::ArrayViewD<'_, f32>)> {
        let encoder = self.encoder.named_params().into_iter();
        let decoder = self.decoder.named_params().into_iter();
        let encoder = encoder.map(|(n, p)| (format!("encoder.{n}"), p));
        encoder
            .chain(decoder.map(|(n, p)| (format!("decoder.{n}"), p)))
            .collect()
    }

    fn params_mut(&mut self) -> Vec<(String, ndarray::ArrayViewMutD<'_, f32>)> {
        let encoder = self.encoder.named_params_mut().into_iter();
        let decoder = self.decoder.named_params_mut().into_iter();
        let encoder = encoder.map(|(n, p)| (format!("encoder.{n}"), p));
        encoder
            .chain(decoder.map(|(n, p)| (format!("decoder.{n}"), p)))
            .collect()
    }

    fn zeros(&self) -> Self {
        self.zeros_like()
    }
}

/// What an encoder–decoder's step keeps for the next: each stack's activations and scratch.
#[derive(Default)]
pub struct Seq2SeqBuffers {
    encoder: StepBuffers,
    decoder: StepBuffers,
}

/// An encoder–decoder trains through the one-BERT step (`step::train_step`): the source
/// through the encoder, the target through the decoder reading it, backward in reverse.
impl Trainable for EncoderDecoder {
    type Batch = Seq2SeqBatch;
    type Buffers = Seq2SeqBuffers;

    fn check_trainable(&self) -> Result<()> {
        self.check()
    }

    fn train_forward(
        &self,
        batch: &Seq2SeqBatch,
        opts: &ForwardOptions,
        rng: &mut Rng,
        buffers: &mut Seq2SeqBuffers,
    ) -> Result<Losses> {
        let spares = [&mut buffers.encoder, &mut buffers.decoder].map(|b| b.forward.take());
        let out = forward_reusing_both(self, batch, opts, rng, spares)?;
        let losses = out.decoder.losses;
        buffers.encoder.forward = Some(out.encoder);
        buffers.decoder.forward = Some(out.decoder);
        losses.ok_or_else(|| {
            EngineError::Training("the batch has no labels: nothing to learn from".into())
        })
    }

    fn train_backward(
        &self,
        batch: &Seq2SeqBatch,
        grads: &mut Self,
        buffers: &mut Seq2SeqBuffers,
    ) -> Result<()> {
        let encoder = buffers.encoder.for_backward()?;
        let decoder = buffers.decoder.for_backward()?;
        backward_reusing_both(self, batch, [encoder, decoder], grads)
    }

    fn diverged_loss(&self) -> f32 {
        diverged_loss(self.decoder.config.vocab_size)
    }
}

/// The source through the encoder, then the target through the decoder reading it.
pub fn forward_seq2seq(
    model: &EncoderDecoder,
    batch: &Seq2SeqBatch,
    opts: &ForwardOptions,
    rng: &mut Rng,
) -> Result<Seq2SeqOutput> {
    model.check()?;
    forward_reusing_both(model, batch, opts, rng, [None, None])
}

/// `forward_seq2seq`, each stack writing into its spare [encoder, decoder] output.
fn forward_reusing_both(
    model: &EncoderDecoder,
    batch: &Seq2SeqBatch,
    opts: &ForwardOptions,
    rng: &mut Rng,
    [encoder_spare, decoder_spare]: [Option<ForwardOutput>; 2],
) -> Result<Seq2SeqOutput> {
    let encoder_opts = ForwardOptions {
        mask: MaskMode::Padding,
        ..*opts
    };
    let (source, target) = (&batch.source, &batch.target);
    let encoder = forward_reusing(
        &model.encoder,
        source,
        &encoder_opts,
        None,
        rng,
        encoder_spare,
    )?;
    let states = EncoderStates {
        hidden: &encoder.hidden,
        mask: source.attention_mask.view(),
    };
    let decoder = forward_reusing(
        &model.decoder,
        target,
        opts,
        Some(&states),
        rng,
        decoder_spare,
    )?;
    Ok(Seq2SeqOutput { encoder, decoder })
}

/// d(loss)/dθ of both halves into `grads` (zero it first): the decoder's backward, then the
/// encoder's from what the cross-attention sent back.
pub fn backward_seq2seq(
    model: &EncoderDecoder,
    batch: &Seq2SeqBatch,
    out: &Seq2SeqOutput,
    grads: &mut EncoderDecoder,
) -> Result<()> {
    let (mut encoder_scratch, mut decoder_scratch) = Default::default();
    let outputs = [
        (&out.encoder, &mut encoder_scratch),
        (&out.decoder, &mut decoder_scratch),
    ];
    backward_reusing_both(model, batch, outputs, grads)
}

/// `backward_seq2seq` from each stack's [encoder, decoder] forward output, with its scratch.
fn backward_reusing_both(
    model: &EncoderDecoder,
    batch: &Seq2SeqBatch,
    [(encoder, encoder_scratch), (decoder, decoder_scratch)]: [(&ForwardOutput, &mut BackwardScratch);
        2],
    grads: &mut EncoderDecoder,
) -> Result<()> {
    let states = EncoderStates {
        hidden: &encoder.hidden,
        mask: batch.source.attention_mask.view(),
    };
    let d_encoder = backward_with_encoder(
        &model.decoder,
        &batch.target,
        decoder,
        &mut grads.decoder,
        Some(&states),
        decoder_scratch,
    )?
    .expect("a decoder with cross-attention returns the encoder's gradient");
    backward_from_hidden(
        &model.encoder,
        &batch.source,
        encoder,
        &mut grads.encoder,
        d_encoder,
        None,
        encoder_scratch,
    )?;
    Ok(())
}

/// The source (its ids, all real tokens) through the encoder: what the decoder's
/// cross-attention reads while generating.
pub fn encode(model: &EncoderDecoder, source: &[u32]) -> Result<Source> {
    model.check()?;
    if source.is_empty() {
        return Err(EngineError::Input(
            "the source is empty: give at least one token".into(),
        ));
    }
    let positions = model.encoder.config.max_input_tokens();
    if source.len() > positions {
        return Err(EngineError::Input(format!(
            "the source has {} tokens and the encoder has {positions} positions",
            source.len()
        )));
    }
    let batch = one_row(source);
    let opts = ForwardOptions {
        trace: false,
        ..ForwardOptions::inspection(MaskMode::Padding)
    };
    let out = forward(&model.encoder, &batch, &opts, &mut Rng::new(0))?;
    Ok(Source {
        hidden: out.hidden,
        mask: batch.attention_mask,
    })
}

/// Generation from the decoder start ([CLS]), reading `source`'s encoding.
pub fn generator<'m>(
    model: &'m EncoderDecoder,
    source: &[u32],
    options: GenerateOptions,
) -> Result<Generator<&'m BertForPreTraining>> {
    let encoded = encode(model, source)?;
    Generator::with_source(
        &model.decoder,
        &[model.decoder_start_token_id],
        Some(encoded),
        options,
    )
}

/// Up to `options.max_new` tokens of the target for `source`.
pub fn generate(
    model: &EncoderDecoder,
    source: &[u32],
    options: GenerateOptions,
) -> Result<Vec<GeneratedToken>> {
    let mut g = generator(model, source, options)?;
    let mut out = Vec::new();
    while let Some(t) = g.next_token()? {
        out.push(t);
    }
    Ok(out)
}

/// What `inspect` shows of an encoder–decoder on one source and target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Seq2SeqInspection {
    /// `[CLS] source [SEP]`.
    pub source_tokens: Vec<String>,
    /// `[CLS]` then the target's tokens: the decoder's input, as generation sees it.
    pub target_tokens: Vec<String>,
    pub encoder: AttentionTrace,
    /// Every layer's causal self-attention (`heads`) and cross-attention (`cross_heads`: Tt
    /// rows of target tokens, Ts columns of source tokens).
    pub decoder: AttentionTrace,
    /// Tt×V: the next-token logits after each target position.
    pub logits: Matrix,
}

/// The decoder's input for `target` text: `[CLS]` (the decoder start) then its tokens, as
/// generation sees it.
pub fn decoder_input(model: &EncoderDecoder, tokenizer: &Tokenizer, target: &str) -> Vec<u32> {
    let mut ids = vec![model.decoder_start_token_id];
    ids.extend(tokenizer.token_ids(target));
    ids
}

/// The source `[CLS] source [SEP]` (padded with [PAD] up to `pad_to`) through the encoder and
/// `target_ids` through the decoder, every attention traced: the pass both inspections share.
fn traced_pass(
    model: &EncoderDecoder,
    tokenizer: &Tokenizer,
    source: &str,
    target_ids: &[u32],
    pad_to: Option<usize>,
) -> Result<(crate::tokenizer::Encoding, Seq2SeqOutput)> {
    model.check()?;
    let source_positions = model.encoder.config.max_input_tokens();
    if let Some(n) = pad_to.filter(|&n| n > source_positions) {
        return Err(EngineError::Input(format!(
            "cannot pad the source to {n} tokens: the encoder has only {source_positions} positions"
        )));
    }
    let enc = tokenizer.encode(source, None, source_positions, pad_to)?;
    if enc.truncated {
        return Err(EngineError::Input(format!(
            "the source does not fit the encoder's {source_positions} positions ([CLS] and [SEP] included)"
        )));
    }
    let positions = model.decoder.config.max_input_tokens();
    if target_ids.is_empty() || target_ids.len() > positions {
        return Err(EngineError::Input(format!(
            "the target has {} tokens with [CLS]; the decoder has {positions} positions",
            target_ids.len()
        )));
    }
    let vocab_size = model.decoder.config.vocab_size;
    if let Some(id) = target_ids.iter().find(|&&id| id as usize >= vocab_size) {
        return Err(EngineError::Input(format!(
            "token id {id} is outside the vocabulary of {vocab_size}"
        )));
    }
    let mut source = one_row(&enc.input_ids);
    source.attention_mask =
        Array2::from_shape_vec((1, enc.attention_mask.len()), enc.attention_mask.clone())
            .expect("1 × Ts");
    let batch = Seq2SeqBatch {
        source,
        target: one_row(target_ids),
    };
    let out = forward_seq2seq(
        model,
        &batch,
        &ForwardOptions::inspection(MaskMode::Padding),
        &mut Rng::new(0),
    )?;
    Ok((enc, out))
}

/// One unpadded row of ids, one segment.
fn one_row(ids: &[u32]) -> Batch {
    let row = |ids: &[u32]| Array2::from_shape_vec((1, ids.len()), ids.to_vec()).expect("1 × T");
    Batch {
        input_ids: row(ids),
        token_type_ids: Array2::zeros((1, ids.len())),
        attention_mask: Array2::ones((1, ids.len())),
        mlm_labels: None,
        nsp_labels: None,
    }
}

fn trace_of(o: &mut ForwardOutput) -> Result<AttentionTrace> {
    o.trace
        .take()
        .ok_or_else(|| EngineError::Input("the forward pass recorded no trace".into()))
}

/// The model on `source` and `target` text, every attention traced.
pub fn inspect(
    model: &EncoderDecoder,
    tokenizer: &Tokenizer,
    source: &str,
    target: &str,
) -> Result<Seq2SeqInspection> {
    let target_ids = decoder_input(model, tokenizer, target);
    let (enc, mut out) = traced_pass(model, tokenizer, source, &target_ids, None)?;
    let vocab = tokenizer.vocab();
    let name = |id: &u32| vocab.token(*id).unwrap_or(crate::vocab::UNK).to_string();
    let logits = out.decoder.mlm_logits.as_ref().ok_or_else(|| {
        EngineError::Input("the decoder has no LM head: no next-token logits".into())
    })?;
    let logits = Matrix::from_view(logits.view());
    Ok(Seq2SeqInspection {
        source_tokens: enc.tokens,
        target_tokens: target_ids.iter().map(name).collect(),
        encoder: trace_of(&mut out.encoder)?,
        decoder: trace_of(&mut out.decoder)?,
        logits,
    })
}

/// What the page shows of an encoder–decoder on `source` text and the decoder input
/// `target_ids` (`decoder_input`, or the start and what generation made so far): the
/// decoder's inspection (its causal self-attention in `heads`, its cross-attention in
/// `cross_heads`), with the encoder's in `source`. `pad_to` pads the source with [PAD], which
/// the encoder and every cross-attention row then mask.
pub fn inspect_ids(
    model: &EncoderDecoder,
    tokenizer: &Tokenizer,
    source: &str,
    target_ids: &[u32],
    pad_to: Option<usize>,
) -> Result<Inspection> {
    let (enc, mut out) = traced_pass(model, tokenizer, source, target_ids, pad_to)?;
    let vocab = tokenizer.vocab();
    let side = |tokens: Vec<String>,
                ids: Vec<u32>,
                attention_mask: Vec<u8>,
                mask: MaskMode,
                out: &mut ForwardOutput|
     -> Result<Inspection> {
        let trace = trace_of(out)?;
        let t = ids.len();
        Ok(Inspection {
            tokens,
            input_ids: ids,
            token_type_ids: vec![0; t],
            attention_mask,
            truncated: false,
            mask,
            rollout: crate::inspect::rollout(&trace),
            trace,
            hidden: Matrix::from_view(out.hidden.view()),
            mlm_logits: out.mlm_logits.as_ref().map(|l| Matrix::from_view(l.view())),
            nsp_logits: None,
            mask_predictions: Vec::new(),
            p_is_next: None,
            source: None,
        })
    };
    let encoder = side(
        enc.tokens,
        enc.input_ids,
        enc.attention_mask,
        MaskMode::Padding,
        &mut out.encoder,
    )?;
    let target_tokens = target_ids
        .iter()
        .map(|id| vocab.token(*id).unwrap_or(crate::vocab::UNK).to_string())
        .collect();
    let mut decoder = side(
        target_tokens,
        target_ids.to_vec(),
        vec![1; target_ids.len()],
        MaskMode::Causal,
        &mut out.decoder,
    )?;
    decoder.source = Some(Box::new(encoder));
    Ok(decoder)
}

/// An encoder–decoder checkpoint: the model and the tokenizer both halves share.
#[derive(Clone, Debug, PartialEq)]
pub struct Seq2SeqCheckpoint {
    pub model: EncoderDecoder,
    pub tokenizer: Tokenizer,
}

/// `model_type: "encoder-decoder"` in a config.json.
pub fn is_encoder_decoder(config_json: &str) -> bool {
    serde_json::from_str::<Value>(config_json)
        .ok()
        .and_then(|v| {
            v.get("model_type")?
                .as_str()
                .map(|s| s == "encoder-decoder")
        })
        .unwrap_or(false)
}

/// Reads an `EncoderDecoderModel` checkpoint held in memory.
pub fn load(files: &CheckpointFiles) -> Result<Seq2SeqCheckpoint> {
    let bad = |m: String| EngineError::Checkpoint(m);
    let mut top: Map<String, Value> = serde_json::from_str(&files.config_json)
        .map_err(|e| bad(format!("config.json is not JSON: {e}")))?;
    let mut half = |name: &str| {
        top.remove(name).filter(Value::is_object).ok_or_else(|| {
            bad(format!(
                "an encoder-decoder config.json needs its {name} config"
            ))
        })
    };
    let (encoder_config, decoder_config) = (half("encoder")?, half("decoder")?);
    // One tokenizer serves both halves: refused before any tensor is read.
    let vocab = |c: &Value| c.get("vocab_size").and_then(Value::as_u64);
    if let (Some(e), Some(d)) = (vocab(&encoder_config), vocab(&decoder_config)) {
        if e != d {
            return Err(bad(format!(
                "the encoder's vocabulary has {e} tokens and the decoder's {d}: one tokenizer serves both, so they must be equal"
            )));
        }
    }
    let token = |key: &str, default: u32| {
        top.get(key)
            .and_then(Value::as_u64)
            .map_or(default, |v| v as u32)
    };
    let (start, pad) = (token("decoder_start_token_id", 2), token("pad_token_id", 0));
    checkpoint::check_file_size(WEIGHTS_FILE, files.safetensors.len() as u64)?;
    let st = SafeTensors::deserialize(&files.safetensors).map_err(|e| {
        bad(format!(
            "{WEIGHTS_FILE} is not a valid safetensors file: {e}"
        ))
    })?;
    let read_half = |prefix: &str, config: &Value| -> Result<Checkpoint> {
        let config_json = config.to_string();
        let config = BertConfig::from_json(&config_json)?;
        let has_cross = st
            .names()
            .iter()
            .any(|n| n.starts_with(prefix) && n.contains(".crossattention."));
        if has_cross && !config.add_cross_attention {
            return Err(bad(format!(
                "{WEIGHTS_FILE} has cross-attention tensors ({prefix}…crossattention…) but the {} config does not set add_cross_attention",
                prefix.trim_end_matches('.')
            )));
        }
        let files = CheckpointFiles {
            config_json,
            safetensors: subset(&st, prefix)?,
            vocab_txt: files.vocab_txt.clone(),
            tokenizer_config_json: files.tokenizer_config_json.clone(),
        };
        checkpoint::load(&files)
    };
    let encoder = read_half("encoder.", &encoder_config)?;
    let decoder = read_half("decoder.", &decoder_config)?;
    if let Some(extra) = encoder
        .naming
        .ignored
        .iter()
        .chain(&decoder.naming.ignored)
        .next()
    {
        return Err(bad(format!(
            "{WEIGHTS_FILE} has {extra}, which this encoder–decoder does not use"
        )));
    }
    let model = EncoderDecoder {
        encoder: encoder.model,
        decoder: decoder.model,
        decoder_start_token_id: start,
        pad_token_id: pad,
        extra: top,
    };
    model.check()?;
    Ok(Seq2SeqCheckpoint {
        model,
        tokenizer: decoder.tokenizer,
    })
}

/// The tensors under `prefix`, without it, as a safetensors file of their own.
fn subset(st: &SafeTensors, prefix: &str) -> Result<Vec<u8>> {
    let views: Vec<(String, TensorView)> = st
        .tensors()
        .into_iter()
        .filter_map(|(name, view)| Some((name.strip_prefix(prefix)?.to_string(), view)))
        .collect();
    safetensors::tensor::serialize(views, None)
        .map_err(|e| EngineError::Checkpoint(format!("{WEIGHTS_FILE}: {e}")))
}

/// The checkpoint's files as `save_pretrained` of an `EncoderDecoderModel` writes them.
pub fn to_files(checkpoint: &Seq2SeqCheckpoint) -> CheckpointFiles {
    let Seq2SeqCheckpoint { model, tokenizer } = checkpoint;
    let half = |m: &BertForPreTraining, naming: TensorNaming| {
        checkpoint::to_files(&Checkpoint {
            model: m.clone(),
            tokenizer: tokenizer.clone(),
            naming,
        })
    };
    // The encoder is a bare BertModel (no prefix), the decoder a BertLMHeadModel ("bert.").
    let encoder = half(
        &model.encoder,
        TensorNaming {
            prefix: String::new(),
            ..TensorNaming::pre_training()
        },
    );
    let decoder = half(&model.decoder, TensorNaming::pre_training());
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for (prefix, files) in [("encoder.", &encoder), ("decoder.", &decoder)] {
        let st = SafeTensors::deserialize(&files.safetensors).expect("just written");
        for (name, view) in st.tensors() {
            tensors.push((
                format!("{prefix}{name}"),
                view.shape().to_vec(),
                view.data().to_vec(),
            ));
        }
    }
    let views = tensors.iter().map(|(name, shape, bytes)| {
        let view = TensorView::new(safetensors::Dtype::F32, shape.clone(), bytes)
            .expect("shape and bytes agree");
        (name.clone(), view)
    });
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    let safetensors =
        safetensors::tensor::serialize(views, Some(metadata)).expect("f32 tensors serialise");
    let mut config = model.extra.clone();
    let sub = |files: &CheckpointFiles| -> Value {
        serde_json::from_str(&files.config_json).expect("a config is JSON")
    };
    config.insert("model_type".into(), json!("encoder-decoder"));
    config.insert("is_encoder_decoder".into(), json!(true));
    config.insert("encoder".into(), sub(&encoder));
    config.insert("decoder".into(), sub(&decoder));
    config.insert(
        "decoder_start_token_id".into(),
        json!(model.decoder_start_token_id),
    );
    config.insert("pad_token_id".into(), json!(model.pad_token_id));
    CheckpointFiles {
        config_json: serde_json::to_string_pretty(&Value::Object(config)).expect("JSON serialises"),
        safetensors,
        vocab_txt: decoder.vocab_txt,
        tokenizer_config_json: decoder.tokenizer_config_json,
    }
}

/// The sequence-to-sequence tasks built from the corpus (the page's "Task").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// A sentence to itself.
    #[default]
    Copy,
    /// A sentence to its tokens in reverse order.
    Reverse,
    /// Each line to the line that follows it.
    Reply,
}

impl Task {
    /// The (source, target) tokens of example `i` (for Reply, i < sentences − 1).
    pub fn pair(self, corpus: &Corpus, i: usize) -> (&[u32], Vec<u32>) {
        let source = corpus.sentence(i);
        let target = match self {
            Task::Copy => source.to_vec(),
            Task::Reverse => source.iter().rev().copied().collect(),
            Task::Reply => corpus.sentence(i + 1).to_vec(),
        };
        (source, target)
    }

    /// How many examples the corpus gives.
    pub fn examples(self, corpus: &Corpus) -> usize {
        match self {
            Task::Reply => corpus.len() - 1,
            Task::Copy | Task::Reverse => corpus.len(),
        }
    }
}

/// Copy and Reverse draw half their sources from the corpus's sentences and half as 2 to 8
/// words drawn at random from the corpus: with only the sentences (a few dozen), a model
/// memorises them instead of learning to copy or reverse, and fails on a sentence it has not
/// seen.
const MAX_RANDOM_WORDS: usize = 8;

/// `batch_size` examples of `task` drawn uniformly: sources `[CLS] s [SEP]` padded to T, and
/// targets' labels `t [SEP]`, −100 after (each cut to fit T = max_len), the decoder's inputs
/// shifted right from [CLS].
pub fn make_seq2seq_batch(
    corpus: &Corpus,
    config: &BatchConfig,
    task: Task,
    rng: &mut Rng,
) -> Result<Seq2SeqBatch> {
    config.validate()?;
    let (b, t) = (config.batch_size, config.max_len);
    let (cls, sep, _) = corpus.cls_sep_mask();
    let pad = corpus.pad_id();
    let mut source_ids = Array2::from_elem((b, t), pad); // (B, Ts)
    let mut source_mask = Array2::<u8>::zeros((b, t)); // (B, Ts)
    let mut labels = Array2::from_elem((b, t), IGNORE_INDEX); // (B, Tt)
    for row in 0..b {
        let words;
        let (source, target) = if task != Task::Reply && rng.bernoulli(0.5) {
            let n = 2 + rng.below(MAX_RANDOM_WORDS.min(t - 2).max(2) - 1);
            words = (0..n)
                .map(|_| {
                    let s = corpus.sentence(rng.below(corpus.len()));
                    s[rng.below(s.len())]
                })
                .collect::<Vec<u32>>();
            let target = match task {
                Task::Reverse => words.iter().rev().copied().collect(),
                _ => words.clone(),
            };
            (&words[..], target)
        } else {
            task.pair(corpus, rng.below(task.examples(corpus)))
        };
        let k = source.len().min(t - 2);
        source_ids[[row, 0]] = cls;
        for (p, &id) in source[..k].iter().enumerate() {
            source_ids[[row, 1 + p]] = id;
        }
        source_ids[[row, 1 + k]] = sep;
        source_mask
            .row_mut(row)
            .slice_mut(ndarray::s![..k + 2])
            .fill(1);
        let n = target.len().min(t - 1);
        for (p, &id) in target[..n].iter().chain([&sep]).enumerate() {
            labels[[row, p]] = id as i64;
        }
    }
    Ok(Seq2SeqBatch::new(source_ids, source_mask, labels, cls, pad))
}

/// Trains an encoder–decoder on a task of the corpus: draw a batch, then the one step every
/// model takes (`step::train_step`: forward with dropout into the kept buffers, backward, one
/// optimiser over both halves, so clipping sees the norm over both).
pub struct Seq2SeqTrainer {
    pub model: EncoderDecoder,
    grads: EncoderDecoder,
    optimizer: Optimizer,
    buffers: Seq2SeqBuffers,
    pub tokenizer: Tokenizer,
    pub corpus: Corpus,
    pub batch_config: BatchConfig,
    pub task: Task,
    rng: Rng,
    pub step: u64,
}

impl Seq2SeqTrainer {
    /// A new encoder–decoder on `corpus_text`: a word-level vocabulary built from it, the
    /// encoder a `BertModel` of `config`'s sizes, the decoder the same sizes with
    /// cross-attention and the LM head.
    pub fn from_corpus(
        corpus_text: &str,
        config: BertConfig,
        optimizer: OptimizerConfig,
        batch: BatchConfig,
        task: Task,
        seed: u64,
    ) -> Result<Self> {
        Self::from_corpus_with_vocab_limit(
            corpus_text,
            usize::MAX,
            config,
            optimizer,
            batch,
            task,
            seed,
        )
    }

    /// `from_corpus` with at most `vocab_limit` tokens in the vocabulary (the most frequent
    /// words), as `Trainer::from_corpus_with_vocab_limit`.
    pub fn from_corpus_with_vocab_limit(
        corpus_text: &str,
        vocab_limit: usize,
        config: BertConfig,
        optimizer: OptimizerConfig,
        batch: BatchConfig,
        task: Task,
        seed: u64,
    ) -> Result<Self> {
        let (vocab, _) = build_word_vocab_with_limit(corpus_text, vocab_limit)?;
        let tokenizer = Tokenizer::word_level(vocab);
        let encoder_config = BertConfig {
            vocab_size: tokenizer.vocab().len(),
            is_decoder: false,
            add_cross_attention: false,
            ..config
        };
        let mut decoder_config = encoder_config.clone().decoder();
        decoder_config.add_cross_attention = true;
        let mut rng = Rng::new(seed);
        let bare = Parts {
            pooler: false,
            heads: false,
            nsp: false,
        };
        let encoder = BertForPreTraining::init_with_parts(&encoder_config, bare, &mut rng)?;
        let decoder = BertForPreTraining::init(&decoder_config, &mut rng)?;
        let vocab = tokenizer.vocab();
        let (Ok(cls), Ok(pad)) = (vocab.cls_id(), vocab.pad_id()) else {
            return Err(EngineError::Training(
                "the vocabulary has no [CLS] or [PAD]".into(),
            ));
        };
        let model = EncoderDecoder {
            encoder,
            decoder,
            decoder_start_token_id: cls,
            pad_token_id: pad,
            extra: Map::new(),
        };
        let checkpoint = Seq2SeqCheckpoint { model, tokenizer };
        Self::from_checkpoint(checkpoint, corpus_text, optimizer, batch, task, rng)
    }

    /// An encoder–decoder `checkpoint` training on `task` of `corpus_text` (read with the
    /// checkpoint's tokenizer), its batches and dropout drawn from `rng`.
    pub fn from_checkpoint(
        checkpoint: Seq2SeqCheckpoint,
        corpus_text: &str,
        optimizer: OptimizerConfig,
        batch: BatchConfig,
        task: Task,
        rng: Rng,
    ) -> Result<Self> {
        batch.validate()?;
        let Seq2SeqCheckpoint { model, tokenizer } = checkpoint;
        model.check()?;
        let corpus = Corpus::parse(corpus_text, &tokenizer)?;
        let positions = model
            .encoder
            .config
            .max_position_embeddings
            .min(model.decoder.config.max_position_embeddings);
        if batch.max_len > positions {
            return Err(EngineError::Training(format!(
                "sequence length {} is longer than the model's {positions} positions",
                batch.max_len
            )));
        }
        if task == Task::Reply && corpus.len() < 2 {
            return Err(EngineError::Training(
                "Reply pairs each line with the next: the corpus needs two lines or more".into(),
            ));
        }
        let optimizer = Optimizer::new(optimizer, &model)?;
        Ok(Seq2SeqTrainer {
            grads: model.zeros_like(),
            model,
            optimizer,
            buffers: Seq2SeqBuffers::default(),
            tokenizer,
            corpus,
            batch_config: batch,
            task,
            rng,
            step: 0,
        })
    }

    /// The optimiser of both halves.
    pub fn optimizer_config(&self) -> &OptimizerConfig {
        &self.optimizer.config
    }

    /// A new optimiser, its moments afresh (another kind, or after a rewind).
    pub fn set_optimizer(&mut self, config: OptimizerConfig) -> Result<()> {
        self.optimizer = Optimizer::new(config, &self.model)?;
        Ok(())
    }

    pub fn set_learning_rate(&mut self, lr: f64) -> Result<()> {
        self.optimizer.set_learning_rate(lr)
    }

    /// One step on a fresh batch; the loss before the update. A NaN/∞ loss is an error and
    /// leaves the weights as they were.
    pub fn step(&mut self) -> Result<Losses> {
        let batch = make_seq2seq_batch(&self.corpus, &self.batch_config, self.task, &mut self.rng)?;
        self.step_on(&batch)
    }

    /// One step on `batch`.
    pub fn step_on(&mut self, batch: &Seq2SeqBatch) -> Result<Losses> {
        let losses = train_step(
            &mut self.model,
            &mut self.grads,
            &mut self.optimizer,
            batch,
            &ForwardOptions::training(MaskMode::Padding),
            &mut self.rng,
            &mut self.buffers,
        )?;
        self.step += 1;
        Ok(losses)
    }

    /// The run's state beyond its checkpoint (both halves' optimiser moments, the step, the
    /// generator), as `Trainer::training_state`.
    pub fn training_state(&self) -> Vec<u8> {
        let run = crate::resume::RunState {
            step: self.step,
            rng: self.rng.clone(),
            corpus_words: None,
        };
        crate::resume::encode(&run, &self.optimizer)
    }

    /// Continue exactly where `training_state` left off: on any error (another optimiser,
    /// another model) nothing changes.
    pub fn resume(&mut self, training_state: &[u8]) -> Result<()> {
        let run = crate::resume::decode(training_state, &mut self.optimizer)?;
        self.step = run.step;
        self.rng = run.rng;
        Ok(())
    }

    pub fn checkpoint(&self) -> Seq2SeqCheckpoint {
        Seq2SeqCheckpoint {
            model: self.model.clone(),
            tokenizer: self.tokenizer.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORPUS: &str = "the cat sat on the mat.\nthe dog ate a bone.\na bird sang in the tree.\n\
                          the sun was warm.\nwe went home.\nit rained all night.\n";

    fn trainer() -> Seq2SeqTrainer {
        let mut config = BertConfig::new(0, 16, 2, 2, 32);
        config.max_position_embeddings = 16;
        let batch = BatchConfig {
            batch_size: 4,
            max_len: 10,
            ..BatchConfig::default()
        };
        Seq2SeqTrainer::from_corpus(
            CORPUS,
            config,
            OptimizerConfig::adam(1e-2),
            batch,
            Task::Reverse,
            3,
        )
        .unwrap()
    }

    /// The one step (`step::train_step`) on an encoder–decoder: writing into the last step's
    /// buffers changes no bit, and clipping bounds the norm over both halves together.
    #[test]
    fn steps_reuse_their_buffers_and_clip_over_both_halves() {
        let weights = |t: &Seq2SeqTrainer| -> Vec<f32> {
            let params = t.model.params();
            params.iter().flat_map(|(_, p)| p.iter().copied()).collect()
        };
        let run = |keep_buffers: bool| {
            let mut t = trainer();
            for _ in 0..3 {
                if !keep_buffers {
                    t.buffers = Seq2SeqBuffers::default();
                }
                t.step().unwrap();
            }
            weights(&t).iter().map(|x| x.to_bits()).collect::<Vec<u32>>()
        };
        assert!(run(true) == run(false));

        // SGD, max norm 1e-3 (far below the gradient's): the step moves the weights of both
        // halves together by lr · 1e-3, as torch's clip_grad_norm_ over all parameters.
        let (lr, max) = (0.5, 1e-3);
        let mut t = trainer();
        let clipped = OptimizerConfig {
            clip_grad_norm: Some(max),
            ..OptimizerConfig::sgd(lr)
        };
        t.set_optimizer(clipped).unwrap();
        let before = weights(&t);
        t.step().unwrap();
        let moved = weights(&t)
            .iter()
            .zip(&before)
            .map(|(a, b)| f64::from(a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!((moved - lr * max).abs() < 0.02 * lr * max, "{moved}");
    }

    /// N steps in one go equal k steps, keep (checkpoint + training state), restore into a
    /// fresh trainer and N − k more: both halves' Adam moments and the generator come back.
    #[test]
    fn a_kept_run_trains_on_exactly_as_if_it_had_never_stopped() {
        let mut straight = trainer();
        for _ in 0..6 {
            straight.step().unwrap();
        }
        let mut first = trainer();
        for _ in 0..3 {
            first.step().unwrap();
        }
        let state = first.training_state();
        let files = to_files(&first.checkpoint());
        let mut checkpoint = load(&files).unwrap();
        checkpoint.tokenizer = Tokenizer::word_level(checkpoint.tokenizer.vocab().clone());
        let batch = first.batch_config;
        let mut resumed = Seq2SeqTrainer::from_checkpoint(
            checkpoint,
            CORPUS,
            OptimizerConfig::adam(1e-2),
            batch,
            Task::Reverse,
            Rng::new(99),
        )
        .unwrap();
        resumed.resume(&state).unwrap();
        assert_eq!(resumed.step, 3);
        for _ in 0..3 {
            resumed.step().unwrap();
        }
        // The weights (a loaded config may carry other HF keys in `extra`).
        let weights = |m: &EncoderDecoder| {
            m.named_params()
                .into_iter()
                .map(|(n, p)| (n, p.iter().copied().collect::<Vec<f32>>()))
                .collect::<Vec<_>>()
        };
        assert_eq!(weights(&resumed.model), weights(&straight.model));

        // Another optimiser's state is refused and changes nothing.
        let mut sgd = trainer();
        sgd.set_optimizer(OptimizerConfig::sgd(1e-2)).unwrap();
        // (Compared as Debug text: the file's metadata order is a hash map's.)
        let before = format!("{:?}", sgd.optimizer);
        let e = sgd.resume(&state).unwrap_err().to_string();
        assert!(e.contains("settings ask for"), "{e}");
        assert_eq!(format!("{:?}", sgd.optimizer), before);
        // So is a one-model state (no `encoder.` moments), all or nothing.
        let mut other = trainer();
        let one = crate::resume::encode(
            &crate::resume::RunState {
                step: 1,
                rng: Rng::new(0),
                corpus_words: None,
            },
            &Optimizer::new(OptimizerConfig::adam(1e-3), &other.model.decoder).unwrap(),
        );
        other.step().unwrap();
        let before = format!("{:?}", other.optimizer);
        assert!(other.resume(&one).is_err());
        assert_eq!(format!("{:?}", other.optimizer), before);
    }

    /// A checkpoint whose decoder has no LM head (`decoder.cls.*`) is refused when it loads,
    /// with the reason: `inspect` and `generate` read that head (inspect used to abort the
    /// process on it).
    #[test]
    fn a_decoder_without_its_lm_head_is_refused_at_load() {
        let files = to_files(&trainer().checkpoint());
        let st = SafeTensors::deserialize(&files.safetensors).unwrap();
        let kept: Vec<(String, TensorView)> = st
            .tensors()
            .into_iter()
            .filter(|(name, _)| !name.starts_with("decoder.cls."))
            .collect();
        assert!(kept.len() < st.len(), "the decoder had an LM head to drop");
        let headless = CheckpointFiles {
            safetensors: safetensors::tensor::serialize(kept, None).unwrap(),
            ..files
        };
        let e = load(&headless).unwrap_err().to_string();
        assert!(e.contains("LM head") && e.contains("decoder.cls"), "{e}");
    }
}
