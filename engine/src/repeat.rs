//! Repeat, the next-token task where induction heads form (Olsson et al. 2022): a segment of
//! random symbols, then the same segment again, `[CLS] x₁…x_L x₁…x_L [SEP]`. The first copy
//! cannot be predicted; the second can, by a head that finds the earlier occurrence of the
//! current symbol and copies the one after it. L changes from batch to batch, so the model
//! cannot copy by position (with L fixed, "L places back" solves it with no induction).
//!
//! The task is a generator, not a corpus file: every batch is fresh, and it has its own small
//! vocabulary of symbols.

use crate::batch::{shift_labels, Batch, IGNORE_INDEX};
use crate::config::{BertConfig, PositionEmbeddingType};
use crate::data::{BatchRecord, RowRecord};
use crate::error::{EngineError, Result};
use crate::rng::Rng;
use crate::tokenizer::Tokenizer;
use crate::vocab::{Vocab, SPECIAL_TOKENS};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// The symbols' names, in vocabulary order: the alphabet's first `alphabet` of these.
const SYMBOLS: &str = "abcdefghijklmnopqrstuvwxyz0123456789";

/// One Repeat task: which symbols, and the segment lengths L drawn for each batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RepeatTask {
    /// How many symbols (at most 36: a–z, then 0–9).
    pub alphabet: usize,
    /// L is drawn uniformly from min_len..=max_len for each batch.
    pub min_len: usize,
    pub max_len: usize,
}

impl Default for RepeatTask {
    /// The setting measured to form induction heads at the tiny size (see `attention-lab train
    /// --task repeat` and `tools/induction_sweep.py`): 36 symbols, L from 4 to 24. With L up to
    /// 16, two seeds of five stuck with a layer-2 head on the earlier occurrence of the current
    /// symbol and the second copy about half right; the longer segments make copying by an
    /// induction head worth more than that.
    fn default() -> Self {
        RepeatTask {
            alphabet: 36,
            min_len: 4,
            max_len: 24,
        }
    }
}

/// How a setting fared on seeds it was not chosen on: of seeds `first`–`last`, trained
/// `steps` steps each, how many changed (the second copy's accuracy reached 0.9), at which
/// step in the median and at worst of those, and how many formed the textbook pair; of those
/// that had not, trained on to `longest` steps, how many changed `later`, by `later_step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnseenSeeds {
    pub first: u64,
    pub last: u64,
    pub steps: u64,
    pub changed: usize,
    pub median_step: u64,
    pub worst_step: u64,
    pub pairs: usize,
    pub later: usize,
    pub later_step: u64,
    pub longest: u64,
}

impl UnseenSeeds {
    pub fn count(&self) -> usize {
        (self.last - self.first + 1) as usize
    }
}

/// Where the two copies lie in a row of segment length `l`: x_i of the first copy at
/// position i, of the second at L + i (i = 1…L), [CLS] at 0 and [SEP] at 2L + 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copies {
    pub len: usize,
}

impl Copies {
    /// The copies of a row of tokens `[CLS] x₁…x_L x₁…x_L [SEP]` (any L ≥ 1), or None when the
    /// row is not one segment twice between two other tokens.
    pub fn of<T: PartialEq>(tokens: &[T]) -> Option<Copies> {
        let t = tokens.len();
        let len = t.checked_sub(2)? / 2;
        let repeated =
            t.is_multiple_of(2) && len >= 1 && tokens[1..=len] == tokens[len + 1..=2 * len];
        repeated.then_some(Copies { len })
    }

    /// T = 2L + 2.
    pub fn tokens(self) -> usize {
        2 * self.len + 2
    }

    /// Positions of the first copy whose next token is the first copy's own (x₂…x_L are
    /// predicted from them): 1…L − 1.
    pub fn first_predicting(self) -> std::ops::Range<usize> {
        1..self.len
    }

    /// Positions of the second copy whose next token is the second copy's own, so that it can
    /// be copied from the first: L + 1…2L − 1.
    pub fn second_predicting(self) -> std::ops::Range<usize> {
        self.len + 1..2 * self.len
    }

    /// The copy whose own next token position `p` predicts: 0 for the first copy
    /// (`first_predicting`), 1 for the second (`second_predicting`), None elsewhere.
    pub fn predicting_copy(self, p: usize) -> Option<usize> {
        if self.first_predicting().contains(&p) {
            Some(0)
        } else if self.second_predicting().contains(&p) {
            Some(1)
        } else {
            None
        }
    }

