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
            let (caption_w, _) = band.estimate_text_size(caption, &title)?;
            band.draw(&Text::new(caption.to_string(), (8, middle), title))?;
            let mut x = 8 + (caption_w as f64 / SVG_FONT_SCALE) as i32 + 16;
            for &(name, colour) in keys {
                let font = ("sans-serif", 12.0 * SVG_FONT_SCALE)
                    .into_font()
                    .color(&colour)
                    .pos(left);
                let (w, _) = band.estimate_text_size(name, &font)?;
                band.draw(&Rectangle::new(
                    [(x, middle - 1), (x + 14, middle + 1)],
                    colour.filled(),
                ))?;
                band.draw(&Text::new(name.to_string(), (x + 18, middle), font))?;
                x += 18 + (w as f64 / SVG_FONT_SCALE) as i32 + 14;
            }
            draw(&body)?;
            root.present()
        };
        paint().map_err(|e| LabError::browser(format!("SVG export: {e}")))?;
    }
    Ok(out)
}
