//! Which picked files make a checkpoint, by name only: their contents are the engine's
//! business (`engine::checkpoint::load`). Every file's size is checked before a byte is read.

use engine::checkpoint::{
    check_file_size, CONFIG_FILE, TOKENIZER_CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE,
};
use protocol::{LabError, LabResult};

/// What a file is to a checkpoint, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Config,
    Weights,
    Vocab,
    TokenizerConfig,
}

impl Role {
    /// Names are matched exactly, ignoring ASCII case, after the "A-" or "B-" that Compare's
    /// "Download checkpoint" puts in front of each model's files.
    pub fn of(name: &str) -> Option<Role> {
        let plain = |n: &str| {
            [
                Role::Config,
                Role::Weights,
                Role::Vocab,
                Role::TokenizerConfig,
            ]
            .into_iter()
            .find(|r| r.file_name().eq_ignore_ascii_case(n))
        };
        let compared = name
            .get(..2)
            .filter(|p| p.eq_ignore_ascii_case("a-") || p.eq_ignore_ascii_case("b-"))
            .map(|_| &name[2..]);
        plain(name).or_else(|| compared.and_then(plain))
    }

    pub fn file_name(self) -> &'static str {
        match self {
            Role::Config => CONFIG_FILE,
            Role::Weights => WEIGHTS_FILE,
            Role::Vocab => VOCAB_FILE,
            Role::TokenizerConfig => TOKENIZER_CONFIG_FILE,
        }
    }
}

/// The picked files sorted by role; files that are not part of a checkpoint are set aside
/// in `ignored` (a Hugging Face folder also holds README.md, tokenizer.json, …).
#[derive(Clone, Debug, PartialEq)]
pub struct Recognised<T> {
    pub config: T,
    pub weights: T,
    pub vocab: T,
    pub tokenizer_config: Option<T>,
    pub ignored: Vec<String>,
}

impl<T> Recognised<T> {
    /// The files that will be read, in reading order (small ones first).
    pub fn to_read(&self) -> Vec<(Role, &T)> {
        let mut out = vec![(Role::Config, &self.config), (Role::Vocab, &self.vocab)];
        out.extend(
            self.tokenizer_config
                .as_ref()
                .map(|t| (Role::TokenizerConfig, t)),
        );
        out.push((Role::Weights, &self.weights));
        out
    }
}

const NEEDED: &str = "a checkpoint is config.json, model.safetensors and vocab.txt (tokenizer_config.json is optional)";

/// Sort `(file name, file)` pairs into a checkpoint, or say which file is missing or doubled.
pub fn recognise<T>(files: Vec<(String, T)>) -> LabResult<Recognised<T>> {
    if files.is_empty() {
        return Err(LabError::file(format!("No files were picked: {NEEDED}.")));
    }
    let (mut config, mut weights, mut vocab, mut tokenizer_config) = (None, None, None, None);
    let mut ignored = Vec::new();
    for (name, file) in files {
        let Some(role) = Role::of(&name) else {
            ignored.push(name);
            continue;
        };
        let slot = match role {
            Role::Config => &mut config,
            Role::Weights => &mut weights,
            Role::Vocab => &mut vocab,
            Role::TokenizerConfig => &mut tokenizer_config,
        };
        if slot.replace(file).is_some() {
            return Err(LabError::file(format!(
                "Two files are named {}: pick the files of one checkpoint.",
                role.file_name()
            )));
        }
    }
    let missing: Vec<&str> = [
        (config.is_none(), CONFIG_FILE),
        (weights.is_none(), WEIGHTS_FILE),
        (vocab.is_none(), VOCAB_FILE),
    ]
    .into_iter()
    .filter_map(|(gone, name)| gone.then_some(name))
    .collect();
    match (config, weights, vocab) {
        (Some(config), Some(weights), Some(vocab)) => Ok(Recognised {
            config,
            weights,
            vocab,
            tokenizer_config,
            ignored,
        }),
        _ => {
            let mut message = format!("Missing {}: {NEEDED}.", and_list(&missing));
            if ignored
                .iter()
                .any(|n| n.ends_with(".bin") || n.ends_with(".h5") || n.ends_with(".pt"))
            {
                message.push_str(" Only safetensors weights can be read here, not PyTorch .bin or TensorFlow .h5 files.");
            }
            if !ignored.is_empty() {
                message.push_str(&format!(" Not used: {}.", ignored.join(", ")));
            }
            Err(LabError::file(message))
        }
    }
}

fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Refuse any file over `engine::checkpoint::MAX_FILE_BYTES` before reading; the total bytes
/// to read otherwise.
pub fn check_sizes<T>(files: &Recognised<T>, size: impl Fn(&T) -> u64) -> LabResult<u64> {
    let mut total = 0u64;
    for (role, file) in files.to_read() {
        let bytes = size(file);
        check_file_size(role.file_name(), bytes)?;
        total += bytes;
    }
    Ok(total)
}

