//! What one snapshot of the probe costs on the wire for the tiny preset at T = 32, with the
//! whole layer, the embeddings, the heads and the rollout traced (the page's budget).

use engine::inspect::inspect;
use engine::train::Trainer;
use protocol::{wire, FromWorker, LabSettings, ProbeInput, DEFAULT_CORPUS};

#[test]
fn a_tiny_snapshot_at_t32_stays_within_its_budget() {
    let settings = LabSettings::default();
    let config = settings.preset.config();
    let t = Trainer::from_corpus(
        DEFAULT_CORPUS,
        config.clone(),
        settings.train_settings(settings.kind(), config.max_position_embeddings),
        0,
    )
    .unwrap();
    let probe = ProbeInput::default();
    let mut ins = inspect(
        &t.model,
        &t.tokenizer,
        &probe.text,
        Some(&probe.pair),
        probe.mask,
        Some(32),
    )
    .unwrap();
    ins.mlm_logits = None; // as the worker sends it
    let size = |ins: &engine::inspect::Inspection| {
        let message = FromWorker::Inspected {
            step: 0,
            at: None,
            result: Ok(ins.clone()),
            compare: None,
        };
        wire::encode(&message).unwrap().len()
    };
    let now = size(&ins);
    // Without issue 12's fields, for comparison.
    let mut before = ins.clone();
    before.rollout = Default::default();
    before.trace.heads = Default::default();
    for m in [
        &mut before.trace.word_embeddings,
        &mut before.trace.position_embeddings,
        &mut before.trace.token_type_embeddings,
        &mut before.trace.embeddings_sum,
    ] {
        *m = Default::default();
    }
    for l in &mut before.trace.layers {
        l.attention_norm = Default::default();
        l.intermediate_pre = Default::default();
        l.intermediate = Default::default();
        l.ffn_output = Default::default();
    }
    let before = size(&before);
    eprintln!("snapshot: {now} bytes (without the new fields: {before} bytes)");
    // The FFN's T×I twice per layer is most of the growth.
    assert!(now < 600_000, "{now} bytes");
}
