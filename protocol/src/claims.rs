//! The "Claims" panel: the tutorial's claims about attention variants, each an experiment the
//! worker runs in units (so it can report progress and stop between them), and its result as
//! plain data: the lines to plot, the numbers beside them, a one-line verdict.

use crate::settings::positions_words;
use engine::config::{AttentionScaling, PositionEmbeddingType};
use engine::experiments::heads::{HeadStats, ROLES};
pub use engine::experiments::Variant;
use engine::experiments::{
    kv_cache_bytes_per_token, log_log_slope, AttentionRun, Leakage, Series, SoftmaxStatistics,
    Tally, VariantSizes, SCALING_KEYS, SCALING_ROWS, VARIANT_WINDOW,
};
use engine::Matrix;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Claim {
    Leakage,
    Memory,
    Time,
    KvCache,
    Extrapolation,
    Scaling,
    Heads,
}

impl Claim {
    pub const ALL: [Claim; 7] = [
        Claim::Leakage,
        Claim::Memory,
        Claim::Time,
        Claim::KvCache,
        Claim::Extrapolation,
        Claim::Scaling,
        Claim::Heads,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Claim::Leakage => "Leakage (causal)",
            Claim::Memory => "Memory (tiled)",
            Claim::Time => "Time (linear, window)",
            Claim::KvCache => "KV cache (GQA)",
            Claim::Extrapolation => "Length extrapolation (RoPE)",
            Claim::Scaling => "Scaling (√d_k)",
            Claim::Heads => "Heads",
        }
    }

    /// Its name in a link (`embed=kv-cache`).
    pub fn slug(self) -> &'static str {
        match self {
            Claim::Leakage => "leakage",
            Claim::Memory => "memory",
            Claim::Time => "time",
            Claim::KvCache => "kv-cache",
            Claim::Extrapolation => "extrapolation",
            Claim::Scaling => "scaling",
            Claim::Heads => "heads",
        }
    }

    /// What the tutorial says, in its words.
    pub fn quote(self) -> &'static str {
        match self {
            Claim::Leakage => "Causal masking \"prevents information leakage\".",
            Claim::Memory => "FlashAttention \"avoids the full attention matrix materialization\".",
            Claim::Time => "Linear attention reduces \"O(n²) to O(n)\"; sliding windows handle \"extremely long sequences\".",
            Claim::KvCache => "GQA \"reduces KV cache size\".",
            Claim::Extrapolation => "RoPE \"provides better length extrapolation for sequences longer than training data\".",
            Claim::Scaling => "Dividing by √d_k \"prevents large values that push softmax into saturation regions with tiny gradients\".",
            Claim::Heads => "Multiple heads \"focus on different relationship types simultaneously. One head might capture syntactic patterns while another identifies semantic similarities\".",
        }
    }

    /// What "Run" does, in a sentence.
    pub fn method(self) -> &'static str {
        match self {
            Claim::Leakage => "Change the probe sentence's last word and measure how far every position's output moves, with the padding mask and with the causal mask.",
            Claim::Memory => "Peak heap bytes of one attention forward + backward (one head, random q, k, v), full against tiled, for T = 64 … 4096.",
            Claim::Time => "Time of one attention forward + backward (one head) for full, tiled, window (W = 64) and linear attention, for T = 64 … 4096, with the fitted log-log slopes.",
            Claim::KvCache => "KV-cache bytes per token, 2 · layers · G · d_k · 4, for G = H, this model's G and G = 1, at this model's size and at Llama 2 70B's.",
            Claim::Scaling => "For d_k = 4 … 1024: 512 random queries over 32 random keys (unit-variance components), with and without ÷√d_k: the scores' spread, the largest softmax weight, a row's entropy and the gradient that passes back through softmax. Then, with Compare (A ÷√d_k, B None, d_k ≥ 64: preset small), both trained models' mean largest weight on the sentence, step by step through their History.",
            Claim::Extrapolation => "Train two models at length T whose Positions differ (Compare: any two of Absolute, Rotary and ALiBi), then measure MLM accuracy by position on sequences of length 2T.",
            Claim::Heads => "Over the corpus's sentences as training reads them: each head's share of attention on itself, the previous and next token, [CLS], [SEP] and the rest, and its mean row entropy (Clark et al. 2019); the loss on a fixed evaluation batch with each head's context set to zero, minus the loss with every head (Michel et al. 2019); the mean pairwise Jensen–Shannon distance between the heads' weight rows, against a fresh model of the same seed. Measured again while the model trains (at most once a second; a large model only on Pause and Step).",
        }
    }
}

/// The sizes every scaling claim measures at: one head of `d`, tiled blocks of [`BLOCK`].
pub fn sizes(d: usize) -> VariantSizes {
    VariantSizes {
        heads: 1,
        head_dim: d,
        block: BLOCK,
        window: None,
        kv_heads: None,
    }
}

/// Rows per block of the tiled kernels in these experiments.
pub const BLOCK: usize = 32;
/// What the Memory claim compares: the kernel that keeps T×T and the one that does not.
pub const MEMORY_VARIANTS: [Variant; 2] = [Variant::Full, Variant::Tiled];
/// What the Time claim compares.
pub const TIME_VARIANTS: [Variant; 4] = [
    Variant::Full,
    Variant::Tiled,
    Variant::Window,
    Variant::Linear,
];

/// The sequence lengths of the scaling claims.
pub const LENGTHS: [usize; 7] = [64, 128, 256, 512, 1024, 2048, 4096];

/// One measurement of a scaling claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    pub variant: Variant,
    pub seq_len: usize,
}

/// The units of `claim`, in the order the worker runs them (short ones first, so the
/// progress bar moves at once). Claims computed in one go have none.
pub fn units(claim: Claim) -> Vec<Unit> {
    let variants: &[Variant] = match claim {
        Claim::Memory => &MEMORY_VARIANTS,
        Claim::Time => &TIME_VARIANTS,
        _ => &[],
    };
    LENGTHS
        .iter()
        .flat_map(|&seq_len| {
            variants
                .iter()
                .map(move |&variant| Unit { variant, seq_len })
        })
        .collect()
}

/// How a result's axes are scaled. On a logarithmic y axis exact zeros sit on its floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Axes {
    /// Both logarithmic: how a cost scales with T (a power law is a straight line).
    LogLog,
    /// Linear x (positions), logarithmic y.
    LinearLog,
    /// Logarithmic x, linear y (a share or an entropy against a size).
    LogLinear,
    /// Both linear (accuracy by position).
    Linear,
}

