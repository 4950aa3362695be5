//! `attention-lab heads`, `train --heads-every` and `train`'s default run: the JSON they print,
//! that it is what the page's Heads claim (worker-core) says of the same checkpoint, that the
//! default run is the page's, and bad input with its exit codes.

// The helpers are shared with cli.rs; this file uses some of them.
#[allow(dead_code)]
mod common;

use common::values::*;
use common::*;
use engine::checkpoint::{read_dir, save_dir, Checkpoint};
use engine::tokenizer::{build_word_vocab, Tokenizer};
use engine::{BertConfig, BertForPreTraining, Rng};
use protocol::{Claim, ClaimResult, LabSettings, ModelBundle};
use serde_json::Value;
use worker_core::claims::{run_to_end, Models};
use worker_core::lab::Lab;

const RELATIONS: [&str; 6] = ["self", "previous", "next", "[CLS]", "[SEP]", "rest"];

/// A small encoder config: hidden 16, 2 layers of 2 heads, 32 positions.
fn small_config(tmp: &TempDir) -> String {
    tmp.write("config.json", config_json(16, 2, 32, 32, ""))
}

/// A checkpoint trained `steps` steps from `small_config` on [`CORPUS`] (extra flags after),
/// saved in `name`; its path.
fn trained(tmp: &TempDir, name: &str, steps: &str, extra: &[&str]) -> String {
    let out = tmp.path(name);
    Cmd::train_init(&small_config(tmp), &tmp.corpus())
        .with(&["--steps", steps, "--save", &out])
        .with(extra)
        .run()
        .lines();
    out
}

/// `heads --model DIR [--corpus FILE]`.
fn heads(model: &str, corpus: Option<&str>) -> Cmd {
    let cmd = Cmd::new(&["heads", "--model", model]);
    match corpus {
        Some(c) => cmd.with(&["--corpus", c]),
        None => cmd,
    }
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(float).collect()
}

