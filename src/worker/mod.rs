//! Worker side of the training loop (see bin/worker.rs). Time slicing: at most ~`SLICE_MS` of
//! steps per macrotask, then yield (`tasks::next_task`) so Pause/Step/Inspect messages get
//! through.

mod child;
pub mod claimer;
pub mod pool;

use crate::storage;
use crate::worker_io::{
    decode, encode, encode_with_floats, float_attachment, floats_into_params, params_into_floats,
};
use claimer::Claimer;
use engine::batch_view::BatchView;
use js_sys::Float32Array;
use pool::{Answer, Listeners, Pool};
use protocol::workers::{AutoMeasurement, Measured, WorkerCount, WorkersInUse};
use protocol::{Crash, CurvePoint, FromWorker, LabResult, ToWorker};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, VecDeque};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};
use worker_core::replica::{Io, Replica};
use worker_core::session::{Reply, Session, SharedStep};

const SLICE_MS: f64 = 30.0;
/// Snapshots of the probe while playing: about five a second.
const SNAPSHOT_MS: f64 = 200.0;
/// The Heads claim, once run, is measured again at most this often while training, and at most
/// a twentieth of the time: each measurement is one macrotask, whose length it takes from
/// training (tens of ms for tiny, seconds for small).
const HEADS_MS: f64 = 1000.0;
/// A measurement longer than this is not repeated while training, so Pause never waits on
/// one; Pause and Step still measure at the step they stop on.
const HEADS_PLAYING_MS: f64 = 250.0;
/// Loss points go to the page at most ten times a second: each post redraws the curves.
const PROGRESS_MS: f64 = 100.0;
/// The Batch view's batch while playing, at most this often: each costs a forward pass here
/// and a redraw of its rows on the page, and one a third of a second is more than the eye
/// reads. Paused, every Progress carries it (Step's included).
const BATCH_MS: f64 = 350.0;
/// ... and at most a tenth of the time: that forward pass is the whole batch's, on this
/// worker alone (a third of a step), which for the small preset at batch 32 came every step.
const BATCH_SHARE: f64 = 0.1;

thread_local! {
    static SESSION: RefCell<Session> = RefCell::new(Session::default());
    static TICK_PENDING: Cell<bool> = const { Cell::new(false) };
    static CLAIM_PENDING: Cell<bool> = const { Cell::new(false) };
    static GENERATION_PENDING: Cell<bool> = const { Cell::new(false) };
    static LAST_SNAPSHOT: Cell<f64> = const { Cell::new(0.0) };
    /// When the Heads claim may be measured again while training (∞: its last measurement
    /// was too long to repeat while playing).
    static NEXT_HEADS: Cell<f64> = const { Cell::new(0.0) };
    /// Fractional steps owed under a speed limit.
    static OWED: Cell<f64> = const { Cell::new(0.0) };
    static LAST_TICK: Cell<f64> = const { Cell::new(0.0) };
    static MS_PER_STEP: Cell<f64> = const { Cell::new(5.0) };
    /// Loss points not yet posted (model A's, and Compare's model B's), and when points were
    /// last posted.
    static UNSENT: RefCell<(Vec<CurvePoint>, Vec<CurvePoint>)> =
        const { RefCell::new((Vec::new(), Vec::new())) };
    static LAST_PROGRESS: Cell<f64> = const { Cell::new(0.0) };
    static LAST_BATCH: Cell<f64> = const { Cell::new(0.0) };
    /// How long the last batch view took to make (ms).
    static BATCH_COST: Cell<f64> = const { Cell::new(0.0) };
    /// A Batch view made during a shared step (`views_while_shares_compute`), for the next
    /// Progress while playing.
    static BATCH_MADE: RefCell<Option<Option<BatchView>>> = const { RefCell::new(None) };
    /// Work on the browser's store, waiting its turn, and whether it is under way.
    static JOBS: RefCell<VecDeque<StoreJob>> = const { RefCell::new(VecDeque::new()) };
    static STORING: Cell<bool> = const { Cell::new(false) };
    /// The History entries written to the store, and for which model (`Session::generation`).
    static STORED: RefCell<(u64, BTreeSet<u64>)> = const { RefCell::new((0, BTreeSet::new())) };
    /// The training worker's gradient workers, and (in a gradient worker) its copy of the model.
    static POOL: RefCell<Pool> = RefCell::default();
    /// The training worker's claim worker; and, in a claim worker, that it is one (it was sent
    /// `ClaimCopy`), so it runs the claims it is sent itself.
    static CLAIMER: RefCell<Claimer> = RefCell::default();
    static CLAIMS_HERE: Cell<bool> = const { Cell::new(false) };
    static REPLICA: RefCell<Replica> = RefCell::default();
    /// The Workers setting, and how many train now.
    static WORKERS: Cell<WorkerCount> = const { Cell::new(WorkerCount::Auto) };
    static CHOICE: RefCell<Choice> = const { RefCell::new(Choice::Settled(WorkersInUse { using: 1, most: 1, why: None })) };
    /// A step over several workers, waiting for the gradient workers' answers.
    static SHARED: RefCell<Option<Pending>> = const { RefCell::new(None) };
    /// The page's messages that came while a shared step was under way, handled after it.
    static DEFERRED: RefCell<VecDeque<JsValue>> = const { RefCell::new(VecDeque::new()) };
}

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn now() -> f64 {
    scope()
        .performance()
        .map_or_else(js_sys::Date::now, |p| p.now())
}

