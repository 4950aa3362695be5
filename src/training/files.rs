//! Checkpoint files in the browser: picking or dropping `config.json`, `model.safetensors`,
//! `vocab.txt` (and optionally `tokenizer_config.json`), reading them with a progress bar, and
//! handing files back to the user as downloads.
//!
//! Files are recognised by name only; their contents are the engine's business
//! (`engine::checkpoint::load`). Every file's size is checked before a byte of it is read.

use engine::checkpoint::{
    check_file_size, CheckpointFiles, CONFIG_FILE, TOKENIZER_CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE,
};
use js_sys::{Reflect, Uint8Array};
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Blob, BlobPropertyBag, File, FileList, HtmlAnchorElement, HtmlInputElement,
    ReadableStreamDefaultReader, Url,
};

/// A checkpoint's files as read from the user's disk.
#[derive(Clone, Debug, PartialEq)]
pub struct PickedCheckpoint {
    /// `_name_or_path` of config.json when it has one, else "model.safetensors".
    pub name: String,
    pub config_json: String,
    pub vocab_txt: String,
    pub tokenizer_config_json: Option<String>,
    pub safetensors: Vec<u8>,
}

impl PickedCheckpoint {
    pub fn into_files(self) -> (String, CheckpointFiles) {
        let files = CheckpointFiles {
            config_json: self.config_json,
            safetensors: self.safetensors,
            vocab_txt: self.vocab_txt,
            tokenizer_config_json: self.tokenizer_config_json,
        };
        (self.name, files)
    }
}

/// What a file is to a checkpoint, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Config,
    Weights,
    Vocab,
    TokenizerConfig,
}

impl Role {
    /// Names are matched exactly, ignoring ASCII case.
    pub fn of(name: &str) -> Option<Role> {
        [
            Role::Config,
            Role::Weights,
            Role::Vocab,
            Role::TokenizerConfig,
        ]
        .into_iter()
        .find(|r| r.file_name().eq_ignore_ascii_case(name))
    }

    pub fn file_name(self) -> &'static str {
        match self {
            Role::Config => CONFIG_FILE,
            Role::Weights => WEIGHTS_FILE,
            Role::Vocab => VOCAB_FILE,
            Role::TokenizerConfig => TOKENIZER_CONFIG_FILE,
        }
    }
}

/// The picked files sorted by role; files that are not part of a checkpoint are set aside
/// in `ignored` (a Hugging Face folder also holds README.md, tokenizer.json, …).
#[derive(Clone, Debug, PartialEq)]
pub struct Recognised<T> {
    pub config: T,
    pub weights: T,
    pub vocab: T,
    pub tokenizer_config: Option<T>,
    pub ignored: Vec<String>,
}

impl<T> Recognised<T> {
    /// The files that will be read, in reading order (small ones first).
    pub fn to_read(&self) -> Vec<(Role, &T)> {
        let mut out = vec![(Role::Config, &self.config), (Role::Vocab, &self.vocab)];
        out.extend(
            self.tokenizer_config
                .as_ref()
                .map(|t| (Role::TokenizerConfig, t)),
        );
        out.push((Role::Weights, &self.weights));
        out
    }
}

const NEEDED: &str = "a checkpoint is config.json, model.safetensors and vocab.txt (tokenizer_config.json is optional)";

/// Sort `(file name, file)` pairs into a checkpoint, or say which file is missing or doubled.
pub fn recognise<T>(files: Vec<(String, T)>) -> Result<Recognised<T>, String> {
    if files.is_empty() {
        return Err(format!("No files were picked: {NEEDED}."));
    }
    let (mut config, mut weights, mut vocab, mut tokenizer_config) = (None, None, None, None);
    let mut ignored = Vec::new();
    for (name, file) in files {
        let Some(role) = Role::of(&name) else {
            ignored.push(name);
            continue;
        };
        let slot = match role {
            Role::Config => &mut config,
            Role::Weights => &mut weights,
            Role::Vocab => &mut vocab,
            Role::TokenizerConfig => &mut tokenizer_config,
        };
        if slot.replace(file).is_some() {
            return Err(format!(
                "Two files are named {}: pick the files of one checkpoint.",
                role.file_name()
            ));
        }
    }
    let missing: Vec<&str> = [
        (config.is_none(), CONFIG_FILE),
        (weights.is_none(), WEIGHTS_FILE),
        (vocab.is_none(), VOCAB_FILE),
    ]
    .into_iter()
    .filter_map(|(gone, name)| gone.then_some(name))
    .collect();
    match (config, weights, vocab) {
        (Some(config), Some(weights), Some(vocab)) => Ok(Recognised {
            config,
            weights,
            vocab,
            tokenizer_config,
            ignored,
        }),
        _ => {
            let mut message = format!("Missing {}: {NEEDED}.", and_list(&missing));
            if ignored
                .iter()
                .any(|n| n.ends_with(".bin") || n.ends_with(".h5") || n.ends_with(".pt"))
            {
                message.push_str(" Only safetensors weights can be read here, not PyTorch .bin or TensorFlow .h5 files.");
            }
            if !ignored.is_empty() {
                message.push_str(&format!(" Not used: {}.", ignored.join(", ")));
            }
            Err(message)
        }
    }
}

fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Refuse any file over `engine::checkpoint::MAX_FILE_BYTES` before reading; the total bytes
/// to read otherwise.
pub fn check_sizes<T>(files: &Recognised<T>, size: impl Fn(&T) -> u64) -> Result<u64, String> {
    let mut total = 0u64;
    for (role, file) in files.to_read() {
        let bytes = size(file);
        check_file_size(role.file_name(), bytes).map_err(|e| e.to_string())?;
        total += bytes;
    }
    Ok(total)
}

/// A name for the model: config.json's `_name_or_path` if it has one, else "model.safetensors".
pub fn checkpoint_name(config_json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(config_json)
        .ok()
        .and_then(|v| {
            v.get("_name_or_path")?
                .as_str()
                .map(str::trim)
                .map(str::to_string)
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| WEIGHTS_FILE.to_string())
}

/// Bytes as people read them (decimal units, like the engine's size check).
pub fn format_bytes(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} bytes"),
        1_000..1_000_000 => format!("{:.0} kB", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.0} MB", n as f64 / 1e6),
        _ => format!("{:.1} GB", n as f64 / 1e9),
    }
}

fn text(role: Role, bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{} is not UTF-8 text (bad byte at offset {}): is it the right file?",
            role.file_name(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// The browser's message inside a thrown value.
pub(crate) fn js_message(e: &JsValue) -> String {
    Reflect::get(e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "unknown error".into())
}

/// Where reading stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    pub file: String,
    pub file_bytes: u64,
    /// Bytes read so far, over all files.
    pub done: u64,
    pub total: u64,
}

#[derive(Clone, Debug, PartialEq)]
enum Status {
    Idle,
    Reading(Reading),
    Read(String),
    Failed(String),
}

/// Read a whole file through its stream, reporting the bytes read after each chunk.
async fn read_bytes(file: &File, mut progress: impl FnMut(u64)) -> Result<Vec<u8>, String> {
    let name = file.name();
    let size = file.size() as usize;
    let mut buf = Vec::new();
    buf.try_reserve_exact(size).map_err(|_| {
        format!(
            "Not enough memory to read {name} ({})",
            format_bytes(size as u64)
        )
    })?;
    let reader: ReadableStreamDefaultReader = file.stream().get_reader().unchecked_into();
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|e| format!("Could not read {name}: {}", js_message(&e)))?;
        if Reflect::get(&chunk, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true)
        {
            break;
        }
        let value = Reflect::get(&chunk, &"value".into())
            .map_err(|e| format!("Could not read {name}: {}", js_message(&e)))?;
        let bytes = Uint8Array::new(&value);
        let (start, len) = (buf.len(), bytes.length() as usize);
        buf.try_reserve(len)
            .map_err(|_| format!("Not enough memory to read {name}"))?;
        buf.resize(start + len, 0);
        bytes.copy_to(&mut buf[start..]);
        progress(buf.len() as u64);
    }
    Ok(buf)
}

