//! Tests of every attention kernel: finite-difference gradients for each variant (window,
//! GQA, tiled, linear, dropout, ALiBi), tiled = full for every block size, the window's band,
//! G = H bit-identical to the pre-variant kernel, linear attention's causality, ALiBi's slopes
//! and bias.

use super::*;
use crate::batch::MaskMode;
use crate::ops::dropout::Noise;
use crate::ops::full_attention::{masked_softmax_row, FullCache};
use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project};
use crate::ops::matmul::gemm;
use crate::rng::Rng;
use ndarray::{s, Array2, Array3};

fn random3(rng: &mut Rng, shape: (usize, usize, usize)) -> Array3<f32> {
    Array3::from_shape_simple_fn(shape, || rng.normal(0.0, 1.0))
}

/// Two sequences of T, the second with its last key padded; H heads and G groups of width D.
struct Case {
    q: Array3<f32>,
    k: Array3<f32>,
    v: Array3<f32>,
    key_mask: Array2<u8>,
}

fn case(seed: u64, t: usize, h: usize, g: usize, d: usize) -> Case {
    let mut rng = Rng::new(seed);
    let mut key_mask = Array2::ones((2, t));
    key_mask[[1, t - 1]] = 0;
    Case {
        q: random3(&mut rng, (2, t, h * d)),
        k: random3(&mut rng, (2, t, g * d)),
        v: random3(&mut rng, (2, t, g * d)),
        key_mask,
    }
}

fn opts(h: usize, g: usize, d: usize, mask: MaskMode) -> AttentionOptions {
    let heads = Heads::new(h, g).unwrap();
    AttentionOptions::softmax(heads, mask, 1.0 / (d as f32).sqrt(), 0.0)
}

/// `o` with softmax attention over a sliding window (full kernel).
fn windowed(o: AttentionOptions, window: Option<usize>) -> AttentionOptions {
    let kernel = AttentionKernel::Full;
    let attention = Attention::Softmax(Softmax { kernel, window });
    AttentionOptions { attention, ..o }
}

/// `o` with its softmax attention run by `kernel` (keeping `o`'s window).
fn with_kernel(o: AttentionOptions, kernel: AttentionKernel) -> AttentionOptions {
    let window = o.attention.window();
    let attention = Attention::Softmax(Softmax { kernel, window });
    AttentionOptions { attention, ..o }
}

/// `o` with ALiBi positions.
fn alibi(o: AttentionOptions) -> AttentionOptions {
    AttentionOptions {
        alibi: Some(Alibi::default()),
        ..o
    }
}

fn linear(o: AttentionOptions) -> AttentionOptions {
    AttentionOptions {
        attention: Attention::Linear,
        ..o
    }
}

fn run(
    c: &Case,
    q: &Array3<f32>,
    k: &Array3<f32>,
    v: &Array3<f32>,
    o: &AttentionOptions,
) -> (Array3<f32>, AttentionCache) {
    o.validate().unwrap();
    // Reseeding per evaluation fixes the dropout mask, so the function is deterministic.
    forward(
        Qkv {
            q: q.view(),
            k: k.view(),
            v: v.view(),
            key_mask: c.key_mask.view(),
        },
        o,
        &mut Noise::new(15, 0, 2),
        None,
        Default::default(),
    )
}

/// (output, dq, dk, dv) for the loss Σ r ⊙ output.
fn grads(c: &Case, o: &AttentionOptions, r: &Array3<f32>) -> [Array3<f32>; 4] {
    let (out, cache) = run(c, &c.q, &c.k, &c.v, o);
    let (mut dq, mut dk, mut dv) = (
        Array3::zeros(c.q.dim()),
        Array3::zeros(c.k.dim()),
        Array3::zeros(c.v.dim()),
    );
    let input = Qkv {
        q: c.q.view(),
        k: c.k.view(),
        v: c.v.view(),
        key_mask: c.key_mask.view(),
    };
    let grads = QkvGrads {
        d_q: dq.view_mut(),
        d_k: dk.view_mut(),
        d_v: dv.view_mut(),
    };
    backward(grads, r.view(), input, out.view(), &cache, o);
    [out, dq, dk, dv]
}

