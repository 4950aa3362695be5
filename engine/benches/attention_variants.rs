//! Attention variants' speed: one attention forward + backward (the op alone, no projections)
//! at B = 1, H = 4, D = 16 for T = 64 … 4096, for full, tiled (blocks of 64), sliding window
//! (W = 64, tiled so that blocks outside the band are skipped) and linear attention.
//! `cargo bench -p attention-lab-engine --bench attention_variants`; criterion's report gives
//! time against T per variant, whose log-log slope is ≈ 2 for full and ≈ 1 for the others.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use engine::ops::attention::{
    self, Attention, AttentionKernel, AttentionOptions, Heads, Qkv, QkvGrads, Softmax,
};
use engine::ops::dropout::Noise;
use engine::{MaskMode, Rng};
use ndarray::{Array2, Array3};
use std::hint::black_box;
use std::time::Duration;

const H: usize = 4;
const D: usize = 16;
const SEQ_LENS: [usize; 7] = [64, 128, 256, 512, 1024, 2048, 4096];

fn variants() -> [(&'static str, AttentionOptions); 4] {
    let heads = Heads::new(H, H).expect("H ≥ 1");
    let base = AttentionOptions::softmax(heads, MaskMode::Padding, 1.0 / (D as f32).sqrt(), 0.0);
    let tiled = AttentionKernel::Tiled { block: 64 };
    [
        ("full", base),
        (
            "tiled",
            AttentionOptions {
                attention: Attention::Softmax(Softmax {
                    kernel: tiled,
                    window: None,
                }),
                ..base
            },
        ),
        (
            "window64",
            AttentionOptions {
                attention: Attention::Softmax(Softmax {
                    kernel: tiled,
                    window: Some(64),
                }),
                ..base
            },
        ),
        (
            "linear",
            AttentionOptions {
                attention: Attention::Linear,
                ..base
            },
        ),
    ]
}

fn forward_backward(c: &mut Criterion) {
    for (name, opts) in variants() {
        let mut group = c.benchmark_group(format!("attention_{name}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        for t in SEQ_LENS {
            let mut rng = Rng::new(t as u64);
            let mut random =
                || Array3::from_shape_simple_fn((1, t, H * D), || rng.normal(0.0, 1.0));
            let (q, k, v, d_out) = (random(), random(), random(), random());
            let key_mask = Array2::<u8>::ones((1, t));
            group.throughput(Throughput::Elements(t as u64));
            group.bench_with_input(BenchmarkId::new("forward_backward", t), &t, |b, _| {
                b.iter(|| {
                    let (out, cache) = attention::forward(
                        Qkv {
                            q: q.view(),
                            k: k.view(),
                            v: v.view(),
                            key_mask: key_mask.view(),
                        },
                        &opts,
                        &mut Noise::new(0, 0, 1),
                        None,
                        Default::default(),
                    );
                    let (mut dq, mut dk, mut dv) = (
                        Array3::zeros(q.dim()),
                        Array3::zeros(k.dim()),
                        Array3::zeros(v.dim()),
                    );
                    attention::backward(
                        QkvGrads {
                            d_q: dq.view_mut(),
                            d_k: dk.view_mut(),
                            d_v: dv.view_mut(),
                        },
                        d_out.view(),
                        Qkv {
                            q: q.view(),
                            k: k.view(),
                            v: v.view(),
                            key_mask: key_mask.view(),
                        },
                        out.view(),
                        &cache,
                        &opts,
                    );
                    black_box((dq, dk, dv))
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, forward_backward);
criterion_main!(benches);
