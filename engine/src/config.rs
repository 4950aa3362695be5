//! `config.json` as Hugging Face writes it for BERT (and RoFormer, read as a rotary BERT), with
//! the checks of each field: every size is bounded before anything is allocated. The bound on
//! the total they imply is `model::validate_config`'s (only the description of the parameters
//! knows the count), which every model constructor runs.

use crate::error::{EngineError, Result};
use crate::ops::attention_options::{Attention, AttentionKernel, Softmax};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Size limits, checked before any allocation. They are far above every model this lab trains
/// or inspects (MiniLM, BERT-base and -large, RoFormer) and keep a hand-edited config from
/// asking for more memory than a browser tab (4 GiB of wasm32 address space) has.
pub const MAX_VOCAB_SIZE: usize = 262_144; // 2^18: XLM-R's 250,002 fits
pub const MAX_HIDDEN_SIZE: usize = 8_192;
pub const MAX_INTERMEDIATE_SIZE: usize = 32_768; // 4 × MAX_HIDDEN_SIZE
pub const MAX_HIDDEN_LAYERS: usize = 128;
pub const MAX_ATTENTION_HEADS: usize = 256;
pub const MAX_POSITION_EMBEDDINGS: usize = 65_536;

/// The longest input a rotary or ALiBi model inspects or generates, at least
/// (`max_input_tokens`): BERT's own P. A traced pass keeps several T×T matrices per head, so
/// this stays a sentence's or a paragraph's length, not a book's.
pub const ROTARY_INPUT_TOKENS: usize = 512;
pub const MAX_TYPE_VOCAB_SIZE: usize = 1_024;

/// Each choice is written and read as its `Display` name in every format, config.json and the
/// page's postcard messages alike, so one type serves both; a name not in `ALL` is an error
/// that names the key and the names it takes.
macro_rules! named_choice {
    ($choice:ty, $key:literal) => {
        impl TryFrom<String> for $choice {
            type Error = String;
            fn try_from(s: String) -> std::result::Result<Self, String> {
                Self::ALL
                    .into_iter()
                    .find(|c| c.to_string() == s)
                    .ok_or_else(|| {
                        let names: Vec<String> =
                            Self::ALL.iter().map(|c| format!("\"{c}\"")).collect();
                        format!("{} {s:?} is not supported (only {})", $key, or_list(&names))
                    })
            }
        }

        impl From<$choice> for String {
            fn from(c: $choice) -> String {
                c.to_string()
            }
        }
    };
}

/// "a, b or c".
fn or_list(names: &[String]) -> String {
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

named_choice!(PositionEmbeddingType, "position_embedding_type");
named_choice!(AttentionType, "attention_type");
named_choice!(AttentionScaling, "attention_scaling");

/// How positions enter the model: learned `position_embeddings` added to the input
/// (`"absolute"`, BERT), rotations of q and k in every layer (`"rotary"`, RoFormer), or a bias
/// −m_h·|i − j| on every head's scaled scores (`"alibi"`, Press et al. 2022, BLOOM's slopes
/// m_h: `ops::attention_options::alibi_slope`). Rotary and ALiBi have no tensor and no length
/// limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum PositionEmbeddingType {
    #[default]
    Absolute,
    Rotary,
    Alibi,
}

/// softmax(QKᵀ/√D)·V (`"softmax"`, BERT), or φ(Q)(φ(K)ᵀV) normalised, φ = elu + 1
/// (`"linear"`, Katharopoulos et al. 2020).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum AttentionType {
    #[default]
    Softmax,
    Linear,
}

/// What the scores QKᵀ are multiplied by before the mask and softmax: 1/√d_k (`"sqrt"`, BERT
/// and the tutorial's formula) or 1 (`"none"`), to show what the scaling is for. Linear
/// attention has no scores, so it has no scaling to choose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum AttentionScaling {
    #[default]
    InverseSqrtHeadSize,
    None,
}

impl AttentionScaling {
    pub const ALL: [AttentionScaling; 2] = [
        AttentionScaling::InverseSqrtHeadSize,
        AttentionScaling::None,
    ];

    /// The page's name for it.
    pub fn label(self) -> &'static str {
        match self {
            Self::InverseSqrtHeadSize => "÷√d_k",
            Self::None => "None",
        }
    }

    /// The factor on QKᵀ for heads of `head_size` (d_k).
    pub fn factor(self, head_size: usize) -> f32 {
        match self {
            Self::InverseSqrtHeadSize => 1.0 / (head_size as f32).sqrt(),
            Self::None => 1.0,
        }
    }

    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl fmt::Display for AttentionScaling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::InverseSqrtHeadSize => "sqrt",
            Self::None => "none",
        })
    }
}

