//! BERT's tokenizer, equal to Hugging Face's python `BertTokenizer` (`BertTokenizerLegacy` in
//! transformers 5): special tokens typed in the text are cut out first, then the basic tokenizer
//! (clean, split CJK, NFC, whitespace split, lower-case and strip accents, split punctuation),
//! then WordPiece (greedy longest match, `##` continuations) or a whole-word lookup. Also the
//! word-level vocabulary a corpus gives through the basic tokenizer (`build_word_vocab`).
//!
//! Character classes follow HF's definitions; Unicode categories come from Unicode 16 tables,
//! so characters assigned after the Python build's Unicode version can differ (rare symbols).

use crate::error::{EngineError, Result};
use crate::vocab::{Vocab, CLS, MASK, PAD, SEP, SPECIAL_TOKENS, UNK};
use std::borrow::Cow;
use std::collections::HashMap;
use unicode_general_category::get_general_category;
use unicode_normalization::UnicodeNormalization;

/// HF's `max_input_chars_per_word`: longer words become `[UNK]` whole.
pub const MAX_CHARS_PER_WORD: usize = 100;

/// One encoded sequence, `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, then padding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoding {
    pub tokens: Vec<String>,
    pub input_ids: Vec<u32>,
    /// 0 for `[CLS] A [SEP]` and padding, 1 for `B [SEP]`.
    pub token_type_ids: Vec<u32>,
    /// 1 = real token, 0 = padding.
    pub attention_mask: Vec<u8>,
    /// True when tokens were cut to fit `max_len`.
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Tokenizer {
    /// Basic tokenizer (lower-cased), then each word looked up whole; unknown → `[UNK]`.
    /// On a vocabulary without `##` pieces this gives exactly what WordPiece gives.
    WordLevel { vocab: Vocab },
    /// HF's `BertTokenizer`.
    WordPiece { vocab: Vocab, do_lower_case: bool },
}

impl Tokenizer {
    pub fn word_level(vocab: Vocab) -> Self {
        Tokenizer::WordLevel { vocab }
    }

    pub fn word_piece(vocab: Vocab, do_lower_case: bool) -> Self {
        Tokenizer::WordPiece {
            vocab,
            do_lower_case,
        }
    }

    /// A WordPiece tokenizer from a checkpoint's `vocab.txt` and optional `tokenizer_config.json`.
    pub fn from_files(vocab_txt: &str, tokenizer_config_json: Option<&str>) -> Result<Self> {
        let do_lower_case = match tokenizer_config_json {
            Some(json) => do_lower_case_from_config(json)?,
            None => true,
        };
        Ok(Self::word_piece(
            Vocab::from_vocab_txt(vocab_txt)?,
            do_lower_case,
        ))
    }

    pub fn vocab(&self) -> &Vocab {
        match self {
            Tokenizer::WordLevel { vocab } | Tokenizer::WordPiece { vocab, .. } => vocab,
        }
    }

    pub fn do_lower_case(&self) -> bool {
        match self {
            Tokenizer::WordLevel { .. } => true,
            Tokenizer::WordPiece { do_lower_case, .. } => *do_lower_case,
        }
    }

    /// A `tokenizer_config.json` HF's `BertTokenizer` loads with the same behaviour.
    pub fn tokenizer_config_json(&self) -> String {
        let config = serde_json::json!({
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": self.do_lower_case(),
            "do_basic_tokenize": true,
            "tokenize_chinese_chars": true,
            "strip_accents": null,
            "unk_token": UNK, "sep_token": SEP, "pad_token": PAD, "cls_token": CLS, "mask_token": MASK,
        });
        serde_json::to_string_pretty(&config).expect("a JSON literal serialises")
    }

    /// Text → tokens, without `[CLS]`/`[SEP]`. Never fails: what the vocabulary lacks is `[UNK]`.
    pub fn tokenize(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.for_each_token(text, &mut |t| out.push(t.to_string()));
        out
    }