impl Axes {
    pub fn log_x(self) -> bool {
        matches!(self, Axes::LogLog | Axes::LogLinear)
    }

    pub fn log_y(self) -> bool {
        matches!(self, Axes::LogLog | Axes::LinearLog)
    }
}

/// A labelled vertical line across a claim's plot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    pub x: f64,
    pub label: String,
}

/// One of a claim's plots: lines over labelled axes, with vertical marks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    /// The figure's caption.
    pub caption: String,
    pub x_label: String,
    pub y_label: String,
    pub axes: Axes,
    pub series: Vec<Series>,
    /// Vertical lines with what they mark (the training length, the last learned position).
    pub marks: Vec<Mark>,
}

/// A claim's measured result: its plots, the numbers beside them, and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimResult {
    pub claim: Claim,
    pub plots: Vec<Plot>,
    /// (what, value), shown beside the plots.
    pub numbers: Vec<(String, String)>,
    /// One sentence: does the measurement bear the claim out?
    pub verdict: String,
    /// A table drawn as a heatmap below the plots (the Heads claim's roles), if any.
    #[serde(default)]
    pub heatmap: Option<ClaimHeatmap>,
}

/// Bytes as people read them: "336 kB", "201.6 MB".
pub fn bytes_text(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.0} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

fn series_of(
    units: &[(Unit, AttentionRun)],
    variant: Variant,
    y: fn(&AttentionRun) -> f64,
) -> Series {
    let picked: Vec<&(Unit, AttentionRun)> =
        units.iter().filter(|(u, _)| u.variant == variant).collect();
    Series {
        name: variant.label(),
        x: picked.iter().map(|(u, _)| u.seq_len as f64).collect(),
        y: picked.iter().map(|(_, r)| y(r)).collect(),
    }
}

fn slope_text(s: &Series) -> String {
    log_log_slope(&s.x, &s.y).map_or("—".into(), |k| format!("{k:.2}"))
}

/// Claim 2 from its measurements. `d`: the head width measured.
pub fn memory_result(runs: &[(Unit, AttentionRun)], d: usize) -> ClaimResult {
    let series: Vec<Series> = MEMORY_VARIANTS
        .map(|v| series_of(runs, v, |r| r.peak_bytes as f64))
        .to_vec();
    let at = |s: &Series, t: f64| s.x.iter().position(|&x| x == t).map(|i| s.y[i]);
    let last = series[0].x.last().copied().unwrap_or(0.0);
    let ratio = match (at(&series[0], last), at(&series[1], last)) {
        (Some(f), Some(t)) if t > 0.0 => Some(f / t),
        _ => None,
    };
    let mut numbers: Vec<(String, String)> = series
        .iter()
        .map(|s| (format!("{} slope", s.name), slope_text(s)))
        .collect();
    for s in &series {
        if let Some(b) = at(s, last) {
            numbers.push((format!("{} at T = {last}", s.name), bytes_text(b)));
        }
    }
    if let Some(r) = ratio {
        numbers.push((format!("Full ÷ Tiled at T = {last}"), format!("{r:.0}×")));
    }
    let tiled_slope = log_log_slope(&series[1].x, &series[1].y);
    let verdict = match (tiled_slope, log_log_slope(&series[0].x, &series[0].y)) {
        (Some(t), Some(f)) if t < 1.3 && f > 1.7 => format!("Borne out: full attention's memory grows as T^{f:.2} (the T×T matrix), tiled as T^{t:.2}: it never holds the matrix."),
        (Some(t), Some(f)) => format!("Not as claimed here: full grows as T^{f:.2}, tiled as T^{t:.2}."),
        _ => "Not measured: this build does not count its heap.".into(),
    };
    ClaimResult {
        claim: Claim::Memory,
        plots: vec![Plot {
            caption: format!("Memory of one attention forward + backward (one head, d_k = {d}): peak heap bytes by sequence length"),
            x_label: "sequence length T".into(),
            y_label: "peak bytes".into(),
            axes: Axes::LogLog,
            series,
            marks: Vec::new(),
        }],
        numbers,
        verdict,
        heatmap: None,
    }
}

/// Claim 3 from its measurements.
pub fn time_result(runs: &[(Unit, AttentionRun)], d: usize) -> ClaimResult {
    let series: Vec<Series> = TIME_VARIANTS
        .map(|v| series_of(runs, v, |r| r.forward_ms + r.backward_ms))
        .to_vec();
    let numbers = series
        .iter()
        .map(|s| (format!("{} slope", s.name), slope_text(s)))
        .collect();
    let slope = |v: Variant| {
        let s = series_of(runs, v, |r| r.forward_ms + r.backward_ms);
        log_log_slope(&s.x, &s.y).unwrap_or(f64::NAN)
    };
    let (full, linear, window) = (
        slope(Variant::Full),
        slope(Variant::Linear),
        slope(Variant::Window),
    );
    let verdict = if linear < 1.3 && window < 1.3 && full > linear {
        format!("Borne out: full attention's time grows as T^{full:.2}; linear as T^{linear:.2} and a window of {VARIANT_WINDOW} as T^{window:.2}, close to linear in T.")
    } else {
        format!(
            "Not as claimed here: full T^{full:.2}, linear T^{linear:.2}, window T^{window:.2}."
        )
    };
    ClaimResult {
        claim: Claim::Time,
        plots: vec![Plot {
            caption: format!(
                "Time of one attention forward + backward (one head, d_k = {d}) by sequence length, ms"
            ),
            x_label: "sequence length T".into(),
            y_label: "ms".into(),
            axes: Axes::LogLog,
            series,
            marks: Vec::new(),
        }],
        numbers,
        verdict,
        heatmap: None,
    }
}

/// A model's attention shape, for the KV-cache claim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvShape {
    pub name: String,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
}

impl KvShape {
    /// The named larger model: Llama 2 70B ships with grouped-query attention, 8 K/V heads.
    pub fn llama2_70b() -> KvShape {
        KvShape {
            name: "Llama 2 70B".into(),
            layers: 80,
            heads: 64,
            kv_heads: 8,
            head_dim: 128,
        }
    }
}