impl PositionEmbeddingType {
    pub const ALL: [PositionEmbeddingType; 3] = [
        PositionEmbeddingType::Absolute,
        PositionEmbeddingType::Rotary,
        PositionEmbeddingType::Alibi,
    ];

    /// The page's name for it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Absolute => "Absolute",
            Self::Rotary => "Rotary",
            Self::Alibi => "ALiBi",
        }
    }

    /// Whether these positions work with this attention type: ALiBi biases softmax scores,
    /// and linear attention has none. The one rule the config, the settings and the page
    /// read.
    pub fn refuses(self, attention: AttentionType) -> Option<&'static str> {
        match (self, attention) {
            (Self::Alibi, AttentionType::Linear) => Some(
                "ALiBi adds its bias to the softmax scores, and linear attention has no scores: use softmax attention with ALiBi positions",
            ),
            _ => None,
        }
    }
}

impl AttentionType {
    pub const ALL: [AttentionType; 2] = [AttentionType::Softmax, AttentionType::Linear];

    /// The page's name for it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Softmax => "Softmax",
            Self::Linear => "Linear",
        }
    }

    /// The softmax choices this type uses: all of them, or none (linear attention has no
    /// kernel to choose and no window). The explorer greys them out for a linear model, and
    /// a choice left from another model does not apply to it.
    pub fn applicable(self, softmax: Softmax) -> Softmax {
        match self {
            AttentionType::Softmax => softmax,
            AttentionType::Linear => Softmax::default(),
        }
    }

    /// The scaling this type uses: linear attention has no scores, so only the default.
    pub fn applicable_scaling(self, scaling: AttentionScaling) -> AttentionScaling {
        match self {
            AttentionType::Softmax => scaling,
            AttentionType::Linear => AttentionScaling::default(),
        }
    }

    /// What a model of this type computes, given how the call would run softmax: linear
    /// attention has no kernel to choose and no window, so asking it for either is an error.
    pub fn with(self, softmax: Softmax) -> Result<Attention> {
        match (self, softmax) {
            (AttentionType::Softmax, softmax) => Ok(Attention::Softmax(softmax)),
            (AttentionType::Linear, Softmax { window: Some(_), .. }) => Err(EngineError::Input(
                "linear attention with a sliding window is not supported: its running sums cover every earlier key".into(),
            )),
            (AttentionType::Linear, Softmax { kernel: AttentionKernel::Tiled { .. }, .. }) => {
                Err(EngineError::Input(
                    "linear attention has no softmax to tile: use --attention full with it".into(),
                ))
            }
            (AttentionType::Linear, _) => Ok(Attention::Linear),
        }
    }
}

impl fmt::Display for PositionEmbeddingType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Absolute => "absolute",
            Self::Rotary => "rotary",
            Self::Alibi => "alibi",
        })
    }
}

impl fmt::Display for AttentionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Softmax => "softmax",
            Self::Linear => "linear",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    /// G, the number of K/V groups (grouped-query attention; 1 = multi-query). Absent = H.
    /// Written only when set, so a BERT config round-trips unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_key_value_heads: Option<usize>,
    pub intermediate_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_dropout")]
    pub hidden_dropout_prob: f32,
    #[serde(default = "default_dropout")]
    pub attention_probs_dropout_prob: f32,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "default_type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_init")]
    pub initializer_range: f32,
    #[serde(default)]
    pub pad_token_id: usize,
    /// HF BertConfig's own key ("absolute" is its default); RoFormer configs have none and are
    /// read as "rotary" (`from_json`).
    #[serde(default)]
    pub position_embedding_type: PositionEmbeddingType,
    /// Not an HF BERT key; transformers keeps unknown keys as plain attributes.
    #[serde(default)]
    pub attention_type: AttentionType,
    /// Not an HF key either: ÷√d_k unless it says `"none"`. Written only when not the default,
    /// so a BERT config round-trips unchanged.
    #[serde(default, skip_serializing_if = "AttentionScaling::is_default")]
    pub attention_scaling: AttentionScaling,
    /// HF's `is_decoder`: a `BertLMHeadModel`, whose self-attention is causal (query i sees
    /// keys j ≤ i whatever mask a call asks for) and which is trained to predict the next
    /// token. Written only when true, so a BERT config round-trips unchanged.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_decoder: bool,
    /// HF's `add_cross_attention`: every layer also attends to an encoder's output (the decoder
    /// of an `EncoderDecoderModel`). Written only when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub add_cross_attention: bool,
    /// Everything else HF wrote (model_type, architectures, …), kept so a saved config round-trips.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn default_act() -> String {
    "gelu".into()
}
fn default_dropout() -> f32 {
    0.1
}
fn default_positions() -> usize {
    512
}
fn default_type_vocab() -> usize {
    2
}
fn default_eps() -> f64 {
    1e-12
}
fn default_init() -> f32 {
    0.02
}

