//! `attention-lab train`: fine-tune a checkpoint on one fixed batch, or pre-train from scratch
//! on a corpus through the data pipeline. One JSON line per step on stdout.

mod default_run;
mod repeat;
mod seq2seq;
mod setting;

pub(crate) use setting::Setting;

use crate::args::{value, UsageError};
use crate::attention_flags::{check_weight_bytes, AttentionFlags, Mask};
use crate::heads::HeadsReport;
use crate::json;
pub(crate) use crate::read_text;
use crate::{load_checkpoint, CliError, COMMAND_HELP};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::ArgGroup;
use engine::batch::Batch;
use engine::checkpoint::{save_dir, Checkpoint};
use engine::config::PositionEmbeddingType;
use engine::data::{max_predictions, BatchConfig};
use engine::experiments::heads::HeadsProbe;
use engine::forward::{ForwardOptions, Losses};
use engine::optim::{Optimizer, OptimizerConfig, OptimizerKind};
use engine::seq2seq::Task;
use engine::step::{train_step, Trainable};
use engine::train::{Objective, TrainSettings, Trainer};
use engine::{BertConfig, EngineError, MaskMode, Rng};
use protocol::claims::Heads;
use protocol::fields;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Fine-tunes a checkpoint on one fixed batch, pre-trains a new model on a corpus, or trains
/// the page's default run.
#[derive(clap::Args)]
// The forms are clap rules: at most one of --model and --init (the group `form`; neither is
// the default run), each with the flags it needs (`requires`), and the flags of the other form
// refused (`conflicts_with`).
#[command(group(ArgGroup::new("form").args(["model", "init"])))]
#[command(
    help_template = COMMAND_HELP,
    override_usage = "\
attention-lab train --model DIR --batch FILE.json --optimizer sgd|adam --lr F --steps N [OPTIONS]
       attention-lab train --init CONFIG.json --corpus FILE.txt [OPTIONS]
       attention-lab train [OPTIONS]",
    after_help = after_help()
)]
pub struct Args {
    /// Checkpoint to fine-tune (with --batch)
    #[arg(long, value_name = "DIR", requires_all = ["batch", "optimizer", "lr", "steps"])]
    pub(crate) model: Option<PathBuf>,
    /// The fixed batch (with --model)
    #[arg(
        long,
        value_name = "FILE.json",
        requires = "model",
        conflicts_with = "init"
    )]
    pub(crate) batch: Option<PathBuf>,
    /// Config of a new model (with --corpus)
    #[arg(long, value_name = "CONFIG.json")]
    pub(crate) init: Option<PathBuf>,
    /// Corpus to pre-train on, one sentence per line (with --init; the default run: instead of
    /// the page's default corpus)
    #[arg(long, value_name = "FILE.txt", conflicts_with = "model")]
    pub(crate) corpus: Option<PathBuf>,
    /// Optimiser (--init and the default run: default adam)
    #[arg(long, value_parser = optimizer_kind())]
    pub(crate) optimizer: Option<OptimizerKind>,
    /// Learning rate (--init: default 1e-3; the default run: its setting's)
    #[arg(long, value_name = "F", allow_hyphen_values = true, value_parser = value::<f64>("a number"))]
    pub(crate) lr: Option<f64>,
    /// Steps (--init and the default run: default 100)
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = value::<u64>("a whole number"))]
    pub(crate) steps: Option<u64>,
    /// Write the trained checkpoint to OUT
    #[arg(long, value_name = "OUT")]
    pub(crate) save: Option<PathBuf>,
    /// Seed of dropout (and, with --init and the default run, of init and batches) [default: 0]
    #[arg(long, value_name = "S", allow_hyphen_values = true, value_parser = value::<u64>("a whole number"))]
    pub(crate) seed: Option<u64>,
    /// Examples per batch (--init: default 8; the default run: its setting's)
    #[arg(long, value_name = "B", conflicts_with = "model", allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    pub(crate) batch_size: Option<usize>,
    /// Tokens per example (--init: default min(64, max_position_embeddings); the default run:
    /// its setting's)
    #[arg(long, value_name = "T", conflicts_with = "model", allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    pub(crate) max_len: Option<usize>,
    /// Attention mask (a decoder's is causal whatever this says)
    #[arg(long, value_enum, default_value_t = Mask::Padding)]
    pub(crate) mask: Mask,
    /// What to train: mlm-nsp (BERT), next-token (a decoder), seq2seq (an encoder–decoder).
    /// Default: --init mlm-nsp; --model the checkpoint's
    #[arg(long, value_parser = objective_flag())]
    objective: Option<ObjectiveFlag>,
    /// The seq2seq task built from the corpus (--init --objective seq2seq; default copy), or
    /// repeat: next-token training on repeated random symbols (--init, no corpus)
    #[arg(long, value_parser = task_flag(), conflicts_with = "model")]
    pub(crate) task: Option<TaskFlag>,
    /// --task repeat: how many symbols (2 to 36)
    #[arg(long, value_name = "A", allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    pub(crate) alphabet: Option<usize>,
    /// --task repeat: the segment lengths L drawn for each batch, MIN-MAX
    #[arg(long, value_name = "MIN-MAX")]
    pub(crate) segment: Option<String>,
    /// --task repeat: steps between evaluations (each prints a line)
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = value::<u64>("a whole number"))]
    pub(crate) eval_every: Option<u64>,
    /// --task repeat: positions instead of the Repeat setting's (rotary): absolute, rotary, alibi
    #[arg(long, value_name = "P", value_parser = positions())]
    pub(crate) positions: Option<PositionEmbeddingType>,
    /// --task repeat and the default run: attention heads instead of the setting's
    #[arg(long, value_name = "H", allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    pub(crate) heads: Option<usize>,
    /// --task repeat and the default run: dropout (hidden and attention) instead of the
    /// setting's
    #[arg(long, value_name = "F", allow_hyphen_values = true, value_parser = value::<f32>("a number"))]
    pub(crate) dropout: Option<f32>,
    /// SGD momentum (torch's, dampening 0)
    #[arg(long, value_name = "F", allow_hyphen_values = true, value_parser = value::<f64>("a number"))]
    pub(crate) momentum: Option<f64>,
    /// SGD: L2 added to the gradient; Adam: decoupled, as torch.optim.AdamW
    #[arg(long, value_name = "F", allow_hyphen_values = true, value_parser = value::<f64>("a number"))]
    pub(crate) weight_decay: Option<f64>,
    /// torch.nn.utils.clip_grad_norm_ with max_norm F before each update
    #[arg(long, value_name = "F", allow_hyphen_values = true, value_parser = value::<f64>("a number"))]
    pub(crate) clip_grad_norm: Option<f64>,
    /// Linear learning-rate warm-up over the first N steps: step t uses lr·min(1, t/N)
    /// (--task repeat and the default run: default their setting's; else none)
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = value::<u64>("a whole number"))]
    pub(crate) warmup: Option<u64>,
    /// MLM + NSP from a corpus (--init, the default run): the fraction of tokens masked
    /// (--init: default 0.15; the default run: its setting's)
    #[arg(long, value_name = "F", conflicts_with = "model", allow_hyphen_values = true, value_parser = value::<f32>("a number"))]
    pub(crate) mask_prob: Option<f32>,
    /// Corpus training (--init, the default run): the page's Heads measurement every N steps
    /// (and at step 0 and the last), one JSON line each
    #[arg(long, value_name = "N", conflicts_with = "model", allow_hyphen_values = true, value_parser = value::<u64>("a whole number"))]
    pub(crate) heads_every: Option<u64>,
    /// Threads (default: every core); the same seed gives the same numbers whatever N
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = value::<usize>("a whole number"))]
    threads: Option<usize>,
    #[command(flatten)]
    pub(crate) attention: AttentionFlags,
}

