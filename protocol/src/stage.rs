//! The stages of the model as the stepper walks them: the embeddings (stage 0), the nine
//! stages of self-attention (ten with tiled attention's "Tiles"), then Add & Norm, the
//! feed-forward network and Add & Norm again, with the formula and the plain-language reason
//! for each, and the name a link gives each (`slug`). Plain data: no web, no maths.

use engine::config::{AttentionScaling, AttentionType};
use engine::MaskMode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    Embeddings,
    Input,
    Projections,
    /// Linear attention only: φ(Q) and φ(K), in place of the scores it never forms.
    FeatureMaps,
    Scores,
    Scaled,
    Masked,
    Softmax,
    Context,
    /// Tiled attention only: the block schedule of FlashAttention's online softmax.
    Tiles,
    Concat,
    Output,
    AttentionAddNorm,
    FeedForward,
    OutputAddNorm,
}

/// Which formula a stage belongs to: the embeddings, attention inside the layer, or the
/// layer around attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormulaKind {
    Embeddings,
    Attention,
    Layer,
}

/// Parts of X ↦ Concat(softmax(QKᵀ/√d_k + M)V) W_O, so the stepper can highlight the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormulaPart {
    X,
    Softmax,
    QKt,
    Sqrt,
    Mask,
    V,
    Concat,
    Wo,
    /// E_token + E_position + E_segment
    EmbeddingSum,
    /// LayerNorm(…) of the embeddings
    EmbeddingNorm,
    /// X + … (the residual around attention)
    Residual1,
    /// LayerNorm(…) after attention
    Norm1,
    /// h W₁ + b₁
    W1,
    /// GELU(…)
    Gelu,
    /// … W₂ + b₂
    W2,
    /// φ(·) = elu + 1 of linear attention
    Phi,
    /// h + … (the residual around the feed-forward network)
    Residual2,
    /// LayerNorm(…) at the layer's end
    Norm2,
}

/// The stages the stepper walks for one trace: "Tiles" only when the attention was tiled;
/// for linear attention "φ(Q) φ(K)" in place of the scores, their scaling and the softmax,
/// which it never forms. Numbers count along this walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages {
    pub tiled: bool,
    /// Softmax walks the scores, their scaling and the softmax; linear its feature maps.
    pub attention: AttentionType,
    /// An encoder–decoder's cross-attention: the walk from its input X to its context (the
    /// layer around it is the decoder's self-attention walk).
    pub cross: bool,
}

impl Stages {
    fn has(self, s: Stage) -> bool {
        if self.cross
            && !matches!(
                s,
                Stage::Input
                    | Stage::Projections
                    | Stage::Scores
                    | Stage::Scaled
                    | Stage::Masked
                    | Stage::Softmax
                    | Stage::Context
            )
        {
            return false;
        }
        let (scores, feature_maps) = match self.attention {
            AttentionType::Softmax => (true, false),
            AttentionType::Linear => (false, true),
        };
        match s {
            Stage::Tiles => self.tiled,
            Stage::FeatureMaps => feature_maps,
            Stage::Scores | Stage::Scaled | Stage::Softmax => scores,
            _ => true,
        }
    }

    pub fn list(self) -> impl Iterator<Item = Stage> {
        Stage::ALL.into_iter().filter(move |s| self.has(*s))
    }

    /// The stage shown for the one chosen, when that one is not in this walk: "Tiles" falls
    /// back to "· V", the scores to φ (and back), the softmax to the mask.
    pub fn shown(self, s: Stage) -> Stage {
        if self.has(s) {
            return s;
        }
        let fallback = match s {
            Stage::Tiles => Stage::Context,
            Stage::FeatureMaps => Stage::Scores,
            Stage::Scores | Stage::Scaled => Stage::FeatureMaps,
            Stage::Softmax => Stage::Masked,
            // Only cross-attention's walk lacks these: it starts at X and ends at · V.
            Stage::Embeddings => Stage::Input,
            _ => Stage::Context,
        };
        if self.has(fallback) {
            fallback
        } else {
            Stage::Context
        }
    }

    /// The first and last stages of this walk.
    pub fn ends(self) -> (Stage, Stage) {
        let mut list = self.list();
        let first = list.next().unwrap_or(Stage::Input);
        (first, list.last().unwrap_or(first))
    }

