//! Tests of the forward pass: shapes, trace against its own definitions, masks, dropout
//! determinism, and bad input as errors.

use super::*;
use crate::batch::IGNORE_INDEX;
use crate::config::BertConfig;
use crate::error::EngineError;
use ndarray::{array, Array1, Array2};

fn model() -> BertForPreTraining {
    let mut config = BertConfig::new(40, 16, 2, 4, 32);
    config.max_position_embeddings = 12;
    config.initializer_range = 0.4;
    config.hidden_dropout_prob = 0.2;
    config.attention_probs_dropout_prob = 0.2;
    BertForPreTraining::init(&config, &mut Rng::new(5)).unwrap()
}

/// Two sequences of 6, the second with 2 pads; MLM labels at 3 positions, NSP labels.
fn batch() -> Batch {
    let input_ids = array![[2u32, 9, 4, 17, 3, 22], [2, 5, 30, 3, 0, 0]];
    let attention_mask = input_ids.mapv(|id| u8::from(id != 0));
    let i = IGNORE_INDEX;
    Batch {
        token_type_ids: array![[0u32, 0, 0, 0, 0, 1], [0, 0, 1, 1, 0, 0]],
        input_ids,
        attention_mask,
        mlm_labels: Some(array![[i, 12, i, i, i, 7], [i, i, 30, i, i, i]]),
        nsp_labels: Some(Array1::from(vec![1, 0])),
    }
}

fn eval(mask: MaskMode) -> ForwardOptions {
    ForwardOptions {
        trace: false,
        ..ForwardOptions::inspection(mask)
    }
}

fn run(
    model: &BertForPreTraining,
    batch: &Batch,
    opts: ForwardOptions,
    seed: u64,
) -> ForwardOutput {
    forward(model, batch, &opts, &mut Rng::new(seed)).unwrap()
}

#[test]
fn outputs_have_the_documented_shapes_and_losses() {
    let out = run(&model(), &batch(), eval(MaskMode::Padding), 0);
    assert_eq!(out.hidden.dim(), (12, 16));
    assert_eq!(out.pooled.as_ref().unwrap().dim(), (2, 16));
    assert_eq!(out.mlm_logits.as_ref().unwrap().dim(), (12, 40));
    assert_eq!(out.mlm_rows, (0..12).collect::<Vec<_>>());
    assert_eq!(out.nsp_logits.as_ref().unwrap().dim(), (2, 2));
    let l = out.losses.unwrap();
    assert!(l.mlm > 0.0 && l.nsp > 0.0 && (l.total - l.mlm - l.nsp).abs() < 1e-6);
    assert!(
        out.pooled.unwrap().iter().all(|x| x.abs() < 1.0),
        "tanh range"
    );
    let labelled = run(
        &model(),
        &batch(),
        ForwardOptions {
            mlm_scope: MlmScope::LabelledOnly,
            ..eval(MaskMode::Padding)
        },
        0,
    );
    assert_eq!(labelled.mlm_rows, vec![1, 5, 8]);
    // The same products, but of 3 rows instead of 12: the native GEMM may pick another
    // micro-kernel (another summation order), so equal to rounding, not bit for bit.
    let (row, all) = (labelled.mlm_logits.unwrap(), out.mlm_logits.unwrap());
    for (a, b) in row.row(2).iter().zip(all.row(8)) {
        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} vs {b}");
    }
}

#[test]
fn trace_matches_the_forward_and_its_own_definitions() {
    let (model, batch) = (model(), batch());
    let traced = run(
        &model,
        &batch,
        ForwardOptions {
            trace: true,
            ..eval(MaskMode::Padding)
        },
        0,
    );
    let tr = traced.trace.as_ref().unwrap();
    assert_eq!((tr.layers.len(), tr.layers[0].heads.len()), (2, 4));
    assert_eq!(
        tr.layers[1].output.data,
        traced
            .hidden
            .slice(s![..6, ..])
            .iter()
            .copied()
            .collect::<Vec<_>>()
    );
    assert_eq!(tr.layers[1].input, tr.layers[0].output);
    assert_eq!(tr.embeddings, tr.layers[0].input);
    let d = 4;
    for layer in &tr.layers {
        for (h, head) in layer.heads.iter().enumerate() {
            assert_eq!(
                (head.q.rows, head.q.cols, head.scores.rows, head.scores.cols),
                (6, d, 6, 6)
            );
            for i in 0..6 {
                assert!((head.weights.row(i).iter().sum::<f32>() - 1.0).abs() < 1e-6);
                for j in 0..6 {
                    let scaled = head.scores.get(i, j) / (d as f32).sqrt();
                    assert!((head.scaled.get(i, j) - scaled).abs() < 1e-6);
                    assert_eq!(
                        head.masked.get(i, j),
                        head.scaled.get(i, j) + head.mask.get(i, j)
                    );
                }
                for c in 0..d {
                    let ctx: f32 = (0..6)
                        .map(|j| head.weights.get(i, j) * head.v.get(j, c))
                        .sum();
                    assert!((head.context.get(i, c) - ctx).abs() < 1e-5);
                    assert_eq!(layer.context.get(i, h * d + c), head.context.get(i, c));
                }
            }
        }
    }
    // Row 0 has no padding: M is all 0 there.
    assert!(tr.layers[0].heads[0].mask.data.iter().all(|&m| m == 0.0));
    // Trace off changes nothing but the trace.
    let plain = run(&model, &batch, eval(MaskMode::Padding), 0);
    assert!(plain.trace.is_none());
    assert_eq!(plain.hidden, traced.hidden);
    assert_eq!(plain.mlm_logits, traced.mlm_logits);
    assert_eq!(plain.losses, traced.losses);
}

