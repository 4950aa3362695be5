use super::colour::{Scale, MASK_FILL, MASK_HATCH};
use super::layout::{ColumnAxis, Layout, BAR_WIDTH};
use crate::svg;
use engine::Matrix;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use protocol::{LabError, LabResult};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{Clamped, JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData};

/// What to draw. `matrix` row = query token, column = key token; −∞ entries are masked cells.
pub struct HeatmapSpec<'a> {
    pub matrix: &'a Matrix,
    pub row_labels: &'a [String],
    pub col_labels: &'a [String],
    pub scale: Scale,
    pub layout: Layout,
    /// A block of cells to outline (tiled attention's current block).
    pub outline: Option<CellBlock>,
}

/// Rows [rows.0, rows.1) × columns [cols.0, cols.1) of a heatmap's grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellBlock {
    pub rows: (usize, usize),
    pub cols: (usize, usize),
}

/// Colour of an outlined block: dark, so it reads on red, blue and white cells alike.
const OUTLINE: [u8; 3] = [17, 17, 17];

/// Colour of the lines between heads in a concatenated view.
const HEAD_RULE: [u8; 3] = [29, 35, 48];

/// Draw `spec` on `canvas`, resizing it to the layout. Errors are drawing failures, reported
/// as text for the caller to show; they never panic.
pub fn draw(canvas: &HtmlCanvasElement, spec: &HeatmapSpec) -> LabResult<()> {
    let started = now_ms();
    let l = spec.layout;
    // Resizing clears and reallocates the canvas: only when the size really changes.
    let resized = canvas.width() != l.width || canvas.height() != l.height;
    if resized {
        canvas.set_width(l.width);
        canvas.set_height(l.height);
    }
    let pixels = paint_pixels(spec).map_err(|e| LabError::browser(format!("heatmap: {e}")))?;
    let ctx = context_2d(canvas)?;
    let image = ImageData::new_with_u8_clamped_array_and_sh(Clamped(&pixels), l.width, l.height)
        .map_err(|_| LabError::browser("heatmap: could not create image data"))?;
    // While training, a figure is redrawn 5 times a second with new values and the same
    // labels: then only the grid and the colour bar change, and the text (font parsing and
    // glyph rasterising, half the cost of a redraw) is already on the canvas, outside them.
    let text_key = l.labels.then(|| text_key(spec));
    let text_kept = !resized && text_key.is_some() && canvas.get_attribute(TEXT_KEY) == text_key;
    if text_kept {
        let put = |x: u32, y: u32, w: u32, h: u32| {
            ctx.put_image_data_with_dirty_x_and_dirty_y_and_dirty_width_and_dirty_height(
                &image,
                0.0,
                0.0,
                x.into(),
                y.into(),
                w.into(),
                h.into(),
            )
        };
        put(l.grid_x, l.grid_y, l.grid_width(), l.grid_height())
            .and_then(|_| match l.bar {
                true => put(l.bar_x, l.grid_y, BAR_WIDTH, l.bar_height()),
                false => Ok(()),
            })
            .map_err(|_| LabError::browser("heatmap: putImageData failed"))?;
    } else {
        ctx.put_image_data(&image, 0.0, 0.0)
            .map_err(|_| LabError::browser("heatmap: putImageData failed"))?;
        if l.labels {
            draw_text(canvas, spec)
                .map_err(|e| LabError::browser(format!("heatmap labels: {e}")))?;
        }
        match &text_key {
            Some(key) => canvas.set_attribute(TEXT_KEY, key),
            None => canvas.remove_attribute(TEXT_KEY),
        }
        .map_err(|_| LabError::browser("heatmap: could not mark the canvas"))?;
    }
    record_draw(started, &l);
    Ok(())
}

/// The heatmap as an SVG document with `caption` above it: the cells, bar and text `draw` puts
/// on the canvas, as vectors (one `<rect>` a cell). As wide as the PNG export.
pub fn svg(spec: &HeatmapSpec, caption: &str) -> LabResult<String> {
    let l = spec.layout;
    svg::document((l.width.max(320), l.height), caption, &[], |area| {
        paint_cells(area, spec)?;
        if l.labels {
            paint_text(area, spec, svg::SVG_FONT_SCALE)?;
        }
        Ok(())
    })
}

