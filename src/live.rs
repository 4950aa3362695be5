//! The page's view of the training worker: signals the components read, a `send` to ask for
//! things, and `apply`, which turns each worker reply into signal updates.

use crate::claims::state::{ClaimState, Claims};
use crate::storage::{self, Kept};
use crate::training::checkpoint::download::download_checkpoint;
use crate::worker_client::{Death, LabClient};
use engine::batch_view::{BatchView, MaskingCounts};
use engine::inspect::Inspection;
use leptos::prelude::*;
use protocol::messages::FilesFor;
use protocol::{
    Claim, CurvePoint, Curves, FromWorker, GenerationSettings, GenerationStep, LabError,
    LabSettings, ModelBundle, ModelInfo, ProbeInput, ToWorker, WorkerCount, WorkersInUse,
};
use std::sync::Arc;

/// The latest inspection of the probe, or the error explaining why there is none.
pub type Shown = Option<Result<Arc<Inspection>, LabError>>;

/// The explorer's generation: the prompt's tokens, each new token, whether more are coming,
/// and why it could not run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Generation {
    pub prompt: Vec<String>,
    pub steps: Vec<GenerationStep>,
    pub running: bool,
    pub error: Option<LabError>,
}

#[derive(Clone, Copy)]
pub struct Live {
    pub info: RwSignal<Option<ModelInfo>>,
    pub inspection: RwSignal<Shown>,
    /// The training step of the weights `inspection` was read with.
    pub inspected_step: RwSignal<Option<u64>>,
    /// Compare's model B (None when not comparing): its shape, its inspection of the same
    /// probe, and its curves at the same steps as `curves`.
    pub info_b: RwSignal<Option<ModelInfo>>,
    pub inspection_b: RwSignal<Shown>,
    pub curves_b: RwSignal<Curves>,
    /// Ok, or why this model cannot be trained.
    pub trainable: RwSignal<Result<(), LabError>>,
    pub playing: RwSignal<bool>,
    pub step: RwSignal<u64>,
    pub steps_per_second: RwSignal<f64>,
    /// Why training stopped by itself (NaN/∞ loss).
    pub stopped: RwSignal<Option<LabError>>,
    pub notice: RwSignal<Option<String>>,
    pub error: RwSignal<Option<LabError>>,
    pub curves: RwSignal<Curves>,
    /// The batch of the latest step (None before the model's first), and the running counts of
    /// every batch `make_batch` drew for this model.
    pub batch: RwSignal<Option<Arc<BatchView>>>,
    pub counts: RwSignal<MaskingCounts>,
    /// Steps with kept weights; `history_at` picks one (None = live).
    pub history: RwSignal<Vec<u64>>,
    pub history_at: RwSignal<Option<usize>>,
    /// The Claims panel's experiments.
    pub claims: RwSignal<Claims>,
    /// The explorer's Generate (decoders).
    pub generated: RwSignal<Generation>,
    /// Benchmark results (`?bench` in the URL), as JSON.
    pub bench: RwSignal<Option<String>>,
    /// What the worker is busy with, e.g. "Loading checkpoint…".
    pub busy: RwSignal<Option<String>>,
    /// How many workers train, and why not more (the training worker decides; None before
    /// it says).
    pub workers: RwSignal<Option<WorkersInUse>>,
    /// Why the worker died (a panic, out of memory) or never started, as the sentence the page
    /// shows, until Restart starts another.
    pub crashed: RwSignal<Option<String>>,
    /// What was kept from an earlier visit but unreadable or invalid, and so reset: one
    /// sentence each, shown until dismissed.
    pub notes: RwSignal<Vec<String>>,
    /// Step and time (ms) of the last model kept in the browser's store.
    kept: StoredValue<(u64, f64)>,
    /// Keep the model once it is ready: the user loaded a checkpoint, which must survive a
    /// reload even if it never trains (an inspect-only model such as MiniLM), or reset.
    keep_when_ready: StoredValue<bool>,
    /// The curves kept with a model being restored (and with its model B); they return when
    /// it is ready.
    restored_curves: StoredValue<Option<(Curves, Option<Curves>)>>,
    /// A notice for when the next model is ready (the worker's own notice, if any, wins).
    ready_notice: StoredValue<Option<String>>,
    /// Corpus and settings of a kept model being restored: if it fails to load, a fresh model
    /// on them starts instead.
    restoring: StoredValue<Option<(String, LabSettings)>>,
    /// The next Ready leaves the curves as they are (a restart: they already show the run).
    keep_curves: StoredValue<bool>,
    /// What a new worker must be told again: the speed limit, the Workers setting (a signal:
    /// the page keeps it for the next visit) and the probe.
    speed: StoredValue<Option<f64>>,
    pub worker_count: RwSignal<WorkerCount>,
    probe: StoredValue<Option<ProbeInput>>,
    /// Which worker is current: replies and deaths of an earlier one are ignored.
    generation: StoredValue<u32>,
    client: StoredValue<Option<LabClient>, LocalStorage>,
    /// Who waits for the model's files for "Open in PyTorch" or "Prepare for a course".
    notebook: StoredValue<Option<NotebookFiles>, LocalStorage>,
    /// Who hears why files opened from an address could not be loaded (`open_from_address`).
    load_failed: StoredValue<Option<LoadFailed>, LocalStorage>,
}