/// The most threads `--threads` may ask for.
const MAX_THREADS: usize = 1024;

/// The most examples `--batch-size` may ask for: far above any batch this lab trains, low
/// enough that a typo cannot ask for more memory than a machine has.
const MAX_BATCH_SIZE: usize = 4096;

/// `--positions`: the engine's names for a config's `position_embedding_type`.
fn positions() -> impl TypedValueParser<Value = PositionEmbeddingType> {
    PossibleValuesParser::new(["absolute", "rotary", "alibi"]).map(|name| {
        PositionEmbeddingType::try_from(name).expect("clap let through a listed name only")
    })
}

/// `--optimizer`: the engine's names for its optimisers, which help and errors list.
fn optimizer_kind() -> impl TypedValueParser<Value = OptimizerKind> {
    PossibleValuesParser::new(OptimizerKind::ALL.map(OptimizerKind::name))
        .map(|name| OptimizerKind::from_name(&name).expect("clap let through a listed name only"))
}

/// `--objective`: one model's `Objective`, or seq2seq (`engine::seq2seq`), by the names the
/// page's Objective select and its links use (`protocol::fields`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ObjectiveFlag {
    Single(Objective),
    Seq2seq,
}

impl ObjectiveFlag {
    pub(crate) const NEXT_TOKEN: ObjectiveFlag = ObjectiveFlag::Single(Objective::NextToken);

