//! The attention explorer in headless Chromium: mounted with a fresh tiny BERT on the default
//! corpus, driven through its DOM as a user would, checked through `data-matrix`.

use attention_lab_web::explorer::Explorer;
use attention_lab_web::testing::settled;
use engine::forward::ForwardOptions;
use engine::inspect::{inspect, inspect_with, Inspection};
use engine::tokenizer::Tokenizer;
use engine::{BertConfig, BertForPreTraining, Rng};
use leptos::prelude::*;
use protocol::{LabError, ModelInfo, ProbeInput, DEFAULT_CORPUS};
use std::sync::Arc;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{Element, HtmlElement, HtmlInputElement};

wasm_bindgen_test_configure!(run_in_browser);

/// The explorer on its own, with the app's part (probe in, inspection out) played by a local
/// model. The returned handle keeps it mounted.
fn mount_explorer() -> (HtmlElement, impl Drop) {
    let doc = web_sys::window().unwrap().document().unwrap();
    let container: HtmlElement = doc.create_element("div").unwrap().unchecked_into();
    doc.body().unwrap().append_child(&container).unwrap();
    let vocab = engine::tokenizer::build_word_vocab(DEFAULT_CORPUS).unwrap();
    let model = Arc::new(
        BertForPreTraining::init(&BertConfig::tiny(vocab.len()), &mut Rng::new(0)).unwrap(),
    );
    let tokenizer = Arc::new(Tokenizer::word_level(vocab));
    let handle = leptos::mount::mount_to(container.clone(), move || {
        let probe = RwSignal::new(ProbeInput::default());
        let inspection = RwSignal::new(None::<Result<Arc<Inspection>, LabError>>);
        let (model, tokenizer) = (model.clone(), tokenizer.clone());
        Effect::new(move |_| {
            let p = probe.get();
            let pair = Some(p.pair.trim()).filter(|s| !s.is_empty());
            // The probe's window and kernel, as the worker applies them.
            let opts = ForwardOptions {
                softmax: engine::ops::attention::Softmax {
                    // A dozen tokens: blocks of 4, as the worker sizes them.
                    kernel: p.attention.kernel(16),
                    window: p.window,
                },
                ..ForwardOptions::inspection(p.mask)
            };
            let result = inspect_with(&model, &tokenizer, &p.text, pair, &opts, p.pad_to)
                .map(Arc::new)
                .map_err(LabError::from);
            inspection.set(Some(result));
        });
        // No model info: the explorer must manage with the inspection alone.
        let info = Signal::stored(None::<ModelInfo>);
        view! { <Explorer probe=probe inspection=inspection.into() info=info/> }
    });
    (container, handle)
}

fn all(root: &HtmlElement, selector: &str) -> Vec<Element> {
    // querySelectorAll without web-sys's NodeList feature: Array.from(the NodeList).
    let find: js_sys::Function = js_sys::Reflect::get(root, &"querySelectorAll".into())
        .unwrap()
        .unchecked_into();
    let list = find.call1(root, &selector.into()).unwrap();
    js_sys::Array::from(&list)
        .iter()
        .filter_map(|e| e.dyn_into::<Element>().ok())
        .collect()
}

fn one(root: &HtmlElement, selector: &str) -> HtmlElement {
    root.query_selector(selector)
        .unwrap()
        .unwrap_or_else(|| panic!("no {selector}"))
        .unchecked_into()
}

fn text(e: &Element) -> String {
    e.text_content().unwrap_or_default()
}

/// The `data-matrix` of the first figure captioned `caption`.
fn matrix(root: &HtmlElement, caption: &str) -> Vec<Vec<Option<f32>>> {
    let figure = all(root, "figure.heatmap")
        .into_iter()
        .find(|f| {
            f.query_selector("figcaption")
                .unwrap()
                .is_some_and(|c| text(&c) == caption)
        })
        .unwrap_or_else(|| panic!("no figure captioned {caption:?}"));
    serde_json::from_str(&figure.get_attribute("data-matrix").unwrap()).unwrap()
}

