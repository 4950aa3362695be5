//! Tests of checkpoint loading and saving: round trips, the naming variants HF checkpoints
//! use, half precision, and corrupt or contradictory files as errors.

mod fixtures;

use super::dtype::to_f32;
use super::*;
use fixtures::{f32_only, load_err, rewrite, tiny_checkpoint, with_header};

#[test]
fn save_then_load_gives_the_same_model_and_tokenizer() {
    let original = tiny_checkpoint();
    let files = to_files(&original);
    let back = load(&files).unwrap();
    assert_eq!(back, original);
    let names: Vec<String> = SafeTensors::deserialize(&files.safetensors)
        .unwrap()
        .names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(names.contains(&"bert.encoder.layer.1.output.LayerNorm.weight".to_string()));
    assert!(names.contains(&"cls.predictions.bias".to_string()));
    assert!(!names.iter().any(|n| n.contains("decoder")), "{names:?}");
}

#[test]
fn save_dir_and_load_dir_round_trip_and_missing_files_are_named() {
    let dir = std::env::temp_dir().join(format!("attention-lab-ckpt-{}", std::process::id()));
    let original = tiny_checkpoint();
    save_dir(&original, &dir).unwrap();
    assert_eq!(load_dir(&dir).unwrap(), original);
    std::fs::remove_file(dir.join(VOCAB_FILE)).unwrap();
    let e = load_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("vocab.txt is missing"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    let e = load_dir(&dir).unwrap_err().to_string();
    assert!(e.contains("is not a directory"), "{e}");
}

#[test]
fn bare_bert_model_names_load_without_heads_and_save_back_the_same_names() {
    let files = to_files(&tiny_checkpoint());
    let bare = rewrite(
        &files,
        |n| match n.strip_prefix("bert.") {
            Some(rest) if !rest.starts_with("pooler") => Some(rest.to_string()),
            _ => None,
        },
        f32_only,
    );
    let ckpt = load(&bare).unwrap();
    assert!(ckpt.model.cls.is_none() && ckpt.model.bert.pooler.is_none());
    assert_eq!(ckpt.naming.prefix, "");
    assert_eq!(ckpt.model.bert.layers, tiny_checkpoint().model.bert.layers);
    let saved = to_files(&ckpt);
    let st = SafeTensors::deserialize(&saved.safetensors).unwrap();
    let mut names: Vec<&str> = st.names();
    names.sort();
    let st0 = SafeTensors::deserialize(&bare.safetensors).unwrap();
    let mut names0 = st0.names();
    names0.sort();
    assert_eq!(names, names0);
}

#[test]
fn gamma_beta_tied_decoder_position_ids_and_extras() {
    let original = tiny_checkpoint();
    let files = to_files(&original);
    let st = SafeTensors::deserialize(&files.safetensors).unwrap();
    let (v, c) = original.model.bert.embeddings.word_embeddings.dim();
    // Add the tied decoder (with other values: they must be ignored), the decoder bias,
    // a position_ids buffer (I64) and an unknown classifier; rename LayerNorm to gamma/beta.
    let mut tensors: Vec<(String, Vec<usize>, Dtype, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| {
            (
                n.replace("LayerNorm.weight", "LayerNorm.gamma")
                    .replace("LayerNorm.bias", "LayerNorm.beta"),
                t.shape().to_vec(),
                t.dtype(),
                t.data().to_vec(),
            )
        })
        .collect();
    tensors.push((
        "cls.predictions.decoder.weight".into(),
        vec![v, c],
        Dtype::F32,
        f32_bytes(vec![9.0; v * c].iter()),
    ));
    let bias = original
        .model
        .cls
        .as_ref()
        .unwrap()
        .predictions
        .bias
        .clone();
    tensors.push((
        "cls.predictions.decoder.bias".into(),
        vec![v],
        Dtype::F32,
        f32_bytes(bias.iter()),
    ));
    tensors.push((
        "bert.embeddings.position_ids".into(),
        vec![1, 16],
        Dtype::I64,
        vec![0; 128],
    ));
    tensors.push((
        "classifier.weight".into(),
        vec![3, c],
        Dtype::F32,
        vec![0; 12 * c],
    ));
    let views = tensors
        .iter()
        .map(|(n, s, k, b)| (n.clone(), TensorView::new(*k, s.clone(), b).unwrap()));
    let files = CheckpointFiles {
        safetensors: safetensors::tensor::serialize(views, None).unwrap(),
        ..files.clone()
    };
    let ckpt = load(&files).unwrap();
    assert_eq!(ckpt.model, original.model);
    assert!(ckpt.naming.gamma_beta && ckpt.naming.decoder_weight && ckpt.naming.decoder_bias);
    assert_eq!(ckpt.naming.ignored, vec!["classifier.weight".to_string()]);
    let saved = SafeTensors::deserialize(&to_files(&ckpt).safetensors)
        .unwrap()
        .names()
        .len();
    // everything but position_ids and the classifier
    assert_eq!(saved, tensors.len() - 2);
    let resaved = to_files(&ckpt);
    let st = SafeTensors::deserialize(&resaved.safetensors).unwrap();
    assert!(st
        .tensor("bert.encoder.layer.0.output.LayerNorm.gamma")
        .is_ok());
    assert_eq!(
        to_f32("w", &st.tensor("cls.predictions.decoder.weight").unwrap()).unwrap(),
        original
            .model
            .bert
            .embeddings
            .word_embeddings
            .iter()
            .copied()
            .collect::<Vec<_>>()
    );
}

#[test]
fn half_precision_weights_are_converted() {
    let files = to_files(&tiny_checkpoint());
    let bf16 = rewrite(&files, |n| Some(n.to_string()), |_| Dtype::BF16);
    let ckpt = load(&bf16).unwrap();
    let want = tiny_checkpoint()
        .model
        .bert
        .embeddings
        .word_embeddings
        .mapv(|x| f32::from_bits(x.to_bits() & 0xffff_0000));
    assert_eq!(ckpt.model.bert.embeddings.word_embeddings, want);
    // One F16 tensor among F32 ones: cls.predictions.bias = [1, −2, 0.5, 2^-24, …].
    let st = SafeTensors::deserialize(&files.safetensors).unwrap();
    let pattern = [0x3c00u16, 0xc000, 0x3800, 0x0001];
    let tensors: Vec<(String, Vec<usize>, Dtype, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| match n.as_str() {
            "cls.predictions.bias" => {
                let v = t.shape()[0];
                let bytes = (0..v).flat_map(|i| pattern[i % 4].to_le_bytes()).collect();
                (n, vec![v], Dtype::F16, bytes)
            }
            _ => (n, t.shape().to_vec(), t.dtype(), t.data().to_vec()),
        })
        .collect();
    let views = tensors
        .iter()
        .map(|(n, s, k, b)| (n.clone(), TensorView::new(*k, s.clone(), b).unwrap()));
    let f16 = CheckpointFiles {
        safetensors: safetensors::tensor::serialize(views, None).unwrap(),
        ..files.clone()
    };
    let bias = load(&f16).unwrap().model.cls.unwrap().predictions.bias;
    assert_eq!(
        bias.iter().take(4).copied().collect::<Vec<_>>(),
        [1.0, -2.0, 0.5, 2f32.powi(-24)]
    );
}

#[test]
fn corrupt_safetensors_are_errors() {
    let files = to_files(&tiny_checkpoint());
    let cut = |n: usize| CheckpointFiles {
        safetensors: files.safetensors[..n].to_vec(),
        ..files.clone()
    };
    for n in [0, 5, 100, files.safetensors.len() - 1] {
        assert!(
            load_err(&cut(n)).contains("not a valid safetensors file"),
            "cut at {n}"
        );
    }
    let mut huge = files.clone();
    huge.safetensors[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(load_err(&huge).contains("not a valid safetensors file"));
    let mut bad_json = files.clone();
    bad_json.safetensors[8] = b'x';
    assert!(
        load_err(&bad_json).contains("JSON"),
        "{}",
        load_err(&bad_json)
    );
    let out_of_range = with_header(&files, |h| {
        let end = h["cls.predictions.bias"]["data_offsets"][1]
            .as_u64()
            .unwrap();
        h["cls.predictions.bias"]["data_offsets"][1] = (end + 1_000_000).into();
    });
    assert!(load_err(&out_of_range).contains("not a valid safetensors file"));
    let int_weights = rewrite(
        &files,
        |n| Some(n.to_string()),
        |n| {
            if n.ends_with("query.weight") {
                Dtype::I64
            } else {
                Dtype::F32
            }
        },
    );
    assert!(
        load_err(&int_weights).contains("dtype I64"),
        "{}",
        load_err(&int_weights)
    );
}

#[test]
fn wrong_shapes_and_missing_tensors_are_named() {
    let files = to_files(&tiny_checkpoint());
    let transposed = with_header(&files, |h| {
        h["bert.encoder.layer.1.intermediate.dense.weight"]["shape"] = serde_json::json!([8, 16]);
    });
    let e = load_err(&transposed);
    assert!(
        e.contains(
            "bert.encoder.layer.1.intermediate.dense.weight has shape [8, 16], expected [16, 8]"
        ),
        "{e}"
    );
    let missing = rewrite(
        &files,
        |n| (n != "bert.encoder.layer.0.attention.self.key.bias").then(|| n.to_string()),
        f32_only,
    );
    assert!(load_err(&missing)
        .contains("missing the required tensor bert.encoder.layer.0.attention.self.key.bias"));
    let no_heads_transform = rewrite(
        &files,
        |n| (!n.starts_with("cls.predictions.transform.dense")).then(|| n.to_string()),
        f32_only,
    );
    assert!(load_err(&no_heads_transform).contains("cls.predictions.transform.dense.weight"));
    let no_pooler = rewrite(
        &files,
        |n| (!n.contains("pooler")).then(|| n.to_string()),
        f32_only,
    );
    assert!(
        load_err(&no_pooler).contains("no pooler"),
        "{}",
        load_err(&no_pooler)
    );
    let no_embeddings = rewrite(
        &files,
        |n| (!n.contains("word_embeddings")).then(|| n.to_string()),
        f32_only,
    );
    assert!(load_err(&no_embeddings).contains("no BERT word embeddings"));
    let mut fewer_layers = files.clone();
    fewer_layers.config_json = fewer_layers
        .config_json
        .replace("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1");
    assert!(
        load_err(&fewer_layers).contains("num_hidden_layers is 1"),
        "{}",
        load_err(&fewer_layers)
    );
}

#[test]
fn bad_configs_and_vocabularies_are_errors() {
    let files = to_files(&tiny_checkpoint());
    let edit = |from: &str, to: &str| CheckpointFiles {
        config_json: files.config_json.replace(from, to),
        ..files.clone()
    };
    assert!(
        matches!(load(&edit("\"gelu\"", "\"relu\"")), Err(EngineError::Config(m)) if m.contains("relu"))
    );
    assert!(
        matches!(load(&edit("\"num_attention_heads\": 2", "\"num_attention_heads\": 3")), Err(EngineError::Config(m)) if m.contains("divisible"))
    );
    assert!(matches!(
        load(&CheckpointFiles {
            config_json: "{".into(),
            ..files.clone()
        }),
        Err(EngineError::Config(_))
    ));
    assert!(matches!(
        load(&CheckpointFiles {
            vocab_txt: String::new(),
            ..files.clone()
        }),
        Err(EngineError::Vocab(_))
    ));
    let longer = CheckpointFiles {
        vocab_txt: format!("{}extra\n", files.vocab_txt),
        ..files.clone()
    };
    assert!(matches!(load(&longer), Err(EngineError::Vocab(m)) if m.contains("vocab_size")));
    // A shorter vocab.txt than the embeddings (padded matrices) loads.
    let n = files.vocab_txt.lines().count();
    let shorter: String = files
        .vocab_txt
        .lines()
        .take(n - 1)
        .map(|l| format!("{l}\n"))
        .collect();
    let ckpt = load(&CheckpointFiles {
        vocab_txt: shorter,
        ..files.clone()
    })
    .unwrap();
    assert_eq!(
        ckpt.tokenizer.vocab().len(),
        ckpt.model.config.vocab_size - 1
    );
}

#[test]
fn oversized_files_are_refused_before_reading() {
    assert!(check_file_size("model.safetensors", MAX_FILE_BYTES).is_ok());
    let e = check_file_size("model.safetensors", MAX_FILE_BYTES + 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("model.safetensors") && e.contains("refused"),
        "{e}"
    );
}

/// The reader's F16 and BF16 decoding of every bit pattern, read as one little-endian tensor,
/// against the formats' definitions: f16 is (−1)^s·2^(e−15)·(1 + m/2^10), subnormal
/// (−1)^s·m·2^−24, e = 31 ∞ (m = 0) or NaN; bf16 is the top half of an f32. Signs are kept,
/// zeros' included.
#[test]
fn half_precision_reads_every_bit_pattern_as_its_definition() {
    let all: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
    let read = |dtype| to_f32("t", &TensorView::new(dtype, vec![1 << 16], &all).unwrap()).unwrap();
    for (h, x) in (0..=u16::MAX).zip(read(Dtype::F16)) {
        let negative = h & 0x8000 != 0;
        let sign = if negative { -1.0 } else { 1.0 };
        let (e, m) = (i32::from((h >> 10) & 0x1f), f64::from(h & 0x3ff));
        let want = match e {
            0 => sign * m * 2f64.powi(-24),
            31 if m == 0.0 => sign * f64::INFINITY,
            31 => f64::NAN,
            _ => sign * 2f64.powi(e - 15) * (1.0 + m / 1024.0),
        };
        assert_eq!(x.is_sign_negative(), negative, "f16 {h:#06x}");
        if want.is_nan() {
            assert!(x.is_nan(), "f16 {h:#06x}");
        } else {
            assert_eq!(f64::from(x), want, "f16 {h:#06x}");
        }
    }
    for (h, x) in (0..=u16::MAX).zip(read(Dtype::BF16)) {
        let top_half = f32::from_bits(u32::from(h) << 16);
        if top_half.is_nan() {
            assert!(x.is_nan() && x.is_sign_negative() == top_half.is_sign_negative());
        } else {
            assert_eq!(x.to_bits(), top_half.to_bits(), "bf16 {h:#06x}");
        }
    }
    // A few by value: 1, −2, the largest f16, the smallest subnormal, 1/3 rounded.
    let f16 = read(Dtype::F16);
    for (h, want) in [
        (0x3c00, 1.0),
        (0xc000, -2.0),
        (0x7bff, 65504.0),
        (0x0001, 2f32.powi(-24)),
        (0x3555, 0.333_251_95),
        (0xfc00, f32::NEG_INFINITY),
    ] {
        assert_eq!(f16[h], want);
    }
}