    /// The one-model trainer's objective (None for seq2seq, which has its own).
    fn single(self) -> Option<Objective> {
        match self {
            ObjectiveFlag::Single(objective) => Some(objective),
            ObjectiveFlag::Seq2seq => None,
        }
    }
}

fn objective_flag() -> impl TypedValueParser<Value = ObjectiveFlag> {
    PossibleValuesParser::new(fields::OBJECTIVES.map(|c| c.name)).map(|name| {
        match fields::objective_named(&name) {
            Ok(objective) => ObjectiveFlag::Single(objective),
            Err(_) => ObjectiveFlag::Seq2seq,
        }
    })
}

/// `--task`: `engine::seq2seq::Task`, or the next-token task Repeat (`engine::repeat`), by the
/// names of the page's Task selects and its links (`protocol::fields`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TaskFlag {
    Seq2seq(Task),
    Repeat,
}

impl TaskFlag {
    /// The seq2seq task (None for Repeat, a next-token task).
    pub(crate) fn seq2seq(self) -> Option<Task> {
        match self {
            TaskFlag::Seq2seq(task) => Some(task),
            TaskFlag::Repeat => None,
        }
    }
}

fn task_flag() -> impl TypedValueParser<Value = TaskFlag> {
    let names = fields::TASKS.map(|(_, c)| c.name);
    let names = names.into_iter().chain([fields::REPEAT_TASK.name]);
    PossibleValuesParser::new(names).map(|name| match fields::task_named(&name) {
        Ok(task) => TaskFlag::Seq2seq(task),
        Err(_) => TaskFlag::Repeat,
    })
}

pub(crate) fn usage_error(message: impl Into<String>) -> CliError {
    CliError::Usage(UsageError::new("train", message))
}

/// A flag of the command's form: clap lets no command line through without it (the `form`
/// group, and the `requires` of --model and --init).
pub(crate) fn required<T>(v: Option<T>) -> T {
    v.expect("clap requires the flags of the command's form")
}

#[derive(Serialize)]
struct FixedStep {
    step: u64,
    loss: f32,
    mlm_loss: f32,
    nsp_loss: f32,
}

/// A next-token step: the loss and how often the argmax was the next token.
#[derive(Serialize)]
struct NextTokenStep {
    step: u64,
    loss: f32,
    accuracy: f32,
}

#[derive(Serialize)]
struct CorpusStep {
    step: u64,
    loss: f32,
    mlm_loss: f32,
    nsp_loss: f32,
    mlm_accuracy: f32,
    nsp_accuracy: f32,
}

