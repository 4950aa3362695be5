//! The two curve charts drawn with plotters on a canvas: one redraw per change of the record,
//! no per-point DOM. The record itself is `protocol::curves`.

use crate::chart_style::house_style;
use crate::svg;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use protocol::{CurvePoint, LabError, LabResult, Series};
use web_sys::HtmlCanvasElement;

/// Total in ink, MLM in blue, NSP in orange (colour-blind safe pair), next token in green; each
/// at least 4.5:1 on white, as the readout writes its values in them (WCAG AA).
pub fn colour(series: Series) -> RGBColor {
    match series {
        Series::Loss => RGBColor(0x1d, 0x23, 0x30),
        Series::MlmLoss | Series::MlmAccuracy => RGBColor(0x1f, 0x6f, 0xc5),
        Series::NspLoss | Series::NspAccuracy => RGBColor(0xb3, 0x5c, 0x00),
        Series::NextTokenLoss | Series::NextTokenAccuracy => RGBColor(0x16, 0x79, 0x4a),
    }
}

pub fn css_colour(series: Series) -> String {
    let RGBColor(r, g, b) = colour(series);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The two charts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    Loss,
    Accuracy,
    /// A decoder's: next-token loss and accuracy.
    NextTokenLoss,
    NextTokenAccuracy,
}

impl Chart {
    pub fn series(self) -> &'static [Series] {
        match self {
            Chart::Loss => &[Series::Loss, Series::MlmLoss, Series::NspLoss],
            Chart::Accuracy => &[Series::MlmAccuracy, Series::NspAccuracy],
            Chart::NextTokenLoss => &[Series::NextTokenLoss],
            Chart::NextTokenAccuracy => &[Series::NextTokenAccuracy],
        }
    }

    pub fn caption(self) -> &'static str {
        match self {
            Chart::Loss | Chart::NextTokenLoss => "Loss",
            Chart::Accuracy | Chart::NextTokenAccuracy => "Accuracy",
        }
    }

    pub fn y_desc(self) -> &'static str {
        match self {
            Chart::Loss | Chart::NextTokenLoss => "loss",
            Chart::Accuracy | Chart::NextTokenAccuracy => "accuracy",
        }
    }

    /// Loss from 0 to a little above the largest finite value; accuracy 0…1.
    pub fn y_range(self, points: &[CurvePoint]) -> (f64, f64) {
        match self {
            Chart::Accuracy | Chart::NextTokenAccuracy => (0.0, 1.0),
            Chart::Loss | Chart::NextTokenLoss => {
                let top = points
                    .iter()
                    .flat_map(|p| self.series().iter().map(move |s| s.value(p) as f64))
                    .filter(|v| v.is_finite())
                    .fold(0.0f64, f64::max);
                (0.0, if top > 0.0 { top * 1.05 } else { 1.0 })
            }
        }
    }
}

/// Fewest steps the x axis spans, so a run's first steps do not stretch over the whole width.
pub const MIN_STEPS_SHOWN: f64 = 10.0;

/// The steps shown: first to last kept step, at least `MIN_STEPS_SHOWN` wide.
pub fn x_range(points: &[CurvePoint]) -> (f64, f64) {
    let first = points.first().map_or(0.0, |p| p.step as f64);
    let last = points.last().map_or(0.0, |p| p.step as f64);
    (first, last.max(first + MIN_STEPS_SHOWN))
}

/// Where the plotting area landed, to turn a pointer position into a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub left: i32,
    pub right: i32,
    pub top: i32,
    pub bottom: i32,
    pub x0: f64,
    pub x1: f64,
}

impl Frame {
    /// The step under pixel column `x`, if it is inside the plot.
    pub fn step_at(&self, x: f64) -> Option<f64> {
        let (l, r) = (self.left as f64, self.right as f64);
        (x >= l - 2.0 && x <= r + 2.0 && r > l)
            .then(|| self.x0 + (x.clamp(l, r) - l) / (r - l) * (self.x1 - self.x0))
    }

    /// The pixel column of `step`.
    pub fn x_of(&self, step: f64) -> f64 {
        let (l, r) = (self.left as f64, self.right as f64);
        l + (step - self.x0) / (self.x1 - self.x0).max(f64::MIN_POSITIVE) * (r - l)
    }
}

/// One model's record as a chart draws it: every kept point, and their smoothed values.
#[derive(Clone, Copy)]
pub struct Run<'a> {
    pub raw: &'a [CurvePoint],
    pub smooth: &'a [CurvePoint],
}

/// Draw one chart on `canvas` (already sized): model A's raw series thin and light, smoothed
/// bold; Compare's model B (if any) smoothed and dashed.
pub fn draw(canvas: &HtmlCanvasElement, chart: Chart, a: Run, b: Option<Run>) -> LabResult<Frame> {
    draw_inner(canvas, chart, a, b)
        .map_err(|e| LabError::browser(format!("{} chart: {e}", chart.caption())))
}

