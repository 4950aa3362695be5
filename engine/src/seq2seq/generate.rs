//! Generation: the source encoded once, then the decoder token by token reading it.

use super::batch::one_row;
use super::model::EncoderDecoder;
use crate::batch::MaskMode;
use crate::error::{EngineError, Result};
use crate::forward::{forward, ForwardOptions};
use crate::generate::{GenerateOptions, GeneratedToken, Generator, Source};
use crate::model::BertForPreTraining;
use crate::rng::Rng;

/// The source (its ids, all real tokens) through the encoder: what the decoder's
/// cross-attention reads while generating.
pub fn encode(model: &EncoderDecoder, source: &[u32]) -> Result<Source> {
    model.check()?;
    if source.is_empty() {
        return Err(EngineError::Input(
            "the source is empty: give at least one token".into(),
        ));
    }
    let positions = model.encoder.config.max_input_tokens();
    if source.len() > positions {
        return Err(EngineError::Input(format!(
            "the source has {} tokens and the encoder has {positions} positions",
            source.len()
        )));
    }
    let batch = one_row(source);
    let opts = ForwardOptions {
        trace: false,
        ..ForwardOptions::inspection(MaskMode::Padding)
    };
    let out = forward(&model.encoder, &batch, &opts, &mut Rng::new(0))?;
    Ok(Source {
        hidden: out.hidden,
        mask: batch.attention_mask,
    })
}

/// Generation from the decoder start ([CLS]), reading `source`'s encoding.
pub fn generator<'m>(
    model: &'m EncoderDecoder,
    source: &[u32],
    options: GenerateOptions,
) -> Result<Generator<&'m BertForPreTraining>> {
    let encoded = encode(model, source)?;
    Generator::with_source(
        &model.decoder,
        &[model.decoder_start_token_id],
        Some(encoded),
        options,
    )
}

/// Up to `options.max_new` tokens of the target for `source`.
pub fn generate(
    model: &EncoderDecoder,
    source: &[u32],
    options: GenerateOptions,
) -> Result<Vec<GeneratedToken>> {
    let mut g = generator(model, source, options)?;
    let mut out = Vec::new();
    while let Some(t) = g.next_token()? {
        out.push(t);
    }
    Ok(out)
}