/// Claim 4: bytes per token for G = H, the model's G and G = 1, for each shape.
pub fn kv_cache_result(shapes: &[KvShape]) -> ClaimResult {
    let mut numbers = Vec::new();
    let series = shapes
        .iter()
        .map(|s| {
            let mut gs = vec![s.heads, s.kv_heads, 1];
            gs.dedup();
            let bytes: Vec<f64> = gs
                .iter()
                .map(|&g| kv_cache_bytes_per_token(s.layers, g, s.head_dim) as f64)
                .collect();
            for (g, b) in gs.iter().zip(&bytes) {
                let what = match *g {
                    g if g == s.heads => "multi-head".to_string(),
                    1 => "multi-query".to_string(),
                    _ => "grouped".to_string(),
                };
                numbers.push((
                    format!("{}, G = {g} ({what})", s.name),
                    format!("{} per token", bytes_text(*b)),
                ));
            }
            Series {
                name: format!(
                    "{} ({} layers, {} heads, d_k {})",
                    s.name, s.layers, s.heads, s.head_dim
                ),
                x: gs.iter().map(|&g| g as f64).collect(),
                y: bytes,
            }
        })
        .collect();
    ClaimResult {
        claim: Claim::KvCache,
        plots: vec![Plot {
            caption: "KV cache: bytes per token = 2 · layers · G · d_k · 4, by the number of K/V heads G".into(),
            x_label: "K/V heads G".into(),
            y_label: "bytes per token".into(),
            axes: Axes::LogLog,
            series,
            marks: Vec::new(),
        }],
        numbers,
        verdict: "Borne out, by construction: the cache holds G heads of K and V, so it shrinks in proportion to G; G = 1 keeps 1/H of multi-head attention's.".into(),
        heatmap: None,
    }
}

/// Claim 1 from the engine's measurement.
pub fn leakage_result(l: &Leakage) -> ClaimResult {
    let x: Vec<f64> = (0..l.tokens.len()).map(|i| i as f64).collect();
    let before = l.changed_at;
    let largest = |v: &[f64]| v[..before.min(v.len())].iter().copied().fold(0.0, f64::max);
    let smallest = |v: &[f64]| {
        v[..before.min(v.len())]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
    };
    let causal_max = largest(&l.causal);
    let numbers = vec![
        (
            "changed".into(),
            format!("\"{}\" → \"{}\" at position {before}", l.from, l.to),
        ),
        (
            format!("Causal: largest change before {before}"),
            if causal_max == 0.0 {
                "0 (exactly)".into()
            } else {
                format!("{causal_max:.3e}")
            },
        ),
        (
            format!("Padding: smallest change before {before}"),
            format!("{:.3e}", smallest(&l.padding)),
        ),
    ];
    let verdict = if causal_max == 0.0 {
        format!("Borne out: under the causal mask, no position before {before} moves at all; with the padding mask every position does: the change leaks backwards.")
    } else {
        format!("Not as claimed: under the causal mask a position before {before} moved by {causal_max:.3e}.")
    };
    ClaimResult {
        claim: Claim::Leakage,
        plots: vec![Plot {
            caption: format!(
                "Leakage: how far each position's output moves when \"{}\" becomes \"{}\" (‖Δh‖, last layer; exact zeros on the floor)",
                l.from, l.to
            ),
            x_label: "position".into(),
            y_label: "‖Δh‖".into(),
            // The changed position moves by far the most; on a log axis the small moves before
            // it (padding) stay visible beside the exact zeros (causal).
            axes: Axes::LinearLog,
            marks: Vec::new(),
            series: vec![
                Series { name: "Padding".into(), x: x.clone(), y: l.padding.clone() },
                Series { name: "Causal".into(), x, y: l.causal.clone() },
            ],
        }],
        numbers,
        verdict,
        heatmap: None,
    }
}

/// What the length-extrapolation claim measured of one model: its kind of positions and its
/// (correct, counted) MLM predictions at each position it could read.
pub struct ByPosition<'a> {
    pub kind: PositionEmbeddingType,
    pub tally: &'a [Tally],
    /// Learned positions (absolute) or None (rotary, ALiBi: any position).
    pub max_positions: Option<usize>,
}

/// Accuracy over `tally[range]`, None when nothing was counted there.
fn accuracy(tally: &[Tally], range: std::ops::Range<usize>) -> Option<f64> {
    let (hits, n) = tally
        .get(range.start.min(tally.len())..range.end.min(tally.len()))?
        .iter()
        .fold((0, 0), |(h, n), &(dh, dn)| (h + dh, n + dn));
    (n > 0).then(|| hits as f64 / n as f64)
}

