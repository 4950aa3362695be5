//! What each stage of the stepper shows: its heatmaps (the matrices of the selected layer and
//! head, or of the cross-attention), and the hint beside them for models whose stage differs
//! (rotary, ALiBi, linear). Plain functions over an `Inspection`: they pick and label, they never
//! compute. Each figure carries its `FigureName` (`data-figure`), by which it is found.

use super::figures::*;
use crate::components::heatmap_figure::HeatmapOptions;
use crate::heatmap::ColumnAxis;
use engine::config::{AttentionScaling, AttentionType};
use engine::inspect::Inspection;
use engine::{HeadTrace, LayerTrace, MaskMode, Matrix};
use protocol::figure::{FigureName, HeadMatrix};
use protocol::stage::Stage;

/// The heatmaps of `stage` for the selected layer and head, in reading order. Empty when the
/// selection is outside the trace.
pub fn stage_figures(ins: &Inspection, sel: Selection, stage: Stage) -> Vec<Figure> {
    let Some(walk) = Walk::new(ins, sel) else {
        return Vec::new();
    };
    match (walk.source, stage) {
        (
            _,
            Stage::Projections
            | Stage::FeatureMaps
            | Stage::Scores
            | Stage::Scaled
            | Stage::Masked
            | Stage::Softmax
            | Stage::Context,
        ) => walk.head_stage(stage),
        // The Tiles panel draws its own figures, one block at a time (`tiles::data`).
        (_, Stage::Tiles) => Vec::new(),
        (Some(source), Stage::Input) => walk.cross_inputs(source),
        // The decoder layer's own stages are its self-attention walk's.
        (Some(_), _) => Vec::new(),
        (None, Stage::Embeddings) => embeddings_stage(walk.ins),
        (None, stage) => layer_stage(walk.ins, sel.layer, walk.layer, walk.head, stage),
    }
}

/// The embeddings, before every layer: the three lookups, their sum and its LayerNorm.
fn embeddings_stage(ins: &Inspection) -> Vec<Figure> {
    use FigureName as F;
    let e = &ins.trace;
    [
        (F::EmbeddingsToken, "token E_token[w]", &e.word_embeddings),
        (
            F::EmbeddingsPosition,
            "position E_position[i]",
            &e.position_embeddings,
        ),
        (
            F::EmbeddingsSegment,
            "segment E_segment[s]",
            &e.token_type_embeddings,
        ),
        (F::EmbeddingsSum, "sum", &e.embeddings_sum),
        (
            F::EmbeddingsNorm,
            "LayerNorm(sum) = X of layer 1",
            &e.embeddings,
        ),
    ]
    .into_iter()
    .map(|(name, what, m)| dimension_figure(name, ins, embeddings_caption(what), m, 200, 150))
    .collect()
}

/// The stages of one BERT layer around its attention.
fn layer_stage(
    ins: &Inspection,
    l: usize,
    layer: &LayerTrace,
    head: &HeadTrace,
    stage: Stage,
) -> Vec<Figure> {
    use FigureName as F;
    // (name, caption's words, matrix, (largest grid, largest width)), each rows of dimensions.
    let rows = |figures: Vec<(FigureName, &str, &Matrix, (u32, u32))>| -> Vec<Figure> {
        figures
            .into_iter()
            .map(|(name, what, m, (grid, w))| {
                dimension_figure(name, ins, layer_caption(l, what), m, grid, w)
            })
            .collect()
    };
    let concatenated =
        |max_w, max_grid| concatenated_heads(ins, l, layer, head.q.cols, max_w, max_grid);
    match stage {
        Stage::Input => rows(vec![(F::Input, "input X", &layer.input, (320, 520))]),
        Stage::AttentionAddNorm => rows(vec![
            (F::Input, "input X (the residual)", &layer.input, (220, 150)),
            (
                F::AttentionOutput,
                "attention output",
                &layer.attention_output,
                (220, 150),
            ),
            (
                F::AttentionAddNorm,
                "h = LayerNorm(X + attention output)",
                &layer.attention_norm,
                (220, 150),
            ),
        ]),
        Stage::FeedForward => rows(vec![
            (
                F::FfnPreActivation,
                "h W₁ + b₁",
                &layer.intermediate_pre,
                (220, 340),
            ),
            (
                F::FfnActivation,
                "GELU(h W₁ + b₁)",
                &layer.intermediate,
                (220, 340),
            ),
            (
                F::FfnOutput,
                "feed-forward output GELU(…) W₂ + b₂",
                &layer.ffn_output,
                (220, 150),
            ),
        ]),
        Stage::OutputAddNorm => rows(vec![
            (
                F::AttentionAddNorm,
                "h (the residual)",
                &layer.attention_norm,
                (220, 150),
            ),
            (
                F::FfnOutput,
                "feed-forward output",
                &layer.ffn_output,
                (220, 150),
            ),
            (
                F::LayerOutput,
                "output LayerNorm(h + feed-forward output)",
                &layer.output,
                (220, 150),
            ),
        ]),
        Stage::Concat => vec![concatenated(560, 320)],
        Stage::Output => {
            let mut figs = vec![concatenated(380, 300)];
            figs.extend(rows(vec![(
                F::AttentionOutput,
                "attention output · W_O",
                &layer.attention_output,
                (300, 380),
            )]));
            figs
        }
        // The embeddings are `embeddings_stage`'s, a head's stages `Walk::head_stage`'s, Tiles
        // its panel's.
        Stage::Embeddings
        | Stage::Projections
        | Stage::FeatureMaps
        | Stage::Scores
        | Stage::Scaled
        | Stage::Masked
        | Stage::Softmax
        | Stage::Context
        | Stage::Tiles => Vec::new(),
    }
}

