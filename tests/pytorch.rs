//! The stepper's PyTorch view against the page's own figures: for every kind of model the page
//! builds and every stage, each figure it draws is computed by a marked line of
//! `pytorch/attention_lab.py`, whose tensor's last two axes are the figure's rows and columns;
//! the encoder–decoder's cross-attention and the Tiles stage's figures included. What the page
//! draws is what `ModelShape::computed_figures` says the module computes (the list
//! `protocol/names.json` exports to the Python checker of the marks).

use attention_lab_web::explorer::figures::{Figure, Part, Selection};
use attention_lab_web::explorer::stage_figures::stage_figures;
use attention_lab_web::explorer::tiles::data::{
    check, frame, step_count, tile_figures, tiled_head,
};
use engine::config::{AttentionType, PositionEmbeddingType};
use engine::forward::ForwardOptions;
use engine::inspect::{inspect_with, Inspection};
use engine::ops::attention::{AttentionKernel, Softmax};
use engine::seq2seq::{inspect_texts, Seq2SeqCheckpoint};
use engine::tokenizer::Tokenizer;
use engine::{BertConfig, BertForPreTraining, MaskMode, Rng};
use protocol::figure::FigureName;
use protocol::pytorch::{ModelShape, PytorchModule};
use protocol::stage::{Stage, Stages};
use protocol::{ModelInfo, ModelKind, DEFAULT_CORPUS};
use std::collections::BTreeSet;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const MODULE: &str = include_str!("../pytorch/attention_lab.py");

/// One attention the stepper walks, as the page's `StagePanel` reads it: the inspection and
/// selection of its figures, and the model as the code view sees it.
struct Walk<'a> {
    what: String,
    ins: &'a Inspection,
    sel: Selection,
    model: ModelShape,
}

impl Walk<'_> {
    fn stages(&self) -> Stages {
        Stages {
            tiled: tiled_head(self.ins, self.sel).is_some(),
            attention: self.ins.attention,
            cross: self.sel.part == Part::Cross,
        }
    }

    /// What `stage` draws: its figures, or the Tiles panel's at its last block.
    fn figures(&self, stage: Stage) -> Vec<Figure> {
        if stage != Stage::Tiles {
            return stage_figures(self.ins, self.sel, stage);
        }
        let head = tiled_head(self.ins, self.sel).unwrap();
        let last = frame(head, step_count(self.ins, self.sel) - 1).unwrap();
        tile_figures(self.ins, self.sel, &last, check(head).as_ref())
    }
}

/// Every stage of the walk: each figure the module computes has its tensor, of its size; the
/// page draws every figure `computed_figures` lists; and the page's own figures are the ones it
/// says it computes itself.
fn check_walk(module: &PytorchModule, walk: &Walk) {
    let what = &walk.what;
    let computed = walk.model.computed_figures();
    let mut drawn = BTreeSet::new();
    for stage in walk.stages().list() {
        let figures = walk.figures(stage);
        let names: Vec<FigureName> = figures.iter().map(|f| f.name).collect();
        let view = module.code_view(&names, &walk.model, walk.sel.head);
        for figure in &figures {
            let name = figure.name;
            drawn.insert(name.name());
            let m = &figure.data.matrix;
            if !computed.contains(&name) {
                // Rotary and ALiBi models have no position embeddings: the page draws zeros.
                // The Tiles' weights are the page's, from the tiles.
                let zeros = m.data.iter().all(|&x| x == 0.0);
                let own = name == FigureName::TilesWeights
                    || (name == FigureName::EmbeddingsPosition && zeros);
                assert!(
                    own,
                    "{what}, {stage:?}: the page draws {name:?}, which the module does not compute"
                );
                continue;
            }
            let tensor = view
                .tensors
                .iter()
                .find(|t| t.figure == name)
                .unwrap_or_else(|| panic!("{what}, {stage:?}: no marked line computes {name:?}"));
            let last: Vec<usize> = tensor.shape[tensor.shape.len() - 2..].to_vec();
            assert_eq!(
                last,
                [m.rows, m.cols],
                "{what}, {stage:?}: {name:?} is {} {:?}, the figure {}×{}",
                tensor.tensor,
                tensor.shape,
                m.rows,
                m.cols
            );
            assert!(
                view.blocks.iter().flat_map(|b| &b.lines).any(|l| l.lit),
                "{what}, {stage:?}: nothing lit"
            );
        }
    }
    // The module computes Tiles for every softmax model; the stepper shows it when the trace
    // was tiled.
    let tiled = walk.stages().tiled;
    for figure in computed
        .iter()
        .filter(|&&f| tiled || f != FigureName::Tiles)
    {
        assert!(
            drawn.contains(&figure.name()),
            "{what}: the page draws no {figure:?}; it draws {drawn:?}"
        );
    }
}

/// A model of one kind, self-attention on the default pair, at layer 2, head 4.
struct Kind {
    what: &'static str,
    config: BertConfig,
    decoder: bool,
    mask: MaskMode,
    softmax: Softmax,
}