fn check_gradients(o: AttentionOptions, t: usize, d: usize) {
    let (h, g) = (o.heads.query(), o.heads.kv_groups());
    let c = case(13, t, h, g, d);
    let r = random3(&mut Rng::new(14), (2, t, h * d));
    let [_, dq, dk, dv] = grads(&c, &o, &r);
    let loss =
        |q: &Array3<f32>, k: &Array3<f32>, v: &Array3<f32>| project(&run(&c, q, k, v, &o).0, &r);
    assert_grads_match("d_q", &dq, &numeric_grad(&c.q, |q| loss(q, &c.k, &c.v)));
    assert_grads_match("d_k", &dk, &numeric_grad(&c.k, |k| loss(&c.q, k, &c.v)));
    assert_grads_match("d_v", &dv, &numeric_grad(&c.v, |v| loss(&c.q, &c.k, v)));
    // A padded key receives no gradient (except with no mask at all): nothing attended to it.
    if o.mask != MaskMode::None {
        assert!(dk
            .slice(s![1, t - 1, ..])
            .iter()
            .chain(dv.slice(s![1, t - 1, ..]).iter())
            .all(|&x| x == 0.0));
    }
}

#[test]
fn gradients_match_finite_differences_with_padding_mask() {
    check_gradients(opts(2, 2, 3, MaskMode::Padding), 4, 3);
}

#[test]
fn gradients_match_finite_differences_with_causal_mask() {
    check_gradients(opts(2, 2, 3, MaskMode::Causal), 4, 3);
}

#[test]
fn gradients_match_finite_differences_with_attention_dropout() {
    check_gradients(
        AttentionOptions {
            dropout: 0.3,
            ..opts(2, 2, 3, MaskMode::Padding)
        },
        4,
        3,
    );
}

#[test]
fn gradients_match_finite_differences_with_grouped_and_multi_query_heads() {
    for (g, mask) in [
        (2, MaskMode::Padding),
        (1, MaskMode::Causal),
        (1, MaskMode::None),
    ] {
        check_gradients(opts(4, g, 2, mask), 4, 2);
    }
}

#[test]
fn gradients_match_finite_differences_with_a_window() {
    for mask in [MaskMode::Padding, MaskMode::Causal] {
        check_gradients(windowed(opts(2, 2, 3, mask), Some(2)), 5, 3);
    }
}

#[test]
fn tiled_gradients_match_finite_differences() {
    let tiled = AttentionKernel::Tiled { block: 2 };
    for o in [
        opts(2, 2, 3, MaskMode::Padding),
        opts(2, 1, 3, MaskMode::Causal),
        windowed(opts(2, 2, 3, MaskMode::Padding), Some(2)),
        AttentionOptions {
            dropout: 0.3,
            ..opts(2, 2, 3, MaskMode::Causal)
        },
    ] {
        check_gradients(with_kernel(o, tiled), 5, 3);
    }
}

/// The bias is a constant, so dS reaches Q and K as before; the check proves both kernels add
/// it where forward and backward recompute the scores (H = 3, not a power of two, and H = 4).
#[test]
fn alibi_gradients_match_finite_differences_full_and_tiled() {
    let tiled = AttentionKernel::Tiled { block: 2 };
    for o in [
        alibi(opts(3, 3, 2, MaskMode::Padding)),
        alibi(opts(4, 2, 2, MaskMode::Causal)),
        alibi(windowed(opts(3, 3, 2, MaskMode::Causal), Some(3))),
        alibi(opts(2, 2, 2, MaskMode::None)),
    ] {
        check_gradients(o, 5, 2);
        check_gradients(with_kernel(o, tiled), 5, 2);
    }
}

#[test]
fn alibi_slopes_are_blooms() {
    // Powers of two: 2^(−8h/H), h = 1…H.
    let slopes = |n: usize| (0..n).map(|h| alibi_slope(h, n)).collect::<Vec<_>>();
    assert_eq!(slopes(4), [0.25, 0.0625, 0.015625, 0.00390625]);
    assert_eq!(slopes(8)[..3], [0.5, 0.25, 0.125]);
    assert_eq!(slopes(1), [2f32.powi(-8)]);
    // H = 6: the 4-head sequence, then the odd powers of the 8-head one (2^−1, 2^−3).
    assert_eq!(slopes(6), [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]);
    // H = 12: 8 heads of 2^(−h), then 2^(−0.5), 2^(−1.5), 2^(−2.5), 2^(−3.5).
    let twelve = slopes(12);
    assert_eq!(twelve[7], 2f32.powi(-8));
    for (r, &m) in twelve[8..].iter().enumerate() {
        assert!((m - 2f32.powf(-0.5 - r as f32)).abs() < 1e-7, "{r}: {m}");
    }
}

