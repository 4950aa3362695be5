//! The Heads claim's measurements: what each head attends to (its roles, after Clark et al.
//! 2019, "What does BERT look at?"), how much the loss needs it (Michel et al. 2019's ablation:
//! its context set to zero) and how different the heads are (Jensen–Shannon distance between
//! their weight rows on the same sentences).

use crate::batch::Batch;
use crate::data::{make_batch, make_next_token_batch, BatchConfig, Corpus};
use crate::error::{EngineError, Result};
use crate::forward::{forward_with_head_mask, ForwardOptions, HeadMask, MlmScope};
use crate::{BertForPreTraining, Rng};
use ndarray::Array2;

/// What a key can be to its query, in the order the heatmap shows them.
pub const ROLES: [&str; 6] = ["self", "previous", "next", "[CLS]", "[SEP]", "rest"];
const SELF: usize = 0;
const PREVIOUS: usize = 1;
const NEXT: usize = 2;
const CLS: usize = 3;
const SEP: usize = 4;
const REST: usize = 5;

/// Most sentences (pairs for an encoder) the roles and distances are measured over, and rows
/// of the evaluation batch the ablation's loss is taken on.
pub const HEAD_SENTENCES: usize = 32;
pub const EVALUATION_ROWS: usize = 32;
/// The evaluation batch's seed: the same masked rows at every measurement.
const EVALUATION_SEED: u64 = 2019;

/// The role of key `j` for query `i` in `ids`: one each, the first that holds of self,
/// [CLS], [SEP], previous, next, else rest (so the shares of a row sum to 1; the word after
/// [CLS] counts its attention to [CLS] as [CLS], not as previous).
pub fn role(ids: &[u32], i: usize, j: usize, cls: u32, sep: u32) -> usize {
    match () {
        _ if i == j => SELF,
        _ if ids[j] == cls => CLS,
        _ if ids[j] == sep => SEP,
        _ if j + 1 == i => PREVIOUS,
        _ if j == i + 1 => NEXT,
        _ => REST,
    }
}

/// Every head's roles, entropy and distance to the others, over one set of sentences. Heads
/// are in the order layer by layer, head by head: index l·H + h.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadStats {
    pub layers: usize,
    pub heads: usize,
    /// (L·H) the mean over query rows of the weight on each role of [`ROLES`].
    pub roles: Vec<[f64; 6]>,
    /// (L·H) the mean row entropy −Σ p ln p, nats.
    pub entropy: Vec<f64>,
    /// (L·H) the mean of each row's entropy ÷ ln(keys it weighs): 1 spread evenly, 0 on one
    /// key. Rows of different lengths compare on it, and it shares a plot with distances.
    pub spread: Vec<f64>,
    /// (L·H) the mean JS distance from this head's rows to the same rows of every other head.
    pub distance_to_others: Vec<f64>,
    /// The mean over every pair of heads of their mean JS distance: how different they are.
    pub mean_distance: f64,
    /// Query rows measured (over every sentence).
    pub rows: usize,
}

/// The Jensen–Shannon distance of two distributions, √JSD with base-2 logarithms: 0 for equal
/// rows, 1 for rows with no key in common.
pub fn js_distance(p: &[f32], q: &[f32]) -> f64 {
    // JSD = ½ Σ p log₂(p/m) + ½ Σ q log₂(q/m), m = (p + q)/2; 0·log 0 = 0.
    let term = |a: f64, m: f64| if a > 0.0 { a * (a / m).log2() } else { 0.0 };
    let jsd: f64 = p
        .iter()
        .zip(q)
        .map(|(&a, &b)| {
            let (a, b) = (f64::from(a), f64::from(b));
            let m = 0.5 * (a + b);
            0.5 * term(a, m) + 0.5 * term(b, m)
        })
        .sum();
    jsd.max(0.0).sqrt()
}

