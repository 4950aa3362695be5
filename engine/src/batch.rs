//! What one forward call consumes: token ids with their masks and, for training, labels, and the
//! batch JSON file that hands one to `attention-lab train --batch`.

use crate::error::{EngineError, Result};
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

/// HF's causal-LM labels (the input ids, −100 on padding) as the engine's per-position
/// targets: position t predicts `labels[t + 1]`; the last position predicts nothing. This is
/// the shift `BertLMHeadModel`'s loss makes (it drops the last logit and the first label).
pub fn shift_labels(labels: &Array2<i64>) -> Array2<i64> {
    let (b, t) = labels.dim();
    Array2::from_shape_fn((b, t), |(r, p)| {
        if p + 1 < t {
            labels[[r, p + 1]]
        } else {
            IGNORE_INDEX
        }
    })
}

#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    pub input_ids: Array2<u32>,      // (B, T)
    pub token_type_ids: Array2<u32>, // (B, T)
    /// 1 = real token, 0 = padding.
    pub attention_mask: Array2<u8>, // (B, T)
    /// The LM head's target at each position, IGNORE_INDEX where there is none: for MLM the
    /// original id at masked positions; for next-token training (a decoder) the id at t + 1
    /// (`data::shift_labels` of HF's `labels`).
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

    /// Rows `rows` (clamped to the batch) of every field; T unchanged.
    pub fn rows(&self, rows: std::ops::Range<usize>) -> Batch {
        let end = rows.end.min(self.batch_size());
        let rows = rows.start.min(end)..end;
        let cut = |a: &Array2<u32>| a.slice(ndarray::s![rows.clone(), ..]).to_owned();
        Batch {
            input_ids: cut(&self.input_ids),
            token_type_ids: cut(&self.token_type_ids),
            attention_mask: self
                .attention_mask
                .slice(ndarray::s![rows.clone(), ..])
                .to_owned(),
            mlm_labels: self
                .mlm_labels
                .as_ref()
                .map(|l| l.slice(ndarray::s![rows.clone(), ..]).to_owned()),
            nsp_labels: self
                .nsp_labels
                .as_ref()
                .map(|l| l.slice(ndarray::s![rows.clone()]).to_owned()),
        }
    }
}

/// A batch as JSON: `{"input_ids": [[…]] (B×T), "token_type_ids"?, "attention_mask"?,
/// "mlm_labels"?, "nsp_labels"?}`, or the reference fixtures' `{"batch": {…}, …}`. For
/// next-token training, `"labels"` instead of `"mlm_labels"`: HF's unshifted labels (the
/// input ids, −100 where no loss), which `BertLMHeadModel` takes and shifts.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchFile {
    input_ids: Vec<Vec<u32>>,
    token_type_ids: Option<Vec<Vec<u32>>>,
    attention_mask: Option<Vec<Vec<u8>>>,
    mlm_labels: Option<Vec<Vec<i64>>>,
    nsp_labels: Option<Vec<u32>>,
    labels: Option<Vec<Vec<i64>>>,
}

impl Batch {
    /// Parses a batch JSON file. Shapes are checked here; ids against a model's sizes are
    /// checked by `forward` (they depend on the model).
    pub fn from_json(text: &str) -> Result<Batch> {
        let bad = |m: String| EngineError::Input(m);
        let mut value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        if value.get("input_ids").is_none() {
            if let Some(inner) = value.get_mut("batch") {
                value = inner.take();
            }
        }
        let file: BatchFile =
            serde_json::from_value(value).map_err(|e| bad(format!("not a batch: {e}")))?;
        let (b, t) = (
            file.input_ids.len(),
            file.input_ids.first().map_or(0, Vec::len),
        );
        if b == 0 || t == 0 {
            return Err(bad(
                "input_ids is empty: a batch needs at least one token".into()
            ));
        }
        fn matrix<T: Clone>(
            name: &str,
            rows: Vec<Vec<T>>,
            (b, t): (usize, usize),
        ) -> std::result::Result<Array2<T>, String> {
            if rows.len() != b || rows.iter().any(|r| r.len() != t) {
                return Err(format!(
                    "{name} must be {b} lists of {t} numbers, like input_ids"
                ));
            }
            Ok(Array2::from_shape_vec((b, t), rows.concat()).expect("rectangular"))
        }
        let input_ids = matrix("input_ids", file.input_ids, (b, t)).map_err(bad)?;
        let token_type_ids = match file.token_type_ids {
            Some(rows) => matrix("token_type_ids", rows, (b, t)).map_err(bad)?,
            None => Array2::zeros((b, t)),
        };
        let attention_mask = match file.attention_mask {
            Some(rows) => matrix("attention_mask", rows, (b, t)).map_err(bad)?,
            None => Array2::ones((b, t)),
        };
        let mlm_labels = match (file.mlm_labels, file.labels) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "both mlm_labels (MLM) and labels (next token): give one".into(),
                ))
            }
            (Some(rows), None) => Some(matrix("mlm_labels", rows, (b, t)).map_err(bad)?),
            (None, Some(rows)) => Some(shift_labels(&matrix("labels", rows, (b, t)).map_err(bad)?)),
            (None, None) => None,
        };
        if let Some(&l) = mlm_labels
            .iter()
            .flatten()
            .find(|&&l| l < 0 && l != IGNORE_INDEX)
        {
            return Err(bad(format!(
                "the labels have {l}: use {IGNORE_INDEX} for positions without a label"
            )));
        }
        let nsp_labels = file.nsp_labels.map(Array1::from);
        if mlm_labels.is_none() && nsp_labels.is_none() {
            return Err(bad(
                "no mlm_labels, labels or nsp_labels: nothing to train on".into(),
            ));
        }
        Ok(Batch {
            input_ids,
            token_type_ids,
            attention_mask,
            mlm_labels,
            nsp_labels,
        })
    }
}
