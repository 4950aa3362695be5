//! Whole-model gradient check: the hand-written backward of `BertForPreTraining` against
//! finite differences of `losses.total`, for sampled entries of EVERY named parameter.
//!
//! The model is tiny (V 30, C 8, 2 layers, 2 heads, I 16) with initializer_range 0.5 and
//! every parameter jittered (γ ≠ 1, biases ≠ 0), so attention is far from uniform and no
//! term hides behind a 0 or a 1. The derivative is the five-point stencil
//! (8·(L(x+h) − L(x−h)) − (L(x+2h) − L(x−2h))) / 12h, whose truncation error is O(h⁴), so a
//! step of h = 1e-2 can be used: the f32 loss (≈ 4, rounding ≈ 1e-6 per evaluation) then
//! adds ≲ 1.5·1e-6/h ≈ 2e-4 of noise. Tolerance: |analytic − numeric| ≤ 2e-3 + 2%·|numeric|;
//! a wrong or missing term shows up as an error of the size of the gradient itself.

use engine::batch::{Batch, MaskMode, IGNORE_INDEX};
use engine::config::{AttentionType, PositionEmbeddingType};
use engine::forward::{forward, ForwardOptions, MlmScope};
use engine::ops::attention::{AttentionKernel, Softmax};
use engine::{backward::backward, BertConfig, BertForPreTraining, Rng};
use ndarray::{array, Array1, Array2};

const H: f32 = 1e-2;
const ATOL: f64 = 2e-3;
const RTOL: f64 = 2e-2;
const SAMPLES_PER_PARAM: usize = 2;

fn tiny_model(dropout: f32) -> BertForPreTraining {
    tiny_variant(dropout, |_| {})
}

/// The tiny model with its config changed by `edit` before init (an attention variant).
fn tiny_variant(dropout: f32, edit: impl Fn(&mut BertConfig)) -> BertForPreTraining {
    let mut config = BertConfig::new(30, 8, 2, 2, 16);
    config.max_position_embeddings = 16;
    edit(&mut config);
    config.initializer_range = 0.5;
    config.hidden_dropout_prob = dropout;
    config.attention_probs_dropout_prob = dropout;
    let mut rng = Rng::new(42);
    let mut model = BertForPreTraining::init(&config, &mut rng).unwrap();
    for (_, mut p) in model.named_params_mut() {
        p.mapv_inplace(|x| x + rng.normal(0.0, 0.2));
    }
    model
}

/// Three sequences of 6: full, 2 pads, 3 pads; both token types; labels on real tokens.
fn batch() -> Batch {
    let input_ids = array![
        [2u32, 7, 4, 3, 11, 3],
        [2, 9, 4, 3, 0, 0],
        [2, 4, 13, 0, 0, 0]
    ];
    let token_type_ids = array![
        [0u32, 0, 0, 0, 1, 1],
        [0, 0, 0, 1, 0, 0],
        [0, 0, 1, 0, 0, 0]
    ];
    let attention_mask = input_ids.mapv(|id| u8::from(id != 0));
    let i = IGNORE_INDEX;
    let mlm_labels = array![[i, i, 5, i, 12, i], [i, 21, 8, i, i, i], [i, 6, i, i, i, i]];
    Batch {
        input_ids,
        token_type_ids,
        attention_mask,
        mlm_labels: Some(mlm_labels),
        nsp_labels: Some(Array1::from(vec![0, 1, 0])),
    }
}

fn loss(model: &BertForPreTraining, batch: &Batch, opts: &ForwardOptions) -> f64 {
    let out = forward(model, batch, opts, &mut Rng::new(7)).unwrap();
    out.losses.unwrap().total as f64
}