#[test]
fn an_unscaled_model_feeds_the_raw_scores_to_the_mask_and_softmax() {
    let (scaled_model, batch) = (model(), batch());
    let mut model = scaled_model.clone();
    model.config.attention_scaling = crate::config::AttentionScaling::None;
    let traced = |m: &BertForPreTraining| {
        let opts = ForwardOptions {
            trace: true,
            ..eval(MaskMode::Padding)
        };
        run(m, &batch, opts, 0).trace.unwrap()
    };
    let (unscaled, scaled) = (traced(&model), traced(&scaled_model));
    let (head, head_scaled) = (&unscaled.layers[0].heads[1], &scaled.layers[0].heads[1]);
    // Layer 1's input does not depend on the scaling: the same QKᵀ, then S′ = S · 1.
    assert_eq!(head.scores, head_scaled.scores);
    assert_eq!(head.scaled, head.scores);
    for i in 0..6 {
        let row = head.scores.row(i);
        let top = row.iter().copied().fold(f32::MIN, f32::max);
        let sum: f32 = row.iter().map(|s| (s - top).exp()).sum();
        for (j, s) in row.iter().enumerate() {
            let want = (s - top).exp() / sum;
            assert!((head.weights.get(i, j) - want).abs() < 1e-6);
        }
    }
    // d = 4: the unscaled scores are twice the scaled ones, so the weights differ.
    assert_ne!(head.weights, head_scaled.weights);
}

#[test]
fn causal_trace_has_an_exactly_zero_upper_triangle_and_padding_a_minus_infinity_mask() {
    let mut b = batch();
    b.input_ids.swap([0, 0], [1, 0]); // make row 0 the padded one
    b.input_ids.row_mut(0).assign(&array![2, 5, 30, 3, 0, 0]);
    b.attention_mask = b.input_ids.mapv(|id| u8::from(id != 0));
    let out = run(
        &model(),
        &b,
        ForwardOptions {
            trace: true,
            ..eval(MaskMode::Causal)
        },
        0,
    );
    for head in out.trace.unwrap().layers.iter().flat_map(|l| &l.heads) {
        for i in 0..6 {
            for j in 0..6 {
                let allowed = j <= i && j < 4;
                assert_eq!(head.weights.get(i, j) == 0.0, !allowed, "i{i} j{j}");
                assert_eq!(
                    head.mask.get(i, j),
                    if allowed { 0.0 } else { f32::NEG_INFINITY }
                );
            }
        }
    }
}

#[test]
fn padding_does_not_change_real_positions() {
    let model = model();
    for mode in [MaskMode::Padding, MaskMode::Causal] {
        let short = Batch {
            input_ids: array![[2u32, 9, 4, 17, 3]],
            token_type_ids: array![[0u32, 0, 0, 1, 1]],
            attention_mask: Array2::ones((1, 5)),
            mlm_labels: None,
            nsp_labels: None,
        };
        let mut long = short.clone();
        long.input_ids = array![[2u32, 9, 4, 17, 3, 0, 0, 0]];
        long.token_type_ids = array![[0u32, 0, 0, 1, 1, 0, 0, 0]];
        long.attention_mask = array![[1u8, 1, 1, 1, 1, 0, 0, 0]];
        let (a, b) = (
            run(&model, &short, eval(mode), 0),
            run(&model, &long, eval(mode), 0),
        );
        let diff = (&a.hidden - &b.hidden.slice(s![..5, ..]))
            .mapv(f32::abs)
            .fold(0.0f32, |m, &x| m.max(x));
        assert!(diff < 1e-5, "{mode:?}: {diff}");
        let pooled_diff = (a.pooled.unwrap() - b.pooled.unwrap()).mapv(f32::abs).sum();
        assert!(pooled_diff < 1e-5, "{mode:?}");
    }
    // Without a mask the pads are attended to: the check above is not vacuous.
    let (none, padding) = (
        run(&model, &batch(), eval(MaskMode::None), 0),
        run(&model, &batch(), eval(MaskMode::Padding), 0),
    );
    assert_eq!(none.hidden.row(0), padding.hidden.row(0)); // row 0 has no padding
    assert_ne!(none.hidden.row(6), padding.hidden.row(6));
}

