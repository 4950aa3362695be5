//! The plain data a forward call can record for the visualiser: every intermediate of
//! attention, per layer and per head. Owned, serialisable, and free of ndarray so the app
//! can draw it without knowing the engine's internals.

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize, Serializer};

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
    /// The matrix as an array of rows (`[[…], …]`), each written as `nullable_floats` writes
    /// it: in JSON, −∞ as null. What the CLI prints; also for any JSON export.
    pub fn as_rows(&self) -> AsRows<'_> {
        AsRows(self)
    }
    /// 0×0: the matrix is absent (e.g. linear attention's scores).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    /// max |a − b| over the entries, when the shapes agree; equal non-finite entries (both −∞)
    /// count as 0 apart.
    pub fn max_abs_difference(&self, other: &Matrix) -> Option<f32> {
        ((self.rows, self.cols) == (other.rows, other.cols)).then(|| {
            self.data
                .iter()
                .zip(&other.data)
                .map(|(&a, &b)| if a == b { 0.0 } else { (a - b).abs() })
                .fold(0.0, f32::max)
        })
    }
    /// Smallest and largest finite entry, for colour scales.
    pub fn finite_range(&self) -> Option<(f32, f32)> {
        let mut it = self.data.iter().copied().filter(|x| x.is_finite());
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), x| (lo.min(x), hi.max(x))))
    }
}

/// One head of one layer, for one sequence. T×D for q/k/v/context, T×T for the rest;
/// row = query token, column = key token. Linear attention has no scores: `scores`, `scaled`
/// and `masked` are then empty (0×0), which the CLI writes as null.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeadTrace {
    /// The K/V group this head reads (= the head's index without grouped-query attention).
    pub kv_group: usize,
    pub q: Matrix,
    /// The head's group's keys and values.
    pub k: Matrix,
    pub v: Matrix,
    /// Rotary models: q and k after the rotation; `scores` is built from them.
    pub q_rotated: Option<Matrix>,
    pub k_rotated: Option<Matrix>,
    /// Linear attention: φ(q) and φ(k), φ = elu + 1.
    pub phi_q: Option<Matrix>,
    pub phi_k: Option<Matrix>,
    /// QKᵀ
    pub scores: Matrix,
    /// QKᵀ/√d_k
    pub scaled: Matrix,
    /// M: 0 or −∞
    pub mask: Matrix,
    /// ALiBi positions: the bias A = −m_h·|i − j| this head adds to its scaled scores, and
    /// its slope m_h.
    #[serde(default)]
    pub alibi_bias: Option<Matrix>,
    #[serde(default)]
    pub alibi_slope: Option<f32>,
    /// QKᵀ/√d_k + M, with ALiBi QKᵀ/√d_k + A + M
    pub masked: Matrix,
    /// softmax(QKᵀ/√d_k + M), before dropout
    pub weights: Matrix,
    /// weights·V
    pub context: Matrix,
    /// Tiled attention: the block schedule, in order.
    pub tiles: Option<Vec<TileStep>>,
}

/// One step of tiled attention: query block `q_block` has just taken in key block `k_block`;
/// `row_max` and `row_sum` are the running m and l of each row of the query block after it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TileStep {
    pub q_block: usize,
    pub k_block: usize,
    /// −∞ (null in JSON) for a row that has seen no allowed key yet.
    #[serde(with = "nullable_floats")]
    pub row_max: Vec<f32>,
    #[serde(with = "nullable_floats")]
    pub row_sum: Vec<f32>,
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
    /// Add & Norm: LayerNorm(x + attention_output) (T×C), the feed-forward block's input
    /// (the cross-attention's, in an encoder–decoder's decoder).
    pub attention_norm: Matrix,
    /// An encoder–decoder's decoder layer: each head's cross-attention, queries from this
    /// layer (Tt rows), keys and values from the encoder's output (Ts rows), under the
    /// encoder's padding mask. Empty elsewhere.
    #[serde(default)]
    pub cross_heads: Vec<HeadTrace>,
    /// attention_norm·W₁ᵀ + b₁ (T×I), GELU's input.
    pub intermediate_pre: Matrix,
    /// GELU(intermediate_pre) = 0.5·x·(1 + erf(x/√2)) (T×I).
    pub intermediate: Matrix,
    /// intermediate·W₂ᵀ + b₂ (T×C), before the residual and LayerNorm.
    pub ffn_output: Matrix,
    /// Add & Norm: LayerNorm(attention_norm + ffn_output) (T×C), the next layer's input.
    pub output: Matrix,
}

