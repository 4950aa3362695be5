//! Claims, in one place: the page asks for them here, they take their turns here
//! (`ClaimTurns`), the runner that measures them is ordered from here (`ClaimOrder`), and its
//! reports come back here on their way to the page (`ClaimReport`). The runner is the claim
//! worker, on a copy of the models, so that training goes on while a claim measures; where the
//! browser cannot start workers from a worker (`Host::nested_workers`), or the claim worker
//! cannot start, it is a `ClaimRunner` here, measuring a unit per wake-up between training
//! slices. Here too: the claim measured again as the model trains (Heads, Induction heads),
//! and how often.

use super::{Host, Lead};
use crate::claims::{follower, stamped, ClaimRunner, Follower};
use crate::session::{Reply, Session};
use protocol::claims::{REMEASURE_MS, REMEASURE_PLAYING_MAX_MS};
use protocol::turns::{Asked, Cancelled, ClaimOrder, ClaimReport, ClaimTurns, Next};
use protocol::{
    Claim, FromClaimWorker, FromWorker, LabError, LabResult, ProbeInput, ToClaimWorker,
};

pub(super) struct Claims {
    turns: ClaimTurns,
    runner: Runner,
    /// The model generation (`Session::generation`) the claim under way measures, and the one
    /// the claims last saw.
    measures: u64,
    models_of: u64,
    /// The claim measured again as the model trains, once it has run on this model.
    follower: Option<(Claim, Box<dyn Follower>)>,
    /// When the claim that follows training may be measured again, and the wait after a
    /// measurement too long to repeat at the usual cadence (it doubles each time).
    next_remeasure: f64,
    remeasure_backoff: f64,
}

/// Where claims are measured.
enum Runner {
    /// The claim worker, on a copy of the models; `started` once it runs (it starts with the
    /// first claim, and again after it died).
    ClaimWorker { started: bool },
    /// Here, between training slices.
    Here(ClaimRunner),
}

impl Default for Claims {
    fn default() -> Self {
        Claims {
            turns: ClaimTurns::default(),
            runner: Runner::ClaimWorker { started: false },
            measures: 0,
            models_of: 0,
            follower: None,
            next_remeasure: 0.0,
            remeasure_backoff: REMEASURE_MS,
        }
    }
}

impl Claims {
    /// Claims measured where `host` lets them.
    pub(super) fn new(host: &impl Host) -> Claims {
        let runner = match host.nested_workers() {
            true => Runner::ClaimWorker { started: false },
            false => Runner::Here(ClaimRunner::default()),
        };
        Claims {
            runner,
            ..Claims::default()
        }
    }

    /// The page's `RunClaim`: now if none runs, else in turn.
    pub(super) fn run(
        &mut self,
        host: &mut impl Host,
        session: &Session,
        claim: Claim,
        probe: ProbeInput,
    ) {
        self.measure_soon();
        // Run again, it is not measured again as the model trains until its run ends.
        if claim.measured_again_while_training() {
            self.follower = None;
        }
        match self.turns.ask(claim, probe) {
            Asked::Waits => post(host, ClaimReport::Queued { claim }),
            Asked::Starts(probe) | Asked::StartsOver(probe) => {
                self.start(host, session, claim, probe)
            }
            Asked::GoesFirst { probe, aside } => {
                post(host, ClaimReport::Queued { claim: aside });
                self.start(host, session, claim, probe);
            }
        }
    }

    /// The page's `CancelClaim`: a waiting claim is dropped here; the runner stops one under
    /// way or aside, and its report ends it.
    pub(super) fn cancel(&mut self, host: &mut impl Host, session: &Session, claim: Claim) {
        match self.turns.cancel(claim) {
            Cancelled::NotAsked => {}
            Cancelled::Waiting => post(host, ClaimReport::Cancelled { claim }),
            Cancelled::Running | Cancelled::Aside => {
                self.order(host, session, ClaimOrder::Cancel { claim })
            }
        }
    }