    /// As the page counts: the embeddings are stage 0, the layer's input X stage 1.
    pub fn number(self, s: Stage) -> usize {
        let s = self.shown(s);
        self.list().position(|x| x == s).unwrap_or(0)
    }

    /// The number of the last stage.
    pub fn last_number(self) -> usize {
        self.list().count() - 1
    }

    pub fn next(self, s: Stage) -> Stage {
        let n = self.number(s);
        self.list().nth(n + 1).unwrap_or(self.shown(s))
    }

    pub fn previous(self, s: Stage) -> Stage {
        let n = self.number(s);
        self.list()
            .nth(n.saturating_sub(1))
            .unwrap_or(self.shown(s))
    }
}

impl Stage {
    pub const ALL: [Stage; 15] = [
        Stage::Embeddings,
        Stage::Input,
        Stage::Projections,
        Stage::FeatureMaps,
        Stage::Scores,
        Stage::Scaled,
        Stage::Masked,
        Stage::Softmax,
        Stage::Context,
        Stage::Tiles,
        Stage::Concat,
        Stage::Output,
        Stage::AttentionAddNorm,
        Stage::FeedForward,
        Stage::OutputAddNorm,
    ];

    /// The stepper's first stage when the page opens: the input of attention (the embeddings
    /// are one step back).
    pub const FIRST_SHOWN: Stage = Stage::Input;

    pub fn formula(self) -> FormulaKind {
        match self {
            Stage::Embeddings => FormulaKind::Embeddings,
            Stage::AttentionAddNorm | Stage::FeedForward | Stage::OutputAddNorm => {
                FormulaKind::Layer
            }
            _ => FormulaKind::Attention,
        }
    }

