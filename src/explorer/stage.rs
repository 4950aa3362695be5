//! The nine stages of one attention layer, as the stepper walks them, with the formula and
//! the plain-language reason for each. Plain data: no web, no maths.

use engine::MaskMode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    Input,
    Projections,
    Scores,
    Scaled,
    Masked,
    Softmax,
    Context,
    Concat,
    Output,
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
}

impl Stage {
    pub const ALL: [Stage; 9] = [
        Stage::Input,
        Stage::Projections,
        Stage::Scores,
        Stage::Scaled,
        Stage::Masked,
        Stage::Softmax,
        Stage::Context,
        Stage::Concat,
        Stage::Output,
    ];

    pub fn index(self) -> usize {
        Stage::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }

    pub fn next(self) -> Stage {
        Stage::ALL[(self.index() + 1).min(Stage::ALL.len() - 1)]
    }

    pub fn previous(self) -> Stage {
        Stage::ALL[self.index().saturating_sub(1)]
    }

    /// The stage's name, as the heading says it.
    pub fn title(self) -> &'static str {
        match self {
            Stage::Input => "input X",
            Stage::Projections => "projections Q, K, V = XW_Q, XW_K, XW_V",
            Stage::Scores => "scores QKᵀ",
            Stage::Scaled => "scaling ÷√d_k",
            Stage::Masked => "mask + M",
            Stage::Softmax => "softmax",
            Stage::Context => "context: weights · V",
            Stage::Concat => "concatenate heads",
            Stage::Output => "output projection · W_O",
        }
    }

    /// Label on the stepper's button.
    pub fn short(self) -> &'static str {
        match self {
            Stage::Input => "X",
            Stage::Projections => "Q K V",
            Stage::Scores => "QKᵀ",
            Stage::Scaled => "÷√d_k",
            Stage::Masked => "+ M",
            Stage::Softmax => "softmax",
            Stage::Context => "· V",
            Stage::Concat => "concat",
            Stage::Output => "· W_O",
        }
    }

    /// 1-based, as the page counts.
    pub fn number(self) -> usize {
        self.index() + 1
    }

    /// `why()`, plus what this model's numbers and the chosen mask make of it.
    pub fn explain(self, head_size: usize, mask: MaskMode) -> String {
        match self {
            Stage::Masked if mask == MaskMode::None => format!(
                "{} With the mask \"None\", M = 0 everywhere: nothing is hidden, so every query also attends to the [PAD] keys, and padding changes the output.",
                self.why()
            ),
            Stage::Softmax if mask == MaskMode::None => "Softmax turns each row of scores into weights that are positive and sum to 1: how this query spreads its attention over the keys. With no mask no weight is exactly 0: [PAD] keys get some too.".to_string(),
            Stage::Scaled if head_size > 0 => format!(
                "{} In this model d_k = {head_size}, so every score is divided by √d_k = {}.",
                self.why(),
                sqrt_text(head_size)
            ),
            _ => self.why().to_string(),
        }
    }

    /// The parts of softmax(QKᵀ/√d_k + M)V this stage adds.
    pub fn highlights(self) -> &'static [FormulaPart] {
        match self {
            Stage::Input => &[FormulaPart::X],
            Stage::Concat => &[FormulaPart::Concat],
            Stage::Output => &[FormulaPart::Wo],
            Stage::Projections => &[FormulaPart::QKt, FormulaPart::V],
            Stage::Scores => &[FormulaPart::QKt],
            Stage::Scaled => &[FormulaPart::Sqrt],
            Stage::Masked => &[FormulaPart::Mask],
            Stage::Softmax => &[FormulaPart::Softmax],
            Stage::Context => &[FormulaPart::V],
        }
    }

    /// One or two sentences on why this stage exists.
    pub fn why(self) -> &'static str {
        match self {
            Stage::Input => "Each row is one token's vector: its word, position and segment embeddings summed and normalised (or, above the first layer, the previous layer's output). Attention will mix these rows.",
            Stage::Projections => "Three learned matrices give every token three roles: a query (what am I looking for?), a key (what do I offer?) and a value (what do I pass on if chosen). Each head gets its own d_k-wide slice.",
            Stage::Scores => "The dot product of query i with key j measures how well they match: large and positive means token i wants to look at token j. One number per pair gives a T×T table.",
            Stage::Scaled => "A dot product of d_k terms has a variance that grows with d_k. Unscaled, large scores push the softmax to a near one-hot output whose gradients vanish; dividing by √d_k keeps the scores at unit scale.",
            Stage::Masked => "The mask adds −∞ where a query must not look: at padding, and in causal mode at every later token. We add −∞ rather than multiply by 0 because exp(−∞) is exactly 0, so the softmax gives masked keys no weight at all while the other weights still sum to 1.",
            Stage::Softmax => "Softmax turns each row of scores into weights that are positive and sum to 1: how this query spreads its attention over the keys. Masked cells come out exactly 0.",
            Stage::Context => "Each token's new vector is the weighted average of the value vectors it attends to. This is where information actually moves between tokens.",
            Stage::Concat => "A head is one independent attention pattern over its own d_k-wide slice. The H heads run side by side, so each can track a different relation; their contexts are laid next to each other to get back to the model width.",
            Stage::Output => "A final learned matrix W_O mixes the heads' outputs together. Its result is added to the input (the residual connection) and normalised before the feed-forward network.",
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
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn stepping_walks_all_nine_stages_and_stops_at_the_ends() {
        let mut s = Stage::Input;
        let mut seen = vec![s];
        while s != Stage::Output {
            s = s.next();
            seen.push(s);
        }
        assert_eq!(seen, Stage::ALL.to_vec());
        assert_eq!(Stage::Output.next(), Stage::Output);
        assert_eq!(Stage::Input.previous(), Stage::Input);
        assert_eq!(Stage::Output.number(), 9);
    }

    #[test]
    fn the_scaling_stage_names_this_models_square_root() {
        assert_eq!(sqrt_text(16), "4");
        assert_eq!(sqrt_text(32), "5.657");
        assert!(Stage::Scaled
            .explain(16, MaskMode::Padding)
            .ends_with("d_k = 16, so every score is divided by √d_k = 4."));
        assert_eq!(
            Stage::Scores.explain(16, MaskMode::Padding),
            Stage::Scores.why()
        );
    }

    #[test]
    fn with_no_mask_the_mask_stages_say_m_is_zero_and_pad_gets_weight() {
        let masked = Stage::Masked.explain(16, MaskMode::None);
        assert!(masked.contains("M = 0 everywhere"), "{masked}");
        assert!(masked.contains("[PAD]"), "{masked}");
        let softmax = Stage::Softmax.explain(16, MaskMode::None);
        assert!(!softmax.contains("come out exactly 0"), "{softmax}");
        assert!(softmax.contains("[PAD] keys get some"), "{softmax}");
        assert_eq!(
            Stage::Masked.explain(16, MaskMode::Causal),
            Stage::Masked.why()
        );
    }
}