pub fn run(a: &Args) -> Result<(), CliError> {
    if let Some(n) = a.threads {
        if !(1..=MAX_THREADS).contains(&n) {
            return Err(usage_error(format!(
                "--threads must be from 1 to {MAX_THREADS}, got {n}"
            )));
        }
        engine::threads::set_threads(n)?;
    }
    let seq2seq = a.objective == Some(ObjectiveFlag::Seq2seq)
        || a.model
            .as_deref()
            .is_some_and(crate::is_encoder_decoder_dir);
    if seq2seq && a.objective.is_some_and(|o| o != ObjectiveFlag::Seq2seq) {
        return Err(usage_error(format!(
            "an encoder–decoder checkpoint trains with --objective {}",
            fields::SEQ2SEQ.name
        )));
    }
    let repeat = a.task == Some(TaskFlag::Repeat);
    let default_run = a.model.is_none() && a.init.is_none();
    if a.heads_every.is_some() && (repeat || seq2seq) {
        return Err(usage_error(
            "--heads-every is for training one BERT on a corpus (--init, or the default run)",
        ));
    }
    if a.heads_every == Some(0) {
        return Err(usage_error("--heads-every must be at least 1"));
    }
    let masks = a
        .objective
        .is_none_or(|o| o == ObjectiveFlag::Single(Objective::MlmNsp))
        && !repeat;
    if a.mask_prob.is_some() && !masks {
        return Err(usage_error(
            "--mask-prob is for MLM + NSP training (--objective mlm-nsp)",
        ));
    }
    if repeat {
        if a.init.is_none() {
            return Err(usage_error(
                "--task repeat trains a new decoder: give --init CONFIG.json",
            ));
        }
        return engine::threads::in_pool(|| repeat::run(a));
    }
    if a.alphabet.is_some()
        || a.segment.is_some()
        || a.eval_every.is_some()
        || a.positions.is_some()
    {
        return Err(usage_error(
            "--alphabet, --segment, --eval-every and --positions are for --task repeat",
        ));
    }
    if (a.heads.is_some() || a.dropout.is_some()) && !default_run {
        return Err(usage_error(
            "--heads and --dropout are for --task repeat and the default run (no --model or --init)",
        ));
    }
    if a.task.is_some() && !seq2seq {
        let tasks = fields::TASKS.map(|(_, c)| c.name).join("|");
        return Err(usage_error(format!(
            "--task {tasks} is for --objective {}",
            fields::SEQ2SEQ.name
        )));
    }
    if default_run && seq2seq {
        return Err(usage_error(
            "the default run trains one BERT: --objective seq2seq needs --init CONFIG.json",
        ));
    }
    // Training runs inside the pool, so this thread works on every split too. At most one of
    // --model and --init is given (the `form` group); neither is the default run.
    engine::threads::in_pool(|| match (a.model.is_some(), seq2seq) {
        _ if default_run => default_run::run(a),
        (true, true) => seq2seq::fixed_batch(a),
        (false, true) => seq2seq::from_scratch(a),
        (true, false) => fixed_batch(a),
        (false, false) => from_scratch(a),
    })
}

pub(crate) fn optimizer(
    a: &Args,
    default: Option<OptimizerKind>,
    lr: f64,
) -> Result<OptimizerConfig, CliError> {
    let kind = a
        .optimizer
        .or(default)
        .expect("clap: --model requires --optimizer, and --init has a default")
        .config(lr);
    let config = OptimizerConfig {
        momentum: a.momentum.unwrap_or(0.0),
        weight_decay: a.weight_decay.unwrap_or(0.0),
        clip_grad_norm: a.clip_grad_norm,
        warmup_steps: a.warmup.unwrap_or(0),
        ..kind
    };
    if config.momentum != 0.0 && config.kind != OptimizerKind::Sgd {
        return Err(usage_error("--momentum is for --optimizer sgd"));
    }
    Ok(config)
}

fn save(checkpoint: &Checkpoint, out: Option<&Path>) -> Result<(), CliError> {
    if let Some(out) = out {
        save_dir(checkpoint, out)?;
        eprintln!("saved {}", out.display());
    }
    Ok(())
}

fn fixed_batch(a: &Args) -> Result<(), CliError> {
    let dir = required(a.model.as_deref());
    let batch_path = required(a.batch.as_deref());
    let lr = required(a.lr);
    let steps = required(a.steps);
    let mask = MaskMode::from(a.mask);
    let softmax = a.attention.resolve("train")?;
    let opts = ForwardOptions {
        softmax,
        ..ForwardOptions::training(mask)
    };
    let opt_config = optimizer(a, None, lr)?;

    let Checkpoint {
        mut model,
        tokenizer,
        naming,
    } = load_checkpoint(dir)?;
    let objective =
        a.objective
            .and_then(ObjectiveFlag::single)
            .unwrap_or(if model.config.is_decoder {
                Objective::NextToken
            } else {
                Objective::MlmNsp
            });
    objective.check(&model)?;
    let batch = read_batch(batch_path)?;
    let (b, t) = batch.input_ids.dim();
    let attention = engine::forward::attention_options(&model.config, &opts)?.0;
    check_weight_bytes(
        &attention,
        (model.config.num_hidden_layers, b, t),
        "the batch",
    )
    .map_err(|m| CliError::Engine(EngineError::Input(m)))?;
    let run = (opt_config, a.seed.unwrap_or(0), steps);
    fixed_batch_steps(&mut model, &batch, &opts, run, |step, l| match objective {
        Objective::MlmNsp => json::print(&FixedStep {
            step,
            loss: l.total,
            mlm_loss: l.mlm,
            nsp_loss: l.nsp,
        }),
        Objective::NextToken => json::print(&NextTokenStep {
            step,
            loss: l.total,
            accuracy: l.mlm_accuracy,
        }),
    })?;
    save(
        &Checkpoint {
            model,
            tokenizer,
            naming,
        },
        a.save.as_deref(),
    )
}

