use crate::explorer::Explorer;
use crate::lab::{Lab, ModelInfo, ProbeInput, DEFAULT_CORPUS};
use engine::inspect::Inspection;
use leptos::prelude::*;
use std::sync::Arc;

/// The latest inspection of the probe, or the message explaining why there is none.
pub type Shown = Option<Result<Arc<Inspection>, String>>;

#[component]
pub fn App() -> impl IntoView {
    let lab = StoredValue::new_local(Lab::fresh(DEFAULT_CORPUS, 0));
    let probe = RwSignal::new(ProbeInput::default());
    let inspection = RwSignal::new(None::<Result<Arc<Inspection>, String>>);
    let info = RwSignal::new(lab.with_value(|l| l.as_ref().ok().map(Lab::info)));

    // The lab is the outside world here (later: a worker); ask it whenever the probe changes.
    Effect::new(move |_| {
        let p = probe.get();
        let result = lab.with_value(|l| match l {
            Ok(lab) => lab.inspect(&p).map(Arc::new),
            Err(e) => Err(e.clone()),
        });
        inspection.set(Some(result));
    });

    view! {
        <header>
            <h1>"Attention Lab"</h1>
            <span class="model-name">{move || info.get().map(|i: ModelInfo| i.name).unwrap_or_default()}</span>
        </header>
        <main>
            <Explorer probe=probe inspection=inspection.into() info=Signal::derive(move || info.get())/>
        </main>
    }
}