/// The sentences the heads are measured on, as the model reads them in training: for an
/// encoder, consecutive pairs `[CLS] A [SEP] B [SEP]` with their segments (the longer side cut
/// first to fit `max_len`); for a decoder, `[CLS] sentence [SEP]`. At most `count`, from
/// starts spread over the corpus.
pub fn head_sentences(
    corpus: &Corpus,
    decoder: bool,
    max_len: usize,
    count: usize,
) -> Result<Vec<(Vec<u32>, Vec<u32>)>> {
    let n = corpus.len();
    let (cls, sep, _) = corpus.cls_sep_mask();
    let pairs = if decoder { n } else { n.saturating_sub(1) };
    if pairs == 0 || max_len < 5 {
        return Err(EngineError::Input(
            "the corpus needs two sentences at least, and the model 5 positions, to measure its heads".into(),
        ));
    }
    let count = count.min(pairs).max(1);
    Ok((0..count)
        .map(|k| {
            let i = k * pairs / count;
            if decoder {
                let s = corpus.sentence(i);
                let s = &s[..s.len().min(max_len - 2)];
                let ids = [&[cls], s, &[sep]].concat();
                let segments = vec![0; ids.len()];
                (ids, segments)
            } else {
                let (mut a, mut b) = (corpus.sentence(i), corpus.sentence(i + 1));
                while a.len() + b.len() + 3 > max_len {
                    if a.len() >= b.len() {
                        a = &a[..a.len() - 1];
                    } else {
                        b = &b[..b.len() - 1];
                    }
                }
                let ids = [&[cls], a, &[sep], b, &[sep]].concat();
                let segments = (0..ids.len()).map(|p| u32::from(p > a.len() + 1)).collect();
                (ids, segments)
            }
        })
        .collect())
}

/// One sentence as a batch of one: every position real, no labels.
fn one_row(ids: &[u32], segments: &[u32]) -> Batch {
    let t = ids.len();
    let row = |v: &[u32]| Array2::from_shape_vec((1, t), v.to_vec()).expect("1 × T");
    Batch {
        input_ids: row(ids),
        token_type_ids: row(segments),
        attention_mask: Array2::ones((1, t)),
        mlm_labels: None,
        nsp_labels: None,
    }
}

