//! The attention explorer: text in, every stage of self-attention out, per layer and head.

pub mod stage;

use crate::app::Shown;
use crate::components::heatmap_figure::{HeatmapData, HeatmapFigure};
use crate::lab::{ModelInfo, ProbeInput};
use leptos::prelude::*;

#[component]
pub fn Explorer(probe: RwSignal<ProbeInput>, inspection: Signal<Shown>, info: Signal<Option<ModelInfo>>) -> impl IntoView {
    let _ = (probe, info);
    let weights = move || {
        let shown = inspection.get()?;
        Some(match shown {
            Ok(seen) => {
                let data = HeatmapData {
                    caption: "Layer 1 · Head 1 · softmax weights".into(),
                    matrix: seen.trace.layers[0].heads[0].weights.clone(),
                    row_labels: seen.tokens.clone(),
                    col_labels: seen.tokens.clone(),
                };
                view! { <HeatmapFigure data=Signal::stored(data)/> }.into_any()
            }
            Err(message) => view! { <p class="error">{message}</p> }.into_any(),
        })
    };
    view! { <section class="explorer">{weights}</section> }
}
