//! What the Memory and Time claims share: one attention forward + backward per (variant, T),
//! at every length of [`LENGTHS`].

use engine::experiments::{log_log_slope, AttentionRun, Series, Variant, VariantSizes};
use serde::{Deserialize, Serialize};

/// The sizes every scaling claim measures at: one head of `d`, tiled blocks of [`BLOCK`].
pub fn sizes(d: usize) -> VariantSizes {
    VariantSizes {
        heads: 1,
        head_dim: d,
        block: BLOCK,
        window: None,
        kv_heads: None,
    }
}

/// Rows per block of the tiled kernels in these experiments.
pub const BLOCK: usize = 32;

/// The sequence lengths of the scaling claims.
pub const LENGTHS: [usize; 7] = [64, 128, 256, 512, 1024, 2048, 4096];

/// One measurement of a scaling claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    pub variant: Variant,
    pub seq_len: usize,
}

/// The units of a claim that compares `variants`, in the order the worker runs them (short
/// ones first, so the progress bar moves at once).
pub fn units(variants: &[Variant]) -> Vec<Unit> {
    LENGTHS
        .iter()
        .flat_map(|&seq_len| {
            variants
                .iter()
                .map(move |&variant| Unit { variant, seq_len })
        })
        .collect()
}

/// "T = 64 … 4096": the lengths measured, as the methods say them.
pub(super) fn lengths_text() -> String {
    format!("T = {} … {}", LENGTHS[0], LENGTHS[LENGTHS.len() - 1])
}

pub(super) fn series_of(
    units: &[(Unit, AttentionRun)],
    variant: Variant,
    y: fn(&AttentionRun) -> f64,
) -> Series {
    let picked: Vec<&(Unit, AttentionRun)> =
        units.iter().filter(|(u, _)| u.variant == variant).collect();
    Series {
        name: variant.label(),
        x: picked.iter().map(|(u, _)| u.seq_len as f64).collect(),
        y: picked.iter().map(|(_, r)| y(r)).collect(),
    }
}

pub(super) fn slope_text(s: &Series) -> String {
    log_log_slope(&s.x, &s.y).map_or("—".into(), |k| format!("{k:.2}"))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::claims::{Memory, Time};

    pub(in crate::claims) fn run(bytes: usize, ms: f64) -> AttentionRun {
        AttentionRun {
            forward_ms: ms,
            backward_ms: ms,
            peak_bytes: bytes,
        }
    }

    #[test]
    fn the_scaling_claims_measure_every_variant_at_every_length() {
        assert_eq!(units(&Memory::VARIANTS).len(), 2 * LENGTHS.len());
        assert_eq!(units(&Time::VARIANTS).len(), 4 * LENGTHS.len());
        assert!(units(&[]).is_empty());
        assert_eq!(
            units(&Time::VARIANTS)[0],
            Unit {
                variant: Variant::Full,
                seq_len: 64
            }
        );
        for v in Time::VARIANTS {
            assert!(v.options(sizes(16)).is_ok(), "{v:?}");
        }
    }
}
