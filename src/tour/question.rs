//! The tour's questions, posed against the live model: the choices and the right one are read
//! from the inspection on screen (and the loss curve) when asked, so a question stays true as
//! the model trains. A question is asked only once its answer is decided (`Margin`): the right
//! choice's number leads the runner-up's by `DECIDED_LEAD`, or the answer is arithmetic no
//! training changes. These functions pick and compare numbers the engine computed; they
//! compute nothing of the model.

mod kinds;

use crate::explorer::figures::Selection;
use engine::inspect::Inspection;
use protocol::Curves;

/// Which query row a question reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// The first [MASK] of the sentence.
    Mask,
    /// [CLS], row 0.
    Cls,
    /// Row i (0-based).
    Row(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    /// The key `query` gives the largest softmax weight (or, with `scores`, the largest raw
    /// score QKᵀ) in the head shown.
    TopKey { query: Query, scores: bool },
    /// How many tokens the model reads.
    TokenCount,
    /// d_k: the width of one head's query row.
    HeadSize,
    /// What every score is divided by: √d_k.
    SqrtDk,
    /// The weight the [MASK] row gives the [PAD] keys after softmax.
    PadWeight,
    /// A role a head has taken on the Sentence: of the (layer, relation) pairs, the one whose
    /// top head leads that layer's runner-up most clearly (`engine::experiments::heads`'
    /// relations: itself, the previous and next token, [CLS], [SEP]); the answer is that head.
    RoleHead,
    /// The mean of the [MASK] row after the first Add & Norm.
    NormMean,
    /// The word the MLM head ranks first at the first [MASK].
    TopPrediction,
    /// Whether the loss is now below its first value.
    LossFell,
    /// How many keys row `row` gives a weight above 0 in the head shown.
    VisibleKeys { row: usize },
    /// The head with the largest induction score on a Repeat sentence
    /// (`engine::experiments::induction`), among the heads clearly below it.
    InductionHead,
}

/// What the page shows when a question is asked.
pub struct Live<'a> {
    pub ins: &'a Inspection,
    pub selection: Selection,
    pub curves: &'a Curves,
}

/// How far the right choice must lead the runner-up before a question is asked: its number
/// (a weight, a probability, …) at least 1.5 times the runner-up's. A ratio, because the
/// numbers compared are shares of a whole that shrink as there are more keys or words: a
/// fresh tiny BERT's 16 keys get about 1/16 = 0.0625 each, and one key at 0.063 beside the
/// next at 0.06 (1.05×) is noise, not a pattern to find. At 1.5× the lead is one a learner
/// sees in the heatmap's colours and reads by hovering, and it stays through the small steps
/// training takes between two snapshots.
pub const DECIDED_LEAD: f32 = 1.5;

/// How clearly the numbers on screen pick the right choice.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Margin {
    /// The answer is arithmetic on the model's shapes, the text or the mask (a count, d_k,
    /// √d_k, a weight the mask makes exactly 0): decided by construction, whatever the model
    /// has learned.
    Exact,
    /// The right choice's number over the runner-up's (both ≥ 0): `ratio` ≥ `DECIDED_LEAD`
    /// decides; 1 is a tie. `of` names what leads, for "… leads the runner-up by 1.1×" (or, where
    /// the ratio may be below 1, "… over … is 0.2×").
    Lead { ratio: f32, of: &'static str },
}

impl Margin {
    pub fn decided(self) -> bool {
        match self {
            Margin::Exact => true,
            // NaN (a number the model lost) never decides.
            Margin::Lead { ratio, .. } => ratio >= DECIDED_LEAD,
        }
    }
}

/// `best` over `runner_up`, both ≥ 0: 1 on a tie (0 against 0 included), ∞ when the runner-up
/// is 0 and `best` is not, below 1 when the runner-up is larger.
fn lead(best: f32, runner_up: f32) -> f32 {
    if best == runner_up {
        1.0
    } else if runner_up <= 0.0 {
        f32::INFINITY
    } else {
        best / runner_up
    }
}