fn button(root: &HtmlElement, label: &str) -> HtmlElement {
    all(root, "button")
        .into_iter()
        .find(|b| text(b) == label || b.get_attribute("aria-label").as_deref() == Some(label))
        .unwrap_or_else(|| panic!("no button {label:?}"))
        .unchecked_into()
}

/// The explorer's field labelled `label`.
fn field(root: &HtmlElement, label: &str) -> Element {
    all(root, "label.field")
        .into_iter()
        .find(|l| {
            l.query_selector(".field-label")
                .unwrap()
                .is_some_and(|s| text(&s) == label)
        })
        .unwrap_or_else(|| panic!("no field {label:?}"))
}

/// Types into the field labelled `label`, as the browser reports it (an `input` event).
fn type_into(root: &HtmlElement, label: &str, value: &str) {
    let input: HtmlInputElement = field(root, label)
        .query_selector("input")
        .unwrap()
        .unwrap()
        .unchecked_into();
    input.set_value(value);
    let ev = web_sys::Event::new("input").unwrap();
    input.dispatch_event(&ev).unwrap();
}

fn press(key: &str) {
    let code = format!("window.dispatchEvent(new KeyboardEvent('keydown', {{ key: '{key}' }}))");
    js_sys::Function::new_no_args(&code)
        .call0(&wasm_bindgen::JsValue::NULL)
        .unwrap();
}

fn chips(root: &HtmlElement) -> Vec<(String, String)> {
    all(root, "ol.tokens li")
        .iter()
        .map(|c| (text(c), c.get_attribute("class").unwrap_or_default()))
        .collect()
}

const WEIGHTS: &str = "Layer 1 · Head 1 · softmax weights";

#[wasm_bindgen_test]
async fn causal_mask_makes_the_upper_triangle_of_the_weights_exactly_zero() {
    let (root, _keep) = mount_explorer();
    settled().await;
    let before = matrix(&root, WEIGHTS);
    let t = before.len();
    assert!(t > 3);
    assert!(
        before[0][t - 1].unwrap() > 0.0,
        "padding mask: the first query sees the last key"
    );

    let causal: HtmlElement = one(&root, "input[type=radio][value=Causal]");
    causal.click();
    settled().await;
    let after = matrix(&root, WEIGHTS);
    assert_eq!(after.len(), t);
    for (i, row) in after.iter().enumerate() {
        for (j, w) in row.iter().enumerate() {
            let w = w.expect("softmax weights are never null");
            if j > i {
                assert_eq!(w, 0.0, "weight[{i}][{j}] = {w} under the causal mask");
            }
        }
        let sum: f32 = row.iter().map(|w| w.unwrap()).sum();
        assert!((sum - 1.0).abs() < 1e-4, "row {i} sums to {sum}");
    }
    // Query 0 now sees only itself.
    assert_eq!(after[0][0], Some(1.0));
}

