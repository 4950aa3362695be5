//! One training step for every model the engine trains, one BERT or an encoder–decoder, cut
//! into data-parallel shares: a step's batch is split into contiguous row ranges
//! ([`plan_step`]); each share's forward and backward ([`share_gradients`]) gives its rows'
//! part of the whole batch's loss and gradient (dropout hashed from each entry's index in the
//! whole batch, every loss mean divided by the whole batch's [`LossCounts`]); the shares'
//! gradients and losses, summed in share order, make one optimiser update ([`apply_step`]).
//! One share is the plain step ([`train_step`]), so one worker runs exactly the code N do, and
//! N shares give one share's result up to float rounding.

use crate::backward::BackwardScratch;
use crate::data::BatchRecord;
use crate::error::{EngineError, Result};
pub use crate::forward::LossCounts;
use crate::forward::{ForwardOptions, ForwardOutput, Losses};
use crate::model::Params;
use crate::ops::dropout::Noise;
use crate::optim::{Optimizer, OptimizerConfig};
use crate::resume::RunState;
use crate::rng::Rng;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What one forward pass leaves for the next to write into instead of allocating (its
/// activations and caches), and backward's scratch. Begin with `default()`.
#[derive(Default)]
pub struct StepBuffers {
    pub(crate) forward: Option<ForwardOutput>,
    pub(crate) backward: BackwardScratch,
}

impl StepBuffers {
    /// What a step's backward reads and writes: the forward output `Trainable::train_forward`
    /// kept, and the scratch.
    pub(crate) fn for_backward(&mut self) -> Result<(&ForwardOutput, &mut BackwardScratch)> {
        match &self.forward {
            Some(out) => Ok((out, &mut self.backward)),
            None => Err(EngineError::Training(
                "backward before forward: no activations are kept".into(),
            )),
        }
    }
}

/// Which part of a step's batch one forward/backward computes: its first row in the whole
/// batch, the step's dropout seed, and the whole batch's loss denominators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Share {
    pub first_row: usize,
    pub dropout_seed: u64,
    pub counts: LossCounts,
}

impl Share {
    /// The dropout of this share's forward over its `rows` rows.
    pub fn noise(&self, rows: usize) -> Noise {
        Noise::new(self.dropout_seed, self.first_row, rows)
    }
}

/// A model [`train_step`] trains: its parameters ([`Params`]), the batch one step consumes,
/// and its forward and backward with buffers kept between steps.
pub trait Trainable: Params {
    type Batch: Clone;
    /// What a step keeps for the next: one [`StepBuffers`] per stack.
    type Buffers: Default;

    /// Why this model cannot be trained, if it cannot.
    fn check_trainable(&self) -> Result<()>;

    /// The batch's loss denominators.
    fn loss_counts(batch: &Self::Batch) -> LossCounts;

    /// Rows `rows` of `batch` (B' = rows.len(); T unchanged), clamped to the batch.
    fn batch_rows(batch: &Self::Batch, rows: Range<usize>) -> Self::Batch;

    fn batch_size(batch: &Self::Batch) -> usize;

    /// Forward with dropout drawn as `share` says (`batch` is the share's rows), losses divided
    /// by `share.counts`: its losses, its output kept in `buffers` for backward.
    fn train_forward(
        &self,
        batch: &Self::Batch,
        opts: &ForwardOptions,
        share: &Share,
        buffers: &mut Self::Buffers,
    ) -> Result<Losses>;

    /// d(loss)/dθ into `grads` (zeroed), from the forward output `buffers` keeps.
    fn train_backward(
        &self,
        batch: &Self::Batch,
        grads: &mut Self,
        buffers: &mut Self::Buffers,
    ) -> Result<()>;

    /// A loss no model that is still learning reaches ([`diverged_loss`] of its vocabulary).
    fn diverged_loss(&self) -> f32;

    /// The loss as the divergence message states it.
    fn describe_loss(losses: &Losses) -> String {
        losses.total.to_string()
    }
}

