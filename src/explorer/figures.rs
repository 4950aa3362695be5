//! Which trace matrices the explorer shows: the selection (layer, head, part), captions, axis
//! labels, shapes and drawing options, and the single figures (weights, rollout, pooler, MLM
//! transform). The stepper's per-stage figures are `stage_figures`. Plain functions over an
//! `Inspection`: they pick and label, they never compute.

use crate::components::heatmap_figure::{HeatmapData, HeatmapOptions};
use crate::heatmap::{ColumnAxis, Scale};
use engine::config::AttentionType;
use engine::inspect::Inspection;
use engine::{HeadTrace, LayerTrace, Matrix};
use protocol::figure::FigureName;
pub use protocol::view::{Part, Selection};

/// One heatmap: what it shows and how to draw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Its `data-figure` name.
    pub name: FigureName,
    pub data: HeatmapData,
    pub options: HeatmapOptions,
    /// Largest side of the cell grid, px: smaller when a stage shows several.
    pub max_grid: u32,
}

/// The inspection whose trace `part` reads: the source's for the encoder.
pub fn side(ins: &Inspection, part: Part) -> Option<&Inspection> {
    match part {
        Part::Encoder => ins.source.as_deref(),
        Part::SelfAttention | Part::Cross => Some(ins),
    }
}

/// An encoder–decoder's inspection (the decoder's, with the encoder's as its `source`).
pub fn is_encoder_decoder(ins: &Inspection) -> bool {
    ins.source.is_some()
}

/// "Layer 1 · Head 2 · softmax weights"
pub fn head_caption(sel: Selection, what: &str) -> String {
    format!("Layer {} · Head {} · {}", sel.layer + 1, sel.head + 1, what)
}

/// "Layer 1 · concatenated heads"
pub fn layer_caption(layer: usize, what: &str) -> String {
    format!("Layer {} · {}", layer + 1, what)
}

/// "Embeddings · sum": the embeddings come before every layer.
pub fn embeddings_caption(what: &str) -> String {
    format!("Embeddings · {what}")
}

/// Number of layers and heads in the trace.
pub fn trace_shape(ins: &Inspection) -> (usize, usize) {
    part_shape(ins, Part::SelfAttention)
}

/// Number of layers and heads of `part`'s attention (0 × 0 when the model has none).
pub fn part_shape(ins: &Inspection, part: Part) -> (usize, usize) {
    let Some(side) = side(ins, part) else {
        return (0, 0);
    };
    let layers = side.trace.layers.len();
    let heads = side
        .trace
        .layers
        .first()
        .map_or(0, |l| heads_of(l, part).len());
    (layers, heads)
}

pub fn heads_of(layer: &LayerTrace, part: Part) -> &[HeadTrace] {
    match part {
        Part::Cross => &layer.cross_heads,
        Part::SelfAttention | Part::Encoder => &layer.heads,
    }
}

/// The tokens of the selected attention's rows (queries) and columns (keys): the source's
/// for cross-attention's keys.
pub fn query_key_tokens(ins: &Inspection, sel: Selection) -> Option<(&[String], &[String])> {
    let rows = &side(ins, sel.part)?.tokens;
    let keys = match sel.part {
        Part::Cross => &ins.source.as_deref()?.tokens,
        Part::SelfAttention | Part::Encoder => rows,
    };
    Some((rows, keys))
}

/// What a head's weights are called: softmax's, or those linear attention implies.
pub fn weights_name(ins: &Inspection) -> &'static str {
    match ins.attention {
        AttentionType::Softmax => "softmax weights",
        AttentionType::Linear => "implied weights",
    }
}

/// Sizes of the inspected text and model, as the equations name them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dims {
    /// T: tokens
    pub t: usize,
    /// C: hidden size
    pub c: usize,
    /// H: heads
    pub h: usize,
    /// d_k: head size
    pub d: usize,
    /// I: the feed-forward network's intermediate size
    pub i: usize,
    /// B: rows per block of tiled attention (0 when not tiled)
    pub block: usize,
}

/// Rows per block of a tile schedule: the longest block (only the last can be shorter).
pub fn tile_block(tiles: &[engine::TileStep]) -> usize {
    tiles.iter().map(|t| t.row_max.len()).max().unwrap_or(0)
}