/// `steps` of the engine's one training step on `batch` (one BERT or an encoder–decoder), the
/// optimiser and generator from `(config, seed, steps)`, `line` printing each step's losses. A
/// failing step is said on stderr and ends the run, nothing saved.
pub(crate) fn fixed_batch_steps<M: Trainable>(
    model: &mut M,
    batch: &M::Batch,
    opts: &ForwardOptions,
    (config, seed, steps): (OptimizerConfig, u64, u64),
    line: impl Fn(u64, &Losses),
) -> Result<(), CliError> {
    let mut optimizer = Optimizer::new(config, model)?;
    let mut grads = model.zeros();
    let mut rng = Rng::new(seed);
    let mut buffers = M::Buffers::default();
    for step in 1..=steps {
        let losses = train_step(
            model,
            &mut grads,
            &mut optimizer,
            batch,
            opts,
            &mut rng,
            &mut buffers,
        )
        .inspect_err(|_| eprintln!("stopped at step {step} of {steps}; nothing saved"))?;
        line(step, &losses);
    }
    Ok(())
}

fn read_batch(path: &Path) -> Result<Batch, CliError> {
    Batch::from_json(&read_text(path)?).map_err(|e| match e {
        EngineError::Input(m) => {
            CliError::Engine(EngineError::Input(format!("{}: {m}", path.display())))
        }
        other => CliError::Engine(other),
    })
}

/// `--init`'s config, and the vocab_size it stated: the vocabulary's size replaces it (the
/// corpus's or the task's), so a config may leave it out.
pub(crate) fn init_config(
    config_path: &Path,
) -> Result<(BertConfig, Option<serde_json::Value>), CliError> {
    let mut value: serde_json::Value = serde_json::from_str(&read_text(config_path)?)
        .map_err(|e| EngineError::Config(format!("{} is not JSON: {e}", config_path.display())))?;
    let stated = value.get("vocab_size").cloned();
    if let Some(object) = value.as_object_mut() {
        object.entry("vocab_size").or_insert(1.into());
    }
    Ok((BertConfig::from_json(&value.to_string())?, stated))
}

/// `--corpus`, which every --init form but `--task repeat` reads.
pub(crate) fn corpus_path(a: &Args) -> Result<&Path, CliError> {
    a.corpus
        .as_deref()
        .ok_or_else(|| usage_error("--corpus is required with --init (or --task repeat)"))
}

fn from_scratch(a: &Args) -> Result<(), CliError> {
    let config_path = required(a.init.as_deref());
    let corpus_path = corpus_path(a)?;
    let steps = a.steps.unwrap_or(100);
    let batch_size = a.batch_size.unwrap_or(8);
    let seed = a.seed.unwrap_or(0);
    let lr = a.lr.unwrap_or(1e-3);
    let mask = MaskMode::from(a.mask);
    let objective = a
        .objective
        .and_then(ObjectiveFlag::single)
        .unwrap_or_default();
    let softmax = a.attention.resolve("train")?;
    check_batch_size(batch_size)?;
    let opt_config = optimizer(a, Some(OptimizerKind::Adam), lr)?;

    let (config, stated) = init_config(config_path)?;
    let max_len = a.max_len.unwrap_or(config.max_position_embeddings.min(64));
    let corpus = read_text(corpus_path)?;
    let mask_prob = a.mask_prob.unwrap_or(0.15); // BERT's
    let batch = BatchConfig {
        batch_size,
        max_len,
        mask_prob,
        max_predictions: max_predictions(max_len, mask_prob),
    };
    let settings = TrainSettings {
        optimizer: opt_config,
        batch,
        mask,
        objective,
    };
    let mut trainer = Trainer::from_corpus(&corpus, config, settings, seed)?;
    trainer.softmax = softmax;
    let n = trainer.model.config.vocab_size;
    match stated {
        Some(v) => eprintln!(
            "note: vocab_size {v} in {} replaced by the corpus vocabulary's size, {n}",
            config_path.display()
        ),
        None => eprintln!("note: vocab_size set to the corpus vocabulary's size, {n}"),
    }
    corpus_training(a, trainer, (steps, seed))
}

