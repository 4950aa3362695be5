//! A small heatmap without labels or colour bar, for the model view's grid: the same plotters
//! pixel buffer and single `putImageData` as a full figure, on a canvas the size of the grid.

use crate::heatmap::{self, HeatmapSpec, Layout, Scale};
use crate::paint::PaintSlot;
use engine::Matrix;
use leptos::prelude::*;

#[component]
pub fn HeatmapThumb(
    #[prop(into)] matrix: Signal<Matrix>,
    /// Largest side in canvas pixels; CSS scales the canvas to its cell.
    #[prop(default = 64)]
    side: u32,
) -> impl IntoView {
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    let (problem, set_problem) = signal(None::<String>);
    let slot = PaintSlot::new();
    Effect::new(move |_| {
        let Some(canvas) = canvas.get() else { return };
        matrix.track();
        slot.paint(&canvas.clone(), move || {
            let problem = matrix.try_with_untracked(|m| {
                let (lo, hi) = m.finite_range().unwrap_or((0.0, 1.0));
                let spec = HeatmapSpec {
                    matrix: m,
                    row_labels: &[],
                    col_labels: &[],
                    scale: Scale::for_range(lo, hi),
                    layout: Layout::new(m.rows, m.cols, side, false),
                    outline: None,
                };
                heatmap::draw(&canvas, &spec).err().map(|e| e.to_string())
            });
            if let Some(problem) = problem {
                set_problem.try_set(problem);
            }
        });
    });
    view! {
        <canvas class="thumb-canvas" node_ref=canvas title=move || problem.get().unwrap_or_default()></canvas>
    }
}
