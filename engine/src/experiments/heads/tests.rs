use super::*;
use crate::data::Corpus;
use crate::tokenizer::{build_word_vocab, Tokenizer};
use crate::{BertConfig, MaskMode};

const TEXT: &str = "the dog chases a red ball .\na cat sleeps under the tree .\nwe went home early .\nthe ball rolls away .\n";

fn setup() -> (Corpus, BertForPreTraining) {
    let vocab = build_word_vocab(TEXT).unwrap();
    let tokenizer = Tokenizer::word_level(vocab.clone());
    let corpus = Corpus::parse(TEXT, &tokenizer).unwrap();
    let model = BertForPreTraining::init(&BertConfig::tiny(vocab.len()), &mut Rng::new(3)).unwrap();
    (corpus, model)
}

fn opts() -> ForwardOptions {
    ForwardOptions::training(MaskMode::Padding)
}

fn specials(corpus: &Corpus) -> (u32, u32) {
    let (cls, sep, _) = corpus.cls_sep_mask();
    (cls, sep)
}

#[test]
fn each_key_has_one_role_and_identical_rows_are_zero_apart() {
    // [CLS] a b [SEP] c [SEP], ids 1, 5, 6, 2, 7, 2.
    let ids = [1, 5, 6, 2, 7, 2];
    let row: Vec<usize> = (0..6).map(|j| role(&ids, 2, j, 1, 2)).collect();
    assert_eq!(row, [CLS, PREVIOUS, SELF, SEP, REST, SEP]);
    // The word after [CLS]: [CLS] first, so "previous" is never [CLS] too.
    assert_eq!(role(&ids, 1, 0, 1, 2), CLS);
    assert_eq!(role(&ids, 4, 5, 1, 2), SEP);
    assert_eq!(role(&ids, 0, 1, 1, 2), NEXT);
    let p = [0.25, 0.5, 0.25, 0.0];
    assert_eq!(js_distance(&p, &p), 0.0);
    assert!((js_distance(&[1.0, 0.0], &[0.0, 1.0]) - 1.0).abs() < 1e-12);
    let q = [0.1, 0.1, 0.4, 0.4];
    assert_eq!(js_distance(&p, &q), js_distance(&q, &p));
    // √JSD by the formula: m = (p + q)/2.
    let m: Vec<f64> = p
        .iter()
        .zip(&q)
        .map(|(&a, &b)| (f64::from(a) + f64::from(b)) / 2.0)
        .collect();
    let kl = |a: &[f32]| -> f64 {
        a.iter()
            .zip(&m)
            .filter(|(x, _)| **x > 0.0)
            .map(|(&x, &m)| f64::from(x) * (f64::from(x) / m).log2())
            .sum()
    };
    let expected = (0.5 * kl(&p) + 0.5 * kl(&q)).sqrt();
    assert!((js_distance(&p, &q) - expected).abs() < 1e-12);
}

#[test]
fn sentences_are_training_pairs_or_a_decoders_rows() {
    let (corpus, _) = setup();
    let (cls, sep) = specials(&corpus);
    let pairs = head_sentences(&corpus, false, 12, 8).unwrap();
    assert_eq!(
        pairs.len(),
        3,
        "four sentences make three consecutive pairs"
    );
    for MeasuredRow {
        ids,
        segments,
        queries,
    } in &pairs
    {
        assert_eq!(
            *queries,
            (0..ids.len()).collect::<Vec<_>>(),
            "every row counts"
        );
        assert!(ids.len() <= 12);
        assert_eq!((ids[0], *ids.last().unwrap()), (cls, sep));
        assert_eq!(ids.iter().filter(|&&i| i == sep).count(), 2);
        let first_sep = ids.iter().position(|&i| i == sep).unwrap();
        assert!(segments[..=first_sep].iter().all(|&s| s == 0));
        assert!(segments[first_sep + 1..].iter().all(|&s| s == 1));
    }
    let rows = head_sentences(&corpus, true, 30, 8).unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0].ids[1..8], *corpus.sentence(0));
    assert!(head_sentences(&corpus, false, 4, 8).is_err());
}

