//! What every training run offers, whichever model it trains (`train::Trainer` for one BERT,
//! `seq2seq::Seq2SeqTrainer` for an encoder–decoder): its step count, its optimiser (another
//! kind, another learning rate, afresh after a rewind), its batch sizes, and the state kept
//! beside its checkpoint (`resume`). The worker and the command line hold either through it.

use crate::data::BatchConfig;
use crate::error::Result;
use crate::optim::{Optimizer, OptimizerConfig};
use crate::resume::{self, RunState};
use crate::step::StepReport;

pub trait Run {
    /// One step on the batch the run draws next; an error (a NaN/∞ or diverged loss) leaves
    /// the weights as they were and the step count where it was.
    fn step(&mut self) -> Result<StepReport>;
    fn optimizer(&self) -> &Optimizer;
    fn optimizer_mut(&mut self) -> &mut Optimizer;
    /// An optimiser of `config` for this run's model, its moments afresh.
    fn new_optimizer(&self, config: OptimizerConfig) -> Result<Optimizer>;
    /// The step count, the generator and what else `resume` keeps.
    fn run_state(&self) -> RunState;
    fn restore_run_state(&mut self, run: RunState);
    /// Batches of these sizes from the next step on.
    fn set_batch_config(&mut self, batch: BatchConfig);

    /// Steps taken.
    fn steps(&self) -> u64 {
        self.run_state().step
    }

    /// A new optimiser, its moments afresh (another kind, or after a rewind).
    fn set_optimizer(&mut self, config: OptimizerConfig) -> Result<()> {
        *self.optimizer_mut() = self.new_optimizer(config)?;
        Ok(())
    }

    /// Takes effect at the next step; the moments and the optimiser's step count are kept.
    fn set_learning_rate(&mut self, lr: f64) -> Result<()> {
        self.optimizer_mut().set_learning_rate(lr)
    }

    /// Continue from `step` with weights set back to it: the optimiser afresh (the moments of a
    /// diverged run would only push it off again).
    fn rewound_to(&mut self, step: u64) -> Result<()> {
        self.set_optimizer(self.optimizer().config.clone())?;
        let run = RunState {
            step,
            ..self.run_state()
        };
        self.restore_run_state(run);
        Ok(())
    }

    /// The run's state beyond its checkpoint, as the bytes of `training_state.safetensors`.
    fn training_state(&self) -> Vec<u8> {
        resume::encode(&self.run_state(), self.optimizer())
    }

    /// Continue the run kept in `training_state`: its step count, optimiser and generator. An
    /// error (another optimiser, another model, not such a file) leaves the run as it was.
    fn resume(&mut self, training_state: &[u8]) -> Result<()> {
        let run = resume::decode(training_state, self.optimizer_mut())?;
        self.restore_run_state(run);
        Ok(())
    }
}
