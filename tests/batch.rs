//! The Batch view against real training: `make_batch`'s counts over a 2,000-step run of the
//! page's own settings converge to its recipe, and the view draws a trained batch as its
//! `data-batch` says, keeping its elements from one batch to the next.

use attention_lab_web::testing::{select_all, settled, tick};
use attention_lab_web::training::batch::data::{self, ROWS_SHOWN};
use attention_lab_web::training::batch::BatchPanel;
use engine::batch_view::{BatchView, MaskingCounts};
use engine::data::Replacement;
use leptos::prelude::*;
use protocol::{LabSettings, DEFAULT_CORPUS};
use std::sync::Arc;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use worker_core::lab::Lab;

wasm_bindgen_test_configure!(run_in_browser);

/// Within this many percentage points of the target.
const TOLERANCE: f64 = 1.5;

#[wasm_bindgen_test]
async fn the_counts_converge_to_15_percent_80_10_10_and_50_50_over_2000_steps() {
    // The page's defaults: tiny preset, batch 8, T = 32, mask probability 0.15.
    let settings = LabSettings::default();
    let mut lab = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
    for step in 0..2000 {
        lab.step().unwrap();
        // A debug build takes half a minute for the run: hand the page back to the browser
        // now and then, or the test driver gives up waiting on a busy renderer. A timer, not
        // a posted message: the driver's own requests come before it. (It decides nothing.)
        if step % 50 == 49 {
            tick(0).await;
        }
    }
    let c = lab.masking_counts();
    assert_eq!(c.is_next + c.not_next, 2000 * 8, "{c:?}");
    assert_eq!(c.masked + c.random + c.kept, c.chosen, "{c:?}");
    let measured = [
        (
            "chosen",
            c.chosen_percent(),
            100.0 * f64::from(settings.mask_prob),
        ),
        ("[MASK]", c.masked_percent(), 80.0),
        ("random", c.random_percent(), 10.0),
        ("kept", c.kept_percent(), 10.0),
        ("IsNext", c.is_next_percent(), 50.0),
    ];
    for (what, got, target) in measured {
        assert!(
            (got - target).abs() <= TOLERANCE,
            "{what}: {got:.2}% against {target}% ({c:?})"
        );
    }
    let text = data::counts_text(&c, settings.mask_prob);
    web_sys::console::log_1(&format!("after 2000 steps: {text}; {c:?}").into());
}

fn fresh_container() -> web_sys::HtmlElement {
    let doc = web_sys::window().unwrap().document().unwrap();
    let div = doc.create_element("div").unwrap();
    doc.body().unwrap().append_child(&div).unwrap();
    div.unchecked_into()
}

/// A batch as the worker sends it, after `steps` steps of the page's defaults.
fn trained_batch(steps: usize) -> (BatchView, MaskingCounts) {
    let mut lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
    for _ in 0..steps {
        lab.step().unwrap();
    }
    (lab.batch_view().unwrap(), lab.masking_counts())
}

