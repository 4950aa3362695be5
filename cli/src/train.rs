//! `attention-lab train`: fine-tune a checkpoint on one fixed batch, or pre-train from scratch
//! on a corpus through the data pipeline. One JSON line per step on stdout.

use crate::args::{Flags, Spec, UsageError};
use crate::inspect::parse_mask;
use crate::json;
use crate::{flags, load_checkpoint, usage, CliError};
use engine::batch::Batch;
use engine::checkpoint::{save_dir, Checkpoint};
use engine::data::BatchConfig;
use engine::optim::{Optimizer, OptimizerConfig, OptimizerKind};
use engine::train::{train_step, TrainSettings, Trainer};
use engine::{BertConfig, EngineError, Rng};
use serde::Serialize;
use std::path::Path;

pub const SPEC: Spec = Spec {
    flags: &[
        "model", "batch", "init", "corpus", "optimizer", "lr", "steps", "save", "seed", "batch-size", "max-len", "mask",
        "momentum", "weight-decay", "clip-grad-norm",
    ],
    help: "\
attention-lab train --model DIR --batch FILE.json --optimizer sgd|adam --lr F --steps N [--save OUT]
                    [--seed S] [--mask padding|causal|none]
  Trains the checkpoint in DIR (it needs its pre-training heads) for N steps on one fixed batch:
  a JSON object of lists with one entry per example: input_ids, token_type_ids, attention_mask
  (both optional: zeros / ones), mlm_labels (-100 = ignore) and nsp_labels (0 = IsNext).
  Dropout as config.json says, seeded by S (default 0). Prints one line per step:
  {\"step\", \"loss\", \"mlm_loss\", \"nsp_loss\"}, the loss before that step's update. OUT is written as a
  checkpoint with the tensor names of DIR.

attention-lab train --init CONFIG.json --corpus FILE.txt [--steps N] [--batch-size B] [--max-len T]
                    [--seed S] [--lr F] [--optimizer sgd|adam] [--mask padding|causal|none] [--save OUT]
  Pre-trains a new model from CONFIG.json on FILE.txt (one sentence per line, blank lines ignored),
  with a word-level vocabulary built from the corpus: CONFIG's vocab_size is replaced by the
  vocabulary's size. MLM (15% masked) + NSP batches. Defaults: N 100, B 8, T min(64,
  max_position_embeddings), S 0, lr 1e-3, adam. Prints one line per step:
  {\"step\", \"loss\", \"mlm_loss\", \"nsp_loss\", \"mlm_accuracy\", \"nsp_accuracy\"}.

Optimisers are torch.optim.SGD / torch.optim.Adam with their defaults, changed by (both modes):
  --momentum F        SGD momentum (torch's, dampening 0)
  --weight-decay F    SGD: L2 added to the gradient; Adam: decoupled, as torch.optim.AdamW
  --clip-grad-norm F  torch.nn.utils.clip_grad_norm_ with max_norm F before each update
A NaN or infinite loss stops the run with exit code 1, nothing saved.",
};

#[derive(Serialize)]
struct FixedStep {
    step: u64,
    loss: f32,
    mlm_loss: f32,
    nsp_loss: f32,
}

#[derive(Serialize)]
struct CorpusStep {
    step: u64,
    loss: f32,
    mlm_loss: f32,
    nsp_loss: f32,
    mlm_accuracy: f32,
    nsp_accuracy: f32,
}

/// The batch file: one list entry per example.

pub fn run(args: &[String]) -> Result<(), CliError> {
    let Some(f) = flags(args, &SPEC)? else {
        return Ok(());
    };
    match (f.has("model"), f.has("init")) {
        (true, false) => fixed_batch(&f),
        (false, true) => from_scratch(&f),
        _ => Err(CliError::Usage(
            UsageError(
                "give either --model DIR (with --batch) or --init CONFIG.json (with --corpus)"
                    .into(),
            ),
            SPEC.help,
        )),
    }
}

fn refuse(f: &Flags, names: &[&str], mode: &str) -> Result<(), CliError> {
    match names.iter().find(|n| f.has(n)) {
        Some(n) => usage(
            Err(UsageError(format!("--{n} does not go with {mode}"))),
            &SPEC,
        ),
        None => Ok(()),
    }
}

fn optimizer(f: &Flags, default: Option<&str>, lr: f64) -> Result<OptimizerConfig, CliError> {
    let kind = match f.optional("optimizer").or(default) {
        Some("sgd") => OptimizerConfig::sgd(lr),
        Some("adam") => OptimizerConfig::adam(lr),
        Some(other) => {
            return usage(
                Err(UsageError(format!(
                    "--optimizer must be sgd or adam, got {other:?}"
                ))),
                &SPEC,
            )
        }
        None => return usage(Err(UsageError("--optimizer is required".into())), &SPEC),
    };
    let config = OptimizerConfig {
        momentum: usage(f.parsed_or("momentum", "a number", 0.0), &SPEC)?,
        weight_decay: usage(f.parsed_or("weight-decay", "a number", 0.0), &SPEC)?,
        clip_grad_norm: usage(f.parsed("clip-grad-norm", "a number"), &SPEC)?,
        ..kind
    };
    if config.momentum != 0.0 && config.kind != OptimizerKind::Sgd {
        return usage(
            Err(UsageError("--momentum is for --optimizer sgd".into())),
            &SPEC,
        );
    }
    Ok(config)
}

fn read_text(path: &str) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| {
        CliError::Engine(EngineError::Io {
            path: path.to_string(),
            message: e.to_string(),
        })
    })
}