/// What the pre-training heads make of the last layer's output, for the traced sequence.
/// Each part is there when the model has it (a bare encoder has none).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HeadsTrace {
    /// The pooler: tanh(W·h_[CLS] + b) (1×C).
    pub pooled: Option<Matrix>,
    /// NSP: pooled·W_NSPᵀ + b_NSP, [IsNext, NotNext].
    pub nsp_logits: Option<[f32; 2]>,
    /// softmax(nsp_logits).
    pub nsp_probabilities: Option<[f32; 2]>,
    /// The MLM transform LayerNorm(GELU(h·W_tᵀ + b_t)) (T×C), the tied decoder's input. Only
    /// when the MLM head ran on every position (inspection); the decoder is the word
    /// embeddings, so logits = mlm_transform·word_embeddingsᵀ + bias.
    pub mlm_transform: Option<Matrix>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AttentionTrace {
    /// word_embeddings[ids] (T×C).
    pub word_embeddings: Matrix,
    /// position_embeddings[0..T] (T×C); empty (0×0) for rotary models, which have none.
    pub position_embeddings: Matrix,
    /// token_type_embeddings[segment] (T×C).
    pub token_type_embeddings: Matrix,
    /// word + position + token type (T×C), LayerNorm's input.
    pub embeddings_sum: Matrix,
    /// Embedding output after LayerNorm (T×C).
    pub embeddings: Matrix,
    pub layers: Vec<LayerTrace>,
    /// The pooler and the pre-training heads (see `HeadsTrace`).
    pub heads: HeadsTrace,
}

/// A matrix serialised as its rows: `Matrix::as_rows`.
pub struct AsRows<'a>(&'a Matrix);

impl Serialize for AsRows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Row<'a>(&'a [f32]);
        impl Serialize for Row<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                nullable_floats::serialize(self.0, s)
            }
        }
        let m = self.0;
        s.collect_seq((0..m.rows).map(|r| Row(m.row(r))))
    }
}

/// JSON has no −∞, so human-readable formats write masked entries as null (and read null back
/// as −∞). Binary formats (the page's worker messages) keep every float's bits. The one place
/// the engine and its users write −∞ (any non-finite number) as null: use it with
/// `#[serde(with = "engine::trace::nullable_floats")]` on a `Vec<f32>`, or `Matrix::as_rows`.
pub mod nullable_floats {
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

    #[test]
    fn as_rows_writes_nested_rows_with_non_finite_entries_as_null() {
        let m = Matrix {
            rows: 2,
            cols: 2,
            data: vec![0.5, f32::NEG_INFINITY, f32::NAN, -1.25],
        };
        let json = serde_json::to_string(&m.as_rows()).unwrap();
        assert_eq!(json, "[[0.5,null],[null,-1.25]]");
        assert_eq!(
            serde_json::to_string(&Matrix::default().as_rows()).unwrap(),
            "[]"
        );
    }

    #[test]
    fn a_variant_head_round_trips_through_json() {
        let head = HeadTrace {
            kv_group: 1,
            q_rotated: Some(Matrix::default()),
            phi_k: Some(Matrix {
                rows: 1,
                cols: 1,
                data: vec![2.0],
            }),
            tiles: Some(vec![TileStep {
                q_block: 1,
                k_block: 0,
                row_max: vec![f32::NEG_INFINITY, 0.25],
                row_sum: vec![0.0, 1.5],
            }]),
            ..HeadTrace::default()
        };
        let json = serde_json::to_string(&head).unwrap();
        assert!(json.contains(r#""row_max":[null,0.25]"#), "{json}");
        assert_eq!(serde_json::from_str::<HeadTrace>(&json).unwrap(), head);
    }
}
