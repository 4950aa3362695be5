//! "Length extrapolation (RoPE)": decoders with absolute, rotary and ALiBi positions, three
//! seeds each, trained on Repeat at short lengths until they copy, then measured on longer
//! rows (`engine::experiments::extrapolation`).

use super::{
    thousands, About, Axes, Claim, ClaimResult, History, Mark, Plot, Verdict, VerdictForm,
};
use crate::settings::positions_words;
use engine::config::PositionEmbeddingType;
use engine::experiments::extrapolation::{
    CHECK_EVERY, LEARNED_ACCURACY, LONGEST, MAX_STEPS, POSITIONS, ROWS, SEEDS, TRAINED,
};
use engine::experiments::Series;
use engine::repeat::Copies;

pub struct Extrapolation;

impl About for Extrapolation {
    fn title(&self) -> &'static str {
        "Length extrapolation (RoPE)"
    }

    fn slug(&self) -> &'static str {
        "extrapolation"
    }

    fn lead(&self) -> &'static str {
        "Can a model trained on short rows still copy in longer ones? Small decoders with absolute, rotary and ALiBi positions are trained here, then tested past the lengths they saw."
    }

    fn quote(&self) -> &'static str {
        "RoPE \"provides better length extrapolation for sequences longer than training data\"."
    }

    fn method(&self) -> String {
        format!(
            "Train {models} tiny decoders of their own, absolute, rotary and ALiBi positions from seeds {seeds} each, on Repeat with segments of L = {min}–{max} symbols (rows up to T = {t} tokens), batch {batch}, until each copies the second copy at least {learned:.0}% right over those lengths (checked every {every} steps, at most {max_steps}). \
             Then measure each on {rows} rows at every L from {min} to {longest} (up to {long_t} tokens), the same rows for every model. \
             What a model keeps is its second-copy accuracy past the trained lengths (L = {past_min}–{longest}) over its accuracy within them. \
             Borne out when every rotary seed keeps more than every absolute one; not borne out when none does; not decided when the two spreads overlap, or when a model has not learned within {max_steps} steps. ALiBi is measured beside them. \
             It takes minutes: another claim run meanwhile goes first, and this one then goes on where it was.",
            models = POSITIONS.len() * SEEDS.len(),
            seeds = seeds_text(),
            min = TRAINED.min_len,
            max = TRAINED.max_len,
            t = TRAINED.max_tokens(),
            batch = engine::experiments::extrapolation::BATCH_SIZE,
            learned = LEARNED_ACCURACY * 100.0,
            every = CHECK_EVERY,
            max_steps = thousands(MAX_STEPS),
            rows = ROWS,
            longest = LONGEST,
            long_t = Copies { len: LONGEST }.tokens(),
            past_min = TRAINED.max_len + 1,
        )
    }

    fn steps_aside(&self) -> bool {
        true
    }
}