    /// Text → ids, without `[CLS]`/`[SEP]`.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let vocab = self.vocab();
        let mut out = Vec::new();
        self.for_each_token(text, &mut |t| out.push(vocab.id_or_unk(t)));
        out
    }

    /// Tokens back to text, as HF's `decode(..., skip_special_tokens=True)`: special tokens
    /// left out, the rest joined by spaces, a `##` piece joined to the token before it.
    pub fn detokenize(&self, tokens: &[impl AsRef<str>]) -> String {
        let vocab = self.vocab();
        let special = vocab.special_ids();
        let mut text = String::new();
        for token in tokens.iter().map(AsRef::as_ref) {
            if vocab.id(token).is_some_and(|id| special.contains(&id)) {
                continue;
            }
            match token.strip_prefix("##") {
                Some(piece) if !text.is_empty() => text.push_str(piece),
                _ => {
                    if !text.is_empty() {
                        text.push(' ');
                    }
                    text.push_str(token);
                }
            }
        }
        text
    }

    /// Calls `emit` with every token in order; no allocation per token.
    fn for_each_token(&self, text: &str, emit: &mut dyn FnMut(&str)) {
        let vocab = self.vocab();
        for_each_word(
            text,
            self.do_lower_case(),
            &mut |word, typed_special| match self {
                _ if typed_special => emit(word),
                Tokenizer::WordPiece { .. } => word_piece(vocab, word, emit),
                Tokenizer::WordLevel { .. } if is_word_level_token(vocab, word) => emit(word),
                Tokenizer::WordLevel { .. } => emit(UNK),
            },
        );
    }

    /// `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, cut to `max_len` (a pair longest side first,
    /// as HF's `truncation='longest_first'`), then padded with `[PAD]` up to `pad_to` if longer.
    pub fn encode(
        &self,
        text: &str,
        pair: Option<&str>,
        max_len: usize,
        pad_to: Option<usize>,
    ) -> Result<Encoding> {
        let n_special = if pair.is_some() { 3 } else { 2 };
        let n_segments = n_special - 1;
        if max_len < n_special + n_segments {
            return Err(EngineError::Input(format!(
                "max_len {max_len} is too short: {} needs at least {} positions",
                if pair.is_some() {
                    "[CLS] A [SEP] B [SEP]"
                } else {
                    "[CLS] A [SEP]"
                },
                n_special + n_segments
            )));
        }
        let vocab = self.vocab();
        let (cls, sep, pad) = (vocab.cls_id()?, vocab.sep_id()?, vocab.pad_id()?);
        let mut a = self.non_empty_tokens(text, "first")?;
        let mut b = match pair {
            Some(p) => self.non_empty_tokens(p, "second")?,
            None => Vec::new(),
        };
        let (keep_a, keep_b) =
            truncate_longest_first(a.len(), b.len(), max_len - n_special, pair.is_some());
        let truncated = keep_a < a.len() || keep_b < b.len();
        a.truncate(keep_a);
        b.truncate(keep_b);

        let len = n_special + keep_a + keep_b;
        let total = pad_to.map_or(len, |p| p.max(len));
        let mut enc = Encoding {
            tokens: Vec::with_capacity(total),
            input_ids: Vec::with_capacity(total),
            token_type_ids: Vec::with_capacity(total),
            attention_mask: Vec::with_capacity(total),
            truncated,
        };
        let mut push = |token: String, id: u32, type_id: u32, mask: u8| {
            enc.tokens.push(token);
            enc.input_ids.push(id);
            enc.token_type_ids.push(type_id);
            enc.attention_mask.push(mask);
        };
        push(CLS.into(), cls, 0, 1);
        for t in a {
            let id = vocab.id_or_unk(&t);
            push(t, id, 0, 1);
        }
        push(SEP.into(), sep, 0, 1);
        if pair.is_some() {
            for t in b {
                let id = vocab.id_or_unk(&t);
                push(t, id, 1, 1);
            }
            push(SEP.into(), sep, 1, 1);
        }
        for _ in len..total {
            push(PAD.into(), pad, 0, 0);
        }
        Ok(enc)
    }

    fn non_empty_tokens(&self, text: &str, which: &str) -> Result<Vec<String>> {
        let tokens = self.tokenize(text);
        if tokens.is_empty() {
            return Err(EngineError::Input(format!(
                "empty sentence: the {which} text has no tokens (only spaces or control characters)"
            )));
        }
        Ok(tokens)
    }
}

/// A whole word the vocabulary has, within WordPiece's length limit, so that a word-level
/// model saved as a `BertTokenizer` checkpoint tokenizes the same in HF.
fn is_word_level_token(vocab: &Vocab, word: &str) -> bool {
    vocab.contains(word) && word.chars().count() <= MAX_CHARS_PER_WORD
}

