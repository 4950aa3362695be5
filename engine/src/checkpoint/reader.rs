//! `Reader`: the model built tensor by tensor from a parsed safetensors file, in the shapes
//! config.json implies, with the source's naming and the tensors it did not use.

use super::dtype::to_f32;
use super::{TensorNaming, WEIGHTS_FILE};
use crate::config::BertConfig;
use crate::config::PositionEmbeddingType;
use crate::error::{EngineError, Result};
use crate::model::{BertForPreTraining, Parts};
use safetensors::tensor::SafeTensors;
use std::collections::HashSet;

/// Builds the model tensor by tensor from a parsed safetensors file, in the shape the config
/// says, remembering which stored names it used.
pub(super) struct Reader<'a> {
    st: &'a SafeTensors<'a>,
    naming: TensorNaming,
    used: HashSet<String>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(st: &'a SafeTensors<'a>) -> Result<Self> {
        let names: HashSet<&str> = st.names().into_iter().collect();
        // BertForPreTraining and other task models: "bert."; RoFormerForMaskedLM: "roformer.";
        // a bare BertModel or RoFormerModel: none.
        let Some(prefix) = ["bert.", "roformer.", ""]
            .into_iter()
            .find(|p| names.contains(format!("{p}embeddings.word_embeddings.weight").as_str()))
        else {
            return Err(EngineError::Checkpoint(format!(
                "{WEIGHTS_FILE} has no BERT word embeddings (none of bert.embeddings.word_embeddings.weight, \
                 roformer.embeddings.word_embeddings.weight or embeddings.word_embeddings.weight among its {} tensors)",
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
        let stored = self.naming.source_name(name);
        // Some checkpoints store the MLM bias only as its tied copy.
        if name == "cls.predictions.bias"
            && !self.has(&stored)
            && self.has("cls.predictions.decoder.bias")
        {
            return self.stored("cls.predictions.decoder.bias", shape);
        }
        self.stored(&stored, shape)
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

    pub(super) fn model(
        mut self,
        config: BertConfig,
    ) -> Result<(BertForPreTraining, TensorNaming)> {
        // A decoder (`BertLMHeadModel`) has the LM head alone; an encoder's MLM head is used
        // only with NSP beside it (`BertForPreTraining`).
        let nsp = self.has("cls.seq_relationship.weight");
        let parts = Parts {
            pooler: self.has(&self.naming.source_name("bert.pooler.dense.weight")),
            heads: nsp || (config.is_decoder && self.has("cls.predictions.transform.dense.weight")),
            nsp,
        };
        if parts.nsp && !parts.pooler {
            return Err(EngineError::Checkpoint(format!(
                "{WEIGHTS_FILE} has the NSP head cls.seq_relationship but no pooler ({}pooler.dense.weight) to feed it",
                self.naming.prefix
            )));
        }
        // Every parameter the description lists for this config, in its shape.
        let model = BertForPreTraining::from_fn(&config, parts, |spec| {
            self.tensor(&spec.name, &spec.shape)
        })?;
        if parts.heads {
            self.tied_copies(&config)?;
        }
        let mut naming = self.naming;
        let layer_count = config.num_hidden_layers;
        naming.ignored = self
            .st
            .names()
            .into_iter()
            .filter(|n| !self.used.contains(*n) && !is_derived_buffer(n))
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
        if config.position_embedding_type != PositionEmbeddingType::Absolute {
            if let Some(extra) = naming
                .ignored
                .iter()
                .find(|n| n.ends_with("embeddings.position_embeddings.weight"))
            {
                return Err(EngineError::Checkpoint(format!(
                    "{WEIGHTS_FILE} has learned positions {extra}, but config.json says position_embedding_type is \"{}\"",
                    config.position_embedding_type
                )));
            }
        }
        Ok((model, naming))
    }

    /// `cls.predictions.decoder.{weight,bias}`: HF's tied copies of the word embeddings and of
    /// `cls.predictions.bias`. HF re-ties the weight on load, so only its shape is checked;
    /// the bias copy stands in for `cls.predictions.bias` when only it was stored.
    fn tied_copies(&mut self, config: &BertConfig) -> Result<()> {
        let (v, c) = (config.vocab_size, config.hidden_size);
        if self.has("cls.predictions.decoder.weight") {
            self.stored("cls.predictions.decoder.weight", &[v, c])?;
            self.naming.decoder_weight = true;
        }
        if self.has("cls.predictions.decoder.bias") {
            self.stored("cls.predictions.decoder.bias", &[v])?;
            self.naming.decoder_bias = true;
        }
        Ok(())
    }
}

/// Buffers a model computes itself rather than learns: BERT's `position_ids`, RoFormer's
/// sinusoidal table `encoder.embed_positions.weight`. Neither is used nor listed as ignored.
fn is_derived_buffer(name: &str) -> bool {
    name.ends_with("position_ids") || name.ends_with("encoder.embed_positions.weight")
}