#[wasm_bindgen_test]
async fn the_view_draws_the_batch_its_data_batch_holds() {
    let (first, counts) = trained_batch(3);
    let container = fresh_container();
    let batch = RwSignal::new(None::<Arc<BatchView>>);
    let shown_counts = RwSignal::new(MaskingCounts::default());
    let _handle = leptos::mount::mount_to(container.clone(), move || {
        view! { <BatchPanel batch=batch counts=shown_counts mask_prob=Signal::stored(0.15) next_token=Signal::stored(false)/> }
    });
    settled().await;
    let section = container.query_selector("[data-batch]").unwrap().unwrap();
    assert_eq!(section.get_attribute("data-batch").unwrap(), "[]");
    assert!(container
        .query_selector(".batch-example")
        .unwrap()
        .is_none());
    let counts_line = container.query_selector("[data-counts]").unwrap().unwrap();
    assert!(counts_line
        .text_content()
        .unwrap()
        .starts_with("chosen — (target 15%)"));

    batch.set(Some(Arc::new(first.clone())));
    shown_counts.set(counts);
    settled().await;
    let json = section.get_attribute("data-batch").unwrap();
    assert_eq!(json, data::batch_json(Some(&first)));
    assert_eq!(section.get_attribute("data-batch-step").unwrap(), "3");
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        parsed.as_array().unwrap().len(),
        8,
        "every example, not only those drawn"
    );
    let counts_json: serde_json::Value =
        serde_json::from_str(&counts_line.get_attribute("data-counts").unwrap()).unwrap();
    assert_eq!(counts_json["chosen"], counts.chosen);
    assert_eq!(
        counts_json["is_next"].as_u64().unwrap() + counts_json["not_next"].as_u64().unwrap(),
        24
    );

    assert_rows_show(&first);
    let doc = web_sys::window().unwrap().document().unwrap();
    let more: web_sys::HtmlElement = container
        .query_selector("button.batch-more")
        .unwrap()
        .unwrap()
        .unchecked_into();
    assert_eq!(more.text_content().unwrap(), "+4 more: show all");
    more.click();
    settled().await;
    assert_eq!(select_all(&doc, ".batch-view .batch-example").len(), 8);

    // Collapsed: no rows drawn, but data-batch stays current.
    let toggle: web_sys::HtmlElement = container
        .query_selector("button.batch-toggle")
        .unwrap()
        .unwrap()
        .unchecked_into();
    toggle.click();
    let (later, _) = trained_batch(1);
    batch.set(Some(Arc::new(later.clone())));
    settled().await;
    assert!(container
        .query_selector(".batch-example")
        .unwrap()
        .is_none());
    assert_eq!(
        section.get_attribute("data-batch").unwrap(),
        data::batch_json(Some(&later))
    );
    container.remove();
}

/// The rows drawn show the first `ROWS_SHOWN` examples of `batch`: a chip per token, with its
/// segment, and each chosen position's mark, original token and prediction; and each pair's NSP.
fn assert_rows_show(batch: &BatchView) {
    let doc = web_sys::window().unwrap().document().unwrap();
    let rows = select_all(&doc, ".batch-view .batch-example");
    assert_eq!(rows.len(), ROWS_SHOWN);
    for (r, (row, example)) in rows.iter().zip(&batch.examples).enumerate() {
        let chips = select_all(
            &doc,
            &format!(
                ".batch-view .batch-rows > li:nth-child({}) .batch-chip",
                r + 1
            ),
        );
        assert_eq!(chips.len(), example.tokens.len());
        for (i, &p) in example.chosen.iter().enumerate() {
            let chip = &chips[p];
            let class = chip.class_name();
            let mark = chip
                .query_selector(".mark")
                .unwrap()
                .unwrap()
                .text_content()
                .unwrap();
            let orig = chip
                .query_selector(".orig")
                .unwrap()
                .unwrap()
                .text_content()
                .unwrap();
            match example.replaced_by[i] {
                Replacement::Mask => assert!(class.contains("mask") && mark == "[MASK]"),
                Replacement::Random => {
                    assert!(
                        class.contains("random")
                            && mark == format!("random → {}", example.tokens[p])
                    )
                }
                Replacement::Kept => assert!(class.contains("kept") && mark == "kept"),
            }
            assert_eq!(orig, example.original[p]);
            let pred = chip.query_selector(".pred").unwrap().unwrap();
            let right = example.predicted[i] == example.original[p];
            assert_eq!(
                pred.class_name(),
                if right { "pred right" } else { "pred wrong" }
            );
            assert!(pred
                .text_content()
                .unwrap()
                .ends_with(&example.predicted[i]));
        }
        let segments: Vec<bool> = chips
            .iter()
            .map(|c| c.class_name().contains("seg-b"))
            .collect();
        let expected: Vec<bool> = example.token_type_ids.iter().map(|&t| t == 1).collect();
        assert_eq!(segments, expected);
        let nsp = row
            .query_selector(".nsp")
            .unwrap()
            .unwrap()
            .text_content()
            .unwrap();
        assert!(
            nsp.contains(data::nsp_name(example.nsp_label.unwrap())),
            "{nsp}"
        );
    }
}

