//! `attention-lab heads`: the page's Heads measurement of a checkpoint's heads on a corpus
//! (`engine::experiments::heads::measure_heads`), with the verdict as the page words it
//! (`protocol::claims::Heads::verdict`). `train --heads-every` prints the same object.

use crate::json;
use crate::{is_encoder_decoder_dir, load_checkpoint, read_text, shown, CliError, COMMAND_HELP};
use engine::checkpoint::Checkpoint;
use engine::data::Corpus;
use engine::default_run::{DefaultRun, DEFAULT_CORPUS};
use engine::experiments::heads::{
    measure_heads, reading_options, HeadsMeasurement, MeasuredRow, RELATIONS, ROLES,
};
use engine::EngineError;
use protocol::claims::Heads;
use serde::Serialize;
use std::path::PathBuf;

/// What each field of the object means: `heads --help` and `train --help` (--heads-every).
pub const FIELDS: &str = "\
  relations: [\"self\", \"previous\", \"next\", \"[CLS]\", \"[SEP]\", \"rest\"], what a key is to its
    query (the first that holds, in the order self, [CLS], [SEP], previous, next; else rest)
  heads: [{\"layer\", \"head\" (from 1), \"shares\", \"errors\", \"role\"}] layer by layer:
    shares: the head's mean weight on each relation, over every counted query row (they sum to 1)
    errors: each share's standard error over the sentences (null below two sentences)
    role: the relation the head takes, or null: one of the first five holding at least 50% of
      its attention with 2 standard errors to spare, and more than the baseline (of several,
      the largest)
  baseline: the shares of a head that weighs alike every key it may see (under the mask), on
    the same rows: what position alone gives each relation
  verdict: \"borne out\" (two heads take different roles, both decided), \"not borne out\" (no
    two could, even were every call too close to call a role), else \"not decided\"
  text: the verdict's sentence, as the page's Heads card words it";

/// The roles of a checkpoint's heads, as the page's Heads claim measures them
///
/// Reads the sentences of a corpus as training would (consecutive pairs [CLS] A [SEP] B [SEP]
/// for an encoder, [CLS] sentence [SEP] for a decoder, under its causal mask; at most 32, at
/// most 32 tokens each, tokenised with the checkpoint's tokenizer) through the checkpoint in DIR
/// without dropout, and prints one JSON object: each head's share of attention on each
/// relation, and whether two heads take different roles.
#[derive(clap::Args)]
#[command(verbatim_doc_comment)]
#[command(help_template = COMMAND_HELP, after_help = after_help())]
pub struct Args {
    /// Checkpoint directory (config.json, model.safetensors, vocab.txt)
    #[arg(long, value_name = "DIR")]
    model: PathBuf,
    /// The sentences to read, one a line (default: the page's default corpus)
    #[arg(long, value_name = "FILE.txt")]
    corpus: Option<PathBuf>,
}

/// `heads --help`'s text after the flags.
fn after_help() -> String {
    format!(
        "Output, one JSON object, {{\"relations\", \"heads\", \"baseline\", \"verdict\", \"text\", \"rows\"}}:
{FIELDS}
  rows: [{{\"ids\", \"segments\", \"queries\"}}] the sentences measured, as the model read them:
    token ids, segment ids (0 first sentence, 1 second), and the query positions whose rows
    count (every one)

The text names no seed: a checkpoint's is not known here. A directory that is not a BERT
checkpoint, a corpus the checkpoint's vocabulary reads nothing of (or of fewer than two
sentences), or a model of fewer than 5 positions: exit code 1."
    )
}

/// The measurement as the command line prints it: `heads`' object, and `train --heads-every`'s
/// line (with `step`, without `rows`).
#[derive(Serialize)]
pub struct HeadsReport<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<u64>,
    relations: [&'static str; 6],
    heads: Vec<HeadReport>,
    baseline: [f64; 6],
    verdict: &'static str,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    rows: Option<&'a [MeasuredRow]>,
}

/// One head, numbered from 1 as the page names heads (L1 H1).
#[derive(Serialize)]
struct HeadReport {
    layer: usize,
    head: usize,
    shares: [f64; 6],
    /// None (null) where not finite: fewer than two sentences.
    errors: [Option<f64>; 6],
    role: Option<&'static str>,
}

/// The verdict as one of the contract's three words.
pub fn verdict_word(verdict: Option<bool>) -> &'static str {
    match verdict {
        Some(true) => "borne out",
        Some(false) => "not borne out",
        None => "not decided",
    }
}

impl<'a> HeadsReport<'a> {
    /// `m` with the verdict's sentence `text`; at `step` of a run (None: `heads`), with the
    /// measured rows when `rows`.
    pub fn new(m: &'a HeadsMeasurement, text: String, step: Option<u64>, rows: bool) -> Self {
        let per_layer = m.stats.heads.max(1);
        HeadsReport {
            step,
            relations: ROLES,
            heads: (0..m.stats.roles.len())
                .map(|k| HeadReport {
                    layer: k / per_layer + 1,
                    head: k % per_layer + 1,
                    shares: m.stats.roles[k],
                    errors: m.stats.role_error[k].map(|e| e.is_finite().then_some(e)),
                    role: m.roles[k].filter(|&r| r < RELATIONS).map(|r| ROLES[r]),
                })
                .collect(),
            baseline: m.stats.baseline,
            verdict: verdict_word(m.verdict),
            text,
            rows: rows.then_some(m.rows.as_slice()),
        }
    }
}

/// The sentence length a checkpoint is read at: the page's (the default run's), within the
/// positions the page gives it (`worker_core::lab::Lab::load`): a model that trains reads its
/// training batches' length, at most its positions; one without pre-training heads, at most
/// the tokens it takes (rotary models take more than their positions).
fn max_len(checkpoint: &Checkpoint) -> usize {
    let config = &checkpoint.model.config;
    let positions = match checkpoint.model.cls {
        Some(_) => config.max_position_embeddings,
        None => config.max_input_tokens(),
    };
    DefaultRun::MAX_LEN.min(positions)
}

pub fn run(a: &Args) -> Result<(), CliError> {
    let dir = &a.model;
    if is_encoder_decoder_dir(dir) {
        return Err(EngineError::Input(format!(
            "{}: an encoder–decoder checkpoint has two stacks of heads beside cross-attention; heads measures one BERT's self-attention (an encoder or a decoder)",
            shown(dir)
        ))
        .into());
    }
    let (text, source) = match &a.corpus {
        Some(path) => (read_text(path)?, shown(path)),
        None => (DEFAULT_CORPUS.to_string(), "the default corpus".to_string()),
    };
    let checkpoint = load_checkpoint(dir)?;
    // What the corpus's reading says, naming the corpus.
    let in_corpus = |e: EngineError| match e {
        EngineError::Data(m) => EngineError::Data(format!("{source}: {m}")),
        EngineError::Input(m) => EngineError::Input(format!("{source}: {m}")),
        other => other,
    };
    let corpus = Corpus::parse(&text, &checkpoint.tokenizer).map_err(in_corpus)?;
    let model = &checkpoint.model;
    let m = engine::threads::in_pool(|| {
        measure_heads(
            model,
            &corpus,
            max_len(&checkpoint),
            &reading_options(&model.config),
        )
    })
    .map_err(in_corpus)?;
    // A checkpoint's weights, trained elsewhere: its seed is not known here.
    let text = Heads::verdict(&m, 0, false, None).text;
    json::print(&HeadsReport::new(&m, text, None, true));
    Ok(())
}