/// Canvas attribute naming the text last drawn on it (see `text_key`).
const TEXT_KEY: &str = "data-text-key";

/// Everything `draw_text` writes, as one hash: row and column labels, layout and the colour
/// bar's tick values. Equal keys mean equal text pixels.
fn text_key(spec: &HeatmapSpec) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    spec.row_labels.hash(&mut h);
    spec.col_labels.hash(&mut h);
    format!("{:?}", spec.layout).hash(&mut h);
    if spec.layout.bar {
        let (lo, hi) = spec.scale.range();
        [lo, (lo + hi) / 2.0, hi].map(format_tick).hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

fn context_2d(canvas: &HtmlCanvasElement) -> LabResult<CanvasRenderingContext2d> {
    canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        .ok_or_else(|| LabError::browser("heatmap: canvas has no 2d context"))
}

/// Cells, hatching, head rules and colour bar as RGBA bytes (w·h·4).
fn paint_pixels(spec: &HeatmapSpec) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let l = spec.layout;
    let mut rgb = vec![255u8; (l.width * l.height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (l.width, l.height)).into_drawing_area();
        paint_cells(&root, spec)?;
        root.present()?;
    }
    let mut rgba = vec![255u8; rgb.len() / 3 * 4];
    for (out, px) in rgba.chunks_exact_mut(4).zip(rgb.chunks_exact(3)) {
        out[..3].copy_from_slice(px);
    }
    Ok(rgba)
}

/// Cells, hatching, head rules and colour bar on any backend: pixels on screen, vectors in SVG.
fn paint_cells<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    spec: &HeatmapSpec,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let l = spec.layout;
    let (w, h) = (l.cell_w as i32, l.cell_h as i32);
    // Labelled cells keep a 1 px gap so neighbours stay apart; thumbnails are solid.
    let gap = i32::from(l.labels && w > 3 && h > 3);
    let rows = spec.matrix.rows.min(l.rows);
    let cols = spec.matrix.cols.min(l.cols);
    for r in 0..rows {
        for c in 0..cols {
            let (x, y) = (
                l.grid_x as i32 + c as i32 * w,
                l.grid_y as i32 + r as i32 * h,
            );
            let v = spec.matrix.get(r, c);
            let fill = if v.is_finite() {
                spec.scale.colour(v)
            } else {
                MASK_FILL
            };
            // plotters fills [x0, x1) × [y0, y1): the corner is one past the last pixel.
            let corner = (x + w - gap, y + h - gap);
            root.draw(&Rectangle::new([(x, y), corner], rgb_colour(fill).filled()))?;
            if !v.is_finite() && w.min(h) >= 6 {
                hatch(root, x, y, w - gap, h - gap)?;
            }
        }
    }
    if let ColumnAxis::Heads { size } = l.columns {
        paint_head_rules(root, &l, size)?;
    }
    if let Some(block) = spec.outline {
        paint_outline(root, &l, block)?;
    }
    if l.bar {
        paint_colour_bar(root, spec)?;
    }
    Ok(())
}

/// A 2 px frame just inside `block`'s cells, clipped to the grid (the text around the grid is
/// drawn once and kept, so nothing may be painted outside it).
fn paint_outline<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    l: &Layout,
    block: CellBlock,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (r0, r1) = (block.rows.0.min(l.rows), block.rows.1.min(l.rows));
    let (c0, c1) = (block.cols.0.min(l.cols), block.cols.1.min(l.cols));
    if r0 >= r1 || c0 >= c1 {
        return Ok(());
    }
    let x0 = (l.grid_x + c0 as u32 * l.cell_w) as i32;
    let y0 = (l.grid_y + r0 as u32 * l.cell_h) as i32;
    let x1 = (l.grid_x + c1 as u32 * l.cell_w) as i32 - 1;
    let y1 = (l.grid_y + r1 as u32 * l.cell_h) as i32 - 1;
    let colour = rgb_colour(OUTLINE);
    for inset in 0..2 {
        root.draw(&Rectangle::new(
            [(x0 + inset, y0 + inset), (x1 - inset, y1 - inset)],
            colour.stroke_width(1),
        ))?;
    }
    Ok(())
}

