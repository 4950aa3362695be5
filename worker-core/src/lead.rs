//! The training worker the page talks to (the lead): the page's messages in, the session's
//! replies out at the cadences the page can take, steps shared with its gradient workers, and
//! claims passed to its claim worker. Everything outside (the clock, `postMessage`, timers,
//! other workers, the browser's store) is reached through `Host`, which the web worker
//! implements over the browser and the tests over plain data.
//!
//! Time slicing: at most ~`SLICE_MS` of steps per wake-up, then the lead asks to be woken again
//! (`Wake::Tick`), so Pause/Step/Inspect messages get through between slices.

use crate::replica::Param;
use crate::session::{HistoryToKeep, Reply, Session, SharedStep};
use engine::batch_view::BatchView;
use protocol::claims::{REMEASURE_MS, REMEASURE_PLAYING_MAX_MS};
use protocol::record::HistoryIndex;
use protocol::turns::{Asked, Cancelled, ClaimTurns};
use protocol::workers::{AutoMeasurement, GradientResult, Measured, WorkerCount, WorkersInUse};
use protocol::{
    Claim, Crash, CurvePoint, FromClaimWorker, FromWorker, LabError, LabResult, ModelBundle,
    ToClaimWorker, ToGradientWorker, ToWorker,
};
use std::collections::{BTreeSet, VecDeque};

const SLICE_MS: f64 = 30.0;
/// Snapshots of the probe while playing: about five a second.
const SNAPSHOT_MS: f64 = 200.0;
/// Loss points go to the page at most ten times a second: each post redraws the curves.
const PROGRESS_MS: f64 = 100.0;
/// The Batch view's batch while playing, at most this often: each costs a forward pass here
/// and a redraw of its rows on the page, and one a third of a second is more than the eye
/// reads. Paused, every Progress carries it (Step's included).
const BATCH_MS: f64 = 350.0;
/// ... and at most a tenth of the time: that forward pass is the whole batch's, on this
/// worker alone (a third of a step), which for the small preset at batch 32 came every step.
const BATCH_SHARE: f64 = 0.1;
/// Between two generated tokens: slow enough to watch each row arrive, fast enough that 12
/// tokens take under two seconds.
pub const GENERATE_MS: u32 = 120;

/// What the lead asks to be woken for (`Host::wake`, then `Lead::wake`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The next slice of training steps.
    Tick,
    /// A claim's next unit, in a task of its own so messages (Cancel among them) and training
    /// ticks get through between units.
    ClaimUnit,
    /// The next generated token.
    Generation,
}

/// What the lead does with the browser's store, one at a time and in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreJob {
    /// Write the current model and its History (`Lead::keep_plan`, then `Lead::kept`).
    Keep,
    /// Read back the History kept with the model of this generation (`Lead::history_read`).
    RestoreHistory { generation: u64 },
}

