//! The formula stepper: Previous / Next (and ← / →) through the stages (the embeddings, the
//! nine of attention, Add & Norm, the feed-forward network, Add & Norm), each with its formula,
//! the part it adds highlighted, a plain reason, and its heatmaps.

use super::figures::{dims, stage_figures, stage_hint, Dims, Figure, Selection};
use super::gelu_chart::{traced_pairs, GeluChart};
use super::stage::{sqrt_text, FormulaKind, FormulaPart, Stage};
use crate::components::heatmap_figure::{HeatmapData, HeatmapFigure, HeatmapOptions};
use engine::inspect::Inspection;
use engine::MaskMode;
use leptos::prelude::*;
use std::sync::Arc;

/// The current stage's formula, with the parts it adds lit: the embeddings' sum, softmax(QKᵀ/√d_k
/// + M)V inside attention, or the layer around attention.
fn formula(stage: Signal<Stage>) -> impl IntoView {
    let lit = move |part: FormulaPart| move || stage.get().highlights().contains(&part);
    move || {
        match stage.get().formula() {
        FormulaKind::Embeddings => view! {
            <p class="formula" aria-label="X = LayerNorm(E_token[w] + E_position[i] + E_segment[s])">
                <span class="part">"X = "</span>
                <span class="part" class:hl=lit(FormulaPart::EmbeddingNorm)>"LayerNorm("</span>
                <span class="part" class:hl=lit(FormulaPart::EmbeddingSum)>"E"<sub>"token"</sub>"[w] + E"<sub>"position"</sub>"[i] + E"<sub>"segment"</sub>"[s]"</span>
                <span class="part" class:hl=lit(FormulaPart::EmbeddingNorm)>")"</span>
            </p>
        }
        .into_any(),
        FormulaKind::Attention => view! {
            <p class="formula" aria-label="X ↦ Concat over heads of softmax(QKᵀ/√d_k + M)V, times W_O">
                <span class="part" class:hl=lit(FormulaPart::X)>"X"</span>
                <span class="arrow">" ↦ "</span>
                <span class="part" class:hl=lit(FormulaPart::Concat)>"Concat"<sub>"h"</sub>"("</span>
                <span class="part" class:hl=lit(FormulaPart::Softmax)>"softmax("</span>
                <span class="part" class:hl=lit(FormulaPart::QKt)>"QKᵀ"</span>
                <span class="part" class:hl=lit(FormulaPart::Sqrt)>" / √d"<sub>"k"</sub></span>
                <span class="part" class:hl=lit(FormulaPart::Mask)>" + M"</span>
                <span class="part" class:hl=lit(FormulaPart::Softmax)>")"</span>
                <span class="part" class:hl=lit(FormulaPart::V)>"V"</span>
                <span class="part" class:hl=lit(FormulaPart::Concat)>")"</span>
                <span class="part" class:hl=lit(FormulaPart::Wo)>" W"<sub>"O"</sub></span>
            </p>
        }
        .into_any(),
        FormulaKind::Layer => view! {
            <p class="formula" aria-label="h = LayerNorm(X + Attention(X)); output = LayerNorm(h + GELU(h W1 + b1) W2 + b2)">
                <span class="part">"h = "</span>
                <span class="part" class:hl=lit(FormulaPart::Norm1)>"LayerNorm("</span>
                <span class="part" class:hl=lit(FormulaPart::Residual1)>"X + "</span>
                <span class="part">"Attention(X)"</span>
                <span class="part" class:hl=lit(FormulaPart::Norm1)>")"</span>
                <span class="arrow">" ;  "</span>
                <span class="part">"output = "</span>
                <span class="part" class:hl=lit(FormulaPart::Norm2)>"LayerNorm("</span>
                <span class="part" class:hl=lit(FormulaPart::Residual2)>"h + "</span>
                <span class="part" class:hl=lit(FormulaPart::Gelu)>"GELU("</span>
                <span class="part" class:hl=lit(FormulaPart::W1)>"h W"<sub>"1"</sub>" + b"<sub>"1"</sub></span>
                <span class="part" class:hl=lit(FormulaPart::Gelu)>")"</span>
                <span class="part" class:hl=lit(FormulaPart::W2)>" W"<sub>"2"</sub>" + b"<sub>"2"</sub></span>
                <span class="part" class:hl=lit(FormulaPart::Norm2)>")"</span>
            </p>
        }
        .into_any(),
    }
    }
}

