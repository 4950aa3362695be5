//! The curves panel: two charts, a readout of the latest or hovered step, kept the width of the
//! side panel.

use super::chart::{self, css_colour, Chart, Frame, Run};
use crate::components::export;
use crate::paint::PaintSlot;
use crate::reading;
use leptos::prelude::*;
use protocol::{CurvePoint, Curves, Series};

/// Canvas size for a container `width` CSS pixels wide.
fn canvas_size(width: f64) -> (u32, u32) {
    let w = if width >= 120.0 { width.floor() } else { 400.0 };
    (w as u32, (w * 0.5).clamp(150.0, 220.0) as u32)
}

/// Loss (total, MLM, NSP) and accuracy (MLM, NSP) over training steps, of model A and, with
/// Compare, of model B (`curves_b`, empty otherwise).
#[component]
pub fn LossCurves(
    #[prop(into)] curves: Signal<Curves>,
    #[prop(into, optional)] curves_b: Signal<Curves>,
    /// A decoder's run: next-token loss and accuracy instead of MLM and NSP.
    #[prop(into, optional)]
    next_token: Signal<bool>,
) -> impl IntoView {
    let a = Record::of(curves);
    let b = Record::of(curves_b);
    let charts = move || match next_token.get() {
        false => [Chart::Loss, Chart::Accuracy],
        true => [Chart::NextTokenLoss, Chart::NextTokenAccuracy],
    };
    view! {
        <div class="loss-curves">
            {move || charts().map(|chart| view! { <CurveChart chart=chart a=a b=b/> }).collect_view()}
        </div>
    }
}

/// One model's curves and their smoothing, computed once for both charts.
#[derive(Clone, Copy)]
struct Record {
    curves: Signal<Curves>,
    smooth: Memo<Vec<CurvePoint>>,
}

impl Record {
    fn of(curves: Signal<Curves>) -> Record {
        Record {
            curves,
            smooth: Memo::new(move |_| curves.with(Curves::smoothed)),
        }
    }

    /// `f` on A's record and B's (when it has points), untracked; None once they are disposed.
    fn with_runs<R>(a: Record, b: Record, f: impl FnOnce(Run, Option<Run>) -> R) -> Option<R> {
        let runs = a.curves.try_with_untracked(|c| {
            a.smooth.try_with_untracked(|s| {
                b.curves.try_with_untracked(|bc| {
                    b.smooth.try_with_untracked(|bs| {
                        let run_b = (!bc.is_empty()).then_some(Run {
                            raw: bc.points(),
                            smooth: bs,
                        });
                        f(
                            Run {
                                raw: c.points(),
                                smooth: s,
                            },
                            run_b,
                        )
                    })
                })
            })
        });
        runs.flatten().flatten().flatten()
    }

    /// The point nearest `step`, raw and smoothed.
    fn at(&self, step: u64) -> Option<(CurvePoint, CurvePoint)> {
        let i = self.curves.with(|c| c.nearest(step as f64))?;
        let raw = self.curves.with(|c| c.points()[i]);
        Some((raw, self.smooth.with(|s| s.get(i).copied().unwrap_or(raw))))
    }
}

/// Keep `width` equal to `element`'s content width (the side panel can change size without
/// the window doing so, or be hidden and shown).
fn watch_width(element: &web_sys::HtmlElement, width: RwSignal<f64>) {
    let watched = element.clone();
    crate::resize::on_resize(element, move || {
        let w = watched.client_width() as f64;
        if width.try_get_untracked().is_some_and(|old| old != w) {
            width.try_set(w);
        }
    });
}

/// Each series of `chart` at one point: (series, smoothed value, raw value), as text.
fn readout_values(
    chart: Chart,
    smoothed: &CurvePoint,
    raw: &CurvePoint,
) -> Vec<(Series, String, String)> {
    let value = |s: Series, p: &CurvePoint| chart::format_value(s.value(p) as f64);
    chart
        .series()
        .iter()
        .map(|&s| (s, value(s, smoothed), value(s, raw)))
        .collect()
}

/// "latest, step N  total 4.27 raw 4.03 …": each series' smoothed value in bold, raw beside it.
fn readout_view(when: String, values: Vec<(Series, String, String)>) -> AnyView {
    let values = values
        .into_iter()
        .map(|(s, smoothed, raw)| {
            // CSSOM properties, not a style attribute: the page's CSP refuses inline styles.
            view! {
                <span class="curve-value" style:color=css_colour(s)>
                    {s.label()}" "<b>{smoothed}</b><small>" raw "{raw}</small>
                </span>
            }
        })
        .collect_view();
    view! { <span class="curve-step">{when}</span>{values} }.into_any()
}

