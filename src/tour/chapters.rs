//! The tour's chapters, in the tutorial's order: what each says, the formula it shows, the
//! scene it sets on the page, the figure it outlines, and the question it asks. Plain data.

use super::question::{Query, Question};
use crate::explorer::stepper::EMBEDDINGS_FORMULA;
use engine::MaskMode;
use protocol::figure::{FigureName, HeadMatrix};
use protocol::settings::{DEFAULT_PAIR, DEFAULT_SENTENCE, REPEAT_SENTENCE};
use protocol::stage::Stage;
use protocol::view::Part;

/// What a chapter needs of the model to say what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelNeed {
    /// One BERT or a decoder: self-attention on the Sentence.
    OneModel,
    /// BERT with its two pre-training heads (MLM and NSP).
    PreTraining,
    /// An encoder–decoder trained to reverse its sentence.
    Reverse,
    /// A decoder trained on Repeat, in the setting where induction heads form.
    Repeat,
}

/// How a chapter sets the page up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scene {
    pub text: &'static str,
    pub pair: &'static str,
    /// An encoder–decoder's target.
    pub target: &'static str,
    pub pad_to: Option<usize>,
    pub mask: MaskMode,
    pub window: Option<usize>,
    pub stage: Stage,
    pub part: Part,
    /// Play (true) or Pause (false) when the chapter opens. A chapter whose question is not
    /// decided yet plays until it is, then pauses, but for the loss chapter (`view::TourPanel`).
    pub playing: bool,
    pub model: ModelNeed,
}

/// The scene most chapters share: the default sentence pair, paused, padding mask.
const BASE: Scene = Scene {
    text: DEFAULT_SENTENCE,
    pair: DEFAULT_PAIR,
    target: "",
    pad_to: None,
    mask: MaskMode::Padding,
    window: None,
    stage: Stage::Softmax,
    part: Part::SelfAttention,
    playing: false,
    model: ModelNeed::OneModel,
};

/// An element of the page: the first that `selector` finds; with `figure`, the first of those
/// that shows it (`data-figure`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Focus {
    pub selector: &'static str,
    pub figure: Option<FigureName>,
}

impl Focus {
    /// The CSS selector of the element.
    pub fn css(self) -> String {
        match self.figure {
            Some(name) => format!("{}[data-figure=\"{}\"]", self.selector, name.name()),
            None => self.selector.to_string(),
        }
    }
}

const fn focus(selector: &'static str) -> Focus {
    Focus {
        selector,
        figure: None,
    }
}

/// A heatmap of the stepper's current stage.
const fn stage_figure(figure: FigureName) -> Focus {
    Focus {
        selector: ".stage-panel figure.heatmap",
        figure: Some(figure),
    }
}

/// One of the selected head's matrices at the stepper's current stage.
const fn head_figure(m: HeadMatrix) -> Focus {
    stage_figure(FigureName::Head(m))
}

pub struct Chapter {
    pub title: &'static str,
    /// At most about 80 words.
    pub text: &'static str,
    pub formula: &'static str,
    pub scene: Scene,
    /// The figure the chapter speaks of: outlined and scrolled to.
    pub focus: Focus,
    pub question: Question,
    /// Shown after a wrong answer: where on the page the answer can be read.
    pub hint: &'static str,
}

