//! BERT's operations, each a `forward`/`backward` pair of plain functions (llm.c style).
//!
//! Conventions shared by every op:
//! - `forward` returns its output (and, where backward needs more than the op's input, a
//!   small cache); the caller keeps whatever input backward will read. The ops a training
//!   step runs also have a form that writes into buffers kept from the last step (`reuse`).
//! - `backward` ACCUMULATES (`+=`) into every gradient it is given, input gradients
//!   included, so residual branches and tied weights simply add up. Callers zero buffers.
//! - The exceptions turn dL/d(out) into dL/d(in) in place, because their callers need it for
//!   nothing else: dropout, GELU and LayerNorm (whose dγ and dβ still accumulate).
//! - Rows are N = B·T tokens; matrices are row-major (rows, features).

pub mod attention;
pub mod attention_options;
pub mod dropout;
pub mod embedding;
pub mod flash;
pub mod full_attention;
pub mod gelu;
pub mod layernorm;
pub mod linear;
pub mod linear_attention;
pub mod loss;
pub mod math;
pub mod matmul;
pub mod rope;
pub mod tanh;

#[cfg(test)]
pub(crate) mod gradcheck;

use ndarray::{Array, Dimension, IntoDimension};

/// `spare`'s storage as an array of `shape`, for a writer that sets every entry: no allocation
/// when `spare` has the capacity (entries it already had keep stale values, which are never
/// read; new ones are zero), else a new zeroed array. How a training step writes into the
/// buffers of the step before; capacity, not length, so that buffers sized by the number of
/// masked tokens, which changes from batch to batch, are reused too.
pub(crate) fn reuse<D: Dimension, S: IntoDimension>(
    spare: Array<f32, D>,
    shape: S,
) -> Array<f32, S::Dim> {
    let shape = shape.into_dimension();
    let (mut data, offset) = spare.into_raw_vec_and_offset();
    if offset.unwrap_or(0) != 0 || data.capacity() < shape.size() {
        return Array::zeros(shape);
    }
    data.resize(shape.size(), 0.0);
    Array::from_shape_vec(shape, data).expect("as many entries as the shape")
}
