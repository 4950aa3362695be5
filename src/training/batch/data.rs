//! What the Batch view shows, as plain data: one chip per token with its segment, what MLM
//! did to it (or, for next token, that it predicts the token after it) and what the model
//! predicted there; each pair's NSP label and prediction, or each row's next-token score (by
//! copy on a Repeat row); the running counts as text; and the `data-batch` / `data-counts` JSON
//! the tests read. No DOM.

use engine::batch_view::{BatchView, ExampleView, MaskingCounts, NspLabel};
use engine::data::Replacement;
use engine::repeat::Copies;
use engine::train::Objective;

/// How to read a next-token row, where the MLM counts would be.
pub const NEXT_TOKEN_KEY: &str = "Next token: under each token, the model's guess for the token after it (✓ right, ✗ wrong). On a Repeat row the second copy is orange: its tokens can be copied from the first copy, whose tokens cannot be guessed.";

/// Rows drawn before "+N more": a batch of 64 would fill the panel many times over.
pub const ROWS_SHOWN: usize = 4;

/// Which sentence a token belongs to, for its colour; on a Repeat row, which copy.
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

/// A position the step trained the model to predict: what MLM did to it (None for next
/// token, which replaces nothing), the token to predict, and the model's guess.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub mark: Option<Mark>,
    /// MLM: the token that was there; next token: the one after it.
    pub target: String,
    pub predicted: String,
    /// The prediction is the target (green), or not (red).
    pub right: bool,
}

impl Chosen {
    /// The chip's tooltip.
    pub fn title(&self) -> String {
        match &self.mark {
            Some(mark) => format!(
                "{}: was {}, the model predicted {}",
                mark.label(),
                self.target,
                self.predicted
            ),
            None => format!(
                "next is {}, the model predicted {}",
                self.target, self.predicted
            ),
        }
    }
}

/// One token of an example.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chip {
    /// The token as the model saw it (after masking).
    pub token: String,
    pub segment: Segment,
    /// [CLS], [SEP]: drawn plainer, they are never chosen for MLM.
    pub special: bool,
    pub chosen: Option<Chosen>,
}