/// What "Open in PyTorch" does with the model's files (A's, and B's while comparing), or with
/// why they did not come.
pub type NotebookFiles = Box<dyn FnOnce(Result<(ModelBundle, Option<ModelBundle>), LabError>)>;
/// What hears why files opened from an address could not be loaded.
type LoadFailed = Box<dyn FnOnce(LabError)>;

/// While training, keep the model in the browser this often: a reload mid-training loses at
/// most this much. Keeping costs the worker a checkpoint and training state (~1.5 MB for tiny,
/// ~40 MB for small) and an IndexedDB write; the page only writes the curves (≤ 120 kB).
const KEEP_EVERY_MS: f64 = 5_000.0;

impl Live {
    pub fn start() -> Live {
        let live = Live {
            info: RwSignal::new(None),
            inspection: RwSignal::new(None),
            inspected_step: RwSignal::new(None),
            info_b: RwSignal::new(None),
            inspection_b: RwSignal::new(None),
            curves_b: RwSignal::new(Curves::new()),
            trainable: RwSignal::new(Ok(())),
            playing: RwSignal::new(false),
            step: RwSignal::new(0),
            steps_per_second: RwSignal::new(0.0),
            stopped: RwSignal::new(None),
            notice: RwSignal::new(None),
            error: RwSignal::new(None),
            curves: RwSignal::new(Curves::new()),
            batch: RwSignal::new(None),
            counts: RwSignal::new(MaskingCounts::default()),
            history: RwSignal::new(Vec::new()),
            history_at: RwSignal::new(None),
            claims: RwSignal::new(Claims::default()),
            generated: RwSignal::new(Generation::default()),
            bench: RwSignal::new(None),
            busy: RwSignal::new(Some("Starting the training worker…".into())),
            workers: RwSignal::new(None),
            crashed: RwSignal::new(None),
            notes: RwSignal::new(Vec::new()),
            kept: StoredValue::new((0, 0.0)),
            keep_when_ready: StoredValue::new(false),
            restored_curves: StoredValue::new(None),
            ready_notice: StoredValue::new(None),
            restoring: StoredValue::new(None),
            keep_curves: StoredValue::new(false),
            speed: StoredValue::new(None),
            worker_count: RwSignal::new(WorkerCount::Auto),
            probe: StoredValue::new(None),
            generation: StoredValue::new(0),
            client: StoredValue::new_local(None),
            notebook: StoredValue::new_local(None),
            load_failed: StoredValue::new_local(None),
        };
        live.spawn_worker();
        live
    }

    /// A new worker, which from now on is the one that counts.
    fn spawn_worker(&self) {
        let live = *self;
        let generation = self.generation.get_value() + 1;
        self.generation.set_value(generation);
        let current = move || live.generation.get_value() == generation;
        let spawned = LabClient::spawn(
            protocol::Role::Lead,
            move |message, attachments, _| {
                // A trap leaves the worker's wasm running on whatever state it had (its timers
                // still fire): once it is dead, only its panic message counts.
                let dead = live.crashed.with_untracked(Option::is_some);
                if current() && (!dead || matches!(message, FromWorker::Crashed { .. })) {
                    live.apply(message, attachments);
                }
            },
            move |death| {
                if current() {
                    live.died(death, false);
                }
            },
        );
        match spawned {
            Ok(client) => self.client.set_value(Some(client)),
            Err(death) => {
                self.client.set_value(None);
                self.died(death, false);
            }
        }
    }

