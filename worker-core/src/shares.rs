//! A Lab's step cut into shares for several workers (data parallel): planned here (one batch,
//! one dropout seed, the whole batch's loss counts), share 0 of model A computed by the
//! training worker itself, the rest as `GradientJob`s for its gradient workers, then the
//! answers summed in share order and the step taken (`engine`'s `plan`, `share_gradients`,
//! `finish`). One worker runs the same engine code with one share (`Trainer::step`).

use crate::history::WeightHistory;
use crate::lab::Lab;
use engine::batch::Batch;
use engine::forward::Losses;
use engine::model::Params;
use engine::seq2seq::Seq2SeqBatch;
use engine::step::{PlannedStep, Share};
use ndarray::ArrayViewD;
use protocol::workers::{GradientJob, ReplicaShape, ShareBatch, Stack};
use protocol::{CurvePoint, LabError, LabResult};

/// A step planned for one Lab's model, of the model's kind. One lives per step, moved once: its
/// size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Planned {
    Bert(PlannedStep<Batch>),
    EncoderDecoder(PlannedStep<Seq2SeqBatch>),
}

impl Planned {
    /// How many shares the step is cut into.
    pub fn shares(&self) -> usize {
        match self {
            Planned::Bert(p) => p.plan.len(),
            Planned::EncoderDecoder(p) => p.plan.len(),
        }
    }

    /// Share `i` and its rows of the batch, as a gradient job carries them.
    fn share(&self, i: usize) -> (Share, ShareBatch) {
        match self {
            Planned::Bert(p) => (p.plan.share(i), ShareBatch::bert(&p.share_batch(i))),
            Planned::EncoderDecoder(p) => (
                p.plan.share(i),
                ShareBatch::encoder_decoder(&p.share_batch(i)),
            ),
        }
    }
}

/// The error of a plan taken to another kind of model than it was planned for.
fn another_model() -> LabError {
    LabError::unavailable("the step was planned for another model")
}

impl Lab {
    /// The next step cut into `parts` shares (fewer when the batch has fewer rows).
    pub fn plan(&mut self, parts: usize) -> LabResult<Planned> {
        self.trainable()?;
        if let Some(s) = self.model.seq2seq_mut() {
            return Ok(Planned::EncoderDecoder(s.trainer.plan(parts)?));
        }
        let t = self.model.trainer_mut().ok_or_else(LabError::no_model)?;
        Ok(Planned::Bert(t.plan(parts)?))
    }

    /// Compare's model B: its step on the batch model A (`leader`) planned, cut into `parts`
    /// shares.
    pub fn plan_following(
        &mut self,
        leader: &Lab,
        planned: &Planned,
        parts: usize,
    ) -> LabResult<Planned> {
        match (self.model.trainer_mut(), leader.trainer(), planned) {
            (Some(t), Some(led), Planned::Bert(a)) => {
                Ok(Planned::Bert(t.plan_following(led, a, parts)?))
            }
            _ => Err(LabError::unavailable("Compare trains two trainable models")),
        }
    }

    /// What a gradient worker needs to build a copy of this model.
    pub fn replica_shape(&self) -> Option<ReplicaShape> {
        if let Some(s) = self.model.seq2seq() {
            let m = &s.trainer.model;
            return Some(ReplicaShape::EncoderDecoder {
                encoder: Stack::new(&m.encoder.config, m.encoder.parts()),
                decoder: Stack::new(&m.decoder.config, m.decoder.parts()),
            });
        }
        let t = self.trainer()?;
        Some(ReplicaShape::Bert(Stack::new(
            &t.model.config,
            t.model.parts(),
        )))
    }

    /// Every parameter, in order (what a gradient job carries as its weights): an
    /// encoder–decoder's both halves.
    pub fn params(&self) -> Vec<(String, ArrayViewD<'_, f32>)> {
        match self.encoder_decoder() {
            Some(m) => m.params(),
            None => self.parts().0.params(),
        }
    }

