//! Layer and head: two selectors, and the model view (every layer × head as a small softmax
//! heatmap, as BertViz does). Clicking a cell selects it. An encoder–decoder's model view has
//! an "Encoder" section and a "Decoder" section, the decoder's with a "Self" and a "Cross" grid.

use super::figures::{is_encoder_decoder, part_shape, part_weights_name, weights, Part, Selection};
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
    selection: Memo<Selection>,
    chosen: RwSignal<Selection>,
) -> impl IntoView {
    let what = Memo::new(move |_| {
        ins.with(|i| {
            i.as_ref().map_or("softmax weights", |i| {
                part_weights_name(i, Part::SelfAttention)
            })
        })
    });
    let encoder_decoder =
        Memo::new(move |_| ins.with(|i| i.as_ref().is_some_and(|i| is_encoder_decoder(i))));
    let grid =
        move |part: Part| view! { <HeadGrid ins=ins part=part selection=selection chosen=chosen/> };
    view! {
        <div class="model-view-wrap">
            <h3 class="panel-title">"Model view " <span class="sub">{move || if encoder_decoder.get() {
                "attention weights of every layer × head, in each attention".to_string()
            } else {
                format!("{} of every layer × head", what.get())
            }}</span></h3>
            {move || if encoder_decoder.get() {
                view! {
                    <section class="mv-section" data-part="encoder">
                        <h4>"Encoder"</h4>
                        <p class="hint">"Self-attention over the source (padding mask)."</p>
                        {grid(Part::Encoder)}
                    </section>
                    <section class="mv-section" data-part="decoder">
                        <h4>"Decoder"</h4>
                        <div class="mv-pair">
                            <div class="mv-grid" data-part="self">
                                <h5>"Self"</h5>
                                <p class="hint">"Target × target, causal."</p>
                                {grid(Part::SelfAttention)}
                            </div>
                            <div class="mv-grid" data-part="cross">
                                <h5>"Cross"</h5>
                                <p class="hint">"Target rows × source columns: not square."</p>
                                {grid(Part::Cross)}
                            </div>
                        </div>
                    </section>
                }
                .into_any()
            } else {
                grid(Part::SelfAttention).into_any()
            }}
        </div>
    }
}

/// One attention's layers × heads, each a thumbnail of its weights.
#[component]
fn HeadGrid(
    ins: Memo<Option<Arc<Inspection>>>,
    part: Part,
    selection: Memo<Selection>,
    chosen: RwSignal<Selection>,
) -> impl IntoView {
    let shape =
        Memo::new(move |_| ins.with(|i| i.as_ref().map_or((0, 0), |i| part_shape(i, part))));
    // G K/V groups (grouped-query attention): heads sharing one are banded together.
    let groups = Memo::new(move |_| {
        ins.with(|i| {
            i.as_ref()
                .and_then(|i| super::figures::side(i, part))
                .and_then(|i| i.trace.layers.first())
                .map_or(0, |l| {
                    l.heads.iter().map(|h| h.kv_group + 1).max().unwrap_or(0)
                })
        })
    });
    let what = Memo::new(move |_| {
        ins.with(|i| {
            i.as_ref()
                .map_or("softmax weights", |i| part_weights_name(i, part))
        })
    });
    // Rebuilt only when the model's shape changes; each thumbnail redraws from its own memo.
    let grid = move || {
        let (layers, heads) = shape.get();
        let g = groups.get();
        let band = (part != Part::Cross && g > 0 && g < heads && heads % g == 0).then(|| {
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
                        let sel = Selection { layer, head, part };
                        let matrix = Memo::new(move |_| {
                            ins.with(|i| i.as_ref().and_then(|i| weights(i, sel).cloned()).unwrap_or_default())
                        });
                        let name = match part {
                            Part::SelfAttention => format!("Layer {} · Head {}", layer + 1, head + 1),
                            Part::Cross => format!("Cross · Layer {} · Head {}", layer + 1, head + 1),
                            Part::Encoder => format!("Encoder · Layer {} · Head {}", layer + 1, head + 1),
                        };
                        let kv = (part != Part::Cross && g > 0 && g < heads).then(|| (head / (heads / g)) % 2 == 1);
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
    let label = match part {
        Part::SelfAttention => "Model view",
        Part::Cross => "Model view: decoder cross-attention",
        Part::Encoder => "Model view: encoder",
    };
    view! {
        <div class="model-view" role="group" aria-label=label
            style:grid-template-columns=move || format!("auto repeat({}, minmax(28px, 64px))", shape.get().1)>
            {grid}
        </div>
    }
}
