//! What the Batch view shows, as plain data: one chip per token with its segment, what MLM
//! did to it and what the model predicted there; each pair's NSP label and prediction; the
//! running counts as text; and the `data-batch` / `data-counts` JSON the tests read. No DOM.

use engine::batch_view::{BatchView, ExampleView, MaskingCounts, NspLabel};
use engine::data::Replacement;

/// Rows drawn before "+N more": a batch of 64 would fill the panel many times over.
pub const ROWS_SHOWN: usize = 4;

/// Which sentence a token belongs to, for its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    A,
    B,
}

/// What MLM did to a chosen position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Replaced by [MASK].
    Mask,
    /// Replaced by a random token: the one it became.
    Random { became: String },
    /// Left as it was.
    Kept,
}

impl Mark {
    /// The chip's CSS class, and its word in the `data-batch` contract.
    pub fn class(&self) -> &'static str {
        match self {
            Mark::Mask => "mask",
            Mark::Random { .. } => "random",
            Mark::Kept => "kept",
        }
    }

    /// The mark as the chip prints it: "[MASK]", "random → word" or "kept".
    pub fn label(&self) -> String {
        match self {
            Mark::Mask => "[MASK]".into(),
            Mark::Random { became } => format!("random → {became}"),
            Mark::Kept => "kept".into(),
        }
    }
}

/// A position chosen for MLM: what happened to it, the token it was, and the model's guess.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub mark: Mark,
    pub original: String,
    pub predicted: String,
    /// The prediction is the original token (green), or not (red).
    pub right: bool,
}

/// One token of an example.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chip {
    /// The token as the model saw it (after masking).
    pub token: String,
    pub segment: Segment,
    /// [CLS], [SEP]: drawn plainer, they are never chosen.
    pub special: bool,
    pub chosen: Option<Chosen>,
}

impl Chip {
    /// CSS classes: segment, special, and the mark of a chosen position.
    pub fn classes(&self) -> String {
        let mut c = String::from(match self.segment {
            Segment::A => "batch-chip seg-a",
            Segment::B => "batch-chip seg-b",
        });
        if self.special {
            c.push_str(" special");
        }
        if let Some(chosen) = &self.chosen {
            c.push_str(" chosen ");
            c.push_str(chosen.mark.class());
        }
        c
    }
}

/// NSP for one pair: the label, the head's prediction and its probability.
#[derive(Clone, Debug, PartialEq)]
pub struct Nsp {
    pub label: NspLabel,
    pub predicted: NspLabel,
    pub probability: f32,
}

impl Nsp {
    pub fn right(&self) -> bool {
        self.label == self.predicted
    }

    /// "predicted NotNext 62%".
    pub fn predicted_text(&self) -> String {
        format!(
            "predicted {} {:.0}%",
            nsp_name(self.predicted),
            self.probability * 100.0
        )
    }
}

pub fn nsp_name(label: NspLabel) -> &'static str {
    match label {
        NspLabel::IsNext => "IsNext",
        NspLabel::NotNext => "NotNext",
    }
}

/// One example as a row of chips.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub chips: Vec<Chip>,
    pub nsp: Nsp,
}

fn is_special(token: &str) -> bool {
    matches!(token, "[CLS]" | "[SEP]" | "[PAD]")
}

impl Row {
    pub fn new(example: &ExampleView) -> Row {
        let mut chips: Vec<Chip> = example
            .tokens
            .iter()
            .enumerate()
            .map(|(p, token)| Chip {
                token: token.clone(),
                segment: match example.token_type_ids.get(p) {
                    Some(&1) => Segment::B,
                    _ => Segment::A,
                },
                special: is_special(example.original.get(p).unwrap_or(token)),
                chosen: None,
            })
            .collect();
        let marks = example.chosen.iter().zip(&example.replaced_by);
        for (i, (&p, &replaced)) in marks.enumerate() {
            let Some(chip) = chips.get_mut(p) else {
                continue;
            };
            let original = example.original.get(p).cloned().unwrap_or_default();
            let predicted = example.predicted.get(i).cloned().unwrap_or_default();
            let mark = match replaced {
                Replacement::Mask => Mark::Mask,
                Replacement::Random => Mark::Random {
                    became: chip.token.clone(),
                },
                Replacement::Kept => Mark::Kept,
            };
            chip.chosen = Some(Chosen {
                right: predicted == original,
                mark,
                original,
                predicted,
            });
        }
        Row {
            chips,
            nsp: Nsp {
                label: example.nsp_label,
                predicted: example.nsp_predicted,
                probability: example.nsp_probability,
            },
        }
    }
}