    /// Share `i` of `planned` as a job for the gradient worker holding replica `replica`.
    pub fn job(&self, planned: &Planned, i: usize, replica: u64) -> LabResult<GradientJob> {
        let opts = match planned {
            Planned::Bert(_) => self.trainer().ok_or_else(another_model)?.forward_options(),
            Planned::EncoderDecoder(_) => self
                .model
                .seq2seq()
                .ok_or_else(another_model)?
                .trainer
                .forward_options(),
        };
        let (share, batch) = planned.share(i);
        Ok(GradientJob {
            replica,
            opts,
            share,
            batch,
        })
    }

    /// Share `i` computed here, into this model's own gradient buffer (the training worker's
    /// own share: 0 of model A; every share of model B when no gradient worker takes it).
    pub fn own_share(&mut self, planned: &Planned, i: usize) -> LabResult<Losses> {
        Ok(match planned {
            Planned::Bert(p) => self
                .model
                .trainer_mut()
                .ok_or_else(another_model)?
                .share_gradients(p, i)?,
            Planned::EncoderDecoder(p) => self
                .model
                .seq2seq_mut()
                .ok_or_else(another_model)?
                .trainer
                .share_gradients(p, i)?,
        })
    }

    /// The step: `own` (share 0, when computed here) plus the other shares' answers in order,
    /// summed; then the update, and the History's record of it (for Compare's model B, at the
    /// steps model A's History, `leader`, keeps).
    pub fn finish(
        &mut self,
        planned: Planned,
        own: Option<Losses>,
        others: &[(Losses, Vec<f32>)],
        leader: Option<&WeightHistory>,
    ) -> LabResult<CurvePoint> {
        let report = match planned {
            Planned::Bert(p) => self
                .model
                .trainer_mut()
                .ok_or_else(another_model)?
                .finish(p, own, others)?,
            Planned::EncoderDecoder(p) => self
                .model
                .seq2seq_mut()
                .ok_or_else(another_model)?
                .trainer
                .finish(p, own, others)?,
        };
        Ok(self.stepped(&report, leader))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica::{floats_of, vec_io, Replica};
    use protocol::{wire, FromGradientWorker, LabSettings, ToGradientWorker, DEFAULT_CORPUS};

    /// Model A's step on two workers, the second's share going the whole way a gradient
    /// worker's does (its job through `wire` as it is posted, its copy built from the replica
    /// shape, its weights in and gradients out as flat floats).
    fn two_worker_steps(lab: &mut Lab, steps: usize) -> Vec<CurvePoint> {
        let mut replica = Replica::default();
        let shape = ToGradientWorker::Replica {
            id: 0,
            shape: lab.replica_shape().unwrap(),
        };
        let sent = wire::encode(&shape).unwrap();
        let ToGradientWorker::Replica { id, shape } =
            wire::decode::<ToGradientWorker>(&sent).unwrap()
        else {
            panic!("not a model's shape")
        };
        replica.build(id, shape);
        (0..steps)
            .map(|_| {
                let planned = lab.plan(2).unwrap();
                assert_eq!(planned.shares(), 2);
                let job = lab.job(&planned, 1, 0).unwrap();
                let sent = wire::encode(&ToGradientWorker::Gradients(job)).unwrap();
                let ToGradientWorker::Gradients(job) =
                    wire::decode::<ToGradientWorker>(&sent).unwrap()
                else {
                    panic!("not a job")
                };
                let weights = floats_of(&lab.params());
                let (losses, grads) = replica.gradients(job, vec_io(&weights)).unwrap();
                let back = wire::encode(&FromGradientWorker::Gradients(Ok(losses))).unwrap();
                let FromGradientWorker::Gradients(Ok(losses)) =
                    wire::decode::<FromGradientWorker>(&back).unwrap()
                else {
                    panic!("not an answer")
                };
                let own = lab.own_share(&planned, 0).unwrap();
                lab.finish(planned, Some(own), &[(losses, grads)], None)
                    .unwrap()
            })
            .collect()
    }

    fn weights(lab: &Lab) -> Vec<f32> {
        floats_of(&lab.params())
    }

    /// A step is recorded alike whichever way it was taken: an encoder–decoder's steps through
    /// `plan`/`own_share`/`finish` give `step`'s curve points and weights, and keep its decoder
    /// and its encoder at the steps `step` keeps them.
    #[test]
    fn an_encoder_decoders_step_in_shares_is_recorded_as_its_plain_step() {
        let settings = LabSettings {
            task: Some(engine::seq2seq::Task::Reverse),
            ..LabSettings::default()
        };
        let mut plain = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        let mut shared = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        for _ in 0..10 {
            let point = plain.step().unwrap();
            let planned = shared.plan(1).unwrap();
            let own = shared.own_share(&planned, 0).unwrap();
            assert_eq!(shared.finish(planned, Some(own), &[], None).unwrap(), point);
        }
        assert_eq!(plain.history.steps(), [0, 5, 10]);
        assert_eq!(shared.history.steps(), plain.history.steps());
        let encoders = |lab: &Lab| lab.paired_history().map(WeightHistory::steps);
        assert_eq!(encoders(&plain), Some(plain.history.steps()));
        assert_eq!(encoders(&shared), encoders(&plain));
        assert!(weights(&shared) == weights(&plain));
    }

    #[test]
    fn two_workers_sum_to_one_workers_step_and_repeat_exactly() {
        let settings = LabSettings::default();
        let mut one = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        let one_points: Vec<CurvePoint> = (0..8).map(|_| one.step().unwrap()).collect();
        let mut two = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        let two_points = two_worker_steps(&mut two, 8);
        let mut again = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        assert_eq!(
            two_worker_steps(&mut again, 8),
            two_points,
            "two workers, run again"
        );
        assert_eq!(weights(&again), weights(&two));
        for (a, b) in one_points.iter().zip(&two_points) {
            assert_eq!(a.step, b.step);
            assert!(
                (a.loss - b.loss).abs() <= 1e-4 * a.loss.abs().max(1.0),
                "step {}: loss {} on one worker, {} on two",
                a.step,
                a.loss,
                b.loss
            );
        }
        // The weights after 8 steps: one worker's and two's agree to float rounding.
        let (w1, w2) = (weights(&one), weights(&two));
        let scale = w1.iter().fold(0f32, |m, x| m.max(x.abs()));
        let worst = w1
            .iter()
            .zip(&w2)
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            worst <= 1e-3 * scale,
            "weights differ by {worst} (largest weight {scale})"
        );
        // The batch and its masking came from one generator: the same counts either way.
        assert_eq!(one.masking_counts(), two.masking_counts());
    }