/// −∞: diagonal hatching, so a masked cell never reads as a small value.
fn hatch<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    x: i32,
    y: i32,
    w: i32,
    h: i32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let colour = rgb_colour(MASK_HATCH);
    let (w, h) = (w - 1, h - 1);
    root.draw(&PathElement::new(vec![(x, y + h), (x + w, y)], colour))?;
    root.draw(&PathElement::new(
        vec![(x, y + h / 2), (x + w / 2, y)],
        colour,
    ))?;
    root.draw(&PathElement::new(
        vec![(x + w / 2, y + h), (x + w, y + h / 2)],
        colour,
    ))?;
    Ok(())
}

/// A dark rule between each group of `size` columns: where one head's dimensions end.
fn paint_head_rules<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    l: &Layout,
    size: usize,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    if size == 0 {
        return Ok(());
    }
    let colour = rgb_colour(HEAD_RULE).filled();
    let (top, bottom) = (l.grid_y as i32 - 6, (l.grid_y + l.grid_height()) as i32 + 2);
    for k in (size..l.cols).step_by(size) {
        let x = (l.grid_x + k as u32 * l.cell_w) as i32 - 1;
        root.draw(&Rectangle::new([(x - 1, top), (x + 1, bottom)], colour))?;
    }
    Ok(())
}

fn paint_colour_bar<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    spec: &HeatmapSpec,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let l = spec.layout;
    let (x, top, h) = (l.bar_x as i32, l.grid_y as i32, l.bar_height() as i32);
    let (lo, hi) = spec.scale.range();
    for i in 0..h {
        let v = hi - (hi - lo) * i as f32 / (h - 1).max(1) as f32;
        let colour = rgb_colour(spec.scale.colour(v));
        // Filled rectangles are half-open: one row is [top + i, top + i + 1).
        root.draw(&Rectangle::new(
            [(x, top + i), (x + BAR_WIDTH as i32, top + i + 1)],
            colour.filled(),
        ))?;
    }
    root.draw(&Rectangle::new(
        [(x, top), (x + BAR_WIDTH as i32 - 1, top + h - 1)],
        BLACK.stroke_width(1),
    ))?;
    Ok(())
}

fn rgb_colour([r, g, b]: [u8; 3]) -> RGBColor {
    RGBColor(r, g, b)
}

/// Token labels, column ticks and colour-bar ticks, drawn by plotters-canvas (the browser's
/// text engine).
fn draw_text(
    canvas: &HtmlCanvasElement,
    spec: &HeatmapSpec,
) -> Result<(), Box<dyn std::error::Error>> {
    let backend = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("no canvas backend")?;
    let root = backend.into_drawing_area();
    paint_text(&root, spec, 1.0)?;
    Ok(())
}

