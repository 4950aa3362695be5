//! The set-up the CLI tests share: scratch directories with the checkpoints, batches, configs
//! and corpora the commands read, the checkpoints written elsewhere (PyTorch, transformers),
//! and command lines given once and varied per case.

pub mod values;

use engine::checkpoint::{save_dir, Checkpoint};
use engine::tokenizer::{build_word_vocab, Tokenizer};
use engine::{BertConfig, BertForPreTraining, Rng};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Four sentences: the vocabulary of the small checkpoints, and a corpus to pre-train on.
pub const CORPUS: &str =
    "the cat sat on the mat.\nthe dog ate a bone.\na bird sang in the tree.\nwe went home.\n";

/// The PyTorch-written reference checkpoint (2 layers, 2 heads of 8, 32 positions).
pub const REFERENCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../engine/tests/fixtures/reference/model"
);

/// The decoder fixture written by transformers (tools/fixtures_decoder.py): a BertLMHeadModel
/// of 2 layers, hidden 16, vocabulary 40, 32 positions; `expected.safetensors` holds its
/// outputs on a fixed batch, with the batch and greedy generations in the metadata.
pub const DECODER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../engine/tests/fixtures/decoder/lm"
);

/// The encoder–decoder fixture written by transformers (tools/fixtures_models.py): an
/// EncoderDecoderModel of two BERTs (2 layers, hidden 16, vocabulary 40, 32 positions);
/// `expected.safetensors` holds its outputs, loss and greedy generations on a fixed batch.
pub const SEQ2SEQ: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../engine/tests/fixtures/seq2seq/model"
);

/// The web app's corpus: long enough for a model to learn something in a few dozen steps.
pub const DEFAULT_CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../engine/assets/default_corpus.txt"
);

/// The PyTorch-written variant checkpoints (tools/fixtures_models.py).
pub fn variant_fixture(name: &str) -> String {
    format!(
        "{}/../engine/tests/fixtures/variants/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The `expected.safetensors` of a fixture directory: what transformers computed on it.
pub fn expected(dir: &str) -> Vec<u8> {
    std::fs::read(Path::new(dir).join("expected.safetensors")).unwrap()
}

/// The config.json of a checkpoint directory the binary saved, to check what it wrote.
pub fn saved_config(dir: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(Path::new(dir).join("config.json")).unwrap())
        .unwrap()
}

/// A config.json of 2 heads and these sizes; `extra` is more fields (`, "name": value`): the
/// tests' configs differ only there.
pub fn config_json(
    hidden: usize,
    layers: usize,
    intermediate: usize,
    positions: usize,
    extra: &str,
) -> String {
    format!(
        r#"{{"hidden_size": {hidden}, "num_hidden_layers": {layers}, "num_attention_heads": 2,
             "intermediate_size": {intermediate}, "max_position_embeddings": {positions}{extra}}}"#
    )
}

/// A fresh directory under the system temp dir, removed when dropped. Its name has a counter:
/// tests run in parallel in one process, and two of them may ask for the same name.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "attention-lab-cli-test-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// `name` in the directory, as the command-line argument naming it.
    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_owned()
    }

    /// Writes `contents` to `name`; its path, to pass on.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> String {
        let path = self.path(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// corpus.txt holding [`CORPUS`]; its path.
    pub fn corpus(&self) -> String {
        self.write("corpus.txt", CORPUS)
    }

    /// batch.json holding [`BATCH`]; its path. Written again on every call, so a test that
    /// spoiled the file gets the good one back.
    pub fn batch(&self) -> String {
        self.write("batch.json", BATCH)
    }

    /// The small checkpoint written to `name` (see [`write_checkpoint`]); its path and
    /// vocabulary size.
    pub fn checkpoint(&self, name: &str, heads: bool, dropout: f32) -> (String, usize) {
        let dir = self.path(name);
        let vocab = write_checkpoint(Path::new(&dir), heads, dropout);
        (dir, vocab)
    }

    /// A copy of the seq2seq fixture's checkpoint files in `name`, `edit` applied to its
    /// config.json: a broken encoder–decoder without writing one from scratch.
    pub fn seq2seq_copy(&self, name: &str, edit: impl FnOnce(&mut Value)) -> String {
        let dir = self.path(name);
        let (from, to) = (Path::new(SEQ2SEQ), Path::new(&dir));
        std::fs::create_dir_all(to).unwrap();
        for file in ["model.safetensors", "vocab.txt"] {
            std::fs::copy(from.join(file), to.join(file)).unwrap();
        }
        let mut config = saved_config(SEQ2SEQ);
        edit(&mut config);
        std::fs::write(to.join("config.json"), config.to_string()).unwrap();
        dir
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A test's scratch directory with the small checkpoint written in it as `model`: the set-up
/// most tests start from, in one line.
pub struct Fixture {
    pub tmp: TempDir,
    pub model: String,
    /// The checkpoint's vocabulary size.
    pub vocab: usize,
}

impl Fixture {
    /// With pre-training heads, dropout 0.
    pub fn new(name: &str) -> Self {
        Self::with(name, true, 0.0)
    }

    /// A bare BertModel: no pre-training heads, no pooler.
    pub fn headless(name: &str) -> Self {
        Self::with(name, false, 0.0)
    }

    /// With pre-training heads and both dropout rates `dropout`, so that training draws from
    /// the generator.
    pub fn with_dropout(name: &str, dropout: f32) -> Self {
        Self::with(name, true, dropout)
    }

    fn with(name: &str, heads: bool, dropout: f32) -> Self {
        let tmp = TempDir::new(name);
        let (model, vocab) = tmp.checkpoint("model", heads, dropout);
        Fixture { tmp, model, vocab }
    }

    /// `inspect` of `text` on the checkpoint.
    pub fn inspect(&self, text: &str) -> Cmd {
        Cmd::inspect(&self.model, text)
    }

    /// `train` of the checkpoint on [`BATCH`].
    pub fn train(&self) -> Cmd {
        Cmd::train(&self.model, &self.tmp.batch())
    }
}

/// 2 examples of 8 tokens (ids of the corpus vocabulary), one padded.
pub const BATCH: &str = r#"{
    "input_ids": [[2, 5, 4, 9, 3, 7, 8, 3], [2, 5, 10, 3, 6, 3, 0, 0]],
    "token_type_ids": [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]],
    "attention_mask": [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]],
    "mlm_labels": [[-100, -100, 6, -100, -100, -100, 11, -100], [-100, -100, -100, -100, 12, -100, -100, -100]],
    "nsp_labels": [0, 1]
}"#;

