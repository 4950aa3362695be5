//! `attention-lab inspect`: every intermediate of attention for one text, as JSON.

use crate::args::Spec;
use crate::json::{self, Rows};
use crate::{flags, load_checkpoint, usage, CliError};
use engine::inspect::{inspect, MaskPrediction};
use engine::{HeadTrace, MaskMode};
use serde::Serialize;

pub const SPEC: Spec = Spec {
    flags: &["model", "text", "pair", "mask", "pad-to"],
    help: "\
attention-lab inspect --model DIR --text TEXT [--pair TEXT] [--mask padding|causal|none] [--pad-to N]

Runs the checkpoint in DIR (config.json, model.safetensors, vocab.txt[, tokenizer_config.json])
on [CLS] TEXT [SEP] (or [CLS] TEXT [SEP] PAIR [SEP]) without dropout and prints one JSON object:
  tokens, input_ids, token_type_ids, attention_mask, truncated (cut to max_position_embeddings)
  layers: [{\"heads\": [{\"q\", \"k\", \"v\", \"scores\", \"scaled\", \"masked\", \"weights\", \"context\"}]}]
          q, k, v, context are T×d_k; scores = QKᵀ, scaled = QKᵀ/√d_k, masked = scaled + M
          (masked-out entries null), weights = softmax(masked); all T×T with row = query
  hidden: the last layer's output, T×hidden
  with pre-training heads only: mlm_logits (T×vocab), nsp_logits ([IsNext, NotNext]),
  p_is_next (softmax of nsp_logits; meaningful for a pair), mask_predictions (top 5 per [MASK])

  --mask padding   padding keys masked (BERT's own mask; default)
  --mask causal    padding and future keys masked (query i sees keys j ≤ i)
  --mask none      nothing masked, padding included
  --pad-to N       append [PAD] up to N tokens",
};

#[derive(Serialize)]
struct Head {
    q: Rows,
    k: Rows,
    v: Rows,
    scores: Rows,
    scaled: Rows,
    masked: Rows,
    weights: Rows,
    context: Rows,
}

#[derive(Serialize)]
struct Layer {
    heads: Vec<Head>,
}

#[derive(Serialize)]
struct Output<'a> {
    tokens: &'a [String],
    input_ids: &'a [u32],
    token_type_ids: &'a [u32],
    attention_mask: &'a [u8],
    truncated: bool,
    mask: MaskMode,
    layers: Vec<Layer>,
    hidden: Rows,
    #[serde(skip_serializing_if = "Option::is_none")]
    mlm_logits: Option<Rows>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nsp_logits: Option<[f32; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p_is_next: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mask_predictions: Option<&'a [MaskPrediction]>,
}

fn head(h: &HeadTrace) -> Head {
    Head {
        q: json::rows(&h.q),
        k: json::rows(&h.k),
        v: json::rows(&h.v),
        scores: json::rows(&h.scores),
        scaled: json::rows(&h.scaled),
        masked: json::rows(&h.masked),
        weights: json::rows(&h.weights),
        context: json::rows(&h.context),
    }
}

pub fn parse_mask(value: Option<&str>) -> Result<MaskMode, crate::args::UsageError> {
    match value {
        None | Some("padding") => Ok(MaskMode::Padding),
        Some("causal") => Ok(MaskMode::Causal),
        Some("none") => Ok(MaskMode::None),
        Some(other) => Err(crate::args::UsageError(format!(
            "--mask must be padding, causal or none, got {other:?}"
        ))),
    }
}

pub fn run(args: &[String]) -> Result<(), CliError> {
    let Some(f) = flags(args, &SPEC)? else {
        return Ok(());
    };
    let dir = usage(f.required("model"), &SPEC)?;
    let text = usage(f.required("text"), &SPEC)?;
    let mask = usage(parse_mask(f.optional("mask")), &SPEC)?;
    let pad_to = usage(f.parsed::<usize>("pad-to", "a number of tokens"), &SPEC)?;
    let checkpoint = load_checkpoint(dir)?;
    let ins = inspect(
        &checkpoint.model,
        &checkpoint.tokenizer,
        text,
        f.optional("pair"),
        mask,
        pad_to,
    )?;
    if ins.truncated {
        eprintln!(
            "note: the input was cut to {} tokens (max_position_embeddings)",
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
        hidden: json::rows(&ins.hidden),
        mlm_logits: ins.mlm_logits.as_ref().map(json::rows),
        nsp_logits: ins.nsp_logits,
        p_is_next: ins.p_is_next,
        mask_predictions: heads.then_some(&ins.mask_predictions[..]),
    });
    Ok(())
}
