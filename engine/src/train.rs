//! Pre-training, from scratch or from a checkpoint: draw a batch from the corpus, forward with
//! dropout, backward, optimiser step. One seed fixes everything (init, batches, dropout), so the
//! same seed gives the same loss curve.

use crate::backward::backward_reusing;
use crate::batch::{Batch, MaskMode};
use crate::batch_view::{BatchView, MaskingCounts, StepPredictions};
use crate::checkpoint::{Checkpoint, TensorNaming};
use crate::config::BertConfig;
use crate::data::{make_batch_recorded, make_next_token_batch, BatchConfig, BatchRecord, Corpus};
use crate::error::{EngineError, Result};
use crate::forward::{
    forward_reusing, forward_share, ForwardOptions, ForwardOutput, ForwardShare, Losses,
};
use crate::model::BertForPreTraining;
use crate::ops::attention::Softmax;
use crate::optim::{Optimizer, OptimizerConfig};
use crate::repeat::RepeatTask;
use crate::resume::RunState;
use crate::rng::Rng;
use crate::run::Run;
use crate::step::Trainable;
use crate::tokenizer::{build_word_vocab_with_limit, Tokenizer};

use crate::objective::no_heads_message;
pub use crate::objective::Objective;

/// Everything about a run except the model and the text.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainSettings {
    pub optimizer: OptimizerConfig,
    pub batch: BatchConfig,
    /// The attention mask used in training (inspection may use another). A decoder's
    /// attention is causal whatever this says.
    pub mask: MaskMode,
    pub objective: Objective,
}

pub use crate::step::{
    apply_step, diverged_loss, plan_step, share_gradients, train_step, LossCounts, PlannedStep,
    Share, StepBuffers, StepPlan, StepReport, Stepper,
};

/// One BERT trains through [`train_step`]: MLM + NSP or next-token losses, its activations
/// kept in one [`StepBuffers`].
impl Trainable for BertForPreTraining {
    type Batch = Batch;
    type Buffers = StepBuffers;

    fn check_trainable(&self) -> Result<()> {
        match self.cls {
            Some(_) => Ok(()),
            None => Err(EngineError::Training(no_heads_message())),
        }
    }

    fn loss_counts(batch: &Batch) -> LossCounts {
        LossCounts::of(batch)
    }

    fn batch_rows(batch: &Batch, rows: std::ops::Range<usize>) -> Batch {
        batch.rows(rows)
    }

    fn batch_size(batch: &Batch) -> usize {
        batch.batch_size()
    }

    fn train_forward(
        &self,
        batch: &Batch,
        opts: &ForwardOptions,
        share: &Share,
        buffers: &mut StepBuffers,
    ) -> Result<Losses> {
        let mut noise = share.noise(batch.batch_size());
        let pass = ForwardShare {
            noise: &mut noise,
            counts: share.counts,
        };
        let out = forward_share(self, batch, opts, None, pass, buffers.forward.take())?;
        let losses = out.losses;
        buffers.forward = Some(out);
        losses.ok_or_else(|| {
            EngineError::Training(
                "the batch has no MLM or NSP labels: nothing to learn from".into(),
            )
        })
    }

    fn train_backward(
        &self,
        batch: &Batch,
        grads: &mut Self,
        buffers: &mut StepBuffers,
    ) -> Result<()> {
        let (out, scratch) = buffers.for_backward()?;
        backward_reusing(self, batch, out, grads, scratch)
    }

    fn diverged_loss(&self) -> f32 {
        diverged_loss(self.config.vocab_size)
    }

    fn describe_loss(l: &Losses) -> String {
        format!("{} (mlm {}, nsp {})", l.total, l.mlm, l.nsp)
    }
}

/// What `model` predicts on `batch` now: the MLM argmax of each labelled row and the NSP
/// softmax of each row, from an evaluation forward (no dropout).
pub fn predict(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
) -> Result<StepPredictions> {
    predict_reusing(model, batch, opts, &mut StepBuffers::default())
}

/// `predict`, its forward written into a training run's `buffers` (and left there), so that
/// it needs no second set of activations beside the ones the run keeps.
fn predict_reusing(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    buffers: &mut StepBuffers,
) -> Result<StepPredictions> {
    let eval = ForwardOptions {
        train: false,
        trace: false,
        mlm_scope: crate::forward::MlmScope::LabelledOnly,
        ..*opts
    };
    // No dropout: the generator is never drawn from.
    let out = forward_reusing(
        model,
        batch,
        &eval,
        None,
        &mut Rng::new(0),
        buffers.forward.take(),
    )?;
    let predictions = predictions_of(&out);
    buffers.forward = Some(out);
    Ok(predictions)
}

fn predictions_of(out: &ForwardOutput) -> StepPredictions {
    let mlm = match &out.mlm_logits {
        Some(logits) => out
            .mlm_rows
            .iter()
            .zip(logits.rows())
            .map(|(&n, row)| {
                let best = (0..row.len())
                    .max_by(|&a, &b| row[a].total_cmp(&row[b]).then(b.cmp(&a)))
                    .unwrap_or(0);
                (n, best as u32)
            })
            .collect(),
        None => Vec::new(),
    };
    let nsp = match &out.nsp_logits {
        // softmax([a, b]) = [1/(1 + e^(b − a)), 1/(1 + e^(a − b))]
        Some(logits) => logits
            .rows()
            .into_iter()
            .map(|l| {
                let p = 1.0 / (1.0 + (l[1] - l[0]).exp());
                [p, 1.0 - p]
            })
            .collect(),
        None => Vec::new(),
    };
    StepPredictions { mlm, nsp }
}

/// Mixed into the seed for a Repeat run's corpus of sentences.
const REPEAT_SENTENCES_SEED: u64 = 0x5e9;

