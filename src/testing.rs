//! Support for the browser tests (wasm-bindgen-test), in src/**/tests and tests/*.rs alike.
//! Not used by the app itself.

/// Wait `ms` milliseconds, so Leptos (which updates the DOM asynchronously) and timers catch up.
pub async fn tick(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window()
            .expect("tests run in a window")
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
            .expect("setTimeout works");
    });
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .expect("a timer never rejects");
}
