//! Data-parallel steps (`step::plan_step`, `share_gradients`, `Trainer::plan`/`finish`): a
//! step's batch cut into shares of rows gives, summed in share order, the gradients and losses
//! of the whole batch up to float rounding, with dropout on (slice-invariant masks) and every
//! loss mean over the whole batch's counts; for a given number of shares, bit for bit the same
//! every time.

use engine::batch::MaskMode;
use engine::config::BertConfig;
use engine::data::BatchConfig;
use engine::forward::{ForwardOptions, Losses};
use engine::model::{BertForPreTraining, Params};
use engine::ops::attention::{AttentionKernel, Softmax};
use engine::optim::OptimizerConfig;
use engine::seq2seq::{make_seq2seq_batch, EncoderDecoder, Seq2SeqTrainer, Task};
use engine::step::{plan_step, share_gradients, PlannedStep, Share, Trainable};
use engine::train::{Objective, TrainSettings, Trainer};
use engine::Rng;

const CORPUS: &str = "the cat sat on the mat.\nthe dog ate a bone.\na bird sang in the tree.\n\
                      the sun was warm.\nwe went home.\nit rained all night.\n\
                      the mat was red.\na dog sang all night.\n";

/// hidden 16, 2 layers, 2 heads, dropout 0.1 on hidden states and attention weights.
fn config() -> BertConfig {
    let mut config = BertConfig::new(0, 16, 2, 2, 32);
    config.max_position_embeddings = 16;
    config.hidden_dropout_prob = 0.1;
    config.attention_probs_dropout_prob = 0.1;
    config
}

fn settings(objective: Objective) -> TrainSettings {
    TrainSettings {
        optimizer: OptimizerConfig::adam(1e-2),
        batch: BatchConfig {
            batch_size: 5,
            max_len: 16,
            mask_prob: 0.15,
            max_predictions: 3,
        },
        mask: MaskMode::Padding,
        objective,
    }
}

fn trainer(objective: Objective, seed: u64) -> Trainer {
    Trainer::from_corpus(CORPUS, config(), settings(objective), seed).unwrap()
}

fn seq2seq_trainer(seed: u64) -> Seq2SeqTrainer {
    let batch = BatchConfig {
        batch_size: 5,
        max_len: 10,
        ..BatchConfig::default()
    };
    let optimizer = OptimizerConfig::adam(1e-2);
    Seq2SeqTrainer::from_corpus(CORPUS, config(), optimizer, batch, Task::Reverse, seed).unwrap()
}

/// The summed gradients (flat) and losses of `batch` cut into `parts` shares, each computed on
/// its own rows, under the dropout seed `Rng::new(seed)` draws.
fn summed<M: Trainable>(
    model: &M,
    batch: &M::Batch,
    opts: &ForwardOptions,
    parts: usize,
    seed: u64,
) -> (Vec<f32>, Losses) {
    let plan = plan_step::<M>(batch, parts, &mut Rng::new(seed));
    assert_eq!(plan.len(), parts.min(M::batch_size(batch)));
    let (mut grads, mut buffers) = (model.zeros(), M::Buffers::default());
    let (mut sum, mut losses) = (vec![0.0; model.to_flat().len()], Losses::default());
    for (i, rows) in plan.rows.iter().enumerate() {
        let rows = M::batch_rows(batch, rows.clone());
        let share = plan.share(i);
        let l = share_gradients(model, &mut grads, &rows, opts, &share, &mut buffers).unwrap();
        losses.add(&l);
        for (s, g) in sum.iter_mut().zip(grads.to_flat()) {
            *s += g;
        }
    }
    (sum, losses)
}

