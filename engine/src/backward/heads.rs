//! The pre-training heads' backward, from each loss to dL/d(the hidden rows it read), added
//! into dL/d(hidden) (N, C): the pooler and NSP head (inline in `forward`) and the MLM head
//! (`forward/heads.rs`), read bottom to top.

use super::{linear_backward, ln_backward, take, BackwardScratch};
use crate::batch::Batch;
use crate::forward::{mlm_targets, ForwardOutput, MlmHeadCache};
use crate::model::{BertForPreTraining, BertModel, BertPreTrainingHeads};
use crate::ops::linear::{self, Write};
use crate::ops::{gelu, loss, tanh};
use ndarray::{s, Array1, Array2, ArrayView2};

/// NSP: logits = pooled·W_sᵀ + b_s, pooled = tanh(h_[CLS]·W_pᵀ + b_p). Adds dL/d(h_[CLS])
/// into the [CLS] rows of `d_hidden` (N, C). `nsp_lse`: the logits rows' log-sum-exp (B).
pub(super) fn nsp_backward(
    (model, cls): (&BertForPreTraining, &BertPreTrainingHeads),
    (g_bert, g_cls): (&mut BertModel, &mut BertPreTrainingHeads),
    batch: &Batch,
    out: &ForwardOutput,
    nsp_lse: &Array1<f32>,
    d_hidden: &mut Array2<f32>,
) {
    let (Some(pooler), Some(g_pooler), Some(nsp), Some(g_nsp)) = (
        &model.bert.pooler,
        g_bert.pooler.as_mut(),
        &cls.seq_relationship,
        g_cls.seq_relationship.as_mut(),
    ) else {
        unreachable!("an NSP loss implies a pooler and an NSP head (checked in check_shapes)")
    };
    let (pooled, logits) = (
        out.pooled.as_ref().expect("NSP loss"),
        out.nsp_logits.as_ref().expect("NSP loss"),
    );
    let targets: Vec<i64> = batch
        .nsp_labels
        .as_ref()
        .expect("NSP loss")
        .iter()
        .map(|&l| l as i64)
        .collect();
    let mut d_logits = Array2::zeros(logits.raw_dim()); // (B, 2)
    loss::backward(
        &mut d_logits.view_mut(),
        logits.view(),
        &targets,
        nsp_lse.view(),
        1.0,
        out.cache.loss_counts.nsp,
    );
    let mut d_pooled = Array2::zeros(pooled.raw_dim()); // (B, C)
    linear_backward(
        Some((&mut d_pooled, Write::Add)),
        g_nsp,
        d_logits.view(),
        pooled.view(),
        nsp,
    );
    let mut d_pre = Array2::zeros(pooled.raw_dim());
    tanh::backward(&mut d_pre.view_mut(), d_pooled.view(), pooled.view());
    let cls_rows = out.cache.cls_rows.as_ref().expect("pooler ran");
    let mut d_cls = Array2::zeros(cls_rows.raw_dim()); // (B, C)
    linear_backward(
        Some((&mut d_cls, Write::Add)),
        &mut g_pooler.dense,
        d_pre.view(),
        cls_rows.view(),
        &pooler.dense,
    );
    let mut d_cls_rows = d_hidden.slice_mut(s![..;batch.seq_len(), ..]);
    d_cls_rows += &d_cls;
}

/// MLM: the loss's gradient on the logits (M, V), through the head, added into the rows of
/// `d_hidden` (N, C) the head read. `mlm_lse`: the logits rows' log-sum-exp (M).
pub(super) fn mlm_backward(
    model: &BertForPreTraining,
    (g_bert, g_cls): (&mut BertModel, &mut BertPreTrainingHeads),
    batch: &Batch,
    out: &ForwardOutput,
    mlm_lse: &Array1<f32>,
    d_hidden: &mut Array2<f32>,
    scratch: &mut BackwardScratch,
) {
    let head = out.cache.mlm_head.as_ref().expect("MLM head ran");
    let logits = out.mlm_logits.as_ref().expect("MLM head ran");
    let targets = mlm_targets(batch.mlm_labels.as_ref().expect("MLM loss"), &out.mlm_rows);
    let mut d_logits = take(&mut scratch.mlm_logits, logits.raw_dim()); // (M, V)
    d_logits.fill(0.0);
    loss::backward(
        &mut d_logits.view_mut(),
        logits.view(),
        &targets,
        mlm_lse.view(),
        1.0,
        out.cache.loss_counts.mlm,
    );
    let d_input = mlm_head_backward(model, g_bert, g_cls, head, d_logits.view(), scratch);
    for (d_row, &n) in d_input.rows().into_iter().zip(&out.mlm_rows) {
        let mut row = d_hidden.row_mut(n);
        row += &d_row;
    }
    (scratch.mlm_logits, scratch.mlm_input) = (d_logits, d_input);
}

/// Returns dL/d(hidden rows the head read) (M, C).
fn mlm_head_backward(
    model: &BertForPreTraining,
    g_bert: &mut BertModel,
    g_cls: &mut BertPreTrainingHeads,
    head: &MlmHeadCache,
    d_logits: ArrayView2<f32>,
    scratch: &mut BackwardScratch,
) -> Array2<f32> {
    let predictions = &model.cls.as_ref().expect("MLM head ran").predictions;
    let transform = &predictions.transform;
    let g_transform = &mut g_cls.predictions.transform;
    // Tied decoder: logits = transformed·Eᵀ + bias, so dE gets doutᵀ·transformed.
    let mut d_transformed = take(&mut scratch.mlm_transformed, head.transformed.raw_dim());
    linear::backward(
        Some((&mut d_transformed.view_mut(), Write::Over)),
        &mut g_bert.embeddings.word_embeddings.view_mut(),
        &mut g_cls.predictions.bias.view_mut(),
        d_logits,
        head.transformed.view(),
        model.bert.embeddings.word_embeddings.view(),
    );
    // In place, (M, C): dL/d(LN output), of its input (the GELU's output), of the GELU's input.
    let mut d_dense_out = d_transformed;
    ln_backward(
        &mut d_dense_out,
        &mut g_transform.layer_norm,
        head.activated.view(),
        &transform.layer_norm,
        &head.ln,
    );
    gelu::backward(&mut d_dense_out.view_mut(), head.dense_out.view());
    let mut d_input = take(&mut scratch.mlm_input, head.input.raw_dim()); // (M, C)
    linear_backward(
        Some((&mut d_input, Write::Over)),
        &mut g_transform.dense,
        d_dense_out.view(),
        head.input.view(),
        &transform.dense,
    );
    scratch.mlm_transformed = d_dense_out;
    d_input
}
