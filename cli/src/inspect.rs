//! `attention-lab inspect`: every intermediate of attention for one text, as JSON.

use crate::args::value;
use crate::attention_flags::{AttentionFlags, Mask};
use crate::json;
use crate::{load_checkpoint, CliError, COMMAND_HELP};
use engine::forward::ForwardOptions;
use engine::inspect::{inspect_with, MaskPrediction};
use engine::trace::AsRows;
use engine::{HeadTrace, MaskMode, Matrix, TileStep};
use serde::Serialize;
use std::path::PathBuf;

/// Every intermediate of attention for one text, as JSON
///
/// Runs the checkpoint in DIR (config.json, model.safetensors, vocab.txt[, tokenizer_config.json])
/// on [CLS] TEXT [SEP] (or [CLS] TEXT [SEP] PAIR [SEP]) without dropout and prints one JSON object.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
#[command(
    help_template = COMMAND_HELP,
    after_help = "\
Output, one JSON object:
  tokens, input_ids, token_type_ids, attention_mask, truncated (cut to max_position_embeddings; rotary models take at least 512 tokens)
  layers: [{\"heads\": [{\"kv_group\", \"q\", \"k\", \"v\", \"scores\", \"scaled\", \"masked\", \"weights\", \"context\"}]}]
          q, k, v, context are T×d_k (k, v: the head's K/V group's); scores = QKᵀ, scaled = QKᵀ/√d_k,
          masked = scaled + M (masked-out entries null), weights = softmax(masked); all T×T, row = query
          rotary models: also q_rotated, k_rotated (scores are built from them)
          linear attention: also phi_q, phi_k; weights are the implied φ(q)·φ(k) ÷ normaliser;
          scores, scaled, masked are null
          --attention tiled: also tiles, [{\"q_block\", \"k_block\", \"row_max\", \"row_sum\"}] in schedule order
  hidden: the last layer's output, T×hidden
  with pre-training heads only: mlm_logits (T×vocab), nsp_logits ([IsNext, NotNext]),
  p_is_next (softmax of nsp_logits; meaningful for a pair), mask_predictions (top 5 per [MASK])

An encoder–decoder checkpoint (model_type \"encoder-decoder\") takes --text SOURCE --target TARGET:
  source_tokens ([CLS] source [SEP]), target_tokens ([CLS] then the target's: the decoder's input)
  encoder_layers: as layers above
  decoder_layers: [{\"self\": [heads], \"cross\": [heads]}], self causal (Tt×Tt), cross Tt×Ts
          (target rows, source columns)
  logits: Tt×vocab, the next-token logits after each target position"
)]
pub struct Args {
    /// Checkpoint directory
    #[arg(long, value_name = "DIR")]
    model: PathBuf,
    /// First segment
    #[arg(long, allow_hyphen_values = true, value_parser = value::<String>("valid UTF-8"))]
    text: String,
    /// Second segment (a sentence pair)
    #[arg(long, allow_hyphen_values = true, value_parser = value::<String>("valid UTF-8"))]
    pair: Option<String>,
    /// Attention mask
    #[arg(long, value_enum, default_value_t = Mask::Padding)]
    mask: Mask,
    /// Append [PAD] up to N tokens
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = value::<usize>("a whole number of tokens"))]
    pad_to: Option<usize>,
    #[command(flatten)]
    attention: AttentionFlags,
    /// Encoder–decoder checkpoints: the target (the decoder reads [CLS] then its tokens)
    #[arg(long, allow_hyphen_values = true, value_parser = value::<String>("valid UTF-8"))]
    target: Option<String>,
}

/// One head. `k`, `v` are its K/V group's. Rotary models add `q_rotated`, `k_rotated`; ALiBi
/// models `alibi_bias` (T × T, −m_h·|i − j|, which `masked` includes and `scaled` not); linear
/// attention adds `phi_q`, `phi_k` and has no `scores`, `scaled`, `masked` (null); tiled
/// attention adds its schedule, `tiles`.
#[derive(Serialize)]
struct Head<'a> {
    kv_group: usize,
    q: AsRows<'a>,
    k: AsRows<'a>,
    v: AsRows<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    q_rotated: Option<AsRows<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    k_rotated: Option<AsRows<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phi_q: Option<AsRows<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phi_k: Option<AsRows<'a>>,
    scores: Option<AsRows<'a>>,
    scaled: Option<AsRows<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    alibi_bias: Option<AsRows<'a>>,
    masked: Option<AsRows<'a>>,
    weights: AsRows<'a>,
    context: AsRows<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tiles: Option<&'a [TileStep]>,
}

#[derive(Serialize)]
struct Layer<'a> {
    heads: Vec<Head<'a>>,
}

#[derive(Serialize)]
struct Output<'a> {
    tokens: &'a [String],
    input_ids: &'a [u32],
    token_type_ids: &'a [u32],
    attention_mask: &'a [u8],
    truncated: bool,
    mask: MaskMode,
    layers: Vec<Layer<'a>>,
    hidden: AsRows<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mlm_logits: Option<AsRows<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nsp_logits: Option<[f32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p_is_next: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mask_predictions: Option<&'a [MaskPrediction]>,
}

fn head(h: &HeadTrace) -> Head<'_> {
    // Linear attention has no scores: the engine leaves them empty.
    fn scores(m: &Matrix) -> Option<AsRows<'_>> {
        (!m.is_empty()).then(|| m.as_rows())
    }
    Head {
        kv_group: h.kv_group,
        q: h.q.as_rows(),
        k: h.k.as_rows(),
        v: h.v.as_rows(),
        q_rotated: h.q_rotated.as_ref().map(Matrix::as_rows),
        k_rotated: h.k_rotated.as_ref().map(Matrix::as_rows),
        phi_q: h.phi_q.as_ref().map(Matrix::as_rows),
        phi_k: h.phi_k.as_ref().map(Matrix::as_rows),
        scores: scores(&h.scores),
        scaled: scores(&h.scaled),
        alibi_bias: h.alibi_bias.as_ref().map(Matrix::as_rows),
        masked: scores(&h.masked),
        weights: h.weights.as_rows(),
        context: h.context.as_rows(),
        tiles: h.tiles.as_deref(),
    }
}