/// A question asked now: its choices, the right one, why it is right, and how clearly the
/// numbers decide it (the page offers the choices only when `margin.decided()`).
#[derive(Clone, Debug, PartialEq)]
pub struct Posed {
    /// The question as the numbers word it, when they choose what it asks (which layer, which
    /// relation); None: `Question::prompt`'s words.
    pub prompt: Option<String>,
    pub choices: Vec<String>,
    pub answer: usize,
    pub why: String,
    pub margin: Margin,
}

impl Question {
    pub fn prompt(self) -> String {
        match self {
            Question::TopKey { query, scores } => {
                let who = query_name(query);
                if scores {
                    format!("Which key gets the largest raw score from {who}'s query in this head?")
                } else {
                    format!("Which key does {who} attend to most in this head?")
                }
            }
            Question::TokenCount => {
                "How many tokens does the model read, [CLS] and [SEP] included?".into()
            }
            Question::HeadSize => "How many numbers are in one query row of a head (d_k)?".into(),
            Question::SqrtDk => "Every score of this model is divided by which number?".into(),
            Question::PadWeight => {
                "After softmax, what weight does [MASK] give the [PAD] keys?".into()
            }
            Question::RoleHead => "Which head of a layer looks most at one relation: itself, the previous or next token, [CLS] or [SEP]?".into(),
            Question::NormMean => "After Add & Norm, what is the mean of the [MASK] row?".into(),
            Question::TopPrediction => {
                "Which word does the model rank first for [MASK] now?".into()
            }
            Question::LossFell => "Is the training loss now lower than at the first step?".into(),
            Question::VisibleKeys { row } => format!(
                "How many keys can token {} (counting [CLS] as 1) attend to?",
                row + 1
            ),
            Question::InductionHead => "Which head is an induction head: on the second copy, it attends to the token after the earlier occurrence of the current one?".into(),
        }
    }

    /// The question against what is on screen now; Err says what the page needs first.
    pub fn pose(self, live: &Live) -> Result<Posed, String> {
        let (ins, sel) = (live.ins, live.selection);
        // These read the Sentence's own rows against its own keys: self-attention only.
        let self_only = matches!(
            self,
            Question::PadWeight | Question::RoleHead | Question::NormMean
        );
        if self_only && sel.part != protocol::view::Part::SelfAttention {
            return Err(
                "This question is about the Sentence's self-attention: choose a self-attention head."
                    .into(),
            );
        }
        match self {
            Question::TopKey { query, scores } => kinds::top_key(ins, sel, query, scores),
            Question::TokenCount => kinds::token_count(ins),
            Question::HeadSize => kinds::head_size(ins, sel),
            Question::SqrtDk => kinds::sqrt_dk(ins, sel),
            Question::PadWeight => kinds::pad_weight(ins, sel),
            Question::RoleHead => kinds::role_head(ins, sel),
            Question::NormMean => kinds::norm_mean(ins, sel),
            Question::TopPrediction => kinds::top_prediction(ins),
            Question::LossFell => kinds::loss_fell(live.curves),
            Question::VisibleKeys { row } => kinds::visible_keys(ins, sel, row),
            Question::InductionHead => kinds::induction_head(ins),
        }
    }
}

