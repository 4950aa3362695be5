//! The "Claims" panel: one card per claim, with its question in plain words and the
//! tutorial's, Run (and while it runs a progress bar and Cancel), the result: its charts,
//! each with its numbers in its `data-series`, the key figures beside them, and a verdict;
//! and last, folded, how it is measured.

use super::chart::{self, SIZE};
use super::state::ClaimState;
use crate::components::export;
use crate::components::heatmap_figure::{HeatmapData, HeatmapFigure, HeatmapOptions};
use crate::components::painted::paint_on_change;
use crate::heatmap::Scale;
use crate::live::Live;
use crate::reading::{self, PlotCursor};
use leptos::prelude::*;
use protocol::claims::{Plot, VerdictForm};
use protocol::{Claim, ClaimResult};
use std::sync::Arc;

#[component]
fn ClaimChart(result: Memo<Option<Arc<Plot>>>) -> impl IntoView {
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    // The arrows read the plot point by point, up and down from series to series; the point
    // read is ringed on the canvas.
    let cursor = RwSignal::new(None::<PlotCursor>);
    let failed = paint_on_change(
        canvas,
        Signal::derive(move || (result.get(), cursor.get())),
        |canvas, (r, cursor)| match r {
            Some(r) => chart::draw(canvas, r, *cursor),
            None => Ok(()),
        },
    );
    let status = RwSignal::new(None::<String>);
    let caption =
        move || result.with(|r| r.as_ref().map(|r| r.caption.clone()).unwrap_or_default());
    let save_png = move |_| {
        if let Some(canvas) = canvas.get_untracked() {
            let c = caption();
            let saved = export::save_png(&canvas, &c).map(|()| format!("{}.png", export::slug(&c)));
            status.set(Some(export::saved_text(saved)));
        }
    };
    let save_svg = move |_| {
        let saved = result.with_untracked(|r| match r {
            Some(r) => chart::svg(r).and_then(|doc| export::save_svg(&doc, &r.caption)),
            None => Ok(String::new()),
        });
        status.set(Some(export::saved_text(saved)));
    };
    let series = move || {
        result.with(|r| {
            r.as_ref()
                .map(|r| serde_json::to_string(&r.series).unwrap_or_else(|_| "[]".into()))
        })
    };
    let legend = move || {
        result.with(|r| {
            r.as_ref().map(|r| {
                r.series
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        // The chart's colour i (chart::colour), as a class: no inline styles
                        // under the page's CSP.
                        view! { <span class=format!("swatch c{}", i % chart::COLOURS.len())>{s.name.clone()}</span> }
                    })
                    .collect_view()
            })
        })
    };
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        // Keys pressed on the figure's own buttons are theirs.
        if ev.target() != ev.current_target() {
            return;
        }
        let lens: Vec<usize> = result.with_untracked(|r| {
            r.as_ref()
                .map(|r| r.series.iter().map(|s| s.x.len().min(s.y.len())).collect())
                .unwrap_or_default()
        });
        let Some(to) = PlotCursor::moved(cursor.get_untracked(), &ev.key(), &lens) else {
            return;
        };
        ev.prevent_default();
        ev.stop_propagation();
        cursor.set(Some(to));
    };
    let reading = move || {
        let c = cursor.get()?;
        result.with(|r| r.as_ref().and_then(|r| point_text(r, c)))
    };
    view! {
        <figure class="claim-chart" tabindex="0" on:keydown=on_key data-series=series>
            <figcaption>{caption}</figcaption>
            <canvas node_ref=canvas width=SIZE.0 height=SIZE.1 aria-label=caption></canvas>
            <p class="claim-legend">{legend}</p>
            <p class="claim-readout" aria-live="polite" data-series-index=move || cursor.get().map(|c| c.series)
                data-point=move || cursor.get().map(|c| c.point)>{reading}</p>
            <div class="figure-tools">
                <button type="button" class="small" on:click=save_png>"Save PNG"</button>
                <button type="button" class="small" on:click=save_svg>"Save SVG"</button>
                {move || status.get().map(|s| view! { <span class="export-status" role="status">{s}</span> })}
            </div>
            {move || failed.get().map(|e| view! { <p class="error">{e}</p> })}
        </figure>
    }
}

/// Point `c` of `plot` as the keyboard reads it: "Tiled, T: 512, bytes: 1,048,576 (point 4 of 7)".
fn point_text(plot: &Plot, c: PlotCursor) -> Option<String> {
    let s = plot.series.get(c.series)?;
    let (x, y) = (s.x.get(c.point)?, s.y.get(c.point)?);
    Some(format!(
        "{}, {}: {}, {}: {} (point {} of {})",
        s.name,
        plot.x_label,
        reading::number_text(*x),
        plot.y_label,
        reading::number_text(*y),
        c.point + 1,
        s.x.len().min(s.y.len())
    ))
}

