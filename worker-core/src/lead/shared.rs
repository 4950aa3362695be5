//! A step shared with the gradient workers: the lead draws the batch and hands out the other
//! shares as jobs, computes its own meanwhile, and finishes the step when the last answer
//! comes; the page's messages wait for it.

use super::{Host, Lead};
use crate::replica::Param;
use crate::session::{SharedStep, Which};
use protocol::workers::{GradientJob, GradientResult};
use protocol::{FromWorker, LabError, LabResult, ToGradientWorker};

/// A step over several workers under way.
pub(super) struct Pending {
    step: SharedStep,
    /// Each job's answer, once it came.
    answers: Vec<Option<(GradientResult, Vec<f32>)>>,
    started: f64,
    /// A single Step (replies as `Session::handle`'s Step), not a tick of Play.
    single: bool,
}

/// Steps shared with the gradient workers.
impl Lead {
    /// The next step over `workers_now()` workers: the jobs go out, then this worker computes
    /// its own share; `answered` finishes the step when the last answer comes.
    pub(super) fn begin_shared(&mut self, host: &mut impl Host, single: bool) {
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
        which: Which,
        job: GradientJob,
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

    pub(super) fn to_gradient_worker(
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

    pub(super) fn clear_gradient_workers(&mut self, host: &mut impl Host) {
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