/// With ALiBi, every kernel's weights are softmax(scaled + A + M) with A = −m_h·|i − j|, and
/// the trace carries A and adds it into `masked`, not into `scaled`.
#[test]
fn alibi_biases_the_scores_and_the_trace_shows_it() {
    let c = case(5, 6, 2, 2, 3);
    for mask in [MaskMode::Padding, MaskMode::Causal] {
        let plain = opts(2, 2, 3, mask);
        let full = alibi(plain);
        let tiled = with_kernel(full, AttentionKernel::Tiled { block: 4 });
        let unbiased = traced(&c, &plain);
        for heads in [traced(&c, &full), traced(&c, &tiled)] {
            for (h, (head, plain_head)) in heads.iter().zip(&unbiased).enumerate() {
                let m = alibi_slope(h, 2);
                let bias = head
                    .alibi_bias
                    .as_ref()
                    .expect("an ALiBi head traces its bias");
                assert_eq!((bias.rows, bias.cols), (6, 6));
                assert_eq!(head.scaled, plain_head.scaled, "scaled stays QKᵀ/√d_k");
                for i in 0..6 {
                    let allowed: Vec<bool> = (0..6)
                        .map(|j| full.allows(c.key_mask.row(0).as_slice().unwrap(), i, j))
                        .collect();
                    let mut row: Vec<f32> = head.scaled.row(i).to_vec();
                    for (j, x) in row.iter_mut().enumerate() {
                        let a = -m * i.abs_diff(j) as f32;
                        assert_eq!(bias.get(i, j), a);
                        if allowed[j] {
                            assert_eq!(head.masked.get(i, j), head.scaled.get(i, j) + a);
                        }
                        *x += a;
                    }
                    masked_softmax_row(&mut row, &allowed, 1.0, None);
                    for (j, &w) in row.iter().enumerate() {
                        assert!((w - head.weights.get(i, j)).abs() < 1e-6);
                    }
                }
            }
        }
        // Without ALiBi nothing is traced, and the bias changes the weights.
        assert!(unbiased[0].alibi_bias.is_none());
        let diff = unbiased[0]
            .weights
            .max_abs_difference(&traced(&c, &full)[0].weights)
            .unwrap();
        assert!(diff > 1e-3, "{diff}");
    }
}

/// One query row at offset p over p + 1 keys (a KV-cache step) equals row p of the whole
/// causal sequence: the bias uses the query's true position.
#[test]
fn alibi_query_offset_gives_the_rows_true_distances() {
    let (t, p) = (6, 4);
    let c = case(9, t, 2, 1, 3);
    let one_seq =
        |a: &Array3<f32>, rows: std::ops::Range<usize>| a.slice(s![0..1, rows, ..]).to_owned();
    let whole = alibi(opts(2, 1, 3, MaskMode::Causal));
    let all = run(&c, &c.q, &c.k, &c.v, &whole).0;
    let (q, k, v) = (
        one_seq(&c.q, p..p + 1),
        one_seq(&c.k, 0..p + 1),
        one_seq(&c.v, 0..p + 1),
    );
    let key_mask = Array2::ones((1, p + 1));
    let step = |offset: usize| {
        let o = AttentionOptions {
            alibi: Some(Alibi {
                query_offset: offset,
            }),
            ..opts(2, 1, 3, MaskMode::Padding)
        };
        let input = Qkv {
            q: q.view(),
            k: k.view(),
            v: v.view(),
            key_mask: key_mask.view(),
        };
        forward(
            input,
            &o,
            &mut Noise::new(0, 0, 1),
            None,
            Default::default(),
        )
        .0
    };
    let want = all.slice(s![0, p, ..]);
    let got = step(p);
    for (a, b) in got.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
    // At offset 0 the row would be query 0: farther from every key, other weights.
    let wrong = step(0);
    assert!(wrong.iter().zip(want).any(|(a, b)| (a - b).abs() > 1e-3));
}

#[test]
fn linear_attention_gradients_match_finite_differences() {
    for (g, mask) in [
        (2, MaskMode::Padding),
        (2, MaskMode::Causal),
        (1, MaskMode::Causal),
        (1, MaskMode::None),
    ] {
        check_gradients(linear(opts(2, g, 3, mask)), 5, 3);
    }
}

