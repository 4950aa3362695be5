//! Checks run before the forward pass: a model whose parameters contradict its config, or a
//! batch a user built, is an error here rather than a panic in an op.

use crate::batch::{Batch, IGNORE_INDEX};
use crate::config::{PositionEmbeddingType, MAX_POSITION_EMBEDDINGS};
use crate::error::{EngineError, Result};
use crate::model::BertForPreTraining;

/// Every parameter must be the one the description gives the config (see
/// `BertForPreTraining::check_against_config`).
pub(super) fn check_model(model: &BertForPreTraining) -> Result<()> {
    model.check_against_config()
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
    // Learned positions stop at P; rotary positions are computed for any t, up to the bound
    // every P has.
    if config.position_embedding_type == PositionEmbeddingType::Absolute
        && t > config.max_position_embeddings
    {
        return err(format!(
            "sequence length {t} exceeds max_position_embeddings {} (the model's learned absolute positions)",
            config.max_position_embeddings
        ));
    }
    if t > MAX_POSITION_EMBEDDINGS {
        return err(format!(
            "sequence length {t} is too large: the limit is {MAX_POSITION_EMBEDDINGS}"
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
