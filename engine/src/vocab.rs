//! The vocabulary: `vocab.txt` as Hugging Face writes it (one token per line, line i = id i),
//! and a word-level vocabulary built from a corpus for training from scratch.

use crate::error::{EngineError, Result};
use crate::tokenizer::{basic_tokenize, MAX_CHARS_PER_WORD, SPECIAL_TOKENS};
use std::collections::HashMap;

pub const PAD: &str = "[PAD]";
pub const UNK: &str = "[UNK]";
pub const CLS: &str = "[CLS]";
pub const SEP: &str = "[SEP]";
pub const MASK: &str = "[MASK]";

/// Ordered tokens (id = position) and the reverse index.
///
/// `tokens` is public to read; build or change a vocabulary only through the constructors,
/// which keep the index in step and guarantee an `[UNK]` token.
#[derive(Clone, Debug, PartialEq)]
pub struct Vocab {
    pub tokens: Vec<String>,
    index: HashMap<String, u32>,
}

impl Vocab {
    /// A vocabulary from its tokens in id order. Like HF's `load_vocab`, a token listed twice
    /// maps to its last id. Needs at least one token and an `[UNK]`.
    pub fn from_tokens(tokens: Vec<String>) -> Result<Vocab> {
        if tokens.is_empty() {
            return Err(EngineError::Vocab("the vocabulary is empty".into()));
        }
        if tokens.len() > u32::MAX as usize {
            return Err(EngineError::Vocab(format!(
                "{} tokens is too many",
                tokens.len()
            )));
        }
        let index: HashMap<String, u32> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        if !index.contains_key(UNK) {
            return Err(EngineError::Vocab(format!(
                "the vocabulary ({} tokens) has no {UNK} token: unknown words could not be encoded",
                tokens.len()
            )));
        }
        Ok(Vocab { tokens, index })
    }

    /// Parses `vocab.txt`: one token per line, `\n` or `\r\n`, final newline optional,
    /// a leading UTF-8 byte-order mark ignored.
    pub fn from_vocab_txt(text: &str) -> Result<Vocab> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let text = text.strip_suffix('\n').unwrap_or(text);
        if text.is_empty() {
            return Err(EngineError::Vocab("vocab.txt is empty".into()));
        }
        let tokens = text
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
            .collect();
        Self::from_tokens(tokens)
    }

    /// `vocab.txt` as HF's `save_vocabulary` writes it: every token followed by `\n`.
    pub fn to_vocab_txt(&self) -> String {
        let mut out = String::with_capacity(self.tokens.iter().map(|t| t.len() + 1).sum());
        for t in &self.tokens {
            out.push_str(t);
            out.push('\n');
        }
        out
    }

    pub fn id(&self, token: &str) -> Option<u32> {
        self.index.get(token).copied()
    }

    /// The id of `token`, or `[UNK]`'s when it is not in the vocabulary.
    pub fn id_or_unk(&self, token: &str) -> u32 {
        self.id(token).unwrap_or_else(|| self.index[UNK])
    }

    pub fn contains(&self, token: &str) -> bool {
        self.index.contains_key(token)
    }

    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    fn special(&self, token: &str) -> Result<u32> {
        self.id(token)
            .ok_or_else(|| EngineError::Vocab(format!("the vocabulary has no {token} token")))
    }
    pub fn pad_id(&self) -> Result<u32> {
        self.special(PAD)
    }
    pub fn unk_id(&self) -> Result<u32> {
        self.special(UNK)
    }
    pub fn cls_id(&self) -> Result<u32> {
        self.special(CLS)
    }
    pub fn sep_id(&self) -> Result<u32> {
        self.special(SEP)
    }
    pub fn mask_id(&self) -> Result<u32> {
        self.special(MASK)
    }

    /// Ids of the five special tokens that are present, for "is this position special?".
    pub fn special_ids(&self) -> Vec<u32> {
        SPECIAL_TOKENS.iter().filter_map(|t| self.id(t)).collect()
    }
}

