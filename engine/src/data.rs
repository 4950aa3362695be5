//! Pre-training data: a corpus of sentences, and batches of masked sentence pairs for BERT's two
//! tasks (paper §3.1): masked language modelling and next-sentence prediction. The recipe is
//! nlp-tutorial's `make_batch`, done exactly: half the pairs are consecutive sentences, masking
//! picks 15% of the real tokens, of which 80% → [MASK], 10% → a random token, 10% unchanged.

use crate::batch::{shift_labels, Batch, IGNORE_INDEX};
use crate::error::{EngineError, Result};
use crate::rng::Rng;
use crate::tokenizer::{truncate_longest_first, Tokenizer};
use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};

/// NSP labels, HF's convention.
pub const IS_NEXT: u32 = 0;
pub const NOT_NEXT: u32 = 1;

/// Sentences as token ids (no [CLS]/[SEP]), one per non-empty line, in corpus order so that
/// sentence i + 1 is the one that follows sentence i.
#[derive(Clone, Debug, PartialEq)]
pub struct Corpus {
    ids: Vec<u32>,      // every sentence's ids back to back
    starts: Vec<usize>, // sentence i = ids[starts[i]..starts[i + 1]]
    vocab_size: usize,
    cls: u32,
    sep: u32,
    pad: u32,
    mask: u32,
    /// Ids never masked nor drawn as a random replacement, ascending.
    special_ids: Vec<u32>,
}

impl Corpus {
    /// Each trimmed non-empty line is a sentence; a line with no tokens (only control
    /// characters) is skipped. NSP needs pairs, so at least two sentences.
    pub fn parse(text: &str, tokenizer: &Tokenizer) -> Result<Corpus> {
        let vocab = tokenizer.vocab();
        let (cls, sep, pad, mask) = (
            vocab.cls_id()?,
            vocab.sep_id()?,
            vocab.pad_id()?,
            vocab.mask_id()?,
        );
        let mut special_ids = vocab.special_ids();
        special_ids.sort_unstable();
        special_ids.dedup();
        if vocab.len() <= special_ids.len() {
            return Err(EngineError::Data(
                "the vocabulary has only special tokens: nothing to learn".into(),
            ));
        }
        if text.trim().is_empty() {
            return Err(EngineError::Data(
                "the corpus is empty: give at least two lines of text".into(),
            ));
        }
        let mut ids = Vec::with_capacity(text.len() / 4);
        let mut starts = vec![0];
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let sentence = tokenizer.token_ids(line);
            if !sentence.is_empty() {
                ids.extend_from_slice(&sentence);
                starts.push(ids.len());
            }
        }
        let n = starts.len() - 1;
        if n < 2 {
            return Err(EngineError::Data(format!(
                "the corpus has {n} sentence{}: next-sentence prediction needs at least two \
                 (one sentence per line)",
                if n == 1 { "" } else { "s" }
            )));
        }
        let corpus_is_all_special = ids.iter().all(|id| special_ids.binary_search(id).is_ok());
        if corpus_is_all_special {
            return Err(EngineError::Data(
                "every token of the corpus is a special token or [UNK]: there is nothing to mask \
                 (does the vocabulary fit this text?)"
                    .into(),
            ));
        }
        Ok(Corpus {
            ids,
            starts,
            vocab_size: vocab.len(),
            cls,
            sep,
            pad,
            mask,
            special_ids,
        })
    }

    /// Number of sentences.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn sentence(&self, i: usize) -> &[u32] {
        &self.ids[self.starts[i]..self.starts[i + 1]]
    }

    /// Tokens over all sentences.
    pub fn n_tokens(&self) -> usize {
        self.ids.len()
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The id of [PAD].
    pub fn pad_id(&self) -> u32 {
        self.pad
    }

    /// The ids of [CLS], [SEP] and [MASK].
    pub fn cls_sep_mask(&self) -> (u32, u32, u32) {
        (self.cls, self.sep, self.mask)
    }

    pub fn is_special(&self, id: u32) -> bool {
        self.special_ids.binary_search(&id).is_ok()
    }

    /// A token id drawn uniformly from the non-special ones.
    fn random_token(&self, rng: &mut Rng) -> u32 {
        let mut id = rng.below(self.vocab_size - self.special_ids.len()) as u32;
        // Skip over the specials in ascending order: maps 0..V−S onto the non-special ids.
        for &s in &self.special_ids {
            if id >= s {
                id += 1;
            }
        }
        id
    }
}

