//! Whole models with attention variants against PyTorch / `transformers`, and the checkpoints
//! they are saved in.
//!
//! The fixtures under tests/fixtures/variants/ were written by tools/fixtures_models.py (run by
//! tools/make_fixtures.py; torch 2.15, transformers 5.24): a tiny BERT whose self-attention is
//! `scaled_dot_product_attention(..., enable_gqa=True)` with G = 1 and G = 2 K/V groups
//! (`gqa1/`, `gqa2/`, saved by `save_pretrained`), a `RoFormerModel` with BERT's pooler and
//! pre-training heads on top (`rotary/`, BERT names, position_embedding_type "rotary"), and the
//! same RoFormer saved by `RoFormerModel` / `RoFormerForMaskedLM.save_pretrained`
//! (`roformer_model/`, `roformer_mlm/`). Each of the first three has `expected.safetensors`:
//! for a padded training batch under the padding and the causal mask, the hidden states and
//! attention weights of batch row 0, the MLM / NSP logits, the losses and every gradient.
//!
//! Tolerance: as tests/reference.rs (|engine − torch| ≤ 1e-4 + 1e-4·|torch|, same model sizes
//! and weight scale), for the reasons given there.

use engine::backward::backward;
use engine::checkpoint::{load_dir, save_dir, to_files, Checkpoint};
use engine::config::{AttentionType, PositionEmbeddingType};
use engine::forward::{forward, ForwardOptions, ForwardOutput};
use engine::{Batch, BertConfig, BertForPreTraining, MaskMode, Rng};
use ndarray::{Array1, Array2};
use safetensors::SafeTensors;
use serde::Deserialize;
use std::path::PathBuf;

const ATOL: f32 = 1e-4;
const RTOL: f32 = 1e-4;

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/variants")
        .join(name)
}

fn load(name: &str) -> Checkpoint {
    load_dir(&dir(name)).unwrap_or_else(|e| panic!("loading {name}: {e}"))
}

#[derive(Deserialize)]
struct BatchRef {
    input_ids: Vec<Vec<u32>>,
    token_type_ids: Vec<Vec<u32>>,
    attention_mask: Vec<Vec<u8>>,
    mlm_labels: Vec<Vec<i64>>,
    nsp_labels: Vec<u32>,
}

/// `expected.safetensors`: tensors by name, and the batch from its metadata.
struct Expected {
    bytes: Vec<u8>,
}

impl Expected {
    fn read(name: &str) -> Self {
        let path = dir(name).join("expected.safetensors");
        Expected {
            bytes: std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        }
    }

    fn tensors(&self) -> SafeTensors<'_> {
        SafeTensors::deserialize(&self.bytes).expect("fixture is safetensors")
    }

    /// (shape, values) of `name`, or None when the fixture does not hold it.
    fn get(&self, name: &str) -> Option<(Vec<usize>, Vec<f32>)> {
        let st = self.tensors();
        let view = st.tensor(name).ok()?;
        let data = view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Some((view.shape().to_vec(), data))
    }

    fn tensor(&self, name: &str) -> Vec<f32> {
        self.get(name)
            .unwrap_or_else(|| panic!("fixture has no {name}"))
            .1
    }

    fn batch(&self) -> Batch {
        let (_, header) = SafeTensors::read_metadata(&self.bytes).expect("safetensors header");
        let meta = header.metadata().clone().expect("metadata");
        let b: BatchRef = serde_json::from_str(&meta["batch"]).expect("batch JSON");
        let (rows, t) = (b.input_ids.len(), b.input_ids[0].len());
        let ids = |v: &Vec<Vec<u32>>| Array2::from_shape_vec((rows, t), v.concat()).unwrap();
        Batch {
            input_ids: ids(&b.input_ids),
            token_type_ids: ids(&b.token_type_ids),
            attention_mask: Array2::from_shape_vec((rows, t), b.attention_mask.concat()).unwrap(),
            mlm_labels: Some(Array2::from_shape_vec((rows, t), b.mlm_labels.concat()).unwrap()),
            nsp_labels: Some(Array1::from_vec(b.nsp_labels)),
        }
    }
}

/// Collects every comparison and reports them all, with the largest difference.
#[derive(Default)]
struct Report {
    checked: usize,
    worst: f32,
    failures: Vec<String>,
}

