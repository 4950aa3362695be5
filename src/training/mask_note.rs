//! What the training mask does to the NSP task, said beside the "Training mask" control.
//!
//! Under the causal mask query i sees keys j ≤ i only. [CLS] sits at position 0, so it attends
//! to itself alone in every layer: h_[CLS] is a function of the [CLS] embedding and its position
//! and segment, the same for every pair. The pooler reads h_[CLS] only, so the NSP classifier
//! gets one input for IsNext and NotNext alike and can do no better than chance.

use engine::batch::MaskMode;
use leptos::prelude::*;

/// NSP accuracy measured when training with the causal mask, as a fraction (0…1), with the
/// number of steps it was measured after. Measured with the CLI's `train` on the tiny preset and
/// the default corpus, seeds 0, 1, 2: the mean NSP accuracy over steps 1,801–2,000 was 0.51, 0.49
/// and 0.50 (with the padding mask, 0.85, 0.87 and 0.83). `None` would give the note no number.
pub const CAUSAL_NSP_MEASURED: Option<(f32, u64)> = Some((0.50, 2000));

/// The note for `mask`, if it has one: only the causal mask changes what NSP can learn.
pub fn training_mask_note(mask: MaskMode, measured: Option<(f32, u64)>) -> Option<String> {
    if mask != MaskMode::Causal {
        return None;
    }
    let mut note = String::from(
        "With the causal mask, [CLS] (position 0) can only attend to itself, so the pooled vector carries nothing about the sentence pair and NSP stays at chance.",
    );
    if let Some((accuracy, steps)) = measured {
        note.push_str(&format!(
            " Measured: NSP accuracy {:.0}% after {steps} steps.",
            accuracy * 100.0
        ));
    }
    Some(note)
}

/// The note under the "Training mask" control, present only while it applies.
#[component]
pub fn TrainingMaskNote(#[prop(into)] mask: Signal<MaskMode>) -> impl IntoView {
    move || {
        training_mask_note(mask.get(), CAUSAL_NSP_MEASURED)
            .map(|n| view! { <p class="notice mask-note" role="note">{n}</p> })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::settled;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn only_the_causal_mask_has_a_note_and_it_says_why_nsp_is_at_chance() {
        assert_eq!(training_mask_note(MaskMode::Padding, None), None);
        assert_eq!(training_mask_note(MaskMode::None, None), None);
        let note = training_mask_note(MaskMode::Causal, None).unwrap();
        for part in [
            "[CLS]",
            "only attend to itself",
            "pooled vector",
            "NSP stays at chance",
        ] {
            assert!(note.contains(part), "{part}: {note}");
        }
        assert!(
            !note.contains('%') && !note.contains("Measured"),
            "no number until measured: {note}"
        );
        let measured = training_mask_note(MaskMode::Causal, Some((0.503, 2000))).unwrap();
        assert!(
            measured.ends_with("Measured: NSP accuracy 50% after 2000 steps."),
            "{measured}"
        );
    }

    #[test]
    async fn the_note_comes_and_goes_with_the_causal_mask() {
        let doc = web_sys::window().unwrap().document().unwrap();
        let container: web_sys::HtmlElement = doc.create_element("div").unwrap().unchecked_into();
        doc.body().unwrap().append_child(&container).unwrap();
        let mask = RwSignal::new(MaskMode::Padding);
        let _handle = leptos::mount::mount_to(
            container.clone(),
            move || view! { <TrainingMaskNote mask=mask/> },
        );
        settled().await;
        assert!(container.query_selector(".mask-note").unwrap().is_none());
        mask.set(MaskMode::Causal);
        settled().await;
        let note = container
            .query_selector(".mask-note")
            .unwrap()
            .expect("a note");
        assert!(note.text_content().unwrap().contains("NSP stays at chance"));
        mask.set(MaskMode::None);
        settled().await;
        assert!(container.query_selector(".mask-note").unwrap().is_none());
        container.remove();
    }
}
