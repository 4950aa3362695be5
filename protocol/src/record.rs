//! What the browser keeps in IndexedDB, as bytes and text: the kept model's description (JSON,
//! beside its weights), its loss curves (postcard) and the index of its History weights
//! (postcard; each entry's weights are a safetensors file of their own, under `history_key`). The
//! IndexedDB plumbing is the web app's (`storage`); decoding is here, where it is tested and
//! fuzzed natively. Storage can hold anything (another version, a hand edit): every decoder
//! returns `None` for what it cannot vouch for, and never panics.

use crate::{Curves, ModelBundle};
use serde::{Deserialize, Serialize};

/// Bumped when a record's shape changes: older records then read as "nothing kept".
pub const VERSION: u32 = 1;

/// The kept model without its bytes, as stored beside them.
#[derive(Serialize, Deserialize)]
struct Meta {
    version: u32,
    #[serde(flatten)]
    bundle: ModelBundle,
}

/// The kept model's description (its bytes are stored apart, as binary).
pub fn encode_meta(bundle: &ModelBundle) -> String {
    let meta = Meta {
        version: VERSION,
        bundle: ModelBundle {
            safetensors: Vec::new(),
            training_state: None,
            ..bundle.clone()
        },
    };
    // A struct of strings and numbers always serialises.
    serde_json::to_string(&meta).unwrap_or_default()
}

/// The description of a kept model, without its bytes; `None` when unreadable or of another
/// version.
pub fn decode_meta(text: &str) -> Option<ModelBundle> {
    let meta: Meta = serde_json::from_str(text).ok()?;
    (meta.version == VERSION).then_some(meta.bundle)
}

/// The History slider's kept weights: which steps are stored, and the spacing the history had
/// reached (it doubles each time the 64 MB budget is full).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryIndex {
    pub version: u32,
    pub interval: u64,
    /// Ascending.
    pub steps: Vec<u64>,
}

impl HistoryIndex {
    pub fn new(interval: u64, steps: Vec<u64>) -> Self {
        HistoryIndex {
            version: VERSION,
            interval,
            steps,
        }
    }
}

/// Where the weights of the History entry at `step` are stored.
pub fn history_key(step: u64) -> String {
    format!("history/{step}")
}

pub fn encode_history(index: &HistoryIndex) -> Vec<u8> {
    postcard::to_allocvec(index).unwrap_or_default()
}

/// A kept History index; `None` when unreadable, of another version, or not ascending.
pub fn decode_history(bytes: &[u8]) -> Option<HistoryIndex> {
    let index: HistoryIndex = postcard::from_bytes(bytes).ok()?;
    let ascending = index.steps.windows(2).all(|w| w[0] < w[1]);
    (index.version == VERSION && ascending && index.interval >= 1).then_some(index)
}

pub fn encode_curves(curves: &Curves) -> Vec<u8> {
    postcard::to_allocvec(curves).unwrap_or_default()
}

/// Kept curves; `None` when unreadable or breaking the record's invariants (`Curves`).
pub fn decode_curves(bytes: &[u8]) -> Option<Curves> {
    postcard::from_bytes(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CurvePoint;

    #[test]
    fn a_kept_model_reads_back_without_its_bytes() {
        let bundle = ModelBundle {
            name: "tiny BERT (fresh, seed 0)".into(),
            step: 1234,
            config_json: "{\"hidden_size\": 64}".into(),
            vocab_txt: "[PAD]\n[UNK]\n".into(),
            tokenizer_config_json: Some("{}".into()),
            word_level: true,
            safetensors: vec![1, 2, 3],
            training_state: Some(vec![4]),
        };
        let text = encode_meta(&bundle);
        assert!(!text.contains("safetensors"), "{text}");
        let back = decode_meta(&text).unwrap();
        assert_eq!(
            back,
            ModelBundle {
                safetensors: Vec::new(),
                training_state: None,
                ..bundle
            }
        );
    }

    #[test]
    fn records_of_earlier_versions_still_read() {
        // As kept before `word_level` existed: read back as WordPiece.
        let old = r#"{"version":1,"name":"MiniLM","step":0,"config_json":"{}","vocab_txt":"a\n","tokenizer_config_json":null}"#;
        let back = decode_meta(old).unwrap();
        assert_eq!((back.name.as_str(), back.word_level), ("MiniLM", false));
        // Another version, junk, the wrong shape: nothing kept.
        for bad in [
            r#"{"version":99,"name":"x","step":0,"config_json":"","vocab_txt":"","tokenizer_config_json":null}"#,
            "{\"version\": 1",
            "[]",
            "\"text\"",
            "",
        ] {
            assert_eq!(decode_meta(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_history_index_round_trips_and_a_bad_one_reads_as_none() {
        let index = HistoryIndex::new(10, vec![0, 10, 20]);
        assert_eq!(decode_history(&encode_history(&index)), Some(index));
        let unsorted = HistoryIndex::new(10, vec![20, 10]);
        assert_eq!(decode_history(&encode_history(&unsorted)), None);
        let zero = HistoryIndex::new(0, vec![]);
        assert_eq!(decode_history(&encode_history(&zero)), None);
        let old = HistoryIndex {
            version: VERSION + 1,
            ..HistoryIndex::new(5, vec![5])
        };
        assert_eq!(decode_history(&encode_history(&old)), None);
        assert_eq!(decode_history(b"junk"), None);
        assert_eq!(history_key(40), "history/40");
    }

    #[test]
    fn curves_round_trip_and_bad_ones_read_as_none() {
        let mut curves = Curves::new();
        curves.extend((1..=50).map(|step| CurvePoint {
            step,
            loss: 5.0 / step as f32,
            ..CurvePoint::default()
        }));
        assert_eq!(decode_curves(&encode_curves(&curves)), Some(curves));
        // Lengths that disagree, a NaN: not a loss record.
        let lengths = postcard::to_allocvec(&(vec![CurvePoint::default(); 2], vec![1u32], 1u32));
        assert_eq!(decode_curves(&lengths.unwrap()), None);
        let nan = CurvePoint {
            step: 2,
            loss: f32::NAN,
            ..CurvePoint::default()
        };
        let nan = postcard::to_allocvec(&(vec![CurvePoint::default(), nan], vec![1u32, 1], 1u32));
        assert_eq!(decode_curves(&nan.unwrap()), None);
        assert_eq!(decode_curves(&[]), None);
    }
}
