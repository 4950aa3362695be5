//! The Claims panel's experiments, in the worker: each claim's file here says how it measures
//! (`start`, then its `Experiment` one unit per call), so the worker reports progress and hears
//! Cancel between units; claims measured in one go answer at once. `ClaimRunner` measures them
//! as the lead's turns order (`protocol::turns`), in the claim worker or in the lead. Plain
//! Rust: the caller brings the clock.
//!
//! A new claim: its file here (its `start` and `Experiment`), and its arm in `start` below
//! (and in `follower`, for a claim measured again as the model trains).

mod by_length;
mod extrapolation;
mod heads;
mod induction;
mod kv_cache;
mod leakage;
mod scaling;

use crate::lab::Lab;
use protocol::turns::{ClaimOrder, ClaimReport};
use protocol::{Claim, ClaimResult, LabResult, ProbeInput};

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
}

/// A claim measured again, in one go, on the model as it trains, with what its run set up.
pub trait Follower {
    /// None: this model cannot be measured (no longer one that trains). A follower may keep
    /// what it measured (a claim plotted by step adds a point).
    fn measure(&mut self, lab: &Lab) -> Option<LabResult<ClaimResult>>;
}

// It lives only from a claim's start to its report: the size gap costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
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

/// What measures `claim` again as `lab` trains, after its run ended with `result`, for a
/// claim that is measured again (`About::measured_again_while_training`): made from the model,
/// `seed` and what the result holds.
pub fn follower(
    claim: Claim,
    lab: Option<&Lab>,
    seed: u64,
    result: &ClaimResult,
) -> Option<Box<dyn Follower>> {
    match claim {
        Claim::Heads => heads::follower(lab, seed, result),
        Claim::InductionHeads => induction::follower(lab, seed, result),
        _ => None,
    }
}

/// Where claims are measured, unit by unit, as the lead's turns order: the claim it measures
/// now, and one set aside for it. What runs when is the turns' to say (`ClaimOrder`).
#[derive(Default)]
pub struct ClaimRunner {
    /// The runs held: the one measured now (`measuring`) and one set aside.
    runs: Vec<(Claim, Box<dyn Experiment>)>,
    measuring: Option<Claim>,
}

impl ClaimRunner {
    /// A claim is measured: the worker calls `unit` until it ends.
    pub fn measuring(&self) -> bool {
        self.measuring.is_some()
    }

    /// Does what the lead's turns order.
    pub fn obey(&mut self, order: ClaimOrder, models: &Models) -> Vec<ClaimReport> {
        match order {
            ClaimOrder::Start { claim, probe } => {
                self.drop_run(claim);
                // The one measured until now, if any, is set aside.
                self.measuring = None;
                vec![self.start(claim, &probe, models)]
            }
            ClaimOrder::ModelsReplaced => self.models_replaced(),
            ClaimOrder::Resume { claim } if self.holds(claim) => {
                self.measuring = Some(claim);
                Vec::new()
            }
            // Dropped meanwhile (the models were replaced): it ends.
            ClaimOrder::Resume { claim } | ClaimOrder::Cancel { claim } => {
                self.drop_run(claim);
                vec![ClaimReport::Cancelled { claim }]
            }
        }
    }

    fn start(&mut self, claim: Claim, probe: &ProbeInput, models: &Models) -> ClaimReport {
        match start(claim, probe, models) {
            Ok(Started::Done(result)) => ClaimReport::Done {
                claim,
                result: stamped(Ok(result), models.lab),
            },
            Err(e) => ClaimReport::Done {
                claim,
                result: Err(e),
            },
            Ok(Started::Running(run)) => {
                let (done, total) = run.progress();
                self.runs.push((claim, run));
                self.measuring = Some(claim);
                ClaimReport::Progress { claim, done, total }
            }
        }
    }

    /// Measures the next unit of the claim measured: its progress, or its result after the
    /// last.
    pub fn unit(&mut self, models: &Models, now_ms: &dyn Fn() -> f64) -> Option<ClaimReport> {
        let claim = self.measuring?;
        let (_, run) = self.runs.iter_mut().find(|(c, _)| *c == claim)?;
        let Some(result) = run.step(models, now_ms).transpose() else {
            let (done, total) = run.progress();
            return Some(ClaimReport::Progress { claim, done, total });
        };
        self.drop_run(claim);
        Some(ClaimReport::Done {
            claim,
            result: stamped(result, models.lab),
        })
    }

    /// The models were replaced: each run held goes on or stops, as it says
    /// (`Experiment::goes_on_with_new_models`); those that stop are reported.
    fn models_replaced(&mut self) -> Vec<ClaimReport> {
        let stopped: Vec<Claim> = self
            .runs
            .iter_mut()
            .filter_map(|(claim, run)| (!run.goes_on_with_new_models()).then_some(*claim))
            .collect();
        stopped
            .into_iter()
            .map(|claim| {
                self.drop_run(claim);
                ClaimReport::Cancelled { claim }
            })
            .collect()
    }

    fn holds(&self, claim: Claim) -> bool {
        self.runs.iter().any(|(c, _)| *c == claim)
    }

    fn drop_run(&mut self, claim: Claim) {
        self.runs.retain(|(c, _)| *c != claim);
        if self.measuring == Some(claim) {
            self.measuring = None;
        }
    }
}

/// A result with the step of the model it measured.
pub fn stamped(result: LabResult<ClaimResult>, lab: Option<&Lab>) -> LabResult<ClaimResult> {
    result.map(|r| ClaimResult {
        measured_at: lab.map(Lab::step_count),
        ..r
    })
}

/// Runs `claim` on `models` to its end, unit by unit, as a runner does: its result (the
/// command line's tests hold `attention-lab heads` to it).
pub fn run_to_end(claim: Claim, models: &Models) -> LabResult<ClaimResult> {
    let mut runner = ClaimRunner::default();
    let probe = ProbeInput::default();
    let mut reports = runner.obey(ClaimOrder::Start { claim, probe }, models);
    while runner.measuring() {
        reports.extend(runner.unit(models, &|| 0.0));
    }
    reports
        .into_iter()
        .find_map(|r| match r {
            ClaimReport::Done { result, .. } => Some(result),
            _ => None,
        })
        .expect("the claim ends")
}

#[cfg(test)]
mod tests;
