//! A model as files, with what the files do not say: the one description of a checkpoint
//! wherever it goes. The user picks one from disk, the worker loads it, the browser keeps it
//! in IndexedDB, the worker sends one back for "Download checkpoint".

use engine::checkpoint::CheckpointFiles;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelBundle {
    /// What the page calls it: "tiny BERT (fresh, seed 0)", or the checkpoint's own name.
    pub name: String,
    /// Steps this model was trained here (0 for a checkpoint picked from disk).
    pub step: u64,
    pub config_json: String,
    pub vocab_txt: String,
    pub tokenizer_config_json: Option<String>,
    /// Whole-word tokens (a vocabulary built from the corpus here), not WordPiece: checkpoint
    /// files do not say which, so the bundle does. Absent in records kept before it existed,
    /// which were all read back as WordPiece.
    #[serde(default)]
    pub word_level: bool,
    /// The weights. Megabytes: they travel beside a message or record (see `detach`), never
    /// inside its encoding.
    #[serde(skip)]
    pub safetensors: Vec<u8>,
    /// `engine::resume`'s file: the optimiser's moments and the generator, so training goes on
    /// exactly as before (none for a checkpoint picked from disk, or an inspect-only model).
    #[serde(skip)]
    pub training_state: Option<Vec<u8>>,
}

impl ModelBundle {
    /// A checkpoint picked from disk.
    pub fn picked(name: String, files: CheckpointFiles) -> Self {
        ModelBundle {
            name,
            step: 0,
            config_json: files.config_json,
            vocab_txt: files.vocab_txt,
            tokenizer_config_json: files.tokenizer_config_json,
            word_level: false,
            safetensors: files.safetensors,
            training_state: None,
        }
    }

    /// The files the engine reads (the weights move out of the bundle).
    pub fn take_files(&mut self) -> CheckpointFiles {
        CheckpointFiles {
            config_json: self.config_json.clone(),
            safetensors: std::mem::take(&mut self.safetensors),
            vocab_txt: self.vocab_txt.clone(),
            tokenizer_config_json: self.tokenizer_config_json.clone(),
        }
    }

    /// The bytes that travel beside the bundle's encoding: the weights, then the training
    /// state (empty when there is none). `attach` puts them back.
    pub fn detach(&mut self) -> Vec<Vec<u8>> {
        vec![
            std::mem::take(&mut self.safetensors),
            self.training_state.take().unwrap_or_default(),
        ]
    }

    pub fn attach(&mut self, attachments: Vec<Vec<u8>>) {
        let mut parts = attachments.into_iter();
        self.safetensors = parts.next().unwrap_or_default();
        // A training state is never empty: an empty one is none.
        self.training_state = parts.next().filter(|s| !s.is_empty());
    }

    /// Model A's bytes, then (Compare) model B's, beside one message.
    pub fn detach_both(a: &mut ModelBundle, b: Option<&mut ModelBundle>) -> Vec<Vec<u8>> {
        let mut out = a.detach();
        out.extend(b.map(ModelBundle::detach).unwrap_or_default());
        out
    }

    /// The reverse of `detach_both`.
    pub fn attach_both(
        a: &mut ModelBundle,
        b: Option<&mut ModelBundle>,
        attachments: Vec<Vec<u8>>,
    ) {
        let mut parts = attachments.into_iter();
        a.attach(parts.by_ref().take(BUNDLE_ATTACHMENTS).collect());
        if let Some(b) = b {
            b.attach(parts.collect());
        }
    }
}

/// How many attachments `detach` gives.
const BUNDLE_ATTACHMENTS: usize = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_travel_beside_the_encoding_and_come_back() {
        let mut bundle = ModelBundle {
            name: "tiny".into(),
            step: 7,
            config_json: "{}".into(),
            vocab_txt: "[PAD]\n".into(),
            tokenizer_config_json: None,
            word_level: true,
            safetensors: vec![1, 2, 3],
            training_state: Some(vec![9]),
        };
        let whole = bundle.clone();
        let attachments = bundle.detach();
        assert_eq!(attachments, [vec![1, 2, 3], vec![9]]);
        let encoded = postcard::to_allocvec(&bundle).unwrap();
        assert!(
            encoded.len() < 32,
            "no weights inside: {} bytes",
            encoded.len()
        );
        let mut back: ModelBundle = postcard::from_bytes(&encoded).unwrap();
        back.attach(attachments);
        assert_eq!(back, whole);
        // A picked checkpoint has no training state, and gets none back.
        back.training_state = None;
        let without = back.clone();
        let attachments = back.detach();
        back.attach(attachments);
        assert_eq!(back, without);

        // Two bundles beside one message come apart again, whatever each carries.
        let (mut a, mut b) = (without.clone(), whole.clone());
        b.name = "B".into();
        let both = ModelBundle::detach_both(&mut a, Some(&mut b));
        let (mut a2, mut b2) = (a.clone(), b.clone());
        ModelBundle::attach_both(&mut a2, Some(&mut b2), both);
        assert_eq!(
            (a2, b2.clone()),
            (
                without,
                ModelBundle {
                    name: "B".into(),
                    ..whole
                }
            )
        );
        assert_ne!(b2.training_state, None);
    }
}
