//! One error type for everything a user can get wrong: files, configs, text, settings.
//! Every fallible entry point returns it; nothing reachable from user input panics.

use serde::{Deserialize, Serialize};
use thiserror::Error;

// Serde: the web app sends it from its training worker to the page.
#[derive(Debug, Error, Clone, PartialEq, Serialize, Deserialize)]
pub enum EngineError {
    #[error("config: {0}")]
    Config(String),
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    #[error("vocabulary: {0}")]
    Vocab(String),
    #[error("input: {0}")]
    Input(String),
    #[error("data: {0}")]
    Data(String),
    #[error("training: {0}")]
    Training(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

pub type Result<T> = std::result::Result<T, EngineError>;
