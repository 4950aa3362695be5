//! A decoder (`BertLMHeadModel`, `is_decoder`) against PyTorch / `transformers`.
//!
//! The fixture under tests/fixtures/decoder/lm/ was written by tools/fixtures_decoder.py (run
//! by tools/make_fixtures.py; torch 2.15, transformers 5.24): a tiny random `BertLMHeadModel`
//! saved by `save_pretrained` (no pooler, no NSP head, the decoder tied), and in
//! `expected.safetensors`, for a padded batch with HF's unshifted `labels`: the logits, the
//! loss (HF shifts the labels itself), batch row 0's hidden states and attention weights (the
//! model's own causal mask), every gradient, every weight after one Adam step, and greedy
//! `generate()` tokens for three prompts.
//!
//! Tolerance: as tests/reference.rs (|engine − torch| ≤ 1e-4 + 1e-4·|torch|, same sizes and
//! weight scale), for the reasons given there.

use engine::backward::backward;
use engine::checkpoint::{load_dir, Checkpoint};
use engine::forward::{forward, ForwardOptions, ForwardOutput};
use engine::generate::{generate, GenerateOptions};
use engine::optim::{Optimizer, OptimizerConfig};
use engine::train::{train_step, StepBuffers};
use engine::{Batch, BertForPreTraining, MaskMode, Rng};
use serde::Deserialize;
use std::path::PathBuf;

mod common;
use common::{check, Expected};

const SEP: u32 = 3;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoder/lm")
}

fn checkpoint() -> Checkpoint {
    load_dir(&dir()).expect("the decoder fixture loads")
}

#[derive(Deserialize)]
struct GenerateCase {
    prompt: Vec<u32>,
    max_new_tokens: usize,
    tokens: Vec<u32>,
}

fn expected() -> Expected {
    Expected::read(&dir().join("expected.safetensors"))
}

/// The batch through the CLI's own parser: HF's `labels`, shifted by the engine.
fn batch(want: &Expected) -> Batch {
    Batch::from_json(&want.metadata("batch")).expect("the fixture's batch parses")
}

/// Inspection options asking for the padding mask only: a decoder must be causal anyway.
fn run(model: &BertForPreTraining, batch: &Batch) -> ForwardOutput {
    let opts = ForwardOptions {
        trace: true,
        ..ForwardOptions::inspection(MaskMode::Padding)
    };
    forward(model, batch, &opts, &mut Rng::new(0)).expect("forward")
}

#[test]
fn a_saved_bert_lm_head_model_loads_as_a_decoder() {
    let ck = checkpoint();
    let m = &ck.model;
    assert!(m.config.is_decoder);
    assert!(m.bert.pooler.is_none());
    let cls = m.cls.as_ref().expect("the LM head loads");
    assert!(cls.seq_relationship.is_none());
    assert!(ck.naming.ignored.is_empty(), "{:?}", ck.naming.ignored);
    // Saved and read back, the same model and config (is_decoder kept).
    let back = engine::checkpoint::load(&engine::checkpoint::to_files(&ck)).unwrap();
    assert_eq!(back.model, ck.model);
}

#[test]
fn logits_loss_hidden_states_and_causal_attention_match_torch() {
    let model = checkpoint().model;
    let want = expected();
    let batch = batch(&want);
    let out = run(&model, &batch);
    let logits = out.mlm_logits.as_ref().expect("LM head");
    let mut worst = check("logits", logits.as_slice().unwrap(), &want.tensor("logits"));
    let losses = out.losses.expect("labelled batch");
    assert_eq!(losses.nsp, 0.0);
    worst = worst.max(check("loss", &[losses.total], &want.tensor("loss")));

    let trace = out.trace.as_ref().unwrap();
    let (shape, hidden) = want.get("hidden_states").unwrap();
    let per = shape[1] * shape[2];
    worst = worst.max(check("embeddings", &trace.embeddings.data, &hidden[..per]));
    let (shape, attentions) = want.get("attentions").unwrap();
    let (heads, tt) = (shape[1], shape[2] * shape[3]);
    for (l, layer) in trace.layers.iter().enumerate() {
        let out_l = &hidden[(l + 1) * per..(l + 2) * per];
        worst = worst.max(check(&format!("layer {l}"), &layer.output.data, out_l));
        for (h, head) in layer.heads.iter().enumerate() {
            let at = (l * heads + h) * tt;
            let w = &head.weights.data;
            worst = worst.max(check(
                &format!("{l}.{h} weights"),
                w,
                &attentions[at..at + tt],
            ));
            // Causal: nothing above the diagonal, whatever mask the call asked for.
            let t = shape[2];
            assert!((0..t).all(|i| (i + 1..t).all(|j| w[i * t + j] == 0.0)));
        }
    }
    println!("decoder forward: max abs diff {worst:.3e}");
}