/// A step cut into shares: the dropout seed, the whole batch's counts, each share's rows
/// (contiguous, in order, sizes differing by at most one).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StepPlan {
    pub dropout_seed: u64,
    pub counts: LossCounts,
    pub rows: Vec<Range<usize>>,
}

impl StepPlan {
    /// Share `i`. Past the last share: an empty share after the last row (its batch has no
    /// rows, which forward refuses).
    pub fn share(&self, i: usize) -> Share {
        let end = self.rows.last().map_or(0, |r| r.end);
        Share {
            first_row: self.rows.get(i).map_or(end, |r| r.start),
            dropout_seed: self.dropout_seed,
            counts: self.counts,
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Share `i`'s rows; past the last, an empty range after the last row.
    fn rows_of(&self, i: usize) -> Range<usize> {
        let end = self.rows.last().map_or(0, |r| r.end);
        self.rows.get(i).cloned().unwrap_or(end..end)
    }
}

/// `batch` cut into `parts.clamp(1, B)` shares, the dropout seed one `rng.next_u64()`.
pub fn plan_step<M: Trainable>(batch: &M::Batch, parts: usize, rng: &mut Rng) -> StepPlan {
    let rows = M::batch_size(batch);
    let parts = parts.clamp(1, rows.max(1));
    let (size, extra) = (rows / parts, rows % parts);
    // The first `extra` shares take one row more.
    let start = |i: usize| i * size + i.min(extra);
    StepPlan {
        dropout_seed: rng.next_u64(),
        counts: M::loss_counts(batch),
        rows: (0..parts).map(|i| start(i)..start(i + 1)).collect(),
    }
}

/// Zero `grads`, forward + backward on `batch` (already the share's rows): d(share's part of
/// the whole batch's loss)/dθ into `grads`, and the share's part of the losses. No divergence
/// check, no update.
pub fn share_gradients<M: Trainable>(
    model: &M,
    grads: &mut M,
    batch: &M::Batch,
    opts: &ForwardOptions,
    share: &Share,
    buffers: &mut M::Buffers,
) -> Result<Losses> {
    model.check_trainable()?;
    grads.fill_zero();
    let losses = model.train_forward(batch, opts, share, buffers)?;
    model.train_backward(batch, grads, buffers)?;
    Ok(losses)
}

/// With every share summed into `grads` and `losses`: a NaN/∞ or diverged loss is an error
/// that leaves the weights untouched; else one optimiser update.
pub fn apply_step<M: Trainable>(
    model: &mut M,
    grads: &M,
    optimizer: &mut Optimizer,
    losses: &Losses,
) -> Result<()> {
    if !losses.total.is_finite() || losses.total > model.diverged_loss() {
        return Err(EngineError::Training(format!(
            "the loss is {}: training diverged; lower the learning rate. Weights left unchanged",
            M::describe_loss(losses)
        )));
    }
    optimizer.step(model, grads)
}

/// One update on `batch`: zero `grads`, forward (dropout on), backward, optimiser step. A
/// NaN/∞ or diverged loss is an error and leaves the weights untouched. `opts` is
/// `ForwardOptions::training(mask)` with the call's softmax choices (kernel, window). The
/// activations are written into `buffers`, which the step leaves for the next one. One share
/// of [`plan_step`]: the code every share runs.
pub fn train_step<M: Trainable>(
    model: &mut M,
    grads: &mut M,
    optimizer: &mut Optimizer,
    batch: &M::Batch,
    opts: &ForwardOptions,
    rng: &mut Rng,
    buffers: &mut M::Buffers,
) -> Result<Losses> {
    let plan = plan_step::<M>(batch, 1, rng);
    let losses = share_gradients(model, grads, batch, opts, &plan.share(0), buffers)?;
    apply_step(model, grads, optimizer, &losses)?;
    Ok(losses)
}

/// A trainer's next step, drawn and planned, nothing computed yet: its batch and the plan
/// of its shares (`Trainer::plan`, `Seq2SeqTrainer::plan`).
#[derive(Clone, Debug)]
pub struct PlannedStep<B> {
    pub batch: B,
    pub plan: StepPlan,
    /// The model's `Trainable::batch_rows`.
    pub(crate) rows_of: fn(&B, Range<usize>) -> B,
    /// How the batch was made, for the batch view (None for a given batch).
    pub(crate) record: Option<BatchRecord>,
    /// The batch is the fixed batch.
    pub(crate) fixed: bool,
    /// A follower's masking counts, its leader's (`Trainer::plan_following`).
    pub(crate) leader_counts: Option<crate::batch_view::MaskingCounts>,
}

impl<B: Clone> PlannedStep<B> {
    /// `batch` planned for `parts` shares of model `M`.
    pub(crate) fn new<M: Trainable<Batch = B>>(batch: B, parts: usize, rng: &mut Rng) -> Self {
        PlannedStep {
            plan: plan_step::<M>(&batch, parts, rng),
            batch,
            rows_of: M::batch_rows,
            record: None,
            fixed: false,
            leader_counts: None,
        }
    }

    /// Share `i`'s rows of the batch (none past the last share).
    pub fn share_batch(&self, i: usize) -> B {
        (self.rows_of)(&self.batch, self.plan.rows_of(i))
    }

    /// Share `i`'s batch, the planned one itself when the share is the whole batch.
    fn share_batch_cow(&self, i: usize) -> Cow<'_, B> {
        match self.plan.len() {
            1 if i == 0 => Cow::Borrowed(&self.batch),
            _ => Cow::Owned(self.share_batch(i)),
        }
    }
}

/// A trainer's `share_gradients`: share `i` of `planned` into `grads`.
pub(crate) fn planned_share_gradients<M: Trainable>(
    (model, grads): (&M, &mut M),
    planned: &PlannedStep<M::Batch>,
    i: usize,
    opts: &ForwardOptions,
    buffers: &mut M::Buffers,
) -> Result<Losses> {
    if i >= planned.plan.len() {
        return Err(EngineError::Training(format!(
            "share {i} of a step of {} shares",
            planned.plan.len()
        )));
    }
    let batch = planned.share_batch_cow(i);
    share_gradients(model, grads, &batch, opts, &planned.plan.share(i), buffers)
}

/// A trainer's `finish`: share 0's gradients (in `grads`) and losses (`own`), or with `own`
/// None every share's from `others` (a model whose shares were all computed elsewhere:
/// Compare's model B), plus the other shares' flat gradients and losses, summed in share
/// order, then [`apply_step`]. The summed losses. On error the weights are unchanged.
pub(crate) fn finish_shares<M: Trainable>(
    (model, grads): (&mut M, &mut M),
    optimizer: &mut Optimizer,
    plan: &StepPlan,
    own: Option<Losses>,
    others: &[(Losses, Vec<f32>)],
) -> Result<Losses> {
    let computed_here = usize::from(own.is_some());
    if others.len() + computed_here != plan.len() {
        return Err(EngineError::Training(format!(
            "a step of {} shares needs {} other shares' gradients, got {}",
            plan.len(),
            plan.len().saturating_sub(computed_here),
            others.len()
        )));
    }
    if own.is_none() {
        // 0 + g₀ is g₀ exactly: the same sum as share 0 computed here.
        grads.fill_zero();
    }
    let mut losses = own.unwrap_or_default();
    for (share_losses, flat) in others {
        grads.add_flat(flat)?;
        losses.add(share_losses);
    }
    apply_step(model, grads, optimizer, &losses)?;
    Ok(losses)
}

/// What one step of a run did, whichever model it trains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepReport {
    /// 1 for the first step.
    pub step: u64,
    /// The losses of the batch before this step's update.
    pub losses: Losses,
}

