//! `train --init CONFIG --task repeat`: a decoder learns the Repeat task (`engine::repeat`)
//! while the induction scores are measured (`engine::experiments::induction`). One JSON line
//! per evaluation, so that the phase change and the heads that copy can be read off.

use super::{init_config, optimizer, required, usage_error, Args, ObjectiveFlag, Setting};
use crate::json;
use crate::CliError;
use engine::data::BatchConfig;
use engine::experiments::induction::{self, HeadScores, InductionMeasure};
use engine::optim::{OptimizerConfig, OptimizerKind};
use engine::repeat::RepeatTask;
use engine::train::{Objective, TrainSettings, Trainer};
use engine::BertConfig;
use engine::MaskMode;
use protocol::fields;
use serde::Serialize;

/// One evaluation: the mean training loss since the last one, the accuracy on each copy and
/// every head's scores.
#[derive(Serialize)]
struct Evaluation {
    step: u64,
    /// The mean training loss over the steps since the last evaluation (None at step 0).
    loss: Option<f32>,
    copy1_accuracy: f64,
    copy2_accuracy: f64,
    heads: Vec<Head>,
}

/// One head's scores, numbered from 1 as the page names heads (L1 H1).
#[derive(Serialize)]
struct Head {
    layer: usize,
    head: usize,
    #[serde(flatten)]
    scores: HeadScores,
}

/// The last line: the second copy's accuracy with each head ablated in turn.
#[derive(Serialize)]
struct Ablations {
    step: u64,
    copy2_accuracy: f64,
    copy2_accuracy_without: Vec<AblatedHead>,
}

#[derive(Serialize)]
struct AblatedHead {
    layer: usize,
    head: usize,
    copy2_accuracy: f64,
}

/// `--segment MIN-MAX`.
fn segment(text: &str) -> Result<(usize, usize), CliError> {
    let bad = || usage_error(format!("--segment wants MIN-MAX, e.g. 4-24, not {text:?}"));
    let (min, max) = text.split_once('-').ok_or_else(bad)?;
    Ok((
        min.trim().parse().map_err(|_| bad())?,
        max.trim().parse().map_err(|_| bad())?,
    ))
}

/// The task the flags ask for (`--alphabet`, `--segment`), the Repeat task's defaults
/// otherwise; an error for a flag `--task repeat` does not take.
fn repeat_task(a: &Args) -> Result<RepeatTask, CliError> {
    if a.objective.is_some_and(|o| o != ObjectiveFlag::NEXT_TOKEN) {
        return Err(usage_error(format!(
            "--task {} trains a decoder: --objective {}",
            fields::REPEAT_TASK.name,
            fields::NEXT_TOKEN.name
        )));
    }
    if a.corpus.is_some() || a.max_len.is_some() {
        return Err(usage_error(
            "--task repeat makes its own sequences: no --corpus or --max-len (see --segment)",
        ));
    }
    let defaults = RepeatTask::default();
    let (min_len, max_len) = match &a.segment {
        Some(text) => segment(text)?,
        None => (defaults.min_len, defaults.max_len),
    };
    let task = RepeatTask {
        alphabet: a.alphabet.unwrap_or(defaults.alphabet),
        min_len,
        max_len,
    };
    task.validate()?;
    Ok(task)
}

