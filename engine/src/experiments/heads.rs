//! The Heads claim's measurements: what each head attends to (its roles, after Clark et al.
//! 2019, "What does BERT look at?"), how much the loss needs it (Michel et al. 2019's ablation:
//! its context set to zero) and how different the heads are (Jensen–Shannon distance between
//! their weight rows on the same sentences), and whether each head takes a role: a relation
//! holding more of its attention than position alone gives it.

use crate::batch::{Batch, MaskMode};
use crate::config::BertConfig;
use crate::data::{make_batch, make_next_token_batch, BatchConfig, Corpus};
use crate::error::{EngineError, Result};
use crate::forward::{
    attention_options, forward_with_head_mask, ForwardOptions, HeadMask, MlmScope,
};
use crate::inspect::Inspection;
use crate::trace::Matrix;
use crate::train::Trainer;
use crate::vocab::{CLS as CLS_TOKEN, SEP as SEP_TOKEN};
use crate::{BertForPreTraining, Rng};
use ndarray::Array2;
use serde::Serialize;

/// What a key can be to its query, in the order the heatmap shows them.
pub const ROLES: [&str; 6] = ["self", "previous", "next", "[CLS]", "[SEP]", "rest"];
const SELF: usize = 0;
const PREVIOUS: usize = 1;
const NEXT: usize = 2;
const CLS: usize = 3;
const SEP: usize = 4;
const REST: usize = 5;
/// The roles that are relations to the query: every one of [`ROLES`] but "rest", which is
/// whatever is left.
pub const RELATIONS: usize = REST;

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
    /// Sentences measured: the units [`HeadStats::role_error`] samples.
    pub sentences: usize,
    /// (L·H) the standard error of each share in `roles`, over sentences
    /// ([`ratio_standard_error`]); infinite with fewer than two sentences.
    pub role_error: Vec<[f64; 6]>,
    /// The position-only baseline: the mean over the same query rows of the shares a head
    /// would give each role if it weighed every key it may see (mask, window) alike.
    pub baseline: [f64; 6],
}

/// The shares of [`ROLES`] in one query row: the weight `row` (query `i` of `ids`) gives each
/// key, summed by [`role`]. They sum to what the row sums to, 1 for a softmax row.
pub fn row_roles(row: &[f32], ids: &[u32], i: usize, (cls, sep): (u32, u32)) -> [f64; 6] {
    let mut shares = [0.0; 6];
    for (j, &p) in row.iter().enumerate().take(ids.len()) {
        shares[role(ids, i, j, cls, sep)] += f64::from(p);
    }
    shares
}

/// One head's shares of [`ROLES`] on one text: the mean over its query rows `queries` of
/// [`row_roles`], as [`head_stats`] takes it over sentences. Err when the weights are not
/// `ids`' T × T, or a query lies past the text.
pub fn text_roles(
    weights: &Matrix,
    ids: &[u32],
    queries: &[usize],
    specials: (u32, u32),
) -> Result<[f64; 6]> {
    let t = ids.len();
    if weights.rows != t || weights.cols != t || weights.data.len() != t * t {
        return Err(EngineError::Input(format!(
            "the weights are {} × {}, the text {t} tokens",
            weights.rows, weights.cols
        )));
    }
    if queries.iter().any(|&i| i >= t) {
        return Err(EngineError::Input(format!(
            "a query position lies past the text's {t} tokens"
        )));
    }
    let mut shares = [0.0; 6];
    for &i in queries {
        for (total, share) in shares
            .iter_mut()
            .zip(row_roles(weights.row(i), ids, i, specials))
        {
            *total += share;
        }
    }
    Ok(shares.map(|s| s / queries.len().max(1) as f64))
}

