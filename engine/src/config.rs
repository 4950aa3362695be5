//! `config.json` as Hugging Face writes it for BERT, with the checks that make a model buildable.

use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_dropout")]
    pub hidden_dropout_prob: f32,
    #[serde(default = "default_dropout")]
    pub attention_probs_dropout_prob: f32,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_init")]
    pub initializer_range: f32,
    #[serde(default)]
    pub pad_token_id: usize,
    /// Everything else HF wrote (model_type, architectures, …), kept so a saved config round-trips.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_dropout() -> f32 {
    0.1
}
fn default_positions() -> usize {
    512
}
fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_init() -> f32 {
    0.02
}

impl BertConfig {
    /// A BERT with HF's defaults for everything but its size.
    pub fn new(
        vocab: usize,
        hidden: usize,
        layers: usize,
        heads: usize,
        intermediate: usize,
    ) -> Self {
        let mut extra = serde_json::Map::new();
        extra.insert("model_type".into(), "bert".into());
        extra.insert(
            "architectures".into(),
            serde_json::json!(["BertForPreTraining"]),
        );
        extra.insert("position_embedding_type".into(), "absolute".into());
        BertConfig {
            vocab_size: vocab,
            hidden_size: hidden,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            intermediate_size: intermediate,
            hidden_act: default_act(),
            hidden_dropout_prob: default_dropout(),
            attention_probs_dropout_prob: default_dropout(),
            max_position_embeddings: default_positions(),
            type_vocab_size: default_type_vocab(),
            layer_norm_eps: default_eps(),
            initializer_range: default_init(),
            pad_token_id: 0,
            extra,
        }
    }

    /// Preset "tiny": hidden 64, 2 layers, 4 heads, intermediate 256.
    pub fn tiny(vocab: usize) -> Self {
        let mut c = Self::new(vocab, 64, 2, 4, 256);
        c.max_position_embeddings = 128;
        c
    }

    /// Preset "small": hidden 256, 4 layers, 4 heads, intermediate 1024.
    pub fn small(vocab: usize) -> Self {
        let mut c = Self::new(vocab, 256, 4, 4, 1024);
        c.max_position_embeddings = 128;
        c
    }

    pub fn from_json(text: &str) -> Result<Self> {
        let config: BertConfig = serde_json::from_str(text)
            .map_err(|e| EngineError::Config(format!("config.json is not a BERT config: {e}")))?;
        config.validate()?;
        Ok(config)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a config always serialises")
    }

    /// D = C / H.
    pub fn head_size(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    pub fn validate(&self) -> Result<()> {
        let err = |m: String| Err(EngineError::Config(m));
        let sizes = [
            ("vocab_size", self.vocab_size),
            ("hidden_size", self.hidden_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("num_attention_heads", self.num_attention_heads),
            ("intermediate_size", self.intermediate_size),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", self.type_vocab_size),
        ];
        for (name, value) in sizes {
            if value == 0 {
                return err(format!("{name} must be positive"));
            }
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return err(format!(
                "hidden_size {} is not divisible by num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if !matches!(self.hidden_act.as_str(), "gelu" | "gelu_python") {
            return err(format!(
                "unknown activation {:?}: only the exact erf GELU (\"gelu\") is supported",
                self.hidden_act
            ));
        }
        for (name, p) in [
            ("hidden_dropout_prob", self.hidden_dropout_prob),
            (
                "attention_probs_dropout_prob",
                self.attention_probs_dropout_prob,
            ),
        ] {
            if !(0.0..1.0).contains(&p) {
                return err(format!("{name} must be in [0, 1), got {p}"));
            }
        }
        if !(self.layer_norm_eps > 0.0 && self.layer_norm_eps.is_finite()) {
            return err(format!(
                "layer_norm_eps must be positive, got {}",
                self.layer_norm_eps
            ));
        }
        if self.pad_token_id >= self.vocab_size {
            return err(format!(
                "pad_token_id {} is outside the vocabulary of {}",
                self.pad_token_id, self.vocab_size
            ));
        }
        if let Some(kind) = self
            .extra
            .get("position_embedding_type")
            .and_then(|v| v.as_str())
        {
            if kind != "absolute" {
                return err(format!(
                    "position_embedding_type {kind:?} is not supported (only \"absolute\")"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_hidden_not_divisible_by_heads() {
        let mut c = BertConfig::tiny(100);
        c.num_attention_heads = 5;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("not divisible"), "{e}");
    }

    #[test]
    fn rejects_unknown_activation_and_keeps_unknown_fields() {
        let mut c = BertConfig::tiny(100);
        c.hidden_act = "swish".into();
        assert!(c.validate().unwrap_err().to_string().contains("swish"));
        let text = BertConfig::tiny(100).to_json();
        let back = BertConfig::from_json(&text).unwrap();
        assert_eq!(back.extra.get("model_type").unwrap(), "bert");
        assert_eq!(back, BertConfig::tiny(100));
    }

    #[test]
    fn malformed_json_is_an_error_not_a_panic() {
        assert!(BertConfig::from_json("{").is_err());
        assert!(BertConfig::from_json("{\"hidden_size\": 8}").is_err());
    }
}
