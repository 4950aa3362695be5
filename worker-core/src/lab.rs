//! The model the worker trains, and the only place the app calls the engine's training and
//! inspection. Plain Rust (no DOM): it runs inside the training worker, and in tests. Which
//! kind of model it is (`Model`) is decided where one is built, here; the rest asks the model.

use crate::history::WeightHistory;
pub use crate::model::{Inspected, Model, Seq2Seq};
use engine::batch_view::{BatchView, MaskingCounts};
use engine::checkpoint::{self, Checkpoint, CheckpointFiles};
use engine::data::Corpus;
use engine::forward::ForwardOptions;
use engine::inspect::{inspect_with, Inspection};
use engine::model::BertForPreTraining;
use engine::ops::attention::Softmax;
use engine::rng::Rng;
use engine::run::Run;
use engine::seq2seq::{self, EncoderDecoder, Seq2SeqTrainer, Task};
use engine::tokenizer::Tokenizer;
use engine::train::{StepReport, Trainer};
use protocol::{
    fields, CurvePoint, LabError, LabResult, LabSettings, ModelBundle, ModelInfo, ModelKind,
    ProbeInput,
};

fn curve_point(report: &StepReport) -> CurvePoint {
    let l = report.losses;
    CurvePoint {
        step: report.step,
        loss: l.total,
        mlm_loss: l.mlm,
        nsp_loss: l.nsp,
        mlm_accuracy: l.mlm_accuracy,
        nsp_accuracy: l.nsp_accuracy,
    }
}

pub struct Lab {
    pub model: Model,
    pub name: String,
    pub history: WeightHistory,
}

/// 64 MB of kept weights: ~150 snapshots of the tiny preset, a handful of the small one.
const HISTORY_BUDGET: usize = 64 << 20;

/// Most tokens a vocabulary built from the corpus may have (the engine's, which the command
/// line's default run reads too).
pub use engine::tokenizer::WORD_VOCAB_LIMIT;

/// Why a checkpoint without pre-training heads does not train.
const NO_HEADS: &str = "it has no pre-training heads (cls.predictions, cls.seq_relationship), so it can be inspected but not pre-trained";

impl Lab {
    /// A fresh model of the kind `settings` choose, of `settings.preset` with the chosen
    /// architecture on `corpus`, with a word-level vocabulary built from it.
    pub fn fresh(corpus: &str, settings: &LabSettings) -> LabResult<Lab> {
        let kind = settings.kind();
        if let Some(task) = kind.task() {
            return Lab::fresh_seq2seq(corpus, settings, task);
        }
        let config = settings.model_config();
        // The page offers only divisors; a kept setting was checked by `restore`. Checked
        // again here so a bad one is this message, not the engine's config error.
        if let Some(g) = settings.architecture.kv_heads {
            protocol::rules::kv_heads(g as f64, config.num_attention_heads)?;
        }
        let train = settings.train_settings(kind, config.max_position_embeddings);
        let mut trainer = match kind.repeat() {
            Some(task) => Trainer::repeat(task, config, train, settings.seed)?,
            None => Trainer::from_corpus_with_vocab_limit(
                corpus,
                WORD_VOCAB_LIMIT,
                config,
                train,
                settings.seed,
            )?,
        };
        trainer.fixed_batch = settings.fixed_batch;
        let name = fresh_name(settings, kind);
        Ok(Lab::with_model(
            Model::Trainable(trainer),
            name,
            HISTORY_BUDGET,
        ))
    }

    /// A fresh encoder–decoder of `settings.preset`'s sizes (BERT's attention: the
    /// architecture choices are for one model) training on `task`.
    fn fresh_seq2seq(corpus: &str, settings: &LabSettings, task: Task) -> LabResult<Lab> {
        if settings.compare.is_some() {
            return Err(LabError::setting(
                "Compare trains two one-model BERTs side by side; turn Compare off to train an encoder–decoder",
            ));
        }
        let config = settings.preset.config();
        let kind = ModelKind::EncoderDecoder(task);
        let train = settings.train_settings(kind, config.max_position_embeddings);
        let trainer = Seq2SeqTrainer::from_corpus_with_vocab_limit(
            corpus,
            WORD_VOCAB_LIMIT,
            config,
            train.optimizer,
            train.batch,
            task,
            settings.seed,
        )?;
        Ok(Lab::with_seq2seq(trainer, fresh_name(settings, kind)))
    }

