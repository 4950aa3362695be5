//! A heatmap as the page shows it: `<figure>` with a caption, the canvas, a hover tooltip, a
//! legend for masked cells, export buttons, and its matrix as JSON in `data-matrix` (row =
//! query token, column = key token, −∞ as null); what it shows in `data-figure`
//! (`protocol::figure::FigureName`). The figure takes the keyboard's focus: a hidden sentence
//! sums it up for a screen reader, the arrows move a cell cursor, and the cell under it is
//! announced (`aria-live`) and shown as the tooltip shows a tapped cell.

use crate::components::export;
use crate::heatmap::{self, label_room, CellBlock, ColumnAxis, Fit, HeatmapSpec, Layout, Scale};
use crate::paint::PaintSlot;
use crate::reading::{self, axis_text, value_text, Cursor};
use engine::Matrix;
use leptos::prelude::*;
use protocol::figure::FigureName;

/// Everything one heatmap shows; `PartialEq` so an unchanged matrix is not redrawn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeatmapData {
    pub caption: String,
    pub matrix: Matrix,
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
}

/// How to draw a heatmap beyond its data. The default suits a T×T attention matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeatmapOptions {
    pub columns: ColumnAxis,
    /// `None`: from the matrix's range (diverging when it holds negative values).
    pub scale: Option<Scale>,
    /// Show the colour bar; without it, a legend says what the plain cells mean.
    pub bar: bool,
    /// Largest width of the cell grid; `None` = `max_grid`.
    pub max_w: Option<u32>,
    /// Cells to frame, drawn and exported with the heatmap, and named in `data-outline`.
    pub outline: Option<CellBlock>,
    /// What the hatched (non-finite) cells mean, for the legend.
    pub hatched: &'static str,
    /// Smallest cell, px: a matrix of many rows (MiniLM's 72 heads × 6 roles) grows taller
    /// than `max_grid` rather than shrink its rows below their labels.
    pub min_cell: Option<u32>,
}

/// The legend's usual meaning of a hatched cell.
pub const MASKED: &str = "−∞: masked";

impl Default for HeatmapOptions {
    fn default() -> Self {
        HeatmapOptions {
            columns: ColumnAxis::Tokens,
            scale: None,
            bar: true,
            max_w: None,
            outline: None,
            hatched: MASKED,
            min_cell: None,
        }
    }
}

/// `[[…], …]` with masked (non-finite) entries as null.
pub fn matrix_json(m: &Matrix) -> String {
    serde_json::to_string(&m.as_rows()).unwrap_or_else(|_| "[]".into())
}

/// The canvas geometry for `data` drawn with `options`, cells within `max_grid`.
pub fn layout_for(data: &HeatmapData, options: &HeatmapOptions, max_grid: u32) -> Layout {
    let longest = data.matrix.rows.max(data.matrix.cols) as u32;
    let max_grid = options
        .min_cell
        .map_or(max_grid, |cell| max_grid.max(cell * longest));
    let top = match options.columns {
        ColumnAxis::Tokens => label_room(&data.col_labels),
        ColumnAxis::Dimensions | ColumnAxis::Heads { .. } => 22,
    };
    let fit = Fit {
        max_w: options.max_w.unwrap_or(max_grid),
        max_h: max_grid,
        left: label_room(&data.row_labels),
        top,
        square: options.columns == ColumnAxis::Tokens,
        bar: options.bar,
        columns: options.columns,
    };
    Layout::fit(data.matrix.rows, data.matrix.cols, fit)
}

/// The colour scale: the options' own, or one that fits the finite values.
/// What the renderer needs to draw `data` (on the canvas or as SVG).
fn spec_for<'a>(
    data: &'a HeatmapData,
    options: &HeatmapOptions,
    layout: Layout,
) -> HeatmapSpec<'a> {
    HeatmapSpec {
        matrix: &data.matrix,
        row_labels: &data.row_labels,
        col_labels: &data.col_labels,
        scale: scale_for(data, options),
        layout,
        outline: options.outline,
    }
}

pub fn scale_for(data: &HeatmapData, options: &HeatmapOptions) -> Scale {
    options.scale.unwrap_or_else(|| {
        let (lo, hi) = data.matrix.finite_range().unwrap_or((0.0, 1.0));
        Scale::for_range(lo, hi)
    })
}

