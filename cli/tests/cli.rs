//! The built `attention-lab` binary on small checkpoints written here: JSON shapes, training
//! output, save → inspect, and errors with their exit codes.

mod common;

use common::values::*;
use common::*;
use serde_json::Value;
use std::path::Path;

#[test]
fn inspect_prints_every_head_with_masked_nulls_and_the_heads_outputs() {
    let fx = Fixture::new("inspect");
    let j = fx
        .inspect("the cat sat")
        .with(&["--pair", "a dog", "--pad-to", "10"])
        .json();
    assert_eq!(
        strings(&j["tokens"]),
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
    assert_eq!(dims(&j["mlm_logits"]), (10, fx.vocab));
    assert_eq!(j["nsp_logits"].as_array().unwrap().len(), 2);
}

#[test]
fn causal_mask_zeroes_the_future_and_headless_checkpoints_have_no_logits() {
    let fx = Fixture::headless("causal");
    let j = fx
        .inspect("the cat sat on the mat")
        .with(&["--mask", "causal"])
        .json();
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

#[test]
fn train_on_a_fixed_batch_prints_falling_losses_and_saves_a_checkpoint() {
    let fx = Fixture::new("train");
    let (out_dir, copy) = (fx.tmp.path("out"), fx.tmp.path("copy"));
    let train = fx.train();
    let adam = train.with(&["--optimizer", "adam", "--lr", "0.01", "--steps", "6"]);
    let steps = adam.with(&["--save", &out_dir]).lines();
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
    let sgd = train.with(&["--optimizer", "sgd", "--lr", "0.5", "--steps", "3"]);
    let a = sgd.lines();
    assert_eq!(a, sgd.lines());
    assert!(a[2]["loss"].as_f64().unwrap() < a[0]["loss"].as_f64().unwrap());
    let clipped = sgd
        .with(&["--momentum", "0.9", "--clip-grad-norm", "0.01"])
        .lines();
    assert_eq!(clipped[0], a[0]);
    assert_ne!(clipped[2], a[2]);

    // save → inspect: 0 steps is a faithful copy; 6 steps changed the weights.
    let zero = train.with(&["--optimizer", "sgd", "--lr", "0.1", "--steps", "0"]);
    assert!(zero.with(&["--save", &copy]).lines().is_empty());
    let inspect = |dir: &str| Cmd::inspect(dir, "the cat [MASK]").json();
    let original = inspect(&fx.model);
    assert_eq!(inspect(&copy), original);
    let trained = inspect(&out_dir);
    assert_eq!(trained["tokens"], original["tokens"]);
    assert_ne!(trained["hidden"], original["hidden"]);
    let names = |dir: &str| {
        let bytes = std::fs::read(Path::new(dir).join("model.safetensors")).unwrap();
        let mut n: Vec<String> = safetensors_names(&bytes);
        n.sort();
        n
    };
    assert_eq!(names(&out_dir), names(&fx.model));
}

/// The losses `train --model --batch` printed before the speed work (issue 10), on the test
/// checkpoint with dropout 0.1 (so the generator's draws are covered too): faster kernels
/// must print the same run. Recorded again when dropout became a hash of each entry's index
/// under one seed per step (data-parallel shares): other masks, the same batches. Exact for
/// SGD on this machine's kernels; a tolerance keeps other CPUs' GEMM kernels (a different
/// summation order) from failing it.
#[test]
fn train_prints_the_losses_recorded_before_the_speed_work() {
    let fx = Fixture::with_dropout("recorded", 0.1);
    let train = fx.train();
    let run_losses = |optimizer: &str, lr: &str| -> Vec<[f64; 3]> {
        train
            .with(&[
                "--optimizer",
                optimizer,
                "--lr",
                lr,
                "--steps",
                "5",
                "--seed",
                "3",
            ])
            .lines()
            .iter()
            .map(|s| ["loss", "mlm_loss", "nsp_loss"].map(|k| s[k].as_f64().unwrap()))
            .collect()
    };
    let check = |got: Vec<[f64; 3]>, want: &[[f64; 3]], tol: f64| {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            for (a, b) in g.iter().zip(w) {
                assert!(
                    (a - b).abs() <= tol * b.abs(),
                    "got {got:?}, recorded {want:?}"
                );
            }
        }
    };
    check(run_losses("sgd", "0.5"), &SGD_RECORDED, 1e-5);
    check(run_losses("adam", "0.01"), &ADAM_RECORDED, 1e-4);
}

/// `--threads N`: the same lines on 1 thread and on 2; 0 is a usage mistake.
#[test]
fn train_prints_the_same_losses_whatever_the_threads() {
    let fx = Fixture::with_dropout("threads", 0.1);
    let train = fx.train().with(&[
        "--optimizer",
        "adam",
        "--lr",
        "0.01",
        "--steps",
        "3",
        "--seed",
        "3",
    ]);
    let threads = |n: &str| train.with(&["--threads", n]);
    let one = threads("1").lines();
    assert_eq!(one.len(), 3);
    assert_eq!(one, threads("2").lines());
    threads("0").fails_with(2, "--threads must be from 1 to 1024, got 0");
}

const SGD_RECORDED: [[f64; 3]; 5] = [
    [3.8420005, 3.148863, 0.69313735],
    [3.1527839, 2.4600117, 0.69277227],
    [1.8397802, 1.1464111, 0.69336915],
    [1.4733453, 0.7773151, 0.69603026],
    [2.1577325, 1.465488, 0.6922444],
];
const ADAM_RECORDED: [[f64; 3]; 5] = [
    [3.8420005, 3.148863, 0.69313735],
    [3.553141, 2.8598807, 0.6932604],
    [3.3518906, 2.6572824, 0.6946083],
    [3.1673822, 2.4596708, 0.70771134],
    [2.9751093, 2.280368, 0.69474125],
];

#[test]
fn train_from_scratch_reports_accuracies_and_saves() {
    let tmp = TempDir::new("scratch");
    let out_dir = tmp.path("out");
    let config = tmp.write(
        "config.json",
        config_json(16, 1, 32, 16, r#", "vocab_size": 999"#),
    );
    let out = Cmd::train_init(&config, &tmp.corpus())
        .with(&[
            "--steps",
            "4",
            "--batch-size",
            "2",
            "--seed",
            "3",
            "--save",
            &out_dir,
        ])
        .run();
    let steps = out.lines();
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
    assert!(
        out.stderr_text().contains("vocab_size 999"),
        "{}",
        out.stderr_text()
    );
    let j = Cmd::inspect(&out_dir, "the dog sat").json();
    assert_eq!(j["layers"].as_array().unwrap().len(), 1);
    let tok = Cmd::new(&[
        "tokenize",
        "--model",
        &out_dir,
        "--text",
        "The dog. a zebra",
    ])
    .json();
    assert_eq!(
        tok["tokens"],
        serde_json::json!(["the", "dog", ".", "a", "[UNK]"])
    );
    assert_eq!(tok["input_ids"].as_array().unwrap()[4], 1); // [UNK]
}

#[test]
fn errors_are_reported_with_a_non_zero_exit() {
    let fx = Fixture::new("errors");
    Cmd::inspect(&fx.tmp.path("nope"), "x").fails_with(1, "is not a directory");

    let (corrupt, _) = fx.tmp.checkpoint("corrupt", true, 0.0);
    let weights = Path::new(&corrupt).join("model.safetensors");
    let bytes = std::fs::read(&weights).unwrap();
    std::fs::write(&weights, &bytes[..bytes.len() / 2]).unwrap();
    Cmd::inspect(&corrupt, "x").fails_with(1, "safetensors");

    let x = fx.inspect("x");
    x.with(&["--colour", "red"])
        .fails_with(2, "unknown flag --colour");
    Cmd::new(&["inspect", "--model", &fx.model]).fails_with(2, "--text is required");
    x.with(&["--mask", "diagonal"])
        .fails_with(2, "--mask must be");
    x.with(&["--pad-to", "many"])
        .fails_with(2, "--pad-to must be");
    x.with(&["--pad-to", "99"]).fails_with(1, "16 positions");
    Cmd::new(&["frobnicate"]).fails_with(2, "unknown command");
    Cmd::new(&[]).fails_with(2, "no command");

    let batch = fx.tmp.batch();
    let train = Cmd::train(&fx.model, &batch).with(&["--steps", "1"]);
    train
        .with(&["--optimizer", "adam", "--lr", "-1"])
        .fails_with(1, "learning rate");
    train
        .with(&["--optimizer", "rmsprop", "--lr", "0.1"])
        .fails_with(2, "--optimizer must be sgd or adam");
    train
        .with(&["--lr", "0.1"])
        .fails_with(2, "--optimizer is required");
    train
        .with(&["--optimizer", "adam", "--lr", "0.1", "--momentum", "0.9"])
        .fails_with(2, "--momentum is for");
    train
        .with(&["--optimizer", "sgd", "--lr", "0.1", "--momentum", "1.5"])
        .fails_with(1, "momentum must be");
    train
        .with(&["--optimizer", "sgd", "--lr", "0.1", "--clip-grad-norm", "0"])
        .fails_with(1, "clip_grad_norm");
    train
        .with(&["--optimizer", "sgd", "--lr", "0.1", "--corpus", "x.txt"])
        .fails_with(2, "does not go with");
    fx.tmp.write(
        "batch.json",
        r#"{"input_ids": [[2, 5], [2]], "nsp_labels": [0, 1]}"#,
    );
    train
        .with(&["--optimizer", "sgd", "--lr", "0.1"])
        .fails_with(1, "input_ids must be 2 lists of 2");
    // A headless checkpoint cannot be trained.
    let (bare, _) = fx.tmp.checkpoint("bare", false, 0.0);
    Cmd::train(&bare, &fx.tmp.batch())
        .with(&["--optimizer", "sgd", "--lr", "0.1", "--steps", "1"])
        .fails_with(1, "no pre-training heads");
}

#[test]
fn every_command_has_help() {
    for command in ["inspect", "train", "tokenize", "scaling", "heads"] {
        let out = Cmd::new(&[command, "--help"]).run();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.starts_with(&format!("attention-lab {command}")),
            "{text}"
        );
    }
    for help in [&["--help"][..], &["-h"], &["help"]] {
        let out = Cmd::new(help).run();
        assert!(out.status.success(), "{help:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("usage:"),
            "{help:?}"
        );
    }
    let out = Cmd::new(&["help", "scaling"]).run();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("attention-lab scaling"));
}

