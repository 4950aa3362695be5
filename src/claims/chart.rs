//! A claim's plot as a line chart with plotters: one line with dots per series, linear or
//! log-log axes (the legend is the page's, beside it). On the canvas, and as SVG for "Save SVG".

use crate::chart_style::house_style;
use crate::reading::PlotCursor;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use protocol::claims::{Axes, MarkAxis, Plot};
use protocol::{LabError, LabResult};

/// Canvas size, CSS px.
pub const SIZE: (u32, u32) = (560, 320);

/// One colour per series, in order: eight, so a tiny model's heads (2 layers × 4) each have
/// their own. The legend's swatches are `.swatch.c0`…`.c7` in style/claims.css.
pub const COLOURS: [RGBColor; 8] = [
    RGBColor(0x2b, 0x59, 0xc3),
    RGBColor(0xd0, 0x5a, 0x0c),
    RGBColor(0x1d, 0x6f, 0x42),
    RGBColor(0x7b, 0x3f, 0xb0),
    RGBColor(0xa6, 0x7c, 0x00),
    RGBColor(0x0e, 0x7c, 0x86),
    RGBColor(0xc2, 0x18, 0x5b),
    RGBColor(0x55, 0x55, 0x55),
];

pub fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

/// The points of every series that the axes can show: a log x axis leaves out x ≤ 0; a log y
/// axis puts y ≤ 0 (exact zeros) on its floor, `floor`.
fn points(r: &Plot, floor: f64) -> Vec<Vec<(f64, f64)>> {
    let (log_x, log_y) = (r.axes.log_x(), r.axes.log_y());
    r.series
        .iter()
        .map(|s| {
            s.x.iter()
                .zip(&s.y)
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_x || **x > 0.0))
                .map(|(&x, &y)| (x, if log_y && y <= 0.0 { floor } else { y }))
                .collect()
        })
        .collect()
}

/// The y axis's floor: a tenth of the smallest positive y (1 if there is none).
fn floor_of(r: &Plot) -> f64 {
    let smallest = r
        .series
        .iter()
        .flat_map(|s| s.y.iter().copied())
        .filter(|&y| y > 0.0 && y.is_finite())
        .fold(f64::INFINITY, f64::min);
    if smallest.is_finite() {
        smallest / 10.0
    } else {
        1.0
    }
}

/// [lo, hi] of one coordinate over every point, with a margin; None without points.
fn range(
    points: &[Vec<(f64, f64)>],
    pick: fn(&(f64, f64)) -> f64,
    log: bool,
) -> Option<(f64, f64)> {
    let (lo, hi) = points
        .iter()
        .flatten()
        .map(pick)
        .fold(None, |acc: Option<(f64, f64)>, v| {
            Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        })?;
    Some(match (log, lo == hi) {
        (true, _) => (lo / 1.5, hi * 1.5),
        // One value: a span around it, not below 0 for a value that cannot be (a step, a
        // share measured once).
        (false, true) if lo >= 0.0 => (0.0, lo + lo.max(1.0)),
        (false, true) => (lo - 1.0, hi + 1.0),
        (false, false) => (lo.min(0.0), hi + 0.08 * (hi - lo)),
    })
}