/// The same workload and timing loop as the native `bench_step` example, for WASM/native ratios.
fn bench(iters: usize, warmup: usize) -> Reply {
    let results = engine::workload::presets()
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                engine::workload::median_step_ms(p, iters, warmup, now),
            )
        })
        .collect();
    FromWorker::Bench { results }.into()
}

fn post(reply: Reply) {
    let attachments: Vec<&[u8]> = reply.attachments.iter().map(Vec::as_slice).collect();
    match encode(&reply.message, &attachments) {
        Ok(packet) => {
            let _ = scope().post_message_with_transfer(&packet.data, &packet.transfer);
        }
        Err(e) => web_sys::console::error_1(&e.to_string().into()),
    }
}

pub fn start() {
    report_deaths();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(|event: MessageEvent| {
        handle_packet(event.data());
    });
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    choose_workers();
    // Messages sent before the wasm loaded were dropped: tell the page we listen now.
    post(FromWorker::Hello.into());
}

/// One message from whoever started this worker: the page, or (for a gradient worker) the
/// training worker.
fn handle_packet(data: JsValue) {
    // A step over several workers finishes before anything else changes the session.
    if SHARED.with_borrow(Option::is_some) {
        DEFERRED.with_borrow_mut(|d| d.push_back(data));
        return;
    }
    let replies = match decode::<ToWorker>(&data) {
        Ok((ToWorker::Bench { iters, warmup }, _)) => vec![bench(iters, warmup)],
        Ok((ToWorker::Crash(Crash::GradientWorker), _)) => {
            match POOL.with_borrow(Pool::crash_one) {
                Ok(()) => Vec::new(),
                Err(e) => vec![FromWorker::Failed(e).into()],
            }
        }
        Ok((ToWorker::Crash(Crash::ClaimWorker), _)) => match CLAIMER.with_borrow(Claimer::crash) {
            Ok(()) => Vec::new(),
            Err(e) => vec![FromWorker::Failed(e).into()],
        },
        Ok((ToWorker::Crash(how), _)) => crash(how),
        Ok((message @ (ToWorker::RunClaim { .. } | ToWorker::CancelClaim { .. }), attachments))
            if !CLAIMS_HERE.get() && nested_workers() =>
        {
            pass_claim(message, attachments)
        }
        Ok((ToWorker::Keep, _)) => {
            store(StoreJob::Keep);
            Vec::new()
        }
        Ok((ToWorker::RestoreHistory, _)) => {
            let generation = SESSION.with_borrow(Session::generation);
            store(StoreJob::RestoreHistory { generation });
            Vec::new()
        }
        Ok((ToWorker::Workers(count), _)) => {
            WORKERS.set(count);
            choose_workers();
            Vec::new()
        }
        Ok((ToWorker::Replica { id, shape }, _)) => {
            REPLICA.with_borrow_mut(|r| r.build(id, shape));
            Vec::new()
        }
        Ok((ToWorker::Gradients(job), _)) => {
            let weights =
                float_attachment(&data).unwrap_or_else(|| Float32Array::new_with_length(0));
            answer_job(job, &weights);
            Vec::new()
        }
        Ok((ToWorker::Step, _)) if workers_now() > 1 => {
            SESSION.with_borrow_mut(Session::before_single_step);
            begin_shared(true);
            Vec::new()
        }
        Ok((message, attachments)) => {
            // Another model, or the claim run afresh: its measurements may be short again.
            if matches!(
                message,
                ToWorker::RunClaim { .. } | ToWorker::Reset { .. } | ToWorker::Load { .. }
            ) {
                NEXT_HEADS.set(0.0);
            }
            // Another model or batch size: whether more workers gain is measured again.
            let remeasure = matches!(
                message,
                ToWorker::Reset { .. } | ToWorker::Load { .. } | ToWorker::Tune(_)
            );
            let replaced = matches!(message, ToWorker::Reset { .. } | ToWorker::Load { .. });
            // Loss points held back go first: after a Rewind, a Reset or a Load they would
            // extend the curve the page has just cut or replaced.
            let held = UNSENT.with_borrow(|(a, b)| !a.is_empty() || !b.is_empty());
            if held && (replaced || matches!(message, ToWorker::Rewind { .. })) {
                let playing = SESSION.with_borrow(Session::playing);
                post(release_progress(0.0, playing));
            }
            if matches!(message, ToWorker::ClaimCopy { .. }) {
                CLAIMS_HERE.set(true);
            }
            let replies = SESSION.with_borrow_mut(|s| s.handle(message, attachments));
            if remeasure {
                choose_workers();
            }
            if replaced {
                // Not the new model's.
                BATCH_MADE.take();
                claim_copy_replaced();
            }
            replies
        }
        Err(e) => vec![FromWorker::Failed(e).into()],
    };
    replies.into_iter().flat_map(hold_progress).for_each(post);
    schedule_tick();
    schedule_claim();
    schedule_generation();
}