#[test]
fn uniform_attention_has_the_roles_counting_predicts_and_heads_that_do_not_differ() {
    let (corpus, mut model) = setup();
    // Zero queries and keys: every score 0, every weight 1/T in every head.
    for layer in &mut model.bert.layers {
        let sa = &mut layer.attention.self_attention;
        for l in [&mut sa.query, &mut sa.key] {
            l.weight.fill(0.0);
            l.bias.fill(0.0);
        }
    }
    let (cls, sep) = specials(&corpus);
    let sentences = head_sentences(&corpus, false, 30, 8).unwrap();
    let stats = head_stats(&model, &sentences, &opts(), (cls, sep)).unwrap();
    assert_eq!((stats.layers, stats.heads, stats.roles.len()), (2, 4, 8));
    // Expected: each row's keys counted by role, each weighing 1/T; entropy ln T.
    let (mut expected, mut entropy, mut rows) = ([0.0f64; 6], 0.0, 0);
    for MeasuredRow { ids, .. } in &sentences {
        let t = ids.len();
        for i in 0..t {
            for j in 0..t {
                expected[role(ids, i, j, cls, sep)] += 1.0 / t as f64;
            }
            entropy += (t as f64).ln();
        }
        rows += t;
    }
    assert_eq!(stats.rows, rows);
    for k in 0..8 {
        for (r, count) in expected.iter().enumerate() {
            let want = count / rows as f64;
            assert!((stats.roles[k][r] - want).abs() < 1e-6, "head {k} role {r}");
        }
        assert!((stats.entropy[k] - entropy / rows as f64).abs() < 1e-5);
        assert!((stats.spread[k] - 1.0).abs() < 1e-5, "evenly spread");
        assert_eq!(stats.distance_to_others[k], 0.0, "identical heads");
    }
    assert_eq!(stats.mean_distance, 0.0);
    // A uniform head is the position-only baseline, so it takes no role.
    assert_eq!(stats.sentences, sentences.len());
    for (k, head) in role_tests(&stats).iter().enumerate() {
        for r in 0..6 {
            assert!(
                (stats.roles[k][r] - stats.baseline[r]).abs() < 1e-6,
                "head {k} role {r}"
            );
        }
        assert!(
            head.iter().all(|t| t.call != Call::Takes),
            "head {k}: {head:?}"
        );
    }
}

#[test]
fn the_baseline_gives_each_key_a_head_may_see_one_nth() {
    // [CLS] a b [SEP] c [SEP], ids 1, 5, 6, 2, 7, 2: query 2 sees n = 6 keys.
    let ids = [1, 5, 6, 2, 7, 2];
    let every = uniform_row_roles(&ids, 2, |_| true, (1, 2));
    let sixth = 1.0 / 6.0;
    // Keys [CLS], previous, self, [SEP] (which "next" is too: [SEP] first), c, [SEP].
    assert_eq!(every, [sixth, sixth, 0.0, sixth, 2.0 * sixth, sixth]);
    // Causal: query 2 sees keys 0..=2, a third each; no "next".
    let causal = uniform_row_roles(&ids, 2, |j| j <= 2, (1, 2));
    let third = 1.0 / 3.0;
    assert_eq!(causal, [third, third, 0.0, third, 0.0, 0.0]);
    // A decoder's first row sees only itself.
    assert_eq!(uniform_row_roles(&ids, 0, |j| j == 0, (1, 2))[SELF], 1.0);
    assert_eq!(uniform_row_roles(&ids, 0, |_| false, (1, 2)), [0.0; 6]);
}

