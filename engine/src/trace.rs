//! The plain data a forward call can record for the visualiser: every intermediate of
//! attention, per layer and per head. Owned, serialisable, and free of ndarray so the app
//! can draw it without knowing the engine's internals.

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

/// A row-major matrix. In `mask` and `masked`, −∞ marks a masked entry; JSON writes it as null.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    #[serde(with = "nullable_floats")]
    pub data: Vec<f32>,
}

impl Matrix {
    pub fn from_view(a: ArrayView2<f32>) -> Self {
        Matrix {
            rows: a.nrows(),
            cols: a.ncols(),
            data: a.iter().copied().collect(),
        }
    }
    pub fn get(&self, row: usize, col: usize) -> f32 {
        self.data[row * self.cols + col]
    }
    pub fn row(&self, row: usize) -> &[f32] {
        &self.data[row * self.cols..(row + 1) * self.cols]
    }
    /// Rows as nested vectors, for JSON consumers that want `[[...], ...]`.
    pub fn to_rows(&self) -> Vec<Vec<f32>> {
        (0..self.rows).map(|r| self.row(r).to_vec()).collect()
    }
    /// Smallest and largest finite entry, for colour scales.
    pub fn finite_range(&self) -> Option<(f32, f32)> {
        let mut it = self.data.iter().copied().filter(|x| x.is_finite());
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x))))
    }
}

/// One head of one layer, for one sequence. T×D for q/k/v/context, T×T for the rest;
/// row = query token, column = key token.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeadTrace {
    pub q: Matrix,
    pub k: Matrix,
    pub v: Matrix,
    /// QKᵀ
    pub scores: Matrix,
    /// QKᵀ/√d_k
    pub scaled: Matrix,
    /// M: 0 or −∞
    pub mask: Matrix,
    /// QKᵀ/√d_k + M
    pub masked: Matrix,
    /// softmax(QKᵀ/√d_k + M), before dropout
    pub weights: Matrix,
    /// weights·V
    pub context: Matrix,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayerTrace {
    /// X, the layer's input (T×C).
    pub input: Matrix,
    pub heads: Vec<HeadTrace>,
    /// The heads' contexts concatenated (T×C).
    pub context: Matrix,
    /// concat(heads)·W_Oᵀ + b_O, before the residual and LayerNorm (T×C).
    pub attention_output: Matrix,
    /// The layer's output after the feed-forward block (T×C).
    pub output: Matrix,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AttentionTrace {
    /// Embedding output after LayerNorm (T×C).
    pub embeddings: Matrix,
    pub layers: Vec<LayerTrace>,
}

/// JSON has no −∞, so human-readable formats write masked entries as null (and read null back
/// as −∞). Binary formats (the page's worker messages) keep every float's bits.
mod nullable_floats {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(data: &[f32], s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return data.serialize(s);
        }
        let v: Vec<Option<f32>> = data.iter().map(|x| x.is_finite().then_some(*x)).collect();
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
        if !d.is_human_readable() {
            return Vec::deserialize(d);
        }
        let v: Vec<Option<f32>> = Vec::deserialize(d)?;
        Ok(v.into_iter()
            .map(|x| x.unwrap_or(f32::NEG_INFINITY))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_entries_round_trip_through_json_as_null() {
        let m = Matrix {
            rows: 1,
            cols: 2,
            data: vec![0.5, f32::NEG_INFINITY],
        };
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(json, r#"{"rows":1,"cols":2,"data":[0.5,null]}"#);
        assert_eq!(serde_json::from_str::<Matrix>(&json).unwrap(), m);
        assert_eq!(m.finite_range(), Some((0.5, 0.5)));
    }
}