impl Report {
    fn check(&mut self, what: &str, got: &[f32], want: &[f32]) {
        if got.len() != want.len() {
            self.failures.push(format!(
                "{what}: {} values, expected {}",
                got.len(),
                want.len()
            ));
            return;
        }
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let d = (g - w).abs();
            self.checked += 1;
            if d.is_finite() {
                self.worst = self.worst.max(d);
            }
            // NaN fails too.
            if d.is_nan() || d > ATOL + RTOL * w.abs() {
                self.failures.push(format!(
                    "{what}[{i}]: engine {g}, torch {w} (|diff| {d:.2e})"
                ));
                return;
            }
        }
    }

    fn finish(self, test: &str) {
        println!(
            "{test}: {} comparisons, max abs diff {:.3e}",
            self.checked, self.worst
        );
        assert!(self.checked > 0, "{test}: nothing was compared");
        assert!(
            self.failures.is_empty(),
            "{test}: differs from torch\n  {}",
            self.failures.join("\n  ")
        );
    }
}

fn options(mask: MaskMode, trace: bool) -> ForwardOptions {
    ForwardOptions {
        trace,
        ..ForwardOptions::inspection(mask)
    }
}

fn run(model: &BertForPreTraining, batch: &Batch, mask: MaskMode) -> ForwardOutput {
    forward(model, batch, &options(mask, true), &mut Rng::new(0)).expect("forward")
}

/// Hidden states and attention weights of batch row 0 against `{mask}.hidden_states` and
/// `{mask}.attentions`.
fn check_encoder(
    report: &mut Report,
    what: &str,
    out: &ForwardOutput,
    want: &Expected,
    mask: &str,
) {
    let trace = out.trace.as_ref().expect("trace requested");
    let (shape, hidden) = want
        .get(&format!("{mask}.hidden_states"))
        .expect("hidden states");
    let per_state = shape[1] * shape[2]; // T·C
    report.check(
        &format!("{what} {mask} embeddings"),
        &trace.embeddings.data,
        &hidden[..per_state],
    );
    let (shape, attentions) = want.get(&format!("{mask}.attentions")).expect("attentions");
    let (heads, tt) = (shape[1], shape[2] * shape[3]);
    assert_eq!(trace.layers.len(), shape[0]);
    for (l, layer) in trace.layers.iter().enumerate() {
        report.check(
            &format!("{what} {mask} layer {l} output"),
            &layer.output.data,
            &hidden[(l + 1) * per_state..(l + 2) * per_state],
        );
        assert_eq!(layer.heads.len(), heads);
        for (h, head) in layer.heads.iter().enumerate() {
            let at = (l * heads + h) * tt;
            report.check(
                &format!("{what} {mask} layer {l} head {h} weights"),
                &head.weights.data,
                &attentions[at..at + tt],
            );
        }
    }
}

/// The whole model of `name` against its fixture: encoder, logits, losses and, where the
/// fixture has them, every gradient, under the padding and the causal mask.
fn whole_model(name: &str) {
    let model = load(name).model;
    let want = Expected::read(name);
    let batch = want.batch();
    let mut report = Report::default();
    for (mask, mode) in [("padding", MaskMode::Padding), ("causal", MaskMode::Causal)] {
        let out = run(&model, &batch, mode);
        check_encoder(&mut report, name, &out, &want, mask);
        let mlm = out.mlm_logits.as_ref().expect("MLM head");
        report.check(
            &format!("{name} {mask} mlm_logits"),
            mlm.as_slice().unwrap(),
            &want.tensor(&format!("{mask}.mlm_logits")),
        );
        let nsp = out.nsp_logits.as_ref().expect("NSP head");
        report.check(
            &format!("{name} {mask} nsp_logits"),
            nsp.as_slice().unwrap(),
            &want.tensor(&format!("{mask}.nsp_logits")),
        );
        let l = out.losses.expect("labelled batch");
        report.check(
            &format!("{name} {mask} losses"),
            &[l.total, l.mlm, l.nsp],
            &want.tensor(&format!("{mask}.loss")),
        );
        if want
            .get(&format!("{mask}.grad.bert.pooler.dense.weight"))
            .is_none()
        {
            continue;
        }
        let mut grads = model.zeros_like();
        backward(&model, &batch, &out, &mut grads).expect("backward");
        for (param, g) in grads.named_params() {
            let key = format!("{mask}.grad.{param}");
            let (shape, w) = want
                .get(&key)
                .unwrap_or_else(|| panic!("fixture has no gradient for {param}"));
            assert_eq!(g.shape(), shape.as_slice(), "{param}");
            let g: Vec<f32> = g.iter().copied().collect();
            report.check(&format!("{name} {mask} grad {param}"), &g, &w);
        }
        // And torch has no gradient the engine lacks.
        let torch_grads = want
            .tensors()
            .names()
            .iter()
            .filter(|n| n.starts_with(&format!("{mask}.grad.")))
            .count();
        assert_eq!(torch_grads, grads.named_params().len(), "{name} {mask}");
    }
    report.finish(&format!("{name} against torch"));
}

