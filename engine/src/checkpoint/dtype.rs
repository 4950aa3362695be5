//! Tensor bytes ↔ f32: written as little-endian F32; read from F32, F16 or BF16.

use crate::error::{EngineError, Result};
use half::{bf16, f16};
use safetensors::tensor::{Dtype, TensorView};

pub(crate) fn f32_bytes<'a>(values: impl ExactSizeIterator<Item = &'a f32>) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 * values.len());
    for x in values {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}
pub(crate) fn to_f32(name: &str, view: &TensorView) -> Result<Vec<f32>> {
    let bytes = view.data();
    let halves = || {
        bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    match view.dtype() {
        Dtype::F32 => Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()),
        // Both exact (every f16 and bf16 is an f32), subnormals and ∞ included; a signalling
        // NaN comes back quiet.
        Dtype::F16 => Ok(halves().map(|h| f16::from_bits(h).to_f32()).collect()),
        Dtype::BF16 => Ok(halves().map(|h| bf16::from_bits(h).to_f32()).collect()),
        other => Err(EngineError::Checkpoint(format!(
            "tensor {name} has dtype {other:?}; only F32, F16 and BF16 weights are supported"
        ))),
    }
}
