//! The model the page is looking at, and the only place the app calls the engine. Plain Rust
//! (no DOM), so it can run on the page or inside the training worker unchanged.

use engine::batch::MaskMode;
use engine::config::BertConfig;
use engine::data::BatchConfig;
use engine::inspect::{inspect, Inspection};
use engine::optim::OptimizerConfig;
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
    pub max_positions: usize,
    pub vocab_size: usize,
    pub parameters: usize,
    /// False for a checkpoint without pre-training heads.
    pub has_heads: bool,
}

pub struct Lab {
    pub trainer: Trainer,
    pub name: String,
}

/// The app's default run: the tiny preset, Adam, BERT's masking, padding mask.
pub fn default_settings() -> TrainSettings {
    TrainSettings {
        optimizer: OptimizerConfig::adam(1e-3),
        batch: BatchConfig { batch_size: 8, max_len: 32, mask_prob: 0.15, max_predictions: 5 },
        mask: MaskMode::Padding,
    }
}

impl Lab {
    /// A fresh tiny BERT on `corpus`. Errors (too few sentences, …) are the engine's messages.
    pub fn fresh(corpus: &str, seed: u64) -> Result<Lab, String> {
        let trainer = Trainer::from_corpus(corpus, BertConfig::tiny(0), default_settings(), seed)
            .map_err(|e| e.to_string())?;
        Ok(Lab { trainer, name: "tiny BERT (fresh)".into() })
    }

    pub fn info(&self) -> ModelInfo {
        let model = &self.trainer.model;
        let c = &model.config;
        ModelInfo {
            name: self.name.clone(),
            layers: c.num_hidden_layers,
            heads: c.num_attention_heads,
            hidden: c.hidden_size,
            head_size: c.head_size(),
            max_positions: c.max_position_embeddings,
            vocab_size: c.vocab_size,
            parameters: model.num_params(),
            has_heads: model.cls.is_some(),
        }
    }

    pub fn inspect(&self, probe: &ProbeInput) -> Result<Inspection, String> {
        let pair = Some(probe.pair.trim()).filter(|p| !p.is_empty());
        inspect(&self.trainer.model, &self.trainer.tokenizer, &probe.text, pair, probe.mask, probe.pad_to)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn the_default_lab_inspects_the_default_probe() {
        let lab = Lab::fresh(DEFAULT_CORPUS, 0).unwrap();
        let info = lab.info();
        assert_eq!((info.layers, info.heads, info.hidden), (2, 4, 64));
        let seen = lab.inspect(&ProbeInput::default()).unwrap();
        assert_eq!(seen.tokens[0], "[CLS]");
        assert_eq!(seen.trace.layers.len(), 2);
        assert_eq!(seen.mask_predictions.len(), 1);
    }

    #[test]
    fn bad_input_is_a_message() {
        let lab = Lab::fresh(DEFAULT_CORPUS, 0).unwrap();
        let empty = ProbeInput { text: "   ".into(), pair: String::new(), ..ProbeInput::default() };
        assert!(lab.inspect(&empty).is_err());
        assert!(Lab::fresh("one sentence only", 0).is_err());
    }
}