/// The world outside the lead.
pub trait Host {
    /// Milliseconds from a fixed origin.
    fn now(&self) -> f64;
    /// A message for the page.
    fn post(&mut self, reply: Reply);
    /// Wake the lead with `wake` in a task of its own: at once, or after `after_ms`.
    fn wake(&mut self, wake: Wake, after_ms: Option<u32>);
    /// Queue work on the browser's store (a job already waiting is not queued twice).
    fn store(&mut self, job: StoreJob);
    /// This machine's logical cores.
    fn cores(&self) -> usize;
    /// Whether this browser lets a worker start workers (Safari before 15.5 does not).
    fn nested_workers(&self) -> bool;
    /// Exactly `count` gradient workers: new ones started, surplus ones ended. Err when one
    /// cannot start (those started are kept).
    fn gradient_workers(&mut self, count: usize) -> LabResult<()>;
    /// A message for gradient worker `index`, with the weights beside it for a job.
    fn to_gradient_worker(
        &mut self,
        index: usize,
        message: &ToGradientWorker,
        weights: Option<&[Param<'_>]>,
    ) -> LabResult<()>;
    /// A message for the claim worker, started first if none runs.
    fn to_claim_worker(
        &mut self,
        message: &ToClaimWorker,
        attachments: &[Vec<u8>],
    ) -> LabResult<()>;
    /// End the claim worker; nothing it still had in flight arrives.
    fn end_claim_worker(&mut self);
    /// Die as a test asks (`protocol::Crash`).
    fn die(&mut self, how: Crash);
}

/// How many workers train now, and why not more.
enum Choice {
    Settled(WorkersInUse),
    /// Auto, with more than one worker possible: measuring whether they gain.
    Measuring(AutoMeasurement),
}

/// A step over several workers under way.
struct Pending {
    step: SharedStep,
    /// Each job's answer, once it came.
    answers: Vec<Option<(GradientResult, Vec<f32>)>>,
    started: f64,
    /// A single Step (replies as `Session::handle`'s Step), not a tick of Play.
    single: bool,
}

/// The claim worker, as the lead sees it: whether it runs, the claim it measures and those
/// asked for meanwhile (by the rules of `ClaimTurns`, as in `ClaimQueue` where claims run in
/// the lead), and the model generation its copy is of.
#[derive(Default)]
struct ClaimWorkerState {
    started: bool,
    turns: ClaimTurns<()>,
    copy_of: u64,
}

pub struct Lead {
    session: Session,
    wakes_pending: BTreeSet<WakeKey>,
    last_snapshot: f64,
    /// When the claim that follows training may be measured again, and the wait after a
    /// measurement too long to repeat at the usual cadence (it doubles each time).
    next_remeasure: f64,
    remeasure_backoff: f64,
    /// Fractional steps owed under a speed limit.
    owed: f64,
    last_tick: f64,
    ms_per_step: f64,
    /// Loss points not yet posted (model A's, and Compare's model B's).
    unsent: (Vec<CurvePoint>, Vec<CurvePoint>),
    last_progress: f64,
    last_batch: f64,
    /// How long the last batch view took to make (ms).
    batch_cost: f64,
    /// A Batch view made during a shared step (`views_while_shares_compute`), for the next
    /// Progress while playing.
    batch_made: Option<Option<BatchView>>,
    /// The History entries written to the store, and for which model (`Session::generation`).
    stored: (u64, BTreeSet<u64>),
    /// The Workers setting, and how many train now.
    workers: WorkerCount,
    choice: Choice,
    /// The replica each gradient worker holds (the lead's id for it), once told.
    replicas: Vec<Option<u64>>,
    shared: Option<Pending>,
    /// The page's messages that came while a shared step was under way, handled after it.
    deferred: VecDeque<(ToWorker, Vec<Vec<u8>>)>,
    claim_worker: ClaimWorkerState,
}

/// `Wake` as a set's key.
type WakeKey = u8;

fn key(wake: Wake) -> WakeKey {
    wake as u8
}

impl Default for Lead {
    fn default() -> Self {
        Lead {
            session: Session::default(),
            wakes_pending: BTreeSet::new(),
            last_snapshot: 0.0,
            next_remeasure: 0.0,
            remeasure_backoff: REMEASURE_MS,
            owed: 0.0,
            last_tick: 0.0,
            ms_per_step: 5.0,
            unsent: (Vec::new(), Vec::new()),
            last_progress: 0.0,
            last_batch: 0.0,
            batch_cost: 0.0,
            batch_made: None,
            stored: (0, BTreeSet::new()),
            workers: WorkerCount::Auto,
            choice: Choice::Settled(WorkersInUse {
                using: 1,
                most: 1,
                why: None,
            }),
            replicas: Vec::new(),
            shared: None,
            deferred: VecDeque::new(),
            claim_worker: ClaimWorkerState::default(),
        }
    }
}

impl Lead {
    /// The lead as it starts: how many workers train is decided, and the page told.
    pub fn start(host: &mut impl Host) -> Lead {
        let mut lead = Lead::default();
        lead.choose_workers(host);
        lead
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// One message from the page.
    pub fn message(&mut self, host: &mut impl Host, message: ToWorker, attachments: Vec<Vec<u8>>) {
        // A step over several workers finishes before anything else changes the session.
        if self.shared.is_some() {
            self.deferred.push_back((message, attachments));
            return;
        }
        let replies = match message {
            ToWorker::Bench { iters, warmup } => vec![self.bench(host, iters, warmup)],
            ToWorker::Crash(Crash::GradientWorker) => {
                match self.to_gradient_worker(host, 0, &ToGradientWorker::Crash, None) {
                    Ok(()) => Vec::new(),
                    Err(_) => vec![FromWorker::Failed(LabError::unavailable(
                        "no gradient worker runs: set Workers to 2",
                    ))
                    .into()],
                }
            }
            ToWorker::Crash(Crash::ClaimWorker) => {
                match self.to_claim_worker(host, &ToClaimWorker::Crash) {
                    Ok(()) => Vec::new(),
                    Err(e) => vec![FromWorker::Failed(e).into()],
                }
            }
            ToWorker::Crash(how) => {
                host.die(how);
                Vec::new()
            }
            message @ (ToWorker::RunClaim { .. } | ToWorker::CancelClaim { .. })
                if host.nested_workers() =>
            {
                self.pass_claim(host, message, attachments)
            }
            ToWorker::Keep => {
                host.store(StoreJob::Keep);
                Vec::new()
            }
            ToWorker::RestoreHistory => {
                let generation = self.session.generation();
                host.store(StoreJob::RestoreHistory { generation });
                Vec::new()
            }
            ToWorker::Workers(count) => {
                self.workers = count;
                self.choose_workers(host);
                Vec::new()
            }
            ToWorker::Step if self.workers_now() > 1 => {
                self.session.before_single_step();
                self.begin_shared(host, true);
                Vec::new()
            }
            message => self.session_answers(host, message, attachments),
        };
        self.post_all(host, replies);
        self.schedule(host);
    }

    /// A message the session answers, with what the lead does around it.
    fn session_answers(
        &mut self,
        host: &mut impl Host,
        message: ToWorker,
        attachments: Vec<Vec<u8>>,
    ) -> Vec<Reply> {
        // Another model, or the claim run afresh: its measurements may be short again.
        if matches!(
            message,
            ToWorker::RunClaim { .. } | ToWorker::Reset { .. } | ToWorker::Load { .. }
        ) {
            self.next_remeasure = 0.0;
            self.remeasure_backoff = REMEASURE_MS;
        }
        // Another model or batch size: whether more workers gain is measured again.
        let remeasure = matches!(
            message,
            ToWorker::Reset { .. } | ToWorker::Load { .. } | ToWorker::Tune(_)
        );
        let replaced = matches!(message, ToWorker::Reset { .. } | ToWorker::Load { .. });
        // Loss points held back go first: after a Rewind, a Reset or a Load they would extend
        // the curve the page has just cut or replaced.
        let held = !self.unsent.0.is_empty() || !self.unsent.1.is_empty();
        if held && (replaced || matches!(message, ToWorker::Rewind { .. })) {
            let reply = self.release_progress(host, 0.0, self.session.playing());
            host.post(reply);
        }
        let replies = self.session.handle(message, attachments);
        if remeasure {
            self.choose_workers(host);
        }
        if replaced {
            // Not the new model's.
            self.batch_made = None;
            self.claim_copy_replaced(host);
        }
        replies
    }

    /// The lead asked to be woken for `wake`, and is.
    pub fn wake(&mut self, host: &mut impl Host, wake: Wake) {
        self.wakes_pending.remove(&key(wake));
        match wake {
            Wake::Tick => self.tick(host),
            Wake::ClaimUnit => {
                let replies = self.session.claim_step(&|| host.now());
                replies.into_iter().for_each(|r| host.post(r));
                self.schedule(host);
            }
            Wake::Generation => {
                let replies = self.session.generation_step();
                replies.into_iter().for_each(|r| host.post(r));
                self.schedule(host);
            }
        }
    }

    /// Ask to be woken for whatever is under way: training, a claim here, a generation.
    fn schedule(&mut self, host: &mut impl Host) {
        if self.session.playing() && self.wakes_pending.insert(key(Wake::Tick)) {
            self.last_tick = host.now();
            // Full speed: the next slice at once (a 0 ms timer would idle 4 ms between
            // slices).
            let after = self
                .session
                .speed
                .map(|steps_per_second| (1000.0 / steps_per_second).clamp(0.0, 250.0) as u32);
            host.wake(Wake::Tick, after);
        }
        if self.session.claim_running() && self.wakes_pending.insert(key(Wake::ClaimUnit)) {
            host.wake(Wake::ClaimUnit, None);
        }
        if self.session.generating() && self.wakes_pending.insert(key(Wake::Generation)) {
            host.wake(Wake::Generation, Some(GENERATE_MS));
        }
    }

    fn tick(&mut self, host: &mut impl Host) {
        // A Pause (or Step) that came after this tick was asked for: no more steps.
        if !self.session.playing() || self.shared.is_some() {
            return;
        }
        if self.workers_now() > 1 {
            self.begin_shared(host, false);
            return;
        }
        let started = host.now();
        let steps = self.steps_due(started);
        let replies = self.session.train(steps);
        let ms_per_step = (host.now() - started).max(0.001) / steps as f64;
        self.measured(host, 1, steps, ms_per_step);
        self.report_steps(host, replies, ms_per_step, false);
    }

    /// As many steps as fit in a slice, or as the speed limit allows since the last tick.
    fn steps_due(&mut self, now_ms: f64) -> usize {
        let fit = (SLICE_MS / self.ms_per_step).floor().max(1.0);
        match self.session.speed {
            None => fit as usize,
            Some(sps) => {
                let owed = self.owed + sps * (now_ms - self.last_tick).max(0.0) / 1000.0;
                let steps = owed.floor().clamp(1.0, fit);
                self.owed = (owed - steps).max(0.0);
                steps as usize
            }
        }
    }

    /// After steps: the speed they went at, and the snapshot and the Heads claim when due
    /// (always after a single Step, as `Session::handle` does for one worker).
    fn report_steps(
        &mut self,
        host: &mut impl Host,
        mut replies: Vec<Reply>,
        ms_per_step: f64,
        single: bool,
    ) {
        self.ms_per_step = 0.8 * self.ms_per_step + 0.2 * ms_per_step;
        if let Some(FromWorker::Progress {
            steps_per_second, ..
        }) = replies.first_mut().map(|r| &mut r.message)
        {
            *steps_per_second = if single {
                0.0
            } else {
                1000.0 / self.ms_per_step
            };
        }
        replies.extend(self.views_due(host, single));
        self.post_all(host, replies);
        self.schedule(host);
    }

    /// The snapshot and the claim that follows training measured again, when due.
    fn views_due(&mut self, host: &mut impl Host, single: bool) -> Vec<Reply> {
        let mut replies = Vec::new();
        let s = &mut self.session;
        if single || host.now() - self.last_snapshot >= SNAPSHOT_MS || !s.playing() {
            self.last_snapshot = host.now();
            replies.push(s.snapshot());
        }
        if single {
            replies.extend(s.refresh_claim());
        } else if host.now() >= self.next_remeasure {
            let start = host.now();
            if let Some(reply) = s.refresh_claim() {
                let took = host.now() - start;
                // At most a twentieth of the time; a long one (training stands still through
                // it, and Pause waits on it) waits twice as long as the one before.
                let wait = if took > REMEASURE_PLAYING_MAX_MS {
                    self.remeasure_backoff *= 2.0;
                    self.remeasure_backoff
                } else {
                    self.remeasure_backoff = REMEASURE_MS;
                    REMEASURE_MS
                };
                self.next_remeasure = host.now() + wait.max(19.0 * took);
                replies.push(reply);
            }
        }
        replies
    }

    /// Replies to the page, Progress held back to its cadence (`hold_progress`).
    fn post_all(&mut self, host: &mut impl Host, replies: Vec<Reply>) {
        for reply in replies {
            for r in self.hold_progress(host, reply) {
                host.post(r);
            }
        }
    }

    /// Progress replies are merged and let through at most every `PROGRESS_MS`, and always
    /// once play has stopped; other replies pass at once. `Kept` first lets the held points
    /// through, so the page has the curves up to the kept step when it keeps them.
    fn hold_progress(&mut self, host: &mut impl Host, reply: Reply) -> Vec<Reply> {
        let FromWorker::Progress {
            points,
            points_b,
            steps_per_second,
            playing,
            ..
        } = reply.message
        else {
            let held =
                matches!(reply.message, FromWorker::Kept { .. }) && !self.unsent.0.is_empty();
            if held {
                let playing = self.session.playing();
                return vec![self.release_progress(host, 0.0, playing), reply];
            }
            return vec![reply];
        };
        self.unsent.0.extend(points);
        self.unsent.1.extend(points_b);
        if playing && host.now() - self.last_progress < PROGRESS_MS {
            return Vec::new();
        }
        vec![self.release_progress(host, steps_per_second, playing)]
    }

    /// The held loss points as one Progress reply (a steps/s of 0 leaves the page's figure as
    /// is), with the masking counts as they are now, and the latest batch when `BATCH_MS` have
    /// passed since the last one (and nine times what it cost) or play has stopped.
    fn release_progress(
        &mut self,
        host: &impl Host,
        steps_per_second: f64,
        playing: bool,
    ) -> Reply {
        let at = host.now();
        self.last_progress = at;
        let batch = match self.batch_made.take() {
            // Paused: the batch of the step it stopped on.
            _ if !playing => Some(self.batch_view(host)),
            Some(made) => Some(made),
            None if self.batch_due(at) => Some(self.batch_view(host)),
            None => None,
        };
        let (points, points_b) = std::mem::take(&mut self.unsent);
        let mut reply = self.session.progress(points, points_b, steps_per_second);
        if let FromWorker::Progress {
            playing: p,
            batch: carried,
            ..
        } = &mut reply.message
        {
            *p = playing;
            if let Some(view) = batch {
                *carried = view;
            }
        }
        reply
    }

    /// A Batch view is due while playing: `BATCH_MS` have passed since the last one, and nine
    /// times what it cost.
    fn batch_due(&self, at: f64) -> bool {
        let wait = BATCH_MS.max(self.batch_cost * (1.0 - BATCH_SHARE) / BATCH_SHARE);
        at - self.last_batch >= wait
    }

    fn batch_view(&mut self, host: &impl Host) -> Option<BatchView> {
        let at = host.now();
        let view = self.session.batch_view();
        self.last_batch = host.now();
        self.batch_cost = host.now() - at;
        view
    }

    /// The same workload and timing loop as the native `bench_step` example, for WASM/native
    /// ratios.
    fn bench(&self, host: &impl Host, iters: usize, warmup: usize) -> Reply {
        let results = engine::workload::presets()
            .iter()
            .map(|p| {
                let ms = engine::workload::median_step_ms(p, iters, warmup, || host.now());
                (p.name.to_string(), ms)
            })
            .collect();
        FromWorker::Bench { results }.into()
    }
}

/// Steps shared with the gradient workers.
impl Lead {
    /// The next step over `workers_now()` workers: the jobs go out, then this worker computes
    /// its own share; `answered` finishes the step when the last answer comes.
    fn begin_shared(&mut self, host: &mut impl Host, single: bool) {
        let workers = self.workers_now();
        // A model that cannot train needs no gradient workers: `begin_shared_step` refuses
        // below.
        let resized = match self.session.trainable() {
            Ok(()) => self.gradient_workers(host, workers - 1),
            Err(_) => Ok(()),
        };
        if let Err(why) = resized {
            self.settle(
                host,
                1,
                Some(format!("a second worker could not start ({why})")),
            );
            if single {
                let replies = self.session.train(1);
                self.report_steps(host, replies, self.ms_per_step, true);
            } else {
                self.schedule(host);
            }
            return;
        }
        let started = host.now();
        let (mut step, jobs) = match self.session.begin_shared_step(workers) {
            Ok(begun) => begun,
            Err(replies) => {
                self.post_all(host, replies);
                return;
            }
        };
        for (k, (which, job)) in jobs.into_iter().enumerate() {
            let sent = self.send_job(host, k, which, job);
            if let Err(e) = sent {
                self.gradient_worker_died(host, format!("it could not be reached ({e})"));
                return;
            }
        }
        self.session.own_share(&mut step);
        if !single {
            self.views_while_shares_compute(host);
        }
        let answers = std::iter::repeat_with(|| None).take(step.jobs()).collect();
        self.shared = Some(Pending {
            step,
            answers,
            started,
            single,
        });
        // A batch of fewer rows than workers may leave no share to hand out.
        self.finish_when_answered(host);
    }