#[wasm_bindgen_test]
async fn the_stepper_walks_all_stages_with_buttons_and_arrow_keys() {
    let (root, _keep) = mount_explorer();
    settled().await;
    let title = || text(&one(&root, ".stage-title"));
    let stage_captions = || {
        all(&root, ".stage-panel figcaption")
            .iter()
            .map(text)
            .collect::<Vec<_>>()
    };
    assert!(title().starts_with("Step 1 of 12"), "{}", title());
    let mut seen = vec![stage_captions()];
    for k in 2..=12 {
        button(&root, "Next").click();
        settled().await;
        assert!(
            title().starts_with(&format!("Step {k} of 12")),
            "{}",
            title()
        );
        let captions = stage_captions();
        assert!(!captions.is_empty(), "step {k} shows no heatmap");
        let heatmaps: Vec<_> = captions.iter().filter(|c| !c.starts_with("GELU")).collect();
        assert!(
            heatmaps.iter().all(|c| c.starts_with("Layer 1 · ")),
            "{captions:?}"
        );
        seen.push(captions);
    }
    // Every stage shows something of its own; past W_O come Add & Norm, the feed-forward
    // network with its GELU curve, and Add & Norm.
    seen.dedup();
    assert_eq!(seen.len(), 12, "{seen:?}");
    assert!(title().contains("Add & Norm"), "{}", title());
    assert!(button(&root, "Next")
        .unchecked_ref::<web_sys::HtmlButtonElement>()
        .disabled());
    press("ArrowLeft");
    settled().await;
    assert!(title().starts_with("Step 11 of 12"), "{}", title());
    assert!(title().contains("Feed-forward"), "{}", title());
    assert!(
        stage_captions()
            .iter()
            .any(|c| c.starts_with("GELU(x) = 0.5·x·(1 + erf(x/√2))")),
        "{:?}",
        stage_captions()
    );
    let dots: usize = one(&root, "figure.gelu-chart")
        .get_attribute("data-gelu-dots")
        .unwrap()
        .parse()
        .unwrap();
    assert!(dots > 100, "{dots} GELU dots");
    button(&root, "Previous").click();
    settled().await;
    assert!(title().starts_with("Step 10 of 12"), "{}", title());
    for _ in 0..4 {
        press("ArrowLeft");
    }
    settled().await;
    // The softmax step shows the weights; masked scores have nulls only where the mask is −∞.
    assert!(title().starts_with("Step 6 of 12"), "{}", title());
    assert!(stage_captions().contains(&WEIGHTS.to_string()));
    // Each stage figure carries the name of what it shows, which the tour and the tests find it by.
    let names: Vec<String> = all(&root, ".stage-panel figure.heatmap")
        .iter()
        .map(|f| f.get_attribute("data-figure").unwrap_or_default())
        .collect();
    assert_eq!(names, ["masked-scores", "weights"]);
    // Before stage 1, the embeddings; Previous stops there.
    for _ in 0..6 {
        press("ArrowLeft");
    }
    settled().await;
    assert!(
        title().starts_with("Step 0 of 12 — embeddings"),
        "{}",
        title()
    );
    let captions = stage_captions();
    assert_eq!(captions.len(), 5, "{captions:?}");
    assert!(
        captions.iter().all(|c| c.starts_with("Embeddings · ")),
        "{captions:?}"
    );
    assert!(button(&root, "Previous")
        .unchecked_ref::<web_sys::HtmlButtonElement>()
        .disabled());
}

#[wasm_bindgen_test]
async fn padding_columns_get_weight_zero_and_null_masked_scores() {
    let (root, _keep) = mount_explorer();
    settled().await;
    let real = chips(&root).len();
    type_into(&root, "Pad to", &(real + 4).to_string());
    settled().await;
    let chips = chips(&root);
    assert_eq!(chips.len(), real + 4);
    let pads: Vec<usize> = (0..chips.len())
        .filter(|&i| chips[i].1.contains("pad"))
        .collect();
    assert_eq!(pads, (real..real + 4).collect::<Vec<_>>());
    assert!(chips[real].0 == "[PAD]");

    let weights = matrix(&root, WEIGHTS);
    for (i, row) in weights.iter().enumerate() {
        for &j in &pads {
            assert_eq!(
                row[j],
                Some(0.0),
                "query {i} gives [PAD] key {j} weight {:?}",
                row[j]
            );
        }
        assert!(row[0].unwrap() > 0.0);
    }
    for _ in 0..4 {
        press("ArrowRight");
    }
    settled().await;
    let masked = matrix(&root, "Layer 1 · Head 1 · masked scores QKᵀ/√d_k + M");
    for row in &masked {
        for (j, v) in row.iter().enumerate() {
            assert_eq!(
                v.is_none(),
                pads.contains(&j),
                "masked score {v:?} at key {j}"
            );
        }
    }
}

