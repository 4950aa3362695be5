//! One error type for everything a user can get wrong: files, configs, text, settings.
//! Every fallible entry point returns it; nothing reachable from user input panics.
//!
//! Plain data (messages, no `io::Error` inside), so it can be cloned, compared and sent
//! between threads or a worker and its page in any serde format.

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_serde_with_its_message() {
        let all = [
            EngineError::Config("c".into()),
            EngineError::Checkpoint("k".into()),
            EngineError::Vocab("v".into()),
            EngineError::Input("i".into()),
            EngineError::Data("d".into()),
            EngineError::Training("t".into()),
            EngineError::Io {
                path: "model/config.json".into(),
                message: "not found".into(),
            },
        ];
        for e in all {
            let json = serde_json::to_string(&e).unwrap();
            let back: EngineError = serde_json::from_str(&json).unwrap();
            assert_eq!(back.to_string(), e.to_string());
            assert_eq!(back, e);
        }
    }
}
