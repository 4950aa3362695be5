//! The Claims panel's experiments, in the worker: each claim's file here says how it measures
//! (`start`, then its `Experiment` one unit per call), so the worker reports progress and hears
//! Cancel between units; claims measured in one go answer at once. The queue below schedules
//! any claim alike. Plain Rust: the caller brings the clock.
//!
//! A new claim: its file here (its `start` and `Experiment`), and its arm in `start` below.

mod by_length;
mod extrapolation;
mod heads;
mod induction;
mod kv_cache;
mod leakage;
mod scaling;

use crate::lab::Lab;
use protocol::turns::{Asked, Cancelled, ClaimTurns};
use protocol::{Claim, ClaimResult, FromWorker, LabResult, ProbeInput};

/// The models a claim measures, as they are when it starts and at each of its units.
pub struct Models<'a> {
    pub lab: Option<&'a Lab>,
    /// Compare's model B.
    pub lab_b: Option<&'a Lab>,
    /// The seed the current model was made with (a fresh model of the same seed).
    pub seed: u64,
}

/// A claim under way, measured one unit per call.
pub trait Experiment {
    /// (units measured, units in all)
    fn progress(&self) -> (usize, usize);

    /// Measures the next unit; the result once the last is measured (or why it failed).
    fn step(&mut self, models: &Models, now_ms: &dyn Fn() -> f64)
        -> LabResult<Option<ClaimResult>>;

    /// The models were replaced while it ran: whether it goes on. One that measures copies of
    /// the old models, or what follows from them, stops; one that does not depend on the
    /// model goes on.
    fn goes_on_with_new_models(&mut self) -> bool {
        true
    }

    /// Ended with a result: what measures the model again as it trains, for a claim that is
    /// (`About::measured_again_while_training`).
    fn follower(self: Box<Self>) -> Option<Box<dyn Follower>> {
        None
    }
}

/// A claim measured again, in one go, on the model as it trains, with what its run set up.
pub trait Follower {
    /// None: this model cannot be measured (no longer one that trains). A follower may keep
    /// what it measured (a claim plotted by step adds a point).
    fn measure(&mut self, lab: &Lab) -> Option<LabResult<ClaimResult>>;
}

pub enum Started {
    /// Measured in one go.
    Done(ClaimResult),
    Running(Box<dyn Experiment>),
}

/// Starts `claim` on the models and the probe: one arm a claim.
fn start(claim: Claim, probe: &ProbeInput, models: &Models) -> LabResult<Started> {
    match claim {
        Claim::Leakage => leakage::start(probe, models),
        Claim::Memory => by_length::memory(models),
        Claim::Time => by_length::time(models),
        Claim::KvCache => kv_cache::start(models),
        Claim::Extrapolation => extrapolation::start(models),
        Claim::Scaling => scaling::start(probe, models),
        Claim::Heads => heads::start(models),
        Claim::InductionHeads => induction::start(models),
    }
}

/// What measures `claim` again as `lab` trains after it ran elsewhere with `result`, for a
/// claim that is measured again (`About::measured_again_while_training`).
fn follower(
    claim: Claim,
    lab: Option<&Lab>,
    seed: u64,
    result: &ClaimResult,
) -> Option<Box<dyn Follower>> {
    match claim {
        Claim::Heads => heads::follower(lab, seed),
        Claim::InductionHeads => induction::follower(lab, seed, result),
        _ => None,
    }
}

/// The claims asked for, run here in turn (`ClaimTurns`): the one under way is measured unit
/// by unit.
#[derive(Default)]
pub struct ClaimQueue {
    turns: ClaimTurns<Box<dyn Experiment>>,
    /// The seed the current model was made with: a claim's fresh model is made with it.
    pub seed: u64,
    /// The claim measured again as the model trains, once it has run on this model.
    follower: Option<(Claim, Box<dyn Follower>)>,
}

impl ClaimQueue {
    /// A claim is under way: the worker calls `step` until it ends.
    pub fn running(&self) -> bool {
        self.turns.running().is_some()
    }

    fn models<'a>(&self, lab: Option<&'a Lab>, lab_b: Option<&'a Lab>) -> Models<'a> {
        Models {
            lab,
            lab_b,
            seed: self.seed,
        }
    }

