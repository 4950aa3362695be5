//! The Claims panel's experiments, in the worker: claims computed in one go answer at once;
//! the scaling ones measure one (variant, T) unit per call, and length extrapolation one masked
//! pass of one model per call, so the worker can report progress and hear Cancel between
//! units. Plain Rust: the caller brings the clock.

use crate::lab::Lab;
use engine::batch::Batch;
use engine::config::AttentionScaling;
use engine::config::PositionEmbeddingType;
use engine::data::Corpus;
use engine::experiments::heads::{
    ablation, ablations, evaluation_batch, head_sentences, head_stats, masked_loss, HeadStats,
    EVALUATION_ROWS, HEAD_SENTENCES,
};
use engine::experiments::{
    leakage, mean_largest_weight, measure_attention, mlm_hits_by_position, packed_sequences,
    softmax_statistics, AttentionRun, SoftmaxStatistics, Tally,
};
use engine::forward::{ForwardOptions, HeadMask};
use engine::model::BertForPreTraining;
use engine::train::Trainer;
use engine::Rng;
use protocol::claims::{
    extrapolation_result, kv_cache_result, leakage_result, memory_result, scaling_result, sizes,
    time_result, units, ByPosition, KvShape, TrainedModel, TrainedScaling, Unit, HEAD_SIZES,
    TRAINED_MIN_HEAD_DIM,
};
use protocol::claims::{heads_result, HeadsMeasured};
use protocol::turns::{Asked, Cancelled, ClaimTurns};
use protocol::{Claim, ClaimResult, FromWorker, LabError, LabResult, ProbeInput};

/// A measurement shorter than this is repeated and averaged: the worker's clock ticks in
/// 0.1 ms steps (5 µs when cross-origin isolated).
const MIN_TIMED_MS: f64 = 20.0;
/// At most this many repeats of one unit.
const MAX_REPEATS: usize = 200;

/// A claim under way, measured one unit per call.
pub struct ClaimRun {
    pub claim: Claim,
    work: Work,
}

enum Work {
    Scaling(Scaling),
    Softmax(Box<SoftmaxScaling>),
    // Two model copies: boxed, so the scaling claims' runs stay small.
    Extrapolation(Box<Extrapolating>),
    Heads(Box<HeadsRun>),
}

/// Memory or time: one (variant, T) unit per call.
struct Scaling {
    todo: Vec<Unit>,
    measured: Vec<(Unit, AttentionRun)>,
    total: usize,
    /// d_k of the heads measured: the current model's.
    head_dim: usize,
    rng: Rng,
}

/// Scaling (√d_k): one head size per call, then one step of Compare's History per call (both
/// models at that step), read from the models as they are when the unit runs.
struct SoftmaxScaling {
    head_sizes: Vec<usize>,
    measured: Vec<(usize, Vec<(AttentionScaling, SoftmaxStatistics)>)>,
    /// The steps still to read, popped from the end; Err: why there is no trained comparison.
    steps: Result<Vec<u64>, String>,
    trained: Option<TrainedScaling>,
    probe: ProbeInput,
    total: usize,
    rng: Rng,
}

/// Most History steps the trained comparison reads (evenly spread, the current step last).
const TRAINED_STEPS: usize = 16;

/// Sequences of 2T packed from the corpus; masked passes through Compare's two models, whose
/// positions differ (absolute, rotary, ALiBi). Copies of the models: training goes on
/// meanwhile, and no claim touches them.
struct Extrapolating {
    corpus: Corpus,
    sequences: Vec<Vec<u32>>,
    trained_len: usize,
    steps: u64,
    /// (model, its learned positions if absolute, its tally by position): A's, B's.
    models: [(BertForPreTraining, Option<usize>, Vec<Tally>); 2],
    /// (model, pass) still to run, popped from the end.
    todo: Vec<(usize, usize)>,
    total: usize,
}

/// Most sequences the extrapolation claim measures, and masked passes over each (a pass masks
/// one position in `STRIDE`, about what training masks).
const EXTRAPOLATION_SEQUENCES: usize = 64;
const STRIDE: usize = 7;

pub enum Started {
    Done(LabResult<ClaimResult>),
    Running(ClaimRun),
}

/// The claims asked for, run here in turn (`ClaimTurns`): the one under way is measured unit
/// by unit.
#[derive(Default)]
pub struct ClaimQueue {
    turns: ClaimTurns<ClaimRun>,
    /// The seed the current model was made with: the Heads claim's fresh model is made with it.
    pub seed: u64,
    /// The Heads claim's set-up once it has run on this model: `refresh_heads` measures the
    /// model again with it as it trains.
    heads: Option<Box<HeadsSetup>>,
}