#[wasm_bindgen_test]
async fn the_mask_none_gives_padding_weight_and_padding_takes_it_back() {
    let (root, _keep) = mount_explorer();
    settled().await;
    let real = chips(&root).len();
    type_into(&root, "Pad to", &(real + 3).to_string());
    settled().await;
    let pads: Vec<usize> = (real..real + 3).collect();
    let pad_weights = |m: &[Vec<Option<f32>>]| -> Vec<f32> {
        m.iter()
            .flat_map(|row| {
                pads.iter()
                    .map(move |&j| row[j].expect("weights are never null"))
            })
            .collect()
    };

    one(&root, "input[type=radio][value=None]").click();
    settled().await;
    let none = matrix(&root, WEIGHTS);
    assert_eq!(none.len(), real + 3);
    let on_pads = pad_weights(&none);
    assert!(
        on_pads.iter().all(|&w| w > 0.0),
        "with no mask every query gives every [PAD] key some weight: {on_pads:?}"
    );
    // The mask stage says M = 0 and shows no −∞ cell.
    for _ in 0..4 {
        press("ArrowRight");
    }
    settled().await;
    assert!(title_of(&root).starts_with("Step 5 of 12"));
    let m = matrix(&root, "Layer 1 · Head 1 · mask M");
    assert!(m.iter().flatten().all(|v| *v == Some(0.0)), "{m:?}");
    let equation = text(&one(&root, ".equation"));
    assert!(equation.contains("0 everywhere"), "{equation}");
    let why = text(&one(&root, ".stage-panel .why"));
    assert!(why.contains("M = 0 everywhere"), "{why}");

    one(&root, "input[type=radio][value=Padding]").click();
    settled().await;
    let padding = matrix(&root, WEIGHTS);
    assert!(
        pad_weights(&padding).iter().all(|&w| w == 0.0),
        "the padding mask gives [PAD] keys exactly 0"
    );
    let equation = text(&one(&root, ".equation"));
    assert!(equation.contains("−∞ at [PAD]"), "{equation}");
}

fn title_of(root: &HtmlElement) -> String {
    text(&one(root, ".stage-title"))
}

#[wasm_bindgen_test]
async fn the_model_view_and_the_selectors_choose_layer_and_head() {
    let (root, _keep) = mount_explorer();
    settled().await;
    let cells = all(&root, ".model-view button.thumb");
    assert_eq!(cells.len(), 2 * 4, "a tiny BERT has 2 layers × 4 heads");
    button(&root, "Layer 2 · Head 3").click();
    settled().await;
    let w = matrix(&root, "Layer 2 · Head 3 · softmax weights");
    assert!(!w.is_empty());
    let selects = all(&root, ".pickers select");
    let value = |e: &Element| e.unchecked_ref::<web_sys::HtmlSelectElement>().value();
    assert_eq!(
        (value(&selects[0]), value(&selects[1])),
        ("1".to_string(), "2".to_string())
    );
    assert_eq!(all(&root, ".thumb.selected").len(), 1);
    assert_eq!(
        one(&root, ".thumb.selected")
            .get_attribute("aria-label")
            .unwrap(),
        "Layer 2 · Head 3"
    );
}

#[wasm_bindgen_test]
async fn bad_input_is_a_clear_message_never_a_panic() {
    let (root, _keep) = mount_explorer();
    settled().await;
    type_into(&root, "Second sentence", "");

    type_into(&root, "Sentence", "   ");
    settled().await;
    let alert = text(&one(&root, ".error-box"));
    assert!(alert.contains("empty"), "{alert}");
    assert!(
        all(&root, "figure.heatmap").is_empty(),
        "no stale heatmaps beside the error"
    );

    type_into(&root, "Sentence", &"the dog ".repeat(1250));
    settled().await;
    assert!(all(&root, ".error-box").is_empty());
    let notice = text(&one(&root, ".notice"));
    assert!(
        notice.contains("Truncated") && notice.contains("128"),
        "{notice}"
    );
    assert_eq!(chips(&root).len(), 128);

    type_into(
        &root,
        "Sentence",
        "the 🐶 dog 犬 chases\u{0007}\u{0000} a zebra",
    );
    settled().await;
    let unknown: Vec<_> = chips(&root)
        .into_iter()
        .filter(|(_, class)| class.contains("unk"))
        .collect();
    assert!(
        unknown.len() >= 3,
        "emoji, CJK and the unknown word are [UNK]: {unknown:?}"
    );
    assert!(unknown.iter().all(|(t, _)| t.starts_with("[UNK]")));
    assert!(all(&root, ".error-box").is_empty());

    type_into(&root, "Pad to", "500");
    settled().await;
    let alert = text(&one(&root, ".error-box"));
    assert!(alert.contains("500") && alert.contains("128"), "{alert}");

    type_into(&root, "Pad to", "2");
    settled().await;
    let note = all(&root, ".notice").iter().map(text).collect::<String>();
    assert!(note.contains("shorter than"), "{note}");

    type_into(&root, "Pad to", "-1");
    settled().await;
    assert!(text(&one(&root, ".field-error")).contains("-1"));
}