/// The window's width in CSS px (wide when unknown).
fn viewport_width() -> f64 {
    web_sys::window()
        .and_then(|w| w.inner_width().ok())
        .and_then(|w| w.as_f64())
        .unwrap_or(f64::MAX)
}

/// Where the pointer is, or where a finger tapped (phones have no hover; a tap elsewhere closes
/// it): the cell and its position in the viewport, px (the tooltip is `position: fixed`, so no
/// scrolling figure can clip it).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Hover {
    row: usize,
    col: usize,
    x: f64,
    y: f64,
    /// Where the tooltip's left edge goes, and whether it opens to the left of that.
    place: Place,
}

/// The tooltip beside the pointer, within the window: to its right, to its left near the
/// window's right edge, or (a phone, too narrow for either) from the window's left edge.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Place {
    Right,
    Left,
    FromEdge,
}

/// A tooltip is at most about this wide (a long token pair and a value), px.
const TOOLTIP_WIDTH: f64 = 280.0;

impl Place {
    fn at(x: f64, viewport: f64) -> Place {
        if x + TOOLTIP_WIDTH < viewport {
            Place::Right
        } else if x > TOOLTIP_WIDTH {
            Place::Left
        } else {
            Place::FromEdge
        }
    }
}

/// The page's first heatmap on screen, as the performance mark `first-heatmap`: the engines
/// benchmark (e2e/bench/engines.mjs) reads the time from navigation to it.
fn mark_first_heatmap() {
    thread_local! {
        static MARKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if !MARKED.replace(true) {
        if let Some(performance) = web_sys::window().and_then(|w| w.performance()) {
            let _ = performance.mark("first-heatmap");
        }
    }
}

#[component]
pub fn HeatmapFigure(
    #[prop(into)] data: Signal<HeatmapData>,
    /// What the figure shows, as its `data-figure` name.
    #[prop(into)]
    figure: Signal<FigureName>,
    /// Largest side of the cell grid, in pixels.
    #[prop(default = 320)]
    max_grid: u32,
    /// Axes, scale and colour bar; the default suits a T×T attention matrix.
    #[prop(optional, into)]
    options: MaybeProp<HeatmapOptions>,
    /// Show the "Save PNG" / "Save SVG" / "Copy CSV" buttons.
    #[prop(default = true)]
    export: bool,
) -> impl IntoView {
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    let (problem, set_problem) = signal(None::<String>);
    let (hover, set_hover) = signal(None::<Hover>);
    let (cursor, set_cursor) = signal(None::<Cursor>);
    let opts = Memo::new(move |_| options.get().unwrap_or_default());
    let layout = Memo::new(move |_| data.with(|d| layout_for(d, &opts.get(), max_grid)));
    paint_when_changed(canvas, data, layout, opts, set_problem);

    let on_move = move |ev: leptos::ev::MouseEvent| {
        let Some(canvas) = canvas.get_untracked() else {
            return;
        };
        // The canvas may be scaled down by CSS (narrow screens): map back to canvas pixels.
        let shown = canvas.client_width().max(1) as f64;
        let k = canvas.width() as f64 / shown;
        let (ox, oy) = (ev.offset_x() as f64, ev.offset_y() as f64);
        let cell = layout.get_untracked().cell_at(ox * k, oy * k);
        set_hover.set(cell.map(|(row, col)| Hover {
            row,
            col,
            x: ev.client_x() as f64,
            y: ev.client_y() as f64,
            place: Place::at(ev.client_x() as f64, viewport_width()),
        }));
    };
    let tools =
        export.then(|| view! { <ExportTools canvas=canvas data=data layout=layout opts=opts/> });
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        // Keys pressed on the figure's own buttons are theirs.
        if ev.target() != ev.current_target() {
            return;
        }
        let (rows, cols) = data.with_untracked(|d| (d.matrix.rows, d.matrix.cols));
        let from = cursor.get_untracked().unwrap_or_default();
        let Some(to) = from.moved(&ev.key(), rows, cols) else {
            return;
        };
        // The arrows are the cursor's here, not the stepper's (the window's listener).
        ev.prevent_default();
        ev.stop_propagation();
        set_cursor.set(Some(to));
        set_hover.set(
            canvas
                .get_untracked()
                .and_then(|c| hover_at(&c, layout.get_untracked(), to)),
        );
    };
    let summary_id = next_figure_id();
    let described_by = summary_id.clone();
    let summary = move || {
        data.with(|d| reading::summary(&d.caption, &d.matrix, &d.row_labels, &d.col_labels))
    };
    let readout = move || {
        let c = cursor.get()?;
        data.with(|d| {
            Some(reading::cell_text(
                &d.matrix,
                &d.row_labels,
                &d.col_labels,
                c,
            ))
        })
    };

    view! {
        <figure class="heatmap" tabindex="0" aria-describedby=described_by
            data-figure=move || figure.get().name() data-matrix=move || data.with(|d| matrix_json(&d.matrix))
            data-outline=move || opts.get().outline.map(|b| format!("[{},{},{},{}]", b.rows.0, b.rows.1, b.cols.0, b.cols.1))
            on:keydown=on_key on:blur=move |_| set_hover.set(None)>
            <figcaption>{move || data.with(|d| d.caption.clone())}</figcaption>
            <p class="visually-hidden" id=summary_id>{summary}</p>
            <canvas node_ref=canvas aria-hidden="true" style:min-width=move || format!("{}px", layout.get().width * 7 / 10)
                on:mousemove=on_move on:click=on_move on:mouseleave=move |_| set_hover.set(None)></canvas>
            <p class="visually-hidden cell-readout" aria-live="polite"
                data-row=move || cursor.get().map(|c| c.row) data-col=move || cursor.get().map(|c| c.col)>{readout}</p>
            {legend(data, opts)}
            {tools}
            {move || hover.get().and_then(|h| data.with(|d| tooltip(d, h)))}
            {move || problem.get().map(|p| view! { <p class="error">{p}</p> })}
        </figure>
    }
}

