//! Heads: a fresh model of the same seed, the model now, then one ablated pass per head, on a
//! copy of the model; once it has run, the same set-up measures the model again as it trains.

use super::{Experiment, Follower, Models, Started};
use crate::lab::Lab;
use engine::batch::Batch;
use engine::data::Corpus;
use engine::experiments::heads::{
    ablation, ablations, evaluation_batch, masked_loss, reading_options, HeadStats,
    HeadsMeasurement, HeadsProbe, EVALUATION_ROWS,
};
use engine::forward::HeadMask;
use engine::model::BertForPreTraining;
use engine::train::Trainer;
use protocol::claims::{add_point, Heads, HeadsMeasured, HeadsPoint, Loss, MOST_POINTS};
use protocol::{ClaimResult, LabError, LabResult};

/// What the Heads claim measures a model with: the engine's probe (the sentences, the forward
/// options of training, [CLS] and [SEP]), the evaluation batch and the fresh model's stats,
/// made once.
struct HeadsSetup {
    probe: HeadsProbe,
    /// The evaluation batch and its loss's name; None for a checkpoint without pre-training
    /// heads, which has no loss, so no head is ablated.
    batch: Option<(Batch, &'static str)>,
    seed: u64,
    /// The fresh model's stats: measured by the first unit.
    fresh: Option<HeadStats>,
    /// The measurements so far, for the plot of roles forming.
    history: Vec<HeadsPoint>,
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
    now: Option<HeadsMeasurement>,
    base: f64,
    ablation: Vec<f64>,
    /// Units still to run, popped from the end.
    todo: Vec<HeadsUnit>,
    total: usize,
}
/// The Heads claim's set-up on `lab`'s model: one BERT that trains (an encoder or a decoder).
fn heads_setup(trainer: &Trainer, seed: u64) -> LabResult<HeadsSetup> {
    let decoder = trainer.model.config.is_decoder;
    let batch = evaluation_batch(
        &trainer.corpus,
        &trainer.batch_config,
        decoder,
        EVALUATION_ROWS,
    )?;
    Ok(HeadsSetup {
        probe: HeadsProbe::of_training(trainer)?,
        batch: Some((
            batch,
            if decoder {
                "next-token loss"
            } else {
                "MLM loss"
            },
        )),
        seed,
        fresh: None,
        history: Vec::new(),
    })
}

/// The set-up for a checkpoint that cannot train (a pretrained encoder without heads, such as
/// MiniLM): the page's corpus in its tokens, read with the padding mask; no loss to ablate.
fn inspect_only_setup(
    model: &BertForPreTraining,
    corpus: Option<&Corpus>,
    max_len: usize,
    seed: u64,
) -> LabResult<HeadsSetup> {
    let corpus = corpus.ok_or_else(|| {
        LabError::unavailable("this model's tokenizer reads nothing of the corpus: give the corpus sentences it can read, then Run")
    })?;
    let opts = reading_options(&model.config);
    Ok(HeadsSetup {
        probe: HeadsProbe::new(corpus, model.config.is_decoder, max_len, &opts)?,
        batch: None,
        seed,
        fresh: None,
        history: Vec::new(),
    })
}

/// The model as training would have made it before its first step.
fn fresh_model(model: &BertForPreTraining, seed: u64) -> LabResult<BertForPreTraining> {
    Ok(Trainer::initial_model(&model.config, seed)?)
}

pub fn start(models: &Models) -> LabResult<Started> {
    let lab = models.lab.ok_or_else(LabError::no_model)?;
    let seed = models.seed;
    let (setup, model, step) = match (lab.trainer(), lab.inspected_only()) {
        (Some(trainer), _) => (
            heads_setup(trainer, seed)?,
            &trainer.model,
            trainer.stepper.step,
        ),
        (None, Some((model, corpus, max_len))) => {
            (inspect_only_setup(model, corpus, max_len, seed)?, model, 0)
        }
        (None, None) => {
            return Err(LabError::unavailable(
                "this claim measures one BERT's self-attention heads (an encoder or a decoder); an encoder–decoder's are in two stacks beside cross-attention: choose the objective MLM + NSP or Next token, Reset, then Run",
            ))
        }
    };
    let n = model.config.num_hidden_layers * model.config.num_attention_heads;
    let units = [HeadsUnit::Fresh, HeadsUnit::Now];
    let ablated = setup
        .batch
        .is_some()
        .then(|| std::iter::once(HeadsUnit::Base).chain((0..n).map(HeadsUnit::Without)));
    let mut todo: Vec<HeadsUnit> = units
        .into_iter()
        .chain(ablated.into_iter().flatten())
        .collect();
    todo.reverse();
    Ok(Started::Running(Box::new(HeadsRun {
        setup: Box::new(setup),
        model: model.clone(),
        step,
        now: None,
        base: 0.0,
        ablation: Vec::with_capacity(n),
        total: todo.len(),
        todo,
    })))
}

impl HeadsSetup {
    fn stats(&self, model: &BertForPreTraining) -> LabResult<HeadStats> {
        Ok(self.probe.stats(model)?)
    }

