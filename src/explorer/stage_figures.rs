//! What each stage of the stepper shows: its heatmaps (the matrices of the selected layer and
//! head, or of the cross-attention), and the hint beside them for models whose stage differs
//! (rotary, ALiBi, linear). Plain functions over an `Inspection`: they pick and label, they never
//! compute.

use super::figures::*;
use crate::components::heatmap_figure::HeatmapOptions;
use crate::heatmap::ColumnAxis;
use engine::config::AttentionScaling;
use engine::inspect::Inspection;
use engine::{LayerTrace, MaskMode, Matrix};
use protocol::stage::Stage;

/// The heatmaps of `stage` for the selected layer and head, in reading order. Empty when the
/// selection is outside the trace.
pub fn stage_figures(ins: &Inspection, sel: Selection, stage: Stage) -> Vec<Figure> {
    if sel.part == Part::Cross {
        return cross_stage_figures(ins, sel, stage);
    }
    let Some(ins) = side(ins, sel.part) else {
        return Vec::new();
    };
    let Some((layer, head)) = layer_and_head(
        ins,
        Selection {
            part: Part::SelfAttention,
            ..sel
        },
    ) else {
        return Vec::new();
    };
    let l = sel.layer;
    let hc = |what: &str| head_caption(sel, what);
    let lc = |what: &str| layer_caption(l, what);
    if let (Some(phi_q), Some(phi_k)) = (&head.phi_q, &head.phi_k) {
        // Linear attention: no T×T scores exist; φ(Q) and φ(K) take their stages, and the
        // weights are the ones its formula implies (computed for display only).
        let phi = |max_grid| {
            vec![
                dimension_figure(ins, hc("φ(Q) = elu(Q) + 1"), phi_q, max_grid, 200),
                dimension_figure(ins, hc("φ(K) = elu(K) + 1"), phi_k, max_grid, 200),
            ]
        };
        let implied = "implied weights φ(q_i)·φ(k_j) / Σ_j φ(q_i)·φ(k_j)";
        match stage {
            Stage::FeatureMaps | Stage::Scores | Stage::Scaled => return phi(260),
            Stage::Masked | Stage::Softmax => {
                return vec![
                    token_figure(ins, hc("mask M (allowed keys)"), &head.mask, 230),
                    token_figure(ins, hc(implied), &head.weights, 230),
                ];
            }
            Stage::Context => {
                return vec![
                    token_figure(ins, hc("implied weights"), &head.weights, 220),
                    dimension_figure(ins, hc("values V"), &head.v, 220, 180),
                    dimension_figure(ins, hc("context"), &head.context, 220, 180),
                ]
            }
            _ => {}
        }
    }
    match stage {
        Stage::Embeddings => {
            let e = &ins.trace;
            let ec = embeddings_caption;
            vec![
                dimension_figure(ins, ec("token E_token[w]"), &e.word_embeddings, 200, 150),
                dimension_figure(
                    ins,
                    ec("position E_position[i]"),
                    &e.position_embeddings,
                    200,
                    150,
                ),
                dimension_figure(
                    ins,
                    ec("segment E_segment[s]"),
                    &e.token_type_embeddings,
                    200,
                    150,
                ),
                dimension_figure(ins, ec("sum"), &e.embeddings_sum, 200, 150),
                dimension_figure(
                    ins,
                    ec("LayerNorm(sum) = X of layer 1"),
                    &e.embeddings,
                    200,
                    150,
                ),
            ]
        }
        Stage::AttentionAddNorm => vec![
            dimension_figure(ins, lc("input X (the residual)"), &layer.input, 220, 150),
            dimension_figure(
                ins,
                lc("attention output"),
                &layer.attention_output,
                220,
                150,
            ),
            dimension_figure(
                ins,
                lc("h = LayerNorm(X + attention output)"),
                &layer.attention_norm,
                220,
                150,
            ),
        ],
        Stage::FeedForward => vec![
            dimension_figure(ins, lc("h W₁ + b₁"), &layer.intermediate_pre, 220, 340),
            dimension_figure(ins, lc("GELU(h W₁ + b₁)"), &layer.intermediate, 220, 340),
            dimension_figure(
                ins,
                lc("feed-forward output GELU(…) W₂ + b₂"),
                &layer.ffn_output,
                220,
                150,
            ),
        ],
        Stage::OutputAddNorm => vec![
            dimension_figure(ins, lc("h (the residual)"), &layer.attention_norm, 220, 150),
            dimension_figure(ins, lc("feed-forward output"), &layer.ffn_output, 220, 150),
            dimension_figure(
                ins,
                lc("output LayerNorm(h + feed-forward output)"),
                &layer.output,
                220,
                150,
            ),
        ],
        Stage::Input => vec![dimension_figure(
            ins,
            layer_caption(l, "input X"),
            &layer.input,
            320,
            520,
        )],
        Stage::Projections => {
            let mut figs = vec![
                dimension_figure(ins, hc("queries Q"), &head.q, 260, 200),
                dimension_figure(ins, hc("keys K"), &head.k, 260, 200),
                dimension_figure(ins, hc("values V"), &head.v, 260, 200),
            ];
            if let (Some(q), Some(k)) = (&head.q_rotated, &head.k_rotated) {
                // Rotary: the scores are built from these, not from Q and K.
                figs.insert(
                    2,
                    dimension_figure(ins, hc("rotated keys R(t)k"), k, 260, 200),
                );
                figs.insert(
                    1,
                    dimension_figure(ins, hc("rotated queries R(t)q"), q, 260, 200),
                );
            }
            figs
        }
        Stage::Scores if head.q_rotated.is_some() => vec![token_figure(
            ins,
            hc("scores (R q)(R k)ᵀ of the rotated q and k"),
            &head.scores,
            340,
        )],
        Stage::Scores => vec![token_figure(ins, hc("scores QKᵀ"), &head.scores, 340)],
        Stage::Scaled => vec![
            token_figure(ins, hc("scores QKᵀ"), &head.scores, 230),
            token_figure(ins, hc(score_captions(ins).0), &head.scaled, 230),
        ],
        Stage::Masked => {
            let mut figs = vec![
                figure(
                    ins,
                    hc("mask M"),
                    &head.mask,
                    ins.tokens.clone(),
                    MASK_OPTIONS,
                    230,
                ),
                token_figure(ins, hc(masked_caption(ins, head)), &head.masked, 230),
            ];
            if let (Some(bias), Some(m)) = (&head.alibi_bias, head.alibi_slope) {
                let caption = format!("ALiBi bias −m·|i − j| (m = {})", crate::format::slope(m));
                figs.insert(0, token_figure(ins, hc(&caption), bias, 230));
            }
            figs
        }
        Stage::Softmax => vec![
            token_figure(ins, hc(masked_caption(ins, head)), &head.masked, 230),
            token_figure(ins, hc("softmax weights"), &head.weights, 230),
        ],
        Stage::Context => vec![
            token_figure(ins, hc("softmax weights"), &head.weights, 220),
            dimension_figure(ins, hc("values V"), &head.v, 220, 180),
            dimension_figure(ins, hc("context A·V"), &head.context, 220, 180),
        ],
        // The Tiles panel draws its own figures, one block at a time (`tiles::data`).
        Stage::Tiles => Vec::new(),
        // Linear attention only (handled above); a softmax head has no φ.
        Stage::FeatureMaps => Vec::new(),
        Stage::Concat => vec![concatenated_heads(ins, l, layer, head.q.cols, 560, 320)],
        Stage::Output => {
            vec![
                concatenated_heads(ins, l, layer, head.q.cols, 380, 300),
                dimension_figure(
                    ins,
                    layer_caption(l, "attention output · W_O"),
                    &layer.attention_output,
                    300,
                    380,
                ),
            ]
        }
    }
}

