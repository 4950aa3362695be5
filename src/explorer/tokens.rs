//! The tokens as chips: special tokens distinct, segments A/B coloured, [UNK] flagged, padding
//! greyed. The rules are plain functions; `TokenChips` only draws them.

use engine::inspect::Inspection;
use engine::MaskMode;
use leptos::prelude::*;
use std::sync::Arc;

/// What a chip stands for, which decides how it looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChipKind {
    Word,
    /// [CLS], [SEP]
    Special,
    /// [MASK]: the model is asked to fill it in.
    Mask,
    /// [UNK]: a word outside the vocabulary.
    Unknown,
    /// [PAD], or any position the attention mask switches off.
    Pad,
}

pub fn chip_kind(token: &str, attention: u8) -> ChipKind {
    match token {
        _ if attention == 0 || token == "[PAD]" => ChipKind::Pad,
        "[UNK]" => ChipKind::Unknown,
        "[MASK]" => ChipKind::Mask,
        "[CLS]" | "[SEP]" => ChipKind::Special,
        _ => ChipKind::Word,
    }
}

/// CSS classes of the chip at one position: its kind and, for real tokens, its segment.
pub fn chip_classes(token: &str, type_id: u32, attention: u8) -> String {
    let kind = chip_kind(token, attention);
    let kind_class = match kind {
        ChipKind::Word => "word",
        ChipKind::Special => "special",
        ChipKind::Mask => "special mask",
        ChipKind::Unknown => "special unk",
        ChipKind::Pad => "special pad",
    };
    let segment = match (kind, type_id) {
        (ChipKind::Pad, _) => "",
        (_, 0) => " seg-a",
        _ => " seg-b",
    };
    format!("chip {kind_class}{segment}")
}

/// The chip's tooltip: where it is and what it means.
pub fn chip_title(ins: &Inspection, i: usize) -> String {
    let token = &ins.tokens[i];
    let attention = ins.attention_mask.get(i).copied().unwrap_or(1);
    let segment = if ins.token_type_ids.get(i) == Some(&1) {
        "B"
    } else {
        "A"
    };
    let id = ins.input_ids.get(i).copied().unwrap_or(0);
    let what = match chip_kind(token, attention) {
        ChipKind::Word => format!("segment {segment}"),
        ChipKind::Special => format!("special token, segment {segment}"),
        ChipKind::Mask => "masked position: the model predicts it".into(),
        ChipKind::Unknown => "not in the vocabulary: the model only sees [UNK]".into(),
        ChipKind::Pad if ins.mask == MaskMode::None => {
            "padding: with the mask None, every query attends to it too".into()
        }
        ChipKind::Pad => "padding: the mask hides it from every query".into(),
    };
    format!("#{i} · id {id} · {what}")
}

/// Says so when "Pad to" asks for fewer positions than the text already has.
pub fn pad_note(pad_to: Option<usize>, ins: &Inspection) -> Option<String> {
    let n = pad_to?;
    let real = ins.attention_mask.iter().filter(|&&m| m != 0).count();
    (n < real).then(|| {
        format!("Pad to {n} is shorter than the {real} tokens of the text: nothing to pad.")
    })
}

/// Whether the text is a pair (`[CLS] A [SEP] B [SEP]`).
pub fn is_pair(ins: &Inspection) -> bool {
    ins.token_type_ids.contains(&1)
}

/// One chip as shown. Equal chips are the same on screen: a snapshot that changes only the
/// weights (five a second while training) leaves the chips alone.
#[derive(Clone, Debug, PartialEq)]
pub struct Chip {
    pub token: String,
    pub classes: String,
    pub title: String,
    /// "A" or "B"
    pub segment: &'static str,
    pub unknown: bool,
}

/// The chips of every position, in order.
pub fn chips(ins: &Inspection) -> Vec<Chip> {
    (0..ins.tokens.len())
        .map(|i| {
            let token = ins.tokens[i].clone();
            let type_id = ins.token_type_ids.get(i).copied().unwrap_or(0);
            let attention = ins.attention_mask.get(i).copied().unwrap_or(1);
            Chip {
                classes: chip_classes(&token, type_id, attention),
                title: chip_title(ins, i),
                segment: if type_id == 1 { "B" } else { "A" },
                unknown: token == "[UNK]",
                token,
            }
        })
        .collect()
}