    /// Job `index` to gradient worker `index`, after the model's shape when it holds another
    /// model.
    fn send_job(
        &mut self,
        host: &mut impl Host,
        index: usize,
        which: crate::session::Which,
        job: protocol::workers::GradientJob,
    ) -> LabResult<()> {
        let held = self.replicas.get(index).copied().flatten();
        if held != Some(job.replica) {
            let shape = self
                .session
                .replica_shape(which)
                .ok_or_else(|| LabError::unavailable("this model cannot be trained in shares"))?;
            let build = ToGradientWorker::Replica {
                id: job.replica,
                shape,
            };
            self.to_gradient_worker(host, index, &build, None)?;
            if let Some(slot) = self.replicas.get_mut(index) {
                *slot = Some(job.replica);
            }
        }
        let weights = self.session.weights(which);
        self.to_gradient_worker(
            host,
            index,
            &ToGradientWorker::Gradients(job),
            Some(&weights),
        )
    }

    fn to_gradient_worker(
        &self,
        host: &mut impl Host,
        index: usize,
        message: &ToGradientWorker,
        weights: Option<&[Param<'_>]>,
    ) -> LabResult<()> {
        if index >= self.replicas.len() {
            return Err(LabError::unavailable(format!("no gradient worker {index}")));
        }
        host.to_gradient_worker(index, message, weights)
    }

    /// Exactly `count` gradient workers (those that start hold no replica yet). On a failure
    /// the lead goes on alone (`settle`), which ends them all.
    fn gradient_workers(&mut self, host: &mut impl Host, count: usize) -> LabResult<()> {
        host.gradient_workers(count)?;
        self.replicas.resize(count, None);
        Ok(())
    }

    fn clear_gradient_workers(&mut self, host: &mut impl Host) {
        self.replicas.clear();
        let _ = host.gradient_workers(0);
    }

    /// While the gradient workers finish their shares, the views due are made here: the
    /// snapshot and the Heads claim are posted, the Batch view is kept for the next Progress.
    /// They show the model as the last step left it, as they would have if made after it; made
    /// then, this worker would work alone while the gradient workers waited for the next step.
    fn views_while_shares_compute(&mut self, host: &mut impl Host) {
        let views = self.views_due(host, false);
        self.post_all(host, views);
        if self.batch_due(host.now()) {
            self.batch_made = Some(self.batch_view(host));
        }
    }

    /// Gradient worker `index` answered its job; the last answer finishes the step.
    pub fn answered(
        &mut self,
        host: &mut impl Host,
        index: usize,
        result: GradientResult,
        grads: Vec<f32>,
    ) {
        if let Some(slot) = self.shared.as_mut().and_then(|p| p.answers.get_mut(index)) {
            *slot = Some((result, grads));
        }
        self.finish_when_answered(host);
    }

    /// The step under way, finished once every job is answered.
    fn finish_when_answered(&mut self, host: &mut impl Host) {
        let all_in = self
            .shared
            .as_ref()
            .is_some_and(|p| p.answers.iter().all(Option::is_some));
        if !all_in {
            return;
        }
        let Some(p) = self.shared.take() else { return };
        let answers = p.answers.into_iter().flatten().collect();
        let replies = self.session.finish_shared_step(p.step, answers);
        let ms = (host.now() - p.started).max(0.001);
        self.measured(host, self.workers_now(), 1, ms);
        self.report_steps(host, replies, ms, p.single);
        // The page's messages that waited for the step, in order, until one starts another.
        while self.shared.is_none() {
            let Some((message, attachments)) = self.deferred.pop_front() else {
                break;
            };
            self.message(host, message, attachments);
        }
    }

    /// A gradient worker died or cannot be reached: the lead cannot take the step, and stops
    /// as if it had died itself, so the page offers Restart (which starts them all afresh from
    /// the kept model).
    pub fn gradient_worker_died(&mut self, host: &mut impl Host, why: String) {
        self.clear_gradient_workers(host);
        self.shared = None;
        host.post(
            FromWorker::Crashed {
                message: format!("a gradient worker stopped: {why}"),
            }
            .into(),
        );
    }
}

/// How many workers train.
impl Lead {
    /// Decide afresh how many workers train, from the setting (and for Auto, a measurement).
    fn choose_workers(&mut self, host: &mut impl Host) {
        let cores = host.cores();
        let most = self.workers.most(cores);
        self.choice = match self.workers {
            _ if most > 1 && !host.nested_workers() => Choice::Settled(WorkersInUse {
                using: 1,
                most,
                why: Some("this browser cannot start workers from a worker".into()),
            }),
            WorkerCount::Fixed(n) => Choice::Settled(WorkersInUse {
                using: n,
                most: n,
                why: None,
            }),
            WorkerCount::Auto if most == 1 => Choice::Settled(WorkersInUse {
                using: 1,
                most: 1,
                why: Some(format!(
                    "this device has {cores} core{}, and one is left for the page",
                    if cores == 1 { "" } else { "s" }
                )),
            }),
            WorkerCount::Auto => Choice::Measuring(AutoMeasurement::new(most)),
        };
        if self.workers_now() == 1 {
            self.clear_gradient_workers(host);
        }
        host.post(FromWorker::Workers(self.in_use()).into());
    }

