//! The model a `Lab` holds: one BERT or decoder with its trainer, an encoder–decoder with its
//! trainer and its encoder's History, or a checkpoint loaded only to be looked at. Its variants
//! are named where a model is built (`Lab::fresh`, `Lab::load`) and in the methods here that
//! say what each has; everything else asks these (`kind`, `parts`, `run`, …).

use crate::history::WeightHistory;
use engine::checkpoint::{self, Checkpoint, CheckpointFiles};
use engine::data::Corpus;
use engine::model::BertForPreTraining;
use engine::run::Run;
use engine::seq2seq::{self, EncoderDecoder, Seq2SeqTrainer};
use engine::tokenizer::Tokenizer;
use engine::train::Trainer;
use protocol::{LabError, LabResult, ModelKind};

/// A model that trains, or one that can only be looked at.
// One Model lives per Lab, so the size gap between variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Model {
    /// One BERT or decoder: MLM + NSP, next token of the corpus, or Repeat.
    Trainable(Trainer),
    Seq2Seq(Box<Seq2Seq>),
    InspectOnly(Inspected),
}

/// An encoder–decoder training on a sequence-to-sequence task. `Lab::history` keeps its
/// decoder; `encoder_history` follows it, keeping the encoder at the same steps (as Compare's
/// model B follows model A).
pub struct Seq2Seq {
    pub trainer: Seq2SeqTrainer,
    pub encoder_history: WeightHistory,
}

/// A checkpoint that can only be looked at: no pre-training heads, or no corpus it can train
/// on (`reason` says which).
pub struct Inspected {
    pub model: BertForPreTraining,
    pub tokenizer: Tokenizer,
    pub reason: String,
    /// The page's corpus read with the model's tokenizer (None when it reads nothing), and the
    /// settings' sentence length: what the claims that read sentences read.
    pub corpus: Option<Corpus>,
    pub max_len: usize,
}

impl Model {
    /// What it is, as the page, a link and the notebook name it.
    pub fn kind(&self) -> ModelKind {
        match self {
            Model::Trainable(t) => ModelKind::trained_on(t.objective, t.repeat),
            Model::Seq2Seq(s) => ModelKind::EncoderDecoder(s.trainer.task),
            Model::InspectOnly(i) => ModelKind::InspectOnly {
                decoder: i.model.config.is_decoder,
                heads: i.model.cls.is_some(),
            },
        }
    }

    /// The current weights the History keeps and their tokenizer: an encoder–decoder's
    /// decoder (the claims measure it as they would any BERT).
    pub fn parts(&self) -> (&BertForPreTraining, &Tokenizer) {
        match self {
            Model::Trainable(t) => (&t.model, &t.tokenizer),
            Model::Seq2Seq(s) => (&s.trainer.model.decoder, &s.trainer.tokenizer),
            Model::InspectOnly(i) => (&i.model, &i.tokenizer),
        }
    }

    /// Its checkpoint's files: an encoder–decoder's both halves; a trained model's under the
    /// tensor names it was loaded with.
    pub fn files(&self) -> LabResult<CheckpointFiles> {
        Ok(match self {
            Model::Trainable(t) => checkpoint::to_files(&t.checkpoint()),
            Model::Seq2Seq(s) => seq2seq::to_files(&s.trainer.checkpoint()),
            Model::InspectOnly(i) => {
                checkpoint::to_files(&Checkpoint::new(i.model.clone(), i.tokenizer.clone())?)
            }
        })
    }

    /// The training run, for a model that trains (either kind).
    pub fn run(&self) -> Option<&dyn Run> {
        match self {
            Model::Trainable(t) => Some(t),
            Model::Seq2Seq(s) => Some(&s.trainer),
            Model::InspectOnly(_) => None,
        }
    }

    pub fn run_mut(&mut self) -> Option<&mut dyn Run> {
        match self {
            Model::Trainable(t) => Some(t),
            Model::Seq2Seq(s) => Some(&mut s.trainer),
            Model::InspectOnly(_) => None,
        }
    }

    /// One BERT's or decoder's trainer.
    pub fn trainer(&self) -> Option<&Trainer> {
        match self {
            Model::Trainable(t) => Some(t),
            _ => None,
        }
    }

    pub fn trainer_mut(&mut self) -> Option<&mut Trainer> {
        match self {
            Model::Trainable(t) => Some(t),
            _ => None,
        }
    }

    /// An encoder–decoder's trainer and encoder History.
    pub fn seq2seq(&self) -> Option<&Seq2Seq> {
        match self {
            Model::Seq2Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn seq2seq_mut(&mut self) -> Option<&mut Seq2Seq> {
        match self {
            Model::Seq2Seq(s) => Some(s),
            _ => None,
        }
    }

    /// A model that can only be looked at.
    pub fn inspected(&self) -> Option<&Inspected> {
        match self {
            Model::InspectOnly(i) => Some(i),
            _ => None,
        }
    }
}

impl Seq2Seq {
    /// A fresh run's History beside the decoder's: the encoder at the run's step.
    pub fn new(trainer: Seq2SeqTrainer) -> Seq2Seq {
        let mut encoder_history = WeightHistory::follower();
        encoder_history.record_first(trainer.stepper.step, &trainer.model.encoder);
        Seq2Seq {
            trainer,
            encoder_history,
        }
    }

    /// The model as History kept it at `step`: `decoders` is the Lab's History, which keeps
    /// the decoder.
    pub fn kept_at(&self, decoders: &WeightHistory, step: u64) -> LabResult<EncoderDecoder> {
        let missing = || LabError::unavailable(format!("no weights kept at step {step}"));
        let decoder = &decoders.entries()[decoders.position(step).ok_or_else(missing)?].1;
        let history = &self.encoder_history;
        let encoder = &history.entries()[history.position(step).ok_or_else(missing)?].1;
        let model = &self.trainer.model;
        Ok(EncoderDecoder {
            encoder: encoder.clone(),
            decoder: decoder.clone(),
            decoder_start_token_id: model.decoder_start_token_id,
            pad_token_id: model.pad_token_id,
            extra: model.extra.clone(),
        })
    }

    /// Back to History entry `at` (step `step`): `decoder`, the weights the Lab's History kept
    /// there, and the encoder kept beside them.
    pub fn rewind(&mut self, at: usize, step: u64, decoder: BertForPreTraining) -> LabResult<()> {
        let encoder = self
            .encoder_history
            .get(at)
            .filter(|(s, _)| *s == step)
            .map(|(_, m)| m.clone())
            .ok_or_else(|| LabError::unavailable(format!("no encoder kept at step {step}")))?;
        self.trainer.model.decoder = decoder;
        self.trainer.model.encoder = encoder;
        self.encoder_history.truncate_after(at);
        Ok(())
    }
}
