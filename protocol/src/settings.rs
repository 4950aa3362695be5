//! What the user sets: the run (`LabSettings`) and what the explorer shows (`ProbeInput`).

use crate::ModelKind;
use engine::batch::MaskMode;
use engine::config::{AttentionScaling, AttentionType, BertConfig, PositionEmbeddingType};
use engine::data::{max_predictions, BatchConfig};
use engine::default_run::DefaultRun;
use engine::ops::attention::AttentionKernel;
use engine::optim::{OptimizerConfig, OptimizerKind};
use engine::repeat::RepeatTask;
use engine::seq2seq::Task;
use engine::train::{Objective, TrainSettings};
use serde::{Deserialize, Serialize};

/// The built-in corpus: the default run's (`engine::default_run`).
pub const DEFAULT_CORPUS: &str = engine::default_run::DEFAULT_CORPUS;

/// The probe's first sentence pair: a [MASK] to predict, and a second sentence for NSP.
pub const DEFAULT_SENTENCE: &str = "the dog chases a [MASK] ball .";
/// A sentence of the Repeat task for the Sentence box: 12 distinct symbols, then the same 12.
/// A model that copies shows the stripe: its induction head's weights on the diagonal 11
/// places to the left of the main one (the token after the earlier occurrence, L − 1 back).
pub const REPEAT_SENTENCE: &str = "k f q a x m r d z b h t k f q a x m r d z b h t";
pub const DEFAULT_PAIR: &str = "the ball rolls under the tree .";

/// What the user asks the explorer to show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeInput {
    pub text: String,
    /// Empty = a single sentence.
    pub pair: String,
    pub pad_to: Option<usize>,
    pub mask: MaskMode,
    /// Sliding window W: query i sees key j only if |i − j| < W; None = the whole sequence
    /// (absent in probes kept before it existed).
    #[serde(default)]
    pub window: Option<usize>,
    /// How softmax attention is computed for this call (absent before: Full).
    #[serde(default)]
    pub attention: ProbeKernel,
    /// "Target": an encoder–decoder's output, read by its decoder after [CLS] (filled by
    /// Generate, or typed); `text` is then the source. Absent before it existed: empty.
    #[serde(default)]
    pub target: String,
}

/// The explorer's "Attention" select: the whole T×T matrix, or FlashAttention-2 tiles. Both
/// give the same weights; tiled also records its block schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKernel {
    #[default]
    Full,
    Tiled,
}

impl ProbeKernel {
    /// Rows per query and key block of tiled attention in the explorer, for a text of T tokens:
    /// 4, so that a sentence of a dozen tokens spans several blocks; more for long texts, so
    /// that a head's schedule stays within 8 × 8 blocks (512 tokens of MiniLM would otherwise
    /// record 16,384 steps a head, and take four hours to play).
    pub fn block(t: usize) -> usize {
        t.div_ceil(8).max(4)
    }

    pub fn kernel(self, t: usize) -> AttentionKernel {
        match self {
            ProbeKernel::Full => AttentionKernel::Full,
            ProbeKernel::Tiled => AttentionKernel::Tiled {
                block: Self::block(t),
            },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProbeKernel::Full => "Full",
            ProbeKernel::Tiled => "Tiled",
        }
    }
}

