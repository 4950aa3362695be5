use crate::components::heatmap_figure::{HeatmapData, HeatmapFigure};
use engine::Matrix;
use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    let tokens: Vec<String> = ["[CLS]", "the", "cat", "sat", "[SEP]"].iter().map(|s| s.to_string()).collect();
    let m = Matrix { rows: 5, cols: 5, data: (0..25).map(|i| ((i * 7) % 11) as f32 / 10.0).collect() };
    let data = Signal::derive(move || HeatmapData {
        caption: "Layer 1 · Head 1 · softmax weights".into(),
        matrix: m.clone(),
        row_labels: tokens.clone(),
        col_labels: tokens.clone(),
    });
    view! {
        <header><h1>"Attention Lab"</h1></header>
        <main><HeatmapFigure data=data/></main>
    }
}
