//! The page's view of the training worker: signals the components read, a `send` to ask for
//! things, and `apply`, which turns each worker reply into signal updates.

use crate::lab::{LabSettings, ModelInfo, ProbeInput};
use crate::protocol::{FromWorker, ToWorker};
use crate::training::curves::Curves;
use crate::training::files::{download_files, PickedCheckpoint};
use crate::training::storage::{self, SavedModel};
use crate::worker_client::LabClient;
use engine::inspect::Inspection;
use leptos::prelude::*;
use std::sync::Arc;

/// The latest inspection of the probe, or the message explaining why there is none.
pub type Shown = Option<Result<Arc<Inspection>, String>>;

#[derive(Clone, Copy)]
pub struct Live {
    pub info: RwSignal<Option<ModelInfo>>,
    pub inspection: RwSignal<Shown>,
    /// Ok, or why this model cannot be trained.
    pub trainable: RwSignal<Result<(), String>>,
    pub playing: RwSignal<bool>,
    pub step: RwSignal<u64>,
    pub steps_per_second: RwSignal<f64>,
    /// Why training stopped by itself (NaN/∞ loss).
    pub stopped: RwSignal<Option<String>>,
    pub notice: RwSignal<Option<String>>,
    pub error: RwSignal<Option<String>>,
    pub curves: RwSignal<Curves>,
    /// Steps with kept weights; `history_at` picks one (None = live).
    pub history: RwSignal<Vec<u64>>,
    pub history_at: RwSignal<Option<usize>>,
    /// Benchmark results (`?bench` in the URL), as JSON.
    pub bench: RwSignal<Option<String>>,
    /// What the worker is busy with, e.g. "Loading checkpoint…".
    pub busy: RwSignal<Option<String>>,
    /// Step and time (ms) of the last model kept in the browser's store.
    kept: StoredValue<(u64, f64)>,
    /// Keep the model once it is ready: the user loaded a checkpoint, which must survive a
    /// reload even if it never trains (an inspect-only model such as MiniLM), or reset.
    keep_when_ready: StoredValue<bool>,
    /// The curves kept with a model being restored; they return when it is ready.
    restored_curves: StoredValue<Option<Curves>>,
    client: StoredValue<Option<LabClient>, LocalStorage>,
}

/// While training, keep the model in the browser this often: a reload mid-training loses at
/// most this much. Keeping costs the worker a checkpoint and training state (~1.5 MB for tiny,
/// ~40 MB for small) and an IndexedDB write; the page only writes the curves (≤ 120 kB).
const KEEP_EVERY_MS: f64 = 5_000.0;

impl Live {
    pub fn start() -> Live {
        let live = Live {
            info: RwSignal::new(None),
            inspection: RwSignal::new(None),
            trainable: RwSignal::new(Ok(())),
            playing: RwSignal::new(false),
            step: RwSignal::new(0),
            steps_per_second: RwSignal::new(0.0),
            stopped: RwSignal::new(None),
            notice: RwSignal::new(None),
            error: RwSignal::new(None),
            curves: RwSignal::new(Curves::new()),
            history: RwSignal::new(Vec::new()),
            history_at: RwSignal::new(None),
            bench: RwSignal::new(None),
            busy: RwSignal::new(Some("Starting the training worker…".into())),
            kept: StoredValue::new((0, 0.0)),
            keep_when_ready: StoredValue::new(false),
            restored_curves: StoredValue::new(None),
            client: StoredValue::new_local(None),
        };
        match LabClient::spawn(move |message, attachments| live.apply(message, attachments)) {
            Ok(client) => live.client.set_value(Some(client)),
            Err(e) => live.error.set(Some(e)),
        }
        live
    }

    pub fn send(&self, message: ToWorker) {
        self.send_with(message, &[]);
    }

    /// `message` with files' bytes beside it (see `protocol`).
    pub fn send_with(&self, message: ToWorker, attachments: &[&[u8]]) {
        let sent = self.client.with_value(|c| match c {
            Some(client) => client.send(&message, attachments),
            None => Err("the training worker is not running".into()),
        });
        if let Err(e) = sent {
            self.error.set(Some(e));
        }
    }

    /// A fresh model, which replaces the one kept in the browser once it is ready (the worker
    /// writes in order, so a keep still under way cannot bring the old one back).
    pub fn reset(&self, corpus: String, settings: LabSettings) {
        self.busy.set(Some("Building a fresh model…".into()));
        self.keep_when_ready.set_value(true);
        self.send(ToWorker::Reset { corpus, settings });
    }

    /// Checkpoint files the user picked.
    pub fn load(&self, picked: PickedCheckpoint, corpus: String, settings: LabSettings) {
        self.busy.set(Some(format!("Loading {}…", picked.name)));
        self.keep_when_ready.set_value(true);
        let PickedCheckpoint {
            name,
            config_json,
            vocab_txt,
            tokenizer_config_json,
            safetensors,
        } = picked;
        let files = SavedModel {
            name,
            step: 0,
            config_json,
            vocab_txt,
            tokenizer_config_json,
            safetensors,
            training_state: None,
            curves: Curves::new(),
        };
        self.send_load(files, corpus, settings);
    }