pub struct Trainer {
    pub model: BertForPreTraining,
    /// The step count, optimiser and generator, the buffers the steps keep, and the step
    /// itself.
    pub stepper: Stepper<BertForPreTraining>,
    pub tokenizer: Tokenizer,
    pub corpus: Corpus,
    /// Next-token training on the Repeat task: batches from its generator, not the corpus
    /// (which then holds sentences of the task, for what reads sentences).
    pub repeat: Option<RepeatTask>,
    pub batch_config: BatchConfig,
    pub mask: MaskMode,
    pub objective: Objective,
    /// Softmax kernel and sliding window of every step (`--attention`, `--window`); set
    /// after construction (full, no window by default).
    pub softmax: Softmax,
    /// Tensor names to save under (those of the checkpoint trained from).
    naming: TensorNaming,
    /// Distinct words in the corpus, for a word-level vocabulary built from it (None for a
    /// checkpoint's own vocabulary): more than the vocabulary holds means some became [UNK].
    pub corpus_words: Option<usize>,
    /// "Fixed batch": `step` trains on one batch again and again, the next one drawn after this
    /// was set. Turning it off lets the next step draw afresh.
    pub fixed_batch: bool,
    /// The batch `fixed_batch` trains on, once drawn.
    fixed: Option<(Batch, BatchRecord)>,
    /// What the last `step` trained on and predicted, for `batch_view`.
    last: Option<LastStep>,
    /// Every batch drawn in this run (kept and restored runs count from the restore).
    counts: MaskingCounts,
}

/// The last step's batch and how it was made.
struct LastStep {
    step: u64,
    fixed: bool,
    batch: Batch,
    record: BatchRecord,
}

impl Trainer {
    /// A new model on `corpus_text`: a word-level vocabulary built from the corpus, and
    /// `config` with its `vocab_size` replaced by that vocabulary's size.
    pub fn from_corpus(
        corpus_text: &str,
        config: BertConfig,
        settings: TrainSettings,
        seed: u64,
    ) -> Result<Self> {
        Self::from_corpus_with_vocab_limit(corpus_text, usize::MAX, config, settings, seed)
    }

    /// As `from_corpus`, with at most `max_vocab_size` tokens: the rarest words become
    /// `[UNK]`. A 1 MB corpus has tens of thousands of words, and the MLM head's cost grows
    /// with every one of them.
    pub fn from_corpus_with_vocab_limit(
        corpus_text: &str,
        max_vocab_size: usize,
        config: BertConfig,
        settings: TrainSettings,
        seed: u64,
    ) -> Result<Self> {
        let (vocab, distinct_words) = build_word_vocab_with_limit(corpus_text, max_vocab_size)?;
        let config = BertConfig {
            vocab_size: vocab.len(),
            ..config
        };
        // The objective decides what the model is: a decoder for next-token training.
        let config = match settings.objective {
            Objective::NextToken if !config.is_decoder => config.decoder(),
            _ => config,
        };
        let (model, rng) = Self::initialised(&config, seed)?;
        let trainer = Self::build(
            model,
            Tokenizer::word_level(vocab),
            TensorNaming::pre_training(),
            corpus_text,
            settings,
            rng,
        )?;
        Ok(Trainer {
            corpus_words: Some(distinct_words),
            ..trainer
        })
    }

    /// A new decoder on the Repeat task: the task's vocabulary (`config`'s `vocab_size`
    /// replaced by its size), batches from its generator, T its longest row. The objective is
    /// next token whatever `settings` says.
    pub fn repeat(
        task: RepeatTask,
        config: BertConfig,
        settings: TrainSettings,
        seed: u64,
    ) -> Result<Self> {
        let config = BertConfig {
            vocab_size: task.vocab()?.len(),
            ..config
        }
        .decoder();
        let (model, rng) = Self::initialised(&config, seed)?;
        Self::build_repeat(
            task,
            model,
            TensorNaming::pre_training(),
            settings,
            rng,
            seed,
        )
    }

    /// Continues training a decoder on the Repeat task: one made by `repeat`, whose
    /// vocabulary is the task's.
    pub fn repeat_from_checkpoint(
        task: RepeatTask,
        checkpoint: Checkpoint,
        settings: TrainSettings,
        seed: u64,
    ) -> Result<Self> {
        if checkpoint.tokenizer.vocab() != &task.vocab()? {
            return Err(EngineError::Training(
                "this model's vocabulary is not the Repeat task's symbols: it cannot train on Repeat"
                    .into(),
            ));
        }
        let Checkpoint { model, naming, .. } = checkpoint;
        Self::build_repeat(task, model, naming, settings, Rng::new(seed), seed)
    }

    fn build_repeat(
        task: RepeatTask,
        model: BertForPreTraining,
        naming: TensorNaming,
        settings: TrainSettings,
        rng: Rng,
        seed: u64,
    ) -> Result<Self> {
        let settings = TrainSettings {
            objective: Objective::NextToken,
            batch: BatchConfig {
                max_len: task.max_tokens(),
                ..settings.batch
            },
            ..settings
        };
        // The corpus's sentences come from a generator of their own, so that the training
        // batches are those of the seed alone.
        let text = task.corpus_text(&mut Rng::new(seed ^ REPEAT_SENTENCES_SEED));
        let trainer = Self::build(model, task.tokenizer()?, naming, &text, settings, rng)?;
        Ok(Trainer {
            repeat: Some(task),
            ..trainer
        })
    }

    /// The model `from_corpus` makes of `config` (its vocabulary and objective already applied)
    /// before the first step: the same weights for the same seed.
    pub fn initial_model(config: &BertConfig, seed: u64) -> Result<BertForPreTraining> {
        Ok(Self::initialised(config, seed)?.0)
    }

