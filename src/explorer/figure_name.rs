//! Which matrix a stage figure shows, as a name: its `data-figure` attribute, the handle the
//! tour and the tests find a figure by. Captions are free text for the reader; these names
//! are a contract (kebab-case, stable).

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

/// What a stage figure shows. A matrix keeps its name on every stage that shows it (the
/// weights at Softmax and at · V, h at both Add & Norms).
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
}

impl FigureName {
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
        };
        fixed.to_string()
    }
}
