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

use crate::config::BertConfig;
use crate::error::{EngineError, Result};
use crate::model::{
    BertAttention, BertEmbeddings, BertForPreTraining, BertIntermediate, BertLMPredictionHead,
    BertLayer, BertModel, BertOutput, BertPooler, BertPreTrainingHeads,
    BertPredictionHeadTransform, BertSelfAttention, BertSelfOutput, LayerNorm, Linear,
};
use crate::tokenizer::Tokenizer;
use ndarray::{Array1, Array2};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::Path;

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

/// How the source named its tensors, so a saved checkpoint uses the same names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorNaming {
    /// `"bert."` for `BertForPreTraining` (and other task models), `""` for a bare `BertModel`.
    pub prefix: String,
    /// LayerNorm parameters called `gamma`/`beta` (TF-era checkpoints).
    pub gamma_beta: bool,
    /// The tied `cls.predictions.decoder.weight` was stored.
    pub decoder_weight: bool,
    /// `cls.predictions.decoder.bias` was stored (a copy of `cls.predictions.bias`).
    pub decoder_bias: bool,
    /// Tensors of the source that were not used (sorted); `position_ids` buffers are not listed.
    pub ignored: Vec<String>,
}

impl TensorNaming {
    /// `save_pretrained` of a `BertForPreTraining`: tied copies left out.
    pub fn pre_training() -> Self {
        TensorNaming {
            prefix: "bert.".into(),
            gamma_beta: false,
            decoder_weight: false,
            decoder_bias: false,
            ignored: Vec::new(),
        }
    }

    /// The stored name of a parameter known by its `named_params` name.
    fn source_name(&self, name: &str) -> String {
        let name = match name.strip_prefix("bert.") {
            Some(rest) => format!("{}{rest}", self.prefix),
            None => name.to_string(),
        };
        if self.gamma_beta {
            if let Some(stem) = name.strip_suffix("LayerNorm.weight") {
                return format!("{stem}LayerNorm.gamma");
            }
            if let Some(stem) = name.strip_suffix("LayerNorm.bias") {
                return format!("{stem}LayerNorm.beta");
            }
        }
        name
    }
}

impl Default for TensorNaming {
    fn default() -> Self {
        Self::pre_training()
    }
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

/// Reads the files of a checkpoint directory (refusing oversized ones before reading).
pub fn read_dir(dir: &Path) -> Result<CheckpointFiles> {
    if !dir.is_dir() {
        return Err(EngineError::Checkpoint(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let read = |name: &str, required: bool| -> Result<Option<Vec<u8>>> {
        let path = dir.join(name);
        let io = |e: std::io::Error| EngineError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !required {
                    return Ok(None);
                }
                let hint = if name == WEIGHTS_FILE && dir.join("pytorch_model.bin").exists() {
                    " (pytorch_model.bin is not supported: convert it to safetensors)"
                } else {
                    ""
                };
                Err(EngineError::Checkpoint(format!(
                    "{} is missing{hint}",
                    path.display()
                )))
            }
            Err(e) => Err(io(e)),
            Ok(meta) => {
                check_file_size(&path.display().to_string(), meta.len())?;
                std::fs::read(&path).map(Some).map_err(io)
            }
        }
    };
    let text = |name: &str, bytes: Vec<u8>| {
        String::from_utf8(bytes)
            .map_err(|_| EngineError::Checkpoint(format!("{name} is not UTF-8 text")))
    };
    let required = |name: &str| read(name, true).map(|b| b.unwrap_or_default());
    Ok(CheckpointFiles {
        config_json: text(CONFIG_FILE, required(CONFIG_FILE)?)?,
        safetensors: required(WEIGHTS_FILE)?,
        vocab_txt: text(VOCAB_FILE, required(VOCAB_FILE)?)?,
        tokenizer_config_json: read(TOKENIZER_CONFIG_FILE, false)?
            .map(|b| text(TOKENIZER_CONFIG_FILE, b))
            .transpose()?,
    })
}

pub fn load_dir(dir: &Path) -> Result<Checkpoint> {
    load(&read_dir(dir)?)
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

/// Writes the checkpoint into `dir` (created if needed), replacing the four files.
pub fn save_dir(checkpoint: &Checkpoint, dir: &Path) -> Result<()> {
    let io = |path: &Path, e: std::io::Error| EngineError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let files = to_files(checkpoint);
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| io(&path, e))
    };
    write(CONFIG_FILE, files.config_json.as_bytes())?;
    write(WEIGHTS_FILE, &files.safetensors)?;
    write(VOCAB_FILE, files.vocab_txt.as_bytes())?;
    if let Some(json) = &files.tokenizer_config_json {
        write(TOKENIZER_CONFIG_FILE, json.as_bytes())?;
    }
    Ok(())
}

fn f32_bytes<'a>(values: impl ExactSizeIterator<Item = &'a f32>) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 * values.len());
    for x in values {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Builds the model tensor by tensor from a parsed safetensors file, in the shape the config
/// says, remembering which stored names it used.
struct Reader<'a> {
    st: &'a SafeTensors<'a>,
    naming: TensorNaming,
    used: HashSet<String>,
}