    fn with_seq2seq(trainer: Seq2SeqTrainer, name: String) -> Lab {
        let model = Model::Seq2Seq(Box::new(Seq2Seq::new(trainer)));
        // Half the budget for the decoders: the encoders kept beside them take about as much.
        Lab::with_model(model, name, HISTORY_BUDGET / 2)
    }

    /// An encoder–decoder checkpoint, training on `corpus` with the settings' task (Reverse
    /// when none is chosen).
    fn load_seq2seq(
        files: &CheckpointFiles,
        bundle: &ModelBundle,
        corpus: &str,
        settings: &LabSettings,
    ) -> LabResult<(Lab, Option<String>)> {
        let mut checkpoint = seq2seq::load(files)?;
        if bundle.word_level {
            checkpoint.tokenizer = Tokenizer::word_level(checkpoint.tokenizer.vocab().clone());
        }
        let positions = checkpoint
            .model
            .encoder
            .config
            .max_position_embeddings
            .min(checkpoint.model.decoder.config.max_position_embeddings);
        let task = settings.task.unwrap_or(Task::Reverse);
        let train = settings.train_settings(ModelKind::EncoderDecoder(task), positions);
        let mut trainer = Seq2SeqTrainer::from_checkpoint(
            checkpoint,
            corpus,
            train.optimizer,
            train.batch,
            task,
            Rng::new(settings.seed),
        )?;
        trainer.stepper.step = bundle.step;
        // A model kept by this page comes with its run, as a BERT's does (`Lab::load`).
        let notice = resumed(&mut trainer, bundle);
        Ok((Lab::with_seq2seq(trainer, bundle.name.clone()), notice))
    }

    /// A model from its bundle. Trainable on `corpus` when it has pre-training heads and the
    /// corpus suits it; otherwise inspect-only, with the reason in the returned notice.
    pub fn load(
        mut bundle: ModelBundle,
        corpus: &str,
        settings: &LabSettings,
    ) -> LabResult<(Lab, Option<String>)> {
        let files = bundle.take_files();
        if seq2seq::is_encoder_decoder(&files.config_json) {
            return Lab::load_seq2seq(&files, &bundle, corpus, settings);
        }
        // Checkpoint files read back as WordPiece; a model made here splits whole words.
        let read = || -> LabResult<Checkpoint> {
            let mut c = checkpoint::load(&files)?;
            if bundle.word_level {
                c.tokenizer = Tokenizer::word_level(c.tokenizer.vocab().clone());
            }
            Ok(c)
        };
        let loaded = read()?;
        let (model, notice) = if loaded.model.cls.is_none() {
            inspect_only(loaded, corpus, settings, NO_HEADS.into())
        } else {
            match trainer_of(loaded, &bundle, corpus, settings) {
                Ok((trainer, notice)) => (Model::Trainable(trainer), notice),
                // The trainer took the model; read it again rather than keep a second copy.
                Err(e) => inspect_only(read()?, corpus, settings, e.to_string()),
            }
        };
        let lab = Lab::with_model(model, bundle.name.clone(), HISTORY_BUDGET);
        Ok((lab, notice))
    }

    /// Compare's model B: a fresh model with `settings.compare`'s architecture on the same
    /// corpus and seed (so the same vocabulary), or None when not comparing.
    pub fn fresh_b(corpus: &str, settings: &LabSettings) -> LabResult<Option<Lab>> {
        let Some(b) = settings.for_model_b() else {
            return Ok(None);
        };
        let mut lab = Lab::fresh(corpus, &b)?;
        lab.name = format!("{} · model B", lab.name);
        lab.follow_history();
        Ok(Some(lab))
    }

