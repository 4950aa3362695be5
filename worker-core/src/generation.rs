//! The explorer's Generate, in the worker: the decoder continues the sentence (or, for an
//! encoder–decoder, writes the target of the source sentence) one token per macrotask
//! (`Lead::wake` with `Wake::Generation`), and each token goes to the page with the inspection of the
//! whole sequence so far, so the causal triangle gains a row per token.

use crate::lab::Lab;
use engine::forward::ForwardOptions;
use engine::generate::{cross_kv_bytes, kv_cache_bytes_without_groups, Generator};
use engine::inspect::{inspect_ids, Inspection};
use engine::seq2seq::{self, EncoderDecoder};
use engine::tokenizer::Tokenizer;
use engine::{BertForPreTraining, MaskMode};
use protocol::{FromWorker, GenerationSettings, GenerationStep, LabError, LabResult};
use std::borrow::Borrow;

/// A copy of the weights a generation runs on: training is paused while it runs, and the run
/// stops when the weights change (Play, Step, Rewind, Reset, Load), so the copy is the model's.
// One lives per generation, so the size gap between variants costs nothing.
#[allow(clippy::large_enum_variant)]
enum Weights {
    Decoder(BertForPreTraining),
    /// An encoder–decoder and the source sentence its decoder reads.
    Seq2Seq {
        model: Box<EncoderDecoder>,
        source: String,
    },
}

impl Borrow<BertForPreTraining> for Weights {
    fn borrow(&self) -> &BertForPreTraining {
        match self {
            Weights::Decoder(m) => m,
            Weights::Seq2Seq { model, .. } => &model.decoder,
        }
    }
}

pub struct GenerationRun {
    generator: Generator<Weights>,
    tokenizer: Tokenizer,
    prompt: Vec<String>,
    steps: Vec<GenerationStep>,
    /// An encoder–decoder's source tokens (Ts), `[CLS] … [SEP]`.
    source_len: Option<usize>,
}

impl GenerationRun {
    /// A decoder's prompt is [CLS] and the sentence's tokens, with no [SEP]: generation writes
    /// what follows. An encoder–decoder reads `[CLS] sentence [SEP]` as its source and writes
    /// from [CLS]. The engine checks the model and the settings (a clear error for each).
    pub fn start(lab: &Lab, sentence: &str, settings: &GenerationSettings) -> LabResult<Self> {
        let (model, tokenizer) = lab.parts();
        let vocab = tokenizer.vocab();
        let mut ids = vec![vocab.cls_id()?];
        ids.extend(tokenizer.token_ids(sentence));
        if ids.len() == 1 {
            let what = if lab.encoder_decoder().is_some() {
                "type a source sentence for the model to turn into its target"
            } else {
                "type the start of a sentence for the model to continue"
            };
            return Err(LabError::setting(format!("the sentence is empty: {what}")));
        }
        let options = settings.options(vocab.sep_id().ok());
        let mut source_len = None;
        let generator = match lab.encoder_decoder() {
            Some(ed) => {
                ids.push(vocab.sep_id()?);
                source_len = Some(ids.len());
                let source = seq2seq::encode(ed, &ids)?;
                let start = [ed.decoder_start_token_id];
                let weights = Weights::Seq2Seq {
                    model: Box::new(ed.clone()),
                    source: sentence.to_string(),
                };
                Generator::with_source(weights, &start, Some(source), options)?
            }
            None => Generator::new(Weights::Decoder(model.clone()), &ids, options)?,
        };
        let prompt = generator
            .ids()
            .iter()
            .map(|&id| vocab.token(id).unwrap_or("[UNK]").to_string())
            .collect();
        Ok(GenerationRun {
            generator,
            tokenizer: tokenizer.clone(),
            prompt,
            steps: Vec::new(),
            source_len,
        })
    }

    /// One more token and the message that shows it; `done` when it was the last.
    pub fn step(&mut self) -> LabResult<(FromWorker, bool)> {
        let done = match self.generator.next_token()? {
            Some(t) => {
                let vocab = self.tokenizer.vocab();
                let name = |id: u32| vocab.token(id).unwrap_or("[UNK]").to_string();
                let config = &self.generator.model().config;
                self.steps.push(GenerationStep {
                    token: name(t.id),
                    id: t.id,
                    prob: t.prob,
                    top: t.top.iter().map(|&(id, p)| (name(id), p)).collect(),
                    kv_cache_bytes: t.kv_cache_bytes,
                    kv_cache_bytes_ungrouped: kv_cache_bytes_without_groups(
                        config,
                        self.generator.ids().len(),
                    ),
                    cross_kv_bytes: self.source_len.map(|ts| cross_kv_bytes(config, ts)),
                });
                // Peek: a run that just made its last token ends now, not a tick later.
                self.generator.finished()
            }
            None => true,
        };
        Ok((self.message(done)?, done))
    }

    /// The tokens so far with the inspection of the whole sequence (and of the source).
    pub fn message(&self, done: bool) -> LabResult<FromWorker> {
        let ids = self.generator.ids();
        let inspection: Inspection = match self.generator.weights() {
            Weights::Decoder(model) => inspect_ids(
                model,
                &self.tokenizer,
                ids,
                &ForwardOptions::inspection(MaskMode::Causal),
            )?,
            Weights::Seq2Seq { model, source } => {
                let mut i = seq2seq::inspect_ids(model, &self.tokenizer, source, ids, None)?;
                i.mlm_logits = None;
                i
            }
        };
        Ok(FromWorker::Generated {
            prompt: self.prompt.clone(),
            steps: self.steps.clone(),
            done,
            inspection,
        })
    }
}
