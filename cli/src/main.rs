//! `attention-lab`: the engine from the command line.
//!
//!   attention-lab inspect  --model DIR --text TEXT [--pair TEXT] [--mask padding|causal] [--pad-to N]
//!   attention-lab train    --model DIR --batch FILE.json --optimizer sgd|adam --lr F --steps N [--save OUT]
//!   attention-lab train    --init CONFIG.json --corpus FILE.txt [--steps N] [--save OUT] ...
//!   attention-lab tokenize --model DIR --text TEXT
//!
//! Results go to stdout as JSON; notes and errors to stderr. Exit code 0 on success, 1 when the
//! work fails (a bad checkpoint, a diverged run), 2 for a usage mistake.

mod args;
mod inspect;
mod json;
mod train;

use args::{Parsed, Spec, UsageError};
use engine::checkpoint::Checkpoint;
use engine::EngineError;
use std::process::ExitCode;

const USAGE: &str = "\
attention-lab: inspect and train BERT (Hugging Face checkpoints) with the Attention Lab engine

usage:
  attention-lab inspect  --model DIR --text TEXT [--pair TEXT] [--mask padding|causal] [--pad-to N]
  attention-lab train    --model DIR --batch FILE.json --optimizer sgd|adam --lr F --steps N [--save OUT]
  attention-lab train    --init CONFIG.json --corpus FILE.txt [--steps N] [--save OUT] [...]
  attention-lab tokenize --model DIR --text TEXT

`attention-lab COMMAND --help` describes each command.";

const TOKENIZE: Spec = Spec {
    flags: &["model", "text"],
    help: "\
attention-lab tokenize --model DIR --text TEXT

Tokenises TEXT with the checkpoint's tokenizer (vocab.txt, tokenizer_config.json) and prints
{\"tokens\": [...], \"input_ids\": [...]}: the tokens as HF's tokenizer.tokenize gives them,
without [CLS]/[SEP], and their ids.",
};

pub enum CliError {
    Usage(UsageError, &'static str),
    Engine(EngineError),
}

impl From<EngineError> for CliError {
    fn from(e: EngineError) -> Self {
        CliError::Engine(e)
    }
}

/// Parses a subcommand's flags; `None` when `--help` was printed.
pub fn flags(args: &[String], spec: &Spec) -> Result<Option<args::Flags>, CliError> {
    match args::parse(args, spec).map_err(|e| CliError::Usage(e, spec.help))? {
        Parsed::Help => {
            println!("{}", spec.help);
            Ok(None)
        }
        Parsed::Flags(f) => Ok(Some(f)),
    }
}

/// Wraps a usage mistake with the help of the subcommand it belongs to.
pub fn usage<T>(r: Result<T, UsageError>, spec: &Spec) -> Result<T, CliError> {
    r.map_err(|e| CliError::Usage(e, spec.help))
}

/// Loads a checkpoint directory and says on stderr which of its tensors are not used.
pub fn load_checkpoint(dir: &str) -> Result<Checkpoint, CliError> {
    let checkpoint = engine::checkpoint::load_dir(std::path::Path::new(dir))?;
    let ignored = &checkpoint.naming.ignored;
    if !ignored.is_empty() {
        let shown: Vec<&str> = ignored.iter().take(5).map(String::as_str).collect();
        let more = if ignored.len() > 5 {
            format!(" and {} more", ignored.len() - 5)
        } else {
            String::new()
        };
        eprintln!(
            "note: {dir}: {} tensors are not BERT's and are ignored: {}{more}",
            ignored.len(),
            shown.join(", ")
        );
    }
    Ok(checkpoint)
}

fn tokenize(args: &[String]) -> Result<(), CliError> {
    let Some(f) = flags(args, &TOKENIZE)? else {
        return Ok(());
    };
    let (dir, text) = (
        usage(f.required("model"), &TOKENIZE)?,
        usage(f.required("text"), &TOKENIZE)?,
    );
    let checkpoint = load_checkpoint(dir)?;
    let tokens = checkpoint.tokenizer.tokenize(text);
    let vocab = checkpoint.tokenizer.vocab();
    let input_ids: Vec<u32> = tokens.iter().map(|t| vocab.id_or_unk(t)).collect();
    #[derive(serde::Serialize)]
    struct Output {
        tokens: Vec<String>,
        input_ids: Vec<u32>,
    }
    json::print(&Output { tokens, input_ids });
    Ok(())
}

fn run(args: &[String]) -> Result<(), CliError> {
    let Some(command) = args.first() else {
        return Err(CliError::Usage(
            UsageError("no command given".into()),
            USAGE,
        ));
    };
    let rest = &args[1..];
    match command.as_str() {
        "inspect" => inspect::run(rest),
        "train" => train::run(rest),
        "tokenize" => tokenize(rest),
        "--help" | "-h" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(CliError::Usage(
            UsageError(format!("unknown command {other:?}")),
            USAGE,
        )),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(UsageError(message), help)) => {
            eprintln!("error: {message}\n\n{help}");
            ExitCode::from(2)
        }
        Err(CliError::Engine(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
