//! C = α·A·B + β·C, the one matrix product every op goes through.
//!
//! Natively this is the `gemm` crate, whose AVX-512 kernels (picked at run time; AVX2/FMA on
//! CPUs without) beat matrixmultiply's AVX2 ones at the engine's shapes: `benches/gemm.rs`.
//! On wasm32 a small packed GEMM with a 4×8 register-blocked micro-kernel on SIMD128 does the work
//! (matrixmultiply in unoptimised wasm builds). With the `relaxed-simd` feature it multiplies and
//! adds in one `f32x4_relaxed_madd` (an FMA on x86/ARM hosts); without, in an `f32x4_mul` and an
//! `f32x4_add`. A module holding one relaxed-SIMD instruction does not compile in Safari, so the
//! page ships the worker built both ways and starts the one the browser validates.
//! Transposes are just strided views (`w.t()`): both kernels read any layout. Large native
//! products are split into blocks of C that run on the threads (`crate::threads`).

use ndarray::{ArrayBase, Data, DataMut, Ix2};

/// C (m, n) = α·A (m, k)·B (k, n) + β·C; with β = 0, C is overwritten and never read
/// (same contract as `ndarray::linalg::general_mat_mul`). Panics on mismatched shapes.
///
/// Optimised wasm32 builds take the SIMD128 kernel. Unoptimised (debug) wasm builds keep
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
        target_feature = "simd128",
        not(debug_assertions)
    ))]
    wasm::gemm(alpha, a.view(), b.view(), beta, c.view_mut());
    #[cfg(all(
        target_arch = "wasm32",
        not(all(target_feature = "simd128", not(debug_assertions)))
    ))]
    ndarray::linalg::general_mat_mul(alpha, a, b, beta, c);
    #[cfg(not(target_arch = "wasm32"))]
    native::gemm_blocks(alpha, a.view(), b.view(), beta, c.view_mut());
}

/// One call of the native kernel on one thread, never split into blocks: what each block of
/// `gemm` runs. For `benches/gemm.rs`, which times the splits against it.
#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub use native::gemm as gemm_unsplit;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use ndarray::{ArrayView2, ArrayViewMut2, Axis};

    /// A product of at least this many multiply-adds is split into blocks of C for the threads
    /// (`crate::threads`): tiny's smallest linear layer (256·64·64) is, an attention head's
    /// 32×16×32 is not (a rayon hand-off costs a few µs).
    const SPLIT_MACS: usize = 1 << 19;
    /// Blocks of C: COL_BLOCK columns each where C has at least two such, else ROW_BLOCK rows.
    /// Columns first, because gemm computes a row-major C as Cᵀ = Bᵀ·Aᵀ and packs all of its
    /// left operand, our B, in every call: blocks of rows would each pack the whole weight
    /// again (`benches/gemm.rs`, `split/small/output`, 512×1024×256 from W (out, in), one
    /// thread: 6.0 ms in blocks of 64 rows, 4.8 ms in blocks of 128 columns, 4.4 ms whole).
    /// Each block computes its entries exactly as the whole product would, so the split
    /// changes no bit (tested below).
    const COL_BLOCK: usize = 128;
    const ROW_BLOCK: usize = 64;

    /// `gemm`, split by C's shape alone (never by the number of threads, so the bits do not
    /// depend on it) into blocks that run in parallel.
    pub fn gemm_blocks(
        alpha: f32,
        a: ArrayView2<f32>,
        b: ArrayView2<f32>,
        beta: f32,
        mut c: ArrayViewMut2<f32>,
    ) {
        let ((m, k), n) = (a.dim(), b.ncols());
        if m * k * n < SPLIT_MACS || (m < 2 * ROW_BLOCK && n < 2 * COL_BLOCK) {
            gemm(alpha, a, b, beta, c);
        } else if n >= 2 * COL_BLOCK {
            assert_eq!(c.ncols(), n, "gemm: C has the columns of B");
            let blocks: Vec<_> = b
                .axis_chunks_iter(Axis(1), COL_BLOCK)
                .zip(c.axis_chunks_iter_mut(Axis(1), COL_BLOCK))
                .collect();
            crate::threads::for_each(blocks, |(b, c)| gemm(alpha, a, b, beta, c));
        } else {
            assert_eq!(c.nrows(), m, "gemm: C has the rows of A");
            let blocks: Vec<_> = a
                .axis_chunks_iter(Axis(0), ROW_BLOCK)
                .zip(c.axis_chunks_iter_mut(Axis(0), ROW_BLOCK))
                .collect();
            crate::threads::for_each(blocks, |(a, c)| gemm(alpha, a, b, beta, c));
        }
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
        let (c_rs, c_cs) = (c.stride_of(Axis(0)), c.stride_of(Axis(1)));
        // SAFETY: the pointers and element strides describe the three views exactly (ndarray
        // keeps every (i, j) inside its allocation, negative strides included), their shapes
        // agree (checked above), and C, a unique borrow, overlaps neither A nor B.
        // gemm's convention is dst = alpha·dst + beta·lhs·rhs, with dst never read when
        // read_dst is false: our β and α, swapped.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                c.as_mut_ptr(),
                c_cs,
                c_rs,
                beta != 0.0,
                a.as_ptr(),
                a.stride_of(Axis(1)),
                a.stride_of(Axis(0)),
                b.as_ptr(),
                b.stride_of(Axis(1)),
                b.stride_of(Axis(0)),
                beta,
                alpha,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    }
}

