//! The app's one error type. Every message is for the user: the page shows it as it is.

use engine::EngineError;
use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Error, Serialize, Deserialize)]
pub enum LabError {
    /// The engine refused: a file, a config, a text, a setting, or a diverged step.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A value typed or restored is out of range; the text says which rule it broke.
    #[error("{0}")]
    Setting(String),
    /// Picked files that are not a checkpoint's, or that cannot be read.
    #[error("{0}")]
    File(String),
    /// A browser facility failed or is switched off (storage, files, the worker).
    #[error("{0}")]
    Browser(String),
    /// Asked of a model that cannot do it now (none yet, or inspect-only), with the reason.
    #[error("{0}")]
    Unavailable(String),
    /// A message between page and worker, or a kept record, that does not decode.
    #[error("{0}")]
    Malformed(String),
}

pub type LabResult<T> = Result<T, LabError>;

impl LabError {
    pub fn setting(message: impl Into<String>) -> Self {
        LabError::Setting(message.into())
    }

    pub fn file(message: impl Into<String>) -> Self {
        LabError::File(message.into())
    }

    pub fn browser(message: impl Into<String>) -> Self {
        LabError::Browser(message.into())
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        LabError::Unavailable(message.into())
    }

    /// No model to ask yet.
    pub fn no_model() -> Self {
        LabError::unavailable("no model yet: reset or load one first")
    }
}
