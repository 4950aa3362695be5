//! "Scaling (√d_k)": what softmax makes of random scores with and without ÷√d_k, by head
//! size; with Compare, two trained models' mean largest weight through their History.

use super::{About, Axes, Claim, ClaimResult, Plot};
use engine::config::AttentionScaling;
use engine::experiments::{Series, SoftmaxStatistics, SCALING_KEYS, SCALING_ROWS};

pub struct Scaling;

impl About for Scaling {
    fn title(&self) -> &'static str {
        "Scaling (√d_k)"
    }

    fn slug(&self) -> &'static str {
        "scaling"
    }

    fn quote(&self) -> &'static str {
        "Dividing by √d_k \"prevents large values that push softmax into saturation regions with tiny gradients\"."
    }

    fn method(&self) -> String {
        format!(
            "For d_k = {} … {}: {SCALING_ROWS} random queries over {SCALING_KEYS} random keys (unit-variance components), with and without ÷√d_k: the scores' spread, the largest softmax weight, a row's entropy and the gradient that passes back through softmax. Then, with Compare (A ÷√d_k, B None, d_k ≥ {TRAINED_MIN_HEAD_DIM}: preset small), both trained models' mean largest weight on the sentence, step by step through their History.",
            HEAD_SIZES[0],
            HEAD_SIZES[HEAD_SIZES.len() - 1]
        )
    }

    fn reads_history(&self) -> bool {
        true
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

impl Scaling {
    /// The result of its measurements: one (d_k, statistics under each scaling)
    /// per head size, and the trained comparison, or why there is none.
    pub fn result(
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
                    "Not borne out here: at d_k = {d} the largest weight is {:.3} without scaling and {:.3} with it (at d_k = {d_first}: {:.3}).",
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
            measured_at: None,
            claim: Claim::Scaling,
            plots,
            numbers,
            verdict,
            heatmap: None,
        }
    }
}