    /// The model initialised first from the seed's generator, and the generator after it, which
    /// training goes on drawing from.
    fn initialised(config: &BertConfig, seed: u64) -> Result<(BertForPreTraining, Rng)> {
        let mut rng = Rng::new(seed);
        let model = BertForPreTraining::init(config, &mut rng)?;
        Ok((model, rng))
    }

    /// Continues pre-training a checkpoint (which needs its `cls` heads) on `corpus_text`,
    /// tokenised with the checkpoint's tokenizer.
    pub fn from_checkpoint(
        checkpoint: Checkpoint,
        corpus_text: &str,
        settings: TrainSettings,
        seed: u64,
    ) -> Result<Self> {
        let Checkpoint {
            model,
            tokenizer,
            naming,
        } = checkpoint;
        Self::build(
            model,
            tokenizer,
            naming,
            corpus_text,
            settings,
            Rng::new(seed),
        )
    }

    fn build(
        model: BertForPreTraining,
        tokenizer: Tokenizer,
        naming: TensorNaming,
        corpus_text: &str,
        settings: TrainSettings,
        rng: Rng,
    ) -> Result<Self> {
        let TrainSettings {
            optimizer,
            batch,
            mask,
            objective,
        } = settings;
        objective.check(&model)?;
        batch.validate()?;
        // Also for rotary models, whose forward runs past P: a training batch is T×T per head,
        // so its length stays within the config's bounded P.
        if batch.max_len > model.config.max_position_embeddings {
            return Err(EngineError::Training(format!(
                "sequence length {} is longer than the model's {} positions",
                batch.max_len, model.config.max_position_embeddings
            )));
        }
        let corpus = Corpus::parse(corpus_text, &tokenizer)?;
        Ok(Trainer {
            stepper: Stepper::new(&model, optimizer, rng)?,
            model,
            tokenizer,
            corpus,
            repeat: None,
            batch_config: batch,
            mask,
            objective,
            softmax: Softmax::default(),
            naming,
            corpus_words: None,
            fixed_batch: false,
            fixed: None,
            last: None,
            counts: MaskingCounts::default(),
        })
    }

    /// One step on a fresh batch from the corpus (or on the fixed batch, with `fixed_batch`).
    /// On error (a NaN/∞ loss) the weights are unchanged and the step counter does not move.
    /// One share: `plan(1)`, `share_gradients(0)`, `finish`, the code a step of many runs.
    pub fn step(&mut self) -> Result<StepReport> {
        let planned = self.plan(1)?;
        self.take_step(planned)
    }

    /// The next step's batch, drawn as `step` draws it (the fixed batch again with
    /// `fixed_batch`; masking counts added), and its plan for `parts` shares. Nothing computed.
    pub fn plan(&mut self, parts: usize) -> Result<PlannedStep<Batch>> {
        let (batch, record) = match (self.fixed_batch, self.fixed.take()) {
            (true, Some(kept)) => kept,
            _ => self.draw_batch()?,
        };
        if self.fixed_batch {
            self.fixed = Some((batch.clone(), record.clone()));
        }
        Ok(PlannedStep {
            record: Some(record),
            fixed: self.fixed_batch,
            ..self.stepper.plan(batch, parts)
        })
    }

    /// Share `i` of `planned` into this trainer's own gradient buffer (a lead computes share
    /// 0 here); the share's part of the losses.
    pub fn share_gradients(&mut self, planned: &PlannedStep<Batch>, i: usize) -> Result<Losses> {
        let opts = self.forward_options();
        self.stepper.share_gradients(&self.model, planned, i, &opts)
    }

    /// The step: `own` (share 0, already in the gradient buffer; None when every share is in
    /// `others`) plus the other shares' flat gradients (`Params::to_flat`) and losses, summed
    /// in share order, then the update and the step's bookkeeping (the batch view's batch). On
    /// error the weights are unchanged and the step counter does not move.
    pub fn finish(
        &mut self,
        planned: PlannedStep<Batch>,
        own: Option<Losses>,
        others: &[(Losses, Vec<f32>)],
    ) -> Result<StepReport> {
        let report = self
            .stepper
            .finish(&mut self.model, &planned, own, others)?;
        self.stepped(planned, report.step);
        Ok(report)
    }

    /// A one-share step of `planned`.
    fn take_step(&mut self, planned: PlannedStep<Batch>) -> Result<StepReport> {
        let opts = self.forward_options();
        let report = self.stepper.take_step(&mut self.model, &planned, &opts)?;
        self.stepped(planned, report.step);
        Ok(report)
    }

    /// The bookkeeping of step `step`, taken on `planned`: the batch view's batch, and a
    /// follower's masking counts.
    fn stepped(&mut self, planned: PlannedStep<Batch>, step: u64) {
        if let Some(counts) = planned.leader_counts {
            // The same batches, so the same counts (a fixed batch counts once, as the leader's).
            self.counts = counts;
        }
        self.last = planned.record.map(|record| LastStep {
            step,
            fixed: planned.fixed,
            batch: planned.batch,
            record,
        });
    }

    /// A fresh batch for the objective, counted (MLM masking counts) when it is MLM + NSP's.
    fn draw_batch(&mut self) -> Result<(Batch, BatchRecord)> {
        let drawn = self.draw()?;
        if self.objective == Objective::MlmNsp {
            self.counts.add(&drawn.0, &drawn.1);
        }
        Ok(drawn)
    }

    /// A new batch for the objective from the trainer's generator: from the corpus, or the
    /// Repeat task's generator.
    fn draw(&mut self) -> Result<(Batch, BatchRecord)> {
        let rng = &mut self.stepper.rng;
        match (self.objective, &self.repeat) {
            (Objective::MlmNsp, _) => make_batch_recorded(&self.corpus, &self.batch_config, rng),
            (Objective::NextToken, None) => {
                make_next_token_batch(&self.corpus, &self.batch_config, rng)
            }
            (Objective::NextToken, Some(task)) => task.batch(self.batch_config.batch_size, rng),
        }
    }

