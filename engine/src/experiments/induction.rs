//! The Induction heads claim's measurements, on the Repeat task (`crate::repeat`): next-token
//! accuracy on each copy, and three scores per head averaged over the second copy's queries
//! (Olsson et al. 2022):
//!
//! - previous: the weight on the token just before the query;
//! - duplicate: the weight on the earlier occurrence of the query's token;
//! - induction: the weight on the token after that occurrence, the one to copy.
//!
//! An induction circuit is a previous-token head in one layer (each position learns what came
//! before it) and an induction head in a later one (matching that to the current token).

use crate::batch::Batch;
use crate::error::{EngineError, Result};
use crate::forward::{forward_with_head_mask, ForwardOptions, ForwardOutput, HeadMask, MlmScope};
use crate::repeat::{Copies, RepeatTask};
use crate::{BertForPreTraining, MaskMode, Matrix, Rng};
use serde::Serialize;

/// Rows of the evaluation batch: sequences the scores and accuracies are averaged over. Each
/// is a traced pass of its own, and the page measures again as the model trains, only while a
/// measurement stays under `protocol::claims::REMEASURE_PLAYING_MAX_MS`: 16 rows take about
/// 15 ms natively on tiny, and their scores' standard errors are stated with them.
pub const EVALUATION_ROWS: usize = 16;

/// A score a head must reach to be said to do its job (the and Olsson et al.'s
/// "clear" score): at least half its attention on the one key.
pub const CLEAR_SCORE: f64 = 0.5;

/// One head's three scores, each the mean weight over the second copy's queries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HeadScores {
    pub previous: f64,
    pub duplicate: f64,
    pub induction: f64,
}

impl HeadScores {
    /// Adds `f` of each of `other`'s scores to this one's.
    fn add(&mut self, other: HeadScores, f: impl Fn(f64) -> f64) {
        self.previous += f(other.previous);
        self.duplicate += f(other.duplicate);
        self.induction += f(other.induction);
    }

    /// The three scores in the heatmap's order: previous, duplicate, induction.
    pub fn as_array(self) -> [f64; 3] {
        [self.previous, self.duplicate, self.induction]
    }
}

/// The scores' names, in the order of `HeadScores::as_array` (the heatmap's columns and the
/// CLI's fields).
pub const SCORES: [&str; 3] = ["previous", "duplicate", "induction"];

/// One measurement of a model on the Repeat task.
#[derive(Clone, Debug, PartialEq)]
pub struct InductionMeasure {
    /// Next-token accuracy where the next token is the first copy's (x₂…x_L): chance, about
    /// 1/(alphabet − i) for a model that has learned the symbols are distinct.
    pub copy1_accuracy: f64,
    /// Next-token accuracy where the next token is the second copy's (x₂…x_L again): 1 for
    /// a model that copies.
    pub copy2_accuracy: f64,
    /// (L·H) each head's scores, layer by layer, head by head: index l·H + h.
    pub heads: Vec<HeadScores>,
    /// (L·H) the standard error of each score's mean over the rows, s/√rows: how far the
    /// mean could move on other sequences.
    pub standard_errors: Vec<HeadScores>,
    pub layers: usize,
    pub heads_per_layer: usize,
    /// Rows measured, and their segment length.
    pub rows: usize,
    pub len: usize,
}

/// `weights` (T, T) of one head on one row of segment length `copies.len`, rows the queries:
/// its scores, each averaged over the second copy's queries L + 1…2L.
pub fn head_scores(weights: &Matrix, copies: Copies) -> HeadScores {
    let queries = copies.second();
    let n = queries.clone().count() as f64;
    let mut sum = HeadScores::default();
    for q in queries {
        let (duplicate, induction) = copies.duplicate_and_induction(q);
        sum.previous += f64::from(weights.get(q, q - 1));
        sum.duplicate += f64::from(weights.get(q, duplicate));
        sum.induction += f64::from(weights.get(q, induction));
    }
    HeadScores {
        previous: sum.previous / n,
        duplicate: sum.duplicate / n,
        induction: sum.induction / n,
    }
}