/// What a training run keeps beside its model to step it, whichever model that is: the
/// gradient buffer, the optimiser, the buffers the last step's activations stay in, the
/// generator (batches and dropout) and the step count. A trainer draws its batches and keeps
/// its model; planning, the shares' gradients and the update are this one code, so every kind
/// of model reports its steps alike.
pub struct Stepper<M: Trainable> {
    grads: M,
    pub optimizer: Optimizer,
    /// An evaluation forward between steps (`Trainer::batch_view`, through `&self`) writes
    /// into them too, hence the lock.
    buffers: Mutex<M::Buffers>,
    /// Batches and dropout seeds both draw from it, in step order.
    pub(crate) rng: Rng,
    /// Steps taken.
    pub step: u64,
}

impl<M: Trainable> Stepper<M> {
    /// No step taken: a zero gradient buffer of `model`'s structure and an `optimizer` of
    /// `model`'s parameters, its moments afresh.
    pub fn new(model: &M, optimizer: OptimizerConfig, rng: Rng) -> Result<Self> {
        Ok(Stepper {
            optimizer: Optimizer::new(optimizer, model)?,
            grads: model.zeros(),
            buffers: Mutex::default(),
            rng,
            step: 0,
        })
    }

    /// `batch` planned for `parts` shares, its dropout seed drawn from the run's generator.
    pub fn plan(&mut self, batch: M::Batch, parts: usize) -> PlannedStep<M::Batch> {
        PlannedStep::new::<M>(batch, parts, &mut self.rng)
    }

