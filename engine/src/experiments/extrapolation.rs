//! Length extrapolation on the Repeat task (`crate::repeat`): decoders whose positions differ
//! (absolute, rotary, ALiBi), each trained on segments of L ≤ `TRAINED.max_len` until it copies
//! the second copy, then measured on segments up to `LONGEST` symbols, past every length it
//! was trained on. Copying is a task a model learns within T at the tiny size, so what it
//! keeps past T is a property of its positions, not of a model that never learned.

use super::induction::copy_accuracy;
use crate::config::{BertConfig, PositionEmbeddingType};
use crate::data::BatchConfig;
use crate::error::Result;
use crate::optim::OptimizerConfig;
use crate::repeat::{Copies, RepeatTask};
use crate::train::{Objective, TrainSettings, Trainer};
use crate::MaskMode;

/// What the models train on: 36 symbols, L from 4 to 8, so T = 2·8 + 2 = 18 tokens.
pub const TRAINED: RepeatTask = RepeatTask {
    alphabet: 36,
    min_len: 4,
    max_len: 8,
};

/// The longest segment measured: twice the longest trained, T = 34 tokens.
pub const LONGEST: usize = 16;

/// The positions compared, each trained from every seed of `SEEDS`.
pub const POSITIONS: [PositionEmbeddingType; 3] = [
    PositionEmbeddingType::Absolute,
    PositionEmbeddingType::Rotary,
    PositionEmbeddingType::Alibi,
];
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// A model has learned the task when its second-copy accuracy, averaged over the trained
/// lengths, is at least this.
pub const LEARNED_ACCURACY: f64 = 0.9;

/// Steps a model may train before it counts as not having learned, and steps between two
/// checks of whether it has. Natively (`extrapolation_table`), seeds 1–3 learned at step 1,000
/// (absolute), 1,400–1,700 (rotary) and 2,100–2,500 (ALiBi; 2,800 for seed 3 in one page run).
pub const MAX_STEPS: u64 = 3000;
pub const CHECK_EVERY: u64 = 100;

/// Rows measured at each segment length (the same rows for every model).
pub const ROWS: usize = 32;

/// How each model trains: batch 64, Adam at 1e-3, no dropout, at the tiny size with 4 heads
/// (the setting measured for it; the Induction heads claim's own is `RepeatTask`'s).
pub const BATCH_SIZE: usize = 64;
pub const LEARNING_RATE: f64 = 1e-3;

/// One model of the experiment: its positions and seed, training until it has learned.
pub struct LengthRun {
    pub positions: PositionEmbeddingType,
    pub seed: u64,
    pub trainer: Trainer,
    /// The step at which the check first found it learned.
    pub learned_at: Option<u64>,
    /// Its second-copy accuracy, averaged over the trained lengths, at the last check.
    pub within: f64,
}

impl LengthRun {
    /// A fresh tiny decoder with `positions`, from `seed`, on `TRAINED`.
    pub fn new(positions: PositionEmbeddingType, seed: u64) -> Result<LengthRun> {
        let config = TRAINED.config(BertConfig {
            position_embedding_type: positions,
            // Absolute positions past the trained ones exist, untrained: what such a model
            // meets when it reads longer.
            max_position_embeddings: Copies { len: LONGEST }.tokens(),
            ..BertConfig::tiny(0)
        });
        let settings = TrainSettings {
            optimizer: OptimizerConfig::adam(LEARNING_RATE),
            batch: BatchConfig {
                batch_size: BATCH_SIZE,
                ..BatchConfig::default()
            },
            mask: MaskMode::Causal,
            objective: Objective::NextToken,
        };
        Ok(LengthRun {
            positions,
            seed,
            trainer: Trainer::repeat(TRAINED, config, settings, seed)?,
            learned_at: None,
            within: 0.0,
        })
    }

    /// Steps trained so far.
    pub fn step(&self) -> u64 {
        self.trainer.stepper.step
    }