/// A name for the model: config.json's `_name_or_path` if it has one, else "model.safetensors".
pub fn checkpoint_name(config_json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(config_json)
        .ok()
        .and_then(|v| {
            v.get("_name_or_path")?
                .as_str()
                .map(str::trim)
                .map(str::to_string)
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| WEIGHTS_FILE.to_string())
}

pub fn text(role: Role, bytes: Vec<u8>) -> LabResult<String> {
    String::from_utf8(bytes).map_err(|e| {
        LabError::file(format!(
            "{} is not UTF-8 text (bad byte at offset {}): is it the right file?",
            role.file_name(),
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn names(list: &[&str]) -> Vec<(String, u64)> {
        list.iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i as u64))
            .collect()
    }

    #[test]
    fn a_checkpoint_is_recognised_by_its_file_names() {
        let r = recognise(names(&[
            "vocab.txt",
            "README.md",
            "model.safetensors",
            "Config.JSON",
            "tokenizer.json",
        ]))
        .unwrap();
        assert_eq!(
            (r.config, r.weights, r.vocab, r.tokenizer_config),
            (3, 2, 0, None)
        );
        assert_eq!(
            r.ignored,
            vec!["README.md".to_string(), "tokenizer.json".to_string()]
        );
        let r = recognise(names(&[
            "config.json",
            "model.safetensors",
            "vocab.txt",
            "tokenizer_config.json",
        ]))
        .unwrap();
        assert_eq!(r.tokenizer_config, Some(3));
        let order: Vec<Role> = r.to_read().into_iter().map(|(role, _)| role).collect();
        assert_eq!(
            order,
            [
                Role::Config,
                Role::Vocab,
                Role::TokenizerConfig,
                Role::Weights
            ]
        );
    }

    #[test]
    fn missing_files_are_named() {
        let e = recognise(names(&["config.json", "vocab.txt"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("Missing model.safetensors:"), "{e}");
        let e = recognise(names(&["model.safetensors"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("Missing config.json and vocab.txt:"), "{e}");
        let e = recognise(names(&["tokenizer_config.json", "notes.md"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("Missing config.json, model.safetensors and vocab.txt:"),
            "{e}"
        );
        assert!(e.contains("Not used: notes.md."), "{e}");
        let e = recognise(names(&["config.json", "vocab.txt", "pytorch_model.bin"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Missing model.safetensors") && e.contains("PyTorch .bin"),
            "{e}"
        );
        assert!(recognise(Vec::<(String, u64)>::new())
            .unwrap_err()
            .to_string()
            .starts_with("No files"));
        let e = recognise(names(&[
            "config.json",
            "config.json",
            "model.safetensors",
            "vocab.txt",
        ]))
        .unwrap_err()
        .to_string();
        assert!(e.contains("Two files are named config.json"), "{e}");
        // Compare downloads both models' files: one model's load, both at once are doubled.
        let b = ["B-config.json", "B-model.safetensors", "B-vocab.txt"];
        assert_eq!(recognise(names(&b)).unwrap().weights, 1);
        let mut both = b.to_vec();
        both.extend(["A-config.json", "A-model.safetensors", "A-vocab.txt"]);
        let e = recognise(names(&both)).unwrap_err().to_string();
        assert!(e.contains("Two files are named config.json"), "{e}");
        assert_eq!(Role::of("C-config.json"), None);
    }

    #[test]
    fn huge_files_are_refused_before_reading() {
        let files = vec![
            ("config.json".to_string(), 600u64),
            ("model.safetensors".to_string(), 3_000_000_000),
            ("vocab.txt".to_string(), 1000),
        ];
        let r = recognise(files).unwrap();
        let e = check_sizes(&r, |&n| n).unwrap_err().to_string();
        assert!(e.contains("model.safetensors is 3.0 GB"), "{e}");
        let r = recognise(names(&["config.json", "model.safetensors", "vocab.txt"])).unwrap();
        assert_eq!(check_sizes(&r, |&n| n * 10), Ok(30));
    }

    /// Through the real reading path, with `File`s: one claims 3 GB (its own `size` property
    /// shadows the prototype's getter) but holds one byte, so any read would not fail this way.
    #[test]
    fn names_sizes_and_text() {
        assert_eq!(
            checkpoint_name(r#"{"_name_or_path": "nreimers/MiniLM-L6-H384-uncased"}"#),
            "nreimers/MiniLM-L6-H384-uncased"
        );
        assert_eq!(
            checkpoint_name(r#"{"_name_or_path": ""}"#),
            "model.safetensors"
        );
        assert_eq!(checkpoint_name("not json"), "model.safetensors");
        assert_eq!(
            text(Role::Vocab, b"[PAD]\n".to_vec()),
            Ok("[PAD]\n".to_string())
        );
        let e = text(Role::Config, vec![b'{', 0xff, b'}'])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("config.json is not UTF-8 text (bad byte at offset 1)"),
            "{e}"
        );
    }
}
