//! A step spread over several workers. `begin_shared_step` plans it (model A's batch, and
//! Compare's model B on the same batch) and hands out the jobs the gradient workers take;
//! `own_share` computes the training worker's own share; `finish_shared_step` sums the
//! answers in share order and takes the step, replying as `train` does.
//!
//! Who computes what is fixed by the number of workers alone, so a run is the same for a given
//! number: model A's batch is cut into as many shares as there are workers; with Compare,
//! model A takes the first half of the workers (rounded up) and model B, in lockstep on the
//! same batch, the rest.

use super::{Reply, Session};
use crate::shares::Planned;
use engine::forward::Losses;
use ndarray::ArrayViewD;
use protocol::workers::{GradientJob, ReplicaShape};
use protocol::{CurvePoint, FromWorker, LabError, LabResult};

/// Which of Compare's models a job is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    A,
    B,
}

/// A shared step under way: the plans, the training worker's own share, and for each job
/// handed out (job k goes to gradient worker k) its model and share.
pub struct SharedStep {
    a: Planned,
    b: Option<Planned>,
    own: Option<LabResult<Losses>>,
    jobs: Vec<(Which, usize)>,
}

impl SharedStep {
    /// How many answers it waits for.
    pub fn jobs(&self) -> usize {
        self.jobs.len()
    }
}

/// A job for a gradient worker, and which model's weights go with it.
pub type Job = (Which, GradientJob);

/// How many shares each model's batch is cut into, on `workers` workers.
fn shares(workers: usize, compare: bool) -> (usize, usize) {
    match compare {
        false => (workers, 0),
        true if workers < 2 => (1, 1),
        true => (workers.div_ceil(2), workers / 2),
    }
}

impl Session {
    /// The next step over `workers` workers: its jobs, in the order of the gradient workers
    /// that take them. Err: replies saying why no step can be taken (play stops).
    pub fn begin_shared_step(
        &mut self,
        workers: usize,
    ) -> Result<(SharedStep, Vec<Job>), Vec<Reply>> {
        if let Err(e) = self.trainable() {
            self.playing = false;
            return Err(vec![self.refusal(e)]);
        }
        let generation = self.generation;
        let Some(lab) = self.lab.as_mut() else {
            return Err(vec![super::no_model()]);
        };
        let (parts_a, parts_b) = shares(workers, self.lab_b.is_some());
        let planned = lab.plan(parts_a).and_then(|a| {
            let b = match self.lab_b.as_mut() {
                Some(b) => Some(
                    b.plan_following(lab, &a, parts_b)
                        .map_err(|e| LabError::unavailable(format!("Model B: {e}")))?,
                ),
                None => None,
            };
            Ok((a, b))
        });
        let (a, b) = match planned {
            Ok(plans) => plans,
            Err(reason) => {
                self.playing = false;
                let step = lab.step_count();
                return Err(vec![FromWorker::Stopped { step, reason }.into()]);
            }
        };
        // Model A's share 0 stays here; every other share is a job.
        let mut order: Vec<(Which, usize)> = (1..a.shares()).map(|i| (Which::A, i)).collect();
        if let Some(b) = &b {
            order.extend((0..b.shares()).map(|i| (Which::B, i)));
        }
        let mut jobs = Vec::with_capacity(order.len());
        for &(which, i) in &order {
            let (lab, planned) = match which {
                Which::A => (self.lab.as_ref(), &a),
                Which::B => (self.lab_b.as_ref(), b.as_ref().unwrap_or(&a)),
            };
            let job = lab
                .ok_or_else(LabError::no_model)
                .and_then(|lab| lab.job(planned, i, replica_id(generation, which)));
            match job {
                Ok(job) => jobs.push((which, job)),
                Err(e) => {
                    self.playing = false;
                    return Err(vec![FromWorker::Failed(e).into()]);
                }
            }
        }
        let step = SharedStep {
            a,
            b,
            own: None,
            jobs: order,
        };
        Ok((step, jobs))
    }

    /// Model A's share 0, computed here while the gradient workers compute theirs.
    pub fn own_share(&mut self, step: &mut SharedStep) {
        step.own = Some(match self.lab.as_mut() {
            Some(lab) => lab.own_share(&step.a, 0),
            None => Err(LabError::no_model()),
        });
    }

    /// What a gradient worker needs to build its copy of model `which`.
    pub fn replica_shape(&self, which: Which) -> Option<ReplicaShape> {
        self.lab_of(which)?.replica_shape()
    }

    /// Model `which`'s weights, in the order a job carries them.
    pub fn weights(&self, which: Which) -> Vec<(String, ArrayViewD<'_, f32>)> {
        self.lab_of(which).map(|l| l.params()).unwrap_or_default()
    }

    fn lab_of(&self, which: Which) -> Option<&crate::lab::Lab> {
        match which {
            Which::A => self.lab.as_ref(),
            Which::B => self.lab_b.as_ref(),
        }
    }

    /// The step, from every job's answer (in job order): each model's shares summed in order,
    /// its update taken. Replies as `train`'s for one step.
    pub fn finish_shared_step(
        &mut self,
        step: SharedStep,
        answers: Vec<(LabResult<Losses>, Vec<f32>)>,
    ) -> Vec<Reply> {
        let SharedStep { a, b, own, jobs } = step;
        // Each model's answers in share order (moved: a gradient is the whole model's size).
        let mut answers_a: LabResult<Vec<(Losses, Vec<f32>)>> = Ok(Vec::new());
        let mut answers_b = Ok(Vec::new());
        for ((which, _), (result, grads)) in jobs.into_iter().zip(answers) {
            let into = match which {
                Which::A => &mut answers_a,
                Which::B => &mut answers_b,
            };
            match (into.as_mut(), result) {
                (Ok(shares), Ok(losses)) => shares.push((losses, grads)),
                (Ok(_), Err(e)) => *into = Err(e),
                (Err(_), _) => {}
            }
        }
        let Some(lab) = self.lab.as_mut() else {
            return vec![super::no_model()];
        };
        let kept_before = lab.history.steps().len();
        let mut points: Vec<CurvePoint> = Vec::new();
        let mut points_b = Vec::new();
        let stepped = own
            .unwrap_or_else(|| {
                Err(LabError::unavailable(
                    "the step's own share was not computed",
                ))
            })
            .and_then(|own| lab.finish(a, Some(own), &answers_a?, None))
            .and_then(|point| {
                points.push(point);
                match (self.lab_b.as_mut(), b) {
                    (Some(lab_b), Some(b)) => answers_b
                        .and_then(|answers| lab_b.finish(b, None, &answers, Some(&lab.history)))
                        .map(|p| points_b.push(p))
                        .map_err(|e| LabError::unavailable(format!("Model B: {e}"))),
                    _ => Ok(()),
                }
            });
        self.after_steps(points, points_b, stepped.err(), kept_before)
    }
}

/// The id a gradient worker's copy of model `which` has: one per model the session has held,
/// so a copy of an earlier model is never taken for this one.
fn replica_id(generation: u64, which: Which) -> u64 {
    generation * 2 + u64::from(which == Which::B)
}

#[cfg(test)]
mod tests {
    use super::shares;

    #[test]
    fn model_a_takes_every_worker_or_with_compare_the_first_half() {
        assert_eq!(shares(1, false), (1, 0));
        assert_eq!(shares(3, false), (3, 0));
        assert_eq!(shares(1, true), (1, 1));
        assert_eq!(shares(2, true), (1, 1));
        assert_eq!(shares(3, true), (2, 1));
        assert_eq!(shares(4, true), (2, 2));
    }
}
