//! The attention explorer, the app's main screen: text in, every stage of self-attention out,
//! per layer and head. Thin views over three signals: the explorer edits `probe`, the app
//! answers with `inspection`, and everything drawn comes from that `Inspection`.

pub mod figure_list;
pub mod figures;
pub mod gelu_chart;
pub mod heads;
pub mod input;
pub mod model_view;
pub mod predictions;
pub mod rotation;
pub mod stage;
pub mod stepper;
pub mod tiles;
pub mod tokens;

use crate::components::heatmap_figure::HeatmapFigure;
use crate::keys;
use crate::live::Shown;
use engine::inspect::Inspection;
use figures::{rollout_figure, trace_shape, weights_figure, Selection};
use heads::HeadsView;
use input::ProbeForm;
use leptos::prelude::*;
use model_view::{HeadPicker, ModelView};
use predictions::Predictions;
use protocol::{AttentionKind, ModelInfo, ProbeInput};
use stage::{Stage, Stages};
use std::sync::Arc;
use stepper::StagePanel;
use tokens::{pad_note, TokenChips};

/// Side of the always-visible softmax figure beside the model view.
const SUMMARY_GRID: u32 = 240;

/// The truncation notice, when the text did not fit the model's positions.
pub fn truncation_notice(ins: &Inspection, max_positions: Option<usize>) -> Option<String> {
    ins.truncated.then(|| {
        let p = max_positions.unwrap_or(ins.tokens.len());
        format!(
            "Truncated: the model reads at most {p} positions, so the text was cut to {} tokens; the rest is not shown.",
            ins.tokens.len()
        )
    })
}

#[component]
pub fn Explorer(
    probe: RwSignal<ProbeInput>,
    inspection: Signal<Shown>,
    info: Signal<Option<ModelInfo>>,
) -> impl IntoView {
    let ins: Memo<Option<Arc<Inspection>>> =
        Memo::new(move |_| inspection.with(|s| s.as_ref().and_then(|r| r.as_ref().ok().cloned())));
    let error =
        Memo::new(move |_| inspection.with(|s| s.as_ref().and_then(|r| r.as_ref().err().cloned())));
    let waiting = move || inspection.with(Option::is_none);
    let shape =
        Memo::new(move |_| ins.with(|i| i.as_ref().map(|i| trace_shape(i)).unwrap_or((0, 0))));
    let chosen = RwSignal::new(Selection::default());
    let selection = Memo::new(move |_| {
        let (layers, heads) = shape.get();
        chosen.get().clamped(layers, heads)
    });
    let stage = RwSignal::new(Stage::FIRST_SHOWN);
    let stages = Memo::new(move |_| Stages {
        tiled: ins.with(|i| i.as_ref().is_some_and(|i| tiles::data::is_tiled(i))),
        linear: ins.with(|i| i.as_ref().is_some_and(|i| figures::is_linear(i))),
    });
    let tokens = Signal::derive(move || ins.with(|i| i.as_ref().map(|i| i.tokens.len())));
    // From the model info, or the trace itself (φ recorded) when there is none.
    let linear = Signal::derive(move || {
        info.with(|i| {
            i.as_ref()
                .is_some_and(|i| i.architecture.attention == AttentionKind::Linear)
        }) || ins.with(|i| i.as_ref().is_some_and(|i| figures::is_linear(i)))
    });

    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        if keys::is_editing(&ev) {
            return;
        }
        match ev.key().as_str() {
            "ArrowRight" => stage.update(|s| *s = stages.get_untracked().next(*s)),
            "ArrowLeft" => stage.update(|s| *s = stages.get_untracked().previous(*s)),
            _ => return,
        }
        ev.prevent_default();
    });
    on_cleanup(move || keys.remove());

    let notices = move || {
        let max = info.with(|i| i.as_ref().map(|i| i.max_positions));
        let pad_to = probe.with(|p| p.pad_to);
        ins.with(|i| {
            let i = i.as_ref()?;
            let notes: Vec<String> = truncation_notice(i, max)
                .into_iter()
                .chain(pad_note(pad_to, i))
                .collect();
            (!notes.is_empty()).then(|| {
                notes
                    .into_iter()
                    .map(|n| view! { <p class="notice" role="status">{n}</p> })
                    .collect_view()
            })
        })
    };
    let summary = Memo::new(move |_| {
        let sel = selection.get();
        ins.with(|i| {
            i.as_ref()
                .and_then(|i| weights_figure(i, sel, SUMMARY_GRID))
                .map(|f| f.data)
                .unwrap_or_default()
        })
    });
    let rollout = Memo::new(move |_| {
        ins.with(|i| {
            i.as_ref()
                .map(|i| rollout_figure(i, SUMMARY_GRID).data)
                .unwrap_or_default()
        })
    });
    let ok = move || error.with(Option::is_none) && !waiting();

    view! {
        <section class="explorer">
            <div class="probe-card">
                <ProbeForm probe=probe tokens=tokens linear=linear/>
                <Show when=ok>
                    {notices}
                    <TokenChips ins=ins/>
                    <Predictions ins=ins info=info/>
                </Show>
            </div>
            {move || error.get().map(|e| view! {
                <div class="error-box" role="alert">
                    <strong>"Nothing to show for this input. "</strong>
                    <span class="message">{e.to_string()}</span>
                </div>
            })}
            {move || waiting().then(|| view! { <p class="hint">"Reading the text…"</p> })}
            <Show when=ok>
                <div class="explorer-body">
                    <div class="overview">
                        <div class="model-card">
                            <HeadPicker shape=shape selection=selection chosen=chosen/>
                            <ModelView ins=ins shape=shape selection=selection chosen=chosen/>
                        </div>
                        <div class="summary">
                            <HeatmapFigure data=summary max_grid=SUMMARY_GRID/>
                        </div>
                        <div class="rollout">
                            <HeatmapFigure data=rollout max_grid=SUMMARY_GRID/>
                            <p class="why">"What each token draws on across all layers: the product over layers of 0.5·Ā + 0.5·I, where Ā is the layer's weights averaged over heads and 0.5·I stands for the residual connection (Abnar & Zuidema, 2020)."</p>
                            <p class="why">"Only an approximation: it treats attention as plain mixing and ignores the values, W_O, the feed-forward network and LayerNorm."</p>
                        </div>
                    </div>
                    <StagePanel ins=ins selection=selection stage=stage stages=stages/>
                    <HeadsView ins=ins/>
                </div>
            </Show>
        </section>
    }
}