    fn settle(&mut self, host: &mut impl Host, using: usize, why: Option<String>) {
        let most = match &self.choice {
            Choice::Settled(w) => w.most,
            Choice::Measuring(m) => m.most,
        };
        self.choice = Choice::Settled(WorkersInUse { using, most, why });
        if using == 1 {
            self.clear_gradient_workers(host);
        }
        host.post(FromWorker::Workers(self.in_use()).into());
    }

    fn workers_now(&self) -> usize {
        match &self.choice {
            Choice::Settled(w) => w.using,
            Choice::Measuring(m) => m.workers(),
        }
    }

    fn in_use(&self) -> WorkersInUse {
        match &self.choice {
            Choice::Settled(w) => w.clone(),
            Choice::Measuring(m) => WorkersInUse {
                using: m.workers(),
                most: m.most,
                why: Some(format!(
                    "measuring whether {} workers step faster than one",
                    m.most
                )),
            },
        }
    }

    /// `steps` steps on `workers` workers took `ms_per_step` each: a sample for Auto's
    /// measurement, which settles once it has all its rounds.
    fn measured(&mut self, host: &mut impl Host, workers: usize, steps: usize, ms_per_step: f64) {
        let (before, found, most) = match &mut self.choice {
            Choice::Measuring(m) => (m.workers(), m.record(workers, steps, ms_per_step), m.most),
            Choice::Settled(w) => (w.using, None, w.most),
        };
        match found {
            Some(Measured {
                using,
                one_ms,
                many_ms,
            }) => {
                let why = (using == 1).then(|| {
                    format!(
                        "at batch {}, a step took {one_ms:.1} ms on one worker and {many_ms:.1} ms on {most}: too little work to share",
                        self.session.batch_size()
                    )
                });
                self.settle(host, using, why);
            }
            // The measurement moved to the other side: the header says so.
            None if self.workers_now() != before => {
                host.post(FromWorker::Workers(self.in_use()).into())
            }
            None => {}
        }
    }
}

/// Claims in the claim worker.
impl Lead {
    /// The page's `RunClaim` or `CancelClaim`, for the claim worker. Where it cannot start (or
    /// the copy cannot be made), the claim runs here between training slices, as before.
    fn pass_claim(
        &mut self,
        host: &mut impl Host,
        message: ToWorker,
        attachments: Vec<Vec<u8>>,
    ) -> Vec<Reply> {
        self.next_remeasure = 0.0;
        self.remeasure_backoff = REMEASURE_MS;
        let passed = match &message {
            ToWorker::RunClaim { claim, probe } => {
                if claim.measured_again_while_training() {
                    self.session.forget_follower();
                }
                self.run_in_claim_worker(host, *claim, probe.clone())
            }
            ToWorker::CancelClaim { claim } => self.cancel_in_claim_worker(host, *claim),
            _ => Ok(Vec::new()),
        };
        match passed {
            Ok(replies) => replies.into_iter().map(Reply::from).collect(),
            Err(_) => self.session.handle(message, attachments),
        }
    }