/// Every self-attention head's shares of [`ROLES`] on an inspected text (`[layer][head]`):
/// [`text_roles`] over its real tokens' rows (the padding mask's 1s). [CLS] and [SEP] are the
/// ids the text gives those tokens; a text without one has no key of that role.
pub fn inspection_roles(ins: &Inspection) -> Result<Vec<Vec<[f64; 6]>>> {
    let id_of = |name: &str| {
        ins.tokens
            .iter()
            .position(|t| t == name)
            .and_then(|k| ins.input_ids.get(k).copied())
            // No id of the text: no key takes the role.
            .unwrap_or(u32::MAX)
    };
    let specials = (id_of(CLS_TOKEN), id_of(SEP_TOKEN));
    let queries: Vec<usize> = (0..ins.input_ids.len())
        .filter(|&i| ins.attention_mask.get(i) != Some(&0))
        .collect();
    ins.trace
        .layers
        .iter()
        .map(|layer| {
            layer
                .heads
                .iter()
                .map(|h| text_roles(&h.weights, &ins.input_ids, &queries, specials))
                .collect()
        })
        .collect()
}

/// The role shares of query row `i` of `ids` in a head that weighs alike the keys `sees`
/// allows: 1/n to each of the n keys it may see, summed by [`role`]; all zero if it sees none.
pub fn uniform_row_roles(
    ids: &[u32],
    i: usize,
    sees: impl Fn(usize) -> bool,
    (cls, sep): (u32, u32),
) -> [f64; 6] {
    let keys: Vec<usize> = (0..ids.len()).filter(|&j| sees(j)).collect();
    let mut shares = [0.0; 6];
    for &j in &keys {
        shares[role(ids, i, j, cls, sep)] += 1.0 / keys.len() as f64;
    }
    shares
}

/// The standard error of a share measured as R = Σ y_s ÷ Σ n_s over sentences s (y_s the
/// share summed over the sentence's n_s query rows), sentences being the sampled units: the
/// ratio estimator's √(S/(S−1) · Σ (y_s − R·n_s)²) ÷ Σ n_s. With equal n_s it is the standard
/// deviation of the sentences' mean shares ÷ √S. Infinite below two sentences: no spread to
/// read.
pub fn ratio_standard_error(sums: &[f64], rows: &[usize]) -> f64 {
    let s = sums.len();
    let total_rows = rows.iter().sum::<usize>() as f64;
    if s < 2 || total_rows == 0.0 {
        return f64::INFINITY;
    }
    let r = sums.iter().sum::<f64>() / total_rows;
    let squares: f64 = sums
        .iter()
        .zip(rows)
        .map(|(&y, &n)| (y - r * n as f64).powi(2))
        .sum();
    (s as f64 / (s - 1) as f64 * squares).sqrt() / total_rows
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

/// One sentence as the heads are measured on it: its tokens and segments as the model reads
/// them, and the query positions whose rows count (every one: each row's shares sum to 1 over
/// the keys it may see).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MeasuredRow {
    pub ids: Vec<u32>,
    pub segments: Vec<u32>,
    pub queries: Vec<usize>,
}

