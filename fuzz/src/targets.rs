//! The fuzz targets: every parser that reads user input, each followed by the code that
//! consumes what it parsed (a tokenizer's ids go through `encode`, a batch through the model's
//! forward and backward), since a parser that accepts a bad value moves the crash downstream.

use crate::Target;
use engine::backward::backward;
use engine::checkpoint::{self, CheckpointFiles};
use engine::data::{make_batch, BatchConfig, Corpus};
use engine::forward::{forward, ForwardOptions};
use engine::generate::GenerateOptions;
use engine::optim::OptimizerConfig;
use engine::run::Run;
use engine::seq2seq;
use engine::tokenizer::{build_word_vocab_with_limit, Tokenizer};
use engine::train::{Objective, TrainSettings, Trainer};
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
        name: "encoder_decoder",
        seeds: encoder_decoder_seeds,
        dictionary: SAFETENSORS_WORDS,
        hot_prefix: 4096,
        run: encoder_decoder,
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
    Target {
        name: "worker_messages",
        seeds: message_seeds,
        dictionary: MESSAGE_WORDS,
        hot_prefix: 0,
        run: worker_messages,
    },
    Target {
        name: "idb_records",
        seeds: record_seeds,
        dictionary: JSON_WORDS,
        hot_prefix: 0,
        run: idb_records,
    },
    Target {
        name: "view_link",
        seeds: link_seeds,
        dictionary: LINK_WORDS,
        hot_prefix: 0,
        run: view_link,
    },
];

/// Keys, values and escapes a link holds.
const LINK_WORDS: &[&str] = &[
    "?",
    "&",
    "=",
    "+",
    "%",
    "%2",
    "%25",
    "%F0%9F%90%B1",
    "%C3",
    "%00",
    "sentence=",
    "pair=",
    "target=",
    "pad=",
    "mask=",
    "window=",
    "kernel=",
    "stage=",
    "layer=",
    "head=",
    "part=",
    "model=",
    "tour=",
    "preset=",
    "objective=",
    "task=",
    "kv=",
    "positions=",
    "attention=",
    "compare=on",
    "b-kv=",
    "b-positions=",
    "b-attention=",
    "test-hooks",
    "causal",
    "tiled",
    "softmax",
    "cross",
    "both",
    "small",
    "seq2seq",
    "reverse",
    "rotary",
    "linear",
    "0",
    "1",
    "65",
    "18446744073709551616",
    "-1",
];

/// Postcard's varints at their edges, and enum tags.
const MESSAGE_WORDS: &[&str] = &[
    "\u{0}",
    "\u{1}",
    "\u{7f}",
    "\u{80}\u{1}",
    "\u{ff}\u{ff}\u{ff}\u{ff}\u{f}",
    "\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{ff}\u{1}",
    "[MASK]",
    "\u{0}\u{0}\u{c0}\u{7f}",
    "\u{0}\u{0}\u{80}\u{ff}",
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

/// An encoder–decoder checkpoint's files (a small `EncoderDecoderModel` of two BERTs, fresh),
/// made once.
fn encoder_decoder_files() -> &'static CheckpointFiles {
    static FILES: OnceLock<CheckpointFiles> = OnceLock::new();
    FILES.get_or_init(|| {
        let mut config = BertConfig::new(0, 16, 2, 2, 32);
        config.max_position_embeddings = 16;
        let batch = BatchConfig {
            batch_size: 2,
            max_len: 10,
            ..BatchConfig::default()
        };
        let trainer = seq2seq::Seq2SeqTrainer::from_corpus(
            "the cat sat on the mat.\nthe dog ate a bone.\n",
            config,
            OptimizerConfig::adam(1e-2),
            batch,
            seq2seq::Task::Reverse,
            0,
        )
        .expect("a small encoder-decoder");
        seq2seq::to_files(&trainer.checkpoint())
    })
}

/// The checkpoint, and the same without the decoder's LM head (`decoder.cls.*`), which once
/// loaded and then aborted `inspect`.
fn encoder_decoder_seeds() -> Vec<Vec<u8>> {
    let weights = &encoder_decoder_files().safetensors;
    let st = safetensors::SafeTensors::deserialize(weights).expect("the seed's own weights");
    let headless: Vec<_> = st
        .tensors()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("decoder.cls."))
        .collect();
    let headless = safetensors::tensor::serialize(headless, None).expect("tensors it just read");
    vec![weights.clone(), headless]
}

