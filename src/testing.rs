//! Support for the browser tests (wasm-bindgen-test), in src/**/tests and tests/*.rs alike.
//! Not used by the app itself.

/// Wait `ms` milliseconds. A wait that decides nothing (handing the page back to the browser in
/// a long loop); to see what the page did, wait for it with `settled` or `until`.
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

/// Resolves in a task of its own, after the tasks already queued with `tasks::next_task` (the
/// paint queue's among them) and after every microtask queued before it, which is where Leptos
/// runs its effects and updates the DOM.
pub async fn next_task() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        crate::tasks::next_task(move || {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        });
    });
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .expect("the promise only resolves");
}

/// Tasks `settled` lets pass before it calls the page stuck: far more than any draw queue here
/// needs, and a count, not a time.
const SETTLE_TASKS: usize = 10_000;

/// Waits until the page has done what it was given: Leptos's effects have run and the paint
/// queue (`paint`) is empty, so the DOM and every canvas in view show the current signals. It
/// ends on that state, not after a time.
pub async fn settled() {
    for _ in 0..SETTLE_TASKS {
        next_task().await;
        if crate::paint::pending() == 0 {
            return;
        }
    }
    panic!(
        "the page did not settle: {} draws still queued after {SETTLE_TASKS} tasks",
        crate::paint::pending()
    );
}

/// Wait until `done()` holds, looking every 10 ms, for at most `deadline_ms`, for work whose
/// length depends on how busy the machine is (files read through streams). The deadline is a
/// line a healthy run never comes near, not a measure. Says whether `done()` held.
pub async fn until(done: impl Fn() -> bool, deadline_ms: i32) -> bool {
    let mut waited = 0;
    while !done() {
        if waited >= deadline_ms {
            return false;
        }
        tick(10).await;
        waited += 10;
    }
    true
}

/// The downloads `act` starts, as (file name, href): every `<a download>` click on the page is
/// caught before the browser saves anything.
pub fn catch_downloads(act: impl FnOnce()) -> Vec<(String, String)> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;
    let seen = Rc::new(RefCell::new(Vec::new()));
    let record = seen.clone();
    let catch = Closure::<dyn FnMut(web_sys::Event)>::new(move |ev: web_sys::Event| {
        if let Some(a) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlAnchorElement>().ok())
        {
            ev.prevent_default();
            record.borrow_mut().push((a.download(), a.href()));
        }
    });
    let doc = web_sys::window()
        .and_then(|w| w.document())
        .expect("tests run in a window");
    doc.add_event_listener_with_callback_and_bool("click", catch.as_ref().unchecked_ref(), true)
        .expect("a listener can be added");
    act();
    doc.remove_event_listener_with_callback_and_bool("click", catch.as_ref().unchecked_ref(), true)
        .expect("a listener can be removed");
    let seen = seen.borrow().clone();
    seen
}

/// `text` parsed as SVG; panics with the text when it is not well-formed XML.
pub fn parse_svg(text: &str) -> web_sys::Document {
    let doc = web_sys::DomParser::new()
        .and_then(|p| p.parse_from_string(text, web_sys::SupportedType::ImageSvgXml))
        .expect("DOMParser works");
    assert!(
        doc.query_selector("parsererror").ok().flatten().is_none(),
        "not well-formed SVG:\n{text}"
    );
    doc
}

/// The elements of `doc` that match `selector`, in document order.
pub fn select_all(doc: &web_sys::Document, selector: &str) -> Vec<web_sys::Element> {
    use wasm_bindgen::JsCast;
    // querySelectorAll without web-sys's NodeList feature: Array.from(the NodeList).
    let find: js_sys::Function = js_sys::Reflect::get(doc, &"querySelectorAll".into())
        .expect("documents have querySelectorAll")
        .unchecked_into();
    let list = find.call1(doc, &selector.into()).expect("a valid selector");
    js_sys::Array::from(&list)
        .iter()
        .filter_map(|e| e.dyn_into::<web_sys::Element>().ok())
        .collect()
}
