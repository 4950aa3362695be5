//! Induction heads: the model on the Repeat task measured at the History's kept steps, one a
//! unit, then at the step it is on; once it has run, measured again as it trains, each
//! measurement a new point.

use super::{Experiment, Follower, Models, Started};
use crate::lab::Lab;
use engine::experiments::induction::{ablations, measure, InductionMeasure};
use engine::forward::ForwardOptions;
use engine::model::BertForPreTraining;
use engine::repeat::RepeatTask;
use engine::train::Trainer;
use protocol::claims::{
    add_point, InductionHeads, InductionMeasured, InductionPoint, CHANGE_ACCURACY, MOST_POINTS,
};
use protocol::{ClaimResult, LabError, LabResult};

/// Most of the History's kept steps a Run reads (evenly spread), before the step it is on.
const HISTORY_STEPS: usize = 16;

/// What the claim measures with, and the points so far.
struct Induction {
    task: RepeatTask,
    opts: ForwardOptions,
    seed: u64,
    points: Vec<InductionPoint>,
}

/// The claim under way: the History's kept steps, then the model as it is at the last unit.
/// Each is read from the models when its unit runs (no copy of the History is made).
struct InductionRun {
    induction: Induction,
    /// Kept steps still to measure, popped from the end (oldest first).
    history: Vec<u64>,
    total: usize,
}

/// The Repeat trainer of `lab`, or what to set up.
fn repeat_trainer(lab: Option<&Lab>) -> LabResult<(&Trainer, RepeatTask)> {
    let how = "choose Objective Next token and Task Repeat, Reset, then Run";
    let trainer = lab
        .ok_or_else(LabError::no_model)?
        .trainer()
        .ok_or_else(|| {
            LabError::unavailable(format!("this claim trains a decoder on Repeat: {how}"))
        })?;
    let task = trainer.repeat.ok_or_else(|| {
        LabError::unavailable(format!("this model does not train on Repeat: {how}"))
    })?;
    Ok((trainer, task))
}

impl Induction {
    fn of(trainer: &Trainer, task: RepeatTask, seed: u64) -> Induction {
        Induction {
            task,
            opts: trainer.forward_options(),
            seed,
            points: Vec::new(),
        }
    }

    /// `model` at `step` measured, its point added (replacing the points from `step` on: a
    /// model rewound trains those steps again).
    fn measure(&mut self, step: u64, model: &BertForPreTraining) -> LabResult<InductionMeasure> {
        let m = measure(model, &self.task, &self.opts)?;
        add_point(
            &mut self.points,
            InductionPoint::of(step, &m),
            |p| p.step,
            MOST_POINTS,
        );
        Ok(m)
    }

    /// The result with `now`, and the ablation once the model copies.
    fn result(&self, model: &BertForPreTraining, now: &InductionMeasure) -> LabResult<ClaimResult> {
        let ablation = if now.copy2_accuracy >= CHANGE_ACCURACY {
            Some(ablations(model, &self.task, &self.opts)?)
        } else {
            None
        };
        Ok(InductionHeads::result(&InductionMeasured {
            points: &self.points,
            now,
            ablation: ablation.as_deref(),
            seed: self.seed,
            task: self.task,
        }))
    }
}

pub fn start(models: &Models) -> LabResult<Started> {
    let lab = models.lab.ok_or_else(LabError::no_model)?;
    let (trainer, task) = repeat_trainer(Some(lab))?;
    let every = lab.history.entries().len().div_ceil(HISTORY_STEPS).max(1);
    let step = trainer.stepper.step;
    let mut history: Vec<u64> = lab
        .history
        .steps()
        .into_iter()
        .step_by(every)
        .filter(|&s| s < step)
        .collect();
    history.reverse();
    Ok(Started::Running(Box::new(InductionRun {
        induction: Induction::of(trainer, task, models.seed),
        // The kept steps, then the model now.
        total: history.len() + 1,
        history,
    })))
}

impl Experiment for InductionRun {
    fn progress(&self) -> (usize, usize) {
        (self.total - self.history.len() - 1, self.total)
    }

