//! "Length extrapolation (RoPE)": MLM accuracy by position, on sequences twice the trained
//! length, of Compare's two models whose positions differ.

use super::{About, Axes, Claim, ClaimResult, Mark, Plot};
use crate::settings::positions_words;
use engine::config::PositionEmbeddingType;
use engine::experiments::{Series, Tally};

pub struct Extrapolation;

impl About for Extrapolation {
    fn title(&self) -> &'static str {
        "Length extrapolation (RoPE)"
    }

    fn slug(&self) -> &'static str {
        "extrapolation"
    }

    fn quote(&self) -> &'static str {
        "RoPE \"provides better length extrapolation for sequences longer than training data\"."
    }

    fn method(&self) -> String {
        format!(
            "Train two models at length T whose Positions differ (Compare: any two of Absolute, Rotary and ALiBi), then measure MLM accuracy by position on sequences of length 2T packed from the corpus, every maskable position of every sequence once. \
             Both models must first have learned the task: each needs at least {learned:.0}% accuracy within T, or the claim is not decided. \
             What a model keeps is its accuracy past T over its accuracy within T; the effect is what the rotary model (ALiBi in its place when neither is rotary) keeps minus what the other keeps, past T over the positions both can read. Its standard error is taken over sequences (the delta method for a ratio of sums, both models on the same sequences), and the effect is decided only when it lies more than {errors} standard errors from zero: borne out above, not borne out below.",
            learned = LEARNED_WITHIN_T * 100.0,
            errors = DECIDED_STANDARD_ERRORS,
        )
    }
}

/// Accuracy within T each model must reach before what it keeps past T means anything. Past
/// T is read as a share of within T: a model that has not learned the task scores near chance
/// in both and "keeps" all of it. Tiny on the default corpus with the default settings,
/// Compare absolute against rotary (T = 29), reached within T on these packed sequences:
/// rotary 21% at step 500, 40% at 1000, 64% at 2000, 74% at 3000, 79% at 6000; absolute
/// stayed at 6–14% (about what guessing the frequent words gives) all the way, though on its
/// training batches it had 76% at step 3000 (rotary 87%). Half the masked tokens right is well
/// clear of that floor and what a tiny model that learns reaches in a couple of thousand
/// steps; 90% it does not reach at all.
pub const LEARNED_WITHIN_T: f64 = 0.5;

/// The effect is decided when it lies more than this many standard errors from zero (about
/// 95% two-sided, were it normal).
pub const DECIDED_STANDARD_ERRORS: f64 = 2.0;

/// What the length-extrapolation claim measured of one model: its kind of positions and its
/// (correct, counted) MLM predictions at each position it could read, a row per sequence.
pub struct ByPosition<'a> {
    pub kind: PositionEmbeddingType,
    /// `tally[i][p]`: sequence i, position p; every model of a claim has the same sequences.
    pub tally: &'a [Vec<Tally>],
    /// Learned positions (absolute) or None (rotary, ALiBi: any position).
    pub max_positions: Option<usize>,
}

/// (correct, counted) over `row[range]`, the range cut to the row.
fn sum(row: &[Tally], range: &std::ops::Range<usize>) -> Tally {
    row.get(range.start.min(row.len())..range.end.min(row.len()))
        .unwrap_or_default()
        .iter()
        .fold((0, 0), |(h, n), &(dh, dn)| (h + dh, n + dn))
}

/// (correct, counted) over `range` of every sequence.
fn pooled(tally: &[Vec<Tally>], range: &std::ops::Range<usize>) -> Tally {
    tally
        .iter()
        .map(|row| sum(row, range))
        .fold((0, 0), |(h, n), (dh, dn)| (h + dh, n + dn))
}

/// Accuracy over `range` of every sequence, None when nothing was counted there.
fn accuracy(tally: &[Vec<Tally>], range: std::ops::Range<usize>) -> Option<f64> {
    let (hits, n) = pooled(tally, &range);
    (n > 0).then(|| hits as f64 / n as f64)
}