/// What the last paint of a chart left: the plot's frame (for hovering), how many of A's
/// points it drew, and why it could not draw.
#[derive(Clone, Copy)]
struct Painted {
    frame: RwSignal<Option<Frame>>,
    points: RwSignal<usize>,
    problem: RwSignal<Option<String>>,
}

/// Paints `chart` on `canvas` whenever the records or the width change, in a task of its own
/// (see `paint`), with the records as they are then.
fn paint_on_change(
    canvas: NodeRef<leptos::html::Canvas>,
    chart: Chart,
    (a, b): (Record, Record),
    width: RwSignal<f64>,
    painted: Painted,
) {
    let slot = PaintSlot::new();
    Effect::new(move |_| {
        let Some(canvas) = canvas.get() else { return };
        width.track();
        a.curves.track();
        a.smooth.track();
        b.smooth.track();
        slot.paint(&canvas.clone(), move || {
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
            let result = Record::with_runs(a, b, |run_a, run_b| {
                chart::draw(&canvas, chart, run_a, run_b).map(|f| (f, run_a.raw.len()))
            });
            match result {
                Some(Ok((f, n))) => {
                    painted.frame.try_set(Some(f));
                    painted.points.try_set(n);
                    painted.problem.try_set(None);
                }
                Some(Err(e)) => {
                    painted.problem.try_set(Some(e.to_string()));
                }
                None => {}
            }
        });
    });
}

/// What the canvas shows, for screen readers.
fn summary(chart: Chart, curves: &Curves) -> String {
    match curves.last() {
        None => format!("{} chart: no training steps yet", chart.caption()),
        Some(p) => {
            let values: Vec<String> = chart
                .series()
                .iter()
                .map(|&s| format!("{} {}", s.label(), chart::format_value(s.value(p) as f64)))
                .collect();
            format!(
                "{} over {} steps; at step {}: {}",
                chart.caption(),
                p.step,
                p.step,
                values.join(", ")
            )
        }
    }
}

/// Point `i` of `curves` read aloud: "step 300: total 4.27 (raw 4.03), …".
fn point_text(chart: Chart, curves: &Curves, smooth: Memo<Vec<CurvePoint>>, i: usize) -> String {
    let Some(&raw) = curves.points().get(i) else {
        return String::new();
    };
    let sm = smooth.with_untracked(|s| s.get(i).copied().unwrap_or(raw));
    let values: Vec<String> = readout_values(chart, &sm, &raw)
        .into_iter()
        .map(|(s, smoothed, raw)| format!("{} {smoothed} (raw {raw})", s.label()))
        .collect();
    format!("step {}: {}", raw.step, values.join(", "))
}