/// A page-wide unique id for a figure's summary, for `aria-describedby`.
fn next_figure_id() -> String {
    thread_local! {
        static NEXT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    }
    format!("heatmap-summary-{}", NEXT.replace(NEXT.get() + 1))
}

/// The tooltip of cell `c` as if a finger had tapped its centre: the cell's place in the
/// viewport from the canvas's box (CSS may show the canvas smaller than its pixels).
fn hover_at(canvas: &web_sys::HtmlCanvasElement, layout: Layout, c: Cursor) -> Option<Hover> {
    let bounds = canvas.get_bounding_client_rect();
    let k = bounds.width() / (canvas.width().max(1) as f64);
    let x =
        bounds.left() + (layout.grid_x as f64 + (c.col as f64 + 0.5) * layout.cell_w as f64) * k;
    let y = bounds.top() + (layout.grid_y as f64 + (c.row as f64 + 0.5) * layout.cell_h as f64) * k;
    (c.row < layout.rows && c.col < layout.cols).then_some(Hover {
        row: c.row,
        col: c.col,
        x,
        y,
        place: Place::at(x, viewport_width()),
    })
}

/// Draws `data` on `canvas` whenever it, its layout or its options change. Drawing is the one
/// place the figure talks to the outside world; it runs in a task of its own (see `paint`),
/// with the data as it is then, and says what went wrong in `problem`.
fn paint_when_changed(
    canvas: NodeRef<leptos::html::Canvas>,
    data: Signal<HeatmapData>,
    layout: Memo<Layout>,
    opts: Memo<HeatmapOptions>,
    problem: WriteSignal<Option<String>>,
) {
    let slot = PaintSlot::new();
    Effect::new(move |_| {
        let Some(canvas) = canvas.get() else { return };
        data.track();
        layout.track();
        opts.track();
        slot.paint(&canvas.clone(), move || {
            let (Some(layout), Some(opts)) = (layout.try_get_untracked(), opts.try_get_untracked())
            else {
                return;
            };
            let drawn = data.try_with_untracked(|d| {
                let spec = spec_for(d, &opts, layout);
                heatmap::draw(&canvas, &spec).err().map(|e| e.to_string())
            });
            if let Some(drawn) = drawn {
                if drawn.is_none() {
                    mark_first_heatmap();
                }
                problem.try_set(drawn);
            }
        });
    });
}