/// The effect the verdict reads: kept_S − kept_O, kept = (accuracy past T) ÷ (accuracy within
/// T), each accuracy pooled over every sequence (hits ÷ counted), S the claim's model and O
/// the other, over the same sequences; and its standard error over those N sequences.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Effect {
    pub kept_difference: f64,
    pub standard_error: f64,
    pub sequences: usize,
}

impl Effect {
    /// The standard error by the delta method: kept = (Σ hp ÷ Σ np) ÷ (Σ hw ÷ Σ nw) is a
    /// smooth function of sums over sequences, so kept − E[kept] ≈ Σᵢ uᵢ with sequence i's
    /// influence uᵢ = (hpᵢ − P·npᵢ) ÷ (W·Σnp) − kept·(hwᵢ − W·nwᵢ) ÷ (W·Σnw), where P and W
    /// are the pooled accuracies past and within T (each uᵢ sums to 0 over i). The
    /// difference's influence is u_S,i − u_O,i (one sequence moves both models), and
    /// SE² = N ÷ (N − 1) · Σᵢ (u_S,i − u_O,i)². None below two sequences, or when a model
    /// counted nothing within or past T or got nothing right within it.
    pub fn measure(
        subject: &[Vec<Tally>],
        other: &[Vec<Tally>],
        within: std::ops::Range<usize>,
        past: std::ops::Range<usize>,
    ) -> Option<Effect> {
        let n = subject.len();
        if n < 2 || other.len() != n {
            return None;
        }
        let model = |tally: &[Vec<Tally>]| -> Option<(f64, Vec<f64>)> {
            let ((hw, nw), (hp, np)) = (pooled(tally, &within), pooled(tally, &past));
            if nw == 0 || np == 0 || hw == 0 {
                return None;
            }
            let (w, p) = (hw as f64 / nw as f64, hp as f64 / np as f64);
            let kept = p / w;
            let influence = tally
                .iter()
                .map(|row| {
                    let ((hwi, nwi), (hpi, npi)) = (sum(row, &within), sum(row, &past));
                    (hpi as f64 - p * npi as f64) / (w * np as f64)
                        - kept * (hwi as f64 - w * nwi as f64) / (w * nw as f64)
                })
                .collect();
            Some((kept, influence))
        };
        let ((ks, us), (ko, uo)) = (model(subject)?, model(other)?);
        let squares: f64 = us.iter().zip(&uo).map(|(s, o)| (s - o).powi(2)).sum();
        Some(Effect {
            kept_difference: ks - ko,
            standard_error: (squares * n as f64 / (n - 1) as f64).sqrt(),
            sequences: n,
        })
    }

    /// Decided: more than `DECIDED_STANDARD_ERRORS` standard errors from zero.
    pub fn decided(&self) -> bool {
        self.kept_difference.abs() > DECIDED_STANDARD_ERRORS * self.standard_error
    }
}