/// What a position chosen for MLM became (BERT's 80/10/10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// [MASK] (80%)
    Mask,
    /// A random non-special token (10%)
    Random,
    /// Left as it was (10%)
    Kept,
}

/// How `make_batch` built one row, beside the ids it made: what the page's Batch view shows
/// and the masking counts add up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowRecord {
    /// The row's ids before masking (T, padded like the batch).
    pub original: Vec<u32>,
    /// Positions picked for MLM, ascending.
    pub chosen: Vec<usize>,
    /// What each chosen position became, one per `chosen`.
    pub replaced_by: Vec<Replacement>,
    /// Real tokens that could have been picked (not special).
    pub eligible: usize,
}

/// One `RowRecord` per row of the batch (B).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BatchRecord {
    pub rows: Vec<RowRecord>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchConfig {
    pub batch_size: usize,
    /// T: every row is padded to this length; pairs are cut longest side first to fit.
    pub max_len: usize,
    /// Fraction of real tokens picked for MLM (BERT: 0.15).
    pub mask_prob: f32,
    /// Cap on picked tokens per row (BERT's max_predictions_per_seq); `max_predictions` gives
    /// BERT's choice for a length and rate.
    pub max_predictions: usize,
}

/// BERT's cap on MLM predictions per row for rows of `max_len` tokens at rate `mask_prob`:
/// ⌈max_len · mask_prob⌉, at least 1.
///
/// BERT's `create_pretraining_data.py` picks min(max_predictions_per_seq, max(1,
/// round(n · masked_lm_prob))) of a sequence's n tokens, and its README sets
/// max_predictions_per_seq to about max_seq_length · masked_lm_prob (20 for 128 at 0.15): the
/// cap sizes the prediction tensors and is not meant to lower the rate. Rounded up, it never
/// does here: a row has at most max_len − 3 maskable tokens, and `make_batch` asks for
/// max(1, round(mask_prob · eligible)) ≤ this.
///
/// The product is taken as the decimal the rate was written as: an f32 0.15 is 0.150000006,
/// and 100 × that rounded up would be 16, not 15. A relative slack of 10⁻⁶ (an f32 holds about
/// 7 digits) absorbs that representation error.
pub fn max_predictions(max_len: usize, mask_prob: f32) -> usize {
    let product = max_len as f64 * f64::from(mask_prob);
    // NaN (a rate not yet validated) casts to 0, then 1.
    ((product * (1.0 - 1e-6)).ceil() as usize).max(1)
}

impl Default for BatchConfig {
    /// nlp-tutorial's sizes: 6 pairs of at most 30 tokens, at most 5 predictions.
    fn default() -> Self {
        BatchConfig {
            batch_size: 6,
            max_len: 30,
            mask_prob: 0.15,
            max_predictions: 5,
        }
    }
}

impl BatchConfig {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(EngineError::Data(m));
        if self.batch_size == 0 {
            return bad("batch size must be at least 1".into());
        }
        if self.max_len < 5 {
            return bad(format!(
                "max_len {} is too short: [CLS] A [SEP] B [SEP] needs at least 5 positions",
                self.max_len
            ));
        }
        if self.mask_prob.is_nan() || self.mask_prob <= 0.0 || self.mask_prob > 1.0 {
            return bad(format!(
                "mask probability {} must be in (0, 1]",
                self.mask_prob
            ));
        }
        if self.max_predictions == 0 {
            return bad("max predictions must be at least 1: MLM needs a masked token".into());
        }
        Ok(())
    }
}

