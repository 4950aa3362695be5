//! One text in, everything the visualiser draws out: the encoding, the attention trace of every
//! layer and head, the last hidden state, and what the pre-training heads make of it.
//! Plain, serialisable data: the web app's snapshot and the CLI's `inspect`.

use crate::batch::{Batch, MaskMode};
use crate::config::{AttentionScaling, AttentionType};
use crate::error::{EngineError, Result};
use crate::forward::{forward, ForwardOptions};
use crate::model::BertForPreTraining;
use crate::rng::Rng;
use crate::tokenizer::{Encoding, Tokenizer};
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
    /// The text was cut to the model's longest input (`BertConfig::max_input_tokens`).
    pub truncated: bool,
    pub mask: MaskMode,
    /// What the traced `scaled` scores are: QKᵀ/√d_k, or QKᵀ itself (`"none"`).
    #[serde(default)]
    pub scaling: AttentionScaling,
    /// What the trace's attention is: softmax (scores, weights) or linear (φ(Q), φ(K), and the
    /// weights they imply), so a reader matches on the kind instead of guessing from the trace.
    #[serde(default)]
    pub attention: AttentionType,
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
    /// An encoder–decoder's encoder on the source (`seq2seq::inspect_ids`): this inspection is
    /// then the decoder's, its layers' `cross_heads` reading the source's tokens. None for one
    /// BERT.
    #[serde(default)]
    pub source: Option<Box<Inspection>>,
}

/// Encodes `text` (and `pair`), cut to the model's longest input and padded with `[PAD]` up to
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
    let max_len = model.config.max_input_tokens();
    if let Some(n) = pad_to {
        if n > max_len {
            return Err(EngineError::Input(format!(
                "cannot pad to {n} tokens: the model has only {max_len} positions"
            )));
        }
    }
    let (text, text_answers) = known_answers(text, tokenizer)?;
    let (pair, pair_answers) = match pair {
        Some(p) => {
            let (p, a) = known_answers(p, tokenizer)?;
            (Some(p), a)
        }
        None => (None, Vec::new()),
    };
    let enc = tokenizer.encode(&text, pair.as_deref(), max_len, pad_to)?;
    inspect_encoding(model, tokenizer, enc, [&text_answers, &pair_answers], opts)
}

/// The model on exactly these ids (one segment, no padding, no [SEP] added): a decoder's
/// prompt and what it generated so far, as generation sees them.
pub fn inspect_ids(
    model: &BertForPreTraining,
    tokenizer: &Tokenizer,
    ids: &[u32],
    opts: &ForwardOptions,
) -> Result<Inspection> {
    let max_len = model.config.max_input_tokens();
    if ids.is_empty() || ids.len() > max_len {
        return Err(EngineError::Input(format!(
            "{} tokens: the model takes 1 to {max_len}",
            ids.len()
        )));
    }
    let vocab = tokenizer.vocab();
    let enc = Encoding {
        tokens: ids
            .iter()
            .map(|&id| vocab.token(id).unwrap_or(crate::vocab::UNK).to_string())
            .collect(),
        input_ids: ids.to_vec(),
        token_type_ids: vec![0; ids.len()],
        attention_mask: vec![1; ids.len()],
        truncated: false,
    };
    inspect_encoding(model, tokenizer, enc, [&[], &[]], opts)
}

/// The forward pass on one encoded sequence, and what the page shows of it. `answers` are the
/// known answers of each segment's `[MASK]`s, in order.
fn inspect_encoding(
    model: &BertForPreTraining,
    tokenizer: &Tokenizer,
    enc: Encoding,
    [text_answers, pair_answers]: [&[Option<Answer>]; 2],
    opts: &ForwardOptions,
) -> Result<Inspection> {
    // A decoder's attention is causal whatever the call asked (`forward`).
    let mask = if model.config.is_decoder {
        MaskMode::Causal
    } else {
        opts.mask
    };
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
        // A decoder's logits at a [MASK] predict the token after it, not the masked one.
        _ if model.config.is_decoder => Vec::new(),
        (Some(logits), Ok(mask_id)) => {
            // The k-th [MASK] of a segment is its text's k-th (truncation cuts segments' ends).
            let mut seen = [0usize; 2];
            (0..t)
                .filter(|&i| enc.input_ids[i] == mask_id)
                .map(|i| {
                    let segment = (enc.token_type_ids[i] as usize).min(1);
                    let answers = [text_answers, pair_answers][segment];
                    let answer = answers.get(seen[segment]).cloned().flatten();
                    seen[segment] += 1;
                    let top = top_k(logits.row(i), tokenizer);
                    MaskPrediction {
                        position: i,
                        correct: answer.as_ref().map(|(id, _)| top[0].id == *id),
                        answer: answer.map(|(_, token)| token),
                        top,
                    }
                })
                .collect()
        }
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
        scaling: model.config.attention_scaling,
        attention: model.config.attention_type,
        trace,
        hidden: Matrix::from_view(out.hidden.view()),
        mlm_logits,
        nsp_logits,
        mask_predictions,
        p_is_next,
        source: None,
    })
}