/// Claim 5: MLM accuracy by position of two models with different kinds of positions
/// (absolute, rotary, ALiBi), both trained at length `trained_len` (T) for `steps` steps, on
/// sequences of length 2T. The series, numbers and verdict name the kinds compared, absolute
/// first, then rotary, then ALiBi. The claim is RoPE's: with a rotary model in the pair, it
/// is borne out when rotary keeps more of its accuracy past T than the other; without one
/// (absolute and ALiBi), ALiBi stands in RoPE's place, and the verdict says so.
pub fn extrapolation_result(
    trained_len: usize,
    steps: u64,
    a: ByPosition,
    b: ByPosition,
) -> ClaimResult {
    let order = |m: &ByPosition| PositionEmbeddingType::ALL.iter().position(|&k| k == m.kind);
    let models = if order(&a) <= order(&b) {
        [a, b]
    } else {
        [b, a]
    };
    let t = trained_len;
    let len = models[0].tally.len().max(models[1].tally.len());
    // Positions per point: about 32 points across 2T.
    let bin = (len / 32).max(1);
    let series_of = |m: &ByPosition| {
        let (name, tally) = (m.kind.label(), m.tally);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        // Bins within T and past it apart: no point mixes trained and untrained positions.
        let (within, past) = (0..t.min(tally.len()), t.min(tally.len())..tally.len());
        for part in [within, past] {
            for start in part.clone().step_by(bin) {
                let end = (start + bin).min(part.end);
                if let Some(a) = accuracy(tally, start..end) {
                    x.push((start + end - 1) as f64 / 2.0);
                    y.push(a);
                }
            }
        }
        Series {
            name: name.into(),
            x,
            y,
        }
    };
    let percent = |a: Option<f64>| a.map_or("—".to_string(), |a| format!("{:.1}%", a * 100.0));
    let reach = |m: &ByPosition| m.max_positions.unwrap_or(len);
    // The verdict compares the two models on the same positions: past T up to what both can
    // read (absolute stops at its P).
    let p = reach(&models[0]).min(reach(&models[1]));
    let within = |m: &ByPosition| accuracy(m.tally, 0..t);
    let past = |m: &ByPosition| accuracy(m.tally, t..len);
    let past_shared = |m: &ByPosition| accuracy(m.tally, t..p.min(len));
    let mut marks = vec![Mark {
        x: t as f64 - 0.5,
        label: format!("trained up to T = {t}"),
    }];
    let past_label = |name: &str, upto: usize| {
        format!(
            "{name}: positions {t}…{} (never trained)",
            upto.saturating_sub(1)
        )
    };
    let mut numbers = vec![(
        "Trained length T (longest example)".to_string(),
        format!("{t} tokens, {steps} steps"),
    )];
    for m in &models {
        let (name, p) = (m.kind.label(), reach(m));
        if p < len {
            marks.push(Mark {
                x: p as f64 - 0.5,
                label: format!("{name}: no position past P = {p}"),
            });
        }
        numbers.push((format!("{name}: positions 0…{}", t - 1), percent(within(m))));
        numbers.push(if p <= t {
            (
                past_label(name, len),
                format!("— (no position embedding past P = {p})"),
            )
        } else {
            (past_label(name, p.min(len)), percent(past(m)))
        });
        if p > t && p < len {
            numbers.push((
                format!("{name}: positions {p}…{}", len - 1),
                format!("— (no position embedding past P = {p})"),
            ));
        }
    }
    // Extrapolation is what a model keeps past the trained length of what it does within it:
    // the packed sequences differ from training's sentence pairs, and that costs each model
    // within T too.
    let kept = |within: Option<f64>, past: Option<f64>| match (within, past) {
        (Some(w), Some(p)) if w > 0.0 => Some(p / w),
        _ => None,
    };
    // The claim's model (rotary, else ALiBi in its place) and the one it is compared with.
    let (subject, other) = match models
        .iter()
        .position(|m| m.kind == PositionEmbeddingType::Rotary)
    {
        Some(r) => (&models[r], &models[1 - r]),
        None => (&models[1], &models[0]),
    };
    let stand_in = if subject.kind == PositionEmbeddingType::Rotary {
        String::new()
    } else {
        format!(
            "No rotary model here, {} in its place. ",
            positions_words(subject.kind)
        )
    };
    let (s_name, o_name) = (positions_words(subject.kind), positions_words(other.kind));
    let (s_kept, o_kept) = (
        kept(within(subject), past_shared(subject)),
        kept(within(other), past_shared(other)),
    );
    let change = |w: Option<f64>, p: Option<f64>| format!("{} → {}", percent(w), percent(p));
    let shared = if p < len {
        format!(
            " over positions {t}…{}; absolute cannot read past position {p} at all",
            p - 1
        )
    } else {
        String::new()
    };
    let verdict = match (s_kept, o_kept) {
        (Some(s), Some(o)) => format!(
            "{stand_in}{}: past the trained length {s_name} keeps {:.0}% of its accuracy ({}), {o_name} {:.0}% ({}){shared}.",
            if s > o { "Borne out here" } else { "Not borne out here" },
            s * 100.0,
            change(within(subject), past_shared(subject)),
            o * 100.0,
            change(within(other), past_shared(other))
        ),
        (_, None) if p <= t && kept(within(subject), past(subject)).is_some() => format!(
            "{stand_in}Borne out here: absolute positions stop at P = {p}, so that model cannot read past the trained length; {s_name} reads on and keeps {:.0}% of its accuracy ({}).",
            kept(within(subject), past(subject)).unwrap_or_default() * 100.0,
            change(within(subject), past(subject))
        ),
        _ => format!("Not measured ({s_name} against {o_name}): no maskable token past the trained length, or no right prediction within it to compare with."),
    };
    ClaimResult {
        claim: Claim::Extrapolation,
        plots: vec![Plot {
            caption: format!(
                "Length extrapolation: MLM accuracy by position on sequences of {len} tokens packed from the corpus; training's sentence pairs filled at most T = {t} positions"
            ),
            x_label: "position".into(),
            y_label: "MLM accuracy".into(),
            axes: Axes::Linear,
            series: models.iter().map(series_of).collect(),
            marks,
        }],
        numbers,
        verdict,
        heatmap: None,
    }
}

/// The head sizes d_k of the claim "Scaling (√d_k)", one unit each.
pub const HEAD_SIZES: [usize; 9] = [4, 8, 16, 32, 64, 128, 256, 512, 1024];

/// Compare's two models trained with and without ÷√d_k: each one's scaling and its mean
/// largest weight on the probe at each step of its History, the current step last.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainedScaling {
    pub head_dim: usize,
    pub models: [TrainedModel; 2],
}

/// One of Compare's models in the Scaling claim.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainedModel {
    /// "A" or "B".
    pub name: String,
    pub scaling: AttentionScaling,
    /// (step, mean largest weight on the probe)
    pub points: Vec<(u64, f64)>,
}

/// The least head size at which the trained comparison is read: below it the two scalings
/// differ by a factor under 8, too little to show in a short run.
pub const TRAINED_MIN_HEAD_DIM: usize = 64;

