//! What a model is, said once: BERT (an encoder trained on MLM + NSP), a decoder (next token, on
//! the corpus or on the Repeat task), an encoder–decoder (a sequence-to-sequence task), or a
//! checkpoint loaded only to be looked at. The settings (`LabSettings::kind`: what a Reset
//! builds), the worker's model (`worker_core::lab::Model::kind`), `ModelInfo`, a link's shape,
//! the notebook's data, the PyTorch view's features and the command line all say which through
//! this type; `fields` holds the names a person reads and types for each.

use engine::repeat::RepeatTask;
use engine::seq2seq::Task;
use engine::train::Objective;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelKind {
    /// BERT (`BertForPreTraining`): an encoder trained on masked tokens and next-sentence
    /// prediction.
    #[default]
    Encoder,
    /// A decoder (`BertLMHeadModel`, `is_decoder`): causal self-attention, trained to predict
    /// each next token of the corpus's sentences, or of the Repeat task's (`repeat`).
    Decoder { repeat: Option<RepeatTask> },
    /// An encoder–decoder (`EncoderDecoderModel`) trained on a sequence-to-sequence task made
    /// from the corpus.
    EncoderDecoder(Task),
    /// A checkpoint loaded only to be looked at: it has no pre-training heads, or it cannot
    /// train on the corpus. `decoder`: its self-attention is causal; `heads`: it has its
    /// pre-training heads (it predicts tokens).
    InspectOnly { decoder: bool, heads: bool },
}

impl ModelKind {
    /// One model trained on `objective`: BERT for MLM + NSP; for next token, a decoder, on
    /// `repeat` when given.
    pub fn trained_on(objective: Objective, repeat: Option<RepeatTask>) -> ModelKind {
        match objective {
            Objective::MlmNsp => ModelKind::Encoder,
            Objective::NextToken => ModelKind::Decoder { repeat },
        }
    }

    /// The objective one model trains on, or would: a decoder's is next token, and BERT's
    /// MLM + NSP when it has the heads for it. None for an encoder–decoder, whose training is
    /// its task, and for a BERT loaded without heads.
    pub fn objective(self) -> Option<Objective> {
        match self {
            ModelKind::Encoder => Some(Objective::MlmNsp),
            ModelKind::Decoder { .. } => Some(Objective::NextToken),
            ModelKind::EncoderDecoder(_) => None,
            ModelKind::InspectOnly { decoder: true, .. } => Some(Objective::NextToken),
            ModelKind::InspectOnly { heads: true, .. } => Some(Objective::MlmNsp),
            ModelKind::InspectOnly { .. } => None,
        }
    }

    /// One model with causal self-attention: its mask is always causal, and it generates.
    pub fn decoder(self) -> bool {
        matches!(
            self,
            ModelKind::Decoder { .. } | ModelKind::InspectOnly { decoder: true, .. }
        )
    }

    pub fn encoder_decoder(self) -> bool {
        self.task().is_some()
    }

    /// Its loss is on next tokens and it can Generate: a decoder, or an encoder–decoder (whose
    /// decoder writes the target).
    pub fn next_token(self) -> bool {
        self.decoder() || self.encoder_decoder()
    }

    /// An encoder–decoder's task.
    pub fn task(self) -> Option<Task> {
        match self {
            ModelKind::EncoderDecoder(task) => Some(task),
            _ => None,
        }
    }

    /// A decoder's Repeat task, when it trains on one.
    pub fn repeat(self) -> Option<RepeatTask> {
        match self {
            ModelKind::Decoder { repeat } => repeat,
            _ => None,
        }
    }

    /// It has pre-training heads (it predicts tokens): every kind but a checkpoint loaded
    /// without them.
    pub fn has_heads(self) -> bool {
        !matches!(self, ModelKind::InspectOnly { heads: false, .. })
    }

    /// It trains: every kind but one loaded only to be looked at.
    pub fn trains(self) -> bool {
        !matches!(self, ModelKind::InspectOnly { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_says_what_it_is() {
        let repeat = Some(RepeatTask::default());
        let bert = ModelKind::trained_on(Objective::MlmNsp, repeat);
        assert_eq!(bert, ModelKind::Encoder, "Repeat is a decoder's task");
        let on_repeat = ModelKind::trained_on(Objective::NextToken, repeat);
        assert!(on_repeat.decoder() && on_repeat.next_token() && on_repeat.repeat() == repeat);
        let reverse = ModelKind::EncoderDecoder(Task::Reverse);
        assert!(reverse.encoder_decoder() && reverse.next_token() && !reverse.decoder());
        assert_eq!(
            (reverse.objective(), reverse.task()),
            (None, Some(Task::Reverse))
        );
        let headless = ModelKind::InspectOnly {
            decoder: false,
            heads: false,
        };
        assert!(!headless.has_heads() && !headless.trains() && headless.objective().is_none());
        let causal = ModelKind::InspectOnly {
            decoder: true,
            heads: true,
        };
        assert!(causal.decoder() && causal.objective() == Some(Objective::NextToken));
        assert!(bert.trains() && bert.has_heads() && !bert.next_token());
    }
}