/// The cell under the pointer, its row and column and exact value, beside the pointer.
fn tooltip(d: &HeatmapData, h: Hover) -> Option<impl IntoView> {
    if h.row >= d.matrix.rows || h.col >= d.matrix.cols {
        return None;
    }
    let v = d.matrix.get(h.row, h.col);
    let (left, shift) = match h.place {
        Place::Right => (h.x + 12.0, "none"),
        Place::Left => (h.x - 12.0, "translateX(-100%)"),
        Place::FromEdge => (8.0, "none"),
    };
    // Above a finger (it would hide the tooltip), beside a mouse pointer.
    let top = if h.place == Place::FromEdge {
        h.y - 56.0
    } else {
        h.y - 34.0
    };
    Some(view! {
        <div class="tooltip" role="tooltip" class:from-edge=h.place == Place::FromEdge
            style:left=format!("{left}px") style:top=format!("{top}px") style:transform=shift>
            <span class="tip-row">{axis_text(&d.row_labels, h.row)}</span>" → "
            <span class="tip-col">{axis_text(&d.col_labels, h.col)}</span>" = "
            <span class="tip-value">{value_text(v)}</span>
        </div>
    })
}

/// What the plain and the hatched cells mean, when the figure has them.
fn legend(data: Signal<HeatmapData>, opts: Memo<HeatmapOptions>) -> impl IntoView {
    let has_masked = move || data.with(|d| d.matrix.data.iter().any(|x| !x.is_finite()));
    move || {
        let plain = !opts.get().bar;
        (plain || has_masked()).then(|| {
            view! {
                <p class="legend">
                    {plain.then(|| view! { <span class="swatch zero"></span>" 0: may attend " })}
                    {has_masked().then(|| view! { <span class="swatch hatched"></span>" "{opts.get().hatched} })}
                </p>
            }
        })
    }
}

