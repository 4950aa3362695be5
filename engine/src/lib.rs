//! Attention Lab's engine: BERT as the paper and Hugging Face `transformers` define it,
//! in plain Rust on ndarray. It knows nothing of the web.
//!
//! Shapes are named once and used everywhere:
//! B batch, T sequence length, C hidden size, H heads, D = C/H head size,
//! I intermediate size, V vocabulary size, P max positions, N = B·T rows.

pub mod backward;
pub mod batch;
pub mod batch_view;
pub mod checkpoint;
pub mod config;
pub mod counting_alloc;
pub mod data;
pub mod default_run;
pub mod error;
pub mod experiments;
pub mod forward;
pub mod generate;
pub mod inspect;
pub mod model;
pub mod objective;
pub mod ops;
pub mod optim;
pub mod repeat;
pub mod resume;
pub mod rng;
pub mod run;
pub mod seq2seq;
pub mod step;
pub mod threads;
pub mod tokenizer;
pub mod trace;
pub mod train;
pub mod vocab;
pub mod workload;

pub use batch::{Batch, MaskMode};
pub use config::BertConfig;
pub use error::EngineError;
pub use model::BertForPreTraining;
pub use rng::Rng;
pub use trace::{AttentionTrace, HeadTrace, LayerTrace, Matrix, TileStep};
