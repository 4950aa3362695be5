//! Generation from a decoder (`BertLMHeadModel`, `config.is_decoder`), one token at a time,
//! with a KV cache: the prompt runs through `forward` once (the prefill), and its keys and
//! values are kept per layer; each new token then computes only its own q, k and v and attends
//! over the cached keys and values:
//!
//!   x = LN(word[id] + position[t] + token_type[0])           (no position term if rotary)
//!   each layer: q, k, v = x·W_Qᵀ + b_Q, …  (k, v appended to the cache; q, k rotated at t if rotary)
//!               context_h = softmax(q_h·K_gᵀ/√D + A_h)·V_g     (g = h ÷ (H/G): grouped K/V;
//!                                                              A_h = −m_h·(t − j) with ALiBi;
//!                                                              `ops::attention`, one query row)
//!               a = LN(context·W_Oᵀ + b_O + x);  x = LN(GELU(a·W_Iᵀ + b_I)·W_2ᵀ + b_2 + a)
//!   logits = LN(GELU(x·W_tᵀ + b_t))·word_embeddingsᵀ + bias
//!
//! Causal attention is what makes this exact: no earlier position ever sees a later one, so the
//! cached keys and values never change. Without the cache (`use_cache: false`) every token runs
//! the whole sequence through `forward` again; both give the same logits (tests/generate.rs).

use crate::batch::{Batch, MaskMode};
use crate::config::BertConfig;
use crate::error::{EngineError, Result};
use crate::forward::{
    attention_options, cross_attention_options, forward_with_encoder, linear_forward, ln_forward,
    mlm_head_forward, EncoderStates, ForwardOptions, MlmScope,
};
use crate::model::{BertForPreTraining, BertLayer};
use crate::ops::attention::{self, AttentionOptions, Qkv, Spare};
use crate::ops::dropout::Noise;
use crate::ops::{gelu, math, rope};
use crate::rng::Rng;
use ndarray::{Array1, Array2, ArrayView2, ArrayView3, Axis};
use std::borrow::Borrow;

/// The most tokens one call may ask for; a model's positions usually allow fewer.
pub const MAX_NEW_TOKENS: usize = 4096;

/// How the next token is chosen from the logits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decoding {
    /// The most probable token.
    Greedy,
    /// A draw from softmax(logits / temperature), over the `top_k` most probable tokens when
    /// given.
    Sample {
        temperature: f32,
        top_k: Option<usize>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenerateOptions {
    /// N: at most this many new tokens.
    pub max_new: usize,
    pub decoding: Decoding,
    /// Seed of the sampling generator (unused by greedy decoding).
    pub seed: u64,
    /// Generation ends after this token ([SEP]), which is kept.
    pub stop_id: Option<u32>,
    /// Keys and values kept between tokens; without, each token re-runs the whole sequence.
    pub use_cache: bool,
}

impl GenerateOptions {
    pub fn greedy(max_new: usize, stop_id: Option<u32>) -> Self {
        GenerateOptions {
            max_new,
            decoding: Decoding::Greedy,
            seed: 0,
            stop_id,
            use_cache: true,
        }
    }
}

/// One generated token.
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratedToken {
    pub id: u32,
    /// softmax(logits)[id], before temperature and top-k.
    pub prob: f32,
    /// The five most probable tokens and their probabilities (before temperature and top-k),
    /// most probable first.
    pub top: Vec<(u32, f32)>,
    /// The keys and values of every position up to this token (`kv_cache_bytes`): the cache
    /// once this token is in it, whether or not this run keeps one. (A cached run computes the
    /// last token's k and v only if it goes on.)
    pub kv_cache_bytes: usize,
}

/// Bytes of the keys and values of `t` positions: L layers × (k, v) × t × G·D f32s.
pub fn kv_cache_bytes(config: &BertConfig, t: usize) -> usize {
    let kv_width = config.num_kv_heads() * config.head_size();
    config.num_hidden_layers * 2 * t * kv_width * std::mem::size_of::<f32>()
}

/// Bytes of an encoder–decoder's cross-attention keys and values for a source of `ts` tokens,
/// computed once before the first token: L layers × (k, v) × Ts × C f32s (its K and V
/// projections are C × C, one per query head).
pub fn cross_kv_bytes(config: &BertConfig, ts: usize) -> usize {
    config.num_hidden_layers * 2 * ts * config.hidden_size * std::mem::size_of::<f32>()
}

/// The same without grouped K/V heads (G = H: a key and a value per query head).
pub fn kv_cache_bytes_without_groups(config: &BertConfig, t: usize) -> usize {
    config.num_hidden_layers * 2 * t * config.hidden_size * std::mem::size_of::<f32>()
}

/// Every layer's keys and values so far, as `forward` computes them (rotated keys for rotary
/// models), and for an encoder–decoder's decoder each layer's cross-attention keys and values
/// of the source, computed once.
struct KvCache {
    k: Vec<Array2<f32>>,       // per layer (T, G·D)
    v: Vec<Array2<f32>>,       // per layer (T, G·D)
    cross_k: Vec<Array2<f32>>, // per layer (Ts, C); empty without cross-attention
    cross_v: Vec<Array2<f32>>, // per layer (Ts, C)
}

/// An encoder's output for one source, which a decoder with cross-attention reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub hidden: Array2<f32>, // (Ts, C)
    pub mask: Array2<u8>,    // (1, Ts) 1 = real token
}

