//! What the user sets: the run (`LabSettings`) and what the explorer shows (`ProbeInput`).

use engine::batch::MaskMode;
use engine::config::BertConfig;
use engine::data::{max_predictions, BatchConfig};
use engine::optim::OptimizerKind;
use engine::train::TrainSettings;
use serde::{Deserialize, Serialize};

/// The built-in corpus: a short dialogue with enough repetition to learn from in a minute.
pub const DEFAULT_CORPUS: &str = include_str!("../../assets/default_corpus.txt");

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

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Preset {
    #[default]
    Tiny,
    Small,
}

impl Preset {
    pub const ALL: [Preset; 2] = [Preset::Tiny, Preset::Small];

    pub fn config(self) -> BertConfig {
        match self {
            Preset::Tiny => BertConfig::tiny(0),
            Preset::Small => BertConfig::small(0),
        }
    }

    /// The name the panel's select and a fresh model's name use.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Tiny => "tiny",
            Preset::Small => "small",
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

/// Everything the user can set about a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabSettings {
    pub preset: Preset,
    pub learning_rate: f64,
    pub batch_size: usize,
    pub mask_prob: f32,
    pub seed: u64,
    pub optimizer: OptimizerKind,
    /// The attention mask used in training ("None", "Padding" or "Causal").
    pub train_mask: MaskMode,
    /// T of the training batches.
    pub max_len: usize,
    /// "Fixed batch": train on one batch again and again (absent in settings kept before it
    /// existed: off).
    #[serde(default)]
    pub fixed_batch: bool,
}

impl Default for LabSettings {
    fn default() -> Self {
        LabSettings {
            preset: Preset::Tiny,
            learning_rate: 1e-3,
            batch_size: 8,
            mask_prob: 0.15,
            seed: 0,
            optimizer: OptimizerKind::Adam,
            train_mask: MaskMode::Padding,
            max_len: 32,
            fixed_batch: false,
        }
    }
}

impl LabSettings {
    /// The engine's training settings for a model with `max_positions` positions (the batches'
    /// T is at most that).
    pub fn train_settings(&self, max_positions: usize) -> TrainSettings {
        let optimizer = self.optimizer.config(self.learning_rate);
        let max_len = self.max_len.min(max_positions);
        TrainSettings {
            optimizer,
            batch: BatchConfig {
                batch_size: self.batch_size,
                max_len,
                mask_prob: self.mask_prob,
                max_predictions: max_predictions(max_len, self.mask_prob),
            },
            mask: self.train_mask,
        }
    }
}
