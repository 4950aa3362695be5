//! Loss and accuracy curves: a bounded record of `CurvePoint`s with a smoothed view, and two
//! charts drawn with plotters on a canvas (one redraw per change of the record, no per-point
//! DOM).
//!
//! Memory is bounded: at most `MAX_POINTS` points are kept. Each kept point is the mean of a
//! bucket of consecutive steps; when the record grows past `MAX_POINTS`, neighbouring buckets
//! are merged pairwise and new buckets hold twice as many steps (1, 2, 4, … steps per point).
//! The mean over all steps is preserved; a bucket's `step` is the last step in it, so the curve
//! always ends at the latest step.
//!
//! Smoothing is an exponential moving average with `SMOOTHING` = 0.95 per training step
//! (a bucket of k steps decays the average by 0.95ᵏ), debiased like TensorBoard's
//! (divided by 1 − 0.95ⁿ) so the first points are not pulled towards zero.

use crate::paint::PaintSlot;
use crate::protocol::CurvePoint;
use leptos::prelude::*;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use serde::{Deserialize, Serialize};
use web_sys::HtmlCanvasElement;

/// Most points kept (per series; all series share the steps).
pub const MAX_POINTS: usize = 5_000;

/// EMA factor per training step: s ← β·s + (1 − β)·x, about a 20-step window.
pub const SMOOTHING: f64 = 0.95;

/// The five series of a `CurvePoint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Series {
    Loss,
    MlmLoss,
    NspLoss,
    MlmAccuracy,
    NspAccuracy,
}

impl Series {
    pub const ALL: [Series; 5] = [
        Series::Loss,
        Series::MlmLoss,
        Series::NspLoss,
        Series::MlmAccuracy,
        Series::NspAccuracy,
    ];

    pub fn value(self, p: &CurvePoint) -> f32 {
        match self {
            Series::Loss => p.loss,
            Series::MlmLoss => p.mlm_loss,
            Series::NspLoss => p.nsp_loss,
            Series::MlmAccuracy => p.mlm_accuracy,
            Series::NspAccuracy => p.nsp_accuracy,
        }
    }

    fn value_mut(self, p: &mut CurvePoint) -> &mut f32 {
        match self {
            Series::Loss => &mut p.loss,
            Series::MlmLoss => &mut p.mlm_loss,
            Series::NspLoss => &mut p.nsp_loss,
            Series::MlmAccuracy => &mut p.mlm_accuracy,
            Series::NspAccuracy => &mut p.nsp_accuracy,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Series::Loss => "total",
            Series::MlmLoss | Series::MlmAccuracy => "MLM",
            Series::NspLoss | Series::NspAccuracy => "NSP",
        }
    }

    /// Total in ink, MLM in blue, NSP in orange (colour-blind safe pair).
    pub fn colour(self) -> RGBColor {
        match self {
            Series::Loss => RGBColor(0x1d, 0x23, 0x30),
            Series::MlmLoss | Series::MlmAccuracy => RGBColor(0x1f, 0x6f, 0xc5),
            Series::NspLoss | Series::NspAccuracy => RGBColor(0xe0, 0x7b, 0x00),
        }
    }

    fn css_colour(self) -> String {
        let RGBColor(r, g, b) = self.colour();
        format!("#{r:02x}{g:02x}{b:02x}")
    }
}

/// A bounded record of training points (see the module docs for how it stays bounded). Kept in
/// the browser beside the model; a record read back is checked before it is used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CurvesRecord")]
pub struct Curves {
    /// Bucket means, ascending `step` (= the last step of each bucket).
    points: Vec<CurvePoint>,
    /// Training steps merged into each point.
    counts: Vec<u32>,
    /// Steps per bucket for new points: 1, 2, 4, …
    stride: u32,
}

impl Default for Curves {
    fn default() -> Self {
        Curves {
            points: Vec::new(),
            counts: Vec::new(),
            stride: 1,
        }
    }
}

/// `Curves` as stored, before its invariants are checked.
#[derive(Deserialize)]
struct CurvesRecord {
    points: Vec<CurvePoint>,
    counts: Vec<u32>,
    stride: u32,
}

impl TryFrom<CurvesRecord> for Curves {
    type Error = String;