impl MeasuredRow {
    /// A row of `ids` in `segments`, every position a counted query.
    pub fn new(ids: Vec<u32>, segments: Vec<u32>) -> MeasuredRow {
        let queries = (0..ids.len()).collect();
        MeasuredRow {
            ids,
            segments,
            queries,
        }
    }
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
) -> Result<Vec<MeasuredRow>> {
    let n = corpus.len();
    let (cls, sep, _) = corpus.cls_sep_mask();
    let pairs = if decoder { n } else { n.saturating_sub(1) };
    if pairs == 0 || max_len < 5 {
        return Err(EngineError::Input(format!(
            "the corpus needs two sentences at least, and the model 5 positions, to measure its heads (here {n} sentence{} and {max_len} positions)",
            if n == 1 { "" } else { "s" }
        )));
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
                MeasuredRow::new(ids, segments)
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
                MeasuredRow::new(ids, segments)
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

/// Measures every head of `model` on `sentences`: one traced evaluation pass per sentence,
/// under `opts`' mask and attention (no dropout), each counted query's row read. `cls` and
/// `sep` name the keys of those roles.
pub fn head_stats(
    model: &BertForPreTraining,
    sentences: &[MeasuredRow],
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
    // The mask and window the pass applies, for the baseline's keys.
    let (attention, _) = attention_options(&model.config, &opts)?;
    let (mut entropy, mut spread) = (vec![0.0; n], vec![0.0; n]);
    // (L·H, sentences) each head's shares summed over one sentence's rows; and its rows.
    let mut sentence_roles = vec![Vec::with_capacity(sentences.len()); n];
    let mut sentence_rows = Vec::with_capacity(sentences.len());
    let mut distance = vec![vec![0.0; n]; n]; // (L·H, L·H), summed over rows
    let mut baseline = [0.0; 6];
    let mut rows = 0;
    for MeasuredRow {
        ids,
        segments,
        queries,
    } in sentences
    {
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
        if queries.iter().any(|&i| i >= t) {
            return Err(EngineError::Input(format!(
                "a query position lies past the sentence's {t} tokens"
            )));
        }
        let key_mask = vec![1u8; t]; // `one_row`'s: every position real
        let mut in_sentence = vec![[0.0; 6]; n];
        for &i in queries {
            let uniform =
                uniform_row_roles(ids, i, |j| attention.allows(&key_mask, i, j), (cls, sep));
            for (total, share) in baseline.iter_mut().zip(uniform) {
                *total += share;
            }
            add_row(
                &weights,
                (ids, i, (cls, sep)),
                (&mut in_sentence, &mut entropy, &mut spread),
                &mut distance,
            );
        }
        for (by_sentence, shares) in sentence_roles.iter_mut().zip(in_sentence) {
            by_sentence.push(shares);
        }
        sentence_rows.push(queries.len());
        rows += queries.len();
    }
    // Per head and role: the share summed over each sentence's rows.
    let sums = |by_sentence: &[[f64; 6]], r: usize| -> Vec<f64> {
        by_sentence.iter().map(|shares| shares[r]).collect()
    };
    let role_error = sentence_roles
        .iter()
        .map(|by_sentence| {
            std::array::from_fn(|r| ratio_standard_error(&sums(by_sentence, r), &sentence_rows))
        })
        .collect();
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
        roles: sentence_roles
            .iter()
            .map(|by_sentence| {
                std::array::from_fn(|r| sums(by_sentence, r).iter().sum::<f64>() * per_row)
            })
            .collect(),
        entropy: entropy.into_iter().map(|e| e * per_row).collect(),
        spread: spread.into_iter().map(|e| e * per_row).collect(),
        distance_to_others: distance
            .iter()
            .map(|d| d.iter().sum::<f64>() * per_row / n.saturating_sub(1).max(1) as f64)
            .collect(),
        mean_distance,
        rows,
        sentences: sentences.len(),
        role_error,
        baseline: baseline.map(|share| share * per_row),
    })
}

/// Adds query row `i` of every head's weights (l·H + h) to the sums, head by head: its shares
/// of the roles of `ids`' keys (`roles`), its entropy and spread, and its JS distance to each
/// other head's row (`distance`, (L·H, L·H)).
fn add_row(
    weights: &[&Matrix],
    (ids, i, (cls, sep)): (&[u32], usize, (u32, u32)),
    (roles, entropy, spread): (&mut [[f64; 6]], &mut [f64], &mut [f64]),
    distance: &mut [Vec<f64>],
) {
    for (a, w) in weights.iter().enumerate() {
        let row = w.row(i);
        for (total, share) in roles[a].iter_mut().zip(row_roles(row, ids, i, (cls, sep))) {
            *total += share;
        }
        let (mut row_entropy, mut weighed) = (0.0, 0);
        for &p in row {
            let p = f64::from(p);
            if p > 0.0 {
                row_entropy -= p * p.ln();
                weighed += 1;
            }
        }
        entropy[a] += row_entropy;
        if weighed > 1 {
            spread[a] += row_entropy / (weighed as f64).ln();
        }
        for b in a + 1..weights.len() {
            let d = js_distance(row, weights[b].row(i));
            distance[a][b] += d;
            distance[b][a] += d;
        }
    }
}