    /// The batch of the last `step`, as the page shows it, with what the model predicts on it
    /// after that step (None before the first step, and after a `step_on`, whose batch
    /// `make_batch` did not record). Costs one evaluation forward on the batch, written into
    /// the buffers the run keeps for its steps (no second set of activations).
    pub fn batch_view(&self) -> Option<BatchView> {
        let l = self.last.as_ref()?;
        let mut buffers = self.stepper.buffers();
        let opts = self.forward_options();
        let predictions = predict_reusing(&self.model, &l.batch, &opts, &mut buffers).ok()?;
        Some(BatchView::new(
            l.step,
            self.objective,
            l.fixed,
            &l.batch,
            &l.record,
            &predictions,
            &self.tokenizer,
        ))
    }

    /// Running counts over every batch drawn in this run (a fixed batch counts once).
    pub fn masking_counts(&self) -> MaskingCounts {
        self.counts
    }

    /// One step on the batch `leader`'s last `step` trained on: the page's Compare trains model
    /// B on model A's batches, whatever B's own generator would draw (B's dropout still draws
    /// from B's). B's batch view and masking counts follow A's batches. An error when the
    /// leader has not stepped, or its vocabulary is not this model's.
    pub fn step_following(&mut self, leader: &Trainer) -> Result<StepReport> {
        let l = leader.last.as_ref().ok_or_else(|| {
            EngineError::Training("the model to follow has not trained a step yet".into())
        })?;
        let planned = self.plan_on_leaders(leader, &l.batch, Some(&l.record), l.fixed, 1)?;
        self.take_step(planned)
    }

    /// This trainer's next step planned on the batch of `leader`'s planned step `theirs`
    /// (Compare in shares: model B on model A's batch before A finishes), for `parts` shares:
    /// B's dropout seed from B's generator, B's masking counts then A's. An error when the
    /// vocabularies differ.
    pub fn plan_following(
        &mut self,
        leader: &Trainer,
        theirs: &PlannedStep<Batch>,
        parts: usize,
    ) -> Result<PlannedStep<Batch>> {
        let record = theirs.record.as_ref();
        self.plan_on_leaders(leader, &theirs.batch, record, theirs.fixed, parts)
    }

    fn plan_on_leaders(
        &mut self,
        leader: &Trainer,
        batch: &Batch,
        record: Option<&BatchRecord>,
        fixed: bool,
        parts: usize,
    ) -> Result<PlannedStep<Batch>> {
        if leader.model.config.vocab_size != self.model.config.vocab_size {
            return Err(EngineError::Training(format!(
                "the model to follow has {} tokens in its vocabulary, this one {}",
                leader.model.config.vocab_size, self.model.config.vocab_size
            )));
        }
        let planned = self.stepper.plan(batch.clone(), parts);
        Ok(PlannedStep {
            record: record.cloned(),
            fixed,
            leader_counts: Some(leader.counts),
            ..planned
        })
    }

    /// One step on a given batch (the CLI's fixed batch, tests).
    pub fn step_on(&mut self, batch: &Batch) -> Result<StepReport> {
        self.last = None;
        let planned = self.stepper.plan(batch.clone(), 1);
        self.take_step(planned)
    }

    /// The forward options of a training step: this trainer's mask and attention choices
    /// (what a worker computing a share of its steps needs).
    pub fn forward_options(&self) -> ForwardOptions {
        ForwardOptions {
            softmax: self.softmax,
            ..ForwardOptions::training(self.mask)
        }
    }

    /// A new batch for the objective, from the trainer's generator.
    pub fn next_batch(&mut self) -> Result<Batch> {
        self.draw().map(|(batch, _)| batch)
    }

    /// The model and tokenizer as a checkpoint, under the names of the one trained from.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            model: self.model.clone(),
            tokenizer: self.tokenizer.clone(),
            naming: self.naming.clone(),
        }
    }
}

