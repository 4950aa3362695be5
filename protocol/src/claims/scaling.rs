//! "Scaling (√d_k)": what softmax makes of random scores with and without ÷√d_k, by head
//! size; with Compare, two trained models' mean largest weight through their History.

use super::{About, Axes, Claim, ClaimResult, History, Plot, Verdict, VerdictForm};
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

    fn lead(&self) -> &'static str {
        "Why divide the scores by √d_k? Without it, wider heads push softmax to put nearly all weight on one key, and the gradient through it all but vanishes: the charts show both, with and without."
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

/// One head size's statistics under each scaling.
type Measured = (usize, Vec<(AttentionScaling, SoftmaxStatistics)>);

impl Scaling {
    /// The result of its measurements: one (d_k, statistics under each scaling)
    /// per head size, and the trained comparison, or why there is none.
    pub fn result(measured: &[Measured], trained: Result<&TrainedScaling, &str>) -> ClaimResult {
        let mut plots = random_plots(measured);
        let (mut numbers, mut verdict) = random_numbers_and_verdict(measured);
        match trained {
            Ok(t) => {
                let (said, now) = trained_numbers(t);
                numbers.extend(said);
                verdict.text.push_str(&format!(
                    " Trained side by side (d_k = {}), their mean largest weight on the sentence is now {now}.",
                    t.head_dim
                ));
                plots.push(trained_plot(t));
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
            history: History::None,
        }
    }
}

/// The statistics of `scaling` at head size `at`.
fn at(at: Option<&Measured>, scaling: AttentionScaling) -> Option<(usize, SoftmaxStatistics)> {
    let (d, stats) = at?;
    let (_, s) = stats.iter().find(|(sc, _)| *sc == scaling)?;
    Some((*d, *s))
}

/// What softmax makes of random scores by head size, with and without ÷√d_k: the scores'
/// spread, the largest weight, the entropy and the gradient.
fn random_plots(measured: &[Measured]) -> Vec<Plot> {
    let series = |y: fn(&SoftmaxStatistics) -> f64| -> Vec<Series> {
        AttentionScaling::ALL
            .into_iter()
            .map(|scaling| {
                let (x, y): (Vec<f64>, Vec<f64>) = measured
                    .iter()
                    .filter_map(|m| at(Some(m), scaling).map(|(d, s)| (d as f64, y(&s))))
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
    vec![
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
    ]
}

/// The largest head size's statistics under each scaling, and whether softmax saturates
/// without ÷√d_k while it stays put with it.
fn random_numbers_and_verdict(measured: &[Measured]) -> (Vec<(String, String)>, Verdict) {
    let (Some((d, scaled)), Some((_, unscaled)), Some((d_first, scaled_first))) = (
        at(measured.last(), AttentionScaling::InverseSqrtHeadSize),
        at(measured.last(), AttentionScaling::None),
        at(measured.first(), AttentionScaling::InverseSqrtHeadSize),
    ) else {
        return (
            Vec::new(),
            VerdictForm::NotMeasured.says("Not measured.".into()),
        );
    };
    let less = scaled.grad_norm / unscaled.grad_norm.max(f64::MIN_POSITIVE);
    let numbers = vec![
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
    ];
    let saturates = unscaled.max_weight > 0.9 && less > 2.0;
    let flat = (scaled.max_weight - scaled_first.max_weight).abs() < 0.05;
    let verdict = if saturates && flat {
        VerdictForm::BorneOut.says(format!(
            "Borne out: without scaling the scores spread as √d_k (std {:.0} at d_k = {d}), softmax is nearly one-hot (largest weight {:.2}, entropy {:.2} nats) and {less:.1}× less gradient passes back through it; with ÷√d_k the largest weight stays at {:.2}–{:.2} from d_k = {d_first} to {d}.",
            unscaled.score_std,
            unscaled.max_weight,
            unscaled.entropy,
            scaled_first.max_weight.min(scaled.max_weight),
            scaled_first.max_weight.max(scaled.max_weight),
        ))
    } else {
        VerdictForm::NotBorneOut.says(format!(
            "Not borne out here: at d_k = {d} the largest weight is {:.3} without scaling and {:.3} with it (at d_k = {d_first}: {:.3}).",
            unscaled.max_weight, scaled.max_weight, scaled_first.max_weight
        ))
    };
    (numbers, verdict)
}

/// Each of Compare's models' mean largest weight now, as numbers and as the verdict says it
/// ("A (÷√d_k) 0.412 against B (None) 0.873").
fn trained_numbers(t: &TrainedScaling) -> (Vec<(String, String)>, String) {
    let mut numbers = Vec::new();
    let mut now = Vec::new();
    for TrainedModel {
        name,
        scaling,
        points,
    } in &t.models
    {
        if let Some(&(step, w)) = points.last() {
            let model = format!("{name} ({})", scaling.label());
            numbers.push((
                format!("{model}: mean largest weight at step {step}"),
                format!("{w:.3}"),
            ));
            now.push(format!("{model} {w:.3}"));
        }
    }
    (numbers, now.join(" against "))
}

/// Compare's models' mean largest weight on the sentence, by step through their History.
fn trained_plot(t: &TrainedScaling) -> Plot {
    Plot {
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
    }
}
