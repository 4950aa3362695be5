//! An encoder–decoder (`transformers.EncoderDecoderModel` from two BERTs) against PyTorch.
//!
//! The fixture under tests/fixtures/seq2seq/ was written by tools/fixtures_seq2seq.py (run by
//! tools/make_fixtures.py; torch 2.15, transformers 5.24): a tiny random EncoderDecoderModel
//! saved by `save_pretrained` (`model/`), and in `expected.safetensors`, for a batch of two
//! sources (one padded) whose labels are the source words reversed: the logits and loss, the
//! encoder's output, batch row 1's decoder self-attention and cross-attention weights and
//! decoder hidden states, every gradient and every weight after one Adam step.
//!
//! Tolerance: as tests/reference.rs (|engine − torch| ≤ 1e-4 + 1e-4·|torch|, same sizes and
//! weight scale).

use engine::forward::ForwardOptions;
use engine::optim::{Optimizer, OptimizerConfig};
use engine::seq2seq::{
    backward_seq2seq, forward_seq2seq, load, to_files, EncoderDecoder, Seq2SeqBatch, Seq2SeqOutput,
};
use engine::{MaskMode, Rng};
use ndarray::Array2;
use safetensors::SafeTensors;
use serde::Deserialize;
use std::path::PathBuf;

mod common;
use common::{check, Expected, ATOL};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seq2seq")
}

fn model() -> EncoderDecoder {
    let files = engine::checkpoint::read_dir(&dir().join("model")).expect("files");
    load(&files).expect("the encoder–decoder loads").model
}

#[derive(Deserialize)]
struct BatchRef {
    input_ids: Vec<Vec<u32>>,
    attention_mask: Vec<Vec<u8>>,
    labels: Vec<Vec<i64>>,
    decoder_input_ids: Vec<Vec<u32>>,
    decoder_attention_mask: Vec<Vec<u8>>,
}

fn expected() -> Expected {
    Expected::read(&dir().join("model/expected.safetensors"))
}

/// The batch built the engine's way from source and labels; the decoder inputs and mask
/// must be those transformers used.
fn batch(want: &Expected, model: &EncoderDecoder) -> Seq2SeqBatch {
    let b: BatchRef = serde_json::from_str(&want.metadata("batch")).unwrap();
    let matrix = |rows: &Vec<Vec<u32>>| {
        Array2::from_shape_vec((rows.len(), rows[0].len()), rows.concat()).unwrap()
    };
    let (bs, ts) = (b.input_ids.len(), b.input_ids[0].len());
    let tt = b.labels[0].len();
    let batch = Seq2SeqBatch::new(
        matrix(&b.input_ids),
        Array2::from_shape_vec((bs, ts), b.attention_mask.concat()).unwrap(),
        Array2::from_shape_vec((bs, tt), b.labels.concat()).unwrap(),
        model.decoder_start_token_id,
        model.pad_token_id,
    );
    assert_eq!(batch.target.input_ids, matrix(&b.decoder_input_ids));
    let mask = Array2::from_shape_vec((bs, tt), b.decoder_attention_mask.concat()).unwrap();
    Seq2SeqBatch {
        target: engine::Batch {
            attention_mask: mask,
            ..batch.target
        },
        ..batch
    }
}

fn run(model: &EncoderDecoder, batch: &Seq2SeqBatch) -> Seq2SeqOutput {
    let opts = ForwardOptions {
        trace: true,
        ..ForwardOptions::inspection(MaskMode::Padding)
    };
    forward_seq2seq(model, batch, &opts, &mut Rng::new(0)).expect("forward")
}

#[test]
fn an_encoder_decoder_loads_and_saves_in_the_hf_layout() {
    let files = engine::checkpoint::read_dir(&dir().join("model")).unwrap();
    let ck = load(&files).unwrap();
    let m = &ck.model;
    assert!(m.encoder.cls.is_none() && !m.encoder.config.is_decoder);
    assert!(m.decoder.config.is_decoder && m.decoder.config.add_cross_attention);
    assert!(m
        .decoder
        .bert
        .layers
        .iter()
        .all(|l| l.crossattention.is_some()));
    assert_eq!((m.decoder_start_token_id, m.pad_token_id), (2, 0));
    let back = load(&to_files(&ck)).unwrap();
    assert_eq!(back, ck);
    // The saved names are the ones transformers wrote.
    let ours: Vec<String> = {
        let files = to_files(&ck);
        let st = SafeTensors::deserialize(&files.safetensors).unwrap();
        let mut n: Vec<String> = st.names().into_iter().map(String::from).collect();
        n.sort();
        n
    };
    let theirs: Vec<String> = {
        let st = SafeTensors::deserialize(&files.safetensors).unwrap();
        let mut n: Vec<String> = st.names().into_iter().map(String::from).collect();
        n.sort();
        n
    };
    assert_eq!(ours, theirs);
}

