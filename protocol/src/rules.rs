//! What each setting accepts, in one place: the settings panel checks what the user types with
//! these, and `restore` checks what an earlier visit left in the browser with the same rules.
//! The choices that are names of a kind of model (objective, task) are read where they are
//! written, in `fields`.

use crate::{Architecture, LabError, LabResult, Preset, ProbeKernel};
use engine::batch::MaskMode;
use engine::config::{AttentionScaling, AttentionType, PositionEmbeddingType};
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

/// The "Window" field: blank = no window, else a whole number of keys from 1 to `tokens` (the
/// probe's T, when known): a window of T or more already sees every key.
pub fn window(text: &str, tokens: Option<usize>) -> LabResult<Option<usize>> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let w = t.parse::<usize>().map_err(|_| {
        LabError::setting(format!(
            "Window: \"{t}\" is not a whole number of keys (leave it empty for no window)"
        ))
    })?;
    window_fits(w, tokens).map(Some)
}

/// A window W against the probe's T tokens: 1 ≤ W ≤ T.
pub fn window_fits(w: usize, tokens: Option<usize>) -> LabResult<usize> {
    if w == 0 {
        return bad(
            "Window: 0 keys would leave a query nothing to look at, not even itself (at least 1)",
        );
    }
    match tokens {
        Some(t) if w > t => bad(format!(
            "Window: {w} is more than the {t} tokens of this text (at most {t}; leave it empty for no window)"
        )),
        _ => Ok(w),
    }
}

/// The explorer's "Attention" select: Full or Tiled.
pub fn kernel(v: &str) -> LabResult<ProbeKernel> {
    match v.to_ascii_lowercase().as_str() {
        "full" => Ok(ProbeKernel::Full),
        "tiled" => Ok(ProbeKernel::Tiled),
        _ => bad("the attention kernel must be Full or Tiled"),
    }
}

/// "KV heads": a whole number G that divides the `heads` of the preset (each K/V group serves
/// H/G query heads).
pub fn kv_heads(v: f64, heads: usize) -> LabResult<usize> {
    if v >= 1.0 && v.fract() == 0.0 && v <= heads as f64 && heads.is_multiple_of(v as usize) {
        Ok(v as usize)
    } else {
        let options = kv_head_options(heads)
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        bad(format!(
            "KV heads must divide the {heads} heads: one of {options}"
        ))
    }
}

/// The divisors of `heads`, the "KV heads" choices (1 = multi-query, `heads` = multi-head).
pub fn kv_head_options(heads: usize) -> Vec<usize> {
    (1..=heads).filter(|g| heads.is_multiple_of(*g)).collect()
}

/// "Positions": Absolute, Rotary or ALiBi (by the engine's names, any case).
pub fn positions(v: &str) -> LabResult<PositionEmbeddingType> {
    PositionEmbeddingType::try_from(v.to_ascii_lowercase()).or_else(|_| {
        bad(format!(
            "the positions must be {}",
            or_list(&PositionEmbeddingType::ALL.map(|p| p.label()))
        ))
    })
}

/// "Positions" with "Attention", as the engine's config allows them together: ALiBi biases
/// softmax scores, which linear attention has not (`PositionEmbeddingType::refuses`).
pub fn architecture(a: Architecture) -> LabResult<Architecture> {
    match a.positions.refuses(a.attention) {
        Some(why) => bad(why),
        None => Ok(a),
    }
}

/// The training panel's "Attention": Softmax or Linear (by the engine's names, any case).
pub fn attention_type(v: &str) -> LabResult<AttentionType> {
    AttentionType::try_from(v.to_ascii_lowercase()).or_else(|_| {
        bad(format!(
            "the attention must be {}",
            or_list(&AttentionType::ALL.map(|a| a.label()))
        ))
    })
}

/// The training panel's "Scaling": ÷√d_k or None (by the engine's names, "sqrt" or "none").
pub fn scaling(v: &str) -> LabResult<AttentionScaling> {
    AttentionScaling::try_from(v.to_ascii_lowercase()).or_else(|_| {
        bad(format!(
            "the scaling must be {}",
            or_list(&AttentionScaling::ALL.map(|a| a.label()))
        ))
    })
}

/// "A, B or C".
fn or_list(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
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
    fn window_is_empty_or_a_whole_number_from_1_to_t() {
        assert_eq!(window("", Some(5)), Ok(None));
        assert_eq!(window(" 3 ", Some(5)), Ok(Some(3)));
        assert_eq!(window("5", Some(5)), Ok(Some(5)));
        assert_eq!(window("9", None), Ok(Some(9)));
        let zero = window("0", Some(5)).unwrap_err().to_string();
        assert!(zero.contains("at least 1"), "{zero}");
        let long = window("6", Some(5)).unwrap_err().to_string();
        assert!(long.contains("more than the 5 tokens"), "{long}");
        let word = window("two", Some(5)).unwrap_err().to_string();
        assert!(word.contains("\"two\" is not a whole number"), "{word}");
        assert!(window("-1", None).is_err() && window("2.5", None).is_err());
    }

    #[test]
    fn kv_heads_must_divide_the_heads() {
        assert_eq!(kv_head_options(4), [1, 2, 4]);
        assert_eq!(kv_head_options(12), [1, 2, 3, 4, 6, 12]);
        assert_eq!(kv_heads(2.0, 4), Ok(2));
        assert_eq!(kv_heads(4.0, 4), Ok(4));
        let three = kv_heads(3.0, 4).unwrap_err().to_string();
        assert!(
            three.contains("divide the 4 heads: one of 1, 2, 4"),
            "{three}"
        );
        assert!(kv_heads(0.0, 4).is_err() && kv_heads(8.0, 4).is_err());
        assert!(kv_heads(1.5, 4).is_err() && kv_heads(f64::NAN, 4).is_err());
        assert_eq!(positions("Rotary"), Ok(PositionEmbeddingType::Rotary));
        assert_eq!(attention_type("linear"), Ok(AttentionType::Linear));
        assert_eq!(kernel("Tiled"), Ok(ProbeKernel::Tiled));
        assert_eq!(positions("ALiBi"), Ok(PositionEmbeddingType::Alibi));
        assert_eq!(positions("alibi"), Ok(PositionEmbeddingType::Alibi));
        assert!(positions("relative").is_err() && attention_type("sparse").is_err());
        let alibi_linear = Architecture {
            positions: PositionEmbeddingType::Alibi,
            attention: AttentionType::Linear,
            ..Architecture::default()
        };
        let e = architecture(alibi_linear).unwrap_err().to_string();
        assert!(e.contains("linear attention has no scores"), "{e}");
        let alibi = Architecture {
            attention: AttentionType::Softmax,
            ..alibi_linear
        };
        assert_eq!(architecture(alibi), Ok(alibi));
        assert!(kernel("flash").is_err());
        assert_eq!(scaling("None"), Ok(AttentionScaling::None));
        assert_eq!(scaling("sqrt"), Ok(AttentionScaling::InverseSqrtHeadSize));
        assert_eq!(
            scaling("÷2").unwrap_err().to_string(),
            "the scaling must be ÷√d_k or None"
        );
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