#[component]
pub fn TokenChips(ins: Memo<Option<Arc<Inspection>>>) -> impl IntoView {
    let shown = Memo::new(move |_| ins.with(|ins| ins.as_deref().map(chips)));
    let chips = move || {
        shown.get().map(|chips| {
            chips
                .into_iter()
                .map(|chip| {
                    view! {
                        <li class=chip.classes title=chip.title data-segment=chip.segment>
                            {chip.token}
                            {chip.unknown.then(|| view! { <span class="unk-flag" aria-label="unknown word">"?"</span> })}
                        </li>
                    }
                })
                .collect_view()
        })
    };
    let count = move || shown.with(|chips| chips.as_ref().map_or(0, Vec::len));
    view! {
        <div class="tokens-row">
            <span class="row-label">"Tokens " <span class="count">{count}</span></span>
            <ol class="tokens" aria-label="Tokens">{chips}</ol>
            <span class="token-legend" aria-hidden="true">
                <span class="chip seg-a">"A"</span>
                <span class="chip seg-b">"B"</span>
                <span class="chip special">"special"</span>
                <span class="chip special unk">"[UNK]"</span>
            </span>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explorer::figures::tests::inspection;
    use crate::testing::settled;
    use protocol::ProbeInput;
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn special_tokens_segments_and_padding_look_different() {
        assert_eq!(chip_classes("[CLS]", 0, 1), "chip special seg-a");
        assert_eq!(chip_classes("ball", 1, 1), "chip word seg-b");
        assert_eq!(chip_classes("[MASK]", 0, 1), "chip special mask seg-a");
        assert_eq!(chip_classes("[UNK]", 1, 1), "chip special unk seg-b");
        assert_eq!(chip_classes("[PAD]", 0, 0), "chip special pad");
        // Whatever the token, a position the mask switches off is padding.
        assert_eq!(chip_kind("dog", 0), ChipKind::Pad);
    }

    #[test]
    async fn a_snapshot_with_new_weights_and_the_same_tokens_leaves_the_chips_alone() {
        let doc = web_sys::window().unwrap().document().unwrap();
        let container: web_sys::HtmlElement = doc.create_element("div").unwrap().unchecked_into();
        doc.body().unwrap().append_child(&container).unwrap();
        let first = inspection(ProbeInput::default());
        let snapshot = RwSignal::new(Some(Arc::new(first.clone())));
        let ins = Memo::new(move |_| snapshot.get());
        let _handle = leptos::mount::mount_to(container.clone(), move || {
            view! { <TokenChips ins=ins/> }
        });
        settled().await;
        let shown = container.query_selector_all(".tokens li").unwrap().length();
        assert_eq!(shown as usize, first.tokens.len());

        let writes = std::rc::Rc::new(std::cell::Cell::new(0));
        let count = writes.clone();
        let on_change = Closure::<dyn FnMut(js_sys::Array)>::new(move |records: js_sys::Array| {
            count.set(count.get() + records.length());
        });
        let observer = web_sys::MutationObserver::new(on_change.as_ref().unchecked_ref()).unwrap();
        let options = web_sys::MutationObserverInit::new();
        options.set_subtree(true);
        options.set_attributes(true);
        options.set_child_list(true);
        options.set_character_data(true);
        observer.observe_with_options(&container, &options).unwrap();

        let mut trained = first.clone();
        trained.hidden.data.iter_mut().for_each(|x| *x += 1.0);
        snapshot.set(Some(Arc::new(trained)));
        settled().await;
        assert_eq!(
            writes.get(),
            0,
            "new weights, same tokens: the chips were written again"
        );

        // Without the pair, padded to 24: other chips.
        let other = ProbeInput {
            pair: String::new(),
            pad_to: Some(24),
            ..ProbeInput::default()
        };
        let other = inspection(other);
        snapshot.set(Some(Arc::new(other.clone())));
        settled().await;
        assert!(writes.get() > 0, "new tokens: the chips changed");
        let shown = container.query_selector_all(".tokens li").unwrap().length();
        assert_eq!(shown as usize, other.tokens.len());
        observer.disconnect();
        container.remove();
    }

    #[test]
    fn padding_shorter_than_the_text_is_explained() {
        let probe = ProbeInput {
            pad_to: Some(3),
            pair: String::new(),
            ..ProbeInput::default()
        };
        let ins = inspection(probe);
        let note = pad_note(Some(3), &ins).unwrap();
        assert!(note.contains("shorter than the 9 tokens"), "{note}");
        assert_eq!(pad_note(Some(20), &ins), None);
        assert_eq!(pad_note(None, &ins), None);
        assert!(!is_pair(&ins));
        assert!(
            chip_title(&ins, 5).contains("masked position"),
            "{}",
            chip_title(&ins, 5)
        );
    }
}
