//! The model the page is looking at, and the only place the app calls the engine. Plain Rust
//! (no DOM): it runs inside the training worker, and in tests.

use crate::protocol::CurvePoint;
use engine::batch::MaskMode;
use engine::checkpoint::{self, Checkpoint, CheckpointFiles};
use engine::config::BertConfig;
use engine::data::BatchConfig;
use engine::inspect::{inspect, Inspection};
use engine::model::BertForPreTraining;
use engine::optim::{Optimizer, OptimizerConfig};
use engine::tokenizer::Tokenizer;
use engine::train::{TrainSettings, Trainer};
use serde::{Deserialize, Serialize};

/// The built-in corpus: a short dialogue with enough repetition to learn from in a minute.
pub const DEFAULT_CORPUS: &str = include_str!("../assets/default_corpus.txt");

/// What the user asks the explorer to show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeInput {
    pub text: String,
    /// Empty = a single sentence.
    pub pair: String,
    pub pad_to: Option<usize>,
    pub mask: MaskMode,
}

impl Default for ProbeInput {
    fn default() -> Self {
        ProbeInput {
            text: "the dog chases a [MASK] ball .".into(),
            pair: "the ball rolls under the tree .".into(),
            pad_to: None,
            mask: MaskMode::Padding,
        }
    }
}

/// The shape of the current model, for selectors and the model view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    pub layers: usize,
    pub heads: usize,
    pub hidden: usize,
    pub head_size: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub vocab_size: usize,
    pub parameters: usize,
    /// False for a checkpoint without pre-training heads.
    pub has_heads: bool,
    /// "word-level" for a model made here, "WordPiece" for a loaded checkpoint.
    pub tokenizer: String,
    /// Distinct words in the corpus a word-level vocabulary was built from (None otherwise).
    #[serde(default)]
    pub corpus_words: Option<usize>,
}

impl ModelInfo {
    /// The model in one line, for the header: its shape, vocabulary and size, and, when the
    /// corpus had more words than the vocabulary holds, how many of them it kept.
    pub fn facts(&self) -> String {
        let mut facts = format!(
            "{} layers × {} heads · hidden {} · {}-token {} vocabulary · {} parameters",
            self.layers,
            self.heads,
            self.hidden,
            thousands(self.vocab_size),
            self.tokenizer,
            millions(self.parameters),
        );
        let kept_words = self
            .vocab_size
            .saturating_sub(engine::tokenizer::SPECIAL_TOKENS.len());
        if let Some(words) = self.corpus_words.filter(|&w| w > kept_words) {
            facts += &format!(
                " (the {} most frequent of the corpus's {} words; the rest read as [UNK])",
                thousands(kept_words),
                thousands(words)
            );
        }
        facts
    }
}