/// The claim "Scaling (√d_k)" from its measurements: one (d_k, statistics under each scaling)
/// per head size, and the trained comparison, or why there is none.
pub fn scaling_result(
    measured: &[(usize, Vec<(AttentionScaling, SoftmaxStatistics)>)],
    trained: Result<&TrainedScaling, &str>,
) -> ClaimResult {
    let series = |y: fn(&SoftmaxStatistics) -> f64| -> Vec<Series> {
        AttentionScaling::ALL
            .into_iter()
            .map(|scaling| {
                let (x, y): (Vec<f64>, Vec<f64>) = measured
                    .iter()
                    .filter_map(|(d, stats)| {
                        let (_, s) = stats.iter().find(|(sc, _)| *sc == scaling)?;
                        Some((*d as f64, y(s)))
                    })
                    .unzip();
                Series {
                    name: scaling.label().to_string(),
                    x,
                    y,
                }
            })
            .collect()
    };
    let plot = |caption: String, y_label: &str, axes: Axes, series: Vec<Series>| Plot {
        caption,
        x_label: "head size d_k".into(),
        y_label: y_label.into(),
        axes,
        series,
        marks: Vec::new(),
    };
    let keys = SCALING_KEYS;
    let mut plots = vec![
        plot(
            format!("Spread of the scores softmax is given: standard deviation of q·k (÷√d_k or not), {SCALING_ROWS} queries × {keys} keys"),
            "std of scores",
            Axes::LogLog,
            series(|s| s.score_std),
        ),
        plot(
            format!("Largest softmax weight, mean over rows (1/{keys} = uniform, 1 = one-hot)"),
            "largest weight",
            Axes::LogLinear,
            series(|s| s.max_weight),
        ),
        plot(
            format!(
                "Entropy of a row of weights, nats (ln {keys} = {:.2}: uniform; 0: one-hot)",
                (keys as f64).ln()
            ),
            "entropy (nats)",
            Axes::LogLinear,
            series(|s| s.entropy),
        ),
        plot(
            "Gradient that passes back through softmax, ‖∂L/∂s‖ for a random upstream gradient".into(),
            "‖∂L/∂s‖",
            // 0.05 … 0.3: linear reads better than a log axis's crowded ticks.
            Axes::LogLinear,
            series(|s| s.grad_norm),
        ),
    ];
    let find = |at: Option<&(usize, Vec<(AttentionScaling, SoftmaxStatistics)>)>,
                scaling: AttentionScaling| {
        let (d, stats) = at?;
        let (_, s) = stats.iter().find(|(sc, _)| *sc == scaling)?;
        Some((*d, *s))
    };
    let mut numbers = Vec::new();
    let mut verdict = "Not measured.".to_string();
    if let (Some((d, scaled)), Some((_, unscaled)), Some((d_first, scaled_first))) = (
        find(measured.last(), AttentionScaling::InverseSqrtHeadSize),
        find(measured.last(), AttentionScaling::None),
        find(measured.first(), AttentionScaling::InverseSqrtHeadSize),
    ) {
        let less = scaled.grad_norm / unscaled.grad_norm.max(f64::MIN_POSITIVE);
        numbers.extend([
            (
                format!("d_k = {d}: scores' std, ÷√d_k / None"),
                format!("{:.2} / {:.1}", scaled.score_std, unscaled.score_std),
            ),
            (
                format!("d_k = {d}: largest weight, ÷√d_k / None"),
                format!("{:.3} / {:.3}", scaled.max_weight, unscaled.max_weight),
            ),
            (
                format!("d_k = {d}: entropy, ÷√d_k / None"),
                format!("{:.2} / {:.2} nats", scaled.entropy, unscaled.entropy),
            ),
            (
                format!("d_k = {d}: ‖∂L/∂s‖, ÷√d_k / None"),
                format!(
                    "{:.3} / {:.3} ({less:.1}× less without)",
                    scaled.grad_norm, unscaled.grad_norm
                ),
            ),
            (
                format!("÷√d_k: largest weight at d_k = {d_first} and {d}"),
                format!(
                    "{:.3} and {:.3}",
                    scaled_first.max_weight, scaled.max_weight
                ),
            ),
        ]);
        let saturates = unscaled.max_weight > 0.9 && less > 2.0;
        let flat = (scaled.max_weight - scaled_first.max_weight).abs() < 0.05;
        verdict = if saturates && flat {
            format!(
                "Borne out: without scaling the scores spread as √d_k (std {:.0} at d_k = {d}), softmax is nearly one-hot (largest weight {:.2}, entropy {:.2} nats) and {less:.1}× less gradient passes back through it; with ÷√d_k the largest weight stays at {:.2}–{:.2} from d_k = {d_first} to {d}.",
                unscaled.score_std,
                unscaled.max_weight,
                unscaled.entropy,
                scaled_first.max_weight.min(scaled.max_weight),
                scaled_first.max_weight.max(scaled.max_weight),
            )
        } else {
            format!(
                "Not as claimed here: at d_k = {d} the largest weight is {:.3} without scaling and {:.3} with it (at d_k = {d_first}: {:.3}).",
                unscaled.max_weight, scaled.max_weight, scaled_first.max_weight
            )
        };
    }
    match trained {
        Ok(t) => {
            let mut now = Vec::new();
            for TrainedModel {
                name,
                scaling,
                points,
            } in &t.models
            {
                if let Some(&(step, w)) = points.last() {
                    numbers.push((
                        format!(
                            "{name} ({}): mean largest weight at step {step}",
                            scaling.label()
                        ),
                        format!("{w:.3}"),
                    ));
                    now.push(format!("{name} ({}) {w:.3}", scaling.label()));
                }
            }
            verdict.push_str(&format!(
                " Trained side by side (d_k = {}), their mean largest weight on the sentence is now {}.",
                t.head_dim,
                now.join(" against ")
            ));
            plots.push(Plot {
                caption: format!(
                    "Compare's models, trained with and without ÷√d_k (d_k = {}): mean largest weight on the sentence, by step (from the History)",
                    t.head_dim
                ),
                x_label: "step".into(),
                y_label: "mean largest weight".into(),
                axes: Axes::Linear,
                series: t
                    .models
                    .iter()
                    .map(|m| Series {
                        name: format!("{}: {}", m.name, m.scaling.label()),
                        x: m.points.iter().map(|p| p.0 as f64).collect(),
                        y: m.points.iter().map(|p| p.1).collect(),
                    })
                    .collect(),
                marks: Vec::new(),
            });
        }
        Err(why) => numbers.push(("Trained models".into(), why.to_string())),
    }
    ClaimResult {
        claim: Claim::Scaling,
        plots,
        numbers,
        verdict,
        heatmap: None,
    }
}

/// A table a result shows as a heatmap: rows and columns named, values row by row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimHeatmap {
    pub caption: String,
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
    pub values: Matrix,
}

/// "L1 H1" for head `k` = l·H + h of a model with `heads` heads a layer.
pub fn head_label(k: usize, heads: usize) -> String {
    let heads = heads.max(1);
    format!("L{} H{}", k / heads + 1, k % heads + 1)
}

/// What the Heads claim measured: the model now and a fresh one of the same seed on the same
/// sentences, and the ablation of each head now.
pub struct HeadsMeasured<'a> {
    pub now: &'a HeadStats,
    pub fresh: &'a HeadStats,
    pub seed: u64,
    pub step: u64,
    /// "MLM loss", or a decoder's "next-token loss".
    pub loss_name: &'a str,
    /// The loss with every head, on the evaluation batch of `evaluation_rows` rows.
    pub base_loss: f64,
    pub evaluation_rows: usize,
    /// Each head's loss without it minus `base_loss` (l·H + h).
    pub ablation: &'a [f64],
    /// Sentences the roles and distances were measured over.
    pub sentences: usize,
}