#[test]
fn bad_encoder_decoder_checkpoints_are_clear_errors() {
    let files = engine::checkpoint::read_dir(&dir().join("model")).unwrap();
    // Cross-attention tensors, but the decoder config does not say so.
    let mut no_flag = files.clone();
    no_flag.config_json = files.config_json.replace(
        "\"add_cross_attention\": true",
        "\"add_cross_attention\": false",
    );
    assert_ne!(no_flag.config_json, files.config_json);
    let e = load(&no_flag).unwrap_err().to_string();
    assert!(
        e.contains("cross-attention tensors") && e.contains("add_cross_attention"),
        "{e}"
    );
    // The two halves' vocabularies differ.
    let mut value: serde_json::Value = serde_json::from_str(&files.config_json).unwrap();
    value["encoder"]["vocab_size"] = 41.into();
    let mut other = files.clone();
    other.config_json = value.to_string();
    let e = load(&other).unwrap_err().to_string();
    assert!(e.contains("vocabular"), "{e}");
}

#[test]
fn logits_loss_and_both_attentions_match_torch() {
    let model = model();
    let want = expected();
    let batch = batch(&want, &model);
    let out = run(&model, &batch);
    let mut worst = check(
        "encoder output",
        out.encoder.hidden.as_slice().unwrap(),
        &want.tensor("encoder_hidden"),
    );
    let logits = out.decoder.mlm_logits.as_ref().unwrap();
    worst = worst.max(check(
        "logits",
        logits.as_slice().unwrap(),
        &want.tensor("logits"),
    ));
    let loss = out.decoder.losses.unwrap().total;
    worst = worst.max(check("loss", &[loss], &want.tensor("loss")));

    // Row 1 (the padded source) is the one torch recorded; the trace holds row 0, so trace
    // a batch of row 1 alone.
    let row1 = |b: &engine::Batch| engine::Batch {
        input_ids: b.input_ids.slice(ndarray::s![1..2, ..]).to_owned(),
        token_type_ids: b.token_type_ids.slice(ndarray::s![1..2, ..]).to_owned(),
        attention_mask: b.attention_mask.slice(ndarray::s![1..2, ..]).to_owned(),
        mlm_labels: b
            .mlm_labels
            .as_ref()
            .map(|l| l.slice(ndarray::s![1..2, ..]).to_owned()),
        nsp_labels: None,
    };
    let one = Seq2SeqBatch {
        source: row1(&batch.source),
        target: row1(&batch.target),
    };
    let traced = run(&model, &one);
    let trace = traced.decoder.trace.as_ref().unwrap();
    let (shape, self_w) = want.get("decoder_self_attentions").unwrap();
    let (cshape, cross_w) = want.get("cross_attentions").unwrap();
    let (heads, tt, ts) = (shape[1], shape[2], cshape[3]);
    let source_mask = one.source.attention_mask.row(0).to_vec();
    for (l, layer) in trace.layers.iter().enumerate() {
        assert_eq!(layer.cross_heads.len(), heads);
        for h in 0..heads {
            let at = (l * heads + h) * tt * tt;
            let w = &layer.heads[h].weights.data;
            worst = worst.max(check(
                &format!("{l}.{h} self"),
                w,
                &self_w[at..at + tt * tt],
            ));
            let at = (l * heads + h) * tt * ts;
            let cross = &layer.cross_heads[h];
            assert_eq!((cross.weights.rows, cross.weights.cols), (tt, ts));
            let c = &cross.weights.data;
            worst = worst.max(check(
                &format!("{l}.{h} cross"),
                c,
                &cross_w[at..at + tt * ts],
            ));
            // Every target row sees every real source token and no source padding.
            for i in 0..tt {
                for j in 0..ts {
                    assert_eq!(c[i * ts + j] == 0.0, source_mask[j] == 0, "row {i} col {j}");
                }
            }
        }
    }
    let (_, hidden) = want.get("decoder_hidden_states").unwrap();
    let per = tt * model.decoder.config.hidden_size;
    for (l, layer) in trace.layers.iter().enumerate() {
        let at = (l + 1) * per;
        worst = worst.max(check(
            &format!("decoder layer {l}"),
            &layer.output.data,
            &hidden[at..at + per],
        ));
    }
    println!("encoder–decoder forward: max abs diff {worst:.3e}");
}

