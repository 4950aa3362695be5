//! Checks run before the forward pass: a model whose parameters contradict its config, or a
//! batch a user built, is an error here rather than a panic in an op.

use crate::batch::{Batch, IGNORE_INDEX};
use crate::error::{EngineError, Result};
use crate::model::BertForPreTraining;

/// Every parameter must have the shape its config implies (a hand-edited config next to
/// other weights would otherwise surface as an ndarray panic deep in a matmul).
pub(super) fn check_model(model: &BertForPreTraining) -> Result<()> {
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
pub(super) fn validate(model: &BertForPreTraining, batch: &Batch) -> Result<()> {
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
