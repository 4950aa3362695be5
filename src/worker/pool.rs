//! The training worker's gradient workers (data parallel). The training worker (the lead)
//! starts them as the page starts it (`worker_client`, the same program: a worker that is
//! sent gradient jobs is a gradient worker). Each holds a copy of the model, built once per
//! model (`ToWorker::Replica`); every job brings the weights as they are, so a gradient worker
//! keeps no state a rewind, a load or a restart would have to reach.

use super::child::Child;
use js_sys::Float32Array;
use protocol::workers::{GradientJob, GradientResult, ReplicaShape};
use protocol::{Crash, FromWorker, LabError, LabResult, ToWorker};
use std::cell::RefCell;
use std::rc::Rc;

/// Spare buffers kept: one per job in flight, which is one per gradient worker (Workers is at
/// most 4, so 3).
const MAX_SPARES: usize = 3;

/// A gradient worker's answer: the share's losses (or why not) and its gradients.
pub type Answer = (GradientResult, Vec<f32>);

/// Where the pool reports: each answer by the index of the worker that sent it, and a gradient
/// worker's death in words.
#[derive(Clone)]
pub struct Listeners {
    pub answer: Rc<dyn Fn(usize, Answer)>,
    pub death: Rc<dyn Fn(String)>,
}

struct Helper {
    child: Child,
    /// The replica it holds (the lead's id), once told.
    replica: Option<u64>,
}

#[derive(Default)]
pub struct Pool {
    helpers: Vec<Helper>,
    /// The buffers answers came in, once read: the next jobs' weights go out in them.
    spares: Rc<RefCell<Vec<Float32Array>>>,
}

impl Pool {
    /// Exactly `count` gradient workers: new ones started, surplus ones ended. An error when
    /// the browser refuses to start one (the pool keeps those it has).
    pub fn resize(&mut self, count: usize, listeners: &Listeners) -> LabResult<()> {
        while self.helpers.len() > count {
            if let Some(helper) = self.helpers.pop() {
                helper.child.end();
            }
        }
        while self.helpers.len() < count {
            let index = self.helpers.len();
            let answer = listeners.answer.clone();
            let spares = self.spares.clone();
            let child = Child::spawn(
                move |message, floats| {
                    // A gradient worker says nothing else unless asked.
                    if let FromWorker::Gradients(result) = message {
                        let grads = floats.as_ref().map(Float32Array::to_vec);
                        if let Some(buffer) = floats.filter(|f| f.length() > 0) {
                            let mut spares = spares.borrow_mut();
                            if spares.len() < MAX_SPARES {
                                spares.push(buffer);
                            }
                        }
                        answer(index, (result, grads.unwrap_or_default()))
                    }
                },
                listeners.death.clone(),
            )?;
            self.helpers.push(Helper {
                child,
                replica: None,
            });
        }
        Ok(())
    }

    /// End every gradient worker (another model, or fewer workers wanted).
    pub fn clear(&mut self) {
        self.helpers.drain(..).for_each(|h| h.child.end());
        self.spares.borrow_mut().clear();
    }

    /// A buffer an answer came in, for a job's weights (of the right size or not: the caller
    /// checks).
    pub fn spare(&self) -> Option<Float32Array> {
        self.spares.borrow_mut().pop()
    }

    /// Send `job` to gradient worker `index` with the weights, after the model's shape when it
    /// holds another model.
    pub fn send(
        &mut self,
        index: usize,
        shape: impl FnOnce() -> Option<ReplicaShape>,
        job: GradientJob,
        weights: &Float32Array,
    ) -> LabResult<()> {
        let helper = self
            .helpers
            .get_mut(index)
            .ok_or_else(|| LabError::unavailable(format!("no gradient worker {index}")))?;
        if helper.replica != Some(job.replica) {
            let shape = shape()
                .ok_or_else(|| LabError::unavailable("this model cannot be trained in shares"))?;
            helper.child.send(
                &ToWorker::Replica {
                    id: job.replica,
                    shape,
                },
                &[],
            )?;
            helper.replica = Some(job.replica);
        }
        helper
            .child
            .send_with_floats(&ToWorker::Gradients(job), weights)
    }

    /// Test only: make the first gradient worker panic.
    pub fn crash_one(&self) -> LabResult<()> {
        let helper = self
            .helpers
            .first()
            .ok_or_else(|| LabError::unavailable("no gradient worker runs: set Workers to 2"))?;
        helper.child.send(&ToWorker::Crash(Crash::Panic), &[])
    }
}