/// The element of the chip at position `p` of row `r` (1-based, as in CSS).
fn chip_at(r: usize, p: usize) -> web_sys::Element {
    let doc = web_sys::window().unwrap().document().unwrap();
    let selector =
        format!(".batch-view .batch-rows > li:nth-child({r}) .batch-chip[data-pos=\"{p}\"]");
    doc.query_selector(&selector).unwrap().unwrap()
}

/// The view redraws a few times a second while training. Leptos rebuilds a re-rendered view
/// over the elements it already has (new words and classes), and only a chip that turns from
/// plain to chosen or back gets new elements; new elements for every chip would add style and
/// layout work to the page's frames.
#[wasm_bindgen_test]
async fn a_new_batch_changes_the_chips_in_place() {
    let (first, _) = trained_batch(3);
    let (later, _) = trained_batch(4);
    let container = fresh_container();
    let batch = RwSignal::new(Some(Arc::new(first.clone())));
    let _handle = leptos::mount::mount_to(container.clone(), move || {
        view! { <BatchPanel batch=batch counts=MaskingCounts::default() mask_prob=Signal::stored(0.15) next_token=Signal::stored(false)/> }
    });
    settled().await;
    assert_rows_show(&first);
    // [CLS] opens every example and is never chosen: its chip should survive the new batch.
    let cls = chip_at(1, 0);
    let row = container.query_selector(".batch-example").unwrap().unwrap();
    // A position chosen in one batch and plain in the other changes its kind of chip.
    let first_chosen = &first.examples[0].chosen;
    let turned = later.examples[0]
        .chosen
        .iter()
        .find(|p| !first_chosen.contains(p))
        .copied()
        .expect("the batches choose different positions in their first example");

    batch.set(Some(Arc::new(later.clone())));
    settled().await;
    assert_rows_show(&later);
    assert!(
        cls.is_connected() && cls.is_same_node(Some(&chip_at(1, 0))),
        "the [CLS] chip was rebuilt"
    );
    let same_row = container.query_selector(".batch-example").unwrap().unwrap();
    assert!(row.is_same_node(Some(&same_row)), "the row was rebuilt");
    assert!(
        chip_at(1, turned).class_name().contains("chosen"),
        "position {turned} is chosen now"
    );
    // And back: the first batch again shows exactly as it did.
    batch.set(Some(Arc::new(first.clone())));
    settled().await;
    assert_rows_show(&first);
    container.remove();
}

/// A Repeat batch: every chip but the last predicts the token after it, the second copy is
/// drawn as such, each row scores its copies, and the MLM counts give way to how to read it.
#[wasm_bindgen_test]
async fn a_repeat_batch_shows_each_next_token_guess_and_no_mlm_counts() {
    let mut settings = LabSettings::default();
    settings.choose_repeat();
    settings.batch_size = 4;
    let mut lab = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
    lab.step().unwrap();
    let view = lab.batch_view().unwrap();
    let container = fresh_container();
    let batch = RwSignal::new(Some(Arc::new(view.clone())));
    let _handle = leptos::mount::mount_to(container.clone(), move || {
        view! { <BatchPanel batch=batch counts=MaskingCounts::default() mask_prob=Signal::stored(0.15) next_token=Signal::stored(true)/> }
    });
    settled().await;
    assert!(container.query_selector("[data-counts]").unwrap().is_none());
    let key = container.query_selector(".batch-counts").unwrap().unwrap();
    assert_eq!(key.text_content().unwrap(), data::NEXT_TOKEN_KEY);
    let summary = container.query_selector(".batch-summary").unwrap().unwrap();
    assert!(
        summary.text_content().unwrap().contains("· copy 2: "),
        "{:?}",
        summary.text_content()
    );
    let row = container.query_selector(".batch-example").unwrap().unwrap();
    let t = view.examples[0].tokens.len();
    let count = |selector: &str| row.query_selector_all(selector).unwrap().length() as usize;
    assert_eq!(count(".batch-chip.next"), t - 1);
    assert_eq!(count(".batch-chip.seg-b"), (t - 2) / 2);
    assert_eq!(count(".batch-chip.chosen"), 0);
    let score = row.query_selector(".next-score").unwrap().unwrap();
    assert!(score.text_content().unwrap().starts_with("copy 1: "));
}
