//! Each kind of question posed against what is on screen: one function per `Question`, each
//! giving the choices, the right one, why it is right, and how clearly the numbers decide it;
//! and the readings they share (a query's row, a head, the keys' mask, the keys as choices).

use super::{lead, Margin, Posed, Query, DECIDED_LEAD};
use crate::explorer::figures::{heads_of, query_key_tokens, side, Selection};
use engine::config::AttentionScaling;
use engine::experiments::heads::{inspection_roles, RELATIONS, ROLE_SHARE};
use engine::experiments::induction::{head_scores, CLEAR_SCORE};
use engine::inspect::Inspection;
use engine::repeat::Copies;
use protocol::claims::head_label;
use protocol::stage::sqrt_text;
use protocol::Curves;

/// `Question::TopKey`: the key `query`'s row gives the largest weight (or raw score), against
/// the largest key of another choice.
pub(super) fn top_key(
    ins: &Inspection,
    sel: Selection,
    query: Query,
    scores: bool,
) -> Result<Posed, String> {
    let (rows, keys) = query_key_tokens(ins, sel).ok_or("This model has no such attention.")?;
    let row = query_row(rows, query)?;
    let head = head(ins, sel)?;
    let m = if scores { &head.scores } else { &head.weights };
    let key_mask = key_mask(ins, sel);
    let values = m.row(row);
    let best = argmax(values).ok_or("The row is empty.")?;
    let (choices, index_of) = token_choices(keys, &key_mask);
    if index_of.len() != values.len() {
        return Err("This model has no such row.".into());
    }
    // The runner-up is the largest key of another choice (the [PAD] keys are one).
    let runner_up = (0..values.len())
        .filter(|&j| index_of[j] != index_of[best])
        .max_by(|&a, &b| values[a].total_cmp(&values[b]));
    // Raw scores have either sign, so no ratio of theirs means anything. Softmax
    // is monotone in the score, so a score's lead is the lead of the weights the
    // two keys get (the engine's, from the same row): e^(Δs/√d_k) when nothing but
    // the scale and the mask stands between scores and weights.
    let weights = head.weights.row(row);
    let ratio = runner_up.map_or(f32::INFINITY, |r| {
        lead(
            weights.get(best).copied().unwrap_or(0.0),
            weights.get(r).copied().unwrap_or(0.0),
        )
    });
    let (what, of) = if scores {
        (
            "a raw score of",
            "the top score's weight leads the runner-up's by",
        )
    } else {
        ("a weight of", "the top weight leads the runner-up by")
    };
    Ok(Posed {
        prompt: None,
        margin: Margin::Lead { ratio, of },
        answer: index_of[best],
        why: format!(
            "{} gives {} {what} {:.3}, the largest of its row (layer {}, head {}).",
            rows[row],
            choices[index_of[best]],
            values[best],
            sel.layer + 1,
            sel.head + 1
        ),
        choices,
    })
}

/// `Question::TokenCount`: the tokens the mask lets the model read.
pub(super) fn token_count(ins: &Inspection) -> Result<Posed, String> {
    let n = ins.attention_mask.iter().filter(|&&m| m != 0).count();
    let choices: Vec<usize> = (n.saturating_sub(2).max(1)..=n + 2).collect();
    numbers(
        &choices,
        n,
        format!("{n} tokens: {}.", ins.tokens[..n].join(" ")),
    )
}

/// `Question::HeadSize`: d_k, the width of the shown head's query rows.
pub(super) fn head_size(ins: &Inspection, sel: Selection) -> Result<Posed, String> {
    let d = head(ins, sel)?.q.cols;
    let choices = [d / 2, d, d * 2, d * 4]
        .into_iter()
        .filter(|&x| x > 0)
        .collect::<Vec<_>>();
    numbers(
        &choices,
        d,
        format!(
            "d_k = hidden size ÷ heads = {d}: each of this head's Q, K and V rows has {d} numbers."
        ),
    )
}

