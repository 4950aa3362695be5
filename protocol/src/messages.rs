//! Messages between the page and the training worker (encoded by `wire`; files' bytes travel
//! beside a message as attachments). The worker owns the model; the page only ever receives
//! plain data (`ModelInfo`, `Inspection`, losses).

use crate::record::HistoryIndex;
use crate::turns::{ClaimOrder, ClaimReport};
use crate::workers::{GradientJob, GradientResult, ReplicaShape};
use crate::{
    Claim, CurvePoint, GenerationSettings, GenerationStep, LabError, LabSettings, ModelBundle,
    ModelInfo, ProbeInput, WorkerCount, WorkersInUse,
};
use engine::batch_view::{BatchView, MaskingCounts};
use engine::inspect::Inspection;
use serde::{Deserialize, Serialize};

// As FromWorker: a message lives only from its decoding to its handling (Load carries two
// bundles' descriptions, their bytes beside it).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    /// A fresh model on `corpus` (architecture and seed from `settings`), and with
    /// `settings.compare` a model B beside it.
    Reset {
        corpus: String,
        settings: LabSettings,
    },
    /// A model to load on `corpus`, and Compare's model B kept beside it. Attachments: the
    /// bundles' bytes (`ModelBundle::detach_both`).
    Load {
        bundle: ModelBundle,
        compare: Option<ModelBundle>,
        corpus: String,
        settings: LabSettings,
    },
    Play,
    Pause,
    Step,
    /// Steps per second while playing; `None` = as fast as possible.
    Speed(Option<f64>),
    /// How many workers train (the "Workers" setting). The training worker answers `Workers`.
    Workers(WorkerCount),
    /// Settings that apply without a reset (to both models with Compare): learning rate, batch
    /// size, training length, mask probability, optimiser, training mask.
    Tune(LabSettings),
    /// Inspect the probe with the current weights, or with those kept at history entry `at`.
    Inspect {
        probe: ProbeInput,
        at: Option<usize>,
    },
    /// Bring back the History weights kept in the browser's store with the model just loaded
    /// (sent after `Load` of the kept model). The worker reads them itself: up to 64 MB of model A's, and model B's at the same steps.
    RestoreHistory,
    /// Continue from history entry `at` (after a NaN stop, or to go back in time); with Compare
    /// both models go back to that step.
    Rewind {
        at: usize,
    },
    /// Send the current model (and model B) as checkpoint files: for the user to save, or for
    /// the page to put in a notebook ("Open in PyTorch"). The answer says which.
    Download(FilesFor),
    /// Keep the current model (and Compare's model B) in the browser's store (IndexedDB), with
    /// their training state. The
    /// worker writes it itself, so its megabytes never cross the page's main thread; it answers
    /// `Kept` (or `Failed`).
    Keep,
    /// Run a claim's experiment (the probe's text for the leakage one). One runs at a time: a
    /// claim asked for while another runs waits its turn (`ClaimReport::Queued`); asked for
    /// again, a claim starts over with this probe.
    RunClaim {
        claim: Claim,
        probe: ProbeInput,
    },
    /// Stop the claim's experiment, under way or waiting; the model is untouched by every claim.
    CancelClaim {
        claim: Claim,
    },
    /// Continue `prompt` with the decoder, a token at a time (training pauses); each token
    /// comes back as `Generated`. Training, Reset, Load or Rewind stop it.
    Generate {
        prompt: String,
        settings: GenerationSettings,
    },
    /// Stop the generation under way (the tokens so far stay).
    StopGenerating,
    /// Time the fixed benchmark workload (engine::workload) and report ms per step.
    Bench {
        iters: usize,
        warmup: usize,
    },
    /// Test only: make the worker die, to check that the page notices and recovers. Sent only
    /// by `window.__attentionLabTest.crashWorker`, which the page defines only when its URL has
    /// `?test-hooks` (see `test_hooks`).
    Crash(Crash),
}