/// Cross-attention's stages: the decoder's X and the encoder's output H, Q from the one and
/// K, V from the other, then Tt×Ts scores, mask, weights and the context (one row per target
/// token). Its other stages are the decoder layer's own (the self-attention walk).
fn cross_stage_figures(ins: &Inspection, sel: Selection, stage: Stage) -> Vec<Figure> {
    let (Some((layer, head)), Some(source)) = (layer_and_head(ins, sel), ins.source.as_deref())
    else {
        return Vec::new();
    };
    let hc = |what: &str| head_caption(sel, &format!("cross · {what}"));
    let (targets, sources) = (&ins.tokens, &source.tokens);
    let grid = |caption: String, m: &Matrix, max_grid| {
        labelled(
            caption,
            m,
            targets.clone(),
            sources.clone(),
            HeatmapOptions::default(),
            max_grid,
        )
    };
    let dims = |caption: String, m: &Matrix, rows: &Vec<String>, max_grid| {
        let options = HeatmapOptions {
            max_w: Some(200),
            ..DIMS
        };
        labelled(
            caption,
            m,
            rows.clone(),
            dimension_labels(m.cols),
            options,
            max_grid,
        )
    };
    match stage {
        Stage::Input => vec![
            dims(
                layer_caption(
                    sel.layer,
                    "decoder X after self-attention (the queries' source)",
                ),
                &layer.attention_norm,
                targets,
                260,
            ),
            dims(
                "Encoder output H (the keys' and values' source)".to_string(),
                &source.hidden,
                sources,
                260,
            ),
        ],
        Stage::Projections => vec![
            dims(hc("queries Q = X W_Q (decoder)"), &head.q, targets, 260),
            dims(hc("keys K = H W_K (encoder)"), &head.k, sources, 260),
            dims(hc("values V = H W_V (encoder)"), &head.v, sources, 260),
        ],
        Stage::Scores => vec![grid(hc("scores QKᵀ"), &head.scores, 340)],
        Stage::Scaled => vec![
            grid(hc("scores QKᵀ"), &head.scores, 230),
            grid(hc(score_captions(ins).0), &head.scaled, 230),
        ],
        Stage::Masked => {
            vec![
                labelled(
                    hc("mask M (source padding)"),
                    &head.mask,
                    targets.clone(),
                    sources.clone(),
                    MASK_OPTIONS,
                    230,
                ),
                grid(hc(score_captions(ins).1), &head.masked, 230),
            ]
        }
        Stage::Softmax => vec![
            grid(hc(score_captions(ins).1), &head.masked, 230),
            grid(hc("softmax weights"), &head.weights, 230),
        ],
        Stage::Context => vec![
            grid(hc("softmax weights"), &head.weights, 220),
            dims(hc("values V (encoder)"), &head.v, sources, 220),
            dims(hc("context A·V"), &head.context, targets, 220),
        ],
        _ => Vec::new(),
    }
}

/// What the masked scores hold: the scaled scores (÷√d_k or not, `score_captions`), with
/// ALiBi the bias too.
fn masked_caption(ins: &Inspection, head: &engine::HeadTrace) -> &'static str {
    match (head.alibi_bias.is_some(), ins.scaling) {
        (false, _) => score_captions(ins).1,
        (true, AttentionScaling::InverseSqrtHeadSize) => "masked scores QKᵀ/√d_k − m·|i − j| + M",
        (true, AttentionScaling::None) => "masked scores QKᵀ − m·|i − j| + M",
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
    if head.phi_q.is_some()
        && matches!(
            stage,
            Stage::FeatureMaps | Stage::Scores | Stage::Scaled | Stage::Softmax
        )
    {
        return Some(LINEAR_NO_SCORES);
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