/// `Question::SqrtDk`: what this model divides its scores by (√d_k, or 1 when its Scaling is
/// "None").
pub(super) fn sqrt_dk(ins: &Inspection, sel: Selection) -> Result<Posed, String> {
    let d = head(ins, sel)?.q.cols;
    let options = [d / 4, d, d * 4].into_iter().filter(|&x| x > 0);
    let mut choices: Vec<String> = options.clone().map(sqrt_text).collect();
    match ins.scaling {
        AttentionScaling::InverseSqrtHeadSize => Ok(Posed {
            prompt: None,
            margin: Margin::Exact,
            answer: options.clone().position(|x| x == d).unwrap_or(0),
            choices,
            why: format!(
                "d_k = {d}, so every score is divided by √{d} = {}.",
                sqrt_text(d)
            ),
        }),
        // The model at hand divides by what its Scaling says, not by what the text
        // teaches: one built with Scaling "None" divides by 1.
        AttentionScaling::None => {
            choices.insert(0, "1".to_string());
            Ok(Posed {
                prompt: None,
                choices,
                answer: 0,
                margin: Margin::Exact,
                why: format!(
                    "This model was built with Scaling \"None\": its scores are divided by 1, not by √{d} = {}, so they keep their full spread.",
                    sqrt_text(d)
                ),
            })
        }
    }
}

/// `Question::PadWeight`: exactly 0 when the mask hides the [PAD] keys; otherwise whether a
/// [PAD] key or a real one gets the larger share.
pub(super) fn pad_weight(ins: &Inspection, sel: Selection) -> Result<Posed, String> {
    let head = head(ins, sel)?;
    let row = query_row(&ins.tokens, Query::Mask)?;
    let pads: Vec<usize> = (0..ins.tokens.len())
        .filter(|&j| ins.attention_mask[j] == 0)
        .collect();
    if pads.is_empty() {
        return Err("No [PAD] keys: set Pad to above the number of tokens.".into());
    }
    let w = head.weights.row(row);
    let largest_pad = pads
        .iter()
        .filter_map(|&j| w.get(j).copied())
        .fold(0.0f32, f32::max);
    let best = argmax(w).ok_or("The row is empty.")?;
    let answer = if largest_pad == 0.0 {
        0
    } else if ins.attention_mask[best] == 0 {
        2
    } else {
        1
    };
    let largest_real = (0..w.len())
        .filter(|&j| ins.attention_mask.get(j) != Some(&0))
        .map(|j| w[j])
        .fold(0.0f32, f32::max);
    let margin = match answer {
        // exp(−∞) = 0: the mask decides it, not the model.
        0 => Margin::Exact,
        // Whether a [PAD] key or a real one gets the largest share.
        2 => Margin::Lead {
            ratio: lead(largest_pad, largest_real),
            of: "the top [PAD] weight leads the top real key's by",
        },
        _ => Margin::Lead {
            ratio: lead(largest_real, largest_pad),
            of: "the top real key's weight leads the top [PAD] weight by",
        },
    };
    let why = match answer {
        0 => "Exactly 0: the padding mask adds −∞ at the [PAD] keys, and exp(−∞) = 0.".to_string(),
        _ => format!(
            "With this mask nothing hides the [PAD] keys: the largest gets {largest_pad:.3}."
        ),
    };
    Ok(Posed {
        prompt: None,
        choices: vec![
            "Exactly 0".into(),
            "A small share".into(),
            "The largest share".into(),
        ],
        answer,
        why,
        margin,
    })
}