fn assert_close(name: &str, a: &Array3<f32>, b: &Array3<f32>, rtol: f32) {
    let scale = b.iter().fold(0f32, |m, x| m.max(x.abs()));
    for (x, y) in a.iter().zip(b) {
        assert!(
            (x - y).abs() <= rtol * scale.max(1e-30),
            "{name}: {x} vs {y} (scale {scale})"
        );
    }
}

#[test]
fn tiled_equals_full_for_every_block_size() {
    let t = 7;
    let r = random3(&mut Rng::new(3), (2, t, 4 * 4));
    for (g, mask, window) in [
        (4, MaskMode::Padding, None),
        (4, MaskMode::Causal, None),
        (4, MaskMode::None, None),
        (2, MaskMode::Padding, Some(3)),
        (1, MaskMode::Causal, Some(2)),
    ] {
        let c = case(21, t, 4, g, 4);
        let full = windowed(opts(4, g, 4, mask), window);
        let want = grads(&c, &full, &r);
        for block in 1..=t + 1 {
            let tiled = with_kernel(full, AttentionKernel::Tiled { block });
            let got = grads(&c, &tiled, &r);
            for (name, (a, b)) in ["output", "d_q", "d_k", "d_v"]
                .iter()
                .zip(got.iter().zip(&want))
            {
                assert_close(
                    &format!("{name} {mask:?} g{g} w{window:?} block {block}"),
                    a,
                    b,
                    1e-5,
                );
            }
        }
    }
}

#[test]
fn the_window_mask_has_exactly_the_band_shape() {
    let key_mask = [1u8, 1, 1, 1, 1, 1, 0];
    for (mask, w) in [
        (MaskMode::Padding, 3),
        (MaskMode::None, 1),
        (MaskMode::Causal, 3),
        (MaskMode::Causal, 1),
    ] {
        let o = windowed(opts(1, 1, 1, mask), Some(w));
        for i in 0..7 {
            for j in 0..7 {
                let band = match mask {
                    MaskMode::Causal => j <= i && i - j < w,
                    _ => i.abs_diff(j) < w,
                };
                let key = mask == MaskMode::None || key_mask[j] != 0;
                assert_eq!(
                    o.allows(&key_mask, i, j),
                    band && key,
                    "{mask:?} w{w} i{i} j{j}"
                );
            }
        }
        // Causal with window W: exactly W keys (where all are real), itself included.
        if mask == MaskMode::Causal {
            assert_eq!((0..7).filter(|&j| o.allows(&key_mask, 5, j)).count(), w);
        }
    }
    // The trace's mask shows the band.
    let c = case(4, 6, 1, 1, 2);
    let o = windowed(opts(1, 1, 2, MaskMode::Padding), Some(2));
    let heads = traced(&c, &o);
    for i in 0..6 {
        for j in 0..6 {
            assert_eq!(
                heads[0].mask.get(i, j) == 0.0,
                i.abs_diff(j) < 2,
                "i{i} j{j}"
            );
        }
    }
}

/// The kernel as it was before the variants (multi-head, full, no window), verbatim in its
/// arithmetic: G = H must reproduce it bit for bit.
fn pre_variant_forward(
    q: &Array3<f32>,
    k: &Array3<f32>,
    v: &Array3<f32>,
    key_mask: &Array2<u8>,
    mask: MaskMode,
    h_count: usize,
    scale: f32,
) -> Array3<f32> {
    let (b_size, tq, width) = q.dim();
    let tk = k.dim().1;
    let d = width / h_count;
    let mut context = Array3::zeros((b_size, tq, width));
    let mut w = Array2::zeros((tq, tk));
    for b in 0..b_size {
        let keys = key_mask.row(b).to_vec();
        for h in 0..h_count {
            let hs = h * d..(h + 1) * d;
            gemm(
                1.0,
                &q.slice(s![b, .., hs.clone()]),
                &k.slice(s![b, .., hs.clone()]).t(),
                0.0,
                &mut w,
            );
            for i in 0..tq {
                let allowed: Vec<bool> = (0..tk).map(|j| mask.allows(&keys, i, j)).collect();
                masked_softmax_row(w.row_mut(i).as_slice_mut().unwrap(), &allowed, scale, None);
            }
            gemm(
                1.0,
                &w,
                &v.slice(s![b, .., hs.clone()]),
                0.0,
                &mut context.slice_mut(s![b, .., hs]),
            );
        }
    }
    context
}

