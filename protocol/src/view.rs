//! What the explorer shows of a model, beside the probe: which attention (`Part`), the layer
//! and head (`Selection`), and which of Compare's two models (`Showing`). With the stepper's
//! `Stage` and the probe, it is the view a link carries (`link`). `Embed` is the one view an
//! embedded page shows alone.

use crate::claims::Claim;

/// Which attention the explorer looks at. One BERT (or decoder) has only its self-attention;
/// an encoder–decoder has three.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Part {
    /// The inspection's own self-attention: one BERT's, or an encoder–decoder's decoder's
    /// (causal).
    #[default]
    SelfAttention,
    /// An encoder–decoder's cross-attention: queries from the decoder (target rows), keys and
    /// values from the encoder's output (source columns).
    Cross,
    /// An encoder–decoder's encoder, on the source (`Inspection::source`).
    Encoder,
}

/// The layer and head the explorer looks at (0-based; the page shows them 1-based), and in
/// which attention.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub layer: usize,
    pub head: usize,
    pub part: Part,
}

impl Selection {
    /// The same choice, kept inside a model of `layers` × `heads` (after loading another model).
    pub fn clamped(self, layers: usize, heads: usize) -> Selection {
        Selection {
            layer: self.layer.min(layers.saturating_sub(1)),
            head: self.head.min(heads.saturating_sub(1)),
            part: self.part,
        }
    }
}

/// Which model's heatmaps the explorer shows while comparing two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Showing {
    #[default]
    A,
    B,
    Both,
}

impl Showing {
    pub const ALL: [Showing; 3] = [Showing::A, Showing::B, Showing::Both];

    pub fn label(self) -> &'static str {
        match self {
            Showing::A => "A",
            Showing::B => "B",
            Showing::Both => "Both",
        }
    }
}

impl Part {
    pub const ALL: [Part; 3] = [Part::SelfAttention, Part::Cross, Part::Encoder];

    /// Its name in a link.
    pub fn slug(self) -> &'static str {
        match self {
            Part::SelfAttention => "self",
            Part::Cross => "cross",
            Part::Encoder => "encoder",
        }
    }
}

/// What a page opened with `&embed` shows, alone, for an iframe in a course page: the figures
/// of one stage for the link's layer and head (with the stepper), the model view (every layer
/// × head), or one claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Embed {
    Stage,
    Model,
    Claim(Claim),
}

impl Embed {
    /// Every embed, in the order the page offers them.
    pub fn all() -> impl Iterator<Item = Embed> {
        [Embed::Stage, Embed::Model]
            .into_iter()
            .chain(Claim::ALL.map(Embed::Claim))
    }

    /// Its value in a link (`embed=model`); the stage's is "" (a bare `&embed`).
    pub fn slug(self) -> &'static str {
        match self {
            Embed::Stage => "",
            Embed::Model => "model",
            Embed::Claim(c) => c.slug(),
        }
    }

    pub fn from_slug(slug: &str) -> Option<Embed> {
        match slug {
            "stage" => Some(Embed::Stage),
            _ => Embed::all().find(|e| e.slug() == slug),
        }
    }

    /// What the page's "Embed" choice calls it.
    pub fn label(self) -> String {
        match self {
            Embed::Stage => "this stage's figures".to_string(),
            Embed::Model => "the model view".to_string(),
            Embed::Claim(c) => format!("the claim {}", c.title()),
        }
    }
}