    /// The page's `RunClaim`, in turn (`ClaimTurns`).
    fn run_in_claim_worker(
        &mut self,
        host: &mut impl Host,
        claim: Claim,
        probe: protocol::ProbeInput,
    ) -> LabResult<Vec<FromWorker>> {
        match self.claim_worker.turns.ask(claim, probe) {
            Asked::Waits => Ok(vec![FromWorker::ClaimQueued { claim }]),
            // It starts over, on the copy it has.
            Asked::StartsOver(probe) => self
                .to_claim_worker(host, &ToClaimWorker::Run { claim, probe })
                .map(|()| Vec::new()),
            Asked::Starts(probe) => self.start_claim(host, claim, probe).map(|()| Vec::new()),
            // The claim worker steps its claim aside by the same rule, and says so.
            Asked::GoesFirst(probe) => {
                let aside = self.claim_worker.turns.step_aside();
                let started = self.start_claim(host, claim, probe);
                if started.is_err() {
                    // The one aside goes on.
                    self.claim_worker.turns.next_to_start();
                }
                // It waits meanwhile, as the page is told of a claim's turn.
                started.map(|()| {
                    aside
                        .map(|claim| FromWorker::ClaimQueued { claim })
                        .into_iter()
                        .collect()
                })
            }
        }
    }