/// A known answer of a `[MASK]`: its id and vocabulary token.
type Answer = (u32, String);

/// `[MASK:word]` in `text` masks "word" and records it as the answer: the text with each such
/// mark made a plain `[MASK]`, and per `[MASK]` in order its answer (id, vocabulary token), None
/// for a plain one. "word" must be one token of the vocabulary, not a special one.
fn known_answers(text: &str, tokenizer: &Tokenizer) -> Result<(String, Vec<Option<Answer>>)> {
    let bad = |m: String| EngineError::Input(m);
    let vocab = tokenizer.vocab();
    let special = vocab.special_ids();
    let (mut out, mut answers, mut rest) = (String::with_capacity(text.len()), Vec::new(), text);
    while let Some(at) = rest.find("[MASK") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        if let Some(r) = after.strip_prefix(']') {
            answers.push(None);
            out.push_str("[MASK]");
            rest = r;
        } else if let Some(r) = after.strip_prefix(':') {
            let close = r
                .find(']')
                .ok_or_else(|| bad("\"[MASK:\" needs a closing \"]\": write [MASK:word]".into()))?;
            let word = r[..close].trim();
            if word.is_empty() {
                return Err(bad(
                    "[MASK:] needs the answer after the colon: [MASK:word]".into()
                ));
            }
            let ids = tokenizer.token_ids(word);
            match ids[..] {
                [id] if !special.contains(&id) => {
                    let token = vocab.token(id).unwrap_or(word).to_string();
                    answers.push(Some((id, token)));
                }
                _ => {
                    return Err(bad(format!(
                        "[MASK:{word}]: \"{word}\" is not one token of the vocabulary, so it cannot be a masked answer"
                    )))
                }
            }
            out.push_str(" [MASK] ");
            rest = &r[close + 1..];
        } else {
            out.push_str("[MASK");
            rest = after;
        }
    }
    out.push_str(rest);
    Ok((out, answers))
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

    /// Rotary positions have no table: a text longer than the config's P is inspected whole
    /// (it used to be cut at P), and so are ids. Learned absolute positions stop at P.
    #[test]
    fn a_rotary_model_takes_inputs_longer_than_its_positions() {
        let (mut model, tok) = setup();
        let text = "the cat sat on the mat . a dog ran on the mat . the dog sat";
        let cut = inspect(&model, &tok, text, None, MaskMode::Padding, None).unwrap();
        assert!(
            cut.truncated && cut.tokens.len() == 12,
            "absolute: {:?}",
            cut.tokens
        );
        model.config.position_embedding_type = crate::config::PositionEmbeddingType::Rotary;
        model.bert.embeddings.position_embeddings = None;
        let whole = inspect(&model, &tok, text, None, MaskMode::Padding, None).unwrap();
        assert!(!whole.truncated, "rotary: {:?}", whole.tokens);
        assert_eq!(whole.tokens.len(), 19);
        assert_eq!(whole.trace.layers[0].heads[0].weights.rows, 19);
        let ids = inspect_ids(
            &model,
            &tok,
            &whole.input_ids,
            &ForwardOptions::inspection(MaskMode::Causal),
        )
        .unwrap();
        assert_eq!(ids.tokens.len(), 19);
    }
}

#[cfg(test)]
mod trace_tests {
    //! Every traced stage recomputed from the model's weights with plain ndarray.
    use super::*;
    use crate::config::BertConfig;
    use crate::model::{LayerNorm, Linear};
    use crate::tokenizer::build_word_vocab;
    use crate::trace::{HeadTrace, LayerTrace};
    use ndarray::{Array2, ArrayView2, Axis};

    fn m(a: &Matrix) -> Array2<f32> {
        Array2::from_shape_vec((a.rows, a.cols), a.data.clone()).unwrap()
    }
    fn lin(x: &Array2<f32>, l: &Linear) -> Array2<f32> {
        x.dot(&l.weight.t()) + &l.bias
    }
    fn ln(x: &Array2<f32>, l: &LayerNorm, eps: f64) -> Array2<f32> {
        let mut y = x.clone();
        for mut row in y.rows_mut() {
            let mean = row.mean().unwrap();
            let var = row.mapv(|v| (v - mean).powi(2)).mean().unwrap();
            row.mapv_inplace(|v| (v - mean) / (var + eps as f32).sqrt());
        }
        y * &l.weight + &l.bias
    }
    fn gelu(x: &Array2<f32>) -> Array2<f32> {
        x.mapv(|v| 0.5 * v * (1.0 + crate::ops::math::erf(v / std::f32::consts::SQRT_2)))
    }
    fn close(a: ArrayView2<f32>, b: &Array2<f32>, what: &str) {
        assert_eq!(a.dim(), b.dim(), "{what}");
        let d = (&a - b).mapv(f32::abs).fold(0.0f32, |x, &y| x.max(y));
        assert!(d < 1e-4, "{what}: max difference {d}");
    }

