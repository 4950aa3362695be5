//! "Generate", for decoders: the controls (Greedy or Sample, Temperature, Top-k, Max new), the
//! tokens as they arrive (`data-generated`), the KV cache they fill (`data-kv-bytes`) and the
//! five most probable candidates at each step. The heatmaps above show the inspection of the
//! sequence so far, so the causal triangle gains a row per token.

use crate::format::{format_bytes, thousands};
use crate::live::Generation;
use leptos::prelude::*;
use protocol::{GenerationSettings, GenerationStep};

/// A field's text read as a whole number or a number; the message says which field.
fn parse<T: std::str::FromStr>(label: &str, text: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{label}: {:?} is not a number", text.trim()))
}

/// The controls' texts as settings; the engine checks the ranges (Temperature above 0, …).
fn settings_of(
    sample: bool,
    temperature: &str,
    top_k: &str,
    max_new: &str,
) -> Result<GenerationSettings, String> {
    Ok(GenerationSettings {
        max_new: parse("Max new", max_new)?,
        sample,
        temperature: parse("Temperature", temperature)?,
        top_k: match top_k.trim() {
            "" => None,
            k => Some(parse("Top-k", k)?),
        },
        seed: 0,
    })
}

#[component]
pub fn GeneratePanel(
    generation: Signal<Generation>,
    on_generate: Callback<GenerationSettings>,
    on_stop: Callback<()>,
    /// An encoder–decoder writes the Sentence's target rather than its continuation.
    #[prop(into, optional)]
    encoder_decoder: Signal<bool>,
) -> impl IntoView {
    let defaults = GenerationSettings::default();
    let sample = RwSignal::new(defaults.sample);
    let temperature = RwSignal::new(defaults.temperature.to_string());
    let top_k = RwSignal::new(defaults.top_k.map(|k| k.to_string()).unwrap_or_default());
    let max_new = RwSignal::new(defaults.max_new.to_string());
    let problem = RwSignal::new(None::<String>);
    let running = move || generation.with(|g| g.running);
    // Each Generate samples with the next seed: another draw each press, the same sequence of
    // draws on every visit.
    let presses = StoredValue::new(0u64);
    let start = move |_| {
        let read = settings_of(
            sample.get_untracked(),
            &temperature.get_untracked(),
            &top_k.get_untracked(),
            &max_new.get_untracked(),
        );
        match read {
            Ok(settings) => {
                problem.set(None);
                let seed = presses.get_value();
                presses.set_value(seed + 1);
                on_generate.run(GenerationSettings { seed, ..settings });
            }
            Err(e) => problem.set(Some(e)),
        }
    };
    let mode = move |is_sample: bool, label: &'static str, hint: &'static str| {
        view! {
            <button type="button" title=hint aria-pressed=move || (sample.get() == is_sample).to_string()
                on:click=move |_| sample.set(is_sample)>{label}</button>
        }
    };
    let field = move |label: &'static str,
                      class: &'static str,
                      value: RwSignal<String>,
                      greedy_off: bool| {
        view! {
            <label class=format!("field {class}")>
                <span class="field-label">{label}</span>
                <input type="text" inputmode="decimal" spellcheck="false" autocomplete="off"
                    prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev))
                    prop:disabled=move || greedy_off && !sample.get()/>
            </label>
        }
    };
    let generated_json = move || {
        generation.with(|g| {
            serde_json::to_string(&g.steps.iter().map(|s| &s.token).collect::<Vec<_>>())
                .unwrap_or_default()
        })
    };
    let last = move || generation.with(|g| g.steps.last().cloned());
    view! {
        <div class="generate-card">
            <div class="generate-controls">
                <div class="segmented decoding" role="group" aria-label="Decoding">
                    {mode(false, "Greedy", "Always the most probable token")}
                    {mode(true, "Sample", "Draw each token from softmax(logits / Temperature), among the Top-k most probable")}
                </div>
                {field("Temperature", "temperature", temperature, true)}
                {field("Top-k", "top-k", top_k, true)}
                {field("Max new", "max-new", max_new, false)}
                {move || if running() {
                    view! { <button type="button" class="stop-generating" on:click=move |_| on_stop.run(())>"Stop"</button> }.into_any()
                } else {
                    view! { <button type="button" class="primary generate" on:click=start>"Generate"</button> }.into_any()
                }}
            </div>
            <p class="why">"Why causal: a generated token can only look back. Each position was trained to predict the next token without seeing it, and while generating the next token does not exist yet."</p>
            {move || problem.get().or_else(|| generation.with(|g| g.error.as_ref().map(|e| e.to_string())))
                .map(|e| view! { <p class="field-error" role="alert">{e}</p> })}
            <p class="generated" data-generated=generated_json data-running=move || running().to_string()>
                {move || generation.with(|g| g.prompt.is_empty()).then(|| view! {
                    <span class="hint">{move || if encoder_decoder.get() {
                        "The target for the Sentence appears here, a token at a time, then fills the Target; each token adds a row to the decoder's heatmaps."
                    } else {
                        "The continuation of the Sentence appears here, a token at a time, and each token adds a row to the heatmaps below."
                    }}</span>
                })}
                {move || generation.with(|g| g.prompt.iter().map(|t| view! { <span class="token prompt">{t.clone()}</span> }).collect_view())}
                {move || generation.with(|g| g.steps.iter().map(|s| view! {
                    <span class="token new" title=format!("p = {:.3}", s.prob)>{s.token.clone()}</span>
                }).collect_view())}
            </p>
            {move || last().map(|s| kv_readout(&s, generation.with(|g| g.prompt.len() + g.steps.len())))}
            <p class="why">"The KV cache keeps every earlier token's keys and values, so each new token computes only its own q, k and v and attends over the cache, instead of running the whole sequence again."</p>
            {move || generation.with(|g| (!g.steps.is_empty()).then(|| candidates(&g.steps)))}
        </div>
    }
}

