//! The same seed gives the same bits on 1 thread and on 2: a few training steps of the tiny
//! workload (dropout on, so the generator is in play too) in a 1-thread and a 2-thread pool.

use engine::forward::ForwardOptions;
use engine::optim::{Optimizer, OptimizerConfig};
use engine::train::{train_step, StepBuffers};
use engine::{workload, MaskMode, Rng};

/// Losses of 3 Adam steps and the weights after them, as bits.
fn run(threads: usize) -> (Vec<u32>, Vec<u32>) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let preset = &workload::presets()[0];
        let batch = workload::fixed_batch(preset.seq_len, 7);
        let mut model = workload::model(preset);
        let mut grads = model.zeros_like();
        let mut optimizer = Optimizer::new(OptimizerConfig::adam(1e-3), &model).unwrap();
        let mut rng = Rng::new(5);
        let mut buffers = StepBuffers::default();
        let losses = (0..3)
            .flat_map(|_| {
                let l = train_step(
                    &mut model,
                    &mut grads,
                    &mut optimizer,
                    &batch,
                    &ForwardOptions::training(MaskMode::Padding),
                    &mut rng,
                    &mut buffers,
                )
                .unwrap();
                [l.total.to_bits(), l.mlm.to_bits(), l.nsp.to_bits()]
            })
            .collect();
        let weights = model
            .named_params()
            .into_iter()
            .flat_map(|(_, p)| p.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            .collect();
        (losses, weights)
    })
}

#[test]
fn one_thread_and_two_give_the_same_bits() {
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(1), "a run repeats itself");
}