/// Checks sampled entries of every parameter; returns how many parameters had a clearly
/// non-zero gradient somewhere in the sample (so the check is not vacuous).
fn check_model(model: &BertForPreTraining, batch: &Batch, opts: &ForwardOptions) -> usize {
    // The same seed on every call: dropout masks are then identical, the loss deterministic.
    let out = forward(model, batch, opts, &mut Rng::new(7)).unwrap();
    let mut grads = model.zeros_like();
    backward(model, batch, &out, &mut grads).unwrap();
    let analytic: Vec<(String, Vec<f32>)> = grads
        .named_params()
        .into_iter()
        .map(|(name, g)| (name, g.iter().copied().collect()))
        .collect();

    let mut probe = model.clone();
    let mut pick = Rng::new(3);
    let mut informative = 0;
    for (p, (name, g)) in analytic.iter().enumerate() {
        // Random entries, plus the one with the largest analytic gradient.
        let largest = (0..g.len())
            .max_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs()))
            .unwrap();
        let mut entries: Vec<usize> = (0..SAMPLES_PER_PARAM)
            .map(|_| pick.below(g.len()))
            .collect();
        entries.push(largest);
        if name == "bert.embeddings.word_embeddings.weight" {
            entries.push(3); // [PAD] row 0 (decoder-only gradient) and a used token's row
            entries.push(2 * 8 + 1);
        }
        let mut max_numeric = 0.0f64;
        for &e in &entries {
            let x0 = model.named_params()[p].1.iter().nth(e).copied().unwrap();
            let mut at = |x: f32| {
                *probe.named_params_mut()[p].1.iter_mut().nth(e).unwrap() = x;
                loss(&probe, batch, opts)
            };
            let numeric = (8.0 * (at(x0 + H) - at(x0 - H)) - (at(x0 + 2.0 * H) - at(x0 - 2.0 * H)))
                / (12.0 * H as f64);
            at(x0);
            let a = g[e] as f64;
            let err = (a - numeric).abs();
            assert!(
                err <= ATOL + RTOL * numeric.abs(),
                "{:?} {name}[{e}]: analytic {a:.6} vs numeric {numeric:.6} (error {err:.2e})",
                opts.mask
            );
            max_numeric = max_numeric.max(numeric.abs());
        }
        informative += usize::from(max_numeric > 10.0 * ATOL);
    }
    informative
}

fn opts(mask: MaskMode, train: bool) -> ForwardOptions {
    ForwardOptions {
        train,
        ..ForwardOptions::training(mask)
    }
}

fn assert_checked_nearly_everything(informative: usize, model: &BertForPreTraining) {
    // Key biases have an exactly zero gradient (softmax ignores a shift shared by all keys),
    // so 2 of the parameters cannot be informative; all others must be.
    let total = model.named_params().len();
    assert!(
        informative >= total - 2,
        "only {informative} of {total} parameters had a non-negligible gradient"
    );
}

#[test]
fn every_parameter_gradient_matches_finite_differences_with_padding_mask() {
    let model = tiny_model(0.0);
    let informative = check_model(&model, &batch(), &opts(MaskMode::Padding, false));
    assert_checked_nearly_everything(informative, &model);
}

#[test]
fn every_parameter_gradient_matches_finite_differences_with_causal_mask() {
    let model = tiny_model(0.0);
    let informative = check_model(&model, &batch(), &opts(MaskMode::Causal, false));
    assert_checked_nearly_everything(informative, &model);
}

#[test]
fn every_parameter_gradient_matches_finite_differences_with_dropout_masks_reused() {
    let model = tiny_model(0.2);
    let out = forward(
        &model,
        &batch(),
        &opts(MaskMode::Padding, true),
        &mut Rng::new(7),
    )
    .unwrap();
    let eval = forward(
        &model,
        &batch(),
        &opts(MaskMode::Padding, false),
        &mut Rng::new(7),
    )
    .unwrap();
    assert_ne!(
        out.hidden, eval.hidden,
        "dropout must be active in this check"
    );
    let informative = check_model(&model, &batch(), &opts(MaskMode::Padding, true));
    assert_checked_nearly_everything(informative, &model);
}

#[test]
fn mlm_over_all_positions_gives_the_same_loss_and_gradients_as_labelled_only() {
    let (model, batch) = (tiny_model(0.0), batch());
    let run = |scope| {
        let o = ForwardOptions {
            mlm_scope: scope,
            ..opts(MaskMode::Padding, false)
        };
        let out = forward(&model, &batch, &o, &mut Rng::new(1)).unwrap();
        let mut grads = model.zeros_like();
        backward(&model, &batch, &out, &mut grads).unwrap();
        (out.losses.unwrap(), out.mlm_logits.unwrap().nrows(), grads)
    };
    let (all, all_rows, g_all) = run(MlmScope::AllPositions);
    let (some, some_rows, g_some) = run(MlmScope::LabelledOnly);
    assert_eq!((all_rows, some_rows), (18, 5));
    assert!((all.total - some.total).abs() < 1e-6);
    for ((name, a), (_, b)) in g_all.named_params().into_iter().zip(g_some.named_params()) {
        let diff = (&a - &b).mapv(f32::abs).fold(0.0f32, |m, &x| m.max(x));
        assert!(diff < 1e-5, "{name}: {diff}");
    }
}

#[test]
fn gradients_accumulate_over_calls() {
    let (model, batch) = (tiny_model(0.0), batch());
    let out = forward(
        &model,
        &batch,
        &opts(MaskMode::Padding, false),
        &mut Rng::new(1),
    )
    .unwrap();
    let mut once = model.zeros_like();
    backward(&model, &batch, &out, &mut once).unwrap();
    let mut twice = model.zeros_like();
    backward(&model, &batch, &out, &mut twice).unwrap();
    backward(&model, &batch, &out, &mut twice).unwrap();
    let (a, b) = (
        &once.bert.layers[0].intermediate.dense.weight,
        &twice.bert.layers[0].intermediate.dense.weight,
    );
    assert!(a.iter().any(|&x| x != 0.0));
    assert!((b - &(a * 2.0)).iter().all(|x| x.abs() < 1e-6));
}