    fn try_from(r: CurvesRecord) -> Result<Curves, String> {
        let ascending = r.points.windows(2).all(|w| w[0].step < w[1].step);
        let counted = r.counts.iter().all(|&k| (1..=r.stride).contains(&k));
        let fits = r.points.len() == r.counts.len() && r.points.len() <= MAX_POINTS;
        // Training stops before a non-finite loss becomes a point.
        let finite = r.points.iter().all(|p| {
            [
                p.loss,
                p.mlm_loss,
                p.nsp_loss,
                p.mlm_accuracy,
                p.nsp_accuracy,
            ]
            .iter()
            .all(|v| v.is_finite())
        });
        if ascending && counted && fits && finite && r.stride.is_power_of_two() {
            Ok(Curves {
                points: r.points,
                counts: r.counts,
                stride: r.stride,
            })
        } else {
            Err("not a loss record".into())
        }
    }
}

impl Curves {
    pub fn new() -> Self {
        Self::default()
    }

    /// The record up to `step`: the curves of a model kept at that step.
    pub fn until(mut self, step: u64) -> Curves {
        let keep = self.points.partition_point(|p| p.step <= step);
        self.points.truncate(keep);
        self.counts.truncate(keep);
        self
    }

    /// Add one step's point. A step at or before the last one kept (after a rewind) first drops
    /// the points from that step on: the run continues from there.
    pub fn push(&mut self, p: CurvePoint) {
        if self.points.last().is_some_and(|last| p.step <= last.step) {
            let keep = self.points.partition_point(|q| q.step < p.step);
            self.points.truncate(keep);
            self.counts.truncate(keep);
        }
        match (self.points.last_mut(), self.counts.last_mut()) {
            (Some(last), Some(count)) if *count < self.stride => {
                *last = merge(last, *count, &p, 1);
                *count += 1;
            }
            _ => {
                self.points.push(p);
                self.counts.push(1);
            }
        }
        if self.points.len() > MAX_POINTS {
            self.halve();
        }
    }

    pub fn extend(&mut self, points: impl IntoIterator<Item = CurvePoint>) {
        for p in points {
            self.push(p);
        }
    }

    /// Merge neighbouring buckets pairwise; new buckets hold twice as many steps.
    fn halve(&mut self) {
        let mut points = Vec::with_capacity(self.points.len() / 2 + 1);
        let mut counts = Vec::with_capacity(points.capacity());
        for (ps, cs) in self.points.chunks(2).zip(self.counts.chunks(2)) {
            match (ps, cs) {
                ([a, b], [ca, cb]) => {
                    points.push(merge(a, *ca, b, *cb));
                    counts.push(ca + cb);
                }
                _ => {
                    points.push(ps[0]);
                    counts.push(cs[0]);
                }
            }
        }
        self.points = points;
        self.counts = counts;
        self.stride *= 2;
    }

    pub fn clear(&mut self) {
        *self = Curves::default();
    }

    pub fn points(&self) -> &[CurvePoint] {
        &self.points
    }

    /// Training steps behind each kept point (same order as `points`).
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    pub fn last(&self) -> Option<&CurvePoint> {
        self.points.last()
    }

    /// The first step at which the loss left its recent range for good: the earliest point
    /// such that it and every point after it lie above the highest of the `RECENT` points
    /// before it (with a 5% margin for noise). None when the last point is back in range. A point's loss is
    /// that of the weights before its step, so weights kept before `step − 1` are unharmed.
    pub fn left_range_at(&self) -> Option<u64> {
        const RECENT: usize = 20;
        let p = &self.points;
        let mut lowest_after = f32::INFINITY;
        let mut start = None;
        for j in (1..p.len()).rev() {
            lowest_after = lowest_after.min(p[j].loss);
            let high = p[j.saturating_sub(RECENT)..j]
                .iter()
                .map(|q| q.loss)
                .fold(f32::NEG_INFINITY, f32::max);
            // The earliest such j wins: inside the stretch, the window holds the climb itself.
            if lowest_after > high + 0.05 * high.abs() {
                start = Some(j);
            }
        }
        // A bucket's point stands for all its steps: the first of them.
        start.map(|j| p[j].step + 1 - u64::from(self.counts[j]))
    }