    fn step(&mut self, models: &Models, _: &dyn Fn() -> f64) -> LabResult<Option<ClaimResult>> {
        let lab = models.lab.ok_or_else(LabError::no_model)?;
        if let Some(step) = self.history.pop() {
            // A step thinned or rewound away since the start is skipped.
            if let Some((_, model)) = lab.history.entries().iter().find(|(s, _)| *s == step) {
                self.induction.measure(step, model)?;
            }
            return Ok(None);
        }
        let (trainer, _) = repeat_trainer(Some(lab))?;
        let now = self
            .induction
            .measure(trainer.stepper.step, &trainer.model)?;
        self.induction.result(&trainer.model, &now).map(Some)
    }

    /// Its points are the old model's: it stops.
    fn goes_on_with_new_models(&mut self) -> bool {
        false
    }
}

/// The set-up of a run that ended with `result`, going on from the points it measured: each
/// measurement as the model trains adds one.
pub fn follower(lab: Option<&Lab>, seed: u64, result: &ClaimResult) -> Option<Box<dyn Follower>> {
    let (trainer, task) = repeat_trainer(lab).ok()?;
    let mut induction = Induction::of(trainer, task, seed);
    induction.points = result.history.induction().to_vec();
    Some(Box::new(induction))
}

impl Follower for Induction {
    fn measure(&mut self, lab: &Lab) -> Option<LabResult<ClaimResult>> {
        let (trainer, _) = repeat_trainer(Some(lab)).ok()?;
        let step = trainer.stepper.step;
        Some(
            self.measure(step, &trainer.model)
                .and_then(|now| self.result(&trainer.model, &now)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{run_to_end, Models};
    use protocol::{Claim, LabSettings, DEFAULT_CORPUS};

    fn run(lab: &Lab, seed: u64) -> LabResult<ClaimResult> {
        let models = Models {
            lab: Some(lab),
            lab_b: None,
            seed,
        };
        run_to_end(Claim::InductionHeads, &models)
    }

    fn repeat_settings() -> LabSettings {
        LabSettings {
            objective: engine::train::Objective::NextToken,
            repeat: true,
            ..LabSettings::default()
        }
    }

    #[test]
    fn a_model_not_on_repeat_is_told_what_to_set_up() {
        let lab = Lab::fresh(DEFAULT_CORPUS, &LabSettings::default()).unwrap();
        let e = run(&lab, 0).unwrap_err();
        assert!(e.to_string().contains("Task Repeat"), "{e}");
    }

    #[test]
    fn a_run_reads_the_history_then_follows_training_point_by_point() {
        let settings = repeat_settings();
        let mut lab = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        for _ in 0..30 {
            lab.step().unwrap();
        }
        let kept = lab.history.steps();
        assert!(kept.len() > 1, "{kept:?}");
        let r = run(&lab, settings.seed).unwrap();
        let steps: Vec<u64> = r.history.induction().iter().map(|p| p.step).collect();
        assert_eq!(steps.last(), Some(&30));
        assert_eq!(
            steps[..steps.len() - 1],
            kept[..kept.len() - usize::from(kept.last() == Some(&30))]
        );
        assert!(r.verdict.text.starts_with("Not yet"), "{}", r.verdict.text);
        // Measured again as it trains, from the result's points: one more point each time,
        // the old ones kept.
        let mut following = follower(Some(&lab), settings.seed, &r).expect("it follows");
        for _ in 0..5 {
            lab.step().unwrap();
        }
        let Some(Ok(again)) = following.measure(&lab) else {
            panic!("a result measured again");
        };
        assert_eq!(
            again.history.induction().len(),
            r.history.induction().len() + 1
        );
        assert_eq!(
            again.history.induction()[..r.history.induction().len()],
            r.history.induction()[..]
        );
        assert_eq!(again.history.induction().last().unwrap().step, 35);
        assert_eq!(
            again.plots[0].series[0].x.len(),
            again.history.induction().len()
        );
    }
}