    /// `claim` starts, on the models as they are now.
    fn start(&mut self, host: &mut impl Host, session: &Session, claim: Claim, probe: ProbeInput) {
        self.measures = session.generation();
        match self.copy_for(host, session, claim) {
            Ok(()) => self.order(host, session, ClaimOrder::Start { claim, probe }),
            Err(e) => {
                let failed = ClaimReport::Done {
                    claim,
                    result: Err(e),
                };
                self.report(host, session, failed)
            }
        }
    }

    /// The claim worker's copy of the models as they are now, before a claim starts there
    /// (the History's weights, up to 64 MB a model, only for a claim that reads them). A claim
    /// worker that cannot start leaves the claims to run here.
    fn copy_for(&mut self, host: &mut impl Host, session: &Session, claim: Claim) -> LabResult<()> {
        let Runner::ClaimWorker { started } = &mut self.runner else {
            return Ok(());
        };
        let (copy, attachments) = session.copy_for_claims(claim.reads_history())?;
        match host.to_claim_worker(&copy, &attachments) {
            Ok(()) => {
                *started = true;
                Ok(())
            }
            Err(_) if !*started => {
                self.runner = Runner::Here(ClaimRunner::default());
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// An order for the runner. What it reports at once (a claim measured in one go, a stop)
    /// is handled here; the claim worker's reports come back through `Lead::claim_news`.
    fn order(&mut self, host: &mut impl Host, session: &Session, order: ClaimOrder) {
        let reports = match &mut self.runner {
            Runner::Here(runner) => runner.obey(order, &session.claim_models()),
            Runner::ClaimWorker { started } => {
                let sent = match *started {
                    true => host.to_claim_worker(&ToClaimWorker::Order(order), &[]),
                    false => Err(LabError::unavailable("no claim worker runs")),
                };
                if let Err(e) = sent {
                    self.claim_worker_died(host, session, &e.to_string());
                }
                Vec::new()
            }
        };
        for report in reports {
            self.report(host, session, report);
        }
    }

    /// What the runner reported: it goes on to the page. A claim that ended hands its turn on
    /// (the next may end at once too, so this goes at most once round the claims); one that
    /// ended with a result on the current model, measured again as the model trains, is
    /// followed from now on.
    pub(super) fn report(&mut self, host: &mut impl Host, session: &Session, report: ClaimReport) {
        if let ClaimReport::Done {
            claim,
            result: Ok(result),
        } = &report
        {
            if self.measures == session.generation() && self.turns.running() == Some(*claim) {
                let models = session.claim_models();
                self.follower =
                    follower(*claim, models.lab, models.seed, result).map(|f| (*claim, f));
            }
        }
        let next = match report.ends() {
            true => self.turns.ended(report.claim()),
            false => None,
        };
        post(host, report);
        match next {
            Some(Next::Start(claim, probe)) => self.start(host, session, claim, probe),
            Some(Next::Resume(claim)) => self.order(host, session, ClaimOrder::Resume { claim }),
            None => {}
        }
    }

    /// The claim worker died (or cannot be reached): its claims end with why, training is not
    /// touched, and the waiting claims start in a new claim worker.
    fn claim_worker_died(&mut self, host: &mut impl Host, session: &Session, why: &str) {
        if let Runner::ClaimWorker { started: true } = self.runner {
            host.end_claim_worker();
            self.runner = Runner::ClaimWorker { started: false };
        }
        let (ended, next) = self.turns.abandon();
        for claim in ended {
            let why = format!("the claims' worker stopped: {why}. Run again");
            let result = Err(LabError::unavailable(why));
            post(host, ClaimReport::Done { claim, result });
        }
        if let Some(Next::Start(claim, probe)) = next {
            self.start(host, session, claim, probe);
        }
    }

    /// The models were replaced (Reset, Load): the claim measured again no longer is (it was
    /// the old model's), and the runner's claims go on or stop, as each says. A Load that
    /// failed left the models as they were.
    pub(super) fn models_replaced(&mut self, host: &mut impl Host, session: &Session) {
        self.measure_soon();
        if session.generation() == self.models_of {
            return;
        }
        self.models_of = session.generation();
        self.follower = None;
        if self.turns.running().is_some() {
            self.order(host, session, ClaimOrder::ModelsReplaced);
        }
    }

    /// A test asks the claim worker to die.
    pub(super) fn crash(&self, host: &mut impl Host) -> LabResult<()> {
        match self.runner {
            Runner::ClaimWorker { started: true } => {
                host.to_claim_worker(&ToClaimWorker::Crash, &[])
            }
            _ => Err(LabError::unavailable(
                "no claim worker runs: Run a claim first",
            )),
        }
    }

    /// A claim is measured here: the lead asks for `Wake::ClaimUnit` until it ends.
    pub(super) fn measuring_here(&self) -> bool {
        matches!(&self.runner, Runner::Here(runner) if runner.measuring())
    }

    /// The next unit of the claim measured here.
    pub(super) fn unit(&mut self, host: &mut impl Host, session: &Session) {
        let Runner::Here(runner) = &mut self.runner else {
            return;
        };
        if let Some(report) = runner.unit(&session.claim_models(), &|| host.now()) {
            self.report(host, session, report);
        }
    }

    /// Another model, or the claim run afresh: its measurements may be short again.
    fn measure_soon(&mut self) {
        self.next_remeasure = 0.0;
        self.remeasure_backoff = REMEASURE_MS;
    }

    /// The claim that follows training measured again on the model as it is now, in one go,
    /// once it has run on this model and is not asked for again: what the page's card follows
    /// while training, and at the step a Pause or a Step stops on.
    pub(super) fn measured_again(&mut self, session: &Session) -> Option<Reply> {
        let (claim, follower) = self.follower.as_mut()?;
        if self.turns.asked(*claim) {
            return None;
        }
        let lab = session.claim_models().lab?;
        let result = stamped(follower.measure(lab)?, Some(lab));
        let report = ClaimReport::Done {
            claim: *claim,
            result,
        };
        Some(FromWorker::Claim(report).into())
    }

    /// `measured_again` while playing, when due: at most every `REMEASURE_MS`, and at most a
    /// twentieth of the time; a long one (training stands still through it, and Pause waits
    /// on it) waits twice as long as the one before.
    pub(super) fn measured_again_when_due(
        &mut self,
        host: &impl Host,
        session: &Session,
    ) -> Option<Reply> {
        if host.now() < self.next_remeasure {
            return None;
        }
        let start = host.now();
        let reply = self.measured_again(session)?;
        let took = host.now() - start;
        let wait = if took > REMEASURE_PLAYING_MAX_MS {
            self.remeasure_backoff *= 2.0;
            self.remeasure_backoff
        } else {
            self.remeasure_backoff = REMEASURE_MS;
            REMEASURE_MS
        };
        self.next_remeasure = host.now() + wait.max(19.0 * took);
        Some(reply)
    }
}

/// A report for the page.
fn post(host: &mut impl Host, report: ClaimReport) {
    host.post(FromWorker::Claim(report).into());
}

/// What the claim worker says.
impl Lead {
    /// The claim worker's news: its reports go on to the page through the claims' turns; its
    /// death ends its claims.
    pub fn claim_news(&mut self, host: &mut impl Host, news: FromClaimWorker) {
        match news {
            FromClaimWorker::Report(report) => self.claims.report(host, &self.session, report),
            FromClaimWorker::Crashed { message } => {
                self.claims.claim_worker_died(host, &self.session, &message)
            }
            FromClaimWorker::Hello => {}
        }
        self.schedule(host);
    }

    /// The claim worker died: its claim ends with why, training is not touched, and the
    /// waiting claims start in a new claim worker.
    pub fn claim_worker_died(&mut self, host: &mut impl Host, why: &str) {
        self.claims.claim_worker_died(host, &self.session, why);
        self.schedule(host);
    }
}