#[test]
fn training_mode_is_deterministic_per_seed_and_drops_out() {
    let (model, batch) = (model(), batch());
    let train = ForwardOptions {
        train: true,
        ..eval(MaskMode::Padding)
    };
    let (a, b, c) = (
        run(&model, &batch, train, 3),
        run(&model, &batch, train, 3),
        run(&model, &batch, train, 4),
    );
    assert_eq!(a.hidden, b.hidden);
    assert_eq!(a.losses, b.losses);
    assert_ne!(a.hidden, c.hidden);
    assert_ne!(
        a.hidden,
        run(&model, &batch, eval(MaskMode::Padding), 3).hidden
    );
    // Evaluation ignores the seed.
    assert_eq!(
        run(&model, &batch, eval(MaskMode::Padding), 1).hidden,
        run(&model, &batch, eval(MaskMode::Padding), 2).hidden
    );
}

#[test]
fn no_labelled_position_gives_zero_mlm_loss_not_nan() {
    let mut b = batch();
    b.mlm_labels.as_mut().unwrap().fill(IGNORE_INDEX);
    let out = run(
        &model(),
        &b,
        ForwardOptions {
            mlm_scope: MlmScope::LabelledOnly,
            ..eval(MaskMode::Padding)
        },
        0,
    );
    let l = out.losses.unwrap();
    assert_eq!((l.mlm, l.mlm_accuracy), (0.0, 0.0));
    assert!(l.nsp > 0.0 && l.total == l.nsp);
    assert_eq!(out.mlm_logits.unwrap().dim(), (0, 40));
}

#[test]
fn a_fully_padded_sequence_gives_finite_outputs() {
    let mut b = batch();
    b.attention_mask.row_mut(1).fill(0);
    let out = run(&model(), &b, eval(MaskMode::Padding), 0);
    assert!(out.hidden.iter().all(|x| x.is_finite()));
    assert!(out.losses.unwrap().total.is_finite());
}

#[test]
fn bad_batches_are_input_errors_not_panics() {
    let model = model();
    let bad = |edit: &dyn Fn(&mut Batch), needle: &str| {
        let mut b = batch();
        edit(&mut b);
        match forward(&model, &b, &eval(MaskMode::Padding), &mut Rng::new(0)) {
            Err(EngineError::Input(m)) => assert!(m.contains(needle), "{m:?} lacks {needle:?}"),
            Err(e) => panic!("wrong error kind {e}"),
            Ok(_) => panic!("accepted a batch with {needle}"),
        }
    };
    bad(&|b| b.input_ids[[1, 2]] = 40, "token id 40");
    bad(&|b| b.token_type_ids[[0, 1]] = 2, "token type 2");
    bad(
        &|b| b.mlm_labels.as_mut().unwrap()[[0, 0]] = 40,
        "MLM label 40",
    );
    bad(
        &|b| b.mlm_labels.as_mut().unwrap()[[0, 0]] = -1,
        "MLM label -1",
    );
    bad(
        &|b| b.nsp_labels = Some(Array1::from(vec![0, 2])),
        "NSP label 2",
    );
    bad(
        &|b| b.nsp_labels = Some(Array1::from(vec![0])),
        "NSP labels",
    );
    bad(
        &|b| b.attention_mask = Array2::ones((2, 5)),
        "attention_mask",
    );
    bad(
        &|b| b.token_type_ids = Array2::zeros((1, 6)),
        "token_type_ids",
    );
    bad(
        &|b| b.mlm_labels = Some(Array2::zeros((2, 5))),
        "mlm_labels",
    );
    bad(
        &|b| {
            b.input_ids = Array2::zeros((0, 6));
            b.token_type_ids = Array2::zeros((0, 6));
            b.attention_mask = Array2::zeros((0, 6));
            b.mlm_labels = None;
            b.nsp_labels = None;
        },
        "empty batch",
    );
    bad(
        &|b| {
            b.input_ids = Array2::zeros((1, 13));
            b.token_type_ids = Array2::zeros((1, 13));
            b.attention_mask = Array2::ones((1, 13));
            b.mlm_labels = None;
            b.nsp_labels = None;
        },
        "max_position_embeddings 12",
    );
}

