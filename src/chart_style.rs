//! The look every line chart shares (the loss curves, the GELU curve): fonts, grid and axis
//! colours, set on a plotters mesh.

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::prelude::*;

/// Tick labels 11 px, axis names 12 px (× `font_scale`, as in `svg::SVG_FONT_SCALE`), a pale
/// grid and a grey axis.
pub fn house_style<'a, 'b, X, Y, DB>(
    mesh: &'b mut MeshStyle<'a, 'b, X, Y, DB>,
    font_scale: f64,
) -> &'b mut MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
    DB: DrawingBackend,
{
    mesh.max_light_lines(1)
        .label_style(
            ("sans-serif", 11.0 * font_scale)
                .into_font()
                .color(&RGBColor(0x44, 0x4a, 0x57)),
        )
        .axis_desc_style(
            ("sans-serif", 12.0 * font_scale)
                .into_font()
                .color(&RGBColor(0x1d, 0x23, 0x30)),
        )
        .bold_line_style(RGBColor(0xe4, 0xe6, 0xee))
        .light_line_style(RGBColor(0xf3, 0xf4, 0xf8))
        .axis_style(RGBColor(0x8a, 0x90, 0x9c))
}