/// "Save PNG", "Save SVG" and "Copy CSV", and what the last of them did.
#[component]
fn ExportTools(
    canvas: NodeRef<leptos::html::Canvas>,
    data: Signal<HeatmapData>,
    layout: Memo<Layout>,
    opts: Memo<HeatmapOptions>,
) -> impl IntoView {
    let (status, set_status) = signal(None::<String>);
    let save_png = move |_| {
        let Some(canvas) = canvas.get_untracked() else {
            return;
        };
        let caption = data.with_untracked(|d| d.caption.clone());
        set_status.set(Some(match export::save_png(&canvas, &caption) {
            Ok(()) => format!("Saved {}.png", export::slug(&caption)),
            Err(e) => format!("Could not save: {e}"),
        }));
    };
    let save_svg = move |_| {
        let Some(opts) = opts.try_get_untracked() else {
            return;
        };
        let layout = layout.get_untracked();
        let saved = data.with_untracked(|d| {
            let spec = spec_for(d, &opts, layout);
            heatmap::svg(&spec, &d.caption).and_then(|svg| export::save_svg(&svg, &d.caption))
        });
        set_status.set(Some(match saved {
            Ok(name) => format!("Saved {name}"),
            Err(e) => format!("Could not save: {e}"),
        }));
    };
    let copy_csv = move |_| {
        let csv =
            data.with_untracked(|d| export::matrix_csv(&d.matrix, &d.row_labels, &d.col_labels));
        let cells = data.with_untracked(|d| d.matrix.rows * d.matrix.cols);
        export::copy_text(&csv, move |result| {
            set_status.set(Some(match result {
                Ok(()) => format!("Copied {cells} values as CSV"),
                Err(e) => e.to_string(),
            }));
        });
    };
    view! {
        <div class="figure-tools">
            <button type="button" class="small" on:click=save_png title="Download this heatmap as a PNG image">"Save PNG"</button>
            <button type="button" class="small" on:click=save_svg title="Download this heatmap as an SVG (vector) image">"Save SVG"</button>
            <button type="button" class="small" on:click=copy_csv title="Copy the exact values as CSV">"Copy CSV"</button>
            <span class="export-status" role="status">{move || status.get()}</span>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_tooltip_stays_inside_the_window() {
        // Desktop: right of the pointer, left of it near the right edge.
        assert_eq!(Place::at(100.0, 1280.0), Place::Right);
        assert_eq!(Place::at(1200.0, 1280.0), Place::Left);
        // A 390 px phone: neither side has room for it anywhere in the middle.
        assert_eq!(Place::at(200.0, 390.0), Place::FromEdge);
        assert_eq!(Place::at(100.0, 390.0), Place::Right);
        assert_eq!(Place::at(300.0, 390.0), Place::Left);
    }

    fn data(rows: usize, cols: usize) -> HeatmapData {
        let labels = |n: usize| (0..n).map(|i| format!("t{i}")).collect();
        HeatmapData {
            caption: "x".into(),
            matrix: Matrix {
                rows,
                cols,
                data: vec![0.5; rows * cols],
            },
            row_labels: labels(rows),
            col_labels: labels(cols),
        }
    }

    #[test]
    async fn save_svg_downloads_the_figure_as_its_slug_dot_svg() {
        use crate::testing::{catch_downloads, settled};
        use wasm_bindgen::JsCast;
        let doc = web_sys::window().unwrap().document().unwrap();
        let container: web_sys::HtmlElement = doc.create_element("div").unwrap().unchecked_into();
        doc.body().unwrap().append_child(&container).unwrap();
        let mut d = data(3, 3);
        d.caption = "Layer 1 · Head 2 · softmax weights".into();
        let shown = Signal::stored(d);
        let _handle = leptos::mount::mount_to(
            container.clone(),
            move || view! { <HeatmapFigure data=shown figure=FigureName::SummaryWeights/> },
        );
        settled().await;
        let buttons = crate::testing::select_all(&doc, "figure.heatmap button");
        let labels: Vec<String> = buttons.iter().map(|b| b.text_content().unwrap()).collect();
        assert_eq!(labels, ["Save PNG", "Save SVG", "Copy CSV"]);
        let save: web_sys::HtmlElement = buttons[1].clone().unchecked_into();
        let downloads = catch_downloads(|| save.click());
        assert_eq!(downloads.len(), 1, "{downloads:?}");
        assert_eq!(downloads[0].0, "layer-1-head-2-softmax-weights.svg");
        assert!(downloads[0].1.starts_with("blob:"), "{downloads:?}");
        settled().await;
        let status = container
            .query_selector(".export-status")
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap();
        assert_eq!(status, "Saved layer-1-head-2-softmax-weights.svg");
        container.remove();
    }

    #[test]
    fn values_say_when_they_are_exactly_zero_or_masked() {
        assert_eq!(value_text(0.0), "0 (exactly)");
        assert_eq!(value_text(f32::NEG_INFINITY), "−∞ (masked)");
        assert_eq!(value_text(0.25), "0.250000");
        assert_eq!(axis_text(&["the".into()], 0), "the #0");
        assert_eq!(axis_text(&[], 3), "#3");
    }

    #[test]
    fn token_matrices_get_square_cells_and_dimension_matrices_a_short_top() {
        let square = layout_for(&data(9, 9), &HeatmapOptions::default(), 320);
        assert_eq!(square.cell_w, square.cell_h);
        let dims = HeatmapOptions {
            columns: ColumnAxis::Dimensions,
            ..HeatmapOptions::default()
        };
        let wide = layout_for(&data(9, 64), &dims, 320);
        assert!(wide.cell_h > wide.cell_w);
        assert!(wide.grid_y < square.grid_y);
    }

    #[test]
    fn a_tall_matrix_with_a_smallest_cell_grows_taller_instead_of_shrinking_its_rows() {
        let roles = HeatmapOptions {
            min_cell: Some(12),
            ..HeatmapOptions::default()
        };
        assert!(layout_for(&data(72, 6), &HeatmapOptions::default(), 220).cell_h < 12);
        let tall = layout_for(&data(72, 6), &roles, 220);
        assert_eq!((tall.cell_w, tall.cell_h), (12, 12));
        // A small one keeps its size.
        assert_eq!(
            layout_for(&data(8, 6), &roles, 220),
            layout_for(&data(8, 6), &HeatmapOptions::default(), 220)
        );
    }

    #[test]
    fn signed_matrices_get_a_diverging_scale_unless_told_otherwise() {
        let mut d = data(2, 2);
        d.matrix.data = vec![-1.0, 2.0, 0.0, f32::NEG_INFINITY];
        assert_eq!(
            scale_for(&d, &HeatmapOptions::default()),
            Scale::Diverging { magnitude: 2.0 }
        );
        let fixed = HeatmapOptions {
            scale: Some(Scale::Sequential { lo: 0.0, hi: 1.0 }),
            ..Default::default()
        };
        assert_eq!(
            scale_for(&d, &fixed),
            Scale::Sequential { lo: 0.0, hi: 1.0 }
        );
    }
}