#[test]
fn parameters_that_contradict_the_config_are_an_error_not_a_panic() {
    let mut m = model();
    m.bert.layers[1].output.dense.weight = Array2::zeros((16, 31));
    match forward(&m, &batch(), &eval(MaskMode::Padding), &mut Rng::new(0)) {
        Err(EngineError::Config(msg)) => {
            assert!(msg.contains("layer.1.output.dense.weight"), "{msg}")
        }
        other => panic!("expected a config error, got ok = {}", other.is_ok()),
    }
    let mut m = model();
    m.bert.layers.pop();
    assert!(matches!(
        forward(&m, &batch(), &eval(MaskMode::Padding), &mut Rng::new(0)),
        Err(EngineError::Config(_))
    ));
}

#[test]
fn a_bare_bert_model_runs_without_heads_or_losses() {
    let mut m = model();
    m.cls = None;
    m.bert.pooler = None;
    let out = run(&m, &batch(), eval(MaskMode::Padding), 0);
    assert!(
        out.pooled.is_none()
            && out.mlm_logits.is_none()
            && out.nsp_logits.is_none()
            && out.losses.is_none()
    );
    assert_eq!(
        out.hidden,
        run(&model(), &batch(), eval(MaskMode::Padding), 0).hidden
    );
}

/// Full attention's weights past the engine's limit are refused before anything of the input's
/// size is allocated, whoever calls (the CLI checked its flags; the browser's worker, which runs
/// the same forward, did not).
#[test]
fn full_attention_weights_past_the_limit_are_an_input_error() {
    let mut config = BertConfig::new(40, 16, 2, 4, 32);
    config.position_embedding_type = crate::config::PositionEmbeddingType::Rotary;
    let model = BertForPreTraining::init(&config, &mut Rng::new(5)).unwrap();
    // 2 layers × 1 row × 4 heads × 12 000² floats: 4.6 GB.
    let t = 12_000;
    let input_ids = Array2::from_elem((1, t), 5u32);
    let batch = Batch {
        token_type_ids: Array2::zeros((1, t)),
        attention_mask: Array2::ones((1, t)),
        input_ids,
        mlm_labels: None,
        nsp_labels: None,
    };
    let Err(e) = forward(&model, &batch, &eval(MaskMode::Padding), &mut Rng::new(0)) else {
        panic!("a forward pass that needs 4.6 GB of weights ran");
    };
    assert!(matches!(e, EngineError::Input(_)), "{e}");
    let message = e.to_string();
    assert!(
        message.contains("would need 4.6 GB for full attention's weights")
            && message.contains("tiled"),
        "{message}"
    );
}

#[test]
fn a_head_mask_zeros_exactly_that_heads_context_and_backward_refuses_it() {
    let (model, batch) = (model(), batch());
    let traced = ForwardOptions {
        trace: true,
        ..eval(MaskMode::Padding)
    };
    let all = run(&model, &batch, traced, 0);
    let masked = forward_with_head_mask(
        &model,
        &batch,
        &traced,
        &HeadMask::without(2, 4, 1, 2),
        &mut Rng::new(0),
    )
    .unwrap();
    // Keeping every head is the plain pass, bit for bit.
    let kept = forward_with_head_mask(
        &model,
        &batch,
        &traced,
        &HeadMask::keep_all(2, 4),
        &mut Rng::new(0),
    )
    .unwrap();
    assert_eq!(kept.hidden, all.hidden);
    assert_eq!(kept.losses, all.losses);
    let (a, m) = (all.trace.as_ref().unwrap(), masked.trace.as_ref().unwrap());
    // Layer 1 (the first) is untouched; in layer 2 head 3's context columns are exactly 0 and
    // the other heads' are those of the plain pass.
    assert_eq!(a.layers[0].output, m.layers[0].output);
    let d = 4;
    let (ca, cm) = (&a.layers[1].context, &m.layers[1].context);
    for i in 0..ca.rows {
        for c in 0..16 {
            if c / d == 2 {
                assert_eq!(cm.get(i, c), 0.0, "row {i} column {c}");
            } else {
                assert_eq!(cm.get(i, c), ca.get(i, c), "row {i} column {c}");
            }
        }
    }
    assert_ne!(masked.hidden, all.hidden);
    assert_ne!(masked.losses, all.losses);
    // An evaluation: no backward of a masked pass, and the mask must fit the model.
    let mut grads = model.clone();
    let e = crate::backward::backward(&model, &batch, &masked, &mut grads).unwrap_err();
    assert!(e.to_string().contains("head mask"), "{e}");
    let bad = forward_with_head_mask(
        &model,
        &batch,
        &traced,
        &HeadMask::keep_all(2, 3),
        &mut Rng::new(0),
    );
    assert!(bad.is_err());
}