#[wasm_bindgen_test]
async fn a_pair_gets_segments_and_a_next_sentence_probability() {
    let (root, _keep) = mount_explorer();
    settled().await;
    type_into(&root, "Sentence", "the cat sleeps");
    type_into(&root, "Second sentence", "the dog [MASK]");
    settled().await;
    let chips = chips(&root);
    let tokens: Vec<&str> = chips.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        tokens,
        ["[CLS]", "the", "cat", "sleeps", "[SEP]", "the", "dog", "[MASK]", "[SEP]"]
    );
    assert!(chips[1].1.contains("seg-a") && chips[5].1.contains("seg-b"));
    assert!(chips[0].1.contains("special") && chips[7].1.contains("mask"));
    let predictions = text(&one(&root, ".predictions"));
    assert!(
        predictions.contains("P(IsNext)") && predictions.contains("[MASK] #7"),
        "{predictions}"
    );
    assert_eq!(all(&root, "ol.top5 li").len(), 5);
}

/// The inspection the mounted explorer shows for `text` and `pair` (same model, same seed).
fn inspected(text: &str, pair: Option<&str>) -> Inspection {
    let vocab = engine::tokenizer::build_word_vocab(DEFAULT_CORPUS).unwrap();
    let model = BertForPreTraining::init(&BertConfig::tiny(vocab.len()), &mut Rng::new(0)).unwrap();
    let tokenizer = Tokenizer::word_level(vocab);
    let probe = ProbeInput::default();
    inspect(&model, &tokenizer, text, pair, probe.mask, probe.pad_to).unwrap()
}

fn close(a: &[Vec<Option<f32>>], m: &engine::Matrix) -> bool {
    a.len() == m.rows
        && a.iter()
            .flatten()
            .zip(&m.data)
            .all(|(x, y)| x.is_some_and(|x| (x - y).abs() <= 1e-6 * y.abs().max(1.0)))
        && a.iter().flatten().count() == m.data.len()
}

#[wasm_bindgen_test]
async fn rollout_and_the_heads_view_show_the_engines_numbers() {
    let (root, _keep) = mount_explorer();
    settled().await;
    type_into(&root, "Sentence", "the cat sleeps");
    type_into(&root, "Second sentence", "the dog [MASK:sleeps]");
    settled().await;
    let ins = inspected("the cat sleeps", Some("the dog [MASK:sleeps]"));
    let rollout = matrix(&root, "All layers · attention rollout");
    assert!(close(&rollout, &ins.rollout), "{rollout:?}");
    let pooled = matrix(&root, "Heads · pooler tanh(W·h_[CLS] + b)");
    assert!(close(&pooled, ins.trace.heads.pooled.as_ref().unwrap()));
    let transform = matrix(&root, "Heads · MLM transform LayerNorm(GELU(h W_t + b_t))");
    assert!(close(
        &transform,
        ins.trace.heads.mlm_transform.as_ref().unwrap()
    ));
    let nsp: Vec<f32> =
        serde_json::from_str(&one(&root, ".nsp-table").get_attribute("data-nsp").unwrap()).unwrap();
    assert_eq!(nsp, ins.trace.heads.nsp_probabilities.unwrap());
    let heads = text(&one(&root, ".heads-view"));
    for part in [
        "IsNext",
        "NotNext",
        "are the token embeddings",
        "[MASK] #7 → ",
    ] {
        assert!(heads.contains(part), "{part}: {heads}");
    }
    // [MASK:word]: the answer is known, and the page says whether the top guess is it.
    let m = &ins.mask_predictions[0];
    assert_eq!(m.answer.as_deref(), Some("sleeps"));
    let verdict = one(&root, ".predictions .verdict");
    assert_eq!(
        verdict.get_attribute("data-correct").unwrap(),
        m.correct.unwrap().to_string()
    );
    assert!(text(&verdict).contains("sleeps"), "{}", text(&verdict));
}

