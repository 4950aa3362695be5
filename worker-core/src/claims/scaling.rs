//! Scaling (√d_k): one head size per call, then one step of Compare's History per call (both
//! models at that step), read from the models as they are when the unit runs.

use super::{Experiment, Models, Started};
use crate::lab::Lab;
use engine::config::AttentionScaling;
use engine::experiments::{mean_largest_weight, softmax_statistics, SoftmaxStatistics};
use engine::Rng;
use protocol::claims::{Scaling, TrainedModel, TrainedScaling, HEAD_SIZES, TRAINED_MIN_HEAD_DIM};
use protocol::{ClaimResult, LabResult, ProbeInput};

/// The claim under way: the head sizes still to measure, then the History's steps to read.
struct SoftmaxScaling {
    head_sizes: Vec<usize>,
    measured: Vec<(usize, Vec<(AttentionScaling, SoftmaxStatistics)>)>,
    /// The steps still to read, popped from the end; Err: why there is no trained comparison.
    steps: Result<Vec<u64>, String>,
    trained: Option<TrainedScaling>,
    probe: ProbeInput,
    total: usize,
    rng: Rng,
}

/// Most History steps the trained comparison reads (evenly spread, the current step last).
const TRAINED_STEPS: usize = 16;

pub fn start(probe: &ProbeInput, models: &Models) -> LabResult<Started> {
    let steps = trained_steps(models.lab, models.lab_b).map(|mut steps| {
        steps.reverse(); // popped from the end: oldest first
        steps
    });
    let mut head_sizes = HEAD_SIZES.to_vec();
    head_sizes.reverse();
    let total = head_sizes.len() + steps.as_ref().map_or(0, Vec::len);
    Ok(Started::Running(Box::new(SoftmaxScaling {
        head_sizes,
        measured: Vec::new(),
        steps,
        trained: None,
        probe: probe.clone(),
        total,
        rng: Rng::new(0),
    })))
}

/// The steps at which the Scaling claim reads Compare's two models: at most `TRAINED_STEPS`
/// of A's History (B's keeps the same steps) and the current one; Err says what to set up.
fn trained_steps(lab: Option<&Lab>, lab_b: Option<&Lab>) -> Result<Vec<u64>, String> {
    let how = format!("turn on Compare with model A's Scaling ÷√d_k and B's None on the preset small (d_k = {TRAINED_MIN_HEAD_DIM}), Reset, train, then Run");
    let (Some(a), Some(b)) = (lab, lab_b) else {
        return Err(format!("none: {how}"));
    };
    let (Some(ta), Some(tb)) = (a.trainer(), b.trainer()) else {
        return Err(format!("none: both models must train; {how}"));
    };
    let (ca, cb) = (&ta.model.config, &tb.model.config);
    if ca.attention_scaling == cb.attention_scaling {
        return Err(format!("none: both models scale alike; {how}"));
    }
    if ca.head_size() < TRAINED_MIN_HEAD_DIM {
        return Err(format!(
            "none: d_k = {} here, and the trained comparison needs d_k ≥ {TRAINED_MIN_HEAD_DIM}; {how}",
            ca.head_size()
        ));
    }
    if ta.stepper.step == 0 {
        return Err("none yet: the models have not trained; press Play, then Run".into());
    }
    let kept = a.history.steps();
    let every = kept.len().div_ceil(TRAINED_STEPS).max(1);
    let mut steps: Vec<u64> = kept.iter().copied().step_by(every).collect();
    if steps.last() != Some(&ta.stepper.step) {
        steps.push(ta.stepper.step);
    }
    Ok(steps)
}

impl Experiment for SoftmaxScaling {
    fn progress(&self) -> (usize, usize) {
        (
            self.total - self.head_sizes.len() - self.steps.as_ref().map_or(0, Vec::len),
            self.total,
        )
    }

    fn step(&mut self, models: &Models, _: &dyn Fn() -> f64) -> LabResult<Option<ClaimResult>> {
        if let Some(d_k) = self.head_sizes.pop() {
            self.measured
                .push((d_k, softmax_statistics(d_k, &mut self.rng)));
        } else if let Some(step) = self.steps.as_mut().ok().and_then(Vec::pop) {
            self.read_trained(step, models.lab, models.lab_b)?;
        }
        let done = self.head_sizes.is_empty() && self.steps.as_ref().map_or(true, Vec::is_empty);
        if !done {
            return Ok(None);
        }
        let trained = match (&self.steps, &self.trained) {
            (Err(why), _) => Err(why.as_str()),
            (Ok(_), Some(t)) => Ok(t),
            (Ok(_), None) => Err("none: the models changed while the claim ran; Run again"),
        };
        Ok(Some(Scaling::result(&self.measured, trained)))
    }

    /// It drops its trained comparison, which would mix the old models' steps with the new
    /// ones', and goes on.
    fn goes_on_with_new_models(&mut self) -> bool {
        self.total -= self.steps.as_ref().map_or(0, Vec::len);
        self.steps = Err("none: the models were replaced while the claim ran; Run again".into());
        self.trained = None;
        true
    }
}

impl SoftmaxScaling {
    /// Both models' mean largest weight on the probe at `step`: the current weights, or those
    /// the History kept. A step thinned or rewound away since the start is skipped.
    fn read_trained(&mut self, step: u64, lab: Option<&Lab>, lab_b: Option<&Lab>) -> LabResult<()> {
        let (Some(a), Some(b)) = (lab, lab_b) else {
            return Ok(());
        };
        let at = (step != a.step_count()).then_some(step);
        let (Ok(ia), Ok(ib)) = (a.inspect(&self.probe, at), b.inspect(&self.probe, at)) else {
            return Ok(());
        };
        let scaling = |l: &Lab| l.parts().0.config.attention_scaling;
        let trained = self.trained.get_or_insert_with(|| TrainedScaling {
            head_dim: a.parts().0.config.head_size(),
            models: [("A", a), ("B", b)].map(|(name, lab)| TrainedModel {
                name: name.into(),
                scaling: scaling(lab),
                points: Vec::new(),
            }),
        });
        trained.models[0]
            .points
            .push((step, mean_largest_weight(&ia)));
        trained.models[1]
            .points
            .push((step, mean_largest_weight(&ib)));
        Ok(())
    }
}
