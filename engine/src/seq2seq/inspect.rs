//! What the page shows of an encoder–decoder: every attention of both stacks, traced.

use super::batch::{one_row, Seq2SeqBatch};
use super::model::EncoderDecoder;
use super::pass::{forward_seq2seq, Seq2SeqOutput};
use crate::batch::MaskMode;
use crate::config::BertConfig;
use crate::error::{EngineError, Result};
use crate::forward::{ForwardOptions, ForwardOutput};
use crate::inspect::Inspection;
use crate::rng::Rng;
use crate::tokenizer::Tokenizer;
use crate::trace::{AttentionTrace, Matrix};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// What `inspect` shows of an encoder–decoder on one source and target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Seq2SeqInspection {
    /// `[CLS] source [SEP]`.
    pub source_tokens: Vec<String>,
    /// `[CLS]` then the target's tokens: the decoder's input, as generation sees it.
    pub target_tokens: Vec<String>,
    pub encoder: AttentionTrace,
    /// Every layer's causal self-attention (`heads`) and cross-attention (`cross_heads`: Tt
    /// rows of target tokens, Ts columns of source tokens).
    pub decoder: AttentionTrace,
    /// Tt×V: the next-token logits after each target position.
    pub logits: Matrix,
}

/// The decoder's input for `target` text: `[CLS]` (the decoder start) then its tokens, as
/// generation sees it.
pub fn decoder_input(model: &EncoderDecoder, tokenizer: &Tokenizer, target: &str) -> Vec<u32> {
    let mut ids = vec![model.decoder_start_token_id];
    ids.extend(tokenizer.token_ids(target));
    ids
}

/// The source `[CLS] source [SEP]` (padded with [PAD] up to `pad_to`) through the encoder and
/// `target_ids` through the decoder, every attention traced: the pass both inspections share.
fn traced_pass(
    model: &EncoderDecoder,
    tokenizer: &Tokenizer,
    source: &str,
    target_ids: &[u32],
    pad_to: Option<usize>,
) -> Result<(crate::tokenizer::Encoding, Seq2SeqOutput)> {
    model.check()?;
    let source_positions = model.encoder.config.max_input_tokens();
    if let Some(n) = pad_to.filter(|&n| n > source_positions) {
        return Err(EngineError::Input(format!(
            "cannot pad the source to {n} tokens: the encoder has only {source_positions} positions"
        )));
    }
    let enc = tokenizer.encode(source, None, source_positions, pad_to)?;
    if enc.truncated {
        return Err(EngineError::Input(format!(
            "the source does not fit the encoder's {source_positions} positions ([CLS] and [SEP] included)"
        )));
    }
    let positions = model.decoder.config.max_input_tokens();
    if target_ids.is_empty() || target_ids.len() > positions {
        return Err(EngineError::Input(format!(
            "the target has {} tokens with [CLS]; the decoder has {positions} positions",
            target_ids.len()
        )));
    }
    let vocab_size = model.decoder.config.vocab_size;
    if let Some(id) = target_ids.iter().find(|&&id| id as usize >= vocab_size) {
        return Err(EngineError::Input(format!(
            "token id {id} is outside the vocabulary of {vocab_size}"
        )));
    }
    let mut source = one_row(&enc.input_ids);
    source.attention_mask =
        Array2::from_shape_vec((1, enc.attention_mask.len()), enc.attention_mask.clone())
            .expect("1 × Ts");
    let batch = Seq2SeqBatch {
        source,
        target: one_row(target_ids),
    };
    let out = forward_seq2seq(
        model,
        &batch,
        &ForwardOptions::inspection(MaskMode::Padding),
        &mut Rng::new(0),
    )?;
    Ok((enc, out))
}

fn trace_of(o: &mut ForwardOutput) -> Result<AttentionTrace> {
    o.trace
        .take()
        .ok_or_else(|| EngineError::Input("the forward pass recorded no trace".into()))
}

/// The model on `source` and `target` text, every attention traced.
pub fn inspect(
    model: &EncoderDecoder,
    tokenizer: &Tokenizer,
    source: &str,
    target: &str,
) -> Result<Seq2SeqInspection> {
    let target_ids = decoder_input(model, tokenizer, target);
    let (enc, mut out) = traced_pass(model, tokenizer, source, &target_ids, None)?;
    let vocab = tokenizer.vocab();
    let name = |id: &u32| vocab.token(*id).unwrap_or(crate::vocab::UNK).to_string();
    let logits = out.decoder.mlm_logits.as_ref().ok_or_else(|| {
        EngineError::Input("the decoder has no LM head: no next-token logits".into())
    })?;
    let logits = Matrix::from_view(logits.view());
    Ok(Seq2SeqInspection {
        source_tokens: enc.tokens,
        target_tokens: target_ids.iter().map(name).collect(),
        encoder: trace_of(&mut out.encoder)?,
        decoder: trace_of(&mut out.decoder)?,
        logits,
    })
}

/// `inspect_ids` with the decoder input made from `target` text (`decoder_input`): what the
/// page shows of its Sentence and Target.
pub fn inspect_texts(
    model: &EncoderDecoder,
    tokenizer: &Tokenizer,
    source: &str,
    target: &str,
    pad_to: Option<usize>,
) -> Result<Inspection> {
    inspect_ids(
        model,
        tokenizer,
        source,
        &decoder_input(model, tokenizer, target),
        pad_to,
    )
}

/// What the page shows of an encoder–decoder on `source` text and the decoder input
/// `target_ids` (`decoder_input`, or the start and what generation made so far): the
/// decoder's inspection (its causal self-attention in `heads`, its cross-attention in
/// `cross_heads`), with the encoder's in `source`. `pad_to` pads the source with [PAD], which
/// the encoder and every cross-attention row then mask.
pub fn inspect_ids(
    model: &EncoderDecoder,
    tokenizer: &Tokenizer,
    source: &str,
    target_ids: &[u32],
    pad_to: Option<usize>,
) -> Result<Inspection> {
    let (enc, mut out) = traced_pass(model, tokenizer, source, target_ids, pad_to)?;
    let vocab = tokenizer.vocab();
    let side = |tokens: Vec<String>,
                ids: Vec<u32>,
                attention_mask: Vec<u8>,
                mask: MaskMode,
                config: &BertConfig,
                out: &mut ForwardOutput|
     -> Result<Inspection> {
        let trace = trace_of(out)?;
        let t = ids.len();
        Ok(Inspection {
            tokens,
            input_ids: ids,
            token_type_ids: vec![0; t],
            attention_mask,
            truncated: false,
            mask,
            scaling: config.attention_scaling,
            attention: config.attention_type,
            rollout: crate::inspect::rollout(&trace),
            trace,
            hidden: Matrix::from_view(out.hidden.view()),
            mlm_logits: out.mlm_logits.as_ref().map(|l| Matrix::from_view(l.view())),
            nsp_logits: None,
            mask_predictions: Vec::new(),
            p_is_next: None,
            source: None,
        })
    };
    let encoder = side(
        enc.tokens,
        enc.input_ids,
        enc.attention_mask,
        MaskMode::Padding,
        &model.encoder.config,
        &mut out.encoder,
    )?;
    let target_tokens = target_ids
        .iter()
        .map(|id| vocab.token(*id).unwrap_or(crate::vocab::UNK).to_string())
        .collect();
    let mut decoder = side(
        target_tokens,
        target_ids.to_vec(),
        vec![1; target_ids.len()],
        MaskMode::Causal,
        &model.decoder.config,
        &mut out.decoder,
    )?;
    decoder.source = Some(Box::new(encoder));
    Ok(decoder)
}