    /// Share `i` of `planned` into the run's own gradient buffer (a lead computes share 0
    /// here); the share's part of the losses.
    pub fn share_gradients(
        &mut self,
        model: &M,
        planned: &PlannedStep<M::Batch>,
        i: usize,
        opts: &ForwardOptions,
    ) -> Result<Losses> {
        let buffers = self
            .buffers
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        planned_share_gradients((model, &mut self.grads), planned, i, opts, buffers)
    }

    /// The step: `own` (share 0, already in the gradient buffer; None when every share is in
    /// `others`) plus the other shares' flat gradients (`Params::to_flat`) and losses, summed
    /// in share order, then the update of `model`. On error the weights are unchanged and the
    /// step count does not move.
    pub fn finish(
        &mut self,
        model: &mut M,
        planned: &PlannedStep<M::Batch>,
        own: Option<Losses>,
        others: &[(Losses, Vec<f32>)],
    ) -> Result<StepReport> {
        let model_grads = (model, &mut self.grads);
        let losses = finish_shares(model_grads, &mut self.optimizer, &planned.plan, own, others)?;
        self.step += 1;
        Ok(StepReport {
            step: self.step,
            losses,
        })
    }

    /// `planned` in one share, computed here: the code a step of many runs.
    pub fn take_step(
        &mut self,
        model: &mut M,
        planned: &PlannedStep<M::Batch>,
        opts: &ForwardOptions,
    ) -> Result<StepReport> {
        let own = self.share_gradients(model, planned, 0, opts)?;
        self.finish(model, planned, Some(own), &[])
    }

    /// The buffers the steps keep, for an evaluation forward between them.
    pub(crate) fn buffers(&self) -> MutexGuard<'_, M::Buffers> {
        self.buffers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forget the kept activations: the next step allocates afresh (tests: the bits must not
    /// change).
    #[cfg(test)]
    pub(crate) fn drop_buffers(&mut self) {
        self.buffers = Mutex::default();
    }

    /// The step count and generator, with `corpus_words` (what `resume` keeps).
    pub fn run_state(&self, corpus_words: Option<usize>) -> RunState {
        RunState {
            step: self.step,
            rng: self.rng.clone(),
            corpus_words,
        }
    }

    /// Continue from `run`'s step count and generator.
    pub fn restore(&mut self, run: RunState) {
        self.step = run.step;
        self.rng = run.rng;
    }
}

/// A loss no model that is still learning reaches: 50 times that of guessing uniformly
/// (ln V for the token prediction plus ln 2 for NSP). Adam with a huge learning rate moves
/// each weight by at most lr per step, so its loss can grow to 1e8 and stay finite; this
/// catches that too.
pub fn diverged_loss(vocab_size: usize) -> f32 {
    50.0 * ((vocab_size.max(2) as f32).ln() + std::f32::consts::LN_2)
}