/// The page's `RunClaim` or `CancelClaim`, for the claim worker (`claimer`). Where it cannot
/// start (or the copy cannot be made), the claim runs here between training slices, as before.
fn pass_claim(message: ToWorker, attachments: Vec<Vec<u8>>) -> Vec<Reply> {
    NEXT_HEADS.set(0.0);
    let start = claim_start();
    let passed = CLAIMER.with_borrow_mut(|c| match &message {
        ToWorker::RunClaim { claim, probe } => {
            if claim.measured_again_while_training() {
                SESSION.with_borrow_mut(Session::forget_heads);
            }
            c.run(*claim, probe.clone(), &start)
        }
        ToWorker::CancelClaim { claim } => c.cancel(*claim),
        _ => Ok(Vec::new()),
    });
    match passed {
        Ok(replies) => replies.into_iter().map(Reply::from).collect(),
        Err(_) => SESSION.with_borrow_mut(|s| s.handle(message, attachments)),
    }
}

/// Claims start on the models as they are now; their messages go on to the page.
fn claim_start() -> claimer::Start {
    claimer::Start {
        generation: SESSION.with_borrow(Session::generation),
        copy: |with_history| SESSION.with_borrow(|s| s.copy_for_claims(with_history)),
        listeners: claim_listeners(),
    }
}

fn claim_listeners() -> claimer::Listeners {
    claimer::Listeners {
        claim: Rc::new(|message: FromWorker| {
            let ended = CLAIMER.with_borrow_mut(|c| c.heard(&message));
            let current =
                CLAIMER.with_borrow(Claimer::copy_of) == SESSION.with_borrow(Session::generation);
            if let FromWorker::ClaimDone {
                claim,
                result: Ok(_),
            } = &message
            {
                if current && claim.measured_again_while_training() {
                    SESSION.with_borrow_mut(Session::heads_ran_elsewhere);
                }
            }
            post(message.into());
            if ended {
                start_next_claim();
            }
        }),
        death: Rc::new(|why: String| claim_worker_died(&why)),
    }
}

/// The next waiting claim, on the models as they are now; one that cannot start ends with why.
fn start_next_claim() {
    let start = claim_start();
    while let Err((claim, e)) = CLAIMER.with_borrow_mut(|c| c.start_next(&start)) {
        post(
            FromWorker::ClaimDone {
                claim,
                result: Err(e),
            }
            .into(),
        );
    }
}