/// What differs between the two walks through a head's stages: self-attention's, where one
/// sequence's tokens ask and answer, and cross-attention's, whose queries come from the
/// decoder and keys and values from the encoder.
struct Texts {
    /// Before each head caption's own words.
    prefix: &'static str,
    /// The name of each figure of a head matrix.
    name: fn(HeadMatrix) -> FigureName,
    /// The captions of Q, K and V at their projection.
    projections: [&'static str; 3],
    mask: &'static str,
    /// V beside the weights and the context.
    values: &'static str,
    /// Largest width of V and the context beside the weights, px.
    context_width: u32,
}

const SELF_ATTENTION: Texts = Texts {
    prefix: "",
    name: FigureName::Head,
    projections: ["queries Q", "keys K", "values V"],
    mask: "mask M",
    values: "values V",
    context_width: 180,
};

const CROSS_ATTENTION: Texts = Texts {
    prefix: "cross · ",
    name: FigureName::Cross,
    projections: [
        "queries Q = X W_Q (decoder)",
        "keys K = H W_K (encoder)",
        "values V = H W_V (encoder)",
    ],
    mask: "mask M (source padding)",
    values: "values V (encoder)",
    context_width: 200,
};

/// The selected head's walk: its layer and head, and the tokens of its rows and columns.
struct Walk<'a> {
    /// The inspection whose tokens label the rows: the encoder's for `Part::Encoder`.
    ins: &'a Inspection,
    sel: Selection,
    layer: &'a LayerTrace,
    head: &'a HeadTrace,
    /// The rows of Q, the scores and the context.
    queries: &'a [String],
    /// The rows of K and V, the scores' columns.
    keys: &'a [String],
    /// Cross-attention: the encoder's inspection, its keys' and values' source.
    source: Option<&'a Inspection>,
    texts: &'static Texts,
}

/// The side of the grid of a head's T × T matrix where a stage shows two.
const PAIR_GRID: u32 = 230;
/// The side and width of a head's rows of dimensions (Q, K, V, φ).
const HEAD_DIMS: (u32, u32) = (260, 200);

