//! The probe: "Sentence", "Second sentence", "Pad to", "Mask", "Window" and "Attention". Every
//! edit goes straight into the `probe` signal; the app answers with a new inspection. A bad
//! value is a message next to its field and changes nothing.

use engine::MaskMode;
use leptos::prelude::*;
use protocol::rules::{self, pad_to as parse_pad_to};
use protocol::settings::REPEAT_SENTENCE;
use protocol::{ProbeInput, ProbeKernel};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Radio groups need a page-unique name; several explorers may be mounted (tests).
fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// One of the probe's text fields: it shows `get`'s string, and every edit goes straight into
/// `set`'s. `class` adds to "field text" (tests find the Target by it).
fn text_field(
    probe: RwSignal<ProbeInput>,
    (label, class, title, placeholder): (
        &'static str,
        &'static str,
        Option<&'static str>,
        &'static str,
    ),
    get: fn(&ProbeInput) -> &String,
    set: fn(&mut ProbeInput) -> &mut String,
) -> impl IntoView {
    view! {
        <label class=format!("field text {class}") title=title>
            <span class="field-label">{label}</span>
            <input type="text" spellcheck="false" autocomplete="off" placeholder=placeholder
                prop:value=move || probe.with(|p| get(p).clone())
                on:input=move |ev| probe.update(|p| *set(p) = event_target_value(&ev))/>
        </label>
    }
}

