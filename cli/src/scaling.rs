//! `attention-lab scaling`: time and memory of one attention forward + backward per sequence
//! length, for one variant, as JSON lines.

use crate::args::{value, UsageError};
use crate::attention_flags::{self, Kernel};
use crate::{json, CliError, COMMAND_HELP};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use engine::experiments::{time_attention, Variant, VariantSizes};
use engine::ops::attention::{AttentionKernel, AttentionOptions};
use engine::{EngineError, Rng};
use serde::Serialize;
use std::time::Instant;

/// Times one attention forward + backward per sequence length
///
/// One call of the engine's attention op (no projections, no dropout, no padding: every key
/// is real) on random q, k, v of shape (B=1, T, H·D), k and v with G groups, and a random
/// gradient of the output. Prints one JSON line per length:
///   {"variant", "seq_len", "forward_ms", "backward_ms", "peak_bytes"}
/// forward_ms and backward_ms are timed as the page's Time claim times them: one run, or, when
/// it takes under 20 ms, the mean of as many further runs as fill 20 ms (at most 200).
/// peak_bytes is the most heap bytes live at once during forward + backward
/// minus those live just before (q, k, v, the key mask, dO and the zeroed dQ, dK, dV): what
/// the op itself allocates, its output and cache included, counted by the binary's allocator.
///
/// Variants: see --variant below. --window adds a window to full, tiled or gqa too.
#[derive(clap::Args)]
#[command(verbatim_doc_comment, help_template = COMMAND_HELP)]
pub struct Args {
    /// Which attention to measure
    #[arg(long, value_parser = variant_parser())]
    variant: Variant,
    /// Sliding window W [default: 64 with --variant window]
    #[arg(long, value_name = "W", allow_hyphen_values = true, value_parser = value::<usize>("a whole number of keys"))]
    window: Option<usize>,
    /// Sequence lengths, comma-separated
    #[arg(long, value_name = "T,T,...", value_delimiter = ',', allow_hyphen_values = true,
          default_value = "64,128,256,512,1024,2048,4096",
          value_parser = value::<usize>("whole numbers of tokens, comma-separated"))]
    seq_lens: Vec<usize>,
    /// H, query heads
    #[arg(long, value_name = "H", default_value_t = 4, allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    heads: usize,
    /// G, K/V groups; must divide H [default: H; 1 with --variant gqa]
    #[arg(long, value_name = "G", allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    kv_heads: Option<usize>,
    /// D, width of a head
    #[arg(long, value_name = "D", default_value_t = 16, allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    head_dim: usize,
    /// Rows per block of the tiled kernel (tiled, window) [default: 64]
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = value::<usize>("a whole number of rows"))]
    block: Option<usize>,
}

/// `--variant`'s values: the engine's list of variants, with their descriptions as help.
fn variant_parser() -> impl clap::builder::TypedValueParser<Value = Variant> {
    let values = Variant::ALL.map(|v| PossibleValue::new(v.name()).help(v.describe()));
    PossibleValuesParser::new(values)
        .try_map(|name| Variant::from_name(&name).ok_or("is not a variant"))
}

#[derive(Serialize)]
struct Line {
    variant: Variant,
    seq_len: usize,
    forward_ms: f64,
    backward_ms: f64,
    peak_bytes: usize,
}

fn usage_error(message: impl Into<String>) -> CliError {
    CliError::Usage(UsageError::new("scaling", message))
}

/// The attention settings of the variant, checked.
fn options(a: &Args) -> Result<AttentionOptions, CliError> {
    if a.block.is_some() && !a.variant.tiled() {
        return Err(usage_error("--block goes with --variant tiled or window"));
    }
    if a.heads == 0 || a.head_dim == 0 {
        return Err(usage_error("--heads and --head-dim must be at least 1"));
    }
    let (window, kernel) = attention_flags::resolve(
        "scaling",
        a.window,
        if a.variant.tiled() {
            Kernel::Tiled
        } else {
            Kernel::Full
        },
        a.block,
    )?;
    if a.seq_lens.contains(&0) {
        return Err(usage_error("--seq-lens must be at least 1 each"));
    }
    let block = match kernel {
        AttentionKernel::Tiled { block } => block,
        AttentionKernel::Full => attention_flags::DEFAULT_BLOCK,
    };
    let sizes = VariantSizes {
        heads: a.heads,
        head_dim: a.head_dim,
        block,
        window,
        kv_heads: a.kv_heads,
    };
    // Only flags made these settings: a refusal is a usage mistake.
    a.variant.options(sizes).map_err(|e| match e {
        EngineError::Input(m) => usage_error(m),
        other => CliError::Engine(other),
    })
}

pub fn run(a: &Args) -> Result<(), CliError> {
    // One thread: peak_bytes counts one attention's working memory, and the GEMM's packing
    // buffers on other threads would be counted or not as the pool happens to schedule.
    engine::threads::set_threads(1)?;
    let opts = options(a)?;
    for &t in &a.seq_lens {
        attention_flags::check_weight_bytes(&opts, (1, 1, t), &format!("--seq-lens {t}"))
            .map_err(usage_error)?;
    }
    let mut rng = Rng::new(0);
    let clock = Instant::now();
    let now = || clock.elapsed().as_secs_f64() * 1e3;
    for &t in &a.seq_lens {
        let measured = time_attention(t, a.head_dim, &opts, &mut rng, now);
        // Microseconds are below the noise of a shared machine.
        let ms = |x: f64| (x * 1e3).round() / 1e3;
        json::print(&Line {
            variant: a.variant,
            seq_len: t,
            forward_ms: ms(measured.forward_ms),
            backward_ms: ms(measured.backward_ms),
            peak_bytes: measured.peak_bytes,
        });
    }
    Ok(())
}
