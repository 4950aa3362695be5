//! The training worker the page talks to (the lead): the page's messages in, the session's
//! replies out at the cadences the page can take (`cadence`), steps shared with its gradient
//! workers (`shared`, how many in `workers`), claims in their turns (`claims`), and the
//! browser's store (`store`). Everything outside (the clock, `postMessage`, timers, other
//! workers, the browser's store) is reached through `Host`, which the web worker implements
//! over the browser and the tests over plain data.

mod cadence;
mod claims;
mod shared;
mod store;
mod workers;

use crate::replica::Param;
use crate::session::{Reply, Session};
use claims::Claims;
use engine::batch_view::BatchView;
use protocol::workers::{WorkerCount, WorkersInUse};
use protocol::{
    Crash, CurvePoint, FromWorker, LabError, LabResult, ToClaimWorker, ToGradientWorker, ToWorker,
};
use shared::Pending;
use std::collections::{BTreeSet, VecDeque};
use workers::Choice;

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

pub struct Lead {
    session: Session,
    wakes_pending: BTreeSet<WakeKey>,
    last_snapshot: f64,
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
    /// The claims asked for, their runner, and the claim measured again as the model trains.
    claims: Claims,
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
            claims: Claims::default(),
        }
    }
}

impl Lead {
    /// The lead as it starts: how many workers train is decided, and the page told.
    pub fn start(host: &mut impl Host) -> Lead {
        let mut lead = Lead {
            claims: Claims::new(host),
            ..Lead::default()
        };
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
            ToWorker::Crash(Crash::ClaimWorker) => match self.claims.crash(host) {
                Ok(()) => Vec::new(),
                Err(e) => vec![FromWorker::Failed(e).into()],
            },
            ToWorker::Crash(how) => {
                host.die(how);
                Vec::new()
            }
            ToWorker::RunClaim { claim, probe } => {
                self.claims.run(host, &self.session, claim, probe);
                Vec::new()
            }
            ToWorker::CancelClaim { claim } => {
                self.claims.cancel(host, &self.session, claim);
                Vec::new()
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
        // Another model or batch size: whether more workers gain is measured again.
        let remeasure = matches!(
            message,
            ToWorker::Reset { .. } | ToWorker::Load { .. } | ToWorker::Tune(_)
        );
        let replaced = matches!(message, ToWorker::Reset { .. } | ToWorker::Load { .. });
        // The claim that follows training, at the step a Pause or a Step stops on.
        let stops = matches!(message, ToWorker::Pause | ToWorker::Step);
        // Loss points held back go first: after a Rewind, a Reset or a Load they would extend
        // the curve the page has just cut or replaced.
        let held = !self.unsent.0.is_empty() || !self.unsent.1.is_empty();
        if held && (replaced || matches!(message, ToWorker::Rewind { .. })) {
            let reply = self.release_progress(host, 0.0, self.session.playing());
            host.post(reply);
        }
        let mut replies = self.session.handle(message, attachments);
        if stops {
            replies.extend(self.claims.measured_again(&self.session));
        }
        if remeasure {
            self.choose_workers(host);
        }
        if replaced {
            // Not the new model's.
            self.batch_made = None;
            self.claims.models_replaced(host, &self.session);
        }
        replies
    }

    /// The lead asked to be woken for `wake`, and is.
    pub fn wake(&mut self, host: &mut impl Host, wake: Wake) {
        self.wakes_pending.remove(&key(wake));
        match wake {
            Wake::Tick => self.tick(host),
            Wake::ClaimUnit => {
                self.claims.unit(host, &self.session);
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
        if self.claims.measuring_here() && self.wakes_pending.insert(key(Wake::ClaimUnit)) {
            host.wake(Wake::ClaimUnit, None);
        }
        if self.session.generating() && self.wakes_pending.insert(key(Wake::Generation)) {
            host.wake(Wake::Generation, Some(GENERATE_MS));
        }
    }
}

#[cfg(test)]
mod tests;
