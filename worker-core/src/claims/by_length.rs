//! Memory and Time: one (variant, T) unit per call, one attention forward + backward of the
//! current model's head width; Memory reads one run's peak bytes, Time times it the way
//! `attention-lab scaling` does (`engine::experiments::time_attention`).

use super::{Experiment, Models, Started};
use engine::experiments::{measure_attention, time_attention, AttentionRun, Variant};
use engine::ops::attention::AttentionOptions;
use engine::Rng;
use protocol::claims::{sizes, units, Memory, Time, Unit};
use protocol::{ClaimResult, LabResult};

/// One unit measured: (T, d, options, generator, clock).
type Measure = fn(usize, usize, &AttentionOptions, &mut Rng, &dyn Fn() -> f64) -> AttentionRun;

struct ByLength {
    todo: Vec<Unit>,
    measured: Vec<(Unit, AttentionRun)>,
    total: usize,
    /// d_k of the heads measured: the current model's.
    head_dim: usize,
    rng: Rng,
    measure: Measure,
    result: fn(&[(Unit, AttentionRun)], usize) -> ClaimResult,
}

pub fn memory(models: &Models) -> LabResult<Started> {
    // Bytes do not vary from run to run: one run each.
    let once: Measure = |t, d, opts, rng, now_ms| measure_attention(t, d, opts, rng, now_ms);
    Ok(by_length(models, &Memory::VARIANTS, once, Memory::result))
}

pub fn time(models: &Models) -> LabResult<Started> {
    let timed: Measure = |t, d, opts, rng, now_ms| time_attention(t, d, opts, rng, now_ms);
    Ok(by_length(models, &Time::VARIANTS, timed, Time::result))
}

fn by_length(
    models: &Models,
    variants: &[Variant],
    measure: Measure,
    result: fn(&[(Unit, AttentionRun)], usize) -> ClaimResult,
) -> Started {
    let head_dim = models.lab.map_or(16, |l| {
        let c = &l.parts().0.config;
        c.hidden_size / c.num_attention_heads.max(1)
    });
    let mut todo = units(variants);
    todo.reverse(); // popped from the end: shortest first
    Started::Running(Box::new(ByLength {
        total: todo.len(),
        todo,
        measured: Vec::new(),
        head_dim,
        rng: Rng::new(0),
        measure,
        result,
    }))
}

impl Experiment for ByLength {
    fn progress(&self) -> (usize, usize) {
        (self.measured.len(), self.total)
    }

    fn step(&mut self, _: &Models, now_ms: &dyn Fn() -> f64) -> LabResult<Option<ClaimResult>> {
        if let Some(unit) = self.todo.pop() {
            let opts = unit.variant.options(sizes(self.head_dim))?;
            let run = (self.measure)(unit.seq_len, self.head_dim, &opts, &mut self.rng, now_ms);
            self.measured.push((unit, run));
        }
        Ok(self
            .todo
            .is_empty()
            .then(|| (self.result)(&self.measured, self.head_dim)))
    }
}
