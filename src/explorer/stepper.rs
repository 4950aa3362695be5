//! The formula stepper: Previous / Next (and ← / →) through the stages (the embeddings, the
//! nine of attention, Add & Norm, the feed-forward network, Add & Norm), each with its formula,
//! the part it adds highlighted, a plain reason, and its heatmaps.

use super::figure_list::FigureList;
use super::figures::{dims, query_key_tokens, Dims, Figure, Part, Selection};
use super::gelu_chart::{traced_pairs, GeluChart};
use super::rotation::RotationPicture;
use super::stage_figures::{stage_figures, stage_hint};
use super::tiles::TilesPanel;
use crate::pytorch::code_view::PytorchView;
use crate::pytorch::{main_figure, NotebookSource, OpenInPytorch};
use engine::config::{AttentionScaling, AttentionType};
use engine::inspect::Inspection;
use engine::{HeadTrace, MaskMode};
use leptos::prelude::*;
use protocol::figure::FigureName;
use protocol::pytorch::ModelShape;
use protocol::stage::{sqrt_text, FormulaKind, FormulaPart, Stage, Stages};
use protocol::view::Showing;
use protocol::ModelInfo;
use std::sync::Arc;

/// The embeddings' formula, as the stepper's Embeddings stage and the tour write it.
pub const EMBEDDINGS_FORMULA: &str = "X = LayerNorm(E_token[w] + E_position[i] + E_segment[s])";