impl Default for ProbeInput {
    fn default() -> Self {
        ProbeInput {
            text: DEFAULT_SENTENCE.into(),
            pair: DEFAULT_PAIR.into(),
            pad_to: None,
            mask: MaskMode::Padding,
            window: None,
            attention: ProbeKernel::Full,
            target: String::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Preset {
    #[default]
    Tiny,
    Small,
}

impl Preset {
    pub const ALL: [Preset; 2] = [Preset::Tiny, Preset::Small];

    /// The preset's own shape (BERT: multi-head, absolute positions, softmax). Tiny is the
    /// default run's model (`engine::default_run`).
    pub fn config(self) -> BertConfig {
        match self {
            Preset::Tiny => DefaultRun::config(),
            Preset::Small => BertConfig::small(0),
        }
    }

    /// The name the panel's select and a fresh model's name use.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Tiny => "tiny",
            Preset::Small => "small",
        }
    }

    pub fn describe(self) -> String {
        let c = self.config();
        format!(
            "hidden {} · {} layers · {} heads · FFN {}",
            c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size
        )
    }
}

/// Everything the user can set about a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabSettings {
    pub preset: Preset,
    pub learning_rate: f64,
    pub batch_size: usize,
    pub mask_prob: f32,
    pub seed: u64,
    pub optimizer: OptimizerKind,
    /// The attention mask used in training ("None", "Padding" or "Causal").
    pub train_mask: MaskMode,
    /// T of the training batches.
    pub max_len: usize,
    /// "Fixed batch": train on one batch again and again (absent in settings kept before it
    /// existed: off).
    #[serde(default)]
    pub fixed_batch: bool,
    /// The attention architecture of the next fresh model (absent in settings kept before it
    /// existed: BERT's).
    #[serde(default)]
    pub architecture: Architecture,
    /// "Compare": model B's architecture; B trains beside the model on its batches. None =
    /// one model (absent in settings kept before it existed).
    #[serde(default)]
    pub compare: Option<Architecture>,
    /// "Objective": what a fresh model trains to do; next token makes it a decoder (absent
    /// in settings kept before it existed: MLM + NSP).
    #[serde(default)]
    pub objective: Objective,
    /// "Sequence to sequence" with its "Task": a fresh model is then an encoder–decoder
    /// trained on the task, and `objective` does not apply. None = one model (absent in
    /// settings kept before it existed).
    #[serde(default)]
    pub task: Option<Task>,
    /// "Next token"'s Task "Repeat": a fresh decoder trains on repeated random symbols
    /// (`engine::repeat`) instead of the corpus. Applies with the objective next token and no
    /// seq2seq task (`repeat_task`); false = the corpus (absent in settings kept before it
    /// existed).
    #[serde(default)]
    pub repeat: bool,
}

/// The training panel's "Architecture" group; it takes effect at the next Reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Architecture {
    /// "KV heads": G K/V groups, a divisor of the preset's heads; None = one per head (plain
    /// multi-head attention).
    #[serde(default)]
    pub kv_heads: Option<usize>,
    /// "Positions": absolute (learned) or rotary.
    #[serde(default)]
    pub positions: PositionEmbeddingType,
    /// "Attention": softmax or linear.
    #[serde(default)]
    pub attention: AttentionType,
    /// "Scaling": the scores ÷√d_k, or not at all (softmax attention only).
    #[serde(default)]
    pub scaling: AttentionScaling,
}

impl Architecture {
    /// `preset`'s config with this architecture.
    pub fn config(self, preset: Preset) -> BertConfig {
        let mut c = preset.config();
        c.num_key_value_heads = self.kv_heads.filter(|&g| g != c.num_attention_heads);
        c.position_embedding_type = self.positions;
        c.attention_type = self.attention;
        c.attention_scaling = self.attention.applicable_scaling(self.scaling);
        c
    }

    /// The architecture `config` has: what the header and the figures describe of a model.
    pub fn of(config: &BertConfig) -> Self {
        Architecture {
            kv_heads: config.num_key_value_heads,
            positions: config.position_embedding_type,
            attention: config.attention_type,
            scaling: config.attention_scaling,
        }
    }
}

/// An architecture put into words: the one place one is (the header's facts, Compare's names,
/// a link's notices, the claims). Positions read as in a sentence, "absolute", "rotary",
/// "ALiBi" (an acronym keeps its capitals); a link's values are the engine's names
/// (`Display`), not these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Described {
    architecture: Architecture,
    /// H, the heads its K/V groups share.
    heads: usize,
}

impl Architecture {
    /// This architecture in words, for a model of `heads` heads.
    pub fn describe(self, heads: usize) -> Described {
        Described {
            architecture: self,
            heads,
        }
    }
}

impl Described {
    /// G, the K/V groups (H when each head has its own).
    fn groups(self) -> usize {
        self.architecture.kv_heads.unwrap_or(self.heads)
    }

    /// "multi-head", "multi-query" or "GQA 2 KV heads".
    pub fn kv(self) -> String {
        match self.groups() {
            g if g == self.heads => "multi-head".into(),
            1 => "multi-query".into(),
            g => format!("GQA {g} KV heads"),
        }
    }

