//! The MLM head, LN(GELU(dense(x)))·word_embeddingsᵀ + bias, on the rows it runs on, and
//! the cache its backward reads. (The pooler and the NSP head are one dense each: inline in
//! `forward`.)

use super::{linear_forward, ln_forward};
use crate::model::BertForPreTraining;
use crate::ops::layernorm::LayerNormCache;
use crate::ops::{gelu, linear};
use ndarray::{Array2, Axis};

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
/// logits (M, V) = LN(GELU(h·W_tᵀ + b_t))·word_embeddingsᵀ + bias over the rows `rows`.
pub(crate) fn mlm_head_forward(
    model: &BertForPreTraining,
    hidden: &Array2<f32>,
    rows: &[usize],
) -> (Array2<f32>, MlmHeadCache) {
    let cls = model.cls.as_ref().expect("called with heads");
    let transform = &cls.predictions.transform;
    let input = hidden.select(Axis(0), rows); // (M, C)
    let dense_out = linear_forward(input.view(), &transform.dense);
    let activated = gelu::forward(dense_out.view());
    let (transformed, ln) = ln_forward(
        activated.view(),
        &transform.layer_norm,
        model.config.layer_norm_eps,
    );
    let logits = linear::forward(
        transformed.view(),
        model.bert.embeddings.word_embeddings.view(),
        cls.predictions.bias.view(),
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