/// A batch of `batch_size` masked pairs `[CLS] A [SEP] B [SEP] [PAD]…`, T = max_len.
///
/// NSP: ⌊B/2⌋ rows are IsNext (sentence i then i + 1), ⌊B/2⌋ NotNext (sentence i then a random
/// j ≠ i + 1), and for odd B the last row's label is a fair coin; rows come in random order.
/// MLM per row: n = min(max_predictions, max(1, round(mask_prob · eligible))) positions drawn
/// uniformly among the non-special tokens; each becomes [MASK] (80%), a random non-special
/// token (10%) or stays (10%), and its label is the original id (−100 elsewhere).
pub fn make_batch(corpus: &Corpus, config: &BatchConfig, rng: &mut Rng) -> Result<Batch> {
    make_batch_recorded(corpus, config, rng).map(|(batch, _)| batch)
}

/// `make_batch`, with the record of how each row was made (the same draws: the same batch).
pub fn make_batch_recorded(
    corpus: &Corpus,
    config: &BatchConfig,
    rng: &mut Rng,
) -> Result<(Batch, BatchRecord)> {
    config.validate()?;
    let (b, t) = (config.batch_size, config.max_len);
    let mut input_ids = Array2::<u32>::from_elem((b, t), corpus.pad); // (B, T)
    let mut token_type_ids = Array2::<u32>::zeros((b, t)); // (B, T)
    let mut attention_mask = Array2::<u8>::zeros((b, t)); // (B, T)
    let mut mlm_labels = Array2::<i64>::from_elem((b, t), IGNORE_INDEX); // (B, T)
    let nsp_labels = Array1::from(nsp_labels(b, rng)); // (B,)
    let mut eligible = Vec::with_capacity(t);
    let mut record = BatchRecord {
        rows: Vec::with_capacity(b),
    };

    for (row, &label) in nsp_labels.iter().enumerate() {
        let (i, j) = pick_pair(corpus, label, rng);
        let (a, s) = (corpus.sentence(i), corpus.sentence(j));
        let (ka, kb) = truncate_longest_first(a.len(), s.len(), t - 3, true);
        let len = ka + kb + 3;

        let ids = input_ids
            .row_mut(row)
            .into_slice()
            .expect("standard layout");
        ids[0] = corpus.cls;
        ids[1..1 + ka].copy_from_slice(&a[..ka]);
        ids[1 + ka] = corpus.sep;
        ids[2 + ka..2 + ka + kb].copy_from_slice(&s[..kb]);
        ids[2 + ka + kb] = corpus.sep;
        token_type_ids
            .row_mut(row)
            .slice_mut(ndarray::s![2 + ka..len])
            .fill(1);
        attention_mask
            .row_mut(row)
            .slice_mut(ndarray::s![..len])
            .fill(1);

        let original = ids.to_vec();
        let labels = mlm_labels
            .row_mut(row)
            .into_slice()
            .expect("standard layout");
        let mut picks = mask_tokens(
            corpus,
            config,
            &mut ids[..len],
            &mut labels[..len],
            &mut eligible,
            rng,
        );
        picks.sort_unstable_by_key(|&(p, _)| p);
        record.rows.push(RowRecord {
            original,
            chosen: picks.iter().map(|&(p, _)| p).collect(),
            replaced_by: picks.iter().map(|&(_, r)| r).collect(),
            eligible: eligible.len(),
        });
    }
    if mlm_labels.iter().all(|&l| l == IGNORE_INDEX) {
        // Only when every drawn sentence is all [UNK]/specials: an MLM loss over nothing is NaN.
        return Err(EngineError::Data(
            "no token of this batch can be masked: its sentences hold only special tokens or [UNK]"
                .into(),
        ));
    }
    let batch = Batch {
        input_ids,
        token_type_ids,
        attention_mask,
        mlm_labels: Some(mlm_labels),
        nsp_labels: Some(nsp_labels),
    };
    Ok((batch, record))
}

