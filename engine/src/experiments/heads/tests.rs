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
    for (ids, segments) in &pairs {
        assert!(ids.len() <= 12);
        assert_eq!((ids[0], *ids.last().unwrap()), (cls, sep));
        assert_eq!(ids.iter().filter(|&&i| i == sep).count(), 2);
        let first_sep = ids.iter().position(|&i| i == sep).unwrap();
        assert!(segments[..=first_sep].iter().all(|&s| s == 0));
        assert!(segments[first_sep + 1..].iter().all(|&s| s == 1));
    }
    let rows = head_sentences(&corpus, true, 30, 8).unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0].0[1..8], *corpus.sentence(0));
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
    for (ids, _) in &sentences {
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
