//! "KV cache (GQA)": the cache's bytes per token for G = H, this model's G and G = 1.

use super::{bytes_text, About, Axes, Claim, ClaimResult, History, Plot, VerdictForm};
use engine::experiments::{kv_cache_bytes_per_token, Series};
use serde::{Deserialize, Serialize};

pub struct KvCache;

/// `engine::experiments::kv_cache_bytes_per_token`, in words: K and V, every layer, G heads of
/// d_k floats of 4 bytes.
const BYTES_PER_TOKEN: &str = "2 · layers · G · d_k · 4";

impl About for KvCache {
    fn title(&self) -> &'static str {
        "KV cache (GQA)"
    }

    fn slug(&self) -> &'static str {
        "kv-cache"
    }

    fn lead(&self) -> &'static str {
        "How many bytes must a decoder keep for each token it has read while it generates? The chart compares heads with keys and values of their own against heads that share them (GQA)."
    }

    fn quote(&self) -> &'static str {
        "GQA \"reduces KV cache size\"."
    }

    fn method(&self) -> String {
        format!("KV-cache bytes per token, {BYTES_PER_TOKEN}, for G = H, this model's G and G = 1, at this model's size and at {}'s.", KvShape::llama2_70b().name)
    }
}

/// A model's attention shape, for the KV-cache claim.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KvShape {
    pub name: String,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
}

impl KvShape {
    /// The named larger model: Llama 2 70B ships with grouped-query attention, 8 K/V heads.
    pub fn llama2_70b() -> KvShape {
        KvShape {
            name: "Llama 2 70B".into(),
            layers: 80,
            heads: 64,
            kv_heads: 8,
            head_dim: 128,
        }
    }
}

impl KvCache {
    /// Bytes per token for G = H, the model's G and G = 1, for each shape.
    pub fn result(shapes: &[KvShape]) -> ClaimResult {
        let mut numbers = Vec::new();
        let series = shapes
            .iter()
            .map(|s| {
                let mut gs = vec![s.heads, s.kv_heads, 1];
                gs.dedup();
                let bytes: Vec<f64> = gs
                    .iter()
                    .map(|&g| kv_cache_bytes_per_token(s.layers, g, s.head_dim) as f64)
                    .collect();
                for (g, b) in gs.iter().zip(&bytes) {
                    let what = match *g {
                        g if g == s.heads => "multi-head".to_string(),
                        1 => "multi-query".to_string(),
                        _ => "grouped".to_string(),
                    };
                    numbers.push((
                        format!("{}, G = {g} ({what})", s.name),
                        format!("{} per token", bytes_text(*b)),
                    ));
                }
                Series {
                    name: format!(
                        "{} ({} layers, {} heads, d_k {})",
                        s.name, s.layers, s.heads, s.head_dim
                    ),
                    x: gs.iter().map(|&g| g as f64).collect(),
                    y: bytes,
                }
            })
            .collect();
        ClaimResult {
            measured_at: None,
            claim: Claim::KvCache,
            plots: vec![Plot {
                caption: format!("KV cache: bytes per token = {BYTES_PER_TOKEN}, by the number of K/V heads G"),
                x_label: "K/V heads G".into(),
                y_label: "bytes per token".into(),
                axes: Axes::LogLog,
                series,
                marks: Vec::new(),
            }],
            numbers,
            verdict: VerdictForm::BorneOut.says("Borne out, by construction: the cache holds G heads of K and V, so it shrinks in proportion to G; G = 1 keeps 1/H of multi-head attention's.".into()),
            heatmap: None,
            history: History::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_cache_bytes_shrink_with_g_for_both_models() {
        let tiny = KvShape {
            name: "This model".into(),
            layers: 2,
            heads: 4,
            kv_heads: 2,
            head_dim: 16,
        };
        let r = KvCache::result(&[tiny, KvShape::llama2_70b()]);
        assert_eq!(r.plots[0].series[0].x, [4.0, 2.0, 1.0]);
        assert_eq!(r.plots[0].series[0].y, [1024.0, 512.0, 256.0]);
        assert_eq!(r.plots[0].series[1].y[0], 2.0 * 80.0 * 64.0 * 128.0 * 4.0);
        assert!(r
            .numbers
            .iter()
            .any(|(k, v)| k == "Llama 2 70B, G = 8 (grouped)" && v == "655 kB per token"));
    }
}
