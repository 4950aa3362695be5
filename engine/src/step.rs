//! One training step for every model the engine trains, one BERT or an encoder–decoder:
//! zero the gradients, forward with dropout (its activations written into the last step's
//! buffers), refuse a diverged loss, backward, one optimiser update over all parameters.

use crate::backward::BackwardScratch;
use crate::error::{EngineError, Result};
use crate::forward::{ForwardOptions, ForwardOutput, Losses};
use crate::model::Params;
use crate::optim::Optimizer;
use crate::rng::Rng;

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

/// A model [`train_step`] trains: its parameters ([`Params`]), the batch one step consumes,
/// and its forward and backward with buffers kept between steps.
pub trait Trainable: Params {
    type Batch;
    /// What a step keeps for the next: one [`StepBuffers`] per stack.
    type Buffers: Default;

    /// Why this model cannot be trained, if it cannot.
    fn check_trainable(&self) -> Result<()>;

    /// The forward pass with dropout: its losses, its output kept in `buffers` for backward.
    fn train_forward(
        &self,
        batch: &Self::Batch,
        opts: &ForwardOptions,
        rng: &mut Rng,
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

/// One update on `batch`: zero `grads`, forward (dropout on), backward, optimiser step. A
/// NaN/∞ or diverged loss is an error and leaves the weights untouched. `opts` is
/// `ForwardOptions::training(mask)` with the call's softmax choices (kernel, window). The
/// activations are written into `buffers`, which the step leaves for the next one.
pub fn train_step<M: Trainable>(
    model: &mut M,
    grads: &mut M,
    optimizer: &mut Optimizer,
    batch: &M::Batch,
    opts: &ForwardOptions,
    rng: &mut Rng,
    buffers: &mut M::Buffers,
) -> Result<Losses> {
    model.check_trainable()?;
    grads.fill_zero();
    let losses = model.train_forward(batch, opts, rng, buffers)?;
    if !losses.total.is_finite() || losses.total > model.diverged_loss() {
        return Err(EngineError::Training(format!(
            "the loss is {}: training diverged; lower the learning rate. Weights left unchanged",
            M::describe_loss(&losses)
        )));
    }
    model.train_backward(batch, grads, buffers)?;
    optimizer.step(model, grads)?;
    Ok(losses)
}

/// A loss no model that is still learning reaches: 50 times that of guessing uniformly
/// (ln V for the token prediction plus ln 2 for NSP). Adam with a huge learning rate moves
/// each weight by at most lr per step, so its loss can grow to 1e8 and stay finite; this
/// catches that too.
pub fn diverged_loss(vocab_size: usize) -> f32 {
    50.0 * ((vocab_size.max(2) as f32).ln() + std::f32::consts::LN_2)
}
