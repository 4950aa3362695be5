//! Generation's properties, on random decoders of every architecture the engine has: the KV
//! cache changes nothing (the logits with it equal those of re-running the whole sequence, at
//! every step), the same seed samples the same tokens, the cache grows by the same bytes per
//! token, and every bad request is a clear error. Agreement with `transformers.generate` is
//! in tests/decoder_reference.rs.

use engine::config::{AttentionType, PositionEmbeddingType};
use engine::generate::{
    generate, kv_cache_bytes, kv_cache_bytes_without_groups, Decoding, GenerateOptions, Generator,
};
use engine::{BertConfig, BertForPreTraining, Rng};

const SEP: u32 = 3;

/// hidden 32, 2 layers, 4 heads (D = 8), positions 48; weights at a large scale so the logits
/// are far from uniform.
fn decoder(
    kv_heads: Option<usize>,
    positions: PositionEmbeddingType,
    attention: AttentionType,
) -> BertForPreTraining {
    let mut c = BertConfig::new(30, 32, 2, 4, 64).decoder();
    c.max_position_embeddings = 48;
    c.num_key_value_heads = kv_heads;
    c.position_embedding_type = positions;
    c.attention_type = attention;
    c.initializer_range = 0.3;
    BertForPreTraining::init(&c, &mut Rng::new(11)).unwrap()
}

fn every_architecture() -> Vec<(&'static str, BertForPreTraining)> {
    use AttentionType::*;
    use PositionEmbeddingType::*;
    vec![
        ("absolute", decoder(None, Absolute, Softmax)),
        ("grouped G=2", decoder(Some(2), Absolute, Softmax)),
        ("multi-query G=1", decoder(Some(1), Absolute, Softmax)),
        ("rotary", decoder(None, Rotary, Softmax)),
        ("alibi", decoder(None, Alibi, Softmax)),
        ("alibi G=2", decoder(Some(2), Alibi, Softmax)),
        ("linear", decoder(None, Absolute, Linear)),
    ]
}

const PROMPT: [u32; 6] = [2, 7, 12, 9, 20, 5];

#[test]
fn logits_with_the_cache_equal_logits_without_it_at_every_step() {
    for (name, model) in every_architecture() {
        let options = |use_cache| GenerateOptions {
            use_cache,
            ..GenerateOptions::greedy(40, None)
        };
        let mut cached = Generator::new(&model, &PROMPT, options(true)).unwrap();
        let mut full = Generator::new(&model, &PROMPT, options(false)).unwrap();
        let mut worst = 0.0f32;
        for step in 0..=40 {
            for (&a, &b) in cached.logits().iter().zip(full.logits()) {
                let d = (a - b).abs();
                worst = worst.max(d);
                assert!(
                    d <= 1e-5 * b.abs().max(1.0),
                    "{name} step {step}: {a} vs {b}"
                );
            }
            let (a, b) = (cached.next_token().unwrap(), full.next_token().unwrap());
            match (a, b) {
                (Some(a), Some(b)) => {
                    assert_eq!(a.id, b.id, "{name} step {step}");
                    assert!((a.prob - b.prob).abs() < 1e-5, "{name} step {step}");
                }
                (None, None) => assert_eq!(step, 40, "{name}: stopped early"),
                _ => panic!("{name} step {step}: one run stopped, the other did not"),
            }
        }
        assert_eq!(cached.ids(), full.ids());
        assert_eq!(cached.ids().len(), PROMPT.len() + 40);
        println!("{name}: cache vs none, max |logit diff| {worst:.2e}");
    }
}

/// A cache that held a wrong key (here: a prompt run without the causal mask would give
/// other keys) would show; so would one that forgot a position. This checks the comparison
/// can fail: a model whose last token differs gives other logits.
#[test]
fn the_logits_depend_on_every_earlier_token() {
    let model = &every_architecture()[0].1;
    let a = Generator::new(model, &PROMPT, GenerateOptions::greedy(1, None)).unwrap();
    let mut other = PROMPT;
    other[1] = 8;
    let b = Generator::new(model, &other, GenerateOptions::greedy(1, None)).unwrap();
    let differ = a
        .logits()
        .iter()
        .zip(b.logits())
        .any(|(x, y)| (x - y).abs() > 1e-3);
    assert!(differ);
}