#[cfg(unix)]
#[test]
fn a_non_utf8_argument_is_a_usage_error_naming_the_flag() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    let fx = Fixture::new("utf8");
    let m = fx.model.as_str();
    let bad = OsString::from_vec(b"ab\xffcd".to_vec());
    let out = Cmd::new(&["inspect", "--model", m, "--text"])
        .with_os(&[bad])
        .run();
    out.fails_with(2, "--text must be valid UTF-8, got \"ab\u{FFFD}cd\"");
    assert!(
        !out.stderr_text().contains("panicked"),
        "{}",
        out.stderr_text()
    );
    let bad_eq = OsString::from_vec(b"--text=ab\xffcd".to_vec());
    Cmd::new(&["tokenize", "--model", m])
        .with_os(&[bad_eq])
        .fails_with(2, "--text must be valid UTF-8");
    // In a choice or a number too.
    let bad_mask = OsString::from_vec(b"caus\xffal".to_vec());
    fx.inspect("x")
        .with(&["--mask"])
        .with_os(&[bad_mask])
        .fails_with(
            2,
            "--mask must be padding, causal or none, got \"caus\u{FFFD}al\"",
        );
    // A path may be any OS string: a missing directory is the usual error, not a usage one.
    let bad_dir = OsString::from_vec(b"/nonexistent/\xff".to_vec());
    Cmd::new(&["inspect", "--model"])
        .with_os(&[bad_dir])
        .with(&["--text", "x"])
        .fails_with(1, "is not a directory");
}

#[test]
fn flag_mistakes_are_usage_errors_and_both_flag_forms_work() {
    let fx = Fixture::new("flags");
    let m = fx.model.as_str();
    let x = fx.inspect("x");
    x.with(&["--mod", "y"])
        .fails_with(2, "unknown flag --mod (did you mean --model?)");
    Cmd::new(&["inspect", "--model", m, "--text"]).fails_with(2, "--text needs a value");
    Cmd::new(&["inspect", "--model", m, "--text", "a", "--text", "b"])
        .fails_with(2, "--text is given twice");
    x.with(&["stray"])
        .fails_with(2, "unexpected argument \"stray\"");
    x.with(&["--pad-to=-3"])
        .fails_with(2, "--pad-to must be a whole number of tokens, got \"-3\"");

    let train = fx.train().with(&["--optimizer", "sgd"]);
    train
        .with(&["--lr", "0.1", "--steps", "1.5"])
        .fails_with(2, "--steps must be a whole number, got \"1.5\"");
    train
        .with(&["--lr", "fast", "--steps", "1"])
        .fails_with(2, "--lr must be a number, got \"fast\"");
    train
        .with(&["--steps", "1"])
        .fails_with(2, "--lr is required");
    // The usage line of the command goes with the message.
    assert!(train
        .with(&["--steps", "1"])
        .run()
        .stderr_text()
        .contains("attention-lab train --model DIR"));

    // --flag=value is --flag value; values may start with '-'.
    let spaced = Cmd::inspect(m, "-the cat").json();
    let joined = Cmd::new(&["inspect", &format!("--model={m}"), "--text=-the cat"]).json();
    assert_eq!(spaced, joined);
    assert_eq!(spaced["tokens"].as_array().unwrap().len(), 5); // [CLS] - the cat [SEP]
}

