//! The Batch section of the training panel: the latest step's examples as rows of token chips,
//! and the running counts (MLM + NSP) or how to read a next-token row. Thin: `data` decides
//! every word, class and number.

use super::data::{self, Chip, Row, ROWS_SHOWN};
use engine::batch_view::{BatchView, MaskingCounts};
use leptos::prelude::*;
use std::sync::Arc;

/// The batch of the latest step (`batch`, None before the first) and the counts over the run.
/// `mask_prob` is the target of the share chosen; `next_token` says the model trains on the
/// next token, whose batches mask nothing, so there are no counts. Redrawn when a new batch
/// arrives (a few times a second while training); collapsed, it draws no rows, but
/// `data-batch` stays current.
#[component]
pub fn BatchPanel(
    #[prop(into)] batch: Signal<Option<Arc<BatchView>>>,
    #[prop(into)] counts: Signal<MaskingCounts>,
    #[prop(into)] mask_prob: Signal<f32>,
    #[prop(into)] next_token: Signal<bool>,
) -> impl IntoView {
    let open = RwSignal::new(true);
    let show_all = RwSignal::new(false);
    let json = move || batch.with(|b| data::batch_json(b.as_deref()));
    let summary = move || {
        batch.with(|b| match b {
            None => "no step yet".to_string(),
            Some(b) => {
                let fixed = if b.fixed { " · fixed batch" } else { "" };
                format!(
                    "step {}{fixed} · {} examples · {}",
                    b.step,
                    b.examples.len(),
                    data::score_text(b)
                )
            }
        })
    };
    let rows = move || {
        if !open.get() {
            return None;
        }
        let limit = if show_all.get() {
            usize::MAX
        } else {
            ROWS_SHOWN
        };
        let (rows, more) = batch.with(|b| b.as_deref().map(|b| data::rows(b, limit)))?;
        let expand = (more > 0 || show_all.get()).then(|| {
            let text = if show_all.get() {
                format!("Show the first {ROWS_SHOWN}")
            } else {
                format!("+{more} more: show all")
            };
            view! { <button class="batch-more" on:click=move |_| show_all.update(|s| *s = !*s)>{text}</button> }
        });
        Some(view! {
            <ol class="batch-rows">{rows.into_iter().map(row_view).collect_view()}</ol>
            {expand}
        })
    };
    view! {
        <section class="batch-view" aria-label="Batch" data-batch=json
            data-batch-step=move || batch.with(|b| b.as_ref().map_or(0, |b| b.step)).to_string()>
            <div class="batch-head">
                <button class="batch-toggle" aria-expanded=move || open.get().to_string()
                    on:click=move |_| open.update(|o| *o = !*o)>
                    {move || if open.get() { "▾ Batch" } else { "▸ Batch" }}
                </button>
                <span class="batch-summary">{summary}</span>
            </div>
            {move || if next_token.get() {
                view! { <p class="batch-counts">{data::NEXT_TOKEN_KEY}</p> }.into_any()
            } else {
                view! {
                    <p class="batch-counts" data-counts=move || counts.with(data::counts_json)>
                        {move || counts.with(|c| data::counts_text(c, mask_prob.get()))}
                    </p>
                }.into_any()
            }}
            {rows}
        </section>
    }
}

fn row_view(row: Row) -> impl IntoView {
    let footer = match (row.nsp, row.score) {
        (Some(nsp), _) => {
            let nsp_class = if nsp.right() {
                "nsp-predicted right"
            } else {
                "nsp-predicted wrong"
            };
            Some(
                view! {
                    <p class="nsp">
                        <span class="nsp-label">{data::nsp_name(nsp.label)}</span>
                        <span class=nsp_class>{nsp.predicted_text()}</span>
                    </p>
                }
                .into_any(),
            )
        }
        (None, Some(score)) => Some(view! { <p class="nsp next-score">{score}</p> }.into_any()),
        (None, None) => None,
    };
    view! {
        <li class="batch-example">
            <div class="chips">{row.chips.into_iter().enumerate().map(|(p, c)| chip_view(p, c)).collect_view()}</div>
            {footer}
        </li>
    }
}

fn chip_view(position: usize, chip: Chip) -> impl IntoView {
    let class = chip.classes();
    let Some(chosen) = chip.chosen else {
        return view! {
            <span class=class data-pos=position><span class="tok">{chip.token}</span></span>
        }
        .into_any();
    };
    let (pred_class, sign) = if chosen.right {
        ("pred right", "✓ ")
    } else {
        ("pred wrong", "✗ ")
    };
    let title = chosen.title();
    match chosen.mark {
        Some(mark) => view! {
            <span class=class data-pos=position data-replaced-by=mark.class() title=title>
                <span class="mark">{mark.label()}</span>
                <span class="orig">{chosen.target}</span>
                <span class=pred_class>{sign}{chosen.predicted}</span>
            </span>
        }
        .into_any(),
        // Next token: the token, and under it the model's guess for the one after it.
        None => view! {
            <span class=class data-pos=position title=title>
                <span class="tok">{chip.token}</span>
                <span class=pred_class>{format!("→ {} {}", chosen.predicted, sign.trim())}</span>
            </span>
        }
        .into_any(),
    }
}