fn one_bert(kind: &Kind, module: &PytorchModule) {
    let vocab = engine::tokenizer::build_word_vocab(DEFAULT_CORPUS).unwrap();
    let tokenizer = Tokenizer::word_level(vocab);
    let model = BertForPreTraining::init(&kind.config, &mut Rng::new(0)).unwrap();
    let opts = ForwardOptions {
        softmax: kind.softmax,
        ..ForwardOptions::inspection(kind.mask)
    };
    let pair = Some("the ball rolls");
    let ins = inspect_with(
        &model,
        &tokenizer,
        "the dog chases a ball",
        pair,
        &opts,
        None,
    )
    .unwrap();
    let info = ModelInfo::of_config(
        &kind.config,
        match kind.decoder {
            true => ModelKind::Decoder { repeat: None },
            false => ModelKind::Encoder,
        },
    );
    let window = kind.softmax.window.is_some();
    let walk = Walk {
        what: kind.what.to_string(),
        ins: &ins,
        sel: Selection {
            layer: 1,
            head: 3,
            part: Part::SelfAttention,
        },
        model: ModelShape::of(&info, &ins, false, window),
    };
    check_walk(module, &walk);
}

#[wasm_bindgen_test]
fn every_figure_of_every_model_the_page_builds_has_its_tensor_in_the_module() {
    let module = PytorchModule::parse(MODULE).unwrap();
    let vocab = engine::tokenizer::build_word_vocab(DEFAULT_CORPUS).unwrap();
    let base = BertConfig::tiny(vocab.len());
    let with = |f: fn(&mut BertConfig)| {
        let mut c = base.clone();
        f(&mut c);
        c
    };
    let full = Softmax::default();
    let kind = |what, config, decoder, mask, softmax| Kind {
        what,
        config,
        decoder,
        mask,
        softmax,
    };
    let windowed = Softmax {
        window: Some(3),
        ..full
    };
    let tiled = Softmax {
        kernel: AttentionKernel::Tiled { block: 4 },
        ..full
    };
    let rotary = with(|c| c.position_embedding_type = PositionEmbeddingType::Rotary);
    let alibi = with(|c| c.position_embedding_type = PositionEmbeddingType::Alibi);
    let gqa = with(|c| c.num_key_value_heads = Some(2));
    let linear = with(|c| c.attention_type = AttentionType::Linear);
    let linear_rotary = with(|c| {
        c.attention_type = AttentionType::Linear;
        c.position_embedding_type = PositionEmbeddingType::Rotary;
    });
    let kinds = [
        kind("BERT", base.clone(), false, MaskMode::Padding, full),
        kind("no mask", base.clone(), false, MaskMode::None, full),
        kind(
            "rotary, window",
            rotary.clone(),
            false,
            MaskMode::Padding,
            windowed,
        ),
        kind("ALiBi", alibi.clone(), false, MaskMode::Causal, full),
        kind("GQA", gqa.clone(), false, MaskMode::Padding, full),
        kind("linear", linear, false, MaskMode::Padding, full),
        kind(
            "linear, rotary, causal",
            linear_rotary,
            false,
            MaskMode::Causal,
            full,
        ),
        kind(
            "decoder",
            base.clone().decoder(),
            true,
            MaskMode::Causal,
            full,
        ),
        // The Tiles stage, with each kind of positions and K/V groups.
        kind("BERT, tiled", base.clone(), false, MaskMode::Padding, tiled),
        kind(
            "rotary, GQA, tiled",
            with(|c| {
                c.position_embedding_type = PositionEmbeddingType::Rotary;
                c.num_key_value_heads = Some(2);
            }),
            false,
            MaskMode::Causal,
            tiled,
        ),
        kind(
            "ALiBi decoder, tiled",
            alibi.decoder(),
            true,
            MaskMode::Causal,
            tiled,
        ),
    ];
    for kind in &kinds {
        one_bert(kind, &module);
    }
}

#[wasm_bindgen_test]
fn every_figure_of_an_encoder_decoder_has_its_tensor_in_the_module_cross_attention_included() {
    let module = PytorchModule::parse(MODULE).unwrap();
    for (what, positions, kv_heads) in [
        ("encoder–decoder", PositionEmbeddingType::Absolute, None),
        (
            "encoder–decoder, rotary, GQA",
            PositionEmbeddingType::Rotary,
            Some(2),
        ),
    ] {
        let config = BertConfig {
            position_embedding_type: positions,
            num_key_value_heads: kv_heads,
            ..BertConfig::tiny(1)
        };
        let Seq2SeqCheckpoint { model, tokenizer } =
            Seq2SeqCheckpoint::init(DEFAULT_CORPUS, usize::MAX, config, &mut engine::Rng::new(0))
                .unwrap();
        // The source padded: its [PAD] keys are masked in the encoder and across.
        let ins = inspect_texts(&model, &tokenizer, "the sky is blue", "blue is", Some(7)).unwrap();
        let encoder = ins.source.as_deref().unwrap();
        let info = ModelInfo::of_config(
            &model.decoder.config,
            ModelKind::EncoderDecoder(engine::seq2seq::Task::Reverse),
        );
        let sel = |part| Selection {
            layer: 1,
            head: 3,
            part,
        };
        // The stepper reads the encoder's inspection as one BERT's (`Focus::stage_ins`).
        let walks = [
            (encoder, Part::SelfAttention, false, "encoder"),
            (&ins, Part::SelfAttention, false, "decoder"),
            (&ins, Part::Cross, true, "cross-attention"),
        ];
        for (walk_ins, part, cross, which) in walks {
            let walk = Walk {
                what: format!("{what}, {which}"),
                ins: walk_ins,
                sel: sel(part),
                model: ModelShape::of(&info, walk_ins, cross, false),
            };
            check_walk(&module, &walk);
        }
    }
}