    /// The stage's name in a link (`link`): short, lower case, stable.
    pub fn slug(self) -> &'static str {
        match self {
            Stage::Embeddings => "embeddings",
            Stage::Input => "x",
            Stage::Projections => "qkv",
            Stage::FeatureMaps => "phi",
            Stage::Scores => "scores",
            Stage::Scaled => "scaled",
            Stage::Masked => "mask",
            Stage::Softmax => "softmax",
            Stage::Context => "context",
            Stage::Tiles => "tiles",
            Stage::Concat => "concat",
            Stage::Output => "wo",
            Stage::AttentionAddNorm => "add-norm-1",
            Stage::FeedForward => "ffn",
            Stage::OutputAddNorm => "add-norm-2",
        }
    }

    pub fn from_slug(slug: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.slug() == slug)
    }

    /// The stage's name on the page: the stepper button's `data-stage`, by which the tests find
    /// it (kebab-case, stable). Links keep their shorter `slug`, fixed by the links already made.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Embeddings => "embeddings",
            Stage::Input => "input",
            Stage::Projections => "projections",
            Stage::FeatureMaps => "feature-maps",
            Stage::Scores => "scores",
            Stage::Scaled => "scaled",
            Stage::Masked => "masked",
            Stage::Softmax => "softmax",
            Stage::Context => "context",
            Stage::Tiles => "tiles",
            Stage::Concat => "concat",
            Stage::Output => "output-projection",
            Stage::AttentionAddNorm => "attention-add-norm",
            Stage::FeedForward => "feed-forward",
            Stage::OutputAddNorm => "output-add-norm",
        }
    }

    /// The stage's name, as the heading says it.
    pub fn title(self) -> &'static str {
        match self {
            Stage::Embeddings => "embeddings: token + position + segment, then LayerNorm",
            Stage::Input => "input X",
            Stage::Projections => "projections Q, K, V = XW_Q, XW_K, XW_V",
            Stage::FeatureMaps => "feature maps φ(Q), φ(K): linear attention forms no scores",
            Stage::Scores => "scores QKᵀ",
            Stage::Scaled => "scaling ÷√d_k",
            Stage::Masked => "mask + M",
            Stage::Softmax => "softmax",
            Stage::Context => "context: weights · V",
            Stage::Tiles => "Tiles: the same softmax · V, block by block (FlashAttention)",
            Stage::Concat => "concatenate heads",
            Stage::Output => "output projection · W_O",
            Stage::AttentionAddNorm => "Add & Norm: LayerNorm(x + attention output)",
            Stage::FeedForward => "Feed-forward: GELU(x W₁ + b₁) W₂ + b₂",
            Stage::OutputAddNorm => "Add & Norm: the layer's output, the next layer's input",
        }
    }

    /// Label on the stepper's button.
    pub fn short(self) -> &'static str {
        match self {
            Stage::Embeddings => "Embeddings",
            Stage::Input => "X",
            Stage::Projections => "Q K V",
            Stage::FeatureMaps => "φ(Q) φ(K)",
            Stage::Scores => "QKᵀ",
            Stage::Scaled => "÷√d_k",
            Stage::Masked => "+ M",
            Stage::Softmax => "softmax",
            Stage::Context => "· V",
            Stage::Tiles => "Tiles",
            Stage::Concat => "concat",
            Stage::Output => "· W_O",
            Stage::AttentionAddNorm | Stage::OutputAddNorm => "Add & Norm",
            Stage::FeedForward => "Feed-forward",
        }
    }

    /// `why()`, plus what this model's numbers, the chosen mask and its kind of attention make
    /// of it.
    pub fn explain(
        self,
        head_size: usize,
        mask: MaskMode,
        attention: AttentionType,
        scaling: AttentionScaling,
    ) -> String {
        let linear = match attention {
            AttentionType::Softmax => false,
            AttentionType::Linear => true,
        };
        match self {
            Stage::Masked if linear => "Linear attention has no scores to add −∞ to. The mask decides instead which keys enter its sums: [PAD] keys never do, and with the causal mask query i sums only over keys j ≤ i, as running sums from left to right. M is shown as the keys each query may use.".to_string(),
            Stage::Context if linear => "Each token's new vector is φ(q_i)·Σ_j φ(k_j) v_jᵀ divided by φ(q_i)·Σ_j φ(k_j): a weighted average of the values it may use, with weights φ(q_i)·φ(k_j) normalised. Those weights are shown for comparison with softmax; the model never forms them.".to_string(),
            Stage::Masked if mask == MaskMode::None => format!(
                "{} With the mask \"None\", M = 0 everywhere: nothing is hidden, so every query also attends to the [PAD] keys, and padding changes the output.",
                self.why()
            ),
            Stage::Softmax if mask == MaskMode::None => "Softmax turns each row of scores into weights that are positive and sum to 1: how this query spreads its attention over the keys. With no mask no weight is exactly 0: [PAD] keys get some too.".to_string(),
            Stage::Scaled if scaling == AttentionScaling::None => format!(
                "{} This model was built with Scaling \"None\": its scores are not divided, so they reach the softmax {} times larger than BERT's would (d_k = {head_size}). Compare it with a ÷√d_k model, or run the claim \"Scaling (√d_k)\".",
                self.why(),
                sqrt_text(head_size)
            ),
            Stage::Scaled if head_size > 0 => format!(
                "{} In this model d_k = {head_size}, so every score is divided by √d_k = {}.",
                self.why(),
                sqrt_text(head_size)
            ),
            _ => self.why().to_string(),
        }
    }

    /// The parts of its formula this stage adds.
    pub fn highlights(self) -> &'static [FormulaPart] {
        match self {
            Stage::Embeddings => &[FormulaPart::EmbeddingSum, FormulaPart::EmbeddingNorm],
            Stage::AttentionAddNorm => &[FormulaPart::Residual1, FormulaPart::Norm1],
            Stage::FeedForward => &[FormulaPart::W1, FormulaPart::Gelu, FormulaPart::W2],
            Stage::OutputAddNorm => &[FormulaPart::Residual2, FormulaPart::Norm2],
            Stage::Input => &[FormulaPart::X],
            Stage::Concat => &[FormulaPart::Concat],
            Stage::Output => &[FormulaPart::Wo],
            Stage::Projections => &[FormulaPart::QKt, FormulaPart::V],
            Stage::FeatureMaps => &[FormulaPart::Phi],
            Stage::Scores => &[FormulaPart::QKt],
            Stage::Scaled => &[FormulaPart::Sqrt],
            Stage::Masked => &[FormulaPart::Mask],
            Stage::Softmax => &[FormulaPart::Softmax],
            Stage::Context => &[FormulaPart::V],
            Stage::Tiles => &[FormulaPart::Softmax, FormulaPart::V],
        }
    }

    /// Why this stage of cross-attention is as it is: where its Q and K, V come from, and why
    /// its matrices are Tt × Ts, not square.
    pub fn explain_cross(self) -> &'static str {
        match self {
            Stage::Input => "Cross-attention has two inputs. The queries come from the decoder: its tokens after their own causal self-attention. The keys and values come from the encoder's output H, the source sentence read once and in full. This is how the target being written looks back at the source.",
            Stage::Projections => "Q = X W_Q is made from the decoder's rows (one per target token); K = H W_K and V = H W_V from the encoder's rows (one per source token). So Q has Tt rows while K and V have Ts.",
            Stage::Scores | Stage::Scaled => "Each target token's query is compared with every source token's key. Cross-attention's matrix is Tt × Ts, not square: rows are the target's tokens, columns the source's, and the two sentences need not have the same length.",
            Stage::Masked => "Only the source's [PAD] keys are hidden. There is no causal triangle: the whole source is known before the decoder starts, so every target token may read every real source token, the last ones included.",
            Stage::Softmax => "Each target row becomes weights over the source tokens that sum to 1: which source words this target token draws on. After training Reverse, target token i reads source token n − i: an anti-diagonal.",
            _ => "Each target token's new vector is a weighted average of the source's value vectors: information moves from the source sentence into the target being written, one row per target token.",
        }
    }

    /// One or two sentences on why this stage exists.
    pub fn why(self) -> &'static str {
        match self {
            Stage::Embeddings => "A token id says nothing about order or sentence. BERT adds three learned vectors per token: one for the word, one for its position (0, 1, 2, …) and one for its segment (A or B), then LayerNorm rescales each row. The result is the first layer's input X.",
            Stage::Input => "Each row is one token's vector: its word, position and segment embeddings summed and normalised (or, above the first layer, the previous layer's output). Attention will mix these rows.",
            Stage::FeatureMaps => "Softmax needs every score q_i·k_j before it can normalise a row, so it must form the T×T matrix. Linear attention replaces exp(q·k) by φ(q)·φ(k) with φ = elu + 1, which is always positive. Then the sums over keys can be taken first, Σ_j φ(k_j) v_jᵀ (d_k × d_k) and Σ_j φ(k_j), and each query reads them: the cost grows with T, not T², and no T×T matrix is formed.",
            Stage::Projections => "Three learned matrices give every token three roles: a query (what am I looking for?), a key (what do I offer?) and a value (what do I pass on if chosen). Each head gets its own d_k-wide slice.",
            Stage::Scores => "The dot product of query i with key j measures how well they match: large and positive means token i wants to look at token j. One number per pair gives a T×T table.",
            Stage::Scaled => "A dot product of d_k terms has a variance that grows with d_k. Unscaled, large scores push the softmax to a near one-hot output whose gradients vanish; dividing by √d_k keeps the scores at unit scale.",
            Stage::Masked => "The mask adds −∞ where a query must not look: at padding, and in causal mode at every later token. We add −∞ rather than multiply by 0 because exp(−∞) is exactly 0, so the softmax gives masked keys no weight at all while the other weights still sum to 1.",
            Stage::Softmax => "Softmax turns each row of scores into weights that are positive and sum to 1: how this query spreads its attention over the keys. Masked cells come out exactly 0.",
            Stage::Context => "Each token's new vector is the weighted average of the value vectors it attends to. This is where information actually moves between tokens.",
            Stage::Tiles => "The full kernel holds the whole T×T weight matrix; FlashAttention never forms it. It walks the scores block by block, keeping for each query row only a running max m, a running sum l and a partial output, and rescales them by e^(m − m′) whenever the max grows. The result is exact, and the memory grows with T instead of T².",
            Stage::Concat => "A head is one independent attention pattern over its own d_k-wide slice. The H heads run side by side, so each can track a different relation; their contexts are laid next to each other to get back to the model width.",
            Stage::Output => "A final learned matrix W_O mixes the heads' outputs together. Its result is added to the input (the residual connection) and normalised before the feed-forward network.",
            Stage::AttentionAddNorm => "The residual connection adds attention's output to its input, so each token keeps its own vector and attention only adds a correction (and gradients pass straight through the sum). LayerNorm then gives each row mean 0 and variance 1, times a learned γ plus β, so the scale stays steady layer after layer.",
            Stage::FeedForward => "Attention moved information between tokens; the feed-forward network then works on each token alone, with the same weights at every position: widen to the intermediate size, apply GELU, a smooth ReLU, 0.5·x·(1 + erf(x/√2)), and narrow back. Most of a layer's parameters are here.",
            Stage::OutputAddNorm => "A second residual connection and LayerNorm: the vector after attention plus what the feed-forward network added, normalised. This is the layer's output: the next layer's input, or after the last layer the input of the pooler and the MLM head.",
        }
    }
}