    /// The page's `CancelClaim`. Err: the claim is not the claim worker's (it may run here,
    /// where the claim worker could not start).
    fn cancel_in_claim_worker(
        &mut self,
        host: &mut impl Host,
        claim: Claim,
    ) -> LabResult<Vec<FromWorker>> {
        match self.claim_worker.turns.cancel(claim) {
            Cancelled::Waiting => Ok(vec![FromWorker::ClaimCancelled { claim }]),
            // It ends when the claim worker says it was cancelled (`claim_news`); one aside
            // is dropped there too, and it says so.
            Cancelled::Running | Cancelled::Aside => self
                .to_claim_worker(host, &ToClaimWorker::Cancel { claim })
                .map(|()| Vec::new()),
            Cancelled::NotAsked => Err(LabError::unavailable("no claim worker runs this claim")),
        }
    }

    /// A message for the claim worker that runs (Err when none does).
    fn to_claim_worker(&self, host: &mut impl Host, message: &ToClaimWorker) -> LabResult<()> {
        match self.claim_worker.started {
            true => host.to_claim_worker(message, &[]),
            false => Err(LabError::unavailable(
                "no claim worker runs: Run a claim first",
            )),
        }
    }

    /// The claim starts in the claim worker, on a copy of the models as they are now.
    fn start_claim(
        &mut self,
        host: &mut impl Host,
        claim: Claim,
        probe: protocol::ProbeInput,
    ) -> LabResult<()> {
        // The History's weights (up to 64 MB per model) go only to a claim that reads them.
        let (copy, attachments) = self.session.copy_for_claims(claim.reads_history())?;
        host.to_claim_worker(&copy, &attachments)?;
        self.claim_worker.started = true;
        host.to_claim_worker(&ToClaimWorker::Run { claim, probe }, &[])?;
        self.claim_worker.turns.started(claim, ());
        self.claim_worker.copy_of = self.session.generation();
        Ok(())
    }