/// max |a − b| / max |b|
fn relative_difference(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(0f32, |m, x| m.max(x.abs()));
    let diff = a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

fn losses_close(a: &Losses, b: &Losses, what: &str) {
    let fields = |l: &Losses| [l.total, l.mlm, l.nsp, l.mlm_accuracy, l.nsp_accuracy];
    for (x, y) in fields(a).into_iter().zip(fields(b)) {
        assert!(
            (x - y).abs() <= 1e-6 * y.abs().max(1.0),
            "{what}: {a:?} vs {b:?}"
        );
    }
}

/// Parts 2 and 3 against 1: the summed gradients and losses agree; another dropout seed gives
/// other gradients (dropout mattered).
fn check_shares_sum_to_the_whole<M: Trainable>(
    what: &str,
    model: &M,
    batch: &M::Batch,
    opts: &ForwardOptions,
) {
    let (whole, whole_losses) = summed(model, batch, opts, 1, 7);
    assert!(whole_losses.total > 0.0 && whole.iter().any(|&g| g != 0.0));
    for parts in [2, 3] {
        let (sum, losses) = summed(model, batch, opts, parts, 7);
        let diff = relative_difference(&sum, &whole);
        eprintln!("{what}, {parts} shares: gradient max |diff| / max |g| = {diff:.2e}");
        assert!(diff <= 1e-5, "{what}, {parts} shares: {diff}");
        losses_close(&losses, &whole_losses, what);
    }
    let (other_seed, _) = summed(model, batch, opts, 1, 8);
    assert!(
        relative_difference(&other_seed, &whole) > 1e-3,
        "{what}: dropout did nothing"
    );
}

#[test]
fn a_berts_shares_sum_to_the_whole_batch_full_and_tiled() {
    let mut t = trainer(Objective::MlmNsp, 1);
    let batch = t.next_batch().unwrap();
    assert!(batch.nsp_labels.is_some() && batch.mlm_labels.is_some());
    for kernel in [AttentionKernel::Full, AttentionKernel::Tiled { block: 4 }] {
        let opts = ForwardOptions {
            softmax: Softmax {
                kernel,
                window: None,
            },
            ..ForwardOptions::training(MaskMode::Padding)
        };
        check_shares_sum_to_the_whole(&format!("BERT {kernel:?}"), &t.model, &batch, &opts);
    }
}

#[test]
fn a_decoders_shares_sum_to_the_whole_batch() {
    let mut t = trainer(Objective::NextToken, 2);
    let batch = t.next_batch().unwrap();
    let opts = t.forward_options();
    check_shares_sum_to_the_whole("decoder", &t.model, &batch, &opts);
}

#[test]
fn an_encoder_decoders_shares_sum_to_the_whole_batch() {
    let t = seq2seq_trainer(3);
    let batch = make_seq2seq_batch(&t.corpus, &t.batch_config, t.task, &mut Rng::new(4)).unwrap();
    let opts = t.forward_options();
    check_shares_sum_to_the_whole("encoder-decoder", &t.model, &batch, &opts);
}

/// What a gradient worker does: a zero skeleton of the lead's model, the lead's weights
/// copied in, share `i`'s gradients out. The options and share go through JSON, as they
/// travel to a browser worker.
fn worker<M: Trainable>(
    skeleton: M,
    weights: &[f32],
    planned: &PlannedStep<M::Batch>,
    i: usize,
    opts: &ForwardOptions,
) -> (Losses, Vec<f32>) {
    let opts: ForwardOptions = serde_json::from_str(&serde_json::to_string(opts).unwrap()).unwrap();
    let share: Share =
        serde_json::from_str(&serde_json::to_string(&planned.plan.share(i)).unwrap()).unwrap();
    let mut model = skeleton;
    model.copy_from_flat(weights).unwrap();
    let mut grads = model.zeros();
    let mut buffers = M::Buffers::default();
    let batch = planned.share_batch(i);
    let losses = share_gradients(&model, &mut grads, &batch, &opts, &share, &mut buffers).unwrap();
    (losses, grads.to_flat())
}

fn bert_skeleton(t: &Trainer) -> BertForPreTraining {
    BertForPreTraining::zeroed(&t.model.config, t.model.parts()).unwrap()
}

/// Six steps of a lead and one in-process worker (2 shares) against six steps of `step()`:
/// the losses and weights agree to float rounding; the 2-share run again gives the same bits.
#[test]
fn a_trainer_in_two_shares_trains_as_in_one() {
    let two_shares = || {
        let mut lead = trainer(Objective::MlmNsp, 5);
        let mut losses = Vec::new();
        for _ in 0..6 {
            let planned = lead.plan(2).unwrap();
            assert_eq!(planned.plan.rows, [0..3, 3..5]);
            let own = lead.share_gradients(&planned, 0).unwrap();
            let opts = lead.forward_options();
            let other = worker(
                bert_skeleton(&lead),
                &lead.model.to_flat(),
                &planned,
                1,
                &opts,
            );
            let report = lead.finish(planned, Some(own), &[other]).unwrap();
            assert_eq!(report.step, lead.stepper.step);
            losses.push(report.losses);
        }
        assert!(lead.batch_view().is_some());
        (losses, lead)
    };
    let (losses, lead) = two_shares();
    let mut alone = trainer(Objective::MlmNsp, 5);
    for two in &losses {
        let one = alone.step().unwrap().losses;
        losses_close(two, &one, "a step in 2 shares");
    }
    let diff = relative_difference(&lead.model.to_flat(), &alone.model.to_flat());
    eprintln!("weights after 6 steps, 2 shares vs 1: max |diff| / max |w| = {diff:.2e}");
    assert!(diff < 1e-5, "{diff}");
    assert_eq!(lead.stepper.step, 6);
    assert_eq!(lead.masking_counts(), alone.masking_counts());

    let (again, lead_again) = two_shares();
    assert_eq!(again, losses);
    let bits = |m: &BertForPreTraining| m.to_flat().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(
        bits(&lead_again.model) == bits(&lead.model),
        "2 shares, run twice"
    );
}

#[test]
fn an_encoder_decoder_trainer_in_three_shares_trains_as_in_one() {
    let mut lead = seq2seq_trainer(6);
    let mut alone = seq2seq_trainer(6);
    let halves = |t: &Seq2SeqTrainer| {
        let (e, d) = (&t.model.encoder, &t.model.decoder);
        ((e.config.clone(), e.parts()), (d.config.clone(), d.parts()))
    };
    for _ in 0..3 {
        let planned = lead.plan(3).unwrap();
        let own = lead.share_gradients(&planned, 0).unwrap();
        let ((ec, ep), (dc, dp)) = halves(&lead);
        let weights = lead.model.to_flat();
        let opts = lead.forward_options();
        let others: Vec<_> = (1..3)
            .map(|i| {
                let skeleton = EncoderDecoder::zeroed((&ec, ep), (&dc, dp)).unwrap();
                worker(skeleton, &weights, &planned, i, &opts)
            })
            .collect();
        let three = lead.finish(planned, Some(own), &others).unwrap().losses;
        losses_close(
            &three,
            &alone.step().unwrap().losses,
            "an encoder-decoder step in 3 shares",
        );
    }
    let diff = relative_difference(&lead.model.to_flat(), &alone.model.to_flat());
    eprintln!("encoder-decoder weights after 3 steps, 3 shares vs 1: {diff:.2e}");
    assert!(diff < 1e-5, "{diff}");
}

/// Compare's model B has every share computed by workers (`finish` with no share of its
/// own): the same bits as a lead that computed share 0 itself.
#[test]
fn a_step_whose_every_share_came_from_workers_is_the_same_step() {
    let run = |own_share: bool| {
        let mut lead = trainer(Objective::MlmNsp, 4);
        for _ in 0..2 {
            let planned = lead.plan(2).unwrap();
            let opts = lead.forward_options();
            let weights = lead.model.to_flat();
            let first = usize::from(own_share);
            let others: Vec<_> = (first..2)
                .map(|i| worker(bert_skeleton(&lead), &weights, &planned, i, &opts))
                .collect();
            let own = own_share.then(|| lead.share_gradients(&planned, 0).unwrap());
            lead.finish(planned, own, &others).unwrap();
        }
        lead.model
            .to_flat()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    };
    assert!(run(false) == run(true));
}

/// Wrong shares are errors that leave the run as it was.
#[test]
fn a_step_with_missing_or_misshapen_shares_is_refused_and_changes_nothing() {
    let mut lead = trainer(Objective::MlmNsp, 9);
    let planned = lead.plan(3).unwrap();
    assert!(lead.share_gradients(&planned, 3).is_err());
    let own = lead.share_gradients(&planned, 0).unwrap();
    let before = lead.model.to_flat();
    let n = before.len();
    let share = (Losses::default(), vec![0.0; n]);
    let e = lead
        .finish(planned.clone(), Some(own), std::slice::from_ref(&share))
        .unwrap_err();
    assert!(e.to_string().contains("3 shares"), "{e}");
    let short = (Losses::default(), vec![0.0; n - 1]);
    assert!(lead.finish(planned, Some(own), &[share, short]).is_err());
    assert_eq!(lead.model.to_flat(), before);
    assert_eq!((lead.stepper.step, lead.stepper.optimizer.t), (0, 0));
}

#[test]
fn plans_cut_rows_evenly_and_never_into_more_shares_than_rows() {
    let mut t = trainer(Objective::MlmNsp, 1);
    let batch = t.next_batch().unwrap(); // B = 5
    let rows = |parts| plan_step::<BertForPreTraining>(&batch, parts, &mut Rng::new(0)).rows;
    assert_eq!(rows(0), vec![0..5]);
    assert_eq!(rows(2), [0..3, 3..5]);
    assert_eq!(rows(4), [0..2, 2..3, 3..4, 4..5]);
    assert_eq!(rows(9).len(), 5);
    let plan = plan_step::<BertForPreTraining>(&batch, 2, &mut Rng::new(0));
    assert_eq!(plan.dropout_seed, Rng::new(0).next_u64(), "one draw");
    assert_eq!(plan.counts.nsp, 5);
    assert_eq!(plan.share(1).first_row, 3);
}

#[test]
fn flat_parameters_round_trip_and_a_wrong_length_is_an_error() {
    let t = trainer(Objective::MlmNsp, 1);
    let flat = t.model.to_flat();
    assert_eq!(flat.len(), t.model.num_params());
    let mut copy = bert_skeleton(&t);
    assert!(copy.to_flat().iter().all(|&x| x == 0.0));
    copy.copy_from_flat(&flat).unwrap();
    assert_eq!(copy, t.model);
    copy.add_flat(&flat).unwrap();
    assert_eq!(
        copy.to_flat(),
        flat.iter().map(|x| 2.0 * x).collect::<Vec<_>>()
    );
    for wrong in [&flat[1..], &[][..]] {
        assert!(copy.copy_from_flat(wrong).is_err());
        assert!(copy.add_flat(wrong).is_err());
    }
    let long: Vec<f32> = flat.iter().copied().chain([1.0]).collect();
    assert!(copy.add_flat(&long).is_err());
    assert_eq!(
        copy.to_flat(),
        flat.iter().map(|x| 2.0 * x).collect::<Vec<_>>()
    );
}
