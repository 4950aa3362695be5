//! C = α·A·B + β·C, the one matrix product every op goes through.
//!
//! Natively this is ndarray's `general_mat_mul` (matrixmultiply's AVX2/FMA kernels). On wasm32
//! matrixmultiply's simd128 kernel has no fused multiply-add, so there a small packed GEMM with
//! a 4×8 register-blocked micro-kernel on relaxed SIMD's `f32x4_relaxed_madd` (an FMA on x86/ARM
//! hosts) does the work instead. Transposes are just strided views (`w.t()`), as with
//! `general_mat_mul`: packing reads any layout.

use ndarray::{ArrayBase, Data, DataMut, Ix2};

/// C (m, n) = α·A (m, k)·B (k, n) + β·C; with β = 0, C is overwritten and never read
/// (same contract as `ndarray::linalg::general_mat_mul`). Panics on mismatched shapes.
///
/// Optimised wasm32 builds take the relaxed-SIMD kernel. Unoptimised (debug) builds keep
/// matrixmultiply: at opt-level 0 the kernel's intrinsics are function calls, not instructions.
pub fn gemm<SA, SB, SC>(
    alpha: f32,
    a: &ArrayBase<SA, Ix2>,
    b: &ArrayBase<SB, Ix2>,
    beta: f32,
    c: &mut ArrayBase<SC, Ix2>,
) where
    SA: Data<Elem = f32>,
    SB: Data<Elem = f32>,
    SC: DataMut<Elem = f32>,
{
    #[cfg(all(
        target_arch = "wasm32",
        target_feature = "relaxed-simd",
        not(debug_assertions)
    ))]
    wasm::gemm(alpha, a.view(), b.view(), beta, c.view_mut());
    #[cfg(not(all(
        target_arch = "wasm32",
        target_feature = "relaxed-simd",
        not(debug_assertions)
    )))]
    ndarray::linalg::general_mat_mul(alpha, a, b, beta, c);
}

/// The wasm32 relaxed-SIMD kernel itself, in every build, so the browser tests
/// (tests/matmul.rs) can compare it with a naive product.
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
pub fn gemm_relaxed_simd(
    alpha: f32,
    a: ndarray::ArrayView2<f32>,
    b: ndarray::ArrayView2<f32>,
    beta: f32,
    c: ndarray::ArrayViewMut2<f32>,
) {
    wasm::gemm(alpha, a, b, beta, c);
}

#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
mod wasm {
    use core::arch::wasm32::{
        f32x4_add, f32x4_mul, f32x4_relaxed_madd, f32x4_splat, v128, v128_load, v128_store,
    };
    use ndarray::{s, ArrayView2, ArrayViewMut2, Axis};
    use std::cell::RefCell;

    /// Micro-tile: MR rows × NR columns of C live in 8 f32x4 accumulators (V8 keeps them, the
    /// two B vectors and the broadcast A value in 11 of the 16 x86 xmm registers).
    const MR: usize = 4;
    const NR: usize = 8;
    /// Depth block: an A panel (MR·KC floats, 4 KiB) and a B panel (NR·KC, 8 KiB) stay in L1.
    const KC: usize = 256;
    /// Row block: the packed A block (MC·KC floats, 128 KiB) stays in L2 while every B panel
    /// passes over it.
    const MC: usize = 128;

    thread_local! {
        /// Packed A and B blocks, reused across calls (no allocation per product).
        static PACKED: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    }

    pub fn gemm(
        alpha: f32,
        a: ArrayView2<f32>,
        b: ArrayView2<f32>,
        beta: f32,
        mut c: ArrayViewMut2<f32>,
    ) {
        let ((m, k), (k2, n)) = (a.dim(), b.dim());
        assert!(
            k == k2 && c.dim() == (m, n),
            "gemm: ({m}, {k})·({k2}, {n}) into {:?}",
            c.dim()
        );
        if m == 0 || n == 0 {
            return;
        }
        if k == 0 {
            // A·B is the zero matrix: C = β·C (β = 0 overwrites, even NaN).
            c.map_inplace(|x| *x = if beta == 0.0 { 0.0 } else { beta * *x });
            return;
        }
        PACKED.with(|packed| {
            let (pa, pb) = &mut *packed.borrow_mut();
            for p0 in (0..k).step_by(KC) {
                let kc = KC.min(k - p0);
                pack_b(pb, b.slice(s![p0..p0 + kc, ..]));
                // Later depth blocks add onto what the first one wrote.
                let beta = if p0 == 0 { beta } else { 1.0 };
                for i_block in (0..m).step_by(MC) {
                    let mc = MC.min(m - i_block);
                    pack_a(pa, a.slice(s![i_block..i_block + mc, p0..p0 + kc]));
                    for j0 in (0..n).step_by(NR) {
                        let b_panel = &pb[j0 * kc..(j0 + NR) * kc];
                        for i0 in (0..mc).step_by(MR) {
                            let acc = micro_kernel(&pa[i0 * kc..(i0 + MR) * kc], b_panel);
                            store_tile(&mut c, i_block + i0, j0, &acc, alpha, beta);
                        }
                    }
                }
            }
        });
    }

