//! What the browser says when it throws.

use js_sys::Reflect;
use wasm_bindgen::JsValue;

/// The browser's message inside a thrown value.
pub fn js_message(e: &JsValue) -> String {
    Reflect::get(e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "unknown error".into())
}
