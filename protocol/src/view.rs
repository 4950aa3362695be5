//! What the explorer shows of a model, beside the probe: which attention (`Part`), the layer
//! and head (`Selection`), and which of Compare's two models (`Showing`). With the stepper's
//! `Stage` and the probe, it is the view a link carries (`link`).

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