/// A generation in progress: the sequence so far and the logits for its next token. `M` is
/// the model or a reference to it (a worker keeps its own copy while training is paused).
pub struct Generator<M: Borrow<BertForPreTraining>> {
    model: M,
    ids: Vec<u32>,
    prompt_len: usize,
    /// An encoder–decoder's source, as the encoder gave it.
    source: Option<Source>,
    cache: Option<KvCache>,
    next_logits: Array1<f32>, // (V)
    options: GenerateOptions,
    rng: Rng,
    finished: bool,
}

impl<M: Borrow<BertForPreTraining>> Generator<M> {
    /// Checks the model, prompt and options, then runs the prompt (the prefill).
    pub fn new(model: M, prompt: &[u32], options: GenerateOptions) -> Result<Self> {
        Self::with_source(model, prompt, None, options)
    }

    /// For an encoder–decoder's decoder: every layer also attends to `source` (the encoder's
    /// output); the prompt is the decoder's start ([CLS]).
    pub fn with_source(
        model: M,
        prompt: &[u32],
        source: Option<Source>,
        options: GenerateOptions,
    ) -> Result<Self> {
        check(model.borrow(), prompt, &options)?;
        let (next_logits, cache) =
            prefill(model.borrow(), prompt, source.as_ref(), options.use_cache)?;
        Ok(Generator {
            model,
            ids: prompt.to_vec(),
            prompt_len: prompt.len(),
            source,
            cache,
            next_logits,
            options,
            rng: Rng::new(options.seed),
            finished: false,
        })
    }

    pub fn model(&self) -> &BertForPreTraining {
        self.model.borrow()
    }

    /// What the generator was given as its model (an encoder–decoder's whole, say).
    pub fn weights(&self) -> &M {
        &self.model
    }

    /// The logits for the next token (V).
    pub fn logits(&self) -> &Array1<f32> {
        &self.next_logits
    }

    /// The prompt and every token generated so far.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Bytes the cache holds now (0 without a cache).
    pub fn cache_bytes(&self) -> usize {
        self.cache.as_ref().map_or(0, |c| {
            c.k.iter().chain(&c.v).map(|a| a.len()).sum::<usize>() * std::mem::size_of::<f32>()
        })
    }

    /// The stop token came or `max_new` tokens were generated: `next_token` gives no more.
    pub fn finished(&self) -> bool {
        self.finished || self.ids.len() - self.prompt_len >= self.options.max_new
    }

    /// Chooses the next token, appends it and computes the logits after it. None once the stop
    /// token came or `max_new` tokens were generated.
    pub fn next_token(&mut self) -> Result<Option<GeneratedToken>> {
        if self.finished() {
            return Ok(None);
        }
        let probs = softmax(self.next_logits.as_slice().expect("contiguous"));
        let id = choose(
            &self.next_logits,
            &probs,
            self.options.decoding,
            &mut self.rng,
        );
        self.ids.push(id);
        let token = GeneratedToken {
            id,
            prob: probs[id as usize],
            top: top_probabilities(&probs, 5),
            kv_cache_bytes: kv_cache_bytes(&self.model().config, self.ids.len()),
        };
        self.finished = Some(id) == self.options.stop_id
            || self.ids.len() - self.prompt_len >= self.options.max_new;
        if !self.finished {
            let model = self.model.borrow();
            self.next_logits = match &mut self.cache {
                Some(cache) => {
                    decode_step(model, cache, self.source.as_ref(), id, self.ids.len() - 1)?
                }
                None => prefill(model, &self.ids, self.source.as_ref(), false)?.0,
            };
        }
        Ok(Some(token))
    }
}