#[test]
fn backward_without_labels_is_an_error() {
    let model = tiny_model(0.0);
    let mut b = batch();
    b.mlm_labels = None;
    b.nsp_labels = None;
    let out = forward(
        &model,
        &b,
        &opts(MaskMode::Padding, false),
        &mut Rng::new(1),
    )
    .unwrap();
    assert!(out.losses.is_none());
    let err = backward(&model, &b, &out, &mut model.zeros_like()).unwrap_err();
    assert!(
        err.to_string().contains("nothing to differentiate"),
        "{err}"
    );
}

#[test]
fn mlm_only_batch_has_no_nsp_term() {
    let model = tiny_model(0.0);
    let mut b = batch();
    b.nsp_labels = None;
    let out = forward(
        &model,
        &b,
        &opts(MaskMode::Padding, false),
        &mut Rng::new(1),
    )
    .unwrap();
    let l = out.losses.unwrap();
    assert_eq!((l.nsp, l.total), (0.0, l.mlm));
    let mut grads = model.zeros_like();
    backward(&model, &b, &out, &mut grads).unwrap();
    let seq = &grads
        .cls
        .as_ref()
        .unwrap()
        .seq_relationship
        .as_ref()
        .unwrap()
        .weight;
    assert!(
        seq.iter().all(|&x| x == 0.0),
        "NSP head got a gradient without an NSP loss"
    );
    let _: Array2<f32> = seq.clone();
}

/// Four heads of width 2 (C = 8), so that G = 2 and G = 1 both group several heads.
fn four_heads(config: &mut BertConfig) {
    config.num_attention_heads = 4;
}

fn check_variant(model: &BertForPreTraining, opts: &ForwardOptions) {
    let informative = check_model(model, &batch(), opts);
    assert_checked_nearly_everything(informative, model);
}

/// Linear attention: q and k reach the loss only through row-normalised averages of positive
/// features, so their biases' gradients are small (~1e-2 here, below the informative bar of
/// 2e-2, though still checked entry by entry); up to 3 more parameters may be quiet.
fn check_linear_variant(model: &BertForPreTraining, opts: &ForwardOptions) {
    let informative = check_model(model, &batch(), opts);
    let total = model.named_params().len();
    assert!(
        informative >= total - 5,
        "only {informative} of {total} parameters had a non-negligible gradient"
    );
}

#[test]
fn every_parameter_gradient_matches_finite_differences_with_grouped_query_attention() {
    for g in [2, 1] {
        let model = tiny_variant(0.0, |c| {
            four_heads(c);
            c.num_key_value_heads = Some(g);
        });
        assert_eq!(
            model.bert.layers[0]
                .attention
                .self_attention
                .key
                .weight
                .dim(),
            (g * 2, 8)
        );
        for mask in [MaskMode::Padding, MaskMode::Causal] {
            check_variant(&model, &opts(mask, false));
        }
    }
}

#[test]
fn every_parameter_gradient_matches_finite_differences_with_rotary_positions() {
    let model = tiny_variant(0.0, |c| {
        c.position_embedding_type = PositionEmbeddingType::Rotary
    });
    assert!(model.bert.embeddings.position_embeddings.is_none());
    for mask in [MaskMode::Padding, MaskMode::Causal] {
        check_variant(&model, &opts(mask, false));
    }
}

#[test]
fn every_parameter_gradient_matches_finite_differences_with_linear_attention() {
    let model = tiny_variant(0.0, |c| c.attention_type = AttentionType::Linear);
    for mask in [MaskMode::Padding, MaskMode::Causal] {
        check_linear_variant(&model, &opts(mask, false));
    }
}

#[test]
fn every_parameter_gradient_matches_finite_differences_with_a_sliding_window() {
    let model = tiny_model(0.0);
    for mask in [MaskMode::Padding, MaskMode::Causal] {
        let o = ForwardOptions {
            softmax: Softmax {
                window: Some(2),
                ..Softmax::default()
            },
            ..opts(mask, false)
        };
        check_variant(&model, &o);
    }
}

#[test]
fn every_parameter_gradient_matches_finite_differences_with_tiled_attention() {
    // Blocks of 4 over T = 6 (not dividing), with attention dropout (counter-based masks).
    let tiled = AttentionKernel::Tiled { block: 4 };
    let model = tiny_model(0.2);
    let o = ForwardOptions {
        softmax: Softmax {
            kernel: tiled,
            window: None,
        },
        ..opts(MaskMode::Padding, true)
    };
    check_variant(&model, &o);
    // Everything at once: GQA + rotary + window + tiled, causal.
    let model = tiny_variant(0.0, |c| {
        four_heads(c);
        c.num_key_value_heads = Some(2);
        c.position_embedding_type = PositionEmbeddingType::Rotary;
    });
    let o = ForwardOptions {
        softmax: Softmax {
            kernel: tiled,
            window: Some(3),
        },
        ..opts(MaskMode::Causal, false)
    };
    check_variant(&model, &o);
}

