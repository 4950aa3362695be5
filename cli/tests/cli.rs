//! The built `attention-lab` binary on small checkpoints written here: JSON shapes, training
//! output, save → inspect, and errors with their exit codes.

use engine::checkpoint::{save_dir, Checkpoint};
use engine::tokenizer::Tokenizer;
use engine::vocab::build_word_vocab;
use engine::{BertConfig, BertForPreTraining, Rng};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CORPUS: &str =
    "the cat sat on the mat.\nthe dog ate a bone.\na bird sang in the tree.\nwe went home.\n";

/// A fresh directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "attention-lab-cli-test-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// hidden 16, 2 layers, 2 heads (d_k 8), 16 positions, dropout 0; `heads` false = bare BertModel.
fn write_checkpoint(dir: &Path, heads: bool) -> usize {
    let vocab = build_word_vocab(CORPUS).unwrap();
    let v = vocab.len();
    let mut config = BertConfig::new(v, 16, 2, 2, 32);
    config.max_position_embeddings = 16;
    config.hidden_dropout_prob = 0.0;
    config.attention_probs_dropout_prob = 0.0;
    let mut model = BertForPreTraining::init(&config, &mut Rng::new(7));
    let mut checkpoint =
        Checkpoint::new(model.clone(), Tokenizer::word_piece(vocab, true)).unwrap();
    if !heads {
        model.cls = None;
        model.bert.pooler = None;
        checkpoint.model = model;
        checkpoint.naming.prefix = String::new();
    }
    save_dir(&checkpoint, dir).unwrap();
    v
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_attention-lab"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn dims(m: &Value) -> (usize, usize) {
    let rows = m.as_array().unwrap();
    (rows.len(), rows[0].as_array().unwrap().len())
}

fn at(m: &Value, r: usize, c: usize) -> &Value {
    &m[r][c]
}

#[test]
fn inspect_prints_every_head_with_masked_nulls_and_the_heads_outputs() {
    let tmp = TempDir::new("inspect");
    let model = tmp.path("model");
    let v = write_checkpoint(&model, true);
    let out = run(&[
        "inspect",
        "--model",
        model.to_str().unwrap(),
        "--text",
        "the cat sat",
        "--pair",
        "a dog",
        "--pad-to",
        "10",
    ]);
    let j = stdout_json(&out);
    let tokens: Vec<&str> = j["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        tokens,
        ["[CLS]", "the", "cat", "sat", "[SEP]", "a", "dog", "[SEP]", "[PAD]", "[PAD]"]
    );
    assert_eq!(
        j["token_type_ids"],
        serde_json::json!([0, 0, 0, 0, 0, 1, 1, 1, 0, 0])
    );
    assert_eq!(
        j["attention_mask"],
        serde_json::json!([1, 1, 1, 1, 1, 1, 1, 1, 0, 0])
    );
    assert_eq!(j["input_ids"].as_array().unwrap().len(), 10);
    let layers = j["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 2);
    for layer in layers {
        let heads = layer["heads"].as_array().unwrap();
        assert_eq!(heads.len(), 2);
        for h in heads {
            for key in ["q", "k", "v", "context"] {
                assert_eq!(dims(&h[key]), (10, 8), "{key}");
            }
            for key in ["scores", "scaled", "masked", "weights"] {
                assert_eq!(dims(&h[key]), (10, 10), "{key}");
            }
            for r in 0..10 {
                for c in 0..10 {
                    // padding keys: null in `masked`, weight 0; elsewhere masked = scaled
                    if c >= 8 {
                        assert!(at(&h["masked"], r, c).is_null());
                        assert_eq!(at(&h["weights"], r, c).as_f64().unwrap(), 0.0);
                    } else {
                        assert_eq!(at(&h["masked"], r, c), at(&h["scaled"], r, c));
                    }
                }
            }
        }
    }
    assert_eq!(dims(&j["hidden"]), (10, 16));
    assert_eq!(dims(&j["mlm_logits"]), (10, v));
    assert_eq!(j["nsp_logits"].as_array().unwrap().len(), 2);
}

#[test]
fn causal_mask_zeroes_the_future_and_headless_checkpoints_have_no_logits() {
    let tmp = TempDir::new("causal");
    let model = tmp.path("model");
    write_checkpoint(&model, false);
    let out = run(&[
        "inspect",
        "--model",
        model.to_str().unwrap(),
        "--text",
        "the cat sat on the mat",
        "--mask",
        "causal",
    ]);
    let j = stdout_json(&out);
    let t = j["tokens"].as_array().unwrap().len();
    assert_eq!(t, 8);
    let h = &j["layers"][1]["heads"][0];
    for r in 0..t {
        for c in 0..t {
            let w = at(&h["weights"], r, c).as_f64().unwrap();
            if c > r {
                assert_eq!(w, 0.0);
                assert!(at(&h["masked"], r, c).is_null());
            } else {
                assert!(w > 0.0);
            }
        }
    }
    assert_eq!(at(&h["weights"], 0, 0).as_f64().unwrap(), 1.0);
    assert!(j.get("mlm_logits").is_none() && j.get("nsp_logits").is_none());
    assert_eq!(dims(&j["hidden"]), (8, 16));
}

fn write_batch(path: &Path) {
    // 2 examples of 8 tokens (ids of the corpus vocabulary), one padded.
    let batch = serde_json::json!({
        "input_ids": [[2, 5, 4, 9, 3, 7, 8, 3], [2, 5, 10, 3, 6, 3, 0, 0]],
        "token_type_ids": [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]],
        "attention_mask": [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]],
        "mlm_labels": [[-100, -100, 6, -100, -100, -100, 11, -100], [-100, -100, -100, -100, 12, -100, -100, -100]],
        "nsp_labels": [0, 1]
    });
    std::fs::write(path, batch.to_string()).unwrap();
}