/// "1, 2 and 3".
fn seeds_text() -> String {
    let names: Vec<String> = SEEDS.iter().map(u64::to_string).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// One model the claim trained and measured.
#[derive(Clone, Debug, PartialEq)]
pub struct LengthModel {
    pub positions: PositionEmbeddingType,
    pub seed: u64,
    /// Steps it trained.
    pub steps: u64,
    /// The step the check first found it learned; None: not within `MAX_STEPS`.
    pub learned_at: Option<u64>,
    /// (L, second-copy accuracy) at every L measured, ascending.
    pub by_length: Vec<(usize, f64)>,
}

impl LengthModel {
    /// Mean accuracy over the lengths `keep` picks; None when it picks none.
    fn mean(&self, keep: impl Fn(usize) -> bool) -> Option<f64> {
        let picked: Vec<f64> = self
            .by_length
            .iter()
            .filter(|&&(l, _)| keep(l))
            .map(|&(_, a)| a)
            .collect();
        (!picked.is_empty()).then(|| picked.iter().sum::<f64>() / picked.len() as f64)
    }

    pub fn within(&self) -> Option<f64> {
        self.mean(|l| l <= TRAINED.max_len)
    }

    pub fn past(&self) -> Option<f64> {
        self.mean(|l| l > TRAINED.max_len)
    }

    /// Past over within: the share of its accuracy it keeps on rows longer than any it trained.
    pub fn kept(&self) -> Option<f64> {
        match (self.within(), self.past()) {
            (Some(w), Some(p)) if w > 0.0 => Some(p / w),
            _ => None,
        }
    }
}

fn percent(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// "3–12%", or "5%" when the two are one.
fn range_text(lo: f64, hi: f64) -> String {
    if percent(lo) == percent(hi) {
        percent(lo)
    } else {
        format!("{:.0}–{}", lo * 100.0, percent(hi))
    }
}

/// (lowest, highest) of the values.
fn spread(values: &[f64]) -> Option<(f64, f64)> {
    let lo = values.iter().copied().reduce(f64::min)?;
    let hi = values.iter().copied().reduce(f64::max)?;
    Some((lo, hi))
}

impl Extrapolation {
    /// The result of `models` (any order): one plot per kind of positions, every seed a series;
    /// the numbers per model; and the verdict, rotary against absolute by the spread of what
    /// each seed keeps.
    pub fn result(models: &[LengthModel]) -> ClaimResult {
        let sample = format!(
            "{} models, seeds {} of each kind of positions, each measured on {ROWS} rows at every L from {} to {LONGEST}, the same rows for every model.",
            models.len(),
            seeds_text(),
            TRAINED.min_len
        );
        let mut numbers = numbers(models);
        numbers.push(("Sample".into(), sample.clone()));
        let verdict = verdict(
            &of_kind(models, PositionEmbeddingType::Rotary),
            &of_kind(models, PositionEmbeddingType::Absolute),
            &of_kind(models, PositionEmbeddingType::Alibi),
            &sample,
        );
        ClaimResult {
            measured_at: None,
            claim: Claim::Extrapolation,
            plots: POSITIONS.iter().map(|&kind| plot(models, kind)).collect(),
            numbers,
            verdict,
            heatmap: None,
            history: History::None,
        }
    }
}

/// The models with `kind` of positions, by seed.
fn of_kind(models: &[LengthModel], kind: PositionEmbeddingType) -> Vec<&LengthModel> {
    let mut m: Vec<&LengthModel> = models.iter().filter(|m| m.positions == kind).collect();
    m.sort_by_key(|m| m.seed);
    m
}

/// One kind of positions: each seed's second-copy accuracy by segment length, with a mark at
/// the longest trained.
fn plot(models: &[LengthModel], kind: PositionEmbeddingType) -> Plot {
    let series = |m: &&LengthModel| Series {
        name: match m.learned_at {
            Some(_) => format!("seed {}", m.seed),
            None => format!("seed {} (not learned)", m.seed),
        },
        x: m.by_length.iter().map(|&(l, _)| l as f64).collect(),
        y: m.by_length.iter().map(|&(_, a)| a).collect(),
    };
    Plot {
        caption: format!(
            "{}: second-copy accuracy by segment length L (rows of 2L + 2 tokens), one line per seed",
            kind.label()
        ),
        x_label: "segment length L".into(),
        y_label: "second-copy accuracy".into(),
        axes: Axes::Linear,
        series: of_kind(models, kind).iter().map(series).collect(),
        marks: vec![Mark::x(
            TRAINED.max_len as f64 + 0.5,
            format!(
                "trained up to L = {} (T = {})",
                TRAINED.max_len,
                TRAINED.max_tokens()
            ),
        )],
    }
}

/// Each model: when it learned, its accuracy within and past T, and what it keeps.
fn numbers(models: &[LengthModel]) -> Vec<(String, String)> {
    let opt = |v: Option<f64>| v.map_or("—".to_string(), percent);
    let said = |m: &&LengthModel| {
        let learned = match m.learned_at {
            Some(step) => format!("learned at step {}", thousands(step)),
            None => format!("not learned by step {}", thousands(m.steps)),
        };
        (
            format!("{} seed {}", m.positions.label(), m.seed),
            format!(
                "{learned}; within T {}, past T {}, keeps {}",
                opt(m.within()),
                opt(m.past()),
                opt(m.kept())
            ),
        )
    };
    POSITIONS
        .iter()
        .flat_map(|&kind| of_kind(models, kind).iter().map(said).collect::<Vec<_>>())
        .collect()
}

/// The spread of what each model keeps past T.
fn kept(models: &[&LengthModel]) -> Option<(f64, f64)> {
    spread(&models.iter().filter_map(|m| m.kept()).collect::<Vec<_>>())
}

/// Rotary against absolute by the spread of what each seed keeps, once every one of them
/// learned.
fn verdict(
    rotary: &[&LengthModel],
    absolute: &[&LengthModel],
    alibi: &[&LengthModel],
    sample: &str,
) -> Verdict {
    let complete = rotary.len() == SEEDS.len() && absolute.len() == SEEDS.len();
    if !complete {
        return VerdictForm::NotMeasured.says(format!(
            "Not measured: the claim needs {} rotary and {} absolute models. {sample}",
            SEEDS.len(),
            SEEDS.len()
        ));
    }
    let unlearned = unlearned(rotary, absolute);
    if !unlearned.is_empty() {
        return VerdictForm::NotDecided.says(format!(
            "Not decided: not every model learned the task within T by step {} (≥ {:.0}% on the second copy), so what it keeps past T says nothing: {}. {sample}",
            thousands(MAX_STEPS),
            LEARNED_ACCURACY * 100.0,
            unlearned.join(", ")
        ));
    }
    let (Some(r), Some(a)) = (kept(rotary), kept(absolute)) else {
        return VerdictForm::NotMeasured.says(format!(
            "Not measured: a model counted nothing within or past T. {sample}"
        ));
    };
    let facts = facts(rotary, absolute, alibi, (r, a));
    if r.0 > a.1 {
        VerdictForm::BorneOut.says(format!("Borne out here: {facts} Every rotary seed keeps more than every absolute one. {sample}"))
    } else if r.1 <= a.0 {
        VerdictForm::NotBorneOut.says(format!(
            "Not borne out here: {facts} No rotary seed keeps more than any absolute one. {sample}"
        ))
    } else {
        VerdictForm::NotDecided.says(format!(
            "Not decided: {facts} The two spreads overlap. {sample}"
        ))
    }
}

/// The rotary and absolute models that did not learn within T, named.
fn unlearned(rotary: &[&LengthModel], absolute: &[&LengthModel]) -> Vec<String> {
    rotary
        .iter()
        .chain(absolute)
        .filter(|m| m.learned_at.is_none())
        .map(|m| {
            format!(
                "{} seed {} ({} within T)",
                positions_words(m.positions),
                m.seed,
                m.within().map_or("—".into(), percent)
            )
        })
        .collect()
}

/// What rotary and absolute keep past T (`kept`: their spreads), when they learned, and what
/// ALiBi keeps.
fn facts(
    rotary: &[&LengthModel],
    absolute: &[&LengthModel],
    alibi: &[&LengthModel],
    (r, a): ((f64, f64), (f64, f64)),
) -> String {
    let both = || rotary.iter().chain(absolute);
    let learned: Vec<u64> = both().filter_map(|m| m.learned_at).collect();
    let (first, last) = (
        learned.iter().min().copied().unwrap_or(0),
        learned.iter().max().copied().unwrap_or(0),
    );
    let within: Vec<f64> = both().filter_map(|m| m.within()).collect();
    let (wlo, whi) = spread(&within).unwrap_or((0.0, 0.0));
    let alibi_text = match kept(alibi) {
        Some((lo, hi)) if alibi.iter().all(|m| m.learned_at.is_some()) => {
            format!(" ALiBi keeps {} of its accuracy.", range_text(lo, hi))
        }
        _ => " ALiBi: not every seed learned within T.".to_string(),
    };
    format!(
        "past the trained lengths (L = {}–{LONGEST}), rotary keeps {} of its second-copy accuracy and absolute {} ({} seeds each, all learned within T by steps {}–{}, at {} within T).{alibi_text}",
        TRAINED.max_len + 1,
        range_text(r.0, r.1),
        range_text(a.0, a.1),
        SEEDS.len(),
        thousands(first),
        thousands(last),
        range_text(wlo, whi),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model that learned at `learned`, with `within` at L ≤ 8 and `past` beyond.
    fn model(
        positions: PositionEmbeddingType,
        seed: u64,
        learned: Option<u64>,
        within: f64,
        past: f64,
    ) -> LengthModel {
        LengthModel {
            positions,
            seed,
            steps: learned.unwrap_or(MAX_STEPS),
            learned_at: learned,
            by_length: (TRAINED.min_len..=LONGEST)
                .map(|l| (l, if l <= TRAINED.max_len { within } else { past }))
                .collect(),
        }
    }

    fn all(kept: [[f64; 3]; 3]) -> Vec<LengthModel> {
        POSITIONS
            .iter()
            .zip(kept)
            .flat_map(|(&p, ks)| {
                SEEDS
                    .iter()
                    .zip(ks)
                    .map(move |(&s, k)| model(p, s, Some(1000 + 100 * s), 0.95, 0.95 * k))
            })
            .collect()
    }

    use PositionEmbeddingType::{Alibi, Rotary};

    #[test]
    fn a_plot_per_kind_of_positions_a_line_per_seed_and_a_mark_at_the_trained_length() {
        let r = Extrapolation::result(&all([[0.0; 3], [0.5; 3], [0.4; 3]]));
        assert_eq!(r.plots.len(), 3);
        for (plot, kind) in r.plots.iter().zip(["Absolute", "Rotary", "ALiBi"]) {
            assert!(plot.caption.starts_with(kind), "{}", plot.caption);
            let names: Vec<&str> = plot.series.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["seed 1", "seed 2", "seed 3"]);
            assert_eq!(plot.series[0].x.first(), Some(&4.0));
            assert_eq!(plot.series[0].x.last(), Some(&16.0));
            assert_eq!(plot.marks[0].at, 8.5);
        }
        assert!(r.numbers.iter().any(|(k, v)| k == "Rotary seed 2"
            && v == "learned at step 1,200; within T 95%, past T 48%, keeps 50%"));
    }

    #[test]
    fn the_verdict_compares_the_seeds_spreads_and_can_come_out_each_way() {
        let borne = Extrapolation::result(&all([[0.0, 0.05, 0.1], [0.4, 0.6, 0.8], [0.5; 3]]))
            .verdict
            .text;
        assert!(borne.starts_with("Borne out here: past the trained lengths (L = 9–16), rotary keeps 40–80% of its second-copy accuracy and absolute 0–10%"), "{borne}");
        assert!(
            borne.contains("ALiBi keeps 50%") && borne.contains("seeds 1, 2 and 3"),
            "{borne}"
        );
        let not = Extrapolation::result(&all([[0.5, 0.6, 0.7], [0.1, 0.2, 0.5], [0.5; 3]]))
            .verdict
            .text;
        assert!(not.starts_with("Not borne out here:"), "{not}");
        let overlap = Extrapolation::result(&all([[0.2, 0.3, 0.5], [0.4, 0.6, 0.8], [0.5; 3]]))
            .verdict
            .text;
        assert!(
            overlap.starts_with("Not decided:") && overlap.contains("The two spreads overlap"),
            "{overlap}"
        );
        // The form is decided with the words.
        let forms = [[0.0, 0.05, 0.1], [0.8, 0.9, 1.0], [0.2, 0.3, 0.5]].map(|absolute| {
            Extrapolation::result(&all([absolute, [0.4, 0.6, 0.8], [0.5; 3]]))
                .verdict
                .form
        });
        assert_eq!(
            forms,
            [
                VerdictForm::BorneOut,
                VerdictForm::NotBorneOut,
                VerdictForm::NotDecided
            ]
            .map(Some)
        );
        // Nothing kept by either: rotary keeps no more, not borne out.
        let none = Extrapolation::result(&all([[0.0; 3], [0.0; 3], [0.0; 3]]))
            .verdict
            .text;
        assert!(none.starts_with("Not borne out here:"), "{none}");
    }

    #[test]
    fn a_model_that_has_not_learned_leaves_it_undecided() {
        let mut models = all([[0.0; 3], [0.9; 3], [0.5; 3]]);
        models[4] = model(Rotary, 2, None, 0.41, 0.1);
        let r = Extrapolation::result(&models);
        assert!(
            r.verdict.text.starts_with(
                "Not decided: not every model learned the task within T by step 3,000"
            ) && r.verdict.text.contains("rotary seed 2 (41% within T)"),
            "{}",
            r.verdict.text
        );
        assert_eq!(r.plots[1].series[1].name, "seed 2 (not learned)");
        // ALiBi not learned does not block the verdict; it is said.
        let mut models = all([[0.0; 3], [0.9; 3], [0.5; 3]]);
        models[8] = model(Alibi, 3, None, 0.3, 0.1);
        let v = Extrapolation::result(&models).verdict.text;
        assert!(
            v.starts_with("Borne out here") && v.contains("ALiBi: not every seed learned"),
            "{v}"
        );
    }
}
