//! The batch of a training step as the page shows it: what the model saw, the positions it was
//! trained to predict (for MLM, those `make_batch` chose, and what it did to each; for next
//! token, every position that has a next token), and what the model predicted there; and the
//! running counts that check `make_batch`'s recipe (15% chosen, 80/10/10, IsNext half the pairs).
//! Plain, serialisable data; the JSON field names are the page's `data-batch` contract.

use crate::batch::Batch;
use crate::data::{BatchRecord, Replacement, IS_NEXT};
use crate::objective::Objective;
use crate::tokenizer::Tokenizer;
use serde::{Deserialize, Serialize};

/// An NSP label, written as the tutorial prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NspLabel {
    IsNext,
    NotNext,
}

impl NspLabel {
    /// From HF's convention: 0 = IsNext, 1 = NotNext.
    pub fn from_id(id: u32) -> Self {
        if id == IS_NEXT {
            NspLabel::IsNext
        } else {
            NspLabel::NotNext
        }
    }
}

/// One example (row) of the batch. Token lists cover its real tokens, `[CLS] A [SEP] B [SEP]`
/// (the padding after them is left out); positions index them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExampleView {
    /// The ids the model saw (after masking): the batch's row, without its padding.
    pub input_ids: Vec<u32>,
    /// Segment of each token: 0 = A (with [CLS] and the first [SEP]), 1 = B.
    pub token_type_ids: Vec<u32>,
    /// `input_ids` as strings: what the model saw.
    pub tokens: Vec<String>,
    /// The tokens before masking.
    pub original: Vec<String>,
    /// The positions trained to predict, ascending: for MLM, those chosen; for next token,
    /// every position with a token after it.
    pub chosen: Vec<usize>,
    /// MLM: what each chosen position became, "mask", "random" or "kept", one per `chosen`.
    /// Empty for next token, which replaces nothing.
    pub replaced_by: Vec<Replacement>,
    /// The token each position of `chosen` is trained to predict, one per `chosen` (its
    /// label): for MLM the original token there, for next token the one after it.
    pub target: Vec<String>,
    /// The model's argmax token at each chosen position, one per `chosen`: from a forward pass
    /// without dropout through the weights the step left (`train::predict`), made when the
    /// view is.
    pub predicted: Vec<String>,
    /// NSP (MLM + NSP only): the pair's label, the head's argmax and its softmax probability.
    pub nsp_label: Option<NspLabel>,
    pub nsp_predicted: Option<NspLabel>,
    pub nsp_probability: Option<f32>,
}

/// The batch of one training step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchView {
    /// The step this batch was trained on (1 for the first).
    pub step: u64,
    /// What the step trained: MLM + NSP, or the next token.
    pub objective: Objective,
    /// Trained on again and again ("Fixed batch").
    pub fixed: bool,
    pub examples: Vec<ExampleView>,
}

/// What the model predicts on a step's batch (`train::predict`), to build a `BatchView`: the
/// MLM argmax at each labelled position and the NSP softmax of each row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepPredictions {
    /// (n, id): row n = b·T + t of the batch, the argmax token id of its MLM logits; n ascending.
    pub mlm: Vec<(usize, u32)>,
    /// softmax of each row's NSP logits, [IsNext, NotNext] (B); empty without an NSP head.
    pub nsp: Vec<[f32; 2]>,
}

/// Running counts over every batch `make_batch` drew in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MaskingCounts {
    /// Real, non-special tokens: those that could be chosen.
    pub eligible_tokens: u64,
    pub chosen: u64,
    /// Of the chosen: replaced by [MASK], by a random token, left as they were.
    pub masked: u64,
    pub random: u64,
    pub kept: u64,
    /// Pairs by NSP label.
    pub is_next: u64,
    pub not_next: u64,
}

