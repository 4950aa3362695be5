//! "Time (linear, window)": the time of one attention forward + backward by length, for full,
//! tiled, window and linear attention, timed by `engine::experiments::time_attention`.

use super::by_length::{lengths_text, series_of, slope_text, Unit};
use super::{About, Axes, Claim, ClaimResult, History, Plot, VerdictForm};
use engine::experiments::{log_log_slope, AttentionRun, Series, Variant, VARIANT_WINDOW};

pub struct Time;

impl About for Time {
    fn title(&self) -> &'static str {
        "Time (linear, window)"
    }

    fn slug(&self) -> &'static str {
        "time"
    }

    fn lead(&self) -> &'static str {
        "How does attention's time grow with the text's length? The chart sets full attention beside tiled, windowed and linear attention."
    }

    fn quote(&self) -> &'static str {
        "Linear attention reduces \"O(n²) to O(n)\"; sliding windows handle \"extremely long sequences\"."
    }

    fn method(&self) -> String {
        format!("Time of one attention forward + backward (one head) for full, tiled, window (W = {VARIANT_WINDOW}) and linear attention, for {}, with the fitted log-log slopes.", lengths_text())
    }
}

impl Time {
    /// What it compares.
    pub const VARIANTS: [Variant; 4] = [
        Variant::Full,
        Variant::Tiled,
        Variant::Window,
        Variant::Linear,
    ];

    /// The result of its measurements. `d`: the head width measured.
    pub fn result(runs: &[(Unit, AttentionRun)], d: usize) -> ClaimResult {
        let series: Vec<Series> = Self::VARIANTS
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
            VerdictForm::BorneOut.says(format!("Borne out: full attention's time grows as T^{full:.2}; linear as T^{linear:.2} and a window of {VARIANT_WINDOW} as T^{window:.2}, close to linear in T."))
        } else {
            VerdictForm::NotBorneOut.says(format!(
                "Not borne out here: full T^{full:.2}, linear T^{linear:.2}, window T^{window:.2}."
            ))
        };
        ClaimResult {
            measured_at: None,
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
            history: History::None,
        }
    }
}
