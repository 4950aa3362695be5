//! The "Claims" panel: the tutorial's claims about attention, each a type of its own (one file
//! here each) that says its title, lead, quote and method (`About`) and how its result reads; the
//! worker measures it in units (so it can report progress and stop between them), and its
//! result is plain data: the lines to plot, the numbers beside them, a one-line verdict.
//!
//! A new claim: its file here (a unit struct with `About`, and its result), its measurement in
//! the worker (`worker-core/src/claims/`, with its arm in `start` there), and a line in `Claim`
//! below with its entry in `Claim::ALL` and its arm in `Claim::about`.

mod by_length;
mod extrapolation;
mod heads;
mod induction;
mod kv_cache;
mod leakage;
mod memory;
mod scaling;
mod time;

pub use by_length::{sizes, units, Unit, BLOCK, LENGTHS};
pub use engine::experiments::Variant;
pub use extrapolation::{Extrapolation, LengthModel};
pub use heads::{head_label, Heads, HeadsMeasured, HeadsPoint, Loss};
pub use induction::{InductionHeads, InductionMeasured, InductionPoint, CHANGE_ACCURACY};
pub use kv_cache::{KvCache, KvShape};
pub use leakage::Leakage;
pub use memory::Memory;
pub use scaling::{Scaling, TrainedModel, TrainedScaling, HEAD_SIZES, TRAINED_MIN_HEAD_DIM};
pub use time::Time;

use engine::experiments::Series;
use engine::Matrix;
use serde::{Deserialize, Serialize};

/// Which claim: what the page and the worker say to each other, and a link's `embed=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Claim {
    Leakage,
    Memory,
    Time,
    KvCache,
    Extrapolation,
    Scaling,
    Heads,
    InductionHeads,
}

/// What a claim says of itself: its card's words, and what its runner needs to know of it.
/// A claim measured again while the model trains (`About::measured_again_while_training`) is
/// measured at most this often, and at most a twentieth of the time: each measurement is one
/// macrotask of the training worker, whose length it takes from training (tens of ms for
/// tiny, seconds for small).
pub const REMEASURE_MS: f64 = 1000.0;
/// A measurement longer than this backs off while training: the wait before the next doubles
/// each time (from `REMEASURE_MS`, and never under 19 times the measurement), so training and
/// Pause seldom wait on one; Pause and Step still measure at the step they stop on.
pub const REMEASURE_PLAYING_MAX_MS: f64 = 250.0;

pub trait About: Sync {
    fn title(&self) -> &'static str;
    /// Its name in a link (`embed=kv-cache`).
    fn slug(&self) -> &'static str;
    /// What the card asks and shows, in one plain sentence or two: what a learner reads first.
    fn lead(&self) -> &'static str;
    /// What the tutorial says, in its words.
    fn quote(&self) -> &'static str;
    /// What "Run" does, in a sentence or two, with the sizes it measures at.
    fn method(&self) -> String;
    /// It takes minutes: a claim asked for while it runs goes first (`turns`).
    fn steps_aside(&self) -> bool {
        false
    }
    /// It reads the weights the History kept, not only the models now: the claim worker's
    /// copy then carries them (up to 64 MB a model).
    fn reads_history(&self) -> bool {
        false
    }
    /// Once it has run on a model, the training worker measures it again as the model trains.
    fn measured_again_while_training(&self) -> bool {
        false
    }
}

impl Claim {
    pub const ALL: [Claim; 8] = [
        Claim::Leakage,
        Claim::Memory,
        Claim::Time,
        Claim::KvCache,
        Claim::Extrapolation,
        Claim::Scaling,
        Claim::Heads,
        Claim::InductionHeads,
    ];

    /// The claim's type, as what it says of itself.
    pub fn about(self) -> &'static dyn About {
        match self {
            Claim::Leakage => &Leakage,
            Claim::Memory => &Memory,
            Claim::Time => &Time,
            Claim::KvCache => &KvCache,
            Claim::Extrapolation => &Extrapolation,
            Claim::Scaling => &Scaling,
            Claim::Heads => &Heads,
            Claim::InductionHeads => &InductionHeads,
        }
    }

    pub fn title(self) -> &'static str {
        self.about().title()
    }

    /// Its name in a link (`embed=kv-cache`).
    pub fn slug(self) -> &'static str {
        self.about().slug()
    }

    /// See [`About::lead`].
    pub fn lead(self) -> &'static str {
        self.about().lead()
    }

    /// What the tutorial says, in its words.
    pub fn quote(self) -> &'static str {
        self.about().quote()
    }

    /// What "Run" does.
    pub fn method(self) -> String {
        self.about().method()
    }

    /// See [`About::reads_history`].
    pub fn reads_history(self) -> bool {
        self.about().reads_history()
    }

    /// See [`About::measured_again_while_training`].
    pub fn measured_again_while_training(self) -> bool {
        self.about().measured_again_while_training()
    }

    /// See [`About::steps_aside`].
    pub fn steps_aside(self) -> bool {
        self.about().steps_aside()
    }
}