    /// Compare's model B, finished from shares, keeps its weights at exactly the steps model A
    /// keeps, as on one worker: when A's History thins, B's does too (before, B recorded every
    /// fifth step by a budget of its own that never ran out).
    #[test]
    fn model_b_finished_from_shares_keeps_model_a_s_steps_as_it_thins() {
        let settings = LabSettings {
            compare: Some(protocol::Architecture {
                positions: engine::config::PositionEmbeddingType::Rotary,
                ..protocol::Architecture::default()
            }),
            ..LabSettings::default()
        };
        let mut a = Lab::fresh(DEFAULT_CORPUS, &settings).unwrap();
        let mut b = Lab::fresh_b(DEFAULT_CORPUS, &settings).unwrap().unwrap();
        // Room for three entries: A thins (and spaces its entries wider) within 40 steps.
        let entry = floats_of(&a.params()).len() * 4;
        a.history = WeightHistory::new(3 * entry);
        let start = a.parts().0.clone();
        a.history.record_first(0, &start);
        for _ in 0..40 {
            let plan_a = a.plan(1).unwrap();
            let plan_b = b.plan_following(&a, &plan_a, 1).unwrap();
            let own = a.own_share(&plan_a, 0).unwrap();
            a.finish(plan_a, Some(own), &[], None).unwrap();
            let own_b = b.own_share(&plan_b, 0).unwrap();
            b.finish(plan_b, Some(own_b), &[], Some(&a.history))
                .unwrap();
            assert_eq!(b.history.steps(), a.history.steps());
        }
        assert!(a.history.interval() > 5, "A's History thinned");
    }
}