/// The rows drawn (at most `limit`, the first ones) and how many more the batch holds.
pub fn rows(batch: &BatchView, limit: usize) -> (Vec<Row>, usize) {
    let shown = batch.examples.iter().take(limit).map(Row::new).collect();
    (shown, batch.examples.len().saturating_sub(limit))
}

/// MLM predictions right on the batch's chosen positions, of how many.
pub fn mlm_right(batch: &BatchView) -> (usize, usize) {
    batch.examples.iter().fold((0, 0), |(right, all), e| {
        let r = e
            .chosen
            .iter()
            .zip(&e.predicted)
            .filter(|&(&p, predicted)| e.original.get(p) == Some(predicted))
            .count();
        (right + r, all + e.chosen.len())
    })
}

/// `data-batch`: every example (not only the rows drawn), with the fields the contract names
/// (`tokens`, `original`, `chosen`, `replaced_by`, `predicted`, `nsp_label`, `nsp_predicted`)
/// and the engine's others.
pub fn batch_json(batch: Option<&BatchView>) -> String {
    match batch {
        Some(b) => serde_json::to_string(&b.examples).unwrap_or_else(|_| "[]".into()),
        None => "[]".into(),
    }
}

/// `data-counts`: the counts and their percentages.
pub fn counts_json(c: &MaskingCounts) -> String {
    serde_json::json!({
        "eligible_tokens": c.eligible_tokens,
        "chosen": c.chosen,
        "masked": c.masked,
        "random": c.random,
        "kept": c.kept,
        "is_next": c.is_next,
        "not_next": c.not_next,
        "chosen_percent": c.chosen_percent(),
        "masked_percent": c.masked_percent(),
        "random_percent": c.random_percent(),
        "kept_percent": c.kept_percent(),
        "is_next_percent": c.is_next_percent(),
    })
    .to_string()
}

/// The counts line: each measured share beside its target (`mask_prob` for the share chosen).
/// Before any batch, dashes in the same places.
pub fn counts_text(c: &MaskingCounts, mask_prob: f32) -> String {
    let target = format_percent(f64::from(mask_prob) * 100.0);
    let pct = |drawn: bool, v: f64| {
        if drawn {
            format!("{v:.1}%")
        } else {
            "—".into()
        }
    };
    let (tokens, chosen, pairs) = (
        c.eligible_tokens > 0,
        c.chosen > 0,
        c.is_next + c.not_next > 0,
    );
    format!(
        "chosen {} (target {target}) · [MASK] {} · random {} · kept {} (target 80/10/10) · IsNext {} (target 50%)",
        pct(tokens, c.chosen_percent()),
        pct(chosen, c.masked_percent()),
        pct(chosen, c.random_percent()),
        pct(chosen, c.kept_percent()),
        pct(pairs, c.is_next_percent()),
    )
}