/// `Question::RoleHead`: of every layer and relation, the one whose top head leads the
/// layer's runner-up most clearly; the answer is that head.
pub(super) fn role_head(ins: &Inspection, sel: Selection) -> Result<Posed, String> {
    let text = side(ins, sel.part).ok_or("This model has no such attention.")?;
    // Each layer's heads' shares of each relation, as the Heads claim measures them, on the
    // Sentence's real tokens.
    let shares = inspection_roles(text).map_err(|e| e.to_string())?;
    let per_layer = shares.first().map_or(0, Vec::len);
    if per_layer < 2 {
        return Err("This model has one head a layer: there is no other head to compare.".into());
    }
    // A role is most of a head's attention (the claim's ROLE_SHARE, half of it): the
    // runner-up counts as at least ROLE_SHARE ÷ DECIDED_LEAD, so the lead reaches
    // DECIDED_LEAD only at a share of ROLE_SHARE or more.
    let floor = (ROLE_SHARE / f64::from(DECIDED_LEAD)) as f32;
    let candidates = shares.iter().enumerate().flat_map(|(layer, heads)| {
        (0..RELATIONS).filter_map(move |relation| {
            let of: Vec<f32> = heads.iter().map(|h| h[relation] as f32).collect();
            let best = argmax(&of)?;
            let runner_up = (0..of.len())
                .filter(|&h| h != best)
                // The first of equal ones, as `argmax` takes.
                .reduce(|a, b| if of[b] > of[a] { b } else { a })?;
            let ratio = lead(of[best], of[runner_up].max(floor));
            Some(RoleLead {
                layer,
                relation,
                best,
                runner_up,
                ratio,
                of,
            })
        })
    });
    // The clearest lead (the first of equal ones); a lead lost to NaN is none.
    let clearest = |r: &RoleLead| if r.ratio.is_nan() { -1.0 } else { r.ratio };
    let pick = candidates
        .reduce(|a, b| if clearest(&b) > clearest(&a) { b } else { a })
        .ok_or("This model has no heads.")?;
    let RoleLead {
        layer,
        relation,
        best,
        runner_up,
        ratio,
        of,
    } = pick;
    let label = |h: usize| head_label(layer * per_layer + h, per_layer);
    let words = RELATION_WORDS[relation];
    Ok(Posed {
        prompt: Some(format!(
            "Which head of layer {} looks most at {words}?",
            layer + 1
        )),
        margin: Margin::Lead {
            ratio,
            of: "the top head's share over the larger of 33% and the runner-up's (so it needs 50%) is",
        },
        choices: (0..per_layer).map(label).collect(),
        answer: best,
        why: format!(
            "{} gives {words} {} of its attention, on average over the Sentence's tokens; the runner-up of layer {}, {}, gives it {}.",
            label(best),
            percent(of[best]),
            layer + 1,
            label(runner_up),
            percent(of[runner_up])
        ),
    })
}

/// The relations of `engine::experiments::heads::ROLES` (below `RELATIONS`), in its order, as a
/// question names them: "looks most at …".
pub(super) const RELATION_WORDS: [&str; RELATIONS] = [
    "the token itself",
    "the previous token",
    "the next token",
    "[CLS]",
    "[SEP]",
];

/// One layer's heads' shares of one relation, with the top head and its lead over the
/// runner-up.
struct RoleLead {
    layer: usize,
    relation: usize,
    best: usize,
    runner_up: usize,
    ratio: f32,
    /// Each head's share of the relation.
    of: Vec<f32>,
}

/// 0.634 as "63%".
fn percent(share: f32) -> String {
    format!("{:.0}%", share * 100.0)
}

/// `Question::NormMean`: which band (about 0, about 1, neither) the mean of the [MASK] row after
/// the first Add & Norm falls in.
pub(super) fn norm_mean(ins: &Inspection, sel: Selection) -> Result<Posed, String> {
    let layer = ins
        .trace
        .layers
        .get(sel.layer)
        .ok_or("This model has no such layer.")?;
    let row = query_row(&ins.tokens, Query::Mask)?;
    let values = layer.attention_norm.row(row);
    let mean = values.iter().sum::<f32>() / values.len().max(1) as f32;
    let (answer, margin) = if mean.abs() < MEAN_BAND {
        (0, inside_band(mean.abs()))
    } else if (mean - 1.0).abs() < MEAN_BAND {
        (1, inside_band((mean - 1.0).abs()))
    } else {
        let nearest = mean.abs().min((mean - 1.0).abs());
        (
            2,
            Margin::Lead {
                ratio: lead(nearest, MEAN_BAND),
                of: "the mean is outside both bands (±0.25) by",
            },
        )
    };
    Ok(Posed {
        prompt: None,
        margin,
        choices: vec!["About 0".into(), "About 1".into(), "Far from both".into()],
        answer,
        why: if answer == 0 {
            format!("The mean is {mean:.3}: LayerNorm subtracts the row's mean, and the learned β shifts it only a little.")
        } else {
            format!("The mean is {mean:.3}: LayerNorm subtracted the row's mean, and the learned γ and β have moved it this far.")
        },
    })
}

/// `Question::TopPrediction`: the word the MLM head ranks first at the first [MASK].
pub(super) fn top_prediction(ins: &Inspection) -> Result<Posed, String> {
    let p = ins.mask_predictions.first().ok_or(
        "No [MASK] prediction: this model needs its MLM head and a [MASK] in the Sentence.",
    )?;
    let top = p.top.first().ok_or("No candidates.")?;
    let mut choices: Vec<String> = p.top.iter().map(|c| c.token.clone()).collect();
    choices.sort();
    choices.dedup();
    let answer = choices.iter().position(|c| *c == top.token).unwrap_or(0);
    let ratio = p.top.get(1).map_or(f32::INFINITY, |second| {
        lead(top.probability, second.probability)
    });
    Ok(Posed {
        prompt: None,
        margin: Margin::Lead {
            ratio,
            of: "the first word's probability leads the second's by",
        },
        choices,
        answer,
        why: format!(
            "The MLM head gives \"{}\" p = {:.3} at [MASK], the most of any word.",
            top.token, top.probability
        ),
    })
}