    pub fn positions(self) -> &'static str {
        positions_words(self.architecture.positions)
    }

    pub fn attention(self) -> &'static str {
        match self.architecture.attention {
            AttentionType::Softmax => "softmax",
            AttentionType::Linear => "linear",
        }
    }

    /// Every part named, to tell two models apart: "multi-head · rotary · softmax", with
    /// " · unscaled" where the scores are not divided (BERT's ÷√d_k goes without saying).
    pub fn name(self) -> String {
        let scaling = match self.architecture.scaling {
            AttentionScaling::InverseSqrtHeadSize => "",
            AttentionScaling::None => " · unscaled",
        };
        format!(
            "{} · {} · {}{scaling}",
            self.kv(),
            self.positions(),
            self.attention()
        )
    }

    /// Only what is not BERT's (multi-head, absolute, softmax, ÷√d_k), each part after " · ":
    /// " · GQA 2 KV heads · rotary · linear attention"; "" for BERT's own.
    pub fn departures(self) -> String {
        let mut parts = Vec::new();
        match self.groups() {
            g if g == self.heads => {}
            1 => parts.push(format!("{} (1 KV head)", self.kv())),
            _ => parts.push(self.kv()),
        }
        match self.architecture.positions {
            PositionEmbeddingType::Absolute => {}
            PositionEmbeddingType::Rotary | PositionEmbeddingType::Alibi => {
                parts.push(self.positions().into())
            }
        }
        match self.architecture.attention {
            AttentionType::Softmax => {}
            AttentionType::Linear => parts.push(format!("{} attention", self.attention())),
        }
        match self.architecture.scaling {
            AttentionScaling::InverseSqrtHeadSize => {}
            AttentionScaling::None => parts.push("unscaled scores".into()),
        }
        parts.iter().map(|p| format!(" · {p}")).collect()
    }
}

/// A kind of positions inside a sentence: "absolute", "rotary", "ALiBi".
pub fn positions_words(p: PositionEmbeddingType) -> &'static str {
    match p {
        PositionEmbeddingType::Absolute => "absolute",
        PositionEmbeddingType::Rotary => "rotary",
        PositionEmbeddingType::Alibi => "ALiBi",
    }
}

impl Default for LabSettings {
    /// The page's default run, as the engine describes it (`engine::default_run`): the tiny
    /// preset and the run's training settings.
    fn default() -> Self {
        LabSettings {
            preset: Preset::Tiny,
            learning_rate: DefaultRun::LEARNING_RATE,
            batch_size: DefaultRun::BATCH_SIZE,
            mask_prob: DefaultRun::MASK_PROB,
            seed: DefaultRun::SEED,
            optimizer: DefaultRun::OPTIMIZER,
            train_mask: DefaultRun::MASK,
            max_len: DefaultRun::MAX_LEN,
            fixed_batch: false,
            architecture: Architecture::default(),
            compare: None,
            objective: DefaultRun::OBJECTIVE,
            task: None,
            repeat: false,
        }
    }
}

impl LabSettings {
    /// The config of a fresh model: the preset with the chosen architecture.
    pub fn model_config(&self) -> BertConfig {
        let config = self.architecture.config(self.preset);
        match self.repeat_task() {
            Some(task) => task.setting_config(config),
            None => config,
        }
    }

    /// Next token's Task Repeat, with the batch size, learning rate, positions and seed
    /// measured to form induction heads (`engine::repeat`; the heads, warm-up and no dropout
    /// come with the task); the learner may change them after.
    pub fn choose_repeat(&mut self) {
        self.set_kind(ModelKind::Decoder {
            repeat: Some(RepeatTask::default()),
        });
        self.repeat_training();
        self.architecture.positions = RepeatTask::POSITIONS;
    }

    /// Repeat's measured seed, batch size and learning rate.
    pub fn repeat_training(&mut self) {
        self.seed = RepeatTask::SEED;
        self.batch_size = RepeatTask::BATCH_SIZE;
        self.learning_rate = RepeatTask::LEARNING_RATE;
    }

    /// The kind of model a Reset builds: an encoder–decoder when a task is chosen, else the
    /// objective's model, a decoder on Repeat when that is its task.
    pub fn kind(&self) -> ModelKind {
        match self.task {
            Some(task) => ModelKind::EncoderDecoder(task),
            None => ModelKind::trained_on(self.objective, self.repeat.then(RepeatTask::default)),
        }
    }