    /// A (mc, kc) → panels of MR rows, each stored column by column: panel[p·MR + r] = A[i0+r, p].
    /// Rows past mc are zero so the kernel needs no edge case. Reads follow A's memory order
    /// (rows, or columns for a transposed view such as doutᵀ).
    fn pack_a(buf: &mut Vec<f32>, a: ArrayView2<f32>) {
        let (mc, kc) = a.dim();
        buf.clear();
        buf.resize(mc.div_ceil(MR) * MR * kc, 0.0);
        let at = |i: usize, p: usize| (i / MR) * MR * kc + p * MR + i % MR;
        if a.stride_of(Axis(1)) == 1 || a.stride_of(Axis(0)) != 1 {
            for (i, row) in a.rows().into_iter().enumerate() {
                row.iter().enumerate().for_each(|(p, &x)| buf[at(i, p)] = x);
            }
        } else {
            for (p, col) in a.columns().into_iter().enumerate() {
                col.iter().enumerate().for_each(|(i, &x)| buf[at(i, p)] = x);
            }
        }
    }

    /// B (kc, n) → panels of NR columns, each stored row by row: panel[p·NR + j] = B[p, j0+j].
    /// Columns past n are zero. Reads follow B's memory order (columns for Wᵀ).
    fn pack_b(buf: &mut Vec<f32>, b: ArrayView2<f32>) {
        let (kc, n) = b.dim();
        buf.clear();
        buf.resize(n.div_ceil(NR) * NR * kc, 0.0);
        let at = |p: usize, j: usize| (j / NR) * NR * kc + p * NR + j % NR;
        if b.stride_of(Axis(1)) == 1 || b.stride_of(Axis(0)) != 1 {
            for (p, row) in b.rows().into_iter().enumerate() {
                row.iter().enumerate().for_each(|(j, &x)| buf[at(p, j)] = x);
            }
        } else {
            for (j, col) in b.columns().into_iter().enumerate() {
                col.iter().enumerate().for_each(|(p, &x)| buf[at(p, j)] = x);
            }
        }
    }

    /// Loads 4 floats. The slice is bounds-checked to hold exactly 4, which is all `v128_load`
    /// needs (it has no alignment requirement), hence the `unsafe` is sound.
    #[inline(always)]
    fn load(xs: &[f32]) -> v128 {
        let xs: &[f32; 4] = xs.try_into().expect("4 floats");
        // SAFETY: `xs` is a valid, readable 16-byte region; v128_load allows any alignment.
        unsafe { v128_load(xs.as_ptr().cast()) }
    }

    /// Stores 4 floats into a slice bounds-checked to hold exactly 4 (see `load`).
    #[inline(always)]
    fn store(xs: &mut [f32], v: v128) {
        let xs: &mut [f32; 4] = xs.try_into().expect("4 floats");
        // SAFETY: `xs` is a valid, writable 16-byte region; v128_store allows any alignment.
        unsafe { v128_store(xs.as_mut_ptr().cast(), v) }
    }

    /// acc[r][h] = Σ_p A[i0+r, p] · B[p, j0+4h..j0+4h+4], one fused multiply-add per
    /// (row, half) and depth step: 8 FMAs per 2 B loads and 4 A broadcasts.
    #[inline(always)]
    fn micro_kernel(a_panel: &[f32], b_panel: &[f32]) -> [[v128; 2]; MR] {
        let mut acc = [[f32x4_splat(0.0); 2]; MR];
        for (a, b) in a_panel.chunks_exact(MR).zip(b_panel.chunks_exact(NR)) {
            let (b0, b1) = (load(&b[..4]), load(&b[4..]));
            for (acc, &a) in acc.iter_mut().zip(a) {
                let a = f32x4_splat(a);
                acc[0] = f32x4_relaxed_madd(a, b0, acc[0]);
                acc[1] = f32x4_relaxed_madd(a, b1, acc[1]);
            }
        }
        acc
    }

    /// C[i0.., j0..] = α·acc + β·C for the part of the tile inside C.
    fn store_tile(
        c: &mut ArrayViewMut2<f32>,
        i0: usize,
        j0: usize,
        acc: &[[v128; 2]; MR],
        alpha: f32,
        beta: f32,
    ) {
        let (m, n) = c.dim();
        let (alpha_v, beta_v) = (f32x4_splat(alpha), f32x4_splat(beta));
        for (r, acc) in acc.iter().enumerate().take(m - i0) {
            let mut row = c.slice_mut(s![i0 + r, j0..n.min(j0 + NR)]);
            match row.as_slice_mut() {
                Some(row) if row.len() == NR => {
                    for (h, &acc) in acc.iter().enumerate() {
                        let out = &mut row[4 * h..4 * h + 4];
                        let scaled = f32x4_mul(alpha_v, acc);
                        let v = if beta == 0.0 {
                            scaled
                        } else {
                            f32x4_add(scaled, f32x4_mul(beta_v, load(out)))
                        };
                        store(out, v);
                    }
                }
                _ => {
                    // Edge tile or strided C: go through a small array.
                    let mut tile = [0.0f32; NR];
                    store(&mut tile[..4], acc[0]);
                    store(&mut tile[4..], acc[1]);
                    for (x, &t) in row.iter_mut().zip(&tile) {
                        *x = if beta == 0.0 {
                            alpha * t
                        } else {
                            alpha * t + beta * *x
                        };
                    }
                }
            }
        }
    }
}