/// A result's table (the Heads claim's roles) as the explorer draws its heatmaps: shares on
/// a fixed 0…1 scale, so colours mean the same at every refresh.
#[component]
fn ClaimHeatmapFigure(result: Memo<Option<Arc<ClaimResult>>>) -> impl IntoView {
    let data = Memo::new(move |_| {
        result.with(|r| {
            r.as_ref()
                .and_then(|r| r.heatmap.as_ref())
                .map(|h| HeatmapData {
                    caption: h.caption.clone(),
                    matrix: h.values.clone(),
                    row_labels: h.row_labels.clone(),
                    col_labels: h.col_labels.clone(),
                })
        })
    });
    let options = HeatmapOptions {
        scale: Some(Scale::Sequential { lo: 0.0, hi: 1.0 }),
        min_cell: Some(12),
        ..HeatmapOptions::default()
    };
    // Shown once, then redrawn in place as the refreshed results arrive.
    let shown = Signal::derive(move || data.get().unwrap_or_default());
    view! {
        <Show when=move || data.with(Option::is_some)>
            <HeatmapFigure data=shown figure=protocol::figure::FigureName::ClaimHeatmap max_grid=220 options=options/>
        </Show>
    }
}

/// One claim's card: the Claims panel's, and an embedded page's (`crate::embed`).
#[component]
pub fn ClaimCard(live: Live, claim: Claim) -> impl IntoView {
    let state = Memo::new(move |_| live.claims.with(|c| c.get(claim)));
    let result = Memo::new(move |_| match state.get() {
        ClaimState::Done(r) => Some(r),
        _ => None,
    });
    let running = move || state.with(ClaimState::running);
    let status = move || match state.get() {
        ClaimState::Idle => "idle",
        ClaimState::Queued => "queued",
        ClaimState::Running { .. } => "running",
        ClaimState::Done(_) => "done",
        ClaimState::Failed(_) => "failed",
        ClaimState::Cancelled => "cancelled",
    };
    let cancel = move |_| live.cancel_claim(claim);
    let progress = move || {
        match state.get() {
        // One claim runs at a time, so each is measured alone.
        ClaimState::Queued => Some(
            view! {
                <span class="claim-count" role="status">"Waits for the run before it…"</span>
                <button type="button" on:click=cancel>"Cancel"</button>
            }
            .into_any(),
        ),
        state => state.fraction().map(|f| {
            let (done, total) = match state {
                ClaimState::Running { done, total } => (done, total),
                _ => (0, 0),
            };
            view! {
                <progress max="1" prop:value=f aria-label=format!("{}: progress", claim.title())></progress>
                <span class="claim-count">{(total > 0).then(|| format!("{done} of {total}"))}</span>
                <button type="button" on:click=cancel>"Cancel"</button>
            }
            .into_any()
        }),
    }
    };
    let outcome = move || {
        match state.get() {
        ClaimState::Failed(e) => Some(view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any()),
        ClaimState::Cancelled => Some(view! { <p class="notice">"Cancelled. Nothing changed: the experiments never touch the model."</p> }.into_any()),
        _ => None,
    }
    };
    let numbers = move || {
        result.with(|r| {
            r.as_ref().map(|r| {
                r.numbers
                    .iter()
                    .map(|(k, v)| view! { <dt>{k.clone()}</dt><dd>{v.clone()}</dd> })
                    .collect_view()
            })
        })
    };
    let verdict = move || result.with(|r| r.as_ref().map(|r| r.verdict.text.clone()));
    let form = move || result.with(|r| r.as_ref()?.verdict.form.map(VerdictForm::name));
    // A claim that follows training says which step it last read.
    let measured = move || {
        let step = result.with(|r| r.as_ref().and_then(|r| r.measured_at))?;
        claim.measured_again_while_training().then(|| {
            view! {
                <p class="measured" data-measured-step=step>{format!(
                    "Last measured at step {step}; measured again as the model trains."
                )}</p>
            }
        })
    };
    let plot_count = Memo::new(move |_| result.with(|r| r.as_ref().map_or(0, |r| r.plots.len())));
    let plot_chart = move |i: usize| {
        let plot = Memo::new(move |_| {
            result.with(|r| {
                r.as_ref()
                    .and_then(|r| r.plots.get(i).cloned().map(Arc::new))
            })
        });
        view! { <ClaimChart result=plot/> }
    };
    view! {
        <article class="claim" data-claim=format!("{claim:?}") data-state=status>
            <h3>{claim.title()}</h3>
            <p class="lead">{claim.lead()}</p>
            <p class="quote">{claim.quote()}</p>
            <div class="claim-controls">
                <button type="button" class="run" prop:disabled=running on:click=move |_| live.run_claim(claim)>"Run"</button>
                {progress}
            </div>
            {outcome}
            <Show when=move || result.with(Option::is_some)>
                <div class="claim-result">
                    <div class="claim-plots">
                        <For each=move || 0..plot_count.get() key=|i| *i children=plot_chart/>
                        <ClaimHeatmapFigure result=result/>
                    </div>
                    <div class="claim-side">
                        <dl class="claim-numbers">{numbers}</dl>
                        <p class="verdict" data-verdict=form>{verdict}</p>
                        {measured}
                    </div>
                </div>
            </Show>
            <details class="method">
                <summary>"How it is measured"</summary>
                <p>{claim.method()}</p>
            </details>
        </article>
    }
}

#[component]
pub fn ClaimsPanel(live: Live) -> impl IntoView {
    view! {
        <section class="claims" id="claims" tabindex="-1" aria-labelledby="claims-title">
            <h2 id="claims-title">"Claims"</h2>
            <p class="hint">"What the tutorial says about each attention variant, measured here, in this browser tab. Each Run is an experiment in a worker of its own, on a copy of the model, so training goes on meanwhile; Cancel stops it."</p>
            <div class="claim-list">
                {Claim::ALL.map(|claim| view! { <ClaimCard live=live claim=claim/> }).collect_view()}
            </div>
        </section>
    }
}
