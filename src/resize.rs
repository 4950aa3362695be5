//! Calls back whenever an element changes size (a `ResizeObserver`), for as long as the
//! reactive owner that asked lives: a side panel shown or hidden, a page that grows.

use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

/// `changed` runs when `element`'s size changes (and once when observing starts).
pub fn on_resize(element: &web_sys::Element, changed: impl FnMut() + 'static) {
    // Handed to JS for good: it outlives the observer, so it is never called after a drop.
    let callback = Closure::<dyn FnMut()>::new(changed).into_js_value();
    let Ok(observer) = web_sys::ResizeObserver::new(callback.unchecked_ref()) else {
        return;
    };
    observer.observe(element);
    let observer = StoredValue::new_local(observer);
    on_cleanup(move || {
        observer.try_with_value(|o| o.disconnect());
    });
}