/// The text of `draw_text` on any backend. `font_scale` multiplies every font size: plotters'
/// SVG backend writes a size s as s / 1.24 (its own font metrics' convention), the canvas as s.
fn paint_text<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    spec: &HeatmapSpec,
    font_scale: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let l = spec.layout;
    let ink = RGBColor(29, 35, 48);
    let font_for = |cell: u32| {
        (
            "sans-serif",
            (cell as f64 * 0.85).clamp(9.5, 13.0) * font_scale,
        )
            .into_font()
            .color(&ink)
    };
    let (w, h) = (l.cell_w as i32, l.cell_h as i32);
    let row_font = font_for(l.cell_h).pos(Pos::new(HPos::Right, VPos::Center));
    for (r, label) in spec
        .row_labels
        .iter()
        .enumerate()
        .take(l.rows)
        .step_by(label_stride(l.cell_h))
    {
        let y = l.grid_y as i32 + r as i32 * h + h / 2;
        root.draw(&Text::new(
            short(label),
            (l.grid_x as i32 - 5, y),
            row_font.clone(),
        ))?;
    }
    let above = l.grid_y as i32 - 5;
    match l.columns {
        ColumnAxis::Tokens => {
            let rotated = font_for(l.cell_w)
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Left, VPos::Center));
            let every = label_stride(l.cell_w);
            for (c, label) in spec
                .col_labels
                .iter()
                .enumerate()
                .take(l.cols)
                .step_by(every)
            {
                let x = l.grid_x as i32 + c as i32 * w + w / 2;
                root.draw(&Text::new(short(label), (x, above), rotated.clone()))?;
            }
        }
        ColumnAxis::Dimensions => {
            let tick = font_for(11).pos(Pos::new(HPos::Center, VPos::Bottom));
            for c in (0..l.cols).step_by(dimension_stride(l.cell_w)) {
                let x = l.grid_x as i32 + c as i32 * w + w / 2;
                root.draw(&Text::new(c.to_string(), (x, above), tick.clone()))?;
            }
        }
        ColumnAxis::Heads { size } if size > 0 => {
            let tick = font_for(11).pos(Pos::new(HPos::Center, VPos::Bottom));
            let group_px = size as u32 * l.cell_w;
            for (k, start) in (0..l.cols).step_by(size).enumerate() {
                let x = (l.grid_x + start as u32 * l.cell_w + group_px / 2) as i32;
                let name = if group_px >= 48 {
                    format!("head {}", k + 1)
                } else {
                    format!("{}", k + 1)
                };
                root.draw(&Text::new(name, (x, above - 2), tick.clone()))?;
            }
        }
        ColumnAxis::Heads { .. } => {}
    }
    if l.bar {
        let (lo, hi) = spec.scale.range();
        let bar_h = l.bar_height() as i32;
        let tick = ("sans-serif", 11.0 * font_scale).into_font().color(&ink);
        let bx = (l.bar_x + BAR_WIDTH + 4) as i32;
        let ticks = [
            (0.0, hi, VPos::Top),
            (0.5, (lo + hi) / 2.0, VPos::Center),
            (1.0, lo, VPos::Bottom),
        ];
        for (frac, v, vpos) in ticks {
            let y = l.grid_y as i32 + ((bar_h - 1) as f32 * frac) as i32;
            root.draw(&Text::new(
                format_tick(v),
                (bx, y),
                tick.clone().pos(Pos::new(HPos::Left, vpos)),
            ))?;
        }
    }
    Ok(())
}

/// With small cells, label every k-th row/token so labels do not overlap (10 px a label).
fn label_stride(cell: u32) -> usize {
    10_u32.div_ceil(cell.max(1)).max(1) as usize
}

/// Dimension ticks at round steps (1, 2, 4, 8, …) at least 26 px apart.
fn dimension_stride(cell: u32) -> usize {
    let mut k = 1;
    while k * cell.max(1) < 26 {
        k *= 2;
    }
    k as usize
}

fn short(label: &str) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= 12 {
        label.to_string()
    } else {
        chars[..11].iter().collect::<String>() + "…"
    }
}

pub fn format_tick(v: f32) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || v.abs() < 0.01 {
        format!("{v:.1e}")
    } else {
        format!("{v:.2}")
    }
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

fn now_ms() -> f64 {
    performance_now()
}

