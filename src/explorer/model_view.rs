//! Layer and head: two selectors, and the model view (every layer × head as a small softmax
//! heatmap, as BertViz does). Clicking a cell selects it.

use super::figures::{weights, weights_name, Selection};
use crate::components::heatmap_thumb::HeatmapThumb;
use engine::inspect::Inspection;
use leptos::prelude::*;
use std::sync::Arc;

#[component]
pub fn HeadPicker(
    shape: Memo<(usize, usize)>,
    selection: Memo<Selection>,
    chosen: RwSignal<Selection>,
) -> impl IntoView {
    let options = move |count: usize, is_on: fn(Selection, usize) -> bool| {
        (0..count)
            .map(|i| view! { <option value=i.to_string() prop:selected=move || is_on(selection.get(), i)>{i + 1}</option> })
            .collect_view()
    };
    let parse = |ev| event_target_value(&ev).parse::<usize>().ok();
    view! {
        <div class="pickers">
            <label class="field">
                <span class="field-label">"Layer"</span>
                <select aria-label="Layer" on:change=move |ev| if let Some(n) = parse(ev) { chosen.update(|c| c.layer = n) }>
                    {move || options(shape.get().0, |s, i| s.layer == i)}
                </select>
            </label>
            <label class="field">
                <span class="field-label">"Head"</span>
                <select aria-label="Head" on:change=move |ev| if let Some(n) = parse(ev) { chosen.update(|c| c.head = n) }>
                    {move || options(shape.get().1, |s, i| s.head == i)}
                </select>
            </label>
        </div>
    }
}

#[component]
pub fn ModelView(
    ins: Memo<Option<Arc<Inspection>>>,
    shape: Memo<(usize, usize)>,
    selection: Memo<Selection>,
    chosen: RwSignal<Selection>,
) -> impl IntoView {
    // G K/V groups (grouped-query attention): heads sharing one are banded together.
    let groups = Memo::new(move |_| {
        ins.with(|i| {
            i.as_ref()
                .and_then(|i| i.trace.layers.first())
                .map_or(0, |l| {
                    l.heads.iter().map(|h| h.kv_group + 1).max().unwrap_or(0)
                })
        })
    });
    let what =
        Memo::new(move |_| ins.with(|i| i.as_ref().map_or("softmax weights", |i| weights_name(i))));
    // Rebuilt only when the model's shape changes; each thumbnail redraws from its own memo.
    let grid = move || {
        let (layers, heads) = shape.get();
        let g = groups.get();
        let band = (g > 0 && g < heads && heads % g == 0).then(|| {
            let per = heads / g;
            let cells = (0..g)
                .map(|k| {
                    let title = format!(
                        "Heads {}–{} share K/V group {} (grouped-query attention)",
                        k * per + 1,
                        (k + 1) * per,
                        k + 1
                    );
                    view! { <span class="mv-kv" title=title style:grid-column=format!("span {per}")>{format!("KV {}", k + 1)}</span> }
                })
                .collect_view();
            view! { <span class="mv-corner mv-kv-label" title="K/V groups">"KV"</span> {cells} }
        });
        let header = (0..heads)
            .map(|h| view! { <span class="mv-head">{format!("H{}", h + 1)}</span> })
            .collect_view();
        let rows = (0..layers)
            .map(|layer| {
                let cells = (0..heads)
                    .map(|head| {
                        let sel = Selection { layer, head };
                        let matrix = Memo::new(move |_| {
                            ins.with(|i| i.as_ref().and_then(|i| weights(i, sel).cloned()).unwrap_or_default())
                        });
                        let name = format!("Layer {} · Head {}", layer + 1, head + 1);
                        let kv = (g > 0 && g < heads).then(|| (head / (heads / g)) % 2 == 1);
                        view! {
                            <button type="button" class="thumb" class:selected=move || selection.get() == sel
                                class:kv-odd=kv == Some(true)
                                aria-pressed=move || (selection.get() == sel).to_string()
                                aria-label=name.clone() title=move || format!("{name}: {}", what.get())
                                on:click=move |_| chosen.set(sel)>
                                <HeatmapThumb matrix=matrix/>
                            </button>
                        }
                    })
                    .collect_view();
                view! { <span class="mv-layer">{format!("L{}", layer + 1)}</span> {cells} }
            })
            .collect_view();
        view! { {band} <span class="mv-corner"></span> {header} {rows} }
    };
    view! {
        <div class="model-view-wrap">
            <h3 class="panel-title">"Model view " <span class="sub">{move || format!("{} of every layer × head", what.get())}</span></h3>
            <div class="model-view" role="group" aria-label="Model view"
                style:grid-template-columns=move || format!("auto repeat({}, minmax(28px, 64px))", shape.get().1)>
                {grid}
            </div>
        </div>
    }
}