/// 15 → "15%", 12.5 → "12.5%".
fn format_percent(v: f64) -> String {
    let rounded = (v * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}%")
    } else {
        format!("{rounded:.1}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|t| t.to_string()).collect()
    }

    /// `[CLS] the dog [SEP] a cat runs [SEP]`: "dog" masked, "cat" replaced by "sun",
    /// "runs" kept; the model gets "dog" and "runs" right, "cat" wrong.
    pub(crate) fn example() -> ExampleView {
        ExampleView {
            input_ids: vec![2, 5, 4, 3, 6, 9, 8, 3],
            token_type_ids: vec![0, 0, 0, 0, 1, 1, 1, 1],
            tokens: strings(&[
                "[CLS]", "the", "[MASK]", "[SEP]", "a", "sun", "runs", "[SEP]",
            ]),
            original: strings(&["[CLS]", "the", "dog", "[SEP]", "a", "cat", "runs", "[SEP]"]),
            chosen: vec![2, 5, 6],
            replaced_by: vec![Replacement::Mask, Replacement::Random, Replacement::Kept],
            predicted: strings(&["dog", "the", "runs"]),
            nsp_label: NspLabel::IsNext,
            nsp_predicted: NspLabel::NotNext,
            nsp_probability: 0.634,
        }
    }

    #[test]
    fn chips_carry_segment_mark_original_and_prediction() {
        let row = Row::new(&example());
        assert_eq!(row.chips.len(), 8);
        let classes: Vec<String> = row.chips.iter().map(Chip::classes).collect();
        assert_eq!(
            classes,
            [
                "batch-chip seg-a special",
                "batch-chip seg-a",
                "batch-chip seg-a chosen mask",
                "batch-chip seg-a special",
                "batch-chip seg-b",
                "batch-chip seg-b chosen random",
                "batch-chip seg-b chosen kept",
                "batch-chip seg-b special",
            ]
        );
        let chosen = |p: usize| row.chips[p].chosen.clone().unwrap();
        assert_eq!(chosen(2).mark.label(), "[MASK]");
        assert_eq!(
            (chosen(2).original.as_str(), chosen(2).right),
            ("dog", true)
        );
        assert_eq!(chosen(5).mark.label(), "random → sun");
        assert_eq!(
            (chosen(5).original.as_str(), chosen(5).predicted.as_str()),
            ("cat", "the")
        );
        assert!(!chosen(5).right);
        assert_eq!(chosen(6).mark, Mark::Kept);
        assert!(chosen(6).right);
        assert!(row.chips[1].chosen.is_none());
        assert!(!row.nsp.right());
        assert_eq!(row.nsp.predicted_text(), "predicted NotNext 63%");
        assert_eq!(nsp_name(row.nsp.label), "IsNext");
    }

    #[test]
    fn rows_are_capped_and_the_json_holds_every_example_with_the_contract_fields() {
        let batch = BatchView {
            step: 7,
            fixed: false,
            examples: vec![example(); 6],
        };
        let (shown, more) = rows(&batch, ROWS_SHOWN);
        assert_eq!((shown.len(), more), (4, 2));
        assert_eq!(mlm_right(&batch), (12, 18));
        let json: serde_json::Value = serde_json::from_str(&batch_json(Some(&batch))).unwrap();
        let examples = json.as_array().unwrap();
        assert_eq!(examples.len(), 6);
        let e = &examples[0];
        assert_eq!(e["tokens"][2], "[MASK]");
        assert_eq!(e["original"][2], "dog");
        assert_eq!(e["chosen"], serde_json::json!([2, 5, 6]));
        assert_eq!(
            e["replaced_by"],
            serde_json::json!(["mask", "random", "kept"])
        );
        assert_eq!(e["predicted"], serde_json::json!(["dog", "the", "runs"]));
        assert_eq!(e["nsp_label"], "IsNext");
        assert_eq!(e["nsp_predicted"], "NotNext");
        assert_eq!(batch_json(None), "[]");
    }

    #[test]
    fn the_counts_read_as_percentages_beside_their_targets() {
        let none = MaskingCounts::default();
        assert_eq!(
            counts_text(&none, 0.15),
            "chosen — (target 15%) · [MASK] — · random — · kept — (target 80/10/10) · IsNext — (target 50%)"
        );
        let c = MaskingCounts {
            eligible_tokens: 1000,
            chosen: 151,
            masked: 121,
            random: 15,
            kept: 15,
            is_next: 503,
            not_next: 497,
        };
        assert_eq!(
            counts_text(&c, 0.125),
            "chosen 15.1% (target 12.5%) · [MASK] 80.1% · random 9.9% · kept 9.9% (target 80/10/10) · IsNext 50.3% (target 50%)"
        );
        let json: serde_json::Value = serde_json::from_str(&counts_json(&c)).unwrap();
        assert_eq!(json["chosen"], 151);
        assert_eq!(json["not_next"], 497);
        assert!((json["chosen_percent"].as_f64().unwrap() - 15.1).abs() < 1e-9);
        assert!((json["is_next_percent"].as_f64().unwrap() - 50.3).abs() < 1e-9);
    }
}