/// `--batch-size` within what a machine can hold.
pub(crate) fn check_batch_size(batch_size: usize) -> Result<(), CliError> {
    if batch_size > MAX_BATCH_SIZE {
        return Err(usage_error(format!(
            "--batch-size must be at most {MAX_BATCH_SIZE}, got {batch_size}"
        )));
    }
    Ok(())
}

/// Trains `trainer`, made from a corpus (--init, the default run) with `seed`, for `steps`
/// steps: one line a step, and with --heads-every the page's Heads measurement at step 0, every
/// N steps and at the last. Then saves it with --save.
pub(crate) fn corpus_training(
    a: &Args,
    mut trainer: Trainer,
    (steps, seed): (u64, u64),
) -> Result<(), CliError> {
    let config = &trainer.model.config;
    let batch = &trainer.batch_config;
    let attention = engine::forward::attention_options(config, &trainer.forward_options())?.0;
    check_weight_bytes(
        &attention,
        (config.num_hidden_layers, batch.batch_size, batch.max_len),
        "--batch-size with --max-len",
    )
    .map_err(usage_error)?;
    eprintln!(
        "model: {} parameters; corpus: {} sentences, {} tokens",
        trainer.model.num_params(),
        trainer.corpus.len(),
        trainer.corpus.n_tokens()
    );
    // The sentences and options of the measurement, made once: the page's Heads claim's.
    let probe = match a.heads_every {
        Some(_) => Some(HeadsProbe::of_training(&trainer)?),
        None => None,
    };
    let measure = |trainer: &Trainer| -> Result<(), CliError> {
        if let Some(probe) = &probe {
            let m = probe.measure(&trainer.model)?;
            let step = trainer.stepper.step;
            // At step 0 the model is as initialised: the page's card says so.
            let text = Heads::verdict(&m, step, step == 0, Some(seed)).text;
            json::print(&HeadsReport::new(&m, text, Some(step), false));
        }
        Ok(())
    };
    measure(&trainer)?;
    let objective = trainer.objective;
    for step in 1..=steps {
        let r = trainer
            .step()
            .inspect_err(|_| eprintln!("stopped at step {step} of {steps}; nothing saved"))?;
        let l = r.losses;
        match objective {
            Objective::MlmNsp => json::print(&CorpusStep {
                step: r.step,
                loss: l.total,
                mlm_loss: l.mlm,
                nsp_loss: l.nsp,
                mlm_accuracy: l.mlm_accuracy,
                nsp_accuracy: l.nsp_accuracy,
            }),
            Objective::NextToken => json::print(&NextTokenStep {
                step: r.step,
                loss: l.total,
                accuracy: l.mlm_accuracy,
            }),
        }
        if a.heads_every
            .is_some_and(|n| step % n == 0 || step == steps)
        {
            measure(&trainer)?;
        }
    }
    save(&trainer.checkpoint(), a.save.as_deref())
}

