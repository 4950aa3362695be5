//! The probe: "Sentence", "Second sentence" (or an encoder–decoder's "Target"), "Pad to",
//! "Mask", "Window" and "Attention", each input labelled and applied by its row of
//! `protocol::fields::PROBE`. Every edit goes straight into the `probe` signal; the app answers
//! with a new inspection. A bad value is a message next to its field and changes nothing.

use engine::MaskMode;
use leptos::prelude::*;
use protocol::fields::{self, Field};
use protocol::settings::REPEAT_SENTENCE;
use protocol::{LabError, ModelKind, ProbeInput, ProbeKernel};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A row of the probe's table. Its rule reads the T of the text last read.
type Row = &'static Field<ProbeInput, Option<usize>>;

/// Radio groups need a page-unique name; several explorers may be mounted (tests).
fn unique_name(prefix: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// `row`'s value as its box shows it: as a link writes it, empty for none.
fn text_of(row: Row, p: &ProbeInput) -> String {
    row.link
        .as_ref()
        .and_then(|l| (l.write)(p))
        .unwrap_or_default()
}

/// `row` set from `text` on a copy of `probe`: the probe it would make, or why not.
fn applied(
    row: Row,
    probe: &ProbeInput,
    text: &str,
    tokens: Option<usize>,
) -> Result<ProbeInput, LabError> {
    let mut next = probe.clone();
    row.apply(&mut next, text, tokens).map(|()| next)
}

/// `row` set from `text` in the probe, when its rule accepts it (against `tokens`).
fn set(probe: RwSignal<ProbeInput>, row: Row, text: &str, tokens: Option<usize>) {
    if let Ok(next) = probe.with_untracked(|p| applied(row, p, text, tokens)) {
        probe.set(next);
    }
}

/// One of the probe's text fields: every edit goes straight into the probe. `class` adds to
/// "field text" (tests find the Target by it).
fn text_field(
    probe: RwSignal<ProbeInput>,
    row: Row,
    class: &'static str,
    title: Option<&'static str>,
    placeholder: &'static str,
) -> impl IntoView {
    view! {
        <label class=format!("field text {class}") title=title>
            <span class="field-label">{row.label}</span>
            <input type="text" spellcheck="false" autocomplete="off" placeholder=placeholder
                id=(row.stored == fields::TEXT.stored).then_some("sentence")
                prop:value=move || probe.with(|p| text_of(row, p))
                on:input=move |ev| set(probe, row, &event_target_value(&ev), None)/>
        </label>
    }
}

/// A box whose text is a draft: it stays as typed, and the probe takes its value only when
/// the row's rule accepts it (against `tokens`, the T of the text on screen, as it changes).
/// A value set from outside (a link, the tour) replaces the draft; one the draft already says
/// (the user typed it) leaves the draft as typed.
#[derive(Clone, Copy)]
struct Draft {
    row: Row,
    text: RwSignal<String>,
    error: Memo<Option<LabError>>,
}

impl Draft {
    fn new(probe: RwSignal<ProbeInput>, row: Row, tokens: Signal<Option<usize>>) -> Draft {
        let text = RwSignal::new(probe.with_untracked(|p| text_of(row, p)));
        let error = Memo::new(move |_| {
            text.with(|t| probe.with(|p| applied(row, p, t, tokens.get()).err()))
        });
        Effect::watch(
            move || probe.with(|p| text_of(row, p)),
            move |value, _, _| {
                let says = text.with_untracked(|t| {
                    probe.with_untracked(|p| {
                        applied(row, p, t, None).is_ok_and(|q| text_of(row, &q) == *value)
                    })
                });
                if !says {
                    text.set(value.clone());
                }
            },
            false,
        );
        Draft { row, text, error }
    }

    /// The user typed `typed`: the probe takes it if the rule does.
    fn input(self, probe: RwSignal<ProbeInput>, tokens: Signal<Option<usize>>, typed: String) {
        set(probe, self.row, &typed, tokens.get_untracked());
        self.text.set(typed);
    }

    fn invalid(self) -> String {
        self.error.with(Option::is_some).to_string()
    }
}

/// `tokens`: T of the text last read (the window's upper bound), None before any. `linear`:
/// the model has linear attention, which has neither a window nor tiles. `kind`: a decoder's
/// attention is causal whatever the Mask says; an encoder–decoder's Sentence is the source and
/// "Target" replaces "Second sentence", and each of its attentions' masks is fixed.
#[component]
pub fn ProbeForm(
    probe: RwSignal<ProbeInput>,
    #[prop(into)] tokens: Signal<Option<usize>>,
    #[prop(into)] linear: Signal<bool>,
    #[prop(into, optional)] kind: Signal<ModelKind>,
) -> impl IntoView {
    let encoder_decoder = Signal::derive(move || kind.get().encoder_decoder());
    // An encoder–decoder's masks are fixed: padding in the encoder and across, causal in the
    // decoder. Its inspection has no window or tiles.
    let fixed_mask = Signal::derive(move || kind.get().decoder() || encoder_decoder.get());
    let no_window = Signal::derive(move || linear.get() || encoder_decoder.get());
    let pad = Draft::new(probe, &fields::PAD_TO, tokens);
    let window = Draft::new(probe, &fields::WINDOW, tokens);
    view! {
        <div class="probe-form">
            {text_field(probe, &fields::TEXT, "", None, "Type a sentence; [MASK] hides a word")}
            {move || if encoder_decoder.get() {
                text_field(probe, &fields::TARGET, "target",
                    Some("The decoder reads [CLS] and these tokens; Generate fills it with what the model writes for the Sentence."),
                    "The output: press Generate, or type one").into_any()
            } else {
                text_field(probe, &fields::PAIR, "", None, "Optional: makes a [CLS] A [SEP] B [SEP] pair").into_any()
            }}
            <div class="options">
            <label class="field pad">
                <span class="field-label">{fields::PAD_TO.label}</span>
                <input type="number" min="0" step="1" inputmode="numeric" placeholder="none"
                    prop:value=move || pad.text.get() on:input=move |ev| pad.input(probe, tokens, event_target_value(&ev))
                    aria-invalid=move || pad.invalid()/>
            </label>
            <MaskChoice probe=probe fixed=fixed_mask/>
            <label class="field window" title="Sliding window W: query i sees key j only if |i − j| < W (with Causal: the W keys up to itself). Empty: no window.">
                <span class="field-label">{fields::WINDOW.label}</span>
                <input type="text" inputmode="numeric" spellcheck="false" autocomplete="off" placeholder="none"
                    prop:value=move || window.text.get() on:input=move |ev| window.input(probe, tokens, event_target_value(&ev))
                    prop:disabled=no_window aria-invalid=move || window.invalid()/>
            </label>
            <label class="field kernel" title="Full: the whole T×T weight matrix. Tiled: FlashAttention-2 blocks with an online softmax; the same weights.">
                <span class="field-label">{fields::KERNEL.label}</span>
                <select on:change=move |ev| set(probe, &fields::KERNEL, &event_target_value(&ev), None)
                    prop:disabled=no_window>
                    {[ProbeKernel::Full, ProbeKernel::Tiled].map(|k| view! {
                        <option value=k.name() prop:selected=move || probe.with(|p| p.attention == k)>{k.name()}</option>
                    })}
                </select>
            </label>
            </div>
        </div>
        {move || pad.error.get().map(|e| view! { <p class="field-error" role="alert">{e.to_string()}</p> })}
        {move || (!no_window.get()).then(|| window.error.get()).flatten().map(|e| view! { <p class="field-error window-error" role="alert">{e.to_string()}</p> })}
        <ProbeNotes probe=probe kind=kind linear=linear/>
    }
}

/// "Mask": None, Padding or Causal; a decoder's and an encoder–decoder's are `fixed` (shown
/// as Causal).
#[component]
fn MaskChoice(probe: RwSignal<ProbeInput>, fixed: Signal<bool>) -> impl IntoView {
    let group = unique_name("mask");
    let radio = move |mode: MaskMode, label: &'static str, hint: &'static str| {
        view! {
            <label class="radio" title=hint>
                <input type="radio" name=group.clone() value=label
                    prop:disabled=fixed
                    prop:checked=move || if fixed.get() { mode == MaskMode::Causal } else { probe.with(|p| p.mask == mode) }
                    on:change=move |_| set(probe, &fields::MASK, fields::mask_name(mode), None)/>
                <span>{label}</span>
            </label>
        }
    };
    view! {
        <fieldset class="field mask-choice">
            <legend class="field-label">{fields::MASK.label}</legend>
            <div class="segmented">
                {radio(MaskMode::None, "None", "No mask at all: every query sees every key, [PAD] included")}
                {radio(MaskMode::Padding, "Padding", "Hide [PAD] keys from every query")}
                {radio(MaskMode::Causal, "Causal", "Padding, and each query sees only itself and earlier keys")}
            </div>
        </fieldset>
    }
}

/// What the probe means for a model of `kind`: an encoder–decoder's two sentences, a decoder's
/// causal attention, Repeat's symbols, linear attention's missing window.
#[component]
fn ProbeNotes(
    probe: RwSignal<ProbeInput>,
    kind: Signal<ModelKind>,
    linear: Signal<bool>,
) -> impl IntoView {
    view! {
        {move || kind.get().encoder_decoder().then(|| view! {
            <p class="hint decoder-note">"An encoder–decoder: the Sentence is the source the encoder reads (padding mask), the Target what the decoder writes (causal). Cross-attention lets every target token read every real source token."</p>
        })}
        {move || kind.get().decoder().then(|| view! {
            <p class="hint decoder-note">"A decoder's attention is always causal: it was trained to predict each next token without seeing it."</p>
        })}
        {move || kind.get().repeat().is_some().then(|| view! {
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
