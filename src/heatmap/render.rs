use super::colour::{Scale, MASK_FILL, MASK_HATCH};
use super::layout::{Layout, BAR_WIDTH};
use engine::Matrix;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use wasm_bindgen::{Clamped, JsCast};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData};

/// What to draw. `matrix` row = query token, column = key token; −∞ entries are masked cells.
pub struct HeatmapSpec<'a> {
    pub matrix: &'a Matrix,
    pub row_labels: &'a [String],
    pub col_labels: &'a [String],
    pub scale: Scale,
    pub layout: Layout,
}

/// Draw `spec` on `canvas`, resizing it to the layout. Errors are drawing failures, reported
/// as text for the caller to show; they never panic.
pub fn draw(canvas: &HtmlCanvasElement, spec: &HeatmapSpec) -> Result<(), String> {
    let l = spec.layout;
    canvas.set_width(l.width);
    canvas.set_height(l.height);
    let pixels = paint_pixels(spec).map_err(|e| format!("heatmap: {e}"))?;
    let ctx = context_2d(canvas)?;
    let image = ImageData::new_with_u8_clamped_array_and_sh(Clamped(&pixels), l.width, l.height)
        .map_err(|_| "heatmap: could not create image data".to_string())?;
    ctx.put_image_data(&image, 0.0, 0.0).map_err(|_| "heatmap: putImageData failed".to_string())?;
    if l.labels {
        draw_text(canvas, spec).map_err(|e| format!("heatmap labels: {e}"))?;
    }
    Ok(())
}

fn context_2d(canvas: &HtmlCanvasElement) -> Result<CanvasRenderingContext2d, String> {
    canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        .ok_or_else(|| "heatmap: canvas has no 2d context".to_string())
}

/// Cells, hatching and colour bar as RGBA bytes (w·h·4).
fn paint_pixels(spec: &HeatmapSpec) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let l = spec.layout;
    let mut rgb = vec![255u8; (l.width * l.height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (l.width, l.height)).into_drawing_area();
        let s = l.cell as i32;
        for r in 0..spec.matrix.rows {
            for c in 0..spec.matrix.cols {
                let (x, y) = (l.grid_x as i32 + c as i32 * s, l.grid_y as i32 + r as i32 * s);
                let v = spec.matrix.get(r, c);
                let fill = if v.is_finite() { spec.scale.colour(v) } else { MASK_FILL };
                root.draw(&Rectangle::new([(x, y), (x + s - 1, y + s - 1)], rgb_colour(fill).filled()))?;
                if !v.is_finite() && s >= 6 {
                    // −∞: hatched, so a masked cell never reads as a small value.
                    let hatch = rgb_colour(MASK_HATCH);
                    root.draw(&PathElement::new(vec![(x, y + s - 1), (x + s - 1, y)], hatch))?;
                    root.draw(&PathElement::new(vec![(x, y + s / 2), (x + s / 2, y)], hatch))?;
                    root.draw(&PathElement::new(vec![(x + s / 2, y + s - 1), (x + s - 1, y + s / 2)], hatch))?;
                }
            }
        }
        if l.labels {
            paint_colour_bar(&root, spec)?;
        }
        root.present()?;
    }
    let mut rgba = Vec::with_capacity(rgb.len() / 3 * 4);
    for px in rgb.chunks_exact(3) {
        rgba.extend_from_slice(&[px[0], px[1], px[2], 255]);
    }
    Ok(rgba)
}

fn paint_colour_bar<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    spec: &HeatmapSpec,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let l = spec.layout;
    let (x, top, h) = (l.bar_x as i32, l.grid_y as i32, l.grid_height().max(40) as i32);
    let (lo, hi) = spec.scale.range();
    for i in 0..h {
        let v = hi - (hi - lo) * i as f32 / (h - 1).max(1) as f32;
        let colour = rgb_colour(spec.scale.colour(v));
        root.draw(&Rectangle::new([(x, top + i), (x + BAR_WIDTH as i32 - 1, top + i)], colour.filled()))?;
    }
    root.draw(&Rectangle::new([(x, top), (x + BAR_WIDTH as i32 - 1, top + h - 1)], BLACK.stroke_width(1)))?;
    Ok(())
}

fn rgb_colour([r, g, b]: [u8; 3]) -> RGBColor {
    RGBColor(r, g, b)
}

/// Token labels and colour-bar ticks, drawn by plotters-canvas (the browser's text engine).
fn draw_text(canvas: &HtmlCanvasElement, spec: &HeatmapSpec) -> Result<(), Box<dyn std::error::Error>> {
    let l = spec.layout;
    let backend = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("no canvas backend")?;
    let root = backend.into_drawing_area();
    let size = (l.cell as f64 * 0.8).clamp(9.0, 13.0);
    let font = ("sans-serif", size).into_font().color(&BLACK);
    let s = l.cell as i32;
    let every = label_stride(l.cell);
    for (r, label) in spec.row_labels.iter().enumerate().step_by(every) {
        let y = l.grid_y as i32 + r as i32 * s + s / 2;
        let style = font.clone().pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(short(label), (l.grid_x as i32 - 4, y), style))?;
    }
    let rotated = font.clone().transform(FontTransform::Rotate270).pos(Pos::new(HPos::Left, VPos::Center));
    for (c, label) in spec.col_labels.iter().enumerate().step_by(every) {
        let x = l.grid_x as i32 + c as i32 * s + s / 2;
        root.draw(&Text::new(short(label), (x, l.grid_y as i32 - 4), rotated.clone()))?;
    }
    let (lo, hi) = spec.scale.range();
    let h = l.grid_height().max(40) as i32;
    let tick = ("sans-serif", 11.0).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    let bx = (l.bar_x + BAR_WIDTH + 4) as i32;
    for (frac, v) in [(0.0, hi), (0.5, (lo + hi) / 2.0), (1.0, lo)] {
        let y = l.grid_y as i32 + ((h - 1) as f32 * frac) as i32;
        root.draw(&Text::new(format_tick(v), (bx, y), tick.clone()))?;
    }
    root.present()?;
    Ok(())
}

/// With tiny cells, label every k-th token so labels do not overlap.
fn label_stride(cell: u32) -> usize {
    (11 / cell.max(1)).max(1) as usize
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
