//! What one forward call consumes: token ids with their masks and, for training, labels.

use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};

/// Label value meaning "no MLM loss at this position", as in PyTorch's CrossEntropyLoss.
pub const IGNORE_INDEX: i64 = -100;

/// Which additive mask M goes into softmax(QKᵀ/√d_k + M). Chosen per forward call, never
/// baked into weights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MaskMode {
    /// No mask at all: every query sees every key, padding included.
    None,
    /// Keys at padding positions (attention_mask = 0) get −∞: BERT's own mask.
    #[default]
    Padding,
    /// Padding plus lower-triangular: query i sees keys j ≤ i only.
    Causal,
}

impl MaskMode {
    /// M[i][j] for one sequence: 0 where query i may attend to key j, −∞ elsewhere.
    pub fn allows(self, attention_mask: &[u8], i: usize, j: usize) -> bool {
        match self {
            MaskMode::None => true,
            MaskMode::Padding => attention_mask[j] != 0,
            MaskMode::Causal => attention_mask[j] != 0 && j <= i,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    pub input_ids: Array2<u32>,      // (B, T)
    pub token_type_ids: Array2<u32>, // (B, T)
    /// 1 = real token, 0 = padding.
    pub attention_mask: Array2<u8>, // (B, T)
    /// Original id at masked positions, IGNORE_INDEX elsewhere.
    pub mlm_labels: Option<Array2<i64>>, // (B, T)
    /// 0 = IsNext, 1 = NotNext (HF's convention).
    pub nsp_labels: Option<Array1<u32>>, // (B,)
}

impl Batch {
    pub fn batch_size(&self) -> usize {
        self.input_ids.nrows()
    }
    pub fn seq_len(&self) -> usize {
        self.input_ids.ncols()
    }
}