pub const CHAPTERS: [Chapter; 15] = [
    Chapter {
        title: "Why attention",
        text: "A recurrent network reads a sentence one token at a time, so the first word reaches the last only through every step between them. Self-attention lets every token read every other token in one step. The heatmap outlined here is one head's attention: row i is how token i spreads its reading over all tokens, and each row sums to 1. The model is training right here in your browser, so these numbers are its own.",
        formula: "Attention(Q, K, V) = softmax(QKᵀ/√d_k + M) V",
        // Training from the first chapter on: a fresh model's attention is nearly uniform, so
        // the tour's first question waits until the model has learned a pattern to find, and
        // every later chapter starts from that model.
        scene: Scene { playing: true, ..BASE },
        focus: focus(".summary .heatmap"),
        question: Question::TopKey { query: Query::Mask, scores: false },
        hint: "Find the [MASK] row of the outlined heatmap: the darkest cell in it is the key it reads most. Hover a cell to see its value.",
    },
    Chapter {
        title: "Tokens and three embeddings",
        text: "The text becomes tokens: [CLS] first, [SEP] after each sentence. Each token gets three learned vectors: one for the word, one for its position (0, 1, 2, …) and one for its segment (A or B). They are added, and LayerNorm rescales each row. That sum is the first layer's input X. The chips outlined here are the tokens the model reads.",
        formula: EMBEDDINGS_FORMULA,
        scene: Scene { stage: Stage::Embeddings, ..BASE },
        focus: focus(".tokens"),
        question: Question::TokenCount,
        hint: "Count the chips in the Tokens row, [CLS] and both [SEP] included.",
    },
    Chapter {
        title: "Query, key and value",
        text: "Three learned matrices give each token three roles. Its query asks what it is looking for; its key says what it offers; its value is what it passes on when chosen. Each head takes its own d_k-wide slice of Q, K and V, so a row of one head's Q has d_k numbers.",
        formula: "Q = X W_Q,  K = X W_K,  V = X W_V",
        scene: Scene { stage: Stage::Projections, ..BASE },
        focus: head_figure(HeadMatrix::Queries),
        question: Question::HeadSize,
        hint: "Read the width of the Q heatmap for this head: one column per number of a query row. The stage's caption says d_k too.",
    },
    Chapter {
        title: "Scores: QKᵀ",
        text: "Query i is compared with every key j by a dot product. A large positive score means token i matches token j well. One number for each pair gives a T × T table of raw scores: nothing is normalised yet, and rows need not sum to anything.",
        formula: "S = Q Kᵀ,  S_ij = q_i · k_j",
        scene: Scene { stage: Stage::Scores, ..BASE },
        focus: head_figure(HeadMatrix::RawScores),
        question: Question::TopKey { query: Query::Mask, scores: true },
        hint: "In the QKᵀ heatmap, the [MASK] row's most positive cell (the warmest colour) is its largest raw score.",
    },
    Chapter {
        title: "Why ÷√d_k",
        text: "A dot product of d_k random terms has a variance that grows with d_k. Large scores push softmax toward one-hot rows, where the gradient almost vanishes and learning stalls. Dividing every score by √d_k keeps them at unit scale whatever the head size.",
        formula: "S′ = QKᵀ / √d_k",
        scene: Scene { stage: Stage::Scaled, ..BASE },
        focus: head_figure(HeadMatrix::ScaledScores),
        question: Question::SqrtDk,
        hint: "The explanation under this stage says d_k for this model and the number every score is divided by.",
    },
    Chapter {
        title: "Masks",
        text: "The mask M adds −∞ where a query must not look, so softmax gives those keys exactly 0. Padding: \"Pad to\" fills the batch with [PAD], and get_attn_pad_mask hides those keys. Causal: token i sees only keys j ≤ i. None hides nothing. A window W lets i see j only when |i − j| < W. Here the pair is padded to 20 tokens.",
        formula: "M_ij = 0 if key j may be read, else −∞",
        scene: Scene { pad_to: Some(20), stage: Stage::Masked, ..BASE },
        focus: head_figure(HeadMatrix::MaskedScores),
        question: Question::PadWeight,
        hint: "Step on to softmax (→) and look at the [PAD] columns of the [MASK] row. Hover a cell for its value.",
    },
    Chapter {
        title: "Softmax, then the values",
        text: "Softmax turns each row of scores into weights that are positive and sum to 1. Each token's new vector is then the weighted average of the value vectors: the context. This is the one place where information moves between tokens. Outlined: the weights of [CLS], the token BERT's NSP head will read.",
        formula: "A = softmax(S′ + M),  context_i = Σ_j A_ij v_j",
        scene: Scene { stage: Stage::Context, ..BASE },
        focus: head_figure(HeadMatrix::Weights),
        question: Question::TopKey { query: Query::Cls, scores: false },
        hint: "Read the [CLS] row (the first) of the softmax weights: its largest weight names the value that makes most of its context.",
    },
    Chapter {
        title: "Several heads",
        text: "One head is one pattern of attention. BERT runs H heads side by side, each on its own slice of Q, K and V, so each can follow a different relation: trained, one head may read mostly the previous token, another the next. Their contexts are laid next to each other (Concat), and W_O mixes them back to the model width. The model view outlined here shows every head of every layer at once.",
        formula: "MultiHead(X) = Concat(head_1, …, head_H) W_O",
        scene: Scene { stage: Stage::Concat, ..BASE },
        focus: focus(".model-view"),
        question: Question::RoleHead,
        hint: "In the model view, compare the heads of the layer the question names; choose one to see its heatmap large. A head on the previous token is dark just left of the diagonal, on the next token just right of it, on the token itself on the diagonal, on [CLS] or [SEP] down their columns.",
    },
    Chapter {
        title: "The rest of the layer",
        text: "Attention's output is added to its input (a residual connection) and LayerNorm gives each row mean 0 and variance 1, then a learned scale γ and shift β. A feed-forward network with GELU works on each token alone, then comes a second Add & Norm. That is one encoder layer; BERT stacks them.",
        formula: "h = LayerNorm(X + Attn(X)),  out = LayerNorm(h + GELU(h W₁ + b₁) W₂ + b₂)",
        scene: Scene { stage: Stage::AttentionAddNorm, ..BASE },
        focus: stage_figure(FigureName::AttentionAddNorm),
        question: Question::NormMean,
        hint: "Read the [MASK] row of the Add & Norm heatmap: LayerNorm centred it before γ and β were applied, so add up its values.",
    },
    Chapter {
        title: "BERT's two heads",
        text: "After the last layer, the MLM head predicts the word at each [MASK] from that token's vector; its decoder reuses the token embeddings (tied weights), so the output vocabulary is the input one. The NSP head reads only [CLS], through the pooler, and says whether sentence B follows sentence A. Outlined: the model's current guesses.",
        formula: "P(w | [MASK]) = softmax(h_mask Wᵀ_emb + b),  P(IsNext) = softmax(tanh(h_CLS W_p) W_nsp)",
        scene: Scene { stage: Stage::OutputAddNorm, model: ModelNeed::PreTraining, ..BASE },
        focus: focus(".predictions"),
        question: Question::TopPrediction,
        hint: "The Predictions line lists the top 5 words at [MASK], the most likely first.",
    },
    Chapter {
        title: "make_batch and training",
        text: "Each step, make_batch draws sentence pairs (half really consecutive), chooses 15% of the tokens, and turns them into [MASK] 80% of the time, a random word 10% and leaves 10% as they were. The loss is MLM plus NSP. Play is on: watch the loss fall and the [MASK] guess become right. Try the training mask Causal: [CLS] then sees only itself, so NSP stays at chance.",
        formula: "L = L_MLM + L_NSP",
        scene: Scene { playing: true, model: ModelNeed::PreTraining, ..BASE },
        focus: focus(".loss-curves"),
        question: Question::LossFell,
        hint: "Compare the loss readout above the curves with the first point of the loss curve, at the left.",
    },
    Chapter {
        title: "Decoders",
        text: "A decoder predicts the next token, so position t must not see token t + 1: its mask is causal. Generation then runs one token at a time, each new token reading all the earlier ones. Their keys and values never change, so a KV cache keeps them and each step computes one new row. Objective \"Next token\" builds such a model. Here the causal mask is on.",
        formula: "M_ij = −∞ for j > i,  P(x_t+1 | x_≤t)",
        scene: Scene { mask: MaskMode::Causal, ..BASE },
        focus: focus(".summary .heatmap"),
        question: Question::VisibleKeys { row: 3 },
        hint: "Under the causal mask, a row is 0 to the right of its diagonal. Count the cells of row 4 (the 4th token) that are not 0.",
    },
    Chapter {
        title: "Induction heads",
        text: "On Repeat, a segment of random symbols comes twice: the first copy cannot be predicted, the second can be copied. Heads of two layers learn it together, in a sudden change. One in layer 1 attends to the previous token. In layer 2, induction heads (often several) find the earlier occurrence of the current token and read the token after it: in their weights, a stripe 11 places left of the diagonal. Training plays until the heads have decided.",
        formula: "x_t = x_j (j < t)  ⇒  attend to j + 1,  predict x_(j+1)",
        scene: Scene {
            text: REPEAT_SENTENCE,
            pair: "",
            mask: MaskMode::Causal,
            playing: true,
            model: ModelNeed::Repeat,
            ..BASE
        },
        focus: focus(".model-view"),
        question: Question::InductionHead,
        hint: "In the model view, look at the second copy's rows (the lower half): an induction head's weights sit on a stripe 11 places left of the diagonal. The Induction heads claim below measures each head's score.",
    },
    Chapter {
        title: "Cross-attention",
        text: "An encoder–decoder reads the source with one BERT and writes the target with a decoder. In each decoder layer, cross-attention takes queries from the target and keys and values from the encoder's output, so its matrix is target × source. Trained to reverse a sentence, target word i reads source word n − i: look for the anti-diagonal.",
        formula: "CrossAttn = softmax(Q_dec K_encᵀ / √d_k) V_enc",
        scene: Scene {
            text: "the cat sleeps under the tree",
            pair: "",
            target: "tree the under sleeps cat the",
            part: Part::Cross,
            playing: true,
            model: ModelNeed::Reverse,
            ..BASE
        },
        focus: focus(".summary .heatmap"),
        question: Question::TopKey { query: Query::Row(1), scores: false },
        hint: "In the outlined cross-attention weights, the second row is the target's first word: its darkest cell is the source word it reads most.",
    },
    Chapter {
        title: "Variants and their claims",
        text: "The same weights can be computed other ways. A window keeps attention local; tiles (FlashAttention) compute exact softmax block by block without the T × T matrix; linear attention drops softmax for cost linear in T; GQA shares K and V between heads; RoPE rotates q and k by position. Window 3 is on here. Below the explorer, each claim has Run: run one.",
        formula: "|i − j| < W",
        scene: Scene { window: Some(3), ..BASE },
        focus: focus(".summary .heatmap"),
        question: Question::VisibleKeys { row: 3 },
        hint: "With window 3, row i keeps keys i − 2 to i + 2. Count the cells of row 4 that are not 0.",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn every_chapter_is_short_and_titled() {
        for (i, c) in CHAPTERS.iter().enumerate() {
            let words = c.text.split_whitespace().count();
            assert!(words <= 80, "chapter {}: {words} words", i + 1);
            assert!(!c.title.is_empty() && !c.formula.is_empty() && !c.hint.is_empty());
        }
    }

    #[test]
    fn every_outlined_stage_figure_is_one_its_chapters_stage_shows() {
        use crate::explorer::figures::tests::inspection;
        use crate::explorer::stage_figures::stage_figures;
        let mut outlined = 0;
        for (i, c) in CHAPTERS.iter().enumerate() {
            let Some(name) = c.focus.figure else { continue };
            let s = c.scene;
            assert_eq!(s.model, ModelNeed::OneModel, "chapter {}", i + 1);
            let probe = protocol::ProbeInput {
                text: s.text.into(),
                pair: s.pair.into(),
                pad_to: s.pad_to,
                mask: s.mask,
                window: s.window,
                ..protocol::ProbeInput::default()
            };
            let sel = protocol::view::Selection {
                part: s.part,
                ..Default::default()
            };
            let shown: Vec<_> = stage_figures(&inspection(probe), sel, s.stage)
                .into_iter()
                .map(|f| f.name)
                .collect();
            assert!(
                shown.contains(&name),
                "chapter {}: {name:?} not in {shown:?}",
                i + 1
            );
            outlined += 1;
        }
        assert_eq!(outlined, 6);
    }
}