/// The current stage's formula, with the parts it adds lit: the embeddings' sum, softmax(QKᵀ/√d_k
/// + M)V inside attention (linear attention's own with `linear`), or the layer around attention.
fn formula(
    stage: Signal<Stage>,
    linear: Signal<bool>,
    cross: Signal<bool>,
    unscaled: Signal<bool>,
) -> impl IntoView {
    let lit = move |part: FormulaPart| move || stage.get().highlights().contains(&part);
    move || {
        match stage.get().formula() {
        FormulaKind::Attention if linear.get() => view! {
            <p class="formula" aria-label="X ↦ Concat over heads of φ(Q)(Σ over allowed j of φ(k_j) v_jᵀ) / (φ(Q)·Σ over allowed j of φ(k_j)), times W_O">
                <span class="part" class:hl=lit(FormulaPart::X)>"X"</span>
                <span class="arrow">" ↦ "</span>
                <span class="part" class:hl=lit(FormulaPart::Concat)>"Concat"<sub>"h"</sub>"("</span>
                <span class="part" class:hl=lit(FormulaPart::Phi)>"φ(Q)"</span>
                <span class="part">" Σ"</span><span class="part" class:hl=lit(FormulaPart::Mask)><sub>"j: M = 0"</sub></span>
                <span class="part" class:hl=lit(FormulaPart::Phi)>" φ(k"<sub>"j"</sub>")"</span>
                <span class="part" class:hl=lit(FormulaPart::V)>" v"<sub>"j"</sub>"ᵀ"</span>
                <span class="part">" / "</span>
                <span class="part" class:hl=lit(FormulaPart::Phi)>"φ(Q)·"</span>
                <span class="part">"Σ"</span><span class="part" class:hl=lit(FormulaPart::Mask)><sub>"j: M = 0"</sub></span>
                <span class="part" class:hl=lit(FormulaPart::Phi)>" φ(k"<sub>"j"</sub>")"</span>
                <span class="part" class:hl=lit(FormulaPart::Concat)>")"</span>
                <span class="part" class:hl=lit(FormulaPart::Wo)>" W"<sub>"O"</sub></span>
            </p>
        }
        .into_any(),
        FormulaKind::Embeddings => view! {
            <p class="formula" aria-label=EMBEDDINGS_FORMULA>
                <span class="part">"X = "</span>
                <span class="part" class:hl=lit(FormulaPart::EmbeddingNorm)>"LayerNorm("</span>
                <span class="part" class:hl=lit(FormulaPart::EmbeddingSum)>"E"<sub>"token"</sub>"[w] + E"<sub>"position"</sub>"[i] + E"<sub>"segment"</sub>"[s]"</span>
                <span class="part" class:hl=lit(FormulaPart::EmbeddingNorm)>")"</span>
            </p>
        }
        .into_any(),
        FormulaKind::Attention => {
            // Cross-attention: queries from the decoder's X, keys and values from the encoder's H.
            let is_cross = cross.get();
            let label = if is_cross {
                "cross-attention: X_dec, H_enc ↦ Concat over heads of softmax(QKᵀ/√d_k + M)V, times W_O, with Q from the decoder and K, V from the encoder"
            } else {
                "X ↦ Concat over heads of softmax(QKᵀ/√d_k + M)V, times W_O"
            };
            let input = if is_cross {
                view! { "X"<sub>"dec"</sub>", H"<sub>"enc"</sub> }.into_any()
            } else {
                "X".into_any()
            };
            view! {
            <p class="formula" aria-label=label>
                <span class="part" class:hl=lit(FormulaPart::X)>{input}</span>
                <span class="arrow">" ↦ "</span>
                <span class="part" class:hl=lit(FormulaPart::Concat)>"Concat"<sub>"h"</sub>"("</span>
                <span class="part" class:hl=lit(FormulaPart::Softmax)>"softmax("</span>
                <span class="part" class:hl=lit(FormulaPart::QKt)>"QKᵀ"</span>
                // A model built with Scaling "None" skips this part: struck through.
                <span class="part" class:hl=lit(FormulaPart::Sqrt) class:off=move || unscaled.get()
                    title=move || unscaled.get().then_some("This model does not divide its scores (Scaling: None)")>" / √d"<sub>"k"</sub></span>
                <span class="part" class:hl=lit(FormulaPart::Mask)>" + M"</span>
                <span class="part" class:hl=lit(FormulaPart::Softmax)>")"</span>
                <span class="part" class:hl=lit(FormulaPart::V)>"V"</span>
                <span class="part" class:hl=lit(FormulaPart::Concat)>")"</span>
                <span class="part" class:hl=lit(FormulaPart::Wo)>" W"<sub>"O"</sub></span>
            </p>
            {is_cross.then(|| view! {
                <p class="formula-sources" data-cross-sources="">
                    "Q = X"<sub>"dec"</sub>"W"<sub>"Q"</sub>" from the decoder (its tokens after self-attention); K = H"<sub>"enc"</sub>"W"<sub>"K"</sub>" and V = H"<sub>"enc"</sub>"W"<sub>"V"</sub>" from the encoder's output"
                </p>
            })}
            }
            .into_any()
        }
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
fn stage_equation(
    stage: Stage,
    Dims {
        t,
        c,
        h,
        d,
        i,
        block,
    }: Dims,
    mask: MaskMode,
    linear: bool,
    scaling: AttentionScaling,
    alibi: bool,
    cross_keys: Option<usize>,
) -> AnyView {
    if let Some(s) = cross_keys {
        if let Some(v) = cross_equation(stage, t, s, c, d) {
            return v;
        }
    }
    // ALiBi's bias, added to the scaled scores before the mask.
    let bias = if alibi { " − m·|i − j|" } else { "" };
    let mask_rule = match mask {
        MaskMode::Causal => "0 where key j is real and j ≤ i, else −∞ (causal)",
        MaskMode::Padding => "0 where key j is a real token, −∞ at [PAD] (padding)",
        MaskMode::None => "0 everywhere, [PAD] keys included (None: no mask)",
    };
    match stage {
        Stage::FeatureMaps => view! {
            <span>"φ(Q), φ(K): T × d"<sub>"k"</sub>" = "{t}" × "{d}", φ(x) = x + 1 for x > 0, e"<sup>"x"</sup>" otherwise"</span>
        }
        .into_any(),
        Stage::Masked if linear => view! { <span>"key j enters query i's sums only where M"<sub>"ij"</sub>" = "{mask_rule}</span> }.into_any(),
        Stage::Context if linear => view! {
            <span>"head"<sub>"i"</sub>" = φ(q"<sub>"i"</sub>")ᵀ S / φ(q"<sub>"i"</sub>")·z with S = Σ"<sub>"j"</sub>" φ(k"<sub>"j"</sub>") v"<sub>"j"</sub>"ᵀ ("{d}" × "{d}") and z = Σ"<sub>"j"</sub>" φ(k"<sub>"j"</sub>"): T × d"<sub>"k"</sub>" = "{t}" × "{d}</span>
        }
        .into_any(),
        Stage::Embeddings => view! { <span>"three lookups, each T × C = "{t}" × "{c}", summed; LayerNorm over each row's "{c}" values"</span> }.into_any(),
        Stage::Input => view! { <span>"X: T × C = "{t}" × "{c}" (one row per token)"</span> }.into_any(),
        Stage::Projections => view! {
            <span>"Q = XW"<sub>"Q"</sub>", K = XW"<sub>"K"</sub>", V = XW"<sub>"V"</sub>
            " — per head T × d"<sub>"k"</sub>" = "{t}" × "{d}</span>
        }
        .into_any(),
        Stage::Scores => view! { <span>"S = QKᵀ: T × T = "{t}" × "{t}", S"<sub>"ij"</sub>" = q"<sub>"i"</sub>" · k"<sub>"j"</sub></span> }.into_any(),
        Stage::Scaled if scaling == AttentionScaling::None => view! { <span>"S · 1: this model does not scale (Scaling: None); BERT would divide by √d"<sub>"k"</sub>" = √"{d}" = "{sqrt_text(d)}</span> }.into_any(),
        Stage::Masked if scaling == AttentionScaling::None => view! { <span>"S"{bias}" + M, M"<sub>"ij"</sub>" = "{mask_rule}</span> }.into_any(),
        Stage::Softmax if scaling == AttentionScaling::None => view! { <span>"A = softmax(S"{bias}" + M), row by row: each row of A sums to 1"</span> }.into_any(),
        Stage::Scaled => view! { <span>"S / √d"<sub>"k"</sub>" with √d"<sub>"k"</sub>" = √"{d}" = "{sqrt_text(d)}</span> }.into_any(),
        Stage::Masked => view! { <span>"S / √d"<sub>"k"</sub>{bias}" + M, M"<sub>"ij"</sub>" = "{mask_rule}</span> }.into_any(),
        Stage::Softmax => view! { <span>"A = softmax(S / √d"<sub>"k"</sub>{bias}" + M), row by row: each row of A sums to 1"</span> }.into_any(),
        Stage::Context => view! { <span>"head = A · V: T × d"<sub>"k"</sub>" = "{t}" × "{d}</span> }.into_any(),
        Stage::Tiles => view! {
            <span>"for each query block (B = "{block}" rows) and each key block S"<sub>"b"</sub>" it may see: m′ = max(m, rowmax S"<sub>"b"</sub>"), l′ = e"<sup>"m − m′"</sup>"·l + rowsum e"<sup>"S"<sub>"b"</sub>" − m′"</sup>", acc′ = e"<sup>"m − m′"</sup>"·acc + e"<sup>"S"<sub>"b"</sub>" − m′"</sup>"V"<sub>"b"</sub>"; then O = acc / l"</span>
        }
        .into_any(),
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

/// Cross-attention's equations: Tt = `t` target rows, Ts = `s` source rows.
fn cross_equation(stage: Stage, t: usize, s: usize, c: usize, d: usize) -> Option<AnyView> {
    Some(match stage {
        Stage::Input => view! { <span>"X"<sub>"dec"</sub>": Tt × C = "{t}" × "{c}" (target rows); H"<sub>"enc"</sub>": Ts × C = "{s}" × "{c}" (source rows)"</span> }.into_any(),
        Stage::Projections => view! {
            <span>"Q = X"<sub>"dec"</sub>"W"<sub>"Q"</sub>": Tt × d"<sub>"k"</sub>" = "{t}" × "{d}"; K = H"<sub>"enc"</sub>"W"<sub>"K"</sub>", V = H"<sub>"enc"</sub>"W"<sub>"V"</sub>": Ts × d"<sub>"k"</sub>" = "{s}" × "{d}</span>
        }
        .into_any(),
        Stage::Scores => view! { <span>"S = QKᵀ: Tt × Ts = "{t}" × "{s}", not square: target rows, source columns"</span> }.into_any(),
        Stage::Masked => view! { <span>"S / √d"<sub>"k"</sub>" + M, M"<sub>"ij"</sub>" = 0 where source token j is real, −∞ at source [PAD]; no causal part"</span> }.into_any(),
        Stage::Context => view! { <span>"head = A · V: (Tt × Ts)(Ts × d"<sub>"k"</sub>") = "{t}" × "{d}" (one row per target token)"</span> }.into_any(),
        _ => return None,
    })
}

#[component]
pub fn Stepper(stage: RwSignal<Stage>, stages: Memo<Stages>) -> impl IntoView {
    let shown = move || stages.get().shown(stage.get());
    let step = move |s: Stage| {
        let current = move || shown() == s;
        let number = move || stages.get().number(s);
        view! {
            <li>
                <button type="button" class="step" class:current=current data-stage=s.name()
                    aria-current=move || current().then_some("step")
                    title=move || format!("{}. {}", number(), s.title())
                    on:click=move |_| stage.set(s)>
                    <span class="num">{number}</span>
                    <span class="short">{s.short()}</span>
                </button>
            </li>
        }
    };
    let listed = move || stages.get().list().collect::<Vec<_>>();
    view! {
        <nav class="stepper" aria-label="Formula stepper">
            <button type="button" class="step-nav" on:click=move |_| stage.update(|s| *s = stages.get_untracked().previous(*s))
                prop:disabled=move || shown() == stages.get().ends().0>"Previous"</button>
            <ol class="steps">
                <For each=listed key=|s| *s children=step/>
            </ol>
            <button type="button" class="step-nav" on:click=move |_| stage.update(|s| *s = stages.get_untracked().next(*s))
                prop:disabled=move || shown() == stages.get().ends().1>"Next"</button>
        </nav>
    }
}

/// What the stage's words and figures read of the inspection, each a memo of its own.
#[derive(Clone, Copy)]
struct Traced {
    shape: Memo<Dims>,
    mask: Memo<MaskMode>,
    scaling: Memo<AttentionScaling>,
    /// The first head's trace records rotated q and k, or ALiBi's bias.
    rotary: Memo<bool>,
    alibi: Memo<bool>,
}

impl Traced {
    fn of(ins: Memo<Option<Arc<Inspection>>>) -> Traced {
        let first_head = move |has: fn(&HeadTrace) -> bool| {
            Memo::new(move |_| {
                ins.with(|i| {
                    i.as_ref()
                        .and_then(|i| i.trace.layers.first())
                        .and_then(|l| l.heads.first())
                        .is_some_and(has)
                })
            })
        };
        Traced {
            shape: Memo::new(move |_| {
                ins.with(|i| i.as_ref().map(|i| dims(i)).unwrap_or_default())
            }),
            mask: Memo::new(move |_| ins.with(|i| i.as_ref().map(|i| i.mask).unwrap_or_default())),
            scaling: Memo::new(move |_| {
                ins.with(|i| i.as_ref().map(|i| i.scaling).unwrap_or_default())
            }),
            rotary: first_head(|h| h.q_rotated.is_some()),
            alibi: first_head(|h| h.alibi_bias.is_some()),
        }
    }
}

#[component]
pub fn StagePanel(
    ins: Memo<Option<Arc<Inspection>>>,
    selection: Memo<Selection>,
    stage: RwSignal<Stage>,
    stages: Memo<Stages>,
    /// The model shown, and which of Compare's it is (for its code and its notebook).
    #[prop(into)]
    info: Signal<Option<ModelInfo>>,
    #[prop(into)] which: Signal<Showing>,
) -> impl IntoView {
    // The stage on screen: the one chosen, unless it no longer exists ("Tiles" without tiles).
    let shown = Memo::new(move |_| stages.get().shown(stage.get()));
    let figures = Memo::new(move |_| {
        let (sel, s) = (selection.get(), shown.get());
        ins.with(|i| {
            i.as_ref()
                .map(|i| stage_figures(i, sel, s))
                .unwrap_or_default()
        })
    });
    let traced = Traced::of(ins);
    // The code view: the figures on screen (the Tiles panel's output for its own), and the
    // model as the module's marks read it.
    let figure_names = Memo::new(move |_| match shown.get() {
        Stage::Tiles => vec![FigureName::Tiles],
        _ => figures.with(|f| f.iter().map(|f| f.name).collect()),
    });
    let window = use_context::<NotebookSource>()
        .map(|s| Signal::derive(move || s.probe.with(|p| p.window.is_some())))
        .unwrap_or_else(|| Signal::stored(false));
    let model = Memo::new(move |_| {
        let cross = selection.get().part == Part::Cross;
        let on = window.get();
        info.with(|info| ins.with(|i| Some(ModelShape::of(info.as_ref()?, i.as_ref()?, cross, on))))
    });
    let code_figure = Memo::new(move |_| main_figure(shown.get(), &figure_names.get()));
    let open = OpenInPytorch::in_context(which, shown, code_figure, selection);
    view! {
        <section class="stage-panel" aria-label="Stages of self-attention">
            <Stepper stage=stage stages=stages/>
            <StageText ins=ins selection=selection shown=shown stages=stages traced=traced/>
            <PytorchView figures=figure_names figure=code_figure model=model selection=selection open=open/>
            <StageFigures ins=ins selection=selection shown=shown figures=figures rotary=traced.rotary/>
        </section>
    }
}

/// The stage's heading, its formula with the parts it adds lit, its equation in this model's
/// sizes, why it is there, and a hint when it shows nothing of interest for this text.
#[component]
fn StageText(
    ins: Memo<Option<Arc<Inspection>>>,
    selection: Memo<Selection>,
    shown: Memo<Stage>,
    stages: Memo<Stages>,
    traced: Traced,
) -> impl IntoView {
    let Traced {
        shape,
        mask,
        scaling,
        alibi,
        ..
    } = traced;
    let attention = Signal::derive(move || stages.get().attention);
    let linear = Signal::derive(move || match attention.get() {
        AttentionType::Softmax => false,
        AttentionType::Linear => true,
    });
    let cross = Signal::derive(move || stages.get().cross);
    let unscaled = Signal::derive(move || scaling.get() == AttentionScaling::None);
    // Cross-attention's keys: the source's tokens (Ts).
    let cross_keys = Memo::new(move |_| {
        let sel = selection.get();
        ins.with(|i| {
            i.as_ref()
                .filter(|_| sel.part == Part::Cross)
                .and_then(|i| query_key_tokens(i, sel))
                .map(|(_, keys)| keys.len())
        })
    });
    let title = move || {
        let (s, all) = (shown.get(), stages.get());
        format!(
            "Step {} of {} — {}",
            all.number(s),
            all.last_number(),
            s.title()
        )
    };
    view! {
        <div class="stage-text">
            <h2 class="stage-title">{title}</h2>
            {formula(shown.into(), linear, cross, unscaled)}
            <p class="equation">{move || stage_equation(shown.get(), shape.get(), mask.get(), linear.get(), scaling.get(), alibi.get(), cross_keys.get())}</p>
            <p class="why">{move || if cross.get() {
                shown.get().explain_cross().to_string()
            } else {
                shown.get().explain(shape.get().d, mask.get(), attention.get(), scaling.get())
            }}</p>
            {move || {
                let (sel, s) = (selection.get(), shown.get());
                ins.with(|i| i.as_ref().and_then(|i| stage_hint(i, sel, s)))
                    .map(|h| view! { <p class="notice stage-hint">{h}</p> })
            }}
        </div>
    }
}

/// The stage's heatmaps, and the pictures some stages add: GELU's curve, the rotation of rotary
/// positions, the Tiles panel.
#[component]
fn StageFigures(
    ins: Memo<Option<Arc<Inspection>>>,
    selection: Memo<Selection>,
    shown: Memo<Stage>,
    figures: Memo<Vec<Figure>>,
    rotary: Memo<bool>,
) -> impl IntoView {
    let gelu_pairs = Memo::new(move |_| {
        let l = selection.get().layer;
        ins.with(|i| {
            i.as_ref()
                .and_then(|i| i.trace.layers.get(l))
                .map(|layer| traced_pairs(&layer.intermediate_pre, &layer.intermediate))
                .unwrap_or_default()
        })
    });
    view! {
        <div class="figures">
            <Show when=move || shown.get() == Stage::FeedForward>
                <GeluChart pairs=gelu_pairs/>
            </Show>
            <Show when=move || shown.get() == Stage::Projections && rotary.get()>
                <RotationPicture ins=ins selection=selection/>
            </Show>
            <Show when=move || shown.get() == Stage::Tiles>
                <TilesPanel ins=ins selection=selection/>
            </Show>
            <FigureList figures=figures group=shown/>
        </div>
    }
}
