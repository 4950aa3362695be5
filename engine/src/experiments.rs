//! The tutorial's claims about attention variants, as measurements: what the page's "Claims"
//! panel runs in the worker and `attention-lab scaling` prints. Plain functions; the caller
//! brings the clock (`now_ms`) and, for memory, installs `counting_alloc` as its allocator.

use crate::config::{AttentionScaling, AttentionType};
use crate::counting_alloc;
use crate::error::{EngineError, Result};
use crate::forward::ForwardOptions;
use crate::inspect::{inspect_with, Inspection};
use crate::ops::attention::{
    self, Attention, AttentionKernel, AttentionOptions, Heads, Qkv, QkvGrads, Softmax,
};
use crate::ops::dropout::Noise;
use crate::ops::full_attention::{masked_softmax_row, softmax_row_backward};
use crate::ops::matmul::gemm;
use crate::tokenizer::Tokenizer;
use crate::{BertForPreTraining, MaskMode, Rng};
use ndarray::{Array1, Array2, Array3};
use serde::{Deserialize, Serialize};

/// One line of a plot, as the page's figures carry it in `data-series`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    pub name: String,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// The attention variants the experiments compare: one list for the command line's
/// `scaling --variant`, the page's Memory and Time claims and their charts. A new kind of
/// attention joins the comparisons by a line here (and its `Attention` kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Full,
    Tiled,
    Window,
    Linear,
    Gqa,
}

/// The window of [`Variant::Window`] when none is asked for.
pub const VARIANT_WINDOW: usize = 64;

/// The sizes a variant is measured at: H query heads of width D, the tiled kernel's block,
/// and what the caller adds (a window on top of any softmax variant, another G).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariantSizes {
    pub heads: usize,
    pub head_dim: usize,
    pub block: usize,
    /// A window for a variant without its own ([`Variant::Window`] takes
    /// [`VARIANT_WINDOW`] when None).
    pub window: Option<usize>,
    /// G K/V groups; None = H, or 1 for [`Variant::Gqa`].
    pub kv_heads: Option<usize>,
}

impl Variant {
    pub const ALL: [Variant; 5] = [
        Variant::Full,
        Variant::Tiled,
        Variant::Window,
        Variant::Linear,
        Variant::Gqa,
    ];

    /// The name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Full => "full",
            Variant::Tiled => "tiled",
            Variant::Window => "window",
            Variant::Linear => "linear",
            Variant::Gqa => "gqa",
        }
    }

    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The name on the page's charts.
    pub fn label(self) -> String {
        match self {
            Variant::Full => "Full".into(),
            Variant::Tiled => "Tiled".into(),
            Variant::Window => format!("Window (W = {VARIANT_WINDOW})"),
            Variant::Linear => "Linear".into(),
            Variant::Gqa => "GQA (G = 1)".into(),
        }
    }

    /// What it is, in a phrase (the command line's help).
    pub fn describe(self) -> String {
        match self {
            Variant::Full => "softmax, the whole T×T weights kept for backward".into(),
            Variant::Tiled => {
                "softmax, FlashAttention-2 blocks; only each row's log-sum-exp kept".into()
            }
            Variant::Window => {
                format!("tiled, with a sliding window of W keys (default {VARIANT_WINDOW})")
            }
            Variant::Linear => "linear attention, elu + 1 feature map; no T×T at all".into(),
            Variant::Gqa => "full, with G K/V groups (default 1)".into(),
        }
    }

    /// Whether its kernel is tiled (and so takes a block size).
    pub fn tiled(self) -> bool {
        matches!(self, Variant::Tiled | Variant::Window)
    }

    /// The options of one measurement: padding mask (every key real), no dropout, scale
    /// 1/√D. Errors for sizes that make no sense, and for a window on linear attention.
    pub fn options(self, sizes: VariantSizes) -> Result<AttentionOptions> {
        let VariantSizes {
            heads,
            head_dim,
            block,
            window,
            kv_heads,
        } = sizes;
        let softmax = |kernel| Attention::Softmax(Softmax { kernel, window });
        let attention = match self {
            Variant::Full | Variant::Gqa => softmax(AttentionKernel::Full),
            Variant::Tiled => softmax(AttentionKernel::Tiled { block }),
            Variant::Window => Attention::Softmax(Softmax {
                kernel: AttentionKernel::Tiled { block },
                window: Some(window.unwrap_or(VARIANT_WINDOW)),
            }),
            Variant::Linear => AttentionType::Linear.with(Softmax {
                window,
                ..Softmax::default()
            })?,
        };
        let kv_heads = match (kv_heads, self) {
            (Some(g), _) => g,
            (None, Variant::Gqa) => 1,
            (None, _) => heads,
        };
        if heads == 0 || head_dim == 0 {
            return Err(EngineError::Input(
                "the heads and their width must be at least 1".into(),
            ));
        }
        let heads = Heads::new(heads, kv_heads)?;
        let opts = AttentionOptions {
            attention,
            ..AttentionOptions::softmax(
                heads,
                MaskMode::Padding,
                1.0 / (head_dim as f32).sqrt(),
                0.0,
            )
        };
        opts.validate()?;
        Ok(opts)
    }
}

