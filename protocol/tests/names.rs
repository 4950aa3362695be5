//! `protocol/names.json`: the page's names for the tools outside Rust, generated from the enums
//! that own them, so the Python checker of the module's marks (`tools/check_pytorch_module.py`)
//! and the end-to-end tests (`e2e/names.mjs`) spell none of them themselves:
//!
//! - `figures`: every `data-figure` (`protocol::figure::FigureName`), each with the figure whose
//!   lines compute it in the module (`computed_as`);
//! - `stages`: every stepper button's `data-stage` (`protocol::stage::Stage::name`);
//! - `mark_features`, `mark_dims`: the words of a mark's `if` and the symbols of its shape;
//! - `views`: every attention the stepper walks, for every kind of model the page builds, as
//!   the code view sees it (`ModelShape::of` on the engine's own inspection): its features and
//!   the figures the module computes for it (`ModelShape::computed_figures`).
//!
//! The test fails when the file is not what these give; `WRITE_NAMES=1 cargo test -p
//! attention-lab-protocol --test names` writes it.

use engine::config::{AttentionType, PositionEmbeddingType};
use engine::forward::ForwardOptions;
use engine::inspect::{inspect_with, Inspection};
use engine::ops::attention::Softmax;
use engine::seq2seq::{inspect_texts, Seq2SeqCheckpoint};
use engine::tokenizer::{build_word_vocab, Tokenizer};
use engine::{BertConfig, BertForPreTraining, MaskMode, Rng};
use protocol::figure::FigureName;
use protocol::pytorch::{Dim, Feature, ModelShape};
use protocol::stage::Stage;
use protocol::{ModelInfo, ModelKind, DEFAULT_CORPUS};
use serde_json::{json, Value};
use std::path::Path;

const SENTENCE: &str = "the dog chases a ball";

/// The kinds of model the page builds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Bert,
    Decoder,
    EncoderDecoder,
}

/// The model's shape as the worker describes it to the page.
fn info_of(config: &BertConfig, kind: Kind) -> ModelInfo {
    let kind = match kind {
        Kind::Bert => ModelKind::Encoder,
        Kind::Decoder => ModelKind::Decoder { repeat: None },
        Kind::EncoderDecoder => ModelKind::EncoderDecoder(engine::seq2seq::Task::Reverse),
    };
    ModelInfo::of_config(config, kind)
}

/// Each attention the stepper can walk for this kind of model and mask: (inspection it reads,
/// cross-attention).
fn walks(config: &BertConfig, kind: Kind, mask: MaskMode) -> Vec<(Inspection, bool)> {
    let vocab = build_word_vocab(DEFAULT_CORPUS).unwrap();
    let tokenizer = Tokenizer::word_level(vocab.clone());
    let config = BertConfig {
        vocab_size: vocab.len(),
        ..config.clone()
    };
    match kind {
        Kind::Bert | Kind::Decoder => {
            let config = if kind == Kind::Decoder {
                config.decoder()
            } else {
                config
            };
            let model = BertForPreTraining::init(&config, &mut Rng::new(0)).unwrap();
            let opts = ForwardOptions::inspection(mask);
            let ins = inspect_with(&model, &tokenizer, SENTENCE, None, &opts, None).unwrap();
            vec![(ins, false)]
        }
        Kind::EncoderDecoder => {
            let Seq2SeqCheckpoint { model, tokenizer } =
                Seq2SeqCheckpoint::init(DEFAULT_CORPUS, usize::MAX, config, &mut Rng::new(0))
                    .unwrap();
            let ins = inspect_texts(&model, &tokenizer, SENTENCE, "a dog", None).unwrap();
            let encoder = ins.source.as_deref().unwrap().clone();
            vec![(encoder, false), (ins.clone(), false), (ins, true)]
        }
    }
}

