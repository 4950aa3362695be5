//! The Claims panel's experiments, in the worker: claims computed in one go answer at once;
//! the scaling ones measure one (variant, T) unit per call, so the worker can report progress
//! and hear Cancel between units. Plain Rust: the caller brings the clock.

use super::lab::Lab;
use engine::experiments::{leakage, measure_attention, AttentionRun};
use engine::Rng;
use protocol::claims::{
    kv_cache_result, leakage_result, memory_result, time_result, units, KvShape, Unit,
};
use protocol::{Claim, ClaimResult, LabError, LabResult, ProbeInput};

/// A measurement shorter than this is repeated and averaged: the worker's clock ticks in
/// 0.1 ms steps (5 µs when cross-origin isolated).
const MIN_TIMED_MS: f64 = 20.0;
/// At most this many repeats of one unit.
const MAX_REPEATS: usize = 200;

/// A scaling claim under way.
pub struct ClaimRun {
    pub claim: Claim,
    todo: Vec<Unit>,
    measured: Vec<(Unit, AttentionRun)>,
    total: usize,
    /// d_k of the heads measured: the current model's.
    head_dim: usize,
    rng: Rng,
}

pub enum Started {
    Done(LabResult<ClaimResult>),
    Running(ClaimRun),
}

/// Starts `claim` on the current model (`lab`) and probe.
pub fn start(claim: Claim, probe: &ProbeInput, lab: Option<&Lab>) -> Started {
    let config = lab.map(|l| l.parts().0.config.clone());
    let head_dim = config
        .as_ref()
        .map_or(16, |c| c.hidden_size / c.num_attention_heads.max(1));
    match claim {
        Claim::Leakage => Started::Done(match lab {
            None => Err(LabError::no_model()),
            Some(lab) => {
                let (model, tokenizer) = lab.parts();
                leakage(model, tokenizer, &probe.text)
                    .map(|l| leakage_result(&l))
                    .map_err(LabError::from)
            }
        }),
        Claim::KvCache => Started::Done(match config {
            None => Err(LabError::no_model()),
            Some(c) => {
                let this = KvShape {
                    name: "This model".into(),
                    layers: c.num_hidden_layers,
                    heads: c.num_attention_heads,
                    kv_heads: c.num_key_value_heads.unwrap_or(c.num_attention_heads),
                    head_dim,
                };
                Ok(kv_cache_result(&[this, KvShape::llama2_70b()]))
            }
        }),
        Claim::Extrapolation => Started::Done(Err(LabError::unavailable(
            "not built yet: this experiment trains two models side by side (Compare), which the page does not have yet",
        ))),
        Claim::Memory | Claim::Time => {
            let mut todo = units(claim);
            todo.reverse(); // popped from the end: shortest first
            Started::Running(ClaimRun {
                claim,
                total: todo.len(),
                todo,
                measured: Vec::new(),
                head_dim,
                rng: Rng::new(0),
            })
        }
    }
}

impl ClaimRun {
    /// (units measured, units in all)
    pub fn progress(&self) -> (usize, usize) {
        (self.measured.len(), self.total)
    }

    /// Measures the next unit; the result once the last is measured.
    pub fn step(&mut self, now_ms: &dyn Fn() -> f64) -> Option<ClaimResult> {
        if let Some(unit) = self.todo.pop() {
            let opts = unit.variant.options(self.head_dim);
            let run =
                |rng: &mut Rng| measure_attention(unit.seq_len, self.head_dim, &opts, rng, now_ms);
            let first = run(&mut self.rng);
            let measured = match self.claim {
                // Bytes do not vary from run to run; time does, and short runs are below the
                // clock's resolution.
                Claim::Time if first.forward_ms + first.backward_ms < MIN_TIMED_MS => {
                    let once = (first.forward_ms + first.backward_ms).max(0.01);
                    let n = ((MIN_TIMED_MS / once).ceil() as usize).clamp(2, MAX_REPEATS);
                    let runs: Vec<AttentionRun> = (0..n).map(|_| run(&mut self.rng)).collect();
                    let mean =
                        |f: fn(&AttentionRun) -> f64| runs.iter().map(f).sum::<f64>() / n as f64;
                    AttentionRun {
                        forward_ms: mean(|r| r.forward_ms),
                        backward_ms: mean(|r| r.backward_ms),
                        peak_bytes: first.peak_bytes,
                    }
                }
                _ => first,
            };
            self.measured.push((unit, measured));
        }
        self.todo.is_empty().then(|| match self.claim {
            Claim::Memory => memory_result(&self.measured, self.head_dim),
            _ => time_result(&self.measured, self.head_dim),
        })
    }
}
