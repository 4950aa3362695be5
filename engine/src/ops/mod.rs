//! BERT's operations, each a `forward`/`backward` pair of plain functions (llm.c style).
//!
//! Conventions shared by every op:
//! - `forward` returns its output (and, where backward needs more than the op's input, a
//!   small cache); the caller keeps whatever input backward will read.
//! - `backward` ACCUMULATES (`+=`) into every gradient it is given, input gradients
//!   included, so residual branches and tied weights simply add up. Callers zero buffers.
//! - Dropout is the one exception: it scales its gradient in place (see `dropout`).
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