    /// These settings building a model of `kind` (a link's, a tour chapter's); the rest as
    /// they were.
    pub fn set_kind(&mut self, kind: ModelKind) {
        self.objective = kind.objective().unwrap_or_default();
        self.task = kind.task();
        self.repeat = kind.repeat().is_some();
    }

    /// The Repeat task a fresh model trains on, when these settings choose it: Next token,
    /// Task Repeat.
    pub fn repeat_task(&self) -> Option<RepeatTask> {
        self.kind().repeat()
    }

    /// These settings for Compare's model B: its architecture, everything else shared.
    pub fn for_model_b(&self) -> Option<LabSettings> {
        let architecture = self.compare?;
        Some(LabSettings {
            architecture,
            compare: None,
            ..self.clone()
        })
    }

    /// The optimiser a model of `kind` trains with: the chosen one, and with the linear warm-up
    /// of its setting: Repeat's, or the default run's for a corpus (the notebook trains on with
    /// the same).
    pub fn optimizer_for(&self, kind: ModelKind) -> OptimizerConfig {
        OptimizerConfig {
            warmup_steps: kind
                .repeat()
                .map_or(DefaultRun::WARMUP_STEPS, |_| RepeatTask::WARMUP_STEPS),
            ..self.optimizer.config(self.learning_rate)
        }
    }

    /// The engine's training settings for a model of `kind` with `max_positions` positions
    /// (the batches' T is at most that).
    pub fn train_settings(&self, kind: ModelKind, max_positions: usize) -> TrainSettings {
        let max_len = self.max_len.min(max_positions);
        TrainSettings {
            optimizer: self.optimizer_for(kind),
            batch: BatchConfig {
                batch_size: self.batch_size,
                max_len,
                mask_prob: self.mask_prob,
                max_predictions: max_predictions(max_len, self.mask_prob),
            },
            mask: self.train_mask,
            // An encoder–decoder's training is its task; the field is one model's.
            objective: kind.objective().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page's default run is the engine's description of it, which the command line's
    /// `train` trains too: model, training settings and seed.
    #[test]
    fn the_default_settings_are_the_engines_default_run() {
        let settings = LabSettings::default();
        let config = settings.model_config();
        assert_eq!(config, DefaultRun::config());
        assert_eq!(
            settings.train_settings(settings.kind(), config.max_position_embeddings),
            DefaultRun::train_settings()
        );
        assert_eq!(settings.seed, DefaultRun::SEED);
        assert_eq!(DEFAULT_CORPUS, engine::default_run::DEFAULT_CORPUS);
    }

    #[test]
    fn tile_blocks_are_4_for_sentences_and_keep_long_texts_within_8_by_8() {
        assert_eq!(ProbeKernel::block(17), 4);
        assert_eq!(ProbeKernel::block(32), 4);
        assert_eq!(ProbeKernel::block(512), 64);
        for t in 1usize..600 {
            assert!(t.div_ceil(ProbeKernel::block(t)) <= 8, "T = {t}");
        }
        assert_eq!(ProbeKernel::Full.kernel(512), AttentionKernel::Full);
    }

    #[test]
    fn an_architecture_in_words_names_all_or_what_is_not_berts() {
        let bert = Architecture::default().describe(4);
        assert_eq!(bert.name(), "multi-head · absolute · softmax");
        assert_eq!(bert.departures(), "");
        let a = Architecture {
            kv_heads: Some(1),
            positions: PositionEmbeddingType::Alibi,
            attention: AttentionType::Softmax,
            scaling: AttentionScaling::None,
        };
        assert_eq!(
            a.describe(4).name(),
            "multi-query · ALiBi · softmax · unscaled"
        );
        assert_eq!(
            a.describe(4).departures(),
            " · multi-query (1 KV head) · ALiBi · unscaled scores"
        );
        let linear = Architecture {
            kv_heads: Some(2),
            positions: PositionEmbeddingType::Rotary,
            attention: AttentionType::Linear,
            scaling: AttentionScaling::default(),
        };
        assert_eq!(
            linear.describe(4).departures(),
            " · GQA 2 KV heads · rotary · linear attention"
        );
        assert_eq!(linear.describe(2).kv(), "multi-head");
    }
}