/// For the browser benchmark (e2e/bench): when the page defines `window.__heatmapDraws` as an
/// array, every draw appends `{ ms, width, height, labels }`. Otherwise this costs one lookup.
fn record_draw(started: f64, l: &Layout) {
    let global = js_sys::global();
    let Ok(log) = js_sys::Reflect::get(&global, &JsValue::from_str("__heatmapDraws")) else {
        return;
    };
    let Some(log) = log.dyn_ref::<js_sys::Array>() else {
        return;
    };
    let entry = js_sys::Object::new();
    let set = |k: &str, v: JsValue| js_sys::Reflect::set(&entry, &JsValue::from_str(k), &v).is_ok();
    let ok = set("ms", JsValue::from_f64(now_ms() - started))
        && set("start", JsValue::from_f64(started))
        && set("width", JsValue::from_f64(l.width as f64))
        && set("height", JsValue::from_f64(l.height as f64))
        && set("labels", JsValue::from_bool(l.labels));
    if ok {
        log.push(&entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn strides_keep_labels_apart() {
        assert_eq!(label_stride(28), 1);
        assert_eq!(label_stride(12), 1);
        assert_eq!(label_stride(10), 1);
        assert_eq!(label_stride(9), 2);
        assert_eq!(label_stride(2), 5);
        assert_eq!(dimension_stride(28), 1);
        assert_eq!(dimension_stride(5), 8);
        assert_eq!(dimension_stride(2), 16);
    }

    #[test]
    fn the_svg_has_one_rect_a_cell_in_its_colour_and_the_text_as_text() {
        use crate::testing::{parse_svg, select_all};
        let matrix = Matrix {
            rows: 3,
            cols: 2,
            data: vec![0.1, 0.9, 0.5, 0.5, 1.0, f32::NEG_INFINITY],
        };
        let labels = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (rows, cols) = (labels(&["[CLS]", "dog", "&<"]), labels(&["x", "y"]));
        let layout = Layout::new(3, 2, 320, true);
        let spec = HeatmapSpec {
            matrix: &matrix,
            row_labels: &rows,
            col_labels: &cols,
            scale: Scale::Sequential { lo: 0.0, hi: 1.0 },
            layout,
            outline: None,
        };
        let caption = "Layer 1 · Head 1 · softmax weights";
        let doc = parse_svg(&svg(&spec, caption).unwrap());
        let root = doc.document_element().unwrap();
        assert_eq!(root.tag_name(), "svg");
        assert_eq!(
            root.get_attribute("height"),
            Some((layout.height + svg::CAPTION_BAND).to_string())
        );

        let texts: Vec<String> = select_all(&doc, "text")
            .iter()
            // plotters writes each text between line breaks.
            .map(|t| t.text_content().unwrap_or_default().trim().to_string())
            .collect();
        for want in [caption, "[CLS]", "dog", "&<", "x", "y", "1.00", "0.50", "0"] {
            assert!(texts.iter().any(|t| t == want), "{want:?} in {texts:?}");
        }

        // One rect per cell, where the canvas puts it (below the caption band), in its colour.
        let (w, h) = (layout.cell_w as i32, layout.cell_h as i32);
        let cells: Vec<(i32, i32, String)> = select_all(&doc, "rect")
            .iter()
            .filter(|r| {
                r.get_attribute("width") == Some((w - 1).to_string())
                    && r.get_attribute("height") == Some((h - 1).to_string())
            })
            .map(|r| {
                let at = |a: &str| r.get_attribute(a).unwrap().parse::<i32>().unwrap();
                (at("x"), at("y"), r.get_attribute("fill").unwrap())
            })
            .collect();
        assert_eq!(cells.len(), 6, "{cells:?}");
        let hex = |[r, g, b]: [u8; 3]| format!("#{r:02X}{g:02X}{b:02X}");
        for r in 0..3 {
            for c in 0..2 {
                let x = (layout.grid_x as i32) + c as i32 * w;
                let y = (layout.grid_y + svg::CAPTION_BAND) as i32 + r as i32 * h;
                let v = matrix.get(r, c);
                let fill = if v.is_finite() {
                    hex(spec.scale.colour(v))
                } else {
                    hex(MASK_FILL)
                };
                assert!(
                    cells.contains(&(x, y, fill)),
                    "cell ({r}, {c}) in {cells:?}"
                );
            }
        }
        // The masked cell is hatched with lines, not pixels.
        assert_eq!(select_all(&doc, "polyline").len(), 3);
    }

    #[test]
    fn ticks_and_labels_stay_short() {
        assert_eq!(format_tick(0.0), "0");
        assert_eq!(format_tick(0.25), "0.25");
        assert_eq!(format_tick(-1234.0), "-1.2e3");
        assert_eq!(short("[CLS]"), "[CLS]");
        assert_eq!(short("abcdefghijklmnop").chars().count(), 12);
    }
}