    /// Whether it trains no more: it has learned, or reached `MAX_STEPS`.
    pub fn done(&self) -> bool {
        self.learned_at.is_some() || self.step() >= MAX_STEPS
    }

    /// `CHECK_EVERY` steps more, then the check.
    pub fn train_on(&mut self) -> Result<()> {
        for _ in 0..CHECK_EVERY {
            self.trainer.step()?;
        }
        // The mean over the trained lengths of each length's accuracy: what the claim reports
        // as the model's accuracy within T (`by_length`, the same rows).
        let within: Vec<f64> = (TRAINED.min_len..=TRAINED.max_len)
            .map(|len| self.accuracy_at(len))
            .collect::<Result<_>>()?;
        self.within = within.iter().sum::<f64>() / within.len() as f64;
        if self.within >= LEARNED_ACCURACY {
            self.learned_at = Some(self.step());
        }
        Ok(())
    }

    /// Second-copy accuracy on `ROWS` rows of segment length `len`.
    pub fn accuracy_at(&self, len: usize) -> Result<f64> {
        let opts = self.trainer.forward_options();
        let (hits, n) = copy_accuracy(&self.trainer.model, &TRAINED, len, ROWS, &opts)?[1];
        Ok(hits as f64 / n.max(1) as f64)
    }

    /// Second-copy accuracy at every L from `TRAINED.min_len` to `LONGEST`.
    pub fn by_length(&self) -> Result<Vec<(usize, f64)>> {
        (TRAINED.min_len..=LONGEST)
            .map(|len| Ok((len, self.accuracy_at(len)?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_model_has_not_learned_and_reads_every_length() {
        for positions in POSITIONS {
            let run = LengthRun::new(positions, 1).unwrap();
            assert!(!run.done());
            let by_length = run.by_length().unwrap();
            assert_eq!(
                by_length.iter().map(|&(l, _)| l).collect::<Vec<_>>(),
                (4..=16).collect::<Vec<_>>()
            );
            // 36 symbols: chance is far below what "learned" asks.
            assert!(by_length.iter().all(|&(_, a)| a < 0.3), "{by_length:?}");
        }
    }

    /// The check reads what the claim reports within T: the mean of the trained lengths'
    /// accuracies, on the same rows.
    #[test]
    fn the_check_is_the_accuracy_within_t_that_the_claim_reports() {
        let mut run = LengthRun::new(PositionEmbeddingType::Rotary, 2).unwrap();
        run.train_on().unwrap();
        assert_eq!(run.step(), CHECK_EVERY);
        let by_length = run.by_length().unwrap();
        let trained: Vec<f64> = by_length
            .iter()
            .filter(|&&(l, _)| l <= TRAINED.max_len)
            .map(|&(_, a)| a)
            .collect();
        assert_eq!(trained.len(), 5);
        let mean = trained.iter().sum::<f64>() / 5.0;
        assert!(
            (run.within - mean).abs() < 1e-12,
            "{} against {mean}",
            run.within
        );
        assert_eq!(run.learned_at.is_some(), run.within >= LEARNED_ACCURACY);
    }

    /// The setting's table, natively (`cargo test -p attention-lab-engine --release -- --ignored
    /// extrapolation_table --nocapture`): each model's learned step and accuracy by L.
    #[test]
    #[ignore]
    fn extrapolation_table() {
        for positions in POSITIONS {
            for seed in SEEDS {
                let mut run = LengthRun::new(positions, seed).unwrap();
                while !run.done() {
                    run.train_on().unwrap();
                }
                let by = run.by_length().unwrap();
                eprintln!(
                    "{positions:?} seed {seed}: learned at {:?} (within {:.2}); {}",
                    run.learned_at,
                    run.within,
                    by.iter()
                        .map(|(l, a)| format!("L{l} {a:.2}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
        }
    }
}
