//! `attention-lab`: the engine from the command line. The commands and their flags are the clap
//! structs below and in each command's module; `--help` is derived from them.
//!
//! Results go to stdout as JSON; notes and errors to stderr. Exit code 0 on success, 1 when the
//! work fails (a bad checkpoint, a diverged run), 2 for a usage mistake.

mod args;
mod attention_flags;
mod generate;
mod heads;
mod inspect;
mod json;
mod scaling;
mod train;

/// Counts live heap bytes for `scaling`'s peak_bytes.
#[global_allocator]
static ALLOCATOR: engine::counting_alloc::Counting = engine::counting_alloc::Counting;

use args::{value, UsageError};
use clap::{CommandFactory, Parser, Subcommand};
use engine::checkpoint::Checkpoint;
use engine::seq2seq::Seq2SeqCheckpoint;
use engine::EngineError;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Help of every command: its usage line first ("attention-lab inspect --model …").
pub const COMMAND_HELP: &str = "\
{usage}

{about-with-newline}
{all-args}{after-help}";

#[derive(Parser)]
#[command(
    name = "attention-lab",
    about = "attention-lab: inspect, train and generate with BERT (Hugging Face checkpoints), and measure its heads, with the Attention Lab engine",
    subcommand_required = true,
    help_template = "{about}\n\nusage: {usage}\n\ncommands:\n{subcommands}{after-help}",
    after_help = "`attention-lab COMMAND --help` describes each command."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands' names, to show the usage of the one a mistake is in.
const COMMANDS: [&str; 6] = [
    "inspect", "train", "generate", "tokenize", "scaling", "heads",
];

#[derive(Subcommand)]
enum Command {
    Inspect(inspect::Args),
    // Parsed once per run: the box only keeps the enum small.
    Train(Box<train::Args>),
    Generate(generate::Args),
    Tokenize(TokenizeArgs),
    Scaling(scaling::Args),
    Heads(heads::Args),
}

/// The tokens and ids of a text, as HF's tokenizer gives them
///
/// Tokenises TEXT with the checkpoint's tokenizer (vocab.txt, tokenizer_config.json) and prints
/// {"tokens": [...], "input_ids": [...]}: the tokens as HF's tokenizer.tokenize gives them,
/// without [CLS]/[SEP], and their ids.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
#[command(help_template = COMMAND_HELP)]
struct TokenizeArgs {
    /// Checkpoint directory
    #[arg(long, value_name = "DIR")]
    model: PathBuf,
    /// Text to tokenise
    #[arg(long, allow_hyphen_values = true, value_parser = value::<String>("valid UTF-8"))]
    text: String,
}

pub enum CliError {
    Usage(UsageError),
    Engine(EngineError),
}

impl From<EngineError> for CliError {
    fn from(e: EngineError) -> Self {
        CliError::Engine(e)
    }
}

impl From<UsageError> for CliError {
    fn from(e: UsageError) -> Self {
        CliError::Usage(e)
    }
}

/// A path as engine errors show it.
pub fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// A text file's contents, or an I/O error naming it.
pub fn read_text(path: &Path) -> Result<String, CliError> {
    std::fs::read_to_string(path).map_err(|e| {
        CliError::Engine(engine::EngineError::Io {
            path: shown(path),
            message: e.to_string(),
        })
    })
}

/// A directory whose config.json says `model_type: "encoder-decoder"`.
pub fn is_encoder_decoder_dir(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(engine::checkpoint::CONFIG_FILE))
        .is_ok_and(|text| engine::seq2seq::is_encoder_decoder(&text))
}

/// Loads an encoder–decoder checkpoint directory.
pub fn load_seq2seq_checkpoint(dir: &Path) -> Result<Seq2SeqCheckpoint, CliError> {
    Ok(engine::seq2seq::load(&engine::checkpoint::read_dir(dir)?)?)
}

/// Loads a checkpoint directory and says on stderr which of its tensors are not used.
pub fn load_checkpoint(dir: &Path) -> Result<Checkpoint, CliError> {
    let checkpoint = engine::checkpoint::load_dir(dir)?;
    let ignored = &checkpoint.naming.ignored;
    if !ignored.is_empty() {
        let shown: Vec<&str> = ignored.iter().take(5).map(String::as_str).collect();
        let more = if ignored.len() > 5 {
            format!(" and {} more", ignored.len() - 5)
        } else {
            String::new()
        };
        eprintln!(
            "note: {}: {} tensors are not BERT's and are ignored: {}{more}",
            dir.display(),
            ignored.len(),
            shown.join(", ")
        );
    }
    Ok(checkpoint)
}

fn tokenize(a: &TokenizeArgs) -> Result<(), CliError> {
    let checkpoint = load_checkpoint(&a.model)?;
    let tokens = checkpoint.tokenizer.tokenize(&a.text);
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

/// The usage line of `command` (or of the whole program).
fn usage_of(command: Option<&str>) -> String {
    let mut cli = Cli::command();
    cli.build();
    match command.and_then(|c| cli.find_subcommand_mut(c)) {
        Some(sub) => sub.render_usage().to_string(),
        None => cli.render_usage().to_string(),
    }
}

fn usage_failure(message: &str, usage: &str, command: Option<&str>) -> ExitCode {
    let help = match command {
        Some(c) => format!("attention-lab {c} --help"),
        None => "attention-lab --help".into(),
    };
    eprintln!(
        "error: {message}\n\n{}\n\nMore: `{help}`.",
        usage.trim_end()
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    engine::threads::keep_freed_memory();
    let args: Vec<OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // clap gives the usage line only for some errors: the command is the first argument.
            let command = args.get(1).and_then(|c| c.to_str());
            let command = COMMANDS.into_iter().find(|&c| command == Some(c));
            let usage = match e.get(clap::error::ContextKind::Usage) {
                Some(clap::error::ContextValue::StyledStr(s)) => s.to_string(),
                _ => usage_of(command),
            };
            return usage_failure(&args::message(&e, &args), &usage, command);
        }
    };
    let result = match &cli.command {
        Command::Inspect(a) => inspect::run(a),
        Command::Train(a) => train::run(a),
        Command::Generate(a) => generate::run(a),
        Command::Tokenize(a) => tokenize(a),
        Command::Scaling(a) => scaling::run(a),
        Command::Heads(a) => heads::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(e)) => {
            usage_failure(&e.message, &usage_of(Some(e.command)), Some(e.command))
        }
        Err(CliError::Engine(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