impl BertConfig {
    /// A BERT with HF's defaults for everything but its size.
    pub fn new(
        vocab: usize,
        hidden: usize,
        layers: usize,
        heads: usize,
        intermediate: usize,
    ) -> Self {
        let mut extra = serde_json::Map::new();
        extra.insert("model_type".into(), "bert".into());
        extra.insert(
            "architectures".into(),
            serde_json::json!(["BertForPreTraining"]),
        );
        BertConfig {
            vocab_size: vocab,
            hidden_size: hidden,
            num_hidden_layers: layers,
            num_attention_heads: heads,
            num_key_value_heads: None,
            intermediate_size: intermediate,
            hidden_act: default_act(),
            hidden_dropout_prob: default_dropout(),
            attention_probs_dropout_prob: default_dropout(),
            max_position_embeddings: default_positions(),
            type_vocab_size: default_type_vocab(),
            layer_norm_eps: default_eps(),
            initializer_range: default_init(),
            pad_token_id: 0,
            position_embedding_type: PositionEmbeddingType::Absolute,
            attention_type: AttentionType::Softmax,
            attention_scaling: AttentionScaling::default(),
            is_decoder: false,
            add_cross_attention: false,
            extra,
        }
    }

    /// Preset "tiny": hidden 64, 2 layers, 4 heads, intermediate 256.
    pub fn tiny(vocab: usize) -> Self {
        let mut c = Self::new(vocab, 64, 2, 4, 256);
        c.max_position_embeddings = 128;
        c
    }

    /// Preset "small": hidden 256, 4 layers, 4 heads, intermediate 1024.
    pub fn small(vocab: usize) -> Self {
        let mut c = Self::new(vocab, 256, 4, 4, 1024);
        c.max_position_embeddings = 128;
        c
    }

    /// This config as a `BertLMHeadModel`'s: `is_decoder`, and the architecture HF builds
    /// from it.
    pub fn decoder(mut self) -> Self {
        self.is_decoder = true;
        self.extra.insert(
            "architectures".into(),
            serde_json::json!(["BertLMHeadModel"]),
        );
        self
    }