/// Generates up to `options.max_new` tokens after `prompt`.
pub fn generate(
    model: &BertForPreTraining,
    prompt: &[u32],
    options: GenerateOptions,
) -> Result<Vec<GeneratedToken>> {
    let mut generator = Generator::new(model, prompt, options)?;
    let mut out = Vec::new();
    while let Some(token) = generator.next_token()? {
        out.push(token);
    }
    Ok(out)
}

/// What generation needs, each with a message a user can act on.
fn check(model: &BertForPreTraining, prompt: &[u32], options: &GenerateOptions) -> Result<()> {
    let bad = |m: String| Err(EngineError::Input(m));
    let config = &model.config;
    if !config.is_decoder {
        return bad(
            "generation needs a decoder (is_decoder): this model's attention sees the \
                    whole sentence, so it never learned to predict the next token"
                .into(),
        );
    }
    if model.cls.is_none() {
        return bad(
            "this decoder has no LM head (cls.predictions): nothing gives next-token \
                    probabilities"
                .into(),
        );
    }
    if prompt.is_empty() {
        return bad("the prompt is empty: generation starts from at least one token".into());
    }
    if let Some(&id) = prompt.iter().find(|&&id| id as usize >= config.vocab_size) {
        return bad(format!(
            "token id {id} is outside the vocabulary of {}",
            config.vocab_size
        ));
    }
    let positions = config.max_input_tokens();
    if prompt.len() >= positions {
        return bad(format!(
            "the prompt has {} tokens and the model has {positions} positions: no room for a \
             new token (at most {} prompt tokens)",
            prompt.len(),
            positions - 1
        ));
    }
    if options.max_new == 0 {
        return bad("max new tokens is 0: ask for at least 1".into());
    }
    let room = positions - prompt.len();
    if options.max_new > room.min(MAX_NEW_TOKENS) {
        return bad(format!(
            "{} new tokens asked for, but after this {}-token prompt only {} fit in the model's \
             {positions} positions",
            options.max_new,
            prompt.len(),
            room.min(MAX_NEW_TOKENS)
        ));
    }
    if let Decoding::Sample { temperature, top_k } = options.decoding {
        if !(temperature > 0.0 && temperature.is_finite()) {
            return bad(format!(
                "temperature {temperature} must be above 0 (for the most probable token every \
                 time, use greedy decoding)"
            ));
        }
        if top_k == Some(0) {
            return bad("top-k 0 leaves no token to choose: use at least 1".into());
        }
    }
    Ok(())
}

/// The logits after the last token of `ids` (V), and with `keep` every layer's keys and values.
fn prefill(
    model: &BertForPreTraining,
    ids: &[u32],
    source: Option<&Source>,
    keep: bool,
) -> Result<(Array1<f32>, Option<KvCache>)> {
    let t = ids.len();
    let batch = Batch {
        input_ids: Array2::from_shape_vec((1, t), ids.to_vec()).expect("1 × T"),
        token_type_ids: Array2::zeros((1, t)),
        attention_mask: Array2::ones((1, t)),
        mlm_labels: None,
        nsp_labels: None,
    };
    let opts = ForwardOptions {
        trace: false,
        // The head runs on the last row only, below.
        mlm_scope: MlmScope::LabelledOnly,
        ..ForwardOptions::inspection(MaskMode::Causal)
    };
    let states = source.map(|s| EncoderStates {
        hidden: &s.hidden,
        mask: s.mask.view(),
    });
    let out = forward_with_encoder(model, &batch, &opts, states.as_ref(), &mut Rng::new(0))?;
    let (logits, _) = mlm_head_forward(model, &out.hidden, &[t - 1], Default::default());
    let cache = keep.then(|| {
        let mut cache = KvCache {
            k: Vec::new(),
            v: Vec::new(),
            cross_k: Vec::new(),
            cross_v: Vec::new(),
        };
        for layer in out.cache.layers {
            cache.k.push(layer.attention.k);
            cache.v.push(layer.attention.v);
            if let Some(cross) = layer.cross {
                cache.cross_k.push(cross.k);
                cache.cross_v.push(cross.v);
            }
        }
        cache
    });
    Ok((logits.row(0).to_owned(), cache))
}

