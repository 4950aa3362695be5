//! "Copy link" in the header, and the line a link leaves: what it could not read, and the
//! Reset it offers when it asks for another model.

use super::Opened;
use crate::components::export::copy_text;
use crate::live::Live;
use leptos::prelude::*;
use protocol::link::ModelShape;
use protocol::LabSettings;

/// Copies the address of the view; the same address is in `data-link`.
#[component]
pub fn CopyLink(href: Memo<String>) -> impl IntoView {
    let said = RwSignal::new(None::<String>);
    let copy = move |_| {
        copy_text(&href.get_untracked(), move |result| {
            said.set(Some(match result {
                Ok(()) => "Copied".into(),
                Err(e) => format!("Not copied: {e}. The address bar holds the same link."),
            }))
        })
    };
    // The answer fades with the next change of view: it spoke of the link before.
    Effect::watch(move || href.get(), move |_, _, _| said.set(None), false);
    view! {
        <button type="button" class="copy-link" data-link=move || href.get() on:click=copy
            title="Copy the address of this view: sentence, mask, stage, layer, head, tour chapter and the model's settings">"Copy link"</button>
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