impl<'a> Walk<'a> {
    fn new(ins: &'a Inspection, sel: Selection) -> Option<Walk<'a>> {
        match sel.part {
            Part::Cross => {
                let source = ins.source.as_deref()?;
                let (layer, head) = layer_and_head(ins, sel)?;
                Some(Walk {
                    ins,
                    sel,
                    layer,
                    head,
                    queries: &ins.tokens,
                    keys: &source.tokens,
                    source: Some(source),
                    texts: &CROSS_ATTENTION,
                })
            }
            Part::SelfAttention | Part::Encoder => {
                let ins = side(ins, sel.part)?;
                let own = Selection {
                    part: Part::SelfAttention,
                    ..sel
                };
                let (layer, head) = layer_and_head(ins, own)?;
                Some(Walk {
                    ins,
                    sel,
                    layer,
                    head,
                    queries: &ins.tokens,
                    keys: &ins.tokens,
                    source: None,
                    texts: &SELF_ATTENTION,
                })
            }
        }
    }

    /// "Layer 1 · Head 2 · what", with cross-attention's prefix.
    fn caption(&self, what: &str) -> String {
        head_caption(self.sel, &format!("{}{what}", self.texts.prefix))
    }

    /// A head matrix, queries × keys.
    fn grid(
        &self,
        m: HeadMatrix,
        what: &str,
        matrix: &Matrix,
        options: HeatmapOptions,
        max_grid: u32,
    ) -> Figure {
        labelled(
            (self.texts.name)(m),
            self.caption(what),
            matrix,
            self.queries.to_vec(),
            self.keys.to_vec(),
            options,
            max_grid,
        )
    }

    /// A head matrix of scores or weights, queries × keys, on the colour scale of its values.
    fn tokens(&self, m: HeadMatrix, what: &str, matrix: &Matrix, max_grid: u32) -> Figure {
        self.grid(m, what, matrix, HeatmapOptions::default(), max_grid)
    }

    /// A head matrix's rows of feature dimensions, one row per token of `rows`.
    fn head_dims(
        &self,
        m: HeadMatrix,
        what: &str,
        matrix: &Matrix,
        rows: &[String],
        size: (u32, u32),
    ) -> Figure {
        self.dims((self.texts.name)(m), self.caption(what), matrix, rows, size)
    }

    /// Rows of feature dimensions, one row per token of `rows`; `(largest grid, largest width)`.
    fn dims(
        &self,
        name: FigureName,
        caption: String,
        m: &Matrix,
        rows: &[String],
        (max_grid, max_w): (u32, u32),
    ) -> Figure {
        let options = HeatmapOptions {
            max_w: Some(max_w),
            ..DIMS
        };
        labelled(
            name,
            caption,
            m,
            rows.to_vec(),
            dimension_labels(m.cols),
            options,
            max_grid,
        )
    }

    /// Cross-attention's input: the decoder's X, the queries' source, and the encoder's
    /// output H, the keys' and values'.
    fn cross_inputs(&self, source: &Inspection) -> Vec<Figure> {
        let decoder = layer_caption(
            self.sel.layer,
            "decoder X after self-attention (the queries' source)",
        );
        let encoder = "Encoder output H (the keys' and values' source)".to_string();
        vec![
            self.dims(
                FigureName::CrossDecoderInput,
                decoder,
                &self.layer.attention_norm,
                self.queries,
                HEAD_DIMS,
            ),
            self.dims(
                FigureName::CrossEncoderOutput,
                encoder,
                &source.hidden,
                self.keys,
                HEAD_DIMS,
            ),
        ]
    }

    /// The stages from Q, K, V to the context, written once for both walks. What a head
    /// computes between them depends on its kind of attention.
    fn head_stage(&self, stage: Stage) -> Vec<Figure> {
        let head = self.head;
        match (attention_type(head), stage) {
            (_, Stage::Projections) => self.projections(),
            // Linear attention: no T×T scores exist; φ(Q) and φ(K) take their stages, and the
            // weights are the ones its formula implies (computed for display only).
            (AttentionType::Linear, Stage::FeatureMaps | Stage::Scores | Stage::Scaled) => {
                self.feature_maps()
            }
            (AttentionType::Linear, Stage::Masked | Stage::Softmax) => vec![
                self.tokens(
                    HeadMatrix::Mask,
                    "mask M (allowed keys)",
                    &head.mask,
                    PAIR_GRID,
                ),
                self.tokens(
                    HeadMatrix::Weights,
                    "implied weights φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j)",
                    &head.weights,
                    PAIR_GRID,
                ),
            ],
            // A softmax head has no φ.
            (AttentionType::Softmax, Stage::FeatureMaps) => Vec::new(),
            (AttentionType::Softmax, Stage::Scores) => {
                let what = match head.q_rotated {
                    Some(_) => "scores (R q)(R k)ᵀ of the rotated q and k",
                    None => "scores QKᵀ",
                };
                vec![self.tokens(HeadMatrix::RawScores, what, &head.scores, 340)]
            }
            (AttentionType::Softmax, Stage::Scaled) => vec![
                self.tokens(HeadMatrix::RawScores, "scores QKᵀ", &head.scores, PAIR_GRID),
                self.tokens(
                    HeadMatrix::ScaledScores,
                    score_captions(self.ins).0,
                    &head.scaled,
                    PAIR_GRID,
                ),
            ],
            (AttentionType::Softmax, Stage::Masked) => self.masked(),
            (AttentionType::Softmax, Stage::Softmax) => vec![
                self.masked_scores(),
                self.tokens(
                    HeadMatrix::Weights,
                    "softmax weights",
                    &head.weights,
                    PAIR_GRID,
                ),
            ],
            (kind, Stage::Context) => self.context(kind),
            // The stages around a head are the layer's (`layer_stage`).
            (
                _,
                Stage::Embeddings
                | Stage::Input
                | Stage::Tiles
                | Stage::Concat
                | Stage::Output
                | Stage::AttentionAddNorm
                | Stage::FeedForward
                | Stage::OutputAddNorm,
            ) => Vec::new(),
        }
    }

    /// Q, K and V; with rotary positions the rotated q and k beside them, from which the
    /// scores are built.
    fn projections(&self) -> Vec<Figure> {
        let (head, (queries, keys)) = (self.head, (self.queries, self.keys));
        let [q_caption, k_caption, v_caption] = self.texts.projections;
        let mut figs = vec![
            self.head_dims(HeadMatrix::Queries, q_caption, &head.q, queries, HEAD_DIMS),
            self.head_dims(HeadMatrix::Keys, k_caption, &head.k, keys, HEAD_DIMS),
            self.head_dims(HeadMatrix::Values, v_caption, &head.v, keys, HEAD_DIMS),
        ];
        if let (Some(q), Some(k)) = (&head.q_rotated, &head.k_rotated) {
            let k = self.head_dims(
                HeadMatrix::RotatedKeys,
                "rotated keys R(t)k",
                k,
                keys,
                HEAD_DIMS,
            );
            figs.insert(2, k);
            let q = self.head_dims(
                HeadMatrix::RotatedQueries,
                "rotated queries R(t)q",
                q,
                queries,
                HEAD_DIMS,
            );
            figs.insert(1, q);
        }
        figs
    }

    /// Linear attention's φ(Q) and φ(K).
    fn feature_maps(&self) -> Vec<Figure> {
        let head = self.head;
        [
            (
                HeadMatrix::PhiQueries,
                "φ(Q) = elu(Q) + 1",
                &head.phi_q,
                self.queries,
            ),
            (
                HeadMatrix::PhiKeys,
                "φ(K) = elu(K) + 1",
                &head.phi_k,
                self.keys,
            ),
        ]
        .into_iter()
        .filter_map(|(m, what, phi, rows)| {
            phi.as_ref()
                .map(|phi| self.head_dims(m, what, phi, rows, HEAD_DIMS))
        })
        .collect()
    }

    /// The scaled scores with the mask (and ALiBi's bias) added.
    fn masked_scores(&self) -> Figure {
        let what = masked_caption(self.ins, self.head);
        self.tokens(HeadMatrix::MaskedScores, what, &self.head.masked, PAIR_GRID)
    }

    /// The mask M, the masked scores, and with ALiBi the bias before them.
    fn masked(&self) -> Vec<Figure> {
        let head = self.head;
        let mask = self.grid(
            HeadMatrix::Mask,
            self.texts.mask,
            &head.mask,
            MASK_OPTIONS,
            PAIR_GRID,
        );
        let mut figs = vec![mask, self.masked_scores()];
        if let (Some(bias), Some(m)) = (&head.alibi_bias, head.alibi_slope) {
            let what = format!("ALiBi bias −m·|i − j| (m = {})", crate::format::slope(m));
            figs.insert(
                0,
                self.tokens(HeadMatrix::AlibiBias, &what, bias, PAIR_GRID),
            );
        }
        figs
    }

    /// The weights, V and the context. Linear attention's weights are the ones its formula
    /// implies; its context is not A·V of a softmax.
    fn context(&self, kind: AttentionType) -> Vec<Figure> {
        let (head, t) = (self.head, self.texts);
        let (weights, context) = match kind {
            AttentionType::Linear => ("implied weights", "context"),
            AttentionType::Softmax => ("softmax weights", "context A·V"),
        };
        let size = (220, t.context_width);
        vec![
            self.tokens(HeadMatrix::Weights, weights, &head.weights, 220),
            self.head_dims(HeadMatrix::Values, t.values, &head.v, self.keys, size),
            self.head_dims(
                HeadMatrix::Context,
                context,
                &head.context,
                self.queries,
                size,
            ),
        ]
    }
}

/// The kind of attention `head`'s trace records: linear attention's φ(Q) and φ(K) in place of
/// scores, or softmax's scores.
fn attention_type(head: &HeadTrace) -> AttentionType {
    match (&head.phi_q, &head.phi_k) {
        (Some(_), Some(_)) => AttentionType::Linear,
        _ => AttentionType::Softmax,
    }
}

/// What the masked scores hold: the scaled scores (÷√d_k or not, `score_captions`), with
/// ALiBi the bias too.
fn masked_caption(ins: &Inspection, head: &HeadTrace) -> &'static str {
    match (&head.alibi_bias, ins.scaling) {
        (None, _) => score_captions(ins).1,
        (Some(_), AttentionScaling::InverseSqrtHeadSize) => {
            "masked scores QKᵀ/√d_k − m·|i − j| + M"
        }
        (Some(_), AttentionScaling::None) => "masked scores QKᵀ − m·|i − j| + M",
    }
}