fn lines(out: &Output) -> Vec<Value> {
    assert!(out.status.success(), "failed: {}", stderr(out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn train_on_a_fixed_batch_prints_falling_losses_and_saves_a_checkpoint() {
    let tmp = TempDir::new("train");
    let (model, batch, out_dir, copy) = (
        tmp.path("model"),
        tmp.path("batch.json"),
        tmp.path("out"),
        tmp.path("copy"),
    );
    write_checkpoint(&model, true);
    write_batch(&batch);
    let m = model.to_str().unwrap();
    let b = batch.to_str().unwrap();
    let args = [
        "train",
        "--model",
        m,
        "--batch",
        b,
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--steps",
        "6",
    ];
    let steps = lines(&run(
        &[&args[..], &["--save", out_dir.to_str().unwrap()]].concat()
    ));
    assert_eq!(steps.len(), 6);
    for (i, s) in steps.iter().enumerate() {
        assert_eq!(s["step"], i + 1);
        let (loss, mlm, nsp) = (
            s["loss"].as_f64().unwrap(),
            s["mlm_loss"].as_f64().unwrap(),
            s["nsp_loss"].as_f64().unwrap(),
        );
        assert!((loss - mlm - nsp).abs() < 1e-4, "{s}");
    }
    let (first, last) = (
        steps[0]["loss"].as_f64().unwrap(),
        steps[5]["loss"].as_f64().unwrap(),
    );
    assert!(last < first - 0.5, "loss {first} → {last}");
    // SGD too, and the same run twice gives the same numbers.
    let sgd = [
        "train",
        "--model",
        m,
        "--batch",
        b,
        "--optimizer",
        "sgd",
        "--lr",
        "0.5",
        "--steps",
        "3",
    ];
    let a = lines(&run(&sgd));
    assert_eq!(a, lines(&run(&sgd)));
    assert!(a[2]["loss"].as_f64().unwrap() < a[0]["loss"].as_f64().unwrap());
    let clipped = lines(&run(&[
        &sgd[..],
        &["--momentum", "0.9", "--clip-grad-norm", "0.01"],
    ]
    .concat()));
    assert_eq!(clipped[0], a[0]);
    assert_ne!(clipped[2], a[2]);

    // save → inspect: 0 steps is a faithful copy; 6 steps changed the weights.
    let zero = [
        "train",
        "--model",
        m,
        "--batch",
        b,
        "--optimizer",
        "sgd",
        "--lr",
        "0.1",
        "--steps",
        "0",
    ];
    assert!(lines(&run(
        &[&zero[..], &["--save", copy.to_str().unwrap()]].concat()
    ))
    .is_empty());
    let inspect = |dir: &Path| {
        stdout_json(&run(&[
            "inspect",
            "--model",
            dir.to_str().unwrap(),
            "--text",
            "the cat [MASK]",
        ]))
    };
    let original = inspect(&model);
    assert_eq!(inspect(&copy), original);
    let trained = inspect(&out_dir);
    assert_eq!(trained["tokens"], original["tokens"]);
    assert_ne!(trained["hidden"], original["hidden"]);
    let names = |dir: &Path| {
        let bytes = std::fs::read(dir.join("model.safetensors")).unwrap();
        let mut n: Vec<String> = safetensors_names(&bytes);
        n.sort();
        n
    };
    assert_eq!(names(&out_dir), names(&model));
}

/// Tensor names from a safetensors header (8-byte length, then JSON).
fn safetensors_names(bytes: &[u8]) -> Vec<String> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Map<String, Value> = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    header
        .keys()
        .filter(|k| *k != "__metadata__")
        .cloned()
        .collect()
}

#[test]
fn train_from_scratch_reports_accuracies_and_saves() {
    let tmp = TempDir::new("scratch");
    let (config, corpus, out_dir) = (
        tmp.path("config.json"),
        tmp.path("corpus.txt"),
        tmp.path("out"),
    );
    let json = r#"{"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                   "intermediate_size": 32, "max_position_embeddings": 16, "vocab_size": 999}"#;
    std::fs::write(&config, json).unwrap();
    std::fs::write(&corpus, CORPUS).unwrap();
    let args = [
        "train",
        "--init",
        config.to_str().unwrap(),
        "--corpus",
        corpus.to_str().unwrap(),
        "--steps",
        "4",
        "--batch-size",
        "2",
        "--seed",
        "3",
        "--save",
        out_dir.to_str().unwrap(),
    ];
    let out = run(&args);
    let steps = lines(&out);
    assert_eq!(steps.len(), 4);
    for key in [
        "step",
        "loss",
        "mlm_loss",
        "nsp_loss",
        "mlm_accuracy",
        "nsp_accuracy",
    ] {
        assert!(steps[3][key].is_number(), "{key} in {}", steps[3]);
    }
    assert!(stderr(&out).contains("vocab_size 999"), "{}", stderr(&out));
    let j = stdout_json(&run(&[
        "inspect",
        "--model",
        out_dir.to_str().unwrap(),
        "--text",
        "the dog sat",
    ]));
    assert_eq!(j["layers"].as_array().unwrap().len(), 1);
    let tok = stdout_json(&run(&[
        "tokenize",
        "--model",
        out_dir.to_str().unwrap(),
        "--text",
        "The dog. a zebra",
    ]));
    assert_eq!(
        tok["tokens"],
        serde_json::json!(["the", "dog", ".", "a", "[UNK]"])
    );
    assert_eq!(tok["input_ids"].as_array().unwrap()[4], 1); // [UNK]
}

fn assert_fails(out: &Output, code: i32, needle: &str) {
    assert_eq!(out.status.code(), Some(code), "stderr: {}", stderr(out));
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr(out).contains(needle),
        "expected {needle:?} in: {}",
        stderr(out)
    );
}

#[test]
fn errors_are_reported_with_a_non_zero_exit() {
    let tmp = TempDir::new("errors");
    let model = tmp.path("model");
    write_checkpoint(&model, true);
    let m = model.to_str().unwrap();
    let missing = tmp.path("nope");
    assert_fails(
        &run(&[
            "inspect",
            "--model",
            missing.to_str().unwrap(),
            "--text",
            "x",
        ]),
        1,
        "is not a directory",
    );

    let corrupt = tmp.path("corrupt");
    write_checkpoint(&corrupt, true);
    let weights = corrupt.join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    assert_fails(
        &run(&[
            "inspect",
            "--model",
            corrupt.to_str().unwrap(),
            "--text",
            "x",
        ]),
        1,
        "safetensors",
    );

    assert_fails(
        &run(&["inspect", "--model", m, "--text", "x", "--colour", "red"]),
        2,
        "unknown flag --colour",
    );
    assert_fails(&run(&["inspect", "--model", m]), 2, "--text is required");
    assert_fails(
        &run(&["inspect", "--model", m, "--text", "x", "--mask", "diagonal"]),
        2,
        "--mask must be",
    );
    assert_fails(
        &run(&["inspect", "--model", m, "--text", "x", "--pad-to", "many"]),
        2,
        "--pad-to must be",
    );
    assert_fails(
        &run(&["inspect", "--model", m, "--text", "x", "--pad-to", "99"]),
        1,
        "16 positions",
    );
    assert_fails(&run(&["frobnicate"]), 2, "unknown command");
    assert_fails(&run(&[]), 2, "no command");
    let batch = tmp.path("batch.json");
    write_batch(&batch);
    let b = batch.to_str().unwrap();
    let train = |extra: &[&str]| {
        run(&[
            &["train", "--model", m, "--batch", b, "--steps", "1"][..],
            extra,
        ]
        .concat())
    };
    assert_fails(
        &train(&["--optimizer", "adam", "--lr", "-1"]),
        1,
        "learning rate",
    );
    assert_fails(
        &train(&["--optimizer", "rmsprop", "--lr", "0.1"]),
        2,
        "--optimizer must be sgd or adam",
    );
    assert_fails(&train(&["--lr", "0.1"]), 2, "--optimizer is required");
    assert_fails(
        &train(&["--optimizer", "adam", "--lr", "0.1", "--momentum", "0.9"]),
        2,
        "--momentum is for",
    );
    assert_fails(
        &train(&["--optimizer", "sgd", "--lr", "0.1", "--momentum", "1.5"]),
        1,
        "momentum must be",
    );
    assert_fails(
        &train(&["--optimizer", "sgd", "--lr", "0.1", "--clip-grad-norm", "0"]),
        1,
        "clip_grad_norm",
    );
    assert_fails(
        &train(&["--optimizer", "sgd", "--lr", "0.1", "--corpus", "x.txt"]),
        2,
        "does not go with",
    );
    std::fs::write(
        &batch,
        r#"{"input_ids": [[2, 5], [2]], "nsp_labels": [0, 1]}"#,
    )
    .unwrap();
    assert_fails(
        &train(&["--optimizer", "sgd", "--lr", "0.1"]),
        1,
        "input_ids must be 2 lists of 2",
    );
    // A headless checkpoint cannot be trained.
    let bare = tmp.path("bare");
    write_checkpoint(&bare, false);
    write_batch(&batch);
    let out = run(&[
        "train",
        "--model",
        bare.to_str().unwrap(),
        "--batch",
        b,
        "--optimizer",
        "sgd",
        "--lr",
        "0.1",
        "--steps",
        "1",
    ]);
    assert_fails(&out, 1, "no pre-training heads");
}

#[test]
fn every_command_has_help() {
    for command in ["inspect", "train", "tokenize"] {
        let out = run(&[command, "--help"]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.starts_with(&format!("attention-lab {command}")),
            "{text}"
        );
    }
    assert!(String::from_utf8_lossy(&run(&["--help"]).stdout).contains("usage:"));
}

fn run_os(args: &[std::ffi::OsString]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_attention-lab"))
        .args(args)
        .output()
        .unwrap()
}

#[cfg(unix)]
#[test]
fn a_non_utf8_argument_is_a_usage_error_naming_the_flag() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let tmp = TempDir::new("utf8");
    let model = tmp.path("model");
    write_checkpoint(&model, true);
    let m = OsString::from(model.to_str().unwrap());
    let os = |s: &str| OsString::from(s);
    let bad = OsString::from_vec(b"ab\xffcd".to_vec());
    let out = run_os(&[os("inspect"), os("--model"), m.clone(), os("--text"), bad]);
    assert_fails(&out, 2, "--text must be valid UTF-8, got \"ab\u{FFFD}cd\"");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let bad_eq = OsString::from_vec(b"--text=ab\xffcd".to_vec());
    assert_fails(
        &run_os(&[os("tokenize"), os("--model"), m.clone(), bad_eq]),
        2,
        "--text must be valid UTF-8",
    );
    // In a choice or a number too.
    let bad_mask = OsString::from_vec(b"caus\xffal".to_vec());
    assert_fails(
        &run_os(&[
            os("inspect"),
            os("--model"),
            m,
            os("--text"),
            os("x"),
            os("--mask"),
            bad_mask,
        ]),
        2,
        "--mask must be padding, causal or none, got \"caus\u{FFFD}al\"",
    );
    // A path may be any OS string: a missing directory is the usual error, not a usage one.
    let bad_dir = OsString::from_vec(b"/nonexistent/\xff".to_vec());
    assert_fails(
        &run_os(&[os("inspect"), os("--model"), bad_dir, os("--text"), os("x")]),
        1,
        "is not a directory",
    );
}

