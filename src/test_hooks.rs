//! Hooks for end-to-end tests, defined only when the page's URL has `?test-hooks`, so no user
//! reaches them by accident: `window.__attentionLabTest.crashWorker(kind)` makes the training
//! worker die (`"panic"`, `"panic-later"` or `"out-of-memory"`, or one of its gradient workers,
//! `"gradient-worker"`, or its claim worker, `"claim-worker"`; see `protocol::Crash`), and `losses()` reads model A's loss curve
//! (`losses("b")` model B's). `hub()` is the Hub's address, which a test may point at a local
//! server laid out as the Hub.

use crate::live::Live;
use leptos::prelude::WithUntracked;
use protocol::{Crash, ToWorker};
use wasm_bindgen::prelude::*;

pub fn install(live: Live) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let crash = Closure::<dyn Fn(String) -> Result<(), JsValue>>::new(move |kind: String| {
        let how = match kind.as_str() {
            "panic" => Crash::Panic,
            "panic-later" => Crash::PanicLater,
            "out-of-memory" => Crash::OutOfMemory,
            "gradient-worker" => Crash::GradientWorker,
            "claim-worker" => Crash::ClaimWorker,
            _ => return Err(JsValue::from_str(&format!("no crash called {kind:?}"))),
        };
        live.send(ToWorker::Crash(how));
        Ok(())
    });
    // Every loss point of model A's curve (`losses("b")`: Compare's model B's), as JSON
    // `[[step, loss], …]`: the tests compare runs.
    let losses = Closure::<dyn Fn(JsValue) -> String>::new(move |which: JsValue| {
        let curves = match which.as_string().as_deref() {
            Some("b") => live.curves_b,
            _ => live.curves,
        };
        curves.with_untracked(|c| {
            let points: Vec<(u64, f32)> = c.points().iter().map(|p| (p.step, p.loss)).collect();
            serde_json::to_string(&points).unwrap_or_default()
        })
    });
    let hooks = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&hooks, &"crashWorker".into(), crash.as_ref());
    let _ = js_sys::Reflect::set(&hooks, &"losses".into(), losses.as_ref());
    crash.forget();
    losses.forget();
    let _ = js_sys::Reflect::set(&window, &"__attentionLabTest".into(), &hooks);
}

/// Where a test keeps the address of its Hub (localStorage), read only with `?test-hooks`.
pub const TEST_HUB_KEY: &str = "test-hub";

/// The Hugging Face Hub's address (`protocol::remote::HUB`); in a page opened with
/// `?test-hooks`, the one a test left in localStorage under `TEST_HUB_KEY`: a local server
/// laid out as the Hub (`ORG/NAME/resolve/REVISION/FILE`).
pub fn hub() -> String {
    let test = crate::link::switches().contains(&"test-hooks");
    test.then(|| crate::storage::load_text(TEST_HUB_KEY))
        .flatten()
        .unwrap_or_else(|| protocol::remote::HUB.to_string())
}