pub fn dims(ins: &Inspection) -> Dims {
    let first = ins.trace.layers.first();
    Dims {
        t: ins.tokens.len(),
        c: first.map_or(0, |l| l.input.cols),
        h: first.map_or(0, |l| l.heads.len()),
        d: first.and_then(|l| l.heads.first()).map_or(0, |h| h.q.cols),
        i: first.map_or(0, |l| l.intermediate.cols),
        block: first
            .and_then(|l| l.heads.first())
            .and_then(|h| h.tiles.as_deref())
            .map_or(0, tile_block),
    }
}

pub(crate) fn layer_and_head(
    ins: &Inspection,
    sel: Selection,
) -> Option<(&LayerTrace, &HeadTrace)> {
    let layer = side(ins, sel.part)?.trace.layers.get(sel.layer)?;
    Some((layer, heads_of(layer, sel.part).get(sel.head)?))
}

/// Column labels for feature dimensions, as the tooltip names them.
pub(super) fn dimension_labels(n: usize) -> Vec<String> {
    (0..n).map(|j| format!("dim {j}")).collect()
}

/// Column labels for heads laid side by side, `d` dimensions each.
pub(super) fn head_dimension_labels(n: usize, d: usize) -> Vec<String> {
    (0..n)
        .map(|j| format!("head {} · dim {}", j / d.max(1) + 1, j % d.max(1)))
        .collect()
}

pub(super) const DIMS: HeatmapOptions = HeatmapOptions {
    columns: ColumnAxis::Dimensions,
    scale: None,
    bar: true,
    max_w: None,
    outline: None,
    hatched: crate::components::heatmap_figure::MASKED,
    min_cell: None,
};

/// M holds only 0 and −∞: 0 white, −∞ hatched, a legend instead of a colour bar.
pub(super) const MASK_OPTIONS: HeatmapOptions = HeatmapOptions {
    columns: ColumnAxis::Tokens,
    scale: Some(Scale::Diverging { magnitude: 1.0 }),
    bar: false,
    max_w: None,
    outline: None,
    hatched: crate::components::heatmap_figure::MASKED,
    min_cell: None,
};

/// The selected head's softmax weights: the figure the explorer always keeps in view.
pub fn weights_figure(ins: &Inspection, sel: Selection, max_grid: u32) -> Option<Figure> {
    let (_, head) = layer_and_head(ins, sel)?;
    let (rows, keys) = query_key_tokens(ins, sel)?;
    Some(labelled(
        FigureName::SummaryWeights,
        head_caption(sel, part_weights_name(ins, sel.part)),
        &head.weights,
        rows.to_vec(),
        keys.to_vec(),
        HeatmapOptions::default(),
        max_grid,
    ))
}

/// What `part`'s weights are called in captions.
pub fn part_weights_name(ins: &Inspection, part: Part) -> &'static str {
    match part {
        Part::Cross => "cross-attention weights",
        Part::Encoder => "encoder softmax weights",
        Part::SelfAttention if is_encoder_decoder(ins) => "decoder self-attention weights",
        Part::SelfAttention => weights_name(ins),
    }
}

/// A figure with its own row and column labels.
pub(super) fn labelled(
    name: FigureName,
    caption: String,
    m: &Matrix,
    row_labels: Vec<String>,
    col_labels: Vec<String>,
    options: HeatmapOptions,
    max_grid: u32,
) -> Figure {
    Figure {
        name,
        data: HeatmapData {
            caption,
            matrix: m.clone(),
            row_labels,
            col_labels,
        },
        options,
        max_grid,
    }
}

/// The selected head's softmax weights as an unlabelled matrix, for thumbnails.
pub fn weights(ins: &Inspection, sel: Selection) -> Option<&Matrix> {
    layer_and_head(ins, sel).map(|(_, h)| &h.weights)
}

pub(crate) fn token_figure(
    name: FigureName,
    ins: &Inspection,
    caption: String,
    m: &Matrix,
    max_grid: u32,
) -> Figure {
    figure(
        name,
        ins,
        caption,
        m,
        ins.tokens.clone(),
        HeatmapOptions::default(),
        max_grid,
    )
}

pub(crate) fn dimension_figure(
    name: FigureName,
    ins: &Inspection,
    caption: String,
    m: &Matrix,
    max_grid: u32,
    max_w: u32,
) -> Figure {
    let options = HeatmapOptions {
        max_w: Some(max_w),
        ..DIMS
    };
    figure(
        name,
        ins,
        caption,
        m,
        dimension_labels(m.cols),
        options,
        max_grid,
    )
}

