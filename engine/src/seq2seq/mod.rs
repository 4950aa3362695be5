//! An encoder–decoder, as `transformers.EncoderDecoderModel` builds one from two BERTs: the
//! encoder a `BertModel`, the decoder a `BertLMHeadModel` with `is_decoder` and
//! `add_cross_attention`. The source runs through the encoder once; every decoder layer's
//! cross-attention reads its output (queries from the decoder, keys and values from the
//! encoder, under the source's padding mask). Decoder inputs are the labels shifted right,
//! starting with `decoder_start_token_id` ([CLS]), and the loss is the mean cross-entropy of
//! the logits at t against labels[t] (no further shift: the shift is in the inputs).
//!
//! One file a job, each beside its one-BERT counterpart's role: `model` (`model.rs`), `batch`
//! and `task` (`batch.rs`, `data.rs`), `pass` (`forward/`, `backward/`, and the shared step
//! `step.rs`), `generate`, `inspect`, `checkpoint` (`checkpoint/`), `train` (`train.rs`).

mod batch;
mod checkpoint;
mod generate;
mod inspect;
mod model;
mod pass;
mod task;
mod train;

pub use batch::{shift_tokens_right, Seq2SeqBatch};
pub use checkpoint::{is_encoder_decoder, load, to_files, Seq2SeqCheckpoint};
pub use generate::{encode, generate, generator};
pub use inspect::{decoder_input, inspect, inspect_ids, inspect_texts, Seq2SeqInspection};
pub use model::EncoderDecoder;
pub use pass::{backward_seq2seq, forward_seq2seq, Seq2SeqBuffers, Seq2SeqOutput};
pub use task::{make_seq2seq_batch, Task};
pub use train::Seq2SeqTrainer;

#[cfg(test)]
mod tests;
