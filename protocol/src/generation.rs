//! Generation in the explorer: what the page asks the worker for (`GenerationSettings`) and
//! what each new token brings back (`GenerationStep`).

use engine::generate::{Decoding, GenerateOptions};
use serde::{Deserialize, Serialize};

/// The explorer's generation controls.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenerationSettings {
    /// "Max new": at most this many tokens.
    pub max_new: usize,
    /// "Sample" (true) or "Greedy".
    pub sample: bool,
    /// "Temperature" (Sample only).
    pub temperature: f32,
    /// "Top-k" (Sample only): None = every token.
    pub top_k: Option<usize>,
    /// Seed of the sampling generator.
    pub seed: u64,
}

impl Default for GenerationSettings {
    fn default() -> Self {
        GenerationSettings {
            max_new: 12,
            sample: false,
            temperature: 1.0,
            top_k: Some(5),
            seed: 0,
        }
    }
}

impl GenerationSettings {
    /// The engine's options, stopping after `stop_id` ([SEP]); the engine checks the values.
    pub fn options(&self, stop_id: Option<u32>) -> GenerateOptions {
        GenerateOptions {
            max_new: self.max_new,
            decoding: if self.sample {
                Decoding::Sample {
                    temperature: self.temperature,
                    top_k: self.top_k,
                }
            } else {
                Decoding::Greedy
            },
            seed: self.seed,
            stop_id,
            use_cache: true,
        }
    }
}

/// One generated token, as the explorer shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenerationStep {
    pub token: String,
    pub id: u32,
    /// softmax probability of the token, before temperature and top-k.
    pub prob: f32,
    /// The five most probable candidates and their probabilities, most probable first.
    pub top: Vec<(String, f32)>,
    /// The KV cache after this token, and what it would be with a key and a value per query
    /// head (no grouped K/V heads).
    pub kv_cache_bytes: usize,
    pub kv_cache_bytes_ungrouped: usize,
    /// An encoder–decoder's cross-attention keys and values of the source, kept beside the
    /// cache from the first token on (None for a decoder).
    #[serde(default)]
    pub cross_kv_bytes: Option<usize>,
}
