//! Component tests in headless Chromium (wasm-bindgen-test).

use attention_lab_web::components::heatmap_figure::{HeatmapData, HeatmapFigure};
use attention_lab_web::testing::settled;
use engine::Matrix;
use leptos::prelude::*;
use protocol::figure::{FigureName, HeadMatrix};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn fresh_container() -> web_sys::HtmlElement {
    let doc = web_sys::window().unwrap().document().unwrap();
    let div = doc.create_element("div").unwrap();
    doc.body().unwrap().append_child(&div).unwrap();
    div.unchecked_into()
}

#[wasm_bindgen_test]
async fn heatmap_figure_draws_pixels_and_carries_its_matrix() {
    let container = fresh_container();
    let labels: Vec<String> = ["[CLS]", "a", "[PAD]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let matrix = Matrix {
        rows: 3,
        cols: 3,
        data: vec![
            0.5,
            0.5,
            f32::NEG_INFINITY,
            1.0,
            0.0,
            f32::NEG_INFINITY,
            0.2,
            0.8,
            f32::NEG_INFINITY,
        ],
    };
    let data = HeatmapData {
        caption: "Layer 1 · Head 1 · masked scores".into(),
        matrix,
        row_labels: labels.clone(),
        col_labels: labels,
    };
    let _handle = leptos::mount::mount_to(
        container.clone(),
        move || view! { <HeatmapFigure data=Signal::stored(data.clone()) figure=FigureName::Head(HeadMatrix::MaskedScores)/> },
    );
    settled().await;

    let figure = container
        .query_selector("figure.heatmap")
        .unwrap()
        .expect("a figure");
    let json = figure.get_attribute("data-matrix").unwrap();
    assert_eq!(json, "[[0.5,0.5,null],[1.0,0.0,null],[0.2,0.8,null]]");
    let caption = container
        .query_selector("figcaption")
        .unwrap()
        .unwrap()
        .text_content()
        .unwrap();
    assert_eq!(caption, "Layer 1 · Head 1 · masked scores");

    let pixels = canvas_pixels(&container);
    let ink = pixels
        .chunks_exact(4)
        .filter(|p| p[0] < 250 || p[1] < 250 || p[2] < 250)
        .count();
    assert!(
        ink * 20 > pixels.len() / 4,
        "canvas mostly blank: {ink} inked pixels"
    );
}

/// All RGBA bytes of the first canvas under `container`.
fn canvas_pixels(container: &web_sys::HtmlElement) -> Vec<u8> {
    let canvas: web_sys::HtmlCanvasElement = container
        .query_selector("canvas")
        .unwrap()
        .unwrap()
        .unchecked_into();
    let ctx: web_sys::CanvasRenderingContext2d =
        canvas.get_context("2d").unwrap().unwrap().unchecked_into();
    ctx.get_image_data(0.0, 0.0, canvas.width() as f64, canvas.height() as f64)
        .unwrap()
        .data()
        .to_vec()
}

/// A redraw with new values and the same labels repaints only the grid and colour bar; the
/// result must equal a figure drawn from scratch with those values, labels and ticks included.
#[wasm_bindgen_test]
async fn a_redraw_with_the_same_labels_equals_a_fresh_drawing() {
    let labels: Vec<String> = ["[CLS]", "the", "cat", "[SEP]"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let data_for = |shift: f32| HeatmapData {
        caption: "weights".into(),
        matrix: Matrix {
            rows: 4,
            cols: 4,
            data: (0..16)
                .map(|i| ((i as f32 * 0.37 + shift).sin() + 1.0) / 2.0)
                .collect(),
        },
        row_labels: labels.clone(),
        col_labels: labels.clone(),
    };
    let (first, second) = (data_for(0.0), data_for(1.3));
    let live = fresh_container();
    let data = RwSignal::new(first);
    let _live = leptos::mount::mount_to(
        live.clone(),
        move || view! { <HeatmapFigure data=data figure=FigureName::SummaryWeights/> },
    );
    settled().await;
    let before = canvas_pixels(&live);
    data.set(second.clone());
    settled().await;
    let redrawn = canvas_pixels(&live);

    let fresh = fresh_container();
    let _fresh = leptos::mount::mount_to(
        fresh.clone(),
        move || view! { <HeatmapFigure data=Signal::stored(second.clone()) figure=FigureName::SummaryWeights/> },
    );
    settled().await;
    assert_ne!(before, redrawn, "the new values were not drawn");
    assert!(
        redrawn == canvas_pixels(&fresh),
        "the redraw differs from a fresh drawing"
    );
}