/// The claim worker died: its claim ends with why, training is not touched, and the waiting
/// claims start in a new claim worker.
fn claim_worker_died(why: &str) {
    if let Some(claim) = CLAIMER.with_borrow_mut(Claimer::died) {
        post(
            FromWorker::ClaimDone {
                claim,
                result: Err(protocol::LabError::unavailable(format!(
                    "the claims' worker stopped: {why}. Run again"
                ))),
            }
            .into(),
        );
    }
    start_next_claim();
}

/// The models were replaced: the claim under way in the claim worker measures the new ones.
fn claim_copy_replaced() {
    let sent = CLAIMER.with_borrow_mut(|c| c.models_replaced(&claim_start()));
    if let Err(e) = sent {
        claim_worker_died(&e.to_string());
    }
}

/// A gradient worker's job: its share's gradients, or why not, back to the training worker.
fn answer_job(job: protocol::workers::GradientJob, weights: &Float32Array) {
    // The gradients go back in the buffer the weights came in, for the lead's next job.
    let io = Io {
        weights_in: Box::new(|params| floats_into_params(weights, params)),
        grads_out: Box::new(|grads| params_into_floats(grads, Some(weights.clone()))),
    };
    let answer = REPLICA.with_borrow_mut(|r| r.gradients(job, io));
    let (result, grads) = match answer {
        Ok((losses, grads)) => (Ok(losses), grads),
        Err(e) => (Err(e), Float32Array::new_with_length(0)),
    };
    match encode_with_floats(&FromWorker::Gradients(result), &grads) {
        Ok(packet) => {
            let _ = scope().post_message_with_transfer(&packet.data, &packet.transfer);
        }
        Err(e) => web_sys::console::error_1(&e.to_string().into()),
    }
}

/// Tell the page at once when this worker dies. A panic posts its message from the panic hook,
/// then traps (`panic = "abort"`); the page also gets the trap as the Worker's `error` event,
/// which is all an abort without a panic (out of memory) leaves. A trap in a promise callback
/// would reach neither, so an unhandled rejection is reported too.
fn report_deaths() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        let payload = info.payload();
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let message = match info.location() {
            Some(at) => format!("{what} (at {}:{})", at.file(), at.line()),
            None => what,
        };
        post(FromWorker::Crashed { message }.into());
    }));
    let on_rejection = Closure::<dyn FnMut(web_sys::Event)>::new(|event: web_sys::Event| {
        let reason = js_sys::Reflect::get(&event, &"reason".into()).unwrap_or_default();
        let message = match reason.dyn_ref::<js_sys::Error>() {
            Some(e) => String::from(e.message()),
            None => format!("{reason:?}"),
        };
        post(FromWorker::Crashed { message }.into());
    });
    let _ = scope().add_event_listener_with_callback(
        "unhandledrejection",
        on_rejection.as_ref().unchecked_ref(),
    );
    on_rejection.forget();
}

/// Die as asked (a test: see `protocol::Crash`).
fn crash(how: Crash) -> Vec<Reply> {
    match how {
        // The training worker passes this one on to a gradient worker (`handle_packet`).
        Crash::Panic | Crash::GradientWorker | Crash::ClaimWorker => {
            panic!("the trainer was asked to panic (a test)")
        }
        Crash::PanicLater => {
            wasm_bindgen_futures::spawn_local(async {
                panic!("the trainer was asked to panic in a task (a test)")
            });
            Vec::new()
        }
        Crash::OutOfMemory => {
            // 1 GB blocks, never touched, until wasm32's 4 GB address space runs out.
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            loop {
                blocks.push(Vec::with_capacity(1 << 30));
                std::hint::black_box(&blocks);
            }
        }
    }
}

/// Between two generated tokens: slow enough to watch each row arrive, fast enough that 12
/// tokens take under two seconds.
const GENERATE_MS: i32 = 120;

/// The next generated token in a macrotask of its own, `GENERATE_MS` after the last.
fn schedule_generation() {
    if !SESSION.with_borrow(Session::generating) || GENERATION_PENDING.get() {
        return;
    }
    GENERATION_PENDING.set(true);
    let tick = Closure::once_into_js(|| {
        GENERATION_PENDING.set(false);
        let replies = SESSION.with_borrow_mut(Session::generation_step);
        replies.into_iter().for_each(post);
        schedule_generation();
    });
    let _ = scope()
        .set_timeout_with_callback_and_timeout_and_arguments_0(tick.unchecked_ref(), GENERATE_MS);
}