pub fn run(a: &Args) -> Result<(), CliError> {
    let task = repeat_task(a)?;
    let config_path = required(a.init.as_deref());
    let every = a.eval_every.unwrap_or(100);
    if every == 0 {
        return Err(usage_error("--eval-every must be at least 1"));
    }
    let steps = a.steps.unwrap_or(3000);
    // The page's Repeat setting, unless a flag says otherwise: and then stderr says so.
    let mut setting = Setting::new(
        "the Repeat setting's",
        ", the one measured to form induction heads",
    );
    let batch_size = setting.chosen(a.batch_size, RepeatTask::BATCH_SIZE, "--batch-size");
    if batch_size == 0 || batch_size > super::MAX_BATCH_SIZE {
        return Err(usage_error(format!(
            "--batch-size must be from 1 to {}, got {batch_size}",
            super::MAX_BATCH_SIZE
        )));
    }
    let lr = setting.chosen(a.lr, RepeatTask::LEARNING_RATE, "--lr");
    let warmup = setting.chosen(a.warmup, RepeatTask::WARMUP_STEPS, "--warmup");
    let (stated, _) = init_config(config_path)?;
    let repeat = task.setting_config(stated.clone());
    let config = BertConfig {
        position_embedding_type: setting.chosen(a.positions, RepeatTask::POSITIONS, "--positions"),
        num_attention_heads: setting.chosen(a.heads, repeat.num_attention_heads, "--heads"),
        hidden_dropout_prob: setting.chosen(a.dropout, repeat.hidden_dropout_prob, "--dropout"),
        attention_probs_dropout_prob: a.dropout.unwrap_or(repeat.attention_probs_dropout_prob),
        ..repeat
    };
    // What CONFIG said and the run does not do, with no flag to say so.
    let replaced = [
        (
            a.positions.is_none()
                && stated.position_embedding_type != config.position_embedding_type,
            format!(
                "position_embedding_type {:?}",
                stated.position_embedding_type.to_string()
            ),
        ),
        (
            a.heads.is_none() && stated.num_attention_heads != config.num_attention_heads,
            format!("num_attention_heads {}", stated.num_attention_heads),
        ),
        (
            a.dropout.is_none()
                && (stated.hidden_dropout_prob != config.hidden_dropout_prob
                    || stated.attention_probs_dropout_prob != config.attention_probs_dropout_prob),
            format!(
                "dropout {}/{}",
                stated.hidden_dropout_prob, stated.attention_probs_dropout_prob
            ),
        ),
    ];
    for (_, what) in replaced.iter().filter(|(differs, _)| *differs) {
        setting.notes.push(format!(
            "CONFIG's {what} is replaced by the Repeat setting's (--positions, --heads, --dropout keep another)"
        ));
    }
    setting.say();
    let optimizer = OptimizerConfig {
        warmup_steps: warmup,
        ..optimizer(a, Some(OptimizerKind::Adam), lr)?
    };
    let settings = TrainSettings {
        optimizer,
        batch: BatchConfig {
            batch_size,
            ..BatchConfig::default()
        },
        mask: MaskMode::Causal,
        objective: Objective::NextToken,
    };
    let mut trainer = Trainer::repeat(task, config, settings, a.seed.unwrap_or(0))?;
    trainer.softmax = a.attention.resolve("train")?;
    let c = &trainer.model.config;
    eprintln!(
        "model: {} parameters, {} heads, {} positions, dropout {}; Repeat: {} symbols, L {}–{}, batch {batch_size}, lr {lr} after {warmup} warm-up steps; measured at L = {} on {} rows",
        trainer.model.num_params(),
        c.num_attention_heads,
        c.position_embedding_type,
        c.hidden_dropout_prob,
        task.alphabet,
        task.min_len,
        task.max_len,
        task.evaluation_len(),
        induction::EVALUATION_ROWS
    );
    train_measuring(&mut trainer, &task, (steps, every))?;
    super::save(&trainer.checkpoint(), a.save.as_deref())
}

/// `steps` training steps, the induction scores measured every `every` steps (and at the first
/// and last), each a JSON line; then the ablations' line.
fn train_measuring(
    trainer: &mut Trainer,
    task: &RepeatTask,
    (steps, every): (u64, u64),
) -> Result<(), CliError> {
    let evaluate = |trainer: &Trainer, loss| -> Result<InductionMeasure, CliError> {
        let m = induction::measure(&trainer.model, task, &trainer.forward_options())?;
        json::print(&Evaluation {
            step: trainer.stepper.step,
            loss,
            copy1_accuracy: m.copy1_accuracy,
            copy2_accuracy: m.copy2_accuracy,
            heads: m
                .heads
                .iter()
                .enumerate()
                .map(|(k, &scores)| Head {
                    layer: k / m.heads_per_layer + 1,
                    head: k % m.heads_per_layer + 1,
                    scores,
                })
                .collect(),
        });
        Ok(m)
    };
    let mut last = evaluate(trainer, None)?;
    let mut loss_sum = 0.0;
    for step in 1..=steps {
        let r = trainer
            .step()
            .inspect_err(|_| eprintln!("stopped at step {step} of {steps}; nothing saved"))?;
        loss_sum += r.losses.total;
        if step % every == 0 || step == steps {
            let since = (step - 1) % every + 1;
            last = evaluate(trainer, Some(loss_sum / since as f32))?;
            loss_sum = 0.0;
        }
    }
    let without = induction::ablations(&trainer.model, task, &trainer.forward_options())?;
    json::print(&Ablations {
        step: trainer.stepper.step,
        copy2_accuracy: last.copy2_accuracy,
        copy2_accuracy_without: without
            .iter()
            .enumerate()
            .map(|(k, &copy2_accuracy)| AblatedHead {
                layer: k / last.heads_per_layer + 1,
                head: k % last.heads_per_layer + 1,
                copy2_accuracy,
            })
            .collect(),
    });
    Ok(())
}