    #[test]
    fn every_traced_stage_equals_the_forward_recomputed_from_the_weights() {
        let vocab = build_word_vocab("the cat sat on the mat. a dog ran.").unwrap();
        let config = BertConfig::new(vocab.len(), 8, 2, 2, 32);
        let model = BertForPreTraining::init(&config, &mut Rng::new(4)).unwrap();
        let tok = Tokenizer::word_level(vocab);
        let ins = inspect(
            &model,
            &tok,
            "the cat [MASK] on",
            Some("a dog"),
            MaskMode::Padding,
            Some(10),
        )
        .unwrap();
        let (tr, eps, t) = (&ins.trace, config.layer_norm_eps, 10);
        let emb = &model.bert.embeddings;
        let ids: Vec<usize> = ins.input_ids.iter().map(|&i| i as usize).collect();
        let tts: Vec<usize> = ins.token_type_ids.iter().map(|&i| i as usize).collect();
        let word = emb.word_embeddings.select(Axis(0), &ids);
        let pos = emb
            .position_embeddings
            .as_ref()
            .unwrap()
            .select(Axis(0), &(0..t).collect::<Vec<_>>());
        let tt = emb.token_type_embeddings.select(Axis(0), &tts);
        close(m(&tr.word_embeddings).view(), &word, "word");
        close(m(&tr.position_embeddings).view(), &pos, "position");
        close(m(&tr.token_type_embeddings).view(), &tt, "token type");
        let sum = &word + &pos + &tt;
        close(m(&tr.embeddings_sum).view(), &sum, "sum");
        let mut x = ln(&sum, &emb.layer_norm, eps);
        close(m(&tr.embeddings).view(), &x, "embeddings");
        for (l, layer) in model.bert.layers.iter().enumerate() {
            let lt = &tr.layers[l];
            close(m(&lt.input).view(), &x, "input");
            let attn = m(&lt.attention_output);
            let a = ln(&(&x + &attn), &layer.attention.output.layer_norm, eps);
            close(m(&lt.attention_norm).view(), &a, "attention_norm");
            let pre = lin(&a, &layer.intermediate.dense);
            close(m(&lt.intermediate_pre).view(), &pre, "intermediate_pre");
            assert_eq!((pre.nrows(), pre.ncols()), (t, 32));
            let act = gelu(&pre);
            close(m(&lt.intermediate).view(), &act, "intermediate");
            let ffn = lin(&act, &layer.output.dense);
            close(m(&lt.ffn_output).view(), &ffn, "ffn_output");
            x = ln(&(&a + &ffn), &layer.output.layer_norm, eps);
            close(m(&lt.output).view(), &x, "output");
        }
        let cls = model.cls.as_ref().unwrap();
        let pooled = lin(
            &x.slice(ndarray::s![..1, ..]).to_owned(),
            &model.bert.pooler.as_ref().unwrap().dense,
        )
        .mapv(f32::tanh);
        let heads = &tr.heads;
        close(m(heads.pooled.as_ref().unwrap()).view(), &pooled, "pooled");
        let nsp = lin(&pooled, cls.seq_relationship.as_ref().unwrap());
        let [a, b] = heads.nsp_logits.unwrap();
        assert!((a - nsp[[0, 0]]).abs() < 1e-5 && (b - nsp[[0, 1]]).abs() < 1e-5);
        let [p, q] = heads.nsp_probabilities.unwrap();
        assert!((p - a.exp() / (a.exp() + b.exp())).abs() < 1e-5 && (p + q - 1.0).abs() < 1e-6);
        let tr_ = &cls.predictions.transform;
        let transform = ln(&gelu(&lin(&x, &tr_.dense)), &tr_.layer_norm, eps);
        close(
            m(heads.mlm_transform.as_ref().unwrap()).view(),
            &transform,
            "mlm_transform",
        );
        // The tied decoder: logits = transform·word_embeddingsᵀ + bias.
        let logits = transform.dot(&emb.word_embeddings.t()) + &cls.predictions.bias;
        close(
            m(ins.mlm_logits.as_ref().unwrap()).view(),
            &logits,
            "logits",
        );
    }