/// A heatmap of `m`: rows are the tokens, columns `col_labels`.
pub(super) fn figure(
    name: FigureName,
    ins: &Inspection,
    caption: String,
    m: &Matrix,
    col_labels: Vec<String>,
    options: HeatmapOptions,
    max_grid: u32,
) -> Figure {
    labelled(
        name,
        caption,
        m,
        ins.tokens.clone(),
        col_labels,
        options,
        max_grid,
    )
}

/// "Heads · pooler …": the heads come after every layer.
pub fn heads_caption(what: &str) -> String {
    format!("Heads · {what}")
}

/// The pooler's output tanh(W·h_[CLS] + b), one row (None without pre-training heads).
pub fn pooled_figure(ins: &Inspection) -> Option<Figure> {
    let pooled = ins.trace.heads.pooled.as_ref()?;
    let mut f = dimension_figure(
        FigureName::PoolerOutput,
        ins,
        heads_caption("pooler tanh(W·h_[CLS] + b)"),
        pooled,
        300,
        300,
    );
    f.data.row_labels = ins.tokens.first().cloned().into_iter().collect();
    Some(f)
}

/// The MLM transform LayerNorm(GELU(h W_t + b_t)), the tied decoder's input.
pub fn mlm_transform_figure(ins: &Inspection) -> Option<Figure> {
    let m = ins.trace.heads.mlm_transform.as_ref()?;
    Some(dimension_figure(
        FigureName::MlmTransform,
        ins,
        heads_caption("MLM transform LayerNorm(GELU(h W_t + b_t))"),
        m,
        260,
        300,
    ))
}

