//! Which figures of the stepper the module computes for a model: each has exactly one marked
//! tensor of its size for every model with these features (`tools/check_pytorch_module.py`
//! checks the marks against the list `protocol/names.json` exports; `tests/pytorch.rs` checks
//! that the page draws each).

use super::{Feature, ModelShape};
use crate::figure::{FigureName, HeadMatrix};

impl ModelShape {
    /// The stepper's figures whose values a marked line of the module computes, for this model.
    pub fn computed_figures(&self) -> Vec<FigureName> {
        computed_figures(&self.features)
    }
}

/// `ModelShape::computed_figures` for a model with `features`.
pub fn computed_figures(features: &[Feature]) -> Vec<FigureName> {
    FigureName::all()
        .filter(|&f| computed(f, features))
        .collect()
}

fn computed(figure: FigureName, features: &[Feature]) -> bool {
    let cross = features.contains(&Feature::Cross);
    match figure {
        // Rotary and ALiBi models have no position embeddings: the page draws zeros.
        FigureName::EmbeddingsPosition => !cross && features.contains(&Feature::Absolute),
        FigureName::EmbeddingsToken
        | FigureName::EmbeddingsSegment
        | FigureName::EmbeddingsSum
        | FigureName::EmbeddingsNorm
        | FigureName::Input
        | FigureName::ConcatenatedHeads
        | FigureName::AttentionOutput
        | FigureName::AttentionAddNorm
        | FigureName::FfnPreActivation
        | FigureName::FfnActivation
        | FigureName::FfnOutput
        | FigureName::LayerOutput => !cross,
        FigureName::Head(m) => !cross && head_computed(m, features),
        // Cross-attention's walk is from its two inputs to its context.
        FigureName::CrossDecoderInput | FigureName::CrossEncoderOutput => cross,
        FigureName::Cross(m) => cross && head_computed(m, features),
        // Tiled attention is softmax's; a softmax model shows its Tiles when inspected tiled.
        FigureName::Tiles => !cross && features.contains(&Feature::Softmax),
        // The page computes these from the tiles (`engine::ops::flash::weights_from_tiles`).
        FigureName::TilesWeights => false,
        // Not the stepper's.
        FigureName::SummaryWeights
        | FigureName::AttentionRollout
        | FigureName::PoolerOutput
        | FigureName::MlmTransform
        | FigureName::ClaimHeatmap => false,
    }
}

/// The head matrices a model's attention forms: rotated q and k with rotary positions, φ(Q) and
/// φ(K) in linear attention, the scores in softmax's, ALiBi's bias with ALiBi.
fn head_computed(m: HeadMatrix, features: &[Feature]) -> bool {
    let has = |f: Feature| features.contains(&f);
    match m {
        HeadMatrix::RotatedQueries | HeadMatrix::RotatedKeys => has(Feature::Rotary),
        HeadMatrix::PhiQueries | HeadMatrix::PhiKeys => has(Feature::Linear),
        HeadMatrix::RawScores | HeadMatrix::ScaledScores | HeadMatrix::MaskedScores => {
            has(Feature::Softmax)
        }
        HeadMatrix::AlibiBias => has(Feature::Alibi),
        HeadMatrix::Queries
        | HeadMatrix::Keys
        | HeadMatrix::Values
        | HeadMatrix::Mask
        | HeadMatrix::Weights
        | HeadMatrix::Context => true,
    }
}