/// The stage's own equation with this text's and model's sizes.
fn stage_equation(stage: Stage, Dims { t, c, h, d, i }: Dims, mask: MaskMode) -> AnyView {
    let mask_rule = match mask {
        MaskMode::Causal => "0 where key j is real and j ≤ i, else −∞ (causal)",
        MaskMode::Padding => "0 where key j is a real token, −∞ at [PAD] (padding)",
        MaskMode::None => "0 everywhere, [PAD] keys included (None: no mask)",
    };
    match stage {
        Stage::Embeddings => view! { <span>"three lookups, each T × C = "{t}" × "{c}", summed; LayerNorm over each row's "{c}" values"</span> }.into_any(),
        Stage::Input => view! { <span>"X: T × C = "{t}" × "{c}" (one row per token)"</span> }.into_any(),
        Stage::Projections => view! {
            <span>"Q = XW"<sub>"Q"</sub>", K = XW"<sub>"K"</sub>", V = XW"<sub>"V"</sub>
            " — per head T × d"<sub>"k"</sub>" = "{t}" × "{d}</span>
        }
        .into_any(),
        Stage::Scores => view! { <span>"S = QKᵀ: T × T = "{t}" × "{t}", S"<sub>"ij"</sub>" = q"<sub>"i"</sub>" · k"<sub>"j"</sub></span> }.into_any(),
        Stage::Scaled => view! { <span>"S / √d"<sub>"k"</sub>" with √d"<sub>"k"</sub>" = √"{d}" = "{sqrt_text(d)}</span> }.into_any(),
        Stage::Masked => view! { <span>"S / √d"<sub>"k"</sub>" + M, M"<sub>"ij"</sub>" = "{mask_rule}</span> }.into_any(),
        Stage::Softmax => view! { <span>"A = softmax(S / √d"<sub>"k"</sub>" + M), row by row: each row of A sums to 1"</span> }.into_any(),
        Stage::Context => view! { <span>"head = A · V: T × d"<sub>"k"</sub>" = "{t}" × "{d}</span> }.into_any(),
        Stage::Concat => view! { <span>"Concat(head"<sub>"1"</sub>", …, head"<sub>{h}</sub>"): T × C = "{t}" × "{c}" ("{h}" heads × "{d}")"</span> }.into_any(),
        Stage::Output => view! { <span>"Concat(…) W"<sub>"O"</sub>"ᵀ + b"<sub>"O"</sub>": T × C = "{t}" × "{c}</span> }.into_any(),
        Stage::AttentionAddNorm => view! { <span>"h = LayerNorm(X + attention output): T × C = "{t}" × "{c}", each row: (x − mean) / √(var + ε) · γ + β"</span> }.into_any(),
        Stage::FeedForward => view! {
            <span>"h W"<sub>"1"</sub>" + b"<sub>"1"</sub>": T × I = "{t}" × "{i}"; GELU elementwise; · W"<sub>"2"</sub>" + b"<sub>"2"</sub>": back to T × C = "{t}" × "{c}</span>
        }
        .into_any(),
        Stage::OutputAddNorm => view! { <span>"output = LayerNorm(h + feed-forward output): T × C = "{t}" × "{c}</span> }.into_any(),
    }
}