    /// Every query of the second copy, x₁…x_L at L + 1…2L: where the scores are averaged.
    pub fn second(self) -> std::ops::RangeInclusive<usize> {
        self.len + 1..=2 * self.len
    }

    /// For the second copy's query at `q` = L + i: the earlier occurrence of its token (i) and
    /// the token after that occurrence (i + 1), the one an induction head copies.
    pub fn duplicate_and_induction(self, q: usize) -> (usize, usize) {
        let i = q - self.len;
        (i, i + 1)
    }
}

impl RepeatTask {
    /// The setting measured to form induction heads at the tiny size (hidden 64, 2 layers,
    /// FFN 256): batch, learning rate (Adam) with a linear warm-up, rotary positions, 8 heads
    /// of 8 dimensions, and no dropout (`setting_config`). Chosen on seeds 1–10
    /// (`tools/induction_sweep.py`), where it changed within 3,000 steps in 10 of 10 (4 heads
    /// and lr 1e-3 had in 6 of 10; 8 heads alone in 8; a warm-up alone in 8; lr 3e-3 in 8, two
    /// of them collapsing), then measured on seeds 11–30 (`UNSEEN`).
    pub const BATCH_SIZE: usize = 64;
    pub const LEARNING_RATE: f64 = 2e-3;
    pub const WARMUP_STEPS: u64 = 200;
    pub const POSITIONS: PositionEmbeddingType = PositionEmbeddingType::Rotary;
    pub const HEADS: usize = 8;
    /// A seed of that setting where the textbook circuit forms soonest (a previous-token head
    /// in layer 1, an induction head in layer 2; by step 900 natively): what the page starts
    /// Repeat with, so a learner sees the circuit; the claim says how other seeds fared, and
    /// any can be chosen.
    pub const SEED: u64 = 6;
    /// The setting on the 20 seeds it was not chosen on, natively (`UnseenSeeds`).
    pub const UNSEEN: UnseenSeeds = UnseenSeeds {
        first: 11,
        last: 30,
        steps: 3000,
        changed: 17,
        median_step: 1100,
        worst_step: 2500,
        pairs: 16,
        later: 2,
        later_step: 4200,
        longest: 6000,
    };

    /// `config` as the task trains it: without dropout, which slows the change and makes it
    /// rarer.
    pub fn config(&self, config: BertConfig) -> BertConfig {
        BertConfig {
            hidden_dropout_prob: 0.0,
            attention_probs_dropout_prob: 0.0,
            ..config
        }
    }

    /// `config` with the setting's heads as well (`config`), its sizes otherwise: the page's
    /// Repeat model and `attention-lab train --task repeat`'s. With 8 heads a seed has twice
    /// the chances that one head of layer 1 turns to the previous token.
    pub fn setting_config(&self, config: BertConfig) -> BertConfig {
        BertConfig {
            num_attention_heads: Self::HEADS,
            ..self.config(config)
        }
    }

