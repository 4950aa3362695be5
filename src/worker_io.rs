//! How messages cross between the page and the worker: a JS array `[message, attachment…]` of
//! Uint8Arrays. The message is encoded by `protocol::wire`; attachments are files' bytes
//! (checkpoint weights, training state), kept out of the message. Every buffer is transferred,
//! not copied.

use js_sys::{Array, Uint8Array};
use protocol::{wire, LabError, LabResult};
use serde::{de::DeserializeOwned, Serialize};
use wasm_bindgen::{JsCast, JsValue};

/// What `postMessage` takes: the packet and the list of buffers it hands over.
pub struct Packet {
    pub data: JsValue,
    pub transfer: Array,
}

pub fn encode<T: Serialize>(message: &T, attachments: &[&[u8]]) -> LabResult<Packet> {
    let encoded = wire::encode(message)?;
    let data = Array::new();
    let transfer = Array::new();
    for part in std::iter::once(encoded.as_slice()).chain(attachments.iter().copied()) {
        let array = Uint8Array::from(part);
        transfer.push(&array.buffer());
        data.push(&array);
    }
    Ok(Packet {
        data: data.into(),
        transfer,
    })
}

pub fn decode<T: DeserializeOwned>(packet: &JsValue) -> LabResult<(T, Vec<Vec<u8>>)> {
    let packet = Array::from(packet);
    let encoded = packet.get(0);
    if !encoded.is_instance_of::<Uint8Array>() {
        return Err(LabError::Malformed("a message without its bytes".into()));
    }
    let message = wire::decode(&Uint8Array::new(&encoded).to_vec())?;
    let attachments = (1..packet.length())
        .map(|i| packet.get(i))
        .filter(|part| part.is_instance_of::<Uint8Array>())
        .map(|part| Uint8Array::new(&part).to_vec())
        .collect();
    Ok((message, attachments))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::lab::Lab;
    use engine::batch::MaskMode;
    use protocol::{FromWorker, LabSettings, ProbeInput, DEFAULT_CORPUS};
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn a_causal_snapshot_and_weights_cross_exactly() {
        let lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        let probe = ProbeInput {
            mask: MaskMode::Causal,
            ..ProbeInput::default()
        };
        let message = FromWorker::Inspected {
            step: 3,
            at: None,
            result: lab.inspect(&probe, None),
            compare: None,
        };
        let (weights, state) = ([0u8, 1, 254, 255], [9u8; 3]);
        let packet = encode(&message, &[&weights, &state]).unwrap();
        assert_eq!(packet.transfer.length(), 3, "every buffer is handed over");
        let (back, attachments) = decode::<FromWorker>(&packet.data).unwrap();
        assert_eq!(attachments, [weights.to_vec(), state.to_vec()]);
        assert_eq!(back, message);
        let FromWorker::Inspected { result: Ok(i), .. } = back else {
            panic!("not a snapshot")
        };
        let masked = &i.trace.layers[0].heads[0].masked.data;
        assert!(masked.contains(&f32::NEG_INFINITY), "−∞ survives");
    }

    #[test]
    fn malformed_packets_are_errors() {
        assert!(decode::<FromWorker>(&JsValue::from_str("{}")).is_err());
        let junk = Array::of1(&Uint8Array::from(&[200u8, 7, 7][..]));
        assert!(decode::<FromWorker>(&junk).is_err());
    }
}