/// √n for the page: "4" for 16, "5.657" for 32.
pub fn sqrt_text(n: usize) -> String {
    let text = format!("{:.3}", (n as f64).sqrt());
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stepping_walks_all_thirteen_stages_and_stops_at_the_ends() {
        let full = Stages::default();
        let mut s = Stage::Embeddings;
        let mut seen = vec![s];
        while s != Stage::OutputAddNorm {
            s = full.next(s);
            seen.push(s);
        }
        assert_eq!(seen.len(), 13);
        assert!(!seen.contains(&Stage::Tiles) && !seen.contains(&Stage::FeatureMaps));
        assert_eq!(full.next(Stage::OutputAddNorm), Stage::OutputAddNorm);
        assert_eq!(full.previous(Stage::Embeddings), Stage::Embeddings);
        assert_eq!(full.previous(Stage::Input), Stage::Embeddings);
        // The attention stages keep their numbers; the layer goes on past "9 · W_O".
        assert_eq!(
            (full.number(Stage::Input), full.number(Stage::Output)),
            (1, 9)
        );
        assert_eq!(full.number(Stage::Embeddings), 0);
        assert_eq!(full.number(Stage::OutputAddNorm), full.last_number());
        assert_eq!(full.last_number(), 12);
    }

    #[test]
    fn tiled_attention_adds_tiles_after_the_context_and_falls_back_without_it() {
        let tiled = Stages {
            tiled: true,
            ..Stages::default()
        };
        assert_eq!(tiled.list().count(), 14);
        assert_eq!(tiled.next(Stage::Context), Stage::Tiles);
        assert_eq!(tiled.next(Stage::Tiles), Stage::Concat);
        assert_eq!(tiled.previous(Stage::Concat), Stage::Tiles);
        assert_eq!((tiled.number(Stage::Tiles), tiled.last_number()), (8, 13));
        // Back to Full while on "Tiles": the stepper stands on "· V".
        let full = Stages::default();
        assert_eq!(full.shown(Stage::Tiles), Stage::Context);
        assert_eq!(full.number(Stage::Tiles), 7);
        assert_eq!(full.next(Stage::Tiles), Stage::Concat);
        assert_eq!(tiled.shown(Stage::Tiles), Stage::Tiles);
    }

    #[test]
    fn linear_attention_walks_phi_instead_of_scores_scaling_and_softmax() {
        let linear = Stages {
            attention: AttentionType::Linear,
            ..Stages::default()
        };
        let walk: Vec<&str> = linear.list().map(Stage::short).collect();
        assert_eq!(
            walk[..7],
            [
                "Embeddings",
                "X",
                "Q K V",
                "φ(Q) φ(K)",
                "+ M",
                "· V",
                "concat"
            ]
        );
        assert_eq!(linear.last_number(), 10);
        // A stage of the other walk lands on its counterpart.
        assert_eq!(linear.shown(Stage::Scores), Stage::FeatureMaps);
        assert_eq!(linear.shown(Stage::Softmax), Stage::Masked);
        assert_eq!(Stages::default().shown(Stage::FeatureMaps), Stage::Scores);
        assert_eq!(linear.next(Stage::Projections), Stage::FeatureMaps);
        assert!(Stage::Masked
            .explain(
                16,
                MaskMode::Causal,
                AttentionType::Linear,
                AttentionScaling::default()
            )
            .contains("no scores to add −∞ to"));
    }

    #[test]
    fn cross_attention_walks_from_its_input_to_its_context() {
        let cross = Stages {
            cross: true,
            ..Stages::default()
        };
        let walk: Vec<&str> = cross.list().map(Stage::short).collect();
        assert_eq!(
            walk,
            ["X", "Q K V", "QKᵀ", "÷√d_k", "+ M", "softmax", "· V"]
        );
        assert_eq!(cross.ends(), (Stage::Input, Stage::Context));
        // From a stage of the layer's walk, the stepper lands inside cross-attention's.
        assert_eq!(cross.shown(Stage::Embeddings), Stage::Input);
        assert_eq!(cross.shown(Stage::FeedForward), Stage::Context);
        assert_eq!(cross.shown(Stage::Tiles), Stage::Context);
        assert_eq!(cross.next(Stage::Context), Stage::Context);
        assert_eq!(
            Stages::default().ends(),
            (Stage::Embeddings, Stage::OutputAddNorm)
        );
        assert!(Stage::Scores.explain_cross().contains("not square"));
    }

    #[test]
    fn every_stage_has_a_kebab_case_name_and_a_slug_of_its_own() {
        let names: std::collections::HashSet<_> = Stage::ALL.map(Stage::name).into();
        let slugs: std::collections::HashSet<_> = Stage::ALL.map(Stage::slug).into();
        assert_eq!(
            (names.len(), slugs.len()),
            (Stage::ALL.len(), Stage::ALL.len())
        );
        for stage in Stage::ALL {
            let kebab = stage
                .name()
                .split('-')
                .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()));
            assert!(kebab, "{stage:?}");
            assert_eq!(Stage::from_slug(stage.slug()), Some(stage));
        }
    }

    #[test]
    fn every_stage_lights_a_part_of_its_own_formula() {
        use FormulaPart::*;
        for stage in Stage::ALL {
            let parts = stage.highlights();
            assert!(!parts.is_empty(), "{stage:?}");
            let of_kind = |p: &FormulaPart| match stage.formula() {
                FormulaKind::Embeddings => matches!(p, EmbeddingSum | EmbeddingNorm),
                FormulaKind::Layer => {
                    matches!(p, Residual1 | Norm1 | W1 | Gelu | W2 | Residual2 | Norm2)
                }
                FormulaKind::Attention => {
                    matches!(p, X | Softmax | QKt | Sqrt | Mask | V | Concat | Wo | Phi)
                }
            };
            assert!(parts.iter().all(of_kind), "{stage:?}: {parts:?}");
        }
        assert!(Stage::FeedForward.why().contains("0.5·x·(1 + erf(x/√2))"));
    }

    #[test]
    fn the_scaling_stage_names_this_models_square_root() {
        assert_eq!(sqrt_text(16), "4");
        assert_eq!(sqrt_text(32), "5.657");
        assert!(Stage::Scaled
            .explain(
                16,
                MaskMode::Padding,
                AttentionType::Softmax,
                AttentionScaling::default()
            )
            .ends_with("d_k = 16, so every score is divided by √d_k = 4."));
        assert_eq!(
            Stage::Scores.explain(
                16,
                MaskMode::Padding,
                AttentionType::Softmax,
                AttentionScaling::default()
            ),
            Stage::Scores.why()
        );
        let unscaled = Stage::Scaled.explain(
            16,
            MaskMode::Padding,
            AttentionType::Softmax,
            AttentionScaling::None,
        );
        assert!(
            unscaled.contains("Scaling \"None\"") && unscaled.contains("4 times larger"),
            "{unscaled}"
        );
    }

    #[test]
    fn with_no_mask_the_mask_stages_say_m_is_zero_and_pad_gets_weight() {
        let masked = Stage::Masked.explain(
            16,
            MaskMode::None,
            AttentionType::Softmax,
            AttentionScaling::default(),
        );
        assert!(masked.contains("M = 0 everywhere"), "{masked}");
        assert!(masked.contains("[PAD]"), "{masked}");
        let softmax = Stage::Softmax.explain(
            16,
            MaskMode::None,
            AttentionType::Softmax,
            AttentionScaling::default(),
        );
        assert!(!softmax.contains("come out exactly 0"), "{softmax}");
        assert!(softmax.contains("[PAD] keys get some"), "{softmax}");
        assert_eq!(
            Stage::Masked.explain(
                16,
                MaskMode::Causal,
                AttentionType::Softmax,
                AttentionScaling::default()
            ),
            Stage::Masked.why()
        );
    }
}
