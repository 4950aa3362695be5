//! What each heatmap of the page shows, as a name: its `data-figure` attribute, the handle the
//! tour, the tests and the PyTorch module's stage marks (`pytorch`) find a figure by. Captions
//! are free text for the reader; these names are a contract (kebab-case, stable). A stage's
//! name, the stepper button's `data-stage`, is `stage::Stage::name`.
//!
//! `protocol/names.json` lists every name for the tools outside Rust (the Python checker of the
//! module's marks, the end-to-end tests); `protocol/tests/names.rs` keeps it current.

/// One matrix of a head's attention, as a stage shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HeadMatrix {
    Queries,
    /// Rotary positions: R(t)q, from which the scores are built.
    RotatedQueries,
    Keys,
    RotatedKeys,
    Values,
    /// Linear attention: φ(Q) = elu(Q) + 1.
    PhiQueries,
    PhiKeys,
    /// QKᵀ, before any scaling.
    RawScores,
    ScaledScores,
    /// ALiBi positions: −m·|i − j|.
    AlibiBias,
    /// M: 0 or −∞.
    Mask,
    MaskedScores,
    /// Softmax's weights, or those linear attention implies.
    Weights,
    Context,
}

impl HeadMatrix {
    pub const ALL: [HeadMatrix; 14] = [
        HeadMatrix::Queries,
        HeadMatrix::RotatedQueries,
        HeadMatrix::Keys,
        HeadMatrix::RotatedKeys,
        HeadMatrix::Values,
        HeadMatrix::PhiQueries,
        HeadMatrix::PhiKeys,
        HeadMatrix::RawScores,
        HeadMatrix::ScaledScores,
        HeadMatrix::AlibiBias,
        HeadMatrix::Mask,
        HeadMatrix::MaskedScores,
        HeadMatrix::Weights,
        HeadMatrix::Context,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HeadMatrix::Queries => "queries",
            HeadMatrix::RotatedQueries => "rotated-queries",
            HeadMatrix::Keys => "keys",
            HeadMatrix::RotatedKeys => "rotated-keys",
            HeadMatrix::Values => "values",
            HeadMatrix::PhiQueries => "phi-queries",
            HeadMatrix::PhiKeys => "phi-keys",
            HeadMatrix::RawScores => "raw-scores",
            HeadMatrix::ScaledScores => "scaled-scores",
            HeadMatrix::AlibiBias => "alibi-bias",
            HeadMatrix::Mask => "mask",
            HeadMatrix::MaskedScores => "masked-scores",
            HeadMatrix::Weights => "weights",
            HeadMatrix::Context => "context",
        }
    }
}

/// What a heatmap shows. A matrix keeps its name wherever it is shown (the weights at Softmax,
/// at · V and beside the Tiles, h at both Add & Norms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FigureName {
    /// E_token[w]
    EmbeddingsToken,
    /// E_position[i]
    EmbeddingsPosition,
    /// E_segment[s]
    EmbeddingsSegment,
    EmbeddingsSum,
    /// LayerNorm(sum): layer 1's X.
    EmbeddingsNorm,
    /// The layer's input X.
    Input,
    /// Every head's context side by side.
    ConcatenatedHeads,
    /// Concat · W_O.
    AttentionOutput,
    /// h = LayerNorm(X + attention output).
    AttentionAddNorm,
    /// h W₁ + b₁
    FfnPreActivation,
    /// GELU(h W₁ + b₁)
    FfnActivation,
    FfnOutput,
    /// LayerNorm(h + feed-forward output): the next layer's X.
    LayerOutput,
    /// The selected head of self-attention (or of the encoder).
    Head(HeadMatrix),
    /// Cross-attention's queries' source: the decoder's X after its self-attention.
    CrossDecoderInput,
    /// Cross-attention's keys' and values' source: the encoder's output H.
    CrossEncoderOutput,
    /// The selected head of cross-attention: `cross-` and the head matrix's name.
    Cross(HeadMatrix),
    /// The Tiles stage's output rows O = acc / l as their blocks finish: what tiled attention
    /// computes in place of weights · V.
    Tiles,
    /// The weights the tiles give, exp(S − m)/l, set beside the full kernel's when the last
    /// block is done.
    TilesWeights,
    /// The selected head's weights, always in view beside the model view.
    SummaryWeights,
    /// What each token draws on across all layers.
    AttentionRollout,
    /// The pooler's output tanh(W·h_[CLS] + b).
    PoolerOutput,
    /// The MLM transform LayerNorm(GELU(h W_t + b_t)).
    MlmTransform,
    /// A claim's result as a table (the Heads claim's roles, Induction heads' scores); the
    /// claim's card names the claim.
    ClaimHeatmap,
}