/// One attention forward + backward, measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionRun {
    pub forward_ms: f64,
    pub backward_ms: f64,
    /// The most heap bytes live at once during forward + backward, minus those live before
    /// (q, k, v, the key mask, dO and the zeroed dQ, dK, dV): what the op itself allocates,
    /// its output and cache included. 0 unless the binary's allocator is `counting_alloc`.
    pub peak_bytes: usize,
}

/// One call of the engine's attention op at length T, B = 1 (no projections, no dropout, no
/// padding: every key is real) on random q, k, v of D per head, and a random gradient of the
/// output.
pub fn measure_attention(
    t: usize,
    d: usize,
    opts: &AttentionOptions,
    rng: &mut Rng,
    now_ms: impl Fn() -> f64,
) -> AttentionRun {
    let (h, g) = (opts.heads.query(), opts.heads.kv_groups());
    let mut random = |width: usize| Array3::from_shape_fn((1, t, width), |_| rng.normal(0.0, 1.0));
    let q = random(h * d); // (B, T, H·D)
    let k = random(g * d); // (B, T, G·D)
    let v = random(g * d); // (B, T, G·D)
    let d_context = random(h * d); // (B, T, H·D)
    let key_mask = Array2::<u8>::ones((1, t)); // (B, T)
    let mut d_q = Array3::<f32>::zeros(q.dim());
    let mut d_k = Array3::<f32>::zeros(k.dim());
    let mut d_v = Array3::<f32>::zeros(v.dim());
    let mut noise = Noise::new(1, 0, 1); // no dropout: never drawn from

    let before = counting_alloc::reset_peak();
    let start = now_ms();
    let input = Qkv {
        q: q.view(),
        k: k.view(),
        v: v.view(),
        key_mask: key_mask.view(),
    };
    let (context, cache) = attention::forward(input, opts, &mut noise, None, Default::default());
    let forward_ms = now_ms() - start;
    let start = now_ms();
    let grads = QkvGrads {
        d_q: d_q.view_mut(),
        d_k: d_k.view_mut(),
        d_v: d_v.view_mut(),
    };
    attention::backward(grads, d_context.view(), input, context.view(), &cache, opts);
    let backward_ms = now_ms() - start;
    let peak_bytes = counting_alloc::peak().saturating_sub(before);
    drop((context, cache));
    AttentionRun {
        forward_ms,
        backward_ms,
        peak_bytes,
    }
}

/// A run shorter than this is repeated and the repeats averaged: a browser's clock ticks in
/// 0.1 ms (5 µs when cross-origin isolated, 1 ms in Firefox), so one short run reads as a few
/// ticks, and the median of such readings is itself a tick; the mean of runs that fill 20 ms is
/// not. Bounded so, one timing stays one short task in the page's worker.
pub const MIN_TIMED_MS: f64 = 20.0;
/// At most this many repeats of one timing.
pub const MAX_REPEATS: usize = 200;