#[test]
fn the_baseline_follows_the_mask_the_pass_applies() {
    let (corpus, model) = setup();
    let sentences = head_sentences(&corpus, false, 30, 8).unwrap();
    let (cls, sep) = specials(&corpus);
    let causal = ForwardOptions::training(MaskMode::Causal);
    let stats = head_stats(&model, &sentences, &causal, (cls, sep)).unwrap();
    assert_eq!(stats.baseline[NEXT], 0.0, "no query sees the next token");
    // By hand: row i sees its i + 1 keys.
    let (mut self_share, mut rows) = (0.0, 0);
    for MeasuredRow { ids, .. } in &sentences {
        self_share += (1..=ids.len()).map(|n| 1.0 / n as f64).sum::<f64>();
        rows += ids.len();
    }
    assert!((stats.baseline[SELF] - self_share / rows as f64).abs() < 1e-12);
    assert!((stats.baseline.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    // No head of any model can take "next" under the causal mask.
    assert!(role_tests(&stats)
        .iter()
        .all(|head| head[NEXT].call == Call::DoesNot));
}

#[test]
fn a_shares_standard_error_is_the_spread_of_its_sentences() {
    // Equal rows: the standard deviation of the sentences' means ÷ √S. Means 0.2, 0.4, 0.6 over
    // 10 rows each: sd 0.2, S = 3.
    let error = ratio_standard_error(&[2.0, 4.0, 6.0], &[10, 10, 10]);
    assert!((error - 0.2 / 3f64.sqrt()).abs() < 1e-12, "{error}");
    // The same share in every sentence, whatever its length: no spread.
    assert_eq!(ratio_standard_error(&[1.0, 3.0], &[4, 12]), 0.0);
    assert_eq!(
        ratio_standard_error(&[1.0], &[4]),
        f64::INFINITY,
        "one sentence"
    );
}

/// A head's stats with `shares` of each role, each with standard error `error`, against the
/// baseline `baseline`.
fn one_head(shares: [f64; 6], error: f64, baseline: [f64; 6]) -> [RoleTest; RELATIONS] {
    let stats = HeadStats {
        layers: 1,
        heads: 1,
        roles: vec![shares],
        entropy: vec![1.0],
        spread: vec![0.5],
        distance_to_others: vec![0.0],
        mean_distance: 0.0,
        rows: 100,
        sentences: 10,
        role_error: vec![[error; 6]],
        baseline,
    };
    role_tests(&stats)[0]
}

/// An encoder's baseline over rows of ten keys: a tenth to self, previous, next and [CLS],
/// two to [SEP], the rest to the rest.
const BASELINE: [f64; 6] = [0.1, 0.1, 0.1, 0.1, 0.2, 0.4];

#[test]
fn a_head_takes_a_role_at_half_its_attention_decided_by_its_standard_error() {
    let calls = |head: [RoleTest; RELATIONS]| head.map(|t| t.call);
    use Call::{DoesNot as No, NotDecided as Open, Takes as Yes};
    // All on the previous token: "previous", and nothing else.
    let previous = one_head([0.0, 1.0, 0.0, 0.0, 0.0, 0.0], 0.01, BASELINE);
    assert_eq!(calls(previous), [No, Yes, No, No, No]);
    assert_eq!(previous[1].over_baseline(), 10.0);
    // 60% on [SEP] with a small error takes it; 49% does not, however small its error.
    let sep = one_head([0.1, 0.0, 0.0, 0.0, 0.6, 0.3], 0.01, BASELINE);
    assert_eq!(calls(sep), [No, No, No, No, Yes]);
    let almost = one_head([0.0, 0.0, 0.0, 0.0, 0.49, 0.51], 0.001, BASELINE);
    assert_eq!(calls(almost), [No; 5]);
    // Many times the baseline is no role: 40% on [CLS] is 4× its 10%, and less than half.
    assert_eq!(
        calls(one_head([0.0, 0.0, 0.0, 0.4, 0.2, 0.4], 0.001, BASELINE)),
        [No; 5]
    );
    // A uniform head: the baseline itself.
    assert_eq!(calls(one_head(BASELINE, 0.01, BASELINE)), [No; 5]);
    // "rest" is no relation: all on it is no role.
    assert_eq!(
        calls(one_head([0.0, 0.0, 0.0, 0.0, 0.0, 1.0], 0.01, BASELINE)),
        [No; 5]
    );
    // Within 2 standard errors of the bar: not decided, on either side of it.
    let near = |share| one_head([share, 0.0, 0.0, 0.0, 0.0, 1.0 - share], 0.02, BASELINE)[0].call;
    assert_eq!(
        (near(0.47), near(0.53), near(0.45), near(0.55)),
        (Open, Open, No, Yes)
    );
    // No spread to read (one sentence): nothing is decided.
    let alone = one_head([0.0, 1.0, 0.0, 0.0, 0.0, 0.0], f64::INFINITY, BASELINE);
    assert_eq!(calls(alone), [Open; 5]);
    // Position alone gives a role half or more (a decoder's "self" on short rows): a head that
    // does just that takes no role.
    let decoder = [0.6, 0.2, 0.0, 0.2, 0.0, 0.0];
    assert_eq!(calls(one_head(decoder, 0.0, decoder)), [No; 5]);
}

#[test]
fn heads_differ_when_two_take_different_roles_and_not_when_no_two_could() {
    let previous = one_head([0.0, 0.9, 0.0, 0.0, 0.0, 0.1], 0.01, BASELINE);
    let sep = one_head([0.0, 0.0, 0.0, 0.0, 0.9, 0.1], 0.01, BASELINE);
    let none = one_head(BASELINE, 0.01, BASELINE);
    let open = one_head([0.0, 0.0, 0.0, 0.0, 0.5, 0.5], 0.05, BASELINE);
    assert_eq!(open[4].call, Call::NotDecided);
    let differ = |heads: &[[RoleTest; RELATIONS]]| heads_take_different_roles(heads);
    assert_eq!(differ(&[previous, none, sep]), Some(true));
    assert_eq!(differ(&[none, none, none]), Some(false));
    assert_eq!(
        differ(&[sep, sep, none]),
        Some(false),
        "the same role twice"
    );
    assert_eq!(differ(&[previous]), Some(false), "one head");
    assert_eq!(differ(&[previous, open]), None, "[SEP] might make two");
    assert_eq!(differ(&[sep, open]), Some(false), "[SEP] either way");
    assert_eq!(differ(&[previous, sep, open]), Some(true));
}

#[test]
fn a_trained_looking_model_has_shares_summing_to_one_and_distinct_heads() {
    let (corpus, model) = setup();
    let sentences = head_sentences(&corpus, false, 30, 8).unwrap();
    let stats = head_stats(&model, &sentences, &opts(), specials(&corpus)).unwrap();
    for (k, shares) in stats.roles.iter().enumerate() {
        assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-5, "head {k}");
        assert!(shares.iter().all(|&s| (0.0..=1.0).contains(&s)));
    }
    assert!(stats.mean_distance > 0.0);
    // The mean over pairs equals the mean of each head's mean distance to the others.
    let from_heads = stats.distance_to_others.iter().sum::<f64>() / 8.0;
    assert!((stats.mean_distance - from_heads).abs() < 1e-9);
    // Under the causal mask no query weighs the next token.
    let causal = ForwardOptions::training(MaskMode::Causal);
    let stats = head_stats(&model, &sentences, &causal, specials(&corpus)).unwrap();
    assert!(stats.roles.iter().all(|r| r[NEXT] == 0.0));
    assert!(stats.spread.iter().all(|&s| s > 0.0 && s <= 1.0 + 1e-9));
}

#[test]
fn ablating_a_head_is_the_pass_with_its_output_columns_cut() {
    let (corpus, model) = setup();
    let batch = evaluation_batch(&corpus, &BatchConfig::default(), false, 8).unwrap();
    assert_eq!(
        batch,
        evaluation_batch(&corpus, &BatchConfig::default(), false, 8).unwrap(),
        "the same rows every time"
    );
    let (base, deltas) = ablations(&model, &batch, &opts()).unwrap();
    assert_eq!(deltas.len(), 8);
    // By hand: head h's context reaches the model only through W_O's columns h·D…(h+1)·D;
    // zero them in a copy and take its plain loss.
    let d = 16;
    for (k, delta) in deltas.iter().enumerate() {
        let (layer, head) = (k / 4, k % 4);
        let mut cut = model.clone();
        cut.bert.layers[layer]
            .attention
            .output
            .dense
            .weight
            .slice_mut(ndarray::s![.., head * d..(head + 1) * d])
            .fill(0.0);
        let by_hand = masked_loss(&cut, &batch, &opts(), &HeadMask::keep_all(2, 4)).unwrap() - base;
        assert_eq!(*delta, by_hand, "head {k}");
        assert_ne!(*delta, 0.0, "head {k} matters a little");
    }
    // A decoder's rows measure the next-token loss.
    let decoder_batch = evaluation_batch(&corpus, &BatchConfig::default(), true, 8).unwrap();
    assert!(decoder_batch.nsp_labels.is_none());
}

#[test]
fn a_measurement_names_each_heads_largest_decided_role_and_the_verdict_of_its_calls() {
    let (corpus, model) = setup();
    let m = measure_heads(&model, &corpus, 30, &opts()).unwrap();
    let probe = HeadsProbe::new(&corpus, false, 30, &opts()).unwrap();
    assert_eq!(m.rows, probe.rows);
    assert_eq!(
        m.rows,
        head_sentences(&corpus, false, 30, HEAD_SENTENCES).unwrap()
    );
    assert_eq!(m.stats, probe.stats(&model).unwrap());
    assert_eq!(m.tests, role_tests(&m.stats));
    assert_eq!(m.verdict, heads_take_different_roles(&m.tests));
    assert_eq!(m.roles.len(), 8);
    // Stats by hand: head 0 takes previous and self (previous the larger), head 1 [SEP],
    // head 2 previous too close to call; the rest the baseline.
    let mut stats = m.stats.clone();
    stats.roles = vec![stats.baseline; 8];
    stats.role_error = vec![[0.01; 6]; 8];
    stats.roles[0] = [0.6, 0.7, 0.0, 0.0, 0.0, 0.0];
    stats.roles[1] = [0.0, 0.0, 0.0, 0.0, 0.7, 0.3];
    stats.roles[2] = [0.0, 0.51, 0.0, 0.0, 0.0, 0.49];
    let made = HeadsMeasurement::of(stats.clone(), Vec::new());
    let mut want = vec![None; 8];
    want[0] = Some(PREVIOUS);
    want[1] = Some(SEP);
    assert_eq!(made.roles, want);
    assert_eq!(made.verdict, Some(true));
    // Head 1 on previous instead: the two heads agree, head 2 could still differ (self 0).
    stats.roles[1] = [0.0, 0.7, 0.0, 0.0, 0.0, 0.3];
    assert_eq!(HeadsMeasurement::of(stats, Vec::new()).verdict, Some(true));
}

#[test]
fn only_the_counted_queries_rows_are_read() {
    let (corpus, model) = setup();
    let mut probe = HeadsProbe::new(&corpus, false, 30, &opts()).unwrap();
    let all = probe.stats(&model).unwrap();
    for row in &mut probe.rows {
        row.queries = vec![0];
    }
    let first = probe.stats(&model).unwrap();
    assert_eq!(
        (first.rows, first.sentences),
        (probe.rows.len(), all.sentences)
    );
    assert_ne!(first.roles, all.roles);
    // Query 0 is [CLS]: its own key is "self", not "[CLS]".
    assert!(first.baseline[CLS] == 0.0 && first.baseline[SELF] > 0.0);
    probe.rows[0].queries = vec![probe.rows[0].ids.len()];
    assert!(probe.stats(&model).is_err(), "a query past the row");
    // A decoder's probe reads `[CLS] sentence [SEP]` under the causal mask.
    let decoder = HeadsProbe::new(
        &corpus,
        true,
        30,
        &reading_options(&model.config.clone().decoder()),
    )
    .unwrap();
    assert_eq!(decoder.opts.mask, MaskMode::Causal);
    assert!(decoder
        .rows
        .iter()
        .all(|r| r.segments.iter().all(|&s| s == 0)));
}

#[test]
fn one_texts_shares_are_its_rows_weights_summed_by_role_then_averaged() {
    // [CLS] a b [SEP], ids 1, 5, 6, 2. Row 2 (b): [CLS] 0.1, a 0.6 (previous), b 0.2 (self),
    // [SEP] 0.1. Row 1 (a): all on b (next).
    let ids = [1, 5, 6, 2];
    assert_eq!(
        row_roles(&[0.1, 0.6, 0.2, 0.1], &ids, 2, (1, 2)),
        [
            f64::from(0.2f32),
            f64::from(0.6f32),
            0.0,
            f64::from(0.1f32),
            f64::from(0.1f32),
            0.0
        ]
    );
    let mut w = Matrix {
        rows: 4,
        cols: 4,
        data: vec![0.25; 16],
    };
    w.data[4..8].copy_from_slice(&[0.0, 0.0, 1.0, 0.0]);
    w.data[8..12].copy_from_slice(&[0.1, 0.6, 0.2, 0.1]);
    let shares = text_roles(&w, &ids, &[1, 2], (1, 2)).unwrap();
    assert!((shares[NEXT] - 0.5).abs() < 1e-7, "{shares:?}");
    assert!((shares[PREVIOUS] - 0.3).abs() < 1e-7, "{shares:?}");
    assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-7);
    assert!(
        text_roles(&w, &ids, &[4], (1, 2)).is_err(),
        "a query past the text"
    );
    assert!(
        text_roles(&w, &ids[..3], &[0], (1, 2)).is_err(),
        "weights of another text"
    );
}

