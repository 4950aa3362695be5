//! A checkpoint directory on disk: read (refusing oversized files before reading) and write.
//! The browser has no directories: it hands `load` the files' bytes.

use super::{
    check_file_size, load, to_files, Checkpoint, CheckpointFiles, CONFIG_FILE,
    TOKENIZER_CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE,
};
use crate::error::{EngineError, Result};
use std::path::Path;

/// Reads the files of a checkpoint directory (refusing oversized ones before reading).
pub fn read_dir(dir: &Path) -> Result<CheckpointFiles> {
    if !dir.is_dir() {
        return Err(EngineError::Checkpoint(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let read = |name: &str, required: bool| -> Result<Option<Vec<u8>>> {
        let path = dir.join(name);
        let io = |e: std::io::Error| EngineError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !required {
                    return Ok(None);
                }
                let hint = if name == WEIGHTS_FILE && dir.join("pytorch_model.bin").exists() {
                    " (pytorch_model.bin is not supported: convert it to safetensors)"
                } else {
                    ""
                };
                Err(EngineError::Checkpoint(format!(
                    "{} is missing{hint}",
                    path.display()
                )))
            }
            Err(e) => Err(io(e)),
            Ok(meta) => {
                check_file_size(&path.display().to_string(), meta.len())?;
                std::fs::read(&path).map(Some).map_err(io)
            }
        }
    };
    let text = |name: &str, bytes: Vec<u8>| {
        String::from_utf8(bytes)
            .map_err(|_| EngineError::Checkpoint(format!("{name} is not UTF-8 text")))
    };
    let required = |name: &str| read(name, true).map(|b| b.unwrap_or_default());
    Ok(CheckpointFiles {
        config_json: text(CONFIG_FILE, required(CONFIG_FILE)?)?,
        safetensors: required(WEIGHTS_FILE)?,
        vocab_txt: text(VOCAB_FILE, required(VOCAB_FILE)?)?,
        tokenizer_config_json: read(TOKENIZER_CONFIG_FILE, false)?
            .map(|b| text(TOKENIZER_CONFIG_FILE, b))
            .transpose()?,
    })
}

pub fn load_dir(dir: &Path) -> Result<Checkpoint> {
    load(&read_dir(dir)?)
}
/// Writes the checkpoint into `dir` (created if needed), replacing the four files.
pub fn save_dir(checkpoint: &Checkpoint, dir: &Path) -> Result<()> {
    write_dir(&to_files(checkpoint), dir)
}

/// Writes a checkpoint's files into `dir` (created if needed).
pub fn write_dir(files: &CheckpointFiles, dir: &Path) -> Result<()> {
    let io = |path: &Path, e: std::io::Error| EngineError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| io(&path, e))
    };
    write(CONFIG_FILE, files.config_json.as_bytes())?;
    write(WEIGHTS_FILE, &files.safetensors)?;
    write(VOCAB_FILE, files.vocab_txt.as_bytes())?;
    if let Some(json) = &files.tokenizer_config_json {
        write(TOKENIZER_CONFIG_FILE, json.as_bytes())?;
    }
    Ok(())
}