/// A claim's next unit in a macrotask of its own, so messages (Cancel among them) and training
/// ticks get through between units.
fn schedule_claim() {
    if !SESSION.with_borrow(Session::claim_running) || CLAIM_PENDING.get() {
        return;
    }
    CLAIM_PENDING.set(true);
    crate::tasks::next_task(|| {
        CLAIM_PENDING.set(false);
        let replies = SESSION.with_borrow_mut(|s| s.claim_step(&now));
        replies.into_iter().for_each(post);
        schedule_claim();
    });
}

fn schedule_tick() {
    if !SESSION.with_borrow(|s| s.playing()) || TICK_PENDING.get() {
        return;
    }
    TICK_PENDING.set(true);
    LAST_TICK.set(now());
    match SESSION.with_borrow(|s| s.speed) {
        // Full speed: the next slice at once (a 0 ms timer would idle 4 ms between slices).
        None => crate::tasks::next_task(tick),
        Some(steps_per_second) => {
            let delay = (1000.0 / steps_per_second).clamp(0.0, 250.0) as i32;
            let tick = Closure::once_into_js(tick);
            let _ = scope()
                .set_timeout_with_callback_and_timeout_and_arguments_0(tick.unchecked_ref(), delay);
        }
    }
}

fn tick() {
    TICK_PENDING.set(false);
    // A Pause (or Step) that came after this tick was scheduled: no more steps.
    if !SESSION.with_borrow(Session::playing) || SHARED.with_borrow(Option::is_some) {
        return;
    }
    if workers_now() > 1 {
        begin_shared(false);
        return;
    }
    let started = now();
    let steps = steps_due(started);
    let replies = SESSION.with_borrow_mut(|s| s.train(steps));
    let ms_per_step = (now() - started).max(0.001) / steps as f64;
    measured(1, steps, ms_per_step);
    report_steps(replies, ms_per_step, false);
}

/// After steps: the speed they went at, and the snapshot and the Heads claim when due
/// (always after a single Step, as `Session::handle` does for one worker).
fn report_steps(mut replies: Vec<Reply>, ms_per_step: f64, single: bool) {
    MS_PER_STEP.set(0.8 * MS_PER_STEP.get() + 0.2 * ms_per_step);
    if let Some(FromWorker::Progress {
        steps_per_second, ..
    }) = replies.first_mut().map(|r| &mut r.message)
    {
        *steps_per_second = if single {
            0.0
        } else {
            1000.0 / MS_PER_STEP.get()
        };
    }
    replies.extend(views_due(single));
    replies.into_iter().flat_map(hold_progress).for_each(post);
    schedule_tick();
    schedule_claim();
}

/// The snapshot and the Heads claim measured again, when due.
fn views_due(single: bool) -> Vec<Reply> {
    SESSION.with_borrow_mut(|s| {
        let mut replies = Vec::new();
        if single || now() - LAST_SNAPSHOT.get() >= SNAPSHOT_MS || !s.playing() {
            LAST_SNAPSHOT.set(now());
            replies.push(s.snapshot());
        }
        if single {
            replies.extend(s.refresh_heads());
        } else if now() >= NEXT_HEADS.get() {
            let start = now();
            if let Some(reply) = s.refresh_heads() {
                let took = now() - start;
                NEXT_HEADS.set(if took > HEADS_PLAYING_MS {
                    f64::INFINITY
                } else {
                    now() + HEADS_MS.max(19.0 * took)
                });
                replies.push(reply);
            }
        }
        replies
    })
}

/// A step over several workers under way.
struct Pending {
    step: SharedStep,
    /// Each job's answer, once it came.
    answers: Vec<Option<Answer>>,
    started: f64,
    /// A single Step (replies as `Session::handle`'s Step), not a tick of Play.
    single: bool,
}