/// A batch for next-token training (a decoder, `BertLMHeadModel`): `batch_size` sentences
/// drawn uniformly, each `[CLS] sentence [SEP] [PAD]…` (T = max_len, the sentence cut to fit).
/// Position t is labelled with the token at t + 1, so every real token after [CLS] is
/// predicted, [SEP] last (generation stops there); padding and the last real position are
/// IGNORE_INDEX. These are HF's labels (the input ids) shifted as `BertLMHeadModel` shifts
/// them. No NSP labels; the record holds each row's ids and no MLM picks.
pub fn make_next_token_batch(
    corpus: &Corpus,
    config: &BatchConfig,
    rng: &mut Rng,
) -> Result<(Batch, BatchRecord)> {
    config.validate()?;
    let (b, t) = (config.batch_size, config.max_len);
    let mut input_ids = Array2::<u32>::from_elem((b, t), corpus.pad); // (B, T)
    let mut attention_mask = Array2::<u8>::zeros((b, t)); // (B, T)
    let mut record = BatchRecord {
        rows: Vec::with_capacity(b),
    };
    for row in 0..b {
        let sentence = corpus.sentence(rng.below(corpus.len()));
        let k = sentence.len().min(t - 2);
        let ids = input_ids
            .row_mut(row)
            .into_slice()
            .expect("standard layout");
        ids[0] = corpus.cls;
        ids[1..1 + k].copy_from_slice(&sentence[..k]);
        ids[1 + k] = corpus.sep;
        attention_mask
            .row_mut(row)
            .slice_mut(ndarray::s![..k + 2])
            .fill(1);
        record.rows.push(RowRecord {
            original: ids.to_vec(),
            ..RowRecord::default()
        });
    }
    let hf_labels = Array2::from_shape_fn((b, t), |(r, p)| {
        if attention_mask[[r, p]] != 0 {
            input_ids[[r, p]] as i64
        } else {
            IGNORE_INDEX
        }
    });
    let batch = Batch {
        token_type_ids: Array2::zeros((b, t)),
        input_ids,
        attention_mask,
        mlm_labels: Some(shift_labels(&hf_labels)),
        nsp_labels: None,
    };
    Ok((batch, record))
}

/// Exactly ⌊B/2⌋ of each label, a coin for the odd one out, in random order.
fn nsp_labels(b: usize, rng: &mut Rng) -> Vec<u32> {
    let mut labels: Vec<u32> = (0..b)
        .map(|r| if r < b / 2 { IS_NEXT } else { NOT_NEXT })
        .collect();
    if b % 2 == 1 {
        labels[b - 1] = if rng.bernoulli(0.5) {
            IS_NEXT
        } else {
            NOT_NEXT
        };
    }
    rng.shuffle(&mut labels);
    labels
}

/// (i, j): j = i + 1 for IsNext; for NotNext j is uniform over the sentences other than i + 1.
fn pick_pair(corpus: &Corpus, label: u32, rng: &mut Rng) -> (usize, usize) {
    let n = corpus.len();
    if label == IS_NEXT {
        let i = rng.below(n - 1);
        return (i, i + 1);
    }
    let i = rng.below(n);
    if i + 1 < n {
        // n − 1 candidates: every index but i + 1.
        let j = rng.below(n - 1);
        (i, if j > i { j + 1 } else { j })
    } else {
        (i, rng.below(n))
    }
}