/// The figures that are not a head's matrix, in the order `FigureName::all` lists them.
const WHOLE: [FigureName; 22] = [
    FigureName::EmbeddingsToken,
    FigureName::EmbeddingsPosition,
    FigureName::EmbeddingsSegment,
    FigureName::EmbeddingsSum,
    FigureName::EmbeddingsNorm,
    FigureName::Input,
    FigureName::ConcatenatedHeads,
    FigureName::AttentionOutput,
    FigureName::AttentionAddNorm,
    FigureName::FfnPreActivation,
    FigureName::FfnActivation,
    FigureName::FfnOutput,
    FigureName::LayerOutput,
    FigureName::CrossDecoderInput,
    FigureName::CrossEncoderOutput,
    FigureName::Tiles,
    FigureName::TilesWeights,
    FigureName::SummaryWeights,
    FigureName::AttentionRollout,
    FigureName::PoolerOutput,
    FigureName::MlmTransform,
    FigureName::ClaimHeatmap,
];

impl FigureName {
    /// Every figure: those of `WHOLE`, then each head matrix of self- and of cross-attention.
    pub fn all() -> impl Iterator<Item = FigureName> {
        WHOLE
            .into_iter()
            .chain(HeadMatrix::ALL.map(FigureName::Head))
            .chain(HeadMatrix::ALL.map(FigureName::Cross))
    }

    /// The `data-figure` attribute.
    pub fn name(self) -> String {
        let fixed = match self {
            FigureName::EmbeddingsToken => "embeddings-token",
            FigureName::EmbeddingsPosition => "embeddings-position",
            FigureName::EmbeddingsSegment => "embeddings-segment",
            FigureName::EmbeddingsSum => "embeddings-sum",
            FigureName::EmbeddingsNorm => "embeddings-norm",
            FigureName::Input => "input",
            FigureName::ConcatenatedHeads => "concatenated-heads",
            FigureName::AttentionOutput => "attention-output",
            FigureName::AttentionAddNorm => "attention-add-norm",
            FigureName::FfnPreActivation => "ffn-pre-activation",
            FigureName::FfnActivation => "ffn-activation",
            FigureName::FfnOutput => "ffn-output",
            FigureName::LayerOutput => "layer-output",
            FigureName::Head(m) => m.name(),
            FigureName::CrossDecoderInput => "cross-decoder-input",
            FigureName::CrossEncoderOutput => "cross-encoder-output",
            FigureName::Cross(m) => return format!("cross-{}", m.name()),
            FigureName::Tiles => "tiles",
            FigureName::TilesWeights => "tiles-weights",
            FigureName::SummaryWeights => "summary-weights",
            FigureName::AttentionRollout => "attention-rollout",
            FigureName::PoolerOutput => "pooler-output",
            FigureName::MlmTransform => "mlm-transform",
            FigureName::ClaimHeatmap => "claim-heatmap",
        };
        fixed.to_string()
    }

    /// The figure named `name` (`data-figure`), if there is one.
    pub fn from_name(name: &str) -> Option<FigureName> {
        FigureName::all().find(|f| f.name() == name)
    }

    /// The figure whose lines compute this one in the PyTorch module: cross-attention's head
    /// matrices are computed by the same lines as self-attention's (`cross-weights` by those
    /// of `weights`); every other figure by its own.
    pub fn computed_as(self) -> FigureName {
        match self {
            FigureName::Cross(m) => FigureName::Head(m),
            f => f,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_figure_has_a_kebab_case_name_of_its_own_that_reads_back() {
        let all: Vec<FigureName> = FigureName::all().collect();
        let names: HashSet<String> = all.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), all.len(), "{names:?}");
        assert_eq!(all.len(), WHOLE.len() + 2 * HeadMatrix::ALL.len());
        for f in all {
            let name = f.name();
            let kebab = name
                .split('-')
                .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()));
            assert!(kebab, "{name:?}");
            assert_eq!(FigureName::from_name(&name), Some(f));
        }
        assert_eq!(
            FigureName::from_name("cross-weights"),
            Some(FigureName::Cross(HeadMatrix::Weights))
        );
        assert_eq!(FigureName::from_name("sideways"), None);
    }

    #[test]
    fn cross_attentions_head_matrices_are_computed_as_self_attentions() {
        let cross = FigureName::Cross(HeadMatrix::Weights);
        assert_eq!(cross.computed_as(), FigureName::Head(HeadMatrix::Weights));
        let source = FigureName::CrossEncoderOutput;
        assert_eq!(source.computed_as(), source);
    }
}