#[component]
fn CurveChart(chart: Chart, a: Record, b: Record) -> impl IntoView {
    let curves = a.curves;
    let comparing = Signal::derive(move || b.curves.with(|c| !c.is_empty()));
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    let holder = NodeRef::<leptos::html::Div>::new();
    let width = RwSignal::new(0.0f64);
    Effect::new(move |_| {
        if let Some(div) = holder.get() {
            watch_width(&div, width);
        }
    });
    let painted = Painted {
        frame: RwSignal::new(None),
        points: RwSignal::new(0),
        problem: RwSignal::new(None),
    };
    let hover = RwSignal::new(None::<usize>);
    paint_on_change(canvas, chart, (a, b), width, painted);

    // The arrows move the hovered point, as the pointer does; the point is said aloud.
    let said = RwSignal::new(String::new());
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        let len = curves.with_untracked(Curves::len);
        let Some(i) = reading::along(&ev.key(), hover.get_untracked(), len) else {
            return;
        };
        // The arrows are the point's here, not the stepper's (the window's listener).
        ev.prevent_default();
        ev.stop_propagation();
        hover.set(Some(i));
        said.set(curves.with_untracked(|c| point_text(chart, c, a.smooth, i)));
    };
    let on_move = move |ev: leptos::ev::MouseEvent| {
        let at = painted
            .frame
            .get_untracked()
            .and_then(|f| f.step_at(ev.offset_x() as f64));
        hover.set(at.and_then(|step| curves.with_untracked(|c| c.nearest(step))));
    };
    // The vertical line at the hovered step, over the canvas.
    let marker = move || {
        let (i, f) = (hover.get()?, painted.frame.get()?);
        let step = curves.with(|c| c.points().get(i).map(|p| p.step))? as f64;
        Some(view! {
            <div class="curve-marker" style:left=format!("{:.0}px", f.x_of(step))
                style:top=format!("{}px", f.top) style:height=format!("{}px", f.bottom - f.top)></div>
        })
    };
    view! {
        <figure class="curve-chart" tabindex="0" on:keydown=on_key on:blur=move |_| hover.set(None)
            data-chart=chart.y_desc() data-points=move || painted.points.get().to_string()
            data-points-b=move || b.curves.with(Curves::len).to_string()
            data-first=move || curves.with(|c| c.points().first().map(|p| format!("{},{}", p.step, p.loss)))>
            <figcaption>{chart.caption()}</figcaption>
            <CurveLegend chart=chart comparing=comparing/>
            <div class="curve-canvas" node_ref=holder>
                <canvas node_ref=canvas role="img" aria-label=move || curves.with(|c| summary(chart, c))
                    on:mousemove=on_move on:mouseleave=move |_| hover.set(None)></canvas>
                {marker}
            </div>
            <CurveReadout chart=chart a=a b=b hover=hover comparing=comparing/>
            <p class="visually-hidden" aria-live="polite" data-point=move || hover.get()>{move || said.get()}</p>
            <ChartTools chart=chart canvas=canvas a=a b=b/>
            {move || painted.problem.get().map(|p| view! { <p class="error">{p}</p> })}
        </figure>
    }
}

/// Each series' swatch and name, and how A's and B's lines differ.
#[component]
fn CurveLegend(chart: Chart, comparing: Signal<bool>) -> impl IntoView {
    let legend = chart
        .series()
        .iter()
        .map(|&s| {
            // The line sample (::before) inherits this border colour; the li draws no border.
            view! { <li class="swatch" style:border-color=css_colour(s)>{s.label()}</li> }
        })
        .collect_view();
    view! {
        <ul class="curve-legend">{legend}
            <li class="legend-note">{move || if comparing.get() {
                "A: thin raw, bold smoothed · B: dashed smoothed"
            } else {
                "thin: raw · bold: smoothed"
            }}</li>
        </ul>
    }
}

/// The values at the hovered step (else the latest), and with Compare, model B's at the same
/// step.
#[component]
fn CurveReadout(
    chart: Chart,
    a: Record,
    b: Record,
    hover: RwSignal<Option<usize>>,
    comparing: Signal<bool>,
) -> impl IntoView {
    let Record { curves, smooth } = a;
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
        let model = if comparing.get() { "A · " } else { "" };
        readout_view(
            format!("{model}{when} {}{span}", raw.step),
            readout_values(chart, &sm, &raw),
        )
    };
    // Compare: model B's values at the same step.
    let readout_b = move || {
        let step = {
            let len = curves.with(Curves::len);
            let i = hover.get().filter(|&i| i < len).or(len.checked_sub(1))?;
            curves.with(|c| c.points()[i].step)
        };
        let (raw, sm) = b.at(step)?;
        Some(view! {
            <p class="curve-readout curve-readout-b" aria-live="off">
                {readout_view(format!("B · step {}", raw.step), readout_values(chart, &sm, &raw))}
            </p>
        })
    };
    view! {
        <p class="curve-readout" aria-live="off">{readout}</p>
        {readout_b}
    }
}

