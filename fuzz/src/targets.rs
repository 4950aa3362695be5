//! The fuzz targets: every parser that reads user input, each followed by the code that
//! consumes what it parsed (a tokenizer's ids go through `encode`, a batch through the model's
//! forward and backward), since a parser that accepts a bad value moves the crash downstream.

use crate::Target;
use engine::backward::backward;
use engine::checkpoint::{self, CheckpointFiles};
use engine::data::{make_batch, BatchConfig, Corpus};
use engine::forward::{forward, ForwardOptions};
use engine::optim::OptimizerConfig;
use engine::tokenizer::{build_word_vocab_with_limit, Tokenizer};
use engine::train::{TrainSettings, Trainer};
use engine::vocab::Vocab;
use engine::{Batch, BertConfig, BertForPreTraining, MaskMode, Rng};
use std::sync::OnceLock;

const MODEL_CONFIG: &str = include_str!("../../engine/tests/fixtures/reference/model/config.json");
const MODEL_VOCAB: &str = include_str!("../../engine/tests/fixtures/reference/model/vocab.txt");
const MODEL_TOKENIZER_CONFIG: &str =
    include_str!("../../engine/tests/fixtures/reference/model/tokenizer_config.json");
const MODEL_WEIGHTS: &[u8] =
    include_bytes!("../../engine/tests/fixtures/reference/model/model.safetensors");
const TRAIN_FIXTURE: &str =
    include_str!("../../engine/tests/fixtures/reference/train_padding.json");

pub const ALL: &[Target] = &[
    Target {
        name: "wordpiece",
        seeds: wordpiece_seeds,
        dictionary: TEXT_WORDS,
        hot_prefix: 0,
        run: wordpiece,
    },
    Target {
        name: "word_tokenizer",
        seeds: corpus_seeds,
        dictionary: TEXT_WORDS,
        hot_prefix: 0,
        run: word_tokenizer,
    },
    Target {
        name: "vocab_txt",
        seeds: vocab_seeds,
        dictionary: TEXT_WORDS,
        hot_prefix: 0,
        run: vocab_txt,
    },
    Target {
        name: "config_json",
        seeds: config_seeds,
        dictionary: JSON_WORDS,
        hot_prefix: 0,
        run: config_json,
    },
    Target {
        name: "safetensors",
        seeds: safetensors_seeds,
        dictionary: SAFETENSORS_WORDS,
        // The 8-byte length and the JSON header; the rest is raw tensor data.
        hot_prefix: 4096,
        run: safetensors,
    },
    Target {
        name: "training_state",
        seeds: training_state_seeds,
        dictionary: SAFETENSORS_WORDS,
        hot_prefix: 4096,
        run: training_state,
    },
    Target {
        name: "batch_json",
        seeds: batch_seeds,
        dictionary: JSON_WORDS,
        hot_prefix: 0,
        run: batch_json,
    },
];

const TEXT_WORDS: &[&str] = &[
    "[MASK]",
    "[CLS]",
    "[SEP]",
    "[PAD]",
    "[UNK]",
    "##",
    "##s",
    " ",
    "\t",
    "\n",
    "\r\n",
    "é",
    "ﬁ",
    "İ",
    "ß",
    "中文",
    "🙂",
    "👩‍👩‍👧",
    "\u{200d}",
    "\u{0301}",
    "\u{fffd}",
    "\u{0}",
    "\u{feff}",
    "...",
    "?!",
    "'s",
    "hello",
    "the",
    "dog",
];

const JSON_WORDS: &[&str] = &[
    "\"hidden_size\":",
    "\"num_attention_heads\":",
    "\"num_hidden_layers\":",
    "\"intermediate_size\":",
    "\"vocab_size\":",
    "\"max_position_embeddings\":",
    "\"type_vocab_size\":",
    "\"layer_norm_eps\":",
    "\"hidden_act\":",
    "\"pad_token_id\":",
    "\"input_ids\":",
    "\"token_type_ids\":",
    "\"attention_mask\":",
    "\"mlm_labels\":",
    "\"nsp_labels\":",
    "\"batch\":",
    "0",
    "-1",
    "-100",
    "1e309",
    "-1e309",
    "1048576",
    "4294967295",
    "18446744073709551615",
    "0.5",
    "null",
    "true",
    "[]",
    "[[]]",
    "{}",
    "\"gelu\"",
    "\"relu\"",
    "\"tanh\"",
    "\"\"",
    ",",
    "[",
    "]",
    "{",
    "}",
];

const SAFETENSORS_WORDS: &[&str] = &[
    "\"dtype\":\"F16\"",
    "\"dtype\":\"BF16\"",
    "\"dtype\":\"F64\"",
    "\"dtype\":\"I64\"",
    "\"shape\":[]",
    "\"shape\":[0]",
    "\"shape\":[4294967296,4294967296]",
    "\"data_offsets\":[0,0]",
    "\"data_offsets\":[0,18446744073709551615]",
    "\"__metadata__\":{}",
    "bert.embeddings.word_embeddings.weight",
    "cls.seq_relationship.weight",
    "LayerNorm.gamma",
    "\"",
    ",",
    "]",
    "}",
    "0",
    "99999999",
];