impl Chip {
    /// CSS classes: segment, special, and the mark of an MLM position ("next" for a next-token
    /// one, which keeps its segment's colour).
    pub fn classes(&self) -> String {
        let mut c = String::from(match self.segment {
            Segment::A => "batch-chip seg-a",
            Segment::B => "batch-chip seg-b",
        });
        if self.special {
            c.push_str(" special");
        }
        match self.chosen.as_ref().map(|c| &c.mark) {
            Some(Some(mark)) => {
                c.push_str(" chosen ");
                c.push_str(mark.class());
            }
            Some(None) => c.push_str(" next"),
            None => {}
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

/// One example as a row of chips, with its NSP (MLM + NSP) or its next-token score.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub chips: Vec<Chip>,
    pub nsp: Option<Nsp>,
    /// Next token: "5/9 right", or on a Repeat row "copy 1: 2/11 right · copy 2: 11/11 right".
    pub score: Option<String>,
}

fn is_special(token: &str) -> bool {
    matches!(token, "[CLS]" | "[SEP]" | "[PAD]")
}

impl Row {
    pub fn new(example: &ExampleView) -> Row {
        let copies = Copies::of(&example.original);
        let mut chips: Vec<Chip> = example
            .tokens
            .iter()
            .enumerate()
            .map(|(p, token)| Chip {
                token: token.clone(),
                segment: match (copies, example.token_type_ids.get(p)) {
                    (Some(c), _) if c.second().contains(&p) => Segment::B,
                    (None, Some(&1)) => Segment::B,
                    _ => Segment::A,
                },
                special: is_special(example.original.get(p).unwrap_or(token)),
                chosen: None,
            })
            .collect();
        for (i, &p) in example.chosen.iter().enumerate() {
            let Some(chip) = chips.get_mut(p) else {
                continue;
            };
            let target = example.target.get(i).cloned().unwrap_or_default();
            let predicted = example.predicted.get(i).cloned().unwrap_or_default();
            let mark = example.replaced_by.get(i).map(|replaced| match replaced {
                Replacement::Mask => Mark::Mask,
                Replacement::Random => Mark::Random {
                    became: chip.token.clone(),
                },
                Replacement::Kept => Mark::Kept,
            });
            chip.chosen = Some(Chosen {
                right: !predicted.is_empty() && predicted == target,
                mark,
                target,
                predicted,
            });
        }
        let nsp = match (
            example.nsp_label,
            example.nsp_predicted,
            example.nsp_probability,
        ) {
            (Some(label), Some(predicted), Some(probability)) => Some(Nsp {
                label,
                predicted,
                probability,
            }),
            _ => None,
        };
        let score = nsp.is_none().then(|| match copies {
            Some(c) => {
                let [first, second] = copy_right(example, c);
                format!(
                    "copy 1: {}/{} right · copy 2: {}/{} right",
                    first.0, first.1, second.0, second.1
                )
            }
            None => {
                let (right, all) = example_right(example);
                format!("{right}/{all} right")
            }
        });
        Row { chips, nsp, score }
    }
}

/// The rows drawn (at most `limit`, the first ones) and how many more the batch holds.
pub fn rows(batch: &BatchView, limit: usize) -> (Vec<Row>, usize) {
    let shown = batch.examples.iter().take(limit).map(Row::new).collect();
    (shown, batch.examples.len().saturating_sub(limit))
}

/// (right, predicted) over an example's chosen positions.
fn example_right(e: &ExampleView) -> (usize, usize) {
    let right = e
        .target
        .iter()
        .zip(&e.predicted)
        .filter(|(target, predicted)| target == predicted)
        .count();
    (right, e.chosen.len())
}

/// (right, predicted) on a Repeat row's first copy and second copy: the positions whose next
/// token is the same copy's (the engine's copy accuracy, `engine::experiments::induction`).
fn copy_right(e: &ExampleView, copies: Copies) -> [(usize, usize); 2] {
    let mut counts = [(0, 0); 2];
    for (i, &p) in e.chosen.iter().enumerate() {
        let Some(copy) = copies.predicting_copy(p) else {
            continue;
        };
        counts[copy].1 += 1;
        if e.target.get(i) == e.predicted.get(i) {
            counts[copy].0 += 1;
        }
    }
    counts
}

/// The summary's score: "MLM 3/12 right"; for next token "next token 812/1344 right", and on
/// Repeat rows "· copy 2: 700/704 right".
pub fn score_text(batch: &BatchView) -> String {
    let (right, all) = batch
        .examples
        .iter()
        .map(example_right)
        .fold((0, 0), |(r, a), (x, y)| (r + x, a + y));
    match batch.objective {
        Objective::MlmNsp => format!("MLM {right}/{all} right"),
        Objective::NextToken => {
            let second = batch
                .examples
                .iter()
                .filter_map(|e| Some(copy_right(e, Copies::of(&e.original)?)[1]))
                .reduce(|(r, a), (x, y)| (r + x, a + y));
            let copies =
                second.map_or_else(String::new, |(r, a)| format!(" · copy 2: {r}/{a} right"));
            format!("next token {right}/{all} right{copies}")
        }
    }
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
            target: strings(&["dog", "cat", "runs"]),
            predicted: strings(&["dog", "the", "runs"]),
            nsp_label: Some(NspLabel::IsNext),
            nsp_predicted: Some(NspLabel::NotNext),
            nsp_probability: Some(0.634),
        }
    }

