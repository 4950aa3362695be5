//! What a run holds beyond its checkpoint, so that a kept model trains on exactly as if it had
//! never stopped: the step count, the optimiser's step count and moments, and the generator's
//! state (batches, masking and dropout all draw from it). N steps in one go, or k steps, keep,
//! restore and N − k more, give the same weights. Also how many distinct words the corpus had,
//! when the vocabulary was built from it (the page says how many it kept).
//!
//! One safetensors file: the moments as F32 tensors under `Optimizer::moments`' names
//! (`bert.embeddings.word_embeddings.weight.exp_avg`, …), the numbers in its metadata.

use crate::checkpoint::dtype::{f32_bytes, to_f32};
use crate::error::{EngineError, Result};
use crate::optim::Optimizer;
use crate::rng::Rng;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::HashMap;

/// A run's state as `decode` hands it back (the optimiser is restored in place).
#[derive(Clone, Debug, PartialEq)]
pub struct RunState {
    pub step: u64,
    pub rng: Rng,
    pub corpus_words: Option<usize>,
}

/// The file's bytes for `run` with this optimiser.
pub fn encode(run: &RunState, optimizer: &Optimizer) -> Vec<u8> {
    encode_parts(run, &[("", optimizer)])
}

/// `encode` for a model trained by one optimiser per part (an encoder–decoder's halves): each
/// part's moments under its prefix (`encoder.`, `decoder.`). The parts share their step count.
pub fn encode_parts(run: &RunState, parts: &[(&str, &Optimizer)]) -> Vec<u8> {
    let optimizer = parts.first().expect("at least one optimiser").1;
    let tensors: Vec<(String, Vec<usize>, Vec<u8>)> = parts
        .iter()
        .flat_map(|(prefix, o)| {
            o.moments().into_iter().map(move |(name, m)| {
                (
                    format!("{prefix}{name}"),
                    m.shape().to_vec(),
                    f32_bytes(m.iter()),
                )
            })
        })
        .collect();
    let views = tensors.iter().map(|(name, shape, bytes)| {
        let view =
            TensorView::new(Dtype::F32, shape.clone(), bytes).expect("shape and byte count agree");
        (name.clone(), view)
    });
    let rng = run.rng.state().map(|x| format!("{x:016x}")).join(",");
    let mut metadata = HashMap::from([
        ("step".to_string(), run.step.to_string()),
        ("optimizer".into(), optimizer.config.kind.name().into()),
        ("optimizer_step".into(), optimizer.t.to_string()),
        ("rng".into(), rng),
    ]);
    if let Some(words) = run.corpus_words {
        metadata.insert("corpus_words".into(), words.to_string());
    }
    safetensors::tensor::serialize(views, Some(metadata)).expect("f32 tensors serialise")
}

/// Restores `optimizer` from `bytes` and returns the rest of the run's state. All or nothing:
/// on any error (not this file, another optimiser, another model) the optimiser is left as it
/// was.
pub fn decode(bytes: &[u8], optimizer: &mut Optimizer) -> Result<RunState> {
    decode_parts(bytes, &mut [("", optimizer)])
}

/// `decode` of `encode_parts`: every part's optimiser restored, or (on any error) none.
pub fn decode_parts(bytes: &[u8], parts: &mut [(&str, &mut Optimizer)]) -> Result<RunState> {
    let bad = |why: String| EngineError::Training(format!("the kept training state {why}"));
    let (_, header) = SafeTensors::read_metadata(bytes)
        .map_err(|e| bad(format!("is not a safetensors file: {e}")))?;
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| bad(format!("is not a safetensors file: {e}")))?;
    let meta = header.metadata().clone().unwrap_or_default();
    let field = |key: &str| {
        meta.get(key)
            .ok_or_else(|| bad(format!("has no \"{key}\"")))
    };
    let number = |key: &str| {
        field(key)?
            .parse::<u64>()
            .map_err(|_| bad(format!("has a malformed \"{key}\"")))
    };
    let kept_with = field("optimizer")?;
    let now = parts
        .first()
        .expect("at least one optimiser")
        .1
        .config
        .kind
        .name();
    if kept_with != now {
        return Err(bad(format!(
            "is {kept_with}'s, and the settings ask for {now}"
        )));
    }
    let (step, optimizer_step) = (number("step")?, number("optimizer_step")?);
    let rng = parse_rng(field("rng")?).ok_or_else(|| bad("has a malformed \"rng\"".into()))?;
    let corpus_words = if meta.contains_key("corpus_words") {
        Some(number("corpus_words")? as usize)
    } else {
        None
    };
    let read = |prefix: &str, name: &str, shape: &[usize]| {
        let name = format!("{prefix}{name}");
        let view = st
            .tensor(&name)
            .map_err(|_| bad(format!("has no tensor {name}: it is another model's")))?;
        if view.shape() != shape {
            return Err(bad(format!(
                "has {name} of shape {:?}, the model needs {shape:?}",
                view.shape()
            )));
        }
        to_f32(&name, &view)
    };
    if let [(prefix, optimizer)] = parts {
        // `restore` is all or nothing by itself.
        optimizer.restore(optimizer_step, |name, shape| read(prefix, name, shape))?;
    } else {
        // Restored into copies, so one part's failure leaves every optimiser as it was.
        let mut restored = Vec::with_capacity(parts.len());
        for (prefix, optimizer) in parts.iter() {
            let mut copy = (**optimizer).clone();
            copy.restore(optimizer_step, |name, shape| read(prefix, name, shape))?;
            restored.push(copy);
        }
        for ((_, optimizer), copy) in parts.iter_mut().zip(restored) {
            **optimizer = copy;
        }
    }
    Ok(RunState {
        step,
        rng,
        corpus_words,
    })
}

fn parse_rng(text: &str) -> Option<Rng> {
    let words: Vec<u64> = text
        .split(',')
        .map(|w| u64::from_str_radix(w, 16).ok())
        .collect::<Option<_>>()?;
    Rng::from_state(words.try_into().ok()?)
}
