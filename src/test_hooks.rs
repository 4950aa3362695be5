//! Hooks for end-to-end tests, defined only when the page's URL has `?test-hooks`, so no user
//! reaches them by accident: `window.__attentionLabTest.crashWorker(kind)` makes the training
//! worker die (`"panic"`, `"panic-later"` or `"out-of-memory"`; see `protocol::Crash`).

use crate::live::Live;
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
            _ => return Err(JsValue::from_str(&format!("no crash called {kind:?}"))),
        };
        live.send(ToWorker::Crash(how));
        Ok(())
    });
    let hooks = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&hooks, &"crashWorker".into(), crash.as_ref());
    crash.forget();
    let _ = js_sys::Reflect::set(&window, &"__attentionLabTest".into(), &hooks);
}
