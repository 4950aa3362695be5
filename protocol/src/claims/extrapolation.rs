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
        "Train two models at length T whose Positions differ (Compare: any two of Absolute, Rotary and ALiBi), then measure MLM accuracy by position on sequences of length 2T.".into()
    }
}

/// What the length-extrapolation claim measured of one model: its kind of positions and its
/// (correct, counted) MLM predictions at each position it could read.
pub struct ByPosition<'a> {
    pub kind: PositionEmbeddingType,
    pub tally: &'a [Tally],
    /// Learned positions (absolute) or None (rotary, ALiBi: any position).
    pub max_positions: Option<usize>,
}

/// Accuracy over `tally[range]`, None when nothing was counted there.
fn accuracy(tally: &[Tally], range: std::ops::Range<usize>) -> Option<f64> {
    let (hits, n) = tally
        .get(range.start.min(tally.len())..range.end.min(tally.len()))?
        .iter()
        .fold((0, 0), |(h, n), &(dh, dn)| (h + dh, n + dn));
    (n > 0).then(|| hits as f64 / n as f64)
}

impl Extrapolation {
    /// Claim 5: MLM accuracy by position of two models with different kinds of positions
    /// (absolute, rotary, ALiBi), both trained at length `trained_len` (T) for `steps` steps, on
    /// sequences of length 2T. The series, numbers and verdict name the kinds compared, absolute
    /// first, then rotary, then ALiBi. The claim is RoPE's: with a rotary model in the pair, it
    /// is borne out when rotary keeps more of its accuracy past T than the other; without one
    /// (absolute and ALiBi), ALiBi stands in RoPE's place, and the verdict says so.
    pub fn result(trained_len: usize, steps: u64, a: ByPosition, b: ByPosition) -> ClaimResult {
        let order = |m: &ByPosition| PositionEmbeddingType::ALL.iter().position(|&k| k == m.kind);
        let models = if order(&a) <= order(&b) {
            [a, b]
        } else {
            [b, a]
        };
        let t = trained_len;
        let len = models[0].tally.len().max(models[1].tally.len());
        // Positions per point: about 32 points across 2T.
        let bin = (len / 32).max(1);
        let series_of = |m: &ByPosition| {
            let (name, tally) = (m.kind.label(), m.tally);
            let (mut x, mut y) = (Vec::new(), Vec::new());
            // Bins within T and past it apart: no point mixes trained and untrained positions.
            let (within, past) = (0..t.min(tally.len()), t.min(tally.len())..tally.len());
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
        let (s_kept, o_kept) = (
            kept(within(subject), past_shared(subject)),
            kept(within(other), past_shared(other)),
        );
        let change = |w: Option<f64>, p: Option<f64>| format!("{} → {}", percent(w), percent(p));
        let shared = if p < len {
            format!(
                " over positions {t}…{}; absolute cannot read past position {p} at all",
                p - 1
            )
        } else {
            String::new()
        };
        let verdict = match (s_kept, o_kept) {
            (Some(s), Some(o)) => format!(
                "{stand_in}{}: past the trained length {s_name} keeps {:.0}% of its accuracy ({}), {o_name} {:.0}% ({}){shared}.",
                if s > o { "Borne out here" } else { "Not borne out here" },
                s * 100.0,
                change(within(subject), past_shared(subject)),
                o * 100.0,
                change(within(other), past_shared(other))
            ),
            (_, None) if p <= t && kept(within(subject), past(subject)).is_some() => format!(
                "{stand_in}Borne out here: absolute positions stop at P = {p}, so that model cannot read past the trained length; {s_name} reads on and keeps {:.0}% of its accuracy ({}).",
                kept(within(subject), past(subject)).unwrap_or_default() * 100.0,
                change(within(subject), past(subject))
            ),
            _ => format!("Not measured ({s_name} against {o_name}): no maskable token past the trained length, or no right prediction within it to compare with."),
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

    #[test]
    fn extrapolation_plots_accuracy_by_position_and_says_where_absolute_stops() {
        // T = 8, 2T = 16; absolute has P = 12 learned positions.
        let rotary: Vec<Tally> = (0..16)
            .map(|p| if p < 8 { (3, 4) } else { (2, 4) })
            .collect();
        let absolute: Vec<Tally> = (0..12)
            .map(|p| if p < 8 { (3, 4) } else { (1, 4) })
            .collect();
        let r = Extrapolation::result(
            8,
            300,
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
        assert!(r.verdict.starts_with("Borne out here"), "{}", r.verdict);
        assert!(r.plots[0].caption.starts_with("Length extrapolation"));
        // Absolute better past T: said plainly.
        let good: Vec<Tally> = (0..16).map(|_| (4, 4)).collect();
        let r = Extrapolation::result(
            8,
            300,
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
        let long: Vec<Tally> = vec![(1, 2); 64];
        let r = Extrapolation::result(
            31,
            10,
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
        let keeps: Vec<Tally> = vec![(3, 4); 16];
        let drops: Vec<Tally> = (0..16)
            .map(|p| if p < 8 { (3, 4) } else { (1, 4) })
            .collect();
        let absolute: Vec<Tally> = drops[..12].to_vec();
        fn by(kind: PositionEmbeddingType, tally: &[Tally]) -> ByPosition<'_> {
            ByPosition {
                kind,
                tally,
                max_positions: (kind == PositionEmbeddingType::Absolute).then_some(12),
            }
        }
        use PositionEmbeddingType::{Absolute, Alibi, Rotary};
        // ALiBi given first: still drawn after absolute.
        let r = Extrapolation::result(8, 300, by(Alibi, &keeps), by(Absolute, &absolute));
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
        assert!(r.verdict.contains("absolute 33%"), "{}", r.verdict);
        // Rotary against ALiBi: RoPE's claim, not borne out when ALiBi keeps more.
        let r = Extrapolation::result(8, 300, by(Alibi, &keeps), by(Rotary, &drops));
        let names: Vec<&str> = r.plots[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Rotary", "ALiBi"]);
        assert_eq!(r.plots[0].marks.len(), 1, "neither stops at a P");
        assert!(
            r.verdict
                .starts_with("Not borne out here: past the trained length rotary keeps 33%"),
            "{}",
            r.verdict
        );
        assert!(r.verdict.contains("ALiBi 100%"), "{}", r.verdict);
        assert_eq!(
            number(&r, "Rotary: positions 8…15 (never trained)").as_deref(),
            Some("25.0%")
        );
    }
}