#[test]
fn all_groups_equal_to_heads_is_bit_identical_to_the_pre_variant_kernel() {
    let c = case(8, 6, 3, 3, 4);
    for mask in [MaskMode::Padding, MaskMode::Causal] {
        let o = opts(3, 3, 4, mask);
        let got = run(&c, &c.q, &c.k, &c.v, &o).0;
        assert_eq!(
            got,
            pre_variant_forward(&c.q, &c.k, &c.v, &c.key_mask, mask, 3, o.scale)
        );
    }
}

#[test]
fn grouped_heads_equal_multi_head_with_repeated_keys_and_values() {
    // repeat_kv: group g serves heads g·(H/G) .. (g+1)·(H/G).
    let (h, g, d) = (4, 2, 3);
    let c = case(9, 5, h, g, d);
    let repeat = |x: &Array3<f32>| {
        let mut out = Array3::zeros((2, 5, h * d));
        for head in 0..h {
            let grp = head / (h / g);
            out.slice_mut(s![.., .., head * d..(head + 1) * d])
                .assign(&x.slice(s![.., .., grp * d..(grp + 1) * d]));
        }
        out
    };
    let o = opts(h, g, d, MaskMode::Padding);
    let grouped = run(&c, &c.q, &c.k, &c.v, &o).0;
    let repeated = run(
        &c,
        &c.q,
        &repeat(&c.k),
        &repeat(&c.v),
        &opts(h, h, d, MaskMode::Padding),
    )
    .0;
    assert_eq!(grouped, repeated);
}

#[test]
fn linear_causal_output_ignores_later_tokens() {
    let c = case(10, 6, 2, 2, 3);
    let o = linear(opts(2, 2, 3, MaskMode::Causal));
    let before = run(&c, &c.q, &c.k, &c.v, &o).0;
    let (mut q, mut k, mut v) = (c.q.clone(), c.k.clone(), c.v.clone());
    for x in [&mut q, &mut k, &mut v] {
        x.slice_mut(s![.., 4.., ..])
            .mapv_inplace(|a| a * -3.0 + 1.0);
    }
    let after = run(&c, &q, &k, &v, &o).0;
    assert_eq!(before.slice(s![.., ..4, ..]), after.slice(s![.., ..4, ..]));
    assert_ne!(before.slice(s![.., 4.., ..]), after.slice(s![.., 4.., ..]));
}

#[test]
fn linear_attention_equals_its_implied_weights_times_v() {
    let c = case(11, 5, 2, 1, 3);
    for mask in [MaskMode::Padding, MaskMode::Causal] {
        let o = linear(opts(2, 1, 3, mask));
        let mut heads = Vec::new();
        let (out, _) = forward(
            Qkv {
                q: c.q.view(),
                k: c.k.view(),
                v: c.v.view(),
                key_mask: c.key_mask.view(),
            },
            &o,
            &mut Noise::new(0, 0, 2),
            Some(&mut heads),
            Default::default(),
        );
        for (h, head) in heads.iter().enumerate() {
            assert!(head.scores.is_empty() && head.scaled.is_empty() && head.masked.is_empty());
            for i in 0..5 {
                assert!((head.weights.row(i).iter().sum::<f32>() - 1.0).abs() < 1e-5);
                for col in 0..3 {
                    let want: f32 = (0..5)
                        .map(|j| head.weights.get(i, j) * head.v.get(j, col))
                        .sum();
                    assert!((out[[0, i, h * 3 + col]] - want).abs() < 1e-5);
                }
            }
        }
    }
}

/// Every head's trace of one forward call on `c`.
fn traced(c: &Case, o: &AttentionOptions) -> Vec<HeadTrace> {
    let mut heads = Vec::new();
    forward(
        Qkv {
            q: c.q.view(),
            k: c.k.view(),
            v: c.v.view(),
            key_mask: c.key_mask.view(),
        },
        o,
        &mut Noise::new(0, 0, 2),
        Some(&mut heads),
        Default::default(),
    );
    heads
}

