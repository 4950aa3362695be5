//! KV cache (GQA): this model's shape and Llama 2 70B's; in one go.

use super::{Models, Started};
use protocol::claims::{KvCache, KvShape};
use protocol::{LabError, LabResult};

pub fn start(models: &Models) -> LabResult<Started> {
    let c = &models.lab.ok_or_else(LabError::no_model)?.parts().0.config;
    let this = KvShape {
        name: "This model".into(),
        layers: c.num_hidden_layers,
        heads: c.num_attention_heads,
        kv_heads: c.num_key_value_heads.unwrap_or(c.num_attention_heads),
        head_dim: c.hidden_size / c.num_attention_heads.max(1),
    };
    Ok(Started::Done(KvCache::result(&[
        this,
        KvShape::llama2_70b(),
    ])))
}