#[test]
fn flag_mistakes_are_usage_errors_and_both_flag_forms_work() {
    let tmp = TempDir::new("flags");
    let model = tmp.path("model");
    write_checkpoint(&model, true);
    let m = model.to_str().unwrap();
    assert_fails(
        &run(&["inspect", "--model", m, "--text", "x", "--mod", "y"]),
        2,
        "unknown flag --mod (did you mean --model?)",
    );
    assert_fails(
        &run(&["inspect", "--model", m, "--text"]),
        2,
        "--text needs a value",
    );
    assert_fails(
        &run(&["inspect", "--model", m, "--text", "a", "--text", "b"]),
        2,
        "--text is given twice",
    );
    assert_fails(
        &run(&["inspect", "--model", m, "--text", "x", "stray"]),
        2,
        "unexpected argument \"stray\"",
    );
    assert_fails(
        &run(&["inspect", "--model", m, "--text", "x", "--pad-to=-3"]),
        2,
        "--pad-to must be a whole number of tokens, got \"-3\"",
    );
    let batch = tmp.path("batch.json");
    write_batch(&batch);
    let b = batch.to_str().unwrap();
    let train = |extra: &[&str]| {
        run(&[
            &["train", "--model", m, "--batch", b, "--optimizer", "sgd"][..],
            extra,
        ]
        .concat())
    };
    assert_fails(
        &train(&["--lr", "0.1", "--steps", "1.5"]),
        2,
        "--steps must be a whole number, got \"1.5\"",
    );
    assert_fails(
        &train(&["--lr", "fast", "--steps", "1"]),
        2,
        "--lr must be a number, got \"fast\"",
    );
    assert_fails(&train(&["--steps", "1"]), 2, "--lr is required");
    // The usage line of the command goes with the message.
    assert!(stderr(&train(&["--steps", "1"])).contains("attention-lab train --model DIR"));

    // --flag=value is --flag value; values may start with '-'.
    let spaced = stdout_json(&run(&["inspect", "--model", m, "--text", "-the cat"]));
    let joined = stdout_json(&run(&[
        "inspect",
        &format!("--model={m}"),
        "--text=-the cat",
    ]));
    assert_eq!(spaced, joined);
    assert_eq!(spaced["tokens"].as_array().unwrap().len(), 5); // [CLS] - the cat [SEP]
}
