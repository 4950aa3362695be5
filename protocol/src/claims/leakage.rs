//! "Leakage (causal)": how far every position's output moves when the probe's last word
//! changes, under the padding mask and under the causal mask.

use super::{About, Axes, Claim, ClaimResult, History, Plot, VerdictForm};
use engine::experiments::{Leakage as Measured, Series};

pub struct Leakage;

impl About for Leakage {
    fn title(&self) -> &'static str {
        "Leakage (causal)"
    }

    fn slug(&self) -> &'static str {
        "leakage"
    }

    fn lead(&self) -> &'static str {
        "Does a word late in the sentence change what the model computes for the words before it? Under the causal mask it must not: the chart shows how far each position's output moves when the last word changes."
    }

    fn quote(&self) -> &'static str {
        "Causal masking \"prevents information leakage\"."
    }

    fn method(&self) -> String {
        "Change the probe sentence's last word and measure how far every position's output moves, with the padding mask and with the causal mask.".into()
    }
}

impl Leakage {
    /// The result of the engine's measurement.
    pub fn result(l: &Measured) -> ClaimResult {
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
            VerdictForm::BorneOut.says(format!("Borne out: under the causal mask, no position before {before} moves at all; with the padding mask every position does: the change leaks backwards."))
        } else {
            VerdictForm::NotBorneOut.says(format!("Not borne out: under the causal mask a position before {before} moved by {causal_max:.3e}."))
        };
        ClaimResult {
            measured_at: None,
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
            history: History::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leakage_says_exactly_zero_only_when_it_is() {
        let mut l = Measured {
            tokens: ["[CLS]", "a", "b", "[SEP]"].map(String::from).to_vec(),
            changed_at: 2,
            from: "b".into(),
            to: "c".into(),
            padding: vec![0.5, 0.4, 1.0, 0.3],
            causal: vec![0.0, 0.0, 1.0, 0.2],
        };
        let r = Leakage::result(&l);
        assert_eq!(r.verdict.form, Some(VerdictForm::BorneOut));
        assert!(r.verdict.text.starts_with("Borne out"));
        assert_eq!(r.numbers[1].1, "0 (exactly)");
        l.causal[1] = 1e-9;
        let moved = Leakage::result(&l).verdict;
        assert_eq!(moved.form, Some(VerdictForm::NotBorneOut));
        assert!(moved.text.starts_with("Not borne out"));
    }
}