    /// Checks the task: a segment of distinct symbols needs L ≤ alphabet, and 2 ≤ L.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(EngineError::Data(m));
        if self.alphabet < 2 || self.alphabet > SYMBOLS.len() {
            return bad(format!(
                "the Repeat task's alphabet must have 2 to {} symbols, not {}",
                SYMBOLS.len(),
                self.alphabet
            ));
        }
        if self.min_len < 2 || self.min_len > self.max_len {
            return bad(format!(
                "the Repeat task's segment lengths {}–{} must be at least 2, shortest first",
                self.min_len, self.max_len
            ));
        }
        if self.max_len > self.alphabet {
            return bad(format!(
                "a segment of {} distinct symbols needs an alphabet of at least as many, not {}",
                self.max_len, self.alphabet
            ));
        }
        Ok(())
    }

    /// T of the longest row, 2·max_len + 2: the positions a model needs.
    pub fn max_tokens(&self) -> usize {
        Copies { len: self.max_len }.tokens()
    }

    /// The segment length the measurements use, two thirds of the way up the range (17 for
    /// 4–24): long enough that copying by a fixed offset cannot pass for induction.
    pub fn evaluation_len(&self) -> usize {
        self.min_len + (self.max_len - self.min_len) * 2 / 3
    }

    /// The symbols' names, in order.
    pub fn symbols(&self) -> impl Iterator<Item = String> + '_ {
        SYMBOLS.chars().take(self.alphabet).map(String::from)
    }

    /// BERT's special tokens, then the symbols.
    pub fn vocab(&self) -> Result<Vocab> {
        self.validate()?;
        let specials = SPECIAL_TOKENS.iter().map(|s| s.to_string());
        Vocab::from_tokens(specials.chain(self.symbols()).collect())
    }

    pub fn tokenizer(&self) -> Result<Tokenizer> {
        Ok(Tokenizer::word_level(self.vocab()?))
    }

    /// A sentence of the task as text, its segment drawn from `rng`: "k f q k f q".
    pub fn sentence(&self, len: usize, rng: &mut Rng) -> String {
        let names: Vec<String> = self.symbols().collect();
        let segment = self.segment(len, rng);
        segment
            .iter()
            .chain(&segment)
            .map(|&s| names[s].as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Lines of the task as a corpus text (one sentence each, every length of the range): what
    /// the Lab keeps as the run's text, and what the claims that read sentences read.
    pub fn corpus_text(&self, rng: &mut Rng) -> String {
        (self.min_len..=self.max_len)
            .map(|len| self.sentence(len, rng))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `len` distinct symbol indices (0-based in the alphabet), in random order.
    fn segment(&self, len: usize, rng: &mut Rng) -> Vec<usize> {
        let mut all: Vec<usize> = (0..self.alphabet).collect();
        rng.shuffle(&mut all);
        all.truncate(len);
        all
    }

    /// A training batch: L drawn for the batch, then `batch_size` rows
    /// `[CLS] x₁…x_L x₁…x_L [SEP]` (T = 2L + 2, no padding), each segment L distinct symbols;
    /// position t labelled with the token at t + 1 (as `data::make_next_token_batch`).
    pub fn batch(&self, batch_size: usize, rng: &mut Rng) -> Result<(Batch, BatchRecord)> {
        self.validate()?;
        let len = self.min_len + rng.below(self.max_len - self.min_len + 1);
        self.batch_of_len(batch_size, len, rng)
    }

    /// The measurements' batch: `rows` rows of segment length `len`, always the same ones.
    pub fn evaluation_batch(&self, rows: usize, len: usize) -> Result<Batch> {
        self.validate()?;
        Ok(self
            .batch_of_len(rows, len, &mut Rng::new(EVALUATION_SEED))?
            .0)
    }

    fn batch_of_len(
        &self,
        batch_size: usize,
        len: usize,
        rng: &mut Rng,
    ) -> Result<(Batch, BatchRecord)> {
        if batch_size == 0 || len < 2 || len > self.alphabet {
            return Err(EngineError::Data(format!(
                "a Repeat batch needs rows and a segment of 2 to {} symbols, not {batch_size} rows of {len}",
                self.alphabet
            )));
        }
        let t = Copies { len }.tokens();
        // Vocabulary order: the specials, then the symbols.
        let first_symbol = SPECIAL_TOKENS.len() as u32;
        let special = |name: &str| {
            SPECIAL_TOKENS
                .iter()
                .position(|&s| s == name)
                .expect("a special token") as u32
        };
        let (cls, sep) = (special(crate::vocab::CLS), special(crate::vocab::SEP));
        let mut input_ids = Array2::<u32>::zeros((batch_size, t)); // (B, T)
        let mut record = BatchRecord {
            rows: Vec::with_capacity(batch_size),
        };
        for mut row in input_ids.rows_mut() {
            let segment = self.segment(len, rng);
            row[0] = cls;
            for (i, &s) in segment.iter().enumerate() {
                row[1 + i] = first_symbol + s as u32;
                row[1 + len + i] = first_symbol + s as u32;
            }
            row[t - 1] = sep;
            record.rows.push(RowRecord {
                original: row.to_vec(),
                ..RowRecord::default()
            });
        }
        let hf_labels = input_ids.mapv(i64::from);
        debug_assert!(hf_labels.iter().all(|&l| l != IGNORE_INDEX));
        let batch = Batch {
            token_type_ids: Array2::zeros((batch_size, t)),
            attention_mask: Array2::ones((batch_size, t)),
            input_ids,
            mlm_labels: Some(shift_labels(&hf_labels)),
            nsp_labels: None,
        };
        Ok((batch, record))
    }
}

/// The evaluation batch's seed: the same rows at every measurement.
const EVALUATION_SEED: u64 = 2022;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_a_segment_of_distinct_symbols_then_the_same_segment() {
        let task = RepeatTask::default();
        let mut rng = Rng::new(1);
        for _ in 0..20 {
            let (batch, record) = task.batch(3, &mut rng).unwrap();
            let (b, t) = batch.input_ids.dim();
            assert_eq!(b, 3);
            let len = (t - 2) / 2;
            assert!((task.min_len..=task.max_len).contains(&len), "L = {len}");
            let vocab = task.vocab().unwrap();
            for (row, rec) in batch.input_ids.rows().into_iter().zip(&record.rows) {
                assert_eq!(row[0], vocab.cls_id().unwrap());
                assert_eq!(row[t - 1], vocab.sep_id().unwrap());
                let (first, second) = (
                    &row.as_slice().unwrap()[1..=len],
                    &row.as_slice().unwrap()[len + 1..=2 * len],
                );
                assert_eq!(first, second);
                let mut distinct = first.to_vec();
                distinct.sort_unstable();
                distinct.dedup();
                assert_eq!(
                    distinct.len(),
                    len,
                    "symbols repeat within the segment: {first:?}"
                );
                assert!(first.iter().all(|&id| !vocab.special_ids().contains(&id)));
                assert_eq!(rec.original, row.to_vec());
            }
            // Position t is labelled with the token at t + 1; the last has nothing after it.
            let labels = batch.mlm_labels.as_ref().unwrap();
            assert_eq!(labels[[0, 0]], i64::from(batch.input_ids[[0, 1]]));
            assert_eq!(labels[[0, t - 1]], IGNORE_INDEX);
        }
    }

    #[test]
    fn lengths_cover_the_range_from_batch_to_batch() {
        let task = RepeatTask {
            alphabet: 10,
            min_len: 3,
            max_len: 6,
        };
        let mut rng = Rng::new(7);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            seen.insert(task.batch(1, &mut rng).unwrap().0.input_ids.dim().1);
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![8, 10, 12, 14]);
    }

    #[test]
    fn a_task_that_cannot_be_made_says_why() {
        let bad = [
            RepeatTask {
                alphabet: 40,
                min_len: 4,
                max_len: 16,
            },
            RepeatTask {
                alphabet: 10,
                min_len: 4,
                max_len: 12,
            },
            RepeatTask {
                alphabet: 26,
                min_len: 8,
                max_len: 4,
            },
            RepeatTask {
                alphabet: 26,
                min_len: 1,
                max_len: 4,
            },
        ];
        for task in bad {
            assert!(task.validate().is_err(), "{task:?}");
            assert!(task.batch(2, &mut Rng::new(0)).is_err());
        }
        assert!(RepeatTask::default().evaluation_batch(0, 12).is_err());
    }

    #[test]
    fn the_text_of_a_sentence_reads_back_as_its_ids() {
        let task = RepeatTask::default();
        let text = task.sentence(5, &mut Rng::new(3));
        let words: Vec<&str> = text.split(' ').collect();
        assert_eq!(words.len(), 10);
        assert_eq!(words[..5], words[5..]);
        let ids = task.tokenizer().unwrap().token_ids(&text);
        assert!(
            ids.iter().all(|&id| id >= SPECIAL_TOKENS.len() as u32),
            "{ids:?}"
        );
    }

    #[test]
    fn the_copies_positions_follow_the_layout() {
        let c = Copies { len: 4 };
        assert_eq!(c.tokens(), 10);
        assert_eq!(c.first_predicting(), 1..4);
        assert_eq!(c.second_predicting(), 5..8);
        assert_eq!(c.second(), 5..=8);
        // [CLS] a b c d a b c d [SEP]: the second "b" (6) saw "b" at 2, then "c" at 3.
        assert_eq!(c.duplicate_and_induction(6), (2, 3));
        let row = ["[CLS]", "a", "b", "c", "d", "a", "b", "c", "d", "[SEP]"];
        assert_eq!(Copies::of(&row), Some(c));
        assert_eq!(Copies::of(&row[..9]), None, "odd");
        assert_eq!(
            Copies::of(&["[CLS]", "a", "b", "b", "a", "[SEP]"]),
            None,
            "not a repeat"
        );
        assert_eq!(Copies::of(&["[CLS]", "[SEP]"]), None);
    }
}