/// Every head's context side by side (T × H·D), columns grouped by head of size `d`.
fn concatenated_heads(
    ins: &Inspection,
    l: usize,
    layer: &LayerTrace,
    d: usize,
    max_w: u32,
    max_grid: u32,
) -> Figure {
    let options = HeatmapOptions {
        columns: ColumnAxis::Heads { size: d },
        max_w: Some(max_w),
        ..DIMS
    };
    let labels = head_dimension_labels(layer.context.cols, d);
    figure(
        FigureName::ConcatenatedHeads,
        ins,
        layer_caption(l, "concatenated heads"),
        &layer.context,
        labels,
        options,
        max_grid,
    )
}

/// Why a linear model's stages from the scores to the softmax show φ(Q) and φ(K) instead.
/// Rotary models: why the projections gain rotated copies and the scores use them.
pub const ROTARY: &str = "Rotary positions: there is no position embedding. Instead every q and k is rotated by its position t before the dot product, pair of dimensions by pair, pair i by the angle t·θ_i with θ_i = 10000^(−2i/d_k). The scores use the rotated q and k, so q_i·k_j depends on i − j alone, not on where the pair sits in the text.";

/// ALiBi models: what the bias in "+ M" is.
pub const ALIBI: &str = "ALiBi positions: there is no position embedding. Before the mask, each head adds −m·|i − j| to its scaled scores: the farther key j is from query i, the lower its score, along a straight line whose slope m is the head's own (for 4 heads 1/4, 1/16, 1/64, 1/256). Nothing about it is learned, and it is the same at any length, so the model reads texts longer than those it was trained on.";
/// The scaled and the masked scores' captions: ÷√d_k, or the raw scores of a model built with
/// Scaling "None" (its `scaled` is QKᵀ itself).
fn score_captions(ins: &Inspection) -> (&'static str, &'static str) {
    match ins.scaling {
        AttentionScaling::InverseSqrtHeadSize => {
            ("scaled scores QKᵀ/√d_k", "masked scores QKᵀ/√d_k + M")
        }
        AttentionScaling::None => (
            "scaled scores QKᵀ · 1 (Scaling: None)",
            "masked scores QKᵀ + M",
        ),
    }
}