/// A head takes a role when one relation (of [`ROLES`] but "rest") holds at least this share
/// of its attention: most of it, a job a learner can see in its weights. Pretrained BERTs have
/// such heads (Clark et al. 2019: heads with most of their attention on the previous token,
/// the next, [SEP]). The position-only baseline ([`HeadStats::baseline`]) is no bar, only a
/// figure to read a share against.
pub const ROLE_SHARE: f64 = 0.5;
/// A call is decided when the share ± this many standard errors lies on one side of the bar.
pub const STANDARD_ERRORS: f64 = 2.0;

/// Whether a head takes one role: its share's interval against the role's bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// The whole interval clears the bar.
    Takes,
    /// None of it does.
    DoesNot,
    /// The interval straddles the bar: the spread over sentences covers the effect.
    NotDecided,
}

/// One head's share of one relation, against the bar for taking it as a role.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoleTest {
    /// The head, l·H + h.
    pub head: usize,
    /// Its index in [`ROLES`], below [`RELATIONS`].
    pub role: usize,
    pub share: f64,
    /// The share's standard error over sentences.
    pub error: f64,
    /// The position-only baseline's share of the role.
    pub baseline: f64,
    pub call: Call,
}

impl RoleTest {
    pub fn new(head: usize, role: usize, share: f64, error: f64, baseline: f64) -> RoleTest {
        let margin = STANDARD_ERRORS * error;
        let call = match (
            clears(share - margin, baseline),
            clears(share + margin, baseline),
        ) {
            (true, _) => Call::Takes,
            (false, true) => Call::NotDecided,
            (false, false) => Call::DoesNot,
        };
        RoleTest {
            head,
            role,
            share,
            error,
            baseline,
            call,
        }
    }

    /// share ÷ the baseline's share: infinite for a role the baseline gives nothing.
    pub fn over_baseline(&self) -> f64 {
        self.share / self.baseline
    }
}

/// Whether a share `x` of a relation makes it a role: at least [`ROLE_SHARE`], and more than
/// `baseline`. The last part is why a head weighing its keys alike takes no role even where
/// position alone gives a role half the attention (a decoder's "self" over sentences of a few
/// tokens, whose first rows see only themselves).
fn clears(x: f64, baseline: f64) -> bool {
    x >= ROLE_SHARE && x > baseline
}

/// Every head's test of every relation, head by head (l·H + h).
pub fn role_tests(stats: &HeadStats) -> Vec<[RoleTest; RELATIONS]> {
    stats
        .roles
        .iter()
        .zip(&stats.role_error)
        .enumerate()
        .map(|(head, (shares, errors))| {
            std::array::from_fn(|r| RoleTest::new(head, r, shares[r], errors[r], stats.baseline[r]))
        })
        .collect()
}

/// Whether the heads take different roles: `Some(true)` when two heads take two different
/// roles, both calls decided; `Some(false)` when no two could, even were every call not
/// decided a "takes"; `None` otherwise.
pub fn heads_take_different_roles(tests: &[[RoleTest; RELATIONS]]) -> Option<bool> {
    let two_heads_differ = |counts: fn(Call) -> bool| {
        let roles: Vec<Vec<usize>> = tests
            .iter()
            .map(|head| {
                head.iter()
                    .filter(|t| counts(t.call))
                    .map(|t| t.role)
                    .collect()
            })
            .collect();
        roles.iter().enumerate().any(|(a, mine)| {
            roles[a + 1..]
                .iter()
                .any(|theirs| mine.iter().any(|r| theirs.iter().any(|q| q != r)))
        })
    };
    if two_heads_differ(|c| c == Call::Takes) {
        Some(true)
    } else if two_heads_differ(|c| c != Call::DoesNot) {
        None
    } else {
        Some(false)
    }
}