/// The wasm32 SIMD kernel itself, in every build, so the browser tests (tests/matmul.rs) can
/// compare it with a naive product, with and without relaxed SIMD.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub fn gemm_simd(
    alpha: f32,
    a: ndarray::ArrayView2<f32>,
    b: ndarray::ArrayView2<f32>,
    beta: f32,
    c: ndarray::ArrayViewMut2<f32>,
) {
    wasm::gemm(alpha, a, b, beta, c);
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm {
    //! Goto-style blocking: for each depth block of KC, pack B's rows into NR-column panels and
    //! each MC-row block of A into MR-row panels, then run the micro-kernel over every
    //! (MR × NR) tile. Everything past the shape check works on raw pointers and strides: the
    //! attention heads make hundreds of 32×16×32 products per step, where ndarray's per-call
    //! slicing cost more than the arithmetic.
    use core::arch::wasm32::{
        f32x4_add, f32x4_mul, f32x4_splat, i32x4_shuffle, v128, v128_load, v128_load32_splat,
        v128_store,
    };
    use ndarray::{ArrayView2, ArrayViewMut2, Axis};
    use std::cell::RefCell;

    /// Micro-tile: MR rows × NR columns of C live in 8 f32x4 accumulators (with the two B
    /// vectors and the broadcast A values, 14 of the 15 xmm registers V8 allocates on x86-64;
    /// a 6×8 tile spills and runs at half the speed).
    const MR: usize = 4;
    const NR: usize = 8;
    /// Depth block: an A panel (MR·KC floats, 8 KiB) and a B panel (NR·KC, 16 KiB) stay in L1.
    const KC: usize = 512;
    /// Row block: the packed A block (MC·KC floats, 128 KiB) stays in L2 while every B panel
    /// passes over it.
    const MC: usize = 64;

    thread_local! {
        /// Packed A and B blocks, reused across calls (no allocation per product).
        static PACKED: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    }

    /// A matrix as a base pointer and element strides (ndarray views may have any strides,
    /// negative ones included).
    #[derive(Clone, Copy)]
    struct Strided {
        ptr: *const f32,
        row_stride: isize,
        col_stride: isize,
    }

    impl Strided {
        fn of(view: &ArrayView2<f32>) -> Self {
            Strided {
                ptr: view.as_ptr(),
                row_stride: view.stride_of(Axis(0)),
                col_stride: view.stride_of(Axis(1)),
            }
        }

        /// # Safety
        /// (i, j) must lie inside the view this was made from.
        #[inline(always)]
        unsafe fn at(self, i: usize, j: usize) -> *const f32 {
            self.ptr
                .offset(i as isize * self.row_stride + j as isize * self.col_stride)
        }
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
        let (a, b) = (Strided::of(&a), Strided::of(&b));
        let (c_rows, c_cols) = (c.stride_of(Axis(0)), c.stride_of(Axis(1)));
        let c_ptr = c.as_mut_ptr();
        PACKED.with(|packed| {
            let (pa, pb) = &mut *packed.borrow_mut();
            for p0 in (0..k).step_by(KC) {
                let kc = KC.min(k - p0);
                // SAFETY: rows p0..p0+kc < k and columns < n lie inside B.
                unsafe { pack_b(pb, b, n, p0, kc) };
                // Later depth blocks add onto what the first one wrote.
                let beta = if p0 == 0 { beta } else { 1.0 };
                for i_block in (0..m).step_by(MC) {
                    let mc = MC.min(m - i_block);
                    // SAFETY: rows i_block..i_block+mc < m and depths p0..p0+kc < k lie inside A.
                    unsafe { pack_a(pa, a, i_block, mc, p0, kc) };
                    for j0 in (0..n).step_by(NR) {
                        let b_panel = &pb[j0 * kc..(j0 + NR) * kc];
                        for i0 in (0..mc).step_by(MR) {
                            let acc = micro_kernel(&pa[i0 * kc..(i0 + MR) * kc], b_panel);
                            let (i, rows, cols) = (i_block + i0, MR.min(mc - i0), NR.min(n - j0));
                            // SAFETY: the tile's rows i..i+rows ≤ m and columns j0..j0+cols ≤ n
                            // lie inside C, which nothing else borrows.
                            unsafe {
                                let tile = c_ptr.offset(i as isize * c_rows + j0 as isize * c_cols);
                                store_tile(tile, (c_rows, c_cols), (rows, cols), &acc, alpha, beta);
                            }
                        }
                    }
                }
            }
        });
    }

    /// Rows i0..i0+mc, depths p0..p0+kc of A → panels of MR rows, each stored depth by depth:
    /// panel[p·MR + r] = A[i0 + r, p0 + p]. An edge panel's missing rows keep whatever the buffer
    /// held: the kernel computes them like any other row and `store_tile` discards them.
    ///
    /// # Safety
    /// That block must lie inside the matrix `a` describes.
    unsafe fn pack_a(buf: &mut Vec<f32>, a: Strided, i0: usize, mc: usize, p0: usize, kc: usize) {
        let panels = mc.div_ceil(MR);
        for (panel_index, panel) in panels_of(buf, panels, MR * kc).enumerate() {
            let first = i0 + panel_index * MR;
            let rows = MR.min(i0 + mc - first);
            let row = |r: usize| a.at(first + r, p0);
            if a.row_stride == 1 && rows == MR {
                // A column-major (doutᵀ): the MR values at one depth are adjacent.
                for (p, out) in panel.chunks_exact_mut(MR).enumerate() {
                    store(out, v128_load(a.at(first, p0 + p).cast()));
                }
            } else if a.col_stride == 1 && rows == MR {
                // A row-major: 4×4 blocks, transposed in registers.
                transpose_rows_into([row(0), row(1), row(2), row(3)], kc, panel, MR, 0);
            } else {
                for r in 0..rows {
                    for (p, out) in panel.chunks_exact_mut(MR).enumerate() {
                        out[r] = *row(r).offset(p as isize * a.col_stride);
                    }
                }
            }
        }
    }

    /// Depths p0..p0+kc, all n columns of B → panels of NR columns, each stored depth by depth:
    /// panel[p·NR + j] = B[p0 + p, j0 + j]. An edge panel's missing columns are left as they were
    /// (see `pack_a`).
    ///
    /// # Safety
    /// Those rows of `b` (n columns wide) must lie inside the matrix it describes.
    unsafe fn pack_b(buf: &mut Vec<f32>, b: Strided, n: usize, p0: usize, kc: usize) {
        let panels = n.div_ceil(NR);
        for (panel_index, panel) in panels_of(buf, panels, NR * kc).enumerate() {
            let first = panel_index * NR;
            let cols = NR.min(n - first);
            let column = |j: usize| b.at(p0, first + j);
            if b.col_stride == 1 && cols == NR {
                // B row-major: NR adjacent values per depth, two vector copies.
                for (p, out) in panel.chunks_exact_mut(NR).enumerate() {
                    let row = b.at(p0 + p, first);
                    store(&mut out[..4], v128_load(row.cast()));
                    store(&mut out[4..], v128_load(row.add(4).cast()));
                }
            } else if b.row_stride == 1 && cols == NR {
                // B = Wᵀ with W row-major: each column of B is a row of W; transpose 4×4 blocks.
                transpose_rows_into(
                    [column(0), column(1), column(2), column(3)],
                    kc,
                    panel,
                    NR,
                    0,
                );
                transpose_rows_into(
                    [column(4), column(5), column(6), column(7)],
                    kc,
                    panel,
                    NR,
                    4,
                );
            } else {
                for j in 0..cols {
                    for (p, out) in panel.chunks_exact_mut(NR).enumerate() {
                        out[j] = *column(j).offset(p as isize * b.row_stride);
                    }
                }
            }
        }
    }

    /// `buf` sized for `count` panels of `len` floats, as mutable chunks. It only grows (and
    /// so only zero-fills) when a product needs more than any before it.
    fn panels_of(
        buf: &mut Vec<f32>,
        count: usize,
        len: usize,
    ) -> std::slice::ChunksExactMut<'_, f32> {
        if buf.len() < count * len {
            buf.resize(count * len, 0.0);
        }
        buf[..count * len].chunks_exact_mut(len)
    }

    /// For 4 contiguous source rows of `depth` floats: out[p·width + offset + r] = rows[r][p],
    /// a 4×4 in-register transpose per 4 depths.
    ///
    /// # Safety
    /// Each row pointer must address `depth` readable floats.
    #[inline(always)]
    unsafe fn transpose_rows_into(
        rows: [*const f32; 4],
        depth: usize,
        out: &mut [f32],
        width: usize,
        offset: usize,
    ) {
        let blocked = depth / 4 * 4;
        for p in (0..blocked).step_by(4) {
            let [r0, r1, r2, r3] = rows.map(|row| v128_load(row.add(p).cast()));
            // (a0 b0 a1 b1), (c0 d0 c1 d1), (a2 b2 a3 b3), (c2 d2 c3 d3)
            let ab_lo = i32x4_shuffle::<0, 4, 1, 5>(r0, r1);
            let cd_lo = i32x4_shuffle::<0, 4, 1, 5>(r2, r3);
            let ab_hi = i32x4_shuffle::<2, 6, 3, 7>(r0, r1);
            let cd_hi = i32x4_shuffle::<2, 6, 3, 7>(r2, r3);
            let columns = [
                i32x4_shuffle::<0, 1, 4, 5>(ab_lo, cd_lo),
                i32x4_shuffle::<2, 3, 6, 7>(ab_lo, cd_lo),
                i32x4_shuffle::<0, 1, 4, 5>(ab_hi, cd_hi),
                i32x4_shuffle::<2, 3, 6, 7>(ab_hi, cd_hi),
            ];
            for (q, column) in columns.into_iter().enumerate() {
                let at = (p + q) * width + offset;
                store(&mut out[at..at + 4], column);
            }
        }
        for p in blocked..depth {
            for (r, row) in rows.iter().enumerate() {
                out[p * width + offset + r] = *row.add(p);
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

    /// a·b + acc: one fused multiply-add with the `relaxed-simd` feature (V8 and Firefox on x86
    /// and ARM emit an FMA), else a rounded product, then a sum.
    #[cfg(feature = "relaxed-simd")]
    #[inline]
    #[target_feature(enable = "relaxed-simd")]
    fn madd(a: v128, b: v128, acc: v128) -> v128 {
        core::arch::wasm32::f32x4_relaxed_madd(a, b, acc)
    }
    #[cfg(not(feature = "relaxed-simd"))]
    #[inline(always)]
    fn madd(a: v128, b: v128, acc: v128) -> v128 {
        f32x4_add(f32x4_mul(a, b), acc)
    }

    /// acc[r][h] = Σ_p A[i0+r, p] · B[p, j0+4h..j0+4h+4], one multiply-add per (row, half) and
    /// depth step: 8 multiply-adds per 2 B loads and 4 A broadcasts.
    /// (`#[inline(always)]` cannot go with a target feature: the relaxed build calls it once a
    /// tile.)
    #[cfg_attr(not(feature = "relaxed-simd"), inline(always))]
    #[cfg_attr(
        feature = "relaxed-simd",
        inline,
        target_feature(enable = "relaxed-simd")
    )]
    fn micro_kernel(a_panel: &[f32], b_panel: &[f32]) -> [[v128; 2]; MR] {
        let mut acc = [[f32x4_splat(0.0); 2]; MR];
        for (a, b) in a_panel.chunks_exact(MR).zip(b_panel.chunks_exact(NR)) {
            let (b0, b1) = (load(&b[..4]), load(&b[4..]));
            for (acc, a) in acc.iter_mut().zip(a) {
                // SAFETY: `a` is a reference to one readable f32.
                let a = unsafe { v128_load32_splat((a as *const f32).cast()) };
                acc[0] = madd(a, b0, acc[0]);
                acc[1] = madd(a, b1, acc[1]);
            }
        }
        acc
    }

    /// C tile = α·acc + β·C tile, for its first `rows` × `cols` entries (edge tiles are smaller).
    ///
    /// # Safety
    /// `tile` with strides `(row_stride, col_stride)` must address rows × cols writable floats.
    #[inline(always)]
    unsafe fn store_tile(
        tile: *mut f32,
        (row_stride, col_stride): (isize, isize),
        (rows, cols): (usize, usize),
        acc: &[[v128; 2]; MR],
        alpha: f32,
        beta: f32,
    ) {
        let (alpha_v, beta_v) = (f32x4_splat(alpha), f32x4_splat(beta));
        for (r, acc) in acc.iter().enumerate().take(rows) {
            let row = tile.offset(r as isize * row_stride);
            if col_stride == 1 && cols == NR {
                for (h, &acc) in acc.iter().enumerate() {
                    let out = row.add(4 * h).cast();
                    let scaled = f32x4_mul(alpha_v, acc);
                    let v = if beta == 0.0 {
                        scaled
                    } else {
                        f32x4_add(scaled, f32x4_mul(beta_v, v128_load(out)))
                    };
                    v128_store(out, v);
                }
            } else {
                let mut values = [0.0f32; NR];
                store(&mut values[..4], acc[0]);
                store(&mut values[4..], acc[1]);
                for (j, &t) in values.iter().enumerate().take(cols) {
                    let x = row.offset(j as isize * col_stride);
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

#[cfg(test)]
mod tests {
    use super::gemm;
    use crate::ops::gradcheck::random;
    use crate::rng::Rng;
    use ndarray::{s, Array2, ArrayView2};

    /// α·A·B + β·C in f64, summed naively, and the bound on f32 rounding error of each entry:
    /// a few ulps of Σ|α·a·b| + |β·c|.
    fn naive(
        alpha: f32,
        a: ArrayView2<f32>,
        b: ArrayView2<f32>,
        beta: f32,
        c: &Array2<f32>,
    ) -> Array2<(f64, f64)> {
        Array2::from_shape_fn(c.dim(), |(i, j)| {
            let (mut dot, mut size) = (0.0, 0.0);
            for p in 0..a.ncols() {
                let x = f64::from(a[[i, p]]) * f64::from(b[[p, j]]);
                (dot, size) = (dot + x, size + x.abs());
            }
            let c = if beta == 0.0 {
                0.0
            } else {
                f64::from(beta) * f64::from(c[[i, j]])
            };
            let alpha = f64::from(alpha);
            (alpha * dot + c, 1e-6 * (alpha.abs() * size + c.abs()))
        })
    }

    fn assert_close(got: &Array2<f32>, want: &Array2<(f64, f64)>) {
        for (g, (w, tol)) in got.iter().zip(want) {
            assert!((f64::from(*g) - w).abs() <= *tol, "{g} vs {w}");
        }
    }

    #[test]
    fn matches_a_naive_product_in_every_layout() {
        let mut rng = Rng::new(3);
        for (m, k, n) in [
            (1, 1, 1),
            (5, 7, 3),
            (33, 17, 65),
            (40, 64, 200),
            (256, 64, 64),
            (3, 300, 2),
            // split into blocks of rows, the last one short; into blocks of columns
            (300, 40, 70),
            (40, 64, 600),
        ] {
            let (a, at) = (random(&mut rng, (m, k)), random(&mut rng, (k, m)));
            let (b, bt) = (random(&mut rng, (k, n)), random(&mut rng, (n, k)));
            let c0 = random(&mut rng, (m, n));
            for (alpha, beta) in [(1.0, 0.0), (1.0, 1.0), (0.5, -2.0)] {
                for (a, b) in [
                    (a.view(), b.view()),
                    (at.t(), b.view()),
                    (a.view(), bt.t()),
                    (at.t(), bt.t()),
                ] {
                    let mut c = c0.clone();
                    gemm(alpha, &a, &b, beta, &mut c);
                    assert_close(&c, &naive(alpha, a, b, beta, &c0));
                }
            }
        }
    }

    /// The split for the threads (by columns, by rows) must not move a bit: each entry is the
    /// same dot product, in the same order, as in one whole product.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn blocks_for_the_threads_give_the_bits_of_one_whole_product() {
        let mut rng = Rng::new(5);
        // columns of C (n ≥ 256), rows (m ≥ 128, n < 256), few rows and many columns
        for (m, k, n) in [(512, 256, 1024), (512, 256, 64), (80, 256, 2000)] {
            let a = random(&mut rng, (m, k));
            let (b, bt) = (random(&mut rng, (k, n)), random(&mut rng, (n, k)));
            for b in [b.view(), bt.t()] {
                let (mut split, mut whole) = (random(&mut rng, (m, n)), Array2::zeros((m, n)));
                whole.assign(&split);
                gemm(0.5, &a, &b, 1.0, &mut split);
                super::native::gemm(0.5, a.view(), b, 1.0, whole.view_mut());
                assert!(split == whole, "{m}×{k}×{n}: split ≠ whole");
            }
        }
    }

    #[test]
    fn reads_negative_strides_and_writes_into_a_strided_view() {
        let mut rng = Rng::new(4);
        let (a, b) = (random(&mut rng, (9, 6)), random(&mut rng, (6, 11)));
        let (ra, rb) = (a.slice(s![..;-1, ..]), b.slice(s![.., ..;-2]));
        let mut big = random(&mut rng, (9, 20));
        let c0 = big.slice(s![.., 3..9]).to_owned();
        gemm(1.0, &ra, &rb, 1.0, &mut big.slice_mut(s![.., 3..9]));
        assert_close(
            &big.slice(s![.., 3..9]).to_owned(),
            &naive(1.0, ra, rb, 1.0, &c0),
        );
    }

    #[test]
    fn beta_zero_overwrites_nan_and_empty_depth_scales_c() {
        let a = Array2::<f32>::ones((2, 3));
        let mut c = Array2::from_elem((2, 2), f32::NAN);
        gemm(1.0, &a, &a.t(), 0.0, &mut c);
        assert_eq!(c, Array2::from_elem((2, 2), 3.0));
        let empty = Array2::<f32>::zeros((2, 0));
        gemm(1.0, &empty, &empty.t(), 0.5, &mut c);
        assert_eq!(c, Array2::from_elem((2, 2), 1.5));
        gemm(1.0, &empty, &empty.t(), 0.0, &mut c);
        assert_eq!(c, Array2::<f32>::zeros((2, 2)));
    }
}