fn query_name(q: Query) -> String {
    match q {
        Query::Mask => "[MASK]".into(),
        Query::Cls => "[CLS]".into(),
        Query::Row(1) => "the target's first word".into(),
        Query::Row(i) => format!("token {}", i + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::kinds::{argmax, token_choices};
    use super::*;
    use engine::repeat::Copies;
    use protocol::stage::sqrt_text;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn a_repeated_word_is_named_by_position_and_padding_is_one_choice() {
        let keys: Vec<String> = ["[CLS]", "the", "dog", "the", "[SEP]", "[PAD]", "[PAD]"]
            .map(String::from)
            .to_vec();
        let (choices, index_of) = token_choices(&keys, &[1, 1, 1, 1, 1, 0, 0]);
        assert_eq!(
            choices,
            ["[CLS]", "the (1)", "dog", "the (3)", "[SEP]", "[PAD]"]
        );
        assert_eq!(index_of, [0, 1, 2, 3, 4, 5, 5]);
    }

    use super::super::chapters::{ModelNeed, Scene, CHAPTERS};
    use crate::explorer::figures::tests::inspection;
    use engine::MaskMode;
    use protocol::{CurvePoint, ProbeInput};

    fn scene_probe(s: Scene) -> ProbeInput {
        ProbeInput {
            text: s.text.into(),
            pair: s.pair.into(),
            target: s.target.into(),
            pad_to: s.pad_to,
            mask: s.mask,
            window: s.window,
            ..ProbeInput::default()
        }
    }

    fn pose(q: Question, ins: &Inspection, curves: &Curves) -> Posed {
        q.pose(&Live {
            ins,
            selection: Selection::default(),
            curves,
        })
        .unwrap_or_else(|e| panic!("{q:?}: {e}"))
    }

    fn answer(p: &Posed) -> &str {
        &p.choices[p.answer]
    }

    #[test]
    fn every_one_bert_chapter_asks_its_question_of_a_fresh_tiny_bert() {
        let mut falling = Curves::new();
        falling.extend((1..=40).map(|step| CurvePoint {
            step,
            loss: 10.0 - step as f32 * 0.1,
            ..CurvePoint::default()
        }));
        for (i, c) in CHAPTERS.iter().enumerate() {
            if c.scene.model == ModelNeed::Reverse {
                continue;
            }
            let ins = inspection(scene_probe(c.scene));
            let p = pose(c.question, &ins, &falling);
            // A question a learner can answer: at least two choices, none the same twice (the
            // right one is then the only one of its words).
            let distinct: std::collections::HashSet<&String> = p.choices.iter().collect();
            assert!(
                p.choices.len() >= 2 && distinct.len() == p.choices.len(),
                "chapter {}: {:?}",
                i + 1,
                p.choices
            );
            assert!(!p.why.is_empty());
        }
    }

    #[test]
    fn the_right_key_is_the_one_with_the_largest_weight() {
        let ins = inspection(ProbeInput::default());
        let none = Curves::new();
        let p = pose(
            Question::TopKey {
                query: Query::Mask,
                scores: false,
            },
            &ins,
            &none,
        );
        let row = ins.tokens.iter().position(|t| t == "[MASK]").unwrap();
        let w = ins.trace.layers[0].heads[0].weights.row(row);
        let chosen = (0..w.len())
            .find(|&j| token_choices(&ins.tokens, &ins.attention_mask).1[j] == p.answer)
            .unwrap();
        assert!(
            w.iter().all(|&x| x <= w[chosen]),
            "{} is not the largest of {w:?}",
            answer(&p)
        );
        let scores = pose(
            Question::TopKey {
                query: Query::Mask,
                scores: true,
            },
            &ins,
            &none,
        );
        assert!(scores.why.contains("raw score"));
    }

    #[test]
    fn numbers_come_from_the_model_and_the_mask() {
        let none = Curves::new();
        let base = ProbeInput::default();
        let ins = inspection(base.clone());
        assert_eq!(
            answer(&pose(Question::TokenCount, &ins, &none)),
            ins.tokens.len().to_string()
        );
        let d = engine::BertConfig::tiny(1).hidden_size
            / engine::BertConfig::tiny(1).num_attention_heads;
        assert_eq!(
            answer(&pose(Question::HeadSize, &ins, &none)),
            d.to_string()
        );
        assert_eq!(answer(&pose(Question::SqrtDk, &ins, &none)), sqrt_text(d));
        // A model built with Scaling "None" divides by 1, whatever d_k is.
        let unscaled = Inspection {
            scaling: engine::config::AttentionScaling::None,
            ..ins.clone()
        };
        assert_eq!(answer(&pose(Question::SqrtDk, &unscaled, &none)), "1");

        let padded = ProbeInput {
            pad_to: Some(20),
            ..base.clone()
        };
        assert_eq!(
            answer(&pose(
                Question::PadWeight,
                &inspection(padded.clone()),
                &none
            )),
            "Exactly 0"
        );
        let unmasked = ProbeInput {
            mask: MaskMode::None,
            ..padded
        };
        assert_ne!(
            answer(&pose(Question::PadWeight, &inspection(unmasked), &none)),
            "Exactly 0"
        );
        assert!(Question::PadWeight
            .pose(&Live {
                ins: &ins,
                selection: Selection::default(),
                curves: &none
            })
            .is_err());

        let causal = inspection(ProbeInput {
            mask: MaskMode::Causal,
            ..base.clone()
        });
        assert_eq!(
            answer(&pose(Question::VisibleKeys { row: 3 }, &causal, &none)),
            "4"
        );
        let window = inspection(ProbeInput {
            window: Some(3),
            ..base.clone()
        });
        assert_eq!(
            answer(&pose(Question::VisibleKeys { row: 3 }, &window, &none)),
            "5"
        );
        assert_eq!(
            answer(&pose(Question::VisibleKeys { row: 3 }, &ins, &none)),
            ins.tokens.len().to_string()
        );
        assert_eq!(
            answer(&pose(Question::NormMean, &ins, &none)),
            "About 0",
            "a fresh LayerNorm has β = 0"
        );
    }

    #[test]
    fn the_loss_question_waits_for_training_then_reads_the_curve() {
        let ins = inspection(ProbeInput::default());
        let mut curves = Curves::new();
        assert!(Question::LossFell
            .pose(&Live {
                ins: &ins,
                selection: Selection::default(),
                curves: &curves
            })
            .is_err());
        curves.extend((1..=40).map(|step| CurvePoint {
            step,
            loss: 5.0 + step as f32 * 0.1,
            ..CurvePoint::default()
        }));
        assert_eq!(
            answer(&pose(Question::LossFell, &ins, &curves)),
            "Not lower"
        );
    }

    /// The TopKey question of chapter 1 against `ins`.
    fn top_mask_key(ins: &Inspection) -> Posed {
        let q = Question::TopKey {
            query: Query::Mask,
            scores: false,
        };
        pose(q, ins, &Curves::new())
    }

    /// `ins` with the [MASK] row of layer 1, head 1 set to `weights` (one per key).
    fn with_mask_row(mut ins: Inspection, weights: &[f32]) -> Inspection {
        let row = ins.tokens.iter().position(|t| t == "[MASK]").unwrap();
        let m = &mut ins.trace.layers[0].heads[0].weights;
        assert_eq!(weights.len(), m.cols);
        let cols = m.cols;
        m.data[row * cols..(row + 1) * cols].copy_from_slice(weights);
        ins
    }

    #[test]
    fn a_fresh_models_noise_decides_nothing() {
        let ins = inspection(ProbeInput::default());
        let p = top_mask_key(&ins);
        assert!(
            !p.margin.decided(),
            "a fresh head's near-uniform row decided {:?}",
            p.margin
        );
        let heads = pose(Question::RoleHead, &ins, &Curves::new());
        assert!(!heads.margin.decided(), "{:?}", heads.margin);
        assert!(heads
            .prompt
            .is_some_and(|p| p.starts_with("Which head of layer ")));
    }

    #[test]
    fn a_clear_winner_decides_and_is_the_answer() {
        let ins = inspection(ProbeInput::default());
        let n = ins.tokens.len();
        // Key 2 gets 0.3, the runner-up 0.15 (2×), the rest share what is left.
        let mut w = vec![0.55 / (n - 2) as f32; n];
        w[2] = 0.3;
        w[4] = 0.15;
        let p = top_mask_key(&with_mask_row(ins.clone(), &w));
        assert!(p.margin.decided(), "{:?}", p.margin);
        assert_eq!(answer(&p), ins.tokens[2]);
        assert!(matches!(p.margin, Margin::Lead { ratio, .. } if (ratio - 2.0).abs() < 1e-4));
        // Just under the line: not decided.
        w[4] = 0.3 / DECIDED_LEAD * 1.01;
        assert!(!top_mask_key(&with_mask_row(ins, &w)).margin.decided());
    }

    #[test]
    fn a_tie_is_not_decided() {
        let ins = inspection(ProbeInput::default());
        let n = ins.tokens.len();
        let mut w = vec![0.4 / (n - 2) as f32; n];
        w[2] = 0.3;
        w[4] = 0.3;
        let p = top_mask_key(&with_mask_row(ins, &w));
        assert_eq!(
            p.margin,
            Margin::Lead {
                ratio: 1.0,
                of: "the top weight leads the runner-up by"
            }
        );
        assert!(!p.margin.decided());
        assert_eq!(lead(0.0, 0.0), 1.0, "0 against 0 is a tie");
        assert_eq!(lead(0.2, 0.0), f32::INFINITY);
        assert!(!Margin::Lead {
            ratio: lead(f32::NAN, 0.1),
            of: ""
        }
        .decided());
    }

    #[test]
    fn the_same_word_twice_is_two_choices_and_races_itself() {
        // "the" at 1 and at 9 are two choices: 0.2 against 0.19 decides nothing.
        let ins = inspection(ProbeInput::default());
        let the: Vec<usize> = (0..ins.tokens.len())
            .filter(|&j| ins.tokens[j] == "the")
            .collect();
        let mut w = vec![0.0; ins.tokens.len()];
        w[the[0]] = 0.2;
        w[the[1]] = 0.19;
        let rest = 0.61 / (w.len() - 2) as f32;
        for (j, x) in w.iter_mut().enumerate() {
            if !the[..2].contains(&j) {
                *x = rest;
            }
        }
        assert!(!top_mask_key(&with_mask_row(ins, &w)).margin.decided());
    }

    /// The Several heads chapter's Sentence, every head of every layer giving row i (a real
    /// token's) what `row(layer, head, i)` says, one weight per key.
    fn with_head_rows(row: impl Fn(usize, usize, usize, usize) -> Vec<f32>) -> Inspection {
        let chapter = CHAPTERS
            .iter()
            .find(|c| c.question == Question::RoleHead)
            .unwrap();
        let mut ins = inspection(scene_probe(chapter.scene));
        let t = ins.tokens.len();
        for (l, layer) in ins.trace.layers.iter_mut().enumerate() {
            for (h, head) in layer.heads.iter_mut().enumerate() {
                for i in 0..t {
                    let w = row(l, h, i, t);
                    assert_eq!(w.len(), t);
                    head.weights.data[i * t..(i + 1) * t].copy_from_slice(&w);
                }
            }
        }
        ins
    }

    fn uniform(t: usize) -> Vec<f32> {
        vec![1.0 / t as f32; t]
    }

    /// `on` of row i's attention on key i − 1 (where there is one), the rest spread alike.
    fn on_previous(i: usize, t: usize, on: f32) -> Vec<f32> {
        if i == 0 {
            return uniform(t);
        }
        let mut w = vec![(1.0 - on) / (t - 1) as f32; t];
        w[i - 1] = on;
        w
    }

    #[test]
    fn a_head_clearly_on_the_previous_token_is_the_answer_and_decides() {
        // Layer 1, head 3 puts 0.9 of each row on the token before it; every other head
        // weighs its keys alike.
        let ins = with_head_rows(|l, h, i, t| {
            if (l, h) == (0, 2) {
                on_previous(i, t, 0.9)
            } else {
                uniform(t)
            }
        });
        let p = pose(Question::RoleHead, &ins, &Curves::new());
        assert_eq!(
            p.prompt.as_deref(),
            Some("Which head of layer 1 looks most at the previous token?")
        );
        assert_eq!(p.choices, ["L1 H1", "L1 H2", "L1 H3", "L1 H4"]);
        assert_eq!(answer(&p), "L1 H3");
        assert!(p.margin.decided(), "{:?}", p.margin);
        // The shares, as the engine measures them on the Sentence.
        let shares = engine::experiments::heads::inspection_roles(&ins).unwrap();
        let (top, uniform_share) = (shares[0][2][1], shares[0][0][1]);
        assert!(top > 0.5, "{top}");
        let want = format!(
            "L1 H3 gives the previous token {:.0}% of its attention, on average over the Sentence's tokens; the runner-up of layer 1, L1 H1, gives it {:.0}%.",
            top * 100.0,
            uniform_share * 100.0
        );
        assert_eq!(p.why, want);
        assert!(
            matches!(p.margin, Margin::Lead { ratio, .. } if (f64::from(ratio) - top / (0.5 / 1.5)).abs() < 1e-4),
            "the runner-up counts as 1/3: {:?}",
            p.margin
        );
        // The same head in layer 2 is asked about layer 2.
        let second = with_head_rows(|l, h, i, t| {
            if (l, h) == (1, 0) {
                on_previous(i, t, 0.9)
            } else {
                uniform(t)
            }
        });
        let p = pose(Question::RoleHead, &second, &Curves::new());
        assert_eq!(
            (p.prompt.as_deref(), answer(&p)),
            (
                Some("Which head of layer 2 looks most at the previous token?"),
                "L2 H1"
            )
        );
    }

    #[test]
    fn heads_alike_or_a_lead_without_a_role_decide_nothing() {
        let ask = |ins: &Inspection| pose(Question::RoleHead, ins, &Curves::new());
        // Every head weighs its keys alike.
        let alike = ask(&with_head_rows(|_, _, _, t| uniform(t)));
        assert!(!alike.margin.decided(), "{:?}", alike.margin);
        // Every head on the previous token: a role, but no head is the one.
        let all_previous = ask(&with_head_rows(|_, _, i, t| on_previous(i, t, 0.9)));
        assert!(
            matches!(all_previous.margin, Margin::Lead { ratio, .. } if (ratio - 1.0).abs() < 1e-5),
            "{:?}",
            all_previous.margin
        );
        // One head leads the others on the previous token by far, but with a third of its
        // attention: no role yet.
        let weak = ask(&with_head_rows(|l, h, i, t| {
            if (l, h) == (0, 2) {
                on_previous(i, t, 0.3)
            } else {
                uniform(t)
            }
        }));
        assert_eq!(answer(&weak), "L1 H3");
        assert!(!weak.margin.decided(), "{:?}", weak.margin);
    }

    #[test]
    fn the_relations_words_follow_the_engines_roles() {
        use engine::experiments::heads::{role, ROLES};
        // [CLS] a b [SEP], ids 1, 5, 6, 2: from query 2, each key's role, named.
        let ids = [1, 5, 6, 2];
        let named: Vec<&str> = (0..4).map(|j| ROLES[role(&ids, 2, j, 1, 2)]).collect();
        assert_eq!(named, ["[CLS]", "previous", "self", "[SEP]"]);
        let words = super::kinds::RELATION_WORDS;
        assert_eq!(words[role(&ids, 2, 1, 1, 2)], "the previous token");
        assert_eq!(words[role(&ids, 2, 2, 1, 2)], "the token itself");
        assert_eq!(words[role(&ids, 1, 2, 1, 2)], "the next token");
        assert_eq!(words[role(&ids, 2, 0, 1, 2)], "[CLS]");
        assert_eq!(words[role(&ids, 2, 3, 1, 2)], "[SEP]");
        // The margin's words state the floor: ROLE_SHARE ÷ DECIDED_LEAD, and ROLE_SHARE.
        let share = engine::experiments::heads::ROLE_SHARE;
        assert_eq!(
            (
                format!("{:.0}%", share / f64::from(DECIDED_LEAD) * 100.0),
                format!("{:.0}%", share * 100.0)
            ),
            ("33%".to_string(), "50%".to_string())
        );
    }

    /// Chapter 13's Repeat sentence, each head giving the second copy's queries `scores[k]`
    /// on the token to copy (head k = layer k / 4, head k % 4) and the rest to themselves.
    fn with_induction_scores(scores: &[f32]) -> Inspection {
        let chapter = CHAPTERS
            .iter()
            .find(|c| c.question == Question::InductionHead)
            .unwrap();
        let mut ins = inspection(scene_probe(chapter.scene));
        let copies = Copies::of(&ins.tokens).unwrap();
        let heads = ins.trace.layers.iter_mut().flat_map(|l| &mut l.heads);
        let mut n = 0;
        for (h, &s) in heads.zip(scores) {
            let m = &mut h.weights;
            let cols = m.cols;
            for q in copies.second() {
                let (_, target) = copies.duplicate_and_induction(q);
                let row = &mut m.data[q * cols..(q + 1) * cols];
                row.fill(0.0);
                row[target] = s;
                row[q] += 1.0 - s;
            }
            n += 1;
        }
        assert_eq!(n, scores.len(), "tiny has {n} heads");
        ins
    }

    #[test]
    fn several_induction_heads_leave_one_among_heads_that_do_not_copy() {
        let scores = [0.1, 0.05, 0.1, 0.1, 0.77, 0.1, 0.62, 0.54];
        let p = pose(
            Question::InductionHead,
            &with_induction_scores(&scores),
            &Curves::new(),
        );
        // L2 H3 and L2 H4 copy too (above 0.77 ÷ 1.5): not offered, so the answer is one.
        assert_eq!(
            p.choices,
            ["L1 H1", "L1 H2", "L1 H3", "L1 H4", "L2 H1", "L2 H2"]
        );
        assert_eq!(answer(&p), "L2 H1");
        assert!(p.margin.decided(), "{:?}", p.margin);
        assert!(
            matches!(p.margin, Margin::Lead { ratio, .. } if (ratio - 0.77 / 0.33333334).abs() < 1e-3),
            "{:?}",
            p.margin
        );
        assert!(
            p.why
                .contains("L2 H3 (0.62), L2 H4 (0.54) attend there too, within 1.5× of it"),
            "{}",
            p.why
        );
    }

    #[test]
    fn an_induction_question_waits_for_a_clear_score_and_a_clear_lead() {
        let ask = |scores: &[f32]| {
            pose(
                Question::InductionHead,
                &with_induction_scores(scores),
                &Curves::new(),
            )
        };
        // A fresh model's heads: nothing to find.
        let fresh = pose(
            Question::InductionHead,
            &inspection(scene_probe(
                CHAPTERS
                    .iter()
                    .find(|c| c.question == Question::InductionHead)
                    .unwrap()
                    .scene,
            )),
            &Curves::new(),
        );
        assert!(!fresh.margin.decided(), "{:?}", fresh.margin);
        // Clearly above the others but below half its attention: not yet an induction head.
        let weak = ask(&[0.1, 0.1, 0.1, 0.1, 0.45, 0.1, 0.1, 0.1]);
        assert_eq!(answer(&weak), "L2 H1");
        assert!(!weak.margin.decided(), "{:?}", weak.margin);
        // Every head copies alike: no head is clearly below, so all race and none wins.
        let alike = ask(&[0.6, 0.6, 0.6, 0.6, 0.7, 0.6, 0.6, 0.6]);
        assert_eq!(alike.choices.len(), 8);
        assert!(!alike.margin.decided(), "{:?}", alike.margin);
        assert!(
            !alike.why.contains("not among the choices"),
            "{}",
            alike.why
        );
    }

    #[test]
    fn arithmetic_is_decided_by_construction() {
        let ins = inspection(ProbeInput::default());
        let none = Curves::new();
        for q in [
            Question::TokenCount,
            Question::HeadSize,
            Question::SqrtDk,
            Question::VisibleKeys { row: 3 },
        ] {
            assert_eq!(pose(q, &ins, &none).margin, Margin::Exact, "{q:?}");
        }
        let padded = inspection(ProbeInput {
            pad_to: Some(20),
            ..ProbeInput::default()
        });
        assert_eq!(
            pose(Question::PadWeight, &padded, &none).margin,
            Margin::Exact
        );
    }

    #[test]
    fn argmax_takes_the_first_of_a_tie() {
        assert_eq!(argmax(&[0.1, 0.5, 0.5]), Some(1));
        assert_eq!(argmax(&[]), None);
    }
}