fn text(input: &[u8]) -> String {
    String::from_utf8_lossy(input).into_owned()
}

/// The fixture checkpoint, parsed once.
fn fixture() -> &'static checkpoint::Checkpoint {
    static MODEL: OnceLock<checkpoint::Checkpoint> = OnceLock::new();
    MODEL.get_or_init(|| {
        checkpoint::load(&CheckpointFiles {
            config_json: MODEL_CONFIG.into(),
            safetensors: MODEL_WEIGHTS.to_vec(),
            vocab_txt: MODEL_VOCAB.into(),
            tokenizer_config_json: Some(MODEL_TOKENIZER_CONFIG.into()),
        })
        .expect("the fixture checkpoint loads")
    })
}

/// A WordPiece vocabulary with sub-words, accents and CJK, cased and uncased.
fn wordpiece_tokenizers() -> &'static [Tokenizer; 2] {
    static TOKENIZERS: OnceLock<[Tokenizer; 2]> = OnceLock::new();
    TOKENIZERS.get_or_init(|| {
        let tokens: Vec<String> = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "un", "##aff", "##able",
            "run", "##ning", "##s", "é", "cafe", "café", "中", "文", "?", "!", ".", "'", "Hello",
            "hello", "##lo", "he", "##l",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let vocab = Vocab::from_tokens(tokens).expect("a valid vocabulary");
        [
            Tokenizer::word_piece(vocab.clone(), true),
            Tokenizer::word_piece(vocab, false),
        ]
    })
}

