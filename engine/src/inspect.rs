//! One text in, everything the visualiser draws out: the encoding, the attention trace of every
//! layer and head, the last hidden state, and what the pre-training heads make of it.
//! Plain, serialisable data: the web app's snapshot and the CLI's `inspect`.

use crate::batch::{Batch, MaskMode};
use crate::error::{EngineError, Result};
use crate::forward::{forward, ForwardOptions};
use crate::model::BertForPreTraining;
use crate::rng::Rng;
use crate::tokenizer::Tokenizer;
use crate::trace::{AttentionTrace, Matrix};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

/// How many candidates `mask_predictions` lists per `[MASK]`.
pub const TOP_K: usize = 5;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub token: String,
    pub id: u32,
    /// softmax of the MLM logits at that position.
    pub probability: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaskPrediction {
    /// Position of the `[MASK]` token in `tokens`.
    pub position: usize,
    /// The `TOP_K` most probable tokens, most probable first.
    pub top: Vec<Candidate>,
    /// The known answer, when the text said `[MASK:word]`: the vocabulary's token for "word".
    pub answer: Option<String>,
    /// Whether the most probable token is the answer (when there is one).
    pub correct: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Inspection {
    pub tokens: Vec<String>,
    pub input_ids: Vec<u32>,
    pub token_type_ids: Vec<u32>,
    /// 1 = real token, 0 = padding.
    pub attention_mask: Vec<u8>,
    /// The text was cut to `max_position_embeddings` tokens.
    pub truncated: bool,
    pub mask: MaskMode,
    pub trace: AttentionTrace,
    /// Last layer's output (T×C).
    pub hidden: Matrix,
    /// T×V, when the model has pre-training heads.
    pub mlm_logits: Option<Matrix>,
    /// [IsNext, NotNext] logits, when the model has pre-training heads.
    pub nsp_logits: Option<[f32; 2]>,
    /// One entry per `[MASK]` in the input, when the model has pre-training heads.
    pub mask_predictions: Vec<MaskPrediction>,
    /// softmax(nsp_logits)[0]: P(second segment follows the first). Present whenever the heads
    /// are; only meaningful for a pair (for a single text BERT was never trained on it).
    pub p_is_next: Option<f32>,
    /// Attention rollout (Abnar & Zuidema 2020), T×T: row i = how much token i draws on each
    /// input token across all layers (`rollout`).
    pub rollout: Matrix,
}

/// Encodes `text` (and `pair`), cut to `max_position_embeddings` and padded with `[PAD]` up to
/// `pad_to`, and runs the model on it without dropout, recording the trace.
pub fn inspect(
    model: &BertForPreTraining,
    tokenizer: &Tokenizer,
    text: &str,
    pair: Option<&str>,
    mask: MaskMode,
    pad_to: Option<usize>,
) -> Result<Inspection> {
    let opts = ForwardOptions::inspection(mask);
    inspect_with(model, tokenizer, text, pair, &opts, pad_to)
}

/// `inspect` with the call's attention choices: `opts` is `ForwardOptions::inspection(mask)`
/// with `window` and `kernel` set as wanted.
pub fn inspect_with(
    model: &BertForPreTraining,
    tokenizer: &Tokenizer,
    text: &str,
    pair: Option<&str>,
    opts: &ForwardOptions,
    pad_to: Option<usize>,
) -> Result<Inspection> {
    let mask = opts.mask;
    let max_len = model.config.max_position_embeddings;
    if let Some(n) = pad_to {
        if n > max_len {
            return Err(EngineError::Input(format!(
                "cannot pad to {n} tokens: the model has only {max_len} positions"
            )));
        }
    }
    let enc = tokenizer.encode(text, pair, max_len, pad_to)?;
    let t = enc.input_ids.len();
    let row = |v: Vec<u32>| Array2::from_shape_vec((1, t), v).expect("one row of T ids");
    let batch = Batch {
        input_ids: row(enc.input_ids.clone()),
        token_type_ids: row(enc.token_type_ids.clone()),
        attention_mask: Array2::from_shape_vec((1, t), enc.attention_mask.clone())
            .expect("one row of T"),
        mlm_labels: None,
        nsp_labels: None,
    };
    // No dropout: the generator is never drawn from.
    let out = forward(model, &batch, opts, &mut Rng::new(0))?;
    let trace = out
        .trace
        .ok_or_else(|| EngineError::Input("the forward pass recorded no trace".into()))?;

    let mlm_logits = out.mlm_logits.as_ref().map(|l| Matrix::from_view(l.view()));
    let mask_predictions = match (&mlm_logits, tokenizer.vocab().mask_id()) {
        (Some(logits), Ok(mask_id)) => (0..t)
            .filter(|&i| enc.input_ids[i] == mask_id)
            .map(|i| MaskPrediction {
                position: i,
                top: top_k(logits.row(i), tokenizer),
                answer: None,
                correct: None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let nsp_logits = out.nsp_logits.as_ref().map(|l| [l[[0, 0]], l[[0, 1]]]);
    // softmax([a, b])[0] = 1 / (1 + e^(b − a))
    let p_is_next = nsp_logits.map(|[a, b]| 1.0 / (1.0 + (b - a).exp()));
    let rollout = rollout(&trace);
    Ok(Inspection {
        rollout,
        tokens: enc.tokens,
        input_ids: enc.input_ids,
        token_type_ids: enc.token_type_ids,
        attention_mask: enc.attention_mask,
        truncated: enc.truncated,
        mask,
        trace,
        hidden: Matrix::from_view(out.hidden.view()),
        mlm_logits,
        nsp_logits,
        mask_predictions,
        p_is_next,
    })
}

/// Attention rollout (Abnar & Zuidema 2020): R = A_L·…·A_1 with A_l = 0.5·Ā_l + 0.5·I, where
/// Ā_l is layer l's weights averaged over its heads, each row renormalised to sum to 1 (masked
/// entries are 0). The 0.5·I stands for the residual connection, which carries each token past
/// attention. T×T, row = query token; each row sums to 1. An approximation: it ignores the
/// values, W_O, the feed-forward blocks and LayerNorm, and treats attention as linear mixing.
pub fn rollout(trace: &AttentionTrace) -> Matrix {
    let Some(t) = trace
        .layers
        .first()
        .and_then(|l| l.heads.first())
        .map(|h| h.weights.rows)
    else {
        return Matrix::default();
    };
    let mut r = Array2::<f32>::eye(t); // (T, T)
    for layer in &trace.layers {
        let mut a = Array2::<f32>::zeros((t, t)); // (T, T) Ā, then 0.5·Ā + 0.5·I
        for head in &layer.heads {
            a += &ndarray::ArrayView2::from_shape((t, t), &head.weights.data)
                .expect("weights are T×T");
        }
        for (i, mut row) in a.rows_mut().into_iter().enumerate() {
            let sum: f32 = row.sum();
            if sum > 0.0 {
                row /= sum;
            }
            row *= 0.5;
            row[i] += 0.5;
        }
        r = a.dot(&r);
    }
    Matrix::from_view(r.view())
}

/// The `TOP_K` most probable tokens of one row of logits, softmax probabilities.
fn top_k(logits: &[f32], tokenizer: &Tokenizer) -> Vec<Candidate> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|&x| (x - max).exp()).sum();
    let mut ids: Vec<usize> = (0..logits.len()).collect();
    let k = TOP_K.min(ids.len());
    // Partial sort: the k largest first, then order those.
    let by_logit = |a: &usize, b: &usize| logits[*b].total_cmp(&logits[*a]);
    if k < ids.len() {
        ids.select_nth_unstable_by(k - 1, by_logit);
    }
    ids.truncate(k);
    ids.sort_by(by_logit);
    ids.into_iter()
        .map(|id| Candidate {
            // Ids past vocab.txt exist when the embeddings are padded (see the checkpoint module).
            token: tokenizer
                .vocab()
                .token(id as u32)
                .map_or_else(|| format!("[id {id}]"), str::to_string),
            id: id as u32,
            probability: (logits[id] - max).exp() / sum,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BertConfig;
    use crate::tokenizer::build_word_vocab;

    fn setup() -> (BertForPreTraining, Tokenizer) {
        let vocab = build_word_vocab("the cat sat on the mat. a dog ran.").unwrap();
        let mut config = BertConfig::new(vocab.len(), 8, 2, 2, 16);
        config.max_position_embeddings = 12;
        (
            BertForPreTraining::init(&config, &mut Rng::new(3)).unwrap(),
            Tokenizer::word_level(vocab),
        )
    }

    #[test]
    fn inspection_has_every_layer_head_and_the_heads_outputs() {
        let (model, tok) = setup();
        let ins = inspect(
            &model,
            &tok,
            "the cat [MASK] on the mat",
            Some("a dog"),
            MaskMode::Padding,
            Some(12),
        )
        .unwrap();
        assert_eq!(ins.tokens.len(), 12);
        assert_eq!(ins.tokens[3], "[MASK]");
        assert_eq!(&ins.tokens[11], "[PAD]");
        assert!(!ins.truncated);
        assert_eq!(ins.trace.layers.len(), 2);
        assert_eq!(ins.trace.layers[1].heads.len(), 2);
        let w = &ins.trace.layers[0].heads[1].weights;
        assert_eq!((w.rows, w.cols), (12, 12));
        // Padding: the [PAD] key gets no weight, and every row sums to 1.
        for r in 0..12 {
            assert_eq!(w.get(r, 11), 0.0);
            assert!((w.row(r).iter().sum::<f32>() - 1.0).abs() < 1e-5);
        }
        assert_eq!((ins.hidden.rows, ins.hidden.cols), (12, 8));
        let logits = ins.mlm_logits.as_ref().unwrap();
        assert_eq!((logits.rows, logits.cols), (12, tok.vocab().len()));
        assert_eq!(ins.mask_predictions.len(), 1);
        let top = &ins.mask_predictions[0].top;
        assert_eq!(ins.mask_predictions[0].position, 3);
        assert_eq!(top.len(), TOP_K);
        assert!(top.windows(2).all(|p| p[0].probability >= p[1].probability));
        let row = logits.row(3);
        let best = (0..row.len())
            .max_by(|&a, &b| row[a].total_cmp(&row[b]))
            .unwrap();
        assert_eq!(top[0].id as usize, best);
        let [a, b] = ins.nsp_logits.unwrap();
        assert!((ins.p_is_next.unwrap() - a.exp() / (a.exp() + b.exp())).abs() < 1e-6);
    }

    #[test]
    fn truncation_padding_limits_and_headless_models() {
        let (mut model, tok) = setup();
        let long = "the cat sat on the mat ".repeat(5);
        let ins = inspect(&model, &tok, &long, None, MaskMode::Causal, None).unwrap();
        assert!(ins.truncated);
        assert_eq!(ins.tokens.len(), 12);
        // Causal: query 0 sees only key 0.
        assert_eq!(ins.trace.layers[0].heads[0].weights.row(0)[0], 1.0);
        let e = inspect(&model, &tok, "the cat", None, MaskMode::Padding, Some(13))
            .unwrap_err()
            .to_string();
        assert!(e.contains("13"), "{e}");
        model.cls = None;
        let ins = inspect(&model, &tok, "the [MASK]", None, MaskMode::Padding, None).unwrap();
        assert!(ins.mlm_logits.is_none() && ins.nsp_logits.is_none() && ins.p_is_next.is_none());
        assert!(ins.mask_predictions.is_empty());
    }
}
