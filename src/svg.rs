//! Figures as SVG documents, for papers: plotters' SVG backend draws the same elements as the
//! screen's backends (rects, polylines, text), as vectors, under a caption band like the PNG
//! export's. Heatmaps and curve charts each hand `document` their one drawing function.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use protocol::{LabError, LabResult};

/// Height of the caption band above the figure, px (as in the PNG export).
pub const CAPTION_BAND: u32 = 30;

/// plotters' SVG backend writes a font size s as s / 1.24 (the convention of its own font
/// metrics); the canvas backend writes s. Text drawn for SVG is scaled by this to match.
pub const SVG_FONT_SCALE: f64 = 1.24;

/// What a drawing on the SVG backend may fail with.
pub type SvgError = DrawingAreaErrorKind<std::io::Error>;

/// An SVG document `width` × (`CAPTION_BAND` + `height`) px: `caption` in bold with `keys` (a
/// series' name in its colour) after it, then what `draw` paints on a `width` × `height` area.
pub fn document(
    (width, height): (u32, u32),
    caption: &str,
    keys: &[(&str, RGBColor)],
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), SvgError>,
) -> LabResult<String> {
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (width, height + CAPTION_BAND)).into_drawing_area();
        let paint = || -> Result<(), SvgError> {
            root.fill(&WHITE)?;
            let (band, body) = root.split_vertically(CAPTION_BAND);
            let middle = CAPTION_BAND as i32 / 2;
            let left = Pos::new(HPos::Left, VPos::Center);
            let title = ("sans-serif", 14.0 * SVG_FONT_SCALE)
                .into_font()
                .style(FontStyle::Bold)
                .color(&RGBColor(0x1d, 0x23, 0x30))
                .pos(left);
            band.draw(&Text::new(caption.to_string(), (8, middle), title))?;
            let mut x = 8 + text_width("bold 14px sans-serif", caption) + 16;
            for &(name, colour) in keys {
                let font = ("sans-serif", 12.0 * SVG_FONT_SCALE)
                    .into_font()
                    .color(&colour)
                    .pos(left);
                let w = text_width("12px sans-serif", name);
                band.draw(&Rectangle::new(
                    [(x, middle - 1), (x + 14, middle + 1)],
                    colour.filled(),
                ))?;
                band.draw(&Text::new(name.to_string(), (x + 18, middle), font))?;
                x += 18 + w + 14;
            }
            draw(&body)?;
            root.present()
        };
        paint().map_err(|e| LabError::browser(format!("SVG export: {e}")))?;
    }
    Ok(out)
}

/// Width of `text` in `font` (CSS shorthand), px, as the browser sets it; 7 px a character if
/// there is no canvas to ask. (plotters' own estimate writes a `style` attribute, which the
/// page's Content-Security-Policy refuses.)
fn text_width(font: &str, text: &str) -> i32 {
    use wasm_bindgen::JsCast;
    let measured = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.create_element("canvas").ok())
        .and_then(|c| c.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        .and_then(|c| c.get_context("2d").ok().flatten())
        .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok())
        .and_then(|ctx| {
            ctx.set_font(font);
            ctx.measure_text(text).ok()
        })
        .map(|m| m.width());
    measured.unwrap_or(7.0 * text.chars().count() as f64).ceil() as i32
}
