//! The page's default run: what a learner trains on opening the page and pressing Play, and
//! what `attention-lab train` trains with neither `--model` nor `--init`. Described once, here:
//! the page's `LabSettings::default` and the command line both read it, so they cannot drift.

use crate::batch::MaskMode;
use crate::config::BertConfig;
use crate::data::{max_predictions, BatchConfig};
use crate::optim::{OptimizerConfig, OptimizerKind};
use crate::train::{Objective, TrainSettings};

/// The built-in corpus: 141 short English sentences, written for Attention Lab (no outside
/// source; MIT, as the project). The first 41 are the tutorial's own dialogue, kept as they
/// were; the other 100 reuse its words and shapes ("The cat sleeps under the table.") so that
/// two heads of the tiny model take roles (previous and next word) within a few thousand steps
/// on any seed, where the 41 alone let it memorise them instead (issue 56, seeds 1–10:
/// borne out on 1 of 10 within 6,000 steps with the 41, on 10 of 10 with the 141).
pub const DEFAULT_CORPUS: &str = include_str!("../assets/default_corpus.txt");

/// How the default run's heads fared on seeds it was not chosen on (`tools/heads_sweep.py`,
/// the Heads claim measured every `every` steps): of seeds `first`–`last`, trained at most
/// `steps` steps each, on how many two heads took different roles (the claim borne out), at
/// which step in the median and at worst, and on how many it stayed borne out to the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadsSeeds {
    pub first: u64,
    pub last: u64,
    pub steps: u64,
    pub every: u64,
    pub borne_out: usize,
    pub median_step: u64,
    pub worst_step: u64,
    pub stayed: usize,
}

/// The default run on seeds 11–30, which its setting was not chosen on (docs/heads.md): the
/// claim was borne out on all 20 within 6,000 steps, and stayed so for the 500 steps measured
/// after on 18.
pub const UNSEEN_SEEDS: HeadsSeeds = HeadsSeeds {
    first: 11,
    last: 30,
    steps: 6000,
    every: 100,
    borne_out: 20,
    median_step: 1800,
    worst_step: 3400,
    stayed: 18,
};

impl HeadsSeeds {
    pub fn count(&self) -> usize {
        (self.last - self.first + 1) as usize
    }
}

/// The default run's setting: the tiny model (`config`) on [`DEFAULT_CORPUS`], MLM + NSP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultRun;

impl DefaultRun {
    /// Examples per batch.
    pub const BATCH_SIZE: usize = 8;
    /// Adam's learning rate, reached after [`Self::WARMUP_STEPS`] of a linear warm-up. 1.5e-3
    /// took roles soonest on seeds 1–10 (median step 1,900, worst 2,800); 1e-3 took a median
    /// 2,600, 2e-3 2,200, and 2.5e-3 failed on 4 of 8 (`tools/heads_sweep.py`).
    pub const LEARNING_RATE: f64 = 1.5e-3;
    pub const WARMUP_STEPS: u64 = 0;
    pub const OPTIMIZER: OptimizerKind = OptimizerKind::Adam;
    /// Fraction of real tokens picked for MLM.
    pub const MASK_PROB: f32 = 0.15;
    /// T of the batches.
    pub const MAX_LEN: usize = 32;
    pub const SEED: u64 = 0;
    /// The attention mask of training.
    pub const MASK: MaskMode = MaskMode::Padding;
    pub const OBJECTIVE: Objective = Objective::MlmNsp;
    /// The tiny model's heads a layer, and its dropout (hidden and attention).
    pub const HEADS: usize = 4;
    pub const DROPOUT: f32 = 0.1;

    /// The tiny model: hidden 64, 2 layers of [`Self::HEADS`] heads, FFN 256, 128 positions,
    /// dropout [`Self::DROPOUT`]; `vocab_size` 0 until a vocabulary replaces it.
    pub fn config() -> BertConfig {
        BertConfig {
            num_attention_heads: Self::HEADS,
            hidden_dropout_prob: Self::DROPOUT,
            attention_probs_dropout_prob: Self::DROPOUT,
            ..BertConfig::tiny(0)
        }
    }

    /// The optimiser: [`Self::OPTIMIZER`] at [`Self::LEARNING_RATE`] after the warm-up.
    pub fn optimizer() -> OptimizerConfig {
        OptimizerConfig {
            warmup_steps: Self::WARMUP_STEPS,
            ..Self::OPTIMIZER.config(Self::LEARNING_RATE)
        }
    }

    /// The batches: [`Self::BATCH_SIZE`] rows of [`Self::MAX_LEN`] tokens, [`Self::MASK_PROB`]
    /// of them masked (BERT's cap on predictions a row).
    pub fn batch() -> BatchConfig {
        BatchConfig {
            batch_size: Self::BATCH_SIZE,
            max_len: Self::MAX_LEN,
            mask_prob: Self::MASK_PROB,
            max_predictions: max_predictions(Self::MAX_LEN, Self::MASK_PROB),
        }
    }

    /// Everything about the run but the model and the text.
    pub fn train_settings() -> TrainSettings {
        TrainSettings {
            optimizer: Self::optimizer(),
            batch: Self::batch(),
            mask: Self::MASK,
            objective: Self::OBJECTIVE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::Trainer;

    #[test]
    fn the_default_run_trains_the_tiny_model_on_the_default_corpus() {
        let config = DefaultRun::config();
        assert_eq!(
            (
                config.hidden_size,
                config.num_hidden_layers,
                config.intermediate_size
            ),
            (64, 2, 256)
        );
        assert!(DefaultRun::MAX_LEN <= config.max_position_embeddings);
        let trainer = Trainer::from_corpus(
            DEFAULT_CORPUS,
            config,
            DefaultRun::train_settings(),
            DefaultRun::SEED,
        )
        .unwrap();
        assert!(
            trainer.corpus.len() >= 141,
            "the tutorial's 41 sentences and 100 more"
        );
        assert_eq!(trainer.batch_config, DefaultRun::batch());
    }
}