    /// The model kept in the browser by an earlier visit.
    pub fn restore(&self, saved: SavedModel, corpus: String, settings: LabSettings) {
        self.busy.set(Some(format!(
            "Restoring {} at step {}…",
            saved.name, saved.step
        )));
        self.kept.set_value((saved.step, js_sys::Date::now()));
        self.restored_curves.set_value(Some(saved.curves.clone()));
        self.send_load(saved, corpus, settings);
    }

    /// Checkpoint files to the worker; the weights (and a kept model's training state) travel
    /// beside the message.
    fn send_load(&self, files: SavedModel, corpus: String, settings: LabSettings) {
        let (load, attachments) = ToWorker::load(files, corpus, settings);
        let attachments: Vec<&[u8]> = attachments.iter().map(Vec::as_slice).collect();
        self.send_with(load, &attachments);
    }

    pub fn inspect(&self, probe: ProbeInput) {
        let at = self.history_at.get_untracked();
        self.send(ToWorker::Inspect { probe, at });
    }

    /// Keep the model now if it has trained since it was last kept (the page is being hidden,
    /// and may be closed or reloaded next).
    pub fn keep_now(&self) {
        self.keep_if_due(self.step.get_untracked(), false);
    }

    /// Ask for the model to keep when it has trained since it was last kept, and training has
    /// paused or it has been a while.
    fn keep_if_due(&self, step: u64, playing: bool) {
        let (kept_step, kept_at) = self.kept.get_value();
        let now = js_sys::Date::now();
        if step > kept_step && (!playing || now - kept_at > KEEP_EVERY_MS) {
            self.kept.set_value((step, now));
            self.send(ToWorker::Keep);
        }
    }

    fn apply(&self, message: FromWorker, attachments: Vec<Vec<u8>>) {
        match message {
            FromWorker::Hello => {}
            FromWorker::Bench { results } => {
                let json: serde_json::Map<String, serde_json::Value> =
                    results.into_iter().map(|(k, v)| (k, v.into())).collect();
                self.bench
                    .set(Some(serde_json::Value::Object(json).to_string()));
            }
            FromWorker::Ready {
                info,
                step,
                trainable,
                notice,
            } => {
                self.info.set(Some(info));
                self.step.set(step);
                // The controls already say why a model cannot train; say it once.
                let repeats = notice
                    .as_ref()
                    .is_some_and(|n| trainable.as_ref().err() == Some(n));
                self.notice.set(notice.filter(|_| !repeats));
                self.trainable.set(trainable);
                if std::mem::take(&mut *self.keep_when_ready.write_value()) {
                    self.kept.set_value((step, js_sys::Date::now()));
                    self.send(ToWorker::Keep);
                }
                self.playing.set(false);
                self.stopped.set(None);
                self.error.set(None);
                self.busy.set(None);
                let restored = self.restored_curves.write_value().take();
                self.curves
                    .set(restored.map_or_else(Curves::new, |c| c.until(step)));
                self.history_at.set(None);
            }
            FromWorker::Progress {
                points,
                steps_per_second,
                playing,
            } => {
                if let Some(last) = points.last() {
                    self.step.set(last.step);
                    self.curves.update(|c| c.extend(points.iter().copied()));
                }
                if steps_per_second > 0.0 {
                    self.steps_per_second.set(steps_per_second);
                }
                self.playing.set(playing);
                self.keep_if_due(self.step.get_untracked(), playing);
            }
            FromWorker::Inspected { at, result, .. } => {
                if at == self.history_at.get_untracked() {
                    self.inspection.set(Some(result.map(Arc::new)));
                }
            }
            FromWorker::History { steps } => {
                if self
                    .history_at
                    .get_untracked()
                    .is_some_and(|i| i >= steps.len())
                {
                    self.history_at.set(None);
                }
                self.history.set(steps);
            }
            FromWorker::Stopped { reason, .. } => {
                self.playing.set(false);
                self.stopped.set(Some(reason));
            }
            FromWorker::Failed { message } => {
                self.keep_when_ready.set_value(false);
                self.restored_curves.set_value(None);
                self.busy.set(None);
                self.error.set(Some(message));
            }
            FromWorker::Kept { step } => {
                // Loss points up to `step` arrived before this message: keep the curves to match.
                let curves = self.curves.with_untracked(|c| c.clone().until(step));
                let error = self.error;
                leptos::task::spawn_local(async move {
                    if let Err(e) = storage::save_curves(&curves).await {
                        error.set(Some(e));
                    }
                });
            }
            FromWorker::Checkpoint {
                config_json,
                vocab_txt,
                tokenizer_config_json,
                ..
            } => {
                let safetensors = attachments.into_iter().next().unwrap_or_default();
                let files = [
                    ("config.json", config_json.as_bytes(), "application/json"),
                    (
                        "model.safetensors",
                        safetensors.as_slice(),
                        "application/octet-stream",
                    ),
                    ("vocab.txt", vocab_txt.as_bytes(), "text/plain"),
                    (
                        "tokenizer_config.json",
                        tokenizer_config_json.as_bytes(),
                        "application/json",
                    ),
                ];
                if let Err(e) = download_files(&files) {
                    self.error.set(Some(e));
                }
            }
        }
    }
}