/// Mesh, then the series as lines with dots, and a ring around the point under the keyboard's
/// `cursor`. The series' names are in the page's legend beside the chart: plotters' own legend
/// measures text with an inline-styled element, which the page's CSP forbids.
fn finish<'a, DB: DrawingBackend + 'a, X, Y>(
    mut chart: ChartContext<'a, DB, Cartesian2d<X, Y>>,
    r: &Plot,
    points: &[Vec<(f64, f64)>],
    font_scale: f64,
    cursor: Option<PlotCursor>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(r.x_label.as_str())
        .y_desc(r.y_label.as_str())
        .x_label_formatter(&|v| short_number(*v))
        .y_label_formatter(&|v| short_number(*v));
    house_style(&mut mesh, font_scale).draw()?;
    for (i, pts) in points.iter().enumerate() {
        let c = colour(i);
        chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
    }
    if let Some(&at) = cursor.and_then(|c| points.get(c.series)?.get(c.point)) {
        chart.draw_series([Circle::new(at, CURSOR_RING, BLACK.stroke_width(2))])?;
    }
    // Marks: a dashed grey line across the plot; a vertical one labelled at its top, a
    // horizontal one at its left end, below the line.
    let (x0, x1) = (chart.x_range().start, chart.x_range().end);
    let (y0, y1) = (chart.y_range().start, chart.y_range().end);
    let grey = RGBColor(0x6b, 0x70, 0x80);
    let label_font = ("sans-serif", 11.0 * font_scale).into_font().color(&grey);
    // A vertical mark in the right third of the plot is labelled on its left, so the label
    // stays inside the canvas.
    let left_of = label_font.clone().pos(Pos::new(HPos::Right, VPos::Top));
    let right_third = x0 + (x1 - x0) * 2.0 / 3.0;
    let mut vertical = 0;
    for mark in &r.marks {
        let (line, anchor, offset, font) = match mark.axis {
            MarkAxis::X => {
                // Each label a line lower than the one before, so two marks close together
                // stay readable.
                vertical += 1;
                let down = 3 + 14 * (vertical - 1);
                let (dx, font) = if mark.at > right_third {
                    (-4, &left_of)
                } else {
                    (4, &label_font)
                };
                (
                    [(mark.at, y0), (mark.at, y1)],
                    (mark.at, y1),
                    (dx, down),
                    font,
                )
            }
            MarkAxis::Y => (
                [(x0, mark.at), (x1, mark.at)],
                (x0, mark.at),
                (4, 3),
                &label_font,
            ),
        };
        chart.draw_series(DashedLineSeries::new(line, 5, 4, grey.stroke_width(1)))?;
        chart.plotting_area().draw(
            &(EmptyElement::at(anchor) + Text::new(mark.label.clone(), offset, font.clone())),
        )?;
    }
    Ok(())
}

/// The radius, in pixels, of the ring around the point the keyboard reads.
const CURSOR_RING: i32 = 7;

/// Axes and lines on any backend; `font_scale` as in `svg::SVG_FONT_SCALE`.
fn plot<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &Plot,
    font_scale: f64,
    cursor: Option<PlotCursor>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let floor = floor_of(r);
    let pts = points(r, floor);
    let (log_x, log_y) = (r.axes.log_x(), r.axes.log_y());
    let (Some(xs), Some(ys)) = (range(&pts, |p| p.0, log_x), range(&pts, |p| p.1, log_y)) else {
        return Ok(());
    };
    // Marks lie inside the ranges.
    let within = |axis: MarkAxis, range: (f64, f64)| {
        r.marks
            .iter()
            .filter(|m| m.axis == axis)
            .fold(range, |(lo, hi), m| (lo.min(m.at), hi.max(m.at)))
    };
    let (xs, ys) = (within(MarkAxis::X, xs), within(MarkAxis::Y, ys));
    // On a log axis the floor is the bottom: exact zeros sit on it.
    let ys = if log_y { (floor, ys.1) } else { ys };
    let mut builder = ChartBuilder::on(root);
    builder
        .margin(10)
        .margin_right(16)
        .x_label_area_size(34)
        .y_label_area_size(62);
    let (x, y) = (xs.0..xs.1, ys.0..ys.1);
    // Each axis kind is a separate instance of plotters' generic drawing code in the page's
    // wasm, per backend.
    match r.axes {
        Axes::LogLog => finish(
            builder.build_cartesian_2d(x.log_scale(), y.log_scale())?,
            r,
            &pts,
            font_scale,
            cursor,
        ),
        Axes::LinearLog => finish(
            builder.build_cartesian_2d(x, y.log_scale())?,
            r,
            &pts,
            font_scale,
            cursor,
        ),
        Axes::LogLinear => finish(
            builder.build_cartesian_2d(x.log_scale(), y)?,
            r,
            &pts,
            font_scale,
            cursor,
        ),
        Axes::Linear => finish(
            builder.build_cartesian_2d(x, y)?,
            r,
            &pts,
            font_scale,
            cursor,
        ),
    }
}

/// 4096 → "4096", 2.0e8 → "2e8", 0.25 → "0.25": tick labels that fit.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e5).contains(&a) {
        format!("{v:.0e}")
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The chart on its canvas, with the keyboard's `cursor` ringed.
pub fn draw(
    canvas: &web_sys::HtmlCanvasElement,
    r: &Plot,
    cursor: Option<PlotCursor>,
) -> LabResult<()> {
    let backend = CanvasBackend::with_canvas_object(canvas.clone())
        .ok_or_else(|| LabError::browser("claim chart: no canvas"))?;
    let root = backend.into_drawing_area();
    plot(&root, r, 1.0, cursor)
        .and_then(|()| root.present())
        .map_err(|e| LabError::browser(format!("claim chart: {e}")))
}