/// Recognise, size-check and read the picked files.
async fn read_checkpoint(
    files: Vec<File>,
    status: RwSignal<Status>,
) -> Result<(PickedCheckpoint, Vec<String>, u64), String> {
    let named = files.into_iter().map(|f| (f.name(), f)).collect();
    let picked = recognise(named)?;
    let total = check_sizes(&picked, |f| f.size() as u64)?;
    let mut before = 0u64;
    let mut texts: [Option<String>; 3] = [None, None, None];
    let mut safetensors = Vec::new();
    for (role, file) in picked.to_read() {
        let file_bytes = file.size() as u64;
        let reading = Reading {
            file: role.file_name().into(),
            file_bytes,
            done: before,
            total,
        };
        status.set(Status::Reading(reading.clone()));
        // At most ~200 updates of the bar, however many chunks the file comes in.
        let mut shown = before * 200 / total.max(1);
        let bytes = read_bytes(file, |n| {
            let done = before + n;
            if done * 200 / total.max(1) != shown {
                shown = done * 200 / total.max(1);
                status.set(Status::Reading(Reading {
                    done,
                    ..reading.clone()
                }));
            }
        })
        .await?;
        before += file_bytes;
        match role {
            Role::Weights => safetensors = bytes,
            Role::Config => texts[0] = Some(text(role, bytes)?),
            Role::Vocab => texts[1] = Some(text(role, bytes)?),
            Role::TokenizerConfig => texts[2] = Some(text(role, bytes)?),
        }
    }
    let [Some(config_json), Some(vocab_txt), tokenizer_config_json] = texts else {
        return Err("config.json or vocab.txt was not read".into());
    };
    let name = checkpoint_name(&config_json);
    Ok((
        PickedCheckpoint {
            name,
            config_json,
            vocab_txt,
            tokenizer_config_json,
            safetensors,
        },
        picked.ignored,
        total,
    ))
}

fn file_vec(list: Option<FileList>) -> Vec<File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i)).collect()
}

