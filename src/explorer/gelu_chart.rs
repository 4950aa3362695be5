//! The GELU curve beside the feed-forward stage: the engine's own GELU drawn as a line, and
//! this layer's (h W₁ + b₁, GELU(h W₁ + b₁)) pairs from the trace as dots on it. The dots are
//! the trace's numbers, not recomputed: they fall on the curve because the engine applied it.

use crate::chart_style::house_style;
use crate::components::export;
use crate::components::painted::paint_on_change;
use engine::ops::gelu::gelu;
use engine::Matrix;
use leptos::prelude::*;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use protocol::{LabError, LabResult};

/// Canvas size, CSS px.
pub const SIZE: (u32, u32) = (250, 210);
/// Dots drawn at most: every k-th pair beyond that (the curve is the same either way).
const MAX_DOTS: usize = 1_000;
/// Points of the line.
const CURVE_POINTS: usize = 161;

/// The (x, GELU(x)) pairs of one layer, as the trace holds them, at most `MAX_DOTS`.
pub fn traced_pairs(pre: &Matrix, post: &Matrix) -> Vec<(f32, f32)> {
    if pre.data.len() != post.data.len() {
        return Vec::new();
    }
    let every = pre.data.len().div_ceil(MAX_DOTS).max(1);
    pre.data
        .iter()
        .zip(&post.data)
        .step_by(every)
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|(&x, &y)| (x, y))
        .collect()
}

/// The x range: at least [−4, 4], wider when the layer's inputs are.
pub fn x_range(pairs: &[(f32, f32)]) -> (f32, f32) {
    pairs.iter().fold((-4.0f32, 4.0f32), |(lo, hi), &(x, _)| {
        (lo.min(x), hi.max(x))
    })
}

/// The engine's GELU on `CURVE_POINTS` points across `range`.
pub fn curve((lo, hi): (f32, f32)) -> Vec<(f32, f32)> {
    let step = (hi - lo) / (CURVE_POINTS - 1) as f32;
    (0..CURVE_POINTS)
        .map(|k| lo + step * k as f32)
        .map(|x| (x, gelu(x)))
        .collect()
}

/// The figure's caption, on the page and in its exports.
pub const CAPTION: &str = "GELU(x) = 0.5·x·(1 + erf(x/√2)), dots: this layer";

/// Axes, the curve and the dots on any backend; `font_scale` as in `svg::SVG_FONT_SCALE`.
fn plot<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    pairs: &[(f32, f32)],
    font_scale: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (lo, hi) = x_range(pairs);
    let line = curve((lo, hi));
    let y_hi = line.iter().map(|p| p.1).fold(1.0f32, f32::max);
    let mut chart = ChartBuilder::on(root)
        .margin(8)
        .margin_right(12)
        .x_label_area_size(30)
        .y_label_area_size(46)
        .build_cartesian_2d(lo..hi, -0.5f32..y_hi)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc("x = h W₁ + b₁")
        .y_desc("GELU(x)")
        .x_labels(5)
        .y_labels(4);
    house_style(&mut mesh, font_scale).draw()?;

    // The band of x this layer's inputs span, so the dots' place on the curve is easy to find.
    if let (Some(first), Some(last)) = (
        pairs.iter().map(|p| p.0).reduce(f32::min),
        pairs.iter().map(|p| p.0).reduce(f32::max),
    ) {
        chart.draw_series(std::iter::once(Rectangle::new(
            [(first, -0.5), (last, y_hi)],
            RGBColor(0xfb, 0xe3, 0xd0).filled(),
        )))?;
    }
    chart.draw_series(LineSeries::new(
        line,
        RGBColor(0x2b, 0x59, 0xc3).stroke_width(2),
    ))?;
    let dot = RGBColor(0xd0, 0x5a, 0x0c).mix(0.55).filled();
    // 3×3 px squares: a canvas fillRect each, where a circle is a path (10× slower here).
    chart.draw_series(
        pairs
            .iter()
            .map(|&p| EmptyElement::at(p) + Rectangle::new([(-1, -1), (2, 2)], dot)),
    )?;
    Ok(())
}

