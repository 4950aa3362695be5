//! A page opened with `&embed` (`protocol::view::Embed`): one view alone, for an iframe in a
//! course page. It keeps the controls that view needs (Play, Pause, Step, and the stepper for a
//! stage) and links to the whole page in the same state. It tells the page around it its
//! height (`tell_the_host_our_height`), so the embed code's script sizes the iframe to it.

use crate::claims::view::ClaimCard;
use crate::explorer::stepper::StagePanel;
use crate::explorer::tokens::TokenChips;
use crate::explorer::{Focus, InspectionStatus, Overview};
use crate::live::Live;
use crate::panel::{PlayControls, StepStatus};
use leptos::prelude::*;
use protocol::view::Embed;

/// `full_page` is the address of the same view without `&embed`.
#[component]
pub fn EmbedPage(live: Live, embed: Embed, focus: Focus, full_page: Memo<String>) -> impl IntoView {
    let no_trainer = Signal::derive(move || live.crashed.with(Option::is_some));
    tell_the_host_our_height();
    let body = match embed {
        Embed::Stage => {
            focus.listen_to_arrows();
            // The explorer's own classes, so the figures look and fit as they do there.
            view! {
                <section class="explorer">
                    <InspectionStatus focus=focus no_trainer=no_trainer/>
                    <Show when=move || focus.ok()>
                        <TokenChips ins=focus.ins/>
                        <div class="model-column">
                            <StagePanel ins=focus.stage_ins selection=focus.stage_selection
                                stage=focus.view.stage stages=focus.stages info=focus.info
                                which=focus.showing/>
                        </div>
                    </Show>
                </section>
            }
            .into_any()
        }
        Embed::Model => view! {
            <section class="explorer">
                <InspectionStatus focus=focus no_trainer=no_trainer/>
                <Show when=move || focus.ok()>
                    <div class="overview">
                        <Overview focus=focus/>
                    </div>
                </Show>
            </section>
        }
        .into_any(),
        Embed::Claim(claim) => view! {
            <section class="claims">
                <ClaimCard live=live claim=claim/>
            </section>
        }
        .into_any(),
    };
    view! {
        <div class="embed" data-embed=embed.slug()>
            <div class="embed-bar">
                <div class="controls" role="group" aria-label="Training controls">
                    <PlayControls live=live/>
                </div>
                <StepStatus live=live/>
                // A new tab: the course page stays where the reader is.
                <a class="open-full" href=move || full_page.get() target="_blank" rel="noopener">
                    "Open in Attention Lab"
                </a>
            </div>
            {body}
        </div>
    }
}

/// Whenever the page's height changes, posts `{ attentionLabHeight: px }` to the page that
/// frames it: the embed code's script sets the iframe's height to it, so the course page
/// scrolls and the frame never does. Nothing is posted when the page is not framed. The
/// height is no secret, so any host may read it.
fn tell_the_host_our_height() {
    use wasm_bindgen::JsValue;
    let Some(window) = web_sys::window() else {
        return;
    };
    let Ok(Some(host)) = window.parent() else {
        return;
    };
    if js_sys::Object::is(&host, &window) {
        return;
    }
    let Some(body) = window.document().and_then(|d| d.body()) else {
        return;
    };
    let watched = body.clone();
    let mut told = 0;
    crate::resize::on_resize(&body, move || {
        let height = watched.offset_height();
        if height == told {
            return;
        }
        told = height;
        let message = js_sys::Object::new();
        if js_sys::Reflect::set(
            &message,
            &"attentionLabHeight".into(),
            &JsValue::from(height),
        )
        .is_ok()
        {
            // A host that went away takes no message; the embed carries on.
            let _ = host.post_message(&message, "*");
        }
    });
}
