//! Training-step speed: forward, backward, and a full Adam step (forward + backward +
//! optimiser) for the tiny and small presets on a fixed batch (B 8, 15% of positions
//! labelled, dropout 0.1). `cargo bench -p attention-lab-engine --bench train_step`.
//! tools/bench_vs_torch.py puts the same workload next to PyTorch.

use engine::workload as common;

use criterion::{criterion_group, criterion_main, Criterion};
use engine::backward::backward;
use engine::forward::forward;
use engine::optim::{Optimizer, OptimizerConfig};
use engine::Rng;
use std::hint::black_box;
use std::time::Duration;

fn train_step(c: &mut Criterion) {
    for preset in common::presets() {
        let batch = common::fixed_batch(preset.seq_len, 7);
        let opts = common::train_options();
        let mut model = common::model(&preset);
        let mut grads = model.zeros_like();
        let mut rng = Rng::new(1);
        let mut group = c.benchmark_group(preset.name);
        group
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(4));

        group.bench_function("forward", |b| {
            b.iter(|| black_box(forward(&model, &batch, &opts, &mut rng).unwrap().losses))
        });

        let out = forward(&model, &batch, &opts, &mut rng).unwrap();
        group.bench_function("backward", |b| {
            b.iter(|| {
                grads.fill_zero();
                backward(&model, &batch, &out, &mut grads).unwrap();
                black_box(&grads);
            })
        });
        drop(out);

        let mut opt = Optimizer::new(OptimizerConfig::adam(1e-3), &model).unwrap();
        group.bench_function("adam_step", |b| {
            b.iter(|| {
                grads.fill_zero();
                let out = forward(&model, &batch, &opts, &mut rng).unwrap();
                backward(&model, &batch, &out, &mut grads).unwrap();
                opt.step(&mut model, &grads).unwrap();
                black_box(out.losses)
            })
        });
        group.finish();
    }
}

criterion_group!(benches, train_step);
criterion_main!(benches);