/// 12345 → "12,345".
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// 234567 → "0.23 M", 22713216 → "22.7 M".
fn millions(n: usize) -> String {
    let m = n as f64 / 1e6;
    if m < 10.0 {
        format!("{m:.2} M")
    } else {
        format!("{m:.1} M")
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Preset {
    #[default]
    Tiny,
    Small,
}

impl Preset {
    pub fn config(self) -> BertConfig {
        match self {
            Preset::Tiny => BertConfig::tiny(0),
            Preset::Small => BertConfig::small(0),
        }
    }

    pub fn describe(self) -> String {
        let c = self.config();
        format!(
            "hidden {} · {} layers · {} heads · FFN {}",
            c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size
        )
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum OptimizerChoice {
    Sgd,
    #[default]
    Adam,
}

/// Everything the user can set about a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabSettings {
    pub preset: Preset,
    pub learning_rate: f64,
    pub batch_size: usize,
    pub mask_prob: f32,
    pub seed: u64,
    pub optimizer: OptimizerChoice,
    /// The attention mask used in training ("Padding" or "Causal").
    pub train_mask: MaskMode,
    /// T of the training batches.
    pub max_len: usize,
}

impl Default for LabSettings {
    fn default() -> Self {
        LabSettings {
            preset: Preset::Tiny,
            learning_rate: 1e-3,
            batch_size: 8,
            mask_prob: 0.15,
            seed: 0,
            optimizer: OptimizerChoice::Adam,
            train_mask: MaskMode::Padding,
            max_len: 32,
        }
    }
}

impl LabSettings {
    /// Architecture and seed define the run: changing them means starting again.
    pub fn needs_reset(&self, before: &LabSettings) -> bool {
        self.preset != before.preset || self.seed != before.seed
    }

    pub fn train_settings(&self) -> TrainSettings {
        let optimizer = match self.optimizer {
            OptimizerChoice::Sgd => OptimizerConfig::sgd(self.learning_rate),
            OptimizerChoice::Adam => OptimizerConfig::adam(self.learning_rate),
        };
        // BERT's cap of ~15% of the sequence as predictions, at least one.
        let max_predictions = ((self.max_len as f32 * self.mask_prob).ceil() as usize).max(1);
        TrainSettings {
            optimizer,
            batch: BatchConfig {
                batch_size: self.batch_size,
                max_len: self.max_len,
                mask_prob: self.mask_prob,
                max_predictions,
            },
            mask: self.train_mask,
        }
    }
}

/// Weights kept every `interval` steps for the History slider and for rewinding, within a
/// memory budget: when over it, every other entry goes and the interval doubles.
pub struct WeightHistory {
    entries: Vec<(u64, BertForPreTraining)>,
    interval: u64,
    budget_bytes: usize,
}

impl WeightHistory {
    pub fn new(budget_bytes: usize) -> Self {
        WeightHistory {
            entries: Vec::new(),
            interval: 5,
            budget_bytes,
        }
    }

    /// The starting point of a run, whatever its step.
    pub fn record_first(&mut self, step: u64, model: &BertForPreTraining) {
        self.entries.clear();
        self.entries.push((step, model.clone()));
    }

    /// Keep `model` if `step` falls on the interval (step 0 always).
    pub fn record(&mut self, step: u64, model: &BertForPreTraining) -> bool {
        if !step.is_multiple_of(self.interval)
            || self.entries.last().is_some_and(|(s, _)| *s == step)
        {
            return false;
        }
        self.entries.push((step, model.clone()));
        while self.bytes() > self.budget_bytes && self.entries.len() > 2 {
            let mut i = 0;
            self.entries.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.interval *= 2;
        }
        true
    }

    fn bytes(&self) -> usize {
        self.entries.iter().map(|(_, m)| m.num_params() * 4).sum()
    }

    pub fn steps(&self) -> Vec<u64> {
        self.entries.iter().map(|(s, _)| *s).collect()
    }

    pub fn get(&self, at: usize) -> Option<&(u64, BertForPreTraining)> {
        self.entries.get(at)
    }

    /// Forget everything after entry `at` (the run continues from there).
    pub fn truncate_after(&mut self, at: usize) {
        self.entries.truncate(at + 1);
    }
}

/// A model that can be trained, or one that can only be looked at (no pre-training heads).
// One Model lives per Lab, so the size gap between variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Model {
    Trainable(Trainer),
    InspectOnly {
        model: BertForPreTraining,
        tokenizer: Tokenizer,
        reason: String,
    },
}

pub struct Lab {
    pub model: Model,
    pub name: String,
    pub history: WeightHistory,
}

/// 64 MB of kept weights: ~150 snapshots of the tiny preset, a handful of the small one.
const HISTORY_BUDGET: usize = 64 << 20;

/// Most tokens a vocabulary built from the corpus may have. A 1 MB corpus has tens of
/// thousands of distinct words; the MLM head's cost grows with each, and words seen once
/// or twice are too rare to learn anyway.
pub const WORD_VOCAB_LIMIT: usize = 8192;

impl Lab {
    /// A fresh model of `settings.preset` on `corpus`, with a word-level vocabulary built from it.
    pub fn fresh(corpus: &str, settings: &LabSettings) -> Result<Lab, String> {
        let trainer = Trainer::from_corpus_with_vocab_limit(
            corpus,
            WORD_VOCAB_LIMIT,
            settings.preset.config(),
            settings.train_settings(),
            settings.seed,
        )
        .map_err(|e| e.to_string())?;
        let name = format!(
            "{} BERT (fresh, seed {})",
            preset_name(settings.preset),
            settings.seed
        );
        Ok(Lab::with_model(Model::Trainable(trainer), name))
    }

    /// A checkpoint from its files. Trainable on `corpus` when it has pre-training heads and the
    /// corpus suits it; otherwise inspect-only, with the reason in the returned notice.
    pub fn load(
        files: &CheckpointFiles,
        name: &str,
        corpus: &str,
        settings: &LabSettings,
        step: u64,
        word_level: bool,
        training_state: Option<&[u8]>,
    ) -> Result<(Lab, Option<String>), String> {
        // Checkpoint files read back as WordPiece; a model made here splits whole words.
        let read = || -> Result<Checkpoint, String> {
            let mut c = checkpoint::load(files).map_err(|e| e.to_string())?;
            if word_level {
                c.tokenizer = Tokenizer::word_level(c.tokenizer.vocab().clone());
            }
            Ok(c)
        };
        let loaded = read()?;
        let mut train = settings.train_settings();
        train.batch.max_len = train
            .batch
            .max_len
            .min(loaded.model.config.max_position_embeddings);
        let inspect_only = |checkpoint: Checkpoint, why: String| {
            let reason = format!("Training is off for this model: {why}");
            let Checkpoint {
                model, tokenizer, ..
            } = checkpoint;
            (
                Model::InspectOnly {
                    model,
                    tokenizer,
                    reason: reason.clone(),
                },
                Some(reason),
            )
        };
        let (model, notice) = if loaded.model.cls.is_none() {
            let why = "it has no pre-training heads (cls.predictions, cls.seq_relationship), so it can be \
                       inspected but not pre-trained";
            inspect_only(loaded, why.into())
        } else {
            match Trainer::from_checkpoint(loaded, corpus, train, settings.seed) {
                Ok(mut trainer) => {
                    trainer.step = step;
                    // A model kept by this page comes with its run: it trains on exactly as
                    // before. If the settings changed since (another optimiser), it starts its
                    // moments afresh, and says so.
                    let resumed = training_state.map(|state| trainer.resume(state));
                    let notice = resumed
                        .and_then(Result::err)
                        .map(|e| format!("The optimiser starts afresh from this model: {e}."));
                    (Model::Trainable(trainer), notice)
                }
                // The trainer took the model; read it again rather than keep a second copy.
                Err(e) => inspect_only(read()?, e.to_string()),
            }
        };
        Ok((Lab::with_model(model, name.to_string()), notice))
    }

    fn with_model(model: Model, name: String) -> Lab {
        let mut lab = Lab {
            model,
            name,
            history: WeightHistory::new(HISTORY_BUDGET),
        };
        if let Model::Trainable(t) = &lab.model {
            lab.history.record_first(t.step, &t.model);
        }
        lab
    }

    fn parts(&self) -> (&BertForPreTraining, &Tokenizer) {
        match &self.model {
            Model::Trainable(t) => (&t.model, &t.tokenizer),
            Model::InspectOnly {
                model, tokenizer, ..
            } => (model, tokenizer),
        }
    }

    /// Whole-word tokens (a vocabulary built from the corpus), not WordPiece.
    pub fn word_level(&self) -> bool {
        matches!(self.parts().1, Tokenizer::WordLevel { .. })
    }

    pub fn step_count(&self) -> u64 {
        match &self.model {
            Model::Trainable(t) => t.step,
            Model::InspectOnly { .. } => 0,
        }
    }

    /// Ok when the model can train, else why not.
    pub fn trainable(&self) -> Result<(), String> {
        match &self.model {
            Model::Trainable(_) => Ok(()),
            Model::InspectOnly { reason, .. } => Err(reason.clone()),
        }
    }

    pub fn info(&self) -> ModelInfo {
        let (model, tokenizer) = self.parts();
        let c = &model.config;
        ModelInfo {
            name: self.name.clone(),
            layers: c.num_hidden_layers,
            heads: c.num_attention_heads,
            hidden: c.hidden_size,
            head_size: c.head_size(),
            intermediate: c.intermediate_size,
            max_positions: c.max_position_embeddings,
            vocab_size: c.vocab_size,
            parameters: model.num_params(),
            has_heads: model.cls.is_some(),
            tokenizer: match tokenizer {
                Tokenizer::WordLevel { .. } => "word-level".into(),
                Tokenizer::WordPiece { .. } => "WordPiece".into(),
            },
            corpus_words: match &self.model {
                Model::Trainable(t) => t.corpus_words,
                Model::InspectOnly { .. } => None,
            },
        }
    }

    /// The probe through the current weights, or through those of history entry `at`.
    pub fn inspect(&self, probe: &ProbeInput, at: Option<usize>) -> Result<Inspection, String> {
        let (current, tokenizer) = self.parts();
        let model = match at {
            None => current,
            Some(i) => {
                &self
                    .history
                    .get(i)
                    .ok_or_else(|| format!("no history entry {i}"))?
                    .1
            }
        };
        let pair = Some(probe.pair.trim()).filter(|p| !p.is_empty());
        inspect(
            model,
            tokenizer,
            &probe.text,
            pair,
            probe.mask,
            probe.pad_to,
        )
        // The page shows `mask_predictions`; the T×V logits behind them would be most of every
        // snapshot sent to it (T×8192 floats with a large corpus).
        .map(|inspection| Inspection {
            mlm_logits: None,
            ..inspection
        })
        .map_err(|e| e.to_string())
    }

    /// One training step; an error (NaN/∞ loss, inspect-only model) leaves the weights as they were.
    pub fn step(&mut self) -> Result<CurvePoint, String> {
        let Model::Trainable(trainer) = &mut self.model else {
            return Err(self.trainable().unwrap_err());
        };
        let report = trainer.step().map_err(|e| e.to_string())?;
        self.history.record(report.step, &trainer.model);
        let l = report.losses;
        Ok(CurvePoint {
            step: report.step,
            loss: l.total,
            mlm_loss: l.mlm,
            nsp_loss: l.nsp,
            mlm_accuracy: l.mlm_accuracy,
            nsp_accuracy: l.nsp_accuracy,
        })
    }

    /// Settings that need no reset: learning rate, batch size, mask probability, optimiser,
    /// training mask. A new optimiser starts with fresh state.
    pub fn tune(&mut self, settings: &LabSettings) -> Result<(), String> {
        let Model::Trainable(trainer) = &mut self.model else {
            return Ok(());
        };
        let mut wanted = settings.train_settings();
        wanted.batch.max_len = wanted
            .batch
            .max_len
            .min(trainer.model.config.max_position_embeddings);
        wanted.batch.validate().map_err(|e| e.to_string())?;
        if wanted.optimizer.kind != trainer.optimizer.config.kind {
            trainer.optimizer =
                Optimizer::new(wanted.optimizer, &trainer.model).map_err(|e| e.to_string())?;
        } else {
            trainer
                .set_learning_rate(settings.learning_rate)
                .map_err(|e| e.to_string())?;
        }
        trainer.batch_config = wanted.batch;
        trainer.mask = wanted.mask;
        Ok(())
    }

    /// Continue from history entry `at`: its weights and step, a fresh optimiser state (the
    /// moments of a diverged run would only push it off again).
    pub fn rewind(&mut self, at: usize) -> Result<u64, String> {
        let (step, weights) = self
            .history
            .get(at)
            .cloned()
            .ok_or_else(|| format!("no history entry {at}"))?;
        let Model::Trainable(trainer) = &mut self.model else {
            return Err(self.trainable().unwrap_err());
        };
        trainer.model = weights;
        trainer.step = step;
        trainer.optimizer = Optimizer::new(trainer.optimizer.config.clone(), &trainer.model)
            .map_err(|e| e.to_string())?;
        self.history.truncate_after(at);
        Ok(step)
    }

    /// What it takes, beyond the checkpoint, to train on exactly as before (see
    /// `engine::resume`); `None` for an inspect-only model.
    pub fn training_state(&self) -> Option<Vec<u8>> {
        match &self.model {
            Model::Trainable(t) => Some(t.training_state()),
            Model::InspectOnly { .. } => None,
        }
    }

    pub fn checkpoint_files(&self) -> Result<CheckpointFiles, String> {
        let checkpoint = match &self.model {
            Model::Trainable(t) => t.checkpoint(),
            Model::InspectOnly {
                model, tokenizer, ..
            } => Checkpoint::new(model.clone(), tokenizer.clone()).map_err(|e| e.to_string())?,
        };
        Ok(checkpoint::to_files(&checkpoint))
    }
}

fn preset_name(p: Preset) -> &'static str {
    match p {
        Preset::Tiny => "tiny",
        Preset::Small => "small",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_facts_line_names_shape_vocabulary_size_and_left_out_words() {
        let lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        let facts = lab.info().facts();
        assert!(
            facts.starts_with("2 layers × 4 heads · hidden 64 · ")
                && facts.contains("word-level vocabulary"),
            "{facts}"
        );
        assert!(!facts.contains("[UNK]"), "nothing was left out: {facts}");
        // 9,000 distinct words, each twice: the vocabulary keeps the limit and says so.
        let corpus: String = (0..9000).map(|i| format!("w{i} w{i} .\n")).collect();
        let big = Lab::fresh(&corpus, &LabSettings::default()).unwrap().info();
        assert_eq!(big.vocab_size, WORD_VOCAB_LIMIT);
        assert_eq!(big.corpus_words, Some(9001));
        assert!(
            big.facts().contains("8,192-token word-level vocabulary")
                && big
                    .facts()
                    .contains("the 8,187 most frequent of the corpus's 9,001 words"),
            "{}",
            big.facts()
        );
        assert_eq!(
            (thousands(7), thousands(1234567)),
            ("7".into(), "1,234,567".into())
        );
        assert_eq!(
            (millions(234_567), millions(22_713_216)),
            ("0.23 M".into(), "22.7 M".into())
        );
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

    #[test]
    fn history_stays_within_budget_by_thinning() {
        let lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        let Model::Trainable(t) = &lab.model else {
            panic!("fresh models train")
        };
        let per_entry = t.model.num_params() * 4;
        let mut h = WeightHistory::new(per_entry * 4);
        for step in 0..=100 {
            h.record(step, &t.model);
        }
        let steps = h.steps();
        assert!(steps.len() <= 4, "{steps:?}");
        assert_eq!(steps[0], 0);
        assert!(*steps.last().unwrap() >= 60, "{steps:?}");
    }
}
