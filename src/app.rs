use crate::explorer::Explorer;
use crate::lab::{LabSettings, ProbeInput, DEFAULT_CORPUS};
use crate::live::Live;
use crate::panel::TrainingPanel;
use crate::protocol::ToWorker;
use leptos::prelude::*;

pub use crate::live::Shown;

#[component]
pub fn App() -> impl IntoView {
    let live = Live::start();
    let corpus = RwSignal::new(DEFAULT_CORPUS.to_string());
    let settings = RwSignal::new(LabSettings::default());
    let probe = RwSignal::new(ProbeInput::default());
    live.reset(corpus.get_untracked(), settings.get_untracked());

    // The worker is the outside world: tell it whenever the probe changes.
    Effect::new(move |_| live.inspect(probe.get()));
    keyboard_shortcuts(live);

    view! {
        <header>
            <h1>"Attention Lab"</h1>
            <span class="model-name">{move || live.info.get().map(|i| i.name).unwrap_or_default()}</span>
        </header>
        <div class="layout">
            <main>
                <Explorer probe=probe inspection=live.inspection.into() info=live.info.into()/>
            </main>
            <TrainingPanel live=live corpus=corpus settings=settings probe=probe/>
        </div>
    }
}

/// Space: play/pause, S: one step — unless the user is typing in a field.
fn keyboard_shortcuts(live: Live) {
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        let typing = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
        if typing || ev.ctrl_key() || ev.meta_key() || ev.alt_key() {
            return;
        }
        match ev.key().as_str() {
            " " => {
                ev.prevent_default();
                live.send(if live.playing.get_untracked() {
                    ToWorker::Pause
                } else {
                    ToWorker::Play
                });
            }
            "s" | "S" => live.send(ToWorker::Step),
            _ => {}
        }
    });
    on_cleanup(move || handle.remove());
}