    /// Compare's model B: its History keeps what model A's keeps, whatever B's size.
    pub fn follow_history(&mut self) {
        let mut history = WeightHistory::follower();
        if let Some((step, model)) = self.history.entries().first() {
            history.record_first(*step, model);
        }
        self.history = history;
    }

    /// The trainer, for one BERT or decoder that trains.
    pub fn trainer(&self) -> Option<&Trainer> {
        self.model.trainer()
    }

    /// An inspect-only model (a checkpoint without pre-training heads) with the page's corpus
    /// as its tokenizer reads it and the sentence length to read it at.
    pub fn inspected_only(&self) -> Option<(&BertForPreTraining, Option<&Corpus>, usize)> {
        let i = self.model.inspected()?;
        Some((&i.model, i.corpus.as_ref(), i.max_len))
    }

    /// The encoder–decoder, for one.
    pub fn encoder_decoder(&self) -> Option<&EncoderDecoder> {
        self.model.seq2seq().map(|s| &s.trainer.model)
    }

    /// A Lab of `model`, its History (within `budget` bytes) starting at the run's step, for
    /// a model that trains.
    fn with_model(model: Model, name: String, budget: usize) -> Lab {
        let mut lab = Lab {
            model,
            name,
            history: WeightHistory::new(budget),
        };
        if let Some(step) = lab.model.run().map(|r| r.steps()) {
            lab.history.record_first(step, lab.model.parts().0);
        }
        lab
    }

    /// The current weights and their tokenizer: an encoder–decoder's decoder, the half
    /// `history` keeps (the claims measure it as they would any BERT).
    pub fn parts(&self) -> (&BertForPreTraining, &Tokenizer) {
        self.model.parts()
    }

    /// Whole-word tokens (a vocabulary built from the corpus), not WordPiece.
    pub fn word_level(&self) -> bool {
        matches!(self.parts().1, Tokenizer::WordLevel { .. })
    }

    pub fn step_count(&self) -> u64 {
        self.model.run().map_or(0, |r| r.steps())
    }

    /// Ok when the model can train, else why not.
    pub fn trainable(&self) -> LabResult<()> {
        match self.model.inspected() {
            Some(i) => Err(LabError::unavailable(i.reason.clone())),
            None => Ok(()),
        }
    }

    pub fn info(&self) -> ModelInfo {
        let (model, tokenizer) = self.parts();
        let encoder = self.encoder_decoder().map_or(0, |m| m.encoder.num_params());
        ModelInfo {
            name: self.name.clone(),
            parameters: model.num_params() + encoder,
            tokenizer: match tokenizer {
                Tokenizer::WordLevel { .. } => "word-level".into(),
                Tokenizer::WordPiece { .. } => "WordPiece".into(),
            },
            corpus_words: self.model.run().and_then(|r| r.run_state().corpus_words),
            ..ModelInfo::of_config(&model.config, self.model.kind())
        }
    }

    /// The probe through the current weights, or through those kept at `at` (a step in the
    /// History).
    pub fn inspect(&self, probe: &ProbeInput, at: Option<u64>) -> LabResult<Inspection> {
        if let Some(s) = self.model.seq2seq() {
            return inspect_seq2seq(s, &self.history, probe, at);
        }
        let (current, tokenizer) = self.parts();
        let model = match at {
            None => current,
            Some(step) => {
                let i = self.history.position(step).ok_or_else(|| {
                    LabError::unavailable(format!("no weights kept at step {step}"))
                })?;
                &self.history.entries()[i].1
            }
        };
        let pair = Some(probe.pair.trim()).filter(|p| !p.is_empty());
        // T sizes the tiles; a text that does not encode fails in `inspect_with` with its reason.
        let t = tokenizer
            .encode(
                &probe.text,
                pair,
                model.config.max_position_embeddings,
                probe.pad_to,
            )
            .map_or(0, |e| e.input_ids.len());
        let softmax = model.config.attention_type.applicable(Softmax {
            kernel: probe.attention.kernel(t),
            window: probe.window,
        });
        let opts = ForwardOptions {
            softmax,
            ..ForwardOptions::inspection(probe.mask)
        };
        let inspection = inspect_with(model, tokenizer, &probe.text, pair, &opts, probe.pad_to)?;
        // The page checks the window against the T it last saw; the text may have changed since.
        if let Some(w) = opts.softmax.window {
            protocol::rules::window_fits(w, Some(inspection.tokens.len()))?;
        }
        // The page shows `mask_predictions`; the T×V logits behind them would be most of every
        // snapshot sent to it (T×8192 floats with a large corpus).
        Ok(without_logits(inspection))
    }

