//! The shape of the current model, as the worker tells the page (selectors, model view, header).

use crate::{Architecture, ModelKind};
use engine::BertConfig;
use serde::{Deserialize, Serialize};

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
    /// "word-level" for a model made here, "WordPiece" for a loaded checkpoint.
    pub tokenizer: String,
    /// Distinct words in the corpus a word-level vocabulary was built from (None otherwise).
    #[serde(default)]
    pub corpus_words: Option<usize>,
    /// K/V groups, positions and attention, as the training panel's Architecture group names
    /// them.
    #[serde(default)]
    pub architecture: Architecture,
    /// What it is: BERT, a decoder (on the corpus or Repeat), an encoder–decoder (then the
    /// sizes above are each half's; the Sentence is the source, the Target the decoder's), or
    /// a checkpoint loaded to inspect (with or without its pre-training heads).
    pub kind: ModelKind,
}

impl ModelInfo {
    /// A `kind` of model of `config`'s sizes and architecture, with a word-level vocabulary,
    /// before its name and parameter count are given.
    pub fn of_config(config: &BertConfig, kind: ModelKind) -> Self {
        ModelInfo {
            name: String::new(),
            layers: config.num_hidden_layers,
            heads: config.num_attention_heads,
            hidden: config.hidden_size,
            head_size: config.head_size(),
            intermediate: config.intermediate_size,
            max_positions: config.max_position_embeddings,
            vocab_size: config.vocab_size,
            parameters: 0,
            tokenizer: "word-level".into(),
            corpus_words: None,
            architecture: Architecture::of(config),
            kind,
        }
    }

    /// G: the K/V groups, H for plain multi-head attention.
    pub fn kv_groups(&self) -> usize {
        self.architecture.kv_heads.unwrap_or(self.heads)
    }
}
