//! What the pre-training heads make of the text: top-5 tokens for each [MASK], and P(IsNext)
//! for a pair. Numbers straight from the inspection.

use super::tokens::is_pair;
use engine::inspect::Inspection;
use leptos::prelude::*;
use protocol::ModelInfo;
use std::sync::Arc;

/// A probability as the page writes it: "23.4%", or "<0.1%".
pub fn percent(p: f32) -> String {
    if p > 0.0 && p < 0.001 {
        "<0.1%".into()
    } else {
        format!("{:.1}%", p * 100.0)
    }
}

#[component]
pub fn Predictions(
    ins: Memo<Option<Arc<Inspection>>>,
    info: Signal<Option<ModelInfo>>,
) -> impl IntoView {
    let has_heads = move || info.with(|i| i.as_ref().is_none_or(|i| i.kind.has_heads()));
    let body = move || {
        ins.with(|ins| {
            let ins = ins.as_ref()?;
            if info.with(|i| i.as_ref().is_some_and(|i| i.kind.next_token())) {
                return Some(
                    view! { <p class="hint">"A decoder predicts the token after each position, not a masked one: use Generate to see its next-token candidates."</p> }
                        .into_any(),
                );
            }
            if !has_heads() {
                return Some(
                    view! { <p class="hint">"This model has no pre-training heads, so it makes no predictions."</p> }
                        .into_any(),
                );
            }
            let masks = ins
                .mask_predictions
                .iter()
                .map(|m| {
                    let top = m
                        .top
                        .iter()
                        .map(|c| {
                            view! {
                                <li>
                                    <span class="cand">{c.token.clone()}</span>
                                    <span class="bar"><span style:width=format!("{:.1}%", c.probability * 100.0)></span></span>
                                    <span class="p">{percent(c.probability)}</span>
                                </li>
                            }
                        })
                        .collect_view();
                    let verdict = m.answer.as_ref().map(|answer| {
                        let right = m.correct == Some(true);
                        view! {
                            <span class="verdict" class:right=right class:wrong=!right
                                data-correct=right.to_string()>
                                {if right { format!("✓ right: {answer}") } else { format!("✗ wrong: the answer is {answer}") }}
                            </span>
                        }
                    });
                    view! {
                        <div class="prediction">
                            <span class="where">"[MASK] #" {m.position}</span>
                            {verdict}
                            <ol class="top5" aria-label=format!("Top 5 for the [MASK] at #{}", m.position)>{top}</ol>
                        </div>
                    }
                })
                .collect_view();
            let nsp = (is_pair(ins)).then(|| {
                ins.p_is_next.map(|p| {
                    view! {
                        <div class="prediction nsp" title="Next-sentence prediction: the probability that B really follows A">
                            <span class="where">"P(IsNext)"</span>
                            <span class="nsp-value">{percent(p)}</span>
                        </div>
                    }
                })
            });
            let hint = (ins.mask_predictions.is_empty()).then(|| {
                view! { <p class="hint">"Type [MASK] in a sentence to see the model's top 5 guesses for it."</p> }
            });
            Some(view! { {masks} {nsp} {hint} }.into_any())
        })
    };
    view! { <div class="predictions" aria-label="Predictions">{body}</div> }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn percentages_keep_one_decimal_and_say_when_tiny() {
        assert_eq!(percent(0.234), "23.4%");
        assert_eq!(percent(1.0), "100.0%");
        assert_eq!(percent(0.0004), "<0.1%");
        assert_eq!(percent(0.0), "0.0%");
    }
}