/// The chart as an SVG document of the canvas's size, as vectors.
pub fn svg(r: &Plot) -> LabResult<String> {
    crate::svg::document(SIZE, &r.caption, &[], |area| {
        plot(area, r, crate::svg::SVG_FONT_SCALE, None)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::experiments::Series;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn one_value_spans_from_zero_when_it_is_not_negative() {
        let at = |x: f64| range(&[vec![(x, 0.5)]], |p| p.0, false);
        assert_eq!(at(0.0), Some((0.0, 1.0)), "a first measurement at step 0");
        assert_eq!(at(2000.0), Some((0.0, 4000.0)));
        assert_eq!(at(-3.0), Some((-4.0, -2.0)));
    }

    fn result(axes: Axes, y: Vec<f64>) -> Plot {
        Plot {
            caption: "Memory of something".into(),
            x_label: "T".into(),
            y_label: "bytes".into(),
            axes,
            series: vec![Series {
                name: "Full".into(),
                x: vec![64.0, 128.0, 256.0],
                y,
            }],
            marks: Vec::new(),
        }
    }

    #[test]
    fn the_point_under_the_keyboard_is_ringed_and_only_it() {
        let r = result(Axes::Linear, vec![1.0, 2.0, 3.0]);
        let drawn = |cursor| {
            crate::svg::document(SIZE, &r.caption, &[], |area| plot(area, &r, 1.0, cursor)).unwrap()
        };
        let ring = format!("r=\"{CURSOR_RING}\"");
        assert!(!drawn(None).contains(&ring));
        let ringed = drawn(Some(PlotCursor {
            series: 0,
            point: 1,
        }));
        assert_eq!(ringed.matches(&ring).count(), 1, "{ringed}");
        // A cursor past the series (the plot was measured again, shorter) rings nothing.
        assert!(!drawn(Some(PlotCursor {
            series: 0,
            point: 9
        }))
        .contains(&ring));
    }

    #[test]
    fn exact_zeros_sit_on_a_log_axis_floor_and_the_svg_has_the_dots() {
        let r = result(Axes::LogLog, vec![0.0, 10.0, 40.0]);
        assert_eq!(floor_of(&r), 1.0);
        assert_eq!(
            points(&r, 1.0),
            [vec![(64.0, 1.0), (128.0, 10.0), (256.0, 40.0)]]
        );
        let doc = svg(&r).unwrap();
        assert!(
            doc.contains("<polyline") && doc.contains("Memory of something"),
            "{}",
            &doc[..300]
        );
        // Linear x keeps x = 0 (position 0); y's zeros still go to the floor.
        let mut linear = result(Axes::LinearLog, vec![0.0, 10.0, 40.0]);
        linear.series[0].x[0] = 0.0;
        assert_eq!(points(&linear, 1.0)[0][0], (0.0, 1.0));
        assert_eq!(
            range(&points(&linear, 1.0), |p| p.0, false),
            Some((0.0, 256.0 + 0.08 * 256.0))
        );
        assert!(svg(&linear).is_ok());
        // Both linear (accuracy): zeros stay zeros, and a mark is drawn with its label.
        let mut accuracy = result(Axes::Linear, vec![0.0, 0.5, 0.25]);
        accuracy
            .marks
            .push(protocol::claims::Mark::x(100.0, "trained up to T = 100"));
        assert_eq!(points(&accuracy, 1.0)[0][0], (64.0, 0.0));
        let doc = svg(&accuracy).unwrap();
        assert!(doc.contains("trained up to T = 100"), "the mark's label");
        assert!(!svg(&result(Axes::Linear, vec![0.0, 0.5, 0.25]))
            .unwrap()
            .contains("trained up to"));
    }

    #[test]
    fn tick_labels_stay_short() {
        assert_eq!(short_number(4096.0), "4096");
        assert_eq!(short_number(0.25), "0.25");
        assert_eq!(short_number(2.0e8), "2e8");
        assert_eq!(short_number(0.0), "0");
    }
}