/// An encoder–decoder's `model.safetensors` beside its config and vocabulary (both halves'
/// tensors under `encoder.` and `decoder.`); one that loads is inspected and generates, as
/// `attention-lab inspect` and `generate` do.
fn encoder_decoder(input: &[u8]) -> Result<(), String> {
    let files = CheckpointFiles {
        safetensors: input.to_vec(),
        ..encoder_decoder_files().clone()
    };
    let checkpoint = seq2seq::load(&files).map_err(|e| e.to_string())?;
    let (model, tokenizer) = (&checkpoint.model, &checkpoint.tokenizer);
    seq2seq::inspect(model, tokenizer, "the cat sat", "sat cat the").map_err(|e| e.to_string())?;
    let source = tokenizer
        .encode("the dog", None, 8, None)
        .map_err(|e| e.to_string())?;
    seq2seq::generate(model, &source.input_ids, GenerateOptions::greedy(3, None))
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
        objective: Objective::MlmNsp,
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

fn message_seeds() -> Vec<Vec<u8>> {
    use protocol::{wire, FromWorker, LabError, LabSettings, ModelBundle, ProbeInput, ToWorker};
    let to = [
        ToWorker::Reset {
            corpus: "the dog runs .\nthe cat sleeps .".into(),
            settings: LabSettings::default(),
        },
        ToWorker::Load {
            bundle: ModelBundle {
                name: "tiny".into(),
                config_json: MODEL_CONFIG.into(),
                vocab_txt: "[PAD]\n[UNK]\n".into(),
                ..ModelBundle::default()
            },
            compare: Some(ModelBundle::default()),
            corpus: String::new(),
            settings: LabSettings::default(),
        },
        ToWorker::Inspect {
            probe: ProbeInput::default(),
            at: Some(2),
        },
        ToWorker::Speed(Some(10.0)),
        ToWorker::Bench {
            iters: 5,
            warmup: 1,
        },
    ];
    let from = [
        FromWorker::Stopped {
            step: 9,
            reason: LabError::no_model(),
        },
        FromWorker::History {
            steps: vec![0, 5, 10],
        },
        FromWorker::Progress {
            points: vec![protocol::CurvePoint::default(); 2],
            points_b: vec![protocol::CurvePoint::default(); 2],
            steps_per_second: 500.0,
            playing: true,
            batch: None,
            counts: Default::default(),
        },
    ];
    // First byte: which side the message is for.
    let tagged = |side: u8, bytes: Vec<u8>| std::iter::once(side).chain(bytes).collect();
    to.iter()
        .map(|m| tagged(0, wire::encode(m).expect("encodes")))
        .chain(
            from.iter()
                .map(|m| tagged(1, wire::encode(m).expect("encodes"))),
        )
        .collect()
}

/// A message between page and worker as postcard bytes, as `worker_io` receives it: decoded,
/// and if it decodes, encoded again to the same bytes (the page and the worker read exactly
/// what the other sent).
fn worker_messages(input: &[u8]) -> Result<(), String> {
    use protocol::{wire, FromWorker, ToWorker};
    let Some((&side, bytes)) = input.split_first() else {
        return Err("empty".into());
    };
    fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(
        bytes: &[u8],
    ) -> Result<(), String> {
        let message: T = wire::decode(bytes).map_err(|e| e.to_string())?;
        let again = wire::encode(&message).map_err(|e| e.to_string())?;
        let back: T = wire::decode(&again).map_err(|e| e.to_string())?;
        let twice = wire::encode(&back).map_err(|e| e.to_string())?;
        assert_eq!(again, twice, "a message changed in a round trip");
        Ok(())
    }
    if side % 2 == 0 {
        round_trip::<ToWorker>(bytes)
    } else {
        round_trip::<FromWorker>(bytes)
    }
}

fn link_seeds() -> Vec<Vec<u8>> {
    use protocol::link;
    let mut view = link::example();
    let full = link::write(&view, &["test-hooks"]);
    view.showing = protocol::view::Showing::B;
    vec![
        full.into_bytes(),
        link::write(&view, &[]).into_bytes(),
        b"?head=2&mask=causal&stage=scores".to_vec(),
        b"?sentence=a%zz&tour=99&foo=1".to_vec(),
    ]
}

/// A link read, written from what was read, and read again: the same view, and nothing left
/// to complain about (what `write` writes, `read` reads).
fn view_link(input: &[u8]) -> Result<(), String> {
    use protocol::link;
    const CHAPTERS: usize = 14;
    let query = text(input);
    let Some(first) = link::read(&query, CHAPTERS) else {
        return Err("no view".into());
    };
    let again = link::write(&first.value, &[]);
    match link::read(&again, CHAPTERS) {
        Some(second) => {
            assert_eq!(second.notices, Vec::<String>::new(), "{again}");
            assert_eq!(second.value, first.value, "{again}");
        }
        None => assert_eq!(first.value, link::View::default(), "{again}"),
    }
    if first.notices.is_empty() {
        Ok(())
    } else {
        Err(first.notices.len().min(3).to_string())
    }
}

fn record_seeds() -> Vec<Vec<u8>> {
    use protocol::{record, CurvePoint, Curves, LabSettings, ModelBundle, ProbeInput};
    let mut curves = Curves::new();
    curves.extend((1..=40).map(|step| CurvePoint {
        step,
        loss: 5.0 / step as f32,
        mlm_loss: 4.0 / step as f32,
        nsp_loss: 0.69,
        mlm_accuracy: 0.1,
        nsp_accuracy: 0.5,
    }));
    let meta = record::encode_meta(&ModelBundle {
        name: "tiny BERT (fresh, seed 0)".into(),
        step: 40,
        config_json: MODEL_CONFIG.into(),
        vocab_txt: "[PAD]\n".into(),
        word_level: true,
        ..ModelBundle::default()
    });
    let tagged = |kind: u8, bytes: Vec<u8>| std::iter::once(kind).chain(bytes).collect();
    vec![
        tagged(0, meta.into_bytes()),
        tagged(1, record::encode_curves(&curves)),
        tagged(
            2,
            serde_json::to_vec(&LabSettings::default()).expect("JSON"),
        ),
        tagged(3, serde_json::to_vec(&ProbeInput::default()).expect("JSON")),
        tagged(4, serde_json::to_vec("the dog runs .").expect("JSON")),
    ]
}

/// What a page finds in the browser's storage from an earlier visit (IndexedDB: the kept
/// model's description and its curves; localStorage: settings, probe, corpus), read as the page
/// reads it, then used: curves are smoothed and extended, restored settings must pass the same
/// rules as typed ones.
fn idb_records(input: &[u8]) -> Result<(), String> {
    use protocol::{record, restore, rules, CurvePoint};
    let Some((&kind, bytes)) = input.split_first() else {
        return Err("empty".into());
    };
    match kind % 5 {
        0 => {
            let bundle = record::decode_meta(&text(bytes)).ok_or("unreadable model record")?;
            let again = record::decode_meta(&record::encode_meta(&bundle));
            assert_eq!(again.as_ref(), Some(&bundle), "a model record changed");
        }
        1 => {
            let mut curves = record::decode_curves(bytes).ok_or("unreadable curves")?;
            let smoothed = curves.smoothed();
            assert_eq!(smoothed.len(), curves.len());
            let _ = curves.left_range_at();
            let next = curves.last().map_or(1, |p| p.step.saturating_add(1));
            curves.push(CurvePoint {
                step: next,
                ..CurvePoint::default()
            });
            let kept = curves.clone().until(next / 2);
            assert!(kept.len() <= curves.len());
        }
        2 => {
            let restored = restore::settings(Some(&text(bytes)));
            let s = &restored.value;
            rules::learning_rate(s.learning_rate).expect("a restored rate passes");
            rules::batch_size(s.batch_size as f64).expect("a restored batch size passes");
            rules::mask_prob(s.mask_prob as f64).expect("a restored probability passes");
            rules::max_len(s.max_len as f64).expect("a restored length passes");
            rules::seed(s.seed as f64).expect("a restored seed passes");
        }
        3 => {
            let restored = restore::probe(Some(&text(bytes)));
            if let Some(n) = restored.value.pad_to {
                rules::pad_to(&n.to_string()).expect("a restored Pad to passes");
            }
        }
        _ => {
            let _ = restore::corpus(Some(&text(bytes)));
        }
    }
    Ok(())
}