/// A decoder layer of an encoder–decoder: its causal self-attention and its cross-attention.
#[derive(Serialize)]
struct DecoderLayer<'a> {
    #[serde(rename = "self")]
    self_heads: Vec<Head<'a>>,
    cross: Vec<Head<'a>>,
}

#[derive(Serialize)]
struct Seq2SeqOutput<'a> {
    source_tokens: &'a [String],
    target_tokens: &'a [String],
    encoder_layers: Vec<Layer<'a>>,
    decoder_layers: Vec<DecoderLayer<'a>>,
    logits: AsRows<'a>,
}

/// `inspect --text SOURCE --target TARGET` on an encoder–decoder.
fn seq2seq(a: &Args) -> Result<(), CliError> {
    let target = a.target.as_deref().ok_or_else(|| {
        crate::args::UsageError::new(
            "inspect",
            "an encoder–decoder needs --target (the output text, may be empty)",
        )
    })?;
    let softmax = a.attention.resolve("inspect")?;
    let default_attention = softmax == engine::ops::attention::Softmax::default();
    if a.pair.is_some()
        || a.pad_to.is_some()
        || !matches!(a.mask, Mask::Padding)
        || !default_attention
    {
        return Err(crate::args::UsageError::new(
            "inspect",
            "--pair, --pad-to, --mask, --window and --attention are not for encoder–decoders (the source is padded, the decoder causal)",
        )
        .into());
    }
    let checkpoint = crate::load_seq2seq_checkpoint(&a.model)?;
    let ins = engine::seq2seq::inspect(&checkpoint.model, &checkpoint.tokenizer, &a.text, target)?;
    json::print(&Seq2SeqOutput {
        source_tokens: &ins.source_tokens,
        target_tokens: &ins.target_tokens,
        encoder_layers: ins
            .encoder
            .layers
            .iter()
            .map(|l| Layer {
                heads: l.heads.iter().map(head).collect(),
            })
            .collect(),
        decoder_layers: ins
            .decoder
            .layers
            .iter()
            .map(|l| DecoderLayer {
                self_heads: l.heads.iter().map(head).collect(),
                cross: l.cross_heads.iter().map(head).collect(),
            })
            .collect(),
        logits: ins.logits.as_rows(),
    });
    Ok(())
}

pub fn run(a: &Args) -> Result<(), CliError> {
    if crate::is_encoder_decoder_dir(&a.model) {
        return seq2seq(a);
    }
    if a.target.is_some() {
        return Err(crate::args::UsageError::new(
            "inspect",
            "--target is for encoder–decoder checkpoints",
        )
        .into());
    }
    let mask = MaskMode::from(a.mask);
    let softmax = a.attention.resolve("inspect")?;
    let opts = ForwardOptions {
        softmax,
        ..ForwardOptions::inspection(mask)
    };
    let checkpoint = load_checkpoint(&a.model)?;
    let ins = inspect_with(
        &checkpoint.model,
        &checkpoint.tokenizer,
        &a.text,
        a.pair.as_deref(),
        &opts,
        a.pad_to,
    )?;
    if ins.truncated {
        eprintln!(
            "note: the input was cut to {} tokens (the model's max_position_embeddings, or 512 for rotary positions)",
            ins.tokens.len()
        );
    }
    let heads = checkpoint.model.cls.is_some();
    json::print(&Output {
        tokens: &ins.tokens,
        input_ids: &ins.input_ids,
        token_type_ids: &ins.token_type_ids,
        attention_mask: &ins.attention_mask,
        truncated: ins.truncated,
        mask,
        layers: ins
            .trace
            .layers
            .iter()
            .map(|l| Layer {
                heads: l.heads.iter().map(head).collect(),
            })
            .collect(),
        hidden: ins.hidden.as_rows(),
        mlm_logits: ins.mlm_logits.as_ref().map(Matrix::as_rows),
        nsp_logits: ins.nsp_logits,
        p_is_next: ins.p_is_next,
        mask_predictions: heads.then_some(&ins.mask_predictions[..]),
    });
    Ok(())
}