/// An encoder–decoder: the decoder's cross-attention (queries from the decoder, keys and values
/// from the encoder) and the encoder's backward from what it sends back, against finite
/// differences of the seq2seq loss, for sampled entries of every parameter of both halves.
#[test]
fn every_encoder_decoder_gradient_matches_finite_differences() {
    use engine::seq2seq::{backward_seq2seq, forward_seq2seq, EncoderDecoder, Seq2SeqBatch};
    let encoder = tiny_variant(0.0, |c| {
        c.num_attention_heads = 2;
    });
    let decoder = tiny_variant(0.0, |c| {
        *c = c.clone().decoder();
        c.add_cross_attention = true;
    });
    let mut encoder = encoder;
    encoder.cls = None;
    encoder.bert.pooler = None;
    let model = EncoderDecoder {
        encoder,
        decoder,
        decoder_start_token_id: 2,
        pad_token_id: 0,
        extra: Default::default(),
    };
    let i = IGNORE_INDEX;
    // Source 2 × 5 (one padded), targets 2 × 4 (one shorter).
    let batch = Seq2SeqBatch::new(
        array![[2u32, 7, 9, 4, 3], [2, 11, 3, 0, 0]],
        array![[1u8, 1, 1, 1, 1], [1, 1, 1, 0, 0]],
        array![[4i64, 9, 7, 3], [11, 3, i, i]],
        2,
        0,
    );
    let opts = ForwardOptions {
        mlm_scope: MlmScope::LabelledOnly,
        ..opts(MaskMode::Padding, false)
    };
    let loss = |m: &EncoderDecoder| {
        let out = forward_seq2seq(m, &batch, &opts, &mut Rng::new(7)).unwrap();
        out.decoder.losses.unwrap().total as f64
    };
    let out = forward_seq2seq(&model, &batch, &opts, &mut Rng::new(7)).unwrap();
    let mut grads = model.zeros_like();
    backward_seq2seq(&model, &batch, &out, &mut grads).unwrap();
    let analytic: Vec<(String, Vec<f32>)> = grads
        .named_params()
        .into_iter()
        .map(|(n, g)| (n, g.iter().copied().collect()))
        .collect();
    let mut probe = model.clone();
    let mut pick = Rng::new(5);
    let mut informative = 0;
    for (name, g) in &analytic {
        let largest = (0..g.len())
            .max_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs()))
            .unwrap();
        let mut entries: Vec<usize> = (0..SAMPLES_PER_PARAM)
            .map(|_| pick.below(g.len()))
            .collect();
        entries.push(largest);
        let mut max_numeric = 0.0f64;
        for &e in &entries {
            let value = |m: &mut EncoderDecoder| -> *mut f32 {
                let (half, local) = match name.strip_prefix("encoder.") {
                    Some(rest) => (&mut m.encoder, format!("bert.{rest}")),
                    None => (&mut m.decoder, name["decoder.".len()..].to_string()),
                };
                let mut params = half.named_params_mut();
                let (_, p) = params.iter_mut().find(|(n, _)| *n == local).unwrap();
                p.iter_mut().nth(e).unwrap() as *mut f32
            };
            // SAFETY: the pointer is into `probe`, alive and not otherwise borrowed here.
            let slot = value(&mut probe);
            let x0 = unsafe { *slot };
            let at = |x: f32| {
                unsafe { *slot = x };
                loss(&probe)
            };
            let numeric = (8.0 * (at(x0 + H) - at(x0 - H)) - (at(x0 + 2.0 * H) - at(x0 - 2.0 * H)))
                / (12.0 * H as f64);
            at(x0);
            let a = g[e] as f64;
            let err = (a - numeric).abs();
            assert!(
                err <= ATOL + RTOL * numeric.abs(),
                "{name}[{e}]: analytic {a:.6} vs numeric {numeric:.6} (error {err:.2e})"
            );
            max_numeric = max_numeric.max(numeric.abs());
        }
        // Short targets and sharp attention make the decoder's gradients small (≈ 0.01): a
        // gradient counts when it is 2.5·ATOL, well above the ≈ 2e-4 rounding noise.
        informative += usize::from(max_numeric > 2.5 * ATOL);
    }
    // Key biases (self and cross, 2 layers each, and the encoder's 2) have a zero gradient.
    let total = analytic.len();
    assert!(
        informative >= total - 6,
        "only {informative} of {total} informative"
    );
}