fn draw(canvas: &web_sys::HtmlCanvasElement, pairs: &[(f32, f32)]) -> LabResult<()> {
    let backend = CanvasBackend::with_canvas_object(canvas.clone())
        .ok_or_else(|| LabError::browser("GELU chart: no canvas"))?;
    let root = backend.into_drawing_area();
    plot(&root, pairs, 1.0)
        .and_then(|()| root.present())
        .map_err(|e| LabError::browser(format!("GELU chart: {e}")))
}

/// The chart as an SVG document of the canvas's size, as vectors.
pub fn svg(pairs: &[(f32, f32)]) -> LabResult<String> {
    crate::svg::document(SIZE, CAPTION, &[], |area| {
        plot(area, pairs, crate::svg::SVG_FONT_SCALE)
    })
}

/// GELU's curve with the traced pairs of one layer on it.
#[component]
pub fn GeluChart(#[prop(into)] pairs: Signal<Vec<(f32, f32)>>) -> impl IntoView {
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    let failed = paint_on_change(canvas, pairs, |canvas, points| draw(canvas, points));
    let status = RwSignal::new(None::<String>);
    let save_png = move |_| {
        if let Some(canvas) = canvas.get_untracked() {
            let saved = export::save_png(&canvas, CAPTION)
                .map(|()| format!("{}.png", export::slug(CAPTION)));
            status.set(Some(export::saved_text(saved)));
        }
    };
    let save_svg = move |_| {
        let saved = pairs
            .with_untracked(|p| svg(p))
            .and_then(|doc| export::save_svg(&doc, CAPTION));
        status.set(Some(export::saved_text(saved)));
    };
    view! {
        <figure class="gelu-chart" data-gelu-dots=move || pairs.with(Vec::len).to_string()>
            <figcaption>{CAPTION}</figcaption>
            <canvas node_ref=canvas width=SIZE.0 height=SIZE.1
                aria-label="The GELU curve, with this layer's inputs and outputs of GELU as dots on it"></canvas>
            <div class="figure-tools">
                <button type="button" class="small" on:click=save_png>"Save PNG"</button>
                <button type="button" class="small" on:click=save_svg>"Save SVG"</button>
                {move || status.get().map(|s| view! { <span class="export-status" role="status">{s}</span> })}
            </div>
            {move || failed.get().map(|e| view! { <p class="error">{e}</p> })}
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_traced_pairs_lie_on_the_engines_gelu_and_are_thinned_past_the_cap() {
        let ins = super::super::figures::tests::inspection(protocol::ProbeInput::default());
        let layer = &ins.trace.layers[0];
        let pairs = traced_pairs(&layer.intermediate_pre, &layer.intermediate);
        assert!(
            !pairs.is_empty() && pairs.len() <= MAX_DOTS,
            "{}",
            pairs.len()
        );
        for (x, y) in &pairs {
            assert!(
                (gelu(*x) - y).abs() < 1e-5,
                "GELU({x}) = {} ≠ {y}",
                gelu(*x)
            );
        }
        let (lo, hi) = x_range(&pairs);
        assert!(lo <= -4.0 && hi >= 4.0);
        let line = curve((lo, hi));
        assert_eq!(line.len(), CURVE_POINTS);
        assert_eq!((line[0].0, line[CURVE_POINTS - 1].0), (lo, hi));
        let doc = svg(&pairs).unwrap();
        assert!(
            doc.starts_with("<svg") && doc.contains("<polyline"),
            "{}",
            &doc[..200]
        );
        assert!(doc.contains("GELU(x)"));
        let mismatched = Matrix {
            rows: 1,
            cols: 1,
            data: vec![0.0],
        };
        assert!(traced_pairs(&layer.intermediate_pre, &mismatched).is_empty());
    }
}
