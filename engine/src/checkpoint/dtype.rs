//! Tensor bytes ↔ f32: written as little-endian F32; read from F32, F16 or BF16.

use crate::error::{EngineError, Result};
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
        Dtype::F16 => Ok(halves().map(f16_to_f32).collect()),
        // bfloat16 is the top half of an f32.
        Dtype::BF16 => Ok(halves().map(|h| f32::from_bits((h as u32) << 16)).collect()),
        other => Err(EngineError::Checkpoint(format!(
            "tensor {name} has dtype {other:?}; only F32, F16 and BF16 weights are supported"
        ))),
    }
}

/// IEEE binary16 → binary32, exact (every f16 is an f32), subnormals, ∞ and NaN included.
pub(super) fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match (exp, mant) {
        (0, 0) => sign,
        // subnormal: mant · 2^-24
        (0, _) => {
            let magnitude = mant as f32 * f32::powi(2.0, -24);
            return if sign != 0 { -magnitude } else { magnitude };
        }
        (0x1f, _) => sign | 0x7f80_0000 | (mant << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (mant << 13),
    };
    f32::from_bits(bits)
}
