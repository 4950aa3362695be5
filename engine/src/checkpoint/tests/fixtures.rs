//! Fixtures of the checkpoint tests: a tiny checkpoint, and safetensors files rewritten
//! (renamed, retyped, header edited) to test what loads and what is refused.

use crate::checkpoint::dtype::{f32_bytes, to_f32};
use crate::checkpoint::{load, Checkpoint, CheckpointFiles};
use crate::config::BertConfig;
use crate::model::BertForPreTraining;
use crate::rng::Rng;
use crate::tokenizer::build_word_vocab;
use crate::tokenizer::Tokenizer;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};

const CORPUS: &str = "the cat sat on the mat. the dog ate the bone.";

pub(super) fn tiny_checkpoint() -> Checkpoint {
    let vocab = build_word_vocab(CORPUS).unwrap();
    let mut config = BertConfig::new(vocab.len(), 8, 2, 2, 16);
    config.max_position_embeddings = 16;
    let model = BertForPreTraining::init(&config, &mut Rng::new(1)).unwrap();
    Checkpoint::new(model, Tokenizer::word_piece(vocab, true)).unwrap()
}

/// Re-encodes `files.safetensors`: `rename` maps (or drops) each stored name, `dtype` picks
/// the stored type of each tensor.
pub(super) fn rewrite(
    files: &CheckpointFiles,
    rename: impl Fn(&str) -> Option<String>,
    dtype: impl Fn(&str) -> Dtype,
) -> CheckpointFiles {
    let st = SafeTensors::deserialize(&files.safetensors).unwrap();
    let mut tensors = vec![];
    for (name, view) in st.tensors() {
        let Some(new_name) = rename(&name) else {
            continue;
        };
        let values = to_f32(&name, &view).unwrap();
        let kind = dtype(&new_name);
        let bytes: Vec<u8> = match kind {
            Dtype::F32 => f32_bytes(values.iter()),
            Dtype::BF16 => values
                .iter()
                .flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes())
                .collect(),
            Dtype::I64 => values
                .iter()
                .flat_map(|x| (*x as i64).to_le_bytes())
                .collect(),
            _ => unreachable!(),
        };
        tensors.push((new_name, view.shape().to_vec(), kind, bytes));
    }
    let views = tensors
        .iter()
        .map(|(n, s, k, b)| (n.clone(), TensorView::new(*k, s.clone(), b).unwrap()));
    CheckpointFiles {
        safetensors: safetensors::tensor::serialize(views, None).unwrap(),
        ..files.clone()
    }
}

pub(super) fn f32_only(_: &str) -> Dtype {
    Dtype::F32
}

pub(super) fn load_err(files: &CheckpointFiles) -> String {
    load(files).unwrap_err().to_string()
}

/// Replaces the safetensors JSON header, keeping the data.
pub(super) fn with_header(
    files: &CheckpointFiles,
    edit: impl Fn(&mut serde_json::Value),
) -> CheckpointFiles {
    let bytes = &files.safetensors;
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    edit(&mut header);
    let text = serde_json::to_vec(&header).unwrap();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend(text);
    out.extend(&bytes[8 + n..]);
    CheckpointFiles {
        safetensors: out,
        ..files.clone()
    }
}
