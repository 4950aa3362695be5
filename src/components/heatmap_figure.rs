//! A heatmap as the page shows it: `<figure>` with a caption, the canvas, a hover tooltip, and
//! its matrix as JSON in `data-matrix` (row = query token, column = key token, −∞ as null).

use crate::heatmap::{self, HeatmapSpec, Layout, Scale};
use engine::Matrix;
use leptos::prelude::*;

/// Everything one heatmap shows; `PartialEq` so an unchanged matrix is not redrawn.
#[derive(Clone, Debug, PartialEq)]
pub struct HeatmapData {
    pub caption: String,
    pub matrix: Matrix,
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
}

/// `[[…], …]` with masked (non-finite) entries as null.
pub fn matrix_json(m: &Matrix) -> String {
    let rows: Vec<Vec<Option<f32>>> =
        (0..m.rows).map(|r| m.row(r).iter().map(|x| x.is_finite().then_some(*x)).collect()).collect();
    serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into())
}

#[component]
pub fn HeatmapFigure(
    #[prop(into)] data: Signal<HeatmapData>,
    /// Largest side of the cell grid, in pixels.
    #[prop(default = 320)]
    max_grid: u32,
) -> impl IntoView {
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    let (problem, set_problem) = signal(None::<String>);
    let (hover, set_hover) = signal(None::<(usize, usize)>);
    let layout = Memo::new(move |_| data.with(|d| Layout::new(d.matrix.rows, d.matrix.cols, max_grid, true)));

    // Drawing is the one place this component talks to the outside world.
    Effect::new(move |_| {
        let Some(canvas) = canvas.get() else { return };
        data.with(|d| {
            let (lo, hi) = d.matrix.finite_range().unwrap_or((0.0, 1.0));
            let spec = HeatmapSpec {
                matrix: &d.matrix,
                row_labels: &d.row_labels,
                col_labels: &d.col_labels,
                scale: Scale::for_range(lo, hi),
                layout: layout.get_untracked(),
            };
            set_problem.set(heatmap::draw(&canvas, &spec).err());
        });
    });

    let on_move = move |ev: leptos::ev::MouseEvent| {
        set_hover.set(layout.get_untracked().cell_at(ev.offset_x() as f64, ev.offset_y() as f64));
    };
    let tooltip = move || {
        let (r, c) = hover.get()?;
        data.with(|d| {
            let label = |labels: &[String], i: usize| labels.get(i).cloned().unwrap_or_default();
            let v = d.matrix.get(r, c);
            let value = if v.is_finite() { format!("{v:.6}") } else { "−∞ (masked)".to_string() };
            Some(view! {
                <div class="tooltip" role="tooltip">
                    <span class="tip-row">{label(&d.row_labels, r)}</span>" → "
                    <span class="tip-col">{label(&d.col_labels, c)}</span>": "
                    <span class="tip-value">{value}</span>
                </div>
            })
        })
    };

    view! {
        <figure class="heatmap" data-matrix=move || data.with(|d| matrix_json(&d.matrix))>
            <figcaption>{move || data.with(|d| d.caption.clone())}</figcaption>
            <canvas node_ref=canvas on:mousemove=on_move on:mouseleave=move |_| set_hover.set(None)></canvas>
            {tooltip}
            {move || problem.get().map(|p| view! { <p class="error">{p}</p> })}
        </figure>
    }
}
