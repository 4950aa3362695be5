//! `--window W` and `--attention full|tiled [--block N]`, shared by `inspect`, `train` and `scaling`.

use crate::args::{value, UsageError};
use engine::ops::attention::{AttentionKernel, AttentionOptions};

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
    /// The window and kernel, or a usage mistake of `command`.
    pub fn resolve(
        &self,
        command: &'static str,
    ) -> Result<(Option<usize>, AttentionKernel), UsageError> {
        resolve(command, self.window, self.attention, self.block)
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

/// The most bytes of T×T attention weights a command may ask for (4 GiB): full attention keeps
/// L·B·H·T² floats for backward, so sizes given as flags are checked before they allocate
/// (a failed allocation aborts the process with no message).
pub const MAX_WEIGHT_BYTES: u64 = 4 << 30;

/// Refuses full attention weights over [`MAX_WEIGHT_BYTES`]; `sizes` names the flags that set
/// them. Tiled and linear attention never hold T×T and are not bounded here.
pub fn check_weight_bytes(
    opts: &AttentionOptions,
    (layers, b, t): (usize, usize, usize),
    sizes: &str,
) -> Result<(), String> {
    if opts.linear || opts.kernel != AttentionKernel::Full {
        return Ok(());
    }
    let h = opts.num_heads;
    let bytes = [layers, b, h, t, t, 4]
        .iter()
        .fold(1u64, |n, &x| n.saturating_mul(x as u64));
    if bytes > MAX_WEIGHT_BYTES {
        return Err(format!(
            "{sizes} would need {:.1} GB for full attention's weights ({layers} layers × {b} × {h} heads × {t}² floats); the limit is {} GB (tiled attention holds no T×T)",
            bytes as f64 / 1e9,
            MAX_WEIGHT_BYTES >> 30
        ));
    }
    Ok(())
}
