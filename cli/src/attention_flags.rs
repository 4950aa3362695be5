//! `--window W` and `--attention full|tiled [--block N]`, shared by `inspect`, `train` and `scaling`.

use crate::args::{value, UsageError};
use engine::ops::attention::{AttentionKernel, AttentionOptions, Softmax};
use engine::{EngineError, MaskMode};

/// Tiled attention's block size when `--block` is not given: FlashAttention's 64 rows, where the
/// per-block bookkeeping is small against the block's products (16 was 1.55× slower than full at
/// T = 4096, 64 about 1.0×).
pub const DEFAULT_BLOCK: usize = 64;

#[derive(clap::Args)]
pub struct AttentionFlags {
    /// Sliding window: query i sees key j only if |i − j| < W (with --mask causal: 0 ≤ i − j < W)
    #[arg(long, value_name = "W", allow_hyphen_values = true, value_parser = value::<usize>("a whole number of keys"))]
    window: Option<usize>,
    /// Softmax attention kernel: the whole T×T matrix, or FlashAttention-2 style tiles
    #[arg(long, value_enum, default_value_t = Kernel::Full)]
    attention: Kernel,
    /// Rows per query and key block of --attention tiled [default: 64]
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = value::<usize>("a whole number of rows"))]
    block: Option<usize>,
}

/// The `--attention` choices.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kernel {
    /// Whole T×T weights, kept for backward
    Full,
    /// Query blocks × key blocks, online softmax, only the row log-sum-exp kept
    Tiled,
}

impl AttentionFlags {
    /// How softmax attention runs, or a usage mistake of `command`.
    pub fn resolve(&self, command: &'static str) -> Result<Softmax, UsageError> {
        let (window, kernel) = resolve(command, self.window, self.attention, self.block)?;
        Ok(Softmax { kernel, window })
    }
}

/// Checks the flags' values against each other: W ≥ 1, N ≥ 1, `--block` only with tiled.
pub fn resolve(
    command: &'static str,
    window: Option<usize>,
    kernel: Kernel,
    block: Option<usize>,
) -> Result<(Option<usize>, AttentionKernel), UsageError> {
    if window == Some(0) {
        return Err(UsageError::new(
            command,
            "--window must be at least 1 (a query always sees itself)",
        ));
    }
    if block == Some(0) {
        return Err(UsageError::new(command, "--block must be at least 1"));
    }
    let kernel = match (kernel, block) {
        (Kernel::Full, Some(_)) => {
            return Err(UsageError::new(
                command,
                "--block goes with --attention tiled",
            ))
        }
        (Kernel::Full, None) => AttentionKernel::Full,
        (Kernel::Tiled, block) => AttentionKernel::Tiled {
            block: block.unwrap_or(DEFAULT_BLOCK),
        },
    };
    Ok((window, kernel))
}

/// Refuses full attention weights over the engine's limit
/// (`engine::ops::attention_options::MAX_WEIGHT_BYTES`) before a command allocates them; `sizes`
/// names the flags that set them, and the refusal is a usage error naming them.
pub fn check_weight_bytes(
    opts: &AttentionOptions,
    (layers, b, t): (usize, usize, usize),
    sizes: &str,
) -> Result<(), String> {
    opts.check_weight_bytes((layers, b, t, t), sizes)
        .map_err(|e| match e {
            EngineError::Input(message) => message,
            other => other.to_string(),
        })
}

/// The `--mask` choices.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Mask {
    /// Padding keys masked (BERT's own mask)
    Padding,
    /// Padding and future keys masked (query i sees keys j ≤ i)
    Causal,
    /// Nothing masked, padding included
    None,
}

impl From<Mask> for MaskMode {
    fn from(m: Mask) -> Self {
        match m {
            Mask::Padding => MaskMode::Padding,
            Mask::Causal => MaskMode::Causal,
            Mask::None => MaskMode::None,
        }
    }
}