/// hidden 16, 2 layers, 2 heads (d_k 8), 16 positions, both dropout rates `dropout`; `heads`
/// false = bare BertModel. Returns the vocabulary size.
fn write_checkpoint(dir: &Path, heads: bool, dropout: f32) -> usize {
    let vocab = build_word_vocab(CORPUS).unwrap();
    let v = vocab.len();
    let mut config = BertConfig::new(v, 16, 2, 2, 32);
    config.max_position_embeddings = 16;
    config.hidden_dropout_prob = dropout;
    config.attention_probs_dropout_prob = dropout;
    let mut model = BertForPreTraining::init(&config, &mut Rng::new(7)).unwrap();
    let mut checkpoint =
        Checkpoint::new(model.clone(), Tokenizer::word_piece(vocab, true)).unwrap();
    if !heads {
        model.cls = None;
        model.bert.pooler = None;
        checkpoint.model = model;
        checkpoint.naming.prefix = String::new();
    }
    save_dir(&checkpoint, dir).unwrap();
    v
}

/// A command line of the binary. What the cases of a test share is given once; each case adds
/// only what it is about ([`Cmd::with`]).
#[derive(Clone)]
pub struct Cmd(Vec<OsString>);

impl Cmd {
    pub fn new(args: &[&str]) -> Self {
        Cmd(args.iter().map(OsString::from).collect())
    }

    /// `inspect --model MODEL --text TEXT`.
    pub fn inspect(model: &str, text: &str) -> Self {
        Cmd::new(&["inspect", "--model", model, "--text", text])
    }

    /// `train --model MODEL --batch BATCH`: fine-tuning on a fixed batch.
    pub fn train(model: &str, batch: &str) -> Self {
        Cmd::new(&["train", "--model", model, "--batch", batch])
    }

    /// `train --init CONFIG --corpus CORPUS`: pre-training from scratch.
    pub fn train_init(config: &str, corpus: &str) -> Self {
        Cmd::new(&["train", "--init", config, "--corpus", corpus])
    }

    /// `generate --model MODEL`.
    pub fn generate(model: &str) -> Self {
        Cmd::new(&["generate", "--model", model])
    }

    /// `scaling ARGS`.
    pub fn scaling(args: &[&str]) -> Self {
        Cmd::new(&["scaling"]).with(args)
    }

    /// This command line with `extra` after it.
    pub fn with(&self, extra: &[&str]) -> Self {
        let mut args = self.0.clone();
        args.extend(extra.iter().map(OsString::from));
        Cmd(args)
    }

    /// [`Cmd::with`] for arguments that are not UTF-8.
    pub fn with_os(&self, extra: &[OsString]) -> Self {
        Cmd([&self.0[..], extra].concat())
    }

    pub fn run(&self) -> Output {
        Command::new(env!("CARGO_BIN_EXE_attention-lab"))
            .args(&self.0)
            .output()
            .unwrap()
    }

    /// See [`Ran::json`].
    pub fn json(&self) -> Value {
        self.run().json()
    }

    /// See [`Ran::lines`].
    pub fn lines(&self) -> Vec<Value> {
        self.run().lines()
    }

    /// See [`Ran::fails_with`].
    pub fn fails_with(&self, code: i32, needle: &str) {
        self.run().fails_with(code, needle)
    }
}

/// What the tests read of a finished run, when they need the run itself (its stderr too).
pub trait Ran {
    /// stdout as one JSON value; the run must have succeeded.
    fn json(&self) -> Value;
    /// stdout as one JSON value per line; the run must have succeeded.
    fn lines(&self) -> Vec<Value>;
    fn stderr_text(&self) -> String;
    /// Exit `code`, nothing on stdout, and `needle` in stderr: how every failure must look.
    fn fails_with(&self, code: i32, needle: &str);
}

impl Ran for Output {
    fn json(&self) -> Value {
        assert!(self.status.success(), "failed: {}", self.stderr_text());
        serde_json::from_slice(&self.stdout).unwrap()
    }

    fn lines(&self) -> Vec<Value> {
        assert!(self.status.success(), "failed: {}", self.stderr_text());
        String::from_utf8_lossy(&self.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    fn fails_with(&self, code: i32, needle: &str) {
        let stderr = self.stderr_text();
        assert_eq!(self.status.code(), Some(code), "stderr: {stderr}");
        assert!(
            self.stdout.is_empty(),
            "stdout: {}",
            String::from_utf8_lossy(&self.stdout)
        );
        assert!(stderr.contains(needle), "expected {needle:?} in: {stderr}");
    }
}
