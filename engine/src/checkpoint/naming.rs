//! `TensorNaming`: how the source named its tensors (prefix, gamma/beta, tied copies), so a
//! saved checkpoint uses the same names.

use serde::{Deserialize, Serialize};

/// How the source named its tensors, so a saved checkpoint uses the same names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorNaming {
    /// `"bert."` for `BertForPreTraining` (and other task models), `"roformer."` for
    /// `RoFormerForMaskedLM`, `""` for a bare `BertModel` or `RoFormerModel`.
    pub prefix: String,
    /// LayerNorm parameters called `gamma`/`beta` (TF-era checkpoints).
    pub gamma_beta: bool,
    /// The tied `cls.predictions.decoder.weight` was stored.
    pub decoder_weight: bool,
    /// `cls.predictions.decoder.bias` was stored (a copy of `cls.predictions.bias`).
    pub decoder_bias: bool,
    /// Tensors of the source that were not used (sorted); `position_ids` buffers are not listed.
    pub ignored: Vec<String>,
}

impl TensorNaming {
    /// `save_pretrained` of a `BertForPreTraining`: tied copies left out.
    pub fn pre_training() -> Self {
        TensorNaming {
            prefix: "bert.".into(),
            gamma_beta: false,
            decoder_weight: false,
            decoder_bias: false,
            ignored: Vec::new(),
        }
    }

    /// The stored name of a parameter known by its `named_params` name.
    pub(super) fn source_name(&self, name: &str) -> String {
        let name = match name.strip_prefix("bert.") {
            Some(rest) => format!("{}{rest}", self.prefix),
            None => name.to_string(),
        };
        if self.gamma_beta {
            if let Some(stem) = name.strip_suffix("LayerNorm.weight") {
                return format!("{stem}LayerNorm.gamma");
            }
            if let Some(stem) = name.strip_suffix("LayerNorm.bias") {
                return format!("{stem}LayerNorm.beta");
            }
        }
        name
    }
}

impl Default for TensorNaming {
    fn default() -> Self {
        Self::pre_training()
    }
}
