//! The native GEMM (`engine::ops::matmul::gemm`, the `gemm` crate) against matrixmultiply
//! (ndarray's `general_mat_mul`, the kernel it replaced natively) at the products a training
//! step makes, in their layouts: `cargo bench -p attention-lab-engine --bench gemm`.
//!
//! Names: PRESET/WHAT/M×K×N with the layout of A·B as used: `nt` = A·Wᵀ (linear forward, W
//! stored (out, in)), `nn` = dY·W (linear backward, input gradient), `tn` = dYᵀ·X (linear
//! backward, weight gradient), per attention head `nt` = Q·Kᵀ and `nn` = P·V.
//! tiny: C 64, I 256, T 32, D 16, N = B·T = 256, 40 labelled rows; small: C 256, I 1024,
//! T 64, D 64, N = 512, 80 labelled rows; V = 2000.
//! `split/…` times the blocks the engine cuts a product into for the threads (`-- split`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use engine::Rng;
use ndarray::{Array2, ArrayView2};
use std::hint::black_box;
use std::time::Duration;

#[derive(Clone, Copy)]
enum Layout {
    Nt,
    Nn,
    Tn,
}

const SHAPES: [(&str, Layout, usize, usize, usize); 18] = [
    ("tiny/qkvo", Layout::Nt, 256, 64, 64),
    ("tiny/intermediate", Layout::Nt, 256, 64, 256),
    ("tiny/output", Layout::Nt, 256, 256, 64),
    ("tiny/d_input", Layout::Nn, 256, 256, 64),
    ("tiny/d_weight", Layout::Tn, 256, 256, 64),
    ("tiny/decoder", Layout::Nt, 40, 64, 2000),
    ("tiny/d_decoder", Layout::Tn, 2000, 40, 64),
    ("tiny/scores", Layout::Nt, 32, 16, 32),
    ("tiny/context", Layout::Nn, 32, 32, 16),
    ("small/qkvo", Layout::Nt, 512, 256, 256),
    ("small/intermediate", Layout::Nt, 512, 256, 1024),
    ("small/output", Layout::Nt, 512, 1024, 256),
    ("small/d_input", Layout::Nn, 512, 1024, 256),
    ("small/d_weight", Layout::Tn, 1024, 512, 256),
    ("small/decoder", Layout::Nt, 80, 256, 2000),
    ("small/d_decoder", Layout::Nn, 80, 2000, 256),
    ("small/scores", Layout::Nt, 64, 64, 64),
    ("small/context", Layout::Nn, 64, 64, 64),
];

fn random(rng: &mut Rng, shape: (usize, usize)) -> Array2<f32> {
    Array2::from_shape_simple_fn(shape, || rng.normal(0.0, 1.0))
}

fn products(c: &mut Criterion) {
    let mut rng = Rng::new(1);
    for (name, layout, m, k, n) in SHAPES {
        // Stored as the op stores them; the product reads transposed views.
        let a = match layout {
            Layout::Tn => random(&mut rng, (k, m)),
            _ => random(&mut rng, (m, k)),
        };
        let b = match layout {
            Layout::Nt => random(&mut rng, (n, k)),
            _ => random(&mut rng, (k, n)),
        };
        let (a, b): (ArrayView2<f32>, ArrayView2<f32>) = match layout {
            Layout::Nt => (a.view(), b.t()),
            Layout::Nn => (a.view(), b.view()),
            Layout::Tn => (a.t(), b.view()),
        };
        let mut out = Array2::<f32>::zeros((m, n));
        let mut group = c.benchmark_group(format!("gemm/{name}/{m}x{k}x{n}"));
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(1));
        group.bench_function(BenchmarkId::from_parameter("matrixmultiply"), |bench| {
            bench.iter(|| {
                ndarray::linalg::general_mat_mul(1.0, &a, &b, 1.0, &mut out);
                black_box(&out);
            })
        });
        group.bench_function(BenchmarkId::from_parameter("engine"), |bench| {
            bench.iter(|| {
                engine::ops::matmul::gemm(1.0, &a, &b, 1.0, &mut out);
                black_box(&out);
            })
        });
        group.finish();
    }
}

/// Why the engine cuts a linear layer's product into blocks of columns for the threads, not
/// rows: A·Wᵀ (W stored (out, in)) whole, in blocks of 64 rows of C, in blocks of 128 columns,
/// all on one thread. gemm packs all of its left operand (our Wᵀ, as it computes Cᵀ) in every
/// call, so row blocks pack W again and again.
fn splits(c: &mut Criterion) {
    let mut rng = Rng::new(2);
    for (name, m, k, n) in [
        ("small/intermediate", 512, 256, 1024),
        ("small/output", 512, 1024, 256),
    ] {
        let x = random(&mut rng, (m, k));
        let w = random(&mut rng, (n, k));
        let mut out = Array2::<f32>::zeros((m, n));
        let mut group = c.benchmark_group(format!("split/{name}/{m}x{k}x{n}"));
        group.throughput(Throughput::Elements((2 * m * k * n) as u64));
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_secs(1));
        group.bench_function(BenchmarkId::from_parameter("whole"), |bench| {
            bench.iter(|| {
                engine::ops::matmul::gemm_unsplit(1.0, x.view(), w.t(), 1.0, out.view_mut())
            })
        });
        group.bench_function(BenchmarkId::from_parameter("rows-of-64"), |bench| {
            bench.iter(|| {
                for (x, out) in x
                    .axis_chunks_iter(ndarray::Axis(0), 64)
                    .zip(out.axis_chunks_iter_mut(ndarray::Axis(0), 64))
                {
                    engine::ops::matmul::gemm_unsplit(1.0, x, w.t(), 1.0, out);
                }
            })
        });
        group.bench_function(BenchmarkId::from_parameter("columns-of-128"), |bench| {
            bench.iter(|| {
                let wt = w.t();
                for (wt, out) in wt
                    .axis_chunks_iter(ndarray::Axis(1), 128)
                    .zip(out.axis_chunks_iter_mut(ndarray::Axis(1), 128))
                {
                    engine::ops::matmul::gemm_unsplit(1.0, x.view(), wt, 1.0, out);
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, products, splits);
criterion_main!(benches);
