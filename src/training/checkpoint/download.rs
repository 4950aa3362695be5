//! Handing files to the user as downloads.

use crate::js::js_message;
use engine::checkpoint::{CONFIG_FILE, TOKENIZER_CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE};
use js_sys::Uint8Array;
use protocol::{LabError, LabResult, ModelBundle};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, BlobPropertyBag, HtmlAnchorElement, Url};

/// returns, and a big file may take a moment to start.
const REVOKE_AFTER_MS: i32 = 60_000;

/// Offer `(file name, bytes, MIME type)` files as downloads, each through a Blob, an object URL
/// and a temporary `<a download>`; the URLs are revoked a minute later. Chrome asks once
/// whether the page may download several files.
pub fn download_files(files: &[(&str, &[u8], &str)]) -> LabResult<()> {
    let page = |what: &str| LabError::browser(format!("Could not download: {what}"));
    let window = web_sys::window().ok_or_else(|| page("no window"))?;
    let document = window.document().ok_or_else(|| page("no document"))?;
    let body = document.body().ok_or_else(|| page("no document body"))?;
    for &(name, bytes, mime) in files {
        let fail = |e: JsValue| {
            LabError::browser(format!("Could not download {name}: {}", js_message(&e)))
        };
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

/// A model's checkpoint files as downloads; with Compare, both models', told apart by an "A-"
/// or "B-" in front (which the checkpoint picker reads past).
pub fn download_checkpoint(bundle: &ModelBundle, compare: Option<&ModelBundle>) -> LabResult<()> {
    let prefix = |which: &str| match compare {
        Some(_) => format!("{which}-"),
        None => String::new(),
    };
    download_bundle(bundle, &prefix("A"))?;
    match compare {
        Some(b) => download_bundle(b, &prefix("B")),
        None => Ok(()),
    }
}

/// A bundle's checkpoint files as downloads, their names after `prefix`.
fn download_bundle(bundle: &ModelBundle, prefix: &str) -> LabResult<()> {
    let tokenizer_config = bundle.tokenizer_config_json.clone().unwrap_or_default();
    let name = |file: &str| format!("{prefix}{file}");
    let names = [
        name(CONFIG_FILE),
        name(WEIGHTS_FILE),
        name(VOCAB_FILE),
        name(TOKENIZER_CONFIG_FILE),
    ];
    download_files(&[
        (&names[0], bundle.config_json.as_bytes(), "application/json"),
        (
            &names[1],
            bundle.safetensors.as_slice(),
            "application/octet-stream",
        ),
        (&names[2], bundle.vocab_txt.as_bytes(), "text/plain"),
        (&names[3], tokenizer_config.as_bytes(), "application/json"),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

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