impl ClaimQueue {
    /// A claim is under way: the worker calls `step` until it ends.
    pub fn running(&self) -> bool {
        self.turns.running().is_some()
    }

    /// Asked to run `claim`: now if nothing runs, else in turn.
    pub fn run(
        &mut self,
        claim: Claim,
        probe: ProbeInput,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Vec<FromWorker> {
        match self.turns.ask(claim, probe) {
            Asked::Waits => vec![FromWorker::ClaimQueued { claim }],
            Asked::StartsOver(probe) => {
                self.turns.end();
                self.start_in_turn(Some((claim, probe)), lab, lab_b)
            }
            Asked::Starts(probe) => self.start_in_turn(Some((claim, probe)), lab, lab_b),
        }
    }

    /// Stops `claim`, under way or waiting; the next waiting one starts.
    pub fn cancel(
        &mut self,
        claim: Claim,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Vec<FromWorker> {
        match self.turns.cancel(claim) {
            Cancelled::NotAsked => Vec::new(),
            Cancelled::Waiting => vec![FromWorker::ClaimCancelled { claim }],
            Cancelled::Running => {
                self.turns.end();
                let mut replies = vec![FromWorker::ClaimCancelled { claim }];
                replies.extend(self.start_in_turn(None, lab, lab_b));
                replies
            }
        }
    }

    /// The models were replaced: length extrapolation, under way on copies of the old ones,
    /// would measure them, so it stops; Scaling drops its trained comparison, which would mix
    /// the old models' steps with the new ones'; Heads stops, and stops being measured again
    /// (its fresh model and sentences are the old model's). The other claims do not depend on
    /// the model.
    pub fn models_replaced(&mut self, lab: Option<&Lab>, lab_b: Option<&Lab>) -> Vec<FromWorker> {
        if let Some(ClaimRun {
            work: Work::Softmax(s),
            ..
        }) = self.turns.run_mut()
        {
            s.total -= s.steps.as_ref().map_or(0, Vec::len);
            s.steps = Err("none: the models were replaced while the claim ran; Run again".into());
            s.trained = None;
        }
        self.heads = None;
        match self.turns.running() {
            // The Heads claim's fresh model and sentences are the old model's.
            Some(claim @ (Claim::Extrapolation | Claim::Heads)) => self.cancel(claim, lab, lab_b),
            _ => Vec::new(),
        }
    }

    /// Measures the next unit of the claim under way: its progress, or its result after the
    /// last (and then the next waiting claim starts).
    pub fn step(
        &mut self,
        now_ms: &dyn Fn() -> f64,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Vec<FromWorker> {
        let Some(run) = self.turns.run_mut() else {
            return Vec::new();
        };
        let claim = run.claim;
        match run.step(now_ms, lab, lab_b) {
            Some(result) => {
                if let Some((
                    _,
                    ClaimRun {
                        work: Work::Heads(heads),
                        ..
                    },
                )) = self.turns.end()
                {
                    self.heads = result.is_ok().then_some(heads.setup);
                }
                let mut replies = vec![FromWorker::ClaimDone { claim, result }];
                replies.extend(self.start_in_turn(None, lab, lab_b));
                replies
            }
            None => {
                let (done, total) = run.progress();
                vec![FromWorker::ClaimProgress { claim, done, total }]
            }
        }
    }

    /// Starts `first` (or else the next waiting claim), and after it those waiting, as long as
    /// each is measured in one go and answers at once: until one runs unit by unit or none waits.
    fn start_in_turn(
        &mut self,
        first: Option<(Claim, ProbeInput)>,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Vec<FromWorker> {
        let mut replies = Vec::new();
        let mut next = first.or_else(|| self.turns.next_to_start());
        while let Some((claim, probe)) = next {
            let started = match claim {
                Claim::Heads => heads_run(lab, self.seed),
                _ => start(claim, &probe, lab, lab_b),
            };
            replies.push(match started {
                Started::Done(result) => FromWorker::ClaimDone { claim, result },
                Started::Running(run) => {
                    let (done, total) = run.progress();
                    self.turns.started(claim, run);
                    FromWorker::ClaimProgress { claim, done, total }
                }
            });
            next = self.turns.next_to_start();
        }
        replies
    }
}

/// Starts `claim` on the current model (`lab`), Compare's model B (`lab_b`) and the probe.
pub fn start(claim: Claim, probe: &ProbeInput, lab: Option<&Lab>, lab_b: Option<&Lab>) -> Started {
    let config = lab.map(|l| l.parts().0.config.clone());
    let head_dim = config
        .as_ref()
        .map_or(16, |c| c.hidden_size / c.num_attention_heads.max(1));
    match claim {
        Claim::Leakage => Started::Done(match lab {
            None => Err(LabError::no_model()),
            Some(lab) => {
                let (model, tokenizer) = lab.parts();
                leakage(model, tokenizer, &probe.text)
                    .map(|l| leakage_result(&l))
                    .map_err(LabError::from)
            }
        }),
        Claim::KvCache => Started::Done(match config {
            None => Err(LabError::no_model()),
            Some(c) => {
                let this = KvShape {
                    name: "This model".into(),
                    layers: c.num_hidden_layers,
                    heads: c.num_attention_heads,
                    kv_heads: c.num_key_value_heads.unwrap_or(c.num_attention_heads),
                    head_dim,
                };
                Ok(kv_cache_result(&[this, KvShape::llama2_70b()]))
            }
        }),
        Claim::Extrapolation => match extrapolating(lab, lab_b) {
            Ok(work) => Started::Running(ClaimRun {
                claim,
                work: Work::Extrapolation(Box::new(work)),
            }),
            Err(e) => Started::Done(Err(e)),
        },
        // The queue runs it with the model's seed (`start_in_turn`); alone, with the settings'
        // default seed.
        Claim::Heads => heads_run(lab, 0),
        Claim::Scaling => {
            let steps = trained_steps(lab, lab_b).map(|mut steps| {
                steps.reverse(); // popped from the end: oldest first
                steps
            });
            let mut head_sizes = HEAD_SIZES.to_vec();
            head_sizes.reverse();
            let total = head_sizes.len() + steps.as_ref().map_or(0, Vec::len);
            Started::Running(ClaimRun {
                claim,
                work: Work::Softmax(Box::new(SoftmaxScaling {
                    head_sizes,
                    measured: Vec::new(),
                    steps,
                    trained: None,
                    probe: probe.clone(),
                    total,
                    rng: Rng::new(0),
                })),
            })
        }
        Claim::Memory | Claim::Time => {
            let mut todo = units(claim);
            todo.reverse(); // popped from the end: shortest first
            Started::Running(ClaimRun {
                claim,
                work: Work::Scaling(Scaling {
                    total: todo.len(),
                    todo,
                    measured: Vec::new(),
                    head_dim,
                    rng: Rng::new(0),
                }),
            })
        }
    }
}

/// The steps at which the Scaling claim reads Compare's two models: at most `TRAINED_STEPS`
/// of A's History (B's keeps the same steps) and the current one; Err says what to set up.
fn trained_steps(lab: Option<&Lab>, lab_b: Option<&Lab>) -> Result<Vec<u64>, String> {
    let how = format!("turn on Compare with model A's Scaling ÷√d_k and B's None on the preset small (d_k = {TRAINED_MIN_HEAD_DIM}), Reset, train, then Run");
    let (Some(a), Some(b)) = (lab, lab_b) else {
        return Err(format!("none: {how}"));
    };
    let (Some(ta), Some(tb)) = (a.trainer(), b.trainer()) else {
        return Err(format!("none: both models must train; {how}"));
    };
    let (ca, cb) = (&ta.model.config, &tb.model.config);
    if ca.attention_scaling == cb.attention_scaling {
        return Err(format!("none: both models scale alike; {how}"));
    }
    if ca.head_size() < TRAINED_MIN_HEAD_DIM {
        return Err(format!(
            "none: d_k = {} here, and the trained comparison needs d_k ≥ {TRAINED_MIN_HEAD_DIM}; {how}",
            ca.head_size()
        ));
    }
    if ta.stepper.step == 0 {
        return Err("none yet: the models have not trained; press Play, then Run".into());
    }
    let kept = a.history.steps();
    let every = kept.len().div_ceil(TRAINED_STEPS).max(1);
    let mut steps: Vec<u64> = kept.iter().copied().step_by(every).collect();
    if steps.last() != Some(&ta.stepper.step) {
        steps.push(ta.stepper.step);
    }
    Ok(steps)
}

/// The extrapolation claim's set-up: Compare with two models of different positions (any two
/// of absolute, rotary, ALiBi), trained side by side at length T; sequences of 2T from their
/// corpus.
fn extrapolating(lab: Option<&Lab>, lab_b: Option<&Lab>) -> LabResult<Extrapolating> {
    let how = "turn on Compare with the two models' Positions different (Absolute, Rotary or ALiBi), Reset, train them, then Run";
    let (Some(a), Some(b)) = (lab, lab_b) else {
        return Err(LabError::unavailable(format!(
            "this experiment needs two models trained side by side: {how}"
        )));
    };
    let (Some(ta), Some(tb)) = (a.trainer(), b.trainer()) else {
        return Err(LabError::unavailable(format!(
            "both models must train: {how}"
        )));
    };
    let positions = |t: &engine::train::Trainer| t.model.config.position_embedding_type;
    if positions(ta) == positions(tb) {
        return Err(LabError::unavailable(format!(
            "both models have the same positions: {how}"
        )));
    }
    if ta.stepper.step == 0 {
        return Err(LabError::unavailable(
            "the models have not trained yet: press Play, let them learn, then Run",
        ));
    }
    // Training examples are sentence pairs, padded to T: the positions trained are those the
    // longest pair can fill.
    let trained_len = ta.corpus.longest_example(ta.batch_config.max_len);
    // One sequence per starting sentence at most: two from the same start would be the same.
    let count = EXTRAPOLATION_SEQUENCES.min(ta.corpus.len());
    let sequences = packed_sequences(&ta.corpus, 2 * trained_len, count)?;
    // An absolute model reads only its learned positions.
    let model = |t: &engine::train::Trainer| {
        let p = (positions(t) == PositionEmbeddingType::Absolute)
            .then_some(t.model.config.max_position_embeddings);
        let len = p.map_or(2 * trained_len, |p| p.min(2 * trained_len));
        (t.model.clone(), p, vec![(0, 0); len])
    };
    let todo: Vec<(usize, usize)> = (0..2)
        .flat_map(|m| (0..STRIDE).map(move |pass| (m, pass)))
        .rev()
        .collect();
    Ok(Extrapolating {
        corpus: ta.corpus.clone(),
        trained_len,
        steps: ta.stepper.step,
        models: [model(ta), model(tb)],
        total: todo.len(),
        todo,
        sequences,
    })
}

impl Extrapolating {
    fn step(&mut self) -> LabResult<Option<ClaimResult>> {
        if let Some((m, pass)) = self.todo.pop() {
            let (model, _, tally) = &mut self.models[m];
            // An absolute model reads only its learned positions.
            let len = tally.len();
            let cut: Vec<Vec<u32>> = self.sequences.iter().map(|s| s[..len].to_vec()).collect();
            mlm_hits_by_position(model, &self.corpus, &cut, STRIDE, pass, tally)?;
        }
        if !self.todo.is_empty() {
            return Ok(None);
        }
        let [a, b] = self.models.each_ref().map(|(model, p, tally)| ByPosition {
            kind: model.config.position_embedding_type,
            tally,
            max_positions: *p,
        });
        Ok(Some(extrapolation_result(
            self.trained_len,
            self.steps,
            a,
            b,
        )))
    }
}

impl ClaimRun {
    /// (units measured, units in all)
    pub fn progress(&self) -> (usize, usize) {
        match &self.work {
            Work::Scaling(s) => (s.measured.len(), s.total),
            Work::Extrapolation(e) => (e.total - e.todo.len(), e.total),
            Work::Heads(h) => (h.total - h.todo.len(), h.total),
            Work::Softmax(s) => (
                s.total - s.head_sizes.len() - s.steps.as_ref().map_or(0, Vec::len),
                s.total,
            ),
        }
    }

    /// Measures the next unit; the result once the last is measured (or why it failed).
    pub fn step(
        &mut self,
        now_ms: &dyn Fn() -> f64,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Option<LabResult<ClaimResult>> {
        match &mut self.work {
            Work::Softmax(s) => s.step(lab, lab_b).transpose(),
            Work::Scaling(s) => s.step(self.claim, now_ms),
            Work::Extrapolation(e) => e.step().transpose(),
            Work::Heads(h) => h.step().transpose(),
        }
    }
}

impl SoftmaxScaling {
    fn step(&mut self, lab: Option<&Lab>, lab_b: Option<&Lab>) -> LabResult<Option<ClaimResult>> {
        if let Some(d_k) = self.head_sizes.pop() {
            self.measured
                .push((d_k, softmax_statistics(d_k, &mut self.rng)));
        } else if let Some(step) = self.steps.as_mut().ok().and_then(Vec::pop) {
            self.read_trained(step, lab, lab_b)?;
        }
        let done = self.head_sizes.is_empty() && self.steps.as_ref().map_or(true, Vec::is_empty);
        if !done {
            return Ok(None);
        }
        let trained = match (&self.steps, &self.trained) {
            (Err(why), _) => Err(why.as_str()),
            (Ok(_), Some(t)) => Ok(t),
            (Ok(_), None) => Err("none: the models changed while the claim ran; Run again"),
        };
        Ok(Some(scaling_result(&self.measured, trained)))
    }

    /// Both models' mean largest weight on the probe at `step`: the current weights, or those
    /// the History kept. A step thinned or rewound away since the start is skipped.
    fn read_trained(&mut self, step: u64, lab: Option<&Lab>, lab_b: Option<&Lab>) -> LabResult<()> {
        let (Some(a), Some(b)) = (lab, lab_b) else {
            return Ok(());
        };
        let at = (step != a.step_count()).then_some(step);
        let (Ok(ia), Ok(ib)) = (a.inspect(&self.probe, at), b.inspect(&self.probe, at)) else {
            return Ok(());
        };
        let scaling = |l: &Lab| l.parts().0.config.attention_scaling;
        let trained = self.trained.get_or_insert_with(|| TrainedScaling {
            head_dim: a.parts().0.config.head_size(),
            models: [("A", a), ("B", b)].map(|(name, lab)| TrainedModel {
                name: name.into(),
                scaling: scaling(lab),
                points: Vec::new(),
            }),
        });
        trained.models[0]
            .points
            .push((step, mean_largest_weight(&ia)));
        trained.models[1]
            .points
            .push((step, mean_largest_weight(&ib)));
        Ok(())
    }
}

impl Scaling {
    fn step(&mut self, claim: Claim, now_ms: &dyn Fn() -> f64) -> Option<LabResult<ClaimResult>> {
        if let Some(unit) = self.todo.pop() {
            let opts = match unit.variant.options(sizes(self.head_dim)) {
                Ok(opts) => opts,
                Err(e) => return Some(Err(e.into())),
            };
            let run =
                |rng: &mut Rng| measure_attention(unit.seq_len, self.head_dim, &opts, rng, now_ms);
            let first = run(&mut self.rng);
            let measured = match claim {
                // Bytes do not vary from run to run; time does, and short runs are below the
                // clock's resolution.
                Claim::Time if first.forward_ms + first.backward_ms < MIN_TIMED_MS => {
                    let once = (first.forward_ms + first.backward_ms).max(0.01);
                    let n = ((MIN_TIMED_MS / once).ceil() as usize).clamp(2, MAX_REPEATS);
                    let runs: Vec<AttentionRun> = (0..n).map(|_| run(&mut self.rng)).collect();
                    let mean =
                        |f: fn(&AttentionRun) -> f64| runs.iter().map(f).sum::<f64>() / n as f64;
                    AttentionRun {
                        forward_ms: mean(|r| r.forward_ms),
                        backward_ms: mean(|r| r.backward_ms),
                        peak_bytes: first.peak_bytes,
                    }
                }
                _ => first,
            };
            self.measured.push((unit, measured));
        }
        self.todo.is_empty().then(|| {
            Ok(match claim {
                Claim::Memory => memory_result(&self.measured, self.head_dim),
                _ => time_result(&self.measured, self.head_dim),
            })
        })
    }
}

/// What the Heads claim measures a model with: the sentences, the evaluation batch, the
/// forward options of training (mask, attention) and the fresh model's stats, made once.
struct HeadsSetup {
    sentences: Vec<(Vec<u32>, Vec<u32>)>,
    batch: Batch,
    opts: ForwardOptions,
    specials: (u32, u32),
    seed: u64,
    loss_name: &'static str,
    /// The fresh model's stats: measured by the first unit.
    fresh: Option<HeadStats>,
}

/// One unit of the Heads claim: the fresh model, the model now, its loss with every head, or
/// its loss without head k.
#[derive(Clone, Copy)]
enum HeadsUnit {
    Fresh,
    Now,
    Base,
    Without(usize),
}

/// The Heads claim under way, on a copy of the model (training goes on meanwhile).
struct HeadsRun {
    setup: Box<HeadsSetup>,
    model: BertForPreTraining,
    step: u64,
    now: Option<HeadStats>,
    base: f64,
    ablation: Vec<f64>,
    /// Units still to run, popped from the end.
    todo: Vec<HeadsUnit>,
    total: usize,
}

/// The Heads claim's set-up on `lab`'s model: one BERT that trains (an encoder or a decoder).
fn heads_setup(trainer: &Trainer, seed: u64) -> LabResult<HeadsSetup> {
    let decoder = trainer.model.config.is_decoder;
    let (cls, sep, _) = trainer.corpus.cls_sep_mask();
    let max_len = trainer.batch_config.max_len;
    Ok(HeadsSetup {
        sentences: head_sentences(&trainer.corpus, decoder, max_len, HEAD_SENTENCES)?,
        batch: evaluation_batch(
            &trainer.corpus,
            &trainer.batch_config,
            decoder,
            EVALUATION_ROWS,
        )?,
        opts: ForwardOptions {
            softmax: trainer.softmax,
            ..ForwardOptions::training(trainer.mask)
        },
        specials: (cls, sep),
        seed,
        loss_name: if decoder {
            "next-token loss"
        } else {
            "MLM loss"
        },
        fresh: None,
    })
}

/// The model as training would have made it before its first step: the same config, and the
/// generator the trainer starts from (`Trainer::from_corpus` initialises first).
fn fresh_model(model: &BertForPreTraining, seed: u64) -> LabResult<BertForPreTraining> {
    Ok(BertForPreTraining::init(
        &model.config,
        &mut Rng::new(seed),
    )?)
}

fn heads_run(lab: Option<&Lab>, seed: u64) -> Started {
    let run = || -> LabResult<HeadsRun> {
        let lab = lab.ok_or_else(LabError::no_model)?;
        let trainer = lab.trainer().ok_or_else(|| {
            LabError::unavailable(if lab.encoder_decoder().is_some() {
                "this claim measures one BERT's self-attention heads (an encoder or a decoder); an encoder–decoder's are in two stacks beside cross-attention: choose the objective MLM + NSP or Next token, Reset, then Run"
            } else {
                "this claim measures a model as it trains (its loss, a fresh model of the same seed), and this checkpoint cannot train: Reset to a fresh model, then Run"
            })
        })?;
        let setup = heads_setup(trainer, seed)?;
        let n = trainer.model.config.num_hidden_layers * trainer.model.config.num_attention_heads;
        let mut todo: Vec<HeadsUnit> = [HeadsUnit::Fresh, HeadsUnit::Now, HeadsUnit::Base]
            .into_iter()
            .chain((0..n).map(HeadsUnit::Without))
            .collect();
        todo.reverse();
        Ok(HeadsRun {
            setup: Box::new(setup),
            model: trainer.model.clone(),
            step: trainer.stepper.step,
            now: None,
            base: 0.0,
            ablation: Vec::with_capacity(n),
            total: todo.len(),
            todo,
        })
    };
    match run() {
        Ok(run) => Started::Running(ClaimRun {
            claim: Claim::Heads,
            work: Work::Heads(Box::new(run)),
        }),
        Err(e) => Started::Done(Err(e)),
    }
}

impl HeadsSetup {
    fn stats(&self, model: &BertForPreTraining) -> LabResult<HeadStats> {
        Ok(head_stats(
            model,
            &self.sentences,
            &self.opts,
            self.specials,
        )?)
    }

    fn result(
        &self,
        now: &HeadStats,
        step: u64,
        base_loss: f64,
        ablation: &[f64],
    ) -> LabResult<ClaimResult> {
        let fresh = self
            .fresh
            .as_ref()
            .ok_or_else(|| LabError::unavailable("the fresh model was not measured"))?;
        Ok(heads_result(&HeadsMeasured {
            now,
            fresh,
            seed: self.seed,
            step,
            loss_name: self.loss_name,
            base_loss,
            evaluation_rows: self.batch.batch_size(),
            ablation,
            sentences: self.sentences.len(),
        }))
    }
}

impl HeadsRun {
    fn step(&mut self) -> LabResult<Option<ClaimResult>> {
        let setup = &mut self.setup;
        match self.todo.pop() {
            Some(HeadsUnit::Fresh) => {
                setup.fresh = Some(setup.stats(&fresh_model(&self.model, setup.seed)?)?)
            }
            Some(HeadsUnit::Now) => self.now = Some(setup.stats(&self.model)?),
            Some(HeadsUnit::Base) => {
                let (layers, heads) = (
                    self.model.config.num_hidden_layers,
                    self.model.config.num_attention_heads,
                );
                let all = HeadMask::keep_all(layers, heads);
                self.base = masked_loss(&self.model, &setup.batch, &setup.opts, &all)?;
            }
            Some(HeadsUnit::Without(k)) => {
                let heads = self.model.config.num_attention_heads;
                self.ablation.push(ablation(
                    &self.model,
                    &setup.batch,
                    &setup.opts,
                    (k / heads, k % heads),
                    self.base,
                )?);
            }
            None => {}
        }
        if !self.todo.is_empty() {
            return Ok(None);
        }
        let now = self
            .now
            .as_ref()
            .ok_or_else(|| LabError::unavailable("the model was not measured"))?;
        setup
            .result(now, self.step, self.base, &self.ablation)
            .map(Some)
    }
}

impl ClaimQueue {
    /// The Heads claim ran to its end on a copy of this model in the claim worker: from now on
    /// it is measured again here as the model trains, with the set-up the run made (the same
    /// sentences, batch and fresh model: each follows from the model's corpus and `seed`).
    pub fn heads_ran_elsewhere(&mut self, lab: Option<&Lab>, seed: u64) {
        let setup = || -> LabResult<HeadsSetup> {
            let trainer = lab.and_then(Lab::trainer).ok_or_else(LabError::no_model)?;
            let mut setup = heads_setup(trainer, seed)?;
            setup.fresh = Some(setup.stats(&fresh_model(&trainer.model, seed)?)?);
            Ok(setup)
        };
        self.heads = setup().ok().map(Box::new);
    }

    /// The Heads claim runs again elsewhere: it is not measured again here meanwhile.
    pub fn forget_heads(&mut self) {
        self.heads = None;
    }

    /// The Heads claim measured again on the model as it is now, in one go, once it has run on
    /// this model and is not running again: what the page's heatmap follows while training.
    pub fn refresh_heads(&self, lab: Option<&Lab>) -> Option<FromWorker> {
        let setup = self.heads.as_ref()?;
        if self.turns.asked(Claim::Heads) {
            return None;
        }
        let trainer = lab?.trainer()?;
        let measured = setup.stats(&trainer.model).and_then(|now| {
            let (base, deltas) = ablations(&trainer.model, &setup.batch, &setup.opts)?;
            setup.result(&now, trainer.stepper.step, base, &deltas)
        });
        Some(FromWorker::ClaimDone {
            claim: Claim::Heads,
            result: measured,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::experiments::heads::{js_distance, role, ROLES};
    use protocol::{LabSettings, DEFAULT_CORPUS};

    /// Runs the Heads claim on `lab` to its end, unit by unit, as the worker does.
    fn run_heads(queue: &mut ClaimQueue, lab: &Lab) -> ClaimResult {
        let clock = || 0.0;
        let mut replies = queue.run(Claim::Heads, ProbeInput::default(), Some(lab), None);
        while queue.running() {
            replies.extend(queue.step(&clock, Some(lab), None));
        }
        replies
            .into_iter()
            .find_map(|r| match r {
                FromWorker::ClaimDone { result, .. } => Some(result),
                _ => None,
            })
            .expect("the claim ends")
            .expect("the claim's result")
    }

    fn trainer(lab: &mut Lab) -> &mut Trainer {
        match &mut lab.model {
            crate::lab::Model::Trainable(t) => t,
            _ => panic!("a fresh BERT trains"),
        }
    }

    #[test]
    fn heads_of_a_model_with_uniform_attention_have_the_predicted_roles_and_no_distance() {
        let settings = LabSettings::default();
        let mut lab = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        // Zero queries and keys: every weight 1/T, in every head alike.
        for layer in &mut trainer(&mut lab).model.bert.layers {
            let sa = &mut layer.attention.self_attention;
            for l in [&mut sa.query, &mut sa.key] {
                l.weight.fill(0.0);
                l.bias.fill(0.0);
            }
        }
        let mut queue = ClaimQueue {
            seed: settings.seed,
            ..ClaimQueue::default()
        };
        let r = run_heads(&mut queue, &lab);
        let t = trainer(&mut lab);
        let (cls, sep, _) = t.corpus.cls_sep_mask();
        let sentences =
            head_sentences(&t.corpus, false, t.batch_config.max_len, HEAD_SENTENCES).unwrap();
        let (mut expected, mut rows) = ([0.0f64; 6], 0);
        for (ids, _) in &sentences {
            for i in 0..ids.len() {
                for j in 0..ids.len() {
                    expected[role(ids, i, j, cls, sep)] += 1.0 / ids.len() as f64;
                }
            }
            rows += ids.len();
        }
        let h = r.heatmap.as_ref().unwrap();
        assert!(h.caption.starts_with("Head roles"), "{}", h.caption);
        assert_eq!(
            (h.values.rows, h.values.cols),
            (8, 6),
            "tiny: 2 layers × 4 heads"
        );
        assert_eq!(h.row_labels[5], "L2 H2");
        assert_eq!(h.col_labels, ROLES);
        for k in 0..8 {
            let row = h.values.row(k);
            assert!(
                (row.iter().sum::<f32>() - 1.0).abs() < 1e-5,
                "head {k}: {row:?}"
            );
            for (r, &share) in row.iter().enumerate() {
                let want = (expected[r] / rows as f64) as f32;
                assert!(
                    (share - want).abs() < 1e-5,
                    "head {k} role {r}: {share} vs {want}"
                );
            }
        }
        // Identical heads: JS distance 0 now; the fresh model's heads differ.
        let now = &r.plots[1].series[0];
        assert_eq!(now.name, "JS distance to the others, now");
        assert!(now.y.iter().all(|&d| d == 0.0), "{:?}", now.y);
        assert!(r.plots[1].series[1].y.iter().all(|&d| d > 0.0));
        assert_eq!(js_distance(&[0.5, 0.5], &[0.5, 0.5]), 0.0);
    }

    #[test]
    fn ablating_a_head_costs_what_the_pass_without_its_context_costs_and_the_result_follows_training(
    ) {
        let settings = LabSettings::default();
        let mut lab = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        let mut queue = ClaimQueue {
            seed: settings.seed,
            ..ClaimQueue::default()
        };
        let r = run_heads(&mut queue, &lab);
        let ablation = &r.plots[0].series[0];
        assert_eq!(ablation.name, "Ablation: Δ MLM loss");
        assert_eq!(ablation.x.len(), 8);
        // By hand: the head's context reaches the model only through W_O's columns of that
        // head; a copy with those columns zero, through the plain forward pass.
        let t = trainer(&mut lab);
        let batch = evaluation_batch(&t.corpus, &t.batch_config, false, EVALUATION_ROWS).unwrap();
        let opts = ForwardOptions {
            trace: false,
            mlm_scope: engine::forward::MlmScope::LabelledOnly,
            ..ForwardOptions::inspection(t.mask)
        };
        let loss = |m: &BertForPreTraining| {
            let out = engine::forward::forward(m, &batch, &opts, &mut Rng::new(0)).unwrap();
            f64::from(out.losses.unwrap().mlm)
        };
        let base = loss(&t.model);
        let d = 64 / 4;
        for (k, &delta) in ablation.y.iter().enumerate() {
            let mut cut = t.model.clone();
            cut.bert.layers[k / 4]
                .attention
                .output
                .dense
                .weight
                .slice_mut(ndarray::s![.., (k % 4) * d..(k % 4 + 1) * d])
                .fill(0.0);
            assert_eq!(delta, loss(&cut) - base, "head {k}");
        }
        // A fresh model: the verdict says it has not trained; its fresh and now rows agree.
        assert!(r.verdict.starts_with("Not yet"), "{}", r.verdict);
        assert_eq!(r.plots[1].series[0].y, r.plots[1].series[1].y);
        // Measured again after training: the same set-up, the new weights.
        let unchanged = queue.refresh_heads(Some(&lab));
        assert!(
            matches!(&unchanged, Some(FromWorker::ClaimDone { result: Ok(again), .. }) if *again == r)
        );
        for _ in 0..20 {
            lab.step().unwrap();
        }
        let Some(FromWorker::ClaimDone {
            result: Ok(trained),
            ..
        }) = queue.refresh_heads(Some(&lab))
        else {
            panic!("a refreshed result");
        };
        assert_ne!(trained.heatmap, r.heatmap);
        assert_eq!(
            trained.plots[1].series[1].y, r.plots[1].series[1].y,
            "the fresh model stays"
        );
        assert!(
            trained.numbers[0].1.ends_with("at step 20"),
            "{:?}",
            trained.numbers[0]
        );
        // A new model ends the refreshes.
        queue.models_replaced(Some(&lab), None);
        assert!(queue.refresh_heads(Some(&lab)).is_none());
    }
}