#[test]
fn every_gradient_matches_torch() {
    let model = model();
    let want = expected();
    let batch = batch(&want, &model);
    let out = run(&model, &batch);
    let mut grads = model.zeros_like();
    backward_seq2seq(&model, &batch, &out, &mut grads).unwrap();
    let mut worst = 0.0f32;
    let named = grads.named_params();
    for (name, g) in &named {
        let (shape, w) = want
            .get(&format!("grad.{name}"))
            .unwrap_or_else(|| panic!("no torch gradient for {name}"));
        assert_eq!(g.shape(), shape.as_slice(), "{name}");
        let g: Vec<f32> = g.iter().copied().collect();
        worst = worst.max(check(&format!("grad {name}"), &g, &w));
    }
    assert_eq!(want.count("grad."), named.len());
    println!("encoder–decoder gradients: max abs diff {worst:.3e}");
}

#[test]
fn one_adam_step_matches_torch() {
    let mut model = model();
    let want = expected();
    let lr: f64 = want.metadata("adam_lr").parse().unwrap();
    let batch = batch(&want, &model);
    let out = run(&model, &batch);
    let mut grads = model.zeros_like();
    backward_seq2seq(&model, &batch, &out, &mut grads).unwrap();
    // Adam is per parameter: one optimiser per half is torch's one over both.
    let mut enc = Optimizer::new(OptimizerConfig::adam(lr), &model.encoder).unwrap();
    let mut dec = Optimizer::new(OptimizerConfig::adam(lr), &model.decoder).unwrap();
    enc.step(&mut model.encoder, &grads.encoder).unwrap();
    dec.step(&mut model.decoder, &grads.decoder).unwrap();
    let no_grad = want.metadata("no_grad");
    for (name, p) in model.named_params() {
        let w = want.tensor(&format!("adam.{name}"));
        let p: Vec<f32> = p.iter().copied().collect();
        if name.contains("self.key.bias") || no_grad.contains(&name) {
            // Zero in exact arithmetic: Adam moves them by ±lr on float noise (reference.rs).
            let bound = 2.0 * lr as f32 + ATOL;
            assert!(
                p.iter().zip(&w).all(|(a, b)| (a - b).abs() <= bound),
                "{name}"
            );
        } else {
            check(&format!("adam {name}"), &p, &w);
        }
    }
}

#[derive(Deserialize)]
struct GenerateCase {
    /// The source.
    input_ids: Vec<u32>,
    max_new_tokens: usize,
    tokens: Vec<u32>,
}

/// Greedy generation from [CLS] reading the source gives transformers' tokens, with the cache
/// (self-attention K/V growing, cross-attention K/V of the source computed once) and without,
/// and the logits agree at every step.
#[test]
fn greedy_generation_gives_transformers_tokens_with_and_without_the_cache() {
    use engine::generate::GenerateOptions;
    use engine::seq2seq::{generate, generator};
    let model = model();
    let meta = expected().metadata("generate");
    let cases: Vec<GenerateCase> =
        serde_json::from_str(&meta).unwrap_or_else(|e| panic!("{e}: {meta}"));
    assert_eq!(cases.len(), 2);
    for case in &cases {
        let max_new = case.max_new_tokens;
        for use_cache in [true, false] {
            let options = GenerateOptions {
                use_cache,
                ..GenerateOptions::greedy(max_new, Some(3))
            };
            let ids: Vec<u32> = generate(&model, &case.input_ids, options)
                .unwrap()
                .iter()
                .map(|t| t.id)
                .collect();
            assert_eq!(
                ids, case.tokens,
                "source {:?}, cache {use_cache}",
                case.input_ids
            );
        }
        let options = |use_cache| GenerateOptions {
            use_cache,
            ..GenerateOptions::greedy(max_new, None)
        };
        let mut cached = generator(&model, &case.input_ids, options(true)).unwrap();
        let mut full = generator(&model, &case.input_ids, options(false)).unwrap();
        loop {
            for (x, y) in cached.logits().iter().zip(full.logits()) {
                assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "{x} vs {y}");
            }
            let (a, b) = (cached.next_token().unwrap(), full.next_token().unwrap());
            assert_eq!(a.as_ref().map(|t| t.id), b.as_ref().map(|t| t.id));
            if a.is_none() {
                break;
            }
        }
    }
}
