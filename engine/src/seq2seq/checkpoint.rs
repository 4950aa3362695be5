//! `EncoderDecoderModel` checkpoints: one safetensors with `encoder.*` and `decoder.*`, a
//! config.json with both BERT configs inside; each half through the one-BERT checkpoint code.

use super::model::EncoderDecoder;
use crate::checkpoint::{self, Checkpoint, CheckpointFiles, TensorNaming, WEIGHTS_FILE};
use crate::config::BertConfig;
use crate::error::{EngineError, Result};
use crate::model::{BertForPreTraining, Parts};
use crate::rng::Rng;
use crate::tokenizer::build_word_vocab_with_limit;
use crate::tokenizer::Tokenizer;
use safetensors::tensor::{SafeTensors, TensorView};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// An encoder–decoder checkpoint: the model and the tokenizer both halves share.
#[derive(Clone, Debug, PartialEq)]
pub struct Seq2SeqCheckpoint {
    pub model: EncoderDecoder,
    pub tokenizer: Tokenizer,
}

impl Seq2SeqCheckpoint {
    /// A new encoder–decoder on `corpus_text`: a word-level vocabulary built from it (at most
    /// `vocab_limit` tokens, the most frequent words), the encoder a `BertModel` of `config`'s
    /// sizes, the decoder the same sizes with cross-attention and the LM head, initialised
    /// from `rng`.
    pub fn init(
        corpus_text: &str,
        vocab_limit: usize,
        config: BertConfig,
        rng: &mut Rng,
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
        let bare = Parts {
            pooler: false,
            heads: false,
            nsp: false,
        };
        let encoder = BertForPreTraining::init_with_parts(&encoder_config, bare, rng)?;
        let decoder = BertForPreTraining::init(&decoder_config, rng)?;
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
        Ok(Seq2SeqCheckpoint { model, tokenizer })
    }
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
