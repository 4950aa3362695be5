//! What one pass reads: a source batch for the encoder, and the decoder's inputs shifted
//! right from the labels.

use crate::batch::{Batch, IGNORE_INDEX};
use ndarray::Array2;

/// A source batch for the encoder and a target batch for the decoder.
#[derive(Clone, Debug, PartialEq)]
pub struct Seq2SeqBatch {
    /// Source ids and padding mask (B, Ts); no labels.
    pub source: Batch,
    /// Decoder inputs (the labels shifted right) and their mask (B, Tt), the labels (unshifted:
    /// position t predicts labels[t]) in `mlm_labels`.
    pub target: Batch,
}

/// HF's `shift_tokens_right`: [start, labels[0], …, labels[T−2]], −100 read as [PAD].
pub fn shift_tokens_right(labels: &Array2<i64>, start: u32, pad: u32) -> Array2<u32> {
    let (b, t) = labels.dim();
    Array2::from_shape_fn((b, t), |(r, p)| match p {
        0 => start,
        _ => match labels[[r, p - 1]] {
            IGNORE_INDEX => pad,
            id => id as u32,
        },
    })
}

impl Seq2SeqBatch {
    /// Rows `rows` (clamped) of the source and the target.
    pub fn rows(&self, rows: std::ops::Range<usize>) -> Seq2SeqBatch {
        Seq2SeqBatch {
            source: self.source.rows(rows.clone()),
            target: self.target.rows(rows),
        }
    }

    /// From source ids with their mask and the target's labels (−100 where none), with the
    /// decoder's inputs shifted right and its mask 1 where they are not [PAD].
    pub fn new(
        source_ids: Array2<u32>,
        source_mask: Array2<u8>,
        labels: Array2<i64>,
        start: u32,
        pad: u32,
    ) -> Self {
        let decoder_input_ids = shift_tokens_right(&labels, start, pad);
        let decoder_mask = decoder_input_ids.mapv(|id| u8::from(id != pad));
        Seq2SeqBatch {
            source: Batch {
                token_type_ids: Array2::zeros(source_ids.raw_dim()),
                input_ids: source_ids,
                attention_mask: source_mask,
                mlm_labels: None,
                nsp_labels: None,
            },
            target: Batch {
                token_type_ids: Array2::zeros(decoder_input_ids.raw_dim()),
                input_ids: decoder_input_ids,
                attention_mask: decoder_mask,
                mlm_labels: Some(labels),
                nsp_labels: None,
            },
        }
    }
}

/// One unpadded row of ids, one segment.
pub(super) fn one_row(ids: &[u32]) -> Batch {
    let row = |ids: &[u32]| Array2::from_shape_vec((1, ids.len()), ids.to_vec()).expect("1 × T");
    Batch {
        input_ids: row(ids),
        token_type_ids: Array2::zeros((1, ids.len())),
        attention_mask: Array2::ones((1, ids.len())),
        mlm_labels: None,
        nsp_labels: None,
    }
}