/// (hits, counted) of the argmax against the next token, on the first copy's and the second
/// copy's predicting positions, from an evaluation pass whose logits are its labelled rows.
fn copy_hits(out: &ForwardOutput, batch: &Batch, copies: Copies) -> Result<[(usize, usize); 2]> {
    let logits = out
        .mlm_logits
        .as_ref()
        .ok_or_else(|| EngineError::Input("the pass computed no next-token logits".into()))?;
    let labels = batch
        .mlm_labels
        .as_ref()
        .ok_or_else(|| EngineError::Input("the Repeat batch has no labels".into()))?;
    let t = copies.tokens();
    let mut hits = [(0, 0); 2];
    for (&n, row) in out.mlm_rows.iter().zip(logits.rows()) {
        let (b, p) = (n / t, n % t);
        let Some(copy) = copies.predicting_copy(p) else {
            continue;
        };
        let best = (0..row.len())
            .max_by(|&x, &y| row[x].total_cmp(&row[y]).then(y.cmp(&x)))
            .unwrap_or(0);
        hits[copy].0 += usize::from(best as i64 == labels[[b, p]]);
        hits[copy].1 += 1;
    }
    Ok(hits)
}

fn evaluation(opts: &ForwardOptions, trace: bool) -> ForwardOptions {
    ForwardOptions {
        // A decoder's attention is causal whatever this says.
        mask: MaskMode::Causal,
        train: false,
        trace,
        mlm_scope: MlmScope::LabelledOnly,
        ..*opts
    }
}

fn ratio((hits, n): (usize, usize)) -> f64 {
    hits as f64 / n.max(1) as f64
}

fn shape(model: &BertForPreTraining) -> (usize, usize) {
    (
        model.config.num_hidden_layers,
        model.config.num_attention_heads,
    )
}

/// Measures `model` on `task`'s evaluation rows at its evaluation length: one traced pass per
/// row (the trace holds row 0 of a pass), no dropout.
pub fn measure(
    model: &BertForPreTraining,
    task: &RepeatTask,
    opts: &ForwardOptions,
) -> Result<InductionMeasure> {
    let (layers, heads) = shape(model);
    let copies = Copies {
        len: task.evaluation_len(),
    };
    let batch = task.evaluation_batch(EVALUATION_ROWS, copies.len)?;
    let opts = evaluation(opts, true);
    let keep = HeadMask::keep_all(layers, heads);
    // Each score's sum and sum of squares over the rows.
    let mut scores = vec![HeadScores::default(); layers * heads];
    let mut squares = vec![HeadScores::default(); layers * heads];
    let mut hits = [(0, 0); 2];
    for b in 0..EVALUATION_ROWS {
        let row = batch.rows(b..b + 1);
        let out = forward_with_head_mask(model, &row, &opts, &keep, &mut Rng::new(0))?;
        for (copy, (h, n)) in copy_hits(&out, &row, copies)?.into_iter().enumerate() {
            hits[copy].0 += h;
            hits[copy].1 += n;
        }
        let trace = out
            .trace
            .ok_or_else(|| EngineError::Input("the pass kept no trace".into()))?;
        let traced = trace.layers.iter().flat_map(|l| &l.heads);
        if traced.clone().count() != scores.len() {
            return Err(EngineError::Input(format!(
                "{} heads traced, {} expected",
                traced.count(),
                scores.len()
            )));
        }
        for ((sum, square), head) in scores.iter_mut().zip(&mut squares).zip(traced) {
            let s = head_scores(&head.weights, copies);
            sum.add(s, |v| v);
            square.add(s, |v| v * v);
        }
    }
    let rows = EVALUATION_ROWS as f64;
    // s² = (Σx² − (Σx)²/n)/(n − 1); standard error s/√n.
    let standard_error =
        |sum: f64, square: f64| ((square - sum * sum / rows).max(0.0) / (rows - 1.0) / rows).sqrt();
    let standard_errors = scores
        .iter()
        .zip(&squares)
        .map(|(s, q)| HeadScores {
            previous: standard_error(s.previous, q.previous),
            duplicate: standard_error(s.duplicate, q.duplicate),
            induction: standard_error(s.induction, q.induction),
        })
        .collect();
    let per_row = 1.0 / rows;
    Ok(InductionMeasure {
        copy1_accuracy: ratio(hits[0]),
        copy2_accuracy: ratio(hits[1]),
        heads: scores
            .into_iter()
            .map(|s| HeadScores {
                previous: s.previous * per_row,
                duplicate: s.duplicate * per_row,
                induction: s.induction * per_row,
            })
            .collect(),
        standard_errors,
        layers,
        heads_per_layer: heads,
        rows: EVALUATION_ROWS,
        len: copies.len,
    })
}

