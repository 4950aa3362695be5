//! "Load checkpoint" (a picker and a drop zone, with a progress bar) and "Download checkpoint".

use super::read::{file_vec, read_checkpoint, Picked, Reading};
use crate::format::format_bytes;
use leptos::prelude::*;
use protocol::ModelBundle;
use wasm_bindgen::JsCast;
use web_sys::{File, HtmlInputElement};

#[derive(Clone, Debug, PartialEq)]
enum Status {
    Idle,
    Reading(Reading),
    Read(String),
    Failed(String),
}

/// "Load checkpoint": a file picker (several files at once) and a drop zone.
#[component]
pub fn LoadCheckpoint(
    on_loaded: Callback<ModelBundle>,
    #[prop(into)] disabled: Signal<bool>,
) -> impl IntoView {
    let status = RwSignal::new(Status::Idle);
    let dragging = RwSignal::new(false);
    let zone = NodeRef::<leptos::html::Div>::new();
    let busy = move || matches!(status.get(), Status::Reading(_));
    let off = move || disabled.get() || busy();

    let take = move |files: Vec<File>| {
        if disabled.get_untracked()
            || matches!(status.get_untracked(), Status::Reading(_))
            || files.is_empty()
        {
            return;
        }
        leptos::task::spawn_local(async move {
            match read_checkpoint(files, |r| status.set(Status::Reading(r))).await {
                Ok(Picked {
                    bundle,
                    ignored,
                    total,
                }) => {
                    let count = 3 + usize::from(bundle.tokenizer_config_json.is_some());
                    let mut message = format!(
                        "Read {count} files, {} ({}).",
                        format_bytes(total),
                        bundle.name
                    );
                    if !ignored.is_empty() {
                        message.push_str(&format!(" Not used: {}.", ignored.join(", ")));
                    }
                    status.set(Status::Read(message));
                    on_loaded.run(bundle);
                }
                Err(e) => status.set(Status::Failed(e.to_string())),
            }
        });
    };
    let on_change = move |ev: leptos::ev::Event| {
        let Some(input) = ev
            .target()
            .and_then(|t| t.dyn_into::<HtmlInputElement>().ok())
        else {
            return;
        };
        let files = file_vec(input.files());
        // Picking the same files again must fire `change` again.
        input.set_value("");
        take(files);
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        take(file_vec(ev.data_transfer().and_then(|d| d.files())));
    };
    let on_drag_over = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        if let Some(d) = ev.data_transfer() {
            d.set_drop_effect(if off() { "none" } else { "copy" });
        }
        dragging.set(!disabled.get_untracked());
    };

    // Moving onto the button inside the zone is not leaving it.
    let on_drag_leave = move |ev: leptos::ev::DragEvent| {
        let to = ev
            .related_target()
            .and_then(|t| t.dyn_into::<web_sys::Node>().ok());
        let inside = zone
            .get_untracked()
            .is_some_and(|z| to.is_some_and(|n| z.contains(Some(&n))));
        if !inside {
            dragging.set(false);
        }
    };

    let progress = move || match status.get() {
        Status::Idle => None,
        Status::Reading(r) => Some(
            view! {
                <div class="reading" role="status">
                    <span>{format!("Reading {} ({})…", r.file, format_bytes(r.file_bytes))}</span>
                    <progress max=r.total.max(1).to_string() value=r.done.to_string()></progress>
                </div>
            }
            .into_any(),
        ),
        Status::Read(m) => Some(view! { <p class="loaded" role="status">{m}</p> }.into_any()),
        Status::Failed(m) => Some(view! { <p class="error" role="alert">{m}</p> }.into_any()),
    };

    view! {
        <div
            node_ref=zone
            class="load-checkpoint"
            class:dragging=move || dragging.get()
            class:disabled=off
            on:dragenter=on_drag_over
            on:dragover=on_drag_over
            on:dragleave=on_drag_leave
            on:drop=on_drop
        >
            <label class="button">
                "Load checkpoint"
                <input
                    type="file"
                    multiple=true
                    accept=".json,.safetensors,.txt"
                    disabled=off
                    on:change=on_change
                />
            </label>
            <span class="hint">"or drop config.json, model.safetensors and vocab.txt here"</span>
            {progress}
        </div>
    }
}

/// "Download checkpoint"; the caller fetches the files and calls `download_files`.
#[component]
pub fn DownloadCheckpoint(
    on_click: Callback<()>,
    #[prop(into)] disabled: Signal<bool>,
) -> impl IntoView {
    view! {
        <button class="download-checkpoint" disabled=move || disabled.get() on:click=move |_| on_click.run(())>
            "Download checkpoint"
        </button>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{settled, until};
    use js_sys::{Reflect, Uint8Array};
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn file(name: &str, bytes: &[u8]) -> File {
        let parts = js_sys::Array::of1(&Uint8Array::from(bytes));
        File::new_with_u8_array_sequence(&parts, name).unwrap()
    }

    /// Put `files` in the picker as the browser does, and say so with a `change` event.
    fn pick(input: &HtmlInputElement, files: &[File]) {
        let transfer = web_sys::DataTransfer::new().unwrap();
        let items = Reflect::get(&transfer, &"items".into()).unwrap();
        let add: js_sys::Function = Reflect::get(&items, &"add".into())
            .unwrap()
            .unchecked_into();
        for f in files {
            add.call1(&items, f).unwrap();
        }
        input.set_files(transfer.files().as_ref());
        input
            .dispatch_event(&web_sys::Event::new("change").unwrap())
            .unwrap();
    }

    #[test]
    async fn the_picker_hands_over_the_files_or_says_what_is_missing() {
        let doc = web_sys::window().unwrap().document().unwrap();
        let container: web_sys::HtmlElement = doc.create_element("div").unwrap().unchecked_into();
        doc.body().unwrap().append_child(&container).unwrap();
        let got = RwSignal::new(None::<ModelBundle>);
        let off = RwSignal::new(false);
        let on_loaded = Callback::new(move |p: ModelBundle| got.set(Some(p)));
        let _handle = leptos::mount::mount_to(container.clone(), move || {
            view! { <LoadCheckpoint on_loaded=on_loaded disabled=off/> }
        });
        settled().await;
        let input: HtmlInputElement = container
            .query_selector("input[type=file]")
            .unwrap()
            .unwrap()
            .unchecked_into();
        assert!(input.multiple());
        let text = || container.text_content().unwrap();

        pick(
            &input,
            &[file("config.json", b"{}"), file("vocab.txt", b"[PAD]")],
        );
        settled().await;
        assert!(text().contains("Missing model.safetensors"), "{}", text());
        assert_eq!(got.get_untracked(), None);

        off.set(true);
        settled().await;
        assert!(input.disabled());
        let three = [
            file("config.json", b"{}"),
            file("vocab.txt", b"[PAD]"),
            file("model.safetensors", &[7; 10]),
        ];
        pick(&input, &three);
        settled().await;
        assert_eq!(got.get_untracked(), None, "a disabled picker reads nothing");

        off.set(false);
        settled().await;
        pick(&input, &three);
        // The files are read through streams: on a busy machine that took more than 50 ms.
        until(|| got.get_untracked().is_some(), 5000).await;
        let picked = got
            .get_untracked()
            .expect("the files were handed over within 5 s");
        assert_eq!(
            (picked.name.as_str(), picked.safetensors.as_slice()),
            ("model.safetensors", &[7u8; 10][..])
        );
        assert!(
            text().contains("Read 3 files, 17 bytes (model.safetensors)."),
            "{}",
            text()
        );
        container.remove();
    }
}