    /// The debiased EMA of every series, one point per kept point (same steps).
    pub fn smoothed(&self) -> Vec<CurvePoint> {
        let mut average = [0.0f64; 5];
        let mut weight = [0.0f64; 5];
        let mut out = Vec::with_capacity(self.points.len());
        for (p, &count) in self.points.iter().zip(&self.counts) {
            let decay = SMOOTHING.powi(count as i32);
            let mut s = CurvePoint {
                step: p.step,
                ..CurvePoint::default()
            };
            for (i, series) in Series::ALL.into_iter().enumerate() {
                let x = series.value(p) as f64;
                if x.is_finite() {
                    // s ← βᵏ·s + (1 − βᵏ)·x; weight = 1 − βⁿ over the finite values seen
                    average[i] = decay * average[i] + (1.0 - decay) * x;
                    weight[i] = decay * weight[i] + (1.0 - decay);
                }
                *series.value_mut(&mut s) = if weight[i] > 0.0 {
                    (average[i] / weight[i]) as f32
                } else {
                    f32::NAN
                };
            }
            out.push(s);
        }
        out
    }

    /// Index of the kept point whose step is nearest to `step` (ties go to the earlier one).
    pub fn nearest(&self, step: f64) -> Option<usize> {
        if self.points.is_empty() {
            return None;
        }
        let after = self.points.partition_point(|p| (p.step as f64) < step);
        let candidates = [
            after.checked_sub(1),
            (after < self.points.len()).then_some(after),
        ];
        candidates.into_iter().flatten().min_by(|&a, &b| {
            let da = (self.points[a].step as f64 - step).abs();
            let db = (self.points[b].step as f64 - step).abs();
            da.total_cmp(&db)
        })
    }
}

/// The weighted mean of two buckets; a non-finite value gives way to a finite one. The
/// merged bucket ends at the later step.
fn merge(a: &CurvePoint, wa: u32, b: &CurvePoint, wb: u32) -> CurvePoint {
    let mut out = CurvePoint {
        step: a.step.max(b.step),
        ..CurvePoint::default()
    };
    let (wa, wb) = (wa as f64, wb as f64);
    for series in Series::ALL {
        let (x, y) = (series.value(a) as f64, series.value(b) as f64);
        *series.value_mut(&mut out) = match (x.is_finite(), y.is_finite()) {
            (true, true) => ((x * wa + y * wb) / (wa + wb)) as f32,
            (true, false) => x as f32,
            (false, _) => y as f32,
        };
    }
    out
}

/// The two charts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    Loss,
    Accuracy,
}