/// BERT's masking of one row, in place. `ids`/`labels` cover the row's real tokens. Leaves
/// the row's eligible positions in `eligible`; returns each picked position and what it became.
fn mask_tokens(
    corpus: &Corpus,
    config: &BatchConfig,
    ids: &mut [u32],
    labels: &mut [i64],
    eligible: &mut Vec<usize>,
    rng: &mut Rng,
) -> Vec<(usize, Replacement)> {
    eligible.clear();
    eligible.extend((0..ids.len()).filter(|&p| !corpus.is_special(ids[p])));
    let wanted = (eligible.len() as f32 * config.mask_prob).round() as usize;
    let n_pred = wanted
        .max(1)
        .min(config.max_predictions)
        .min(eligible.len());
    // Partial Fisher–Yates: the first n_pred entries become a uniform sample without replacement.
    let mut picks = Vec::with_capacity(n_pred);
    for k in 0..n_pred {
        let pick = k + rng.below(eligible.len() - k);
        eligible.swap(k, pick);
        let p = eligible[k];
        labels[p] = ids[p] as i64;
        let u = rng.uniform();
        let became = if u < 0.8 {
            ids[p] = corpus.mask;
            Replacement::Mask
        } else if u < 0.9 {
            ids[p] = corpus.random_token(rng);
            Replacement::Random
        } else {
            Replacement::Kept
        };
        picks.push((p, became));
    }
    picks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::build_word_vocab;

    fn corpus(text: &str) -> Result<Corpus> {
        Corpus::parse(
            text,
            &Tokenizer::word_level(build_word_vocab("a b c d e f g").unwrap()),
        )
    }

    #[test]
    fn max_predictions_is_the_decimal_ceiling_and_never_lowers_the_rate() {
        assert_eq!(max_predictions(128, 0.15), 20); // BERT's own setting
        assert_eq!(max_predictions(100, 0.15), 15); // not 16 from the f32 0.150000006
        assert_eq!(max_predictions(5, 0.01), 1);
        assert_eq!(max_predictions(30, f32::NAN), 1);
        for percent in 1..=100usize {
            let p = percent as f32 / 100.0;
            for t in 5..=4096 {
                let cap = max_predictions(t, p);
                assert_eq!(cap, (t * percent).div_ceil(100).max(1), "T {t}, p {p}");
                // make_batch's rule for the most maskable tokens a row of T can have.
                let wanted = (((t - 3) as f32 * p).round() as usize).max(1);
                assert!(wanted <= cap, "T {t}, p {p}: {wanted} > {cap}");
            }
        }
    }

    #[test]
    fn parse_keeps_non_empty_lines_in_order() {
        let c = corpus("  a b \n\n\u{7}\r\nc d e\r\n f \n").unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c.sentence(0), [5, 6]);
        assert_eq!(c.sentence(2), [10]);
        assert_eq!(c.n_tokens(), 6);
    }

    #[test]
    fn random_tokens_skip_the_specials() {
        let c = corpus("a\nb").unwrap();
        let mut rng = Rng::new(0);
        let mut seen = [0usize; 12];
        for _ in 0..7000 {
            seen[c.random_token(&mut rng) as usize] += 1;
        }
        assert!(seen[..5].iter().all(|&n| n == 0), "{seen:?}");
        assert!(seen[5..].iter().all(|&n| n > 800), "{seen:?}");
    }

    #[test]
    fn a_corpus_of_unknown_words_is_an_error() {
        let e = corpus("zzz qqq\n[MASK] yyy").unwrap_err();
        assert!(matches!(e, EngineError::Data(m) if m.contains("nothing to mask")));
    }

    #[test]
    fn one_sentence_or_none_is_an_error() {
        for text in ["", "  \n\n", "a b c", "a\n\u{1}\n"] {
            assert!(
                matches!(corpus(text), Err(EngineError::Data(_))),
                "{text:?}"
            );
        }
    }

    #[test]
    fn odd_batches_balance_by_a_fair_coin() {
        let mut rng = Rng::new(5);
        let next: usize = (0..4000).map(|_| nsp_labels(1, &mut rng)[0] as usize).sum();
        assert!((next as f32 / 4000.0 - 0.5).abs() < 0.03, "{next}");
        let labels = nsp_labels(6, &mut rng);
        assert_eq!(labels.iter().filter(|&&l| l == IS_NEXT).count(), 3);
    }
}