fn draw_inner(
    canvas: &HtmlCanvasElement,
    chart: Chart,
    a: Run,
    b: Option<Run>,
) -> Result<Frame, Box<dyn std::error::Error>> {
    let backend = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("no canvas backend")?;
    let root = backend.into_drawing_area();
    let frame = plot(&root, chart, a, b, 1.0)?;
    root.present()?;
    Ok(frame)
}

/// The chart as an SVG document `size` px (the canvas's), with its caption and the series'
/// names above it: the same axes, grid and lines as on the canvas, as vectors.
pub fn svg(chart: Chart, a: Run, b: Option<Run>, size: (u32, u32)) -> LabResult<String> {
    let mut keys: Vec<(String, RGBColor)> = chart
        .series()
        .iter()
        .map(|&s| (s.label().to_string(), colour(s)))
        .collect();
    if b.is_some() {
        keys.push(("A solid, B dashed".into(), RGBColor(0x5b, 0x63, 0x70)));
    }
    let keys: Vec<(&str, RGBColor)> = keys.iter().map(|(k, c)| (k.as_str(), *c)).collect();
    svg::document(size, chart.caption(), &keys, |area| {
        plot(area, chart, a, b, svg::SVG_FONT_SCALE).map(|_| ())
    })
}

/// Axes, grid, raw series thin and light, smoothed bold, B's smoothed dashed, on any backend;
/// `font_scale` as in `svg::SVG_FONT_SCALE`.
fn plot<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: Chart,
    a: Run,
    b: Option<Run>,
    font_scale: f64,
) -> Result<Frame, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let both: Vec<CurvePoint>;
    let all = match b {
        Some(b) => {
            both = a.raw.iter().chain(b.raw).copied().collect();
            &both[..]
        }
        None => a.raw,
    };
    let (x0, x1) = x_range(a.raw);
    let (y0, y1) = chart.y_range(all);
    let mut plot = ChartBuilder::on(root)
        .margin(8)
        .margin_right(14)
        .x_label_area_size(36)
        .y_label_area_size(46)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    // Steps are whole: no label at a fractional tick.
    let step_label = |v: &f64| {
        if (v - v.round()).abs() < 1e-6 {
            format!("{}", v.round() as i64)
        } else {
            String::new()
        }
    };
    let value_label = |v: &f64| format_tick(*v);
    let mut mesh = plot.configure_mesh();
    mesh.x_desc("step")
        .y_desc(chart.y_desc())
        .x_labels(5)
        .y_labels(5)
        .x_label_formatter(&step_label)
        .y_label_formatter(&value_label);
    house_style(&mut mesh, font_scale).draw()?;

    let (xs, ys) = plot.plotting_area().get_pixel_range();
    let columns = xs.len();
    let line = |points: &[CurvePoint], s: Series| {
        let xy: Vec<(f64, f64)> = points
            .iter()
            .map(|p| (p.step as f64, s.value(p) as f64))
            .filter(|(_, y)| y.is_finite())
            .collect();
        decimate(&xy, columns)
    };
    for &s in chart.series() {
        plot.draw_series(LineSeries::new(
            line(a.raw, s),
            colour(s).mix(0.3).stroke_width(1),
        ))?;
    }
    for &s in chart.series() {
        plot.draw_series(LineSeries::new(
            line(a.smooth, s),
            colour(s).stroke_width(2),
        ))?;
    }
    if let Some(b) = b {
        for &s in chart.series() {
            plot.draw_series(DashedLineSeries::new(
                line(b.smooth, s),
                6,
                4,
                colour(s).stroke_width(2),
            ))?;
        }
    }
    // Pixel ranges are those of the whole backend: the frame is in the root's own coordinates.
    let (dx, dy) = root.get_base_pixel();
    Ok(Frame {
        left: xs.start - dx,
        right: xs.end - 1 - dx,
        top: ys.start - dy,
        bottom: ys.end - 1 - dy,
        x0,
        x1,
    })
}

/// At most about two points per pixel column: each run of consecutive points that shares a
/// column gives its lowest and highest point, in order, so spikes survive and the line looks
/// the same as with every point (drawing 5,000 points per series took ~15 ms a redraw).
pub fn decimate(points: &[(f64, f64)], columns: usize) -> Vec<(f64, f64)> {
    if columns == 0 || points.len() <= 2 * columns {
        return points.to_vec();
    }
    let per = points.len().div_ceil(columns);
    let mut out = Vec::with_capacity(2 * columns + 1);
    for run in points.chunks(per) {
        let lo = run
            .iter()
            .enumerate()
            .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            .map_or(0, |(i, _)| i);
        let hi = run
            .iter()
            .enumerate()
            .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            .map_or(0, |(i, _)| i);
        out.push(run[lo.min(hi)]);
        if lo != hi {
            out.push(run[lo.max(hi)]);
        }
    }
    // Keep the last point exactly: the line ends at the latest step.
    if out.last() != points.last() {
        out.extend(points.last());
    }
    out
}