fn wordpiece_seeds() -> Vec<Vec<u8>> {
    [
        "\u{1}the dog is running\tunaffable café",
        "\u{0}Hello, WORLD! 中文 text with émoji 🙂",
        "\u{3}[MASK] dog [SEP] the",
        "\u{2}  \t ",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// Byte 0 picks the tokenizer, pair or not, and padding; the rest is "A\tB".
fn wordpiece(input: &[u8]) -> Result<(), String> {
    let Some((&options, rest)) = input.split_first() else {
        return Err("empty".into());
    };
    let tokenizer = &wordpiece_tokenizers()[usize::from(options & 1)];
    let s = text(rest);
    let (a, b) = match s.split_once('\t') {
        Some((a, b)) if options & 2 != 0 => (a, Some(b)),
        _ => (s.as_str(), None),
    };
    let ids = tokenizer.token_ids(a);
    let tokens = tokenizer.tokenize(a);
    if ids.len() != tokens.len() {
        panic!("{} ids for {} tokens", ids.len(), tokens.len());
    }
    let max_len = 4 + usize::from(options >> 4) * 4;
    let pad_to = (options & 4 != 0).then_some(max_len + 3);
    let enc = tokenizer
        .encode(a, b, max_len, pad_to)
        .map_err(|e| e.to_string())?;
    let want = pad_to.unwrap_or(0).max(enc.input_ids.len());
    if enc.input_ids.len() > max_len.max(want) || enc.input_ids.len() != want {
        panic!(
            "encoding of {} ids for max_len {max_len}, pad_to {pad_to:?}",
            enc.input_ids.len()
        );
    }
    Ok(())
}

fn corpus_seeds() -> Vec<Vec<u8>> {
    [
        "the dog chases a red ball.\nthe cat sleeps.\nit is warm today.\n",
        "Hello!\n\nWORLD\n🙂 emoji line\n中文 line\n",
        "one\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// A corpus as the page and `train --corpus` read it: word vocabulary, sentences, batches.
fn word_tokenizer(input: &[u8]) -> Result<(), String> {
    let s = text(input);
    let (vocab, _words) = build_word_vocab_with_limit(&s, 64).map_err(|e| e.to_string())?;
    let tokenizer = Tokenizer::word_level(vocab);
    let corpus = Corpus::parse(&s, &tokenizer).map_err(|e| e.to_string())?;
    let config = BatchConfig {
        batch_size: 3,
        max_len: 12,
        ..BatchConfig::default()
    };
    let batch = make_batch(&corpus, &config, &mut Rng::new(input.len() as u64))
        .map_err(|e| e.to_string())?;
    if batch.input_ids.dim() != (3, 12) {
        panic!("batch of shape {:?}", batch.input_ids.dim());
    }
    Ok(())
}

fn vocab_seeds() -> Vec<Vec<u8>> {
    let mut both = MODEL_VOCAB.as_bytes().to_vec();
    both.push(0);
    both.extend_from_slice(MODEL_TOKENIZER_CONFIG.as_bytes());
    vec![MODEL_VOCAB.as_bytes().to_vec(), both]
}

/// `vocab.txt`, then after a NUL byte an optional `tokenizer_config.json`.
fn vocab_txt(input: &[u8]) -> Result<(), String> {
    let (vocab, config) = match input.iter().position(|&b| b == 0) {
        Some(i) => (text(&input[..i]), Some(text(&input[i + 1..]))),
        None => (text(input), None),
    };
    let tokenizer = Tokenizer::from_files(&vocab, config.as_deref()).map_err(|e| e.to_string())?;
    tokenizer
        .encode("the dog [MASK] runs", Some("a cat"), 16, Some(20))
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn config_seeds() -> Vec<Vec<u8>> {
    vec![
        MODEL_CONFIG.as_bytes().to_vec(),
        BertConfig::tiny(100).to_json().into_bytes(),
    ]
}

/// `config.json`: parsed, checked, written and read back unchanged.
fn config_json(input: &[u8]) -> Result<(), String> {
    let config = BertConfig::from_json(&text(input)).map_err(|e| e.to_string())?;
    let again = BertConfig::from_json(&config.to_json())
        .unwrap_or_else(|e| panic!("a valid config did not read back: {e}"));
    if again != config {
        panic!("config changed in a round trip");
    }
    Ok(())
}

fn safetensors_seeds() -> Vec<Vec<u8>> {
    vec![MODEL_WEIGHTS.to_vec()]
}

/// `model.safetensors` beside the fixture's config and vocabulary; a model that loads is run.
fn safetensors(input: &[u8]) -> Result<(), String> {
    let checkpoint = checkpoint::load(&CheckpointFiles {
        config_json: MODEL_CONFIG.into(),
        safetensors: input.to_vec(),
        vocab_txt: MODEL_VOCAB.into(),
        tokenizer_config_json: None,
    })
    .map_err(|e| e.to_string())?;
    let enc = checkpoint
        .tokenizer
        .encode("the dog", None, 8, Some(8))
        .map_err(|e| e.to_string())?;
    let batch = one_row(&enc.input_ids, &enc.token_type_ids, &enc.attention_mask);
    forward(
        &checkpoint.model,
        &batch,
        &ForwardOptions::inspection(MaskMode::Padding),
        &mut Rng::new(0),
    )
    .map_err(|e| e.to_string())?;
    Ok(())
}

fn one_row(ids: &[u32], types: &[u32], mask: &[u8]) -> Batch {
    let t = ids.len();
    let row = |v: Vec<u32>| ndarray::Array2::from_shape_vec((1, t), v).expect("1 × T");
    Batch {
        input_ids: row(ids.to_vec()),
        token_type_ids: row(types.to_vec()),
        attention_mask: ndarray::Array2::from_shape_vec((1, t), mask.to_vec()).expect("1 × T"),
        mlm_labels: None,
        nsp_labels: None,
    }
}

fn batch_seeds() -> Vec<Vec<u8>> {
    let fixture: serde_json::Value = serde_json::from_str(TRAIN_FIXTURE).expect("fixture JSON");
    vec![
        serde_json::to_vec(&fixture["batch"]).expect("JSON"),
        br#"{"input_ids": [[2, 5, 3]], "nsp_labels": [0]}"#.to_vec(),
    ]
}

/// A batch file for `train --batch`, then one training forward and backward on the fixture.
fn batch_json(input: &[u8]) -> Result<(), String> {
    let batch = Batch::from_json(&text(input)).map_err(|e| e.to_string())?;
    if batch.input_ids.len() > 4096 {
        // Large batches are valid; they only make the fuzzer slow.
        return Err("larger than the fuzzer runs".into());
    }
    let model: &BertForPreTraining = &fixture().model;
    let mask = [MaskMode::Padding, MaskMode::Causal, MaskMode::None][input.len() % 3];
    let out = forward(
        model,
        &batch,
        &ForwardOptions::training(mask),
        &mut Rng::new(1),
    )
    .map_err(|e| e.to_string())?;
    let mut grads = model.zeros_like();
    backward(model, &batch, &out, &mut grads).map_err(|e| e.to_string())?;
    Ok(())
}

/// A trainer on the fixture checkpoint with Adam, as the page keeps one.
fn fixture_trainer() -> Trainer {
    let settings = TrainSettings {
        optimizer: OptimizerConfig::adam(1e-3),
        batch: BatchConfig {
            batch_size: 2,
            max_len: 16,
            ..BatchConfig::default()
        },
        mask: MaskMode::Padding,
    };
    Trainer::from_checkpoint(
        fixture().clone(),
        "the dog runs in the park.\nthe cat sleeps on the mat.\nwhat is it?\n",
        settings,
        5,
    )
    .expect("a trainer on the fixture")
}

fn training_state_seeds() -> Vec<Vec<u8>> {
    let mut trainer = fixture_trainer();
    trainer.step().expect("one step");
    vec![trainer.training_state()]
}

/// `training_state.safetensors` of a kept model (IndexedDB): resumed, then one step taken.
fn training_state(input: &[u8]) -> Result<(), String> {
    let mut trainer = fixture_trainer();
    trainer.resume(input).map_err(|e| e.to_string())?;
    trainer.step().map_err(|e| e.to_string())?;
    Ok(())
}