/// Measures every head of `model` on `sentences` (ids, segments): one traced evaluation pass
/// per sentence, under `opts`' mask and attention (no dropout). `cls` and `sep` name the keys
/// of those roles.
pub fn head_stats(
    model: &BertForPreTraining,
    sentences: &[(Vec<u32>, Vec<u32>)],
    opts: &ForwardOptions,
    (cls, sep): (u32, u32),
) -> Result<HeadStats> {
    let (layers, heads) = (
        model.config.num_hidden_layers,
        model.config.num_attention_heads,
    );
    let n = layers * heads;
    let opts = ForwardOptions {
        train: false,
        trace: true,
        mlm_scope: MlmScope::LabelledOnly,
        ..*opts
    };
    let keep = HeadMask::keep_all(layers, heads);
    let (mut roles, mut entropy, mut spread) = (vec![[0.0; 6]; n], vec![0.0; n], vec![0.0; n]);
    let mut distance = vec![vec![0.0; n]; n]; // (L·H, L·H), summed over rows
    let mut rows = 0;
    for (ids, segments) in sentences {
        let out = forward_with_head_mask(
            model,
            &one_row(ids, segments),
            &opts,
            &keep,
            &mut Rng::new(0),
        )?;
        let trace = out
            .trace
            .ok_or_else(|| EngineError::Input("the pass kept no trace".into()))?;
        let weights: Vec<_> = trace
            .layers
            .iter()
            .flat_map(|l| l.heads.iter().map(|h| &h.weights))
            .collect();
        if weights.len() != n {
            return Err(EngineError::Input(format!(
                "{} heads traced, {n} expected",
                weights.len()
            )));
        }
        let t = ids.len();
        for i in 0..t {
            for (a, w) in weights.iter().enumerate() {
                let row = w.row(i);
                let (mut row_entropy, mut weighed) = (0.0, 0);
                for (j, &p) in row.iter().enumerate() {
                    let p = f64::from(p);
                    roles[a][role(ids, i, j, cls, sep)] += p;
                    if p > 0.0 {
                        row_entropy -= p * p.ln();
                        weighed += 1;
                    }
                }
                entropy[a] += row_entropy;
                if weighed > 1 {
                    spread[a] += row_entropy / (weighed as f64).ln();
                }
                for b in a + 1..n {
                    let d = js_distance(row, weights[b].row(i));
                    distance[a][b] += d;
                    distance[b][a] += d;
                }
            }
        }
        rows += t;
    }
    let per_row = 1.0 / rows.max(1) as f64;
    let pairs = (n * n.saturating_sub(1) / 2).max(1) as f64;
    let mean_distance = (0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .map(|(a, b)| distance[a][b] * per_row)
        .sum::<f64>()
        / pairs;
    Ok(HeadStats {
        layers,
        heads,
        roles: roles
            .into_iter()
            .map(|r| r.map(|share| share * per_row))
            .collect(),
        entropy: entropy.into_iter().map(|e| e * per_row).collect(),
        spread: spread.into_iter().map(|e| e * per_row).collect(),
        distance_to_others: distance
            .iter()
            .map(|d| d.iter().sum::<f64>() * per_row / n.saturating_sub(1).max(1) as f64)
            .collect(),
        mean_distance,
        rows,
    })
}

/// A fixed evaluation batch: `rows` examples as training makes them (masked pairs for an
/// encoder, next-token rows for a decoder), always the same ones.
pub fn evaluation_batch(
    corpus: &Corpus,
    config: &BatchConfig,
    decoder: bool,
    rows: usize,
) -> Result<Batch> {
    let config = BatchConfig {
        batch_size: rows,
        ..*config
    };
    let mut rng = Rng::new(EVALUATION_SEED);
    if decoder {
        make_next_token_batch(corpus, &config, &mut rng).map(|(batch, _)| batch)
    } else {
        make_batch(corpus, &config, &mut rng)
    }
}

/// The model's MLM loss (a decoder's next-token loss) on `batch` under `mask`: an evaluation
/// pass, no dropout.
pub fn masked_loss(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    mask: &HeadMask,
) -> Result<f64> {
    let opts = ForwardOptions {
        train: false,
        trace: false,
        mlm_scope: MlmScope::LabelledOnly,
        ..*opts
    };
    let out = forward_with_head_mask(model, batch, &opts, mask, &mut Rng::new(0))?;
    out.losses
        .map(|l| f64::from(l.mlm))
        .ok_or_else(|| EngineError::Input("the evaluation batch has no labels".into()))
}

/// Michel et al.'s ablation of one head: the loss with `head` of `layer` removed (its context
/// zero) minus `base`, the loss with every head.
pub fn ablation(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
    (layer, head): (usize, usize),
    base: f64,
) -> Result<f64> {
    let (layers, heads) = (
        model.config.num_hidden_layers,
        model.config.num_attention_heads,
    );
    let without = HeadMask::without(layers, heads, layer, head);
    Ok(masked_loss(model, batch, opts, &without)? - base)
}

/// Every loss the ablation needs: with all heads, then without each in turn (l·H + h).
pub fn ablations(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: &ForwardOptions,
) -> Result<(f64, Vec<f64>)> {
    let (layers, heads) = (
        model.config.num_hidden_layers,
        model.config.num_attention_heads,
    );
    let base = masked_loss(model, batch, opts, &HeadMask::keep_all(layers, heads))?;
    let deltas = (0..layers * heads)
        .map(|k| ablation(model, batch, opts, (k / heads, k % heads), base))
        .collect::<Result<Vec<f64>>>()?;
    Ok((base, deltas))
}

#[cfg(test)]
mod tests;
