//! How messages cross between the page and the worker: a JS array `[json, bytes?]`, the JSON
//! for the protocol enums and an optional Uint8Array for checkpoint weights (kept out of JSON).

use js_sys::{Array, Uint8Array};
use serde::{de::DeserializeOwned, Serialize};
use wasm_bindgen::JsValue;

pub fn encode<T: Serialize>(message: &T, bytes: Option<&[u8]>) -> Result<JsValue, String> {
    let json =
        serde_json::to_string(message).map_err(|e| format!("could not encode a message: {e}"))?;
    let packet = Array::new();
    packet.push(&JsValue::from_str(&json));
    if let Some(bytes) = bytes {
        packet.push(&Uint8Array::from(bytes).into());
    }
    Ok(packet.into())
}

pub fn decode<T: DeserializeOwned>(packet: &JsValue) -> Result<(T, Option<Vec<u8>>), String> {
    let packet = Array::from(packet);
    let json = packet.get(0).as_string().ok_or("a message without JSON")?;
    let message =
        serde_json::from_str(&json).map_err(|e| format!("could not decode a message: {e}"))?;
    let bytes = packet.get(1);
    let bytes = (!bytes.is_undefined()).then(|| Uint8Array::new(&bytes).to_vec());
    Ok((message, bytes))
}