/// The logits after token `id` at position `pos`, from the cache (which gains its k and v).
fn decode_step(
    model: &BertForPreTraining,
    cache: &mut KvCache,
    source: Option<&Source>,
    id: u32,
    pos: usize,
) -> Result<Array1<f32>> {
    let config = &model.config;
    let emb = &model.bert.embeddings;
    let eps = config.layer_norm_eps;
    let mut sum = emb.word_embeddings.row(id as usize).to_owned(); // (C)
    if let Some(positions) = &emb.position_embeddings {
        sum += &positions.row(pos);
    }
    sum += &emb.token_type_embeddings.row(0);
    let row = |a: Array1<f32>| a.insert_axis(Axis(0)); // (1, C)
    let mut x = ln_forward(row(sum).view(), &emb.layer_norm, eps).0; // (1, C)

    // The same attention as training and inspection, for one query row. The cache holds only
    // keys at or before this token, so the sequence's causal mask is, for this row, the
    // padding mask of the cache: every cached key is seen. With ALiBi this row is query
    // `pos`, so its distance to cached key j is pos − j.
    let (mut self_opts, rotary) =
        attention_options(config, &ForwardOptions::inspection(MaskMode::Padding))?;
    self_opts.mask = MaskMode::Padding;
    if let Some(alibi) = &mut self_opts.alibi {
        alibi.query_offset = pos;
    }
    let cross_opts = cross_attention_options(&self_opts);
    for (l, layer) in model.bert.layers.iter().enumerate() {
        let cross = source.map(|s| (&cache.cross_k[l], &cache.cross_v[l], s.mask.view()));
        x = layer_step(
            (layer, eps),
            x,
            (&mut cache.k[l], &mut cache.v[l]),
            (&self_opts, &cross_opts),
            cross,
            rotary.then_some(pos),
        );
    }
    let (logits, _) = mlm_head_forward(model, &x, &[0], Default::default());
    Ok(logits.row(0).to_owned())
}

/// One layer for one new token: x (1, C) in, (1, C) out; its k and v appended to the cache.
/// `rotary_at`: the token's position, when q and k are rotated.
fn layer_step(
    (layer, eps): (&BertLayer, f64),
    x: Array2<f32>,
    (k_cache, v_cache): (&mut Array2<f32>, &mut Array2<f32>), // (T, G·D) each
    (self_opts, cross_opts): (&AttentionOptions, &AttentionOptions),
    cross: Option<(&Array2<f32>, &Array2<f32>, ArrayView2<u8>)>, // (Ts, C), (Ts, C), (1, Ts)
    rotary_at: Option<usize>,
) -> Array2<f32> {
    let sa = &layer.attention.self_attention;
    let mut q = linear_forward(x.view(), &sa.query); // (1, H·D)
    let mut k = linear_forward(x.view(), &sa.key); // (1, G·D)
    let v = linear_forward(x.view(), &sa.value); // (1, G·D)
    if let Some(pos) = rotary_at {
        let d = q.ncols() / self_opts.heads.query();
        rope::rotate_row_at(q.as_slice_mut().expect("contiguous"), pos, d);
        rope::rotate_row_at(k.as_slice_mut().expect("contiguous"), pos, d);
    }
    k_cache.push_row(k.row(0)).expect("G·D wide");
    v_cache.push_row(v.row(0)).expect("G·D wide");

    let key_mask = Array2::<u8>::ones((1, k_cache.nrows())); // (1, T)
    let context = attend_one(&q, (k_cache, v_cache), key_mask.view(), self_opts);
    let attention_sum = linear_forward(context.view(), &layer.attention.output.dense) + &x;
    let a = ln_forward(
        attention_sum.view(),
        &layer.attention.output.layer_norm,
        eps,
    )
    .0;
    // Cross-attention: this token's query against the source's keys and values.
    let a = match (cross, &layer.crossattention) {
        (Some((k, v, mask)), Some(weights)) => {
            let sa = &weights.self_attention;
            let q = linear_forward(a.view(), &sa.query); // (1, C)
            let context = attend_one(&q, (k, v), mask, cross_opts);
            let sum = linear_forward(context.view(), &weights.output.dense) + &a;
            ln_forward(sum.view(), &weights.output.layer_norm, eps).0
        }
        _ => a,
    };
    let intermediate = gelu::forward(linear_forward(a.view(), &layer.intermediate.dense).view());
    let output_sum = linear_forward(intermediate.view(), &layer.output.dense) + &a;
    ln_forward(output_sum.view(), &layer.output.layer_norm, eps).0
}

/// The attention kernel for one query row q (1, H·Dk) over keys (T, G·Dk) and values
/// (T, G·Dv), key_mask (1, T): context (1, H·Dv). No dropout, so `rng` is never drawn from.
fn attend_one(
    q: &Array2<f32>,
    (keys, values): (&Array2<f32>, &Array2<f32>),
    key_mask: ArrayView2<u8>,
    opts: &AttentionOptions,
) -> Array2<f32> {
    fn one(a: &Array2<f32>) -> ArrayView3<'_, f32> {
        a.view().insert_axis(Axis(0)) // (1, ·, ·)
    }
    let input = Qkv {
        q: one(q),
        k: one(keys),
        v: one(values),
        key_mask,
    };
    let (context, _) = attention::forward(
        input,
        opts,
        &mut Noise::new(0, 0, 1),
        None,
        Spare::default(),
    );
    context.index_axis_move(Axis(0), 0)
}

fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = math::max(logits);
    let exps: Vec<f32> = logits.iter().map(|&z| math::exp(z - max)).collect();
    let total: f32 = exps.iter().sum();
    exps.into_iter().map(|e| e / total).collect()
}

/// The `n` most probable ids with their probabilities, most probable first (lower id first
/// on ties).
fn top_probabilities(probs: &[f32], n: usize) -> Vec<(u32, f32)> {
    let mut order: Vec<usize> = (0..probs.len()).collect();
    order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
    order
        .into_iter()
        .take(n)
        .map(|i| (i as u32, probs[i]))
        .collect()
}

fn choose(logits: &Array1<f32>, probs: &[f32], decoding: Decoding, rng: &mut Rng) -> u32 {
    match decoding {
        // The first maximum, as torch.argmax.
        Decoding::Greedy => {
            logits
                .iter()
                .enumerate()
                .fold(0, |best, (i, &z)| if z > logits[best] { i } else { best }) as u32
        }
        Decoding::Sample { temperature, top_k } => {
            let k = top_k.unwrap_or(probs.len()).min(probs.len());
            let candidates = top_probabilities(probs, k);
            // softmax(z/τ) over the candidates: z/τ − max(z)/τ, the most probable first.
            let best = logits[candidates[0].0 as usize];
            let weights: Vec<f32> = candidates
                .iter()
                .map(|&(i, _)| math::exp((logits[i as usize] - best) / temperature))
                .collect();
            let total: f32 = weights.iter().sum();
            let mut u = rng.uniform() * total;
            for (&(i, _), &w) in candidates.iter().zip(&weights) {
                if u < w {
                    return i;
                }
                u -= w;
            }
            candidates[candidates.len() - 1].0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_one_is_greedy_and_sampling_stays_in_the_top_k() {
        let logits = Array1::from(vec![0.1f32, 2.0, 1.9, -3.0, 0.5]);
        let probs = softmax(logits.as_slice().unwrap());
        let mut rng = Rng::new(5);
        let one = Decoding::Sample {
            temperature: 3.0,
            top_k: Some(1),
        };
        assert_eq!(choose(&logits, &probs, one, &mut rng), 1);
        let two = Decoding::Sample {
            temperature: 10.0,
            top_k: Some(2),
        };
        let drawn: Vec<u32> = (0..200)
            .map(|_| choose(&logits, &probs, two, &mut rng))
            .collect();
        assert!(drawn.iter().all(|&i| i == 1 || i == 2));
        // At a high temperature both candidates come up, about equally.
        let ones = drawn.iter().filter(|&&i| i == 1).count();
        assert!((70..130).contains(&ones), "{ones} of 200");
        assert_eq!(
            choose(&logits, &probs, Decoding::Greedy, &mut rng),
            1,
            "greedy takes the largest logit"
        );
    }

    /// Each candidate is drawn as often as softmax(z/τ) over the top k says.
    #[test]
    fn samples_follow_the_tempered_distribution() {
        let logits = Array1::from(vec![5.3f32, 0.0, -0.5, -1.0, -2.0, -9.0]);
        let probs = softmax(logits.as_slice().unwrap());
        let decoding = Decoding::Sample {
            temperature: 0.9,
            top_k: Some(5),
        };
        let tempered = softmax(&logits.iter().take(5).map(|z| z / 0.9).collect::<Vec<_>>());
        let mut rng = Rng::new(1);
        let n = 200_000;
        let mut counts = [0usize; 6];
        for _ in 0..n {
            counts[choose(&logits, &probs, decoding, &mut rng) as usize] += 1;
        }
        assert_eq!(counts[5], 0, "outside the top k");
        for k in 0..5 {
            let p = counts[k] as f32 / n as f32;
            let sd = (tempered[k] * (1.0 - tempered[k]) / n as f32).sqrt();
            assert!(
                (p - tempered[k]).abs() < 5.0 * sd + 1e-4,
                "{k}: {p} vs {}",
                tempered[k]
            );
        }
    }

    #[test]
    fn top_probabilities_are_sorted_and_sum_below_one() {
        let probs = softmax(&[1.0, 3.0, 2.0, 0.0]);
        let top = top_probabilities(&probs, 3);
        assert_eq!(
            top.iter().map(|&(i, _)| i).collect::<Vec<_>>(),
            vec![1, 2, 0]
        );
        assert!((probs.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }
}