/// `Question::LossFell`: the smoothed loss now against the curve's first point.
pub(super) fn loss_fell(curves: &Curves) -> Result<Posed, String> {
    let points = curves.points();
    if points.len() < 10 {
        return Err("Press Play and let it train a little first.".into());
    }
    let first = points[0].loss;
    let now = curves.smoothed().last().map_or(first, |p| p.loss);
    let lower = now < first;
    // A loss is ≥ 0, so its fall is a ratio like the other margins.
    let margin = if lower {
        Margin::Lead {
            ratio: lead(first, now),
            of: "the first loss is above the loss now by",
        }
    } else {
        Margin::Lead {
            ratio: lead(now, first),
            of: "the loss now is above the first by",
        }
    };
    Ok(Posed {
        prompt: None,
        margin,
        choices: vec!["Lower".into(), "Not lower".into()],
        answer: if lower { 0 } else { 1 },
        why: format!(
            "The loss was {first:.3} at step {} and is {now:.3} now (smoothed).",
            points[0].step
        ),
    })
}

/// `Question::VisibleKeys`: the keys row `row` gives a weight above 0.
pub(super) fn visible_keys(ins: &Inspection, sel: Selection, row: usize) -> Result<Posed, String> {
    let head = head(ins, sel)?;
    if row >= head.weights.rows {
        return Err(format!("The text needs at least {} tokens.", row + 1));
    }
    let n = head.weights.row(row).iter().filter(|&&w| w > 0.0).count();
    let choices: Vec<usize> = (1..=head.weights.cols.min(10).max(n)).collect();
    numbers(
        &choices,
        n,
        format!(
            "Row {} gives {n} keys a weight above 0; the mask sets the others to exactly 0.",
            row + 1
        ),
    )
}