/// How a test makes the worker die.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Crash {
    /// A panic while handling the message (with `panic = "abort"`, a trap).
    Panic,
    /// A panic in a task the worker runs later (a future, as the IndexedDB writes are).
    PanicLater,
    /// An allocation the 4 GB of wasm32 memory cannot hold (abort, without a panic message).
    OutOfMemory,
    /// A panic in one of the training worker's gradient workers, at its next job.
    GradientWorker,
    /// A panic in the training worker's claim worker, at once (or, with a claim under way,
    /// between two of its units).
    ClaimWorker,
}

// A message lives only from its decoding to its handling: the size gap between variants
// (Progress carries the masking counts) costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FromWorker {
    /// The worker's wasm is up and listening (messages sent before this are lost).
    Hello,
    /// Median ms per training step of each benchmark preset, measured in this worker.
    Bench { results: Vec<(String, f64)> },
    /// How many workers train now, and why not more.
    Workers(WorkersInUse),
    /// A model is loaded (fresh or from a checkpoint). `trainable` is false, with the reason,
    /// for checkpoints without pre-training heads.
    Ready {
        info: ModelInfo,
        /// Compare's model B, trained in lockstep on the same batches.
        compare: Option<ModelInfo>,
        step: u64,
        trainable: Result<(), LabError>,
        notice: Option<String>,
    },
    /// Steps done since the last report.
    Progress {
        points: Vec<CurvePoint>,
        /// Model B's points at the same steps (Compare), else empty.
        points_b: Vec<CurvePoint>,
        steps_per_second: f64,
        playing: bool,
        /// The batch of the latest step (None before this model's first step), not one per
        /// step.
        batch: Option<BatchView>,
        /// Running counts of every batch drawn for this model since it was made or loaded.
        counts: MaskingCounts,
    },
    /// The probe's inspection; `at` = the history entry it was made from, if any.
    Inspected {
        step: u64,
        at: Option<usize>,
        result: Result<Inspection, LabError>,
        /// The same probe through model B (Compare).
        compare: Option<Result<Inspection, LabError>>,
    },
    /// Steps at which weights are kept for the History slider (oldest first).
    History { steps: Vec<u64> },
    /// Training stopped by itself (NaN/∞ loss): each model's weights are those of its last good
    /// step (with Compare, A may be one step past B, whose step failed). Also the answer to
    /// Play while B is behind: the page offers to rewind both.
    Stopped { step: u64, reason: LabError },
    /// A request failed; nothing changed.
    Failed(LabError),
    /// The model at `step` is kept in the browser's store. Loss points up to `step` were posted
    /// before this, so the page can keep the curves to match.
    Kept { step: u64 },
    /// The worker panicked: the panic's message, posted by its panic hook just before the
    /// trap that ends it (the app's `worker::report_deaths`).
    Crashed { message: String },
    /// What became of a claim asked for: its turn, its progress, its result, its stop.
    Claim(ClaimReport),
    /// Generation so far: the prompt's tokens, every new token, and the inspection of the whole
    /// sequence (its heatmaps gain a row per token). `done` once [SEP] came, `max_new` tokens
    /// were made, or it was stopped.
    Generated {
        prompt: Vec<String>,
        steps: Vec<GenerationStep>,
        done: bool,
        inspection: Inspection,
    },
    /// The current model (and model B), for what `Download` asked. Attachments: their bytes
    /// (`ModelBundle::detach_both`).
    Checkpoint {
        bundle: ModelBundle,
        compare: Option<ModelBundle>,
        files_for: FilesFor,
    },
}

/// What a model's files are wanted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FilesFor {
    /// "Download checkpoint": the files, as `transformers` saves them.
    Checkpoint,
    /// "Open in PyTorch": the weights inside a notebook.
    Notebook,
    /// "Prepare for a course": the files in an archive with a README.
    Course,
}

/// Which of the three programs a worker is, chosen once as it starts (its `name`): the page's
/// training worker (the lead), one of the lead's gradient workers, or its claim worker. Each
/// role hears one message type and says another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Lead,
    Gradients,
    Claims,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Lead, Role::Gradients, Role::Claims];

    /// The worker's `name`, as its starter gives it.
    pub fn name(self) -> &'static str {
        match self {
            Role::Lead => "attention-lab-lead",
            Role::Gradients => "attention-lab-gradients",
            Role::Claims => "attention-lab-claims",
        }
    }

    /// The role a worker's name gives; a worker started without one (or by an older page) is
    /// the lead.
    pub fn of_name(name: &str) -> Role {
        Role::ALL
            .into_iter()
            .find(|r| r.name() == name)
            .unwrap_or(Role::Lead)
    }
}