    /// Parses and validates a config.json. A RoFormer config (`model_type: "roformer"`) is a
    /// BERT with rotary positions: it is read as `position_embedding_type: "rotary"`.
    pub fn from_json(text: &str) -> Result<Self> {
        let model_type = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("model_type")?.as_str().map(str::to_string));
        if model_type.as_deref() == Some("encoder-decoder") {
            return Err(EngineError::Config(
                "this is an encoder–decoder checkpoint (EncoderDecoderModel), two BERTs in one: \
                 read it as one (`seq2seq::load`, as the page's Load and the command line do), \
                 not as a single BERT"
                    .into(),
            ));
        }
        let mut config: BertConfig = serde_json::from_str(text)
            .map_err(|e| EngineError::Config(format!("config.json is not a BERT config: {e}")))?;
        if config.is_roformer() {
            config.position_embedding_type = PositionEmbeddingType::Rotary;
        }
        config.validate()?;
        Ok(config)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a config always serialises")
    }

    /// `model_type: "roformer"`.
    pub fn is_roformer(&self) -> bool {
        self.extra.get("model_type").and_then(|v| v.as_str()) == Some("roformer")
    }

    /// The longest input one traced pass takes (inspection, generation): P with learned
    /// absolute positions, which stop there. Rotary and ALiBi positions have no table, so at
    /// least [`ROTARY_INPUT_TOKENS`], whatever P. (A training batch keeps to P either way: its T×T
    /// weights are kept for backward. Every forward also refuses weights past
    /// `ops::attention_options::MAX_WEIGHT_BYTES`.)
    pub fn max_input_tokens(&self) -> usize {
        match self.position_embedding_type {
            PositionEmbeddingType::Absolute => self.max_position_embeddings,
            PositionEmbeddingType::Rotary | PositionEmbeddingType::Alibi => {
                self.max_position_embeddings.max(ROTARY_INPUT_TOKENS)
            }
        }
    }

    /// D = C / H.
    pub fn head_size(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// G, the number of K/V groups: `num_key_value_heads`, H when absent.
    pub fn num_kv_heads(&self) -> usize {
        self.num_key_value_heads.unwrap_or(self.num_attention_heads)
    }

    pub fn validate(&self) -> Result<()> {
        let err = |m: String| Err(EngineError::Config(m));
        let sizes = [
            ("vocab_size", self.vocab_size, MAX_VOCAB_SIZE),
            ("hidden_size", self.hidden_size, MAX_HIDDEN_SIZE),
            (
                "num_hidden_layers",
                self.num_hidden_layers,
                MAX_HIDDEN_LAYERS,
            ),
            (
                "num_attention_heads",
                self.num_attention_heads,
                MAX_ATTENTION_HEADS,
            ),
            (
                "intermediate_size",
                self.intermediate_size,
                MAX_INTERMEDIATE_SIZE,
            ),
            (
                "max_position_embeddings",
                self.max_position_embeddings,
                MAX_POSITION_EMBEDDINGS,
            ),
            ("type_vocab_size", self.type_vocab_size, MAX_TYPE_VOCAB_SIZE),
        ];
        for (name, value, limit) in sizes {
            if value == 0 {
                return err(format!("{name} must be positive"));
            }
            if value > limit {
                return err(format!("{name} {value} is too large: the limit is {limit}"));
            }
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return err(format!(
                "hidden_size {} is not divisible by num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if let Some(g) = self.num_key_value_heads {
            if g == 0 || !self.num_attention_heads.is_multiple_of(g) {
                return err(format!(
                    "num_key_value_heads {g} must be a positive divisor of num_attention_heads {}",
                    self.num_attention_heads
                ));
            }
        }
        if self.position_embedding_type == PositionEmbeddingType::Rotary
            && !self.head_size().is_multiple_of(2)
        {
            return err(format!(
                "rotary positions rotate pairs of dimensions: the head size hidden_size / num_attention_heads = {} must be even",
                self.head_size()
            ));
        }
        if let Some(why) = self.position_embedding_type.refuses(self.attention_type) {
            return err(why.into());
        }
        if self.attention_type == AttentionType::Linear
            && self.attention_scaling != AttentionScaling::default()
        {
            return err(format!(
                "attention_scaling {:?} does not apply to linear attention: it has no scores to scale",
                self.attention_scaling.to_string()
            ));
        }
        if self.is_roformer() {
            self.validate_roformer()?;
        }
        if !matches!(self.hidden_act.as_str(), "gelu" | "gelu_python") {
            return err(format!(
                "unknown activation {:?}: only the exact erf GELU (\"gelu\") is supported",
                self.hidden_act
            ));
        }
        for (name, p) in [
            ("hidden_dropout_prob", self.hidden_dropout_prob),
            (
                "attention_probs_dropout_prob",
                self.attention_probs_dropout_prob,
            ),
        ] {
            if !(0.0..1.0).contains(&p) {
                return err(format!("{name} must be in [0, 1), got {p}"));
            }
        }
        if !(self.layer_norm_eps > 0.0 && self.layer_norm_eps.is_finite()) {
            return err(format!(
                "layer_norm_eps must be positive, got {}",
                self.layer_norm_eps
            ));
        }
        if self.pad_token_id >= self.vocab_size {
            return err(format!(
                "pad_token_id {} is outside the vocabulary of {}",
                self.pad_token_id, self.vocab_size
            ));
        }
        Ok(())
    }

    /// What of RoFormer the engine does not have: a projection from a smaller embedding
    /// (`embeddings_project`, present when embedding_size ≠ hidden_size) and rotated values.
    fn validate_roformer(&self) -> Result<()> {
        let err = |m: String| Err(EngineError::Config(m));
        if self.position_embedding_type != PositionEmbeddingType::Rotary {
            return err(format!(
                "a RoFormer config has rotary positions, not position_embedding_type {:?}",
                self.position_embedding_type.to_string()
            ));
        }
        match self.extra.get("embedding_size") {
            None | Some(serde_json::Value::Null) => {}
            Some(v) if v.as_u64() == Some(self.hidden_size as u64) => {}
            Some(v) => {
                return err(format!(
                    "RoFormer embedding_size {v} differs from hidden_size {}: the projection embeddings_project is not supported",
                    self.hidden_size
                ))
            }
        }
        match self.extra.get("rotary_value") {
            None | Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(false)) => {}
            Some(v) => {
                return err(format!(
                    "RoFormer rotary_value {v} is not supported: only q and k are rotated (rotary_value false)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_hidden_not_divisible_by_heads() {
        let mut c = BertConfig::tiny(100);
        c.num_attention_heads = 5;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("not divisible"), "{e}");
    }

    /// Found by the fuzzer: serde_json's default float parser can read a number one ulp off
    /// what it wrote, so a saved config changed when read back.
    #[test]
    fn floats_read_back_exactly() {
        let text = r#"{"vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "intermediate_size": 256,
            "attention_probs_dro:`pout_prob": 1810485764850.5761576128}"#;
        let config = BertConfig::from_json(text).unwrap();
        assert_eq!(BertConfig::from_json(&config.to_json()).unwrap(), config);
    }

    #[test]
    fn rejects_unknown_activation_and_keeps_unknown_fields() {
        let mut c = BertConfig::tiny(100);
        c.hidden_act = "swish".into();
        assert!(c.validate().unwrap_err().to_string().contains("swish"));
        let text = BertConfig::tiny(100).to_json();
        let back = BertConfig::from_json(&text).unwrap();
        assert_eq!(back.extra.get("model_type").unwrap(), "bert");
        assert_eq!(back, BertConfig::tiny(100));
    }

    #[test]
    fn every_size_is_bounded_before_allocating() {
        // 1,048,576 × 1,048,576 word embeddings alone would be 4 TB: refused by the check,
        // which never builds a tensor.
        let mut c = BertConfig::tiny(100);
        c.hidden_size = 1_048_576;
        let e = c.validate().unwrap_err().to_string();
        assert_eq!(
            e,
            "config: hidden_size 1048576 is too large: the limit is 8192"
        );
        for (field, value) in [
            ("vocab_size", MAX_VOCAB_SIZE + 1),
            ("num_hidden_layers", 1 << 20),
            ("num_attention_heads", 1 << 20),
            ("intermediate_size", 1 << 30),
            ("max_position_embeddings", usize::MAX),
            ("type_vocab_size", 1 << 20),
        ] {
            let mut json = serde_json::to_value(BertConfig::tiny(100)).unwrap();
            json[field] = value.into();
            let e = BertConfig::from_json(&json.to_string())
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("{field} {value} is too large")), "{e}");
        }
    }

    #[test]
    fn variant_fields_default_to_bert_and_reject_unknown_values() {
        let old = r#"{"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
                      "num_attention_heads": 2, "intermediate_size": 16}"#;
        let c = BertConfig::from_json(old).unwrap();
        assert_eq!(c.num_kv_heads(), 2);
        assert_eq!(c.num_key_value_heads, None);
        assert_eq!(c.position_embedding_type, PositionEmbeddingType::Absolute);
        assert_eq!(c.attention_type, AttentionType::Softmax);
        let json = c.to_json();
        assert!(
            json.contains("\"position_embedding_type\": \"absolute\""),
            "{json}"
        );
        assert!(!json.contains("num_key_value_heads"), "{json}");

        let with = |extra: &str| old.replace('}', &format!(", {extra}}}"));
        let c = BertConfig::from_json(&with(
            r#""num_key_value_heads": 1, "position_embedding_type": "rotary", "attention_type": "linear""#,
        ))
        .unwrap();
        assert_eq!(c.num_kv_heads(), 1);
        assert_eq!(c.position_embedding_type, PositionEmbeddingType::Rotary);
        assert_eq!(c.attention_type, AttentionType::Linear);
        assert_eq!(BertConfig::from_json(&c.to_json()).unwrap(), c);

        for (extra, needle) in [
            (
                r#""position_embedding_type": "relative_key""#,
                "relative_key",
            ),
            (r#""attention_type": "performer""#, "performer"),
            (r#""num_key_value_heads": 3"#, "divisor"),
            (r#""num_key_value_heads": 0"#, "divisor"),
        ] {
            let e = BertConfig::from_json(&with(extra)).unwrap_err().to_string();
            assert!(
                e.contains(needle) && e.contains("not supported") || e.contains(needle),
                "{e}"
            );
        }
        let e = BertConfig::from_json(&with(r#""position_embedding_type": "relative_key""#))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("only \"absolute\", \"rotary\" or \"alibi\""),
            "{e}"
        );
    }

    #[test]
    fn alibi_reads_back_and_refuses_linear_attention() {
        let mut c = BertConfig::tiny(100);
        c.position_embedding_type = PositionEmbeddingType::Alibi;
        let json = c.to_json();
        assert!(
            json.contains("\"position_embedding_type\": \"alibi\""),
            "{json}"
        );
        assert_eq!(BertConfig::from_json(&json).unwrap(), c);
        // No table: longer inputs than P, as for rotary.
        assert_eq!(c.max_input_tokens(), ROTARY_INPUT_TOKENS);
        c.attention_type = AttentionType::Linear;
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("ALiBi") && e.contains("linear attention"), "{e}");
    }

    #[test]
    fn attention_scaling_none_is_read_written_and_refused_for_linear_attention() {
        let old = BertConfig::tiny(10).to_json();
        assert!(!old.contains("attention_scaling"), "{old}");
        let c = BertConfig::from_json(&old).unwrap();
        assert_eq!(c.attention_scaling, AttentionScaling::InverseSqrtHeadSize);
        assert_eq!(c.attention_scaling.factor(16), 0.25);
        let none = old.replacen('{', r#"{"attention_scaling": "none", "#, 1);
        let c = BertConfig::from_json(&none).unwrap();
        assert_eq!(c.attention_scaling, AttentionScaling::None);
        assert_eq!(c.attention_scaling.factor(16), 1.0);
        assert!(c.to_json().contains("\"attention_scaling\": \"none\""));
        assert_eq!(BertConfig::from_json(&c.to_json()).unwrap(), c);
        let e = BertConfig::from_json(&old.replacen('{', r#"{"attention_scaling": "sqrt2", "#, 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("only \"sqrt\" or \"none\""), "{e}");
        let linear = none.replace(
            r#""attention_type": "softmax""#,
            r#""attention_type": "linear""#,
        );
        let e = BertConfig::from_json(&linear).unwrap_err().to_string();
        assert!(e.contains("no scores to scale"), "{e}");
    }

    #[test]
    fn roformer_configs_read_as_rotary_with_their_limits() {
        let roformer = |extra: &str| {
            format!(
                r#"{{"model_type": "roformer", "vocab_size": 10, "hidden_size": 8,
                    "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16,
                    "max_position_embeddings": 64{extra}}}"#
            )
        };
        let c = BertConfig::from_json(&roformer(r#", "embedding_size": 8, "rotary_value": false"#))
            .unwrap();
        assert_eq!(c.position_embedding_type, PositionEmbeddingType::Rotary);
        assert_eq!(BertConfig::from_json(&c.to_json()).unwrap(), c);
        let e = BertConfig::from_json(&roformer(r#", "embedding_size": 4"#))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("embedding_size 4") && e.contains("embeddings_project"),
            "{e}"
        );
        let e = BertConfig::from_json(&roformer(r#", "rotary_value": true"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("rotary_value"), "{e}");
        // Rotary pairs need an even head size.
        let mut c = BertConfig::new(10, 6, 1, 2, 8);
        c.position_embedding_type = PositionEmbeddingType::Rotary;
        assert!(c.validate().unwrap_err().to_string().contains("even"));
    }

    #[test]
    fn an_encoder_decoder_config_says_what_it_is() {
        let e = BertConfig::from_json(
            r#"{"model_type": "encoder-decoder", "encoder": {}, "decoder": {}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("encoder–decoder checkpoint"), "{e}");
    }

    #[test]
    fn linear_attention_refuses_a_softmax_kernel_or_window() {
        let tiled = Softmax {
            kernel: AttentionKernel::Tiled { block: 4 },
            window: None,
        };
        let window = Softmax {
            window: Some(3),
            ..Softmax::default()
        };
        for (softmax, needle) in [(tiled, "tile"), (window, "window")] {
            let e = AttentionType::Linear.with(softmax).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
            assert_eq!(
                AttentionType::Softmax.with(softmax).unwrap(),
                Attention::Softmax(softmax)
            );
        }
        assert_eq!(
            AttentionType::Linear.with(Softmax::default()).unwrap(),
            Attention::Linear
        );
    }

    #[test]
    fn malformed_json_is_an_error_not_a_panic() {
        assert!(BertConfig::from_json("{").is_err());
        assert!(BertConfig::from_json("{\"hidden_size\": 8}").is_err());
    }
}