/// Every view: (features, computed figures), each set of features once.
fn views() -> Vec<(Vec<Feature>, Vec<FigureName>)> {
    let mut views: Vec<(Vec<Feature>, Vec<FigureName>)> = Vec::new();
    for positions in PositionEmbeddingType::ALL {
        for attention in AttentionType::ALL {
            if positions.refuses(attention).is_some() {
                continue;
            }
            let windows = Softmax {
                window: Some(3),
                ..Softmax::default()
            };
            let window_choices: &[bool] = match attention.with(windows) {
                Ok(_) => &[false, true],
                Err(_) => &[false],
            };
            for kv_heads in [None, Some(2)] {
                let config = BertConfig {
                    position_embedding_type: positions,
                    attention_type: attention,
                    num_key_value_heads: kv_heads,
                    ..BertConfig::tiny(1)
                };
                for kind in [Kind::Bert, Kind::Decoder, Kind::EncoderDecoder] {
                    let masks: &[MaskMode] = match kind {
                        Kind::Bert | Kind::Decoder => {
                            &[MaskMode::Padding, MaskMode::Causal, MaskMode::None]
                        }
                        // Its masks are fixed: padding in the encoder and across, causal in the
                        // decoder.
                        Kind::EncoderDecoder => &[MaskMode::Padding],
                    };
                    for &mask in masks {
                        let info = info_of(&config, kind);
                        for (ins, cross) in walks(&config, kind, mask) {
                            for &window in window_choices {
                                let model = ModelShape::of(&info, &ins, cross, window);
                                let mut features = model.features.clone();
                                features.sort_by_key(|f| Feature::ALL.iter().position(|x| x == f));
                                if views.iter().all(|(f, _)| *f != features) {
                                    views.push((features, model.computed_figures()));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    views
}

fn names_json() -> Value {
    let figures: Vec<Value> = FigureName::all()
        .map(|f| json!({ "name": f.name(), "computed_as": f.computed_as().name() }))
        .collect();
    let views: Vec<Value> = views()
        .into_iter()
        .map(|(features, figures)| {
            json!({
                "features": features.iter().map(|f| f.name()).collect::<Vec<_>>(),
                "figures": figures.iter().map(|f| f.name()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "about": "Generated by protocol/tests/names.rs from protocol::figure, protocol::stage and protocol::pytorch: do not edit. WRITE_NAMES=1 cargo test -p attention-lab-protocol --test names writes it again.",
        "figures": figures,
        "stages": Stage::ALL.map(Stage::name),
        "mark_features": Feature::ALL.map(Feature::name),
        "mark_dims": Dim::SYMBOLS.map(|(symbol, _)| symbol),
        "views": views,
    })
}

/// `names` as JSON a reader can scan and a diff can show: one line a key, and one a list's item.
fn layout(names: &Value) -> String {
    let compact = |v: &Value| serde_json::to_string(v).unwrap();
    let entries: Vec<String> = names
        .as_object()
        .unwrap()
        .iter()
        .map(|(key, value)| match value.as_array() {
            Some(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|i| format!("    {}", compact(i)))
                    .collect();
                format!("  {}: [\n{}\n  ]", compact(&json!(key)), items.join(",\n"))
            }
            None => format!("  {}: {}", compact(&json!(key)), compact(value)),
        })
        .collect();
    format!("{{\n{}\n}}\n", entries.join(",\n"))
}

#[test]
fn names_json_is_what_the_enums_give() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("names.json");
    let want = layout(&names_json());
    if std::env::var_os("WRITE_NAMES").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is not what protocol's names give: WRITE_NAMES=1 cargo test -p attention-lab-protocol --test names",
        path.display()
    );
}

#[test]
fn every_view_computes_its_attentions_figures() {
    let views = views();
    // Encoder (BERT), decoder and encoder–decoder, each with its softmax and linear attention
    // and their positions, with and without a window and K/V groups; cross-attention once.
    let cross: Vec<_> = views
        .iter()
        .filter(|(f, _)| f.contains(&Feature::Cross))
        .collect();
    assert_eq!(cross.len(), 1, "{cross:?}");
    for (features, figures) in &views {
        assert!(figures.len() >= 11, "{features:?}: {figures:?}");
    }
}