// ---------------------------------------------------------------- loading

/// The GQA checkpoints, saved by `save_pretrained`, load with K/V of [G·D, C] under BERT names.
#[test]
fn gqa_checkpoints_load_with_grouped_key_value_shapes() {
    for (name, g) in [("gqa1", 1), ("gqa2", 2)] {
        let ck = load(name);
        let c = &ck.model.config;
        assert_eq!((c.num_attention_heads, c.num_kv_heads()), (4, g));
        let d = c.head_size();
        let sa = &ck.model.bert.layers[1].attention.self_attention;
        assert_eq!(sa.query.weight.dim(), (16, 16));
        assert_eq!(sa.key.weight.dim(), (g * d, 16));
        assert_eq!(sa.value.bias.dim(), g * d);
        assert!(ck.naming.ignored.is_empty(), "{:?}", ck.naming.ignored);
        assert!(ck.model.bert.embeddings.position_embeddings.is_some());
    }
}

/// A real RoFormer checkpoint, bare (`RoFormerModel`) or under `roformer.` with an MLM head
/// (`RoFormerForMaskedLM`), loads as a rotary model with the same encoder as `rotary/`.
#[test]
fn roformer_checkpoints_load_as_rotary_models() {
    let rotary = load("rotary").model;
    assert_eq!(
        rotary.config.position_embedding_type,
        PositionEmbeddingType::Rotary
    );
    assert!(rotary.bert.embeddings.position_embeddings.is_none());
    for (name, prefix) in [("roformer_model", ""), ("roformer_mlm", "roformer.")] {
        let ck = load(name);
        let m = &ck.model;
        assert!(m.config.is_roformer());
        assert_eq!(
            m.config.position_embedding_type,
            PositionEmbeddingType::Rotary
        );
        assert_eq!(ck.naming.prefix, prefix);
        assert!(m.bert.embeddings.position_embeddings.is_none());
        assert!(m.bert.pooler.is_none() && m.cls.is_none());
        // The encoder is the one the rotary fixture was built on.
        assert_eq!(m.bert.embeddings, rotary.bert.embeddings);
        assert_eq!(m.bert.layers, rotary.bert.layers);
        // The sinusoidal table is derived, not ignored; an MLM head without NSP is ignored.
        assert!(ck
            .naming
            .ignored
            .iter()
            .all(|n| n.starts_with("cls.predictions.")));
        assert_eq!(ck.naming.ignored.is_empty(), name == "roformer_model");
    }
}

