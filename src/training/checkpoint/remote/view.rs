//! The line above the page while a model comes from an address: the file, its bytes and a
//! progress bar with Cancel; the question before large weights; or why it did not open, with
//! Try again. The full page and an embed show the same.

use super::{Fetching, RemoteModel};
use crate::format::format_bytes;
use leptos::prelude::*;

#[component]
pub fn ModelDownload(remote: RemoteModel) -> impl IntoView {
    let from = move || {
        remote
            .source
            .with(|s| s.as_ref().map(|s| s.text()))
            .unwrap_or_default()
    };
    move || {
        match remote.fetching.get() {
        Fetching::Idle | Fetching::Opening => None,
        Fetching::Downloading {
            file,
            index,
            count,
            done,
            size,
        } => {
            let bytes = match size {
                Some(n) => format!("{} of {}", format_bytes(done.min(n)), format_bytes(n)),
                None => format_bytes(done),
            };
            let max = size.unwrap_or(0).max(done).max(1);
            Some(
                view! {
                    <div class="model-download" role="status" data-checkpoint="downloading">
                        <p>
                            {format!("Downloading the model at {}: {file} (file {index} of {count}), ", from())}
                            <span class="bytes" data-done=done>{bytes}</span>
                        </p>
                        <progress max=max.to_string() value=done.to_string()
                            aria-label=format!("{file} downloaded")></progress>
                        <button type="button" on:click=move |_| remote.cancel()>"Cancel"</button>
                    </div>
                }
                .into_any(),
            )
        }
        Fetching::Asking { size } => Some(
            view! {
                <div class="model-download" role="alertdialog" aria-label="A large model" data-checkpoint="asking">
                    <p>
                        {format!("The model at {} has weights of {}. Download them?", from(), format_bytes(size))}
                    </p>
                    <button type="button" class="primary" on:click=move |_| remote.answer_size(true)>
                        {format!("Download {}", format_bytes(size))}
                    </button>
                    <button type="button" on:click=move |_| remote.answer_size(false)>"Not now"</button>
                </div>
            }
            .into_any(),
        ),
        Fetching::Failed(why) => Some(
            view! {
                <div class="model-download failed" role="alert" data-checkpoint="failed">
                    <p><strong data-checkpoint-failure="">{why}</strong>" A fresh model is open instead."</p>
                    <button type="button" on:click=move |_| remote.retry()>"Try again"</button>
                    <button type="button" on:click=move |_| remote.fetching.set(Fetching::Idle)>"Dismiss"</button>
                </div>
            }
            .into_any(),
        ),
    }
    }
}