fn save(checkpoint: &Checkpoint, out: Option<&str>) -> Result<(), CliError> {
    if let Some(out) = out {
        save_dir(checkpoint, Path::new(out))?;
        eprintln!("saved {out}");
    }
    Ok(())
}

fn fixed_batch(f: &Flags) -> Result<(), CliError> {
    refuse(f, &["corpus", "batch-size", "max-len"], "--model")?;
    let dir = usage(f.required("model"), &SPEC)?;
    let batch_path = usage(f.required("batch"), &SPEC)?;
    let lr: f64 = usage(f.required_parsed("lr", "a number"), &SPEC)?;
    let steps: u64 = usage(f.required_parsed("steps", "a whole number"), &SPEC)?;
    let seed: u64 = usage(f.parsed_or("seed", "a whole number", 0), &SPEC)?;
    let mask = usage(parse_mask(f.optional("mask")), &SPEC)?;
    let opt_config = optimizer(f, None, lr)?;

    let Checkpoint {
        mut model,
        tokenizer,
        naming,
    } = load_checkpoint(dir)?;
    let batch = read_batch(batch_path)?;
    let mut optimizer = Optimizer::new(opt_config, &model)?;
    let mut grads = model.zeros_like();
    let mut rng = Rng::new(seed);
    for step in 1..=steps {
        let l = train_step(
            &mut model,
            &mut grads,
            &mut optimizer,
            &batch,
            mask,
            &mut rng,
        )
        .inspect_err(|_| eprintln!("stopped at step {step} of {steps}; nothing saved"))?;
        json::print(&FixedStep {
            step,
            loss: l.total,
            mlm_loss: l.mlm,
            nsp_loss: l.nsp,
        });
    }
    save(
        &Checkpoint {
            model,
            tokenizer,
            naming,
        },
        f.optional("save"),
    )
}

fn read_batch(path: &str) -> Result<Batch, CliError> {
    Batch::from_json(&read_text(path)?).map_err(|e| match e {
        EngineError::Input(m) => CliError::Engine(EngineError::Input(format!("{path}: {m}"))),
        other => CliError::Engine(other),
    })
}

fn from_scratch(f: &Flags) -> Result<(), CliError> {
    refuse(f, &["batch"], "--init")?;
    let config_path = usage(f.required("init"), &SPEC)?;
    let corpus_path = usage(f.required("corpus"), &SPEC)?;
    let steps: u64 = usage(f.parsed_or("steps", "a whole number", 100), &SPEC)?;
    let batch_size: usize = usage(f.parsed_or("batch-size", "a whole number", 8), &SPEC)?;
    let max_len: Option<usize> = usage(f.parsed("max-len", "a whole number"), &SPEC)?;
    let seed: u64 = usage(f.parsed_or("seed", "a whole number", 0), &SPEC)?;
    let lr: f64 = usage(f.parsed_or("lr", "a number", 1e-3), &SPEC)?;
    let mask = usage(parse_mask(f.optional("mask")), &SPEC)?;
    let opt_config = optimizer(f, Some("adam"), lr)?;

    // vocab_size is replaced by the corpus vocabulary's: a config may leave it out.
    let mut value: serde_json::Value = serde_json::from_str(&read_text(config_path)?)
        .map_err(|e| EngineError::Config(format!("{config_path} is not JSON: {e}")))?;
    let stated = value.get("vocab_size").cloned();
    if let Some(object) = value.as_object_mut() {
        object.entry("vocab_size").or_insert(1.into());
    }
    let config = BertConfig::from_json(&value.to_string())?;
    let max_len = max_len.unwrap_or(config.max_position_embeddings.min(64));
    let corpus = read_text(corpus_path)?;
    let batch = BatchConfig {
        batch_size,
        max_len,
        mask_prob: 0.15,
        max_predictions: (max_len * 15).div_ceil(100),
    };
    let settings = TrainSettings {
        optimizer: opt_config,
        batch,
        mask,
    };
    let mut trainer = Trainer::from_corpus(&corpus, config, settings, seed)?;
    let n = trainer.model.config.vocab_size;
    match stated {
        Some(v) => eprintln!(
            "note: vocab_size {v} in {config_path} replaced by the corpus vocabulary's size, {n}"
        ),
        None => eprintln!("note: vocab_size set to the corpus vocabulary's size, {n}"),
    }
    eprintln!(
        "model: {} parameters; corpus: {} sentences, {} tokens",
        trainer.model.num_params(),
        trainer.corpus.len(),
        trainer.corpus.n_tokens()
    );
    for step in 1..=steps {
        let r = trainer
            .step()
            .inspect_err(|_| eprintln!("stopped at step {step} of {steps}; nothing saved"))?;
        let l = r.losses;
        json::print(&CorpusStep {
            step: r.step,
            loss: l.total,
            mlm_loss: l.mlm,
            nsp_loss: l.nsp,
            mlm_accuracy: l.mlm_accuracy,
            nsp_accuracy: l.nsp_accuracy,
        });
    }
    save(&trainer.checkpoint(), f.optional("save"))
}