/// Attention rollout over all layers (T×T, rows = queries).
pub fn rollout_figure(ins: &Inspection, max_grid: u32) -> Figure {
    token_figure(
        FigureName::AttentionRollout,
        ins,
        "All layers · attention rollout".to_string(),
        &ins.rollout,
        max_grid,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::explorer::stage_figures::{
        stage_figures, stage_hint, ALIBI, LINEAR_NO_SCORES, ROTARY,
    };
    use engine::tokenizer::Tokenizer;
    use engine::{BertConfig, BertForPreTraining, Rng};
    use protocol::stage::Stage;
    use protocol::stage::Stages;
    use protocol::{ProbeInput, DEFAULT_CORPUS};
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// The app's first model: a fresh tiny BERT on the default corpus (straight from the engine,
    /// so these tests do not depend on how the app hosts it).
    pub(crate) fn inspection(probe: ProbeInput) -> Inspection {
        inspection_with(probe, engine::ops::attention::AttentionKernel::Full)
    }

    /// `inspection` with attention computed by `kernel`.
    pub(crate) fn inspection_with(
        probe: ProbeInput,
        kernel: engine::ops::attention::AttentionKernel,
    ) -> Inspection {
        inspection_of(|_| {}, probe, kernel)
    }

    /// `inspection_with` a tiny model whose config `shape` has changed.
    pub(crate) fn inspection_of(
        shape: impl FnOnce(&mut BertConfig),
        probe: ProbeInput,
        kernel: engine::ops::attention::AttentionKernel,
    ) -> Inspection {
        let vocab = engine::tokenizer::build_word_vocab(DEFAULT_CORPUS).unwrap();
        let mut config = BertConfig::tiny(vocab.len());
        shape(&mut config);
        let model = BertForPreTraining::init(&config, &mut Rng::new(0)).unwrap();
        let tokenizer = Tokenizer::word_level(vocab);
        let pair = Some(probe.pair.trim()).filter(|p| !p.is_empty());
        let opts = engine::forward::ForwardOptions {
            softmax: engine::ops::attention::Softmax {
                kernel,
                window: probe.window,
            },
            ..engine::forward::ForwardOptions::inspection(probe.mask)
        };
        engine::inspect::inspect_with(&model, &tokenizer, &probe.text, pair, &opts, probe.pad_to)
            .unwrap()
    }

    /// A fresh encoder–decoder (tiny sizes) on "the sky is blue" → "blue is".
    pub(crate) fn seq2seq_inspection() -> Inspection {
        use engine::seq2seq::Seq2SeqCheckpoint;
        let tiny = BertConfig::tiny(1);
        let Seq2SeqCheckpoint { model, tokenizer } =
            Seq2SeqCheckpoint::init(DEFAULT_CORPUS, usize::MAX, tiny, &mut engine::Rng::new(0))
                .unwrap();
        engine::seq2seq::inspect_texts(&model, &tokenizer, "the sky is blue", "blue is", None)
            .unwrap()
    }

    #[test]
    fn an_encoder_decoders_three_attentions_are_labelled_by_their_own_tokens() {
        let ins = seq2seq_inspection();
        assert!(is_encoder_decoder(&ins));
        let source = ["[CLS]", "the", "sky", "is", "blue", "[SEP]"];
        let target = ["[CLS]", "blue", "is"];
        for part in [Part::SelfAttention, Part::Cross, Part::Encoder] {
            assert_eq!(part_shape(&ins, part), (2, 4), "{part:?}");
        }
        let cross = Selection {
            layer: 1,
            head: 2,
            part: Part::Cross,
        };
        let w = weights_figure(&ins, cross, 200).unwrap();
        assert_eq!(w.data.caption, "Layer 2 · Head 3 · cross-attention weights");
        assert_eq!(
            (&w.data.row_labels, &w.data.col_labels),
            (
                &target.map(String::from).to_vec(),
                &source.map(String::from).to_vec()
            )
        );
        assert_eq!(w.data.matrix, ins.trace.layers[1].cross_heads[2].weights);
        let walk = Stages {
            cross: true,
            ..Stages::default()
        };
        for stage in walk.list() {
            let figs = stage_figures(&ins, cross, stage);
            assert!(!figs.is_empty(), "{stage:?}");
            for f in &figs {
                assert_eq!(
                    f.data.row_labels.len(),
                    f.data.matrix.rows,
                    "{}",
                    f.data.caption
                );
                assert_eq!(
                    f.data.col_labels.len(),
                    f.data.matrix.cols,
                    "{}",
                    f.data.caption
                );
            }
        }
        // K and V have a row per source token; the scores a row per target token, a column per
        // source token.
        let qkv = stage_figures(&ins, cross, Stage::Projections);
        assert_eq!(qkv[0].data.row_labels, target);
        assert_eq!(qkv[1].data.row_labels, source);
        assert_eq!(qkv[2].data.row_labels, source);
        let scores = &stage_figures(&ins, cross, Stage::Scores)[0];
        assert_eq!((scores.data.matrix.rows, scores.data.matrix.cols), (3, 6));
        // The encoder is read as one BERT: its tokens on both axes.
        let encoder = Selection {
            part: Part::Encoder,
            ..cross
        };
        let e = weights_figure(&ins, encoder, 200).unwrap();
        assert_eq!(e.data.row_labels, source);
        assert_eq!(e.data.col_labels, source);
        assert_eq!(
            e.data.matrix,
            ins.source.as_ref().unwrap().trace.layers[1].heads[2].weights
        );
        let decoder_self = weights_figure(
            &ins,
            Selection {
                part: Part::SelfAttention,
                ..cross
            },
            200,
        )
        .unwrap();
        assert_eq!(
            decoder_self.data.caption,
            "Layer 2 · Head 3 · decoder self-attention weights"
        );
        assert_eq!(decoder_self.data.col_labels, target);
    }

    #[test]
    fn every_stage_shows_the_trace_of_the_selected_layer_and_head() {
        let ins = inspection(ProbeInput::default());
        let sel = Selection {
            layer: 1,
            head: 2,
            ..Selection::default()
        };
        let head = &ins.trace.layers[1].heads[2];
        for stage in Stages::default().list() {
            let figs = stage_figures(&ins, sel, stage);
            assert!(!figs.is_empty(), "{stage:?} shows nothing");
            let prefix = if stage == Stage::Embeddings {
                "Embeddings · "
            } else {
                "Layer 2 · "
            };
            for f in &figs {
                assert!(f.data.caption.starts_with(prefix), "{}", f.data.caption);
                assert_eq!(f.data.row_labels, ins.tokens);
                assert_eq!(f.data.col_labels.len(), f.data.matrix.cols);
            }
        }
        let weights = stage_figures(&ins, sel, Stage::Softmax).pop().unwrap();
        assert_eq!(weights.data.caption, "Layer 2 · Head 3 · softmax weights");
        assert_eq!(weights.data.matrix, head.weights);
        let masked = &stage_figures(&ins, sel, Stage::Masked)[1];
        assert_eq!(masked.data.matrix, head.masked);
        assert_eq!(
            stage_figures(&ins, sel, Stage::Concat)[0].data.matrix,
            ins.trace.layers[1].context
        );
        let out = stage_figures(&ins, sel, Stage::Output).pop().unwrap();
        assert_eq!(out.data.matrix, ins.trace.layers[1].attention_output);
    }

    #[test]
    fn alibi_models_show_the_bias_at_the_mask_stage_and_say_why() {
        use engine::config::PositionEmbeddingType;
        let ins = inspection_of(
            |c| c.position_embedding_type = PositionEmbeddingType::Alibi,
            ProbeInput::default(),
            engine::ops::attention::AttentionKernel::Full,
        );
        let sel = Selection {
            layer: 1,
            head: 0,
            ..Selection::default()
        };
        let head = &ins.trace.layers[1].heads[0];
        let figs = stage_figures(&ins, sel, Stage::Masked);
        let captions: Vec<&str> = figs.iter().map(|f| f.data.caption.as_str()).collect();
        assert_eq!(
            captions,
            [
                "Layer 2 · Head 1 · ALiBi bias −m·|i − j| (m = 1/4)",
                "Layer 2 · Head 1 · mask M",
                "Layer 2 · Head 1 · masked scores QKᵀ/√d_k − m·|i − j| + M"
            ]
        );
        assert_eq!(Some(&figs[0].data.matrix), head.alibi_bias.as_ref());
        assert_eq!(figs[0].data.matrix.get(3, 1), -0.5);
        assert_eq!(stage_hint(&ins, sel, Stage::Masked), Some(ALIBI));
        // The fourth head's slope is 1/256; no position embeddings.
        let last = Selection { head: 3, ..sel };
        assert!(stage_figures(&ins, last, Stage::Masked)[0]
            .data
            .caption
            .ends_with("(m = 1/256)"));
        assert!(ins.trace.position_embeddings.is_empty());
        let plain = inspection(ProbeInput::default());
        assert_eq!(stage_figures(&plain, sel, Stage::Masked).len(), 2);
        assert_ne!(stage_hint(&plain, sel, Stage::Masked), Some(ALIBI));
    }

    #[test]
    fn rotary_models_show_the_rotated_q_and_k_and_say_why() {
        use engine::config::PositionEmbeddingType;
        let ins = inspection_of(
            |c| c.position_embedding_type = PositionEmbeddingType::Rotary,
            ProbeInput::default(),
            engine::ops::attention::AttentionKernel::Full,
        );
        let sel = Selection {
            layer: 1,
            head: 2,
            ..Selection::default()
        };
        let head = &ins.trace.layers[1].heads[2];
        let figs = stage_figures(&ins, sel, Stage::Projections);
        let captions: Vec<&str> = figs.iter().map(|f| f.data.caption.as_str()).collect();
        assert_eq!(
            captions,
            [
                "Layer 2 · Head 3 · queries Q",
                "Layer 2 · Head 3 · rotated queries R(t)q",
                "Layer 2 · Head 3 · keys K",
                "Layer 2 · Head 3 · rotated keys R(t)k",
                "Layer 2 · Head 3 · values V"
            ]
        );
        assert_eq!(Some(&figs[1].data.matrix), head.q_rotated.as_ref());
        assert_eq!(Some(&figs[3].data.matrix), head.k_rotated.as_ref());
        // Position 0 does not turn; later ones do.
        assert_eq!(figs[1].data.matrix.row(0), head.q.row(0));
        assert_ne!(figs[1].data.matrix.row(3), head.q.row(3));
        assert_eq!(stage_hint(&ins, sel, Stage::Projections), Some(ROTARY));
        let plain = inspection(ProbeInput::default());
        assert_eq!(stage_figures(&plain, sel, Stage::Projections).len(), 3);
        assert_eq!(stage_hint(&plain, sel, Stage::Projections), None);
    }

    #[test]
    fn linear_models_show_phi_in_place_of_scores_and_say_why() {
        let ins = inspection_of(
            |c| c.attention_type = AttentionType::Linear,
            ProbeInput::default(),
            engine::ops::attention::AttentionKernel::Full,
        );
        assert_eq!(ins.attention, AttentionType::Linear);
        assert!(ins.trace.layers[0].heads[1].phi_q.is_some());
        let sel = Selection {
            layer: 0,
            head: 1,
            ..Selection::default()
        };
        let head = &ins.trace.layers[0].heads[1];
        let phi = matrices(&ins, sel, Stage::FeatureMaps);
        assert_eq!(phi.len(), 2);
        assert_eq!(Some(&phi[0]), head.phi_q.as_ref());
        assert_eq!(Some(&phi[1]), head.phi_k.as_ref());
        assert_eq!(
            stage_hint(&ins, sel, Stage::FeatureMaps),
            Some(LINEAR_NO_SCORES)
        );
        let masked = stage_figures(&ins, sel, Stage::Masked);
        assert_eq!(
            masked[1].data.caption,
            "Layer 1 · Head 2 · implied weights φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j)"
        );
        assert_eq!(masked[1].data.matrix, head.weights);
        assert!(head.scores.is_empty());
        // A softmax model has no φ stage.
        let plain = inspection(ProbeInput::default());
        assert!(stage_figures(&plain, sel, Stage::FeatureMaps).is_empty());
    }

    /// The figures of `stage`'s matrices, in order.
    fn matrices(ins: &Inspection, sel: Selection, stage: Stage) -> Vec<Matrix> {
        stage_figures(ins, sel, stage)
            .into_iter()
            .map(|f| f.data.matrix)
            .collect()
    }

    #[test]
    fn add_and_norm_feed_forward_and_embedding_stages_equal_the_engines_trace() {
        let ins = inspection(ProbeInput::default());
        let sel = Selection {
            layer: 1,
            head: 0,
            ..Selection::default()
        };
        let layer = &ins.trace.layers[1];
        assert_eq!(
            matrices(&ins, sel, Stage::AttentionAddNorm),
            [&layer.input, &layer.attention_output, &layer.attention_norm].map(Matrix::clone)
        );
        assert_eq!(
            matrices(&ins, sel, Stage::FeedForward),
            [
                &layer.intermediate_pre,
                &layer.intermediate,
                &layer.ffn_output
            ]
            .map(Matrix::clone)
        );
        assert_eq!(
            matrices(&ins, sel, Stage::OutputAddNorm),
            [&layer.attention_norm, &layer.ffn_output, &layer.output].map(Matrix::clone)
        );
        let e = &ins.trace;
        let embeddings = [
            &e.word_embeddings,
            &e.position_embeddings,
            &e.token_type_embeddings,
            &e.embeddings_sum,
            &e.embeddings,
        ]
        .map(Matrix::clone);
        // The embeddings are the same whatever layer is selected, and feed layer 1.
        assert_eq!(matrices(&ins, sel, Stage::Embeddings), embeddings);
        assert_eq!(
            matrices(&ins, Selection::default(), Stage::Embeddings),
            embeddings
        );
        assert_eq!(e.embeddings, ins.trace.layers[0].input);
        // The layer's output is the next layer's input.
        assert_eq!(ins.trace.layers[0].output, layer.input);
        for f in stage_figures(&ins, sel, Stage::Embeddings) {
            assert!(
                f.data.caption.starts_with("Embeddings · "),
                "{}",
                f.data.caption
            );
            assert_eq!(f.data.matrix.rows, ins.tokens.len());
        }
    }

    #[test]
    fn selections_outside_the_model_show_nothing_and_clamp_back_in() {
        let ins = inspection(ProbeInput::default());
        let far = Selection {
            layer: 9,
            head: 0,
            ..Selection::default()
        };
        assert!(stage_figures(&ins, far, Stage::Scores).is_empty());
        assert!(weights_figure(&ins, far, 200).is_none());
        let (layers, heads) = trace_shape(&ins);
        assert_eq!(
            far.clamped(layers, heads),
            Selection {
                layer: layers - 1,
                head: 0,
                part: Part::SelfAttention,
            }
        );
        let d = dims(&ins);
        assert_eq!(
            (d.t, d.c, d.h, d.d, d.i),
            (ins.tokens.len(), 64, 4, 16, 256)
        );
    }

    #[test]
    fn the_mask_stages_say_when_nothing_is_masked() {
        let single = ProbeInput {
            pair: String::new(),
            ..ProbeInput::default()
        };
        let ins = inspection(single.clone());
        let sel = Selection::default();
        assert!(stage_hint(&ins, sel, Stage::Masked).is_some());
        assert!(stage_hint(&ins, sel, Stage::Scores).is_none());
        let padded = inspection(ProbeInput {
            pad_to: Some(12),
            ..single
        });
        assert!(stage_hint(&padded, sel, Stage::Masked).is_none());
    }

    #[test]
    fn concatenated_columns_name_their_head() {
        assert_eq!(
            head_dimension_labels(4, 2),
            [
                "head 1 · dim 0",
                "head 1 · dim 1",
                "head 2 · dim 0",
                "head 2 · dim 1"
            ]
        );
    }
}