#[test]
fn tiled_trace_equals_full_trace_and_records_the_schedule() {
    let c = case(12, 5, 2, 1, 3);
    let full = opts(2, 1, 3, MaskMode::Causal);
    let tiled = with_kernel(full, AttentionKernel::Tiled { block: 2 });
    let (f, t) = (traced(&c, &full), traced(&c, &tiled));
    for (f, t) in f.iter().zip(&t) {
        assert_eq!(
            (&f.scores, &f.weights, &f.mask, f.kv_group),
            (&t.scores, &t.weights, &t.mask, t.kv_group)
        );
        for (a, b) in f.context.data.iter().zip(&t.context.data) {
            assert!((a - b).abs() < 1e-6);
        }
        let tiles = t.tiles.as_ref().unwrap();
        // Causal, T = 5, blocks of 2: query block qb takes key blocks 0..=qb.
        let order: Vec<(usize, usize)> = tiles.iter().map(|s| (s.q_block, s.k_block)).collect();
        assert_eq!(order, [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]);
        // After the last key block, m + ln l is the row's log-sum-exp of the scaled scores.
        let last = &tiles[2];
        for (r, (&m, &l)) in last.row_max.iter().zip(&last.row_sum).enumerate() {
            let i = 2 + r;
            let lse = (0..=i)
                .map(|j| (f.scaled.get(i, j) as f64).exp())
                .sum::<f64>()
                .ln();
            assert!(((m + l.ln()) as f64 - lse).abs() < 1e-5);
        }
    }
}

#[test]
fn the_tile_schedules_final_max_and_sum_give_the_full_weights() {
    let c = case(13, 7, 2, 2, 3);
    for mode in [MaskMode::Padding, MaskMode::Causal] {
        let tiled = with_kernel(opts(2, 2, 3, mode), AttentionKernel::Tiled { block: 3 });
        for head in &mut traced(&c, &tiled) {
            let from_tiles = flash::weights_from_tiles(head).unwrap();
            let diff = from_tiles.max_abs_difference(&head.weights).unwrap();
            assert!(diff < 1e-6, "{mode:?}: {diff}");
            // A wrong running sum shows: the check can fail.
            let last = head.tiles.as_mut().unwrap().last_mut().unwrap();
            last.row_sum[0] *= 2.0;
            let off = flash::weights_from_tiles(head).unwrap();
            assert!(off.max_abs_difference(&head.weights).unwrap() > 1e-3);
        }
    }
    let full = HeadTrace::default();
    assert!(flash::weights_from_tiles(&full).is_none());
}

#[test]
fn weights_are_a_distribution_over_allowed_keys_only() {
    let c = case(16, 4, 2, 2, 3);
    for mode in [MaskMode::None, MaskMode::Padding, MaskMode::Causal] {
        let o = opts(2, 2, 3, mode);
        let (_, AttentionCache::Full(FullCache { weights, .. })) = run(&c, &c.q, &c.k, &c.v, &o)
        else {
            panic!("full kernel")
        };
        let (b_size, h_count, tq, tk) = weights.dim();
        for (b, h, i) in (0..b_size)
            .flat_map(|b| (0..h_count).flat_map(move |h| (0..tq).map(move |i| (b, h, i))))
        {
            let row = weights.slice(s![b, h, i, ..]);
            assert!(
                (row.sum() - 1.0).abs() < 1e-6,
                "{mode:?} row sum {}",
                row.sum()
            );
            for j in 0..tk {
                if !o.allows(c.key_mask.row(b).as_slice().unwrap(), i, j) {
                    assert_eq!(row[j], 0.0, "{mode:?} b{b} i{i} j{j}");
                }
            }
        }
    }
}

#[test]
fn a_query_with_no_allowed_key_gets_zero_weights_not_nan() {
    let mut row = [1.0f32, 2.0, 3.0];
    masked_softmax_row(&mut row, &[false, false, false], 1.0, None);
    assert_eq!(row, [0.0, 0.0, 0.0]);
    let mut row = [1.0f32, 2.0, 3.0];
    masked_softmax_row(&mut row, &[true, false, true], 0.5, None);
    let (a, c) = ((0.5f32).exp(), (1.5f32).exp());
    assert!((row[0] - a / (a + c)).abs() < 1e-6 && row[1] == 0.0);
    // Every kernel: a sequence that is all padding gives a zero context, no NaN.
    let mut c = case(2, 3, 1, 1, 2);
    c.key_mask.row_mut(1).fill(0);
    for o in [
        opts(1, 1, 2, MaskMode::Padding),
        with_kernel(
            opts(1, 1, 2, MaskMode::Padding),
            AttentionKernel::Tiled { block: 2 },
        ),
        linear(opts(1, 1, 2, MaskMode::Causal)),
    ] {
        let r = random3(&mut Rng::new(1), (2, 3, 2));
        let [out, dq, dk, dv] = grads(&c, &o, &r);
        assert!(out.slice(s![1, .., ..]).iter().all(|&x| x == 0.0), "{o:?}");
        for x in [&dq, &dk, &dv] {
            assert!(x.iter().all(|x| x.is_finite()), "{o:?}");
        }
    }
}

