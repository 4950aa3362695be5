//! The explorer's Generate, in the worker: the decoder continues the sentence one token per
//! macrotask (`worker::schedule_generation`), and each token goes to the page with the
//! inspection of the whole sequence so far, so the causal triangle gains a row per token.

use super::lab::Lab;
use engine::forward::ForwardOptions;
use engine::generate::{kv_cache_bytes_without_groups, Generator};
use engine::inspect::inspect_ids;
use engine::tokenizer::Tokenizer;
use engine::{BertForPreTraining, MaskMode};
use protocol::{FromWorker, GenerationSettings, GenerationStep, LabError, LabResult};

pub struct GenerationRun {
    /// A copy of the weights: training is paused while this runs, and the run stops when the
    /// weights change (Play, Step, Rewind, Reset, Load), so the copy is the model's.
    generator: Generator<BertForPreTraining>,
    tokenizer: Tokenizer,
    prompt: Vec<String>,
    steps: Vec<GenerationStep>,
}

impl GenerationRun {
    /// The prompt is [CLS] and the sentence's tokens, with no [SEP]: generation writes what
    /// follows. The engine checks the model and the settings (a clear error for each).
    pub fn start(lab: &Lab, sentence: &str, settings: &GenerationSettings) -> LabResult<Self> {
        let (model, tokenizer) = lab.parts();
        let vocab = tokenizer.vocab();
        let mut ids = vec![vocab.cls_id()?];
        ids.extend(tokenizer.token_ids(sentence));
        if ids.len() == 1 {
            return Err(LabError::setting(
                "the sentence is empty: type the start of a sentence for the model to continue",
            ));
        }
        let options = settings.options(vocab.sep_id().ok());
        let generator = Generator::new(model.clone(), &ids, options)?;
        let prompt = ids
            .iter()
            .map(|&id| vocab.token(id).unwrap_or("[UNK]").to_string())
            .collect();
        Ok(GenerationRun {
            generator,
            tokenizer: tokenizer.clone(),
            prompt,
            steps: Vec::new(),
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
                });
                // Peek: a run that just made its last token ends now, not a tick later.
                self.generator.finished()
            }
            None => true,
        };
        Ok((self.message(done)?, done))
    }

    /// The tokens so far with the inspection of the whole sequence.
    pub fn message(&self, done: bool) -> LabResult<FromWorker> {
        let inspection = inspect_ids(
            self.generator.model(),
            &self.tokenizer,
            self.generator.ids(),
            &ForwardOptions::inspection(MaskMode::Causal),
        )?;
        Ok(FromWorker::Generated {
            prompt: self.prompt.clone(),
            steps: self.steps.clone(),
            done,
            inspection,
        })
    }
}