/// Claim 6: the heads' roles as a heatmap; their ablation and distance to one another by head
/// on the chart; whether training made them differ, in the verdict.
pub fn heads_result(m: &HeadsMeasured) -> ClaimResult {
    let (now, fresh) = (m.now, m.fresh);
    let heads = now.heads.max(1);
    let n = now.roles.len();
    let label = |k: usize| head_label(k, heads);
    let x: Vec<f64> = (1..=n).map(|k| k as f64).collect();
    let percent = |v: f64| format!("{:.0}%", v * 100.0);
    let signed = |v: f64| format!("{}{:.3}", if v < 0.0 { "−" } else { "+" }, v.abs());
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let by = |v: &[f64], largest: bool| {
        let better = |a: f64, b: f64| if largest { a > b } else { a < b };
        (0..v.len()).fold(None, |best: Option<usize>, k| match best {
            Some(b) if !better(v[k], v[b]) => Some(b),
            _ => Some(k),
        })
    };
    // Each role but "rest": the head that gives it the largest share.
    let specialists: Vec<(String, String)> = (0..ROLES.len() - 1)
        .filter_map(|r| {
            let shares: Vec<f64> = now.roles.iter().map(|s| s[r]).collect();
            by(&shares, true).map(|k| {
                (
                    format!("Most on {}", ROLES[r]),
                    format!("{} ({})", label(k), percent(shares[k])),
                )
            })
        })
        .collect();
    let mut numbers = vec![
        (
            "Head diversity (mean pairwise JS distance)".to_string(),
            format!(
                "{:.3} fresh (seed {}) → {:.3} at step {}",
                fresh.mean_distance, m.seed, now.mean_distance, m.step
            ),
        ),
        (
            "Mean row entropy".to_string(),
            format!(
                "{:.2} fresh → {:.2} nats now",
                mean(&fresh.entropy),
                mean(&now.entropy)
            ),
        ),
    ];
    numbers.extend(specialists.iter().cloned());
    numbers.push((
        format!("{} with every head", m.loss_name),
        format!("{:.3} ({} rows)", m.base_loss, m.evaluation_rows),
    ));
    let most = by(m.ablation, true);
    if let (Some(most), Some(least)) = (most, by(m.ablation, false)) {
        numbers.push((
            "Most needed head (ablation)".into(),
            format!("{}: {}", label(most), signed(m.ablation[most])),
        ));
        numbers.push((
            "Least needed head".into(),
            format!("{}: {}", label(least), signed(m.ablation[least])),
        ));
    }
    numbers.push((
        "Measured over".into(),
        format!("{} sentences, {} query rows", m.sentences, now.rows),
    ));
    let (d0, d1) = (fresh.mean_distance, now.mean_distance);
    let distances = format!(
        "their mean pairwise JS distance went from {d0:.3} (a fresh model, same seed) to {d1:.3}"
    );
    // The most specialised head: the largest share any head gives one role but "rest".
    let highlight = (0..n)
        .flat_map(|k| (0..ROLES.len() - 1).map(move |r| (k, r)))
        .max_by(|&(a, r), &(b, q)| now.roles[a][r].total_cmp(&now.roles[b][q]))
        .map(|(k, r)| {
            format!(
                "{} now puts {} of its attention on {}",
                label(k),
                percent(now.roles[k][r]),
                ROLES[r]
            )
        })
        .unwrap_or_default();
    let needed = most
        .map(|k| {
            format!(
                "; without {} the {} rises by {:.3}",
                label(k),
                m.loss_name,
                m.ablation[k]
            )
        })
        .unwrap_or_default();
    let verdict = if m.step == 0 {
        format!("Not yet measurable: the model has not trained, so its heads are as initialised ({distances}). Press Play: this card is measured again as it trains.")
    } else if d1 > d0 + 0.05 && d1 > 1.25 * d0 {
        format!("Borne out: training made the heads differ: after {} steps {distances}; {highlight}{needed}.", m.step)
    } else if d1 < d0 - 0.05 {
        format!(
            "Not borne out: training made the heads more alike: after {} steps {distances}.",
            m.step
        )
    } else {
        format!("Not borne out (yet): after {} steps the heads differ about as much as fresh ones: {distances}.", m.step)
    };
    let marks: Vec<Mark> = (1..now.layers)
        .map(|l| Mark {
            x: (l * heads) as f64 + 0.5,
            label: format!("layer {}", l + 1),
        })
        .collect();
    let values = Matrix {
        rows: n,
        cols: ROLES.len(),
        data: now
            .roles
            .iter()
            .flat_map(|r| r.iter().map(|&v| v as f32))
            .collect(),
    };
    let by_head = |caption: String, y_label: &str, series: Vec<Series>| Plot {
        caption,
        x_label: "head (L1 H1 = 1, L1 H2 = 2, …)".into(),
        y_label: y_label.into(),
        axes: Axes::Linear,
        series,
        marks: marks.clone(),
    };
    ClaimResult {
        claim: Claim::Heads,
        plots: vec![
            by_head(
                format!(
                    "Ablation: how much the {} rises when each head's context is set to zero",
                    m.loss_name
                ),
                "Δ loss",
                vec![Series {
                    name: format!("Ablation: Δ {}", m.loss_name),
                    x: x.clone(),
                    y: m.ablation.to_vec(),
                }],
            ),
            by_head(
                "Diversity: each head's mean JS distance to the other heads, now and in a fresh model of the same seed; and how evenly it spreads its attention (entropy ÷ ln keys: 1 evenly, 0 on one key)".into(),
                "JS distance · spread",
                vec![
                    Series {
                        name: "JS distance to the others, now".into(),
                        x: x.clone(),
                        y: now.distance_to_others.clone(),
                    },
                    Series {
                        name: "JS distance to the others, fresh".into(),
                        x: x.clone(),
                        y: fresh.distance_to_others.clone(),
                    },
                    Series {
                        name: "Spread (entropy ÷ ln keys), now".into(),
                        x,
                        y: now.spread.clone(),
                    },
                ],
            ),
        ],
        numbers,
        verdict,
        heatmap: Some(ClaimHeatmap {
            caption: format!(
                "Head roles: each head's share of attention on each kind of key, mean over {} query rows (step {})",
                now.rows, m.step
            ),
            row_labels: (0..n).map(label).collect(),
            col_labels: ROLES.iter().map(|r| r.to_string()).collect(),
            values,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bytes: usize, ms: f64) -> AttentionRun {
        AttentionRun {
            forward_ms: ms,
            backward_ms: ms,
            peak_bytes: bytes,
        }
    }

    #[test]
    fn extrapolation_plots_accuracy_by_position_and_says_where_absolute_stops() {
        // T = 8, 2T = 16; absolute has P = 12 learned positions.
        let rotary: Vec<Tally> = (0..16)
            .map(|p| if p < 8 { (3, 4) } else { (2, 4) })
            .collect();
        let absolute: Vec<Tally> = (0..12)
            .map(|p| if p < 8 { (3, 4) } else { (1, 4) })
            .collect();
        let r = extrapolation_result(
            8,
            300,
            ByPosition {
                kind: PositionEmbeddingType::Absolute,
                tally: &absolute,
                max_positions: Some(12),
            },
            ByPosition {
                kind: PositionEmbeddingType::Rotary,
                tally: &rotary,
                max_positions: None,
            },
        );
        assert_eq!(r.plots[0].axes, Axes::Linear);
        assert_eq!(
            (
                r.plots[0].series[0].name.as_str(),
                r.plots[0].series[1].name.as_str()
            ),
            ("Absolute", "Rotary")
        );
        assert_eq!(r.plots[0].series[1].x.len(), 16);
        assert!(
            r.plots[0].series[0].x.iter().all(|&x| x < 12.0),
            "absolute stops at P"
        );
        assert_eq!(
            (r.plots[0].series[1].y[0], r.plots[0].series[1].y[15]),
            (0.75, 0.5)
        );
        assert_eq!(
            r.plots[0].marks.iter().map(|m| m.x).collect::<Vec<_>>(),
            [7.5, 11.5]
        );
        let number = |what: &str| {
            r.numbers
                .iter()
                .find(|(k, _)| k == what)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            number("Rotary: positions 8…15 (never trained)").as_deref(),
            Some("50.0%")
        );
        assert_eq!(
            number("Absolute: positions 8…11 (never trained)").as_deref(),
            Some("25.0%")
        );
        assert!(number("Absolute: positions 12…15")
            .unwrap()
            .contains("no position embedding past P = 12"));
        assert!(r.verdict.starts_with("Borne out here"), "{}", r.verdict);
        assert!(r.plots[0].caption.starts_with("Length extrapolation"));
        // Absolute better past T: said plainly.
        let good: Vec<Tally> = (0..16).map(|_| (4, 4)).collect();
        let r = extrapolation_result(
            8,
            300,
            ByPosition {
                kind: PositionEmbeddingType::Absolute,
                tally: &good,
                max_positions: Some(16),
            },
            ByPosition {
                kind: PositionEmbeddingType::Rotary,
                tally: &rotary,
                max_positions: None,
            },
        );
        assert!(r.verdict.starts_with("Not borne out"), "{}", r.verdict);
        assert_eq!(r.plots[0].marks.len(), 1);
        // Two positions a point (2T = 64), T odd: no point mixes position T − 1 with T.
        let long: Vec<Tally> = vec![(1, 2); 64];
        let r = extrapolation_result(
            31,
            10,
            ByPosition {
                kind: PositionEmbeddingType::Absolute,
                tally: &long,
                max_positions: Some(128),
            },
            ByPosition {
                kind: PositionEmbeddingType::Rotary,
                tally: &long,
                max_positions: None,
            },
        );
        assert!(r.plots[0].series[1].x.contains(&30.0) && r.plots[0].series[1].x.contains(&31.5));
        assert!(
            r.plots[0].series[1].x.iter().all(|&x| x != 30.5),
            "{:?}",
            r.plots[0].series[1].x
        );
    }

    /// ALiBi as either model of the pair: series, numbers and verdict name the kinds compared,
    /// absolute first; rotary against ALiBi is RoPE's claim, absolute against ALiBi has ALiBi
    /// in RoPE's place.
    #[test]
    fn extrapolation_names_the_kinds_it_compared() {
        let keeps: Vec<Tally> = vec![(3, 4); 16];
        let drops: Vec<Tally> = (0..16)
            .map(|p| if p < 8 { (3, 4) } else { (1, 4) })
            .collect();
        let absolute: Vec<Tally> = drops[..12].to_vec();
        fn by(kind: PositionEmbeddingType, tally: &[Tally]) -> ByPosition<'_> {
            ByPosition {
                kind,
                tally,
                max_positions: (kind == PositionEmbeddingType::Absolute).then_some(12),
            }
        }
        use PositionEmbeddingType::{Absolute, Alibi, Rotary};
        // ALiBi given first: still drawn after absolute.
        let r = extrapolation_result(8, 300, by(Alibi, &keeps), by(Absolute, &absolute));
        let names: Vec<&str> = r.plots[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Absolute", "ALiBi"]);
        let number = |r: &ClaimResult, what: &str| {
            r.numbers
                .iter()
                .find(|(k, _)| k == what)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            number(&r, "ALiBi: positions 8…15 (never trained)").as_deref(),
            Some("75.0%")
        );
        assert!(number(&r, "Absolute: positions 12…15").is_some());
        assert!(
            r.verdict.starts_with("No rotary model here, ALiBi in its place. Borne out here: past the trained length ALiBi keeps 100%"),
            "{}",
            r.verdict
        );
        assert!(r.verdict.contains("absolute 33%"), "{}", r.verdict);
        // Rotary against ALiBi: RoPE's claim, not borne out when ALiBi keeps more.
        let r = extrapolation_result(8, 300, by(Alibi, &keeps), by(Rotary, &drops));
        let names: Vec<&str> = r.plots[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Rotary", "ALiBi"]);
        assert_eq!(r.plots[0].marks.len(), 1, "neither stops at a P");
        assert!(
            r.verdict
                .starts_with("Not borne out here: past the trained length rotary keeps 33%"),
            "{}",
            r.verdict
        );
        assert!(r.verdict.contains("ALiBi 100%"), "{}", r.verdict);
        assert_eq!(
            number(&r, "Rotary: positions 8…15 (never trained)").as_deref(),
            Some("25.0%")
        );
    }

    #[test]
    fn the_scaling_claims_measure_every_variant_at_every_length() {
        assert_eq!(units(Claim::Memory).len(), 2 * LENGTHS.len());
        assert_eq!(units(Claim::Time).len(), 4 * LENGTHS.len());
        assert!(units(Claim::Leakage).is_empty());
        assert_eq!(
            units(Claim::Time)[0],
            Unit {
                variant: Variant::Full,
                seq_len: 64
            }
        );
        for v in TIME_VARIANTS {
            assert!(v.options(sizes(16)).is_ok(), "{v:?}");
        }
    }

    #[test]
    fn memory_gives_slopes_the_ratio_at_the_longest_and_a_verdict() {
        let runs: Vec<(Unit, AttentionRun)> = units(Claim::Memory)
            .into_iter()
            .map(|u| {
                let t = u.seq_len;
                let bytes = match u.variant {
                    Variant::Full => 12 * t * t,
                    _ => 80 * t,
                };
                (u, run(bytes, 1.0))
            })
            .collect();
        let r = memory_result(&runs, 16);
        assert!(r.plots[0].caption.starts_with("Memory"));
        assert_eq!(
            r.plots[0]
                .series
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["Full", "Tiled"]
        );
        assert_eq!(r.numbers[0], ("Full slope".into(), "2.00".into()));
        assert_eq!(r.numbers[1], ("Tiled slope".into(), "1.00".into()));
        assert!(r
            .numbers
            .iter()
            .any(|(k, v)| k == "Full ÷ Tiled at T = 4096" && v == "614×"));
        assert!(r.verdict.starts_with("Borne out"), "{}", r.verdict);
        // JSON as the figure's data-series carries it.
        let json = serde_json::to_string(&r.plots[0].series).unwrap();
        assert!(
            json.starts_with("[{\"name\":\"Full\",\"x\":[64.0,128.0"),
            "{json}"
        );
    }

    #[test]
    fn kv_cache_bytes_shrink_with_g_for_both_models() {
        let tiny = KvShape {
            name: "This model".into(),
            layers: 2,
            heads: 4,
            kv_heads: 2,
            head_dim: 16,
        };
        let r = kv_cache_result(&[tiny, KvShape::llama2_70b()]);
        assert_eq!(r.plots[0].series[0].x, [4.0, 2.0, 1.0]);
        assert_eq!(r.plots[0].series[0].y, [1024.0, 512.0, 256.0]);
        assert_eq!(r.plots[0].series[1].y[0], 2.0 * 80.0 * 64.0 * 128.0 * 4.0);
        assert!(r
            .numbers
            .iter()
            .any(|(k, v)| k == "Llama 2 70B, G = 8 (grouped)" && v == "655 kB per token"));
    }

    #[test]
    fn leakage_says_exactly_zero_only_when_it_is() {
        let mut l = Leakage {
            tokens: ["[CLS]", "a", "b", "[SEP]"].map(String::from).to_vec(),
            changed_at: 2,
            from: "b".into(),
            to: "c".into(),
            padding: vec![0.5, 0.4, 1.0, 0.3],
            causal: vec![0.0, 0.0, 1.0, 0.2],
        };
        let r = leakage_result(&l);
        assert!(r.verdict.starts_with("Borne out"));
        assert_eq!(r.numbers[1].1, "0 (exactly)");
        l.causal[1] = 1e-9;
        assert!(leakage_result(&l).verdict.starts_with("Not as claimed"));
    }

    fn stats(distance: f64, roles: [f64; 6]) -> HeadStats {
        HeadStats {
            layers: 2,
            heads: 2,
            roles: vec![roles; 4],
            entropy: vec![1.5; 4],
            spread: vec![0.7; 4],
            distance_to_others: vec![distance; 4],
            mean_distance: distance,
            rows: 40,
        }
    }

    #[test]
    fn heads_show_roles_as_a_table_and_say_whether_training_made_them_differ() {
        let fresh = stats(0.05, [0.2, 0.2, 0.2, 0.1, 0.1, 0.2]);
        let mut now = stats(0.4, [0.1, 0.1, 0.1, 0.1, 0.1, 0.5]);
        now.roles[1] = [0.05, 0.8, 0.05, 0.0, 0.0, 0.1];
        let ablation = [0.01, 0.3, -0.002, 0.05];
        let measured = |now, step| HeadsMeasured {
            now,
            fresh: &fresh,
            seed: 7,
            step,
            loss_name: "MLM loss",
            base_loss: 4.2,
            evaluation_rows: 32,
            ablation: &ablation,
            sentences: 3,
        };
        let r = heads_result(&measured(&now, 2000));
        assert_eq!(Claim::Heads.title(), "Heads");
        let h = r.heatmap.as_ref().unwrap();
        assert!(h.caption.starts_with("Head roles"));
        assert_eq!(h.row_labels, ["L1 H1", "L1 H2", "L2 H1", "L2 H2"]);
        assert_eq!(h.col_labels, ROLES);
        assert_eq!((h.values.rows, h.values.cols), (4, 6));
        assert_eq!(h.values.get(1, 1), 0.8);
        assert_eq!(r.plots.len(), 2);
        let series = &r.plots[0].series;
        assert_eq!(series[0].name, "Ablation: Δ MLM loss");
        assert_eq!(series[0].y, ablation);
        assert_eq!(series[0].x, [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.plots[1].series.len(), 3);
        assert_eq!(r.plots[1].series[2].y, [0.7; 4]);
        assert_eq!(r.plots[1].marks.len(), 1, "one line between the two layers");
        let number = |what: &str| r.numbers.iter().find(|(k, _)| k == what).unwrap().1.clone();
        assert_eq!(
            number("Head diversity (mean pairwise JS distance)"),
            "0.050 fresh (seed 7) → 0.400 at step 2000"
        );
        assert_eq!(number("Most on previous"), "L1 H2 (80%)");
        assert_eq!(number("Most needed head (ablation)"), "L1 H2: +0.300");
        assert_eq!(number("Least needed head"), "L2 H1: −0.002");
        assert!(r.verdict.starts_with("Borne out"), "{}", r.verdict);
        assert!(r.verdict.contains("0.050") && r.verdict.contains("0.400"));
        assert!(r
            .verdict
            .contains("L1 H2 now puts 80% of its attention on previous"));
        // Untrained, or no more different than fresh: said so.
        let r0 = heads_result(&measured(&fresh, 0));
        assert!(r0.verdict.starts_with("Not yet"), "{}", r0.verdict);
        let same = stats(0.06, [0.2; 6]);
        let r1 = heads_result(&measured(&same, 100));
        assert!(
            r1.verdict.starts_with("Not borne out (yet)"),
            "{}",
            r1.verdict
        );
        // What the page reads back: the table through the wire and JSON.
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<ClaimResult>(&json).unwrap(), r);
    }
}