#[test]
fn every_gradient_matches_torch() {
    let model = checkpoint().model;
    let want = expected();
    let batch = batch(&want);
    let out = run(&model, &batch);
    let mut grads = model.zeros_like();
    backward(&model, &batch, &out, &mut grads).expect("backward");
    let mut worst = 0.0f32;
    for (name, g) in grads.named_params() {
        let (shape, w) = want
            .get(&format!("grad.{name}"))
            .unwrap_or_else(|| panic!("no torch gradient for {name}"));
        assert_eq!(g.shape(), shape.as_slice(), "{name}");
        let g: Vec<f32> = g.iter().copied().collect();
        worst = worst.max(check(&format!("grad {name}"), &g, &w));
    }
    let torch_grads = want.count("grad.");
    assert_eq!(torch_grads, grads.named_params().len());
    assert!(worst > 0.0 || torch_grads > 0);
    println!("decoder gradients: max abs diff {worst:.3e}");
}

/// As tests/reference.rs explains, the key biases' gradient is zero in exact arithmetic, so
/// Adam moves them by float noise × lr/|noise| ≈ ±lr: they are held to 2·lr.
#[test]
fn one_adam_step_matches_torch() {
    let mut model = checkpoint().model;
    let want = expected();
    let lr: f64 = want.metadata("adam_lr").parse().unwrap();
    let batch = batch(&want);
    let mut optimizer = Optimizer::new(OptimizerConfig::adam(lr), &model).unwrap();
    let mut grads = model.zeros_like();
    let opts = ForwardOptions::training(MaskMode::Padding); // dropout 0 in this config
    train_step(
        &mut model,
        &mut grads,
        &mut optimizer,
        &batch,
        &opts,
        &mut Rng::new(0),
        &mut StepBuffers::default(),
    )
    .expect("a step");
    for (name, p) in model.named_params() {
        let w = want.tensor(&format!("adam.{name}"));
        let p: Vec<f32> = p.iter().copied().collect();
        if name.ends_with("attention.self.key.bias") {
            let bound = 2.0 * lr as f32;
            assert!(
                p.iter().zip(&w).all(|(a, b)| (a - b).abs() <= bound),
                "{name}"
            );
        } else {
            check(&format!("adam {name}"), &p, &w);
        }
    }
}

#[test]
fn greedy_generation_gives_transformers_tokens_with_and_without_the_cache() {
    let model = checkpoint().model;
    let cases: Vec<GenerateCase> = serde_json::from_str(&expected().metadata("generate")).unwrap();
    assert_eq!(cases.len(), 3);
    for case in &cases {
        for use_cache in [true, false] {
            let options = GenerateOptions {
                use_cache,
                ..GenerateOptions::greedy(case.max_new_tokens, Some(SEP))
            };
            let ids: Vec<u32> = generate(&model, &case.prompt, options)
                .unwrap()
                .iter()
                .map(|t| t.id)
                .collect();
            assert_eq!(
                ids, case.tokens,
                "prompt {:?}, cache {use_cache}",
                case.prompt
            );
        }
    }
    // The cases cover both ways generation ends.
    assert!(cases.iter().any(|c| c.tokens.last() == Some(&SEP)));
    assert!(cases.iter().any(|c| c.tokens.len() == c.max_new_tokens));
}

/// A decoder's inspection says its mask is causal and makes no [MASK] predictions (its logits
/// at a [MASK] are for the token after it).
#[test]
fn a_decoder_inspection_is_causal_and_predicts_no_mask() {
    let ck = checkpoint();
    let ins = engine::inspect::inspect(
        &ck.model,
        &ck.tokenizer,
        "the [MASK] sat",
        None,
        MaskMode::Padding,
        None,
    )
    .unwrap();
    assert_eq!(ins.mask, MaskMode::Causal);
    assert!(ins.mask_predictions.is_empty());
    assert!(ins.mlm_logits.is_some());
}
