//! "Heads": each head's roles, its ablation, and how much the heads differ, against a fresh
//! model of the same seed.

use super::{About, Axes, Claim, ClaimHeatmap, ClaimResult, Mark, Plot};
use engine::experiments::heads::{HeadStats, ROLES};
use engine::experiments::Series;
use engine::Matrix;

pub struct Heads;

impl About for Heads {
    fn title(&self) -> &'static str {
        "Heads"
    }

    fn slug(&self) -> &'static str {
        "heads"
    }

    fn quote(&self) -> &'static str {
        "Multiple heads \"focus on different relationship types simultaneously. One head might capture syntactic patterns while another identifies semantic similarities\"."
    }

    fn method(&self) -> String {
        format!(
            "Over the corpus's sentences as training reads them: each head's share of attention on itself, the previous and next token, [CLS], [SEP] and the rest, and its mean row entropy (Clark et al. 2019); the loss on a fixed evaluation batch with each head's context set to zero, minus the loss with every head (Michel et al. 2019); the mean pairwise Jensen–Shannon distance between the heads' weight rows, against a fresh model of the same seed. Measured again while the model trains (at most once every {} s, and only on Pause and Step once a measurement takes over {} ms, as a large model's does).",
            super::REMEASURE_MS / 1000.0,
            super::REMEASURE_PLAYING_MAX_MS
        )
    }

    fn measured_again_while_training(&self) -> bool {
        true
    }
}

/// "L1 H1" for head `k` = l·H + h of a model with `heads` heads a layer.
pub fn head_label(k: usize, heads: usize) -> String {
    let heads = heads.max(1);
    format!("L{} H{}", k / heads + 1, k % heads + 1)
}

/// What the Heads claim measured: the model now and a fresh one of the same seed on the same
/// sentences, and the ablation of each head now.
pub struct HeadsMeasured<'a> {
    pub now: &'a HeadStats,
    pub fresh: &'a HeadStats,
    pub seed: u64,
    pub step: u64,
    /// "MLM loss", or a decoder's "next-token loss".
    pub loss_name: &'a str,
    /// The loss with every head, on the evaluation batch of `evaluation_rows` rows.
    pub base_loss: f64,
    pub evaluation_rows: usize,
    /// Each head's loss without it minus `base_loss` (l·H + h).
    pub ablation: &'a [f64],
    /// Sentences the roles and distances were measured over.
    pub sentences: usize,
}