    /// One training step; an error (NaN/∞ loss, inspect-only model) leaves the weights as they were.
    pub fn step(&mut self) -> LabResult<CurvePoint> {
        self.trainable()?;
        let run = self.model.run_mut().ok_or_else(LabError::no_model)?;
        let report = run.step()?;
        Ok(self.stepped(&report, None))
    }

    /// Compare's model B: one step on the batch `leader` (model A) just trained on, keeping its
    /// weights at the steps A keeps them.
    pub fn step_following(&mut self, leader: &Lab) -> LabResult<CurvePoint> {
        let (Some(trainer), Some(led)) = (self.model.trainer_mut(), leader.trainer()) else {
            return Err(LabError::unavailable("Compare trains two trainable models"));
        };
        let report = trainer.step_following(led)?;
        Ok(self.stepped(&report, Some(&leader.history)))
    }

    /// The one record of a step taken, whichever model took it: its weights into the History
    /// when the step falls on its interval (at the steps `leader`'s History keeps, for
    /// Compare's model B; an encoder–decoder's encoder beside its decoder), and its point on
    /// the curves.
    pub(crate) fn stepped(
        &mut self,
        report: &StepReport,
        leader: Option<&WeightHistory>,
    ) -> CurvePoint {
        let step = report.step;
        let kept = self.model.parts().0;
        match leader {
            Some(leader) => self.history.follow(leader, step, kept),
            None => {
                self.history.record(step, kept);
            }
        }
        if let Some(s) = self.model.seq2seq_mut() {
            let encoder = &s.trainer.model.encoder;
            s.encoder_history.follow(&self.history, step, encoder);
        }
        curve_point(report)
    }

    /// The batch of the latest step, as the page shows it.
    pub fn batch_view(&self) -> Option<BatchView> {
        self.trainer().and_then(Trainer::batch_view)
    }

    /// Counts over every batch drawn for this model.
    pub fn masking_counts(&self) -> MaskingCounts {
        self.trainer()
            .map_or_else(MaskingCounts::default, Trainer::masking_counts)
    }

    /// Settings that need no reset: learning rate, batch size, mask probability, optimiser,
    /// training mask, fixed batch. A new optimiser starts with fresh state.
    pub fn tune(&mut self, settings: &LabSettings) -> LabResult<()> {
        // An encoder–decoder's positions are its decoder's (`parts`).
        let positions = self.parts().0.config.max_position_embeddings;
        let wanted = settings.train_settings(self.model.kind(), positions);
        let Some(run) = self.model.run_mut() else {
            return Ok(());
        };
        wanted.batch.validate()?;
        if wanted.optimizer.kind != run.optimizer().config.kind {
            run.set_optimizer(wanted.optimizer)?;
        } else {
            run.set_learning_rate(settings.learning_rate)?;
        }
        run.set_batch_config(wanted.batch);
        // The training mask and Fixed batch are one BERT's (an encoder–decoder's are fixed).
        if let Some(trainer) = self.model.trainer_mut() {
            trainer.mask = wanted.mask;
            trainer.fixed_batch = settings.fixed_batch;
        }
        Ok(())
    }

    /// `rewind` to the entry kept at `step` (Compare's model B follows model A's History).
    pub fn rewind_to_step(&mut self, step: u64) -> LabResult<u64> {
        let at = self.history.position(step).ok_or_else(|| {
            LabError::unavailable(format!("model B kept no weights at step {step}"))
        })?;
        self.rewind(at)
    }

