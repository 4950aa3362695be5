//! The vocabulary: `vocab.txt` as Hugging Face writes it (one token per line, line i = id i),
//! and BERT's special tokens. (A word-level vocabulary is built from a corpus by the basic
//! tokenizer: `tokenizer::build_word_vocab`.)

use crate::error::{EngineError, Result};
use std::collections::HashMap;

pub const PAD: &str = "[PAD]";
pub const UNK: &str = "[UNK]";
pub const CLS: &str = "[CLS]";
pub const SEP: &str = "[SEP]";
pub const MASK: &str = "[MASK]";

/// The tokens HF never splits and matches case-sensitively in raw text, in id order of a
/// word-level vocabulary.
pub const SPECIAL_TOKENS: [&str; 5] = [PAD, UNK, CLS, SEP, MASK];

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
}
