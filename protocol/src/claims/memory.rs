//! "Memory (tiled)": peak heap bytes of one attention forward + backward, full against tiled.

use super::by_length::{lengths_text, series_of, slope_text, Unit};
use super::{bytes_text, About, Axes, Claim, ClaimResult, History, Plot, VerdictForm};
use engine::experiments::{log_log_slope, AttentionRun, Series, Variant};

pub struct Memory;

impl About for Memory {
    fn title(&self) -> &'static str {
        "Memory (tiled)"
    }

    fn slug(&self) -> &'static str {
        "memory"
    }

    fn lead(&self) -> &'static str {
        "How much memory does attention take as the text grows? The chart sets attention that stores the whole T × T table beside attention computed in tiles."
    }

    fn quote(&self) -> &'static str {
        "FlashAttention \"avoids the full attention matrix materialization\"."
    }

    fn method(&self) -> String {
        format!("Peak heap bytes of one attention forward + backward (one head, random q, k, v), full against tiled, for {}.", lengths_text())
    }
}

impl Memory {
    /// What it compares: the kernel that keeps T×T and the one that does not.
    pub const VARIANTS: [Variant; 2] = [Variant::Full, Variant::Tiled];

    /// The result of its measurements. `d`: the head width measured.
    pub fn result(runs: &[(Unit, AttentionRun)], d: usize) -> ClaimResult {
        let series: Vec<Series> = Self::VARIANTS
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
            (Some(t), Some(f)) if t < 1.3 && f > 1.7 => VerdictForm::BorneOut.says(format!("Borne out: full attention's memory grows as T^{f:.2} (the T×T matrix), tiled as T^{t:.2}: it never holds the matrix.")),
            (Some(t), Some(f)) => VerdictForm::NotBorneOut.says(format!("Not borne out here: full grows as T^{f:.2}, tiled as T^{t:.2}.")),
            _ => VerdictForm::NotMeasured.says("Not measured: this build does not count its heap.".into()),
        };
        ClaimResult {
            measured_at: None,
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
            history: History::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::by_length::tests::run;
    use crate::claims::units;

    #[test]
    fn memory_gives_slopes_the_ratio_at_the_longest_and_a_verdict() {
        let runs: Vec<(Unit, AttentionRun)> = units(&Memory::VARIANTS)
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
        let r = Memory::result(&runs, 16);
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
        assert_eq!(r.verdict.form, Some(VerdictForm::BorneOut));
        assert!(
            r.verdict.text.starts_with("Borne out"),
            "{}",
            r.verdict.text
        );
        // JSON as the figure's data-series carries it.
        let json = serde_json::to_string(&r.plots[0].series).unwrap();
        assert!(
            json.starts_with("[{\"name\":\"Full\",\"x\":[64.0,128.0"),
            "{json}"
        );
    }
}