/// The next step over `workers_now()` workers: the jobs go out, then this worker computes its
/// own share; `answered` finishes the step when the last answer comes.
fn begin_shared(single: bool) {
    let workers = workers_now();
    // A model that cannot train needs no gradient workers: `begin_shared_step` refuses below.
    let trainable = SESSION.with_borrow(Session::trainable).is_ok();
    let resized = match trainable {
        true => POOL.with_borrow_mut(|p| p.resize(workers - 1, &listeners())),
        false => Ok(()),
    };
    if let Err(why) = resized {
        settle(1, Some(format!("a second worker could not start ({why})")));
        if single {
            let replies = SESSION.with_borrow_mut(|s| s.train(1));
            report_steps(replies, MS_PER_STEP.get(), true);
        } else {
            schedule_tick();
        }
        return;
    }
    let started = now();
    let (mut step, jobs) = match SESSION.with_borrow_mut(|s| s.begin_shared_step(workers)) {
        Ok(begun) => begun,
        Err(replies) => {
            replies.into_iter().flat_map(hold_progress).for_each(post);
            return;
        }
    };
    for (k, (which, job)) in jobs.into_iter().enumerate() {
        // A transferred buffer is gone from here: each job gets one of its own.
        let spare = POOL.with_borrow(Pool::spare);
        let weights = SESSION.with_borrow(|s| params_into_floats(&s.weights(which), spare));
        let shape = || SESSION.with_borrow(|s| s.replica_shape(which));
        if let Err(e) = POOL.with_borrow_mut(|p| p.send(k, shape, job, &weights)) {
            gradient_worker_died(format!("it could not be reached ({e})"));
            return;
        }
    }
    SESSION.with_borrow_mut(|s| s.own_share(&mut step));
    if !single {
        views_while_shares_compute();
    }
    let answers = std::iter::repeat_with(|| None).take(step.jobs()).collect();
    SHARED.set(Some(Pending {
        step,
        answers,
        started,
        single,
    }));
    // A batch of fewer rows than workers may leave no share to hand out.
    finish_when_answered();
}

/// While the gradient workers finish their shares, the views due are made here: the snapshot
/// and the Heads claim are posted, the Batch view is kept for the next Progress. They show the
/// model as the last step left it, as they would have if made after it; made then, this worker
/// would work alone while the gradient workers waited for the next step.
fn views_while_shares_compute() {
    views_due(false)
        .into_iter()
        .flat_map(hold_progress)
        .for_each(post);
    if batch_due(now()) {
        BATCH_MADE.set(Some(batch_view()));
    }
}

/// Where the gradient workers report.
fn listeners() -> Listeners {
    Listeners {
        answer: Rc::new(answered),
        death: Rc::new(gradient_worker_died),
    }
}

/// Gradient worker `index` answered its job; the last answer finishes the step.
fn answered(index: usize, answer: Answer) {
    SHARED.with_borrow_mut(|pending| {
        if let Some(slot) = pending.as_mut().and_then(|p| p.answers.get_mut(index)) {
            *slot = Some(answer);
        }
    });
    finish_when_answered();
}

/// The step under way, finished once every job is answered.
fn finish_when_answered() {
    let all_in = SHARED.with_borrow(|p| {
        p.as_ref()
            .is_some_and(|p| p.answers.iter().all(Option::is_some))
    });
    if !all_in {
        return;
    }
    let Some(p) = SHARED.take() else { return };
    let answers = p.answers.into_iter().flatten().collect();
    let replies = SESSION.with_borrow_mut(|s| s.finish_shared_step(p.step, answers));
    let ms = (now() - p.started).max(0.001);
    measured(workers_now(), 1, ms);
    report_steps(replies, ms, p.single);
    // The page's messages that waited for the step, in order, until one starts another.
    while SHARED.with_borrow(Option::is_none) {
        let Some(data) = DEFERRED.with_borrow_mut(VecDeque::pop_front) else {
            break;
        };
        handle_packet(data);
    }
}

/// A gradient worker died or cannot be reached: the training worker cannot take the step, and
/// stops as if it had died itself, so the page offers Restart (which starts them all afresh
/// from the kept model).
fn gradient_worker_died(why: String) {
    POOL.with_borrow_mut(Pool::clear);
    SHARED.set(None);
    post(
        FromWorker::Crashed {
            message: format!("a gradient worker stopped: {why}"),
        }
        .into(),
    );
}

/// How many workers train now, and why not more.
enum Choice {
    Settled(WorkersInUse),
    /// Auto, with more than one worker possible: measuring whether they gain.
    Measuring(AutoMeasurement),
}