/// (right, counted) of next-token argmax on each copy of `rows` evaluation rows of segment
/// length `len`: one untraced pass, no dropout.
pub fn copy_accuracy(
    model: &BertForPreTraining,
    task: &RepeatTask,
    len: usize,
    rows: usize,
    opts: &ForwardOptions,
) -> Result<[(usize, usize); 2]> {
    let (layers, heads) = shape(model);
    let batch = task.evaluation_batch(rows, len)?;
    let keep = HeadMask::keep_all(layers, heads);
    let out = forward_with_head_mask(
        model,
        &batch,
        &evaluation(opts, false),
        &keep,
        &mut Rng::new(0),
    )?;
    copy_hits(&out, &batch, Copies { len })
}

/// The second copy's accuracy with each head ablated in turn (HF's head mask: its context set
/// to zero), index l·H + h: how much the copying needs that head.
pub fn ablations(
    model: &BertForPreTraining,
    task: &RepeatTask,
    opts: &ForwardOptions,
) -> Result<Vec<f64>> {
    let (layers, heads) = shape(model);
    let copies = Copies {
        len: task.evaluation_len(),
    };
    let batch = task.evaluation_batch(EVALUATION_ROWS, copies.len)?;
    let opts = evaluation(opts, false);
    (0..layers * heads)
        .map(|k| {
            let without = HeadMask::without(layers, heads, k / heads, k % heads);
            let out = forward_with_head_mask(model, &batch, &opts, &without, &mut Rng::new(0))?;
            Ok(ratio(copy_hits(&out, &batch, copies)?[1]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// A causal head of a row of segment length `len` that puts all its weight, for each
    /// query, on the key `pick` names (itself where `pick` says None).
    fn head(len: usize, pick: impl Fn(usize) -> Option<usize>) -> Matrix {
        let t = Copies { len }.tokens();
        let w = Array2::from_shape_fn((t, t), |(q, k)| {
            f32::from(u8::from(pick(q).unwrap_or(q) == k))
        });
        Matrix::from_view(w.view())
    }

    #[test]
    fn a_perfect_induction_head_scores_one_and_nothing_else() {
        let c = Copies { len: 6 };
        let w = head(6, |q| (q > 6).then(|| c.duplicate_and_induction(q).1));
        let s = head_scores(&w, c);
        assert_eq!(s.induction, 1.0);
        assert_eq!(s.previous, 0.0);
        assert_eq!(s.duplicate, 0.0);
    }

    #[test]
    fn a_previous_token_head_and_a_duplicate_head_score_one_on_their_own_score() {
        let c = Copies { len: 5 };
        let previous = head_scores(&head(5, |q| q.checked_sub(1)), c);
        assert_eq!(
            (previous.previous, previous.duplicate, previous.induction),
            (1.0, 0.0, 0.0)
        );
        let duplicate = head_scores(&head(5, |q| (q > 5).then(|| q - 5)), c);
        // The second copy's first query (L + 1) has its duplicate at 1, which is not L back.
        assert_eq!(
            (duplicate.previous, duplicate.duplicate, duplicate.induction),
            (0.0, 1.0, 0.0)
        );
    }

    #[test]
    fn a_uniform_head_scores_one_over_t() {
        let c = Copies { len: 7 };
        let t = c.tokens();
        let w = Matrix::from_view(Array2::from_elem((t, t), 1.0 / t as f32).view());
        let s = head_scores(&w, c);
        for score in [s.previous, s.duplicate, s.induction] {
            assert!(
                (score - 1.0 / t as f64).abs() < 1e-7,
                "{score} against 1/{t}"
            );
        }
    }

    #[test]
    fn a_fresh_model_copies_at_chance_and_has_no_clear_head() {
        let task = RepeatTask::default();
        let config = crate::BertConfig::tiny(task.vocab().unwrap().len()).decoder();
        let model = BertForPreTraining::init(&config, &mut Rng::new(0)).unwrap();
        let m = measure(&model, &task, &ForwardOptions::training(MaskMode::Causal)).unwrap();
        assert_eq!((m.layers, m.heads_per_layer, m.heads.len()), (2, 4, 8));
        assert!(m.copy2_accuracy < 0.2, "{m:?}");
        assert!(m
            .heads
            .iter()
            .all(|h| h.induction < CLEAR_SCORE && h.previous < CLEAR_SCORE));
        let ablated =
            ablations(&model, &task, &ForwardOptions::training(MaskMode::Causal)).unwrap();
        assert_eq!(ablated.len(), 8);
    }
}