/// `train --task repeat`: a line per evaluation with each copy's accuracy and every head's
/// three scores, then the ablation line; the Repeat flags are its own.
#[test]
fn train_on_repeat_prints_the_induction_scores_at_each_evaluation() {
    let tmp = TempDir::new("repeat");
    let config = tmp.write("config.json", config_json(16, 2, 32, 16, ""));
    let repeat = |extra: &[&str]| {
        let mut args = vec!["train", "--init", config.as_str(), "--task", "repeat"];
        args.extend_from_slice(extra);
        Cmd::new(&args)
    };
    let out = repeat(&[
        "--steps",
        "20",
        "--eval-every",
        "10",
        "--segment",
        "3-6",
        "--alphabet",
        "8",
        "--batch-size",
        "4",
        "--heads",
        "2",
    ])
    .run();
    let lines = out.lines();
    assert_eq!(lines.len(), 4, "steps 0, 10, 20 and the ablation");
    let steps: Vec<u64> = lines[..3]
        .iter()
        .map(|l| l["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps, [0, 10, 20]);
    assert!(lines[0]["loss"].is_null() && lines[1]["loss"].is_number());
    for line in &lines[..3] {
        for key in ["copy1_accuracy", "copy2_accuracy"] {
            let v = line[key].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&v), "{key} {v}");
        }
        let heads = line["heads"].as_array().unwrap();
        assert_eq!(heads.len(), 4, "2 layers × 2 heads");
        assert_eq!(
            (heads[3]["layer"].as_u64(), heads[3]["head"].as_u64()),
            (Some(2), Some(2))
        );
        for key in ["previous", "duplicate", "induction"] {
            let v = heads[0][key].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&v), "{key} {v}");
        }
    }
    assert_eq!(
        lines[3]["copy2_accuracy_without"].as_array().unwrap().len(),
        4
    );
    let said = out.stderr_text();
    assert!(said.contains("8 symbols, L 3–6"), "{said}");
    assert!(said.contains("measured at L = 5"), "{said}");
    // Each flag that leaves the page's Repeat setting says so.
    assert!(
        said.contains("note: --batch-size 4 is not the Repeat setting's (64)")
            && said.contains("note: --heads 2 is not the Repeat setting's (8)"),
        "{said}"
    );
    // Without flags the run is the page's setting, and what CONFIG said otherwise is noted.
    let setting = repeat(&[
        "--steps",
        "1",
        "--eval-every",
        "1",
        "--segment",
        "3-6",
        "--alphabet",
        "8",
    ])
    .run();
    let said = setting.stderr_text();
    assert!(
        said.contains("8 heads, rotary positions, dropout 0")
            && said.contains("batch 64, lr 0.002 after 200 warm-up steps"),
        "{said}"
    );
    assert!(
        said.contains("CONFIG's num_attention_heads 2 is replaced")
            && said.contains("CONFIG's position_embedding_type \"absolute\" is replaced"),
        "{said}"
    );
    assert!(!said.contains("is not the Repeat setting's"), "{said}");
    assert_eq!(setting.lines()[0]["heads"].as_array().unwrap().len(), 16);
    repeat(&["--corpus", &tmp.corpus()]).fails_with(2, "no --corpus or --max-len");
    repeat(&["--positions", "sideways"]).fails_with(2, "--positions");
    repeat(&["--segment", "6"]).fails_with(2, "--segment wants MIN-MAX");
    repeat(&["--objective", "mlm-nsp"]).fails_with(2, "--objective next-token");
    repeat(&["--segment", "4-12", "--alphabet", "8"])
        .fails_with(1, "needs an alphabet of at least as many");
    Cmd::train_init(&config, &tmp.corpus())
        .with(&["--alphabet", "8"])
        .fails_with(2, "are for --task repeat");
}

/// `train`'s two forms are clap rules: one of --model and --init, each with the flags it
/// needs, the other form's flags refused whatever the checkpoint.
#[test]
fn train_takes_one_form_with_its_own_flags() {
    let tmp = TempDir::new("forms");
    let (batch, corpus) = (tmp.batch(), tmp.corpus());
    let config = tmp.write("config.json", config_json(16, 1, 32, 16, ""));
    // Neither --model nor --init is the default run (tests/heads.rs); --batch needs --model.
    Cmd::new(&["train", "--batch", &batch])
        .fails_with(2, "--optimizer, --lr, --steps, --model are required");
    Cmd::new(&["train", "--model", REFERENCE, "--init", &config])
        .fails_with(2, "--model does not go with --init");
    Cmd::new(&["train", "--model", REFERENCE])
        .fails_with(2, "--batch, --optimizer, --lr, --steps are required");
    Cmd::new(&["train", "--init", &config]).fails_with(2, "--corpus is required with --init");
    Cmd::train_init(&config, &corpus)
        .with(&["--batch", &batch])
        .fails_with(2, "--init does not go with --batch");
    for model in [REFERENCE, SEQ2SEQ] {
        let train =
            Cmd::train(model, &batch).with(&["--optimizer", "sgd", "--lr", "0.1", "--steps", "1"]);
        for flag in [
            ["--corpus", &corpus],
            ["--batch-size", "2"],
            ["--max-len", "8"],
            ["--task", "copy"],
        ] {
            train
                .with(&flag)
                .fails_with(2, &format!("--model does not go with {}", flag[0]));
        }
    }
}

#[test]
fn scaling_prints_one_line_per_length_for_every_variant() {
    for variant in ["full", "tiled", "window", "linear", "gqa"] {
        let out = Cmd::scaling(&[
            "--variant",
            variant,
            "--seq-lens",
            "16,40",
            "--heads",
            "2",
            "--head-dim",
            "4",
        ])
        .lines();
        assert_eq!(out.len(), 2, "{variant}");
        for (line, t) in out.iter().zip([16, 40]) {
            let keys: Vec<&str> = line
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys.len(),
                5,
                "{line}: variant, seq_len, forward_ms, backward_ms, peak_bytes"
            );
            assert_eq!(line["variant"], variant);
            assert_eq!(line["seq_len"], t);
            assert!(line["forward_ms"].as_f64().unwrap() >= 0.0);
            assert!(line["backward_ms"].as_f64().unwrap() >= 0.0);
            // The op allocates at least its output, T·H·D floats.
            assert!(
                line["peak_bytes"].as_u64().unwrap() >= (t * 2 * 4 * 4) as u64,
                "{line}"
            );
        }
    }
    let usage = |args: &[&str], needle: &str| Cmd::scaling(args).fails_with(2, needle);
    usage(
        &["--variant", "fast"],
        "--variant must be full, tiled, window, linear or gqa",
    );
    usage(&[], "--variant is required");
    usage(
        &["--variant", "full", "--block", "8"],
        "--block goes with --variant tiled or window",
    );
    usage(
        &["--variant", "tiled", "--block", "0"],
        "--block must be at least 1",
    );
    usage(
        &["--variant", "window", "--window", "0"],
        "--window must be at least 1",
    );
    usage(
        &["--variant", "gqa", "--kv-heads", "3"],
        "must divide num_attention_heads",
    );
    usage(
        &["--variant", "linear", "--window", "4"],
        "linear attention with a sliding window",
    );
    usage(
        &["--variant", "full", "--seq-lens", "64,x"],
        "--seq-lens must be whole numbers",
    );
    usage(
        &["--variant", "full", "--seq-lens", "64,0"],
        "--seq-lens must be at least 1",
    );
}