/// How a result's axes are scaled. On a logarithmic y axis exact zeros sit on its floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Axes {
    /// Both logarithmic: how a cost scales with T (a power law is a straight line).
    LogLog,
    /// Linear x (positions), logarithmic y.
    LinearLog,
    /// Logarithmic x, linear y (a share or an entropy against a size).
    LogLinear,
    /// Both linear (accuracy by position).
    Linear,
}

impl Axes {
    pub fn log_x(self) -> bool {
        matches!(self, Axes::LogLog | Axes::LogLinear)
    }

    pub fn log_y(self) -> bool {
        matches!(self, Axes::LogLog | Axes::LinearLog)
    }
}

/// A labelled line across a claim's plot: vertical at an x (the training length, the step a
/// change came), or horizontal at a y (the bar a value must reach).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    /// Where it crosses its axis.
    pub at: f64,
    pub axis: MarkAxis,
    pub label: String,
}

/// The axis a mark stands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MarkAxis {
    /// A vertical line at an x.
    X,
    /// A horizontal line at a y.
    Y,
}

impl Mark {
    /// A vertical line at `x`.
    pub fn x(x: f64, label: impl Into<String>) -> Mark {
        Mark {
            at: x,
            axis: MarkAxis::X,
            label: label.into(),
        }
    }

    /// A horizontal line at `y`.
    pub fn y(y: f64, label: impl Into<String>) -> Mark {
        Mark {
            at: y,
            axis: MarkAxis::Y,
            label: label.into(),
        }
    }
}

/// One of a claim's plots: lines over labelled axes, with vertical marks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    /// The figure's caption.
    pub caption: String,
    pub x_label: String,
    pub y_label: String,
    pub axes: Axes,
    pub series: Vec<Series>,
    /// Lines with what they mark (the training length, the last learned position, a bar).
    pub marks: Vec<Mark>,
}

/// On a plot by head (head k of l·H + h at x = k + 1): a line between each two layers.
fn layer_marks(layers: usize, heads: usize) -> Vec<Mark> {
    (1..layers)
        .map(|l| Mark::x((l * heads) as f64 + 0.5, format!("layer {}", l + 1)))
        .collect()
}

/// What a verdict says: the page colours each form its own way. Every claim decides its
/// verdict's form where it words it (`VerdictForm::says`); the sentence starts with the form's
/// words ("Borne out", "Not borne out", "Not decided", "Not measured").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum VerdictForm {
    /// "Borne out", "Borne out here", "Borne out, by construction".
    BorneOut,
    /// "Not borne out", "Not borne out here".
    NotBorneOut,
    /// "Not decided": the spread covers the effect.
    NotDecided,
    /// "Not measured", "Not yet measurable": the measurement could not be made (yet).
    NotMeasured,
}

impl VerdictForm {
    pub const ALL: [VerdictForm; 4] = [
        VerdictForm::BorneOut,
        VerdictForm::NotBorneOut,
        VerdictForm::NotDecided,
        VerdictForm::NotMeasured,
    ];

    /// Its `data-verdict` name.
    pub fn name(self) -> &'static str {
        match self {
            VerdictForm::BorneOut => "borne-out",
            VerdictForm::NotBorneOut => "not-borne-out",
            VerdictForm::NotDecided => "not-decided",
            VerdictForm::NotMeasured => "not-measured",
        }
    }

    /// A verdict of this form, in `text`.
    pub fn says(self, text: String) -> Verdict {
        Verdict {
            form: Some(self),
            text,
        }
    }
}

/// A claim's verdict: one sentence, and its form, decided together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// None: a finding that is no verdict on the claim yet (Induction heads before the change,
    /// or copying spread over heads), drawn plain.
    pub form: Option<VerdictForm>,
    pub text: String,
}

impl Verdict {
    /// A finding of no form.
    pub fn plain(text: String) -> Verdict {
        Verdict { form: None, text }
    }
}