impl Extrapolation {
    /// Claim 5: MLM accuracy by position of two models with different kinds of positions
    /// (absolute, rotary, ALiBi), both made with `seed` and trained at length `trained_len` (T)
    /// for `steps` steps, on sequences of length 2T. The series, numbers and verdict name the
    /// kinds compared, absolute first, then rotary, then ALiBi. The claim is RoPE's: with a
    /// rotary model in the pair, it is borne out when rotary keeps more of its accuracy past T
    /// than the other, beyond the spread over sequences (`Effect`); without one (absolute and
    /// ALiBi), ALiBi stands in RoPE's place, and the verdict says so. Not decided while either
    /// model is under `LEARNED_WITHIN_T` within T.
    pub fn result(
        trained_len: usize,
        steps: u64,
        seed: u64,
        a: ByPosition,
        b: ByPosition,
    ) -> ClaimResult {
        let order = |m: &ByPosition| PositionEmbeddingType::ALL.iter().position(|&k| k == m.kind);
        let models = if order(&a) <= order(&b) {
            [a, b]
        } else {
            [b, a]
        };
        let t = trained_len;
        let row_len = |m: &ByPosition| m.tally.first().map_or(0, Vec::len);
        let len = row_len(&models[0]).max(row_len(&models[1]));
        // Positions per point: about 32 points across 2T.
        let bin = (len / 32).max(1);
        let series_of = |m: &ByPosition| {
            let (name, tally) = (m.kind.label(), m.tally);
            let reads = row_len(m);
            let (mut x, mut y) = (Vec::new(), Vec::new());
            // Bins within T and past it apart: no point mixes trained and untrained positions.
            let (within, past) = (0..t.min(reads), t.min(reads)..reads);
            for part in [within, past] {
                for start in part.clone().step_by(bin) {
                    let end = (start + bin).min(part.end);
                    if let Some(a) = accuracy(tally, start..end) {
                        x.push((start + end - 1) as f64 / 2.0);
                        y.push(a);
                    }
                }
            }
            Series {
                name: name.into(),
                x,
                y,
            }
        };
        let percent =
            |a: Option<f64>| a.map_or("—".to_string(), |a| format!("{:.1}%", a * 100.0));
        let reach = |m: &ByPosition| m.max_positions.unwrap_or(len);
        // The verdict compares the two models on the same positions: past T up to what both can
        // read (absolute stops at its P).
        let p = reach(&models[0]).min(reach(&models[1]));
        let within = |m: &ByPosition| accuracy(m.tally, 0..t);
        let past = |m: &ByPosition| accuracy(m.tally, t..len);
        let past_shared = |m: &ByPosition| accuracy(m.tally, t..p.min(len));
        let mut marks = vec![Mark {
            x: t as f64 - 0.5,
            label: format!("trained up to T = {t}"),
        }];
        let past_label = |name: &str, upto: usize| {
            format!(
                "{name}: positions {t}…{} (never trained)",
                upto.saturating_sub(1)
            )
        };
        let mut numbers = vec![(
            "Trained length T (longest example)".to_string(),
            format!("{t} tokens, {steps} steps"),
        )];
        for m in &models {
            let (name, p) = (m.kind.label(), reach(m));
            if p < len {
                marks.push(Mark {
                    x: p as f64 - 0.5,
                    label: format!("{name}: no position past P = {p}"),
                });
            }
            numbers.push((format!("{name}: positions 0…{}", t - 1), percent(within(m))));
            numbers.push(if p <= t {
                (
                    past_label(name, len),
                    format!("— (no position embedding past P = {p})"),
                )
            } else {
                (past_label(name, p.min(len)), percent(past(m)))
            });
            if p > t && p < len {
                numbers.push((
                    format!("{name}: positions {p}…{}", len - 1),
                    format!("— (no position embedding past P = {p})"),
                ));
            }
        }
        // Extrapolation is what a model keeps past the trained length of what it does within it:
        // the packed sequences differ from training's sentence pairs, and that costs each model
        // within T too.
        let kept = |within: Option<f64>, past: Option<f64>| match (within, past) {
            (Some(w), Some(p)) if w > 0.0 => Some(p / w),
            _ => None,
        };
        // The claim's model (rotary, else ALiBi in its place) and the one it is compared with.
        let (subject, other) = match models
            .iter()
            .position(|m| m.kind == PositionEmbeddingType::Rotary)
        {
            Some(r) => (&models[r], &models[1 - r]),
            None => (&models[1], &models[0]),
        };
        let stand_in = if subject.kind == PositionEmbeddingType::Rotary {
            String::new()
        } else {
            format!(
                "No rotary model here, {} in its place. ",
                positions_words(subject.kind)
            )
        };
        let (s_name, o_name) = (positions_words(subject.kind), positions_words(other.kind));
        // Past T as far as the verdict reads it: both models' shared positions, or, when the
        // other cannot read past T at all, as far as the subject reads.
        let past_read = if p > t { t..p.min(len) } else { t..len };
        let (masked_within, masked_past) = (
            pooled(subject.tally, &(0..t)).1,
            pooled(subject.tally, &past_read).1,
        );
        let sample = format!(
            "Measured over {} sequences of {len} tokens ({masked_within} masked positions within T and {masked_past} past it, each model); seed {seed}, both models at step {steps}.",
            subject.tally.len()
        );
        numbers.push((
            "Sample".to_string(),
            format!(
                "{} sequences; {masked_within} masked positions within T, {masked_past} past T; seed {seed}",
                subject.tally.len()
            ),
        ));
        let change = |w: Option<f64>, p: Option<f64>| format!("{} → {}", percent(w), percent(p));
        let shared = if p < len && p > t {
            format!(
                " over positions {t}…{}; absolute cannot read past position {p} at all",
                p - 1
            )
        } else {
            String::new()
        };
        let learned = |m: &ByPosition| within(m).is_some_and(|w| w >= LEARNED_WITHIN_T);
        let keeps = |m: &ByPosition| {
            format!(
                "{} keeps {:.0}% of its accuracy ({})",
                positions_words(m.kind),
                kept(within(m), past_shared(m)).unwrap_or_default() * 100.0,
                change(within(m), past_shared(m))
            )
        };
        let points = |e: Effect| {
            format!(
                "{}{:.1} ± {:.1} points over {} sequences",
                if e.kept_difference < 0.0 { "−" } else { "+" },
                e.kept_difference.abs() * 100.0,
                e.standard_error * 100.0,
                e.sequences
            )
        };
        let effect = Effect::measure(subject.tally, other.tally, 0..t, t..p.min(len));
        let verdict = if within(subject).is_none() || within(other).is_none() || masked_past == 0 {
            format!("Not measured ({s_name} against {o_name}): no maskable token within or past the trained length.")
        } else if !(learned(subject) && learned(other)) {
            format!(
                "Not decided: the models have not learned the task within T ({s_name}: {}, {o_name}: {}; the comparison needs ≥ {:.0}%). Train longer, then Run. {sample}",
                percent(within(subject)),
                percent(within(other)),
                LEARNED_WITHIN_T * 100.0
            )
        } else if p <= t {
            format!(
                "{stand_in}Borne out here: absolute positions stop at P = {p}, so that model cannot read past the trained length; {s_name} reads on and keeps {:.0}% of its accuracy ({}). {sample}",
                kept(within(subject), past(subject)).unwrap_or_default() * 100.0,
                change(within(subject), past(subject))
            )
        } else {
            match effect {
                Some(e) if e.decided() => format!(
                    "{stand_in}{}: past the trained length {}, {}{shared}; the difference is {}. {sample}",
                    if e.kept_difference > 0.0 { "Borne out here" } else { "Not borne out here" },
                    keeps(subject),
                    keeps(other),
                    points(e)
                ),
                Some(e) => format!(
                    "{stand_in}Not decided: past the trained length {}, {}{shared}; the difference, {}, lies within {DECIDED_STANDARD_ERRORS} standard errors of zero. {sample}",
                    keeps(subject),
                    keeps(other),
                    points(e)
                ),
                None => format!("Not decided ({s_name} against {o_name}): fewer than two sequences to take a spread over. {sample}"),
            }
        };
        ClaimResult {
            claim: Claim::Extrapolation,
            plots: vec![Plot {
                caption: format!(
                    "Length extrapolation: MLM accuracy by position on sequences of {len} tokens packed from the corpus; training's sentence pairs filled at most T = {t} positions"
                ),
                x_label: "position".into(),
                y_label: "MLM accuracy".into(),
                axes: Axes::Linear,
                series: models.iter().map(series_of).collect(),
                marks,
            }],
            numbers,
            verdict,
            heatmap: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `per_position` as the tally of each of `n` sequences alike: no spread over sequences.
    fn alike(n: usize, per_position: &[Tally]) -> Vec<Vec<Tally>> {
        vec![per_position.to_vec(); n]
    }

    #[test]
    fn extrapolation_plots_accuracy_by_position_and_says_where_absolute_stops() {
        // T = 8, 2T = 16; absolute has P = 12 learned positions.
        let rotary: Vec<Tally> = (0..16)
            .map(|p| if p < 8 { (3, 4) } else { (2, 4) })
            .collect();
        let absolute: Vec<Tally> = (0..12)
            .map(|p| if p < 8 { (3, 4) } else { (1, 4) })
            .collect();
        let (rotary, absolute) = (alike(4, &rotary), alike(4, &absolute));
        let r = Extrapolation::result(
            8,
            300,
            7,
            ByPosition {
                kind: PositionEmbeddingType::Absolute,
                tally: &absolute,
                max_positions: Some(12),
            },
            ByPosition {
                kind: PositionEmbeddingType::Rotary,
                tally: &rotary,
                max_positions: None,
            },
        );
        assert_eq!(r.plots[0].axes, Axes::Linear);
        assert_eq!(
            (
                r.plots[0].series[0].name.as_str(),
                r.plots[0].series[1].name.as_str()
            ),
            ("Absolute", "Rotary")
        );
        assert_eq!(r.plots[0].series[1].x.len(), 16);
        assert!(
            r.plots[0].series[0].x.iter().all(|&x| x < 12.0),
            "absolute stops at P"
        );
        assert_eq!(
            (r.plots[0].series[1].y[0], r.plots[0].series[1].y[15]),
            (0.75, 0.5)
        );
        assert_eq!(
            r.plots[0].marks.iter().map(|m| m.x).collect::<Vec<_>>(),
            [7.5, 11.5]
        );
        let number = |what: &str| {
            r.numbers
                .iter()
                .find(|(k, _)| k == what)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            number("Rotary: positions 8…15 (never trained)").as_deref(),
            Some("50.0%")
        );
        assert_eq!(
            number("Absolute: positions 8…11 (never trained)").as_deref(),
            Some("25.0%")
        );
        assert!(number("Absolute: positions 12…15")
            .unwrap()
            .contains("no position embedding past P = 12"));
        // A clear win: rotary keeps 50 ÷ 75 = 67%, absolute 25 ÷ 75 = 33% over 8…11, alike in
        // every sequence (no spread).
        assert!(
            r.verdict.starts_with(
                "Borne out here: past the trained length rotary keeps 67% of its accuracy (75.0% → 50.0%), absolute keeps 33%"
            ),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict
                .contains("the difference is +33.3 ± 0.0 points over 4 sequences"),
            "{}",
            r.verdict
        );
        // The sample: 4 sequences × 8 positions × 4 counted, within T and over 8…11 alike.
        assert!(
            r.verdict.ends_with("Measured over 4 sequences of 16 tokens (128 masked positions within T and 64 past it, each model); seed 7, both models at step 300."),
            "{}",
            r.verdict
        );
        assert!(r.plots[0].caption.starts_with("Length extrapolation"));
        // A clear loss, absolute better past T: said plainly.
        let good = alike(4, &[(4, 4); 16]);
        let r = Extrapolation::result(
            8,
            300,
            7,
            ByPosition {
                kind: PositionEmbeddingType::Absolute,
                tally: &good,
                max_positions: Some(16),
            },
            ByPosition {
                kind: PositionEmbeddingType::Rotary,
                tally: &rotary,
                max_positions: None,
            },
        );
        assert!(r.verdict.starts_with("Not borne out"), "{}", r.verdict);
        assert_eq!(r.plots[0].marks.len(), 1);
        // Two positions a point (2T = 64), T odd: no point mixes position T − 1 with T.
        let long = alike(4, &[(1, 2); 64]);
        let r = Extrapolation::result(
            31,
            10,
            7,
            ByPosition {
                kind: PositionEmbeddingType::Absolute,
                tally: &long,
                max_positions: Some(128),
            },
            ByPosition {
                kind: PositionEmbeddingType::Rotary,
                tally: &long,
                max_positions: None,
            },
        );
        assert!(r.plots[0].series[1].x.contains(&30.0) && r.plots[0].series[1].x.contains(&31.5));
        assert!(
            r.plots[0].series[1].x.iter().all(|&x| x != 30.5),
            "{:?}",
            r.plots[0].series[1].x
        );
    }

    /// ALiBi as either model of the pair: series, numbers and verdict name the kinds compared,
    /// absolute first; rotary against ALiBi is RoPE's claim, absolute against ALiBi has ALiBi
    /// in RoPE's place.
    #[test]
    fn extrapolation_names_the_kinds_it_compared() {
        let keeps = alike(4, &[(3, 4); 16]);
        let drops: Vec<Tally> = (0..16)
            .map(|p| if p < 8 { (3, 4) } else { (1, 4) })
            .collect();
        let absolute = alike(4, &drops[..12]);
        let drops = alike(4, &drops);
        fn by(kind: PositionEmbeddingType, tally: &[Vec<Tally>]) -> ByPosition<'_> {
            ByPosition {
                kind,
                tally,
                max_positions: (kind == PositionEmbeddingType::Absolute).then_some(12),
            }
        }
        use PositionEmbeddingType::{Absolute, Alibi, Rotary};
        // ALiBi given first: still drawn after absolute.
        let r = Extrapolation::result(8, 300, 7, by(Alibi, &keeps), by(Absolute, &absolute));
        let names: Vec<&str> = r.plots[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Absolute", "ALiBi"]);
        let number = |r: &ClaimResult, what: &str| {
            r.numbers
                .iter()
                .find(|(k, _)| k == what)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(
            number(&r, "ALiBi: positions 8…15 (never trained)").as_deref(),
            Some("75.0%")
        );
        assert!(number(&r, "Absolute: positions 12…15").is_some());
        assert!(
            r.verdict.starts_with("No rotary model here, ALiBi in its place. Borne out here: past the trained length ALiBi keeps 100%"),
            "{}",
            r.verdict
        );
        assert!(r.verdict.contains("absolute keeps 33%"), "{}", r.verdict);
        // Rotary against ALiBi: RoPE's claim, not borne out when ALiBi keeps more.
        let r = Extrapolation::result(8, 300, 7, by(Alibi, &keeps), by(Rotary, &drops));
        let names: Vec<&str> = r.plots[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Rotary", "ALiBi"]);
        assert_eq!(r.plots[0].marks.len(), 1, "neither stops at a P");
        assert!(
            r.verdict
                .starts_with("Not borne out here: past the trained length rotary keeps 33%"),
            "{}",
            r.verdict
        );
        assert!(r.verdict.contains("ALiBi keeps 100%"), "{}", r.verdict);
        assert_eq!(
            number(&r, "Rotary: positions 8…15 (never trained)").as_deref(),
            Some("25.0%")
        );
    }

    /// Rotary (subject) and absolute on four sequences, T = 8, 2T = 16: within T 3 of 4 right
    /// at every position for both.
    fn pair(within: Tally, rotary_past: &[Tally], absolute_past: Tally) -> [Vec<Vec<Tally>>; 2] {
        let row = |past: Tally| -> Vec<Tally> {
            (0..16).map(|p| if p < 8 { within } else { past }).collect()
        };
        [
            rotary_past.iter().map(|&past| row(past)).collect(),
            (0..rotary_past.len()).map(|_| row(absolute_past)).collect(),
        ]
    }

    fn rotary_against_absolute(tallies: &[Vec<Vec<Tally>>; 2]) -> ClaimResult {
        let by = |kind, tally| ByPosition {
            kind,
            tally,
            max_positions: (kind == PositionEmbeddingType::Absolute).then_some(16),
        };
        Extrapolation::result(
            8,
            120,
            3,
            by(PositionEmbeddingType::Rotary, &tallies[0]),
            by(PositionEmbeddingType::Absolute, &tallies[1]),
        )
    }

    /// Under `LEARNED_WITHIN_T` within T, nothing past T is read: not decided, with both
    /// accuracies, the bar and the sample.
    #[test]
    fn extrapolation_is_not_decided_before_the_models_learn_within_t() {
        // Rotary 75% within T, absolute 1 in 4 = 25%; rotary far ahead past T all the same.
        let [rotary, _] = pair((3, 4), &[(3, 4); 4], (0, 4));
        let [_, absolute] = pair((1, 4), &[(3, 4); 4], (0, 4));
        let r = rotary_against_absolute(&[rotary, absolute]);
        assert_eq!(
            r.verdict,
            "Not decided: the models have not learned the task within T (rotary: 75.0%, absolute: 25.0%; the comparison needs ≥ 50%). Train longer, then Run. Measured over 4 sequences of 16 tokens (128 masked positions within T and 128 past it, each model); seed 3, both models at step 120."
        );
        // The Sample number says the same.
        assert!(r.numbers.iter().any(|(k, v)| k == "Sample"
            && v == "4 sequences; 128 masked positions within T, 128 past T; seed 3"));
    }

    /// The spread over sequences: past T rotary gets 4 of 4 in two sequences and 1 of 4 in
    /// the other two (62.5% pooled), absolute 2 of 4 in all (50%); both 75% within T. The
    /// effect is 62.5 ÷ 75 − 50 ÷ 75 = +16.7 points; rotary's influence per sequence is
    /// ±(32 − 0.625 · 32) ÷ (0.75 · 128) = ±0.125, absolute's 0, so SE² = 4/3 · 4 · 0.125²
    /// and SE = 28.9 points: within two standard errors, not decided.
    #[test]
    fn extrapolation_within_the_spread_is_not_decided() {
        let tallies = pair((3, 4), &[(4, 4), (1, 4), (4, 4), (1, 4)], (2, 4));
        let e = Effect::measure(&tallies[0], &tallies[1], 0..8, 8..16).unwrap();
        assert!((e.kept_difference - 0.125 / 0.75).abs() < 1e-12, "{e:?}");
        assert!(
            (e.standard_error - (4.0 / 3.0 * 4.0 * 0.125f64.powi(2)).sqrt()).abs() < 1e-12,
            "{e:?}"
        );
        assert_eq!(e.sequences, 4);
        assert!(!e.decided());
        let r = rotary_against_absolute(&tallies);
        assert!(
            r.verdict.starts_with("Not decided: past the trained length rotary keeps 83% of its accuracy (75.0% → 62.5%), absolute keeps 67%"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict.contains("the difference, +16.7 ± 28.9 points over 4 sequences, lies within 2 standard errors of zero"),
            "{}",
            r.verdict
        );
        // A clear win: rotary 3, 3, 3 and 2 of 4 past T (68.75%) against 2 of 4: +25.0 points,
        // SE 8.3.
        let tallies = pair((3, 4), &[(3, 4), (3, 4), (3, 4), (2, 4)], (2, 4));
        let r = rotary_against_absolute(&tallies);
        assert!(r.verdict.starts_with("Borne out here"), "{}", r.verdict);
        // A clear loss: absolute ahead, −58.3 points, SE 8.3.
        let tallies = pair((3, 4), &[(1, 4), (1, 4), (1, 4), (2, 4)], (3, 4));
        let r = rotary_against_absolute(&tallies);
        assert!(r.verdict.starts_with("Not borne out here"), "{}", r.verdict);
    }
}