impl Run for Trainer {
    fn step(&mut self) -> Result<StepReport> {
        Trainer::step(self)
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
        self.stepper.run_state(self.corpus_words)
    }
    fn restore_run_state(&mut self, run: RunState) {
        self.corpus_words = run.corpus_words;
        self.stepper.restore(run);
    }
    fn set_batch_config(&mut self, batch: BatchConfig) {
        self.batch_config = batch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint;
    use crate::data::Replacement;

    const CORPUS: &str = "the cat sat on the mat.\nthe dog ate a bone.\na bird sang in the tree.\n\
                          the sun was warm.\nwe went home.\nit rained all night.\n";

    /// hidden 16, 2 layers, 2 heads: fast in debug builds.
    fn settings(lr: f64) -> (BertConfig, TrainSettings) {
        let mut config = BertConfig::new(0, 16, 2, 2, 32);
        config.max_position_embeddings = 16;
        config.hidden_dropout_prob = 0.1;
        let batch = BatchConfig {
            batch_size: 4,
            max_len: 16,
            mask_prob: 0.15,
            max_predictions: 3,
        };
        (
            config,
            TrainSettings {
                optimizer: OptimizerConfig::adam(lr),
                batch,
                mask: MaskMode::Padding,
                objective: Objective::MlmNsp,
            },
        )
    }

    fn curve(seed: u64, steps: usize) -> Vec<f32> {
        let (config, s) = settings(1e-3);
        let mut t = Trainer::from_corpus(CORPUS, config, s, seed).unwrap();
        (0..steps).map(|_| t.step().unwrap().losses.total).collect()
    }

    /// Through the files a browser keeps: the checkpoint (weights, vocabulary) and the
    /// training state.
    fn kept_and_restored(t: &Trainer, s: TrainSettings, seed: u64) -> Trainer {
        let files = checkpoint::to_files(&t.checkpoint());
        let loaded = checkpoint::load(&files).unwrap();
        let mut back = Trainer::from_checkpoint(loaded, CORPUS, s, seed).unwrap();
        back.resume(&t.training_state()).unwrap();
        back
    }

    /// Steps that write into the buffers of the step before give the same bits as steps on
    /// fresh buffers, though the batches change shape (T 32, 24, 32, …: the buffers shrink and
    /// grow) and dropout is on.
    #[test]
    fn writing_into_the_last_steps_buffers_changes_no_bit() {
        let preset = &crate::workload::presets()[0];
        let batches: Vec<_> = [32, 24, 32, 24, 32]
            .into_iter()
            .enumerate()
            .map(|(i, t)| crate::workload::fixed_batch(t, i as u64))
            .collect();
        for kernel in [
            crate::ops::attention::AttentionKernel::Full,
            crate::ops::attention::AttentionKernel::Tiled { block: 8 },
        ] {
            let opts = ForwardOptions {
                softmax: Softmax {
                    kernel,
                    window: None,
                },
                ..ForwardOptions::training(MaskMode::Padding)
            };
            let run = |keep_buffers: bool| {
                let mut model = crate::workload::model(preset);
                let mut grads = model.zeros_like();
                let mut optimizer = Optimizer::new(OptimizerConfig::adam(1e-3), &model).unwrap();
                let (mut rng, mut buffers) = (Rng::new(3), StepBuffers::default());
                let mut bits: Vec<u32> = Vec::new();
                for batch in &batches {
                    if !keep_buffers {
                        buffers = StepBuffers::default();
                    }
                    let l = train_step(
                        &mut model,
                        &mut grads,
                        &mut optimizer,
                        batch,
                        &opts,
                        &mut rng,
                        &mut buffers,
                    )
                    .unwrap();
                    bits.extend([l.total, l.mlm, l.nsp].map(f32::to_bits));
                }
                for (_, p) in model.named_params() {
                    bits.extend(p.iter().map(|x| x.to_bits()));
                }
                bits
            };
            assert!(run(true) == run(false), "{kernel:?}");
        }
    }

    #[test]
    fn a_run_kept_and_restored_goes_on_exactly_as_if_never_stopped() {
        for optimizer in [
            OptimizerConfig::adam(1e-2),
            OptimizerConfig {
                momentum: 0.9,
                ..OptimizerConfig::sgd(1e-1)
            },
        ] {
            let (config, mut s) = settings(1e-2);
            s.optimizer = optimizer;
            let mut straight = Trainer::from_corpus(CORPUS, config.clone(), s.clone(), 7).unwrap();
            let mut interrupted = Trainer::from_corpus(CORPUS, config, s.clone(), 7).unwrap();
            let losses = |t: &mut Trainer, n| -> Vec<f32> {
                (0..n).map(|_| t.step().unwrap().losses.total).collect()
            };
            let first = losses(&mut straight, 5);
            assert_eq!(losses(&mut interrupted, 3), first[..3]);
            let mut resumed = kept_and_restored(&interrupted, s.clone(), 7);
            assert_eq!(
                (resumed.stepper.step, resumed.corpus_words),
                (3, interrupted.corpus_words)
            );
            assert!(resumed.corpus_words.is_some());
            assert_eq!(
                losses(&mut resumed, 2),
                first[3..],
                "{:?}",
                s.optimizer.kind
            );
            assert_eq!(resumed.model, straight.model);

            // Without the training state the same weights train on differently (fresh moments
            // and generator): the test above can fail.
            let files = checkpoint::to_files(&interrupted.checkpoint());
            let loaded = checkpoint::load(&files).unwrap();
            let mut fresh = Trainer::from_checkpoint(loaded, CORPUS, s, 7).unwrap();
            assert_ne!(losses(&mut fresh, 2), first[3..]);
        }
    }

    #[test]
    fn a_training_state_that_does_not_fit_is_refused_and_changes_nothing() {
        let (config, s) = settings(1e-2);
        let mut adam = Trainer::from_corpus(CORPUS, config.clone(), s.clone(), 1).unwrap();
        adam.step().unwrap();
        let state = adam.training_state();

        let sgd_settings = TrainSettings {
            optimizer: OptimizerConfig::sgd(1e-2),
            ..s.clone()
        };
        let mut sgd = Trainer::from_corpus(CORPUS, config.clone(), sgd_settings, 1).unwrap();
        let e = sgd.resume(&state).unwrap_err().to_string();
        assert!(e.contains("adam") && e.contains("sgd"), "{e}");

        let mut other_shape = config.clone();
        other_shape.intermediate_size = 48;
        let mut bigger = Trainer::from_corpus(CORPUS, other_shape, s.clone(), 1).unwrap();
        let moments = |t: &Trainer| -> Vec<(String, ndarray::ArrayD<f32>)> {
            let owned = |(n, m): (String, &ndarray::ArrayD<f32>)| (n, m.clone());
            t.stepper
                .optimizer
                .moments()
                .into_iter()
                .map(owned)
                .collect()
        };
        let before = moments(&bigger);
        let e = bigger.resume(&state).unwrap_err().to_string();
        assert!(e.contains("shape"), "{e}");
        assert_eq!(moments(&bigger), before, "moments untouched");
        assert_eq!((bigger.stepper.step, bigger.stepper.optimizer.t), (0, 0));

        let mut fresh = Trainer::from_corpus(CORPUS, config, s, 1).unwrap();
        for junk in [&state[..state.len() / 2], b"not a state", &[][..]] {
            assert!(fresh.resume(junk).is_err());
        }
        assert_eq!(fresh.stepper.step, 0);
    }

    #[test]
    fn a_follower_trains_on_its_leaders_batches() {
        let (config, s) = settings(1e-2);
        let mut leader = Trainer::from_corpus(CORPUS, config.clone(), s.clone(), 3).unwrap();
        let mut rotary = config.clone();
        rotary.position_embedding_type = crate::config::PositionEmbeddingType::Rotary;
        let mut follower = Trainer::from_corpus(CORPUS, rotary, s.clone(), 3).unwrap();
        let mut alone = Trainer::from_corpus(CORPUS, follower.model.config.clone(), s, 3).unwrap();
        assert!(
            follower.step_following(&leader).is_err(),
            "nothing to follow yet"
        );
        for _ in 0..3 {
            leader.step().unwrap();
            let report = follower.step_following(&leader).unwrap();
            assert_eq!(report.step, leader.stepper.step);
            let (theirs, mine) = (leader.batch_view().unwrap(), follower.batch_view().unwrap());
            let ids = |v: &BatchView| {
                v.examples
                    .iter()
                    .map(|e| e.input_ids.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(&theirs), ids(&mine), "the same batch");
        }
        assert_eq!(follower.masking_counts(), leader.masking_counts());
        // On its own the same model draws other batches: the comparison above can fail.
        alone.step().unwrap();
        let ids = |v: BatchView| {
            v.examples
                .into_iter()
                .map(|e| e.input_ids)
                .collect::<Vec<_>>()
        };
        let mut first_leader = Trainer::from_corpus(CORPUS, config, settings(1e-2).1, 3).unwrap();
        first_leader.step().unwrap();
        assert_ne!(
            ids(alone.batch_view().unwrap()),
            ids(first_leader.batch_view().unwrap())
        );
    }

    /// What a claim compares a trained model with: the weights training started from.
    #[test]
    fn the_initial_model_is_the_one_training_starts_from() {
        use crate::model::Params;
        let (config, s) = settings(1e-3);
        let t = Trainer::from_corpus(CORPUS, config, s, 9).unwrap();
        let initial = |seed| Trainer::initial_model(&t.model.config, seed).unwrap();
        assert_eq!(initial(9).to_flat(), t.model.to_flat());
        assert_ne!(initial(10).to_flat(), t.model.to_flat());
    }

    #[test]
    fn same_seed_same_loss_curve() {
        let a = curve(5, 4);
        assert_eq!(a, curve(5, 4));
        assert_ne!(a, curve(6, 4));
    }

    /// One batch drawn from the tiny corpus and trained on 80 times with Adam (lr 1e-2, dropout
    /// off): the loss (MLM + NSP) must fall below 0.05 from ≈ 4.
    #[test]
    fn overfits_one_batch_of_a_tiny_corpus() {
        let (mut config, s) = settings(1e-2);
        config.hidden_dropout_prob = 0.0;
        config.attention_probs_dropout_prob = 0.0;
        let mut t = Trainer::from_corpus(CORPUS, config, s, 1).unwrap();
        let batch = t.next_batch().unwrap();
        let first = t.step_on(&batch).unwrap().losses.total;
        let mut last = first;
        for _ in 0..79 {
            last = t.step_on(&batch).unwrap().losses.total;
        }
        assert!(first > 2.0, "first loss {first}");
        assert!(last < 0.05, "loss after 80 steps {last} (first {first})");
        assert_eq!(t.stepper.step, 80);
    }

    /// Adam at lr 1000 never overflows (its steps are bounded by lr) but its loss explodes
    /// past `diverged_loss` at once; that stops it too.
    #[test]
    fn adam_with_a_huge_learning_rate_stops_on_an_exploding_loss() {
        let (config, s) = settings(1000.0);
        let mut t = Trainer::from_corpus(CORPUS, config, s, 2).unwrap();
        let stopped = (0..50).find_map(|_| t.step().err());
        let e = stopped
            .expect("Adam at lr 1000 should be stopped within 50 steps")
            .to_string();
        assert!(e.contains("diverged"), "{e}");
        let bound = diverged_loss(t.model.config.vocab_size);
        assert!(bound > 10.0 && bound < 1000.0, "{bound}");
    }

    /// SGD at lr 1000 blows up within a few steps (seed 2: 4 finite losses, the last ≈ 3e13).
    #[test]
    fn a_huge_learning_rate_stops_on_a_non_finite_loss_without_touching_weights() {
        let (config, mut s) = settings(1000.0);
        s.optimizer = OptimizerConfig::sgd(1000.0);
        let mut t = Trainer::from_corpus(CORPUS, config, s, 2).unwrap();
        let mut outcome = Ok(());
        for _ in 0..50 {
            let before = t.model.clone();
            match t.step() {
                Ok(_) => continue,
                Err(e) => {
                    assert_eq!(t.model, before, "weights changed on the failing step");
                    outcome = Err(e);
                    break;
                }
            }
        }
        let e = outcome
            .expect_err("lr = 1000 should diverge within 50 steps")
            .to_string();
        assert!(e.contains("diverged"), "{e}");
    }

    #[test]
    fn checkpoints_without_heads_are_refused_and_others_train_and_keep_their_names() {
        let (config, s) = settings(1e-3);
        let t = Trainer::from_corpus(CORPUS, config, s.clone(), 3).unwrap();
        let mut ckpt = t.checkpoint();
        ckpt.naming.decoder_weight = true;
        let mut t2 = Trainer::from_checkpoint(ckpt.clone(), CORPUS, s.clone(), 3).unwrap();
        t2.step().unwrap();
        assert!(t2.checkpoint().naming.decoder_weight);
        assert_ne!(t2.model, ckpt.model);
        ckpt.model.cls = None;
        let e = Trainer::from_checkpoint(ckpt, CORPUS, s, 3)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no pre-training heads"), "{e}");
    }

    #[test]
    fn a_vocabulary_limit_keeps_the_most_frequent_words_and_counts_the_rest() {
        let (config, s) = settings(1e-3);
        let whole = Trainer::from_corpus(CORPUS, config.clone(), s.clone(), 0).unwrap();
        let words = whole.corpus_words.unwrap();
        assert_eq!(whole.model.config.vocab_size, 5 + words);
        let mut capped =
            Trainer::from_corpus_with_vocab_limit(CORPUS, 8, config.clone(), s.clone(), 0).unwrap();
        assert_eq!(capped.corpus_words, Some(words));
        assert_eq!(capped.model.config.vocab_size, 8);
        // "." (6×), "the" (5×) and "a" (2×) are kept; "cat" becomes [UNK], and it still trains.
        let ids = capped.tokenizer.token_ids("the cat .");
        assert_eq!(ids.iter().filter(|&&id| id == 1).count(), 1, "{ids:?}");
        capped.step().unwrap();
        let checkpoint = whole.checkpoint();
        let loaded = Trainer::from_checkpoint(checkpoint, CORPUS, s, 0).unwrap();
        assert_eq!(loaded.corpus_words, None);
    }

    #[test]
    fn bad_settings_are_refused() {
        let (config, mut s) = settings(1e-3);
        s.batch.max_len = 17;
        let e = Trainer::from_corpus(CORPUS, config.clone(), s.clone(), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("16 positions"), "{e}");
        s.batch.max_len = 16;
        s.optimizer.lr = -1.0;
        assert!(Trainer::from_corpus(CORPUS, config.clone(), s.clone(), 0).is_err());
        s.optimizer.lr = 1e-3;
        assert!(Trainer::from_corpus("one line only", config, s, 0).is_err());
        let (config, s) = settings(1e-3);
        let mut t = Trainer::from_corpus(CORPUS, config, s, 0).unwrap();
        assert!(t.set_learning_rate(f64::NAN).is_err());
        t.step().unwrap();
        t.set_learning_rate(0.5).unwrap();
        assert_eq!(t.stepper.optimizer.config.lr, 0.5);
        // No reset: Adam's step count (its bias correction) carries on.
        t.step().unwrap();
        assert_eq!((t.stepper.step, t.stepper.optimizer.t), (2, 2));
    }

    fn tiny(batch_size: usize, dropout: bool) -> Trainer {
        let mut config = BertConfig::tiny(0);
        if !dropout {
            config.hidden_dropout_prob = 0.0;
            config.attention_probs_dropout_prob = 0.0;
        }
        let settings = TrainSettings {
            optimizer: OptimizerConfig::adam(1e-3),
            batch: BatchConfig {
                batch_size,
                max_len: 32,
                mask_prob: 0.15,
                max_predictions: crate::data::max_predictions(32, 0.15),
            },
            mask: MaskMode::Padding,
            objective: Objective::MlmNsp,
        };
        let corpus = crate::default_run::DEFAULT_CORPUS;
        Trainer::from_corpus(corpus, config, settings, 0).unwrap()
    }

    /// The Batch view's evaluation forward writes into the buffers the run keeps for its
    /// steps; the steps after it train exactly as if it had not run.
    #[test]
    fn a_batch_view_between_steps_changes_no_bit() {
        let (mut plain, mut viewed) = (tiny(4, true), tiny(4, true));
        for _ in 0..4 {
            let (a, b) = (plain.step().unwrap(), viewed.step().unwrap());
            assert_eq!(a.losses.total.to_bits(), b.losses.total.to_bits());
            assert!(viewed.batch_view().is_some());
        }
        let bits = |t: &Trainer| -> Vec<u32> {
            let params = t.model.named_params();
            params
                .iter()
                .flat_map(|(_, p)| p.iter().map(|x| x.to_bits()))
                .collect()
        };
        assert!(bits(&plain) == bits(&viewed));
    }

    #[test]
    fn the_batch_view_is_the_batch_trained_on() {
        let mut t = tiny(4, true);
        assert!(t.batch_view().is_none());
        t.step().unwrap();
        // The next batch, drawn from a copy of the generator: the one the step trains on.
        let batch = crate::data::make_batch(&t.corpus, &t.batch_config, &mut t.stepper.rng.clone())
            .unwrap();
        let report = t.step().unwrap();
        let view = t.batch_view().unwrap();
        assert_eq!((view.step, view.fixed), (2, false));
        assert_eq!(view.examples.len(), 4);
        let mask_id = t.tokenizer.vocab().mask_id().unwrap();
        let labels = batch.mlm_labels.as_ref().unwrap();
        for (b, ex) in view.examples.iter().enumerate() {
            let len = ex.input_ids.len();
            assert_eq!(ex.input_ids[..], batch.input_ids.row(b).to_vec()[..len]);
            assert!(batch
                .attention_mask
                .row(b)
                .iter()
                .skip(len)
                .all(|&m| m == 0));
            assert_eq!(
                ex.token_type_ids[..],
                batch.token_type_ids.row(b).to_vec()[..len]
            );
            let name = |id: u32| t.tokenizer.vocab().token(id).unwrap().to_string();
            assert_eq!(
                ex.tokens,
                ex.input_ids.iter().map(|&i| name(i)).collect::<Vec<_>>()
            );
            let labelled: Vec<usize> = (0..32).filter(|&p| labels[[b, p]] >= 0).collect();
            assert_eq!(ex.chosen, labelled);
            assert_eq!(ex.replaced_by.len(), ex.chosen.len());
            assert_eq!(ex.predicted.len(), ex.chosen.len());
            for (&p, r) in ex.chosen.iter().zip(&ex.replaced_by) {
                assert_eq!(ex.original[p], name(labels[[b, p]] as u32));
                match r {
                    Replacement::Mask => assert_eq!(ex.input_ids[p], mask_id),
                    Replacement::Kept => assert_eq!(ex.tokens[p], ex.original[p]),
                    Replacement::Random => assert_ne!(ex.input_ids[p], mask_id),
                }
            }
            let targets: Vec<String> = ex.chosen.iter().map(|&p| ex.original[p].clone()).collect();
            assert_eq!(ex.target, targets, "MLM's target is the token masked");
            let label = batch.nsp_labels.as_ref().unwrap()[b];
            assert_eq!(
                ex.nsp_label,
                Some(crate::batch_view::NspLabel::from_id(label))
            );
            assert!(ex.nsp_probability.is_some_and(|p| (0.5..=1.0).contains(&p)));
        }
        // The view's predictions are the model's after the step: an evaluation forward with the
        // updated weights, not the step's own (dropout, old weights) forward.
        let now = predict(&t.model, &batch, &t.forward_options()).unwrap();
        let name = |id: u32| t.tokenizer.vocab().token(id).unwrap().to_string();
        let shown: Vec<String> = view
            .examples
            .iter()
            .flat_map(|ex| ex.predicted.clone())
            .collect();
        let expected: Vec<String> = now.mlm.iter().map(|&(_, id)| name(id)).collect();
        assert_eq!(shown, expected);
        assert_eq!(report.step, 2);
        let json = serde_json::to_value(&view.examples[0]).unwrap();
        for key in [
            "tokens",
            "original",
            "chosen",
            "replaced_by",
            "target",
            "predicted",
            "nsp_label",
            "nsp_predicted",
            "nsp_probability",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }

    /// A next-token batch (Repeat): every position with a token after it is predicted, its
    /// target that token; nothing is replaced and there is no NSP.
    #[test]
    fn a_repeat_batch_view_predicts_each_next_token() {
        let config = BertConfig {
            hidden_dropout_prob: 0.0,
            attention_probs_dropout_prob: 0.0,
            ..BertConfig::tiny(0)
        };
        let settings = TrainSettings {
            optimizer: OptimizerConfig::adam(1e-3),
            batch: BatchConfig {
                batch_size: 3,
                ..BatchConfig::default()
            },
            mask: MaskMode::Causal,
            objective: Objective::NextToken,
        };
        let task = crate::repeat::RepeatTask::default();
        let mut t = Trainer::repeat(task, config, settings, 0).unwrap();
        t.step().unwrap();
        let view = t.batch_view().unwrap();
        assert_eq!(view.objective, Objective::NextToken);
        assert_eq!(view.examples.len(), 3);
        for ex in &view.examples {
            let len = ex.tokens.len();
            let copies = crate::repeat::Copies::of(&ex.tokens).expect("a Repeat row");
            assert_eq!(len, copies.tokens());
            // [CLS] … [SEP]: each position but the last predicts the token after it.
            assert_eq!(ex.chosen, (0..len - 1).collect::<Vec<_>>());
            assert_eq!(ex.target[..], ex.tokens[1..]);
            assert_eq!(ex.predicted.len(), ex.chosen.len());
            assert!(ex.predicted.iter().all(|p| !p.is_empty()));
            assert!(ex.replaced_by.is_empty());
            assert_eq!(
                (ex.nsp_label, ex.nsp_predicted, ex.nsp_probability),
                (None, None, None)
            );
        }
    }

    /// 2,000 batches of 2 examples of the default corpus (T = 32): the measured shares come
    /// within 1.5 points of 15%, 80/10/10 and 50%.
    #[test]
    fn masking_counts_converge_to_the_recipe() {
        let mut t = tiny(2, true);
        let mut rng = Rng::new(11);
        let mut counts = MaskingCounts::default();
        for _ in 0..2000 {
            let (batch, record) =
                make_batch_recorded(&t.corpus, &t.batch_config, &mut rng).unwrap();
            counts.add(&batch, &record);
        }
        let near = |got: f64, want: f64, what: &str| {
            assert!((got - want).abs() < 1.5, "{what}: {got:.2}% ({counts:?})")
        };
        near(counts.chosen_percent(), 15.0, "chosen");
        near(counts.masked_percent(), 80.0, "masked");
        near(counts.random_percent(), 10.0, "random");
        near(counts.kept_percent(), 10.0, "kept");
        near(counts.is_next_percent(), 50.0, "IsNext");
        assert_eq!(counts.chosen, counts.masked + counts.random + counts.kept);
        // The trainer counts what it draws.
        t.step().unwrap();
        t.step().unwrap();
        assert_eq!(t.masking_counts().is_next + t.masking_counts().not_next, 4);
    }

    /// Fixed batch: the tiny preset memorises one batch (MLM accuracy 1.0 on it).
    #[test]
    fn a_fixed_batch_is_memorised() {
        let mut t = tiny(8, false);
        t.fixed_batch = true;
        let mut first = None;
        let n = (1..=400).find(|_| {
            let r = t.step().unwrap();
            let view = t.batch_view().unwrap();
            assert!(view.fixed);
            let ids: Vec<_> = view.examples.iter().map(|e| e.input_ids.clone()).collect();
            assert_eq!(
                first.get_or_insert(ids.clone()),
                &ids,
                "one batch throughout"
            );
            r.losses.mlm_accuracy == 1.0
        });
        let n = n.expect("memorised within 400 steps");
        eprintln!("fixed batch memorised in {n} steps");
        assert_eq!(t.masking_counts().is_next + t.masking_counts().not_next, 8);
        t.fixed_batch = false;
        t.step().unwrap();
        assert_ne!(
            t.batch_view().unwrap().examples[0].input_ids,
            first.unwrap()[0]
        );
    }
}