/// How many tokens of A and B to keep so that `len_a + len_b ≤ budget`. A single sequence is
/// cut at its end; a pair loses one token at a time from the longer side, from B on a tie
/// (HF's 'longest_first', whose closed form this is).
pub fn truncate_longest_first(
    len_a: usize,
    len_b: usize,
    budget: usize,
    is_pair: bool,
) -> (usize, usize) {
    let excess = (len_a + len_b).saturating_sub(budget);
    if excess == 0 {
        return (len_a, len_b);
    }
    if !is_pair {
        return (len_a.saturating_sub(excess), len_b);
    }
    let first = len_a.abs_diff(len_b).min(excess);
    let second = excess - first;
    let (cut_a, cut_b) = if len_a > len_b {
        (first + second / 2, second - second / 2)
    } else {
        (second / 2, first + second - second / 2)
    };
    (len_a.saturating_sub(cut_a), len_b.saturating_sub(cut_b))
}

/// HF reads `do_lower_case` from `tokenizer_config.json`; absent means `BertTokenizer`'s
/// default, true. Malformed JSON or a non-boolean value is an error, as it is for HF.
pub fn do_lower_case_from_config(json: &str) -> Result<bool> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
        EngineError::Checkpoint(format!("tokenizer_config.json is not valid JSON: {e}"))
    })?;
    let object = value.as_object().ok_or_else(|| {
        EngineError::Checkpoint("tokenizer_config.json is not a JSON object".into())
    })?;
    match object.get("do_lower_case") {
        None | Some(serde_json::Value::Null) => Ok(true),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(other) => Err(EngineError::Checkpoint(format!(
            "tokenizer_config.json: do_lower_case must be true or false, not {other}"
        ))),
    }
}

/// The words BERT's basic tokenizer yields, special tokens kept whole: what a word-level
/// vocabulary is built from.
pub fn basic_tokenize(text: &str, do_lower_case: bool) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, do_lower_case, &mut |w, _| out.push(w.to_string()));
    out
}

/// A word-level vocabulary for training from scratch: `[PAD]`=0 `[UNK]`=1 `[CLS]`=2 `[SEP]`=3
/// `[MASK]`=4, then every word BERT's basic tokenizer yields (lower-cased, punctuation split),
/// most frequent first, ties alphabetical so the ids depend on the corpus alone. Words over
/// 100 characters are left out: BERT's tokenizer makes them `[UNK]` anyway.
pub fn build_word_vocab(corpus: &str) -> Result<Vocab> {
    Ok(build_word_vocab_with_limit(corpus, usize::MAX)?.0)
}

/// Most tokens a vocabulary built from a corpus may have where a person's corpus is read (the
/// page, `attention-lab train`'s default run). A 1 MB corpus has tens of thousands of
/// distinct words; the MLM head's cost grows with each, and words seen once or twice are too
/// rare to learn anyway.
pub const WORD_VOCAB_LIMIT: usize = 8192;

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

/// HF's `PreTrainedTokenizer.tokenize` up to WordPiece: special tokens typed in the raw text
/// are cut out (leftmost match, case-sensitive, like HF's added-tokens trie) and reported with
/// `typed_special = true`; the text between goes through the basic tokenizer.
fn for_each_word(text: &str, do_lower_case: bool, emit: &mut dyn FnMut(&str, bool)) {
    let mut rest = text;
    // Every special token starts with '[', so only those positions are candidates.
    while let Some((at, special)) = rest.match_indices('[').find_map(|(i, _)| {
        SPECIAL_TOKENS
            .iter()
            .find(|s| rest[i..].starts_with(**s))
            .map(|s| (i, *s))
    }) {
        basic_tokenize_piece(&rest[..at], do_lower_case, emit);
        emit(special, true);
        rest = &rest[at + special.len()..];
    }
    basic_tokenize_piece(rest, do_lower_case, emit);
}

/// HF's `BasicTokenizer.tokenize` with `never_split` = the special tokens (one can appear once
/// control characters are dropped): clean, split CJK, NFC, split on whitespace, lower-case and
/// strip accents, split punctuation.
fn basic_tokenize_piece(text: &str, do_lower_case: bool, emit: &mut dyn FnMut(&str, bool)) {
    // Printable ASCII with \t \n \r only: cleaning, CJK and NFC change nothing.
    let plain = text
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) || matches!(b, b'\t' | b'\n' | b'\r'));
    let prepared: Cow<str> = if plain {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(split_cjk(&clean_text(text)).nfc().collect())
    };
    let mut word_buf = String::new();
    for token in prepared.split_whitespace() {
        if SPECIAL_TOKENS.contains(&token) {
            emit(token, false);
            continue;
        }
        // strip_accents=None follows do_lower_case, as in the original BERT.
        let word = if !do_lower_case {
            token
        } else if token.is_ascii() {
            word_buf.clear();
            word_buf.push_str(token);
            word_buf.make_ascii_lowercase();
            &word_buf
        } else {
            word_buf = strip_accents(&token.to_lowercase());
            &word_buf
        };
        split_on_punctuation(word, &mut |w| emit(w, false));
    }
}

