//! The probe: "Sentence", "Second sentence", "Pad to" and "Mask". Every edit goes straight
//! into the `probe` signal; the app answers with a new inspection.

use engine::MaskMode;
use leptos::prelude::*;
use protocol::rules::pad_to as parse_pad_to;
use protocol::ProbeInput;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Radio groups need a page-unique name; several explorers may be mounted (tests).
fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

#[component]
pub fn ProbeForm(probe: RwSignal<ProbeInput>) -> impl IntoView {
    let pad_text = RwSignal::new(
        probe.with_untracked(|p| p.pad_to.map(|n| n.to_string()).unwrap_or_default()),
    );
    let pad_error = Memo::new(move |_| pad_text.with(|t| parse_pad_to(t).err()));
    let on_pad = move |ev| {
        let text = event_target_value(&ev);
        // A bad value leaves the probe as it was and says why.
        if let Ok(n) = parse_pad_to(&text) {
            probe.update(|p| p.pad_to = n);
        }
        pad_text.set(text);
    };
    let group = unique_name("mask");
    let mask_radio = move |mode: MaskMode, label: &'static str, hint: &'static str| {
        view! {
            <label class="radio" title=hint>
                <input type="radio" name=group.clone() value=label
                    prop:checked=move || probe.with(|p| p.mask == mode)
                    on:change=move |_| probe.update(|p| p.mask = mode)/>
                <span>{label}</span>
            </label>
        }
    };
    view! {
        <div class="probe-form">
            <label class="field text">
                <span class="field-label">"Sentence"</span>
                <input type="text" spellcheck="false" autocomplete="off"
                    placeholder="Type a sentence; [MASK] hides a word"
                    prop:value=move || probe.with(|p| p.text.clone())
                    on:input=move |ev| probe.update(|p| p.text = event_target_value(&ev))/>
            </label>
            <label class="field text">
                <span class="field-label">"Second sentence"</span>
                <input type="text" spellcheck="false" autocomplete="off"
                    placeholder="Optional: makes a [CLS] A [SEP] B [SEP] pair"
                    prop:value=move || probe.with(|p| p.pair.clone())
                    on:input=move |ev| probe.update(|p| p.pair = event_target_value(&ev))/>
            </label>
            <div class="options">
            <label class="field pad">
                <span class="field-label">"Pad to"</span>
                <input type="number" min="0" step="1" inputmode="numeric" placeholder="none"
                    prop:value=move || pad_text.get() on:input=on_pad
                    aria-invalid=move || pad_error.with(Option::is_some).to_string()/>
            </label>
            <fieldset class="field mask-choice">
                <legend class="field-label">"Mask"</legend>
                <div class="segmented">
                    {mask_radio(MaskMode::None, "None", "No mask at all: every query sees every key, [PAD] included")}
                    {mask_radio(MaskMode::Padding, "Padding", "Hide [PAD] keys from every query")}
                    {mask_radio(MaskMode::Causal, "Causal", "Padding, and each query sees only itself and earlier keys")}
                </div>
            </fieldset>
            </div>
        </div>
        {move || pad_error.get().map(|e| view! { <p class="field-error" role="alert">{e.to_string()}</p> })}
    }
}