/// `Question::InductionHead`: the head with the largest induction score on a Repeat sentence,
/// among the heads clearly below it.
pub(super) fn induction_head(ins: &Inspection) -> Result<Posed, String> {
    let copies = Copies::of(&ins.tokens).ok_or(
        "Type a Repeat sentence: a segment of symbols, then the same again (Use a Repeat example).",
    )?;
    let per_layer = ins.trace.layers.first().map_or(0, |l| l.heads.len());
    let scores: Vec<f32> = ins
        .trace
        .layers
        .iter()
        .flat_map(|l| &l.heads)
        .map(|h| head_scores(&h.weights, copies).induction as f32)
        .collect();
    let best = argmax(&scores).ok_or("The model has no heads.")?;
    let label = |k: usize| head_label(k, per_layer);
    // Several heads often learn to copy together. Any of them would be a right
    // answer, so the choices are the top head and the heads clearly below it
    // (1/DECIDED_LEAD of its score or less); the heads in between are not offered.
    let clearly_below = |k: usize| scores[k] * DECIDED_LEAD <= scores[best];
    let offered: Vec<usize> = (0..scores.len())
        .filter(|&k| k == best || clearly_below(k))
        .collect();
    // No head clearly below: every head is offered, and the top one races them.
    let offered = if offered.len() < 2 {
        (0..scores.len()).collect()
    } else {
        offered
    };
    let also: Vec<usize> = (0..scores.len()).filter(|k| !offered.contains(k)).collect();
    let runner_up = offered
        .iter()
        .filter(|&&k| k != best)
        .map(|&k| scores[k])
        .fold(0.0f32, f32::max);
    // An induction head must also give the token to copy a clear share (the claim's
    // CLEAR_SCORE, half its attention): the runner-up counts as at least
    // CLEAR_SCORE ÷ DECIDED_LEAD, so the lead reaches DECIDED_LEAD only at a score
    // of CLEAR_SCORE or more.
    let floor = CLEAR_SCORE as f32 / DECIDED_LEAD;
    let others = if also.is_empty() {
        String::new()
    } else {
        let (verb, they) = if also.len() == 1 {
            ("attends", "it is")
        } else {
            ("attend", "they are")
        };
        format!(
            " {} {verb} there too, within {DECIDED_LEAD}× of it, so {they} not among the choices.",
            also.iter()
                .map(|&k| format!("{} ({:.2})", label(k), scores[k]))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Ok(Posed {
        prompt: None,
        margin: Margin::Lead {
            ratio: lead(scores[best], runner_up.max(floor)),
            of: "the top induction score over the larger of 0.33 and the other choices' (so it needs 0.5) is",
        },
        choices: offered.iter().map(|&k| label(k)).collect(),
        answer: offered.iter().position(|&k| k == best).unwrap_or(0),
        why: format!(
            "{} puts {:.2} of its attention, over the second copy's tokens, on the token after the earlier occurrence of the current one (its induction score); the highest of the other choices, {:.2}.{others}",
            label(best),
            scores[best],
            runner_up
        ),
    })
}
fn query_row(rows: &[String], q: Query) -> Result<usize, String> {
    let row = match q {
        Query::Mask => rows
            .iter()
            .position(|t| t == "[MASK]")
            .ok_or("The Sentence has no [MASK]: put one back to ask this.")?,
        Query::Cls => 0,
        Query::Row(i) => i,
    };
    if row < rows.len() {
        Ok(row)
    } else {
        Err(format!("The text needs at least {} tokens.", row + 1))
    }
}

fn head(ins: &Inspection, sel: Selection) -> Result<&engine::HeadTrace, String> {
    side(ins, sel.part)
        .and_then(|s| s.trace.layers.get(sel.layer))
        .and_then(|l| heads_of(l, sel.part).get(sel.head))
        .ok_or_else(|| "This model has no such head.".to_string())
}

/// The keys' padding mask (1 = real) of the selected attention: the source's for cross.
fn key_mask(ins: &Inspection, sel: Selection) -> Vec<u8> {
    match sel.part {
        protocol::view::Part::Cross => ins
            .source
            .as_deref()
            .map(|s| s.attention_mask.clone())
            .unwrap_or_default(),
        _ => side(ins, sel.part)
            .map(|s| s.attention_mask.clone())
            .unwrap_or_default(),
    }
}

/// One choice per real key ("the (1)" when a word comes twice) and one "[PAD]" for all padding;
/// with the choice of each key.
pub(super) fn token_choices(keys: &[String], key_mask: &[u8]) -> (Vec<String>, Vec<usize>) {
    let mut choices = Vec::new();
    let mut index_of = Vec::with_capacity(keys.len());
    let mut pad = None;
    for (j, token) in keys.iter().enumerate() {
        if key_mask.get(j) == Some(&0) {
            let at = *pad.get_or_insert_with(|| {
                choices.push("[PAD]".to_string());
                choices.len() - 1
            });
            index_of.push(at);
            continue;
        }
        let repeated = keys
            .iter()
            .enumerate()
            .filter(|(i, t)| *t == token && key_mask.get(*i) != Some(&0))
            .count()
            > 1;
        choices.push(if repeated {
            format!("{token} ({j})")
        } else {
            token.clone()
        });
        index_of.push(choices.len() - 1);
    }
    (choices, index_of)
}

/// A question whose answer is a count or a size: arithmetic on the text, the model's shape or
/// the mask, decided by construction.
fn numbers(choices: &[usize], answer: usize, why: String) -> Result<Posed, String> {
    Ok(Posed {
        prompt: None,
        margin: Margin::Exact,
        choices: choices.iter().map(usize::to_string).collect(),
        answer: choices
            .iter()
            .position(|&c| c == answer)
            .ok_or("The answer is not among the choices.")?,
        why,
    })
}

/// The half-width of the Add & Norm question's bands "About 0" and "About 1".
const MEAN_BAND: f32 = 0.25;

/// How well inside its band a mean `distance` from the band's centre is: the half-width over
/// that distance, so at `DECIDED_LEAD` the mean is within 2/3 of the half-width.
fn inside_band(distance: f32) -> Margin {
    Margin::Lead {
        ratio: lead(MEAN_BAND, distance),
        of: "the mean is inside its band (±0.25) by",
    }
}

/// The index of the largest value (the first, on a tie).
pub(super) fn argmax(values: &[f32]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, v) in values.iter().enumerate() {
        if best.is_none_or(|b| *v > values[b]) {
            best = Some(i);
        }
    }
    best
}