/// Drops U+0000, U+FFFD and control characters (category C*); whitespace becomes a space.
fn clean_text(text: &str) -> String {
    text.chars()
        .filter(|&c| !(c == '\0' || c == '\u{fffd}' || is_control(c)))
        .map(|c| if is_whitespace(c) { ' ' } else { c })
        .collect()
}

/// Surrounds CJK ideographs with spaces so each becomes its own word.
fn split_cjk(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_chinese_char(c) {
            out.push(' ');
            out.push(c);
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// NFD, then drop nonspacing marks (Mn): "Café" → "Cafe".
fn strip_accents(text: &str) -> String {
    text.nfd()
        .filter(|&c| get_general_category(c).abbreviation() != "Mn")
        .collect()
}

/// Every punctuation character becomes its own word; runs between them stay together.
fn split_on_punctuation(word: &str, emit: &mut dyn FnMut(&str)) {
    let mut start = 0;
    for (i, c) in word.char_indices() {
        if is_punctuation(c) {
            if start < i {
                emit(&word[start..i]);
            }
            emit(&word[i..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    if start < word.len() {
        emit(&word[start..]);
    }
}

/// Greedy longest-match-first WordPiece: "unaffable" → un ##aff ##able. A word longer than
/// 100 characters, or with any span no piece covers, becomes a single `[UNK]`.
fn word_piece(vocab: &Vocab, word: &str, emit: &mut dyn FnMut(&str)) {
    // Byte offset of every char boundary, so pieces are sliced by character as HF does.
    let bounds: Vec<usize> = word
        .char_indices()
        .map(|(i, _)| i)
        .chain([word.len()])
        .collect();
    let n_chars = bounds.len() - 1;
    if n_chars > MAX_CHARS_PER_WORD {
        return emit(UNK);
    }
    // Piece ends (in chars) first, emitted only once the whole word decomposes.
    let mut ends = Vec::new();
    let mut candidate = String::with_capacity(word.len() + 2);
    let mut start = 0;
    while start < n_chars {
        let found = (start + 1..=n_chars).rev().find(|&end| {
            candidate.clear();
            if start > 0 {
                candidate.push_str("##");
            }
            candidate.push_str(&word[bounds[start]..bounds[end]]);
            vocab.contains(&candidate)
        });
        match found {
            Some(end) => ends.push(end),
            None => return emit(UNK),
        }
        start = *ends.last().unwrap();
    }
    let mut start = 0;
    for end in ends {
        candidate.clear();
        if start > 0 {
            candidate.push_str("##");
        }
        candidate.push_str(&word[bounds[start]..bounds[end]]);
        emit(&candidate);
        start = end;
    }
}

/// HF's `_is_whitespace`: space, \t, \n, \r and category Zs.
fn is_whitespace(c: char) -> bool {
    match c {
        ' ' | '\t' | '\n' | '\r' => true,
        _ if c.is_ascii() => false,
        _ => get_general_category(c).abbreviation() == "Zs",
    }
}

/// HF's `_is_control`: category C* except \t, \n, \r (which count as whitespace).
fn is_control(c: char) -> bool {
    match c {
        '\t' | '\n' | '\r' => false,
        _ if c.is_ascii() => c.is_ascii_control(),
        _ => get_general_category(c).abbreviation().starts_with('C'),
    }
}

/// HF's `_is_punctuation`: every non-alphanumeric printable ASCII character, plus category P*.
fn is_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation(); // exactly 33–47, 58–64, 91–96, 123–126
    }
    get_general_category(c).abbreviation().starts_with('P')
}

/// HF's `_is_chinese_char`: the CJK Unified Ideographs blocks and their extensions.
fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_wordpiece(lower: bool) -> Tokenizer {
        let tokens = "[PAD] [UNK] [CLS] [SEP] [MASK] un ##aff ##able the cafe , ! hello 中 ##s";
        let vocab = Vocab::from_tokens(tokens.split(' ').map(String::from).collect()).unwrap();
        Tokenizer::word_piece(vocab, lower)
    }

    #[test]
    fn basic_tokenizer_cleans_splits_and_lowercases() {
        assert_eq!(
            basic_tokenize("Héllo,\u{0}  WORLD!!\t中文 a[MASK]b [mask]", true),
            ["hello", ",", "world", "!", "!", "中", "文", "a", "[MASK]", "b", "[", "mask", "]"]
        );
        assert_eq!(basic_tokenize("Héllo", false), ["Héllo"]);
        assert!(basic_tokenize("\u{7}\u{fffd}  \u{200b}", true).is_empty());
    }

    #[test]
    fn wordpiece_is_greedy_longest_first_and_unk_when_stuck() {
        let t = tiny_wordpiece(true);
        assert_eq!(
            t.tokenize("unaffable Café!"),
            ["un", "##aff", "##able", "cafe", "!"]
        );
        assert_eq!(
            t.tokenize("unx 😀 hellos"),
            ["[UNK]", "[UNK]", "hello", "##s"]
        );
        assert_eq!(t.tokenize(&"s".repeat(101)), ["[UNK]"]);
        assert_eq!(tiny_wordpiece(false).tokenize("Café"), ["[UNK]"]);
    }

    #[test]
    fn detokenize_joins_pieces_and_skips_special_tokens() {
        let vocab =
            Vocab::from_vocab_txt("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nplay\n##ing\nwe\n").unwrap();
        let t = Tokenizer::word_piece(vocab, true);
        let tokens = ["[CLS]", "we", "play", "##ing", "[SEP]"];
        assert_eq!(t.detokenize(&tokens), "we playing");
        assert_eq!(t.detokenize(&t.tokenize("we playing")), "we playing");
        assert_eq!(t.detokenize(&[] as &[&str]), "");
    }

    #[test]
    fn encode_builds_pairs_truncates_and_pads() {
        let t = tiny_wordpiece(true);
        let e = t.encode("the cafe", Some("hello"), 64, Some(8)).unwrap();
        assert_eq!(
            e.tokens,
            ["[CLS]", "the", "cafe", "[SEP]", "hello", "[SEP]", "[PAD]", "[PAD]"]
        );
        assert_eq!(e.input_ids, [2, 8, 9, 3, 12, 3, 0, 0]);
        assert_eq!(e.token_type_ids, [0, 0, 0, 0, 1, 1, 0, 0]);
        assert_eq!(e.attention_mask, [1, 1, 1, 1, 1, 1, 0, 0]);
        assert!(!e.truncated);
        let cut = t
            .encode("the the the the", Some("hello"), 6, Some(3))
            .unwrap();
        assert_eq!(
            cut.tokens,
            ["[CLS]", "the", "the", "[SEP]", "hello", "[SEP]"]
        );
        assert!(cut.truncated);
        assert!(
            matches!(t.encode(" \u{1} ", None, 8, None), Err(EngineError::Input(m)) if m.contains("empty"))
        );
        assert!(t.encode("the", Some("the"), 4, None).is_err());
    }

    #[test]
    fn longest_first_matches_hf_closed_form() {
        // One token at a time from the longer side, from B on ties.
        for a in 0..8 {
            for b in 0..8 {
                for budget in 0..16 {
                    let (mut ka, mut kb) = (a, b);
                    while ka + kb > budget {
                        if ka > kb {
                            ka -= 1
                        } else {
                            kb -= 1
                        }
                    }
                    assert_eq!(
                        truncate_longest_first(a, b, budget, true),
                        (ka, kb),
                        "{a} {b} {budget}"
                    );
                }
            }
        }
        assert_eq!(truncate_longest_first(5, 0, 3, false), (3, 0));
    }

    #[test]
    fn odd_inputs_never_panic() {
        let t = tiny_wordpiece(true);
        let long_word = "ab".repeat(5000);
        let emoji_run = "😀🤗\u{200d}".repeat(2000);
        let controls: String = (0u32..0x300).filter_map(char::from_u32).collect();
        for text in [
            &long_word, &emoji_run, &controls, "[", "[MASK", "]]][[", "\u{301}", "\u{fffd}",
        ] {
            let tokens = t.tokenize(text);
            assert!(
                tokens.iter().all(|tok| t.vocab().contains(tok)),
                "{tokens:?}"
            );
            let _ = t.encode(text, Some(text), 16, Some(20));
        }
        assert_eq!(t.tokenize(&long_word), ["[UNK]"]);
    }

    #[test]
    fn do_lower_case_defaults_to_true() {
        assert_eq!(do_lower_case_from_config("{}"), Ok(true));
        assert_eq!(
            do_lower_case_from_config(r#"{"do_lower_case": false}"#),
            Ok(false)
        );
        assert!(do_lower_case_from_config("{").is_err());
        assert!(do_lower_case_from_config(r#"{"do_lower_case": "yes"}"#).is_err());
        let t = tiny_wordpiece(false);
        assert_eq!(
            do_lower_case_from_config(&t.tokenizer_config_json()),
            Ok(false)
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
