//! The torch checks, as `./dev pytorch` last recorded them (`pytorch/record.json`): the module
//! against the engine's fixtures and the CLI's `inspect` and `heads`, and "Open in PyTorch"
//! notebooks from the page run in Jupyter.
//! CI has no torch, so this reads the record, and fails when the files it was made for have
//! changed since: then `./dev pytorch` must make it again.

use serde_json::Value;
use std::path::Path;

const TOLERANCE: f64 = 1e-4;

/// The notebooks the issue asks for, each taken from the page and run.
const REQUIRED: [&str; 5] = ["bert-pair", "decoder", "rotary", "gqa", "seq2seq"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// FNV-1a, 64 bits, as 16 hex digits (e2e/notebook/record.mjs and tools/check_pytorch_module.py
/// compute the same).
fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

fn record() -> Value {
    let path = root().join("pytorch/record.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}: run ./dev pytorch", path.display()));
    serde_json::from_str(&text).expect("pytorch/record.json is JSON")
}

/// Every file a section names in its "hashes" is as it was when the section was made.
fn assert_current(section: &Value, what: &str) {
    let hashes = section["hashes"]
        .as_object()
        .unwrap_or_else(|| panic!("{what}: no hashes"));
    assert!(!hashes.is_empty(), "{what}: no hashes");
    for (file, hash) in hashes {
        let bytes = std::fs::read(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            hash.as_str(),
            Some(fnv1a64(&bytes).as_str()),
            "{file} changed since pytorch/record.json's {what} were made: run ./dev pytorch (with torch) and commit the record"
        );
    }
}

#[test]
fn the_hash_is_fnv_1a() {
    assert_eq!(fnv1a64(b""), "cbf29ce484222325");
    assert_eq!(fnv1a64(b"a"), "af63dc4c8601ec8c");
}

#[test]
fn the_module_matched_the_engines_fixtures_for_every_architecture() {
    let record = record();
    let fixtures = &record["fixtures"];
    assert_current(fixtures, "fixture checks");
    assert!(
        fixtures["hashes"]
            .as_object()
            .is_some_and(|h| h.contains_key("pytorch/attention_lab.py")),
        "the fixture checks name the module"
    );
    let cases = fixtures["cases"].as_array().expect("fixture cases");
    assert!(cases.len() >= 10, "{} fixture cases", cases.len());
    for case in cases {
        let diff = case["max_abs_diff"].as_f64().unwrap_or(f64::INFINITY);
        let name = case["name"].as_str().unwrap_or_default();
        // Key biases have no gradient in exact arithmetic, so Adam moves them by float noise
        // of ±lr a step: the engine's own tests bound them so, and the name says the bound.
        let bound = name
            .split_once("within 2·lr·steps = ")
            .and_then(|(_, b)| b.trim().parse::<f64>().ok())
            .unwrap_or(TOLERANCE);
        assert!(
            case["ok"] == Value::Bool(true) && diff <= bound,
            "fixture case {name}: {diff} (bound {bound})"
        );
    }
    // Every architecture the page offers is among them.
    let names: Vec<&str> = cases.iter().filter_map(|c| c["name"].as_str()).collect();
    for kind in [
        "reference",
        "gqa",
        "rotary",
        "decoder",
        "seq2seq",
        "alibi",
        "linear",
        "window",
        "unscaled",
    ] {
        assert!(
            names.iter().any(|n| n.contains(kind)),
            "no fixture case for {kind}: {names:?}"
        );
    }
    assert_eq!(fixtures["passed"], Value::Bool(true));
    // The same module against models the CLI trained and `inspect` read.
    let cli = &record["cli"];
    assert_current(cli, "CLI checks");
    let cases = cli["cases"].as_array().expect("CLI cases");
    assert!(cases.len() >= 10 && cases.iter().all(|c| c["ok"] == Value::Bool(true)));
    assert_eq!(cli["passed"], Value::Bool(true));
}

#[test]
fn heads_recomputed_from_its_printed_rows_by_the_module_matched() {
    let record = record();
    let heads = &record["heads"];
    assert_current(heads, "heads checks");
    assert!(
        heads["hashes"]
            .get("engine/src/experiments/heads.rs")
            .is_some(),
        "the heads checks name the measurement they vouch for"
    );
    let cases = heads["cases"].as_array().expect("heads cases");
    for case in cases {
        let diff = case["max_abs_diff"].as_f64().unwrap_or(f64::INFINITY);
        assert!(
            case["ok"] == Value::Bool(true) && diff <= TOLERANCE,
            "heads case {}: {diff}",
            case["name"]
        );
    }
    // Each model twice: its shares, errors and baseline; its roles and verdict.
    let names: Vec<&str> = cases.iter().filter_map(|c| c["name"].as_str()).collect();
    for model in [
        "cli/absolute",
        "cli/decoder",
        "cli/linear",
        "default run",
        "MiniLM",
    ] {
        for what in ["shares, errors, baseline", "roles and verdict recomputed"] {
            assert!(
                names
                    .iter()
                    .any(|n| n.starts_with(&format!("heads/{model}")) && n.contains(what)),
                "no heads case of {model}'s {what}: {names:?}"
            );
        }
    }
    // The roles compared include some a head takes, in a model the verdict bears out.
    assert!(
        names.iter().any(|n| n.contains("(borne out; L")),
        "no model with roles among the heads cases: {names:?}"
    );
    assert_eq!(heads["passed"], Value::Bool(true));
}

#[test]
fn notebooks_from_the_page_printed_the_pages_weights_and_saved_checkpoints_it_opens() {
    let record = record();
    let notebooks = &record["notebooks"];
    assert_current(notebooks, "notebook runs");
    // Every file that shapes a notebook (e2e/notebook/record.mjs hashes the same).
    for file in [
        "pytorch/attention_lab.py",
        "pytorch/notebook.py",
        "protocol/src/notebook.rs",
        "src/pytorch/notebook.rs",
    ] {
        assert!(
            notebooks["hashes"].get(file).is_some(),
            "the notebook runs name {file}"
        );
    }
    let cases = notebooks["cases"].as_array().expect("notebook cases");
    for name in REQUIRED {
        let case = cases
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no notebook run for {name}"));
        let diff = case["max_abs_diff"].as_f64().unwrap_or(f64::INFINITY);
        let reloaded = case["reload_max_abs_diff"]
            .as_f64()
            .unwrap_or(f64::INFINITY);
        assert!(
            case["ok"] == Value::Bool(true) && diff <= TOLERANCE && reloaded <= TOLERANCE,
            "{name}: the notebook's weights {diff} from the page's, the saved checkpoint's {reloaded}: {}",
            case["error"]
        );
    }
    assert!(
        cases.iter().all(|c| c["ok"] == Value::Bool(true)),
        "a notebook run failed"
    );
    assert_eq!(notebooks["passed"], Value::Bool(true));
}
