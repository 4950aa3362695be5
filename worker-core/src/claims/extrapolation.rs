//! Length extrapolation: the claim trains its own decoders on Repeat, absolute, rotary and
//! ALiBi positions from each seed (`engine::experiments::extrapolation`), one after another;
//! one unit is `CHECK_EVERY` training steps of one model and the check that follows, or the
//! measurement of a model that is done.

use super::{Experiment, Models, Started};
use engine::experiments::extrapolation::{LengthRun, CHECK_EVERY, MAX_STEPS, POSITIONS, SEEDS};
use protocol::claims::{Extrapolation, LengthModel};
use protocol::{ClaimResult, LabResult};

/// Checks a model may take before `MAX_STEPS`.
const CHECKS: usize = MAX_STEPS.div_ceil(CHECK_EVERY) as usize;

struct Extrapolating {
    /// The model training now; None before the first and between two.
    run: Option<LengthRun>,
    /// (positions, seed) still to train, popped from the end.
    todo: Vec<(engine::config::PositionEmbeddingType, u64)>,
    measured: Vec<LengthModel>,
}

pub fn start(_: &Models) -> LabResult<Started> {
    let todo = POSITIONS
        .iter()
        .flat_map(|&p| SEEDS.iter().map(move |&s| (p, s)))
        .rev()
        .collect();
    Ok(Started::Running(Box::new(Extrapolating {
        run: None,
        todo,
        measured: Vec::new(),
    })))
}

impl Experiment for Extrapolating {
    /// A model's units are its checks, all `CHECKS` of them once it is done (one that learns
    /// early skips the rest).
    fn progress(&self) -> (usize, usize) {
        let total = POSITIONS.len() * SEEDS.len() * CHECKS;
        let running = self
            .run
            .as_ref()
            .map_or(0, |r| (r.step() / CHECK_EVERY) as usize);
        (self.measured.len() * CHECKS + running, total)
    }

    fn step(&mut self, _: &Models, _: &dyn Fn() -> f64) -> LabResult<Option<ClaimResult>> {
        let mut run = match self.run.take() {
            Some(run) => run,
            None => match self.todo.pop() {
                Some((positions, seed)) => LengthRun::new(positions, seed)?,
                None => return Ok(Some(Extrapolation::result(&self.measured))),
            },
        };
        if !run.done() {
            run.train_on()?;
            self.run = Some(run);
            return Ok(None);
        }
        self.measured.push(LengthModel {
            positions: run.positions,
            seed: run.seed,
            steps: run.step(),
            learned_at: run.learned_at,
            by_length: run.by_length()?,
        });
        Ok(self
            .todo
            .is_empty()
            .then(|| Extrapolation::result(&self.measured)))
    }
}
