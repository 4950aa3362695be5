use super::*;
use crate::checkpoint::CheckpointFiles;
use crate::config::BertConfig;
use crate::data::BatchConfig;
use crate::model::Params;
use crate::optim::{Optimizer, OptimizerConfig};
use crate::rng::Rng;
use crate::run::Run;
use crate::tokenizer::Tokenizer;
use safetensors::tensor::{SafeTensors, TensorView};

const CORPUS: &str = "the cat sat on the mat.\nthe dog ate a bone.\na bird sang in the tree.\n\
                      the sun was warm.\nwe went home.\nit rained all night.\n";

fn trainer() -> Seq2SeqTrainer {
    let mut config = BertConfig::new(0, 16, 2, 2, 32);
    config.max_position_embeddings = 16;
    let batch = BatchConfig {
        batch_size: 4,
        max_len: 10,
        ..BatchConfig::default()
    };
    Seq2SeqTrainer::from_corpus(
        CORPUS,
        config,
        OptimizerConfig::adam(1e-2),
        batch,
        Task::Reverse,
        3,
    )
    .unwrap()
}

/// The one step (`step::train_step`) on an encoder–decoder: writing into the last step's
/// buffers changes no bit, and clipping bounds the norm over both halves together.
#[test]
fn steps_reuse_their_buffers_and_clip_over_both_halves() {
    let weights = |t: &Seq2SeqTrainer| -> Vec<f32> {
        let params = t.model.params();
        params.iter().flat_map(|(_, p)| p.iter().copied()).collect()
    };
    let run = |keep_buffers: bool| {
        let mut t = trainer();
        for _ in 0..3 {
            if !keep_buffers {
                t.stepper.drop_buffers();
            }
            t.step().unwrap();
        }
        weights(&t)
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<u32>>()
    };
    assert!(run(true) == run(false));

    // SGD, max norm 1e-3 (far below the gradient's): the step moves the weights of both
    // halves together by lr · 1e-3, as torch's clip_grad_norm_ over all parameters.
    let (lr, max) = (0.5, 1e-3);
    let mut t = trainer();
    let clipped = OptimizerConfig {
        clip_grad_norm: Some(max),
        ..OptimizerConfig::sgd(lr)
    };
    t.set_optimizer(clipped).unwrap();
    let before = weights(&t);
    t.step().unwrap();
    let moved = weights(&t)
        .iter()
        .zip(&before)
        .map(|(a, b)| f64::from(a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!((moved - lr * max).abs() < 0.02 * lr * max, "{moved}");
}

/// N steps in one go equal k steps, keep (checkpoint + training state), restore into a
/// fresh trainer and N − k more: both halves' Adam moments and the generator come back.
#[test]
fn a_kept_run_trains_on_exactly_as_if_it_had_never_stopped() {
    let mut straight = trainer();
    for _ in 0..6 {
        straight.step().unwrap();
    }
    let mut first = trainer();
    for _ in 0..3 {
        first.step().unwrap();
    }
    let state = first.training_state();
    let files = to_files(&first.checkpoint());
    let mut checkpoint = load(&files).unwrap();
    checkpoint.tokenizer = Tokenizer::word_level(checkpoint.tokenizer.vocab().clone());
    let batch = first.batch_config;
    let mut resumed = Seq2SeqTrainer::from_checkpoint(
        checkpoint,
        CORPUS,
        OptimizerConfig::adam(1e-2),
        batch,
        Task::Reverse,
        Rng::new(99),
    )
    .unwrap();
    resumed.resume(&state).unwrap();
    assert_eq!(resumed.stepper.step, 3);
    for _ in 0..3 {
        resumed.step().unwrap();
    }
    // The weights (a loaded config may carry other HF keys in `extra`).
    let weights = |m: &EncoderDecoder| {
        m.named_params()
            .into_iter()
            .map(|(n, p)| (n, p.iter().copied().collect::<Vec<f32>>()))
            .collect::<Vec<_>>()
    };
    assert_eq!(weights(&resumed.model), weights(&straight.model));

    // Another optimiser's state is refused and changes nothing.
    let mut sgd = trainer();
    sgd.set_optimizer(OptimizerConfig::sgd(1e-2)).unwrap();
    // (Compared as Debug text: the file's metadata order is a hash map's.)
    let before = format!("{:?}", sgd.stepper.optimizer);
    let e = sgd.resume(&state).unwrap_err().to_string();
    assert!(e.contains("settings ask for"), "{e}");
    assert_eq!(format!("{:?}", sgd.stepper.optimizer), before);
    // So is a one-model state (no `encoder.` moments), all or nothing.
    let mut other = trainer();
    let one = crate::resume::encode(
        &crate::resume::RunState {
            step: 1,
            rng: Rng::new(0),
            corpus_words: None,
        },
        &Optimizer::new(OptimizerConfig::adam(1e-3), &other.model.decoder).unwrap(),
    );
    other.step().unwrap();
    let before = format!("{:?}", other.stepper.optimizer);
    assert!(other.resume(&one).is_err());
    assert_eq!(format!("{:?}", other.stepper.optimizer), before);
}

/// A checkpoint whose decoder has no LM head (`decoder.cls.*`) is refused when it loads,
/// with the reason: `inspect` and `generate` read that head (inspect used to abort the
/// process on it).
#[test]
fn a_decoder_without_its_lm_head_is_refused_at_load() {
    let files = to_files(&trainer().checkpoint());
    let st = SafeTensors::deserialize(&files.safetensors).unwrap();
    let kept: Vec<(String, TensorView)> = st
        .tensors()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("decoder.cls."))
        .collect();
    assert!(kept.len() < st.len(), "the decoder had an LM head to drop");
    let headless = CheckpointFiles {
        safetensors: safetensors::tensor::serialize(kept, None).unwrap(),
        ..files
    };
    let e = load(&headless).unwrap_err().to_string();
    assert!(e.contains("LM head") && e.contains("decoder.cls"), "{e}");
}