    /// The worker died. Its panic message (`from_panic`) says more than the `error` event that
    /// follows it, so it replaces that, never the other way round.
    fn died(&self, death: Death, from_panic: bool) {
        if from_panic || self.crashed.with_untracked(Option::is_none) {
            self.crashed.set(Some(death.to_string()));
        }
        self.playing.set(false);
        self.busy.set(None);
        self.claims
            .update(|c| c.abandon("the training worker stopped before the experiment ended"));
        self.keep_when_ready.set_value(false);
        self.restored_curves.set_value(None);
        self.restoring.set_value(None);
        self.load_failed.set_value(None);
        // Stop what is left of it, after a moment for its panic message to arrive if the
        // `error` event came first.
        let (live, generation) = (*self, self.generation.get_value());
        let end = wasm_bindgen::closure::Closure::once_into_js(move || {
            if live.generation.get_value() == generation {
                live.client
                    .with_value(|c| c.as_ref().map(LabClient::terminate));
            }
        });
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
                wasm_bindgen::JsCast::unchecked_ref(&end),
                250,
            );
        }
    }

    /// After a crash: a new worker, told what the old one knew (speed, probe), with the last
    /// kept model and its training state, as a reload would. The page keeps its heatmaps until
    /// the new worker's arrive, and its curves, which training then continues.
    pub fn restart(&self, corpus: String, settings: LabSettings) {
        self.revive();
        self.set_busy("Restarting the trainer…".into());
        let live = *self;
        leptos::task::spawn_local(async move {
            match storage::load_model().await {
                Ok(Some(kept)) => {
                    let shown = live
                        .curves
                        .with_untracked(|c| c.last().map_or(0, |p| p.step));
                    if kept.bundle.step <= shown {
                        live.keep_curves.set_value(true);
                    }
                    live.ready_notice.set_value(Some(format!(
                        "The trainer restarted from the model kept at step {}.",
                        kept.bundle.step
                    )));
                    live.restore(kept, corpus, settings);
                }
                Ok(None) | Err(_) => live.reset(corpus, settings),
            }
        });
    }

    /// Replace a dead worker by a new one that knows what the page told the old one.
    fn revive(&self) {
        self.client
            .with_value(|c| c.as_ref().map(LabClient::terminate));
        self.crashed.set(None);
        self.error.set(None);
        self.spawn_worker();
        self.send(ToWorker::Speed(self.speed.get_value()));
        self.send(ToWorker::Workers(self.worker_count.get_untracked()));
        if let Some(probe) = self.probe.get_value() {
            self.send(ToWorker::Inspect { probe, at: None });
        }
    }

    /// What the worker is busy with, unless there is no worker: a dead one does nothing, and
    /// the banner says why.
    fn set_busy(&self, what: String) {
        if self.crashed.with_untracked(Option::is_none) {
            self.busy.set(Some(what));
        }
    }

    pub fn send(&self, message: ToWorker) {
        self.send_with(message, &[]);
    }

    /// Ask for the model's files, for `what` (not "Download checkpoint", which the page hands
    /// to the user itself); `then` gets them when they come.
    pub fn files_for(
        &self,
        what: FilesFor,
        then: impl FnOnce(Result<(ModelBundle, Option<ModelBundle>), LabError>) + 'static,
    ) {
        self.notebook.set_value(Some(Box::new(then)));
        self.send(ToWorker::Download(what));
    }

    /// `message` with files' bytes beside it (`ModelBundle::detach_both`).
    pub fn send_with(&self, message: ToWorker, attachments: &[&[u8]]) {
        // A dead worker hears nothing; the banner says so and offers Restart.
        if self.crashed.with_untracked(Option::is_some) {
            return;
        }
        match &message {
            ToWorker::Speed(speed) => self.speed.set_value(*speed),
            ToWorker::Workers(count) => self.worker_count.set(*count),
            ToWorker::Inspect { probe, .. } => self.probe.set_value(Some(probe.clone())),
            // The worker ends a generation when the weights change (`Session::handle`).
            ToWorker::Play
            | ToWorker::Step
            | ToWorker::Rewind { .. }
            | ToWorker::Reset { .. }
            | ToWorker::Load { .. }
                if self.generated.with_untracked(|g| g.running) =>
            {
                self.generated.update(|g| g.running = false);
            }
            _ => {}
        }
        let sent = self.client.with_value(|c| match c {
            Some(client) => client.send(&message, attachments),
            None => Err(LabError::browser("the training worker is not running")),
        });
        if let Err(e) = sent {
            self.error.set(Some(e));
        }
    }

    /// A fresh model, which replaces the one kept in the browser once it is ready (the worker
    /// writes in order, so a keep still under way cannot bring the old one back).
    pub fn reset(&self, corpus: String, settings: LabSettings) {
        if self.crashed.with_untracked(Option::is_some) {
            self.revive();
        }
        self.set_busy("Building a fresh model…".into());
        self.keep_when_ready.set_value(true);
        self.send(ToWorker::Reset { corpus, settings });
    }

    /// Checkpoint files the user picked.
    pub fn load(&self, picked: ModelBundle, corpus: String, settings: LabSettings) {
        self.set_busy(format!("Loading {}…", picked.name));
        self.keep_when_ready.set_value(true);
        if settings.compare.is_some() {
            self.ready_notice.set_value(Some(
                "Compare trains two fresh models side by side: a checkpoint loaded from disk runs alone. Reset to compare again.".into(),
            ));
        }
        self.send_load(picked, None, corpus, settings);
    }

    /// Files from a web address (`checkpoint=`), kept only once the model trains (a link leaves
    /// the kept model as it is); `failed` hears why the worker could not open them.
    pub fn open_from_address(
        &self,
        bundle: ModelBundle,
        corpus: String,
        settings: LabSettings,
        failed: impl FnOnce(LabError) + 'static,
    ) {
        self.set_busy(format!("Opening {}…", bundle.name));
        self.keep_when_ready.set_value(false);
        // Its first trained step is kept (`keep_if_due`), whatever step an earlier model had.
        self.kept.set_value((bundle.step, js_sys::Date::now()));
        self.load_failed.set_value(Some(Box::new(failed)));
        if settings.compare.is_some() {
            self.ready_notice.set_value(Some(
                "Compare trains two fresh models side by side: a model opened from an address runs alone. Reset to compare again.".into(),
            ));
        }
        self.send_load(bundle, None, corpus, settings);
    }

    /// The model kept in the browser by an earlier visit.
    pub fn restore(&self, kept: Kept, corpus: String, settings: LabSettings) {
        let Kept {
            bundle,
            curves,
            compare,
        } = kept;
        let (compare, curves_b) = compare.unzip();
        self.set_busy(format!(
            "Restoring {} at step {}…",
            bundle.name, bundle.step
        ));
        self.kept.set_value((bundle.step, js_sys::Date::now()));
        self.restored_curves.set_value(Some((curves, curves_b)));
        self.restoring
            .set_value(Some((corpus.clone(), settings.clone())));
        self.send_load(bundle, compare, corpus, settings);
        self.send(ToWorker::RestoreHistory);
    }

    /// A bundle (and Compare's model B) to the worker; their bytes travel beside the message.
    fn send_load(
        &self,
        mut bundle: ModelBundle,
        mut compare: Option<ModelBundle>,
        corpus: String,
        settings: LabSettings,
    ) {
        let attachments = ModelBundle::detach_both(&mut bundle, compare.as_mut());
        let attachments: Vec<&[u8]> = attachments.iter().map(Vec::as_slice).collect();
        let load = ToWorker::Load {
            bundle,
            compare,
            corpus,
            settings,
        };
        self.send_with(load, &attachments);
    }

    /// Run `claim`'s experiment in the worker, on the current model and probe.
    pub fn run_claim(&self, claim: Claim) {
        let probe = self.probe.get_value().unwrap_or_default();
        // Shown at once as the worker will take it: now, or after the runs before it.
        self.claims.update(|c| {
            let state = if c.busy() && !c.get(claim).running() {
                ClaimState::Queued
            } else {
                ClaimState::Running { done: 0, total: 0 }
            };
            c.set(claim, state);
        });
        self.send(ToWorker::RunClaim { claim, probe });
    }

    pub fn cancel_claim(&self, claim: Claim) {
        self.send(ToWorker::CancelClaim { claim });
    }

    pub fn inspect(&self, probe: ProbeInput) {
        let at = self.history_at.get_untracked();
        self.send(ToWorker::Inspect { probe, at });
    }

    /// Ends the worker, as the page goes into the browser's back/forward cache (`app.rs`,
    /// `nothing_frozen_open`): nothing it was doing finishes.
    pub fn end_worker(&self) {
        self.client
            .with_value(|c| c.as_ref().map(LabClient::terminate));
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

    /// Continue `sentence` with the decoder, a token at a time; the explorer shows each.
    pub fn generate(&self, sentence: String, settings: GenerationSettings) {
        self.generated.set(Generation {
            running: true,
            ..Generation::default()
        });
        self.send(ToWorker::Generate {
            prompt: sentence,
            settings,
        });
    }

    pub fn stop_generating(&self) {
        self.send(ToWorker::StopGenerating);
    }

    /// One reply of the worker, turned into signal updates.
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
                compare,
                step,
                trainable,
                notice,
            } => self.ready(info, compare, step, trainable, notice),
            FromWorker::Progress {
                points,
                points_b,
                steps_per_second,
                playing,
                batch,
                counts,
            } => {
                self.batch_drawn(batch, counts);
                self.progressed(&points, points_b, steps_per_second, playing);
            }
            FromWorker::Inspected {
                step,
                at,
                result,
                compare,
            } => {
                if at == self.history_at.get_untracked() {
                    self.inspected_step.set(Some(step));
                    self.inspection.set(Some(result.map(Arc::new)));
                    self.inspection_b.set(compare.map(|r| r.map(Arc::new)));
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
            FromWorker::Crashed { message } => self.died(Death::Stopped(message), true),
            FromWorker::Workers(in_use) => self.workers.set(Some(in_use)),
            FromWorker::Claim(report) => self.claims.update(|c| c.report(report)),
            FromWorker::Generated {
                prompt,
                steps,
                done,
                inspection,
            } => {
                self.history_at.set(None);
                self.inspection.set(Some(Ok(Arc::new(inspection))));
                self.generated.set(Generation {
                    prompt,
                    steps,
                    running: !done,
                    error: None,
                });
            }
            FromWorker::Failed(error) => self.failed(error),
            FromWorker::Kept { step } => self.kept(step),
            FromWorker::Checkpoint {
                mut bundle,
                mut compare,
                files_for,
            } => {
                ModelBundle::attach_both(&mut bundle, compare.as_mut(), attachments);
                self.checkpoint(bundle, compare, files_for);
            }
        }
    }

    /// A model is loaded: its shape, step and whether it trains; the curves it was kept with
    /// (a restore), none (a fresh or loaded model) or those shown (a restart).
    fn ready(
        &self,
        info: ModelInfo,
        compare: Option<ModelInfo>,
        step: u64,
        trainable: Result<(), LabError>,
        notice: Option<String>,
    ) {
        self.info.set(Some(info));
        if compare.is_none() {
            self.inspection_b.set(None);
            self.curves_b.set(Curves::new());
        }
        let compare_ready = compare.is_some();
        self.info_b.set(compare);
        self.step.set(step);
        // The controls already say why a model cannot train; say it once.
        let repeats = notice.as_ref().is_some_and(|n| {
            trainable
                .as_ref()
                .err()
                .is_some_and(|e| e.to_string() == *n)
        });
        let planned = self.ready_notice.write_value().take();
        self.notice.set(notice.filter(|_| !repeats).or(planned));
        self.restoring.set_value(None);
        self.load_failed.set_value(None);
        self.trainable.set(trainable);
        if std::mem::take(&mut *self.keep_when_ready.write_value()) {
            self.kept.set_value((step, js_sys::Date::now()));
            self.send(ToWorker::Keep);
        }
        self.playing.set(false);
        self.stopped.set(None);
        self.error.set(None);
        self.busy.set(None);
        let (restored, restored_b) = self.restored_curves.write_value().take().unzip();
        if !std::mem::take(&mut *self.keep_curves.write_value()) {
            self.curves
                .set(restored.map_or_else(Curves::new, |c| c.until(step)));
            let b = restored_b.flatten().filter(|_| compare_ready);
            self.curves_b
                .set(b.map_or_else(Curves::new, |c| c.until(step)));
        }
        self.history_at.set(None);
        // A new model: its batches and counts start again (a restored run's counts
        // start from the restore; the worker does not keep them).
        self.batch.set(None);
        self.counts.set(MaskingCounts::default());
    }

    /// The batch of the latest step, and the running counts: the worker sends a batch a few
    /// times a second while playing (worker::BATCH_MS).
    fn batch_drawn(&self, batch: Option<BatchView>, counts: MaskingCounts) {
        if let Some(batch) = batch {
            self.batch.set(Some(Arc::new(batch)));
        }
        if self.counts.with_untracked(|c| *c != counts) {
            self.counts.set(counts);
        }
    }

    /// Steps done since the last report: the curves grow, and the model is kept when due.
    fn progressed(
        &self,
        points: &[CurvePoint],
        points_b: Vec<CurvePoint>,
        steps_per_second: f64,
        playing: bool,
    ) {
        if let Some(last) = points.last() {
            self.step.set(last.step);
            self.curves.update(|c| c.extend(points.iter().copied()));
        }
        if !points_b.is_empty() {
            self.curves_b.update(|c| c.extend(points_b));
        }
        if steps_per_second > 0.0 {
            self.steps_per_second.set(steps_per_second);
        }
        self.playing.set(playing);
        self.keep_if_due(self.step.get_untracked(), playing);
    }

    /// A request failed: said beside Generate when that was under way; a kept model that no
    /// longer loads gives way to a fresh one; otherwise the page shows why.
    fn failed(&self, error: LabError) {
        if self.generated.with_untracked(|g| g.running) {
            // The request under way was Generate: say why beside its button.
            self.generated.update(|g| {
                g.running = false;
                g.error = Some(error);
            });
            return;
        }
        if let Some(failed) = self.load_failed.try_update_value(Option::take).flatten() {
            // Files opened from an address: their opener says why and decides what comes next.
            self.busy.set(None);
            failed(error);
            return;
        }
        if let Some((corpus, settings)) = self.restoring.write_value().take() {
            // A kept model that no longer loads must not leave the page without one.
            self.keep_curves.set_value(false);
            self.ready_notice.set_value(Some(format!(
                "The model kept in this browser could not be loaded ({error}), so a fresh one starts."
            )));
            self.reset(corpus, settings);
            return;
        }
        self.keep_when_ready.set_value(false);
        self.restored_curves.set_value(None);
        self.busy.set(None);
        if let Some(waiting) = self.notebook.try_update_value(Option::take).flatten() {
            waiting(Err(error.clone()));
        }
        self.error.set(Some(error));
    }

    /// The worker kept the model at `step`: the page keeps the curves to match (their points up
    /// to `step` arrived before this message), then says so on the page (`say_kept`).
    fn kept(&self, step: u64) {
        let curves = self.curves.with_untracked(|c| c.clone().until(step));
        let curves_b = self
            .info_b
            .with_untracked(Option::is_some)
            .then(|| self.curves_b.with_untracked(|c| c.clone().until(step)));
        let kept = KeptNow {
            step,
            name: self
                .info
                .with_untracked(|i| i.as_ref().map(|i| i.name.clone())),
            curves: curves.last().map(|p| p.step),
        };
        let error = self.error;
        leptos::task::spawn_local(async move {
            match storage::save_curves(&curves, curves_b.as_ref()).await {
                Ok(()) => say_kept(&kept),
                Err(e) => error.set(Some(e)),
            }
        });
    }

    /// The model's files the page asked for: to a notebook or a course waiting for them, or
    /// downloaded.
    fn checkpoint(&self, bundle: ModelBundle, compare: Option<ModelBundle>, files_for: FilesFor) {
        if files_for != FilesFor::Checkpoint {
            if let Some(waiting) = self.notebook.try_update_value(Option::take).flatten() {
                waiting(Ok((bundle, compare)));
            }
            return;
        }
        if let Err(e) = download_checkpoint(&bundle, compare.as_ref()) {
            self.error.set(Some(e));
        }
    }
}

/// What is kept in this browser once a keep has ended (the worker wrote the model, the page
/// its curves): the model's step and name, and the step of the curves' last point.
#[derive(serde::Serialize)]
struct KeptNow {
    step: u64,
    name: Option<String>,
    curves: Option<u64>,
}

/// Says what is kept on the page's root element, as `data-kept` (JSON): the tests wait on it
/// (`e2e/harness.mjs`, `keptInPage`) rather than read the store's bytes.
fn say_kept(kept: &KeptNow) {
    let root = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element());
    if let (Some(root), Ok(json)) = (root, serde_json::to_string(kept)) {
        let _ = root.set_attribute("data-kept", &json);
    }
}
