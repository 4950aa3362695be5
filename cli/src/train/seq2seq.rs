//! `train --objective seq2seq` for encoder–decoders: from a corpus task, or a checkpoint on a
//! fixed batch. (Their checkpoints are read by `crate::load_seq2seq_checkpoint`.)

use super::{optimizer, read_text, required, usage_error, Args};
use crate::attention_flags::Mask;
use crate::json;
use crate::CliError;
use engine::checkpoint::write_dir;
use engine::data::{max_predictions, BatchConfig};
use engine::forward::ForwardOptions;
use engine::ops::attention::Softmax;
use engine::optim::OptimizerKind;
use engine::seq2seq::{self, Seq2SeqBatch, Seq2SeqCheckpoint, Seq2SeqTrainer};
use engine::{EngineError, MaskMode};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Serialize)]
struct Step {
    step: u64,
    loss: f32,
    /// How often the argmax was the target token.
    accuracy: f32,
}

fn save(checkpoint: &Seq2SeqCheckpoint, out: Option<&Path>) -> Result<(), CliError> {
    if let Some(out) = out {
        write_dir(&seq2seq::to_files(checkpoint), out)?;
        eprintln!("saved {}", out.display());
    }
    Ok(())
}

/// `--mask`, `--window` and `--attention` choose the one-BERT attention; an encoder–decoder's
/// source is padded, its decoder causal and its cross-attention full.
fn refuse_attention_flags(a: &Args) -> Result<(), CliError> {
    let softmax = a.attention.resolve("train")?;
    if softmax != Softmax::default() || !matches!(a.mask, Mask::Padding) {
        return Err(usage_error(
            "--mask, --window and --attention are not for encoder–decoders (the source is padded, the decoder causal)",
        ));
    }
    Ok(())
}

/// `--init CONFIG --corpus FILE --objective seq2seq [--task copy|reverse|reply]`.
pub fn from_scratch(a: &Args) -> Result<(), CliError> {
    refuse_attention_flags(a)?;
    let config_path = required(a.init.as_deref());
    let corpus_path = super::corpus_path(a)?;
    let (config, _) = super::init_config(config_path)?;
    let max_len = a.max_len.unwrap_or(config.max_position_embeddings.min(32));
    let batch = BatchConfig {
        batch_size: a.batch_size.unwrap_or(16),
        max_len,
        mask_prob: 0.15,
        max_predictions: max_predictions(max_len, 0.15),
    };
    let lr = a.lr.unwrap_or(1e-3);
    let task = a
        .task
        .and_then(super::TaskFlag::seq2seq)
        .unwrap_or(seq2seq::Task::Copy);
    let mut trainer = Seq2SeqTrainer::from_corpus(
        &read_text(corpus_path)?,
        config,
        optimizer(a, Some(OptimizerKind::Adam), lr)?,
        batch,
        task,
        a.seed.unwrap_or(0),
    )?;
    eprintln!(
        "encoder–decoder: {} + {} parameters; corpus: {} sentences, {} examples of {task:?}",
        trainer.model.encoder.num_params(),
        trainer.model.decoder.num_params(),
        trainer.corpus.len(),
        task.examples(&trainer.corpus)
    );
    let steps = a.steps.unwrap_or(100);
    for step in 1..=steps {
        let r = trainer
            .step()
            .inspect_err(|_| eprintln!("stopped at step {step} of {steps}; nothing saved"))?;
        json::print(&Step {
            step: r.step,
            loss: r.losses.total,
            accuracy: r.losses.mlm_accuracy,
        });
    }
    save(&trainer.checkpoint(), a.save.as_deref())
}

/// A seq2seq batch file: the source, the labels, and the decoder's inputs and mask (as
/// `EncoderDecoderModel` takes them).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchFile {
    input_ids: Vec<Vec<u32>>,
    attention_mask: Option<Vec<Vec<u8>>>,
    labels: Vec<Vec<i64>>,
    decoder_input_ids: Option<Vec<Vec<u32>>>,
    decoder_attention_mask: Option<Vec<Vec<u8>>>,
}

fn matrix<T: Clone>(name: &str, rows: Vec<Vec<T>>) -> Result<Array2<T>, CliError> {
    let (b, t) = (rows.len(), rows.first().map_or(0, Vec::len));
    if b == 0 || t == 0 || rows.iter().any(|r| r.len() != t) {
        return Err(EngineError::Input(format!(
            "{name} must be a non-empty list of equal-length lists"
        ))
        .into());
    }
    Ok(Array2::from_shape_vec((b, t), rows.concat()).expect("rectangular"))
}

/// `--model DIR --batch FILE` for an encoder–decoder checkpoint.
pub fn fixed_batch(a: &Args) -> Result<(), CliError> {
    refuse_attention_flags(a)?;
    let dir = required(a.model.as_deref());
    let batch_path = required(a.batch.as_deref());
    let lr = required(a.lr);
    let steps = required(a.steps);
    let Seq2SeqCheckpoint {
        mut model,
        tokenizer,
    } = crate::load_seq2seq_checkpoint(dir)?;
    let text = read_text(batch_path)?;
    let file: BatchFile = serde_json::from_str(&text).map_err(|e| {
        EngineError::Input(format!(
            "{}: not a seq2seq batch: {e}",
            batch_path.display()
        ))
    })?;
    let source = matrix("input_ids", file.input_ids)?;
    let source_mask = match file.attention_mask {
        Some(rows) => matrix("attention_mask", rows)?,
        None => Array2::ones(source.raw_dim()),
    };
    let labels = matrix("labels", file.labels)?;
    if source_mask.dim() != source.dim() || labels.nrows() != source.nrows() {
        return Err(EngineError::Input(
            "attention_mask must match input_ids, and labels have a row per source".into(),
        )
        .into());
    }
    let mut batch = Seq2SeqBatch::new(
        source,
        source_mask,
        labels,
        model.decoder_start_token_id,
        model.pad_token_id,
    );
    if let Some(rows) = file.decoder_input_ids {
        batch.target.input_ids = matrix("decoder_input_ids", rows)?;
    }
    if let Some(rows) = file.decoder_attention_mask {
        batch.target.attention_mask = matrix("decoder_attention_mask", rows)?;
    }
    let target_shape = batch.target.input_ids.dim();
    if batch.target.attention_mask.dim() != target_shape
        || batch.target.mlm_labels.as_ref().map(Array2::dim) != Some(target_shape)
    {
        return Err(EngineError::Input(
            "decoder_input_ids, decoder_attention_mask and labels must have the same shape".into(),
        )
        .into());
    }
    let opts = ForwardOptions::training(MaskMode::Padding);
    let run = (optimizer(a, None, lr)?, a.seed.unwrap_or(0), steps);
    super::fixed_batch_steps(&mut model, &batch, &opts, run, |step, l| {
        json::print(&Step {
            step,
            loss: l.total,
            accuracy: l.mlm_accuracy,
        })
    })?;
    save(&Seq2SeqCheckpoint { model, tokenizer }, a.save.as_deref())
}