    #[test]
    fn training_records_no_trace() {
        let vocab = build_word_vocab("the cat sat on the mat. a dog ran.").unwrap();
        let config = BertConfig::new(vocab.len(), 8, 1, 2, 16);
        let model = BertForPreTraining::init(&config, &mut Rng::new(4)).unwrap();
        let enc = Tokenizer::word_level(vocab)
            .encode("the cat", None, 8, None)
            .unwrap();
        let row = |v: Vec<u32>| Array2::from_shape_vec((1, v.len()), v).unwrap();
        let batch = Batch {
            input_ids: row(enc.input_ids.clone()),
            token_type_ids: row(enc.token_type_ids.clone()),
            attention_mask: Array2::from_shape_vec((1, 4), enc.attention_mask).unwrap(),
            mlm_labels: None,
            nsp_labels: Some(ndarray::Array1::from(vec![0])),
        };
        let out = forward(
            &model,
            &batch,
            &ForwardOptions::training(MaskMode::Padding),
            &mut Rng::new(0),
        )
        .unwrap();
        assert!(out.trace.is_none());
    }

    #[test]
    fn known_answers_are_scored_and_bad_marks_are_errors() {
        let vocab = build_word_vocab("the cat sat on the mat. a dog ran.").unwrap();
        let config = BertConfig::new(vocab.len(), 8, 1, 2, 16);
        let model = BertForPreTraining::init(&config, &mut Rng::new(4)).unwrap();
        let tok = Tokenizer::word_level(vocab);
        let ins = inspect(
            &model,
            &tok,
            "the [MASK:cat] sat [MASK] the",
            Some("a [MASK:dog]"),
            MaskMode::Padding,
            None,
        )
        .unwrap();
        let p = &ins.mask_predictions;
        assert_eq!(p.len(), 3);
        assert_eq!(ins.tokens[p[0].position], "[MASK]");
        assert_eq!(p[0].answer.as_deref(), Some("cat"));
        assert_eq!(p[0].correct, Some(p[0].top[0].token == "cat"));
        assert_eq!((p[1].answer.as_ref(), p[1].correct), (None, None));
        assert_eq!(p[2].answer.as_deref(), Some("dog"));
        assert_eq!(p[2].correct, Some(p[2].top[0].token == "dog"));
        for bad in [
            "the [MASK:] cat",
            "[MASK:a b]",
            "the [MASK:cat",
            "[MASK:😀]",
            "[MASK:zebra]",
            "[MASK:[SEP]]",
        ] {
            let e = inspect(&model, &tok, bad, None, MaskMode::Padding, None);
            assert!(
                matches!(e, Err(EngineError::Input(_))),
                "{bad}: {:?}",
                e.map(|_| ())
            );
        }
    }

    fn one_head(rows: [[f32; 3]; 3]) -> LayerTrace {
        LayerTrace {
            heads: vec![HeadTrace {
                weights: Matrix {
                    rows: 3,
                    cols: 3,
                    data: rows.concat(),
                },
                ..HeadTrace::default()
            }],
            ..LayerTrace::default()
        }
    }

    #[test]
    fn rollout_of_two_layers_by_hand() {
        // A1 = ½W1 + ½I = [[1,0,0],[.25,.75,0],[0,0,1]], A2 = [[.5,.5,0],[0,1,0],[0,0,1]];
        // R = A2·A1. Layer 1's third row sums to 2: renormalised to [0, 0, 1] first.
        let trace = AttentionTrace {
            layers: vec![
                one_head([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 2.0]]),
                one_head([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
            ],
            ..AttentionTrace::default()
        };
        let r = rollout(&trace);
        let want = [0.625, 0.375, 0.0, 0.25, 0.75, 0.0, 0.0, 0.0, 1.0];
        assert_eq!((r.rows, r.cols), (3, 3));
        for (got, want) in r.data.iter().zip(want) {
            assert!((got - want).abs() < 1e-6, "{:?}", r.data);
        }
    }

    #[test]
    fn rollout_rows_sum_to_one() {
        let vocab = build_word_vocab("the cat sat on the mat. a dog ran.").unwrap();
        let config = BertConfig::new(vocab.len(), 8, 3, 2, 16);
        let model = BertForPreTraining::init(&config, &mut Rng::new(9)).unwrap();
        let tok = Tokenizer::word_level(vocab);
        for mask in [MaskMode::Padding, MaskMode::Causal, MaskMode::None] {
            let ins = inspect(&model, &tok, "the cat sat", Some("a dog"), mask, Some(12)).unwrap();
            assert_eq!((ins.rollout.rows, ins.rollout.cols), (12, 12));
            for i in 0..12 {
                let s: f32 = ins.rollout.row(i).iter().sum();
                assert!((s - 1.0).abs() < 1e-5, "{mask:?} row {i}: {s}");
            }
        }
    }
}