/// Chooses `value` in the select of the field labelled `label`, as the browser reports it.
fn choose(root: &HtmlElement, label: &str, value: &str) {
    let select: web_sys::HtmlSelectElement = field(root, label)
        .query_selector("select")
        .unwrap()
        .unwrap()
        .unchecked_into();
    select.set_value(value);
    select
        .dispatch_event(&web_sys::Event::new("change").unwrap())
        .unwrap();
}

#[wasm_bindgen_test]
async fn tiled_attention_adds_a_tiles_stage_that_ends_equal_to_full() {
    let (root, _keep) = mount_explorer();
    settled().await;
    let title = || text(&one(&root, ".stage-title"));
    choose(&root, "Attention", "Tiled");
    settled().await;
    // From "1 X" to "7 · V".
    for _ in 0..6 {
        button(&root, "Next").click();
    }
    settled().await;
    assert!(title().starts_with("Step 7 of 13"), "{}", title());
    button(&root, "Next").click();
    settled().await;
    assert!(title().starts_with("Step 8 of 13 — Tiles"), "{}", title());
    let panel = one(&root, ".tiles-panel");
    let steps: usize = panel
        .get_attribute("data-tile-steps")
        .unwrap()
        .parse()
        .unwrap();
    let tokens = chips(&root).len();
    // Padding mask, blocks of 4: every query block takes every key block.
    assert_eq!(steps, tokens.div_ceil(4).pow(2));
    assert_eq!(all(&root, "table.tiles-running tbody tr").len(), tokens);
    let framed = one(&root, ".tiles-panel figure.heatmap");
    assert_eq!(
        framed.get_attribute("data-outline").as_deref(),
        Some("[0,4,0,4]")
    );
    button(&root, "Last block").click();
    settled().await;
    assert_eq!(
        panel.get_attribute("data-tile-step"),
        Some(steps.to_string())
    );
    let check = one(&root, ".tiles-check");
    let diff: f32 = check
        .get_attribute("data-max-difference")
        .unwrap()
        .parse()
        .unwrap();
    assert!(diff < 1e-6, "{diff}");
    assert!(text(&check).starts_with("Tiled = Full"), "{}", text(&check));
    let from_tiles = matrix(
        &root,
        "Layer 1 · Head 1 · weights from the tiles exp(S − m)/l",
    );
    let full = matrix(&root, "Layer 1 · Head 1 · Full softmax weights");
    assert_eq!(from_tiles.len(), tokens);
    for (a, b) in from_tiles.iter().flatten().zip(full.iter().flatten()) {
        assert!((a.unwrap() - b.unwrap()).abs() < 1e-6);
    }
    // Every output row is final at the end: no hatched (null) cell left.
    let output = matrix(
        &root,
        "Layer 1 · Head 1 · output rows O = acc / l, as their blocks finish",
    );
    assert!(output.iter().flatten().all(Option::is_some));
    // Back to Full: no Tiles stage; the stepper stands on "· V".
    choose(&root, "Attention", "Full");
    settled().await;
    assert!(title().starts_with("Step 7 of 12 — context"), "{}", title());
    assert!(root.query_selector(".tiles-panel").unwrap().is_none());
}

