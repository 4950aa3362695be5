//! The embeddings: x = dropout(LN(word[ids] + position[t] + token_type[tt])), and the cache
//! its backward reads. Rotary models have no position term here (their positions rotate q and
//! k in every layer).

use super::ln_reusing;
use crate::batch::Batch;
use crate::model::BertEmbeddings;
use crate::ops::layernorm::LayerNormCache;
use crate::ops::{dropout, embedding, reuse};
use crate::trace::{AttentionTrace, Matrix};
use ndarray::{s, Array2, Axis};

#[derive(Default)]
pub(crate) struct EmbeddingsCache {
    pub(crate) sum: Array2<f32>, // (N, C) word + position (absolute only) + token type, LN input
    pub(crate) ln: LayerNormCache,
    pub(crate) dropout: Option<Array2<f32>>, // (N, C)
}
/// Position ids 0..T for each of the B sequences, row-major like the batch.
pub(crate) fn position_ids(b_size: usize, t: usize) -> impl Iterator<Item = usize> {
    (0..b_size).flat_map(move |_| 0..t)
}

pub(super) fn embeddings_forward(
    emb: &BertEmbeddings,
    batch: &Batch,
    eps: f64,
    hidden_p: f32,
    noise: &mut dropout::Noise,
    trace: Option<&mut AttentionTrace>,
    (spare_out, spare): (Array2<f32>, EmbeddingsCache), // an earlier call's, to write into
) -> (Array2<f32>, EmbeddingsCache) {
    let (b_size, t) = batch.input_ids.dim();
    let mut sum = reuse(spare.sum, (b_size * t, emb.word_embeddings.ncols())); // (N, C)
    sum.fill(0.0); // the three lookups add up into it
    embedding::forward_add(
        &mut sum.view_mut(),
        batch.input_ids.iter().map(|&id| id as usize),
        emb.word_embeddings.view(),
    );
    if let Some(positions) = &emb.position_embeddings {
        embedding::forward_add(
            &mut sum.view_mut(),
            position_ids(b_size, t),
            positions.view(),
        );
    }
    embedding::forward_add(
        &mut sum.view_mut(),
        batch.token_type_ids.iter().map(|&tt| tt as usize),
        emb.token_type_embeddings.view(),
    );
    let (mut x, ln) = ln_reusing(sum.view(), &emb.layer_norm, eps, (spare_out, spare.ln));
    if let Some(tr) = trace {
        // Row 0's three lookups, read again from the tables: only when tracing.
        let lookup = |table: &Array2<f32>, ids: &mut dyn Iterator<Item = usize>| {
            Matrix::from_view(table.select(Axis(0), &ids.collect::<Vec<_>>()).view())
        };
        tr.word_embeddings = lookup(
            &emb.word_embeddings,
            &mut batch.input_ids.row(0).iter().map(|&id| id as usize),
        );
        tr.position_embeddings = match &emb.position_embeddings {
            Some(positions) => lookup(positions, &mut (0..t)),
            None => Matrix::default(),
        };
        tr.token_type_embeddings = lookup(
            &emb.token_type_embeddings,
            &mut batch.token_type_ids.row(0).iter().map(|&tt| tt as usize),
        );
        tr.embeddings_sum = Matrix::from_view(sum.slice(s![..t, ..]));
        tr.embeddings = Matrix::from_view(x.slice(s![..t, ..]));
    }
    let dropout = dropout::forward(&mut x, hidden_p, noise, spare.dropout);
    (x, EmbeddingsCache { sum, ln, dropout })
}
