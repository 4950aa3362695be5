//! Messages as bytes, in postcard, a binary serde format: a snapshot holds some 50,000 floats,
//! and as JSON (375 kB) it took the page's main thread about 10 ms to decode. Files' bytes are
//! not in here: they travel beside the message (`ModelBundle::detach_both`).

use crate::{LabError, LabResult};
use serde::{de::DeserializeOwned, Serialize};

pub fn encode<T: Serialize>(message: &T) -> LabResult<Vec<u8>> {
    postcard::to_allocvec(message)
        .map_err(|e| LabError::Malformed(format!("could not encode a message: {e}")))
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> LabResult<T> {
    postcard::from_bytes(bytes)
        .map_err(|e| LabError::Malformed(format!("could not decode a message: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FromWorker, LabSettings, ProbeInput, ToWorker};

    #[test]
    fn messages_round_trip_and_junk_is_an_error() {
        let sent = ToWorker::Inspect {
            probe: ProbeInput::default(),
            at: Some(3),
        };
        assert_eq!(decode::<ToWorker>(&encode(&sent).unwrap()).unwrap(), sent);
        let tune = ToWorker::Tune(LabSettings::default());
        assert_eq!(decode::<ToWorker>(&encode(&tune).unwrap()).unwrap(), tune);
        // Every architecture and probe choice crosses too.
        let variant = ToWorker::Reset {
            corpus: "a b .".into(),
            settings: LabSettings {
                architecture: crate::Architecture {
                    kv_heads: Some(2),
                    positions: engine::config::PositionEmbeddingType::Rotary,
                    attention: engine::config::AttentionType::Linear,
                    scaling: engine::config::AttentionScaling::None,
                },
                ..LabSettings::default()
            },
        };
        assert_eq!(
            decode::<ToWorker>(&encode(&variant).unwrap()).unwrap(),
            variant
        );
        let windowed = ToWorker::Inspect {
            probe: ProbeInput {
                window: Some(3),
                attention: crate::ProbeKernel::Tiled,
                ..ProbeInput::default()
            },
            at: None,
        };
        assert_eq!(
            decode::<ToWorker>(&encode(&windowed).unwrap()).unwrap(),
            windowed
        );
        let failed = FromWorker::Failed(crate::LabError::no_model());
        assert_eq!(
            decode::<FromWorker>(&encode(&failed).unwrap()).unwrap(),
            failed
        );
        for junk in [&[][..], &[200, 7, 7], &[255; 40]] {
            assert!(matches!(
                decode::<FromWorker>(junk),
                Err(LabError::Malformed(_))
            ));
        }
    }
}
