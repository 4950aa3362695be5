//! The PyTorch module and the notebook's template, fetched beside the page the first time a
//! code view opens (they are text the wasm need not carry), and kept for the visit.

use crate::js::js_message;
use leptos::prelude::*;
use protocol::pytorch::{PytorchModule, MODULE_PATH, TEMPLATE_PATH};
use protocol::{LabError, LabResult};
use std::sync::Arc;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// The two files as the page reads them.
#[derive(Debug, PartialEq)]
pub struct Fetched {
    /// The module read: its marks and the text the page shows.
    pub module: PytorchModule,
    /// The module as the repository holds it, marks and all: what the notebook runs.
    pub source: String,
    pub template: String,
}

/// The fetch's state, shared by every code view of the page (a context).
#[derive(Clone, Copy)]
pub struct PytorchFiles {
    /// None until they arrive (or the fetch fails, with why).
    pub fetched: RwSignal<Option<LabResult<Arc<Fetched>>>>,
    started: StoredValue<bool>,
}

impl PytorchFiles {
    /// The page's, or new ones where nobody provided them (an embed, a test).
    pub fn in_context() -> PytorchFiles {
        use_context::<PytorchFiles>().unwrap_or_else(|| {
            let files = PytorchFiles {
                fetched: RwSignal::new(None),
                started: StoredValue::new(false),
            };
            provide_context(files);
            files
        })
    }

    /// Fetch them, once; again after a failure.
    pub fn want(self) {
        let failed = self.fetched.with_untracked(|f| matches!(f, Some(Err(_))));
        if self.started.get_value() && !failed {
            return;
        }
        self.started.set_value(true);
        let fetched = self.fetched;
        leptos::task::spawn_local(async move {
            fetched.set(Some(fetch_both().await.map(Arc::new)));
        });
    }
}

async fn fetch_both() -> LabResult<Fetched> {
    let source = fetch_text(MODULE_PATH).await?;
    let template = fetch_text(TEMPLATE_PATH).await?;
    Ok(Fetched {
        module: PytorchModule::parse(&source)?,
        source,
        template,
    })
}

/// A file beside the page, as text.
async fn fetch_text(path: &str) -> LabResult<String> {
    let failed = |why: String| LabError::browser(format!("Could not fetch {path}: {why}"));
    let window = web_sys::window().ok_or_else(|| failed("no window".into()))?;
    let response = JsFuture::from(window.fetch_with_str(path))
        .await
        .map_err(|e| failed(js_message(&e)))?;
    let response: web_sys::Response = response
        .dyn_into()
        .map_err(|_| failed("not a response".into()))?;
    if !response.ok() {
        return Err(failed(format!("HTTP {}", response.status())));
    }
    let text = response.text().map_err(|e| failed(js_message(&e)))?;
    JsFuture::from(text)
        .await
        .map_err(|e| failed(js_message(&e)))?
        .as_string()
        .ok_or_else(|| failed("not text".into()))
}
