//! `train` with neither `--model` nor `--init`: the page's default run
//! (`engine::default_run`), the tiny model on the default corpus with the page's settings. A
//! flag that leaves the setting is noted on stderr, as `--task repeat` notes Repeat's.

use super::{
    check_batch_size, corpus_training, optimizer, read_text, Args, ObjectiveFlag, Setting,
};
use crate::CliError;
use engine::data::{max_predictions, BatchConfig};
use engine::default_run::{DefaultRun, DEFAULT_CORPUS};
use engine::ops::attention::Softmax;
use engine::optim::OptimizerConfig;
use engine::tokenizer::WORD_VOCAB_LIMIT;
use engine::train::{TrainSettings, Trainer};
use engine::{BertConfig, MaskMode};

/// The default run in words, from its description: the first line of its stderr and part of
/// `train --help`.
pub fn describe() -> String {
    let c = DefaultRun::config();
    let sentences = DEFAULT_CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let warmup = match DefaultRun::WARMUP_STEPS {
        0 => "no warm-up".to_string(),
        n => format!("after {n} warm-up steps"),
    };
    format!(
        "the tiny model (hidden {}, {} layers of {} heads, FFN {}, dropout {}) on the page's default corpus ({sentences} sentences), MLM + NSP, batch {}, {} lr {} ({warmup}), mask prob {}, max_len {}, seed {}",
        c.hidden_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.intermediate_size,
        c.hidden_dropout_prob,
        DefaultRun::BATCH_SIZE,
        DefaultRun::OPTIMIZER.name(),
        DefaultRun::LEARNING_RATE,
        DefaultRun::MASK_PROB,
        DefaultRun::MAX_LEN,
        DefaultRun::SEED,
    )
}

/// The `--mask` value's name.
fn mask_name(mask: MaskMode) -> &'static str {
    match mask {
        MaskMode::Padding => "padding",
        MaskMode::Causal => "causal",
        MaskMode::None => "none",
    }
}

pub fn run(a: &Args) -> Result<(), CliError> {
    let mut setting = Setting::new("the default run's", "");
    let corpus = match &a.corpus {
        Some(path) => {
            setting.leaves(
                format!("--corpus {}", path.display()),
                "the page's default corpus",
            );
            read_text(path)?
        }
        None => DEFAULT_CORPUS.to_string(),
    };
    let steps = a.steps.unwrap_or(100);
    let seed = setting.chosen(a.seed, DefaultRun::SEED, "--seed");
    let batch_size = setting.chosen(a.batch_size, DefaultRun::BATCH_SIZE, "--batch-size");
    check_batch_size(batch_size)?;
    let lr = setting.chosen(a.lr, DefaultRun::LEARNING_RATE, "--lr");
    let warmup = setting.chosen(a.warmup, DefaultRun::WARMUP_STEPS, "--warmup");
    let mask_prob = setting.chosen(a.mask_prob, DefaultRun::MASK_PROB, "--mask-prob");
    let max_len = setting.chosen(a.max_len, DefaultRun::MAX_LEN, "--max-len");
    let heads = setting.chosen(a.heads, DefaultRun::HEADS, "--heads");
    let dropout = setting.chosen(a.dropout, DefaultRun::DROPOUT, "--dropout");
    if let Some(kind) = a.optimizer.filter(|&k| k != DefaultRun::OPTIMIZER) {
        setting.leaves(
            format!("--optimizer {}", kind.name()),
            DefaultRun::OPTIMIZER.name(),
        );
    }
    // Seq2seq is refused before (`train::run`): the default run is one BERT.
    let objective = a
        .objective
        .and_then(ObjectiveFlag::single)
        .unwrap_or(DefaultRun::OBJECTIVE);
    if objective != DefaultRun::OBJECTIVE {
        setting.leaves("--objective next-token".into(), "mlm-nsp");
    }
    let mask = MaskMode::from(a.mask);
    if mask != DefaultRun::MASK {
        setting.leaves(
            format!("--mask {}", mask_name(mask)),
            mask_name(DefaultRun::MASK),
        );
    }
    let softmax = a.attention.resolve("train")?;
    if softmax != Softmax::default() {
        setting.leaves(
            "--attention tiled or --window".into(),
            "full softmax attention",
        );
    }
    for (flag, given) in [
        ("--momentum", a.momentum),
        ("--weight-decay", a.weight_decay),
        ("--clip-grad-norm", a.clip_grad_norm),
    ] {
        if let Some(v) = given {
            setting.leaves(format!("{flag} {v}"), "none");
        }
    }
    eprintln!("training the page's default run: {}", describe());
    setting.say();

    let config = BertConfig {
        num_attention_heads: heads,
        hidden_dropout_prob: dropout,
        attention_probs_dropout_prob: dropout,
        ..DefaultRun::config()
    };
    let settings = TrainSettings {
        optimizer: OptimizerConfig {
            warmup_steps: warmup,
            ..optimizer(a, Some(DefaultRun::OPTIMIZER), lr)?
        },
        batch: BatchConfig {
            batch_size,
            max_len,
            mask_prob,
            max_predictions: max_predictions(max_len, mask_prob),
        },
        mask,
        objective,
    };
    // As the page makes a fresh model (`worker_core::lab::Lab::fresh`).
    let mut trainer =
        Trainer::from_corpus_with_vocab_limit(&corpus, WORD_VOCAB_LIMIT, config, settings, seed)?;
    trainer.softmax = softmax;
    corpus_training(a, trainer, (steps, seed))
}
