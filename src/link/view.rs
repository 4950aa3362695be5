//! "Copy link" in the header, and the line a link leaves: what it could not read, and the
//! Reset it offers when it asks for another model.

use super::Opened;
use crate::components::export::copy_text;
use crate::live::Live;
use leptos::prelude::*;
use protocol::link::{self, ModelShape};
use protocol::view::Embed;
use protocol::{LabResult, LabSettings};

/// Copies the address of the view; the same address is in `data-link`. Beside it, "Copy embed
/// code" copies an `<iframe>` that shows one view of it (`embed`) in a course page; the code
/// is in `data-embed-code`. `children` go beside that button ("Prepare for a course").
#[component]
pub fn CopyLink(
    href: Memo<String>,
    embed: RwSignal<Embed>,
    embed_href: Memo<String>,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    let said = RwSignal::new(None::<String>);
    let copied = move |done: &'static str| {
        move |result: LabResult<()>| {
            said.set(Some(match result {
                Ok(()) => done.to_string(),
                Err(e) => format!("Not copied: {e}. The address bar holds the same link."),
            }))
        }
    };
    let copy = move |_| copy_text(&href.get_untracked(), copied("Copied"));
    let code = Memo::new(move |_| link::embed_code(&embed_href.get(), embed.get()));
    let copy_code = move |_| copy_text(&code.get_untracked(), copied("Copied the embed code"));
    // The answer fades with the next change of view: it spoke of the link before.
    Effect::watch(move || href.get(), move |_, _, _| said.set(None), false);
    let choices = Embed::all()
        .map(|e| view! { <option value=e.slug() selected=move || embed.get() == e>{e.label()}</option> })
        .collect_view();
    view! {
        <button type="button" class="copy-link" data-link=move || href.get() on:click=copy
            title="Copy the address of this view: sentence, mask, stage, layer, head, tour chapter and the model's settings">"Copy link"</button>
        <span class="embed-choice">
            <select aria-label="Embed" title="What the embed code shows in a course page"
                on:change=move |ev| if let Some(e) = Embed::from_slug(&event_target_value(&ev)) { embed.set(e) }>
                {choices}
            </select>
            <button type="button" class="copy-embed" data-embed-code=move || code.get() on:click=copy_code
                title="Copy an iframe that shows only the chosen view, with Play, Step and a link to the whole page">"Copy embed code"</button>
            {children.map(|c| c())}
        </span>
        <span class="copy-said" role="status">{move || said.get()}</span>
    }
}

/// The notice for a link read in part, and the Reset offered for the model it asks for.
#[component]
pub fn LinkBanner(
    live: Live,
    opened: Opened,
    corpus: RwSignal<String>,
    settings: RwSignal<LabSettings>,
) -> impl IntoView {
    let accept = move |_| {
        let Some(shape) = opened.offer.get_untracked() else {
            return;
        };
        let next = shape.applied_to(&settings.get_untracked());
        settings.set(next.clone());
        opened.offer.set(None);
        live.reset(corpus.get_untracked(), next);
    };
    // The model here stays: the link's layer and head are checked against it.
    let decline = move |_| {
        opened.offer.set(None);
        if let Some(i) = live.info.get_untracked() {
            opened.check(&i);
        }
    };
    view! {
        {move || opened.notice.get().map(|line| view! {
            <div class="link-notice" role="status" data-link-notice="">
                <p>{line}</p>
                <button type="button" on:click=move |_| opened.notice.set(None)>"Dismiss"</button>
            </div>
        })}
        {move || opened.offer.get().map(|shape| {
            let here = settings.with(ModelShape::of);
            view! {
                <div class="link-offer" role="status" data-link-offer="">
                    <p>
                        <strong>"This link is for another model: "</strong>
                        {shape.differences(here).join(", ")}
                        ". The model here stays until you choose: a Reset builds the link's model in its place, and training starts over."
                    </p>
                    <button type="button" class="primary" on:click=accept>"Reset to the link's model"</button>
                    <button type="button" on:click=decline>"Keep this model"</button>
                </div>
            }
        })}
    }
}