/// What every worker says to whoever started it, whatever its role: that it listens, that it
/// panicked, and that a message to it did not decode.
pub trait WorkerSays: Serialize + serde::de::DeserializeOwned {
    fn hello() -> Self;
    fn is_hello(&self) -> bool;
    /// Its panic's message, posted by its panic hook just before the trap that ends it.
    fn crashed(message: String) -> Self;
    /// `crashed`'s message, read back.
    fn crash_message(&self) -> Option<&str>;
    fn failed(error: LabError) -> Self;
}

impl WorkerSays for FromWorker {
    fn hello() -> Self {
        FromWorker::Hello
    }
    fn is_hello(&self) -> bool {
        matches!(self, FromWorker::Hello)
    }
    fn crashed(message: String) -> Self {
        FromWorker::Crashed { message }
    }
    fn crash_message(&self) -> Option<&str> {
        match self {
            FromWorker::Crashed { message } => Some(message),
            _ => None,
        }
    }
    fn failed(error: LabError) -> Self {
        FromWorker::Failed(error)
    }
}

/// The lead to one of its gradient workers.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToGradientWorker {
    /// Build a copy of this model (its weights come with each job) and call it `id`.
    Replica { id: u64, shape: ReplicaShape },
    /// One share's gradients. Attachment: the weights. Answered by `Gradients`.
    Gradients(GradientJob),
    /// Test only: panic (`Crash::GradientWorker`).
    Crash,
}

/// A gradient worker to the lead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FromGradientWorker {
    Hello,
    /// The share's losses, or why it failed. Attachment: the share's gradients.
    Gradients(GradientResult),
    Crashed {
        message: String,
    },
}

impl WorkerSays for FromGradientWorker {
    fn hello() -> Self {
        FromGradientWorker::Hello
    }
    fn is_hello(&self) -> bool {
        matches!(self, FromGradientWorker::Hello)
    }
    fn crashed(message: String) -> Self {
        FromGradientWorker::Crashed { message }
    }
    fn crash_message(&self) -> Option<&str> {
        match self {
            FromGradientWorker::Crashed { message } => Some(message),
            _ => None,
        }
    }
    fn failed(error: LabError) -> Self {
        FromGradientWorker::Gradients(Err(error))
    }
}

/// The lead to its claim worker, where claims run on a copy of the models so that training goes
/// on while they measure.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToClaimWorker {
    /// Before each claim: the models as the browser keeps them (none before the first), with
    /// the corpus and settings, and for a claim that reads it with Compare the History's
    /// weights (Scaling's trained comparison). Attachments: one per History entry in
    /// `history_steps` order, then the bundles' bytes (`ModelBundle::detach_both`).
    Copy {
        bundle: Option<ModelBundle>,
        compare: Option<ModelBundle>,
        corpus: String,
        settings: LabSettings,
        history: Option<HistoryIndex>,
        history_steps: Vec<u64>,
    },
    /// What the lead's turns order, for the copy.
    Order(ClaimOrder),
    /// Test only: panic (`Crash::ClaimWorker`).
    Crash,
}

/// The claim worker to the lead: its reports, which go on to the page as they are.
// As `ClaimReport`.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FromClaimWorker {
    Hello,
    Report(ClaimReport),
    Crashed { message: String },
}

impl WorkerSays for FromClaimWorker {
    fn hello() -> Self {
        FromClaimWorker::Hello
    }
    fn is_hello(&self) -> bool {
        matches!(self, FromClaimWorker::Hello)
    }
    fn crashed(message: String) -> Self {
        FromClaimWorker::Crashed { message }
    }
    fn crash_message(&self) -> Option<&str> {
        match self {
            FromClaimWorker::Crashed { message } => Some(message),
            _ => None,
        }
    }
    fn failed(error: LabError) -> Self {
        FromClaimWorker::Crashed {
            message: format!("a message it sent did not decode ({error})"),
        }
    }
}