    fn measurement(&self, model: &BertForPreTraining) -> LabResult<HeadsMeasurement> {
        Ok(self.probe.measure(model)?)
    }

    /// The result with `now`, measured at `step`, its point added to the history.
    fn result(
        &mut self,
        now: &HeadsMeasurement,
        step: u64,
        base_loss: f64,
        ablation: &[f64],
    ) -> LabResult<ClaimResult> {
        let fresh = self
            .fresh
            .as_ref()
            .ok_or_else(|| LabError::unavailable("the fresh model was not measured"))?;
        add_point(
            &mut self.history,
            HeadsPoint::of(step, now),
            |p| p.step,
            MOST_POINTS,
        );
        Ok(Heads::result(&HeadsMeasured {
            now,
            fresh,
            seed: self.seed,
            step,
            history: &self.history,
            loss: self.batch.as_ref().map(|(batch, name)| Loss {
                name,
                base: base_loss,
                evaluation_rows: batch.batch_size(),
                ablation,
            }),
        }))
    }
}

impl Experiment for HeadsRun {
    fn progress(&self) -> (usize, usize) {
        (self.total - self.todo.len(), self.total)
    }

    fn step(&mut self, _: &Models, _: &dyn Fn() -> f64) -> LabResult<Option<ClaimResult>> {
        let setup = &mut self.setup;
        match self.todo.pop() {
            Some(HeadsUnit::Fresh) => {
                setup.fresh = Some(setup.stats(&fresh_model(&self.model, setup.seed)?)?)
            }
            Some(HeadsUnit::Now) => self.now = Some(setup.measurement(&self.model)?),
            Some(HeadsUnit::Base) => {
                let (layers, heads) = (
                    self.model.config.num_hidden_layers,
                    self.model.config.num_attention_heads,
                );
                let all = HeadMask::keep_all(layers, heads);
                if let Some((batch, _)) = &setup.batch {
                    self.base = masked_loss(&self.model, batch, &setup.probe.opts, &all)?;
                }
            }
            Some(HeadsUnit::Without(k)) => {
                let heads = self.model.config.num_attention_heads;
                if let Some((batch, _)) = &setup.batch {
                    self.ablation.push(ablation(
                        &self.model,
                        batch,
                        &setup.probe.opts,
                        (k / heads, k % heads),
                        self.base,
                    )?);
                }
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

    /// Its fresh model and sentences are the old model's: it stops.
    fn goes_on_with_new_models(&mut self) -> bool {
        false
    }
}

/// The set-up of a run that ended with `result`, made again from this model's corpus and
/// `seed`, with the fresh model measured: it measures the model again as it trains, going on
/// from the points `result` plotted.
pub fn follower(lab: Option<&Lab>, seed: u64, result: &ClaimResult) -> Option<Box<dyn Follower>> {
    let setup = || -> LabResult<HeadsSetup> {
        let trainer = lab.and_then(Lab::trainer).ok_or_else(LabError::no_model)?;
        let mut setup = heads_setup(trainer, seed)?;
        setup.fresh = Some(setup.stats(&fresh_model(&trainer.model, seed)?)?);
        setup.history = result.history.heads().to_vec();
        Ok(setup)
    };
    setup().ok().map(|s| Box::new(s) as Box<dyn Follower>)
}

impl Follower for HeadsSetup {
    fn measure(&mut self, lab: &Lab) -> Option<LabResult<ClaimResult>> {
        let trainer = lab.trainer()?;
        Some(self.measurement(&trainer.model).and_then(|now| {
            let (base, deltas) = match &self.batch {
                Some((batch, _)) => ablations(&trainer.model, batch, &self.probe.opts)?,
                None => (0.0, Vec::new()),
            };
            self.result(&now, trainer.stepper.step, base, &deltas)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{follower, run_to_end, stamped, Models};
    use engine::experiments::heads::{head_sentences, js_distance, role, HEAD_SENTENCES, ROLES};
    use engine::forward::ForwardOptions;
    use engine::train::Trainer;
    use engine::Rng;
    use protocol::Claim;
    use protocol::{LabSettings, DEFAULT_CORPUS};

    fn run_heads(lab: &Lab, seed: u64) -> ClaimResult {
        let models = Models {
            lab: Some(lab),
            lab_b: None,
            seed,
        };
        run_to_end(Claim::Heads, &models).expect("the claim's result")
    }

    fn trainer(lab: &mut Lab) -> &mut Trainer {
        lab.model.trainer_mut().expect("a fresh BERT trains")
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
        let r = run_heads(&lab, settings.seed);
        let t = trainer(&mut lab);
        let (cls, sep, _) = t.corpus.cls_sep_mask();
        let sentences =
            head_sentences(&t.corpus, false, t.batch_config.max_len, HEAD_SENTENCES).unwrap();
        let (mut expected, mut rows) = ([0.0f64; 6], 0);
        for row in &sentences {
            let ids = &row.ids;
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
        // The position-only baseline is these heads: none takes a role.
        let number = |what: &str| &r.numbers.iter().find(|(k, _)| k == what).unwrap().1;
        let baseline: Vec<String> = (0..5)
            .map(|k| format!("{} {:.0}%", ROLES[k], expected[k] / rows as f64 * 100.0))
            .collect();
        assert_eq!(
            number("Baseline (a head weighing the keys it sees alike)"),
            &baseline.join(", ")
        );
        assert!(number("Heads that took a role").starts_with("0 of 8"));
        // Identical heads: JS distance 0 now; the fresh model's heads differ.
        let now = &r.plots[2].series[0];
        assert_eq!(now.name, "JS distance to the others, now");
        assert!(now.y.iter().all(|&d| d == 0.0), "{:?}", now.y);
        assert!(r.plots[2].series[1].y.iter().all(|&d| d > 0.0));
        assert_eq!(js_distance(&[0.5, 0.5], &[0.5, 0.5]), 0.0);
    }

    #[test]
    fn ablating_a_head_costs_what_the_pass_without_its_context_costs_and_the_result_follows_training(
    ) {
        let settings = LabSettings::default();
        let mut lab = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        let r = run_heads(&lab, settings.seed);
        let ablation = &r.plots[1].series[0];
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
        let sentences =
            head_sentences(&t.corpus, false, t.batch_config.max_len, HEAD_SENTENCES).unwrap();
        let rows: usize = sentences.iter().map(|row| row.ids.len()).sum();
        let sample = format!(
            "Measured over {} sentences ({rows} query rows), model seed {}.",
            sentences.len(),
            settings.seed
        );
        // A fresh model: the verdict says it has not trained; its fresh and now rows agree.
        assert!(r.verdict.text.starts_with("Not yet"), "{}", r.verdict.text);
        assert_eq!(r.plots[2].series[0].y, r.plots[2].series[1].y);
        // Measured again after training: the same set-up, the new weights.
        let mut again = follower(Claim::Heads, Some(&lab), settings.seed, &r).expect("it follows");
        let unchanged = stamped(again.measure(&lab).expect("a trained model"), Some(&lab));
        assert_eq!(unchanged.unwrap(), r);
        for _ in 0..20 {
            lab.step().unwrap();
        }
        let trained = again.measure(&lab).expect("a trained model").unwrap();
        assert_ne!(trained.heatmap, r.heatmap);
        // Roles forming goes on from the run's point: steps 0 and 20, a line per head.
        let forming = &trained.plots[0];
        assert_eq!(forming.series.len(), 8);
        assert_eq!(forming.series[5].name, "L2 H2");
        assert_eq!(forming.series[5].x, [0.0, 20.0]);
        assert_eq!(forming.series[5].y[0], r.plots[0].series[5].y[0]);
        assert_eq!(
            trained.plots[2].series[1].y, r.plots[2].series[1].y,
            "the fresh model stays"
        );
        assert!(
            trained.numbers[0].1.ends_with("at step 20"),
            "{:?}",
            trained.numbers[0]
        );
        // The verdict reads the roles, and says what it was measured over.
        assert!(
            [
                "Borne out: after 20 steps",
                "Not borne out here: after 20 steps",
                "Not decided: after 20 steps"
            ]
            .iter()
            .any(|start| trained.verdict.text.starts_with(start))
                && trained.verdict.text.ends_with(&sample),
            "{}",
            trained.verdict.text
        );
    }

    /// A checkpoint without pre-training heads (MiniLM is one) cannot train, yet its heads'
    /// roles read on the corpus all the same: no loss, so no ablation.
    #[test]
    fn a_checkpoint_without_heads_has_its_roles_read_and_no_ablation() {
        let settings = LabSettings::default();
        let lab = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        let mut checkpoint = trainer_of(&lab).checkpoint();
        checkpoint.model.cls = None;
        let files = engine::checkpoint::to_files(&checkpoint);
        let bundle = protocol::ModelBundle {
            name: "headless".into(),
            config_json: files.config_json,
            vocab_txt: files.vocab_txt,
            tokenizer_config_json: files.tokenizer_config_json,
            word_level: true,
            safetensors: files.safetensors,
            ..protocol::ModelBundle::default()
        };
        let (headless, notice) = Lab::load(bundle, DEFAULT_CORPUS, &settings).unwrap();
        assert!(headless.trainer().is_none() && notice.is_some());
        let r = run_heads(&headless, 0);
        assert_eq!(
            r.plots.len(),
            2,
            "roles forming, the diversity, and no ablation"
        );
        assert!(r.plots[1].caption.starts_with("Diversity"));
        assert!(
            r.numbers
                .iter()
                .any(|(k, v)| k == "Ablation" && v.contains("no pre-training heads")),
            "{:?}",
            r.numbers
        );
        let map = r.heatmap.expect("the roles");
        assert_eq!(map.values.rows, 8);
        // The roles are the model's own: the same as the trainable model's at step 0.
        let with_heads = run_heads(&lab, 0);
        assert_eq!(with_heads.heatmap.unwrap().values, map.values);
    }

    fn trainer_of(lab: &Lab) -> &Trainer {
        lab.trainer().expect("a trainable model")
    }

    /// The Heads claim's verdict on models trained as the page trains them, natively
    /// (`cargo test -p attention-lab-worker-core --release -- --ignored heads_table
    /// --nocapture`): the default tiny model after 2,000 steps and what more would take.
    /// `HEADS_TABLE` picks rows: "tiny", "long", "small" (several, comma-separated).
    #[test]
    #[ignore]
    fn heads_table() {
        use protocol::settings::Preset;
        let wanted = std::env::var("HEADS_TABLE").unwrap_or_else(|_| "tiny".into());
        let rows: Vec<(&str, Preset, &str, Vec<u64>)> = vec![
            ("tiny", Preset::Tiny, DEFAULT_CORPUS, vec![2000]),
            (
                "long",
                Preset::Tiny,
                DEFAULT_CORPUS,
                vec![2000, 5000, 10000],
            ),
            ("small", Preset::Small, DEFAULT_CORPUS, vec![2000]),
        ];
        for (name, preset, corpus, at) in rows {
            if !wanted.split(',').any(|w| w == name) {
                continue;
            }
            for seed in [0, 1, 2] {
                let settings = LabSettings {
                    preset,
                    seed,
                    ..LabSettings::default()
                };
                let mut lab = Lab::fresh(corpus, &settings).unwrap();
                let mut done = 0;
                for &steps in &at {
                    while done < steps {
                        lab.step().unwrap();
                        done += 1;
                    }
                    let r = run_heads(&lab, seed);
                    eprintln!("{name} seed {seed} step {steps}: {}", r.verdict.text);
                }
            }
        }
    }
}
