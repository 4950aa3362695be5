//! Export a figure: a heatmap's values as CSV (plain text, to the clipboard), its picture as PNG
//! (the canvas with the caption above it, downloaded) or as SVG (vectors, downloaded).

use crate::training::checkpoint::download::download_files;
use engine::Matrix;
use protocol::{LabError, LabResult};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlAnchorElement, HtmlCanvasElement};

/// One CSV field: quoted when it holds a comma, quote or line break (tokens can be `,`).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The matrix as CSV: a header of column labels, then one line per row, led by its label.
/// Values keep full precision; masked (−∞) entries are written `-inf`.
pub fn matrix_csv(m: &Matrix, row_labels: &[String], col_labels: &[String]) -> String {
    let label =
        |labels: &[String], i: usize| labels.get(i).cloned().unwrap_or_else(|| i.to_string());
    let mut out = String::from("query \\ key");
    for c in 0..m.cols {
        out.push(',');
        out.push_str(&csv_field(&label(col_labels, c)));
    }
    out.push('\n');
    for r in 0..m.rows {
        out.push_str(&csv_field(&label(row_labels, r)));
        for &v in m.row(r) {
            out.push(',');
            if v.is_finite() {
                out.push_str(&v.to_string());
            } else if v < 0.0 {
                out.push_str("-inf");
            } else {
                out.push_str(&v.to_string());
            }
        }
        out.push('\n');
    }
    out
}

/// A file name from a caption: "Layer 1 · Head 2 · softmax weights" → "layer-1-head-2-softmax-weights".
pub fn slug(caption: &str) -> String {
    let mut out = String::new();
    for ch in caption.chars().flat_map(char::to_lowercase) {
        if ch.is_ascii_alphanumeric() {
            out.push(ch);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "heatmap".into()
    } else {
        trimmed.to_string()
    }
}

/// Download `canvas` as `<slug(caption)>.png`, with the caption written above the picture.
pub fn save_png(canvas: &HtmlCanvasElement, caption: &str) -> LabResult<()> {
    let doc = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| LabError::browser("no document"))?;
    let framed: HtmlCanvasElement = doc
        .create_element("canvas")
        .map_err(|_| LabError::browser("could not create a canvas"))?
        .unchecked_into();
    let head = 30;
    framed.set_width(canvas.width().max(320));
    framed.set_height(canvas.height() + head);
    let ctx: CanvasRenderingContext2d = framed
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into().ok())
        .ok_or_else(|| LabError::browser("canvas has no 2d context"))?;
    ctx.set_fill_style_str("#ffffff");
    ctx.fill_rect(0.0, 0.0, framed.width() as f64, framed.height() as f64);
    ctx.set_fill_style_str("#1d2330");
    ctx.set_font("600 14px sans-serif");
    ctx.set_text_baseline("middle");
    ctx.fill_text(caption, 8.0, head as f64 / 2.0)
        .map_err(|_| LabError::browser("could not write the caption"))?;
    ctx.draw_image_with_html_canvas_element(canvas, 0.0, head as f64)
        .map_err(|_| LabError::browser("could not copy the heatmap"))?;
    let url = framed
        .to_data_url_with_type("image/png")
        .map_err(|_| LabError::browser("the canvas refused to export"))?;
    let a: HtmlAnchorElement = doc
        .create_element("a")
        .map_err(|_| LabError::browser("could not create a link"))?
        .unchecked_into();
    a.set_href(&url);
    a.set_download(&format!("{}.png", slug(caption)));
    a.click();
    Ok(())
}

/// What the figure's status line says after a save: "Saved name" or why not.
pub fn saved_text(saved: LabResult<String>) -> String {
    match saved {
        Ok(name) => format!("Saved {name}"),
        Err(e) => format!("Could not save: {e}"),
    }
}

/// Download an SVG document as `<slug(caption)>.svg`; returns the file name.
pub fn save_svg(svg: &str, caption: &str) -> LabResult<String> {
    let name = format!("{}.svg", slug(caption));
    download_files(&[(&name, svg.as_bytes(), "image/svg+xml")])?;
    Ok(name)
}

/// Put `text` on the clipboard, then call `done` with the outcome (an error message when the
/// browser refuses, e.g. without permission).
pub fn copy_text(text: &str, done: impl FnOnce(LabResult<()>) + 'static) {
    let Some(window) = web_sys::window() else {
        done(Err(LabError::browser("no window")));
        return;
    };
    let promise = window.navigator().clipboard().write_text(text);
    // One of the two callbacks runs, once; share `done` between them.
    let done = std::rc::Rc::new(std::cell::RefCell::new(Some(done)));
    let (ok_done, err_done) = (done.clone(), done);
    let ok = Closure::once(move |_: JsValue| {
        if let Some(f) = ok_done.borrow_mut().take() {
            f(Ok(()));
        }
    });
    let err = Closure::once(move |_: JsValue| {
        if let Some(f) = err_done.borrow_mut().take() {
            f(Err(LabError::browser(
                "the browser did not allow copying to the clipboard",
            )));
        }
    });
    let _ = promise.then2(&ok, &err);
    // The promise owns the callbacks from here on.
    ok.forget();
    err.forget();
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn csv_quotes_awkward_tokens_and_writes_masked_as_minus_inf() {
        let m = Matrix {
            rows: 2,
            cols: 2,
            data: vec![0.25, f32::NEG_INFINITY, 1.0, 0.0],
        };
        let labels: Vec<String> = [",", "say \"hi\""].iter().map(|s| s.to_string()).collect();
        let csv = matrix_csv(&m, &labels, &labels);
        assert_eq!(
            csv,
            "query \\ key,\",\",\"say \"\"hi\"\"\"\n\",\",0.25,-inf\n\"say \"\"hi\"\"\",1,0\n"
        );
    }

    #[test]
    fn csv_keeps_full_precision() {
        let m = Matrix {
            rows: 1,
            cols: 1,
            data: vec![0.123_456_79],
        };
        let csv = matrix_csv(&m, &["a".into()], &["b".into()]);
        let value: f32 = csv
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(value, 0.123_456_79);
    }

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(
            slug("Layer 1 · Head 2 · softmax weights"),
            "layer-1-head-2-softmax-weights"
        );
        assert_eq!(slug("Layer 2 · scores QKᵀ/√d_k"), "layer-2-scores-qk-d-k");
        assert_eq!(slug("··"), "heatmap");
    }
}
