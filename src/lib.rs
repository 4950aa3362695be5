//! Attention Lab's web app: thin Leptos views over signals. It does no maths: the engine
//! computes, the app draws what the engine hands it.

mod alerts;
mod app;
pub mod components;
pub mod explorer;
pub mod heatmap;
pub mod lab;
pub mod live;
pub mod paint;
mod panel;
pub mod protocol;
pub mod restore;
pub mod rules;
pub mod session;
mod test_hooks;
#[doc(hidden)]
pub mod testing;
pub mod training;
pub mod worker;
pub mod worker_client;
pub mod worker_io;

pub use app::App;

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