/// `tokens`: T of the text last read (the window's upper bound), None before any. `linear`:
/// the model has linear attention, which has neither a window nor tiles. `decoder`: its
/// attention is causal whatever the Mask says. `encoder_decoder`: the Sentence is the source
/// and "Target" replaces "Second sentence"; each attention's mask is fixed.
#[component]
pub fn ProbeForm(
    probe: RwSignal<ProbeInput>,
    #[prop(into)] tokens: Signal<Option<usize>>,
    #[prop(into)] linear: Signal<bool>,
    #[prop(into, optional)] decoder: Signal<bool>,
    #[prop(into, optional)] encoder_decoder: Signal<bool>,
    #[prop(into, optional)] repeat: Signal<bool>,
) -> impl IntoView {
    // An encoder–decoder's masks are fixed: padding in the encoder and across, causal in the
    // decoder. Its inspection has no window or tiles.
    let fixed_mask = Signal::derive(move || decoder.get() || encoder_decoder.get());
    let no_window = Signal::derive(move || linear.get() || encoder_decoder.get());
    let pad_text = RwSignal::new(
        probe.with_untracked(|p| p.pad_to.map(|n| n.to_string()).unwrap_or_default()),
    );
    let pad_error = Memo::new(move |_| pad_text.with(|t| parse_pad_to(t).err()));
    // A probe set from outside (a link, the tour) replaces the draft; one the draft already
    // says (the user typed it) leaves the draft as typed.
    Effect::watch(
        move || probe.with(|p| p.pad_to),
        move |&n, _, _| {
            if pad_text.with_untracked(|t| parse_pad_to(t).ok()) != Some(n) {
                pad_text.set(n.map(|n| n.to_string()).unwrap_or_default());
            }
        },
        false,
    );
    let on_pad = move |ev| {
        let text = event_target_value(&ev);
        // A bad value leaves the probe as it was and says why.
        if let Ok(n) = parse_pad_to(&text) {
            probe.update(|p| p.pad_to = n);
        }
        pad_text.set(text);
    };
    let window_text = RwSignal::new(
        probe.with_untracked(|p| p.window.map(|n| n.to_string()).unwrap_or_default()),
    );
    // Checked against the T of the text on screen, as it changes.
    let window_error =
        Memo::new(move |_| window_text.with(|t| rules::window(t, tokens.get()).err()));
    Effect::watch(
        move || probe.with(|p| p.window),
        move |&w, _, _| {
            if window_text.with_untracked(|t| rules::window(t, None).ok()) != Some(w) {
                window_text.set(w.map(|w| w.to_string()).unwrap_or_default());
            }
        },
        false,
    );
    let on_window = move |ev| {
        let text = event_target_value(&ev);
        if let Ok(w) = rules::window(&text, tokens.get_untracked()) {
            probe.update(|p| p.window = w);
        }
        window_text.set(text);
    };
    let on_kernel = move |ev| {
        if let Ok(k) = rules::kernel(&event_target_value(&ev)) {
            probe.update(|p| p.attention = k);
        }
    };
    let kernel_option = move |k: ProbeKernel| {
        view! {
            <option value=k.name() prop:selected=move || probe.with(|p| p.attention == k)>{k.name()}</option>
        }
    };
    let group = unique_name("mask");
    let mask_radio = move |mode: MaskMode, label: &'static str, hint: &'static str| {
        view! {
            <label class="radio" title=hint>
                <input type="radio" name=group.clone() value=label
                    prop:disabled=fixed_mask
                    prop:checked=move || if fixed_mask.get() { mode == MaskMode::Causal } else { probe.with(|p| p.mask == mode) }
                    on:change=move |_| probe.update(|p| p.mask = mode)/>
                <span>{label}</span>
            </label>
        }
    };
    view! {
        <div class="probe-form">
            {text_field(probe, ("Sentence", "", None, "Type a sentence; [MASK] hides a word"),
                |p| &p.text, |p| &mut p.text)}
            {move || if encoder_decoder.get() {
                text_field(probe, ("Target", "target",
                    Some("The decoder reads [CLS] and these tokens; Generate fills it with what the model writes for the Sentence."),
                    "The output: press Generate, or type one"),
                    |p| &p.target, |p| &mut p.target).into_any()
            } else {
                text_field(probe, ("Second sentence", "", None, "Optional: makes a [CLS] A [SEP] B [SEP] pair"),
                    |p| &p.pair, |p| &mut p.pair).into_any()
            }}
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
            <label class="field window" title="Sliding window W: query i sees key j only if |i − j| < W (with Causal: the W keys up to itself). Empty: no window.">
                <span class="field-label">"Window"</span>
                <input type="text" inputmode="numeric" spellcheck="false" autocomplete="off" placeholder="none"
                    prop:value=move || window_text.get() on:input=on_window prop:disabled=no_window
                    aria-invalid=move || window_error.with(Option::is_some).to_string()/>
            </label>
            <label class="field kernel" title="Full: the whole T×T weight matrix. Tiled: FlashAttention-2 blocks with an online softmax; the same weights.">
                <span class="field-label">"Attention"</span>
                <select on:change=on_kernel prop:disabled=no_window>
                    {kernel_option(ProbeKernel::Full)}
                    {kernel_option(ProbeKernel::Tiled)}
                </select>
            </label>
            </div>
        </div>
        {move || pad_error.get().map(|e| view! { <p class="field-error" role="alert">{e.to_string()}</p> })}
        {move || (!no_window.get()).then(|| window_error.get()).flatten().map(|e| view! { <p class="field-error window-error" role="alert">{e.to_string()}</p> })}
        {move || encoder_decoder.get().then(|| view! {
            <p class="hint decoder-note">"An encoder–decoder: the Sentence is the source the encoder reads (padding mask), the Target what the decoder writes (causal). Cross-attention lets every target token read every real source token."</p>
        })}
        {move || decoder.get().then(|| view! {
            <p class="hint decoder-note">"A decoder's attention is always causal: it was trained to predict each next token without seeing it."</p>
        })}
        {move || repeat.get().then(|| view! {
            <p class="hint repeat-note">
                "This model trains on Repeat: a segment of symbols, then the same again. Its words are the symbols a–z and 0–9. "
                <button type="button" data-repeat-example
                    on:click=move |_| probe.update(|p| { p.text = REPEAT_SENTENCE.into(); p.pair.clear(); })>
                    "Use a Repeat example"
                </button>
                " Once it copies, an induction head's weights form a stripe 11 places left of the diagonal: each token of the second copy looks at the token after its earlier occurrence."
            </p>
        })}
        {move || linear.get().then(|| view! {
            <p class="hint linear-note">"Linear attention has no window and no tiles: its running sums cover every key, and no T×T matrix is formed."</p>
        })}
    }
}
