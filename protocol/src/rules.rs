//! What each setting accepts, in one place: the settings panel checks what the user types with
//! these, and `restore` checks what an earlier visit left in the browser with the same rules.

use crate::{LabError, LabResult, Preset};
use engine::batch::MaskMode;
use engine::optim::OptimizerKind;

/// Largest batch the panel offers (memory and step time grow with it).
pub const MAX_BATCH: usize = 64;
/// T of the training batches: at least [CLS] a [SEP] b [SEP], at most the presets' positions.
pub const MAX_LEN: std::ops::RangeInclusive<usize> = 5..=128;

pub fn learning_rate(v: f64) -> LabResult<f64> {
    if v > 0.0 && v.is_finite() {
        Ok(v)
    } else {
        bad("the learning rate must be a positive number")
    }
}

pub fn batch_size(v: f64) -> LabResult<usize> {
    if (1.0..=MAX_BATCH as f64).contains(&v) && v.fract() == 0.0 {
        Ok(v as usize)
    } else {
        bad(format!(
            "the batch size must be a whole number from 1 to {MAX_BATCH}"
        ))
    }
}

pub fn mask_prob(v: f64) -> LabResult<f32> {
    if v > 0.0 && v <= 1.0 {
        Ok(v as f32)
    } else {
        bad("the mask probability must be in (0, 1]")
    }
}

pub fn seed(v: f64) -> LabResult<u64> {
    // Below 2^53, where every whole f64 (a typed number) is exact.
    if v >= 0.0 && v.fract() == 0.0 && v < 9.0e15 {
        Ok(v as u64)
    } else {
        bad("the seed must be a whole number ≥ 0")
    }
}

pub fn max_len(v: f64) -> LabResult<usize> {
    let (lo, hi) = (*MAX_LEN.start(), *MAX_LEN.end());
    if (lo as f64..=hi as f64).contains(&v) && v.fract() == 0.0 {
        Ok(v as usize)
    } else {
        bad(format!(
            "the training length must be a whole number of tokens from {lo} to {hi}"
        ))
    }
}

/// The names the panel's selects use.
pub fn preset(v: &str) -> LabResult<Preset> {
    match v.to_ascii_lowercase().as_str() {
        "tiny" => Ok(Preset::Tiny),
        "small" => Ok(Preset::Small),
        _ => bad("the preset must be tiny or small"),
    }
}

pub fn optimizer(v: &str) -> LabResult<OptimizerKind> {
    OptimizerKind::from_name(v).map_or_else(|| bad("the optimizer must be Adam or SGD"), Ok)
}

/// The masks the page offers (training and probe alike): None, Padding or Causal.
pub fn mask(v: &str) -> LabResult<MaskMode> {
    match v.to_ascii_lowercase().as_str() {
        "none" => Ok(MaskMode::None),
        "padding" => Ok(MaskMode::Padding),
        "causal" => Ok(MaskMode::Causal),
        _ => bad("the mask must be None, Padding or Causal"),
    }
}

/// The "Pad to" field: blank = no padding, else a whole number.
pub fn pad_to(text: &str) -> LabResult<Option<usize>> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    t.parse::<usize>().map(Some).map_err(|_| {
        LabError::setting(format!(
            "Pad to: \"{t}\" is not a whole number of tokens (leave it empty for no padding)"
        ))
    })
}

fn bad<T>(why: impl Into<String>) -> LabResult<T> {
    Err(LabError::setting(why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_to_is_empty_or_a_whole_number() {
        assert_eq!(pad_to(""), Ok(None));
        assert_eq!(pad_to(" 12 "), Ok(Some(12)));
        assert!(pad_to("-3").unwrap_err().to_string().contains("-3"));
        assert!(pad_to("1e3").is_err());
    }

    #[test]
    fn every_rule_refuses_what_is_out_of_range() {
        assert!(learning_rate(0.0).is_err() && learning_rate(f64::NAN).is_err());
        assert_eq!(batch_size(8.0), Ok(8));
        assert!(batch_size(0.0).is_err() && batch_size(2.5).is_err());
        assert!(batch_size(MAX_BATCH as f64 + 1.0).is_err());
        assert!(mask_prob(0.0).is_err() && mask_prob(1.5).is_err());
        assert!(seed(-1.0).is_err() && seed(1e16).is_err());
        assert!(max_len(4.0).is_err() && max_len(129.0).is_err());
        assert_eq!(preset("Small"), Ok(Preset::Small));
        assert_eq!(optimizer("sgd"), Ok(OptimizerKind::Sgd));
        assert!(optimizer("lamb").is_err() && mask("diagonal").is_err());
        assert_eq!(mask("None"), Ok(MaskMode::None));
        assert_eq!(mask("causal"), Ok(MaskMode::Causal));
    }
}