/// The explorer with a fresh encoder–decoder (tiny sizes, Reverse) in the app's part: the
/// Sentence is its source, the Target its decoder's input.
fn mount_seq2seq_explorer() -> (HtmlElement, impl Drop) {
    let doc = web_sys::window().unwrap().document().unwrap();
    let container: HtmlElement = doc.create_element("div").unwrap().unchecked_into();
    doc.body().unwrap().append_child(&container).unwrap();
    let fresh = engine::seq2seq::Seq2SeqCheckpoint::init(
        DEFAULT_CORPUS,
        usize::MAX,
        BertConfig::tiny(1),
        &mut engine::Rng::new(0),
    )
    .unwrap();
    let (model, tokenizer) = (Arc::new(fresh.model), Arc::new(fresh.tokenizer));
    let info = ModelInfo {
        name: "tiny encoder–decoder".into(),
        layers: 2,
        heads: 4,
        hidden: 64,
        head_size: 16,
        intermediate: 256,
        max_positions: 128,
        vocab_size: tokenizer.vocab().len(),
        parameters: 0,
        tokenizer: "word-level".into(),
        corpus_words: None,
        architecture: Default::default(),
        kind: protocol::ModelKind::EncoderDecoder(engine::seq2seq::Task::Reverse),
    };
    let handle = leptos::mount::mount_to(container.clone(), move || {
        let probe = RwSignal::new(ProbeInput {
            text: "the sky is blue".into(),
            ..ProbeInput::default()
        });
        let inspection = RwSignal::new(None::<Result<Arc<Inspection>, LabError>>);
        let (model, tokenizer) = (model.clone(), tokenizer.clone());
        Effect::new(move |_| {
            let p = probe.get();
            let result =
                engine::seq2seq::inspect_texts(&model, &tokenizer, &p.text, &p.target, p.pad_to)
                    .map(Arc::new)
                    .map_err(LabError::from);
            inspection.set(Some(result));
        });
        let info = Signal::stored(Some(info.clone()));
        view! { <Explorer probe=probe inspection=inspection.into() info=info/> }
    });
    (container, handle)
}

#[wasm_bindgen_test]
async fn an_encoder_decoder_has_encoder_self_and_cross_grids_and_the_stepper_walks_cross_attention()
{
    let (root, _keep) = mount_seq2seq_explorer();
    settled().await;
    assert_eq!(
        text(&one(&root, ".mv-section[data-part=encoder] h4")),
        "Encoder"
    );
    assert_eq!(
        text(&one(&root, ".mv-section[data-part=decoder] h4")),
        "Decoder"
    );
    let grids: Vec<String> = all(&root, ".mv-section[data-part=decoder] h5")
        .iter()
        .map(text)
        .collect();
    assert_eq!(grids, ["Self", "Cross"]);
    assert_eq!(all(&root, ".model-view button.thumb").len(), 3 * 2 * 4);
    // "Target" replaces "Second sentence"; the decoder reads [CLS] and its tokens.
    assert!(all(&root, "label.field")
        .iter()
        .all(|l| !text(l).contains("Second sentence")));
    type_into(&root, "Target", "blue is");
    settled().await;
    button(&root, "Cross · Layer 2 · Head 3").click();
    settled().await;
    // Target rows × source columns: [CLS] blue is × [CLS] the sky is blue [SEP].
    let w = matrix(&root, "Layer 2 · Head 3 · cross-attention weights");
    assert_eq!((w.len(), w[0].len()), (3, 6));
    assert_eq!(
        all(&root, ".stepper .step").len(),
        7,
        "cross-attention's walk: X to · V"
    );
    let sources = text(&one(&root, ".formula-sources"));
    assert!(
        sources.contains("from the decoder") && sources.contains("from the encoder's output"),
        "{sources}"
    );
    // "Pad to" pads the source: every target row gives the [PAD] columns no weight.
    type_into(&root, "Pad to", "8");
    settled().await;
    let w = matrix(&root, "Layer 2 · Head 3 · cross-attention weights");
    assert_eq!((w.len(), w[0].len()), (3, 8));
    assert!(w
        .iter()
        .all(|row| row[6] == Some(0.0) && row[7] == Some(0.0)));
    // An encoder head walks the encoder as one BERT.
    button(&root, "Encoder · Layer 1 · Head 2").click();
    settled().await;
    let e = matrix(&root, "Layer 1 · Head 2 · encoder softmax weights");
    assert_eq!((e.len(), e[0].len()), (8, 8));
    assert_eq!(all(&root, ".stepper .step").len(), 13);
    assert!(all(&root, ".formula-sources").is_empty());
}