    /// The next waiting claim, on the models as they are now; one that cannot start ends with
    /// why.
    fn start_next_claim(&mut self, host: &mut impl Host) {
        while let Some((claim, probe)) = self.claim_worker.turns.next_to_start() {
            match self.start_claim(host, claim, probe) {
                Ok(()) => break,
                Err(e) => host.post(
                    FromWorker::ClaimDone {
                        claim,
                        result: Err(e),
                    }
                    .into(),
                ),
            }
        }
    }

    /// The models were replaced (Reset, Load): the claim under way gets the new ones, and the
    /// claim worker stops what measured the old ones, as the lead's own queue does.
    fn claim_copy_replaced(&mut self, host: &mut impl Host) {
        // A Load that failed left the models as they were.
        let Some(claim) = self.claim_worker.turns.running() else {
            return;
        };
        if !self.claim_worker.started || self.session.generation() == self.claim_worker.copy_of {
            return;
        }
        let sent = self
            .session
            .copy_for_claims(claim.reads_history())
            .and_then(|(copy, attachments)| host.to_claim_worker(&copy, &attachments));
        match sent {
            Ok(()) => self.claim_worker.copy_of = self.session.generation(),
            Err(e) => self.claim_worker_died(host, &e.to_string()),
        }
    }

    /// What the claim worker said: claim news go on to the page.
    pub fn claim_news(&mut self, host: &mut impl Host, news: FromClaimWorker) {
        if let FromClaimWorker::Crashed { message } = news {
            self.claim_worker_died(host, &message);
            return;
        }
        let Some(message) = news.for_page() else {
            return;
        };
        let ended = match &message {
            FromWorker::ClaimDone { claim, .. } | FromWorker::ClaimCancelled { claim }
                if self.claim_worker.turns.running() == Some(*claim) =>
            {
                self.claim_worker.turns.end();
                true
            }
            _ => false,
        };
        let current = self.claim_worker.copy_of == self.session.generation();
        if let FromWorker::ClaimDone {
            claim,
            result: Ok(result),
        } = &message
        {
            if current && claim.measured_again_while_training() {
                self.session.ran_elsewhere(*claim, result);
            }
        }
        host.post(message.into());
        if ended {
            self.start_next_claim(host);
        }
    }