    /// Asked to run `claim`: now if nothing runs, else in turn.
    pub fn run(
        &mut self,
        claim: Claim,
        probe: ProbeInput,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Vec<FromWorker> {
        match self.turns.ask(claim, probe) {
            Asked::Waits => vec![FromWorker::ClaimQueued { claim }],
            Asked::StartsOver(probe) => {
                self.turns.take_running();
                self.start_in_turn(Some((claim, probe)), lab, lab_b)
            }
            Asked::Starts(probe) => self.start_in_turn(Some((claim, probe)), lab, lab_b),
            Asked::GoesFirst(probe) => {
                let aside = self.turns.step_aside();
                let mut replies = self.start_in_turn(Some((claim, probe)), lab, lab_b);
                // The one aside waits while this one runs (one measured in one go has ended
                // already, and the other goes on).
                if let Some(aside) = aside.filter(|&a| self.turns.aside() == Some(a)) {
                    replies.insert(0, FromWorker::ClaimQueued { claim: aside });
                }
                replies
            }
        }
    }

    /// Stops `claim`, under way or waiting; the next waiting one starts.
    pub fn cancel(
        &mut self,
        claim: Claim,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Vec<FromWorker> {
        match self.turns.cancel(claim) {
            Cancelled::NotAsked => Vec::new(),
            Cancelled::Waiting | Cancelled::Aside => vec![FromWorker::ClaimCancelled { claim }],
            Cancelled::Running => {
                self.turns.end();
                let mut replies = vec![FromWorker::ClaimCancelled { claim }];
                replies.extend(self.start_in_turn(None, lab, lab_b));
                replies
            }
        }
    }

    /// The models were replaced: the claim under way goes on or stops, as it says
    /// (`Experiment::goes_on_with_new_models`), and the claim measured again as the model
    /// trains no longer is (what it set up was the old model's).
    pub fn models_replaced(&mut self, lab: Option<&Lab>, lab_b: Option<&Lab>) -> Vec<FromWorker> {
        self.follower = None;
        let mut replies = Vec::new();
        let aside_goes_on = self
            .turns
            .aside_mut()
            .is_none_or(|run| run.goes_on_with_new_models());
        if let Some(claim) = self.turns.aside().filter(|_| !aside_goes_on) {
            replies.extend(self.cancel(claim, lab, lab_b));
        }
        let goes_on = self
            .turns
            .run_mut()
            .is_none_or(|run| run.goes_on_with_new_models());
        match self.turns.running() {
            Some(claim) if !goes_on => replies.extend(self.cancel(claim, lab, lab_b)),
            _ => {}
        }
        replies
    }

    /// Measures the next unit of the claim under way: its progress, or its result after the
    /// last (and then the next waiting claim starts).
    pub fn step(
        &mut self,
        now_ms: &dyn Fn() -> f64,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Vec<FromWorker> {
        let models = self.models(lab, lab_b);
        let (Some(claim), Some(run)) = (self.turns.running(), self.turns.run_mut()) else {
            return Vec::new();
        };
        match run.step(&models, now_ms).transpose() {
            Some(result) => {
                if let Some((_, run)) = self.turns.end() {
                    if let Some(follower) = run.follower() {
                        self.follower = result.is_ok().then_some((claim, follower));
                    }
                }
                let result = stamped(result, lab);
                let mut replies = vec![FromWorker::ClaimDone { claim, result }];
                replies.extend(self.start_in_turn(None, lab, lab_b));
                replies
            }
            None => {
                let (done, total) = run.progress();
                vec![FromWorker::ClaimProgress { claim, done, total }]
            }
        }
    }

    /// Starts `first` (or else the next waiting claim), and after it those waiting, as long as
    /// each is measured in one go and answers at once: until one runs unit by unit or none waits.
    fn start_in_turn(
        &mut self,
        first: Option<(Claim, ProbeInput)>,
        lab: Option<&Lab>,
        lab_b: Option<&Lab>,
    ) -> Vec<FromWorker> {
        let models = self.models(lab, lab_b);
        let mut replies = Vec::new();
        let mut next = first.or_else(|| self.turns.next_to_start());
        while let Some((claim, probe)) = next {
            replies.push(match start(claim, &probe, &models) {
                Ok(Started::Done(result)) => FromWorker::ClaimDone {
                    claim,
                    result: stamped(Ok(result), lab),
                },
                Err(e) => FromWorker::ClaimDone {
                    claim,
                    result: Err(e),
                },
                Ok(Started::Running(run)) => {
                    let (done, total) = run.progress();
                    self.turns.started(claim, run);
                    FromWorker::ClaimProgress { claim, done, total }
                }
            });
            next = self.turns.next_to_start();
        }
        replies
    }

    /// `claim` ran to its end on a copy of this model in the claim worker, with `result`: from
    /// now on it is measured again here as the model trains, with what that run set up (made
    /// again from the model and `seed`, and what `result` holds).
    pub fn ran_elsewhere(
        &mut self,
        claim: Claim,
        result: &ClaimResult,
        lab: Option<&Lab>,
        seed: u64,
    ) {
        self.follower = follower(claim, lab, seed, result).map(|f| (claim, f));
    }

    /// The claim measured again as the model trains runs again elsewhere: it is not measured
    /// again here meanwhile.
    pub fn forget_follower(&mut self) {
        self.follower = None;
    }

    /// The claim that follows training measured again on the model as it is now, in one go,
    /// once it has run on this model and is not running again: what the page's card follows
    /// while training.
    pub fn refresh_claim(&mut self, lab: Option<&Lab>) -> Option<FromWorker> {
        let (claim, follower) = self.follower.as_mut()?;
        if self.turns.asked(*claim) {
            return None;
        }
        let lab = lab?;
        follower.measure(lab).map(|result| FromWorker::ClaimDone {
            claim: *claim,
            result: stamped(result, Some(lab)),
        })
    }
}

/// A result with the step of the model it measured.
fn stamped(result: LabResult<ClaimResult>, lab: Option<&Lab>) -> LabResult<ClaimResult> {
    result.map(|r| ClaimResult {
        measured_at: lab.map(Lab::step_count),
        ..r
    })
}

/// Runs `claim` on `lab` to its end, unit by unit, as the worker does: its result.
#[cfg(test)]
pub(crate) fn run_to_end(
    queue: &mut ClaimQueue,
    claim: Claim,
    lab: &Lab,
) -> LabResult<ClaimResult> {
    let clock = || 0.0;
    let mut replies = queue.run(claim, ProbeInput::default(), Some(lab), None);
    while queue.running() {
        replies.extend(queue.step(&clock, Some(lab), None));
    }
    replies
        .into_iter()
        .find_map(|r| match r {
            FromWorker::ClaimDone { result, .. } => Some(result),
            _ => None,
        })
        .expect("the claim ends")
}