#[component]
pub fn Stepper(stage: RwSignal<Stage>) -> impl IntoView {
    let steps = Stage::ALL
        .iter()
        .map(|&s| {
            let current = move || stage.get() == s;
            view! {
                <li>
                    <button type="button" class="step" class:current=current
                        aria-current=move || current().then_some("step")
                        title=format!("{}. {}", s.number(), s.title())
                        on:click=move |_| stage.set(s)>
                        <span class="num">{s.number()}</span>
                        <span class="short">{s.short()}</span>
                    </button>
                </li>
            }
        })
        .collect_view();
    view! {
        <nav class="stepper" aria-label="Formula stepper">
            <button type="button" class="step-nav" on:click=move |_| stage.update(|s| *s = s.previous())
                prop:disabled=move || stage.get() == Stage::Embeddings>"Previous"</button>
            <ol class="steps">{steps}</ol>
            <button type="button" class="step-nav" on:click=move |_| stage.update(|s| *s = s.next())
                prop:disabled=move || stage.get() == Stage::OutputAddNorm>"Next"</button>
        </nav>
    }
}

#[component]
pub fn StagePanel(
    ins: Memo<Option<Arc<Inspection>>>,
    selection: Memo<Selection>,
    stage: RwSignal<Stage>,
) -> impl IntoView {
    let figures = Memo::new(move |_| {
        let (sel, s) = (selection.get(), stage.get());
        ins.with(|i| {
            i.as_ref()
                .map(|i| stage_figures(i, sel, s))
                .unwrap_or_default()
        })
    });
    let shape = Memo::new(move |_| ins.with(|i| i.as_ref().map(|i| dims(i)).unwrap_or_default()));
    let mask = Memo::new(move |_| ins.with(|i| i.as_ref().map(|i| i.mask).unwrap_or_default()));
    let gelu_pairs = Memo::new(move |_| {
        let l = selection.get().layer;
        ins.with(|i| {
            i.as_ref()
                .and_then(|i| i.trace.layers.get(l))
                .map(|layer| traced_pairs(&layer.intermediate_pre, &layer.intermediate))
                .unwrap_or_default()
        })
    });
    let title = move || {
        let s = stage.get();
        format!(
            "Step {} of {} — {}",
            s.number(),
            Stage::LAST_NUMBER,
            s.title()
        )
    };
    // Keyed by (stage, index): within a stage, figures redraw in place as the data changes.
    let keys = move || {
        let s = stage.get();
        (0..figures.with(Vec::len))
            .map(|i| (s, i))
            .collect::<Vec<_>>()
    };
    let figure = move |(_, i): (Stage, usize)| {
        let pick = move |f: &Vec<Figure>| f.get(i).cloned();
        let data = Memo::new(move |_| {
            figures
                .with(|f| pick(f).map(|f| f.data))
                .unwrap_or_else(HeatmapData::default)
        });
        let options = Memo::new(move |_| {
            figures
                .with(|f| pick(f).map(|f| f.options))
                .unwrap_or_else(HeatmapOptions::default)
        });
        let max_grid = figures.with_untracked(|f| pick(f).map_or(300, |f| f.max_grid));
        view! { <HeatmapFigure data=data options=options max_grid=max_grid/> }
    };
    view! {
        <section class="stage-panel" aria-label="Stages of self-attention">
            <Stepper stage=stage/>
            <div class="stage-text">
                <h2 class="stage-title">{title}</h2>
                {formula(stage.into())}
                <p class="equation">{move || stage_equation(stage.get(), shape.get(), mask.get())}</p>
                <p class="why">{move || stage.get().explain(shape.get().d, mask.get())}</p>
                {move || {
                    let (sel, s) = (selection.get(), stage.get());
                    ins.with(|i| i.as_ref().and_then(|i| stage_hint(i, sel, s)))
                        .map(|h| view! { <p class="notice stage-hint">{h}</p> })
                }}
            </div>
            <div class="figures">
                <Show when=move || stage.get() == Stage::FeedForward>
                    <GeluChart pairs=gelu_pairs/>
                </Show>
                <For each=keys key=|k| *k children=figure/>
            </div>
        </section>
    }
}
