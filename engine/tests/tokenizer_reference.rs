//! The tokenizer against Hugging Face's python `BertTokenizer`: every case in
//! tests/fixtures/tokenizer/cases.json (written by tools/make_tokenizer_fixtures.py) must give
//! exactly HF's tokens, ids, token types, attention mask and truncation.

use engine::error::EngineError;
use engine::tokenizer::Tokenizer;
use engine::vocab::Vocab;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    Plain(String),
    Repeat { repeat: String, times: usize },
}

impl Text {
    fn expand(&self) -> String {
        match self {
            Text::Plain(s) => s.clone(),
            Text::Repeat { repeat, times } => vec![repeat.as_str(); *times].join(" "),
        }
    }
}

#[derive(Deserialize)]
struct Expected {
    input_ids: Vec<u32>,
    token_type_ids: Vec<u32>,
    attention_mask: Vec<u8>,
    truncated: bool,
}

#[derive(Deserialize)]
struct Case {
    vocab: String,
    kind: String,
    do_lower_case: bool,
    text: Text,
    pair: Option<String>,
    max_len: usize,
    pad_to: Option<usize>,
    tokens: Option<Vec<String>>,
    n_tokens: Option<usize>,
    error: Option<String>,
    encoding: Option<Expected>,
}

#[derive(Deserialize)]
struct Cases {
    cases: Vec<Case>,
}

fn fixtures() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tokenizer"
    ))
}

fn load_cases() -> Vec<Case> {
    let text = std::fs::read_to_string(fixtures().join("cases.json")).expect("cases.json");
    serde_json::from_str::<Cases>(&text)
        .expect("cases.json parses")
        .cases
}

fn tokenizer(vocabs: &mut HashMap<String, Vocab>, case: &Case) -> Tokenizer {
    let vocab = vocabs
        .entry(case.vocab.clone())
        .or_insert_with(|| {
            let text = std::fs::read_to_string(fixtures().join(&case.vocab)).expect("vocab file");
            Vocab::from_vocab_txt(&text).expect("fixture vocab parses")
        })
        .clone();
    match case.kind.as_str() {
        "word_piece" => Tokenizer::word_piece(vocab, case.do_lower_case),
        "word_level" => Tokenizer::word_level(vocab),
        other => panic!("unknown tokenizer kind {other}"),
    }
}

/// Compares one case; returns a description of the first difference.
fn check(t: &Tokenizer, case: &Case) -> Result<(), String> {
    let text = case.text.expand();
    let tokens = t.tokenize(&text);
    match (&case.tokens, case.n_tokens) {
        (Some(expected), _) if &tokens != expected => {
            return Err(format!("tokens\n  ours {tokens:?}\n  HF   {expected:?}"));
        }
        (None, Some(n)) if tokens.len() != n => {
            return Err(format!("{} tokens, HF {n}", tokens.len()))
        }
        _ => {}
    }
    let got = t.encode(&text, case.pair.as_deref(), case.max_len, case.pad_to);
    match (&case.error, got, &case.encoding) {
        (Some(_), Err(EngineError::Input(m)), _) if m.contains("empty") => Ok(()),
        (Some(_), other, _) => Err(format!(
            "HF has no tokens, expected an empty-sentence error, got {other:?}"
        )),
        (None, Err(e), _) => Err(format!("encode failed: {e}")),
        (None, Ok(enc), Some(exp)) => {
            let names: Vec<&str> = enc
                .input_ids
                .iter()
                .map(|&id| t.vocab().token(id).unwrap())
                .collect();
            if enc.tokens != names {
                return Err(format!(
                    "encoding tokens {:?} are not the vocab's tokens of its ids",
                    enc.tokens
                ));
            }
            if enc.input_ids != exp.input_ids {
                return Err(format!(
                    "input_ids\n  ours {:?}\n  HF   {:?}",
                    enc.input_ids, exp.input_ids
                ));
            }
            if enc.token_type_ids != exp.token_type_ids {
                return Err(format!(
                    "token_type_ids {:?} vs HF {:?}",
                    enc.token_type_ids, exp.token_type_ids
                ));
            }
            if enc.attention_mask != exp.attention_mask {
                return Err(format!(
                    "attention_mask {:?} vs HF {:?}",
                    enc.attention_mask, exp.attention_mask
                ));
            }
            if enc.truncated != exp.truncated {
                return Err(format!(
                    "truncated {} vs HF {}",
                    enc.truncated, exp.truncated
                ));
            }
            Ok(())
        }
        (None, Ok(_), None) => Err("fixture has neither error nor encoding".into()),
    }
}

#[test]
fn tokenizer_matches_hf_bert_tokenizer_on_every_fixture_case() {
    let cases = load_cases();
    assert!(cases.len() > 200, "only {} cases", cases.len());
    let mut vocabs = HashMap::new();
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let t = tokenizer(&mut vocabs, case);
        if let Err(diff) = check(&t, case) {
            failures.push(format!(
                "case {i} ({} lower={} {:?} pair={:?} max_len={}): {diff}",
                case.kind,
                case.do_lower_case,
                case.text.expand().chars().take(60).collect::<String>(),
                case.pair,
                case.max_len
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from HF:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn fixtures_cover_the_tricky_parts() {
    // Guards the fixture file itself: a regenerated file that lost these would test less.
    let cases = load_cases();
    let has = |pred: &dyn Fn(&Case) -> bool| cases.iter().any(pred);
    let tokens = |c: &Case| c.tokens.clone().unwrap_or_default();
    assert!(
        has(&|c| tokens(c).iter().any(|t| t.starts_with("##"))),
        "no WordPiece continuation"
    );
    assert!(
        has(&|c| tokens(c).contains(&"[MASK]".to_string())),
        "no [MASK] typed in text"
    );
    assert!(
        has(&|c| tokens(c).contains(&"[UNK]".to_string())),
        "no [UNK]"
    );
    assert!(has(&|c| c.error.is_some()), "no empty text");
    assert!(
        has(&|c| c.encoding.as_ref().is_some_and(|e| e.truncated) && c.pair.is_some()),
        "no truncated pair"
    );
    assert!(
        has(&|c| c
            .encoding
            .as_ref()
            .is_some_and(|e| e.attention_mask.contains(&0))),
        "no padding"
    );
    assert!(
        has(&|c| !c.do_lower_case) && has(&|c| c.kind == "word_level"),
        "a tokenizer kind is missing"
    );
    assert!(
        has(&|c| c.text.expand().chars().count() >= 10_000),
        "no 10,000-character text"
    );
}
