//! What an earlier visit left in localStorage, hand-edited into nonsense: every bad value falls
//! back to its default with a notice naming the setting and the reason, and nothing panics.

use attention_lab_web::storage;
use engine::optim::OptimizerKind;
use engine::MaskMode;
use protocol::restore::{self, Restored};
use protocol::{LabSettings, Preset, ProbeInput, DEFAULT_CORPUS};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// Good settings, as the page saves them, with `field` replaced by `json`.
fn edited(field: &str, json: &str) -> String {
    let good = LabSettings {
        learning_rate: 0.002,
        batch_size: 16,
        preset: Preset::Small,
        optimizer: OptimizerKind::Sgd,
        seed: 7,
        ..LabSettings::default()
    };
    let mut value = serde_json::to_value(&good).unwrap();
    value[field] = serde_json::from_str(json).unwrap();
    value.to_string()
}

/// `field` came back as its default and one notice says so, naming `label`; the other fields
/// kept their (good) values.
fn reset_alone(r: &Restored<LabSettings>, field: &str, label: &str) {
    let default = serde_json::to_value(LabSettings::default()).unwrap();
    let back = serde_json::to_value(&r.value).unwrap();
    assert_eq!(back[field], default[field], "{field} not reset: {back}");
    assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
    let notice = &r.notices[0];
    assert!(
        notice.starts_with(label) && notice.contains("reset to"),
        "{notice}"
    );
    assert_eq!(
        r.value.seed == 7,
        field != "seed",
        "other fields kept: {back}"
    );
    assert_eq!(r.value.preset == Preset::Small, field != "preset");
}

#[wasm_bindgen_test]
fn bad_numbers_fall_back_to_their_defaults_with_a_notice() {
    let cases = [
        ("batch_size", "1000000000", "Batch size", "from 1 to 64"),
        ("batch_size", "0", "Batch size", "from 1 to 64"),
        ("batch_size", "2.5", "Batch size", "whole number"),
        ("batch_size", "\"eight\"", "Batch size", "not a number"),
        ("learning_rate", "-0.1", "Learning rate", "positive"),
        ("learning_rate", "0", "Learning rate", "positive"),
        // JSON has no NaN: serde_json writes a NaN as null.
        ("learning_rate", "null", "Learning rate", "not a number"),
        ("mask_prob", "1.5", "Mask probability", "(0, 1]"),
        ("mask_prob", "-1", "Mask probability", "(0, 1]"),
        ("seed", "-3", "Seed", "≥ 0"),
        ("seed", "1e300", "Seed", "≥ 0"),
        ("seed", "[1, 2]", "Seed", "not a number"),
        ("max_len", "100000", "Training length", "from 5 to 128"),
        ("preset", "\"Huge\"", "Preset", "tiny or small"),
        ("preset", "7", "Preset", "not a name"),
        ("optimizer", "\"Lion\"", "Optimizer", "Adam or SGD"),
        (
            "train_mask",
            "\"diagonal\"",
            "Training mask",
            "None, Padding or Causal",
        ),
    ];
    for (field, json, label, why) in cases {
        let r = restore::settings(Some(&edited(field, json)));
        reset_alone(&r, field, label);
        assert!(
            r.notices[0].contains(why),
            "{field} = {json}: {:?}",
            r.notices
        );
    }
    let r = restore::settings(Some(&edited("batch_size", "1000000000")));
    assert_eq!(
        r.notices[0],
        "Batch size 1000000000 from the last visit was reset to 8: the batch size must be a whole number from 1 to 64."
    );
}

#[wasm_bindgen_test]
fn unreadable_settings_give_all_the_defaults_and_say_so() {
    // A hand edit that is not JSON at all (a NaN typed in), or not an object.
    for kept in ["{\"learning_rate\": NaN}", "[1, 2, 3]", "\"tiny\"", "", "{"] {
        let r = restore::settings(Some(kept));
        assert_eq!(r.value, LabSettings::default(), "{kept}");
        assert_eq!(r.notices.len(), 1, "{kept}: {:?}", r.notices);
        assert!(r.notices[0].contains("unreadable"), "{:?}", r.notices);
    }
    // Fields of an older version are simply absent: their defaults, quietly.
    let r = restore::settings(Some("{\"batch_size\": 4}"));
    assert_eq!(r.value.batch_size, 4);
    assert_eq!(r.value.learning_rate, LabSettings::default().learning_rate);
    assert!(r.notices.is_empty(), "{:?}", r.notices);
}

#[wasm_bindgen_test]
fn a_bad_probe_keeps_its_good_fields() {
    let kept = r#"{"text": "the cat [MASK] .", "pair": 42, "pad_to": -3, "mask": "diagonal"}"#;
    let r = restore::probe(Some(kept));
    assert_eq!(r.value.text, "the cat [MASK] .");
    assert_eq!(r.value.pair, ProbeInput::default().pair);
    assert_eq!(r.value.pad_to, None);
    assert_eq!(r.value.mask, MaskMode::Padding);
    assert_eq!(r.notices.len(), 3, "{:?}", r.notices);
    for label in ["Second sentence", "Pad to", "Mask"] {
        assert!(
            r.notices.iter().any(|n| n.starts_with(label)),
            "{label}: {:?}",
            r.notices
        );
    }
    let good = r#"{"text": "a b", "pair": "", "pad_to": 12, "mask": "causal"}"#;
    let r = restore::probe(Some(good));
    assert!(r.notices.is_empty(), "{:?}", r.notices);
    assert_eq!((r.value.pad_to, r.value.mask), (Some(12), MaskMode::Causal));
    // "None" (no mask at all) is one of the page's masks, so it comes back as kept.
    let none = r#"{"text": "a b", "pair": "", "pad_to": 12, "mask": "None"}"#;
    let r = restore::probe(Some(none));
    assert!(r.notices.is_empty(), "{:?}", r.notices);
    assert_eq!(r.value.mask, MaskMode::None);
}

#[wasm_bindgen_test]
fn a_corpus_that_is_not_text_gives_the_built_in_one() {
    let r = restore::corpus(Some("{\"lines\": 3}"));
    assert_eq!(r.value, DEFAULT_CORPUS);
    assert_eq!(r.notices.len(), 1);
    let r = restore::corpus(Some("\"one line .\\ntwo line .\""));
    assert_eq!(r.value, "one line .\ntwo line .");
    assert!(r.notices.is_empty());
    assert_eq!(restore::corpus(None).value, DEFAULT_CORPUS);
}

#[wasm_bindgen_test]
fn hand_edited_local_storage_reads_back_checked() {
    let raw = web_sys::window().unwrap().local_storage().unwrap().unwrap();
    raw.set_item(
        &storage::key("test-restore"),
        "{\"batch_size\": 1e9, \"learning_rate\": \"fast\", \"seed\": 3}",
    )
    .unwrap();
    let r = restore::settings(storage::load_text("test-restore").as_deref());
    assert_eq!(r.value.batch_size, 8);
    assert_eq!(r.value.learning_rate, LabSettings::default().learning_rate);
    assert_eq!(r.value.seed, 3);
    assert_eq!(r.notices.len(), 2, "{:?}", r.notices);
    storage::remove("test-restore");
    assert_eq!(storage::load_text("test-restore"), None);
}
