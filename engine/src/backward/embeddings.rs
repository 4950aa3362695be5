//! The embeddings' backward: `forward/embeddings.rs`' x = dropout(LN(word[ids] + position[t]
//! + token_type[tt])) read bottom to top, each lookup's gradient added into its table's rows.

use super::ln_backward;
use crate::batch::Batch;
use crate::forward::{position_ids, EmbeddingsCache};
use crate::model::BertEmbeddings;
use crate::ops::{dropout, embedding};
use ndarray::Array2;

/// From dL/dx (N, C), in `d_out`, to the tables' gradients: through the dropout and the LN
/// (in place), then each lookup's rows of `g`.
pub(super) fn embeddings_backward(
    emb: &BertEmbeddings,
    g: &mut BertEmbeddings,
    cache: &EmbeddingsCache,
    d_out: &mut Array2<f32>, // (N, C), then (in place) dL/d(the LN's input)
    batch: &Batch,
    pad_token_id: usize,
) {
    let (b_size, t) = batch.input_ids.dim();
    dropout::backward(&mut d_out.view_mut(), cache.dropout.as_ref());
    let d_sum = d_out;
    ln_backward(
        d_sum,
        &mut g.layer_norm,
        cache.sum.view(),
        &emb.layer_norm,
        &cache.ln,
    );
    let d_sum = d_sum.view();
    // nn.Embedding(padding_idx=pad_token_id): the [PAD] row gets no gradient from the lookup
    // (the tied decoder still adds its part).
    embedding::backward(
        &mut g.word_embeddings.view_mut(),
        d_sum,
        batch.input_ids.iter().map(|&id| id as usize),
        Some(pad_token_id),
    );
    if let Some(g_positions) = &mut g.position_embeddings {
        embedding::backward(
            &mut g_positions.view_mut(),
            d_sum,
            position_ids(b_size, t),
            None,
        );
    }
    embedding::backward(
        &mut g.token_type_embeddings.view_mut(),
        d_sum,
        batch.token_type_ids.iter().map(|&tt| tt as usize),
        None,
    );
}