/// A word-level vocabulary for training from scratch: `[PAD]`=0 `[UNK]`=1 `[CLS]`=2 `[SEP]`=3
/// `[MASK]`=4, then every word BERT's basic tokenizer yields (lower-cased, punctuation split),
/// most frequent first, ties alphabetical so the ids depend on the corpus alone. Words over
/// 100 characters are left out: BERT's tokenizer makes them `[UNK]` anyway.
pub fn build_word_vocab(corpus: &str) -> Result<Vocab> {
    Ok(build_word_vocab_with_limit(corpus, usize::MAX)?.0)
}

/// As `build_word_vocab`, keeping at most `max_size` tokens (specials included): the rarest
/// words then map to `[UNK]`. Also returns how many distinct words the corpus has, so a
/// caller can say how many were left out.
pub fn build_word_vocab_with_limit(corpus: &str, max_size: usize) -> Result<(Vocab, usize)> {
    if max_size <= SPECIAL_TOKENS.len() {
        return Err(EngineError::Vocab(format!(
            "a vocabulary limit of {max_size} leaves no room for words after the {} special tokens",
            SPECIAL_TOKENS.len()
        )));
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    for word in basic_tokenize(corpus, true) {
        if !SPECIAL_TOKENS.contains(&word.as_str()) && word.chars().count() <= MAX_CHARS_PER_WORD {
            *counts.entry(word).or_insert(0) += 1;
        }
    }
    if counts.is_empty() {
        return Err(EngineError::Vocab(
            "the corpus has no words to build a vocabulary from".into(),
        ));
    }
    let distinct_words = counts.len();
    let mut words: Vec<(String, usize)> = counts.into_iter().collect();
    words.sort_unstable_by(|(wa, ca), (wb, cb)| cb.cmp(ca).then_with(|| wa.cmp(wb)));
    let tokens = SPECIAL_TOKENS
        .iter()
        .map(|s| s.to_string())
        .chain(words.into_iter().map(|(w, _)| w))
        .take(max_size)
        .collect();
    Ok((Vocab::from_tokens(tokens)?, distinct_words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocab_txt_round_trips_and_tolerates_crlf_and_missing_final_newline() {
        let v = Vocab::from_vocab_txt("[PAD]\r\n[UNK]\r\nhello\r\n##s").unwrap();
        assert_eq!(v.tokens, ["[PAD]", "[UNK]", "hello", "##s"]);
        assert_eq!(v.to_vocab_txt(), "[PAD]\n[UNK]\nhello\n##s\n");
        assert_eq!(Vocab::from_vocab_txt(&v.to_vocab_txt()).unwrap(), v);
        assert_eq!(v.id("##s"), Some(3));
        assert_eq!(v.token(2), Some("hello"));
        assert_eq!(v.token(4), None);
        assert_eq!(v.id_or_unk("nope"), 1);
        assert_eq!(v.pad_id(), Ok(0));
        assert!(matches!(v.mask_id(), Err(EngineError::Vocab(m)) if m.contains("[MASK]")));
    }

    #[test]
    fn empty_vocab_or_one_without_unk_is_an_error() {
        for text in ["", "\n", "\u{feff}"] {
            assert!(
                matches!(Vocab::from_vocab_txt(text), Err(EngineError::Vocab(m)) if m.contains("empty"))
            );
        }
        assert!(
            matches!(Vocab::from_vocab_txt("[PAD]\na\n"), Err(EngineError::Vocab(m)) if m.contains("[UNK]"))
        );
    }

    #[test]
    fn word_vocab_orders_by_frequency_then_alphabet() {
        let v = build_word_vocab("The cat sat.\nthe dog sat, the END [MASK]").unwrap();
        assert_eq!(
            v.tokens,
            [
                "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "sat", ",", ".", "cat", "dog",
                "end"
            ]
        );
        let (capped, distinct) = build_word_vocab_with_limit("b b a c c c", 7).unwrap();
        assert_eq!(capped.tokens[5..], ["c", "b"]);
        assert_eq!(distinct, 3);
        let (whole, distinct) = build_word_vocab_with_limit("b b a c c c", 100).unwrap();
        assert_eq!((whole.len(), distinct), (8, 3));
        assert!(build_word_vocab(" \n\t ").is_err());
        assert!(build_word_vocab_with_limit("a", 5).is_err());
    }
}