/// RoFormer's limits are errors that say what is unsupported.
#[test]
fn roformer_configs_the_engine_cannot_run_are_clear_errors() {
    let mut files = engine::checkpoint::read_dir(&dir("roformer_model")).unwrap();
    let original = files.config_json.clone();
    for (from, to, needle) in [
        (
            "\"embedding_size\": 16",
            "\"embedding_size\": 8",
            "embeddings_project",
        ),
        (
            "\"rotary_value\": false",
            "\"rotary_value\": true",
            "rotary_value",
        ),
    ] {
        assert!(original.contains(from), "{from}");
        files.config_json = original.replace(from, to);
        let e = engine::checkpoint::load(&files).unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
}

// ---------------------------------------------------------------- round trip

/// A checkpoint saved with each variant loads back identically: config, every tensor, and
/// the names it is stored under.
#[test]
fn every_variant_round_trips_through_a_checkpoint() {
    let tokenizer = load("gqa1").tokenizer;
    type Set = fn(&mut BertConfig);
    let variants: [(&str, Set); 7] = [
        ("gqa G=1", |c| c.num_key_value_heads = Some(1)),
        ("gqa G=2", |c| c.num_key_value_heads = Some(2)),
        ("rotary", |c| {
            c.position_embedding_type = PositionEmbeddingType::Rotary
        }),
        ("linear", |c| c.attention_type = AttentionType::Linear),
        ("alibi", |c| {
            c.position_embedding_type = PositionEmbeddingType::Alibi
        }),
        ("gqa + alibi", |c| {
            c.num_key_value_heads = Some(2);
            c.position_embedding_type = PositionEmbeddingType::Alibi;
        }),
        ("gqa + rotary + linear", |c| {
            c.num_key_value_heads = Some(2);
            c.position_embedding_type = PositionEmbeddingType::Rotary;
            c.attention_type = AttentionType::Linear;
        }),
    ];
    let tmp = std::env::temp_dir().join(format!("variants-round-trip-{}", std::process::id()));
    for (what, set) in variants {
        let mut config = BertConfig::tiny(tokenizer.vocab().len());
        set(&mut config);
        config.validate().unwrap();
        let model = BertForPreTraining::init(&config, &mut Rng::new(7)).unwrap();
        let ck = Checkpoint::new(model, tokenizer.clone()).unwrap();
        let back = engine::checkpoint::load(&to_files(&ck)).unwrap();
        assert_eq!(back.model, ck.model, "{what}");
        assert_eq!(
            back.model.config.position_embedding_type, config.position_embedding_type,
            "{what}"
        );
        assert_eq!(back.naming, ck.naming, "{what}");
        save_dir(&ck, &tmp).unwrap();
        assert_eq!(
            load_dir(&tmp).unwrap().model,
            ck.model,
            "{what} (directory)"
        );
    }
    // A loaded RoFormer saves back under its own names and loads back the same.
    for name in ["roformer_model", "roformer_mlm", "gqa2", "rotary"] {
        let ck = load(name);
        let back = engine::checkpoint::load(&to_files(&ck)).unwrap();
        assert_eq!(back.model, ck.model, "{name}");
        assert_eq!(back.naming.prefix, ck.naming.prefix, "{name}");
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

// ---------------------------------------------------------------- against torch

#[test]
fn multi_query_bert_matches_sdpa_enable_gqa() {
    whole_model("gqa1");
}

#[test]
fn grouped_query_bert_matches_sdpa_enable_gqa() {
    whole_model("gqa2");
}

#[test]
fn rotary_bert_matches_roformer_with_bert_heads() {
    whole_model("rotary");
}

/// The real RoFormer checkpoints: hidden states and attention weights of `RoFormerModel`.
#[test]
fn roformer_checkpoints_match_roformer_model() {
    let want = Expected::read("rotary");
    let mut batch = want.batch();
    (batch.mlm_labels, batch.nsp_labels) = (None, None);
    let mut report = Report::default();
    for name in ["roformer_model", "roformer_mlm"] {
        let model = load(name).model;
        for (mask, mode) in [("padding", MaskMode::Padding), ("causal", MaskMode::Causal)] {
            let out = run(&model, &batch, mode);
            check_encoder(&mut report, name, &out, &want, mask);
        }
    }
    report.finish("RoFormer checkpoints against RoFormerModel");
}

/// Rotary and ALiBi positions have no length limit; learned ones stop at
/// max_position_embeddings.
#[test]
fn rotary_and_alibi_models_run_past_max_position_embeddings_absolute_ones_do_not() {
    let t = 40; // > max_position_embeddings = 32
    let batch = Batch {
        input_ids: Array2::from_elem((1, t), 5),
        token_type_ids: Array2::zeros((1, t)),
        attention_mask: Array2::ones((1, t)),
        mlm_labels: None,
        nsp_labels: None,
    };
    let opts = options(MaskMode::Padding, false);
    let rotary = load("rotary").model;
    assert!(forward(&rotary, &batch, &opts, &mut Rng::new(0)).is_ok());
    let mut config = rotary.config.clone();
    config.position_embedding_type = PositionEmbeddingType::Alibi;
    let alibi = BertForPreTraining::init(&config, &mut Rng::new(0)).unwrap();
    assert!(alibi.bert.embeddings.position_embeddings.is_none());
    let out = forward(&alibi, &batch, &opts, &mut Rng::new(0)).unwrap();
    assert!(out.hidden.iter().all(|x| x.is_finite()));
    assert_eq!(out.hidden.nrows(), t);
    let absolute = load("gqa2").model;
    let e = forward(&absolute, &batch, &opts, &mut Rng::new(0))
        .err()
        .expect("absolute positions stop at 32")
        .to_string();
    assert!(e.contains("max_position_embeddings 32"), "{e}");
}