impl Heads {
    /// The heads' roles as a heatmap; their ablation and distance to one another by head
    /// on the chart; whether training made them differ, in the verdict.
    pub fn result(m: &HeadsMeasured) -> ClaimResult {
        let (now, fresh) = (m.now, m.fresh);
        let heads = now.heads.max(1);
        let n = now.roles.len();
        let label = |k: usize| head_label(k, heads);
        let x: Vec<f64> = (1..=n).map(|k| k as f64).collect();
        let percent = |v: f64| format!("{:.0}%", v * 100.0);
        let signed = |v: f64| format!("{}{:.3}", if v < 0.0 { "−" } else { "+" }, v.abs());
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let by = |v: &[f64], largest: bool| {
            let better = |a: f64, b: f64| if largest { a > b } else { a < b };
            (0..v.len()).fold(None, |best: Option<usize>, k| match best {
                Some(b) if !better(v[k], v[b]) => Some(b),
                _ => Some(k),
            })
        };
        // Each role but "rest": the head that gives it the largest share.
        let specialists: Vec<(String, String)> = (0..ROLES.len() - 1)
            .filter_map(|r| {
                let shares: Vec<f64> = now.roles.iter().map(|s| s[r]).collect();
                by(&shares, true).map(|k| {
                    (
                        format!("Most on {}", ROLES[r]),
                        format!("{} ({})", label(k), percent(shares[k])),
                    )
                })
            })
            .collect();
        let mut numbers = vec![
            (
                "Head diversity (mean pairwise JS distance)".to_string(),
                format!(
                    "{:.3} fresh (seed {}) → {:.3} at step {}",
                    fresh.mean_distance, m.seed, now.mean_distance, m.step
                ),
            ),
            (
                "Mean row entropy".to_string(),
                format!(
                    "{:.2} fresh → {:.2} nats now",
                    mean(&fresh.entropy),
                    mean(&now.entropy)
                ),
            ),
        ];
        numbers.extend(specialists.iter().cloned());
        numbers.push((
            format!("{} with every head", m.loss_name),
            format!("{:.3} ({} rows)", m.base_loss, m.evaluation_rows),
        ));
        let most = by(m.ablation, true);
        if let (Some(most), Some(least)) = (most, by(m.ablation, false)) {
            numbers.push((
                "Most needed head (ablation)".into(),
                format!("{}: {}", label(most), signed(m.ablation[most])),
            ));
            numbers.push((
                "Least needed head".into(),
                format!("{}: {}", label(least), signed(m.ablation[least])),
            ));
        }
        numbers.push((
            "Measured over".into(),
            format!("{} sentences, {} query rows", m.sentences, now.rows),
        ));
        let (d0, d1) = (fresh.mean_distance, now.mean_distance);
        let distances = format!(
            "their mean pairwise JS distance went from {d0:.3} (a fresh model, same seed) to {d1:.3}"
        );
        // The most specialised head: the largest share any head gives one role but "rest".
        let highlight = (0..n)
            .flat_map(|k| (0..ROLES.len() - 1).map(move |r| (k, r)))
            .max_by(|&(a, r), &(b, q)| now.roles[a][r].total_cmp(&now.roles[b][q]))
            .map(|(k, r)| {
                format!(
                    "{} now puts {} of its attention on {}",
                    label(k),
                    percent(now.roles[k][r]),
                    ROLES[r]
                )
            })
            .unwrap_or_default();
        let needed = most
            .map(|k| {
                format!(
                    "; without {} the {} rises by {:.3}",
                    label(k),
                    m.loss_name,
                    m.ablation[k]
                )
            })
            .unwrap_or_default();
        let verdict = if m.step == 0 {
            format!("Not yet measurable: the model has not trained, so its heads are as initialised ({distances}). Press Play: this card is measured again as it trains.")
        } else if d1 > d0 + 0.05 && d1 > 1.25 * d0 {
            format!("Borne out: training made the heads differ: after {} steps {distances}; {highlight}{needed}.", m.step)
        } else if d1 < d0 - 0.05 {
            format!(
                "Not borne out: training made the heads more alike: after {} steps {distances}.",
                m.step
            )
        } else {
            format!("Not borne out (yet): after {} steps the heads differ about as much as fresh ones: {distances}.", m.step)
        };
        let marks: Vec<Mark> = (1..now.layers)
            .map(|l| Mark {
                x: (l * heads) as f64 + 0.5,
                label: format!("layer {}", l + 1),
            })
            .collect();
        let values = Matrix {
            rows: n,
            cols: ROLES.len(),
            data: now
                .roles
                .iter()
                .flat_map(|r| r.iter().map(|&v| v as f32))
                .collect(),
        };
        let by_head = |caption: String, y_label: &str, series: Vec<Series>| Plot {
            caption,
            x_label: "head (L1 H1 = 1, L1 H2 = 2, …)".into(),
            y_label: y_label.into(),
            axes: Axes::Linear,
            series,
            marks: marks.clone(),
        };
        ClaimResult {
            claim: Claim::Heads,
            plots: vec![
                by_head(
                    format!(
                        "Ablation: how much the {} rises when each head's context is set to zero",
                        m.loss_name
                    ),
                    "Δ loss",
                    vec![Series {
                        name: format!("Ablation: Δ {}", m.loss_name),
                        x: x.clone(),
                        y: m.ablation.to_vec(),
                    }],
                ),
                by_head(
                    "Diversity: each head's mean JS distance to the other heads, now and in a fresh model of the same seed; and how evenly it spreads its attention (entropy ÷ ln keys: 1 evenly, 0 on one key)".into(),
                    "JS distance · spread",
                    vec![
                        Series {
                            name: "JS distance to the others, now".into(),
                            x: x.clone(),
                            y: now.distance_to_others.clone(),
                        },
                        Series {
                            name: "JS distance to the others, fresh".into(),
                            x: x.clone(),
                            y: fresh.distance_to_others.clone(),
                        },
                        Series {
                            name: "Spread (entropy ÷ ln keys), now".into(),
                            x,
                            y: now.spread.clone(),
                        },
                    ],
                ),
            ],
            numbers,
            verdict,
            heatmap: Some(ClaimHeatmap {
                caption: format!(
                    "Head roles: each head's share of attention on each kind of key, mean over {} query rows (step {})",
                    now.rows, m.step
                ),
                row_labels: (0..n).map(label).collect(),
                col_labels: ROLES.iter().map(|r| r.to_string()).collect(),
                values,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(distance: f64, roles: [f64; 6]) -> HeadStats {
        HeadStats {
            layers: 2,
            heads: 2,
            roles: vec![roles; 4],
            entropy: vec![1.5; 4],
            spread: vec![0.7; 4],
            distance_to_others: vec![distance; 4],
            mean_distance: distance,
            rows: 40,
        }
    }

    #[test]
    fn heads_show_roles_as_a_table_and_say_whether_training_made_them_differ() {
        let fresh = stats(0.05, [0.2, 0.2, 0.2, 0.1, 0.1, 0.2]);
        let mut now = stats(0.4, [0.1, 0.1, 0.1, 0.1, 0.1, 0.5]);
        now.roles[1] = [0.05, 0.8, 0.05, 0.0, 0.0, 0.1];
        let ablation = [0.01, 0.3, -0.002, 0.05];
        let measured = |now, step| HeadsMeasured {
            now,
            fresh: &fresh,
            seed: 7,
            step,
            loss_name: "MLM loss",
            base_loss: 4.2,
            evaluation_rows: 32,
            ablation: &ablation,
            sentences: 3,
        };
        let r = Heads::result(&measured(&now, 2000));
        assert_eq!(Claim::Heads.title(), "Heads");
        let h = r.heatmap.as_ref().unwrap();
        assert!(h.caption.starts_with("Head roles"));
        assert_eq!(h.row_labels, ["L1 H1", "L1 H2", "L2 H1", "L2 H2"]);
        assert_eq!(h.col_labels, ROLES);
        assert_eq!((h.values.rows, h.values.cols), (4, 6));
        assert_eq!(h.values.get(1, 1), 0.8);
        assert_eq!(r.plots.len(), 2);
        let series = &r.plots[0].series;
        assert_eq!(series[0].name, "Ablation: Δ MLM loss");
        assert_eq!(series[0].y, ablation);
        assert_eq!(series[0].x, [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(r.plots[1].series.len(), 3);
        assert_eq!(r.plots[1].series[2].y, [0.7; 4]);
        assert_eq!(r.plots[1].marks.len(), 1, "one line between the two layers");
        let number = |what: &str| r.numbers.iter().find(|(k, _)| k == what).unwrap().1.clone();
        assert_eq!(
            number("Head diversity (mean pairwise JS distance)"),
            "0.050 fresh (seed 7) → 0.400 at step 2000"
        );
        assert_eq!(number("Most on previous"), "L1 H2 (80%)");
        assert_eq!(number("Most needed head (ablation)"), "L1 H2: +0.300");
        assert_eq!(number("Least needed head"), "L2 H1: −0.002");
        assert!(r.verdict.starts_with("Borne out"), "{}", r.verdict);
        assert!(r.verdict.contains("0.050") && r.verdict.contains("0.400"));
        assert!(r
            .verdict
            .contains("L1 H2 now puts 80% of its attention on previous"));
        // Untrained, or no more different than fresh: said so.
        let r0 = Heads::result(&measured(&fresh, 0));
        assert!(r0.verdict.starts_with("Not yet"), "{}", r0.verdict);
        let same = stats(0.06, [0.2; 6]);
        let r1 = Heads::result(&measured(&same, 100));
        assert!(
            r1.verdict.starts_with("Not borne out (yet)"),
            "{}",
            r1.verdict
        );
        // What the page reads back: the table through the wire and JSON.
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<ClaimResult>(&json).unwrap(), r);
    }
}