    /// Continue from history entry `at`: its weights and step, a fresh optimiser state (the
    /// moments of a diverged run would only push it off again).
    pub fn rewind(&mut self, at: usize) -> LabResult<u64> {
        self.trainable()?;
        let (step, weights) = self
            .history
            .get(at)
            .cloned()
            .ok_or_else(|| LabError::unavailable(format!("no history entry {at}")))?;
        match self.model.seq2seq_mut() {
            Some(s) => s.rewind(at, step, weights)?,
            None => {
                if let Some(trainer) = self.model.trainer_mut() {
                    trainer.model = weights;
                }
            }
        }
        if let Some(run) = self.model.run_mut() {
            run.rewound_to(step)?;
        }
        self.history.truncate_after(at);
        Ok(step)
    }

    /// A History entry's weights as the browser keeps them: every parameter as little-endian
    /// f32, in the model's parameter order (`named_params`). The kept model gives the shapes.
    pub fn weights_bytes(model: &BertForPreTraining) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(model.num_params() * 4);
        for (_, p) in model.named_params() {
            bytes.extend(p.iter().flat_map(|x| x.to_le_bytes()));
        }
        bytes
    }

    /// Weights kept by `weights_bytes`, in a model of the current one's shape; an error when
    /// they are another model's (their length differs).
    pub fn model_from_weights(&self, bytes: &[u8]) -> LabResult<BertForPreTraining> {
        weights_into(self.parts().0.zeros_like(), bytes)
    }

    /// The current model as a bundle: its files and, when it trains, what it takes to train
    /// on exactly as before (`engine::resume`).
    pub fn bundle(&self) -> LabResult<ModelBundle> {
        let mut bundle = self.files_bundle()?;
        bundle.training_state = self.model.run().map(|r| r.training_state());
        Ok(bundle)
    }

    /// The current model's files alone, without its optimiser's state (what claims read).
    pub fn files_bundle(&self) -> LabResult<ModelBundle> {
        let files = self.model.files()?;
        Ok(ModelBundle {
            name: self.name.clone(),
            step: self.step_count(),
            config_json: files.config_json,
            vocab_txt: files.vocab_txt,
            tokenizer_config_json: files.tokenizer_config_json,
            word_level: self.word_level(),
            safetensors: files.safetensors,
            training_state: None,
        })
    }

    /// The weights kept beside `history`'s at each step: an encoder–decoder's encoder.
    pub fn paired_history(&self) -> Option<&WeightHistory> {
        self.model.seq2seq().map(|s| &s.encoder_history)
    }

    /// An encoder–decoder's encoder weights kept by `weights_bytes`, for its paired History.
    pub fn encoder_from_weights(&self, bytes: &[u8]) -> LabResult<BertForPreTraining> {
        let model = self
            .encoder_decoder()
            .ok_or_else(|| LabError::unavailable("only an encoder–decoder has an encoder"))?;
        weights_into(model.encoder.zeros_like(), bytes)
    }

    /// The History's own entries: their paired encoder's too, for an encoder–decoder.
    pub fn prepend_history(
        &mut self,
        interval: u64,
        older: Vec<(u64, BertForPreTraining)>,
        older_paired: Vec<(u64, BertForPreTraining)>,
    ) {
        self.history.prepend(interval, older);
        if let Some(s) = self.model.seq2seq_mut() {
            s.encoder_history.prepend(interval, older_paired);
            s.encoder_history.keep_only(&self.history);
        }
    }
}

/// A fresh model's name: "tiny decoder · Repeat (fresh, seed 4)".
fn fresh_name(settings: &LabSettings, kind: ModelKind) -> String {
    format!(
        "{} {} (fresh, seed {})",
        settings.preset.name(),
        fields::kind_name(kind),
        settings.seed
    )
}