/// What the Heads measurement gives for one model on one set of sentences: every head's
/// shares with their standard errors and its calls, the role each head takes, and whether
/// two heads take different ones. The page's Heads claim and `attention-lab heads` (and `train
/// --heads-every`) read this, so both say the same of the same model.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadsMeasurement {
    /// Every head's shares of each of [`ROLES`], their standard errors, the baseline, entropy
    /// and distances (l·H + h).
    pub stats: HeadStats,
    /// Every head's test of every relation (l·H + h).
    pub tests: Vec<[RoleTest; RELATIONS]>,
    /// The role each head takes (its index in [`ROLES`]), a decided [`Call::Takes`]; of
    /// several, the one with the largest share. None for a head that takes none.
    pub roles: Vec<Option<usize>>,
    /// [`heads_take_different_roles`]: Some(true) borne out, Some(false) not, None not decided.
    pub verdict: Option<bool>,
    /// The sentences measured, as the model read them.
    pub rows: Vec<MeasuredRow>,
}

impl HeadsMeasurement {
    /// The calls, roles and verdict `stats` make, measured on `rows`.
    pub fn of(stats: HeadStats, rows: Vec<MeasuredRow>) -> HeadsMeasurement {
        let tests = role_tests(&stats);
        let roles = tests
            .iter()
            .map(|head| {
                head.iter()
                    .filter(|t| t.call == Call::Takes)
                    .max_by(|a, b| a.share.total_cmp(&b.share))
                    .map(|t| t.role)
            })
            .collect();
        let verdict = heads_take_different_roles(&tests);
        HeadsMeasurement {
            stats,
            tests,
            roles,
            verdict,
            rows,
        }
    }
}

/// What the heads of a model are measured with: the sentences of a corpus as the model reads
/// them in training, the forward options of training (mask, attention) and the ids of [CLS]
/// and [SEP]. Made once, it measures any model of the same vocabulary alike (the model now,
/// a fresh one of the same seed).
#[derive(Clone, Debug, PartialEq)]
pub struct HeadsProbe {
    pub rows: Vec<MeasuredRow>,
    pub opts: ForwardOptions,
    pub specials: (u32, u32),
}

impl HeadsProbe {
    /// At most [`HEAD_SENTENCES`] of `corpus`'s sentences (`head_sentences`) for a decoder or
    /// an encoder, at most `max_len` tokens each, read under `opts`.
    pub fn new(
        corpus: &Corpus,
        decoder: bool,
        max_len: usize,
        opts: &ForwardOptions,
    ) -> Result<HeadsProbe> {
        let (cls, sep, _) = corpus.cls_sep_mask();
        Ok(HeadsProbe {
            rows: head_sentences(corpus, decoder, max_len, HEAD_SENTENCES)?,
            opts: *opts,
            specials: (cls, sep),
        })
    }

    /// The probe of a training run: its corpus, its batches' length, its mask and attention.
    pub fn of_training(trainer: &Trainer) -> Result<HeadsProbe> {
        HeadsProbe::new(
            &trainer.corpus,
            trainer.model.config.is_decoder,
            trainer.batch_config.max_len,
            &trainer.forward_options(),
        )
    }

    /// Every head's stats on the probe's sentences.
    pub fn stats(&self, model: &BertForPreTraining) -> Result<HeadStats> {
        head_stats(model, &self.rows, &self.opts, self.specials)
    }

    /// The measurement of `model`'s heads.
    pub fn measure(&self, model: &BertForPreTraining) -> Result<HeadsMeasurement> {
        Ok(HeadsMeasurement::of(self.stats(model)?, self.rows.clone()))
    }
}

/// The forward options of a model read but not trained (a checkpoint without pre-training
/// heads, or one only measured): as training would read it, a decoder's mask causal and an
/// encoder's padding, full softmax.
pub fn reading_options(config: &BertConfig) -> ForwardOptions {
    ForwardOptions::training(if config.is_decoder {
        MaskMode::Causal
    } else {
        MaskMode::Padding
    })
}

/// The Heads measurement of `model` on `corpus` (its sentences at most `max_len` tokens, read
/// under `opts`): one function for the page's claim and the command line.
pub fn measure_heads(
    model: &BertForPreTraining,
    corpus: &Corpus,
    max_len: usize,
    opts: &ForwardOptions,
) -> Result<HeadsMeasurement> {
    HeadsProbe::new(corpus, model.config.is_decoder, max_len, opts)?.measure(model)
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