/// 100·part/whole, 0 for an empty whole.
fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl MaskingCounts {
    /// Adds one batch as `make_batch` built it.
    pub fn add(&mut self, batch: &Batch, record: &BatchRecord) {
        for row in &record.rows {
            self.eligible_tokens += row.eligible as u64;
            self.chosen += row.chosen.len() as u64;
            for r in &row.replaced_by {
                match r {
                    Replacement::Mask => self.masked += 1,
                    Replacement::Random => self.random += 1,
                    Replacement::Kept => self.kept += 1,
                }
            }
        }
        for &label in batch.nsp_labels.iter().flatten() {
            match NspLabel::from_id(label) {
                NspLabel::IsNext => self.is_next += 1,
                NspLabel::NotNext => self.not_next += 1,
            }
        }
    }

    /// Share of the eligible tokens chosen for MLM (target: the mask probability, 15%).
    pub fn chosen_percent(&self) -> f64 {
        percent(self.chosen, self.eligible_tokens)
    }
    /// Share of the chosen replaced by [MASK] (target 80%).
    pub fn masked_percent(&self) -> f64 {
        percent(self.masked, self.chosen)
    }
    /// Share of the chosen replaced by a random token (target 10%).
    pub fn random_percent(&self) -> f64 {
        percent(self.random, self.chosen)
    }
    /// Share of the chosen left as they were (target 10%).
    pub fn kept_percent(&self) -> f64 {
        percent(self.kept, self.chosen)
    }
    /// Share of the pairs labelled IsNext (target 50%).
    pub fn is_next_percent(&self) -> f64 {
        percent(self.is_next, self.is_next + self.not_next)
    }
}

impl BatchView {
    /// The view of `batch`, built as `record` says, with what the model predicts on it.
    pub fn new(
        step: u64,
        objective: Objective,
        fixed: bool,
        batch: &Batch,
        record: &BatchRecord,
        predictions: &StepPredictions,
        tokenizer: &Tokenizer,
    ) -> BatchView {
        let t = batch.seq_len();
        let vocab = tokenizer.vocab();
        let name = |id: u32| {
            vocab
                .token(id)
                .map_or_else(|| format!("[id {id}]"), str::to_string)
        };
        let examples = record
            .rows
            .iter()
            .enumerate()
            .map(|(b, row)| {
                let len = batch
                    .attention_mask
                    .row(b)
                    .iter()
                    .filter(|&&m| m != 0)
                    .count();
                let input_ids: Vec<u32> =
                    batch.input_ids.row(b).iter().take(len).copied().collect();
                let labels = batch.mlm_labels.as_ref();
                let label = |p: usize| labels.map_or(-1, |l| l[[b, p]]);
                // MLM: the positions `make_batch` chose; next token: every labelled one.
                let chosen: Vec<usize> = match objective {
                    Objective::MlmNsp => row.chosen.clone(),
                    Objective::NextToken => (0..len).filter(|&p| label(p) >= 0).collect(),
                };
                let target = chosen
                    .iter()
                    .map(|&p| u32::try_from(label(p)).map_or_else(|_| String::new(), name))
                    .collect();
                let predicted = chosen
                    .iter()
                    .map(|&p| {
                        let n = b * t + p;
                        // Rows are ascending (`ForwardOutput::mlm_rows`).
                        let found = predictions.mlm.binary_search_by_key(&n, |&(m, _)| m);
                        found.map_or_else(|_| String::new(), |i| name(predictions.mlm[i].1))
                    })
                    .collect();
                let nsp = batch.nsp_labels.as_ref().map(|l| {
                    let [is_next, not_next] = predictions.nsp.get(b).copied().unwrap_or([0.5, 0.5]);
                    let (predicted, probability) = if is_next >= not_next {
                        (NspLabel::IsNext, is_next)
                    } else {
                        (NspLabel::NotNext, not_next)
                    };
                    (NspLabel::from_id(l[b]), predicted, probability)
                });
                ExampleView {
                    tokens: input_ids.iter().map(|&id| name(id)).collect(),
                    original: row.original[..len].iter().map(|&id| name(id)).collect(),
                    input_ids,
                    token_type_ids: batch
                        .token_type_ids
                        .row(b)
                        .iter()
                        .take(len)
                        .copied()
                        .collect(),
                    chosen,
                    replaced_by: row.replaced_by.clone(),
                    target,
                    predicted,
                    nsp_label: nsp.map(|n| n.0),
                    nsp_predicted: nsp.map(|n| n.1),
                    nsp_probability: nsp.map(|n| n.2),
                }
            })
            .collect();
        BatchView {
            step,
            objective,
            fixed,
            examples,
        }
    }
}
