//! The encoder–decoder itself: two BERTs, and the parameters one optimiser updates.

use crate::config::BertConfig;
use crate::error::{EngineError, Result};
use crate::model::{BertForPreTraining, Params, Parts};
use serde_json::{Map, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct EncoderDecoder {
    /// A `BertModel`: no pre-training heads.
    pub encoder: BertForPreTraining,
    /// A `BertLMHeadModel` with cross-attention in every layer.
    pub decoder: BertForPreTraining,
    pub decoder_start_token_id: u32,
    pub pad_token_id: u32,
    /// The top-level config.json's other keys, kept so a saved config round-trips.
    pub extra: Map<String, Value>,
}

impl EncoderDecoder {
    /// A gradient buffer of the same structure, all zeros.
    pub fn zeros_like(&self) -> Self {
        EncoderDecoder {
            encoder: self.encoder.zeros_like(),
            decoder: self.decoder.zeros_like(),
            ..self.clone()
        }
    }

    /// An encoder–decoder of these halves' configs and parts (`BertForPreTraining::parts`
    /// of each; a trainer's own encoder has none, its decoder `Parts::LM_HEAD`), every
    /// parameter zero: the skeleton a gradient worker fills from a lead's weights
    /// (`Params::copy_from_flat`). The token ids are 0: training reads the batch's own.
    pub fn zeroed(
        (encoder, encoder_parts): (&BertConfig, Parts),
        (decoder, decoder_parts): (&BertConfig, Parts),
    ) -> Result<Self> {
        let model = EncoderDecoder {
            encoder: BertForPreTraining::zeroed(encoder, encoder_parts)?,
            decoder: BertForPreTraining::zeroed(decoder, decoder_parts)?,
            decoder_start_token_id: 0,
            pad_token_id: 0,
            extra: Map::new(),
        };
        model.check()?;
        Ok(model)
    }

    /// Every parameter under its checkpoint name (`encoder.…`, `decoder.…`).
    pub fn named_params(&self) -> Vec<(String, ndarray::ArrayViewD<'_, f32>)> {
        let encoder = self.encoder.named_params().into_iter().map(|(n, p)| {
            let n = n.strip_prefix("bert.").unwrap_or(&n).to_string();
            (format!("encoder.{n}"), p)
        });
        let decoder = self
            .decoder
            .named_params()
            .into_iter()
            .map(|(n, p)| (format!("decoder.{n}"), p));
        encoder.chain(decoder).collect()
    }

    pub(super) fn check(&self) -> Result<()> {
        let bad = |m: String| Err(EngineError::Config(m));
        let (e, d) = (&self.encoder.config, &self.decoder.config);
        if !(d.is_decoder && d.add_cross_attention) {
            return bad(
                "an encoder–decoder's decoder needs is_decoder and add_cross_attention".into(),
            );
        }
        if e.vocab_size != d.vocab_size {
            return bad(format!(
                "the encoder's vocabulary has {} tokens and the decoder's {}: one tokenizer serves both, so they must be equal",
                e.vocab_size, d.vocab_size
            ));
        }
        if e.hidden_size != d.hidden_size {
            return bad(format!(
                "the encoder's hidden size {} differs from the decoder's {}",
                e.hidden_size, d.hidden_size
            ));
        }
        // Every use of an encoder–decoder (inspect's logits, generation, training) reads the
        // decoder's next-token head.
        if self.decoder.cls.is_none() {
            return bad(
                "the decoder has no LM head (decoder.cls.predictions.* in model.safetensors): an encoder–decoder predicts its next token with it".into(),
            );
        }
        Ok(())
    }
}

/// Both halves' parameters, each under its half's prefix and the one-BERT name
/// (`encoder.bert.…`, `decoder.…`): one optimiser updates them all, so gradient clipping sees
/// the norm over both, and a kept training state names them as it always has.
impl Params for EncoderDecoder {
    fn params(&self) -> Vec<(String, ndarray::ArrayViewD<'_, f32>)> {
        let encoder = self.encoder.named_params().into_iter();
        let decoder = self.decoder.named_params().into_iter();
        let encoder = encoder.map(|(n, p)| (format!("encoder.{n}"), p));
        encoder
            .chain(decoder.map(|(n, p)| (format!("decoder.{n}"), p)))
            .collect()
    }

    fn params_mut(&mut self) -> Vec<(String, ndarray::ArrayViewMutD<'_, f32>)> {
        let encoder = self.encoder.named_params_mut().into_iter();
        let decoder = self.decoder.named_params_mut().into_iter();
        let encoder = encoder.map(|(n, p)| (format!("encoder.{n}"), p));
        encoder
            .chain(decoder.map(|(n, p)| (format!("decoder.{n}"), p)))
            .collect()
    }

    fn zeros(&self) -> Self {
        self.zeros_like()
    }
}
