//! What a run trains a model to do, and what the model must be for it.

use crate::error::{EngineError, Result};
use crate::model::BertForPreTraining;
use serde::{Deserialize, Serialize};

/// What a run trains the model to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// BERT's pre-training (`BertForPreTraining`): masked tokens and next-sentence prediction.
    #[default]
    MlmNsp,
    /// A decoder (`BertLMHeadModel`, `is_decoder`): causal self-attention, each position
    /// predicting the token after it.
    NextToken,
}

impl Objective {
    /// What the model must be for this objective, or why it is not.
    pub fn check(self, model: &BertForPreTraining) -> Result<()> {
        let parts = model.parts();
        match (self, model.config.is_decoder) {
            (Objective::MlmNsp, false) if parts.heads && parts.nsp => Ok(()),
            (Objective::MlmNsp, false) => Err(EngineError::Training(no_heads_message())),
            (Objective::MlmNsp, true) => Err(EngineError::Training(
                "this is a decoder (is_decoder): its attention is causal and it has no NSP head, \
                 so it trains on the next-token objective, not MLM + NSP"
                    .into(),
            )),
            (Objective::NextToken, true) if parts.heads => Ok(()),
            (Objective::NextToken, true) => Err(EngineError::Training(
                "this decoder has no LM head (cls.predictions): it can be inspected, not trained"
                    .into(),
            )),
            (Objective::NextToken, false) => Err(EngineError::Training(
                "next-token training needs a decoder (config is_decoder: true, a BertLMHeadModel); \
                 this model is an encoder"
                    .into(),
            )),
        }
    }
}

pub(crate) fn no_heads_message() -> String {
    "this checkpoint has no pre-training heads (cls.predictions, cls.seq_relationship): it can be \
     inspected, not pre-trained"
        .into()
}