/// A checkpoint with its pre-training heads, training on: a decoder on next tokens (on Repeat
/// while the settings say so), BERT on MLM + NSP. A model kept by this page comes with its
/// run: it trains on exactly as before.
fn trainer_of(
    loaded: Checkpoint,
    bundle: &ModelBundle,
    corpus: &str,
    settings: &LabSettings,
) -> LabResult<(Trainer, Option<String>)> {
    // A checkpoint is what it is, whatever the settings' objective.
    let kind = match loaded.model.config.is_decoder {
        true => ModelKind::Decoder {
            repeat: settings.repeat_task(),
        },
        false => ModelKind::Encoder,
    };
    let train = settings.train_settings(kind, loaded.model.config.max_position_embeddings);
    let mut trainer = match kind.repeat() {
        Some(task) => Trainer::repeat_from_checkpoint(task, loaded, train, settings.seed),
        None => Trainer::from_checkpoint(loaded, corpus, train, settings.seed),
    }?;
    trainer.stepper.step = bundle.step;
    trainer.fixed_batch = settings.fixed_batch;
    let notice = resumed(&mut trainer, bundle);
    Ok((trainer, notice))
}

/// `run` going on with the run `bundle` kept (`engine::resume`); if the settings changed since
/// (another optimiser), its moments start afresh, and the notice says so.
fn resumed(run: &mut dyn Run, bundle: &ModelBundle) -> Option<String> {
    let state = bundle.training_state.as_deref()?;
    let why = run.resume(state).err()?;
    Some(format!(
        "The optimiser starts afresh from this model: {why}."
    ))
}

/// `checkpoint` to look at only, and the notice that says why it does not train.
fn inspect_only(
    checkpoint: Checkpoint,
    corpus: &str,
    settings: &LabSettings,
    why: String,
) -> (Model, Option<String>) {
    let reason = format!("Training is off for this model: {why}");
    let Checkpoint {
        model, tokenizer, ..
    } = checkpoint;
    let inspected = Inspected {
        corpus: Corpus::parse(corpus, &tokenizer).ok(),
        max_len: settings.max_len.min(model.config.max_input_tokens()),
        model,
        tokenizer,
        reason: reason.clone(),
    };
    (Model::InspectOnly(inspected), Some(reason))
}

/// An encoder–decoder's probe: the Sentence as the source and the Target after [CLS] as the
/// decoder's input, through the current weights or those `history` (its decoder's) and its
/// encoder's History kept at step `at`.
fn inspect_seq2seq(
    s: &Seq2Seq,
    history: &WeightHistory,
    probe: &ProbeInput,
    at: Option<u64>,
) -> LabResult<Inspection> {
    let kept;
    let model = match at {
        None => &s.trainer.model,
        Some(step) => {
            kept = s.kept_at(history, step)?;
            &kept
        }
    };
    let tokenizer = &s.trainer.tokenizer;
    let inspection =
        seq2seq::inspect_texts(model, tokenizer, &probe.text, &probe.target, probe.pad_to)?;
    Ok(without_logits(inspection))
}

/// `model` (zeros of the right shape) filled with weights kept by `Lab::weights_bytes`; an
/// error when they are another model's (their length differs).
fn weights_into(mut model: BertForPreTraining, bytes: &[u8]) -> LabResult<BertForPreTraining> {
    if bytes.len() != model.num_params() * 4 {
        return Err(LabError::Malformed(format!(
            "kept History weights of {} bytes do not fit this model ({} parameters)",
            bytes.len(),
            model.num_params()
        )));
    }
    let mut values = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    for (_, mut p) in model.named_params_mut() {
        p.iter_mut().zip(&mut values).for_each(|(x, v)| *x = v);
    }
    Ok(model)
}