/// How long one attention forward + backward takes at length T, the one way the page's Time
/// claim and `attention-lab scaling` time it: a first run, always a warm-up (it also grows the
/// GEMM's packing buffers, once, so its peak bytes are not the attention's); then, when it took
/// under [`MIN_TIMED_MS`], n = ⌈MIN_TIMED_MS ÷ its time⌉ more (2 ≤ n ≤ [`MAX_REPEATS`]) and
/// their mean, else one more run. One call takes about max(2 runs, 2 · MIN_TIMED_MS), so the
/// worker times one (variant, T) per macrotask and stays responsive. Peak bytes: the most of
/// the timed runs.
pub fn time_attention(
    t: usize,
    d: usize,
    opts: &AttentionOptions,
    rng: &mut Rng,
    now_ms: impl Fn() -> f64,
) -> AttentionRun {
    let first = measure_attention(t, d, opts, rng, &now_ms);
    let once = first.forward_ms + first.backward_ms;
    // A machine under load can make the cold run long: its peak still is not the attention's.
    let n = if once >= MIN_TIMED_MS {
        1
    } else {
        ((MIN_TIMED_MS / once.max(0.01)).ceil() as usize).clamp(2, MAX_REPEATS)
    };
    let runs: Vec<AttentionRun> = (0..n)
        .map(|_| measure_attention(t, d, opts, rng, &now_ms))
        .collect();
    let mean = |f: fn(&AttentionRun) -> f64| runs.iter().map(f).sum::<f64>() / n as f64;
    AttentionRun {
        forward_ms: mean(|r| r.forward_ms),
        backward_ms: mean(|r| r.backward_ms),
        peak_bytes: runs
            .iter()
            .map(|r| r.peak_bytes)
            .max()
            .unwrap_or(first.peak_bytes),
    }
}

/// The least-squares slope of log y against log x: the exponent k of y ∝ x^k. Points with a
/// non-positive coordinate are left out; None with fewer than two left.
pub fn log_log_slope(x: &[f64], y: &[f64]) -> Option<f64> {
    let points: Vec<(f64, f64)> = x
        .iter()
        .zip(y)
        .filter(|(x, y)| **x > 0.0 && **y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    (sxx > 0.0).then(|| sxy / sxx)
}

/// KV-cache bytes per generated token: K and V (2), in every layer, G groups of d_k floats of
/// 4 bytes.
pub fn kv_cache_bytes_per_token(layers: usize, kv_heads: usize, head_dim: usize) -> usize {
    2 * layers * kv_heads * head_dim * 4
}

/// Keys per query in the scaling experiment (T).
pub const SCALING_KEYS: usize = 32;
/// Queries averaged over, per head size.
pub const SCALING_ROWS: usize = 512;

/// What softmax makes of one query's scores over `SCALING_KEYS` keys, averaged over the rows:
/// the spread of the scores it is given, how peaked its weights are, and how much gradient
/// passes back through it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SoftmaxStatistics {
    /// Standard deviation of softmax's input, s = q·k · factor, over every row and key.
    pub score_std: f64,
    /// Mean over rows of max_j w_j (1/T = uniform, 1 = one-hot).
    pub max_weight: f64,
    /// Mean over rows of −Σ_j w_j ln w_j, in nats (ln T = uniform, 0 = one-hot).
    pub entropy: f64,
    /// Mean over rows of ‖∂L/∂s‖₂ for an upstream gradient ∂L/∂w of unit-variance noise:
    /// dS_j = w_j (G_j − Σ_k G_k w_k), which vanishes as w nears one-hot.
    pub grad_norm: f64,
}

