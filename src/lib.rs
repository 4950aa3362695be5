//! Attention Lab's web app: the page (thin Leptos views over signals) and the web worker's glue
//! around `worker_core` (which owns the model). The engine and the worker core compute; the page
//! formats what they send (`format`) and the glue moves it; both speak `protocol`.
//!
//! Imports point one way: page modules → `worker_client`/`storage` → `protocol` → engine data;
//! the worker's glue (`worker`) → `worker_core`, `storage` → `protocol` → engine. No page module
//! imports the worker's, nor the other way round. Both use `tasks` (a new task without the timer
//! clamp).

mod alerts;
mod app;
pub mod chart_style;
pub mod claims;
pub mod components;
mod embed;
pub mod explorer;
pub mod format;
pub mod heatmap;
pub mod js;
mod keys;
pub mod link;
pub mod live;
pub mod paint;
mod panel;
pub mod pytorch;
pub mod reading;
mod resize;
pub mod storage;
pub mod svg;
pub mod tasks;
mod test_hooks;
#[doc(hidden)]
pub mod testing;
pub mod tour;
pub mod training;
pub mod worker;
pub mod worker_client;
pub mod worker_io;

pub use app::App;

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