/// The page shows neither side's T×V logits (most of a snapshot's bytes).
fn without_logits(inspection: Inspection) -> Inspection {
    Inspection {
        mlm_logits: None,
        source: inspection.source.map(|s| Box::new(without_logits(*s))),
        ..inspection
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::DEFAULT_CORPUS;

    #[test]
    fn a_big_corpus_keeps_the_most_frequent_words_and_counts_them_all() {
        // 9,000 distinct words, each twice: the vocabulary keeps the limit and says how many.
        let corpus: String = (0..9000).map(|i| format!("w{i} w{i} .\n")).collect();
        let big = Lab::fresh(&corpus, &LabSettings::default()).unwrap().info();
        assert_eq!(big.vocab_size, WORD_VOCAB_LIMIT);
        assert_eq!(big.corpus_words, Some(9001));
        assert_eq!(big.tokenizer, "word-level");
    }

    #[test]
    fn history_weights_read_back_exactly_and_others_are_refused() {
        let mut lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        lab.step().unwrap();
        let t = lab.trainer().expect("fresh models train");
        let bytes = Lab::weights_bytes(&t.model);
        assert_eq!(lab.model_from_weights(&bytes).unwrap(), t.model);
        assert!(lab.model_from_weights(&bytes[4..]).is_err());
        assert!(lab.model_from_weights(&[]).is_err());
    }

    #[test]
    fn the_default_lab_inspects_the_default_probe() {
        let lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        let info = lab.info();
        assert_eq!((info.layers, info.heads, info.hidden), (2, 4, 64));
        let seen = lab.inspect(&ProbeInput::default(), None).unwrap();
        assert_eq!(seen.tokens[0], "[CLS]");
        assert_eq!(seen.trace.layers.len(), 2);
        assert_eq!(seen.mask_predictions.len(), 1);
    }

    #[test]
    fn each_architecture_choice_builds_trains_a_step_and_inspects() {
        use engine::config::{AttentionType, PositionEmbeddingType};
        use protocol::{Architecture, ProbeKernel};
        let choices = [
            Architecture {
                kv_heads: Some(1),
                ..Architecture::default()
            },
            Architecture {
                kv_heads: Some(2),
                ..Architecture::default()
            },
            Architecture {
                positions: PositionEmbeddingType::Rotary,
                ..Architecture::default()
            },
            Architecture {
                attention: AttentionType::Linear,
                ..Architecture::default()
            },
            Architecture {
                scaling: engine::config::AttentionScaling::None,
                ..Architecture::default()
            },
        ];
        for architecture in choices {
            let settings = LabSettings {
                architecture,
                ..LabSettings::default()
            };
            let mut lab = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
            let info = lab.info();
            assert_eq!(info.kv_groups(), architecture.kv_heads.unwrap_or(4));
            assert_eq!(info.architecture, architecture);
            assert!(lab.step().unwrap().loss.is_finite(), "{architecture:?}");
            let seen = lab.inspect(&ProbeInput::default(), None).unwrap();
            let head = &seen.trace.layers[0].heads[3];
            assert_eq!(head.kv_group, 3 / (4 / info.kv_groups()));
            assert_eq!(
                head.phi_q.is_some(),
                architecture.attention == AttentionType::Linear
            );
            assert_eq!(seen.scaling, architecture.scaling);
            if architecture.scaling == engine::config::AttentionScaling::None {
                assert_eq!(head.scaled, head.scores);
            }
        }
        // A window and tiles on a softmax model; a window longer than the text is a message.
        let lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        let probe = ProbeInput {
            window: Some(2),
            attention: ProbeKernel::Tiled,
            ..ProbeInput::default()
        };
        let seen = lab.inspect(&probe, None).unwrap();
        assert!(seen.trace.layers[0].heads[0].tiles.is_some());
        let long = ProbeInput {
            window: Some(500),
            ..ProbeInput::default()
        };
        assert!(lab
            .inspect(&long, None)
            .unwrap_err()
            .to_string()
            .contains("more than the"));
        let bad = LabSettings {
            architecture: Architecture {
                kv_heads: Some(3),
                ..Architecture::default()
            },
            ..LabSettings::default()
        };
        assert!(Lab::fresh(DEFAULT_CORPUS, &bad).is_err());
    }

    #[test]
    fn bad_input_is_a_message() {
        let lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        let empty = ProbeInput {
            text: "   ".into(),
            pair: String::new(),
            ..ProbeInput::default()
        };
        assert!(lab.inspect(&empty, None).is_err());
        assert!(Lab::fresh("one sentence only", &LabSettings::default()).is_err());
        assert!(Lab::fresh("", &LabSettings::default()).is_err());
    }
}