#[test]
fn cross_attention_shapes_work() {
    // Tq = 2 queries over Tk = 5 keys, value width differing from key width.
    let mut rng = Rng::new(17);
    let (q, k, v) = (
        random3(&mut rng, (1, 2, 4)),
        random3(&mut rng, (1, 5, 4)),
        random3(&mut rng, (1, 5, 6)),
    );
    for kernel in [AttentionKernel::Full, AttentionKernel::Tiled { block: 2 }] {
        let o = with_kernel(
            AttentionOptions::softmax(Heads::new(2, 2).unwrap(), MaskMode::Padding, 0.5, 0.0),
            kernel,
        );
        let (ctx, _) = forward(
            Qkv {
                q: q.view(),
                k: k.view(),
                v: v.view(),
                key_mask: Array2::ones((1, 5)).view(),
            },
            &o,
            &mut Noise::new(0, 0, 1),
            None,
            Default::default(),
        );
        assert_eq!(ctx.dim(), (1, 2, 6));
    }
}

#[test]
fn settings_that_make_no_sense_are_errors() {
    // Groups that do not divide the heads cannot even be made.
    for (h, g) in [(4, 3), (4, 0), (0, 1)] {
        let err = Heads::new(h, g).unwrap_err().to_string();
        assert!(err.contains("must divide"), "{err}");
    }
    let base = opts(4, 4, 2, MaskMode::Padding);
    for (o, needle) in [
        (windowed(base, Some(0)), "window"),
        (alibi(linear(base)), "ALiBi"),
        (
            with_kernel(base, AttentionKernel::Tiled { block: 0 }),
            "block",
        ),
    ] {
        let err = o.validate().unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }
    assert!(base.validate().is_ok());
}

/// Attention dropout is hashed from each entry's index in the whole batch: row 1 of a batch of
/// 2, run alone as a slice (first_row 1), gets the same context as in the whole batch, with
/// both softmax kernels; and both kernels draw the same mask, so their outputs agree.
#[test]
fn attention_dropout_of_a_row_is_the_same_in_a_slice_or_in_the_whole_batch() {
    let (t, h, d) = (5, 2, 3);
    let c = case(8, t, h, h, d);
    let dropped = AttentionOptions {
        dropout: 0.3,
        ..opts(h, h, d, MaskMode::Padding)
    };
    let mut outputs = Vec::new();
    for kernel in [AttentionKernel::Full, AttentionKernel::Tiled { block: 2 }] {
        let o = with_kernel(dropped, kernel);
        let attend = |rows: std::ops::Range<usize>| {
            let input = Qkv {
                q: c.q.slice(s![rows.clone(), .., ..]),
                k: c.k.slice(s![rows.clone(), .., ..]),
                v: c.v.slice(s![rows.clone(), .., ..]),
                key_mask: c.key_mask.slice(s![rows.clone(), ..]),
            };
            let mut noise = Noise::new(31, rows.start, rows.len());
            forward(input, &o, &mut noise, None, Default::default()).0
        };
        let (whole, second) = (attend(0..2), attend(1..2));
        for (a, b) in second.iter().zip(whole.slice(s![1..2, .., ..])) {
            assert!((a - b).abs() < 1e-6, "{kernel:?}: {a} vs {b}");
        }
        // Without dropout the slice would differ from a forward that drops: the mask mattered.
        let plain = with_kernel(opts(h, h, d, MaskMode::Padding), kernel);
        let input = Qkv {
            q: c.q.view(),
            k: c.k.view(),
            v: c.v.view(),
            key_mask: c.key_mask.view(),
        };
        let undropped = forward(
            input,
            &plain,
            &mut Noise::new(31, 0, 2),
            None,
            Spare::default(),
        )
        .0;
        assert!(undropped
            .iter()
            .zip(&whole)
            .any(|(a, b)| (a - b).abs() > 1e-3));
        outputs.push(whole);
    }
    for (a, b) in outputs[0].iter().zip(&outputs[1]) {
        assert!((a - b).abs() < 1e-5, "full {a} vs tiled {b}");
    }
}
