//! Generation speed on the small preset made a decoder (C 256, 4 layers, 4 heads, I 1024,
//! vocabulary 1000, random weights), from a 16-token prompt, greedy, no stop token.
//! `cargo bench -p attention-lab-engine --bench generate`.
//!
//! - "generate 64 tokens from 16": the whole `generate` call with the KV cache and without it
//!   (every token re-runs the whole sequence). Target: cached ≥ 5× faster.
//! - "time per new token": one `Generator::next_token` call with the cache, for token 1 and
//!   token 64 (the setup, untimed, builds the generator and advances it k − 1 tokens). With
//!   the cache a token costs its own projections plus attention over the cached keys, so
//!   token 64 should cost about what token 1 does. Target: within 1.5×.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, SamplingMode};
use engine::generate::{generate, GenerateOptions, Generator};
use engine::{BertConfig, BertForPreTraining, Rng};
use std::hint::black_box;
use std::time::Duration;

const VOCAB: usize = 1000;
const PROMPT_LEN: usize = 16;
const NEW_TOKENS: usize = 64;

fn model() -> BertForPreTraining {
    let config = BertConfig::small(VOCAB).decoder();
    BertForPreTraining::init(&config, &mut Rng::new(42)).expect("the small preset is buildable")
}

/// [CLS] then 15 random word ids.
fn prompt() -> Vec<u32> {
    let mut rng = Rng::new(7);
    let mut ids = vec![2];
    ids.extend((1..PROMPT_LEN).map(|_| 5 + rng.below(VOCAB - 5) as u32));
    ids
}

fn generate_64(c: &mut Criterion) {
    engine::threads::keep_freed_memory();
    let model = model();
    let prompt = prompt();
    let mut group = c.benchmark_group("generate 64 tokens from 16");
    // Without the cache one run takes a good fraction of a second: ten runs, one per sample.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (name, use_cache) in [("with cache", true), ("without cache", false)] {
        let options = GenerateOptions {
            use_cache,
            ..GenerateOptions::greedy(NEW_TOKENS, None)
        };
        group.bench_function(name, |b| {
            b.iter(|| {
                let tokens = generate(&model, &prompt, options).unwrap();
                assert_eq!(tokens.len(), NEW_TOKENS);
                black_box(tokens)
            })
        });
    }
    group.finish();
}

fn time_per_token(c: &mut Criterion) {
    engine::threads::keep_freed_memory();
    let model = model();
    let prompt = prompt();
    // Room for one token past the 64th, so that the 64th call also computes the logits after
    // it (the call that reaches max_new skips that work).
    let options = GenerateOptions::greedy(NEW_TOKENS + 1, None);
    let mut group = c.benchmark_group("time per new token");
    // The setup (untimed, but it counts towards criterion's wall-clock budget) costs up to 63
    // tokens; a few iterations per sample are enough for a stable median.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    for k in [1, NEW_TOKENS] {
        group.bench_with_input(BenchmarkId::new("cached, token", k), &k, |b, &k| {
            b.iter_batched(
                || {
                    let mut generator = Generator::new(&model, &prompt, options).unwrap();
                    for _ in 1..k {
                        generator.next_token().unwrap().expect("below max_new");
                    }
                    generator
                },
                |mut generator| {
                    let token = generator.next_token().unwrap().expect("below max_new");
                    // The generator is dropped after the clock stops.
                    (token, generator)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, generate_64, time_per_token);
criterion_main!(benches);
