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

use crate::backward::{backward_from_hidden, backward_with_encoder};
use crate::batch::{Batch, MaskMode, IGNORE_INDEX};
use crate::checkpoint::{self, Checkpoint, CheckpointFiles, TensorNaming, WEIGHTS_FILE};
use crate::config::BertConfig;
use crate::error::{EngineError, Result};
use crate::forward::{forward, forward_with_encoder, EncoderStates, ForwardOptions, ForwardOutput};
use crate::generate::{GenerateOptions, GeneratedToken, Generator, Source};
use crate::model::BertForPreTraining;
use crate::rng::Rng;
use crate::tokenizer::Tokenizer;
use ndarray::Array2;
use safetensors::tensor::{SafeTensors, TensorView};
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
        Ok(())
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
    let encoder_opts = ForwardOptions {
        mask: MaskMode::Padding,
        ..*opts
    };
    let encoder = forward(&model.encoder, &batch.source, &encoder_opts, rng)?;
    let states = EncoderStates {
        hidden: &encoder.hidden,
        mask: batch.source.attention_mask.view(),
    };
    let decoder = forward_with_encoder(&model.decoder, &batch.target, opts, Some(&states), rng)?;
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
    let states = EncoderStates {
        hidden: &out.encoder.hidden,
        mask: batch.source.attention_mask.view(),
    };
    let d_encoder = backward_with_encoder(
        &model.decoder,
        &batch.target,
        &out.decoder,
        &mut grads.decoder,
        Some(&states),
    )?
    .expect("a decoder with cross-attention returns the encoder's gradient");
    backward_from_hidden(
        &model.encoder,
        &batch.source,
        &out.encoder,
        &mut grads.encoder,
        d_encoder,
        None,
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
    let positions = model.encoder.config.max_position_embeddings;
    if source.len() > positions {
        return Err(EngineError::Input(format!(
            "the source has {} tokens and the encoder has {positions} positions",
            source.len()
        )));
    }
    let t = source.len();
    let batch = Batch {
        input_ids: Array2::from_shape_vec((1, t), source.to_vec()).expect("1 × Ts"),
        token_type_ids: Array2::zeros((1, t)),
        attention_mask: Array2::ones((1, t)),
        mlm_labels: None,
        nsp_labels: None,
    };
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