    /// The claim worker died: its claim ends with why, training is not touched, and the
    /// waiting claims start in a new claim worker.
    pub fn claim_worker_died(&mut self, host: &mut impl Host, why: &str) {
        if self.claim_worker.started {
            host.end_claim_worker();
            self.claim_worker.started = false;
        }
        // The claim under way, and one that stood aside for it (under way once the first ends).
        while let Some((claim, ())) = self.claim_worker.turns.end() {
            host.post(
                FromWorker::ClaimDone {
                    claim,
                    result: Err(LabError::unavailable(format!(
                        "the claims' worker stopped: {why}. Run again"
                    ))),
                }
                .into(),
            );
        }
        self.start_next_claim(host);
    }
}

/// The browser's store.
impl Lead {
    /// A Keep's first write: the current model (and Compare's model B) with their training
    /// state.
    pub fn models_to_keep(&self) -> LabResult<(ModelBundle, Option<ModelBundle>)> {
        self.session.kept_models()
    }

    /// A Keep's second write, once the models are written: the History's index and the
    /// entries not written yet (None: no model).
    pub fn history_to_keep(&self) -> Option<HistoryToKeep> {
        let (generation, steps) = &self.stored;
        let fresh = BTreeSet::new();
        let stored = match *generation == self.session.generation() {
            true => steps,
            false => &fresh,
        };
        self.session.history_to_keep(stored)
    }

    /// The Keep was written (the History's index as written, if any), or why not.
    pub fn kept(
        &mut self,
        host: &mut impl Host,
        written: LabResult<(u64, Option<(u64, HistoryIndex)>)>,
    ) {
        let reply = match written {
            Ok((step, history)) => {
                if let Some((generation, index)) = history {
                    self.stored = (generation, index.steps.into_iter().collect());
                }
                FromWorker::Kept { step }
            }
            Err(e) => FromWorker::Failed(e),
        };
        self.post_all(host, vec![reply.into()]);
    }

    /// The History kept with the model of `generation`, read back from the store: it goes
    /// back in front of the slider.
    pub fn history_read(
        &mut self,
        host: &mut impl Host,
        generation: u64,
        index: &HistoryIndex,
        entries: Vec<(u64, Vec<u8>)>,
    ) {
        let steps: BTreeSet<u64> = entries.iter().map(|(s, _)| *s).collect();
        let replies = self.session.restore_history(generation, index, entries);
        if !replies.is_empty() {
            self.stored = (generation, steps);
        }
        self.post_all(host, replies);
    }
}

#[cfg(test)]
mod tests;