impl<'a> Reader<'a> {
    fn new(st: &'a SafeTensors<'a>) -> Result<Self> {
        let names: HashSet<&str> = st.names().into_iter().collect();
        let prefix = if names.contains("bert.embeddings.word_embeddings.weight") {
            "bert."
        } else if names.contains("embeddings.word_embeddings.weight") {
            ""
        } else {
            return Err(EngineError::Checkpoint(format!(
                "{WEIGHTS_FILE} has no BERT word embeddings (neither bert.embeddings.word_embeddings.weight \
                 nor embeddings.word_embeddings.weight among its {} tensors)",
                names.len()
            )));
        };
        let gamma_beta = names.iter().any(|n| n.ends_with("LayerNorm.gamma"));
        let naming = TensorNaming {
            prefix: prefix.into(),
            gamma_beta,
            ..TensorNaming::pre_training()
        };
        Ok(Reader {
            st,
            naming,
            used: HashSet::new(),
        })
    }

    fn has(&self, stored: &str) -> bool {
        self.st.tensor(stored).is_ok()
    }

    /// The tensor stored for `name` (a `named_params` name) as f32 in `shape`.
    fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        self.stored(&self.naming.source_name(name), shape)
    }

    fn stored(&mut self, stored: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let view = self.st.tensor(stored).map_err(|_| {
            EngineError::Checkpoint(format!(
                "{WEIGHTS_FILE} is missing the required tensor {stored}"
            ))
        })?;
        if view.shape() != shape {
            return Err(EngineError::Checkpoint(format!(
                "tensor {stored} has shape {:?}, expected {shape:?} from config.json",
                view.shape()
            )));
        }
        self.used.insert(stored.to_string());
        to_f32(stored, &view)
    }

    fn array1(&mut self, name: &str, n: usize) -> Result<Array1<f32>> {
        Ok(Array1::from_vec(self.tensor(name, &[n])?))
    }

    fn array2(&mut self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>> {
        let data = self.tensor(name, &[rows, cols])?;
        Ok(Array2::from_shape_vec((rows, cols), data).expect("length checked against the shape"))
    }

    fn linear(&mut self, name: &str, out: usize, inp: usize) -> Result<Linear> {
        Ok(Linear {
            weight: self.array2(&format!("{name}.weight"), out, inp)?,
            bias: self.array1(&format!("{name}.bias"), out)?,
        })
    }

    fn layer_norm(&mut self, name: &str, c: usize) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: self.array1(&format!("{name}.LayerNorm.weight"), c)?,
            bias: self.array1(&format!("{name}.LayerNorm.bias"), c)?,
        })
    }

    fn model(mut self, config: BertConfig) -> Result<(BertForPreTraining, TensorNaming)> {
        let (v, c, i) = (
            config.vocab_size,
            config.hidden_size,
            config.intermediate_size,
        );
        let embeddings = BertEmbeddings {
            word_embeddings: self.array2("bert.embeddings.word_embeddings.weight", v, c)?,
            position_embeddings: self.array2(
                "bert.embeddings.position_embeddings.weight",
                config.max_position_embeddings,
                c,
            )?,
            token_type_embeddings: self.array2(
                "bert.embeddings.token_type_embeddings.weight",
                config.type_vocab_size,
                c,
            )?,
            layer_norm: self.layer_norm("bert.embeddings", c)?,
        };
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("bert.encoder.layer.{l}");
            layers.push(BertLayer {
                attention: BertAttention {
                    self_attention: BertSelfAttention {
                        query: self.linear(&format!("{p}.attention.self.query"), c, c)?,
                        key: self.linear(&format!("{p}.attention.self.key"), c, c)?,
                        value: self.linear(&format!("{p}.attention.self.value"), c, c)?,
                    },
                    output: BertSelfOutput {
                        dense: self.linear(&format!("{p}.attention.output.dense"), c, c)?,
                        layer_norm: self.layer_norm(&format!("{p}.attention.output"), c)?,
                    },
                },
                intermediate: BertIntermediate {
                    dense: self.linear(&format!("{p}.intermediate.dense"), i, c)?,
                },
                output: BertOutput {
                    dense: self.linear(&format!("{p}.output.dense"), c, i)?,
                    layer_norm: self.layer_norm(&format!("{p}.output"), c)?,
                },
            });
        }
        let pooler = if self.has(&self.naming.source_name("bert.pooler.dense.weight")) {
            Some(BertPooler {
                dense: self.linear("bert.pooler.dense", c, c)?,
            })
        } else {
            None
        };
        let cls = if self.has("cls.seq_relationship.weight") {
            Some(self.heads(&config)?)
        } else {
            None
        };
        if cls.is_some() && pooler.is_none() {
            return Err(EngineError::Checkpoint(format!(
                "{WEIGHTS_FILE} has the NSP head cls.seq_relationship but no pooler ({}pooler.dense.weight) to feed it",
                self.naming.prefix
            )));
        }
        let mut naming = self.naming;
        let layer_count = config.num_hidden_layers;
        naming.ignored = self
            .st
            .names()
            .into_iter()
            .filter(|n| !self.used.contains(*n) && !n.ends_with("position_ids"))
            .map(str::to_string)
            .collect();
        naming.ignored.sort();
        if let Some(extra) = naming
            .ignored
            .iter()
            .find(|n| n.contains(&format!("encoder.layer.{layer_count}.")))
        {
            return Err(EngineError::Checkpoint(format!(
                "{WEIGHTS_FILE} has {extra}, but config.json says num_hidden_layers is {layer_count}"
            )));
        }
        let model = BertForPreTraining {
            config,
            bert: BertModel {
                embeddings,
                layers,
                pooler,
            },
            cls,
        };
        Ok((model, naming))
    }

    fn heads(&mut self, config: &BertConfig) -> Result<BertPreTrainingHeads> {
        let (v, c) = (config.vocab_size, config.hidden_size);
        let transform = BertPredictionHeadTransform {
            dense: self.linear("cls.predictions.transform.dense", c, c)?,
            layer_norm: self.layer_norm("cls.predictions.transform", c)?,
        };
        if self.has("cls.predictions.decoder.weight") {
            // Tied to the word embeddings: only the shape is checked (HF re-ties on load).
            self.stored("cls.predictions.decoder.weight", &[v, c])?;
            self.naming.decoder_weight = true;
        }
        let decoder_bias = self.has("cls.predictions.decoder.bias");
        let bias = if self.has("cls.predictions.bias") || !decoder_bias {
            self.stored("cls.predictions.bias", &[v])?
        } else {
            self.stored("cls.predictions.decoder.bias", &[v])?
        };
        if decoder_bias {
            self.stored("cls.predictions.decoder.bias", &[v])?;
            self.naming.decoder_bias = true;
        }
        Ok(BertPreTrainingHeads {
            predictions: BertLMPredictionHead {
                transform,
                bias: Array1::from_vec(bias),
            },
            seq_relationship: self.linear("cls.seq_relationship", 2, c)?,
        })
    }
}