/// The claim "Scaling (√d_k)" at one head size d_k: random q and k with unit-variance
/// components (q·k then has variance d_k), the same rows and upstream gradients under each
/// `AttentionScaling`, in `AttentionScaling::ALL`'s order.
pub fn softmax_statistics(d_k: usize, rng: &mut Rng) -> Vec<(AttentionScaling, SoftmaxStatistics)> {
    let t = SCALING_KEYS;
    let mut sums = [[0.0f64; 5]; AttentionScaling::ALL.len()]; // Σs, Σs², Σmax, Σentropy, Σ‖dS‖
    let mut scores = Array2::<f32>::zeros((t, 1)); // (T, 1): K · q
    let everything = vec![true; t];
    for _ in 0..SCALING_ROWS {
        let q = Array2::from_shape_fn((d_k, 1), |_| rng.normal(0.0, 1.0)); // (D, 1)
        let k = Array2::from_shape_fn((t, d_k), |_| rng.normal(0.0, 1.0)); // (T, D)
        let upstream = Array1::from_shape_fn(t, |_| rng.normal(0.0, 1.0)); // (T): ∂L/∂w
        gemm(1.0, &k, &q, 0.0, &mut scores);
        for (sum, scaling) in sums.iter_mut().zip(AttentionScaling::ALL) {
            let factor = scaling.factor(d_k);
            let mut w: Vec<f32> = scores.iter().copied().collect();
            for s in &w {
                let s = f64::from(s * factor);
                sum[0] += s;
                sum[1] += s * s;
            }
            masked_softmax_row(&mut w, &everything, factor, None);
            let w = Array1::from(w);
            sum[2] += f64::from(w.iter().copied().fold(0.0, f32::max));
            // 0 · ln 0 = 0: a weight that underflowed to 0 adds nothing.
            sum[3] -= w
                .iter()
                .filter(|&&w| w > 0.0)
                .map(|&w| f64::from(w) * f64::from(w).ln())
                .sum::<f64>();
            let mut d_s = upstream.clone();
            softmax_row_backward(d_s.view_mut(), w.view());
            sum[4] += f64::from(d_s.iter().map(|g| g * g).sum::<f32>()).sqrt();
        }
    }
    let (rows, entries) = (SCALING_ROWS as f64, (SCALING_ROWS * t) as f64);
    AttentionScaling::ALL
        .into_iter()
        .zip(sums)
        .map(|(scaling, [s, s2, max, entropy, grad])| {
            let mean = s / entries;
            let statistics = SoftmaxStatistics {
                score_std: (s2 / entries - mean * mean).max(0.0).sqrt(),
                max_weight: max / rows,
                entropy: entropy / rows,
                grad_norm: grad / rows,
            };
            (scaling, statistics)
        })
        .collect()
}

/// The mean over every layer, head and real query row of the row's largest attention weight:
/// how close a trained model's softmax is to one-hot on this text.
pub fn mean_largest_weight(inspection: &Inspection) -> f64 {
    let real: Vec<usize> = (0..inspection.attention_mask.len())
        .filter(|&i| inspection.attention_mask[i] == 1)
        .collect();
    let (sum, rows) = inspection
        .trace
        .layers
        .iter()
        .flat_map(|layer| &layer.heads)
        .flat_map(|head| real.iter().map(move |&i| head.weights.row(i)))
        .fold((0.0, 0usize), |(sum, rows), row| {
            let largest = row.iter().copied().fold(0.0f32, f32::max);
            (sum + f64::from(largest), rows + 1)
        });
    if rows == 0 {
        0.0
    } else {
        sum / rows as f64
    }
}

/// How much each position's output moves when the text's last word changes, under the
/// padding mask and under the causal mask.
#[derive(Clone, Debug, PartialEq)]
pub struct Leakage {
    pub tokens: Vec<String>,
    /// The position of the changed token, and the words before and after.
    pub changed_at: usize,
    pub from: String,
    pub to: String,
    /// ‖h′_i − h_i‖₂ of the last layer's output at each position i.
    pub padding: Vec<f64>,
    pub causal: Vec<f64>,
}

/// A vocabulary word to put in place of the last of `words`: a plain lowercase word, none of
/// `words`, that the tokenizer reads as one token.
fn replacement(tokenizer: &Tokenizer, words: &[&str]) -> Option<String> {
    let vocab = tokenizer.vocab();
    let taken: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    (0..vocab.len() as u32)
        .filter_map(|id| vocab.token(id))
        .filter(|t| {
            t.len() >= 3
                && t.chars().all(|c| c.is_ascii_lowercase())
                && !taken.iter().any(|w| w == t)
        })
        .find(|t| {
            tokenizer
                .encode(t, None, 8, None)
                .is_ok_and(|e| e.input_ids.len() == 3)
        })
        .map(str::to_string)
}

