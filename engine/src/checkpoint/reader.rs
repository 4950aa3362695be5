//! `Reader`: the model built tensor by tensor from a parsed safetensors file, in the shapes
//! config.json implies, with the source's naming and the tensors it did not use.

use super::dtype::to_f32;
use super::{TensorNaming, WEIGHTS_FILE};
use crate::config::BertConfig;
use crate::error::{EngineError, Result};
use crate::model::{
    BertAttention, BertEmbeddings, BertForPreTraining, BertIntermediate, BertLMPredictionHead,
    BertLayer, BertModel, BertOutput, BertPooler, BertPreTrainingHeads,
    BertPredictionHeadTransform, BertSelfAttention, BertSelfOutput, LayerNorm, Linear,
};
use ndarray::{Array1, Array2};
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

    pub(super) fn model(
        mut self,
        config: BertConfig,
    ) -> Result<(BertForPreTraining, TensorNaming)> {
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