/// This machine's logical cores, as the browser tells them.
fn cores() -> usize {
    js_sys::Reflect::get(&scope(), &"navigator".into())
        .and_then(|navigator| js_sys::Reflect::get(&navigator, &"hardwareConcurrency".into()))
        .ok()
        .and_then(|n| n.as_f64())
        .map_or(1, |n| n as usize)
        .max(1)
}

/// Whether this browser lets a worker start workers (Safari before 15.5 does not).
fn nested_workers() -> bool {
    js_sys::Reflect::has(&scope(), &"Worker".into()).unwrap_or(false)
}

/// Decide afresh how many workers train, from the setting (and for Auto, a measurement).
fn choose_workers() {
    let count = WORKERS.get();
    let cores = cores();
    let most = count.most(cores);
    CHOICE.set(match count {
        _ if most > 1 && !nested_workers() => Choice::Settled(WorkersInUse {
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
    });
    if workers_now() == 1 {
        POOL.with_borrow_mut(Pool::clear);
    }
    post(FromWorker::Workers(in_use()).into());
}

fn settle(using: usize, why: Option<String>) {
    let most = CHOICE.with_borrow(|c| match c {
        Choice::Settled(w) => w.most,
        Choice::Measuring(m) => m.most,
    });
    CHOICE.set(Choice::Settled(WorkersInUse { using, most, why }));
    if using == 1 {
        POOL.with_borrow_mut(Pool::clear);
    }
    post(FromWorker::Workers(in_use()).into());
}

fn workers_now() -> usize {
    CHOICE.with_borrow(|c| match c {
        Choice::Settled(w) => w.using,
        Choice::Measuring(m) => m.workers(),
    })
}

fn in_use() -> WorkersInUse {
    CHOICE.with_borrow(|c| match c {
        Choice::Settled(w) => w.clone(),
        Choice::Measuring(m) => WorkersInUse {
            using: m.workers(),
            most: m.most,
            why: Some(format!(
                "measuring whether {} workers step faster than one",
                m.most
            )),
        },
    })
}

/// `steps` steps on `workers` workers took `ms_per_step` each: a sample for Auto's measurement,
/// which settles once it has all its rounds.
fn measured(workers: usize, steps: usize, ms_per_step: f64) {
    let (before, found) = CHOICE.with_borrow_mut(|c| match c {
        Choice::Measuring(m) => (m.workers(), m.record(workers, steps, ms_per_step)),
        Choice::Settled(w) => (w.using, None),
    });
    match found {
        Some(Measured {
            using,
            one_ms,
            many_ms,
        }) => {
            let most = CHOICE.with_borrow(|c| match c {
                Choice::Measuring(m) => m.most,
                Choice::Settled(w) => w.most,
            });
            let why = (using == 1).then(|| {
                format!(
                    "at batch {}, a step took {one_ms:.1} ms on one worker and {many_ms:.1} ms on {most}: too little work to share",
                    SESSION.with_borrow(Session::batch_size)
                )
            });
            settle(using, why);
        }
        // The measurement moved to the other side: the header says so.
        None if workers_now() != before => post(FromWorker::Workers(in_use()).into()),
        None => {}
    }
}

/// What the worker does with the browser's store, one at a time and in order.
#[derive(Clone, Copy, PartialEq)]
enum StoreJob {
    /// Write the current model and its History.
    Keep,
    /// Read back the History kept with the model of this generation.
    RestoreHistory { generation: u64 },
}

/// Queue `job`. Here rather than on the page: the small preset with its Adam moments is
/// ~40 MB, and copying that on the page's main thread took 70–110 ms every few seconds. A keep
/// asked for while one waits is the same keep, of the model as it is when its turn comes.
fn store(job: StoreJob) {
    JOBS.with_borrow_mut(|jobs| {
        if !jobs.contains(&job) {
            jobs.push_back(job);
        }
    });
    if STORING.replace(true) {
        return;
    }
    wasm_bindgen_futures::spawn_local(async {
        while let Some(job) = JOBS.with_borrow_mut(VecDeque::pop_front) {
            match job {
                StoreJob::Keep => keep().await,
                StoreJob::RestoreHistory { generation } => restore_history(generation).await,
            }
        }
        STORING.set(false);
    });
}

/// Write the current model, then the History entries not written yet, then tell the page.
async fn keep() {
    let reply = match SESSION.with_borrow(Session::kept_models) {
        Ok((model, model_b)) => match storage::save_model(&model, model_b.as_ref()).await {
            Ok(()) => match keep_history().await {
                Ok(()) => FromWorker::Kept { step: model.step },
                Err(e) => FromWorker::Failed(e),
            },
            Err(e) => FromWorker::Failed(e),
        },
        Err(e) => FromWorker::Failed(e),
    };
    hold_progress(reply.into()).into_iter().for_each(post);
}

async fn keep_history() -> LabResult<()> {
    let plan = STORED.with_borrow(|(generation, steps)| {
        SESSION.with_borrow(|s| {
            let fresh = BTreeSet::new();
            s.history_to_keep(if *generation == s.generation() {
                steps
            } else {
                &fresh
            })
        })
    });
    let Some(plan) = plan else { return Ok(()) };
    storage::save_history(&plan.index, &plan.new_entries).await?;
    STORED.set((plan.generation, plan.index.steps.into_iter().collect()));
    Ok(())
}

/// The History kept with the model just restored goes back in front of the slider.
async fn restore_history(generation: u64) {
    let Some((index, entries)) = storage::load_history().await else {
        return;
    };
    let steps: BTreeSet<u64> = entries.iter().map(|(s, _)| *s).collect();
    let replies = SESSION.with_borrow_mut(|s| s.restore_history(generation, &index, entries));
    if !replies.is_empty() {
        STORED.set((generation, steps));
    }
    replies.into_iter().flat_map(hold_progress).for_each(post);
}

/// Progress replies are merged and let through at most every `PROGRESS_MS`, and always once
/// play has stopped; other replies pass at once. `Kept` first lets the held points through, so
/// the page has the curves up to the kept step when it keeps them.
fn hold_progress(reply: Reply) -> Vec<Reply> {
    let FromWorker::Progress {
        points,
        points_b,
        steps_per_second,
        playing,
        ..
    } = reply.message
    else {
        let held = matches!(reply.message, FromWorker::Kept { .. })
            && UNSENT.with_borrow(|unsent| !unsent.0.is_empty());
        if held {
            let playing = SESSION.with_borrow(Session::playing);
            return vec![release_progress(0.0, playing), reply];
        }
        return vec![reply];
    };
    UNSENT.with_borrow_mut(|(a, b)| {
        a.extend(points);
        b.extend(points_b);
    });
    if playing && now() - LAST_PROGRESS.get() < PROGRESS_MS {
        return Vec::new();
    }
    vec![release_progress(steps_per_second, playing)]
}

/// The held loss points as one Progress reply (a steps/s of 0 leaves the page's figure as is),
/// with the masking counts as they are now, and the latest batch when `BATCH_MS` have passed
/// since the last one (and nine times what it cost) or play has stopped.
fn release_progress(steps_per_second: f64, playing: bool) -> Reply {
    let at = now();
    LAST_PROGRESS.set(at);
    let batch = match BATCH_MADE.take() {
        // Paused: the batch of the step it stopped on.
        _ if !playing => Some(batch_view()),
        Some(made) => Some(made),
        None if batch_due(at) => Some(batch_view()),
        None => None,
    };
    let (points, points_b) = UNSENT.take();
    let mut reply = SESSION.with_borrow(|s| s.progress(points, points_b, steps_per_second));
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
fn batch_due(at: f64) -> bool {
    let wait = BATCH_MS.max(BATCH_COST.get() * (1.0 - BATCH_SHARE) / BATCH_SHARE);
    at - LAST_BATCH.get() >= wait
}

fn batch_view() -> Option<BatchView> {
    let at = now();
    let view = SESSION.with_borrow(Session::batch_view);
    LAST_BATCH.set(now());
    BATCH_COST.set(now() - at);
    view
}

/// As many steps as fit in a slice, or as the speed limit allows since the last tick.
fn steps_due(now_ms: f64) -> usize {
    let fit = (SLICE_MS / MS_PER_STEP.get()).floor().max(1.0);
    match SESSION.with_borrow(|s| s.speed) {
        None => fit as usize,
        Some(sps) => {
            let owed = OWED.get() + sps * (now_ms - LAST_TICK.get()).max(0.0) / 1000.0;
            let steps = owed.floor().clamp(1.0, fit);
            OWED.set((owed - steps).max(0.0));
            steps as usize
        }
    }
}
