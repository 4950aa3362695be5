//! The shape of the current model, as the worker tells the page (selectors, model view, header).

use crate::{AttentionKind, Positions};
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
    /// False for a checkpoint without pre-training heads.
    pub has_heads: bool,
    /// "word-level" for a model made here, "WordPiece" for a loaded checkpoint.
    pub tokenizer: String,
    /// Distinct words in the corpus a word-level vocabulary was built from (None otherwise).
    #[serde(default)]
    pub corpus_words: Option<usize>,
    /// G, the K/V groups (grouped-query attention); None = one per head.
    #[serde(default)]
    pub kv_heads: Option<usize>,
    #[serde(default)]
    pub positions: Positions,
    #[serde(default)]
    pub attention: AttentionKind,
}

impl ModelInfo {
    /// G: the K/V groups, H for plain multi-head attention.
    pub fn kv_groups(&self) -> usize {
        self.kv_heads.unwrap_or(self.heads)
    }
}
