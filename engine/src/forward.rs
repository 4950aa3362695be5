//! The forward pass of `BertForPreTraining`, with an optional attention trace and the losses.
//! (Owned by the engine-core work: see the issue for the full contract.)

use crate::batch::{Batch, MaskMode};
use crate::trace::AttentionTrace;
use ndarray::Array2;

/// Where the MLM head runs. Training only needs the labelled positions (same loss and
/// gradients, a fraction of the V-wide decoder's FLOPs); inspection wants every position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlmScope {
    AllPositions,
    LabelledOnly,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForwardOptions {
    pub mask: MaskMode,
    /// Dropout on (rates from the config) when true; off for inspection and fixtures.
    pub train: bool,
    /// Record an `AttentionTrace` for batch row 0. Off in training: costs nothing then.
    pub trace: bool,
    pub mlm_scope: MlmScope,
}

/// BertForPreTraining's loss: mean MLM cross-entropy over labelled positions plus mean NSP
/// cross-entropy over the batch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Losses {
    pub total: f32,
    pub mlm: f32,
    pub nsp: f32,
    /// Fraction of labelled positions whose argmax equals the label.
    pub mlm_accuracy: f32,
    /// Fraction of examples whose NSP argmax equals the label.
    pub nsp_accuracy: f32,
}

pub struct ForwardOutput {
    pub hidden: Array2<f32>,              // (N, C) last layer, N = B·T
    pub pooled: Option<Array2<f32>>,      // (B, C) when the model has a pooler
    pub mlm_logits: Option<Array2<f32>>,  // (N, V) or (M, V) for MlmScope::LabelledOnly
    pub mlm_rows: Vec<usize>,             // which of the N rows `mlm_logits` holds
    pub nsp_logits: Option<Array2<f32>>,  // (B, 2)
    pub losses: Option<Losses>,           // when the batch has labels and the model has heads
    pub trace: Option<AttentionTrace>,
}