impl Chart {
    pub fn series(self) -> &'static [Series] {
        match self {
            Chart::Loss => &[Series::Loss, Series::MlmLoss, Series::NspLoss],
            Chart::Accuracy => &[Series::MlmAccuracy, Series::NspAccuracy],
        }
    }

    pub fn caption(self) -> &'static str {
        match self {
            Chart::Loss => "Loss",
            Chart::Accuracy => "Accuracy",
        }
    }

    fn y_desc(self) -> &'static str {
        match self {
            Chart::Loss => "loss",
            Chart::Accuracy => "accuracy",
        }
    }

    /// Loss from 0 to a little above the largest finite value; accuracy 0…1.
    pub fn y_range(self, points: &[CurvePoint]) -> (f64, f64) {
        match self {
            Chart::Accuracy => (0.0, 1.0),
            Chart::Loss => {
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

/// Draw one chart on `canvas` (already sized): raw series thin and light, smoothed bold.
pub fn draw(
    canvas: &HtmlCanvasElement,
    chart: Chart,
    raw: &[CurvePoint],
    smooth: &[CurvePoint],
) -> Result<Frame, String> {
    draw_inner(canvas, chart, raw, smooth).map_err(|e| format!("{} chart: {e}", chart.caption()))
}

fn draw_inner(
    canvas: &HtmlCanvasElement,
    chart: Chart,
    raw: &[CurvePoint],
    smooth: &[CurvePoint],
) -> Result<Frame, Box<dyn std::error::Error>> {
    let backend = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("no canvas backend")?;
    let root = backend.into_drawing_area();
    root.fill(&WHITE)?;
    let (x0, x1) = x_range(raw);
    let (y0, y1) = chart.y_range(raw);
    let mut plot = ChartBuilder::on(&root)
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
    plot.configure_mesh()
        .x_desc("step")
        .y_desc(chart.y_desc())
        .x_labels(5)
        .y_labels(5)
        .max_light_lines(1)
        .x_label_formatter(&step_label)
        .y_label_formatter(&value_label)
        .label_style(
            ("sans-serif", 11)
                .into_font()
                .color(&RGBColor(0x44, 0x4a, 0x57)),
        )
        .axis_desc_style(
            ("sans-serif", 12)
                .into_font()
                .color(&RGBColor(0x1d, 0x23, 0x30)),
        )
        .bold_line_style(RGBColor(0xe4, 0xe6, 0xee))
        .light_line_style(RGBColor(0xf3, 0xf4, 0xf8))
        .axis_style(RGBColor(0x8a, 0x90, 0x9c))
        .draw()?;
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
            line(raw, s),
            s.colour().mix(0.3).stroke_width(1),
        ))?;
    }
    for &s in chart.series() {
        plot.draw_series(LineSeries::new(line(smooth, s), s.colour().stroke_width(2)))?;
    }
    root.present()?;
    Ok(Frame {
        left: xs.start,
        right: xs.end - 1,
        top: ys.start,
        bottom: ys.end - 1,
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

/// Canvas size for a container `width` CSS pixels wide.
fn canvas_size(width: f64) -> (u32, u32) {
    let w = if width >= 120.0 { width.floor() } else { 400.0 };
    (w as u32, (w * 0.5).clamp(150.0, 220.0) as u32)
}

/// Loss (total, MLM, NSP) and accuracy (MLM, NSP) over training steps.
#[component]
pub fn LossCurves(#[prop(into)] curves: Signal<Curves>) -> impl IntoView {
    let smooth = Memo::new(move |_| curves.with(Curves::smoothed));
    view! {
        <div class="loss-curves">
            <CurveChart chart=Chart::Loss curves=curves smooth=smooth/>
            <CurveChart chart=Chart::Accuracy curves=curves smooth=smooth/>
        </div>
    }
}

/// Keep `width` equal to `element`'s content width (the side panel can change size without
/// the window doing so, or be hidden and shown).
fn watch_width(element: &web_sys::HtmlElement, width: RwSignal<f64>) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;
    let watched = element.clone();
    // Handed to JS for good: it outlives the observer, so it is never called after a drop.
    let on_resize = Closure::<dyn FnMut()>::new(move || {
        let w = watched.client_width() as f64;
        if width.try_get_untracked().is_some_and(|old| old != w) {
            width.try_set(w);
        }
    })
    .into_js_value();
    let Ok(observer) = web_sys::ResizeObserver::new(on_resize.unchecked_ref()) else {
        return;
    };
    observer.observe(element);
    let observer = StoredValue::new_local(observer);
    on_cleanup(move || {
        observer.try_with_value(|o| o.disconnect());
    });
}

/// "latest, step N  total 4.27 raw 4.03 …": each series' smoothed value in bold, raw beside it.
fn readout_view(when: String, values: Vec<(Series, String, String)>) -> AnyView {
    let values = values
        .into_iter()
        .map(|(s, smoothed, raw)| {
            // CSSOM properties, not a style attribute: the page's CSP refuses inline styles.
            view! {
                <span class="curve-value" style:color=s.css_colour()>
                    {s.label()}" "<b>{smoothed}</b><small>" raw "{raw}</small>
                </span>
            }
        })
        .collect_view();
    view! { <span class="curve-step">{when}</span>{values} }.into_any()
}

#[component]
fn CurveChart(
    chart: Chart,
    curves: Signal<Curves>,
    smooth: Memo<Vec<CurvePoint>>,
) -> impl IntoView {
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    let holder = NodeRef::<leptos::html::Div>::new();
    let width = RwSignal::new(0.0f64);
    Effect::new(move |_| {
        if let Some(div) = holder.get() {
            watch_width(&div, width);
        }
    });
    let (drawn, set_drawn) = signal(0usize);
    let (problem, set_problem) = signal(None::<String>);
    let (frame, set_frame) = signal(None::<Frame>);
    let (hover, set_hover) = signal(None::<usize>);

    // Drawn in a task of its own (see `paint`), with the record as it is then.
    let slot = PaintSlot::new();
    Effect::new(move |_| {
        let Some(canvas) = canvas.get() else { return };
        width.track();
        curves.track();
        smooth.track();
        slot.paint(move || {
            let Some(known) = width.try_get_untracked() else {
                return;
            };
            let measured = if known > 0.0 {
                known
            } else {
                canvas
                    .parent_element()
                    .map_or(0.0, |p| p.client_width() as f64)
            };
            let (w, h) = canvas_size(measured);
            if canvas.width() != w || canvas.height() != h {
                canvas.set_width(w);
                canvas.set_height(h);
            }
            let result = curves.try_with_untracked(|c| {
                smooth.try_with_untracked(|s| {
                    draw(&canvas, chart, c.points(), s).map(|f| (f, c.len()))
                })
            });
            match result.flatten() {
                Some(Ok((f, n))) => {
                    set_frame.try_set(Some(f));
                    set_drawn.try_set(n);
                    set_problem.try_set(None);
                }
                Some(Err(e)) => {
                    set_problem.try_set(Some(e));
                }
                None => {}
            }
        });
    });

    let on_move = move |ev: leptos::ev::MouseEvent| {
        let at = frame
            .get_untracked()
            .and_then(|f| f.step_at(ev.offset_x() as f64));
        set_hover.set(at.and_then(|step| curves.with_untracked(|c| c.nearest(step))));
    };
    // The vertical line at the hovered step, over the canvas.
    let marker = move || {
        let (i, f) = (hover.get()?, frame.get()?);
        let step = curves.with(|c| c.points().get(i).map(|p| p.step))? as f64;
        Some(view! {
            <div class="curve-marker" style:left=format!("{:.0}px", f.x_of(step))
                style:top=format!("{}px", f.top) style:height=format!("{}px", f.bottom - f.top)></div>
        })
    };
    let readout = move || {
        // The hovered point while it exists (the record may have been cleared or thinned since).
        let len = curves.with(Curves::len);
        let hovered = hover.get().filter(|&i| i < len);
        // Before the first step: the shape of a filled readout, with dashes, so the first step
        // moves nothing on the page.
        let Some(i) = hovered.or(len.checked_sub(1)) else {
            let dashes = chart.series().iter().map(|&s| (s, "—".into(), "—".into()));
            return readout_view("no steps yet".into(), dashes.collect());
        };
        let (raw, count) = curves.with(|c| (c.points()[i], c.counts()[i]));
        let sm = smooth.with(|s| s.get(i).copied().unwrap_or(raw));
        let when = if hovered.is_some() {
            "step"
        } else {
            "latest, step"
        };
        let span = if count > 1 {
            format!(" (mean of {count} steps)")
        } else {
            String::new()
        };
        let values = chart.series().iter().map(|&s| {
            let value = |p: &CurvePoint| format_value(s.value(p) as f64);
            (s, value(&sm), value(&raw))
        });
        readout_view(format!("{when} {}{span}", raw.step), values.collect())
    };
    // What the canvas shows, for screen readers.
    let summary = move || {
        curves.with(|c| match c.last() {
            None => format!("{} chart: no training steps yet", chart.caption()),
            Some(p) => {
                let values: Vec<String> = chart
                    .series()
                    .iter()
                    .map(|&s| format!("{} {}", s.label(), format_value(s.value(p) as f64)))
                    .collect();
                format!(
                    "{} over {} steps; at step {}: {}",
                    chart.caption(),
                    p.step,
                    p.step,
                    values.join(", ")
                )
            }
        })
    };
    let legend = chart
        .series()
        .iter()
        .map(|&s| {
            // The line sample (::before) inherits this border colour; the li draws no border.
            view! { <li class="swatch" style:border-color=s.css_colour()>{s.label()}</li> }
        })
        .collect_view();

    view! {
        <figure class="curve-chart" data-chart=chart.y_desc() data-points=move || drawn.get().to_string()>
            <figcaption>{chart.caption()}</figcaption>
            <ul class="curve-legend">{legend}<li class="legend-note">"thin: raw · bold: smoothed"</li></ul>
            <div class="curve-canvas" node_ref=holder>
                <canvas node_ref=canvas role="img" aria-label=summary on:mousemove=on_move on:mouseleave=move |_| set_hover.set(None)></canvas>
                {marker}
            </div>
            <p class="curve-readout" aria-live="off">{readout}</p>
            {move || problem.get().map(|p| view! { <p class="error">{p}</p> })}
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tick;
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
    fn memory_stays_bounded_and_the_mean_is_kept() {
        let mut c = Curves::new();
        let n = 23_456u64;
        c.extend((1..=n).map(|s| point(s, s as f32)));
        assert!(c.len() <= MAX_POINTS, "{} points kept", c.len());
        assert!(c.len() > MAX_POINTS / 4, "thinned too much: {}", c.len());
        assert_eq!(
            c.last().unwrap().step,
            n,
            "the curve ends at the latest step"
        );
        assert_eq!(
            c.counts().iter().map(|&k| k as u64).sum::<u64>(),
            n,
            "every step counted once"
        );
        let mean: f64 = c
            .points()
            .iter()
            .zip(c.counts())
            .map(|(p, &k)| p.loss as f64 * k as f64)
            .sum::<f64>()
            / n as f64;
        assert!(
            (mean - (n + 1) as f64 / 2.0).abs() < 1e-2 * n as f64 / 1000.0,
            "mean {mean}"
        );
        assert!(
            c.points().windows(2).all(|w| w[0].step < w[1].step),
            "steps ascend"
        );
    }

    #[test]
    fn few_points_are_kept_as_they_are() {
        let mut c = Curves::new();
        c.extend((0..100).map(|s| point(s, 1.0 + s as f32)));
        assert_eq!(c.len(), 100);
        assert_eq!(c.points()[42], point(42, 43.0));
    }

    #[test]
    fn a_rewind_drops_the_points_after_it() {
        let mut c = Curves::new();
        c.extend((1..=50).map(|s| point(s, 2.0)));
        c.push(point(20, 9.0));
        assert_eq!(c.len(), 20);
        assert_eq!(*c.last().unwrap(), point(20, 9.0));
        assert_eq!(c.points()[18].step, 19);
        c.clear();
        assert!(c.is_empty());
        c.push(point(0, 1.0));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn smoothing_is_a_debiased_ema() {
        let mut c = Curves::new();
        c.extend([point(1, 4.0), point(2, 2.0)]);
        let s = c.smoothed();
        assert_eq!(s[0].loss, 4.0, "debiased: the first value is itself");
        // (0.95·0.05·4 + 0.05·2) / (1 − 0.95²)
        let want = (0.95 * 0.05 * 4.0 + 0.05 * 2.0) / (1.0 - 0.95f64 * 0.95);
        assert!(
            (s[1].loss as f64 - want).abs() < 1e-5,
            "{} vs {want}",
            s[1].loss
        );

        // A noisy constant smooths towards the constant; raw alternates 0/1.
        let mut c = Curves::new();
        c.extend((1..=400).map(|s| point(s, 1.0)));
        let last = *c.smoothed().last().unwrap();
        assert!(
            (last.nsp_accuracy - 0.5).abs() < 0.05,
            "{}",
            last.nsp_accuracy
        );
        assert!((last.loss - 1.0).abs() < 1e-5);
    }

    #[test]
    fn smoothing_skips_non_finite_values() {
        let mut c = Curves::new();
        let mut p = point(1, 3.0);
        p.mlm_accuracy = f32::NAN;
        c.extend([p, point(2, 3.0)]);
        let s = c.smoothed();
        assert!(s[0].mlm_accuracy.is_nan());
        assert_eq!(s[1].mlm_accuracy, 0.5);
    }

    #[test]
    fn nearest_finds_the_closest_step() {
        let mut c = Curves::new();
        assert_eq!(c.nearest(3.0), None);
        c.extend([10, 20, 40].map(|s| point(s, 1.0)));
        assert_eq!(c.nearest(-5.0), Some(0));
        assert_eq!(c.nearest(14.0), Some(0));
        assert_eq!(c.nearest(16.0), Some(1));
        assert_eq!(c.nearest(31.0), Some(2));
        assert_eq!(c.nearest(1e9), Some(2));
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

    fn ink(canvas: &HtmlCanvasElement) -> (usize, usize) {
        use wasm_bindgen::JsCast;
        let ctx: web_sys::CanvasRenderingContext2d =
            canvas.get_context("2d").unwrap().unwrap().unchecked_into();
        let data = ctx
            .get_image_data(0.0, 0.0, canvas.width() as f64, canvas.height() as f64)
            .unwrap()
            .data();
        let coloured = data
            .chunks_exact(4)
            .filter(|p| p[3] > 0 && (p[2] as i32 - p[0] as i32) > 60)
            .count();
        let inked = data
            .chunks_exact(4)
            .filter(|p| p[3] > 0 && (p[0] < 250 || p[1] < 250 || p[2] < 250))
            .count();
        (inked, coloured)
    }

    #[test]
    async fn loss_curves_draw_and_report_their_points() {
        use wasm_bindgen::JsCast;
        let doc = web_sys::window().unwrap().document().unwrap();
        let container: web_sys::HtmlElement = doc.create_element("div").unwrap().unchecked_into();
        container.set_attribute("style", "width:420px").unwrap();
        doc.body().unwrap().append_child(&container).unwrap();
        let curves = RwSignal::new(Curves::new());
        let _handle = leptos::mount::mount_to(
            container.clone(),
            move || view! { <LossCurves curves=curves/> },
        );
        tick(30).await;

        let figure = |chart: &str| -> web_sys::Element {
            container
                .query_selector(&format!("figure.curve-chart[data-chart={chart}]"))
                .unwrap()
                .expect("a figure")
        };
        let canvas = |chart: &str| -> HtmlCanvasElement {
            figure(chart)
                .query_selector("canvas")
                .unwrap()
                .unwrap()
                .unchecked_into()
        };
        let caption = |chart: &str| {
            figure(chart)
                .query_selector("figcaption")
                .unwrap()
                .unwrap()
                .text_content()
                .unwrap()
        };
        assert_eq!(
            (caption("loss"), caption("accuracy")),
            ("Loss".to_string(), "Accuracy".to_string())
        );
        let (_, blue_before) = ink(&canvas("loss"));
        assert_eq!(blue_before, 0, "no MLM line before any step");

        curves.update(|c| {
            c.extend((1..=300).map(|s| {
                let fall = (-(s as f32) / 80.0).exp();
                CurvePoint {
                    mlm_accuracy: 0.9 - 0.8 * fall,
                    ..point(s, 6.0 * fall + 0.5)
                }
            }))
        });
        tick(30).await;
        for chart in ["loss", "accuracy"] {
            assert_eq!(
                figure(chart).get_attribute("data-points").as_deref(),
                Some("300")
            );
            let (inked, blue) = ink(&canvas(chart));
            let total = (canvas(chart).width() * canvas(chart).height()) as usize;
            assert!(
                inked * 50 > total,
                "{chart} chart mostly blank: {inked} of {total}"
            );
            assert!(
                blue > 100,
                "{chart} chart: MLM line missing ({blue} blue pixels)"
            );
        }
        let (width, room) = (
            canvas("loss").width(),
            canvas("loss").parent_element().unwrap().client_width(),
        );
        assert!(
            width as i32 == room && width > 300,
            "canvas {width} px in {room} px"
        );
        let readout = figure("loss")
            .query_selector(".curve-readout")
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap();
        assert!(readout.contains("latest, step 300"), "{readout}");
        let label = canvas("accuracy").get_attribute("aria-label").unwrap();
        assert!(
            label.starts_with("Accuracy over 300 steps; at step 300: MLM 0."),
            "{label}"
        );

        // Hovering the middle of the plot reads out a step near the middle of the run.
        let target = canvas("loss");
        let rect = target.get_bounding_client_rect();
        let init = web_sys::MouseEventInit::new();
        init.set_client_x((rect.left() + rect.width() / 2.0) as i32);
        init.set_client_y((rect.top() + rect.height() / 2.0) as i32);
        let hover =
            web_sys::MouseEvent::new_with_mouse_event_init_dict("mousemove", &init).unwrap();
        target.dispatch_event(&hover).unwrap();
        tick(10).await;
        let readout = figure("loss")
            .query_selector(".curve-readout")
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap();
        let step: u64 = readout
            .strip_prefix("step ")
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{readout}"));
        assert!(
            (120..=200).contains(&step),
            "hovered step {step}: {readout}"
        );
        assert!(
            figure("loss")
                .query_selector(".curve-marker")
                .unwrap()
                .is_some(),
            "no hover marker"
        );

        // A narrower panel gets a narrower chart.
        container.set_attribute("style", "width:300px").unwrap();
        tick(60).await;
        let (width, room) = (
            canvas("loss").width(),
            canvas("loss").parent_element().unwrap().client_width(),
        );
        assert!(
            width as i32 == room && width < 300,
            "canvas {width} px in {room} px after narrowing"
        );

        curves.update(Curves::clear);
        tick(30).await;
        assert_eq!(
            figure("loss").get_attribute("data-points").as_deref(),
            Some("0")
        );
        assert_eq!(
            ink(&canvas("loss")).1,
            0,
            "cleared chart still shows the MLM line"
        );
        container.remove();
    }
}
