//! What each setting accepts, in one place: the settings panel checks what the user types with
//! these, and `restore` checks what an earlier visit left in the browser with the same rules.

use crate::lab::{OptimizerChoice, Preset};
use engine::batch::MaskMode;

/// Largest batch the panel offers (memory and step time grow with it).
pub const MAX_BATCH: usize = 64;
/// T of the training batches: at least [CLS] a [SEP] b [SEP], at most the presets' positions.
pub const MAX_LEN: std::ops::RangeInclusive<usize> = 5..=128;

pub fn learning_rate(v: f64) -> Result<f64, String> {
    if v > 0.0 && v.is_finite() {
        Ok(v)
    } else {
        Err("the learning rate must be a positive number".into())
    }
}

pub fn batch_size(v: f64) -> Result<usize, String> {
    if (1.0..=MAX_BATCH as f64).contains(&v) && v.fract() == 0.0 {
        Ok(v as usize)
    } else {
        Err(format!(
            "the batch size must be a whole number from 1 to {MAX_BATCH}"
        ))
    }
}

pub fn mask_prob(v: f64) -> Result<f32, String> {
    if v > 0.0 && v <= 1.0 {
        Ok(v as f32)
    } else {
        Err("the mask probability must be in (0, 1]".into())
    }
}

pub fn seed(v: f64) -> Result<u64, String> {
    // Below 2^53, where every whole f64 (a typed number) is exact.
    if v >= 0.0 && v.fract() == 0.0 && v < 9.0e15 {
        Ok(v as u64)
    } else {
        Err("the seed must be a whole number ≥ 0".into())
    }
}

pub fn max_len(v: f64) -> Result<usize, String> {
    let (lo, hi) = (*MAX_LEN.start(), *MAX_LEN.end());
    if (lo as f64..=hi as f64).contains(&v) && v.fract() == 0.0 {
        Ok(v as usize)
    } else {
        Err(format!(
            "the training length must be a whole number of tokens from {lo} to {hi}"
        ))
    }
}

/// The names the panel's selects use.
pub fn preset(v: &str) -> Result<Preset, String> {
    match v.to_ascii_lowercase().as_str() {
        "tiny" => Ok(Preset::Tiny),
        "small" => Ok(Preset::Small),
        _ => Err("the preset must be tiny or small".into()),
    }
}

pub fn optimizer(v: &str) -> Result<OptimizerChoice, String> {
    match v.to_ascii_lowercase().as_str() {
        "adam" => Ok(OptimizerChoice::Adam),
        "sgd" => Ok(OptimizerChoice::Sgd),
        _ => Err("the optimizer must be Adam or SGD".into()),
    }
}

/// The masks the page offers (training and probe alike): Padding or Causal.
pub fn mask(v: &str) -> Result<MaskMode, String> {
    match v.to_ascii_lowercase().as_str() {
        "padding" => Ok(MaskMode::Padding),
        "causal" => Ok(MaskMode::Causal),
        _ => Err("the mask must be Padding or Causal".into()),
    }
}