/// "Load checkpoint": a file picker (several files at once) and a drop zone.
#[component]
pub fn LoadCheckpoint(
    on_loaded: Callback<PickedCheckpoint>,
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
            match read_checkpoint(files, status).await {
                Ok((picked, ignored, total)) => {
                    let count = 3 + usize::from(picked.tokenizer_config_json.is_some());
                    let mut message = format!(
                        "Read {count} files, {} ({}).",
                        format_bytes(total),
                        picked.name
                    );
                    if !ignored.is_empty() {
                        message.push_str(&format!(" Not used: {}.", ignored.join(", ")));
                    }
                    status.set(Status::Read(message));
                    on_loaded.run(picked);
                }
                Err(e) => status.set(Status::Failed(e)),
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

/// How long an object URL outlives its click: the browser reads the blob after `click()`
/// returns, and a big file may take a moment to start.
const REVOKE_AFTER_MS: i32 = 60_000;

/// Offer `(file name, bytes, MIME type)` files as downloads, each through a Blob, an object URL
/// and a temporary `<a download>`; the URLs are revoked a minute later. Chrome asks once
/// whether the page may download several files.
pub fn download_files(files: &[(&str, &[u8], &str)]) -> Result<(), String> {
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    let body = document.body().ok_or("no document body")?;
    for &(name, bytes, mime) in files {
        let fail = |e: JsValue| format!("Could not download {name}: {}", js_message(&e));
        let options = BlobPropertyBag::new();
        options.set_type(mime);
        let parts = js_sys::Array::of1(&Uint8Array::from(bytes));
        let blob = Blob::new_with_u8_array_sequence_and_options(&parts, &options).map_err(fail)?;
        let url = Url::create_object_url_with_blob(&blob).map_err(fail)?;
        let link: HtmlAnchorElement = document.create_element("a").map_err(fail)?.unchecked_into();
        link.set_href(&url);
        link.set_download(name);
        link.set_hidden(true);
        body.append_child(&link).map_err(fail)?;
        link.click();
        link.remove();
        let revoke = wasm_bindgen::closure::Closure::once_into_js(move || {
            let _ = Url::revoke_object_url(&url);
        });
        window
            .set_timeout_with_callback_and_timeout_and_arguments_0(
                revoke.unchecked_ref(),
                REVOKE_AFTER_MS,
            )
            .map_err(fail)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tick;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn names(list: &[&str]) -> Vec<(String, u64)> {
        list.iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i as u64))
            .collect()
    }

    #[test]
    fn a_checkpoint_is_recognised_by_its_file_names() {
        let r = recognise(names(&[
            "vocab.txt",
            "README.md",
            "model.safetensors",
            "Config.JSON",
            "tokenizer.json",
        ]))
        .unwrap();
        assert_eq!(
            (r.config, r.weights, r.vocab, r.tokenizer_config),
            (3, 2, 0, None)
        );
        assert_eq!(
            r.ignored,
            vec!["README.md".to_string(), "tokenizer.json".to_string()]
        );
        let r = recognise(names(&[
            "config.json",
            "model.safetensors",
            "vocab.txt",
            "tokenizer_config.json",
        ]))
        .unwrap();
        assert_eq!(r.tokenizer_config, Some(3));
        let order: Vec<Role> = r.to_read().into_iter().map(|(role, _)| role).collect();
        assert_eq!(
            order,
            [
                Role::Config,
                Role::Vocab,
                Role::TokenizerConfig,
                Role::Weights
            ]
        );
    }

    #[test]
    fn missing_files_are_named() {
        let e = recognise(names(&["config.json", "vocab.txt"])).unwrap_err();
        assert!(e.starts_with("Missing model.safetensors:"), "{e}");
        let e = recognise(names(&["model.safetensors"])).unwrap_err();
        assert!(e.starts_with("Missing config.json and vocab.txt:"), "{e}");
        let e = recognise(names(&["tokenizer_config.json", "notes.md"])).unwrap_err();
        assert!(
            e.starts_with("Missing config.json, model.safetensors and vocab.txt:"),
            "{e}"
        );
        assert!(e.contains("Not used: notes.md."), "{e}");
        let e = recognise(names(&["config.json", "vocab.txt", "pytorch_model.bin"])).unwrap_err();
        assert!(
            e.contains("Missing model.safetensors") && e.contains("PyTorch .bin"),
            "{e}"
        );
        assert!(recognise(Vec::<(String, u64)>::new())
            .unwrap_err()
            .starts_with("No files"));
        let e = recognise(names(&[
            "config.json",
            "config.json",
            "model.safetensors",
            "vocab.txt",
        ]))
        .unwrap_err();
        assert!(e.contains("Two files are named config.json"), "{e}");
    }

    #[test]
    fn huge_files_are_refused_before_reading() {
        let files = vec![
            ("config.json".to_string(), 600u64),
            ("model.safetensors".to_string(), 3_000_000_000),
            ("vocab.txt".to_string(), 1000),
        ];
        let r = recognise(files).unwrap();
        let e = check_sizes(&r, |&n| n).unwrap_err();
        assert!(e.contains("model.safetensors is 3.0 GB"), "{e}");
        let r = recognise(names(&["config.json", "model.safetensors", "vocab.txt"])).unwrap();
        assert_eq!(check_sizes(&r, |&n| n * 10), Ok(30));
    }

    /// Through the real reading path, with `File`s: one claims 3 GB (its own `size` property
    /// shadows the prototype's getter) but holds one byte, so any read would not fail this way.
    #[test]
    async fn a_huge_picked_file_is_refused_before_a_byte_is_read() {
        let file = |name: &str, claimed: Option<f64>| {
            let parts = js_sys::Array::of1(&JsValue::from_str("x"));
            let f = File::new_with_str_sequence(&parts, name).unwrap();
            if let Some(size) = claimed {
                let descriptor = js_sys::Object::new();
                js_sys::Reflect::set(&descriptor, &"value".into(), &size.into()).unwrap();
                js_sys::Object::define_property(&f, &"size".into(), &descriptor);
            }
            f
        };
        let status = RwSignal::new(Status::Idle);
        let files = vec![
            file("config.json", None),
            file("model.safetensors", Some(3e9)),
            file("vocab.txt", None),
        ];
        assert_eq!(
            files[1].size(),
            3e9,
            "the claimed size is what the page sees"
        );
        let e = read_checkpoint(files, status).await.err().unwrap();
        assert!(e.contains("model.safetensors is 3.0 GB"), "{e}");
        assert!(
            matches!(status.get_untracked(), Status::Idle),
            "no file was opened for reading"
        );
    }

    #[test]
    fn names_sizes_and_text() {
        assert_eq!(
            checkpoint_name(r#"{"_name_or_path": "nreimers/MiniLM-L6-H384-uncased"}"#),
            "nreimers/MiniLM-L6-H384-uncased"
        );
        assert_eq!(
            checkpoint_name(r#"{"_name_or_path": ""}"#),
            "model.safetensors"
        );
        assert_eq!(checkpoint_name("not json"), "model.safetensors");
        assert_eq!(format_bytes(612), "612 bytes");
        assert_eq!(format_bytes(231_508), "232 kB");
        assert_eq!(format_bytes(90_868_376), "91 MB");
        assert_eq!(format_bytes(2_147_483_648), "2.1 GB");
        assert_eq!(
            text(Role::Vocab, b"[PAD]\n".to_vec()),
            Ok("[PAD]\n".to_string())
        );
        let e = text(Role::Config, vec![b'{', 0xff, b'}']).unwrap_err();
        assert!(
            e.starts_with("config.json is not UTF-8 text (bad byte at offset 1)"),
            "{e}"
        );
    }

    fn file(name: &str, bytes: &[u8]) -> File {
        let parts = js_sys::Array::of1(&Uint8Array::from(bytes));
        File::new_with_u8_array_sequence(&parts, name).unwrap()
    }

    #[test]
    async fn files_are_read_with_progress() {
        let weights: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let files = vec![
            file("config.json", br#"{"_name_or_path": "tiny-test"}"#),
            file("vocab.txt", b"[PAD]\n[UNK]\n"),
            file("model.safetensors", &weights),
            file("README.md", b"hello"),
        ];
        let status = RwSignal::new(Status::Idle);
        let (picked, ignored, total) = read_checkpoint(files, status).await.unwrap();
        assert_eq!(picked.name, "tiny-test");
        assert_eq!(picked.vocab_txt, "[PAD]\n[UNK]\n");
        assert_eq!(picked.tokenizer_config_json, None);
        assert_eq!(picked.safetensors, weights);
        assert_eq!(ignored, vec!["README.md".to_string()]);
        assert_eq!(total, 300_000 + 30 + 12);
        let Status::Reading(last) = status.get_untracked() else {
            panic!("no progress shown")
        };
        assert_eq!(last.file, "model.safetensors");
        assert!(last.done > 42 && last.done <= total, "{last:?}");

        let bad = vec![
            file("config.json", &[0xc3, 0x28]),
            file("vocab.txt", b"a"),
            file("model.safetensors", b"x"),
        ];
        let e = read_checkpoint(bad, status).await.unwrap_err();
        assert!(e.contains("config.json is not UTF-8"), "{e}");
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
        let got = RwSignal::new(None::<PickedCheckpoint>);
        let off = RwSignal::new(false);
        let on_loaded = Callback::new(move |p: PickedCheckpoint| got.set(Some(p)));
        let _handle = leptos::mount::mount_to(container.clone(), move || {
            view! { <LoadCheckpoint on_loaded=on_loaded disabled=off/> }
        });
        tick(10).await;
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
        tick(30).await;
        assert!(text().contains("Missing model.safetensors"), "{}", text());
        assert_eq!(got.get_untracked(), None);

        off.set(true);
        tick(10).await;
        assert!(input.disabled());
        let three = [
            file("config.json", b"{}"),
            file("vocab.txt", b"[PAD]"),
            file("model.safetensors", &[7; 10]),
        ];
        pick(&input, &three);
        tick(30).await;
        assert_eq!(got.get_untracked(), None, "a disabled picker reads nothing");

        off.set(false);
        tick(10).await;
        pick(&input, &three);
        tick(50).await;
        let picked = got.get_untracked().expect("the files were handed over");
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

    #[test]
    fn downloads_go_through_a_temporary_link() {
        use std::cell::RefCell;
        use std::rc::Rc;
        use wasm_bindgen::closure::Closure;
        // Catch the clicks so the test saves nothing to disk.
        let seen = Rc::new(RefCell::new(Vec::new()));
        let record = seen.clone();
        let catch = Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
            if let Some(a) = ev
                .target()
                .and_then(|t| t.dyn_into::<HtmlAnchorElement>().ok())
            {
                ev.prevent_default();
                record.borrow_mut().push((a.download(), a.href()));
            }
        });
        let doc = web_sys::window().unwrap().document().unwrap();
        doc.add_event_listener_with_callback_and_bool(
            "click",
            catch.as_ref().unchecked_ref(),
            true,
        )
        .unwrap();
        let result = download_files(&[
            ("notes.txt", b"hello", "text/plain"),
            ("model.safetensors", &[1, 2, 3], "application/octet-stream"),
        ]);
        doc.remove_event_listener_with_callback_and_bool(
            "click",
            catch.as_ref().unchecked_ref(),
            true,
        )
        .unwrap();
        result.unwrap();
        let seen = seen.borrow();
        assert_eq!(
            seen.iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>(),
            ["notes.txt", "model.safetensors"]
        );
        assert!(
            seen.iter().all(|(_, href)| href.starts_with("blob:")),
            "{seen:?}"
        );
        assert!(
            doc.query_selector("a[download]").unwrap().is_none(),
            "a link was left in the page"
        );
    }
}