#[test]
fn an_inspected_texts_shares_are_the_heads_claims_on_that_sentence_padding_aside() {
    use crate::inspect::inspect;
    let (corpus, model) = setup();
    let tokenizer = Tokenizer::word_level(build_word_vocab(TEXT).unwrap());
    let (text, pair) = (
        "the dog chases a [MASK] ball .",
        "a cat sleeps under the tree .",
    );
    let ins = inspect(
        &model,
        &tokenizer,
        text,
        Some(pair),
        MaskMode::Padding,
        None,
    )
    .unwrap();
    let shares = inspection_roles(&ins).unwrap();
    assert_eq!((shares.len(), shares[0].len()), (2, 4));
    // The claim's measurement of the same tokens, read as one sentence of its own.
    let row = MeasuredRow::new(ins.input_ids.clone(), ins.token_type_ids.clone());
    let stats = head_stats(&model, &[row], &opts(), specials(&corpus)).unwrap();
    for (k, claims) in stats.roles.iter().enumerate() {
        let mine = shares[k / 4][k % 4];
        for r in 0..6 {
            assert!(
                (mine[r] - claims[r]).abs() < 1e-5,
                "head {k}, {}: {mine:?} against {claims:?}",
                ROLES[r]
            );
        }
    }
    // [PAD] rows are no query and [PAD] keys get 0: padding changes no share.
    let padded = inspect(
        &model,
        &tokenizer,
        text,
        Some(pair),
        MaskMode::Padding,
        Some(24),
    )
    .unwrap();
    assert!(padded.attention_mask.contains(&0));
    for (a, b) in shares
        .iter()
        .flatten()
        .zip(inspection_roles(&padded).unwrap().iter().flatten())
    {
        for r in 0..6 {
            assert!((a[r] - b[r]).abs() < 1e-5, "{a:?} against {b:?}");
        }
    }
}
