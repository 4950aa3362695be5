//! The sequence-to-sequence tasks built from the corpus, and their batches.

use super::batch::Seq2SeqBatch;
use crate::batch::IGNORE_INDEX;
use crate::data::{BatchConfig, Corpus};
use crate::error::Result;
use crate::rng::Rng;
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// The sequence-to-sequence tasks built from the corpus (the page's "Task").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// A sentence to itself.
    #[default]
    Copy,
    /// A sentence to its tokens in reverse order.
    Reverse,
    /// Each line to the line that follows it.
    Reply,
}

impl Task {
    /// The (source, target) tokens of example `i` (for Reply, i < sentences − 1).
    pub fn pair(self, corpus: &Corpus, i: usize) -> (&[u32], Vec<u32>) {
        let source = corpus.sentence(i);
        let target = match self {
            Task::Copy => source.to_vec(),
            Task::Reverse => source.iter().rev().copied().collect(),
            Task::Reply => corpus.sentence(i + 1).to_vec(),
        };
        (source, target)
    }

    /// How many examples the corpus gives.
    pub fn examples(self, corpus: &Corpus) -> usize {
        match self {
            Task::Reply => corpus.len() - 1,
            Task::Copy | Task::Reverse => corpus.len(),
        }
    }
}

/// Copy and Reverse draw half their sources from the corpus's sentences and half as 2 to 8
/// words drawn at random from the corpus: with only the sentences (a few dozen), a model
/// memorises them instead of learning to copy or reverse, and fails on a sentence it has not
/// seen.
const MAX_RANDOM_WORDS: usize = 8;

/// `batch_size` examples of `task` drawn uniformly: sources `[CLS] s [SEP]` padded to T, and
/// targets' labels `t [SEP]`, −100 after (each cut to fit T = max_len), the decoder's inputs
/// shifted right from [CLS].
pub fn make_seq2seq_batch(
    corpus: &Corpus,
    config: &BatchConfig,
    task: Task,
    rng: &mut Rng,
) -> Result<Seq2SeqBatch> {
    config.validate()?;
    let (b, t) = (config.batch_size, config.max_len);
    let (cls, sep, _) = corpus.cls_sep_mask();
    let pad = corpus.pad_id();
    let mut source_ids = Array2::from_elem((b, t), pad); // (B, Ts)
    let mut source_mask = Array2::<u8>::zeros((b, t)); // (B, Ts)
    let mut labels = Array2::from_elem((b, t), IGNORE_INDEX); // (B, Tt)
    for row in 0..b {
        let words;
        let (source, target) = if task != Task::Reply && rng.bernoulli(0.5) {
            let n = 2 + rng.below(MAX_RANDOM_WORDS.min(t - 2).max(2) - 1);
            words = (0..n)
                .map(|_| {
                    let s = corpus.sentence(rng.below(corpus.len()));
                    s[rng.below(s.len())]
                })
                .collect::<Vec<u32>>();
            let target = match task {
                Task::Reverse => words.iter().rev().copied().collect(),
                _ => words.clone(),
            };
            (&words[..], target)
        } else {
            task.pair(corpus, rng.below(task.examples(corpus)))
        };
        let k = source.len().min(t - 2);
        source_ids[[row, 0]] = cls;
        for (p, &id) in source[..k].iter().enumerate() {
            source_ids[[row, 1 + p]] = id;
        }
        source_ids[[row, 1 + k]] = sep;
        source_mask
            .row_mut(row)
            .slice_mut(ndarray::s![..k + 2])
            .fill(1);
        let n = target.len().min(t - 1);
        for (p, &id) in target[..n].iter().chain([&sep]).enumerate() {
            labels[[row, p]] = id as i64;
        }
    }
    Ok(Seq2SeqBatch::new(source_ids, source_mask, labels, cls, pad))
}