fn to_f32(name: &str, view: &TensorView) -> Result<Vec<f32>> {
    let bytes = view.data();
    let halves = || {
        bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    match view.dtype() {
        Dtype::F32 => Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()),
        Dtype::F16 => Ok(halves().map(f16_to_f32).collect()),
        // bfloat16 is the top half of an f32.
        Dtype::BF16 => Ok(halves().map(|h| f32::from_bits((h as u32) << 16)).collect()),
        other => Err(EngineError::Checkpoint(format!(
            "tensor {name} has dtype {other:?}; only F32, F16 and BF16 weights are supported"
        ))),
    }
}

/// IEEE binary16 → binary32, exact (every f16 is an f32), subnormals, ∞ and NaN included.
fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match (exp, mant) {
        (0, 0) => sign,
        // subnormal: mant · 2^-24
        (0, _) => {
            let magnitude = mant as f32 * f32::powi(2.0, -24);
            return if sign != 0 { -magnitude } else { magnitude };
        }
        (0x1f, _) => sign | 0x7f80_0000 | (mant << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (mant << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::vocab::build_word_vocab;

    const CORPUS: &str = "the cat sat on the mat. the dog ate the bone.";

    fn tiny_checkpoint() -> Checkpoint {
        let vocab = build_word_vocab(CORPUS).unwrap();
        let mut config = BertConfig::new(vocab.len(), 8, 2, 2, 16);
        config.max_position_embeddings = 16;
        let model = BertForPreTraining::init(&config, &mut Rng::new(1));
        Checkpoint::new(model, Tokenizer::word_piece(vocab, true)).unwrap()
    }

    /// Re-encodes `files.safetensors`: `rename` maps (or drops) each stored name, `dtype` picks
    /// the stored type of each tensor.
    fn rewrite(
        files: &CheckpointFiles,
        rename: impl Fn(&str) -> Option<String>,
        dtype: impl Fn(&str) -> Dtype,
    ) -> CheckpointFiles {
        let st = SafeTensors::deserialize(&files.safetensors).unwrap();
        let mut tensors = vec![];
        for (name, view) in st.tensors() {
            let Some(new_name) = rename(&name) else {
                continue;
            };
            let values = to_f32(&name, &view).unwrap();
            let kind = dtype(&new_name);
            let bytes: Vec<u8> = match kind {
                Dtype::F32 => f32_bytes(values.iter()),
                Dtype::BF16 => values
                    .iter()
                    .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
                    .collect(),
                Dtype::I64 => values
                    .iter()
                    .flat_map(|x| (*x as i64).to_le_bytes())
                    .collect(),
                _ => unreachable!(),
            };
            tensors.push((new_name, view.shape().to_vec(), kind, bytes));
        }
        let views = tensors
            .iter()
            .map(|(n, s, k, b)| (n.clone(), TensorView::new(*k, s.clone(), b).unwrap()));
        CheckpointFiles {
            safetensors: safetensors::tensor::serialize(views, None).unwrap(),
            ..files.clone()
        }
    }

    fn f32_only(_: &str) -> Dtype {
        Dtype::F32
    }

    fn load_err(files: &CheckpointFiles) -> String {
        load(files).unwrap_err().to_string()
    }

    /// Replaces the safetensors JSON header, keeping the data.
    fn with_header(
        files: &CheckpointFiles,
        edit: impl Fn(&mut serde_json::Value),
    ) -> CheckpointFiles {
        let bytes = &files.safetensors;
        let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
        edit(&mut header);
        let text = serde_json::to_vec(&header).unwrap();
        let mut out = (text.len() as u64).to_le_bytes().to_vec();
        out.extend(text);
        out.extend(&bytes[8 + n..]);
        CheckpointFiles {
            safetensors: out,
            ..files.clone()
        }
    }

    #[test]
    fn save_then_load_gives_the_same_model_and_tokenizer() {
        let original = tiny_checkpoint();
        let files = to_files(&original);
        let back = load(&files).unwrap();
        assert_eq!(back, original);
        let names: Vec<String> = SafeTensors::deserialize(&files.safetensors)
            .unwrap()
            .names()
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(names.contains(&"bert.encoder.layer.1.output.LayerNorm.weight".to_string()));
        assert!(names.contains(&"cls.predictions.bias".to_string()));
        assert!(!names.iter().any(|n| n.contains("decoder")), "{names:?}");
    }

    #[test]
    fn save_dir_and_load_dir_round_trip_and_missing_files_are_named() {
        let dir = std::env::temp_dir().join(format!("attention-lab-ckpt-{}", std::process::id()));
        let original = tiny_checkpoint();
        save_dir(&original, &dir).unwrap();
        assert_eq!(load_dir(&dir).unwrap(), original);
        std::fs::remove_file(dir.join(VOCAB_FILE)).unwrap();
        let e = load_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("vocab.txt is missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let e = load_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("is not a directory"), "{e}");
    }

    #[test]
    fn bare_bert_model_names_load_without_heads_and_save_back_the_same_names() {
        let files = to_files(&tiny_checkpoint());
        let bare = rewrite(
            &files,
            |n| match n.strip_prefix("bert.") {
                Some(rest) if !rest.starts_with("pooler") => Some(rest.to_string()),
                _ => None,
            },
            f32_only,
        );
        let ckpt = load(&bare).unwrap();
        assert!(ckpt.model.cls.is_none() && ckpt.model.bert.pooler.is_none());
        assert_eq!(ckpt.naming.prefix, "");
        assert_eq!(ckpt.model.bert.layers, tiny_checkpoint().model.bert.layers);
        let saved = to_files(&ckpt);
        let st = SafeTensors::deserialize(&saved.safetensors).unwrap();
        let mut names: Vec<&str> = st.names();
        names.sort();
        let st0 = SafeTensors::deserialize(&bare.safetensors).unwrap();
        let mut names0 = st0.names();
        names0.sort();
        assert_eq!(names, names0);
    }

    #[test]
    fn gamma_beta_tied_decoder_position_ids_and_extras() {
        let original = tiny_checkpoint();
        let files = to_files(&original);
        let st = SafeTensors::deserialize(&files.safetensors).unwrap();
        let (v, c) = original.model.bert.embeddings.word_embeddings.dim();
        // Add the tied decoder (with other values: they must be ignored), the decoder bias,
        // a position_ids buffer (I64) and an unknown classifier; rename LayerNorm to gamma/beta.
        let mut tensors: Vec<(String, Vec<usize>, Dtype, Vec<u8>)> = st
            .tensors()
            .into_iter()
            .map(|(n, t)| {
                (
                    n.replace("LayerNorm.weight", "LayerNorm.gamma")
                        .replace("LayerNorm.bias", "LayerNorm.beta"),
                    t.shape().to_vec(),
                    t.dtype(),
                    t.data().to_vec(),
                )
            })
            .collect();
        tensors.push((
            "cls.predictions.decoder.weight".into(),
            vec![v, c],
            Dtype::F32,
            f32_bytes(vec![9.0; v * c].iter()),
        ));
        let bias = original
            .model
            .cls
            .as_ref()
            .unwrap()
            .predictions
            .bias
            .clone();
        tensors.push((
            "cls.predictions.decoder.bias".into(),
            vec![v],
            Dtype::F32,
            f32_bytes(bias.iter()),
        ));
        tensors.push((
            "bert.embeddings.position_ids".into(),
            vec![1, 16],
            Dtype::I64,
            vec![0; 128],
        ));
        tensors.push((
            "classifier.weight".into(),
            vec![3, c],
            Dtype::F32,
            vec![0; 12 * c],
        ));
        let views = tensors
            .iter()
            .map(|(n, s, k, b)| (n.clone(), TensorView::new(*k, s.clone(), b).unwrap()));
        let files = CheckpointFiles {
            safetensors: safetensors::tensor::serialize(views, None).unwrap(),
            ..files.clone()
        };
        let ckpt = load(&files).unwrap();
        assert_eq!(ckpt.model, original.model);
        assert!(ckpt.naming.gamma_beta && ckpt.naming.decoder_weight && ckpt.naming.decoder_bias);
        assert_eq!(ckpt.naming.ignored, vec!["classifier.weight".to_string()]);
        let saved = SafeTensors::deserialize(&to_files(&ckpt).safetensors)
            .unwrap()
            .names()
            .len();
        // everything but position_ids and the classifier
        assert_eq!(saved, tensors.len() - 2);
        let resaved = to_files(&ckpt);
        let st = SafeTensors::deserialize(&resaved.safetensors).unwrap();
        assert!(st
            .tensor("bert.encoder.layer.0.output.LayerNorm.gamma")
            .is_ok());
        assert_eq!(
            to_f32("w", &st.tensor("cls.predictions.decoder.weight").unwrap()).unwrap(),
            original
                .model
                .bert
                .embeddings
                .word_embeddings
                .iter()
                .copied()
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn half_precision_weights_are_converted() {
        let files = to_files(&tiny_checkpoint());
        let bf16 = rewrite(&files, |n| Some(n.to_string()), |_| Dtype::BF16);
        let ckpt = load(&bf16).unwrap();
        let want = tiny_checkpoint()
            .model
            .bert
            .embeddings
            .word_embeddings
            .mapv(|x| f32::from_bits(x.to_bits() & 0xffff_0000));
        assert_eq!(ckpt.model.bert.embeddings.word_embeddings, want);
        // One F16 tensor among F32 ones: cls.predictions.bias = [1, −2, 0.5, 2^-24, …].
        let st = SafeTensors::deserialize(&files.safetensors).unwrap();
        let pattern = [0x3c00u16, 0xc000, 0x3800, 0x0001];
        let tensors: Vec<(String, Vec<usize>, Dtype, Vec<u8>)> = st
            .tensors()
            .into_iter()
            .map(|(n, t)| match n.as_str() {
                "cls.predictions.bias" => {
                    let v = t.shape()[0];
                    let bytes = (0..v).flat_map(|i| pattern[i % 4].to_le_bytes()).collect();
                    (n, vec![v], Dtype::F16, bytes)
                }
                _ => (n, t.shape().to_vec(), t.dtype(), t.data().to_vec()),
            })
            .collect();
        let views = tensors
            .iter()
            .map(|(n, s, k, b)| (n.clone(), TensorView::new(*k, s.clone(), b).unwrap()));
        let f16 = CheckpointFiles {
            safetensors: safetensors::tensor::serialize(views, None).unwrap(),
            ..files.clone()
        };
        let bias = load(&f16).unwrap().model.cls.unwrap().predictions.bias;
        assert_eq!(
            bias.iter().take(4).copied().collect::<Vec<_>>(),
            [1.0, -2.0, 0.5, 2f32.powi(-24)]
        );
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8001), -(2f32.powi(-24)));
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0xfc00), f32::NEG_INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
    }

    #[test]
    fn corrupt_safetensors_are_errors() {
        let files = to_files(&tiny_checkpoint());
        let cut = |n: usize| CheckpointFiles {
            safetensors: files.safetensors[..n].to_vec(),
            ..files.clone()
        };
        for n in [0, 5, 100, files.safetensors.len() - 1] {
            assert!(
                load_err(&cut(n)).contains("not a valid safetensors file"),
                "cut at {n}"
            );
        }
        let mut huge = files.clone();
        huge.safetensors[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(load_err(&huge).contains("not a valid safetensors file"));
        let mut bad_json = files.clone();
        bad_json.safetensors[8] = b'x';
        assert!(
            load_err(&bad_json).contains("JSON"),
            "{}",
            load_err(&bad_json)
        );
        let out_of_range = with_header(&files, |h| {
            let end = h["cls.predictions.bias"]["data_offsets"][1]
                .as_u64()
                .unwrap();
            h["cls.predictions.bias"]["data_offsets"][1] = (end + 1_000_000).into();
        });
        assert!(load_err(&out_of_range).contains("not a valid safetensors file"));
        let int_weights = rewrite(
            &files,
            |n| Some(n.to_string()),
            |n| {
                if n.ends_with("query.weight") {
                    Dtype::I64
                } else {
                    Dtype::F32
                }
            },
        );
        assert!(
            load_err(&int_weights).contains("dtype I64"),
            "{}",
            load_err(&int_weights)
        );
    }

    #[test]
    fn wrong_shapes_and_missing_tensors_are_named() {
        let files = to_files(&tiny_checkpoint());
        let transposed = with_header(&files, |h| {
            h["bert.encoder.layer.1.intermediate.dense.weight"]["shape"] =
                serde_json::json!([8, 16]);
        });
        let e = load_err(&transposed);
        assert!(e.contains("bert.encoder.layer.1.intermediate.dense.weight has shape [8, 16], expected [16, 8]"), "{e}");
        let missing = rewrite(
            &files,
            |n| (n != "bert.encoder.layer.0.attention.self.key.bias").then(|| n.to_string()),
            f32_only,
        );
        assert!(load_err(&missing)
            .contains("missing the required tensor bert.encoder.layer.0.attention.self.key.bias"));
        let no_heads_transform = rewrite(
            &files,
            |n| (!n.starts_with("cls.predictions.transform.dense")).then(|| n.to_string()),
            f32_only,
        );
        assert!(load_err(&no_heads_transform).contains("cls.predictions.transform.dense.weight"));
        let no_pooler = rewrite(
            &files,
            |n| (!n.contains("pooler")).then(|| n.to_string()),
            f32_only,
        );
        assert!(
            load_err(&no_pooler).contains("no pooler"),
            "{}",
            load_err(&no_pooler)
        );
        let no_embeddings = rewrite(
            &files,
            |n| (!n.contains("word_embeddings")).then(|| n.to_string()),
            f32_only,
        );
        assert!(load_err(&no_embeddings).contains("no BERT word embeddings"));
        let mut fewer_layers = files.clone();
        fewer_layers.config_json = fewer_layers
            .config_json
            .replace("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1");
        assert!(
            load_err(&fewer_layers).contains("num_hidden_layers is 1"),
            "{}",
            load_err(&fewer_layers)
        );
    }

    #[test]
    fn bad_configs_and_vocabularies_are_errors() {
        let files = to_files(&tiny_checkpoint());
        let edit = |from: &str, to: &str| CheckpointFiles {
            config_json: files.config_json.replace(from, to),
            ..files.clone()
        };
        assert!(
            matches!(load(&edit("\"gelu\"", "\"relu\"")), Err(EngineError::Config(m)) if m.contains("relu"))
        );
        assert!(
            matches!(load(&edit("\"num_attention_heads\": 2", "\"num_attention_heads\": 3")), Err(EngineError::Config(m)) if m.contains("divisible"))
        );
        assert!(matches!(
            load(&CheckpointFiles {
                config_json: "{".into(),
                ..files.clone()
            }),
            Err(EngineError::Config(_))
        ));
        assert!(matches!(
            load(&CheckpointFiles {
                vocab_txt: String::new(),
                ..files.clone()
            }),
            Err(EngineError::Vocab(_))
        ));
        let longer = CheckpointFiles {
            vocab_txt: format!("{}extra\n", files.vocab_txt),
            ..files.clone()
        };
        assert!(matches!(load(&longer), Err(EngineError::Vocab(m)) if m.contains("vocab_size")));
        // A shorter vocab.txt than the embeddings (padded matrices) loads.
        let n = files.vocab_txt.lines().count();
        let shorter: String = files
            .vocab_txt
            .lines()
            .take(n - 1)
            .map(|l| format!("{l}\n"))
            .collect();
        let ckpt = load(&CheckpointFiles {
            vocab_txt: shorter,
            ..files.clone()
        })
        .unwrap();
        assert_eq!(
            ckpt.tokenizer.vocab().len(),
            ckpt.model.config.vocab_size - 1
        );
    }

    #[test]
    fn oversized_files_are_refused_before_reading() {
        assert!(check_file_size("model.safetensors", MAX_FILE_BYTES).is_ok());
        let e = check_file_size("model.safetensors", MAX_FILE_BYTES + 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("model.safetensors") && e.contains("refused"),
            "{e}"
        );
    }
}
