//! Page-wide messages above the explorer and the panel: the trainer stopped or could not start
//! (with Restart), and
//! what was reset on the way in because what the browser kept was invalid.

use crate::live::Live;
use leptos::prelude::*;
use protocol::LabSettings;

/// "The trainer stopped: MESSAGE" (or "could not start") and a Restart button, while the worker
/// is dead. It stays at the top of the window, so it is seen wherever the page is scrolled.
#[component]
pub fn CrashBanner(
    live: Live,
    corpus: RwSignal<String>,
    settings: RwSignal<LabSettings>,
) -> impl IntoView {
    let restart = move |_| live.restart(corpus.get_untracked(), settings.get_untracked());
    move || {
        live.crashed.get().map(|message| {
            view! {
                <div class="crashed" role="alert">
                    <p>{message}</p>
                    <button on:click=restart>"Restart"</button>
                </div>
            }
        })
    }
}

/// Settings, probe, corpus or records kept from an earlier visit that were reset, and why.
#[component]
pub fn RestoreNotes(live: Live) -> impl IntoView {
    move || {
        let notes = live.notes.get();
        (!notes.is_empty()).then(|| {
            view! {
                <div class="restore-notes" role="status">
                    <ul>{notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}</ul>
                    <button on:click=move |_| live.notes.set(Vec::new())>"Dismiss"</button>
                </div>
            }
        })
    }
}