pub const LINEAR_NO_SCORES: &str = "No scores here: the T×T score matrix is never formed in linear attention. Each query reads φ(q_i)·(Σ_j φ(k_j) v_jᵀ) / (φ(q_i)·Σ_j φ(k_j)), with φ = elu + 1: the sums over keys are d_k × d_k, so the cost grows with T, not T². There is no scaling by √d_k and no softmax; the weights shown are the ones this formula implies, worked out for display only.";

/// A nudge when a stage would show nothing of interest for this text.
pub fn stage_hint(ins: &Inspection, sel: Selection, stage: Stage) -> Option<&'static str> {
    let (_, head) = layer_and_head(ins, sel)?;
    let nothing_masked = head.mask.data.iter().all(|m| m.is_finite());
    if sel.part == Part::Cross {
        // Cross-attention masks only the source's padding.
        return (matches!(stage, Stage::Masked | Stage::Softmax) && nothing_masked).then_some(
            "Nothing is masked here: set \"Pad to\" above the source's token count to see its [PAD] columns hidden from every target row.",
        );
    }
    match attention_type(head) {
        AttentionType::Linear
            if matches!(
                stage,
                Stage::FeatureMaps | Stage::Scores | Stage::Scaled | Stage::Softmax
            ) =>
        {
            return Some(LINEAR_NO_SCORES);
        }
        AttentionType::Linear | AttentionType::Softmax => {}
    }
    if head.q_rotated.is_some() && matches!(stage, Stage::Projections | Stage::Scores) {
        return Some(ROTARY);
    }
    if head.alibi_bias.is_some() && stage == Stage::Masked {
        return Some(ALIBI);
    }
    if !(matches!(stage, Stage::Masked | Stage::Softmax) && nothing_masked) {
        return None;
    }
    Some(match ins.mask {
        MaskMode::None => "The mask is None: M is 0 everywhere, so nothing is masked, [PAD] included. Choose Padding or Causal to see −∞ cells.",
        _ => "Nothing is masked here: set \"Pad to\" above the token count, or choose the Causal mask, to see −∞ cells.",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::figures::tests::{inspection, inspection_of, seq2seq_inspection};
    use engine::config::PositionEmbeddingType;
    use engine::ops::attention::AttentionKernel;
    use protocol::stage::Stages;
    use protocol::ProbeInput;
    use std::collections::HashSet;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// The names of `stage`'s figures, in order.
    fn names(ins: &Inspection, sel: Selection, stage: Stage) -> Vec<String> {
        stage_figures(ins, sel, stage)
            .into_iter()
            .map(|f| f.name.name())
            .collect()
    }

    #[test]
    fn every_stage_figure_has_a_name_of_its_own_in_its_stage() {
        let model = |shape: fn(&mut engine::BertConfig)| {
            inspection_of(shape, ProbeInput::default(), AttentionKernel::Full)
        };
        let rotary = model(|c| c.position_embedding_type = PositionEmbeddingType::Rotary);
        let alibi = model(|c| c.position_embedding_type = PositionEmbeddingType::Alibi);
        let linear = model(|c| c.attention_type = AttentionType::Linear);
        let plain = inspection(ProbeInput::default());
        let seq2seq = seq2seq_inspection();
        let cross = Stages {
            cross: true,
            ..Stages::default()
        };
        let walks = [
            (&plain, Part::SelfAttention, Stages::default()),
            (&rotary, Part::SelfAttention, Stages::default()),
            (&alibi, Part::SelfAttention, Stages::default()),
            (&linear, Part::SelfAttention, Stages::default()),
            (&seq2seq, Part::SelfAttention, Stages::default()),
            (&seq2seq, Part::Encoder, Stages::default()),
            (&seq2seq, Part::Cross, cross),
        ];
        let mut all = HashSet::new();
        for (ins, part, stages) in walks {
            let sel = Selection {
                part,
                ..Selection::default()
            };
            for stage in Stage::ALL.into_iter().chain(stages.list()) {
                let names = names(ins, sel, stage);
                let distinct: HashSet<_> = names.iter().collect();
                assert_eq!(distinct.len(), names.len(), "{part:?} {stage:?}: {names:?}");
                for n in &names {
                    let kebab = n
                        .split('-')
                        .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()));
                    assert!(kebab, "{part:?} {stage:?}: {n:?}");
                    assert_eq!(
                        n.starts_with("cross-"),
                        part == Part::Cross,
                        "{part:?} {stage:?}: {n:?}"
                    );
                }
                all.extend(names);
            }
        }
        // Every name is shown somewhere.
        assert_eq!(all.len(), 38, "{all:?}");
    }

    #[test]
    fn a_matrix_keeps_its_name_on_every_stage_and_in_both_walks() {
        let ins = inspection(ProbeInput::default());
        let sel = Selection::default();
        assert_eq!(
            names(&ins, sel, Stage::Softmax),
            ["masked-scores", "weights"]
        );
        assert_eq!(
            names(&ins, sel, Stage::Context),
            ["weights", "values", "context"]
        );
        assert_eq!(
            names(&ins, sel, Stage::OutputAddNorm),
            ["attention-add-norm", "ffn-output", "layer-output"]
        );
        assert_eq!(
            names(&ins, sel, Stage::Output),
            ["concatenated-heads", "attention-output"]
        );
        let seq2seq = seq2seq_inspection();
        let cross = Selection {
            part: Part::Cross,
            ..sel
        };
        assert_eq!(
            names(&seq2seq, cross, Stage::Projections),
            ["cross-queries", "cross-keys", "cross-values"]
        );
        assert_eq!(
            names(&seq2seq, cross, Stage::Input),
            ["cross-decoder-input", "cross-encoder-output"]
        );
        let weights = stage_figures(&seq2seq, cross, Stage::Softmax)
            .pop()
            .unwrap();
        assert_eq!(weights.name.name(), "cross-weights");
        assert_eq!(
            weights.data.caption,
            "Layer 1 · Head 1 · cross · softmax weights"
        );
        assert_eq!(
            weights.data.matrix,
            seq2seq.trace.layers[0].cross_heads[0].weights
        );
    }
}
