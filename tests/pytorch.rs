//! The stepper's PyTorch view against the page's own figures: for every kind of model the page
//! builds and every stage, each figure it draws is computed by a marked line of
//! `pytorch/attention_lab.py`, whose tensor's last two axes are the figure's rows and columns.

use attention_lab_web::explorer::figures::{Part, Selection};
use attention_lab_web::explorer::stage_figures::stage_figures;
use engine::config::{AttentionType, PositionEmbeddingType};
use engine::forward::ForwardOptions;
use engine::inspect::{inspect_with, Inspection};
use engine::tokenizer::Tokenizer;
use engine::{BertConfig, BertForPreTraining, MaskMode, Rng};
use protocol::pytorch::{ModelShape, PytorchModule};
use protocol::stage::Stages;
use protocol::{Architecture, ModelInfo, ModelKind, DEFAULT_CORPUS};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const MODULE: &str = include_str!("../pytorch/attention_lab.py");

fn info_of(config: &BertConfig, decoder: bool) -> ModelInfo {
    ModelInfo {
        name: "test".into(),
        layers: config.num_hidden_layers,
        heads: config.num_attention_heads,
        hidden: config.hidden_size,
        head_size: config.hidden_size / config.num_attention_heads,
        intermediate: config.intermediate_size,
        max_positions: config.max_position_embeddings,
        vocab_size: config.vocab_size,
        parameters: 0,
        tokenizer: "word-level".into(),
        corpus_words: None,
        architecture: Architecture {
            kv_heads: config.num_key_value_heads,
            positions: config.position_embedding_type,
            attention: config.attention_type,
            scaling: config.attention_scaling,
        },
        kind: match decoder {
            true => ModelKind::Decoder { repeat: None },
            false => ModelKind::Encoder,
        },
    }
}

/// Every stage of `ins`'s walk: each figure with a name has its tensor, of its size.
fn check(module: &PytorchModule, info: &ModelInfo, ins: &Inspection, window: bool, what: &str) {
    let sel = Selection {
        layer: 1,
        head: 3,
        part: Part::SelfAttention,
    };
    let model = ModelShape::of(info, ins, false, window);
    let stages = Stages {
        tiled: false,
        attention: ins.attention,
        cross: false,
    };
    let mut seen = 0;
    for stage in stages.list() {
        let figures = stage_figures(ins, sel, stage);
        let names: Vec<String> = figures
            .iter()
            .filter_map(|f| f.name.map(|n| n.name()))
            .collect();
        let view = module.code_view(&names, &model, sel.head);
        for figure in &figures {
            let Some(name) = figure.name.map(|n| n.name()) else {
                continue;
            };
            // Rotary and ALiBi models have no position embeddings: the page draws zeros.
            if name == "embeddings-position"
                && ins.trace.layers[0].heads[0].q_rotated.is_some()
                    | ins.trace.layers[0].heads[0].alibi_bias.is_some()
            {
                continue;
            }
            let tensor = view
                .tensors
                .iter()
                .find(|t| t.figure == name)
                .unwrap_or_else(|| panic!("{what}, {stage:?}: no marked line computes {name}"));
            let m = &figure.data.matrix;
            let last: Vec<usize> = tensor.shape[tensor.shape.len() - 2..].to_vec();
            assert_eq!(
                last,
                [m.rows, m.cols],
                "{what}, {stage:?}: {name} is {} {:?}, the figure {}×{}",
                tensor.tensor,
                tensor.shape,
                m.rows,
                m.cols
            );
            assert!(
                view.blocks.iter().flat_map(|b| &b.lines).any(|l| l.lit),
                "{what}, {stage:?}: nothing lit"
            );
            seen += 1;
        }
    }
    assert!(seen >= 20, "{what}: only {seen} figures");
}

#[wasm_bindgen_test]
fn every_figure_of_every_model_the_page_builds_has_its_tensor_in_the_module() {
    let module = PytorchModule::parse(MODULE).unwrap();
    let vocab = engine::tokenizer::build_word_vocab(DEFAULT_CORPUS).unwrap();
    let tokenizer = Tokenizer::word_level(vocab.clone());
    let base = BertConfig::tiny(vocab.len());
    let kinds: [(&str, BertConfig, bool, MaskMode, Option<usize>); 8] = [
        ("BERT", base.clone(), false, MaskMode::Padding, None),
        ("no mask", base.clone(), false, MaskMode::None, None),
        (
            "rotary, window",
            BertConfig {
                position_embedding_type: PositionEmbeddingType::Rotary,
                ..base.clone()
            },
            false,
            MaskMode::Padding,
            Some(3),
        ),
        (
            "ALiBi",
            BertConfig {
                position_embedding_type: PositionEmbeddingType::Alibi,
                ..base.clone()
            },
            false,
            MaskMode::Causal,
            None,
        ),
        (
            "GQA",
            BertConfig {
                num_key_value_heads: Some(2),
                ..base.clone()
            },
            false,
            MaskMode::Padding,
            None,
        ),
        (
            "linear",
            BertConfig {
                attention_type: AttentionType::Linear,
                ..base.clone()
            },
            false,
            MaskMode::Padding,
            None,
        ),
        (
            "linear, rotary, causal",
            BertConfig {
                attention_type: AttentionType::Linear,
                position_embedding_type: PositionEmbeddingType::Rotary,
                ..base.clone()
            },
            false,
            MaskMode::Causal,
            None,
        ),
        (
            "decoder",
            base.clone().decoder(),
            true,
            MaskMode::Causal,
            None,
        ),
    ];
    for (what, config, decoder, mask, window) in kinds {
        let model = BertForPreTraining::init(&config, &mut Rng::new(0)).unwrap();
        let opts = ForwardOptions {
            softmax: engine::ops::attention::Softmax {
                window,
                ..Default::default()
            },
            ..ForwardOptions::inspection(mask)
        };
        let ins = inspect_with(
            &model,
            &tokenizer,
            "the dog chases a ball",
            Some("the ball rolls"),
            &opts,
            None,
        )
        .unwrap();
        check(
            &module,
            &info_of(&config, decoder),
            &ins,
            window.is_some(),
            what,
        );
    }
}
