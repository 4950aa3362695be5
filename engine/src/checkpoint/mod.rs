//! Hugging Face checkpoints: `config.json`, `model.safetensors`, `vocab.txt` and an optional
//! `tokenizer_config.json`, read from bytes (the browser hands us files) or from a directory.
//!
//! What loads:
//! - `BertForPreTraining` names (`bert.` prefix, `cls.*` heads) and bare `BertModel` names (no
//!   prefix, no heads, pooler optional). Old `LayerNorm.gamma/beta` names are read as
//!   `weight/bias`.
//! - F32 tensors, and F16/BF16 converted to f32.
//! - The heads are loaded when `cls.seq_relationship.weight` is present, and then all of them
//!   are required. Without it the model has `cls = None`: inspectable, not trainable.
//! - `cls.predictions.decoder.weight` is tied to the word embeddings (HF re-ties it on load, so
//!   its stored values are not used; only its shape is checked). `cls.predictions.decoder.bias`
//!   duplicates `cls.predictions.bias` and is used only when that one is missing.
//! - `position_ids` buffers are skipped. Any other tensor we do not know (a classifier, a
//!   BertForMaskedLM head without NSP) is ignored and listed in `TensorNaming::ignored`, so a
//!   front end can say so; it is not written back on save.
//! - `vocab.txt` may be *shorter* than `vocab_size` (HF pads embedding matrices, e.g. to a
//!   multiple of 8; the tokenizer never produces the extra ids). Longer is an error.
//!
//! Saving writes the four files, tensors as F32 under the names the source used (`TensorNaming`);
//! a model made from scratch is saved as `BertForPreTraining` without the tied copies, as
//! `save_pretrained` does.
//!
//! Here: the file names, `load` (bytes → `Checkpoint`) and `to_files` (`Checkpoint` → bytes).
//! `naming`: `TensorNaming`, the source's tensor names; `reader`: the model built tensor by
//! tensor; `dtype`: tensor bytes ↔ f32; `dir`: a checkpoint directory on disk.

mod dir;
pub(crate) mod dtype;
mod naming;
mod reader;
#[cfg(test)]
mod tests;

pub use dir::{load_dir, read_dir, save_dir, write_dir};
pub use naming::TensorNaming;

use crate::config::BertConfig;
use crate::error::{EngineError, Result};
use crate::model::BertForPreTraining;
use crate::tokenizer::Tokenizer;
use dtype::f32_bytes;
use reader::Reader;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::HashMap;

/// Files larger than this are refused before being read: 2 GiB. A wasm32 page has 4 GiB of
/// address space and must hold the file and the f32 model made from it; no model this lab
/// trains comes near.
pub const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024 * 1024;

pub const CONFIG_FILE: &str = "config.json";
pub const WEIGHTS_FILE: &str = "model.safetensors";
pub const VOCAB_FILE: &str = "vocab.txt";
pub const TOKENIZER_CONFIG_FILE: &str = "tokenizer_config.json";

/// A checkpoint's files as they are on disk.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointFiles {
    pub config_json: String,
    pub safetensors: Vec<u8>,
    pub vocab_txt: String,
    pub tokenizer_config_json: Option<String>,
}
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub model: BertForPreTraining,
    pub tokenizer: Tokenizer,
    pub naming: TensorNaming,
}

impl Checkpoint {
    /// A model made here (from scratch), saved as `BertForPreTraining`.
    pub fn new(model: BertForPreTraining, tokenizer: Tokenizer) -> Result<Self> {
        check_vocab_size(&model.config, &tokenizer)?;
        Ok(Checkpoint {
            model,
            tokenizer,
            naming: TensorNaming::pre_training(),
        })
    }
}

/// Refuses a file before reading it when it is larger than `MAX_FILE_BYTES`.
pub fn check_file_size(name: &str, bytes: u64) -> Result<()> {
    if bytes > MAX_FILE_BYTES {
        return Err(EngineError::Checkpoint(format!(
            "{name} is {:.1} GB; files over {} GB are refused",
            bytes as f64 / 1e9,
            MAX_FILE_BYTES / (1 << 30)
        )));
    }
    Ok(())
}

fn check_vocab_size(config: &BertConfig, tokenizer: &Tokenizer) -> Result<()> {
    let n = tokenizer.vocab().len();
    if n > config.vocab_size {
        return Err(EngineError::Vocab(format!(
            "vocab.txt has {n} tokens but config.json's vocab_size is {}: the model has no embeddings for ids ≥ {}",
            config.vocab_size, config.vocab_size
        )));
    }
    Ok(())
}

/// Parses and checks a checkpoint held in memory.
pub fn load(files: &CheckpointFiles) -> Result<Checkpoint> {
    check_file_size(WEIGHTS_FILE, files.safetensors.len() as u64)?;
    let config = BertConfig::from_json(&files.config_json)?;
    let tokenizer =
        Tokenizer::from_files(&files.vocab_txt, files.tokenizer_config_json.as_deref())?;
    check_vocab_size(&config, &tokenizer)?;
    let st = SafeTensors::deserialize(&files.safetensors).map_err(|e| {
        EngineError::Checkpoint(format!(
            "{WEIGHTS_FILE} is not a valid safetensors file: {e}"
        ))
    })?;
    let (model, naming) = Reader::new(&st)?.model(config)?;
    Ok(Checkpoint {
        model,
        tokenizer,
        naming,
    })
}
/// The four files of `checkpoint`, tensors as F32 under the source's names.
pub fn to_files(checkpoint: &Checkpoint) -> CheckpointFiles {
    let Checkpoint {
        model,
        tokenizer,
        naming,
    } = checkpoint;
    // (stored name, shape, little-endian f32 bytes)
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = model
        .named_params()
        .into_iter()
        .map(|(name, p)| {
            (
                naming.source_name(&name),
                p.shape().to_vec(),
                f32_bytes(p.iter()),
            )
        })
        .collect();
    if let Some(cls) = &model.cls {
        let words = &model.bert.embeddings.word_embeddings;
        if naming.decoder_weight {
            tensors.push((
                "cls.predictions.decoder.weight".into(),
                words.shape().to_vec(),
                f32_bytes(words.iter()),
            ));
        }
        if naming.decoder_bias {
            let bias = &cls.predictions.bias;
            tensors.push((
                "cls.predictions.decoder.bias".into(),
                bias.shape().to_vec(),
                f32_bytes(bias.iter()),
            ));
        }
    }
    let views = tensors.iter().map(|(name, shape, bytes)| {
        let view =
            TensorView::new(Dtype::F32, shape.clone(), bytes).expect("shape and byte count agree");
        (name.clone(), view)
    });
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    let safetensors =
        safetensors::tensor::serialize(views, Some(metadata)).expect("f32 tensors serialise");
    CheckpointFiles {
        config_json: model.config.to_json(),
        safetensors,
        vocab_txt: tokenizer.vocab().to_vocab_txt(),
        tokenizer_config_json: Some(tokenizer.tokenizer_config_json()),
    }
}