/// Changes the last word of `text` and compares the last layer's outputs, position by
/// position, with the padding mask and with the causal mask. Under causal, every position
/// before the change sees only unchanged tokens: its output moves by exactly 0.
pub fn leakage(model: &BertForPreTraining, tokenizer: &Tokenizer, text: &str) -> Result<Leakage> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some((&last, rest)) = words.split_last() else {
        return Err(EngineError::Input(
            "type a sentence first: the experiment changes its last word".into(),
        ));
    };
    let to = replacement(tokenizer, &words).ok_or_else(|| {
        EngineError::Input("the vocabulary has no word to put in place of the last one".into())
    })?;
    let changed: String = rest
        .iter()
        .copied()
        .chain([to.as_str()])
        .collect::<Vec<_>>()
        .join(" ");
    let hidden = |text: &str, mask: MaskMode| {
        inspect_with(
            model,
            tokenizer,
            text,
            None,
            &ForwardOptions::inspection(mask),
            None,
        )
    };
    let mut moves = Vec::new();
    let mut tokens = Vec::new();
    let mut changed_at = 0;
    for mask in [MaskMode::Padding, MaskMode::Causal] {
        let (a, b) = (hidden(text, mask)?, hidden(&changed, mask)?);
        if a.tokens.len() != b.tokens.len() {
            return Err(EngineError::Input(format!(
                "\"{last}\" and \"{to}\" are not the same number of tokens: the positions would not line up"
            )));
        }
        changed_at = (0..a.input_ids.len())
            .rev()
            .find(|&i| a.input_ids[i] != b.input_ids[i])
            .ok_or_else(|| {
                EngineError::Input(format!(
                    "the last word was cut off: the model reads only the first {} tokens; shorten the sentence",
                    model.config.max_position_embeddings
                ))
            })?;
        moves.push(
            (0..a.hidden.rows)
                .map(|i| {
                    a.hidden
                        .row(i)
                        .iter()
                        .zip(b.hidden.row(i))
                        .map(|(x, y)| f64::from(x - y).powi(2))
                        .sum::<f64>()
                        .sqrt()
                })
                .collect::<Vec<f64>>(),
        );
        tokens = a.tokens;
    }
    let causal = moves.pop().unwrap_or_default();
    let padding = moves.pop().unwrap_or_default();
    Ok(Leakage {
        from: tokens.get(changed_at).cloned().unwrap_or_default(),
        tokens,
        changed_at,
        to,
        padding,
        causal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BertConfig;

    #[test]
    fn softmax_row_backward_matches_finite_differences() {
        use crate::ops::gradcheck::{assert_grads_match, numeric_grad, project, random_vec};
        let mut rng = Rng::new(3);
        let (s, r) = (random_vec(&mut rng, 9), random_vec(&mut rng, 9));
        let allowed = [true; 9];
        let softmax = |s: &Array1<f32>| {
            let mut w = s.to_vec();
            masked_softmax_row(&mut w, &allowed, 1.0, None);
            Array1::from(w)
        };
        let w = softmax(&s);
        let mut d_s = r.clone() * 5.0;
        softmax_row_backward(d_s.view_mut(), w.view());
        let numeric = numeric_grad(&s, |s| project(&softmax(s), &(r.clone() * 5.0)));
        assert_grads_match("dS", &d_s, &numeric);
    }

    #[test]
    fn without_the_scaling_softmax_saturates_as_d_k_grows_and_with_it_stays_put() {
        let at = |d_k: usize| {
            let measured = softmax_statistics(d_k, &mut Rng::new(0));
            let get = |s: AttentionScaling| measured.iter().find(|m| m.0 == s).unwrap().1;
            (
                get(AttentionScaling::InverseSqrtHeadSize),
                get(AttentionScaling::None),
            )
        };
        let (scaled_4, unscaled_4) = at(4);
        let (scaled, unscaled) = at(1024);
        // q·k of unit-variance components has variance d_k: std √d_k unscaled, 1 scaled.
        assert!(
            (unscaled.score_std / 32.0 - 1.0).abs() < 0.05,
            "{unscaled:?}"
        );
        assert!((scaled.score_std - 1.0).abs() < 0.05, "{scaled:?}");
        assert!(
            (unscaled_4.score_std / 2.0 - 1.0).abs() < 0.05,
            "{unscaled_4:?}"
        );
        // Unscaled at d_k = 1024 the weights are nearly one-hot and the gradient gone.
        assert!(unscaled.max_weight > 0.9, "{unscaled:?}");
        assert!(unscaled.entropy < 0.3, "{unscaled:?}");
        assert!(
            unscaled.grad_norm < 0.25 * scaled.grad_norm,
            "{unscaled:?} {scaled:?}"
        );
        // Scaled, the same statistics at d_k = 4 and 1024.
        assert!(
            (scaled.max_weight - scaled_4.max_weight).abs() < 0.03,
            "{scaled:?} {scaled_4:?}"
        );
        assert!(
            (scaled.entropy - scaled_4.entropy).abs() < 0.05,
            "{scaled:?} {scaled_4:?}"
        );
        assert!((scaled.grad_norm / scaled_4.grad_norm - 1.0).abs() < 0.1);
        // A uniform row would have entropy ln 32 = 3.47; unit-variance scores come close.
        assert!(scaled.entropy > 2.5 && scaled.entropy < (SCALING_KEYS as f64).ln());
    }

    /// On a clock that moves `tick` ms per reading: a run reads 2 ticks (forward, backward).
    #[test]
    fn short_runs_are_repeated_to_fill_the_timed_span_and_long_ones_timed_once_after_the_warm_up() {
        let opts = Variant::Full
            .options(VariantSizes {
                heads: 1,
                head_dim: 4,
                block: 8,
                window: None,
                kv_heads: None,
            })
            .unwrap();
        let timed = |tick: f64| {
            let readings = std::cell::Cell::new(0usize);
            let clock = || {
                readings.set(readings.get() + 1);
                readings.get() as f64 * tick
            };
            let run = time_attention(8, 4, &opts, &mut Rng::new(0), clock);
            (run, readings.get() / 4)
        };
        // 2 ms a run: the first, then ⌈20 / 2⌉ = 10 more averaged.
        let (run, runs) = timed(1.0);
        assert_eq!((run.forward_ms, run.backward_ms, runs), (1.0, 1.0, 11));
        // 20 ms a run: the warm-up, then timed once (a cold run's peak is not the attention's).
        assert_eq!(timed(10.0).1, 2);
        // A clock that does not move: at most MAX_REPEATS.
        assert_eq!(timed(0.0).1, 1 + MAX_REPEATS);
    }

    #[test]
    fn slopes_recover_the_exponent_and_skip_what_has_no_logarithm() {
        let x = [64.0, 128.0, 256.0, 512.0];
        let square: Vec<f64> = x.iter().map(|t| 3.0 * t * t).collect();
        assert!((log_log_slope(&x, &square).unwrap() - 2.0).abs() < 1e-12);
        let flat = [5.0; 4];
        assert!(log_log_slope(&x, &flat).unwrap().abs() < 1e-12);
        assert_eq!(log_log_slope(&[1.0], &[1.0]), None);
        assert_eq!(log_log_slope(&[0.0, 1.0], &[1.0, 2.0]), None);
    }

    #[test]
    fn the_mean_largest_weight_reads_real_rows_only() {
        let text = "the dog chases a red ball .";
        let tokenizer = Tokenizer::word_level(crate::tokenizer::build_word_vocab(text).unwrap());
        let model =
            BertForPreTraining::init(&BertConfig::tiny(tokenizer.vocab().len()), &mut Rng::new(1))
                .unwrap();
        let inspect = |pad_to| {
            let opts = ForwardOptions::inspection(MaskMode::Padding);
            inspect_with(&model, &tokenizer, text, None, &opts, pad_to).unwrap()
        };
        let (plain, padded) = (inspect(None), inspect(Some(20)));
        let t = plain.tokens.len();
        let mut want = 0.0;
        for layer in &plain.trace.layers {
            for head in &layer.heads {
                for i in 0..t {
                    want += f64::from(head.weights.row(i).iter().copied().fold(0.0, f32::max));
                }
            }
        }
        want /= (2 * 4 * t) as f64;
        assert!((mean_largest_weight(&plain) - want).abs() < 1e-9);
        // A fresh model spreads its weight: near 1/T, far from one-hot.
        assert!(want > 1.0 / t as f64 && want < 0.5, "{want}");
        // [PAD] rows are not read: padding keys get exactly 0, so real rows are unchanged.
        assert!((mean_largest_weight(&padded) - want).abs() < 1e-5);
    }

    #[test]
    fn kv_cache_bytes_follow_the_formula() {
        // BERT-base with G = H = 12, d_k = 64: 2·12·12·64·4 bytes per token.
        assert_eq!(kv_cache_bytes_per_token(12, 12, 64), 73_728);
        assert_eq!(kv_cache_bytes_per_token(12, 1, 64), 6_144);
    }

    #[test]
    fn full_and_tiled_attention_are_both_timed() {
        // The test binary's allocator is not the counting one: peak bytes read 0 here, and
        // the CLI's scaling test checks them. The times must still be measured.
        let clock = std::time::Instant::now();
        let now = || clock.elapsed().as_secs_f64() * 1e3;
        let sizes = VariantSizes {
            heads: 2,
            head_dim: 16,
            block: 16,
            window: None,
            kv_heads: None,
        };
        let mut rng = Rng::new(3);
        for v in [Variant::Full, Variant::Tiled] {
            let o = v.options(sizes).unwrap();
            let run = measure_attention(128, 16, &o, &mut rng, now);
            assert!(run.forward_ms > 0.0 && run.backward_ms > 0.0, "{run:?}");
        }
    }

    #[test]
    fn every_variant_has_one_name_and_runs_what_it_says() {
        let sizes = VariantSizes {
            heads: 4,
            head_dim: 8,
            block: 16,
            window: None,
            kv_heads: None,
        };
        for v in Variant::ALL {
            assert_eq!(Variant::from_name(v.name()), Some(v));
            let o = v.options(sizes).unwrap();
            let (tiled, linear) = match o.attention {
                Attention::Softmax(s) => (s.kernel != AttentionKernel::Full, false),
                Attention::Linear => (false, true),
            };
            assert_eq!(tiled, v.tiled(), "{v:?}");
            assert_eq!(linear, v == Variant::Linear, "{v:?}");
            assert_eq!(o.heads.kv_groups(), if v == Variant::Gqa { 1 } else { 4 });
            assert_eq!(
                o.attention.window(),
                (v == Variant::Window).then_some(VARIANT_WINDOW)
            );
        }
        let windowed = VariantSizes {
            window: Some(8),
            ..sizes
        };
        assert_eq!(
            Variant::Full.options(windowed).unwrap().attention.window(),
            Some(8)
        );
        let e = Variant::Linear.options(windowed).unwrap_err().to_string();
        assert!(e.contains("window"), "{e}");
        let none = VariantSizes { heads: 0, ..sizes };
        assert!(Variant::Full.options(none).is_err());
    }

    #[test]
    fn under_the_causal_mask_nothing_before_the_changed_word_moves() {
        let vocab = crate::tokenizer::build_word_vocab(
            "the dog chases a red ball . a cat sleeps under the tree .",
        )
        .unwrap();
        let model =
            BertForPreTraining::init(&BertConfig::tiny(vocab.len()), &mut Rng::new(0)).unwrap();
        let tokenizer = Tokenizer::word_level(vocab);
        let l = leakage(&model, &tokenizer, "the dog chases a red ball").unwrap();
        // [CLS] the dog chases a red ball [SEP]: "ball" at 6.
        assert_eq!((l.changed_at, l.from.as_str()), (6, "ball"));
        assert_ne!(l.to, "ball");
        assert_eq!(l.causal.len(), 8);
        assert!(l.causal[..6].iter().all(|&m| m == 0.0), "{:?}", l.causal);
        assert!(l.causal[6..].iter().all(|&m| m > 0.0), "{:?}", l.causal);
        // The padding mask lets every position see the change.
        assert!(l.padding.iter().all(|&m| m > 0.0), "{:?}", l.padding);
        assert!(leakage(&model, &tokenizer, "   ").is_err());
        // A sentence longer than the model's positions loses its last word: nothing to compare.
        let long = "the dog chases a red ball ".repeat(30);
        let cut = leakage(&model, &tokenizer, &long).unwrap_err().to_string();
        assert!(cut.contains("cut off"), "{cut}");
    }
}

pub mod extrapolation;
pub mod heads;
pub mod induction;