/// `train --help`'s text after the flags: each form, what it prints.
fn after_help() -> String {
    let default_run = default_run::describe();
    let heads_fields = crate::heads::FIELDS;
    format!(
        "\
--model: trains the checkpoint in DIR (it needs its pre-training heads) for N steps on one fixed
  batch: a JSON object of lists with one entry per example: input_ids, token_type_ids,
  attention_mask (both optional: zeros / ones), mlm_labels (-100 = ignore) and nsp_labels
  (0 = IsNext). Dropout as config.json says, seeded by S. Prints one line per step:
  {{\"step\", \"loss\", \"mlm_loss\", \"nsp_loss\"}}, the loss before that step's update. OUT is
  written as a checkpoint with the tensor names of DIR.

--init: pre-trains a new model from CONFIG.json on FILE.txt (one sentence per line, blank lines
  ignored), with a word-level vocabulary built from the corpus: CONFIG's vocab_size is replaced by
  the vocabulary's size. MLM (15% masked) + NSP batches. Defaults: N 100, B 8, T min(64,
  max_position_embeddings), lr 1e-3, adam. Prints one line per step:
  {{\"step\", \"loss\", \"mlm_loss\", \"nsp_loss\", \"mlm_accuracy\", \"nsp_accuracy\"}}.

Neither --model nor --init: trains the page's default run, the setting a learner trains on
  opening the page ({default_run}), for N steps (default 100), printing what --init prints.
  Stderr says so; --corpus, --seed, --batch-size, --lr, --warmup, --mask-prob, --max-len,
  --heads, --dropout, --optimizer, --objective next-token, --mask and the attention flags
  change one, and a value other than the setting's is noted on stderr.

--heads-every N (corpus training: --init or the default run, either objective): at step 0,
  every N steps and at the last, also prints one line of the page's Heads measurement (as
  `attention-lab heads` prints it) of the model now, on the corpus's sentences as training
  reads them: {{\"step\", \"relations\", \"heads\", \"baseline\", \"verdict\", \"text\"}}:
{heads_fields}
  (At step 0 the text says the model has not trained yet, as the page's card does.)

--objective next-token: trains a decoder (BertLMHeadModel: causal self-attention, no pooler or
  NSP head) to predict each next token. With --init the new model is one (is_decoder); its
  batches are single sentences [CLS] ... [SEP]. With --model the checkpoint must be one, and the
  batch JSON carries labels (HF's: the input ids, -100 where no loss; shifted by one as
  BertLMHeadModel shifts them) instead of mlm_labels and nsp_labels. Prints one line per step:
  {{\"step\", \"loss\", \"accuracy\"}} (accuracy: how often the argmax was the next token).

--objective seq2seq: trains an encoder–decoder (EncoderDecoderModel of two BERTs, the decoder's
  layers with cross-attention). With --init both halves are built from CONFIG's sizes and train
  on --task copy|reverse|reply made from the corpus; with --model DIR (model_type
  \"encoder-decoder\") the batch JSON carries input_ids, attention_mask, labels,
  decoder_input_ids and decoder_attention_mask. Prints {{\"step\", \"loss\", \"accuracy\"}}.

--task repeat: trains a new decoder from CONFIG.json (no corpus) on Repeat: [CLS] x1..xL x1..xL
  [SEP], L distinct random symbols (--alphabet A of a-z then 0-9, default 36), L drawn from
  --segment MIN-MAX (default 4-24) for each batch. Defaults: the page's Repeat setting, the one
  measured to form induction heads: N 3000, B 64, adam at lr 2e-3 after 200 warm-up steps, and
  CONFIG's sizes with 8 heads, rotary positions and no dropout. --batch-size, --lr, --warmup,
  --positions, --heads and --dropout change one; a value other than the setting's, or a
  CONFIG that says otherwise, is noted on stderr. Every --eval-every steps (default 100), and at
  step 0 and the last, prints one line measured on 16 fixed sequences: {{\"step\", \"loss\" (the mean since the last line),
  \"copy1_accuracy\", \"copy2_accuracy\" (next-token accuracy on each copy), \"heads\": [{{\"layer\",
  \"head\", \"previous\", \"duplicate\", \"induction\"}}]}}: each head's mean weight, over the second
  copy's queries, on the previous token, on the earlier occurrence of the current token and on the
  token after it. The last line: {{\"step\", \"copy2_accuracy\", \"copy2_accuracy_without\": [{{\"layer\",
  \"head\", \"copy2_accuracy\"}}]}}, the second copy with each head ablated.

Optimisers are torch.optim.SGD / torch.optim.Adam with their defaults, changed by --momentum,
--weight-decay and --clip-grad-norm. A NaN or infinite loss stops the run with exit code 1,
nothing saved."
    )
}
