//! The wasm32 SIMD kernel (engine::ops::matmul) in the browser, against a naive triple loop: odd
//! shapes (edge tiles), transposed and strided views, α/β, and depths and rows past one packing
//! block. `./dev test` runs it twice: built with SIMD128 alone (what Safari runs) and with relaxed
//! SIMD's fused multiply-add (`build/relaxed.sh`, what Chromium and Firefox run).
#![cfg(target_arch = "wasm32")]

use engine::ops::matmul::{gemm, gemm_simd};
use ndarray::{s, Array2, ArrayView2};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

// Without SIMD128 there is no kernel to test (gemm falls back to matrixmultiply).
#[cfg(not(target_feature = "simd128"))]
compile_error!("wasm_matmul.rs needs the wasm build with +simd128 (see .cargo/config.toml)");

/// Deterministic values in (-1, 1) that differ per (seed, i, j).
fn filled(rows: usize, cols: usize, seed: u32) -> Array2<f32> {
    Array2::from_shape_fn((rows, cols), |(i, j)| {
        let h =
            (i as u32 * 7919 + j as u32 * 104_729 + seed * 15_485_863).wrapping_mul(2_654_435_761);
        (h >> 8) as f32 / (1u32 << 23) as f32 - 1.0
    })
}

/// α·A·B + β·C0 in f64, entry by entry.
fn naive(
    alpha: f32,
    a: &ArrayView2<f32>,
    b: &ArrayView2<f32>,
    beta: f32,
    c0: &Array2<f32>,
) -> Array2<f32> {
    Array2::from_shape_fn(c0.dim(), |(i, j)| {
        let dot: f64 = (0..a.ncols())
            .map(|p| f64::from(a[[i, p]]) * f64::from(b[[p, j]]))
            .sum();
        (f64::from(alpha) * dot + f64::from(beta) * f64::from(c0[[i, j]])) as f32
    })
}

fn check(alpha: f32, a: ArrayView2<f32>, b: ArrayView2<f32>, beta: f32) {
    let (m, k, n) = (a.nrows(), a.ncols(), b.ncols());
    let c0 = filled(m, n, 9);
    let want = naive(alpha, &a, &b, beta, &c0);
    let mut got = c0.clone();
    gemm_simd(alpha, a.view(), b.view(), beta, got.view_mut());
    let tol = 1e-5 * (k as f32).max(1.0);
    for ((i, j), &g) in got.indexed_iter() {
        let w = want[[i, j]];
        assert!(
            (g - w).abs() <= tol,
            "({m}×{k})·({k}×{n}) α {alpha} β {beta}: C[{i},{j}] = {g}, want {w}"
        );
    }
}

#[wasm_bindgen_test]
fn odd_shapes_match_a_naive_product() {
    for &(m, k, n) in &[
        (1, 1, 1),
        (3, 5, 7),
        (33, 65, 17),
        (4, 8, 8),
        (130, 300, 13),
        (70, 1100, 19), // three depth blocks, two row blocks
        (2, 0, 3),
    ] {
        let (a, b) = (filled(m, k, 1), filled(k, n, 2));
        check(1.0, a.view(), b.view(), 0.0);
        check(0.5, a.view(), b.view(), 1.0);
        check(-2.0, a.view(), b.view(), 0.25);
    }
}

#[wasm_bindgen_test]
fn transposed_operands_match_a_naive_product() {
    for &(m, k, n) in &[(1, 1, 1), (3, 5, 7), (33, 65, 17), (131, 600, 9)] {
        let (at, bt) = (filled(k, m, 3), filled(n, k, 4));
        let (a, b) = (filled(m, k, 5), filled(k, n, 6));
        check(1.0, at.t(), b.view(), 0.0); // Aᵀ·B, as in d_weight = doutᵀ·inp
        check(1.0, a.view(), bt.t(), 1.0); // A·Bᵀ, as in y = x·Wᵀ
        check(0.125, at.t(), bt.t(), 0.0);
    }
}

#[wasm_bindgen_test]
fn strided_views_and_strided_output_match_a_naive_product() {
    // Column slices of wider matrices, as attention takes per-head blocks of Q, K, V.
    let (wide_a, wide_b) = (filled(33, 80, 7), filled(65, 40, 8));
    let (a, b) = (wide_a.slice(s![.., 3..68]), wide_b.slice(s![.., 16..33]));
    let c0 = filled(33, 50, 9);
    let want = naive(1.0, &a, &b, 1.0, &c0.slice(s![.., 10..27]).to_owned());
    let mut c = c0.clone();
    gemm_simd(1.0, a, b, 1.0, c.slice_mut(s![.., 10..27]));
    for ((i, j), &g) in c.indexed_iter() {
        let w = if (10..27).contains(&j) {
            want[[i, j - 10]]
        } else {
            c0[[i, j]]
        };
        assert!((g - w).abs() <= 1e-4, "C[{i},{j}] = {g}, want {w}");
    }
    // Every other column of C: rows are not contiguous.
    let mut c = c0.clone();
    let mut every_other = c.slice_mut(s![.., ..;3]);
    let want = naive(2.0, &a, &b, 0.0, &every_other.to_owned());
    gemm_simd(2.0, a, b, 0.0, every_other.view_mut());
    assert!(every_other
        .iter()
        .zip(&want)
        .all(|(g, w)| (g - w).abs() <= 1e-4));
}

#[wasm_bindgen_test]
fn reversed_views_match_a_naive_product() {
    // Negative strides: ndarray views may run backwards in memory.
    let (a, b) = (filled(13, 21, 1), filled(21, 11, 2));
    check(1.0, a.slice(s![..;-1, ..]), b.slice(s![.., ..;-1]), 0.0);
    check(0.5, a.slice(s![.., ..;-1]), b.slice(s![..;-1, ..]), 1.0);
}

#[wasm_bindgen_test]
fn beta_zero_overwrites_nan() {
    let (a, b) = (filled(5, 3, 1), filled(3, 9, 2));
    let mut c = Array2::from_elem((5, 9), f32::NAN);
    gemm_simd(1.0, a.view(), b.view(), 0.0, c.view_mut());
    let want = naive(1.0, &a.view(), &b.view(), 0.0, &Array2::zeros((5, 9)));
    assert!(
        c.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5),
        "{c} vs {want}"
    );
}

/// The dispatcher the ops call (the kernel in optimised builds, matrixmultiply in debug ones)
/// gives the same product.
#[wasm_bindgen_test]
fn the_dispatcher_matches_the_kernel() {
    let (a, b) = (filled(37, 70, 1), filled(70, 21, 2));
    let (mut via_ops, mut kernel) = (filled(37, 21, 3), filled(37, 21, 3));
    gemm(0.5, &a, &b.t().to_owned().t(), 2.0, &mut via_ops);
    gemm_simd(0.5, a.view(), b.view(), 2.0, kernel.view_mut());
    assert!(via_ops
        .iter()
        .zip(&kernel)
        .all(|(x, y)| (x - y).abs() <= 1e-4));
}
