//! How messages cross between the page and the worker: a JS array `[message, attachment…]` of
//! Uint8Arrays. The message is encoded by `protocol::wire`; attachments are files' bytes
//! (checkpoint weights, training state), kept out of the message. Every buffer is transferred,
//! not copied.

use js_sys::{Array, Float32Array, Uint8Array};
use ndarray::{ArrayViewD, ArrayViewMutD};
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

/// `message` with one array of floats beside it (a model's weights or gradients), transferred.
pub fn encode_with_floats<T: Serialize>(message: &T, floats: &Float32Array) -> LabResult<Packet> {
    let packet = encode(message, &[])?;
    // The packet's own array (`Array::from` would copy it).
    packet.data.unchecked_ref::<Array>().push(floats);
    packet.transfer.push(&floats.buffer());
    Ok(packet)
}

/// The floats `encode_with_floats` put beside the message, if any.
pub fn float_attachment(packet: &JsValue) -> Option<Float32Array> {
    let part = Array::from(packet).get(1);
    part.is_instance_of::<Float32Array>()
        .then(|| part.unchecked_into())
}

/// Every parameter's values in order (a model's, or a gradient's), copied once out of wasm
/// memory into one `Float32Array`.
pub fn params_to_floats(params: &[(String, ArrayViewD<'_, f32>)]) -> Float32Array {
    params_into_floats(params, None)
}

/// `params_to_floats`, written into `spare` when it holds as many values (a buffer a gradient
/// worker sent back): a model's worth of fresh memory costs the browser more than the copy.
pub fn params_into_floats(
    params: &[(String, ArrayViewD<'_, f32>)],
    spare: Option<Float32Array>,
) -> Float32Array {
    let total: usize = params.iter().map(|(_, p)| p.len()).sum();
    let floats = spare
        .filter(|f| f.length() as usize == total)
        .unwrap_or_else(|| Float32Array::new_with_length(total as u32));
    let mut at = 0;
    for (_, p) in params {
        let end = at + p.len() as u32;
        match p.as_slice() {
            Some(values) => floats.subarray(at, end).copy_from(values),
            None => floats
                .subarray(at, end)
                .copy_from(&p.iter().copied().collect::<Vec<_>>()),
        }
        at = end;
    }
    floats
}

/// `floats` (as `params_to_floats` wrote them) into the parameters, in order; an error, with
/// nothing written, when they are not as many.
pub fn floats_into_params(
    floats: &Float32Array,
    mut params: Vec<(String, ArrayViewMutD<'_, f32>)>,
) -> LabResult<()> {
    let total: usize = params.iter().map(|(_, p)| p.len()).sum();
    if floats.length() as usize != total {
        return Err(LabError::Malformed(format!(
            "{} values for a model of {total} parameters",
            floats.length()
        )));
    }
    let mut at = 0;
    for (_, p) in &mut params {
        let end = at + p.len() as u32;
        match p.as_slice_mut() {
            Some(values) => floats.subarray(at, end).copy_to(values),
            None => {
                let values = floats.subarray(at, end).to_vec();
                p.iter_mut().zip(values).for_each(|(x, v)| *x = v);
            }
        }
        at = end;
    }
    Ok(())
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
    use engine::batch::MaskMode;
    use protocol::{FromWorker, LabSettings, ProbeInput, DEFAULT_CORPUS};
    use wasm_bindgen_test::wasm_bindgen_test as test;
    use worker_core::lab::Lab;

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
    fn params_go_into_a_spare_buffer_that_fits_and_into_a_new_one_otherwise() {
        let lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        let params = lab.params();
        let fresh = params_to_floats(&params);
        let spare = Float32Array::new_with_length(fresh.length());
        let filled = params_into_floats(&params, Some(spare.clone()));
        assert_eq!(filled.to_vec(), fresh.to_vec());
        assert!(
            js_sys::Object::is(&filled.buffer(), &spare.buffer()),
            "written into the spare"
        );
        let small = Float32Array::new_with_length(3);
        let grown = params_into_floats(&params, Some(small.clone()));
        assert_eq!(grown.to_vec(), fresh.to_vec());
        assert_eq!(
            small.to_vec(),
            [0.0; 3],
            "a spare that does not fit is left alone"
        );
    }

    #[test]
    fn malformed_packets_are_errors() {
        assert!(decode::<FromWorker>(&JsValue::from_str("{}")).is_err());
        let junk = Array::of1(&Uint8Array::from(&[200u8, 7, 7][..]));
        assert!(decode::<FromWorker>(&junk).is_err());
    }
}