/// Memory is counted, not timed: the same on every machine, so it can be asserted.
#[test]
fn tiled_attention_holds_linear_memory_and_far_less_than_full() {
    let peaks = |variant: &str| -> Vec<f64> {
        Cmd::scaling(&["--variant", variant, "--seq-lens", "128,256,512"])
            .lines()
            .iter()
            .map(|l| l["peak_bytes"].as_f64().unwrap())
            .collect()
    };
    let (full, tiled) = (peaks("full"), peaks("tiled"));
    // Peak = a·T² + b·T + c. Doubling T from 128 to 256 to 512 multiplies the growth of an
    // O(T) peak by 2 and that of an O(T²) one by about 4, whatever the constant (the 64×64
    // blocks of the default block size are a constant).
    let growth = |p: &[f64]| (p[2] - p[1]) / (p[1] - p[0]);
    let (gt, gf) = (growth(&tiled), growth(&full));
    assert!(
        (1.8..2.2).contains(&gt),
        "tiled peak is not linear in T (growth ×{gt}): {tiled:?}"
    );
    assert!(
        gf > 3.5,
        "full peak is not quadratic in T (growth ×{gf}): {full:?}"
    );
    assert!(
        tiled[2] * 8.0 <= full[2],
        "T=512: tiled {} vs full {}",
        tiled[2],
        full[2]
    );
}

/// `inspect` of the reference checkpoint on one sentence padded to 12 tokens, with `extra`.
fn inspect_reference(extra: &[&str]) -> Value {
    Cmd::inspect(REFERENCE, "the cat sat on the mat")
        .with(&["--pad-to", "12"])
        .with(extra)
        .json()
}

#[test]
fn inspect_heads_carry_their_kv_group_and_a_window_cuts_the_band() {
    let j = inspect_reference(&["--window", "3"]);
    let t: usize = 12;
    let real = 8; // [CLS] + 6 words + [SEP]
    for layer in j["layers"].as_array().unwrap() {
        for (h, head) in layer["heads"].as_array().unwrap().iter().enumerate() {
            assert_eq!(head["kv_group"], h, "no GQA: each head is its own group");
            for key in [
                "q_rotated",
                "k_rotated",
                "alibi_bias",
                "phi_q",
                "phi_k",
                "tiles",
            ] {
                assert!(head.get(key).is_none(), "{key} only for its variant");
            }
            for r in 0..t {
                for c in 0..t {
                    let seen = r.abs_diff(c) < 3 && c < real;
                    let w = float(at(&head["weights"], r, c));
                    assert_eq!(at(&head["masked"], r, c).is_null(), !seen, "({r},{c})");
                    assert_eq!(w > 0.0, seen, "({r},{c}) weight {w}");
                }
            }
        }
    }
    // Causal and window: exactly min(i + 1, W) keys.
    let j = inspect_reference(&["--window", "3", "--mask", "causal"]);
    let head = &j["layers"][0]["heads"][1];
    for r in 0..real {
        let seen = (0..t)
            .filter(|&c| float(at(&head["weights"], r, c)) > 0.0)
            .count();
        assert_eq!(seen, (r + 1).min(3), "row {r}");
    }
}

