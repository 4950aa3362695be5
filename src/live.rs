//! The page's view of the training worker: signals the components read, a `send` to ask for
//! things, and `apply`, which turns each worker reply into signal updates.

use crate::lab::{LabSettings, ModelInfo, ProbeInput};
use crate::protocol::{CurvePoint, FromWorker, ToWorker};
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
    pub points: RwSignal<Vec<CurvePoint>>,
    /// Steps with kept weights; `history_at` picks one (None = live).
    pub history: RwSignal<Vec<u64>>,
    pub history_at: RwSignal<Option<usize>>,
    /// What the worker is busy with, e.g. "Loading checkpoint…".
    pub busy: RwSignal<Option<String>>,
    client: StoredValue<Option<LabClient>, LocalStorage>,
    on_checkpoint: StoredValue<Option<Callback<(FromWorker, Vec<u8>)>>, LocalStorage>,
}

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
            points: RwSignal::new(Vec::new()),
            history: RwSignal::new(Vec::new()),
            history_at: RwSignal::new(None),
            busy: RwSignal::new(Some("Starting the training worker…".into())),
            client: StoredValue::new_local(None),
            on_checkpoint: StoredValue::new_local(None),
        };
        match LabClient::spawn(move |message, bytes| live.apply(message, bytes)) {
            Ok(client) => live.client.set_value(Some(client)),
            Err(e) => live.error.set(Some(e)),
        }
        live
    }

    pub fn send(&self, message: ToWorker) {
        self.send_with(message, None);
    }

    pub fn send_with(&self, message: ToWorker, bytes: Option<&[u8]>) {
        let sent = self.client.with_value(|c| match c {
            Some(client) => client.send(&message, bytes),
            None => Err("the training worker is not running".into()),
        });
        if let Err(e) = sent {
            self.error.set(Some(e));
        }
    }

    pub fn reset(&self, corpus: String, settings: LabSettings) {
        self.busy.set(Some("Building a fresh model…".into()));
        self.send(ToWorker::Reset { corpus, settings });
    }

    pub fn inspect(&self, probe: ProbeInput) {
        let at = self.history_at.get_untracked();
        self.send(ToWorker::Inspect { probe, at });
    }

    /// Called with the Checkpoint reply and its weights when a download is ready.
    pub fn on_checkpoint(&self, callback: Callback<(FromWorker, Vec<u8>)>) {
        self.on_checkpoint.set_value(Some(callback));
    }

    fn apply(&self, message: FromWorker, bytes: Option<Vec<u8>>) {
        match message {
            FromWorker::Hello => {}
            FromWorker::Ready {
                info,
                step,
                trainable,
                notice,
            } => {
                self.info.set(Some(info));
                self.step.set(step);
                self.trainable.set(trainable);
                self.notice.set(notice);
                self.playing.set(false);
                self.stopped.set(None);
                self.error.set(None);
                self.busy.set(None);
                self.points.set(Vec::new());
                self.history_at.set(None);
            }
            FromWorker::Progress {
                points,
                steps_per_second,
                playing,
            } => {
                if let Some(last) = points.last() {
                    self.step.set(last.step);
                    self.points.update(|all| all.extend_from_slice(&points));
                }
                if steps_per_second > 0.0 {
                    self.steps_per_second.set(steps_per_second);
                }
                self.playing.set(playing);
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
                self.busy.set(None);
                self.error.set(Some(message));
            }
            checkpoint @ FromWorker::Checkpoint { .. } => {
                let callback = self.on_checkpoint.get_value();
                if let Some(callback) = callback {
                    callback.run((checkpoint, bytes.unwrap_or_default()));
                }
            }
        }
    }
}
