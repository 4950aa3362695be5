//! The fixed benchmark workload, shared by `benches/train_step.rs` (criterion),
//! `examples/bench_step.rs` (timings for tools/bench_vs_torch.py), `examples/workload_step.rs`
//! and the training worker (the browser benchmark): one preset model and one batch, identical
//! everywhere, so the numbers can be compared with each other, with torch and with WASM.

use crate::batch::IGNORE_INDEX;
use crate::forward::ForwardOptions;
use crate::{Batch, BertConfig, BertForPreTraining, MaskMode, Rng};
use ndarray::{Array1, Array2};

pub const VOCAB: usize = 2000;
pub const BATCH: usize = 8;
/// Fraction of positions that carry an MLM label, as in BERT's pre-training.
pub const MASK_PROB: f32 = 0.15;
const MASK_ID: u32 = 4;
const FIRST_WORD_ID: u32 = 5;

pub struct Preset {
    pub name: &'static str,
    pub config: BertConfig,
    pub seq_len: usize,
}

/// tiny: C 64, 2 layers, 4 heads, I 256, T 32. small: C 256, 4 layers, 4 heads, I 1024, T 64.
/// Vocabulary 2000, dropout at the config default (0.1).
pub fn presets() -> Vec<Preset> {
    vec![
        Preset {
            name: "tiny",
            config: BertConfig::tiny(VOCAB),
            seq_len: 32,
        },
        Preset {
            name: "small",
            config: BertConfig::small(VOCAB),
            seq_len: 64,
        },
    ]
}

/// B = 8 rows of T random word ids, segment B in the second half, no padding, 15% of
/// positions (never [CLS]) replaced by [MASK] and labelled, NSP labels alternating.
pub fn fixed_batch(seq_len: usize, seed: u64) -> Batch {
    let mut rng = Rng::new(seed);
    let mut input_ids = Array2::from_shape_fn((BATCH, seq_len), |_| {
        FIRST_WORD_ID + rng.below(VOCAB - FIRST_WORD_ID as usize) as u32
    });
    let token_type_ids =
        Array2::from_shape_fn((BATCH, seq_len), |(_, t)| u32::from(t >= seq_len / 2));
    let mut mlm_labels = Array2::from_elem((BATCH, seq_len), IGNORE_INDEX);
    let per_row = ((seq_len as f32) * MASK_PROB).round() as usize;
    for b in 0..BATCH {
        let mut positions: Vec<usize> = (1..seq_len).collect();
        rng.shuffle(&mut positions);
        for &t in &positions[..per_row] {
            mlm_labels[[b, t]] = i64::from(input_ids[[b, t]]);
            input_ids[[b, t]] = MASK_ID;
        }
    }
    Batch {
        input_ids,
        token_type_ids,
        attention_mask: Array2::ones((BATCH, seq_len)),
        mlm_labels: Some(mlm_labels),
        nsp_labels: Some(Array1::from_shape_fn(BATCH, |b| (b % 2) as u32)),
    }
}

pub fn model(preset: &Preset) -> BertForPreTraining {
    BertForPreTraining::init(&preset.config, &mut Rng::new(42)).expect("the presets are buildable")
}

/// The training forward: dropout on, no trace, MLM head on labelled rows only.
pub fn train_options() -> ForwardOptions {
    ForwardOptions::training(MaskMode::Padding)
}

/// Median milliseconds of a full training step (forward, backward, Adam) on `preset`'s fixed
/// batch, after `warmup` untimed steps. `now_ms` is the clock: `Instant` natively,
/// `Date.now()` in a browser worker.
pub fn median_step_ms(
    preset: &Preset,
    iters: usize,
    warmup: usize,
    now_ms: impl Fn() -> f64,
) -> f64 {
    use crate::optim::{Optimizer, OptimizerConfig};
    let batch = fixed_batch(preset.seq_len, 7);
    let mut rng = Rng::new(1);
    let mut model = model(preset);
    let mut grads = model.zeros_like();
    let mut optimizer =
        Optimizer::new(OptimizerConfig::adam(1e-3), &model).expect("valid Adam settings");
    let mut buffers = crate::train::StepBuffers::default();
    let mut times = Vec::with_capacity(iters);
    for i in 0..warmup + iters {
        let t0 = now_ms();
        crate::train::train_step(
            &mut model,
            &mut grads,
            &mut optimizer,
            &batch,
            &train_options(),
            &mut rng,
            &mut buffers,
        )
        .expect("the benchmark workload trains");
        if i >= warmup {
            times.push(now_ms() - t0);
        }
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