/// Checks the measurement's object (`heads`', or a `--heads-every` line) against the
/// contract, for a model of `layers` × `per_layer` heads; its keys, sorted (serde_json's
/// `Value` keeps them so).
fn check_measurement(m: &Value, (layers, per_layer): (usize, usize)) -> Vec<String> {
    assert_eq!(strings(&m["relations"]), RELATIONS);
    let heads = m["heads"].as_array().unwrap();
    assert_eq!(heads.len(), layers * per_layer);
    for (k, h) in heads.iter().enumerate() {
        let keys: Vec<&str> = h.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["errors", "head", "layer", "role", "shares"]);
        assert_eq!(
            (h["layer"].as_u64(), h["head"].as_u64()),
            (
                Some((k / per_layer + 1) as u64),
                Some((k % per_layer + 1) as u64)
            ),
            "numbered from 1, layer by layer"
        );
        let shares = numbers(&h["shares"]);
        assert_eq!(shares.len(), 6);
        assert!(
            (shares.iter().sum::<f64>() - 1.0).abs() < 1e-6,
            "{shares:?}"
        );
        let errors = numbers(&h["errors"]);
        assert!(errors.len() == 6 && errors.iter().all(|&e| e >= 0.0));
        match h["role"].as_str() {
            None => assert!(h["role"].is_null()),
            // A role is a relation holding at least half the head's attention.
            Some(role) => {
                let r = RELATIONS[..5].iter().position(|&x| x == role).unwrap();
                assert!(shares[r] >= 0.5, "{h}");
            }
        }
    }
    let baseline = numbers(&m["baseline"]);
    assert!(baseline.len() == 6 && (baseline.iter().sum::<f64>() - 1.0).abs() < 1e-6);
    let verdict = m["verdict"].as_str().unwrap();
    let opening = match verdict {
        "borne out" => "Borne out: ",
        "not borne out" => "Not borne out here: ",
        "not decided" => "Not decided: ",
        other => panic!("verdict {other:?}"),
    };
    let text = m["text"].as_str().unwrap();
    assert!(
        text.starts_with(opening) || text.starts_with("Not yet measurable"),
        "{verdict}: {text}"
    );
    m.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn heads_prints_every_heads_shares_errors_and_role_and_the_rows_it_measured() {
    let tmp = TempDir::new("heads-shape");
    let model = trained(&tmp, "model", "40", &[]);
    let m = heads(&model, Some(&tmp.corpus())).json();
    assert_eq!(
        check_measurement(&m, (2, 2)),
        ["baseline", "heads", "relations", "rows", "text", "verdict"]
    );
    let text = m["text"].as_str().unwrap();
    assert!(text.contains("in the loaded weights"), "{text}");
    // Four sentences make three pairs [CLS] A [SEP] B [SEP], every position a counted query.
    let rows = m["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let vocab = std::fs::read_to_string(std::path::Path::new(&model).join("vocab.txt")).unwrap();
    let id = |t: &str| vocab.lines().position(|l| l == t).unwrap() as u64;
    let mut query_rows = 0;
    for row in rows {
        let keys: Vec<&str> = row
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["ids", "queries", "segments"]);
        let ids: Vec<u64> = row["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let segments: Vec<u64> = row["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let queries: Vec<u64> = row["queries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!((ids[0], *ids.last().unwrap()), (id("[CLS]"), id("[SEP]")));
        assert_eq!(ids.iter().filter(|&&i| i == id("[SEP]")).count(), 2);
        assert_eq!(segments.len(), ids.len());
        assert_eq!((segments[0], *segments.last().unwrap()), (0, 1));
        assert_eq!(queries, (0..ids.len() as u64).collect::<Vec<_>>());
        query_rows += queries.len();
    }
    assert!(
        text.ends_with(&format!(
            "Measured over 3 sentences ({query_rows} query rows)."
        )),
        "the text names no seed: {text}"
    );
    // Without --corpus: the page's default corpus, the same as naming its file.
    let page = tmp.path("page");
    Cmd::new(&["train", "--steps", "2", "--save", &page])
        .run()
        .lines();
    let default = heads(&page, None).json();
    assert_eq!(default, heads(&page, Some(DEFAULT_CORPUS)).json());
    assert_eq!(
        default["rows"].as_array().unwrap().len(),
        32,
        "at most 32 pairs"
    );
    assert_eq!(check_measurement(&default, (2, 4)).len(), 6);
}

/// Reads `dir` as the page does a checkpoint picked from disk, with the page's settings and
/// `corpus`, and runs the Heads claim on it to its end, as the claim worker does.
fn page_heads(dir: &str, corpus: &str) -> ClaimResult {
    let settings = LabSettings::default();
    let bundle = ModelBundle::picked(
        "picked".into(),
        read_dir(std::path::Path::new(dir)).unwrap(),
    );
    let (lab, _) = Lab::load(bundle, corpus, &settings).unwrap();
    let models = Models {
        lab: Some(&lab),
        lab_b: None,
        seed: settings.seed,
    };
    run_to_end(Claim::Heads, &models).expect("the claim ends")
}

/// The command line's measurement is the page's: the same shares, and the same verdict in the
/// same words (the page names the seed it compares a fresh model of).
fn check_same_as_the_page(dir: &str, corpus_file: &str) -> Value {
    let cli = heads(dir, Some(corpus_file)).json();
    let page = page_heads(dir, &std::fs::read_to_string(corpus_file).unwrap());
    let map = page.heatmap.as_ref().unwrap();
    let heads = cli["heads"].as_array().unwrap();
    assert_eq!(map.values.rows, heads.len());
    for (k, h) in heads.iter().enumerate() {
        let shares: Vec<f32> = numbers(&h["shares"]).iter().map(|&s| s as f32).collect();
        assert_eq!(shares, map.values.row(k), "head {k}");
    }
    let text = cli["text"].as_str().unwrap();
    let seeded = text.replace(" query rows).", " query rows), model seed 0.");
    assert_eq!(page.verdict.text, seeded);
    cli
}

#[test]
fn heads_says_what_the_pages_heads_claim_says_of_the_same_checkpoint() {
    let tmp = TempDir::new("heads-page");
    let corpus = tmp.corpus();
    // An encoder trained here, a decoder (causal), and a bare BertModel (no heads to train).
    let encoder = trained(&tmp, "encoder", "60", &[]);
    check_same_as_the_page(&encoder, &corpus);
    let decoder = trained(&tmp, "decoder", "60", &["--objective", "next-token"]);
    let d = check_same_as_the_page(&decoder, &corpus);
    // A decoder reads single sentences: [CLS] sentence [SEP], one segment, no next token.
    let rows = d["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert!(rows
        .iter()
        .all(|r| numbers(&r["segments"]).iter().all(|&s| s == 0.0)));
    for h in d["heads"].as_array().unwrap() {
        assert_eq!(
            float(&h["shares"][2]),
            0.0,
            "causal: nothing on the next token"
        );
    }
    let (bare, _) = tmp.checkpoint("bare", false, 0.0);
    check_same_as_the_page(&bare, &corpus);
    // The page's own run, measured on its own corpus.
    let page = tmp.path("page");
    Cmd::new(&["train", "--steps", "30", "--save", &page])
        .run()
        .lines();
    check_same_as_the_page(&page, DEFAULT_CORPUS);
}

#[test]
fn heads_every_prints_the_measurement_between_the_steps() {
    let tmp = TempDir::new("heads-every");
    let (config, corpus) = (small_config(&tmp), tmp.corpus());
    let saved = tmp.path("saved");
    let lines = Cmd::train_init(&config, &corpus)
        .with(&["--steps", "5", "--heads-every", "2", "--save", &saved])
        .lines();
    // Step 0, every 2 steps and the last, each after that step's own line.
    let order: Vec<(u64, bool)> = lines
        .iter()
        .map(|l| (l["step"].as_u64().unwrap(), l.get("heads").is_some()))
        .collect();
    assert_eq!(
        order,
        [
            (0, true),
            (1, false),
            (2, false),
            (2, true),
            (3, false),
            (4, false),
            (4, true),
            (5, false),
            (5, true)
        ]
    );
    for line in lines.iter().filter(|l| l.get("heads").is_some()) {
        assert_eq!(
            check_measurement(line, (2, 2)),
            ["baseline", "heads", "relations", "step", "text", "verdict"]
        );
    }
    let text = |l: &Value| l["text"].as_str().unwrap().to_string();
    assert!(
        text(&lines[0]).starts_with("Not yet measurable"),
        "{}",
        text(&lines[0])
    );
    assert!(
        text(&lines[8]).contains("after 5 steps") && text(&lines[8]).ends_with("model seed 0.")
    );
    // The last measurement is `heads` of the saved model: the same shares.
    let last = heads(&saved, Some(&corpus)).json();
    assert_eq!(last["heads"], lines[8]["heads"]);
    assert_eq!(last["baseline"], lines[8]["baseline"]);
    // A decoder too: causal, nothing on the next token.
    let decoder = Cmd::train_init(&config, &corpus)
        .with(&[
            "--steps",
            "2",
            "--heads-every",
            "1",
            "--objective",
            "next-token",
        ])
        .lines();
    let measured: Vec<&Value> = decoder
        .iter()
        .filter(|l| l.get("heads").is_some())
        .collect();
    assert_eq!(measured.len(), 3);
    assert!(measured[2]["heads"]
        .as_array()
        .unwrap()
        .iter()
        .all(|h| float(&h["shares"][2]) == 0.0));
    // The default run takes it too.
    let default = Cmd::new(&["train", "--steps", "1", "--heads-every", "1"]).lines();
    assert_eq!(default.len(), 3);
    check_measurement(&default[2], (2, 4));
    // Where it does not apply, and 0.
    let init = Cmd::train_init(&config, &corpus).with(&["--steps", "1"]);
    init.with(&["--heads-every", "0"])
        .fails_with(2, "--heads-every must be at least 1");
    init.with(&["--heads-every", "1", "--objective", "seq2seq"])
        .fails_with(2, "--heads-every is for training one BERT on a corpus");
    Cmd::new(&[
        "train",
        "--init",
        &config,
        "--task",
        "repeat",
        "--heads-every",
        "1",
    ])
    .fails_with(2, "--heads-every is for training one BERT on a corpus");
    let fx = Fixture::new("heads-every-model");
    fx.train()
        .with(&[
            "--optimizer",
            "sgd",
            "--lr",
            "0.1",
            "--steps",
            "1",
            "--heads-every",
            "1",
        ])
        .fails_with(2, "--model does not go with --heads-every");
    init.with(&["--heads-every", "1", "--max-len", "4"])
        .fails_with(1, "5 positions");
}

/// Writes a checkpoint of `positions` positions with [`CORPUS`]'s vocabulary in `name`.
fn short_checkpoint(tmp: &TempDir, name: &str, positions: usize) -> String {
    let vocab = build_word_vocab(CORPUS).unwrap();
    let mut config = BertConfig::new(vocab.len(), 16, 1, 2, 32);
    config.max_position_embeddings = positions;
    let model = BertForPreTraining::init(&config, &mut Rng::new(1)).unwrap();
    let dir = tmp.path(name);
    let checkpoint = Checkpoint::new(model, Tokenizer::word_piece(vocab, true)).unwrap();
    save_dir(&checkpoint, std::path::Path::new(&dir)).unwrap();
    dir
}

/// Exit `code`, nothing on stdout, and one line on stderr holding `needle`.
fn fails_in_one_line(cmd: &Cmd, code: i32, needle: &str) {
    let out = cmd.run();
    out.fails_with(code, needle);
    if code == 1 {
        assert_eq!(
            out.stderr_text().lines().count(),
            1,
            "{}",
            out.stderr_text()
        );
    }
}

#[cfg(unix)]
#[test]
fn heads_refuses_bad_input_in_one_line_and_never_panics() {
    let fx = Fixture::new("heads-bad");
    let tmp = &fx.tmp;
    let model = fx.model.as_str();
    let corpus = |name: &str, text: &[u8]| tmp.write(name, text);
    fails_in_one_line(&heads(&tmp.path("nope"), None), 1, "is not a directory");
    std::fs::create_dir_all(tmp.path("empty-dir")).unwrap();
    fails_in_one_line(&heads(&tmp.path("empty-dir"), None), 1, "config.json");
    let empty = corpus("empty.txt", b"");
    fails_in_one_line(&heads(model, Some(&empty)), 1, "the corpus is empty");
    let blank = corpus("blank.txt", b"  \n\t\n\n");
    fails_in_one_line(&heads(model, Some(&blank)), 1, "the corpus is empty");
    let one = corpus("one.txt", b"the cat sat on the mat.\n");
    fails_in_one_line(&heads(model, Some(&one)), 1, "1 sentence");
    let emoji = corpus("emoji.txt", "🐈🐈 🐕\n🌳 🐦🎵\n".as_bytes());
    fails_in_one_line(&heads(model, Some(&emoji)), 1, "[UNK]");
    let bytes = corpus("latin1.txt", b"the cat \xe9t\xe9\nthe dog\n");
    fails_in_one_line(&heads(model, Some(&bytes)), 1, "UTF-8");
    fails_in_one_line(
        &heads(model, Some(&tmp.path("missing.txt"))),
        1,
        "missing.txt",
    );
    let short = short_checkpoint(tmp, "short", 4);
    fails_in_one_line(&heads(&short, Some(&tmp.corpus())), 1, "5 positions");
    fails_in_one_line(&heads(SEQ2SEQ, None), 1, "encoder–decoder");
    // What reads: a huge line is cut to the model's positions; emoji among words are [UNK].
    let huge = format!(
        "{}\nthe dog ate a bone. 🦴\n",
        "the cat sat on the mat. ".repeat(20_000)
    );
    let h = heads(model, Some(&corpus("huge.txt", huge.as_bytes()))).json();
    let rows = h["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0]["ids"].as_array().unwrap().len(),
        16,
        "the model's 16 positions"
    );
    // Usage mistakes.
    fails_in_one_line(&Cmd::new(&["heads"]), 2, "--model is required");
    fails_in_one_line(
        &heads(model, None).with(&["--colour", "red"]),
        2,
        "unknown flag --colour",
    );
    fails_in_one_line(
        &heads(model, None).with(&["--corpus"]),
        2,
        "--corpus needs a value",
    );
}

#[test]
fn heads_help_describes_every_field() {
    let out = Cmd::new(&["heads", "--help"]).run();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.starts_with("attention-lab heads"), "{help}");
    for field in [
        "relations:",
        "heads:",
        "shares:",
        "errors:",
        "role:",
        "baseline:",
        "verdict:",
        "text:",
        "rows:",
        "\"ids\"",
        "\"segments\"",
        "\"queries\"",
        "\"borne out\"",
        "\"not borne out\"",
        "\"not decided\"",
    ] {
        assert!(help.contains(field), "{field}: {help}");
    }
    let train = String::from_utf8_lossy(&Cmd::new(&["train", "--help"]).run().stdout).into_owned();
    for words in [
        "--heads-every N",
        "shares:",
        "Neither --model nor --init: trains the page's default run",
    ] {
        assert!(train.contains(words), "{words}: {train}");
    }
}

#[test]
fn train_alone_trains_the_pages_default_run_and_notes_each_flag_that_leaves_it() {
    let out = Cmd::new(&["train", "--steps", "3"]).run();
    let lines = out.lines();
    let said = out.stderr_text();
    let sentences = protocol::DEFAULT_CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let run = format!(
        "training the page's default run: the tiny model (hidden 64, 2 layers of 4 heads, FFN 256, dropout 0.1) on the page's default corpus ({sentences} sentences), MLM + NSP, batch 8, adam lr {}",
        engine::default_run::DefaultRun::LEARNING_RATE
    );
    assert!(said.starts_with(&run), "{said}");
    assert!(!said.contains("note:"), "{said}");
    // The page's run: the same losses as the page's fresh model stepped alike.
    let mut lab = Lab::fresh(protocol::DEFAULT_CORPUS, &LabSettings::default()).unwrap();
    assert_eq!(lines.len(), 3);
    for line in &lines {
        let point = lab.step().unwrap();
        assert_eq!(line["step"].as_u64(), Some(point.step));
        assert_eq!(
            float(&line["loss"]) as f32,
            point.loss,
            "step {}",
            point.step
        );
        assert_eq!(float(&line["mlm_accuracy"]) as f32, point.mlm_accuracy);
    }
    // Each flag that leaves the setting is named.
    let tmp = TempDir::new("default-run");
    let corpus = tmp.corpus();
    let out = Cmd::new(&[
        "train",
        "--steps",
        "1",
        "--lr",
        "0.002",
        "--seed",
        "3",
        "--corpus",
        &corpus,
        "--heads",
        "2",
        "--dropout",
        "0",
        "--mask-prob",
        "0.3",
        "--batch-size",
        "4",
    ])
    .run();
    out.lines();
    let said = out.stderr_text();
    for note in [
        &format!(
            "note: --lr 0.002 is not the default run's ({})",
            engine::default_run::DefaultRun::LEARNING_RATE
        ),
        "note: --seed 3 is not the default run's (0)",
        &format!("note: --corpus {corpus} is not the default run's (the page's default corpus)"),
        "note: --heads 2 is not the default run's (4)",
        "note: --dropout 0 is not the default run's (0.1)",
        "note: --mask-prob 0.3 is not the default run's (0.15)",
        "note: --batch-size 4 is not the default run's (8)",
    ] {
        assert!(said.contains(note), "{note}: {said}");
    }
    // A value equal to the setting's leaves nothing to note.
    let lr = engine::default_run::DefaultRun::LEARNING_RATE.to_string();
    let same = Cmd::new(&["train", "--steps", "1", "--lr", &lr, "--seed", "0"]).run();
    assert!(
        !same.stderr_text().contains("note:"),
        "{}",
        same.stderr_text()
    );
    // Its flags go with no other form.
    Cmd::new(&["train", "--steps", "1", "--objective", "seq2seq"])
        .fails_with(2, "the default run trains one BERT");
    Cmd::new(&["train", "--task", "repeat"]).fails_with(2, "give --init CONFIG.json");
    Cmd::train_init(&small_config(&tmp), &corpus)
        .with(&["--heads", "2"])
        .fails_with(
            2,
            "--heads and --dropout are for --task repeat and the default run",
        );
    Cmd::new(&["train", "--mask-prob", "0.2", "--objective", "next-token"])
        .fails_with(2, "--mask-prob is for MLM + NSP training");
}
