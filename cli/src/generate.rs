//! `attention-lab generate`: continue a prompt with a decoder, one JSON line per new token.

use crate::args::{value, UsageError};
use crate::json;
use crate::{load_checkpoint, CliError, COMMAND_HELP};
use engine::generate::{Decoding, GenerateOptions, Generator};
use serde::Serialize;
use std::path::PathBuf;

/// Continues PROMPT with a decoder (a BertLMHeadModel checkpoint, is_decoder)
#[derive(clap::Args)]
#[command(
    help_template = COMMAND_HELP,
    after_help = "\
The prompt is [CLS] followed by PROMPT's tokens, with no closing [SEP]. Generation stops after
[SEP] or after N new tokens. With no --temperature, decoding is greedy (the most probable
token); with it, each token is drawn from softmax(logits / F), over the K most probable tokens
with --top-k, from a generator seeded by S. Each new token computes only its own q, k and v and
attends over the cached keys and values (--no-cache: the whole sequence runs again for every
token; the tokens are the same).

Prints one line per new token:
  {\"step\", \"token\", \"id\", \"prob\", \"kv_cache_bytes\"}
prob: the softmax probability of the token before temperature and top-k; kv_cache_bytes: the
self-attention keys and values of every position so far (layers x 2 x positions x K/V heads x
head size x 4). An encoder-decoder also holds the source's cross-attention keys and values,
computed once before the first token and not counted here.
Then a last line {\"text\": ...}: the new tokens joined as the tokenizer would write them.
With an encoder–decoder checkpoint, PROMPT is the source ([CLS] PROMPT [SEP]) and the decoder
starts from [CLS]."
)]
pub struct Args {
    /// Decoder checkpoint directory
    #[arg(long, value_name = "DIR")]
    model: PathBuf,
    /// The prompt
    #[arg(long, value_name = "PROMPT", allow_hyphen_values = true, value_parser = value::<String>("valid UTF-8"))]
    text: String,
    /// At most N new tokens
    #[arg(long, value_name = "N", default_value_t = 20, allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    max_new: usize,
    /// Sample at temperature F (above 0) instead of greedy decoding
    #[arg(long, value_name = "F", allow_hyphen_values = true, value_parser = value::<f32>("a number"))]
    temperature: Option<f32>,
    /// Sample among the K most probable tokens (with --temperature)
    #[arg(long, value_name = "K", allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    top_k: Option<usize>,
    /// Seed of sampling
    #[arg(long, value_name = "S", default_value_t = 0, allow_hyphen_values = true, value_parser = value::<u64>("a whole number"))]
    seed: u64,
    /// Run the whole sequence again for every token instead of caching keys and values
    #[arg(long)]
    no_cache: bool,
}

#[derive(Serialize)]
struct TokenLine<'a> {
    step: usize,
    token: &'a str,
    id: u32,
    prob: f32,
    kv_cache_bytes: usize,
}

#[derive(Serialize)]
struct TextLine {
    text: String,
}

pub fn run(a: &Args) -> Result<(), CliError> {
    let decoding = match (a.temperature, a.top_k) {
        (None, Some(_)) => {
            return Err(
                UsageError::new("generate", "--top-k needs --temperature (sampling)").into(),
            )
        }
        (None, None) => Decoding::Greedy,
        (Some(temperature), top_k) => Decoding::Sample { temperature, top_k },
    };
    let empty = || UsageError::new("generate", "--text is empty: give a prompt to continue");
    if a.text.trim().is_empty() {
        return Err(empty().into());
    }
    let options = |stop_id| GenerateOptions {
        max_new: a.max_new,
        decoding,
        seed: a.seed,
        stop_id: Some(stop_id),
        use_cache: !a.no_cache,
    };
    // An encoder–decoder: the text is the source, and generation starts from [CLS].
    if crate::is_encoder_decoder_dir(&a.model) {
        let checkpoint = crate::load_seq2seq_checkpoint(&a.model)?;
        let tokenizer = &checkpoint.tokenizer;
        let vocab = tokenizer.vocab();
        let mut source = vec![vocab.cls_id()?];
        source.extend(tokenizer.token_ids(&a.text));
        if source.len() == 1 {
            return Err(empty().into());
        }
        source.push(vocab.sep_id()?);
        let generator =
            engine::seq2seq::generator(&checkpoint.model, &source, options(vocab.sep_id()?))?;
        return emit(generator, tokenizer);
    }
    let checkpoint = load_checkpoint(&a.model)?;
    let vocab = checkpoint.tokenizer.vocab();
    let mut prompt = vec![vocab.cls_id()?];
    prompt.extend(checkpoint.tokenizer.token_ids(&a.text));
    if prompt.len() == 1 {
        return Err(empty().into());
    }
    let generator = Generator::new(&checkpoint.model, &prompt, options(vocab.sep_id()?))?;
    emit(generator, &checkpoint.tokenizer)
}

/// One line per new token, then the text.
fn emit<M: std::borrow::Borrow<engine::BertForPreTraining>>(
    mut generator: Generator<M>,
    tokenizer: &engine::tokenizer::Tokenizer,
) -> Result<(), CliError> {
    let vocab = tokenizer.vocab();
    let mut tokens = Vec::new();
    while let Some(t) = generator.next_token()? {
        let token = vocab.token(t.id).unwrap_or("[UNK]");
        json::print(&TokenLine {
            step: tokens.len() + 1,
            token,
            id: t.id,
            prob: t.prob,
            kv_cache_bytes: t.kv_cache_bytes,
        });
        tokens.push(token.to_string());
    }
    json::print(&TextLine {
        text: tokenizer.detokenize(&tokens),
    });
    Ok(())
}