/// Save PNG (the canvas) and Save SVG (the same plot drawn again as SVG), and how it went.
#[component]
fn ChartTools(
    chart: Chart,
    canvas: NodeRef<leptos::html::Canvas>,
    a: Record,
    b: Record,
) -> impl IntoView {
    let status = RwSignal::new(None::<String>);
    let save_png = move |_| {
        let Some(canvas) = canvas.get_untracked() else {
            return;
        };
        let caption = chart.caption();
        status.set(Some(match export::save_png(&canvas, caption) {
            Ok(()) => format!("Saved {}.png", export::slug(caption)),
            Err(e) => format!("Could not save: {e}"),
        }));
    };
    let save_svg = move |_| {
        let Some(canvas) = canvas.get_untracked() else {
            return;
        };
        let size = (canvas.width(), canvas.height());
        let saved = Record::with_runs(a, b, |run_a, run_b| chart::svg(chart, run_a, run_b, size))
            .unwrap_or_else(|| Err(protocol::LabError::browser("the chart is gone")));
        let saved = saved.and_then(|svg| export::save_svg(&svg, chart.caption()));
        status.set(Some(match saved {
            Ok(name) => format!("Saved {name}"),
            Err(e) => format!("Could not save: {e}"),
        }));
    };
    view! {
        <div class="figure-tools">
            <button type="button" class="small" on:click=save_png title="Download this chart as a PNG image">"Save PNG"</button>
            <button type="button" class="small" on:click=save_svg title="Download this chart as an SVG (vector) image">"Save SVG"</button>
            <span class="export-status" role="status">{move || status.get()}</span>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{settled, until};
    use wasm_bindgen_test::wasm_bindgen_test as test;
    use web_sys::HtmlCanvasElement;

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
    async fn compares_model_b_is_drawn_dashed_and_read_out_beside_a() {
        use wasm_bindgen::JsCast;
        let doc = web_sys::window().unwrap().document().unwrap();
        let container: web_sys::HtmlElement = doc.create_element("div").unwrap().unchecked_into();
        container.set_attribute("style", "width:420px").unwrap();
        doc.body().unwrap().append_child(&container).unwrap();
        let fall = |scale: f32| -> Curves {
            let mut c = Curves::new();
            c.extend((1..=100).map(|s| point(s, scale * 6.0 / s as f32 + 0.5)));
            c
        };
        let (curves, curves_b) = (RwSignal::new(fall(1.0)), RwSignal::new(Curves::new()));
        let _handle = leptos::mount::mount_to(
            container.clone(),
            move || view! { <LossCurves curves=curves curves_b=curves_b/> },
        );
        settled().await;
        let loss = container
            .query_selector("figure.curve-chart[data-chart=loss]")
            .unwrap()
            .unwrap();
        let canvas: HtmlCanvasElement = loss
            .query_selector("canvas")
            .unwrap()
            .unwrap()
            .unchecked_into();
        let alone = ink(&canvas).0;
        assert!(loss.query_selector(".curve-readout-b").unwrap().is_none());
        // Below A everywhere: the axes stay as they were, B only adds its lines.
        curves_b.set(fall(0.7));
        settled().await;
        assert_eq!(loss.get_attribute("data-points-b").as_deref(), Some("100"));
        assert!(ink(&canvas).0 > alone, "B's dashed lines add ink");
        let text = |sel: &str| {
            loss.query_selector(sel)
                .unwrap()
                .unwrap()
                .text_content()
                .unwrap()
        };
        assert!(
            text(".curve-readout").starts_with("A · latest, step 100"),
            "{}",
            text(".curve-readout")
        );
        assert!(
            text(".curve-readout-b").starts_with("B · step 100"),
            "{}",
            text(".curve-readout-b")
        );
        assert!(text(".curve-legend").contains("B: dashed"));
        container.remove();
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
        settled().await;

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
        settled().await;
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
        settled().await;
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
        // The chart hears of its new width from a ResizeObserver, at the browser's next frame.
        let narrowed = || canvas("loss").width() < 300;
        until(narrowed, 5000).await;
        settled().await;
        let (width, room) = (
            canvas("loss").width(),
            canvas("loss").parent_element().unwrap().client_width(),
        );
        assert!(
            width as i32 == room && width < 300,
            "canvas {width} px in {room} px after narrowing"
        );

        // Both charts save as PNG and SVG, named after their caption.
        let save = |chart: &str, label: &str| -> web_sys::HtmlElement {
            crate::testing::select_all(
                &doc,
                &format!("figure.curve-chart[data-chart={chart}] button"),
            )
            .into_iter()
            .find(|b| b.text_content().as_deref() == Some(label))
            .unwrap_or_else(|| panic!("no {label} on the {chart} chart"))
            .unchecked_into()
        };
        let names: Vec<String> = crate::testing::catch_downloads(|| {
            save("loss", "Save SVG").click();
            save("accuracy", "Save SVG").click();
        })
        .into_iter()
        .map(|(name, _)| name)
        .collect();
        assert_eq!(names, ["loss.svg", "accuracy.svg"]);
        // (The PNG goes through a detached link, which no listener sees: e2e saves one.)
        save("loss", "Save PNG");

        curves.set(Curves::new());
        settled().await;
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
