//! The MLM head, LN(GELU(dense(x)))·word_embeddingsᵀ + bias, on the rows it runs on, and
//! the cache its backward reads; the heads' losses. (The pooler and the NSP head are one dense
//! each: inline in `forward`.)

use super::{gelu_reusing, linear_reusing, ln_reusing, LossCounts, Losses, MlmScope};
use crate::batch::{Batch, IGNORE_INDEX};
use crate::model::BertForPreTraining;
use crate::ops::layernorm::LayerNormCache;
use crate::ops::{linear, loss, reuse};
use ndarray::{Array1, Array2};

#[derive(Default)]
pub(crate) struct MlmHeadCache {
    pub(crate) input: Array2<f32>, // (M, C) hidden rows `mlm_rows`, dense input
    pub(crate) dense_out: Array2<f32>, // (M, C) GELU input
    pub(crate) activated: Array2<f32>, // (M, C) GELU output, LN input
    pub(crate) ln: LayerNormCache,
    pub(crate) transformed: Array2<f32>, // (M, C) LN output, decoder input
}
/// Labels of the rows the MLM head ran on (IGNORE_INDEX where unlabelled).
pub(crate) fn mlm_targets(labels: &Array2<i64>, rows: &[usize]) -> Vec<i64> {
    let t = labels.ncols();
    rows.iter().map(|&n| labels[[n / t, n % t]]).collect()
}
/// logits (M, V) = LN(GELU(h·W_tᵀ + b_t))·word_embeddingsᵀ + bias over the rows `rows`,
/// written into the buffers of `spare`, an earlier call's logits and cache (`ops::reuse`).
pub(crate) fn mlm_head_forward(
    model: &BertForPreTraining,
    hidden: &Array2<f32>,
    rows: &[usize],
    (spare_logits, spare): (Array2<f32>, MlmHeadCache),
) -> (Array2<f32>, MlmHeadCache) {
    let cls = model.cls.as_ref().expect("called with heads");
    let transform = &cls.predictions.transform;
    let mut input = reuse(spare.input, (rows.len(), hidden.ncols())); // (M, C)
    for (mut dst, &n) in input.rows_mut().into_iter().zip(rows) {
        dst.assign(&hidden.row(n));
    }
    let dense_out = linear_reusing(input.view(), &transform.dense, spare.dense_out);
    let activated = gelu_reusing(dense_out.view(), spare.activated);
    let (transformed, ln) = ln_reusing(
        activated.view(),
        &transform.layer_norm,
        model.config.layer_norm_eps,
        (spare.transformed, spare.ln),
    );
    let words = model.bert.embeddings.word_embeddings.view();
    let mut logits = reuse(spare_logits, (rows.len(), words.nrows()));
    linear::forward_into(
        transformed.view(),
        words,
        cls.predictions.bias.view(),
        &mut logits.view_mut(),
    );
    (
        logits,
        MlmHeadCache {
            input,
            dense_out,
            activated,
            ln,
            transformed,
        },
    )
}

/// The rows (of N) the MLM head runs on: every one, or those with a label.
pub(super) fn mlm_rows(scope: MlmScope, batch: &Batch) -> Vec<usize> {
    match (scope, &batch.mlm_labels) {
        (MlmScope::AllPositions, _) => (0..batch.batch_size() * batch.seq_len()).collect(),
        (MlmScope::LabelledOnly, Some(labels)) => labels
            .iter()
            .enumerate()
            .filter(|(_, &l)| l != IGNORE_INDEX)
            .map(|(n, _)| n)
            .collect(),
        (MlmScope::LabelledOnly, None) => Vec::new(),
    }
}

/// The losses, from whichever labels the batch has and heads the model has, each mean divided
/// by the whole batch's `counts`; and the log-sum-exp of each loss's logits rows, (M) and (B),
/// which backward reads.
pub(super) fn losses(
    batch: &Batch,
    (mlm_logits, mlm_rows): (Option<&Array2<f32>>, &[usize]), // (M, V), which rows of N
    nsp_logits: Option<&Array2<f32>>,                         // (B, 2)
    counts: LossCounts,
) -> (Option<Losses>, Option<Array1<f32>>, Option<Array1<f32>>) {
    let mlm_ce = mlm_logits
        .zip(batch.mlm_labels.as_ref())
        .map(|(logits, labels)| {
            let targets = mlm_targets(labels, mlm_rows);
            loss::forward(logits.view(), &targets, counts.mlm)
        });
    let nsp_ce = nsp_logits
        .zip(batch.nsp_labels.as_ref())
        .map(|(logits, labels)| {
            let targets: Vec<i64> = labels.iter().map(|&l| l as i64).collect();
            loss::forward(logits.view(), &targets, counts.nsp)
        });
    let losses = (mlm_ce.is_some() || nsp_ce.is_some()).then(|| {
        let mlm = mlm_ce.as_ref().map(|(ce, _)| *ce).unwrap_or_default();
        let nsp = nsp_ce.as_ref().map(|(ce, _)| *ce).unwrap_or_default();
        Losses {
            total: mlm.loss + nsp.loss,
            mlm: mlm.loss,
            nsp: nsp.loss,
            mlm_accuracy: mlm.accuracy(),
            nsp_accuracy: nsp.accuracy(),
        }
    });
    (
        losses,
        mlm_ce.map(|(_, lse)| lse),
        nsp_ce.map(|(_, lse)| lse),
    )
}
