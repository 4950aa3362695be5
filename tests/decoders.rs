//! Decoders and encoder–decoders in the browser's wasm32 build (the code the worker runs): the
//! KV cache's logits equal a full re-run at every step, and cross-attention has Tt rows and Ts
//! columns, every target row over the real source tokens only.

use engine::forward::ForwardOptions;
use engine::generate::{kv_cache_bytes, GenerateOptions, Generator};
use engine::seq2seq::{forward_seq2seq, generate, EncoderDecoder, Seq2SeqBatch};
use engine::{BertConfig, BertForPreTraining, MaskMode, Rng};
use ndarray::array;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn decoder(cross: bool) -> BertForPreTraining {
    let mut c = BertConfig::new(30, 32, 2, 4, 64).decoder();
    c.max_position_embeddings = 32;
    c.num_key_value_heads = Some(2);
    c.add_cross_attention = cross;
    c.initializer_range = 0.3;
    BertForPreTraining::init(&c, &mut Rng::new(3)).unwrap()
}

#[wasm_bindgen_test]
fn the_cache_gives_the_logits_of_a_full_rerun_and_grows_by_a_row_a_token() {
    let model = decoder(false);
    let options = |use_cache| GenerateOptions {
        use_cache,
        ..GenerateOptions::greedy(12, None)
    };
    let prompt = [2u32, 8, 9, 10];
    let mut cached = Generator::new(&model, &prompt, options(true)).unwrap();
    let mut full = Generator::new(&model, &prompt, options(false)).unwrap();
    for step in 0..12 {
        for (a, b) in cached.logits().iter().zip(full.logits()) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "step {step}: {a} vs {b}"
            );
        }
        assert_eq!(
            cached.cache_bytes(),
            kv_cache_bytes(&model.config, prompt.len() + step)
        );
        let (a, b) = (cached.next_token().unwrap(), full.next_token().unwrap());
        assert_eq!(a.map(|t| t.id), b.map(|t| t.id));
    }
}

#[wasm_bindgen_test]
fn cross_attention_is_target_by_source_and_never_sees_source_padding() {
    let mut encoder = decoder(false);
    encoder.config.is_decoder = false;
    encoder.cls = None;
    let model = EncoderDecoder {
        encoder,
        decoder: decoder(true),
        decoder_start_token_id: 2,
        pad_token_id: 0,
        extra: Default::default(),
    };
    let batch = Seq2SeqBatch::new(
        array![[2u32, 5, 6, 7, 3], [2, 9, 3, 0, 0]],
        array![[1u8, 1, 1, 1, 1], [1, 1, 1, 0, 0]],
        array![[7i64, 6, 5, 3], [9, 3, -100, -100]],
        2,
        0,
    );
    // Trace row 1 (the padded source): put it first.
    let swap = |b: &engine::Batch| {
        let order = [1usize, 0];
        engine::Batch {
            input_ids: b.input_ids.select(ndarray::Axis(0), &order),
            token_type_ids: b.token_type_ids.select(ndarray::Axis(0), &order),
            attention_mask: b.attention_mask.select(ndarray::Axis(0), &order),
            mlm_labels: b
                .mlm_labels
                .as_ref()
                .map(|l| l.select(ndarray::Axis(0), &order)),
            nsp_labels: None,
        }
    };
    let batch = Seq2SeqBatch {
        source: swap(&batch.source),
        target: swap(&batch.target),
    };
    let opts = ForwardOptions {
        trace: true,
        ..ForwardOptions::inspection(MaskMode::Padding)
    };
    let out = forward_seq2seq(&model, &batch, &opts, &mut Rng::new(0)).unwrap();
    let trace = out.decoder.trace.unwrap();
    for layer in &trace.layers {
        assert_eq!(layer.cross_heads.len(), 4);
        for head in &layer.cross_heads {
            let w = &head.weights;
            assert_eq!((w.rows, w.cols), (4, 5), "Tt × Ts");
            for i in 0..4 {
                let row = &w.data[i * 5..(i + 1) * 5];
                assert!(row[..3].iter().all(|&x| x > 0.0) && row[3..].iter().all(|&x| x == 0.0));
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            }
            assert_eq!((head.k.rows, head.q.rows), (5, 4));
        }
    }
    assert!(out.decoder.losses.unwrap().total.is_finite());
    let tokens = generate(&model, &[2, 5, 6, 3], GenerateOptions::greedy(5, None)).unwrap();
    assert_eq!(tokens.len(), 5);
}