/// "KV cache: 4,096 bytes for 8 positions · without grouped K/V heads: 8,192".
fn kv_readout(step: &GenerationStep, positions: usize) -> impl IntoView {
    let grouped = step.kv_cache_bytes_ungrouped != step.kv_cache_bytes;
    let without = if grouped {
        format!(
            " · {} without grouped K/V heads",
            format_bytes(step.kv_cache_bytes_ungrouped as u64)
        )
    } else {
        " · the same without grouped K/V heads (this model has a K/V head per query head)".into()
    };
    // An encoder–decoder also keeps the source's cross-attention K and V, made once.
    let cross = step.cross_kv_bytes.map(|b| {
        format!(
            " · plus the source's cross-attention keys and values, computed once before the first token: {} bytes ({})",
            thousands(b),
            format_bytes(b as u64)
        )
    });
    view! {
        <p class="kv-cache" data-kv-bytes=step.kv_cache_bytes.to_string()
            data-cross-kv-bytes=step.cross_kv_bytes.map(|b| b.to_string())
            data-kv-bytes-ungrouped=step.kv_cache_bytes_ungrouped.to_string()>
            <b>"KV cache "</b>{format!("{} bytes ({}) for {positions} positions", thousands(step.kv_cache_bytes), format_bytes(step.kv_cache_bytes as u64))}
            {without}
            {cross}
        </p>
    }
}

/// Each step's chosen token and the five most probable candidates.
fn candidates(steps: &[GenerationStep]) -> impl IntoView {
    let rows = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let top = s
                .top
                .iter()
                .map(|(token, p)| {
                    let chosen = *token == s.token;
                    view! { <span class="candidate" class:chosen=chosen>{format!("{token} {:.0}%", p * 100.0)}</span> }
                })
                .collect_view();
            view! { <tr><td class="step">{i + 1}</td><td class="token">{s.token.clone()}</td><td class="top">{top}</td></tr> }
        })
        .collect_view();
    view! {
        <table class="candidates">
            <thead><tr><th>"#"</th><th>"token"</th><th>"top 5 candidates (probability before temperature and top-k)"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn fields_read_as_settings_and_bad_text_names_its_field() {
        let s = settings_of(true, "0.7", "", "9").unwrap();
        assert_eq!((s.max_new, s.temperature, s.top_k), (9, 0.7, None));
        assert_eq!(settings_of(false, "1", " 3 ", "2").unwrap().top_k, Some(3));
        let e = settings_of(true, "hot", "5", "9").unwrap_err();
        assert!(e.starts_with("Temperature"), "{e}");
        assert!(settings_of(true, "1", "5", "-3")
            .unwrap_err()
            .starts_with("Max new"));
        assert!(settings_of(true, "1", "🙂", "3")
            .unwrap_err()
            .starts_with("Top-k"));
    }
}