/// Axis and readout numbers: three significant-ish digits.
pub fn format_value(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    }
}

/// Axis ticks: as `format_value`, without trailing zeros ("6", "0.5", "0.25").
pub fn format_tick(v: f64) -> String {
    let s = format_value(v);
    if s.contains('.') && !s.contains('e') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn point(step: u64, loss: f32) -> CurvePoint {
        CurvePoint {
            step,
            loss,
            mlm_loss: loss * 0.75,
            nsp_loss: loss * 0.25,
            mlm_accuracy: 0.5,
            nsp_accuracy: (step % 2) as f32,
        }
    }

    #[test]
    fn ranges_and_frames() {
        assert_eq!(x_range(&[]), (0.0, 10.0));
        assert_eq!(x_range(&[point(7, 1.0)]), (7.0, 17.0));
        assert_eq!(x_range(&[point(7, 1.0), point(9, 1.0)]), (7.0, 17.0));
        assert_eq!(x_range(&[point(7, 1.0), point(90, 1.0)]), (7.0, 90.0));
        let (lo, hi) = Chart::Loss.y_range(&[point(1, 4.0), point(2, f32::INFINITY)]);
        assert_eq!(lo, 0.0);
        assert!((hi - 4.2).abs() < 1e-9);
        assert_eq!(Chart::Accuracy.y_range(&[]), (0.0, 1.0));
        let f = Frame {
            left: 50,
            right: 150,
            top: 0,
            bottom: 100,
            x0: 0.0,
            x1: 1000.0,
        };
        assert_eq!(f.step_at(100.0), Some(500.0));
        assert_eq!(f.step_at(10.0), None);
        assert_eq!(f.x_of(250.0), 75.0);
        assert_eq!(
            [6.0, 0.5, 0.25, 0.0, 12.5, 0.001].map(format_tick),
            ["6", "0.5", "0.25", "0", "12.5", "1.0e-3"]
        );
        assert_eq!(
            [2.3456, 0.6871, 123.4].map(format_value),
            ["2.35", "0.69", "123"]
        );
    }

    #[test]
    fn the_svg_is_the_chart_as_vectors_with_caption_and_series_names() {
        use crate::testing::{parse_svg, select_all};
        let points: Vec<CurvePoint> = (1..=40).map(|s| point(s, 5.0 / s as f32)).collect();
        let run = Run {
            raw: &points,
            smooth: &points,
        };
        let doc = parse_svg(&svg(Chart::Loss, run, None, (400, 200)).unwrap());
        let root = doc.document_element().unwrap();
        assert_eq!(
            (root.get_attribute("width"), root.get_attribute("height")),
            (
                Some("400".into()),
                Some((200 + svg::CAPTION_BAND).to_string())
            )
        );
        let texts: Vec<String> = select_all(&doc, "text")
            .iter()
            // plotters writes each text between line breaks.
            .map(|t| t.text_content().unwrap_or_default().trim().to_string())
            .collect();
        for want in ["Loss", "total", "MLM", "NSP", "step", "loss", "40"] {
            assert!(texts.iter().any(|t| t == want), "{want:?} in {texts:?}");
        }
        // Raw and smoothed line of each of the three series, each one polyline of every point.
        let lines: Vec<usize> = select_all(&doc, "polyline")
            .iter()
            .map(|p| {
                p.get_attribute("points")
                    .unwrap()
                    .split_whitespace()
                    .count()
            })
            .filter(|&n| n == 40)
            .collect();
        assert_eq!(lines.len(), 6, "{lines:?}");
    }

    #[test]
    fn decimation_keeps_extremes_and_ends() {
        let few: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, i as f64)).collect();
        assert_eq!(decimate(&few, 5), few, "few points are drawn as they are");
        let many: Vec<(f64, f64)> = (0..5000)
            .map(|i| (i as f64, if i == 1234 { 99.0 } else { (i % 7) as f64 }))
            .collect();
        let d = decimate(&many, 300);
        assert!(d.len() <= 2 * 300 + 1, "{} points", d.len());
        assert!(d.contains(&(1234.0, 99.0)), "the spike is kept");
        assert_eq!((d[0], *d.last().unwrap()), ((0.0, 0.0), (4999.0, 1.0)));
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "in step order");
        assert!(
            d.iter().filter(|p| p.1 == 0.0).count() > 250,
            "the lows are kept"
        );
    }
}