#[test]
fn tiled_inspect_equals_full_and_records_its_schedule() {
    let full = inspect_reference(&["--mask", "causal"]);
    for block in ["5", "16"] {
        let mut tiled =
            inspect_reference(&["--mask", "causal", "--attention", "tiled", "--block", block]);
        let b: usize = block.parse().unwrap();
        let blocks = 12_usize.div_ceil(b);
        for layer in tiled["layers"].as_array_mut().unwrap() {
            for head in layer["heads"].as_array_mut().unwrap() {
                let tiles = head.as_object_mut().unwrap().remove("tiles").unwrap();
                let tiles = tiles.as_array().unwrap();
                assert!(!tiles.is_empty());
                // Query blocks in order, each over its key blocks in order.
                let order: Vec<(u64, u64)> = tiles
                    .iter()
                    .map(|s| {
                        (
                            s["q_block"].as_u64().unwrap(),
                            s["k_block"].as_u64().unwrap(),
                        )
                    })
                    .collect();
                let mut sorted = order.clone();
                sorted.sort();
                assert_eq!(order, sorted, "schedule order");
                assert_eq!(order.last().unwrap().0 as usize, blocks - 1);
                for s in tiles {
                    let (qb, kb) = (
                        s["q_block"].as_u64().unwrap(),
                        s["k_block"].as_u64().unwrap(),
                    );
                    assert!(kb <= qb, "causal: no key block after the query block");
                    let rows = b.min(12 - qb as usize * b);
                    assert_eq!(s["row_max"].as_array().unwrap().len(), rows);
                    assert_eq!(s["row_sum"].as_array().unwrap().len(), rows);
                }
                // After a query block's last key block, m and l give the weights:
                // w_ij = exp(scaled_ij − m_i) / l_i.
                for qb in 0..blocks as u64 {
                    let last = tiles.iter().rev().find(|s| s["q_block"] == qb).unwrap();
                    for (i, (m, l)) in last["row_max"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .zip(last["row_sum"].as_array().unwrap())
                        .enumerate()
                    {
                        let r = qb as usize * b + i;
                        let w = ((float(at(&head["scaled"], r, 0)) - float(m)).exp()) / float(l);
                        let expected = float(at(&head["weights"], r, 0));
                        assert!((w - expected).abs() < 1e-5, "row {r}: {w} vs {expected}");
                    }
                }
            }
        }
        assert_close(&tiled, &full, 1e-5, "tiled");
    }
}

#[test]
fn attention_flags_are_checked() {
    let x = Cmd::inspect(REFERENCE, "x");
    x.with(&["--block", "4"])
        .fails_with(2, "--block goes with --attention tiled");
    x.with(&["--attention", "tiled", "--block", "0"])
        .fails_with(2, "--block must be at least 1");
    x.with(&["--window", "0"])
        .fails_with(2, "--window must be at least 1");
    x.with(&["--window", "-2"])
        .fails_with(2, "--window must be a whole number");
    x.with(&["--attention", "flash"])
        .fails_with(2, "--attention must be full or tiled, got \"flash\"");
}

/// Pre-trains 2 steps from a config of `fields` over a 16-wide, 1-layer, 2-head base and
/// returns the saved checkpoint, `name` in `tmp`: a variant checkpoint to inspect.
fn variant_checkpoint(tmp: &TempDir, name: &str, fields: &str) -> String {
    let out = tmp.path(name);
    let config = tmp.write(&format!("{name}.json"), config_json(16, 1, 32, 16, fields));
    let steps = Cmd::train_init(&config, &tmp.corpus())
        .with(&["--steps", "2", "--batch-size", "2", "--save", &out])
        .lines();
    assert_eq!(steps.len(), 2);
    out
}

/// `inspect` of the usual sentence on the checkpoint in `dir`, with `extra`.
fn inspect_dir(dir: &str, extra: &[&str]) -> Value {
    Cmd::inspect(dir, "the cat sat on the mat")
        .with(extra)
        .json()
}

#[test]
fn variant_checkpoints_show_their_own_fields() {
    let tmp = TempDir::new("variants");

    // Multi-query: both heads read group 0, the same k and v.
    let gqa = variant_checkpoint(&tmp, "gqa", r#", "num_key_value_heads": 1"#);
    let j = inspect_dir(&gqa, &[]);
    let heads = j["layers"][0]["heads"].as_array().unwrap();
    assert_eq!(
        (heads[0]["kv_group"].clone(), heads[1]["kv_group"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(heads[0]["k"], heads[1]["k"]);
    assert_eq!(heads[0]["v"], heads[1]["v"]);
    assert_ne!(heads[0]["q"], heads[1]["q"]);

    // Rotary: q and k rotated, and the scores are theirs.
    let rotary = variant_checkpoint(&tmp, "rotary", r#", "position_embedding_type": "rotary""#);
    let j = inspect_dir(&rotary, &[]);
    let h = &j["layers"][0]["heads"][1];
    for key in ["q_rotated", "k_rotated"] {
        assert_eq!(dims(&h[key]), dims(&h["q"]), "{key}");
    }
    assert_ne!(h["q_rotated"], h["q"]);
    // Position 0 is not turned.
    assert_close(&h["q_rotated"][0], &h["q"][0], 1e-6, "q_rotated[0]");
    let t = dims(&h["scores"]).0;
    for (r, c) in [(1, 3), (t - 1, 0)] {
        let s = dot_rows(&h["q_rotated"], r, &h["k_rotated"], c);
        assert!(
            (s - float(at(&h["scores"], r, c))).abs() < 1e-4,
            "scores[{r}][{c}]"
        );
    }

    // ALiBi: no position embeddings, each head's bias −m_h·|i − j| (BLOOM's slopes for H = 2:
    // 2^−4, 2^−8), in `masked` but not in `scaled`; the saved config keeps the key, and a
    // text longer than max_position_embeddings (16) is inspected whole.
    let alibi = variant_checkpoint(&tmp, "alibi", r#", "position_embedding_type": "alibi""#);
    let saved = std::fs::read_to_string(format!("{alibi}/config.json")).unwrap();
    assert!(
        saved.contains(r#""position_embedding_type": "alibi""#),
        "{saved}"
    );
    let long = "the cat sat on the mat ".repeat(4);
    let j = Cmd::inspect(&alibi, long.trim()).json();
    let t = j["tokens"].as_array().unwrap().len();
    assert!(t > 16, "{t} tokens");
    assert_eq!(j["truncated"], false);
    for (h, m) in [(0, 1.0 / 16.0), (1, 1.0 / 256.0)] {
        let head = &j["layers"][0]["heads"][h];
        assert_eq!(dims(&head["alibi_bias"]), (t, t));
        for (r, c) in [(0, 0), (3, 1), (1, 3), (t - 1, 0)] {
            let bias = float(at(&head["alibi_bias"], r, c));
            assert!(
                (bias + m * r.abs_diff(c) as f64).abs() < 1e-6,
                "head {h} ({r},{c})"
            );
            let scaled = float(at(&head["scaled"], r, c));
            let scores = float(at(&head["scores"], r, c));
            assert!(
                (scaled - scores / 8f64.sqrt()).abs() < 1e-5,
                "scaled is QKᵀ/√d_k"
            );
            let masked = float(at(&head["masked"], r, c));
            assert!(
                (masked - (scaled + bias)).abs() < 1e-5,
                "masked = scaled + A"
            );
        }
    }

    // Linear: φ(q), φ(k) and implied weights; no scores.
    let linear = variant_checkpoint(&tmp, "linear", r#", "attention_type": "linear""#);
    let j = inspect_dir(&linear, &["--pad-to", "10"]);
    let h = &j["layers"][0]["heads"][0];
    for key in ["scores", "scaled", "masked"] {
        assert!(h[key].is_null(), "{key} is null for linear attention");
    }
    assert_eq!(dims(&h["phi_q"]), (10, 8));
    assert_eq!(dims(&h["phi_k"]), (10, 8));
    for r in 0..10 {
        let row: Vec<f64> = h["weights"][r]
            .as_array()
            .unwrap()
            .iter()
            .map(float)
            .collect();
        assert!(
            (row.iter().sum::<f64>() - 1.0).abs() < 1e-5,
            "row {r} sums to 1"
        );
        assert!(
            row[8..].iter().all(|&w| w == 0.0),
            "padding keys get no weight"
        );
        // w_ij = φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j')
        let norm: f64 = (0..8)
            .map(|c| dot_rows(&h["phi_q"], r, &h["phi_k"], c))
            .sum();
        let w = dot_rows(&h["phi_q"], r, &h["phi_k"], 2) / norm;
        assert!((w - row[2]).abs() < 1e-5, "row {r}: {w} vs {}", row[2]);
    }
    // Linear attention has no softmax to tile: an engine refusal, exit 1.
    Cmd::inspect(&linear, "x")
        .with(&["--attention", "tiled"])
        .fails_with(1, "linear attention has no softmax to tile");
}

#[test]
fn train_takes_the_attention_flags() {
    let tmp = TempDir::new("train-attention");
    // The reference model: its weights (std 0.4) make attention far from uniform.
    let train = Cmd::train(REFERENCE, &tmp.batch()).with(&[
        "--optimizer",
        "sgd",
        "--lr",
        "0.5",
        "--steps",
        "3",
    ]);
    let loss = |extra: &[&str]| -> Vec<f64> {
        train
            .with(extra)
            .lines()
            .iter()
            .map(|s| float(&s["loss"]))
            .collect()
    };
    let full = loss(&[]);
    // Tiled is the same maths: the same losses, step after step.
    for block in ["3", "16"] {
        let tiled = loss(&["--attention", "tiled", "--block", block]);
        for (f, t) in full.iter().zip(&tiled) {
            assert!(
                (f - t).abs() < 1e-4 * f.abs().max(1.0),
                "block {block}: {full:?} vs {tiled:?}"
            );
        }
    }
    // A window of 2 hides most keys: another model.
    let window = loss(&["--window", "2", "--attention", "tiled"]);
    assert!((window[0] - full[0]).abs() > 0.1, "{window:?} vs {full:?}");
    train
        .with(&["--block", "4"])
        .fails_with(2, "--block goes with --attention tiled");

    // From scratch too, and the flags' sizes are bounded before anything is allocated.
    let config = tmp.write("config.json", config_json(16, 1, 32, 8192, ""));
    let scratch = Cmd::train_init(&config, &tmp.corpus()).with(&["--steps", "2"]);
    assert_eq!(
        scratch
            .with(&["--window", "4", "--attention", "tiled", "--block", "4"])
            .lines()
            .len(),
        2
    );
    scratch
        .with(&["--batch-size", "100000000000"])
        .fails_with(2, "--batch-size must be at most 4096");
    scratch
        .with(&["--batch-size", "64", "--max-len", "8192"])
        .fails_with(2, "would need 34.4 GB for full attention's weights");
    // A config too large to allocate is refused by name, not by an abort.
    tmp.write("config.json", config_json(1048576, 1, 32, 16, ""));
    scratch
        .with(&["--batch-size", "2"])
        .fails_with(1, "hidden_size 1048576 is too large");
}

#[test]
fn grouped_query_and_roformer_checkpoints_inspect() {
    // G = 2 of H = 4: heads 0, 1 read group 0 and heads 2, 3 group 1.
    let j = inspect_dir(&variant_fixture("gqa2"), &[]);
    for layer in j["layers"].as_array().unwrap() {
        let heads = layer["heads"].as_array().unwrap();
        let groups: Vec<u64> = heads
            .iter()
            .map(|h| h["kv_group"].as_u64().unwrap())
            .collect();
        assert_eq!(groups, [0, 0, 1, 1]);
        assert_eq!(heads[0]["k"], heads[1]["k"]);
        assert_eq!(heads[2]["v"], heads[3]["v"]);
        assert_ne!(heads[1]["k"], heads[2]["k"]);
    }
    // A transformers RoFormerModel checkpoint, as it saves it: rotary heads.
    let j = inspect_dir(&variant_fixture("roformer_model"), &[]);
    let h = &j["layers"][0]["heads"][0];
    assert_eq!(dims(&h["q_rotated"]), dims(&h["q"]));
    assert_eq!(dims(&h["k_rotated"]), dims(&h["k"]));
    assert!(
        j.get("mlm_logits").is_none(),
        "a bare RoFormerModel has no heads"
    );
    let s = dot_rows(&h["q_rotated"], 2, &h["k_rotated"], 1);
    assert!((s - float(at(&h["scores"], 2, 1))).abs() < 1e-4);
}

/// The token lines of `generate`'s output (all but the last, {"text"}), checked for shape.
fn token_lines(out: &[Value], max_new: usize) -> &[Value] {
    let (text, tokens) = out.split_last().expect("at least the text line");
    assert!(text["text"].is_string(), "{text}");
    assert_eq!(text.as_object().unwrap().len(), 1, "{text}");
    assert!(!tokens.is_empty() && tokens.len() <= max_new, "{out:?}");
    for (i, t) in tokens.iter().enumerate() {
        assert_keys(t, &["step", "token", "id", "prob", "kv_cache_bytes"]);
        assert_eq!(t["step"], i + 1);
        assert!(t["token"].is_string() && t["id"].is_u64(), "{t}");
        let p = float(&t["prob"]);
        assert!(p > 0.0 && p <= 1.0, "{t}");
    }
    tokens
}

#[test]
fn next_token_training_saves_a_decoder_that_generates() {
    let tmp = TempDir::new("next-token");
    let out_dir = tmp.path("decoder");
    // hidden 32, 2 layers: the KV cache grows by 2 layers × (k, v) × 32 × 4 bytes per token.
    let config = tmp.write("config.json", config_json(32, 2, 64, 32, ""));
    let steps = Cmd::train_init(&config, DEFAULT_CORPUS)
        .with(&[
            "--objective",
            "next-token",
            "--steps",
            "60",
            "--save",
            &out_dir,
        ])
        .lines();
    assert_eq!(steps.len(), 60);
    for (i, s) in steps.iter().enumerate() {
        assert_keys(s, &["step", "loss", "accuracy"]);
        assert_eq!(s["step"], i + 1);
        let accuracy = float(&s["accuracy"]);
        assert!((0.0..=1.0).contains(&accuracy), "{s}");
    }
    // Batches differ from step to step: compare the means of the first and last ten.
    let mean = |s: &[Value]| s.iter().map(|s| float(&s["loss"])).sum::<f64>() / s.len() as f64;
    let (first, last) = (mean(&steps[..10]), mean(&steps[50..]));
    assert!(last < first - 0.5, "mean loss {first} → {last}");

    let saved = saved_config(&out_dir);
    assert_eq!(saved["is_decoder"], true, "{saved}");
    assert_eq!(
        saved["architectures"],
        serde_json::json!(["BertLMHeadModel"]),
        "{saved}"
    );

    // Greedy: at most 5 tokens, the cache growing by the same bytes each token. The prompt
    // is [CLS] the cat: the first token's cache holds 4 positions.
    let greedy = Cmd::generate(&out_dir).with(&["--text", "the cat", "--max-new", "5"]);
    let out = greedy.lines();
    let tokens = token_lines(&out, 5);
    let per_token = 2 * 2 * 32 * 4;
    for (i, t) in tokens.iter().enumerate() {
        assert_eq!(t["kv_cache_bytes"], per_token * (4 + i), "{t}");
    }
    if tokens.len() < 5 {
        assert_eq!(tokens.last().unwrap()["token"], "[SEP]", "stopped early");
    }
    // Without the cache: the same tokens (the probabilities up to rounding).
    let no_cache = greedy.with(&["--no-cache"]).lines();
    let no_cache_tokens = token_lines(&no_cache, 5);
    assert_eq!(ids(no_cache_tokens), ids(tokens));
    for (a, b) in tokens.iter().zip(no_cache_tokens) {
        assert_eq!(a["kv_cache_bytes"], b["kv_cache_bytes"]);
        assert!(
            (float(&a["prob"]) - float(&b["prob"])).abs() < 1e-5,
            "{a} {b}"
        );
    }
    assert_eq!(out.last(), no_cache.last());

    // Sampling: the same seed gives the same output; with --top-k too.
    let sample = greedy.with(&["--temperature", "1.5", "--seed", "9"]);
    let a = sample.lines();
    token_lines(&a, 5);
    assert_eq!(a, sample.lines());
    let top_k = sample.with(&["--top-k", "3"]);
    let a = top_k.lines();
    token_lines(&a, 5);
    assert_eq!(a, top_k.lines());
}

#[test]
fn generate_greedy_on_the_decoder_fixture_gives_the_transformers_tokens() {
    // The metadata's first generation: transformers' greedy tokens after [CLS] the cat.
    let generations = safetensors_metadata(&expected(DECODER), "generate");
    let first = &generations[0];
    assert_eq!(first["prompt"], serde_json::json!([2, 5, 7]));
    let want: Vec<u64> = first["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap())
        .collect();
    let max_new = first["max_new_tokens"].as_u64().unwrap().to_string();
    for cache in [&[][..], &["--no-cache"]] {
        let out = Cmd::generate(DECODER)
            .with(&["--text", "the cat", "--max-new", &max_new])
            .with(cache)
            .lines();
        assert_eq!(ids(token_lines(&out, 12)), want, "{cache:?}");
    }
}

#[test]
fn generate_errors_are_reported_with_a_non_zero_exit() {
    let generate = Cmd::generate(DECODER);
    let the_cat = generate.with(&["--text", "the cat"]);
    generate
        .with(&["--text", ""])
        .fails_with(2, "--text is empty");
    the_cat
        .with(&["--max-new", "0"])
        .fails_with(1, "max new tokens is 0");
    the_cat
        .with(&["--max-new", "100000"])
        .fails_with(1, "only 29 fit in the model's 32 positions");
    for t in ["0", "-1"] {
        the_cat
            .with(&["--temperature", t])
            .fails_with(1, &format!("temperature {t} must be above 0"));
    }
    the_cat
        .with(&["--temperature", "1", "--top-k", "0"])
        .fails_with(1, "top-k 0 leaves no token");
    the_cat
        .with(&["--top-k", "3"])
        .fails_with(2, "--top-k needs --temperature");
    // An encoder (the reference BertForPreTraining checkpoint) cannot generate.
    Cmd::generate(REFERENCE)
        .with(&["--text", "the cat"])
        .fails_with(1, "generation needs a decoder (is_decoder)");
    assert!(Cmd::new(&["generate", "--help"]).run().status.success());
}

/// Three Adam steps (lr 0.01) of `train --model MODEL --batch <the fixture's batch>`, the
/// batch being the one transformers ran (the "batch" metadata of `expected`, which must hold
/// `keys`): the first loss must be transformers' `loss`, and the loss must fall.
fn fixture_batch_steps(model: &str, expected: &[u8], keys: &[&str]) -> Vec<Value> {
    let tmp = TempDir::new("fixture-batch");
    let json = safetensors_metadata(expected, "batch");
    for key in keys {
        assert!(json[key].is_array(), "{key} in {json}");
    }
    let batch = tmp.write("batch.json", json.to_string());
    let loss = safetensors_f32(expected, "loss");
    assert_eq!(loss.len(), 1);
    let steps = Cmd::train(model, &batch)
        .with(&["--optimizer", "adam", "--lr", "0.01", "--steps", "3"])
        .lines();
    assert_eq!(steps.len(), 3);
    for (i, s) in steps.iter().enumerate() {
        assert_keys(s, &["step", "loss", "accuracy"]);
        assert_eq!(s["step"], i + 1);
        let accuracy = float(&s["accuracy"]);
        assert!((0.0..=1.0).contains(&accuracy), "{s}");
    }
    let first = float(&steps[0]["loss"]);
    assert!(
        (first - f64::from(loss[0])).abs() < 1e-4,
        "loss {first}, transformers {}",
        loss[0]
    );
    assert!(float(&steps[2]["loss"]) < first, "{steps:?}");
    steps
}

#[test]
fn next_token_training_on_the_fixture_batch_starts_at_the_transformers_loss() {
    // The batch transformers ran: input_ids, token_type_ids, attention_mask and labels.
    fixture_batch_steps(DECODER, &expected(DECODER), &["labels"]);
}

#[test]
fn next_token_training_needs_a_decoder() {
    let tmp = TempDir::new("encoder-next-token");
    Cmd::train(REFERENCE, &tmp.batch())
        .with(&[
            "--optimizer",
            "adam",
            "--lr",
            "0.01",
            "--steps",
            "3",
            "--objective",
            "next-token",
        ])
        .fails_with(
            1,
            "next-token training needs a decoder (config is_decoder: true",
        );
}

/// The seq2seq fixture's vocabulary: the specials, then tools/fixtures_models.py's WORDS.
const SEQ2SEQ_WORDS: [&str; 40] = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "on", "mat",
    "ran", "to", "park", "big", "small", "red", "blue", "bird", "flew", "over", "house", "and",
    "it", "was", "happy", "sad", "we", "saw", "tree", "in", "sun", "is", "hot", "she", "he", ".",
    ",", "?",
];

#[test]
fn seq2seq_fixture_vocabulary_is_the_fixture_words() {
    let vocab = std::fs::read_to_string(Path::new(SEQ2SEQ).join("vocab.txt")).unwrap();
    assert_eq!(vocab.lines().collect::<Vec<_>>(), SEQ2SEQ_WORDS);
}

#[test]
fn seq2seq_training_on_the_fixture_batch_starts_at_the_transformers_loss() {
    let keys = [
        "input_ids",
        "attention_mask",
        "labels",
        "decoder_input_ids",
        "decoder_attention_mask",
    ];
    fixture_batch_steps(SEQ2SEQ, &expected(SEQ2SEQ), &keys);
}

/// Clipping over both halves (one optimiser for the encoder–decoder): the same first loss,
/// then a smaller step than without it. (It used to be refused for encoder–decoders.)
#[test]
fn seq2seq_training_clips_the_gradient_over_both_halves() {
    let tmp = TempDir::new("seq2seq-clip");
    let batch = safetensors_metadata(&expected(SEQ2SEQ), "batch");
    let batch = tmp.write("batch.json", batch.to_string());
    let losses = |extra: &[&str]| -> Vec<f64> {
        Cmd::train(SEQ2SEQ, &batch)
            .with(&["--optimizer", "sgd", "--lr", "0.5", "--steps", "2"])
            .with(extra)
            .lines()
            .iter()
            .map(|s| float(&s["loss"]))
            .collect()
    };
    let (free, clipped) = (losses(&[]), losses(&["--clip-grad-norm", "0.01"]));
    assert_eq!(free[0], clipped[0]);
    let (fell_free, fell_clipped) = (free[0] - free[1], clipped[0] - clipped[1]);
    assert!(
        fell_clipped > 0.0 && fell_clipped < fell_free / 2.0,
        "{free:?} {clipped:?}"
    );
}

#[test]
fn seq2seq_generate_on_the_fixture_gives_the_transformers_tokens() {
    let cases = safetensors_metadata(&expected(SEQ2SEQ), "generate");
    let cases = cases.as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let source: Vec<usize> = case["input_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(source.first(), Some(&2), "[CLS] first: {case}");
        assert_eq!(source.last(), Some(&3), "[SEP] last: {case}");
        let text = source[1..source.len() - 1]
            .iter()
            .map(|&id| SEQ2SEQ_WORDS[id])
            .collect::<Vec<_>>()
            .join(" ");
        let want: Vec<u64> = case["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap())
            .collect();
        let max_new = case["max_new_tokens"].as_u64().unwrap() as usize;
        let max_new_arg = max_new.to_string();
        let mut outputs = Vec::new();
        for cache in [&[][..], &["--no-cache"]] {
            let out = Cmd::generate(SEQ2SEQ)
                .with(&["--text", &text, "--max-new", &max_new_arg])
                .with(cache)
                .lines();
            let tokens = token_lines(&out, max_new);
            assert_eq!(ids(tokens), want, "source {text:?} {cache:?}");
            for t in tokens {
                assert_eq!(
                    t["token"],
                    SEQ2SEQ_WORDS[t["id"].as_u64().unwrap() as usize]
                );
            }
            outputs.push(out);
        }
        // The text line is the same with and without the cache.
        assert_eq!(outputs[0].last(), outputs[1].last(), "source {text:?}");
    }
}

/// Checks `inspect --target`'s shapes on an encoder–decoder of `layers` layers of `heads` heads
/// and a vocabulary of `vocab` tokens; returns (Ts, Tt).
fn check_seq2seq_inspection(
    j: &Value,
    layers: usize,
    heads: usize,
    vocab: usize,
) -> (usize, usize) {
    let source = strings(&j["source_tokens"]);
    let target = strings(&j["target_tokens"]);
    assert_eq!(source.first(), Some(&"[CLS]"), "{source:?}");
    assert_eq!(source.last(), Some(&"[SEP]"), "{source:?}");
    assert_eq!(target.first(), Some(&"[CLS]"), "{target:?}");
    let (ts, tt) = (source.len(), target.len());
    let row_sums_to_one = |w: &Value, at: &str| {
        for (r, row) in w.as_array().unwrap().iter().enumerate() {
            let s: f64 = row.as_array().unwrap().iter().map(float).sum();
            assert!((s - 1.0).abs() < 1e-4, "{at} row {r} sums to {s}");
        }
    };
    let encoder = j["encoder_layers"].as_array().unwrap();
    assert_eq!(encoder.len(), layers);
    for (l, layer) in encoder.iter().enumerate() {
        let hs = layer["heads"].as_array().unwrap();
        assert_eq!(hs.len(), heads);
        for h in hs {
            assert_eq!(dims(&h["weights"]), (ts, ts), "encoder layer {l}");
            row_sums_to_one(&h["weights"], &format!("encoder layer {l}"));
        }
    }
    let decoder = j["decoder_layers"].as_array().unwrap();
    assert_eq!(decoder.len(), layers);
    for (l, layer) in decoder.iter().enumerate() {
        assert_keys(layer, &["self", "cross"]);
        let own = layer["self"].as_array().unwrap();
        assert_eq!(own.len(), heads);
        for h in own {
            let w = &h["weights"];
            assert_eq!(dims(w), (tt, tt), "decoder layer {l} self");
            for r in 0..tt {
                for c in r + 1..tt {
                    assert_eq!(float(at(w, r, c)), 0.0, "decoder layer {l} self ({r}, {c})");
                }
            }
            row_sums_to_one(w, &format!("decoder layer {l} self"));
        }
        let cross = layer["cross"].as_array().unwrap();
        assert_eq!(cross.len(), heads);
        for h in cross {
            assert_eq!(dims(&h["weights"]), (tt, ts), "decoder layer {l} cross");
            row_sums_to_one(&h["weights"], &format!("decoder layer {l} cross"));
        }
    }
    assert_eq!(dims(&j["logits"]), (tt, vocab));
    (ts, tt)
}

#[test]
fn seq2seq_inspect_shows_causal_self_and_cross_attention() {
    let j = Cmd::inspect(SEQ2SEQ, "the cat sat on the mat")
        .with(&["--target", "mat the on sat cat the"])
        .json();
    let (ts, tt) = check_seq2seq_inspection(&j, 2, 2, 40);
    assert_eq!((ts, tt), (8, 7));
    assert_eq!(
        strings(&j["source_tokens"]),
        ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"]
    );
    assert_eq!(
        strings(&j["target_tokens"]),
        ["[CLS]", "mat", "the", "on", "sat", "cat", "the"]
    );
    // The first target position sees only itself.
    let h = &j["decoder_layers"][0]["self"][0];
    assert_eq!(float(at(&h["weights"], 0, 0)), 1.0);
}

#[test]
fn seq2seq_training_from_scratch_saves_an_encoder_decoder() {
    let tmp = TempDir::new("seq2seq-scratch");
    let out_dir = tmp.path("s2s");
    let config = tmp.write("config.json", config_json(16, 2, 32, 32, ""));
    let steps = Cmd::train_init(&config, DEFAULT_CORPUS)
        .with(&[
            "--objective",
            "seq2seq",
            "--task",
            "reverse",
            "--steps",
            "30",
            "--save",
            &out_dir,
        ])
        .lines();
    assert_eq!(steps.len(), 30);
    for (i, s) in steps.iter().enumerate() {
        assert_keys(s, &["step", "loss", "accuracy"]);
        assert_eq!(s["step"], i + 1);
        assert!(float(&s["loss"]).is_finite(), "{s}");
        let accuracy = float(&s["accuracy"]);
        assert!((0.0..=1.0).contains(&accuracy), "{s}");
    }
    let saved = saved_config(&out_dir);
    assert_eq!(saved["model_type"], "encoder-decoder", "{saved}");
    assert!(
        saved["encoder"].is_object() && saved["decoder"].is_object(),
        "{saved}"
    );
    assert_eq!(saved["decoder"]["add_cross_attention"], true, "{saved}");
    let vocab = saved["decoder"]["vocab_size"].as_u64().unwrap() as usize;
    assert_eq!(
        saved["encoder"]["vocab_size"],
        saved["decoder"]["vocab_size"]
    );
    let weights = std::fs::read(Path::new(&out_dir).join("model.safetensors")).unwrap();
    let names = safetensors_names(&weights);
    assert!(names.iter().any(|n| n.starts_with("encoder.")), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("decoder.")), "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("encoder.") || n.starts_with("decoder.")),
        "{names:?}"
    );

    let generate = Cmd::generate(&out_dir).with(&["--text", "the cat sat", "--max-new", "5"]);
    let out = generate.lines();
    let tokens = token_lines(&out, 5);
    if tokens.len() < 5 {
        assert_eq!(tokens.last().unwrap()["token"], "[SEP]", "stopped early");
    }
    let no_cache = generate.with(&["--no-cache"]).lines();
    assert_eq!(ids(token_lines(&no_cache, 5)), ids(tokens));

    let j = Cmd::inspect(&out_dir, "the cat sat")
        .with(&["--target", "sat cat the"])
        .json();
    let (ts, tt) = check_seq2seq_inspection(&j, 2, 2, vocab);
    assert_eq!((ts, tt), (5, 4));
}

#[test]
fn seq2seq_errors_are_reported_with_a_non_zero_exit() {
    let tmp = TempDir::new("seq2seq-errors");
    // Usage errors: exit 2.
    Cmd::inspect(SEQ2SEQ, "the cat").fails_with(2, "needs --target");
    Cmd::inspect(REFERENCE, "the cat")
        .with(&["--target", "a dog"])
        .fails_with(2, "--target is for encoder–decoder checkpoints");
    let config = tmp.write("config.json", config_json(16, 1, 32, 16, ""));
    Cmd::train_init(&config, &tmp.corpus())
        .with(&["--task", "reverse", "--steps", "1"])
        .fails_with(2, "--task copy|reverse|reply is for --objective seq2seq");

    // Checkpoint errors: exit 1. A working copy first, to show the copies themselves load.
    let to_cat = |model: &str| Cmd::inspect(model, "the cat").with(&["--target", "cat"]);
    let generate = |model: &str| Cmd::generate(model).with(&["--text", "the cat"]);
    to_cat(&tmp.seq2seq_copy("same", |_| {})).json();
    let no_cross = tmp.seq2seq_copy("no-cross", |c| {
        c["decoder"]["add_cross_attention"] = false.into();
    });
    to_cat(&no_cross).fails_with(1, "add_cross_attention");
    generate(&no_cross).fails_with(1, "add_cross_attention");
    let vocab = tmp.seq2seq_copy("vocab", |c| {
        c["encoder"]["vocab_size"] = 41.into();
    });
    to_cat(&vocab).fails_with(1, "vocabulary");
    generate(&vocab).fails_with(1, "vocabulary");
}