    /// A Repeat row, `[CLS] a b c a b c [SEP]`, as a next-token batch shows it: each position
    /// but the last predicts the token after it; the model gets b after a in
    /// the first copy, and the second copy's b and c.
    fn repeat_example() -> ExampleView {
        let tokens = strings(&["[CLS]", "a", "b", "c", "a", "b", "c", "[SEP]"]);
        ExampleView {
            input_ids: vec![2, 5, 6, 7, 5, 6, 7, 3],
            token_type_ids: vec![0; 8],
            original: tokens.clone(),
            chosen: (0..7).collect(),
            replaced_by: Vec::new(),
            target: tokens[1..].to_vec(),
            predicted: strings(&["b", "b", "a", "c", "b", "c", "[SEP]"]),
            tokens,
            nsp_label: None,
            nsp_predicted: None,
            nsp_probability: None,
        }
    }

    #[test]
    fn a_next_token_row_marks_each_guess_and_scores_each_copy() {
        let row = Row::new(&repeat_example());
        let classes: Vec<String> = row.chips.iter().map(Chip::classes).collect();
        // The first copy blue, the second orange; every position but [SEP] predicts.
        assert_eq!(
            classes,
            [
                "batch-chip seg-a special next",
                "batch-chip seg-a next",
                "batch-chip seg-a next",
                "batch-chip seg-a next",
                "batch-chip seg-b next",
                "batch-chip seg-b next",
                "batch-chip seg-b next",
                "batch-chip seg-a special",
            ]
        );
        let chosen = |p: usize| row.chips[p].chosen.clone().unwrap();
        assert_eq!(chosen(4).mark, None);
        assert_eq!((chosen(4).target.as_str(), chosen(4).right), ("b", true));
        assert_eq!(chosen(2).title(), "next is c, the model predicted a");
        assert!(row.nsp.is_none());
        // Copy 1 predicts b, c from a, b (1 right: a → b); copy 2 predicts b, c (both right).
        assert_eq!(
            row.score.as_deref(),
            Some("copy 1: 1/2 right · copy 2: 2/2 right")
        );
        let batch = BatchView {
            step: 3,
            objective: Objective::NextToken,
            fixed: false,
            examples: vec![repeat_example(); 2],
        };
        assert_eq!(
            score_text(&batch),
            "next token 8/14 right · copy 2: 4/4 right"
        );
        // A row that is not one segment twice: one score, no copies.
        let mut plain = repeat_example();
        plain.original[6] = "d".into();
        assert_eq!(Row::new(&plain).score.as_deref(), Some("4/7 right"));
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
        let mark = |p: usize| chosen(p).mark.unwrap();
        assert_eq!(mark(2).label(), "[MASK]");
        assert_eq!((chosen(2).target.as_str(), chosen(2).right), ("dog", true));
        assert_eq!(mark(5).label(), "random → sun");
        assert_eq!(
            (chosen(5).target.as_str(), chosen(5).predicted.as_str()),
            ("cat", "the")
        );
        assert_eq!(
            chosen(5).title(),
            "random → sun: was cat, the model predicted the"
        );
        assert!(!chosen(5).right);
        assert_eq!(mark(6), Mark::Kept);
        assert!(chosen(6).right);
        assert!(row.chips[1].chosen.is_none());
        let nsp = row.nsp.unwrap();
        assert!(!nsp.right());
        assert_eq!(nsp.predicted_text(), "predicted NotNext 63%");
        assert_eq!(nsp_name(nsp.label), "IsNext");
        assert!(row.score.is_none());
    }

    #[test]
    fn rows_are_capped_and_the_json_holds_every_example_with_the_contract_fields() {
        let batch = BatchView {
            step: 7,
            objective: Objective::MlmNsp,
            fixed: false,
            examples: vec![example(); 6],
        };
        let (shown, more) = rows(&batch, ROWS_SHOWN);
        assert_eq!((shown.len(), more), (4, 2));
        assert_eq!(score_text(&batch), "MLM 12/18 right");
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
        assert_eq!(e["target"], serde_json::json!(["dog", "cat", "runs"]));
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
