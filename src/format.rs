//! Numbers and models in words, as the page shows them.

use protocol::{ModelInfo, WorkersInUse};

/// The model in one line, for the header: its shape, vocabulary and size, and, when the
/// corpus had more words than the vocabulary holds, how many of them it kept.
/// How many workers train, as the header says it: "2 workers", or "1 worker: why not more".
pub fn workers(w: &WorkersInUse) -> String {
    let count = match w.using {
        1 => "Training on 1 worker".to_string(),
        n => format!("Training on {n} workers"),
    };
    match &w.why {
        Some(why) => format!("{count}: {why}"),
        None => count,
    }
}

pub fn facts(info: &ModelInfo) -> String {
    let mut facts = format!(
        "{} layers × {} heads{} · hidden {} · {}-token {} vocabulary · {} parameters",
        info.layers,
        info.heads,
        architecture(info),
        info.hidden,
        thousands(info.vocab_size),
        info.tokenizer,
        millions(info.parameters),
    );
    if info.kind.decoder() {
        facts += " · decoder (causal, next token)";
    }
    if info.kind.encoder_decoder() {
        facts += " · encoder–decoder (two of these; the decoder's layers add cross-attention)";
    }
    let kept_words = info
        .vocab_size
        .saturating_sub(engine::vocab::SPECIAL_TOKENS.len());
    if let Some(words) = info.corpus_words.filter(|&w| w > kept_words) {
        facts += &format!(
            " (the {} most frequent of the corpus's {} words; the rest read as [UNK])",
            thousands(kept_words),
            thousands(words)
        );
    }
    facts
}

/// The attention architecture as the facts line states it: " · GQA 2 KV heads · rotary ·
/// linear attention", each part only when it is not BERT's (multi-head, absolute, softmax).
pub fn architecture(info: &ModelInfo) -> String {
    info.architecture.describe(info.heads).departures()
}

/// The attention architecture named in full, BERT's parts too ("multi-head · absolute ·
/// softmax"), to tell Compare's two models apart.
pub fn architecture_name(info: &ModelInfo) -> String {
    info.architecture.describe(info.heads).name()
}

/// An ALiBi slope: a power of two as a fraction ("1/4", "1/256"), the half steps of head
/// counts that are not powers of two (2^(−0.5), …) as decimals ("0.707").
pub fn slope(m: f32) -> String {
    let inverse = 1.0 / m;
    if inverse.fract() == 0.0 {
        format!("1/{inverse}")
    } else {
        format!("{m:.3}")
    }
}

/// 12345 → "12,345".
pub fn thousands(n: usize) -> String {
    protocol::claims::thousands(n as u64)
}

/// 234567 → "0.23 M", 22713216 → "22.7 M".
pub fn millions(n: usize) -> String {
    let m = n as f64 / 1e6;
    if m < 10.0 {
        format!("{m:.2} M")
    } else {
        format!("{m:.1} M")
    }
}

/// Bytes as people read them (decimal units, like the engine's size check).
pub fn format_bytes(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} bytes"),
        1_000..1_000_000 => format!("{:.0} kB", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.0} MB", n as f64 / 1e6),
        _ => format!("{:.1} GB", n as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn info(vocab_size: usize, corpus_words: Option<usize>) -> ModelInfo {
        ModelInfo {
            name: "tiny".into(),
            layers: 2,
            heads: 4,
            hidden: 64,
            head_size: 16,
            intermediate: 256,
            max_positions: 128,
            vocab_size,
            parameters: 234_567,
            tokenizer: "word-level".into(),
            corpus_words,
            architecture: Default::default(),
            kind: protocol::ModelKind::Encoder,
        }
    }

    #[test]
    fn the_facts_line_names_shape_vocabulary_size_and_left_out_words() {
        let facts = facts(&info(300, Some(295)));
        assert_eq!(
            facts,
            "2 layers × 4 heads · hidden 64 · 300-token word-level vocabulary · 0.23 M parameters"
        );
        // 9,001 distinct words, 8,192 tokens of which 5 special: the line says what was kept.
        let big = super::facts(&info(8192, Some(9001)));
        assert!(
            big.contains("8,192-token word-level vocabulary")
                && big.contains("the 8,187 most frequent of the corpus's 9,001 words"),
            "{big}"
        );
    }

    #[test]
    fn the_facts_line_states_the_architecture() {
        use engine::config::{AttentionType, PositionEmbeddingType};
        let mut i = info(300, None);
        assert_eq!(architecture(&i), "");
        i.architecture.kv_heads = Some(2);
        i.architecture.positions = PositionEmbeddingType::Rotary;
        i.architecture.attention = AttentionType::Linear;
        assert!(
            facts(&i).starts_with(
                "2 layers × 4 heads · GQA 2 KV heads · rotary · linear attention · hidden 64"
            ),
            "{}",
            facts(&i)
        );
        i.architecture.kv_heads = Some(1);
        assert!(architecture(&i).starts_with(" · multi-query (1 KV head)"));
        i.architecture.kv_heads = Some(4);
        assert_eq!(architecture(&i), " · rotary · linear attention");
        i.architecture.attention = AttentionType::Softmax;
        i.architecture.scaling = engine::config::AttentionScaling::None;
        assert_eq!(architecture(&i), " · rotary · unscaled scores");
        assert_eq!(
            architecture_name(&i),
            "multi-head · rotary · softmax · unscaled"
        );
    }

    #[test]
    fn slopes_read_as_fractions_or_decimals() {
        assert_eq!(slope(0.25), "1/4");
        assert_eq!(slope(2f32.powi(-8)), "1/256");
        assert_eq!(slope(2f32.powf(-0.5)), "0.707");
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(
            (thousands(7), thousands(1234567)),
            ("7".into(), "1,234,567".into())
        );
        assert_eq!(
            (millions(234_567), millions(22_713_216)),
            ("0.23 M".into(), "22.7 M".into())
        );
        assert_eq!(format_bytes(612), "612 bytes");
        assert_eq!(format_bytes(231_508), "232 kB");
        assert_eq!(format_bytes(90_868_376), "91 MB");
        assert_eq!(format_bytes(2_147_483_648), "2.1 GB");
    }
}
