//! The encoder–decoder's trainer: draws a task's batches and takes the one step.

use super::batch::Seq2SeqBatch;
use super::checkpoint::Seq2SeqCheckpoint;
use super::model::EncoderDecoder;
use super::task::{make_seq2seq_batch, Task};
use crate::batch::MaskMode;
use crate::config::BertConfig;
use crate::data::{BatchConfig, Corpus};
use crate::error::{EngineError, Result};
use crate::forward::ForwardOptions;
use crate::forward::Losses;
use crate::optim::{Optimizer, OptimizerConfig};
use crate::resume::RunState;
use crate::rng::Rng;
use crate::run::Run;
use crate::step::{PlannedStep, StepReport, Stepper};
use crate::tokenizer::Tokenizer;

/// Trains an encoder–decoder on a task of the corpus: draw a batch, then the one step every
/// model takes (`Stepper`: forward with dropout into the kept buffers, backward, one optimiser
/// over both halves, so clipping sees the norm over both), in one share or many.
pub struct Seq2SeqTrainer {
    pub model: EncoderDecoder,
    /// The step count, optimiser and generator, and the step itself.
    pub stepper: Stepper<EncoderDecoder>,
    pub tokenizer: Tokenizer,
    pub corpus: Corpus,
    pub batch_config: BatchConfig,
    pub task: Task,
}

impl Seq2SeqTrainer {
    /// A new encoder–decoder on `corpus_text` (`Seq2SeqCheckpoint::init`, from `seed`'s
    /// generator, which then draws the batches and dropout) training on `task`.
    pub fn from_corpus(
        corpus_text: &str,
        config: BertConfig,
        optimizer: OptimizerConfig,
        batch: BatchConfig,
        task: Task,
        seed: u64,
    ) -> Result<Self> {
        Self::from_corpus_with_vocab_limit(
            corpus_text,
            usize::MAX,
            config,
            optimizer,
            batch,
            task,
            seed,
        )
    }

    /// `from_corpus` with at most `vocab_limit` tokens in the vocabulary (the most frequent
    /// words), as `Trainer::from_corpus_with_vocab_limit`.
    pub fn from_corpus_with_vocab_limit(
        corpus_text: &str,
        vocab_limit: usize,
        config: BertConfig,
        optimizer: OptimizerConfig,
        batch: BatchConfig,
        task: Task,
        seed: u64,
    ) -> Result<Self> {
        let mut rng = Rng::new(seed);
        let checkpoint = Seq2SeqCheckpoint::init(corpus_text, vocab_limit, config, &mut rng)?;
        Self::from_checkpoint(checkpoint, corpus_text, optimizer, batch, task, rng)
    }

    /// An encoder–decoder `checkpoint` training on `task` of `corpus_text` (read with the
    /// checkpoint's tokenizer), its batches and dropout drawn from `rng`.
    pub fn from_checkpoint(
        checkpoint: Seq2SeqCheckpoint,
        corpus_text: &str,
        optimizer: OptimizerConfig,
        batch: BatchConfig,
        task: Task,
        rng: Rng,
    ) -> Result<Self> {
        batch.validate()?;
        let Seq2SeqCheckpoint { model, tokenizer } = checkpoint;
        model.check()?;
        let corpus = Corpus::parse(corpus_text, &tokenizer)?;
        let positions = model
            .encoder
            .config
            .max_position_embeddings
            .min(model.decoder.config.max_position_embeddings);
        if batch.max_len > positions {
            return Err(EngineError::Training(format!(
                "sequence length {} is longer than the model's {positions} positions",
                batch.max_len
            )));
        }
        if task == Task::Reply && corpus.len() < 2 {
            return Err(EngineError::Training(
                "Reply pairs each line with the next: the corpus needs two lines or more".into(),
            ));
        }
        Ok(Seq2SeqTrainer {
            stepper: Stepper::new(&model, optimizer, rng)?,
            model,
            tokenizer,
            corpus,
            batch_config: batch,
            task,
        })
    }

    /// One step on a fresh batch; the loss before the update. A NaN/∞ loss is an error and
    /// leaves the weights as they were. One share: `plan(1)`, `share_gradients(0)`, `finish`.
    pub fn step(&mut self) -> Result<StepReport> {
        let planned = self.plan(1)?;
        self.take_step(&planned)
    }

    /// The next step's batch, drawn as `step` draws it, and its plan for `parts` shares.
    /// Nothing computed.
    pub fn plan(&mut self, parts: usize) -> Result<PlannedStep<Seq2SeqBatch>> {
        let rng = &mut self.stepper.rng;
        let batch = make_seq2seq_batch(&self.corpus, &self.batch_config, self.task, rng)?;
        Ok(self.stepper.plan(batch, parts))
    }

    /// Share `i` of `planned` into this trainer's own gradient buffer (a lead's share 0).
    pub fn share_gradients(
        &mut self,
        planned: &PlannedStep<Seq2SeqBatch>,
        i: usize,
    ) -> Result<Losses> {
        let opts = self.forward_options();
        self.stepper.share_gradients(&self.model, planned, i, &opts)
    }

    /// The step: `own` (share 0, in the gradient buffer; None when every share is in
    /// `others`) plus the other shares' flat gradients and losses, summed in share order, then
    /// the update. On error the weights are unchanged and the step counter does not move.
    pub fn finish(
        &mut self,
        planned: PlannedStep<Seq2SeqBatch>,
        own: Option<Losses>,
        others: &[(Losses, Vec<f32>)],
    ) -> Result<StepReport> {
        self.stepper.finish(&mut self.model, &planned, own, others)
    }

    /// One step on `batch`.
    pub fn step_on(&mut self, batch: &Seq2SeqBatch) -> Result<StepReport> {
        let planned = self.stepper.plan(batch.clone(), 1);
        self.take_step(&planned)
    }

    /// The forward options of a training step (what a worker computing a share needs).
    pub fn forward_options(&self) -> ForwardOptions {
        ForwardOptions::training(MaskMode::Padding)
    }

    fn take_step(&mut self, planned: &PlannedStep<Seq2SeqBatch>) -> Result<StepReport> {
        let opts = self.forward_options();
        self.stepper.take_step(&mut self.model, planned, &opts)
    }

    pub fn checkpoint(&self) -> Seq2SeqCheckpoint {
        Seq2SeqCheckpoint {
            model: self.model.clone(),
            tokenizer: self.tokenizer.clone(),
        }
    }
}

/// One optimiser over both halves, so a kept state holds both halves' moments
/// (`encoder.…`, `decoder.…`); no corpus vocabulary count.
impl Run for Seq2SeqTrainer {
    fn step(&mut self) -> Result<StepReport> {
        Seq2SeqTrainer::step(self)
    }
    fn optimizer(&self) -> &Optimizer {
        &self.stepper.optimizer
    }
    fn optimizer_mut(&mut self) -> &mut Optimizer {
        &mut self.stepper.optimizer
    }
    fn new_optimizer(&self, config: OptimizerConfig) -> Result<Optimizer> {
        Optimizer::new(config, &self.model)
    }
    fn run_state(&self) -> RunState {
        self.stepper.run_state(None)
    }
    fn restore_run_state(&mut self, run: RunState) {
        self.stepper.restore(run);
    }
    fn set_batch_config(&mut self, batch: BatchConfig) {
        self.batch_config = batch;
    }
}