/// A claim's measured result: its plots, the numbers beside them, and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimResult {
    pub claim: Claim,
    pub plots: Vec<Plot>,
    /// (what, value), shown beside the plots.
    pub numbers: Vec<(String, String)>,
    /// One sentence: does the measurement bear the claim out?
    pub verdict: Verdict,
    /// A table drawn as a heatmap below the plots (the Heads claim's roles), if any.
    pub heatmap: Option<ClaimHeatmap>,
    /// The training step of the model measured (set by the runner that measured it).
    pub measured_at: Option<u64>,
    /// What a claim plotted by step measured at each step: its plots are drawn from these,
    /// and the claim measured again as the model trains goes on from them.
    pub history: History,
}

/// What a claim plotted by step keeps of each step it measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum History {
    /// A claim measured once.
    #[default]
    None,
    InductionHeads(Vec<InductionPoint>),
    Heads(Vec<HeadsPoint>),
}

impl History {
    /// Induction heads' points (none for another claim's history).
    pub fn induction(&self) -> &[InductionPoint] {
        match self {
            History::InductionHeads(points) => points,
            _ => &[],
        }
    }

    /// The Heads claim's points (none for another claim's history).
    pub fn heads(&self) -> &[HeadsPoint] {
        match self {
            History::Heads(points) => points,
            _ => &[],
        }
    }
}

/// Most points a claim plotted by step keeps (`add_point`): a measurement a second, four
/// minutes of them, before they thin out.
pub const MOST_POINTS: usize = 240;

/// Adds the point measured at `step` to `points`, in place of those from `step` on (a Rewind
/// trains those steps again). Past `most` points every other older one goes, the first and the
/// newest kept: the plot keeps its whole span at half the density.
pub fn add_point<P>(points: &mut Vec<P>, point: P, step_of: fn(&P) -> u64, most: usize) {
    let step = step_of(&point);
    points.retain(|p| step_of(p) < step);
    points.push(point);
    if points.len() > most.max(2) {
        let last = points.len() - 1;
        let mut i = 0;
        points.retain(|_| {
            let keep = i % 2 == 0 || i == last;
            i += 1;
            keep
        });
    }
}

/// A table a result shows as a heatmap: rows and columns named, values row by row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimHeatmap {
    pub caption: String,
    pub row_labels: Vec<String>,
    pub col_labels: Vec<String>,
    pub values: Matrix,
}

/// 12345 → "12,345": counts and steps as the page writes them.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// Bytes as people read them: "336 kB", "201.6 MB".
pub fn bytes_text(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.0} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_claim_has_its_own_slug_and_title() {
        for (i, a) in Claim::ALL.iter().enumerate() {
            for b in &Claim::ALL[i + 1..] {
                assert_ne!(a.slug(), b.slug());
                assert_ne!(a.title(), b.title());
            }
        }
        assert_eq!(Claim::KvCache.slug(), "kv-cache");
        assert!(Claim::Scaling.reads_history() && !Claim::Time.reads_history());
        assert!(Claim::Heads.measured_again_while_training());
        assert!(!Claim::Memory.measured_again_while_training());
    }

    #[test]
    fn each_verdict_form_has_its_own_name() {
        let names: std::collections::BTreeSet<_> =
            VerdictForm::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), VerdictForm::ALL.len());
    }

    #[test]
    fn a_point_replaces_those_from_its_step_on_and_past_the_most_every_other_older_one_goes() {
        let step = |p: &u64| *p;
        let mut points = vec![0, 10, 20, 30];
        add_point(&mut points, 20, step, 8);
        assert_eq!(
            points,
            [0, 10, 20],
            "a Rewind to 20 trains from there again"
        );
        for s in [30, 40, 50, 60, 70, 80] {
            add_point(&mut points, s, step, 8);
        }
        assert_eq!(
            points,
            [0, 20, 40, 60, 80],
            "nine points: the first and last kept"
        );
        add_point(&mut points, 90, step, 8);
        assert_eq!(points, [0, 20, 40, 60, 80, 90]);
    }

    /// A variant the compiler makes `about` and the worker's `start` handle but that `ALL`
    /// lacks would have no card: every variant the wire can name (postcard writes a variant
    /// as its index) is in `ALL`, in order.
    #[test]
    fn all_lists_every_claim() {
        let named: Vec<Claim> = (0u8..=u8::MAX)
            .map_while(|i| postcard::from_bytes::<Claim>(&[i]).ok())
            .collect();
        assert_eq!(named, Claim::ALL);
    }
}