#[test]
fn the_same_seed_samples_the_same_tokens_and_another_seed_others() {
    let model = &every_architecture()[3].1;
    let sample = |seed| {
        let options = GenerateOptions {
            decoding: Decoding::Sample {
                temperature: 1.5,
                top_k: Some(10),
            },
            seed,
            ..GenerateOptions::greedy(30, None)
        };
        generate(model, &PROMPT, options)
            .unwrap()
            .iter()
            .map(|t| t.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(sample(4), sample(4));
    assert_ne!(sample(4), sample(5));
}

#[test]
fn the_cache_grows_by_the_same_bytes_per_token_and_groups_shrink_it() {
    for (name, model) in every_architecture() {
        let c = &model.config;
        let tokens = generate(&model, &PROMPT, GenerateOptions::greedy(20, None)).unwrap();
        let per_token = kv_cache_bytes(c, 1);
        for (i, t) in tokens.iter().enumerate() {
            assert_eq!(
                t.kv_cache_bytes,
                (PROMPT.len() + i + 1) * per_token,
                "{name}"
            );
            assert!(
                (t.prob - t.top[0].1).abs() < 1e-6,
                "greedy takes the most probable"
            );
            assert_eq!(t.top.len(), 5);
        }
        // L × 2 × G·D × 4 bytes a token: 2 × 2 × 8·G × 4.
        assert_eq!(per_token, 2 * 2 * 8 * c.num_kv_heads() * 4, "{name}");
        assert_eq!(kv_cache_bytes_without_groups(c, 1), 2 * 2 * 32 * 4);
        let mut g = Generator::new(&model, &PROMPT, GenerateOptions::greedy(3, None)).unwrap();
        assert_eq!(g.cache_bytes(), kv_cache_bytes(c, PROMPT.len()));
        g.next_token().unwrap();
        g.next_token().unwrap();
        assert_eq!(g.cache_bytes(), kv_cache_bytes(c, PROMPT.len() + 2));
    }
}

#[test]
fn generation_stops_after_the_stop_token() {
    let model = &every_architecture()[0].1;
    let free = generate(model, &PROMPT, GenerateOptions::greedy(30, None)).unwrap();
    let stop = free[4].id;
    let first = free.iter().position(|t| t.id == stop).unwrap();
    let stopped = generate(model, &PROMPT, GenerateOptions::greedy(30, Some(stop))).unwrap();
    assert_eq!(stopped.len(), first + 1);
    assert_eq!(stopped.last().unwrap().id, stop);
    let _ = SEP;
}

#[test]
fn bad_requests_are_clear_errors() {
    let model = &every_architecture()[0].1;
    let greedy = |n| GenerateOptions::greedy(n, None);
    let sample = |temperature, top_k| GenerateOptions {
        decoding: Decoding::Sample { temperature, top_k },
        ..greedy(5)
    };
    let long = vec![5u32; 48];
    let cases: Vec<(&[u32], GenerateOptions, &str)> = vec![
        (&[], greedy(5), "prompt is empty"),
        (&long, greedy(5), "48 tokens and the model has 48 positions"),
        (&PROMPT, greedy(0), "max new tokens is 0"),
        (&PROMPT, greedy(1_000_000), "only 42 fit"),
        (&PROMPT, sample(0.0, None), "must be above 0"),
        (&PROMPT, sample(-1.0, None), "must be above 0"),
        (&PROMPT, sample(f32::NAN, None), "must be above 0"),
        (&PROMPT, sample(1.0, Some(0)), "top-k 0"),
        (&[2, 99], greedy(5), "outside the vocabulary"),
    ];
    for (prompt, options, needle) in cases {
        let e = generate(model, prompt, options).unwrap_err().to_string();
        assert!(e.contains(needle), "{needle:?} not in {e:?}");
    }
    let encoder = BertForPreTraining::init(&BertConfig::tiny(30), &mut Rng::new(0)).unwrap();
    let e = generate(&encoder, &PROMPT, greedy(3))
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a decoder"), "{e}");
}
